/* Regions of interest against a reference slicer written here: every policy,
 * C and Fortran order, little- and big-endian files, ranks 1..4, absolute
 * (start + end or start + shape) and relative values, roi_axes. */
#include <math.h>

#include "test_reader_util.h"

struct dtype_case {
	enum ferry_dtype dtype;
	unsigned char fill[8]; /* fill_value -2.5 converted */
};

static struct dtype_case dtypes[4];

static void init_dtypes(void)
{
	float f = -2.5f;
	double d = -2.5;
	int16_t i = -2;
	dtypes[0].dtype = FERRY_FLOAT32;
	memcpy(dtypes[0].fill, &f, 4);
	dtypes[1].dtype = FERRY_INT16;
	memcpy(dtypes[1].fill, &i, 2);
	dtypes[2].dtype = FERRY_UINT8; /* saturates to 0 */
	dtypes[3].dtype = FERRY_FLOAT64;
	memcpy(dtypes[3].fill, &d, 8);
}

struct roi_case {
	int ndim, naxes, use_shape, use_axes, rel;
	int64_t shape[4];
	int axes[4];
	int64_t start[4], end[4], len[4];
	double start_rel[4], end_rel[4];
	enum ferry_oob_policy policy;
	int64_t want_start[4], want_shape[4]; /* the region, per array axis */
	int expect_error;
};

static int64_t rand_in(uint64_t *rng, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(t_rand(rng) % (uint64_t)(hi - lo + 1));
}

