#!/bin/sh
# The ferry tool end to end: gen, read --verify/--dump, info (--json), errors
# that name their file and let the other files through, --help, env, demo.
# FERRY_BUILD names the build directory (default build). Exit 0 pass, 1 fail.
NAME=cli; . "$(dirname "$0")/shharness.sh"

# expect_grep PATTERN FILE WHAT: FILE must have a line matching PATTERN.
expect_grep() {
	grep -q -- "$1" "$2" || { fail "$3: no line matching '$1' in:"; sed 's/^/    /' "$2" | head -n 10; }
}

expect_lines() {
	n=$(wc -l <"$2" | tr -d ' ')
	[ "$n" -eq "$1" ] || { fail "$3: $n lines, expected $1:"; sed 's/^/    /' "$2" | head -n 10; }
}

# ---- help, version, env ----
run 0 "$FERRY" --help
for word in env info read gen demo FERRY_DEVICE FERRY_GPU FERRY_IO FERRY_CHUNK_SIZE \
	FERRY_ODIRECT FERRY_THREADS FERRY_TRACE FERRY_LANES FERRY_MAX_BUFFERS; do
	expect_grep "$word" "$TMP/out" "ferry --help"
done
for cmd in env info read gen demo; do
	run 0 "$FERRY" "$cmd" --help
	expect_grep "usage: ferry $cmd" "$TMP/out" "ferry $cmd --help"
done
run 2 "$FERRY"
run 2 "$FERRY" no-such-command
expect_grep "unknown command" "$TMP/err" "ferry no-such-command"
run 2 "$FERRY" gen --files 3
expect_grep "out DIR is required" "$TMP/err" "ferry gen without --out"
run 2 "$FERRY" info

run 0 "$FERRY" env
for word in device: io: staging: threads:; do
	expect_grep "$word" "$TMP/out" "ferry env"
done
# --version: one line, and no context (a bad FERRY_DEVICE does not matter).
run 0 env FERRY_DEVICE=no-such-device "$FERRY" --version
expect_lines 1 "$TMP/out" "ferry --version"
grep -q '^ferry [0-9][0-9.]*$' "$TMP/out" || fail "ferry --version: not 'ferry VERSION': $(cat "$TMP/out")"
[ -s "$TMP/err" ] && fail "ferry --version wrote to stderr: $(cat "$TMP/err")"
run 1 env FERRY_DEVICE=no-such-device "$FERRY" env
expect_grep "^ferry: " "$TMP/err" "ferry env with a bad FERRY_DEVICE"

# ---- gen, read --verify, --dump ----
run 0 "$FERRY" gen --out "$TMP/plain" --files 12 --size 64k --seed 5
expect_grep "wrote 12 files" "$TMP/out" "ferry gen"
[ "$(ls "$TMP/plain" | wc -l | tr -d ' ')" -eq 12 ] || fail "gen wrote $(ls "$TMP/plain" | wc -l) files, expected 12"
[ -f "$TMP/plain/sample_000011.npy" ] || fail "gen: sample_000011.npy is missing"

run 0 "$FERRY" gen --out "$TMP/again" --files 2 --size 64k --seed 5
cmp -s "$TMP/plain/sample_000001.npy" "$TMP/again/sample_000001.npy" || fail "gen is not deterministic"
run 0 "$FERRY" gen --out "$TMP/other" --files 2 --size 64k --seed 6
cmp -s "$TMP/plain/sample_000001.npy" "$TMP/other/sample_000001.npy" && fail "gen ignores --seed"
cmp -s "$TMP/plain/sample_000000.npy" "$TMP/plain/sample_000001.npy" && fail "gen writes one payload for two files"

