/*
 * The automatic window (ferry__window): how many batches a reader keeps in
 * flight. Each IO thread aims at 4 MiB of samples, no fewer than 64 and no
 * more than 256 of them: small samples need many in flight (16 KiB files on
 * 16 threads read 1.2-1.8 times as fast with 256 as with 64), larger ones
 * only memory. The window holds at most 256 MiB of batch memory and 1024
 * batches, and at least 3 (2 ahead); a configured depth is that depth + 1.
 */
#include "test_reader_util.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)

static ferry_reader *open_reader(ferry_ctx *ctx, const char *dir, unsigned batch,
				 unsigned depth)
{
	struct ferry_reader_config cfg = { .root = dir, .batch_size = batch, .threads = 16,
					   .prefetch_depth = depth };
	ferry_reader *r;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	return r;
}

/* The window of r for batches of batch samples of sample_bytes each. */
static unsigned window_for(ferry_reader *r, unsigned batch, uint64_t sample_bytes)
{
	return ferry__window(r, batch * sample_bytes);
}

int main(void)
{
	char *dir = strdup(t_tmpdir());
	tr_write_vectors(dir, 8);
	ferry_ctx *ctx = tr_ctx(0, 1);

	ferry_reader *r = open_reader(ctx, dir, 4, 0);
	T_EQ(ferry__window(r, 0), 3);              /* no batch loaded yet: its size unknown */
	T_EQ(window_for(r, 4, 1 * KiB), 1024);     /* 256 a thread: 4096 samples; also the most */
	T_EQ(window_for(r, 4, 16 * KiB), 1024);    /* 4 MiB a thread: 256 */
	T_EQ(window_for(r, 4, 32 * KiB), 512);     /* 128 a thread */
	T_EQ(window_for(r, 4, 128 * KiB), 256);    /* 32 would do 4 MiB: the least, 64 */
	T_EQ(window_for(r, 4, 4 * MiB), 16);       /* 256 MiB of batch memory */
	T_EQ(window_for(r, 4, 64 * MiB), 3);       /* one batch fits 256 MiB: the least */
	T_OK(ferry_reader_close(r));

	r = open_reader(ctx, dir, 32, 0);
	T_EQ(window_for(r, 32, 16 * KiB), 128);    /* 4096 samples */
	T_EQ(window_for(r, 32, 128 * KiB), 32);    /* 1024 samples, 128 MiB */
	T_OK(ferry_reader_close(r));

	r = open_reader(ctx, dir, 4, 5);
	T_EQ(window_for(r, 4, 16 * KiB), 6);       /* the config's depth, and the batch taken */
	T_OK(ferry_reader_close(r));

	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	printf("window: 4 MiB of samples an IO thread, 64 to 256 of them, within 256 MiB\n");
	return 0;
}
