#!/bin/sh
# The zero-copy path's epochs (issue 23): registering a warm file holds up the
# GPU's copies while it runs, so the registrar paces itself (FERRY_PIN_PACE, a
# percent of the time). First the ceilings of each file set (`ferry bench
# --ceilings-only`: the pinned copy, O_DIRECT storage, the page cache and
# read-only threads). Then for the copy path alone (FERRY_PIN_BUDGET=0), the
# default settings and each FERRY_PIN_PACE in PACES: `ferry read` of the same
# warm files for 1, EPOCHS/2 and EPOCHS epochs (fresh processes: registrations
# live as long as a context), one line each with the first epoch's GB/s, the
# later epochs' GB/s ((bytes(E) - bytes(1)) / (seconds(E) - seconds(1))), the
# last half's GB/s and CPU s/GB (epochs EPOCHS/2+1 to EPOCHS, the same
# differences: what every epoch costs once the registrar is done), the files
# that took the zero-copy path in the EPOCHS run, and its CPU s/GB over all
# epochs.
#
# Usage: sh bench/pin_pace.sh [DIR]   (DIR: ${TMPDIR:-/var/tmp}/ferry-pace)
# Variables: FERRY (build/ferry), SIZES ("64M:64 4M:1024": size:files),
#   PACES ("100 25 10"), EPOCHS (8, even), BATCH (4), ROUNDS (1)
FERRY=${FERRY:-build/ferry}
DIR=${1:-${TMPDIR:-/var/tmp}/ferry-pace}
SIZES=${SIZES:-"64M:64 4M:1024"}
PACES=${PACES:-"100 25 10"}
EPOCHS=${EPOCHS:-8}
BATCH=${BATCH:-4}

# field JSON NAME: one number of a `ferry read --json` line.
field() {
	echo "$1" | sed -n "s/.*\"$2\": \([0-9.]*\).*/\1/p"
}

# run DATA EPOCHS ENV...: "bytes seconds mapped cpu" of one ferry read.
run() {
	data=$1 epochs=$2
	shift 2
	out=$(env "$@" "$FERRY" read --root "$data" --batch "$BATCH" --epochs "$epochs" --json &&
		times) || { echo "bench/pin_pace.sh: ferry read failed ($*)" >&2; return 1; }
	line=$(echo "$out" | head -n 1)
	cpu=$(echo "$out" | tail -n 1 | awk '{ for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); c += t[1] * 60 + t[2] } print c }')
	echo "$(field "$line" bytes_delivered) $(field "$line" seconds) $(field "$line" files_mapped) $cpu"
}

# one DATA LABEL ENV...: the line of one setting.
one() {
	data=$1 label=$2
	shift 2
	set -- "$(run "$data" 1 "$@")" "$(run "$data" $((EPOCHS / 2)) "$@")" "$(run "$data" "$EPOCHS" "$@")"
	echo "$1 $2 $3" | awk -v label="$label" -v e="$EPOCHS" '{
		first = $1 / $2 / 1e9; later = ($9 - $1) / ($10 - $2) / 1e9
		last = ($9 - $5) / ($10 - $6) / 1e9; last_cpu = ($12 - $8) / (($9 - $5) / 1e9)
		printf "%-12s first epoch %6.2f GB/s   epochs 2-%d %6.2f GB/s   epochs %d-%d %6.2f GB/s %6.3f CPU s/GB   mapped %6d   all %6.3f CPU s/GB\n",
		       label, first, e, later, e / 2 + 1, e, last, last_cpu, $11, $12 / ($9 / 1e9) }'
}

mkdir -p "$DIR" || exit 1
"$FERRY" env | sed -n 's/^mapped: */mapped: /p'
for spec in $SIZES; do
	size=${spec%%:*} files=${spec#*:}
	data=$DIR/$size
	[ -d "$data" ] || "$FERRY" gen --out "$data" --files "$files" --size "$size" --quiet || exit 1
	cat "$data"/*.npy > /dev/null
	echo "== $files files of $size, warm, batch $BATCH, $EPOCHS epochs"
	"$FERRY" bench --ceilings-only --dir "$data" | sed -n '/^ceilings:/,$p'
	for round in $(seq "${ROUNDS:-1}"); do
		one "$data" copy_path FERRY_PIN_BUDGET=0
		one "$data" default
		for p in $PACES; do
			one "$data" "pace_$p" FERRY_PIN_PACE="$p"
		done
	done
done
