/*
 * The IO backend registry and what the backends share: opening with the
 * O_DIRECT fallback, request checks and read error messages.
 */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "io_common.h"

const struct ferry__io_ops *ferry__io_find(const char *name)
{
	static const struct ferry__io_ops *const all[] = {
		&ferry__io_posix,
		&ferry__io_uring,
		&ferry__io_cufile,
	};

	if (!name)
		return NULL;
	for (size_t i = 0; i < FERRY__ARRAY_LEN(all); i++)
		if (all[i]->name && !strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}

/* Says once per process that a file system refused O_DIRECT. */
static void warn_direct_refused(const char *path)
{
	static atomic_flag warned = ATOMIC_FLAG_INIT;

	if (!atomic_flag_test_and_set(&warned))
		fprintf(stderr,
			"ferry: O_DIRECT refused by the file system of %s; using buffered reads\n",
			path);
}

/* Sets the message "PATH: strerror" for a failed open and returns -errno. */
static int open_failed(const char *path, int saved_errno)
{
	return ferry__fail(-saved_errno, "%s: %s", path, strerror(saved_errno));
}

/*
 * Opens the file path resolves to with O_DIRECT (resolved, because O_DIRECT
 * fails through some symlinks); where the file system refuses it (EINVAL), opens
 * it buffered and sets *refused. Returns the descriptor or a negative code.
 */
static int open_direct(const char *path, int *refused)
{
	char *real = realpath(path, NULL);
	int fd;

	if (!real)
		return open_failed(path, errno);
	fd = open(real, O_RDONLY | O_CLOEXEC | O_DIRECT);
	if (fd < 0 && errno == EINVAL) {
		*refused = 1;
		fd = open(real, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		fd = open_failed(path, errno);
	free(real);
	return fd;
}

/* Opens path as asked by flags. Returns the descriptor or a negative code. */
static int open_fd(const char *path, int flags, int *direct, int *refused)
{
	int fd;

	*direct = 0;
	*refused = 0;
	if (flags & FERRY__IO_DIRECT) {
		fd = open_direct(path, refused);
		*direct = fd >= 0 && !*refused;
		return fd;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : open_failed(path, errno);
}

/* Fills size and mtime from fstat; only regular files are readable. Returns 0
 * or a negative code. */
static int stat_file(struct ferry__file *f)
{
	struct stat st;

	if (fstat(f->fd, &st) < 0)
		return open_failed(f->path, errno);
	if (S_ISDIR(st.st_mode))
		return ferry__fail(-EISDIR, "%s: is a directory", f->path);
	if (!S_ISREG(st.st_mode))
		return ferry__fail(-EINVAL, "%s: not a regular file", f->path);
	f->size = (uint64_t)st.st_size;
	f->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	return 0;
}

int ferry__io_file_open(const char *path, int flags, struct ferry__file **out)
{
	struct ferry__file *f = calloc(1, sizeof(*f));
	int refused, rc;

	*out = NULL;
	if (!f)
		return ferry__fail(-ENOMEM, "%s: out of memory", path);
	f->fd = -1;
	f->path = strdup(path);
	if (!f->path) {
		rc = ferry__fail(-ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	rc = open_fd(path, flags, &f->direct, &refused);
	if (rc < 0)
		goto fail;
	f->fd = rc;
	rc = stat_file(f);
	if (rc < 0)
		goto fail;
	if (refused)
		warn_direct_refused(path);
	*out = f;
	return 0;
fail:
	ferry__io_file_close(f);
	return rc;
}

void ferry__io_file_close(struct ferry__file *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	free((char *)f->path);
	free(f);
}

/* 0 when r is well formed for f, else -EINVAL with a message. */
static int check_request(const struct ferry__file *f, const struct ferry__io_req *r, int aligned)
{
	uint64_t mask = FERRY__IO_ALIGN - 1;

	if (r->offset > (uint64_t)INT64_MAX || r->len > (uint64_t)INT64_MAX - r->offset)
		return ferry__fail(-EINVAL, "%s: read of %zu bytes at offset %" PRIu64
				   " is out of range", f->path, r->len, r->offset);
	if (!aligned || !f->direct)
		return 0;
	if (((uintptr_t)r->dst | r->len | r->offset) & mask)
		return ferry__fail(-EINVAL, "%s: direct read of %zu bytes at offset %" PRIu64
				   " into %p is not %u-byte aligned", f->path, r->len,
				   r->offset, r->dst, FERRY__IO_ALIGN);
	return 0;
}

int ferry__io_check_requests(const struct ferry__file *f, struct ferry__io_req *reqs,
			     unsigned n, int aligned)
{
	for (unsigned i = 0; i < n; i++) {
		int rc = check_request(f, &reqs[i], aligned);
		reqs[i].result = rc;
		if (rc < 0)
			return rc;
	}
	return 0;
}

int ferry__io_direct_eof(const struct ferry__file *f, size_t done)
{
	return f->direct && (done & (FERRY__IO_ALIGN - 1)) != 0;
}

int ferry__io_read_failed(const struct ferry__file *f, uint64_t offset, int err)
{
	return ferry__fail(err, "%s: read at offset %" PRIu64 ": %s", f->path, offset,
			   strerror(-err));
}
