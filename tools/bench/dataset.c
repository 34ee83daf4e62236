/* `ferry bench`: the dataset (listed, or generated with the `ferry gen` formula)
 * and the page cache (dropped, or warmed). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cli.h"
#include "base/base.h"

#define BENCH_SEED 1
#define MAX_GEN_THREADS 8

static const struct {
	const char *name;
	unsigned files;
	uint64_t size;
} presets[] = {
	{ "large", 64, 64ull << 20 },
	{ "medium", 1024, 4ull << 20 },
	{ "small", 16384, 128ull << 10 },
};

int ferry_bench_workload_preset(const char *name, unsigned *files, uint64_t *size)
{
	for (size_t i = 0; name && i < FERRY__ARRAY_LEN(presets); i++)
		if (!strcmp(name, presets[i].name)) {
			*files = presets[i].files;
			*size = presets[i].size;
			return 0;
		}
	return -1;
}

/* ---- generating ---- */

struct gen_work {
	const char *dir;
	unsigned files;
	uint64_t size;
	atomic_uint next, failed;
};

static void sample_path(const char *dir, unsigned i, char *path, size_t len)
{
	snprintf(path, len, "%s/sample_%06u.npy", dir, i);
}

static void *gen_thread(void *arg)
{
	struct gen_work *w = arg;
	struct ferry_cli_gen_spec spec = { .dtype = FERRY_FLOAT32, .byteorder = '<', .ndim = 1 };
	void *scratch = malloc(FERRY_CLI_GEN_BUFFER);
	char path[4200];

	spec.shape[0] = (int64_t)(w->size / 4);
	for (unsigned i; scratch && (i = atomic_fetch_add(&w->next, 1)) < w->files;) {
		sample_path(w->dir, i, path, sizeof(path));
		if (ferry_cli_gen_file(path, &spec, ferry_cli_gen_key(BENCH_SEED, i), scratch,
				       FERRY_CLI_GEN_BUFFER))
			atomic_fetch_add(&w->failed, 1);
	}
	if (!scratch)
		atomic_fetch_add(&w->failed, 1);
	free(scratch);
	return NULL;
}

