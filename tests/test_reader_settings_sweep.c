/*
 * Every byte of every sample over odd pipeline
 * settings: IO threads 1, 2, 4; prefetch_depth auto, 1, 2; batches of 1, 4,
 * 9 and more than the dataset; chunks of 4 KiB and 64 KiB; with and without
 * a region; big-endian and Fortran-order files among C-order ones; a
 * truncated file skipped (on_error=skip); two shuffled, padded epochs. The
 * region (rows and columns from 1, trimmed) leaves the one-row files empty,
 * so some batches of 1 have no bytes at all (see test_reader_empty_batch).
 */
#include "test_reader_util.h"

#define NFILES 30
#define EPOCHS 2

static int64_t rows_of(unsigned i) { return 1 + i % 5; }
static int64_t cols_of(unsigned i) { return 3 + i % 7; }
static int swapped(unsigned i) { return i % 4 == 1; }
static int fortran(unsigned i) { return i % 3 == 2; }

static void check_sample(ferry_ctx *ctx, const struct ferry_sample *s, int roi)
{
	int k = tr_file_index(s->path);
	T_ASSERT(k >= 0 && k < NFILES);
	int64_t src[2] = { rows_of((unsigned)k), cols_of((unsigned)k) };
	int64_t start[2] = { roi ? 1 : 0, roi ? 1 : 0 };
	int64_t shape[2] = { src[0], src[1] };
	if (roi) {
		shape[0] = src[0] - 1 < 2 ? src[0] - 1 : 2;
		shape[1] = 2;
	}
	uint64_t nbytes;
	void *want = tr_reference((uint32_t)k, 4, swapped((unsigned)k), fortran((unsigned)k), 2,
				  src, start, shape, "\0\0\0\0", &nbytes);
	tr_check_sample(ctx, s, want, nbytes, "sweep");
	free(want);
}

static void run(ferry_ctx *ctx, const char *dir, unsigned threads, unsigned depth,
		unsigned batch, int roi)
{
	int64_t start[2] = { 1, 1 }, shape[2] = { 2, 2 };
	struct ferry_reader_config cfg = { .root = dir, .filter = "f*.npy", .batch_size = batch,
					   .epochs = EPOCHS, .random_shuffle = 1, .seed = 11,
					   .pad_last_batch = 1, .threads = threads,
					   .prefetch_depth = depth, .num_shards = 1,
					   .on_error = FERRY_ON_ERROR_SKIP };
	unsigned seen[EPOCHS][NFILES + 1];
	ferry_reader *r;
	ferry_batch *b;
	int rc;
	memset(seen, 0, sizeof(seen));
	if (roi) {
		cfg.roi_nvals = 2;
		cfg.roi_start = start;
		cfg.roi_shape = shape;
		cfg.out_of_bounds_policy = FERRY_OOB_TRIM;
	}
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while ((rc = ferry_reader_next(r, &b)) == 0) {
		uint64_t epoch;
		T_OK(ferry_batch_position(b, &epoch, NULL));
		for (unsigned i = 0; i < ferry_batch_size(b); i++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, i, &s));
			int k = tr_file_index(s.path);
			if (k == NFILES)
				T_FAIL("the truncated file was delivered");
			check_sample(ctx, &s, roi);
			if (!s.is_padding)
				seen[epoch][k]++;
		}
		ferry_batch_release(b);
	}
	if (rc != -FERRY_EEND)
		T_FAIL("threads %u depth %u batch %u roi %d: %s (%s)", threads, depth, batch, roi,
		       ferry_strerror(rc), ferry_last_error());
	for (int e = 0; e < EPOCHS; e++)
		for (unsigned k = 0; k < NFILES; k++) {
			unsigned want = 1;
			if (seen[e][k] != want)
				T_FAIL("threads %u depth %u batch %u roi %d: epoch %d file %u seen %u "
				       "times, want %u", threads, depth, batch, roi, e, k, seen[e][k],
				       want);
		}
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	char *dir = t_tmpdir();
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	for (unsigned i = 0; i < NFILES; i++) {
		int64_t shape[2] = { rows_of(i), cols_of(i) };
		tr_write_npy(tr_numbered(dir, i), FERRY_FLOAT32, swapped(i) ? '>' : 0, fortran(i), 2,
			     shape, i);
	}
	{ /* f030.npy: a header promising more than the file holds */
		int64_t shape[2] = { 4, 4 };
		tr_write_npy(tr_numbered(dir, NFILES), FERRY_FLOAT32, 0, 0, 2, shape, NFILES);
		T_ASSERT(truncate(tr_numbered(dir, NFILES), 140) == 0);
	}
	static const unsigned threads[] = { 1, 2, 4 }, depths[] = { 0, 1, 2 },
			      batches[] = { 1, 4, 9, 100 };
	static const size_t chunks[] = { 4096, 65536 };
	for (unsigned c = 0; c < 2; c++) {
		ferry_ctx *ctx = tr_ctx(chunks[c], 2);
		for (unsigned t = 0; t < 3; t++)
			for (unsigned d = 0; d < 3; d++)
				for (unsigned bi = 0; bi < 4; bi++)
					for (int roi = 0; roi < 2; roi++)
						run(ctx, dir, threads[t], depths[d], batches[bi], roi);
		T_OK(ferry_ctx_destroy(ctx));
	}
	t_rmtree(dir);
	printf("ok: every byte over threads x depth x batch x chunk x region\n");
	return T_EXIT_PASS;
}
