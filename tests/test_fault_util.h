/*
 * What the fault sweeps share (header-only, like test_reader_util.h): the
 * classes of fault, arming the layer each belongs to, and the sweep itself.
 *
 * A sweep runs a workload once with nothing to fail, counting the calls of a
 * class, then once for every N = 1..count with the Nth call failing. The
 * workload arms the shot once its fault device exists (shot_arm), runs, then
 * calls shot_disarm and checks its own results (every byte of what it reports
 * loaded, the pool back to full). The sweep checks the rest: a fault that must
 * fail the workload did, a short read did not, and a failure has a message
 * (naming the file for IO faults).
 */
#ifndef FERRY_TEST_FAULT_UTIL_H
#define FERRY_TEST_FAULT_UTIL_H

#include <errno.h>
#include <stdarg.h>

#include "base/base.h"
#include "context/context.h"
#include "helpers.h"
#include "io/io.h"
#include "engine/engine.h"

enum fault_layer { LAYER_DEVICE, LAYER_IO, LAYER_ALLOC };
enum fault_outcome { MAY_FAIL, MUST_FAIL, MUST_SUCCEED };

struct fault_class {
	const char *name;
	enum fault_layer layer;
	int cls;
	int err;
	enum fault_outcome outcome;
};

static const struct fault_class fault_classes[] = {
	{ "device alloc", LAYER_DEVICE, T_FAULT_MEM_ALLOC, -ENOMEM, MUST_FAIL },
	{ "pinned alloc", LAYER_DEVICE, T_FAULT_PINNED_ALLOC, -ENOMEM, MAY_FAIL },
	{ "copy submit", LAYER_DEVICE, T_FAULT_COPY, -FERRY_EDEVICE, MUST_FAIL },
	{ "event create", LAYER_DEVICE, T_FAULT_EVENT_CREATE, -FERRY_EDEVICE, MAY_FAIL },
	{ "event record", LAYER_DEVICE, T_FAULT_EVENT_RECORD, -FERRY_EDEVICE, MUST_FAIL },
	{ "event query", LAYER_DEVICE, T_FAULT_EVENT_QUERY, -FERRY_EDEVICE, MAY_FAIL },
	{ "event sync", LAYER_DEVICE, T_FAULT_EVENT_SYNC, -FERRY_EDEVICE, MAY_FAIL },
	{ "stream sync", LAYER_DEVICE, T_FAULT_STREAM_SYNC, -FERRY_EDEVICE, MUST_FAIL },
	{ "convert", LAYER_DEVICE, T_FAULT_CONVERT, -FERRY_EDEVICE, MUST_FAIL },
	{ "open ENOENT", LAYER_IO, T_IO_OPEN, -ENOENT, MUST_FAIL },
	{ "open EACCES", LAYER_IO, T_IO_OPEN, -EACCES, MUST_FAIL },
	{ "read EIO", LAYER_IO, T_IO_READ, -EIO, MUST_FAIL },
	{ "early EOF", LAYER_IO, T_IO_EARLY_EOF, 0, MUST_FAIL },
	{ "short pread", LAYER_IO, T_IO_SHORT_READ, 0, MUST_SUCCEED },
	{ "pread EIO", LAYER_IO, T_IO_SYS_READ, -EIO, MUST_FAIL },
	{ "pread early EOF", LAYER_IO, T_IO_SYS_EOF, 0, MUST_FAIL },
	{ "host alloc", LAYER_ALLOC, 0, -ENOMEM, MAY_FAIL },
};

/* One run of a workload: the fault it carries and what came of it. */
struct fault_shot {
	const struct fault_class *fc;
	unsigned long n;          /* the call to fail; 0: count only */
	struct ferry__device *fdev;
	unsigned long calls;      /* calls of the class seen */
	int fired;
	int failed;               /* some call of the workload returned an error */
	int first_rc;
	char first_error[1024];   /* ferry_last_error() of the first failure */
	const char *must_name;    /* a failure's message must contain this (IO faults) */
};

