/*
 * The CUDA backend of the device layer: the driver API, loaded at run time with
 * dlopen("libcuda.so.1") so that one build runs with or without a GPU.
 *
 * Streams and events are the driver's own handles cast to the opaque types;
 * only the device and test gates have structs of their own. Conversions of
 * payloads run as kernels of convert.cu, whose PTX (convert_ptx.h) the
 * driver JIT-compiles at the first conversion.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "device/device.h"

#ifndef FERRY_HAVE_CUDA_H

static int cuda_open(const struct ferry__device_params *p, struct ferry__device **out)
{
	*out = NULL;
	return ferry__fail(-FERRY_ENODEVICE, "cuda: built without cuda.h");
}

const struct ferry__device_ops ferry__device_cuda = {
	.name = "cuda",
	.flags = FERRY__DEV_GPU_MEMORY,
	.open = cuda_open,
};

#else

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <cuda.h>

#include "device/convert_params.h"
#include "device/convert_ptx.h"

/*
 * Every driver symbol ferry uses. Each name goes through cuda.h's own macros, so
 * the member type is the header's prototype and dlsym asks for the versioned
 * symbol the header means (cuMemAlloc -> "cuMemAlloc_v2", ...).
 */
#define CU_SYMBOLS(REQ, OPT)                                                         \
	REQ(cuInit) REQ(cuDriverGetVersion) REQ(cuGetErrorName) REQ(cuGetErrorString) \
	REQ(cuDeviceGetCount) REQ(cuDeviceGet) REQ(cuDeviceGetName)                   \
	REQ(cuDeviceGetAttribute) REQ(cuDeviceTotalMem)                               \
	REQ(cuDevicePrimaryCtxRetain) REQ(cuDevicePrimaryCtxRelease)                  \
	REQ(cuCtxSetCurrent) REQ(cuCtxGetCurrent)                                     \
	OPT(cuCtxDestroy) OPT(cuCtxPopCurrent) OPT(cuCtxSetLimit)                     \
	REQ(cuMemAlloc) REQ(cuMemFree) REQ(cuMemHostRegister)                         \
	REQ(cuMemHostUnregister) REQ(cuMemHostGetDevicePointer)                       \
	REQ(cuStreamCreate) REQ(cuStreamDestroy) REQ(cuStreamSynchronize)             \
	REQ(cuStreamWaitEvent)                                                        \
	REQ(cuMemcpyHtoDAsync) REQ(cuMemcpyDtoDAsync) REQ(cuMemcpyDtoHAsync)          \
	REQ(cuMemcpyHtoD) REQ(cuMemcpyDtoD) REQ(cuMemcpyDtoH) REQ(cuMemsetD8Async)    \
	REQ(cuEventCreate) REQ(cuEventDestroy) REQ(cuEventRecord) REQ(cuEventQuery)   \
	REQ(cuEventSynchronize)                                                       \
	REQ(cuModuleLoadData) REQ(cuModuleUnload) REQ(cuModuleGetFunction)            \
	REQ(cuLaunchKernel)                                                           \
	OPT(cuStreamWaitValue32) OPT(cuModuleLoadDataEx) CU_POOL_SYMBOLS(OPT)          \
	CU_BATCH_SYMBOLS(OPT)

/* Many copies in one call (CUDA 12.8; the prototype without failIdx: 13.0). */
#if CUDA_VERSION >= 13000
#define CU_BATCH_SYMBOLS(OPT) OPT(cuMemcpyBatchAsync)
#else
#define CU_BATCH_SYMBOLS(OPT)
#endif

/* Stream-ordered allocation (CUDA 11.2): scratch memory for conversions. */
#if CUDA_VERSION >= 11020
#define CU_POOL_SYMBOLS(OPT)                                                          \
	OPT(cuMemAllocAsync) OPT(cuMemFreeAsync) OPT(cuMemAllocFromPoolAsync)        \
	OPT(cuMemPoolCreate) OPT(cuMemPoolDestroy) OPT(cuMemPoolSetAttribute)
#else
#define CU_POOL_SYMBOLS(OPT)
#endif

#define CU_STR_(x) #x
#define CU_STR(x) CU_STR_(x)
#define CU_MEMBER(fn) __typeof__(&fn) p_##fn;

static struct {
	int ok;        /* 1 once every required symbol was found */
	char why[256]; /* why not, otherwise */
	CU_SYMBOLS(CU_MEMBER, CU_MEMBER)
	/* The registrar's context: the flags-and-device form every driver has
	 * (cuda.h 13 declares only cuCtxCreate_v4, drivers before 12.5 lack it). */
	CUresult (*p_cuCtxCreate_v2)(CUcontext *ctx, unsigned int flags, CUdevice dev);
} cu;

static pthread_once_t cu_once = PTHREAD_ONCE_INIT;


static void cu_load(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		const char *e = dlerror();
		snprintf(cu.why, sizeof cu.why, "libcuda.so.1 not found: %s", e ? e : "?");
		return;
	}
#define CU_LOOKUP_REQ(fn)                                                            \
	cu.p_##fn = (__typeof__(cu.p_##fn))dlsym(lib, CU_STR(fn));                   \
	if (!cu.p_##fn) {                                                            \
		snprintf(cu.why, sizeof cu.why, "libcuda.so.1 lacks %s", CU_STR(fn)); \
		dlclose(lib);                                                        \
		return;                                                              \
	}
#define CU_LOOKUP_OPT(fn) cu.p_##fn = (__typeof__(cu.p_##fn))dlsym(lib, CU_STR(fn));
	CU_SYMBOLS(CU_LOOKUP_REQ, CU_LOOKUP_OPT)
	CU_LOOKUP_OPT(cuCtxCreate_v2)
#undef CU_LOOKUP_REQ
#undef CU_LOOKUP_OPT
	cu.ok = 1;
}

/* The driver's name and description of r (never NULL). */
static void cu_names(CUresult r, const char **name, const char **text)
{
	if (cu.p_cuGetErrorName(r, name) != CUDA_SUCCESS || !*name)
		*name = "CUDA_ERROR_UNKNOWN_CODE";
	if (cu.p_cuGetErrorString(r, text) != CUDA_SUCCESS || !*text)
		*text = "unrecognized error code";
}

