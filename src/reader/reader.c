/*
 * The dataset reader: batches of .npy samples in device memory, loaded ahead of
 * the caller on the reader's own IO threads.
 *
 * The caller's thread schedules batches (which samples, in which order) under
 * the reader's lock; a pool task loads each batch into that batch's own device
 * memory, which is reused only after the caller releases the batch. A batch is
 * loaded in two passes over its samples, each spread over the IO threads: open
 * and plan (header, region, size), then read. Every file is closed before the
 * batch is handed over, whatever happened.
 *
 * Regions of C-order, native-endian files are read as the byte runs they need.
 * Fortran-order and byte-swapped files are read whole into a scratch device
 * buffer (converted to C order by the loader), and the region is copied out of
 * it device-to-device: they read the whole file.
 */
#include "reader/reader.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "context/context.h"
#include "load/load.h"
#include "npy/npy.h"

#define SAMPLE_ALIGN 256
#define FILL_BUFFER_MAX (1u << 20)

enum batch_state { BATCH_FREE, BATCH_LOADING, BATCH_READY, BATCH_HELD };

/* One sample of a batch while it loads. */
struct slot {
	uint64_t file;          /* dataset index */
	int is_padding;
	int skipped;
	int error;
	char *msg;              /* the error's message (names the file) */
	struct ferry__file *f;
	struct ferry__npy_header h;
	unsigned char head[FERRY__HEAD_MAX]; /* the bytes h was parsed from */
	struct ferry__region rg;
	uint64_t nbytes;
	size_t offset;          /* in the batch's memory */
	unsigned alias;         /* padding: the slot whose data it repeats */
	struct ferry__load_stats stats;
};

struct ferry_batch {
	struct ferry_reader *r;
	enum batch_state state;
	struct ferry_batch *next;    /* in the queue or in the free list */
	uint64_t epoch, index;
	struct ferry_epoch_info info;
	struct slot *slots;
	unsigned nslots;
	unsigned *out;               /* the delivered samples: slot indices */
	unsigned nout;
	atomic_uint cursor;          /* the next slot a loading thread takes */
	unsigned parallel;           /* IO threads per sample, fixed before the read pass */
	char *mem;                   /* device memory of the samples */
	size_t mem_cap;
	struct ferry__event *ev;     /* recorded after the batch's copies */
	struct ferry__stream *stream; /* fills and scratch copies */
	int error;
	char *msg;
	int skip_error;              /* the last skipped file's error, and its message */
	char *skip_msg;
	uint64_t bytes_read, bytes_delivered, skipped, real;
};

/* A parsed header, valid while the file is the one it was read from. */
struct header_entry {
	struct ferry__file_id id;
	struct ferry__npy_header h;
	unsigned char head[]; /* the header's first ferry__head_len(&h) bytes */
};

struct ferry_reader {
	ferry_ctx *ctx;
	const struct ferry__loader *ld;
	struct ferry__device *dev;
	struct ferry__dataset ds;
	struct ferry__roi_spec roi;
	unsigned batch_size, threads, depth, shard, nshards;
	uint64_t epochs, seed;
	int stick, pad, shuffle, cache_on;
	enum ferry_on_error on_error;
	double fill_value;
	struct ferry__pool *pool;

	pthread_mutex_t lock;
	pthread_cond_t loaded;       /* a batch finished loading */
	struct ferry_batch *queue_head, *queue_tail;
	unsigned queued, loading;
	struct ferry_batch *free_list;
	struct ferry_batch **all;    /* every batch object, for close */
	unsigned nall;

	/* The scheduling cursor and the order of its epoch (under lock). */
	uint64_t next_epoch, next_index;
	uint64_t *order, order_n, order_epoch;
	unsigned order_shard;
	int order_valid;

	struct ferry_epoch_info info;
	struct ferry_reader_stats stats;
	char *name;                  /* the dataset's directory or list, for messages */

	/* The epoch callers are taking batches of, and how many samples it gave. */
	uint64_t consume_epoch, consume_delivered;
	int consume_started;

	pthread_mutex_t cache_lock;
	struct header_entry **cache;  /* one per file, parsed on first use */
};

/* ---- slots ---- */

/* Records err on the slot with the calling thread's message, making sure the
 * message names the file. Returns err. */
static int slot_fail(struct ferry_reader *r, struct slot *s, int err)
{
	ferry__fail_subject(err, r->ds.paths[s->file]);
	free(s->msg);
	s->msg = ferry__error_copy();
	s->error = err;
	return err;
}

