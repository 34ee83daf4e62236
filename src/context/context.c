/* Contexts: the device, the IO backend, the staging lanes, the trace and the
 * IO threads, made once from the resolved settings. */
#include "context/context.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static int io_init(ferry_ctx *ctx, const struct ferry__io_ops *ops)
{
	ctx->ld.io_ops = ops;
	return ops->init(ctx->ld.dev, &ctx->ld.io);
}

/*
 * auto: POSIX reads into pinned host staging, then one host-to-device copy.
 * On the H200 machine (bench/results/2026-12-02-1633-NVIDIA-H200) that path
 * was fastest from a warm page cache (48 GB/s on 64 MiB files against 31 for
 * io_uring) and within the spread of the O_DIRECT backends from disk (1.5 to
 * 1.9 GB/s, all near the 1.7-1.9 GB/s raw read); cuFile there runs in
 * compatibility mode and was no faster. uring and cufile are chosen by name.
 */
static int choose_io(ferry_ctx *ctx, const struct ferry__io_ops *given)
{
	const char *want = ctx->set.io;
	if (given) {
		snprintf(ctx->io_reason, sizeof(ctx->io_reason), "given by the caller");
		return io_init(ctx, given);
	}
	if (strcmp(want, "auto")) {
		const struct ferry__io_ops *ops = ferry__io_find(want);
		if (!ops)
			return ferry__fail(-FERRY_EIO_BACKEND, "IO backend '%s' is not built in", want);
		snprintf(ctx->io_reason, sizeof(ctx->io_reason), "asked for by name");
		return io_init(ctx, ops);
	}
	snprintf(ctx->io_reason, sizeof(ctx->io_reason),
		 "auto: pread into pinned staging, one host-to-device copy: fastest measured "
		 "on a warm cache, on par from disk");
	return io_init(ctx, &ferry__io_posix);
}

/*
 * Small files whole: where io_uring works, its read_files opens, reads and
 * closes 16 files a system call (measured on this project's 2-core VM: 2x the
 * files/s of open, fstat, preadv, fstat and close per file, with the identity
 * check; tests/gpu/diag/small_reads.c). Chosen with auto (and uring); a
 * backend named otherwise reads each file on its own. Not being able to use
 * io_uring here is not an error: the per-file path is used.
 */
static void choose_files_io(ferry_ctx *ctx)
{
	const struct ferry__io_ops *uring = ferry__io_find("uring");
	if (ctx->ld.io_ops->read_files) {
		ctx->ld.files_ops = ctx->ld.io_ops;
		ctx->ld.files_io = ctx->ld.io;
	} else if (!strcmp(ctx->set.io, "auto") && uring && uring->read_files &&
		   uring->init(ctx->ld.dev, &ctx->ld.files_io) == 0) {
		ctx->ld.files_ops = uring;
	}
	ferry__clear_error(); /* io_uring refused: not this context's error */
}

static int block_added(void *arg, void *base, size_t len)
{
	ferry_ctx *ctx = arg;
	const struct ferry__io_ops *io = ctx->ld.io_ops;
	return io->register_block ? io->register_block(ctx->ld.io, base, len) : 0;
}

static void block_removed(void *arg, void *base, size_t len)
{
	ferry_ctx *ctx = arg;
	if (ctx->ld.io_ops->deregister_block)
		ctx->ld.io_ops->deregister_block(ctx->ld.io, base, len);
}

/*
 * The lanes share max_buffers. Each lane's pool starts empty: its first lease
 * allocates initial_buffers chunks (a few), and the engine doubles the pool
 * from there up to the lane's share, so a context that loads one small file
 * (or none: ferry env) pins a few chunks, not all of them. The price: a pool
 * grows while the context is in use, so a growth can be allocated while copies
 * of other batches are in flight, and a page-locked allocation can serialize
 * with the device's work. The engine allocates with its lock released (other
 * threads of the lane wait for the growth, not for the lock), a few times per
 * lane: 4, 8, 16, then 32 buffers for the default share. On the host device
 * (2026-12-03) ferry env then allocates no chunk and a first small load 4
 * instead of 128. What growing costs on a GPU, and how its blocks are made
 * cheap to register: the pool paragraph of docs/design.md, "The invariant".
 */
