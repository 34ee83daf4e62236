"""Arguments of ferry.Context, ferry.load, ferry.info and ferry.Reader are
checked in Python before libferry sees them: a wrong type is TypeError, a bad
value ValueError, each message naming the argument (and what it accepts),
never a value that ctypes truncates, wraps or converts on its way to C. A
path with a NUL byte is ValueError("embedded null byte"), as open() raises,
instead of C reading the path up to the NUL. Edge values that are valid are
accepted, numpy integers included.

Run: /usr/bin/python3 tests/test_python_args.py (FERRY_BUILD names the build
directory, default build). Exit 0 pass, 1 fail, 77 skip.
"""
import os
import sys

from pyharness import check, need_numpy, run_tests, to_numpy  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402

N = 5
T, V = TypeError, ValueError
NUL = "embedded null byte"


def content(i):
    return np.arange(24, dtype="<i4").reshape(4, 6) + 1000 * i


def make_dataset(tmp):
    root = os.path.join(tmp, "ds")
    os.mkdir(root)
    for i in range(N):
        np.save(os.path.join(root, "s%d.npy" % i), content(i))
    return root, os.path.join(root, "s1.npy")


def refused(exc, argname, call, *args, **kwargs):
    """call(*args, **kwargs) must raise exc (and not FerryError, which would
    mean libferry saw the value) whose message names `argname`."""
    what = "%s(%s)" % (getattr(call, "__qualname__", call), ", ".join(
        [repr(a) for a in args] + ["%s=%r" % kv for kv in kwargs.items()])[:200])
    try:
        result = call(*args, **kwargs)
    except ferry.FerryError as e:
        check(False, "%s: reached libferry: %s" % (what, e))
        return None
    except exc as e:
        check(argname in str(e), "%s: the message does not name %r: %s" % (what, argname, e))
        return e
    except Exception as e:
        check(False, "%s: %s, expected %s: %s" % (what, type(e).__name__, exc.__name__, e))
        return None
    check(False, "%s: accepted, expected %s" % (what, exc.__name__))
    close = getattr(result, "close", None)
    if close:
        close()
    return None


def reader(root, **kw):
    return ferry.Reader(file_root=root, **kw)


