/*
 * The device's conversion operation itself (convert_async of device.h), on
 * the device FERRY_DEVICE names: the host device in make test, CUDA's kernels
 * on the GPU machine. Byte swaps of 2-, 4-, 8- and 16-byte items and of
 * complex halves, Fortran-to-C transposes of ranks 0 to 6 and 32 with odd
 * shapes, tile edges, axes of 1 and empty arrays, with and without a swap,
 * out of place and (where allowed) in place, each queued on one stream
 * between the copy that brings its input and the one that takes its output
 * back, half of them reading from scratch memory allocated and freed in the
 * stream's order. Every byte is compared with a naive reference.
 *
 * --big (tests/gpu/convert.sh): 64 MiB arrays, compared with the CPU's
 * conversion (base/convert.c), and the rate of each conversion.
 */
#include "base/base.h"
#include "helpers.h"

struct env {
	struct ferry__device *dev;
	struct ferry__stream *s;
	uint64_t seed;
	unsigned runs;
};

static uint64_t item_count(const struct ferry__convert *c)
{
	uint64_t n = 1;
	for (int i = 0; i < c->ndim; i++)
		n *= (uint64_t)c->shape[i];
	return n;
}

/* Byte b of C-order item e: from Fortran item f (or e), its part reversed. */
static void reference(unsigned char *want, const unsigned char *src, const struct ferry__convert *c)
{
	int64_t idx[FERRY_MAX_DIMS] = { 0 };
	size_t isz = c->itemsize, part = c->swap ? (c->is_complex ? isz / 2 : isz) : 1;
	uint64_t count = item_count(c);
	for (uint64_t e = 0; e < count; e++) {
		uint64_t f = c->fortran ? 0 : e, stride = 1;
		for (int k = 0; c->fortran && k < c->ndim; k++) {
			f += (uint64_t)idx[k] * stride;
			stride *= (uint64_t)c->shape[k];
		}
		for (size_t b = 0; b < isz; b++) {
			size_t in_part = b % part;
			want[e * isz + b] = src[f * isz + (b - in_part) + part - 1 - in_part];
		}
		for (int k = c->ndim - 1; k >= 0 && ++idx[k] == c->shape[k]; k--)
			idx[k] = 0;
	}
}

