#!/bin/sh
# One GPU call: the Python GPU tests and examples (CUDA), bench/tune.sh over the
# staging settings, then the whole bench/run.sh with the setting tune.sh found
# best (exported as FERRY_LANES / FERRY_MAX_BUFFERS, named in results.md).
# Writes everything flat into $OUT (the device tool brings back 8 files).
# Usage: OUT=dir TOTAL=560 sh tests/gpu/tune_and_bench.sh
cd "$(dirname "$0")/../.." || exit 1
O=${OUT:-gpu-out}
S=$(date +%s)
# One test at a time in each tests/run.sh, as on every GPU run so far.
export FERRY_DEVICE=cuda PYTHON="$(command -v python3)" FERRY_BUILD=$PWD/build TEST_JOBS=${TEST_JOBS:-1}
mkdir -p "$O"
# cuFile needs a udev database the machine lacks (see fake_udev.sh).
sh tests/gpu/fake_udev.sh "${TMPDIR:-/var/tmp}" >/dev/null 2>&1
{
	TEST_TIMEOUT=120 TESTS="test_python_gpu test_python_load test_python_reader" sh tests/run.sh
	for e in train_torch train_cupy; do
		echo "== examples/$e.py"; timeout 60 "$PYTHON" examples/$e.py --epochs 2; echo "rc=$?"
	done
} > "$O/python-gpu.log" 2>&1
BENCH_OUT=$O/bench sh bench/run.sh --datasets > "$O/bench.log" 2>&1
TUNE_OUT=$O/tune-parts sh bench/tune.sh > "$O/tune.txt" 2>&1
rm -rf "$O/tune-parts"
set -- $(tail -n 1 "$O/tune.txt")
[ "$1" = best ] && export FERRY_LANES=$2 FERRY_MAX_BUFFERS=$3
echo "tune done at $(( $(date +%s) - S )) s: FERRY_LANES=${FERRY_LANES:-} FERRY_MAX_BUFFERS=${FERRY_MAX_BUFFERS:-}" >> "$O/tune.txt"
BENCH_OUT=$O/bench BENCH_BUDGET=$(( ${TOTAL:-560} - ($(date +%s) - S) )) \
	WARM_THREADS=4,8,16 sh bench/run.sh >> "$O/bench.log" 2>&1
mv "$O/bench/results.json" "$O/bench/results.md" "$O/bench/chart.png" "$O" 2>/dev/null
rm -rf "$O/bench"
echo "total $(( $(date +%s) - S )) s" >> "$O/bench.log"
