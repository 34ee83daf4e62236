/*
 * `ferry bench`: the reader rows. The C reader as a user runs it:
 * ferry_reader_open over the dataset's files (in order, one shard, no
 * shuffle, prefetch_depth 0: the automatic window), then ferry_reader_next,
 * ferry_batch_wait, the batch taken as one stacked array (ferry_batch_shape,
 * ferry_batch_data; a ragged batch sample by sample) and ferry_batch_release,
 * until the run's limits. Warm runs measure the steady rate, as the
 * read-only ceiling's: the first batch (its latency from ferry_reader_open
 * is reported apart as first_batch_s) and those arriving within
 * --warmup-seconds after it (the window that was loading meanwhile lands in a
 * burst) are taken but not counted, and so are the first epochs of files
 * the zero-copy path maps (FERRY__MAPPED_MIN and larger), until one in which
 * every file was copied from a mapping (the registrar registers them over
 * these epochs, at FERRY_PIN_PACE's share of the time; the first epoch's own
 * rate is bench/pin_pace.sh's), or WARM_EPOCHS_MAX of them, or WARM_SECONDS_MAX
 * seconds (a pin budget too small for the files); the timing starts
 * there (and again while files are still read beside mappings:
 * read_beside_mappings) and ends at the last batch released. Cold runs read the files once, timed from
 * ferry_reader_open, as the cold read-only run. A run stops at seconds_limit
 * only once it has counted MIN_BATCHES batches (or at 4 x seconds_limit).
 * The CPU time is the process's over the same span (user + system, the
 * reader's IO threads included).
 *
 * --verify: every byte of every batch is copied back to the host
 * (ferry_copy_to_host, the stacked array in one copy) and compared with a
 * pread of its file's payload, found by the sample's path. It assumes files
 * in C order and the host's byte order, as ferry gen writes them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "base/base.h"
#include "context/context.h"
#include "load/load.h"

#define MIN_BATCHES 3 /* counted before seconds_limit may end a run */
/* A warm run's warm-up over mapped files, at most (still_registering). */
#define WARM_EPOCHS_MAX 256
#define WARM_SECONDS_MAX 10.0

/* A file of the dataset, for finding a sample's file by its path. */
struct by_path {
	const char *path;
	unsigned index;
};

struct verify {
	ferry_ctx *ctx;
	const struct ferry_bench_dataset *ds;
	struct by_path *files;  /* sorted by path */
	char *device_copy, *file_copy;
	size_t device_cap, file_cap;
	uint64_t samples;       /* checked */
	char message[256];
};

struct reader_run {
	const struct ferry_bench_dataset *ds;
	const struct ferry_bench_limits *lim;
	ferry_reader *reader;
	struct verify *verify;  /* NULL: not checking */
	uint64_t samples, bytes, batches;
	uint64_t t0;            /* when the timing began */
	double warmup;          /* warm: seconds after the first batch not counted */
	double first_batch_s;   /* ferry_reader_open to the first batch taken */
	/* Warming up over mapped files: whole epochs taken, the reader's count
	 * of mapped files when the last one began, and whether one copied every
	 * file from a mapping (or WARM_EPOCHS_MAX passed). */
	unsigned warm_epochs;
	uint64_t mapped_at_epoch, read_at_epoch; /* and of files read (buffered, direct) */
	int registered;
	uint64_t first_ns;      /* when the first batch was taken */
	unsigned restarts;      /* of the timing: files read beside mapped ones */
	/* The reader's counters when the timing began, then the timed part's. */
	struct ferry_reader_stats at_t0, timed;
	int error;
	char message[256];
};

/* ---- verifying ---- */

static int compare_by_path(const void *a, const void *b)
{
	return strcmp(((const struct by_path *)a)->path, ((const struct by_path *)b)->path);
}

static int verify_open(struct verify *v, ferry_ctx *ctx, const struct ferry_bench_dataset *ds)
{
	memset(v, 0, sizeof(*v));
	v->ctx = ctx;
	v->ds = ds;
	v->files = malloc(ds->count * sizeof(*v->files));
	if (!v->files)
		return -ENOMEM;
	for (unsigned i = 0; i < ds->count; i++)
		v->files[i] = (struct by_path){ ds->paths[i], i };
	qsort(v->files, ds->count, sizeof(*v->files), compare_by_path);
	return 0;
}

