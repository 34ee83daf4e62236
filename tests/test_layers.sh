#!/bin/sh
# The tree shows the layers: each folder of src/ includes only the headers of
# the layers below it (and its own), never one above. The order, bottom up:
#   base  device  io engine  npy  load  context  api reader
# (io and engine sit side by side on device; npy needs only base). Fails
# listing every include that breaks the order.
cd "$(dirname "$0")/.." || exit 1
allowed() {
	case $1 in
	base) echo "base" ;;
	device) echo "base device" ;;
	io) echo "base device io" ;;
	engine) echo "base device engine" ;;
	npy) echo "base npy" ;;
	load) echo "base device io engine npy load" ;;
	context) echo "base device io engine npy load context" ;;
	api) echo "base device io engine npy load context api" ;;
	reader) echo "base device io engine npy load context reader" ;;
	*) echo "" ;;
	esac
}
bad=0 seen=0
for dir in src/*/; do
	layer=$(basename "$dir")
	ok=$(allowed "$layer")
	if [ -z "$ok" ]; then
		echo "FAIL: src/$layer/ is not a known layer (add it to tests/test_layers.sh)"
		bad=$((bad + 1))
		continue
	fi
	for f in "$dir"*.c "$dir"*.h; do
		[ -e "$f" ] || continue
		seen=$((seen + 1))
		for inc in $(sed -n 's/^#include "\([a-z_]*\)\/[a-z_]*\.h".*/\1/p' "$f"); do
			case " $ok " in
			*" $inc "*) ;;
			*) echo "FAIL: $f includes $inc/, above $layer/"; bad=$((bad + 1)) ;;
			esac
		done
	done
done
[ "$seen" -gt 0 ] || { echo "FAIL: no sources found"; exit 1; }
echo "$seen files checked, $bad includes across the layers"
[ "$bad" -eq 0 ]
