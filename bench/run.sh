#!/bin/sh
# bench/run.sh — the whole benchmark matrix of ferry on this machine, merged into
# bench/results/<date>-<machine>/{results.json,results.md,chart.png}.
#
# usage: sh bench/run.sh [--quick] [--datasets] [--reader | --no-reader]
#                        [--repeats N] [--help]
#        (make bench runs it)
#
# Steps, in order of importance; each gets what is left of the time budget and
# one that would not fit is skipped and named in results.md:
#   1. datasets with `ferry gen` (float32, seed 1):
#        large 64 x 64 MiB (4 GiB), medium 1024 x 4 MiB (4 GiB), small 16384 x 128 KiB (2 GiB),
#        and for the reader tiny 131072 x 16 KiB (2 GiB)
#   2. per workload, warm: ceilings; ferry (posix, uring: default settings and
#      threads $WARM_THREADS), naive_c, tuned_pread
#   3. per workload, cold (drop_caches where permitted, else O_DIRECT): ferry
#      (every backend), naive_c, tuned_pread, cufile_per_file; threads $COLD_THREADS
#   4. the Python alternatives (numpy_torch, cupy_load, dali), warm and cold
#   5. throughput vs threads (medium, warm): 1 .. the cores
#   6. throughput vs file size (warm): 64 KiB .. 256 MiB, $SIZE_TOTAL bytes each
#   7. the reader matrix (issue 18), per file set (tiny 16 KiB, small 128 KiB,
#      medium 4 MiB, large 64 MiB; warm, and cold for small and medium):
#      `ferry bench --tools reader` (the ceilings, read_only among them, and the
#      C reader at batch sizes $READER_BATCHES), then bench/python_reader.py
#      (ferry.Reader stacked and per sample, torch DataLoader, DALI) on the same
#      files; every row's ratio is to the read-only ceiling of that file set
#      measured in the same run. Each file set's C part and Python part run
#      --repeats N times (3), alternating (the C part, the Python part, then
#      again), each repeat of every file set before the next repeat of any;
#      every row of the report is the median of its N runs, with their min
#      and max (a file set's ceiling the median of its C parts')
#   8. results.json, results.md (with the reader table), chart.png
#      (matplotlib, else gnuplot, else a note) and reader.png (matplotlib, else
#      a note)
#
# Environment:
#   FERRY_BUILD    build directory (build)
#   BENCH_DATA     where datasets go; reused when present (${TMPDIR:-/var/tmp}/ferry-bench)
#   BENCH_BUDGET   seconds for the whole run (500; the GPU machine allows 540 a command)
#   SCALE          multiplies every file count, e.g. 0.25 (1)
#   RUN_LIMIT      seconds a run may take (warm 2, cold 1.5; --quick 0.3)
#   READER_LIMIT   seconds a reader row may take, warm or cold (1; --quick 0.3),
#                  once it counted 3 batches; warm rows also last READER_MIN
#                  (0.5; --quick 0.05) and stop once every file was delivered
#                  after that; they count nothing of their first batch and of
#                  READER_WARMUP seconds after it (0.25; --quick 0.05), nor,
#                  for files of 4 MiB or more, of the first epochs while the
#                  zero-copy path registers them (until one copied every file
#                  from a mapping; at most 256 epochs or 10 s; the row's note
#                  says how many), and their timing starts again while a file
#                  is still read beside the mappings (within those 10 s)
#   READER_BATCHES batch sizes of the reader rows (1,4,32,256)
#   READER_REPEATS runs of each reader row, as --repeats (3; --quick 1); the
#                  report's row is their median
#   READER_SETS    the reader's file sets to measure (all: tiny small medium
#                  large; --quick: small medium large), to split the matrix
#                  over several commands with one BENCH_OUT
#   READER_COLD    the reader's file sets also read cold (small medium: 128 KiB
#                  and 4 MiB; --quick medium large); empty: none
#   READER_WORKERS DataLoader num_workers to try at batch size 32, warm (8 and
#                  the cores, at least 8); its other rows use the best
#   BENCH_VERIFY=1 the reader rows check every byte (--verify; 1 with --quick, 0
#                  otherwise: it costs time)
#   WARM_THREADS, COLD_THREADS, SIZE_TOTAL  override the sweeps and the size-scaling
#                  dataset (1,2,4,8,..,cores; 4,cores; 1 GiB)
#   PYTHON         python3 for the Python rows and the report (python3; when it
#                  lacks numpy and /usr/bin/python3 has it, that one)
#   KEEP_DATA=0    delete the datasets at the end (kept by default)
#   BENCH_OUT      the results directory (bench/results/<date>-<machine>; with
#                  --quick $FERRY_BUILD/bench-quick/<date>-<machine>)
#
# Disk: the full run writes about 19 GiB (12 GiB of workloads, 7 x 1 GiB for the
# size scaling). Time on the GPU machine: estimated ~5 minutes for steps 1-6
# from its known rates (datasets ~1 min, warm matrix ~40 s, cold ~2 min, Python
# ~40 s, scaling ~50 s) and ~4 minutes for the reader matrix, so the whole does
# not fit one command of 540 s there: run it as two, `--no-reader` and then
# `--reader` with the same BENCH_OUT (each merges every part in BENCH_OUT/parts
# into the report); the budget keeps each under BENCH_BUDGET regardless.
# The reader matrix's ~4 minutes on the GPU machine (16 cores, 128 GiB): 4 file
# sets of 2 to 4 GiB, 12 GiB in all, which its page cache holds at once (the
# 16 KiB set is 131072 files, 2 GiB, 8 x the issue's 16384: one warm pass is
# ~0.15 s at the ~0.9M files/s it measured, so rows are not all first-batch
# latency); a warm row takes its first batch and READER_WARMUP (0.25 s) of
# batches uncounted, then stops at READER_LIMIT (1 s) or once every file was
# delivered and READER_MIN (0.5 s) passed; cold rows read once, at most
# READER_LIMIT; any row counts 3 batches before the limit may end it. Measured
# there on 2026-12-03 (a trial of `--reader` on a fresh machine): 245 s in
# all, 11 s of it writing the datasets; C rows with their ceilings and
# page-cache warming ~45 s; Python ~190 s (per file set ~5 s of imports and
# CUDA start-up, then per batch size ferry.Reader stacked and per sample,
# ~1.5 s each, and the DataLoader, ~2-5 s a run with its worker start-up, at 2
# worker counts for batch 32 and the best for the others); drop_caches
# included. SCALE (fewer files), READER_LIMIT, READER_BATCHES and
# READER_WORKERS shrink it.
# --quick: tiny datasets (a few MiB), short runs, the reader rows verified;
# about a minute on a 2-core VM (20 s with --reader), with or without a GPU
# (no GPU: the host device; GPU-only tools are reported as not available).
# --datasets: step 1 alone (what bench/tune.sh and a later run then reuse).
# --reader: steps 1 (the reader's file sets only), 7 and 8: issue 18's
# measurements (~4 minutes on the GPU machine for one run of each row,
# datasets included; --repeats 3, the default, about triples the reader
# part: split it with READER_SETS, e.g. READER_SETS="tiny small" then
# READER_SETS="medium large" with the same BENCH_OUT, each command within
# its budget; the report of the last holds them all). --no-reader: every
# step but 7 (and no tiny dataset). --repeats N: N runs of each reader row
# (a whole number from 1).
set -u
cd "$(dirname "$0")/.." || exit 1

