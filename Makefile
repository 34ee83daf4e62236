# ferry — plain Makefile. Targets: all (default), test, demo, install, fuzz, bench, clean.
# Variables: SANITIZE=address|thread, PREFIX, DESTDIR, CC, NVCC, V=1 (print the
# whole command lines; by default each step prints one short line, and none
# under make -s).

PREFIX  ?= /usr/local
DESTDIR ?=
CC      ?= cc
CUDA_HOME ?= /usr/local/cuda
SANITIZE ?=

VERSION := 0.1.0
SOVERSION := 0
BUILD   := build

CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wno-unused-parameter -pthread
CPPFLAGS += -Iinclude -Isrc
LDLIBS  += -ldl -lpthread -lm

ifneq ($(wildcard $(CUDA_HOME)/include/cuda.h),)
CPPFLAGS += -DFERRY_HAVE_CUDA_H -isystem $(CUDA_HOME)/include
endif

# The CUDA device's conversion kernels: src/device/convert.cu compiled to PTX,
# as a C string in src/device/convert_ptx.h. That file is committed, so the
# build needs no nvcc; where nvcc is found, a changed convert.cu (or its
# parameters, or the script) regenerates it, and ptxas checks the result.
NVCC ?= $(CUDA_HOME)/bin/nvcc
HAVE_NVCC := $(shell command -v $(NVCC) 2>/dev/null)

# Optional libraries, linked statically so the binaries need only the C
# runtime where they run: $(call static_lib,LIB.a,HEADER.h) is the archive's
# path when it and its header are installed, else empty.
static_lib = $(if $(wildcard /usr/include/$(2)),$(firstword $(wildcard \
	$(addsuffix /$(1),/usr/lib/x86_64-linux-gnu /usr/lib /usr/local/lib))))

# liburing: the io_uring backends.
URING_LIB := $(call static_lib,liburing.a,liburing.h)
ifneq ($(URING_LIB),)
CPPFLAGS += -DFERRY_HAVE_LIBURING
endif

# libdeflate, for .npz members written by np.savez_compressed (and CRC-32).
# Measured faster than zlib (bench/inflate_libs.c, docs/design.md). Without
# it deflated members are an error that says so.
DEFLATE_LIB := $(call static_lib,libdeflate.a,libdeflate.h)
ifneq ($(DEFLATE_LIB),)
CPPFLAGS += -DFERRY_HAVE_LIBDEFLATE
endif

# zlib, for reading a deflated member's .npy header alone (ferry info):
# libdeflate inflates a whole stream at once, zlib a stream's first bytes.
# Without it ferry info inflates the whole member.
ZLIB_LIB := $(call static_lib,libz.a,zlib.h)
ifneq ($(ZLIB_LIB),)
CPPFLAGS += -DFERRY_HAVE_ZLIB
endif

# The static libraries every binary links after libferry.
STATIC_LIBS := $(URING_LIB) $(DEFLATE_LIB) $(ZLIB_LIB)

# Quiet by default, as kernel-style builds are: "  CC      build/obj/x.o".
V ?= 0
ifeq ($(V),1)
Q :=
say = @:
else
Q := @
ifneq ($(findstring s,$(firstword -$(MAKEFLAGS))),)
say = @:
else
say = @printf '  %-7s %s\n' '$(1)' '$(2)'
endif
endif

ifeq ($(SANITIZE),address)
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
BUILD   := build-asan
else ifeq ($(SANITIZE),thread)
CFLAGS  += -fsanitize=thread -fno-omit-frame-pointer
LDFLAGS += -fsanitize=thread
BUILD   := build-tsan
else ifneq ($(SANITIZE),)
$(error SANITIZE must be address or thread)
endif

