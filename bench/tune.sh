#!/bin/sh
# bench/tune.sh — measures ferry's staging settings, so that its defaults come
# from numbers: each LANES:BUFFERS setting (FERRY_LANES, FERRY_MAX_BUFFERS) on
# the warm large, medium and small workloads (posix, default threads), one
# `ferry bench` each, against the first setting as the baseline.
#
# usage: sh bench/tune.sh [SETTING ...]     (default: 1:64 2:64 4:64 2:128 4:128 4:256 8:256)
#
# Prints a table (GB/s and the ratio to the baseline per workload) and a last
# line `best LANES BUFFERS`: the setting with the highest geometric mean of
# the ratios among those that lose no more than 3% on any workload.
# Environment: FERRY_BUILD (build), BENCH_DATA (as bench/run.sh, whose
# --datasets writes them for both; ferry bench writes any that are missing),
# TUNE_OUT (the JSON of each run; a temporary directory), RUN_LIMIT (seconds a
# run may take, 1).
set -u
cd "$(dirname "$0")/.." || exit 1
case ${1:-} in -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

FERRY=${FERRY_BUILD:-build}/ferry
DATA=${BENCH_DATA:-${TMPDIR:-/var/tmp}/ferry-bench}
OUTDIR=${TUNE_OUT:-$(mktemp -d)}
SETTINGS=${*:-1:64 2:64 4:64 2:128 4:128 4:256 8:256}
[ -x "$FERRY" ] || { echo "bench/tune.sh: $FERRY not built (run make)" >&2; exit 1; }
mkdir -p "$OUTDIR" || exit 1

for w in large medium small; do
	for s in $SETTINGS; do
		FERRY_LANES=${s%%:*} FERRY_MAX_BUFFERS=${s#*:} "$FERRY" bench --json --workload $w \
			--dir "$DATA/$w" --cache warm --tools ferry --backends posix \
			--seconds-limit "${RUN_LIMIT:-1}" --min-seconds 0.5 \
			>"$OUTDIR/$w-$(echo "$s" | tr : x).json" || echo "bench/tune.sh: $w $s failed" >&2
	done
done
python3 - "$OUTDIR" $SETTINGS <<'EOF'
import json, math, sys
outdir, settings = sys.argv[1], sys.argv[2:]
workloads = ["large", "medium", "small"]
def gbps(w, s):
    try:
        with open(f"{outdir}/{w}-{s.replace(':', 'x')}.json") as f:
            runs = [r for r in json.load(f)["runs"] if r["tool"] == "ferry"]
        return runs[0]["gbps"] or 0.0
    except (OSError, ValueError, KeyError, IndexError):
        return 0.0
table = {s: [gbps(w, s) for w in workloads] for s in settings}
base = table[settings[0]]
print("lanes:buffers " + " ".join(f"{w:>16}" for w in workloads) + "  geomean")
best, best_score = settings[0], 1.0
for s in settings:
    ratios = [g / b if b else 0.0 for g, b in zip(table[s], base)]
    score = math.prod(ratios) ** (1 / len(ratios)) if all(ratios) else 0.0
    print(f"{s:>13} " + " ".join(f"{g:7.2f} ({r:4.2f}x)" for g, r in zip(table[s], ratios))
          + f"  {score:.3f}")
    if min(ratios) >= 0.97 and score > best_score:
        best, best_score = s, score
print("best", *best.split(":"))
EOF
