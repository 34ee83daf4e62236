/*
 * Host-side conversions against naive references: byte swapping of 2-, 4-, 8-
 * and 16-byte items and of complex components, and Fortran-to-C reordering for
 * ranks 0..8 (and 32) with odd sizes, item sizes and unaligned buffers.
 */
#include "helpers.h"

#include "base/base.h"
#include "npy/npy.h"

#define GUARD 16
#define GUARD_BYTE 0xe5

static void fill_random(unsigned char *p, size_t len, uint64_t *seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)t_rand(seed);
}

/* Returns a buffer of len bytes plus guards (free() at buf - GUARD - offset). */
static unsigned char *guarded(size_t len, size_t offset)
{
	unsigned char *b = malloc(len + 2 * GUARD + offset);
	T_ASSERT(b);
	memset(b, GUARD_BYTE, len + 2 * GUARD + offset);
	return b + GUARD + offset;
}

static void check_guards(const unsigned char *p, size_t len, const char *what)
{
	for (size_t i = 1; i <= GUARD; i++)
		if (p[-(ptrdiff_t)i] != GUARD_BYTE || p[len + i - 1] != GUARD_BYTE)
			T_FAIL("%s wrote outside its buffer", what);
}

/* ---- byteswap ---- */

static void ref_byteswap(unsigned char *p, uint64_t count, size_t itemsize, int is_complex)
{
	size_t part = is_complex ? itemsize / 2 : itemsize;
	for (uint64_t i = 0; i < count * (itemsize / part); i++)
		for (size_t lo = 0, hi = part - 1; lo < hi; lo++, hi--) {
			unsigned char t = p[i * part + lo];
			p[i * part + lo] = p[i * part + hi];
			p[i * part + hi] = t;
		}
}

static void check_byteswap(uint64_t count, size_t itemsize, int is_complex, size_t offset,
			   uint64_t *seed)
{
	size_t len = (size_t)count * itemsize;
	unsigned char *data = guarded(len, offset), *orig = malloc(len + 1), *want = malloc(len + 1);
	T_ASSERT(orig && want);
	fill_random(data, len, seed);
	memcpy(orig, data, len);
	memcpy(want, data, len);
	ref_byteswap(want, count, itemsize, is_complex);
	ferry__byteswap(data, count, itemsize, is_complex);
	if (memcmp(data, want, len))
		T_FAIL("byteswap count %" PRIu64 " size %zu complex %d offset %zu", count, itemsize,
		       is_complex, offset);
	check_guards(data, len, "byteswap");
	ferry__byteswap(data, count, itemsize, is_complex);
	T_ASSERT(!memcmp(data, orig, len));
	free(data - GUARD - offset);
	free(orig);
	free(want);
}

