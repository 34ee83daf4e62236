/* A bad (truncated) file mid-epoch: by default next returns its error naming
 * it, leaks no batch memory, and the reader continues and closes cleanly; with
 * on_error = skip the file is left out and counted. */
#include "test_reader_util.h"

#define NFILES 9

static void truncate_file(const char *path)
{
	struct stat st;
	T_ASSERT(stat(path, &st) == 0);
	T_ASSERT(truncate(path, st.st_size - 4) == 0);
}

static void check_stop(ferry_ctx *ctx, const char *dir)
{
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 2, .epochs = 2,
					   .prefetch_depth = 3 };
	struct ferry_reader_stats st;
	ferry_reader *r;
	ferry_batch *b;
	unsigned good = 0, errors = 0;
	int rc;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while ((rc = ferry_reader_next(r, &b)) != -FERRY_EEND) {
		if (rc < 0) {
			errors++;
			if (!strstr(ferry_last_error(), "f005.npy"))
				T_FAIL("message does not name f005.npy: %s", ferry_last_error());
			continue;
		}
		good += ferry_batch_size(b);
		ferry_batch_release(b);
	}
	T_EQ(errors, 2);    /* once per epoch, the batch (f004, f005) */
	T_EQ(good, 2 * (NFILES - 2));
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	T_EQ(st.files_skipped, 0);
	T_OK(ferry_reader_close(r));
}

static void check_stop_then_close(ferry_ctx *ctx, const char *dir)
{
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 2, .epochs = 0 };
	ferry_reader *r;
	ferry_batch *b, *held = NULL;
	int rc;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while ((rc = ferry_reader_next(r, &b)) == 0) {
		if (held)
			ferry_batch_release(held);
		held = b;
	}
	T_ASSERT(rc == -FERRY_EFORMAT || rc == -FERRY_ETRUNCATED);
	/* close with one batch still held and others loading */
	T_OK(ferry_reader_close(r));
}

static void check_skip(ferry_ctx *ctx, const char *dir)
{
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 2, .epochs = 2,
					   .on_error = FERRY_ON_ERROR_SKIP, .threads = 3 };
	struct ferry_reader_stats st;
	ferry_reader *r;
	int idx[64];
	unsigned sizes[32], nb;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	unsigned n = tr_collect(r, idx, 64, sizes, &nb);
	T_EQ(n, 2 * (NFILES - 1));
	for (unsigned i = 0; i < n; i++)
		T_ASSERT(idx[i] != 5);
	T_EQ(nb, 10);
	T_EQ(sizes[2], 1); /* f004 alone */
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	T_EQ(st.files_skipped, 2);
	T_EQ(st.samples, 2 * (NFILES - 1));
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	char *dir = t_tmpdir();
	ferry_ctx *ctx = tr_ctx(0, 2);
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	tr_write_vectors(dir, NFILES);
	truncate_file(tr_path(dir, "f005.npy"));
	check_stop(ctx, dir);
	check_stop_then_close(ctx, dir);
	check_skip(ctx, dir);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	return T_EXIT_PASS;
}
