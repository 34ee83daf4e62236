/*
 * The host device: the device interface with host memory, so every engine,
 * loader and reader test runs on machines without a GPU.
 *
 * Each stream is a worker thread that runs its queue in order. An event
 * completes when the worker passes the point where it was recorded; a gate
 * stalls the worker until a test opens it. One mutex guards all queues, events
 * and gates of a device; workers never hold it while copying. Conversions run
 * on the worker too, with the host conversions of base/convert.c, in order
 * with the stream's copies, as a GPU's kernels run in order with its copies.
 *
 * A copy out of a file mapping (FERRY__H2D_MAPPED) reads with process_vm_readv
 * on this process, so that a page past the end of a file that shrank is
 * EFAULT rather than SIGBUS; its failure is kept on the stream and handed to
 * the next event that completes there, as a GPU reports a failed copy.
 */
#include "device/device.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/base.h"

enum op_kind {
	OP_COPY, OP_COPY_MAPPED, OP_MEMSET, OP_CONVERT, OP_FREE, OP_EVENT, OP_WAIT_EVENT, OP_GATE, OP_EXIT
};

struct op {
	enum op_kind kind;
	struct op *next;
	void *dst;
	const void *src;
	size_t len;
	int byte;
	struct ferry__event *event;
	uint64_t generation; /* OP_EVENT: the record; OP_WAIT_EVENT: the one to wait for */
	struct ferry__gate *gate;
	struct ferry__convert *conv; /* OP_CONVERT: its own copy, freed with the op */
};

struct host_device {
	struct ferry__device base;
	pthread_mutex_t lock;
	pthread_cond_t progress; /* an event completed, a gate opened, or an op finished */
};

struct ferry__stream {
	struct host_device *dev;
	pthread_t worker;
	pthread_cond_t work; /* the queue is no longer empty */
	struct op *head, *tail;
	uint64_t queued, done;
	struct op *exit_op; /* allocated up front: destroy cannot fail */
	int error;          /* a mapped copy failed since the last event passed */
};

struct ferry__event {
	uint64_t recorded;  /* generation of the latest record */
	uint64_t completed; /* newest generation a worker has passed */
	unsigned queued;    /* queued records and waits that still use it */
	int error;          /* what failed on its stream before its latest record passed */
	int destroyed;      /* destroyed while queued: the last of those frees it */
};

struct ferry__gate {
	int open;
};

static struct host_device *host(struct ferry__device *dev)
{
	return (struct host_device *)dev;
}

static int host_open(const struct ferry__device_params *p, struct ferry__device **out)
{
	struct host_device *d = calloc(1, sizeof(*d));
	if (!d)
		return ferry__fail(-ENOMEM, "host device: out of memory");
	d->base.ops = &ferry__device_host;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->progress, NULL);
	*out = &d->base;
	return 0;
}

