/*
 * Staging lanes (FERRY_LANES): a context with several staging engines spreads
 * its calling threads over them. Eight threads pipeline async loads through
 * two buffers each, every byte checked; every lane carries copies; each lane's
 * pool is whole afterwards, grew on demand and can grow to its share of
 * max_buffers (no more); a thread keeps
 * its lane; fewer lanes where max_buffers cannot give each 8 buffers; bad
 * FERRY_LANES values are refused.
 */
#include <pthread.h>
#include <stdlib.h>

#include "context/context.h"
#include "test_reader_util.h"

#define NFILES 12
#define NTHREADS 8
#define ROUNDS 15
#define LANES 4
#define CHUNK ((size_t)8 << 10)

/* Sizes from under a chunk to several chunks. */
static void make_dataset(struct tr_files *d)
{
	d->dir = strdup(t_tmpdir());
	d->n = NFILES;
	for (unsigned i = 0; i < NFILES; i++) {
		char name[32], fill[8] = { 0 };
		int64_t len = 700 + (int64_t)i * 2900, start = 0;
		snprintf(name, sizeof(name), "f%02u.npy", i);
		d->paths[i] = strdup(tr_path(d->dir, name));
		tr_write_npy(d->paths[i], FERRY_INT32, 0, 0, 1, &len, i + 1);
		d->want[i] = tr_reference(i + 1, 4, 0, 0, 1, &len, &start, &len, fill, &d->nbytes[i]);
	}
}

struct caller {
	ferry_ctx *ctx;
	const struct tr_files *d;
	unsigned id;
};

/* Waits for buffer k's load (if any), checks it and frees it. */
static void settle(struct caller *c, ferry_array **fl, const unsigned *file, void **dst, unsigned k)
{
	if (!fl[k])
		return;
	T_OK(ferry_array_wait(fl[k]));
	tr_check_loaded(c->ctx, dst[k], c->d, file[k]);
	ferry_array_free(fl[k]);
	fl[k] = NULL;
}

static void *pipeline(void *arg)
{
	struct caller *c = arg;
	struct ferry__staging *lane = ferry__lanes_pick(c->ctx->ld.lanes);
	void *dst[2];
	ferry_array *fl[2] = { NULL, NULL };
	unsigned file[2] = { 0, 0 }, k = 0;
	size_t cap = c->d->nbytes[NFILES - 1];
	T_OK(ferry_device_alloc(c->ctx, cap, &dst[0]));
	T_OK(ferry_device_alloc(c->ctx, cap, &dst[1]));
	for (unsigned n = 0; n < ROUNDS * NFILES; n++, k ^= 1) {
		settle(c, fl, file, dst, k);
		file[k] = (c->id + n) % NFILES;
		T_OK(ferry_load_into_async(c->ctx, c->d->paths[file[k]], dst[k], cap, &fl[k]));
	}
	settle(c, fl, file, dst, 0);
	settle(c, fl, file, dst, 1);
	if (ferry__lanes_pick(c->ctx->ld.lanes) != lane)
		T_FAIL("thread %u changed lanes", c->id);
	ferry_device_free(c->ctx, dst[0]);
	ferry_device_free(c->ctx, dst[1]);
	return NULL;
}

/* Grows lane i of ctx as far as it goes and returns its buffers then: the
 * lane's share of max_buffers (pools start small and grow on demand). */
static unsigned lane_capacity(ferry_ctx *ctx, unsigned i)
{
	struct ferry__staging_stats st;
	struct ferry__staging *lane = ferry__lanes_get(ctx->ld.lanes, i);
	T_OK(ferry__staging_reserve(lane, FERRY_BUFFERS_MAX));
	ferry__staging_stats(lane, &st);
	return st.total;
}

static ferry_ctx *ctx_with_lanes(const char *lanes, int *rc)
{
	struct ferry_ctx_options o = { .gpu = -1, .direct = -1, .chunk_size = CHUNK,
				       .max_buffers = 48, .threads = 2 };
	ferry_ctx *ctx = NULL;
	setenv("FERRY_LANES", lanes, 1);
	*rc = ferry_ctx_create(&ctx, &o);
	unsetenv("FERRY_LANES");
	return ctx;
}

