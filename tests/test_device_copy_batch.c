/*
 * A batch of copies (copy_batch_async), on whichever device FERRY_DEVICE
 * picks: more copies than one driver call takes, of lengths from 0 bytes up,
 * land every byte where n single copies would; the batch runs after what
 * was queued before it (held behind a gate, it has not run; a copy queued
 * before it to the same bytes is overwritten) and before an event recorded
 * after it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define COPIES 150 /* more than one call of either backend takes (64) */

static size_t length_of(unsigned i)
{
	return i % 7 == 3 ? 0 : 1 + (size_t)i * 37 % 5000;
}

int main(void)
{
	struct ferry__device *dev = t_open_device();
	const struct ferry__device_ops *ops = dev->ops;
	struct ferry__copy_op batch[COPIES];
	struct ferry__stream *s;
	struct ferry__event *ev;
	struct ferry__gate *g;
	char *src, *dst;
	size_t total = 0;
	if (!ops->copy_batch_async)
		T_SKIP("the %s device has no batch copy", ops->name);
	for (unsigned i = 0; i < COPIES; i++)
		total += length_of(i);
	T_OK(ops->pinned_alloc(dev, total, (void **)&src));
	T_OK(ops->mem_alloc(dev, total, (void **)&dst));
	t_fill_pattern(src, total, 5, 0);
	/* Each copy takes its bytes to the same offset of dst, the copies from
	 * the end backwards: no two destinations overlap. */
	for (unsigned i = 0, at = 0; i < COPIES; at += (unsigned)length_of(i), i++)
		batch[i] = (struct ferry__copy_op){ dst + total - at - length_of(i), src + total - at -
						    length_of(i), length_of(i) };
	char *zeros; /* pinned: a pageable copy may wait for the held stream */
	T_OK(ops->pinned_alloc(dev, total, (void **)&zeros));
	memset(zeros, 0, total);
	T_OK(ops->stream_create(dev, &s));
	T_OK(ops->event_create(dev, &ev));
	T_OK(ops->gate_create(dev, &g));
	T_OK(ops->gate_hold(dev, s, g));
	T_OK(ops->copy_async(dev, s, dst, zeros, total, FERRY__H2D));
	T_OK(ops->copy_batch_async(dev, s, batch, COPIES, FERRY__H2D));
	T_OK(ops->event_record(dev, ev, s));
	T_EQ(ops->event_query(dev, ev), -EAGAIN);
	T_OK(ops->gate_open(dev, g));
	T_OK(ops->event_sync(dev, ev));
	char *back = t_copy_back(dev, dst, total);
	T_EQ(t_check_pattern(back, total, 5, 0), total);
	free(back);
	T_OK(ops->copy_batch_async(dev, s, batch, 0, FERRY__H2D)); /* nothing to do */
	ops->gate_destroy(dev, g);
	ops->event_destroy(dev, ev);
	ops->stream_destroy(dev, s);
	ops->mem_free(dev, dst);
	ops->pinned_free(dev, src, total);
	ops->pinned_free(dev, zeros, total);
	ops->close(dev);
	printf("device copy batch: %u copies, %zu bytes: ok\n", COPIES, total);
	return T_EXIT_PASS;
}
