/*
 * A file rewritten in place while it is read. Right after a load's first pread
 * (a hook), the payload is overwritten with other bytes of the same length and
 * the old modification time is put back (as `cp -p` and `rsync -t` leave it),
 * so only the change time tells. Every load must then fail with
 * -FERRY_ECHANGED naming the file, never hand out the bytes it read; the same
 * loads without a change succeed, every byte checked. Plain and converted
 * payloads, ferry_load, ferry_read_range and the reader.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_reader_util.h"

#define LEN 3000 /* int32 elements: 12000 bytes, three 4 KiB chunks */

struct rewrite {
	char *path;
	atomic_int armed, done;
};

static struct rewrite rw;

/* Overwrites the payload with pattern id 99, keeping size and mtime. */
static void rewrite_in_place(const char *path)
{
	void *other = tr_payload(99, LEN * 4);
	tr_overwrite_tail(path, other, LEN * 4);
	free(other);
}

static void after_pread(void *arg, int fd, off_t offset)
{
	struct rewrite *w = arg;
	if (atomic_exchange(&w->armed, 0))
		rewrite_in_place(w->path);
	atomic_store(&w->done, 1);
}

static void write_file(char bo, int fortran)
{
	int64_t shape2[2] = { 30, 100 }, shape1[1] = { LEN };
	tr_write_npy(rw.path, FERRY_INT32, bo, fortran, fortran ? 2 : 1, fortran ? shape2 : shape1,
		     7);
}

/* rc must be ECHANGED naming the file when armed, else success. */
static void expect(int rc, int changed, const char *what)
{
	if (changed) {
		T_ASSERT(atomic_load(&rw.done) && !atomic_load(&rw.armed));
		if (rc != -FERRY_ECHANGED || !strstr(ferry_last_error(), rw.path))
			T_FAIL("%s: %s (%s), want -FERRY_ECHANGED", what, ferry_strerror(rc),
			       ferry_last_error());
		return;
	}
	if (rc < 0)
		T_FAIL("%s (no change): %s (%s)", what, ferry_strerror(rc), ferry_last_error());
}

static void load_case(ferry_ctx *ctx, char bo, int fortran, int changed)
{
	ferry_array *a = NULL;
	write_file(bo, fortran);
	atomic_store(&rw.armed, changed);
	int rc = ferry_load(ctx, rw.path, &a);
	expect(rc, changed, bo == '>' ? "ferry_load big-endian" : fortran ? "ferry_load Fortran"
									  : "ferry_load");
	if (rc == 0 && !fortran) {
		int64_t start = 0, len = LEN;
		uint64_t nbytes;
		void *want = tr_reference(7, 4, bo == '>', 0, 1, &len, &start, &len, "\0\0\0", &nbytes);
		tr_check_bytes(ctx, ferry_array_data(a), want, nbytes, "ferry_load");
		free(want);
	}
	ferry_array_free(a);
}

static void range_case(ferry_ctx *ctx, int changed)
{
	void *dst;
	write_file('<', 0);
	T_OK(ferry_device_alloc(ctx, LEN * 4, &dst));
	atomic_store(&rw.armed, changed);
	expect(ferry_read_range(ctx, rw.path, 128, LEN * 4, dst), changed, "ferry_read_range");
	ferry_device_free(ctx, dst);
}

static void reader_case(ferry_ctx *ctx, int changed)
{
	const char *files[1] = { rw.path };
	struct ferry_reader_config cfg = { .files = files, .nfiles = 1, .epochs = 1, .threads = 1,
					   .num_shards = 1, .no_header_cache = 1 };
	ferry_reader *r;
	ferry_batch *b = NULL;
	write_file('<', 0);
	atomic_store(&rw.armed, changed);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	int rc = ferry_reader_next(r, &b);
	expect(rc, changed, "reader");
	ferry_batch_release(b);
	T_OK(ferry_reader_close(r));
}

int main(void)
{
	if (!t_io_syscalls_wrapped())
		T_SKIP("needs the pread wrapper");
	unsetenv("FERRY_IO");
	ferry_ctx *ctx = tr_ctx(4096, 1);
	char *dir = strdup(t_tmpdir());
	rw.path = strdup(tr_path(dir, "x.npy"));
	t_io_after_pread(after_pread, &rw);
	for (int changed = 0; changed < 2; changed++) {
		load_case(ctx, '<', 0, changed);
		load_case(ctx, '>', 0, changed);
		load_case(ctx, '<', 1, changed);
		range_case(ctx, changed);
		reader_case(ctx, changed);
	}
	t_io_after_pread(NULL, NULL);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	free(rw.path);
	printf("files rewritten in place mid-load: -FERRY_ECHANGED every time\n");
	return T_EXIT_PASS;
}
