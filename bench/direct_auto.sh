#!/bin/sh
# Buffered or direct, per file (issue 23): `ferry read` of the same files from
# a cold page cache and from a half-warm one (every other file read before),
# with FERRY_ODIRECT forced to 0 and to 1, and with the default auto, once
# with its default page-cache budget (half of MemAvailable: these datasets
# fit, so it reads buffered and leaves them warm for the next epoch) and once
# with FERRY_CACHE_BUDGET=0 (what auto does with a dataset larger than the
# budget: cold files direct). Then the first epoch over warm files (all read
# before; one process, one epoch): the default (the zero-copy path registers
# what it maps as it goes) against the copy path (FERRY_PIN_BUDGET=0).
# Each file set starts with its ceilings (`ferry bench --ceilings-only`: the
# pinned copy, O_DIRECT storage, the page cache and read-only threads).
# Needs root for /proc/sys/vm/drop_caches.
# Prints one line per run: GB/s, files buffered, direct and mapped, CPU s/GB.
#
# Usage: sh bench/direct_auto.sh [DIR]   (DIR: ${TMPDIR:-/var/tmp}/ferry-direct)
# Variables: FERRY (build/ferry), SIZES ("64M:64 4M:1024": size:files),
#   BATCH (4), ROUNDS (1: the cold and half-warm runs, in turn),
#   JSON=FILE (also write every run's `ferry read --json` line).
FERRY=${FERRY:-build/ferry}
DIR=${1:-${TMPDIR:-/var/tmp}/ferry-direct}
SIZES=${SIZES:-"64M:64 4M:1024"}
BATCH=${BATCH:-4}

drop_caches() {
	sync
	echo 3 > /proc/sys/vm/drop_caches 2>/dev/null ||
		{ echo "bench/direct_auto.sh: cannot drop the page cache (root needed)" >&2; exit 1; }
}

# warm_half DIR: reads every other file of DIR into the page cache.
warm_half() {
	ls "$1"/*.npy | awk 'NR % 2' | xargs cat > /dev/null
}

# one LABEL STATE DATA ENV...: one cold or half-warm read, one line.
one() {
	label=$1 state=$2 data=$3
	shift 3
	drop_caches
	[ "$state" = half ] && warm_half "$data"
	[ "$state" = warm ] && cat "$data"/*.npy >/dev/null
	# `times` after the command: its second line is the children's user and system time.
	out=$(env "$@" "$FERRY" read --root "$data" --batch "$BATCH" --json && times) ||
		{ echo "$label: ferry read failed" >&2; return 1; }
	line=$(echo "$out" | head -n 1)
	cpu=$(echo "$out" | tail -n 1 | awk '{ for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); c += t[1] * 60 + t[2] } print c }')
	[ -n "${JSON:-}" ] && echo "{\"mode\": \"$label\", \"state\": \"$state\", \"run\": $line}" >> "$JSON"
	echo "$line" | awk -v label="$label" -v state="$state" -v cpu="$cpu" '
		{ match($0, /"bytes_delivered": [0-9]+/); b = substr($0, RSTART + 19, RLENGTH - 19)
		  match($0, /"seconds": [0-9.]+/); s = substr($0, RSTART + 11, RLENGTH - 11)
		  match($0, /"files_buffered": [0-9]+/); fb = substr($0, RSTART + 18, RLENGTH - 18)
		  match($0, /"files_direct": [0-9]+/); fd = substr($0, RSTART + 16, RLENGTH - 16)
		  match($0, /"files_mapped": [0-9]+/); fm = substr($0, RSTART + 16, RLENGTH - 16)
		  printf "%-22s %-5s %7.2f GB/s  buffered %5d  direct %5d  mapped %5d  %6.3f CPU s/GB\n",
			 label, state, b / s / 1e9, fb, fd, fm, cpu / (b / 1e9) }'
}

mkdir -p "$DIR" || exit 1
for spec in $SIZES; do
	size=${spec%%:*} files=${spec#*:}
	data=$DIR/$size
	[ -d "$data" ] || "$FERRY" gen --out "$data" --files "$files" --size "$size" --quiet || exit 1
	echo "== $files files of $size, batch $BATCH"
	"$FERRY" bench --ceilings-only --dir "$data" | sed -n '/^ceilings:/,$p'
	for round in $(seq "${ROUNDS:-1}"); do
		for state in cold half; do
			one buffered "$state" "$data" FERRY_ODIRECT=0
			one direct "$state" "$data" FERRY_ODIRECT=1
			one auto "$state" "$data" FERRY_ODIRECT=auto
			one auto_budget_0 "$state" "$data" FERRY_ODIRECT=auto FERRY_CACHE_BUDGET=0
		done
	done
	for run in 1 2; do
		one copy_path warm "$data" FERRY_PIN_BUDGET=0
		one default warm "$data"
	done
done
