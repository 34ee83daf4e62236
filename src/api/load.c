/* The public loading calls: ferry_info, ferry_load, ferry_load_into, ferry_read_range. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "context/context.h"
#include "load/load.h"

struct ferry_array {
	ferry_ctx *ctx;
	void *data;
	int owns_data;              /* ferry_load allocated data; free frees it */
	int async;                  /* loaded by a *_async call: */
	struct ferry__ticket ticket; /* its copies, for host waits */
	struct ferry__event *fence; /* recorded after them at the first stream wait */
	pthread_mutex_t fence_lock;
	char *path;                 /* for messages */
	struct ferry_array_info info;
};

/* Public calls name the file in every error; NULL paths are refused. */
static int check_path(const char *path)
{
	ferry__clear_error();
	return path ? 0 : ferry__fail(-EINVAL, "path is NULL");
}

/* The header of the .npy at path, or of its member key (NULL: path is a .npy),
 * with the member open for loading, or (header_only) its header alone. */
static int read_header(struct ferry__file *f, const char *key, struct ferry__npy_header *h,
		       unsigned char *head, struct ferry__member *m, int header_only)
{
	*m = (struct ferry__member){ 0 };
	if (!key)
		return ferry__load_header(f, h, head);
	int rc = header_only ? ferry__member_header(f, key, m) : ferry__member_open(f, key, m, head);
	if (rc == 0)
		*h = m->h;
	return rc;
}

int ferry_info_member(const char *path, const char *key, struct ferry_array_info *out)
{
	struct ferry__file *f;
	struct ferry__npy_header h;
	struct ferry__member m;
	int rc = check_path(path);
	if (rc < 0)
		return rc;
	rc = ferry__io_posix.open(NULL, path, 0, &f);
	if (rc < 0)
		return rc;
	rc = read_header(f, key, &h, NULL, &m, 1);
	if (rc == 0)
		ferry__info_from_header(&h, out);
	ferry__member_close(&m);
	ferry__io_posix.close(NULL, f);
	return ferry__fail_subject(rc, path);
}

int ferry_info(const char *path, struct ferry_array_info *out)
{
	return ferry_info_member(path, NULL, out);
}

/* Waits for an async load's copies after its error, keeping the error's message. */
static void wait_keeping_message(struct ferry__ticket *t)
{
	char *why = ferry__error_copy();
	ferry__staging_wait(t->stg, t);
	if (why)
		ferry__fail(-1, "%s", why);
	free(why);
}

/* Loads the payload of the .npy f (m->key NULL) or of its member m into dst. */
static int load_payload(const struct ferry__loader *ld, struct ferry__file *f,
			struct ferry__member *m, const struct ferry__npy_header *h,
			void *dst, const struct ferry__load_opts *opts)
{
	if (m->key)
		return ferry__member_load(ld, f, m, dst, opts);
	return ferry__load_payload(ld, f, h, dst, opts);
}

/* Opens path, reads its header (or its member key's) and, when dst is NULL,
 * allocates device memory. With async it returns once the copies are launched
 * (see ferry__load_ranges). */
