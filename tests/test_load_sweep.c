/*
 * Every setting the context accepts loads files, including the corners: IO
 * backends x staging lanes x buffers (1 up) x chunk sizes x IO threads per
 * load x threads calling ferry at once. Each combination loads files of
 * several chunks from every calling thread, sync and async, every byte
 * checked, under a watchdog: a load that stops making progress (a thread
 * waiting for a buffer while others wait for its own) fails the test naming
 * the combination instead of hanging. Under ThreadSanitizer (FERRY_BUILD
 * names a tsan build), which runs threads 20 times slower, every third
 * combination runs, and the count says so.
 */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "base/base.h"
#include "test_reader_util.h"

#define NFILES 3
#define WATCHDOG_SECONDS 30

static const char *const ios[] = { "posix", "uring" };
static const char *const lanes[] = { "1", "16" };
static const unsigned buffers[] = { 1, 3, 8, 64 };
static const size_t chunks[] = { 4096, 65536 };
static const unsigned load_threads[] = { 1, 8, 64 };
static const unsigned callers[] = { 1, 8 };

static char combo[160]; /* the combination running, for the watchdog */

static void watchdog(int sig)
{
	static const char head[] = "\nFAIL: no progress within the watchdog's time: ";
	(void)sig;
	(void)!write(2, head, sizeof(head) - 1);
	(void)!write(2, combo, strlen(combo));
	(void)!write(2, "\n", 1);
	_exit(T_EXIT_FAIL);
}

/* Files of 5 chunks and a bit, so every load needs several buffers. */
static void make_files(struct tr_files *d, size_t chunk)
{
	d->dir = strdup(t_tmpdir());
	d->n = NFILES;
	for (unsigned i = 0; i < NFILES; i++) {
		char name[32], fill[4] = { 0 };
		int64_t len = (int64_t)(chunk * 5 / 4) + 31 * i, start = 0;
		snprintf(name, sizeof(name), "f%u.npy", i);
		d->paths[i] = strdup(tr_path(d->dir, name));
		tr_write_npy(d->paths[i], FERRY_INT32, 0, 0, 1, &len, 40 + i);
		d->want[i] = tr_reference(40 + i, 4, 0, 0, 1, &len, &start, &len, fill, &d->nbytes[i]);
	}
}

struct caller {
	ferry_ctx *ctx;
	const struct tr_files *d;
	unsigned id;
};

static void *load_all(void *arg)
{
	struct caller *c = arg;
	for (unsigned k = 0; k < NFILES; k++) {
		unsigned i = (c->id + k) % NFILES;
		ferry_array *a;
		void *dst;
		T_OK(ferry_load(c->ctx, c->d->paths[i], &a));
		tr_check_loaded(c->ctx, ferry_array_data(a), c->d, i);
		ferry_array_free(a);
		T_OK(ferry_device_alloc(c->ctx, c->d->nbytes[i], &dst));
		T_OK(ferry_load_into_async(c->ctx, c->d->paths[i], dst, c->d->nbytes[i], &a));
		T_OK(ferry_array_wait(a));
		tr_check_loaded(c->ctx, dst, c->d, i);
		ferry_array_free(a);
		ferry_device_free(c->ctx, dst);
	}
	return NULL;
}

static void run_combo(const struct tr_files *d, const char *io, unsigned nbuf, size_t chunk,
		      unsigned threads, unsigned ncallers)
{
	struct ferry_ctx_options o = { .gpu = -1, .direct = 0, .io = io, .max_buffers = nbuf,
				       .chunk_size = chunk, .threads = threads };
	ferry_ctx *ctx;
	pthread_t tid[8];
	struct caller c[8];
	int rc = ferry_ctx_create(&ctx, &o);
	if (rc == -FERRY_EIO_BACKEND)
		return; /* io_uring refused here: posix covers the rest */
	T_OK(rc);
	for (unsigned i = 0; i < ncallers; i++) {
		c[i] = (struct caller){ ctx, d, i };
		T_ASSERT(pthread_create(&tid[i], NULL, load_all, &c[i]) == 0);
	}
	for (unsigned i = 0; i < ncallers; i++)
		pthread_join(tid[i], NULL);
	T_OK(ferry_ctx_destroy(ctx));
}

int main(void)
{
	unsigned combos = 0, seen = 0;
	const char *build = getenv("FERRY_BUILD");
	unsigned stride = build && strstr(build, "tsan") ? 3 : 1;
	signal(SIGALRM, watchdog);
	for (size_t ci = 0; ci < FERRY__ARRAY_LEN(chunks); ci++) {
		struct tr_files d = { 0 };
		make_files(&d, chunks[ci]);
		for (size_t li = 0; li < FERRY__ARRAY_LEN(lanes); li++)
		for (size_t ii = 0; ii < FERRY__ARRAY_LEN(ios); ii++)
		for (size_t bi = 0; bi < FERRY__ARRAY_LEN(buffers); bi++)
		for (size_t ti = 0; ti < FERRY__ARRAY_LEN(load_threads); ti++)
		for (size_t ki = 0; ki < FERRY__ARRAY_LEN(callers); ki++) {
			if (seen++ % stride)
				continue;
			snprintf(combo, sizeof(combo), "FERRY_IO=%s FERRY_LANES=%s max_buffers=%u "
				 "chunk=%zu threads=%u callers=%u", ios[ii], lanes[li], buffers[bi],
				 chunks[ci], load_threads[ti], callers[ki]);
			setenv("FERRY_LANES", lanes[li], 1);
			alarm(WATCHDOG_SECONDS);
			run_combo(&d, ios[ii], buffers[bi], chunks[ci], load_threads[ti], callers[ki]);
			alarm(0);
			combos++;
		}
		tr_files_free(&d);
	}
	printf("%u of %u combinations of settings run: every byte loaded\n", combos, seen);
	return T_EXIT_PASS;
}
