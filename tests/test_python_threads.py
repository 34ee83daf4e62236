"""Threads sharing one ferry.Reader: every sample is delivered exactly once
per epoch, with the right bytes, whether the threads call next_batch() or
iterate (the batch an iteration keeps for the next epoch included); and a
close() from one thread while others wait in next_batch() ends their waits
with ValueError at once, instead of freeing the reader under them.

The close test runs in a child Python whose reads are slowed down by the
LD_PRELOAD shim $FERRY_BUILD/shim/slowread.so (tests/shim/slowread.c), so
that the threads are certainly waiting when the reader is closed.

Run: /usr/bin/python3 tests/test_python_threads.py (FERRY_BUILD names the
build directory, default build). Exit 0 pass, 1 fail, 77 skip.
"""
import collections
import os
import subprocess
import sys
import threading

from pyharness import ROOT, check, run_tests, to_numpy  # noqa: E402
try:
    import numpy as np
except ImportError:
    print("skip: numpy is not installed")
    sys.exit(77)
import ferry  # noqa: E402

NFILES = 40
BATCH = 3
EPOCHS = 2
THREADS = 8
SHIM = os.path.join(ROOT, os.environ.get("FERRY_BUILD", "build"), "shim", "slowread.so")


def make_dataset(tmp):
    """40 small files of different shapes and dtypes, each its own bytes."""
    root = os.path.join(tmp, "ds")
    os.mkdir(root)
    rng = np.random.default_rng(5)
    for i in range(NFILES):
        a = rng.integers(0, 1 << 30, size=(2, 3 + i % 4), dtype="<i4")
        np.save(os.path.join(root, "s%02d.npy" % i), a)
    return (root,)


