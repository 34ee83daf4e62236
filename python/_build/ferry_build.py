"""The PEP 517 build backend of the ferry Python package.

It builds libferry with the project's own Makefile (`make BUILD=<a temporary
directory> <it>/libferry.so`, without sanitizers; $MAKE names make, $CC and
$CFLAGS reach the Makefile as usual) and packs the library inside the wheel
as ferry/libferry.so, beside the pure-Python package, so that the installed
package works from any directory. It uses only the standard library, so pip
needs nothing from a package index: `pip install ./python` (or `pip install
.` in the checkout root) works offline, with or without
--no-build-isolation.

The C sources come from the checkout around the package (python/..), or, in
an sdist this backend made, from its libferry-src/ directory. An editable
install (`pip install -e ./python`) builds the checkout's own
build/libferry.so, which the package finds there, and puts the checkout's
python/ directory on sys.path.
"""
import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

NAME = "ferry"
SUMMARY = ("Load NumPy .npy tensors from storage into GPU memory (ctypes bindings of libferry, "
           "built and shipped inside)")
REQUIRES_PYTHON = ">=3.8"
HERE = os.path.dirname(os.path.abspath(__file__))  # <package root>/_build
PKG_ROOT = os.path.dirname(HERE)                   # python/ of a checkout, or an sdist's root
PACKAGE = os.path.join(PKG_ROOT, NAME)
C_FILES = ("Makefile", "src", "include")


def _version():
    with open(os.path.join(PACKAGE, "__init__.py")) as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


def _c_root():
    """Where the Makefile and the C sources are: an sdist's libferry-src/,
    else the checkout around the package."""
    for root in (os.path.join(PKG_ROOT, "libferry-src"), os.path.dirname(PKG_ROOT)):
        if all(os.path.exists(os.path.join(root, name)) for name in C_FILES + ("include/ferry.h",)):
            return root
    raise RuntimeError("ferry: no libferry sources (Makefile, src/, include/) next to %s: build "
                       "the package from a ferry checkout (pip install ./python) or from an "
                       "sdist of it" % PKG_ROOT)


def _make(root, build, target):
    """Runs the project's Makefile for target; raises with its output when it fails."""
    make = os.environ.get("MAKE") or "make"
    jobs = "-j%d" % max(1, min(os.cpu_count() or 1, 16))
    cmd = [make, "-C", root, jobs, "BUILD=" + build, "SANITIZE=", target]
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # a sanitizer runtime preloaded into pip is not the compiler's
    print("ferry: building libferry: %s" % " ".join(cmd), file=sys.stderr)
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                           universal_newlines=True)
    except FileNotFoundError:
        raise RuntimeError("ferry: `%s` not found: building libferry needs make and a C compiler "
                           "(Debian/Ubuntu: apt-get install build-essential)" % make) from None
    sys.stderr.write(r.stdout)
    if r.returncode != 0:
        raise RuntimeError("ferry: building libferry failed (%s, exit %d): it needs make and a C "
                           "compiler (Debian/Ubuntu: apt-get install build-essential; "
                           "liburing-dev is optional):\n%s"
                           % (" ".join(cmd), r.returncode, r.stdout[-4000:]))


def _build_library(tmp):
    """Builds libferry.so into tmp and returns the path of the real file."""
    build = os.path.join(tmp, "build")
    _make(_c_root(), build, os.path.join(build, "libferry.so"))
    return os.path.realpath(os.path.join(build, "libferry.so"))


def _metadata():
    readme = os.path.join(PKG_ROOT, "README.md")
    with open(readme, encoding="utf-8") as f:
        description = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n"
            "Provides-Extra: numpy\nRequires-Dist: numpy; extra == \"numpy\"\n"
            "Description-Content-Type: text/markdown\n\n%s"
            % (NAME, _version(), SUMMARY, REQUIRES_PYTHON, description))


def _tag():
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "py3-none-" + platform


