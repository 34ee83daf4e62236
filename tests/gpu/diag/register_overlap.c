/*
 * Issue 23's next question: registering warm files holds up the device's
 * copies, and one registrar registers 64 MiB files at about 25-30 GB/s. Is
 * that the driver's lock (then smaller pieces hold copies up for shorter
 * spells) or the kernel's pinning (then more threads may register faster)?
 * And does one registration over many small files' mappings, placed side by
 * side in one reserved range, cost less a byte than one a file?
 *
 * For each directory of warm .npy files, with and without MAP_POPULATE, every
 * file is mapped; then the whole set is registered by R threads, in pieces of
 * P bytes (0: whole files), alone and while COPIERS threads copy 8 MiB chunks
 * from pinned memory to the device; then unregistered. One line a run: the
 * registration's GB/s, the copies' GB/s while it ran against theirs just
 * before, and the same for unregistering. Then "grouped": small files mapped
 * side by side in 64 MiB groups, one registration a group. Then the latency
 * of a 256 MiB cuMemAlloc alone and while a thread registers (the reader's
 * first epoch allocates its batches' memory).
 * Build: cc -O2 -I/usr/local/cuda/include -o register_overlap register_overlap.c -ldl -lpthread
 * Usage: register_overlap DIR...   (the files warm first)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_probe.h"

#define COPIERS 2
#define CHUNK (8u << 20)
#define CHUNKS_A_SYNC 4
#define DEEP_CHUNKS 32 /* 256 MiB queued, about 5 ms of copies */
#define GROUP (64u << 20)
#define MAX_FILES 8192

struct piece {
	char *addr;
	size_t len;
};

static struct {
	char *paths[MAX_FILES];
	size_t sizes[MAX_FILES];
	char *maps[MAX_FILES];
	int n;
	size_t total;
} set;

static struct piece *pieces; /* what one run registers */
static int npieces;
static atomic_int next_piece;
static atomic_ullong copied;
static atomic_int copiers_stop;
static int chunks_a_sync = CHUNKS_A_SYNC; /* copies a copier queues before it syncs */

static void load_dir(const char *dir)
{
	set.n = npy_files(dir, set.paths, set.sizes, MAX_FILES);
	set.total = 0;
	for (int i = 0; i < set.n; i++)
		set.total += set.sizes[i];
}

/* Maps file i at addr (NULL: anywhere); returns the mapping. */
static char *map_at(int i, void *addr, int populate)
{
	int fd = open(set.paths[i], O_RDONLY | O_CLOEXEC);
	int flags = MAP_SHARED | (populate ? MAP_POPULATE : 0) | (addr ? MAP_FIXED : 0);
	void *p = fd < 0 ? MAP_FAILED : mmap(addr, set.sizes[i], PROT_READ, flags, fd, 0);
	if (fd >= 0)
		close(fd);
	if (p == MAP_FAILED) {
		perror(set.paths[i]);
		exit(1);
	}
	return p;
}

static double map_all(int populate)
{
	double t0 = now();
	for (int i = 0; i < set.n; i++)
		set.maps[i] = map_at(i, NULL, populate);
	return now() - t0;
}

static void unmap_all(void)
{
	for (int i = 0; i < set.n; i++)
		munmap(set.maps[i], set.sizes[i]);
}

/* The files' mappings cut into pieces of at most size bytes (0: whole). */
static void cut_pieces(size_t size)
{
	npieces = 0;
	for (int i = 0; i < set.n; i++)
		for (size_t off = 0; off < set.sizes[i]; off += size ? size : set.sizes[i])
			npieces++;
	pieces = realloc(pieces, npieces * sizeof(*pieces));
	npieces = 0;
	for (int i = 0; i < set.n; i++)
		for (size_t off = 0; off < set.sizes[i]; off += size ? size : set.sizes[i]) {
			size_t left = set.sizes[i] - off, len = size && size < left ? size : left;
			pieces[npieces++] = (struct piece){ set.maps[i] + off, len };
		}
}

static atomic_int failures; /* bumped by every registering thread */

