/* The public reader calls: opening, taking and describing batches, closing. */
#include "reader/reader.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* ---- taking batches ---- */

static void account_locked(struct ferry_reader *r, const struct ferry_batch *b)
{
	r->stats.bytes_read += b->bytes_read;
	r->stats.files_skipped += b->skipped;
	r->stats.files_buffered += b->files_buffered;
	r->stats.files_direct += b->files_direct;
	r->stats.files_mapped += b->files_mapped;
	if (b->error)
		return;
	r->stats.samples += b->real;
	r->stats.bytes_delivered += b->bytes_delivered;
	r->stats.batches++;
	r->info = b->info;
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
	ferry__pipeline_release(b);
	pthread_mutex_unlock(&r->lock);
	ferry__fail(rc, "%s", msg ? msg : ferry_strerror(rc));
	free(msg);
	return ferry__fail_subject(rc, r->name);
}

/* Takes the next batch with something to deliver (lock held). Returns 0 with
 * *out NULL at the end, or a negative code (the lock released when it is a
 * batch's error). */
static int take_loaded(struct ferry_reader *r, struct ferry_batch **out,
		       const struct timespec *deadline, int *unlocked)
{
	struct ferry_batch *b;
	for (;;) {
		int rc = ferry__pipeline_next(r, &b, deadline);
		*out = NULL;
		if (rc < 0 || !b)
			return rc;
		account_locked(r, b);
		if (b->error) {
			*unlocked = 1;
			return return_error_unlock(r, b);
		}
		rc = note_epoch_progress(r, b);
		if (b->nout) { /* padding needs an output to repeat */
			b->state = BATCH_HELD;
			atomic_store(&b->held, 1);
			*out = b;
			return 0;
		}
		ferry__pipeline_release(b); /* every file of it was skipped */
		if (rc < 0)
			return rc;
	}
}

/*
 * The file of b whose copy out of a mapping failed because it shrank (the
 * copy's error says -FERRY_ECHANGED, not which file): the first file copied
 * from a mapping whose path now has another identity or size, else the first
 * copied from a mapping; NULL when none was.
 */
static const char *shrunk_file(const struct ferry_batch *b)
{
	const char *first = NULL;
	for (unsigned i = 0; i < b->nslots; i++) {
		const struct slot *s = &b->slots[i];
		const char *path = b->r->ds.paths[s->file];
		struct ferry__file_id now;
		if (!s->stats.files_mapped)
			continue;
		if (ferry__io_path_id(path, &now) < 0 || now.ino != s->id.ino ||
		    now.dev != s->id.dev || now.size != s->id.size)
			return path;
		if (!first)
			first = path;
	}
	return first;
}

/* Hands out b once its copies have landed (they usually have). */
static int deliver(struct ferry_reader *r, struct ferry_batch *b)
{
	int rc = ferry__wait_copies(b);
	if (rc == 0)
		return 0;
	const char *shrunk = rc == -FERRY_ECHANGED ? shrunk_file(b) : NULL;
	if (shrunk)
		ferry__load_copy_failed(shrunk, rc);
	else
		ferry__fail(rc, "%s: copying a batch to the device failed: %s", r->name,
			    ferry_strerror(rc));
	pthread_mutex_lock(&r->lock);
	ferry__pipeline_release(b);
	pthread_mutex_unlock(&r->lock);
	return rc;
}

static int next_batch(ferry_reader *r, ferry_batch **out, const struct timespec *deadline)
{
	int unlocked = 0;
	pthread_mutex_lock(&r->lock);
	int rc = take_loaded(r, out, deadline, &unlocked);
	if (unlocked)
		return rc;
	pthread_mutex_unlock(&r->lock);
	if (rc < 0)
		return rc == -ETIMEDOUT ? rc : ferry__fail_subject(rc, r->name);
	if (!*out)
		return ferry__fail(-FERRY_EEND, "%s: no more batches", r->name);
	rc = deliver(r, *out);
	if (rc < 0)
		*out = NULL;
	return rc;
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
	return b->nout + b->npad;
}

