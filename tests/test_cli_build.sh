#!/bin/sh
# The build is quiet: one short line a step ("  CC      build/obj/x.o"), the
# whole command with V=1, nothing under make -s; make demo builds only the tool,
# silently (its sub-make runs with -s unless V=1), before the demo's own lines.
# Builds one object into a temporary build directory; needs make and cc.
# Exit 0 pass, 1 fail, 77 skip.
command -v make >/dev/null && command -v cc >/dev/null || { echo "skip: no make or cc"; exit 77; }
unset MAKEFLAGS MFLAGS MAKELEVEL SANITIZE  # not the flags of a make test around us
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ferry-cli-build-XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

OBJ=$TMP/b/obj/base/error.o
make --no-print-directory BUILD="$TMP/b" "$OBJ" >"$TMP/out" 2>&1 || fail "make $OBJ: $(cat "$TMP/out")"
[ "$(cat "$TMP/out")" = "  CC      $OBJ" ] || fail "quiet make printed: $(cat "$TMP/out")"
rm -f "$OBJ"
make --no-print-directory BUILD="$TMP/b" V=1 "$OBJ" >"$TMP/out" 2>&1 || fail "make V=1 $OBJ"
grep -q "^cc .* -c -o $OBJ src/base/error.c$" "$TMP/out" || grep -q " -c -o $OBJ src/base/error.c$" "$TMP/out" ||
	fail "make V=1 does not print the command: $(cat "$TMP/out")"
rm -f "$OBJ"
make -s --no-print-directory BUILD="$TMP/b" "$OBJ" >"$TMP/out" 2>&1 || fail "make -s $OBJ"
[ -s "$TMP/out" ] && fail "make -s printed: $(cat "$TMP/out")"
[ -f "$OBJ" ] || fail "make -s did not build $OBJ"

make -n --no-print-directory demo >"$TMP/out" 2>&1 || fail "make -n demo: $(cat "$TMP/out")"
grep -q "make.* -s build/ferry$" "$TMP/out" || fail "make demo does not build the tool silently: $(cat "$TMP/out")"
grep -q "^sh tools/demo.sh build$" "$TMP/out" || fail "make demo does not run the demo: $(cat "$TMP/out")"
make -n --no-print-directory demo V=1 >"$TMP/out" 2>&1
grep -q "make.* -s " "$TMP/out" && fail "make demo V=1 still builds silently: $(cat "$TMP/out")"

if [ "$failures" -ne 0 ]; then
	echo "$failures failures"
	exit 1
fi
echo "ok"
