/*
 * A file that shrinks under its mapping while the reader's copy out of it is
 * queued (load/mapped.c, reader/api.c). The copy stream is held shut by a
 * gate until the batch has loaded (its copy queued and the file's identity
 * checked), then the file is truncated and the gate opened: the host device's
 * copy fails (-FERRY_ECHANGED, a page of the mapping is gone), and the
 * reader's error names the file, not only the dataset. The reader goes on to
 * the end, and the engine is usable after.
 */
#include <pthread.h>
#include <unistd.h>

#include "reader/reader.h"
#include "test_mapped_util.h"

static ferry_reader *open_reader(ferry_ctx *ctx)
{
	struct ferry_reader_config cfg = { .files = (const char **)tm_paths, .nfiles = 1,
					   .batch_size = 1, .epochs = 1, .num_shards = 1,
					   .prefetch_depth = 1 };
	ferry_reader *r;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	return r;
}

/* Epoch one reads the file through staging, every byte checked; then the
 * registrar maps it. */
static void warm_up(ferry_ctx *ctx)
{
	ferry_reader *r = open_reader(ctx);
	ferry_batch *b;
	T_OK(ferry_reader_next(r, &b));
	struct ferry_sample s;
	T_OK(ferry_batch_sample(b, 0, &s));
	void *want = tm_cpu_read(tm_paths[0], tm_file_size - s.nbytes, s.nbytes);
	tr_check_sample(ctx, &s, want, s.nbytes, "epoch 1");
	free(want);
	ferry_batch_release(b);
	T_OK(ferry_reader_close(r));
	ferry__mapped_drain(ctx->ld.mapped);
	T_EQ(tm_stats(ctx).entries, 1u);
}

/* A caller blocked in ferry_reader_next until the copy fails. */
struct taker {
	ferry_reader *r;
	int rc;
	char *msg;
};

static void *take(void *arg)
{
	struct taker *t = arg;
	ferry_batch *b;
	t->rc = ferry_reader_next(t->r, &b);
	t->msg = strdup(ferry_last_error());
	if (t->rc == 0)
		ferry_batch_release(b);
	return NULL;
}

int main(void)
{
	unsetenv("FERRY_IO");
	setenv("FERRY_ODIRECT", "0", 1);
	setenv("FERRY_PIN_BUDGET", "64M", 1);
	tm_setup();
	struct ferry_ctx_options o = { .gpu = -1, .threads = 2, .direct = -1, .lanes = 1 };
	ferry_ctx *ctx;
	T_OK(ferry_ctx_create(&ctx, &o));
	struct ferry__device *dev = ctx->ld.dev;
	if (strcmp(dev->ops->name, "host") != 0)
		T_SKIP("only the host device's copy of a page past the end fails (CUDA's DMA "
		       "reads the pinned pages)");
	warm_up(ctx);
	struct ferry__gate *g;
	T_OK(dev->ops->gate_create(dev, &g));
	T_OK(dev->ops->gate_hold(dev, ferry__staging_stream(ferry__lanes_get(ctx->ld.lanes, 0)), g));
	struct taker t = { .r = open_reader(ctx) };
	pthread_t thread;
	T_ASSERT(pthread_create(&thread, NULL, take, &t) == 0);
	if (!tr_wait_loaded(t.r))
		T_FAIL("the reader's batch did not load behind the gate in 10 s");
	T_EQ(tm_stats(ctx).hits, 1);
	T_EQ(truncate(tm_paths[0], 4096), 0);
	T_OK(dev->ops->gate_open(dev, g));
	T_ASSERT(pthread_join(thread, NULL) == 0);
	T_EQ(t.rc, -FERRY_ECHANGED);
	if (!strstr(t.msg, tm_paths[0]) || !strstr(t.msg, "a page of its mapping is gone"))
		T_FAIL("the reader's error does not name the file that shrank: %s", t.msg);
	free(t.msg);
	ferry_reader *r = t.r;
	ferry_batch *b;
	T_EQ(ferry_reader_next(r, &b), -FERRY_EEND);
	T_OK(ferry_reader_close(r));
	dev->ops->gate_destroy(dev, g);
	tm_write_file(0);
	tm_load(ctx, 0, "after the failure"); /* the engine goes on */
	T_OK(ferry_ctx_destroy(ctx));
	tm_teardown();
	printf("ok: a mapped copy that failed under the reader names its file\n");
	return T_EXIT_PASS;
}
