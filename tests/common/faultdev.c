/* The fault device of helpers.h: forwards every operation to a real device,
 * failing the Nth call of the armed class. */
#include <pthread.h>

#include "base/base.h"
#include "helpers.h"

struct fault_device {
	struct ferry__device base;
	struct ferry__device *inner;
	struct ferry__device_ops ops;
	pthread_mutex_t lock;
	pthread_cond_t held_changed;    /* t_fault_hold's calls: one waits, or released */
	enum t_fault_class held;
	unsigned waiting;
	enum t_fault_class armed;
	unsigned long nth, calls[T_FAULT_NCLASSES];
	int err, sticky, fired;
};

static struct fault_device *fd_of(struct ferry__device *dev)
{
	return (struct fault_device *)dev;
}

/* Counts a call of cls, after waiting while cls is held; returns the error
 * to inject, or 0. */
static int should_fail(struct ferry__device *dev, enum t_fault_class cls)
{
	struct fault_device *f = fd_of(dev);
	pthread_mutex_lock(&f->lock);
	while (f->held == cls) {
		f->waiting++;
		pthread_cond_broadcast(&f->held_changed);
		pthread_cond_wait(&f->held_changed, &f->lock);
		f->waiting--;
	}
	unsigned long n = ++f->calls[cls];
	int fail = f->armed == cls && (n == f->nth || (f->sticky && n > f->nth));
	if (fail)
		f->fired = 1;
	pthread_mutex_unlock(&f->lock);
	return fail ? f->err : 0;
}

