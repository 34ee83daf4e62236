#!/bin/sh
# Runs every test program once, each with a timeout, and ends with one line:
# "N passed, N failed, N skipped". Exit codes: 0 pass, 77 skip, anything else fail.
# Variables: BUILD (build dir), TEST_TIMEOUT (seconds, default 300), TESTS (a
# space-separated list of names to run instead of all).
# `sh tests/run.sh --names` prints every test's name and runs none.
BUILD=${BUILD:-build}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
LOGS=$BUILD/test-logs
mkdir -p "$LOGS"
PYTHON=${PYTHON:-/usr/bin/python3}
export FERRY_BUILD="$BUILD" PYTHON
# Sanitizer builds: stop at the first report, and count leaks as failures;
# the soak runs 10 s instead of 20 (CI runs three builds in 15 minutes).
case "$BUILD" in
*tsan*) export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}" ;;
*asan*) export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1 abort_on_error=0}" ;;
esac
case "$BUILD" in
*san*) export SOAK_SECONDS="${SOAK_SECONDS:-10}" ;;
esac

passed=0 failed=0 skipped=0 failed_names="" skipped_names=""

# Every test's name: one a tests/test_*.c (its program in $BUILD/tests), then
# one a tests/test_*.py or .sh.
all_names() {
	{ ls tests/test_*.c; ls tests/test_*.py tests/test_*.sh; } 2>/dev/null |
		sed 's|.*/||; s/\.[a-z]*$//'
}

# The file that runs test $1: its script, else its program. A name with
# neither gives the program's path, which then fails: a program that did not
# build, or a name misspelt in TESTS, does not go unseen, and a program left
# in $BUILD by a test since removed does not run.
test_file() {
	for f in "tests/$1.py" "tests/$1.sh"; do
		[ -e "$f" ] && { echo "$f"; return; }
	done
	echo "$BUILD/tests/$1"
}

list_tests() {
	for t in ${TESTS:-$(all_names)}; do
		test_file "$t"
	done
}

# Python loads $BUILD/libferry.so: under ASan the runtime must come first (and
# the interpreter's own leaks are not ours); TSan cannot be preloaded into it.
run_python() {
	case "$BUILD" in
	*asan*) LD_PRELOAD="$(${CC:-cc} -print-file-name=libasan.so)" \
		ASAN_OPTIONS="detect_leaks=0" timeout -k 10 "$TEST_TIMEOUT" "$PYTHON" "$1" ;;
	*tsan*) echo "skip: Python tests do not run under ThreadSanitizer"; return 77 ;;
	*) timeout -k 10 "$TEST_TIMEOUT" "$PYTHON" "$1" ;;
	esac
}

run_one() {
	case "$1" in
	*.py) run_python "$1" ;;
	*.sh) timeout -k 10 "$TEST_TIMEOUT" sh "$1" ;;
	*) timeout -k 10 "$TEST_TIMEOUT" "$1" ;;
	esac
}

[ "${1:-}" = --names ] && { all_names; exit 0; }

for t in $(list_tests); do
	name=$(basename "$t"); name=${name%.py}; name=${name%.sh}
	log="$LOGS/$name.log"
	start=$(date +%s)
	run_one "$t" >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0) passed=$((passed + 1)); echo "PASS $name (${secs}s)" ;;
	77) skipped=$((skipped + 1)); skipped_names="$skipped_names $name"
	    echo "SKIP $name: $(grep -m1 '^skip:' "$log" | sed 's/^skip: //')" ;;
	*) failed=$((failed + 1)); failed_names="$failed_names $name"
	   [ $rc -eq 124 ] && echo "FAIL $name: timed out after ${TEST_TIMEOUT}s" || echo "FAIL $name (exit $rc)"
	   tail -n 20 "$log" | sed 's/^/    /' ;;
	esac
done
[ -n "$skipped_names" ] && echo "skipped:$skipped_names"
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
