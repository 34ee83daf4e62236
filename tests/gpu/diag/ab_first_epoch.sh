#!/bin/sh
# Two builds' first epochs over warm large files, in one call on the GPU
# machine: for each build (A, B, A, B...), a traced `ferry read --epochs 2`
# of the copy path (FERRY_PIN_BUDGET=0) and of the defaults, read with
# bench/trace_stalls.py (pool growth, GB/s issued per 10 ms, the gaps with no
# launch), then bench/pin_pace.sh's per-epoch rows at the defaults; at the
# end, the means of each side (ab_means.py, also in ab_means.txt). Made for
# the touched and huge-page staging blocks (2026-12-06), any two builds do.
# Usage: OUT=dir A=dir B=dir [C=dir] [DATA=dir] [SIZES="64M:64 4M:1024"] [ROUNDS=2]
#        sh tests/gpu/diag/ab_first_epoch.sh   (A, B, C: build directories with
#        ferry; C, when set, is a third side: one call measures two changes)
cd "$(dirname "$0")/../../.." || exit 1
O=${OUT:-gpu-diag}
DATA=${DATA:-${TMPDIR:-/var/tmp}/ferry-pace}
SIZES=${SIZES:-"64M:64 4M:1024"}
PY=${PYTHON:-python3}
mkdir -p "$O" "$DATA"
LOG=$O/ab_first_epoch.log
: >"$LOG"
for spec in $SIZES; do # the data once, warm
	size=${spec%%:*} files=${spec#*:}
	[ -d "$DATA/$size" ] || "$A/ferry" gen --out "$DATA/$size" --files "$files" --size "$size" --quiet
	find "$DATA/$size" -name '*.npy' -exec cat {} + >/dev/null
done
big=${SIZES%%:*}
big_files=${SIZES#*:}
big_files=${big_files%% *}
for round in $(seq "${ROUNDS:-2}"); do
	for side in A B ${C:+C}; do
		eval dir=\$$side
		for run in copy_path default; do
			t=$O/trace-$side$round-$run.csv
			env $([ $run = copy_path ] && echo FERRY_PIN_BUDGET=0) FERRY_TRACE="$t" \
				"$dir/ferry" read --root "$DATA/$big" --batch 4 --epochs 2 >"$O/run.txt" 2>&1
			{ echo "== $side round $round, $run, $big: $(sed -n 's/^  epoch 1: //p' "$O/run.txt")"
			  "$PY" bench/trace_stalls.py --loads "$big_files" "$t" | sed -n '2,6p' | cut -c1-400; } >>"$LOG"
			gzip -f "$t"
		done
		echo "== $side round $round, bench/pin_pace.sh at the defaults" >>"$LOG"
		FERRY="$dir/ferry" PACES=" " SIZES="$SIZES" ROUNDS=1 sh bench/pin_pace.sh "$DATA" 2>&1 |
			grep -E '^(==|copy_path|default)' >>"$LOG"
	done
done
rm -f "$O/run.txt"
"$PY" tests/gpu/diag/ab_means.py "$LOG" >"$O/ab_means.txt" && cat "$O/ab_means.txt" >>"$LOG"
