#!/bin/sh
# Session of 2026-12-07/08: pace 0 against pace 100 and the copy path
# (pace_frontier, ROUNDS=6), then core.sh on main 0f91a16.
tar xJf .carry/c9.tar.xz && rm -rf build && mv build-gpu build || exit 1
S=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
git log --oneline -1 >> "$OUT/gpu.txt"
FERRY_PIN_PACE=0 build/ferry env > "$OUT/env_pace0.txt" 2>&1
OUT=$OUT/pf PACES="100 0" IDLE_PACES="100 0" ROUNDS=6 timeout 330 sh tests/gpu/diag/pace_frontier.sh > "$OUT/pf.txt" 2>&1
echo "pace_frontier rc=$? $(( $(date +%s) - S )) s" >> "$OUT/pf.txt"
OUT=$OUT/core timeout 200 sh tests/gpu/core.sh > "$OUT/core.txt" 2>&1
echo "core rc=$? $(( $(date +%s) - S )) s" >> "$OUT/core.txt"
tail -3 $OUT/core/*.log >> "$OUT/core.txt" 2>/dev/null
sh tests/gpu/pack.sh "$OUT"