/* Turns a failed driver call into a ferry error with a message naming it. */
static int cu_check(CUresult r, const char *call)
{
	const char *name, *text;

	if (r == CUDA_SUCCESS)
		return 0;
	cu_names(r, &name, &text);
	return ferry__fail(r == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -FERRY_EDEVICE,
			   "cuda: %s failed: %s (%d): %s", call, name, (int)r, text);
}

/* CU(cuMemAlloc, &p, n): calls the driver, returns 0 or a ferry error. */
#define CU(fn, ...) cu_check(cu.p_##fn(__VA_ARGS__), #fn)

enum gate_mode { GATE_AUTO, GATE_KERNEL };

struct cuda_device {
	struct ferry__device base;
	CUdevice dev;
	int ordinal;               /* the GPU's number, as memory locations name it */
	CUcontext ctx;
	enum gate_mode gate_mode;
	enum ferry__wait_mode wait;
	pthread_mutex_t module_lock; /* guards the lazy loads of the kernels */
	CUmodule module;
	CUfunction spin;
	int pools;                 /* scratch memory is stream-ordered (cuMemAllocAsync) */
	int pool_tried;            /* scratch_pool was made, or could not be */
	void *scratch_pool;        /* ferry's CUmemoryPool for scratch, or NULL */
	int convert_state;         /* 0: not loaded yet, 1: ready, < 0: why not (convert_why) */
	char convert_why[1024];
	CUmodule convert_module;
	CUfunction swap[5];        /* ferry_swap_P, by log2(P) (1..4) */
	CUfunction transpose[5];   /* ferry_transpose_S, by log2(S) (0..4) */
	int map_state;             /* 0: not asked yet, 1: read-only registration works, < 0: not */
	char map_why[512];         /* which call refused, when map_state < 0 */
	CUcontext map_ctx;         /* registrations' own context (made by map_ready), or NULL */
};

struct cuda_gate {
	uint32_t *word; /* on a page of its own, registered and mapped for the device */
	CUdeviceptr dptr;
};

static struct cuda_device *to_cuda(struct ferry__device *dev)
{
	return (struct cuda_device *)dev;
}

static CUstream to_stream(struct ferry__stream *s)
{
	return (CUstream)(void *)s;
}

static CUevent to_event(struct ferry__event *ev)
{
	return (CUevent)(void *)ev;
}

static struct cuda_gate *to_gate(struct ferry__gate *g)
{
	return (struct cuda_gate *)(void *)g;
}

static CUdeviceptr to_dptr(const void *p)
{
	return (CUdeviceptr)(uintptr_t)p;
}

/* Makes dev's primary context current on this thread. It asks the driver
 * rather than trusting a cache: torch or cupy may switch contexts on the
 * same thread between two ferry calls. */
static int bind_ctx(struct ferry__device *dev)
{
	struct cuda_device *d = to_cuda(dev);
	CUcontext now = NULL;
	if (cu.p_cuCtxGetCurrent(&now) == CUDA_SUCCESS && now == d->ctx)
		return 0;
	return CU(cuCtxSetCurrent, d->ctx);
}

/* ---- device ---------------------------------------------------------------- */

/* Any failure here means "no usable device", so that auto can fall back to host. */
static int find_device(int ordinal, CUdevice *out)
{
	const char *name, *text;
	int count = 0;
	CUresult r = cu.p_cuInit(0);

	if (r == CUDA_SUCCESS)
		r = cu.p_cuDeviceGetCount(&count);
	if (r == CUDA_ERROR_NO_DEVICE || (r == CUDA_SUCCESS && count == 0))
		return ferry__fail(-FERRY_ENODEVICE, "cuda: no CUDA device");
	if (r == CUDA_SUCCESS && (ordinal < 0 || ordinal >= count))
		return ferry__fail(-FERRY_ECONFIG,
				   "cuda: GPU %d does not exist (this machine has %d; FERRY_GPU or "
				   "LOCAL_RANK chose it)",
				   ordinal, count);
	if (r == CUDA_SUCCESS)
		r = cu.p_cuDeviceGet(out, ordinal);
	if (r == CUDA_SUCCESS)
		return 0;
	cu_names(r, &name, &text);
	return ferry__fail(-FERRY_ENODEVICE, "cuda: device %d: %s (%d): %s", ordinal, name,
			   (int)r, text);
}

/* Whether scratch memory can be allocated and freed in stream order. */
static int pools_supported(CUdevice dev)
{
	int yes = 0;
#if CUDA_VERSION >= 11020
	if (!cu.p_cuMemAllocAsync || !cu.p_cuMemFreeAsync ||
	    cu.p_cuDeviceGetAttribute(&yes, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev) !=
		    CUDA_SUCCESS)
		yes = 0;
#endif
	return yes;
}

static int cuda_open(const struct ferry__device_params *p, struct ferry__device **out)
{
	struct cuda_device *d;
	enum gate_mode mode = p->gate_kernel ? GATE_KERNEL : GATE_AUTO;
	CUdevice dev = 0;
	int rc;

	*out = NULL;
	pthread_once(&cu_once, cu_load);
	if (!cu.ok)
		return ferry__fail(-FERRY_ENODEVICE, "cuda: %s", cu.why);
	rc = find_device(p->ordinal, &dev);
	if (rc)
		return rc;
	d = calloc(1, sizeof *d);
	if (!d)
		return ferry__fail(-ENOMEM, "cuda: out of memory");
	d->base.ops = &ferry__device_cuda;
	d->dev = dev;
	d->ordinal = p->ordinal;
	d->gate_mode = mode;
	d->wait = p->wait;
	rc = CU(cuDevicePrimaryCtxRetain, &d->ctx, dev);
	if (rc) {
		free(d);
		return rc;
	}
	pthread_mutex_init(&d->module_lock, NULL);
	d->pools = pools_supported(dev);
	*out = &d->base;
	return 0;
}

static void destroy_scratch_pool(struct cuda_device *d)
{
#if CUDA_VERSION >= 11020
	if (d->scratch_pool)
		CU(cuMemPoolDestroy, (CUmemoryPool)d->scratch_pool);
#endif
}

