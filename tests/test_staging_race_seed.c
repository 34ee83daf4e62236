/*
 * staging_race_seed: the interleaving that broke another loader (docs/design.md),
 * replayed deterministically with schedule points and stream gates.
 *
 * Pool of 64 buffers of 2 MiB, launch_after 32. All 64 are filled with reads
 * of file A (chunk i holds the value i+1): batch G1 (33 copies) launches behind
 * gate 1, 31 copies stay pending. Thread A finds no buffer and waits for G1;
 * the test opens gate 1 and pauses A after its wait returns, before it re-takes
 * the lock. With gate 2 closed, thread B leases (reclaiming G1), reads two
 * chunks of file B (65, 66) and queues them, which launches G2. A resumes and
 * gets a buffer. The test then reads file C (999) into every buffer it can
 * lease without blocking, until it writes into a buffer of G2 or none is left;
 * opens gate 2; and checks every output byte.
 *
 * Run against the engine (must report 0 premature frees, 0 corrupted bytes)
 * and against the flawed rule (must report corruption: the test sees the bug).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "engine/engine.h"

#define NBUF 64
#define CHUNK ((size_t)2 << 20)
#define LAUNCH_AFTER 32
#define NOUT 66
#define NEXTRA NBUF
#define WATCHDOG_SECONDS 30

struct run {
	int flawed;
	struct ferry__device *dev;
	struct ferry__staging *stg;
	struct ferry__trace *trace;
	struct ferry__gate *gate1, *gate2;
	char *out; /* device memory: NOUT blocks, then NEXTRA extra blocks */
	int fd_a, fd_b, fd_c;
	pthread_mutex_t m;
	pthread_cond_t c;
	int a_waiting, a_woke, a_release, done, watchdog_fired;
	uint64_t g2_seq;
	uint64_t seq_of[NBUF]; /* batch each buffer was last queued into */
	struct ferry__buf *a_buf;
	unsigned premature_free;
	uint64_t corrupted;
};

static __thread int is_thread_a;

static void set_flag(struct run *r, int *flag)
{
	pthread_mutex_lock(&r->m);
	*flag = 1;
	pthread_cond_broadcast(&r->c);
	pthread_mutex_unlock(&r->m);
}

static void wait_flag(struct run *r, int *flag)
{
	pthread_mutex_lock(&r->m);
	while (!*flag && !r->watchdog_fired)
		pthread_cond_wait(&r->c, &r->m);
	pthread_mutex_unlock(&r->m);
}

static void hook(void *arg, enum ferry__sched_point p, uint64_t seq)
{
	struct run *r = arg;
	if (!is_thread_a)
		return;
	if (p == FERRY__SP_BEFORE_WAIT)
		set_flag(r, &r->a_waiting);
	if (p == FERRY__SP_AFTER_WAIT) {
		set_flag(r, &r->a_woke);
		wait_flag(r, &r->a_release);
	}
}

static void *watchdog(void *arg)
{
	struct run *r = arg;
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += WATCHDOG_SECONDS;
	pthread_mutex_lock(&r->m);
	while (!r->done && pthread_cond_timedwait(&r->c, &r->m, &deadline) != ETIMEDOUT)
		;
	if (!r->done) {
		r->watchdog_fired = 1;
		pthread_cond_broadcast(&r->c);
	}
	pthread_mutex_unlock(&r->m);
	if (r->watchdog_fired) {
		r->dev->ops->gate_open(r->dev, r->gate1);
		r->dev->ops->gate_open(r->dev, r->gate2);
	}
	return NULL;
}

/* Fills a chunk with 32-bit words of value v: one word, then doubling copies
 * (a sanitizer checks a memcpy as one range, a loop word by word). */
static void fill_words(uint32_t *chunk, uint32_t v)
{
	chunk[0] = v;
	for (size_t have = 4; have < CHUNK; have *= 2)
		memcpy((char *)chunk + have, chunk, have < CHUNK - have ? have : CHUNK - have);
}

/* Writes a file of nchunks chunks, chunk i holding 32-bit words of value(i). */
static int make_file(const char *dir, const char *name, unsigned nchunks, uint32_t first,
		     int same)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	T_ASSERT(fd >= 0);
	uint32_t *chunk = malloc(CHUNK);
	for (unsigned i = 0; i < nchunks; i++) {
		fill_words(chunk, same ? first : first + i);
		T_EQ(pwrite(fd, chunk, CHUNK, (off_t)i * CHUNK), CHUNK);
	}
	free(chunk);
	return fd;
}

static void read_chunk(int fd, unsigned chunk_index, struct ferry__buf *b)
{
	T_EQ(pread(fd, b->data, CHUNK, (off_t)chunk_index * CHUNK), CHUNK);
}

