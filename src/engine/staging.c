/*
 * The staging engine. See engine.h for the contract and docs/design.md for the
 * failure it rules out.
 *
 * State, all under one mutex:
 *   free list      buffers nobody uses
 *   leased         buffers a caller is filling
 *   pending batch  buffers whose copies are queued but not yet issued
 *   FIFO           launched batches, oldest first, each with its own event
 *
 * A buffer leaves the FIFO only through reclaim_completed(), which queries the
 * oldest batch's event under the lock and stops at the first incomplete one. A
 * thread that waits for a batch holds a reference (waiters) so that the batch's
 * event cannot go back to the pool, and be re-recorded, under its wait.
 */
#include "engine/engine.h"

#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#define MAX_BLOCKS 64
#define FIRST_GROWTH 4

enum buf_state { BUF_FREE, BUF_LEASED, BUF_PENDING, BUF_IN_FLIGHT, BUF_LOST };

struct staged_copy {
	struct ferry__copy copy;
	struct ferry__buf *buf;       /* NULL: a copy out of a file mapping */
	struct ferry__ticket *ticket;
	const char *src;              /* what src_offset counts from: buf's data, or the mapping */
};

/* A copy of a copy's tag, owned by its batch: the trace prints the tag when
 * the copy is issued, which can be after the caller closed the file whose
 * path it was (a batch left pending, launched later). */
struct trace_tag {
	struct trace_tag *next;
	char text[];
};

struct ferry__batch {
	uint64_t seq;
	struct ferry__event *event;
	struct ferry__buf *bufs; /* linked through buf->next */
	unsigned nbufs;
	struct staged_copy *copies;
	unsigned ncopies, cap;
	unsigned waiters;  /* threads waiting on event with the lock released */
	int reclaimed;     /* buffers returned; the last waiter recycles it */
	struct trace_tag *tags; /* with a trace: its copies' tags */
	struct ferry__batch *next;
};

struct block {
	void *base;
	size_t len;
};

struct ferry__staging {
	struct ferry__device *dev;
	struct ferry__stream *stream;
	size_t chunk;
	unsigned max_buffers, initial_buffers, launch_after;
	enum ferry__placement placement;
	struct ferry__staging_hooks hooks;
	struct ferry__block_hooks blocks_hooks;
	int flawed_reclaim;
	struct ferry__trace *trace;
	unsigned lane;

	pthread_mutex_t lock;
	pthread_cond_t changed; /* a buffer came back, or growth finished */
	struct ferry__buf *bufs; /* max_buffers entries, ids are indices */
	unsigned total, nfree, nleased, npending, nin_flight;
	struct ferry__buf *free_list;
	struct block blocks[MAX_BLOCKS];
	unsigned nblocks;
	int growing;
	struct ferry__batch *pending;
	struct ferry__batch *fifo_head, *fifo_tail;
	struct ferry__batch *spare_batches;
	struct ferry__event **spare_events;
	unsigned nspare_events, events_cap;
	uint64_t next_seq;       /* seq of the next batch created (the first is 1) */
	/* Every batch up to this one is reclaimed. Written under the lock, after
	 * the batch's tickets got their errors; ferry__staging_settled reads it
	 * without the lock. */
	_Atomic uint64_t completed_seq;
	/* Every batch up to this one has left pending (launched, or failed at
	 * launch): ferry__staging_launch_for skips the lock for such a ticket. */
	_Atomic uint64_t launched_seq;
	/* ferry__staging_hold_launches: early launches wait. Read under the lock,
	 * written without it (the hold's end then takes the lock to launch). */
	_Atomic int launches_held;
	int fatal;               /* the device can no longer confirm completion */
	int untracked_error;     /* a failed copy queued without a ticket */
	struct ferry__staging_stats counters;
};

static void trace_buf(struct ferry__staging *stg, const char *event, struct ferry__buf *b,
		      uint64_t seq)
{
	ferry__trace(stg->trace, stg->lane, event, b ? (int)b->id : -1, seq, NULL, 0, NULL, 0);
}

void ferry__staging_trace_file(struct ferry__staging *stg, const char *event, uint64_t bytes,
			       const char *file, uint64_t offset)
{
	ferry__trace(stg->trace, stg->lane, event, -1, 0, NULL, bytes, file, offset);
}

/* Calls the test hook with the lock released; the lock is held on entry and return. */
static void schedule_point(struct ferry__staging *stg, enum ferry__sched_point p, uint64_t seq)
{
	if (!stg->hooks.point)
		return;
	pthread_mutex_unlock(&stg->lock);
	stg->hooks.point(stg->hooks.arg, p, seq);
	pthread_mutex_lock(&stg->lock);
}

static void push_free(struct ferry__staging *stg, struct ferry__buf *b)
{
	b->state = BUF_FREE;
	b->batch = NULL;
	b->next = stg->free_list;
	stg->free_list = b;
	stg->nfree++;
}

