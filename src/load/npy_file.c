/* .npy files: the header from the first bytes, the payload through load.c.
 * Every read goes through the one open file whose header was validated. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "npy/npy.h"
#include "io/io.h"
#include "load/load.h"

#define HEADER_PROBE 4096u

static int parse_prefix(struct ferry__file *f, const void *buf, size_t got,
			struct ferry__npy_header *h)
{
	char why[160];
	int64_t need = ferry__npy_header_length(buf, got, why, sizeof(why));
	if (need < 0 && got >= 4 && (!memcmp(buf, "PK\3\4", 4) || !memcmp(buf, "PK\5\6", 4)))
		return ferry__fail((int)need, "%s: a zip archive (.npz), not a .npy: name one of its "
				   "members (ferry_load_member, FILE.npz:KEY, key=)", f->path);
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

size_t ferry__head_len(const struct ferry__npy_header *h)
{
	return h->data_offset < FERRY__HEAD_MAX ? (size_t)h->data_offset : FERRY__HEAD_MAX;
}

/* Parses the header from the first got bytes of f at buf, keeping its bytes. */
static int parse_kept(struct ferry__file *f, const unsigned char *buf, size_t got,
		      struct ferry__npy_header *h, unsigned char *head)
{
	int rc = parse_prefix(f, buf, got, h);
	if (rc == 0 && head)
		memcpy(head, buf, ferry__head_len(h));
	return rc;
}

