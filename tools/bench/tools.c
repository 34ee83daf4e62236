/*
 * `ferry bench`: the loaders measured, each a per-file function run by
 * bench_drive.c on some threads:
 *   ferry            ferry_load_into_async into two device buffers per caller, in
 *                    turn (waiting for a buffer's last load before reusing it)
 *   naive_c          open + read into malloc'ed memory + ferry_copy_to_device
 *   tuned_pread      pread into two pinned chunk buffers, async copies on the
 *                    thread's stream, an event per buffer
 *   cufile_per_file  cuFileRead of each payload into a registered device buffer
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "base/base.h"
#include "context/context.h"
#include "io/io.h"
#include "engine/engine.h"

#define TUNED_DEFAULT_CHUNK (1u << 20)

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

/* Marks run unavailable with a note (printf-style). */
static void __attribute__((format(printf, 2, 3)))
unavailable(struct ferry_bench_run *run, const char *fmt, ...)
{
	va_list ap;
	run->available = 0;
	va_start(ap, fmt);
	vsnprintf(run->note, sizeof(run->note), fmt, ap);
	va_end(ap);
}

/* ---- ferry ---- */

struct ferry_tool {
	ferry_ctx *ctx;
	const struct ferry_bench_dataset *ds;
	size_t dst_len;
};

/* A caller's two device buffers, loaded into in turn: the next file's reads
 * run while the previous file's copies finish. */
struct ferry_caller {
	void *dst[2];
	ferry_array *inflight[2];
	unsigned next;
};

/* Waits for the load in flight into buffer k, if any. */
static int ferry_settle(struct ferry_caller *c, unsigned k)
{
	int rc = c->inflight[k] ? ferry_array_wait(c->inflight[k]) : 0;
	ferry_array_free(c->inflight[k]);
	c->inflight[k] = NULL;
	return rc;
}

static void ferry_thread_fini(void *arg, void *state)
{
	struct ferry_tool *t = arg;
	struct ferry_caller *c = state;
	if (!c)
		return;
	for (unsigned k = 0; k < 2; k++) {
		ferry_settle(c, k);
		ferry_device_free(t->ctx, c->dst[k]);
	}
	free(c);
}

static int ferry_thread_init(void *arg, unsigned thread, void **state)
{
	struct ferry_tool *t = arg;
	struct ferry_caller *c = calloc(1, sizeof(*c));
	int rc = c ? 0 : -ENOMEM;
	for (unsigned k = 0; rc == 0 && k < 2; k++)
		rc = ferry_device_alloc(t->ctx, t->dst_len, &c->dst[k]);
	if (rc < 0) {
		ferry_thread_fini(arg, c);
		c = NULL;
	}
	*state = c;
	return rc;
}

static int ferry_load_one(void *arg, void *state, unsigned file)
{
	struct ferry_tool *t = arg;
	struct ferry_caller *c = state;
	unsigned k = c->next;
	c->next ^= 1;
	int rc = ferry_settle(c, k);
	return rc < 0 ? rc
		      : ferry_load_into_async(t->ctx, t->ds->paths[file], c->dst[k], t->dst_len,
					      &c->inflight[k]);
}

static int ferry_finish(void *arg, void *state)
{
	struct ferry_caller *c = state;
	int rc = ferry_settle(c, 0);
	int rc1 = ferry_settle(c, 1);
	return rc < 0 ? rc : rc1;
}

/* Context options of a backend name; -1 when the name is unknown. */
static int backend_options(const char *backend, struct ferry_ctx_options *o)
{
	static const struct {
		const char *name, *io;
		int direct;
	} map[] = {
		{ "posix", "posix", 0 }, { "posix_direct", "posix", 1 },
		{ "uring", "uring", 0 }, { "uring_direct", "uring", 1 },
		{ "cufile", "cufile", 1 },
	};
	for (size_t i = 0; i < FERRY__ARRAY_LEN(map); i++)
		if (!strcmp(backend, map[i].name)) {
			o->io = map[i].io;
			o->direct = map[i].direct;
			return 0;
		}
	return -1;
}

/* Callers of ferry_load_into_async: enough to keep every IO thread busy when one
 * file has fewer chunks than that, i.e. ceil(4 x threads x chunk / average
 * file), between 1 and threads; opt->callers when given. */
static unsigned auto_callers(const struct ferry_bench_options *opt,
			     const struct ferry_bench_dataset *ds, unsigned threads, size_t chunk)
{
	uint64_t average = ds->total_bytes / ds->count;
	uint64_t want;

	if (opt->callers)
		return opt->callers;
	if (!average)
		return threads;
	want = (4ull * threads * chunk + average - 1) / average;
	return want < 1 ? 1 : want > threads ? threads : (unsigned)want;
}

