/*
 * Relative regions of interest that are not numbers, or that no array could
 * hold: nan and inf are refused when the reader opens (-FERRY_ECONFIG, naming
 * the value); 1e300 and -1e300, which used to wrap inside llround and return
 * the whole array under trim, give -FERRY_EBOUNDS naming the file under every
 * policy. Ordinary relative values still work.
 */
#include <math.h>

#include "test_reader_util.h"

static int open_rel(ferry_ctx *ctx, const char *dir, const double *start, const double *end,
		    enum ferry_oob_policy policy, ferry_reader **r)
{
	struct ferry_reader_config cfg = { .root = dir, .num_shards = 1, .epochs = 1,
					   .roi_nvals = 1, .roi_start_rel = start,
					   .roi_end_rel = end, .out_of_bounds_policy = policy };
	return ferry_reader_open(ctx, &cfg, r);
}

static void expect_open_refused(ferry_ctx *ctx, const char *dir, double v)
{
	ferry_reader *r;
	int rc = open_rel(ctx, dir, &v, NULL, FERRY_OOB_TRIM, &r);
	if (rc != -FERRY_ECONFIG || !strstr(ferry_last_error(), "roi_start_rel"))
		T_FAIL("start %g: %s (%s)", v, ferry_strerror(rc), ferry_last_error());
	rc = open_rel(ctx, dir, NULL, &v, FERRY_OOB_PAD, &r);
	if (rc != -FERRY_ECONFIG || !strstr(ferry_last_error(), "roi_end_rel"))
		T_FAIL("end %g: %s (%s)", v, ferry_strerror(rc), ferry_last_error());
}

static void expect_bounds(ferry_ctx *ctx, const char *dir, const double *start,
			  const double *end, enum ferry_oob_policy policy)
{
	ferry_reader *r;
	ferry_batch *b = NULL;
	T_OK(open_rel(ctx, dir, start, end, policy, &r));
	int rc = ferry_reader_next(r, &b);
	if (rc != -FERRY_EBOUNDS || !strstr(ferry_last_error(), "f000.npy"))
		T_FAIL("start %g end %g policy %d: %s (%s)", start ? *start : 0.0, end ? *end : 0.0,
		       policy, ferry_strerror(rc), ferry_last_error());
	ferry_batch_release(b);
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	char *dir = strdup(t_tmpdir());
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	tr_write_vectors(dir, 1); /* f000.npy: int32 [4] */
	ferry_ctx *ctx = tr_ctx(4096, 1);
	expect_open_refused(ctx, dir, NAN);
	expect_open_refused(ctx, dir, INFINITY);
	expect_open_refused(ctx, dir, -INFINITY);
	double huge = 1e300, tiny = -1e300, half = 0.5;
	for (int p = FERRY_OOB_ERROR; p <= FERRY_OOB_TRIM; p++) {
		expect_bounds(ctx, dir, &huge, NULL, p);
		expect_bounds(ctx, dir, &tiny, NULL, p);
		expect_bounds(ctx, dir, &half, &huge, p);
	}
	ferry_reader *r;
	ferry_batch *b;
	struct ferry_sample s;
	T_OK(open_rel(ctx, dir, &half, NULL, FERRY_OOB_ERROR, &r));
	T_OK(ferry_reader_next(r, &b));
	T_OK(ferry_batch_sample(b, 0, &s));
	T_EQ(s.shape[0], 2);
	ferry_batch_release(b);
	T_OK(ferry_reader_close(r));
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	printf("relative ROI values that are not coordinates: refused\n");
	return T_EXIT_PASS;
}