static void *registerer(void *arg)
{
	int unregister = arg != NULL;
	check(cu.set_current(ctx), "cuCtxSetCurrent");
	for (int i; (i = atomic_fetch_add(&next_piece, 1)) < npieces;) {
		CUresult rc = unregister ? cu.host_unregister(pieces[i].addr)
					 : cu.host_register(pieces[i].addr, pieces[i].len, reg_flags);
		if (rc != CUDA_SUCCESS && atomic_fetch_add(&failures, 1) == 0)
			fprintf(stderr, "probe: %s of %zu bytes failed: CUresult %d\n",
				unregister ? "cuMemHostUnregister" : "cuMemHostRegister",
				pieces[i].len, (int)rc);
	}
	return NULL;
}

/* All pieces registered (or unregistered) by nthreads threads; seconds. */
static double over_pieces(int nthreads, int unregister)
{
	pthread_t t[16];
	double t0 = now();
	atomic_store(&next_piece, 0);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, registerer, unregister ? (void *)1 : NULL);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	return now() - t0;
}

static void *copier(void *arg)
{
	const char *src = arg;
	CUstream s;
	CUdeviceptr d;
	copier_begin(&s, &d, (size_t)CHUNK * CHUNKS_A_SYNC);
	while (!atomic_load(&copiers_stop)) {
		for (int k = 0; k < chunks_a_sync; k++) {
			size_t at = (size_t)(k % CHUNKS_A_SYNC) * CHUNK;
			check(cu.copy(d + at, src + at, CHUNK, s), "cuMemcpyHtoDAsync");
		}
		check(cu.stream_sync(s), "cuStreamSynchronize");
		atomic_fetch_add(&copied, (unsigned long long)CHUNK * chunks_a_sync);
	}
	check(cu.free(d), "cuMemFree");
	return NULL;
}

struct window {
	double t;
	unsigned long long bytes;
};

static struct window mark(void)
{
	return (struct window){ now(), atomic_load(&copied) };
}

static double rate(struct window a, struct window b)
{
	return (b.bytes - a.bytes) / (b.t - a.t) / 1e9;
}

static pthread_t copiers[COPIERS];

/* Starts the copiers out of pinned and lets them settle; *before gets their
 * rate over the next 0.2 s, and the return is the mark where that ends. */
static struct window start_copiers(char *pinned, struct window *before)
{
	atomic_store(&copiers_stop, 0);
	for (int i = 0; i < COPIERS; i++)
		pthread_create(&copiers[i], NULL, copier, pinned);
	usleep(150000);
	*before = mark();
	usleep(200000);
	return mark();
}

static void stop_copiers(void)
{
	atomic_store(&copiers_stop, 1);
	for (int i = 0; i < COPIERS; i++)
		pthread_join(copiers[i], NULL);
}

/* One run: register and unregister the pieces with nthreads, copies beside
 * them when pinned is not NULL. One line. */
static void one_run(const char *label, int nthreads, char *pinned)
{
	struct window w0, w1, w2, w3;
	double reg, unreg;
	w1 = pinned ? start_copiers(pinned, &w0) : (w0 = mark());
	reg = over_pieces(nthreads, 0);
	w2 = mark();
	unreg = over_pieces(nthreads, 1);
	w3 = mark();
	if (pinned)
		stop_copiers();
	printf("%-26s threads %d  %6d regs  register %6.2f GB/s (%5.1f ms/GiB)  unregister %6.2f GB/s",
	       label, nthreads, npieces, set.total / reg / 1e9, reg * 1e3 / (set.total / 1073741824.0),
	       set.total / unreg / 1e9);
	if (pinned)
		printf("  copies: before %5.2f, registering %5.2f, unregistering %5.2f GB/s",
		       rate(w0, w1), rate(w1, w2), rate(w2, w3));
	printf("\n");
	fflush(stdout);
}

static void runs(const char *what, char *pinned)
{
	static const int threads[] = { 1, 2, 4 };
	for (size_t t = 0; t < sizeof(threads) / sizeof(*threads); t++) {
		one_run(what, threads[t], NULL);
		one_run(what, threads[t], pinned);
	}
}

/* Small files side by side (each at a page boundary: a file's last page is
 * whole in its mapping) in GROUP-byte reserved ranges, one piece a group. */