QUICK=0 DATASETS_ONLY=0 READER=1 MATRIX=1 REPEATS=${READER_REPEATS:-}
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--datasets) DATASETS_ONLY=1 ;;
	--reader) MATRIX=0 READER=1 ;;
	--no-reader) READER=0 MATRIX=1 ;;
	--repeats) [ $# -ge 2 ] || { echo "bench/run.sh: --repeats needs a number" >&2; exit 2; }
		REPEATS=$2
		shift ;;
	--repeats=*) REPEATS=${1#--repeats=} ;;
	-h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench/run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done
case $REPEATS in
*[!0-9]* | 0*) echo "bench/run.sh: --repeats $REPEATS: expected a whole number from 1" >&2
	exit 2 ;;
esac

FERRY_BUILD=${FERRY_BUILD:-build}
FERRY=$FERRY_BUILD/ferry
# python3, unless it lacks numpy and /usr/bin/python3 has it.
if [ -z "${PYTHON:-}" ]; then
	PYTHON=python3
	if ! python3 -c 'import numpy' >/dev/null 2>&1 &&
		/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1; then
		PYTHON=/usr/bin/python3
	fi
fi
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
	# The reader's file sets: the workloads above (16k, 128k, 1M); cold: 128k, 1M.
	READER_WORKLOADS="small:128:16k medium:32:128k large:4:1M"
	READER_COLD=${READER_COLD-medium large}
	REPEATS=${REPEATS:-1}
	READER_LIMIT=${READER_LIMIT:-0.3} READER_MIN=${READER_MIN:-0.05}
	READER_WARMUP=${READER_WARMUP:-0.05}
	BENCH_VERIFY=${BENCH_VERIFY:-1}
