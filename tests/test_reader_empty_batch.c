/*
 * A batch whose every output is empty (a file of shape [0]) owns no batch
 * memory (b->mem stays NULL), yet its PACK item may share a staging buffer
 * with a later batch's: one IO thread plans a window of batches of one file
 * each, then takes their fetch items as one run, so the empty batch's copy
 * (0 bytes, to NULL) is queued beside the others. The host device must not
 * memmove(NULL, src, 0) (undefined: the address/undefined sanitizer build
 * stops there). Every byte of the non-empty samples is checked, over three
 * epochs, with and without padding.
 */
#include "test_reader_util.h"

#define NFILES 6

static int64_t length_of(unsigned i)
{
	return i % 2 ? 0 : 5 + i; /* f000 [5], f001 [0], f002 [7], ... */
}

static void run(ferry_ctx *ctx, const char *dir, int pad)
{
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 1, .epochs = 3,
					   .threads = 1, .prefetch_depth = 5, .num_shards = 1,
					   .pad_last_batch = pad };
	unsigned seen[NFILES] = { 0 };
	ferry_reader *r;
	ferry_batch *b;
	int rc;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while ((rc = ferry_reader_next(r, &b)) == 0) {
		T_EQ(ferry_batch_size(b), 1);
		struct ferry_sample s;
		T_OK(ferry_batch_sample(b, 0, &s));
		int k = tr_file_index(s.path);
		T_ASSERT(k >= 0 && k < NFILES);
		int64_t len = length_of((unsigned)k), start = 0;
		uint64_t nbytes;
		void *want = tr_reference((uint32_t)k, 4, 0, 0, 1, &len, &start, &len, "\0\0\0",
					  &nbytes);
		tr_check_sample(ctx, &s, want, nbytes, "empty batches");
		free(want);
		seen[k]++;
		ferry_batch_release(b);
	}
	if (rc != -FERRY_EEND)
		T_FAIL("%s (%s)", ferry_strerror(rc), ferry_last_error());
	for (unsigned k = 0; k < NFILES; k++)
		T_EQ(seen[k], 3);
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	char *dir = t_tmpdir();
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	for (unsigned i = 0; i < NFILES; i++) {
		int64_t shape[1] = { length_of(i) };
		tr_write_npy(tr_numbered(dir, i), FERRY_INT32, 0, 0, 1, shape, i);
	}
	ferry_ctx *ctx = tr_ctx(64 * 1024, 2);
	run(ctx, dir, 0);
	run(ctx, dir, 1);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	printf("ok: batches of only empty outputs beside others, every byte of the rest\n");
	return T_EXIT_PASS;
}
