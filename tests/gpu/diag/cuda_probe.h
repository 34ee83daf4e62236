/*
 * The CUDA driver for the diag probes (register.c, register_overlap.c,
 * register_group.c, register_ctx.c), loaded with dlopen as libferry does: the entry points
 * they call, a check that exits on a failure, and the primary context made
 * current.
 */
#ifndef FERRY_DIAG_CUDA_PROBE_H
#define FERRY_DIAG_CUDA_PROBE_H

#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static struct {
	CUresult (*init)(unsigned);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*attribute)(int *, CUdevice_attribute, CUdevice);
	CUresult (*primary_retain)(CUcontext *, CUdevice);
	CUresult (*set_current)(CUcontext);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*free)(CUdeviceptr);
	CUresult (*host_alloc)(void **, size_t, unsigned);
	CUresult (*host_register)(void *, size_t, unsigned);
	CUresult (*host_unregister)(void *);
	CUresult (*copy)(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*copy_dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*stream_create)(CUstream *, unsigned);
	CUresult (*stream_sync)(CUstream);
} cu;
static CUcontext ctx;
static unsigned reg_flags = CU_MEMHOSTREGISTER_READ_ONLY;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void check(CUresult rc, const char *what)
{
	if (rc != CUDA_SUCCESS) {
		fprintf(stderr, "probe: %s failed: CUresult %d\n", what, (int)rc);
		exit(1);
	}
}

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);
	if (!p) {
		fprintf(stderr, "probe: %s not in libcuda\n", name);
		exit(1);
	}
	return p;
}

/* Loads the driver, makes the primary context current, prints whether the
 * device takes read-only registrations (reg_flags drops the flag if not). */
static void load_cuda(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	CUdevice dev;
	int ro = 0;

	if (!lib) {
		fprintf(stderr, "probe: %s\n", dlerror());
		exit(1);
	}
	cu.init = sym(lib, "cuInit");
	cu.device_get = sym(lib, "cuDeviceGet");
	cu.attribute = sym(lib, "cuDeviceGetAttribute");
	cu.primary_retain = sym(lib, "cuDevicePrimaryCtxRetain");
	cu.set_current = sym(lib, "cuCtxSetCurrent");
	cu.alloc = sym(lib, "cuMemAlloc_v2");
	cu.free = sym(lib, "cuMemFree_v2");
	cu.host_alloc = sym(lib, "cuMemHostAlloc");
	cu.host_register = sym(lib, "cuMemHostRegister_v2");
	cu.host_unregister = sym(lib, "cuMemHostUnregister");
	cu.copy = sym(lib, "cuMemcpyHtoDAsync_v2");
	cu.copy_dtoh = sym(lib, "cuMemcpyDtoH_v2");
	cu.stream_create = sym(lib, "cuStreamCreate");
	cu.stream_sync = sym(lib, "cuStreamSynchronize");
	check(cu.init(0), "cuInit");
	check(cu.device_get(&dev, 0), "cuDeviceGet");
	check(cu.attribute(&ro, CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, dev),
	      "cuDeviceGetAttribute");
	printf("read-only host registration supported: %d\n", ro);
	if (!ro)
		reg_flags = 0;
	check(cu.primary_retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	check(cu.set_current(ctx), "cuCtxSetCurrent");
}

/* The .npy files of dir, at most max: their paths (malloc'd) and sizes.
 * Returns how many; exits when dir or a file of it cannot be looked at. */
static inline unsigned npy_files(const char *dir, char **paths, size_t *sizes, unsigned max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;
	if (!d) {
		perror(dir);
		exit(1);
	}
	while ((e = readdir(d)) && n < max) {
		struct stat st;
		size_t len = strlen(e->d_name);
		char *p;
		if (len < 4 || strcmp(e->d_name + len - 4, ".npy"))
			continue;
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0 || stat(p, &st) < 0) {
			perror(dir);
			exit(1);
		}
		paths[n] = p;
		sizes[n++] = (size_t)st.st_size;
	}
	closedir(d);
	return n;
}

/* A copying thread's start: the primary context current, a stream of its own
 * and len bytes of device memory to copy into. */
static inline void copier_begin(CUstream *s, CUdeviceptr *d, size_t len)
{
	check(cu.set_current(ctx), "cuCtxSetCurrent");
	check(cu.stream_create(s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	check(cu.alloc(d, len), "cuMemAlloc");
}

#endif
