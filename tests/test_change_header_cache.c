/*
 * The reader's header cache and files replaced by others of the same size and
 * modification time (`cp -p`, `rsync -t`, `tar x` leave mtime as it was):
 *  - an int32 [10, 20, 30, 40] file, cached, rewritten in place as float32 of
 *    the same size with the old mtime put back: the next epoch delivers
 *    float32 and the new bytes, not the old header over new bytes;
 *  - the same through rename (a new inode);
 *  - a header rewritten between the batch's open pass and its read pass (a
 *    hook after the previous sample's pread): the payload's first read sees
 *    other header bytes than the ones parsed, and the sample fails with
 *    -FERRY_ECHANGED naming the file.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_reader_util.h"

static char *dir, *path_a, *path_x;

/* Writes count elements of dtype from values (native order) over path in one
 * write, keeping its mtime when keep_mtime is set (in place, as cp -p does). */
static void write_values(const char *path, enum ferry_dtype dtype, const void *values,
			 int64_t count, int keep_mtime)
{
	char bytes[512];
	struct stat st;
	int had = stat(path, &st) == 0;
	int hl = ferry__npy_write_header(bytes, sizeof(bytes), dtype, '<', 0, 1, &count, 0);
	T_OK(hl);
	size_t n = (size_t)count * ferry_dtype_size(dtype);
	memcpy(bytes + hl, values, n);
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	T_ASSERT(fd >= 0);
	T_ASSERT(pwrite(fd, bytes, (size_t)hl + n, 0) == (ssize_t)((size_t)hl + n));
	if (keep_mtime && had) {
		struct timespec times[2] = { st.st_atim, st.st_mtim };
		T_ASSERT(futimens(fd, times) == 0);
	}
	T_ASSERT(close(fd) == 0);
}

static const int32_t ints[4] = { 10, 20, 30, 40 };
static const float floats[4] = { 1.5f, 2.5f, 3.5f, 4.5f };

/* Takes the next batch (of one) and checks it holds dtype and want. */
static void expect_sample(ferry_ctx *ctx, ferry_reader *r, enum ferry_dtype dtype,
			  const void *want, const char *what)
{
	ferry_batch *b;
	struct ferry_sample s;
	T_OK(ferry_reader_next(r, &b));
	T_OK(ferry_batch_sample(b, 0, &s));
	if (s.dtype != dtype)
		T_FAIL("%s: dtype %s, want %s", what, ferry_dtype_name(s.dtype),
		       ferry_dtype_name(dtype));
	tr_check_bytes(ctx, s.data, want, 16, what);
	ferry_batch_release(b);
}

static ferry_reader *open_one(ferry_ctx *ctx, const char *path)
{
	const char *files[1] = { path };
	struct ferry_reader_config cfg = { .files = files, .nfiles = 1, .threads = 1,
					   .prefetch_depth = 1, .num_shards = 1 };
	ferry_reader *r;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	return r;
}

static void test_replaced(ferry_ctx *ctx, int by_rename)
{
	char tmp[1200];
	write_values(path_x, FERRY_INT32, ints, 4, 0);
	ferry_reader *r = open_one(ctx, path_x);
	expect_sample(ctx, r, FERRY_INT32, ints, "first epoch");
	expect_sample(ctx, r, FERRY_INT32, ints, "second epoch");
	if (by_rename) {
		snprintf(tmp, sizeof(tmp), "%s.tmp", path_x);
		T_ASSERT(link(path_x, tmp) == 0); /* tmp keeps the old mtime to copy */
		write_values(tmp, FERRY_FLOAT32, floats, 4, 1);
		T_ASSERT(rename(tmp, path_x) == 0);
	} else {
		write_values(path_x, FERRY_FLOAT32, floats, 4, 1);
	}
	/* prefetch 1: up to two batches were loading while the file changed: the
	 * old file, the new one, or an error; never checked here */
	for (int k = 0; k < 2; k++) {
		ferry_batch *b;
		if (ferry_reader_next(r, &b) == 0)
			ferry_batch_release(b);
	}
	for (int e = 0; e < 3; e++)
		expect_sample(ctx, r, FERRY_FLOAT32, floats, by_rename ? "renamed" : "in place");
	T_OK(ferry_reader_close(r));
}

static atomic_int countdown; /* preads to let through before rewriting x */

static void after_pread(void *arg, int fd, off_t offset)
{
	if (atomic_load(&countdown) > 0 && atomic_fetch_sub(&countdown, 1) == 1)
		write_values(path_x, FERRY_FLOAT32, floats, 4, 1);
}

/* One thread, a batch of [a, x]: the open pass reads a's and x's headers
 * (preads 1 and 2), the read pass a's payload (3) and then x's (4). x is
 * rewritten after the third. */
static void test_header_between_passes(ferry_ctx *ctx)
{
	const char *files[2] = { path_a, path_x };
	struct ferry_reader_config cfg = { .files = files, .nfiles = 2, .batch_size = 2,
					   .epochs = 1, .threads = 1, .num_shards = 1 };
	ferry_reader *r;
	ferry_batch *b = NULL;
	if (!t_io_syscalls_wrapped())
		T_SKIP("needs the pread wrapper");
	write_values(path_a, FERRY_INT32, ints, 4, 0);
	write_values(path_x, FERRY_INT32, ints, 4, 0);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	atomic_store(&countdown, 3);
	t_io_after_pread(after_pread, NULL);
	int rc = ferry_reader_next(r, &b);
	t_io_after_pread(NULL, NULL);
	T_EQ(atomic_load(&countdown), 0);
	if (rc != -FERRY_ECHANGED || !strstr(ferry_last_error(), path_x))
		T_FAIL("header changed between the passes: %s (%s)", ferry_strerror(rc),
		       ferry_last_error());
	ferry_batch_release(b);
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	unsetenv("FERRY_IO");
	ferry_ctx *ctx = tr_ctx(4096, 1);
	dir = strdup(t_tmpdir());
	path_a = strdup(tr_path(dir, "a.npy"));
	path_x = strdup(tr_path(dir, "x.npy"));
	test_replaced(ctx, 0);
	test_replaced(ctx, 1);
	test_header_between_passes(ctx);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir), free(path_a), free(path_x);
	printf("header cache: files replaced with the same size and mtime are parsed again\n");
	return T_EXIT_PASS;
}
