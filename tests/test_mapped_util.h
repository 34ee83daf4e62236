/*
 * What the zero-copy tests share (header-only, like test_reader_util.h): a
 * set of warm .npy files just over FERRY__MAPPED_MIN, a context with a given
 * pin budget, whole loads checked byte by byte against a CPU read, and the
 * registration cache's counters.
 */
#ifndef FERRY_TEST_MAPPED_UTIL_H
#define FERRY_TEST_MAPPED_UTIL_H

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context/context.h"
#include "test_reader_util.h"

#define TM_ELEMS ((1u << 20) + 3) /* float32: a payload just over 4 MiB */
#define TM_NFILES 6

static char *tm_dir, *tm_paths[TM_NFILES];
static uint64_t tm_file_size;
static uint64_t tm_slot; /* what a file pins: its size rounded up to a page */

/* Writes file i of the set (again: a new inode when it was removed). */
static inline void tm_write_file(unsigned i)
{
	int64_t n = TM_ELEMS;
	tr_write_npy(tm_paths[i], FERRY_FLOAT32, 0, 0, 1, &n, 10 + i);
}

/* Makes the test directory and its TM_NFILES files. */
static inline void tm_setup(void)
{
	tm_dir = strdup(t_tmpdir());
	for (unsigned i = 0; i < TM_NFILES; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%u.npy", i);
		tm_paths[i] = strdup(tr_path(tm_dir, name));
		tm_write_file(i);
	}
	struct stat st;
	T_ASSERT(stat(tm_paths[0], &st) == 0);
	tm_file_size = (uint64_t)st.st_size;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	tm_slot = (tm_file_size + page - 1) / page * page;
}

static inline void tm_teardown(void)
{
	for (unsigned i = 0; i < TM_NFILES; i++)
		free(tm_paths[i]);
	t_rmtree(tm_dir);
	free(tm_dir);
}

/* len bytes of path at offset, read by the CPU. */
static inline void *tm_cpu_read(const char *path, uint64_t offset, uint64_t len)
{
	void *buf = malloc(len ? len : 1);
	int fd = open(path, O_RDONLY);
	T_ASSERT(buf && fd >= 0);
	T_EQ((uint64_t)pread(fd, buf, len, (off_t)offset), len);
	close(fd);
	return buf;
}

/* A context on the default device with FERRY_PIN_BUDGET=budget. */
static inline ferry_ctx *tm_ctx(const char *budget)
{
	setenv("FERRY_PIN_BUDGET", budget, 1);
	ferry_ctx *ctx = tr_ctx(0, 2);
	unsetenv("FERRY_PIN_BUDGET");
	return ctx;
}

/* A context on a fault device armed with cls (nth call; sticky or once). */
static inline ferry_ctx *tm_fault_ctx(enum t_fault_class cls, unsigned long nth, int sticky,
				      struct ferry__device **fdev)
{
	struct ferry_ctx_options o = { .gpu = -1, .threads = 2, .direct = -1 };
	*fdev = t_fault_device(t_open_device());
	t_fault_arm(*fdev, cls, nth, -FERRY_EDEVICE, sticky);
	setenv("FERRY_PIN_BUDGET", "256M", 1);
	ferry_ctx *ctx;
	T_OK(ferry__ctx_create_on(*fdev, NULL, &o, &ctx));
	unsetenv("FERRY_PIN_BUDGET");
	return ctx;
}

static inline struct ferry__mapped_stats tm_stats(ferry_ctx *ctx)
{
	struct ferry__mapped_stats st;
	ferry__mapped_stats(ctx->ld.mapped, &st);
	return st;
}

/* Loads file path whole and checks its payload against the CPU's read. */
static inline void tm_load_path(ferry_ctx *ctx, const char *path, const char *label)
{
	ferry_array *a = NULL;
	T_OK(ferry_load(ctx, path, &a));
	uint64_t len = (uint64_t)TM_ELEMS * 4;
	void *want = tm_cpu_read(path, tm_file_size - len, len);
	tr_check_bytes(ctx, ferry_array_data(a), want, len, label);
	free(want);
	ferry_array_free(a);
}

static inline void tm_load(ferry_ctx *ctx, unsigned i, const char *label)
{
	tm_load_path(ctx, tm_paths[i], label);
}

/* Loads i, then waits for the registrar. */
static inline void tm_load_and_drain_label(ferry_ctx *ctx, unsigned i, const char *label)
{
	tm_load(ctx, i, label);
	ferry__mapped_drain(ctx->ld.mapped);
}

static inline void tm_load_and_drain(ferry_ctx *ctx, unsigned i)
{
	tm_load_and_drain_label(ctx, i, "load");
}

/* A load counts as mapped when the cache's hits moved by one. */
static inline void tm_expect_hit(ferry_ctx *ctx, uint64_t hits_before, int hit, const char *what)
{
	uint64_t hits = tm_stats(ctx).hits;
	if (hits != hits_before + (hit ? 1 : 0))
		T_FAIL("%s: cache hits went from %llu to %llu, want %s", what,
		       (unsigned long long)hits_before, (unsigned long long)hits,
		       hit ? "one more (the mapped path)" : "the same (the read path)");
}

/* Lines of /proc/self/maps, and those that map a file of tm_dir. */
static inline void tm_count_maps(unsigned *lines, unsigned *ours)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	T_ASSERT(f);
	*lines = *ours = 0;
	while (fgets(line, sizeof(line), f)) {
		(*lines)++;
		*ours += strstr(line, tm_dir) != NULL;
	}
	fclose(f);
}

#endif
