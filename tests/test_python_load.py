"""ferry.load and ferry.info against np.load: every dtype, C and Fortran order,
every byte order; FerryError; memory lifetime; DLPack plumbing.

Run: /usr/bin/python3 tests/test_python_load.py (FERRY_BUILD names the build
directory, default build). Exit 0 pass, 1 fail, 77 skip (no numpy).
"""
import errno
import gc
import os
import struct
import sys
import weakref

from pyharness import check, need_numpy, run_tests, to_numpy  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402

DTYPES = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"]
SHAPES = [(), (0,), (7,), (3, 4), (2, 3, 5), (1, 4, 1, 3)]



def sample(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        a = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        a = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, n, dtype=dt, endpoint=True)
    else:  # random bits, NaNs and all: compared byte for byte
        a = np.frombuffer(rng.bytes(n * dt.itemsize), dt).copy()
    return a.reshape(shape)


def write_npy(path, array, descr, fortran):
    """Writes a version 1.0 .npy file by hand with descr exactly as given."""
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %r, }" % (
        descr, fortran, tuple(array.shape))
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    payload = np.asfortranarray(array) if fortran else np.ascontiguousarray(array)
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(payload.tobytes(order="F" if fortran else "C"))


def native(a):
    return np.array(a, dtype=a.dtype.newbyteorder("="), order="C")


