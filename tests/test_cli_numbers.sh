#!/bin/sh
# The ferry tool's numeric options never wrap around: a value that does not fit
# its destination, a negative value for an unsigned option ("-1", " -1"),
# trailing bytes, a leading space and an empty string are each refused with
# exit status 2 and one line "ferry: OPTION VALUE: ..." before anything is
# written; a shape whose payload overflows a .npy file is refused by ferry gen.
# FERRY_BUILD names the build directory (default build). Exit 0 pass, 1 fail.
# A tool that wrapped a shape around would write gigabytes: stop it at 16 MB.
NAME=cli-numbers; . "$(dirname "$0")/shharness.sh"
ulimit -f 32768

# refused OPTION VALUE CMD...: CMD (which passes OPTION VALUE) must exit 2 with
# nothing on stdout and one line on stderr naming OPTION and VALUE (a value
# that wrapped to endless epochs is stopped after 20 s).
refused() {
	option=$1 value=$2
	shift 2
	timeout 20 "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	shown=$value
	[ -n "$value" ] || shown="''"
	if [ $rc -ne 2 ] || [ -s "$TMP/out" ] || [ "$(wc -l <"$TMP/err")" -ne 1 ] ||
		! grep -qF -- "ferry: $option $shown: " "$TMP/err"; then
		fail "$option '$value': exit $rc, wanted 2 and one line 'ferry: $option $shown: ...'"
		sed 's/^/    out: /' "$TMP/out" | head -n 5
		sed 's/^/    err: /' "$TMP/err" | head -n 5
	fi
}

# accepted CMD...: CMD must exit 0.
accepted() {
	"$@" >"$TMP/out" 2>"$TMP/err" || {
		fail "$* exited $?"
		sed 's/^/    err: /' "$TMP/err" | head -n 5
	}
}

"$FERRY" gen --out "$TMP/d" --files 4 --size 4k >/dev/null || { echo "FAIL: ferry gen"; exit 1; }
D=$TMP/d

# ---- ferry gen: shapes whose payload overflows, and its counts ----
for shape in 4294967297x4294967297 3037000500x3037000500 9223372036854775807x2 \
	4294967297x4294967297x0 0x9223372036854775807; do
	refused --shape "$shape" "$FERRY" gen --out "$TMP/huge" --files 1 --shape "$shape" --dtype uint8
	grep -q "too large" "$TMP/err" || fail "--shape $shape: the reason is not 'too large'"
done
refused --shape 3037000499x3037000499 "$FERRY" gen --out "$TMP/huge" --shape 3037000499x3037000499 \
	--dtype float64
refused --shape 9223372036854775808 "$FERRY" gen --out "$TMP/huge" --shape 9223372036854775808
refused --shape -1x3 "$FERRY" gen --out "$TMP/huge" --shape -1x3
[ -e "$TMP/huge" ] && fail "ferry gen created its directory for a refused shape"
for v in 0 -1 " -1" 4294967297 100000001 "" 5x " 5" 4i; do
	refused --files "$v" "$FERRY" gen --out "$TMP/huge" --files "$v"
done
for v in -1 " -1" 18446744073709551616 "" 1x 0x10; do
	refused --seed "$v" "$FERRY" gen --out "$TMP/huge" --files 1 --seed "$v"
done
for v in -1 18446744073709551615 9223372036854775807 ""; do
	refused --size "$v" "$FERRY" gen --out "$TMP/huge" --files 1 --size "$v" --dtype uint8
done
[ -e "$TMP/huge" ] && fail "ferry gen created its directory for a refused option"
# What fits is still written: a zero dimension beside large ones, the largest seed.
accepted "$FERRY" gen --out "$TMP/empty" --files 1 --shape 3x0x4294967297 --dtype uint8 \
	--seed 18446744073709551615
accepted "$FERRY" info "$TMP/empty/sample_000000.npy"
grep -q "uint8, shape (3, 0, 4294967297), .* 0 bytes" "$TMP/out" || fail "gen --shape 3x0x4294967297: $(cat "$TMP/out")"

# ---- ferry read (dataset reader): shard, counts, seed, limits of ferry.h ----
for v in 4294967297/2 -1/2 " 1/2" 1/-2 1/4294967298 1/1073741825 2/2 1/2x /2 1/ ""; do
	refused --shard "$v" "$FERRY" read --root "$D" --shard "$v"
done
accepted "$FERRY" read --root "$D" --shard 1/2 --order
[ "$(wc -l <"$TMP/out")" -eq 2 ] || fail "--shard 1/2 of 4 files: $(wc -l <"$TMP/out") samples, wanted 2"
for v in -1 " 1" 4294967297 16777217 0 "" 1x; do
	refused --batch "$v" "$FERRY" read --root "$D" --batch "$v"
done
for v in -1 " -1" 18446744073709551616 "" 2x; do
	refused --epochs "$v" "$FERRY" read --root "$D" --epochs "$v"
	refused --seed "$v" "$FERRY" read --root "$D" --shuffle --seed "$v"
done
for opt in --threads --prefetch; do
	for v in -1 " 4" 0 1025 4294967297 ""; do
		refused $opt "$v" "$FERRY" read --root "$D" $opt "$v"
	done
done
# The largest values ferry.h allows pass the parser (--help: without running).
accepted "$FERRY" read --root "$D" --shard 1073741823/1073741824 --batch 16777216 \
	--threads 1024 --prefetch 1024 --epochs 18446744073709551615 --seed 18446744073709551615 --help
accepted "$FERRY" read --root "$D" --threads 2 --prefetch 1 --batch 3 --epochs 2 --seed 7 --shuffle
refused --roi-start 1,x "$FERRY" read --root "$D" --roi-start 1,x
refused --roi-axes 32 "$FERRY" read --root "$D" --roi-axes 32
refused --fill 1e999 "$FERRY" read --root "$D" --fill 1e999

# ---- ferry read FILE... and ferry bench ----
for v in -1 " 5" 0 1025 4294967297 ""; do
	refused --threads "$v" "$FERRY" read --threads "$v" "$D/sample_000000.npy"
done
accepted "$FERRY" read --threads 3 "$D/sample_000000.npy"
accepted "$FERRY" read --threads 1024 --help
# Parsed before --help: a value that wrapped around would be accepted.
for v in -18446744073709551615 " 4" 65 ""; do
	"$FERRY" bench --threads "$v" --help >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[ $rc -eq 2 ] && grep -qF -- "--threads" "$TMP/err" || fail "bench --threads '$v': exit $rc"
done

finish
