/* The public loading calls: ferry_info, ferry_load, ferry_load_into, ferry_read_range. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "load.h"

struct ferry_array {
	ferry_ctx *ctx;
	void *data;
	struct ferry_array_info info;
};

static int open_file(ferry_ctx *ctx, const char *path, struct ferry__file **out)
{
	return ctx->io_ops->open(ctx->io, path, ctx->direct ? FERRY__IO_DIRECT : 0, out);
}

int ferry_info(const char *path, struct ferry_array_info *out)
{
	struct ferry__file *f;
	struct ferry__npy_header h;
	ferry__clear_error();
	int rc = ferry__io_posix.open(NULL, path, 0, &f);
	if (rc < 0)
		return rc;
	rc = ferry__load_header(f, &h);
	if (rc == 0)
		ferry__info_from_header(&h, out);
	ferry__io_posix.close(NULL, f);
	return rc;
}

/* Opens path, reads its header and, when dst is NULL, allocates device memory. */
static int load_file(ferry_ctx *ctx, const char *path, void **dst, size_t dst_len,
		     struct ferry_array_info *info)
{
	struct ferry__file *f;
	struct ferry__npy_header h;
	ferry__clear_error();
	int rc = open_file(ctx, path, &f);
	if (rc < 0)
		return rc;
	if ((rc = ferry__load_header(f, &h)) < 0)
		goto out;
	if (*dst && dst_len < h.data_size) {
		rc = ferry__fail(-ENOSPC, "%s: array needs %llu bytes, buffer holds %zu", path,
				 (unsigned long long)h.data_size, dst_len);
		goto out;
	}
	int allocated = !*dst;
	if (allocated && (rc = ferry_device_alloc(ctx, h.data_size, dst)) < 0) {
		ferry__fail(rc, "%s: cannot allocate %llu bytes of device memory: %s", path,
			    (unsigned long long)h.data_size, ferry_last_error());
		goto out;
	}
	rc = ferry__load_payload(ctx, f, &h, *dst, ctx->threads, NULL);
	if (rc < 0 && allocated) {
		ferry_device_free(ctx, *dst);
		*dst = NULL;
	}
	if (rc == 0 && info)
		ferry__info_from_header(&h, info);
out:
	ctx->io_ops->close(ctx->io, f);
	return rc;
}

int ferry_load(ferry_ctx *ctx, const char *path, ferry_array **out)
{
	ferry_array *a = calloc(1, sizeof(*a));
	if (!a)
		return ferry__fail(-ENOMEM, "%s: out of memory", path);
	a->ctx = ctx;
	int rc = load_file(ctx, path, &a->data, 0, &a->info);
	if (rc < 0) {
		free(a);
		return rc;
	}
	*out = a;
	return 0;
}

int ferry_load_into(ferry_ctx *ctx, const char *path, void *dst, size_t dst_len,
		    struct ferry_array_info *info)
{
	if (!dst)
		return ferry__fail(-EINVAL, "%s: destination is NULL", path);
	return load_file(ctx, path, &dst, dst_len, info);
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
	if (!a)
		return;
	ferry_device_free(a->ctx, a->data);
	free(a);
}

int ferry_read_range(ferry_ctx *ctx, const char *path, uint64_t offset, uint64_t len, void *dst)
{
	struct ferry__file *f;
	ferry__clear_error();
	int rc = open_file(ctx, path, &f);
	if (rc < 0)
		return rc;
	if (offset > f->size || len > f->size - offset)
		rc = ferry__fail(-FERRY_ETRUNCATED, "%s: range %llu+%llu runs past the end (%llu bytes)",
				 path, (unsigned long long)offset, (unsigned long long)len,
				 (unsigned long long)f->size);
	else if (len)
		rc = ferry__load_ranges(ctx, f, &(struct ferry__range){ offset, len, dst }, 1,
					ctx->threads, NULL);
	ctx->io_ops->close(ctx->io, f);
	return rc;
}
