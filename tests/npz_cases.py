"""Writes .npz archives for the npz tests into DIR, and DIR/manifest.tsv
naming each case (tests/test_npz_*.c and test_python_npz.py read it):

  ok  ARCHIVE KEY EXPECTED.bin DTYPE NDIM SHAPE FORTRAN Z  np.load(ARCHIVE)[KEY] as C-order,
                                                           native bytes in EXPECTED.bin
  err ARCHIVE KEY CODE Z TEXT                              loading fails with CODE (EFORMAT,
                                                           EUNSUPPORTED, ENOENT), message has TEXT

Z is "deflated" where loading the member inflates it, else "-": a build
without libdeflate refuses those cases with EUNSUPPORTED instead.

Archives come from numpy itself (savez, savez_compressed) and from zipfile with
odd options (data descriptors, comments, extra fields, zip64 on and off, a
stored member after a deflated one, .npy headers of 6 and 9 KB), plus one
written by hand with zip64 central directory fields and a zip64 end record.
Exit 77 without numpy."""
import io
import os
import struct
import sys
import zipfile
import zlib

try:
    import numpy as np
except ImportError:
    print("skip: numpy is not installed")
    sys.exit(77)

OUT = sys.argv[1]
ROWS = []


def npy_bytes(arr):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=False)
    return buf.getvalue()


def arrays():
    """Many dtypes, 0-d, empty, big-endian, Fortran order, one over many chunks."""
    rng = np.random.default_rng(20)
    out = {}
    for dt in ("?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"):
        a = (rng.standard_normal((7, 13)) * 100)
        if dt == "?":
            a = a > 0
        elif dt.startswith("c"):
            a = a + 1j * a[::-1]
        out["t_" + dt] = a.astype(dt)
    out["scalar"] = np.array(3.5, dtype="<f8")
    out["empty"] = np.zeros((0, 3), dtype="<i4")
    out["big_f8"] = (rng.standard_normal(1001) * 1e6).astype(">f8")
    out["big_c8"] = (rng.standard_normal((5, 9)) + 1j).astype(">c8")
    out["fortran"] = np.asfortranarray(rng.integers(0, 1 << 30, (17, 19, 3)).astype("<i4"))
    out["big_fortran"] = np.asfortranarray(rng.standard_normal((31, 29)).astype(">f4"))
    out["large"] = rng.standard_normal(300 * 1024 // 4 + 17).astype("<f4")
    out["zeros"] = np.zeros((256, 1024), dtype="<f4")
    return out


def expect(path, key, member_name=None):
    with np.load(path) as z:
        a = z[key]
    base = os.path.basename(path)
    exp = os.path.join(OUT, "%s.%s.bin" % (base, key.replace("/", "_")))
    native = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("=")))
    with open(exp, "wb") as f:
        f.write(native.tobytes())
    name = {"?": "bool"}.get(a.dtype.char, a.dtype.name)
    shape = ",".join(str(d) for d in a.shape) or "-"
    with zipfile.ZipFile(path) as z:
        deflated = z.getinfo(key + ".npy" if key + ".npy" in z.namelist() else key).compress_type
    ROWS.append("ok\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%s" % (
        path, key, exp, name, a.ndim, shape, int(a.flags.f_contiguous and not a.flags.c_contiguous),
        "deflated" if deflated == zipfile.ZIP_DEFLATED else "-"))


def err(path, key, code, text, deflated=False):
    ROWS.append("err\t%s\t%s\t%s\t%s\t%s" % (path, key, code, "deflated" if deflated else "-",
                                             text))


class Unseekable:
    """A stream zipfile cannot seek: it writes data descriptors (flag bit 3)."""

    def __init__(self):
        self.buf = io.BytesIO()

    def write(self, b):
        return self.buf.write(b)

    def flush(self):
        pass

    def tell(self):
        return self.buf.tell()

    def seek(self, *a):
        raise OSError("unseekable")


def write_numpy(arrs):
    for name, fn in (("savez.npz", np.savez), ("savez_compressed.npz", np.savez_compressed)):
        p = os.path.join(OUT, name)
        fn(p, **arrs)
        for k in arrs:
            expect(p, k)


