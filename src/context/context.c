/* Contexts: choosing the device, the IO backend and the settings, once. */
#include "context/context.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

#define DEFAULT_MAX_THREADS 16
/* Small batches let copies start while the rest of a file is still being read. */
#define LAUNCH_AFTER 4
/* Measured with bench/tune.sh on an H200 (2026-12-03): one lane serializes
 * small files on its lock and stream (7.2 GB/s of 128 KiB files against 14.6
 * with 4 lanes); 4 lanes sharing 64 buffers starve large files' few callers. */
#define DEFAULT_LANES 4
#define DEFAULT_MAX_BUFFERS 128
#define MIN_LANE_BUFFERS 8

static int io_init(ferry_ctx *ctx, const struct ferry__io_ops *ops)
{
	ctx->io_ops = ops;
	return ops->init(ctx->dev, &ctx->io);
}

/*
 * auto: POSIX reads into pinned host staging, then one host-to-device copy.
 * On the H200 machine (bench/results/2026-12-02-1633-NVIDIA-H200) that path
 * was fastest from a warm page cache (48 GB/s on 64 MiB files against 31 for
 * io_uring) and within the spread of the O_DIRECT backends from disk (1.5 to
 * 1.9 GB/s, all near the 1.7-1.9 GB/s raw read); cuFile there runs in
 * compatibility mode and was no faster. uring and cufile are chosen by name.
 */
static int choose_io(ferry_ctx *ctx, const char *want)
{
	if (!want || !*want)
		want = getenv("FERRY_IO");
	if (want && *want && strcmp(want, "auto")) {
		const struct ferry__io_ops *ops = ferry__io_find(want);
		if (!ops)
			return ferry__fail(-FERRY_EIO_BACKEND,
					   "IO backend '%s' is unknown or not built (expected "
					   "posix, uring or cufile)",
					   want);
		snprintf(ctx->io_reason, sizeof(ctx->io_reason), "asked for by name");
		return io_init(ctx, ops);
	}
	snprintf(ctx->io_reason, sizeof(ctx->io_reason),
		 "auto: pread into pinned staging, one host-to-device copy: fastest measured "
		 "on a warm cache, on par from disk");
	return io_init(ctx, &ferry__io_posix);
}

static int block_added(void *arg, void *base, size_t len)
{
	ferry_ctx *ctx = arg;
	return ctx->io_ops->register_block ? ctx->io_ops->register_block(ctx->io, base, len) : 0;
}

static void block_removed(void *arg, void *base, size_t len)
{
	ferry_ctx *ctx = arg;
	if (ctx->io_ops->deregister_block)
		ctx->io_ops->deregister_block(ctx->io, base, len);
}

static int choose_threads(const struct ferry_ctx_options *opt, unsigned *out)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned long def = cores < 1 ? 1 : cores > DEFAULT_MAX_THREADS ? DEFAULT_MAX_THREADS
									 : (unsigned long)cores;
	unsigned long n = opt->threads;
	if (n > FERRY_THREADS_MAX)
		return ferry__fail(-FERRY_ECONFIG, "context: threads %lu: expected 1 to %d", n,
				   FERRY_THREADS_MAX);
	int rc = n ? 0 : ferry__env_uint("FERRY_THREADS", 1, FERRY_THREADS_MAX, def, &n);
	*out = (unsigned)n;
	return rc;
}

static int choose_direct(const struct ferry_ctx_options *opt, int *out)
{
	unsigned long v = opt->direct > 0;
	int rc = opt->direct < 0 ? ferry__env_uint("FERRY_ODIRECT", 0, 1, 0, &v) : 0;
	*out = (int)v;
	return rc;
}

/* FERRY_LANES, fewer where max_buffers cannot give each lane MIN_LANE_BUFFERS. */
static int choose_lanes(unsigned total_buffers, unsigned *out)
{
	unsigned long n;
	int rc = ferry__env_uint("FERRY_LANES", 1, FERRY__MAX_LANES, DEFAULT_LANES, &n);
	unsigned fit = total_buffers / MIN_LANE_BUFFERS;
	*out = n <= fit ? (unsigned)n : fit ? fit : 1;
	return rc;
}

/* opt->max_buffers, else FERRY_MAX_BUFFERS, else the default. */
static int choose_max_buffers(const struct ferry_ctx_options *opt, unsigned *out)
{
	unsigned long n = opt->max_buffers;
	if (n > FERRY_BUFFERS_MAX)
		return ferry__fail(-FERRY_ECONFIG, "context: max_buffers %lu: expected 1 to %d", n,
				   FERRY_BUFFERS_MAX);
	int rc = n ? 0 : ferry__env_uint("FERRY_MAX_BUFFERS", 1, FERRY_BUFFERS_MAX,
					 DEFAULT_MAX_BUFFERS, &n);
	*out = (unsigned)n;
	return rc;
}

/* The lanes share max_buffers between them. */
static int create_staging(ferry_ctx *ctx, const struct ferry_ctx_options *opt)
{
	struct ferry__block_hooks blocks = { block_added, block_removed, ctx };
	unsigned total = 0, lanes = 1;
	int rc = choose_max_buffers(opt, &total);
	if (rc == 0)
		rc = choose_lanes(total, &lanes);
	if (rc < 0)
		return rc;
	struct ferry__staging_config cfg = {
		.chunk_size = opt->chunk_size,
		.max_buffers = total / lanes,
		.launch_after = LAUNCH_AFTER,
		.placement = ctx->io_ops->placement,
		.blocks = &blocks,
	};
	for (unsigned i = 0; i < lanes; i++) {
		if ((rc = ferry__staging_create(ctx->dev, &cfg, &ctx->lanes[i])) < 0)
			return rc;
		ctx->nlanes++;
		/* Grow the pool now: allocations can synchronize the device. */
		if ((rc = ferry__staging_reserve(ctx->lanes[i], cfg.max_buffers)) < 0)
			return rc;
	}
	return 0;
}

