/*
 * Small big-endian and Fortran-order outputs pack like native C-order ones:
 * the runs their region makes in the file are read raw into the batch's
 * staging buffer and the CPU swaps or transposes them there before the
 * buffer's copy is queued, so a row of such a file reads only its bytes
 * (before: the whole file, converted on the device, for every row). For
 * items of 2, 4 and 8 bytes (int16, float32, float64), 12 files of
 * [4..6, 3, 6] each, little- and big-endian, C and Fortran order; and for 16
 * (complex128, its two halves swapped apart) big-endian C-order ones: read
 * whole, with a region of interest and as rows, two shuffled epochs, every
 * byte of every sample against the reference slicer; on a fault device that
 * only counts, no conversion on the device, no stream sync and no
 * synchronous copy; as rows, no more bytes read than delivered plus a page a
 * file. Then rows of wide Fortran-order files (run_wide).
 */
#include "test_reader_util.h"

#define NFILES 12
#define COLS 6
#define EPOCHS 2
#define CHUNK ((size_t)64 << 10)

static const enum ferry_dtype dtypes[] = { FERRY_INT16, FERRY_FLOAT32, FERRY_FLOAT64,
					   FERRY_COMPLEX128 };
#define MID 3 /* the middle axis */

enum mode { WHOLE, REGION, ROWS };
static const char *const mode_names[] = { "whole", "region", "rows" };

static int64_t rows_of(int i)
{
	return 4 + i % 3;
}

/* File i's layout: complex128 ones are big-endian C order (the reference
 * slicer treats them as float64 pairs, which holds only in C order). */
static char byteorder_of(enum ferry_dtype dtype, int i)
{
	return dtype == FERRY_COMPLEX128 || i % 2 ? '>' : '<';
}

static int fortran_of(enum ferry_dtype dtype, int i)
{
	return dtype != FERRY_COMPLEX128 && i % 3 != 1;
}

static void write_files(const char *dir, enum ferry_dtype dtype)
{
	for (int i = 0; i < NFILES; i++) {
		int64_t shape[3] = { rows_of(i), MID, COLS };
		char name[32];
		snprintf(name, sizeof(name), "f%03d.npy", i);
		tr_write_npy(tr_path(dir, name), dtype, byteorder_of(dtype, i),
			     fortran_of(dtype, i), 3, shape, (uint32_t)(100 + i));
	}
}

/* Sample s against the reference region [start, start + shape) of the ndim-D
 * array src of file id, read back through the wrapped device, uncounted. */
static void compare(struct ferry__device *fdev, const struct ferry_sample *s,
		    enum ferry_dtype dtype, uint32_t id, size_t isz, int swap, int fortran,
		    int ndim, const int64_t *src, const int64_t *start, const int64_t *shape,
		    const char *what)
{
	unsigned char fill[16] = { 0 }, *got;
	uint64_t nbytes;
	unsigned char *want = tr_reference(id, isz, swap, fortran, ndim, src, start, shape, fill,
					   &nbytes);
	if (s->nbytes != nbytes || s->dtype != dtype)
		T_FAIL("%s: %s: %llu bytes of %s, want %llu of %s", what, s->path,
		       (unsigned long long)s->nbytes, ferry_dtype_name(s->dtype),
		       (unsigned long long)nbytes, ferry_dtype_name(dtype));
	T_ASSERT(got = malloc(nbytes));
	struct ferry__device *inner = t_fault_inner(fdev);
	T_OK(inner->ops->copy_sync(inner, got, s->data, nbytes, FERRY__D2H));
	int differ = memcmp(got, want, nbytes) != 0;
	for (uint64_t k = 0; differ && k < nbytes; k++)
		if (got[k] != want[k])
			T_FAIL("%s, %s: %s: byte %llu is 0x%02x, want 0x%02x", ferry_dtype_name(dtype),
			       what, s->path, (unsigned long long)k, got[k], want[k]);
	free(got);
	free(want);
}

/* Sample s (of mode m; row: its row, or -1) against the reference, read back
 * through the wrapped device, uncounted. */