static void cuda_close(struct ferry__device *dev)
{
	struct cuda_device *d = to_cuda(dev);

	if (!d)
		return;
	if (d->module && bind_ctx(dev) == 0)
		CU(cuModuleUnload, d->module);
	if (d->convert_module && bind_ctx(dev) == 0)
		CU(cuModuleUnload, d->convert_module);
	destroy_scratch_pool(d);
	if (d->map_ctx)
		CU(cuCtxDestroy, d->map_ctx);
	CU(cuDevicePrimaryCtxRelease, d->dev);
	pthread_mutex_destroy(&d->module_lock);
	free(d);
}

static int cuda_describe(struct ferry__device *dev, char *buf, size_t len)
{
	struct cuda_device *d = to_cuda(dev);
	char name[256] = "";
	int major = 0, minor = 0, version = 0, rc;
	size_t total = 0;

	rc = CU(cuDeviceGetName, name, (int)sizeof name, d->dev);
	if (rc == 0)
		rc = CU(cuDeviceGetAttribute, &major,
			CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev);
	if (rc == 0)
		rc = CU(cuDeviceGetAttribute, &minor,
			CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev);
	if (rc == 0)
		rc = CU(cuDeviceTotalMem, &total, d->dev);
	if (rc == 0)
		rc = CU(cuDriverGetVersion, &version);
	if (rc)
		return rc;
	snprintf(buf, len, "cuda: %s (sm_%d%d, %zu MiB), driver %d.%d", name, major,
		 minor, total >> 20, version / 1000, version % 1000 / 10);
	return 0;
}

/* ---- memory ---------------------------------------------------------------- */

static int cuda_mem_alloc(struct ferry__device *dev, size_t len, void **out)
{
	CUdeviceptr p = 0;
	int rc = bind_ctx(dev);

	*out = NULL;
	if (rc == 0)
		rc = CU(cuMemAlloc, &p, len ? len : 1); /* cuMemAlloc refuses 0 bytes */
	if (rc == 0)
		*out = (void *)(uintptr_t)p;
	return rc;
}

static void cuda_mem_free(struct ferry__device *dev, void *ptr)
{
	if (ptr && bind_ctx(dev) == 0)
		CU(cuMemFree, to_dptr(ptr));
}

/* Blocks of at least this many bytes are aligned for the kernel's huge pages. */
#define HUGE_PAGE ((size_t)2 << 20)

/*
 * Writes a byte to every page of a fresh allocation before it is registered.
 * A registration faults in the pages it finds missing one by one, holding the
 * driver's lock, and every copy's launch waits for it: on an H100 a staging
 * pool grew by 32 MiB in 10-13 ms that way, no copy launched on any lane
 * meanwhile (bench/results/2026-12-06-1135-NVIDIA-H100/trace-*). Touched
 * first, the pages fault in without the lock and the registration pins them.
 * A large block asks for huge pages first, a fault for every 2 MiB instead of
 * 512 (a hint; where the kernel declines, small pages): on H100s 32 MiB then
 * grew in 9-18 ms instead of 15-36 (bench/results/2026-12-06-1413-*).
 */
static void touch_pages(char *p, size_t bytes, size_t page)
{
	if (bytes >= HUGE_PAGE)
		(void)madvise(p, bytes, MADV_HUGEPAGE);
	for (size_t off = 0; off < bytes; off += page)
		((volatile char *)p)[off] = 0;
}

/*
 * Page-aligned host memory, rounded up to whole pages and registered with the
 * driver: cuMemHostAlloc only promises 256-byte alignment, O_DIRECT needs pages.
 */
static int page_alloc(struct ferry__device *dev, size_t len, unsigned flags, void **out)
{
	size_t page = ferry__page_size();
	size_t bytes;
	void *p = NULL;
	int rc;

	*out = NULL;
	if (len > SIZE_MAX - HUGE_PAGE)
		return ferry__fail(-ENOMEM, "cuda: pinned allocation of %zu bytes", len);
	bytes = (len ? len + page - 1 : page) / page * page;
	rc = bind_ctx(dev);
	if (rc)
		return rc;
	if (posix_memalign(&p, bytes >= HUGE_PAGE ? HUGE_PAGE : page, bytes) != 0)
		return ferry__fail(-ENOMEM, "cuda: out of memory for %zu pinned bytes",
				   bytes);
	touch_pages(p, bytes, page);
	rc = CU(cuMemHostRegister, p, bytes, flags);
	if (rc) {
		free(p);
		return rc;
	}
	*out = p;
	return 0;
}

static void page_free(struct ferry__device *dev, void *ptr)
{
	if (!ptr)
		return;
	if (bind_ctx(dev) == 0)
		CU(cuMemHostUnregister, ptr);
	free(ptr);
}

static int cuda_pinned_alloc(struct ferry__device *dev, size_t len, void **out)
{
	return page_alloc(dev, len, CU_MEMHOSTREGISTER_PORTABLE, out);
}

static void cuda_pinned_free(struct ferry__device *dev, void *ptr, size_t len)
{
	page_free(dev, ptr);
}

/* ---- streams and copies ---------------------------------------------------- */

static int cuda_stream_create(struct ferry__device *dev, struct ferry__stream **out)
{
	CUstream s = NULL;
	int rc = bind_ctx(dev);

	*out = NULL;
	if (rc == 0)
		rc = CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
	if (rc == 0)
		*out = (struct ferry__stream *)(void *)s;
	return rc;
}

static void cuda_stream_destroy(struct ferry__device *dev, struct ferry__stream *s)
{
	if (!s || bind_ctx(dev) != 0)
		return;
	CU(cuStreamSynchronize, to_stream(s));
	CU(cuStreamDestroy, to_stream(s));
}

static int cuda_stream_wait_event(struct ferry__device *dev, struct ferry__stream *s,
				  struct ferry__event *ev)
{
	int rc = bind_ctx(dev);

	return rc ? rc : CU(cuStreamWaitEvent, to_stream(s), to_event(ev), 0);
}

