/*
 * The pipeline: a window of batches in flight and the IO threads that fill
 * them, with no barrier at batch boundaries.
 *
 * The caller's thread only schedules batches (which samples, in which order):
 * each goes into the work list with one item, its plan, so that the thread
 * consuming batches does no per-sample work (planning there cost 40% of the
 * caller's CPU at 32 samples a batch). IO threads take items from the list in
 * order: a batch's plan (from the header cache, probing the files it lacks),
 * the probes, then its fetch items. A
 * thread takes a run of PACK items of consecutive batches at once (one
 * staging buffer, one copy per batch), so a batch of one small file costs
 * neither its own buffer nor its own event. The thread that finishes the last
 * item of a batch's phase moves it on: probes to the finished plan, fetches
 * to "loaded" (or, when a file changed under a cached header, to a new plan).
 * The window holds enough batches for every IO thread to have samples in
 * flight, within a budget of batch memory: small batches are many at once,
 * large ones few.
 */
#include "reader/reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* Samples in flight the window aims at, per IO thread: 4 MiB of samples, but
 * no fewer than 64 nor more than 256. Small samples need many in flight (16
 * KiB, 256 rather than 64: batch 4 1.2-1.5 times as fast on two H100s, batch
 * 32 1.1-1.8; 128 less, 1024 no more); at 128 KiB 256 gained nothing beyond
 * noise on the H100 and cost the host device 30-45% and 3 times the memory
 * (design.md, "The pipeline"). */
#define SAMPLES_PER_THREAD_MIN 64
#define SAMPLES_PER_THREAD_MAX 256
#define BYTES_PER_THREAD (4ull << 20)
#define AUTO_DEPTH 2                  /* batches ahead at least, when the config names no depth */
#define WINDOW_BYTES (256ull << 20)   /* batch memory the window may hold */
#define MAX_GANG 256                  /* PACK items one thread takes at once */
#define MAX_REPLANS 3                 /* plans of one batch before a changing file is an error */

/* ---- batch objects ---- */

static void free_batch(struct ferry_reader *r, struct ferry_batch *b)
{
	if (b->mem)
		r->dev->ops->mem_free(r->dev, b->mem);
	for (unsigned i = 0; b->slots && i < r->slots_cap; i++)
		free(b->slots[i].msg);
	free(b->slots);
	free(b->samples);
	free(b->out);
	free(b->items);
	free(b->msg);
	free(b->skip_msg);
	free(b);
}

static int new_batch(struct ferry_reader *r, struct ferry_batch **out)
{
	struct ferry_batch *b = calloc(1, sizeof(*b));
	struct ferry_batch **all = realloc(r->all, (r->nall + 1) * sizeof(*all));
	if (all)
		r->all = all;
	if (b) {
		b->r = r;
		b->slots = calloc(r->slots_cap, sizeof(*b->slots));
		b->samples = calloc(r->slots_cap, sizeof(*b->samples));
		b->out = calloc(r->slots_cap, sizeof(*b->out));
	}
	if (!b || !all || !b->slots || !b->samples || !b->out) {
		if (b)
			free_batch(r, b);
		return ferry__fail(-ENOMEM, "%s: cannot create a batch", r->name);
	}
	r->all[r->nall++] = b;
	*out = b;
	return 0;
}

static int take_batch(struct ferry_reader *r, struct ferry_batch **out)
{
	if (!r->free_list)
		return new_batch(r, out);
	*out = r->free_list;
	r->free_list = (*out)->next;
	return 0;
}

/* Slot s is sample: a file, or (rows) a file's row. */
static void reset_slot(const struct ferry_reader *r, struct slot *s, uint64_t sample)
{
	free(s->msg);
	memset(s, 0, sizeof(*s));
	s->file = sample;
	s->row = -1;
	if (r->rows)
		ferry__rows_locate(r, sample, &s->file, &s->row);
}

/* Clears what the batch's last use left: errors, counters, tickets. A batch
 * that failed or delivered nothing went back without a wait for its copies:
 * they must land before its memory is used again. */
