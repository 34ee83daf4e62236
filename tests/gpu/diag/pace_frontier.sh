#!/bin/sh
# Issue 23's two targets trade against each other through FERRY_PIN_PACE: the
# registrations made during the first epoch slow it, and the ones not made
# then leave epoch 2 on the copy path. This measures the trade on one warm file
# set (FILES files of SIZE): flat out with tests/gpu/diag/ab_env_epochs.sh
# (the copy path, then pace 100, 75 and 50, ROUNDS rounds interleaved), then
# inside a training loop with bench/pin_idle.py (a step of STEPS ms after each
# batch, the copy path and the default alternating, ROUNDS runs a side).
# Usage: OUT=dir [SIZE=64M] [FILES=256] [ROUNDS=8] [STEPS="5 20"]
#        sh tests/gpu/diag/pace_frontier.sh
cd "$(dirname "$0")/../../.." || exit 1
O=${OUT:-gpu-diag}
mkdir -p "$O"
export SIZE=${SIZE:-64M} FILES=${FILES:-256} ROUNDS=${ROUNDS:-8}
DATA=${TMPDIR:-/var/tmp}/ferry-frontier
export DATA
OUT=$O sh tests/gpu/diag/ab_env_epochs.sh "copy_path FERRY_PIN_BUDGET=0" "pace100" \
	"pace75 FERRY_PIN_PACE=75" "pace50 FERRY_PIN_PACE=50" >"$O/frontier_flat.log" 2>&1
cat "$O/frontier_flat.log"
pairs=$(for i in $(seq "$ROUNDS"); do printf 'FERRY_PIN_BUDGET=0 FERRY_PIN_PACE=100 '; done)
for step in ${STEPS:-5 20}; do
	PYTHONPATH=python FERRY_LIBRARY=build/libferry.so python3 bench/pin_idle.py \
		--dir "$DATA/$SIZE" --epochs 2 --step-ms "$step" --settings "$pairs" \
		>"$O/frontier_idle_$step.log" 2>&1
	python3 - "$O/frontier_idle_$step.log" "$step" <<'PYEOF'
import collections, math, re, statistics, sys
first = collections.defaultdict(list)
setting = None
for line in open(sys.argv[1]):
    m = re.match(r"== (\S+),", line)
    if m:
        setting = m.group(1)
    m = re.match(r"\s+epoch 1: .* loader time ([0-9.]+) s", line)
    if m:
        first[setting].append(float(m.group(1)))
for s, v in first.items():
    se = statistics.stdev(v) / math.sqrt(len(v)) if len(v) > 1 else 0
    print("step %s ms  %-20s n %d  first epoch's loader time %.3f +- %.3f s  (%s)"
          % (sys.argv[2], s, len(v), sum(v) / len(v), se, " ".join("%.3f" % x for x in v)))
PYEOF
done | tee "$O/frontier_idle.txt"