static int load_file(ferry_ctx *ctx, const char *path, const char *key, void **dst,
		     size_t dst_len, struct ferry_array_info *info, struct ferry__ticket *async)
{
	struct ferry__file *f;
	struct ferry__npy_header h;
	struct ferry__member m;
	unsigned char head[FERRY__HEAD_MAX];
	const struct ferry__loader *ld = &ctx->ld;
	int rc = ferry__load_open(ld, path, &f);
	if (rc < 0)
		return rc;
	if ((rc = read_header(f, key, &h, head, &m, 0)) < 0)
		goto out;
	if (*dst && dst_len < h.data_size) {
		rc = ferry__fail(-ENOSPC, "%s: array needs %llu bytes, buffer holds %zu", path,
				 (unsigned long long)h.data_size, dst_len);
		goto out;
	}
	int allocated = !*dst;
	if (allocated && (rc = ld->dev->ops->mem_alloc(ld->dev, h.data_size ? h.data_size : 1,
						       dst)) < 0) {
		ferry__fail(rc, "%s: cannot allocate %llu bytes of device memory: %s", path,
			    (unsigned long long)h.data_size, ferry_last_error());
		goto out;
	}
	struct ferry__load_opts opts = { .parallel = ld->threads, .async = async, .head = head,
					 .head_len = ferry__head_len(&h) };
	rc = load_payload(ld, f, &m, &h, *dst, &opts);
	if (rc < 0 && allocated) {
		if (async && async->stg) /* a CRC mismatch comes after the copies launched */
			wait_keeping_message(async);
		ld->dev->ops->mem_free(ld->dev, *dst);
		*dst = NULL;
	}
	if (rc == 0 && info)
		ferry__info_from_header(&h, info);
out:
	ferry__member_close(&m);
	ferry__load_close(ld, f);
	return rc;
}

/* Waits for the copies of an async load: on the lane they went to, if any. */
static int wait_copies(ferry_array *a)
{
	return a->async && a->ticket.stg ? ferry__staging_wait(a->ticket.stg, &a->ticket) : 0;
}

static void array_free(ferry_array *a)
{
	struct ferry__device *dev = a->ctx->ld.dev;
	wait_copies(a); /* no copy may land in freed memory */
	if (a->fence)
		dev->ops->event_destroy(dev, a->fence);
	pthread_mutex_destroy(&a->fence_lock);
	if (a->owns_data && a->data)
		dev->ops->mem_free(dev, a->data);
	free(a->path);
	free(a);
}

/* Makes an array for a load of path into dst (NULL: into new device memory). */
static int new_array(ferry_ctx *ctx, const char *path, void *dst, int async, ferry_array **out)
{
	ferry_array *a = calloc(1, sizeof(*a));
	if (!a || !(a->path = strdup(path))) {
		free(a);
		return ferry__fail(-ENOMEM, "%s: out of memory", path);
	}
	a->ctx = ctx;
	a->data = dst;
	a->owns_data = !dst; /* load_file then allocates it, freeing it again if it fails */
	a->async = async;
	pthread_mutex_init(&a->fence_lock, NULL);
	*out = a;
	return 0;
}

static int load_array(ferry_ctx *ctx, const char *path, const char *key, void *dst,
		      size_t dst_len, int async, ferry_array **out)
{
	ferry_array *a = NULL;
	int rc = check_path(path);
	if (rc == 0)
		rc = new_array(ctx, path, dst, async, &a);
	if (rc < 0)
		return rc;
	rc = load_file(ctx, path, key, &a->data, dst_len, &a->info, async ? &a->ticket : NULL);
	if (rc < 0) {
		array_free(a); /* which waits for any copy still in flight */
		return ferry__fail_subject(rc, path);
	}
	*out = a;
	return 0;
}

int ferry_load_member(ferry_ctx *ctx, const char *path, const char *key, ferry_array **out)
{
	return load_array(ctx, path, key, NULL, 0, 0, out);
}

int ferry_load_member_async(ferry_ctx *ctx, const char *path, const char *key, ferry_array **out)
{
	return load_array(ctx, path, key, NULL, 0, 1, out);
}

int ferry_load(ferry_ctx *ctx, const char *path, ferry_array **out)
{
	return ferry_load_member(ctx, path, NULL, out);
}

int ferry_load_async(ferry_ctx *ctx, const char *path, ferry_array **out)
{
	return ferry_load_member_async(ctx, path, NULL, out);
}

int ferry_load_member_into(ferry_ctx *ctx, const char *path, const char *key, void *dst,
			   size_t dst_len, struct ferry_array_info *info)
{
	int rc = check_path(path);
	if (rc < 0)
		return rc;
	if (!dst)
		return ferry__fail(-EINVAL, "%s: destination is NULL", path);
	return ferry__fail_subject(load_file(ctx, path, key, &dst, dst_len, info, NULL), path);
}

