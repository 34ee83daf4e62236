"""DALI's fn.readers.numpy arguments on ferry.Reader, with DALI's meaning
where ferry can honour it: seed None or -1 is a random seed drawn once per
reader (reader.seed); shuffle_after_epoch reshuffles the whole dataset every
epoch, the same orders in every run unless shuffle_after_epoch_seed is given,
refused with random_shuffle or stick_to_shard as DALI does, and with
several shards (from num_shards or $WORLD_SIZE) each reads its slice of
that permutation: together the whole dataset every epoch, apart a shard's
samples changing from epoch to epoch;
use_o_direct reads through an O_DIRECT context; lazy_init opens the dataset
at the first use; name shows in the repr; prefetch_queue_depth None is
libferry's automatic window.

Run: /usr/bin/python3 tests/test_python_dali.py (FERRY_BUILD names the build
directory, default build). Exit 0 pass, 1 fail, 77 skip.
"""
import os
import sys

# Host-device semantics (numpy views of ferry's memory): on the GPU machine
# too, these run on the host device; CUDA is tests/test_python_gpu.py's.
os.environ["FERRY_DEVICE"] = "host"
from pyharness import check, need_numpy, run_tests  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402

N = 17


def make_dataset(tmp):
    root = os.path.join(tmp, "ds")
    os.mkdir(root)
    for i in range(N):
        np.save(os.path.join(root, "s%02d.npy" % i), np.full((4, 4), i, dtype="<i8"))
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    return root, empty


def ids(batch):
    a = np.asarray(batch)
    return [int(x) for x in a[:, 0, 0]]


def epochs(reader, n):
    return [sum((ids(b) for b in reader), []) for _ in range(n)]


def test_seed(root, empty, tmp):
    readers = [ferry.Reader(file_root=root, batch_size=4, random_shuffle=True, seed=s)
               for s in (None, -1, None)]
    seeds = [r.seed for r in readers]
    check(len(set(seeds)) == 3 and all(0 <= s < 2 ** 64 for s in seeds),
          "random seeds, one a reader: %r" % seeds)
    for r in readers:
        got = epochs(r, 2)
        with ferry.Reader(file_root=root, batch_size=4, random_shuffle=True, seed=r.seed) as again:
            check(epochs(again, 2) == got, "seed=%d does not give the random reader's order"
                  % r.seed)
        check("seed=%d" % r.seed in repr(r), "the repr does not name the seed: %r" % r)
        r.close()


def whole_epochs(reader, n):
    """The ids of n epochs, every element of every sample checked."""
    out = []
    for _ in range(n):
        got = []
        for b in reader:
            a = np.asarray(b)
            for row in a:
                check((row == row[0, 0]).all(), "a sample mixes values: %r" % row)
            got += [int(x) for x in a[:, 0, 0]]
        out.append(got)
    return out


