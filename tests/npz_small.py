"""Writes datasets of many small deflated .npz archives for
tests/test_reader_npz_packed.c into DIR. DIR/stacked/fNNN.npz (N of them):
member x float32 [4, 8] (a distinct value per archive; every third one
big-endian, every fifth one Fortran order), written by np.savez_compressed
with a stored member y beside it. DIR/ragged/fNNN.npz: the same, x of shape
[1 + i % 5, 3 + i % 4], but every 16th one [BIG, 64] (larger than the test's
staging chunk). Each DIR/*/fNNN.x.bin holds np.load(fNNN.npz)['x'] as native
C-order bytes. With "stored" (tests/test_reader_npz_stored*.c), np.savez
writes every archive (x stored too), and the stacked members are all
little-endian C order (each one the reader can pack); the ragged ones keep
their big-endian, Fortran-order and large members. Usage: npz_small.py DIR N
BIG [stored]. Exit 77 without numpy."""
import os
import sys

try:
    import numpy as np
except ImportError:
    print("skip: numpy is not installed")
    sys.exit(77)


def array(i, shape, native=False):
    x = (np.arange(int(np.prod(shape)), dtype="<f4") + np.float32(1000 * i)).reshape(shape)
    if i % 3 == 1 and not native:
        x = x.astype(">f4")
    if i % 5 == 2 and not native:
        x = np.asfortranarray(x)
    return x


def write(path, x, i):
    (np.savez if stored else np.savez_compressed)(path, x=x, y=np.arange(i % 7 + 1))
    with np.load(path) as z:
        a = z["x"]
    with open(path[:-4] + ".x.bin", "wb") as f:
        f.write(np.array(a, dtype=a.dtype.newbyteorder("="), order="C").tobytes())


out, n, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
stored = sys.argv[4:] == ["stored"]
for sub in ("stacked", "ragged"):
    os.makedirs(os.path.join(out, sub), exist_ok=True)
for i in range(n):
    write(os.path.join(out, "stacked", "f%03d.npz" % i), array(i, (4, 8), stored), i)
    shape = (big, 64) if i % 16 == 5 else (1 + i % 5, 3 + i % 4)
    write(os.path.join(out, "ragged", "f%03d.npz" % i), array(i, shape), i)
