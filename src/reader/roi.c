/*
 * Regions of interest for the reader, with DALI's semantics: roi_start,
 * roi_end / roi_shape (absolute or relative to the extent) on roi_axes, in
 * C-order coordinates, and an out-of-bounds policy (error, pad, trim). Also the
 * contiguous byte runs a region needs from a C-order payload, and fill values.
 */
#include "reader/reader.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* Runs one region may need at most (each is a read request or a copy). */
#define MAX_RUNS (1u << 26)

static int spec_fail(const char *what)
{
	return ferry__fail(-FERRY_ECONFIG, "reader: %s", what);
}

static int spec_axes(const struct ferry_reader_config *cfg, struct ferry__roi_spec *spec)
{
	int seen[FERRY_MAX_DIMS] = { 0 };

	for (int k = 0; k < spec->n; k++) {
		int ax = cfg->roi_axes ? cfg->roi_axes[k] : k;
		if (ax < 0 || ax >= FERRY_MAX_DIMS)
			return ferry__fail(-FERRY_ECONFIG, "reader: roi axis %d is not an axis", ax);
		if (seen[ax]++)
			return ferry__fail(-FERRY_ECONFIG, "reader: roi axis %d given twice", ax);
		spec->axes[k] = ax;
	}
	return 0;
}

static void copy_values(struct ferry__roi_spec *spec, const struct ferry_reader_config *cfg)
{
	size_t n = (size_t)spec->n;

	if (cfg->roi_start)
		memcpy(spec->start, cfg->roi_start, n * sizeof(int64_t));
	if (cfg->roi_start_rel)
		memcpy(spec->start_rel, cfg->roi_start_rel, n * sizeof(double));
	if (cfg->roi_end)
		memcpy(spec->end, cfg->roi_end, n * sizeof(int64_t));
	if (cfg->roi_end_rel)
		memcpy(spec->end_rel, cfg->roi_end_rel, n * sizeof(double));
	if (cfg->roi_shape)
		memcpy(spec->shape, cfg->roi_shape, n * sizeof(int64_t));
	if (cfg->roi_shape_rel)
		memcpy(spec->shape_rel, cfg->roi_shape_rel, n * sizeof(double));
}

/* Relative values are finite fractions of an extent. */
static int check_relative(const struct ferry__roi_spec *spec)
{
	static const char *const names[] = { "roi_start_rel", "roi_end_rel", "roi_shape_rel" };
	const double *values[] = { spec->has_start == 2 ? spec->start_rel : NULL,
				   spec->has_end == 2 ? spec->end_rel : NULL,
				   spec->has_shape == 2 ? spec->shape_rel : NULL };
	for (int a = 0; a < 3; a++)
		for (int k = 0; values[a] && k < spec->n; k++)
			if (!isfinite(values[a][k]))
				return ferry__fail(-FERRY_ECONFIG, "reader: %s[%d] is %g: relative "
						   "values must be finite", names[a], k, values[a][k]);
	return 0;
}

int ferry__roi_spec_from_config(const struct ferry_reader_config *cfg,
				struct ferry__roi_spec *spec)
{
	int given = !!cfg->roi_start + !!cfg->roi_start_rel + !!cfg->roi_end + !!cfg->roi_end_rel +
		    !!cfg->roi_shape + !!cfg->roi_shape_rel + !!cfg->roi_axes;

	memset(spec, 0, sizeof(*spec));
	spec->policy = cfg->out_of_bounds_policy;
	if (spec->policy != FERRY_OOB_ERROR && spec->policy != FERRY_OOB_PAD &&
	    spec->policy != FERRY_OOB_TRIM)
		return spec_fail("out_of_bounds_policy must be error, pad or trim_to_shape");
	if (cfg->roi_nvals < 0 || cfg->roi_nvals > FERRY_MAX_DIMS)
		return spec_fail("roi_nvals must be 0..32");
	if (cfg->roi_nvals == 0)
		return given ? spec_fail("ROI arrays given but roi_nvals is 0") : 0;
	if (cfg->roi_start && cfg->roi_start_rel)
		return spec_fail("roi_start and roi_start_rel exclude each other");
	if (!!cfg->roi_end + !!cfg->roi_end_rel + !!cfg->roi_shape + !!cfg->roi_shape_rel > 1)
		return spec_fail("give one of roi_end, roi_end_rel, roi_shape, roi_shape_rel");
	spec->n = cfg->roi_nvals;
	spec->has_start = cfg->roi_start ? 1 : cfg->roi_start_rel ? 2 : 0;
	spec->has_end = cfg->roi_end ? 1 : cfg->roi_end_rel ? 2 : 0;
	spec->has_shape = cfg->roi_shape ? 1 : cfg->roi_shape_rel ? 2 : 0;
	copy_values(spec, cfg);
	if (cfg->roi_shape)
		for (int k = 0; k < spec->n; k++)
			if (cfg->roi_shape[k] < 0)
				return spec_fail("roi_shape values must not be negative");
	int rc = check_relative(spec);
	return rc < 0 ? rc : spec_axes(cfg, spec);
}

