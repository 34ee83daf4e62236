#!/bin/sh
# One call on the GPU machine: the suite, the multi-rank check with ranks
# sharing the one GPU, then the benchmark matrix. Results land in $OUT.
# Expects build/ carried from a machine with liburing (NO_BUILD=1).
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
sh tests/gpu/fake_udev.sh /var/tmp
sh tests/gpu/fake_udev.sh /tmp
NO_BUILD=1 OUT="$OUT" sh tests/gpu/run.sh >/dev/null 2>&1
grep -v '^    ' "$OUT/gpu-suite.log" | grep -E 'PASS|FAIL|SKIP|passed|premature|ratio|stress:' | tail -40
echo "== multi-rank (ranks share GPU 0)"
SHARE_GPU=1 timeout 150 sh tests/multi/run.sh 1 2 4 2>&1 | grep -E '^\{|Error|error' | tail -8 | tee "$OUT/multirank.log"
echo "== bench"
BENCH_BUDGET=${BENCH_BUDGET:-400} sh bench/run.sh >"$OUT/bench.log" 2>&1; echo "bench rc=$?"
tail -5 "$OUT/bench.log"
cp -r bench/results "$OUT/" 2>/dev/null
sh tests/gpu/pack.sh "$OUT"
