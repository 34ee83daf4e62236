/*
 * Stacked batches: when a batch's samples share a dtype and shape, the batch
 * is one dense C-order [B, ...] array at ferry_batch_data, row k the k-th
 * sample, every byte checked against a CPU read of the file (the pattern):
 * batch sizes 1, 3, 7 and larger than the shard, shuffled, with
 * pad_last_batch (padding rows repeat the last sample), with a fixed region
 * of interest, with a chunk smaller than a sample (the chunked path) and
 * larger (samples packed into one buffer), across epochs whose headers come
 * from the cache. A batch of mixed shapes is ragged: ferry_batch_shape says
 * so naming two files, and each sample is still whole at its own address.
 * ferry_batch_describe agrees with the four calls it stands for, both ways.
 */
#include "base/base.h"
#include "test_reader_util.h"

#define NFILES 23

/* Writes f000..f022: int16 [40, 70], 5,600 bytes (or [40, 71] for every
 * seventh when ragged): more than a 4 KiB chunk, a tenth of a 64 KiB one. */
static void write_files(const char *dir, int ragged)
{
	for (unsigned i = 0; i < NFILES; i++) {
		char name[32];
		int64_t shape[2] = { 40, ragged && i % 7 == 3 ? 71 : 70 };
		snprintf(name, sizeof(name), "f%03u.npy", i);
		tr_write_npy(tr_path(dir, name), FERRY_INT16, 0, 0, 2, shape, 300 + i);
	}
}

/* The bytes sample k of the file must arrive as, with the region's start. */
static void *want_of(unsigned k, const int64_t *start, const int64_t *shape, uint64_t *n)
{
	int64_t src[2] = { 40, 70 };
	return tr_reference(300 + k, 2, 0, 0, 2, src, start, shape, "\0", n);
}

/* ferry_batch_describe says what ferry_batch_position, _data, _size and _shape say. */
static void check_described(ferry_batch *b, int stacked)
{
	struct ferry_batch_info info;
	struct ferry_batch_shape bs, zero = { 0 };
	uint64_t epoch, index;
	T_OK(ferry_batch_describe(b, &info));
	T_OK(ferry_batch_position(b, &epoch, &index));
	T_ASSERT(info.epoch == epoch && info.index == index);
	T_ASSERT(info.data == ferry_batch_data(b));
	T_EQ(info.size, ferry_batch_size(b));
	T_EQ(info.stacked, stacked);
	T_EQ(ferry_batch_shape(b, &bs), stacked ? 0 : -FERRY_EMISMATCH);
	T_ASSERT(!memcmp(&info.shape, stacked ? &bs : &zero, sizeof(bs)));
}

/* Every row of the stacked batch is its sample, and the sample's own address. */
static void check_stacked(ferry_ctx *ctx, ferry_batch *b, const int64_t *start,
			  const int64_t *shape)
{
	struct ferry_batch_shape bs;
	unsigned n = ferry_batch_size(b);
	check_described(b, 1);
	T_OK(ferry_batch_shape(b, &bs));
	T_EQ(bs.dtype, FERRY_INT16);
	T_EQ(bs.ndim, 3);
	T_ASSERT(bs.shape[0] == n && bs.shape[1] == shape[0] && bs.shape[2] == shape[1]);
	uint64_t row = (uint64_t)(shape[0] * shape[1] * 2);
	T_EQ(bs.nbytes, row * n);
	for (unsigned i = 0; i < n; i++) {
		struct ferry_sample s;
		uint64_t len;
		T_OK(ferry_batch_sample(b, i, &s));
		T_ASSERT((char *)s.data == (char *)ferry_batch_data(b) + i * row);
		void *want = want_of((unsigned)tr_file_index(s.path), start, shape, &len);
		T_EQ(len, row);
		tr_check_bytes(ctx, (char *)ferry_batch_data(b) + i * row, want, row, s.path);
		free(want);
	}
}

static void run(ferry_ctx *ctx, const char *dir, unsigned batch, int pad, const int64_t *roi)
{
	int64_t start[2] = { 0, 0 }, shape[2] = { 40, 70 };
	struct ferry_reader_config cfg = { .root = dir, .batch_size = batch, .epochs = 3,
					   .random_shuffle = 1, .seed = batch, .pad_last_batch = pad,
					   .num_shards = 1, .threads = 3 };
	if (roi) {
		cfg.roi_nvals = 2;
		cfg.roi_start = roi;
		cfg.roi_shape = roi + 2;
		memcpy(start, roi, sizeof(start));
		memcpy(shape, roi + 2, sizeof(shape));
	}
	ferry_reader *r;
	ferry_batch *b;
	unsigned batches = 0, samples = 0;
	int rc;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while ((rc = ferry_reader_next(r, &b)) == 0) {
		check_stacked(ctx, b, start, shape);
		samples += ferry_batch_size(b);
		batches++;
		ferry_batch_release(b);
	}
	T_EQ(rc, -FERRY_EEND);
	unsigned per_epoch = (NFILES + batch - 1) / batch;
	T_EQ(batches, 3 * per_epoch);
	T_EQ(samples, 3 * (pad ? per_epoch * batch : NFILES));
	T_OK(ferry_reader_close(r));
}

static void run_ragged(ferry_ctx *ctx, const char *dir)
{
	struct ferry_reader_config cfg = { .root = dir, .batch_size = NFILES, .epochs = 1,
					   .num_shards = 1 };
	struct ferry_batch_shape bs;
	ferry_reader *r;
	ferry_batch *b;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_OK(ferry_reader_next(r, &b));
	check_described(b, 0);
	T_EQ(ferry_batch_shape(b, &bs), -FERRY_EMISMATCH);
	T_ASSERT(strstr(ferry_last_error(), "f000.npy") && strstr(ferry_last_error(), "f003.npy"));
	for (unsigned i = 0; i < ferry_batch_size(b); i++) {
		struct ferry_sample s;
		uint64_t n;
		int64_t start[2] = { 0, 0 };
		T_OK(ferry_batch_sample(b, i, &s));
		int k = tr_file_index(s.path);
		void *want = tr_reference(300 + (uint32_t)k, 2, 0, 0, 2, s.shape, start, s.shape, "\0",
					  &n);
		tr_check_sample(ctx, &s, want, n, "ragged");
		free(want);
	}
	ferry_batch_release(b);
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	static const unsigned batches[] = { 1, 3, 7, 40 };
	static const size_t chunks[] = { 4096, 65536 };
	const int64_t roi[4] = { 1, 2, 3, 4 };
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	char *dir = strdup(t_tmpdir());
	write_files(dir, 0);
	for (size_t c = 0; c < 2; c++) {
		ferry_ctx *ctx = tr_ctx(chunks[c], 2);
		for (size_t i = 0; i < FERRY__ARRAY_LEN(batches); i++) {
			run(ctx, dir, batches[i], 0, NULL);
			run(ctx, dir, batches[i], 1, NULL);
			run(ctx, dir, batches[i], 1, roi);
		}
		T_OK(ferry_ctx_destroy(ctx));
	}
	t_rmtree(dir);
	free(dir);
	dir = strdup(t_tmpdir());
	write_files(dir, 1);
	ferry_ctx *ctx = tr_ctx(4096, 2);
	run_ragged(ctx, dir);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	printf("stacked batches: every row of every batch is its sample\n");
	return T_EXIT_PASS;
}
