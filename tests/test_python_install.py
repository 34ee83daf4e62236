"""`pip install ./python` in a fresh venv, with no package index: the build
backend (python/_build/ferry_build.py) builds libferry with the project's
Makefile and ships it inside the package, which then works from another
directory with no FERRY_LIBRARY or PYTHONPATH: it loads a file and reads a
stacked batch, both equal to np.load. `pip wheel .` in the checkout root
(pyproject.toml there) builds the same package.

Run: /usr/bin/python3 tests/test_python_install.py. Exit 0 pass, 1 fail, 77
skip (no venv module, no make or C compiler).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

from pyharness import ROOT, check, failures  # noqa: E402

USE = r"""
import os, sys
import numpy as np
import ferry
lib = ferry.library_version()[1]
here = os.path.dirname(ferry.__file__)
assert os.path.dirname(lib) == here, "libferry %s is not the package's own (%s)" % (lib, here)
assert sys.prefix in here, "ferry %s is not the venv's" % here
want = np.arange(24, dtype=">i4").reshape(2, 3, 4)
for i in range(4):
    np.save("s%d.npy" % i, want + i)
x = ferry.load("s1.npy")
assert np.array_equal(x, want + 1), "load"
with ferry.Reader(file_root=".", batch_size=4) as r:
    b = r.next_batch()
    assert np.array_equal(np.asarray(b), np.stack([np.load(p) for p in b.paths])), "batch"
print("installed ferry works:", lib)
"""


def run(cmd, cwd, env, timeout=600):
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=timeout)
    check(r.returncode == 0, "%s: exit %d\n%s" % (" ".join(cmd), r.returncode, r.stdout[-3000:]))
    return r


def main():
    build = os.environ.get("FERRY_BUILD", "build")
    if "asan" in build or "tsan" in build:
        print("skip: pip builds its own library without sanitizers; the plain run covers it")
        return 77
    for tool in ("make", os.environ.get("CC") or "cc"):
        if shutil.which(tool) is None:
            print("skip: %s not found" % tool)
            return 77
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "FERRY_LIBRARY", "PYTHONPATH", "ASAN_OPTIONS", "MAKEFLAGS",
                        "MFLAGS", "MAKELEVEL", "FERRY_BUILD")}
    # The installed package's check uses numpy views: the host device, on the
    # GPU machine too.
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", FERRY_DEVICE="host")
    with tempfile.TemporaryDirectory(prefix="ferry-py-install-") as tmp:
        venv = os.path.join(tmp, "v")
        r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, env=env)
        if r.returncode != 0:
            print("skip: %s -m venv failed (Debian: apt-get install python3-venv): %s"
                  % (sys.executable, r.stdout[-500:]))
            return 77
        pip, python = os.path.join(venv, "bin", "pip"), os.path.join(venv, "bin", "python")
        r = subprocess.run([python, "-c", "import numpy"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, env=env)
        if r.returncode != 0:
            print("skip: the venv sees no numpy (--system-site-packages found none in %s's "
                  "site-packages): %s" % (sys.executable, r.stdout.strip()[-200:]))
            return 77
        run([pip, "install", os.path.join(ROOT, "python")], tmp, env)
        work = os.path.join(tmp, "elsewhere")
        os.mkdir(work)
        r = run([python, "-c", USE], work, env)
        print(r.stdout.strip())
        wheels = os.path.join(tmp, "wheels")
        run([pip, "wheel", "--no-deps", "-w", wheels, ROOT], tmp, env)
        names = os.listdir(wheels)
        check(len(names) == 1 and names[0].startswith("ferry-") and names[0].endswith(".whl"),
              "pip wheel . in the root made %r" % names)
        if names:
            with zipfile.ZipFile(os.path.join(wheels, names[0])) as z:
                content = set(z.namelist())
            check({"ferry/__init__.py", "ferry/_reader.py", "ferry/libferry.so",
                   "ferry/py.typed"} <= content, "the root's wheel holds %s" % sorted(content))
            print("pip wheel . in the root:", names[0])
    print("%s: %d failure(s)" % ("FAIL" if failures else "PASS", len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
