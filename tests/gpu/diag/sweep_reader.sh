#!/bin/sh
# The C reader on one warm file set under each of several settings, one line
# a run: what limits the reader where it misses its target (issue 18: 128 KiB
# files at batch 32 reach about 0.56 of the read-only ceiling). Each setting
# is a space-separated list of VAR=value ("-" for the defaults); the read-only
# ceiling and the pinned copy of each run are printed beside it.
# Usage: BENCH_DATA=dir [SET=small] [BATCHES=32] [ROUNDS=1] \
#        sh tests/gpu/diag/sweep_reader.sh "-" "FERRY_THREADS=8" "FERRY_CHUNK_SIZE=4M" ...
cd "$(dirname "$0")/../../.." || exit 1
DATA=${BENCH_DATA:-${TMPDIR:-/var/tmp}/ferry-bench}
SET=${SET:-small}
BATCHES=${BATCHES:-32}
PY=${PYTHON:-python3}
[ $# -gt 0 ] || set -- "-"
for round in $(seq "${ROUNDS:-1}"); do
	for setting in "$@"; do
		vars=$setting
		[ "$setting" = "-" ] && vars=
		# shellcheck disable=SC2086
		env $vars build/ferry bench --json --dir "$DATA/$SET" --workload "files-$SET" --cache warm \
			--tools reader --batch-sizes "$BATCHES" --seconds-limit 1 --min-seconds 0.5 \
			--warmup-seconds 0.25 2>/dev/null | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
c = d.get("ceilings") or {}
for r in d["runs"]:
    if r.get("tool") == "reader" and r.get("available", True):
        print("%-40s b%-4s %8.0f files/s %6.2f GB/s %6.3f CPU s/GB  (read-only %.2f, pinned %.2f GB/s)" % (
              sys.argv[1], r.get("batch_size"), r.get("files_per_s") or 0, r.get("gbps") or 0,
              r.get("cpu_s_per_gb") or 0, c.get("read_only_gbps") or 0, c.get("pinned_h2d_gbps") or 0))' "$setting"
	done
done
