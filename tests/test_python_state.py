"""Resumable readers: Reader.state_dict() taken anywhere in a shuffled,
sharded, padded run (random seed, rotating shards) and given to a new reader
in another process (Reader(..., state=d)) gives the rest of the run exactly,
sample by sample and byte by byte, as an uninterrupted run does; also through
load_state_dict, after an iteration kept the next epoch's first batch, and at
the very end. States of another dataset or other settings are refused.
set_epoch(e) makes the next iteration read epoch e (without reopening in the
usual loop); len() is the number of batches the next iteration yields, with
padding and rotating shards of different sizes.

Run: /usr/bin/python3 tests/test_python_state.py (FERRY_BUILD names the build
directory, default build). Exit 0 pass, 1 fail, 77 skip.
"""
import json
import os
import subprocess
import sys

# Host-device semantics (numpy views of ferry's memory): on the GPU machine
# too, these run on the host device; CUDA is tests/test_python_gpu.py's.
os.environ["FERRY_DEVICE"] = "host"
from pyharness import ROOT, check, need_numpy, run_tests  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402

N = 22
# Rotating shards of 7, 7 and 8 samples; batches of 3, the last one padded.
CONFIG = dict(batch_size=3, num_shards=3, shard_id=1, random_shuffle=True, pad_last_batch=True,
              epochs=4)
TOTAL = 4 * 3  # batches in the run


def make_dataset(tmp):
    root = os.path.join(tmp, "ds")
    os.mkdir(root)
    for i in range(N):
        np.save(os.path.join(root, "s%02d.npy" % i), np.full((2, 3), i, dtype="<i4") + 1000 * i)
    other = os.path.join(tmp, "other")
    os.mkdir(other)
    for i in range(N):
        np.save(os.path.join(other, "t%02d.npy" % i), np.full((2, 3), i, dtype="<i4"))
    return root, other


def record(b):
    """A batch as plain data: position, files, padding and every byte."""
    want = np.stack([np.load(p) for p in b.paths])
    check(np.asarray(b).tobytes() == want.tobytes(), "a batch's bytes differ from its files")
    return [b.epoch, b.index, [os.path.basename(p) for p in b.paths], list(b.is_padding),
            np.asarray(b).tobytes().hex()]


CHILD = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import ferry
root, config, take, state = sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
if state != "-":
    config["state"] = json.loads(state)
r = ferry.Reader(file_root=root, **config)
out = []
while take < 0 or len(out) < take:
    b = r.next_batch()
    if b is None:
        break
    out.append([b.epoch, b.index, [os.path.basename(p) for p in b.paths], list(b.is_padding),
                np.asarray(b).tobytes().hex()])