/* Events come from a pool: an event goes back only when its batch is recycled. */
static int take_event(struct ferry__staging *stg, struct ferry__event **out)
{
	if (stg->nspare_events) {
		*out = stg->spare_events[--stg->nspare_events];
		return 0;
	}
	return stg->dev->ops->event_create(stg->dev, out);
}

static void put_event(struct ferry__staging *stg, struct ferry__event *ev)
{
	if (stg->nspare_events == stg->events_cap) {
		unsigned cap = stg->events_cap ? 2 * stg->events_cap : 8;
		void *grown = realloc(stg->spare_events, cap * sizeof(*stg->spare_events));
		if (!grown) {
			stg->dev->ops->event_destroy(stg->dev, ev);
			return;
		}
		stg->spare_events = grown;
		stg->events_cap = cap;
	}
	stg->spare_events[stg->nspare_events++] = ev;
}

static struct ferry__batch *new_batch(struct ferry__staging *stg)
{
	struct ferry__batch *b = stg->spare_batches;
	if (b)
		stg->spare_batches = b->next;
	else if (!(b = calloc(1, sizeof(*b))))
		return NULL;
	struct staged_copy *copies = b->copies;
	unsigned cap = b->cap;
	*b = (struct ferry__batch){ .seq = stg->next_seq++, .copies = copies, .cap = cap };
	return b;
}

static void free_tags(struct ferry__batch *b)
{
	while (b->tags) {
		struct trace_tag *t = b->tags;
		b->tags = t->next;
		free(t);
	}
}

/* The tag the trace prints when a copy of b is issued: b's own copy of tag,
 * or NULL without a trace (nothing else reads it) or memory for it. */
static const char *keep_tag(struct ferry__staging *stg, struct ferry__batch *b, const char *tag)
{
	if (!stg->trace || !tag)
		return NULL;
	if (b->tags && strcmp(b->tags->text, tag) == 0)
		return b->tags->text; /* a file's copies come one after another */
	size_t n = strlen(tag) + 1;
	struct trace_tag *t = malloc(sizeof(*t) + n);
	if (!t)
		return NULL;
	memcpy(t->text, tag, n);
	t->next = b->tags;
	b->tags = t;
	return t->text;
}

/* Returns a batch struct (and its event) for reuse. Its buffers are gone already. */
static void recycle_batch(struct ferry__staging *stg, struct ferry__batch *b)
{
	free_tags(b);
	if (b->event)
		put_event(stg, b->event);
	b->event = NULL;
	b->next = stg->spare_batches;
	stg->spare_batches = b;
}

/* Hands err to every copy of b: to its ticket, or to the next wait(NULL). */
static void mark_tickets(struct ferry__staging *stg, struct ferry__batch *b, int err)
{
	for (unsigned i = 0; i < b->ncopies; i++) {
		struct ferry__ticket *t = b->copies[i].ticket;
		if (!t)
			stg->untracked_error = err;
		else if (!t->error)
			t->error = err;
	}
}

/* Moves a batch's buffers to the free list. */
static void free_batch_buffers(struct ferry__staging *stg, struct ferry__batch *b,
			       unsigned *counter)
{
	struct ferry__buf *buf = b->bufs;
	while (buf) {
		struct ferry__buf *next = buf->next;
		trace_buf(stg, "reclaim", buf, b->seq);
		push_free(stg, buf);
		(*counter)--;
		buf = next;
	}
	b->bufs = NULL;
	b->ncopies = 0;
}

/* How far batches are reclaimed (lock held: the lock orders it). */
static uint64_t completed(struct ferry__staging *stg)
{
	return atomic_load_explicit(&stg->completed_seq, memory_order_relaxed);
}

/* Every batch up to seq is reclaimed (lock held). */
static void set_completed(struct ferry__staging *stg, uint64_t seq)
{
	atomic_store_explicit(&stg->completed_seq, seq, memory_order_release);
}

/* Pops the FIFO head, frees its buffers, and recycles it unless someone waits on it. */
static void retire_head(struct ferry__staging *stg)
{
	struct ferry__batch *b = stg->fifo_head;
	stg->fifo_head = b->next;
	if (!stg->fifo_head)
		stg->fifo_tail = NULL;
	free_batch_buffers(stg, b, &stg->nin_flight);
	set_completed(stg, b->seq);
	stg->counters.reclaimed++;
	b->reclaimed = 1;
	if (!b->waiters)
		recycle_batch(stg, b);
	pthread_cond_broadcast(&stg->changed);
}

/* Reclaims completed batches, oldest first, by querying their events. Stops at
 * the first that is incomplete. Returns 0, or the error of a failed query (the
 * batch then stays in flight, and its tickets carry the error). */
