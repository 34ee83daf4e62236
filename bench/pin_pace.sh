#!/bin/sh
# The zero-copy path's epochs (issue 23): registering a warm file holds up
# every copy's launch while it runs, and the registrar can pace itself
# (FERRY_PIN_PACE, a percent of the time; 100 by default). First the
# ceilings of each file set (`ferry bench --ceilings-only`: the pinned copy,
# O_DIRECT storage, the page cache and read-only threads). Then for the copy
# path alone (FERRY_PIN_BUDGET=0), the default settings and each
# FERRY_PIN_PACE in PACES: one `ferry read` of the warm files for EPOCHS
# epochs (a fresh process: registrations live as long as a context), one
# line from its per-epoch figures: GB/s and CPU s/GB of the first epoch, the
# second, epochs 2 to EPOCHS, and the last half (what an epoch costs once the
# registrar is done), and the loads that took the zero-copy path. An epoch
# ends when the next one's first batch arrives, so the window read ahead (up
# to 256 MiB) counts in the epoch before.
#
# Usage: sh bench/pin_pace.sh [DIR]   (DIR: ${TMPDIR:-/var/tmp}/ferry-pace)
# Variables: FERRY (build/ferry), SIZES ("64M:64 4M:1024": size:files),
#   PACES ("50 25"), EPOCHS (8, even), BATCH (4), ROUNDS (1)
FERRY=${FERRY:-build/ferry}
DIR=${1:-${TMPDIR:-/var/tmp}/ferry-pace}
SIZES=${SIZES:-"64M:64 4M:1024"}
PACES=${PACES:-"50 25"}
EPOCHS=${EPOCHS:-8}
BATCH=${BATCH:-4}
PY=${PYTHON:-python3}

# one DATA LABEL ENV...: one `ferry read` of EPOCHS epochs, one line from its
# per-epoch figures.
one() {
	data=$1 label=$2
	shift 2
	env "$@" "$FERRY" read --root "$data" --batch "$BATCH" --epochs "$EPOCHS" --json >"$DIR/run.json" ||
		{ echo "bench/pin_pace.sh: ferry read failed ($label)" >&2; return 1; }
	"$PY" - "$DIR/run.json" "$label" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
ep = d["per_epoch"]
def part(es):
    b = sum(e["bytes_delivered"] for e in es)
    s = sum(e["seconds"] for e in es)
    c = sum(e["cpu_seconds"] for e in es)
    return b / s / 1e9, c / (b / 1e9)
n, h = len(ep), len(ep) // 2
cols = [("epoch 1", ep[:1]), ("epoch 2", ep[1:2]), ("epochs 2-%d" % n, ep[1:]),
        ("epochs %d-%d" % (h + 1, n), ep[h:])]
print("%-10s " % sys.argv[2] + "  ".join("%s %6.2f GB/s %5.3f CPU s/GB" % ((c,) + part(es))
                                         for c, es in cols)
      + "  mapped %d/%d" % (d["files_mapped"], d["samples"]))
PYEOF
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
