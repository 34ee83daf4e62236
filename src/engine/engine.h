/*
 * The staging engine: a pool of chunk buffers, leases, batches of copies, and
 * reclamation that keeps the invariant of docs/design.md:
 *
 *   A staging buffer returns to the free pool only after every submitted copy
 *   that reads from it has completed. Waiting for one batch never authorizes
 *   reclaiming another.
 *
 * A caller leases a buffer, fills it (a file read), and queues one or more
 * copies out of it; queueing ends the lease and hands the buffer to the pending
 * batch. A batch is launched (its copies issued on the engine's copy stream and
 * its own event recorded after them) when it holds more than launch_after
 * copies, or on commit, unless launches are held (ferry__staging_hold_launches).
 * Every function is thread-safe.
 */
#ifndef FERRY_ENGINE_H
#define FERRY_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "device/device.h"

struct ferry__staging;

/* Places where the engine calls the test hooks, never with its lock held. */
enum ferry__sched_point {
	FERRY__SP_NO_BUFFER,   /* a lease found no free buffer and cannot grow */
	FERRY__SP_BEFORE_WAIT, /* about to wait on the oldest batch's event */
	FERRY__SP_AFTER_WAIT,  /* that wait returned; the lock is not yet re-taken */
	FERRY__SP_LAUNCHED,    /* a batch was launched */
};

struct ferry__staging_hooks {
	void (*point)(void *arg, enum ferry__sched_point point, uint64_t batch_seq);
	void *arg;
};

/* Called once for each staging block the engine allocates, and before it frees
 * one (cuFile registers blocks here). Returns 0 or a negative code. */
struct ferry__block_hooks {
	int (*added)(void *arg, void *base, size_t len);
	void (*removed)(void *arg, void *base, size_t len);
	void *arg;
};

struct ferry__staging_config {
	size_t chunk_size;         /* a power of two, FERRY__CHUNK_MIN..FERRY__CHUNK_MAX */
	unsigned max_buffers;      /* at least 1 */
	unsigned initial_buffers;  /* the pool's first growth (0: 4, capped at max_buffers) */
	unsigned launch_after;     /* at least 1 */
	enum ferry__placement placement;
	const struct ferry__staging_hooks *hooks;  /* tests only; may be NULL */
	const struct ferry__block_hooks *blocks;   /* may be NULL */
	/* Test only: the flawed rule of docs/design.md (after a wait, reclaim every
	 * launched buffer). Exists so the seed test can prove it sees the bug. */
	int flawed_reclaim;
	struct ferry__trace *trace; /* may be NULL; shared, not owned */
	unsigned lane;              /* this engine's number in the trace */
};

struct ferry__buf {
	void *data;      /* chunk_size bytes, page aligned */
	size_t size;     /* chunk_size */
	unsigned id;     /* 0 .. max_buffers-1, stable for the engine's life */
	/* engine-private below */
	struct ferry__buf *next;
	struct ferry__batch *batch;
	unsigned state;
};

/* One copy out of a leased buffer. tag and tag_offset name the source for the
 * trace (a file path and its offset); both may be NULL/0. ticket, when set,
 * is this copy's ticket instead of the one the queue call names (one buffer
 * may feed the outputs of several callers). */
struct ferry__copy {
	void *dst;
	size_t src_offset;
	size_t len;
	const char *tag;
	uint64_t tag_offset;
	struct ferry__ticket *ticket;
};

/* A caller's handle on a group of its copies: zero it, pass it to queue, then
 * wait on it. After the wait, error holds the first error that hit any of them. */
struct ferry__ticket {
	uint64_t seq;   /* the newest batch holding one of its copies */
	int error;
	struct ferry__staging *stg; /* the engine its copies went to (set by the loader) */
};

struct ferry__staging_stats {
	unsigned total, free, leased, pending, in_flight;
	uint64_t batches_launched, waits, reclaimed, grown;
	uint64_t launches_held;    /* early launches left pending while launches were held */
	size_t chunk_size;
};

/* The chunk sizes an engine takes (powers of two). */
#define FERRY__CHUNK_MIN ((size_t)4 << 10)
#define FERRY__CHUNK_MAX ((size_t)16 << 20)

int ferry__staging_create(struct ferry__device *dev, const struct ferry__staging_config *cfg,
			  struct ferry__staging **out);
/* Launches what is pending, waits for every launched batch, then frees the
 * pool. Returns -FERRY_ELEASED when buffers are still leased: their memory is
 * then leaked rather than freed under a caller that may still use it. */