static int reclaim_completed(struct ferry__staging *stg)
{
	while (stg->fifo_head) {
		int rc = stg->dev->ops->event_query(stg->dev, stg->fifo_head->event);
		if (rc == -EAGAIN)
			return 0;
		if (rc < 0) {
			mark_tickets(stg, stg->fifo_head, rc);
			return rc;
		}
		retire_head(stg);
	}
	return 0;
}

/* The flawed rule, for the seed test only: free every launched buffer. */
static void reclaim_everything_flawed(struct ferry__staging *stg)
{
	while (stg->fifo_head)
		retire_head(stg);
}

/* Waits for the whole copy stream; everything launched before is then complete
 * and retired without a query. If even that fails, buffers are never reused. */
static int drain_by_stream_sync(struct ferry__staging *stg)
{
	int rc = stg->dev->ops->stream_sync(stg->dev, stg->stream);
	if (rc < 0) {
		stg->fatal = rc;
		return rc;
	}
	while (stg->fifo_head)
		retire_head(stg);
	return 0;
}

/* A batch launched without an event of its own (none could be had, or a copy
 * failed to issue, so some copies may be queued): free it once the whole
 * stream is idle. */
static void finish_untracked_batch(struct ferry__staging *stg, struct ferry__batch *b)
{
	if (drain_by_stream_sync(stg) < 0) {
		mark_tickets(stg, b, stg->fatal);
		for (struct ferry__buf *buf = b->bufs; buf; buf = buf->next)
			buf->state = BUF_LOST;
		stg->npending -= b->nbufs;
		b->bufs = NULL;
		recycle_batch(stg, b);
		return;
	}
	free_batch_buffers(stg, b, &stg->npending);
	set_completed(stg, b->seq);
	recycle_batch(stg, b);
	pthread_cond_broadcast(&stg->changed);
}

/* A later stream sync that succeeds proves every copy issued so far has
 * finished: the engine leaves the fatal state and lost buffers are free again.
 * Returns 0, or the fatal error while the device still cannot confirm. */
static int recover_from_fatal(struct ferry__staging *stg)
{
	if (!stg->fatal)
		return 0;
	if (stg->dev->ops->stream_sync(stg->dev, stg->stream) < 0)
		return stg->fatal;
	stg->fatal = 0;
	while (stg->fifo_head)
		retire_head(stg);
	for (unsigned i = 0; i < stg->total; i++)
		if (stg->bufs[i].state == BUF_LOST)
			push_free(stg, &stg->bufs[i]);
	pthread_cond_broadcast(&stg->changed);
	return 0;
}

#define ISSUE_MAX 64 /* copies one copy_batch_async call of issue_copies takes */

static enum ferry__copy_kind copy_kind(const struct ferry__staging *stg, const struct staged_copy *c)
{
	if (!c->buf)
		return FERRY__H2D_MAPPED;
	return stg->placement == FERRY__STAGE_DEVICE ? FERRY__D2D : FERRY__H2D;
}

/* Copies [i, i + n) of b, all of one kind, in one device call where the
 * device has one. */
static int issue_run(struct ferry__staging *stg, struct ferry__batch *b, unsigned i, unsigned n)
{
	const struct ferry__device_ops *ops = stg->dev->ops;
	enum ferry__copy_kind kind = copy_kind(stg, &b->copies[i]);
	struct ferry__copy_op run[ISSUE_MAX];
	for (unsigned k = 0; k < n; k++) {
		struct staged_copy *c = &b->copies[i + k];
		ferry__trace(stg->trace, stg->lane, "copy", c->buf ? (int)c->buf->id : -1, b->seq,
			     c->copy.dst, c->copy.len, c->copy.tag, c->copy.tag_offset);
		run[k] = (struct ferry__copy_op){ c->copy.dst, c->src + c->copy.src_offset,
						  c->copy.len };
	}
	if (n > 1 && ops->copy_batch_async)
		return ops->copy_batch_async(stg->dev, stg->stream, run, n, kind);
	return ferry__copy_each(stg->dev, stg->stream, run, n, kind);
}

/* b's copies in runs of one kind (staged or mapped), at most ISSUE_MAX each. */
static int issue_copies(struct ferry__staging *stg, struct ferry__batch *b)
{
	int rc = 0;
	for (unsigned i = 0, n; rc == 0 && i < b->ncopies; i += n) {
		enum ferry__copy_kind kind = copy_kind(stg, &b->copies[i]);
		for (n = 1; n < ISSUE_MAX && i + n < b->ncopies &&
			    copy_kind(stg, &b->copies[i + n]) == kind; n++)
			;
		rc = issue_run(stg, b, i, n);
	}
	return rc;
}

