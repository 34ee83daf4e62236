#!/bin/sh
# Session of 2026-12-07 (evening), first GPU call: the GPU tests of the data
# path and of the zero-copy path (mapped.c changed at 18fd22b), then the
# first-offers rule measured (ab_env_epochs), then pin_idle at pace 75.
tar xJf .carry/c6.tar.xz && rm -rf build && mv build-gpu build || exit 1
mkdir -p o4 && tar xJf .carry/c4.tar.xz -C o4 && mv o4/build-gpu build-old || exit 1
S=$(date +%s)
FERRY_DEVICE=cuda PYTHON="$(command -v python3)" FERRY_BUILD=build TEST_TIMEOUT=150 TEST_JOBS=1 \
TESTS="test_mapped_beside test_mapped_cache test_mapped_groups test_mapped_release test_fault_mapped
 test_change_mapped test_change_reader_mapped test_reader_mapped test_trace_mapped test_direct_auto" \
	sh tests/run.sh > "$OUT/mapped.txt" 2>&1 &
OUT=$OUT/core sh tests/gpu/core.sh > "$OUT/core.txt" 2>&1
wait
echo "tests $(( $(date +%s) - S )) s" >> "$OUT/core.txt"
OUT=$OUT/ab SIZE=64M FILES=256 ROUNDS=${ROUNDS:-8} DATA=/var/tmp/ferry-frontier sh tests/gpu/diag/ab_env_epochs.sh \
	"copy_path FERRY_PIN_BUDGET=0" pace100 "old75 BIN=build-old/ferry FERRY_PIN_PACE=75" \
	"again75 FERRY_PIN_PACE=75" "again50 FERRY_PIN_PACE=50" > "$OUT/ab.txt" 2>&1
echo "ab $(( $(date +%s) - S )) s" >> "$OUT/ab.txt"
pairs=$(for i in 1 2 3 4 5 6 7 8; do printf 'FERRY_PIN_BUDGET=0 FERRY_PIN_PACE=75 '; done)
PYTHONPATH=python FERRY_LIBRARY=build/libferry.so timeout 120 python3 bench/pin_idle.py \
	--dir /var/tmp/ferry-frontier/64M --epochs 2 --step-ms 5 --settings "$pairs" > "$OUT/idle75.log" 2>&1
echo "all $(( $(date +%s) - S )) s" >> "$OUT/idle75.log"
sh tests/gpu/pack.sh "$OUT"