def _wheel_file(tag, purelib):
    return ("Wheel-Version: 1.0\nGenerator: ferry_build\nRoot-Is-Purelib: %s\nTag: %s\n"
            % ("true" if purelib else "false", tag))


def _dist_info():
    return "%s-%s.dist-info" % (NAME, _version())


def _package_files():
    """(source path, name in the wheel) of the pure-Python package: its .py
    files and py.typed (a libferry copied into the source tree is not
    shipped: the wheel has the one just built)."""
    out = []
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py") or name == "py.typed":
            out.append((os.path.join(PACKAGE, name), "%s/%s" % (NAME, name)))
    return out


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _write_wheel(directory, tag, entries, purelib):
    """Writes a wheel of entries ((name, bytes, mode)) and returns its file name."""
    dist_info = _dist_info()
    entries = list(entries) + [
        ("%s/METADATA" % dist_info, _metadata().encode("utf-8"), 0o644),
        ("%s/WHEEL" % dist_info, _wheel_file(tag, purelib).encode(), 0o644),
        ("%s/top_level.txt" % dist_info, (NAME + "\n").encode(), 0o644),
    ]
    record_name = "%s/RECORD" % dist_info
    record = "\n".join([_record_line(name, data) for name, data, _ in entries]
                       + [record_name + ",,", ""])
    entries.append((record_name, record.encode(), 0o644))
    filename = "%s-%s-%s.whl" % (NAME, _version(), tag)
    with zipfile.ZipFile(os.path.join(directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return filename


def _read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- PEP 517 ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(dist_info, exist_ok=True)
    with open(os.path.join(dist_info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(dist_info, "WHEEL"), "w") as f:
        f.write(_wheel_file(_tag(), False))
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    tmp = tempfile.mkdtemp(prefix="ferry-build-")
    try:
        library = _build_library(tmp)
        entries = [(name, _read(path), 0o644) for path, name in _package_files()]
        entries.append(("%s/libferry.so" % NAME, _read(library), 0o755))
        return _write_wheel(wheel_directory, _tag(), entries, purelib=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    checkout = os.path.dirname(PKG_ROOT)
    if _c_root() != checkout:
        raise RuntimeError("ferry: an editable install needs a ferry checkout (python/ inside "
                           "it), not an sdist")
    # The checkout's build/libferry.so, where the package looks after $FERRY_LIBRARY and
    # a copy beside itself.
    _make(checkout, "build", "build/libferry.so")
    pth = (PKG_ROOT + "\n").encode()
    return _write_wheel(wheel_directory, _tag(), [("_ferry_editable.pth", pth, 0o644)],
                        purelib=False)


def build_sdist(sdist_directory, config_settings=None):
    """An sdist that builds anywhere: the package, this backend, and the
    libferry sources (Makefile, src/, include/) in libferry-src/."""
    base = "%s-%s" % (NAME, _version())
    root = _c_root()
    filename = base + ".tar.gz"

    def add(tar, path, name):
        info = tar.gettarinfo(path, "%s/%s" % (base, name))
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 1577836800
        if info.isfile():
            with open(path, "rb") as f:
                tar.addfile(info, f)
        else:
            tar.addfile(info)

    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as tar:
        meta = _metadata().encode("utf-8")
        info = tarfile.TarInfo("%s/PKG-INFO" % base)
        info.size, info.mtime = len(meta), 1577836800
        tar.addfile(info, io.BytesIO(meta))
        for name in ("pyproject.toml", "README.md"):
            add(tar, os.path.join(PKG_ROOT, name), name)
        add(tar, os.path.join(HERE, "ferry_build.py"), "_build/ferry_build.py")
        for path, name in _package_files():
            add(tar, path, name)
        for top in C_FILES:
            path = os.path.join(root, top)
            if os.path.isfile(path):
                add(tar, path, "libferry-src/" + top)
                continue
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames.sort()
                for name in sorted(filenames):
                    if name.endswith((".c", ".h", ".map")):
                        full = os.path.join(dirpath, name)
                        add(tar, full, "libferry-src/" + os.path.relpath(full, root))
    return filename
