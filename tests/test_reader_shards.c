/* Shards: their union is the dataset and they are disjoint, for sizes that do
 * and do not divide evenly; each is the contiguous range DALI computes; RANK
 * and WORLD_SIZE are the defaults. */
#include "test_reader_util.h"

static void check_shards(ferry_ctx *ctx, const char *dir, unsigned nfiles, unsigned nshards)
{
	int *seen = calloc(nfiles, sizeof(int));
	int idx[256];
	T_ASSERT(seen);
	for (unsigned s = 0; s < nshards; s++) {
		struct ferry_reader_config cfg = { .root = dir, .batch_size = 3, .epochs = 1,
						   .shard_id = (int)s, .num_shards = (int)nshards };
		ferry_reader *r;
		T_OK(ferry_reader_open(ctx, &cfg, &r));
		unsigned n = tr_collect(r, idx, 256, NULL, NULL);
		uint64_t begin = (uint64_t)nfiles * s / nshards, end = (uint64_t)nfiles * (s + 1) / nshards;
		T_EQ(n, end - begin);
		for (unsigned i = 0; i < n; i++) {
			T_EQ(idx[i], begin + i); /* contiguous, in sorted order */
			seen[idx[i]]++;
		}
		T_OK(ferry_reader_close(r));
	}
	for (unsigned i = 0; i < nfiles; i++)
		if (seen[i] != 1)
			T_FAIL("%u files, %u shards: file %u seen %d times", nfiles, nshards, i, seen[i]);
	free(seen);
}

static void check_environment(ferry_ctx *ctx, const char *dir)
{
	struct ferry_reader_config cfg = { .root = dir, .epochs = 1, .stick_to_shard = 1 };
	struct ferry_epoch_info info;
	ferry_reader *r;
	setenv("WORLD_SIZE", "4", 1);
	setenv("RANK", "3", 1);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_OK(ferry_reader_epoch_info(r, &info));
	T_EQ(info.shard_id, 3);
	T_EQ(info.real_samples, 10 - 10 * 3 / 4);
	T_OK(ferry_reader_close(r));
	cfg.num_shards = 2;
	cfg.shard_id = -1; /* RANK, of 2 shards: 3 does not exist */
	T_EQ(ferry_reader_open(ctx, &cfg, &r), -FERRY_ECONFIG);
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	cfg.num_shards = 11; /* more shards than files */
	cfg.shard_id = 0;
	T_EQ(ferry_reader_open(ctx, &cfg, &r), -FERRY_ECONFIG);
}

int main(void)
{
	char *dir = t_tmpdir();
	ferry_ctx *ctx = tr_ctx(0, 2);
	static const unsigned sizes[] = { 10, 7, 13 };
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	for (unsigned k = 0; k < 3; k++) {
		char sub[1024];
		snprintf(sub, sizeof(sub), "%s/d%u", dir, k);
		T_ASSERT(mkdir(sub, 0777) == 0);
		tr_write_vectors(sub, sizes[k]);
		for (unsigned n = 1; n <= 5; n++)
			check_shards(ctx, sub, sizes[k], n);
	}
	check_environment(ctx, tr_path(dir, "d0"));
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	return T_EXIT_PASS;
}
