#!/bin/sh
# Session of 2026-12-07/08, second GPU call: tests/gpu/rest.sh on main 0f91a16
# (FERRY_PIN_PACE=0 code, faf7a9a, since the last rest.sh).
tar xJf .carry/c9.tar.xz && rm -rf build && mv build-gpu build || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
git log --oneline -1 >> "$OUT/gpu.txt"
S=$(date +%s)
OUT=$OUT/rest sh tests/gpu/rest.sh > "$OUT/rest.txt" 2>&1
echo "rest rc=$? $(( $(date +%s) - S )) s" >> "$OUT/rest.txt"
sh tests/gpu/pack.sh "$OUT"
