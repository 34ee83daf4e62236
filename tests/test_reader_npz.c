/*
 * The reader over a dataset of .npz archives (config npz_key): every file
 * under the root matching *.npz (the default filter then; a .npy beside them
 * is left out) gives its member x, every byte of every batch checked against
 * np.load's (tests/npz_dataset.py writes stored and deflated, C and Fortran
 * order, little and big endian members), shuffled over two epochs, each
 * archive once an epoch; with a region of interest, checked against the
 * same slice of np.load's bytes; an archive lacking the key stops the reader
 * with -ENOENT naming it, or is skipped and counted under on_error skip;
 * npz_key with samples=rows is refused. A build without libdeflate reads a
 * dataset of stored archives instead, and its reader must stop at a deflated
 * archive with -FERRY_EUNSUPPORTED naming it, the member and libdeflate (the
 * test then ends in a skip).
 */
#include "test_npz_util.h"

#define NFILES 12
#define ROWS 6
#define COLS 10

static unsigned char *want[NFILES];

/* Writes the dataset (stored_only: no deflated archives) of n archives. */
static void write_dataset(const char *dir, int n, int stored_only)
{
	const char *py = getenv("PYTHON") ? getenv("PYTHON") : "python3";
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "'%s' tests/npz_dataset.py '%s' %d%s", py, dir, n,
		 stored_only ? " stored" : "");
	int rc = system(cmd);
	if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 77)
		T_SKIP("numpy is not installed for %s", py);
	T_EQ(rc, 0);
}

static void make_dataset(const char *dir)
{
	write_dataset(dir, NFILES, !ferry__inflate_available());
	for (int i = 0; i < NFILES; i++) {
		struct tn_case c;
		uint64_t n;
		snprintf(c.expected, sizeof(c.expected), "%s/f%03d.x.bin", dir, i);
		want[i] = tn_expected(&c, &n);
		T_EQ(n, ROWS * COLS * 4);
	}
}

/* Sample s of file k, with the region rows [r0, r0 + nr) and columns [c0, c0 + nc). */
static void check_region(ferry_ctx *ctx, const struct ferry_sample *s, int k, int r0, int nr,
			 int c0, int nc)
{
	unsigned char ref[ROWS * COLS * 4];
	for (int r = 0; r < nr; r++)
		memcpy(ref + (size_t)r * nc * 4, want[k] + ((size_t)(r0 + r) * COLS + c0) * 4,
		       (size_t)nc * 4);
	tr_check_sample(ctx, s, ref, (uint64_t)nr * nc * 4, "npz reader");
}

/* Reads every batch; each archive once an epoch. Returns the samples seen. */
static unsigned read_all(ferry_ctx *ctx, ferry_reader *r, int roi)
{
	ferry_batch *b;
	unsigned seen[NFILES] = { 0 }, n = 0;
	int rc;
	while ((rc = ferry_reader_next(r, &b)) == 0) {
		for (unsigned i = 0; i < ferry_batch_size(b); i++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, i, &s));
			int k = atoi(strrchr(s.path, '/') + 2);
			T_ASSERT(k >= 0 && k < NFILES && strstr(s.path, ".npz"));
			if (roi)
				check_region(ctx, &s, k, 1, 3, 2, 5);
			else
				check_region(ctx, &s, k, 0, ROWS, 0, COLS);
			seen[k]++;
			n++;
		}
		ferry_batch_release(b);
	}
	T_EQ(rc, -FERRY_EEND);
	for (int k = 0; k < NFILES; k++)
		T_EQ(seen[k], 2);
	return n;
}

static void run_reader(ferry_ctx *ctx, const char *dir, int roi)
{
	int64_t start[2] = { 1, 2 }, shape[2] = { 3, 5 };
	struct ferry_reader_config cfg = { .root = dir, .npz_key = "x", .batch_size = 5,
					   .epochs = 2, .random_shuffle = 1, .seed = 7,
					   .num_shards = 1 };
	if (roi) {
		cfg.roi_nvals = 2;
		cfg.roi_start = start;
		cfg.roi_shape = shape;
	}
	ferry_reader *r;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_EQ(read_all(ctx, r, roi), 2 * NFILES);
	T_OK(ferry_reader_close(r));
}

/* An archive without the key: an error naming it, or a skip. */
static void run_missing_key(ferry_ctx *ctx, const char *dir)
{
	char bad[1100];
	snprintf(bad, sizeof(bad), "%s.bad.npz", dir);
	const char *files[] = { bad };
	struct ferry_reader_config cfg = { .files = files, .nfiles = 1, .npz_key = "x",
					   .epochs = 1, .num_shards = 1 };
	ferry_reader *r;
	ferry_batch *b;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_EQ(ferry_reader_next(r, &b), -ENOENT);
	T_ASSERT(strstr(ferry_last_error(), bad) && strstr(ferry_last_error(), "member 'x'"));
	ferry_reader_close(r);
	cfg.on_error = FERRY_ON_ERROR_SKIP;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_ASSERT(ferry_reader_next(r, &b) < 0); /* an epoch of nothing but skips ends in an error */
	struct ferry_reader_stats st;
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	T_EQ(st.files_skipped, 1);
	ferry_reader_close(r);
	cfg.samples = FERRY_SAMPLES_ROWS;
	T_EQ(ferry_reader_open(ctx, &cfg, &r), -FERRY_ECONFIG);
}

/* Without libdeflate: a reader over each deflated archive (the odd ones)
 * stops there. Returns how many. */
static unsigned run_refused(ferry_ctx *ctx)
{
	const char *dir = t_tmpdir();
	char path[1100];
	unsigned n = 0;
	write_dataset(dir, NFILES, 0);
	for (int i = 1; i < NFILES; i += 2, n++) {
		snprintf(path, sizeof(path), "%s/f%03d.npz", dir, i);
		const char *files[] = { path };
		struct ferry_reader_config cfg = { .files = files, .nfiles = 1, .npz_key = "x",
						   .epochs = 1, .num_shards = 1 };
		ferry_reader *r;
		ferry_batch *b;
		T_OK(ferry_reader_open(ctx, &cfg, &r));
		tn_check_refusal(ferry_reader_next(r, &b), path, "x", "the reader");
		ferry_reader_close(r);
	}
	snprintf(path, sizeof(path), "%s.bad.npz", dir);
	unlink(path);
	t_rmtree(dir);
	return n;
}

int main(void)
{
	char dir[300];
	snprintf(dir, sizeof(dir), "%s", t_tmpdir()); /* run_refused's t_tmpdir reuses its buffer */
	make_dataset(dir);
	ferry_ctx *ctx = tr_ctx(4096, 3);
	run_reader(ctx, dir, 0);
	run_reader(ctx, dir, 1);
	run_missing_key(ctx, dir);
	unsigned refused = ferry__inflate_available() ? 0 : run_refused(ctx);
	T_OK(ferry_ctx_destroy(ctx));
	char bad[1100];
	snprintf(bad, sizeof(bad), "%s.bad.npz", dir);
	unlink(bad);
	for (int i = 0; i < NFILES; i++)
		free(want[i]);
	t_rmtree(dir);
	printf("ok: %d archives' member x through the reader, whole and a region, two epochs\n",
	       NFILES);
	return tn_exit(refused);
}
