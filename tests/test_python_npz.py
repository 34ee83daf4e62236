""".npz archive members from Python: ferry.load, load_async, load_into,
Context.load and ferry.info with key= against np.load(path)[key], every byte,
for every member tests/npz_cases.py writes (numpy's savez and
savez_compressed, zipfile's odd options, zip64 by hand); its broken archives
raise FerryError with the code it names and a message naming the file (and
the member where it is at fault); bad keys raise TypeError and ValueError;
ferry.Reader(key=...) over a directory of archives (tests/npz_dataset.py)
gives every archive's member, every byte checked, shuffled, two epochs.
A build without libdeflate (its Context.describe() says so on its npz: line)
must refuse every deflated case instead, raising FerryError EUNSUPPORTED that
names the file, the member and libdeflate; its reader reads stored archives
only, and the test ends in a skip that counts the refused cases.

Run: /usr/bin/python3 tests/test_python_npz.py (FERRY_BUILD names the build
directory, default build). Exit 0 pass, 1 fail, 77 skip (no numpy).
"""
import errno
import os
import re
import subprocess
import sys

from pyharness import check, need_numpy, run_tests, to_numpy  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CODES = {"EFORMAT": ferry.EFORMAT, "EUNSUPPORTED": ferry.EUNSUPPORTED, "ENOENT": errno.ENOENT}
REFUSED = []  # the deflated cases checked only for their refusal (no libdeflate)


def inflates():
    """Whether the library inflates, as its report's npz: line says."""
    with ferry.Context(device="host") as ctx:
        line = re.search(r"^npz: +(.*)$", ctx.describe(), re.M)
    check(line is not None, "Context.describe() has no npz: line")
    return line is not None and line.group(1).startswith("stored and deflated")


INFLATES = inflates()


def refused(path, key, zipped, call):
    """True, having checked that call() refuses, for a deflated case without libdeflate."""
    if zipped != "deflated" or INFLATES:
        return False
    REFUSED.append((path, key))
    try:
        call()
        check(False, "%s[%s] loaded without libdeflate" % (path, key))
    except ferry.FerryError as e:
        msg = str(e)
        check(e.errno == ferry.EUNSUPPORTED and path in msg and "member '%s'" % key in msg
              and "libdeflate" in msg, "%s[%s] without libdeflate: %r" % (path, key, msg))
    return True


def make_cases(tmp):
    out = os.path.join(tmp, "cases")
    subprocess.run([sys.executable, os.path.join(HERE, "npz_cases.py"), out], check=True)
    with open(os.path.join(out, "manifest.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    return ([r for r in rows if r[0] == "ok"], [r for r in rows if r[0] == "err"])


def expected(path, key):
    with np.load(path) as z:
        a = z[key]
    return np.array(a, dtype=a.dtype.newbyteorder("="), order="C")


def same(got, want):
    got = to_numpy(got)
    return (got.dtype == want.dtype and got.shape == want.shape
            and got.tobytes() == want.tobytes())


def test_members(ok, errs, tmp):
    ctx = ferry.Context(device="host", chunk_size=4096, threads=3)
    for _, path, key, *_, zipped in ok:
        want = expected(path, key)
        out = np.empty(want.shape, want.dtype)
        if refused(path, key, zipped, lambda: ferry.load(path, key=key, device="host")):
            for call in (lambda: ctx.load(path, key=key), lambda: ferry.info(path, key=key),
                         lambda: ferry.load_async(path, key=key, device="host").wait(),
                         lambda: ferry.load_into(path, out, key=key, device="host")):
                refused(path, key, zipped, call)
            continue
        what = "%s[%s]" % (path, key)
        check(same(ferry.load(path, key=key, device="host"), want), what + " by ferry.load")
        check(same(ctx.load(path, key=key), want), what + " by Context.load")
        check(same(ferry.load_async(path, key=key, device="host").wait(), want),
              what + " by ferry.load_async")
        check(same(ferry.load_into(path, out, key=key, device="host"), want),
              what + " by ferry.load_into")
        i = ferry.info(path, key=key)
        check(i.shape == want.shape and i.nbytes == want.nbytes, what + " by ferry.info")
    ctx.close()


def test_errors(ok, errs, tmp):
    for _, path, key, code, zipped, text in errs:
        if refused(path, key, zipped, lambda: ferry.load(path, key=key, device="host")):
            continue
        try:
            ferry.load(path, key=key, device="host")
            check(False, "%s[%s] loaded" % (path, key))
        except ferry.FerryError as e:
            msg = str(e)
            check(e.errno == CODES[code], "%s[%s]: errno %d, want %s" % (path, key, e.errno, code))
            check(path in msg and text in msg, "%s[%s]: message %r" % (path, key, msg))
            check("member" not in e.message or key in e.message,
                  "%s[%s]: message %r lacks the member" % (path, key, msg))
    missing = [r for r in errs if r[3] == "ENOENT"][0]
    try:
        ferry.load(missing[1], key=missing[2], device="host")
    except FileNotFoundError as e:
        check("'a', 'b'" in str(e), "a missing key lists the archive's keys: %s" % e)


def test_arguments(ok, errs, tmp):
    path, key = ok[0][1], ok[0][2]
    for bad, exc in ((3, TypeError), ("a\0b", ValueError), (["a"], TypeError)):
        try:
            ferry.load(path, key=bad, device="host")
            check(False, "key=%r accepted" % (bad,))
        except exc:
            pass
    try:
        ferry.load(path, device="host")  # an archive without a key
        check(False, "an archive loaded without a key")
    except ferry.FerryError as e:
        check(e.errno == ferry.EFORMAT and "zip archive (.npz)" in str(e), str(e))
    check(same(ferry.load(path, key=key.encode(), device="host"), expected(path, key)),
          "key as bytes")


def test_reader(ok, errs, tmp):
    """Reader(key=...) over a directory of archives: every byte of every batch."""
    root = os.path.join(tmp, "dataset")
    subprocess.run([sys.executable, os.path.join(HERE, "npz_dataset.py"), root, "10"]
                   + ([] if INFLATES else ["stored"]), check=True)
    want = {}
    for i in range(10):
        with open(os.path.join(root, "f%03d.x.bin" % i), "rb") as f:
            want["f%03d.npz" % i] = f.read()
    seen = []
    with ferry.Reader(file_root=root, key="x", batch_size=4, random_shuffle=True, seed=3,
                      epochs=2, device="host") as r:
        for epoch in range(2):
            for batch in r:
                for sample, path in zip(batch, batch.paths):
                    name = os.path.basename(path)
                    seen.append(name)
                    check(to_numpy(sample).tobytes() == want[name],
                          "Reader(key='x'): %s differs from np.load's" % name)
    check(sorted(seen) == sorted(list(want) * 2), "Reader(key='x') read %s" % sorted(seen))
    for bad, exc in ((5, TypeError), ("", ValueError)):
        try:
            ferry.Reader(file_root=root, key=bad, device="host")
            check(False, "Reader(key=%r) accepted" % (bad,))
        except exc:
            pass
    try:
        ferry.Reader(file_root=root, key="x", samples="rows", device="host")
        check(False, "Reader(key=, samples='rows') accepted")
    except ValueError:
        pass


if __name__ == "__main__":
    status = run_tests([test_members, test_errors, test_arguments, test_reader], "ferry-npz-",
                       setup=make_cases)
    if status == 0 and REFUSED:
        print("skip: this build has no libdeflate: %d deflated cases checked only for their "
              "refusal" % len(set(REFUSED)))
        status = 77
    sys.exit(status)
