#!/usr/bin/env python3
"""Where a Python reader's time per batch goes, warm (issue 18).

Reads DIR's .npy files with ferry.Reader at each batch size for --seconds,
taking each batch as one tensor as bench/python_reader.py's stacked tool does
(torch.as_tensor(batch, device="cuda") when torch has a GPU, else
numpy.asarray), and prints per batch: wall time, the time inside
next_batch() (of which inside ferry_reader_next_timeout, i.e. libferry,
waiting included), the time making the tensor, and the main thread's CPU
time; then cProfile's top functions of one more run at the last batch size.

usage: profile_python_reader.py DIR [--batch-sizes 1,32] [--seconds 3]
"""
import argparse
import cProfile
import io
import pstats
import sys
import time

import ferry
from ferry import _lib


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


def measure(root, batch, seconds, make):
    lib = _lib.get()
    saved = lib.ferry_reader_next_timeout
    timed = lib.ferry_reader_next_timeout = Timed(saved)
    try:
        with ferry.Reader(file_root=root, batch_size=batch) as r:
            r.next_batch()  # the first batch's latency is not the steady rate
            timed.total = 0.0
            n, in_next, in_tensor = 0, 0.0, 0.0
            cpu0, t0 = time.thread_time(), time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                a = time.perf_counter()
                b = r.next_batch()
                if b is None:
                    break
                c = time.perf_counter()
                make(b)
                in_next += c - a
                in_tensor += time.perf_counter() - c
                n += 1
            wall, cpu = time.perf_counter() - t0, time.thread_time() - cpu0
    finally:
        lib.ferry_reader_next_timeout = saved
    us = 1e6 / max(n, 1)
    print("batch %4d: %6d batches  %8.1f us/batch wall  next_batch %7.1f (libferry %7.1f)  "
          "tensor %6.1f  main-thread CPU %6.1f" % (batch, n, wall * us, in_next * us,
                                                    timed.total * us, in_tensor * us, cpu * us))


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
    p.add_argument("--batch-sizes", default="1,32")
    p.add_argument("--seconds", type=float, default=3.0)
    a = p.parse_args()
    kind, make = tensor_maker()
    sizes = [int(s) for s in a.batch_sizes.split(",")]
    print("ferry %s, tensors by %s, %s" % (ferry.__version__, kind, a.dir))
    for batch in sizes:
        measure(a.dir, batch, a.seconds, make)
    profile(a.dir, sizes[-1], a.seconds, make)
    return 0


if __name__ == "__main__":
    sys.exit(main())
