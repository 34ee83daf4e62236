#!/bin/sh
# `ferry bench --json` on a tiny workload on the host device: the document is
# well formed and has the keys of its documented shape (speed is not checked);
# --ceilings-only has no runs; usage errors exit 2; bench/python_alternatives.py
# prints a well-formed document too, whatever modules it finds. The reader
# rows (issue 18): `ferry bench --tools reader --verify` gives a verified row
# per batch size with its ratio to the read-only ceiling, and
# `bench/run.sh --quick --reader --repeats 2` (the C reader with --verify, then
# bench/python_reader.py with --verify, twice, then the report) writes the
# reader table with every file set and batch size, each row the median of its
# 2 runs with their min and max, saying the device is the host; run.sh
# refuses --repeats 0.
# Warm cache only: a cold run would drop the page cache of the whole machine.
# FERRY_BUILD names the build directory (default build).
# Exit 0 pass, 1 fail, 77 skip.
NAME=bench-smoke; . "$(dirname "$0")/shharness.sh" # PY: tests/run.sh exports the one with numpy
# Under TSan the bench took 110 s of CI's 15 minutes and adds no interleaving
# the reader and engine tests do not already run under it. ASan runs the C
# harness (ferry bench) but not the Python scripts and bench/run.sh's report,
# which the plain build runs end to end (36 s of CI under ASan for no C code
# the rest does not run).
case "$BUILD" in
*tsan*) echo "skip: the bench under ThreadSanitizer (the reader tests cover its threads)"; exit 77 ;;
*asan*) END_TO_END=0 ;;
*) END_TO_END=1 ;;
esac
[ -x "$PY" ] || { echo "skip: $PY not found (needed to parse the JSON)"; exit 77; }
"$FERRY" bench --help >/dev/null 2>&1 || { echo "skip: $FERRY has no bench command"; exit 77; }

# The checks, on stdin: a ferry bench document (argument "bench", or
# "ceilings" for --ceilings-only) or a python_alternatives one ("python").
CHECK='
import json, sys
kind = sys.argv[1]
doc = json.load(sys.stdin)
problems = []
for key in ("machine", "date", "device", "ceilings", "runs"):
    if key not in doc:
        problems.append("no key %s" % key)
ceilings = doc.get("ceilings") or {}
for key in ("pinned_h2d_gbps", "storage_direct_gbps", "page_cache_gbps", "read_only_gbps",
            "read_only_files_per_s"):
    if key not in ceilings:
        problems.append("no ceiling %s" % key)
    elif ceilings[key] is not None and not isinstance(ceilings[key], (int, float)):
        problems.append("ceiling %s is not a number" % key)
if kind in ("bench", "reader") and not ceilings.get("pinned_h2d_gbps"):
    problems.append("pinned_h2d_gbps was not measured on the host device")
if kind in ("bench", "reader", "ceilings") and not ceilings.get("read_only_files_per_s"):
    problems.append("the read-only ceiling was not measured")
runs = doc.get("runs")
if not isinstance(runs, list):
    problems.append("runs is not a list")
    runs = []
if kind == "ceilings" and runs:
    problems.append("--ceilings-only gave %d runs" % len(runs))
if kind != "ceilings" and not runs:
    problems.append("no runs")
KEYS = ("tool", "backend", "workload", "cache", "cold_method", "threads", "chunk", "gbps",
        "files_per_s", "cpu_s_per_gb", "ratio_to_ceiling", "available", "note")
if kind in ("bench", "reader", "python_reader"):
    KEYS += ("batch_size", "ceiling", "ceiling_gbps", "verified", "first_batch_s")
for i, r in enumerate(runs):
    for key in KEYS:
        if key not in r:
            problems.append("run %d has no %s" % (i, key))
    if r.get("cache") not in ("warm", "cold"):
        problems.append("run %d: cache %r" % (i, r.get("cache")))
    if r.get("cold_method") not in (None, "drop_caches", "o_direct"):
        problems.append("run %d: cold_method %r" % (i, r.get("cold_method")))
    if not isinstance(r.get("available"), bool):
        problems.append("run %d: available is not a boolean" % i)
    if r.get("available"):
        for key in ("gbps", "files_per_s", "cpu_s_per_gb"):
            if not isinstance(r.get(key), (int, float)):
                problems.append("run %d (%s): %s is not a number" % (i, r.get("tool"), key))
    elif not r.get("note"):
        problems.append("run %d (%s): unavailable without a note" % (i, r.get("tool")))
tools = set(r.get("tool") for r in runs)
want = {"bench": {"ferry", "naive_c", "tuned_pread", "reader"},
        "python": {"numpy_torch", "cupy_load", "dali"},
        "reader": {"reader"},
        "python_reader": {"python_reader_stacked", "python_reader_per_sample",
                          "torch_dataloader", "dali_reader"}}.get(kind, set())
for t in sorted(want - tools):
    problems.append("no run of %s" % t)
if kind == "bench":
    ok = [r for r in runs if r.get("tool") == "ferry" and r.get("available")]
    if not ok:
        problems.append("no available ferry run on the host device")
