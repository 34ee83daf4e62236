/*
 * Big-endian and Fortran-order files through every loading path, each byte
 * checked against a reference computed element by element from the file's
 * pattern: every item size (1, 2, 4, 8 and 16 bytes; complex64 and complex128
 * swap each half), ranks 1 to 6 with odd shapes, C and Fortran order, little
 * and big endian. Paths: ferry_load, ferry_load_async (waited on the host, and
 * through a stream wait), ferry_load_into (aligned, and misaligned, which the
 * host converts), ferry_load_into_async, a whole directory loaded async at
 * once, and the reader (whole samples, and a region of interest, which goes
 * through its scratch path). Twice: on the device FERRY_DEVICE names, which
 * converts (counted), and on the same device with its conversions taken away
 * (the host converts). Either way the load goes through staging and makes no
 * synchronous copy (counted by the fault device both run on). 4 KiB chunks
 * and 3 IO threads, so that payloads span many chunks.
 */
#include "context/context.h"
#include "test_reader_util.h"

#define CHUNK ((size_t)4 << 10)
#define THREADS 3
#define NORDERS 4 /* C/Fortran x little/big endian */

struct file_case {
	char path[1100];
	enum ferry_dtype dtype;
	char byteorder;
	int fortran, ndim;
	int64_t shape[FERRY_MAX_DIMS];
	uint32_t id;
};

static const enum ferry_dtype dtypes[] = {
	FERRY_UINT8, FERRY_BOOL, FERRY_INT16, FERRY_FLOAT16, FERRY_FLOAT32,
	FERRY_INT64, FERRY_COMPLEX64, FERRY_COMPLEX128,
};

static const struct {
	int ndim;
	int64_t shape[6];
} shapes[] = {
	{ 1, { 1237 } },	     { 2, { 67, 131 } },	     { 3, { 13, 17, 19 } },
	{ 4, { 3, 5, 7, 11 } },	     { 5, { 2, 3, 5, 1, 7 } },	     { 6, { 2, 3, 1, 5, 2, 3 } },
};

/* What the region (start, len: C-order coordinates) of fc must load as. */
static unsigned char *expected(const struct file_case *fc, const int64_t *start,
			       const int64_t *len, uint64_t *nbytes)
{
	size_t isz = ferry_dtype_size(fc->dtype);
	int cplx = fc->dtype == FERRY_COMPLEX64 || fc->dtype == FERRY_COMPLEX128;
	size_t part = fc->byteorder == '>' && isz > 1 ? (cplx ? isz / 2 : isz) : 1;
	uint64_t count = 1, total = 1;
	int64_t idx[FERRY_MAX_DIMS] = { 0 };
	for (int d = 0; d < fc->ndim; d++) {
		count *= (uint64_t)len[d];
		total *= (uint64_t)fc->shape[d];
	}
	unsigned char *payload = tr_payload(fc->id, total * isz), *out = malloc(count * isz + 1);
	T_ASSERT(out);
	for (uint64_t e = 0; e < count; e++) {
		uint64_t lin = 0;
		for (int k = 0; k < fc->ndim; k++) {
			int d = fc->fortran ? fc->ndim - 1 - k : k;
			lin = lin * (uint64_t)fc->shape[d] + (uint64_t)(start[d] + idx[d]);
		}
		for (size_t b = 0; b < isz; b++)
			out[e * isz + b] = payload[lin * isz + b - b % part + part - 1 - b % part];
		for (int d = fc->ndim - 1; d >= 0 && ++idx[d] == len[d]; d--)
			idx[d] = 0;
	}
	free(payload);
	*nbytes = count * isz;
	return out;
}

static unsigned char *expected_whole(const struct file_case *fc, uint64_t *nbytes)
{
	int64_t zero[FERRY_MAX_DIMS] = { 0 };
	return expected(fc, zero, fc->shape, nbytes);
}

/* Writes the NORDERS files of dtype and shape k into dir as f000.npy.. */
static void write_set(const char *dir, enum ferry_dtype dtype, size_t k, struct file_case *fcs)
{
	for (int o = 0; o < NORDERS; o++) {
		struct file_case *fc = &fcs[o];
		*fc = (struct file_case){ .dtype = dtype, .byteorder = o & 1 ? '>' : '<',
					  .fortran = o >> 1, .ndim = shapes[k].ndim,
					  .id = (uint32_t)(1000 * dtype + 10 * k + (size_t)o) };
		memcpy(fc->shape, shapes[k].shape, sizeof(shapes[k].shape));
		snprintf(fc->path, sizeof(fc->path), "%s/f%03d.npy", dir, o);
		tr_write_npy(fc->path, dtype, fc->byteorder, fc->fortran, fc->ndim, fc->shape, fc->id);
	}
}

