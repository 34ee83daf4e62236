/*
 * The IO layer's page-cache probe (src/io/residency.c): a file written,
 * fsync'ed and dropped with POSIX_FADV_DONTNEED reads as not resident; after a
 * read of it (every byte checked against the pattern), resident; after a read
 * of its second half, that half only. cachestat and the mincore fallback give
 * the same answer each time. O_DIRECT turned on for the open descriptor keeps
 * O_NONBLOCK, reads the same bytes and leaves the cache cold; mincore over a
 * file cut short after the open does not fault. Skips, naming the file system,
 * where the page cache cannot be dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "base/base.h"
#include "helpers.h"
#include "io/io.h"

#define SIZE ((size_t)(8u << 20) + 100) /* not a whole number of pages */
#define FILE_ID 7

/* Writes back and drops path's cached pages (the descriptor of f, not a reopen). */
static void drop_cache(const struct ferry__file *f)
{
	T_EQ(fsync(f->fd), 0);
	T_EQ(posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED), 0);
}

/* Resident bytes of [offset, offset + len) by both methods, which must agree. */
static uint64_t resident(const struct ferry__file *f, uint64_t offset, uint64_t len)
{
	uint64_t by_probe, by_mincore;
	T_OK(ferry__io_resident(f, offset, len, &by_probe));
	T_OK(ferry__io_resident_mincore(f, offset, len, &by_mincore));
	if (by_probe != by_mincore)
		T_FAIL("[%llu, +%llu): %s says %llu bytes resident, mincore %llu",
		       (unsigned long long)offset, (unsigned long long)len,
		       ferry__io_residency_method(), (unsigned long long)by_probe,
		       (unsigned long long)by_mincore);
	return by_probe;
}

static void skip_unless_dropped(const struct ferry__file *f)
{
	struct statfs fs;
	uint64_t left = resident(f, 0, SIZE);
	if (left <= SIZE / 64)
		return;
	statfs(f->path, &fs);
	T_SKIP("this file system (statfs type 0x%lx) kept %llu of %zu bytes cached after fsync "
	       "and POSIX_FADV_DONTNEED", (unsigned long)fs.f_type, (unsigned long long)left, SIZE);
}

/* Reads [offset, offset + len) of f through the IO layer and checks every byte. */
static void read_checked(struct ferry__file *f, uint64_t offset, size_t len)
{
	char *buf = ferry__aligned_alloc(FERRY__IO_ALIGN, len + FERRY__IO_ALIGN);
	T_ASSERT(buf);
	T_OK(ferry__io_read_host(f, buf, len, offset, NULL));
	size_t bad = t_check_pattern(buf, len, FILE_ID, offset);
	if (bad != len)
		T_FAIL("%s: byte %zu of the read at %llu is wrong", f->path, bad,
		       (unsigned long long)offset);
	free(buf);
}

/*
 * Expects want bytes of [at, at + len) resident after the caller read
 * [reread_from, SIZE). Something outside the test may evict a page between
 * the read and the probe (a VM whose host reclaims its page cache did,
 * 2026-12-07), so a short count reads that range again and probes again, up
 * to READ_TRIES probes; a probe that miscounts misses every time.
 */
#define READ_TRIES 5
static void expect_resident(struct ferry__file *f, uint64_t reread_from, uint64_t at,
			    uint64_t len, uint64_t want)
{
	uint64_t got = resident(f, at, len);
	for (int i = 1; i < READ_TRIES && got != want; i++) {
		read_checked(f, reread_from, SIZE - reread_from);
		got = resident(f, at, len);
	}
	if (got != want)
		T_FAIL("[%llu, +%llu) probed %d times: %llu bytes resident, not %llu",
		       (unsigned long long)at, (unsigned long long)len, READ_TRIES,
		       (unsigned long long)got, (unsigned long long)want);
}

static void test_cold_then_warm(struct ferry__file *f)
{
	drop_cache(f);
	skip_unless_dropped(f);
	read_checked(f, 0, SIZE);
	expect_resident(f, 0, 0, SIZE, SIZE);
	expect_resident(f, 0, 4096, 100, 100); /* cut to the range, not whole pages */
	drop_cache(f);
	read_checked(f, SIZE / 2, SIZE - SIZE / 2);
	expect_resident(f, SIZE / 2, SIZE / 2, SIZE, SIZE - SIZE / 2);
	T_ASSERT(resident(f, 0, SIZE / 2 - 4096) <= SIZE / 64);
	T_EQ(resident(f, SIZE, 4096), 0); /* past the end */
	printf("ok: cold, warm and half warm, %s and mincore agreeing\n",
	       ferry__io_residency_method());
}

static void test_direct_in_place(struct ferry__file *f)
{
	int before = fcntl(f->fd, F_GETFL);
	drop_cache(f);
	T_OK(ferry__io_set_direct(f));
	int after = fcntl(f->fd, F_GETFL);
	T_ASSERT(f->direct && (after & O_DIRECT));
	T_EQ(after & O_NONBLOCK, before & O_NONBLOCK);
	read_checked(f, 0, SIZE);        /* aligned */
	read_checked(f, 4095, 1 << 20);  /* through the bounce buffer */
	T_ASSERT(resident(f, 0, SIZE) <= SIZE / 64);
	printf("ok: O_DIRECT turned on in place: same bytes, the cache left cold\n");
}

/* The mapping covers pages past the new end: touching them would raise SIGBUS. */
static void test_mincore_after_truncate(const char *path)
{
	struct ferry__file *f;
	uint64_t bytes;
	T_OK(ferry__io_file_open(path, 0, &f));
	T_EQ(truncate(path, 0), 0);
	T_OK(ferry__io_resident_mincore(f, 0, SIZE, &bytes));
	T_EQ(bytes, 0);
	T_OK(ferry__io_resident(f, 0, SIZE, &bytes));
	T_EQ(bytes, 0);
	ferry__io_file_close(f);
	printf("ok: a file cut short after the open probes as empty, no fault\n");
}

int main(void)
{
	char *dir = t_tmpdir(), path[300];
	struct ferry__file *f;
	snprintf(path, sizeof(path), "%s/data.bin", dir);
	t_write_pattern_file(path, SIZE, FILE_ID);
	T_OK(ferry__io_file_open(path, 0, &f));
	T_ASSERT(!strcmp(ferry__io_residency_method(), "cachestat") ||
		 !strcmp(ferry__io_residency_method(), "mincore"));
	test_cold_then_warm(f);
	test_direct_in_place(f);
	ferry__io_file_close(f);
	test_mincore_after_truncate(path);
	t_rmtree(dir);
	return T_EXIT_PASS;
}