static void queue_to_block(struct run *r, struct ferry__buf *b, unsigned block)
{
	struct ferry__copy c = { .dst = r->out + (size_t)block * CHUNK, .len = CHUNK };
	struct ferry__ticket t = { 0 };
	T_OK(ferry__staging_queue(r->stg, b, &c, 1, &t));
	r->seq_of[b->id] = t.seq;
}

static void *thread_a(void *arg)
{
	struct run *r = arg;
	is_thread_a = 1;
	T_OK(ferry__staging_lease(r->stg, &r->a_buf));
	return NULL;
}

static void *thread_b(void *arg)
{
	struct run *r = arg;
	for (unsigned i = 0; i < 2; i++) {
		struct ferry__buf *b;
		T_OK(ferry__staging_lease(r->stg, &b));
		read_chunk(r->fd_b, i, b);
		queue_to_block(r, b, 64 + i);
		r->g2_seq = r->seq_of[b->id];
	}
	return NULL;
}

static int in_g2(struct run *r, struct ferry__buf *b)
{
	return r->seq_of[b->id] == r->g2_seq;
}

/* Counts the buffers of G2 that are free, or leased to A, while G2 is held. */
static void count_premature_frees(struct run *r)
{
	unsigned ids[NBUF];
	unsigned n = ferry__staging_free_ids(r->stg, ids, NBUF);
	for (unsigned i = 0; i < n; i++)
		r->premature_free += r->seq_of[ids[i]] == r->g2_seq;
	r->premature_free += in_g2(r, r->a_buf);
}

/* Reads file C into every buffer leasable without blocking, A's first, until
 * one of them belongs to G2. Returns how many extra blocks were written. */
static unsigned overwrite_free_buffers(struct run *r)
{
	unsigned extra = 0;
	struct ferry__buf *b = r->a_buf;
	while (b && extra < NEXTRA) {
		int hit = in_g2(r, b);
		read_chunk(r->fd_c, 0, b);
		queue_to_block(r, b, NOUT + extra++);
		if (hit)
			break;
		int rc = ferry__staging_try_lease(r->stg, &b);
		if (rc == -EAGAIN)
			break;
		T_OK(rc);
	}
	return extra;
}

/* Bytes of block that differ from want's: a block that matches costs one
 * memcmp. */
static uint64_t count_bad_bytes(const char *block, const uint32_t *want)
{
	if (!memcmp(block, want, CHUNK))
		return 0;
	uint64_t bad = 0;
	const unsigned char *p = (const unsigned char *)block;
	const unsigned char *w = (const unsigned char *)want;
	for (size_t i = 0; i < CHUNK; i++)
		bad += p[i] != w[i];
	return bad;
}

/* Copies the output back one block at a time (a whole copy would double the
 * memory a sanitizer shadows) and counts each block's bad bytes. */
static void check_outputs(struct run *r, unsigned extra)
{
	char *host = malloc(CHUNK);
	uint32_t *want = malloc(CHUNK);
	T_ASSERT(host && want);
	for (unsigned i = 0; i < NOUT + extra; i++) {
		uint32_t expect = i < 64 ? i + 1 : i < NOUT ? 65 + (i - 64) : 999;
		T_OK(r->dev->ops->copy_sync(r->dev, host, r->out + (size_t)i * CHUNK, CHUNK,
					    FERRY__D2H));
		fill_words(want, expect);
		uint64_t bad = count_bad_bytes(host, want);
		if (bad) {
			uint32_t got;
			memcpy(&got, host, 4);
			fprintf(stderr, "block %u: %llu bad bytes (expected %u, first word %u)\n", i,
				(unsigned long long)bad, expect, got);
		}
		r->corrupted += bad;
	}
	free(want);
	free(host);
}

static void setup(struct run *r, const char *dir, const char *trace)
{
	struct ferry__staging_hooks hooks = { .point = hook, .arg = r };
	T_OK(ferry__trace_open(trace, &r->trace));
	struct ferry__staging_config cfg = {
		.chunk_size = CHUNK, .max_buffers = NBUF, .launch_after = LAUNCH_AFTER,
		.placement = FERRY__STAGE_PINNED, .hooks = &hooks,
		.flawed_reclaim = r->flawed, .trace = r->trace,
	};
	pthread_mutex_init(&r->m, NULL);
	pthread_cond_init(&r->c, NULL);
	r->dev = t_open_device();
	T_OK(ferry__staging_create(r->dev, &cfg, &r->stg));
	T_OK(ferry__staging_reserve(r->stg, NBUF));
	T_OK(r->dev->ops->mem_alloc(r->dev, (size_t)(NOUT + NEXTRA) * CHUNK, (void **)&r->out));
	struct ferry__stream *s;
	T_OK(r->dev->ops->stream_create(r->dev, &s));
	T_OK(r->dev->ops->memset_async(r->dev, s, r->out, 0, (size_t)(NOUT + NEXTRA) * CHUNK));
	T_OK(r->dev->ops->stream_sync(r->dev, s));
	r->dev->ops->stream_destroy(r->dev, s);
	T_OK(r->dev->ops->gate_create(r->dev, &r->gate1));
	T_OK(r->dev->ops->gate_create(r->dev, &r->gate2));
	r->fd_a = make_file(dir, "A", 64, 1, 0);
	r->fd_b = make_file(dir, "B", 2, 65, 0);
	r->fd_c = make_file(dir, "C", 1, 999, 1);
}

