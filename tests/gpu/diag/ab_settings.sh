#!/bin/sh
# One build's reader under several settings, each beside the build's defaults
# in the same rounds (tests/gpu/diag/ab_reader.sh with A = B = the build and
# ENV_B the setting), on one warm file set: which setting is worth making the
# default. One summary block a setting in $OUT/ab_settings.log; settings that
# would start past T seconds are skipped (a cut call still returns the rest).
# Usage: OUT=dir BENCH_DATA=dir [BUILD=build] [SET=tiny] [BATCHES=4,32]
#        [ROUNDS=2] [T=seconds] sh tests/gpu/diag/ab_settings.sh "VAR=v ..." ...
cd "$(dirname "$0")/../../.." || exit 1
O=${OUT:-gpu-diag}
BUILD=${BUILD:-build}
T=${T:-400}
mkdir -p "$O"
S=$(date +%s)
n=0
for setting in "$@"; do
	n=$((n + 1))
	if [ $(( $(date +%s) - S )) -gt "$T" ]; then
		echo "== $setting: skipped (past T=$T s)" >>"$O/ab_settings.log"
		continue
	fi
	OUT=$O/s$n A=$BUILD B=$BUILD ENV_B="$setting" SETS=${SET:-tiny} BATCHES=${BATCHES:-4,32} \
		ROUNDS=${ROUNDS:-2} sh tests/gpu/diag/ab_reader.sh >/dev/null 2>&1
	{ echo "== A: defaults, B: $setting ($(( $(date +%s) - S )) s)"; cat "$O/s$n/ab_reader.log"; } \
		>>"$O/ab_settings.log"
done
cat "$O/ab_settings.log"
