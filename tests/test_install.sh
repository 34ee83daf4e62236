#!/bin/sh
# The library exports only ferry_ symbols under a versioned soname, and
# `make install` gives a tree a program can build against through pkg-config:
# dynamically (run with LD_LIBRARY_PATH, as the install's message says) and
# statically from `pkg-config --static --libs` (which must list liburing when
# libferry.a holds the io_uring backend, libdeflate when it inflates .npz
# members); the installed tool runs by itself.
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

# The installed tool: no libferry.so needed, one line for --version, a report for env.
if ldd "$DEST/usr/bin/ferry" 2>/dev/null | grep -q libferry; then
	echo "FAIL: the installed ferry needs libferry.so"; exit 1
fi
"$DEST/usr/bin/ferry" --version | grep -qx 'ferry 0.1.0' || { echo "FAIL: the installed ferry --version"; exit 1; }
FERRY_DEVICE=host "$DEST/usr/bin/ferry" env | grep -q '^staging:' || { echo "FAIL: the installed ferry env"; exit 1; }

# A static program from pkg-config --static: ferry_ctx_create pulls in every IO backend.
static=$(PKG_CONFIG_SYSROOT_DIR="$DEST" PKG_CONFIG_LIBDIR="$DEST/usr/lib/pkgconfig" pkg-config --static --cflags --libs ferry)
if nm "$DEST/usr/lib/libferry.a" 2>/dev/null | grep -q ' U io_uring_'; then
	echo "$static" | grep -q -- '-luring' || { echo "FAIL: pkg-config --static --libs ferry lacks -luring: $static"; exit 1; }
fi
if nm "$DEST/usr/lib/libferry.a" 2>/dev/null | grep -q ' U libdeflate_'; then
	echo "$static" | grep -q -- '-ldeflate' || { echo "FAIL: pkg-config --static --libs ferry lacks -ldeflate: $static"; exit 1; }
fi
# libdeflate and liburing are linked in statically: the library needs neither at run time.
if ldd "$LIB" 2>/dev/null | grep -q 'libdeflate\|liburing'; then
	echo "FAIL: $LIB needs libdeflate or liburing at run time: $(ldd "$LIB")"; exit 1
fi
if [ "$(cc -print-file-name=libc.a)" = libc.a ]; then
	echo "ok: exports, soname, install, pkg-config, the installed tool (no libc.a: static link not tried)"
	exit 0
fi
cat >"$DEST/static.c" <<'C'
#include <ferry.h>
#include <stdio.h>
int main(void)
{
	ferry_ctx *ctx;
	if (ferry_ctx_create(&ctx, NULL) < 0) { printf("%s\n", ferry_last_error()); return 1; }
	printf("%s\n", ferry_ctx_io_name(ctx));
	return ferry_ctx_destroy(ctx) < 0;
}
C
cc -static -o "$DEST/static" "$DEST/static.c" $static 2>"$DEST/static.err" ||
	{ echo "FAIL: cannot link statically with: $static"; cat "$DEST/static.err"; exit 1; }
FERRY_DEVICE=host "$DEST/static" | grep -qx posix || { echo "FAIL: the static program does not run"; exit 1; }
echo "ok: exports, soname, install, pkg-config (shared and static), the installed tool"
