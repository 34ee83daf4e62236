#!/bin/sh
# Converted payloads against C order (issue 20, section 3): float32 files of
# 4 MiB (1024 x 1024, 64 files) and 64 MiB (4096 x 4096, 16 files) in C order,
# Fortran order, big-endian, and both, each dataset written by ferry gen,
# verified once (ferry read --verify: every byte against the tool's own CPU
# conversion) and then measured warm by ferry bench's ferry tool
# (ferry_load_into_async: read through staging, copied, converted on the
# device where it converts). Prints GB/s and files/s per case and the ratio to
# the C-order files of the same size, and ferry env's convert: line.
#
# Usage: sh bench/convert.sh [DIR]   (DIR: ${TMPDIR:-/var/tmp}/ferry-convert)
# Variables: FERRY (build/ferry), BACKENDS (posix), MIN_SECONDS (1),
#   SECONDS_LIMIT (3), SIZES (the datasets, "LABEL:SHAPE:FILES ...", default
#   "4M:1024x1024:64 64M:4096x4096:16"), QUICK=1 (64 KiB and 1 MiB files, a few
#   of each: for tests), KEEP=1 (keep the datasets), JSON=FILE (also write the
#   rows there).
# Another build's tool (FERRY=...) measures that build, e.g. one from before
# the device converted, whose loads convert on the host.
FERRY=${FERRY:-build/ferry}
DIR=${1:-${TMPDIR:-/var/tmp}/ferry-convert}
PYTHON=${PYTHON:-python3}
if [ -n "$QUICK" ]; then
	SIZES=${SIZES:-"64k:128x128:8 1M:512x512:4"}
	MIN_SECONDS=${MIN_SECONDS:-0.2} SECONDS_LIMIT=${SECONDS_LIMIT:-0.5}
else
	SIZES=${SIZES:-"4M:1024x1024:64 64M:4096x4096:16"}
fi

die() {
	echo "bench/convert.sh: $*" >&2
	exit 1
}

# ferry gen's options for one case.
flags_of() {
	case $1 in
	fortran) echo --fortran ;;
	big_endian) echo --big-endian ;;
	fortran_big_endian) echo --fortran --big-endian ;;
	esac
}

[ -x "$FERRY" ] || die "$FERRY not found (run make, or set FERRY)"
mkdir -p "$DIR" || die "cannot make $DIR"
"$FERRY" env | sed -n 's/^device: */device: /p; s/^convert: */convert: /p'

# The best ferry row of one ferry bench --json run: "gbps files_per_s".
best_row() {
	"$PYTHON" -c '
import json, sys
runs = [r for r in json.load(sys.stdin)["runs"] if r.get("tool") == "ferry" and r.get("available")]
best = max(runs, key=lambda r: r["gbps"])
print("%.6g %.6g" % (best["gbps"], best["files_per_s"]))'
}

# measure SIZE SHAPE FILES NAME FLAGS...: writes, verifies and benches one case.
measure() {
	size=$1 shape=$2 files=$3 name=$4
	shift 4
	d=$DIR/$size-$name
	"$FERRY" gen --out "$d" --files "$files" --shape "$shape" --seed 1 --quiet "$@" ||
		die "ferry gen failed for $d"
	"$FERRY" read --verify --quiet "$d"/*.npy || die "$d: ferry read --verify failed"
	"$FERRY" bench --dir "$d" --tools ferry --backends "${BACKENDS:-posix}" --cache warm \
		--min-seconds "${MIN_SECONDS:-1}" --seconds-limit "${SECONDS_LIMIT:-3}" --json \
		2>/dev/null | best_row
}

printf '%-6s %-20s %10s %10s %8s\n' size case GB/s files/s "vs C"
rows=""
for s in $SIZES; do
	size=${s%%:*} rest=${s#*:}
	shape=${rest%%:*} files=${rest#*:}
	c_gbps=""
	for cs in c fortran big_endian fortran_big_endian; do
		# shellcheck disable=SC2046
		got=$(measure "$size" "$shape" "$files" "$cs" $(flags_of "$cs")) || exit 1
		[ -n "$got" ] || die "$size $cs: ferry bench gave no ferry row"
		gbps=${got% *} fps=${got#* }
		[ -n "$c_gbps" ] || c_gbps=$gbps
		ratio=$(awk -v a="$gbps" -v b="$c_gbps" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
		printf '%-6s %-20s %10.2f %10.0f %8s\n' "$size" "$cs" "$gbps" "$fps" "$ratio"
		rows="$rows${rows:+,}
  {\"size\": \"$size\", \"shape\": \"$shape\", \"files\": $files, \"case\": \"$cs\", \"gbps\": $gbps, \"files_per_s\": $fps, \"ratio_to_c\": $ratio}"
	done
done
[ -z "$JSON" ] || printf '[%s\n]\n' "$rows" > "$JSON"
[ -n "$KEEP" ] || rm -rf "$DIR"
