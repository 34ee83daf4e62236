"""Writes a sparse .npz archive over 4 GiB, as np.savez writes one, for the
zip64 tests (tests/test_npz_past_4g.py, test_npz_over_4g.py,
test_reader_npz_past_4g.c). Members, in this order:

  big.npy     stored, uint8 [2^32 + 12345], zero but for MARKERS: over 4 GiB,
              so its sizes are in zip64 fields (local header and directory)
  small.npy   stored, int64 arange (SEED shifts it): its local header lies
              past 4 GiB, so the directory gives its offset in a zip64 field
  packed.npy  deflated, float32 [50, 30], past 4 GiB as well

and the directory past 4 GiB, so a zip64 end record and locator come before
the end record. (zipfile defers a size or offset to a zip64 field past
2^31 - 1, not 2^32 - 1; every local header has a zip64 extra field with both
sizes, as force_zip64 writes it.) Python's zipfile lays out every record, as np.savez has it do
(ZipFile.open(name, "w", force_zip64=True), then the .npy header and
payload); the zero runs of big go through zipfile as views of one zero
buffer that the file object turns into holes (a seek), and whose CRC-32 is
extended by a precomputed operator instead of being read (checked against
zlib.crc32 at import). The archive takes a few KiB of disk and well under a
second to write.

Usage: npz_big.py ARCHIVE [SEED]: writes ARCHIVE, ARCHIVE.KEY.bin for small
and packed (np.load(ARCHIVE)[KEY] as native bytes) and ARCHIVE.tsv, which says

  member KEY METHOD DTYPE SHAPE LOCAL_OFFSET DATA_OFFSET NBYTES
  marker INDEX VALUE                  big[INDEX] == VALUE; every other byte is 0

(METHOD stored or deflated, SHAPE comma-separated, DATA_OFFSET where ferry info
says the payload starts: in the archive for a stored member, in the inflated
member for a deflated one), then checks the archive against zipfile and
np.load (crosscheck). Exit 0, 1 (the check failed), 77 (no numpy, or the
directory's filesystem makes no holes: the line says so)."""
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

BIG_ITEMS = (1 << 32) + 12345
SMALL_ITEMS = 1000
PACKED_SHAPE = (50, 30)
ZERO = bytes(64 << 20)  # calloc'd: never touched, only viewed
MASK = 0xFFFFFFFF


# ---- CRC-32 of zero runs: the register after n zero bytes is A^n times the
# register before (A: one zero byte through the CRC), so n bytes cost log2(n)
# matrix products over GF(2) instead of reading them.

def _apply(cols, v):
    out, i = 0, 0
    while v:
        if v & 1:
            out ^= cols[i]
        v >>= 1
        i += 1
    return out


def _zero_ops():
    """ops[k] is A^(2^k) as 32 columns."""
    ops = [[~zlib.crc32(b"\0", ~(1 << i) & MASK) & MASK for i in range(32)]]
    for _ in range(40):
        ops.append([_apply(ops[-1], c) for c in ops[-1]])
    return ops


ZERO_OPS = _zero_ops()


def crc32_zeros(crc, n):
    """zlib.crc32(bytes(n), crc), without the bytes."""
    reg, k = ~crc & MASK, 0
    while n:
        if n & 1:
            reg = _apply(ZERO_OPS[k], reg)
        n >>= 1
        k += 1
    return ~reg & MASK


for _n, _c in ((0, 5), (1, 0), (7, 0xDEADBEEF), (4099, 1), (1 << 20, 0x12345678)):
    assert crc32_zeros(_c, _n) == zlib.crc32(bytes(_n), _c), (_n, _c)


def is_zero_run(data):
    return isinstance(data, memoryview) and data.obj is ZERO


def crc32(data, crc=0):
    """zipfile's crc32 while writing: zero runs extended, the rest by zlib."""
    return crc32_zeros(crc, data.nbytes) if is_zero_run(data) else zlib.crc32(data, crc)


class SparseFile:
    """The file zipfile writes through: a zero run becomes a hole."""

    def __init__(self, f):
        self.f = f

    def write(self, data):
        if is_zero_run(data):
            self.f.seek(data.nbytes, os.SEEK_CUR)
            return data.nbytes
        if memoryview(data).nbytes > 1 << 20:
            raise RuntimeError("zipfile copied a zero run: the archive would not be sparse")
        return self.f.write(data)

    def tell(self):
        return self.f.tell()

    def seek(self, offset, whence=os.SEEK_SET):
        return self.f.seek(offset, whence)

    def flush(self):
        self.f.flush()


