/*
 * A reader batch of many small deflated .npz members (np.savez_compressed,
 * tests/npz_small.py) is delivered as a batch of small .npy files is: the
 * members, inflated by the probes on the IO threads and converted on the
 * host (big-endian, Fortran order), are written into one staging buffer and
 * land with one copy a batch, never with a synchronous copy each. Counted on
 * a fault device over the real one (nothing fails): stacked batches ([32, 4,
 * 8]) make exactly one copy each; ragged ones (shapes vary, and some members
 * are larger than the staging chunk, so go through it in chunks from host
 * memory) one per run of small members plus the large ones' chunks; neither
 * makes a synchronous copy (copy_sync) or a stream sync. Every byte of every
 * sample is checked against np.load's, over two shuffled epochs with each
 * archive once an epoch, and the stacked dataset once more with a region of
 * interest. A build without libdeflate must refuse both datasets
 * (-FERRY_EUNSUPPORTED naming the archive, the member and libdeflate), and
 * the test ends in a skip.
 */
#include "context/context.h"
#include "test_npz_util.h"

#define NFILES 96
#define BATCH 32
#define EPOCHS 2
#define CHUNK ((size_t)16 << 10)
#define BIG_ROWS 100 /* [100, 64] float32: 25600 bytes, two chunks */
#define BIGS (NFILES / 16) /* ragged members of BIG_ROWS rows, an epoch */

struct dataset {
	char dir[400];
	unsigned char *want[NFILES];
	uint64_t nbytes[NFILES];
};

struct counts {
	unsigned long copies, syncs, stream_syncs;
};

static void write_datasets(const char *dir)
{
	tn_write_small(dir, NFILES, BIG_ROWS, "");
}

static void load_expected(struct dataset *d, const char *root, const char *sub)
{
	snprintf(d->dir, sizeof(d->dir), "%s/%s", root, sub);
	tn_small_expected(d->dir, NFILES, d->want, d->nbytes);
}


static struct counts count_now(struct ferry__device *fdev)
{
	return (struct counts){ t_fault_calls(fdev, T_FAULT_COPY),
				t_fault_calls(fdev, T_FAULT_COPY_SYNC),
				t_fault_calls(fdev, T_FAULT_STREAM_SYNC) };
}

/* Sample s holds want: read back through the wrapped device, uncounted. */
static void check_sample(struct ferry__device *fdev, const struct ferry_sample *s,
			 const unsigned char *want, uint64_t nbytes, const char *what)
{
	struct ferry__device *inner = t_fault_inner(fdev);
	unsigned char *got = malloc(nbytes + 1);
	T_ASSERT(got);
	if (s->nbytes != nbytes)
		T_FAIL("%s: %s: %llu bytes, want %llu", what, s->path, (unsigned long long)s->nbytes,
		       (unsigned long long)nbytes);
	T_OK(inner->ops->copy_sync(inner, got, s->data, nbytes, FERRY__D2H));
	for (uint64_t i = 0; i < nbytes; i++)
		if (got[i] != want[i])
			T_FAIL("%s: %s: byte %llu of %llu is 0x%02x, want 0x%02x", what, s->path,
			       (unsigned long long)i, (unsigned long long)nbytes, got[i], want[i]);
	free(got);
}

/* Rows [1, 3) and columns [2, 7) of sample k of the stacked dataset ([4, 8] float32). */
static void check_region(struct ferry__device *fdev, const struct ferry_sample *s,
			 const struct dataset *d, int k)
{
	unsigned char ref[2 * 5 * 4];
	for (int r = 0; r < 2; r++)
		memcpy(ref + r * 5 * 4, d->want[k] + ((1 + r) * 8 + 2) * 4, 5 * 4);
	check_sample(fdev, s, ref, sizeof(ref), "a region");
}

/* Checks every sample of b; each archive counted in seen. */
static void check_batch(struct ferry__device *fdev, ferry_batch *b, const struct dataset *d,
			int roi, unsigned *seen)
{
	struct ferry_batch_info info;
	T_OK(ferry_batch_describe(b, &info));
	if (!strstr(d->dir, "ragged") && !info.stacked)
		T_FAIL("a batch of %s is not stacked", d->dir);
	for (unsigned i = 0; i < info.size; i++) {
		struct ferry_sample s;
		T_OK(ferry_batch_sample(b, i, &s));
		int k = tr_file_index(s.path);
		T_ASSERT(k >= 0 && k < NFILES);
		if (roi)
			check_region(fdev, &s, d, k);
		else
			check_sample(fdev, &s, d->want[k], d->nbytes[k], d->dir);
		seen[k]++;
	}
}

/* Reads EPOCHS shuffled epochs of d; returns the device operations they took
 * and the batches in *nbatches. */
