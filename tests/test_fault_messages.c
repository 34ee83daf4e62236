/*
 * Every failing public call says why in a message about its own subject, even
 * when the failure is an allocation deep in a layer that knows no file. A
 * call on another file fails first (its message names that file); then the
 * Nth host allocation fails in ferry_load, ferry_load_async, ferry_load_into
 * (a converted file), ferry_read_range, ferry_info and a reader's open and
 * first batch, for every N until none is left to fail. Each failure's message
 * must name this call's file (the reader's: its file or its directory) and
 * never the other file.
 */
#include "test_reader_util.h"

#define OTHER "no-such-file-elsewhere.npy"

struct subject {
	ferry_ctx *ctx;
	char *dir, *path, *swapped;
	void *dst;
};

/* Leaves a message naming OTHER on this thread. */
static void fail_on_other(ferry_ctx *ctx)
{
	ferry_array *a;
	T_ASSERT(ferry_load(ctx, OTHER, &a) < 0);
	T_ASSERT(strstr(ferry_last_error(), OTHER));
}

static void check_message(int rc, const char *call, const char *want1, const char *want2,
			  unsigned long n)
{
	if (rc >= 0)
		return;
	const char *msg = ferry_last_error();
	if (strstr(msg, OTHER) || !(strstr(msg, want1) || (want2 && strstr(msg, want2))))
		T_FAIL("%s, allocation %lu failing: %s: message \"%s\" is not about %s", call, n,
		       ferry_strerror(rc), msg, want1);
}

static int reader_call(struct subject *s)
{
	const char *files[1] = { s->path };
	struct ferry_reader_config cfg = { .root = s->dir, .files = files, .nfiles = 1,
					   .epochs = 1, .num_shards = 1, .threads = 1 };
	ferry_reader *r;
	ferry_batch *b;
	int rc = ferry_reader_open(s->ctx, &cfg, &r);
	if (rc < 0)
		return rc;
	rc = ferry_reader_next(r, &b);
	if (rc == 0)
		ferry_batch_release(b);
	t_alloc_pause(1);
	ferry_reader_close(r);
	t_alloc_pause(0);
	return rc;
}

/* Runs call k once with allocation n failing. Returns whether it fired. */
static int shoot(struct subject *s, int k, unsigned long n)
{
	static const char *const names[] = { "ferry_load", "ferry_load_async", "ferry_load_into",
					     "ferry_read_range", "ferry_info", "reader" };
	ferry_array *a = NULL;
	struct ferry_array_info info;
	int rc = 0;
	fail_on_other(s->ctx);
	t_alloc_arm(n);
	switch (k) {
	case 0: rc = ferry_load(s->ctx, s->path, &a); break;
	case 1: rc = ferry_load_async(s->ctx, s->path, &a); break;
	case 2: rc = ferry_load_into(s->ctx, s->swapped, s->dst, 1 << 16, NULL); break;
	case 3: rc = ferry_read_range(s->ctx, s->path, 100, 3000, s->dst); break;
	case 4: rc = ferry_info(s->path, &info); break;
	case 5: rc = reader_call(s); break;
	}
	int fired = t_alloc_fired();
	t_alloc_disarm();
	check_message(rc, names[k], k == 2 ? s->swapped : s->path, k == 5 ? s->dir : NULL, n);
	if (a)
		ferry_array_free(a);
	return fired;
}

int main(void)
{
	if (!t_alloc_wrapped())
		T_SKIP("needs the allocation wrappers");
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	struct subject s = { .dir = strdup(t_tmpdir()) };
	int64_t len = 5000, shape2[2] = { 50, 40 };
	s.path = strdup(tr_path(s.dir, "plain.npy"));
	s.swapped = strdup(tr_path(s.dir, "swapped.npy"));
	tr_write_npy(s.path, FERRY_INT32, '<', 0, 1, &len, 3);
	tr_write_npy(s.swapped, FERRY_FLOAT64, '>', 1, 2, shape2, 4);
	s.ctx = tr_ctx(4096, 2);
	T_OK(ferry_device_alloc(s.ctx, 1 << 16, &s.dst));
	unsigned long shots = 0;
	for (int k = 0; k < 6; k++)
		for (unsigned long n = 1; shoot(&s, k, n); n++)
			shots++;
	ferry_device_free(s.ctx, s.dst);
	T_OK(ferry_ctx_destroy(s.ctx));
	t_rmtree(s.dir);
	free(s.dir), free(s.path), free(s.swapped);
	printf("%lu failing allocations: every message named its own call's file\n", shots);
	return T_EXIT_PASS;
}
