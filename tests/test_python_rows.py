"""Rows as samples from Python: Reader(samples="rows") reads every row along
axis 0 of every file as a sample; each stacked batch equals numpy's slice of
the rows it names (Batch.paths, Batch.rows), in order and shuffled, with a
region of interest on a row's axes; every row of the dataset arrives exactly
once an epoch; a bad value of samples is a ValueError.

Run with /usr/bin/python3; FERRY_BUILD names the build directory (build).
Exit 0 pass, 1 fail, 77 skip."""
import os
import sys

try:
    import numpy as np
except ImportError:
    print("skip: numpy is missing")
    sys.exit(77)

# Host-device semantics (numpy views of ferry's memory): on the GPU machine
# too, these run on the host device; CUDA is tests/test_python_gpu.py's.
os.environ["FERRY_DEVICE"] = "host"
from pyharness import check, run_tests  # noqa: E402

import ferry  # noqa: E402

ROWS = (5, 0, 9, 3)


def make_dataset(tmp):
    arrays = {}
    for i, n in enumerate(ROWS):
        a = (np.arange(n * 4 * 6, dtype=np.int64).reshape(n, 4, 6) + 1000 * i).astype("<u2")
        path = os.path.join(tmp, "r%d.npy" % i)
        np.save(path, a)
        arrays[path] = a
    return (arrays,)


def check_epoch(arrays, reader, roi=(slice(None), slice(None))):
    seen = {}
    for batch in reader:
        got = np.asarray(batch)
        want = np.stack([arrays[p][r][roi] for p, r in zip(batch.paths, batch.rows)])
        check(np.array_equal(got, want), "a batch of rows differs from numpy's slices")
        for p, r in zip(batch.paths, batch.rows):
            seen[(p, r)] = seen.get((p, r), 0) + 1
    every = {(p, r) for p, a in arrays.items() for r in range(a.shape[0])}
    check(set(seen) == every and set(seen.values()) == {1}, "rows of an epoch: %r" % seen)


def test_rows(arrays, tmp):
    for batch_size in (1, 4, 17):
        for shuffle in (False, True):
            with ferry.Reader(file_root=tmp, samples="rows", batch_size=batch_size,
                              random_shuffle=shuffle, seed=5) as r:
                check(len(r) == (17 + batch_size - 1) // batch_size, "len of a rows reader")
                check_epoch(arrays, r)


def test_rows_roi(arrays, tmp):
    with ferry.Reader(file_root=tmp, samples="rows", batch_size=5, roi_start=(1, 2),
                      roi_shape=(2, 3)) as r:
        check_epoch(arrays, r, (slice(1, 3), slice(2, 5)))


def test_bad_value(arrays, tmp):
    try:
        ferry.Reader(file_root=tmp, samples="columns")
        check(False, "samples='columns' was accepted")
    except ValueError as e:
        check("samples" in str(e), "the error does not name samples: %s" % e)


def main():
    return run_tests((test_rows, test_rows_roi, test_bad_value), "ferry-rows-",
                     setup=make_dataset)


if __name__ == "__main__":
    sys.exit(main())
