/*
 * The device layer: memory, streams, asynchronous copies, events and test gates.
 *
 * Two backends implement one table of operations: CUDA (the driver API loaded
 * with dlopen at run time) and host (host memory, one worker thread per stream).
 * The staging engine and everything above it see only this table.
 *
 * Unless a comment says otherwise, every operation returns 0 on success or a
 * negative error code (-errno or FERRY_E*), and may be called from any thread.
 */
#ifndef FERRY_DEVICE_H
#define FERRY_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "ferry.h"

struct ferry__stream; /* on CUDA: the CUstream itself */
struct ferry__event;
struct ferry__gate;

enum ferry__copy_kind {
	FERRY__H2D, /* host (pinned or pageable) to device */
	FERRY__D2D, /* device to device */
	FERRY__D2H, /* device to host */
	/* Host to device out of a read-only file mapping (map_register): the
	 * file may shrink under it. Such a copy never faults the process: CUDA's
	 * DMA reads the registered (pinned) pages; the host backend copies with
	 * process_vm_readv, where a page past the end of the file is EFAULT, not
	 * SIGBUS. A page that is gone fails the copy with -FERRY_ECHANGED,
	 * reported like any failed asynchronous copy: by the event recorded next
	 * on its stream (event_query, event_sync). */
	FERRY__H2D_MAPPED,
};

/* Where staging memory lives, which decides the copy out of it. */
enum ferry__placement {
	FERRY__STAGE_PINNED, /* pinned host memory: copies are host-to-device */
	FERRY__STAGE_DEVICE, /* device memory: copies are device-to-device */
};

/* Every backend's device struct starts with this. */
struct ferry__device {
	const struct ferry__device_ops *ops;
};

/* How a thread waits for the device's copies to land (FERRY_CUDA_WAIT). */
enum ferry__wait_mode {
	FERRY__WAIT_SPIN,  /* poll until done (CUDA's default): a core busy all the wait */
	FERRY__WAIT_POLL,  /* poll for a few microseconds, then sleep until the device signals */
	FERRY__WAIT_BLOCK, /* sleep until the device signals */
};

/* What a device is opened with: plain values the context resolved. */
struct ferry__device_params {
	int ordinal;      /* GPU number */
	int gate_kernel;  /* 1: test gates spin a kernel even where the driver can wait on memory */
	enum ferry__wait_mode wait;
};

enum {
	/* Device memory is GPU memory, which GPUDirect Storage (cuFile) can read into. */
	FERRY__DEV_GPU_MEMORY = 1,
	/* The device converts payloads itself: convert_ready, convert_async,
	 * scratch_alloc and scratch_free are set. */
	FERRY__DEV_CONVERT = 2,
	/* A registration (map_register) leaves the copies' launches alone: the
	 * registrar need not hold the lanes' launches while it runs. */
	FERRY__DEV_MAP_BESIDE = 4,
};

/*
 * A conversion of an array as a .npy file holds it into C order and the host's
 * byte order: plain values, so that the device layer needs nothing of npy/.
 */
struct ferry__convert {
	size_t itemsize;  /* bytes an item: 1, 2, 4, 8 or 16 */
	int is_complex;   /* a swap reverses each half of an item on its own */
	int swap;         /* reverse the bytes of each item (or half) */
	int fortran;      /* the source is in Fortran order: write C order */
	int ndim;         /* 0..FERRY_MAX_DIMS */
	int64_t shape[FERRY_MAX_DIMS];
};

/* What convert_async needs of dst and src: each aligned to this many bytes
 * (an item, or 8 bytes for 16-byte items: a complex128's alignment). */
static inline size_t ferry__convert_align(size_t itemsize)
{
	return itemsize < 8 ? itemsize : 8;
}

/* One copy of a copy_batch_async call. */
struct ferry__copy_op {
	void *dst;
	const void *src;
	size_t len;
};

struct ferry__device_ops {
	const char *name; /* "cuda" or "host" */
	unsigned flags;   /* FERRY__DEV_* */