READER_REFUSED = [
    # batch_size: an int from 1 to FERRY_BATCH_MAX = 2**24
    (V, "batch_size", dict(batch_size=0)),
    (V, "batch_size", dict(batch_size=-1)),
    (T, "batch_size", dict(batch_size=2.7)),
    (T, "batch_size", dict(batch_size=3.0)),
    (T, "batch_size", dict(batch_size=True)),
    (T, "batch_size", dict(batch_size=np.bool_(True))),
    (V, "batch_size", dict(batch_size=2 ** 40)),
    (V, "batch_size", dict(batch_size=2 ** 24 + 1)),
    (V, "batch_size", dict(batch_size=2 ** 32 + 1)),  # would wrap to 1 in a C unsigned
    (T, "batch_size", dict(batch_size=None)),
    (T, "batch_size", dict(batch_size="4")),
    # epochs: None or an int >= 1
    (V, "epochs", dict(epochs=-1)),
    (V, "epochs", dict(epochs=0)),
    (T, "epochs", dict(epochs=2.5)),
    (T, "epochs", dict(epochs=True)),
    (V, "epochs", dict(epochs=2 ** 64)),
    # prefetch_queue_depth: 1 to FERRY_PREFETCH_MAX = 1024
    (V, "prefetch_queue_depth", dict(prefetch_queue_depth=-1)),
    (V, "prefetch_queue_depth", dict(prefetch_queue_depth=0)),
    (V, "prefetch_queue_depth", dict(prefetch_queue_depth=1025)),
    (V, "prefetch_queue_depth", dict(prefetch_queue_depth=2 ** 32 + 2)),
    (T, "prefetch_queue_depth", dict(prefetch_queue_depth=2.0)),
    (T, "prefetch_queue_depth", dict(prefetch_queue_depth=False)),
    # num_threads: None or 1 to FERRY_THREADS_MAX = 1024
    (V, "num_threads", dict(num_threads=0)),
    (V, "num_threads", dict(num_threads=-1)),
    (V, "num_threads", dict(num_threads=1025)),
    (T, "num_threads", dict(num_threads=1.5)),
    (T, "num_threads", dict(num_threads=True)),
    # roi_axes: distinct axes 0..31
    (V, "roi_axes", dict(roi_start=[1], roi_axes=[32])),
    (V, "roi_axes", dict(roi_start=[1], roi_axes=[-1])),
    (V, "roi_axes", dict(roi_start=[1], roi_axes=[2 ** 32])),  # would wrap to axis 0
    (V, "roi_axes", dict(roi_start=[1, 1], roi_axes=[0, 0])),
    (V, "roi_axes", dict(roi_start=[1, 1], roi_axes=[1, np.int64(1)])),
    (T, "roi_axes", dict(roi_start=[1], roi_axes=[0.5])),
    (T, "roi_axes", dict(roi_start=[1], roi_axes=[True])),
    (T, "roi_axes", dict(roi_start=[1], roi_axes=1)),
    # absolute ROI values: ints that fit int64
    (V, "roi_start", dict(roi_start=[2 ** 63])),
    (V, "roi_start", dict(roi_start=[-2 ** 63 - 1])),
    (V, "roi_end", dict(roi_end=[2 ** 64])),
    (V, "roi_shape", dict(roi_shape=[2 ** 64 + 3])),  # would wrap to 3
    (T, "roi_start", dict(roi_start=[1.5])),
    (T, "roi_start", dict(roi_start=[True])),
    (T, "roi_start", dict(roi_start="12")),
    (T, "roi_start", dict(roi_start=3)),
    (T, "roi_shape", dict(roi_shape=[np.float64(2)])),
    (V, "roi_start", dict(roi_start=[0] * 33)),
    # relative ROI values: finite real numbers
    (V, "rel_roi_start", dict(rel_roi_start=[float("nan")])),
    (V, "rel_roi_end", dict(rel_roi_end=[float("inf")])),
    (V, "rel_roi_shape", dict(rel_roi_shape=[0.5, -float("inf")])),
    (V, "rel_roi_start", dict(rel_roi_start=[np.float32("nan")])),
    (V, "rel_roi_start", dict(rel_roi_start=[10 ** 400])),
    (T, "rel_roi_start", dict(rel_roi_start=["0.5"])),
    (T, "rel_roi_start", dict(rel_roi_start=[None])),
    (T, "rel_roi_end", dict(rel_roi_end=[1j])),
    # ROI arguments of different lengths
    (V, "roi_end", dict(roi_start=[0, 0], roi_end=[3])),
    # fill_value: a real number
    (T, "fill_value", dict(fill_value="0")),
    (T, "fill_value", dict(fill_value=None)),
    (T, "fill_value", dict(fill_value=[1])),
    (T, "fill_value", dict(fill_value=1j)),
    (T, "fill_value", dict(fill_value=True)),
    (V, "fill_value", dict(fill_value=10 ** 400)),
    # seed: None or -1 (random), or an int in [0, 2**64)
    (V, "seed", dict(seed=-2)),
    (V, "seed", dict(seed=2 ** 64)),
    (T, "seed", dict(seed=1.5)),
    (T, "seed", dict(seed="1")),
    # shards, DALI's rules: shard_id needs num_shards, 0 <= shard_id < num_shards
    (V, "shard_id", dict(shard_id=0)),
    (V, "shard_id", dict(shard_id=1)),
    (V, "shard_id", dict(shard_id=-1, num_shards=2)),
    (V, "shard_id", dict(shard_id=2, num_shards=2)),
    (T, "shard_id", dict(shard_id=1.0, num_shards=2)),
    (T, "shard_id", dict(shard_id=True, num_shards=2)),
    (V, "num_shards", dict(num_shards=0)),
    (V, "num_shards", dict(num_shards=-1)),
    (V, "num_shards", dict(shard_id=0, num_shards=0)),
    (V, "num_shards", dict(num_shards=2 ** 31)),
    (T, "num_shards", dict(num_shards=2.0)),
    # strings from a set
    (V, "out_of_bounds_policy", dict(out_of_bounds_policy="wrap")),
    (T, "out_of_bounds_policy", dict(out_of_bounds_policy=None)),
    (T, "out_of_bounds_policy", dict(out_of_bounds_policy=0)),
    (V, "on_error", dict(on_error="ignore")),
    (T, "on_error", dict(on_error=None)),
    (T, "on_error", dict(on_error=1)),
    (V, "device", dict(device="tpu")),
    (V, "device", dict(device="")),
    (V, "device", dict(device="GPU")),
    (T, "device", dict(device=0)),
    # prefetch_queue_depth None is libferry's automatic window; 0 is not
    (V, "prefetch_queue_depth", dict(prefetch_queue_depth=0)),
    # DALI's remaining arguments, each checked though it changes nothing
    (T, "name", dict(name=5)),
    (V, "lazy_init", dict(lazy_init=2)),
    (T, "use_o_direct", dict(use_o_direct="yes")),
    (T, "dont_use_mmap", dict(dont_use_mmap=None)),
    (V, "read_ahead", dict(read_ahead=-1)),
    (T, "skip_cached_images", dict(skip_cached_images=0.0)),
    (T, "register_buffers", dict(register_buffers="1")),
    (T, "preserve", dict(preserve=[])),
    (V, "initial_fill", dict(initial_fill=0)),
    (T, "initial_fill", dict(initial_fill=1.5)),
    (V, "tensor_init_bytes", dict(tensor_init_bytes=-1)),
    (T, "tensor_init_bytes", dict(tensor_init_bytes="1M")),
    (V, "bytes_per_sample_hint", dict(bytes_per_sample_hint=-1)),
    (V, "bytes_per_sample_hint[1]", dict(bytes_per_sample_hint=[0, -5])),
    (T, "bytes_per_sample_hint", dict(bytes_per_sample_hint=0.5)),
    (V, "shuffle_after_epoch", dict(shuffle_after_epoch=3)),
    (V, "shuffle_after_epoch", dict(shuffle_after_epoch=True, random_shuffle=True)),
    (V, "shuffle_after_epoch", dict(shuffle_after_epoch=True, stick_to_shard=True)),
    (T, "shuffle_after_epoch_seed", dict(shuffle_after_epoch=True, shuffle_after_epoch_seed=1.5)),
    (V, "shuffle_after_epoch_seed", dict(shuffle_after_epoch_seed=2 ** 64)),
    # a state, from Reader.state_dict()
    (T, "state", dict(state=[1, 2])),
    (V, "state", dict(state={"epoch": 0})),
    (V, "state", dict(state={"format": "ferry.Reader/1", "epoch": 0, "index": 0})),
    (V, "state['epoch']", dict(state={"format": "ferry.Reader/1", "epoch": -1, "index": 0,
                                      "fingerprint": 0, "seed": 0})),
    (T, "state['index']", dict(state={"format": "ferry.Reader/1", "epoch": 0, "index": "0",
                                      "fingerprint": 0, "seed": 0})),
    # flags: a bool, or 0 or 1
    (V, "random_shuffle", dict(random_shuffle=2)),
    (T, "random_shuffle", dict(random_shuffle="yes")),
    (T, "random_shuffle", dict(random_shuffle=None)),
    (V, "stick_to_shard", dict(stick_to_shard=-1)),
    (T, "pad_last_batch", dict(pad_last_batch=0.5)),
    (T, "cache_header_information", dict(cache_header_information="no")),
    # where batches go
    (T, "ctx", dict(ctx="host")),
    (T, "stream", dict(stream="s")),
    (T, "stream", dict(stream=1.5)),
    (T, "stream", dict(stream=True)),
    (V, "stream", dict(stream=-2)),
    (V, "stream", dict(stream=2 ** 64)),
    # sources
    (T, "file_filter", dict(file_filter=5)),
    (T, "files", dict(files="s1.npy")),
    (T, "files", dict(files=5)),
    (T, "files[1]", dict(files=["s0.npy", 5])),
]

