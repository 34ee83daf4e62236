"""Diagnostics for the GPU machine: runs a test script with faulthandler on (Python stacks of
every thread on abort, segfault and SIGUSR2, chained to crashbt.so's C stacks)."""
import faulthandler, runpy, signal, sys
faulthandler.enable(all_threads=True)
faulthandler.register(signal.SIGUSR2, all_threads=True, chain=True)
sys.argv = sys.argv[1:]
sys.path.insert(0, __import__("os").path.dirname(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")
