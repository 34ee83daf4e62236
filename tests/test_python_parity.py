"""The C API's loading calls from Python, on the host device:
ferry.load_into (into a caller's numpy array: every dtype and byte order,
checked size, dtype, contiguity and writability before any byte is read),
ferry.read_range (raw bytes of any file, into new memory or a caller's
buffer; a range past the end is ETRUNCATED), and ferry.load_async /
load_into_async (an AsyncLoad with wait(), wait_stream(), stream, array).
Also DALI's device names ('gpu' is CUDA, 'cpu' the host device) and the
short reprs.

Run: /usr/bin/python3 tests/test_python_parity.py (FERRY_BUILD names the
build directory, default build). Exit 0 pass, 1 fail, 77 skip.
"""
import gc
import os
import sys
import weakref

# Host-device semantics (numpy views of ferry's memory): on the GPU machine
# too, these run on the host device; CUDA is tests/test_python_gpu.py's.
os.environ["FERRY_DEVICE"] = "host"
from pyharness import check, need_numpy, run_tests  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402

DTYPES = ["?", "i1", "<i2", ">i4", "<i8", "u1", ">u2", "<f4", ">f8", "<c8", ">c16"]


def data(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    return np.frombuffer(rng.bytes(int(np.prod(shape)) * np.dtype(dtype).itemsize),
                         dtype).reshape(shape).copy() if np.dtype(dtype).kind != "b" else \
        rng.integers(0, 2, shape).astype(bool)


def native(a):
    return np.array(a, dtype=a.dtype.newbyteorder("="), order="C")


def refused(exc, text, call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except ferry.FerryError as e:
        check(False, "%s: reached libferry: %s" % (text, e))
    except exc as e:
        check(text in str(e), "the message does not say %r: %s" % (text, e))
    else:
        check(False, "%s: accepted" % text)


def test_load_into(tmp):
    ctx = ferry.Context(device="host")
    for n, dt in enumerate(DTYPES):
        a = data(dt, (3, 4, 5), n)
        path = os.path.join(tmp, "a%d.npy" % n)
        np.save(path, np.asfortranarray(a) if n % 2 else a)
        want = native(a)
        out = np.full(want.shape, 0x5A, dtype=want.dtype) if want.dtype.kind != "b" else \
            np.zeros(want.shape, bool)
        got = ferry.load_into(path, out)
        check(got is out and out.tobytes() == want.tobytes(), "%s: load_into" % dt)
        flat = np.empty(want.size, want.dtype)
        check(ctx.load_into(path, flat) is flat and flat.tobytes() == want.tobytes(),
              "%s: load_into a flat buffer of the same size" % dt)
        out = np.empty(want.shape, want.dtype)
        p = ctx.load_into_async(path, out)
        check(p.wait() is out and out.tobytes() == want.tobytes(), "%s: load_into_async" % dt)
    path = os.path.join(tmp, "a3.npy")  # >i4 (3, 4, 5)
    good = np.empty((3, 4, 5), "<i4")
    refused(ValueError, "dtype", ferry.load_into, path, np.empty((3, 4, 5), "<f4"))
    refused(ValueError, "dtype", ferry.load_into, path, np.empty((3, 4, 5), ">i4"))
    refused(ValueError, "elements", ferry.load_into, path, np.empty((3, 4, 6), "<i4"))
    refused(ValueError, "elements", ferry.load_into, path, np.empty((61,), "<i4"))
    refused(ValueError, "C-contiguous", ferry.load_into, path, np.empty((5, 4, 3), "<i4").T)
    ro = good.copy()
    ro.flags.writeable = False
    refused(ValueError, "read-only", ferry.load_into, path, ro)
    refused(TypeError, "numpy array", ctx.load_into, path, [0] * 60)
    refused(TypeError, "numpy array", ctx.load_into, path, bytearray(240))
    refused(TypeError, "path", ferry.load_into, 5, good)
    try:
        ferry.load_into(os.path.join(tmp, "nope.npy"), good)
        check(False, "a missing file: no error")
    except FileNotFoundError as e:
        check(isinstance(e, ferry.FerryError) and "nope.npy" in str(e), "missing file: %s" % e)
    ctx.close()


def test_read_range(tmp):
    path = os.path.join(tmp, "raw.bin")
    blob = os.urandom(300000)
    with open(path, "wb") as f:
        f.write(blob)
    for offset, length in ((0, 300000), (1, 1), (4095, 8193), (299999, 1), (123, 0),
                           (300000, 0)):
        got = ferry.read_range(path, offset, length)
        check(isinstance(got, np.ndarray) and got.dtype == np.uint8 and got.shape == (length,)
              and got.tobytes() == blob[offset:offset + length],
              "read_range(%d, %d)" % (offset, length))
    out = np.zeros(5000, np.uint8)
    check(ferry.read_range(path, 777, 4000, out=out) is out
          and out[:4000].tobytes() == blob[777:4777] and not out[4000:].any(),
          "read_range into out")
    words = np.zeros(1000, "<u4")
    ferry.read_range(path, 8, 4000, out=words)
    check(words.tobytes() == blob[8:4008], "read_range into a uint32 buffer")
    for offset, length in ((299999, 2), (300001, 0), (0, 300001)):
        try:
            ferry.read_range(path, offset, length)
            check(False, "read_range(%d, %d) past the end: no error" % (offset, length))
        except ferry.FerryError as e:
            check(e.errno == ferry.ETRUNCATED and e.filename == path, "past the end: %r" % e)
    refused(ValueError, "offset", ferry.read_range, path, -1, 4)
    refused(ValueError, "length", ferry.read_range, path, 0, -4)
    refused(TypeError, "length", ferry.read_range, path, 0, 4.0)
    refused(ValueError, "fewer than length", ferry.read_range, path, 0, 10, out=np.zeros(9, "u1"))
    # The memory lives as long as the array.
    got = ferry.read_range(path, 0, 4096)
    base = got
    while isinstance(base, np.ndarray):
        base = base.base
    holder = weakref.ref(base._ferry_array._owner)
    del base
    for _ in range(8):
        ferry.read_range(path, 100, 4096)
    gc.collect()
    check(holder() is not None and got.tobytes() == blob[:4096], "read_range memory was reused")
    del got
    gc.collect()
    check(holder() is None, "read_range memory outlived its array")


def test_load_async(tmp):
    paths = []
    for i in range(6):
        p = os.path.join(tmp, "async%d.npy" % i)
        np.save(p, np.full((64, 1024), i, dtype=">f4"))
        paths.append(p)
    pending = [ferry.load_async(p) for p in paths]
    check(all(isinstance(p, ferry.AsyncLoad) and p.stream is None for p in pending),
          "load_async: %r" % pending)
    check("async0.npy" in repr(pending[0]) and len(repr(pending[0])) < 200, "AsyncLoad repr")
    for i, p in enumerate(pending):
        p.wait_stream(None)  # on the host device, a host wait
        a = p.wait()
        check(isinstance(a, np.ndarray) and a.dtype == np.dtype("=f4") and a.shape == (64, 1024)
              and (a == i).all(), "load_async %d" % i)
        check(np.array_equal(p.array, a), "AsyncLoad.array")
    with ferry.Context(device="host") as ctx:
        p = ctx.load_async(paths[2], stream=7)  # no stream on the host device: waited later
        check(p.stream is None and (p.array == 2).all(), "load_async with a stream on the host")
    try:
        ferry.load_async(os.path.join(tmp, "missing.npy"))
        check(False, "load_async of a missing file: no error")
    except FileNotFoundError:
        pass


def test_devices(tmp):
    path = os.path.join(tmp, "d.npy")
    np.save(path, np.arange(10))
    with ferry.Context(device="cpu") as ctx:
        check(ctx.device == "host", "device='cpu' is the host device")
        check(repr(ctx) == "ferry.Context(device='host', io=%r)" % ctx.io, "repr %r" % ctx)
    check(np.array_equal(ferry.load(path, device="cpu"), np.arange(10)), "load(device='cpu')")
    for make in (lambda: ferry.Context(device="gpu"), lambda: ferry.load(path, device="gpu"),
                 lambda: ferry.Reader(files=[path], device="gpu")):
        try:
            x = make()
            # A machine with a GPU: 'gpu' gave CUDA.
            check(getattr(x, "device", "cuda") == "cuda", "device='gpu' gave %r" % x)
        except ferry.FerryError as e:
            check(e.errno == ferry.ENODEVICE and "cuda" in str(e),
                  "device='gpu' is not CUDA: %s" % e)
    with ferry.Context(device="host", direct=True) as ctx:
        check("direct=True" in repr(ctx), "repr of a direct context %r" % ctx)


def main():
    print("libferry", ferry.library_version())
    return run_tests((test_load_into, test_read_range, test_load_async, test_devices),
                     "ferry-py-parity-")


if __name__ == "__main__":
    sys.exit(main())
