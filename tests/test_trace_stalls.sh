#!/bin/sh
# bench/trace_stalls.py reads a FERRY_TRACE file: on a trace written by hand
# with known times it finds each gap of more than 0.3 ms in the launches and
# says what ran beside it (g: a pool's growth, r: a registration, gr: both,
# -: neither), and with --loads N sums them up to the (N+1)th load's begin;
# on the trace of a real `ferry read` (host device) it prints every section.
# Exit 0 pass, 1 fail.
NAME=trace-stalls; . "$(dirname "$0")/shharness.sh"
STALLS="$(dirname "$0")/../bench/trace_stalls.py"

# time_ms event [lane bytes offset]: one row of the hand-written trace.
row() {
	ns=$(echo "$1" | awk '{ printf "%d", $1 * 1000000 }')
	echo "$ns,1,${3:-0},$2,-1,0,(nil),${4:-0},\"/d/f.npy\",${5:-0}"
}
{
	echo "time_ns,thread,lane,event,buffer,batch,dst,bytes,file,offset"
	row 0 buffered 0 4194304 128
	row 0.8 launch
	row 1.0 launch
	row 1.2 growing 0 8388608
	row 1.8 grow 0 8388608
	row 2.5 launch                      # 1.5 ms beside a growth: g
	row 3.0 pinning 0 67108864 1
	row 3.1 registering 0 67108864 1
	row 3.4 pinned 0 67108864 1
	row 4.5 launch                      # 2.0 ms beside a registration: r
	row 4.6 launch                      # 0.1 ms: no gap
	row 4.7 growing 1 8388608
	row 4.8 pinning 0 67108864 1
	row 4.9 registering 0 67108864 1
	row 5.0 pinned 0 67108864 1
	row 5.2 grow 1 8388608
	row 6.0 launch                      # 1.4 ms beside both: gr
	row 7.0 buffered 0 4194304 128
	row 7.5 launch                      # 1.5 ms beside neither: -
	row 8.0 buffered 0 4194304 128      # the third load: --loads 2 ends here
	row 9.0 launch                      # after it: not summed
} >"$TMP/hand.csv"
run 0 "$PY" "$STALLS" --loads 2 "$TMP/hand.csv"
grep -qx "before load 3 (8.0 ms), gaps by what ran beside them (count/ms): - 1/1.5 g 1/1.5 gr 1/1.4 r 1/2.0" "$TMP/out" ||
	fail "the gaps by what ran beside them: $(grep 'before load' "$TMP/out")"
grep -q "no launch for > 0.3 ms: 5 times, 7.9 ms in all: 1.0+1.50g 2.5+2.00r 4.6+1.40gr 6.0+1.50 7.5+1.50$" "$TMP/out" ||
	fail "the gaps: $(grep 'no launch' "$TMP/out")"
grep -q "^pool growth (ended at ms/lane/MiB/took ms): 1.8/0/8/0.6 5.2/1/8/0.5$" "$TMP/out" ||
	fail "the growths: $(grep 'pool growth' "$TMP/out")"
grep -q "registrations (began at ms/MiB/files/mapping ms/registering ms): 2, 3.0/64/1/0.10/0.30 4.8/64/1/0.10/0.10$" "$TMP/out" ||
	fail "the registrations: $(grep 'registrations' "$TMP/out")"
run 0 "$PY" "$STALLS" "$TMP/hand.csv"
grep -q "before load" "$TMP/out" && fail "without --loads it summed the gaps by what ran beside them"

# A real trace: six warm 4 MiB files read twice on the host device.
run 0 "$FERRY" gen --out "$TMP/data" --files 6 --size 4M --quiet
cat "$TMP/data"/*.npy >/dev/null
FERRY_DEVICE=host FERRY_TRACE="$TMP/real.csv" run 0 "$FERRY" read --root "$TMP/data" --batch 2 --epochs 2
run 0 "$PY" "$STALLS" --loads 6 "$TMP/real.csv"
for want in "^== .*real.csv: [0-9]* events over" "^pool growth" "^GB/s issued per 10 ms" \
	"^no launch for > 0.3 ms" "^before load 7 (" "^registrations" "^waits for a batch" \
	"^loads begun per 10 ms:.*buffered="; do
	grep -q "$want" "$TMP/out" || fail "no line $want in: $(cat "$TMP/out")"
done
run 1 "$PY" "$STALLS"
finish "ok: trace_stalls.py classifies and sums the gaps of a known trace and reads a real one"