/* Coordinates a relative value may round to: far past any extent, and far
 * from where llround stops being defined. */
#define REL_LIMIT 4611686018427387904.0 /* 2^62 */

/* Rounds x to the nearest integer. Returns 0, or -FERRY_EBOUNDS when x is not
 * a coordinate (non-finite, or beyond 2^62). */
static int round_coordinate(double x, int axis, const char *path, int64_t *out)
{
	if (!(fabs(x) < REL_LIMIT))
		return ferry__fail(-FERRY_EBOUNDS, "%s: relative roi on axis %d gives %g, not a "
				   "coordinate", path, axis, x);
	*out = llround(x);
	return 0;
}

/* The unrounded start of ROI value k on an axis of extent ext. */
static double start_value(const struct ferry__roi_spec *spec, int k, int64_t ext)
{
	if (spec->has_start == 1)
		return (double)spec->start[k];
	if (spec->has_start == 2)
		return spec->start_rel[k] * (double)ext;
	return 0;
}

/* The end of ROI value k (exclusive) as a real number, given the unrounded
 * start, when it is relative; *exact gets it when it is absolute. */
static int end_is_exact(const struct ferry__roi_spec *spec, int k, int64_t ext, int64_t begin,
			int64_t *exact)
{
	if (spec->has_end == 1)
		*exact = spec->end[k];
	else if (spec->has_shape == 1 && __builtin_add_overflow(begin, spec->shape[k], exact))
		*exact = INT64_MAX; /* past any extent: the policy or the size check refuses it */
	else if (spec->has_end == 0 && spec->has_shape == 0)
		*exact = ext;
	return spec->has_end != 2 && spec->has_shape != 2;
}