static void slot_close(struct ferry_reader *r, struct slot *s)
{
	ferry__load_close(r->ld, s->f);
	s->f = NULL;
}

static void slot_reset(struct slot *s, uint64_t file, int is_padding)
{
	free(s->msg);
	memset(s, 0, sizeof(*s));
	s->file = file;
	s->is_padding = is_padding;
}

static int slot_live(const struct slot *s)
{
	return !s->is_padding && !s->skipped && !s->error;
}

/* ---- the header cache ---- */

/* A hit needs the same file (device, inode) in the same state (size, mtime,
 * ctime); the header bytes are checked again against the payload's first read. */
static int cache_lookup(struct ferry_reader *r, uint64_t file, const struct ferry__file *f,
			struct ferry__npy_header *h, unsigned char *head)
{
	pthread_mutex_lock(&r->cache_lock);
	struct header_entry *e = r->cache[file];
	int hit = e && !memcmp(&e->id, &f->id, sizeof(e->id));
	if (hit) {
		*h = e->h;
		memcpy(head, e->head, ferry__head_len(h));
	}
	pthread_mutex_unlock(&r->cache_lock);
	return hit;
}

static void cache_store(struct ferry_reader *r, uint64_t file, const struct ferry__file *f,
			const struct ferry__npy_header *h, const unsigned char *head)
{
	size_t len = ferry__head_len(h);
	struct header_entry *e = malloc(sizeof(*e) + len);
	if (!e)
		return; /* no entry: the next read parses again */
	e->id = f->id;
	e->h = *h;
	memcpy(e->head, head, len);
	pthread_mutex_lock(&r->cache_lock);
	free(r->cache[file]);
	r->cache[file] = e;
	pthread_mutex_unlock(&r->cache_lock);
}

static int cached_header(struct ferry_reader *r, uint64_t file, struct ferry__file *f,
			 struct ferry__npy_header *h, unsigned char *head)
{
	if (r->cache_on && cache_lookup(r, file, f, h, head))
		return 0;
	int rc = ferry__load_header(f, h, head);
	if (rc == 0 && r->cache_on)
		cache_store(r, file, f, h, head);
	return rc;
}

/* ---- loading one batch (on pool threads) ---- */

typedef void (*slot_fn)(struct ferry_batch *b, struct slot *s);

struct slot_job {
	struct ferry_batch *b;
	slot_fn fn;
};

static void slot_worker(void *arg, unsigned i)
{
	struct slot_job *job = arg;
	unsigned k;

	(void)i;
	while ((k = atomic_fetch_add(&job->b->cursor, 1)) < job->b->nslots)
		job->fn(job->b, &job->b->slots[k]);
}

/* Runs fn on every slot, spread over the reader's threads. */
static void for_each_slot(struct ferry_batch *b, slot_fn fn)
{
	struct slot_job job = { b, fn };

	atomic_store(&b->cursor, 0);
	ferry__pool_parallel(b->r->pool, b->r->threads, slot_worker, &job);
}

static void open_slot(struct ferry_batch *b, struct slot *s)
{
	struct ferry_reader *r = b->r;
	const char *path = r->ds.paths[s->file];
	int rc;

	if (s->is_padding)
		return;
	ferry__clear_error(); /* a message left by another file must not be this one's */
	rc = ferry__load_open(r->ld, path, &s->f);
	if (rc == 0)
		rc = cached_header(r, s->file, s->f, &s->h, s->head);
	if (rc == 0)
		rc = ferry__roi_resolve(&r->roi, s->h.ndim, s->h.shape, path, &s->rg);
	if (rc < 0) {
		slot_fail(r, s, rc);
		slot_close(r, s);
		return;
	}
	s->nbytes = s->rg.count * s->h.itemsize;
}

/* Errors that say nothing about one file, so skipping it would not help. */
static int error_is_global(int err)
{
	return err == -ENOMEM || err == -FERRY_EDEVICE || err == -FERRY_ENODEVICE;
}

/* Applies on_error to the slots that failed: returns the first error (and
 * keeps its message) under stop, or marks them skipped under skip. */
static int settle_slots(struct ferry_batch *b)
{
	struct ferry_reader *r = b->r;

	for (unsigned i = 0; i < b->nslots; i++) {
		struct slot *s = &b->slots[i];
		if (!s->error)
			continue;
		if (r->on_error == FERRY_ON_ERROR_STOP || error_is_global(s->error)) {
			free(b->msg);
			b->msg = s->msg ? strdup(s->msg) : NULL;
			return s->error;
		}
		slot_close(r, s);
		s->skipped = 1;
		b->skip_error = s->error;
		free(b->skip_msg);
		b->skip_msg = s->msg ? strdup(s->msg) : NULL;
		s->error = 0;
		b->skipped++;
	}
	return 0;
}

