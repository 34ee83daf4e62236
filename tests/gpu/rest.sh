#!/bin/sh
# The GPU call after tests/gpu/core.sh: the other tests of `make test` with the
# CUDA device but test_fault_reader (the longest fault sweep), in five parts
# at once (422 s on an H100: give it a call of its own of 540 s or more), and
# compute-sanitizer memcheck over
# four data-moving tests beside them (the zero-copy registrar's own context
# among them). Logs land in $OUT.
# Usage: OUT=dir sh tests/gpu/rest.sh
cd "$(dirname "$0")/../.." || exit 1
O=${OUT:-gpu-out}
mkdir -p "$O"
# One test at a time in each tests/run.sh, as on every GPU run so far.
export FERRY_DEVICE=cuda PYTHON="$(command -v python3)" FERRY_BUILD=build TEST_TIMEOUT=200 TEST_JOBS=${TEST_JOBS:-1}
S=$(date +%s)
done_already=" test_reader_stacked test_reader_packing test_reader_rows test_reader_big_batch
 test_reader_data test_reader_roi test_reader_threads test_reader_epochs test_reader_resume
 test_reader_changes test_change_rename test_change_in_place test_change_header_cache
 test_load_async test_load_npy test_staging_race_seed test_staging_units test_staging_stress
 test_lanes test_trace test_device_events test_io_backends test_open_special test_reader_economy test_convert_held
 test_python_gpu test_python_reader test_python_load test_python_batch test_numpy_crosscheck test_load_sweep
 test_fault_reader test_fault_load test_fault_engine "
all=$(sh tests/run.sh --names)
# Without build/obj (a build carried stripped, tests/gpu/README) test_install's
# `make install` would rebuild build/ under the other tests: left out then.
[ -d build/obj ] || done_already="$done_already test_install "
# The three longest (test_fault_load 179 s, test_fault_npz_staged 164 s on an
# H100 on 2026-12-07) run beside the others, which run in two halves at once:
# in one line they took more than 400 s there. Beside the others
# test_fault_load ran past 200 s (09:15 on 2026-12-07), and at 10:08 took
# 386 s, test_fault_npz_staged 302 and test_fault_engine 120, the last two
# one after the other the longest part (422 s): each sweep now runs in a part
# of its own, with 500 s.
long="test_fault_load test_fault_engine test_fault_npz_staged"
skip=" $(echo $done_already $long) " # one line: a name ending a line above matches too
rest=$(for t in $all; do case "$skip" in *" $t "*) ;; *) echo "$t" ;; esac; done)
TEST_TIMEOUT=500 TESTS="test_fault_load" sh tests/run.sh > "$O/part-a.log" 2>&1 &
TEST_TIMEOUT=500 TESTS="test_fault_npz_staged" sh tests/run.sh > "$O/part-b.log" 2>&1 &
TEST_TIMEOUT=500 TESTS="test_fault_engine" sh tests/run.sh > "$O/part-e.log" 2>&1 &
TESTS="$(echo "$rest" | sed -n 'p;n')" sh tests/run.sh > "$O/part-c.log" 2>&1 &
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
MEMCHECKED="test_reader_stacked test_change_rename test_load_async test_mapped_cache"
for t in $MEMCHECKED; do
	timeout 150 "$SAN" --tool memcheck --leak-check full --error-exitcode 99 build/tests/$t \
		> "$O/memcheck-$t.log" 2>&1 &
done
TESTS="$(echo "$rest" | sed -n 'n;p')" sh tests/run.sh > "$O/part-d.log" 2>&1
wait
{ for p in a b c d e; do echo "== part $p"; cat "$O/part-$p.log"; done
  for t in $MEMCHECKED; do
	echo "== memcheck $t: $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' "$O/memcheck-$t.log" | tr '\n' ' ')"
	grep -E "^[a-z].*ok|Program hit|Invalid|errors" "$O/memcheck-$t.log" | head -5
  done
  echo "== total $(( $(date +%s) - S )) s"; } > "$O/rest.log"
rm -f "$O"/part-*.log
grep -E "^(PASS|FAIL|SKIP)|passed|==" "$O/rest.log"
sh tests/gpu/pack.sh "$O" >/dev/null
