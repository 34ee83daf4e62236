"""ferry.Reader: sources, epochs, shards (RANK / WORLD_SIZE too), shuffle,
padding, regions of interest, errors, and batch memory lifetime.

Run: /usr/bin/python3 tests/test_python_reader.py (FERRY_BUILD names the build
directory, default build). Exit 0 pass, 1 fail, 77 skip (no numpy, or a
libferry without the reader).
"""
import gc
import os
import sys
import weakref

from pyharness import check, need_numpy, run_tests, to_numpy  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402
from ferry import _lib  # noqa: E402

if _lib.missing_reader_functions():
    print("skip: libferry lacks the reader API: " + ", ".join(_lib.missing_reader_functions()))
    sys.exit(77)

N = 11
SHAPE = (6, 8)



def content(i):
    return (np.arange(np.prod(SHAPE), dtype="<i4").reshape(SHAPE) + 1000 * i)


def make_dataset(tmp):
    """N files s00..s10 (some in a subdirectory), sample i holding content(i);
    every third one Fortran order, every fourth big-endian."""
    root = os.path.join(tmp, "ds")
    os.makedirs(os.path.join(root, "sub"))
    paths = []
    for i in range(N):
        a = content(i)
        if i % 4 == 1:
            a = a.astype(">i4")
        if i % 3 == 2:
            a = np.asfortranarray(a)
        # keys sort as s00, s01, ..., with the subdirectory's in the same order
        p = os.path.join(root, ("sub/s%02d.npy" if i >= 8 else "s%02d.npy") % i)
        np.save(p, a)
        paths.append(p)
    with open(os.path.join(root, "notes.txt"), "w") as f:
        f.write("not a sample\n")
    return root, paths


def ids(batch):
    """The sample ids of a batch, checking every sample's bytes on the way."""
    out = []
    for x, path in zip(batch, batch.paths):
        a = to_numpy(x)
        i = int(a.flat[0]) // 1000
        check(a.shape == SHAPE and a.dtype == np.dtype("=i4") and np.array_equal(a, content(i)),
              "sample from %s holds wrong data" % path)
        out.append(i)
    return out


def epoch_ids(reader):
    return [ids(b) for b in reader]


def test_basic(root, paths, tmp):
    with ferry.Reader(file_root=root, batch_size=3) as r:
        check(len(r) == 4, "len %d, expected 4" % len(r))
        e0 = epoch_ids(r)
        check(e0 == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10]], "epoch 0 order %r" % e0)
        e1 = epoch_ids(r)
        check(e1 == e0, "epoch 1 %r differs from epoch 0" % e1)
        st = r.stats()
        check(st["samples"] == 2 * N and st["batches"] == 8, "stats %r" % st)
        # small files: buffered under any mode but FERRY_ODIRECT=1, once per epoch
        check(st["files_buffered"] + st["files_direct"] == 2 * N, "files read %r" % st)
    with ferry.Reader(files=[os.path.relpath(p, root) for p in reversed(paths)], file_root=root,
                      batch_size=4, epochs=2) as r:
        got = [ids(b) for b in iter(r.next_batch, None)]
        check(got == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]] * 2, "files= epochs=2: %r" % got)
        check(list(r) == [], "iteration after the last epoch yields batches")
    lst = os.path.join(tmp, "list.txt")
    with open(lst, "w") as f:
        f.write("# a comment\n\nsub/s09.npy\ns07.npy\ns03.npy\n")
    with ferry.Reader(file_list=lst, file_root=root, batch_size=8) as r:
        check(epoch_ids(r) == [[3, 7, 9]], "file_list")
    with ferry.Reader(file_root=root, file_filter="s0[2-4].npy", batch_size=8) as r:
        check(epoch_ids(r) == [[2, 3, 4]], "file_filter")


