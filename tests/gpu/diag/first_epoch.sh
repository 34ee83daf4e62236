#!/bin/sh
# The next GPU call for issue 23's first epoch (about 4 minutes on an H100):
# main (A) against B = build/YG, tests/gpu/diag/yield_growth.patch (the
# registrar registers nothing while a lane's staging pool grows), four rounds.
# At -0757- (bench/results/2026-12-07-0757-NVIDIA-H100/about.md), in two
# rounds, B's first epoch over 4 MiB files ran at 1.09 of its copy path's
# against main's 0.89, over 64 MiB files at 0.97 against 0.99; its
# registrations start later, so fewer loads were mapped afterwards (26 fewer
# of 512 in one round over 64 MiB files, 11% fewer over 4 MiB files), at
# GB/s within 1.2% of main's; and one 13 ms stall of the whole process in one
# of B's rounds showed how little two rounds decide. Land B only if its
# first-epoch gain holds over four rounds with no loss in epochs 2-8.
# In $OUT:
#   ab_first.log  ab_first_epoch.sh A=build B=build/YG (first epoch, the
#                 epochs after it, the traces' launch gaps by what ran beside
#                 them; the means at the end);
#   yg_tests.log  the yield_growth tree's zero-copy and staging tests on CUDA,
#                 test_mapped_growth (the patch's own) among them.
# Build the carry on the build machine:
#   git worktree add --detach /tmp/YG HEAD && (cd /tmp/YG && git apply tests/gpu/diag/yield_growth.patch && make -j2)
#   cp -a /tmp/YG/build build/YG    (then strip and pack as tests/gpu/README says)
# Usage: OUT=dir sh tests/gpu/diag/first_epoch.sh
cd "$(dirname "$0")/../../.." || exit 1
O=${OUT:-gpu-diag}
mkdir -p "$O"
[ -x build/YG/ferry ] || { echo "first_epoch: no build/YG/ferry (see the header)"; exit 1; }
OUT="$O/ab" A=build B=build/YG SIZES="64M:64 4M:1024" ROUNDS=4 \
	timeout 330 sh tests/gpu/diag/ab_first_epoch.sh > "$O/ab_run.txt" 2>&1
cp "$O/ab/ab_first_epoch.log" "$O/ab_first.log" 2>/dev/null
export FERRY_DEVICE=cuda TEST_TIMEOUT=150 PYTHON="$(command -v python3)"
BUILD=build/YG TESTS="test_mapped_growth test_mapped_beside test_mapped_cache test_fault_mapped
 test_reader_mapped test_staging_stress test_staging_units test_lanes" \
	timeout 120 sh tests/run.sh > "$O/yg_tests.log" 2>&1
tail -n 1 "$O/yg_tests.log"
tail -n 30 "$O/ab_first.log"
