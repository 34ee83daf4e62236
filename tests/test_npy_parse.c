/*
 * NPY headers ferry must accept: every dtype and byte order, versions 1.0, 2.0
 * and 3.0, keys in any order, whitespace and trailing commas as numpy writes and
 * reads them, ranks 0..8 and 32, empty arrays, old 16-byte aligned and unaligned
 * headers, and write_header -> parse round trips.
 */
#include "helpers.h"

#include <errno.h>

#include "base/base.h"
#include "npy/npy.h"

#define BIG_ENDIAN_HOST (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)

static unsigned char buf[FERRY__NPY_MAX_HEADER + 64];
static char why[256];

/* Builds magic + version + length + dict, padded with spaces and '\n' to a
 * multiple of align (1: no padding at all). Returns the total length. */
static size_t build(int major, const char *dict, size_t align)
{
	size_t prefix = major == 1 ? 10 : 12, n = strlen(dict), total = prefix + n;
	if (align > 1)
		total = (total + 1 + align - 1) / align * align;
	T_ASSERT(total <= sizeof(buf));
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (unsigned char)major;
	buf[7] = 0;
	for (size_t i = 0; i < prefix - 8; i++)
		buf[8 + i] = (unsigned char)((total - prefix) >> (8 * i));
	memcpy(buf + prefix, dict, n);
	if (align > 1) {
		memset(buf + prefix + n, ' ', total - prefix - n - 1);
		buf[total - 1] = '\n';
	}
	return total;
}

/* Parses a dict text in a version 1.0 header and expects success. */
static void parse_ok(int major, const char *dict, size_t align, struct ferry__npy_header *h)
{
	size_t len = build(major, dict, align);
	int rc = ferry__npy_parse(buf, len, h, why, sizeof(why));
	if (rc != 0)
		T_FAIL("parse %s: rc %d: %s", dict, rc, why);
	T_EQ(h->data_offset, len);
	T_EQ(ferry__npy_header_length(buf, len < 12 ? len : 12, why, sizeof(why)), len);
}

struct descr_case {
	const char *descr;
	enum ferry_dtype dtype;
	size_t itemsize;
	int swap;	/* on a little-endian host */
};

static const struct descr_case descr_cases[] = {
	{ "|b1", FERRY_BOOL, 1, 0 },	  { "<b1", FERRY_BOOL, 1, 0 },
	{ "|i1", FERRY_INT8, 1, 0 },	  { ">i1", FERRY_INT8, 1, 0 },
	{ "<i2", FERRY_INT16, 2, 0 },	  { ">i2", FERRY_INT16, 2, 1 },
	{ "<i4", FERRY_INT32, 4, 0 },	  { ">i4", FERRY_INT32, 4, 1 },
	{ "<i8", FERRY_INT64, 8, 0 },	  { ">i8", FERRY_INT64, 8, 1 },
	{ "|u1", FERRY_UINT8, 1, 0 },	  { "<u1", FERRY_UINT8, 1, 0 },
	{ "<u2", FERRY_UINT16, 2, 0 },	  { ">u2", FERRY_UINT16, 2, 1 },
	{ "<u4", FERRY_UINT32, 4, 0 },	  { ">u4", FERRY_UINT32, 4, 1 },
	{ "<u8", FERRY_UINT64, 8, 0 },	  { ">u8", FERRY_UINT64, 8, 1 },
	{ "<f2", FERRY_FLOAT16, 2, 0 },	  { ">f2", FERRY_FLOAT16, 2, 1 },
	{ "<f4", FERRY_FLOAT32, 4, 0 },	  { ">f4", FERRY_FLOAT32, 4, 1 },
	{ "<f8", FERRY_FLOAT64, 8, 0 },	  { ">f8", FERRY_FLOAT64, 8, 1 },
	{ "<c8", FERRY_COMPLEX64, 8, 0 }, { ">c8", FERRY_COMPLEX64, 8, 1 },
	{ "<c16", FERRY_COMPLEX128, 16, 0 }, { ">c16", FERRY_COMPLEX128, 16, 1 },
	{ "=f8", FERRY_FLOAT64, 8, 0 },	  { "|f8", FERRY_FLOAT64, 8, 0 },
	{ "f4", FERRY_FLOAT32, 4, 0 },	  { "=c16", FERRY_COMPLEX128, 16, 0 },
};

/* Returns whether a descr's byte order swaps on this host. */
static int expected_swap(const struct descr_case *c)
{
	if (c->itemsize == 1 || (c->descr[0] != '<' && c->descr[0] != '>'))
		return 0;
	return BIG_ENDIAN_HOST ? c->descr[0] == '<' : c->swap;
}

