"""The synthetic regression dataset both examples train on."""
import os

import numpy as np

FEATURES = 16


def make_dataset(root, n, seed=0):
    """Writes n samples root/sample_XXXXX.npy: FEATURES features, then x @ w + noise."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(FEATURES).astype(np.float32)
    for i in range(n):
        x = rng.standard_normal(FEATURES).astype(np.float32)
        y = np.float32(x @ w + 0.01 * rng.standard_normal())
        np.save(os.path.join(root, "sample_%05d.npy" % i), np.append(x, y))
