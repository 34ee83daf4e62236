"""examples/host_device.py runs anywhere: with the host device forced and no
torch or CUDA needed, it loads files, reads two epochs in batches, fits its
model and ends with 'host_device.py: ok'. Also in a directory of the user's
(--data). FERRY_BUILD names the build directory (default build)."""
import os
import subprocess
import sys
import tempfile

import pyharness  # noqa: F401  (sets FERRY_LIBRARY to this build's libferry)
from pyharness import ROOT, check, failures

EXAMPLE = os.path.join(ROOT, "examples", "host_device.py")


def run(args, cwd):
    env = dict(os.environ, FERRY_DEVICE="host")
    return subprocess.run([sys.executable, EXAMPLE] + args, capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def main():
    with tempfile.TemporaryDirectory(prefix="ferry-example-") as tmp:
        r = run([], tmp)
        check(r.returncode == 0 and r.stdout.endswith("host_device.py: ok\n"),
              "host_device.py: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
        check("device: host" in r.stdout, "host_device.py does not say it uses the host device")
        data = os.path.join(tmp, "data")
        os.mkdir(data)
        sys.path.insert(0, os.path.join(ROOT, "examples"))
        from synthetic import make_dataset
        make_dataset(data, 50, seed=3)
        r = run(["--data", data, "--batch-size", "8"], tmp)
        check(r.returncode == 0 and "100 samples in 14 batches" in r.stdout,
              "host_device.py --data: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    print("%s: %d failure(s)" % ("FAIL" if failures else "PASS", len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