static void test_descrs(void)
{
	char dict[128];
	struct ferry__npy_header h;
	for (size_t i = 0; i < FERRY__ARRAY_LEN(descr_cases); i++) {
		const struct descr_case *c = &descr_cases[i];
		snprintf(dict, sizeof(dict),
			 "{'descr': '%s', 'fortran_order': False, 'shape': (2, 3), }", c->descr);
		parse_ok(1, dict, 64, &h);
		T_EQ(h.dtype, c->dtype);
		T_EQ(h.itemsize, c->itemsize);
		T_EQ(h.itemsize, ferry_dtype_size(c->dtype));
		if (h.swap != expected_swap(c))
			T_FAIL("%s: swap %d", c->descr, h.swap);
		T_EQ(h.count, 6);
		T_EQ(h.data_size, 6 * c->itemsize);
	}
}

static const enum ferry_dtype all_dtypes[] = {
	FERRY_BOOL,    FERRY_INT8,    FERRY_INT16,   FERRY_INT32,	FERRY_INT64,
	FERRY_UINT8,   FERRY_UINT16,  FERRY_UINT32,  FERRY_UINT64,	FERRY_FLOAT16,
	FERRY_FLOAT32, FERRY_FLOAT64, FERRY_COMPLEX64, FERRY_COMPLEX128,
};

/* Writes a header, parses it back and checks every field. */
static void round_trip(enum ferry_dtype dtype, char order, int fortran, int ndim,
		       const int64_t *shape, int major)
{
	struct ferry__npy_header h;
	uint64_t count = 1;
	int len = ferry__npy_write_header(buf, sizeof(buf), dtype, order, fortran, ndim, shape,
					  major);
	size_t size = ferry_dtype_size(dtype);
	int component = dtype == FERRY_COMPLEX64 || dtype == FERRY_COMPLEX128 ? (int)size / 2
									      : (int)size;
	T_OK(len);
	T_EQ(len % 64, 0);
	T_EQ(buf[len - 1], '\n');
	if (ferry__npy_parse(buf, (size_t)len, &h, why, sizeof(why)) != 0)
		T_FAIL("round trip %s order %c rank %d: %s", ferry_dtype_name(dtype), order, ndim,
		       why);
	T_EQ(h.major, major ? major : 1);
	T_EQ(h.minor, 0);
	T_EQ(h.dtype, dtype);
	T_EQ(h.itemsize, size);
	T_EQ(h.fortran_order, fortran);
	T_EQ(h.ndim, ndim);
	for (int i = 0; i < ndim; i++) {
		T_EQ(h.shape[i], shape[i]);
		count *= (uint64_t)shape[i];
	}
	T_EQ(h.count, count);
	T_EQ(h.data_size, count * size);
	T_EQ(h.data_offset, len);
	T_EQ(h.swap, component > 1 && order == (BIG_ENDIAN_HOST ? '<' : '>'));
	T_EQ(ferry__npy_check_size(&h, h.data_offset + h.data_size, why, sizeof(why)), 0);
}

static void test_every_dtype_order_version(void)
{
	static const char orders[] = { '<', '>', '|', '=' };
	const int64_t shape[] = { 4, 1, 3 };
	for (size_t d = 0; d < FERRY__ARRAY_LEN(all_dtypes); d++)
		for (size_t o = 0; o < sizeof(orders); o++)
			for (int major = 0; major <= 3; major++)
				round_trip(all_dtypes[d], orders[o], (int)(d + o) % 2, 3, shape,
					   major);
}

static void test_ranks(void)
{
	int64_t shape[FERRY_MAX_DIMS];
	uint64_t seed = 42;
	for (int ndim = 0; ndim <= FERRY_MAX_DIMS; ndim++) {
		if (ndim > 8 && ndim < FERRY_MAX_DIMS)
			continue;
		for (int i = 0; i < ndim; i++)
			shape[i] = (int64_t)(t_rand(&seed) % (ndim > 8 ? 3 : ndim > 3 ? 40 : 100000));
		round_trip(FERRY_FLOAT32, '<', 0, ndim, shape, 0);
		round_trip(FERRY_UINT16, '>', 1, ndim, shape, 2);
	}
}

