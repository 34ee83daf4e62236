#!/bin/sh
# The CUDA device's conversion kernels as committed: src/device/convert_ptx.h,
# the PTX of src/device/convert.cu as a C string (src/device/ptx_to_c.sh).
# It must name every kernel cuda.c looks up (ferry_swap_2..16,
# ferry_transpose_1..16) with PTX ISA 7.0; where ptxas is found it must
# assemble for sm_75, sm_80, sm_90 and sm_100; where nvcc is found and is the
# version that generated the file, regenerating it must give the committed
# file (the .cu and the string cannot drift apart). Skips (77) when neither
# ptxas nor nvcc is there. CUDA_HOME: the toolkit (/usr/local/cuda).
cd "$(dirname "$0")/.." || exit 1
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
PTXAS=$(dirname "$NVCC")/ptxas
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
fail=0

# The string, as the driver gets it.
cat > "$TMP/print.c" <<'EOF'
#include <stdio.h>
#include "device/convert_ptx.h"
int main(void) { fputs(ferry__convert_ptx, stdout); return 0; }
EOF
${CC:-cc} -Isrc -o "$TMP/print" "$TMP/print.c" && "$TMP/print" > "$TMP/convert.ptx" ||
	{ echo "FAIL: src/device/convert_ptx.h does not compile into a string"; exit 1; }
grep -q '^\.version 7\.0$' "$TMP/convert.ptx" || { echo "FAIL: the PTX is not ISA 7.0"; fail=1; }
for k in swap_2 swap_4 swap_8 swap_16 transpose_1 transpose_2 transpose_4 transpose_8 transpose_16; do
	grep -q "^\.visible \.entry ferry_$k(" "$TMP/convert.ptx" ||
		{ echo "FAIL: the PTX has no kernel ferry_$k"; fail=1; }
done

checked=0
if [ -x "$PTXAS" ]; then
	for arch in sm_75 sm_80 sm_90 sm_100; do
		if "$PTXAS" -arch=$arch "$TMP/convert.ptx" -o /dev/null 2> "$TMP/ptxas.log"; then
			echo "ptxas -arch=$arch: ok"
		else
			echo "FAIL: ptxas -arch=$arch:"; sed 's/^/    /' "$TMP/ptxas.log"; fail=1
		fi
	done
	checked=1
fi
if [ -x "$NVCC" ]; then
	have=$("$NVCC" --version | sed -n 's/.*release [0-9.]*, V\([0-9.]*\).*/\1/p')
	made=$(sed -n '1s/.* with nvcc \([0-9.]*\).*/\1/p' src/device/convert_ptx.h)
	if [ "$have" = "$made" ]; then
		if sh src/device/ptx_to_c.sh "$NVCC" src/device/convert.cu "$TMP/again.h" &&
			cmp -s "$TMP/again.h" src/device/convert_ptx.h; then
			echo "nvcc $have: regenerated, same as committed"
		else
			echo "FAIL: src/device/convert_ptx.h is not what convert.cu compiles to (run make)"
			fail=1
		fi
	else
		echo "nvcc $have, file made by nvcc $made: not regenerated"
	fi
	checked=1
fi
if [ $checked = 0 ]; then
	echo "skip: no ptxas or nvcc under $CUDA_HOME"
	[ $fail = 0 ] && exit 77
fi
exit $fail
