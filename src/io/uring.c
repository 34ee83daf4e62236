/*
 * The uring IO backend: io_uring reads into pinned host staging, every request
 * of a call in flight at once (up to the queue depth).
 *
 * Many threads read through one ferry__io at the same time, so each thread has
 * a ring of its own. The backend owns the rings (a list under a mutex, freed at
 * fini); a thread finds its ring through a small thread-local cache keyed by
 * the backend's id, which is never reused, so a cache entry of a finished
 * backend can never match a live one.
 */
#include "io/io.h"

#ifndef FERRY_HAVE_LIBURING

const struct ferry__io_ops ferry__io_uring = {
	.name = NULL, /* built without liburing */
};

#else

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <liburing.h>

#include "base/base.h"

enum {
	URING_DEPTH = 64,       /* requests in flight per ring */
	URING_CACHE_SLOTS = 4,  /* backends a thread remembers its ring for */
	FILE_SLOTS = 16,        /* files one submit of read_files handles: 4 requests each */
};

/* The most one read asks for; cqe->res is an int. Aligned, so that a direct
 * read split here stays aligned. */
#define URING_MAX_READ (1u << 30)

struct uring_ring {
	struct io_uring ring;
	pthread_t owner;        /* the thread that uses it */
	int broken;             /* a ring-level error left it unusable */
	int file_slots;         /* FILE_SLOTS registered file slots (read_files) */
	struct uring_ring *next;
};

struct uring_io {
	uint64_t id;
	pthread_mutex_t lock;   /* guards rings and each ring's owner and broken */
	struct uring_ring *rings;
};

struct ring_cache_slot {
	uint64_t io_id;
	struct uring_ring *ring;
};

static _Thread_local struct ring_cache_slot ring_cache[URING_CACHE_SLOTS];
static _Thread_local unsigned ring_cache_next;
static atomic_uint_fast64_t next_io_id = 1;

static struct uring_io *to_uring(struct ferry__io *io)
{
	return (struct uring_io *)(void *)io;
}

/* Returns 0 when io_uring works here and knows IORING_OP_READ, else
 * -FERRY_EIO_BACKEND with a message (sandboxes refuse io_uring_setup). */
static int probe_uring(void)
{
	struct io_uring ring;
	struct io_uring_probe *probe;
	int rc = io_uring_queue_init(URING_DEPTH, &ring, 0);
	int has_read;

	if (rc < 0)
		return ferry__fail(-FERRY_EIO_BACKEND, "uring: io_uring is not available: %s",
				   strerror(-rc));
	probe = io_uring_get_probe_ring(&ring);
	has_read = probe && io_uring_opcode_supported(probe, IORING_OP_READ);
	io_uring_free_probe(probe);
	io_uring_queue_exit(&ring);
	if (!has_read)
		return ferry__fail(-FERRY_EIO_BACKEND,
				   "uring: the kernel's io_uring lacks IORING_OP_READ");
	return 0;
}

/* Returns 0 and a new backend, or a negative code. */
static int uring_init(struct ferry__device *dev, struct ferry__io **out)
{
	struct uring_io *u;
	int rc = probe_uring();

	*out = NULL;
	if (rc < 0)
		return rc;
	u = calloc(1, sizeof(*u));
	if (!u)
		return ferry__fail(-ENOMEM, "uring: out of memory");
	u->id = atomic_fetch_add(&next_io_id, 1);
	pthread_mutex_init(&u->lock, NULL);
	*out = (struct ferry__io *)(void *)u;
	return 0;
}

/* Frees every ring; no thread may read through io any more. */
static void uring_fini(struct ferry__io *io)
{
	struct uring_io *u = to_uring(io);

	if (!u)
		return;
	while (u->rings) {
		struct uring_ring *r = u->rings;
		u->rings = r->next;
		io_uring_queue_exit(&r->ring);
		free(r);
	}
	pthread_mutex_destroy(&u->lock);
	free(u);
}

/* Returns 0 after writing the one-line description. */
static int uring_describe(struct ferry__io *io, char *buf, size_t len)
{
	snprintf(buf, len, "uring: io_uring, %d reads in flight per thread", URING_DEPTH);
	return 0;
}

static int uring_open(struct ferry__io *io, const char *path, int flags,
		      struct ferry__file **out)
{
	return ferry__io_file_open(path, flags | FERRY__IO_BLOCKING, out);
}

static void uring_close(struct ferry__io *io, struct ferry__file *f)
{
	ferry__io_file_close(f);
}

/* ---- finding the calling thread's ring ---------------------------------- */

