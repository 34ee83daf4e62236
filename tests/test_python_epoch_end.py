"""Iterating a ferry.Reader ends at the end of the epoch even when the epoch's
last batch was dropped (on_error='skip' and every file of that batch bad: the
C reader hands over the next epoch's first batch instead, which the next
iteration yields first); with every file bad, iterating raises FerryError
instead of spinning.

Run: /usr/bin/python3 tests/test_python_epoch_end.py (FERRY_BUILD names the
build directory, default build). Exit 0 pass, 1 fail, 77 skip.
"""
import os
import sys

from pyharness import check, need_numpy, run_tests, to_numpy  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402

N = 8
LIMIT = 3 * N  # batches one iteration may yield before it counts as endless


def content(i):
    return np.arange(12, dtype="<i4").reshape(3, 4) + 1000 * i


def write_garbage(path):
    with open(path, "wb") as f:
        f.write(b"this is not an npy file" * 4)


def write_truncated(path, i):
    np.save(path, content(i))
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 8)  # a valid header, a short payload


def make_dataset(tmp):
    """s00..s07 in batches of 3: [0 1 2] [3 4 5] [6 7]. s01 is garbage (its
    batch goes on without it); s06 is truncated and s07 garbage, so the last
    batch of every epoch is dropped. bad/ holds only bad files."""
    root = os.path.join(tmp, "ds")
    os.mkdir(root)
    for i in range(N):
        np.save(os.path.join(root, "s%02d.npy" % i), content(i))
    write_garbage(os.path.join(root, "s01.npy"))
    write_truncated(os.path.join(root, "s06.npy"), 6)
    write_garbage(os.path.join(root, "s07.npy"))
    bad = os.path.join(tmp, "bad")
    os.mkdir(bad)
    for i in range(4):
        if i % 2:
            write_garbage(os.path.join(bad, "b%02d.npy" % i))
        else:
            write_truncated(os.path.join(bad, "b%02d.npy" % i), i)
    return root, bad


def ids(batch):
    out = []
    for x, path in zip(batch, batch.paths):
        a = to_numpy(x)
        i = int(a.flat[0]) // 1000
        check(np.array_equal(a, content(i)), "sample from %s holds wrong data" % path)
        out.append(i)
    return out


def iterate(reader):
    """One iteration as (epoch, ids) pairs, stopping at LIMIT batches."""
    got = []
    for batch in reader:
        got.append((batch.epoch, ids(batch)))
        if len(got) >= LIMIT:
            check(False, "an iteration did not end after %d batches" % LIMIT)
            break
    return got


def test_last_batch_dropped(root, bad, tmp):
    with ferry.Reader(file_root=root, batch_size=3, on_error="skip") as r:
        check(len(r) == 3, "len %d, expected 3" % len(r))
        for epoch in range(3):
            got = iterate(r)
            want = [(epoch, [0, 2]), (epoch, [3, 4, 5])]
            check(got == want, "epoch %d: %r, expected %r" % (epoch, got, want))
        # Three per epoch, and s01 of epoch 3's first batch, which the last
        # iteration took from the reader and kept.
        check(r.stats()["files_skipped"] == 3 * 3 + 1, "files_skipped %r" % r.stats())
        # next_batch() takes the batch an iteration kept, then goes on.
        b = r.next_batch()
        check((b.epoch, b.index, ids(b)) == (3, 0, [0, 2]), "next_batch after an iteration: "
              "epoch %r index %r" % (b.epoch, b.index))
        b = r.next_batch()
        check((b.epoch, b.index, ids(b)) == (3, 1, [3, 4, 5]), "next_batch: the second batch")
    with ferry.Reader(file_root=root, batch_size=3, on_error="skip", epochs=2) as r:
        got = [iterate(r) for _ in range(3)]
        check(got == [[(0, [0, 2]), (0, [3, 4, 5])], [(1, [0, 2]), (1, [3, 4, 5])], []],
              "epochs=2: %r" % got)
    # An iteration left early goes on from there, and still ends with its epoch.
    with ferry.Reader(file_root=root, batch_size=3, on_error="skip") as r:
        first = next(iter(r))
        check((first.epoch, ids(first)) == (0, [0, 2]), "the first batch")
        check(iterate(r) == [(0, [3, 4, 5])], "the rest of epoch 0")
        check(iterate(r) == [(1, [0, 2]), (1, [3, 4, 5])], "epoch 1 after a partial epoch 0")


def test_every_file_bad(root, bad, tmp):
    for batch_size in (1, 2, 4):
        with ferry.Reader(file_root=bad, batch_size=batch_size, on_error="skip") as r:
            for attempt in range(2):
                try:
                    got = iterate(r)
                    check(False, "batch_size %d: every file bad, no error (got %r)"
                          % (batch_size, got))
                except ferry.FerryError as e:
                    check(e.errno in (ferry.EFORMAT, ferry.ETRUNCATED),
                          "batch_size %d: errno %r (%s)" % (batch_size, e.errno, e))
                    check("skipped" in e.message, "the error does not say files were "
                          "skipped: %s" % e.message)
                    check(e.filename is not None and os.path.dirname(e.filename) == bad,
                          "the error names no bad file: %r" % e.filename)
            check(r.stats()["samples"] == 0, "samples from bad files: %r" % r.stats())


def main():
    print("libferry", ferry.library_version())
    return run_tests((test_last_batch_dropped, test_every_file_bad), "ferry-py-epoch-end-",
                     setup=make_dataset)


if __name__ == "__main__":
    sys.exit(main())