CONTEXT_REFUSED = [
    (V, "threads", dict(threads=0)),
    (V, "threads", dict(threads=-1)),
    (V, "threads", dict(threads=1025)),
    (V, "threads", dict(threads=2 ** 32 + 1)),  # would wrap to 1 in a C unsigned
    (T, "threads", dict(threads=2.0)),
    (T, "threads", dict(threads=True)),
    (V, "max_buffers", dict(max_buffers=0)),
    (V, "max_buffers", dict(max_buffers=-1)),
    (V, "max_buffers", dict(max_buffers=4097)),
    (T, "max_buffers", dict(max_buffers=True)),
    (V, "chunk_size", dict(chunk_size=0)),
    (V, "chunk_size", dict(chunk_size=4095)),
    (V, "chunk_size", dict(chunk_size=3 * 4096)),
    (V, "chunk_size", dict(chunk_size=2048)),
    (V, "chunk_size", dict(chunk_size=32 << 20)),
    (V, "chunk_size", dict(chunk_size=-4096)),
    (V, "chunk_size", dict(chunk_size=2 ** 64 + 4096)),  # would wrap to 4096
    (T, "chunk_size", dict(chunk_size=4096.0)),
    (T, "chunk_size", dict(chunk_size="4M")),
    (V, "gpu", dict(gpu=-2)),
    (V, "gpu", dict(gpu=2 ** 31)),
    (V, "gpu", dict(gpu=2 ** 32)),  # would wrap to GPU 0
    (T, "gpu", dict(gpu=0.5)),
    (T, "gpu", dict(gpu=True)),
    (V, "device", dict(device="tpu")),
    (V, "device", dict(device="CUDA")),
    (T, "device", dict(device=1)),
    (V, "io", dict(io="aio")),
    (T, "io", dict(io=b"posix")),
    (V, "direct", dict(direct=2)),
    (T, "direct", dict(direct="yes")),
]


