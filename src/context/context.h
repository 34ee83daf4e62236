/*
 * The context behind ferry_ctx, and the settings: every option and
 * environment variable ferry reads is resolved here, once (the option, then
 * the environment, then the default of one table), and handed down to the
 * layers below as plain values. No other source file reads the environment.
 */
#ifndef FERRY_CONTEXT_H
#define FERRY_CONTEXT_H

#include <stddef.h>

#include "device/device.h"
#include "engine/engine.h"
#include "ferry.h"
#include "load/load.h"

/* ==== settings ==== */

/* A context's settings, resolved. */
struct ferry__settings {
	const char *device;      /* "auto", "cuda" or "host" (static strings) */
	const char *io;          /* "auto", "posix", "uring" or "cufile" */
	struct ferry__device_params params; /* GPU ordinal, test gate mode */
	size_t chunk_size;
	unsigned threads;        /* IO threads of one load, the caller included */
	unsigned lanes;          /* staging engines, after the fit to max_buffers */
	unsigned max_buffers;    /* staging buffers, shared out between the lanes */
	unsigned initial_buffers; /* the pool's first growth, per lane */
	unsigned launch_after;   /* copies a batch collects before it is launched */
	int direct;              /* enum ferry_direct: NEVER, ALWAYS or AUTO */
	uint64_t cache_budget;   /* AUTO: bytes of cold files read buffered at most */
	uint64_t pin_budget;     /* zero copy: bytes of mappings kept registered; 0: off */
	uint64_t pin_reserve;    /* zero copy: memory left available, or registrations go */
	unsigned pin_pace;       /* zero copy: percent of the time spent registering */
	const char *trace_path;  /* NULL: no trace (valid while the context is made) */
};

/* One row of the settings table: what ferry --help and the README list. */
struct ferry__setting_info {
	const char *name;        /* the environment variable */
	const char *values;      /* what it accepts */
	const char *fallback;    /* the default */
	const char *about;       /* one line */
};

/* "off", "on" or "auto": how ferry env names an enum ferry_direct mode. */
const char *ferry__direct_name(int direct);

/* The settings table: *n rows, in the order ferry --help lists them. */
const struct ferry__setting_info *ferry__settings_table(size_t *n);

/* Resolves a context's settings from opt (NULL: all from the environment and
 * the defaults). Returns 0, or -FERRY_ECONFIG with a message naming the option
 * or variable, its value and what it accepts. */
int ferry__settings_resolve(const struct ferry_ctx_options *opt, struct ferry__settings *out);

/* A reader's shard: shard_id and num_shards as its config gives them
 * (num_shards <= 0: both from WORLD_SIZE and RANK, else 1 and 0; shard_id < 0:
 * from RANK, else 0). Returns 0 or -FERRY_ECONFIG. */
int ferry__settings_shard(int shard_id, int num_shards, unsigned *shard, unsigned *nshards);

/* ==== contexts ==== */

struct ferry_ctx {
	struct ferry__loader ld;     /* device, IO backend, lanes, threads */
	struct ferry__settings set;
	struct ferry__trace *trace;  /* FERRY_TRACE, shared by the lanes */
	char io_reason[160];         /* why this IO backend was chosen */
	uint64_t cache_used;         /* ld.cache_used points here */
	char mapped_why[512];        /* why there is no zero-copy path (ld.mapped NULL) */
	char mapped_how[256];        /* how its copies run, when there is one */
};

/* Opens the device opt (or the environment) names, as ferry_ctx_create does. */
int ferry__ctx_open_device(const struct ferry_ctx_options *opt, struct ferry__device **out);

/* A context on a device the caller opened (the context then owns it), with io
 * as the IO backend (NULL: chosen as ferry_ctx_create does). For tests that
 * wrap the device or the IO backend to inject faults. */
int ferry__ctx_create_on(struct ferry__device *dev, const struct ferry__io_ops *io,
			 const struct ferry_ctx_options *opt, ferry_ctx **out);

#endif