static void append_to_fifo(struct ferry__staging *stg, struct ferry__batch *b)
{
	for (struct ferry__buf *buf = b->bufs; buf; buf = buf->next)
		buf->state = BUF_IN_FLIGHT;
	stg->npending -= b->nbufs;
	stg->nin_flight += b->nbufs;
	b->next = NULL;
	if (stg->fifo_tail)
		stg->fifo_tail->next = b;
	else
		stg->fifo_head = b;
	stg->fifo_tail = b;
	stg->counters.batches_launched++;
}

/* Issues the pending batch's copies and records its own event after them. */
static int launch_pending(struct ferry__staging *stg)
{
	struct ferry__batch *b = stg->pending;
	if (!b)
		return 0;
	/* Without an event of its own a batch cannot be tracked: it is issued all
	 * the same, and the whole stream is waited for instead. Leaving it pending
	 * would let its copies run later, into memory its owner was told is done. */
	int tracked = take_event(stg, &b->event) == 0;
	stg->pending = NULL;
	atomic_store_explicit(&stg->launched_seq, b->seq, memory_order_release);
	int rc = issue_copies(stg, b);
	if (rc == 0 && tracked)
		rc = stg->dev->ops->event_record(stg->dev, b->event, stg->stream);
	ferry__trace(stg->trace, stg->lane, "launch", -1, b->seq, NULL, b->ncopies, NULL, 0);
	if (rc < 0 || !tracked) {
		if (rc < 0)
			mark_tickets(stg, b, rc);
		finish_untracked_batch(stg, b);
		return rc < 0 ? rc : stg->fatal;
	}
	append_to_fifo(stg, b);
	schedule_point(stg, FERRY__SP_LAUNCHED, b->seq);
	return 0;
}

/* Waits on batch b's own event with the lock released, then reclaims by query.
 * The lock is held on entry and on return. */
static int wait_for_batch(struct ferry__staging *stg, struct ferry__batch *b)
{
	uint64_t seq = b->seq;
	struct ferry__event *ev = b->event;
	b->waiters++;
	stg->counters.waits++;
	schedule_point(stg, FERRY__SP_BEFORE_WAIT, seq);
	ferry__trace(stg->trace, stg->lane, "wait", -1, seq, NULL, 0, NULL, 0);
	pthread_mutex_unlock(&stg->lock);
	int rc = stg->dev->ops->event_sync(stg->dev, ev);
	if (stg->hooks.point)
		stg->hooks.point(stg->hooks.arg, FERRY__SP_AFTER_WAIT, seq);
	ferry__trace(stg->trace, stg->lane, "woke", -1, seq, NULL, 0, NULL, 0);
	pthread_mutex_lock(&stg->lock);
	if (rc < 0 && !b->reclaimed)
		mark_tickets(stg, b, rc);
	if (--b->waiters == 0 && b->reclaimed)
		recycle_batch(stg, b);
	if (rc < 0)
		return rc;
	if (stg->flawed_reclaim)
		reclaim_everything_flawed(stg);
	return reclaim_completed(stg);
}

static int add_block(struct ferry__staging *stg, unsigned n)
{
	size_t len = (size_t)n * stg->chunk;
	void *base;
	struct ferry__device *dev = stg->dev;
	int rc = stg->placement == FERRY__STAGE_DEVICE ? dev->ops->mem_alloc(dev, len, &base)
						       : dev->ops->pinned_alloc(dev, len, &base);
	if (rc < 0)
		return rc;
	if (stg->blocks_hooks.added &&
	    (rc = stg->blocks_hooks.added(stg->blocks_hooks.arg, base, len)) < 0) {
		if (stg->placement == FERRY__STAGE_DEVICE)
			dev->ops->mem_free(dev, base);
		else
			dev->ops->pinned_free(dev, base, len);
		return rc;
	}
	pthread_mutex_lock(&stg->lock);
	stg->blocks[stg->nblocks++] = (struct block){ base, len };
	for (unsigned i = 0; i < n; i++) {
		struct ferry__buf *b = &stg->bufs[stg->total + i];
		b->data = (char *)base + (size_t)i * stg->chunk;
		b->size = stg->chunk;
		b->id = stg->total + i;
		push_free(stg, b);
	}
	stg->total += n;
	pthread_mutex_unlock(&stg->lock);
	return 0;
}

/* Grows the pool geometrically (first to initial_buffers, then doubling), with
 * the lock released during the allocation. Lock held on entry and return. */
static int grow(struct ferry__staging *stg, unsigned at_least)
{
	unsigned n = stg->total ? stg->total : stg->initial_buffers;
	if (at_least > stg->total && n < at_least - stg->total)
		n = at_least - stg->total;
	if (n > stg->max_buffers - stg->total)
		n = stg->max_buffers - stg->total;
	stg->growing = 1;
	ferry__trace(stg->trace, stg->lane, "growing", -1, 0, NULL, (uint64_t)n * stg->chunk, NULL, 0);
	pthread_mutex_unlock(&stg->lock);
	int rc = add_block(stg, n);
	pthread_mutex_lock(&stg->lock);
	stg->growing = 0;
	if (rc == 0) {
		stg->counters.grown++;
		ferry__trace(stg->trace, stg->lane, "grow", -1, 0, NULL, (uint64_t)n * stg->chunk, NULL, 0);
	}
	pthread_cond_broadcast(&stg->changed);
	return rc;
}