static void reset_batch(struct ferry_reader *r, struct ferry_batch *b)
{
	const struct ferry__lanes *lanes = r->ld->lanes;
	ferry__wait_copies(b);
	b->error = b->skip_error = 0;
	free(b->msg);
	free(b->skip_msg);
	b->msg = b->skip_msg = NULL;
	b->bytes_read = b->skipped = b->replans = 0;
	b->files_buffered = b->files_direct = b->files_mapped = 0;
	b->nitems = b->nout = 0;
	for (unsigned i = 0; i < ferry__lanes_count(lanes); i++)
		b->tickets[i] = (struct ferry__ticket){ .stg = ferry__lanes_get(lanes, i) };
}

/* ---- the sample order (the caller's thread, under the lock) ---- */

static uint64_t batches_of(const struct ferry_reader *r, uint64_t samples)
{
	return (samples + r->batch_size - 1) / r->batch_size;
}

/* The shard [begin, end) in order, or permuted by (seed, epoch). */
static void order_shard(struct ferry_reader *r, uint64_t begin, uint64_t epoch)
{
	for (uint64_t i = 0; i < r->order_n; i++)
		r->order[i] = begin + i;
	if (r->shuffle)
		ferry__shuffle(r->order, r->order_n, r->seed, epoch);
}

/* The slice [begin, end) of the whole dataset permuted by (seed, epoch):
 * every rank draws the same permutation, so the slices still partition it. */
static void order_dataset_slice(struct ferry_reader *r, uint64_t begin, uint64_t epoch)
{
	for (uint64_t i = 0; i < r->nsamples; i++)
		r->order[i] = i;
	ferry__shuffle(r->order, r->nsamples, r->seed, epoch);
	memmove(r->order, r->order + begin, r->order_n * sizeof(*r->order));
}