static void fill_pool_with_file_a(struct run *r)
{
	struct ferry__stream *s = ferry__staging_stream(r->stg);
	T_OK(r->dev->ops->gate_hold(r->dev, s, r->gate1));
	for (unsigned i = 0; i < NBUF; i++) {
		struct ferry__buf *b;
		T_OK(ferry__staging_try_lease(r->stg, &b));
		read_chunk(r->fd_a, i, b);
		queue_to_block(r, b, i);
	}
	struct ferry__staging_stats st;
	ferry__staging_stats(r->stg, &st);
	T_EQ(st.in_flight, LAUNCH_AFTER + 1);
	T_EQ(st.pending, NBUF - LAUNCH_AFTER - 1);
	T_EQ(st.free, 0);
}

static void replay(struct run *r)
{
	pthread_t a, b, dog;
	pthread_create(&dog, NULL, watchdog, r);
	fill_pool_with_file_a(r);
	pthread_create(&a, NULL, thread_a, r);
	wait_flag(r, &r->a_waiting);
	T_OK(r->dev->ops->gate_open(r->dev, r->gate1));
	wait_flag(r, &r->a_woke);
	T_OK(r->dev->ops->gate_hold(r->dev, ferry__staging_stream(r->stg), r->gate2));
	pthread_create(&b, NULL, thread_b, r);
	pthread_join(b, NULL);
	set_flag(r, &r->a_release);
	pthread_join(a, NULL);
	count_premature_frees(r);
	unsigned extra = overwrite_free_buffers(r);
	T_OK(r->dev->ops->gate_open(r->dev, r->gate2));
	T_OK(ferry__staging_wait(r->stg, NULL));
	check_outputs(r, extra);
	set_flag(r, &r->done);
	pthread_join(dog, NULL);
}

static void teardown(struct run *r)
{
	T_OK(ferry__staging_destroy(r->stg));
	ferry__trace_close(r->trace);
	r->dev->ops->gate_destroy(r->dev, r->gate1);
	r->dev->ops->gate_destroy(r->dev, r->gate2);
	r->dev->ops->mem_free(r->dev, r->out);
	r->dev->ops->close(r->dev);
	close(r->fd_a), close(r->fd_b), close(r->fd_c);
}

static int run_variant(int flawed, const char *dir)
{
	struct run r = { .flawed = flawed };
	char trace[600];
	snprintf(trace, sizeof(trace), "%s/trace-%s.csv", dir, flawed ? "unsafe" : "engine");
	setup(&r, dir, trace);
	char devname[256];
	r.dev->ops->describe(r.dev, devname, sizeof(devname));
	replay(&r);
	teardown(&r);
	printf("{\"test\":\"staging_race_seed\",\"variant\":\"%s\",\"device\":\"%s\","
	       "\"premature_free\":%u,\"corrupted_bytes\":%llu,\"watchdog_fired\":%s}\n",
	       flawed ? "unsafe" : "engine", r.dev ? devname : "?", r.premature_free,
	       (unsigned long long)r.corrupted, r.watchdog_fired ? "true" : "false");
	int ok = flawed ? r.premature_free > 0 && r.corrupted > 0 && !r.watchdog_fired
			: r.premature_free == 0 && r.corrupted == 0 && !r.watchdog_fired;
	if (!ok) {
		char kept[700];
		snprintf(kept, sizeof(kept), "/tmp/ferry-seed-trace-%s-%d.csv",
			 flawed ? "unsafe" : "engine", (int)getpid());
		rename(trace, kept);
		fprintf(stderr, "staging_race_seed (%s) failed; engine trace kept at %s\n",
			flawed ? "unsafe" : "engine", kept);
	}
	return ok;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	char *dir = t_tmpdir();
	int ok = run_variant(0, dir);
	ok &= run_variant(1, dir);
	t_rmtree(dir);
	return ok ? T_EXIT_PASS : T_EXIT_FAIL;
}
