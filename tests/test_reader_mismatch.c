/* Samples of one batch share dtype and rank: a file that breaks that is
 * -FERRY_EMISMATCH naming it; the reader goes on and closes cleanly. Samples
 * of different shapes (same rank) are fine. */
#include "test_reader_util.h"

static void expect_mismatch(ferry_ctx *ctx, const char *dir, const char *bad)
{
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 3, .epochs = 1 };
	ferry_reader *r;
	ferry_batch *b;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	int rc = ferry_reader_next(r, &b);
	T_EQ(rc, -FERRY_EMISMATCH);
	T_ASSERT(b == NULL);
	if (!strstr(ferry_last_error(), bad))
		T_FAIL("message does not name %s: %s", bad, ferry_last_error());
	/* The second batch (f003, f004) is fine. */
	T_OK(ferry_reader_next(r, &b));
	T_EQ(ferry_batch_size(b), 2);
	ferry_batch_release(b);
	T_EQ(ferry_reader_next(r, &b), -FERRY_EEND);
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	char *dir = t_tmpdir();
	ferry_ctx *ctx = tr_ctx(0, 2);
	int64_t s2[2] = { 3, 5 }, s1[1] = { 7 };
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	tr_write_vectors(dir, 5);
	/* rank: f001 becomes 2-D */
	tr_write_npy(tr_path(dir, "f001.npy"), FERRY_INT32, 0, 0, 2, s2, 1);
	expect_mismatch(ctx, dir, "f001.npy");
	/* dtype: f002 becomes float32 (f001 back to int32 of another length) */
	tr_write_npy(tr_path(dir, "f001.npy"), FERRY_INT32, 0, 0, 1, s1, 1);
	tr_write_npy(tr_path(dir, "f002.npy"), FERRY_FLOAT32, 0, 0, 1, s1, 2);
	expect_mismatch(ctx, dir, "f002.npy");
	/* under skip, the file is left out and counted */
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 3, .epochs = 1,
					   .on_error = FERRY_ON_ERROR_SKIP };
	struct ferry_reader_stats st;
	ferry_reader *r;
	int idx[8];
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_EQ(tr_collect(r, idx, 8, NULL, NULL), 4);
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	T_EQ(st.files_skipped, 1);
	T_OK(ferry_reader_close(r));
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	return T_EXIT_PASS;
}
