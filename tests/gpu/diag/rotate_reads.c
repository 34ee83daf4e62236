/*
 * Does the kernel's copy out of the page cache cost more when its destination
 * is not in the CPU's caches? (issue 18: ferry's reader spends ~1.6x the CPU
 * per byte of plain reads on 128 KiB files; its staging buffers rotate
 * through tens of MiB, the read-only ceiling reuses one buffer a thread.)
 *
 * T threads open, pread whole and close ferry gen's files DIR/sample_NNNNNN.npy
 * (N of them, warm), each into its own pool of POOL bytes, one file-sized slot
 * after the next, PASSES times over the files; prints GB/s and CPU s/GB. A pool
 * of one file is the read-only ceiling's case; larger pools are staging's.
 * On the 2-core build VM (2026-12-05, 4096 x 128 KiB, 2 threads): 0.14 CPU
 * s/GB into 128 KiB-1 MiB pools, 0.16 into 8 MiB, 0.24 into 64 MiB, 0.46 into
 * 256 MiB.
 *
 * usage: rotate_reads DIR N POOL PASSES THREADS
 * build: cc -O2 -o rotate_reads tests/gpu/diag/rotate_reads.c -lpthread
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char **paths;
static int nfiles, passes, nthreads;
static size_t file_size, pool;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
	       (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

static void *reader(void *arg)
{
	long id = (long)arg;
	size_t slots = pool / file_size, k = 0;
	char *buf = mmap(NULL, pool, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (buf == MAP_FAILED)
		abort();
	for (int p = 0; p < passes; p++)
		for (int i = (int)id; i < nfiles; i += nthreads, k++) {
			int fd = open(paths[i], O_RDONLY);
			if (fd < 0 || pread(fd, buf + (k % slots) * file_size, file_size, 0) < 0)
				abort();
			close(fd);
		}
	munmap(buf, pool);
	return NULL;
}

int main(int argc, char **argv)
{
	struct stat st;
	if (argc != 6) {
		fprintf(stderr, "usage: rotate_reads DIR N POOL PASSES THREADS\n");
		return 2;
	}
	nfiles = atoi(argv[2]);
	pool = strtoull(argv[3], NULL, 0);
	passes = atoi(argv[4]);
	nthreads = atoi(argv[5]);
	paths = calloc((size_t)nfiles, sizeof(*paths));
	for (int i = 0; i < nfiles; i++)
		if (asprintf(&paths[i], "%s/sample_%06d.npy", argv[1], i) < 0)
			return 1;
	if (nfiles < 1 || nthreads < 1 || stat(paths[0], &st) < 0)
		return 1;
	file_size = (size_t)st.st_size;
	if (pool < file_size)
		pool = file_size;
	pthread_t *t = calloc((size_t)nthreads, sizeof(*t));
	double t0 = now(), c0 = cpu_seconds();
	for (long i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, reader, (void *)i);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	double s = now() - t0, cpu = cpu_seconds() - c0;
	double gb = (double)nfiles * passes * (double)file_size / 1e9;
	printf("pool %zu KiB, %d threads: %.2f GB/s, %.3f CPU s/GB\n", pool >> 10, nthreads,
	       gb / s, cpu / gb);
	return 0;
}
