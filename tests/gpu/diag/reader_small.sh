#!/bin/sh
# Where the reader's time goes on small files (issue 18): one call on the GPU
# machine, after `bench/run.sh --reader` has made its file sets (warm):
#  1. `ferry read` of tiny (16 KiB) and small (128 KiB) at batch 4 and 32 on
#     CUDA, with the default IO and with FERRY_IO=posix; large (64 MiB) at
#     batch 1 and 32. One line a run: files/s, GB/s, CPU s/GB (listing the
#     files and the first epoch's header reads included: compare runs with
#     each other, not with the bench's reader rows).
#  2. system calls per file: strace -c -f over one CUDA epoch of small.
#  3. mutex wait per call site (tests/gpu/diag/lockprof.c) over small at
#     batch 32.
#  4. copies and staging leases per file (FERRY_TRACE) and, with PERF (a
#     command that runs perf; the GPU machine has none, so carry one), where
#     the CPU goes: tiny at batch 4 and 32, small at batch 32 (functions, and
#     threads: the caller's thread is the process's first), and the same of
#     `ferry bench --ceilings-only` (the read-only ceiling among them); the
#     staging the trace saw grow (its working set: rotate_reads.c measures
#     what a larger one costs the kernel's copy).
# Usage: OUT=dir BENCH_DATA=dir [PERF=cmd] [RUNS="tiny:4 tiny:32 small:32"]
#        [PROFILE_ONLY=1] [FERRY=another build's ferry] sh tests/gpu/diag/reader_small.sh
#   RUNS: the set:batch pairs step 4 traces and profiles; PROFILE_ONLY=1: step 4
#   alone, without the ceilings' profiles.
cd "$(dirname "$0")/../../.." || exit 1
O=${OUT:-gpu-diag}
DATA=${BENCH_DATA:-${TMPDIR:-/var/tmp}/ferry-bench}
F=${FERRY:-$PWD/build/ferry}
mkdir -p "$O"
LOG=$O/reader_small.log

# one LABEL SET BATCH EPOCHS ENV...: one `ferry read` of DATA/SET, one line.
one() {
	label=$1 set=$2 batch=$3 epochs=$4
	shift 4
	out=$(env "$@" "$F" read --root "$DATA/$set" --batch "$batch" --epochs "$epochs" --json && times) ||
		{ echo "$label $set b$batch: ferry read failed" >>"$LOG"; return; }
	cpu=$(echo "$out" | tail -n 1 | awk '{ for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); c += t[1] * 60 + t[2] } print c }')
	echo "$out" | head -n 1 | awk -v l="$label" -v s="$set" -v b="$batch" -v cpu="$cpu" '
		{ match($0, /"samples": [0-9]+/); n = substr($0, RSTART + 11, RLENGTH - 11)
		  match($0, /"bytes_delivered": [0-9]+/); by = substr($0, RSTART + 19, RLENGTH - 19)
		  match($0, /"seconds": [0-9.]+/); sec = substr($0, RSTART + 11, RLENGTH - 11)
		  printf "%-12s %-6s b%-4s %9.0f files/s %7.2f GB/s %6.3f CPU s/GB (all of the process, listing included)\n",
			 l, s, b, n / sec, by / sec / 1e9, cpu / (by / 1e9) }' >>"$LOG"
}

