/*
 * FERRY_ODIRECT=auto: which path each file takes, through ferry_load (the
 * trace's buffered/direct row for the file, and whether the file is cached
 * afterwards) and through a reader (files_buffered, files_direct). With
 * FERRY_CACHE_BUDGET=0 a cold large file goes direct and stays out of the
 * page cache, a warm one and a small cold one are buffered; with a budget
 * that fits one file the first cold file is buffered and cached, the next
 * direct; FERRY_ODIRECT=0 and 1 do as they always did. Every byte of every
 * load is compared with a CPU read of the file.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "io/io.h"
#include "test_reader_util.h"

#define BIG_ELEMS (1u << 20)    /* float32: 4 MiB payloads, two chunks */
#define SMALL_ELEMS (16u << 10) /* 64 KiB: under the 1 MiB threshold */
#define NBIG 2
#define NSMALL 2

static char *dir, *trace_path;
static const char *big[NBIG], *small[NSMALL];

static void write_files(void)
{
	int64_t nbig = BIG_ELEMS, nsmall = SMALL_ELEMS;
	char name[32];
	for (unsigned i = 0; i < NBIG; i++) {
		snprintf(name, sizeof(name), "f%03u.npy", i);
		big[i] = strdup(tr_path(dir, name));
		tr_write_npy(big[i], FERRY_FLOAT32, 0, 0, 1, &nbig, i);
	}
	for (unsigned i = 0; i < NSMALL; i++) {
		snprintf(name, sizeof(name), "f%03u.npy", NBIG + i);
		small[i] = strdup(tr_path(dir, name));
		tr_write_npy(small[i], FERRY_FLOAT32, 0, 0, 1, &nsmall, NBIG + i);
	}
}

/* The whole file read by the CPU, with O_DIRECT so that checking a load
 * leaves the page cache as the load left it (free()). */
static unsigned char *cpu_read(const char *path, size_t *len)
{
	struct stat st;
	T_ASSERT(stat(path, &st) == 0);
	size_t cap = ((size_t)st.st_size + 4095) / 4096 * 4096, got = 0;
	unsigned char *buf = aligned_alloc(4096, cap);
	int fd = open(path, O_RDONLY | O_DIRECT);
	T_ASSERT(buf && fd >= 0);
	for (ssize_t n = 1; n > 0 && got < (size_t)st.st_size; got += (size_t)n)
		T_ASSERT((n = pread(fd, buf + got, cap - got, (off_t)got)) >= 0);
	T_EQ(got, st.st_size);
	close(fd);
	*len = got;
	return buf;
}

static void make_warm(const char *path)
{
	char buf[1 << 16];
	FILE *f = fopen(path, "rb");
	T_ASSERT(f);
	while (fread(buf, 1, sizeof(buf), f) > 0)
		;
	fclose(f);
}

static uint64_t resident(const char *path)
{
	struct ferry__file *f;
	uint64_t bytes;
	T_OK(ferry__io_file_open(path, 0, &f));
	T_OK(ferry__io_resident(f, 0, f->size, &bytes));
	ferry__io_file_close(f);
	return bytes;
}

static int is_cold(const char *path)
{
	struct stat st;
	T_ASSERT(stat(path, &st) == 0);
	return resident(path) <= (uint64_t)st.st_size / 8; /* a header read's readahead at most */
}

/* A context of FERRY_ODIRECT=mode (NULL: unset, auto) and FERRY_CACHE_BUDGET=budget, traced. */
static ferry_ctx *ctx_with(const char *mode, const char *budget)
{
	if (mode)
		setenv("FERRY_ODIRECT", mode, 1);
	else
		unsetenv("FERRY_ODIRECT");
	setenv("FERRY_CACHE_BUDGET", budget, 1);
	setenv("FERRY_TRACE", trace_path, 1);
	ferry_ctx *ctx = tr_ctx(0, 2);
	unsetenv("FERRY_TRACE");
	return ctx;
}