	/* Opens the device p names. -FERRY_ENODEVICE when there is none. */
	int (*open)(const struct ferry__device_params *p, struct ferry__device **out);
	void (*close)(struct ferry__device *dev);
	/* Writes one line describing the device and driver into buf. */
	int (*describe)(struct ferry__device *dev, char *buf, size_t len);

	/* Device memory (on the host backend: ordinary host memory). */
	int (*mem_alloc)(struct ferry__device *dev, size_t len, void **out);
	void (*mem_free)(struct ferry__device *dev, void *ptr);
	/* Page-aligned pinned host memory, usable for O_DIRECT reads. */
	int (*pinned_alloc)(struct ferry__device *dev, size_t len, void **out);
	void (*pinned_free)(struct ferry__device *dev, void *ptr, size_t len);

	int (*stream_create)(struct ferry__device *dev, struct ferry__stream **out);
	/* Waits for the stream's work, then frees it. */
	void (*stream_destroy)(struct ferry__device *dev, struct ferry__stream *s);
	int (*stream_sync)(struct ferry__device *dev, struct ferry__stream *s);
	/* Makes s wait, without blocking the host, until ev has completed. */
	int (*stream_wait_event)(struct ferry__device *dev, struct ferry__stream *s,
				 struct ferry__event *ev);
	/* Makes a caller's native stream (a CUstream; NULL: the legacy default
	 * stream) wait for ev without blocking the host; a device without native
	 * streams (host) waits on the host instead. */
	int (*native_stream_wait)(struct ferry__device *dev, void *native_stream,
				  struct ferry__event *ev);

	/* Queues a copy of len bytes on s; it runs after everything queued before. */
	int (*copy_async)(struct ferry__device *dev, struct ferry__stream *s, void *dst,
			  const void *src, size_t len, enum ferry__copy_kind kind);
	/* Queues ops[0..n) (copies of one kind) on s, as n copy_async calls
	 * would, in one call: the copies run after everything queued before, in
	 * any order among themselves (their destinations never overlap). NULL
	 * where the device has no such call: the caller loops on copy_async. */
	int (*copy_batch_async)(struct ferry__device *dev, struct ferry__stream *s,
				const struct ferry__copy_op *ops, unsigned n,
				enum ferry__copy_kind kind);
	/* Synchronous copy: complete for every stream when it returns (converted
	 * payloads, fills, tests, --dump, --verify). */
	int (*copy_sync)(struct ferry__device *dev, void *dst, const void *src,
			 size_t len, enum ferry__copy_kind kind);
	/* Queues a fill of len bytes of device memory with byte value. */
	int (*memset_async)(struct ferry__device *dev, struct ferry__stream *s, void *dst,
			    int byte, size_t len);

	int (*event_create)(struct ferry__device *dev, struct ferry__event **out);
	void (*event_destroy)(struct ferry__device *dev, struct ferry__event *ev);
	/* Records ev at the current end of s; a later query reports this record. */
	int (*event_record)(struct ferry__device *dev, struct ferry__event *ev,
			    struct ferry__stream *s);
	/* 0 when complete, -EAGAIN when not yet, another negative code on error. */
	int (*event_query)(struct ferry__device *dev, struct ferry__event *ev);
	/* Blocks until ev has completed. */
	int (*event_sync)(struct ferry__device *dev, struct ferry__event *ev);

	/*
	 * Test gates. gate_hold queues a point on s that stalls the stream until
	 * gate_open is called; a gate opens once and is then spent.
	 */
	int (*gate_create)(struct ferry__device *dev, struct ferry__gate **out);
	int (*gate_hold)(struct ferry__device *dev, struct ferry__stream *s,
			 struct ferry__gate *g);
	int (*gate_open)(struct ferry__device *dev, struct ferry__gate *g);
	void (*gate_destroy)(struct ferry__device *dev, struct ferry__gate *g);

