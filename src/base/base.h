/* What every layer uses: error messages, sizes, time, aligned memory, a small
 * thread pool, and the conversions of array payloads on host memory. */
#ifndef FERRY_BASE_H
#define FERRY_BASE_H

#include <stddef.h>
#include <stdint.h>

#include "ferry.h"

#define FERRY__ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Sets the calling thread's last error message (printf-style) and returns err,
 * so a failure reads: return ferry__fail(-EIO, "%s: read failed", path); */
int ferry__fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Makes sure the calling thread's message for err names subject (a file, a
 * directory): "subject: <message>", or "subject: <strerror>" when there is no
 * message. Returns err. For public calls, whose message must name what they
 * were asked about even when the failure came from a layer that does not know. */
int ferry__fail_subject(int err, const char *subject);
/* A malloc'd copy of the calling thread's message (NULL when out of memory). */
char *ferry__error_copy(void);
/* Clears the calling thread's last error message. */
void ferry__clear_error(void);

/* Parses "123", "64k", "2M", "1G" (binary units) into bytes. -FERRY_ECONFIG when invalid. */
int ferry__parse_size(const char *text, uint64_t *out);

/* Monotonic clock in nanoseconds. */
uint64_t ferry__now_ns(void);

/* Page size of this machine. */
size_t ferry__page_size(void);
/* len rounded up to a whole number of pages. */
size_t ferry__page_round(size_t len);

/* Aligned host allocation, zeroed; NULL on failure. Free with free(). */
void *ferry__aligned_alloc(size_t align, size_t len);

/* ==== threads: a small pool ==== */
/* A small thread pool: one mutex, one condition variable, a task queue. */

struct ferry__pool;

/* Starts n worker threads (n >= 1). Returns 0 or a negative code. */
int ferry__pool_create(unsigned n, struct ferry__pool **out);
/* Runs the tasks still queued, then stops and joins the workers. */
void ferry__pool_destroy(struct ferry__pool *pool);
/* Queues fn(arg) to run on a worker. Returns 0 or -ENOMEM. */
int ferry__pool_submit(struct ferry__pool *pool, void (*fn)(void *arg), void *arg);
/* Runs fn(arg, i) on the caller (i = 0) and on up to n - 1 workers (i = 1..),
 * and returns when every started call has returned. Calls that no worker has
 * started by the time the caller's own call returns are skipped, so fn should
 * pull its work from a shared counter; this also makes it safe to call from a
 * pool worker. Returns how many calls ran. */
unsigned ferry__pool_parallel(struct ferry__pool *pool, unsigned n,
			      void (*fn)(void *arg, unsigned i), void *arg);
/* Number of worker threads. */
unsigned ferry__pool_size(struct ferry__pool *pool);

/* ==== conversions: byte order and Fortran-to-C layout on host memory ==== */
/* Pure functions on host memory: npy/ converts payloads read on the host with
 * them, and the host device runs its conversions with them (device.h). */

/*
 * Reverses the byte order of count elements of itemsize bytes at data, in place.
 * A complex element (is_complex) swaps its two components separately; one-byte
 * elements are left alone. Returns nothing.
 */
void ferry__byteswap(void *data, uint64_t count, size_t itemsize, int is_complex);

/*
 * Writes into dst the C-order (row-major) layout of the Fortran-order array src
 * of the given rank (0..FERRY_MAX_DIMS), shape and itemsize. dst and src must not
 * overlap. Returns nothing.
 */
void ferry__fortran_to_c(void *dst, const void *src, int ndim, const int64_t *shape,
			 size_t itemsize);

/* ==== .npz members: CRC-32 and raw deflate ==== */

/* Updates crc (0 to start) with len bytes at data: zip's CRC-32. */
uint32_t ferry__crc32(uint32_t crc, const void *data, size_t len);
/* The CRC-32 of A followed by B from crc1 = CRC(A), crc2 = CRC(B) and B's
 * length: so that pieces checked out of order (staging chunks) make the whole's. */
uint32_t ferry__crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);
/* Inflates the raw deflate stream in[0..in_len) into exactly out_len bytes at
 * out (all of in must be the stream). Returns 0, -FERRY_EFORMAT (corrupt, or
 * another length) or -FERRY_EUNSUPPORTED (built without libdeflate), with a
 * reason in why; -ENOMEM. */
int ferry__inflate_raw(const void *in, size_t in_len, void *out, size_t out_len, char *why,
		       size_t why_len);
/* 1 when this build inflates (libdeflate), else 0. */
int ferry__inflate_available(void);
/* Inflates the first bytes of the raw deflate stream that begins with
 * in[0..in_len) (a prefix of the stream, or all of it) into out, at most want
 * of them: *got says how many (fewer when in ran out first, or the stream
 * ended). Returns 1 when the stream ended within in, 0 when it did not,
 * -FERRY_EFORMAT (corrupt data within in), -ENOMEM or -FERRY_EUNSUPPORTED
 * (built without zlib), with a reason in why. */
int ferry__inflate_prefix(const void *in, size_t in_len, void *out, size_t want, size_t *got,
			  char *why, size_t why_len);
/* 1 when this build inflates a stream's first bytes alone (zlib), else 0. */
int ferry__inflate_prefix_available(void);

#endif