static int create_lanes(ferry_ctx *ctx)
{
	const struct ferry__settings *s = &ctx->set;
	struct ferry__block_hooks blocks = { block_added, block_removed, ctx };
	struct ferry__staging_config cfg = {
		.chunk_size = s->chunk_size,
		.max_buffers = s->max_buffers / s->lanes,
		.initial_buffers = s->initial_buffers,
		.launch_after = s->launch_after,
		.placement = ctx->ld.io_ops->placement,
		.blocks = &blocks,
		.trace = ctx->trace,
	};
	return ferry__lanes_create(ctx->ld.dev, &cfg, s->lanes, &ctx->ld.lanes);
}

static int open_trace(ferry_ctx *ctx)
{
	if (!ctx->set.trace_path)
		return 0;
	int rc = ferry__trace_open(ctx->set.trace_path, &ctx->trace);
	return rc < 0 ? ferry__fail(-FERRY_ECONFIG, "FERRY_TRACE=%s: %s", ctx->set.trace_path,
				    strerror(-rc)) : 0;
}

/* The zero-copy path, where the pin budget and the device allow it; a device
 * that cannot is no error of the context: ferry env says why. */
static int create_mapped(ferry_ctx *ctx)
{
	struct ferry__device *dev = ctx->ld.dev;
	if (!ctx->set.pin_budget) {
		snprintf(ctx->mapped_why, sizeof(ctx->mapped_why), "FERRY_PIN_BUDGET is 0");
		return 0;
	}
	if (!dev->ops->map_ready) {
		snprintf(ctx->mapped_why, sizeof(ctx->mapped_why),
			 "the %s device cannot register host memory", dev->ops->name);
		return 0;
	}
	if (dev->ops->map_ready(dev, ctx->mapped_how, sizeof(ctx->mapped_how)) < 0) {
		snprintf(ctx->mapped_why, sizeof(ctx->mapped_why), "%s", ferry_last_error());
		ferry__clear_error();
		return 0;
	}
	return ferry__mapped_create(dev, ctx->ld.lanes, ctx->trace, ctx->set.pin_budget,
				    ctx->set.pin_reserve, ctx->set.pin_pace, &ctx->ld.mapped);
}

/* Opens everything but the device, which the caller opened (ctx owns it). */
static int finish_ctx(ferry_ctx *ctx, const struct ferry__io_ops *io)
{
	ctx->ld.threads = ctx->set.threads;
	ctx->ld.direct = ctx->set.direct;
	ctx->ld.cache_budget = ctx->set.cache_budget;
	ctx->ld.cache_used = &ctx->cache_used;
	int rc = open_trace(ctx);
	if (rc == 0)
		rc = choose_io(ctx, io);
	if (rc == 0 && !io)
		choose_files_io(ctx);
	if (rc == 0)
		rc = create_lanes(ctx);
	if (rc == 0 && ctx->ld.threads > 1)
		rc = ferry__pool_create(ctx->ld.threads - 1, &ctx->ld.pool);
	if (rc == 0)
		rc = create_mapped(ctx);
	ctx->set.trace_path = NULL; /* the environment's string: not kept */
	return rc;
}

int ferry__ctx_create_on(struct ferry__device *dev, const struct ferry__io_ops *io,
			 const struct ferry_ctx_options *opt, ferry_ctx **out)
{
	ferry_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		dev->ops->close(dev);
		return ferry__fail(-ENOMEM, "context: out of memory");
	}
	ctx->ld.dev = dev;
	int rc = ferry__settings_resolve(opt, &ctx->set);
	if (rc == 0)
		rc = finish_ctx(ctx, io);
	if (rc < 0) {
		ferry_ctx_destroy(ctx);
		return rc;
	}
	*out = ctx;
	return 0;
}