/* Sample i: an output, or a padding row repeating the last output. */
int ferry_batch_sample(const ferry_batch *b, unsigned i, struct ferry_sample *out)
{
	if (i >= b->nout + b->npad)
		return ferry__fail(-EINVAL, "batch: sample %u of %u", i, b->nout + b->npad);
	int pad = i >= b->nout;
	const struct slot *s = &b->slots[b->out[pad ? b->nout - 1 : i]];
	memset(out, 0, sizeof(*out));
	out->data = b->mem + (pad ? b->pad_offset + (i - b->nout) * b->pad_stride : s->offset);
	out->dtype = s->h.dtype;
	const int64_t *shape = ferry__slot_shape(s, &out->ndim);
	memcpy(out->shape, shape, sizeof(int64_t) * (size_t)out->ndim);
	out->nbytes = s->nbytes;
	out->row = s->row;
	out->path = b->r->ds.paths[s->file];
	out->is_padding = pad;
	return 0;
}

/* Names two outputs of b that differ, for a ragged batch's message. */
static int ragged(const ferry_batch *b)
{
	const struct slot *first = &b->slots[b->out[0]];
	int n0, n;
	const int64_t *shape0 = ferry__slot_shape(first, &n0);
	for (unsigned k = 1; k < b->nout; k++) {
		const struct slot *s = &b->slots[b->out[k]];
		const int64_t *shape = ferry__slot_shape(s, &n);
		if (s->nbytes != first->nbytes || n != n0 ||
		    memcmp(shape, shape0, sizeof(int64_t) * (size_t)n))
			return ferry__fail(-FERRY_EMISMATCH, "%s: batch %llu cannot be stacked: "
					   "samples %s and %s differ in shape", b->r->name,
					   (unsigned long long)b->index, b->r->ds.paths[first->file],
					   b->r->ds.paths[s->file]);
	}
	return ferry__fail(-FERRY_EMISMATCH, "%s: batch cannot be stacked", b->r->name);
}

/* The stacked shape of a dense batch. */
static void stacked_shape(const ferry_batch *b, struct ferry_batch_shape *out)
{
	const struct ferry_batch_layout *l = &b->lay;
	out->dtype = l->dtype;
	out->ndim = l->ndim + 1;
	out->shape[0] = b->nout + b->npad;
	memcpy(out->shape + 1, l->shape, sizeof(int64_t) * (size_t)l->ndim);
	out->nbytes = l->sample_bytes * (b->nout + b->npad);
}

int ferry_batch_shape(const ferry_batch *b, struct ferry_batch_shape *out)
{
	memset(out, 0, sizeof(*out));
	if (!b->lay.dense)
		return ragged(b);
	stacked_shape(b, out);
	return 0;
}

int ferry_batch_describe(const ferry_batch *b, struct ferry_batch_info *out)
{
	memset(out, 0, sizeof(*out));
	out->epoch = b->epoch;
	out->index = b->index;
	out->data = b->mem;
	out->size = b->nout + b->npad;
	out->stacked = b->lay.dense;
	if (out->stacked)
		stacked_shape(b, &out->shape);
	return 0;
}

void *ferry_batch_data(const ferry_batch *b)
{
	return b->mem;
}

int ferry_batch_position(const ferry_batch *b, uint64_t *epoch, uint64_t *index)
{
	if (epoch)
		*epoch = b->epoch;
	if (index)
		*index = b->index;
	return 0;
}

/* A batch is handed out once its copies have landed: both waits are done. */
int ferry_batch_wait(ferry_batch *b)
{
	return 0;
}

int ferry_batch_stream_wait(ferry_batch *b, void *cuda_stream)
{
	return 0;
}

/* Without the reader's lock: the caller's thread takes it once a batch, in
 * ferry_reader_next, not twice. */
void ferry_batch_release(ferry_batch *b)
{
	if (b)
		ferry__pipeline_return(b);
}

/* ---- the reader ---- */

