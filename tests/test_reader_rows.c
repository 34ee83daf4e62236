/*
 * Rows as samples: every row along axis 0 of every file is a sample. Four
 * files of int32 [n, 3, 5] with 7, 0, 13 and 4 rows (one C-order little-
 * endian, one big-endian, one Fortran order) are 24 samples: every row of
 * every batch is checked against the file's pattern, shuffled and not, with
 * batches of 1, 5 and 24, with a region of interest on a row's axes, and as
 * shards that are disjoint and together complete at row level. Consecutive
 * rows of a C-order file are read with little more than their bytes (their
 * header's, for the check). Files whose rows differ in shape are refused when
 * the reader opens, naming both.
 */
#include "test_reader_util.h"

#define NFILES 4

static const int64_t rows_of[NFILES] = { 7, 0, 13, 4 };
static const char order_of[NFILES] = { '<', '<', '>', '<' };
static const int fortran_of[NFILES] = { 0, 0, 0, 1 };

static void write_files(const char *dir)
{
	for (unsigned i = 0; i < NFILES; i++) {
		char name[16];
		int64_t shape[3] = { rows_of[i], 3, 5 };
		snprintf(name, sizeof(name), "f%03u.npy", i);
		tr_write_npy(tr_path(dir, name), FERRY_INT32, order_of[i], fortran_of[i], 3, shape,
			     500 + i);
	}
}

/* What row r of file k must arrive as, with the region start/shape on the row. */
static void *row_want(int k, int64_t row, const int64_t *start, const int64_t *shape,
		      uint64_t *n)
{
	int64_t src[3] = { rows_of[k], 3, 5 }, st[3] = { row, start[0], start[1] },
		sh[3] = { 1, shape[0], shape[1] };
	return tr_reference(500 + (uint32_t)k, 4, order_of[k] == '>', fortran_of[k], 3, src, st, sh,
			    "\0\0\0", n);
}

/* Reads every batch; checks every row; counts each (file, row) in seen. */
static unsigned read_all(ferry_ctx *ctx, struct ferry_reader_config *cfg, const int64_t *start,
			 const int64_t *shape, unsigned seen[NFILES][16])
{
	ferry_reader *r;
	ferry_batch *b;
	unsigned samples = 0;
	T_OK(ferry_reader_open(ctx, cfg, &r));
	while (ferry_reader_next(r, &b) == 0) {
		struct ferry_batch_shape bs;
		T_OK(ferry_batch_shape(b, &bs));
		T_ASSERT(bs.ndim == 3 && bs.shape[1] == shape[0] && bs.shape[2] == shape[1]);
		for (unsigned i = 0; i < ferry_batch_size(b); i++) {
			struct ferry_sample s;
			uint64_t n;
			T_OK(ferry_batch_sample(b, i, &s));
			int k = tr_file_index(s.path);
			T_ASSERT(s.row >= 0 && s.row < rows_of[k] && s.ndim == 2);
			void *want = row_want(k, s.row, start, shape, &n);
			tr_check_sample(ctx, &s, want, n, "row");
			free(want);
			seen[k][s.row]++;
			samples++;
		}
		ferry_batch_release(b);
	}
	T_OK(ferry_reader_close(r));
	return samples;
}

static void check_everything(ferry_ctx *ctx, const char *dir, unsigned batch, int shuffle,
			     const int64_t *roi)
{
	int64_t start[2] = { 0, 0 }, shape[2] = { 3, 5 };
	unsigned seen[NFILES][16] = { { 0 } };
	struct ferry_reader_config cfg = { .root = dir, .samples = FERRY_SAMPLES_ROWS,
					   .batch_size = batch, .epochs = 1, .num_shards = 1,
					   .random_shuffle = shuffle, .seed = 3 };
	if (roi) {
		cfg.roi_nvals = 2;
		cfg.roi_start = roi;
		cfg.roi_shape = roi + 2;
		memcpy(start, roi, sizeof(start));
		memcpy(shape, roi + 2, sizeof(shape));
	}
	T_EQ(read_all(ctx, &cfg, start, shape, seen), 24);
	for (unsigned k = 0; k < NFILES; k++)
		for (int64_t row = 0; row < rows_of[k]; row++)
			T_EQ(seen[k][row], 1);
}

static void check_shards(ferry_ctx *ctx, const char *dir)
{
	int64_t start[2] = { 0, 0 }, shape[2] = { 3, 5 };
	unsigned seen[NFILES][16] = { { 0 } }, total = 0;
	for (int shard = 0; shard < 3; shard++) {
		struct ferry_reader_config cfg = { .root = dir, .samples = FERRY_SAMPLES_ROWS,
						   .batch_size = 4, .epochs = 1, .shard_id = shard,
						   .num_shards = 3, .stick_to_shard = 1 };
		total += read_all(ctx, &cfg, start, shape, seen);
	}
	T_EQ(total, 24);
	for (unsigned k = 0; k < NFILES; k++)
		for (int64_t row = 0; row < rows_of[k]; row++)
			T_EQ(seen[k][row], 1);
}

/* Rows of the C-order file alone, in order: read bytes close to delivered. */
static void check_economy(ferry_ctx *ctx, const char *dir)
{
	const char *files[1] = { tr_path(dir, "f000.npy") };
	struct ferry_reader_config cfg = { .files = files, .nfiles = 1,
					   .samples = FERRY_SAMPLES_ROWS, .batch_size = 7,
					   .epochs = 2, .num_shards = 1 };
	struct ferry_reader_stats st;
	ferry_reader *r;
	ferry_batch *b;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while (ferry_reader_next(r, &b) == 0)
		ferry_batch_release(b);
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	T_OK(ferry_reader_close(r));
	T_EQ(st.bytes_delivered, 2 * 7 * 60);
	if (st.bytes_read > st.bytes_delivered + 2 * 4096)
		T_FAIL("rows: %llu bytes read for %llu delivered",
		       (unsigned long long)st.bytes_read, (unsigned long long)st.bytes_delivered);
}

static void check_mismatch(ferry_ctx *ctx, const char *dir)
{
	int64_t shape[3] = { 2, 3, 6 };
	tr_write_npy(tr_path(dir, "f009.npy"), FERRY_INT32, '<', 0, 3, shape, 9);
	struct ferry_reader_config cfg = { .root = dir, .samples = FERRY_SAMPLES_ROWS,
					   .num_shards = 1 };
	ferry_reader *r;
	T_EQ(ferry_reader_open(ctx, &cfg, &r), -FERRY_EMISMATCH);
	T_ASSERT(strstr(ferry_last_error(), "f009.npy") && strstr(ferry_last_error(), "f000.npy"));
}

int main(void)
{
	static const unsigned batches[] = { 1, 5, 24 };
	const int64_t roi[4] = { 1, 2, 2, 3 };
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	char *dir = strdup(t_tmpdir());
	write_files(dir);
	ferry_ctx *ctx = tr_ctx(4096, 2);
	for (unsigned i = 0; i < 3; i++)
		for (int shuffle = 0; shuffle < 2; shuffle++) {
			check_everything(ctx, dir, batches[i], shuffle, NULL);
			check_everything(ctx, dir, batches[i], shuffle, roi);
		}
	check_shards(ctx, dir);
	check_economy(ctx, dir);
	check_mismatch(ctx, dir);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	printf("rows as samples: every row of every batch checked, shards complete\n");
	return T_EXIT_PASS;
}