def test_shards(root, paths, tmp):
    seen = []
    for s in range(3):
        with ferry.Reader(file_root=root, batch_size=2, num_shards=3, shard_id=s) as r:
            got = sum(epoch_ids(r), [])
            want = list(range(N * s // 3, N * (s + 1) // 3))
            check(got == want, "shard %d of 3: %r, expected %r" % (s, got, want))
            check(r.epoch_info()["shard_id"] == s, "shard %d: epoch_info" % s)
            nxt = sum(epoch_ids(r), [])
            want = list(range(N * ((s + 1) % 3) // 3, N * ((s + 1) % 3 + 1) // 3))
            check(nxt == want, "shard %d epoch 1 (not sticky): %r, expected %r" % (s, nxt, want))
            seen += got
        with ferry.Reader(file_root=root, batch_size=2, num_shards=3, shard_id=s,
                          stick_to_shard=True) as r:
            check(epoch_ids(r) == epoch_ids(r), "stick_to_shard: epochs differ")
    check(sorted(seen) == list(range(N)), "shards do not partition the dataset: %r" % seen)
    saved = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE")}
    os.environ.update(RANK="1", WORLD_SIZE="2")
    try:
        with ferry.Reader(file_root=root, batch_size=16) as r:
            check(sum(epoch_ids(r), []) == list(range(N // 2, N)), "RANK=1 WORLD_SIZE=2 shard")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_shuffle(root, paths, tmp):
    def orders(seed, epochs=3, **kw):
        with ferry.Reader(file_root=root, batch_size=4, random_shuffle=True, seed=seed,
                          **kw) as r:
            return [sum(epoch_ids(r), []) for _ in range(epochs)]
    a, b, c = orders(7), orders(7), orders(8)
    check(a == b, "the same seed gave different orders")
    check(all(sorted(e) == list(range(N)) for e in a), "a shuffled epoch is not a permutation")
    check(a[0] != a[1] or a[1] != a[2], "every epoch has the same order")
    check(a != c, "different seeds gave the same orders")
    check(a[0] != list(range(N)), "the shuffle left the order alone")
    sh = orders(7, epochs=1, num_shards=2, shard_id=1, stick_to_shard=True)[0]
    check(sorted(sh) == list(range(N // 2, N)), "shuffle left its shard: %r" % sh)


def test_padding(root, paths, tmp):
    with ferry.Reader(file_root=root, batch_size=4, pad_last_batch=True) as r:
        batches = list(r)
        last = batches[-1]
        check(len(last) == 4 and last.is_padding == [False, False, False, True],
              "padding flags %r" % last.is_padding)
        check(ids(last) == [8, 9, 10, 10], "padded batch %r" % ids(last))
        check(r.epoch_info()["samples"] == 12 and r.epoch_info()["real_samples"] == N,
              "epoch_info %r" % r.epoch_info())


def roi_batch(root, **kw):
    with ferry.Reader(file_root=root, batch_size=N, **kw) as r:
        b = next(iter(r))
        return [to_numpy(x) for x in b]


def test_roi(root, paths, tmp):
    full = [content(i) for i in range(N)]
    cases = [
        (dict(roi_start=[1, 2], roi_end=[4, 7]), lambda a: a[1:4, 2:7]),
        (dict(roi_start=[2], roi_shape=[3]), lambda a: a[2:5]),
        (dict(roi_start=[3], roi_axes=[1]), lambda a: a[:, 3:]),
        (dict(rel_roi_start=[0.5, 0.25], rel_roi_end=[1.0, 0.75]), lambda a: a[3:6, 2:6]),
        (dict(rel_roi_shape=[0.5], roi_axes=[1]), lambda a: a[:, 0:4]),
        (dict(roi_start=[4, 6], roi_end=[9, 8], out_of_bounds_policy="trim_to_shape"),
         lambda a: a[4:6, 6:8]),
    ]
    for kw, cut in cases:
        got = roi_batch(root, **kw)
        ok = all(np.array_equal(g, cut(f)) for g, f in zip(got, full))
        check(ok, "ROI %r: got shape %s, expected %s" % (kw, got[0].shape, cut(full[0]).shape))
    got = roi_batch(root, roi_start=[-1, 6], roi_end=[2, 10], out_of_bounds_policy="pad",
                    fill_value=-7)
    for g, f in zip(got, full):
        want = np.full((3, 4), -7, dtype="<i4")
        want[1:3, 0:2] = f[0:2, 6:8]
        if not np.array_equal(g, want):
            check(False, "ROI padding: %r" % g)
            break
    try:
        roi_batch(root, roi_start=[0, 0], roi_end=[7, 8])
        check(False, "ROI out of bounds: no error")
    except ferry.FerryError as e:
        check(e.errno == ferry.EBOUNDS, "ROI out of bounds: errno %r" % e.errno)
        check(e.filename in paths, "ROI out of bounds: filename %r" % e.filename)
    try:
        ferry.Reader(file_root=root, roi_start=[0, 0], roi_end=[3])
        check(False, "ROI arrays of different lengths: no error")
    except ValueError:
        pass
    for bad in (dict(roi_end=[2], roi_shape=[2]), dict(roi_start=[1], rel_roi_start=[0.1])):
        try:
            ferry.Reader(file_root=root, **bad)
            check(False, "ROI %r: no error" % bad)
        except ferry.FerryError as e:
            check(e.errno == ferry.ECONFIG, "ROI %r: errno %r" % (bad, e.errno))


def test_errors(root, paths, tmp):
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    for kw, code in ((dict(file_root=empty), ferry.ECONFIG),
                     (dict(file_root=root, num_shards=N + 1, shard_id=0), ferry.ECONFIG),
                     (dict(file_root=os.path.join(tmp, "nope")), 2)):
        try:
            ferry.Reader(**kw)
            check(False, "Reader(%r): no error" % kw)
        except ferry.FerryError as e:
            check(e.errno == code, "Reader(%r): errno %r, expected %d" % (kw, e.errno, code))
    for kw in (dict(out_of_bounds_policy="wrap"), dict(on_error="ignore")):
        try:
            ferry.Reader(file_root=root, **kw)
            check(False, "Reader(%r): no error" % kw)
        except ValueError:
            pass
    bad_root = os.path.join(tmp, "bad")
    os.mkdir(bad_root)
    for i in range(6):
        np.save(os.path.join(bad_root, "s%02d.npy" % i), content(i))
    bad = os.path.join(bad_root, "s02.npy")
    with open(bad, "wb") as f:
        f.write(b"not an npy file at all" * 4)
    with ferry.Reader(file_root=bad_root, batch_size=2) as r:
        it = iter(r)
        check(ids(next(it)) == [0, 1], "first batch before the bad file")
        try:
            next(it)
            check(False, "a bad file: no error")
        except ferry.FerryError as e:
            check(e.errno == ferry.EFORMAT and e.filename == bad,
                  "bad file: errno %r filename %r" % (e.errno, e.filename))
        check(epoch_ids(r) == [[4, 5]], "after a bad batch the next iteration does not finish the epoch")
    with ferry.Reader(file_root=bad_root, batch_size=2, on_error="skip") as r:
        check(epoch_ids(r) == [[0, 1], [3], [4, 5]], "on_error='skip'")
        check(r.stats()["files_skipped"] == 1, "files_skipped %r" % r.stats())
    np.save(os.path.join(bad_root, "s02.npy"), content(2).astype("<f4"))
    with ferry.Reader(file_root=bad_root, batch_size=2) as r:
        try:
            epoch_ids(r)
            check(False, "mixed dtypes in a batch: no error")
        except ferry.FerryError as e:
            check(e.errno == ferry.EMISMATCH, "mixed dtypes: errno %r" % e.errno)
    r = ferry.Reader(file_root=root)
    r.close()
    r.close()
    try:
        r.next_batch()
        check(False, "a closed reader reads")
    except ValueError:
        pass


def test_lifetime(root, paths, tmp):
    r = ferry.Reader(file_root=root, batch_size=2, prefetch_queue_depth=1)
    kept = next(iter(r))[1]  # sample 1; the rest of its batch is gone
    kept_copy = np.array(to_numpy(kept))
    owner = weakref.ref(ferry_owner(kept))
    for _ in range(4):  # many batches pass through the reader's memory meanwhile
        epoch_ids(r)
    gc.collect()
    check(owner() is not None, "the batch was released while one of its arrays lives")
    check(np.array_equal(to_numpy(kept), kept_copy) and np.array_equal(kept_copy, content(1)),
          "a held sample was overwritten")
    r.close()  # closing while a sample lives: the C reader waits for it
    gc.collect()
    check(np.array_equal(to_numpy(kept), content(1)), "close() freed a live batch")
    handle = weakref.ref(ferry_owner(kept).parent)
    del kept
    gc.collect()
    check(owner() is None and handle() is None, "the batch or reader outlived its arrays")


def test_finalizer_order(root, paths, tmp):
    """The garbage collector finalizes a cycle in no set order: a reader
    finalized before its batches must stay open until the last is gone."""
    r = ferry.Reader(file_root=root, batch_size=2)
    batch = r.next_batch()
    handle = r._handle
    r.close()
    handle.__del__()  # as the collector may, before the batch's finalizer
    check(handle.ptr is not None, "the reader was closed under a live batch")
    check(ids(batch) == [0, 1], "a batch lost its data to its reader's finalizer")
    del batch
    gc.collect()
    check(handle.ptr is None, "the reader outlived its last batch")
    check(handle.ctx.ptr is not None, "closing a reader destroyed the shared context")


def test_error_cycle(root, paths, tmp):
    """What aborted the CUDA runs of this file (futex errors, hangs): an error
    raised while iterating leaves a reference cycle (exception, traceback,
    frames) that holds the reader and a batch, and the collector finalizes it
    in no set order. On CUDA a batch holds ferry.Array objects, which the
    collector tracks (numpy views it does not), so arrays are made the CUDA
    way here, on every device."""
    from ferry import _batch
    bad_root = os.path.join(tmp, "cycle")
    os.mkdir(bad_root)
    for i in range(4):
        np.save(os.path.join(bad_root, "s%02d.npy" % i), content(i))
    with open(os.path.join(bad_root, "s02.npy"), "wb") as f:
        f.write(b"not an npy file" * 8)
    saved, _batch._as_result = _batch._as_result, lambda array: array
    handles = []
    try:
        for _ in range(20):
            r = ferry.Reader(file_root=bad_root, batch_size=2)
            handles.append(weakref.ref(r._handle))
            it = iter(r)
            first = next(it)
            try:
                next(it)
            except ferry.FerryError as e:
                kept = e  # noqa: F841 -- the cycle: e -> traceback -> this frame -> e
            check(ids(first) == [0, 1], "a batch in an error cycle holds wrong data")
            r.close()
            del r, it, first
        del kept
        gc.collect()
    finally:
        _batch._as_result = saved
    check(all(h() is None or h().ptr is None for h in handles),
          "a reader outlived its batches after the collector ran")


def ferry_owner(x):
    if isinstance(x, np.ndarray):
        while isinstance(x, np.ndarray):
            x = x.base
        x = x._ferry_array
    return x._owner


def main():
    print("libferry", ferry.library_version())
    return run_tests((test_basic, test_shards, test_shuffle, test_padding, test_roi,
                     test_errors, test_lifetime, test_finalizer_order, test_error_cycle), "ferry-py-reader-",
                     setup=make_dataset)


if __name__ == "__main__":
    sys.exit(main())