def test_reader_refused(root, path, tmp):
    for exc, name, kw in READER_REFUSED:
        refused(exc, name, reader, root, **kw)
    e = refused(V, "batch_size", reader, root, batch_size=0)
    check(e is not None and "16777216" in str(e), "batch_size: the limit is not named: %s" % e)
    e = refused(V, "roi_axes", reader, root, roi_start=[1], roi_axes=[2 ** 32])
    check(e is not None and "31" in str(e), "roi_axes: the range is not named: %s" % e)


def test_context_refused(root, path, tmp):
    for exc, name, kw in CONTEXT_REFUSED:
        refused(exc, name, ferry.Context, **kw)
    e = refused(V, "chunk_size", ferry.Context, chunk_size=4095)
    check(e is not None and "power of two" in str(e), "chunk_size: what it accepts: %s" % e)


def test_load_info_refused(root, path, tmp):
    refused(T, "path", ferry.load, 5)
    refused(T, "path", ferry.load, None)
    refused(T, "path", ferry.info, 5)
    refused(V, "device", ferry.load, path, device="tpu")
    refused(T, "device", ferry.load, path, device=1)
    refused(T, "ctx", ferry.load, path, ctx="host")
    refused(T, "stream", ferry.load, path, stream="s")
    refused(T, "stream", ferry.load, path, stream=False)
    refused(V, "stream", ferry.load, path, stream=-5)
    with ferry.Context(device="host") as ctx:
        refused(T, "stream", ctx.load, path, stream=2.5)
        refused(T, "path", ctx.load, 1.5)