struct ferry__staging *ferry__ctx_lane(ferry_ctx *ctx)
{
	static atomic_uint threads_seen;
	static _Thread_local unsigned thread_number; /* 1, 2, ... from its first load; 0 before */
	if (ctx->nlanes == 1)
		return ctx->lanes[0];
	if (!thread_number)
		thread_number = atomic_fetch_add(&threads_seen, 1) + 1;
	return ctx->lanes[(thread_number - 1) % ctx->nlanes];
}

/* Opens everything but the device, which the caller opened (ctx owns it). */
static int finish_ctx(ferry_ctx *ctx, const struct ferry_ctx_options *opt,
		      const struct ferry__io_ops *io)
{
	int rc;
	if ((rc = choose_threads(opt, &ctx->threads)) < 0 ||
	    (rc = choose_direct(opt, &ctx->direct)) < 0)
		return rc;
	if (io) {
		snprintf(ctx->io_reason, sizeof(ctx->io_reason), "given by the caller");
		rc = io_init(ctx, io);
	} else {
		rc = choose_io(ctx, opt->io);
	}
	if (rc < 0 || (rc = create_staging(ctx, opt)) < 0)
		return rc;
	if (ctx->threads > 1)
		rc = ferry__pool_create(ctx->threads - 1, &ctx->pool);
	return rc;
}

int ferry__ctx_create_on(struct ferry__device *dev, const struct ferry__io_ops *io,
			 const struct ferry_ctx_options *opt, ferry_ctx **out)
{
	static const struct ferry_ctx_options env_defaults = { .gpu = -1, .direct = -1 };
	ferry_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		dev->ops->close(dev);
		return ferry__fail(-ENOMEM, "out of memory");
	}
	ctx->dev = dev;
	int rc = finish_ctx(ctx, opt ? opt : &env_defaults, io);
	if (rc < 0) {
		ferry_ctx_destroy(ctx);
		return rc;
	}
	*out = ctx;
	return 0;
}

int ferry_ctx_create(ferry_ctx **out, const struct ferry_ctx_options *opt)
{
	struct ferry__device *dev;
	int rc = ferry__device_open(opt ? opt->device : NULL, opt ? opt->gpu : -1, &dev);
	return rc < 0 ? rc : ferry__ctx_create_on(dev, NULL, opt, out);
}

int ferry_ctx_destroy(ferry_ctx *ctx)
{
	if (!ctx)
		return 0;
	ferry__pool_destroy(ctx->pool);
	int rc = 0;
	for (unsigned i = 0; i < ctx->nlanes; i++) {
		int lane_rc = ferry__staging_destroy(ctx->lanes[i]);
		if (rc == 0)
			rc = lane_rc;
	}
	if (ctx->io)
		ctx->io_ops->fini(ctx->io);
	if (ctx->dev)
		ctx->dev->ops->close(ctx->dev);
	free(ctx);
	return rc;
}

int ferry_ctx_describe(ferry_ctx *ctx, char *buf, size_t len)
{
	char device[256] = "", io[256] = "";
	ctx->dev->ops->describe(ctx->dev, device, sizeof(device));
	if (ctx->io_ops->describe)
		ctx->io_ops->describe(ctx->io, io, sizeof(io));
	return snprintf(buf, len,
			"ferry %s\n"
			"device:  %s\n"
			"io:      %s%s%s (%s)\n"
			"staging: %zu KiB chunks, %s memory, %u lane%s\n"
			"threads: %u, O_DIRECT %s\n"
			"convert: big-endian and Fortran-order files are converted on the host "
			"(ferry has no GPU kernels)\n",
			ferry_version(), device, ctx->io_ops->name, *io ? ", " : "", io,
			ctx->io_reason, ferry__staging_chunk_size(ctx->lanes[0]) >> 10,
			ctx->io_ops->placement == FERRY__STAGE_DEVICE ? "device" : "pinned host",
			ctx->nlanes, ctx->nlanes == 1 ? "" : "s",
			ctx->threads, ctx->direct ? "on" : "off");
}

const char *ferry_ctx_device_kind(ferry_ctx *ctx)
{
	return ctx->dev->ops->name;
}

const char *ferry_ctx_io_name(ferry_ctx *ctx)
{
	return ctx->io_ops->name;
}

int ferry_device_alloc(ferry_ctx *ctx, size_t len, void **out)
{
	return ctx->dev->ops->mem_alloc(ctx->dev, len ? len : 1, out);
}

void ferry_device_free(ferry_ctx *ctx, void *ptr)
{
	if (ptr)
		ctx->dev->ops->mem_free(ctx->dev, ptr);
}

int ferry_copy_to_host(ferry_ctx *ctx, void *host, const void *device, size_t len)
{
	return len ? ctx->dev->ops->copy_sync(ctx->dev, host, device, len, FERRY__D2H) : 0;
}

int ferry_copy_to_device(ferry_ctx *ctx, void *device, const void *host, size_t len)
{
	return len ? ctx->dev->ops->copy_sync(ctx->dev, device, host, len, FERRY__H2D) : 0;
}
