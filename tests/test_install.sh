#!/bin/sh
# The library exports only ferry_ symbols under a versioned soname, and
# `make install` gives a tree a program can build against through pkg-config.
BUILD=${FERRY_BUILD:-build}
LIB=$BUILD/libferry.so
command -v nm >/dev/null || { echo "skip: nm is not installed"; exit 77; }
stray=$(nm -D --defined-only "$LIB" | awk '$2 ~ /^[TDBR]$/ {print $3}' | grep -v '^ferry_')
[ -z "$stray" ] || { echo "FAIL: exported symbols without the ferry_ prefix: $stray"; exit 1; }
readelf -d "$LIB" | grep -q 'SONAME.*libferry.so.0' || { echo "FAIL: soname is not libferry.so.0"; exit 1; }
[ "$BUILD" = build ] || { echo "ok: exports (install checked in the plain build only)"; exit 0; }
command -v pkg-config >/dev/null || { echo "skip: pkg-config is not installed"; exit 77; }
DEST=$(mktemp -d)
trap 'rm -rf "$DEST"' EXIT
make -s install PREFIX=/usr DESTDIR="$DEST" >/dev/null || { echo "FAIL: make install"; exit 1; }
for f in usr/include/ferry.h usr/lib/libferry.so.0 usr/lib/libferry.a usr/bin/ferry usr/lib/pkgconfig/ferry.pc; do
	[ -e "$DEST/$f" ] || { echo "FAIL: make install did not install $f"; exit 1; }
done
cat >"$DEST/hello.c" <<'C'
#include <ferry.h>
#include <stdio.h>
#include <string.h>
int main(void) { printf("%s\n", ferry_version()); return strcmp(ferry_strerror(-FERRY_EFORMAT), "not a valid .npy file") != 0; }
C
flags=$(PKG_CONFIG_SYSROOT_DIR="$DEST" PKG_CONFIG_LIBDIR="$DEST/usr/lib/pkgconfig" pkg-config --cflags --libs ferry)
cc -o "$DEST/hello" "$DEST/hello.c" $flags || { echo "FAIL: cannot build against the installed tree"; exit 1; }
LD_LIBRARY_PATH="$DEST/usr/lib" "$DEST/hello" | grep -qx '0.1.0' || { echo "FAIL: the installed library does not run"; exit 1; }
echo "ok: exports, soname, install, pkg-config"