/* Chooses the axes a case's ROI names. */
static void choose_axes(uint64_t *rng, struct roi_case *c)
{
	c->use_axes = (int)(t_rand(rng) % 2);
	c->naxes = c->use_axes ? (int)rand_in(rng, 1, c->ndim) : c->ndim;
	int perm[4] = { 0, 1, 2, 3 };
	for (int i = c->ndim - 1; c->use_axes && i > 0; i--) {
		int j = (int)(t_rand(rng) % (uint64_t)(i + 1)), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (int k = 0; k < c->naxes; k++)
		c->axes[k] = perm[k];
}

/* Absolute values: in bounds for policy error, else anywhere near. */
static void choose_absolute(uint64_t *rng, struct roi_case *c, int k)
{
	int64_t ext = c->shape[c->axes[k]], slack = c->policy == FERRY_OOB_ERROR ? 0 : 3;
	int64_t b = rand_in(rng, -slack, ext + (slack ? 1 : 0));
	int64_t e = rand_in(rng, b > 0 ? b : 0, ext + slack);
	if (e < b)
		e = b;
	c->start[k] = b;
	c->end[k] = e;
	c->len[k] = e - b;
}

static void choose_relative(uint64_t *rng, struct roi_case *c, int k)
{
	int64_t ext = c->shape[c->axes[k]];
	double lo = c->policy == FERRY_OOB_ERROR ? 0 : -0.3, hi = c->policy == FERRY_OOB_ERROR ? 1 : 1.3;
	double a = lo + (hi - lo) * (double)(t_rand(rng) % 1000) / 999.0;
	double e = a + (hi - a) * (double)(t_rand(rng) % 1000) / 999.0;
	c->start_rel[k] = a;
	c->end_rel[k] = e;
	c->start[k] = llround(a * (double)ext);
	c->end[k] = llround(e * (double)ext);
	if (c->policy == FERRY_OOB_ERROR && (c->start[k] < 0 || c->end[k] > ext))
		c->expect_error = 1; /* cannot happen for values in [0, 1] */
}

/* What the region must be, from the chosen values and the policy. */
static void expected_region(struct roi_case *c)
{
	for (int d = 0; d < c->ndim; d++) {
		c->want_start[d] = 0;
		c->want_shape[d] = c->shape[d];
	}
	for (int k = 0; k < c->naxes; k++) {
		int d = c->axes[k];
		int64_t b = c->start[k], e = c->end[k];
		if (c->policy == FERRY_OOB_TRIM) {
			b = b < 0 ? 0 : b > c->shape[d] ? c->shape[d] : b;
			e = e < 0 ? 0 : e > c->shape[d] ? c->shape[d] : e;
		}
		c->want_start[d] = b;
		c->want_shape[d] = e - b;
	}
}

static void make_case(uint64_t *rng, struct roi_case *c)
{
	memset(c, 0, sizeof(*c));
	c->ndim = (int)rand_in(rng, 1, 4);
	for (int d = 0; d < c->ndim; d++)
		c->shape[d] = d == c->ndim - 1 ? rand_in(rng, 1, 40) : rand_in(rng, 1, 7);
	c->policy = (enum ferry_oob_policy)(t_rand(rng) % 3);
	c->rel = t_rand(rng) % 4 == 0;
	c->use_shape = !c->rel && t_rand(rng) % 2;
	choose_axes(rng, c);
	for (int k = 0; k < c->naxes; k++) {
		if (c->rel)
			choose_relative(rng, c, k);
		else
			choose_absolute(rng, c, k);
	}
	expected_region(c);
}

static void config_for(const struct roi_case *c, struct ferry_reader_config *cfg)
{
	cfg->roi_nvals = c->naxes;
	cfg->roi_axes = c->use_axes ? c->axes : NULL;
	cfg->out_of_bounds_policy = c->policy;
	cfg->fill_value = -2.5;
	if (c->rel) {
		cfg->roi_start_rel = c->start_rel;
		cfg->roi_end_rel = c->end_rel;
	} else {
		cfg->roi_start = c->start;
		if (c->use_shape)
			cfg->roi_shape = c->len;
		else
			cfg->roi_end = c->end;
	}
}

static void run_case(ferry_ctx *ctx, const char *path, const struct roi_case *c,
		     const struct dtype_case *dt, int fortran, char byteorder, unsigned trial)
{
	const char *files[1] = { path };
	struct ferry_reader_config cfg = { .files = files, .nfiles = 1, .epochs = 1, .threads = 2 };
	ferry_reader *r;
	ferry_batch *b;
	struct ferry_sample s;
	char what[128];
	config_for(c, &cfg);
	tr_write_npy(path, dt->dtype, byteorder, fortran, c->ndim, c->shape, trial);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	int rc = ferry_reader_next(r, &b);
	if (c->expect_error) {
		T_EQ(rc, -FERRY_EBOUNDS);
		T_OK(ferry_reader_close(r));
		return;
	}
	if (rc < 0)
		T_FAIL("trial %u: %s (%s)", trial, ferry_strerror(rc), ferry_last_error());
	T_OK(ferry_batch_sample(b, 0, &s));
	T_EQ(s.ndim, c->ndim);
	for (int d = 0; d < c->ndim; d++)
		if (s.shape[d] != c->want_shape[d])
			T_FAIL("trial %u: axis %d: shape %lld, want %lld", trial, d,
			       (long long)s.shape[d], (long long)c->want_shape[d]);
	size_t isz = ferry_dtype_size(dt->dtype);
	int swap = byteorder == '>' && isz > 1;
	uint64_t n;
	void *want = tr_reference(trial, isz, swap, fortran, c->ndim, c->shape, c->want_start,
				  c->want_shape, dt->fill, &n);
	snprintf(what, sizeof(what), "trial %u (rank %d, %s, %c, policy %d)", trial, c->ndim,
		 fortran ? "F" : "C", byteorder, (int)c->policy);
	tr_check_sample(ctx, &s, want, n, what);
	free(want);
	ferry_batch_release(b);
	T_EQ(ferry_reader_next(r, &b), -FERRY_EEND);
	T_OK(ferry_reader_close(r));
}

/* Policy error with a region out of bounds is -FERRY_EBOUNDS naming the file. */
static void check_error_policy(ferry_ctx *ctx, const char *path)
{
	int64_t shape[2] = { 4, 5 }, start[2] = { 1, 2 }, end[2] = { 3, 6 };
	const char *files[1] = { path };
	struct ferry_reader_config cfg = { .files = files, .nfiles = 1, .epochs = 1,
					   .roi_nvals = 2, .roi_start = start, .roi_end = end };
	ferry_reader *r;
	ferry_batch *b;
	tr_write_npy(path, FERRY_INT32, 0, 0, 2, shape, 1);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_EQ(ferry_reader_next(r, &b), -FERRY_EBOUNDS);
	T_ASSERT(strstr(ferry_last_error(), path));
	T_OK(ferry_reader_close(r));
	/* conflicting options */
	int64_t len[2] = { 1, 1 };
	cfg.roi_shape = len;
	T_EQ(ferry_reader_open(ctx, &cfg, &r), -FERRY_ECONFIG);
}

int main(void)
{
	char *dir = t_tmpdir();
	ferry_ctx *ctx = tr_ctx(4096, 2);
	const char *path = tr_path(dir, "t.npy");
	uint64_t rng = 12345;
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	init_dtypes();
	check_error_policy(ctx, path);
	for (unsigned trial = 0; trial < 600; trial++) {
		struct roi_case c;
		make_case(&rng, &c);
		int fortran = (int)(trial % 2);
		char byteorder = trial % 5 == 4 ? '>' : '<';
		run_case(ctx, path, &c, &dtypes[trial / 2 % 4], fortran, byteorder, trial);
	}
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	return T_EXIT_PASS;
}
