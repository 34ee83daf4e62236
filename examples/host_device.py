"""ferry without a GPU: the host device, which runs the same loader and staging
engine with host memory standing in for GPU memory.

Writes the synthetic regression dataset of synthetic.py (one .npy file per
sample: 16 features and a target, float32) into a temporary directory, unless
--data names one; loads a few files with ferry.load and checks them against
np.load; then reads the whole dataset in shuffled batches with ferry.Reader for
two epochs and fits the linear model by least squares from those batches.

    python3 examples/host_device.py [--data DIR] [--samples 1024] [--batch-size 32]

Needs numpy and libferry (built with `make`, or FERRY_LIBRARY); no GPU, CUDA
or torch. Prints what it did and 'host_device.py: ok'.
"""
import argparse
import os
import sys
import tempfile

try:
    import numpy as np
except ImportError as e:
    sys.exit("host_device.py needs numpy: %s" % e)
try:
    import ferry
except ImportError:  # straight from the checkout
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import ferry
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from synthetic import FEATURES, make_dataset  # noqa: E402


def check_loads(root, count):
    """Loads the first count files with ferry.load onto the host device and
    compares each with np.load. Returns how many matched."""
    names = sorted(n for n in os.listdir(root) if n.endswith(".npy"))[:count]
    for name in names:
        path = os.path.join(root, name)
        got = ferry.load(path, device="host")  # a numpy array viewing ferry's memory
        if not np.array_equal(got, np.load(path)):
            sys.exit("host_device.py: %s differs from np.load" % path)
    return len(names)


def fit(root, batch_size, epochs):
    """Reads every sample epochs times in shuffled batches and solves the least
    squares fit from the accumulated normal equations. Returns (weights,
    samples read, batches read)."""
    xtx = np.zeros((FEATURES, FEATURES))
    xty = np.zeros(FEATURES)
    samples = batches = 0
    with ferry.Reader(file_root=root, batch_size=batch_size, random_shuffle=True, seed=1,
                      device="host") as reader:
        for _ in range(epochs):
            for batch in reader:  # one epoch
                rows = np.asarray(batch).astype(np.float64)  # the batch is one [B, ...] array
                x, y = rows[:, :FEATURES], rows[:, FEATURES]
                xtx += x.T @ x
                xty += x.T @ y
                samples += len(batch)
                batches += 1
    return np.linalg.solve(xtx, xty), samples, batches


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", help="a directory of samples (default: generate one)")
    p.add_argument("--samples", type=int, default=1024, help="samples to generate")
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="ferry-host-") as tmp:
        root = args.data or tmp
        if not args.data:
            make_dataset(root, args.samples)
        version, path = ferry.library_version()
        print("ferry %s (%s), device: host (no GPU needed)" % (version, path))
        print("ferry.load: %d files match np.load" % check_loads(root, 8))
        w, samples, batches = fit(root, args.batch_size, epochs=2)
        residual = 0.0
        for name in sorted(os.listdir(root))[:64]:
            row = np.load(os.path.join(root, name)).astype(np.float64)
            residual = max(residual, abs(row[:FEATURES] @ w - row[FEATURES]))
        print("ferry.Reader: %d samples in %d batches over 2 epochs; least-squares fit, "
              "largest residual on 64 samples %.4f" % (samples, batches, residual))
        if residual > 0.1:
            sys.exit("host_device.py: the fit is off (residual %.4f)" % residual)
    print("host_device.py: ok")


if __name__ == "__main__":
    main()
