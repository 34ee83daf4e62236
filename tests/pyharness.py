"""What the Python test scripts share: the package and libferry from this
checkout (FERRY_BUILD names the build directory, default build), a list of
failures, and a runner that gives the exit status. Import it before ferry."""
import os
import sys
import tempfile
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ["FERRY_LIBRARY"] = os.path.join(ROOT, os.environ.get("FERRY_BUILD", "build"),
                                           "libferry.so")
failures = []


def check(cond, what):
    """Records a failure (and prints it) when cond is false."""
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def to_numpy(x):
    """A loaded array as a numpy array (a copy for a CUDA ferry.Array)."""
    import numpy as np
    return x if isinstance(x, np.ndarray) else x.numpy()


def run_tests(tests, prefix, setup=None):
    """Runs each test(tmpdir) in one temporary directory, or test(*setup(tmpdir),
    tmpdir) when setup is given; returns the exit status."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        args = (tuple(setup(tmp)) if setup else ()) + (tmp,)
        for test in tests:
            try:
                test(*args)
            except Exception:
                traceback.print_exc()
                failures.append(test.__name__ + " raised")
    print("%s: %d failure(s)" % ("FAIL" if failures else "PASS", len(failures)))
    return 1 if failures else 0


def need_numpy():
    """numpy, or exit 77 (skip) where it is not installed."""
    try:
        import numpy
    except ImportError:
        print("skip: numpy is not installed")
        sys.exit(77)
    return numpy
