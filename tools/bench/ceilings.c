/*
 * `ferry bench`: the ceilings a loader is measured against.
 *   pinned_h2d:     async copies of a 256 MiB pinned buffer into device memory
 *                   (64 MiB under a --seconds-limit below a second)
 *   storage_direct: ferry's IO layer reading the dataset with O_DIRECT into
 *                   aligned host memory (io_uring with several reads in flight
 *                   per thread where built, else more pread threads); no copy
 *   page_cache:     buffered reads of the warm dataset into a reused buffer
 *                   (ferry's posix IO layer, 1 MiB reads)
 *   read_only:      plain open/fstat/read/close of each whole warm file into
 *                   private host memory (read_only.c): no ferry code at all
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "base/base.h"
#include "context/context.h"
#include "io/io.h"

#define H2D_BYTES (256u << 20)
/* Under a --seconds-limit below a second (smoke runs: tests, CI) the copies
 * are of 64 MiB: allocating and touching 2 x 256 MiB took 1.3 s of each
 * bench call on the host device, as long as the rest of a quick run. */
#define H2D_BYTES_QUICK (64u << 20)
#define H2D_COPIES 4
#define H2D_TRIALS 3 /* at most: trials stop once seconds_limit has passed */
#define RAW_BLOCK (1u << 20)
#define RAW_DEPTH 8

/* ---- pinned host to device ---- */

struct h2d {
	struct ferry__device *dev;
	size_t bytes;
	void *pinned, *device;
	struct ferry__stream *stream;
};

static int h2d_setup(struct h2d *h)
{
	const struct ferry__device_ops *ops = h->dev->ops;
	int rc = ops->pinned_alloc(h->dev, h->bytes, &h->pinned);
	if (rc == 0)
		rc = ops->mem_alloc(h->dev, h->bytes, &h->device);
	if (rc == 0)
		rc = ops->stream_create(h->dev, &h->stream);
	if (rc == 0)
		memset(h->pinned, 0x5a, h->bytes);
	return rc;
}

static void h2d_teardown(struct h2d *h)
{
	const struct ferry__device_ops *ops = h->dev->ops;
	if (h->stream)
		ops->stream_destroy(h->dev, h->stream);
	if (h->device)
		ops->mem_free(h->dev, h->device);
	if (h->pinned)
		ops->pinned_free(h->dev, h->pinned, h->bytes);
}

/* Queues copies copies and waits for them. Returns 0 or a negative code. */
static int h2d_copies(struct h2d *h, unsigned copies)
{
	const struct ferry__device_ops *ops = h->dev->ops;
	int rc = 0;
	for (unsigned i = 0; rc == 0 && i < copies; i++)
		rc = ops->copy_async(h->dev, h->stream, h->device, h->pinned, h->bytes, FERRY__H2D);
	return rc ? rc : ops->stream_sync(h->dev, h->stream);
}

/* The best of a few trials, in GB/s; 0 with a note on failure. */
static double measure_pinned_h2d(struct ferry__device *dev, double seconds_limit, char *note,
				 size_t note_len)
{
	struct h2d h = { .dev = dev, .bytes = seconds_limit < 1 ? H2D_BYTES_QUICK : H2D_BYTES };
	double best = 0;
	int rc = h2d_setup(&h);
	uint64_t start_all = ferry__now_ns();
	unsigned t = 0;

	if (rc == 0)
		rc = h2d_copies(&h, 1); /* warm-up */
	for (; rc == 0 && t < H2D_TRIALS; t++) {
		if (t > 0 && (double)(ferry__now_ns() - start_all) / 1e9 > seconds_limit)
			break;
		uint64_t start = ferry__now_ns();
		rc = h2d_copies(&h, H2D_COPIES);
		double s = (double)(ferry__now_ns() - start) / 1e9;
		double gbps = s > 0 ? (double)h.bytes * H2D_COPIES / s / 1e9 : 0;
		if (rc == 0 && gbps > best)
			best = gbps;
	}
	if (rc < 0)
		snprintf(note, note_len, "failed: %s", ferry_last_error());
	else
		snprintf(note, note_len, "%s device: best of %u x %d async copies of %zu MiB",
			 dev->ops->name, t, H2D_COPIES, h.bytes >> 20);
	h2d_teardown(&h);
	return rc < 0 ? 0 : best;
}

/* ---- raw reads: no copy ---- */

struct raw_read {
	const struct ferry_bench_dataset *ds;
	const struct ferry__io_ops *ops;
	struct ferry__io *io;
	int direct;
	unsigned depth;          /* reads in flight per call */
	atomic_int refused;      /* a file opened buffered though O_DIRECT was asked */
};

static int raw_thread_init(void *arg, unsigned thread, void **state)
{
	struct raw_read *r = arg;
	*state = ferry__aligned_alloc(FERRY__IO_ALIGN, (size_t)RAW_BLOCK * r->depth);
	return *state ? 0 : -ENOMEM;
}

static void raw_thread_fini(void *arg, void *state)
{
	free(state);
}

/* Reads the whole file (rounded up to the alignment) in blocks, depth at a time. */
static int raw_read_file(struct raw_read *r, struct ferry__file *f, char *buf)
{
	uint64_t end = (f->size + FERRY__IO_ALIGN - 1) / FERRY__IO_ALIGN * FERRY__IO_ALIGN;
	struct ferry__io_req reqs[RAW_DEPTH];
	int rc = 0;

	for (uint64_t offset = 0; rc == 0 && offset < end;) {
		unsigned n = 0;
		for (; n < r->depth && offset < end; n++, offset += RAW_BLOCK) {
			uint64_t len = end - offset < RAW_BLOCK ? end - offset : RAW_BLOCK;
			reqs[n] = (struct ferry__io_req){ .dst = buf + (size_t)n * RAW_BLOCK,
							  .len = (size_t)len, .offset = offset };
		}
		rc = r->ops->read(r->io, f, reqs, n);
	}
	return rc;
}

