/* Lanes: several staging engines of one context, and which one a thread uses. */
#include "engine/engine.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/base.h"

struct ferry__lanes {
	unsigned n;
	struct ferry__staging *lane[FERRY__MAX_LANES];
};

int ferry__lanes_create(struct ferry__device *dev, const struct ferry__staging_config *cfg,
			unsigned n, struct ferry__lanes **out)
{
	if (n < 1 || n > FERRY__MAX_LANES)
		return ferry__fail(-FERRY_ECONFIG, "lanes: %u: expected 1 to %d", n, FERRY__MAX_LANES);
	struct ferry__lanes *l = calloc(1, sizeof(*l));
	if (!l)
		return ferry__fail(-ENOMEM, "lanes: out of memory");
	struct ferry__staging_config one = *cfg;
	int rc = 0;
	for (; rc == 0 && l->n < n; l->n += rc == 0) {
		one.lane = l->n;
		rc = ferry__staging_create(dev, &one, &l->lane[l->n]);
	}
	if (rc < 0) {
		ferry__lanes_destroy(l);
		return rc;
	}
	*out = l;
	return 0;
}

int ferry__lanes_destroy(struct ferry__lanes *l)
{
	int rc = 0;
	if (!l)
		return 0;
	for (unsigned i = 0; i < l->n; i++) {
		int lane_rc = ferry__staging_destroy(l->lane[i]);
		if (rc == 0)
			rc = lane_rc;
	}
	free(l);
	return rc;
}

unsigned ferry__lanes_count(const struct ferry__lanes *l)
{
	return l->n;
}

struct ferry__staging *ferry__lanes_get(const struct ferry__lanes *l, unsigned i)
{
	return l->lane[i];
}

/* Threads are numbered 1, 2, ... at their first pick (0 before), process-wide,
 * so that the threads of one program spread evenly over any context's lanes. */
unsigned ferry__lanes_pick_index(const struct ferry__lanes *l)
{
	static atomic_uint threads_seen;
	static _Thread_local unsigned thread_number;
	if (l->n == 1)
		return 0;
	if (!thread_number)
		thread_number = atomic_fetch_add(&threads_seen, 1) + 1;
	return (thread_number - 1) % l->n;
}

struct ferry__staging *ferry__lanes_pick(const struct ferry__lanes *l)
{
	return l->lane[ferry__lanes_pick_index(l)];
}

uint64_t ferry__lanes_launched(const struct ferry__lanes *l)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < l->n; i++) {
		struct ferry__staging_stats st;
		ferry__staging_stats(l->lane[i], &st);
		n += st.batches_launched;
	}
	return n;
}

void ferry__lanes_hold_launches(const struct ferry__lanes *l, int hold)
{
	for (unsigned i = 0; i < l->n; i++)
		(void)ferry__staging_hold_launches(l->lane[i], hold); /* errors reach tickets */
}
