#!/bin/sh
# Multi-rank correctness and scaling: for each N, torchrun starts N ranks that
# read one dataset with ferry.Reader, sharded by RANK / WORLD_SIZE; rank 0
# checks that every sample was read exactly once per epoch and prints JSON.
# Usage: sh tests/multi/run.sh [RANKS...]   (default 1 2 4 8)
# SHARE_GPU=1 makes every rank use GPU 0 (for a machine with fewer GPUs than ranks).
set -u
BUILD=${FERRY_BUILD:-build}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
"$BUILD/ferry" gen --out "$DIR" --files 203 --size 1M --seed 5 >/dev/null || exit 1
[ "${SHARE_GPU:-0}" = 1 ] && export FERRY_GPU=0
export FERRY_LIBRARY="$PWD/$BUILD/libferry.so"
status=0
for n in ${@:-1 2 4 8}; do
	torchrun --standalone --nproc_per_node="$n" tests/multi/ranks_check.py "$DIR" 3 || status=1
done
exit $status