def run_threads(target, n=THREADS):
    errors = []

    def guarded():
        try:
            target()
        except BaseException as e:  # noqa: B902 -- reported below
            errors.append(repr(e))
    threads = [threading.Thread(target=guarded) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    check(not any(t.is_alive() for t in threads), "a reader thread did not finish")
    check(not errors, "reader threads raised: %r" % errors)


def check_delivery(root, batches, what):
    """batches: (epoch, index, paths, bytes of each sample, is_padding) tuples."""
    per_epoch = collections.defaultdict(collections.Counter)
    indices = collections.defaultdict(collections.Counter)
    bad = []
    for epoch, index, paths, data, padding in batches:
        indices[epoch][index] += 1
        for path, got, pad in zip(paths, data, padding):
            check(not pad, "%s: a padding sample without pad_last_batch" % what)
            per_epoch[epoch][path] += 1
            want = np.load(path)
            if got != want.tobytes() or len(got) != want.nbytes:
                bad.append(path)
    check(not bad, "%s: wrong bytes for %d samples, e.g. %r" % (what, len(bad), bad[:3]))
    names = sorted(os.path.join(root, "s%02d.npy" % i) for i in range(NFILES))
    nbatches = (NFILES + BATCH - 1) // BATCH
    check(sorted(per_epoch) == list(range(EPOCHS)), "%s: epochs %r" % (what, sorted(per_epoch)))
    for epoch in range(EPOCHS):
        counts = per_epoch[epoch]
        check(sorted(counts) == names and set(counts.values()) == {1},
              "%s: epoch %d delivered %d distinct samples, %d in all, of %d"
              % (what, epoch, len(counts), sum(counts.values()), NFILES))
        check(sorted(indices[epoch]) == list(range(nbatches))
              and set(indices[epoch].values()) == {1},
              "%s: epoch %d batch indices %r" % (what, epoch, dict(indices[epoch])))


def record(batch):
    return (batch.epoch, batch.index, list(batch.paths),
            [to_numpy(x).tobytes() for x in batch], list(batch.is_padding))


def test_next_batch(root, tmp):
    got, lock = [], threading.Lock()
    with ferry.Reader(file_root=root, batch_size=BATCH, epochs=EPOCHS) as r:
        def reader():
            while True:
                b = r.next_batch()
                if b is None:
                    return
                rec = record(b)
                with lock:
                    got.append(rec)
        run_threads(reader)
        check(r.next_batch() is None, "a batch after the last epoch")
    check_delivery(root, got, "%d threads calling next_batch" % THREADS)


def test_iterate(root, tmp):
    """Threads iterating at once: an iteration ends at its epoch's end or at
    a batch of the next epoch, which it keeps for the next iteration (of any
    thread); each thread iterates until an iteration yields nothing."""
    got, lock = [], threading.Lock()
    with ferry.Reader(file_root=root, batch_size=BATCH, epochs=EPOCHS) as r:
        def reader():
            while True:
                n = 0
                epoch = None
                for b in r:
                    n += 1
                    check(epoch is None or b.epoch == epoch,
                          "one iteration crossed from epoch %r to %r" % (epoch, b.epoch))
                    epoch = b.epoch
                    rec = record(b)
                    with lock:
                        got.append(rec)
                if n == 0:
                    return
        run_threads(reader)
    check_delivery(root, got, "%d threads iterating" % THREADS)


CLOSE_CHILD = r"""
import sys, threading, time
sys.path.insert(0, sys.argv[1])
import ferry
ctx = ferry.Context(device="host", io="posix", threads=1)
r = ferry.Reader(file_root=sys.argv[2], batch_size=4, num_threads=1, prefetch_queue_depth=1,
                 ctx=ctx)
ended = []
def wait():
    try:
        b = r.next_batch()
        outcome = "batch" if b is not None else "none"
    except ValueError as e:
        outcome = "closed" if "closed" in str(e) else "ValueError: %s" % e
    except BaseException as e:
        outcome = repr(e)
    ended.append((time.monotonic(), outcome))
threads = [threading.Thread(target=wait) for _ in range(THREADS)]
for t in threads:
    t.start()
time.sleep(0.5)
closed = time.monotonic()
r.close()
for t in threads:
    t.join(60)
print("alive", sum(t.is_alive() for t in threads))
print("slowest", max(t for t, _ in ended) - closed if ended else -1)
print("outcomes", ",".join(sorted(o for _, o in ended)))
""".replace("THREADS", str(THREADS))


def test_close_while_waiting(root, tmp):
    if not os.path.exists(SHIM):
        check(False, "%s is missing: run make" % SHIM)
        return
    env = dict(os.environ)
    # Under AddressSanitizer tests/run.sh preloads libasan, which must stay first.
    env["LD_PRELOAD"] = " ".join(p for p in (os.environ.get("LD_PRELOAD", ""), SHIM) if p)
    env["FERRY_SLOWREAD_MS"] = "300"  # a batch of 4 files takes seconds to load
    try:
        child = subprocess.run([sys.executable, "-c", CLOSE_CHILD, os.path.join(ROOT, "python"),
                                root], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, env=env, timeout=120)
    except subprocess.TimeoutExpired:
        check(False, "close() while threads wait: the child hung")
        return
    lines = dict(line.split(" ", 1) for line in child.stdout.splitlines() if " " in line)
    check(child.returncode == 0, "close() while threads wait: exit %r: %s"
          % (child.returncode, child.stderr[-2000:]))
    check(lines.get("alive") == "0", "threads still waiting after close(): %r" % lines)
    slowest = float(lines.get("slowest", "nan"))
    check(slowest < 1.0, "the last waiting thread ended %.2f s after close()" % slowest)
    outcomes = lines.get("outcomes", "").split(",")
    check(len(outcomes) == THREADS and set(outcomes) <= {"closed", "batch"},
          "outcomes of the waiting threads: %r" % outcomes)
    print("close() while %d threads wait: the last ended %.3f s after; %r"
          % (THREADS, slowest, outcomes))


def main():
    print("libferry", ferry.library_version())
    return run_tests((test_next_batch, test_iterate, test_close_while_waiting),
                     "ferry-py-threads-", setup=make_dataset)


if __name__ == "__main__":
    sys.exit(main())