def makes_holes(directory):
    """Whether a 64 MiB hole in a file of directory takes no disk."""
    probe = os.path.join(directory, ".npz_big_probe")
    with open(probe, "wb") as f:
        f.seek(64 << 20)
        f.write(b"x")
    try:
        return os.stat(probe).st_blocks * 512 < (1 << 20)
    finally:
        os.unlink(probe)


def markers(seed):
    """big's nonzero bytes: {index: value}."""
    spots = (0, 1 << 20, (1 << 32) - 1, (1 << 32) + 5, BIG_ITEMS - 1)
    return {at: (seed * 5 + i * 37) % 255 + 1 for i, at in enumerate(spots)}


def arrays(seed):
    small = np.arange(SMALL_ITEMS, dtype="<i8") * 7 + seed
    rng = np.random.default_rng(seed)
    packed = rng.standard_normal(PACKED_SHAPE).astype("<f4").round(1)  # deflates
    return small, packed


def big_header():
    """big.npy's .npy header, as np.lib.format.write_array writes it."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "|u1", "fortran_order": False, "shape": (BIG_ITEMS,)})
    return buf.getvalue()


def write_big(fid, seed):
    """big.npy: its header, then the markers between zero runs."""
    fid.write(big_header())
    at = 0
    zero = memoryview(ZERO)
    for spot, value in sorted(markers(seed).items()):
        while at < spot:
            n = min(spot - at, len(ZERO))
            fid.write(zero[:n])
            at += n
        fid.write(bytes([value]))
        at += 1
    assert at == BIG_ITEMS


def write(path, seed=0):
    """Writes the archive (see the module's comment); returns its members."""
    mod = sys.modules[zipfile.ZipFile.__module__]
    small, packed = arrays(seed)
    saved = mod.crc32
    mod.crc32 = crc32
    try:
        with open(path, "wb") as raw:
            with zipfile.ZipFile(SparseFile(raw), "w", compression=zipfile.ZIP_STORED) as z:
                with z.open("big.npy", "w", force_zip64=True) as fid:
                    write_big(fid, seed)
                with z.open("small.npy", "w", force_zip64=True) as fid:
                    np.lib.format.write_array(fid, small, allow_pickle=False)
                z.compression = zipfile.ZIP_DEFLATED  # as np.savez_compressed's ZipFile
                with z.open("packed.npy", "w", force_zip64=True) as fid:
                    np.lib.format.write_array(fid, packed, allow_pickle=False)
    finally:
        mod.crc32 = saved
    for key, arr in (("small", small), ("packed", packed)):
        with open("%s.%s.bin" % (path, key), "wb") as f:
            f.write(arr.tobytes())
    return members(path, small, packed)


def local_header(f, header_offset):
    """A local header's 32-bit sizes, its extra fields and where its data starts."""
    f.seek(header_offset)
    sig, csize, usize, name_len, extra_len = struct.unpack("<I14xIIHH", f.read(30))
    assert sig == 0x04034b50
    f.seek(name_len, os.SEEK_CUR)
    return csize, usize, f.read(extra_len), header_offset + 30 + name_len + extra_len


def members(path, small, packed):
    """{key: (method, dtype, shape, local offset, data offset, nbytes)}."""
    hdr = {"big": len(big_header()), "small": len(npy_bytes(small)) - small.nbytes,
           "packed": len(npy_bytes(packed)) - packed.nbytes}
    out = {}
    with zipfile.ZipFile(path) as z, open(path, "rb") as f:
        for i in z.infolist():
            key = i.filename[:-4]
            deflated = i.compress_type == zipfile.ZIP_DEFLATED
            data_at = hdr[key] if deflated else local_header(f, i.header_offset)[3] + hdr[key]
            out[key] = ("deflated" if deflated else "stored",
                        {"big": "uint8", "small": "int64", "packed": "float32"}[key],
                        {"big": (BIG_ITEMS,), "small": small.shape, "packed": packed.shape}[key],
                        i.header_offset, data_at, i.file_size - hdr[key])
    return out


def write_manifest(path, seed, mem):
    with open(path + ".tsv", "w") as f:
        for key, (method, dtype, shape, local, data_at, nbytes) in mem.items():
            f.write("member\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n" % (
                key, method, dtype, ",".join(str(d) for d in shape), local, data_at, nbytes))
        for at, value in sorted(markers(seed).items()):
            f.write("marker\t%d\t%d\n" % (at, value))


def _directory_fields(path):
    """Each member's 32-bit sizes and offset in the directory, and whether a
    zip64 locator comes before the end record."""
    with open(path, "rb") as f:
        f.seek(-22 - 20, os.SEEK_END)
        tail = f.read()
        locator = tail[:4] == b"PK\x06\x07"
        end64_at = struct.unpack_from("<Q", tail, 8)[0]
        f.seek(end64_at + 40)
        cd_size, cd_at = struct.unpack("<QQ", f.read(16))
        f.seek(cd_at)
        cd = f.read(cd_size)
    fields, at = {}, 0
    while at < len(cd):
        csize, usize, n, x, c = struct.unpack_from("<20xIIHHH", cd, at)
        offset = struct.unpack_from("<I", cd, at + 42)[0]
        fields[cd[at + 46:at + 46 + n].decode()[:-4]] = (csize, usize, offset)
        at += 46 + n + x + c
    return fields, locator


def crosscheck(path, seed=0):
    """Python's view of the archive: problems found (an empty list when none)."""
    small, packed = arrays(seed)
    bad = []
    with zipfile.ZipFile(path) as z:
        info = {i.filename: i for i in z.infolist()}
        if list(info) != ["big.npy", "small.npy", "packed.npy"]:
            return ["zipfile lists %s" % list(info)]
        big_bytes = len(big_header()) + BIG_ITEMS
        if info["big.npy"].file_size != big_bytes or info["big.npy"].compress_size != big_bytes:
            bad.append("big.npy: zipfile says %d bytes, want %d" % (info["big.npy"].file_size,
                                                                    big_bytes))
        if info["big.npy"].header_offset != 0:
            bad.append("big.npy does not start the archive")
        for name in ("small.npy", "packed.npy"):
            if info[name].header_offset <= 1 << 32:
                bad.append("%s: local header at %d, not past 4 GiB" % (name,
                                                                     info[name].header_offset))
        if z.read("small.npy") != npy_bytes(small):  # zipfile checks the CRC as it reads
            bad.append("zipfile reads other bytes for small.npy")
    with np.load(path) as z:
        if not np.array_equal(z["small"], small) or not np.array_equal(z["packed"], packed):
            bad.append("np.load reads other arrays for small or packed")
    fields, locator = _directory_fields(path)
    if fields["big"][:2] != (MASK, MASK) or fields["small"][2] != MASK or \
            fields["packed"][2] != MASK or not locator:
        bad.append("the directory does not defer to zip64 fields: %s, locator %s"
                   % (fields, locator))
    bad += _local_zip64(path, info)
    return bad


def _local_zip64(path, info):
    """Every local header has force_zip64's extra field (id 1: the uncompressed
    and compressed sizes); big's 32-bit sizes defer to it."""
    bad = []
    with open(path, "rb") as f:
        for name, i in info.items():
            csize, usize, extra, _ = local_header(f, i.header_offset)
            want = struct.pack("<HHQQ", 1, 16, i.file_size, i.compress_size)
            if not extra.startswith(want):
                bad.append("%s: local extra field %s, want %s" % (name, extra.hex(), want.hex()))
            if name == "big.npy" and (csize, usize) != (MASK, MASK):
                bad.append("big.npy: local header sizes %d, %d, not deferred" % (csize, usize))
    return bad


def npy_bytes(arr):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=False)
    return buf.getvalue()


def main():
    path = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if not makes_holes(os.path.dirname(os.path.abspath(path))):
        print("skip: the filesystem of %s makes no holes (a sparse 4 GiB archive would fill "
              "the disk)" % os.path.dirname(os.path.abspath(path)))
        return 77
    write_manifest(path, seed, write(path, seed))
    bad = crosscheck(path, seed)
    for b in bad:
        print("FAIL: %s: %s" % (path, b))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