int ferry__staging_destroy(struct ferry__staging *stg);

/* Grows the pool to at least n buffers now (before copies are in flight). */
int ferry__staging_reserve(struct ferry__staging *stg, unsigned n);
/* Leases a free buffer, growing the pool or waiting for the oldest batch. */
int ferry__staging_lease(struct ferry__staging *stg, struct ferry__buf **out);
/* Like lease, but never waits: -EAGAIN when no buffer is free now. It reclaims
 * completed batches (by query) and may grow the pool. */
int ferry__staging_try_lease(struct ferry__staging *stg, struct ferry__buf **out);
/* Returns a leased buffer that no copy reads from. */
int ferry__staging_give_back(struct ferry__staging *stg, struct ferry__buf *buf);
/* Queues n copies out of buf and ends its lease. t may be NULL. On error the
 * buffer is returned to the pool and nothing was queued. */
int ferry__staging_queue(struct ferry__staging *stg, struct ferry__buf *buf,
			 const struct ferry__copy *copies, unsigned n, struct ferry__ticket *t);
/* Launches the pending batch (if any); then, if fence is not NULL, records it
 * on the copy stream after everything queued so far. When no event can be had
 * for the batch, it is issued anyway and the copy stream waited for. Returns 0
 * or the launch's error (which its copies' tickets carry too). */
int ferry__staging_commit(struct ferry__staging *stg, struct ferry__event *fence);
/* Launches the pending batch now, even while launches are held: for work the
 * caller then queues on the copy stream that reads what those copies write (a
 * conversion), which the stream runs in order. Returns 0 or the launch's
 * error (which its copies' tickets carry too). */
int ferry__staging_flush(struct ferry__staging *stg);
/* Launches the pending batch when it holds copies of t (a ticket no thread
 * queues on any more), so that they are in flight before anyone waits for
 * them. Returns 0 or the launch's error (which t carries too). */
int ferry__staging_launch_for(struct ferry__staging *stg, const struct ferry__ticket *t);
/* Makes t cover all work queued on the copy stream so far, its own copies
 * and work queued there by others (a conversion after a load's copies): the
 * pending batch is launched, then an empty batch whose event is recorded
 * after that work and which t now names, so that waiting for t (and a fence
 * committed later) waits for it too. Returns 0 or the launch's error. */
int ferry__staging_cover(struct ferry__staging *stg, struct ferry__ticket *t);
/* Launches what is pending and waits until the copies of t (all copies queued
 * so far when t is NULL) have completed. Returns 0 or the first error. */
int ferry__staging_wait(struct ferry__staging *stg, struct ferry__ticket *t);

/*
 * Copies out of a file mapping rather than a staging buffer (load/mapped.c):
 * each copy reads len bytes at base + src_offset (FERRY__H2D_MAPPED). The
 * pending batch is launched first; these copies then form a batch of their
 * own, launched at once, whose event reports their completion and failure
 * (a failure reaches t, or the next wait(NULL) when t is NULL). *seq gets
 * that batch's number, for ferry__staging_reached: the mapping must stay
 * until then. Returns 0 or the launch's error; after an error *seq still
 * names the last batch that may hold some of the copies.
 */
int ferry__staging_queue_mapped(struct ferry__staging *stg, const void *base,
				const struct ferry__copy *copies, unsigned n,
				struct ferry__ticket *t, uint64_t *seq);
/* For a ticket no thread queues copies on any more (the caller knows: its
 * copies were all queued before it got t): 1 with t's error in *error when
 * its copies were reclaimed already, else 0; without the lock (the reader's
 * wait before handing out a batch, at batches of 4 small files more than
 * half of the engine's lock holds, when an IO thread's lease had reclaimed
 * the copies). A ticket others still queue on must be waited for instead:
 * reading its seq here would race with them. */
int ferry__staging_settled(struct ferry__staging *stg, const struct ferry__ticket *t, int *error);
/*
 * Holds (hold 1) or ends the hold on (hold 0) the engine's early launches: a
 * pending batch past launch_after, a commit without a fence, and launch_for
 * leave the batch pending, so that callers go on reading into free buffers
 * rather than wait inside the device. For the time the device itself holds
 * every launch up: a registration of host memory holds CUDA's lock, while
 * the copies queued before it run on (docs/zero-copy-measurements.md). A launch
 * that someone waits on still happens (a wait, a lease with no buffer left,
 * cover, a commit with a fence, flush). Ending the hold launches what is pending.
 * Returns 0 or the launch's error (which also reaches the copies' tickets).
 */
