"""Big-endian and Fortran-order files written by numpy itself (np.save), loaded
by ferry.load, ferry.load_async, ferry.load_into (host device) and
ferry.Reader (whole arrays, and a region of interest on the last axis), every
byte compared with np.load's array in C order and native byte order: every
item size (1, 2, 4, 8 and 16 bytes, complex64 and complex128 included), ranks 1
to 6 with odd shapes, C and Fortran order, little and big endian. On the
device FERRY_DEVICE names; ferry env's convert: line must say the device
converts them.

Run: /usr/bin/python3 tests/test_convert_numpy.py (FERRY_BUILD names the build
directory, default build). Exit 0 pass, 1 fail, 77 skip (no numpy).
"""
import os
import sys

from pyharness import check, need_numpy, run_tests, to_numpy  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402

DTYPES = ["u1", "?", "i2", "f2", "f4", "i8", "f8", "c8", "c16"]
SHAPES = [(1237,), (67, 131), (13, 17, 19), (3, 5, 7, 11), (2, 3, 5, 1, 7), (2, 3, 1, 5, 2, 3)]
ORDERS = [("<", False), (">", False), ("<", True), (">", True)]


def values(dtype, shape, seed):
    """Random bits (NaNs and all: compared byte for byte) of dtype and shape."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    return np.frombuffer(rng.bytes(n * dt.itemsize), dt).reshape(shape).copy()


def write_set(folder, dtype, shape, seed):
    """Writes f0.npy..f3.npy (every byte order and memory order) into folder."""
    os.makedirs(folder)
    paths = []
    for k, (byteorder, fortran) in enumerate(ORDERS):
        a = values(dtype, shape, seed + k)
        if np.dtype(dtype).itemsize > 1:
            a = a.astype(a.dtype.newbyteorder(byteorder))
        a = np.asfortranarray(a) if fortran else np.ascontiguousarray(a)
        path = os.path.join(folder, "f%d.npy" % k)
        np.save(path, a)
        paths.append(path)
    return paths


def native(path, region=None):
    a = np.load(path)
    if region is not None:
        a = a[region]
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("="))


def same(got, path, how, region=None):
    want = native(path, region)
    got = np.asarray(to_numpy(got))
    ok = got.shape == want.shape and got.dtype == want.dtype and got.tobytes() == want.tobytes()
    check(ok, "%s by %s: got %s %s, want %s %s%s" % (
        path, how, got.dtype, got.shape, want.dtype, want.shape,
        "" if got.shape != want.shape else " (bytes differ)"))


def load_each(ctx, paths):
    for path in paths:
        same(ctx.load(path), path, "ferry.load")
        same(ctx.load_async(path).wait(), path, "ferry.load_async")
        if ctx.device == "host":
            want = native(path)
            out = np.zeros(want.shape, want.dtype)
            same(ctx.load_into(path, out), path, "ferry.load_into")
    pending = [ctx.load_async(p) for p in paths]  # every file in flight at once
    for path, p in zip(paths, pending):
        same(p.wait(), path, "ferry.load_async, the set in flight")


def read_set(ctx, folder, shape):
    last = len(shape) - 1
    inner = (1, shape[last] - 1) if shape[last] >= 3 else (0, shape[last])
    region = (slice(None),) * last + (slice(*inner),)
    for roi, how in ((None, "ferry.Reader"), (region, "ferry.Reader with a region")):
        kw = {} if roi is None else {"roi_start": [inner[0]], "roi_end": [inner[1]],
                                     "roi_axes": [last]}
        seen = 0
        with ferry.Reader(file_root=folder, batch_size=3, epochs=1, ctx=ctx, **kw) as r:
            for batch in r:
                for path, sample in zip(batch.paths, batch):
                    same(sample, path, how, roi)
                    seen += 1
        check(seen == len(ORDERS), "%s: %s read %d samples" % (folder, how, seen))


def test_every_case(tmp):
    with ferry.Context(chunk_size=4096, threads=3) as ctx:
        check("converted on the device" in ctx.describe(),
              "ferry env: the device does not convert: " + ctx.describe())
        for t, dtype in enumerate(DTYPES):
            for shape in SHAPES:
                folder = os.path.join(tmp, "%s_r%d" % (dtype, len(shape)))
                paths = write_set(folder, dtype, shape, 100 * t + len(shape))
                load_each(ctx, paths)
                read_set(ctx, folder, shape)


if __name__ == "__main__":
    sys.exit(run_tests([test_every_case], "ferry-convert-"))
