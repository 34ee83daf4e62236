/*
 * The header cache keeps where a stored .npz member lies, so the epochs after
 * the first read it without the zip directory:
 *  - counts: 32 archives of one small stored member (tests/npz_small.py),
 *    three shuffled epochs, every byte of every sample checked. Counted with
 *    the pread wrapper: the first epoch makes one pread an archive (its
 *    probe, which reads the whole small archive to find the directory; the
 *    fetch takes the payload from those bytes); through posix each later
 *    epoch a single preadv (the member's .npy header, checked against the
 *    cached one, and its payload), through io_uring none (opened, read and
 *    closed in the kernel, many files a call). Without the cache every epoch
 *    probes: one pread an archive an epoch (so posix reads as often either
 *    way, the directory's bytes more). The ragged set (members larger than a
 *    chunk, big-endian and Fortran-order ones, which take the loader's path)
 *    is checked byte for byte and reads less with the cache than without.
 *  - changes: one archive read epoch after epoch while it is replaced (by
 *    rename, as tests/npz_version.py writes it) by one whose member lies
 *    further in, by one of another dtype and shape but the same size, by a
 *    deflated one (which the cache does not keep) and by the first again:
 *    once the batches in flight at a replacement are delivered, every epoch
 *    is the new archive's, every byte checked; never the old header over the
 *    new bytes.
 */
#include <stdatomic.h>

#include "test_npz_util.h"

#define NFILES 32
#define BATCH 8
#define EPOCHS 3
#define BIG_ROWS 100 /* [100, 64] float32: more than the 16 KiB chunk */

static atomic_ulong preads;

static void count_pread(void *arg, int fd, off_t offset)
{
	(void)arg, (void)fd, (void)offset;
	atomic_fetch_add(&preads, 1);
}

static ferry_ctx *ctx_on(const char *io)
{
	struct ferry_ctx_options o = { .gpu = -1, .chunk_size = 16 << 10, .threads = 2,
				       .direct = -1, .io = io };
	ferry_ctx *ctx;
	int rc = ferry_ctx_create(&ctx, &o);
	if (rc == -FERRY_ENODEVICE)
		T_SKIP("no device: %s", ferry_last_error());
	if (rc == -FERRY_EIO_BACKEND)
		return NULL;
	T_OK(rc);
	return ctx;
}

/* Reads EPOCHS shuffled epochs of member x of the archives in dir, checking
 * every byte against want; returns the preads they took, and *bytes the
 * bytes the reader says it read. */
static unsigned long read_epochs(ferry_ctx *ctx, const char *dir, unsigned char **want,
				 const uint64_t *nbytes, int no_cache, uint64_t *bytes)
{
	struct ferry_reader_stats st;
	struct ferry_reader_config cfg = { .root = dir, .npz_key = "x", .batch_size = BATCH,
					   .epochs = EPOCHS, .random_shuffle = 1, .seed = 5,
					   .num_shards = 1, .no_header_cache = no_cache,
					   .prefetch_depth = 1 };
	unsigned seen[NFILES] = { 0 };
	ferry_reader *r;
	ferry_batch *b;
	int rc;
	atomic_store(&preads, 0);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while ((rc = ferry_reader_next(r, &b)) == 0) {
		for (size_t i = 0; i < ferry_batch_size(b); i++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, i, &s));
			int k = tr_file_index(s.path);
			T_ASSERT(k >= 0 && k < NFILES);
			tr_check_sample(ctx, &s, want[k], nbytes[k], dir);
			seen[k]++;
		}
		ferry_batch_release(b);
	}
	if (rc != -FERRY_EEND)
		T_FAIL("%s: %s (%s)", dir, ferry_strerror(rc), ferry_last_error());
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	*bytes = st.bytes_read;
	T_OK(ferry_reader_close(r));
	for (int k = 0; k < NFILES; k++)
		T_EQ(seen[k], EPOCHS);
	return atomic_load(&preads);
}