static void test_random_round_trips(void)
{
	int64_t shape[FERRY_MAX_DIMS];
	uint64_t seed = 7;
	for (int iter = 0; iter < 2000; iter++) {
		int ndim = (int)(t_rand(&seed) % 6);
		for (int i = 0; i < ndim; i++)
			shape[i] = (int64_t)(t_rand(&seed) % 5 ? t_rand(&seed) % 3000 : 0);
		round_trip(all_dtypes[t_rand(&seed) % FERRY__ARRAY_LEN(all_dtypes)],
			   "<>|="[t_rand(&seed) % 4], (int)(t_rand(&seed) % 2), ndim, shape,
			   (int)(t_rand(&seed) % 4));
	}
}

static void test_numpy_text(void)
{
	static const char expect[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
	static const char expect1[] = "{'descr': '|u1', 'fortran_order': True, 'shape': (7,), }";
	static const char expect0[] = "{'descr': '>c16', 'fortran_order': False, 'shape': (), }";
	const int64_t shape[] = { 3, 4 }, shape1[] = { 7 };
	int len = ferry__npy_write_header(buf, sizeof(buf), FERRY_FLOAT32, '<', 0, 2, shape, 0);
	T_EQ(len, 128);
	T_ASSERT(!memcmp(buf, "\x93NUMPY\x01\x00\x76\x00", 10));
	T_ASSERT(!memcmp(buf + 10, expect, strlen(expect)));
	len = ferry__npy_write_header(buf, sizeof(buf), FERRY_UINT8, '|', 1, 1, shape1, 3);
	T_EQ(len, 128);
	T_ASSERT(!memcmp(buf, "\x93NUMPY\x03\x00\x74\x00\x00\x00", 12));
	T_ASSERT(!memcmp(buf + 12, expect1, strlen(expect1)));
	len = ferry__npy_write_header(buf, sizeof(buf), FERRY_COMPLEX128, '>', 0, 0, NULL, 0);
	T_EQ(len, 128);
	T_ASSERT(!memcmp(buf + 10, expect0, strlen(expect0)));
}

static void test_write_errors(void)
{
	const int64_t shape[] = { 3, -1 };
	T_EQ(ferry__npy_write_header(buf, 127, FERRY_FLOAT32, '<', 0, 1, shape, 0), -ENOSPC);
	T_EQ(ferry__npy_write_header(NULL, 0, FERRY_FLOAT32, '<', 0, 1, shape, 0), -ENOSPC);
	T_EQ(ferry__npy_write_header(buf, 128, FERRY_FLOAT32, '<', 0, 1, shape, 0), 128);
	T_EQ(ferry__npy_write_header(buf, 64, FERRY_FLOAT32, '<', 0, 2, shape, 0), -EINVAL);
	T_EQ(ferry__npy_write_header(buf, 64, FERRY_DTYPE_INVALID, '<', 0, 1, shape, 0), -EINVAL);
	T_EQ(ferry__npy_write_header(buf, 64, FERRY_FLOAT32, 'x', 0, 1, shape, 0), -EINVAL);
	T_EQ(ferry__npy_write_header(buf, 64, FERRY_FLOAT32, '<', 0, 33, shape, 0), -EINVAL);
	T_EQ(ferry__npy_write_header(buf, 64, FERRY_FLOAT32, '<', 0, 1, shape, 4), -EINVAL);
}

/* All six orders of the three keys, with the spellings numpy and others write. */
static void test_key_orders(void)
{
	static const char *const entries[3] = { "'descr': '>i4'", "\"fortran_order\" :True",
						"'shape':(5 , 6,)" };
	static const int perms[6][3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 },
					 { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };
	char dict[256];
	struct ferry__npy_header h;
	for (int p = 0; p < 6; p++) {
		for (int comma = 0; comma < 2; comma++) {
			snprintf(dict, sizeof(dict), "{%s, %s,\n\t%s%s}", entries[perms[p][0]],
				 entries[perms[p][1]], entries[perms[p][2]], comma ? ", " : "");
			parse_ok(1 + p % 3, dict, 64, &h);
			T_EQ(h.dtype, FERRY_INT32);
			T_EQ(h.fortran_order, 1);
			T_EQ(h.ndim, 2);
			T_EQ(h.shape[0], 5);
			T_EQ(h.shape[1], 6);
		}
	}
}

static void test_whitespace_and_shapes(void)
{
	struct ferry__npy_header h;
	parse_ok(1, "  \n{ 'descr' : \"<f8\" ,'fortran_order':False,'shape':( ) }  \r\n  ", 1, &h);
	T_EQ(h.ndim, 0);
	T_EQ(h.count, 1);
	T_EQ(h.data_size, 8);
	parse_ok(1, "{'descr':'<f8','fortran_order':False,'shape':(3,)}", 1, &h);
	T_EQ(h.ndim, 1);
	T_EQ(h.shape[0], 3);
	parse_ok(1, "{'descr':'<f8','fortran_order':False,'shape':(3,4)}", 1, &h);
	T_EQ(h.count, 12);
	parse_ok(2, "{'descr': '<i2', 'fortran_order': False, 'shape': (0,), }", 64, &h);
	T_EQ(h.count, 0);
	T_EQ(h.data_size, 0);
	T_EQ(ferry__npy_check_size(&h, h.data_offset, why, sizeof(why)), 0);
	parse_ok(1, "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 0, 5), }", 64, &h);
	T_EQ(h.count, 0);
	T_EQ(h.shape[2], 5);
	/* Python 2 numpy wrote long dims as 3L; versions 1.0 and 2.0 may hold them. */
	parse_ok(1, "{'descr': '<i2', 'fortran_order': False, 'shape': (3L, 4L), }", 64, &h);
	T_EQ(h.count, 12);
	parse_ok(2, "{'descr': '<i2', 'fortran_order': False, 'shape': (3L,), }", 64, &h);
	T_EQ(h.count, 3);
}

static void test_large_dims(void)
{
	struct ferry__npy_header h;
	parse_ok(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2147483648, 2147483648), }",
		 64, &h);
	T_EQ(h.count, 1ull << 62);
	T_EQ(h.data_size, 1ull << 62);
	/* Zero dims do not take part in the overflow check, as in numpy. */
	parse_ok(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 576460752303423488), }",
		 64, &h);
	T_EQ(h.count, 0);
	parse_ok(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (9223372036854775000,), }",
		 64, &h);
	T_EQ(h.data_size, 9223372036854775000ull);
}

