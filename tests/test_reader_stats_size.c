/*
 * ferry_reader_stats takes the caller's struct size: a program built against
 * the first version of struct ferry_reader_stats (its first five fields,
 * FERRY_READER_STATS_MIN_SIZE bytes) gets those and nothing past them is
 * written; today's size gets every field; a size below the first version's is
 * -EINVAL with a message.
 */
#include "test_reader_util.h"

#define NFILES 7

int main(void)
{
	char *dir = strdup(t_tmpdir());
	tr_write_vectors(dir, NFILES);
	ferry_ctx *ctx = tr_ctx(0, 2);
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 3, .epochs = 1,
					   .num_shards = 1 };
	ferry_reader *r;
	ferry_batch *b;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while (ferry_reader_next(r, &b) == 0)
		ferry_batch_release(b);

	struct ferry_reader_stats now;
	T_OK(ferry_reader_stats(r, &now, sizeof(now)));
	T_EQ(now.samples, NFILES);
	T_EQ(now.batches, 3);
	T_EQ(now.files_buffered + now.files_direct + now.files_mapped, NFILES);

	unsigned char old[sizeof(struct ferry_reader_stats) + 16];
	memset(old, 0xab, sizeof(old));
	T_OK(ferry_reader_stats(r, (struct ferry_reader_stats *)old, FERRY_READER_STATS_MIN_SIZE));
	T_ASSERT(memcmp(old, &now, FERRY_READER_STATS_MIN_SIZE) == 0);
	for (size_t i = FERRY_READER_STATS_MIN_SIZE; i < sizeof(old); i++)
		if (old[i] != 0xab)
			T_FAIL("byte %zu past the caller's %d was written", i,
			       FERRY_READER_STATS_MIN_SIZE);

	T_EQ(ferry_reader_stats(r, &now, FERRY_READER_STATS_MIN_SIZE - 1), -EINVAL);
	T_ASSERT(strstr(ferry_last_error(), "ferry_reader_stats: size 39"));
	T_OK(ferry_reader_close(r));
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	printf("ok: ferry_reader_stats writes the caller's size, no more\n");
	return T_EXIT_PASS;
}
