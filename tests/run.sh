#!/bin/sh
# Runs every test program once, each with a timeout, and ends with one line:
# "N passed, N failed, N skipped". Exit codes: 0 pass, 77 skip, anything else fail.
# Variables: BUILD (build dir), TEST_TIMEOUT (seconds, default 300), TESTS (a
# space-separated list of names to run instead of all), TEST_JOBS (how many
# tests run at once; default one a CPU, at most 4).
# `sh tests/run.sh --names` prints every test's name and runs none.
BUILD=${BUILD:-build}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
export BUILD TEST_TIMEOUT
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

# test_name FILE: the test's name, its file's without folder and suffix.
test_name() {
	n=$(basename "$1")
	echo "${n%.*}"
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

# run_and_report FILE: runs one test, prints its verdict line (a failure's
# log tail under it) with one printf, so that the lines of tests run at once
# do not mix, and leaves its exit status in $LOGS/NAME.rc for the count.
run_and_report() {
	name=$(test_name "$1")
	log="$LOGS/$name.log"
	start=$(date +%s)
	run_one "$1" >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0) verdict="PASS $name (${secs}s)" ;;
	77) verdict="SKIP $name: $(grep -m1 '^skip:' "$log" | sed 's/^skip: //')" ;;
	124) verdict="FAIL $name: timed out after ${TEST_TIMEOUT}s
$(tail -n 20 "$log" | sed 's/^/    /')" ;;
	*) verdict="FAIL $name (exit $rc)
$(tail -n 20 "$log" | sed 's/^/    /')" ;;
	esac
	printf '%s\n' "$verdict"
	echo "$rc" >"$LOGS/$name.rc"
}

case "${1:-}" in
--names) all_names; exit 0 ;;
--one) run_and_report "$2"; exit 0 ;;
esac

# TEST_JOBS tests at once: each test is a process of its own with a temporary
# folder of its own, so none sees another's files.
JOBS=${TEST_JOBS:-$(n=$(nproc 2>/dev/null || echo 1); [ "$n" -gt 4 ] && n=4; echo "$n")}
tests=$(list_tests)
for t in $tests; do
	rm -f "$LOGS/$(test_name "$t").rc"
done
printf '%s\n' $tests | xargs -P "$JOBS" -n 1 sh "$0" --one
for t in $tests; do
	name=$(test_name "$t")
	rc=$(cat "$LOGS/$name.rc" 2>/dev/null || echo lost)
	case $rc in
	0) passed=$((passed + 1)) ;;
	77) skipped=$((skipped + 1)); skipped_names="$skipped_names $name" ;;
	*) failed=$((failed + 1)); failed_names="$failed_names $name" ;;
	esac
done
[ -n "$skipped_names" ] && echo "skipped:$skipped_names"
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
