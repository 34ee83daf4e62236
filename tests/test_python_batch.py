"""A ferry.Batch is one tensor when its samples share a shape: np.asarray,
numpy() and np.from_dlpack give the whole [B, ...] batch without a copy, and
every byte of every stacked batch equals np.stack of np.load of its paths
(batch sizes 1 to more than the shard, padding, shards, ROI, files in C and
Fortran order and either byte order). Its samples are views into it, made
only when asked for, with no call into libferry per sample (counted by
wrapping every ctypes function). A ragged batch still works sample by sample
and raises ferry.RaggedBatchError naming two of its files when stacked. The
batch's memory lives as long as the Batch or anything made from it.

Run: /usr/bin/python3 tests/test_python_batch.py (FERRY_BUILD names the build
directory, default build). Exit 0 pass, 1 fail, 77 skip.
"""
import collections
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
from ferry import _lib  # noqa: E402

N = 13
SHAPE = (5, 7)


def content(i, shape=SHAPE, dtype="<i4"):
    """File i's array: wraps in small dtypes on any numpy (2.x refuses to
    add an out-of-range Python int to a uint16 array)."""
    values = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) + 1000 * i
    return values.astype(dtype)


def make_dataset(tmp):
    """same/: N samples of one shape, every third Fortran order, every fourth
    big-endian. mixed/: N samples whose shapes differ in pairs (samples 2k and
    2k+1 share one), so that batches of 2 stack and others are ragged. many/:
    96 small samples, for counting calls."""
    same = os.path.join(tmp, "same")
    os.makedirs(same)
    for i in range(N):
        a = content(i)
        if i % 4 == 1:
            a = a.astype(">i4")
        if i % 3 == 2:
            a = np.asfortranarray(a)
        np.save(os.path.join(same, "s%02d.npy" % i), a)
    mixed = os.path.join(tmp, "mixed")
    os.makedirs(mixed)
    for i in range(N):
        np.save(os.path.join(mixed, "m%02d.npy" % i), content(i, (4 + i // 2, 6), "<f8"))
    many = os.path.join(tmp, "many")
    os.makedirs(many)
    for i in range(96):
        np.save(os.path.join(many, "x%02d.npy" % i), content(i, (3, 4), "<u2"))
    return same, mixed, many


def native(a):
    return np.array(a, dtype=a.dtype.newbyteorder("="), order="C")


def expected(batch, cut=lambda a: a):
    return np.stack([native(cut(np.load(p))) for p in batch.paths])


def sample_data(batch):
    """Each sample's data address as libferry gives it (ferry_batch_sample)."""
    import ctypes
    lib = _lib.get()
    s = _lib.Sample()
    out = []
    for i in range(len(batch)):
        lib.ferry_batch_sample(batch._owner.ptr, i, ctypes.byref(s))
        out.append(s.data)
    return out


def check_stacked(batch, what, cut=lambda a: a):
    """Every byte of the stacked batch against np.load; no copy anywhere."""
    want = expected(batch, cut)
    got = np.asarray(batch)
    ok = (batch.stackable and got.shape == want.shape == batch.shape and got.dtype == want.dtype
          and got.tobytes() == want.tobytes())
    check(ok, "%s: stacked batch %d of epoch %d differs from np.stack(np.load(...)): %r %r"
          % (what, batch.index, batch.epoch, got.shape, want.shape))
    check(got.ctypes.data == batch.ptr and got.base is batch,
          "%s: np.asarray(batch) is not a view of the batch" % what)
    check(batch.numpy().ctypes.data == batch.ptr and np.array_equal(batch.numpy(), want),
          "%s: batch.numpy()" % what)
    d = np.from_dlpack(batch)
    check(d.ctypes.data == batch.ptr and d.tobytes() == want.tobytes(),
          "%s: np.from_dlpack(batch)" % what)
    step = batch.nbytes // len(batch)
    views = list(batch)
    check([v.ctypes.data for v in views] == [batch.ptr + i * step for i in range(len(batch))]
          == sample_data(batch), "%s: samples are not views at libferry's addresses" % what)
    check(all(np.array_equal(v, w) for v, w in zip(views, want)), "%s: sample views" % what)
    return got


def test_stacked(same, mixed, many, tmp):
    batches = 0
    for size in (1, 2, 4, 5, N, N + 7):
        for pad in (False, True):
            with ferry.Reader(file_root=same, batch_size=size, pad_last_batch=pad,
                              epochs=2) as r:
                for b in iter(r.next_batch, None):
                    check_stacked(b, "batch_size %d pad %s" % (size, pad))
                    batches += 1
                    if pad:
                        real = N - b.index * size
                        flags = [i >= real for i in range(size)]
                        check(b.is_padding == flags and len(b) == size,
                              "padding flags %r, expected %r" % (b.is_padding, flags))
                        for i in range(max(real, 1), size):
                            check(np.array_equal(b[i], b[real - 1]), "a padding row is not a "
                                  "copy of the last sample")
    with ferry.Reader(file_root=same, batch_size=3, num_shards=3, shard_id=2, pad_last_batch=True,
                      random_shuffle=True, seed=3, epochs=3) as r:
        for b in iter(r.next_batch, None):
            check_stacked(b, "shard 2 of 3, shuffled")
            batches += 1
    print("%d stacked batches checked byte for byte" % batches)


def test_roi(same, mixed, many, tmp):
    """A fixed ROI makes every sample of a mixed dataset one shape: stackable."""
    with ferry.Reader(file_root=mixed, batch_size=4, roi_start=[1, 2], roi_shape=[3, 3],
                      pad_last_batch=True) as r:
        for b in r:
            check_stacked(b, "ROI", lambda a: a[1:4, 2:5])
    with ferry.Reader(file_root=same, batch_size=5, roi_start=[-1, 5], roi_end=[3, 9],
                      out_of_bounds_policy="pad", fill_value=-3) as r:
        def cut(a):
            out = np.full((4, 4), -3, dtype=native(a).dtype)
            out[1:4, 0:2] = a[0:3, 5:7]
            return out
        for b in r:
            check_stacked(b, "ROI with padding", cut)


def test_ragged(same, mixed, many, tmp):
    stacked = ragged = 0
    for size in (2, 3, 5):
        with ferry.Reader(file_root=mixed, batch_size=size) as r:
            for b in r:
                shapes = {np.load(p).shape for p in b.paths}
                if len(shapes) == 1:
                    check_stacked(b, "mixed dataset, one shape in the batch")
                    stacked += 1
                    continue
                ragged += 1
                check(not b.stackable and len(b) == len(b.paths) and "ragged" in repr(b),
                      "a ragged batch: %r" % b)
                for x, p in zip(b, b.paths):
                    check(np.array_equal(x, np.load(p)), "ragged batch sample %s" % p)
                check(b[-1].shape == np.load(b.paths[-1]).shape, "b[-1] of a ragged batch")
                for use in (np.asarray, lambda b: b.numpy(), lambda b: b.shape,
                            lambda b: b.__dlpack__(), np.from_dlpack):
                    try:
                        use(b)
                        check(False, "a ragged batch was stacked")
                    except ferry.RaggedBatchError as e:
                        named = [p for p in b.paths if p in str(e)]
                        check(isinstance(e, ferry.FerryError) and isinstance(e, ValueError)
                              and e.errno == ferry.EMISMATCH and len(set(named)) >= 2,
                              "the ragged error does not name two of its files: %s" % e)
    check(stacked and ragged, "mixed dataset: %d stacked, %d ragged batches" % (stacked, ragged))


class Counted:
    """A ctypes function that counts its calls."""

    def __init__(self, func, counts, name):
        self.func, self.counts, self.name = func, counts, name

    def __call__(self, *args):
        self.counts[self.name] += 1
        return self.func(*args)


def count_calls(many, size, use):
    """For each batch of one epoch: the calls into libferry of next_batch(),
    those of use(batch), and how many of all were ferry_batch_sample."""
    lib = _lib.get()
    counts = collections.Counter()
    saved = {name: getattr(lib, name) for name in _lib._PROTOTYPES if hasattr(lib, name)}
    for name, func in saved.items():
        setattr(lib, name, Counted(func, counts, name))
    per_batch = []
    try:
        with ferry.Reader(file_root=many, batch_size=size, epochs=1,
                          prefetch_queue_depth=2) as r:
            while True:
                before = sum(counts.values()), counts["ferry_batch_sample"]
                b = r.next_batch()
                if b is None:
                    break
                middle = sum(counts.values())
                use(b)
                after = sum(counts.values()), counts["ferry_batch_sample"]
                per_batch.append((middle - before[0], after[0] - middle, after[1] - before[1]))
                del b
    finally:
        for name, func in saved.items():
            setattr(lib, name, func)
    return per_batch


def test_no_call_per_sample(same, mixed, many, tmp):
    """Taking the stacked batch, len(), indexing and iterating call libferry
    a fixed number of times a batch, whatever its size: none per sample."""
    def use(b):
        t = np.asarray(b)
        assert len(b) == t.shape[0]
        [x.sum() for x in b]
        b[0], b[-1], b[1:3]
        b.numpy()
        np.from_dlpack(b)
        b.epoch, b.index, b.shape, b.dtype, repr(b)
    reading = set()
    for size in (1, 8, 32, 96):
        per_batch = count_calls(many, size, use)
        check(len(per_batch) == 96 // size, "batch_size %d: %d batches" % (size, len(per_batch)))
        check(all(used == 0 and sampled == 0 for _, used, sampled in per_batch),
              "batch_size %d: using a batch called libferry: %r" % (size, per_batch))
        reading |= {n for n, _, _ in per_batch}
        check(per_batch[0][0] == 3 and all(n == 2 for n, _, _ in per_batch[1:]),
              "batch_size %d: calls of next_batch() %r" % (size, [n for n, _, _ in per_batch]))
        print("batch_size %d: next_batch() called libferry %r times a batch"
              % (size, sorted({n for n, _, _ in per_batch})))
    # The epoch's batch count is asked once an epoch: one more call at its first batch.
    check(reading == {2, 3}, "next_batch() calls libferry %r times a batch, want 3 at an "
          "epoch's first batch and 2 after (the next batch, its description), for every "
          "batch size" % sorted(reading))
    # paths and is_padding are read once, one call a sample, only when asked for.
    per_batch = count_calls(many, 32, lambda b: (b.paths, b.is_padding, b.paths, b[3]))
    check([k for _, _, k in per_batch] == [32, 32, 32], "paths: ferry_batch_sample calls %r"
          % per_batch)


def test_sequence(same, mixed, many, tmp):
    with ferry.Reader(file_root=same, batch_size=4) as r:
        b = r.next_batch()
        check(len(b) == 4 and b.epoch == 0 and b.index == 0, "len, epoch, index")
        check(np.array_equal(b[-1], b[3]) and np.array_equal(b[-4], b[0]), "negative indices")
        check([x.shape for x in b[1:3]] == [SHAPE, SHAPE] and b[5:] == [], "slices")
        for bad in (4, -5):
            try:
                b[bad]
                check(False, "batch[%d] of 4 samples" % bad)
            except IndexError:
                pass
        check(b[0] is b[0], "a sample is made once")
        b.note = "mine"  # a user's own attribute, as on any object
        check(b.note == "mine", "a Batch takes no attribute of the user's")
        check([os.path.basename(p) for p in b.paths] == ["s00.npy", "s01.npy", "s02.npy",
                                                         "s03.npy"], "paths %r" % b.paths)
        check(b.is_padding == [False] * 4, "is_padding")
        check(b.dtype == np.dtype("<i4") and b.typestr == "<i4" and b.ndim == 3, "dtype")
        check(b.__dlpack_device__() == (1, 0), "dlpack device on the host")
        for attr in ("__cuda_array_interface__",):
            check(not hasattr(b, attr), "a host batch has %s" % attr)
    with ferry.Reader(file_root=many, batch_size=96) as r:
        text = repr(r.next_batch())
        check(len(text) < 120 and "(96, 3, 4)" in text, "Batch repr %r" % text)
        check(len(repr(r)) < 200 and "batch_size=96" in repr(r), "Reader repr %r" % repr(r))


def owner_ref(b):
    return weakref.ref(b._owner)


class Capsule:
    """A DLPack capsule, unconsumed until the first np.asarray of this
    (np.from_dlpack of it, kept)."""

    def __init__(self, capsule):
        self.capsule, self.array = capsule, None

    def __dlpack__(self, stream=None):
        capsule, self.capsule = self.capsule, None
        return capsule

    def __dlpack_device__(self):
        return (1, 0)

    def __array__(self, dtype=None):
        if self.array is None:
            self.array = np.from_dlpack(self)
        return self.array


def test_lifetime(same, mixed, many, tmp):
    """The batch's memory stays while the Batch, np.asarray of it, a view of
    that, a sample view, a DLPack export (consumed or not, of the batch or
    of a sample) or numpy() lives, and goes back to the reader after:
    nothing else counts the batch's users than the references to it."""
    keepers = [("np.asarray", np.asarray), ("a view of np.asarray", lambda b: np.asarray(b)[1:3]),
               ("a sample", lambda b: b[2]), ("a view of a sample", lambda b: b[2][1:]),
               ("np.from_dlpack", np.from_dlpack), ("np.from_dlpack of a sample",
                                                    lambda b: np.from_dlpack(b[1])),
               ("an unconsumed capsule", lambda b: Capsule(b.__dlpack__())),
               ("numpy()", lambda b: b.numpy()), ("the Batch", lambda b: b)]
    for what, keep in keepers:
        r = ferry.Reader(file_root=same, batch_size=4, prefetch_queue_depth=1)
        b = r.next_batch()
        want = np.array(keep(b))
        kept = keep(b)
        owner = owner_ref(b)
        del b
        for _ in range(4):  # other batches pass through the reader's memory
            for other in r:
                np.asarray(other).sum()
        gc.collect()
        check(owner() is not None, "%s: the batch went back while it lived" % what)
        check(np.array_equal(np.asarray(kept), want), "%s: held data was overwritten" % what)
        r.close()
        gc.collect()
        check(np.array_equal(np.asarray(kept), want), "%s: close() freed a live batch" % what)
        del kept
        gc.collect()
        check(owner() is None, "%s: the batch outlived everything made from it" % what)


def main():
    print("libferry", ferry.library_version())
    return run_tests((test_stacked, test_roi, test_ragged, test_no_call_per_sample,
                      test_sequence, test_lifetime), "ferry-py-batch-", setup=make_dataset)


if __name__ == "__main__":
    sys.exit(main())
