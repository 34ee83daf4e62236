/* Every byte of every sample, over several epochs with shuffling, prefetch,
 * several IO threads and small staging chunks; a held batch stays intact
 * while later ones load into other memory. */
#include "test_reader_util.h"

#define NFILES 23
#define EPOCHS 3

static int64_t shape_of(unsigned i, int d)
{
	static const int64_t rows[] = { 1, 3, 17, 64, 130, 7, 250 };
	return d == 0 ? rows[i % 7] : 33 + (int64_t)(i * 37 % 300);
}

static void check_batch(ferry_ctx *ctx, ferry_batch *b, const char *what)
{
	for (unsigned i = 0; i < ferry_batch_size(b); i++) {
		struct ferry_sample s;
		T_OK(ferry_batch_sample(b, i, &s));
		int k = tr_file_index(s.path);
		T_EQ(s.dtype, FERRY_FLOAT32);
		T_EQ(s.ndim, 2);
		T_EQ(s.shape[0], shape_of((unsigned)k, 0));
		T_EQ(s.shape[1], shape_of((unsigned)k, 1));
		void *want = tr_payload((uint32_t)k, s.nbytes);
		tr_check_sample(ctx, &s, want, (uint64_t)(s.shape[0] * s.shape[1] * 4), what);
		free(want);
	}
}

static void run(ferry_ctx *ctx, const char *dir, unsigned threads, unsigned depth)
{
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 5, .epochs = EPOCHS,
					   .random_shuffle = 1, .seed = 7, .pad_last_batch = 1,
					   .threads = threads, .prefetch_depth = depth };
	struct ferry_reader_stats st;
	ferry_reader *r;
	ferry_batch *b, *held = NULL;
	uint64_t bytes = 0;
	int rc;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while ((rc = ferry_reader_next(r, &b)) == 0) {
		T_OK(ferry_batch_wait(b));
		T_OK(ferry_batch_stream_wait(b, NULL));
		T_EQ(ferry_batch_size(b), 5);
		check_batch(ctx, b, "current");
		if (held) {
			check_batch(ctx, held, "held");
			ferry_batch_release(held);
		}
		for (unsigned i = 0; i < ferry_batch_size(b); i++) {
			struct ferry_sample s;
			ferry_batch_sample(b, i, &s);
			bytes += s.is_padding ? 0 : s.nbytes;
		}
		held = b;
	}
	T_EQ(rc, -FERRY_EEND);
	ferry_batch_release(held);
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	T_EQ(st.samples, EPOCHS * NFILES);
	T_EQ(st.batches, EPOCHS * 5);
	T_EQ(st.bytes_delivered, bytes);
	T_ASSERT(st.bytes_read >= bytes);
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	char *dir = t_tmpdir();
	ferry_ctx *ctx = tr_ctx(64 * 1024, 4);
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	for (unsigned i = 0; i < NFILES; i++) {
		char name[64];
		int64_t shape[2] = { shape_of(i, 0), shape_of(i, 1) };
		snprintf(name, sizeof(name), "f%03u.npy", i);
		tr_write_npy(tr_path(dir, name), FERRY_FLOAT32, 0, 0, 2, shape, i);
	}
	run(ctx, dir, 4, 3);
	run(ctx, dir, 1, 1);
	run(ctx, dir, 8, 6);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	return T_EXIT_PASS;
}
