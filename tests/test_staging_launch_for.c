/*
 * ferry__staging_launch_for: the pending batch is launched when it holds a
 * ticket's copies, and only then. A ticket whose batch is launched already
 * (by its own launch, a commit, or a full batch) launches nothing more: a
 * later ticket's copies stay pending until their own launch. Every byte that
 * lands is checked. On the device FERRY_DEVICE names.
 */
#include "base/base.h"
#include "engine/engine.h"
#include "helpers.h"

#define CHUNK ((size_t)64 << 10)
#define LEN 4096
#define COPIES 4

struct lane {
	struct ferry__device *dev;
	struct ferry__staging *stg;
	void *dst[COPIES];
	struct ferry__ticket t[COPIES];
};

static void open_lane(struct ferry__device *dev, struct lane *l)
{
	l->dev = dev;
	l->stg = t_pinned_engine(dev, CHUNK, COPIES);
	for (unsigned i = 0; i < COPIES; i++) {
		T_OK(dev->ops->mem_alloc(dev, LEN, &l->dst[i]));
		l->t[i] = (struct ferry__ticket){ .stg = l->stg };
	}
}

/* Queues copy i (pattern seed i + 1) on ticket i, into the pending batch. */
static void queue(struct lane *l, unsigned i)
{
	struct ferry__buf *b;
	T_OK(ferry__staging_lease(l->stg, &b));
	t_fill_pattern(b->data, LEN, i + 1, 0);
	struct ferry__copy c = { .dst = l->dst[i], .len = LEN };
	T_OK(ferry__staging_queue(l->stg, b, &c, 1, &l->t[i]));
}

static uint64_t launched(const struct lane *l)
{
	struct ferry__staging_stats st;
	ferry__staging_stats(l->stg, &st);
	return st.batches_launched;
}

static unsigned pending(const struct lane *l)
{
	struct ferry__staging_stats st;
	ferry__staging_stats(l->stg, &st);
	return st.pending;
}

/* Waits for every ticket and checks every byte, then frees the lane. */
static void check_and_close(struct lane *l)
{
	for (unsigned i = 0; i < COPIES; i++) {
		T_OK(ferry__staging_wait(l->stg, &l->t[i]));
		unsigned char *back = t_copy_back(l->dev, l->dst[i], LEN);
		T_EQ(t_check_pattern(back, LEN, i + 1, 0), LEN);
		free(back);
	}
	T_OK(ferry__staging_destroy(l->stg));
	for (unsigned i = 0; i < COPIES; i++)
		l->dev->ops->mem_free(l->dev, l->dst[i]);
}

static void test_launches_only_its_own_batch(struct ferry__device *dev)
{
	struct lane l;
	open_lane(dev, &l);
	queue(&l, 0);
	T_EQ(launched(&l), 0);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[0]));
	T_EQ(launched(&l), 1);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[0])); /* launched already: nothing */
	T_EQ(launched(&l), 1);
	queue(&l, 1);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[0])); /* must not launch t[1]'s batch */
	T_EQ(launched(&l), 1);
	T_EQ(pending(&l), 1);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[1]));
	T_EQ(launched(&l), 2);
	T_EQ(pending(&l), 0);
	queue(&l, 2);
	queue(&l, 3);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[3])); /* one batch holds both */
	T_EQ(launched(&l), 3);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[2]));
	T_EQ(launched(&l), 3);
	check_and_close(&l);
}

static void test_after_a_commit(struct ferry__device *dev)
{
	struct lane l;
	open_lane(dev, &l);
	queue(&l, 0);
	T_OK(ferry__staging_commit(l.stg, NULL));
	T_EQ(launched(&l), 1);
	queue(&l, 1);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[0]));
	T_EQ(launched(&l), 1);
	T_EQ(pending(&l), 1);
	queue(&l, 2);
	queue(&l, 3);
	T_OK(ferry__staging_commit(l.stg, NULL));
	for (unsigned i = 0; i < COPIES; i++)
		T_OK(ferry__staging_launch_for(l.stg, &l.t[i]));
	T_EQ(launched(&l), 2);
	check_and_close(&l);
}

int main(void)
{
	struct ferry__device *dev = t_open_device();
	test_launches_only_its_own_batch(dev);
	test_after_a_commit(dev);
	dev->ops->close(dev);
	return T_EXIT_PASS;
}
