/* `ferry bench`: running a per-file tool on several threads and timing it. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "base/base.h"

/* Workers arrive and wait; the main thread waits for all, then opens it. */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	unsigned arrived;
	int open;
};

static void gate_init(struct gate *g)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->changed, NULL);
	g->arrived = 0;
	g->open = 0;
}

static void gate_destroy(struct gate *g)
{
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->changed);
}

static void gate_arrive_and_wait(struct gate *g)
{
	pthread_mutex_lock(&g->lock);
	g->arrived++;
	pthread_cond_broadcast(&g->changed);
	while (!g->open)
		pthread_cond_wait(&g->changed, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

/* Waits until n workers have arrived, without letting them through. */
static void gate_wait_arrivals(struct gate *g, unsigned n)
{
	pthread_mutex_lock(&g->lock);
	while (g->arrived < n)
		pthread_cond_wait(&g->changed, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

/* Waits until n workers have arrived, then lets them through; meanwhile
 * calls tick(arg), when not NULL, about four times a second (unlocked). */
static void gate_open_after(struct gate *g, unsigned n, void (*tick)(void *), void *arg)
{
	struct timespec ts;

	pthread_mutex_lock(&g->lock);
	while (g->arrived < n) {
		if (!tick) {
			pthread_cond_wait(&g->changed, &g->lock);
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250000000;
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		if (pthread_cond_timedwait(&g->changed, &g->lock, &ts) == ETIMEDOUT) {
			pthread_mutex_unlock(&g->lock);
			tick(arg);
			pthread_mutex_lock(&g->lock);
		}
	}
	g->open = 1;
	pthread_cond_broadcast(&g->changed);
	pthread_mutex_unlock(&g->lock);
}

struct drive {
	const struct ferry_bench_dataset *ds;
	const struct ferry_bench_limits *lim;
	const struct ferry_bench_tool *tool;
	struct gate start, end;  /* workers meet the main thread at both */
	atomic_uint thread_ids;
	atomic_uint next;        /* next load; file = next % count */
	atomic_uint_fast64_t bytes, files;
	atomic_int error;
	uint64_t t0;             /* when the timed part began */
	pthread_mutex_t lock;    /* guards message */
	char message[256];
};

double ferry_bench_cpu_seconds(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

unsigned ferry_bench_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : (unsigned)n;
}

/* Keeps the first error and its message. */
static void drive_fail(struct drive *d, int rc, const char *what)
{
	int none = 0;
	if (!atomic_compare_exchange_strong(&d->error, &none, rc))
		return;
	const char *msg = ferry_last_error();
	pthread_mutex_lock(&d->lock);
	snprintf(d->message, sizeof(d->message), "%s%s%s", what, *msg ? ": " : "",
		 *msg ? msg : ferry_strerror(rc));
	pthread_mutex_unlock(&d->lock);
}

/* 1 when the run is over: every file loaded (and, warm, for min_seconds), the
 * time limit passed, or an error. */
static int run_is_over(struct drive *d, unsigned load, uint64_t start_ns)
{
	double elapsed = (double)(ferry__now_ns() - start_ns) / 1e9;
	if (atomic_load(&d->error))
		return 1;
	if (load >= d->ds->count && elapsed >= d->lim->min_seconds)
		return 1;
	return load > 0 && elapsed >= d->lim->seconds_limit;
}

static void work(struct drive *d, void *state)
{
	uint64_t start_ns = ferry__now_ns();
	for (;;) {
		unsigned load = atomic_fetch_add(&d->next, 1);
		if (run_is_over(d, load, start_ns))
			break;
		unsigned file = load % d->ds->count;
		int rc = d->tool->load_one(d->tool->arg, state, file);
		if (rc < 0) {
			drive_fail(d, rc, d->ds->paths[file]);
			break;
		}
		atomic_fetch_add(&d->bytes, d->ds->nbytes[file]);
		atomic_fetch_add(&d->files, 1);
	}
	if (d->tool->finish) {
		int rc = d->tool->finish(d->tool->arg, state);
		if (rc < 0)
			drive_fail(d, rc, "finishing");
	}
}

static void *drive_thread(void *arg)
{
	struct drive *d = arg;
	void *state = NULL;
	unsigned index = atomic_fetch_add(&d->thread_ids, 1);
	int rc = d->tool->thread_init(d->tool->arg, index, &state);

	if (rc < 0)
		drive_fail(d, rc, "setting up");
	gate_arrive_and_wait(&d->start);
	if (rc == 0)
		work(d, state);
	gate_arrive_and_wait(&d->end);
	if (rc == 0)
		d->tool->thread_fini(d->tool->arg, state);
	return NULL;
}

/* The progress line of a run in hand: files, bytes, rate and when it ends
 * (every file loaded and min_seconds passed, or seconds_limit). */
static void drive_tick(void *arg)
{
	struct drive *d = arg;
	uint64_t files = atomic_load(&d->files), bytes = atomic_load(&d->bytes);
	double elapsed = (double)(ferry__now_ns() - d->t0) / 1e9, eta = 0;

	if (files && files < d->ds->count)
		eta = elapsed * (double)(d->ds->count - files) / (double)files;
	if (eta < d->lim->min_seconds - elapsed)
		eta = d->lim->min_seconds - elapsed;
	if (eta > d->lim->seconds_limit - elapsed)
		eta = d->lim->seconds_limit - elapsed;
	ferry_bench_progress_run(files, bytes, elapsed, eta > 0 ? eta : 0);
}

/* Starts threads workers; returns how many started. */
static unsigned start_workers(struct drive *d, pthread_t *th, unsigned threads)
{
	unsigned started = 0;
	while (started < threads && !pthread_create(&th[started], NULL, drive_thread, d))
		started++;
	return started;
}

void ferry_bench_drive(const struct ferry_bench_dataset *ds, const struct ferry_bench_limits *lim,
		       unsigned threads, const struct ferry_bench_tool *tool,
		       struct ferry_bench_measure *out)
{
	struct drive d = { .ds = ds, .lim = lim, .tool = tool };
	pthread_t th[FERRY_BENCH_MAX_THREADS];
	unsigned started;

	memset(out, 0, sizeof(*out));
	if (threads < 1)
		threads = 1;
	if (threads > FERRY_BENCH_MAX_THREADS)
		threads = FERRY_BENCH_MAX_THREADS;
	atomic_init(&d.thread_ids, 0);
	atomic_init(&d.next, 0);
	atomic_init(&d.bytes, 0);
	atomic_init(&d.files, 0);
	atomic_init(&d.error, 0);
	pthread_mutex_init(&d.lock, NULL);
	gate_init(&d.start);
	gate_init(&d.end);
	started = start_workers(&d, th, threads);
	if (started < threads)
		drive_fail(&d, -EAGAIN, "starting threads");
	/* The clocks start before any worker does: a short run is timed whole. */
	gate_wait_arrivals(&d.start, started);
	d.t0 = ferry__now_ns();
	double cpu0 = ferry_bench_cpu_seconds();
	gate_open_after(&d.start, started, NULL, NULL);
	gate_open_after(&d.end, started, ferry_bench_progress_wanted() ? drive_tick : NULL, &d);
	out->seconds = (double)(ferry__now_ns() - d.t0) / 1e9;
	out->cpu_seconds = ferry_bench_cpu_seconds() - cpu0;
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	out->bytes = atomic_load(&d.bytes);
	out->files = atomic_load(&d.files);
	out->error = atomic_load(&d.error);
	snprintf(out->message, sizeof(out->message), "%s", d.message);
	gate_destroy(&d.start);
	gate_destroy(&d.end);
	pthread_mutex_destroy(&d.lock);
}

void ferry_bench_fill_run(struct ferry_bench_run *run, const struct ferry_bench_measure *m)
{
	double gb = (double)m->bytes / 1e9;

	run->seconds = m->seconds;
	run->bytes = m->bytes;
	run->files = m->files;
	run->available = m->error == 0 && m->files > 0;
	if (m->error)
		snprintf(run->note, sizeof(run->note), "failed: %s", m->message);
	if (!run->available)
		return;
	run->gbps = m->seconds > 0 ? gb / m->seconds : 0;
	run->files_per_s = m->seconds > 0 ? (double)m->files / m->seconds : 0;
	run->cpu_s_per_gb = gb > 0 ? m->cpu_seconds / gb : 0;
}
