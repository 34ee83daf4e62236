/*
 * Settings beyond what ferry can honour are refused with -FERRY_ECONFIG and a
 * message naming the setting, from options as from the environment (which
 * had limits options could bypass): threads and buffers of a context, batch
 * size, threads and prefetch depth of a reader. The limits themselves work.
 */
#include "test_reader_util.h"

static void expect_config_error(int rc, const char *word)
{
	if (rc != -FERRY_ECONFIG)
		T_FAIL("%s: %s (%s), want -FERRY_ECONFIG", word, ferry_strerror(rc),
		       ferry_last_error());
	if (!strstr(ferry_last_error(), word))
		T_FAIL("message does not name %s: %s", word, ferry_last_error());
}

static void test_context(void)
{
	struct ferry_ctx_options o = { .gpu = -1, .direct = -1, .threads = 5000 };
	ferry_ctx *ctx;
	expect_config_error(ferry_ctx_create(&ctx, &o), "threads");
	o.threads = FERRY_THREADS_MAX + 1;
	expect_config_error(ferry_ctx_create(&ctx, &o), "threads");
	o = (struct ferry_ctx_options){ .gpu = -1, .direct = -1, .max_buffers = 5000 };
	expect_config_error(ferry_ctx_create(&ctx, &o), "max_buffers");
	o.max_buffers = FERRY_BUFFERS_MAX + 1;
	expect_config_error(ferry_ctx_create(&ctx, &o), "max_buffers");
	setenv("FERRY_THREADS", "5000", 1);
	o = (struct ferry_ctx_options){ .gpu = -1, .direct = -1 };
	expect_config_error(ferry_ctx_create(&ctx, &o), "FERRY_THREADS");
	unsetenv("FERRY_THREADS");
	o = (struct ferry_ctx_options){ .gpu = -1, .direct = -1, .threads = 2,
					.max_buffers = 8, .chunk_size = 4096 };
	T_OK(ferry_ctx_create(&ctx, &o));
	T_OK(ferry_ctx_destroy(ctx));
}

static void test_reader(ferry_ctx *ctx, const char *dir)
{
	ferry_reader *r;
	struct ferry_reader_config cfg = { .root = dir, .num_shards = 1 };
	cfg.batch_size = FERRY_BATCH_MAX + 1;
	expect_config_error(ferry_reader_open(ctx, &cfg, &r), "batch_size");
	cfg.batch_size = 1u << 31;
	expect_config_error(ferry_reader_open(ctx, &cfg, &r), "batch_size");
	cfg.batch_size = 0;
	cfg.threads = FERRY_THREADS_MAX + 1;
	expect_config_error(ferry_reader_open(ctx, &cfg, &r), "threads");
	cfg.threads = 0;
	cfg.prefetch_depth = FERRY_PREFETCH_MAX + 1;
	expect_config_error(ferry_reader_open(ctx, &cfg, &r), "prefetch_depth");
	cfg.prefetch_depth = 4;
	cfg.batch_size = 3;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	unsetenv("FERRY_THREADS");
	unsetenv("FERRY_MAX_BUFFERS");
	test_context();
	char *dir = strdup(t_tmpdir());
	tr_write_vectors(dir, 3);
	ferry_ctx *ctx = tr_ctx(4096, 1);
	test_reader(ctx, dir);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	printf("settings beyond the limits: refused, naming the setting\n");
	return T_EXIT_PASS;
}