def shard_epochs(root, env=None, **kw):
    """Epochs of one shard; env (WORLD_SIZE, RANK) set while it opens."""
    saved = os.environ.get("WORLD_SIZE"), os.environ.get("RANK")
    if env:
        os.environ.update(WORLD_SIZE=env[0], RANK=env[1])
    try:
        with ferry.Reader(file_root=root, batch_size=3, shuffle_after_epoch=True, **kw) as r:
            return whole_epochs(r, 4)
    finally:
        for name, value in zip(("WORLD_SIZE", "RANK"), saved):
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def check_shards(root, n, shards):
    """n shards read with shuffle_after_epoch: each epoch they partition the
    dataset, and shard 0 reads other samples than a slice of the sorted
    dataset (which a shard-local shuffle would)."""
    got = [shard_epochs(root, **kw) for kw in shards]
    for e in range(4):
        union = sorted(sum((g[e] for g in got), []))
        check(union == list(range(N)), "%d shards, epoch %d: %r" % (n, e, union))
    ranges = [set(range(N * i // n, N * (i + 1) // n)) for i in range(n)]
    check(any(set(epoch) not in ranges for epoch in got[0]),
          "%d shards: shard 0 read a shard of the unshuffled dataset every epoch: %r"
          % (n, got[0]))


def test_shuffle_after_epoch(root, empty, tmp):
    def run(**kw):
        with ferry.Reader(file_root=root, batch_size=5, shuffle_after_epoch=True, **kw) as r:
            return epochs(r, 4), r.seed
    a, seed_a = run()
    b, _ = run()
    c, seed_c = run(shuffle_after_epoch_seed=7)
    d, _ = run(seed=123)  # DALI: seed is random_shuffle's, not shuffle_after_epoch's
    check(all(sorted(e) == list(range(N)) for e in a), "an epoch is not the whole dataset")
    check(len({tuple(e) for e in a}) == 4, "epochs were not reshuffled: %r" % a)
    check(a[0] != list(range(N)), "the first epoch is not shuffled")
    check(a == b == d, "shuffle_after_epoch differs between runs")
    check(c != a and seed_c == 7 and seed_a != 7, "shuffle_after_epoch_seed changed nothing")
    with ferry.Reader(file_root=root, batch_size=5, num_shards=1, shard_id=0,
                      shuffle_after_epoch=True) as r:
        check(epochs(r, 4) == a, "one shard named explicitly")
    for n in (2, 3):
        check_shards(root, n, [dict(num_shards=n, shard_id=i) for i in range(n)])
    check_shards(root, 2, [dict(env=("2", str(i))) for i in range(2)])
    for kw in (dict(random_shuffle=True), dict(stick_to_shard=True)):
        try:
            ferry.Reader(file_root=root, shuffle_after_epoch=True, **kw)
            check(False, "shuffle_after_epoch with %r: no error" % kw)
        except ValueError as e:
            check("shuffle_after_epoch" in str(e) and list(kw)[0] in str(e), str(e))


def test_use_o_direct(root, empty, tmp):
    with ferry.Reader(file_root=root, batch_size=N, use_o_direct=True, dont_use_mmap=True) as r:
        check(r._ctx.direct is True and "O_DIRECT on" in r._ctx.describe(),
              "use_o_direct=True: the context does not read with O_DIRECT")
        check(epochs(r, 1) == [list(range(N))], "use_o_direct=True: the data")
    with ferry.Reader(file_root=root, batch_size=N) as r:
        check(not r._ctx.direct, "a reader without use_o_direct shares an O_DIRECT context")
    try:
        with ferry.Context(device="host") as ctx:
            ferry.Reader(file_root=root, ctx=ctx, use_o_direct=True)
        check(False, "use_o_direct with a buffered ctx: no error")
    except ValueError as e:
        check("direct=True" in str(e), "use_o_direct with ctx: %s" % e)
    with ferry.Context(device="host", direct=True) as ctx:
        with ferry.Reader(file_root=root, ctx=ctx, use_o_direct=True, batch_size=N) as r:
            check(epochs(r, 1) == [list(range(N))], "use_o_direct with a direct ctx")


def test_lazy_init(root, empty, tmp):
    r = ferry.Reader(file_root=empty, lazy_init=True, name="lazy")  # no files: not yet an error
    check(r._handle is None and "lazy" in repr(r), "lazy_init opened the dataset: %r" % r)
    try:
        r.next_batch()
        check(False, "a lazy reader of no files read")
    except ferry.FerryError as e:
        check(e.errno == ferry.ECONFIG, "the first use of a lazy reader of no files: %s" % e)
    r.close()
    try:
        ferry.Reader(file_root=empty)
        check(False, "a reader of no files opened")
    except ferry.FerryError:
        pass
    with ferry.Reader(file_root=root, batch_size=6, lazy_init=True) as r:
        check(r._handle is None, "lazy_init: opened at once")
        check(len(r) == 3 and r._handle is not None, "len() of a lazy reader")
        check(epochs(r, 1) == [list(range(N))], "a lazy reader's data")
    with ferry.Reader(file_root=root, batch_size=6, lazy_init=True) as r:
        state = r.state_dict()
        check((state["epoch"], state["index"]) == (0, 0), "state_dict of a lazy reader")


def test_prefetch(root, empty, tmp):
    for depth in (None, 1, 3):
        with ferry.Reader(file_root=root, batch_size=2, prefetch_queue_depth=depth) as r:
            check(epochs(r, 2) == [list(range(N))] * 2, "prefetch_queue_depth=%r" % depth)


def main():
    print("libferry", ferry.library_version())
    return run_tests((test_seed, test_shuffle_after_epoch, test_use_o_direct, test_lazy_init,
                      test_prefetch), "ferry-py-dali-", setup=make_dataset)


if __name__ == "__main__":
    sys.exit(main())
