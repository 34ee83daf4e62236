#!/bin/sh
# One GPU call, at most ~9 minutes: every test of `make test` with the CUDA
# device (the slow fault sweeps beside the rest, 3 at a time), the Python GPU
# tests and examples, the seed test with spin-kernel gates, the heavy staging
# stress, and the small-file system-call probe (tests/gpu/diag/small_reads.c)
# at 16 threads. build/ comes carried (built where liburing is installed).
# Everything lands flat in $OUT (the device tool brings back 8 files).
# Usage: OUT=dir sh tests/gpu/suite.sh
cd "$(dirname "$0")/../.." || exit 1
O=${OUT:-gpu-out}
mkdir -p "$O"
# One test at a time in each tests/run.sh, as on every GPU run so far.
export FERRY_DEVICE=cuda PYTHON="$(command -v python3)" FERRY_BUILD=build TEST_TIMEOUT=420 TEST_JOBS=${TEST_JOBS:-1}
S=$(date +%s)
sh tests/gpu/fake_udev.sh "${TMPDIR:-/var/tmp}" >/dev/null 2>&1
{ date -u; nvidia-smi -L; uname -r; git log -1 --format='commit %H %s' 2>/dev/null
  build/ferry env; } > "$O/suite.log" 2>&1
all=$(sh tests/run.sh --names)
slow="test_fault_reader test_fault_load test_fault_engine"
rest=$(for t in $all; do case " $slow " in *" $t "*) ;; *) echo "$t" ;; esac; done)
TESTS="test_fault_reader" sh tests/run.sh > "$O/part-a.log" 2>&1 &
TESTS="test_fault_load test_fault_engine" sh tests/run.sh > "$O/part-b.log" 2>&1 &
{
	echo "== seed test, spin-kernel gates"
	FERRY_CUDA_GATE=kernel timeout 120 build/tests/test_staging_race_seed; echo "rc=$?"
	echo "== heavy stress: 32 threads"
	STRESS_THREADS=32 STRESS_ROUNDS=4000 timeout 150 build/tests/test_staging_stress; echo "rc=$?"
} > "$O/part-d.log" 2>&1 &
TESTS="$(echo $rest)" sh tests/run.sh > "$O/part-c.log" 2>&1
wait
{
	for p in a b c d; do echo "== part $p"; cat "$O/part-$p.log"; done
	echo "== tests done at $(( $(date +%s) - S )) s"
	for e in train_torch train_cupy; do
		echo "== examples/$e.py"; timeout 60 "$PYTHON" examples/$e.py --epochs 2; echo "rc=$?"
	done
} >> "$O/suite.log" 2>&1
rm -f "$O"/part-*.log
cp build/test-logs/*.log "$O/" 2>/dev/null; ls "$O"/test_*.log >/dev/null 2>&1 &&
	tar czf "$O/test-logs.tgz" -C "$O" $(cd "$O" && ls test_*.log) && rm -f "$O"/test_*.log
{
	echo "== small files, read-only, 16 threads (files/s)"
	D=${TMPDIR:-/var/tmp}/ferry-small
	build/ferry gen --out "$D/16k" --files 16384 --size 16k --quiet 2>&1
	build/ferry gen --out "$D/128k" --files 8192 --size 128k --quiet 2>&1
	[ -x build/small_reads ] ||
		gcc -O2 -o build/small_reads tests/gpu/diag/small_reads.c build/liburing.a -lpthread 2>&1
	for s in 16k 128k; do for m in plain ferry uring uring_checked; do
		build/small_reads "$D/$s" 16 $m 2
	done; done
	echo "== total $(( $(date +%s) - S )) s"
} > "$O/small-reads.log" 2>&1
grep -E "^(PASS|FAIL|SKIP)|passed|rc=|==" "$O/suite.log" | tail -60
cat "$O/small-reads.log"