/* ferry_load of path, every byte compared with the file's payload as the CPU reads it. */
static void load_checked(ferry_ctx *ctx, const char *path)
{
	ferry_array *a;
	size_t len;
	T_OK(ferry_load(ctx, path, &a));
	const struct ferry_array_info *info = ferry_array_info(a);
	unsigned char *file = cpu_read(path, &len);
	T_EQ(info->data_offset + info->nbytes, len);
	tr_check_bytes(ctx, ferry_array_data(a), file + info->data_offset, info->nbytes, path);
	free(file);
	ferry_array_free(a);
}

/* The path the trace says path's one load took: "buffered" or "direct". */
static const char *traced_path(const char *path)
{
	char line[8192], event[32], quoted[1100];
	const char *took = NULL;
	FILE *f = fopen(trace_path, "r");
	T_ASSERT(f);
	snprintf(quoted, sizeof(quoted), ",\"%s\",", path);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*[^,],%*[^,],%*[^,],%31[^,],", event) != 1 || !strstr(line, quoted))
			continue;
		if (strcmp(event, "buffered") && strcmp(event, "direct"))
			continue;
		if (took)
			T_FAIL("%s: loaded once, traced twice", path);
		took = !strcmp(event, "direct") ? "direct" : "buffered";
	}
	fclose(f);
	if (!took)
		T_FAIL("%s: no buffered or direct row in the trace", path);
	return took;
}

/* Loads each of paths (after making them cold or warm) in one context; then
 * checks the path each took. */
static void expect_loads(const char *mode, const char *budget, unsigned n, const char **paths,
			 const int *warm, const char **want)
{
	for (unsigned i = 0; i < n; i++)
		warm[i] ? make_warm(paths[i]) : tr_drop_cache(paths[i]);
	ferry_ctx *ctx = ctx_with(mode, budget);
	for (unsigned i = 0; i < n; i++)
		load_checked(ctx, paths[i]);
	T_OK(ferry_ctx_destroy(ctx));
	for (unsigned i = 0; i < n; i++)
		if (strcmp(traced_path(paths[i]), want[i]))
			T_FAIL("FERRY_ODIRECT=%s, budget %s: %s (%s) was read %s, want %s",
			       mode ? mode : "(auto)", budget, paths[i], warm[i] ? "warm" : "cold",
			       traced_path(paths[i]), want[i]);
}

static void test_load_budget_zero(void)
{
	const char *paths[] = { big[0], big[1], small[0] };
	const int warm[] = { 0, 1, 0 };
	const char *want[] = { "direct", "buffered", "buffered" };
	expect_loads(NULL, "0", 3, paths, warm, want);
	T_ASSERT(is_cold(big[0]));   /* O_DIRECT left it out of the cache */
	T_ASSERT(!is_cold(small[0])); /* buffered, never probed: a probe would have sent it direct */
	printf("ok: budget 0: cold large file direct and left cold, warm and small ones buffered\n");
}

static void test_load_budget_one_file(void)
{
	const char *paths[] = { big[0], big[1] };
	const int warm[] = { 0, 0 };
	const char *want[] = { "buffered", "direct" };
	expect_loads(NULL, "6M", 2, paths, warm, want);
	T_ASSERT(!is_cold(big[0]) && is_cold(big[1]));
	printf("ok: a budget of one file: the first cold file cached, the next direct\n");
}

static void test_load_forced(void)
{
	const char *paths[] = { big[0], small[0] };
	const int warm[] = { 0, 0 };
	const char *never[] = { "buffered", "buffered" }, *always[] = { "direct", "direct" };
	expect_loads("0", "0", 2, paths, warm, never);
	T_ASSERT(!is_cold(big[0]));
	expect_loads("1", "0", 2, paths, warm, always);
	printf("ok: FERRY_ODIRECT=0 and 1 as before, whatever the budget\n");
}

