#!/bin/sh
# Where a first epoch's CPU goes with the registrar at work and without
# (issue 23): `perf record` of `ferry read --epochs 1` over warm 64 MiB files
# at the defaults, with FERRY_PIN_BUDGET=1M (the registrar's context and the
# cache's lookups, nothing registered) and on the copy path, ROUNDS times
# each; for each run, the epoch's line, the samples by thread, and the top
# symbols (self time) of all threads and of each in $OUT/<variant>-<round>.txt;
# then the same run again under `perf lock record`: the kernel locks its
# threads waited for, by caller and by thread (at -1252-, 11-17 ms in all
# over an epoch in each variant: no lock of the registrar's).
# PERF: how to run perf (carried with its libraries: tests/gpu/README).
# Usage: OUT=dir PERF="..." [FERRY=build/ferry] [DATA=dir] [FILES=64]
#        [ROUNDS=2] sh tests/gpu/diag/perf_first_epoch.sh
cd "$(dirname "$0")/../../.." || exit 1
O=${OUT:-gpu-diag}
FERRY=${FERRY:-build/ferry}
DATA=${DATA:-${TMPDIR:-/var/tmp}/ferry-pace}/64M
mkdir -p "$O"
[ -d "$DATA" ] || "$FERRY" gen --out "$DATA" --files "${FILES:-64}" --size 64M --quiet || exit 1
find "$DATA" -name '*.npy' -exec cat {} + >/dev/null
for round in $(seq "${ROUNDS:-2}"); do
	for variant in default budget1M copy_path; do
		case $variant in
		default) set -- ;;
		budget1M) set -- FERRY_PIN_BUDGET=1M ;;
		copy_path) set -- FERRY_PIN_BUDGET=0 ;;
		esac
		d=$O/$variant-$round.data t=$O/$variant-$round.txt
		$PERF record -q -F 4999 -o "$d" -- env "$@" "$FERRY" read --root "$DATA" \
			--batch 4 --epochs 1 >"$t" 2>&1
		{ echo "== samples by thread"
		  $PERF report -i "$d" --stdio --no-children --sort pid 2>/dev/null | grep -v '^#' | grep . | head -24
		  echo "== top symbols, self"
		  $PERF report -i "$d" --stdio --no-children --sort dso,sym 2>/dev/null | grep -v '^#' | grep . | head -40
		  echo "== top symbols by thread, self"
		  $PERF report -i "$d" --stdio --no-children --sort pid,sym 2>/dev/null | grep -v '^#' | grep . | head -60
		} >>"$t"
		$PERF lock record -q -o "$d" -- env "$@" "$FERRY" read --root "$DATA" \
			--batch 4 --epochs 1 >>"$t" 2>&1
		{ echo "== lock contention by caller"
		  $PERF lock contention -i "$d" -E 15 2>&1
		  echo "== lock contention by thread"
		  $PERF lock contention -i "$d" -E 20 -t 2>&1
		} >>"$t"
		rm -f "$d"
	done
done
head -3 "$O"/*-1.txt
