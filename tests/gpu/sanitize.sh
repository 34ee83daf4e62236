#!/bin/sh
# The GPU machine's compute-sanitizer runs: memcheck (with leak checking),
# racecheck and synccheck over the tests that move data with the CUDA device.
# ferry launches no kernels of its own except the spin-kernel gate, so the
# race and sync checks also run with FERRY_CUDA_GATE=kernel, where the tests'
# gates are kernels. Writes one log per run to $OUT (or ./gpu-out) and prints
# a line each: the test's result and the reports, split into those in ferry's
# code and those entirely inside libcufile (cuFileDriverOpen allocates for the
# process's life and frees a pointer of its own that CUDA calls invalid; ferry
# opens the driver once and keeps it). Exit status: the number of runs where
# the test failed or a report was not libcufile's.
# Usage: sh tests/gpu/sanitize.sh   (build/ already built; BUILD overrides)
OUT=${OUT:-gpu-out}
BUILD=${BUILD:-build}
SAN=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
mkdir -p "$OUT"
export FERRY_DEVICE=cuda
if [ ! -x "$SAN" ]; then
	echo "sanitize: compute-sanitizer not found"
	exit 1
fi
failed=0

# run TOOL TEST [ENV=VALUE...]: one test under one tool.
run() {
	tool=$1 test=$2
	shift 2
	log=$OUT/sanitize-$tool-$test${1:+-gate}.log
	case $tool in
	memcheck) extra="--leak-check full" ;;
	*) extra="" ;;
	esac
	# shellcheck disable=SC2086 # extra is a word list
	env "$@" timeout 300 "$SAN" --tool "$tool" $extra --error-exitcode 99 \
		"$BUILD/tests/$test" >"$log" 2>&1
	rc=$?
	counts=$(count_reports "$log")
	result=passed
	{ [ $rc -ne 0 ] && [ $rc -ne 99 ]; } || grep -q "Target application returned an error" "$log" &&
		result="FAILED (rc=$rc)"
	echo "$tool $test${1:+ ($*)}: test $result; reports: $counts"
	case "$result $counts" in
	"passed 0 in ferry"*) ;;
	*) failed=$((failed + 1)) ;;
	esac
}

# count_reports LOG: "N in ferry, M inside libcufile". A report runs from a
# "========= <text>" line to the next bare "=========" line.
count_reports() {
	awk '/^========= (COMPUTE-SANITIZER|ERROR SUMMARY|LEAK SUMMARY|Target application)/ { next }
		/^========= [A-Z]/ && !open { open = 1; cufile = 0; next }
		open && /libcufile\.so/ { cufile = 1 }
		open && /^========= *$/ { open = 0; if (cufile) c++; else f++ }
		END { printf "%d in ferry, %d inside libcufile\n", f, c }' "$1"
}

for t in test_load_async test_load_npy test_reader_data test_reader_roi test_device_events \
	test_staging_units test_staging_race_seed; do
	run memcheck "$t"
done
for tool in racecheck synccheck; do
	for t in test_load_async test_reader_data; do
		run "$tool" "$t"
	done
	for t in test_device_events test_staging_race_seed; do
		run "$tool" "$t" FERRY_CUDA_GATE=kernel
	done
done
echo "sanitize: $failed runs failed"
exit "$failed"
