/*
 * on_error = skip when nothing can be delivered. With every file bad and no
 * epoch limit, ferry_reader_next returns the bad files' error once an epoch
 * has delivered nothing (it used to skip forever, never returning), and keeps
 * doing so on further calls; an epoch whose last batch is all bad ends, and
 * the next epoch's batches follow in order.
 */
#include <signal.h>
#include <unistd.h>

#include "test_reader_util.h"

static void watchdog(int sig)
{
	static const char msg[] = "FAIL: ferry_reader_next did not return\n";
	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(T_EXIT_FAIL);
}

/* Writes a file that is not .npy at all. */
static void write_garbage(const char *path)
{
	FILE *f = fopen(path, "wb");
	T_ASSERT(f && fputs("not an npy file", f) >= 0 && fclose(f) == 0);
}

static ferry_reader *open_skip(ferry_ctx *ctx, const char *dir, unsigned batch)
{
	struct ferry_reader_config cfg = { .root = dir, .filter = "f*.npy", .batch_size = batch,
					   .threads = 2, .num_shards = 1,
					   .on_error = FERRY_ON_ERROR_SKIP };
	ferry_reader *r;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	return r;
}

static void test_all_bad(ferry_ctx *ctx, const char *dir)
{
	for (unsigned i = 0; i < 5; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%03u.npy", i);
		write_garbage(tr_path(dir, name));
	}
	ferry_reader *r = open_skip(ctx, dir, 2);
	for (int call = 0; call < 3; call++) {
		ferry_batch *b = NULL;
		alarm(20);
		int rc = ferry_reader_next(r, &b);
		alarm(0);
		if (rc != -FERRY_EFORMAT || !strstr(ferry_last_error(), "every file was skipped"))
			T_FAIL("call %d: %s (%s)", call, ferry_strerror(rc), ferry_last_error());
		T_ASSERT(strstr(ferry_last_error(), "f00"));
	}
	struct ferry_reader_stats st;
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	T_EQ(st.samples, 0);
	T_ASSERT(st.files_skipped >= 15);
	T_OK(ferry_reader_close(r));
}

/* f000..f004 good, f005 and f006 bad: batches of 2 end with an all-bad one. */
static void test_last_batch_bad(ferry_ctx *ctx, const char *dir)
{
	tr_write_vectors(dir, 5);
	write_garbage(tr_path(dir, "f005.npy"));
	write_garbage(tr_path(dir, "f006.npy"));
	ferry_reader *r = open_skip(ctx, dir, 2);
	uint64_t last_epoch = 0, delivered = 0;
	for (int k = 0; k < 9; k++) { /* 3 batches an epoch delivered, 3 epochs */
		ferry_batch *b;
		uint64_t epoch, index;
		alarm(20);
		T_OK(ferry_reader_next(r, &b));
		alarm(0);
		T_OK(ferry_batch_position(b, &epoch, &index));
		T_EQ(epoch, (uint64_t)(k / 3));
		T_EQ(index, (uint64_t)(k % 3));
		T_ASSERT(epoch >= last_epoch);
		last_epoch = epoch;
		delivered += ferry_batch_size(b);
		ferry_batch_release(b);
	}
	T_EQ(delivered, 15);
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	signal(SIGALRM, watchdog);
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	ferry_ctx *ctx = tr_ctx(4096, 2);
	char *dir = strdup(t_tmpdir());
	test_all_bad(ctx, dir);
	t_rmtree(dir);
	free(dir);
	dir = strdup(t_tmpdir());
	test_last_batch_bad(ctx, dir);
	t_rmtree(dir);
	free(dir);
	T_OK(ferry_ctx_destroy(ctx));
	printf("on_error=skip: an epoch of bad files ends with an error, partly bad epochs end\n");
	return T_EXIT_PASS;
}
