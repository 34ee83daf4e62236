/*
 * Threads sharing one reader: 8 threads call ferry_reader_next at once on a
 * reader of 40 files (batches of 3, 2 epochs, shuffled, padded). Every sample
 * of every epoch is delivered exactly once (padding aside), each holds its
 * file's bytes, and every caller sees the end.
 */
#include <pthread.h>

#include "test_reader_util.h"

#define NFILES 40
#define NTHREADS 8
#define EPOCHS 2

struct shared {
	ferry_ctx *ctx;
	ferry_reader *r;
	pthread_mutex_t lock;
	unsigned seen[EPOCHS][NFILES];
	unsigned batches;
};

static void check_sample(struct shared *sh, const struct ferry_sample *s, uint64_t epoch)
{
	int k = tr_file_index(s->path);
	int64_t len = 4 + k % 3, start = 0;
	uint64_t nbytes;
	void *want = tr_reference((uint32_t)k, 4, 0, 0, 1, &len, &start, &len, "\0\0\0", &nbytes);
	tr_check_sample(sh->ctx, s, want, nbytes, "shared reader");
	free(want);
	if (s->is_padding)
		return;
	pthread_mutex_lock(&sh->lock);
	sh->seen[epoch][k]++;
	pthread_mutex_unlock(&sh->lock);
}

static void *consume(void *arg)
{
	struct shared *sh = arg;
	ferry_batch *b;
	int rc;
	while ((rc = ferry_reader_next(sh->r, &b)) == 0) {
		uint64_t epoch;
		T_OK(ferry_batch_position(b, &epoch, NULL));
		T_ASSERT(epoch < EPOCHS);
		for (unsigned i = 0; i < ferry_batch_size(b); i++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, i, &s));
			check_sample(sh, &s, epoch);
		}
		ferry_batch_release(b);
		pthread_mutex_lock(&sh->lock);
		sh->batches++;
		pthread_mutex_unlock(&sh->lock);
	}
	T_EQ(rc, -FERRY_EEND);
	return NULL;
}

int main(void)
{
	static struct shared sh = { .lock = PTHREAD_MUTEX_INITIALIZER };
	pthread_t tid[NTHREADS];
	char *dir = strdup(t_tmpdir());
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	tr_write_vectors(dir, NFILES);
	sh.ctx = tr_ctx(4096, 2);
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 3, .epochs = EPOCHS,
					   .random_shuffle = 1, .seed = 5, .pad_last_batch = 1,
					   .threads = 3, .prefetch_depth = 3, .num_shards = 1 };
	T_OK(ferry_reader_open(sh.ctx, &cfg, &sh.r));
	for (unsigned i = 0; i < NTHREADS; i++)
		T_ASSERT(pthread_create(&tid[i], NULL, consume, &sh) == 0);
	for (unsigned i = 0; i < NTHREADS; i++)
		pthread_join(tid[i], NULL);
	for (unsigned e = 0; e < EPOCHS; e++)
		for (unsigned k = 0; k < NFILES; k++)
			if (sh.seen[e][k] != 1)
				T_FAIL("epoch %u: file %u delivered %u times", e, k, sh.seen[e][k]);
	T_EQ(sh.batches, EPOCHS * ((NFILES + 2) / 3));
	T_OK(ferry_reader_close(sh.r));
	T_OK(ferry_ctx_destroy(sh.ctx));
	t_rmtree(dir);
	free(dir);
	printf("%u threads on one reader: every sample exactly once per epoch\n", NTHREADS);
	return T_EXIT_PASS;
}