void ferry_bench_run_ferry(const struct ferry_bench_options *opt,
			   const struct ferry_bench_dataset *ds, const struct ferry_bench_limits *lim,
			   const char *backend, unsigned threads, struct ferry_bench_run *run)
{
	struct ferry_ctx_options o = { .device = opt->device, .gpu = -1, .chunk_size = opt->chunk,
				       .threads = threads };
	struct ferry_tool t = { .ds = ds, .dst_len = (size_t)ds->max_file_size };
	struct ferry_bench_tool tool = { &t, ferry_thread_init, ferry_load_one, ferry_finish,
					 ferry_thread_fini };
	struct ferry_bench_measure m;
	int rc;

	snprintf(run->tool, sizeof(run->tool), "ferry");
	snprintf(run->backend, sizeof(run->backend), "%s", backend);
	if (backend_options(backend, &o)) {
		unavailable(run, "unknown backend %s", backend);
		return;
	}
	ferry__clear_error();
	rc = ferry_ctx_create(&t.ctx, &o);
	if (rc < 0) {
		unavailable(run, "not available: %s",
			    *ferry_last_error() ? ferry_last_error() : ferry_strerror(rc));
		return;
	}
	run->threads = t.ctx->ld.threads;
	run->chunk = ferry__staging_chunk_size(ferry__lanes_get(t.ctx->ld.lanes, 0));
	run->callers = auto_callers(opt, ds, run->threads, run->chunk);
	ferry_bench_drive(ds, lim, run->callers, &tool, &m);
	ferry_bench_fill_run(run, &m);
	if (!threads && run->available)
		snprintf(run->note, sizeof(run->note), "default settings");
	rc = ferry_ctx_destroy(t.ctx);
	if (rc < 0 && run->available) {
		run->available = 0;
		snprintf(run->note, sizeof(run->note), "failed: closing the context: %s",
			 ferry_last_error());
	}
}

/* ---- naive_c ---- */

struct naive_tool {
	ferry_ctx *ctx;
	const struct ferry_bench_dataset *ds;
};

static int naive_thread_init(void *arg, unsigned thread, void **state)
{
	struct naive_tool *t = arg;
	return ferry_device_alloc(t->ctx, (size_t)t->ds->max_file_size, state);
}

static void naive_thread_fini(void *arg, void *state)
{
	struct naive_tool *t = arg;
	ferry_device_free(t->ctx, state);
}

