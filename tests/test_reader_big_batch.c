/*
 * A batch far larger than the dataset, padded: batch_size 2^20 over 3 files
 * with pad_last_batch is one [2^20, 4] array per epoch, the 3 files then
 * 1,048,573 copies of the last, every byte checked; padding rows cost no
 * per-row state (a batch of 2^20 samples used to hold 2^20 sample slots,
 * over a gigabyte), and the process stays small. Without padding the same
 * batch size gives one batch of the 3 files.
 */
#include <sys/resource.h>

#include "test_reader_util.h"

#define BATCH (1u << 20)
#define ROW 16 /* int32 [4] */

static void check_rows(ferry_ctx *ctx, ferry_batch *b, unsigned rows)
{
	struct ferry_batch_shape bs;
	T_EQ(ferry_batch_size(b), rows);
	T_OK(ferry_batch_shape(b, &bs));
	T_ASSERT(bs.ndim == 2 && bs.shape[0] == rows && bs.shape[1] == 4);
	unsigned char *host = malloc((size_t)rows * ROW);
	T_ASSERT(host);
	T_OK(ferry_copy_to_host(ctx, host, ferry_batch_data(b), (size_t)rows * ROW));
	for (unsigned i = 0; i < rows; i++) {
		unsigned file = i < 3 ? i : 2;
		if (t_check_pattern(host + (size_t)i * ROW, ROW, file, 0) != ROW)
			T_FAIL("row %u is not file %u", i, file);
	}
	free(host);
	struct ferry_sample s;
	T_OK(ferry_batch_sample(b, rows - 1, &s));
	T_EQ(s.is_padding, rows > 3);
	T_ASSERT(strstr(s.path, "f002.npy"));
}

static void run(ferry_ctx *ctx, const char *dir, int pad)
{
	struct ferry_reader_config cfg = { .root = dir, .batch_size = BATCH, .epochs = 2,
					   .pad_last_batch = pad, .num_shards = 1 };
	ferry_reader *r;
	ferry_batch *b;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	for (int e = 0; e < 2; e++) {
		T_OK(ferry_reader_next(r, &b));
		check_rows(ctx, b, pad ? BATCH : 3);
		ferry_batch_release(b);
	}
	T_EQ(ferry_reader_next(r, &b), -FERRY_EEND);
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	char *dir = strdup(t_tmpdir());
	tr_write_vectors(dir, 1); /* f000: int32 [4] */
	for (unsigned i = 1; i < 3; i++) {
		char name[16];
		int64_t len = 4;
		snprintf(name, sizeof(name), "f%03u.npy", i);
		tr_write_npy(tr_path(dir, name), FERRY_INT32, 0, 0, 1, &len, i);
	}
	ferry_ctx *ctx = tr_ctx(4096, 2);
	run(ctx, dir, 1);
	run(ctx, dir, 0);
	T_OK(ferry_ctx_destroy(ctx));
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	if (ru.ru_maxrss > 512 * 1024)
		T_FAIL("peak memory %ld KiB for batches of %u 16-byte rows", ru.ru_maxrss, BATCH);
	t_rmtree(dir);
	free(dir);
	printf("batch of 2^20 padded rows: every row right, peak memory %ld KiB\n", ru.ru_maxrss);
	return T_EXIT_PASS;
}