static void verify_close(struct verify *v)
{
	free(v->files);
	free(v->device_copy);
	free(v->file_copy);
}

/* Grows *buf to at least len bytes. Returns 0 or -ENOMEM. */
static int grow(char **buf, size_t *cap, size_t len)
{
	char *p;

	if (len <= *cap)
		return 0;
	if (!(p = realloc(*buf, len)))
		return -ENOMEM;
	*buf = p;
	*cap = len;
	return 0;
}

/* Fails the check with a message (printf-style). Returns -FERRY_EMISMATCH. */
static int __attribute__((format(printf, 2, 3))) mismatch(struct verify *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v->message, sizeof(v->message), fmt, ap);
	va_end(ap);
	return -FERRY_EMISMATCH;
}

/* The payload of file index into v->file_copy. Returns 0 or a negative code. */
static int read_payload(struct verify *v, unsigned index)
{
	size_t len = (size_t)v->ds->nbytes[index], done = 0;
	int fd = open(v->ds->paths[index], O_RDONLY | O_CLOEXEC);
	int rc = fd < 0 ? -errno : grow(&v->file_copy, &v->file_cap, len ? len : 1);

	while (rc == 0 && done < len) {
		ssize_t n = pread(fd, v->file_copy + done, len - done,
				  (off_t)(v->ds->data_offset[index] + done));
		if (n < 0 && errno == EINTR)
			continue;
		rc = n < 0 ? -errno : n == 0 ? -FERRY_ETRUNCATED : 0;
		done += n > 0 ? (size_t)n : 0;
	}
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		snprintf(v->message, sizeof(v->message), "verify: reading %.200s: %s",
			 v->ds->paths[index], ferry_strerror(rc));
	return rc;
}

/* Checks that row (host bytes of sample s) is s's file's payload. */
static int verify_row(struct verify *v, const char *row, const struct ferry_sample *s)
{
	struct by_path key = { s->path ? s->path : "", 0 };
	const struct by_path *f = bsearch(&key, v->files, v->ds->count, sizeof(key),
					  compare_by_path);
	int rc;

	if (!f)
		return mismatch(v, "verify: a sample's path %.200s is not a file of the dataset",
				key.path);
	if (s->nbytes != v->ds->nbytes[f->index])
		return mismatch(v, "verify: %.200s: %llu bytes delivered, the file holds %llu", f->path,
				(unsigned long long)s->nbytes,
				(unsigned long long)v->ds->nbytes[f->index]);
	if ((rc = read_payload(v, f->index)) < 0)
		return rc;
	for (size_t k = 0; k < s->nbytes; k++)
		if (row[k] != v->file_copy[k])
			return mismatch(v, "verify: %.200s: byte %zu of the payload differs", f->path, k);
	v->samples++;
	return 0;
}

/* The stacked batch, copied back in one piece, row i against sample i's file. */
static int verify_stacked(struct verify *v, ferry_batch *b, const struct ferry_batch_shape *bs)
{
	unsigned n = ferry_batch_size(b);
	uint64_t row = n ? bs->nbytes / n : 0;
	int rc = bs->shape[0] == (int64_t)n ? 0 : mismatch(v, "verify: shape[0] %lld, batch %u",
							      (long long)bs->shape[0], n);

	if (rc == 0 && (rc = grow(&v->device_copy, &v->device_cap, bs->nbytes ? bs->nbytes : 1)) == 0)
		rc = ferry_copy_to_host(v->ctx, v->device_copy, ferry_batch_data(b), bs->nbytes);
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		struct ferry_sample s;
		if ((rc = ferry_batch_sample(b, i, &s)) == 0)
			rc = s.nbytes == row ? verify_row(v, v->device_copy + i * row, &s)
					     : mismatch(v, "verify: row %u: %llu bytes in a stacked "
							   "row of %llu", i,
						   (unsigned long long)s.nbytes,
						   (unsigned long long)row);
	}
	return rc;
}

