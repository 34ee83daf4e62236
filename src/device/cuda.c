/*
 * The CUDA backend of the device layer: the driver API, loaded at run time with
 * dlopen("libcuda.so.1") so that one build runs with or without a GPU.
 *
 * Streams and events are the driver's own handles cast to the opaque types;
 * only the device and test gates have structs of their own.
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

#include <cuda.h>

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
	OPT(cuStreamWaitValue32)

#define CU_STR_(x) #x
#define CU_STR(x) CU_STR_(x)
#define CU_MEMBER(fn) __typeof__(&fn) p_##fn;

static struct {
	int ok;        /* 1 once every required symbol was found */
	char why[256]; /* why not, otherwise */
	CU_SYMBOLS(CU_MEMBER, CU_MEMBER)
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
	CUcontext ctx;
	enum gate_mode gate_mode;
	pthread_mutex_t module_lock; /* guards the lazy load of the gate kernel */
	CUmodule module;
	CUfunction spin;
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
	d->gate_mode = mode;
	rc = CU(cuDevicePrimaryCtxRetain, &d->ctx, dev);
	if (rc) {
		free(d);
		return rc;
	}
	pthread_mutex_init(&d->module_lock, NULL);
	*out = &d->base;
	return 0;
}

static void cuda_close(struct ferry__device *dev)
{
	struct cuda_device *d = to_cuda(dev);

	if (!d)
		return;
	if (d->module && bind_ctx(dev) == 0)
		CU(cuModuleUnload, d->module);
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
	if (len > SIZE_MAX - page)
		return ferry__fail(-ENOMEM, "cuda: pinned allocation of %zu bytes", len);
	bytes = (len ? len + page - 1 : page) / page * page;
	rc = bind_ctx(dev);
	if (rc)
		return rc;
	if (posix_memalign(&p, page, bytes) != 0)
		return ferry__fail(-ENOMEM, "cuda: out of memory for %zu pinned bytes",
				   bytes);
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

static int cuda_stream_sync(struct ferry__device *dev, struct ferry__stream *s)
{
	int rc = bind_ctx(dev);

	return rc ? rc : CU(cuStreamSynchronize, to_stream(s));
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
		return CU(cuMemcpyHtoDAsync, to_dptr(dst), src, len, cs);
	case FERRY__D2D:
		return CU(cuMemcpyDtoDAsync, to_dptr(dst), to_dptr(src), len, cs);
	case FERRY__D2H:
		return CU(cuMemcpyDtoHAsync, dst, to_dptr(src), len, cs);
	}
	return ferry__fail(-EINVAL, "cuda: unknown copy kind %d", (int)kind);
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

static int cuda_event_create(struct ferry__device *dev, struct ferry__event **out)
{
	CUevent ev = NULL;
	int rc = bind_ctx(dev);

	*out = NULL;
	if (rc == 0)
		rc = CU(cuEventCreate, &ev, CU_EVENT_DISABLE_TIMING);
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

static int cuda_event_sync(struct ferry__device *dev, struct ferry__event *ev)
{
	int rc = bind_ctx(dev);

	return rc ? rc : CU(cuEventSynchronize, to_event(ev));
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

const struct ferry__device_ops ferry__device_cuda = {
	.name = "cuda",
	.flags = FERRY__DEV_GPU_MEMORY,
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
};

#endif /* FERRY_HAVE_CUDA_H */
