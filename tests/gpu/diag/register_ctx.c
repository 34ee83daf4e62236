/*
 * Issue 23's first epoch: registering warm files holds the driver's lock, and
 * every copy launched meanwhile waits (register_overlap.c: 54 GB/s of copies
 * fall below 1 while one thread registers). Is that lock the context's or the
 * process's? If a registration made in a second context (cuCtxCreate, with
 * CU_MEMHOSTREGISTER_PORTABLE so that the primary context may copy from it)
 * leaves the primary context's launches alone, the registrar can own a
 * context of its own.
 *
 * For each way of registering (in the primary context; in a second context,
 * portable), COPIERS threads copy 8 MiB chunks from pinned memory in the
 * primary context, CHUNKS_A_SYNC before each sync; one thread registers every
 * file of DIR (mapped, populated). One line: registration GB/s, copies' GB/s
 * before and while, and the longest single launch while. Then one file
 * registered in the second context is copied in the primary one and read back:
 * whether the bytes match. First, what making the second context costs: its
 * time, and the device memory it takes (cuMemGetInfo before and after), and
 * what lowering each of its limits (stack, printf FIFO, malloc heap; a
 * registrar never launches a kernel) gives back.
 * Build: cc -O2 -I/usr/local/cuda/include -o register_ctx register_ctx.c -ldl -lpthread
 * Usage: register_ctx DIR   (its .npy files warm first)
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

#define COPIERS 2
#define CHUNK (8u << 20)
#define CHUNKS_A_SYNC 4
#define MAX_FILES 4096

static char *maps[MAX_FILES];
static size_t sizes[MAX_FILES];
static int nfiles;
static size_t total;

static CUresult (*ctx_create)(CUcontext *, unsigned, CUdevice);
static CUcontext ctx2;

static atomic_ullong copied;
static atomic_int stop;
static atomic_int timing; /* launches count towards the worst while set */
static atomic_ullong worst_ns;