static void threads_share_lanes(const struct tr_files *d)
{
	int rc;
	ferry_ctx *ctx = ctx_with_lanes("4", &rc);
	T_OK(rc);
	T_ASSERT(ferry__lanes_count(ctx->ld.lanes) == LANES);
	char text[1024];
	ferry_ctx_describe(ctx, text, sizeof(text));
	if (!strstr(text, "4 lanes"))
		T_FAIL("describe does not name the lanes: %s", text);
	struct caller c[NTHREADS];
	pthread_t th[NTHREADS];
	for (unsigned i = 0; i < NTHREADS; i++) {
		c[i] = (struct caller){ ctx, d, i };
		T_ASSERT(pthread_create(&th[i], NULL, pipeline, &c[i]) == 0);
	}
	for (unsigned i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	for (unsigned i = 0; i < LANES; i++) {
		struct ferry__staging_stats st;
		ferry__staging_stats(ferry__lanes_get(ctx->ld.lanes, i), &st);
		if (st.batches_launched == 0)
			T_FAIL("lane %u carried no copy", i);
		if (st.total > 12 || st.free != st.total)
			T_FAIL("lane %u: %u of %u buffers free, expected all of at most 12", i,
			       st.free, st.total);
		if (lane_capacity(ctx, i) != 12)
			T_FAIL("lane %u grows to %u buffers, expected 12 (48 / 4 lanes)", i,
			       lane_capacity(ctx, i));
	}
	T_OK(ferry_ctx_destroy(ctx));
}

/* 48 buffers cannot give 16 lanes 8 each: 6 lanes of 8, max_buffers kept. */
static void lanes_fit_max_buffers(void)
{
	int rc;
	ferry_ctx *ctx = ctx_with_lanes("16", &rc);
	T_OK(rc);
	if (ferry__lanes_count(ctx->ld.lanes) != 6)
		T_FAIL("FERRY_LANES=16 with 48 buffers: %u lanes, expected 6", ferry__lanes_count(ctx->ld.lanes));
	for (unsigned i = 0; i < ferry__lanes_count(ctx->ld.lanes); i++)
		if (lane_capacity(ctx, i) != 8)
			T_FAIL("lane %u grows to %u buffers, expected 8", i, lane_capacity(ctx, i));
	T_OK(ferry_ctx_destroy(ctx));
}

static void bad_values_refused(void)
{
	static const char *bad[] = { "0", "17", "two", "" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc;
		ferry_ctx *ctx = ctx_with_lanes(bad[i], &rc);
		if (*bad[i] && rc != -FERRY_ECONFIG)
			T_FAIL("FERRY_LANES=%s: rc %d, expected -FERRY_ECONFIG", bad[i], rc);
		if (!*bad[i] && (rc != 0 || ferry__lanes_count(ctx->ld.lanes) != 4))
			T_FAIL("FERRY_LANES empty: rc %d, not the default of 4 lanes", rc);
		ferry_ctx_destroy(ctx);
	}
}

/* Returns the buffers ctx's lanes can grow to, together. */
static unsigned ctx_buffers(ferry_ctx *ctx)
{
	unsigned total = 0;
	for (unsigned i = 0; i < ferry__lanes_count(ctx->ld.lanes); i++)
		total += lane_capacity(ctx, i);
	return total;
}

/* FERRY_MAX_BUFFERS sets the pool when the options leave it 0; the options win. */
static void max_buffers_from_env(void)
{
	static const struct {
		const char *env;
		unsigned option, want; /* want 0: refused */
	} cases[] = { { "24", 0, 24 }, { "24", 48, 48 }, { "0", 0, 0 }, { "4097", 0, 0 },
		      { "many", 0, 0 } };
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ferry_ctx_options o = { .gpu = -1, .direct = -1, .chunk_size = CHUNK,
					       .max_buffers = cases[i].option, .threads = 2 };
		ferry_ctx *ctx = NULL;
		setenv("FERRY_MAX_BUFFERS", cases[i].env, 1);
		int rc = ferry_ctx_create(&ctx, &o);
		unsetenv("FERRY_MAX_BUFFERS");
		if (!cases[i].want && rc != -FERRY_ECONFIG)
			T_FAIL("FERRY_MAX_BUFFERS=%s: rc %d, expected -FERRY_ECONFIG", cases[i].env, rc);
		if (cases[i].want && (rc != 0 || ctx_buffers(ctx) != cases[i].want))
			T_FAIL("FERRY_MAX_BUFFERS=%s, max_buffers %u: rc %d, %u buffers, expected %u",
			       cases[i].env, cases[i].option, rc, rc ? 0 : ctx_buffers(ctx),
			       cases[i].want);
		ferry_ctx_destroy(ctx);
	}
}

int main(void)
{
	struct tr_files d;
	make_dataset(&d);
	threads_share_lanes(&d);
	lanes_fit_max_buffers();
	bad_values_refused();
	max_buffers_from_env();
	tr_files_free(&d);
	printf("lanes: ok\n");
	return T_EXIT_PASS;
}
