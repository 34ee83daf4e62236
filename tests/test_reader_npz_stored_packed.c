/*
 * A reader batch of many small stored .npz members (np.savez,
 * tests/npz_small.py DIR N BIG stored) is delivered as a batch of small .npy
 * files is: each member's payload is read from its offset in the archive
 * into the batch's staging buffer, its CRC-32 checked there by the CPU, and
 * one copy lands the run; never a copy, a wait or a stream sync of its own.
 * Counted on a fault device over the real one (nothing fails), 16 KiB
 * chunks: stacked batches ([32, 4, 8] float32, all little-endian C order)
 * make exactly one copy each and no synchronous copy (copy_sync), no stream
 * sync, and at most one event wait a batch, whole or with a region of
 * interest (whose member is read whole, for its CRC, and only the region's
 * runs copied into staging). Ragged batches (shapes vary; every 16th member
 * is larger than a chunk and takes the loader's path, alone; big-endian ones
 * are packed and swapped in staging, Fortran-order ones packed and
 * transposed there) stay within one copy a run of small members plus the
 * large ones' own, and make no synchronous copy; with a region only the
 * members that took the loader's path may stream-sync. The ragged dataset
 * also takes a region of two rows and two columns trimmed to each member
 * (trim_to_shape): a Fortran-order member's region is then transposed.
 * Every byte of every sample is checked against np.load's, over two shuffled
 * epochs with each archive once an epoch.
 */
#include "context/context.h"
#include "test_npz_util.h"

#define NFILES 96
#define BATCH 32
#define EPOCHS 2
#define CHUNK ((size_t)16 << 10)
#define BIG_ROWS 100 /* [100, 64] float32: 25600 bytes, more than a chunk */

struct dataset {
	char dir[400];
	int ragged;
	unsigned char *want[NFILES];
	uint64_t nbytes[NFILES];
};

struct counts {
	unsigned long copies, syncs, stream_syncs, waits;
};

/* A region: rows [r0, r0 + nr), columns [c0, c0 + nc) of every sample;
 * with trim, only the rows a sample has. */
struct region {
	int on;
	int64_t r0, nr, c0, nc;
	int trim;
};

static void write_datasets(const char *dir)
{
	tn_write_small(dir, NFILES, BIG_ROWS, "stored");
}

static void load_expected(struct dataset *d, const char *root, const char *sub)
{
	snprintf(d->dir, sizeof(d->dir), "%s/%s", root, sub);
	d->ragged = !strcmp(sub, "ragged");
	tn_small_expected(d->dir, NFILES, d->want, d->nbytes);
}

/* Archive i's member x, as npz_small.py writes it: its columns, and whether
 * the reader takes the loader's path for it (larger than a chunk) rather
 * than packing it. */
static int64_t columns(const struct dataset *d, int i)
{
	return !d->ragged ? 8 : i % 16 == 5 ? 64 : 3 + i % 4;
}

static int unpacked(const struct dataset *d, int i)
{
	return d->ragged && i % 16 == 5;
}


static struct counts count_now(struct ferry__device *fdev)
{
	return (struct counts){ t_fault_calls(fdev, T_FAULT_COPY),
				t_fault_calls(fdev, T_FAULT_COPY_SYNC),
				t_fault_calls(fdev, T_FAULT_STREAM_SYNC),
				t_fault_calls(fdev, T_FAULT_EVENT_SYNC) };
}

/* Sample s of archive k holds its region of want: read back through the
 * wrapped device, uncounted. */
