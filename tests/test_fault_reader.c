/*
 * Fault sweep of the dataset reader: a context on a fault device and a fault
 * IO table, a reader over NFILES files (two epochs, batches of two, loading
 * ahead on two threads), one call of one class failing in each run, with
 * on_error stop and skip. Every sample handed out must hold every byte of its
 * own file (each file's pattern names the file, so bytes of another sample or
 * never-written memory show); errors must name the file for IO faults; under
 * skip the reader goes on and delivers every other sample; the reader closes
 * cleanly and the pool ends full.
 */
#include "context/context.h"
#include "test_fault_util.h"
#include "test_reader_util.h"

#define NFILES 7
#define EPOCHS 2
#define ID_BASE 100 /* file i has pattern id ID_BASE + i: no all-zero words */
#define MAX_NEXT 200

struct reader_case {
	char *dir;
	enum ferry_on_error on_error;
	unsigned char back[4096];
};

static void check_sample(struct reader_case *c, const struct fault_shot *shot, ferry_ctx *ctx,
			 const struct ferry_sample *s)
{
	int k = tr_file_index(s->path);
	uint64_t want = (uint64_t)(4 + k % 3) * 4;
	if (s->nbytes != want || s->dtype != FERRY_INT32)
		shot_fail(shot, "%s: %llu bytes of dtype %d", s->path,
			  (unsigned long long)s->nbytes, s->dtype);
	T_OK(ferry_copy_to_host(ctx, c->back, s->data, s->nbytes));
	size_t at = t_check_pattern(c->back, s->nbytes, ID_BASE + (uint32_t)k, 0);
	if (at != s->nbytes) {
		char where[96];
		t_describe_word(c->back + (at & ~(size_t)7), where, sizeof(where));
		shot_fail(shot, "%s handed out with byte %zu wrong (holds %s)", s->path, at, where);
	}
}

/* Reads to the end; returns the real samples delivered. */
static uint64_t read_all(struct reader_case *c, struct fault_shot *shot, ferry_ctx *ctx,
			 ferry_reader *r)
{
	uint64_t samples = 0;
	ferry_batch *b;
	int rc;
	for (int i = 0; (rc = ferry_reader_next(r, &b)) != -FERRY_EEND; i++) {
		if (i == MAX_NEXT)
			shot_fail(shot, "ferry_reader_next never reached the end");
		if (shot_result(shot, rc) < 0)
			continue;
		t_alloc_pause(1);
		for (unsigned k = 0; k < ferry_batch_size(b); k++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, k, &s));
			check_sample(c, shot, ctx, &s);
			samples += !s.is_padding;
		}
		t_alloc_pause(0);
		ferry_batch_release(b);
	}
	return samples;
}

/* Under skip a bad file is counted, not returned: it counts as the failure. */
static void judge_skip(struct reader_case *c, struct fault_shot *shot, ferry_reader *r,
		       uint64_t samples)
{
	struct ferry_reader_stats st;
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	if (shot->failed)
		return; /* an error that skipping cannot help (memory, device) */
	if (samples + st.files_skipped != (uint64_t)NFILES * EPOCHS)
		shot_fail(shot, "%llu samples and %llu skipped of %u", (unsigned long long)samples,
			  (unsigned long long)st.files_skipped, NFILES * EPOCHS);
	if (st.files_skipped) {
		shot->failed = 1;
		shot->first_rc = -EIO;
		snprintf(shot->first_error, sizeof(shot->first_error), "%s: %llu files skipped",
			 c->dir, (unsigned long long)st.files_skipped);
	}
}

static void reader_workload(void *arg, struct fault_shot *shot)
{
	struct reader_case *c = arg;
	struct ferry_ctx_options opt = { .chunk_size = 4096, .max_buffers = 4, .threads = 2 };
	struct ferry_reader_config cfg = { .root = c->dir, .batch_size = 2, .epochs = EPOCHS,
					   .threads = 2, .prefetch_depth = 2,
					   .on_error = c->on_error };
	ferry_ctx *ctx;
	ferry_reader *r;
	shot->must_name = c->dir;
	if (!(ctx = shot_open_ctx(shot, &opt)))
		return;
	if (shot_result(shot, ferry_reader_open(ctx, &cfg, &r)) == 0) {
		uint64_t samples = read_all(c, shot, ctx, r);
		if (c->on_error == FERRY_ON_ERROR_SKIP)
			judge_skip(c, shot, r, samples);
		shot_result(shot, ferry_reader_close(r));
	}
	shot_check_lanes(shot, ctx);
	shot_disarm(shot);
	T_OK(ferry_ctx_destroy(ctx));
}

int main(void)
{
	struct reader_case c = { .dir = strdup(t_tmpdir()) };
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	for (unsigned i = 0; i < NFILES; i++) {
		char name[64];
		int64_t len = 4 + i % 3;
		snprintf(name, sizeof(name), "f%03u.npy", i);
		tr_write_npy(tr_path(c.dir, name), FERRY_INT32, 0, 0, 1, &len, ID_BASE + i);
	}
	c.on_error = FERRY_ON_ERROR_STOP;
	sweep_all("reader, on_error stop", reader_workload, &c, 300);
	c.on_error = FERRY_ON_ERROR_SKIP;
	sweep_all("reader, on_error skip", reader_workload, &c, 300);
	t_rmtree(c.dir);
	free(c.dir);
	printf("fault sweep of the reader: ok\n");
	return T_EXIT_PASS;
}
