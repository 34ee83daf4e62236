/*
 * The zero-copy path's registration cache (load/mapped.c): a warm file of
 * 4 MiB or more read once through staging is registered by the registrar
 * (waited for with ferry__mapped_drain, never a sleep); the next load copies
 * it straight from the mapping, whole and in sub-ranges, every byte checked
 * against a CPU read. Under a small FERRY_PIN_BUDGET the least recently used
 * idle mapping is evicted; a budget of 0 never maps; 10,000 loads of a
 * rotating set keep the mappings (entries, and lines of /proc/self/maps)
 * within the budget.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context/context.h"
#include "test_reader_util.h"

#define ELEMS ((1u << 20) + 3) /* float32: a payload just over 4 MiB */
#define NFILES 6

static char *dir, *paths[NFILES];
static uint64_t file_size;

static void write_files(void)
{
	int64_t n = ELEMS;
	for (unsigned i = 0; i < NFILES; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%u.npy", i);
		paths[i] = strdup(tr_path(dir, name));
		tr_write_npy(paths[i], FERRY_FLOAT32, 0, 0, 1, &n, 10 + i);
	}
	struct stat st;
	T_ASSERT(stat(paths[0], &st) == 0);
	file_size = (uint64_t)st.st_size;
}

/* len bytes of path at offset, read by the CPU. */
static void *cpu_read(const char *path, uint64_t offset, uint64_t len)
{
	void *buf = malloc(len ? len : 1);
	int fd = open(path, O_RDONLY);
	T_ASSERT(buf && fd >= 0);
	T_EQ((uint64_t)pread(fd, buf, len, (off_t)offset), len);
	close(fd);
	return buf;
}

static ferry_ctx *ctx_with_budget(const char *budget)
{
	setenv("FERRY_PIN_BUDGET", budget, 1);
	ferry_ctx *ctx = tr_ctx(0, 2);
	unsetenv("FERRY_PIN_BUDGET");
	return ctx;
}

static struct ferry__mapped_stats stats(ferry_ctx *ctx)
{
	struct ferry__mapped_stats st;
	ferry__mapped_stats(ctx->ld.mapped, &st);
	return st;
}

/* Loads file i whole and checks its payload against the CPU's read. */
static void load_and_check(ferry_ctx *ctx, unsigned i, const char *label)
{
	ferry_array *a = NULL;
	T_OK(ferry_load(ctx, paths[i], &a));
	uint64_t len = (uint64_t)ELEMS * 4;
	void *want = cpu_read(paths[i], file_size - len, len);
	tr_check_bytes(ctx, ferry_array_data(a), want, len, label);
	free(want);
	ferry_array_free(a);
}

/* Reads [offset, offset + len) of file i with ferry_read_range and checks it. */
static void range_and_check(ferry_ctx *ctx, unsigned i, uint64_t offset, uint64_t len)
{
	void *dev = NULL;
	T_OK(ferry_device_alloc(ctx, len, &dev));
	T_OK(ferry_read_range(ctx, paths[i], offset, len, dev));
	void *want = cpu_read(paths[i], offset, len);
	tr_check_bytes(ctx, dev, want, len, "read_range");
	free(want);
	ferry_device_free(ctx, dev);
}

/* A load counts as mapped when the cache's hits moved by one. */
static void expect_hit(ferry_ctx *ctx, uint64_t hits_before, int hit, const char *what)
{
	uint64_t hits = stats(ctx).hits;
	if (hits != hits_before + (hit ? 1 : 0))
		T_FAIL("%s: cache hits went from %llu to %llu, want %s", what,
		       (unsigned long long)hits_before, (unsigned long long)hits,
		       hit ? "one more (the mapped path)" : "the same (the read path)");
}

/* The trace has a mapped row for path. */
static void expect_trace_row(const char *trace, const char *path)
{
	char line[4096];
	int found = 0;
	FILE *f = fopen(trace, "r");
	T_ASSERT(f);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, ",mapped,") && strstr(line, path);
	fclose(f);
	if (!found)
		T_FAIL("%s: no mapped row for %s", trace, path);
}

static void check_second_load_maps(void)
{
	char *trace = strdup(tr_path(dir, "trace.csv"));
	setenv("FERRY_TRACE", trace, 1);
	ferry_ctx *ctx = ctx_with_budget("64M");
	unsetenv("FERRY_TRACE");
	T_ASSERT(ctx->ld.mapped);
	load_and_check(ctx, 0, "first load (staging)");
	expect_hit(ctx, 0, 0, "first load");
	ferry__mapped_drain(ctx->ld.mapped);
	T_EQ(stats(ctx).entries, 1u);
	T_EQ(stats(ctx).pinned, file_size);
	load_and_check(ctx, 0, "second load (mapped)");
	expect_hit(ctx, 0, 1, "second load");
	static const uint64_t cuts[][2] = { { 0, 1 }, { 12345, (1u << 20) + 7 }, { 4096, 8192 },
					    { 1, 4 << 20 } };
	for (unsigned k = 0; k < 4; k++) {
		uint64_t before = stats(ctx).hits;
		range_and_check(ctx, 0, cuts[k][0], cuts[k][1]);
		expect_hit(ctx, before, 1, "read_range of a mapped file");
	}
	range_and_check(ctx, 0, file_size - 3, 3);
	T_OK(ferry_ctx_destroy(ctx));
	expect_trace_row(trace, paths[0]);
	free(trace);
}

