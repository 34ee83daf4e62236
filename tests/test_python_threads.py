"""Threads sharing one ferry.Reader: every sample is delivered exactly once
per epoch, with the right bytes, whether the threads call next_batch() or
iterate (the batch an iteration keeps for the next epoch included); and a
close() from one thread while others wait in next_batch() ends their waits
with ValueError at once, instead of freeing the reader under them. Batches
kept and dropped on other threads than the one that took them (samples,
stacked views, DLPack capsules) keep their bytes while they live, each is
handed back to libferry exactly once, by its last user, and the C reader
closes once, after the last of them, though close() came first.

The close test runs in a child Python whose reads are slowed down by the
LD_PRELOAD shim $FERRY_BUILD/shim/slowread.so (tests/shim/slowread.c), so
that the threads are certainly waiting when the reader is closed.

Run: /usr/bin/python3 tests/test_python_threads.py (FERRY_BUILD names the
build directory, default build). Exit 0 pass, 1 fail, 77 skip.
"""
import collections
import gc
import os
import random
import subprocess
import sys
import threading

from pyharness import ROOT, check, need_numpy, run_tests, to_numpy  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402
from ferry import _lib  # noqa: E402

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


class Ledger:
    """libferry's ferry_batch_release and ferry_reader_close wrapped (before
    a Reader is made, which keeps them): which batches are out, every
    release of one that was not (a second release), and the order of the
    events."""

    def __init__(self):
        self.lock = threading.Lock()
        self.out = collections.Counter()   # batch address: times handed out, not yet released
        self.events = []                   # ("release" | "close", address)
        self.bad = []

    def taken(self, batch):
        with self.lock:
            self.out[batch._owner.ptr] += 1

    def __enter__(self):
        lib = _lib.get()
        self.saved = lib.ferry_batch_release, lib.ferry_reader_close
        release, close = self.saved

        def counted_release(ptr):
            with self.lock:
                if self.out[ptr] <= 0:
                    self.bad.append("batch %#x released while not handed out" % ptr)
                self.out[ptr] -= 1
                self.events.append(("release", ptr))
            release(ptr)

        def counted_close(ptr):
            with self.lock:
                self.events.append(("close", ptr))
            return close(ptr)
        lib.ferry_batch_release, lib.ferry_reader_close = counted_release, counted_close
        return self

    def __exit__(self, *exc):
        lib = _lib.get()
        lib.ferry_batch_release, lib.ferry_reader_close = self.saved


def keep_something(batch, rng, want):
    """Something made from batch that keeps it alive (or the batch), and the
    bytes it must hold: a sample, a view of one, np.asarray of the stacked
    batch, a slice of it, a DLPack capsule of it. In GPU memory (numpy can
    neither view nor consume it): a sample or the batch, read back by copy."""
    i = rng.randrange(len(batch))
    sample = want(batch.paths[i])
    stacked = np.stack([want(p) for p in batch.paths])
    if batch.device == "cuda":
        choices = [(batch[i], sample), (batch, stacked)]
    else:
        choices = [(batch[i], sample), (batch[i][1:], sample[1:]), (batch, stacked),
                   (np.asarray(batch), stacked), (np.asarray(batch)[i:], stacked[i:]),
                   (("capsule", batch.__dlpack__()), stacked)]
    return choices[rng.randrange(len(choices))]


class Capsule:
    """A DLPack capsule for np.from_dlpack, which consumes it."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def holds(kept, want):
    """kept holds want's bytes (an unconsumed capsule is consumed to see)."""
    if isinstance(kept, tuple):
        kept = np.from_dlpack(Capsule(kept[1]))
    if not isinstance(kept, np.ndarray):
        kept = kept.numpy()  # a ferry.Array or Batch: a view on the host, a copy from a GPU
    return kept.tobytes() == want.tobytes()


def test_release_once(root, tmp):
    """8 threads share a reader of stackable batches: each keeps something of
    some batches in a shared pool and drops something another thread kept.
    Every kept thing keeps its bytes; each batch is released once, by its
    last user; close() while things are kept defers the C reader's close
    until the last is dropped, on another thread."""
    same = os.path.join(tmp, "same")
    os.mkdir(same)
    for i in range(24):
        np.save(os.path.join(same, "s%02d.npy" % i), np.arange(12, dtype="<i4").reshape(3, 4) + i)
    loaded = {}

    def want(path):
        if path not in loaded:
            loaded[path] = np.load(path)
        return loaded[path]
    pool, pool_lock, wrong = [], threading.Lock(), []
    with Ledger() as ledger:
        r = ferry.Reader(file_root=same, batch_size=4, prefetch_queue_depth=2)

        def worker(seed):
            rng = random.Random(seed)
            for _ in range(150):
                b = r.next_batch()
                ledger.taken(b)
                if rng.random() < 0.5:
                    item = keep_something(b, rng, want)
                    with pool_lock:
                        pool.append(item)
                del b
                with pool_lock:
                    item = pool.pop(rng.randrange(len(pool))) if len(pool) > 4 else None
                if item is not None and not holds(*item):
                    wrong.append("a kept view lost its bytes")
        seeds = iter(range(THREADS))
        run_threads(lambda: worker(next(seeds)))
        handle = r._handle
        r.close()
        gc.collect()
        closes = [e for e in ledger.events if e[0] == "close"]
        check(pool and not closes and handle.ptr is not None,
              "close() with %d kept things: C reader closed %d times" % (len(pool), len(closes)))

        def last_users():
            while pool:
                item = pool.pop()
                if not holds(*item):
                    wrong.append("a kept view lost its bytes after close()")
        t = threading.Thread(target=last_users)
        t.start()
        t.join(60)
        gc.collect()
    check(not wrong, "%d kept things lost their bytes: %s" % (len(wrong), wrong[:2]))
    check(not ledger.bad, "releases: %s" % ledger.bad[:3])
    check(not +ledger.out, "batches never released: %r" % dict(+ledger.out))
    kinds = [e[0] for e in ledger.events]
    check(kinds.count("close") == 1 and kinds[-1] == "close",
          "the C reader closed %d times, last event %r" % (kinds.count("close"), kinds[-1:]))
    check(handle.ptr is None and handle.dependents == 0,
          "reader handle after its last batch: ptr %r, dependents %d"
          % (handle.ptr, handle.dependents))
    print("%d batches taken by %d threads, each released once; the C reader closed after the "
          "last" % (kinds.count("release"), THREADS))


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
    return run_tests((test_next_batch, test_iterate, test_release_once, test_close_while_waiting),
                     "ferry-py-threads-", setup=make_dataset)


if __name__ == "__main__":
    sys.exit(main())
