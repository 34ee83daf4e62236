#!/bin/sh
# The progress line: with stderr on a terminal (a pseudo-terminal here), ferry
# read (both modes), gen, demo and bench show "\r...: N/M files, BYTES, RATE,
# ETA ..." and clear it before the summary; never with --json or --quiet, and
# never when stderr is a pipe.
# FERRY_BUILD names the build directory (default build). Exit 0 pass, 1 fail, 77 skip.
# The tool draws the line on its main thread; the threads under it are the
# reader's and the engine's, which their own tests run under ThreadSanitizer
# (this one took 20 s of CI's 15 minutes there).
NAME=cli-progress; . "$(dirname "$0")/shharness.sh"
case "$BUILD" in
*tsan*) echo "skip: the progress line under ThreadSanitizer (no thread of its own)"; exit 77 ;;
esac
command -v "$PY" >/dev/null 2>&1 || { echo "skip: no $PY"; exit 77; }
"$PY" -c 'import os; os.close(os.openpty()[0])' 2>/dev/null || { echo "skip: no pseudo-terminal"; exit 77; }

# on_tty CMD...: runs CMD with stderr on a pseudo-terminal and stdout to
# $TMP/out; what reached the terminal goes to $TMP/tty. Returns CMD's status.
on_tty() {
	"$PY" - "$@" >"$TMP/out" 2>"$TMP/tty" <<'EOF'
import os, pty, subprocess, sys
master, slave = pty.openpty()
p = subprocess.Popen(sys.argv[1:], stderr=slave)
os.close(slave)
while True:
    try:
        data = os.read(master, 65536)
    except OSError:  # EIO: the terminal's last writer is gone
        break
    if not data:
        break
    sys.stderr.buffer.write(data)
sys.exit(p.wait())
EOF
}

# shows WHAT PATTERN: the terminal got a progress line matching PATTERN
# (extended regex, after "\r\033[K"), and the last thing it got cleared it.
shows() {
	tr '\r' '\n' <"$TMP/tty" | sed 's/^\x1b\[K//' >"$TMP/lines"
	grep -Eq "$2" "$TMP/lines" || { fail "$1: no progress line like '$2':"; od -c "$TMP/tty" | head -n 8; }
	"$PY" -c 'import sys; sys.exit(not open(sys.argv[1], "rb").read().endswith(b"\r\x1b[K"))' \
		"$TMP/tty" || fail "$1: the progress line is not cleared at the end"
}

# silent WHAT: the terminal got no progress line.
silent() {
	if grep -q "$(printf '\r')" "$TMP/tty"; then
		fail "$1: a progress line where none belongs:"
		od -c "$TMP/tty" | head -n 4
	fi
}

RATE='[0-9.]+ [kMGT]?B/s'
"$FERRY" gen --out "$TMP/d" --files 6 --size 64k --quiet || { echo "FAIL: ferry gen"; exit 1; }

on_tty "$FERRY" read "$TMP"/d/*.npy || fail "read on a terminal failed"
shows "read" "^read: [0-9]+/6 files, [0-9.]+ [KM]iB, $RATE(, ETA [0-9.]+ [mu]?s)?$"
grep -q "^read: 6 files" "$TMP/out" || fail "read: no summary on stdout"
on_tty "$FERRY" read --root "$TMP/d" --epochs 2 || fail "read --root on a terminal failed"
shows "read --root" "^read: [0-9]+/12 samples, [0-9.]+ [KM]iB, $RATE"
on_tty "$FERRY" gen --out "$TMP/g" --files 4 --size 64k || fail "gen on a terminal failed"
shows "gen" "^gen: [0-9]+/4 files, [0-9.]+ [KM]iB of 256 KiB, $RATE"
on_tty "$FERRY" demo --files 3 --size 64k || fail "demo on a terminal failed"
shows "demo, writing" "^demo: writing: [0-9]+/3 files, .* of 192 KiB, $RATE"
shows "demo, loading" "^demo: loading: [0-9]+/3 files, .* of 192 KiB, $RATE"
on_tty "$FERRY" bench --device host --dir "$TMP/d" --workload tiny --cache warm --tools ferry \
	--backends posix --threads 1 --seconds-limit 2 --min-seconds 0.8 || fail "bench on a terminal failed"
shows "bench" "^bench: .*ferry posix warm threads [0-9]+: [0-9]+ files, [0-9.]+ [KMG]iB, $RATE, ETA [0-9.]+ [mu]?s$"

for cmd in "read --json $TMP/d/sample_000000.npy" "read --quiet $TMP/d/sample_000000.npy" \
	"read --root $TMP/d --json" "gen --out $TMP/g --files 2 --size 4k --json" \
	"gen --out $TMP/g --files 2 --size 4k --quiet" "demo --files 2 --size 4k --json" \
	"demo --files 2 --size 4k --quiet"; do
	# shellcheck disable=SC2086
	on_tty "$FERRY" $cmd || fail "$cmd on a terminal failed"
	silent "$cmd"
done
"$FERRY" read "$TMP"/d/*.npy 2>"$TMP/tty" >/dev/null
silent "read with stderr in a pipe"
"$FERRY" demo --files 2 --size 4k 2>"$TMP/tty" >/dev/null
silent "demo with stderr in a pipe"

finish
