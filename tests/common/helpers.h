/*
 * Test helpers: exit codes (0 pass, 1 fail, 77 skip), assertions that print
 * both values, and the byte patterns every data-moving test checks.
 */
#ifndef FERRY_TEST_HELPERS_H
#define FERRY_TEST_HELPERS_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "device/device.h"

#define T_EXIT_PASS 0
#define T_EXIT_FAIL 1
#define T_EXIT_SKIP 77

#define T_FAIL(...)                                                                  \
	do {                                                                         \
		fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                      \
		fprintf(stderr, __VA_ARGS__);                                        \
		fprintf(stderr, "\n");                                               \
		exit(T_EXIT_FAIL);                                                   \
	} while (0)

#define T_SKIP(...)                                                                  \
	do {                                                                         \
		printf("skip: ");                                                    \
		printf(__VA_ARGS__);                                                 \
		printf("\n");                                                        \
		exit(T_EXIT_SKIP);                                                   \
	} while (0)

#define T_ASSERT(cond)                                                               \
	do {                                                                         \
		if (!(cond))                                                         \
			T_FAIL("assertion failed: %s", #cond);                       \
	} while (0)

#define T_EQ(a, b)                                                                   \
	do {                                                                         \
		long long t_a_ = (long long)(a), t_b_ = (long long)(b);              \
		if (t_a_ != t_b_)                                                    \
			T_FAIL("%s == %s: %lld != %lld", #a, #b, t_a_, t_b_);        \
	} while (0)

/* rc must be 0 (or non-negative); prints ferry_strerror and the last error. */
#define T_OK(expr)                                                                   \
	do {                                                                         \
		long long t_rc_ = (long long)(expr);                                 \
		if (t_rc_ < 0)                                                       \
			T_FAIL("%s: %s (%s)", #expr, ferry_strerror((int)t_rc_),     \
			       ferry_last_error());                                  \
	} while (0)

/* Opens the device FERRY_DEVICE names (auto when unset); skips the test when
 * that device is not available. */
struct ferry__device *t_open_device(void);

struct ferry__staging;
/* A staging engine on dev: buffers of chunk bytes in pinned memory, all made
 * at once, a batch launched after 32 copies. */
struct ferry__staging *t_pinned_engine(struct ferry__device *dev, size_t chunk, unsigned buffers);
/* The same, a batch launched once it holds more than launch_after copies. */
struct ferry__staging *t_pinned_engine_after(struct ferry__device *dev, size_t chunk,
					     unsigned buffers, unsigned launch_after);

/*
 * Patterns: byte i of a source named by (file_id, offset) is a function of
 * file_id and offset + i, so a misplaced chunk says where it came from.
 */
void t_fill_pattern(void *dst, size_t len, uint32_t file_id, uint64_t offset);
/* Writes a file of len bytes of file_id's pattern (from offset 0) at path. */
void t_write_pattern_file(const char *path, size_t len, uint32_t file_id);
/* Returns the index of the first byte that differs from the pattern, or len. */
size_t t_check_pattern(const void *buf, size_t len, uint32_t file_id, uint64_t offset);
/* Decodes where a mismatching 8-byte-aligned word came from, into a message. */
void t_describe_word(const void *word, char *buf, size_t len);

/* Copies len device bytes at src back into a fresh host buffer (free()). */
void *t_copy_back(struct ferry__device *dev, const void *src, size_t len);

/* A random generator tests can seed and print (xorshift64*). */
uint64_t t_rand(uint64_t *state);

/* Makes a fresh temporary directory; returns its path (static storage per call). */
char *t_tmpdir(void);
/* Removes a directory tree. */
void t_rmtree(const char *path);
/* Splits a CSV line (a FERRY_TRACE row) in place at commas outside quotes;
 * the fields keep their quotes. Returns the field count (at most cap). */
unsigned t_csv_fields(char *line, char **fields, unsigned cap);

/*
 * A fault device: wraps a real device and makes the Nth call of one class of
 * operation fail with err (SQLite's "fail the Nth call"). n counts from 1;
 * after the fault, calls succeed again unless sticky is set.
 */
enum t_fault_class {
	T_FAULT_NONE, T_FAULT_MEM_ALLOC, T_FAULT_PINNED_ALLOC, T_FAULT_COPY,
	T_FAULT_EVENT_CREATE, T_FAULT_EVENT_RECORD, T_FAULT_EVENT_QUERY, T_FAULT_EVENT_SYNC,
	T_FAULT_STREAM_SYNC, T_FAULT_CONVERT, T_FAULT_MAP_READY, T_FAULT_MAP_REGISTER,
	T_FAULT_COPY_SYNC, T_FAULT_NCLASSES
};
struct ferry__device *t_fault_device(struct ferry__device *inner);
void t_fault_arm(struct ferry__device *fault_dev, enum t_fault_class cls, unsigned long n,
		 int err, int sticky);
/* How many calls of cls the device has seen since it was armed. */
unsigned long t_fault_calls(struct ferry__device *fault_dev, enum t_fault_class cls);
/* Whether the armed fault has fired. */
int t_fault_fired(struct ferry__device *fault_dev);
/* The device it wraps: calls through it are neither counted nor failed (a
 * test reading results back without adding to the counts). */
struct ferry__device *t_fault_inner(struct ferry__device *fault_dev);
/* Makes calls of cls wait in the device (not yet counted) until another
 * t_fault_hold names another class (T_FAULT_NONE: none). */
void t_fault_hold(struct ferry__device *fault_dev, enum t_fault_class cls);
/* Returns once a call waits in a class held by t_fault_hold. */
void t_fault_wait_held(struct ferry__device *fault_dev);
/* Says that the device's registrations leave launches alone
 * (FERRY__DEV_MAP_BESIDE), as CUDA's do. */
void t_fault_map_beside(struct ferry__device *fault_dev);
/* Takes the device's conversions away (before a context is made on it), so
 * that loads convert on the host as on a device without them. */
void t_fault_no_convert(struct ferry__device *fault_dev);

/*
 * A fault IO table: wraps a real one (ferry__io_posix, ...) and makes the Nth
 * call of one class fail; one fault IO per program. Table classes: open (fails
 * with err, e.g. -ENOENT or -EACCES), read (every request fails with err, e.g.
 * -EIO), early EOF (the read runs, then reports the file ending halfway through
 * the first request that got bytes). System-call classes, counted per pread and
 * live only in programs linked with --wrap=pread (t_io_syscalls_wrapped()):
 * short read (fewer bytes than asked, not at EOF: backends must loop), a failed
 * pread (errno -err) and a pread that reports EOF before the real end.
 */
enum t_io_fault {
	T_IO_NONE, T_IO_OPEN, T_IO_READ, T_IO_EARLY_EOF, T_IO_SHORT_READ, T_IO_SYS_READ,
	T_IO_SYS_EOF, T_IO_NCLASSES,
};
struct ferry__io_ops;
const struct ferry__io_ops *t_fault_io(const struct ferry__io_ops *inner);
void t_io_arm(enum t_io_fault cls, unsigned long n, int err, int sticky);
/* How many calls of cls the fault IO has seen since it was armed. */
unsigned long t_io_calls(enum t_io_fault cls);
int t_io_fired(void);
int t_io_syscalls_wrapped(void);
/* In programs linked with --wrap=pread: fn(arg, fd, offset) runs on the
 * calling thread after every pread of the program (not an injected failure),
 * ferry's included, so a test can change a file at an exact point of a load.
 * NULL removes it. */
void t_io_after_pread(void (*fn)(void *arg, int fd, off_t offset), void *arg);

/*
 * Host allocation faults: in programs linked with --wrap=malloc, calloc,
 * realloc and posix_memalign (t_alloc_wrapped()), the Nth allocation after
 * t_alloc_arm(n) fails (n 0: count only) until t_alloc_disarm(). A thread's
 * own allocations are not counted while t_alloc_pause(1) holds.
 */
int t_alloc_wrapped(void);
void t_alloc_arm(unsigned long n);
void t_alloc_disarm(void);
unsigned long t_alloc_calls(void);
int t_alloc_fired(void);
void t_alloc_pause(int pause);

#endif