/* All samples of a batch share dtype and rank; a file that breaks that fails. */
static int check_batch_types(struct ferry_batch *b)
{
	struct slot *first = NULL;

	for (unsigned i = 0; i < b->nslots; i++) {
		struct slot *s = &b->slots[i];
		if (!slot_live(s))
			continue;
		if (!first) {
			first = s;
			continue;
		}
		if (s->h.dtype == first->h.dtype && s->h.ndim == first->h.ndim)
			continue;
		ferry__fail(-FERRY_EMISMATCH,
			    "%s: dtype %s rank %d differs from %s (dtype %s rank %d) in one batch",
			    b->r->ds.paths[s->file], ferry_dtype_name(s->h.dtype), s->h.ndim,
			    b->r->ds.paths[first->file], ferry_dtype_name(first->h.dtype),
			    first->h.ndim);
		slot_fail(b->r, s, -FERRY_EMISMATCH);
		slot_close(b->r, s);
	}
	return settle_slots(b);
}

/* Grows the batch's device memory to at least len bytes. */
static int reserve_memory(struct ferry_batch *b, size_t len)
{
	struct ferry__device *dev = b->r->dev;
	size_t cap = b->mem_cap + b->mem_cap / 2;
	void *mem;
	int rc;

	if (len <= b->mem_cap)
		return 0;
	if (cap < len)
		cap = len;
	if (b->mem) {
		dev->ops->mem_free(dev, b->mem);
		b->mem = NULL;
		b->mem_cap = 0;
	}
	rc = dev->ops->mem_alloc(dev, cap, &mem);
	if (rc < 0)
		return ferry__fail(rc, "reader: cannot allocate %zu bytes of batch memory", cap);
	b->mem = mem;
	b->mem_cap = cap;
	return 0;
}

/* Places the live samples in the batch's memory. */
static int lay_out_batch(struct ferry_batch *b)
{
	size_t total = 0;

	for (unsigned i = 0; i < b->nslots; i++) {
		struct slot *s = &b->slots[i];
		if (!slot_live(s))
			continue;
		s->offset = (total + SAMPLE_ALIGN - 1) / SAMPLE_ALIGN * SAMPLE_ALIGN;
		total = s->offset + s->nbytes;
	}
	return reserve_memory(b, total);
}

/* Fills the whole output of s with the fill value (the data goes on top). */
static int fill_output(struct ferry_batch *b, struct slot *s, char *dst)
{
	struct ferry__device *dev = b->r->dev;
	unsigned char elem[16];
	size_t isz = ferry__fill_element(s->h.dtype, b->r->fill_value, elem);
	int same = 1, rc;

	for (size_t i = 1; i < isz; i++)
		same &= elem[i] == elem[0];
	if (same) {
		rc = dev->ops->memset_async(dev, b->stream, dst, elem[0], s->nbytes);
		return rc < 0 ? rc : dev->ops->stream_sync(dev, b->stream);
	}
	size_t len = s->nbytes < FILL_BUFFER_MAX ? s->nbytes : FILL_BUFFER_MAX / isz * isz;
	unsigned char *buf = malloc(len);
	if (!buf)
		return ferry__fail(-ENOMEM, "reader: out of memory for a fill pattern");
	for (size_t i = 0; i < len; i += isz)
		memcpy(buf + i, elem, isz);
	rc = 0;
	for (uint64_t off = 0; rc == 0 && off < s->nbytes; off += len) {
		size_t n = s->nbytes - off < len ? (size_t)(s->nbytes - off) : len;
		rc = dev->ops->copy_sync(dev, dst + off, buf, n, FERRY__H2D);
	}
	free(buf);
	return rc;
}

static unsigned slot_parallel(struct ferry_batch *b)
{
	unsigned live = 0;
	for (unsigned i = 0; i < b->nslots; i++)
		live += slot_live(&b->slots[i]);
	return live >= b->r->threads || !live ? 1 : b->r->threads / live;
}

