#!/bin/sh
# What the ferry tool prints: --json on read (both modes), env, gen and demo is
# one JSON object each with the keys its --help documents; --quiet prints
# nothing on success; --verify says what it verified; small runs print units
# that fit (never "0.000 GB" or "0.00 GB/s"); the dataset summary has its
# epochs; a bad option is one line naming it and the command's --help; ferry
# read --help describes both modes and --no-header-cache; ferry --help lists
# every variable of the README's environment table.
# FERRY_BUILD names the build directory (default build). Exit 0 pass, 1 fail, 77 skip.
NAME=cli-output; . "$(dirname "$0")/shharness.sh"
command -v "$PY" >/dev/null 2>&1 || { echo "skip: no $PY"; exit 77; }

# keys WHAT KEY...: $TMP/out is one JSON object with exactly these keys.
keys() {
	what=$1
	shift
	"$PY" -c 'import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, "%d lines" % len(lines)
doc = json.loads(lines[0])
want = sys.argv[2:]
assert sorted(doc) == sorted(want), "keys %s, want %s" % (sorted(doc), sorted(want))' \
		"$TMP/out" "$@" 2>"$TMP/py" || { fail "$what: $(tail -n 1 "$TMP/py")"; head -c 600 "$TMP/out"; }
}

# value EXPR WHAT: the Python expression EXPR about the JSON object d is true.
value() {
	"$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert eval(sys.argv[2]), sys.argv[2]' "$TMP/out" "$1" 2>/dev/null || fail "$2: $1 is false in $(head -c 600 "$TMP/out")"
}

"$FERRY" gen --out "$TMP/d" --files 3 --size 4k --quiet || { echo "FAIL: ferry gen"; exit 1; }
[ -s "$TMP/out" ] && fail "gen --quiet printed: $(cat "$TMP/out")"

