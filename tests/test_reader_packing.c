/*
 * The batch is the unit of data movement: small files are read back to back
 * into staging buffers and land with one copy per chunk of a batch, not one
 * per file. 256 files of 1 KiB through a 64 KiB chunk: a batch of 256 costs
 * 4 copies, a batch of 32 one; batches of 1 and 4 one copy each (their runs
 * may share a buffer, never a copy). And runs are cut short of a chunk
 * when chunk-sized ones would leave IO threads without two each across the
 * window: 256 files of 16 KiB on 16 threads through an 8 MiB chunk, 16
 * batches of 4 MiB in the window (4 MiB a thread), make 2 copies of 2
 * MiB a batch (not 1 of the whole batch), batches of 32 still one. Counted from
 * the engine's trace (FERRY_TRACE): copies are "queue" lines, buffers "lease"
 * lines; every sample's bytes are checked too.
 */
#include "test_reader_util.h"

#define NFILES 256

/* A file set and the context and reader that read it. */
struct setup {
	const char *data;
	int64_t items;       /* int32 items a file */
	size_t chunk;
	unsigned threads;    /* the reader's IO threads */
};

struct counts {
	unsigned long copies, leases;
};

static struct counts count_trace(const char *path)
{
	struct counts c = { 0 };
	char line[8192];
	FILE *f = fopen(path, "r");
	T_ASSERT(f);
	while (fgets(line, sizeof(line), f)) {
		c.copies += strstr(line, ",queue,") != NULL;
		c.leases += strstr(line, ",lease,") != NULL;
	}
	fclose(f);
	return c;
}

/* Reads one epoch in batches of batch; returns the number of batches. */
static unsigned read_epoch(ferry_ctx *ctx, const struct setup *su, unsigned batch)
{
	struct ferry_reader_config cfg = { .root = su->data, .batch_size = batch, .epochs = 1,
					   .num_shards = 1, .threads = su->threads };
	ferry_reader *r;
	ferry_batch *b;
	unsigned n = 0;
	int64_t len = su->items, start = 0;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while (ferry_reader_next(r, &b) == 0) {
		for (unsigned i = 0; i < ferry_batch_size(b); i++) {
			struct ferry_sample s;
			uint64_t nbytes;
			T_OK(ferry_batch_sample(b, i, &s));
			void *want = tr_reference((uint32_t)tr_file_index(s.path), 4, 0, 0, 1, &len,
						  &start, &len, "\0\0\0", &nbytes);
			tr_check_sample(ctx, &s, want, nbytes, "packed");
			free(want);
		}
		n++;
		ferry_batch_release(b);
	}
	T_OK(ferry_reader_close(r));
	return n;
}

static void check(const char *dir, const struct setup *su, unsigned batch,
		  unsigned long copies_per_batch)
{
	char *trace = strdup(tr_path(dir, "trace.csv"));
	struct ferry_ctx_options o = { .gpu = -1, .direct = 0, .io = "posix",
				       .chunk_size = su->chunk, .threads = 1, .lanes = 1,
				       .max_buffers = 16 };
	ferry_ctx *ctx;
	unlink(trace);
	setenv("FERRY_TRACE", trace, 1);
	T_OK(ferry_ctx_create(&ctx, &o));
	unsetenv("FERRY_TRACE");
	unsigned batches = read_epoch(ctx, su, batch);
	T_OK(ferry_ctx_destroy(ctx));
	struct counts c = count_trace(trace);
	T_EQ(batches, NFILES / batch);
	if (c.copies != batches * copies_per_batch)
		T_FAIL("batch %u: %lu copies for %u batches, want %lu each", batch, c.copies, batches,
		       copies_per_batch);
	if (c.leases > c.copies)
		T_FAIL("batch %u: %lu buffers for %lu copies", batch, c.leases, c.copies);
	printf("%u threads, batch %3u: %3u batches, %3lu copies, %3lu buffers\n", su->threads,
	       batch, batches, c.copies, c.leases);
	free(trace);
}

/* NFILES files of items int32 each in DIR/NAME. */
static char *write_files(const char *dir, const char *name, int64_t items)
{
	char *data = strdup(tr_path(dir, name));
	T_ASSERT(mkdir(data, 0755) == 0);
	for (unsigned i = 0; i < NFILES; i++) {
		char file[32];
		snprintf(file, sizeof(file), "f%03u.npy", i);
		tr_write_npy(tr_path(data, file), FERRY_INT32, 0, 0, 1, &items, i);
	}
	return data;
}

int main(void)
{
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	char *dir = strdup(t_tmpdir());
	struct setup kib = { write_files(dir, "kib", 256), 256, 65536, 2 };
	struct setup spread = { write_files(dir, "spread", 4096), 4096, 8u << 20, 16 };
	check(dir, &kib, 256, 4);
	check(dir, &kib, 32, 1);
	check(dir, &kib, 4, 1);
	check(dir, &kib, 1, 1);
	check(dir, &spread, 256, 2);
	check(dir, &spread, 32, 1);
	t_rmtree(dir);
	free(dir);
	free((char *)kib.data);
	free((char *)spread.data);
	printf("small files: one copy per chunk of a batch, or per run of a thread's share\n");
	return T_EXIT_PASS;
}