/* Makes r->order the sample order of epoch. */
static void prepare_order(struct ferry_reader *r, uint64_t epoch)
{
	uint64_t begin, end;
	if (r->order_valid && r->order_epoch == epoch)
		return;
	r->order_shard = ferry__epoch_shard(r->shard, r->nshards, r->stick, epoch);
	ferry__shard_range(r->nsamples, r->order_shard, r->nshards, &begin, &end);
	r->order_n = end - begin;
	if (r->shuffle_all)
		order_dataset_slice(r, begin, epoch);
	else
		order_shard(r, begin, epoch);
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

/* Notes the batch's samples; its plan item makes their slots (set_slots), on
 * an IO thread: a slot is 1.5 KiB to clear, and this runs under the lock. */
static void note_samples(struct ferry_reader *r, struct ferry_batch *b)
{
	uint64_t begin = r->next_index * r->batch_size;
	uint64_t real = r->order_n - begin < r->batch_size ? r->order_n - begin : r->batch_size;
	b->nslots = (unsigned)real;
	b->pad_asked = r->pad ? r->batch_size - (unsigned)real : 0;
	memcpy(b->samples, r->order + begin, real * sizeof(*b->samples));
}

/* Makes b's slots from its samples: its ITEM_PLAN's first step (a batch
 * planned again, plan_again, keeps them). */
static void set_slots(struct ferry_reader *r, struct ferry_batch *b)
{
	for (unsigned i = 0; i < b->nslots; i++)
		reset_slot(r, &b->slots[i], b->samples[i]);
}

struct ferry_epoch_info ferry__pipeline_first_epoch(struct ferry_reader *r)
{
	prepare_order(r, r->consume_started ? r->consume_epoch : 0);
	return epoch_info_of_order(r);
}

/* ---- the work list (under the lock) ---- */

/* Puts b's items at the end of the list, waking no one. */
static void list_work(struct ferry_reader *r, struct ferry_batch *b)
{
	b->next_item = 0;
	b->items_left = b->nitems;
	b->work_next = NULL;
	if (r->work_tail)
		r->work_tail->work_next = b;
	else
		r->work_head = b;
	r->work_tail = b;
	r->work_items += b->nitems;
}

/* Wakes a waiting IO thread for each of n new items, no more: a broadcast
 * for a few items woke every waiting thread, most of them to find nothing
 * and wait again (at batches of 4 small files on 16 threads the kernel's
 * futex locks took a fifth of the H100's samples). */
static void wake_for(struct ferry_reader *r, uint64_t n)
{
	if (n >= r->idle) {
		if (r->idle)
			pthread_cond_broadcast(&r->work);
		return;
	}
	for (uint64_t i = 0; i < n; i++)
		pthread_cond_signal(&r->work);
}

/* Takes the next item of the list's first batch. */
static struct ferry_batch *take_item(struct ferry_reader *r, struct item *it)
{
	struct ferry_batch *b = r->work_head;
	*it = b->items[b->next_item++];
	r->work_items--;
	if (b->next_item == b->nitems) {
		r->work_head = b->work_next;
		if (!r->work_head)
			r->work_tail = NULL;
	}
	return b;
}

/* The kind of the list's next item. */
static enum item_kind next_kind(const struct ferry_reader *r)
{
	return r->work_head->items[r->work_head->next_item].kind;
}

/* Takes one item, a run of plans (of consecutive batches: one hold of the
 * lock for all of them), or a run of PACK items that fits a chunk, leaving
 * each other IO thread its share of what is there. */
static unsigned take_items(struct ferry_reader *r, struct ferry_batch **bs, struct item *items)
{
	unsigned share = r->work_items / r->threads, n = 1;
	uint64_t span;
	bs[0] = take_item(r, &items[0]);
	if (items[0].kind == ITEM_PLAN) {
		while (n < MAX_GANG && n <= share && r->work_head && next_kind(r) == ITEM_PLAN) {
			bs[n] = take_item(r, &items[n]);
			n++;
		}
		return n;
	}
	if (!ferry__item_packs(bs[0], &items[0]))
		return 1;
	span = ferry__item_span(bs[0], &items[0]);
	while (n < MAX_GANG && n <= share && r->work_head) {
		struct ferry_batch *b = r->work_head;
		const struct item *next = &b->items[b->next_item];
		if (!ferry__item_packs(b, next) || span + ferry__item_span(b, next) > r->chunk)
			break;
		span += ferry__item_span(b, next);
		bs[n] = take_item(r, &items[n]);
		n++;
	}
	return n;
}

/* ---- phases ---- */

/* What an IO thread's unlocked steps leave for the shared state, settled at
 * its next hold of the lock: one hold for all of them, not one per batch (at
 * batches of 4 small files, 9 holds a batch made the lock the limit on 16
 * threads). Each batch a thread handles ends in exactly one of the lists. */
struct handoff {
	struct ferry_batch *listed[MAX_GANG]; /* new items for the work list */
	struct ferry_batch *ready[MAX_GANG];  /* loaded or failed */
	int ready_rc[MAX_GANG];
	unsigned nlisted, nready;
};

/* b has loaded, or failed with rc: it goes to the caller once h is settled. */
static void batch_done(struct ferry_batch *b, int rc, struct handoff *h)
{
	struct ferry_reader *r = b->r;
	for (unsigned i = 0; i < b->nslots; i++) {
		ferry__slot_close(r, &b->slots[i]); /* left open when the plan failed */
		b->bytes_read += b->slots[i].stats.bytes_read;
		b->files_buffered += b->slots[i].stats.files_buffered;
		b->files_direct += b->slots[i].stats.files_direct;
		b->files_mapped += b->slots[i].stats.files_mapped;
	}
	if (rc < 0 && !b->msg)
		b->msg = strdup(ferry_last_error());
	h->ready[h->nready] = b;
	h->ready_rc[h->nready++] = rc;
}

/* After a plan step: its items go to the work list, or b is done. */
static void continue_with(struct ferry_batch *b, int rc, struct handoff *h)
{
	if (rc < 0 || b->nitems == 0) {
		batch_done(b, rc, h);
		return;
	}
	b->phase = b->items[0].kind;
	h->listed[h->nlisted++] = b;
}

/* Whether a fetch left a stale slot (a file changed under its cached header)
 * or a skipped one: either way the batch is planned and fetched again. */
static int needs_new_plan(struct ferry_batch *b, uint64_t skipped_before)
{
	int stale = 0;
	for (unsigned i = 0; i < b->nslots; i++)
		stale |= b->slots[i].stale;
	return stale || b->skipped != skipped_before;
}

/* Plans b again, once its copies have landed: the new plan's copies must not
 * race the old ones into the same memory. */
static void plan_again(struct ferry_batch *b, struct handoff *h)
{
	int rc = ferry__wait_copies(b);
	if (rc == 0 && ++b->replans > MAX_REPLANS)
		rc = ferry__fail(-FERRY_ECHANGED, "%s: files changed under every one of %d plans "
				 "of a batch", b->r->name, MAX_REPLANS);
	if (rc < 0)
		batch_done(b, rc, h);
	else
		continue_with(b, ferry__plan(b), h);
}

/* The fetch items are done: b is loaded (its padding filled), failed, or
 * planned again. */
static void after_fetch(struct ferry_batch *b, struct handoff *h)
{
	uint64_t skipped = b->skipped;
	int rc = ferry__settle(b);
	if (rc == 0 && needs_new_plan(b, skipped)) {
		plan_again(b, h);
		return;
	}
	if (rc == 0 && b->npad)
		rc = ferry__fill_padding(b);
	if (rc == 0)
		ferry__launch_copies(b);
	batch_done(b, rc, h);
}

/* The last item of b's phase finished on this thread: move b on. */
static void phase_done(struct ferry_batch *b, struct handoff *h)
{
	if (b->phase == ITEM_PROBE)
		continue_with(b, ferry__finish_plan(b), h);
	else if (b->phase == ITEM_FETCH)
		after_fetch(b, h);
}

/* Settles h (lock held): lists new items, waking a thread for each but the
 * one this thread takes next, and hands ready batches to the caller. The
 * caller takes batches in order and waits only for the queue's head, so it
 * is woken only when that one is ready (at batches of 4 small files most
 * batches finish while an earlier one still loads). */
static void settle(struct ferry_reader *r, struct handoff *h)
{
	uint64_t items_before = r->work_items;
	int head_ready = 0;
	for (unsigned i = 0; i < h->nlisted; i++)
		list_work(r, h->listed[i]);
	for (unsigned i = 0; i < h->nready; i++) {
		struct ferry_batch *b = h->ready[i];
		b->error = h->ready_rc[i];
		b->state = BATCH_READY;
		if (b->error == 0 && b->lay.bytes > r->batch_bytes)
			r->batch_bytes = b->lay.bytes;
		head_ready |= b == r->queue_head;
	}
	if (r->work_items > items_before + 1)
		wake_for(r, r->work_items - items_before - 1);
	if (head_ready)
		pthread_cond_broadcast(&r->loaded);
	h->nlisted = h->nready = 0;
}

/* ---- the IO threads ---- */

static void run_items(struct ferry_batch **bs, struct item *items, unsigned n, struct handoff *h)
{
	if (items[0].kind == ITEM_PLAN) {
		for (unsigned j = 0; j < n; j++) {
			set_slots(bs[j]->r, bs[j]);
			continue_with(bs[j], ferry__plan(bs[j]), h);
		}
	}
	else if (items[0].kind == ITEM_PROBE)
		ferry__probe(bs[0], &bs[0]->slots[items[0].first]);
	else
		ferry__fetch(bs, items, n);
}

/* Counts the items finished (no lock: the thread that counts a batch's last
 * item down sees what the others wrote into it, and alone moves it on);
 * returns the batches whose phase ended, moved to the front of bs. */
static unsigned finish_items(struct ferry_batch **bs, const struct item *items, unsigned n)
{
	unsigned ended = 0;
	for (unsigned j = 0; j < n; j++)
		if (items[j].kind != ITEM_PLAN &&
		    atomic_fetch_sub_explicit(&bs[j]->items_left, 1, memory_order_acq_rel) == 1)
			bs[ended++] = bs[j];
	return ended;
}

/* Takes items, runs them and the next step of the batches whose phase they
 * ended with the lock released, and settles what they left at the next hold
 * of the lock: one hold an iteration (at batches of 4 small files, a second
 * hold when a phase ended waited 0.29 s in three epochs on an H100). */
static void worker(void *arg)
{
	struct ferry_reader *r = arg;
	struct ferry_batch *bs[MAX_GANG];
	struct item items[MAX_GANG];
	struct handoff h = { .nlisted = 0 };
	pthread_mutex_lock(&r->lock);
	for (;;) {
		settle(r, &h);
		while (!r->closing && !r->work_head) {
			r->idle++;
			pthread_cond_wait(&r->work, &r->lock);
			r->idle--;
		}
		if (r->closing)
			break;
		unsigned n = take_items(r, bs, items);
		pthread_mutex_unlock(&r->lock);
		run_items(bs, items, n, &h);
		unsigned ended = finish_items(bs, items, n);
		for (unsigned j = 0; j < ended; j++)
			phase_done(bs[j], &h);
		pthread_mutex_lock(&r->lock);
	}
	r->workers--;
	pthread_cond_broadcast(&r->loaded);
	pthread_mutex_unlock(&r->lock);
}

int ferry__pipeline_start(struct ferry_reader *r)
{
	int rc = ferry__pool_create(r->threads, &r->pool);
	for (unsigned i = 0; rc == 0 && i < r->threads; i++) {
		pthread_mutex_lock(&r->lock);
		r->workers++;
		pthread_mutex_unlock(&r->lock);
		if ((rc = ferry__pool_submit(r->pool, worker, r)) < 0) {
			pthread_mutex_lock(&r->lock);
			r->workers--;
			pthread_mutex_unlock(&r->lock);
		}
	}
	return rc;
}

void ferry__pipeline_stop(struct ferry_reader *r)
{
	pthread_mutex_lock(&r->lock);
	r->closing = 1;
	pthread_cond_broadcast(&r->work);
	pthread_mutex_unlock(&r->lock);
	ferry__pool_destroy(r->pool); /* joins the IO threads, each done with its items */
	r->pool = NULL;
	for (unsigned i = 0; i < r->nall; i++)
		ferry__wait_copies(r->all[i]); /* no copy may land in freed memory */
}

void ferry__pipeline_free(struct ferry_reader *r)
{
	for (unsigned i = 0; i < r->nall; i++) {
		for (unsigned k = 0; k < r->all[i]->nslots; k++)
			ferry__slot_close(r, &r->all[i]->slots[k]);
		free_batch(r, r->all[i]);
	}
	free(r->all);
	r->all = NULL;
	r->nall = 0;
}

/* ---- scheduling and taking batches (the caller's threads, under the lock) ---- */

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

/* b failed, or has nothing to fetch, before any IO thread saw it. */
static void ready_at_once(struct ferry_batch *b, int rc)
{
	b->error = rc;
	if (rc < 0)
		b->msg = strdup(ferry_last_error());
	b->state = BATCH_READY;
}

/* Puts b in the work list with the item that plans it on an IO thread (top_up
 * wakes the threads once for all it scheduled). */
static void start_batch(struct ferry_reader *r, struct ferry_batch *b)
{
	b->state = BATCH_LOADING;
	int rc = ferry__plan_later(b);
	b->phase = ITEM_PLAN;
	if (rc < 0 || b->nitems == 0)
		ready_at_once(b, rc);
	else
		list_work(r, b);
}

/* The samples in flight each IO thread aims at, for batches of batch_bytes. */
static uint64_t samples_per_thread(const struct ferry_reader *r, uint64_t batch_bytes)
{
	uint64_t sample_bytes = batch_bytes / r->batch_size;
	uint64_t n = BYTES_PER_THREAD / (sample_bytes ? sample_bytes : 1);
	if (n < SAMPLES_PER_THREAD_MIN)
		return SAMPLES_PER_THREAD_MIN;
	return n > SAMPLES_PER_THREAD_MAX ? SAMPLES_PER_THREAD_MAX : n;
}

unsigned ferry__window(const struct ferry_reader *r, uint64_t batch_bytes)
{
	uint64_t least = (r->depth ? r->depth : AUTO_DEPTH) + 1, w = least;
	if (!r->depth && batch_bytes) {
		uint64_t samples = samples_per_thread(r, batch_bytes) * r->threads;
		uint64_t by_samples = (samples + r->batch_size - 1) / r->batch_size;
		uint64_t by_memory = WINDOW_BYTES / batch_bytes;
		w = by_samples < by_memory ? by_samples : by_memory;
	}
	if (w < least)
		w = least;
	return w > FERRY_PREFETCH_MAX ? FERRY_PREFETCH_MAX : (unsigned)w;
}

/* The window now: as large as the largest batch seen; until a batch has
 * loaded its size is unknown, and the window is the least. */
static unsigned window(const struct ferry_reader *r)
{
	return ferry__window(r, r->batch_bytes);
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
	reset_batch(r, b);
	note_samples(r, b);
	b->epoch = r->next_epoch;
	b->index = r->next_index;
	b->info = epoch_info_of_order(r);
	enqueue(r, b);
	if (++r->next_index == b->info.batches) {
		r->next_epoch++;
		r->next_index = 0;
	}
	start_batch(r, b);
	return 1;
}

/* Schedules until the window is full (or the epochs end). An automatic
 * window is refilled once half of it has gone: batches then reach the IO
 * threads many at a time, and runs of small ones share staging buffers. */
static int top_up(struct ferry_reader *r)
{
	unsigned want = window(r);
	uint64_t items_before = r->work_items;
	int rc = 0;
	if (!r->depth && r->queued > want / 2)
		return 0;
	while (r->queued < want && !r->closing && (rc = schedule_one(r)) > 0)
		;
	wake_for(r, r->work_items - items_before);
	return rc < 0 ? rc : 0;
}

/* Waits for a batch to finish loading, until deadline (NULL: no deadline).
 * Returns 0 or -ETIMEDOUT. */
static int wait_loaded(struct ferry_reader *r, const struct timespec *deadline)
{
	if (!deadline) {
		pthread_cond_wait(&r->loaded, &r->lock);
		return 0;
	}
	return -pthread_cond_timedwait(&r->loaded, &r->lock, deadline);
}

/* Frees the batches the caller released since the last look (lock held). */
static void collect_returned(struct ferry_reader *r)
{
	struct ferry_batch *b = atomic_exchange(&r->returned, NULL), *next;
	for (; b; b = next) {
		next = b->next;
		ferry__pipeline_release(b);
	}
}

int ferry__pipeline_next(struct ferry_reader *r, struct ferry_batch **out,
			 const struct timespec *deadline)
{
	*out = NULL;
	collect_returned(r);
	for (;;) {
		int rc = top_up(r);
		if (rc < 0 || !r->queue_head)
			return rc;
		if (r->queue_head->state != BATCH_LOADING)
			break;
		if (wait_loaded(r, deadline) == -ETIMEDOUT)
			return -ETIMEDOUT;
	}
	*out = dequeue(r);
	r->taken_epoch = (*out)->epoch;
	r->taken_index = (*out)->index + 1;
	if (r->taken_index == (*out)->info.batches) {
		r->taken_epoch++;
		r->taken_index = 0;
	}
	return top_up(r);
}

int ferry__pipeline_resume(struct ferry_reader *r, const struct ferry_reader_state *st)
{
	if (st->fingerprint != r->fingerprint)
		return ferry__fail(-FERRY_ECONFIG, "%s: the resume state is of another dataset "
				   "listing or other settings (fingerprint %016llx, this reader's "
				   "%016llx)", r->name, (unsigned long long)st->fingerprint,
				   (unsigned long long)r->fingerprint);
	prepare_order(r, st->epoch);
	uint64_t batches = batches_of(r, r->order_n);
	if (st->index >= batches || (r->epochs && st->epoch >= r->epochs))
		return ferry__fail(-FERRY_ECONFIG, "%s: the resume state's batch %llu of epoch %llu "
				   "does not exist (%llu batches an epoch, %llu epochs)", r->name,
				   (unsigned long long)st->index, (unsigned long long)st->epoch,
				   (unsigned long long)batches, (unsigned long long)r->epochs);
	r->next_epoch = r->taken_epoch = st->epoch;
	r->next_index = r->taken_index = st->index;
	return 0;
}

void ferry__pipeline_return(struct ferry_batch *b)
{
	struct ferry_reader *r = b->r;
	if (!atomic_exchange(&b->held, 0))
		return; /* released already */
	struct ferry_batch *head = atomic_load(&r->returned);
	do
		b->next = head;
	while (!atomic_compare_exchange_weak(&r->returned, &head, b));
}

void ferry__pipeline_release(struct ferry_batch *b)
{
	atomic_store(&b->held, 0);
	b->state = BATCH_FREE;
	b->next = b->r->free_list;
	b->r->free_list = b;
}
