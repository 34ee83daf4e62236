#!/bin/sh
# Several ranks (processes) read one dataset, each taking its shard from RANK
# and WORLD_SIZE as torchrun and MPI launchers set them: together they must
# read every sample exactly once per epoch, for 1 to 4 ranks and a dataset
# size that does not divide evenly, each shard shuffled (--shuffle) or the
# whole dataset (--shuffle-dataset). FERRY_GPU=0 lets every rank share GPU 0
# on a machine with one GPU (LOCAL_RANK alone would pick GPU r).
BUILD=${FERRY_BUILD:-build}
FERRY=$BUILD/ferry
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
"$FERRY" gen --out "$DIR/data" --files 23 --size 8k --seed 3 >/dev/null || exit 1
ls "$DIR/data" | grep '\.npy$' | sort >"$DIR/all"
for shuffle in --shuffle --shuffle-dataset; do
	for n in 1 2 3 4; do
		pids=""
		for r in $(seq 0 $((n - 1))); do
			RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r FERRY_GPU=0 "$FERRY" read --root "$DIR/data" --batch 4 \
				--epochs 2 $shuffle --seed 9 --order >"$DIR/rank$r" 2>"$DIR/err$r" &
			pids="$pids $!"
		done
		for p in $pids; do
			wait "$p" || { echo "FAIL: a rank of $n exited non-zero"; cat "$DIR"/err*; exit 1; }
		done
		for e in 0 1; do
			cat "$DIR"/rank* | awk -F '\t' -v e=$e '$1 == e && $4 != "pad" { n = split($3, p, "/"); print p[n] }' |
				sort >"$DIR/epoch$e"
			if ! cmp -s "$DIR/epoch$e" "$DIR/all"; then
				echo "FAIL: $shuffle, $n ranks, epoch $e: samples read differ from the dataset"
				diff "$DIR/all" "$DIR/epoch$e" | head
				exit 1
			fi
		done
		rm -f "$DIR"/rank* "$DIR"/err*
		echo "ok: $shuffle, $n ranks read every sample exactly once per epoch"
	done
done
