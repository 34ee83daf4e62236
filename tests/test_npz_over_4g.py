"""An .npz member over 4 GiB loaded whole: big.npy of the sparse archive
tests/npz_big.py writes (uint8 [2^32 + 12345], stored, its sizes in zip64
fields, zero but for a few marker bytes, one each side of 2^32 and one last)
through Context.load_into on the host device, its CRC-32 checked by ferry
over all of it; every marker byte must be at its place and
np.count_nonzero must count the markers and nothing else.

The destination is 4 GiB of anonymous memory asked for transparent huge
pages, and the context reads with O_DIRECT: the archive's holes would
otherwise fill 4 GiB of page cache, and faulting in 4 GiB a page at a time
takes 10 to 30 s on a small VM; the load itself, and its checks, are the
same as ferry.load's.

Skips by name with MemAvailable under 12 GiB, or where the temporary
directory's filesystem makes no holes.

Run: /usr/bin/python3 tests/test_npz_over_4g.py (FERRY_BUILD names the build
directory, default build). Exit 0 pass, 1 fail, 77 skip.
"""
import mmap
import sys
import tempfile

from pyharness import check, need_numpy, run_tests  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402
import npz_big  # noqa: E402

SEED = 9
NEED_GIB = 12


def mem_available_gib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / (1 << 20)
    return 0.0


def huge_buffer(nbytes):
    """nbytes of private anonymous memory, asked for transparent huge pages."""
    mm = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        mm.madvise(mmap.MADV_HUGEPAGE)
    return mm


def test_whole(tmp):
    path = tmp + "/over4g.npz"
    members = npz_big.write(path, SEED)
    check(members["big"][5] == npz_big.BIG_ITEMS > 1 << 32, "big: %s" % (members["big"],))
    mm = huge_buffer(npz_big.BIG_ITEMS)
    out = np.frombuffer(mm, np.uint8)
    with ferry.Context(device="host", direct=True) as ctx:
        ctx.load_into(path, out, key="big")
    markers = npz_big.markers(SEED)
    for at, value in sorted(markers.items()):
        check(out[at] == value, "big[%d] is %d, want %d" % (at, out[at], value))
    n = np.count_nonzero(out)
    check(n == len(markers), "big has %d nonzero bytes, want the %d markers" % (n, len(markers)))
    del out
    mm.close()


def main():
    avail = mem_available_gib()
    if avail < NEED_GIB:
        print("skip: MemAvailable is %.1f GiB, under the %d GiB a 4 GiB member loaded whole "
              "needs" % (avail, NEED_GIB))
        return 77
    tmp = tempfile.gettempdir()
    if not npz_big.makes_holes(tmp):
        print("skip: the filesystem of %s makes no holes (a sparse 4 GiB archive would fill "
              "the disk)" % tmp)
        return 77
    return run_tests([test_whole], "ferry-npz-over4g-")


if __name__ == "__main__":
    sys.exit(main())
