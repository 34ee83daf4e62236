/*
 * ferry__staging_launch_for: the pending batch is launched when it holds a
 * ticket's copies, and only then. A ticket whose batch is launched already
 * (by its own launch, a commit, or a full batch) launches nothing more: a
 * later ticket's copies stay pending until their own launch. Every byte that
 * lands is checked. On the device FERRY_DEVICE names.
 */
#include "test_lane_util.h"

static uint64_t launched(const struct t_lane *l)
{
	return tl_stats(l).batches_launched;
}

static unsigned pending(const struct t_lane *l)
{
	return tl_stats(l).pending;
}

/* Checks every ticket's bytes, then frees the lane. */
static void check_and_close(struct t_lane *l)
{
	for (unsigned i = 0; i < TL_COPIES; i++)
		tl_check(l, i);
	tl_close(l);
}

static void test_launches_only_its_own_batch(struct ferry__device *dev)
{
	struct t_lane l;
	tl_open(dev, &l, 32);
	tl_queue(&l, 0);
	T_EQ(launched(&l), 0);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[0]));
	T_EQ(launched(&l), 1);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[0])); /* launched already: nothing */
	T_EQ(launched(&l), 1);
	tl_queue(&l, 1);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[0])); /* must not launch t[1]'s batch */
	T_EQ(launched(&l), 1);
	T_EQ(pending(&l), 1);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[1]));
	T_EQ(launched(&l), 2);
	T_EQ(pending(&l), 0);
	tl_queue(&l, 2);
	tl_queue(&l, 3);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[3])); /* one batch holds both */
	T_EQ(launched(&l), 3);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[2]));
	T_EQ(launched(&l), 3);
	check_and_close(&l);
}

static void test_after_a_commit(struct ferry__device *dev)
{
	struct t_lane l;
	tl_open(dev, &l, 32);
	tl_queue(&l, 0);
	T_OK(ferry__staging_commit(l.stg, NULL));
	T_EQ(launched(&l), 1);
	tl_queue(&l, 1);
	T_OK(ferry__staging_launch_for(l.stg, &l.t[0]));
	T_EQ(launched(&l), 1);
	T_EQ(pending(&l), 1);
	tl_queue(&l, 2);
	tl_queue(&l, 3);
	T_OK(ferry__staging_commit(l.stg, NULL));
	for (unsigned i = 0; i < TL_COPIES; i++)
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