if kind == "reader":
    batches = sorted(r.get("batch_size") or 0 for r in runs if r.get("tool") == "reader")
    if batches != [1, 4, 32, 256]:
        problems.append("reader rows of batch sizes %s, not 1, 4, 32, 256" % batches)
    for r in runs:
        if r.get("tool") != "reader":
            continue
        if not (r.get("available") and r.get("verified")):
            problems.append("reader batch %s: not verified: %s" % (r.get("batch_size"), r.get("note")))
        if r.get("ceiling") != "read_only" or not isinstance(r.get("ratio_to_ceiling"), float):
            problems.append("reader batch %s: no ratio to read_only" % r.get("batch_size"))
if kind == "python_reader":
    for tool in ("python_reader_stacked", "python_reader_per_sample"):
        ok = [r for r in runs if r.get("tool") == tool and r.get("available")]
        if len(ok) != 4:
            problems.append("%d available %s rows, not 4 (one a batch size): %s" % (
                len(ok), tool, [r.get("note") for r in runs if r.get("tool") == tool][:1]))
    if not all(r.get("verified") for r in runs
               if r.get("tool") == "python_reader_stacked" and r.get("available")):
        problems.append("python_reader_stacked rows not verified under --verify")
for p in problems:
    print("  " + p)
sys.exit(1 if problems else 0)
'

check() { # check KIND FILE WHAT
	if ! "$PY" -c "$CHECK" "$1" <"$2" >"$TMP/problems" 2>&1; then
		fail "$3:"
		cat "$TMP/problems"
		head -c 2000 "$2" | sed 's/^/    doc: /'
	fi
}

"$FERRY" gen --out "$TMP/data" --files 6 --size 64k --dtype float32 --seed 1 >/dev/null ||
	{ echo "FAIL: ferry gen failed"; exit 1; }

if "$FERRY" bench --json --device host --dir "$TMP/data" --workload tiny --cache warm \
	--threads 1,2 --seconds-limit 0.5 --min-seconds 0 >"$TMP/bench.json" 2>"$TMP/err"; then
	check bench "$TMP/bench.json" "ferry bench --json"
else
	fail "ferry bench --json exited $?"
	sed 's/^/    err: /' "$TMP/err" | tail -n 10
fi

if "$FERRY" bench --json --device host --dir "$TMP/data" --ceilings-only --seconds-limit 0.3 \
	>"$TMP/ceilings.json" 2>"$TMP/err"; then
	check ceilings "$TMP/ceilings.json" "ferry bench --json --ceilings-only"
else
	fail "ferry bench --ceilings-only exited $?"
	sed 's/^/    err: /' "$TMP/err" | tail -n 10
fi

# The table (no --json) names every tool it ran.
"$FERRY" bench --device host --dir "$TMP/data" --tools ferry,naive_c --threads 1 \
	--seconds-limit 0.3 --min-seconds 0 >"$TMP/table" 2>&1 || fail "ferry bench (table) failed"
{ grep -q '^ *ferry ' "$TMP/table" && grep -q 'naive_c' "$TMP/table"; } ||
	fail "the table lacks ferry or naive_c rows: $(head -c 400 "$TMP/table")"

if "$FERRY" bench --json --device host --dir "$TMP/data" --workload tiny --tools reader \
	--verify --seconds-limit 0.3 --min-seconds 0 >"$TMP/reader.json" 2>"$TMP/err"; then
	check reader "$TMP/reader.json" "ferry bench --json --tools reader --verify"
else
	fail "ferry bench --tools reader exited $?"
	sed 's/^/    err: /' "$TMP/err" | tail -n 10
fi

# Warm rows over files the zero-copy path maps are timed once they are
# registered, however slowly (FERRY_PIN_PACE=1: over many epochs): the note
# counts the warm-up's epochs, and every timed file came from a mapping.
"$FERRY" gen --out "$TMP/mapped" --files 6 --size 4M --quiet || fail "ferry gen of 4 MiB files"
if FERRY_PIN_PACE=1 "$FERRY" bench --json --device host --dir "$TMP/mapped" --workload mapped --tools reader \
	--batch-sizes 2 --cache warm --seconds-limit 0.3 --min-seconds 0.1 --warmup-seconds 0 >"$TMP/mapped.json" \
	2>"$TMP/err"; then
	"$PY" -c '
import json, re, sys
runs = [r for r in json.load(open(sys.argv[1]))["runs"] if r.get("tool") == "reader"]
assert runs, "no reader row"
for r in runs:
    note = r.get("note") or ""
    m = re.search(r"buffered (\d+), direct (\d+), copied from a mapping (\d+)", note)
    assert "warm-up of" in note and m and m.group(1) == m.group(2) == "0" and int(m.group(3)) > 0, note
' "$TMP/mapped.json" || fail "warm reader rows over 4 MiB files: timed before every file was mapped"
else
	fail "ferry bench --tools reader over 4 MiB files exited $?"
	sed 's/^/    err: /' "$TMP/err" | tail -n 10
fi