/* A ferry__stream is the CUstream itself, so the caller's stream is one too. */
static int cuda_native_stream_wait(struct ferry__device *dev, void *native_stream,
				   struct ferry__event *ev)
{
	return cuda_stream_wait_event(dev, (struct ferry__stream *)native_stream, ev);
}

static int cuda_copy_async(struct ferry__device *dev, struct ferry__stream *s, void *dst,
			   const void *src, size_t len, enum ferry__copy_kind kind)
{
	CUstream cs = to_stream(s);
	int rc = bind_ctx(dev);

	if (rc || len == 0)
		return rc;
	switch (kind) {
	case FERRY__H2D:
	case FERRY__H2D_MAPPED: /* registered pages: DMA reads them, nothing faults */
		return CU(cuMemcpyHtoDAsync, to_dptr(dst), src, len, cs);
	case FERRY__D2D:
		return CU(cuMemcpyDtoDAsync, to_dptr(dst), to_dptr(src), len, cs);
	case FERRY__D2H:
		return CU(cuMemcpyDtoHAsync, dst, to_dptr(src), len, cs);
	}
	return ferry__fail(-EINVAL, "cuda: unknown copy kind %d", (int)kind);
}

#define BATCH_COPIES_MAX 64 /* copies one cuMemcpyBatchAsync call takes */

/* Up to BATCH_COPIES_MAX copies a driver call, read in stream order like
 * the single copies (the staging buffer is reused only after the event
 * recorded next). A driver without the call gets one call a copy. */
static int cuda_copy_batch_async(struct ferry__device *dev, struct ferry__stream *s,
				 const struct ferry__copy_op *ops, unsigned n,
				 enum ferry__copy_kind kind)
{
#if CUDA_VERSION >= 13000
	CUdeviceptr dsts[BATCH_COPIES_MAX], srcs[BATCH_COPIES_MAX];
	size_t sizes[BATCH_COPIES_MAX], first = 0;
	CUmemcpyAttributes attr = { .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM };
	int rc = bind_ctx(dev);
	if (!cu.p_cuMemcpyBatchAsync || rc)
		return rc ? rc : ferry__copy_each(dev, s, ops, n, kind);
	for (unsigned i = 0; rc == 0 && i < n;) {
		size_t m = 0;
		for (; i < n && m < BATCH_COPIES_MAX; i++) {
			if (!ops[i].len)
				continue;
			dsts[m] = to_dptr(ops[i].dst);
			srcs[m] = to_dptr(ops[i].src);
			sizes[m++] = ops[i].len;
		}
		if (m == 1)
			rc = cuda_copy_async(dev, s, (void *)dsts[0], (const void *)srcs[0], sizes[0],
					     kind);
		else if (m)
			rc = CU(cuMemcpyBatchAsync, dsts, srcs, sizes, m, &attr, &first, 1,
				to_stream(s));
	}
	return rc;
#else
	return ferry__copy_each(dev, s, ops, n, kind);
#endif
}

/* cuMemcpyHtoD from pageable memory and cuMemcpyDtoD may return before the
 * bytes land (CUDA's "API synchronization behavior"), and ferry's other streams
 * do not wait on the legacy one: so the legacy stream is synchronized after
 * them, and the copy is complete for every stream when this returns. */
static int cuda_copy_sync(struct ferry__device *dev, void *dst, const void *src,
			  size_t len, enum ferry__copy_kind kind)
{
	int rc = bind_ctx(dev);

	if (rc || len == 0)
		return rc;
	switch (kind) {
	case FERRY__H2D:
	case FERRY__H2D_MAPPED:
		rc = CU(cuMemcpyHtoD, to_dptr(dst), src, len);
		break;
	case FERRY__D2D:
		rc = CU(cuMemcpyDtoD, to_dptr(dst), to_dptr(src), len);
		break;
	case FERRY__D2H:
		return CU(cuMemcpyDtoH, dst, to_dptr(src), len);
	default:
		return ferry__fail(-EINVAL, "cuda: unknown copy kind %d", (int)kind);
	}
	return rc ? rc : CU(cuStreamSynchronize, NULL);
}

static int cuda_memset_async(struct ferry__device *dev, struct ferry__stream *s,
			     void *dst, int byte, size_t len)
{
	int rc = bind_ctx(dev);

	if (rc || len == 0)
		return rc;
	return CU(cuMemsetD8Async, to_dptr(dst), (unsigned char)byte, len, to_stream(s));
}

/* ---- events ---------------------------------------------------------------- */

/*
 * A thread that waits for an event (ferry__staging's waits: a buffer to come
 * back, a batch to land) busy-waits in cuEventSynchronize unless the event
 * was made with CU_EVENT_BLOCKING_SYNC, whatever the context's scheduling: a
 * core taken from the IO threads for the whole wait. On the H100 (2026-12-05)
 * that cost nothing measurable (the same CPU per byte as sleeping, and a
 * higher rate), so spinning is the default; FERRY_CUDA_WAIT=poll makes events
 * that block, a wait polling for WAIT_POLL_NS first (sparing a wake-up to the
 * waits that end within it), and block sleeps at once.
 */
#define WAIT_POLL_NS 20000

static int cuda_event_create(struct ferry__device *dev, struct ferry__event **out)
{
	unsigned flags = CU_EVENT_DISABLE_TIMING;
	CUevent ev = NULL;
	int rc = bind_ctx(dev);

	*out = NULL;
	if (to_cuda(dev)->wait != FERRY__WAIT_SPIN)
		flags |= CU_EVENT_BLOCKING_SYNC;
	if (rc == 0)
		rc = CU(cuEventCreate, &ev, flags);
	if (rc == 0)
		*out = (struct ferry__event *)(void *)ev;
	return rc;
}

static void cuda_event_destroy(struct ferry__device *dev, struct ferry__event *ev)
{
	if (ev && bind_ctx(dev) == 0)
		CU(cuEventDestroy, to_event(ev));
}

static int cuda_event_record(struct ferry__device *dev, struct ferry__event *ev,
			     struct ferry__stream *s)
{
	int rc = bind_ctx(dev);

	return rc ? rc : CU(cuEventRecord, to_event(ev), to_stream(s));
}