int ferry__load_header(struct ferry__file *f, struct ferry__npy_header *h,
		       unsigned char head[FERRY__HEAD_MAX])
{
	_Alignas(4096) unsigned char probe[HEADER_PROBE];
	size_t got;
	int rc = ferry__io_read_host(f, probe, sizeof(probe), 0, &got);
	if (rc < 0)
		return rc;
	char why[160];
	int64_t need = ferry__npy_header_length(probe, got, why, sizeof(why));
	if (need < 0 || (uint64_t)need <= got)
		return parse_kept(f, probe, got, h, head);
	/* A long header (up to FERRY__NPY_MAX_HEADER): read it whole. */
	size_t len = ((size_t)need + HEADER_PROBE - 1) / HEADER_PROBE * HEADER_PROBE;
	unsigned char *big = ferry__aligned_alloc(HEADER_PROBE, len);
	if (!big)
		return ferry__fail(-ENOMEM, "%s: out of memory reading the header", f->path);
	rc = ferry__io_read_host(f, big, len, 0, &got);
	if (rc == 0)
		rc = parse_kept(f, big, got, h, head);
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

int ferry__convert_on_host(struct ferry__file *f, const struct ferry__npy_header *h, void *raw,
			   void **out)
{
	char *ordered = NULL;
	if (!layout_is_c(h) && !(ordered = malloc(h->data_size)))
		return ferry__fail(-ENOMEM, "%s: out of memory converting %llu bytes", f->path,
				   (unsigned long long)h->data_size);
	if (h->swap)
		ferry__byteswap(raw, h->count, h->itemsize,
				h->dtype == FERRY_COMPLEX64 || h->dtype == FERRY_COMPLEX128);
	if (ordered)
		ferry__fortran_to_c(ordered, raw, h->ndim, h->shape, h->itemsize);
	*out = ordered ? ordered : raw;
	return 0;
}

int ferry__load_from_host(const struct ferry__loader *ld, struct ferry__file *f,
			  const struct ferry__npy_header *h, void *raw, void *dst,
			  const struct ferry__load_opts *opts)
{
	void *array;
	int rc = ferry__convert_on_host(f, h, raw, &array);
	if (rc < 0)
		return rc;
	rc = ferry__load_from_memory(ld, f, array, h->data_size, dst, opts);
	if (array != raw)
		free(array);
	return rc;
}

/* Payloads the host reads: big-endian or Fortran order on a device that cannot
 * convert them, and archive members whose CRC-32 the host must compute where
 * staging is device memory. Read from the same open file, converted, then
 * staged like any load (waited for, or queued on opts->async). */
static int load_on_host(const struct ferry__loader *ld, struct ferry__file *f,
			const struct ferry__npy_header *h, void *dst,
			const struct ferry__load_opts *opts)
{
	uint32_t *crc = opts->crc;
	char *raw = malloc(h->data_size);
	if (!raw)
		return ferry__fail(-ENOMEM, "%s: out of memory converting %llu bytes", f->path,
				   (unsigned long long)h->data_size);
	int rc = ferry__io_read_host(f, raw, h->data_size, h->data_offset, NULL);
	if (rc == 0)
		rc = ferry__io_check_unchanged(f);
	if (rc == 0 && crc)
		*crc = ferry__crc32(0, raw, h->data_size); /* before a conversion changes it */
	if (rc == 0)
		rc = ferry__load_from_host(ld, f, h, raw, dst, opts);
	free(raw);
	return rc;
}

/* Whether the device converts this payload: it has the operation, its kernels
 * are ready, and dst is aligned as they need. */
static int device_converts(const struct ferry__loader *ld, const struct ferry__npy_header *h,
			   const void *dst)
{
	struct ferry__device *dev = ld->dev;
	if (!(dev->ops->flags & FERRY__DEV_CONVERT) ||
	    (uintptr_t)dst % ferry__convert_align(h->itemsize))
		return 0;
	if (dev->ops->convert_ready(dev, NULL, 0) == 0)
		return 1;
	ferry__clear_error(); /* the host converts instead; ferry env says why */
	return 0;
}

/* Says what failed, naming the file, before the calling thread's message. */
static int fail_prefixed(int rc, const char *path, const char *what)
{
	char *why = ferry__error_copy();
	ferry__fail(rc, "%s: %s: %s", path, what, why && *why ? why : ferry_strerror(rc));
	free(why);
	return rc;
}

static struct ferry__convert convert_params(const struct ferry__npy_header *h)
{
	struct ferry__convert c = {
		.itemsize = h->itemsize, .swap = h->swap, .fortran = !layout_is_c(h), .ndim = h->ndim,
		.is_complex = h->dtype == FERRY_COMPLEX64 || h->dtype == FERRY_COMPLEX128,
	};
	memcpy(c.shape, h->shape, sizeof(c.shape[0]) * (size_t)h->ndim);
	return c;
}

/* Queues the raw read of h's payload into raw and its conversion into dst on
 * t's lane, then makes t cover the conversion. Returns 0 once queued. */
static int queue_converted(const struct ferry__loader *ld, struct ferry__file *f,
			   const struct ferry__npy_header *h, void *raw, void *dst,
			   const struct ferry__load_opts *opts, struct ferry__ticket *t)
{
	struct ferry__device *dev = ld->dev;
	struct ferry__load_opts o = *opts;
	struct ferry__range range = { .offset = h->data_offset, .len = h->data_size, .dst = raw };
	struct ferry__convert c = convert_params(h);
	o.async = t;
	int rc = ferry__load_ranges(ld, f, &range, 1, &o);
	if (rc < 0)
		return rc; /* and its copies are done */
	struct ferry__stream *s = ferry__staging_stream(t->stg);
	/* The copies go on the stream ahead of the conversion that reads them,
	 * even where the registrar holds launches (a hold leaves them pending). */
	if ((rc = ferry__staging_flush(t->stg)) == 0)
		rc = dev->ops->convert_async(dev, s, dst, raw, &c);
	if (rc == 0 && (rc = ferry__staging_cover(t->stg, t)) < 0)
		dev->ops->stream_sync(dev, s); /* no ticket covers the conversion: let it finish */
	return rc < 0 ? fail_prefixed(rc, f->path, "converting on the device") : 0;
}

/*
 * Big-endian or Fortran-order payloads on a device that converts them: the
 * file's bytes go through staging like a C-order payload (into dst for a byte
 * swap in place, else into scratch device memory), and the conversion runs on
 * the lane's copy stream after the copies. The load's ticket covers it, so an
 * async load's waits (and fences) wait for the conversion too.
 */
static int load_on_device(const struct ferry__loader *ld, struct ferry__file *f,
			  const struct ferry__npy_header *h, void *dst,
			  const struct ferry__load_opts *opts)
{
	struct ferry__device *dev = ld->dev;
	struct ferry__ticket own = { 0 }, *t = opts->async ? opts->async : &own;
	if (!t->stg)
		t->stg = ferry__lanes_pick(ld->lanes);
	struct ferry__stream *s = ferry__staging_stream(t->stg);
	void *raw = dst;
	int rc = layout_is_c(h) ? 0 : dev->ops->scratch_alloc(dev, s, h->data_size, &raw);
	if (rc < 0)
		return fail_prefixed(rc, f->path, "no device memory to convert in");
	rc = queue_converted(ld, f, h, raw, dst, opts, t);
	if (raw != dst)
		dev->ops->scratch_free(dev, s, raw); /* once the conversion has read it */
	if (rc == 0 && !opts->async && (rc = ferry__staging_wait(t->stg, t)) < 0)
		return fail_prefixed(rc, f->path, "converting on the device failed");
	if (rc < 0) { /* no copy of a failed load is left in flight */
		char *why = ferry__error_copy();
		ferry__staging_wait(t->stg, t);
		ferry__fail(rc, "%s", why ? why : ferry_strerror(rc));
		free(why);
	}
	return rc;
}

int ferry__load_payload(const struct ferry__loader *ld, struct ferry__file *f, const struct ferry__npy_header *h,
			void *dst, const struct ferry__load_opts *opts)
{
	if (h->data_size == 0) {
		if (opts->crc)
			*opts->crc = 0;
		return ferry__io_check_unchanged(f);
	}
	/* A CRC needs the bytes in host memory: device staging (cuFile) cannot give it. */
	int host_crc = opts->crc && ld->io_ops->placement != FERRY__STAGE_PINNED;
	if (h->swap || !layout_is_c(h) || host_crc) {
		if (!host_crc && device_converts(ld, h, dst))
			return load_on_device(ld, f, h, dst, opts);
		if (opts->stats) {
			opts->stats->bytes_read += h->data_size;
			opts->stats->reads++;
		}
		return load_on_host(ld, f, h, dst, opts);
	}
	struct ferry__range range = { .offset = h->data_offset, .len = h->data_size, .dst = dst };
	return ferry__load_ranges(ld, f, &range, 1, opts);
}
