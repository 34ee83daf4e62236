/*
 * The reader over .npz archives whose members lie past 4 GiB: three sparse
 * archives as np.savez writes them (tests/npz_big.py, seeds 0 to 2: big.npy
 * over 4 GiB, then small.npy and the deflated packed.npy, their local
 * headers past 4 GiB, their offsets in zip64 fields, a zip64 end record).
 * ferry_info_member gives each member's dtype, shape, data offset and size
 * as the generator's manifest says; the reader (npz_key small, shuffled, two
 * epochs, 4 KiB chunks, 3 IO threads) gives each archive's small once an
 * epoch, every byte np.load's; a reader over the archives' packed (inflated
 * on the IO threads) likewise. A build without libdeflate must refuse
 * packed instead, by ferry_info_member and the reader, naming the file, the
 * member and libdeflate (the test then ends in a skip that counts them).
 * Skips by name without numpy or where the temporary directory's filesystem
 * makes no holes.
 */
#include "test_npz_util.h"

#define NARCH 3
#define NMEMBERS 3

struct member {
	char key[16], dtype[16];
	int ndim;
	int64_t shape[FERRY_MAX_DIMS];
	uint64_t data_at, nbytes;
};

static char paths[NARCH][400];
static struct member members[NARCH][NMEMBERS];

/* Reads the member lines of ARCHIVE.tsv (see tests/npz_big.py). */
static void read_manifest(int k)
{
	char name[420], line[512];
	snprintf(name, sizeof(name), "%.400s.tsv", paths[k]);
	FILE *f = fopen(name, "r");
	T_ASSERT(f);
	int n = 0;
	while (fgets(line, sizeof(line), f)) {
		struct member *m = &members[k][n];
		char method[16], shape[64];
		unsigned long long local, at, nbytes;
		if (strncmp(line, "member\t", 7))
			continue;
		T_ASSERT(n < NMEMBERS);
		T_EQ(sscanf(line, "member\t%15s\t%15s\t%15s\t%63s\t%llu\t%llu\t%llu", m->key, method,
			    m->dtype, shape, &local, &at, &nbytes), 7);
		m->data_at = at;
		m->nbytes = nbytes;
		for (char *s = shape, *end; *s; s = end + (*end == ',')) {
			m->shape[m->ndim++] = strtoll(s, &end, 10);
			T_ASSERT(end != s && m->ndim <= FERRY_MAX_DIMS);
		}
		n++;
	}
	fclose(f);
	T_EQ(n, NMEMBERS);
}

static void make_archives(const char *dir)
{
	const char *py = getenv("PYTHON") ? getenv("PYTHON") : "python3";
	char cmd[2400];
	for (int k = 0; k < NARCH; k++) {
		snprintf(paths[k], sizeof(paths[k]), "%s/a%d.npz", dir, k);
		snprintf(cmd, sizeof(cmd), "'%s' tests/npz_big.py '%s' %d", py, paths[k], k);
		fflush(stdout);
		int rc = system(cmd);
		if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 77)
			T_SKIP("tests/npz_big.py cannot write its archive here (its line above "
			       "says why)");
		if (rc != 0)
			T_FAIL("%s failed (%d)", cmd, rc);
		read_manifest(k);
	}
}

/* ferry_info_member of each member against the manifest. Returns the refusals. */
static unsigned check_info(int k)
{
	unsigned refused = 0;
	for (int i = 0; i < NMEMBERS; i++) {
		const struct member *m = &members[k][i];
		struct ferry_array_info info;
		int rc = ferry_info_member(paths[k], m->key, &info);
		if (!strcmp(m->key, "packed") && !ferry__inflate_available()) {
			tn_check_refusal(rc, paths[k], "packed", "ferry_info_member");
			refused++;
			continue;
		}
		T_OK(rc);
		if (strcmp(ferry_dtype_name(info.dtype), m->dtype) || info.ndim != m->ndim ||
		    info.data_offset != m->data_at || info.nbytes != m->nbytes)
			T_FAIL("%s[%s]: %s rank %d at %" PRIu64 ", %" PRIu64 " bytes; numpy wrote %s "
			       "rank %d at %" PRIu64 ", %" PRIu64 " bytes", paths[k], m->key,
			       ferry_dtype_name(info.dtype), info.ndim, info.data_offset,
			       info.nbytes, m->dtype, m->ndim, m->data_at, m->nbytes);
		for (int d = 0; d < m->ndim; d++)
			T_EQ(info.shape[d], m->shape[d]);
	}
	return refused;
}

/* Which archive a sample came from. */
static int archive_of(const char *path)
{
	for (int k = 0; k < NARCH; k++)
		if (!strcmp(path, paths[k]))
			return k;
	T_FAIL("the reader read %s, not one of the archives", path);
}

/* Reads key of every archive, shuffled, over two epochs: every byte np.load's. */
static void run_reader(ferry_ctx *ctx, const char *dir, const char *key)
{
	struct ferry_reader_config cfg = { .root = dir, .npz_key = key, .batch_size = 2,
					   .epochs = 2, .random_shuffle = 1, .seed = 11,
					   .num_shards = 1 };
	void *want[NARCH];
	uint64_t nbytes[NARCH];
	unsigned seen[NARCH] = { 0 };
	for (int k = 0; k < NARCH; k++) {
		struct tn_case c;
		snprintf(c.expected, sizeof(c.expected), "%.400s.%.16s.bin", paths[k], key);
		want[k] = tn_expected(&c, &nbytes[k]);
	}
	ferry_reader *r;
	ferry_batch *b;
	int rc;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while ((rc = ferry_reader_next(r, &b)) == 0) {
		for (unsigned i = 0; i < ferry_batch_size(b); i++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, i, &s));
			int k = archive_of(s.path);
			tr_check_sample(ctx, &s, want[k], nbytes[k], key);
			seen[k]++;
		}
		ferry_batch_release(b);
	}
	T_EQ(rc, -FERRY_EEND);
	T_OK(ferry_reader_close(r));
	for (int k = 0; k < NARCH; k++) {
		T_EQ(seen[k], 2);
		free(want[k]);
	}
}

/* Without libdeflate: a reader over the archives' packed stops at the first. */
static unsigned run_refused(ferry_ctx *ctx, const char *dir)
{
	struct ferry_reader_config cfg = { .root = dir, .npz_key = "packed", .epochs = 1,
					   .num_shards = 1 };
	ferry_reader *r;
	ferry_batch *b;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	int rc = ferry_reader_next(r, &b);
	const char *msg = ferry_last_error();
	if (rc != -FERRY_EUNSUPPORTED || !strstr(msg, dir) || !strstr(msg, "member 'packed'") ||
	    !strstr(msg, "libdeflate"))
		T_FAIL("the reader over packed without libdeflate: %d (%s)", rc, msg);
	ferry_reader_close(r);
	return 1;
}

int main(void)
{
	char dir[300];
	unsigned refused = 0;
	snprintf(dir, sizeof(dir), "%s", t_tmpdir());
	make_archives(dir);
	for (int k = 0; k < NARCH; k++)
		refused += check_info(k);
	ferry_ctx *ctx = tr_ctx(4096, 3);
	run_reader(ctx, dir, "small");
	if (ferry__inflate_available())
		run_reader(ctx, dir, "packed");
	else
		refused += run_refused(ctx, dir);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	printf("ok: %d archives' members past 4 GiB through ferry_info_member and the reader\n",
	       NARCH);
	return tn_exit(refused);
}
