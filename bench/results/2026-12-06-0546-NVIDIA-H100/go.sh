#!/bin/sh
# one call: main (SPT 256) against 8d83888 (build/exp, SPT 64), the window swept, the rest of rest.sh
O=$OUT; D=/var/tmp/fb; mkdir -p $D; S=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - S )) s" >> $O/times.log; }
nvidia-smi -L > $O/times.log
build/ferry gen --out $D/tiny --files 131072 --size 16k --quiet &
build/ferry gen --out $D/small --files 16384 --size 128k --quiet &
wait; el data
OUT=$O/ab BENCH_DATA=$D A=build/exp B=build SETS="tiny small" ROUNDS=2 sh tests/gpu/diag/ab_reader.sh >/dev/null 2>&1
cp $O/ab/ab_reader.log $O/ab_reader.log; el ab
for n in 128 1024; do
  OUT=$O/w$n BENCH_DATA=$D A=build/exp B=build/exp ENV_A=FERRY_X_SPT=256 ENV_B=FERRY_X_SPT=$n SETS="tiny" BATCHES=4,32 ROUNDS=2 sh tests/gpu/diag/ab_reader.sh >/dev/null 2>&1
  { echo "== A: SPT 256, B: SPT $n"; cat $O/w$n/ab_reader.log; } >> $O/window.log; el "window $n"
done
export FERRY_DEVICE=cuda PYTHON="$(command -v python3)" FERRY_BUILD=build TEST_TIMEOUT=150
R="test_mapped_cache test_mapped_release test_npy_malformed test_npy_parse test_npz_device_staging test_npz_errors test_npz_info_header test_npz_load test_npz_over_4g test_npz_past_4g test_npz_staged_load test_ptx test_python_args test_python_batch test_python_dali test_python_epoch_end test_python_install test_python_interrupt test_python_layout test_python_npz test_python_parity test_python_rows test_python_state test_python_threads test_reader_convert_async test_reader_convert_packed test_reader_empty_batch test_reader_header_cache test_reader_mapped test_reader_mismatch test_reader_next_timeout test_reader_npz test_reader_npz_packed test_reader_npz_past_4g test_reader_npz_stored_crc test_reader_npz_stored_packed test_reader_numpy test_reader_on_error test_reader_ranks test_reader_release test_reader_roi_limits test_reader_settings_sweep test_reader_shards test_reader_shuffle test_reader_shuffle_dataset test_reader_skip_all test_reader_stats_size test_settings test_soak test_staging_cover test_staging_start test_reader_packing test_reader_stacked test_reader_threads test_reader_release"
L=$(( ${T:-450} - ($(date +%s) - S) ))
for p in 0 1 2; do
  TESTS="$(echo $R | tr ' ' '\n' | awk -v p=$p 'NR % 3 == p' | tr '\n' ' ')" timeout $L sh tests/run.sh > $O/part-$p.log 2>&1 &
done
wait; el tests
grep -hE "^(PASS|FAIL|SKIP)" $O/part-*.log | sort > $O/rest.log; grep -c ^PASS $O/rest.log >> $O/times.log
sh tests/gpu/pack.sh $O