/* [begin, end) of ROI value k on axis ax of extent ext, before the policy. */
static int axis_range(const struct ferry__roi_spec *spec, int k, int64_t ext, const char *path,
		      int64_t *begin, int64_t *end)
{
	int ax = spec->axes[k];
	double s = start_value(spec, k, ext);
	int rc = round_coordinate(s, ax, path, begin);
	if (rc < 0 || end_is_exact(spec, k, ext, *begin, end))
		return rc;
	double e = spec->has_end == 2 ? spec->end_rel[k] * (double)ext
				      : s + spec->shape_rel[k] * (double)ext;
	return round_coordinate(e, ax, path, end);
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Applies the policy to [*begin, *end) on an axis of extent ext. */
static int apply_policy(const struct ferry__roi_spec *spec, int axis, int64_t ext, int64_t *begin,
			int64_t *end, const char *path)
{
	if (*end < *begin)
		return ferry__fail(-FERRY_EBOUNDS, "%s: roi on axis %d ends (%lld) before it starts (%lld)",
				   path, axis, (long long)*end, (long long)*begin);
	if (spec->policy == FERRY_OOB_TRIM) {
		*begin = clamp64(*begin, 0, ext);
		*end = clamp64(*end, 0, ext);
	} else if (spec->policy == FERRY_OOB_ERROR && (*begin < 0 || *end > ext)) {
		return ferry__fail(-FERRY_EBOUNDS,
				   "%s: roi [%lld, %lld) on axis %d is outside the extent %lld", path,
				   (long long)*begin, (long long)*end, axis, (long long)ext);
	}
	return 0;
}

/* Elements a region may have: its bytes must fit in 63 bits for any dtype. */
#define MAX_REGION_COUNT ((uint64_t)INT64_MAX / 16)

static int region_too_large(const char *path)
{
	return ferry__fail(-FERRY_EBOUNDS, "%s: roi is too large to represent", path);
}

int ferry__roi_resolve(const struct ferry__roi_spec *spec, int ndim, const int64_t *shape,
		       const char *path, struct ferry__region *out)
{
	out->ndim = ndim;
	out->padded = 0;
	for (int d = 0; d < ndim; d++) {
		out->start[d] = 0;
		out->shape[d] = shape[d];
	}
	for (int k = 0; k < spec->n; k++) {
		int ax = spec->axes[k];
		if (ax >= ndim)
			return ferry__fail(-FERRY_ECONFIG, "%s: roi names axis %d; the array has rank %d",
					   path, ax, ndim);
		int64_t begin = 0, end = 0;
		int rc = axis_range(spec, k, shape[ax], path, &begin, &end);
		if (rc == 0)
			rc = apply_policy(spec, ax, shape[ax], &begin, &end, path);
		if (rc < 0)
			return rc;
		out->start[ax] = begin;
		if (__builtin_sub_overflow(end, begin, &out->shape[ax]))
			return region_too_large(path);
	}
	out->count = 1;
	for (int d = 0; d < ndim; d++)
		if (__builtin_mul_overflow(out->count, (uint64_t)out->shape[d], &out->count) ||
		    out->count > MAX_REGION_COUNT)
			return region_too_large(path);
	for (int d = 0; d < ndim && out->count; d++)
		if (out->start[d] < 0 || out->start[d] + out->shape[d] > shape[d])
			out->padded = 1;
	return 0;
}

int ferry__roi_resolve_row(const struct ferry__roi_spec *spec, int ndim, const int64_t *shape,
			   int64_t row, const char *path, struct ferry__region *out)
{
	struct ferry__region in_row;
	int rc = ferry__roi_resolve(spec, ndim - 1, shape + 1, path, &in_row);
	if (rc < 0)
		return rc;
	*out = (struct ferry__region){ .ndim = ndim, .count = in_row.count,
				       .padded = in_row.padded };
	out->start[0] = row;
	out->shape[0] = 1;
	memcpy(out->start + 1, in_row.start, sizeof(int64_t) * (size_t)in_row.ndim);
	memcpy(out->shape + 1, in_row.shape, sizeof(int64_t) * (size_t)in_row.ndim);
	return 0;
}

/* The part of the region inside the source, per axis: [lo, hi). Returns 0
 * when it is empty. */
static int overlap(const struct ferry__region *rg, const int64_t *shape, int64_t *lo, int64_t *hi)
{
	for (int d = 0; d < rg->ndim; d++) {
		lo[d] = clamp64(rg->start[d], 0, shape[d]);
		hi[d] = clamp64(rg->start[d] + rg->shape[d], 0, shape[d]);
		if (hi[d] <= lo[d])
			return 0;
	}
	return rg->count != 0;
}

/* The outermost axis j such that every axis after it is copied whole. */
static int first_partial_axis_from_end(const struct ferry__region *rg, const int64_t *shape)
{
	int j = rg->ndim - 1;
	while (j >= 0 && rg->start[j] == 0 && rg->shape[j] == shape[j])
		j--;
	return j;
}

static void add_run(struct ferry__run *runs, int64_t *n, uint64_t src, uint64_t dst, uint64_t len)
{
	if (*n > 0) {
		struct ferry__run *last = &runs[*n - 1];
		if (last->src + last->len == src && last->dst + last->len == dst) {
			last->len += len;
			return;
		}
	}
	runs[(*n)++] = (struct ferry__run){ .src = src, .dst = dst, .len = len };
}

int64_t ferry__region_runs(const struct ferry__region *rg, const int64_t *shape, size_t itemsize,
			   struct ferry__run **runs)
{
	int64_t lo[FERRY_MAX_DIMS], hi[FERRY_MAX_DIMS], idx[FERRY_MAX_DIMS];
	uint64_t sstride[FERRY_MAX_DIMS + 1], ostride[FERRY_MAX_DIMS + 1];
	int nd = rg->ndim, j;
	uint64_t total = 1;
	int64_t n = 0;

	*runs = NULL;
	if (!overlap(rg, shape, lo, hi))
		return 0;
	sstride[nd] = ostride[nd] = itemsize;
	for (int d = nd - 1; d >= 0; d--) {
		sstride[d] = sstride[d + 1] * (uint64_t)shape[d];
		ostride[d] = ostride[d + 1] * (uint64_t)rg->shape[d];
	}
	/* sstride[d] is the bytes of one index of axis d - 1: axis d steps by sstride[d + 1]. */
	j = first_partial_axis_from_end(rg, shape);
	for (int d = 0; d < j; d++)
		total *= (uint64_t)(hi[d] - lo[d]);
	if (total > MAX_RUNS)
		return ferry__fail(-FERRY_EUNSUPPORTED, "reader: region needs %llu reads",
				   (unsigned long long)total);
	*runs = malloc(total * sizeof(**runs));
	if (!*runs)
		return -ENOMEM;
	if (j < 0) {
		add_run(*runs, &n, 0, 0, sstride[0]);
		return n;
	}
	uint64_t len = (uint64_t)(hi[j] - lo[j]) * sstride[j + 1];
	for (int d = 0; d < j; d++)
		idx[d] = lo[d];
	for (;;) {
		uint64_t src = (uint64_t)lo[j] * sstride[j + 1];
		uint64_t dst = (uint64_t)(lo[j] - rg->start[j]) * ostride[j + 1];
		for (int d = 0; d < j; d++) {
			src += (uint64_t)idx[d] * sstride[d + 1];
			dst += (uint64_t)(idx[d] - rg->start[d]) * ostride[d + 1];
		}
		add_run(*runs, &n, src, dst, len);
		int d = j - 1;
		while (d >= 0 && ++idx[d] == hi[d]) {
			idx[d] = lo[d];
			d--;
		}
		if (d < 0)
			break;
	}
	return n;
}

/* ---- fill values ---- */

static uint16_t half_from_double(double v)
{
	float f = (float)v;
	uint32_t x, sign, exp, mant;
	int e;

	memcpy(&x, &f, 4);
	sign = (x >> 16) & 0x8000;
	exp = (x >> 23) & 0xff;
	mant = x & 0x7fffff;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
	e = (int)exp - 127 + 15;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (e <= 0) {
		if (e < -10)
			return (uint16_t)sign;
		mant |= 0x800000;
		unsigned shift = (unsigned)(14 - e);
		uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++;
	return (uint16_t)(sign | h);
}

static int64_t saturate_signed(double v, int64_t lo, int64_t hi)
{
	if (isnan(v))
		return 0;
	if (v <= (double)lo)
		return lo;
	if (v >= (double)hi)
		return hi;
	return (int64_t)v;
}

static uint64_t saturate_unsigned(double v, uint64_t hi)
{
	if (isnan(v) || v <= 0)
		return 0;
	if (v >= (double)hi)
		return hi;
	return (uint64_t)v;
}

size_t ferry__fill_element(enum ferry_dtype dtype, double v, void *out)
{
	size_t size = ferry_dtype_size(dtype);
	union {
		uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64;
		int8_t i8; int16_t i16; int32_t i32; int64_t i64;
		float f32; double f64; float c64[2]; double c128[2];
	} e;

	memset(&e, 0, sizeof(e));
	switch (dtype) {
	case FERRY_BOOL: e.u8 = v != 0; break;
	case FERRY_INT8: e.i8 = (int8_t)saturate_signed(v, INT8_MIN, INT8_MAX); break;
	case FERRY_INT16: e.i16 = (int16_t)saturate_signed(v, INT16_MIN, INT16_MAX); break;
	case FERRY_INT32: e.i32 = (int32_t)saturate_signed(v, INT32_MIN, INT32_MAX); break;
	case FERRY_INT64: e.i64 = saturate_signed(v, INT64_MIN, INT64_MAX); break;
	case FERRY_UINT8: e.u8 = (uint8_t)saturate_unsigned(v, UINT8_MAX); break;
	case FERRY_UINT16: e.u16 = (uint16_t)saturate_unsigned(v, UINT16_MAX); break;
	case FERRY_UINT32: e.u32 = (uint32_t)saturate_unsigned(v, UINT32_MAX); break;
	case FERRY_UINT64: e.u64 = saturate_unsigned(v, UINT64_MAX); break;
	case FERRY_FLOAT16: e.u16 = half_from_double(v); break;
	case FERRY_FLOAT32: e.f32 = (float)v; break;
	case FERRY_FLOAT64: e.f64 = v; break;
	case FERRY_COMPLEX64: e.c64[0] = (float)v; break;
	case FERRY_COMPLEX128: e.c128[0] = v; break;
	default: return 0;
	}
	memcpy(out, &e, size);
	return size;
}
