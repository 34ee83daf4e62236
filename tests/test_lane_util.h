/*
 * What the engine's launch tests share (header-only, like test_reader_util.h):
 * one staging engine with TL_COPIES destinations and tickets; copy i carries
 * the pattern of file i + 1, so a byte that lands in the wrong place says
 * which copy it came from.
 */
#ifndef FERRY_TEST_LANE_UTIL_H
#define FERRY_TEST_LANE_UTIL_H

#include "base/base.h"
#include "engine/engine.h"
#include "helpers.h"

#define TL_CHUNK ((size_t)64 << 10)
#define TL_LEN 4096
#define TL_COPIES 4

struct t_lane {
	struct ferry__device *dev;
	struct ferry__staging *stg;
	void *dst[TL_COPIES];
	struct ferry__ticket t[TL_COPIES];
};

/* TL_COPIES buffers; a batch launched early once it holds more than
 * launch_after copies. */
static inline void tl_open(struct ferry__device *dev, struct t_lane *l, unsigned launch_after)
{
	l->dev = dev;
	l->stg = t_pinned_engine_after(dev, TL_CHUNK, TL_COPIES, launch_after);
	for (unsigned i = 0; i < TL_COPIES; i++) {
		T_OK(dev->ops->mem_alloc(dev, TL_LEN, &l->dst[i]));
		l->t[i] = (struct ferry__ticket){ .stg = l->stg };
	}
}

/* Queues copy i on ticket i. */
static inline void tl_queue(struct t_lane *l, unsigned i)
{
	struct ferry__buf *b;
	T_OK(ferry__staging_lease(l->stg, &b));
	t_fill_pattern(b->data, TL_LEN, i + 1, 0);
	struct ferry__copy c = { .dst = l->dst[i], .len = TL_LEN };
	T_OK(ferry__staging_queue(l->stg, b, &c, 1, &l->t[i]));
}

static inline struct ferry__staging_stats tl_stats(const struct t_lane *l)
{
	struct ferry__staging_stats st;
	ferry__staging_stats(l->stg, &st);
	return st;
}

/* Waits for ticket i and checks every byte of copy i. */
static inline void tl_check(struct t_lane *l, unsigned i)
{
	T_OK(ferry__staging_wait(l->stg, &l->t[i]));
	unsigned char *back = t_copy_back(l->dev, l->dst[i], TL_LEN);
	T_EQ(t_check_pattern(back, TL_LEN, i + 1, 0), TL_LEN);
	free(back);
}

static inline void tl_close(struct t_lane *l)
{
	T_OK(ferry__staging_destroy(l->stg));
	for (unsigned i = 0; i < TL_COPIES; i++)
		l->dev->ops->mem_free(l->dev, l->dst[i]);
}

#endif
