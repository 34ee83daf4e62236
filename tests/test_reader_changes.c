/*
 * Files that change under the reader. A file truncated after its header was
 * cached, deleted between listing and reading, replaced by one of another
 * shape, or unreadable (EACCES from the fault IO table, and chmod 000 when not
 * root) gives an error naming that file, or a reload for a changed header;
 * every sample that is handed out holds every byte of the file as it was
 * when read, never stale or mixed bytes.
 */
#include "context/context.h"
#include "test_reader_util.h"

#define NFILES 4
#define ID_BASE 100

struct dataset {
	char *dir;
	uint32_t id[NFILES];     /* the pattern id each file holds now */
	int64_t len[NFILES];     /* and its length (int32 elements) */
	ferry_ctx *ctx;
	unsigned char back[1 << 16];
};

static const char *file_path(struct dataset *d, unsigned i)
{
	char name[32];
	snprintf(name, sizeof(name), "f%03u.npy", i);
	return tr_path(d->dir, name);
}

/* Writes file i with a new id and length, through rename (never half a file). */
static void write_file(struct dataset *d, unsigned i, uint32_t id, int64_t len)
{
	char tmp[1100];
	snprintf(tmp, sizeof(tmp), "%s/tmp.part", d->dir);
	tr_write_npy(tmp, FERRY_INT32, 0, 0, 1, &len, id);
	T_ASSERT(rename(tmp, file_path(d, i)) == 0);
	d->id[i] = id;
	d->len[i] = len;
}

static void write_all(struct dataset *d)
{
	for (unsigned i = 0; i < NFILES; i++)
		write_file(d, i, ID_BASE + i, 8 + i);
}

/* The sample is file k as it is now (or was, given old id and len). */
static int sample_is(struct dataset *d, const struct ferry_sample *s, uint32_t id, int64_t len)
{
	if (s->dtype != FERRY_INT32 || s->ndim != 1 || s->shape[0] != len)
		return 0;
	T_OK(ferry_copy_to_host(d->ctx, d->back, s->data, s->nbytes));
	return t_check_pattern(d->back, s->nbytes, id, 0) == s->nbytes;
}

static ferry_reader *open_reader(struct dataset *d, enum ferry_on_error on_error)
{
	struct ferry_reader_config cfg = { .root = d->dir, .filter = "f*.npy", .epochs = 0,
					   .threads = 1, .prefetch_depth = 1,
					   .on_error = on_error };
	ferry_reader *r;
	T_OK(ferry_reader_open(d->ctx, &cfg, &r));
	return r;
}

/* Reads n samples (batches of one): each must be its file as it is now, or
 * (for file bad only) an error naming it. Returns the errors seen. */
static unsigned read_samples(struct dataset *d, ferry_reader *r, unsigned n, int bad)
{
	unsigned errors = 0;
	for (unsigned i = 0; i < n; i++) {
		ferry_batch *b;
		struct ferry_sample s;
		int rc = ferry_reader_next(r, &b);
		if (rc < 0) {
			if (bad < 0 || !strstr(ferry_last_error(), file_path(d, (unsigned)bad)))
				T_FAIL("unexpected error: %s (%s)", ferry_strerror(rc),
				       ferry_last_error());
			errors++;
			continue;
		}
		T_OK(ferry_batch_sample(b, 0, &s));
		int k = tr_file_index(s.path);
		if (!sample_is(d, &s, d->id[k], d->len[k]))
			T_FAIL("%s: not the file's bytes (shape %lld)", s.path, (long long)s.shape[0]);
		ferry_batch_release(b);
	}
	return errors;
}

/* Reads until the batches loaded before a change have passed: prefetch 1
 * means at most two (one loading, one loaded), read here unchecked by
 * content but checked to be whole files of one version or the other. */
static void drain_prefetched(struct dataset *d, ferry_reader *r, unsigned k, uint32_t old_id,
			     int64_t old_len)
{
	for (unsigned i = 0; i < 2; i++) {
		ferry_batch *b;
		struct ferry_sample s;
		if (ferry_reader_next(r, &b) < 0)
			continue;
		T_OK(ferry_batch_sample(b, 0, &s));
		int j = tr_file_index(s.path);
		int ok = sample_is(d, &s, d->id[j], d->len[j]) ||
			 ((unsigned)j == k && sample_is(d, &s, old_id, old_len));
		if (!ok)
			T_FAIL("%s: neither version of the file", s.path);
		ferry_batch_release(b);
	}
}

