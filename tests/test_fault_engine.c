/*
 * Fault sweep of the staging engine: for every class of fault and every call
 * of that class in the workload, a run with that call failing. The workload
 * leases more buffers than the pool holds (so leases wait on batches), queues
 * two copies per buffer, commits now and then, and waits on every chunk's
 * ticket. Each chunk whose wait succeeded must hold every byte of its pattern
 * (the destination is poisoned before each run); the pool must end full and
 * the engine be destroyed cleanly; nothing may leak (LeakSanitizer in CI).
 */
#include "test_fault_util.h"

#define CHUNK ((size_t)16 << 10)
#define NCHUNKS 12
#define POISON 0xA5

struct engine_case {
	enum ferry__placement placement;
	unsigned char *pattern;  /* NCHUNKS * CHUNK: what the chunks must hold */
	unsigned char *poison;   /* NCHUNKS * CHUNK of POISON */
	unsigned char *back;     /* NCHUNKS * CHUNK: the destination copied back */
};

struct engine_run {
	struct engine_case *c;
	struct fault_shot *shot;
	struct ferry__device *dev;
	struct ferry__staging *stg;
	char *dst;
	struct ferry__ticket tickets[NCHUNKS];
	int queued[NCHUNKS];
};

static int fill_buffer(struct engine_run *r, struct ferry__buf *b, unsigned i)
{
	const unsigned char *src = r->c->pattern + (size_t)i * CHUNK;
	if (r->c->placement == FERRY__STAGE_PINNED) {
		memcpy(b->data, src, CHUNK);
		return 0;
	}
	return r->dev->ops->copy_sync(r->dev, b->data, src, CHUNK, FERRY__H2D);
}

/* Leases a buffer for chunk i, fills it and queues its two halves (back half
 * first, so copies do not run in address order). */
static void stage_chunk(struct engine_run *r, unsigned i)
{
	struct ferry__buf *b;
	if (shot_result(r->shot, ferry__staging_lease(r->stg, &b)) < 0)
		return;
	if (shot_result(r->shot, fill_buffer(r, b, i)) < 0) {
		ferry__staging_give_back(r->stg, b);
		return;
	}
	char *dst = r->dst + (size_t)i * CHUNK;
	struct ferry__copy copies[2] = {
		{ .dst = dst + CHUNK / 2, .src_offset = CHUNK / 2, .len = CHUNK / 2 },
		{ .dst = dst, .src_offset = 0, .len = CHUNK / 2 },
	};
	r->queued[i] = shot_result(r->shot, ferry__staging_queue(r->stg, b, copies, 2,
								 &r->tickets[i])) == 0;
	if (i % 4 == 3)
		shot_result(r->shot, ferry__staging_commit(r->stg, NULL));
}

/* Every chunk whose wait succeeded holds its pattern, byte for byte. */
static void check_chunks(struct engine_run *r, const int *ok)
{
	T_OK(r->dev->ops->copy_sync(r->dev, r->c->back, r->dst, NCHUNKS * CHUNK, FERRY__D2H));
	for (unsigned i = 0; i < NCHUNKS; i++) {
		if (!ok[i])
			continue;
		size_t at = t_check_pattern(r->c->back + i * CHUNK, CHUNK, 1, (uint64_t)i * CHUNK);
		if (at != CHUNK) {
			char where[96];
			t_describe_word(r->c->back + i * CHUNK + (at & ~(size_t)7), where,
					sizeof(where));
			shot_fail(r->shot, "chunk %u reported loaded, byte %zu is 0x%02x (%s)", i, at,
				  r->c->back[i * CHUNK + at], where);
		}
	}
}

static void run_chunks(struct engine_run *r)
{
	int ok[NCHUNKS] = { 0 };
	T_OK(r->dev->ops->copy_sync(r->dev, r->dst, r->c->poison, NCHUNKS * CHUNK, FERRY__H2D));
	for (unsigned i = 0; i < NCHUNKS; i++)
		stage_chunk(r, i);
	for (unsigned i = 0; i < NCHUNKS; i++)
		if (r->queued[i])
			ok[i] = shot_result(r->shot, ferry__staging_wait(r->stg, &r->tickets[i])) == 0;
	shot_result(r->shot, ferry__staging_wait(r->stg, NULL));
	shot_check_pool(r->shot, r->stg);
	t_alloc_pause(1);
	check_chunks(r, ok);
	t_alloc_pause(0);
}

/* The workload on r->dev, which the caller armed: output memory, an engine,
 * the chunks, and destroy. Disarms the shot at the end. */
static void run_armed(struct engine_run *r)
{
	struct ferry__staging_config cfg = {
		.chunk_size = CHUNK, .max_buffers = 3, .initial_buffers = 2, .launch_after = 2,
		.placement = r->c->placement,
	};
	struct fault_shot *shot = r->shot;
	void **dst = (void **)&r->dst;
	if (shot_result(shot, r->dev->ops->mem_alloc(r->dev, NCHUNKS * CHUNK, dst)) == 0) {
		if (shot_result(shot, ferry__staging_create(r->dev, &cfg, &r->stg)) == 0) {
			run_chunks(r);
			shot_result(shot, ferry__staging_destroy(r->stg));
		}
		r->dev->ops->mem_free(r->dev, r->dst);
	}
	shot_disarm(shot);
}

static void engine_workload(void *arg, struct fault_shot *shot)
{
	struct engine_case *c = arg;
	struct engine_run r = { .c = c, .shot = shot };
	r.dev = t_fault_device(t_open_device());
	shot_arm(shot, r.dev);
	run_armed(&r);
	r.dev->ops->close(r.dev);
}

/*
 * Stream syncs happen only on the way out of another failure, so their sweep
 * nests two fault devices: the outer fails the Nth copy (as the copy sweep
 * does), the inner fails the first stream sync that recovery makes.
 */
static void engine_workload_double(void *arg, struct fault_shot *shot)
{
	struct engine_case *c = arg;
	struct engine_run r = { .c = c, .shot = shot };
	struct ferry__device *inner = t_fault_device(t_open_device());
	r.dev = t_fault_device(inner);
	t_fault_arm(inner, T_FAULT_STREAM_SYNC, shot->n ? 1 : 0, -FERRY_EDEVICE, 0);
	shot_arm(shot, r.dev);
	run_armed(&r);
	if (shot->n && !t_fault_fired(inner))
		shot_fail(shot, "the stream sync after the failed copy was not made");
	r.dev->ops->close(r.dev);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	T_ASSERT(p);
	return p;
}

int main(void)
{
	struct engine_case c = {
		.pattern = xmalloc(NCHUNKS * CHUNK),
		.poison = xmalloc(NCHUNKS * CHUNK),
		.back = xmalloc(NCHUNKS * CHUNK),
	};
	t_fill_pattern(c.pattern, NCHUNKS * CHUNK, 1, 0);
	memset(c.poison, POISON, NCHUNKS * CHUNK);
	c.placement = FERRY__STAGE_PINNED;
	sweep_all("engine, pinned staging", engine_workload, &c, 400);
	c.placement = FERRY__STAGE_DEVICE;
	sweep_all("engine, device staging", engine_workload, &c, 400);
	struct sweep_totals tot = { 0 };
	printf("engine, a failed copy, then a failed stream sync:\n");
	sweep_class(&fault_classes[2], engine_workload_double, &c, 400, &tot);
	free(c.pattern);
	free(c.poison);
	free(c.back);
	printf("fault sweep of the engine: ok\n");
	return T_EXIT_PASS;
}
