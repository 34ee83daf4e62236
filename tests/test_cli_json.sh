#!/bin/sh
# `ferry info --json` writes valid JSON (and valid UTF-8) whatever bytes a path
# holds: control characters as \u00XX, valid UTF-8 as is, each byte of invalid
# UTF-8 as \udcXX, so that os.fsencode(json.loads(line)["path"]) gives back the
# exact name. FERRY_BUILD names the build directory (default build).
# Exit 0 pass, 1 fail, 77 skip (no Python).
BUILD=${FERRY_BUILD:-build}
FERRY=$BUILD/ferry
PY=${PYTHON:-/usr/bin/python3}
[ -x "$FERRY" ] || { echo "FAIL: $FERRY is not built"; exit 1; }
command -v "$PY" >/dev/null 2>&1 || { echo "skip: no $PY"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ferry-cli-json-XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM

"$FERRY" gen --out "$TMP/gen" --files 1 --size 4k >/dev/null || { echo "FAIL: ferry gen"; exit 1; }
# Copies of one file under hostile names: 0xff with a control byte, ESC, valid
# 2-, 3- and 4-byte UTF-8, invalid UTF-8 (overlong, cut, surrogate, past
# U+10FFFF, a lone continuation byte), C1 CSI, DEL, a quote and a backslash.
"$PY" - "$TMP/gen/sample_000000.npy" "$TMP/names" <<'EOF' || { echo "FAIL: cannot make the files"; exit 1; }
import os, shutil, sys
src, out = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
os.mkdir(out)
names = [b"ff\xff\x01name.npy", b"esc\x1b[31m.npy", b"tab\t.npy",
         b"utf8-\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80.npy",
         b"bad-\xc0\xaf-\xe2\x82-\xed\xa0\x80-\xf4\x90\x80\x80-\x80.npy",
         b"c1-\xc2\x9b-del\x7f-quote\"-back\\.npy"]
for n in names:
    shutil.copyfile(src, os.path.join(out, n))
EOF

"$FERRY" info --json "$TMP"/names/* >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: ferry info --json exited $rc"; cat "$TMP/err"; exit 1; }

# Every line: strict UTF-8, JSON, no raw control byte (C0, DEL, C1), and its
# path the exact bytes of the name given, in order.
"$PY" -c 'import json, os, sys
raw = open(sys.argv[1], "rb").read()
want = [os.fsencode(a) for a in sys.argv[2:]]
lines = raw.decode("utf-8").splitlines()
assert len(lines) == len(want), (len(lines), len(want))
for line, path in zip(lines, want):
    got = os.fsencode(json.loads(line)["path"])
    assert got == path, (got, path)
    for ch in line:
        assert not (ord(ch) < 0x20 or 0x7f <= ord(ch) < 0xa0), ("raw control", line)
for esc in (b"\\udcff\\u0001name", b"esc\\u001b[31m", b"tab\\u0009", b"\\u009b", b"del\\u007f",
            b"quote\\\"-back\\\\", b"-\\udcc0\\udcaf-\\udce2\\udc82-\\udced\\udca0\\udc80-",
            b"\\udcf4\\udc90\\udc80\\udc80-\\udc80.npy", "utf8-é-€-😀".encode()):
    assert esc in raw, ("missing", esc)
print("ok: %d paths round-trip" % len(lines))' "$TMP/out" "$TMP"/names/* || {
	echo "FAIL: ferry info --json output:"
	od -c "$TMP/out" | head -n 40
	exit 1
}
exit 0
