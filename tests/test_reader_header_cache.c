/* The header cache: a file rewritten with another shape (and mtime) is parsed
 * again, also when its size stays the same; without a change the cached
 * header serves. Rewrites go through rename so a background load sees the old
 * file or the new one, never half of one. */
#include "test_reader_util.h"

#include <time.h>

struct version {
	enum ferry_dtype dtype;
	int64_t len;
};

static void rewrite(const char *path, struct version v, time_t mtime)
{
	char tmp[1100];
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	tr_write_npy(tmp, v.dtype, 0, 0, 1, &v.len, 7);
	T_ASSERT(utimensat(AT_FDCWD, tmp, ts, 0) == 0);
	T_ASSERT(rename(tmp, path) == 0);
}

/* Reads the next epoch (one sample); returns 1 when it is version v, checking
 * every byte, 0 when it is version old. */
static int read_epoch(ferry_ctx *ctx, ferry_reader *r, struct version old, struct version v)
{
	ferry_batch *b;
	struct ferry_sample s;
	T_OK(ferry_reader_next(r, &b));
	T_EQ(ferry_batch_size(b), 1);
	T_OK(ferry_batch_sample(b, 0, &s));
	int is_new = s.dtype == v.dtype && s.shape[0] == v.len;
	struct version got = is_new ? v : old;
	T_EQ(s.dtype, got.dtype);
	T_EQ(s.shape[0], got.len);
	void *want = tr_payload(7, s.nbytes);
	tr_check_sample(ctx, &s, want, (uint64_t)got.len * ferry_dtype_size(got.dtype), "cache");
	free(want);
	ferry_batch_release(b);
	return is_new;
}

/* Batches in flight at a rewrite: the window, prefetch_depth + 1 (pipeline.c). */
#define IN_FLIGHT 2

/* After a rewrite to v, the batches already in flight may show either version,
 * in either order (IO threads plan them in parallel, so a later one may have
 * read its header before the rename and an earlier one after it); every batch
 * scheduled after the rewrite shows v. Each sample is wholly one version. */
static void expect_switch(ferry_ctx *ctx, ferry_reader *r, struct version old, struct version v)
{
	for (int i = 0; i < IN_FLIGHT + 4; i++) {
		int is_new = read_epoch(ctx, r, old, v);
		if (i >= IN_FLIGHT)
			T_ASSERT(is_new);
	}
}

int main(void)
{
	char *dir = t_tmpdir();
	ferry_ctx *ctx = tr_ctx(0, 2);
	const char *path = tr_path(dir, "a.npy");
	struct version v16 = { FERRY_INT32, 16 }, v32 = { FERRY_INT32, 32 },
		       h32 = { FERRY_INT16, 32 };
	struct ferry_reader_config cfg = { .root = dir, .epochs = 0, .prefetch_depth = 1 };
	ferry_reader *r;
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	rewrite(path, v16, 1000000);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_ASSERT(!read_epoch(ctx, r, v16, v32));
	T_ASSERT(!read_epoch(ctx, r, v16, v32));
	rewrite(path, v32, 2000000);   /* another size */
	expect_switch(ctx, r, v16, v32);
	rewrite(path, v16, 3000000);
	expect_switch(ctx, r, v32, v16);
	rewrite(path, h32, 4000000);   /* the same size (64 bytes), another mtime */
	expect_switch(ctx, r, v16, h32);
	T_OK(ferry_reader_close(r));
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	return T_EXIT_PASS;
}