int ferry__ctx_open_device(const struct ferry_ctx_options *opt, struct ferry__device **out)
{
	struct ferry__settings set;
	int rc = ferry__settings_resolve(opt, &set);
	return rc < 0 ? rc : ferry__device_open(set.device, &set.params, out);
}

int ferry_ctx_create(ferry_ctx **out, const struct ferry_ctx_options *opt)
{
	struct ferry__device *dev;
	ferry__clear_error();
	int rc = ferry__ctx_open_device(opt, &dev);
	return rc < 0 ? rc : ferry__ctx_create_on(dev, NULL, opt, out);
}

int ferry_ctx_destroy(ferry_ctx *ctx)
{
	if (!ctx)
		return 0;
	ferry__pool_destroy(ctx->ld.pool);
	ferry__mapped_stop(ctx->ld.mapped); /* it asks the lanes about copies */
	int rc = ferry__lanes_destroy(ctx->ld.lanes);
	ferry__mapped_destroy(ctx->ld.mapped); /* no copy is in flight now */
	if (ctx->ld.files_io && ctx->ld.files_io != ctx->ld.io)
		ctx->ld.files_ops->fini(ctx->ld.files_io);
	if (ctx->ld.io)
		ctx->ld.io_ops->fini(ctx->ld.io);
	if (ctx->ld.dev)
		ctx->ld.dev->ops->close(ctx->ld.dev);
	ferry__trace_close(ctx->trace);
	free(ctx);
	return rc;
}

/* What the convert: line of ferry env says: who converts big-endian and
 * Fortran-order payloads, as the device's table and its kernels allow. */
static void describe_convert(struct ferry__device *dev, char *buf, size_t len)
{
	char how[256] = "";
	if (!(dev->ops->flags & FERRY__DEV_CONVERT)) {
		snprintf(buf, len, "read on the host, converted by the CPU and copied over "
			 "(the %s device cannot convert)", dev->ops->name);
	} else if (dev->ops->convert_ready(dev, how, sizeof(how)) == 0) {
		snprintf(buf, len, "read raw through staging, converted on the device by %s", how);
	} else {
		snprintf(buf, len, "read on the host, converted by the CPU and copied over "
			 "(the device's conversions did not load: %s)", ferry_last_error());
		ferry__clear_error();
	}
}

/* The direct: line of ferry env: the O_DIRECT mode and, in auto, its budget. */
static void describe_direct(const struct ferry__loader *ld, char *buf, size_t len)
{
	if (ld->direct == FERRY_DIRECT_NEVER)
		snprintf(buf, len, "off: every read goes through the page cache");
	else if (ld->direct == FERRY_DIRECT_ALWAYS)
		snprintf(buf, len, "on: every file opened with O_DIRECT (buffered where the file "
			 "system refuses)");
	else
		snprintf(buf, len, "auto: reads of %llu KiB or more whose bytes are not in the page "
			 "cache (asked with %s) are buffered within a budget of %llu bytes (%llu MiB), "
			 "then read with O_DIRECT", (unsigned long long)(FERRY__DIRECT_MIN >> 10),
			 ferry__io_residency_method(), (unsigned long long)ld->cache_budget,
			 (unsigned long long)(ld->cache_budget >> 20));
}

