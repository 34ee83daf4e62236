/*
 * Host-side conversions: byte swapping and Fortran-to-C layout. See convert.h.
 */
#include "convert.h"

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

/* Elements per side of the square tiles a plane is transposed in: 32 x 32 tiles of
 * up to 16-byte items read 32 cache lines and keep them hot for the whole tile. */
#define TILE 32

/*
 * Transposes one plane: element (a, b) sits at src + a*size + b*src_b_stride and
 * goes to dst + a*dst_a_stride + b*size. Inlined once per constant size, so the
 * memcpy becomes a single move.
 */
static inline __attribute__((always_inline)) void
transpose_plane_sized(unsigned char *dst, const unsigned char *src, size_t rows, size_t cols,
		      size_t src_b_stride, size_t dst_a_stride, size_t size)
{
	for (size_t a0 = 0; a0 < rows; a0 += TILE) {
		size_t a1 = a0 + TILE < rows ? a0 + TILE : rows;
		for (size_t b0 = 0; b0 < cols; b0 += TILE) {
			size_t b1 = b0 + TILE < cols ? b0 + TILE : cols;
			for (size_t a = a0; a < a1; a++)
				for (size_t b = b0; b < b1; b++)
					memcpy(dst + a * dst_a_stride + b * size,
					       src + a * size + b * src_b_stride, size);
		}
	}
}

static void transpose_plane(unsigned char *dst, const unsigned char *src, size_t rows,
			    size_t cols, size_t src_b_stride, size_t dst_a_stride, size_t size)
{
	switch (size) {
	case 1: transpose_plane_sized(dst, src, rows, cols, src_b_stride, dst_a_stride, 1); break;
	case 2: transpose_plane_sized(dst, src, rows, cols, src_b_stride, dst_a_stride, 2); break;
	case 4: transpose_plane_sized(dst, src, rows, cols, src_b_stride, dst_a_stride, 4); break;
	case 8: transpose_plane_sized(dst, src, rows, cols, src_b_stride, dst_a_stride, 8); break;
	case 16: transpose_plane_sized(dst, src, rows, cols, src_b_stride, dst_a_stride, 16); break;
	default: transpose_plane_sized(dst, src, rows, cols, src_b_stride, dst_a_stride, size);
	}
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
	size_t dims[FERRY_MAX_DIMS], fstride[FERRY_MAX_DIMS], cstride[FERRY_MAX_DIMS];
	size_t idx[FERRY_MAX_DIMS] = { 0 }, soff = 0, doff = 0;
	int n = squeeze_shape(dims, ndim, shape), k;

	if (n < 0)
		return;
	if (n <= 1) {
		memcpy(dst, src, (n ? dims[0] : 1) * itemsize);
		return;
	}
	fstride[0] = itemsize;
	for (k = 1; k < n; k++)
		fstride[k] = fstride[k - 1] * dims[k - 1];
	cstride[n - 1] = itemsize;
	for (k = n - 2; k >= 0; k--)
		cstride[k] = cstride[k + 1] * dims[k + 1];
	/* The first axis is contiguous in src and the last in dst: transpose that
	 * plane in tiles, walking the axes between them with an odometer. */
	for (;;) {
		transpose_plane((unsigned char *)dst + doff, (const unsigned char *)src + soff,
				dims[0], dims[n - 1], fstride[n - 1], cstride[0], itemsize);
		for (k = n - 2; k >= 1; k--) {
			if (++idx[k] < dims[k]) {
				soff += fstride[k];
				doff += cstride[k];
				break;
			}
			soff -= fstride[k] * (dims[k] - 1);
			doff -= cstride[k] * (dims[k] - 1);
			idx[k] = 0;
		}
		if (k < 1)
			return;
	}
}
