#!/bin/sh
# bench/run.sh — the whole benchmark matrix of ferry on this machine, merged into
# bench/results/<date>-<machine>/{results.json,results.md,chart.png}.
#
# usage: sh bench/run.sh [--quick] [--datasets] [--help]      (make bench runs it)
#
# Steps, in order of importance; each gets what is left of the time budget and
# one that would not fit is skipped and named in results.md:
#   1. datasets with `ferry gen` (float32, seed 1):
#        large 64 x 64 MiB (4 GiB), medium 1024 x 4 MiB (4 GiB), small 16384 x 128 KiB (2 GiB)
#   2. per workload, warm: ceilings; ferry (posix, uring: default settings and
#      threads $WARM_THREADS), naive_c, tuned_pread
#   3. per workload, cold (drop_caches where permitted, else O_DIRECT): ferry
#      (every backend), naive_c, tuned_pread, cufile_per_file; threads $COLD_THREADS
#   4. the Python alternatives (numpy_torch, cupy_load, dali), warm and cold
#   5. throughput vs threads (medium, warm): 1 .. the cores
#   6. throughput vs file size (warm): 64 KiB .. 256 MiB, $SIZE_TOTAL bytes each
#   7. results.json, results.md, chart.png (matplotlib, else gnuplot, else a note)
#
# Environment:
#   FERRY_BUILD    build directory (build)
#   BENCH_DATA     where datasets go; reused when present (${TMPDIR:-/var/tmp}/ferry-bench)
#   BENCH_BUDGET   seconds for the whole run (500; the GPU machine allows 540 a command)
#   SCALE          multiplies every file count, e.g. 0.25 (1)
#   RUN_LIMIT      seconds a run may take (warm 2, cold 1.5; --quick 0.3)
#   WARM_THREADS, COLD_THREADS, SIZE_TOTAL  override the sweeps and the size-scaling
#                  dataset (1,2,4,8,..,cores; 4,cores; 1 GiB)
#   PYTHON         python3 for the alternatives and the report (python3)
#   KEEP_DATA=0    delete the datasets at the end (kept by default)
#   BENCH_OUT      the results directory (bench/results/<date>-<machine>; with
#                  --quick $FERRY_BUILD/bench-quick/<date>-<machine>)
#
# Disk: the full run writes about 17 GiB (10 GiB of workloads, 7 x 1 GiB for the
# size scaling). Time on the GPU machine: estimated ~5 minutes from its known
# rates (datasets ~1 min, warm matrix ~40 s, cold ~2 min, Python ~40 s, scaling
# ~50 s); the budget keeps it under BENCH_BUDGET regardless.
# --quick: tiny datasets (a few MiB), short runs; finishes in seconds on any
# machine, with or without a GPU (no GPU: the host device; GPU-only tools are
# reported as not available).
# --datasets: step 1 alone (what bench/tune.sh and a later run then reuse).
set -u
cd "$(dirname "$0")/.." || exit 1

QUICK=0 DATASETS_ONLY=0
for arg in "$@"; do
	case $arg in
	--quick) QUICK=1 ;;
	--datasets) DATASETS_ONLY=1 ;;
	-h|--help) sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench/run.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
	esac
done

FERRY_BUILD=${FERRY_BUILD:-build}
FERRY=$FERRY_BUILD/ferry
PYTHON=${PYTHON:-python3}
BUDGET=${BENCH_BUDGET:-500}
SCALE=${SCALE:-1}
DATA=${BENCH_DATA:-${TMPDIR:-/var/tmp}/ferry-bench}
CORES=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
START=$(date +%s)

if [ ! -x "$FERRY" ]; then
	echo "bench/run.sh: $FERRY not built (run make)" >&2
	exit 1
fi
have_python() { command -v "$PYTHON" >/dev/null 2>&1; }

# ---- settings ----

# 1,2,4,.. below the cores, then the cores.
powers_to_cores() {
	t=1 list=""
	while [ "$t" -lt "$CORES" ]; do list="$list$t,"; t=$((t * 2)); done
	echo "$list$CORES"
}

