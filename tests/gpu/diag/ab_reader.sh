#!/bin/sh
# Two builds' readers on the same warm files, alternating (A, B, A, B), in one
# call on the GPU machine: the C reader rows (`ferry bench --tools reader`,
# the ceilings of each run beside them) and the Python reader's stacked rows
# (bench/python_reader.py with each build's libferry). One line a row.
# Usage: OUT=dir BENCH_DATA=dir A=dir B=dir [ENV_A="VAR=v ..."] [ENV_B=...]
#        [SETS="tiny small"] [BATCHES=1,4,32,256] [ROUNDS=2] sh tests/gpu/diag/ab_reader.sh
# (A and B: build directories, each with ferry and libferry.so; they may be
# the same build, with ENV_A and ENV_B the settings compared, e.g.
# A=build B=build ENV_A=FERRY_CUDA_WAIT=spin ENV_B=FERRY_CUDA_WAIT=poll)
cd "$(dirname "$0")/../../.." || exit 1
O=${OUT:-gpu-diag}
DATA=${BENCH_DATA:-${TMPDIR:-/var/tmp}/ferry-bench}
SETS=${SETS:-tiny small}
BATCHES=${BATCHES:-1,4,32,256}
ROUNDS=${ROUNDS:-2}
PY=${PYTHON:-python3}
mkdir -p "$O"
LOG=$O/ab_reader.log
: >"$LOG"

# rows FILE LABEL: the JSON's runs as lines.
rows() {
	"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = d.get("ceilings") or {}
if c.get("read_only_gbps"):
    print("%-8s %-22s       %9.0f files/s %6.2f GB/s (pinned copy %.2f GB/s)" % (sys.argv[2],
          "read_only", c.get("read_only_files_per_s") or 0, c.get("read_only_gbps") or 0,
          c.get("pinned_h2d_gbps") or 0))
for r in d["runs"]:
    if r.get("tool") in ("reader", "python_reader_stacked") and r.get("available", True):
        print("%-8s %-22s b%-4s %9.0f files/s %6.2f GB/s %6.3f CPU s/GB" % (sys.argv[2], r["tool"],
              r.get("batch_size"), r.get("files_per_s") or 0, r.get("gbps") or 0,
              r.get("cpu_s_per_gb") or 0))' "$1" "$2"
}

for set in $SETS; do
	for round in $(seq "$ROUNDS"); do
		for side in A B; do
			eval dir=\$$side settings=\$ENV_$side
			f=$O/ab-$set-$side-$round
			env $settings "$dir/ferry" bench --json --dir "$DATA/$set" --workload "files-$set" --cache warm \
				--tools reader --batch-sizes "$BATCHES" --seconds-limit 1 --min-seconds 0.5 \
				--warmup-seconds 0.25 >"$f-c.json" 2>>"$LOG" && rows "$f-c.json" "$side$round" >>"$LOG"
			env $settings FERRY_LIBRARY=$dir/libferry.so PYTHONPATH=$PWD/python "$PY" bench/python_reader.py \
				--dir "$DATA/$set" --workload "$set" --tools python_reader_stacked \
				--batch-sizes "$BATCHES" --seconds-limit 1 --min-seconds 0.5 >"$f-py.json" \
				2>"$f-py.err" && rows "$f-py.json" "$side$round" >>"$LOG"
		done
	done
done
cat "$LOG"