int ferry_load_into(ferry_ctx *ctx, const char *path, void *dst, size_t dst_len,
		    struct ferry_array_info *info)
{
	return ferry_load_member_into(ctx, path, NULL, dst, dst_len, info);
}

int ferry_load_member_into_async(ferry_ctx *ctx, const char *path, const char *key, void *dst,
				 size_t dst_len, ferry_array **out)
{
	int rc = check_path(path);
	if (rc < 0)
		return rc;
	if (!dst)
		return ferry__fail(-EINVAL, "%s: destination is NULL", path);
	return load_array(ctx, path, key, dst, dst_len, 1, out);
}

int ferry_load_into_async(ferry_ctx *ctx, const char *path, void *dst, size_t dst_len,
			  ferry_array **out)
{
	return ferry_load_member_into_async(ctx, path, NULL, dst, dst_len, out);
}

int ferry_array_wait(ferry_array *a)
{
	int rc = wait_copies(a);
	if (rc < 0)
		ferry__load_copy_failed(a->path, rc);
	return rc;
}

/* Records the fence once, at the first stream wait: after every copy queued so
 * far on the array's lane, its own among them (a load that queued none was
 * complete on return, so any lane will do). Loads waited for on the host never
 * pay for an event. */
static int record_fence(ferry_array *a)
{
	struct ferry__device *dev = a->ctx->ld.dev;
	int rc = 0;
	pthread_mutex_lock(&a->fence_lock);
	if (!a->fence) {
		struct ferry__event *ev;
		if ((rc = dev->ops->event_create(dev, &ev)) == 0 &&
		    (rc = ferry__staging_commit(a->ticket.stg ? a->ticket.stg
								 : ferry__lanes_pick(a->ctx->ld.lanes),
						 ev)) < 0)
			dev->ops->event_destroy(dev, ev);
		if (rc == 0)
			a->fence = ev;
	}
	pthread_mutex_unlock(&a->fence_lock);
	return rc;
}

/* The caller's stream waits for the fence on the device (on the host device,
 * which has no native streams, the caller waits). */
int ferry_array_stream_wait(ferry_array *a, void *cuda_stream)
{
	struct ferry__device *dev = a->ctx->ld.dev;
	if (!a->async)
		return ferry_array_wait(a);
	int rc = record_fence(a);
	if (rc == 0)
		rc = dev->ops->native_stream_wait(dev, cuda_stream, a->fence);
	if (rc < 0)
		ferry__fail(rc, "%s: cannot make the stream wait: %s", a->path, ferry_strerror(rc));
	return rc;
}

void *ferry_array_data(const ferry_array *a)
{
	return a->data;
}

const struct ferry_array_info *ferry_array_info(const ferry_array *a)
{
	return &a->info;
}

void ferry_array_free(ferry_array *a)
{
	if (a)
		array_free(a);
}

int ferry_read_range(ferry_ctx *ctx, const char *path, uint64_t offset, uint64_t len, void *dst)
{
	struct ferry__file *f;
	int rc = check_path(path);
	if (rc == 0)
		rc = ferry__load_open(&ctx->ld, path, &f);
	if (rc < 0)
		return rc;
	if (offset > f->size || len > f->size - offset)
		rc = ferry__fail(-FERRY_ETRUNCATED, "%s: range %llu+%llu runs past the end (%llu bytes)",
				 path, (unsigned long long)offset, (unsigned long long)len,
				 (unsigned long long)f->size);
	else if (len)
		rc = ferry__load_ranges(&ctx->ld, f, &(struct ferry__range){ offset, len, dst }, 1,
					&(struct ferry__load_opts){ .parallel = ctx->ld.threads });
	ferry__load_close(&ctx->ld, f);
	return ferry__fail_subject(rc, path);
}