/* The cache reads the member's header and payload where a probe reads the
 * archive's directory too (or the whole small archive). */
static void expect_fewer_bytes(const char *io, const char *set, uint64_t cached, uint64_t parsed)
{
	printf("%s, %s: %llu bytes read with the cache, %llu without\n", io, set,
	       (unsigned long long)cached, (unsigned long long)parsed);
	if (cached >= parsed)
		T_FAIL("%s: %s: %llu bytes read with the cache, not fewer than %llu without", io,
		       set, (unsigned long long)cached, (unsigned long long)parsed);
}

static void test_counts(const char *io, const char *root)
{
	unsigned char *want[NFILES];
	uint64_t nbytes[NFILES];
	char dir[1100];
	ferry_ctx *ctx = ctx_on(io);
	if (!ctx) {
		printf("%s: no such backend here, not tested\n", io);
		return;
	}
	int uring = !strcmp(ferry_ctx_io_name(ctx), "uring");
	snprintf(dir, sizeof(dir), "%s/stacked", root);
	tn_small_expected(dir, NFILES, want, nbytes);
	uint64_t cached_bytes, parsed_bytes;
	unsigned long cached = read_epochs(ctx, dir, want, nbytes, 0, &cached_bytes);
	unsigned long parsed = read_epochs(ctx, dir, want, nbytes, 1, &parsed_bytes);
	printf("%s, small stored members: %lu preads with the cache, %lu without, for %d "
	       "archives over %d epochs\n", io, cached, parsed, NFILES, EPOCHS);
	/* The probe's pread in the first epoch; the payload's in each later one
	 * through posix. Plus at most a batch probed again: the second epoch's
	 * first batch may be planned while the first epoch's last is still
	 * probing the same archives (two batches in flight). */
	unsigned long want_cached = uring ? NFILES : (unsigned long)NFILES * EPOCHS;
	unsigned long want_parsed = (unsigned long)NFILES * EPOCHS;
	if (cached < want_cached || cached > want_cached + BATCH || parsed != want_parsed)
		T_FAIL("%s: %lu preads with the cache and %lu without, want %lu (up to %lu) and %lu",
		       io, cached, parsed, want_cached, want_cached + BATCH, want_parsed);
	expect_fewer_bytes(io, "stacked", cached_bytes, parsed_bytes);
	for (int k = 0; k < NFILES; k++)
		free(want[k]);

	snprintf(dir, sizeof(dir), "%s/ragged", root);
	tn_small_expected(dir, NFILES, want, nbytes);
	cached = read_epochs(ctx, dir, want, nbytes, 0, &cached_bytes);
	parsed = read_epochs(ctx, dir, want, nbytes, 1, &parsed_bytes);
	printf("%s, ragged stored members: %lu preads with the cache, %lu without\n", io, cached,
	       parsed);
	if (cached > parsed || (uring && cached == parsed))
		T_FAIL("%s: ragged: %lu preads with the cache, %lu without", io, cached, parsed);
	expect_fewer_bytes(io, "ragged", cached_bytes, parsed_bytes);
	for (int k = 0; k < NFILES; k++)
		free(want[k]);
	T_OK(ferry_ctx_destroy(ctx));
}

/* What tests/npz_version.py writes: x = arange(len, dtype) + base. */
struct version {
	const char *layout;
	enum ferry_dtype dtype;
	int64_t len, base;
};

static void write_version(const char *path, struct version v, long mtime)
{
	const char *py = getenv("PYTHON") ? getenv("PYTHON") : "python3";
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "'%s' tests/npz_version.py '%s' %s %s %lld %lld %ld", py, path,
		 v.layout, v.dtype == FERRY_INT16 ? "int16" : "float32", (long long)v.len,
		 (long long)v.base, mtime);
	T_EQ(system(cmd), 0);
}

