/*
 * Releasing batches (ferry_batch_release hands a batch back without the
 * reader's lock; the next ferry_reader_next reuses it): a batch released
 * twice is reused once; batches held across later ones keep their bytes
 * until released; batches released on other threads, while the caller goes
 * on taking batches, come back, every byte of every sample checked before
 * its release, and the reader makes no more batch objects than its window
 * and what is held need.
 */
#include "test_reader_util.h"

#define NFILES 96
#define BATCH 4
#define RELEASERS 4
#define QUEUE 8

static int64_t length_of(unsigned i)
{
	return 64 + (int64_t)(i % 5) * 16;
}

static void write_files(const char *dir)
{
	for (unsigned i = 0; i < NFILES; i++) {
		int64_t shape[1] = { length_of(i) };
		tr_write_npy(tr_numbered(dir, i), FERRY_INT32, 0, 0, 1, shape, i);
	}
}

/* Every sample of b holds its file's payload. */
static void check_batch(ferry_ctx *ctx, ferry_batch *b, const char *what)
{
	for (unsigned i = 0; i < ferry_batch_size(b); i++) {
		struct ferry_sample s;
		T_OK(ferry_batch_sample(b, i, &s));
		unsigned id = (unsigned)tr_file_index(s.path);
		uint64_t nbytes = (uint64_t)length_of(id) * 4;
		void *want = tr_payload(id, nbytes);
		tr_check_sample(ctx, &s, want, nbytes, what);
		free(want);
	}
}

static ferry_reader *open_reader(ferry_ctx *ctx, const char *dir, uint64_t epochs)
{
	struct ferry_reader_config cfg = { .root = dir, .batch_size = BATCH, .epochs = epochs,
					   .random_shuffle = 1, .seed = 7, .threads = 3 };
	ferry_reader *r;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	return r;
}

/* Released twice: handed back once, so never given out twice at a time. */
static void check_double_release(ferry_ctx *ctx, const char *dir)
{
	ferry_reader *r = open_reader(ctx, dir, 3);
	ferry_batch *b, *prev = NULL;
	unsigned batches = 0;
	while (ferry_reader_next(r, &b) == 0) {
		T_ASSERT(b != prev); /* prev is still held */
		check_batch(ctx, b, "double release");
		if (prev) {
			ferry_batch_release(prev);
			ferry_batch_release(prev);
		}
		prev = b;
		batches++;
	}
	ferry_batch_release(prev);
	T_EQ(batches, 3 * NFILES / BATCH);
	T_ASSERT(r->nall <= ferry__window(r, r->batch_bytes) + 2);
	T_OK(ferry_reader_close(r));
}

/* Held batches keep their bytes while later ones load into other memory. */
static void check_held(ferry_ctx *ctx, const char *dir)
{
	ferry_reader *r = open_reader(ctx, dir, 2);
	ferry_batch *held[8], *b;
	for (unsigned i = 0; i < 8; i++)
		T_OK(ferry_reader_next(r, &held[i]));
	for (unsigned k = 0; k < 12 && ferry_reader_next(r, &b) == 0; k++) {
		check_batch(ctx, b, "beside held batches");
		ferry_batch_release(b);
	}
	for (unsigned i = 0; i < 8; i++) {
		check_batch(ctx, held[i], "held");
		ferry_batch_release(held[i]);
	}
	T_OK(ferry_reader_close(r));
}

/* Batches go to releaser threads through a small queue. */
struct handback {
	ferry_ctx *ctx;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	ferry_batch *queue[QUEUE];
	unsigned head, count, done, released;
};

static void *releaser(void *arg)
{
	struct handback *h = arg;
	pthread_mutex_lock(&h->lock);
	for (;;) {
		while (!h->count && !h->done)
			pthread_cond_wait(&h->changed, &h->lock);
		if (!h->count)
			break;
		ferry_batch *b = h->queue[h->head];
		h->head = (h->head + 1) % QUEUE;
		h->count--;
		pthread_cond_broadcast(&h->changed);
		pthread_mutex_unlock(&h->lock);
		check_batch(h->ctx, b, "released on another thread");
		ferry_batch_release(b);
		pthread_mutex_lock(&h->lock);
		h->released++;
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

static void hand_over(struct handback *h, ferry_batch *b)
{
	pthread_mutex_lock(&h->lock);
	while (h->count == QUEUE)
		pthread_cond_wait(&h->changed, &h->lock);
	h->queue[(h->head + h->count++) % QUEUE] = b;
	pthread_cond_broadcast(&h->changed);
	pthread_mutex_unlock(&h->lock);
}

static void check_other_threads(ferry_ctx *ctx, const char *dir)
{
	struct handback h = { .ctx = ctx };
	pthread_t t[RELEASERS];
	pthread_mutex_init(&h.lock, NULL);
	pthread_cond_init(&h.changed, NULL);
	for (unsigned i = 0; i < RELEASERS; i++)
		T_ASSERT(pthread_create(&t[i], NULL, releaser, &h) == 0);
	ferry_reader *r = open_reader(ctx, dir, 4);
	ferry_batch *b;
	unsigned batches = 0;
	while (ferry_reader_next(r, &b) == 0) {
		hand_over(&h, b);
		batches++;
	}
	pthread_mutex_lock(&h.lock);
	h.done = 1;
	pthread_cond_broadcast(&h.changed);
	pthread_mutex_unlock(&h.lock);
	for (unsigned i = 0; i < RELEASERS; i++)
		pthread_join(t[i], NULL);
	T_EQ(batches, 4 * NFILES / BATCH);
	T_EQ(h.released, batches);
	/* the window, the queue, one on each releaser and the caller's */
	T_ASSERT(r->nall <= ferry__window(r, r->batch_bytes) + QUEUE + RELEASERS + 2);
	T_OK(ferry_reader_close(r));
	pthread_cond_destroy(&h.changed);
	pthread_mutex_destroy(&h.lock);
}

int main(void)
{
	char *dir = t_tmpdir();
	write_files(dir);
	ferry_ctx *ctx = tr_ctx(4096, 3);
	check_double_release(ctx, dir);
	check_held(ctx, dir);
	check_other_threads(ctx, dir);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	printf("ok: batches released twice, held, and on other threads come back once, every "
	       "byte checked\n");
	return 0;
}