/* The calling thread's cached ring for u, or NULL. */
static struct uring_ring *cached_ring(const struct uring_io *u)
{
	for (unsigned i = 0; i < URING_CACHE_SLOTS; i++)
		if (ring_cache[i].io_id == u->id && !ring_cache[i].ring->broken)
			return ring_cache[i].ring;
	return NULL;
}

static void cache_ring(const struct uring_io *u, struct uring_ring *r)
{
	struct ring_cache_slot *slot = &ring_cache[ring_cache_next++ % URING_CACHE_SLOTS];

	slot->io_id = u->id;
	slot->ring = r;
}

/* The calling thread's usable ring in u's list, or NULL. Caller holds u->lock.
 * A ring whose thread exited is taken over by a new thread that got the same
 * pthread_t: the old owner no longer uses it. */
static struct uring_ring *find_ring_locked(struct uring_io *u)
{
	for (struct uring_ring *r = u->rings; r; r = r->next)
		if (!r->broken && pthread_equal(r->owner, pthread_self()))
			return r;
	return NULL;
}

/* Creates a ring for the calling thread and adds it to u. Caller holds u->lock.
 * Returns 0 or a negative code. */
static int add_ring_locked(struct uring_io *u, struct uring_ring **out)
{
	struct uring_ring *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return ferry__fail(-ENOMEM, "uring: out of memory");
	rc = io_uring_queue_init(URING_DEPTH, &r->ring, 0);
	if (rc < 0) {
		free(r);
		return ferry__fail(rc, "uring: io_uring_queue_init: %s", strerror(-rc));
	}
	r->file_slots = io_uring_register_files_sparse(&r->ring, FILE_SLOTS) == 0;
	r->owner = pthread_self();
	r->next = u->rings;
	u->rings = r;
	*out = r;
	return 0;
}

/* Finds or creates the calling thread's ring. Returns 0 or a negative code. */
static int thread_ring(struct uring_io *u, struct uring_ring **out)
{
	int rc = 0;

	*out = cached_ring(u);
	if (*out)
		return 0;
	pthread_mutex_lock(&u->lock);
	*out = find_ring_locked(u);
	if (!*out)
		rc = add_ring_locked(u, out);
	pthread_mutex_unlock(&u->lock);
	if (rc == 0)
		cache_ring(u, *out);
	return rc;
}

/* Retires r for good: it may hold requests that were never submitted. It stays
 * in the list until fini. */
static void break_ring(struct uring_io *u, struct uring_ring *r)
{
	pthread_mutex_lock(&u->lock);
	r->broken = 1;
	pthread_mutex_unlock(&u->lock);
}

/* ---- one call's batch of requests --------------------------------------- */

/* While a request is in flight its result holds the bytes it got so far. */
struct uring_batch {
	struct io_uring *ring;
	const struct ferry__file *f;
	struct ferry__io_req *reqs;
	unsigned n;
	unsigned next;      /* the first request not yet queued */
	unsigned queued;    /* prepared, not yet taken by the kernel */
	unsigned inflight;  /* taken by the kernel, not yet completed */
	int error;          /* the first request error */
};

/* Prepares the read of what request idx still lacks. Returns 0, or -EBUSY
 * when the submission queue is full (never, while queued + inflight <= depth). */
static int queue_read(struct uring_batch *b, unsigned idx)
{
	struct ferry__io_req *r = &b->reqs[idx];
	size_t done = (size_t)r->result;
	size_t left = r->len - done;
	struct io_uring_sqe *sqe = io_uring_get_sqe(b->ring);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, b->f->fd, (char *)r->dst + done,
			   left < URING_MAX_READ ? (unsigned)left : URING_MAX_READ,
			   r->offset + done);
	io_uring_sqe_set_data64(sqe, idx);
	b->queued++;
	return 0;
}

/* Queues requests not yet started while the ring has room. Returns 0 or a
 * negative code. */