/* The mapped: line of ferry env: the zero-copy path, or why there is none. */
static void describe_mapped(ferry_ctx *ctx, char *buf, size_t len)
{
	struct ferry__mapped_stats st;
	if (!ctx->ld.mapped) {
		snprintf(buf, len, "off: %s", ctx->mapped_why);
		return;
	}
	ferry__mapped_stats(ctx->ld.mapped, &st);
	if (st.given_up) {
		snprintf(buf, len, "off after %llu refused registrations (the last ones in a row); the last: %s",
			 (unsigned long long)st.refused, st.last_refusal);
		return;
	}
	char pace[192];
	if (ctx->set.pin_pace >= 100)
		snprintf(pace, sizeof(pace), "registering as they come");
	else if (!ctx->set.pin_pace)
		snprintf(pace, sizeof(pace), "registering files offered once only after no copy was "
			 "launched for %u us, files offered again at once", FERRY__QUIET_NS / 1000);
	else
		snprintf(pace, sizeof(pace), "registering files offered once %u%% of the time at "
			 "most while copies run (all of it once none was launched for %u us), "
			 "files offered again at once", ctx->set.pin_pace, FERRY__QUIET_NS / 1000);
	snprintf(buf, len, "warm files of %llu MiB or more are copied straight from the page "
		 "cache (those under %llu MiB registered side by side, %llu MiB a registration), "
		 "kept registered up to a pin budget of %llu MiB while %llu MiB of memory "
		 "stays available, %s: %s%s%s",
		 (unsigned long long)(FERRY__MAPPED_MIN >> 20),
		 (unsigned long long)(FERRY__MAPPED_GROUP >> 20),
		 (unsigned long long)(FERRY__MAPPED_GROUP >> 20), (unsigned long long)(st.budget >> 20),
		 (unsigned long long)(st.reserve >> 20), pace, ctx->mapped_how,
		 st.refused ? "; refused last: " : "", st.last_refusal);
}

int ferry_ctx_describe(ferry_ctx *ctx, char *buf, size_t len)
{
	char device[256] = "", io[256] = "", convert[512] = "", direct[320] = "";
	char mapped[1280] = "";
	describe_mapped(ctx, mapped, sizeof(mapped));
	const struct ferry__loader *ld = &ctx->ld;
	ld->dev->ops->describe(ld->dev, device, sizeof(device));
	describe_convert(ld->dev, convert, sizeof(convert));
	describe_direct(ld, direct, sizeof(direct));
	if (ld->io_ops->describe)
		ld->io_ops->describe(ld->io, io, sizeof(io));
	return snprintf(buf, len,
			"ferry %s\n"
			"device:  %s\n"
			"io:      %s%s%s (%s)\n"
			"small:   %s\n"
			"staging: %zu KiB chunks, %s memory, %u lane%s, up to %u buffers (grown on demand)\n"
			"threads: %u, O_DIRECT %s\n"
			"direct:  %s\n"
			"convert: big-endian and Fortran-order payloads are %s\n"
			"mapped:  %s\n"
			"npz:     %s\n",
			ferry_version(), device, ld->io_ops->name, *io ? ", " : "", io,
			ctx->io_reason,
			ld->files_ops ? "io_uring opens, reads and closes small files of a batch in the "
					"kernel, 16 a system call"
				      : "each file opened, read and closed with its own system calls",
			ctx->set.chunk_size >> 10,
			ld->io_ops->placement == FERRY__STAGE_DEVICE ? "device" : "pinned host",
			ctx->set.lanes, ctx->set.lanes == 1 ? "" : "s", ctx->set.max_buffers,
			ld->threads, ferry__direct_name(ld->direct), direct, convert, mapped,
			!ferry__inflate_available()
				? "stored members; deflated ones need libdeflate, which this build lacks"
			: ferry__inflate_prefix_available()
				? "stored and deflated members (libdeflate); info inflates a deflated "
				  "member's header alone (zlib)"
				: "stored and deflated members (libdeflate); info inflates a deflated "
				  "member whole (no zlib in this build)");
}

const char *ferry_ctx_device_kind(ferry_ctx *ctx)
{
	return ctx->ld.dev->ops->name;
}

const char *ferry_ctx_io_name(ferry_ctx *ctx)
{
	return ctx->ld.io_ops->name;
}