/* read() until len bytes or EOF. Returns the count or -errno. */
static ssize_t read_fully(int fd, char *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = read(fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* What a naive user writes: the whole file into malloc'ed memory, then one
 * synchronous (pageable) copy of the payload. */
static int naive_load_one(void *arg, void *state, unsigned file)
{
	struct naive_tool *t = arg;
	int fd = open(t->ds->paths[file], O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	int rc;

	if (fd < 0)
		return -errno;
	rc = fstat(fd, &st) ? -errno : 0;
	if (rc == 0 && !(buf = malloc(st.st_size ? (size_t)st.st_size : 1)))
		rc = -ENOMEM;
	if (rc == 0) {
		ssize_t got = read_fully(fd, buf, (size_t)st.st_size);
		uint64_t payload_end = t->ds->data_offset[file] + t->ds->nbytes[file];
		rc = got < 0 ? (int)got : (uint64_t)got < payload_end ? -FERRY_ETRUNCATED : 0;
	}
	if (rc == 0)
		rc = ferry_copy_to_device(t->ctx, state, buf + t->ds->data_offset[file],
					  (size_t)t->ds->nbytes[file]);
	free(buf);
	close(fd);
	return rc;
}

void ferry_bench_run_naive_c(const struct ferry_bench_options *opt,
			     const struct ferry_bench_dataset *ds,
			     const struct ferry_bench_limits *lim, struct ferry_bench_run *run)
{
	struct ferry_ctx_options o = { .device = opt->device, .gpu = -1, .io = "posix", .threads = 1 };
	struct naive_tool t = { .ds = ds };
	struct ferry_bench_tool tool = { &t, naive_thread_init, naive_load_one, NULL,
					 naive_thread_fini };
	struct ferry_bench_measure m;
	int rc;

	snprintf(run->tool, sizeof(run->tool), "naive_c");
	snprintf(run->backend, sizeof(run->backend), "read+pageable_copy");
	run->threads = run->callers = 1;
	ferry__clear_error();
	rc = ferry_ctx_create(&t.ctx, &o);
	if (rc < 0) {
		unavailable(run, "not available: %s", ferry_last_error());
		return;
	}
	ferry_bench_drive(ds, lim, 1, &tool, &m);
	ferry_bench_fill_run(run, &m);
	ferry_ctx_destroy(t.ctx);
}

/* ---- tuned_pread ---- */

struct tuned_tool {
	struct ferry__device *dev;
	const struct ferry_bench_dataset *ds;
	size_t chunk;
	size_t dst_len;
	int direct;
};

struct tuned_state {
	struct ferry__stream *stream;
	void *buf[2];
	struct ferry__event *done[2]; /* recorded after the copy out of buf[i] */
	int pending[2];
	unsigned next;
	void *dst;
};

static void tuned_thread_fini(void *arg, void *state)
{
	struct tuned_tool *t = arg;
	struct tuned_state *s = state;
	const struct ferry__device_ops *ops = t->dev->ops;

	if (!s)
		return;
	if (s->stream)
		ops->stream_destroy(t->dev, s->stream);
	for (int i = 0; i < 2; i++) {
		if (s->done[i])
			ops->event_destroy(t->dev, s->done[i]);
		if (s->buf[i])
			ops->pinned_free(t->dev, s->buf[i], t->chunk);
	}
	if (s->dst)
		ops->mem_free(t->dev, s->dst);
	free(s);
}

static int tuned_thread_init(void *arg, unsigned thread, void **state)
{
	struct tuned_tool *t = arg;
	const struct ferry__device_ops *ops = t->dev->ops;
	struct tuned_state *s = calloc(1, sizeof(*s));
	int rc = s ? 0 : -ENOMEM;

	if (rc == 0)
		rc = ops->stream_create(t->dev, &s->stream);
	for (int i = 0; rc == 0 && i < 2; i++) {
		rc = ops->pinned_alloc(t->dev, t->chunk, &s->buf[i]);
		if (rc == 0)
			rc = ops->event_create(t->dev, &s->done[i]);
	}
	if (rc == 0)
		rc = ops->mem_alloc(t->dev, t->dst_len, &s->dst);
	if (rc < 0) {
		tuned_thread_fini(arg, s);
		s = NULL;
	}
	*state = s;
	return rc;
}

/* Takes the next of the two buffers, waiting for the copy that last read it. */
static int tuned_take_buffer(struct tuned_tool *t, struct tuned_state *s, unsigned *b)
{
	*b = s->next;
	s->next ^= 1;
	if (!s->pending[*b])
		return 0;
	s->pending[*b] = 0;
	return t->dev->ops->event_sync(t->dev, s->done[*b]);
}

/* Queues the copy of got bytes of buffer b to dst and records its event. */
static int tuned_queue_copy(struct tuned_tool *t, struct tuned_state *s, unsigned b, char *dst,
			    size_t got)
{
	const struct ferry__device_ops *ops = t->dev->ops;
	int rc = ops->copy_async(t->dev, s->stream, dst, s->buf[b], got, FERRY__H2D);
	if (rc == 0)
		rc = ops->event_record(t->dev, s->done[b], s->stream);
	s->pending[b] = rc == 0;
	return rc;
}

/* Reads the whole file chunk by chunk (header too: that keeps O_DIRECT reads
 * aligned) and copies each chunk to the same place in dst. */
static int tuned_load_one(void *arg, void *state, unsigned file)
{
	struct tuned_tool *t = arg;
	struct tuned_state *s = state;
	int fd = open(t->ds->paths[file], O_RDONLY | O_CLOEXEC | (t->direct ? O_DIRECT : 0));
	uint64_t size = t->ds->file_size[file];
	int rc = fd < 0 ? -errno : 0;

	for (uint64_t offset = 0; rc == 0 && offset < size;) {
		unsigned b;
		if ((rc = tuned_take_buffer(t, s, &b)) < 0)
			break;
		ssize_t got = pread(fd, s->buf[b], t->chunk, (off_t)offset);
		if (got <= 0) {
			rc = got < 0 ? (errno == EINTR ? 0 : -errno) : -FERRY_ETRUNCATED;
			continue;
		}
		rc = tuned_queue_copy(t, s, b, (char *)s->dst + offset, (size_t)got);
		offset += (uint64_t)got;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

static int tuned_finish(void *arg, void *state)
{
	struct tuned_tool *t = arg;
	struct tuned_state *s = state;
	return t->dev->ops->stream_sync(t->dev, s->stream);
}

void ferry_bench_run_tuned_pread(ferry_ctx *ctx, const struct ferry_bench_options *opt,
				 const struct ferry_bench_dataset *ds,
				 const struct ferry_bench_limits *lim, unsigned threads, int direct,
				 struct ferry_bench_run *run)
{
	struct tuned_tool t = { .dev = ctx->ld.dev, .ds = ds, .direct = direct,
				.chunk = opt->chunk ? opt->chunk : TUNED_DEFAULT_CHUNK };
	struct ferry_bench_tool tool = { &t, tuned_thread_init, tuned_load_one, tuned_finish,
					 tuned_thread_fini };
	struct ferry_bench_measure m;

	t.dst_len = (size_t)round_up(ds->max_file_size ? ds->max_file_size : 1, t.chunk);
	snprintf(run->tool, sizeof(run->tool), "tuned_pread");
	snprintf(run->backend, sizeof(run->backend), direct ? "pread_direct" : "pread");
	run->threads = run->callers = threads;
	run->chunk = t.chunk;
	ferry_bench_drive(ds, lim, threads, &tool, &m);
	ferry_bench_fill_run(run, &m);
	if (m.error == -EINVAL && direct)
		snprintf(run->note, sizeof(run->note),
			 "not available: O_DIRECT refused here (%s)", m.message);
}

/* ---- cufile_per_file ---- */

struct cufile_tool {
	ferry_ctx *ctx;
	struct ferry__io *io;
	const struct ferry_bench_dataset *ds;
	size_t dst_len;
};

/* A cuFile user registers its destination once, not per read. */
static int cufile_thread_init(void *arg, unsigned thread, void **state)
{
	struct cufile_tool *t = arg;
	int rc = ferry_device_alloc(t->ctx, t->dst_len, state);
	if (rc == 0 && (rc = ferry__io_cufile.register_block(t->io, *state, t->dst_len)) < 0)
		ferry_device_free(t->ctx, *state);
	return rc;
}

static void cufile_thread_fini(void *arg, void *state)
{
	struct cufile_tool *t = arg;
	ferry__io_cufile.deregister_block(t->io, state, t->dst_len);
	ferry_device_free(t->ctx, state);
}

static int cufile_load_one(void *arg, void *state, unsigned file)
{
	struct cufile_tool *t = arg;
	struct ferry__file *f;
	struct ferry__io_req req = { .dst = state, .len = (size_t)t->ds->nbytes[file],
				     .offset = t->ds->data_offset[file] };
	int rc = ferry__io_cufile.open(t->io, t->ds->paths[file], FERRY__IO_DIRECT, &f);

	if (rc < 0)
		return rc;
	rc = ferry__io_cufile.read(t->io, f, &req, 1);
	if (rc == 0 && req.result != (ssize_t)req.len)
		rc = req.result < 0 ? (int)req.result : -FERRY_ETRUNCATED;
	ferry__io_cufile.close(t->io, f);
	return rc;
}

void ferry_bench_run_cufile_per_file(const struct ferry_bench_options *opt,
				     const struct ferry_bench_dataset *ds,
				     const struct ferry_bench_limits *lim, unsigned threads,
				     struct ferry_bench_run *run)
{
	struct ferry_ctx_options o = { .device = opt->device, .gpu = -1, .io = "posix", .threads = 1 };
	struct cufile_tool t = { .ds = ds, .dst_len = (size_t)round_up(ds->max_file_size + 1, 4096) };
	struct ferry_bench_tool tool = { &t, cufile_thread_init, cufile_load_one, NULL,
					 cufile_thread_fini };
	struct ferry_bench_measure m;
	int rc;

	snprintf(run->tool, sizeof(run->tool), "cufile_per_file");
	snprintf(run->backend, sizeof(run->backend), "cufile");
	run->threads = run->callers = threads;
	ferry__clear_error();
	if ((rc = ferry_ctx_create(&t.ctx, &o)) < 0) {
		unavailable(run, "not available: %s", ferry_last_error());
		return;
	}
	if ((rc = ferry__io_cufile.init(t.ctx->ld.dev, &t.io)) < 0) {
		unavailable(run, "not available: %s", ferry_last_error());
		ferry_ctx_destroy(t.ctx);
		return;
	}
	ferry_bench_drive(ds, lim, threads, &tool, &m);
	ferry_bench_fill_run(run, &m);
	ferry__io_cufile.fini(t.io);
	ferry_ctx_destroy(t.ctx);
}
