/*
 * engine_overhead: host-to-device throughput through the staging engine from
 * pinned staging, against a plain loop of async copies of the same sizes from
 * the same kind of memory, in one run. Prints one JSON line per measurement
 * and the ratio. Usage: engine_overhead [GiB to move, default 8] [threads...]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/base.h"
#include "context/context.h"
#include "engine/engine.h"

#define DST_BYTES ((size_t)1 << 30)

struct job {
	struct ferry__staging *stg;
	char *dst;
	size_t chunk;
	uint64_t chunks, next; /* next: atomic */
};

static int check(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "engine_overhead: %s: %s (%s)\n", what, ferry_strerror(rc),
			ferry_last_error());
		exit(1);
	}
	return rc;
}

/* The baseline: one thread, async copies from a pinned ring of 64 chunks. */
static double plain_loop(struct ferry__device *dev, char *dst, size_t chunk, uint64_t chunks)
{
	struct ferry__stream *s;
	char *src;
	check(dev->ops->stream_create(dev, &s), "stream");
	check(dev->ops->pinned_alloc(dev, 64 * chunk, (void **)&src), "pinned");
	uint64_t t0 = ferry__now_ns();
	for (uint64_t i = 0; i < chunks; i++)
		check(dev->ops->copy_async(dev, s, dst + (i * chunk) % DST_BYTES, src + (i % 64) * chunk,
					   chunk, FERRY__H2D), "copy");
	check(dev->ops->stream_sync(dev, s), "sync");
	double secs = (double)(ferry__now_ns() - t0) / 1e9;
	dev->ops->pinned_free(dev, src, 64 * chunk);
	dev->ops->stream_destroy(dev, s);
	return secs;
}

static void *engine_worker(void *arg)
{
	struct job *j = arg;
	struct ferry__ticket t = { 0 };
	for (;;) {
		uint64_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		if (i >= j->chunks)
			break;
		struct ferry__buf *b;
		check(ferry__staging_lease(j->stg, &b), "lease");
		struct ferry__copy c = { .dst = j->dst + (i * j->chunk) % DST_BYTES, .len = j->chunk };
		check(ferry__staging_queue(j->stg, b, &c, 1, &t), "queue");
	}
	check(ferry__staging_wait(j->stg, &t), "wait");
	return NULL;
}

static double through_engine(struct ferry__device *dev, char *dst, size_t chunk, uint64_t chunks,
			     unsigned threads)
{
	struct ferry__staging_config cfg = { .chunk_size = chunk, .max_buffers = 64,
					     .launch_after = 32, .placement = FERRY__STAGE_PINNED };
	struct job j = { .dst = dst, .chunk = chunk, .chunks = chunks };
	check(ferry__staging_create(dev, &cfg, &j.stg), "engine");
	check(ferry__staging_reserve(j.stg, 64), "reserve");
	pthread_t th[64];
	uint64_t t0 = ferry__now_ns();
	for (unsigned i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, engine_worker, &j);
	for (unsigned i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	check(ferry__staging_wait(j.stg, NULL), "wait all");
	double secs = (double)(ferry__now_ns() - t0) / 1e9;
	check(ferry__staging_destroy(j.stg), "destroy");
	return secs;
}

int main(int argc, char **argv)
{
	double gib = argc > 1 ? atof(argv[1]) : 8;
	struct ferry__device *dev;
	struct ferry__settings set;
	check(ferry__settings_resolve(NULL, &set), "settings");
	check(ferry__ctx_open_device(NULL, &dev), "device");
	char name[256];
	dev->ops->describe(dev, name, sizeof(name));
	char *dst;
	check(dev->ops->mem_alloc(dev, DST_BYTES, (void **)&dst), "device memory");
	size_t chunk = set.chunk_size;
	uint64_t chunks = (uint64_t)(gib * (double)(1ull << 30)) / chunk;
	double bytes = (double)chunks * (double)chunk;
	plain_loop(dev, dst, chunk, chunks / 8 + 1); /* warm up */
	double base = plain_loop(dev, dst, chunk, chunks);
	printf("{\"bench\":\"engine_overhead\",\"device\":\"%s\",\"mode\":\"plain_loop\",\"chunk\":%zu,"
	       "\"gbps\":%.3f}\n", name, chunk, bytes / base / 1e9);
	for (int a = 2; a < argc || a == 2; a++) {
		unsigned threads = argc > a ? (unsigned)atoi(argv[a]) : 4;
		if (threads < 1 || threads > 64)
			threads = 4;
		double secs = through_engine(dev, dst, chunk, chunks, threads);
		printf("{\"bench\":\"engine_overhead\",\"device\":\"%s\",\"mode\":\"engine\",\"chunk\":%zu,"
		       "\"threads\":%u,\"gbps\":%.3f,\"ratio_to_plain_loop\":%.3f}\n",
		       name, chunk, threads, bytes / secs / 1e9, base / secs);
	}
	dev->ops->mem_free(dev, dst);
	dev->ops->close(dev);
	return 0;
}
