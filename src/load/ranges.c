/*
 * File loading: plan aligned chunk reads for byte ranges, run them on IO
 * threads through the staging engine, and wait for their copies. Bytes that
 * already sit in host memory (opts->src) take the same plan, each read a
 * copy into its staging buffer instead.
 */
#include "load/load.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "io/io.h"

/* Reads a thread submits at once, where the backend keeps several in flight:
 * more buffers held per thread would only starve the other threads. */
#define MAX_READS_PER_CALL 4

struct planned_read {
	uint64_t offset;   /* aligned file offset */
	size_t len;        /* bytes to request: aligned, at most one chunk */
	size_t need;       /* bytes the copies need: less means the file is short */
	unsigned first, n; /* its copies */
};

struct plan {
	struct planned_read *reads;
	struct ferry__copy *copies;
	unsigned nreads, ncopies, reads_cap, copies_cap;
};

struct load_job {
	const struct ferry__loader *ld;
	struct ferry__file *f;
	struct plan *plan;
	unsigned next;     /* next read to take (atomic) */
	int error;         /* first error (under lock) */
	char *message;     /* its message, from the thread that hit it (malloc'd) */
	pthread_mutex_t lock;
	struct ferry__ticket *ticket;   /* the caller's, or the load's own */
	const struct ferry__load_opts *opts;
	uint64_t bytes_read, reads;
	uint32_t *crcs;    /* opts->crc: each read's CRC-32 of its copies' bytes */
};

static uint64_t align_down(uint64_t v)
{
	return v & ~(uint64_t)(FERRY__IO_ALIGN - 1);
}

static uint64_t align_up(uint64_t v)
{
	return align_down(v + FERRY__IO_ALIGN - 1);
}

static int grow_array(void **items, unsigned *cap, unsigned want, size_t size)
{
	if (want <= *cap)
		return 0;
	unsigned n = *cap ? *cap * 2 : 16;
	while (n < want)
		n *= 2;
	void *grown = realloc(*items, (size_t)n * size);
	if (!grown)
		return ferry__fail(-ENOMEM, "out of memory planning reads");
	*items = grown;
	*cap = n;
	return 0;
}

static int start_read(struct plan *p, uint64_t pos)
{
	int rc = grow_array((void **)&p->reads, &p->reads_cap, p->nreads + 1, sizeof(*p->reads));
	if (rc == 0)
		p->reads[p->nreads++] = (struct planned_read){ .offset = align_down(pos),
							       .first = p->ncopies };
	return rc;
}

static int add_copy(struct plan *p, char *dst, uint64_t pos, size_t len, const char *path)
{
	int rc = grow_array((void **)&p->copies, &p->copies_cap, p->ncopies + 1, sizeof(*p->copies));
	if (rc < 0)
		return rc;
	struct planned_read *r = &p->reads[p->nreads - 1];
	size_t at = (size_t)(pos - r->offset);
	p->copies[p->ncopies++] = (struct ferry__copy){ .dst = dst, .src_offset = at, .len = len,
							.tag = path, .tag_offset = pos };
	r->n++;
	if (at + len > r->need)
		r->need = at + len;
	r->len = (size_t)align_up(r->need);
	return 0;
}

/* Splits ranges into chunk-sized aligned reads; ranges within one chunk share a read. */
static int make_plan(const struct ferry__range *ranges, unsigned n, size_t chunk,
		     const char *path, struct plan *p)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t pos = ranges[i].offset, end = pos + ranges[i].len;
		while (pos < end) {
			struct planned_read *cur = p->nreads ? &p->reads[p->nreads - 1] : NULL;
			if (!cur || pos < cur->offset || pos >= cur->offset + chunk) {
				int rc = start_read(p, pos);
				if (rc < 0)
					return rc;
				cur = &p->reads[p->nreads - 1];
			}
			uint64_t stop = end < cur->offset + chunk ? end : cur->offset + chunk;
			int rc = add_copy(p, ranges[i].dst + (pos - ranges[i].offset), pos,
					  (size_t)(stop - pos), path);
			if (rc < 0)
				return rc;
			pos = stop;
		}
	}
	return 0;
}

static void free_plan(struct plan *p)
{
	free(p->reads);
	free(p->copies);
}

static void job_fail(struct load_job *job, int rc)
{
	pthread_mutex_lock(&job->lock);
	if (!job->error) {
		job->error = rc;
		job->message = ferry__error_copy();
	}
	pthread_mutex_unlock(&job->lock);
}

