/*
 * ferry__staging_cover: a ticket covers work queued on the lane's copy stream
 * after its copies, as a load's conversion is. A gate holds that work (a fill
 * standing in for a kernel): waiting for the ticket must still be blocked
 * 100 ms later, as must a fence committed after the cover, and once the gate
 * opens the wait returns with the work done. Covering a ticket with nothing
 * queued, and destroying the engine afterwards, work too. On the device
 * FERRY_DEVICE names.
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "base/base.h"
#include "engine/engine.h"
#include "helpers.h"

#define CHUNK ((size_t)64 << 10)
#define LEN 4096
#define MARK 0x7e

struct waiter {
	struct ferry__staging *stg;
	struct ferry__ticket *t;
	void *marker;
	int rc, done, saw_mark;
};

static void *wait_ticket(void *arg)
{
	struct waiter *w = arg;
	w->rc = ferry__staging_wait(w->stg, w->t);
	__atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
	unsigned char *back = t_copy_back(ferry__staging_device(w->stg), w->marker, 1);
	w->saw_mark = back[0] == MARK;
	free(back);
	return NULL;
}

/* Queues a copy on t and commits it, then holds the copy stream behind a gate
 * with a fill of marker queued after it. */
static void queue_copy_then_held_fill(struct ferry__staging *stg, struct ferry__ticket *t,
				      void *dst, void *marker, struct ferry__gate *g)
{
	struct ferry__device *dev = ferry__staging_device(stg);
	struct ferry__buf *b;
	T_OK(ferry__staging_lease(stg, &b));
	t_fill_pattern(b->data, LEN, 7, 0);
	struct ferry__copy c = { .dst = dst, .len = LEN };
	T_OK(ferry__staging_queue(stg, b, &c, 1, t));
	T_OK(ferry__staging_commit(stg, NULL));
	T_OK(dev->ops->gate_hold(dev, ferry__staging_stream(stg), g));
	T_OK(dev->ops->memset_async(dev, ferry__staging_stream(stg), marker, MARK, 1));
}

static void test_cover_waits_for_later_work(struct ferry__device *dev)
{
	struct ferry__staging *stg = t_pinned_engine(dev, CHUNK, 4);
	struct ferry__ticket t = { .stg = stg };
	struct ferry__gate *g;
	struct ferry__event *fence;
	void *dst, *marker;
	T_OK(dev->ops->mem_alloc(dev, LEN, &dst));
	T_OK(dev->ops->mem_alloc(dev, 64, &marker));
	T_OK(dev->ops->event_create(dev, &fence));
	T_OK(dev->ops->gate_create(dev, &g));
	queue_copy_then_held_fill(stg, &t, dst, marker, g);
	T_OK(ferry__staging_cover(stg, &t));
	T_OK(ferry__staging_commit(stg, fence));
	struct waiter w = { .stg = stg, .t = &t, .marker = marker };
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, wait_ticket, &w) == 0);
	usleep(100 * 1000);
	if (__atomic_load_n(&w.done, __ATOMIC_SEQ_CST))
		T_FAIL("the covered ticket's wait returned while the work after its copies was held");
	T_EQ(dev->ops->event_query(dev, fence), -EAGAIN);
	T_OK(dev->ops->gate_open(dev, g));
	T_ASSERT(pthread_join(th, NULL) == 0);
	T_OK(w.rc);
	T_ASSERT(w.saw_mark);
	T_OK(dev->ops->event_sync(dev, fence));
	unsigned char *back = t_copy_back(dev, dst, LEN);
	T_EQ(t_check_pattern(back, LEN, 7, 0), LEN);
	free(back);
	T_OK(ferry__staging_destroy(stg));
	dev->ops->gate_destroy(dev, g);
	dev->ops->event_destroy(dev, fence);
	dev->ops->mem_free(dev, dst);
	dev->ops->mem_free(dev, marker);
}

static void test_cover_nothing(struct ferry__device *dev)
{
	struct ferry__staging *stg = t_pinned_engine(dev, CHUNK, 4);
	struct ferry__ticket t = { .stg = stg };
	struct ferry__staging_stats st;
	T_OK(ferry__staging_cover(stg, &t));
	T_OK(ferry__staging_wait(stg, &t));
	ferry__staging_stats(stg, &st);
	T_EQ(st.batches_launched, 1);
	T_EQ(st.in_flight, 0);
	T_EQ(st.leased, 0);
	T_OK(ferry__staging_destroy(stg));
}

int main(void)
{
	struct ferry__device *dev = t_open_device();
	test_cover_nothing(dev);
	test_cover_waits_for_later_work(dev);
	dev->ops->close(dev);
	return T_EXIT_PASS;
}
