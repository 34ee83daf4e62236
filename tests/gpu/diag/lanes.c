/* Experiment for the GPU machine: is one context's staging engine the
 * limit for small files? K contexts x T callers each (every context T IO
 * threads), each caller pipelining ferry_load_into_async through two device
 * buffers over its share of DIR/sample_NNNNNN.npy for S seconds.
 * usage: lanes DIR NFILES K T S */
#define _GNU_SOURCE
#include <ferry.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *dir;
static unsigned nfiles, ncallers;
static double seconds;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

struct caller { ferry_ctx *ctx; unsigned id; unsigned long files; double bytes; };

static void *run(void *arg)
{
	struct caller *c = arg;
	void *dst[2];
	ferry_array *fl[2] = { 0, 0 };
	char path[4096];
	size_t cap = 64u << 20;
	ferry_device_alloc(c->ctx, cap, &dst[0]);
	ferry_device_alloc(c->ctx, cap, &dst[1]);
	double end = now() + seconds;
	unsigned f = c->id, k = 0;
	while (now() < end) {
		if (fl[k]) { if (ferry_array_wait(fl[k]) < 0) abort(); c->bytes += ferry_array_info(fl[k])->nbytes; ferry_array_free(fl[k]); fl[k] = 0; c->files++; }
		snprintf(path, sizeof path, "%s/sample_%06u.npy", dir, f);
		if (ferry_load_into_async(c->ctx, path, dst[k], cap, &fl[k]) < 0) { fprintf(stderr, "%s: %s\n", path, ferry_last_error()); abort(); }
		f = (f + ncallers) % nfiles;
		k ^= 1;
	}
	for (k = 0; k < 2; k++) if (fl[k]) { ferry_array_wait(fl[k]); c->bytes += ferry_array_info(fl[k])->nbytes; ferry_array_free(fl[k]); c->files++; }
	ferry_device_free(c->ctx, dst[0]); ferry_device_free(c->ctx, dst[1]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 6) { fprintf(stderr, "usage: lanes DIR NFILES K T S\n"); return 2; }
	dir = argv[1]; nfiles = atoi(argv[2]); unsigned K = atoi(argv[3]), T = atoi(argv[4]); seconds = atof(argv[5]);
	ncallers = K * T;
	ferry_ctx *ctx[64];
	for (unsigned i = 0; i < K; i++) {
		struct ferry_ctx_options o = { .gpu = -1, .direct = -1, .threads = T };
		if (ferry_ctx_create(&ctx[i], &o) < 0) { fprintf(stderr, "%s\n", ferry_last_error()); return 1; }
	}
	struct caller c[1024]; pthread_t th[1024];
	double t0 = now();
	for (unsigned i = 0; i < ncallers; i++) { c[i] = (struct caller){ ctx[i / T], i, 0, 0 }; pthread_create(&th[i], 0, run, &c[i]); }
	unsigned long files = 0; double bytes = 0;
	for (unsigned i = 0; i < ncallers; i++) { pthread_join(th[i], 0); files += c[i].files; bytes += c[i].bytes; }
	double dt = now() - t0;
	printf("{\"contexts\": %u, \"callers_per_ctx\": %u, \"files_per_s\": %.0f, \"gbps\": %.2f}\n", K, T, files / dt, bytes / dt / 1e9);
	for (unsigned i = 0; i < K; i++) ferry_ctx_destroy(ctx[i]);
	return 0;
}