/* One epoch of every file, each sample checked; returns the reader's stats. */
static struct ferry_reader_stats read_all(const char *mode, const char *budget)
{
	const char *files[NBIG + NSMALL] = { big[0], big[1], small[0], small[1] };
	struct ferry_reader_config cfg = { .files = files, .nfiles = NBIG + NSMALL,
					   .batch_size = 2, .epochs = 1, .num_shards = 1 };
	struct ferry_reader_stats st;
	ferry_ctx *ctx = ctx_with(mode, budget);
	ferry_reader *r;
	ferry_batch *b;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	while (ferry_reader_next(r, &b) == 0) {
		for (unsigned i = 0; i < ferry_batch_size(b); i++) {
			struct ferry_sample s;
			size_t len;
			T_OK(ferry_batch_sample(b, i, &s));
			unsigned char *file = cpu_read(s.path, &len);
			tr_check_sample(ctx, &s, file + len - s.nbytes, s.nbytes, "reader");
			free(file);
		}
		ferry_batch_release(b);
	}
	T_OK(ferry_reader_stats(r, &st, sizeof(st)));
	T_OK(ferry_reader_close(r));
	T_OK(ferry_ctx_destroy(ctx));
	return st;
}

static void expect_counts(const char *mode, const char *budget, unsigned buffered,
			  unsigned direct)
{
	struct ferry_reader_stats st = read_all(mode, budget);
	if (st.files_buffered != buffered || st.files_direct != direct)
		T_FAIL("reader, FERRY_ODIRECT=%s, budget %s: %llu buffered and %llu direct, want "
		       "%u and %u", mode ? mode : "(auto)", budget,
		       (unsigned long long)st.files_buffered, (unsigned long long)st.files_direct,
		       buffered, direct);
	T_EQ(st.samples, NBIG + NSMALL);
}

static void cold_all(void)
{
	for (unsigned i = 0; i < NBIG; i++)
		tr_drop_cache(big[i]);
	for (unsigned i = 0; i < NSMALL; i++)
		tr_drop_cache(small[i]);
}

static void test_reader(void)
{
	cold_all();
	expect_counts(NULL, "0", NSMALL, NBIG);
	T_ASSERT(is_cold(big[0]) && is_cold(big[1]));
	for (unsigned i = 0; i < NBIG; i++)
		make_warm(big[i]);
	expect_counts(NULL, "0", NBIG + NSMALL, 0);
	cold_all();
	expect_counts(NULL, "6M", NSMALL + 1, NBIG - 1);
	cold_all();
	expect_counts("0", "0", NBIG + NSMALL, 0);
	cold_all();
	expect_counts("1", "0", 0, NBIG + NSMALL);
	printf("ok: the reader's files_buffered and files_direct, cold and warm, each mode\n");
}

/* Whether a context can use the IO backend io here. */
static int backend_works(const char *io)
{
	struct ferry_ctx_options o = { .gpu = -1, .direct = -1, .io = io, .threads = 1 };
	ferry_ctx *ctx;
	if (ferry_ctx_create(&ctx, &o) < 0)
		return 0;
	ferry_ctx_destroy(ctx);
	return 1;
}

int main(void)
{
	static const char *const backends[] = { "posix", "uring" };
	dir = strdup(t_tmpdir());
	trace_path = strdup(tr_path(dir, "trace.csv"));
	write_files();
	cold_all();
	if (!is_cold(big[0]))
		T_SKIP("%s stayed in the page cache after fsync and POSIX_FADV_DONTNEED", big[0]);
	for (size_t i = 0; i < FERRY__ARRAY_LEN(backends); i++) {
		if (!backend_works(backends[i])) {
			printf("(the %s backend does not work here: %s)\n", backends[i],
			       ferry_last_error());
			continue;
		}
		setenv("FERRY_IO", backends[i], 1);
		printf("io %s:\n", backends[i]);
		test_load_budget_zero();
		test_load_budget_one_file();
		test_load_forced();
		test_reader();
	}
	t_rmtree(dir);
	return T_EXIT_PASS;
}
