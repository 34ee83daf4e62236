"""The dataset reader against numpy: `ferry read --root D` with regions of
interest (every policy, relative values, roi_axes) over several dtypes, C and
Fortran order, little- and big-endian; the dumped bytes must equal numpy's
slice (np.ascontiguousarray), padded with the fill value as DALI pads.

Run with /usr/bin/python3; FERRY_BUILD names the build directory (build).
Exit 0 pass, 1 fail, 77 skip."""
import math
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("skip: numpy is missing")
    sys.exit(77)

BUILD = os.environ.get("FERRY_BUILD", "build")
FERRY = os.path.join(BUILD, "ferry")


def llround(x):
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def make_array(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if np.dtype(dtype).kind == "f":
        a = rng.standard_normal(n) * 100
    elif np.dtype(dtype).kind == "b":
        a = rng.integers(0, 2, n)
    else:
        a = rng.integers(0, 120, n)
    return a.astype(dtype).reshape(shape)


def region(shape, starts, ends, policy):
    """Per axis (begin, end) after the policy; None when policy error is hit."""
    out = []
    for d, ext in enumerate(shape):
        b, e = starts.get(d, 0), ends.get(d, ext)
        if policy == "trim":
            b, e = min(max(b, 0), ext), min(max(e, 0), ext)
        elif policy == "error" and (b < 0 or e > ext):
            return None
        out.append((b, e))
    return out


def reference(a, reg, fill):
    """numpy slice of reg, padded with fill where it leaves the array."""
    out = np.full([e - b for b, e in reg], fill).astype(a.dtype.newbyteorder("="))
    src, dst = [], []
    for (b, e), ext in zip(reg, a.shape):
        lo, hi = max(b, 0), min(e, ext)
        if hi <= lo:
            return out
        src.append(slice(lo, hi))
        dst.append(slice(lo - b, hi - b))
    out[tuple(dst)] = a[tuple(src)]
    return np.ascontiguousarray(out)


def run_ferry(root, args, out):
    cmd = [FERRY, "read", "--root", root, "--batch", "1", "--order", "--dump", out] + args
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p, cmd


def check_case(tmp, name, arrays, args, starts, ends, policy, fill):
    root = os.path.join(tmp, name)
    out = os.path.join(tmp, name + ".out")
    shutil.rmtree(out, ignore_errors=True)
    p, cmd = run_ferry(root, args + ["--oob", policy, "--fill", repr(fill)], out)
    regions = {f: region(a.shape, starts, ends, policy) for f, a in arrays.items()}
    if any(r is None for r in regions.values()):
        if p.returncode != 1 or "ferry: " + root not in p.stderr:
            raise AssertionError("%s: expected an error naming a file, got %d: %s"
                                 % (" ".join(cmd), p.returncode, p.stderr))
        return 0
    if p.returncode != 0:
        raise AssertionError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr))
    lines = [l.split("\t") for l in p.stdout.splitlines() if l.count("\t") >= 2]
    if len(lines) != len(arrays):
        raise AssertionError("%s: %d samples, want %d" % (name, len(lines), len(arrays)))
    for epoch, batch, path in (l[:3] for l in lines):
        f = os.path.basename(path)
        want = reference(arrays[f], regions[f], fill).tobytes()
        got = open(os.path.join(out, "e%s_b%s_0.bin" % (epoch, batch)), "rb").read()
        if got != want:
            first = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                         min(len(got), len(want)))
            raise AssertionError("%s %s: %s: %d bytes, want %d; first difference at byte %d"
                                 % (" ".join(args), policy, f, len(got), len(want), first))
    return len(lines)


def write_dataset(tmp, name, dtype, shapes, fortran):
    root = os.path.join(tmp, name)
    os.makedirs(os.path.join(root, "sub"))
    arrays = {}
    for i, shape in enumerate(shapes):
        a = make_array(dtype, shape, hash((name, i)) % 1000)
        f = "a%d.npy" % i
        np.save(os.path.join(root, "sub" if i % 2 else "", f),
                np.asfortranarray(a) if fortran else a)
        arrays[f] = a
    return arrays


def main():
    if not os.access(FERRY, os.X_OK):
        print("skip: %s is not built" % FERRY)
        return 77
    tmp = tempfile.mkdtemp(prefix="ferry-numpy-")
    datasets = [
        ("f32c", "<f4", [(5, 6, 7), (4, 9, 3)], False),
        ("f32f", "<f4", [(5, 6, 7), (6, 3, 8)], True),
        ("i16f", "<i2", [(7, 5), (3, 8)], True),
        ("u8c", "|u1", [(9, 4), (6, 6)], False),
        ("f64be", ">f8", [(4, 5, 3), (6, 2, 2)], False),
        ("i32bef", ">i4", [(4, 5), (5, 4)], True),
        ("boolc", "|b1", [(5, 5), (4, 7)], False),
    ]
    cases = [
        (["--roi-start", "1,-1", "--roi-end", "3,2"], {0: 1, 1: -1}, {0: 3, 1: 2}),
        (["--roi-start", "-2,1", "--roi-end", "9,3"], {0: -2, 1: 1}, {0: 9, 1: 3}),
        (["--roi-start", "1", "--roi-shape", "2"], {0: 1}, {0: 3}),
        (["--roi-axes", "1", "--roi-start", "1", "--roi-end", "3"], {1: 1}, {1: 3}),
        (["--roi-axes", "1,0", "--roi-start", "0,2", "--roi-shape", "2,9"],
         {1: 0, 0: 2}, {1: 2, 0: 11}),
    ]
    samples = 0
    try:
        for name, dtype, shapes, fortran in datasets:
            arrays = write_dataset(tmp, name, dtype, shapes, fortran)
            for args, starts, ends in cases:
                for policy in ("pad", "trim", "error"):
                    fill = 0.0 if dtype == "|b1" else 7.0 if dtype[1] == "u" else -3.0
                    samples += check_case(tmp, name, arrays, args, starts, ends, policy, fill)
            # relative values: fractions of each file's own extents
            rel_args = ["--roi-start-rel", "0.25,0.1", "--roi-end-rel", "0.8,0.95", "--verify"]
            p_out = os.path.join(tmp, name + ".rel")
            p, cmd = run_ferry(os.path.join(tmp, name), rel_args, p_out)
            if p.returncode != 0:
                raise AssertionError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr))
            for line in p.stdout.splitlines():
                epoch, batch, path = line.split("\t")[:3]
                a = arrays[os.path.basename(path)]
                reg = [(llround(0.25 * a.shape[0]), llround(0.8 * a.shape[0])),
                       (llround(0.1 * a.shape[1]), llround(0.95 * a.shape[1]))]
                reg += [(0, e) for e in a.shape[2:]]
                want = reference(a, reg, 0).tobytes()
                got = open(os.path.join(p_out, "e%s_b%s_0.bin" % (epoch, batch)), "rb").read()
                if got != want:
                    raise AssertionError("%s: relative ROI differs" % path)
                samples += 1
        print("ok: %d samples match numpy" % samples)
        return 0
    except AssertionError as e:
        print("FAIL:", e)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