/* Reads the runs straight from a C-order, native-endian file. */
static int read_runs(struct ferry_batch *b, struct slot *s, char *dst,
		     const struct ferry__run *runs, int64_t n)
{
	struct ferry__range *ranges = malloc((size_t)n * sizeof(*ranges));
	struct ferry__load_opts opts = { .parallel = b->parallel, .stats = &s->stats,
					 .head = s->head, .head_len = ferry__head_len(&s->h) };
	int rc;

	if (!ranges)
		return ferry__fail(-ENOMEM, "reader: out of memory for %lld ranges", (long long)n);
	for (int64_t k = 0; k < n; k++)
		ranges[k] = (struct ferry__range){ .offset = s->h.data_offset + runs[k].src,
						   .len = runs[k].len,
						   .dst = dst + runs[k].dst };
	rc = ferry__load_ranges(b->r->ld, s->f, ranges, (unsigned)n, &opts);
	free(ranges);
	return rc;
}

/* Loads the whole payload (as C order) into scratch device memory and copies
 * the runs out of it: for Fortran-order and byte-swapped files. */
static int copy_runs_via_scratch(struct ferry_batch *b, struct slot *s, char *dst,
				 const struct ferry__run *runs, int64_t n)
{
	struct ferry__device *dev = b->r->dev;
	struct ferry__load_opts opts = { .parallel = b->parallel, .stats = &s->stats };
	void *scratch;
	int rc;

	if (n == 1 && runs[0].src == 0 && runs[0].dst == 0 && runs[0].len == s->h.data_size)
		return ferry__load_payload(b->r->ld, s->f, &s->h, dst, &opts);
	rc = dev->ops->mem_alloc(dev, s->h.data_size, &scratch);
	if (rc < 0)
		return ferry__fail(rc, "reader: cannot allocate %llu bytes of scratch memory",
				   (unsigned long long)s->h.data_size);
	rc = ferry__load_payload(b->r->ld, s->f, &s->h, scratch, &opts);
	for (int64_t k = 0; rc == 0 && k < n; k++)
		rc = dev->ops->copy_async(dev, b->stream, dst + runs[k].dst,
					  (char *)scratch + runs[k].src, runs[k].len, FERRY__D2D);
	int sync = dev->ops->stream_sync(dev, b->stream);
	dev->ops->mem_free(dev, scratch);
	return rc < 0 ? rc : sync;
}

static int reads_runs_directly(const struct ferry__npy_header *h)
{
	return !h->swap && (!h->fortran_order || h->ndim <= 1);
}

static int copy_region(struct ferry_batch *b, struct slot *s, char *dst)
{
	struct ferry__run *runs;
	int64_t n = ferry__region_runs(&s->rg, s->h.shape, s->h.itemsize, &runs);
	int rc;

	if (n <= 0)
		return (int)n;
	if (reads_runs_directly(&s->h))
		rc = read_runs(b, s, dst, runs, n);
	else
		rc = copy_runs_via_scratch(b, s, dst, runs, n);
	free(runs);
	return rc;
}

static void load_slot(struct ferry_batch *b, struct slot *s)
{
	char *dst;
	int rc = 0;

	if (!slot_live(s))
		return;
	ferry__clear_error();
	dst = b->mem + s->offset;
	if (s->rg.padded)
		rc = fill_output(b, s, dst);
	if (rc == 0)
		rc = copy_region(b, s, dst);
	if (rc < 0)
		slot_fail(b->r, s, rc);
	slot_close(b->r, s);
}

static void close_all_files(struct ferry_batch *b)
{
	for (unsigned i = 0; i < b->nslots; i++)
		slot_close(b->r, &b->slots[i]);
}

/* Lists the delivered samples: the live ones in order, then the padding, which
 * repeats the last live sample (and is dropped when there is none). */
static void list_outputs(struct ferry_batch *b)
{
	int have_last = 0;
	unsigned last = 0;

	b->nout = 0;
	b->real = 0;
	b->bytes_delivered = 0;
	for (unsigned i = 0; i < b->nslots; i++) {
		struct slot *s = &b->slots[i];
		if (slot_live(s)) {
			b->out[b->nout++] = i;
			b->real++;
			b->bytes_delivered += s->nbytes;
			have_last = 1;
			last = i;
		} else if (s->is_padding && have_last) {
			s->alias = last;
			b->out[b->nout++] = i;
		}
	}
}

/* Every load of the batch has waited for its copies, so the batch's event may
 * follow them on any lane's stream. */
static int complete_batch(struct ferry_batch *b)
{
	struct ferry__device *dev = b->r->dev;
	int rc = ferry__staging_commit(ferry__lanes_pick(b->r->ld->lanes), b->ev);

	return rc < 0 ? rc : dev->ops->event_sync(dev, b->ev);
}

