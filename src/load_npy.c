/* .npy files: the header from the first bytes, the payload through load.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "convert.h"
#include "load.h"

#define HEADER_PROBE 4096u

/* Reads len bytes at offset 0 into an aligned buffer (O_DIRECT descriptors too). */
static int read_prefix(struct ferry__file *f, void *buf, size_t len, size_t *got)
{
	ssize_t n;
	do
		n = pread(f->fd, buf, len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return ferry__fail(-errno, "%s: cannot read the header: %s", f->path, strerror(errno));
	*got = (size_t)n;
	return 0;
}

static int parse_prefix(struct ferry__file *f, const void *buf, size_t got,
			struct ferry__npy_header *h)
{
	char why[160];
	int64_t need = ferry__npy_header_length(buf, got, why, sizeof(why));
	if (need < 0)
		return ferry__fail((int)need, "%s: %s", f->path, why);
	if ((uint64_t)need > got)
		return ferry__fail(-FERRY_EFORMAT, "%s: header of %lld bytes runs past the end of the file",
				   f->path, (long long)need);
	int rc = ferry__npy_parse(buf, got, h, why, sizeof(why));
	if (rc == 0)
		rc = ferry__npy_check_size(h, f->size, why, sizeof(why));
	return rc < 0 ? ferry__fail(rc, "%s: %s", f->path, why) : 0;
}

int ferry__load_header(struct ferry__file *f, struct ferry__npy_header *h)
{
	_Alignas(4096) unsigned char probe[HEADER_PROBE];
	size_t got;
	int rc = read_prefix(f, probe, sizeof(probe), &got);
	if (rc < 0)
		return rc;
	char why[160];
	int64_t need = ferry__npy_header_length(probe, got, why, sizeof(why));
	if (need < 0 || (uint64_t)need <= got)
		return parse_prefix(f, probe, got, h);
	/* A long header (up to FERRY__NPY_MAX_HEADER): read it whole. */
	size_t len = ((size_t)need + HEADER_PROBE - 1) / HEADER_PROBE * HEADER_PROBE;
	void *big = ferry__aligned_alloc(HEADER_PROBE, len);
	if (!big)
		return ferry__fail(-ENOMEM, "%s: out of memory reading the header", f->path);
	rc = read_prefix(f, big, len, &got);
	if (rc == 0)
		rc = parse_prefix(f, big, got, h);
	free(big);
	return rc;
}

void ferry__info_from_header(const struct ferry__npy_header *h, struct ferry_array_info *out)
{
	*out = (struct ferry_array_info){
		.dtype = h->dtype, .itemsize = h->itemsize, .ndim = h->ndim, .count = h->count,
		.nbytes = h->data_size, .fortran_order = h->fortran_order, .byteswapped = h->swap,
		.version_major = h->major, .version_minor = h->minor, .data_offset = h->data_offset,
	};
	memcpy(out->shape, h->shape, sizeof(out->shape[0]) * (size_t)h->ndim);
}

/* Fortran and C layouts agree when at most one axis is longer than 1. */
static int layout_is_c(const struct ferry__npy_header *h)
{
	int long_axes = 0;
	for (int i = 0; i < h->ndim; i++)
		long_axes += h->shape[i] > 1;
	return !h->fortran_order || long_axes <= 1;
}

static int read_all(const char *path, int fd, void *buf, uint64_t len, uint64_t offset)
{
	for (uint64_t done = 0; done < len;) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ferry__fail(-errno, "%s: read at offset %llu: %s", path,
					   (unsigned long long)(offset + done), strerror(errno));
		if (n == 0)
			return ferry__fail(-FERRY_ETRUNCATED, "%s: file ends at byte %llu, expected %llu",
					   path, (unsigned long long)(offset + done),
					   (unsigned long long)(offset + len));
		done += (uint64_t)n;
	}
	return 0;
}

/* Big-endian or Fortran-order payloads: read on the host, convert, copy over. */
static int load_converted(ferry_ctx *ctx, struct ferry__file *f, const struct ferry__npy_header *h,
			  void *dst)
{
	int fd = open(f->path, O_RDONLY | O_CLOEXEC); /* buffered: any offset will do */
	if (fd < 0)
		return ferry__fail(-errno, "%s: %s", f->path, strerror(errno));
	int rc = -ENOMEM;
	char *raw = malloc(h->data_size), *ordered = NULL;
	if (!raw || (!layout_is_c(h) && !(ordered = malloc(h->data_size)))) {
		ferry__fail(rc, "%s: out of memory converting %llu bytes", f->path,
			    (unsigned long long)h->data_size);
		goto out;
	}
	if ((rc = read_all(f->path, fd, raw, h->data_size, h->data_offset)) < 0)
		goto out;
	if (h->swap)
		ferry__byteswap(raw, h->count, h->itemsize,
				h->dtype == FERRY_COMPLEX64 || h->dtype == FERRY_COMPLEX128);
	if (ordered)
		ferry__fortran_to_c(ordered, raw, h->ndim, h->shape, h->itemsize);
	rc = ferry_copy_to_device(ctx, dst, ordered ? ordered : raw, h->data_size);
	if (rc < 0)
		ferry__fail(rc, "%s: copy to the device failed: %s", f->path, ferry_last_error());
out:
	free(raw);
	free(ordered);
	close(fd);
	return rc;
}

int ferry__load_payload(ferry_ctx *ctx, struct ferry__file *f, const struct ferry__npy_header *h,
			void *dst, unsigned parallel, struct ferry__ticket *async,
			struct ferry__load_stats *stats)
{
	if (h->data_size == 0)
		return 0;
	if (h->swap || !layout_is_c(h)) {
		if (stats) {
			stats->bytes_read += h->data_size;
			stats->reads++;
		}
		return load_converted(ctx, f, h, dst);
	}
	struct ferry__range range = { .offset = h->data_offset, .len = h->data_size, .dst = dst };
	return ferry__load_ranges(ctx, f, &range, 1, parallel, async, stats);
}