/* Loads i, then waits for the registrar. */
static void load_and_drain(ferry_ctx *ctx, unsigned i)
{
	load_and_check(ctx, i, "load");
	ferry__mapped_drain(ctx->ld.mapped);
}

static void check_lru_eviction(void)
{
	char budget[32];
	snprintf(budget, sizeof(budget), "%llu", (unsigned long long)(file_size * 5 / 2));
	ferry_ctx *ctx = ctx_with_budget(budget);
	load_and_drain(ctx, 0);
	load_and_drain(ctx, 1);
	T_EQ(stats(ctx).entries, 2u);
	uint64_t h = stats(ctx).hits;
	load_and_drain(ctx, 0); /* 0 becomes the most recently used */
	expect_hit(ctx, h, 1, "file 0, cached");
	load_and_drain(ctx, 2); /* read, then registered in place of 1 */
	T_EQ(stats(ctx).entries, 2u);
	T_ASSERT(stats(ctx).pinned <= file_size * 5 / 2);
	h = stats(ctx).hits;
	load_and_check(ctx, 1, "file 1, evicted");
	expect_hit(ctx, h, 0, "file 1 after its eviction");
	h = stats(ctx).hits;
	load_and_check(ctx, 2, "file 2, cached");
	expect_hit(ctx, h, 1, "file 2");
	T_OK(ferry_ctx_destroy(ctx));
}

static void check_budget_zero(void)
{
	ferry_ctx *ctx = ctx_with_budget("0");
	T_ASSERT(ctx->ld.mapped == NULL);
	char text[8192];
	ferry_ctx_describe(ctx, text, sizeof(text));
	T_ASSERT(strstr(text, "mapped:  off: FERRY_PIN_BUDGET is 0"));
	for (int k = 0; k < 3; k++)
		load_and_check(ctx, 0, "budget 0");
	T_OK(ferry_ctx_destroy(ctx));
}

/* Lines of /proc/self/maps, and those that map a file of dir. */
static void count_maps(unsigned *lines, unsigned *ours)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	T_ASSERT(f);
	*lines = *ours = 0;
	while (fgets(line, sizeof(line), f)) {
		(*lines)++;
		*ours += strstr(line, dir) != NULL;
	}
	fclose(f);
}

static void check_bounded(ferry_ctx *ctx, unsigned base_lines, unsigned most, unsigned k)
{
	unsigned lines, ours;
	count_maps(&lines, &ours);
	struct ferry__mapped_stats st = stats(ctx);
	if (st.entries > most || ours > most || lines > base_lines + most + 32)
		T_FAIL("after %u loads: %u entries, %u mappings of test files, %u lines of maps "
		       "(%u at the start), want at most %u mappings", k, st.entries, ours, lines,
		       base_lines, most);
}

static void check_rotation_bounded(void)
{
	char budget[32];
	snprintf(budget, sizeof(budget), "%llu", (unsigned long long)(file_size * 3));
	ferry_ctx *ctx = ctx_with_budget(budget);
	unsigned base_lines, ours;
	count_maps(&base_lines, &ours);
	uint64_t seed = 23;
	void *dev = NULL;
	T_OK(ferry_device_alloc(ctx, 4096, &dev));
	for (unsigned k = 0; k < 10000; k++) {
		unsigned i = (unsigned)(t_rand(&seed) % NFILES);
		uint64_t offset = t_rand(&seed) % (file_size - 4096);
		T_OK(ferry_read_range(ctx, paths[i], offset, 4096, dev));
		if (k % 499 == 0) {
			void *want = cpu_read(paths[i], offset, 4096);
			tr_check_bytes(ctx, dev, want, 4096, "rotation");
			free(want);
			ferry__mapped_drain(ctx->ld.mapped);
			check_bounded(ctx, base_lines, 3, k);
		}
	}
	ferry__mapped_drain(ctx->ld.mapped);
	check_bounded(ctx, base_lines, 3, 10000);
	T_ASSERT(stats(ctx).hits > 0 && stats(ctx).registered > 3);
	ferry_device_free(ctx, dev);
	T_OK(ferry_ctx_destroy(ctx));
}

int main(void)
{
	unsetenv("FERRY_IO");
	setenv("FERRY_ODIRECT", "0", 1);
	dir = strdup(t_tmpdir());
	write_files();
	check_second_load_maps();
	check_lru_eviction();
	check_budget_zero();
	check_rotation_bounded();
	for (unsigned i = 0; i < NFILES; i++)
		free(paths[i]);
	t_rmtree(dir);
	free(dir);
	printf("ok: warm files mapped after one load, LRU under a small budget, none with 0, "
	       "bounded over 10000 loads\n");
	return T_EXIT_PASS;
}
