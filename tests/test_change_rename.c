/*
 * A file renamed over the path in the middle of a load. At the exact point
 * after the header was read (a hook after the first pread), another .npy is
 * renamed over the path: a big-endian uint32 file of
 * ones replaced by a little-endian file of twos. Every load must hand out the
 * file whose header it parsed (all ones), or fail naming the file; never the
 * second file's bytes under the first one's header (0x02000000, neither file).
 * Converted (big-endian, Fortran) and plain payloads, through ferry_load,
 * ferry_load_async and the reader.
 */
#include <stdatomic.h>
#include <unistd.h>

#include "test_reader_util.h"

#define COUNT 4096 /* elements: several 4 KiB chunks */

struct swap {
	char *dir, *path, *other;
	atomic_int preads;  /* preads seen since armed */
	atomic_int armed;   /* swap after the first pread (the header's) */
	atomic_int swapped;
};

static struct swap sw;

static void after_pread(void *arg, int fd, off_t offset)
{
	struct swap *s = arg;
	if (!atomic_load(&s->armed) || atomic_fetch_add(&s->preads, 1) != 0)
		return;
	T_ASSERT(rename(s->other, s->path) == 0);
	atomic_store(&s->swapped, 1);
}

/* Writes uint32 count elements of value v in byte order bo ('<' or '>'). */
static void write_u32(const char *path, char bo, int fortran, int ndim, const int64_t *shape,
		      uint32_t v)
{
	char header[256];
	uint64_t count = 1;
	for (int d = 0; d < ndim; d++)
		count *= (uint64_t)shape[d];
	int hl = ferry__npy_write_header(header, sizeof(header), FERRY_UINT32, bo, fortran, ndim,
					 shape, 0);
	T_OK(hl);
	uint32_t word = bo == '<' ? v : __builtin_bswap32(v);
	FILE *f = fopen(path, "wb");
	T_ASSERT(f && fwrite(header, 1, (size_t)hl, f) == (size_t)hl);
	for (uint64_t i = 0; i < count; i++)
		T_ASSERT(fwrite(&word, 4, 1, f) == 1);
	T_ASSERT(fclose(f) == 0);
}

/* Prepares the path as the "ones" file and the other as "twos", and arms. */
static void arm(char bo, int fortran)
{
	int64_t shape2[2] = { 64, COUNT / 64 }, shape1[1] = { COUNT };
	int ndim = fortran ? 2 : 1;
	write_u32(sw.path, bo, fortran, ndim, fortran ? shape2 : shape1, 1);
	write_u32(sw.other, '<', 0, 1, shape1, 2);
	atomic_store(&sw.preads, 0);
	atomic_store(&sw.swapped, 0);
	atomic_store(&sw.armed, 1);
}

/* The load got every element 1, or failed naming the file. */
static void check_result(ferry_ctx *ctx, int rc, const void *dev, const char *what)
{
	atomic_store(&sw.armed, 0);
	T_ASSERT(atomic_load(&sw.swapped));
	if (rc < 0) {
		if (rc != -FERRY_ECHANGED || !strstr(ferry_last_error(), sw.path))
			T_FAIL("%s: %s (%s)", what, ferry_strerror(rc), ferry_last_error());
		return;
	}
	uint32_t *got = malloc(COUNT * 4);
	T_ASSERT(got);
	T_OK(ferry_copy_to_host(ctx, got, dev, COUNT * 4));
	for (unsigned i = 0; i < COUNT; i++)
		if (got[i] != 1)
			T_FAIL("%s: element %u is 0x%08x: bytes of another file", what, i, got[i]);
	free(got);
}

static void load_once(ferry_ctx *ctx, char bo, int fortran, int async)
{
	ferry_array *a = NULL;
	char what[64];
	snprintf(what, sizeof(what), "%s %s%s", async ? "ferry_load_async" : "ferry_load",
		 bo == '>' ? "big-endian" : "little-endian", fortran ? " Fortran" : "");
	arm(bo, fortran);
	int rc = async ? ferry_load_async(ctx, sw.path, &a) : ferry_load(ctx, sw.path, &a);
	if (rc == 0 && async)
		T_OK(ferry_array_wait(a));
	check_result(ctx, rc, rc == 0 ? ferry_array_data(a) : NULL, what);
	ferry_array_free(a);
}

static void read_once(ferry_ctx *ctx, char bo, int fortran)
{
	const char *files[1] = { sw.path };
	struct ferry_reader_config cfg = { .files = files, .nfiles = 1, .epochs = 1, .threads = 1,
					   .num_shards = 1 };
	ferry_reader *r;
	ferry_batch *b = NULL;
	struct ferry_sample s = { 0 };
	arm(bo, fortran);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	int rc = ferry_reader_next(r, &b);
	if (rc == 0)
		T_OK(ferry_batch_sample(b, 0, &s));
	check_result(ctx, rc, s.data, bo == '>' ? "reader big-endian" : "reader");
	ferry_batch_release(b);
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	if (!t_io_syscalls_wrapped())
		T_SKIP("needs the pread wrapper");
	ferry_ctx *ctx = tr_ctx(4096, 1);
	sw.dir = strdup(t_tmpdir());
	sw.path = strdup(tr_path(sw.dir, "x.npy"));
	sw.other = strdup(tr_path(sw.dir, "y.npy"));
	t_io_after_pread(after_pread, &sw);
	for (int async = 0; async < 2; async++) {
		load_once(ctx, '>', 0, async);
		load_once(ctx, '<', 1, async);
		load_once(ctx, '<', 0, async);
	}
	read_once(ctx, '>', 0);
	read_once(ctx, '<', 0);
	t_io_after_pread(NULL, NULL);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(sw.dir);
	free(sw.dir), free(sw.path), free(sw.other);
	printf("a file renamed over the path mid-load: the load kept its own file\n");
	return T_EXIT_PASS;
}