static int cuda_event_query(struct ferry__device *dev, struct ferry__event *ev)
{
	CUresult r;
	int rc = bind_ctx(dev);

	if (rc)
		return rc;
	r = cu.p_cuEventQuery(to_event(ev));
	return r == CUDA_ERROR_NOT_READY ? -EAGAIN : cu_check(r, "cuEventQuery");
}

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Polls ev for WAIT_POLL_NS: 0 when it completed, -EAGAIN when it did not,
 * or the error it ended with. */
static int poll_event(struct ferry__device *dev, struct ferry__event *ev)
{
	int64_t until = now_ns() + WAIT_POLL_NS;
	int rc;
	while ((rc = cuda_event_query(dev, ev)) == -EAGAIN && now_ns() < until)
		;
	return rc;
}

static int cuda_event_sync(struct ferry__device *dev, struct ferry__event *ev)
{
	int rc = bind_ctx(dev);

	if (rc)
		return rc;
	if (to_cuda(dev)->wait == FERRY__WAIT_POLL && (rc = poll_event(dev, ev)) != -EAGAIN)
		return rc;
	return CU(cuEventSynchronize, to_event(ev));
}

/* Waits for all that is queued on s as a wait for an event does
 * (FERRY_CUDA_WAIT): cuStreamSynchronize follows the context's scheduling,
 * which busy-waits where there are fewer contexts than cores. */
static int cuda_stream_sync(struct ferry__device *dev, struct ferry__stream *s)
{
	struct ferry__event *ev = NULL;
	int rc = bind_ctx(dev);

	if (rc == 0 && to_cuda(dev)->wait == FERRY__WAIT_SPIN)
		return CU(cuStreamSynchronize, to_stream(s));
	if (rc == 0)
		rc = cuda_event_create(dev, &ev);
	if (rc == 0)
		rc = cuda_event_record(dev, ev, s);
	if (rc == 0)
		rc = cuda_event_sync(dev, ev);
	cuda_event_destroy(dev, ev);
	return rc;
}

/* ---- test gates ------------------------------------------------------------ */

/*
 * The fallback gate: one thread polls the flag until the host sets it.
 * ld.volatile is a relaxed load at system scope, so it sees the host's store.
 */
static const char gate_spin_ptx[] =
	".version 7.0\n"
	".target sm_70\n"
	".address_size 64\n"
	"\n"
	".visible .entry ferry_gate_spin(.param .u64 flag_ptr)\n"
	"{\n"
	"	.reg .pred %p<2>;\n"
	"	.reg .b32 %r<2>;\n"
	"	.reg .b64 %rd<3>;\n"
	"\n"
	"	ld.param.u64 %rd1, [flag_ptr];\n"
	"	cvta.to.global.u64 %rd2, %rd1;\n"
	"WAIT:\n"
	"	ld.volatile.global.u32 %r1, [%rd2];\n"
	"	setp.ne.u32 %p1, %r1, 0;\n"
	"	@%p1 bra DONE;\n"
	"	nanosleep.u32 1000;\n"
	"	bra WAIT;\n"
	"DONE:\n"
	"	ret;\n"
	"}\n";

static int load_spin_kernel(struct cuda_device *d)
{
	int rc = 0;

	pthread_mutex_lock(&d->module_lock);
	if (!d->spin) {
		rc = CU(cuModuleLoadData, &d->module, gate_spin_ptx);
		if (rc == 0)
			rc = CU(cuModuleGetFunction, &d->spin, d->module, "ferry_gate_spin");
		if (rc && d->module) {
			CU(cuModuleUnload, d->module);
			d->module = NULL;
		}
	}
	pthread_mutex_unlock(&d->module_lock);
	return rc;
}

