/*
 * Device events and gates, on whichever device FERRY_DEVICE picks: an event
 * not yet recorded is complete; one recorded behind a closed gate is not, nor
 * is a second stream made to wait on it; both complete once the gate opens.
 * An event may be destroyed while its record is still queued (as CUDA allows).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static void check_gate_and_events(struct ferry__device *dev)
{
	struct ferry__stream *a, *b;
	struct ferry__event *ev, *after;
	struct ferry__gate *g;
	char *dst, src[4096], back[4096];
	T_OK(dev->ops->mem_alloc(dev, sizeof(src), (void **)&dst));
	t_fill_pattern(src, sizeof(src), 3, 0);
	T_OK(dev->ops->stream_create(dev, &a));
	T_OK(dev->ops->stream_create(dev, &b));
	T_OK(dev->ops->event_create(dev, &ev));
	T_OK(dev->ops->event_create(dev, &after));
	T_OK(dev->ops->gate_create(dev, &g));
	T_EQ(dev->ops->event_query(dev, ev), 0); /* never recorded */
	T_OK(dev->ops->gate_hold(dev, a, g));
	T_OK(dev->ops->copy_async(dev, a, dst, src, sizeof(src), FERRY__H2D));
	T_OK(dev->ops->event_record(dev, ev, a));
	T_OK(dev->ops->stream_wait_event(dev, b, ev));
	T_OK(dev->ops->event_record(dev, after, b));
	T_EQ(dev->ops->event_query(dev, ev), -EAGAIN);
	T_EQ(dev->ops->event_query(dev, after), -EAGAIN);
	T_OK(dev->ops->gate_open(dev, g));
	T_OK(dev->ops->event_sync(dev, after));
	T_EQ(dev->ops->event_query(dev, ev), 0);
	T_OK(dev->ops->copy_sync(dev, back, dst, sizeof(back), FERRY__D2H));
	T_EQ(t_check_pattern(back, sizeof(back), 3, 0), sizeof(back));
	dev->ops->event_destroy(dev, ev);
	dev->ops->event_destroy(dev, after);
	dev->ops->gate_destroy(dev, g);
	dev->ops->stream_destroy(dev, a);
	dev->ops->stream_destroy(dev, b);
	dev->ops->mem_free(dev, dst);
}

static void check_destroy_while_queued(struct ferry__device *dev)
{
	struct ferry__stream *s;
	struct ferry__event *ev;
	struct ferry__gate *g;
	T_OK(dev->ops->stream_create(dev, &s));
	T_OK(dev->ops->gate_create(dev, &g));
	for (int i = 0; i < 4; i++) {
		T_OK(dev->ops->event_create(dev, &ev));
		if (i == 0)
			T_OK(dev->ops->gate_hold(dev, s, g));
		T_OK(dev->ops->event_record(dev, ev, s));
		dev->ops->event_destroy(dev, ev); /* its record is still queued */
	}
	T_OK(dev->ops->gate_open(dev, g));
	T_OK(dev->ops->stream_sync(dev, s));
	dev->ops->gate_destroy(dev, g);
	dev->ops->stream_destroy(dev, s);
}

int main(void)
{
	struct ferry__device *dev = t_open_device();
	check_gate_and_events(dev);
	check_destroy_while_queued(dev);
	dev->ops->close(dev);
	printf("device events: ok\n");
	return T_EXIT_PASS;
}
