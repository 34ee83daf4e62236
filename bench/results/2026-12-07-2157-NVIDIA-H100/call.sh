#!/bin/sh
# Session of 2026-12-07 (night), first GPU call: tests/gpu/rest.sh on a build of
# main (546fb4e); it has not run since 18fd22b (mapped.c's first-offers rule).
tar xJf .carry/c7.tar.xz && rm -rf build && mv build-gpu build || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
OUT=$OUT/rest sh tests/gpu/rest.sh > "$OUT/rest.txt" 2>&1
sh tests/gpu/pack.sh "$OUT"