static int launch_spin_kernel(struct cuda_device *d, CUstream s, CUdeviceptr flag)
{
	void *args[] = { &flag };
	int rc = load_spin_kernel(d);

	return rc ? rc : CU(cuLaunchKernel, d->spin, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static int cuda_gate_create(struct ferry__device *dev, struct ferry__gate **out)
{
	struct cuda_gate *g;
	void *page;
	int rc;

	*out = NULL;
	g = calloc(1, sizeof *g);
	if (!g)
		return ferry__fail(-ENOMEM, "cuda: out of memory");
	rc = page_alloc(dev, sizeof *g->word,
			CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP, &page);
	if (rc == 0) {
		g->word = page;
		*g->word = 0;
		rc = CU(cuMemHostGetDevicePointer, &g->dptr, page, 0);
	}
	if (rc) {
		page_free(dev, g->word);
		free(g);
		return rc;
	}
	*out = (struct ferry__gate *)(void *)g;
	return 0;
}

/* Prefers cuStreamWaitValue32; the spin kernel where the driver lacks it. */
static int cuda_gate_hold(struct ferry__device *dev, struct ferry__stream *s,
			  struct ferry__gate *gate)
{
	struct cuda_device *d = to_cuda(dev);
	CUdeviceptr flag = to_gate(gate)->dptr;
	CUresult r;
	int rc = bind_ctx(dev);

	if (rc)
		return rc;
	if (d->gate_mode == GATE_KERNEL || !cu.p_cuStreamWaitValue32)
		return launch_spin_kernel(d, to_stream(s), flag);
	r = cu.p_cuStreamWaitValue32(to_stream(s), flag, 1, CU_STREAM_WAIT_VALUE_GEQ);
	if (r == CUDA_ERROR_NOT_SUPPORTED)
		return launch_spin_kernel(d, to_stream(s), flag);
	return cu_check(r, "cuStreamWaitValue32");
}

static int cuda_gate_open(struct ferry__device *dev, struct ferry__gate *gate)
{
	__atomic_store_n(to_gate(gate)->word, 1, __ATOMIC_RELEASE);
	return 0;
}

static void cuda_gate_destroy(struct ferry__device *dev, struct ferry__gate *gate)
{
	struct cuda_gate *g = to_gate(gate);

	if (!g)
		return;
	page_free(dev, g->word);
	free(g);
}

/* ---- conversions ----------------------------------------------------------- */

_Static_assert(FERRY__TP_MAX_MID == FERRY_MAX_DIMS - 2, "convert_params.h's middle axes");

#define CONVERT_MAX_BLOCKS 65536u /* blocks of one launch; they loop over the rest */
#define SWAP_THREADS 256u

/* log2 of 1, 2, 4, 8 or 16; -1 for any other size. */
static int log2_size(size_t n)
{
	switch (n) {
	case 1: return 0;
	case 2: return 1;
	case 4: return 2;
	case 8: return 3;
	case 16: return 4;
	default: return -1;
	}
}

/* Loads the PTX, asking the JIT for its error log so that a failure says why. */
static int load_convert_module(struct cuda_device *d)
{
	char log[768] = "", msg[512];
	CUjit_option opts[] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *vals[] = { log, (void *)(uintptr_t)sizeof(log) };
	CUresult r = cu.p_cuModuleLoadDataEx
			     ? cu.p_cuModuleLoadDataEx(&d->convert_module, ferry__convert_ptx, 2,
						       opts, vals)
			     : cu.p_cuModuleLoadData(&d->convert_module, ferry__convert_ptx);
	int rc = cu_check(r, "cuModuleLoadData (the conversion kernels)");
	if (rc && log[0]) {
		snprintf(msg, sizeof(msg), "%s", ferry_last_error());
		ferry__fail(rc, "%s; the JIT says: %s", msg, log);
	}
	return rc;
}

static int get_convert_functions(struct cuda_device *d)
{
	char name[32];
	int rc = 0;
	for (int k = 0; rc == 0 && k < 5; k++) {
		snprintf(name, sizeof(name), "ferry_transpose_%d", 1 << k);
		rc = CU(cuModuleGetFunction, &d->transpose[k], d->convert_module, name);
		if (rc == 0 && k > 0) {
			snprintf(name, sizeof(name), "ferry_swap_%d", 1 << k);
			rc = CU(cuModuleGetFunction, &d->swap[k], d->convert_module, name);
		}
	}
	return rc;
}

/* Loads the kernels, or remembers why they did not load. module_lock held. */
static void load_convert_locked(struct ferry__device *dev)
{
	struct cuda_device *d = to_cuda(dev);
	int rc = bind_ctx(dev);
	if (rc == 0)
		rc = load_convert_module(d);
	if (rc == 0)
		rc = get_convert_functions(d);
	if (rc == 0) {
		d->convert_state = 1;
		return;
	}
	snprintf(d->convert_why, sizeof(d->convert_why), "%s", ferry_last_error());
	if (d->convert_module)
		cu.p_cuModuleUnload(d->convert_module);
	d->convert_module = NULL;
	d->convert_state = rc;
}

static int cuda_convert_ready(struct ferry__device *dev, char *how, size_t how_len)
{
	struct cuda_device *d = to_cuda(dev);
	pthread_mutex_lock(&d->module_lock);
	if (d->convert_state == 0)
		load_convert_locked(dev);
	int rc = d->convert_state < 0 ? d->convert_state : 0;
	pthread_mutex_unlock(&d->module_lock);
	if (rc < 0)
		return ferry__fail(rc, "%s", d->convert_why);
	if (how)
		snprintf(how, how_len, "CUDA kernels (byte swap, tiled transpose: PTX the driver "
			 "compiled at the first conversion)%s",
			 d->pools ? "; transposes read from scratch memory in stream order, up to "
				    "64 MiB of it kept for the next"
				  : "; scratch memory is freed after a stream sync");
	return 0;
}

/* ---- read-only registrations of file mappings ------------------------------ */

/* The registrar's context never launches a kernel: its stack, printf FIFO and
 * malloc heap are lowered to what the driver accepts (each refusal only
 * leaves memory taken; on an H100 the stack gave back 264 MiB, the others
 * nothing). The new context is current. */
static void lower_map_ctx_limits(void)
{
	static const CUlimit limits[] = {CU_LIMIT_STACK_SIZE, CU_LIMIT_PRINTF_FIFO_SIZE,
					 CU_LIMIT_MALLOC_HEAP_SIZE};
	if (!cu.p_cuCtxSetLimit)
		return;
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		cu.p_cuCtxSetLimit(limits[i], 0);
}

/* Creating a context pushes it on the calling thread's stack: popped at once,
 * so that the stack is as the caller left it. module_lock held. */
static int create_map_ctx_locked(struct cuda_device *d)
{
	CUcontext popped;
	if (!cu.p_cuCtxCreate_v2 || !cu.p_cuCtxDestroy || !cu.p_cuCtxPopCurrent)
		return ferry__fail(-FERRY_EUNSUPPORTED, "cuda: libcuda.so.1 lacks cuCtxCreate_v2, "
				   "cuCtxPopCurrent_v2 or cuCtxDestroy_v2 (a context for registrations)");
	int rc = CU(cuCtxCreate_v2, &d->map_ctx, 0, d->dev);
	if (rc == 0) {
		lower_map_ctx_limits();
		CU(cuCtxPopCurrent, &popped);
	}
	return rc;
}

/* Asks attribute 113 whether the device reads host memory registered
 * read-only; remembers which call refused. module_lock held. */
static void probe_map_locked(struct ferry__device *dev)
{
	struct cuda_device *d = to_cuda(dev);
	int yes = 0, rc = bind_ctx(dev);
#ifdef CU_MEMHOSTREGISTER_READ_ONLY
	if (rc == 0)
		rc = CU(cuDeviceGetAttribute, &yes,
			CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, d->dev);
	if (rc == 0 && !yes)
		rc = ferry__fail(-FERRY_EUNSUPPORTED, "cuda: cuDeviceGetAttribute("
				 "CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED) says 0: "
				 "the device cannot read memory registered read-only");
#else
	if (rc == 0)
		rc = ferry__fail(-FERRY_EUNSUPPORTED, "cuda: built with a cuda.h older than 11.1 "
				 "(no CU_MEMHOSTREGISTER_READ_ONLY)");
#endif
	if (rc == 0)
		rc = create_map_ctx_locked(d);
	d->map_state = rc < 0 ? rc : 1;
	if (rc < 0)
		snprintf(d->map_why, sizeof(d->map_why), "%s", ferry_last_error());
}

static int cuda_map_ready(struct ferry__device *dev, char *how, size_t how_len)
{
	struct cuda_device *d = to_cuda(dev);
	pthread_mutex_lock(&d->module_lock);
	if (d->map_state == 0)
		probe_map_locked(dev);
	int rc = d->map_state < 0 ? d->map_state : 0;
	pthread_mutex_unlock(&d->module_lock);
	if (rc < 0)
		return ferry__fail(rc, "%s", d->map_why);
	if (how)
		snprintf(how, how_len, "cuMemHostRegister(CU_MEMHOSTREGISTER_READ_ONLY | "
			 "CU_MEMHOSTREGISTER_PORTABLE) of the mapping in a context of ferry's own, "
			 "then cuMemcpyHtoDAsync straight from the page cache");
	return 0;
}

/*
 * Registrations are made in a context of their own, never the primary one: a
 * registration holds its context's lock for tens of ms a GiB, and every copy
 * launched in that context waits for it. In a second context the primary's
 * launches run on (tests/gpu/diag/register_ctx.c on an H100: copies 54 GB/s
 * beside a registration against 4 in the same context, the longest launch
 * 0.03 ms against 68). Portable registrations, so the primary context copies
 * out of them. map_ready makes the context, before any copy (made mid-epoch it
 * held launches up); it costs about 260 MiB of device memory with its stack
 * lowered (524 without). The calling thread's current context is given back
 * after each call.
 */
static int enter_map_ctx(struct cuda_device *d, CUcontext *prev)
{
	*prev = NULL;
	cu.p_cuCtxGetCurrent(prev);
	return CU(cuCtxSetCurrent, d->map_ctx);
}

static void leave_map_ctx(CUcontext prev)
{
	cu.p_cuCtxSetCurrent(prev);
}

/* Whole pages: a mapping's last page is mapped whole (past the end of file it
 * reads zeros), and the driver pins pages. */
static int cuda_map_register(struct ferry__device *dev, void *ptr, size_t len)
{
	CUcontext prev;
	int rc = enter_map_ctx(to_cuda(dev), &prev);
	len = ferry__page_round(len);
#ifdef CU_MEMHOSTREGISTER_READ_ONLY
	if (rc == 0)
		rc = CU(cuMemHostRegister, ptr, len,
			CU_MEMHOSTREGISTER_READ_ONLY | CU_MEMHOSTREGISTER_PORTABLE);
#else
	if (rc == 0)
		rc = ferry__fail(-FERRY_EUNSUPPORTED, "cuda: no CU_MEMHOSTREGISTER_READ_ONLY");
#endif
	leave_map_ctx(prev);
	return rc;
}

static void cuda_map_unregister(struct ferry__device *dev, void *ptr, size_t len)
{
	CUcontext prev;
	if (enter_map_ctx(to_cuda(dev), &prev) == 0)
		CU(cuMemHostUnregister, ptr);
	leave_map_ctx(prev);
}

static unsigned blocks_for(uint64_t units)
{
	return units < CONVERT_MAX_BLOCKS ? (unsigned)units : CONVERT_MAX_BLOCKS;
}

/* The transpose of an array whose n >= 2 axes (all longer than 1) are dims. */
static int launch_transpose(struct cuda_device *d, CUstream s, void *dst, const void *src,
			    const uint64_t *dims, int n, size_t itemsize, unsigned part)
{
	struct ferry__tp_params p = { .d0 = dims[0], .dl = dims[n - 1], .nmid = (unsigned)n - 2,
				      .mid_count = 1, .part = part };
	CUdeviceptr dp = to_dptr(dst), sp = to_dptr(src);
	void *args[] = { &dp, &sp, &p };
	for (int k = 0; k < n - 2; k++) {
		p.mid[k] = dims[k + 1];
		p.fstride[k] = p.mid_count;
		p.mid_count *= dims[k + 1];
	}
	p.tiles0 = (p.d0 + FERRY__TP_TILE - 1) / FERRY__TP_TILE;
	p.tilesl = (p.dl + FERRY__TP_TILE - 1) / FERRY__TP_TILE;
	p.tiles = p.tiles0 * p.tilesl * p.mid_count;
	return CU(cuLaunchKernel, d->transpose[log2_size(itemsize)], blocks_for(p.tiles), 1, 1,
		  FERRY__TP_TILE, FERRY__TP_ROWS, 1, 0, s, args, NULL);
}

/* Reverses each part-byte part of count items of itemsize bytes. */
static int launch_swap(struct cuda_device *d, CUstream s, void *dst, const void *src,
		       uint64_t count, size_t itemsize, unsigned part)
{
	unsigned long long n = count * (itemsize / part);
	CUdeviceptr dp = to_dptr(dst), sp = to_dptr(src);
	void *args[] = { &dp, &sp, &n };
	return CU(cuLaunchKernel, d->swap[log2_size(part)],
		  blocks_for((n + SWAP_THREADS - 1) / SWAP_THREADS), 1, 1, SWAP_THREADS, 1, 1, 0, s,
		  args, NULL);
}

static int check_convert(const struct ferry__convert *c, const void *dst, const void *src)
{
	size_t align = ferry__convert_align(c->itemsize);
	if (log2_size(c->itemsize) < 0 || c->ndim < 0 || c->ndim > FERRY_MAX_DIMS)
		return ferry__fail(-EINVAL, "cuda: cannot convert %zu-byte items of rank %d",
				   c->itemsize, c->ndim);
	if ((uintptr_t)dst % align || (uintptr_t)src % align)
		return ferry__fail(-EINVAL, "cuda: a conversion's buffers must be aligned to %zu "
				   "bytes", align);
	return 0;
}

/* The axes of c longer than 1 into dims (their number), and the item count. */
static int squeeze_axes(const struct ferry__convert *c, uint64_t *dims, uint64_t *count)
{
	int n = 0;
	*count = 1;
	for (int i = 0; i < c->ndim; i++) {
		*count *= (uint64_t)c->shape[i];
		if (c->shape[i] > 1)
			dims[n++] = (uint64_t)c->shape[i];
	}
	return n;
}

static int cuda_convert_async(struct ferry__device *dev, struct ferry__stream *s, void *dst,
			      const void *src, const struct ferry__convert *c)
{
	uint64_t dims[FERRY_MAX_DIMS], count;
	unsigned part = c->swap ? (unsigned)(c->is_complex ? c->itemsize / 2 : c->itemsize) : 0;
	int rc = check_convert(c, dst, src);
	if (rc == 0)
		rc = cuda_convert_ready(dev, NULL, 0);
	if (rc == 0)
		rc = bind_ctx(dev);
	if (rc < 0)
		return rc;
	int n = squeeze_axes(c, dims, &count);
	if (count == 0)
		return 0;
	part = part > 1 ? part : 0; /* one-byte parts read the same either way */
	if (c->fortran && n >= 2)
		return dst == src ? ferry__fail(-EINVAL, "cuda: a transpose cannot run in place")
				  : launch_transpose(to_cuda(dev), to_stream(s), dst, src, dims, n,
						     c->itemsize, part);
	if (part)
		return launch_swap(to_cuda(dev), to_stream(s), dst, src, count, c->itemsize, part);
	return dst == src ? 0 : CU(cuMemcpyDtoDAsync, to_dptr(dst), to_dptr(src),
				   count * c->itemsize, to_stream(s));
}

#if CUDA_VERSION >= 11020
/*
 * ferry's own pool of scratch memory: it keeps up to SCRATCH_KEEP bytes mapped
 * across synchronizations (a pool's default threshold, 0, would release and
 * map the scratch of every conversion again). NULL where it cannot be made:
 * then the device's default pool serves. module_lock guards its making.
 */
#define SCRATCH_KEEP ((cuuint64_t)64 << 20)

static CUmemoryPool scratch_pool(struct cuda_device *d)
{
	pthread_mutex_lock(&d->module_lock);
	if (!d->pool_tried && cu.p_cuMemPoolCreate && cu.p_cuMemPoolSetAttribute &&
	    cu.p_cuMemPoolDestroy && cu.p_cuMemAllocFromPoolAsync) {
		CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
					 .handleTypes = CU_MEM_HANDLE_TYPE_NONE,
					 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE,
						       .id = d->ordinal } };
		CUmemoryPool pool = NULL;
		cuuint64_t keep = SCRATCH_KEEP;
		if (cu.p_cuMemPoolCreate(&pool, &props) == CUDA_SUCCESS &&
		    cu.p_cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep) !=
			    CUDA_SUCCESS) {
			cu.p_cuMemPoolDestroy(pool);
			pool = NULL;
		}
		d->scratch_pool = pool;
	}
	d->pool_tried = 1;
	pthread_mutex_unlock(&d->module_lock);
	return (CUmemoryPool)d->scratch_pool;
}

