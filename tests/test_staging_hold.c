/*
 * ferry__staging_hold_launches: while launches are held (the registrar holds
 * them while a registration holds the device's launches up), the engine's
 * early launches leave the batch pending: a batch past launch_after, a commit
 * without a fence, launch_for. Every launch that someone waits on still
 * happens: a wait, a lease that finds no buffer free, a commit with a fence.
 * Ending the hold launches what was left pending. Every byte that lands is
 * checked. On the device FERRY_DEVICE names.
 */
#include "test_lane_util.h"

/* Held: no early launch; the hold's end launches the one pending batch. */
static void test_early_launches_wait(struct ferry__device *dev)
{
	struct t_lane l;
	tl_open(dev, &l, 1);
	T_OK(ferry__staging_hold_launches(l.stg, 1));
	for (unsigned i = 0; i < TL_COPIES; i++)
		tl_queue(&l, i); /* past launch_after from the second on */
	T_OK(ferry__staging_commit(l.stg, NULL));
	T_OK(ferry__staging_launch_for(l.stg, &l.t[TL_COPIES - 1]));
	T_EQ(tl_stats(&l).batches_launched, 0);
	T_EQ(tl_stats(&l).pending, TL_COPIES);
	T_ASSERT(tl_stats(&l).launches_held >= 4); /* three queues, the commit, launch_for */
	T_OK(ferry__staging_hold_launches(l.stg, 0));
	T_EQ(tl_stats(&l).batches_launched, 1);
	T_EQ(tl_stats(&l).pending, 0);
	for (unsigned i = 0; i < TL_COPIES; i++)
		tl_check(&l, i);
	tl_queue(&l, 0); /* not held: launched early again */
	tl_queue(&l, 1);
	T_EQ(tl_stats(&l).batches_launched, 2);
	tl_check(&l, 0);
	tl_check(&l, 1);
	tl_close(&l);
}

/* Held: a wait, a commit with a fence, and a lease with every buffer
 * pending each launch what they need, and nothing hangs. */
static void test_needed_launches_happen(struct ferry__device *dev)
{
	struct t_lane l;
	tl_open(dev, &l, 1);
	T_OK(ferry__staging_hold_launches(l.stg, 1));
	tl_queue(&l, 0);
	tl_check(&l, 0); /* the wait launched it */
	T_EQ(tl_stats(&l).batches_launched, 1);
	tl_queue(&l, 1);
	struct ferry__event *fence;
	T_OK(dev->ops->event_create(dev, &fence));
	T_OK(ferry__staging_commit(l.stg, fence));
	T_EQ(tl_stats(&l).batches_launched, 2);
	T_OK(dev->ops->event_sync(dev, fence));
	tl_check(&l, 1);
	for (unsigned i = 0; i < TL_COPIES; i++)
		tl_queue(&l, i); /* every buffer pending */
	T_EQ(tl_stats(&l).batches_launched, 2);
	struct ferry__buf *b;
	T_OK(ferry__staging_lease(l.stg, &b)); /* launches them, waits for one */
	T_EQ(tl_stats(&l).batches_launched, 3);
	T_OK(ferry__staging_give_back(l.stg, b));
	for (unsigned i = 0; i < TL_COPIES; i++)
		tl_check(&l, i);
	T_OK(ferry__staging_hold_launches(l.stg, 0)); /* nothing pending: nothing launched */
	T_EQ(tl_stats(&l).batches_launched, 3);
	dev->ops->event_destroy(dev, fence);
	tl_close(&l);
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
