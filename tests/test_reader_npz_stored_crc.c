/*
 * A stored .npz member whose bytes do not match its CRC-32 fails its sample
 * in the reader, whichever path read it: one byte of member x's payload is
 * flipped (its last, outside the region below) in a small archive, whose
 * member the reader packs with others (read into the batch's staging buffer
 * and checked there), and in one larger than a chunk (the loader's path).
 * Datasets of tests/npz_small.py (stored), batches of 4, 16 KiB chunks.
 * Under on_error stop the batch holding the archive fails with
 * -FERRY_EFORMAT naming the archive, the member and the CRC-32 mismatch,
 * whole and with a region of interest (row 0, columns 1 and 2: the CRC
 * covers the whole member, so a byte outside the region still counts); under skip every other sample
 * arrives, every byte checked against np.load's, the archive is counted
 * skipped once an epoch, and a reader of that archive alone ends its epoch
 * with the same message.
 */
#include "test_npz_util.h"

#define NFILES 16
#define BATCH 4
#define EPOCHS 2
#define CHUNK ((size_t)16 << 10)
#define BAD 5 /* the archive corrupted: small in stacked/, larger than a chunk in ragged/ */

struct dataset {
	char dir[400];
	int ragged;
	unsigned char *want[NFILES];
	uint64_t nbytes[NFILES];
};

static void write_datasets(const char *dir)
{
	tn_write_small(dir, NFILES, 100, "stored");
}

static void archive_path(const struct dataset *d, int i, char *buf, size_t len)
{
	snprintf(buf, len, "%s/f%03d.npz", d->dir, i);
}

/* Flips the last byte of member x of archive BAD, found by its header. */
static void corrupt(const struct dataset *d)
{
	char path[1400];
	struct ferry_array_info info;
	unsigned char byte;
	archive_path(d, BAD, path, sizeof(path));
	T_OK(ferry_info_member(path, "x", &info));
	int fd = open(path, O_RDWR);
	T_ASSERT(fd >= 0);
	off_t at = (off_t)(info.data_offset + info.nbytes - 1);
	T_EQ(pread(fd, &byte, 1, at), 1);
	byte ^= 0xFF;
	T_EQ(pwrite(fd, &byte, 1, at), 1);
	close(fd);
}

static void load_dataset(struct dataset *d, const char *root, const char *sub)
{
	snprintf(d->dir, sizeof(d->dir), "%s/%s", root, sub);
	d->ragged = !strcmp(sub, "ragged");
	tn_small_expected(d->dir, NFILES, d->want, d->nbytes);
	T_ASSERT(d->ragged ? d->nbytes[BAD] > CHUNK : d->nbytes[BAD] < CHUNK);
	corrupt(d);
}

static struct ferry_reader_config config(const struct dataset *d, int roi,
					 enum ferry_on_error on_error)
{
	static int64_t start[2] = { 0, 1 }, shape[2] = { 1, 2 };
	struct ferry_reader_config cfg = { .root = d->dir, .npz_key = "x", .batch_size = BATCH,
					   .epochs = EPOCHS, .num_shards = 1, .on_error = on_error };
	if (roi) {
		cfg.roi_nvals = 2;
		cfg.roi_start = start;
		cfg.roi_shape = shape;
	}
	return cfg;
}

/* The message names the archive, the member and the mismatch. */
static void check_message(const char *msg, const struct dataset *d, const char *what)
{
	char path[1400];
	archive_path(d, BAD, path, sizeof(path));
	if (!strstr(msg, path) || !strstr(msg, "member 'x'") || !strstr(msg, "CRC-32 mismatch"))
		T_FAIL("%s: the message does not name %s, member 'x' and a CRC-32 mismatch: %s",
		       what, path, msg);
}

