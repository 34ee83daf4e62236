#!/bin/sh
# The GPU machine's check of the device conversions (issue 20, section 3), one
# call of a few minutes: ferry env's convert: line; the CUDA kernels against a
# naive reference (test_device_convert) and, for 64 MiB arrays, against the
# CPU's conversion with their rates (--big); every load path with
# FERRY_DEVICE=cuda (test_load_convert, test_convert_numpy.py); the kernels
# under compute-sanitizer's memcheck (leaks included) and racecheck; then
# bench/convert.sh (4 MiB and 64 MiB files, Fortran order and big-endian
# against C order, warm). Builds what it needs unless NO_BUILD=1 (build/
# carried). Logs land in $OUT (./gpu-out); the last line counts failed steps.
# Usage: sh tests/gpu/convert.sh
cd "$(dirname "$0")/../.." || exit 1
O=${OUT:-gpu-out}
mkdir -p "$O"
export FERRY_DEVICE=cuda FERRY_BUILD=build PYTHON="${PYTHON:-$(command -v python3)}"
SAN=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
if [ -z "$NO_BUILD" ]; then
	make -j"$(nproc)" build/ferry build/libferry.so build/tests/test_device_convert \
		build/tests/test_load_convert > "$O/convert-build.log" 2>&1 ||
		{ tail -20 "$O/convert-build.log"; echo "convert: build failed"; exit 1; }
fi
failed=0

# step NAME COMMAND...: runs one step into $O/convert-NAME.log, shows its end.
step() {
	name=$1
	shift
	echo "== $name: $*"
	"$@" > "$O/convert-$name.log" 2>&1
	rc=$?
	tail -n 16 "$O/convert-$name.log"
	echo "$name: rc=$rc"
	[ $rc -eq 0 ] || failed=$((failed + 1))
}

step env build/ferry env
step kernels timeout 180 build/tests/test_device_convert
step big timeout 300 build/tests/test_device_convert --big
step loads timeout 300 build/tests/test_load_convert
step numpy timeout 300 "$PYTHON" tests/test_convert_numpy.py
step memcheck timeout 300 "$SAN" --tool memcheck --leak-check full --error-exitcode 1 \
	build/tests/test_device_convert
step racecheck timeout 300 "$SAN" --tool racecheck --error-exitcode 1 \
	build/tests/test_device_convert
step bench timeout 400 env JSON="$O/convert-bench.json" sh bench/convert.sh
echo "convert: $failed step(s) failed"
[ $failed -eq 0 ]