static int job_failed(struct load_job *job)
{
	pthread_mutex_lock(&job->lock);
	int rc = job->error;
	pthread_mutex_unlock(&job->lock);
	return rc;
}

/* Takes up to max reads; returns how many, and the first index in *first. */
static unsigned take_reads(struct load_job *job, unsigned max, unsigned *first)
{
	unsigned at = __atomic_fetch_add(&job->next, max, __ATOMIC_RELAXED);
	if (at >= job->plan->nreads)
		return 0;
	*first = at;
	return at + max <= job->plan->nreads ? max : job->plan->nreads - at;
}

static int check_read(struct load_job *job, const struct planned_read *r, ssize_t got)
{
	if (got < 0)
		return (int)got;
	if ((size_t)got < r->need)
		return ferry__io_truncated(job->f, r->offset + (uint64_t)got, r->offset + r->need);
	return 0;
}

/*
 * Leases up to n buffers: the first may wait, the others are taken only when
 * free now. A thread never waits while it holds a buffer, so threads that
 * each hold some buffers can never wait for each other's (the pool may be
 * smaller than threads x reads per call). Returns 0 with *leased >= 1, or a
 * negative code.
 */
static int lease_buffers(struct ferry__staging *stg, struct ferry__buf **bufs, unsigned n,
			 unsigned *leased)
{
	int rc = ferry__staging_lease(stg, &bufs[0]);
	*leased = rc == 0;
	while (rc == 0 && *leased < n && ferry__staging_try_lease(stg, &bufs[*leased]) == 0)
		(*leased)++;
	return rc;
}

/* Fails when a read of offset 0 holds other header bytes than the header the
 * load was planned from (host staging only: device staging is not readable
 * here, and the file's identity check covers it). */
static int check_head(struct load_job *job, const struct planned_read *r, const void *data)
{
	const struct ferry__load_opts *o = job->opts;
	if (r->offset != 0 || !o->head || job->ld->io_ops->placement != FERRY__STAGE_PINNED)
		return 0;
	if (!memcmp(data, o->head, o->head_len))
		return 0;
	return ferry__fail(-FERRY_ECHANGED, "%s: changed while being read: its header is not the "
			   "one the load was planned from", job->f->path);
}

/* The CRC-32 of the bytes read r's copies take out of data, in order. */
static void crc_read(struct load_job *job, const struct planned_read *r, const char *data)
{
	uint32_t crc = 0;
	for (unsigned i = 0; i < r->n; i++) {
		const struct ferry__copy *c = &job->plan->copies[r->first + i];
		crc = ferry__crc32(crc, data + c->src_offset, c->len);
	}
	job->crcs[r - job->plan->reads] = crc;
}

/* The CRC-32 of every copy's bytes, in plan order, from the reads' own. */
static uint32_t combine_crcs(const struct load_job *job)
{
	const struct plan *p = job->plan;
	uint32_t crc = 0;
	for (unsigned i = 0; i < p->nreads; i++) {
		uint64_t len = 0;
		for (unsigned k = 0; k < p->reads[i].n; k++)
			len += p->copies[p->reads[i].first + k].len;
		crc = ferry__crc32_combine(crc, job->crcs[i], len);
	}
	return crc;
}

static void count_reads(struct load_job *job, unsigned first, unsigned n)
{
	__atomic_fetch_add(&job->reads, n, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < n; i++)
		__atomic_fetch_add(&job->bytes_read, job->plan->reads[first + i].len, __ATOMIC_RELAXED);
}

/* Reads r[0..n) into bufs in one call and queues their copies; every buffer
 * is queued or given back. */
static int read_and_queue(struct load_job *job, const struct planned_read *r,
			  struct ferry__buf **bufs, unsigned n)
{
	struct ferry__staging *stg = job->ticket->stg;
	struct ferry__io_req reqs[MAX_READS_PER_CALL];
	unsigned handed = 0;
	for (unsigned i = 0; i < n; i++)
		reqs[i] = (struct ferry__io_req){ .dst = bufs[i]->data, .len = r[i].len,
						  .offset = r[i].offset };
	int rc = job->ld->io_ops->read(job->ld->io, job->f, reqs, n);
	count_reads(job, (unsigned)(r - job->plan->reads), n);
	while (rc == 0 && handed < n) {
		if ((rc = check_read(job, &r[handed], reqs[handed].result)) < 0 ||
		    (rc = check_head(job, &r[handed], bufs[handed]->data)) < 0)
			break;
		if (job->crcs) /* before the queue ends the lease */
			crc_read(job, &r[handed], bufs[handed]->data);
		rc = ferry__staging_queue(stg, bufs[handed], &job->plan->copies[r[handed].first],
					  r[handed].n, job->ticket);
		handed++; /* queued, or returned to the pool by a refused queue */
	}
	for (unsigned i = handed; i < n; i++)
		ferry__staging_give_back(stg, bufs[i]);
	return rc;
}