def test_embedded_nul(root, path, tmp):
    """Each of these names a good file up to the NUL; C would read that one."""
    with ferry.Context(device="host") as ctx:
        cases = [(ferry.load, (path + "\0junk",), {}),
                 (ferry.load, (os.fsencode(path) + b"\0junk",), {}),
                 (ctx.load, (path + "\0",), {}),
                 (ferry.info, (path + "\0junk",), {}),
                 (ferry.info, (os.fsencode(path) + b"\0",), {}),
                 (ferry.Reader, (), dict(file_root=root + "\0junk")),
                 (ferry.Reader, (), dict(file_root=os.fsencode(root) + b"\0junk")),
                 (ferry.Reader, (), dict(files=[path, path + "\0junk"])),
                 (ferry.Reader, (), dict(file_root=root, files=["s1.npy\0junk"])),
                 (ferry.Reader, (), dict(file_root=root, file_filter="*.npy\0junk"))]
        lst = os.path.join(tmp, "list.txt")
        with open(lst, "w") as f:
            f.write(path + "\n")
        cases.append((ferry.Reader, (), dict(file_list=lst + "\0junk")))
        for call, args, kw in cases:
            e = refused(V, NUL, call, *args, **kw)
            check(e is None or str(e) == NUL, "%r: message %r" % (args or kw, str(e)))
    check(np.array_equal(to_numpy(ferry.load(path)), content(1)), "the good path loads")