static int can_grow(struct ferry__staging *stg)
{
	return stg->total < stg->max_buffers && stg->nblocks < MAX_BLOCKS;
}

static struct ferry__buf *take_free(struct ferry__staging *stg)
{
	struct ferry__buf *b = stg->free_list;
	stg->free_list = b->next;
	stg->nfree--;
	stg->nleased++;
	b->state = BUF_LEASED;
	b->next = NULL;
	return b;
}

/* One step towards a free buffer when none is free and the pool cannot grow:
 * wait for the oldest launched batch, launching the pending one first if
 * nothing is in flight, or wait for a caller to hand a buffer back. */
static int wait_for_a_buffer(struct ferry__staging *stg)
{
	schedule_point(stg, FERRY__SP_NO_BUFFER, 0);
	if (stg->free_list)
		return 0;
	if (stg->fifo_head)
		return wait_for_batch(stg, stg->fifo_head);
	if (stg->pending)
		return launch_pending(stg);
	/* Every buffer is leased: wait for a caller to queue or give one back. */
	pthread_cond_wait(&stg->changed, &stg->lock);
	return 0;
}

static int lease(struct ferry__staging *stg, struct ferry__buf **out, int may_wait)
{
	int rc = 0;
	pthread_mutex_lock(&stg->lock);
	for (;;) {
		if ((rc = recover_from_fatal(stg)) < 0)
			break;
		if (!stg->free_list)
			reclaim_completed(stg);
		if (stg->free_list) {
			*out = take_free(stg);
			trace_buf(stg, "lease", *out, 0);
			break;
		}
		if (can_grow(stg) && !stg->growing) {
			if ((rc = grow(stg, 0)) < 0)
				break;
			continue;
		}
		if (!may_wait && !stg->growing) {
			rc = -EAGAIN;
			break;
		}
		if (stg->growing)
			pthread_cond_wait(&stg->changed, &stg->lock);
		else if ((rc = wait_for_a_buffer(stg)) < 0)
			break;
	}
	pthread_mutex_unlock(&stg->lock);
	return rc;
}

int ferry__staging_lease(struct ferry__staging *stg, struct ferry__buf **out)
{
	return lease(stg, out, 1);
}

int ferry__staging_try_lease(struct ferry__staging *stg, struct ferry__buf **out)
{
	return lease(stg, out, 0);
}

int ferry__staging_reserve(struct ferry__staging *stg, unsigned n)
{
	int rc = 0;
	if (n > stg->max_buffers)
		n = stg->max_buffers;
	pthread_mutex_lock(&stg->lock);
	while (rc == 0 && stg->total < n) {
		if (stg->growing)
			pthread_cond_wait(&stg->changed, &stg->lock);
		else if (stg->nblocks == MAX_BLOCKS)
			break;
		else
			rc = grow(stg, n);
	}
	pthread_mutex_unlock(&stg->lock);
	return rc;
}

static int check_leased(struct ferry__staging *stg, struct ferry__buf *b)
{
	if (!b || b->id >= stg->total || &stg->bufs[b->id] != b || b->state != BUF_LEASED)
		return ferry__fail(-EINVAL, "staging: buffer %d is not leased",
				   b && b->id < stg->max_buffers ? (int)b->id : -1);
	return 0;
}

int ferry__staging_give_back(struct ferry__staging *stg, struct ferry__buf *b)
{
	pthread_mutex_lock(&stg->lock);
	int rc = check_leased(stg, b);
	if (rc == 0) {
		stg->nleased--;
		push_free(stg, b);
		trace_buf(stg, "give_back", b, 0);
		pthread_cond_broadcast(&stg->changed);
	}
	pthread_mutex_unlock(&stg->lock);
	return rc;
}

static int check_copies(struct ferry__staging *stg, const struct ferry__copy *copies, unsigned n)
{
	if (n == 0)
		return ferry__fail(-EINVAL, "staging: queue needs at least one copy");
	for (unsigned i = 0; i < n; i++)
		if (copies[i].src_offset > stg->chunk || copies[i].len > stg->chunk - copies[i].src_offset)
			return ferry__fail(-EINVAL, "staging: copy %u reads past its buffer", i);
	return 0;
}