static int queue_new(struct uring_batch *b)
{
	while (b->next < b->n && b->queued + b->inflight < URING_DEPTH) {
		unsigned idx = b->next++;
		if (b->reqs[idx].len == 0)
			continue;
		int rc = queue_read(b, idx);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Hands the queued reads to the kernel. Returns 0 (some may still be queued
 * when the kernel is busy and reads are in flight), or a negative code. */
static int submit_queued(struct uring_batch *b)
{
	while (b->queued) {
		int rc = io_uring_submit(b->ring);
		if (rc == -EINTR)
			continue;
		if (rc > 0) {
			b->queued -= (unsigned)rc;
			b->inflight += (unsigned)rc;
			continue;
		}
		if (b->inflight && (rc == 0 || rc == -EAGAIN || rc == -EBUSY))
			return 0; /* reap completions first */
		return rc < 0 ? rc : -EAGAIN;
	}
	return 0;
}

/* Accounts for one completion of request idx: done, failed, or queued again
 * for what it still lacks. Returns 0 or a negative code. */
static int complete_read(struct uring_batch *b, unsigned idx, int res)
{
	struct ferry__io_req *r = &b->reqs[idx];
	size_t done = (size_t)r->result;

	if (res == -EINTR || res == -EAGAIN)
		return queue_read(b, idx);
	if (res < 0) {
		r->result = res;
		if (!b->error)
			b->error = ferry__io_read_failed(b->f, r->offset + done, res);
		return 0;
	}
	done += (size_t)res;
	r->result = (ssize_t)done;
	if (res == 0 || done == r->len || ferry__io_direct_eof(b->f, done))
		return 0;
	return queue_read(b, idx);
}

/* Waits for at least one completion and handles all that are ready. Returns 0
 * or a negative code. */
static int reap(struct uring_batch *b)
{
	struct io_uring_cqe *cqe;
	int rc;

	do
		rc = io_uring_wait_cqe(b->ring, &cqe);
	while (rc == -EINTR);
	while (rc == 0) {
		unsigned idx = (unsigned)io_uring_cqe_get_data64(cqe);
		int res = cqe->res;
		io_uring_cqe_seen(b->ring, cqe);
		b->inflight--;
		rc = complete_read(b, idx, res);
		if (rc < 0)
			return rc;
		rc = io_uring_peek_cqe(b->ring, &cqe);
	}
	return rc == -EAGAIN ? 0 : rc;
}

/* After a ring-level error: waits for the reads still in flight, since they
 * write into the caller's buffers. */
static void drain(struct uring_batch *b)
{
	struct io_uring_cqe *cqe;

	while (b->inflight) {
		int rc = io_uring_wait_cqe(b->ring, &cqe);
		if (rc == -EINTR)
			continue;
		if (rc < 0)
			return;
		io_uring_cqe_seen(b->ring, cqe);
		b->inflight--;
	}
}

/* Runs the batch to the end. Returns 0 when every request ran (b->error holds
 * the first request error), or a ring-level error after draining. */
static int run_batch(struct uring_batch *b)
{
	int rc = 0;

	while (rc == 0 && (b->next < b->n || b->queued || b->inflight)) {
		rc = queue_new(b);
		if (rc == 0)
			rc = submit_queued(b);
		if (rc == 0 && b->inflight)
			rc = reap(b);
	}
	if (rc < 0)
		drain(b);
	return rc;
}

/* Reads every request with all of them in flight (up to the queue depth).
 * Returns 0, the first request error, or a ring-level error. */
static int uring_read(struct ferry__io *io, struct ferry__file *f, struct ferry__io_req *reqs,
		      unsigned n)
{
	struct uring_io *u = to_uring(io);
	struct uring_batch b = { .f = f, .reqs = reqs, .n = n };
	struct uring_ring *r;
	int rc = ferry__io_check_requests(f, reqs, n, 1);

	if (rc < 0)
		return rc;
	rc = thread_ring(u, &r);
	if (rc < 0)
		return rc;
	b.ring = &r->ring;
	rc = run_batch(&b);
	if (rc < 0) {
		break_ring(u, r);
		return ferry__fail(rc, "%s: io_uring failed: %s", f->path, strerror(-rc));
	}
	return b.error;
}

/* ---- small files whole, in batches (read_files) ------------------------ */

/* Tags of the four requests of file i: open, read, statx, close. */
enum { OP_OPEN, OP_READ, OP_STATX, OP_CLOSE };

static struct io_uring_sqe *next_sqe(struct io_uring *ring, unsigned i, unsigned op)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_sqe_set_data64(sqe, (uint64_t)i << 2 | op);
	return sqe;
}

/*
 * Queues file f (the i-th) through fixed slot: open (non-blocking, so that a
 * FIFO cannot hold the ring and a read of pages not in the cache says -EAGAIN
 * instead of waiting), read, statx of the path, close. Hard links run each
 * request after the last whatever its result.
 */
static void queue_file_read(struct io_uring *ring, struct ferry__file_read *f, unsigned i,
			    unsigned slot, struct statx *sx)
{
	struct io_uring_sqe *sqe = next_sqe(ring, i, OP_OPEN);
	io_uring_prep_openat_direct(sqe, AT_FDCWD, f->path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0,
				    slot);
	sqe->flags |= IOSQE_IO_HARDLINK;
	sqe = next_sqe(ring, i, OP_READ);
	io_uring_prep_readv(sqe, (int)slot, f->dst, f->ndst, f->offset);
	sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;
	sqe = next_sqe(ring, i, OP_STATX);
	io_uring_prep_statx(sqe, AT_FDCWD, f->path, 0, STATX_BASIC_STATS, sx);
	sqe->flags |= IOSQE_IO_HARDLINK;
	sqe = next_sqe(ring, i, OP_CLOSE);
	io_uring_prep_close_direct(sqe, slot);
}

/* What the statx of a path says, as an identity; -EINVAL when it is no regular file. */
static int identity_of(const struct statx *sx, struct ferry__file_id *id)
{
	if (!S_ISREG(sx->stx_mode))
		return -EINVAL;
	*id = (struct ferry__file_id){
		.dev = makedev(sx->stx_dev_major, sx->stx_dev_minor), .ino = sx->stx_ino,
		.size = sx->stx_size,
		.mtime_ns = (int64_t)sx->stx_mtime.tv_sec * 1000000000 + sx->stx_mtime.tv_nsec,
		.ctime_ns = (int64_t)sx->stx_ctime.tv_sec * 1000000000 + sx->stx_ctime.tv_nsec,
		.nlink = sx->stx_nlink };
	return 0;
}

/* Hands every queued request to the kernel. Returns 0 or a negative code. */
static int submit_all(struct io_uring *ring, unsigned n)
{
	for (unsigned done = 0; done < n;) {
		int rc = io_uring_submit(ring);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN)
			return rc;
		done += rc > 0 ? (unsigned)rc : 0;
	}
	return 0;
}

