#!/bin/sh
# The GPU machine's suite: build, every test with the CUDA device, a heavy
# stress, and the engine's overhead against a plain copy loop. Writes logs to
# $OUT (or ./gpu-out). NO_BUILD=1 uses build/ as carried (built where
# liburing is installed, so the uring backend is in it). Usage: sh tests/gpu/run.sh
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export FERRY_DEVICE=cuda TEST_JOBS=${TEST_JOBS:-1}  # one test at a time, as on every GPU run so far
export PYTHON="$(command -v python3)"  # the one with numpy, torch and cupy there
{
	date -u; nvidia-smi -L; uname -r
	[ -n "$NO_BUILD" ] || make -k -j"$(nproc)" >"$OUT/build.log" 2>&1 || echo "build had errors: see build.log"
	build/ferry env
	echo "== make test (FERRY_DEVICE=cuda)"
	TEST_TIMEOUT=240 sh tests/run.sh
	echo "== seed test, spin-kernel gates"
	FERRY_CUDA_GATE=kernel timeout 120 build/tests/test_staging_race_seed
	echo "== heavy stress: 32 threads, 4 GiB"
	STRESS_THREADS=32 STRESS_ROUNDS=8000 timeout 300 build/tests/test_staging_stress
	echo "== engine overhead (8 GiB each)"
	for c in 1M 2M 4M; do
		FERRY_CHUNK_SIZE=$c timeout 120 build/bench/engine_overhead 8 1 4 8
	done
} 2>&1 | tee "$OUT/gpu-suite.log"
