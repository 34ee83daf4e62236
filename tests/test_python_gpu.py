"""ferry on a GPU with torch, cupy and jax: zero-copy interop of arrays and
of stacked reader batches (the consumer's pointer is ferry's), ragged batches,
load_into a torch or CuPy buffer, read_range and load_async on the device,
stream semantics, and memory lifetime.

Run on the GPU machine: /usr/bin/python3 tests/test_python_gpu.py (FERRY_BUILD
names the build directory, default build). Exit 0 pass, 1 fail, 77 skip (no
numpy, no torch, no GPU). cupy and jax are tested when importable (jax with
XLA_PYTHON_CLIENT_PREALLOCATE=false, so that it leaves memory to the others).
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
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
try:
    import jax
    import jax.dlpack
    if not any(d.platform == "gpu" for d in jax.devices()):
        jax = None
except Exception:  # not installed, or no GPU backend
    jax = None
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
    """t (a torch tensor, cupy or jax array on the GPU) equals expected, bit for bit."""
    if isinstance(t, torch.Tensor):
        host = t.cpu().numpy()
    elif cupy is not None and isinstance(t, cupy.ndarray):
        host = cupy.asnumpy(t)
    else:
        host = np.asarray(t)
    return host.dtype == expected.dtype and host.tobytes() == np.ascontiguousarray(
        expected).tobytes() and host.shape == expected.shape


def jax_ptr(a):
    return a.unsafe_buffer_pointer() if hasattr(a, "unsafe_buffer_pointer") else \
        a.addressable_data(0).unsafe_buffer_pointer()


JAX_DTYPES = ["?", "i1", "i2", "i4", "u1", "f2", "f4", "c8"]  # float64 needs jax's x64 mode


def test_jax(tmp):
    if jax is None:
        print("jax: not importable or no GPU backend, not tested")
        return
    for n, dt in enumerate(JAX_DTYPES):
        expected = data(dt, (4, 6, 8), 100 + n)
        path = os.path.join(tmp, "j%d.npy" % n)
        np.save(path, expected)
        x = CTX.load(path)
        j = jax.dlpack.from_dlpack(x)
        check(same(j, expected), "%s: jax.dlpack.from_dlpack of a ferry.Array" % dt)
        check(jax_ptr(j) == x.ptr, "%s: jax copied the array" % dt)
    root = os.path.join(tmp, "jr")
    os.mkdir(root)
    for i in range(6):
        np.save(os.path.join(root, "s%d.npy" % i), np.full((32, 8), i, dtype="<f4"))
    with ferry.Reader(file_root=root, batch_size=4, device="cuda", pad_last_batch=True) as r:
        for b in r:
            j = jax.dlpack.from_dlpack(b)
            want = np.stack([np.load(p) for p in b.paths])
            check(same(j, want) and jax_ptr(j) == b.ptr, "jax.dlpack.from_dlpack of a batch")
            k = jax.dlpack.from_dlpack(b[1])
            check(same(k, want[1]), "jax.dlpack.from_dlpack of a sample")
        kept = jax.dlpack.from_dlpack(r.next_batch())
        want = np.array(kept)
        for _ in range(3):
            for b in r:
                torch.as_tensor(b, device="cuda").fill_(-1)
        torch.cuda.synchronize()
        check(np.array_equal(np.array(kept), want), "a jax array of a batch lost its memory")


def test_batches(tmp):
    """Stacked batches through torch, cupy and DLPack, byte for byte; samples
    as views; a ragged batch refused as one array."""
    root = os.path.join(tmp, "batches")
    os.mkdir(root)
    for i in range(10):
        a = data("f4", (16, 32), 200 + i)
        if i % 3 == 1:
            a = np.asfortranarray(a)
        if i % 4 == 2:
            a = a.astype(">f4")
        np.save(os.path.join(root, "s%02d.npy" % i), a)
    for size, pad in ((1, False), (4, True), (4, False), (16, True)):
        with ferry.Reader(file_root=root, batch_size=size, pad_last_batch=pad,
                          device="cuda") as r:
            for b in r:
                want = np.stack([np.load(p).astype("=f4") for p in b.paths])
                t = torch.as_tensor(b, device="cuda")
                check(t.data_ptr() == b.ptr and same(t, want) and tuple(t.shape) == b.shape,
                      "size %d: torch.as_tensor(batch)" % size)
                t = torch.from_dlpack(b)
                check(t.data_ptr() == b.ptr and same(t, want), "torch.from_dlpack(batch)")
                if cupy is not None:
                    c = cupy.asarray(b)
                    check(c.data.ptr == b.ptr and same(c, want), "cupy.asarray(batch)")
                    c = cupy.from_dlpack(b)
                    check(c.data.ptr == b.ptr and same(c, want), "cupy.from_dlpack(batch)")
                step = b.nbytes // len(b)
                for i, x in enumerate(b):
                    check(x.ptr == b.ptr + i * step and same(torch.as_tensor(x, device="cuda"),
                                                             want[i]), "sample %d view" % i)
                check(np.array_equal(b.numpy(), want), "Batch.numpy() of a GPU batch")
    mixed = os.path.join(tmp, "mixed")
    os.mkdir(mixed)
    for i in range(4):
        np.save(os.path.join(mixed, "m%d.npy" % i), np.full((3 + i, 5), i, dtype="<i4"))
    with ferry.Reader(file_root=mixed, batch_size=4, device="cuda") as r:
        b = r.next_batch()
        got = [(tuple(t.shape), int(t.min()), int(t.max()))
               for t in (torch.as_tensor(x, device="cuda") for x in b)]
        check(not b.stackable and got == [((3 + i, 5), i, i) for i in range(4)],
              "ragged samples: stackable %r, %r" % (b.stackable, got))
        try:
            torch.from_dlpack(b)
            check(False, "a ragged batch was stacked")
        except ferry.RaggedBatchError as e:
            check(e.errno == ferry.EMISMATCH, "ragged: %s" % e)
    with ferry.Reader(file_root=root, batch_size=4, device="cuda", prefetch_queue_depth=1) as r:
        b = r.next_batch()
        want = np.stack([np.load(p).astype("=f4") for p in b.paths])
        held = torch.as_tensor(b, device="cuda")
        del b
        for _ in range(3):
            for other in r:
                torch.as_tensor(other, device="cuda").fill_(-1)
        torch.cuda.synchronize()
        check(same(held, want), "a tensor of a batch lost its memory")


def test_parity(tmp):
    """load_into a torch or CuPy buffer; read_range and load_async on the GPU."""
    expected = data("i2", (7, 9, 11), 300)
    path = os.path.join(tmp, "into.npy")
    np.save(path, expected.astype(">i2"))
    t = torch.empty((7, 9, 11), dtype=torch.int16, device="cuda")
    check(ferry.load_into(path, t) is t and same(t, expected), "load_into a torch tensor")
    flat = torch.empty(7 * 9 * 11, dtype=torch.int16, device="cuda")
    ferry.load_into(path, flat)
    check(same(flat, expected.reshape(-1)), "load_into a flat torch tensor")
    for bad in (torch.empty((7, 9, 11), dtype=torch.int32, device="cuda"),
                torch.empty((7, 9, 12), dtype=torch.int16, device="cuda"),
                torch.empty((11, 9, 7), dtype=torch.int16, device="cuda").permute(2, 1, 0)):
        try:
            ferry.load_into(path, bad)
            check(False, "load_into a wrong buffer %r" % (bad.shape,))
        except ValueError:
            pass
    try:
        CTX.load_into(path, torch.empty((7, 9, 11), dtype=torch.int16))
        check(False, "load_into a CPU tensor with a CUDA context")
    except TypeError:
        pass
    if cupy is not None:
        c = cupy.zeros((7, 9, 11), dtype=cupy.int16)
        with cupy.cuda.Stream(non_blocking=True):
            c += 1  # work pending on a stream the buffer names
            check(ferry.load_into(path, c) is c and same(c, expected), "load_into a cupy array")
    blob = os.urandom(1 << 20)
    raw = os.path.join(tmp, "raw.bin")
    with open(raw, "wb") as f:
        f.write(blob)
    x = ferry.read_range(raw, 12345, 500000, device="cuda")
    check(isinstance(x, ferry.Array) and x.typestr == "|u1" and
          torch.as_tensor(x, device="cuda").cpu().numpy().tobytes() == blob[12345:512345],
          "read_range on the GPU")
    side = torch.cuda.Stream()
    p = ferry.load_async(path, device="cuda", stream=side)
    check(p.stream == side.cuda_stream, "load_async stream %r" % p.stream)
    with torch.cuda.stream(side):
        check(same(torch.as_tensor(p.array, device="cuda"), expected), "load_async on its stream")
    check(same(torch.as_tensor(ferry.load_async(path, device="cuda").wait(), device="cuda"),
               expected), "load_async().wait()")


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
            # complete at hand-out: ready on every stream, none named
            check(cai["stream"] is None, "reader CAI stream %r" % cai)
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
          "cupy", cupy.__version__ if cupy is not None else None,
          "jax", jax.__version__ if jax is not None else None)
    print(CTX.describe())
    return run_tests((test_interop, test_lifetime, test_streams, test_reader_lifetime,
                      test_batches, test_parity, test_jax), "ferry-py-gpu-")


if __name__ == "__main__":
    sys.exit(main())
