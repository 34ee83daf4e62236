""".npz members past 4 GiB, in an archive np.savez would write (a sparse
one, tests/npz_big.py: big.npy over 4 GiB first, then small.npy and the
deflated packed.npy, whose local headers lie past 4 GiB, so the directory
gives their offsets in zip64 fields, and a zip64 end record). First the
archive is checked against Python itself: zipfile lists the members with
their sizes and offsets and reads small.npy (checking its CRC-32), np.load
gives small and packed, and the directory defers to zip64 fields. Then
ferry: `ferry info FILE.npz:KEY` (text and --json) and ferry.info (C's
ferry_info_member) give each member's dtype, shape, data offset and size;
small loads with every byte np.load's by ferry.load, load_async,
load_into, contexts of 4 KiB chunks and 3 threads (posix reading with
O_DIRECT; io_uring where it sets up) and `ferry read --dump`; packed
likewise; a flipped byte of small's payload (past 4 GiB) is a CRC-32
mismatch naming the file and the member.
A build without libdeflate must refuse packed instead (FerryError
EUNSUPPORTED naming the file, the member and libdeflate), and the test then
ends in a skip that counts the refusals. Skips by name where the temporary
directory's filesystem makes no holes.

Run: /usr/bin/python3 tests/test_npz_past_4g.py (FERRY_BUILD names the build
directory, default build). Exit 0 pass, 1 fail, 77 skip.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

from pyharness import ROOT, check, need_numpy, run_tests  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402
import npz_big  # noqa: E402

FERRY = os.path.join(ROOT, os.environ.get("FERRY_BUILD", "build"), "ferry")
SEED = 4
TYPESTR = {"uint8": "|u1", "int64": "<i8", "float32": "<f4"}
REFUSED = []


def inflates():
    with ferry.Context(device="host") as ctx:
        line = re.search(r"^npz: +(.*)$", ctx.describe(), re.M)
    return line is not None and line.group(1).startswith("stored and deflated")


INFLATES = inflates()


def make_archive(tmp):
    path = os.path.join(tmp, "past4g.npz")
    members = npz_big.write(path, SEED)
    small, packed = npz_big.arrays(SEED)
    return path, members, {"small": small, "packed": packed}


def cli(*args):
    r = subprocess.run([FERRY] + list(args), capture_output=True, text=True,
                       env=dict(os.environ, FERRY_DEVICE="host"))
    return r.returncode, r.stdout + r.stderr


def refused(path, key, what, call):
    """True, having checked the refusal, for packed in a build without libdeflate."""
    if key != "packed" or INFLATES:
        return False
    REFUSED.append(what)
    try:
        call()
        check(False, "%s: %s[%s] loaded without libdeflate" % (what, path, key))
    except ferry.FerryError as e:
        msg = str(e)
        check(e.errno == ferry.EUNSUPPORTED and path in msg and "member '%s'" % key in msg
              and "libdeflate" in msg, "%s without libdeflate: %r" % (what, msg))
    return True


def test_python_agrees(path, members, arrays, tmp):
    for problem in npz_big.crosscheck(path, SEED):
        check(False, "the archive as Python reads it: " + problem)
    check(members["small"][3] > 1 << 32 and members["packed"][3] > 1 << 32,
          "local headers not past 4 GiB: %s" % members)


def test_cli_info(path, members, arrays, tmp):
    for key, (method, dtype, shape, local, data_at, nbytes) in members.items():
        member = "%s:%s" % (path, key)
        if key == "packed" and not INFLATES:
            rc, out = cli("info", member)
            check(rc != 0 and "%s: member 'packed': deflated members need libdeflate" % path
                  in out, "ferry info %s without libdeflate: %s" % (member, out))
            REFUSED.append("ferry info")
            continue
        rc, out = cli("info", member)
        dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
        want = "%s: version 1.0, %s, shape (%s), C order, native byte order, data offset " \
               "%d, %d bytes" % (member, dtype, dims, data_at, nbytes)
        check(rc == 0 and want in out, "ferry info %s: %s, want %s" % (member, out, want))
        rc, out = cli("info", "--json", member)
        try:
            got = json.loads(out)
        except ValueError:
            got = {}
        check(rc == 0 and got.get("dtype") == dtype and tuple(got.get("shape", ())) == shape
              and got.get("data_offset") == data_at and got.get("nbytes") == nbytes,
              "ferry info --json %s: %s" % (member, out))


def test_python_info(path, members, arrays, tmp):
    for key, (method, dtype, shape, local, data_at, nbytes) in members.items():
        if refused(path, key, "ferry.info", lambda: ferry.info(path, key=key)):
            continue
        i = ferry.info(path, key=key)
        check((i.dtype, i.shape, i.data_offset, i.nbytes, i.fortran_order)
              == (TYPESTR[dtype], shape, data_at, nbytes, False),
              "ferry.info(%s, key=%r): %s, want %s" % (path, key, i,
                                                       (dtype, shape, data_at, nbytes)))


def same(got, want):
    got = np.asarray(got)
    return got.dtype == want.dtype and got.shape == want.shape and \
        got.tobytes() == want.tobytes()


def contexts():
    """Contexts of 4 KiB chunks and 3 threads: posix with O_DIRECT, and
    io_uring where this build and kernel have it."""
    out = {"posix, O_DIRECT": ferry.Context(device="host", io="posix", chunk_size=4096,
                                            threads=3, direct=True)}
    try:
        out["io_uring"] = ferry.Context(device="host", io="uring", chunk_size=4096, threads=3)
    except ferry.FerryError as e:
        print("note: no io_uring context (%s)" % e)
    return out


def test_load(path, members, arrays, tmp):
    ctxs = contexts()
    for key in ("small", "packed"):
        want = arrays[key]
        out = np.empty(want.shape, want.dtype)
        calls = {"ferry.load": lambda: ferry.load(path, key=key, device="host"),
                 "ferry.load_async": lambda: ferry.load_async(path, key=key,
                                                               device="host").wait(),
                 "ferry.load_into": lambda: ferry.load_into(path, out, key=key, device="host")}
        for name, ctx in ctxs.items():
            calls[name] = lambda ctx=ctx: ctx.load(path, key=key)
        for what, call in calls.items():
            if not refused(path, key, what, call):
                check(same(call(), want), "%s[%s] by %s differs from np.load's" % (path, key,
                                                                                   what))
    for ctx in ctxs.values():
        ctx.close()


def test_cli_read(path, members, arrays, tmp):
    keys = ["small"] + (["packed"] if INFLATES else [])
    dump = os.path.join(tmp, "dump")
    rc, out = cli("read", "--quiet", "--dump", dump, *["%s:%s" % (path, k) for k in keys])
    check(rc == 0, "ferry read --dump: %s" % out)
    for k in keys:
        got = os.path.join(dump, "past4g.npz:%s.bin" % k)
        data = open(got, "rb").read() if os.path.exists(got) else b""
        check(data == arrays[k].tobytes(), "ferry read --dump %s:%s differs from np.load's"
              % (path, k))


def test_crc(path, members, arrays, tmp):
    """Runs last: small's last payload byte flipped in place, then restored."""
    at = members["small"][4] + members["small"][5] - 1
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x10]))
    try:
        ferry.load(path, key="small", device="host")
        check(False, "a corrupt member past 4 GiB loaded")
    except ferry.FerryError as e:
        check(e.errno == ferry.EFORMAT and path in str(e) and "member 'small'" in str(e)
              and "CRC-32 mismatch" in str(e), "a corrupt member past 4 GiB: %s" % e)
    rc, out = cli("read", "%s:small" % path)
    check(rc != 0 and "%s: member 'small': CRC-32 mismatch" % path in out,
          "ferry read of a corrupt member past 4 GiB: %s" % out)
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(byte)


def main():
    tmp = tempfile.gettempdir()
    if not npz_big.makes_holes(tmp):
        print("skip: the filesystem of %s makes no holes (a sparse 4 GiB archive would fill "
              "the disk)" % tmp)
        return 77
    status = run_tests([test_python_agrees, test_cli_info, test_python_info, test_load,
                        test_cli_read, test_crc], "ferry-npz-past4g-", setup=make_archive)
    if status == 0 and REFUSED:
        print("skip: this build has no libdeflate: %d calls on the deflated member checked "
              "only for their refusal" % len(REFUSED))
        status = 77
    return status


if __name__ == "__main__":
    sys.exit(main())
