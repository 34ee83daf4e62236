#!/bin/sh
# One device call (about 6 minutes) that checks a round of changes made on a
# machine without a GPU: tests/gpu/core.sh (the reader, loader, engine and
# Python GPU tests with FERRY_DEVICE=cuda) while the 16 KiB and 128 KiB file
# sets are written, then tests/gpu/diag/ab_reader.sh of the build carried in
# build/base (the commit before the changes: its ferry and libferry.so)
# against build/, then bench/pin_idle.py on 4 MiB files (the registrar while
# a job computes between batches, and flat out). Logs land in $OUT, packed.
# Usage: OUT=dir sh tests/gpu/validate.sh   (build/base: see tests/gpu/README)
cd "$(dirname "$0")/../.." || exit 1
O=${OUT:-gpu-out}
D=${BENCH_DATA:-/var/tmp/ferry-bench}
mkdir -p "$O" "$D"
S=$(date +%s)
elapsed() { echo "== $1 at $(( $(date +%s) - S )) s"; }
{ build/ferry gen --out "$D/tiny" --files 131072 --size 16k --quiet &&
  build/ferry gen --out "$D/small" --files 16384 --size 128k --quiet; } &
OUT=$O/core sh tests/gpu/core.sh
wait
elapsed "core suite and data"
if [ -x build/base/ferry ]; then
	OUT=$O/ab BENCH_DATA=$D A=build/base B=build SETS="tiny small" ROUNDS=2 \
		sh tests/gpu/diag/ab_reader.sh
	cat "$O/ab/ab_reader.log"
	elapsed "A/B"
fi
build/ferry gen --out "$D/medium" --files 1024 --size 4M --quiet && cat "$D"/medium/*.npy >/dev/null
lib="PYTHONPATH=python FERRY_LIBRARY=build/libferry.so"
{ env $lib python3 bench/pin_idle.py --dir "$D/medium" --epochs 3 --step-ms 20 \
	--settings "FERRY_PIN_PACE=50 FERRY_PIN_PACE=100"
  env $lib python3 bench/pin_idle.py --dir "$D/medium" --epochs 3 --step-ms 0 \
	--settings "FERRY_PIN_PACE=50"; } >"$O/pin_idle.log" 2>&1
cat "$O/pin_idle.log"
elapsed "total"
sh tests/gpu/pack.sh "$O"