else
	WORKLOADS="large:64:64M medium:1024:4M small:16384:128k"
	SIZES="64k 256k 1M 4M 16M 64M 256M"
	SIZE_TOTAL=${SIZE_TOTAL:-1073741824}
	WARM_LIMIT=${RUN_LIMIT:-2} COLD_LIMIT=${RUN_LIMIT:-1.5} MIN_SECONDS=0.5
	WARM_THREADS=${WARM_THREADS:-$(powers_to_cores)}
	COLD_THREADS=${COLD_THREADS:-4,$CORES}
	SCALE_THREADS=${SCALE_THREADS:-$(seq -s, 1 "$CORES")}
	READER_WORKLOADS="tiny:131072:16k small:16384:128k medium:1024:4M large:64:64M"
	READER_COLD=${READER_COLD-small medium}
	REPEATS=${REPEATS:-3}
	READER_LIMIT=${READER_LIMIT:-1} READER_MIN=${READER_MIN:-0.5}
	READER_WARMUP=${READER_WARMUP:-0.25}
	BENCH_VERIFY=${BENCH_VERIFY:-0}
fi
READER_BATCHES=${READER_BATCHES:-1,4,32,256}
# READER_SETS picks file sets of READER_WORKLOADS by name.
if [ -n "${READER_SETS:-}" ]; then
	picked=""
	for name in $READER_SETS; do
		case " $READER_WORKLOADS " in *" $name:"*) ;; *)
			echo "bench/run.sh: READER_SETS: no file set '$name' (expected some of:" \
				"$(for w in $READER_WORKLOADS; do printf ' %s' "${w%%:*}"; done))" >&2
			exit 2 ;;
		esac
	done
	for w in $READER_WORKLOADS; do
		case " $READER_SETS " in *" ${w%%:*} "*) picked="$picked $w" ;; esac
	done
	READER_WORKLOADS=$picked
fi
READER_WORKERS=${READER_WORKERS:-}
VERIFY=""
[ "$BENCH_VERIFY" = 1 ] && VERIFY=--verify

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
# This command's notes; the report takes those of every command into BENCH_OUT.
NOTES=$PARTS/notes-$(date -u +%H%M%S)-$$.txt
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

# The workloads this command needs: the matrix's, the reader's, or both.
NEEDED=""
[ "$MATRIX" = 1 ] && NEEDED=$WORKLOADS
if [ "$READER" = 1 ]; then
	for w in $READER_WORKLOADS; do
		case " $NEEDED " in *" $w "*) ;; *) NEEDED="$NEEDED $w" ;; esac
	done