if [ "$QUICK" = 1 ]; then
	WORKLOADS="large:4:1M medium:32:128k small:128:16k"
	SIZES="64k 256k 1M"
	SIZE_TOTAL=${SIZE_TOTAL:-2097152}
	WARM_LIMIT=${RUN_LIMIT:-0.3} COLD_LIMIT=${RUN_LIMIT:-0.3} MIN_SECONDS=0.05
	WARM_THREADS=${WARM_THREADS:-1,2}
	COLD_THREADS=${COLD_THREADS:-2}
	SCALE_THREADS=${SCALE_THREADS:-1,2}
else
	WORKLOADS="large:64:64M medium:1024:4M small:16384:128k"
	SIZES="64k 256k 1M 4M 16M 64M 256M"
	SIZE_TOTAL=${SIZE_TOTAL:-1073741824}
	WARM_LIMIT=${RUN_LIMIT:-2} COLD_LIMIT=${RUN_LIMIT:-1.5} MIN_SECONDS=0.5
	WARM_THREADS=${WARM_THREADS:-$(powers_to_cores)}
	COLD_THREADS=${COLD_THREADS:-4,$CORES}
	SCALE_THREADS=${SCALE_THREADS:-$(seq -s, 1 "$CORES")}
fi

# Machine name: the GPU's, else the host's; safe for a directory name.
MACHINE=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
[ -n "$MACHINE" ] || MACHINE=$(hostname)
MACHINE_DIR=$(echo "$MACHINE" | tr -c 'A-Za-z0-9._\n-' '-')
# --quick results are a smoke run: they go to the build directory, not bench/results.
RESULTS=bench/results
[ "$QUICK" = 1 ] && RESULTS=$FERRY_BUILD/bench-quick
OUT=${BENCH_OUT:-$RESULTS/$(date -u +%Y-%m-%d-%H%M)-$MACHINE_DIR}
PARTS=$OUT/parts
mkdir -p "$PARTS" "$DATA" || exit 1
NOTES=$OUT/notes.txt
: >"$NOTES"

note() { echo "bench: $*" >&2; echo "$*" >>"$NOTES"; }
for v in FERRY_LANES FERRY_MAX_BUFFERS FERRY_CHUNK_SIZE FERRY_THREADS FERRY_IO FERRY_ODIRECT; do
	eval "value=\${$v:-}"
	[ -z "$value" ] || note "environment: $v=$value (ferry's runs use it)"
done
elapsed() { echo $(( $(date +%s) - START )); }
# Seconds left for a step, keeping 20 for the report.
remaining() { echo $(( BUDGET - $(elapsed) - 20 )); }

# Runs a step when enough budget is left: step NAME MIN_SECONDS command...
# Commands inside it run through `limited`, which kills them 15 s after what
# was left (the bench's own --budget-seconds normally ends it first).
step() {
	step_name=$1 step_need=$2
	shift 2
	step_left=$(remaining)
	if [ "$step_left" -lt "$step_need" ]; then
		note "skipped $step_name: ${step_left}s of the budget left, needs about ${step_need}s"
		return 1
	fi
	echo "bench: [$(elapsed)s] $step_name" >&2
	"$@"
	step_rc=$?
	[ $step_rc -eq 0 ] || note "$step_name: exit status $step_rc"
	return $step_rc
}
limited() { timeout -k 5 $((step_left + 15)) "$@"; }

# Files of a workload after SCALE (at least 1).
scaled() { awk -v n="$1" -v s="$SCALE" 'BEGIN { v = int(n * s + 0.5); print v < 1 ? 1 : v }'; }

# Writes DIR with ferry gen unless a complete copy is there.
gen_dataset() {
	dir=$1 files=$2 size=$3
	marker=$dir/.ferry-gen-$files-$size
	[ -e "$marker" ] && return 0
	rm -rf "$dir"
	limited "$FERRY" gen --out "$dir" --files "$files" --size "$size" --dtype float32 --seed 1 \
		>/dev/null && 
		: >"$marker"
}

bench_part() { # bench_part OUTFILE ARGS...: ferry bench --json with the budget
	part=$1
	shift
	limited "$FERRY" bench --json --budget-seconds "$(remaining)" "$@" >"$part.tmp" &&
		mv "$part.tmp" "$part"
}

# ---- 1. datasets ----

