/*
 * Issue 23's question of 2026-12-06: 4 MiB files registered slowly (one
 * mapping and one cuMemHostRegister per file; about 4500-5000 of 8192 loads
 * zero-copy over 8 epochs). Would one registration over several files pay?
 * (Answered by the reader rather than this probe: its rates fell with each
 * pass over the same files whatever G, so run one G a process; main now
 * registers small files in groups, docs/design.md.) For
 * each group size G, the files are mapped side by side into one reserved
 * address range (mmap PROT_NONE, then each file MAP_FIXED | MAP_SHARED |
 * MAP_POPULATE at the next page boundary) and the range is registered with
 * one call; G = 1 is today's one registration per file. Per G: the seconds
 * spent mapping, registering and unregistering, ms per GiB, the longest single
 * registration (how long the driver's lock, and so every launch, is held),
 * then the copy rate from the registrations (every file copied PASSES times,
 * all queued on one stream); every file's bytes as copied from its group's
 * mapping are checked against a pread first.
 * One thread, as the registrar. The CUDA driver is loaded with dlopen.
 * Build: cc -O2 -I/usr/local/cuda/include -o register_group register_group.c -ldl
 * Usage: register_group G[,G...] FILE...   (warm the files first)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_probe.h"

#define PASSES 3

static char **paths;
static size_t *sizes;
static int nfiles;
static size_t page;

struct group {
	char *base;      /* the reserved range */
	size_t len;      /* its length: the files' sizes, each rounded up to a page */
	int first, count;
	char **at;       /* where each of its files starts */
};

static size_t slot(int i)
{
	return (sizes[i] + page - 1) / page * page;
}

/* Reserves a range for files first..first+count-1 and maps each into it. */
static void map_group(struct group *g, int first, int count)
{
	g->first = first;
	g->count = count;
	g->len = 0;
	for (int i = first; i < first + count; i++)
		g->len += slot(i);
	g->base = mmap(NULL, g->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (g->base == MAP_FAILED) {
		perror("reserve");
		exit(1);
	}
	g->at = calloc(count, sizeof(*g->at));
	char *next = g->base;
	for (int k = 0; k < count; k++) {
		int i = first + k, fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		void *p = fd < 0 ? MAP_FAILED
				 : mmap(next, sizes[i], PROT_READ,
					MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0);
		if (p == MAP_FAILED) {
			perror(paths[i]);
			exit(1);
		}
		close(fd);
		g->at[k] = next;
		next += slot(i);
	}
}

/* Each file as the device copied it from its group's mapping, against pread:
 * every byte, so a wrong placement shows. */
static void check_group(const struct group *g, CUdeviceptr d, unsigned char *host,
			unsigned char *want)
{
	for (int k = 0; k < g->count; k++) {
		int i = g->first + k, fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		size_t n = sizes[i];
		check(cu.copy(d, g->at[k], n, 0), "cuMemcpyHtoDAsync");
		check(cu.stream_sync(0), "cuStreamSynchronize");
		check(cu.copy_dtoh(host, d, n), "cuMemcpyDtoH");
		if (fd < 0 || pread(fd, want, n, 0) != (ssize_t)n) {
			perror(paths[i]);
			exit(1);
		}
		close(fd);
		if (memcmp(host, want, n) != 0) {
			fprintf(stderr, "probe: %s arrived wrong from its group's mapping\n", paths[i]);
			exit(1);
		}
	}
}

/* Copies every file of every group PASSES times; returns GB/s. */
static double copy_rate(const struct group *gs, int ngroups, CUdeviceptr d, CUstream s)
{
	size_t bytes = 0;
	double t0 = now();
	for (int pass = 0; pass < PASSES; pass++)
		for (int g = 0; g < ngroups; g++)
			for (int k = 0; k < gs[g].count; k++) {
				size_t len = sizes[gs[g].first + k];
				check(cu.copy(d, gs[g].at[k], len, s), "cuMemcpyHtoDAsync");
				bytes += len;
			}
	check(cu.stream_sync(s), "cuStreamSynchronize");
	return bytes / (now() - t0) / 1e9;
}

static void run(int per_group, CUdeviceptr d, unsigned char **host, CUstream s)
{
	int ngroups = (nfiles + per_group - 1) / per_group;
	struct group *gs = calloc(ngroups, sizeof(*gs));
	double t_map = 0, t_reg = 0, t_unreg = 0, longest = 0, t0;
	size_t total = 0;
	for (int g = 0; g < ngroups; g++) {
		int first = g * per_group;
		t0 = now();
		map_group(&gs[g], first, nfiles - first < per_group ? nfiles - first : per_group);
		t_map += now() - t0;
		t0 = now();
		check(cu.host_register(gs[g].base, gs[g].len, reg_flags), "cuMemHostRegister");
		double took = now() - t0;
		t_reg += took;
		longest = took > longest ? took : longest;
		total += gs[g].len;
	}
	for (int g = 0; g < ngroups; g++)
		check_group(&gs[g], d, host[0], host[1]);
	double rate = copy_rate(gs, ngroups, d, s);
	for (int g = 0; g < ngroups; g++) {
		t0 = now();
		check(cu.host_unregister(gs[g].base), "cuMemHostUnregister");
		t_unreg += now() - t0;
		munmap(gs[g].base, gs[g].len);
		free(gs[g].at);
	}
	double gib = total / 1073741824.0;
	printf("files a registration %4d  %5d registrations  %.2f GiB  map %.3f s  register %.3f s "
	       "(%.1f ms/GiB, longest %.2f ms)  unregister %.3f s  copies %.2f GB/s\n",
	       per_group, ngroups, gib, t_map, t_reg, t_reg * 1e3 / gib, longest * 1e3, t_unreg,
	       rate);
	fflush(stdout);
	free(gs);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: register_group G[,G...] FILE...\n");
		return 2;
	}
	page = (size_t)sysconf(_SC_PAGESIZE);
	nfiles = argc - 2;
	paths = argv + 2;
	sizes = calloc(nfiles, sizeof(*sizes));
	size_t most = 0;
	for (int i = 0; i < nfiles; i++) {
		struct stat st;
		if (stat(paths[i], &st) < 0 || st.st_size == 0) {
			fprintf(stderr, "probe: %s: not a file with bytes\n", paths[i]);
			return 1;
		}
		sizes[i] = st.st_size;
		most = sizes[i] > most ? sizes[i] : most;
	}
	load_cuda();
	CUstream s;
	CUdeviceptr d;
	check(cu.stream_create(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	check(cu.alloc(&d, most), "cuMemAlloc");
	unsigned char *host[2] = { malloc(most), malloc(most) };
	for (char *g = strtok(argv[1], ","); g; g = strtok(NULL, ",")) {
		int per_group = atoi(g);
		if (per_group < 1) {
			fprintf(stderr, "probe: group size %s is not a count\n", g);
			return 2;
		}
		run(per_group, d, host, s);
	}
	return 0;
}
