/* Shuffling: a permutation of the shard per epoch, the same for the same seed
 * (two readers agree), different between epochs and between seeds; off by
 * default (sorted order). */
#include "reader/reader.h"
#include "test_reader_util.h"

#define NFILES 40
#define EPOCHS 3

static void read_order(ferry_ctx *ctx, const char *dir, int shuffle, uint64_t seed,
		       int out[EPOCHS][NFILES / 2])
{
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 3, .epochs = EPOCHS,
					   .shard_id = 1, .num_shards = 2, .stick_to_shard = 1,
					   .random_shuffle = shuffle, .seed = seed, .threads = 3 };
	int idx[EPOCHS * NFILES / 2];
	ferry_reader *r;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_EQ(tr_collect(r, idx, EPOCHS * NFILES / 2, NULL, NULL), EPOCHS * NFILES / 2);
	T_OK(ferry_reader_close(r));
	for (unsigned e = 0; e < EPOCHS; e++) {
		int seen[NFILES] = { 0 };
		for (unsigned i = 0; i < NFILES / 2; i++) {
			int k = idx[e * NFILES / 2 + i];
			T_ASSERT(k >= NFILES / 2 && k < NFILES); /* shard 1 only */
			T_EQ(seen[k]++, 0);
			out[e][i] = k;
		}
	}
}

static int same(const int *a, const int *b)
{
	return !memcmp(a, b, sizeof(int) * NFILES / 2);
}

int main(void)
{
	char *dir = t_tmpdir();
	ferry_ctx *ctx = tr_ctx(0, 2);
	int a[EPOCHS][NFILES / 2], b[EPOCHS][NFILES / 2], c[EPOCHS][NFILES / 2];
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	tr_write_vectors(dir, NFILES);
	read_order(ctx, dir, 0, 0, a);
	for (unsigned e = 0; e < EPOCHS; e++)
		for (unsigned i = 0; i < NFILES / 2; i++)
			T_EQ(a[e][i], NFILES / 2 + i);
	read_order(ctx, dir, 1, 42, a);
	read_order(ctx, dir, 1, 42, b);
	read_order(ctx, dir, 1, 43, c);
	for (unsigned e = 0; e < EPOCHS; e++) {
		T_ASSERT(same(a[e], b[e]));
		T_ASSERT(!same(a[e], c[e]));
		if (e)
			T_ASSERT(!same(a[e], a[e - 1]));
	}
	/* The generator itself is fixed: the same numbers on every machine. */
	uint64_t state = 1;
	T_EQ(ferry__splitmix64(&state), 0x910a2dec89025cc1ull);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	return T_EXIT_PASS;
}
