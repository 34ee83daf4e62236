/*
 * Converted samples do not stop the pipeline: a big-endian or Fortran-order
 * file the reader outputs whole, too large for the CPU to convert in staging
 * (over 64 KiB; smaller ones are: test_reader_convert_packed), is loaded
 * with its conversion queued on the batch's ticket (on the device where it
 * converts, as ferry_load_async does), never waited for on its own. 48
 * float32 files of about 80 KiB (C and Fortran order, little- and
 * big-endian, shapes varying, all larger than the 16 KiB chunk), read as batches of 8 over two shuffled epochs on a fault device
 * that only counts: no synchronous copy, no stream sync, and at most one
 * event wait a batch (the batch's own: before, a wait a converted file).
 * Every byte of every sample is checked against the reference slicer.
 */
#include "test_reader_util.h"

#define NFILES 48
#define BATCH 8
#define EPOCHS 2
#define CHUNK ((size_t)16 << 10)

struct file {
	enum ferry_dtype dtype;
	char byteorder;
	int fortran;
	int64_t shape[2];
};

static struct file file_of(int i)
{
	struct file f = { FERRY_FLOAT32, i % 4 < 2 ? '>' : '<', i % 2,
			  { 64 + i % 5, 300 + i % 3 } };
	return f;
}

/* Sample s holds its file's array as C order, native byte order: read back
 * through the wrapped device, uncounted. */
static void check_sample(struct ferry__device *fdev, const struct ferry_sample *s)
{
	struct ferry__device *inner = t_fault_inner(fdev);
	int i = tr_file_index(s->path);
	T_ASSERT(i >= 0 && i < NFILES);
	struct file f = file_of(i);
	int64_t start[2] = { 0, 0 };
	float fill = 0;
	uint64_t nbytes;
	unsigned char *want = tr_reference((uint32_t)i, 4, f.byteorder == '>', f.fortran, 2,
					   f.shape, start, f.shape, &fill, &nbytes);
	unsigned char *got = malloc(nbytes);
	T_ASSERT(got);
	T_EQ(s->dtype, f.dtype);
	T_EQ(s->nbytes, nbytes);
	T_OK(inner->ops->copy_sync(inner, got, s->data, nbytes, FERRY__D2H));
	int differ = memcmp(got, want, nbytes) != 0;
	for (uint64_t k = 0; differ && k < nbytes; k++)
		if (got[k] != want[k])
			T_FAIL("%s: byte %llu is 0x%02x, want 0x%02x", s->path,
			       (unsigned long long)k, got[k], want[k]);
	free(got);
	free(want);
}

int main(void)
{
	char *dir = strdup(t_tmpdir());
	struct ferry__device *fdev;
	ferry_ctx *ctx = tr_counting_ctx(CHUNK, &fdev);
	unsigned seen[NFILES] = { 0 }, batches = 0, converted = 0;
	for (int i = 0; i < NFILES; i++) {
		struct file f = file_of(i);
		char name[32];
		snprintf(name, sizeof(name), "f%03d.npy", i);
		tr_write_npy(tr_path(dir, name), f.dtype, f.byteorder, f.fortran, 2, f.shape,
			     (uint32_t)i);
		converted += f.fortran || f.byteorder == '>';
	}
	struct ferry_reader_config cfg = { .root = dir, .batch_size = BATCH, .epochs = EPOCHS,
					   .random_shuffle = 1, .seed = 11, .num_shards = 1 };
	ferry_reader *r;
	ferry_batch *b;
	int rc;
	unsigned long waits = t_fault_calls(fdev, T_FAULT_EVENT_SYNC);
	unsigned long syncs = t_fault_calls(fdev, T_FAULT_STREAM_SYNC);
	unsigned long copy_syncs = t_fault_calls(fdev, T_FAULT_COPY_SYNC);
	unsigned long conversions = t_fault_calls(fdev, T_FAULT_CONVERT);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while ((rc = ferry_reader_next(r, &b)) == 0) {
		for (size_t k = 0; k < ferry_batch_size(b); k++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, k, &s));
			check_sample(fdev, &s);
			seen[tr_file_index(s.path)]++;
		}
		ferry_batch_release(b);
		batches++;
	}
	if (rc != -FERRY_EEND)
		T_FAIL("%s (%s)", ferry_strerror(rc), ferry_last_error());
	T_OK(ferry_reader_close(r));
	for (int i = 0; i < NFILES; i++)
		T_EQ(seen[i], EPOCHS);
	waits = t_fault_calls(fdev, T_FAULT_EVENT_SYNC) - waits;
	syncs = t_fault_calls(fdev, T_FAULT_STREAM_SYNC) - syncs;
	copy_syncs = t_fault_calls(fdev, T_FAULT_COPY_SYNC) - copy_syncs;
	conversions = t_fault_calls(fdev, T_FAULT_CONVERT) - conversions;
	printf("%u batches, %u converted files an epoch: %lu conversions on the device, %lu event "
	       "waits, %lu stream syncs, %lu synchronous copies\n", batches, converted,
	       conversions, waits, syncs, copy_syncs);
	T_EQ(batches, EPOCHS * NFILES / BATCH);
	if (conversions != (unsigned long)EPOCHS * converted)
		T_FAIL("%lu conversions on the device, want %u", conversions, EPOCHS * converted);
	if (waits > batches || syncs || copy_syncs)
		T_FAIL("%lu event waits, %lu stream syncs and %lu synchronous copies for %u "
		       "batches, want at most %u, none and none", waits, syncs, copy_syncs,
		       batches, batches);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	return T_EXIT_PASS;
}