/* Copies read r's bytes out of host memory (opts->src) into data, each
 * copy's bytes where that copy takes them from. */
static void fill_from_memory(const struct load_job *job, const struct planned_read *r, char *data)
{
	const char *src = job->opts->src;
	for (unsigned i = 0; i < r->n; i++) {
		const struct ferry__copy *c = &job->plan->copies[r->first + i];
		memcpy(data + c->src_offset, src + r->offset + c->src_offset, c->len);
	}
}

/* Fills bufs from host memory and queues their copies; every buffer is
 * queued or given back. */
static int stage_and_queue(struct load_job *job, const struct planned_read *r,
			   struct ferry__buf **bufs, unsigned n)
{
	struct ferry__staging *stg = job->ticket->stg;
	int rc = 0;
	unsigned i;
	for (i = 0; rc == 0 && i < n; i++) {
		fill_from_memory(job, &r[i], bufs[i]->data);
		rc = ferry__staging_queue(stg, bufs[i], &job->plan->copies[r[i].first], r[i].n,
					  job->ticket);
	}
	for (; i < n; i++)
		ferry__staging_give_back(stg, bufs[i]);
	return rc;
}

/* Reads as many of the next up-to-max reads as it can lease buffers for (at
 * least one). Returns the number it ran, 0 when none is left, or a negative
 * code. */
static int run_some_reads(struct load_job *job, unsigned max)
{
	struct ferry__buf *bufs[MAX_READS_PER_CALL];
	unsigned leased, first;
	int rc = lease_buffers(job->ticket->stg, bufs, max, &leased);
	if (rc < 0)
		return rc;
	unsigned n = take_reads(job, leased, &first);
	for (unsigned i = n; i < leased; i++)
		ferry__staging_give_back(job->ticket->stg, bufs[i]);
	if (n == 0)
		return 0;
	if (job->opts->src)
		rc = stage_and_queue(job, &job->plan->reads[first], bufs, n);
	else
		rc = read_and_queue(job, &job->plan->reads[first], bufs, n);
	return rc < 0 ? rc : (int)n;
}

static void load_worker(void *arg, unsigned index)
{
	struct load_job *job = arg;
	unsigned depth = job->opts->src ? 1 : job->ld->io_ops->depth; /* a memcpy needs no batching */
	if (depth > MAX_READS_PER_CALL)
		depth = MAX_READS_PER_CALL;
	while (!job_failed(job) && __atomic_load_n(&job->next, __ATOMIC_RELAXED) < job->plan->nreads) {
		int rc = run_some_reads(job, depth ? depth : 1);
		if (rc < 0)
			job_fail(job, rc);
		if (rc <= 0)
			break;
	}
}

/* Returns once the copies are launched (async) or complete. After any error it
 * waits: no copy of a failed load may land in dst after we return. */
static int finish_copies(struct load_job *job, int async)
{
	struct ferry__staging *stg = job->ticket->stg;
	if (async && !job->error && ferry__staging_commit(stg, NULL) == 0)
		return 0;
	return ferry__staging_wait(stg, job->ticket);
}

/* Runs the plan's reads on up to parallel threads; then checks that the file
 * did not change under them (when they read it). Returns the first error, or 0. */
static int run_plan(struct load_job *job, unsigned parallel)
{
	if (parallel > job->plan->nreads)
		parallel = job->plan->nreads;
	ferry__pool_parallel(job->ld->pool, parallel ? parallel : 1, load_worker, job);
	if (!job->error && !job->opts->src) {
		int rc = ferry__io_check_unchanged(job->f);
		if (rc < 0)
			job_fail(job, rc);
	}
	return job->error;
}

int ferry__load_open(const struct ferry__loader *ld, const char *path, struct ferry__file **out)
{
	int flags = ld->direct == FERRY_DIRECT_ALWAYS ? FERRY__IO_DIRECT : 0;
	return ld->io_ops->open(ld->io, path, flags, out);
}

int ferry__load_read(const struct ferry__loader *ld, struct ferry__file *f,
		     struct ferry__io_req *reqs, unsigned n)
{
	const struct ferry__io_ops *deep = ld->files_ops;
	if (n >= FERRY__GATHER_MIN && deep && deep->depth > ld->io_ops->depth &&
	    deep->placement == ld->io_ops->placement)
		return deep->read(ld->files_io, f, reqs, n);
	return ld->io_ops->read(ld->io, f, reqs, n);
}

