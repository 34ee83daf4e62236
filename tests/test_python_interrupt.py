"""Ctrl-C while ferry.Reader.next_batch() waits: KeyboardInterrupt comes
promptly, not when the batch has finished loading.

A child Python reads a dataset whose reads are slowed down: the LD_PRELOAD
shim $FERRY_BUILD/shim/slowread.so (tests/shim/slowread.c) sleeps
FERRY_SLOWREAD_MS in every pread, so the child's one batch takes seconds to
load. The parent sends SIGINT 0.5 s after the child starts waiting. The child
notes when KeyboardInterrupt reached Python and re-raises it; the test wants
that within 1.5 s of the signal, the traceback of a KeyboardInterrupt raised
in next_batch, and the exit by SIGINT (Python's way of exiting on an
unhandled KeyboardInterrupt). The exit itself waits for the load in flight
(closing a reader waits for its background loads), so it is given longer.

Run: /usr/bin/python3 tests/test_python_interrupt.py (FERRY_BUILD names the
build directory, default build). Exit 0 pass, 1 fail, 77 skip.
"""
import os
import signal
import subprocess
import sys
import time

from pyharness import ROOT, check, need_numpy, run_tests  # noqa: E402
np = need_numpy()
import ferry  # noqa: E402,F401 -- the package must import here too

SHIM = os.path.join(ROOT, os.environ.get("FERRY_BUILD", "build"), "shim", "slowread.so")
SLOW_MS = 100
SIGNAL_AFTER = 0.5
PROMPT = 1.5      # KeyboardInterrupt within this many seconds of SIGINT
LOAD_AT_LEAST = 3  # the batch must take longer than this to load, or the test proves nothing

CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import ferry
ctx = ferry.Context(device="host", io="posix", chunk_size=4096, threads=1)
reader = ferry.Reader(file_root=sys.argv[2], batch_size=8, num_threads=1,
                      prefetch_queue_depth=1, epochs=1, ctx=ctx)
print("waiting", time.monotonic(), flush=True)
try:
    reader.next_batch()
    print("loaded", time.monotonic(), flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
    raise
"""


def make_dataset(tmp):
    root = os.path.join(tmp, "ds")
    os.mkdir(root)
    for i in range(8):
        np.save(os.path.join(root, "s%d.npy" % i), np.arange(3072, dtype="<i4") + i)
    return (root,)


def child_env():
    env = dict(os.environ)
    # Under AddressSanitizer tests/run.sh preloads libasan, which must stay first.
    env["LD_PRELOAD"] = " ".join(p for p in (os.environ.get("LD_PRELOAD", ""), SHIM) if p)
    env["FERRY_SLOWREAD_MS"] = str(SLOW_MS)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def spawn(root):
    return subprocess.Popen([sys.executable, "-c", CHILD, os.path.join(ROOT, "python"), root],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(),
                            universal_newlines=True)


def stamp(line, word):
    parts = line.split()
    return float(parts[1]) if len(parts) == 2 and parts[0] == word else None


def test_load_is_slow(root, tmp):
    """Without a signal the child's batch takes longer than LOAD_AT_LEAST: the
    shim works, so the interrupt test below measures something."""
    child = spawn(root)
    out, err = child.communicate(timeout=120)
    lines = out.splitlines()
    start = stamp(lines[0], "waiting") if lines else None
    end = stamp(lines[1], "loaded") if len(lines) > 1 else None
    check(child.returncode == 0 and start is not None and end is not None,
          "the slow child failed (rc %r): %s %s" % (child.returncode, out, err[-2000:]))
    if start is not None and end is not None:
        check(end - start > LOAD_AT_LEAST,
              "the batch loaded in %.2f s: the pread shim did not slow it down" % (end - start))


def test_ctrl_c(root, tmp):
    child = spawn(root)
    try:
        start = stamp(child.stdout.readline(), "waiting")
        check(start is not None, "the child did not start waiting")
        time.sleep(SIGNAL_AFTER)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    exited = time.monotonic()
    lines = out.splitlines()
    got = stamp(lines[0], "interrupted") if lines else None
    check(got is not None, "no KeyboardInterrupt in the child: stdout %r" % out)
    if got is not None:
        check(got - sent < PROMPT, "KeyboardInterrupt came %.2f s after SIGINT, more than %.1f s"
              % (got - sent, PROMPT))
        print("KeyboardInterrupt %.3f s after SIGINT; exit %.2f s after" % (got - sent,
                                                                         exited - sent))
    check("KeyboardInterrupt" in err and "next_batch" in err,
          "no KeyboardInterrupt traceback from next_batch: %s" % err[-2000:])
    check(child.returncode == -signal.SIGINT,
          "exit status %r, expected death by SIGINT" % child.returncode)


def main():
    if not os.path.exists(SHIM):
        print("FAIL: %s is missing: run make" % SHIM)
        return 1
    return run_tests((test_load_is_slow, test_ctrl_c), "ferry-py-interrupt-", setup=make_dataset)


if __name__ == "__main__":
    sys.exit(main())