# ---- --json ----
run 0 env -u FERRY_ODIRECT -u FERRY_CACHE_BUDGET "$FERRY" env --json
keys "env --json" version device io staging threads direct o_direct cache_budget residency
value 'd["o_direct"] == "auto" and not d["direct"] and d["cache_budget"] > 0 and d["residency"] in ("cachestat", "mincore")' "env --json"
value 'set(d["staging"]) == {"chunk_size", "memory", "lanes", "max_buffers", "first_buffers_per_lane"} and d["staging"]["first_buffers_per_lane"] <= 4' "env --json"
run 0 env FERRY_ODIRECT=auto FERRY_CACHE_BUDGET=1G "$FERRY" env --json
value 'd["o_direct"] == "auto" and d["cache_budget"] == 1 << 30' "env --json, FERRY_CACHE_BUDGET=1G"
run 0 env FERRY_ODIRECT=1 "$FERRY" env --json
value 'd["o_direct"] == "on" and d["direct"] and d["cache_budget"] is None' "env --json, FERRY_ODIRECT=1"
run 0 env FERRY_ODIRECT=0 "$FERRY" env
grep -q "^direct:  off" "$TMP/out" || fail "env, FERRY_ODIRECT=0: no 'direct:  off' line"
run 0 env -u FERRY_ODIRECT FERRY_CACHE_BUDGET=0 "$FERRY" env
grep -q "^direct:  auto: .*budget of 0 bytes" "$TMP/out" || fail "env, auto: no budget in the direct: line"
run 0 env FERRY_PIN_BUDGET=0 "$FERRY" env
grep -q "^mapped:  off: FERRY_PIN_BUDGET is 0" "$TMP/out" || fail "env, FERRY_PIN_BUDGET=0: no 'mapped:  off' line"
run 0 env FERRY_PIN_BUDGET=1G "$FERRY" env
grep -q "^mapped:  .*pin budget of 1024 MiB" "$TMP/out" || fail "env, FERRY_PIN_BUDGET=1G: no budget in the mapped: line"
run 0 "$FERRY" read --json --verify "$TMP"/d/*.npy
keys "read --json" device io files failed bytes seconds bytes_per_second verified dump_dir results
value 'd["files"] == 3 and d["verified"] == 3 and d["bytes"] == 12288 and len(d["results"]) == 3' "read --json"
run 1 "$FERRY" read --json "$TMP/d/sample_000000.npy" "$TMP/missing.npy"
value 'd["failed"] == 1 and d["results"][1]["ok"] is False and "No such file" in d["results"][1]["error"]' "read --json, a missing file"
run 0 "$FERRY" read --json --root "$TMP/d" --batch 2 --epochs 2 --verify
keys "read --root --json" device epochs batches samples bytes_delivered bytes_read seconds \
	bytes_per_second verified files_buffered files_direct files_mapped files_skipped skipped \
	per_epoch error
value 'd["epochs"] == 2 and d["samples"] == 6 and d["verified"] == 6 and d["skipped"] == []' "read --root --json"
value 'd["files_buffered"] == 6 and d["files_direct"] == 0 and d["files_mapped"] == 0' "read --root --json: small files buffered"
value 'len(d["per_epoch"]) == 2 and [e["bytes_delivered"] for e in d["per_epoch"]] == [12288, 12288]' "read --root --json: per_epoch"
value 'sum(e["files_buffered"] for e in d["per_epoch"]) == 6 and 0 < sum(e["seconds"] for e in d["per_epoch"]) <= d["seconds"] and all(e["cpu_seconds"] >= 0 for e in d["per_epoch"])' "read --root --json: per_epoch adds up"
mkdir -p "$TMP/bad" && cp "$TMP"/d/*.npy "$TMP/bad/" && echo junk >"$TMP/bad/zz.npy"
run 1 "$FERRY" read --json --root "$TMP/bad" --batch 1 --epochs 2
value 'd["error"] and len(d["per_epoch"]) == 1 and d["per_epoch"][0]["bytes_delivered"] == 12288' "read --root --json, an epoch cut short: per_epoch"
run 0 "$FERRY" gen --json --out "$TMP/g" --files 2 --size 8k
keys "gen --json" dir files failed removed_stale payload_bytes seed dtype fortran_order byteorder seconds
value 'd["files"] == 2 and d["payload_bytes"] == 16384 and d["dtype"] == "float32"' "gen --json"
run 0 "$FERRY" demo --json --files 2 --size 4k
keys "demo --json" device io dir kept files verified failed bytes seconds bytes_per_second \
	files_per_second ok
value 'd["ok"] and d["verified"] == 2 and set(d["seconds"]) == {"write", "load", "verify"}' "demo --json"
for cmd in env read gen demo; do
	"$FERRY" "$cmd" --help | grep -q -- '--json' || fail "ferry $cmd --help does not document --json"
done

# ---- --quiet, --verify, units, epochs ----
for cmd in "read --quiet $TMP/d/sample_000000.npy" "read --quiet --root $TMP/d" \
	"demo --quiet --files 1 --size 4k" "gen --quiet --out $TMP/q --files 1 --size 4k"; do
	# shellcheck disable=SC2086
	run 0 "$FERRY" $cmd
	[ -s "$TMP/out" ] && fail "ferry $cmd printed: $(head -n 2 "$TMP/out")"
done
run 0 "$FERRY" read --verify "$TMP"/d/*.npy
grep -q "^verify: 3 of 3 files match an independent CPU read of the file byte for byte" "$TMP/out" ||
	fail "read --verify does not say what it verified: $(cat "$TMP/out")"
run 0 "$FERRY" read --root "$TMP/d" --epochs 2 --verify
grep -q "^read: 2 epochs, 6 batches, 6 samples, 24.0 KiB delivered" "$TMP/out" ||
	fail "dataset summary: $(cat "$TMP/out")"
grep -q "^verify: 6 samples match" "$TMP/out" || fail "read --root --verify: $(cat "$TMP/out")"
[ "$(grep -c "^  epoch [12]: 12.0 KiB in .* CPU s/GB, [0-9]* files buffered, 0 direct, 0 mapped$" "$TMP/out")" = 2 ] ||
	fail "read --root --epochs 2: not one line an epoch: $(cat "$TMP/out")"
run 0 "$FERRY" read --root "$TMP/d"
grep -q "^  epoch" "$TMP/out" && fail "read --root, one epoch: an epoch line: $(cat "$TMP/out")"
for cmd in "read $TMP/d/sample_000000.npy" "read --root $TMP/d" "demo --files 1 --size 4k" \
	"gen --out $TMP/u --files 1 --size 4k"; do
	# shellcheck disable=SC2086
	run 0 "$FERRY" $cmd
	grep -Eq '(^|[^0-9.])0\.0+ ([kMG]?B|GiB|[kMG]?B/s|s)\b' "$TMP/out" && fail "ferry $cmd prints a zero figure: $(cat "$TMP/out")"
done
run 0 "$FERRY" read "$TMP/d/sample_000000.npy"
grep -Eq '^read: 1 files, 4.00 KiB in [0-9.]+ [mu]?s \([0-9.]+ [kMG]?B/s, [a-z]+ device\)$' "$TMP/out" ||
	fail "read of one small file: $(cat "$TMP/out")"

# ---- usage errors: one line naming the option and the command's help ----
for cmd in env info read gen demo bench; do
	run 2 "$FERRY" "$cmd" --bogus
	[ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -qx "ferry $cmd: unknown option '--bogus' (try 'ferry $cmd --help')" "$TMP/err" ||
		fail "ferry $cmd --bogus: $(cat "$TMP/err")"
	[ -s "$TMP/out" ] && fail "ferry $cmd --bogus printed on stdout"
done
run 2 "$FERRY" read --root "$TMP/d" --bogus=1
grep -qx "ferry read: unknown option '--bogus' (try 'ferry read --help')" "$TMP/err" ||
	fail "ferry read --root D --bogus=1: $(cat "$TMP/err")"
run 2 "$FERRY" read --dump
grep -qx "ferry read: option '--dump' needs a value (try 'ferry read --help')" "$TMP/err" ||
	fail "ferry read --dump: $(cat "$TMP/err")"
run 2 "$FERRY" read --verify=yes x.npy
grep -qx "ferry read: option '--verify' takes no value (try 'ferry read --help')" "$TMP/err" ||
	fail "ferry read --verify=yes: $(cat "$TMP/err")"
run 2 "$FERRY" env extra
grep -qx "ferry env: unexpected argument 'extra' (try 'ferry env --help')" "$TMP/err" ||
	fail "ferry env extra: $(cat "$TMP/err")"
run 2 "$FERRY" no-such-command
[ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "ferry no-such-command: $(cat "$TMP/err")"

# ---- help ----
run 0 "$FERRY" read --help
for want in "ferry read --root DIR" "Reading a dataset" "--no-header-cache parse every file's header" \
	"--json" "--quiet" "--dump OUTDIR" "epochs"; do
	grep -qF -- "$want" "$TMP/out" || fail "ferry read --help lacks '$want'"
done
cp "$TMP/out" "$TMP/help"
run 0 "$FERRY" read --root . --help
cmp -s "$TMP/out" "$TMP/help" || fail "ferry read --root . --help differs from ferry read --help"
run 0 "$FERRY" --help
if [ -x "$BUILD/tests/test_env_table" ]; then
	"$BUILD/tests/test_env_table" --print | sed 's/^| `\([A-Z_]*\)`.*/\1/' >"$TMP/names"
	[ -s "$TMP/names" ] || fail "test_env_table --print printed nothing"
	while read -r name; do
		grep -q "^  $name: " "$TMP/out" || fail "ferry --help does not list $name"
	done <"$TMP/names"
fi

finish
