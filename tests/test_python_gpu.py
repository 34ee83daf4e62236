"""ferry on a GPU with torch and cupy: zero-copy interop (the consumer's
pointer is ferry's), stream semantics, and memory lifetime.

Run on the GPU machine: /usr/bin/python3 tests/test_python_gpu.py (FERRY_BUILD
names the build directory, default build). Exit 0 pass, 1 fail, 77 skip (no
numpy, no torch, no GPU). cupy is tested when importable.
"""
import gc
import os
import sys

from pyharness import check, run_tests  # noqa: E402
try:
    import numpy as np
    import torch
except ImportError as e:
    print("skip: %s" % e)
    sys.exit(77)
if not torch.cuda.is_available():
    print("skip: torch sees no CUDA GPU")
    sys.exit(77)
try:
    import cupy
except ImportError:
    cupy = None
import ferry  # noqa: E402

try:
    CTX = ferry.Context(device="cuda")
except ferry.FerryError as e:
    print("skip: ferry cannot open a CUDA context: %s" % e)
    sys.exit(77)

DTYPES = ["?", "i1", "i2", "i4", "i8", "u1", "f2", "f4", "f8", "c8", "c16"]


def data(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 100).astype(dtype)


def same(t, expected):
    """t (a torch tensor or cupy array on the GPU) equals expected, bit for bit."""
    host = t.cpu().numpy() if isinstance(t, torch.Tensor) else cupy.asnumpy(t)
    return host.dtype == expected.dtype and host.tobytes() == np.ascontiguousarray(
        expected).tobytes() and host.shape == expected.shape


def test_interop(tmp):
    for n, dt in enumerate(DTYPES):
        expected = data(dt, (3, 5, 7), n)
        path = os.path.join(tmp, "i%d.npy" % n)
        np.save(path, np.asfortranarray(expected) if n % 2 else expected)
        x = CTX.load(path)
        check(isinstance(x, ferry.Array) and x.device == "cuda", "%s: load gave %r" % (dt, x))
        cai = x.__cuda_array_interface__
        check(cai["version"] == 3 and cai["stream"] is None and cai["strides"] is None
              and cai["shape"] == expected.shape and cai["data"] == (x.ptr, False)
              and np.dtype(cai["typestr"]) == expected.dtype, "%s: CAI %r" % (dt, cai))
        check(x.__dlpack_device__() == (2, torch.cuda.current_device()),
              "%s: dlpack device %r" % (dt, x.__dlpack_device__()))
        t = torch.as_tensor(x, device="cuda")
        check(t.data_ptr() == x.ptr and same(t, expected), "%s: torch.as_tensor copied" % dt)
        t = torch.from_dlpack(x)
        check(t.data_ptr() == x.ptr and same(t, expected), "%s: torch.from_dlpack copied" % dt)
        check(np.array_equal(x.numpy(), expected, equal_nan=dt[0] in "fc"),
              "%s: Array.numpy()" % dt)
        if cupy is not None:
            c = cupy.asarray(x)
            check(c.data.ptr == x.ptr and same(c, expected), "%s: cupy.asarray copied" % dt)
            c = cupy.from_dlpack(x)
            check(c.data.ptr == x.ptr and same(c, expected), "%s: cupy.from_dlpack copied" % dt)


def test_lifetime(tmp):
    expected = np.arange(1 << 20, dtype="<f4")
    path = os.path.join(tmp, "life.npy")
    np.save(path, expected)
    ctx = ferry.Context(device="cuda")
    t1 = torch.from_dlpack(ctx.load(path))
    t2 = torch.as_tensor(ctx.load(path), device="cuda")
    c1 = cupy.asarray(ctx.load(path)) if cupy is not None else None
    ctx.close()
    gc.collect()
    for _ in range(4):  # new loads would land on freed memory
        torch.from_dlpack(ferry.load(path, device="cuda")).fill_(-1)
        torch.cuda.synchronize()
    check(same(t1, expected), "torch.from_dlpack tensor lost its memory")
    check(same(t2, expected), "torch.as_tensor tensor lost its memory")
    check(c1 is None or same(c1, expected), "cupy array lost its memory")
    del t1, t2, c1
    gc.collect()
    from ferry import _array
    check(not _array._exported, "DLPack exports leaked: %d" % len(_array._exported))


