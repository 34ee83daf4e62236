#!/bin/sh
# ferry read --rows: every row along axis 0 of every file is a sample. With
# --verify every row (and a region of interest on a row's axes) matches an
# independent CPU read, for C-order, Fortran-order and big-endian files;
# --order names each sample's file and row.
FERRY=${FERRY_BUILD:-build}/ferry
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
for kind in c fortran big; do
	case $kind in c) extra="" ;; fortran) extra=--fortran ;; big) extra=--big-endian ;; esac
	"$FERRY" gen --out "$D/$kind" --files 3 --shape 7x4x6 --dtype uint16 $extra --quiet ||
		fail "gen $kind"
	out=$("$FERRY" read --root "$D/$kind" --rows --batch 5 --shuffle --seed 2 --verify \
		--roi-start 1,2 --roi-shape 2,3 2>&1) || fail "read --rows $kind: $out"
	echo "$out" | grep -q "^verify: 21 samples match" || fail "$kind: $out"
done
order=$("$FERRY" read --root "$D/c" --rows --batch 4 --order 2>/dev/null) || fail "--order"
[ "$(echo "$order" | wc -l)" -eq 21 ] || fail "21 rows: $order"
echo "$order" | sed -n 8p | grep -q "sample_000001.npy	row=0$" || fail "the 8th sample is row 0 of file 1: $order"
echo "ok: --rows reads and verifies every row of C, Fortran and big-endian files"