print(json.dumps({"batches": out, "state": r.state_dict(), "seed": r.seed, "len": len(r)}))
"""


def child(root, config, take, state=None):
    """Runs a reader in a new Python process: takes `take` batches (all when
    < 0), from `state` when given; returns what it printed."""
    r = subprocess.run([sys.executable, "-c", CHILD, os.path.join(ROOT, "python"), root,
                        json.dumps(config), str(take), json.dumps(state) if state else "-"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=120)
    check(r.returncode == 0, "child exit %d: %s" % (r.returncode, r.stderr[-2000:]))
    return json.loads(r.stdout) if r.returncode == 0 else {"batches": [], "state": None}


def full_run(root, seed, **extra):
    with ferry.Reader(file_root=root, seed=seed, **dict(CONFIG, **extra)) as r:
        return [record(b) for b in iter(r.next_batch, None)]


def test_resume_across_processes(root, other, tmp):
    for take in (0, 1, 2, 3, 4, 7, 9, 11, TOTAL):
        first = child(root, CONFIG, take)
        state = first["state"]
        if state is None:
            continue
        check(json.loads(json.dumps(state)) == state and state["seed"] == first["seed"],
              "state_dict is not plain JSON with the seed: %r" % state)
        full = full_run(root, first["seed"])
        check(len(full) == TOTAL, "the uninterrupted run has %d batches" % len(full))
        check(first["batches"] == full[:take], "the first %d batches differ from the "
              "uninterrupted run's" % take)
        rest = child(root, CONFIG, -1, state)  # seed None: the state's is taken
        check(rest["seed"] == first["seed"], "the resumed reader did not take the state's seed")
        got, want = rest["batches"], full[take:]
        same = sum(1 for g, w in zip(got, want) if g == w)
        check(got == want, "resumed after %d batches: %d batches, %d as uninterrupted, of %d"
              % (take, len(got), same, len(want)))
        check(tuple(state[k] for k in ("epoch", "index")) == divmod(take, 3),
              "state after %d batches: %r" % (take, state))
    print("resumed in a new process after 0..%d batches: the same batches, byte for byte"
          % TOTAL)


def test_load_state_dict(root, other, tmp):
    seed = 12345
    full = full_run(root, seed)
    r = ferry.Reader(file_root=root, seed=seed, **CONFIG)
    for _ in range(5):
        r.next_batch()
    saved = r.state_dict()
    rest = [record(b) for b in iter(r.next_batch, None)]
    check(rest == full[5:], "an uninterrupted reader after state_dict()")
    r.load_state_dict(saved)  # back to batch 5, after the end of the run
    check(len(r) == 3, "len after load_state_dict: %d" % len(r))
    again = [record(b) for b in iter(r.next_batch, None)]
    check(again == full[5:], "load_state_dict went back to batch 5: %d batches" % len(again))
    # A seed given explicitly must match; a random one is replaced by the state's.
    try:
        ferry.Reader(file_root=root, seed=seed + 1, state=saved, **CONFIG)
        check(False, "a state of another seed was taken by a reader with its own seed")
    except ValueError as e:
        check("seed" in str(e), "another seed: %s" % e)
    with ferry.Reader(file_root=root, state=saved, **CONFIG) as r2:
        check(r2.seed == seed, "the state's seed was not taken")
        check([record(b) for b in iter(r2.next_batch, None)] == full[5:], "Reader(state=)")
    r.close()


def test_state_refused(root, other, tmp):
    with ferry.Reader(file_root=root, seed=1, **CONFIG) as r:
        r.next_batch()
        saved = r.state_dict()
        before = r.state_dict()
        for what, kw in (("another dataset", dict(file_root=other)),
                         ("another batch size", dict(batch_size=4)),
                         ("other shards", dict(num_shards=2, shard_id=1)),
                         ("another shard", dict(shard_id=2)),
                         ("no padding", dict(pad_last_batch=False)),
                         ("no shuffle", dict(random_shuffle=False)),
                         ("sticky shards", dict(stick_to_shard=True))):
            config = dict(CONFIG, file_root=root, seed=1, state=saved)
            config.update(kw)
            try:
                ferry.Reader(**config)
                check(False, "a state taken by %s" % what)
            except ferry.FerryError as e:
                check(e.errno == ferry.ECONFIG and "another dataset listing or other settings"
                      in str(e), "%s: %s" % (what, e))
        # The same dataset and settings: prefetch depth, threads and epochs may differ.
        with ferry.Reader(file_root=root, seed=1, state=saved, prefetch_queue_depth=1,
                          num_threads=1, **dict(CONFIG, epochs=9)) as r2:
            check(r2.next_batch().index == 1, "a state with another prefetch depth and epochs")
        past = dict(saved, epoch=4, index=1)
        for bad in (past, dict(saved, epoch=7, index=0), dict(saved, index=3)):
            try:
                r.load_state_dict(bad)
                check(False, "a state past the run was taken: %r" % bad)
            except ferry.FerryError as e:
                check(e.errno == ferry.ECONFIG and "does not exist" in str(e), "%r: %s" % (bad, e))
        try:
            r.load_state_dict(dict(saved, fingerprint=saved["fingerprint"] ^ 1))
            check(False, "a state of another fingerprint was taken")
        except ferry.FerryError as e:
            check(e.errno == ferry.ECONFIG, "another fingerprint: %s" % e)
        for bad, exc in ((None, TypeError), ({}, ValueError), (dict(saved, format="x"), ValueError),
                         (dict(saved, epoch=-1), ValueError), (dict(saved, index="2"), TypeError)):
            try:
                r.load_state_dict(bad)
                check(False, "load_state_dict(%r) accepted" % (bad,))
            except ferry.FerryError as e:
                check(False, "load_state_dict(%r) reached libferry: %s" % (bad, e))
            except exc:
                pass
        check(r.state_dict() == before and r.next_batch().index == 1,
              "a refused state changed the reader")


def test_end_and_stash(root, other, tmp):
    """A state at the end of the last epoch gives a reader with nothing left;
    a state taken after an iteration kept the next epoch's first batch starts
    with that batch."""
    with ferry.Reader(file_root=root, seed=2, **CONFIG) as r:
        list(iter(r.next_batch, None))
        end = r.state_dict()
        check((end["epoch"], end["index"]) == (4, 0) and len(r) == 0, "the end: %r" % end)
    with ferry.Reader(file_root=root, seed=2, state=end, **CONFIG) as r:
        check(r.next_batch() is None and list(r) == [] and len(r) == 0,
              "a reader from the end state reads")
        check(r.state_dict() == end, "the end state changed")
        r.set_epoch(1)
        check([b.epoch for b in r] == [1, 1, 1], "set_epoch after the end")
    bad = os.path.join(tmp, "bad")
    os.mkdir(bad)
    for i in range(8):
        np.save(os.path.join(bad, "s%02d.npy" % i), np.full((3,), i, dtype="<i2"))
    for name in ("s06.npy", "s07.npy"):  # the last batch of every epoch is dropped
        with open(os.path.join(bad, name), "wb") as f:
            f.write(b"not an npy file" * 4)
    with ferry.Reader(file_root=bad, batch_size=3, on_error="skip") as r:
        check([b.index for b in r] == [0, 1], "epoch 0 without its dropped batch")
        state = r.state_dict()  # the iteration kept epoch 1's first batch
        check((state["epoch"], state["index"]) == (1, 0), "state with a kept batch: %r" % state)
        kept = record(r.next_batch())
    with ferry.Reader(file_root=bad, batch_size=3, on_error="skip", state=state) as r:
        check(record(r.next_batch()) == kept, "the resumed reader skipped the kept batch")


def test_set_epoch(root, other, tmp):
    seed = 99
    with ferry.Reader(file_root=root, seed=seed, **CONFIG) as r:
        full = [[record(b) for b in r] for _ in range(4)]
    config = dict(CONFIG, epochs=None)
    with ferry.Reader(file_root=root, seed=seed, **config) as r:
        handle = r._handle
        for e in range(4):  # the usual loop: no reopening
            r.set_epoch(e)
            check([record(b) for b in r] == full[e], "set_epoch(%d) in order" % e)
        check(r._handle is handle, "set_epoch of the epoch about to begin reopened the reader")
        for e in (2, 0, 3, 3, 1):
            r.set_epoch(e)
            check([record(b) for b in r] == full[e], "set_epoch(%d)" % e)
        r.next_batch()
        r.set_epoch(2)  # in the middle of epoch 2: back to its start
        check([record(b) for b in r] == full[2], "set_epoch mid-epoch")
    with ferry.Reader(file_root=root, seed=seed, lazy_init=True, **CONFIG) as r:
        r.set_epoch(3)
        check([record(b) for b in r] == full[3], "set_epoch before a lazy reader opened")
        try:
            r.set_epoch(4)
            check(False, "set_epoch past epochs")
        except ValueError as e:
            check("epoch" in str(e), "set_epoch(4): %s" % e)
        for bad, exc in ((-1, ValueError), (1.0, TypeError), (None, TypeError)):
            try:
                r.set_epoch(bad)
                check(False, "set_epoch(%r) accepted" % (bad,))
            except exc:
                pass


def test_len(root, other, tmp):
    """Shards of 7, 7 and 8 samples in batches of 7: 1, 1 and 2 batches, the
    shard rotating each epoch; len() before each iteration says how many it
    yields, from a fresh reader, after set_epoch and after a resume."""
    for pad in (False, True):
        config = dict(batch_size=7, num_shards=3, shard_id=0, pad_last_batch=pad, epochs=6)
        with ferry.Reader(file_root=root, **config) as r:
            got = []
            for e in range(6):
                n = len(r)
                batches = list(r)
                got.append((n, len(batches)))
                check(n == len(batches) and {b.epoch for b in batches} == {e},
                      "pad %s epoch %d: len() %d, iteration %d" % (pad, e, n, len(batches)))
            check([n for n, _ in got] == [1, 1, 2] * 2, "len by epoch %r" % got)
            check(len(r) == 0, "len after the last epoch")
            r.set_epoch(2)
            check(len(r) == 2 and len(list(r)) == 2, "len after set_epoch(2)")
            r.set_epoch(4)
            state = r.state_dict()
        with ferry.Reader(file_root=root, state=state, **config) as r:
            check(len(r) == 1, "len of a reader resumed at epoch 4: %d" % len(r))
            r.set_epoch(5)
            check(len(r) == 2, "len after set_epoch(5): %d" % len(r))
            r.next_batch()
            check(len(r) == 2, "len in the middle of epoch 5")
            r.next_batch()
            check(len(r) == 0, "len at the end")
    with ferry.Reader(file_root=root, batch_size=4, num_shards=3, shard_id=2,
                      stick_to_shard=True, pad_last_batch=True) as r:
        for _ in range(3):
            check(len(r) == 2 == len(list(r)), "len with a sticky shard")


def main():
    print("libferry", ferry.library_version())
    return run_tests((test_resume_across_processes, test_load_state_dict, test_state_refused,
                      test_end_and_stash, test_set_epoch, test_len), "ferry-py-state-",
                     setup=make_dataset)


if __name__ == "__main__":
    sys.exit(main())