static void label(char *out, size_t cap, const struct file_case *fc, const char *how)
{
	snprintf(out, cap, "%s (%s, %s, %s, rank %d) by %s", fc->path, ferry_dtype_name(fc->dtype),
		 fc->byteorder == '>' ? "big-endian" : "little-endian",
		 fc->fortran ? "Fortran order" : "C order", fc->ndim, how);
}

static void check_device(ferry_ctx *ctx, const void *dev, const struct file_case *fc,
			 const char *how)
{
	char what[1400];
	uint64_t n;
	unsigned char *want = expected_whole(fc, &n);
	label(what, sizeof(what), fc, how);
	tr_check_bytes(ctx, dev, want, n, what);
	free(want);
}

static void check_array(ferry_ctx *ctx, ferry_array *a, const struct file_case *fc,
			const char *how)
{
	const struct ferry_array_info *info = ferry_array_info(a);
	T_EQ(info->ndim, fc->ndim);
	T_EQ(info->fortran_order, fc->fortran);
	check_device(ctx, ferry_array_data(a), fc, how);
	ferry_array_free(a);
}

/* ferry_load, ferry_load_async (host wait, stream wait), into (aligned,
 * misaligned), into_async. */
static void load_one(ferry_ctx *ctx, const struct file_case *fc)
{
	ferry_array *a;
	uint64_t n;
	free(expected_whole(fc, &n));
	T_OK(ferry_load(ctx, fc->path, &a));
	check_array(ctx, a, fc, "ferry_load");
	T_OK(ferry_load_async(ctx, fc->path, &a));
	T_OK(ferry_array_wait(a));
	check_array(ctx, a, fc, "ferry_load_async + ferry_array_wait");
	T_OK(ferry_load_async(ctx, fc->path, &a));
	T_OK(ferry_array_stream_wait(a, NULL));
	check_array(ctx, a, fc, "ferry_load_async + ferry_array_stream_wait");
	char *buf;
	T_OK(ferry_device_alloc(ctx, n + 16, (void **)&buf));
	T_OK(ferry_load_into(ctx, fc->path, buf, n, NULL));
	check_device(ctx, buf, fc, "ferry_load_into");
	T_OK(ferry_load_into(ctx, fc->path, buf + 1, n, NULL));
	check_device(ctx, buf + 1, fc, "ferry_load_into, 1 byte off alignment");
	T_OK(ferry_load_into_async(ctx, fc->path, buf, n, &a));
	T_OK(ferry_array_wait(a));
	ferry_array_free(a);
	check_device(ctx, buf, fc, "ferry_load_into_async");
	ferry_device_free(ctx, buf);
}

/* Every file of a set loaded async at once, then each waited for and checked. */
static void load_set_async(ferry_ctx *ctx, const struct file_case *fcs)
{
	ferry_array *a[NORDERS];
	for (int o = 0; o < NORDERS; o++)
		T_OK(ferry_load_async(ctx, fcs[o].path, &a[o]));
	for (int o = NORDERS - 1; o >= 0; o--) {
		T_OK(ferry_array_wait(a[o]));
		check_array(ctx, a[o], &fcs[o], "ferry_load_async, the whole set in flight");
	}
}

/* The sample's file among fcs, by the path's fNNN.npy. */
static const struct file_case *case_of(const struct file_case *fcs, const char *path)
{
	int i = tr_file_index(path);
	T_ASSERT(i >= 0 && i < NORDERS);
	return &fcs[i];
}

static void check_batches(ferry_ctx *ctx, ferry_reader *r, const struct file_case *fcs,
			  const int64_t *start, const int64_t *len, const char *how)
{
	ferry_batch *b;
	unsigned seen = 0;
	int rc;
	char what[1400];
	while ((rc = ferry_reader_next(r, &b)) == 0) {
		for (unsigned i = 0; i < ferry_batch_size(b); i++, seen++) {
			struct ferry_sample s;
			uint64_t n;
			T_OK(ferry_batch_sample(b, i, &s));
			const struct file_case *fc = case_of(fcs, s.path);
			unsigned char *want = expected(fc, start, len, &n);
			label(what, sizeof(what), fc, how);
			tr_check_sample(ctx, &s, want, n, what);
			free(want);
		}
		ferry_batch_release(b);
	}
	T_EQ(rc, -FERRY_EEND);
	T_EQ(seen, NORDERS);
}

/* The reader over the set's directory: whole samples, then the last axis's
 * inner part (every item but the first and last, where it has 3 or more). */
