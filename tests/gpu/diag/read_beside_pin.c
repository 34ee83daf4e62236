/*
 * Issue 23's first epoch: the registrations made beside it cost it 5-13%
 * (bench/results/2026-12-07-1003-NVIDIA-H100/about.md), and not by taking a
 * core (15 IO threads do no better than 16). Which part of a registration
 * slows other threads' reads of other warm files? READERS threads pread the
 * even-numbered files of DIR in 2 MiB pieces into buffers of their own (the
 * copy path's reads, without the GPU) for SECONDS a mode, while one thread
 * works through the odd-numbered files, in each mode:
 *   none      nothing (the readers alone)
 *   burn      a spinning loop (what a core taken costs)
 *   map       mmap read-only and munmap, untouched
 *   populate  mmap with MAP_POPULATE (page tables filled, nothing pinned)
 *   mlock     mmap, mlock, munlock, munmap (the kernel pins the pages)
 *   register  mmap, cuMemHostRegister(READ_ONLY | PORTABLE), unregister,
 *             munmap: what ferry's registrar does (where libcuda loads)
 *   reg_pop   the same, mapped with MAP_POPULATE (page tables filled before
 *             the driver pins: does that make its pinning cheaper?)
 * Every mode but map unmaps pages it had mapped (TLB shootdowns to the
 * readers' cores), which ferry's registrar does not do in a first epoch:
 * compare register with populate and mlock, not with none alone.
 * One line a mode: the readers' GB/s, its ratio to `none`, and the files
 * (and GB/s) the other thread got through.
 * Build: cc -O2 -I/usr/local/cuda/include -o read_beside_pin read_beside_pin.c -ldl -lpthread
 * Usage: read_beside_pin DIR [READERS] [SECONDS]   (DIR's .npy files warm first)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_probe.h"

#define PIECE (2u << 20)
#define MAX_FILES 4096
#define MAX_READERS 128

static char *paths[MAX_FILES];
static size_t sizes[MAX_FILES];
static unsigned nfiles, nreaders;
static double seconds = 2.0;
static atomic_int stop;
static int have_cuda;

struct tally {
	uint64_t bytes, files;
};

static void list_files(const char *dir)
{
	nfiles = npy_files(dir, paths, sizes, MAX_FILES);
	if (nfiles < 2) {
		fprintf(stderr, "probe: %s holds fewer than two .npy files\n", dir);
		exit(1);
	}
}

/* Reader k: the even files 2k, 2(k + nreaders), ..., whole, over and over. */
static void *reader(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg, neven = (nfiles + 1) / 2;
	struct tally *t = calloc(1, sizeof(*t));
	char *buf = malloc(PIECE);
	memset(buf, 0, PIECE);
	for (unsigned j = k; !atomic_load(&stop); j += nreaders) {
		unsigned i = 2 * (j % neven);
		int fd = open(paths[i], O_RDONLY);
		if (fd < 0)
			continue;
		for (off_t off = 0; off < (off_t)sizes[i] && !atomic_load(&stop); off += PIECE) {
			ssize_t got = pread(fd, buf, PIECE, off);
			if (got <= 0)
				break;
			t->bytes += (uint64_t)got;
		}
		close(fd);
		t->files++;
	}
	free(buf);
	return t;
}

/* Reads every file once, so that the first mode finds them warm too. */
static void warm_files(void)
{
	char *buf = malloc(PIECE);
	for (unsigned i = 0; i < nfiles; i++) {
		int fd = open(paths[i], O_RDONLY);
		for (off_t off = 0; fd >= 0 && pread(fd, buf, PIECE, off) > 0; off += PIECE)
			;
		if (fd >= 0)
			close(fd);
	}
	free(buf);
}

/* One odd file through the mode's work. */
static void work_on(const char *mode, unsigned i, struct tally *t)
{
	int fd = open(paths[i], O_RDONLY);
	if (fd < 0)
		return;
	int populate = !strcmp(mode, "populate") || !strcmp(mode, "reg_pop") ? MAP_POPULATE : 0;
	void *p = mmap(NULL, sizes[i], PROT_READ, MAP_SHARED | populate, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return;
	if (!strcmp(mode, "mlock")) {
		if (mlock(p, sizes[i]) == 0)
			munlock(p, sizes[i]);
	} else if (!strcmp(mode, "register") || !strcmp(mode, "reg_pop")) {
		size_t len = (sizes[i] + 4095) / 4096 * 4096;
		check(cu.host_register(p, len, reg_flags | CU_MEMHOSTREGISTER_PORTABLE),
		      "cuMemHostRegister");
		check(cu.host_unregister(p), "cuMemHostUnregister");
	}
	munmap(p, sizes[i]);
	t->bytes += sizes[i];
	t->files++;
}

/* The other thread: the odd files through the mode's work, or a spin. */
static void *other(void *arg)
{
	const char *mode = arg;
	struct tally *t = calloc(1, sizeof(*t));
	volatile uint64_t spin = 0;
	if (have_cuda)
		check(cu.set_current(ctx), "cuCtxSetCurrent");
	for (unsigned j = 0; !atomic_load(&stop); j++) {
		if (!strcmp(mode, "burn")) {
			for (int k = 0; k < 1000000; k++)
				spin++;
		} else {
			work_on(mode, 2 * (j % (nfiles / 2)) + 1, t);
		}
	}
	return t;
}

static void run_mode(const char *mode, double *base)
{
	pthread_t r[MAX_READERS], o;
	struct tally sum = { 0 }, *ot = NULL;
	atomic_store(&stop, 0);
	for (unsigned k = 0; k < nreaders; k++)
		pthread_create(&r[k], NULL, reader, (void *)(uintptr_t)k);
	int busy = strcmp(mode, "none") != 0;
	if (busy)
		pthread_create(&o, NULL, other, (void *)mode);
	double t0 = now();
	usleep((useconds_t)(seconds * 1e6));
	atomic_store(&stop, 1);
	for (unsigned k = 0; k < nreaders; k++) {
		struct tally *t;
		pthread_join(r[k], (void **)&t);
		sum.bytes += t->bytes;
		free(t);
	}
	double dt = now() - t0;
	if (busy)
		pthread_join(o, (void **)&ot);
	double gbs = sum.bytes / dt / 1e9;
	if (!*base)
		*base = gbs;
	printf("%-9s readers %6.2f GB/s (%.3f of none)", mode, gbs, gbs / *base);
	if (ot)
		printf("   other thread: %llu files, %.2f GB/s", (unsigned long long)ot->files,
		       ot->bytes / dt / 1e9);
	printf("\n");
	free(ot);
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "none", "burn", "map", "populate", "mlock",
					     "register", "reg_pop", "none" };
	double base = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR [READERS] [SECONDS]\n", argv[0]);
		return 2;
	}
	list_files(argv[1]);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	nreaders = argc > 2 ? (unsigned)atoi(argv[2]) : (unsigned)(cores > 1 ? cores - 1 : 1);
	if (nreaders < 1 || nreaders > MAX_READERS)
		nreaders = 1;
	if (argc > 3)
		seconds = atof(argv[3]);
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	have_cuda = lib != NULL;
	if (have_cuda)
		load_cuda();
	printf("%u files, %u readers, %.1f s a mode, %ld cores%s\n", nfiles, nreaders, seconds,
	       cores, have_cuda ? "" : ", no libcuda: no register mode");
	warm_files();
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
		if (strncmp(modes[m], "reg", 3) || have_cuda)
			run_mode(modes[m], &base);
	return 0;
}