int ferry_reader_epoch_info(ferry_reader *r, struct ferry_epoch_info *out)
{
	pthread_mutex_lock(&r->lock);
	*out = r->stats.batches ? r->info : ferry__pipeline_first_epoch(r);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int ferry_reader_save_state(ferry_reader *r, struct ferry_reader_state *out)
{
	pthread_mutex_lock(&r->lock);
	*out = (struct ferry_reader_state){ .epoch = r->taken_epoch, .index = r->taken_index,
					    .fingerprint = r->fingerprint };
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* FNV-1a over bytes, continuing from h. */
static uint64_t fnv(uint64_t h, const void *bytes, size_t len)
{
	const unsigned char *p = bytes;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* A fingerprint of what decides which samples each batch holds. */
static uint64_t order_fingerprint(const struct ferry_reader *r)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint64_t v[] = { r->nsamples, r->batch_size, r->shard, r->nshards, (uint64_t)r->stick,
			 (uint64_t)r->pad, (uint64_t)r->shuffle, r->shuffle ? r->seed : 0,
			 (uint64_t)r->shuffle_all,
			 (uint64_t)r->rows };
	h = fnv(h, v, sizeof(v));
	for (size_t i = 0; i < r->ds.n; i++)
		h = fnv(h, r->ds.keys[i], strlen(r->ds.keys[i]) + 1);
	return h;
}

_Static_assert(offsetof(struct ferry_reader_stats, files_buffered) == FERRY_READER_STATS_MIN_SIZE,
	       "the first version of struct ferry_reader_stats ends where files_buffered starts");

int ferry_reader_stats(ferry_reader *r, struct ferry_reader_stats *out, size_t size)
{
	if (size < FERRY_READER_STATS_MIN_SIZE)
		return ferry__fail(-EINVAL, "ferry_reader_stats: size %zu is smaller than the "
				   "first version of the struct (%zu bytes)", size,
				   (size_t)FERRY_READER_STATS_MIN_SIZE);
	pthread_mutex_lock(&r->lock);
	struct ferry_reader_stats now = r->stats;
	pthread_mutex_unlock(&r->lock);
	memcpy(out, &now, size < sizeof(now) ? size : sizeof(now));
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
	if (rc == 0 && cfg->on_error != FERRY_ON_ERROR_STOP && cfg->on_error != FERRY_ON_ERROR_SKIP)
		rc = ferry__fail(-FERRY_ECONFIG, "reader: on_error must be stop or skip");
	if (rc == 0 && cfg->samples != FERRY_SAMPLES_FILES && cfg->samples != FERRY_SAMPLES_ROWS)
		rc = ferry__fail(-FERRY_ECONFIG, "reader: samples must be files or rows");
	if (rc == 0 && cfg->npz_key && cfg->samples == FERRY_SAMPLES_ROWS)
		rc = ferry__fail(-FERRY_ECONFIG, "reader: npz_key (a member of each archive) does not "
				 "take samples=rows");
	if (rc == 0 && cfg->npz_key && !*cfg->npz_key)
		rc = ferry__fail(-FERRY_ECONFIG, "reader: npz_key is empty");
	if (rc == 0 && cfg->random_shuffle && cfg->shuffle_dataset)
		rc = ferry__fail(-FERRY_ECONFIG, "reader: random_shuffle (each shard permuted) and "
				 "shuffle_dataset (the whole dataset permuted) exclude each other");
	return rc;
}

static int apply_config(struct ferry_reader *r, const struct ferry_reader_config *cfg)
{
	const struct ferry__loader *ld = r->ld;
	int rc = ferry__settings_shard(cfg->shard_id, cfg->num_shards, &r->shard, &r->nshards);
	if (rc == 0)
		rc = ferry__roi_spec_from_config(cfg, &r->roi);
	if (rc == 0)
		rc = check_limits(cfg);
	if (rc < 0)
		return rc;
	r->batch_size = cfg->batch_size ? cfg->batch_size : 1;
	r->threads = cfg->threads ? cfg->threads : ld->threads;
	r->depth = cfg->prefetch_depth; /* 0: the window sizes itself */
	r->epochs = cfg->epochs;
	r->seed = cfg->seed;
	r->stick = !!cfg->stick_to_shard;
	r->pad = !!cfg->pad_last_batch;
	r->shuffle = cfg->random_shuffle || cfg->shuffle_dataset;
	r->shuffle_all = !!cfg->shuffle_dataset;
	r->cache_on = !cfg->no_header_cache;
	if (cfg->npz_key && !(r->key = strdup(cfg->npz_key)))
		return ferry__fail(-ENOMEM, "out of memory copying npz_key");
	r->on_error = cfg->on_error;
	r->fill_value = cfg->fill_value;
	r->rows = cfg->samples == FERRY_SAMPLES_ROWS;
	r->chunk = ferry__staging_chunk_size(ferry__lanes_get(ld->lanes, 0));
	/* Packed reads are small: auto reads them buffered, as it does every small read. */
	r->host_staging = ld->io_ops->placement == FERRY__STAGE_PINNED;
	r->packable = r->host_staging && ld->direct != FERRY_DIRECT_ALWAYS;
	return 0;
}

static int allocate_cache(struct ferry_reader *r)
{
	r->cache = calloc(r->ds.n, sizeof(*r->cache));
	return r->cache ? 0 : ferry__fail(-ENOMEM, "reader: out of memory for %zu files", r->ds.n);
}

/* The order of an epoch's samples: a shard's, or (shuffle_all) the whole
 * dataset's permutation, the shard's slice of which is moved to its front. */
static int allocate_order(struct ferry_reader *r)
{
	uint64_t n = r->shuffle_all ? r->nsamples : r->nsamples / r->nshards + 1;
	r->order = malloc((n ? n : 1) * sizeof(*r->order));
	return r->order ? 0 : ferry__fail(-ENOMEM, "reader: out of memory for %llu samples",
					  (unsigned long long)r->nsamples);
}

/* What the reader's messages call its dataset: its directory or list. */
static const char *dataset_name(const struct ferry_reader_config *cfg)
{
	return cfg->root ? cfg->root : cfg->file_list ? cfg->file_list : "reader";
}

static void init_sync(struct ferry_reader *r)
{
	pthread_condattr_t monotonic;
	pthread_condattr_init(&monotonic);
	pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
	pthread_cond_init(&r->loaded, &monotonic);
	pthread_condattr_destroy(&monotonic);
	pthread_cond_init(&r->work, NULL);
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->retired_lock, NULL);
}

/* Everything after the config: the listing, tables, side stream, IO threads. */
static int open_dataset(struct ferry_reader *r, const struct ferry_reader_config *cfg)
{
	int rc = ferry__dataset_list(cfg, &r->ds);
	if (rc == 0)
		rc = allocate_cache(r);
	r->nsamples = r->ds.n;
	if (rc == 0 && r->rows)
		rc = ferry__rows_index(r);
	if (rc == 0 && r->nsamples < r->nshards)
		rc = ferry__fail(-FERRY_ECONFIG, "reader: %llu %s cannot make %u shards",
				 (unsigned long long)r->nsamples, r->rows ? "rows" : "files",
				 r->nshards);
	if (rc == 0)
		rc = allocate_order(r);
	/* A batch holds at most a shard's samples (padding rows are no slots). */
	uint64_t largest = (r->nsamples + r->nshards - 1) / r->nshards;
	r->slots_cap = largest < r->batch_size ? (unsigned)largest : r->batch_size;
	r->fingerprint = order_fingerprint(r);
	if (rc == 0 && cfg->resume)
		rc = ferry__pipeline_resume(r, cfg->resume);
	if (rc == 0)
		rc = r->dev->ops->stream_create(r->dev, &r->side);
	return rc == 0 ? ferry__pipeline_start(r) : rc;
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
	init_sync(r);
	rc = r->name ? apply_config(r, cfg) : -ENOMEM;
	if (rc == 0)
		rc = open_dataset(r, cfg);
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
	if (r->pool)
		ferry__pipeline_stop(r);
	ferry__pipeline_free(r);
	if (r->side)
		r->dev->ops->stream_destroy(r->dev, r->side);
	ferry__headers_free(r);
	free(r->order);
	free(r->row_start);
	free(r->key);
	free(r->name);
	ferry__dataset_free(&r->ds);
	pthread_cond_destroy(&r->loaded);
	pthread_cond_destroy(&r->work);
	pthread_mutex_destroy(&r->retired_lock);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return 0;
}