static void read_set(ferry_ctx *ctx, const char *dir, const struct file_case *fcs)
{
	const struct file_case *fc = &fcs[0];
	int last = fc->ndim - 1, axes[1] = { last };
	int64_t zero[FERRY_MAX_DIMS] = { 0 }, start[FERRY_MAX_DIMS] = { 0 }, len[FERRY_MAX_DIMS];
	int64_t rs[1], re[1];
	memcpy(len, fc->shape, sizeof(len));
	if (fc->shape[last] >= 3) {
		start[last] = 1;
		len[last] = fc->shape[last] - 2;
	}
	rs[0] = start[last];
	re[0] = start[last] + len[last];
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 3, .epochs = 1 };
	ferry_reader *r;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	check_batches(ctx, r, fcs, zero, fc->shape, "the reader");
	T_OK(ferry_reader_close(r));
	cfg.roi_nvals = 1;
	cfg.roi_axes = axes;
	cfg.roi_start = rs;
	cfg.roi_end = re;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	check_batches(ctx, r, fcs, start, len, "the reader with a region of interest");
	T_OK(ferry_reader_close(r));
}

/* Whether fc's payload needs converting: swapped, or two axes longer than 1. */
static int converted(const struct file_case *fc)
{
	int long_axes = 0;
	for (int d = 0; d < fc->ndim; d++)
		long_axes += fc->shape[d] > 1;
	return (fc->byteorder == '>' && ferry_dtype_size(fc->dtype) > 1) ||
	       (fc->fortran && long_axes > 1);
}

/* A converted load is converted by the device exactly when it converts, and
 * goes through staging, with no synchronous copy, either way. */
static void check_path_taken(ferry_ctx *ctx, const struct file_case *fc, int on_device)
{
	char text[2048];
	ferry_array *a;
	if (!converted(fc))
		return;
	ferry_ctx_describe(ctx, text, sizeof(text));
	T_ASSERT(strstr(text, on_device ? "converted on the device" : "converted by the CPU"));
	struct ferry__device *dev = ctx->ld.dev;
	unsigned long converts = t_fault_calls(dev, T_FAULT_CONVERT);
	unsigned long syncs = t_fault_calls(dev, T_FAULT_COPY_SYNC);
	uint64_t before = tr_lanes_stats(ctx).batches_launched;
	T_OK(ferry_load(ctx, fc->path, &a));
	ferry_array_free(a);
	if ((t_fault_calls(dev, T_FAULT_CONVERT) > converts) != on_device)
		T_FAIL("%s: %lu conversions on the device; the device %s", fc->path,
		       t_fault_calls(dev, T_FAULT_CONVERT) - converts,
		       on_device ? "converts" : "does not convert");
	uint64_t batches = tr_lanes_stats(ctx).batches_launched - before;
	if (!batches || t_fault_calls(dev, T_FAULT_COPY_SYNC) != syncs)
		T_FAIL("%s: %llu staging batches, %lu synchronous copies", fc->path,
		       (unsigned long long)batches, t_fault_calls(dev, T_FAULT_COPY_SYNC) - syncs);
}

static void run_all(ferry_ctx *ctx, const char *root, int on_device)
{
	struct file_case fcs[NORDERS];
	char dir[1024];
	for (size_t t = 0; t < FERRY__ARRAY_LEN(dtypes); t++)
		for (size_t k = 0; k < FERRY__ARRAY_LEN(shapes); k++) {
			snprintf(dir, sizeof(dir), "%s/%s_r%d", root, ferry_dtype_name(dtypes[t]),
				 shapes[k].ndim);
			T_ASSERT(mkdir(dir, 0755) == 0 || errno == EEXIST);
			write_set(dir, dtypes[t], k, fcs);
			for (int o = 0; o < NORDERS; o++)
				load_one(ctx, &fcs[o]);
			load_set_async(ctx, fcs);
			read_set(ctx, dir, fcs);
			check_path_taken(ctx, &fcs[3], on_device);
		}
}

static ferry_ctx *context(int convert_on_device)
{
	struct ferry_ctx_options o = { .gpu = -1, .chunk_size = CHUNK, .threads = THREADS,
				       .direct = -1 };
	struct ferry__device *dev;
	ferry_ctx *ctx;
	int rc = ferry__ctx_open_device(&o, &dev);
	if (rc == -FERRY_ENODEVICE)
		T_SKIP("no device: %s", ferry_last_error());
	T_OK(rc);
	if (!(dev->ops->flags & FERRY__DEV_CONVERT))
		T_FAIL("the %s device has no conversions", dev->ops->name);
	dev = t_fault_device(dev); /* counting only */
	if (!convert_on_device)
		t_fault_no_convert(dev);
	T_OK(ferry__ctx_create_on(dev, NULL, &o, &ctx));
	return ctx;
}

int main(void)
{
	char *root = t_tmpdir();
	for (int on_device = 1; on_device >= 0; on_device--) {
		ferry_ctx *ctx = context(on_device);
		run_all(ctx, root, on_device);
		T_OK(ferry_ctx_destroy(ctx));
	}
	t_rmtree(root);
	return T_EXIT_PASS;
}