/* Buffered or direct for this load's span of f (AUTO decides here, before any
 * read of it runs), said in the trace; or memory, for bytes in host memory. */
static void choose_path(const struct ferry__loader *ld, struct ferry__file *f,
			const struct ferry__range *ranges, unsigned n, struct ferry__staging *stg,
			const void *src)
{
	uint64_t start = ranges[0].offset, end = ranges[n - 1].offset + ranges[n - 1].len;
	if (!src)
		ferry__load_choose(ld, f, start, end - start);
	ferry__staging_trace_file(stg, src ? "memory" : f->direct ? "direct" : "buffered",
				  end - start, f->path, start);
}

/* ---- zero copy: straight from a registered mapping (mapped.c) ---- */

/* The copies of ranges out of f's mapping, one a range; -FERRY_ETRUNCATED
 * (as a read would say) when a range runs past the file. */
static int mapped_copies(const struct ferry__file *f, const struct ferry__range *ranges,
			 unsigned n, struct ferry__copy *copies)
{
	for (unsigned i = 0; i < n; i++) {
		if (ranges[i].offset > f->size || ranges[i].len > f->size - ranges[i].offset)
			return ferry__io_truncated(f, f->size, ranges[i].offset + ranges[i].len);
		copies[i] = (struct ferry__copy){ .dst = ranges[i].dst,
						  .src_offset = (size_t)ranges[i].offset,
						  .len = (size_t)ranges[i].len, .tag = f->path,
						  .tag_offset = ranges[i].offset };
	}
	return 0;
}

int ferry__load_copy_failed(const char *path, int rc)
{
	if (rc == -FERRY_ECHANGED)
		return ferry__fail(rc, "%s: changed while being read: a page of its mapping is "
				   "gone (the file shrank)", path);
	return ferry__fail(rc, "%s: copying to the device failed: %s", path, ferry_strerror(rc));
}

/* Queues the copies out of e on the ticket's lane, then checks, as a read
 * does, that the file did not change under them. */
static int queue_mapped(const struct ferry__loader *ld, struct ferry__file *f,
			struct ferry__mapping *e, const struct ferry__copy *copies, unsigned n,
			struct ferry__ticket *ticket)
{
	uint64_t seq = 0;
	int rc = ferry__staging_queue_mapped(ticket->stg, ferry__mapping_addr(e), copies, n,
					     ticket, &seq);
	ferry__mapped_release(ld->mapped, e, ticket->stg, seq);
	if (rc < 0)
		return ferry__load_copy_failed(f->path, rc);
	return ferry__io_check_unchanged(f);
}

/* Loads the ranges from e: no read, no staging buffer, one copy a range. */
static int load_mapped(const struct ferry__loader *ld, struct ferry__file *f,
		       struct ferry__mapping *e, const struct ferry__range *ranges, unsigned n,
		       const struct ferry__load_opts *opts, struct ferry__ticket *ticket)
{
	uint64_t start = ranges[0].offset, end = ranges[n - 1].offset + ranges[n - 1].len;
	ferry__staging_trace_file(ticket->stg, "mapped", end - start, f->path, start);
	struct ferry__copy *copies = calloc(n, sizeof(*copies));
	int rc = copies ? mapped_copies(f, ranges, n, copies)
			: ferry__fail(-ENOMEM, "%s: out of memory planning copies", f->path);
	if (rc == 0)
		rc = queue_mapped(ld, f, e, copies, n, ticket);
	else
		ferry__mapped_release(ld->mapped, e, ticket->stg, 0);
	free(copies);
	f->mapped = 1;
	if (opts->async && rc == 0)
		return 0;
	int wait_rc = ferry__staging_wait(ticket->stg, ticket);
	if (rc == 0 && wait_rc < 0)
		rc = ferry__load_copy_failed(f->path, wait_rc);
	return rc;
}

/* The mapping to load ranges from, or NULL: the read path. A CRC asked for
 * needs the bytes in host staging, so it takes the read path; bytes from
 * host memory are not the file's. */
static struct ferry__mapping *pick_mapping(const struct ferry__loader *ld, struct ferry__file *f,
					   unsigned n, const struct ferry__load_opts *opts)
{
	f->mapped = 0;
	return n && !opts->crc && !opts->src ? ferry__mapped_find(ld->mapped, f) : NULL;
}

/* Ranges from host memory where staging is device memory, which the CPU
 * cannot write: each copied synchronously. */
