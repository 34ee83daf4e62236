/*
 * ferry__staging_hold_launches: while launches are held (the registrar holds
 * them while a registration holds the device's launches up), the engine's
 * early launches leave the batch pending: a batch past launch_after, a commit
 * without a fence, launch_for. Every launch that someone waits on still
 * happens: a wait, a lease that finds no buffer free, a commit with a fence.
 * Ending the hold launches what was left pending. Every byte that lands is
 * checked. On the device FERRY_DEVICE names.
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

/* COPIES buffers, a batch launched early once it holds more than one copy. */
static void open_lane(struct ferry__device *dev, struct lane *l)
{
	l->dev = dev;
	l->stg = t_pinned_engine_after(dev, CHUNK, COPIES, 1);
	for (unsigned i = 0; i < COPIES; i++) {
		T_OK(dev->ops->mem_alloc(dev, LEN, &l->dst[i]));
		l->t[i] = (struct ferry__ticket){ .stg = l->stg };
	}
}

/* Queues copy i (pattern seed i + 1) on ticket i. */
static void queue(struct lane *l, unsigned i)
{
	struct ferry__buf *b;
	T_OK(ferry__staging_lease(l->stg, &b));
	t_fill_pattern(b->data, LEN, i + 1, 0);
	struct ferry__copy c = { .dst = l->dst[i], .len = LEN };
	T_OK(ferry__staging_queue(l->stg, b, &c, 1, &l->t[i]));
}

static struct ferry__staging_stats stats(const struct lane *l)
{
	struct ferry__staging_stats st;
	ferry__staging_stats(l->stg, &st);
	return st;
}

/* Waits for ticket i and checks its bytes. */
static void check(struct lane *l, unsigned i)
{
	T_OK(ferry__staging_wait(l->stg, &l->t[i]));
	unsigned char *back = t_copy_back(l->dev, l->dst[i], LEN);
	T_EQ(t_check_pattern(back, LEN, i + 1, 0), LEN);
	free(back);
}

static void close_lane(struct lane *l)
{
	T_OK(ferry__staging_destroy(l->stg));
	for (unsigned i = 0; i < COPIES; i++)
		l->dev->ops->mem_free(l->dev, l->dst[i]);
}

/* Held: no early launch; the hold's end launches the one pending batch. */
static void test_early_launches_wait(struct ferry__device *dev)
{
	struct lane l;
	open_lane(dev, &l);
	T_OK(ferry__staging_hold_launches(l.stg, 1));
	for (unsigned i = 0; i < COPIES; i++)
		queue(&l, i); /* past launch_after from the second on */
	T_OK(ferry__staging_commit(l.stg, NULL));
	T_OK(ferry__staging_launch_for(l.stg, &l.t[COPIES - 1]));
	T_EQ(stats(&l).batches_launched, 0);
	T_EQ(stats(&l).pending, COPIES);
	T_ASSERT(stats(&l).launches_held >= 4); /* three queues, the commit, launch_for */
	T_OK(ferry__staging_hold_launches(l.stg, 0));
	T_EQ(stats(&l).batches_launched, 1);
	T_EQ(stats(&l).pending, 0);
	for (unsigned i = 0; i < COPIES; i++)
		check(&l, i);
	queue(&l, 0); /* not held: launched early again */
	queue(&l, 1);
	T_EQ(stats(&l).batches_launched, 2);
	check(&l, 0);
	check(&l, 1);
	close_lane(&l);
}

/* Held: a wait, a commit with a fence, and a lease with every buffer
 * pending each launch what they need, and nothing hangs. */
static void test_needed_launches_happen(struct ferry__device *dev)
{
	struct lane l;
	open_lane(dev, &l);
	T_OK(ferry__staging_hold_launches(l.stg, 1));
	queue(&l, 0);
	check(&l, 0); /* the wait launched it */
	T_EQ(stats(&l).batches_launched, 1);
	queue(&l, 1);
	struct ferry__event *fence;
	T_OK(dev->ops->event_create(dev, &fence));
	T_OK(ferry__staging_commit(l.stg, fence));
	T_EQ(stats(&l).batches_launched, 2);
	T_OK(dev->ops->event_sync(dev, fence));
	check(&l, 1);
	for (unsigned i = 0; i < COPIES; i++)
		queue(&l, i); /* every buffer pending */
	T_EQ(stats(&l).batches_launched, 2);
	struct ferry__buf *b;
	T_OK(ferry__staging_lease(l.stg, &b)); /* launches them, waits for one */
	T_EQ(stats(&l).batches_launched, 3);
	T_OK(ferry__staging_give_back(l.stg, b));
	for (unsigned i = 0; i < COPIES; i++)
		check(&l, i);
	T_OK(ferry__staging_hold_launches(l.stg, 0)); /* nothing pending: nothing launched */
	T_EQ(stats(&l).batches_launched, 3);
	dev->ops->event_destroy(dev, fence);
	close_lane(&l);
}

int main(void)
{
	struct ferry__device *dev = t_open_device();
	test_early_launches_wait(dev);
	test_needed_launches_happen(dev);
	dev->ops->close(dev);
	printf("ok: held launches wait for the hold's end; waits, fences and a full pool "
	       "launch all the same\n");
	return T_EXIT_PASS;
}
