"""Writes a dataset of .npz archives for tests/test_reader_npz.c into DIR:
DIR/fNNN.npz (N of them), each with members x (float32 [6, 10], C or Fortran
order, little or big endian, savez or savez_compressed in turn: a distinct
value per archive) and y; DIR/fNNN.x.bin holds np.load(fNNN.npz)['x'] as
native C-order bytes. DIR/decoy.npy must be left out by the default filter;
DIR.bad.npz (beside DIR, not in it) lacks x. Usage: npz_dataset.py DIR N [stored]:
with "stored", every archive np.savez (for a build without libdeflate). Exit 77
without numpy."""
import os
import sys

try:
    import numpy as np
except ImportError:
    print("skip: numpy is not installed")
    sys.exit(77)

out, n = sys.argv[1], int(sys.argv[2])
stored_only = sys.argv[3:] == ["stored"]
os.makedirs(out, exist_ok=True)
for i in range(n):
    x = (np.arange(60, dtype="<f4").reshape(6, 10) + 1000 * i)
    if i % 4 == 1:
        x = x.astype(">f4")
    if i % 4 == 2:
        x = np.asfortranarray(x)
    path = os.path.join(out, "f%03d.npz" % i)
    (np.savez_compressed if i % 2 and not stored_only else np.savez)(path, y=np.arange(i + 1), x=x)
    with np.load(path) as z:
        a = z["x"]
    with open(os.path.join(out, "f%03d.x.bin" % i), "wb") as f:
        f.write(np.array(a, dtype=a.dtype.newbyteorder("="), order="C").tobytes())
np.save(os.path.join(out, "decoy.npy"), np.zeros(3))
np.savez(out + ".bad.npz", y=np.arange(3))