def test_streams(tmp):
    expected = np.arange(1 << 18, dtype="<i8")
    path = os.path.join(tmp, "s.npy")
    np.save(path, expected)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = ferry.load(path, device="cuda")  # stream defaults to side: no host sync
        check(x.__cuda_array_interface__["stream"] == side.cuda_stream,
              "load: CAI stream %r" % x.__cuda_array_interface__["stream"])
        t = torch.as_tensor(x, device="cuda") * 2
        check(same(t, expected * 2), "load on a side stream")
        x = ferry.load(path, device="cuda", stream=side)
        t = torch.from_dlpack(x)
        check(same(t, expected), "load with stream=")
    x = CTX.load(path)  # no stream: waited for on the host, ready on every stream
    check(x.__cuda_array_interface__["stream"] is None, "Context.load without a stream")
    x = ferry.load(path, device="cuda", stream=1)
    check(x.__cuda_array_interface__["stream"] == 1, "load on the legacy default stream")
    check(same(torch.as_tensor(x, device="cuda"), expected), "load with stream=1")
    # A large file consumed at once on a busy stream: the stream waits for ferry's
    # copies on the device, with no synchronize anywhere in between.
    big = np.arange(1 << 25, dtype="<i4")
    big_path = os.path.join(tmp, "big.npy")
    np.save(big_path, big)
    for _ in range(3):
        with torch.cuda.stream(side):
            torch.cuda._sleep(20_000_000)
            t = torch.as_tensor(ferry.load(big_path, device="cuda"), device="cuda")
            total = (t.to(torch.int64) - torch.arange(1 << 25, device="cuda")).abs().sum()
        check(int(total) == 0, "large load on a busy stream: off by %d" % int(total))
    if cupy is not None:
        cs = cupy.cuda.Stream(non_blocking=True)
        x = ferry.load(path, device="cuda", stream=cs)
        check(x.__cuda_array_interface__["stream"] == cs.ptr, "load: cupy stream")
        with cs:
            check(same(cupy.asarray(x) * 3, expected * 3), "load on a cupy stream")
    root = os.path.join(tmp, "rd")
    os.mkdir(root)
    for i in range(8):
        np.save(os.path.join(root, "s%d.npy" % i), np.full((256, 256), i, dtype="<f4"))
    with ferry.Reader(file_root=root, batch_size=2, device="cuda") as r:
        with torch.cuda.stream(side):
            b = r.next_batch()
            cai = b[0].__cuda_array_interface__
            check(cai["stream"] == (side.cuda_stream or 1), "reader CAI stream %r" % cai)
            ts = [torch.as_tensor(a, device="cuda") for a in b]
            check(all(t.data_ptr() == a.ptr for t, a in zip(ts, b)), "reader batch copied")
            check([float(t.mean()) for t in ts] == [0.0, 1.0], "reader batch values")
        cap_t = torch.from_dlpack(r.next_batch()[1])  # __dlpack__(stream=current) waits
        check(float(cap_t.mean()) == 3.0, "reader batch through DLPack")
    explicit = torch.cuda.Stream()
    with ferry.Reader(file_root=root, batch_size=4, device="cuda", stream=explicit) as r:
        b = r.next_batch()
        check(b[0].__cuda_array_interface__["stream"] == explicit.cuda_stream,
              "Reader(stream=) CAI stream")
        with torch.cuda.stream(explicit):
            check([float(torch.as_tensor(a, device="cuda").mean()) for a in b] == [0, 1, 2, 3],
                  "Reader(stream=) values")


def test_reader_lifetime(tmp):
    root = os.path.join(tmp, "rl")
    os.mkdir(root)
    for i in range(12):
        np.save(os.path.join(root, "s%02d.npy" % i), np.full((1000,), i, dtype="<i4"))
    r = ferry.Reader(file_root=root, batch_size=3, device="cuda", prefetch_queue_depth=1)
    held = torch.as_tensor(r.next_batch()[2], device="cuda")
    for _ in range(3):
        for b in r:
            [torch.as_tensor(a, device="cuda").sum() for a in b]
    r.close()
    gc.collect()
    check(int(held.min()) == 2 and int(held.max()) == 2, "a held batch sample was overwritten")
    del held
    gc.collect()


def main():
    print("libferry", ferry.library_version(), "torch", torch.__version__,
          "cupy", cupy.__version__ if cupy is not None else None)
    print(CTX.describe())
    return run_tests((test_interop, test_lifetime, test_streams, test_reader_lifetime),
                     "ferry-py-gpu-")


if __name__ == "__main__":
    sys.exit(main())