/* A ragged batch: each sample at its own address. */
static int verify_ragged(struct verify *v, ferry_batch *b)
{
	unsigned n = ferry_batch_size(b);
	int rc = 0;

	for (unsigned i = 0; rc == 0 && i < n; i++) {
		struct ferry_sample s;
		if ((rc = ferry_batch_sample(b, i, &s)) < 0)
			break;
		rc = grow(&v->device_copy, &v->device_cap, s.nbytes ? s.nbytes : 1);
		if (rc == 0)
			rc = ferry_copy_to_host(v->ctx, v->device_copy, s.data, s.nbytes);
		if (rc == 0)
			rc = verify_row(v, v->device_copy, &s);
	}
	return rc;
}

/* ---- the run ---- */

/* 1 when the run is over: every file delivered (and, warm, min_seconds
 * passed), or MIN_BATCHES delivered and seconds_limit passed (4 x that: one
 * batch is enough). */
static int reader_over(const struct reader_run *rr)
{
	double elapsed = (double)(ferry__now_ns() - rr->t0) / 1e9;

	if (rr->samples >= rr->ds->count && elapsed >= rr->lim->min_seconds)
		return 1;
	if (rr->batches >= MIN_BATCHES && elapsed >= rr->lim->seconds_limit)
		return 1;
	return rr->batches > 0 && elapsed >= 4 * rr->lim->seconds_limit;
}

/* Counts a batch's real samples and their bytes (ragged: one by one). */
static int count_batch(struct reader_run *rr, ferry_batch *b, struct ferry_batch_shape *bs,
		       int *stacked)
{
	unsigned n = ferry_batch_size(b);
	int rc = 0;

	*stacked = ferry_batch_shape(b, bs) == 0;
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		struct ferry_sample s;
		if ((rc = ferry_batch_sample(b, i, &s)) == 0 && !s.is_padding) {
			rr->samples++;
			rr->bytes += s.nbytes;
		}
	}
	return rc;
}

/* Takes one batch as a user does: wait, the stacked array, release. */
static int take_batch(struct reader_run *rr, ferry_batch *b)
{
	struct ferry_batch_shape bs;
	int stacked = 0;
	int rc = ferry_batch_wait(b);

	if (rc == 0)
		rc = count_batch(rr, b, &bs, &stacked);
	if (rc == 0 && stacked && !ferry_batch_data(b))
		rc = -EFAULT;
	if (rc == 0 && rr->verify)
		rc = stacked ? verify_stacked(rr->verify, b, &bs) : verify_ragged(rr->verify, b);
	ferry_batch_release(b);
	return rc;
}

static void reader_fail(struct reader_run *rr, int rc)
{
	const char *msg = rr->verify && *rr->verify->message ? rr->verify->message
							      : ferry_last_error();
	rr->error = rc;
	snprintf(rr->message, sizeof(rr->message), "%s", *msg ? msg : ferry_strerror(rc));
}

/* Takes one batch into the counts. Returns 0, -FERRY_EEND or a negative
 * code (after reader_fail). */
static int reader_take(struct reader_run *rr)
{
	ferry_batch *b;
	int rc = ferry_reader_next(rr->reader, &b);

	if (rc == 0)
		rc = take_batch(rr, b);
	if (rc < 0 && rc != -FERRY_EEND)
		reader_fail(rr, rc);
	if (rc == 0)
		rr->batches++;
	return rc;
}

/* Files the reader read (buffered, direct), not copied from a mapping. */
static uint64_t files_read(const struct ferry_reader_stats *st)
{
	return st->files_buffered + st->files_direct;
}

/* Starts (or starts again) the timed part: counts, counters, clock, CPU. */
static void start_timing(struct reader_run *rr, double *cpu0)
{
	rr->samples = rr->bytes = rr->batches = 0;
	ferry_reader_stats(rr->reader, &rr->at_t0, sizeof(rr->at_t0));
	rr->t0 = ferry__now_ns();
	*cpu0 = ferry_bench_cpu_seconds();
}

/* Whether a warm run over mapped files read a file (buffered, direct) since
 * its timing began, within WARM_SECONDS_MAX of the first batch. The warm-up
 * ends at an epoch whose files all came from mappings, but IO threads fetch
 * ahead and not strictly in order: a batch fetched before the last
 * registration can be taken after that epoch (5 files of 668 on a loaded
 * 16-core machine). The timing then starts again. */