static int load_batch(struct ferry_batch *b)
{
	int rc;

	b->bytes_read = b->skipped = 0;
	for_each_slot(b, open_slot);
	rc = settle_slots(b);
	if (rc == 0)
		rc = check_batch_types(b);
	if (rc == 0)
		rc = lay_out_batch(b);
	if (rc == 0) {
		/* Before the pass: during it, other threads' slots change (errors). */
		b->parallel = slot_parallel(b);
		for_each_slot(b, load_slot);
		rc = settle_slots(b);
	}
	close_all_files(b);
	for (unsigned i = 0; i < b->nslots; i++)
		b->bytes_read += b->slots[i].stats.bytes_read;
	if (rc == 0) {
		list_outputs(b);
		rc = complete_batch(b);
	}
	return rc;
}

static void load_batch_task(void *arg)
{
	struct ferry_batch *b = arg;
	struct ferry_reader *r = b->r;
	int rc = load_batch(b);

	if (rc < 0 && !b->msg)
		b->msg = strdup(ferry_last_error());
	pthread_mutex_lock(&r->lock);
	b->error = rc;
	b->state = BATCH_READY;
	r->loading--;
	pthread_cond_broadcast(&r->loaded);
	pthread_mutex_unlock(&r->lock);
}

/* ---- scheduling (the caller's thread, under the lock) ---- */

static uint64_t batches_of(const struct ferry_reader *r, uint64_t samples)
{
	return (samples + r->batch_size - 1) / r->batch_size;
}

/* Makes r->order the sample order of epoch. */
static void prepare_order(struct ferry_reader *r, uint64_t epoch)
{
	uint64_t begin, end;

	if (r->order_valid && r->order_epoch == epoch)
		return;
	r->order_shard = ferry__epoch_shard(r->shard, r->nshards, r->stick, epoch);
	ferry__shard_range(r->ds.n, r->order_shard, r->nshards, &begin, &end);
	r->order_n = end - begin;
	for (uint64_t i = 0; i < r->order_n; i++)
		r->order[i] = begin + i;
	if (r->shuffle)
		ferry__shuffle(r->order, r->order_n, r->seed, epoch);
	r->order_epoch = epoch;
	r->order_valid = 1;
}

static struct ferry_epoch_info epoch_info_of_order(const struct ferry_reader *r)
{
	uint64_t nb = batches_of(r, r->order_n);

	return (struct ferry_epoch_info){
		.epoch = r->order_epoch,
		.samples = r->pad ? nb * r->batch_size : r->order_n,
		.real_samples = r->order_n,
		.batches = nb,
		.shard_id = (int)r->order_shard,
	};
}

static void free_batch(struct ferry_reader *r, struct ferry_batch *b)
{
	struct ferry__device *dev = r->dev;

	if (b->mem)
		dev->ops->mem_free(dev, b->mem);
	if (b->ev)
		dev->ops->event_destroy(dev, b->ev);
	if (b->stream)
		dev->ops->stream_destroy(dev, b->stream);
	for (unsigned i = 0; b->slots && i < r->batch_size; i++)
		free(b->slots[i].msg);
	free(b->slots);
	free(b->out);
	free(b->msg);
	free(b->skip_msg);
	free(b);
}

static int new_batch(struct ferry_reader *r, struct ferry_batch **out)
{
	struct ferry__device *dev = r->dev;
	struct ferry_batch *b = calloc(1, sizeof(*b));
	struct ferry_batch **all = realloc(r->all, (r->nall + 1) * sizeof(*all));
	int rc = -ENOMEM;

	if (all)
		r->all = all;
	if (!b || !all)
		goto fail;
	b->r = r;
	b->slots = calloc(r->batch_size, sizeof(*b->slots));
	b->out = calloc(r->batch_size, sizeof(*b->out));
	if (!b->slots || !b->out)
		goto fail;
	if ((rc = dev->ops->event_create(dev, &b->ev)) < 0 ||
	    (rc = dev->ops->stream_create(dev, &b->stream)) < 0)
		goto fail;
	r->all[r->nall++] = b;
	*out = b;
	return 0;
fail:
	if (b)
		free_batch(r, b);
	return ferry__fail(rc, "reader: cannot create a batch");
}

static int take_batch(struct ferry_reader *r, struct ferry_batch **out)
{
	if (r->free_list) {
		*out = r->free_list;
		r->free_list = (*out)->next;
		return 0;
	}
	return new_batch(r, out);
}

static void fill_slots(struct ferry_reader *r, struct ferry_batch *b)
{
	uint64_t begin = r->next_index * r->batch_size;
	uint64_t real = r->order_n - begin < r->batch_size ? r->order_n - begin : r->batch_size;

	b->nslots = r->pad ? r->batch_size : (unsigned)real;
	for (unsigned i = 0; i < b->nslots; i++) {
		int pad = i >= real;
		slot_reset(&b->slots[i], r->order[pad ? r->order_n - 1 : begin + i], pad);
	}
}