	/* Optional (may be NULL): makes the device's context current on the
	 * calling thread, for libraries such as cuFile that use it implicitly. */
	int (*make_current)(struct ferry__device *dev);

	/*
	 * Conversions on the device (FERRY__DEV_CONVERT; NULL otherwise).
	 *
	 * convert_ready prepares them at its first call (CUDA loads its kernels)
	 * and says whether convert_async can run: 0, or a negative code with a
	 * message saying why not (then every later call says the same, and the
	 * caller converts on the host). One line into how (may be NULL) says
	 * what does the work.
	 */
	int (*convert_ready)(struct ferry__device *dev, char *how, size_t how_len);
	/* Queues on s the conversion c of the array at src (device memory, as
	 * the file holds it) into dst: it runs after everything queued on s
	 * before it. dst == src converts in place, when c->fortran is 0 or the
	 * array has at most one axis longer than 1; otherwise they must not
	 * overlap. Both are aligned to ferry__convert_align(c->itemsize). */
	int (*convert_async)(struct ferry__device *dev, struct ferry__stream *s, void *dst,
			     const void *src, const struct ferry__convert *c);
	/* Device memory in the order of s, so that an asynchronous conversion
	 * needs no host wait: usable by work queued on s after scratch_alloc,
	 * and freed once s reaches the point where scratch_free was called
	 * (where the free cannot be queued, scratch_free waits for s and frees
	 * it at once). */
	int (*scratch_alloc)(struct ferry__device *dev, struct ferry__stream *s, size_t len,
			     void **out);
	void (*scratch_free)(struct ferry__device *dev, struct ferry__stream *s, void *ptr);

	/*
	 * Read-only registrations of file mappings, for FERRY__H2D_MAPPED copies
	 * (load/mapped.c keeps them across loads; docs/design.md, "Zero copy").
	 * NULL where the backend has none (then no file is ever mapped).
	 *
	 * map_ready says at its first call whether the device can read host
	 * memory registered read-only (CUDA: device attribute 113,
	 * CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED; host: always)
	 * and caches the answer: 0, or a negative code with a message saying
	 * which call refused (every later call says the same). One line into how
	 * (may be NULL) says how copies out of a mapping run.
	 */
	int (*map_ready)(struct ferry__device *dev, char *how, size_t how_len);
	/* Registers [ptr, ptr + len) (page aligned, a PROT_READ mapping) for
	 * device reads. Costs about 30 ms a GiB on CUDA and serializes across
	 * threads: never on a load's path. */
	int (*map_register)(struct ferry__device *dev, void *ptr, size_t len);
	/* Undoes map_register; no copy out of the range may be in flight. */
	void (*map_unregister)(struct ferry__device *dev, void *ptr, size_t len);
};

/* Queues ops[0..n) with one copy_async call each: copy_batch_async where a
 * device (or its driver) has no call for many. */
static inline int ferry__copy_each(struct ferry__device *dev, struct ferry__stream *s,
				   const struct ferry__copy_op *ops, unsigned n,
				   enum ferry__copy_kind kind)
{
	int rc = 0;
	for (unsigned i = 0; rc == 0 && i < n; i++)
		rc = dev->ops->copy_async(dev, s, ops[i].dst, ops[i].src, ops[i].len, kind);
	return rc;
}

extern const struct ferry__device_ops ferry__device_host;
extern const struct ferry__device_ops ferry__device_cuda;

/*
 * Opens the device name says: "cuda", "host", or "auto" (CUDA when libcuda
 * loads and has a device, else host; a GPU number that does not exist is
 * -FERRY_ECONFIG, also under auto). Returns 0 or a negative code; on failure
 * ferry_last_error() says why.
 */
int ferry__device_open(const char *name, const struct ferry__device_params *p,
		       struct ferry__device **out);

/* The table named name ("cuda" or "host"), or NULL. */
const struct ferry__device_ops *ferry__device_find(const char *name);

#endif
