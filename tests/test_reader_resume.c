/*
 * Resuming a reader: a shuffled, sharded, padded run is stopped in the middle
 * of an epoch, its state saved, and a new reader (as after a restart) resumes
 * from it: the samples from there on, sample by sample, are those of an
 * uninterrupted run, into the following epochs. A state is refused by a
 * reader of another listing or other settings, and past the last epoch.
 */
#include "test_reader_util.h"

#define NFILES 29
#define MAX_SAMPLES 400

static struct ferry_reader_config config(const char *dir, uint64_t seed)
{
	return (struct ferry_reader_config){ .root = dir, .batch_size = 4, .epochs = 3,
					     .shard_id = 1, .num_shards = 3, .pad_last_batch = 1,
					     .random_shuffle = 1, .seed = seed, .threads = 2 };
}

/* Takes up to limit batches (all when 0), writing sample indices to idx. */
static unsigned take(ferry_reader *r, unsigned limit, int *idx, unsigned *n)
{
	ferry_batch *b;
	unsigned batches = 0;
	while ((!limit || batches < limit) && ferry_reader_next(r, &b) == 0) {
		for (unsigned i = 0; i < ferry_batch_size(b); i++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, i, &s));
			T_ASSERT(*n < MAX_SAMPLES);
			idx[(*n)++] = s.is_padding ? -1 - tr_file_index(s.path) : tr_file_index(s.path);
		}
		ferry_batch_release(b);
		batches++;
	}
	return batches;
}

static void expect_refused(ferry_ctx *ctx, struct ferry_reader_config cfg,
			   const struct ferry_reader_state *st, const char *why)
{
	ferry_reader *r;
	cfg.resume = st;
	int rc = ferry_reader_open(ctx, &cfg, &r);
	if (rc != -FERRY_ECONFIG || !strstr(ferry_last_error(), "resume state"))
		T_FAIL("%s: %s (%s)", why, ferry_strerror(rc), ferry_last_error());
}

int main(void)
{
	static int whole[MAX_SAMPLES], part[MAX_SAMPLES];
	unsigned nwhole = 0, npart = 0;
	char *dir = strdup(t_tmpdir()), *other = strdup(t_tmpdir());
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	tr_write_vectors(dir, NFILES);
	tr_write_vectors(other, NFILES + 1);
	ferry_ctx *ctx = tr_ctx(4096, 2);
	struct ferry_reader_config cfg = config(dir, 7);
	ferry_reader *r;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	unsigned total = take(r, 0, whole, &nwhole);
	T_OK(ferry_reader_close(r));
	T_EQ(total, 3 * 3); /* 9 or 10 files of the shard, batches of 4: 3 an epoch */
	for (unsigned stop = 1; stop < total; stop++) {
		struct ferry_reader_state st;
		npart = 0;
		T_OK(ferry_reader_open(ctx, &cfg, &r));
		take(r, stop, part, &npart);
		T_OK(ferry_reader_save_state(r, &st));
		T_OK(ferry_reader_close(r)); /* a restart */
		T_EQ(st.epoch, stop / 3);
		T_EQ(st.index, stop % 3);
		cfg.resume = &st;
		T_OK(ferry_reader_open(ctx, &cfg, &r));
		cfg.resume = NULL;
		T_EQ(take(r, 0, part, &npart), total - stop);
		T_OK(ferry_reader_close(r));
		T_EQ(npart, nwhole);
		for (unsigned i = 0; i < nwhole; i++)
			if (part[i] != whole[i])
				T_FAIL("stopped after batch %u: sample %u is %d, uninterrupted %d", stop, i,
				       part[i], whole[i]);
		struct ferry_reader_config bad = config(dir, 8);
		expect_refused(ctx, bad, &st, "another seed");
		bad = config(other, 7);
		expect_refused(ctx, bad, &st, "another listing");
		bad = config(dir, 7);
		bad.batch_size = 5;
		expect_refused(ctx, bad, &st, "another batch size");
	}
	struct ferry_reader_state past = { .epoch = 3, .index = 0 };
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_OK(ferry_reader_save_state(r, &past));
	T_OK(ferry_reader_close(r));
	past.epoch = 3;
	expect_refused(ctx, cfg, &past, "past the last epoch");
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	t_rmtree(other);
	free(dir), free(other);
	printf("resume: every stop point continues as the uninterrupted run did\n");
	return T_EXIT_PASS;
}