static void enqueue(struct ferry_reader *r, struct ferry_batch *b)
{
	b->next = NULL;
	if (r->queue_tail)
		r->queue_tail->next = b;
	else
		r->queue_head = b;
	r->queue_tail = b;
	r->queued++;
}

static struct ferry_batch *dequeue(struct ferry_reader *r)
{
	struct ferry_batch *b = r->queue_head;

	r->queue_head = b->next;
	if (!r->queue_head)
		r->queue_tail = NULL;
	r->queued--;
	b->next = NULL;
	return b;
}

/* Schedules the batch at the cursor. Returns 1, 0 when the requested epochs
 * are all scheduled, or a negative code. */
static int schedule_one(struct ferry_reader *r)
{
	struct ferry_batch *b = NULL;
	int rc;

	if (r->epochs && r->next_epoch >= r->epochs)
		return 0;
	prepare_order(r, r->next_epoch);
	if ((rc = take_batch(r, &b)) < 0)
		return rc;
	fill_slots(r, b);
	b->epoch = r->next_epoch;
	b->index = r->next_index;
	b->info = epoch_info_of_order(r);
	b->error = b->skip_error = 0;
	free(b->msg);
	free(b->skip_msg);
	b->msg = b->skip_msg = NULL;
	b->state = BATCH_LOADING;
	enqueue(r, b);
	if (++r->next_index == b->info.batches) {
		r->next_epoch++;
		r->next_index = 0;
	}
	r->loading++;
	rc = ferry__pool_submit(r->pool, load_batch_task, b);
	if (rc < 0) {
		r->loading--;
		b->state = BATCH_READY;
		b->error = rc;
		b->msg = strdup("reader: cannot queue a batch load");
	}
	return 1;
}

/* Schedules until n batches are queued (or the epochs end). */
static int top_up(struct ferry_reader *r, unsigned n)
{
	while (r->queued < n) {
		int rc = schedule_one(r);
		if (rc <= 0)
			return rc;
	}
	return 0;
}

static void recycle_locked(struct ferry_reader *r, struct ferry_batch *b)
{
	b->state = BATCH_FREE;
	b->next = r->free_list;
	r->free_list = b;
}

static void account_locked(struct ferry_reader *r, const struct ferry_batch *b)
{
	r->stats.bytes_read += b->bytes_read;
	r->stats.files_skipped += b->skipped;
	if (b->error)
		return;
	r->stats.samples += b->real;
	r->stats.bytes_delivered += b->bytes_delivered;
	r->stats.batches++;
	r->info = b->info;
}

/* Waits for a batch to finish loading, until deadline (0: no deadline).
 * Returns 0 or -ETIMEDOUT. */
static int wait_loaded(struct ferry_reader *r, const struct timespec *deadline)
{
	if (!deadline) {
		pthread_cond_wait(&r->loaded, &r->lock);
		return 0;
	}
	return -pthread_cond_timedwait(&r->loaded, &r->lock, deadline);
}

/* Takes the oldest batch once it has loaded; NULL at the end. Several callers
 * may wait at once: each takes a different batch. */
static int pop_loaded_locked(struct ferry_reader *r, struct ferry_batch **out,
			     const struct timespec *deadline)
{
	*out = NULL;
	for (;;) {
		int rc = top_up(r, r->depth + 1);
		if (rc < 0 || !r->queue_head)
			return rc;
		if (r->queue_head->state != BATCH_LOADING)
			break;
		if (wait_loaded(r, deadline) == -ETIMEDOUT)
			return -ETIMEDOUT;
	}
	*out = dequeue(r);
	return top_up(r, r->depth);
}

/* Notes what an epoch delivered; a skipped batch that ends an epoch in which
 * nothing was delivered is an error, or a reader of bad files would spin. */
static int note_epoch_progress(struct ferry_reader *r, const struct ferry_batch *b)
{
	if (b->epoch != r->consume_epoch || !r->consume_started) {
		r->consume_epoch = b->epoch;
		r->consume_started = 1;
		r->consume_delivered = 0;
	}
	r->consume_delivered += b->nout;
	if (b->nout || b->index + 1 < b->info.batches || r->consume_delivered)
		return 0;
	return ferry__fail(b->skip_error ? b->skip_error : -FERRY_EFORMAT,
			   "reader: epoch %llu delivered no sample: every file was skipped (the "
			   "last: %s)", (unsigned long long)b->epoch,
			   b->skip_msg ? b->skip_msg : "no message");
}