static int reserve_copies(struct ferry__batch *b, unsigned n)
{
	if (b->ncopies + n <= b->cap)
		return 0;
	unsigned cap = b->cap ? b->cap : 64;
	while (cap < b->ncopies + n)
		cap *= 2;
	void *grown = realloc(b->copies, cap * sizeof(*b->copies));
	if (!grown)
		return ferry__fail(-ENOMEM, "staging: out of memory queueing copies");
	b->copies = grown;
	b->cap = cap;
	return 0;
}

/* Whether an early launch of the pending batch must wait (counted when there
 * is one to launch). Lock held. */
static int launch_held(struct ferry__staging *stg)
{
	if (!atomic_load_explicit(&stg->launches_held, memory_order_relaxed))
		return 0;
	stg->counters.launches_held += stg->pending != NULL;
	return 1;
}

int ferry__staging_hold_launches(struct ferry__staging *stg, int hold)
{
	atomic_store_explicit(&stg->launches_held, hold, memory_order_relaxed);
	if (hold)
		return 0;
	/* A caller that saw the hold left its batch pending before this lock. */
	return ferry__staging_flush(stg);
}

/* Adds buf and its copies to the pending batch (created if needed). */
static int add_to_pending(struct ferry__staging *stg, struct ferry__buf *buf,
			  const struct ferry__copy *copies, unsigned n, struct ferry__ticket *t)
{
	if (!stg->pending && !(stg->pending = new_batch(stg)))
		return ferry__fail(-ENOMEM, "staging: out of memory for a batch");
	struct ferry__batch *b = stg->pending;
	int rc = reserve_copies(b, n);
	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < n; i++) {
		struct ferry__ticket *ct = copies[i].ticket ? copies[i].ticket : t;
		struct ferry__copy c = copies[i];
		c.tag = keep_tag(stg, b, c.tag);
		b->copies[b->ncopies++] = (struct staged_copy){ c, buf, ct, buf->data };
		if (ct)
			ct->seq = b->seq;
		ferry__trace(stg->trace, stg->lane, "queue", (int)buf->id, b->seq, copies[i].dst, copies[i].len,
			     copies[i].tag, copies[i].tag_offset);
	}
	buf->state = BUF_PENDING;
	buf->batch = b;
	buf->next = b->bufs;
	b->bufs = buf;
	b->nbufs++;
	stg->nleased--;
	stg->npending++;
	if (t)
		t->seq = b->seq;
	return 0;
}

int ferry__staging_queue(struct ferry__staging *stg, struct ferry__buf *buf,
			 const struct ferry__copy *copies, unsigned n, struct ferry__ticket *t)
{
	pthread_mutex_lock(&stg->lock);
	int rc = check_leased(stg, buf);
	if (rc < 0)
		goto out;
	if ((rc = check_copies(stg, copies, n)) == 0 && (rc = stg->fatal) == 0)
		rc = add_to_pending(stg, buf, copies, n, t);
	if (rc < 0) {
		stg->nleased--;
		push_free(stg, buf);
		pthread_cond_broadcast(&stg->changed);
	} else {
		/* A thread that found every buffer leased may now launch this batch. */
		pthread_cond_broadcast(&stg->changed);
		/* Once queued, a launch failure reaches the copies' tickets, not this call. */
		if (stg->pending->ncopies > stg->launch_after && !launch_held(stg))
			launch_pending(stg);
	}
out:
	pthread_mutex_unlock(&stg->lock);
	return rc;
}

int ferry__staging_commit(struct ferry__staging *stg, struct ferry__event *fence)
{
	pthread_mutex_lock(&stg->lock);
	int rc = stg->fatal ? stg->fatal : !fence && launch_held(stg) ? 0 : launch_pending(stg);
	if (rc == 0 && fence)
		rc = stg->dev->ops->event_record(stg->dev, fence, stg->stream);
	pthread_mutex_unlock(&stg->lock);
	return rc;
}

int ferry__staging_flush(struct ferry__staging *stg)
{
	pthread_mutex_lock(&stg->lock);
	int rc = stg->fatal ? stg->fatal : launch_pending(stg);
	pthread_mutex_unlock(&stg->lock);
	return rc;
}