def write_zipfile_odd(arrs):
    small = {k: arrs[k] for k in ("t_f4", "big_f8", "fortran", "large", "scalar", "empty")}
    s = Unseekable()
    with zipfile.ZipFile(s, "w") as z:
        for i, (k, a) in enumerate(small.items()):
            method = zipfile.ZIP_DEFLATED if i % 2 else zipfile.ZIP_STORED
            z.writestr(zipfile.ZipInfo(k + ".npy"), npy_bytes(a), compress_type=method)
    p = os.path.join(OUT, "descriptors.npz")
    with open(p, "wb") as f:
        f.write(s.buf.getvalue())
    assert all(i.flag_bits & 8 for i in zipfile.ZipFile(p).infolist())
    for k in small:
        expect(p, k)

    p = os.path.join(OUT, "comment_extra.npz")
    with zipfile.ZipFile(p, "w") as z:
        z.comment = b"a comment of 65 KB: " + b"x" * 65000
        for i, (k, a) in enumerate(small.items()):
            info = zipfile.ZipInfo(k + ".npy")
            info.compress_type = zipfile.ZIP_DEFLATED if i % 3 == 1 else zipfile.ZIP_STORED
            info.extra = struct.pack("<HH", 0xCAFE, 6) + b"abcdef"
            with z.open(info, "w", force_zip64=bool(i % 2)) as w:
                w.write(npy_bytes(a))
    for k in small:
        expect(p, k)

    p = os.path.join(OUT, "deflated_then_stored.npz")
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("a.npy", npy_bytes(arrs["large"]), compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("b.npy", npy_bytes(arrs["fortran"]), compress_type=zipfile.ZIP_STORED)
        z.writestr("plain", npy_bytes(arrs["t_i2"]), compress_type=zipfile.ZIP_STORED)
    for k in ("a", "b", "plain"):
        expect(p, k)


def hand_zip64(members):
    """Every size and offset in zip64 extra fields, and a zip64 end record + locator."""
    out, cd = bytearray(), bytearray()
    for name, data, method in members:
        raw = name.encode()
        body = zlib.compress(data, 6)[2:-4] if method == 8 else data
        crc = zlib.crc32(data)
        off = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034b50, 45, 0, method, 0, 0x21, crc,
                           0xFFFFFFFF, 0xFFFFFFFF, len(raw), 20) + raw
        out += struct.pack("<HHQQ", 1, 16, len(data), len(body)) + body
        cd += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 45, 45, 0, method, 0, 0x21, crc,
                          0xFFFFFFFF, 0xFFFFFFFF, len(raw), 28, 0, 0, 0, 0, 0xFFFFFFFF) + raw
        cd += struct.pack("<HHQQQ", 1, 24, len(data), len(body), off)
    cd_at = len(out)
    out += cd
    end64 = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064b50, 44, 45, 45, 0, 0, len(members), len(members),
                       len(cd), cd_at)
    out += struct.pack("<IIQI", 0x07064b50, 0, end64, 1)
    out += struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return bytes(out)


def long_header_npy(a, length):
    """.npy 1.0 bytes whose header is about length bytes (the dict, then spaces)."""
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (
        np.lib.format.dtype_to_descr(a.dtype), a.shape)
    total = (10 + length + 63) // 64 * 64
    head = (d + " " * (total - 10 - len(d) - 1) + "\n").encode()
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head + a.tobytes()


def write_long_headers(arrs):
    """Stored members whose .npy headers are longer than the 4 KiB ferry reads
    first: one at the archive's start, outside the tail read for the end
    record, one inside it."""
    p = os.path.join(OUT, "long_header.npz")
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("first.npy", long_header_npy(arrs["t_i4"], 6000))
        z.writestr("large.npy", npy_bytes(arrs["large"]))
        z.writestr("last.npy", long_header_npy(arrs["t_f8"], 9000))
    for k in ("first", "large", "last"):
        expect(p, k)


def write_hand(arrs):
    p = os.path.join(OUT, "zip64_hand.npz")
    with open(p, "wb") as f:
        f.write(hand_zip64([("x.npy", npy_bytes(arrs["large"]), 0),
                            ("y.npy", npy_bytes(arrs["big_fortran"]), 8),
                            ("z.npy", npy_bytes(arrs["t_u2"]), 0)]))
    for k in "xyz":
        expect(p, k)