/* numpy before 1.14 padded to 16 bytes; some writers do not pad at all. */
static void test_unaligned_headers(void)
{
	struct ferry__npy_header h;
	parse_ok(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 16, &h);
	T_EQ(h.data_offset, 80);
	T_EQ(h.data_offset % 64 != 0, 1);
	parse_ok(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 16, &h);
	T_EQ(h.data_offset, 80);
	parse_ok(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4)}", 1, &h);
	T_EQ(h.data_offset, 12 + 57);
	T_EQ(ferry__npy_check_size(&h, 12 + 57 + 48, why, sizeof(why)), 0);
}

/* A dict of exactly the cap, in version 2.0, still parses. */
static void test_header_at_cap(void)
{
	static char dict[FERRY__NPY_MAX_HEADER + 1];
	struct ferry__npy_header h;
	const char *text = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
	memset(dict, ' ', FERRY__NPY_MAX_HEADER);
	memcpy(dict, text, strlen(text));
	dict[FERRY__NPY_MAX_HEADER - 1] = '\n';
	dict[FERRY__NPY_MAX_HEADER] = '\0';
	parse_ok(2, dict, 1, &h);
	T_EQ(h.data_offset, 12 + FERRY__NPY_MAX_HEADER);
	T_EQ(h.count, 12);
}

static void test_dtype_names(void)
{
	T_ASSERT(!strcmp(ferry_dtype_name(FERRY_FLOAT32), "float32"));
	T_ASSERT(!strcmp(ferry_dtype_name(FERRY_BOOL), "bool"));
	T_ASSERT(!strcmp(ferry_dtype_name(FERRY_COMPLEX128), "complex128"));
	T_ASSERT(!strcmp(ferry_dtype_name(FERRY_UINT64), "uint64"));
	T_ASSERT(!strcmp(ferry_dtype_name(FERRY_DTYPE_INVALID), "invalid"));
	T_ASSERT(!strcmp(ferry_dtype_name((enum ferry_dtype)99), "invalid"));
	T_EQ(ferry_dtype_size(FERRY_DTYPE_INVALID), 0);
	T_EQ(ferry_dtype_size(FERRY_FLOAT16), 2);
	T_EQ(ferry_dtype_size(FERRY_COMPLEX64), 8);
}

int main(void)
{
	test_descrs();
	test_every_dtype_order_version();
	test_ranks();
	test_random_round_trips();
	test_numpy_text();
	test_write_errors();
	test_key_orders();
	test_whitespace_and_shapes();
	test_large_dims();
	test_unaligned_headers();
	test_header_at_cap();
	test_dtype_names();
	return T_EXIT_PASS;
}