static void grouped(char *pinned)
{
	size_t stride = (set.sizes[0] + 4095) & ~(size_t)4095, per = GROUP / stride;
	size_t ngroups = (set.n + per - 1) / per;
	for (int i = 0; i < set.n; i++)
		if (set.sizes[i] != set.sizes[0]) {
			printf("grouped: skipped (files of unequal sizes)\n");
			return;
		}
	char **groups = calloc(ngroups, sizeof(*groups));
	double t0 = now();
	size_t total = set.total;
	npieces = 0;
	pieces = realloc(pieces, ngroups * sizeof(*pieces));
	for (size_t g = 0; g < ngroups; g++) {
		groups[g] = mmap(NULL, GROUP, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				 -1, 0);
		size_t len = 0;
		for (size_t k = 0; k < per && g * per + k < (size_t)set.n; k++, len += stride)
			map_at(g * per + k, groups[g] + len, 1);
		pieces[npieces++] = (struct piece){ groups[g], len };
	}
	printf("grouped: %d files of %zu bytes into %zu ranges in %.3f s\n", set.n, set.sizes[0],
	       ngroups, now() - t0);
	runs("grouped, populated", pinned);
	set.total = total;
	for (size_t g = 0; g < ngroups; g++)
		munmap(groups[g], GROUP);
	free(groups);
}

static atomic_int registering;

/* Mean and worst time of a 256 MiB cuMemAlloc + cuMemFree: n times, or as
 * long as the background registration runs (n 0). */
static void alloc_latency(const char *label, int n)
{
	double sum = 0, worst = 0;
	int i = 0;
	for (; n ? i < n : atomic_load(&registering); i++) {
		CUdeviceptr d;
		double t0 = now();
		check(cu.alloc(&d, 256u << 20), "cuMemAlloc");
		check(cu.free(d), "cuMemFree");
		double t = now() - t0;
		sum += t;
		worst = t > worst ? t : worst;
	}
	printf("cuMemAlloc 256 MiB + free, %-22s mean %7.3f ms, worst %7.3f ms (%d)\n", label,
	       i ? sum / i * 1e3 : 0, worst * 1e3, i);
}

static void *register_in_background(void *arg)
{
	(void)arg;
	over_pieces(1, 0);
	atomic_store(&registering, 0);
	return NULL;
}

static void allocs_beside_registering(void)
{
	pthread_t t;
	cut_pieces(0);
	alloc_latency("alone", 20);
	atomic_store(&registering, 1);
	pthread_create(&t, NULL, register_in_background, NULL);
	alloc_latency("while registering", 0);
	pthread_join(t, NULL);
	over_pieces(1, 1);
}

static void probe_dir(const char *dir, char *pinned)
{
	static const size_t sizes[] = { 0, 16u << 20, 4u << 20, 1u << 20 };
	load_dir(dir);
	if (!set.n)
		return;
	printf("== %s: %d files, %.2f GiB\n", dir, set.n, set.total / 1073741824.0);
	for (int populate = 1; populate >= 0; populate--) {
		double t = map_all(populate);
		printf("mapped %s MAP_POPULATE in %.3f s\n", populate ? "with" : "without", t);
		for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++) {
			char label[64];
			if (sizes[s] && sizes[s] >= set.sizes[0])
				continue;
			cut_pieces(sizes[s]);
			snprintf(label, sizeof(label), "%s, %s%zu MiB", populate ? "populated" : "faulted",
				 sizes[s] ? "pieces " : "whole ", (sizes[s] ? sizes[s] : set.sizes[0]) >> 20);
			runs(label, pinned);
		}
		if (populate)
			allocs_beside_registering();
		unmap_all();
	}
	if (set.sizes[0] < GROUP)
		grouped(pinned);
}

/*
 * Does a registration stall the copies already queued, or only the launch of
 * new ones? One thread, for each of the first files: DEEP_CHUNKS copies
 * queued and synced (alone); the file registered (alone); then the copies
 * queued, the file registered while they run, and synced: when the
 * registration returned and when the copies were done.
 */