static int read_beside_mappings(struct reader_run *rr)
{
	struct ferry_reader_stats now;
	if (rr->ds->max_file_size < FERRY__MAPPED_MIN || rr->lim->min_seconds <= 0 ||
	    (double)(ferry__now_ns() - rr->first_ns) / 1e9 >= WARM_SECONDS_MAX)
		return 0;
	ferry_reader_stats(rr->reader, &now, sizeof(now));
	return files_read(&now) > files_read(&rr->at_t0);
}

static void reader_loop(struct reader_run *rr, double *cpu0)
{
	while (!reader_over(rr) && reader_take(rr) == 0)
		if (read_beside_mappings(rr)) {
			rr->restarts++;
			start_timing(rr, cpu0);
		}
}

/* Whether files the zero-copy path maps are still being registered: until an
 * epoch copied every file from a mapping (at most WARM_EPOCHS_MAX epochs).
 * Call it after each batch: it looks at each epoch's end once. */
static int still_registering(struct reader_run *rr)
{
	if (rr->ds->max_file_size < FERRY__MAPPED_MIN)
		return 0;
	uint64_t epochs = rr->samples / rr->ds->count;
	if (!rr->registered && rr->samples % rr->ds->count == 0 && epochs > rr->warm_epochs) {
		struct ferry_reader_stats now;
		ferry_reader_stats(rr->reader, &now, sizeof(now));
		uint64_t read = files_read(&now);
		/* Counted as fetched, and the window fetches ahead: an epoch's worth of
		 * mapped files is not enough while some were still read beside them. */
		rr->registered = (now.files_mapped - rr->mapped_at_epoch >= rr->ds->count &&
				  read == rr->read_at_epoch) || epochs >= WARM_EPOCHS_MAX;
		rr->warm_epochs = (unsigned)epochs;
		rr->mapped_at_epoch = now.files_mapped;
		rr->read_at_epoch = read;
	}
	return !rr->registered;
}

/* Whether a warm run is still warming up: within rr->warmup seconds of the
 * first batch, or while mapped files are being registered. */
static int warming_up(struct reader_run *rr, uint64_t first_ns)
{
	int registering = still_registering(rr); /* every batch: no epoch's end unseen */
	double s = (double)(ferry__now_ns() - first_ns) / 1e9;
	return s < rr->warmup || (registering && s < WARM_SECONDS_MAX);
}

/* Takes the first batch; warm (steady), also those of the warm-up
 * (warming_up), and the timing starts after them, so that they do not count.
 * Returns 0 or a negative code. */
static int reader_first(struct reader_run *rr, uint64_t open_ns, double *cpu0)
{
	int rc = reader_take(rr);
	uint64_t first_ns = rr->first_ns = ferry__now_ns();

	if (rc == -FERRY_EEND)
		reader_fail(rr, -FERRY_ECONFIG); /* no batch at all */
	if (rc < 0)
		return rc;
	rr->first_batch_s = (double)(first_ns - open_ns) / 1e9;
	if (rr->lim->min_seconds <= 0) /* cold: one pass from the open */
		return 0;
	while (rc == 0 && warming_up(rr, first_ns))
		rc = reader_take(rr);
	if (rc < 0 && rc != -FERRY_EEND)
		return rc;
	start_timing(rr, cpu0);
	return 0;
}

/* How the timed part's files were read: the counters since the timing began. */
static void timed_stats(struct reader_run *rr)
{
	struct ferry_reader_stats now;
	ferry_reader_stats(rr->reader, &now, sizeof(now));
	rr->timed.files_buffered = now.files_buffered - rr->at_t0.files_buffered;
	rr->timed.files_direct = now.files_direct - rr->at_t0.files_direct;
	rr->timed.files_mapped = now.files_mapped - rr->at_t0.files_mapped;
}