static int raw_load_one(void *arg, void *state, unsigned file)
{
	struct raw_read *r = arg;
	struct ferry__file *f;
	int rc = r->ops->open(r->io, r->ds->paths[file], r->direct ? FERRY__IO_DIRECT : 0, &f);

	if (rc < 0)
		return rc;
	if (r->direct && !f->direct)
		atomic_store(&r->refused, 1);
	rc = raw_read_file(r, f, state);
	r->ops->close(r->io, f);
	return rc;
}

/* GB/s of raw reads through ops on threads threads; 0 with a note when it failed. */
static double measure_raw(struct ferry__device *dev, const struct ferry__io_ops *ops, int direct,
			  unsigned threads, const struct ferry_bench_dataset *ds,
			  const struct ferry_bench_limits *lim, char *note, size_t note_len)
{
	struct raw_read r = { .ds = ds, .ops = ops, .direct = direct,
			      .depth = strcmp(ops->name, "uring") ? 1 : RAW_DEPTH };
	struct ferry_bench_tool tool = { &r, raw_thread_init, raw_load_one, NULL, raw_thread_fini };
	struct ferry_bench_measure m;
	int rc = ops->init(dev, &r.io);

	if (rc < 0) {
		snprintf(note, note_len, "failed: %s", ferry_last_error());
		return 0;
	}
	atomic_init(&r.refused, 0);
	ferry_bench_drive(ds, lim, threads, &tool, &m);
	ops->fini(r.io);
	if (m.error || !m.files) {
		snprintf(note, note_len, "failed: %.250s", m.message);
		return 0;
	}
	if (direct && atomic_load(&r.refused)) {
		snprintf(note, note_len, "not available: the file system of %.200s refuses O_DIRECT",
			 ds->dir);
		return 0;
	}
	snprintf(note, note_len, "%s, %u threads x %u reads of 1 MiB in flight, %s", ops->name,
		 threads, r.depth, direct ? "O_DIRECT" : "buffered, warm");
	return m.seconds > 0 ? (double)m.bytes / m.seconds / 1e9 : 0;
}

/* io_uring (several reads in flight) when built, else posix with more threads. */
static double measure_storage_direct(struct ferry__device *dev,
				     const struct ferry_bench_dataset *ds,
				     const struct ferry_bench_limits *lim, char *note,
				     size_t note_len)
{
	unsigned cores = ferry_bench_cores();
	unsigned threads = 2 * cores < 32 ? 2 * cores : 32;
	if (ferry__io_uring.name) {
		double gbps = measure_raw(dev, &ferry__io_uring, 1, threads, ds, lim, note, note_len);
		if (gbps > 0)
			return gbps;
	}
	return measure_raw(dev, &ferry__io_posix, 1, threads, ds, lim, note, note_len);
}

/* ---- read-only: plain system calls, no ferry code (read_only.c) ---- */

static void measure_read_only(const struct ferry_bench_dataset *ds,
			      const struct ferry_bench_limits *lim, unsigned threads,
			      struct ferry_bench_ceilings *out)
{
	struct ferry_bench_measure m;

	ferry_bench_read_only(ds, lim, threads, 0, &m);
	if (m.error || !m.files || m.seconds <= 0) {
		snprintf(out->read_only_note, sizeof(out->read_only_note), "failed: %.250s",
			 m.message);
		return;
	}
	out->read_only_gbps = (double)m.bytes / m.seconds / 1e9;
	out->read_only_files_per_s = (double)m.files / m.seconds;
	snprintf(out->read_only_note, sizeof(out->read_only_note),
		 "%u threads: open, fstat, read whole, close into private memory, warm; %.3g CPU "
		 "s/GB",
		 threads, m.bytes ? m.cpu_seconds / ((double)m.bytes / 1e9) : 0.0);
}

void ferry_bench_ceilings(ferry_ctx *ctx, const struct ferry_bench_dataset *ds,
			  const struct ferry_bench_options *opt, struct ferry_bench_ceilings *out)
{
	struct ferry_bench_limits lim = { opt->seconds_limit, opt->min_seconds };
	unsigned cores = ferry_bench_cores();

	memset(out, 0, sizeof(*out));
	ferry_bench_progress("ceiling: pinned host-to-device copies");
	out->pinned_h2d_gbps = measure_pinned_h2d(ctx->ld.dev, opt->seconds_limit, out->pinned_h2d_note,
						  sizeof(out->pinned_h2d_note));
	ferry_bench_progress("ceiling: O_DIRECT reads of %s", ds->workload);
	out->storage_direct_gbps = measure_storage_direct(ctx->ld.dev, ds, &lim, out->storage_direct_note,
							  sizeof(out->storage_direct_note));
	ferry_bench_progress("ceiling: page-cache reads of %s", ds->workload);
	ferry_bench_warm_files(ds);
	out->page_cache_gbps = measure_raw(ctx->ld.dev, &ferry__io_posix, 0, cores < 16 ? cores : 16, ds,
					   &lim, out->page_cache_note, sizeof(out->page_cache_note));
	ferry_bench_progress("ceiling: read-only (open/fstat/read/close) of %s", ds->workload);
	measure_read_only(ds, &lim, ferry_bench_read_only_threads(opt), out);
}
