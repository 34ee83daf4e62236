#!/bin/sh
# Issue 23's two targets trade against each other through FERRY_PIN_PACE: the
# registrations made during the first epoch slow it, and the ones not made
# then leave epoch 2 on the copy path. This measures the trade on one warm file
# set (FILES files of SIZE): flat out with tests/gpu/diag/ab_env_epochs.sh
# (the copy path, then each pace of PACES, ROUNDS rounds interleaved), then
# inside a training loop with bench/pin_idle.py (a step of STEPS ms after each
# batch, the copy path and each pace of IDLE_PACES in turn, ROUNDS runs each;
# its summary, the mean and standard error of each epoch, in
# frontier_idle.txt). PACES="100 0" IDLE_PACES="100 0" weighs pace 0 (first
# offers registered only while no copy is launched) against the default.
# Usage: OUT=dir [SIZE=64M] [FILES=256] [ROUNDS=8] [STEPS="5 20"]
#        [PACES="100 75 50"] [IDLE_PACES=100] sh tests/gpu/diag/pace_frontier.sh
cd "$(dirname "$0")/../../.." || exit 1
O=${OUT:-gpu-diag}
mkdir -p "$O"
export SIZE=${SIZE:-64M} FILES=${FILES:-256} ROUNDS=${ROUNDS:-8}
DATA=${TMPDIR:-/var/tmp}/ferry-frontier
export DATA
set -- "copy_path FERRY_PIN_BUDGET=0"
for p in ${PACES:-100 75 50}; do set -- "$@" "pace$p FERRY_PIN_PACE=$p"; done
OUT=$O sh tests/gpu/diag/ab_env_epochs.sh "$@" >"$O/frontier_flat.log" 2>&1
cat "$O/frontier_flat.log"
pairs=$(for i in $(seq "$ROUNDS"); do
	printf 'FERRY_PIN_BUDGET=0 '
	for p in ${IDLE_PACES:-100}; do printf 'FERRY_PIN_PACE=%s ' "$p"; done
done)
for step in ${STEPS:-5 20}; do
	PYTHONPATH=python FERRY_LIBRARY=build/libferry.so python3 bench/pin_idle.py \
		--dir "$DATA/$SIZE" --epochs 2 --step-ms "$step" --settings "$pairs" \
		>"$O/frontier_idle_$step.log" 2>&1
	echo "step $step ms"
	sed -n '/^== summary/,$p' "$O/frontier_idle_$step.log"
done | tee "$O/frontier_idle.txt"