static void describe_case(char *out, size_t cap, const struct ferry__convert *c, int in_place)
{
	size_t n = (size_t)snprintf(out, cap, "%zu-byte%s items, %s%s%s, shape (", c->itemsize,
				    c->is_complex ? " complex" : "", c->swap ? "swapped, " : "",
				    c->fortran ? "Fortran order" : "C order", in_place ? ", in place" : "");
	for (int i = 0; i < c->ndim && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%lld", i ? ", " : "", (long long)c->shape[i]);
	if (n < cap)
		snprintf(out + n, cap - n, ")");
}

static void compare(const unsigned char *got, const unsigned char *want, size_t len,
		    const struct ferry__convert *c, int in_place)
{
	char what[512];
	for (size_t i = 0; i < len; i++)
		if (got[i] != want[i]) {
			describe_case(what, sizeof(what), c, in_place);
			T_FAIL("%s: byte %zu of %zu is 0x%02x, want 0x%02x", what, i, len, got[i], want[i]);
		}
}

/* Device memory for the input: scratch in the stream's order, or mem_alloc. */
static void *input_memory(struct env *e, size_t len, int scratch)
{
	void *p;
	if (scratch)
		T_OK(e->dev->ops->scratch_alloc(e->dev, e->s, len, &p));
	else
		T_OK(e->dev->ops->mem_alloc(e->dev, len, &p));
	return p;
}

/* Copies in, converts, copies back, all queued on one stream; then compares. */
static void run_case(struct env *e, const struct ferry__convert *c, int in_place)
{
	const struct ferry__device_ops *ops = e->dev->ops;
	size_t len = (size_t)(item_count(c) * c->itemsize), alloc = len ? len : 1;
	unsigned char *host_in, *host_out, *want = malloc(alloc);
	int scratch = e->runs++ % 2;
	T_ASSERT(want);
	T_OK(ops->pinned_alloc(e->dev, alloc, (void **)&host_in));
	T_OK(ops->pinned_alloc(e->dev, alloc, (void **)&host_out));
	for (size_t i = 0; i < len; i++)
		host_in[i] = (unsigned char)t_rand(&e->seed);
	memset(host_out, 0x5a, alloc);
	reference(want, host_in, c);
	void *in = input_memory(e, alloc, scratch), *out = in;
	if (!in_place)
		T_OK(ops->mem_alloc(e->dev, alloc, &out));
	T_OK(ops->copy_async(e->dev, e->s, in, host_in, len, FERRY__H2D));
	T_OK(ops->convert_async(e->dev, e->s, out, in, c));
	T_OK(ops->copy_async(e->dev, e->s, host_out, out, len, FERRY__D2H));
	if (scratch)
		ops->scratch_free(e->dev, e->s, in);
	T_OK(ops->stream_sync(e->dev, e->s));
	compare(host_out, want, len, c, in_place);
	if (!scratch)
		ops->mem_free(e->dev, in);
	if (!in_place)
		ops->mem_free(e->dev, out);
	ops->pinned_free(e->dev, host_in, alloc);
	ops->pinned_free(e->dev, host_out, alloc);
	free(want);
}

static int long_axes(const struct ferry__convert *c)
{
	int n = 0;
	for (int i = 0; i < c->ndim; i++)
		n += c->shape[i] > 1;
	return n;
}

/* Every kind of item, swapped or not, C or Fortran order, for one shape. */
static void run_shape(struct env *e, int ndim, const int64_t *shape)
{
	static const struct { size_t itemsize; int is_complex; } kinds[] = {
		{ 1, 0 }, { 2, 0 }, { 4, 0 }, { 8, 0 }, { 8, 1 }, { 16, 0 }, { 16, 1 },
	};
	for (size_t k = 0; k < FERRY__ARRAY_LEN(kinds); k++)
		for (int mode = 0; mode < 4; mode++) {
			struct ferry__convert c = { .itemsize = kinds[k].itemsize,
						    .is_complex = kinds[k].is_complex,
						    .swap = mode & 1, .fortran = mode >> 1, .ndim = ndim };
			memcpy(c.shape, shape, sizeof(c.shape[0]) * (size_t)ndim);
			run_case(e, &c, 0);
			if (!c.fortran || long_axes(&c) <= 1)
				run_case(e, &c, 1);
		}
}

static void test_shapes(struct env *e)
{
	static const struct { int ndim; int64_t shape[6]; } shapes[] = {
		{ 0, { 0 } },		  { 1, { 1237 } },	     { 1, { 0 } },
		{ 2, { 37, 29 } },	  { 2, { 67, 131 } },	     { 2, { 1, 9 } },
		{ 2, { 9, 1 } },	  { 2, { 300, 2 } },	     { 2, { 2, 300 } },
		{ 2, { 0, 5 } },	  { 2, { 32, 32 } },	     { 2, { 33, 64 } },
		{ 3, { 5, 7, 11 } },	  { 3, { 33, 5, 37 } },      { 3, { 1, 7, 1 } },
		{ 3, { 4, 0, 4 } },	  { 3, { 2, 64, 3 } },	     { 4, { 3, 5, 2, 7 } },
		{ 4, { 65, 3, 2, 33 } },  { 5, { 2, 3, 5, 1, 7 } },  { 6, { 2, 3, 1, 5, 2, 3 } },
		{ 6, { 3, 2, 4, 5, 3, 2 } }, { 6, { 1, 1, 1, 1, 1, 1 } },
	};
	for (size_t i = 0; i < FERRY__ARRAY_LEN(shapes); i++)
		run_shape(e, shapes[i].ndim, shapes[i].shape);
}

/* Rank 32: axes of 1 and 2, so that only the middle axes vary in number. */
static void test_rank_32(struct env *e)
{
	int64_t shape[FERRY_MAX_DIMS];
	for (int iter = 0; iter < 4; iter++) {
		for (int i = 0; i < FERRY_MAX_DIMS; i++)
			shape[i] = 1 + (t_rand(&e->seed) % 3 == 0);
		run_shape(e, FERRY_MAX_DIMS, shape);
	}
}

/* ---- --big: 64 MiB arrays against the CPU's conversion ---- */

static double seconds(void)
{
	return (double)ferry__now_ns() / 1e9;
}

/* What the CPU makes of src: base/convert.c, as loads without the device's
 * conversions do. */
static void cpu_convert(unsigned char *dst, unsigned char *src, const struct ferry__convert *c)
{
	uint64_t count = item_count(c);
	if (c->swap)
		ferry__byteswap(src, count, c->itemsize, c->is_complex);
	if (c->fortran)
		ferry__fortran_to_c(dst, src, c->ndim, c->shape, c->itemsize);
	else
		memcpy(dst, src, (size_t)(count * c->itemsize));
}

/* Converts once to warm up, then times a second run; compares the output. */
static void run_big(struct env *e, const struct ferry__convert *c, int in_place)
{
	const struct ferry__device_ops *ops = e->dev->ops;
	size_t len = (size_t)(item_count(c) * c->itemsize);
	unsigned char *host = malloc(len), *want = malloc(len), *got;
	void *in, *out;
	char what[512];
	T_ASSERT(host && want);
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = t_rand(&e->seed);
		memcpy(host + i, &v, len - i < 8 ? len - i : 8);
	}
	T_OK(ops->mem_alloc(e->dev, len, &in));
	out = in;
	if (!in_place)
		T_OK(ops->mem_alloc(e->dev, len, &out));
	double took = 0;
	for (int round = 0; round < 2; round++) {
		T_OK(ops->copy_sync(e->dev, in, host, len, FERRY__H2D));
		double start = seconds();
		T_OK(ops->convert_async(e->dev, e->s, out, in, c));
		T_OK(ops->stream_sync(e->dev, e->s));
		took = seconds() - start;
	}
	got = t_copy_back(e->dev, out, len);
	cpu_convert(want, host, c);
	compare(got, want, len, c, in_place);
	describe_case(what, sizeof(what), c, in_place);
	printf("%-70s %6.1f MiB  %8.3f ms  %7.1f GB/s\n", what, (double)len / (1 << 20),
	       took * 1e3, (double)len / took / 1e9);
	ops->mem_free(e->dev, in);
	if (!in_place)
		ops->mem_free(e->dev, out);
	free(host);
	free(want);
	free(got);
}