static void *version_bytes(struct version v)
{
	void *out = malloc((size_t)v.len * 4);
	T_ASSERT(out);
	for (int64_t i = 0; i < v.len; i++) {
		if (v.dtype == FERRY_INT16)
			((int16_t *)out)[i] = (int16_t)(i + v.base);
		else
			((float *)out)[i] = (float)(i + v.base);
	}
	return out;
}

/* Whether sample s is version v: its dtype, shape and every byte. */
static int is_version(ferry_ctx *ctx, const struct ferry_sample *s, struct version v)
{
	uint64_t nbytes = (uint64_t)v.len * ferry_dtype_size(v.dtype);
	if (s->dtype != v.dtype || s->ndim != 1 || s->shape[0] != v.len || s->nbytes != nbytes)
		return 0;
	void *want = version_bytes(v), *got = malloc(nbytes);
	T_ASSERT(got);
	T_OK(ferry_copy_to_host(ctx, got, s->data, nbytes));
	int same = !memcmp(got, want, nbytes);
	free(want);
	free(got);
	return same;
}

/* Reads the next epoch (one sample): 1 when it is version v, 0 when it is
 * old (a batch in flight at the replacement); anything else fails. */
static int read_one(ferry_ctx *ctx, ferry_reader *r, struct version old, struct version v)
{
	ferry_batch *b;
	struct ferry_sample s;
	T_OK(ferry_reader_next(r, &b));
	T_OK(ferry_batch_sample(b, 0, &s));
	int is_new = is_version(ctx, &s, v);
	if (!is_new && !is_version(ctx, &s, old))
		T_FAIL("%s: a sample of neither version (%s, %lld values; want %s base %lld or "
		       "%s base %lld)", s.path, ferry_dtype_name(s.dtype), (long long)s.shape[0],
		       v.layout, (long long)v.base, old.layout, (long long)old.base);
	ferry_batch_release(b);
	return is_new;
}

#define IN_FLIGHT 2 /* prefetch_depth 1 + 1 */

static void test_versions(ferry_ctx *ctx, const char *dir)
{
	const struct version versions[] = {
		{ "first", FERRY_FLOAT32, 16, 100 },
		{ "second", FERRY_FLOAT32, 16, 200 },  /* x further into the archive */
		{ "second", FERRY_INT16, 32, 300 },    /* the same 64 bytes, another dtype */
		{ "deflated", FERRY_FLOAT32, 16, 400 }, /* not cached */
		{ "first", FERRY_FLOAT32, 16, 500 },
	};
	const char *path = tr_path(dir, "one.npz");
	const char *files[1] = { path };
	struct ferry_reader_config cfg = { .files = files, .nfiles = 1, .npz_key = "x",
					   .epochs = 0, .prefetch_depth = 1, .num_shards = 1 };
	ferry_reader *r;
	write_version(path, versions[0], 1000000);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	for (int e = 0; e < 3; e++)
		T_ASSERT(!read_one(ctx, r, versions[0], versions[1]));
	for (size_t k = 1; k < sizeof(versions) / sizeof(versions[0]); k++) {
		write_version(path, versions[k], 1000000 + (long)k);
		for (int e = 0; e < IN_FLIGHT + 4; e++) {
			int is_new = read_one(ctx, r, versions[k - 1], versions[k]);
			if (e >= IN_FLIGHT && !is_new)
				T_FAIL("epoch %d after writing version %zu (%s): still the old one",
				       e, k, versions[k].layout);
		}
	}
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	char *dir = strdup(t_tmpdir());
	if (!t_io_syscalls_wrapped())
		T_SKIP("needs the pread wrapper");
	unsetenv("FERRY_IO");
	unsetenv("FERRY_ODIRECT");
	tn_write_small(dir, NFILES, BIG_ROWS, "stored");
	t_io_after_pread(count_pread, NULL);
	test_counts("posix", dir);
	test_counts("uring", dir);
	t_io_after_pread(NULL, NULL);
	ferry_ctx *ctx = tr_ctx(0, 2);
	test_versions(ctx, dir);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	return T_EXIT_PASS;
}
