/* The context behind ferry_ctx: what every loading call needs. */
#ifndef FERRY_CONTEXT_H
#define FERRY_CONTEXT_H

#include "device/device.h"
#include "ferry.h"
#include "io/io.h"
#include "base/base.h"
#include "engine/engine.h"

#define FERRY__MAX_LANES 16

struct ferry_ctx {
	struct ferry__device *dev;
	const struct ferry__io_ops *io_ops;
	struct ferry__io *io;
	struct ferry__staging *lanes[FERRY__MAX_LANES]; /* staging engines: see ferry__ctx_lane */
	unsigned nlanes;
	struct ferry__pool *pool;
	unsigned threads;        /* IO threads, the caller included */
	int direct;              /* open files with O_DIRECT */
	char io_reason[160];     /* why this IO backend was chosen */
};

/* A context on a device the caller opened (the context then owns it), with io
 * as the IO backend (NULL: chosen as ferry_ctx_create does). For tests that
 * wrap the device or the IO backend to inject faults. */
int ferry__ctx_create_on(struct ferry__device *dev, const struct ferry__io_ops *io,
			 const struct ferry_ctx_options *opt, ferry_ctx **out);

/* The staging engine for loads from the calling thread. Each engine has one
 * lock and one copy stream; threads are spread over the lanes (a thread keeps
 * its lane), so callers loading small files in parallel do not queue behind
 * one lock. Every copy of one load goes through the lane its ticket names. */
struct ferry__staging *ferry__ctx_lane(ferry_ctx *ctx);

#endif
