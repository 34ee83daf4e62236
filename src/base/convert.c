/*
 * Conversions on host memory: byte swapping and Fortran-to-C layout (base.h).
 */
#include "base/base.h"

#include <string.h>

#include "ferry.h"

/* ---- byte order ---- */

static void swap16(unsigned char *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++, p += 2) {
		uint16_t v;
		memcpy(&v, p, 2);
		v = __builtin_bswap16(v);
		memcpy(p, &v, 2);
	}
}

static void swap32(unsigned char *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++, p += 4) {
		uint32_t v;
		memcpy(&v, p, 4);
		v = __builtin_bswap32(v);
		memcpy(p, &v, 4);
	}
}

static void swap64(unsigned char *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++, p += 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		v = __builtin_bswap64(v);
		memcpy(p, &v, 8);
	}
}

static void swap_any(unsigned char *p, uint64_t n, size_t size)
{
	for (uint64_t i = 0; i < n; i++, p += size)
		for (size_t lo = 0, hi = size - 1; lo < hi; lo++, hi--) {
			unsigned char t = p[lo];
			p[lo] = p[hi];
			p[hi] = t;
		}
}

void ferry__byteswap(void *data, uint64_t count, size_t itemsize, int is_complex)
{
	size_t size = is_complex ? itemsize / 2 : itemsize;
	uint64_t n = is_complex ? count * 2 : count;

	switch (size) {
	case 0:
	case 1: break;
	case 2: swap16(data, n); break;
	case 4: swap32(data, n); break;
	case 8: swap64(data, n); break;
	default: swap_any(data, n, size); break;
	}
}

/* ---- Fortran to C order ---- */

/*
 * The array is cut in halves along its widest axis, recursively, until a block
 * holds at most BLOCK_ITEMS elements; each block is then copied in destination
 * order. A block's source lines stay in cache while it is written, whatever the
 * rank and whichever axes are short (a Fortran-order H x W x 3 image, say).
 */
#define BLOCK_ITEMS 1024

struct reorder {
	unsigned char *dst;
	const unsigned char *src;
	int ndim;
	size_t size;
	size_t fstride[FERRY_MAX_DIMS], cstride[FERRY_MAX_DIMS];	/* bytes per index */
	size_t lo[FERRY_MAX_DIMS], hi[FERRY_MAX_DIMS];	/* the current block */
};

/* Copies n items src_stride apart to consecutive places; inlined once per
 * constant size so that memcpy becomes a single move. */
static inline __attribute__((always_inline)) void
copy_run_sized(unsigned char *dst, const unsigned char *src, size_t n, size_t src_stride,
	       size_t size)
{
	for (size_t i = 0; i < n; i++)
		memcpy(dst + i * size, src + i * src_stride, size);
}

static void copy_run(unsigned char *dst, const unsigned char *src, size_t n, size_t src_stride,
		     size_t size)
{
	switch (size) {
	case 1: copy_run_sized(dst, src, n, src_stride, 1); break;
	case 2: copy_run_sized(dst, src, n, src_stride, 2); break;
	case 4: copy_run_sized(dst, src, n, src_stride, 4); break;
	case 8: copy_run_sized(dst, src, n, src_stride, 8); break;
	case 16: copy_run_sized(dst, src, n, src_stride, 16); break;
	default: copy_run_sized(dst, src, n, src_stride, size); break;
	}
}

/* Copies the current block in destination order: runs along the last axis,
 * an odometer over the others. */
static void copy_block(const struct reorder *r)
{
	size_t idx[FERRY_MAX_DIMS], soff = 0, doff = 0;
	int last = r->ndim - 1, k;

	for (k = 0; k <= last; k++) {
		idx[k] = r->lo[k];
		soff += r->lo[k] * r->fstride[k];
		doff += r->lo[k] * r->cstride[k];
	}
	for (;;) {
		copy_run(r->dst + doff, r->src + soff, r->hi[last] - r->lo[last],
			 r->fstride[last], r->size);
		for (k = last - 1; k >= 0; k--) {
			if (++idx[k] < r->hi[k]) {
				soff += r->fstride[k];
				doff += r->cstride[k];
				break;
			}
			soff -= (idx[k] - 1 - r->lo[k]) * r->fstride[k];
			doff -= (idx[k] - 1 - r->lo[k]) * r->cstride[k];
			idx[k] = r->lo[k];
		}
		if (k < 0)
			return;
	}
}

/* Copies the current block, halving it along its widest axis while it is big. */
static void reorder_block(struct reorder *r)
{
	size_t items = 1, widest = 0, lo, hi;
	int axis = 0;

	for (int k = 0; k < r->ndim; k++) {
		size_t extent = r->hi[k] - r->lo[k];
		items *= extent;
		if (extent > widest) {
			widest = extent;
			axis = k;
		}
	}
	if (items <= BLOCK_ITEMS) {
		copy_block(r);
		return;
	}
	lo = r->lo[axis];
	hi = r->hi[axis];
	r->hi[axis] = lo + widest / 2;
	reorder_block(r);
	r->hi[axis] = hi;
	r->lo[axis] = lo + widest / 2;
	reorder_block(r);
	r->lo[axis] = lo;
}

/* Copies shape into dims without its 1s (they change neither layout). Returns the
 * new rank, or -1 when the array is empty. */
static int squeeze_shape(size_t *dims, int ndim, const int64_t *shape)
{
	int n = 0;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] == 0)
			return -1;
		if (shape[i] != 1)
			dims[n++] = (size_t)shape[i];
	}
	return n;
}

void ferry__fortran_to_c(void *dst, const void *src, int ndim, const int64_t *shape,
			 size_t itemsize)
{
	struct reorder r = { .dst = dst, .src = src, .size = itemsize };
	size_t dims[FERRY_MAX_DIMS];
	int n = squeeze_shape(dims, ndim, shape);

	if (n < 0)
		return;
	if (n <= 1) {
		memcpy(dst, src, (n ? dims[0] : 1) * itemsize);
		return;
	}
	r.ndim = n;
	r.fstride[0] = itemsize;
	for (int k = 1; k < n; k++)
		r.fstride[k] = r.fstride[k - 1] * dims[k - 1];
	r.cstride[n - 1] = itemsize;
	for (int k = n - 2; k >= 0; k--)
		r.cstride[k] = r.cstride[k + 1] * dims[k + 1];
	for (int k = 0; k < n; k++)
		r.hi[k] = dims[k];
	reorder_block(&r);
}