/* Hands b's error to the caller and recycles b. Lock held on entry, not on return. */
static int return_error_unlock(struct ferry_reader *r, struct ferry_batch *b)
{
	int rc = b->error;
	char *msg = b->msg;
	b->msg = NULL;
	recycle_locked(r, b);
	pthread_mutex_unlock(&r->lock);
	ferry__fail(rc, "%s", msg ? msg : ferry_strerror(rc));
	free(msg);
	return ferry__fail_subject(rc, r->name);
}

static int next_batch(ferry_reader *r, ferry_batch **out, const struct timespec *deadline)
{
	struct ferry_batch *b;
	int rc;

	*out = NULL;
	pthread_mutex_lock(&r->lock);
	for (;;) {
		rc = pop_loaded_locked(r, &b, deadline);
		if (!b)
			break;
		account_locked(r, b);
		if (b->error)
			return return_error_unlock(r, b);
		rc = note_epoch_progress(r, b);
		if (b->nout == 0) {  /* every file of it was skipped */
			recycle_locked(r, b);
			if (rc < 0)
				break;
			continue;
		}
		b->state = BATCH_HELD;
		*out = b;
		break;
	}
	pthread_mutex_unlock(&r->lock);
	if (rc < 0)
		return rc == -ETIMEDOUT ? rc : ferry__fail_subject(rc, r->name);
	return *out ? 0 : ferry__fail(-FERRY_EEND, "%s: no more batches", r->name);
}

int ferry_reader_next(ferry_reader *r, ferry_batch **out)
{
	return next_batch(r, out, NULL);
}

int ferry_reader_next_timeout(ferry_reader *r, ferry_batch **out, int timeout_ms)
{
	struct timespec deadline;

	if (timeout_ms < 0)
		return next_batch(r, out, NULL);
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	return next_batch(r, out, &deadline);
}

/* ---- batches ---- */

unsigned ferry_batch_size(const ferry_batch *b)
{
	return b->nout;
}

int ferry_batch_sample(const ferry_batch *b, unsigned i, struct ferry_sample *out)
{
	const struct slot *s, *data;

	if (i >= b->nout)
		return ferry__fail(-EINVAL, "batch: sample %u of %u", i, b->nout);
	s = &b->slots[b->out[i]];
	data = s->is_padding ? &b->slots[s->alias] : s;
	memset(out, 0, sizeof(*out));
	out->data = b->mem + data->offset;
	out->dtype = data->h.dtype;
	out->ndim = data->rg.ndim;
	memcpy(out->shape, data->rg.shape, sizeof(int64_t) * (size_t)data->rg.ndim);
	out->nbytes = data->nbytes;
	out->path = b->r->ds.paths[s->file];
	out->is_padding = s->is_padding;
	return 0;
}

int ferry_batch_position(const ferry_batch *b, uint64_t *epoch, uint64_t *index)
{
	if (epoch)
		*epoch = b->epoch;
	if (index)
		*index = b->index;
	return 0;
}

int ferry_batch_wait(ferry_batch *b)
{
	struct ferry__device *dev = b->r->dev;
	return dev->ops->event_sync(dev, b->ev);
}

int ferry_batch_stream_wait(ferry_batch *b, void *cuda_stream)
{
	struct ferry__device *dev = b->r->dev;
	return dev->ops->native_stream_wait(dev, cuda_stream, b->ev);
}

void ferry_batch_release(ferry_batch *b)
{
	struct ferry_reader *r;

	if (!b)
		return;
	r = b->r;
	pthread_mutex_lock(&r->lock);
	if (b->state == BATCH_HELD)
		recycle_locked(r, b);
	pthread_mutex_unlock(&r->lock);
}

/* ---- the reader ---- */