int ferry__staging_launch_for(struct ferry__staging *stg, const struct ferry__ticket *t)
{
	/* Launched already (the usual case at small batches, where another batch's
	 * launch took these copies): no lock, which every IO thread takes a batch. */
	if (t->seq <= atomic_load_explicit(&stg->launched_seq, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&stg->lock);
	int rc = stg->fatal;
	if (!rc && stg->pending && t->seq == stg->pending->seq && !launch_held(stg))
		rc = launch_pending(stg);
	pthread_mutex_unlock(&stg->lock);
	return rc;
}

int ferry__staging_cover(struct ferry__staging *stg, struct ferry__ticket *t)
{
	pthread_mutex_lock(&stg->lock);
	int rc = stg->fatal ? stg->fatal : launch_pending(stg);
	if (rc == 0 && !(stg->pending = new_batch(stg)))
		rc = ferry__fail(-ENOMEM, "staging: out of memory for a batch");
	if (rc == 0) {
		t->seq = stg->pending->seq;
		rc = launch_pending(stg);
	}
	pthread_mutex_unlock(&stg->lock);
	return rc;
}

/* A batch of its own for copies out of the mapping at base, launched at once
 * (after the pending batch), so that its event reports their failures alone. */
static int launch_mapped(struct ferry__staging *stg, const char *base,
			 const struct ferry__copy *copies, unsigned n, struct ferry__ticket *t)
{
	struct ferry__batch *b = stg->pending = new_batch(stg);
	if (!b)
		return ferry__fail(-ENOMEM, "staging: out of memory for a batch");
	int rc = reserve_copies(b, n);
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		b->copies[b->ncopies++] = (struct staged_copy){ copies[i], NULL, t, base };
		ferry__trace(stg->trace, stg->lane, "queue", -1, b->seq, copies[i].dst,
			     copies[i].len, copies[i].tag, copies[i].tag_offset);
	}
	if (rc == 0 && t)
		t->seq = b->seq;
	int launched = launch_pending(stg); /* an empty batch, when reserve failed */
	return rc < 0 ? rc : launched;
}

int ferry__staging_queue_mapped(struct ferry__staging *stg, const void *base,
				const struct ferry__copy *copies, unsigned n,
				struct ferry__ticket *t, uint64_t *seq)
{
	pthread_mutex_lock(&stg->lock);
	int rc = stg->fatal ? stg->fatal : launch_pending(stg);
	if (rc == 0)
		rc = launch_mapped(stg, base, copies, n, t);
	*seq = stg->next_seq - 1;
	pthread_mutex_unlock(&stg->lock);
	return rc;
}

int ferry__staging_settled(struct ferry__staging *stg, const struct ferry__ticket *t, int *error)
{
	/* Its errors reached t before completed_seq passed t->seq. */
	if (t->seq > atomic_load_explicit(&stg->completed_seq, memory_order_acquire))
		return 0;
	*error = t->error;
	return 1;
}

int ferry__staging_reached(struct ferry__staging *stg, uint64_t seq)
{
	pthread_mutex_lock(&stg->lock);
	reclaim_completed(stg);
	int done = completed(stg) >= seq;
	pthread_mutex_unlock(&stg->lock);
	return done;
}

/* Waits until every batch up to seq target is reclaimed. Lock held. */
static int wait_until(struct ferry__staging *stg, uint64_t target)
{
	while (recover_from_fatal(stg) == 0) {
		reclaim_completed(stg);
		if (completed(stg) >= target || (!stg->fifo_head && !stg->pending))
			return 0;
		if (!stg->fifo_head || stg->fifo_head->seq > target) {
			launch_pending(stg); /* its errors reach the copies' tickets */
			continue;
		}
		if (wait_for_batch(stg, stg->fifo_head) < 0)
			drain_by_stream_sync(stg);
	}
	return stg->fatal;
}

int ferry__staging_wait(struct ferry__staging *stg, struct ferry__ticket *t)
{
	pthread_mutex_lock(&stg->lock);
	uint64_t target = t ? t->seq : stg->next_seq - 1;
	int rc = wait_until(stg, target);
	if (t && t->error)
		rc = t->error;
	if (!t && !rc && stg->untracked_error)
		rc = stg->untracked_error;
	if (!t)
		stg->untracked_error = 0;
	pthread_mutex_unlock(&stg->lock);
	return rc;
}

void ferry__staging_stats(struct ferry__staging *stg, struct ferry__staging_stats *out)
{
	pthread_mutex_lock(&stg->lock);
	*out = stg->counters;
	out->total = stg->total;
	out->free = stg->nfree;
	out->leased = stg->nleased;
	out->pending = stg->npending;
	out->in_flight = stg->nin_flight;
	out->chunk_size = stg->chunk;
	pthread_mutex_unlock(&stg->lock);
}

unsigned ferry__staging_free_ids(struct ferry__staging *stg, unsigned *ids, unsigned cap)
{
	unsigned n = 0;
	pthread_mutex_lock(&stg->lock);
	for (struct ferry__buf *b = stg->free_list; b && n < cap; b = b->next)
		ids[n++] = b->id;
	pthread_mutex_unlock(&stg->lock);
	return n;
}

struct ferry__stream *ferry__staging_stream(struct ferry__staging *stg)
{
	return stg->stream;
}

struct ferry__device *ferry__staging_device(struct ferry__staging *stg)
{
	return stg->dev;
}

size_t ferry__staging_chunk_size(struct ferry__staging *stg)
{
	return stg->chunk;
}

