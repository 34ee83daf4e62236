#!/bin/sh
# The next GPU call for issue 23's first epoch (about 4 minutes on an H100):
# main (A) against two patches of it, each built on its own:
#   B = build/YG: tests/gpu/diag/yield_growth.patch, the registrar registers
#       nothing while a lane's staging pool grows. In the traces of
#       bench/results/2026-12-07-0548-NVIDIA-H100 the longest gaps in the first
#       epoch's launches beside a pool's growth ran 4.0-6.7 ms where a
#       registration ran too, against 2.3-3.4 ms in the copy path's, and 34-35
#       ms of its gaps lay beside growths against 24-30 (a growth registers
#       its block in the lanes' context; the driver registers one thing at a
#       time). Its cost to watch: registrations start later, so epoch 2 may
#       map fewer loads (pin_pace's "mapped" column).
#   C = build/NI: tests/gpu/diag/registrar_nice.patch, the registrar thread
#       at nice 10: the copy path's first epoch keeps about 14 of 16 cores
#       busy (0.40 CPU s/GB at 35 GB/s), and the registrar's pinning takes a
#       core beside it. Same cost to watch.
# In $OUT:
#   ab_first.log  ab_first_epoch.sh A=build B=build/YG C=build/NI (first
#                 epoch, the epochs after it, traces' launch gaps by what ran
#                 beside them; the means at the end);
#   yg_tests.log  the yield_growth tree's zero-copy and staging tests on CUDA,
#                 test_mapped_growth (the patch's own) among them.
# Build the carry on the build machine, for each patch P into folder F
# (yield_growth.patch into YG, registrar_nice.patch into NI):
#   git worktree add --detach /tmp/F HEAD && (cd /tmp/F && git apply tests/gpu/diag/P && make -j2)
#   cp -a /tmp/F/build build/F    (then strip and pack as tests/gpu/README says)
# Land a patch only if the default's first epoch gains with no loss later.
# Usage: OUT=dir sh tests/gpu/diag/first_epoch.sh
cd "$(dirname "$0")/../../.." || exit 1
O=${OUT:-gpu-diag}
mkdir -p "$O"
for f in YG NI; do
	[ -x build/$f/ferry ] || { echo "first_epoch: no build/$f/ferry (see the header)"; exit 1; }
done
OUT="$O/ab" A=build B=build/YG C=build/NI SIZES="64M:64 4M:1024" ROUNDS=2 \
	timeout 330 sh tests/gpu/diag/ab_first_epoch.sh > "$O/ab_run.txt" 2>&1
cp "$O/ab/ab_first_epoch.log" "$O/ab_first.log" 2>/dev/null
export FERRY_DEVICE=cuda TEST_TIMEOUT=150 PYTHON="$(command -v python3)"
BUILD=build/YG TESTS="test_mapped_growth test_mapped_beside test_mapped_cache test_fault_mapped
 test_reader_mapped test_staging_stress test_staging_units test_lanes" \
	timeout 120 sh tests/run.sh > "$O/yg_tests.log" 2>&1
tail -n 1 "$O/yg_tests.log"
tail -n 40 "$O/ab_first.log"
