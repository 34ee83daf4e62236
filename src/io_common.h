/*
 * What the IO backends share (implemented in io.c): opening a file with the
 * O_DIRECT fallback, checking requests, ending reads at EOF, and the message
 * of a failed read.
 */
#ifndef FERRY_IO_COMMON_H
#define FERRY_IO_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "io.h"

/* O_DIRECT alignment of buffers, lengths and file offsets. */
#define FERRY__IO_ALIGN 4096u

/*
 * Opens path read-only into a new ferry__file (path copied, size and mtime from
 * fstat; directories and other non-regular files are refused). With
 * FERRY__IO_DIRECT it resolves the path and tries O_DIRECT first; where the
 * file system refuses, it falls back to buffered reads and says so on stderr,
 * once per process. Returns 0 or a negative code with a message naming path.
 */
int ferry__io_file_open(const char *path, int flags, struct ferry__file **out);

/* Closes f's descriptor and frees f (NULL is allowed). */
void ferry__io_file_close(struct ferry__file *f);

/*
 * Checks every request of reqs against f and zeroes its result: the range must
 * fit in an off_t and, when aligned is set and f is direct, dst, len and offset
 * must be multiples of FERRY__IO_ALIGN. Returns 0, or -EINVAL with a message
 * (the offending request's result is set to it too).
 */
int ferry__io_check_requests(const struct ferry__file *f, struct ferry__io_req *reqs,
			     unsigned n, int aligned);

/* Returns 1 when a read of f that has got done bytes so far has reached EOF
 * although it asked for more: direct reads end short (unaligned) only there. */
int ferry__io_direct_eof(const struct ferry__file *f, size_t done);

/* Sets the message "PATH: read at offset N: strerror(-err)" and returns err. */
int ferry__io_read_failed(const struct ferry__file *f, uint64_t offset, int err);

#endif