static int copy_from_memory_sync(const struct ferry__loader *ld, struct ferry__file *f,
				 const struct ferry__range *ranges, unsigned n, const char *src)
{
	struct ferry__device *dev = ld->dev;
	for (unsigned i = 0; i < n; i++) {
		int rc = ranges[i].len ? dev->ops->copy_sync(dev, ranges[i].dst, src + ranges[i].offset,
							     ranges[i].len, FERRY__H2D) : 0;
		if (rc < 0)
			return ferry__load_copy_failed(f->path, rc);
	}
	return 0;
}

void ferry__load_close(const struct ferry__loader *ld, struct ferry__file *f)
{
	if (f)
		ld->io_ops->close(ld->io, f);
}

/* Runs the plan's reads and waits for (or, async, launches) their copies.
 * Returns 0 or the first error, with its message. */
static int run_job(const struct ferry__loader *ld, struct ferry__file *f, struct plan *plan,
		   const struct ferry__load_opts *opts, struct ferry__ticket *ticket)
{
	struct load_job job = { .ld = ld, .f = f, .plan = plan, .ticket = ticket, .opts = opts };
	int rc = 0;
	if (opts->crc && !(job.crcs = calloc(plan->nreads, sizeof(*job.crcs))))
		return ferry__fail(-ENOMEM, "%s: out of memory planning reads", f->path);
	pthread_mutex_init(&job.lock, NULL);
	run_plan(&job, opts->parallel);
	if (job.crcs && !job.error)
		*opts->crc = combine_crcs(&job);
	int wait_rc = finish_copies(&job, opts->async != NULL);
	if (job.error)
		rc = job.message ? ferry__fail(job.error, "%s", job.message) : job.error;
	else if ((rc = wait_rc) < 0) /* the copy's error may have been seen on another thread */
		ferry__load_copy_failed(f->path, rc);
	if (opts->stats) {
		opts->stats->bytes_read += job.bytes_read;
		opts->stats->reads += job.reads;
	}
	pthread_mutex_destroy(&job.lock);
	free(job.message);
	free(job.crcs);
	return rc;
}

/* The staging path: plans the ranges' chunk reads, runs them. */
static int load_staged(const struct ferry__loader *ld, struct ferry__file *f,
		       const struct ferry__range *ranges, unsigned n,
		       const struct ferry__load_opts *opts, struct ferry__ticket *ticket)
{
	struct plan plan = { 0 };
	if (n)
		choose_path(ld, f, ranges, n, ticket->stg, opts->src);
	int rc = make_plan(ranges, n, ferry__staging_chunk_size(ticket->stg), f->path, &plan);
	if (rc == 0 && plan.nreads) {
		rc = run_job(ld, f, &plan, opts, ticket);
	} else if (rc == 0) { /* nothing to read: the file is still checked */
		if (opts->crc)
			*opts->crc = 0;
		if (!opts->src)
			rc = ferry__io_check_unchanged(f);
	}
	free_plan(&plan);
	return rc;
}

int ferry__load_ranges(const struct ferry__loader *ld, struct ferry__file *f,
		       const struct ferry__range *ranges, unsigned n,
		       const struct ferry__load_opts *opts)
{
	struct ferry__ticket own = { 0 };
	struct ferry__ticket *ticket = opts->async ? opts->async : &own;
	if (!ticket->stg) /* a load continuing on an async ticket stays on its lane */
		ticket->stg = ferry__lanes_pick(ld->lanes);
	if (opts->src && ld->io_ops->placement != FERRY__STAGE_PINNED)
		return ferry__fail_subject(copy_from_memory_sync(ld, f, ranges, n, opts->src),
					   f->path);
	struct ferry__mapping *e = pick_mapping(ld, f, n, opts);
	if (e)
		return ferry__fail_subject(load_mapped(ld, f, e, ranges, n, opts, ticket), f->path);
	int rc = load_staged(ld, f, ranges, n, opts, ticket);
	if (rc == 0 && !opts->src)
		ferry__mapped_offer(ld->mapped, f);
	return ferry__fail_subject(rc, f->path);
}

int ferry__load_from_memory(const struct ferry__loader *ld, struct ferry__file *f,
			    const void *src, uint64_t len, void *dst,
			    const struct ferry__load_opts *opts)
{
	struct ferry__load_opts o = { .parallel = opts->parallel, .async = opts->async,
				      .src = src };
	struct ferry__range range = { .offset = 0, .len = len, .dst = dst };
	return ferry__load_ranges(ld, f, &range, 1, &o);
}