for bad in "--tools nosuch" "--threads 0" "--cache lukewarm" "--chunk 3000" "--frobnicate" \
	"--batch-sizes 0" "--batch-sizes 1,x" "--reader-threads 0" "--ceiling-threads 65"; do
	# shellcheck disable=SC2086 # split on purpose
	"$FERRY" bench $bad --dir "$TMP/data" >/dev/null 2>&1
	rc=$?
	[ $rc -eq 2 ] || fail "ferry bench $bad exited $rc, expected 2"
done

if [ "$END_TO_END" = 1 ] && [ -f bench/python_alternatives.py ]; then
	if "$PY" bench/python_alternatives.py --dir "$TMP/data" --cache warm --seconds-limit 0.5 \
		--min-seconds 0 >"$TMP/python.json" 2>"$TMP/err"; then
		check python "$TMP/python.json" "bench/python_alternatives.py"
	else
		fail "bench/python_alternatives.py exited $?"
		tail -n 10 "$TMP/err" | sed 's/^/    err: /'
	fi
fi

# The reader matrix in quick mode, end to end, warm only: every row verified.
if [ "$END_TO_END" = 1 ] && [ -f bench/python_reader.py ]; then
	if FERRY_BUILD=$BUILD PYTHON=$PY BENCH_DATA="$TMP/rdata" BENCH_OUT="$TMP/rout" \
		READER_COLD='' READER_LIMIT=0.1 READER_MIN=0 READER_WARMUP=0.02 BENCH_VERIFY=1 \
		FERRY_DEVICE=host sh bench/run.sh --quick --reader --repeats 2 >"$TMP/run.log" 2>&1; then
		for part in "$TMP"/rout/parts/reader-*.json; do
			check reader "$part" "bench/run.sh --quick --reader: $(basename "$part")"
		done
		case $BUILD in
		*tsan*) ;; # Python cannot load a ThreadSanitizer build: run.sh skips those rows
		*) for part in "$TMP"/rout/parts/python-reader-*.json; do
			check python_reader "$part" "bench/run.sh --quick --reader: $(basename "$part")"
		   done ;;
		esac
		md=$TMP/rout/results.md
		grep -q '^## Reader: batches against the read-only ceiling' "$md" ||
			fail "results.md has no reader section"
		grep -q 'host device (no GPU)' "$md" || fail "results.md does not say the device is the host"
		grep -q "^### Targets (issue 18's, set for an H200; this run's device: " "$md" ||
			fail "results.md's targets do not name this run's device"
		# A row per file set (16 KiB, 128 KiB, 1 MiB) and batch size, warm.
		rows=$(grep -c '^| [0-9.]* [KM]iB ([a-z]*) | warm | [0-9]* |' "$md")
		[ "$rows" -eq 12 ] || fail "results.md's reader table has $rows warm rows, not 12"
		"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert len(d["reader_ceilings"]) == 3, d["reader_ceilings"]
assert all(c.get("repeats") == 2 for c in d["reader_ceilings"]), d["reader_ceilings"]
rows = [r for r in d["runs"] if r.get("available")
        and r.get("tool") in ("reader", "python_reader_stacked", "python_reader_per_sample")]
assert len(rows) == 3 * 4 * 3, len(rows)  # one row a file set, batch size and tool
for r in rows:
    assert r.get("ratio_to_ceiling"), r
    assert r.get("repeats") == 2 and len(r["runs_files_per_s"]) == 2, r
    assert r["files_per_s_min"] <= r["files_per_s"] <= r["files_per_s_max"], r
    assert r["ratio_to_ceiling_min"] <= r["ratio_to_ceiling"] <= r["ratio_to_ceiling_max"], r' \
			"$TMP/rout/results.json" || fail "results.json lacks the reader ceilings, ratios or repeats"
		grep -q 'median of 2 runs' "$md" || fail "results.md does not say its rows are medians"
		# The ceiling's cell, then the C reader's: each median (min–max) · ...
		grep -q '^| 16 KiB (small) | warm | 1 | [0-9.KM]* ([0-9.KM]*–[0-9.KM]*) · [^|]* | [0-9.KM]* ([0-9.KM]*–[0-9.KM]*) · ' "$md" ||
			fail "results.md's reader rows lack the spread of their runs"
		n=0
		for part in "$TMP"/rout/parts/reader-*-r[12].json \
			"$TMP"/rout/parts/python-reader-*-r[12].json; do
			[ -e "$part" ] && n=$((n + 1))
		done
		[ "$n" -eq 12 ] || fail "bench/run.sh --repeats 2 wrote $n reader parts, not 12"
	else
		fail "bench/run.sh --quick --reader exited $?"
		tail -n 15 "$TMP/run.log" | sed 's/^/    log: /'
	fi
fi

sh bench/run.sh --reader --repeats 0 >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "bench/run.sh --repeats 0 exited $rc, expected 2"

[ "$END_TO_END" = 1 ] || echo "bench smoke: the Python scripts and bench/run.sh run in the plain build only"
[ $failures -eq 0 ] && echo "bench smoke: ok" && exit 0
echo "bench smoke: $failures failure(s)"
exit 1