static void host_close(struct ferry__device *dev)
{
	struct host_device *d = host(dev);
	pthread_cond_destroy(&d->progress);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static int host_describe(struct ferry__device *dev, char *buf, size_t len)
{
	snprintf(buf, len, "host: host memory, one worker thread per stream (no GPU)");
	return 0;
}

static int host_mem_alloc(struct ferry__device *dev, size_t len, void **out)
{
	*out = ferry__aligned_alloc(ferry__page_size(), len);
	return *out ? 0 : ferry__fail(-ENOMEM, "host device: cannot allocate %zu bytes", len);
}

static void host_mem_free(struct ferry__device *dev, void *ptr)
{
	free(ptr);
}

static void host_pinned_free(struct ferry__device *dev, void *ptr, size_t len)
{
	free(ptr);
}

/* The conversion c of src into dst, on the CPU. */
static void convert_on_cpu(void *dst, const void *src, const struct ferry__convert *c)
{
	uint64_t count = 1;
	for (int i = 0; i < c->ndim; i++)
		count *= (uint64_t)c->shape[i];
	if (c->fortran && dst != src)
		ferry__fortran_to_c(dst, src, c->ndim, c->shape, c->itemsize);
	else if (dst != src)
		memmove(dst, src, count * c->itemsize);
	if (c->swap)
		ferry__byteswap(dst, count, c->itemsize, c->is_complex);
}

/* Copies len bytes of this process's memory at src (a file mapping) to dst
 * through the kernel: a page past the end of the file is EFAULT, not a
 * SIGBUS. Returns 0, or -FERRY_ECHANGED when a page is gone. */
static int copy_from_mapping(void *dst, const void *src, size_t len)
{
	size_t done = 0;
	while (done < len) {
		struct iovec to = { (char *)dst + done, len - done };
		struct iovec from = { (char *)src + done, len - done };
		ssize_t got = process_vm_readv(getpid(), &to, 1, &from, 1, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return errno == EFAULT || got == 0 ? -FERRY_ECHANGED : -errno;
		done += (size_t)got;
	}
	return 0;
}

/* An op that moves or changes data: run without the lock. Returns 0 or the
 * error of a mapped copy. */
static int run_data_op(struct op *op)
{
	switch (op->kind) {
	case OP_COPY: /* an empty output's copy may name no memory (NULL): nothing to move */
		if (op->len)
			memmove(op->dst, op->src, op->len);
		break;
	case OP_COPY_MAPPED: return copy_from_mapping(op->dst, op->src, op->len);
	case OP_MEMSET:
		if (op->len)
			memset(op->dst, op->byte, op->len);
		break;
	case OP_CONVERT: convert_on_cpu(op->dst, op->src, op->conv); break;
	case OP_FREE: free(op->dst); break;
	default: break;
	}
	return 0;
}

/* Runs one op outside the lock; the lock is held on entry and on return. */
static void run_op(struct ferry__stream *s, struct op *op)
{
	struct host_device *d = s->dev;
	switch (op->kind) {
	case OP_COPY:
	case OP_COPY_MAPPED:
	case OP_MEMSET:
	case OP_CONVERT:
	case OP_FREE: {
		pthread_mutex_unlock(&d->lock);
		int rc = run_data_op(op);
		pthread_mutex_lock(&d->lock);
		if (rc < 0 && !s->error)
			s->error = rc;
		break;
	}
	case OP_EVENT:
		if (op->event->completed < op->generation) {
			op->event->completed = op->generation;
			op->event->error = s->error;
			s->error = 0;
		}
		break;
	case OP_WAIT_EVENT:
		while (op->event->completed < op->generation)
			pthread_cond_wait(&d->progress, &d->lock);
		break;
	case OP_GATE:
		while (!op->gate->open)
			pthread_cond_wait(&d->progress, &d->lock);
		break;
	case OP_EXIT:
		break;
	}
}

/* As with CUDA, an event may be destroyed while records or waits that use it
 * are queued: it is freed once the last of them has run. Lock held. */
static void release_event_locked(struct ferry__event *ev)
{
	if (--ev->queued == 0 && ev->destroyed)
		free(ev);
}

static void *stream_worker(void *arg)
{
	struct ferry__stream *s = arg;
	struct host_device *d = s->dev;
	pthread_mutex_lock(&d->lock);
	for (;;) {
		while (!s->head)
			pthread_cond_wait(&s->work, &d->lock);
		struct op *op = s->head;
		run_op(s, op);
		if (op->event)
			release_event_locked(op->event);
		s->head = op->next;
		if (!s->head)
			s->tail = NULL;
		s->done++;
		pthread_cond_broadcast(&d->progress);
		enum op_kind kind = op->kind;
		free(op->conv);
		free(op);
		if (kind == OP_EXIT)
			break;
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* Appends op to s; the lock is held. */
static void enqueue_locked(struct ferry__stream *s, struct op *op)
{
	op->next = NULL;
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	s->queued++;
	pthread_cond_signal(&s->work);
}

static int enqueue(struct ferry__stream *s, struct op template)
{
	struct op *op = malloc(sizeof(*op));
	if (!op)
		return ferry__fail(-ENOMEM, "host device: cannot queue an operation");
	*op = template;
	pthread_mutex_lock(&s->dev->lock);
	enqueue_locked(s, op);
	pthread_mutex_unlock(&s->dev->lock);
	return 0;
}

static int host_stream_create(struct ferry__device *dev, struct ferry__stream **out)
{
	struct ferry__stream *s = calloc(1, sizeof(*s));
	if (!s)
		return ferry__fail(-ENOMEM, "host device: cannot create a stream");
	s->dev = host(dev);
	s->exit_op = malloc(sizeof(*s->exit_op));
	if (!s->exit_op) {
		free(s);
		return ferry__fail(-ENOMEM, "host device: cannot create a stream");
	}
	pthread_cond_init(&s->work, NULL);
	int rc = pthread_create(&s->worker, NULL, stream_worker, s);
	if (rc) {
		pthread_cond_destroy(&s->work);
		free(s->exit_op);
		free(s);
		return ferry__fail(-rc, "host device: cannot start a stream worker");
	}
	*out = s;
	return 0;
}

static int host_stream_sync(struct ferry__device *dev, struct ferry__stream *s)
{
	struct host_device *d = host(dev);
	pthread_mutex_lock(&d->lock);
	uint64_t target = s->queued;
	while (s->done < target)
		pthread_cond_wait(&d->progress, &d->lock);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static void host_stream_destroy(struct ferry__device *dev, struct ferry__stream *s)
{
	*s->exit_op = (struct op){ .kind = OP_EXIT }; /* the worker frees it */
	pthread_mutex_lock(&s->dev->lock);
	enqueue_locked(s, s->exit_op);
	pthread_mutex_unlock(&s->dev->lock);
	pthread_join(s->worker, NULL);
	pthread_cond_destroy(&s->work);
	free(s);
}

/* The stream op that performs a copy of kind. */
static enum op_kind copy_op_kind(enum ferry__copy_kind kind)
{
	return kind == FERRY__H2D_MAPPED ? OP_COPY_MAPPED : OP_COPY;
}

static int host_copy_async(struct ferry__device *dev, struct ferry__stream *s, void *dst,
			   const void *src, size_t len, enum ferry__copy_kind kind)
{
	return enqueue(s, (struct op){ .kind = copy_op_kind(kind), .dst = dst, .src = src,
				       .len = len });
}

/* Every op allocated first, so that either all n are queued or none is. */
static int host_copy_batch_async(struct ferry__device *dev, struct ferry__stream *s,
				 const struct ferry__copy_op *ops, unsigned n,
				 enum ferry__copy_kind kind)
{
	enum op_kind k = copy_op_kind(kind);
	struct op *first = NULL, **link = &first;
	for (unsigned i = 0; i < n; i++, link = &(*link)->next) {
		if (!(*link = malloc(sizeof(**link)))) {
			for (struct op *op = first, *next; op; op = next) {
				next = op->next;
				free(op);
			}
			return ferry__fail(-ENOMEM, "host device: cannot queue %u copies", n);
		}
		**link = (struct op){ .kind = k, .dst = ops[i].dst, .src = ops[i].src,
				      .len = ops[i].len };
	}
	pthread_mutex_lock(&s->dev->lock);
	for (struct op *op = first, *next; op; op = next) {
		next = op->next;
		enqueue_locked(s, op);
	}
	pthread_mutex_unlock(&s->dev->lock);
	return 0;
}

static int host_copy_sync(struct ferry__device *dev, void *dst, const void *src, size_t len,
			  enum ferry__copy_kind kind)
{
	if (kind == FERRY__H2D_MAPPED)
		return copy_from_mapping(dst, src, len);
	if (len)
		memmove(dst, src, len);
	return 0;
}

static int host_memset_async(struct ferry__device *dev, struct ferry__stream *s, void *dst,
			     int byte, size_t len)
{
	return enqueue(s, (struct op){ .kind = OP_MEMSET, .dst = dst, .byte = byte, .len = len });
}

static int host_event_create(struct ferry__device *dev, struct ferry__event **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : ferry__fail(-ENOMEM, "host device: cannot create an event");
}

static void host_event_destroy(struct ferry__device *dev, struct ferry__event *ev)
{
	struct host_device *d = host(dev);
	pthread_mutex_lock(&d->lock);
	int in_use = ev->queued > 0;
	ev->destroyed = in_use;
	pthread_mutex_unlock(&d->lock);
	if (!in_use)
		free(ev);
}

static int host_event_record(struct ferry__device *dev, struct ferry__event *ev,
			     struct ferry__stream *s)
{
	struct op *op = malloc(sizeof(*op));
	if (!op)
		return ferry__fail(-ENOMEM, "host device: cannot record an event");
	*op = (struct op){ .kind = OP_EVENT, .event = ev };
	pthread_mutex_lock(&s->dev->lock);
	op->generation = ++ev->recorded;
	ev->queued++;
	enqueue_locked(s, op);
	pthread_mutex_unlock(&s->dev->lock);
	return 0;
}

static int host_event_query(struct ferry__device *dev, struct ferry__event *ev)
{
	struct host_device *d = host(dev);
	pthread_mutex_lock(&d->lock);
	int done = ev->completed >= ev->recorded;
	int rc = done ? ev->error : -EAGAIN;
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int host_event_sync(struct ferry__device *dev, struct ferry__event *ev)
{
	struct host_device *d = host(dev);
	pthread_mutex_lock(&d->lock);
	uint64_t target = ev->recorded;
	while (ev->completed < target)
		pthread_cond_wait(&d->progress, &d->lock);
	int rc = ev->error;
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int host_stream_wait_event(struct ferry__device *dev, struct ferry__stream *s,
				  struct ferry__event *ev)
{
	struct op *op = malloc(sizeof(*op));
	if (!op)
		return ferry__fail(-ENOMEM, "host device: cannot queue an event wait");
	*op = (struct op){ .kind = OP_WAIT_EVENT, .event = ev };
	pthread_mutex_lock(&s->dev->lock);
	op->generation = ev->recorded;
	ev->queued++;
	enqueue_locked(s, op);
	pthread_mutex_unlock(&s->dev->lock);
	return 0;
}

/* The host device has no native streams: the caller waits here. */
static int host_native_stream_wait(struct ferry__device *dev, void *native_stream,
				   struct ferry__event *ev)
{
	return host_event_sync(dev, ev);
}

static int host_gate_create(struct ferry__device *dev, struct ferry__gate **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : ferry__fail(-ENOMEM, "host device: cannot create a gate");
}

static int host_gate_hold(struct ferry__device *dev, struct ferry__stream *s,
			  struct ferry__gate *g)
{
	return enqueue(s, (struct op){ .kind = OP_GATE, .gate = g });
}

static int host_gate_open(struct ferry__device *dev, struct ferry__gate *g)
{
	struct host_device *d = host(dev);
	pthread_mutex_lock(&d->lock);
	g->open = 1;
	pthread_cond_broadcast(&d->progress);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static void host_gate_destroy(struct ferry__device *dev, struct ferry__gate *g)
{
	free(g);
}

/* ---- file mappings: nothing to register; copies go through the kernel ---- */

static int host_map_ready(struct ferry__device *dev, char *how, size_t how_len)
{
	if (how)
		snprintf(how, how_len, "the host device's stream workers copy out of the mapping "
			 "with process_vm_readv (a file that shrank is an error, not SIGBUS)");
	return 0;
}

static int host_map_register(struct ferry__device *dev, void *ptr, size_t len)
{
	return 0;
}

static void host_map_unregister(struct ferry__device *dev, void *ptr, size_t len)
{
}

/* ---- conversions ---- */

static int host_convert_ready(struct ferry__device *dev, char *how, size_t how_len)
{
	if (how)
		snprintf(how, how_len, "the host device's stream workers (the CPU)");
	return 0;
}

/* Whether c describes an array of at most one axis longer than 1. */
static int one_long_axis(const struct ferry__convert *c)
{
	int long_axes = 0;
	for (int i = 0; i < c->ndim; i++)
		long_axes += c->shape[i] > 1;
	return long_axes <= 1;
}

static int host_convert_async(struct ferry__device *dev, struct ferry__stream *s, void *dst,
			      const void *src, const struct ferry__convert *c)
{
	if (c->itemsize == 0 || c->ndim < 0 || c->ndim > FERRY_MAX_DIMS ||
	    (c->fortran && dst == src && !one_long_axis(c)))
		return ferry__fail(-EINVAL, "host device: a conversion of %zu-byte items, rank %d%s",
				   c->itemsize, c->ndim, dst == src ? ", in place" : "");
	struct ferry__convert *copy = malloc(sizeof(*copy));
	if (!copy)
		return ferry__fail(-ENOMEM, "host device: cannot queue a conversion");
	*copy = *c;
	int rc = enqueue(s, (struct op){ .kind = OP_CONVERT, .dst = dst, .src = src, .conv = copy });
	if (rc < 0)
		free(copy);
	return rc;
}

static int host_scratch_alloc(struct ferry__device *dev, struct ferry__stream *s, size_t len,
			      void **out)
{
	return host_mem_alloc(dev, len, out);
}

/* The worker frees it once it gets there; without memory to queue that, the
 * caller waits for the stream and frees it now. */
static void host_scratch_free(struct ferry__device *dev, struct ferry__stream *s, void *ptr)
{
	if (ptr && enqueue(s, (struct op){ .kind = OP_FREE, .dst = ptr }) < 0) {
		host_stream_sync(&s->dev->base, s);
		free(ptr);
	}
}

const struct ferry__device_ops ferry__device_host = {
	.name = "host",
	.flags = FERRY__DEV_CONVERT,
	.open = host_open,
	.close = host_close,
	.describe = host_describe,
	.mem_alloc = host_mem_alloc,
	.mem_free = host_mem_free,
	.pinned_alloc = host_mem_alloc,
	.pinned_free = host_pinned_free,
	.stream_create = host_stream_create,
	.stream_destroy = host_stream_destroy,
	.stream_sync = host_stream_sync,
	.stream_wait_event = host_stream_wait_event,
	.native_stream_wait = host_native_stream_wait,
	.copy_async = host_copy_async,
	.copy_batch_async = host_copy_batch_async,
	.copy_sync = host_copy_sync,
	.memset_async = host_memset_async,
	.event_create = host_event_create,
	.event_destroy = host_event_destroy,
	.event_record = host_event_record,
	.event_query = host_event_query,
	.event_sync = host_event_sync,
	.gate_create = host_gate_create,
	.gate_hold = host_gate_hold,
	.gate_open = host_gate_open,
	.gate_destroy = host_gate_destroy,
	.convert_ready = host_convert_ready,
	.convert_async = host_convert_async,
	.scratch_alloc = host_scratch_alloc,
	.scratch_free = host_scratch_free,
	.map_ready = host_map_ready,
	.map_register = host_map_register,
	.map_unregister = host_map_unregister,
};