def compare(path, what):
    expected = native(np.load(path))
    got = to_numpy(ferry.load(path))
    ok = (got.dtype == expected.dtype and got.shape == expected.shape
          and got.flags.c_contiguous and got.tobytes() == expected.tobytes())
    check(ok, "%s: ferry.load differs from np.load (%s %s vs %s %s)" % (
        what, got.dtype, got.shape, expected.dtype, expected.shape))
    info = ferry.info(path)
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        read = {(1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0}[version]
        shape, fortran, dtype = read(f)
        offset = f.tell()
    check(np.dtype(info.dtype) == dtype and info.shape == shape
          and info.fortran_order == fortran and info.data_offset == offset
          and info.nbytes == expected.nbytes and info.version == version
          and info.byteswapped == (dtype.byteorder not in "=|"),
          "%s: ferry.info %r differs from the header" % (what, info))


def test_dtypes_orders(tmp):
    n = 0
    for dt in DTYPES:
        for shape in SHAPES:
            for order in ("<", ">", "|", "="):
                for fortran in (False, True):
                    base = np.dtype(dt)
                    a = sample(dt, shape, n)
                    path = os.path.join(tmp, "t%d.npy" % n)
                    n += 1
                    if order in "<>" and base.kind != "b":
                        a = a.astype(base.newbyteorder(order))
                        np.save(path, np.asfortranarray(a) if fortran else a)
                    else:  # np.save never writes '|' on wide types, nor '=': write by hand
                        write_npy(path, a, order + base.str[1:], fortran)
                    compare(path, "%s%s shape %s %s" % (order, dt, shape,
                                                        "F" if fortran else "C"))
    print("compared %d files" % n)


def expect_error(path, code, what):
    try:
        ferry.load(path)
    except ferry.FerryError as e:
        check(isinstance(e, OSError), what + ": FerryError is not an OSError")
        check(e.errno == code, "%s: errno %r, expected %d" % (what, e.errno, code))
        check(e.filename == path, "%s: filename %r" % (what, e.filename))
        check(bool(e.strerror) and path in str(e), "%s: message %r" % (what, str(e)))
        return e
    else:
        check(False, what + ": no FerryError")


def test_errors(tmp):
    missing = os.path.join(tmp, "missing.npy")
    e = expect_error(missing, errno.ENOENT, "missing file")
    check(isinstance(e, FileNotFoundError), "missing file: not a FileNotFoundError")
    bad = os.path.join(tmp, "bad_magic.npy")
    with open(bad, "wb") as f:
        f.write(b"\x93NUMPX\x01\x00" + b" " * 120)
    expect_error(bad, ferry.EFORMAT, "bad magic")
    short = os.path.join(tmp, "short.npy")
    np.save(short, np.arange(1000, dtype="<f8"))
    with open(short, "r+b") as f:
        f.truncate(os.path.getsize(short) - 8)
    try:
        ferry.load(short)
        check(False, "truncated file: no error")
    except ferry.FerryError as e:
        check(e.errno in (ferry.EFORMAT, ferry.ETRUNCATED), "truncated: errno %r" % e.errno)
    strings = os.path.join(tmp, "strings.npy")
    np.save(strings, np.array(["ab", "cd"]))
    expect_error(strings, ferry.EUNSUPPORTED, "unicode dtype")
    try:
        ferry.info(missing)
        check(False, "info of a missing file: no error")
    except FileNotFoundError as e:
        check(isinstance(e, ferry.FerryError) and e.filename == missing, "info error %r" % e)
    try:
        ferry.Context(device="tpu")
        check(False, "device 'tpu': no error")
    except ValueError as e:  # refused in Python, before libferry
        check("device" in str(e), "device 'tpu': %s" % e)


def ferry_array_of(view):
    """The ferry.Array behind a host-device numpy view."""
    b = view
    while isinstance(b, np.ndarray):
        b = b.base
    return b._ferry_array


def test_lifetime(tmp):
    path = os.path.join(tmp, "life.npy")
    expected = np.arange(100000, dtype="<i8").reshape(100, 1000)
    np.save(path, expected)
    ctx = ferry.Context(device="host")
    view = ctx.load(path)
    check(isinstance(view, np.ndarray), "host load did not return a numpy array")
    arr = ferry_array_of(view)
    owner = weakref.ref(arr._owner)
    ptr = arr.ptr
    check(view.ctypes.data == ptr, "the view does not share ferry's memory")
    del arr
    ctx.close()
    gc.collect()
    check(owner() is not None, "the ferry array died while a view of it lives")
    for _ in range(5):  # churn allocations that would land on freed memory
        ferry.load(path, device="host")[:] = -1
    gc.collect()
    check(np.array_equal(view, expected), "the view's data changed")
    sub = view[10:20, ::7]
    del view
    gc.collect()
    check(owner() is not None and np.array_equal(sub, expected[10:20, ::7]),
          "a slice lost its memory")
    del sub
    gc.collect()
    check(owner() is None, "the ferry array outlived every view")
    try:
        ctx.load(path)
        check(False, "load on a closed context: no error")
    except ValueError:
        pass
    with ferry.Context(device="host", threads=2, chunk_size=1 << 16) as c:
        check(c.device == "host" and c.io in ("posix", "uring", "cufile"), "context %r" % c)
        check("threads: 2" in c.describe(), "describe: %r" % c.describe())
        check(np.array_equal(c.load(path), expected), "small-chunk context load")


def test_finalizer_order(tmp):
    """The garbage collector finalizes a cycle in no set order: a context
    finalized before its arrays must stay until the last of them is gone."""
    path = os.path.join(tmp, "order.npy")
    expected = np.arange(5000, dtype="<f8")
    np.save(path, expected)
    ctx = ferry.Context(device="host")
    view = ctx.load(path)
    handle = ctx._handle
    ctx.close()
    handle.__del__()  # as the collector may, before the array's finalizer
    check(handle.ptr is not None, "the context was destroyed under a live array")
    check(np.array_equal(view, expected), "an array lost its data to its context's finalizer")
    del view
    gc.collect()
    check(handle.ptr is None, "the context outlived its last array")


def test_dlpack(tmp):
    path = os.path.join(tmp, "dl.npy")
    expected = np.arange(60, dtype="<f4").reshape(3, 4, 5)
    np.save(path, expected)
    from ferry import _array
    arr = ferry_array_of(ferry.load(path, device="host"))
    check(arr.__dlpack_device__() == (1, 0), "dlpack device %r" % (arr.__dlpack_device__(),))
    owner = weakref.ref(arr._owner)
    cap = arr.__dlpack__()
    check(type(cap).__name__ == "PyCapsule", "__dlpack__ returned %r" % type(cap))
    del cap
    gc.collect()
    check(not _array._exported, "an unconsumed capsule was not freed")
    if hasattr(np, "from_dlpack"):
        x = np.from_dlpack(arr)
        check(x.ctypes.data == arr.ptr and np.array_equal(x, expected), "np.from_dlpack copy")
        del arr
        gc.collect()
        check(owner() is not None and np.array_equal(x, expected), "dlpack lost its memory")
        del x
        gc.collect()
        check(owner() is None and not _array._exported, "dlpack leaked the array")
    try:
        _ = ferry_array_of(ferry.load(path, device="host")).__cuda_array_interface__
        check(False, "a host array has __cuda_array_interface__")
    except AttributeError:
        pass


class _FakeStream:
    """Stands for a torch/cupy stream: what ferry reads of one."""
    cuda_stream = 7


def test_streams_on_host(tmp):
    """On the host device any stream argument means a host wait: the result is
    complete when load returns. A stream of the wrong type is refused."""
    path = os.path.join(tmp, "st.npy")
    expected = np.arange(300000, dtype="<u2").reshape(300, 1000)
    np.save(path, expected)
    for stream in (None, 0, 1, 2, 12345, _FakeStream()):
        got = ferry.load(path, device="host", stream=stream)
        check(np.array_equal(got, expected), "stream %r: wrong data" % (stream,))
    arrays = [ferry.load(path, device="host", stream=1) for _ in range(8)]  # many at once
    check(all(np.array_equal(a, expected) for a in arrays), "loads held together differ")
    for bad in ("1", 1.5, object()):
        try:
            ferry.load(path, device="host", stream=bad)
            check(False, "stream %r: no error" % (bad,))
        except TypeError:
            pass


def main():
    print("libferry", ferry.library_version())
    return run_tests((test_dtypes_orders, test_errors, test_lifetime, test_finalizer_order,
                      test_dlpack,
                      test_streams_on_host), "ferry-py-")


if __name__ == "__main__":
    sys.exit(main())