/* From ferry's pool, else the default one; in s's order either way. */
static int alloc_in_order(struct cuda_device *d, CUstream s, size_t len, CUdeviceptr *p)
{
	CUmemoryPool pool = scratch_pool(d);
	if (pool && cu.p_cuMemAllocFromPoolAsync(p, len, pool, s) == CUDA_SUCCESS)
		return 0;
	return CU(cuMemAllocAsync, p, len, s);
}
#endif

/* Stream-ordered where the device has memory pools, else plain cuMemAlloc. */
static int cuda_scratch_alloc(struct ferry__device *dev, struct ferry__stream *s, size_t len,
			      void **out)
{
	CUdeviceptr p = 0;
	int rc = bind_ctx(dev);
	*out = NULL;
#if CUDA_VERSION >= 11020
	if (rc == 0 && to_cuda(dev)->pools)
		rc = alloc_in_order(to_cuda(dev), to_stream(s), len ? len : 1, &p);
	else
#endif
	if (rc == 0)
		rc = CU(cuMemAlloc, &p, len ? len : 1);
	if (rc == 0)
		*out = (void *)(uintptr_t)p;
	return rc;
}

static void cuda_scratch_free(struct ferry__device *dev, struct ferry__stream *s, void *ptr)
{
	if (!ptr || bind_ctx(dev) != 0)
		return;
#if CUDA_VERSION >= 11020
	if (to_cuda(dev)->pools && CU(cuMemFreeAsync, to_dptr(ptr), to_stream(s)) == 0)
		return;
#endif
	CU(cuStreamSynchronize, to_stream(s)); /* then nothing queued can still use it */
	CU(cuMemFree, to_dptr(ptr));
}

