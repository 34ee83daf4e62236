"""ferry against numpy itself.

A corpus numpy writes (every dtype, byte orders '<' '>' '|' '=', C and Fortran
order, ranks 0..8, empty arrays, sizes off every power of two, versions 1.0 2.0
3.0) must come back from `ferry read --dump OUT --verify` byte for byte as
np.load(f).astype(native dtype).tobytes(order="C"), with the default chunk and
with FERRY_CHUNK_SIZE=64k (so files span many chunks); `ferry info --json` must
agree with numpy's header reader. A corpus of malformed files must be refused by
`ferry info` and `ferry read` with exit status 1 and one line naming the file and
the reason. The payload formula `ferry gen --help` documents is checked too.

Run with a python3 that has numpy; without it, prints 'skip: ...' and exits 77.
FERRY_BUILD names the build directory (default build).
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("skip: numpy is not installed for " + sys.executable)
    sys.exit(77)

BUILD = os.environ.get("FERRY_BUILD", "build")
FERRY = os.path.join(BUILD, "ferry")

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
SHAPES = {  # rank: a shape whose byte size is no multiple of 4096 or of a chunk
    0: (), 1: (1237,), 2: (37, 29), 3: (5, 7, 11), 4: (3, 5, 2, 7), 5: (2, 3, 5, 1, 7),
    6: (2, 3, 1, 5, 2, 3), 7: (1, 2, 3, 2, 3, 2, 5), 8: (2, 1, 3, 2, 1, 3, 2, 5),
}
EMPTY_SHAPES = [(0,), (3, 0, 5), (0, 0)]
LARGE_SHAPES = [(1031, 613), (3, 301, 263)]  # over 2 MiB as float32 and wider

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def values(dtype, shape, rng):
    """Finite, varied values of dtype and shape (no NaNs, so byte equality is exact)."""
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        flat = rng.random(n) < 0.5
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        flat = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
    elif dt.kind == "f":
        flat = (rng.standard_normal(n) * 1000).astype(dt)
    else:
        flat = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    return flat.reshape(shape)


def header_bytes(descr, fortran, shape, version):
    """A header as numpy writes it, for descrs numpy never writes itself ('=f4', '|i8')."""
    shape_text = "(%s)" % "".join("%d, " % d for d in shape).rstrip(" ") if len(shape) != 1 \
        else "(%d,)" % shape[0]
    text = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape_text)
    prefix = 10 if version == 1 else 12
    total = (prefix + len(text) + 1 + 63) // 64 * 64
    text = text.ljust(total - prefix - 1) + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + length + text.encode("latin1")


def write_case(path, arr, byteorder, fortran, version):
    """Writes arr with the given byte order and memory order in format version."""
    if byteorder in "<>":
        arr = arr.astype(arr.dtype.newbyteorder(byteorder))
    if byteorder in "<>" or arr.dtype.itemsize == 1:
        out = np.asfortranarray(arr) if fortran else np.ascontiguousarray(arr)
        with open(path, "wb") as f:
            np.lib.format.write_array(f, out, version=(version, 0))
        return
    # '|' or '=' on a multi-byte dtype: numpy only reads such headers.
    descr = byteorder + arr.dtype.str[1:]
    with open(path, "wb") as f:
        f.write(header_bytes(descr, fortran and arr.ndim > 1, arr.shape, version))
        f.write(arr.tobytes(order="F" if fortran and arr.ndim > 1 else "C"))


def byteorders(dtype):
    return ["|"] if np.dtype(dtype).itemsize == 1 else ["<", ">", "|", "="]


def make_corpus(folder):
    """Writes the valid corpus; returns the paths."""
    rng = np.random.default_rng(20240601)
    paths, k = [], 0

    def add(dtype, shape, byteorder, fortran, version):
        nonlocal k
        path = os.path.join(folder, "c%04d_%s_%s_%s_r%d_v%d.npy" % (
            k, dtype, {"<": "le", ">": "be", "|": "na", "=": "eq"}[byteorder],
            "F" if fortran else "C", len(shape), version))
        write_case(path, values(dtype, shape, rng), byteorder, fortran, version)
        paths.append(path)
        k += 1

    for dtype in DTYPES:
        for byteorder in byteorders(dtype):
            for fortran in (False, True):
                for rank in range(9):
                    add(dtype, SHAPES[rank], byteorder, fortran, 1 + (k % 3))
        for shape in EMPTY_SHAPES:
            add(dtype, shape, byteorders(dtype)[-1], len(shape) > 1, 1 + (k % 3))
    for dtype in ("float32", "complex128", "int16", "uint8"):
        for shape in LARGE_SHAPES:
            for fortran in (False, True):
                add(dtype, shape, byteorders(dtype)[min(1, len(byteorders(dtype)) - 1)],
                    fortran, 1 + (k % 3))
    return paths


def run(args, env=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([FERRY] + args, capture_output=True, text=True, env=full_env)


def expected_bytes(path):
    a = np.load(path)
    return a.astype(a.dtype.newbyteorder("=")).tobytes(order="C")


def check_read(paths, out, env):
    what = "ferry read (%s)" % (" ".join("%s=%s" % kv for kv in env.items()) or "defaults")
    r = run(["read", "--dump", out, "--verify"] + paths, env)
    if r.returncode != 0:
        fail("%s exited %d:\n%s" % (what, r.returncode, r.stderr[-3000:]))
    if not r.stdout.startswith("read: %d files" % len(paths)):
        fail("%s summary: %r" % (what, r.stdout))
    mismatched = 0
    for path in paths:
        name = os.path.basename(path)[:-4] + ".bin"
        try:
            with open(os.path.join(out, name), "rb") as f:
                got = f.read()
        except OSError as e:
            fail("%s: %s" % (what, e))
            continue
        want = expected_bytes(path)
        if got != want:
            mismatched += 1
            at = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                      min(len(got), len(want)))
            if mismatched <= 10:
                fail("%s: %s: %d bytes dumped, numpy says %d; first difference at %d" % (
                    what, name, len(got), len(want), at))
    print("%s: %d files compared with numpy, %d mismatched" % (what, len(paths), mismatched))


def numpy_header(path):
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:  # 3.0 differs from 2.0 only in the dict's encoding (utf8, here ASCII)
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        return version, shape, fortran, dtype, f.tell()


def check_info(paths):
    r = run(["info", "--json"] + paths)
    if r.returncode != 0:
        fail("ferry info --json exited %d: %s" % (r.returncode, r.stderr[-2000:]))
        return
    lines = r.stdout.splitlines()
    if len(lines) != len(paths):
        fail("ferry info --json: %d lines for %d files" % (len(lines), len(paths)))
        return
    wrong = 0
    for path, line in zip(paths, lines):
        got = json.loads(line)
        version, shape, fortran, dtype, offset = numpy_header(path)
        swapped = dtype.byteorder not in ("=", "|") and dtype.byteorder != (
            "<" if sys.byteorder == "little" else ">")
        want = {
            "path": path, "version": "%d.%d" % version, "dtype": dtype.newbyteorder("=").name,
            "shape": list(shape), "fortran_order": bool(fortran), "byteswapped": swapped,
            "data_offset": offset, "nbytes": int(np.prod(shape, dtype=np.int64)) * dtype.itemsize,
        }
        if got != want:
            wrong += 1
            if wrong <= 10:
                fail("ferry info --json %s:\n  got  %s\n  want %s" % (path, got, want))
    print("ferry info --json: %d headers compared with numpy, %d differ" % (len(paths), wrong))


# ---- malformed files ----

def good_header(descr="<f4", shape=(3, 4), version=1, fortran=False):
    return header_bytes(descr, fortran, shape, version)


def raw_header(dict_text, version=1):
    """A header whose dict is dict_text verbatim, padded as numpy pads."""
    prefix = 10 if version == 1 else 12
    total = (prefix + len(dict_text) + 1 + 63) // 64 * 64
    text = dict_text.ljust(total - prefix - 1) + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + length + text.encode("latin1")


PAYLOAD = bytes(48)  # a (3, 4) float32 payload
MALFORMED = [  # name, bytes, a substring the reason must hold
    ("bad_magic", b"\x93NUMPX" + good_header()[6:] + PAYLOAD, "magic"),
    ("not_npy", b"just some text\n", "magic"),
    ("bad_version", b"\x93NUMPY\x04\x00" + good_header()[8:] + PAYLOAD, "version"),
    ("bad_minor", b"\x93NUMPY\x01\x07" + good_header()[8:] + PAYLOAD, "version"),
    ("truncated_prefix", b"\x93NUMPY\x01", "truncated"),
    ("truncated_header", good_header()[:40], "past the end"),
    ("truncated_payload", good_header() + PAYLOAD[:20], "payload"),
    ("header_past_file", b"\x93NUMPY\x01\x00" + struct.pack("<H", 60000) + b"{'descr': '<f4'",
     "past the end"),
    ("header_over_cap", b"\x93NUMPY\x02\x00" + struct.pack("<I", 1 << 30) + b"{" + bytes(100),
     "cap"),
    ("malformed_dict", raw_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), ")
     + PAYLOAD, "dict"),
    ("not_a_dict", raw_header("['descr', '<f4']") + PAYLOAD, "dict"),
    ("bad_bool", raw_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3, 4), }")
     + PAYLOAD, "fortran_order"),
    ("missing_key", raw_header("{'descr': '<f4', 'fortran_order': False, }") + PAYLOAD,
     "missing key 'shape'"),
    ("unknown_key", raw_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), "
                               "'extra': 1, }") + PAYLOAD, "unknown key"),
    ("object_dtype", raw_header("{'descr': '|O', 'fortran_order': False, 'shape': (6,), }")
     + PAYLOAD, "object"),
    ("structured_dtype", raw_header("{'descr': [('a', '<f4'), ('b', '<i4')], "
                                    "'fortran_order': False, 'shape': (6,), }") + PAYLOAD,
     "structured"),
    ("unknown_dtype", raw_header("{'descr': '<q7', 'fortran_order': False, 'shape': (3,), }")
     + PAYLOAD, "dtype"),
    ("overflowing_shape", raw_header("{'descr': '<f8', 'fortran_order': False, "
                                     "'shape': (4611686018427387904, 4), }") + PAYLOAD,
     "overflows"),
    ("negative_dim", raw_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-3, 4), }")
     + PAYLOAD, "negative"),
    ("payload_too_long", good_header() + PAYLOAD + b"extra", "payload"),
    ("payload_empty", good_header(), "payload"),
]


def check_malformed(folder, good):
    paths = []
    for name, data, _ in MALFORMED:
        path = os.path.join(folder, name + ".npy")
        with open(path, "wb") as f:
            f.write(data)
        paths.append(path)
    for cmd in (["info"], ["read", "--verify"]):
        what = "ferry " + " ".join(cmd)
        r = run(cmd + paths + [good])
        if r.returncode != 1:
            fail("%s of the malformed corpus exited %d, expected 1" % (what, r.returncode))
        err = r.stderr.splitlines()
        if len(err) != len(paths):
            fail("%s: %d error lines for %d malformed files:\n%s" % (
                what, len(err), len(paths), r.stderr))
        for (name, _, reason), path in zip(MALFORMED, paths):
            lines = [line for line in err if line.startswith("ferry: %s: " % path)]
            if len(lines) != 1:
                fail("%s: %s: expected one 'ferry: %s: reason' line, got %r" % (
                    what, name, path, lines))
            elif reason not in lines[0][len("ferry: %s: " % path):]:
                fail("%s: %s: reason %r lacks %r" % (what, name, lines[0], reason))
            elif lines[0].count(path) != 1:
                fail("%s: %s names the file twice: %r" % (what, name, lines[0]))
        # The good file after them was still processed.
        if cmd == ["info"] and good not in r.stdout:
            fail("ferry info stopped at the malformed files: %r" % r.stdout)
        if cmd[0] == "read" and not r.stdout.startswith("read: 1 files"):
            fail("ferry read stopped at the malformed files: %r" % r.stdout)
        # Each file alone is refused too.
        for (name, _, _), path in zip(MALFORMED, paths):
            r1 = run(cmd + [path])
            if r1.returncode != 1 or len(r1.stderr.splitlines()) != 1:
                fail("%s %s alone: exit %d, stderr %r" % (what, name, r1.returncode, r1.stderr))
    print("malformed: %d files refused by ferry info and ferry read" % len(paths))


# ---- the gen payload formula ----

M64 = (1 << 64) - 1


def mix(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def formula_payload(seed, index, n):
    key = mix(seed ^ mix(index))
    words = (n + 7) // 8
    return b"".join(mix((key + w) & M64).to_bytes(8, "little") for w in range(words))[:n]


def check_gen(folder):
    out = os.path.join(folder, "gen")
    r = run(["gen", "--out", out, "--files", "24", "--size", "3000", "--mix", "--seed", "11"])
    if r.returncode != 0:
        fail("ferry gen --mix exited %d: %s" % (r.returncode, r.stderr))
        return
    r = run(["gen", "--out", out + "2", "--files", "2", "--size", "1000", "--dtype", "int16",
             "--seed", "11"])
    paths = sorted(os.path.join(out, n) for n in os.listdir(out))
    for i, path in enumerate(paths + [os.path.join(out + "2", "sample_000001.npy")]):
        index = i if i < len(paths) else 1
        a = np.load(path)
        with open(path, "rb") as f:
            raw = f.read()
        payload = raw[len(raw) - a.nbytes:]
        if payload != formula_payload(11, index, a.nbytes):
            fail("ferry gen: %s does not follow the documented payload formula" % path)
    check_read(paths, os.path.join(folder, "gen-dump"), {})
    print("gen: %d files follow the payload formula" % (len(paths) + 1))


def main():
    if not os.access(FERRY, os.X_OK):
        print("FAIL: %s is not built" % FERRY)
        return 1
    folder = tempfile.mkdtemp(prefix="ferry-numpy-")
    try:
        corpus = os.path.join(folder, "corpus")
        os.mkdir(corpus)
        paths = make_corpus(corpus)
        print("corpus: %d files" % len(paths))
        check_info(paths)
        check_read(paths, os.path.join(folder, "out-default"), {})
        check_read(paths, os.path.join(folder, "out-64k"), {"FERRY_CHUNK_SIZE": "64k"})
        bad = os.path.join(folder, "bad")
        os.mkdir(bad)
        check_malformed(bad, paths[0])
        check_gen(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if failures:
        print("%d failures" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