static void check_sample(struct ferry__device *fdev, const struct ferry_sample *s,
			 const struct dataset *d, int k, const struct region *rg)
{
	struct ferry__device *inner = t_fault_inner(fdev);
	int64_t cols = columns(d, k), rows = (int64_t)d->nbytes[k] / 4 / cols;
	int64_t nr = !rg->on ? rows : rg->trim && rows - rg->r0 < rg->nr ? rows - rg->r0 : rg->nr;
	int64_t nc = rg->on ? rg->nc : cols;
	uint64_t nbytes = (uint64_t)(nr * nc * 4);
	unsigned char *got = malloc(nbytes + 1);
	T_ASSERT(got);
	if (s->nbytes != nbytes)
		T_FAIL("%s: %s: %llu bytes, want %llu", d->dir, s->path,
		       (unsigned long long)s->nbytes, (unsigned long long)nbytes);
	T_OK(inner->ops->copy_sync(inner, got, s->data, nbytes, FERRY__D2H));
	for (int64_t r = 0; r < nr; r++) {
		const unsigned char *want = d->want[k] + ((rg->r0 + r) * cols + rg->c0) * 4;
		for (int64_t i = 0; i < nc * 4; i++)
			if (got[r * nc * 4 + i] != want[i])
				T_FAIL("%s: %s: row %lld byte %lld is 0x%02x, want 0x%02x", d->dir,
				       s->path, (long long)r, (long long)i, got[r * nc * 4 + i],
				       want[i]);
	}
	free(got);
}

/* Checks every sample of b; each archive counted in seen. */
static void check_batch(struct ferry__device *fdev, ferry_batch *b, const struct dataset *d,
			const struct region *rg, unsigned *seen)
{
	struct ferry_batch_info info;
	T_OK(ferry_batch_describe(b, &info));
	if ((!d->ragged || (rg->on && !rg->trim)) && !info.stacked)
		T_FAIL("a batch of %s%s is not stacked", d->dir, rg->on ? " with a region" : "");
	for (unsigned i = 0; i < info.size; i++) {
		struct ferry_sample s;
		T_OK(ferry_batch_sample(b, i, &s));
		int k = tr_file_index(s.path);
		T_ASSERT(k >= 0 && k < NFILES);
		check_sample(fdev, &s, d, k, rg);
		seen[k]++;
	}
}

/* Reads EPOCHS shuffled epochs of d; returns the device operations they took
 * and the batches in *nbatches. */
static struct counts read_epochs(ferry_ctx *ctx, struct ferry__device *fdev,
				 const struct dataset *d, const struct region *rg,
				 unsigned *nbatches)
{
	int64_t start[2] = { rg->r0, rg->c0 }, shape[2] = { rg->nr, rg->nc };
	struct ferry_reader_config cfg = { .root = d->dir, .npz_key = "x", .batch_size = BATCH,
					   .epochs = EPOCHS, .random_shuffle = 1, .seed = 3,
					   .num_shards = 1 };
	unsigned seen[NFILES] = { 0 };
	ferry_reader *r;
	ferry_batch *b;
	int rc;
	if (rg->on) {
		cfg.roi_nvals = 2;
		cfg.roi_start = start;
		cfg.roi_shape = shape;
		cfg.out_of_bounds_policy = rg->trim ? FERRY_OOB_TRIM : FERRY_OOB_ERROR;
	}
	struct counts before = count_now(fdev);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	for (*nbatches = 0; (rc = ferry_reader_next(r, &b)) == 0; (*nbatches)++) {
		check_batch(fdev, b, d, rg, seen);
		ferry_batch_release(b);
	}
	if (rc != -FERRY_EEND)
		T_FAIL("%s: %s (%s)", d->dir, ferry_strerror(rc), ferry_last_error());
	struct counts after = count_now(fdev);
	T_OK(ferry_reader_close(r));
	for (int k = 0; k < NFILES; k++)
		T_EQ(seen[k], EPOCHS);
	return (struct counts){ after.copies - before.copies, after.syncs - before.syncs,
				after.stream_syncs - before.stream_syncs,
				after.waits - before.waits };
}