fi
for w in $NEEDED; do
	name=${w%%:*} rest=${w#*:}
	files=$(scaled "${rest%%:*}") size=${rest#*:}
	step "generate $name ($files x $size)" 5 gen_dataset "$DATA/$name" "$files" "$size" ||
		note "dataset $name missing"
done
[ "$DATASETS_ONLY" = 1 ] && exit 0

# ---- 2, 3. the matrix ----

[ "$MATRIX" = 1 ] || WORKLOADS=""
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
if [ "$MATRIX" = 1 ] && [ -e "$DATA/medium/.ferry-gen-$files-$size" ]; then
	step "thread scaling" 15 bench_part "$PARTS/threads-medium.json" --dir "$DATA/medium" \
		--workload medium --files "$files" --size "$size" --cache warm \
		--tools ferry,tuned_pread --backends posix --threads "$SCALE_THREADS" \
		--series thread_scaling --seconds-limit "$WARM_LIMIT" --min-seconds $MIN_SECONDS
fi

# ---- 6. file sizes ----

[ "$MATRIX" = 1 ] || SIZES=""
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

# ---- 7. the reader matrix ----

# python_reader.py finds this build's libferry and the checkout's package.
FERRY_LIBRARY=$(cd "$FERRY_BUILD" && pwd)/libferry.so
PYTHONPATH=$(pwd)/python${PYTHONPATH:+:$PYTHONPATH}
export FERRY_LIBRARY PYTHONPATH

# A sanitizer build's libferry loads into Python only with its runtime first
# (AddressSanitizer; tests/run.sh does the same), or not at all (ThreadSanitizer).
case $FERRY_BUILD in
*asan*) PY_ENV="LD_PRELOAD=$(${CC:-cc} -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0" ;;
*) PY_ENV= ;;
esac

python_reader() { # python_reader OUTFILE NAME CACHES: bench/python_reader.py with the budget
	# shellcheck disable=SC2086 # $VERIFY is empty or one word; $PY_ENV assignments or none
	limited env $PY_ENV "$PYTHON" bench/python_reader.py --dir "$DATA/$2" --workload "$2" --cache "$3" \
		--batch-sizes "$READER_BATCHES" ${READER_WORKERS:+--workers "$READER_WORKERS"} \
		--seconds-limit "$READER_LIMIT" --min-seconds "$READER_MIN" \
		--warmup-seconds "$READER_WARMUP" --budget-seconds "$(remaining)" $VERIFY \
		>"$1.tmp" && mv "$1.tmp" "$1"
}

[ "$READER" = 1 ] || READER_WORKLOADS=""
[ -n "$READER_WORKLOADS" ] && note "reader rows: each the median of $REPEATS runs (--repeats)"
repeat=1
while [ "$repeat" -le "$REPEATS" ] && [ -n "$READER_WORKLOADS" ]; do
	for w in $READER_WORKLOADS; do
		name=${w%%:*} rest=${w#*:}
		files=$(scaled "${rest%%:*}") size=${rest#*:}
		[ -e "$DATA/$name/.ferry-gen-$files-$size" ] || continue
		caches=warm
		case " $READER_COLD " in *" $name "*) caches=warm,cold ;; esac
		what="$name ($size, $caches; run $repeat of $REPEATS)"
		# shellcheck disable=SC2086
		step "reader $what" 8 bench_part "$PARTS/reader-$name-r$repeat.json" \
			--dir "$DATA/$name" --workload "$name" --files "$files" --size "$size" \
			--cache $caches --tools reader --series reader --batch-sizes "$READER_BATCHES" \
			--seconds-limit "$READER_LIMIT" --min-seconds "$READER_MIN" \
			--warmup-seconds "$READER_WARMUP" $VERIFY
		if ! have_python; then
			note "Python reader rows skipped: $PYTHON not found"
			continue
		fi
		case $FERRY_BUILD in
		*tsan*) note "Python reader rows skipped: a ThreadSanitizer build cannot be loaded into Python"
			continue ;;
		esac
		step "python reader $what" 10 python_reader \
			"$PARTS/python-reader-$name-r$repeat.json" "$name" "$caches"
	done
	repeat=$((repeat + 1))
done

# ---- 8. the report ----

echo "bench: [$(elapsed)s] report" >&2
if ! have_python; then
	note "no $PYTHON: the parts in $PARTS are not merged"
	exit 1
fi
set --
cat "$PARTS"/notes-*.txt 2>/dev/null | awk '!seen[$0]++' >"$OUT/notes.all"
while IFS= read -r line; do set -- "$@" --note "$line"; done <"$OUT/notes.all"
rm -f "$OUT/notes.all"
"$PYTHON" bench/report.py --out "$OUT" --machine "$MACHINE" "$@" "$PARTS"/*.json || exit 1
[ "${KEEP_DATA:-1}" = 0 ] && rm -rf "$DATA"
echo "bench: done in $(elapsed)s: $OUT/results.md" >&2
