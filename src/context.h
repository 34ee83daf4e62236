/* The context behind ferry_ctx: what every loading call needs. */
#ifndef FERRY_CONTEXT_H
#define FERRY_CONTEXT_H

#include "device.h"
#include "ferry.h"
#include "io.h"
#include "pool.h"
#include "staging.h"

struct ferry_ctx {
	struct ferry__device *dev;
	const struct ferry__io_ops *io_ops;
	struct ferry__io *io;
	struct ferry__staging *stg;
	struct ferry__pool *pool;
	unsigned threads;        /* IO threads, the caller included */
	int direct;              /* open files with O_DIRECT */
	char io_reason[160];     /* why this IO backend was chosen */
};

#endif
