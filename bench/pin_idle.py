"""The zero-copy path's registrations while a training job computes (issue 23):
the registrar paces itself only while copies are launched, so a job that
computes between batches (simulated here: a sleep of --step-ms after each
batch, as a training step would take) has its warm files registered sooner
than one that reads flat out. For each setting, one reader (ferry.Reader,
stacked batches) over the same warm files for --epochs epochs: per epoch,
the share of files that took the zero-copy path, and the epoch's loader time
(the time not spent in the simulated step). One line per epoch, and at the
end, for each setting (named once or more in --settings), each epoch's mean
and standard error over its runs.

Usage: python3 bench/pin_idle.py --dir DIR [--batch 4] [--epochs 4]
         [--step-ms 20] [--settings "FERRY_PIN_PACE=50 FERRY_PIN_PACE=100"]
Each setting runs in a fresh process (registrations live as long as a
context); --step-ms 0 reads flat out. Needs ferry on PYTHONPATH.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def one_run(args):
    import ferry
    r = ferry.Reader(file_root=args.dir, batch_size=args.batch, epochs=args.epochs)
    last_mapped = 0
    for epoch in range(args.epochs):
        files = 0
        loader = 0.0
        t = time.perf_counter()
        for batch in r:
            loader += time.perf_counter() - t
            files += len(batch)
            if args.step_ms:
                time.sleep(args.step_ms / 1000.0)
            t = time.perf_counter()
        mapped = r.stats()["files_mapped"]
        print("  epoch %d: %5d files, %5.1f%% zero-copy, loader time %.3f s" % (
            epoch + 1, files, 100.0 * (mapped - last_mapped) / max(files, 1), loader),
            flush=True)
        last_mapped = mapped
    r.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--step-ms", type=float, default=20.0)
    ap.add_argument("--settings", default="FERRY_PIN_PACE=50 FERRY_PIN_PACE=100")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one_run(args)
        return 0
    runs = {}  # setting -> one list of (zero-copy %, loader s) per run
    for setting in args.settings.split():
        name, value = setting.split("=", 1)
        print("== %s, batch %d, step %g ms" % (setting, args.batch, args.step_ms), flush=True)
        env = dict(os.environ, **{name: value})
        run = subprocess.run([sys.executable, __file__, "--one", "--dir", args.dir,
                              "--batch", str(args.batch), "--epochs", str(args.epochs),
                              "--step-ms", str(args.step_ms)], env=env,
                             stdout=subprocess.PIPE, universal_newlines=True)
        sys.stdout.write(run.stdout)
        if run.returncode:
            return run.returncode
        runs.setdefault(setting, []).append(parse_epochs(run.stdout))
    summarize(runs)
    return 0


def parse_epochs(text):
    """(zero-copy %, loader time) of each epoch line one_run printed."""
    epochs = []
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["epoch"]:
            epochs.append((float(words[4].rstrip("%")), float(words[-2])))
    return epochs


def mean_and_error(values):
    """The mean and its standard error (0 for a single value)."""
    if len(values) < 2:
        return values[0], 0.0
    return statistics.fmean(values), statistics.stdev(values) / len(values) ** 0.5


def summarize(runs):
    """Per setting and epoch, over its runs: loader time and zero-copy share."""
    print("== summary: mean +- standard error over each setting's runs")
    for setting, per_run in runs.items():
        for epoch in range(min(len(r) for r in per_run)):
            share = mean_and_error([r[epoch][0] for r in per_run])
            wait = mean_and_error([r[epoch][1] for r in per_run])
            print("  %-24s epoch %d (%d runs): loader time %.3f +- %.3f s, "
                  "%.1f +- %.1f%% zero-copy" % (setting, epoch + 1, len(per_run),
                                               wait[0], wait[1], share[0], share[1]))


if __name__ == "__main__":
    sys.exit(main())