/* Files [0, n) (n <= FILE_SLOTS): one submit, and every completion waited
 * for, since the reads write into the caller's buffers. */
static int run_file_batch(struct io_uring *ring, struct ferry__file_read *files, unsigned n)
{
	struct statx sx[FILE_SLOTS];
	int open_rc[FILE_SLOTS], statx_rc[FILE_SLOTS];
	unsigned left = 4 * n;
	for (unsigned i = 0; i < n; i++)
		queue_file_read(ring, &files[i], i, i, &sx[i]);
	int rc = submit_all(ring, left);
	if (rc < 0)
		return rc; /* a ring-level failure: the ring is given up */
	while (left) {
		struct io_uring_cqe *cqe;
		do
			rc = io_uring_wait_cqe(ring, &cqe);
		while (rc == -EINTR || rc == -EAGAIN);
		if (rc < 0)
			return rc;
		uint64_t tag = io_uring_cqe_get_data64(cqe);
		unsigned i = (unsigned)(tag >> 2);
		int res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		left--;
		if ((tag & 3) == OP_OPEN)
			open_rc[i] = res;
		else if ((tag & 3) == OP_READ)
			files[i].result = res;
		else if ((tag & 3) == OP_STATX)
			statx_rc[i] = res;
	}
	for (unsigned i = 0; i < n; i++) {
		int err = open_rc[i] < 0 ? open_rc[i] : statx_rc[i] < 0 ? statx_rc[i]
						      : identity_of(&sx[i], &files[i].id);
		if (err < 0 || files[i].result >= 0)
			files[i].result = err < 0 ? err : files[i].result;
	}
	return 0;
}

static int uring_read_files(struct ferry__io *io, struct ferry__file_read *files, unsigned n)
{
	struct uring_io *u = to_uring(io);
	struct uring_ring *r;
	int rc = thread_ring(u, &r);
	if (rc < 0 || !r->file_slots)
		return rc < 0 ? rc : -EOPNOTSUPP;
	for (unsigned done = 0; rc == 0 && done < n; done += FILE_SLOTS)
		rc = run_file_batch(&r->ring, files + done, n - done < FILE_SLOTS ? n - done : FILE_SLOTS);
	if (rc < 0) {
		break_ring(u, r);
		return ferry__fail(rc, "uring: reading small files: %s", strerror(-rc));
	}
	return 0;
}

const struct ferry__io_ops ferry__io_uring = {
	.name = "uring",
	.placement = FERRY__STAGE_PINNED,
	.depth = URING_DEPTH,
	.init = uring_init,
	.fini = uring_fini,
	.describe = uring_describe,
	.open = uring_open,
	.close = uring_close,
	.read = uring_read,
	.read_files = uring_read_files,
};

#endif /* FERRY_HAVE_LIBURING */
