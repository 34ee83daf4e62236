/*
 * Converted samples do not stop the pipeline: a big-endian or Fortran-order
 * file the reader outputs whole, too large for the CPU to convert in staging
 * (over 64 KiB; smaller ones are: test_reader_convert_packed), is loaded
 * with its conversion queued on the batch's ticket (on the device where it
 * converts, as ferry_load_async does), never waited for on its own. 48
 * float32 files of about 80 KiB (C and Fortran order, little- and
 * big-endian, shapes varying, all larger than the 16 KiB chunk), read as
 * batches of 8 over two shuffled epochs on a fault device that only counts.
 * After a reader over the same files readies the context (its staging pool,
 * and on CUDA the conversion kernels and their scratch), with the copy
 * stream held by a gate, the first batch still finishes
 * loading (every read done, every copy and conversion queued behind the
 * gate): before, its IO threads waited for each file's conversion, which
 * the gate held. Then every conversion runs on the device, none on the
 * host, with no synchronous copy and no stream sync, and every byte of every
 * sample matches the reference slicer.
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

/* The first ferry_reader_next, on a thread of its own (it schedules the
 * first batches, then waits for their copies behind the gate). */
struct taker {
	ferry_reader *r;
	ferry_batch *b;
	int rc;
};

static void *take(void *arg)
{
	struct taker *t = arg;
	t->rc = ferry_reader_next(t->r, &t->b);
	return NULL;
}

/* Checks every sample of b (counted in seen) and releases it. */
static void check_batch(struct ferry__device *fdev, ferry_batch *b, unsigned *seen)
{
	for (size_t k = 0; k < ferry_batch_size(b); k++) {
		struct ferry_sample s;
		T_OK(ferry_batch_sample(b, k, &s));
		check_sample(fdev, &s);
		seen[tr_file_index(s.path)]++;
	}
	ferry_batch_release(b);
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
					   .random_shuffle = 1, .seed = 11, .num_shards = 1,
					   .prefetch_depth = 1 };
	struct ferry__gate *gate;
	ferry_reader *r;
	ferry_batch *b;
	int rc;
	/* On CUDA the first conversion loads the kernels' module and allocates
	 * scratch, which may wait for work queued on the device, and a gate holds
	 * the stream until the batch is loaded: a reader over the same files
	 * first makes the context ready (and grows its staging pool). */
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while ((rc = ferry_reader_next(r, &b)) == 0)
		ferry_batch_release(b);
	T_EQ(rc, -FERRY_EEND);
	T_OK(ferry_reader_close(r));
	unsigned long syncs = t_fault_calls(fdev, T_FAULT_STREAM_SYNC);
	unsigned long copy_syncs = t_fault_calls(fdev, T_FAULT_COPY_SYNC);
	unsigned long conversions = t_fault_calls(fdev, T_FAULT_CONVERT);
	T_OK(fdev->ops->gate_create(fdev, &gate));
	T_OK(fdev->ops->gate_hold(fdev, ferry__staging_stream(ferry__lanes_get(ctx->ld.lanes, 0)),
				  gate));
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	struct taker t = { .r = r };
	pthread_t thread;
	T_ASSERT(pthread_create(&thread, NULL, take, &t) == 0);
	if (!tr_wait_loaded(r))
		T_FAIL("no batch loaded in 10 s behind a gate on the copy stream: a fetch "
		       "waits for its own copies or conversion");
	T_OK(fdev->ops->gate_open(fdev, gate));
	T_ASSERT(pthread_join(thread, NULL) == 0);
	T_OK(t.rc);
	check_batch(fdev, t.b, seen);
	for (batches = 1; (rc = ferry_reader_next(r, &b)) == 0; batches++)
		check_batch(fdev, b, seen);
	if (rc != -FERRY_EEND)
		T_FAIL("%s (%s)", ferry_strerror(rc), ferry_last_error());
	T_OK(ferry_reader_close(r));
	for (int i = 0; i < NFILES; i++)
		T_EQ(seen[i], EPOCHS);
	syncs = t_fault_calls(fdev, T_FAULT_STREAM_SYNC) - syncs;
	copy_syncs = t_fault_calls(fdev, T_FAULT_COPY_SYNC) - copy_syncs;
	conversions = t_fault_calls(fdev, T_FAULT_CONVERT) - conversions;
	printf("%u batches, %u converted files an epoch: the first loaded behind a gate; %lu "
	       "conversions on the device, %lu stream syncs, %lu synchronous copies\n", batches,
	       converted, conversions, syncs, copy_syncs);
	T_EQ(batches, EPOCHS * NFILES / BATCH);
	if (conversions != (unsigned long)EPOCHS * converted)
		T_FAIL("%lu conversions on the device, want %u", conversions, EPOCHS * converted);
	if (syncs || copy_syncs)
		T_FAIL("%lu stream syncs and %lu synchronous copies, want none", syncs, copy_syncs);
	fdev->ops->gate_destroy(fdev, gate);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	return T_EXIT_PASS;
}