run 0 "$FERRY" read --verify --dump "$TMP/dump" "$TMP"/plain/*.npy
expect_grep "^read: 12 files, 768 KiB in [0-9.]* [mu]*s ([0-9.]* [kMGT]*B/s, [a-z]* device)$" "$TMP/out" "ferry read --verify"
expect_grep "^verify: 12 of 12 files match an independent CPU read" "$TMP/out" "ferry read --verify"
# A little-endian C-order file loads as exactly its payload.
tail -c 65536 "$TMP/plain/sample_000003.npy" | cmp -s - "$TMP/dump/sample_000003.bin" ||
	fail "--dump: sample_000003.bin is not the file's payload"
run 0 "$FERRY" read --threads 1 --io posix "$TMP/plain/sample_000000.npy"

run 0 "$FERRY" gen --out "$TMP/mix" --files 40 --size 40k --mix --seed 3
run 0 "$FERRY" read --verify "$TMP"/mix/*.npy
expect_grep "^read: 40 files" "$TMP/out" "ferry read --verify of a --mix dataset"
run 0 env FERRY_CHUNK_SIZE=4k "$FERRY" read --verify "$TMP"/mix/*.npy
run 0 "$FERRY" gen --out "$TMP/odd" --files 3 --dtype complex128 --shape 7x5x3 --fortran --big-endian
run 0 "$FERRY" read --verify "$TMP"/odd/*.npy
run 0 "$FERRY" info "$TMP/odd/sample_000000.npy"
expect_grep "complex128, shape (7, 5, 3), Fortran order, byteswapped" "$TMP/out" "ferry info"

# ---- info ----
run 0 "$FERRY" info --json "$TMP"/plain/*.npy
expect_lines 12 "$TMP/out" "ferry info --json"
expect_grep '^{"path": ".*sample_000000.npy", "version": "1.0", "dtype": "float32", "shape": \[16384\], "fortran_order": false, "byteswapped": false, "data_offset": 128, "nbytes": 65536}$' \
	"$TMP/out" "ferry info --json"
if command -v python3 >/dev/null 2>&1; then
	python3 -c 'import json, sys
for line in sys.stdin: json.loads(line)' <"$TMP/out" || fail "ferry info --json is not JSON"
fi

# ---- errors: one line each naming the file, the other files still processed ----
echo "not an npy file" >"$TMP/text.npy"
head -c 1000 "$TMP/plain/sample_000000.npy" >"$TMP/short.npy"
good0=$TMP/plain/sample_000000.npy good1=$TMP/plain/sample_000001.npy
for cmd in info "read --verify"; do
	# shellcheck disable=SC2086
	run 1 "$FERRY" $cmd "$TMP/missing.npy" "$good0" "$TMP/text.npy" "$TMP/short.npy" "$good1"
	expect_lines 3 "$TMP/err" "ferry $cmd with 3 bad files"
	expect_grep "^ferry: $TMP/missing.npy: .*No such file" "$TMP/err" "ferry $cmd of a missing file"
	expect_grep "^ferry: $TMP/text.npy: .*magic" "$TMP/err" "ferry $cmd of a text file"
	expect_grep "^ferry: $TMP/short.npy: .*payload" "$TMP/err" "ferry $cmd of a truncated file"
	[ "$(grep -c "$TMP/short.npy" "$TMP/err")" -eq 1 ] || fail "ferry $cmd names a file twice"
	[ "$(grep -o "$TMP/short.npy" "$TMP/err" | wc -l)" -eq 1 ] || fail "ferry $cmd names a file twice in one line"
done
run 1 "$FERRY" info "$TMP/missing.npy" "$good0" "$TMP/text.npy" "$good1"
expect_lines 2 "$TMP/out" "ferry info goes on after errors"
run 1 "$FERRY" read "$TMP/missing.npy" "$good0" "$TMP/short.npy" "$good1"
expect_grep "^read: 2 files, 128 KiB in .*, 2 failed$" "$TMP/out" "ferry read goes on after errors"

# ---- demo ----
run 0 "$FERRY" demo --files 8 --size 256k
expect_grep "^demo: ok$" "$TMP/out" "ferry demo"
expect_grep "B/s" "$TMP/out" "ferry demo"
expect_grep "files/s" "$TMP/out" "ferry demo"
run 0 "$FERRY" demo --dir "$TMP/demo" --files 2 --size 4k
[ -f "$TMP/demo/sample_000001.npy" ] || fail "ferry demo --dir removed its dataset"

finish