static void print_counts(const char *what, struct counts c, unsigned nbatches)
{
	printf("%s: %u batches of %d: %lu copies, %lu synchronous copies, %lu stream syncs, "
	       "%lu event waits\n", what, nbatches, BATCH, c.copies, c.syncs, c.stream_syncs,
	       c.waits);
	if (c.syncs)
		T_FAIL("%s: %lu synchronous copies for %d samples, want none", what, c.syncs,
		       NFILES * EPOCHS);
}

/* Stacked: one copy a batch, no stream sync, at most one event wait a batch. */
static void check_stacked(const char *what, struct counts c, unsigned nbatches)
{
	print_counts(what, c, nbatches);
	T_EQ(nbatches, EPOCHS * NFILES / BATCH);
	if (c.copies != nbatches || c.stream_syncs || c.waits > nbatches)
		T_FAIL("%s: %lu copies, %lu stream syncs and %lu event waits for %u batches of "
		       "small stored members, want %u, none and at most %u", what, c.copies,
		       c.stream_syncs, c.waits, nbatches, nbatches, nbatches);
}

/* Ragged: a copy a batch and a run split by an unpacked member, plus each
 * unpacked member's chunks; stream syncs only for unpacked members with a
 * region (copied out of scratch memory). */
static void check_ragged(const char *what, const struct dataset *d, struct counts c,
			 unsigned nbatches, int roi)
{
	unsigned long most = nbatches, slow = 0;
	for (int i = 0; i < NFILES; i++)
		if (unpacked(d, i)) {
			slow += EPOCHS;
			most += EPOCHS * (1 + d->nbytes[i] / CHUNK + 2 + (roi ? 2 : 0));
		}
	print_counts(what, c, nbatches);
	if (c.copies < nbatches || c.copies > most)
		T_FAIL("%s: %lu copies for %u batches, want %u to %lu", what, c.copies, nbatches,
		       nbatches, most);
	if (c.stream_syncs > (roi ? slow : 0))
		T_FAIL("%s: %lu stream syncs, want at most %lu (the unpacked members')", what,
		       c.stream_syncs, roi ? slow : 0);

}

static void run_packed(const char *root)
{
	const struct region whole = { 0 }, rows = { 1, 1, 2, 2, 5, 0 }, cols = { 1, 0, 1, 1, 2, 0 };
	const struct region square = { 1, 0, 2, 1, 2, 1 };
	struct dataset stacked, ragged;
	struct ferry__device *fdev;
	unsigned nb = 0;
	load_expected(&stacked, root, "stacked");
	load_expected(&ragged, root, "ragged");
	ferry_ctx *ctx = tr_counting_ctx(CHUNK, &fdev);
	struct counts c = read_epochs(ctx, fdev, &stacked, &whole, &nb);
	check_stacked("stacked", c, nb);
	c = read_epochs(ctx, fdev, &stacked, &rows, &nb);
	check_stacked("stacked, a region", c, nb);
	c = read_epochs(ctx, fdev, &ragged, &whole, &nb);
	check_ragged("ragged", &ragged, c, nb, 0);
	c = read_epochs(ctx, fdev, &ragged, &cols, &nb);
	check_ragged("ragged, a region", &ragged, c, nb, 1);
	c = read_epochs(ctx, fdev, &ragged, &square, &nb);
	check_ragged("ragged, a trimmed region", &ragged, c, nb, 1);
	T_OK(ferry_ctx_destroy(ctx));
	for (int i = 0; i < NFILES; i++) {
		free(stacked.want[i]);
		free(ragged.want[i]);
	}
}

int main(void)
{
	char root[300];
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	snprintf(root, sizeof(root), "%s", t_tmpdir());
	write_datasets(root);
	run_packed(root);
	t_rmtree(root);
	printf("ok: %d small stored members a dataset, stacked and ragged (big-endian and "
	       "Fortran order packed too), whole and regions, every byte; one copy a stacked "
	       "batch and no synchronous copy\n", NFILES);
	return T_EXIT_PASS;
}
