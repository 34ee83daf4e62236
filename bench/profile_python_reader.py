#!/usr/bin/env python3
"""Where a Python reader's time per batch goes, warm (issue 18).

Reads DIR's .npy files with ferry.Reader at each batch size, taking each
batch as one tensor as bench/python_reader.py's stacked tool does
(torch.as_tensor(batch, device="cuda") when torch has a GPU, else
numpy.asarray: the host device runs it without torch), and prints the
median over --runs runs of --seconds each (and their min and max), per
batch:

  wall      the loop's wall time per batch, and batches/s and samples/s
  CPU       the main thread's CPU time per batch (libferry's calls on it
            included; its IO threads not)
  Python    the wall time per batch in ferry's Python code: next_batch()
            and dropping the batch (its Batch, tensor and views; the last
            reference hands its memory back), less the libferry calls made
            inside them
  parts     libferry's calls: next (ferry_reader_next_timeout, waiting for
            the batch included), describe (ferry_batch_describe), release
            (ferry_batch_release), other (any other libferry call); Python's
            two parts; tensor (making it)

Wall, batches/s, samples/s and CPU come from a pass as a user runs it;
Python and the parts from a second pass of the same length whose libferry
calls are wrapped and timed (each wrapper adds a few tenths of a us, counted
partly in Python). The host device's IO threads share the cores with the
main thread, so wall times there include time the main thread waited for a
core; its CPU time does not. Then, unless --no-cprofile, cProfile's top
functions of one more run at the last batch size (its libferry calls are not
functions to cProfile: their time is their caller's tottime).

--preloaded times instead --rounds windows of batches (up to 4096 files, 1024
batches, a window) that loaded while the loop slept: next then finds each
batch ready, so what is left is the cost per batch of ferry's Python layer,
libferry's calls (next still schedules the batches that refill the window,
and the IO threads start on them) and the tensor.

usage: profile_python_reader.py DIR [--batch-sizes 1,4,32] [--seconds 2]
       [--runs 5] [--preloaded [--rounds 8]] [--no-cprofile]
"""
import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time

import ferry
from ferry import _lib

TIMED = ("ferry_reader_next_timeout", "ferry_batch_describe", "ferry_batch_release")


def tensor_maker():
    """batch -> tensor, the way a user takes a stacked batch."""
    try:
        import torch
        if torch.cuda.is_available():
            torch.zeros(1, device="cuda")
            return "torch", lambda b: torch.as_tensor(b, device="cuda")
    except ImportError:
        pass
    import numpy
    return "numpy", numpy.asarray


class Timed:
    """Wraps a libferry function, adding the seconds spent in it to total."""

    def __init__(self, func):
        self.func, self.total = func, 0.0

    def __call__(self, *args):
        t = time.perf_counter()
        try:
            return self.func(*args)
        finally:
            self.total += time.perf_counter() - t


class Wrapped:
    """Every libferry function wrapped in a Timed while in use (the Reader
    must be made inside, as it may keep the functions it calls)."""

    def __enter__(self):
        lib = _lib.get()
        self.saved = {name: getattr(lib, name) for name in _lib._PROTOTYPES if hasattr(lib, name)}
        self.timed = {name: Timed(func) for name, func in self.saved.items()}
        for name, func in self.timed.items():
            setattr(lib, name, func)
        return self

    def reset(self):
        for t in self.timed.values():
            t.total = 0.0

    def seconds(self, name=None):
        """Seconds in function name, else in every function."""
        if name is not None:
            return self.timed[name].total
        return sum(t.total for t in self.timed.values())

    def __exit__(self, *exc):
        lib = _lib.get()
        for name, func in self.saved.items():
            setattr(lib, name, func)


class Totals:
    """Seconds (wall, cpu, next, drop, tensor, c_drop) and counts of the
    batches timed so far."""

    def __init__(self):
        self.__dict__.update(wall=0.0, cpu=0.0, next=0.0, drop=0.0, tensor=0.0, c_drop=0.0,
                             batches=0, samples=0)


def stretch(r, make, totals, wrapped, seconds=None, count=None):
    """Takes batches of r for seconds, or count of them (or until the
    last), adding their times to totals. False after the last batch."""
    cpu0, t0 = time.thread_time(), time.perf_counter()
    n, more = 0, True
    while (count is None or n < count) and (seconds is None or
                                            time.perf_counter() - t0 < seconds):
        a = time.perf_counter()
        b = r.next_batch()
        if b is None:
            more = False
            break
        c = time.perf_counter()
        t = make(b)
        d = time.perf_counter()
        totals.samples += len(t)
        if wrapped is not None:
            before = wrapped.seconds()
        del t, b  # the batch goes back to the reader
        e = time.perf_counter()
        if wrapped is not None:
            totals.c_drop += wrapped.seconds() - before
        totals.next += c - a
        totals.tensor += d - c
        totals.drop += e - d
        n += 1
    totals.wall += time.perf_counter() - t0
    totals.cpu += time.thread_time() - cpu0
    totals.batches += n
    return more


def loop(r, seconds, make, wrapped=None, plan=None):
    """Batches of r for seconds, or as plan (window, rounds, settle) says:
    rounds of a sleep of settle seconds, while the reader loads window
    batches ahead, then those window batches timed. Returns a dict of
    seconds (wall, cpu, next, drop, tensor, and the libferry calls when
    wrapped) and counts."""
    b = r.next_batch()  # the first batch's latency is not the steady rate
    t = make(b)
    del t, b
    if wrapped is not None:
        wrapped.reset()
    totals = Totals()
    if plan is None:
        stretch(r, make, totals, wrapped, seconds=seconds)
    else:
        window, rounds, settle = plan
        for _ in range(rounds):
            time.sleep(settle)
            if not stretch(r, make, totals, wrapped, count=window):
                break
    out = dict(vars(totals))
    if wrapped is not None:
        out["c_total"] = wrapped.seconds()
        for name in TIMED:
            out[name] = wrapped.seconds(name)
    return out