/* Opens the reader, reads to the run's limits; m gets the timing. */
static void reader_measure(ferry_ctx *ctx, struct reader_run *rr,
			   const struct ferry_reader_config *cfg, struct ferry_bench_measure *m)
{
	double cpu0 = ferry_bench_cpu_seconds();
	int rc;

	memset(m, 0, sizeof(*m));
	rr->t0 = ferry__now_ns();
	ferry__clear_error();
	rc = ferry_reader_open(ctx, cfg, &rr->reader);
	if (rc < 0)
		reader_fail(rr, rc);
	else if (reader_first(rr, rr->t0, &cpu0) == 0)
		reader_loop(rr, &cpu0);
	m->seconds = (double)(ferry__now_ns() - rr->t0) / 1e9;
	m->cpu_seconds = ferry_bench_cpu_seconds() - cpu0;
	if (rr->reader)
		timed_stats(rr);
	if (rr->reader && (rc = ferry_reader_close(rr->reader)) < 0 && !rr->error)
		reader_fail(rr, rc);
	m->bytes = rr->bytes;
	m->files = rr->samples;
	m->error = rr->error;
	snprintf(m->message, sizeof(m->message), "%s", rr->message);
}

static void describe_row(struct ferry_bench_run *run, const struct ferry_bench_dataset *ds,
			 const struct reader_run *rr)
{
	char warm_epochs[96] = ""; /* when the warm-up took whole epochs of mapped files */
	if (rr->warm_epochs)
		snprintf(warm_epochs, sizeof(warm_epochs), " of %u epoch%s (registering)%s",
			 rr->warm_epochs, rr->warm_epochs == 1 ? "" : "s",
			 rr->restarts ? ", timing started again after a file read beside them" : "");
	int n = snprintf(run->note, sizeof(run->note),
			 "prefetch auto; batches: %llu; %s%s; first batch %.3g s after open; files "
			 "read buffered %llu, direct %llu, copied from a mapping %llu",
			 (unsigned long long)rr->batches,
			 rr->lim->min_seconds > 0 ? "timed after the first batch and a warm-up"
						  : "one pass from open",
			 warm_epochs, rr->first_batch_s,
			 (unsigned long long)rr->timed.files_buffered,
			 (unsigned long long)rr->timed.files_direct,
			 (unsigned long long)rr->timed.files_mapped);

	if (run->batch_size > ds->count && n > 0 && (size_t)n < sizeof(run->note))
		n += snprintf(run->note + n, sizeof(run->note) - (size_t)n,
			      "; %u files: a batch is the whole set", ds->count);
	if (rr->verify && n > 0 && (size_t)n < sizeof(run->note))
		snprintf(run->note + n, sizeof(run->note) - (size_t)n,
			 "; every byte verified (%llu samples, verify time included)",
			 (unsigned long long)rr->verify->samples);
}

void ferry_bench_run_reader(ferry_ctx *ctx, const struct ferry_bench_options *opt,
			    const struct ferry_bench_dataset *ds,
			    const struct ferry_bench_limits *lim, unsigned batch, unsigned threads,
			    struct ferry_bench_run *run)
{
	struct ferry_reader_config cfg = { .files = (const char *const *)ds->paths,
					   .nfiles = ds->count, .batch_size = batch,
					   .num_shards = 1, .threads = threads,
					   .epochs = lim->min_seconds > 0 ? 0 : 1 };
	struct reader_run rr = { .ds = ds, .lim = lim, .warmup = opt->reader_warmup };
	struct verify v;
	struct ferry_bench_measure m;

	run->batch_size = batch;
	run->threads = threads ? threads : ctx->ld.threads;
	snprintf(run->backend, sizeof(run->backend), "%s%s", ferry_ctx_io_name(ctx),
		 ctx->set.direct == FERRY_DIRECT_ALWAYS ? "_direct" : "");
	if (opt->verify && verify_open(&v, ctx, ds) < 0) {
		snprintf(run->note, sizeof(run->note), "failed: verify: out of memory");
		return;
	}
	rr.verify = opt->verify ? &v : NULL;
	reader_measure(ctx, &rr, &cfg, &m);
	ferry_bench_fill_run(run, &m);
	run->first_batch_s = rr.first_batch_s;
	run->verified = opt->verify && run->available;
	if (run->available)
		describe_row(run, ds, &rr);
	if (opt->verify)
		verify_close(&v);
}

int ferry_bench_reader_context(const struct ferry_bench_options *opt, int direct, ferry_ctx **out)
{
	struct ferry_ctx_options o = { .device = opt->device, .gpu = -1, .direct = direct ? 1 : -1 };

	ferry__clear_error();
	return ferry_ctx_create(out, &o);
}