static void test_byteswap_known_values(void)
{
	uint16_t a = 0x1122;
	uint32_t b = 0x11223344;
	uint64_t c = 0x1122334455667788ull;
	unsigned char z[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	static const unsigned char z_complex[16] = { 8, 7, 6, 5, 4, 3, 2, 1,
						     16, 15, 14, 13, 12, 11, 10, 9 };
	ferry__byteswap(&a, 1, 2, 0);
	ferry__byteswap(&b, 1, 4, 0);
	ferry__byteswap(&c, 1, 8, 0);
	T_EQ(a, 0x2211);
	T_EQ(b, 0x44332211);
	T_EQ(c, 0x8877665544332211ull);
	ferry__byteswap(z, 1, 16, 1);
	T_ASSERT(!memcmp(z, z_complex, 16));
	ferry__byteswap(z, 1, 16, 1);
	ferry__byteswap(z, 2, 8, 1);
	T_EQ(z[0], 4);
	T_EQ(z[4], 8);
	T_EQ(z[8], 12);
	ferry__byteswap(z, 16, 1, 0);
	T_EQ(z[0], 4);
}

static void test_byteswap(void)
{
	static const struct { size_t itemsize; int is_complex; } kinds[] = {
		{ 1, 0 }, { 2, 0 }, { 4, 0 }, { 8, 0 }, { 16, 0 }, { 3, 0 }, { 8, 1 }, { 16, 1 },
	};
	static const uint64_t counts[] = { 0, 1, 2, 3, 7, 64, 1001, 65537 };
	uint64_t seed = 1;
	for (size_t k = 0; k < FERRY__ARRAY_LEN(kinds); k++)
		for (size_t n = 0; n < FERRY__ARRAY_LEN(counts); n++)
			for (size_t offset = 0; offset < 3; offset++)
				check_byteswap(counts[n], kinds[k].itemsize, kinds[k].is_complex,
					       offset, &seed);
}

/* ---- Fortran to C ---- */

/* Returns the number of elements of shape. */
static uint64_t shape_count(int ndim, const int64_t *shape)
{
	uint64_t n = 1;
	for (int i = 0; i < ndim; i++)
		n *= (uint64_t)shape[i];
	return n;
}

/* Element by element: for each C index, the Fortran offset of the same index. */
static void ref_fortran_to_c(unsigned char *dst, const unsigned char *src, int ndim,
			     const int64_t *shape, size_t size)
{
	int64_t idx[FERRY_MAX_DIMS] = { 0 };
	uint64_t count = shape_count(ndim, shape);
	for (uint64_t c = 0; c < count; c++) {
		uint64_t f = 0, stride = 1;
		for (int k = 0; k < ndim; k++) {
			f += (uint64_t)idx[k] * stride;
			stride *= (uint64_t)shape[k];
		}
		memcpy(dst + c * size, src + f * size, size);
		for (int k = ndim - 1; k >= 0 && ++idx[k] == shape[k]; k--)
			idx[k] = 0;
	}
}

static void format_shape(char *out, size_t cap, int ndim, const int64_t *shape)
{
	size_t n = (size_t)snprintf(out, cap, "(");
	for (int i = 0; i < ndim && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%" PRId64, i ? ", " : "", shape[i]);
	if (n < cap)
		snprintf(out + n, cap - n, ")");
}

static void check_fortran_to_c(int ndim, const int64_t *shape, size_t size, size_t offset,
			       uint64_t *seed)
{
	size_t len = (size_t)shape_count(ndim, shape) * size;
	unsigned char *src = guarded(len, offset), *dst = guarded(len, offset);
	unsigned char *want = malloc(len + 1);
	char text[512];

	T_ASSERT(want);
	fill_random(src, len, seed);
	ref_fortran_to_c(want, src, ndim, shape, size);
	ferry__fortran_to_c(dst, src, ndim, shape, size);
	if (memcmp(dst, want, len)) {
		format_shape(text, sizeof(text), ndim, shape);
		T_FAIL("fortran_to_c shape %s itemsize %zu offset %zu differs", text, size, offset);
	}
	check_guards(dst, len, "fortran_to_c");
	free(src - GUARD - offset);
	free(dst - GUARD - offset);
	free(want);
}

static void test_fortran_fixed_shapes(void)
{
	static const struct { int ndim; int64_t shape[4]; } shapes[] = {
		{ 0, { 0 } },	      { 1, { 1 } },	       { 1, { 17 } },	      { 1, { 0 } },
		{ 2, { 1, 1 } },      { 2, { 3, 5 } },	       { 2, { 5, 3 } },	      { 2, { 1, 9 } },
		{ 2, { 9, 1 } },      { 2, { 31, 33 } },       { 2, { 67, 131 } },    { 2, { 300, 2 } },
		{ 2, { 2, 300 } },    { 2, { 0, 5 } },	       { 2, { 1000, 1000 } }, { 3, { 33, 5, 37 } },
		{ 3, { 1, 7, 1 } },   { 3, { 4, 0, 4 } },      { 3, { 2, 64, 3 } },   { 4, { 3, 1, 5, 1 } },
		{ 4, { 7, 6, 5, 4 } }, { 4, { 1, 1, 1, 8 } }, { 4, { 65, 3, 2, 33 } },
	};
	static const size_t sizes[] = { 1, 2, 4, 8, 16, 3, 12 };
	uint64_t seed = 3;
	for (size_t i = 0; i < FERRY__ARRAY_LEN(shapes); i++)
		for (size_t s = 0; s < FERRY__ARRAY_LEN(sizes); s++)
			check_fortran_to_c(shapes[i].ndim, shapes[i].shape, sizes[s], s % 3, &seed);
}

/* Random shapes of every rank from 0 to 8, with odd sizes, and rank 32. */
static void test_fortran_random_shapes(void)
{
	static const size_t sizes[] = { 1, 2, 4, 8, 16, 5 };
	int64_t shape[FERRY_MAX_DIMS];
	uint64_t seed = 11;
	for (int ndim = 0; ndim <= 8; ndim++)
		for (int iter = 0; iter < 40; iter++) {
			uint64_t limit = ndim <= 2 ? 90 : ndim <= 4 ? 12 : 5;
			for (int i = 0; i < ndim; i++)
				shape[i] = 1 + (int64_t)(t_rand(&seed) % limit);
			check_fortran_to_c(ndim, shape, sizes[iter % FERRY__ARRAY_LEN(sizes)],
					   (size_t)iter % 2, &seed);
		}
	for (int iter = 0; iter < 8; iter++) {
		for (int i = 0; i < FERRY_MAX_DIMS; i++)
			shape[i] = 1 + (int64_t)(t_rand(&seed) % 4 == 0);
		check_fortran_to_c(FERRY_MAX_DIMS, shape, 4, 0, &seed);
	}
}

int main(void)
{
	test_byteswap_known_values();
	test_byteswap();
	test_fortran_fixed_shapes();
	test_fortran_random_shapes();
	return T_EXIT_PASS;
}