static struct counts read_epochs(ferry_ctx *ctx, struct ferry__device *fdev,
				 const struct dataset *d, int roi, unsigned *nbatches)
{
	int64_t start[2] = { 1, 2 }, shape[2] = { 2, 5 };
	struct ferry_reader_config cfg = { .root = d->dir, .npz_key = "x", .batch_size = BATCH,
					   .epochs = EPOCHS, .random_shuffle = 1, .seed = 3,
					   .num_shards = 1 };
	unsigned seen[NFILES] = { 0 };
	ferry_reader *r;
	ferry_batch *b;
	int rc;
	if (roi) {
		cfg.roi_nvals = 2;
		cfg.roi_start = start;
		cfg.roi_shape = shape;
	}
	struct counts before = count_now(fdev);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	for (*nbatches = 0; (rc = ferry_reader_next(r, &b)) == 0; (*nbatches)++) {
		check_batch(fdev, b, d, roi, seen);
		ferry_batch_release(b);
	}
	if (rc != -FERRY_EEND)
		T_FAIL("%s: %s (%s)", d->dir, ferry_strerror(rc), ferry_last_error());
	struct counts after = count_now(fdev);
	T_OK(ferry_reader_close(r));
	for (int k = 0; k < NFILES; k++)
		T_EQ(seen[k], EPOCHS);
	return (struct counts){ after.copies - before.copies, after.syncs - before.syncs,
				after.stream_syncs - before.stream_syncs };
}

static void check_counts(const char *what, struct counts c, unsigned long most, unsigned nbatches)
{
	printf("%s: %u batches of %d: %lu copies (at most %lu), %lu synchronous copies, "
	       "%lu stream syncs\n", what, nbatches, BATCH, c.copies, most, c.syncs, c.stream_syncs);
	if (c.syncs || c.stream_syncs)
		T_FAIL("%s: %lu synchronous copies and %lu stream syncs for %d samples, want none",
		       what, c.syncs, c.stream_syncs, NFILES * EPOCHS);
	if (c.copies > most || c.copies < nbatches)
		T_FAIL("%s: %lu copies for %u batches, want %u to %lu", what, c.copies, nbatches,
		       nbatches, most);
}

static void run_packed(const char *root)
{
	struct dataset stacked, ragged;
	struct ferry__device *fdev;
	unsigned nb = 0;
	load_expected(&stacked, root, "stacked");
	load_expected(&ragged, root, "ragged");
	ferry_ctx *ctx = tr_counting_ctx(CHUNK, &fdev);
	struct counts c = read_epochs(ctx, fdev, &stacked, 0, &nb);
	check_counts("stacked", c, nb, nb);
	T_EQ(nb, EPOCHS * NFILES / BATCH);
	/* A large member splits a run of small ones in two and takes two chunks. */
	c = read_epochs(ctx, fdev, &ragged, 0, &nb);
	check_counts("ragged", c, nb + 3ul * BIGS * EPOCHS, nb);
	c = read_epochs(ctx, fdev, &stacked, 1, &nb);
	check_counts("stacked, a region", c, nb, nb);
	T_OK(ferry_ctx_destroy(ctx));
	for (int i = 0; i < NFILES; i++) {
		free(stacked.want[i]);
		free(ragged.want[i]);
	}
}

/* Without libdeflate: a reader over either dataset stops at its first archive. */
static unsigned run_refused(const char *root)
{
	static const char *const subs[] = { "stacked", "ragged" };
	ferry_ctx *ctx = tr_ctx(CHUNK, 2);
	for (int i = 0; i < 2; i++) {
		char dir[1100], first[1200];
		snprintf(dir, sizeof(dir), "%s/%s", root, subs[i]);
		snprintf(first, sizeof(first), "%s/f000.npz", dir);
		struct ferry_reader_config cfg = { .root = dir, .npz_key = "x", .batch_size = BATCH,
						   .epochs = 1, .num_shards = 1 };
		ferry_reader *r;
		ferry_batch *b;
		T_OK(ferry_reader_open(ctx, &cfg, &r));
		tn_check_refusal(ferry_reader_next(r, &b), first, "x", "the reader");
		ferry_reader_close(r);
	}
	T_OK(ferry_ctx_destroy(ctx));
	return 2;
}

int main(void)
{
	char root[300];
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	snprintf(root, sizeof(root), "%s", t_tmpdir());
	write_datasets(root);
	unsigned refused = 0;
	if (ferry__inflate_available())
		run_packed(root);
	else
		refused = run_refused(root);
	t_rmtree(root);
	if (!refused)
		printf("ok: %d small deflated members a dataset, stacked and ragged, every byte, "
		       "one copy a batch and no synchronous copy\n", NFILES);
	return tn_exit(refused);
}