int ferry__staging_hold_launches(struct ferry__staging *stg, int hold);
/* 1 when every batch up to seq has completed (reclaims completed batches by
 * query first, never waits), else 0. */
int ferry__staging_reached(struct ferry__staging *stg, uint64_t seq);

void ferry__staging_stats(struct ferry__staging *stg, struct ferry__staging_stats *out);
/* Writes the ids of free buffers (at most cap) into ids; returns how many. */
unsigned ferry__staging_free_ids(struct ferry__staging *stg, unsigned *ids, unsigned cap);
struct ferry__stream *ferry__staging_stream(struct ferry__staging *stg);
struct ferry__device *ferry__staging_device(struct ferry__staging *stg);
size_t ferry__staging_chunk_size(struct ferry__staging *stg);

/* ==== the trace ==== */
/*
 * FERRY_TRACE=PATH: a CSV trace of engine events, so that a user chasing a
 * corrupt output can see which buffer of which lane fed which copy. One per
 * context, shared by its lanes. Columns:
 * time_ns,thread,lane,event,buffer,batch,dst,bytes,file,offset
 * (file is quoted, with quotes doubled). Events: growing and grow (a thread
 * begins to add bytes to its lane's pool, and has added them), lease, give_back,
 * queue (one per copy queued), launch, copy (one per copy issued), reclaim,
 * wait and woke (a thread waits for a launched batch's event, and the wait
 * ended: batch is its number), and one per load of a file, saying how its
 * bytes are read: buffered or direct (O_DIRECT) through staging, mapped
 * (copied straight from a
 * registered mapping of the page cache, load/mapped.c), or memory (bytes
 * already in host memory, an inflated .npz member or a payload converted on
 * the host, copied into staging), with the load's span in bytes and offset
 * (of the file; of those bytes for memory) (buffer -1, batch 0). Copies out
 * of a mapping have buffer -1 in their queue and copy rows. The zero-copy
 * registrar's rows (lane 0, its own thread; bytes: the registration's, its
 * files' sizes rounded up to pages; file: its first file; offset: its files):
 * pinning (before the files are mapped), registering (before the device
 * call), pinned (once the call returned and the launches held meanwhile went)
 * or pin_failed (a file could not be mapped, or the device refused), and
 * unpinned (its last file left the cache; no file, offset 0).
 */
struct ferry__trace;

/* Opens a trace at path. Returns 0, or -errno with a message naming path. */
int ferry__trace_open(const char *path, struct ferry__trace **out);
void ferry__trace_close(struct ferry__trace *t);
/* Appends one line; t may be NULL (then it does nothing). */
void ferry__trace(struct ferry__trace *t, unsigned lane, const char *event, int buffer,
		  uint64_t batch, const void *dst, uint64_t bytes, const char *file,
		  uint64_t offset);

/* Appends a line of event about file (buffered, direct) on stg's lane. */
void ferry__staging_trace_file(struct ferry__staging *stg, const char *event, uint64_t bytes,
			       const char *file, uint64_t offset);

/* ==== lanes ==== */
/*
 * Several staging engines of one context, each with its own lock and copy
 * stream; the threads that call ferry are spread over them (a thread keeps its
 * lane), so callers loading small files in parallel do not queue behind one
 * lock. Every copy of one load goes through one lane: the one its ticket
 * names.
 */
#define FERRY__MAX_LANES 16

struct ferry__lanes;

/* Creates n engines (1..FERRY__MAX_LANES) of cfg, lane i traced as lane i.
 * Returns 0 or a negative code. */
int ferry__lanes_create(struct ferry__device *dev, const struct ferry__staging_config *cfg,
			unsigned n, struct ferry__lanes **out);
/* Destroys every engine (see ferry__staging_destroy). Returns 0 or the first error. */
int ferry__lanes_destroy(struct ferry__lanes *l);
unsigned ferry__lanes_count(const struct ferry__lanes *l);
/* Engine i, 0 <= i < count. */
struct ferry__staging *ferry__lanes_get(const struct ferry__lanes *l, unsigned i);
/* The calling thread's engine, and its number. */
struct ferry__staging *ferry__lanes_pick(const struct ferry__lanes *l);
/* Batches of copies launched on all lanes so far: it stands still while no
 * copy is being queued. */
uint64_t ferry__lanes_launched(const struct ferry__lanes *l);
/* ferry__staging_hold_launches on every lane. */
void ferry__lanes_hold_launches(const struct ferry__lanes *l, int hold);
unsigned ferry__lanes_pick_index(const struct ferry__lanes *l);

#endif
