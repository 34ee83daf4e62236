#!/bin/sh
# The zero-copy path on the GPU machine (issue 23), in one call of about 6
# minutes: its tests with the CUDA device, then the reader over warm 64 MiB and
# 4 MiB files with the zero-copy path off (FERRY_PIN_BUDGET=0) and on (the
# default), the same run's ceilings beside them. Every epoch after the first
# copies from registrations when the path works: compare the two reader rows
# (GB/s and CPU s/GB) and the pinned_h2d ceiling. Logs and JSON land in $OUT.
# Usage: OUT=dir sh tests/gpu/mapped.sh
cd "$(dirname "$0")/../.." || exit 1
O=${OUT:-gpu-out}
mkdir -p "$O"
# One test at a time in each tests/run.sh, as on every GPU run so far.
export FERRY_DEVICE=cuda PYTHON="$(command -v python3)" FERRY_BUILD=build TEST_TIMEOUT=150 TEST_JOBS=${TEST_JOBS:-1}
{ date -u; nvidia-smi -L; build/ferry env; } > "$O/mapped.log" 2>&1
TESTS="test_mapped_beside test_mapped_cache test_mapped_release test_fault_mapped test_change_mapped
 test_change_reader_mapped test_reader_mapped test_direct_auto test_reader_stats_size" \
	sh tests/run.sh >> "$O/mapped.log" 2>&1
for w in large medium; do
	for budget in 0 default; do
		if [ "$budget" = 0 ]; then export FERRY_PIN_BUDGET=0; else unset FERRY_PIN_BUDGET; fi
		timeout 150 build/ferry bench --json --workload "$w" --cache warm --tools reader \
			--batch-sizes 1,4,32 --min-seconds 3 --series "pin-$budget" \
			> "$O/bench-$w-pin-$budget.json" 2>> "$O/mapped.log"
		echo "== bench $w pin budget $budget: exit $?" >> "$O/mapped.log"
	done
done
unset FERRY_PIN_BUDGET
build/ferry env | grep '^mapped:' >> "$O/mapped.log"
grep -E "^(PASS|FAIL|SKIP)|passed|==" "$O/mapped.log"
sh tests/gpu/pack.sh "$O" >/dev/null
