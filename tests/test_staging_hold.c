/*
 * ferry__staging_hold_launches: while launches are held (the registrar holds
 * them while a registration holds the device's launches up), the engine's
 * early launches leave the batch pending: a batch past launch_after, a commit
 * without a fence, launch_for. Every launch that someone waits on still
 * happens: a wait, a lease that finds no buffer free, a commit with a fence.
 * Ending the hold launches what was left pending, and the trace's row of a
 * copy issued then still names its file, though the caller's string is gone
 * (the engine keeps its own). Every byte that lands is checked. On the device
 * FERRY_DEVICE names.
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

/* A copy queued with a tag the caller frees at once, launched after the hold:
 * its trace row names the file all the same. */
static void test_trace_outlives_the_tag(struct ferry__device *dev)
{
	char *dir = strdup(t_tmpdir()), trace_path[300];
	snprintf(trace_path, sizeof(trace_path), "%s/trace.csv", dir);
	struct ferry__trace *trace;
	T_OK(ferry__trace_open(trace_path, &trace));
	struct ferry__staging_config cfg = { .chunk_size = TL_CHUNK, .max_buffers = 2,
					     .initial_buffers = 2, .launch_after = 1,
					     .placement = FERRY__STAGE_PINNED, .trace = trace };
	struct ferry__staging *stg;
	T_OK(ferry__staging_create(dev, &cfg, &stg));
	void *dst;
	T_OK(dev->ops->mem_alloc(dev, TL_LEN, &dst));
	T_OK(ferry__staging_hold_launches(stg, 1));
	struct ferry__buf *b;
	T_OK(ferry__staging_lease(stg, &b));
	t_fill_pattern(b->data, TL_LEN, 9, 0);
	char *path = strdup("a-closed-file.npy");
	struct ferry__ticket t = { .stg = stg };
	struct ferry__copy c = { .dst = dst, .len = TL_LEN, .tag = path };
	T_OK(ferry__staging_queue(stg, b, &c, 1, &t));
	memset(path, 'X', strlen(path)); /* the file closed: its path gone */
	free(path);
	T_OK(ferry__staging_hold_launches(stg, 0));
	T_OK(ferry__staging_wait(stg, &t));
	unsigned char *back = t_copy_back(dev, dst, TL_LEN);
	T_EQ(t_check_pattern(back, TL_LEN, 9, 0), TL_LEN);
	free(back);
	T_OK(ferry__staging_destroy(stg));
	dev->ops->mem_free(dev, dst);
	ferry__trace_close(trace);
	char line[512];
	int copy_rows = 0;
	FILE *f = fopen(trace_path, "r");
	T_ASSERT(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, ",copy,")) {
			copy_rows++;
			if (!strstr(line, ",\"a-closed-file.npy\","))
				T_FAIL("the copy's trace row names no file: %s", line);
		}
	fclose(f);
	T_EQ(copy_rows, 1);
	t_rmtree(dir);
	free(dir);
}

int main(void)
{
	struct ferry__device *dev = t_open_device();
	test_early_launches_wait(dev);
	test_needed_launches_happen(dev);
	test_trace_outlives_the_tag(dev);
	dev->ops->close(dev);
	printf("ok: held launches wait for the hold's end; waits, fences and a full pool "
	       "launch all the same\n");
	return T_EXIT_PASS;
}
