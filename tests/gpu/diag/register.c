/*
 * Issue 23's question, measured: what does copying a warm file to the GPU
 * straight from its page-cache pages cost, and what serializes when threads
 * map and register files at once? For each thread count and mode, threads
 * take the files round-robin; each copies a whole file into its own device
 * buffer on its own stream. Modes:
 *   per_read       mmap(MAP_SHARED), cuMemHostRegister(READ_ONLY), copy,
 *                  sync, unregister, munmap, for every file
 *   per_read_pop   the same with MAP_POPULATE
 *   cached         every file mapped and registered once (timed apart), then
 *                  copied PASSES times from those registrations
 * Prints one line per run: GB/s and the seconds each phase took, summed over
 * threads. The CUDA driver is loaded with dlopen, as libferry does.
 * Build: cc -O2 -I/usr/local/cuda/include -o register register.c -ldl -lpthread
 * Usage: register FILE... (warm them first; 64 MiB files were the question)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuda_probe.h"

#define PASSES 3
enum { MAP, REG, COPY, UNREG, UNMAP, PHASES };
static const char *const phase_names[PHASES] = { "mmap", "register", "copy", "unregister",
						 "munmap" };

static char **paths;
static size_t *sizes;
static void **maps;  /* cached mode: every file mapped and registered */
static int nfiles;

struct worker {
	int id, nthreads, mode;
	double phase[PHASES];
	size_t bytes;
	pthread_t tid;
};

static void *map_file(int i, int populate, double *t)
{
	double t0 = now();
	int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
	void *p = fd < 0 ? MAP_FAILED
			 : mmap(NULL, sizes[i], PROT_READ, MAP_SHARED | (populate ? MAP_POPULATE : 0),
				fd, 0);
	if (fd >= 0)
		close(fd);
	if (p == MAP_FAILED) {
		perror(paths[i]);
		exit(1);
	}
	*t += now() - t0;
	return p;
}

static void timed_register(void *p, size_t len, double *t)
{
	double t0 = now();
	check(cu.host_register(p, len, reg_flags), "cuMemHostRegister");
	*t += now() - t0;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	CUstream s;
	CUdeviceptr d;
	size_t most = 0;
	double t0;

	check(cu.set_current(ctx), "cuCtxSetCurrent");
	check(cu.stream_create(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	for (int i = 0; i < nfiles; i++)
		most = sizes[i] > most ? sizes[i] : most;
	check(cu.alloc(&d, most), "cuMemAlloc");
	for (int pass = 0; pass < (w->mode == 2 ? PASSES : 1); pass++)
		for (int i = w->id; i < nfiles; i += w->nthreads) {
			void *p = w->mode == 2 ? maps[i] : map_file(i, w->mode == 1, &w->phase[MAP]);
			if (w->mode != 2)
				timed_register(p, sizes[i], &w->phase[REG]);
			t0 = now();
			check(cu.copy(d, p, sizes[i], s), "cuMemcpyHtoDAsync");
			check(cu.stream_sync(s), "cuStreamSynchronize");
			w->phase[COPY] += now() - t0;
			w->bytes += sizes[i];
			if (w->mode == 2)
				continue;
			t0 = now();
			check(cu.host_unregister(p), "cuMemHostUnregister");
			w->phase[UNREG] += now() - t0;
			t0 = now();
			munmap(p, sizes[i]);
			w->phase[UNMAP] += now() - t0;
		}
	return NULL;
}

static void run(const char *name, int mode, int nthreads)
{
	struct worker *w = calloc(nthreads, sizeof(*w));
	double phase[PHASES] = { 0 }, t0 = now(), wall;
	size_t bytes = 0;

	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ .id = i, .nthreads = nthreads, .mode = mode };
		pthread_create(&w[i].tid, NULL, work, &w[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].tid, NULL);
		bytes += w[i].bytes;
		for (int k = 0; k < PHASES; k++)
			phase[k] += w[i].phase[k];
	}
	wall = now() - t0;
	printf("%-13s threads %2d  %7.2f GB/s  %6.3f s wall ", name, nthreads, bytes / wall / 1e9,
	       wall);
	for (int k = 0; k < PHASES; k++)
		printf(" %s %.3f", phase_names[k], phase[k]);
	printf("  (s summed over threads; %.2f GiB)\n", bytes / 1073741824.0);
	free(w);
}

/* Cached mode's one-off cost: every file mapped and registered on one thread. */
static void register_all(void)
{
	double t_map = 0, t_reg = 0;
	size_t total = 0;

	maps = calloc(nfiles, sizeof(*maps));
	for (int i = 0; i < nfiles; i++) {
		maps[i] = map_file(i, 1, &t_map);
		timed_register(maps[i], sizes[i], &t_reg);
		total += sizes[i];
	}
	printf("cached setup: %.2f GiB mapped with MAP_POPULATE in %.3f s, registered in %.3f s "
	       "(%.1f ms per GiB)\n", total / 1073741824.0, t_map, t_reg,
	       t_reg * 1e3 / (total / 1073741824.0));
}

int main(int argc, char **argv)
{
	static const int threads[] = { 1, 2, 4, 8, 16 };

	if (argc < 2) {
		fprintf(stderr, "usage: register FILE...\n");
		return 2;
	}
	nfiles = argc - 1;
	paths = argv + 1;
	sizes = calloc(nfiles, sizeof(*sizes));
	for (int i = 0; i < nfiles; i++) {
		struct stat st;
		if (stat(paths[i], &st) < 0) {
			perror(paths[i]);
			return 1;
		}
		sizes[i] = st.st_size;
	}
	load_cuda();
	if (!getenv("CACHED_ONLY"))
		for (size_t t = 0; t < sizeof(threads) / sizeof(*threads); t++) {
			run("per_read", 0, threads[t]);
			run("per_read_pop", 1, threads[t]);
		}
	register_all();
	for (size_t t = 0; t < sizeof(threads) / sizeof(*threads); t++)
		run("cached", 2, threads[t]);
	return 0;
}
