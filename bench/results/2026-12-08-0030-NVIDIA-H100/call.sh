#!/bin/sh
# Session of 2026-12-07/08, third GPU call: issue 23's first epoch on another
# machine (copy path, pace 100, pace 0; 6 rounds over 256 warm 64 MiB files),
# then the ceilings of the same files.
tar xJf .carry/c9.tar.xz && rm -rf build && mv build-gpu build || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
git log --oneline -1 >> "$OUT/gpu.txt"
S=$(date +%s)
D=/var/tmp/ferry-frontier/64M
build/ferry gen --out $D --files 256 --size 64M --quiet || exit 1
echo "gen $(( $(date +%s) - S )) s" >> "$OUT/gpu.txt"
OUT=$OUT/ab SIZE=64M FILES=256 ROUNDS=6 DATA=/var/tmp/ferry-frontier timeout 170 sh tests/gpu/diag/ab_env_epochs.sh \
	"copy_path FERRY_PIN_BUDGET=0" "pace100 FERRY_PIN_PACE=100" "pace0 FERRY_PIN_PACE=0" > "$OUT/ab.txt" 2>&1
echo "ab rc=$? $(( $(date +%s) - S )) s" >> "$OUT/ab.txt"
timeout 40 build/ferry bench --dir $D --workload w64 --cache warm --ceilings-only > "$OUT/ceilings.txt" 2>&1
echo "total $(( $(date +%s) - S )) s" >> "$OUT/ceilings.txt"
sh tests/gpu/pack.sh "$OUT"