def reader(root, batch, preloaded, rounds):
    """A Reader of root, and loop()'s plan for it (None: as a user runs it).
    preloaded (a count of files): rounds of batches that loaded while the
    loop slept, a window of at most 4096 files (and 1024 batches, the
    deepest prefetch) at a time."""
    if not preloaded:
        return ferry.Reader(file_root=root, batch_size=batch), None
    window = max(1, min(1024, min(preloaded, 4096) // batch))
    r = ferry.Reader(file_root=root, batch_size=batch, prefetch_queue_depth=window)
    # 0.2 s, and 50 us a file: 20K files/s at least, on cores other programs share.
    return r, (window, rounds, 0.2 + window * batch * 50e-6)


def one_run(root, batch, seconds, make, preloaded, rounds):
    """One unwrapped and one wrapped pass; returns per-batch microseconds."""
    r, plan = reader(root, batch, preloaded, rounds)
    with r:
        plain = loop(r, seconds, make, plan=plan)
    with Wrapped() as w:
        r, plan = reader(root, batch, preloaded, rounds)
        with r:
            parts = loop(r, seconds, make, w, plan)
    us, pus = 1e6 / max(plain["batches"], 1), 1e6 / max(parts["batches"], 1)
    py_next = parts["next"] - (parts["c_total"] - parts["c_drop"])
    py_drop = parts["drop"] - parts["c_drop"]
    other = parts["c_total"] - sum(parts[name] for name in TIMED)
    return {
        "wall": plain["wall"] * us, "batches_s": plain["batches"] / plain["wall"],
        "samples_s": plain["samples"] / plain["wall"], "cpu": plain["cpu"] * us,
        "python": (py_next + py_drop) * pus,
        "next": parts["ferry_reader_next_timeout"] * pus,
        "describe": parts["ferry_batch_describe"] * pus,
        "release": parts["ferry_batch_release"] * pus, "other": other * pus,
        "py_next_batch": py_next * pus, "py_drop": py_drop * pus,
        "tensor": parts["tensor"] * pus,
    }


def spread(runs, key, fmt="%.1f"):
    values = [r[key] for r in runs]
    return ("%s [%s-%s]" % (fmt, fmt, fmt)) % (statistics.median(values), min(values),
                                                max(values))


def measure(root, batch, seconds, make, nruns, preloaded, rounds):
    runs = [one_run(root, batch, seconds, make, preloaded, rounds) for _ in range(nruns)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print("batch %4d (%d runs; median [min-max]):" % (batch, nruns))
    print("  wall %s us/batch, %s batches/s, %s samples/s; main-thread CPU %s us/batch"
          % (spread(runs, "wall"), spread(runs, "batches_s", "%.0f"),
             spread(runs, "samples_s", "%.0f"), spread(runs, "cpu")))
    print("  Python %s us/batch (next_batch and the drop of the batch, less libferry's calls)"
          % spread(runs, "python"))
    print("  parts (us/batch): libferry next %.1f, describe %.2f, release %.2f, other %.2f; "
          "Python next_batch %.1f, drop of the batch %.1f; tensor %.1f"
          % (med["next"], med["describe"], med["release"], med["other"], med["py_next_batch"],
             med["py_drop"], med["tensor"]))
    sys.stdout.flush()


def profile(root, batch, seconds, make):
    prof = cProfile.Profile()
    with ferry.Reader(file_root=root, batch_size=batch) as r:
        r.next_batch()
        t0 = time.perf_counter()
        prof.enable()
        while time.perf_counter() - t0 < seconds:
            b = r.next_batch()
            if b is None:
                break
            make(b)
        prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
    print(out.getvalue())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--batch-sizes", default="1,4,32")
    p.add_argument("--seconds", type=float, default=2.0, help="of each pass (2)")
    p.add_argument("--runs", type=int, default=5, help="runs a batch size, medians (5)")
    p.add_argument("--no-cprofile", action="store_true", help="skip the cProfile run")
    p.add_argument("--preloaded", action="store_true",
                   help="time only batches that loaded while the loop slept: the Python layer "
                        "without waiting for IO")
    p.add_argument("--rounds", type=int, default=8,
                   help="--preloaded: sleeps and windows a run (8)")
    a = p.parse_args()
    if a.runs < 1:
        p.error("--runs must be at least 1")
    kind, make = tensor_maker()
    sizes = [int(s) for s in a.batch_sizes.split(",")]
    print("ferry %s, tensors by %s, device %s, %s" % (
        ferry.__version__, kind, ferry.default_context().device, a.dir))
    preloaded = 0
    if a.preloaded:
        preloaded = sum(1 for _, _, names in os.walk(a.dir) for n in names if n.endswith(".npy"))
        print("preloaded: every batch timed had loaded before the loop took it (%d rounds a "
              "run of a sleep, then a window of up to 4096 files, 1024 batches)" % a.rounds)
    for batch in sizes:
        measure(a.dir, batch, a.seconds, make, a.runs, preloaded, a.rounds)
    if not a.no_cprofile:
        profile(a.dir, sizes[-1], a.seconds, make)
    return 0


if __name__ == "__main__":
    sys.exit(main())