/* mkdir -p. Returns 0 or -1 after a message. */
static int make_dirs(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s", dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) && errno != EEXIST)
			break;
		*p = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST) {
		fprintf(stderr, "ferry: %s: cannot create: %s\n", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* Writes files float32 .npy files of size payload bytes (seed 1). Returns 0 or 1. */
static int generate(const char *dir, unsigned files, uint64_t size)
{
	struct gen_work w = { .dir = dir, .files = files, .size = size };
	pthread_t th[MAX_GEN_THREADS];
	unsigned n = ferry_bench_cores(), started = 0;

	if (make_dirs(dir))
		return 1;
	fprintf(stderr, "bench: generating %u x %" PRIu64 " bytes in %s (ferry gen's formula, seed %d)\n",
		files, size, dir, BENCH_SEED);
	atomic_init(&w.next, 0);
	atomic_init(&w.failed, 0);
	if (n > MAX_GEN_THREADS)
		n = MAX_GEN_THREADS;
	while (started < n && !pthread_create(&th[started], NULL, gen_thread, &w))
		started++;
	if (!started)
		gen_thread(&w);
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	return atomic_load(&w.failed) ? 1 : 0;
}

/* ---- listing ---- */

static int add_path(struct ferry_bench_dataset *ds, const char *path)
{
	char **grown = realloc(ds->paths, (ds->count + 1) * sizeof(*grown));
	if (!grown)
		return -1;
	ds->paths = grown;
	if (!(ds->paths[ds->count] = strdup(path)))
		return -1;
	ds->count++;
	return 0;
}

static int compare_paths(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with_npy(const char *name)
{
	size_t n = strlen(name);
	return n > 4 && !strcmp(name + n - 4, ".npy");
}

/* Every *.npy directly in dir, sorted. Returns 0 or 1 after a message. */
static int list_dir(struct ferry_bench_dataset *ds)
{
	DIR *d = opendir(ds->dir);
	struct dirent *e;
	char path[8300];
	int rc = 0;

	if (!d) {
		fprintf(stderr, "ferry: %s: %s\n", ds->dir, strerror(errno));
		return 1;
	}
	while (!rc && (e = readdir(d)))
		if (ends_with_npy(e->d_name)) {
			snprintf(path, sizeof(path), "%s/%s", ds->dir, e->d_name);
			rc = add_path(ds, path);
		}
	closedir(d);
	if (rc)
		return fprintf(stderr, "ferry: %s: out of memory\n", ds->dir), 1;
	qsort(ds->paths, ds->count, sizeof(*ds->paths), compare_paths);
	return 0;
}

/* sample_000000.npy .. of the workload. Returns 0 or 1 after a message. */
static int list_samples(struct ferry_bench_dataset *ds, unsigned files)
{
	char path[4200];
	for (unsigned i = 0; i < files; i++) {
		sample_path(ds->dir, i, path, sizeof(path));
		if (add_path(ds, path))
			return fprintf(stderr, "ferry: %s: out of memory\n", ds->dir), 1;
	}
	return 0;
}

/* 1 when the last sample of the workload exists with the expected payload. */
static int workload_present(const char *dir, unsigned files, uint64_t size)
{
	char path[4200];
	struct ferry_array_info info;

	for (unsigned i = 0; i < 2 && files; i++) {
		sample_path(dir, i ? files - 1 : 0, path, sizeof(path));
		if (ferry_info(path, &info) < 0 || info.nbytes != size)
			return 0;
	}
	return 1;
}

/* Reads every header: payload sizes and offsets. Returns 0 or 1 after a message. */
static int read_headers(struct ferry_bench_dataset *ds)
{
	struct ferry_array_info info;
	struct stat st;

	ds->nbytes = calloc(ds->count ? ds->count : 1, sizeof(*ds->nbytes));
	ds->data_offset = calloc(ds->count ? ds->count : 1, sizeof(*ds->data_offset));
	ds->file_size = calloc(ds->count ? ds->count : 1, sizeof(*ds->file_size));
	if (!ds->nbytes || !ds->data_offset || !ds->file_size)
		return fprintf(stderr, "ferry: out of memory\n"), 1;
	for (unsigned i = 0; i < ds->count; i++) {
		int rc = ferry_info(ds->paths[i], &info);
		if (rc < 0)
			return ferry_cli_error(ds->paths[i], rc);
		if (stat(ds->paths[i], &st))
			return fprintf(stderr, "ferry: %s: %s\n", ds->paths[i], strerror(errno)), 1;
		ds->nbytes[i] = info.nbytes;
		ds->data_offset[i] = info.data_offset;
		ds->file_size[i] = (uint64_t)st.st_size;
		ds->total_bytes += info.nbytes;
		if ((uint64_t)st.st_size > ds->max_file_size)
			ds->max_file_size = (uint64_t)st.st_size;
	}
	return 0;
}

static void default_dir(const char *workload, char *out, size_t len)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(out, len, "%s/ferry-bench/%s", tmp && *tmp ? tmp : "/var/tmp", workload);
}

/* The workload's label: --workload, else the directory's last name. */
static void name_workload(const struct ferry_bench_options *opt, struct ferry_bench_dataset *ds)
{
	const char *slash = strrchr(ds->dir, '/');
	const char *name = opt->workload ? opt->workload : slash && slash[1] ? slash + 1 : ds->dir;
	snprintf(ds->workload, sizeof(ds->workload), "%.63s", name);
}

int ferry_bench_dataset_open(const struct ferry_bench_options *opt, struct ferry_bench_dataset *ds)
{
	unsigned files = 0;
	uint64_t size = 0;
	int rc;

	memset(ds, 0, sizeof(*ds));
	ferry_bench_workload_preset(opt->workload, &files, &size);
	if (opt->files)
		files = opt->files;
	if (opt->size)
		size = opt->size;
	if (!opt->dir && !(files && size)) {
		fprintf(stderr, "ferry: bench: give --dir DIR, a --workload of large, medium or "
				"small, or --files N --size BYTES\n");
		return 1;
	}
	if (opt->dir)
		snprintf(ds->dir, sizeof(ds->dir), "%s", opt->dir);
	else
		default_dir(opt->workload ? opt->workload : "custom", ds->dir, sizeof(ds->dir));
	name_workload(opt, ds);
	if (files && size) {
		if (!workload_present(ds->dir, files, size) && generate(ds->dir, files, size))
			return 1;
		rc = list_samples(ds, files);
	} else {
		rc = list_dir(ds);
	}
	if (rc == 0 && ds->count == 0) {
		fprintf(stderr, "ferry: %s: no .npy files\n", ds->dir);
		rc = 1;
	}
	return rc ? rc : read_headers(ds);
}

void ferry_bench_dataset_close(struct ferry_bench_dataset *ds)
{
	for (unsigned i = 0; i < ds->count; i++)
		free(ds->paths[i]);
	free(ds->paths);
	free(ds->nbytes);
	free(ds->data_offset);
	free(ds->file_size);
	memset(ds, 0, sizeof(*ds));
}

/* ---- the page cache ---- */

int ferry_bench_drop_caches(void)
{
	int fd, ok;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ok = write(fd, "3\n", 2) == 2;
	close(fd);
	return ok;
}

void ferry_bench_warm_files(const struct ferry_bench_dataset *ds)
{
	size_t len = 4u << 20;
	char *buf = malloc(len);

	for (unsigned i = 0; buf && i < ds->count; i++) {
		int fd = open(ds->paths[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		while (read(fd, buf, len) > 0)
			;
		close(fd);
	}
	free(buf);
}