LIB_SRCS  := $(sort $(wildcard src/*/*.c))
LIB_OBJS  := $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
LIB_HDRS  := $(wildcard src/*/*.h include/*.h)
TEST_SRCS := $(sort $(wildcard tests/test_*.c))
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
TEST_COMMON := $(sort $(wildcard tests/common/*.c))
TOOL_SRCS := $(sort $(wildcard tools/*.c tools/bench/*.c))
BENCH_SRCS := $(filter-out bench/inflate_libs.c,$(sort $(wildcard bench/*.c)))
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

.PHONY: all test demo install fuzz bench clean bench-inflate
all: $(BUILD)/libferry.so $(BUILD)/libferry.a $(BUILD)/ferry $(TEST_BINS) $(BENCH_BINS) $(BUILD)/shim/slowread.so \
	$(BUILD)/tests/layout/struct_layout
	@[ -z "$(SANITIZE)" ] || ln -sfn ../$(BUILD)/ferry build/ferry-$(SANITIZE) 2>/dev/null || true

ifneq ($(HAVE_NVCC),)
src/device/convert_ptx.h: src/device/convert.cu src/device/convert_params.h src/device/ptx_to_c.sh
	$(call say,NVCC,$@)
	$(Q)sh src/device/ptx_to_c.sh $(NVCC) $< $@
endif

$(BUILD)/obj/%.o: src/%.c $(LIB_HDRS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(BUILD)/tests $(BUILD)/bench:
	$(Q)mkdir -p $@

$(BUILD)/libferry.a: $(LIB_OBJS)
	$(call say,AR,$@)
	$(Q)rm -f $@; ar rcs $@ $^

$(BUILD)/libferry.so: $(LIB_OBJS) src/ferry.map
	$(call say,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,libferry.so.$(SOVERSION) -Wl,--version-script=src/ferry.map \
		$(LDFLAGS) -o $(BUILD)/libferry.so.$(VERSION) $(LIB_OBJS) $(STATIC_LIBS) $(LDLIBS)
	$(Q)ln -sf libferry.so.$(VERSION) $(BUILD)/libferry.so.$(SOVERSION)
	$(Q)ln -sf libferry.so.$(VERSION) $@

$(BUILD)/ferry: $(TOOL_SRCS) $(BUILD)/libferry.a $(wildcard tools/*.h tools/bench/*.h)
	$(call say,CCLD,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itools $(CFLAGS) $(LDFLAGS) -o $@ $(TOOL_SRCS) $(BUILD)/libferry.a $(STATIC_LIBS) $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(TEST_COMMON) tests/common/helpers.h $(BUILD)/libferry.a | $(BUILD)/tests
	$(call say,CCLD,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests/common $(CFLAGS) $(LDFLAGS) -o $@ $< $(TEST_COMMON) $(BUILD)/libferry.a $(STATIC_LIBS) $(LDLIBS)

# Fault sweeps and files changed mid-load: libferry.a's host allocations and
# preads go through tests/common/faultalloc.c and faultio.c.
FAULT_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=posix_memalign,--wrap=pread,--wrap=preadv
WRAPPED_TESTS := $(filter $(BUILD)/tests/test_fault_% $(BUILD)/tests/test_change_% \
	$(BUILD)/tests/test_reader_next_timeout,$(TEST_BINS))
$(WRAPPED_TESTS): $(BUILD)/tests/%: tests/%.c $(TEST_COMMON) tests/common/helpers.h $(BUILD)/libferry.a | $(BUILD)/tests
	$(call say,CCLD,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itests/common $(CFLAGS) $(LDFLAGS) $(FAULT_WRAP) -o $@ $< $(TEST_COMMON) $(BUILD)/libferry.a $(STATIC_LIBS) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libferry.a | $(BUILD)/bench
	$(call say,CCLD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libferry.a $(STATIC_LIBS) $(LDLIBS)

test: all
	@BUILD=$(BUILD) sh tests/run.sh

# Builds only the tool, silently (V=1 shows the commands), then runs the demo.
demo:
	@$(MAKE) --no-print-directory $(if $(filter 1,$(V)),,-s) $(BUILD)/ferry
	@sh tools/demo.sh $(BUILD)

fuzz:
	$(MAKE) -f fuzz/Makefile

bench: all
	@sh bench/run.sh

# zlib against libdeflate on np.savez_compressed's members (needs both -dev packages).
bench-inflate:
	@mkdir -p $(BUILD)/bench
	$(Q)$(CC) -O2 -Wall -o $(BUILD)/bench/inflate_libs bench/inflate_libs.c -lz -ldeflate
	@$(BUILD)/bench/inflate_libs

# The tool links libferry statically and runs from anywhere; programs linked
# with -lferry find libferry.so.0 once the loader's cache knows PREFIX/lib
# (ldconfig, run here when installing into / as root) or through
# LD_LIBRARY_PATH.
install: all
	$(call say,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig
	$(Q)install -m 644 include/ferry.h $(DESTDIR)$(PREFIX)/include/
	$(Q)install -m 755 $(BUILD)/libferry.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/
	$(Q)ln -sf libferry.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libferry.so.$(SOVERSION)
	$(Q)ln -sf libferry.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libferry.so
	$(Q)install -m 644 $(BUILD)/libferry.a $(DESTDIR)$(PREFIX)/lib/
	$(Q)install -m 755 $(BUILD)/ferry $(DESTDIR)$(PREFIX)/bin/
	@# -luring (-ldeflate, -lz) when the library calls io_uring (libdeflate,
	@# zlib): a build carried from a machine with them installs on one without.
	$(Q)uring=$$(nm $(BUILD)/libferry.a 2>/dev/null | grep -q ' U io_uring_' && echo -luring); \
	deflate=$$(nm $(BUILD)/libferry.a 2>/dev/null | grep -q ' U libdeflate_' && echo -ldeflate); \
	zlib=$$(nm $(BUILD)/libferry.a 2>/dev/null | grep -q ' U inflate' && echo -lz); \
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
		-e "s|@LIBS_PRIVATE@|$$uring $$deflate $$zlib $(strip $(LDLIBS))|g" ferry.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/ferry.pc
	$(Q)if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then \
		ldconfig; \
	else \
		echo "ferry: installed libferry.so.$(SOVERSION) in $(DESTDIR)$(PREFIX)/lib; programs" \
			"linked with -lferry need 'ldconfig' (as root) or LD_LIBRARY_PATH=$(PREFIX)/lib"; \
	fi

clean:
	rm -rf build build-asan build-tsan

# An LD_PRELOAD shim that slows pread (FERRY_SLOWREAD_MS), for tests/test_python_interrupt.py.
$(BUILD)/shim/slowread.so: tests/shim/slowread.c
	$(call say,CCLD,$@)
	$(Q)mkdir -p $(@D) && $(CC) -O2 -Wall -Wextra -fPIC -shared -o $@ $<

# Prints the layout of include/ferry.h's structs as JSON, for tests/test_python_layout.py.
$(BUILD)/tests/layout/struct_layout: tests/layout/struct_layout.c include/ferry.h
	$(call say,CCLD,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $<
