"""A short CuPy training loop fed by ferry.Reader.

Writes a synthetic regression dataset (one .npy file per sample: 16 features
and a target, float32) into a temporary directory, unless --data names one,
then fits a linear model by gradient descent on the GPU for a few epochs.
Every batch goes from storage to GPU memory through ferry and into CuPy
without a copy (cupy.asarray reads ferry's __cuda_array_interface__).

    python3 examples/train_cupy.py [--data DIR] [--epochs 5] [--batch-size 64]

Needs numpy, cupy with a CUDA GPU, and libferry (built with `make`, or
FERRY_LIBRARY); it exits with a message saying what is missing otherwise.
"""
import argparse
import os
import sys
import tempfile

try:
    import numpy as np
    import cupy as cp
except ImportError as e:
    sys.exit("train_cupy.py needs numpy and cupy: %s" % e)
try:
    import ferry
except ImportError:  # straight from the checkout
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import ferry
from synthetic import FEATURES, make_dataset  # noqa: E402


def gpu_available():
    try:
        return cp.cuda.runtime.getDeviceCount() > 0
    except cp.cuda.runtime.CUDARuntimeError:
        return False


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", help="a directory of samples (default: generate one)")
    p.add_argument("--samples", type=int, default=2048, help="samples to generate")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    args = p.parse_args()
    if not gpu_available():
        sys.exit("train_cupy.py needs a CUDA GPU: cupy finds none")
    with tempfile.TemporaryDirectory(prefix="ferry-train-") as tmp:
        root = args.data or tmp
        if not args.data:
            make_dataset(root, args.samples)
        stream = cp.cuda.get_current_stream()
        try:
            reader = ferry.Reader(file_root=root, batch_size=args.batch_size,
                                  random_shuffle=True, seed=1, device="cuda", stream=stream)
        except (OSError, NotImplementedError) as e:  # FerryError is an OSError
            sys.exit("train_cupy.py: ferry cannot read on the GPU: %s" % e)
        w = cp.zeros((FEATURES, 1), dtype=cp.float32)
        b = cp.zeros((1,), dtype=cp.float32)
        with reader:
            print("%d batches an epoch" % len(reader))
            for epoch in range(args.epochs):
                total, count = 0.0, 0
                for batch in reader:  # one epoch; batches are ready on `stream`
                    rows = cp.asarray(batch)  # the batch is one [B, ...] array: no copy
                    x, y = rows[:, :FEATURES], rows[:, FEATURES:]
                    err = x @ w + b - y
                    w -= args.lr * 2 * x.T @ err / len(batch)
                    b -= args.lr * 2 * err.mean(axis=0)
                    total += float((err ** 2).sum())
                    count += len(batch)
                print("epoch %d: mean loss %.5f" % (epoch, total / count))


if __name__ == "__main__":
    main()
