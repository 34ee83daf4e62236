# What the shell tests share; a test sets NAME and sources it:
#     NAME=cli-files; . "$(dirname "$0")/shharness.sh"
# BUILD (FERRY_BUILD, default build), FERRY (its tool, an absolute path: a
# test may change directory), PY (PYTHON, default /usr/bin/python3), TMP (a
# temporary directory removed on exit), and fail, run and finish.
BUILD=${FERRY_BUILD:-build}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$BUILD/ferry" ] || { echo "FAIL: $BUILD/ferry is not built"; exit 1; }
FERRY=$(cd "$BUILD" && pwd)/ferry
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ferry-$NAME-XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
failures=0

# fail WHAT: counts a failure and prints it.
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# run WANT CMD...: runs CMD with its output in $TMP/out and $TMP/err; an exit
# status other than WANT is a failure, shown with the output's first lines.
run() {
	want=$1
	shift
	"$@" >"$TMP/out" 2>"$TMP/err"
	got=$?
	[ "$got" -eq "$want" ] || {
		fail "$* exited $got, expected $want"
		sed 's/^/    out: /' "$TMP/out" | head -n 10
		sed 's/^/    err: /' "$TMP/err" | head -n 10
	}
}

# finish [MESSAGE]: exits 1 after failures, else prints MESSAGE (ok) and exits 0.
finish() {
	if [ "$failures" -ne 0 ]; then
		echo "$failures failures"
		exit 1
	fi
	echo "${1:-ok}"
	exit 0
}