int ferry_reader_epoch_info(ferry_reader *r, struct ferry_epoch_info *out)
{
	pthread_mutex_lock(&r->lock);
	if (r->stats.batches == 0) {
		prepare_order(r, 0);
		r->info = epoch_info_of_order(r);
	}
	*out = r->info;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int ferry_reader_stats(ferry_reader *r, struct ferry_reader_stats *out)
{
	pthread_mutex_lock(&r->lock);
	*out = r->stats;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

static int check_limit(const char *name, unsigned long v, unsigned long max)
{
	if (v <= max)
		return 0;
	return ferry__fail(-FERRY_ECONFIG, "reader: %s %lu: expected at most %lu", name, v, max);
}

static int check_limits(const struct ferry_reader_config *cfg)
{
	int rc = check_limit("batch_size", cfg->batch_size, FERRY_BATCH_MAX);
	if (rc == 0)
		rc = check_limit("threads", cfg->threads, FERRY_THREADS_MAX);
	if (rc == 0)
		rc = check_limit("prefetch_depth", cfg->prefetch_depth, FERRY_PREFETCH_MAX);
	return rc;
}

static int apply_config(struct ferry_reader *r, const struct ferry_reader_config *cfg)
{
	int rc = ferry__settings_shard(cfg->shard_id, cfg->num_shards, &r->shard, &r->nshards);

	if (rc < 0)
		return rc;
	if ((rc = ferry__roi_spec_from_config(cfg, &r->roi)) < 0)
		return rc;
	if (cfg->on_error != FERRY_ON_ERROR_STOP && cfg->on_error != FERRY_ON_ERROR_SKIP)
		return ferry__fail(-FERRY_ECONFIG, "reader: on_error must be stop or skip");
	if ((rc = check_limits(cfg)) < 0)
		return rc;
	r->batch_size = cfg->batch_size ? cfg->batch_size : 1;
	r->threads = cfg->threads ? cfg->threads : r->ld->threads;
	r->depth = cfg->prefetch_depth ? cfg->prefetch_depth : 2;
	r->epochs = cfg->epochs;
	r->seed = cfg->seed;
	r->stick = !!cfg->stick_to_shard;
	r->pad = !!cfg->pad_last_batch;
	r->shuffle = !!cfg->random_shuffle;
	r->cache_on = !cfg->no_header_cache;
	r->on_error = cfg->on_error;
	r->fill_value = cfg->fill_value;
	return 0;
}

static int allocate_tables(struct ferry_reader *r)
{
	r->cache = calloc(r->ds.n, sizeof(*r->cache));
	r->order = malloc((r->ds.n / r->nshards + 1) * sizeof(*r->order));
	if (!r->cache || !r->order)
		return ferry__fail(-ENOMEM, "reader: out of memory for %zu files", r->ds.n);
	return 0;
}

/* What the reader's messages call its dataset: its directory or list. */
static const char *dataset_name(const struct ferry_reader_config *cfg)
{
	return cfg->root ? cfg->root : cfg->file_list ? cfg->file_list : "reader";
}

int ferry_reader_open(ferry_ctx *ctx, const struct ferry_reader_config *cfg, ferry_reader **out)
{
	struct ferry_reader *r;
	int rc;

	*out = NULL;
	if (!ctx || !cfg)
		return ferry__fail(-EINVAL, "reader: no context or no config");
	r = calloc(1, sizeof(*r));
	if (!r)
		return ferry__fail(-ENOMEM, "%s: reader: out of memory", dataset_name(cfg));
	r->ctx = ctx;
	r->ld = &ctx->ld;
	r->dev = ctx->ld.dev;
	r->name = strdup(dataset_name(cfg));
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->cache_lock, NULL);
	pthread_condattr_t monotonic;
	pthread_condattr_init(&monotonic);
	pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
	pthread_cond_init(&r->loaded, &monotonic);
	pthread_condattr_destroy(&monotonic);
	rc = r->name ? apply_config(r, cfg) : -ENOMEM;
	if (rc == 0)
		rc = ferry__dataset_list(cfg, &r->ds);
	if (rc == 0 && r->ds.n < r->nshards)
		rc = ferry__fail(-FERRY_ECONFIG, "reader: %zu files cannot make %u shards", r->ds.n,
				 r->nshards);
	if (rc == 0)
		rc = allocate_tables(r);
	if (rc == 0)
		rc = ferry__pool_create(r->threads, &r->pool);
	if (rc < 0) {
		ferry_reader_close(r);
		return ferry__fail_subject(rc, dataset_name(cfg));
	}
	*out = r;
	return 0;
}

int ferry_reader_close(ferry_reader *r)
{
	if (!r)
		return 0;
	pthread_mutex_lock(&r->lock);
	while (r->loading)
		pthread_cond_wait(&r->loaded, &r->lock);
	pthread_mutex_unlock(&r->lock);
	if (r->pool)
		ferry__pool_destroy(r->pool);
	for (unsigned i = 0; i < r->nall; i++)
		free_batch(r, r->all[i]);
	free(r->all);
	for (size_t i = 0; r->cache && i < r->ds.n; i++)
		free(r->cache[i]);
	free(r->cache);
	free(r->order);
	free(r->name);
	ferry__dataset_free(&r->ds);
	pthread_cond_destroy(&r->loaded);
	pthread_mutex_destroy(&r->cache_lock);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return 0;
}