{ date -u; nvidia-smi -L; for t in perf strace; do command -v $t || echo "no $t"; done; } >"$LOG" 2>&1
[ -n "$PROFILE_ONLY" ] || for set in tiny small; do
	[ -d "$DATA/$set" ] || { echo "no $DATA/$set" >>"$LOG"; continue; }
	cat "$DATA/$set"/*.npy >/dev/null
	for b in 4 32; do
		one cuda "$set" $b 3 FERRY_DEVICE=cuda
		one cuda-posix "$set" $b 3 FERRY_DEVICE=cuda FERRY_IO=posix
	done
done
[ -z "$PROFILE_ONLY" ] && [ -d "$DATA/large" ] && for b in 1 32; do one cuda large $b 4 FERRY_DEVICE=cuda; done

if [ -z "$PROFILE_ONLY" ] && command -v strace >/dev/null && [ -d "$DATA/small" ]; then
	echo "== strace -c -f, small, batch 32, 1 epoch ($(ls "$DATA/small" | grep -c npy) files)" >>"$LOG"
	FERRY_DEVICE=cuda timeout 120 strace -c -f -o "$O/strace.txt" "$F" read --root "$DATA/small" \
		--batch 32 --epochs 1 --quiet
	head -40 "$O/strace.txt" >>"$LOG"
fi
[ -z "$PROFILE_ONLY" ] && gcc -shared -fPIC -O2 -o build/lockprof.so tests/gpu/diag/lockprof.c -ldl &&
	FERRY_DEVICE=cuda LD_PRELOAD=$PWD/build/lockprof.so "$F" read --root "$DATA/small" \
		--batch 32 --epochs 3 --quiet 2>"$O/lockprof.txt"
[ -f "$O/lockprof.txt" ] && echo "== lockprof, small, batch 32, 3 epochs (sites by wait)" >>"$LOG"
[ -f "$O/lockprof.txt" ] && sort -t" " -k8 -g -r "$O/lockprof.txt" | head -12 | while read -r _ site rest; do
	off=${site#*+}
	echo "$(addr2line -f -e "${site%+*}" "$off" 2>/dev/null | head -1) $site $rest"
done >>"$LOG"
PERF=${PERF:-$(command -v perf)} DEV=${DEV:-cuda}
# profile NAME COMMAND...: perf's threads and functions of one command.
profile() {
	name=$1
	shift
	FERRY_DEVICE=$DEV timeout 100 $PERF record -F 1999 -g -o "$O/perf.data" "$@" \
		>/dev/null 2>"$O/perf-$name.txt"
	{ $PERF report -i "$O/perf.data" --stdio --no-children --sort pid -g none 2>&1 | grep -v '^#' | grep -v '^$' | head -24
	  $PERF report -i "$O/perf.data" --stdio --no-children --sort dso,sym -g none 2>&1 | grep -v '^#' | grep -v '^$' | head -70
	  $PERF report -i "$O/perf.data" --stdio --no-children --sort sym -g caller,0.5,callee --percent-limit 2 2>&1 | grep -v '^$' | head -300
	} >>"$O/perf-$name.txt"
	rm -f "$O/perf.data"
}
for run in ${RUNS:-tiny:4 tiny:32 small:32}; do
	set=${run%:*} b=${run#*:}
	rm -f "$O/trace.csv"
	FERRY_DEVICE=$DEV FERRY_TRACE="$O/trace.csv" "$F" read --root "$DATA/$set" --batch "$b" \
		--epochs 2 --quiet &
	pid=$!
	wait $pid
	# the caller's thread is the process's first (its id the pid): its waits
	# for copies, how long they took, and the launches it made itself
	awk -F, -v r="$run" -v main="$pid" '{ c[$4]++ } $4 == "grow" { g += $8 }
		$4 == "launch" && $2 == main { ml++ }
		$4 == "wait" { at[$2 "," $3 "," $6] = $1 }
		$4 == "woke" { k = $2 "," $3 "," $6; if (k in at) { d = $1 - at[k]; n++; t += d; if ($2 == main) { mn++; mt += d } } }
		END { printf "== trace %s, 2 epochs: copies %d leases %d launches %d (the caller %d) reclaims %d; staging grown by %d MiB; waits %d (%.1f us each), the caller %d (%.1f us each)\n",
		r, c["copy"], c["lease"], c["launch"], ml, c["reclaim"], g / 1048576, n, n ? t / n / 1e3 : 0, mn, mn ? mt / mn / 1e3 : 0 }' "$O/trace.csv" >>"$LOG"
	rm -f "$O/trace.csv"
	[ -n "$PERF" ] && profile "$set-$b" "$F" read --root "$DATA/$set" --batch "$b" --epochs 6 --quiet
done
# The read-only ceiling's own profile, to hold ferry's against (the same files).
[ -n "$PERF" ] && [ -z "$PROFILE_ONLY" ] && for set in tiny small; do
	profile "$set-ceilings" "$F" bench --dir "$DATA/$set" --workload "files-$set" --cache warm \
		--ceilings-only --min-seconds 2
done
cat "$LOG"