static void test_big(struct env *e)
{
	static const struct { size_t itemsize; int is_complex, swap, fortran, ndim; int64_t shape[7]; } cases[] = {
		{ 4, 0, 0, 1, 2, { 4096, 4096 } },
		{ 4, 0, 1, 1, 2, { 4099, 4093 } },
		{ 8, 0, 1, 1, 2, { 2048, 4096 } },
		{ 8, 1, 1, 1, 3, { 1024, 1024, 8 } },
		{ 16, 1, 1, 1, 3, { 512, 257, 32 } },
		{ 2, 0, 0, 1, 4, { 64, 64, 64, 128 } },
		{ 1, 0, 0, 1, 6, { 16, 16, 16, 16, 16, 64 } },
		{ 4, 0, 1, 1, 3, { 3, 4096, 1366 } },
		{ 2, 0, 1, 0, 1, { 32 << 20 } },
		{ 4, 0, 1, 0, 1, { 16 << 20 } },
		{ 8, 0, 1, 0, 1, { 8 << 20 } },
		{ 16, 1, 1, 0, 1, { 4 << 20 } },
	};
	for (size_t i = 0; i < FERRY__ARRAY_LEN(cases); i++) {
		struct ferry__convert c = { .itemsize = cases[i].itemsize,
					    .is_complex = cases[i].is_complex, .swap = cases[i].swap,
					    .fortran = cases[i].fortran, .ndim = cases[i].ndim };
		memcpy(c.shape, cases[i].shape, sizeof(c.shape[0]) * (size_t)c.ndim);
		run_big(e, &c, !c.fortran);
	}
}

int main(int argc, char **argv)
{
	struct env e = { .dev = t_open_device(), .seed = 20261204 };
	char how[256] = "";
	if (!(e.dev->ops->flags & FERRY__DEV_CONVERT))
		T_SKIP("the %s device has no conversions", e.dev->ops->name);
	T_OK(e.dev->ops->convert_ready(e.dev, how, sizeof(how)));
	printf("%s device: conversions by %s\n", e.dev->ops->name, how);
	T_OK(e.dev->ops->stream_create(e.dev, &e.s));
	if (argc > 1 && !strcmp(argv[1], "--big")) {
		test_big(&e);
	} else {
		test_shapes(&e);
		test_rank_32(&e);
		printf("%u conversions checked\n", e.runs);
	}
	e.dev->ops->stream_destroy(e.dev, e.s);
	e.dev->ops->close(e.dev);
	return T_EXIT_PASS;
}
