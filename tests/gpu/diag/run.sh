#!/bin/sh
# One call on the GPU machine (build/ carried, built with liburing):
#  1. tests/test_python_reader.py on CUDA, 12 runs with this tree's package and
#     9 with the one before the finalizer-order fix (DIAG_OLD, a directory with
#     that commit's python/ and tests/; skipped when unset), 4 at a time, each
#     with C and Python stacks of every thread on an abort or a hang (50 s);
#  2. small files (16384 x 128 KiB, warm): ferry_load_into_async with K
#     contexts x T callers, then one context with FERRY_LANES=1..16, then the
#     time threads wait for each mutex (lockprof), then perf when present;
#  3. ferry bench small and large, FERRY_LANES=1 against 4.
# Everything lands in $OUT. Usage: OUT=dir sh tests/gpu/diag/run.sh
cd "$(dirname "$0")/../../.."
O=${OUT:-gpu-diag}
D=build/diag
mkdir -p "$O" $D
gcc -shared -fPIC -O1 -g -o $D/crashbt.so tests/gpu/diag/crashbt.c || exit 1
gcc -shared -fPIC -O2 -o $D/lockprof.so tests/gpu/diag/lockprof.c -ldl || exit 1
gcc -O2 -g -Iinclude -o $D/lanes tests/gpu/diag/lanes.c build/libferry.a \
	$(ls /usr/lib/x86_64-linux-gnu/liburing.a 2>/dev/null || echo build/liburing.a) -ldl -lpthread -lm 2>/dev/null ||
	gcc -O2 -g -Iinclude -o $D/lanes tests/gpu/diag/lanes.c -Lbuild -l:libferry.so -Wl,-rpath,$PWD/build -lpthread || exit 1
{ for t in perf gdb strace ltrace py-spy; do command -v $t || echo "no $t"; done; python3 --version; nvidia-smi -L; } > $O/tools.txt 2>&1
sh tests/gpu/fake_udev.sh /var/tmp >/dev/null 2>&1; sh tests/gpu/fake_udev.sh /tmp >/dev/null 2>&1
pyr() { # n device tree(new|old)
	t=tests/test_python_reader.py
	if [ $3 = old ]; then [ -n "$DIAG_OLD" ] || return 0; t=$DIAG_OLD/tests/test_python_reader.py; fi
	( FERRY_BUILD=$PWD/build FERRY_DEVICE=$2 timeout -s USR2 -k 10 50 env LD_PRELOAD=$PWD/$D/crashbt.so python3 tests/gpu/diag/pyrun.py $t > $O/pyr-$1-$2-$3.log 2>&1; echo "rc=$?" >> $O/pyr-$1-$2-$3.log ) &
}
S=$(date +%s)
for b in 0 1 2; do
	for j in 1 2 3 4; do pyr $((b*4+j)) cuda new; done
	for j in 1 2 3; do pyr $((b*4+j)) cuda old; done
	[ $b = 0 ] && for j in 1 2; do pyr $j host new; done
	wait
done
echo "python reader runs: $(( $(date +%s) - S )) s"; grep -H '^rc=' $O/pyr-*.log | sort -t- -k2 -n
mkdir -p /var/tmp/fb
build/ferry gen --out /var/tmp/fb/small --files 16384 --size 128k --seed 1 >/dev/null
cat /var/tmp/fb/small/* > /dev/null
for kt in "1 16" "2 8" "4 4" "8 2" "16 1" "1 8" "2 4" "1 4"; do
	FERRY_DEVICE=cuda FERRY_IO=posix timeout 30 $D/lanes /var/tmp/fb/small 16384 $kt 3
done | tee $O/lanes.txt
for L in 1 2 4 8 16; do for t in 8 16; do
	printf "lanes=$L " ; FERRY_LANES=$L FERRY_DEVICE=cuda FERRY_IO=posix timeout 30 $D/lanes /var/tmp/fb/small 16384 1 $t 3
done; done | tee $O/lanes-engine.txt
FERRY_DEVICE=cuda FERRY_IO=posix LD_PRELOAD=$PWD/$D/lockprof.so timeout 30 $D/lanes /var/tmp/fb/small 16384 1 16 3 > $O/lockprof.txt 2>&1
FERRY_DEVICE=cuda FERRY_IO=posix LD_PRELOAD=$PWD/$D/lockprof.so timeout 30 $D/lanes /var/tmp/fb/small 16384 4 4 3 > $O/lockprof-4x4.txt 2>&1
if command -v perf >/dev/null; then
	FERRY_DEVICE=cuda FERRY_IO=posix timeout 60 perf record -g -o $O/perf.data $D/lanes /var/tmp/fb/small 16384 1 16 3 >/dev/null 2>&1
	perf report -i $O/perf.data --stdio --no-children 2>/dev/null | head -150 > $O/perf-top.txt
	rm -f $O/perf.data
fi
for L in 1 4; do FERRY_LANES=$L FERRY_DEVICE=cuda timeout 120 build/ferry bench --workload small --dir /var/tmp/fb/small --cache warm --tools ferry,tuned_pread --backends posix --threads 8,16 --json > $O/small-bench-L$L.json 2> $O/small-bench-L$L.err; done
mkdir -p /var/tmp/fb
for L in 1 4; do FERRY_LANES=$L FERRY_DEVICE=cuda timeout 120 build/ferry bench --workload large --dir /var/tmp/fb/large --cache warm --tools ferry --backends posix --threads 16 --json > $O/large-bench-L$L.json 2> $O/large-bench-L$L.err; done
echo "total $(( $(date +%s) - S )) s"
