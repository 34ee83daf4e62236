"""Writes one .npz archive for tests/test_change_reader_npz_cache.c: member x
is np.arange(LEN, dtype=DTYPE) + BASE. LAYOUT: "first" (np.savez, x alone),
"second" (np.savez with a member a before x, so x's data lies further in) or
"deflated" (np.savez_compressed, x alone). The archive is written beside PATH
and renamed over it (a reader sees the old archive or the new one, never half
of one), its mtime set to MTIME seconds. Usage: npz_version.py PATH LAYOUT
DTYPE LEN BASE MTIME. Exit 77 without numpy."""
import os
import sys

try:
    import numpy as np
except ImportError:
    print("skip: numpy is not installed")
    sys.exit(77)

path, layout, dtype, length, base, mtime = sys.argv[1:7]
x = np.arange(int(length), dtype=dtype) + np.array(int(base), dtype=dtype)
tmp = path + ".tmp.npz"
if layout == "first":
    np.savez(tmp, x=x)
elif layout == "second":
    np.savez(tmp, a=np.arange(5), x=x)
elif layout == "deflated":
    np.savez_compressed(tmp, x=x)
else:
    sys.exit("unknown layout " + layout)
os.utime(tmp, (int(mtime), int(mtime)))
os.rename(tmp, path)
