#!/bin/sh
# The next GPU call for issue 23's first epoch (about 2 minutes on an H100): main
# against main with tests/gpu/diag/regctx.patch (registrations in a CUDA
# context of their own, no hold of the lanes' launches meanwhile), built
# here with liburing and carried whole as build/RC (tests included: they are
# statically linked). In $OUT:
#   register_ctx.log  what a second context costs (time, device memory) and
#                     whether the primary's copies run beside its registrations;
#   rc_tests.log      the zero-copy tests of the patched tree with the CUDA
#                     device (test_mapped_beside among them);
#   ab_regctx.log     ab_first_epoch.sh A=build B=build/RC (first epoch, the
#                     epochs after it, traces whose launch gaps are marked r
#                     where a registration overlapped them, g a pool's growth).
# Build the carry on the build machine:
#   git worktree add /tmp/rc HEAD && (cd /tmp/rc && git apply tests/gpu/diag/regctx.patch && make -j2)
#   cp -a /tmp/rc/build build/RC    (then strip and pack as tests/gpu/README says)
# Usage: OUT=dir sh tests/gpu/diag/regctx.sh
cd "$(dirname "$0")/../../.." || exit 1
O=${OUT:-gpu-diag}
DATA=${DATA:-${TMPDIR:-/var/tmp}/ferry-pace}
mkdir -p "$O" build/diag "$DATA"
[ -x build/RC/ferry ] || { echo "regctx: no build/RC/ferry (see the header)"; exit 1; }
{ nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv; uname -r; } > "$O/gpu.txt" 2>&1
[ -d "$DATA/64M" ] || build/ferry gen --out "$DATA/64M" --files 64 --size 64M --quiet
cat "$DATA"/64M/*.npy >/dev/null
cc -O2 -I/usr/local/cuda/include -o build/diag/register_ctx tests/gpu/diag/register_ctx.c \
	-ldl -lpthread && timeout 90 build/diag/register_ctx "$DATA/64M" > "$O/register_ctx.log" 2>&1
FERRY_DEVICE=cuda BUILD=build/RC TEST_TIMEOUT=150 TESTS="test_mapped_beside test_mapped_groups
 test_mapped_cache test_mapped_release test_fault_mapped test_change_mapped test_reader_mapped
 test_trace_mapped test_direct_auto test_reader_stacked test_load_async" \
	timeout 300 sh tests/run.sh > "$O/rc_tests.log" 2>&1
OUT="$O/ab" A=build B=build/RC DATA="$DATA" SIZES="64M:64 4M:1024" ROUNDS=2 \
	timeout 300 sh tests/gpu/diag/ab_first_epoch.sh > "$O/ab_run.txt" 2>&1
cp "$O/ab/ab_first_epoch.log" "$O/ab_regctx.log" 2>/dev/null
tail -n 1 "$O/rc_tests.log"; grep -E '^a second|copies before' "$O/register_ctx.log"