def patched(name, src, fn):
    data = bytearray(open(src, "rb").read())
    fn(data)
    p = os.path.join(OUT, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


def cd_entry(data, key):
    """Offset of the central directory entry of member key.npy."""
    raw = (key + ".npy").encode()
    at = 0
    while True:
        at = bytes(data).index(b"PK\x01\x02", at)
        n = struct.unpack_from("<H", data, at + 28)[0]
        if bytes(data[at + 46:at + 46 + n]) == raw:
            return at
        at += 4


def local_at(data, key):
    return struct.unpack_from("<I", data, cd_entry(data, key) + 42)[0]


def write_errors(arrs):
    st = os.path.join(OUT, "err_base_stored.npz")
    np.savez(st, a=arrs["large"], b=arrs["t_f4"])
    co = os.path.join(OUT, "err_base_deflated.npz")
    np.savez_compressed(co, a=arrs["large"], b=arrs["t_f4"])

    def encrypt(d):
        for at in (cd_entry(d, "a") + 8, local_at(d, "a") + 6):
            d[at] |= 1
    err(patched("err_encrypted.npz", st, encrypt), "a", "EUNSUPPORTED", "encrypted")

    def flip_payload(d):  # the last byte of member a's data (b follows it), past many chunks
        d[local_at(d, "b") - 1] ^= 0x40
    err(patched("err_crc_stored.npz", st, flip_payload), "a", "EFORMAT", "CRC-32 mismatch")

    def flip_crc(d):
        d[cd_entry(d, "b") + 16] ^= 1
    err(patched("err_crc_deflated.npz", co, flip_crc), "b", "EFORMAT", "CRC-32 mismatch", True)

    def flip_header(d):  # member b's .npy header says (13, 7): still valid, same size
        at = local_at(d, "b")
        n, x = struct.unpack_from("<HH", d, at + 26)
        i = bytes(d).index(b"(7, 13)", at + 30 + n + x)
        d[i:i + 7] = b"(13, 7)"
    err(patched("err_crc_header.npz", st, flip_header), "b", "EFORMAT", "CRC-32 mismatch")

    def corrupt_deflate(d):
        at = local_at(d, "a")
        n, x = struct.unpack_from("<HH", d, at + 26)
        for i in range(at + 30 + n + x, at + 30 + n + x + 64):
            d[i] = 0xFF
    err(patched("err_corrupt_deflate.npz", co, corrupt_deflate), "a", "EFORMAT", "", True)

    size = os.path.getsize(st)
    err(patched("err_truncated_half.npz", st, lambda d: d.__delitem__(slice(size // 2, None))),
        "a", "EFORMAT", "no zip end of central directory")
    err(patched("err_truncated_tail.npz", st, lambda d: d.__delitem__(slice(size - 1, None))),
        "a", "EFORMAT", "")

    def cut_middle(d):  # the end record stays, the data before the directory goes
        cd = bytes(d).index(b"PK\x01\x02")
        del d[cd - 1000:cd]
    err(patched("err_truncated_middle.npz", st, cut_middle), "a", "EFORMAT", "")

    err(st, "nope", "ENOENT", "no such member; the archive holds 2: 'a', 'b'")

    def multidisk(d):
        at = bytes(d).rindex(b"PK\x05\x06")
        struct.pack_into("<H", d, at + 4, 1)
    err(patched("err_multidisk.npz", st, multidisk), "a", "EUNSUPPORTED", "multi-disk")

    def sizes_differ(d):
        at = cd_entry(d, "b")
        if struct.unpack_from("<I", d, at + 20)[0] != 0xFFFFFFFF:
            struct.pack_into("<I", d, at + 20, struct.unpack_from("<I", d, at + 20)[0] - 1)
    err(patched("err_sizes.npz", st, sizes_differ), "b", "EFORMAT", "sizes differ")

    for method, name, num in ((zipfile.ZIP_BZIP2, "bzip2", 12), (zipfile.ZIP_LZMA, "lzma", 14)):
        p = os.path.join(OUT, "err_%s.npz" % name)
        with zipfile.ZipFile(p, "w", compression=method) as z:
            z.writestr("a.npy", npy_bytes(arrs["t_f4"]))
        err(p, "a", "EUNSUPPORTED", "compression method %d" % num)

    p = os.path.join(OUT, "err_not_npy.npz")
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("a.npy", b"hello, not an array")
    err(p, "a", "EFORMAT", "bad magic")

    p = os.path.join(OUT, "err_not_zip.npz")
    with open(p, "wb") as f:
        f.write(b"just some bytes" * 10)
    err(p, "a", "EFORMAT", "not a readable .npz archive")


def main():
    os.makedirs(OUT, exist_ok=True)
    arrs = arrays()
    write_numpy(arrs)
    write_zipfile_odd(arrs)
    write_hand(arrs)
    write_long_headers(arrs)
    write_errors(arrs)
    with open(os.path.join(OUT, "manifest.tsv"), "w") as f:
        f.write("\n".join(ROWS) + "\n")


main()
