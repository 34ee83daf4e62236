#!/bin/sh
# A short GPU call (about 4 minutes) when the device time left allows no full
# suite: the tests that move data through the reader, the loader and the
# engine with the CUDA device, in three partitions at once, and the Python GPU
# tests (torch, CuPy, JAX where installed). Logs land in $OUT.
# Usage: OUT=dir sh tests/gpu/core.sh
cd "$(dirname "$0")/../.." || exit 1
O=${OUT:-gpu-out}
mkdir -p "$O"
# One test at a time in each tests/run.sh, as on every GPU run so far.
export FERRY_DEVICE=cuda PYTHON="$(command -v python3)" FERRY_BUILD=build TEST_TIMEOUT=150 TEST_JOBS=${TEST_JOBS:-1}
S=$(date +%s)
{ date -u; nvidia-smi -L; build/ferry env; } > "$O/core.log" 2>&1
TESTS="test_reader_stacked test_reader_packing test_reader_rows test_reader_big_batch test_reader_data
 test_reader_roi test_reader_threads test_reader_epochs test_reader_resume test_reader_changes test_reader_release" \
	sh tests/run.sh > "$O/part-a.log" 2>&1 &
TESTS="test_change_rename test_change_in_place test_change_header_cache test_load_async test_load_npy
 test_staging_race_seed test_staging_units test_staging_stress test_lanes test_trace test_device_events
 test_io_backends test_open_special test_reader_economy test_convert_held" \
	sh tests/run.sh > "$O/part-b.log" 2>&1 &
TESTS="test_python_gpu test_python_reader test_python_load test_python_batch test_numpy_crosscheck
 test_load_sweep" sh tests/run.sh > "$O/part-c.log" 2>&1
wait
for p in a b c; do echo "== part $p"; cat "$O/part-$p.log"; done >> "$O/core.log"
echo "== total $(( $(date +%s) - S )) s" >> "$O/core.log"
rm -f "$O"/part-*.log
cp build/test-logs/test_python_gpu.log build/test-logs/test_python_batch.log "$O/" 2>/dev/null
grep -E "^(PASS|FAIL|SKIP)|passed|==" "$O/core.log"