for w in $WORKLOADS; do
	name=${w%%:*} rest=${w#*:}
	files=$(scaled "${rest%%:*}") size=${rest#*:}
	step "generate $name ($files x $size)" 5 gen_dataset "$DATA/$name" "$files" "$size" ||
		note "dataset $name missing"
done
[ "$DATASETS_ONLY" = 1 ] && exit 0

# ---- 2, 3. the matrix ----

for cache in warm cold; do
	for w in $WORKLOADS; do
		name=${w%%:*} rest=${w#*:}
		files=$(scaled "${rest%%:*}") size=${rest#*:}
		[ -e "$DATA/$name/.ferry-gen-$files-$size" ] || continue
		if [ $cache = warm ]; then
			threads=$WARM_THREADS limit=$WARM_LIMIT tools=ferry,naive_c,tuned_pread
		else
			threads=$COLD_THREADS limit=$COLD_LIMIT tools=ferry,naive_c,tuned_pread,cufile_per_file
		fi
		step "$cache $name" 10 bench_part "$PARTS/$cache-$name.json" --dir "$DATA/$name" \
			--workload "$name" --files "$files" --size "$size" --cache $cache --tools $tools \
			--threads "$threads" --seconds-limit "$limit" --min-seconds $MIN_SECONDS
	done
done

# ---- 4. Python ----

for w in $WORKLOADS; do
	name=${w%%:*}
	[ -d "$DATA/$name" ] || continue
	if ! have_python; then
		note "Python alternatives skipped: $PYTHON not found"
		break
	fi
	# shellcheck disable=SC2016 # expanded by the inner sh
	step "python $name" 15 limited sh -c '"$1" bench/python_alternatives.py --dir "$2" --workload "$3" \
		--cache warm,cold --seconds-limit "$4" --min-seconds "$5" >"$6.tmp" && mv "$6.tmp" "$6"' \
		sh "$PYTHON" "$DATA/$name" "$name" "$WARM_LIMIT" "$MIN_SECONDS" "$PARTS/python-$name.json"
done

# ---- 5. threads ----

w=$(echo "$WORKLOADS" | tr ' ' '\n' | grep '^medium:')
files=$(scaled "$(echo "$w" | cut -d: -f2)") size=$(echo "$w" | cut -d: -f3)
if [ -e "$DATA/medium/.ferry-gen-$files-$size" ]; then
	step "thread scaling" 15 bench_part "$PARTS/threads-medium.json" --dir "$DATA/medium" \
		--workload medium --files "$files" --size "$size" --cache warm \
		--tools ferry,tuned_pread --backends posix --threads "$SCALE_THREADS" \
		--series thread_scaling --seconds-limit "$WARM_LIMIT" --min-seconds $MIN_SECONDS
fi

# ---- 6. file sizes ----

for size in $SIZES; do
	bytes=$(awk -v s="$size" 'BEGIN { n = s + 0; u = substr(s, length(s)); m = 1
		if (u == "k" || u == "K") m = 1024; else if (u == "M") m = 1048576
		printf "%d\n", n * m }')
	files=$(awk -v t="$SIZE_TOTAL" -v b="$bytes" 'BEGIN { n = int(t / b); print n < 2 ? 2 : n }')
	dir=$DATA/size_$size
	step "generate size_$size" 10 gen_dataset "$dir" "$files" "$size" || continue
	step "size scaling $size" 8 bench_part "$PARTS/size-$size.json" --dir "$dir" \
		--workload "size_$size" --files "$files" --size "$size" --cache warm \
		--tools ferry,tuned_pread --backends posix --threads "$CORES" --series size_scaling \
		--seconds-limit "$WARM_LIMIT" --min-seconds $MIN_SECONDS
	[ "${KEEP_DATA:-1}" = 0 ] && rm -rf "$dir"
done

# ---- 7. the report ----

echo "bench: [$(elapsed)s] report" >&2
if ! have_python; then
	note "no $PYTHON: the parts in $PARTS are not merged"
	exit 1
fi
set --
while IFS= read -r line; do set -- "$@" --note "$line"; done <"$NOTES"
"$PYTHON" bench/report.py --out "$OUT" --machine "$MACHINE" "$@" "$PARTS"/*.json || exit 1
rm -f "$NOTES"
[ "${KEEP_DATA:-1}" = 0 ] && rm -rf "$DATA"
echo "bench: done in $(elapsed)s: $OUT/results.md" >&2
