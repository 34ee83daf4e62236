/*
 * shuffle_dataset (DALI's shuffle_after_epoch): each epoch one permutation of
 * the whole dataset, from (seed, epoch), then sharded. The shards of an epoch
 * partition the dataset, a shard's files change from epoch to epoch (which a
 * shard-local shuffle never does), every rank draws the same permutation, each
 * sample holds its file's bytes, and a saved state resumes the same order.
 */
#include "test_reader_util.h"

#define NFILES 23
#define NSHARDS 3
#define EPOCHS 4
#define CAP (NFILES * EPOCHS)

static struct ferry_reader_config config(const char *dir, unsigned shard, uint64_t seed)
{
	return (struct ferry_reader_config){ .root = dir, .batch_size = 4, .epochs = EPOCHS,
					     .shard_id = (int)shard, .num_shards = NSHARDS,
					     .stick_to_shard = 1, .shuffle_dataset = 1,
					     .seed = seed, .threads = 2 };
}

/* Reads every batch, checking each sample's bytes; idx[e][k] is the file
 * of the k-th sample of epoch e, count[e] how many epoch e had. */
static void read_all(ferry_ctx *ctx, struct ferry_reader_config cfg, int idx[EPOCHS][NFILES],
		     unsigned count[EPOCHS])
{
	ferry_reader *r;
	ferry_batch *b;
	memset(count, 0, EPOCHS * sizeof(*count));
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while (ferry_reader_next(r, &b) == 0) {
		uint64_t epoch, index;
		T_OK(ferry_batch_position(b, &epoch, &index));
		T_ASSERT(epoch < EPOCHS);
		for (unsigned i = 0; i < ferry_batch_size(b); i++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, i, &s));
			int k = tr_file_index(s.path);
			uint64_t nbytes = (uint64_t)(4 + k % 3) * 4;
			void *want = tr_payload((uint32_t)k, nbytes);
			tr_check_sample(ctx, &s, want, nbytes, "shuffle_dataset");
			free(want);
			T_ASSERT(count[epoch] < NFILES);
			idx[epoch][count[epoch]++] = k;
		}
		ferry_batch_release(b);
	}
	T_OK(ferry_reader_close(r));
}

static int same_set(const int *a, unsigned na, const int *b, unsigned nb)
{
	int seen[NFILES] = { 0 };
	if (na != nb)
		return 0;
	for (unsigned i = 0; i < na; i++)
		seen[a[i]]++;
	for (unsigned i = 0; i < nb; i++)
		if (--seen[b[i]] < 0)
			return 0;
	return 1;
}

/* The shards of each epoch partition the dataset, and shard 0's files are not
 * the same set every epoch. */
static void check_partition(ferry_ctx *ctx, const char *dir)
{
	static int idx[NSHARDS][EPOCHS][NFILES];
	unsigned count[NSHARDS][EPOCHS];
	for (unsigned s = 0; s < NSHARDS; s++)
		read_all(ctx, config(dir, s, 7), idx[s], count[s]);
	int moved = 0;
	for (unsigned e = 0; e < EPOCHS; e++) {
		int seen[NFILES] = { 0 };
		for (unsigned s = 0; s < NSHARDS; s++) {
			T_EQ(count[s][e], NFILES * (s + 1) / NSHARDS - NFILES * s / NSHARDS);
			for (unsigned k = 0; k < count[s][e]; k++)
				seen[idx[s][e][k]]++;
		}
		for (unsigned f = 0; f < NFILES; f++)
			if (seen[f] != 1)
				T_FAIL("epoch %u: file %u read %d times by the shards", e, f, seen[f]);
		moved |= !same_set(idx[0][0], count[0][0], idx[0][e], count[0][e]);
	}
	if (!moved)
		T_FAIL("shard 0 read the same files every epoch: the dataset was not permuted");
}

/* The same seed gives the same order; another seed another. */
static void check_seed(ferry_ctx *ctx, const char *dir)
{
	static int a[EPOCHS][NFILES], b[EPOCHS][NFILES], c[EPOCHS][NFILES];
	unsigned na[EPOCHS], nb[EPOCHS], nc[EPOCHS];
	read_all(ctx, config(dir, 1, 99), a, na);
	read_all(ctx, config(dir, 1, 99), b, nb);
	read_all(ctx, config(dir, 1, 100), c, nc);
	T_ASSERT(memcmp(na, nb, sizeof(na)) == 0 && memcmp(a, b, sizeof(a)) == 0);
	T_ASSERT(memcmp(a, c, sizeof(a)) != 0);
}

/* Stopped after 5 batches and resumed, the run reads what an uninterrupted
 * one does; a state of a shard-local shuffle is refused. */
static void check_resume(ferry_ctx *ctx, const char *dir)
{
	static int whole[EPOCHS][NFILES];
	unsigned nwhole[EPOCHS];
	struct ferry_reader_config cfg = config(dir, 2, 5);
	struct ferry_reader_state st;
	ferry_reader *r;
	ferry_batch *b;
	int first[NFILES * 2];
	unsigned n = 0;
	read_all(ctx, cfg, whole, nwhole);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	for (unsigned i = 0; i < 5; i++) {
		T_OK(ferry_reader_next(r, &b));
		for (unsigned k = 0; k < ferry_batch_size(b); k++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, k, &s));
			first[n++] = tr_file_index(s.path);
		}
		ferry_batch_release(b);
	}
	T_OK(ferry_reader_save_state(r, &st));
	T_OK(ferry_reader_close(r));
	/* Shard 2 holds 8 files a epoch: 2 batches, so 5 batches end in epoch 2. */
	T_EQ(st.epoch, 2);
	T_EQ(st.index, 1);
	T_ASSERT(memcmp(first, whole[0], 8 * sizeof(int)) == 0);
	T_ASSERT(memcmp(first + 8, whole[1], 8 * sizeof(int)) == 0);
	T_ASSERT(memcmp(first + 16, whole[2], 4 * sizeof(int)) == 0);

	struct ferry_reader_config again = cfg;
	again.resume = &st;
	T_OK(ferry_reader_open(ctx, &again, &r));
	T_OK(ferry_reader_next(r, &b));
	struct ferry_sample s;
	T_OK(ferry_batch_sample(b, 0, &s));
	T_EQ(tr_file_index(s.path), whole[2][4]);
	ferry_batch_release(b);
	T_OK(ferry_reader_close(r));

	struct ferry_reader_config local = cfg;
	local.shuffle_dataset = 0;
	local.random_shuffle = 1;
	local.resume = &st;
	T_EQ(ferry_reader_open(ctx, &local, &r), -FERRY_ECONFIG);
}

static void check_exclusive(ferry_ctx *ctx, const char *dir)
{
	struct ferry_reader_config cfg = config(dir, 0, 1);
	ferry_reader *r;
	cfg.random_shuffle = 1;
	T_EQ(ferry_reader_open(ctx, &cfg, &r), -FERRY_ECONFIG);
	T_ASSERT(strstr(ferry_last_error(), "random_shuffle"));
	T_ASSERT(strstr(ferry_last_error(), "shuffle_dataset"));
}

int main(void)
{
	char *dir = t_tmpdir();
	ferry_ctx *ctx = tr_ctx(0, 2);
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	tr_write_vectors(dir, NFILES);
	check_partition(ctx, dir);
	check_seed(ctx, dir);
	check_resume(ctx, dir);
	check_exclusive(ctx, dir);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	return T_EXIT_PASS;
}