static void stall_probe(char *pinned)
{
	CUstream s;
	CUdeviceptr d;
	double copy = 0, reg = 0, reg_beside = 0, both = 0;
	int n = set.n < 16 ? set.n : 16;
	check(cu.stream_create(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	check(cu.alloc(&d, (size_t)CHUNK * CHUNKS_A_SYNC), "cuMemAlloc");
	for (int i = 0; i < n; i++) {
		double t0 = now(), t1, t2;
		for (int pass = 0; pass < 2; pass++) {
			t0 = now();
			for (int k = 0; k < DEEP_CHUNKS; k++) {
				size_t at = (size_t)(k % CHUNKS_A_SYNC) * CHUNK;
				check(cu.copy(d + at, pinned + at, CHUNK, s), "cuMemcpyHtoDAsync");
			}
			if (pass) {
				check(cu.host_register(set.maps[i], set.sizes[i], reg_flags), "register");
				t1 = now();
				reg_beside += t1 - t0;
			}
			check(cu.stream_sync(s), "cuStreamSynchronize");
			t2 = now();
			*(pass ? &both : &copy) += t2 - t0;
			if (!pass) {
				t0 = now();
				check(cu.host_register(set.maps[i], set.sizes[i], reg_flags), "register");
				reg += now() - t0;
			}
			check(cu.host_unregister(set.maps[i]), "unregister");
		}
	}
	printf("stall: %d MiB of copies queued %.2f ms, a %zu MiB registration %.2f ms; "
	       "both: registration returned at %.2f ms, copies done at %.2f ms (means of %d)\n",
	       DEEP_CHUNKS * (CHUNK >> 20), copy * 1e3 / n, set.sizes[0] >> 20, reg * 1e3 / n,
	       reg_beside * 1e3 / n, both * 1e3 / n, n);
	check(cu.free(d), "cuMemFree");
}

/* A registrar that pauses gap_us after each registration, beside copiers
 * that queue chunks copies before each sync: copies' and registrations' GB/s. */
static void *paced_registrar(void *arg)
{
	long gap_us = (long)(intptr_t)arg;
	check(cu.set_current(ctx), "cuCtxSetCurrent");
	for (int i; (i = atomic_fetch_add(&next_piece, 1)) < npieces;) {
		check(cu.host_register(pieces[i].addr, pieces[i].len, reg_flags), "register");
		if (gap_us)
			usleep(gap_us);
	}
	return NULL;
}

static void paced_runs(char *pinned)
{
	static const long gaps[] = { 0, 500, 1000, 2000, 5000 };
	static const int depths[] = { CHUNKS_A_SYNC, DEEP_CHUNKS };
	cut_pieces(0);
	for (size_t k = 0; k < 2; k++)
		for (size_t g = 0; g < sizeof(gaps) / sizeof(*gaps); g++) {
			pthread_t r;
			struct window w0;
			chunks_a_sync = depths[k];
			struct window w1 = start_copiers(pinned, &w0);
			atomic_store(&next_piece, 0);
			pthread_create(&r, NULL, paced_registrar, (void *)(intptr_t)gaps[g]);
			pthread_join(r, NULL);
			struct window w2 = mark();
			stop_copiers();
			printf("paced: %2d chunks a sync, %4ld us after each registration: registered "
			       "%6.2f GB/s; copies before %5.2f, while %5.2f GB/s\n", chunks_a_sync,
			       gaps[g], set.total / (w2.t - w1.t) / 1e9, rate(w0, w1), rate(w1, w2));
			over_pieces(1, 1);
		}
	chunks_a_sync = CHUNKS_A_SYNC;
}

int main(int argc, char **argv)
{
	void *pinned;
	if (argc < 2) {
		fprintf(stderr, "usage: register_overlap DIR...\n");
		return 2;
	}
	load_cuda();
	check(cu.host_alloc(&pinned, (size_t)CHUNK * CHUNKS_A_SYNC, 0), "cuMemHostAlloc");
	for (int i = 1; i < argc; i++) {
		if (getenv("STALL_ONLY")) { /* the stall and pace questions alone */
			load_dir(argv[i]);
			map_all(1);
			stall_probe(pinned);
			paced_runs(pinned);
			unmap_all();
			if (set.sizes[0] < GROUP)
				grouped(pinned);
			continue;
		}
		probe_dir(argv[i], pinned);
	}
	return atomic_load(&failures) ? 1 : 0;
}
