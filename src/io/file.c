/*
 * The IO backend registry and what the backends share: opening with the
 * O_DIRECT fallback, request checks and read error messages.
 */
#include "io/io.h"

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

#include "base/base.h"

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

/* Every open is non-blocking, so that a FIFO or a device cannot stall it
 * before the regular-file check; reads then block as usual (io_uring returns
 * -EAGAIN for reads of a non-blocking file instead of waiting). */
#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

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
	fd = open(real, OPEN_FLAGS | O_DIRECT);
	if (fd < 0 && errno == EINVAL) {
		*refused = 1;
		fd = open(real, OPEN_FLAGS);
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
	fd = open(path, OPEN_FLAGS);
	return fd >= 0 ? fd : open_failed(path, errno);
}

static int64_t timespec_ns(struct timespec ts)
{
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct ferry__file_id id_of(const struct stat *st)
{
	return (struct ferry__file_id){ .dev = st->st_dev, .ino = st->st_ino,
					.size = (uint64_t)st->st_size,
					.mtime_ns = timespec_ns(st->st_mtim),
					.ctime_ns = timespec_ns(st->st_ctim),
					.nlink = (uint64_t)st->st_nlink };
}

/* Reads f's identity from its descriptor. Returns 0 or -errno. */
static int stat_id(const struct ferry__file *f, struct ferry__file_id *id, mode_t *mode)
{
	struct stat st;

	if (fstat(f->fd, &st) < 0)
		return open_failed(f->path, errno);
	*id = id_of(&st);
	*mode = st.st_mode;
	return 0;
}

int ferry__io_path_id(const char *path, struct ferry__file_id *out)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	*out = id_of(&st);
	return 0;
}

/* Fills f's identity; only regular files are readable. With
 * FERRY__IO_BLOCKING their reads block again. Returns 0 or a negative code. */
static int stat_file(struct ferry__file *f, int flags)
{
	mode_t mode;
	int rc = stat_id(f, &f->id, &mode);

	if (rc < 0)
		return rc;
	if (S_ISDIR(mode))
		return ferry__fail(-EISDIR, "%s: is a directory", f->path);
	if (!S_ISREG(mode))
		return ferry__fail(-EINVAL, "%s: not a regular file", f->path);
	/* F_SETFL sets O_DIRECT and O_NONBLOCK among others: keep the one, clear the other. */
	if ((flags & FERRY__IO_BLOCKING) && fcntl(f->fd, F_SETFL, f->direct ? O_DIRECT : 0) < 0)
		return open_failed(f->path, errno);
	f->size = f->id.size;
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
	rc = stat_file(f, flags);
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

int ferry__io_file_dup(const struct ferry__file *f, struct ferry__file **out)
{
	struct ferry__file *d = calloc(1, sizeof(*d));
	*out = NULL;
	if (!d || !(d->path = strdup(f->path))) {
		free(d);
		return ferry__fail(-ENOMEM, "%s: out of memory", f->path);
	}
	d->fd = fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
	if (d->fd < 0) {
		int err = -errno;
		ferry__io_file_close(d);
		return ferry__fail(err, "%s: dup: %s", f->path, strerror(-err));
	}
	d->direct = f->direct;
	d->size = f->size;
	d->id = f->id;
	*out = d;
	return 0;
}

/* Names what differs between two identities of path, into buf. */
static void describe_change(const struct ferry__file_id *was, const struct ferry__file_id *now,
			    char *buf, size_t len)
{
	if (was->dev != now->dev || was->ino != now->ino)
		snprintf(buf, len, "replaced by another file");
	else if (was->size != now->size)
		snprintf(buf, len, "size went from %" PRIu64 " to %" PRIu64 " bytes", was->size,
			 now->size);
	else
		snprintf(buf, len, "modified (its %s time moved)",
			 was->mtime_ns != now->mtime_ns ? "modification" : "change");
}

static int same_bytes(const struct ferry__file_id *was, const struct ferry__file_id *now)
{
	return was->dev == now->dev && was->ino == now->ino && was->size == now->size &&
	       was->mtime_ns == now->mtime_ns &&
	       (was->ctime_ns == now->ctime_ns || was->nlink != now->nlink);
}

int ferry__io_check_unchanged(struct ferry__file *f)
{
	struct ferry__file_id now;
	mode_t mode;
	char what[96];
	int rc = stat_id(f, &now, &mode);

	if (rc < 0)
		return rc;
	if (same_bytes(&f->id, &now))
		return 0;
	describe_change(&f->id, &now, what, sizeof(what));
	return ferry__fail(-FERRY_ECHANGED, "%s: changed while being read: %s", f->path, what);
}

/* pread until len bytes or EOF. Returns the bytes read or -errno. */
static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t offset)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* A direct file's bytes through an aligned bounce buffer. Returns the bytes
 * of [offset, offset + len) it got, or -errno. */
static ssize_t pread_direct(int fd, void *buf, size_t len, uint64_t offset)
{
	uint64_t start = offset & ~(uint64_t)(FERRY__IO_ALIGN - 1);
	size_t lead = (size_t)(offset - start);
	size_t span = (lead + len + FERRY__IO_ALIGN - 1) / FERRY__IO_ALIGN * FERRY__IO_ALIGN;
	char *bounce = ferry__aligned_alloc(FERRY__IO_ALIGN, span);
	ssize_t got;

	if (!bounce)
		return -ENOMEM;
	got = pread_full(fd, bounce, span, start);
	if (got > (ssize_t)lead) {
		got -= (ssize_t)lead;
		memcpy(buf, bounce + lead, (size_t)got < len ? (size_t)got : len);
	} else if (got >= 0) {
		got = 0;
	}
	free(bounce);
	return got < 0 || (size_t)got < len ? got : (ssize_t)len;
}

int ferry__io_read_host(struct ferry__file *f, void *buf, size_t len, uint64_t offset,
			size_t *got_out)
{
	int aligned = !((offset | len | (uintptr_t)buf) & (FERRY__IO_ALIGN - 1));
	ssize_t got = f->direct && !aligned ? pread_direct(f->fd, buf, len, offset)
					    : pread_full(f->fd, buf, len, offset);

	if (got < 0)
		return ferry__io_read_failed(f, offset, (int)got);
	if (got_out)
		*got_out = (size_t)got;
	else if ((size_t)got < len)
		return ferry__io_truncated(f, offset + (uint64_t)got, offset + len);
	return 0;
}

int ferry__io_truncated(const struct ferry__file *f, uint64_t end, uint64_t want)
{
	return ferry__fail(-FERRY_ETRUNCATED, "%s: file ends at byte %" PRIu64
			   ", expected at least %" PRIu64, f->path, end, want);
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