static void check_sample(struct ferry__device *fdev, const struct ferry_sample *s,
			 enum ferry_dtype dtype, enum mode m, int64_t row)
{
	int i = tr_file_index(s->path);
	T_ASSERT(i >= 0 && i < NFILES);
	size_t isz = ferry_dtype_size(dtype);
	int64_t src[3] = { rows_of(i), MID, COLS };
	int64_t start[3] = { 0, 0, 0 }, shape[3] = { src[0], MID, COLS };
	if (m == REGION) {
		start[0] = 1, start[1] = 1, start[2] = 2;
		shape[0] = 3, shape[1] = 2, shape[2] = 3;
	} else if (m == ROWS) {
		start[0] = row, shape[0] = 1;
	}
	if (dtype == FERRY_COMPLEX128) { /* numpy swaps each float64 half: a [.., 2n] float64 */
		isz = 8;
		src[2] *= 2, start[2] *= 2, shape[2] *= 2;
	}
	compare(fdev, s, dtype, (uint32_t)(100 + i), isz, byteorder_of(dtype, i) == '>',
		fortran_of(dtype, i), 3, src, start, shape, mode_names[m]);
}

/* What a sample is checked against: the mode's files (check_sample) or, with
 * wide_src set, a wide Fortran-order file of that shape (run_wide). */
struct expect {
	struct ferry__device *fdev;
	enum ferry_dtype dtype;
	enum mode m;
	const int64_t *wide_src;
};

static void check_expected(const struct expect *e, const struct ferry_sample *s)
{
	if (!e->wide_src) {
		check_sample(e->fdev, s, e->dtype, e->m, s->row);
		return;
	}
	int64_t start[2] = { s->row, 0 }, shape[2] = { 1, e->wide_src[1] };
	compare(e->fdev, s, e->dtype, (uint32_t)(300 + tr_file_index(s->path)), 4, 0, 1, 2,
		e->wide_src, start, shape, "wide rows");
}

/* Reads every batch cfg makes, checking every sample; returns the samples,
 * the batches into *batches and the reader's stats into *st. */
static unsigned read_checked(ferry_ctx *ctx, const struct ferry_reader_config *cfg,
			     const struct expect *e, unsigned *batches,
			     struct ferry_reader_stats *st)
{
	unsigned samples = 0;
	ferry_reader *r;
	ferry_batch *b;
	int rc;
	*batches = 0;
	T_OK(ferry_reader_open(ctx, cfg, &r));
	while ((rc = ferry_reader_next(r, &b)) == 0) {
		for (size_t k = 0; k < ferry_batch_size(b); k++, samples++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, k, &s));
			check_expected(e, &s);
		}
		ferry_batch_release(b);
		++*batches;
	}
	if (rc != -FERRY_EEND)
		T_FAIL("%s (%s)", ferry_strerror(rc), ferry_last_error());
	T_OK(ferry_reader_stats(r, st, sizeof(*st)));
	T_OK(ferry_reader_close(r));
	return samples;
}

static void run(ferry_ctx *ctx, struct ferry__device *fdev, const char *dir,
		enum ferry_dtype dtype, enum mode m)
{
	int64_t start[3] = { 1, 1, 2 }, shape[3] = { 3, 2, 3 };
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 4, .epochs = EPOCHS,
					   .random_shuffle = 1, .seed = 2, .num_shards = 1 };
	if (m == REGION) {
		cfg.roi_nvals = 3;
		cfg.roi_start = start;
		cfg.roi_shape = shape;
	}
	if (m == ROWS) {
		cfg.samples = FERRY_SAMPLES_ROWS;
		cfg.batch_size = 8;
	}
	unsigned long conv = t_fault_calls(fdev, T_FAULT_CONVERT);
	unsigned long syncs = t_fault_calls(fdev, T_FAULT_STREAM_SYNC);
	unsigned long copy_syncs = t_fault_calls(fdev, T_FAULT_COPY_SYNC);
	unsigned long waits = t_fault_calls(fdev, T_FAULT_EVENT_SYNC);
	struct expect e = { .fdev = fdev, .dtype = dtype, .m = m };
	struct ferry_reader_stats st;
	unsigned batches, samples = read_checked(ctx, &cfg, &e, &batches, &st);
	conv = t_fault_calls(fdev, T_FAULT_CONVERT) - conv;
	syncs = t_fault_calls(fdev, T_FAULT_STREAM_SYNC) - syncs;
	copy_syncs = t_fault_calls(fdev, T_FAULT_COPY_SYNC) - copy_syncs;
	waits = t_fault_calls(fdev, T_FAULT_EVENT_SYNC) - waits;
	printf("%s, %s: %u batches, %u samples, %llu bytes read for %llu delivered; %lu "
	       "conversions on the device, %lu stream syncs, %lu synchronous copies, %lu event "
	       "waits\n", ferry_dtype_name(dtype), mode_names[m], batches, samples,
	       (unsigned long long)st.bytes_read, (unsigned long long)st.bytes_delivered, conv,
	       syncs, copy_syncs, waits);
	if (conv || syncs || copy_syncs)
		T_FAIL("%s, %s: %lu conversions, %lu stream syncs and %lu synchronous copies, want "
		       "none", ferry_dtype_name(dtype), mode_names[m], conv, syncs, copy_syncs);
	if (m == ROWS && st.bytes_read > st.bytes_delivered + (uint64_t)EPOCHS * NFILES * 4096)
		T_FAIL("%s, rows: %llu bytes read for %llu delivered", ferry_dtype_name(dtype),
		       (unsigned long long)st.bytes_read, (unsigned long long)st.bytes_delivered);
}