static int check_config(const struct ferry__staging_config *cfg)
{
	size_t chunk = cfg->chunk_size;
	if (chunk < FERRY__CHUNK_MIN || chunk > FERRY__CHUNK_MAX || (chunk & (chunk - 1)))
		return ferry__fail(-FERRY_ECONFIG,
				   "staging: chunk size %zu: expected a power of two from 4k to 16M", chunk);
	if (!cfg->max_buffers || !cfg->launch_after)
		return ferry__fail(-FERRY_ECONFIG, "staging: max_buffers and launch_after must be set");
	return 0;
}

static void apply_config(struct ferry__staging *stg, const struct ferry__staging_config *cfg)
{
	stg->chunk = cfg->chunk_size;
	stg->max_buffers = cfg->max_buffers;
	stg->initial_buffers = cfg->initial_buffers ? cfg->initial_buffers : FIRST_GROWTH;
	if (stg->initial_buffers > stg->max_buffers)
		stg->initial_buffers = stg->max_buffers;
	stg->launch_after = cfg->launch_after;
	stg->placement = cfg->placement;
	stg->flawed_reclaim = cfg->flawed_reclaim;
	if (cfg->hooks)
		stg->hooks = *cfg->hooks;
	if (cfg->blocks)
		stg->blocks_hooks = *cfg->blocks;
	stg->trace = cfg->trace;
	stg->lane = cfg->lane;
}

int ferry__staging_create(struct ferry__device *dev, const struct ferry__staging_config *cfg,
			  struct ferry__staging **out)
{
	int rc = check_config(cfg);
	if (rc < 0)
		return rc;
	struct ferry__staging *stg = calloc(1, sizeof(*stg));
	if (!stg)
		return ferry__fail(-ENOMEM, "staging: out of memory");
	stg->dev = dev;
	stg->next_seq = 1;
	apply_config(stg, cfg);
	if (!(stg->bufs = calloc(stg->max_buffers, sizeof(*stg->bufs)))) {
		rc = ferry__fail(-ENOMEM, "staging: out of memory for %u buffers", stg->max_buffers);
		goto err_free;
	}
	if ((rc = dev->ops->stream_create(dev, &stg->stream)) < 0) {
		ferry__fail_subject(rc, "staging: cannot create the copy stream");
		goto err_free;
	}
	pthread_mutex_init(&stg->lock, NULL);
	pthread_cond_init(&stg->changed, NULL);
	*out = stg;
	return 0;
err_free:
	free(stg->bufs);
	free(stg);
	return rc;
}

static void free_blocks(struct ferry__staging *stg)
{
	for (unsigned i = 0; i < stg->nblocks; i++) {
		struct block *bl = &stg->blocks[i];
		if (stg->blocks_hooks.removed)
			stg->blocks_hooks.removed(stg->blocks_hooks.arg, bl->base, bl->len);
		if (stg->placement == FERRY__STAGE_DEVICE)
			stg->dev->ops->mem_free(stg->dev, bl->base);
		else
			stg->dev->ops->pinned_free(stg->dev, bl->base, bl->len);
	}
}

static void free_batch_struct(struct ferry__batch *b)
{
	free_tags(b);
	free(b->copies);
	free(b);
}

/* Frees batch structs; FIFO ones remain only when the engine went fatal. */
static void free_batches(struct ferry__staging *stg)
{
	if (stg->pending)
		free_batch_struct(stg->pending);
	while (stg->fifo_head) {
		struct ferry__batch *b = stg->fifo_head;
		stg->fifo_head = b->next;
		free_batch_struct(b);
	}
	while (stg->spare_batches) {
		struct ferry__batch *b = stg->spare_batches;
		stg->spare_batches = b->next;
		free_batch_struct(b);
	}
	for (unsigned i = 0; i < stg->nspare_events; i++)
		stg->dev->ops->event_destroy(stg->dev, stg->spare_events[i]);
	free(stg->spare_events);
}

int ferry__staging_destroy(struct ferry__staging *stg)
{
	if (!stg)
		return 0;
	pthread_mutex_lock(&stg->lock);
	int rc = wait_until(stg, stg->next_seq - 1);
	if (rc == 0 && stg->untracked_error)
		rc = ferry__fail(stg->untracked_error,
				 "staging: a copy that no call waited for failed: %s",
				 ferry_strerror(stg->untracked_error));
	unsigned leased = stg->nleased;
	int fatal = stg->fatal;
	pthread_mutex_unlock(&stg->lock);
	stg->dev->ops->stream_destroy(stg->dev, stg->stream);
	if (leased)
		rc = ferry__fail(-FERRY_ELEASED,
				 "staging: destroyed with %u buffers still leased; their memory is "
				 "leaked, not freed",
				 leased);
	else if (!fatal)
		free_blocks(stg);
	free_batches(stg);
	pthread_cond_destroy(&stg->changed);
	pthread_mutex_destroy(&stg->lock);
	free(stg->bufs);
	free(stg);
	return rc;
}