static inline void shot_fail(const struct fault_shot *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
static inline void shot_fail(const struct fault_shot *s, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fault '%s' at call %lu (fired %d): ", s->fc->name, s->n, s->fired);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(T_EXIT_FAIL);
}

/* Arms the shot's fault on its layer (fdev: the run's fault device). */
static inline void shot_arm(struct fault_shot *s, struct ferry__device *fdev)
{
	s->fdev = fdev;
	if (s->fc->layer == LAYER_DEVICE)
		t_fault_arm(fdev, (enum t_fault_class)s->fc->cls, s->n, s->fc->err, 0);
	else
		t_fault_arm(fdev, T_FAULT_NONE, 0, 0, 0);
	t_io_arm(s->fc->layer == LAYER_IO ? (enum t_io_fault)s->fc->cls : T_IO_NONE, s->n,
		 s->fc->err, 0);
	if (s->fc->layer == LAYER_ALLOC)
		t_alloc_arm(s->n);
}

/* Reads back what the armed layer saw and disarms every layer; call it before
 * the fault device is closed. */
static inline void shot_disarm(struct fault_shot *s)
{
	switch (s->fc->layer) {
	case LAYER_DEVICE:
		if (!s->fdev)
			break; /* closed by a failed ferry__ctx_create_on: see shot_device_lost */
		s->calls = t_fault_calls(s->fdev, (enum t_fault_class)s->fc->cls);
		s->fired = t_fault_fired(s->fdev);
		break;
	case LAYER_IO:
		s->calls = t_io_calls((enum t_io_fault)s->fc->cls);
		s->fired = t_io_fired();
		break;
	case LAYER_ALLOC:
		s->calls = t_alloc_calls();
		s->fired = t_alloc_fired();
		break;
	}
	t_alloc_disarm();
	t_io_arm(T_IO_NONE, 0, 0, 0);
	if (s->fdev)
		t_fault_arm(s->fdev, T_FAULT_NONE, 0, 0, 0);
}

/* ferry__ctx_create_on failed and closed the fault device: only a device
 * fault can have failed it without failing the count run, so it fired. */
static inline void shot_device_lost(struct fault_shot *s)
{
	if (s->fc->layer == LAYER_DEVICE)
		s->fired = 1;
	s->fdev = NULL;
}

/* Records the result rc of one call of the workload. Returns rc. */
static inline int shot_result(struct fault_shot *s, int rc)
{
	if (rc < 0 && !s->failed) {
		s->failed = 1;
		s->first_rc = rc;
		snprintf(s->first_error, sizeof(s->first_error), "%s", ferry_last_error());
	}
	return rc;
}

/* Arms s on a fresh fault device and opens a context on it, with the fault IO
 * over posix. Returns the context, or NULL when the fault hit its creation
 * (the device went with it; s is disarmed). */
static inline ferry_ctx *shot_open_ctx(struct fault_shot *s, const struct ferry_ctx_options *opt)
{
	struct ferry__device *fdev = t_fault_device(t_open_device());
	ferry_ctx *ctx;
	shot_arm(s, fdev);
	if (shot_result(s, ferry__ctx_create_on(fdev, t_fault_io(&ferry__io_posix), opt, &ctx)) < 0) {
		shot_device_lost(s);
		shot_disarm(s);
		return NULL;
	}
	return ctx;
}

/* The pool is back to full once everything launched is done: nothing leased,
 * pending or in flight. (A completed batch is reclaimed by the next lease or
 * wait, so wait first: stats alone may still count it in flight.) */
static inline void shot_check_pool(const struct fault_shot *s, struct ferry__staging *stg)
{
	struct ferry__staging_stats st;
	ferry__staging_wait(stg, NULL);
	ferry__staging_stats(stg, &st);
	if (st.free != st.total || st.leased || st.pending || st.in_flight)
		shot_fail(s, "pool not full: %u free of %u, %u leased, %u pending, %u in flight",
			  st.free, st.total, st.leased, st.pending, st.in_flight);
}

/* shot_check_pool on every staging lane of a context. */
static inline void shot_check_lanes(const struct fault_shot *s, ferry_ctx *ctx)
{
	for (unsigned i = 0; i < ferry__lanes_count(ctx->ld.lanes); i++)
		shot_check_pool(s, ferry__lanes_get(ctx->ld.lanes, i));
}

/* Checks what the sweep can tell from the outside. */
static inline void shot_judge(const struct fault_shot *s)
{
	if (s->n == 0 && s->failed)
		shot_fail(s, "failed without a fault: %s (%s)", ferry_strerror(s->first_rc),
			  s->first_error);
	if (!s->fired)
		return;
	if (s->fc->outcome == MUST_FAIL && !s->failed)
		shot_fail(s, "the fault fired but every call succeeded");
	if (s->fc->outcome == MUST_SUCCEED && s->failed)
		shot_fail(s, "a short read failed the workload: %s (%s)", ferry_strerror(s->first_rc),
			  s->first_error);
	if (s->failed && !s->first_error[0])
		shot_fail(s, "failed (%s) without a message", ferry_strerror(s->first_rc));
	if (s->failed && s->fc->layer == LAYER_IO && s->must_name &&
	    !strstr(s->first_error, s->must_name))
		shot_fail(s, "message does not name the file: %s", s->first_error);
}

struct sweep_totals {
	unsigned long runs, fired, failed;
};

typedef void (*workload_fn)(void *arg, struct fault_shot *shot);

/* Sweeps one class: counts its calls, then fails each in turn (at most
 * max_n, spread evenly when there are more). */
static inline void sweep_class(const struct fault_class *fc, workload_fn run, void *arg,
			       unsigned long max_n, struct sweep_totals *tot)
{
	struct fault_shot count = { .fc = fc };
	run(arg, &count);
	shot_judge(&count);
	unsigned long step = count.calls > max_n ? (count.calls + max_n - 1) / max_n : 1;
	unsigned long fired = 0, failed = 0;
	for (unsigned long n = 1; n <= count.calls; n += step) {
		struct fault_shot s = { .fc = fc, .n = n };
		run(arg, &s);
		shot_judge(&s);
		fired += s.fired;
		failed += s.failed;
	}
	printf("  %-16s %5lu calls, step %lu: %lu fired, %lu failed the workload\n", fc->name,
	       count.calls, step, fired, failed);
	tot->runs += count.calls / step;
	tot->fired += fired;
	tot->failed += failed;
}

/* Sweeps every class over the workload. */
static inline void sweep_all(const char *name, workload_fn run, void *arg, unsigned long max_n)
{
	struct sweep_totals tot = { 0 };
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!t_alloc_wrapped() || !t_io_syscalls_wrapped())
		T_FAIL("not linked with the fault wraps (see the Makefile's test_fault_ rule)");
	/* Each run opens and closes a device of its own; this one, open all
	 * sweep long, holds a reference to CUDA's primary context, which the
	 * driver resets when its last reference goes (and sets up again at the
	 * next run's open): hundreds of times a sweep without it. */
	struct ferry__device *held = t_open_device();
	printf("%s:\n", name);
	for (size_t i = 0; i < FERRY__ARRAY_LEN(fault_classes); i++)
		sweep_class(&fault_classes[i], run, arg, max_n, &tot);
	held->ops->close(held);
	printf("%s: %lu runs, %lu faults fired, %lu failed the workload\n", name, tot.runs,
	       tot.fired, tot.failed);
}

#endif