const struct ferry__device_ops ferry__device_cuda = {
	.name = "cuda",
	.flags = FERRY__DEV_GPU_MEMORY | FERRY__DEV_CONVERT | FERRY__DEV_MAP_BESIDE,
	.open = cuda_open,
	.close = cuda_close,
	.describe = cuda_describe,
	.mem_alloc = cuda_mem_alloc,
	.mem_free = cuda_mem_free,
	.pinned_alloc = cuda_pinned_alloc,
	.pinned_free = cuda_pinned_free,
	.stream_create = cuda_stream_create,
	.stream_destroy = cuda_stream_destroy,
	.stream_sync = cuda_stream_sync,
	.stream_wait_event = cuda_stream_wait_event,
	.native_stream_wait = cuda_native_stream_wait,
	.copy_async = cuda_copy_async,
	.copy_batch_async = cuda_copy_batch_async,
	.copy_sync = cuda_copy_sync,
	.memset_async = cuda_memset_async,
	.event_create = cuda_event_create,
	.event_destroy = cuda_event_destroy,
	.event_record = cuda_event_record,
	.event_query = cuda_event_query,
	.event_sync = cuda_event_sync,
	.gate_create = cuda_gate_create,
	.gate_hold = cuda_gate_hold,
	.gate_open = cuda_gate_open,
	.gate_destroy = cuda_gate_destroy,
	.make_current = bind_ctx,
	.convert_ready = cuda_convert_ready,
	.convert_async = cuda_convert_async,
	.scratch_alloc = cuda_scratch_alloc,
	.scratch_free = cuda_scratch_free,
	.map_ready = cuda_map_ready,
	.map_register = cuda_map_register,
	.map_unregister = cuda_map_unregister,
};

#endif /* FERRY_HAVE_CUDA_H */
