#!/bin/sh
# The next GPU call for issue 23's first epoch (about 3 minutes on an H100):
# main against main with tests/gpu/diag/pgctx.patch (the staging pools'
# blocks registered in the registrar's CUDA context, where there is one, so
# that a pool's growth holds no copy's launch up: the `g` gaps left in the
# first epoch's launches, bench/results/2026-12-07-0217-NVIDIA-H100/about.md).
# The patch also checks (test_mapped_beside, through the fault device's
# t_fault_calls_before) that no staging block is allocated before map_ready
# made that context: a block registered in the primary context would be
# unregistered in the other. In $OUT:
#   ab_pg.log     ab_first_epoch.sh A=build B=build/PG (first epoch, the
#                 epochs after it, traces' launch gaps; the means at the end);
#   pg_tests.log  the patched tree's staging and zero-copy tests on CUDA;
#   main_tests.log, memcheck-mapped.log  main's zero-copy tests on CUDA and
#                 compute-sanitizer over test_mapped_cache (the registrar's
#                 own context, on main since 499f7ed, not yet under memcheck).
# Build the carry on the build machine:
#   git worktree add --detach /tmp/pg HEAD && (cd /tmp/pg && git apply tests/gpu/diag/pgctx.patch && make -j2)
#   cp -a /tmp/pg/build build/PG    (then strip and pack as tests/gpu/README says)
# Land the patch only if the default's first epoch gains with no loss later.
# Usage: OUT=dir sh tests/gpu/diag/pgctx.sh
cd "$(dirname "$0")/../../.." || exit 1
O=${OUT:-gpu-diag}
mkdir -p "$O"
[ -x build/PG/ferry ] || { echo "pgctx: no build/PG/ferry (see the header)"; exit 1; }
OUT="$O/ab" A=build B=build/PG SIZES="64M:64 4M:1024" ROUNDS=2 \
	timeout 200 sh tests/gpu/diag/ab_first_epoch.sh > "$O/ab_run.txt" 2>&1
cp "$O/ab/ab_first_epoch.log" "$O/ab_pg.log" 2>/dev/null
export FERRY_DEVICE=cuda TEST_TIMEOUT=150
BUILD=build/PG TESTS="test_mapped_beside test_mapped_cache test_fault_mapped test_reader_mapped
 test_staging_stress test_reader_stacked test_lanes test_load_sweep" \
	timeout 120 sh tests/run.sh > "$O/pg_tests.log" 2>&1
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 150 "$SAN" --tool memcheck --leak-check full --error-exitcode 99 \
	build/tests/test_mapped_cache > "$O/memcheck-mapped.log" 2>&1 &
BUILD=build TESTS="test_mapped_beside test_mapped_groups test_mapped_release test_change_mapped
 test_reader_mapped test_trace_mapped test_direct_auto test_fault_mapped test_python_gpu
 test_reader_stacked test_load_async test_staging_hold" \
	timeout 150 sh tests/run.sh > "$O/main_tests.log" 2>&1
wait
tail -n 1 "$O/pg_tests.log" "$O/main_tests.log"; grep -E "ERROR SUMMARY" "$O/memcheck-mapped.log"
tail -n 30 "$O/ab_pg.log"
