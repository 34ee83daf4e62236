"""ferry.info (and ferry info) of a deflated .npz member reads its header
alone: a 512 MiB member of zeros, a few hundred KiB deflated, is described
without the process growing by the member's size (inflating it whole, as
loading does, would), and a member whose compressed bytes are corrupt past
its header is described, while loading it fails with EFORMAT naming the
file and the member. A header longer than the first bytes inflated (9000
bytes) is described too. A build without zlib (its Context.describe() npz:
line says "whole") skips.

Run: /usr/bin/python3 tests/test_npz_info_header.py (FERRY_BUILD names the
build directory, default build). Exit 0 pass, 1 fail, 77 skip.
"""
import os
import re
import resource
import struct
import subprocess
import sys
import zipfile
import zlib

from pyharness import ROOT, check, need_numpy, run_tests, to_numpy  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402

BIG = 512 << 20  # the zeros member's payload bytes
MIB = 1 << 20


def header_alone():
    with ferry.Context(device="host") as ctx:
        line = re.search(r"^npz: +(.*)$", ctx.describe(), re.M).group(1)
    return "header alone" in line


def npy_header(descr, shape, length=0):
    """A .npy 1.0 header (magic to newline), padded to at least length bytes."""
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (descr, shape)
    total = (max(10 + len(d) + 1, length) + 63) // 64 * 64
    head = (d + " " * (total - 10 - len(d) - 1) + "\n").encode()
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head


def write_zeros_member(path, key, head, nbytes):
    """An archive of one deflated member: head, then nbytes of zeros, compressed
    a MiB at a time (the member is never whole in this process's memory)."""
    z = zlib.compressobj(1, zlib.DEFLATED, -15)
    crc, parts, zeros = zlib.crc32(head), [z.compress(head)], bytes(MIB)
    for _ in range(nbytes // MIB):
        crc = zlib.crc32(zeros, crc)
        parts.append(z.compress(zeros))
    parts.append(z.flush())
    data = b"".join(parts)
    info = zipfile.ZipInfo(key + ".npy", date_time=(2026, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    usize = len(head) + nbytes
    with open(path, "wb") as f:
        name = info.filename.encode()
        f.write(struct.pack("<IHHHHHIIIHH", 0x04034b50, 20, 0, 8, 0, 0x21, crc & 0xFFFFFFFF,
                            len(data), usize, len(name), 0) + name + data)
        cd_at = f.tell()
        f.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 20, 20, 0, 8, 0, 0x21,
                            crc & 0xFFFFFFFF, len(data), usize, len(name), 0, 0, 0, 0, 0, 0)
                + name)
        cd_len = f.tell() - cd_at
        f.write(struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, 1, 1, cd_len, cd_at, 0))
    return len(data)


def max_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_big_member_described_small(tmp):
    path = os.path.join(tmp, "zeros.npz")
    csize = write_zeros_member(path, "z", npy_header("<f4", (BIG // 4,)), BIG)
    before = max_rss()
    i = ferry.info(path, key="z")
    grew = max_rss() - before
    check(i.shape == (BIG // 4,) and i.nbytes == BIG, "info of the zeros member: %r" % (i,))
    check(grew < 64 * MIB, "ferry.info of a %d MiB member (%d KiB deflated) grew the process "
          "by %d MiB: it inflated more than the header" % (BIG >> 20, csize >> 10, grew >> 20))
    out = subprocess.run([os.path.join(ROOT, os.environ.get("FERRY_BUILD", "build"), "ferry"),
                          "info", path + ":z"], capture_output=True, text=True)
    check(out.returncode == 0 and "(134217728,)" in out.stdout and "float32" in out.stdout,
          "ferry info %s:z: %r %r" % (path, out.stdout, out.stderr))


def test_corrupt_tail(tmp):
    """Corrupt compressed bytes past the header: info describes, loading refuses."""
    path = os.path.join(tmp, "tail.npz")
    write_zeros_member(path, "t", npy_header("<i8", (4 * MIB // 8,)), 4 * MIB)
    data = bytearray(open(path, "rb").read())
    cd = data.rindex(b"PK\x01\x02")
    for at in range(cd - 40, cd - 8):  # the deflate stream's last bytes
        data[at] ^= 0xA5
    open(path, "wb").write(bytes(data))
    i = ferry.info(path, key="t")
    check(i.shape == (4 * MIB // 8,) and i.dtype == np.dtype("<i8"), "info: %r" % (i,))
    try:
        ferry.load(path, key="t", device="host")
        check(False, "a member with a corrupt tail loaded")
    except ferry.FerryError as e:
        check(e.errno == ferry.EFORMAT and path in str(e) and "member 't'" in str(e),
              "loading the corrupt tail: %s" % e)


def test_long_header(tmp):
    """A header of 9000 bytes, past the first 4 KiB inflated."""
    path = os.path.join(tmp, "long.npz")
    a = np.arange(1000, dtype="<u2").reshape(10, 100)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.npy", npy_header("<u2", (10, 100), 9000) + a.tobytes())
    i = ferry.info(path, key="a")
    check(i.shape == (10, 100) and i.dtype == np.dtype("<u2"), "info of the long header: %r"
          % (i,))
    got = to_numpy(ferry.load(path, key="a", device="host"))
    check(np.array_equal(got, a), "the long header's member loads wrong bytes")


if __name__ == "__main__":
    if not header_alone():
        print("skip: this build inflates a deflated member whole to describe it (no zlib)")
        sys.exit(77)
    sys.exit(run_tests([test_big_member_described_small, test_corrupt_tail, test_long_header],
                       "ferry-npz-info-"))
