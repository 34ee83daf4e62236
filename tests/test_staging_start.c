/*
 * Staging pools start small and grow on demand: a new context has allocated
 * no staging buffer (so ferry env pins nothing); a first small load grows one
 * lane to 4 buffers and leaves the others empty; a load of many chunks grows
 * its lane geometrically (4, 8, 16, 32), never past the lane's share of
 * max_buffers, and the data arrives intact; a pool smaller than 4 buffers
 * starts at its whole size.
 */
#include <stdlib.h>

#include "context/context.h"
#include "test_reader_util.h"

#define CHUNK ((size_t)64 << 10)

/* Returns lane i's counters. */
static struct ferry__staging_stats lane_stats(ferry_ctx *ctx, unsigned i)
{
	struct ferry__staging_stats st;
	ferry__staging_stats(ferry__lanes_get(ctx->ld.lanes, i), &st);
	return st;
}

/* Returns the buffers all of ctx's lanes hold now. */
static unsigned buffers_now(ferry_ctx *ctx)
{
	unsigned total = 0;
	for (unsigned i = 0; i < ferry__lanes_count(ctx->ld.lanes); i++)
		total += lane_stats(ctx, i).total;
	return total;
}

/* Loads path, checks its bytes against file id's pattern, frees it. */
static void load_and_check(ferry_ctx *ctx, const char *path, uint32_t id, uint64_t nbytes)
{
	ferry_array *a;
	T_OK(ferry_load(ctx, path, &a));
	T_EQ(ferry_array_info(a)->nbytes, nbytes);
	void *host = malloc(nbytes);
	T_ASSERT(host);
	T_OK(ferry_copy_to_host(ctx, host, ferry_array_data(a), nbytes));
	T_EQ(t_check_pattern(host, nbytes, id, 0), nbytes);
	free(host);
	ferry_array_free(a);
}

/* Returns a context with the default lanes and buffers and 64 KiB chunks. */
static ferry_ctx *default_ctx(void)
{
	unsetenv("FERRY_MAX_BUFFERS");
	unsetenv("FERRY_LANES");
	return tr_ctx(CHUNK, 1);
}

/* A default context: no buffer at first, one lane of 4 after a small load,
 * geometric growth up to 32 after a large one. */
static void starts_empty_then_grows(const char *small, const char *large, uint64_t large_bytes)
{
	ferry_ctx *ctx = default_ctx();
	T_EQ(ferry__lanes_count(ctx->ld.lanes), 4u);
	T_EQ(buffers_now(ctx), 0u);
	load_and_check(ctx, small, 1, 192);
	unsigned grown_lanes = 0, lane = 0;
	for (unsigned i = 0; i < 4; i++)
		if (lane_stats(ctx, i).total) {
			grown_lanes++;
			lane = i;
		}
	T_EQ(grown_lanes, 1u);
	T_EQ(lane_stats(ctx, lane).total, 4u);
	T_EQ(lane_stats(ctx, lane).grown, 1u);
	load_and_check(ctx, large, 2, large_bytes);
	struct ferry__staging_stats st = lane_stats(ctx, lane);
	if (st.total != 8 && st.total != 16 && st.total != 32)
		T_FAIL("after a 40-chunk load the lane holds %u buffers, expected 8, 16 or 32",
		       st.total);
	T_ASSERT(st.grown >= 2 && st.grown <= 4);
	T_EQ(buffers_now(ctx), st.total);
	T_OK(ferry__staging_reserve(ferry__lanes_get(ctx->ld.lanes, lane), FERRY_BUFFERS_MAX));
	T_EQ(lane_stats(ctx, lane).total, 32u); /* 128 / 4 lanes, no more */
	char text[1024];
	ferry_ctx_describe(ctx, text, sizeof(text));
	if (!strstr(text, "up to 128 buffers (grown on demand)"))
		T_FAIL("describe does not say the pool grows: %s", text);
	T_OK(ferry_ctx_destroy(ctx));
}

/* FERRY_MAX_BUFFERS=2: one lane, whose first growth is its whole pool. */
static void small_pool_starts_whole(const char *small)
{
	setenv("FERRY_MAX_BUFFERS", "2", 1);
	ferry_ctx *ctx = tr_ctx(CHUNK, 1);
	unsetenv("FERRY_MAX_BUFFERS");
	T_EQ(ferry__lanes_count(ctx->ld.lanes), 1u);
	T_EQ(buffers_now(ctx), 0u);
	load_and_check(ctx, small, 1, 192);
	T_EQ(lane_stats(ctx, 0).total, 2u);
	T_OK(ferry_ctx_destroy(ctx));
}

int main(void)
{
	const char *dir = t_tmpdir();
	char small[4200], large[4200];
	int64_t small_len = 48, large_len = (int64_t)(40 * CHUNK / 4);
	snprintf(small, sizeof(small), "%s/small.npy", dir);
	snprintf(large, sizeof(large), "%s/large.npy", dir);
	tr_write_npy(small, FERRY_INT32, 0, 0, 1, &small_len, 1);
	tr_write_npy(large, FERRY_INT32, 0, 0, 1, &large_len, 2);
	starts_empty_then_grows(small, large, 40 * CHUNK);
	small_pool_starts_whole(small);
	t_rmtree(dir);
	printf("staging start: ok\n");
	return T_EXIT_PASS;
}