def epoch(r):
    return [[int(to_numpy(x).flat[0]) // 1000 for x in b] for b in r]


def test_accepted(root, path, tmp):
    with ferry.Reader(file_root=root, batch_size=1) as r:
        check(epoch(r) == [[i] for i in range(N)], "batch_size=1")
    # The largest batch: opening checks it. (Not read here: libferry sizes
    # every batch for batch_size samples, which takes gigabytes at 2**24.)
    with ferry.Reader(file_root=root, batch_size=2 ** 24) as r:
        check(len(r) == 1, "batch_size=2**24: %d batches" % len(r))
    for n in (np.int64(2), np.uint8(2), np.int32(2)):
        with ferry.Reader(file_root=root, batch_size=n, epochs=np.uint64(1),
                          prefetch_queue_depth=np.int16(1)) as r:
            check(epoch(r) == [[0, 1], [2, 3], [4]], "batch_size=%r (numpy)" % (n,))
    with ferry.Reader(file_root=root, batch_size=N, num_threads=1024,
                      prefetch_queue_depth=1024, epochs=2) as r:
        check(epoch(r) == [list(range(N))] and epoch(r) == [list(range(N))],
              "num_threads=1024, prefetch_queue_depth=1024")
    orders, seeds = [], []
    for seed in (0, 2 ** 64 - 1, np.uint64(2 ** 64 - 1), None, -1, np.int8(-1)):
        with ferry.Reader(file_root=root, batch_size=N, random_shuffle=1, seed=seed) as r:
            orders.append(sum(epoch(r), []))
            seeds.append(r.seed)
    check(all(sorted(o) == list(range(N)) for o in orders), "seeds: %r" % orders)
    check(orders[1] == orders[2], "seed 2**64-1 as int and numpy: %r" % orders)
    check(seeds[:3] == [0, 2 ** 64 - 1, 2 ** 64 - 1], "reader.seed of a given seed: %r" % seeds)
    check(all(isinstance(s, int) and 0 <= s < 2 ** 64 for s in seeds[3:])
          and len(set(seeds[3:])) == 3, "None and -1: random seeds drawn per reader %r" % seeds)
    for seed, order in zip(seeds[3:], orders[3:]):
        with ferry.Reader(file_root=root, batch_size=N, random_shuffle=True, seed=seed) as r:
            check(sum(epoch(r), []) == order, "reader.seed %d does not repeat its order" % seed)
    with ferry.Reader(file_root=root, batch_size=2, prefetch_queue_depth=None) as r:
        check(epoch(r) == [[0, 1], [2, 3], [4]], "prefetch_queue_depth=None")
    # DALI's arguments at DALI's defaults, and others valid values, all accepted.
    dali = dict(name="train", lazy_init=False, use_o_direct=False, dont_use_mmap=False,
                read_ahead=False, shuffle_after_epoch=False, initial_fill=1024,
                tensor_init_bytes=1048576, skip_cached_images=False, register_buffers=True,
                bytes_per_sample_hint=[0], preserve=False, device="cpu", seed=-1)
    with ferry.Reader(file_root=root, batch_size=N, **dali) as r:
        check(epoch(r) == [list(range(N))], "DALI's defaults")
        check(r.name == "train" and "train" in repr(r), "name: %r" % r)
    other = dict(dont_use_mmap=True, read_ahead=1, initial_fill=np.int32(1),
                 tensor_init_bytes=0, skip_cached_images=True, register_buffers=False,
                 bytes_per_sample_hint=np.int64(4096), preserve=True, shuffle_after_epoch_seed=5)
    with ferry.Reader(file_root=root, batch_size=N, **other) as r:
        check(epoch(r) == [list(range(N))], "DALI's arguments that change nothing changed "
              "something")
    for shard, shards in ((1, 2), (np.int32(0), np.int64(2))):
        with ferry.Reader(file_root=root, batch_size=N, shard_id=shard, num_shards=shards,
                          stick_to_shard=np.bool_(True), pad_last_batch=0) as r:
            want = list(range(N * int(shard) // 2, N * (int(shard) + 1) // 2))
            check(sum(epoch(r), []) == want, "shard %r of %r" % (shard, shards))
    with ferry.Reader(file_root=root, batch_size=N, roi_start=np.array([1, 2]),
                      roi_shape=[np.int8(2), 3], roi_axes=(np.uint8(0), 1)) as r:
        got = [to_numpy(x) for x in r.next_batch()]
        check(all(np.array_equal(g, content(i)[1:3, 2:5]) for i, g in enumerate(got)),
              "ROI from numpy integers")
    with ferry.Reader(file_root=root, batch_size=N, rel_roi_start=np.array([0.5]),
                      rel_roi_end=[np.float32(1)], roi_axes=[1]) as r:
        got = [to_numpy(x) for x in r.next_batch()]
        check(all(np.array_equal(g, content(i)[:, 3:6]) for i, g in enumerate(got)),
              "relative ROI from numpy floats")
    for fill in (np.float32(-7.5), -7, float("nan")):
        with ferry.Reader(file_root=root, batch_size=1, roi_start=[3], roi_end=[5],
                          out_of_bounds_policy="pad", fill_value=fill) as r:
            a = to_numpy(r.next_batch()[0])
            check(a.shape == (2, 6) and np.array_equal(a[0], content(0)[3]),
                  "fill_value=%r" % fill)
    with ferry.Context(device="host", threads=1024, gpu=-1, io="posix", direct=False) as ctx:
        check(np.array_equal(to_numpy(ctx.load(path)), content(1)), "threads=1024")
    with ferry.Context(device="host", threads=1, chunk_size=16 << 20, max_buffers=1,
                       gpu=np.int64(0), direct=0) as ctx:
        check(np.array_equal(to_numpy(ctx.load(path, stream=-1)), content(1)),
              "threads=1, chunk_size=16 MiB, max_buffers=1")
    with ferry.Context(device="host", direct="auto") as ctx:
        check(ctx.direct == "auto" and "O_DIRECT auto" in ctx.describe(), "direct='auto'")
        check(np.array_equal(to_numpy(ctx.load(path)), content(1)), "direct='auto'")
    with ferry.Context(device="host", chunk_size=np.int64(4096), max_buffers=4096) as ctx:
        check(np.array_equal(to_numpy(ferry.load(path, ctx=ctx, stream=0)), content(1)),
              "chunk_size=4096, max_buffers=4096")
    check(ferry.info(path).shape == (4, 6), "info")


def main():
    print("libferry", ferry.library_version())
    return run_tests((test_reader_refused, test_context_refused, test_load_info_refused,
                      test_embedded_nul, test_accepted), "ferry-py-args-", setup=make_dataset)


if __name__ == "__main__":
    sys.exit(main())
