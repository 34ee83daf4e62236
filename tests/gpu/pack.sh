#!/bin/sh
# Packs a GPU call's results for the trip back: the device tool returns at
# most 8 files of $OUT (16 MiB each, two folders down), and a bench run
# writes more (results.md, results.json, parts/...). Everything under $OUT
# goes into $OUT/out.tgz; up to 6 of its top-level *.log and *.txt files
# stay beside it, to read at once. Run it last: sh tests/gpu/pack.sh [DIR]
O=${1:-${OUT:-gpu-out}}
[ -d "$O" ] || { echo "pack: no folder $O"; exit 1; }
tar czf /tmp/ferry-out.tgz -C "$O" . || exit 1
keep=$(cd "$O" && ls -1 *.log *.txt 2>/dev/null | head -6)
for f in $keep; do cp "$O/$f" "/tmp/ferry-keep-$f"; done
find "$O" -mindepth 1 -delete
mv /tmp/ferry-out.tgz "$O/out.tgz"
for f in $keep; do mv "/tmp/ferry-keep-$f" "$O/$f"; done
echo "pack: $O/out.tgz ($(du -h "$O/out.tgz" | cut -f1)) and $(echo $keep | wc -w) logs beside it"
