/*
 * The reader on the zero-copy path: a dataset of 4 MiB files read for three
 * epochs. Epoch 1 reads them through staging and offers them to the
 * registrar; once its batches are taken, the registrar is drained, so every
 * file of epoch 3 (loaded after the drain) is copied straight from its
 * registered mapping: files_mapped counts them. Every sample of every epoch is
 * checked byte for byte against a CPU read of its file.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context/context.h"
#include "test_reader_util.h"

#define NFILES 6
#define ELEMS (1u << 20) /* float32: 4 MiB payloads */
#define EPOCHS 3

static char *dir, *paths[NFILES];

static void write_files(void)
{
	int64_t n = ELEMS;
	for (unsigned i = 0; i < NFILES; i++) {
		char name[32];
		snprintf(name, sizeof(name), "s%u.npy", i);
		paths[i] = strdup(tr_path(dir, name));
		tr_write_npy(paths[i], FERRY_FLOAT32, 0, 0, 1, &n, 40 + i);
	}
}

/* The last len bytes of path (a payload), read by the CPU. */
static void *cpu_tail(const char *path, uint64_t len)
{
	struct stat st;
	void *buf = malloc(len);
	int fd = open(path, O_RDONLY);
	T_ASSERT(buf && fd >= 0 && fstat(fd, &st) == 0);
	T_EQ((uint64_t)pread(fd, buf, len, st.st_size - (off_t)len), len);
	close(fd);
	return buf;
}

static void check_batch(ferry_ctx *ctx, ferry_batch *b)
{
	for (unsigned i = 0; i < ferry_batch_size(b); i++) {
		struct ferry_sample s;
		T_OK(ferry_batch_sample(b, i, &s));
		void *want = cpu_tail(s.path, s.nbytes);
		tr_check_sample(ctx, &s, want, s.nbytes, "reader, mapped");
		free(want);
	}
}

/* Reads every epoch, draining the registrar once epoch 1's batches are taken. */
static void read_epochs(ferry_ctx *ctx, ferry_reader *r)
{
	ferry_batch *b;
	uint64_t epoch, index, drained = 0;
	while (ferry_reader_next(r, &b) == 0) {
		T_OK(ferry_batch_position(b, &epoch, &index));
		check_batch(ctx, b);
		ferry_batch_release(b);
		if (epoch >= 1 && !drained) { /* epoch numbers start at 0 */
			ferry__mapped_drain(ctx->ld.mapped);
			drained = 1;
		}
	}
	T_ASSERT(drained);
}

int main(void)
{
	unsetenv("FERRY_IO");
	setenv("FERRY_ODIRECT", "0", 1);
	setenv("FERRY_PIN_BUDGET", "256M", 1);
	dir = strdup(t_tmpdir());
	write_files();
	ferry_ctx *ctx = tr_ctx(0, 2);
	T_ASSERT(ctx->ld.mapped);
	struct ferry_reader_config cfg = { .files = (const char **)paths, .nfiles = NFILES,
					   .batch_size = 2, .epochs = EPOCHS, .num_shards = 1,
					   .prefetch_depth = 1 };
	ferry_reader *r;
	struct ferry_reader_stats st;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	read_epochs(ctx, r);
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	T_OK(ferry_reader_close(r));
	T_EQ(st.samples, (uint64_t)NFILES * EPOCHS);
	T_EQ(st.files_buffered + st.files_direct + st.files_mapped, (uint64_t)NFILES * EPOCHS);
	if (st.files_mapped < NFILES)
		T_FAIL("files_mapped %llu (buffered %llu), want at least %u: every file of the "
		       "last epoch", (unsigned long long)st.files_mapped,
		       (unsigned long long)st.files_buffered, NFILES);
	T_OK(ferry_ctx_destroy(ctx));
	for (unsigned i = 0; i < NFILES; i++)
		free(paths[i]);
	t_rmtree(dir);
	free(dir);
	printf("ok: %llu of %u files copied from their mappings, every byte right\n",
	       (unsigned long long)st.files_mapped, NFILES * EPOCHS);
	return T_EXIT_PASS;
}
