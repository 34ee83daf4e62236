#!/bin/sh
# The ferry tool never loses data silently: read --dump keeps the files' paths
# relative to the directory they share (ds/s.npy and d3/s.npy do not collide)
# and never overwrites a file, and makes OUTDIR with its parents (in both read
# modes); gen refuses a non-empty
# directory that does not hold its own dataset unless --force, and replacing
# its own dataset leaves no file of the old one; gen creates a missing
# directory's parents, and names a parent that is a file; --on-error skip names every
# skipped file with its reason, on stderr and in --json.
# FERRY_BUILD names the build directory (default build). Exit 0 pass, 1 fail, 77 skip.
NAME=cli-files; . "$(dirname "$0")/shharness.sh"
command -v "$PY" >/dev/null 2>&1 || { echo "skip: no $PY"; exit 77; }

# ---- read --dump ----
mkdir "$TMP/work" && cd "$TMP/work" || exit 1
"$FERRY" gen --out ds --files 2 --size 4k --seed 1 --quiet &&
	"$FERRY" gen --out d3 --files 2 --size 8k --seed 2 --quiet || { echo "FAIL: ferry gen"; exit 1; }
run 0 "$FERRY" read --dump out ds/sample_000000.npy d3/sample_000000.npy ds/sample_000001.npy
for f in ds/sample_000000 d3/sample_000000 ds/sample_000001; do
	tail -c "$(($(wc -c <"$f.npy") - 128))" "$f.npy" | cmp -s - "out/$f.bin" ||
		fail "--dump: out/$f.bin is not $f.npy's payload"
done
grep -qxF "dump: 3 files written under out, each at its path relative to $(pwd -P)" "$TMP/out" ||
	fail "read --dump does not say where: $(cat "$TMP/out")"
# Absolute paths and ./.. in them: relative to the directory the files share.
run 0 "$FERRY" read --dump out2 "$TMP/work/ds/./sample_000000.npy" "$TMP/work/d3/../d3/sample_000001.npy"
[ -f out2/ds/sample_000000.bin ] && [ -f out2/d3/sample_000001.bin ] ||
	fail "--dump of absolute paths: $(cd out2 && find . -type f)"
# An existing file is never overwritten: that file fails, the others go on.
cp out/ds/sample_000000.bin keep.bin
run 1 "$FERRY" read --dump out ds/sample_000000.npy d3/sample_000001.npy
grep -q "^ferry: ds/sample_000000.npy: cannot write its dump: File exists (--dump never overwrites a file)$" "$TMP/err" ||
	fail "--dump over an existing file: $(cat "$TMP/err")"
cmp -s keep.bin out/ds/sample_000000.bin || fail "--dump overwrote out/ds/sample_000000.bin"
[ -f out/d3/sample_000001.bin ] || fail "--dump stopped at the existing file"
grep -q "^read: 1 files, .*, 1 failed$" "$TMP/out" || fail "--dump over a file: $(cat "$TMP/out")"
run 0 "$FERRY" read --root ds --dump dsout
# OUTDIR is made with its parents, in both modes.
run 0 "$FERRY" read --dump new/a/out ds/sample_000000.npy
[ -f new/a/out/sample_000000.bin ] || fail "--dump new/a/out: $(find new -type f)"
run 0 "$FERRY" read --root ds --dump new/b/out
[ "$(ls new/b/out | wc -l | tr -d ' ')" -eq 2 ] || fail "--root --dump new/b/out: $(ls new/b/out)"
for mode in "ds/sample_000000.npy" "--root ds"; do
	run 1 "$FERRY" read --dump keep.bin/out $mode
	grep -qx "ferry: keep.bin/out: cannot create the directory: Not a directory" "$TMP/err" ||
		fail "read --dump under a file ($mode): $(cat "$TMP/err")"
done
run 1 "$FERRY" read --root ds --dump dsout
grep -qx "ferry: ds/sample_00000[01].npy: cannot write its dump: File exists (--dump never overwrites a file)" "$TMP/err" ||
	fail "read --root --dump twice: $(cat "$TMP/err")"

# ---- gen: its own directory only ----
run 0 "$FERRY" gen --out g --files 5 --size 4k
run 0 "$FERRY" gen --out g --files 3 --size 8k
[ "$(ls g | wc -l | tr -d ' ')" -eq 3 ] || fail "gen over its own dataset left $(ls g)"
grep -q "removed 2 files of the dataset that was there" "$TMP/out" || fail "gen: $(cat "$TMP/out")"
run 0 "$FERRY" info g/sample_000002.npy
grep -q "8192 bytes" "$TMP/out" || fail "gen did not rewrite g: $(cat "$TMP/out")"
echo notes >g/notes.txt
run 1 "$FERRY" gen --out g --files 2 --size 4k
[ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^ferry: g: not empty, and 'notes.txt' is not a file ferry gen writes: .*--force" "$TMP/err" ||
	fail "gen into a foreign directory: $(cat "$TMP/err")"
run 0 "$FERRY" info g/sample_000002.npy
grep -q "8192 bytes" "$TMP/out" || fail "a refused gen changed g"
run 0 "$FERRY" gen --out g --files 2 --size 4k --force --json
"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["files"] == 2 and d["removed_stale"] == 1, d' \
	"$TMP/out" || fail "gen --force --json: $(cat "$TMP/out")"
[ -f g/notes.txt ] && [ ! -e g/sample_000002.npy ] || fail "gen --force: $(ls g)"
run 1 "$FERRY" demo --dir g --files 1 --size 4k
grep -q "not a file ferry gen writes" "$TMP/err" || fail "demo --dir into a foreign directory: $(cat "$TMP/err")"
run 0 "$FERRY" gen --out new/a/b --files 2 --size 4k
[ -f new/a/b/sample_000001.npy ] || fail "gen into missing parents: $(ls -R new 2>&1)"
run 1 "$FERRY" gen --out g/notes.txt/x --files 1 --size 4k
grep -q "^ferry: g/notes.txt/x: cannot create the directory: Not a directory" "$TMP/err" ||
	fail "gen under a file: $(cat "$TMP/err")"

# ---- skipped files are named ----
"$FERRY" gen --out sk --files 4 --size 4k --quiet || fail "gen sk"
echo "not an npy file" >sk/bad.npy
head -c 100 sk/sample_000001.npy >sk/short.npy
run 0 "$FERRY" read --root sk --on-error skip --epochs 2 --batch 2
grep -q "^ferry: skipped sk/bad.npy: bad magic" "$TMP/err" || fail "skip: bad.npy not named: $(cat "$TMP/err")"
grep -q "^ferry: skipped sk/short.npy: .*past the end of the file" "$TMP/err" ||
	fail "skip: short.npy not named: $(cat "$TMP/err")"
[ "$(grep -c '^ferry: skipped' "$TMP/err")" -eq 2 ] || fail "skip: $(cat "$TMP/err")"
grep -q ", 4 files skipped, " "$TMP/out" || fail "skip summary: $(cat "$TMP/out")"
run 0 "$FERRY" read --root sk --on-error skip --json --shuffle --seed 3
"$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["files_skipped"] == 2 and [s["path"] for s in d["skipped"]] == ["sk/bad.npy", "sk/short.npy"], d
assert d["skipped"][0]["error"] == "bad magic", d' "$TMP/out" || fail "skip --json: $(cat "$TMP/out")"

finish