#define INNER(dev) (fd_of(dev)->inner)
#define FORWARD(cls, call)                                                           \
	do {                                                                         \
		int injected_ = should_fail(dev, cls);                               \
		if (injected_)                                                       \
			return ferry__fail(injected_, "injected fault (%s)", #cls);  \
		return call;                                                         \
	} while (0)



static int f_mem_alloc(struct ferry__device *dev, size_t len, void **out)
{
	FORWARD(T_FAULT_MEM_ALLOC, INNER(dev)->ops->mem_alloc(INNER(dev), len, out));
}
static int f_pinned_alloc(struct ferry__device *dev, size_t len, void **out)
{
	FORWARD(T_FAULT_PINNED_ALLOC, INNER(dev)->ops->pinned_alloc(INNER(dev), len, out));
}
static int f_copy_async(struct ferry__device *dev, struct ferry__stream *s, void *dst,
			const void *src, size_t len, enum ferry__copy_kind kind)
{
	FORWARD(T_FAULT_COPY, INNER(dev)->ops->copy_async(INNER(dev), s, dst, src, len, kind));
}
/* Each copy of the batch counts as a copy call; the Nth fails the whole batch. */
static int f_copy_batch_async(struct ferry__device *dev, struct ferry__stream *s,
			      const struct ferry__copy_op *ops, unsigned n,
			      enum ferry__copy_kind kind)
{
	for (unsigned i = 0; i < n; i++) {
		int injected = should_fail(dev, T_FAULT_COPY);
		if (injected)
			return ferry__fail(injected, "injected fault (T_FAULT_COPY)");
	}
	return INNER(dev)->ops->copy_batch_async(INNER(dev), s, ops, n, kind);
}
static int f_copy_sync(struct ferry__device *dev, void *dst, const void *src, size_t len,
		       enum ferry__copy_kind kind)
{
	FORWARD(T_FAULT_COPY_SYNC, INNER(dev)->ops->copy_sync(INNER(dev), dst, src, len, kind));
}
static int f_event_create(struct ferry__device *dev, struct ferry__event **out)
{
	FORWARD(T_FAULT_EVENT_CREATE, INNER(dev)->ops->event_create(INNER(dev), out));
}
static int f_event_record(struct ferry__device *dev, struct ferry__event *ev,
			  struct ferry__stream *s)
{
	FORWARD(T_FAULT_EVENT_RECORD, INNER(dev)->ops->event_record(INNER(dev), ev, s));
}
static int f_event_query(struct ferry__device *dev, struct ferry__event *ev)
{
	FORWARD(T_FAULT_EVENT_QUERY, INNER(dev)->ops->event_query(INNER(dev), ev));
}
static int f_event_sync(struct ferry__device *dev, struct ferry__event *ev)
{
	FORWARD(T_FAULT_EVENT_SYNC, INNER(dev)->ops->event_sync(INNER(dev), ev));
}
static int f_stream_sync(struct ferry__device *dev, struct ferry__stream *s)
{
	FORWARD(T_FAULT_STREAM_SYNC, INNER(dev)->ops->stream_sync(INNER(dev), s));
}

/* The remaining operations forward unchanged. */
static void f_mem_free(struct ferry__device *dev, void *p) { INNER(dev)->ops->mem_free(INNER(dev), p); }
static void f_pinned_free(struct ferry__device *dev, void *p, size_t n) { INNER(dev)->ops->pinned_free(INNER(dev), p, n); }
static int f_stream_create(struct ferry__device *dev, struct ferry__stream **o) { return INNER(dev)->ops->stream_create(INNER(dev), o); }
static void f_stream_destroy(struct ferry__device *dev, struct ferry__stream *s) { INNER(dev)->ops->stream_destroy(INNER(dev), s); }
static int f_stream_wait_event(struct ferry__device *dev, struct ferry__stream *s, struct ferry__event *e) { return INNER(dev)->ops->stream_wait_event(INNER(dev), s, e); }
static int f_memset_async(struct ferry__device *dev, struct ferry__stream *s, void *d, int b, size_t n) { return INNER(dev)->ops->memset_async(INNER(dev), s, d, b, n); }
static void f_event_destroy(struct ferry__device *dev, struct ferry__event *e) { INNER(dev)->ops->event_destroy(INNER(dev), e); }
static int f_gate_create(struct ferry__device *dev, struct ferry__gate **g) { return INNER(dev)->ops->gate_create(INNER(dev), g); }
static int f_gate_hold(struct ferry__device *dev, struct ferry__stream *s, struct ferry__gate *g) { return INNER(dev)->ops->gate_hold(INNER(dev), s, g); }
static int f_gate_open(struct ferry__device *dev, struct ferry__gate *g) { return INNER(dev)->ops->gate_open(INNER(dev), g); }
static void f_gate_destroy(struct ferry__device *dev, struct ferry__gate *g) { INNER(dev)->ops->gate_destroy(INNER(dev), g); }
static int f_describe(struct ferry__device *dev, char *b, size_t n) { return INNER(dev)->ops->describe(INNER(dev), b, n); }
static int f_native_stream_wait(struct ferry__device *dev, void *s, struct ferry__event *e) { return INNER(dev)->ops->native_stream_wait(INNER(dev), s, e); }
static int f_make_current(struct ferry__device *dev) { return INNER(dev)->ops->make_current(INNER(dev)); }
static int f_convert_ready(struct ferry__device *dev, char *b, size_t n) { return INNER(dev)->ops->convert_ready(INNER(dev), b, n); }
static void f_scratch_free(struct ferry__device *dev, struct ferry__stream *s, void *p) { INNER(dev)->ops->scratch_free(INNER(dev), s, p); }

static int f_convert_async(struct ferry__device *dev, struct ferry__stream *s, void *dst,
			   const void *src, const struct ferry__convert *c)
{
	FORWARD(T_FAULT_CONVERT, INNER(dev)->ops->convert_async(INNER(dev), s, dst, src, c));
}
/* Scratch memory for a conversion is device memory: it fails as mem_alloc does. */
static int f_scratch_alloc(struct ferry__device *dev, struct ferry__stream *s, size_t len,
			   void **out)
{
	FORWARD(T_FAULT_MEM_ALLOC, INNER(dev)->ops->scratch_alloc(INNER(dev), s, len, out));
}

/* Zero copy: a device that cannot register, or a registration refused. */
static int f_map_ready(struct ferry__device *dev, char *how, size_t len)
{
	FORWARD(T_FAULT_MAP_READY, INNER(dev)->ops->map_ready(INNER(dev), how, len));
}
static int f_map_register(struct ferry__device *dev, void *p, size_t n)
{
	FORWARD(T_FAULT_MAP_REGISTER, INNER(dev)->ops->map_register(INNER(dev), p, n));
}
static void f_map_unregister(struct ferry__device *dev, void *p, size_t n) { INNER(dev)->ops->map_unregister(INNER(dev), p, n); }

static void f_close(struct ferry__device *dev)
{
	struct fault_device *f = fd_of(dev);
	f->inner->ops->close(f->inner);
	pthread_cond_destroy(&f->held_changed);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

struct ferry__device *t_fault_device(struct ferry__device *inner)
{
	struct fault_device *f = calloc(1, sizeof(*f));
	T_ASSERT(f);
	f->inner = inner;
	f->ops = *inner->ops;
	f->ops.flags &= ~FERRY__DEV_MAP_BESIDE; /* held registrations: tests choose */
	f->ops.close = f_close;
	f->ops.describe = f_describe;
	f->ops.mem_alloc = f_mem_alloc;
	f->ops.mem_free = f_mem_free;
	f->ops.pinned_alloc = f_pinned_alloc;
	f->ops.pinned_free = f_pinned_free;
	f->ops.stream_create = f_stream_create;
	f->ops.stream_destroy = f_stream_destroy;
	f->ops.stream_sync = f_stream_sync;
	f->ops.stream_wait_event = f_stream_wait_event;
	f->ops.copy_async = f_copy_async;
	f->ops.copy_batch_async = inner->ops->copy_batch_async ? f_copy_batch_async : NULL;
	f->ops.copy_sync = f_copy_sync;
	f->ops.memset_async = f_memset_async;
	f->ops.event_create = f_event_create;
	f->ops.event_destroy = f_event_destroy;
	f->ops.event_record = f_event_record;
	f->ops.event_query = f_event_query;
	f->ops.event_sync = f_event_sync;
	f->ops.gate_create = f_gate_create;
	f->ops.gate_hold = f_gate_hold;
	f->ops.gate_open = f_gate_open;
	f->ops.gate_destroy = f_gate_destroy;
	f->ops.native_stream_wait = f_native_stream_wait;
	f->ops.make_current = inner->ops->make_current ? f_make_current : NULL;
	if (inner->ops->flags & FERRY__DEV_CONVERT) {
		f->ops.convert_ready = f_convert_ready;
		f->ops.convert_async = f_convert_async;
		f->ops.scratch_alloc = f_scratch_alloc;
		f->ops.scratch_free = f_scratch_free;
	}
	if (inner->ops->map_ready) {
		f->ops.map_ready = f_map_ready;
		f->ops.map_register = f_map_register;
		f->ops.map_unregister = f_map_unregister;
	}
	f->base.ops = &f->ops;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->held_changed, NULL);
	return &f->base;
}

void t_fault_hold(struct ferry__device *dev, enum t_fault_class cls)
{
	struct fault_device *f = fd_of(dev);
	pthread_mutex_lock(&f->lock);
	f->held = cls;
	pthread_cond_broadcast(&f->held_changed);
	pthread_mutex_unlock(&f->lock);
}

void t_fault_wait_held(struct ferry__device *dev)
{
	struct fault_device *f = fd_of(dev);
	pthread_mutex_lock(&f->lock);
	while (!f->waiting)
		pthread_cond_wait(&f->held_changed, &f->lock);
	pthread_mutex_unlock(&f->lock);
}

void t_fault_arm(struct ferry__device *dev, enum t_fault_class cls, unsigned long n, int err,
		 int sticky)
{
	struct fault_device *f = fd_of(dev);
	pthread_mutex_lock(&f->lock);
	f->armed = cls;
	f->nth = n;
	f->err = err;
	f->sticky = sticky;
	f->fired = 0;
	memset(f->calls, 0, sizeof(f->calls));
	pthread_mutex_unlock(&f->lock);
}

unsigned long t_fault_calls(struct ferry__device *dev, enum t_fault_class cls)
{
	struct fault_device *f = fd_of(dev);
	pthread_mutex_lock(&f->lock);
	unsigned long n = f->calls[cls];
	pthread_mutex_unlock(&f->lock);
	return n;
}

int t_fault_fired(struct ferry__device *dev)
{
	struct fault_device *f = fd_of(dev);
	pthread_mutex_lock(&f->lock);
	int fired = f->fired;
	pthread_mutex_unlock(&f->lock);
	return fired;
}

struct ferry__device *t_fault_inner(struct ferry__device *dev)
{
	return fd_of(dev)->inner;
}

void t_fault_map_beside(struct ferry__device *dev)
{
	fd_of(dev)->ops.flags |= FERRY__DEV_MAP_BESIDE;
}

void t_fault_no_convert(struct ferry__device *dev)
{
	struct fault_device *f = fd_of(dev);
	f->ops.flags &= ~(unsigned)FERRY__DEV_CONVERT;
	f->ops.convert_ready = NULL;
	f->ops.convert_async = NULL;
	f->ops.scratch_alloc = NULL;
	f->ops.scratch_free = NULL;
}
