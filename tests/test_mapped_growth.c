/*
 * The registrar registers nothing while a lane's staging pool grows (the
 * growth's own registration would wait behind it, and every launch with it:
 * docs/design.md, "Zero copy"). A file is offered while the registrar is held;
 * a lane's growth is made to wait in the fault device's pinned allocation;
 * the registrar, let go, must look, find the pool growing and wait, without
 * a registration; once the growth ends it registers the file, and the next
 * load copies from that registration, every byte checked.
 */
#include <pthread.h>
#include <time.h>

#include "test_mapped_util.h"

#define WATCHDOG_MS 20000

static void *grow_one_block(void *arg)
{
	struct ferry__staging *stg = arg;
	struct ferry__staging_stats st;
	ferry__staging_stats(stg, &st);
	T_OK(ferry__staging_reserve(stg, st.total + 1));
	return NULL;
}

/* Waits until the registrar has either waited for the growth twice or
 * registered something. */
static struct ferry__mapped_stats registrar_looked(ferry_ctx *ctx)
{
	struct timespec ms = { 0, 1000000 };
	for (unsigned waited = 0; waited < WATCHDOG_MS; waited++) {
		struct ferry__mapped_stats st = tm_stats(ctx);
		if (st.growth_waits >= 2 || st.registrations > 0)
			return st;
		nanosleep(&ms, NULL);
	}
	T_FAIL("the registrar neither waited for the growing pool nor registered in %d ms",
	       WATCHDOG_MS);
}

int main(void)
{
	unsetenv("FERRY_IO");
	setenv("FERRY_ODIRECT", "0", 1);
	tm_setup();
	struct ferry__device *fdev;
	ferry_ctx *ctx = tm_fault_ctx(T_FAULT_NONE, 0, 0, &fdev);
	ferry__mapped_hold(ctx->ld.mapped, 1);
	tm_load(ctx, 0, "the file offered");

	struct ferry__staging *stg = ferry__lanes_get(ctx->ld.lanes, 0);
	struct ferry__staging_stats st;
	ferry__staging_stats(stg, &st);
	T_ASSERT(st.total < ctx->set.max_buffers / ferry__lanes_count(ctx->ld.lanes));
	t_fault_hold(fdev, T_FAULT_PINNED_ALLOC);
	pthread_t grower;
	T_ASSERT(pthread_create(&grower, NULL, grow_one_block, stg) == 0);
	t_fault_wait_held(fdev);
	ferry__mapped_hold(ctx->ld.mapped, 0);

	struct ferry__mapped_stats seen = registrar_looked(ctx);
	T_EQ(seen.registrations, 0u);
	T_EQ(t_fault_calls(fdev, T_FAULT_MAP_REGISTER), 0ul);
	t_fault_hold(fdev, T_FAULT_NONE);
	T_ASSERT(pthread_join(grower, NULL) == 0);
	ferry__mapped_drain(ctx->ld.mapped);
	T_EQ(tm_stats(ctx).registrations, 1u);

	uint64_t hits = tm_stats(ctx).hits;
	tm_load(ctx, 0, "copied from its registration");
	tm_expect_hit(ctx, hits, 1, "the load after the growth");
	T_OK(ferry_ctx_destroy(ctx));
	tm_teardown();
	printf("ok: the registrar waited %llu times for a growing staging pool, then registered\n",
	       (unsigned long long)seen.growth_waits);
	return 0;
}
