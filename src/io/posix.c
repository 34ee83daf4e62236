/*
 * The posix IO backend: pread into pinned host staging, one request after
 * another on the calling thread; requests that continue each other in the
 * file (a header and its payload) share one preadv.
 */
#include "io/io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/base.h"

struct posix_io {
	struct ferry__device *dev;
};

/* Returns 0 and a new backend state; posix needs nothing but memory. */
static int posix_init(struct ferry__device *dev, struct ferry__io **out)
{
	struct posix_io *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return ferry__fail(-ENOMEM, "posix: out of memory");
	p->dev = dev;
	*out = (struct ferry__io *)(void *)p;
	return 0;
}

static void posix_fini(struct ferry__io *io)
{
	free(io);
}

/* Returns 0 after writing the one-line description. */
static int posix_describe(struct ferry__io *io, char *buf, size_t len)
{
	snprintf(buf, len, "posix: pread");
	return 0;
}

static int posix_open(struct ferry__io *io, const char *path, int flags,
		      struct ferry__file **out)
{
	return ferry__io_file_open(path, flags, out);
}

static void posix_close(struct ferry__io *io, struct ferry__file *f)
{
	ferry__io_file_close(f);
}

#define GROUP_MAX 8 /* adjacent requests one preadv reads */

/* Reads what r still lacks (past r->result) with pread until it is complete or
 * EOF. Returns the byte count, or -errno with *failed_at set to the offset
 * that failed. */
static ssize_t read_request(const struct ferry__file *f, const struct ferry__io_req *r,
			    uint64_t *failed_at)
{
	size_t done = r->result > 0 ? (size_t)r->result : 0;

	while (done < r->len) {
		ssize_t got = pread(f->fd, (char *)r->dst + done, r->len - done,
				    (off_t)(r->offset + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			*failed_at = r->offset + done;
			return -errno;
		}
		if (got == 0)
			break;
		done += (size_t)got;
		if (ferry__io_direct_eof(f, done))
			break;
	}
	return (ssize_t)done;
}

/* How many requests from the first on continue each other in the file. */
static unsigned adjacent(const struct ferry__io_req *reqs, unsigned n)
{
	unsigned k = 1;
	while (k < n && k < GROUP_MAX && reqs[k].offset == reqs[k - 1].offset + reqs[k - 1].len)
		k++;
	return k;
}

/* Reads adjacent requests (a header and its payload) in one preadv; each
 * result says how much it got. Returns the bytes read (0 at EOF), or -errno
 * (the first result holds it). */
static ssize_t read_group(const struct ferry__file *f, struct ferry__io_req *reqs, unsigned k)
{
	struct iovec iov[GROUP_MAX];
	ssize_t got, left;
	for (unsigned i = 0; i < k; i++)
		iov[i] = (struct iovec){ reqs[i].dst, reqs[i].len };
	do
		got = preadv(f->fd, iov, (int)k, (off_t)reqs[0].offset);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return reqs[0].result = -errno;
	left = got;
	for (unsigned i = 0; i < k && left > 0; i++) {
		size_t part = (size_t)left < reqs[i].len ? (size_t)left : reqs[i].len;
		reqs[i].result = (ssize_t)part;
		left -= (ssize_t)part;
	}
	return got;
}

/* Reads requests [0, k) (adjacent when k > 1), each to the end or EOF.
 * Returns 0 or the first error (the message names it). */
static int read_some(const struct ferry__file *f, struct ferry__io_req *reqs, unsigned k)
{
	uint64_t failed_at = reqs[0].offset;
	if (k > 1) {
		ssize_t got = read_group(f, reqs, k);
		if (got <= 0) /* an error, or EOF: what a pread would see too */
			return got < 0 ? ferry__io_read_failed(f, failed_at, (int)got) : 0;
	}
	for (unsigned i = 0; i < k; i++) {
		if (k > 1 && (size_t)reqs[i].result == reqs[i].len)
			continue;
		reqs[i].result = read_request(f, &reqs[i], &failed_at);
		if (reqs[i].result < 0)
			return ferry__io_read_failed(f, failed_at, (int)reqs[i].result);
	}
	return 0;
}

/* Runs every request, each result saying how far it got or its error. Returns
 * 0, or the first failed request's error (the message names it). */
static int posix_read(struct ferry__io *io, struct ferry__file *f, struct ferry__io_req *reqs,
		      unsigned n)
{
	int first_error = ferry__io_check_requests(f, reqs, n, 1);
	for (unsigned i = 0; first_error == 0 && i < n;) {
		unsigned k = f->direct ? 1 : adjacent(reqs + i, n - i);
		first_error = read_some(f, reqs + i, k);
		i += k;
	}
	return first_error;
}

const struct ferry__io_ops ferry__io_posix = {
	.name = "posix",
	.placement = FERRY__STAGE_PINNED,
	.depth = 1,
	.init = posix_init,
	.fini = posix_fini,
	.describe = posix_describe,
	.open = posix_open,
	.close = posix_close,
	.read = posix_read,
};
