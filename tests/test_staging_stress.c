/*
 * Randomized stress of the staging engine: many threads lease, fill, split
 * into copies, give back and commit at random, while a gate thread holds the
 * copy stream for random short delays. Every output byte is checked against
 * the pattern of its (thread, offset). The seed is printed; STRESS_SEED
 * replays one, STRESS_ROUNDS and STRESS_THREADS (default 12) scale the work.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "helpers.h"
#include "engine/engine.h"

#define MAX_THREADS 64
#define CHUNK ((size_t)16 << 10)

struct stress {
	struct ferry__device *dev;
	struct ferry__staging *stg;
	char *out;            /* one region per thread, of rounds * CHUNK bytes */
	unsigned rounds;
	uint64_t seed;
	unsigned threads;
	int stop_gates; /* atomic */
};

struct worker {
	struct stress *s;
	unsigned id;
	uint64_t rng;
};

/* Queues one round's chunk as 1 to 4 copies of random split points. */
static void queue_split(struct worker *w, struct ferry__buf *b, char *dst,
			struct ferry__ticket *t)
{
	struct ferry__copy copies[4];
	unsigned n = 1 + (unsigned)(t_rand(&w->rng) % 4), done = 0;
	size_t at = 0;
	for (unsigned i = 0; i < n; i++) {
		size_t len = i == n - 1 ? CHUNK - at : (size_t)(t_rand(&w->rng) % (CHUNK - at + 1));
		copies[done++] = (struct ferry__copy){ .dst = dst + at, .src_offset = at, .len = len };
		at += len;
	}
	T_OK(ferry__staging_queue(w->s->stg, b, copies, done, t));
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct stress *s = w->s;
	char *region = s->out + (size_t)w->id * s->rounds * CHUNK;
	struct ferry__ticket t = { 0 };
	for (unsigned r = 0; r < s->rounds; r++) {
		struct ferry__buf *b;
		T_OK(ferry__staging_lease(s->stg, &b));
		if (t_rand(&w->rng) % 16 == 0) { /* sometimes a lease goes unused */
			T_OK(ferry__staging_give_back(s->stg, b));
			r--;
			continue;
		}
		t_fill_pattern(b->data, CHUNK, w->id, (uint64_t)r * CHUNK);
		queue_split(w, b, region + (size_t)r * CHUNK, &t);
		unsigned dice = (unsigned)(t_rand(&w->rng) % 64);
		if (dice == 0)
			T_OK(ferry__staging_commit(s->stg, NULL));
		else if (dice == 1)
			T_OK(ferry__staging_wait(s->stg, &t));
	}
	T_OK(ferry__staging_wait(s->stg, &t));
	return NULL;
}

/* Holds the copy stream behind a gate for a random few hundred microseconds. */
static void *gates(void *arg)
{
	struct stress *s = arg;
	uint64_t rng = s->seed ^ 0xabcdef;
	struct ferry__stream *stream = ferry__staging_stream(s->stg);
	while (!__atomic_load_n(&s->stop_gates, __ATOMIC_ACQUIRE)) {
		struct ferry__gate *g;
		T_OK(s->dev->ops->gate_create(s->dev, &g));
		T_OK(s->dev->ops->gate_hold(s->dev, stream, g));
		usleep((useconds_t)(t_rand(&rng) % 800));
		T_OK(s->dev->ops->gate_open(s->dev, g));
		T_OK(s->dev->ops->stream_sync(s->dev, stream));
		s->dev->ops->gate_destroy(s->dev, g);
		usleep((useconds_t)(t_rand(&rng) % 300));
	}
	return NULL;
}

static void check_all(struct stress *s)
{
	size_t region = (size_t)s->rounds * CHUNK;
	char *host = t_copy_back(s->dev, s->out, s->threads * region);
	for (unsigned i = 0; i < s->threads; i++) {
		size_t at = t_check_pattern(host + i * region, region, i, 0);
		if (at != region) {
			char where[128];
			t_describe_word(host + i * region + (at & ~(size_t)7), where, sizeof(where));
			T_FAIL("seed %llu: thread %u byte %zu is wrong: holds data of %s",
			       (unsigned long long)s->seed, i, at, where);
		}
	}
	free(host);
}

/* An integer from the environment in [lo, hi], else def. */
static unsigned long env_or(const char *name, unsigned long lo, unsigned long hi,
			    unsigned long def)
{
	const char *text = getenv(name);
	char *end;
	if (!text || !*text)
		return def;
	unsigned long v = strtoul(text, &end, 10);
	if (*end || v < lo || v > hi)
		T_FAIL("%s=%s: expected %lu to %lu", name, text, lo, hi);
	return v;
}

int main(void)
{
	struct stress s = { .dev = t_open_device() };
	const char *seed = getenv("STRESS_SEED");
	s.seed = seed ? strtoull(seed, NULL, 10) : (uint64_t)ferry__now_ns();
	unsigned long rounds = env_or("STRESS_ROUNDS", 1, 1000000, 400);
	unsigned long threads = env_or("STRESS_THREADS", 1, MAX_THREADS, 12);
	s.rounds = (unsigned)rounds;
	s.threads = (unsigned)threads;
	printf("staging stress: seed %llu, %u threads x %u rounds\n", (unsigned long long)s.seed,
	       s.threads, s.rounds);
	struct ferry__staging_config cfg = {
		.chunk_size = CHUNK, .max_buffers = 16, .initial_buffers = 2, .launch_after = 5,
		.placement = FERRY__STAGE_PINNED,
	};
	T_OK(ferry__staging_create(s.dev, &cfg, &s.stg));
	T_OK(s.dev->ops->mem_alloc(s.dev, s.threads * (size_t)s.rounds * CHUNK, (void **)&s.out));
	pthread_t th[MAX_THREADS], gate_thread;
	struct worker w[MAX_THREADS];
	pthread_create(&gate_thread, NULL, gates, &s);
	for (unsigned i = 0; i < s.threads; i++) {
		w[i] = (struct worker){ .s = &s, .id = i, .rng = s.seed + i * 7919 + 1 };
		pthread_create(&th[i], NULL, work, &w[i]);
	}
	for (unsigned i = 0; i < s.threads; i++)
		pthread_join(th[i], NULL);
	__atomic_store_n(&s.stop_gates, 1, __ATOMIC_RELEASE);
	pthread_join(gate_thread, NULL);
	T_OK(ferry__staging_wait(s.stg, NULL));
	check_all(&s);
	struct ferry__staging_stats st;
	ferry__staging_stats(s.stg, &st);
	T_EQ(st.free, st.total);
	printf("staging stress: ok (%llu batches, %llu waits, %u buffers)\n",
	       (unsigned long long)st.batches_launched, (unsigned long long)st.waits, st.total);
	T_OK(ferry__staging_destroy(s.stg));
	s.dev->ops->mem_free(s.dev, s.out);
	s.dev->ops->close(s.dev);
	return T_EXIT_PASS;
}