static void test_truncated_after_cached(struct dataset *d)
{
	ferry_reader *r = open_reader(d, FERRY_ON_ERROR_STOP);
	T_EQ(read_samples(d, r, NFILES, -1), 0); /* one epoch: every header cached */
	struct stat st;
	T_ASSERT(stat(file_path(d, 2), &st) == 0);
	T_ASSERT(truncate(file_path(d, 2), st.st_size - 12) == 0);
	drain_prefetched(d, r, 2, d->id[2], d->len[2]);
	unsigned errors = read_samples(d, r, 3 * NFILES, 2);
	if (errors < 2)
		T_FAIL("the truncated file gave %u errors in 3 epochs", errors);
	T_OK(ferry_reader_close(r));
	write_all(d);
}

static void test_deleted_after_listing(struct dataset *d)
{
	ferry_reader *r = open_reader(d, FERRY_ON_ERROR_STOP);
	T_ASSERT(unlink(file_path(d, 1)) == 0);
	unsigned errors = read_samples(d, r, 2 * NFILES, 1);
	T_EQ(errors, 2);
	T_ASSERT(strstr(ferry_last_error(), "f001.npy"));
	T_OK(ferry_reader_close(r));

	write_file(d, 1, ID_BASE + 1, 9); /* listed again, deleted again: skipped */
	r = open_reader(d, FERRY_ON_ERROR_SKIP);
	T_ASSERT(unlink(file_path(d, 1)) == 0);
	T_EQ(read_samples(d, r, 2 * (NFILES - 1), -1), 0);
	struct ferry_reader_stats st;
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	T_ASSERT(st.files_skipped >= 2);
	T_OK(ferry_reader_close(r));
	write_all(d);
}

static void test_replaced_other_shape(struct dataset *d)
{
	ferry_reader *r = open_reader(d, FERRY_ON_ERROR_STOP);
	T_EQ(read_samples(d, r, NFILES, -1), 0);
	uint32_t old_id = d->id[3];
	int64_t old_len = d->len[3];
	write_file(d, 3, 777, 3000);  /* another shape and size: a reload */
	drain_prefetched(d, r, 3, old_id, old_len);
	T_EQ(read_samples(d, r, 3 * NFILES, -1), 0);
	T_OK(ferry_reader_close(r));
	write_all(d);
}

static void test_unreadable(struct dataset *d)
{
	ferry_reader *r = open_reader(d, FERRY_ON_ERROR_STOP);
	t_io_arm(T_IO_OPEN, 3, -EACCES, 0); /* one thread, in order: the third file */
	T_EQ(read_samples(d, r, NFILES, 2), 1);
	T_ASSERT(t_io_fired());
	T_ASSERT(strstr(ferry_last_error(), "f002.npy"));
	T_ASSERT(strstr(ferry_last_error(), strerror(EACCES)));
	t_io_arm(T_IO_NONE, 0, 0, 0);
	T_EQ(read_samples(d, r, NFILES, -1), 0);
	T_OK(ferry_reader_close(r));
	if (geteuid() == 0) {
		printf("running as root: chmod 000 does not stop reads, so only the fault IO's EACCES\n");
		return;
	}
	T_ASSERT(chmod(file_path(d, 0), 0) == 0);
	r = open_reader(d, FERRY_ON_ERROR_STOP);
	T_EQ(read_samples(d, r, NFILES, 0), 1);
	T_ASSERT(strstr(ferry_last_error(), strerror(EACCES)));
	T_OK(ferry_reader_close(r));
	T_ASSERT(chmod(file_path(d, 0), 0644) == 0);
}

int main(void)
{
	struct ferry_ctx_options opt = { .chunk_size = 4096, .max_buffers = 4, .threads = 1 };
	static struct dataset d;
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	d.dir = strdup(t_tmpdir());
	T_OK(ferry__ctx_create_on(t_open_device(), t_fault_io(&ferry__io_posix), &opt, &d.ctx));
	write_all(&d);
	test_truncated_after_cached(&d);
	test_deleted_after_listing(&d);
	test_replaced_other_shape(&d);
	test_unreadable(&d);
	T_OK(ferry_ctx_destroy(d.ctx));
	t_rmtree(d.dir);
	free(d.dir);
	printf("reader under changing files: ok\n");
	return T_EXIT_PASS;
}
