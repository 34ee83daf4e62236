/*
 * Files that change under a load that FERRY_ODIRECT=auto sends direct (a cold
 * 4 MiB file, FERRY_CACHE_BUDGET=0): right after the load's first pread (its
 * header, read buffered before the choice), the file is rewritten in place
 * (-FERRY_ECHANGED), cut to half its size (-FERRY_ECHANGED or
 * -FERRY_ETRUNCATED, never bytes), or replaced by a rename over its path (the
 * open descriptor still reads the old file: every byte right). O_DIRECT is
 * turned on for the descriptor the header came from, never a reopen.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"
#include "test_reader_util.h"

#define ELEMS (1u << 20) /* float32: a 4 MiB payload */

enum change { NONE, REWRITE, TRUNCATE, RENAME };

static char *path, *other;
static atomic_int armed;
static enum change what;

static void write_file(const char *p, uint32_t id)
{
	int64_t n = ELEMS;
	tr_write_npy(p, FERRY_FLOAT32, 0, 0, 1, &n, id);
	tr_drop_cache(p);
}

/* Overwrites the payload's last 4 KiB, putting the modification time back. */
static void rewrite(void)
{
	char junk[4096];
	memset(junk, 0x5a, sizeof(junk));
	tr_overwrite_tail(path, junk, sizeof(junk));
}

static void after_pread(void *arg, int fd, off_t offset)
{
	if (!atomic_exchange(&armed, 0))
		return;
	if (what == REWRITE)
		rewrite();
	else if (what == TRUNCATE)
		T_EQ(truncate(path, ELEMS * 2), 0);
	else if (what == RENAME)
		T_EQ(rename(other, path), 0);
}

/* The unchanged load went direct: its payload is not in the page cache. */
static void expect_left_cold(void)
{
	struct ferry__file *f;
	uint64_t bytes;
	T_OK(ferry__io_file_open(path, 0, &f));
	T_OK(ferry__io_resident(f, 0, f->size, &bytes));
	if (bytes > f->size / 8)
		T_FAIL("%s: %llu bytes cached after a load that should have gone direct", path,
		       (unsigned long long)bytes);
	ferry__io_file_close(f);
}

static void load_case(ferry_ctx *ctx, enum change c)
{
	static const char *names[] = { "unchanged", "rewritten", "cut short", "renamed over" };
	ferry_array *a = NULL;
	write_file(path, 1);
	write_file(other, 2);
	what = c;
	atomic_store(&armed, 1);
	int rc = ferry_load(ctx, path, &a);
	if (c == REWRITE || c == TRUNCATE) {
		if (rc != -FERRY_ECHANGED && rc != -FERRY_ETRUNCATED)
			T_FAIL("%s: load gave %d (%s), want ECHANGED or ETRUNCATED", names[c], rc,
			       ferry_strerror(rc));
		T_ASSERT(strstr(ferry_last_error(), path));
		return;
	}
	T_OK(rc);
	void *want = tr_payload(1, (uint64_t)ELEMS * 4); /* the file as opened */
	tr_check_bytes(ctx, ferry_array_data(a), want, (uint64_t)ELEMS * 4, names[c]);
	free(want);
	ferry_array_free(a);
	if (c == NONE)
		expect_left_cold();
}

int main(void)
{
	if (!t_io_syscalls_wrapped())
		T_SKIP("needs the pread wrapper");
	unsetenv("FERRY_IO");
	unsetenv("FERRY_ODIRECT");
	setenv("FERRY_CACHE_BUDGET", "0", 1);
	char *dir = strdup(t_tmpdir());
	path = strdup(tr_path(dir, "x.npy"));
	other = strdup(tr_path(dir, "y.npy"));
	ferry_ctx *ctx = tr_ctx(0, 2);
	t_io_after_pread(after_pread, NULL);
	for (enum change c = NONE; c <= RENAME; c++)
		load_case(ctx, c);
	t_io_after_pread(NULL, NULL);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	free(path);
	free(other);
	printf("ok: a load auto sent direct: changed files refused, a renamed-over path read "
	       "through the descriptor it opened\n");
	return T_EXIT_PASS;
}