/* Stop: the first batch arrives, the second (files 4 to 7) is the error. */
static void run_stop(ferry_ctx *ctx, const struct dataset *d, int roi)
{
	struct ferry_reader_config cfg = config(d, roi, FERRY_ON_ERROR_STOP);
	ferry_reader *r;
	ferry_batch *b;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_OK(ferry_reader_next(r, &b));
	ferry_batch_release(b);
	T_EQ(ferry_reader_next(r, &b), -FERRY_EFORMAT);
	check_message(ferry_last_error(), d, roi ? "stop, a region" : "stop");
	ferry_reader_close(r);
}

/* Sample s of archive k: row 0, columns [1, 3) with a region (every shape
 * of npz_small.py has them; the flipped byte, the last, lies outside). */
static void check_sample(ferry_ctx *ctx, const struct dataset *d, const struct ferry_sample *s,
			 int k, int roi)
{
	int64_t cols = !d->ragged ? 8 : k % 16 == 5 ? 64 : 3 + k % 4;
	if (roi)
		tr_check_sample(ctx, s, d->want[k] + 4, 2 * 4, "a region");
	else
		tr_check_sample(ctx, s, d->want[k], d->nbytes[k], d->dir);
	T_ASSERT(d->nbytes[k] % (uint64_t)(cols * 4) == 0);
}

/* Skip: every other sample, every byte; the archive skipped once an epoch. */
static void run_skip(ferry_ctx *ctx, const struct dataset *d, int roi)
{
	struct ferry_reader_config cfg = config(d, roi, FERRY_ON_ERROR_SKIP);
	struct ferry_reader_stats st;
	unsigned seen[NFILES] = { 0 };
	ferry_reader *r;
	ferry_batch *b;
	int rc;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while ((rc = ferry_reader_next(r, &b)) == 0) {
		for (unsigned i = 0; i < ferry_batch_size(b); i++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, i, &s));
			int k = tr_file_index(s.path);
			T_ASSERT(k >= 0 && k < NFILES);
			check_sample(ctx, d, &s, k, roi);
			seen[k]++;
		}
		ferry_batch_release(b);
	}
	T_EQ(rc, -FERRY_EEND);
	for (int k = 0; k < NFILES; k++)
		T_EQ(seen[k], k == BAD ? 0 : EPOCHS);
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	T_EQ(st.files_skipped, EPOCHS);
	T_OK(ferry_reader_close(r));
}

/* Skip over the archive alone: the epoch delivers nothing, and its error is
 * the skipped archive's. */
static void run_skip_alone(ferry_ctx *ctx, const struct dataset *d)
{
	char path[1400];
	archive_path(d, BAD, path, sizeof(path));
	const char *files[] = { path };
	struct ferry_reader_config cfg = { .files = files, .nfiles = 1, .npz_key = "x",
					   .epochs = 1, .num_shards = 1,
					   .on_error = FERRY_ON_ERROR_SKIP };
	ferry_reader *r;
	ferry_batch *b;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	T_EQ(ferry_reader_next(r, &b), -FERRY_EFORMAT);
	check_message(ferry_last_error(), d, "skip, alone");
	ferry_reader_close(r);
}

int main(void)
{
	char root[300];
	struct dataset d[2];
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	snprintf(root, sizeof(root), "%s", t_tmpdir());
	write_datasets(root);
	load_dataset(&d[0], root, "stacked");
	load_dataset(&d[1], root, "ragged");
	ferry_ctx *ctx = tr_ctx(CHUNK, 2);
	for (int i = 0; i < 2; i++) {
		for (int roi = 0; roi < 2; roi++) {
			run_stop(ctx, &d[i], roi);
			run_skip(ctx, &d[i], roi);
		}
		run_skip_alone(ctx, &d[i]);
	}
	T_OK(ferry_ctx_destroy(ctx));
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < NFILES; k++)
			free(d[i].want[k]);
	t_rmtree(root);
	printf("ok: a stored member with a flipped byte fails its sample (packed, and larger "
	       "than a chunk), under stop and skip, whole and a region\n");
	return T_EXIT_PASS;
}