static void map_dir(const char *dir)
{
	static char *paths[MAX_FILES];
	nfiles = (int)npy_files(dir, paths, sizes, MAX_FILES);
	for (int i = 0; i < nfiles; i++) {
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		void *p = fd < 0 ? MAP_FAILED
				 : mmap(NULL, sizes[i], PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
		if (fd >= 0)
			close(fd);
		if (p == MAP_FAILED) {
			perror(paths[i]);
			exit(1);
		}
		maps[i] = p;
		total += sizes[i];
		free(paths[i]);
	}
}

static void *copier(void *arg)
{
	const char *src = arg;
	CUstream s;
	CUdeviceptr d;
	copier_begin(&s, &d, (size_t)CHUNK * CHUNKS_A_SYNC);
	while (!atomic_load(&stop)) {
		for (size_t k = 0; k < CHUNKS_A_SYNC; k++) {
			double t0 = now();
			check(cu.copy(d + k * CHUNK, src + k * CHUNK, CHUNK, s), "cuMemcpyHtoDAsync");
			unsigned long long ns = (now() - t0) * 1e9;
			if (atomic_load(&timing) && ns > atomic_load(&worst_ns))
				atomic_store(&worst_ns, ns);
		}
		check(cu.stream_sync(s), "cuStreamSynchronize");
		atomic_fetch_add(&copied, (unsigned long long)CHUNK * CHUNKS_A_SYNC);
	}
	check(cu.free(d), "cuMemFree");
	return NULL;
}

/* Registers (or unregisters) every file in context c with flags; seconds. */
static double register_all(CUcontext c, unsigned flags, int unregister)
{
	double t0 = now();
	check(cu.set_current(c), "cuCtxSetCurrent");
	for (int i = 0; i < nfiles; i++)
		check(unregister ? cu.host_unregister(maps[i]) : cu.host_register(maps[i], sizes[i], flags),
		      unregister ? "cuMemHostUnregister" : "cuMemHostRegister");
	return now() - t0;
}

static void one_way(const char *label, CUcontext c, unsigned flags, void *pinned)
{
	pthread_t t[COPIERS];
	atomic_store(&stop, 0);
	for (int i = 0; i < COPIERS; i++)
		pthread_create(&t[i], NULL, copier, pinned);
	usleep(150000);
	double t0 = now();
	unsigned long long b0 = atomic_load(&copied);
	usleep(200000);
	double t1 = now();
	unsigned long long b1 = atomic_load(&copied);
	atomic_store(&worst_ns, 0);
	atomic_store(&timing, 1);
	double reg = register_all(c, flags, 0);
	atomic_store(&timing, 0);
	double t2 = now();
	unsigned long long b2 = atomic_load(&copied);
	atomic_store(&stop, 1);
	for (int i = 0; i < COPIERS; i++)
		pthread_join(t[i], NULL);
	register_all(c, flags, 1);
	printf("%-28s registered %6.2f GB/s; copies before %5.2f, while %5.2f GB/s; "
	       "longest launch while %.2f ms\n", label, total / reg / 1e9,
	       (b1 - b0) / (t1 - t0) / 1e9, (b2 - b1) / (t2 - t1) / 1e9,
	       atomic_load(&worst_ns) / 1e6);
	fflush(stdout);
}

/* File 0 registered in the second context, copied in the primary one. */
static void check_bytes(void)
{
	CUstream s;
	CUdeviceptr d;
	char *back = malloc(sizes[0]);
	check(cu.set_current(ctx2), "cuCtxSetCurrent");
	check(cu.host_register(maps[0], sizes[0], reg_flags | CU_MEMHOSTREGISTER_PORTABLE),
	      "cuMemHostRegister (second context)");
	check(cu.set_current(ctx), "cuCtxSetCurrent");
	check(cu.stream_create(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	check(cu.alloc(&d, sizes[0]), "cuMemAlloc");
	check(cu.copy(d, maps[0], sizes[0], s), "cuMemcpyHtoDAsync (primary, from the registration)");
	check(cu.stream_sync(s), "cuStreamSynchronize");
	check(cu.copy_dtoh(back, d, sizes[0]), "cuMemcpyDtoH");
	printf("a file registered in the second context, copied in the primary: bytes %s\n",
	       memcmp(back, maps[0], sizes[0]) ? "DIFFER" : "match");
	check(cu.free(d), "cuMemFree");
	check(cu.set_current(ctx2), "cuCtxSetCurrent");
	check(cu.host_unregister(maps[0]), "cuMemHostUnregister");
	free(back);
}

/* The second context is current: each limit lowered in turn, and the device
 * memory that gave back. Errors are printed, not fatal: the driver may refuse
 * a value. */
static void lower_limits(void *lib, CUresult (*mem_info)(size_t *, size_t *))
{
	CUresult (*set_limit)(CUlimit, size_t) = sym(lib, "cuCtxSetLimit");
	CUresult (*get_limit)(size_t *, CUlimit) = sym(lib, "cuCtxGetLimit");
	static const struct { CUlimit limit; const char *name; size_t to; } lows[] = {
		{CU_LIMIT_STACK_SIZE, "stack", 0},
		{CU_LIMIT_STACK_SIZE, "stack", 16},
		{CU_LIMIT_PRINTF_FIFO_SIZE, "printf FIFO", 0},
		{CU_LIMIT_PRINTF_FIFO_SIZE, "printf FIFO", 4096},
		{CU_LIMIT_MALLOC_HEAP_SIZE, "malloc heap", 0},
		{CU_LIMIT_MALLOC_HEAP_SIZE, "malloc heap", 4096},
	};
	for (size_t i = 0; i < sizeof(lows) / sizeof(lows[0]); i++) {
		size_t was = 0, is = 0, free0, free1, total_mem;
		get_limit(&was, lows[i].limit);
		mem_info(&free0, &total_mem);
		CUresult rc = set_limit(lows[i].limit, lows[i].to);
		mem_info(&free1, &total_mem);
		get_limit(&is, lows[i].limit);
		printf("limit %s: %zu -> asked %zu: rc %d, now %zu, %.1f MiB given back\n",
		       lows[i].name, was, lows[i].to, (int)rc, is,
		       ((double)free1 - (double)free0) / 1048576.0);
	}
}

int main(int argc, char **argv)
{
	void *pinned, *lib;
	CUdevice dev;
	if (argc != 2) {
		fprintf(stderr, "usage: register_ctx DIR\n");
		return 2;
	}
	load_cuda();
	lib = dlopen("libcuda.so.1", RTLD_NOW);
	ctx_create = sym(lib, "cuCtxCreate_v2");
	CUresult (*mem_info)(size_t *, size_t *) = sym(lib, "cuMemGetInfo_v2");
	size_t free0, free1, total;
	check(cu.device_get(&dev, 0), "cuDeviceGet");
	check(mem_info(&free0, &total), "cuMemGetInfo");
	double t0 = now();
	check(ctx_create(&ctx2, 0, dev), "cuCtxCreate");
	double made = now() - t0;
	check(mem_info(&free1, &total), "cuMemGetInfo");
	printf("a second context: made in %.1f ms, %.1f MiB of device memory\n", made * 1e3,
	       ((double)free0 - (double)free1) / 1048576.0);
	lower_limits(lib, mem_info);
	check(mem_info(&free1, &total), "cuMemGetInfo");
	printf("a second context with its limits lowered: %.1f MiB of device memory\n",
	       ((double)free0 - (double)free1) / 1048576.0);
	check(cu.set_current(ctx), "cuCtxSetCurrent");
	check(cu.host_alloc(&pinned, (size_t)CHUNK * CHUNKS_A_SYNC, 0), "cuMemHostAlloc");
	map_dir(argv[1]);
	printf("== %s: %d files, %.2f GiB\n", argv[1], nfiles, total / 1073741824.0);
	for (int round = 0; round < 2; round++) {
		one_way("primary context", ctx, reg_flags, pinned);
		one_way("second context, portable", ctx2, reg_flags | CU_MEMHOSTREGISTER_PORTABLE,
			pinned);
		one_way("primary context, portable", ctx, reg_flags | CU_MEMHOSTREGISTER_PORTABLE,
			pinned);
	}
	check_bytes();
	check(mem_info(&free1, &total), "cuMemGetInfo");
	printf("after the runs: %.1f MiB of device memory less than before the second context\n",
	       ((double)free0 - (double)free1) / 1048576.0);
	return 0;
}
