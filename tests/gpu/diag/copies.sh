#!/bin/sh
# The copies of small batches (issue 18), one call on the GPU machine: what one
# copy costs (bench/copy_rate), then three builds side by side on 16 KiB files
# (tests/gpu/diag/ab_reader.sh): build/base (main before the change), build/eager
# (the IO thread that finishes a batch launches its pending copies) and build/
# (that and a launch's copies in one cuMemcpyBatchAsync); the trace's counts
# of the caller's launches and waits and the mutex waits by call site
# (lockprof.c) of each; the tests these changes touch with FERRY_DEVICE=cuda;
# 128 KiB files; perf. Usage: OUT=dir [T=seconds] sh tests/gpu/diag/copies.sh
# (carry: tests/gpu/README; T: steps past it are skipped)
# Summary logs at the top of $OUT as they are made (a cut call still returns them).
cd "$(dirname "$0")/../../.." || exit 1
O=${OUT:-gpu-out}; mkdir -p "$O"; W=/tmp/work; D=/var/tmp/ferry-bench; mkdir -p "$D" "$W"
T=${T:-520} # seconds this call may take: later steps are skipped past it
S=$(date +%s); left() { echo $(( T - ($(date +%s) - S) )); }
el() { echo "== $1 at $(( $(date +%s) - S )) s" >> "$O/times.log"; }
nvidia-smi -L > "$O/times.log"; nproc >> "$O/times.log"
FERRY_DEVICE=cuda build/bench/copy_rate > "$O/copy_rate.log" 2>&1
el "copy_rate"
build/ferry gen --out "$D/tiny" --files 131072 --size 16k --quiet
build/ferry gen --out "$D/small" --files 16384 --size 128k --quiet &
el "data"
ab() { OUT=$W/$1 BENCH_DATA=$D A=$2 B=$3 SETS="$4" ROUNDS=2 sh tests/gpu/diag/ab_reader.sh >/dev/null 2>&1
       { echo "== $1: A $2 B $3"; cat "$W/$1/ab_reader.log"; } >> "$O/ab_reader.log"; el "$1"; }
ab ab1 build/base build/eager tiny
ab ab2 build/eager build tiny
wait
gcc -shared -fPIC -O2 -o build/lockprof.so tests/gpu/diag/lockprof.c -ldl
for side in base eager batch; do
  F=$PWD/build/ferry; [ $side = base ] && F=$PWD/build/base/ferry; [ $side = eager ] && F=$PWD/build/eager/ferry
  OUT=$W/rs-$side BENCH_DATA=$D PERF= PROFILE_ONLY=1 RUNS="tiny:4 tiny:32" FERRY=$F \
    sh tests/gpu/diag/reader_small.sh >/dev/null 2>&1
  grep "== trace" "$W/rs-$side/reader_small.log" | sed "s/^/$side: /" >> "$O/reader_small.log"
  FERRY_DEVICE=cuda LD_PRELOAD=$PWD/build/lockprof.so "$F" read --root "$D/tiny" --batch 4 --epochs 3 --quiet 2>"$W/lp-$side.raw"
  echo "== lockprof $side tiny b4 3 epochs" >> "$O/lockprof.log"
  sort -t" " -k8 -g -r "$W/lp-$side.raw" | head -10 | while read -r _ site rest; do
    echo "$(addr2line -f -e "${site%+*}" "${site#*+}" 2>/dev/null | head -1) $site $rest"; done >> "$O/lockprof.log"
done
el "traces and lockprof"
[ "$(left)" -gt 100 ] && FERRY_DEVICE=cuda PYTHON=$(command -v python3) FERRY_BUILD=build TEST_TIMEOUT=90 \
  TESTS="test_device_copy_batch test_device_events test_staging_units test_staging_race_seed test_staging_stress test_fault_engine test_reader_stacked test_reader_packing test_bench_smoke test_soak test_staging_cover test_staging_start" sh tests/run.sh > "$O/tests.log" 2>&1
el "tests"
[ "$(left)" -gt 150 ] && ab ab3 build/eager build small
PERF="$PWD/build/perf/ld-linux-x86-64.so.2 --library-path $PWD/build/perf $PWD/build/perf/perf"
for side in eager batch; do
  [ "$(left)" -gt 60 ] || break
  F=$PWD/build/ferry; [ $side = eager ] && F=$PWD/build/eager/ferry
  OUT=$W/perf-$side BENCH_DATA=$D PERF="$PERF" PROFILE_ONLY=1 RUNS="tiny:4" FERRY=$F \
    sh tests/gpu/diag/reader_small.sh >/dev/null 2>&1
done
el "perf"
if nvidia-smi -L | grep -q H200; then
  left=$(left)
  [ $left -gt 60 ] && NO_BUILD=1 OUT=$W/convert timeout $left sh tests/gpu/convert.sh > "$O/convert.txt" 2>&1
  el "convert"
fi
mv "$O"/*.log "$O"/*.txt "$W"/ 2>/dev/null; cp -r "$W"/. "$O"/; rm -rf "$O"/*/perf.data
sh tests/gpu/pack.sh "$O"
