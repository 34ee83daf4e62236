#!/bin/sh
# ferry info and ferry read take FILE.npz:KEY for an .npz archive's member
# (tests/npz_cases.py writes the archives): info prints the member's header
# (text and --json), read loads stored and deflated members (--dump writes
# exactly the bytes np.load gives), an archive without a key and a missing
# key fail naming the file (the missing key's message lists the archive's
# keys), a corrupt member fails naming it; read --root DIR --key KEY reads a
# dataset of archives, each sample's bytes as np.load gives them, and with
# --on-error skip names an archive without the key with its member's reason. A build
# without libdeflate (ferry env's npz: line says so) must refuse each deflated
# member instead, naming the file, the member and libdeflate; it reads a dataset
# of stored archives, and the test ends in a skip that counts the refusals.
# FERRY_BUILD names the build directory (default build). Exit 0 pass, 1 fail, 77 skip.
NAME=cli-npz; . "$(dirname "$0")/shharness.sh"
"$PY" tests/npz_cases.py "$TMP/c" >"$TMP/gen.log" 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "skip: numpy is not installed for $PY"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: tests/npz_cases.py"; cat "$TMP/gen.log"; exit 1; }
export FERRY_DEVICE=host
C=$TMP/c
npz_line=$("$FERRY" env | grep '^npz:') || fail "ferry env has no npz: line"
case $npz_line in *"stored and deflated"*) inflates=1 ;; *) inflates=0 ;; esac
refused=0
# Without libdeflate: ferry COMMAND... FILE:KEY must fail naming both and libdeflate.
check_refusal() {
	member=$1
	shift
	"$FERRY" "$@" "$member" >"$TMP/out" 2>&1 && fail "without libdeflate, $* $member succeeded"
	grep -qF "${member%:*}: member '${member##*:}': deflated members need libdeflate" "$TMP/out" ||
		fail "without libdeflate, $* $member: $(cat "$TMP/out")"
	refused=$((refused + 1))
}

"$FERRY" info "$C/savez.npz:t_f4" >"$TMP/out" 2>&1 || fail "info of a stored member: $(cat "$TMP/out")"
grep -q "savez.npz:t_f4: version 1.0, float32, shape (7, 13), C order" "$TMP/out" ||
	fail "info text: $(cat "$TMP/out")"
if [ $inflates = 1 ]; then
	"$FERRY" info --json "$C/savez_compressed.npz:big_fortran" >"$TMP/out" 2>&1 ||
		fail "info --json of a deflated member: $(cat "$TMP/out")"
	grep -q '"dtype": "float32", "shape": \[31, 29\], "fortran_order": true, "byteswapped": true' "$TMP/out" ||
		fail "info --json: $(cat "$TMP/out")"
else
	check_refusal "$C/savez_compressed.npz:big_fortran" info --json
fi

set -- "$C/savez.npz:large"
for m in "$C/savez_compressed.npz:zeros" "$C/zip64_hand.npz:y"; do
	if [ $inflates = 1 ]; then set -- "$@" "$m"; else check_refusal "$m" read --quiet; fi
done
"$FERRY" read --quiet "$@" >"$TMP/out" 2>&1 || fail "read of members: $(cat "$TMP/out")"
dm=big_f8 # a deflated member; without libdeflate, a stored one of the same archive
[ $inflates = 1 ] || { check_refusal "$C/descriptors.npz:$dm" read --quiet; dm=t_f4; }
"$FERRY" read --quiet --dump "$TMP/dump" "$C/descriptors.npz:$dm" >"$TMP/out" 2>&1 ||
	fail "read --dump of a member: $(cat "$TMP/out")"
dumped=$(find "$TMP/dump" -type f)
cmp -s "$dumped" "$C/descriptors.npz.$dm.bin" || fail "--dump of descriptors.npz:$dm differs from np.load's bytes"

"$FERRY" info "$C/savez.npz" >"$TMP/out" 2>&1 && fail "info of an archive without a key succeeded"
grep -q "savez.npz: a zip archive (.npz)" "$TMP/out" || fail "no key: $(cat "$TMP/out")"
"$FERRY" read "$C/savez.npz:nope" >"$TMP/out" 2>&1 && fail "read of a missing key succeeded"
grep -q "member 'nope': no such member; the archive holds 22: 't_?', 't_i1'" "$TMP/out" ||
	fail "missing key: $(cat "$TMP/out")"
"$FERRY" read "$C/err_crc_stored.npz:a" >"$TMP/out" 2>&1 && fail "read of a corrupt member succeeded"
grep -q "err_crc_stored.npz: member 'a': CRC-32 mismatch" "$TMP/out" || fail "bad CRC: $(cat "$TMP/out")"
# The dataset reader over archives: --key, every sample's bytes against np.load's.
stored=
[ $inflates = 1 ] || stored=stored
"$PY" tests/npz_dataset.py "$TMP/ds" 6 $stored >"$TMP/gen.log" 2>&1 ||
	fail "tests/npz_dataset.py: $(cat "$TMP/gen.log")"
"$FERRY" read --root "$TMP/ds" --key x --quiet --dump "$TMP/dsdump" >"$TMP/out" 2>&1 ||
	fail "read --root --key: $(cat "$TMP/out")"
for k in 0 1 2 3 4 5; do
	cmp -s "$TMP/dsdump/e0_b${k}_0.bin" "$TMP/ds/f00$k.x.bin" ||
		fail "read --root --key x: sample $k differs from np.load(f00$k.npz)['x']"
done
# --on-error skip names each skipped archive with its member's reason.
mkdir "$TMP/skip" && cp "$TMP/ds/f000.npz" "$TMP/ds.bad.npz" "$TMP/skip/" ||
	fail "cannot copy archives"
"$FERRY" read --root "$TMP/skip" --key x --on-error skip >"$TMP/out" 2>&1 ||
	fail "read --key --on-error skip: $(cat "$TMP/out")"
grep -q "skipped $TMP/skip/ds.bad.npz: member 'x': no such member" "$TMP/out" ||
	fail "read --key --on-error skip: no member's reason: $(cat "$TMP/out")"
"$FERRY" read --root "$TMP/ds" --key x --verify >"$TMP/out" 2>&1
[ $? -eq 2 ] || fail "read --key --verify is not a usage error"
"$FERRY" read --help | grep -q -- "--key KEY" || fail "read --help does not name --key"
"$FERRY" info --help | grep -q "FILE.npz:KEY" || fail "info --help does not name FILE.npz:KEY"
"$FERRY" read --help | grep -q "FILE.npz:KEY" || fail "read --help does not name FILE.npz:KEY"

[ $failures -eq 0 ] || exit 1
echo "ok: members through ferry info and ferry read"
if [ $refused -gt 0 ]; then
	echo "skip: this build has no libdeflate: $refused deflated cases checked only for their refusal"
	exit 77
fi
