/* ROI economy: a region on the outermost axis of a C-order file reads only
 * its bytes plus alignment slack (2 * 4096 per contiguous range); the bytes
 * still arrive exactly. */
#include "test_reader_util.h"

static void check(ferry_ctx *ctx, const char *dir, int ndim, const int64_t *shape, int64_t b,
		  int64_t e, unsigned nfiles)
{
	const char *paths[4];
	int64_t start[1] = { b }, end[1] = { e };
	struct ferry_reader_config cfg = { .nfiles = nfiles, .epochs = 1, .batch_size = 2,
					   .roi_nvals = 1, .roi_start = start, .roi_end = end };
	struct ferry_reader_stats before = { 0 }, after;
	ferry_reader *r;
	ferry_batch *bt;
	uint64_t inner = 4, total = 4;
	int64_t want_start[4] = { b }, want_shape[4] = { e - b };
	for (int d = 1; d < ndim; d++) {
		inner *= (uint64_t)shape[d];
		want_shape[d] = shape[d];
	}
	for (int d = 0; d < ndim; d++)
		total *= (uint64_t)shape[d];
	for (unsigned i = 0; i < nfiles; i++) {
		char name[32];
		snprintf(name, sizeof(name), "e%u.npy", i);
		paths[i] = strdup(tr_path(dir, name));
		tr_write_npy(paths[i], FERRY_FLOAT32, 0, 0, ndim, shape, 100 + i);
	}
	cfg.files = paths;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while (ferry_reader_next(r, &bt) == 0) {
		T_OK(ferry_reader_stats(r, &after, sizeof(after)));
		uint64_t region = 0;
		for (unsigned i = 0; i < ferry_batch_size(bt); i++) {
			struct ferry_sample s;
			uint64_t n;
			T_OK(ferry_batch_sample(bt, i, &s));
			uint32_t id = 100 + (uint32_t)(s.path[strlen(s.path) - 5] - '0');
			float fill = 0;
			void *want = tr_reference(id, 4, 0, 0, ndim, shape, want_start, want_shape,
						  &fill, &n);
			tr_check_sample(ctx, &s, want, n, "economy");
			free(want);
			region += s.nbytes;
			T_EQ(s.nbytes, (uint64_t)(e - b) * inner);
		}
		uint64_t read = after.bytes_read - before.bytes_read;
		if (read < region || read > region + ferry_batch_size(bt) * 2 * 4096)
			T_FAIL("rows [%lld, %lld): read %llu bytes for %llu of region (file %llu)",
			       (long long)b, (long long)e, (unsigned long long)read,
			       (unsigned long long)region, (unsigned long long)total);
		before = after;
		ferry_batch_release(bt);
	}
	T_OK(ferry_reader_close(r));
	for (unsigned i = 0; i < nfiles; i++)
		free((void *)paths[i]);
}

int main(void)
{
	char *dir = t_tmpdir();
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	static const size_t chunks[] = { 4096, 64 * 1024, 2 * 1024 * 1024 };
	for (unsigned k = 0; k < 3; k++) {
		ferry_ctx *ctx = tr_ctx(chunks[k], 2);
		int64_t s2[2] = { 256, 1024 }, s3[3] = { 64, 33, 130 }, s1[1] = { 300000 };
		check(ctx, dir, 2, s2, 37, 101, 3);
		check(ctx, dir, 2, s2, 0, 1, 1);
		check(ctx, dir, 2, s2, 255, 256, 2);
		check(ctx, dir, 3, s3, 10, 20, 3);
		check(ctx, dir, 1, s1, 12345, 234567, 2);
		T_OK(ferry_ctx_destroy(ctx));
	}
	t_rmtree(dir);
	return T_EXIT_PASS;
}
