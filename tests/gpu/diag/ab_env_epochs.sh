#!/bin/sh
# One build's per-epoch rates under several environments, interleaved round
# by round on one warm file set (issue 23's first epoch: which setting, if
# any, brings the default's first epoch up to the copy path's). Each run is a
# fresh `ferry read --epochs EPOCHS --json`; at the end, per variant, the
# mean and every value of epoch 1 and of epochs 2-EPOCHS (GB/s), their CPU
# s/GB (then epoch 2 and epochs 3-EPOCHS apart: what registering leaves to
# the second epoch) and the first epoch's ratio to the first variant's with
# its standard error (a first epoch over 4 GiB moves by 10-20% from run to
# run on an H100: 8 rounds or more, and a larger file set, FILES=256, halves
# the spread).
# Usage: OUT=dir [FERRY=build/ferry] [DATA=dir] [SIZE=64M] [FILES=64]
#        [ROUNDS=8] [EPOCHS=8] sh tests/gpu/diag/ab_env_epochs.sh \
#        "copy_path FERRY_PIN_BUDGET=0" "default" "t15 FERRY_THREADS=15" ...
#        (a variant: its label, then VAR=value words; the first is the base;
#        a word BIN=path runs that ferry instead of FERRY: builds side by side)
cd "$(dirname "$0")/../../.." || exit 1
O=${OUT:-gpu-diag}
FERRY=${FERRY:-build/ferry}
DATA=${DATA:-${TMPDIR:-/var/tmp}/ferry-pace}/${SIZE:-64M}
PY=${PYTHON:-python3}
mkdir -p "$O"
[ -d "$DATA" ] || "$FERRY" gen --out "$DATA" --files "${FILES:-64}" --size "${SIZE:-64M}" --quiet || exit 1
find "$DATA" -name '*.npy' -exec cat {} + >/dev/null
: >"$O/env_epochs.jsonl"
printf '%s\n' "$@" >"$O/variants.txt"
for round in $(seq "${ROUNDS:-8}"); do
	while read -r label settings; do
		bin=$FERRY
		case " $settings " in *" BIN="*)
			bin=${settings#*BIN=} bin=${bin%% *}
			settings=$(echo " $settings " | sed "s| BIN=[^ ]* | |") ;;
		esac
		env $settings "$bin" read --root "$DATA" --batch 4 --epochs "${EPOCHS:-8}" --json \
			</dev/null >"$O/run.json" || { echo "ferry read failed: $label" >&2; continue; }
		printf '{"label": "%s", "round": %s, "run": %s}\n' "$label" "$round" "$(cat "$O/run.json")" \
			>>"$O/env_epochs.jsonl"
	done <"$O/variants.txt"
done
rm -f "$O/run.json"
"$PY" - "$O/env_epochs.jsonl" <<'PYEOF' | tee "$O/env_epochs.txt"
import collections, json, math, statistics, sys
runs = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["label"] not in runs:
        order.append(r["label"])
    runs[r["label"]].append(r["run"])
def rate(eps):
    b = sum(e["bytes_delivered"] for e in eps)
    return b / sum(e["seconds"] for e in eps) / 1e9, sum(e["cpu_seconds"] for e in eps) / (b / 1e9)
base = None
for label in order:
    e1 = [rate(d["per_epoch"][:1]) for d in runs[label]]
    rest = [rate(d["per_epoch"][1:]) for d in runs[label]]
    m1 = sum(g for g, _ in e1) / len(e1)
    se = statistics.stdev([g for g, _ in e1]) / math.sqrt(len(e1)) if len(e1) > 1 else 0
    base = base or m1
    print("%-12s n %d  e1 %5.1f GB/s (%.2f +- %.2f of %s) %.3f CPU s/GB  e2-  %5.1f GB/s %.3f CPU s/GB"
          "  mapped %s"
          % (label, len(e1), m1, m1 / base, se / base, order[0], sum(c for _, c in e1) / len(e1),
             sum(g for g, _ in rest) / len(rest), sum(c for _, c in rest) / len(rest),
             "/".join(str(d["files_mapped"]) for d in runs[label][:3])))
    print("%-12s e1 values %s" % ("", " ".join("%.1f" % g for g, _ in e1)))
    if all(len(d["per_epoch"]) > 2 for d in runs[label]):
        e2 = [rate(d["per_epoch"][1:2]) for d in runs[label]]
        e3 = [rate(d["per_epoch"][2:]) for d in runs[label]]
        print("%-12s e2 %5.1f GB/s %.3f CPU s/GB  e3- %5.1f GB/s %.3f CPU s/GB"
              % ("", sum(g for g, _ in e2) / len(e2), sum(c for _, c in e2) / len(e2),
                 sum(g for g, _ in e3) / len(e3), sum(c for _, c in e3) / len(e3)))
PYEOF