/*
 * Rows of wide Fortran-order float32 files ([rows, WIDE_COLS]: a row is
 * WIDE_COLS runs of one item, over 1024): a gather of them pays when the
 * array is large enough (4 KiB of it a run), so they pack, converted by the
 * CPU and no more read than delivered; in a small array they do not, so the
 * whole array is loaded and converted on the device. One shard of 64,
 * every byte checked.
 */
#define WIDE_COLS 1100
static void run_wide(ferry_ctx *ctx, struct ferry__device *fdev, const char *root, int64_t rows,
		     int packs)
{
	char dir[1100];
	snprintf(dir, sizeof(dir), "%s/wide%lld", root, (long long)rows);
	T_ASSERT(mkdir(dir, 0755) == 0);
	int64_t src[2] = { rows, WIDE_COLS };
	for (int i = 0; i < 2; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%03d.npy", i);
		tr_write_npy(tr_path(dir, name), FERRY_FLOAT32, '<', 1, 2, src, (uint32_t)(300 + i));
	}
	struct ferry_reader_config cfg = { .root = dir, .batch_size = 8, .epochs = 1,
					   .random_shuffle = 1, .seed = 5, .num_shards = 64,
					   .shard_id = 3, .samples = FERRY_SAMPLES_ROWS };
	unsigned long conv = t_fault_calls(fdev, T_FAULT_CONVERT);
	struct expect e = { .fdev = fdev, .dtype = FERRY_FLOAT32, .m = ROWS, .wide_src = src };
	struct ferry_reader_stats st;
	unsigned batches, samples = read_checked(ctx, &cfg, &e, &batches, &st);
	conv = t_fault_calls(fdev, T_FAULT_CONVERT) - conv;
	printf("wide rows of [%lld, %d]: %u samples, %llu bytes read for %llu delivered, %lu "
	       "conversions on the device\n", (long long)rows, WIDE_COLS, samples,
	       (unsigned long long)st.bytes_read, (unsigned long long)st.bytes_delivered, conv);
	T_EQ(samples, (unsigned)(2 * rows / 64));
	if (packs && (conv || st.bytes_read > st.bytes_delivered + 2 * 4096))
		T_FAIL("wide rows of [%lld, %d] did not pack", (long long)rows, WIDE_COLS);
	if (!packs && conv == 0)
		T_FAIL("wide rows of [%lld, %d] packed: a gather of %d runs does not pay there",
		       (long long)rows, WIDE_COLS, WIDE_COLS);
}

int main(void)
{
	char *root = strdup(t_tmpdir());
	struct ferry__device *fdev;
	unsetenv("FERRY_ODIRECT");
	ferry_ctx *ctx = tr_counting_ctx(CHUNK, &fdev);
	for (size_t d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++) {
		char dir[1100];
		snprintf(dir, sizeof(dir), "%s/%s", root, ferry_dtype_name(dtypes[d]));
		T_ASSERT(mkdir(dir, 0755) == 0);
		write_files(dir, dtypes[d]);
		for (int m = WHOLE; m <= ROWS; m++)
			run(ctx, fdev, dir, dtypes[d], (enum mode)m);
	}
	run_wide(ctx, fdev, root, 1024, 1);
	run_wide(ctx, fdev, root, 64, 0);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(root);
	free(root);
	return T_EXIT_PASS;
}
