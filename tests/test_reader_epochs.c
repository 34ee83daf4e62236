/* Epochs: without stick_to_shard epoch e reads shard (shard_id + e) % n; with
 * it, always shard_id; pad_last_batch repeats the last sample and the epoch
 * info counts the real ones; without it the last batch is short. */
#include "test_reader_util.h"

#define NFILES 11

static void check_rotation(ferry_ctx *ctx, const char *dir, int stick)
{
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 2, .epochs = 5, .shard_id = 1,
					   .num_shards = 3, .stick_to_shard = stick };
	ferry_reader *r;
	ferry_batch *b;
	uint64_t count[5] = { 0 };
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while (ferry_reader_next(r, &b) == 0) {
		uint64_t epoch, index;
		struct ferry_epoch_info info;
		T_OK(ferry_batch_position(b, &epoch, &index));
		T_OK(ferry_reader_epoch_info(r, &info));
		T_EQ(info.epoch, epoch);
		unsigned shard = stick ? 1 : (unsigned)(1 + epoch) % 3;
		T_EQ(info.shard_id, shard);
		uint64_t begin = NFILES * shard / 3, end = NFILES * (shard + 1) / 3;
		T_EQ(info.real_samples, end - begin);
		for (unsigned i = 0; i < ferry_batch_size(b); i++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, i, &s));
			T_EQ(tr_file_index(s.path), begin + index * 2 + i);
			count[epoch]++;
		}
		ferry_batch_release(b);
	}
	for (unsigned e = 0; e < 5; e++) {
		unsigned shard = stick ? 1 : (1 + e) % 3;
		T_EQ(count[e], NFILES * (shard + 1) / 3 - NFILES * shard / 3);
	}
	T_OK(ferry_reader_close(r));
}

static void check_padding(ferry_ctx *ctx, const char *dir, int pad)
{
	/* One shard of 11 files in batches of 4: 4, 4, 3 (+1 pad). */
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 4, .epochs = 2,
					   .pad_last_batch = pad };
	struct ferry_epoch_info info;
	struct ferry_reader_stats st;
	ferry_reader *r;
	int idx[64];
	unsigned sizes[16], nb;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_OK(ferry_reader_epoch_info(r, &info));
	T_EQ(info.batches, 3);
	T_EQ(info.real_samples, NFILES);
	T_EQ(info.samples, pad ? 12 : NFILES);
	unsigned n = tr_collect(r, idx, 64, sizes, &nb);
	T_EQ(nb, 6);
	T_EQ(n, pad ? 24 : 22);
	for (unsigned e = 0; e < 2; e++) {
		T_EQ(sizes[3 * e], 4);
		T_EQ(sizes[3 * e + 2], pad ? 4 : 3);
		unsigned base = e * (pad ? 12 : 11);
		for (unsigned i = 0; i < NFILES; i++)
			T_EQ(idx[base + i], i);
		if (pad)
			T_EQ(idx[base + 11], -1 - 10); /* a padding repeat of file 10 */
	}
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	T_EQ(st.samples, 22);
	T_EQ(st.batches, 6);
	T_OK(ferry_reader_close(r));
}

static void check_padding_data(ferry_ctx *ctx, const char *dir)
{
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 4, .epochs = 1,
					   .pad_last_batch = 1 };
	ferry_reader *r;
	ferry_batch *b = NULL, *last = NULL;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while (ferry_reader_next(r, &b) == 0) {
		if (last)
			ferry_batch_release(last);
		last = b;
	}
	struct ferry_sample real, pad;
	T_OK(ferry_batch_sample(last, 2, &real));
	T_OK(ferry_batch_sample(last, 3, &pad));
	T_EQ(real.is_padding, 0);
	T_EQ(pad.is_padding, 1);
	T_EQ(pad.nbytes, real.nbytes);
	T_EQ(pad.shape[0], real.shape[0]);
	T_ASSERT(!strcmp(pad.path, real.path));
	void *want = tr_payload(10, real.nbytes);
	tr_check_sample(ctx, &pad, want, real.nbytes, "padding");
	free(want);
	T_EQ(ferry_batch_sample(last, 4, &pad), -EINVAL);
	ferry_batch_release(last);
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	char *dir = t_tmpdir();
	ferry_ctx *ctx = tr_ctx(0, 2);
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	tr_write_vectors(dir, NFILES);
	check_rotation(ctx, dir, 0);
	check_rotation(ctx, dir, 1);
	check_padding(ctx, dir, 0);
	check_padding(ctx, dir, 1);
	check_padding_data(ctx, dir);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	return T_EXIT_PASS;
}
