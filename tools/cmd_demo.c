/* `ferry demo`: generate a small dataset, load it onto the device, check every byte. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "base/base.h"

#define DEMO_SEED 1

static const char demo_help[] =
	"usage: ferry demo [--dir DIR] [--files N] [--size BYTES]\n"
	"\n"
	"Writes N float32 .npy files of BYTES payload each (64 x 4M) with the payload\n"
	"formula of 'ferry gen' (seed 1), loads every file onto the device with\n"
	"ferry_load (the GPU when there is one, else the host device; the output says\n"
	"which), copies each back and checks every byte against the formula, then prints\n"
	"the load throughput in GB/s and files/s (the files were just written, so they\n"
	"come from the page cache) and 'demo: ok', or says what failed.\n"
	"\n"
	"  --dir DIR      write the dataset into DIR and keep it (default: a temporary\n"
	"                 directory, removed afterwards)\n"
	"  --files N      how many files (64)\n"
	"  --size BYTES   payload bytes per file, a multiple of 4: 4096, 256k, 4M (4M)\n"
	"\n"
	"Exit status: 0 when every file loaded and verified, 1 otherwise.\n";

struct demo {
	const char *dir;
	char tmp[4096];
	int keep;
	unsigned files;
	uint64_t size;
	unsigned failed;
	uint64_t bytes, load_ns;
};

static void sample_path(const struct demo *d, unsigned i, char *path, size_t len)
{
	snprintf(path, len, "%s/sample_%06u.npy", d->dir, i);
}

/* Writes the dataset. Returns 0 or 1. */
static int demo_generate(const struct demo *d)
{
	struct ferry_cli_gen_spec spec = { .dtype = FERRY_FLOAT32, .byteorder = '<', .ndim = 1 };
	void *scratch = malloc(FERRY_CLI_GEN_BUFFER);
	char path[4200];
	int status = 0;

	if (!scratch) {
		fprintf(stderr, "ferry: %s: out of memory\n", d->dir);
		return 1;
	}
	spec.shape[0] = (int64_t)(d->size / 4);
	for (unsigned i = 0; i < d->files && !status; i++) {
		sample_path(d, i, path, sizeof(path));
		status = ferry_cli_gen_file(path, &spec, ferry_cli_gen_key(DEMO_SEED, i), scratch,
					    FERRY_CLI_GEN_BUFFER);
	}
	free(scratch);
	return status;
}

/* Checks a loaded array's shape and every byte against the formula. Returns 0 or 1. */
static int demo_verify(ferry_ctx *ctx, const struct demo *d, unsigned i, const char *path,
		       const ferry_array *a, void *host)
{
	const struct ferry_array_info *info = ferry_array_info(a);
	size_t bad;
	int rc;

	if (info->dtype != FERRY_FLOAT32 || info->nbytes != d->size) {
		fprintf(stderr, "ferry: %s: loaded as %s of %" PRIu64 " bytes, wrote float32 of %" PRIu64
			"\n", path, ferry_dtype_name(info->dtype), info->nbytes, d->size);
		return 1;
	}
	ferry__clear_error();
	rc = d->size ? ferry_copy_to_host(ctx, host, ferry_array_data(a), (size_t)d->size) : 0;
	if (rc < 0)
		return ferry_cli_error(path, rc);
	bad = ferry_cli_gen_check(host, (size_t)d->size, ferry_cli_gen_key(DEMO_SEED, i), 0);
	if (bad == d->size)
		return 0;
	fprintf(stderr, "ferry: %s: verify failed: byte %zu is 0x%02x, the formula says otherwise\n",
		path, bad, ((unsigned char *)host)[bad]);
	return 1;
}

static int demo_load_one(ferry_ctx *ctx, struct demo *d, unsigned i, void *host)
{
	char path[4200];
	ferry_array *a = NULL;
	uint64_t start = ferry__now_ns();
	int rc, status;

	sample_path(d, i, path, sizeof(path));
	ferry__clear_error();
	rc = ferry_load(ctx, path, &a);
	d->load_ns += ferry__now_ns() - start;
	if (rc < 0)
		return ferry_cli_error(path, rc);
	status = demo_verify(ctx, d, i, path, a, host);
	if (!status)
		d->bytes += d->size;
	ferry_array_free(a);
	return status;
}

/* Loads and verifies every file. Returns 0 or 1. */
static int demo_load(struct demo *d)
{
	ferry_ctx *ctx = NULL;
	void *host = malloc(d->size ? (size_t)d->size : 1);
	int rc;

	ferry__clear_error();
	rc = host ? ferry_ctx_create(&ctx, NULL) : -ENOMEM;
	if (rc < 0) {
		free(host);
		d->failed = d->files;
		return ferry_cli_error("cannot open a context", rc);
	}
	if (!strcmp(ferry_ctx_device_kind(ctx), "cuda"))
		printf("demo: loading onto the GPU (cuda device), IO backend %s\n", ferry_ctx_io_name(ctx));
	else
		printf("demo: no GPU in use: loading onto the host device, IO backend %s\n",
		       ferry_ctx_io_name(ctx));
	for (unsigned i = 0; i < d->files; i++)
		d->failed += (unsigned)demo_load_one(ctx, d, i, host);
	free(host);
	ferry__clear_error();
	rc = ferry_ctx_destroy(ctx);
	if (rc < 0)
		return ferry_cli_error("closing the context", rc);
	return d->failed ? 1 : 0;
}

/* Removes the files demo_generate wrote and the temporary directory. */
static void demo_cleanup(const struct demo *d)
{
	char path[4200];

	for (unsigned i = 0; i < d->files; i++) {
		sample_path(d, i, path, sizeof(path));
		unlink(path);
	}
	if (rmdir(d->dir) != 0)
		fprintf(stderr, "ferry: %s: cannot remove: %s\n", d->dir, strerror(errno));
}

static void demo_report(const struct demo *d, int status)
{
	double seconds = (double)d->load_ns / 1e9;

	printf("demo: loaded and verified %u of %u files, %" PRIu64 " bytes, in %.3f s: %.2f GB/s, "
	       "%.0f files/s\n",
	       d->files - d->failed, d->files, d->bytes, seconds,
	       seconds > 0 ? (double)d->bytes / seconds / 1e9 : 0.0,
	       seconds > 0 ? (double)(d->files - d->failed) / seconds : 0.0);
	if (status)
		printf("demo: FAILED (%u of %u files did not load or verify; see above)\n", d->failed,
		       d->files);
	else
		printf("demo: ok\n");
}

/* Fills d from the options. Returns -1 to go on, else an exit status. */
static int parse_demo_options(int argc, char **argv, struct demo *d)
{
	static const struct option options[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "files", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t files;
	int c;

	while ((c = getopt_long(argc, argv, "d:n:s:h", options, NULL)) != -1) {
		switch (c) {
		case 'd': d->dir = optarg; d->keep = 1; break;
		case 'n':
			if (ferry_cli_parse_size(optarg, &files) || !files || files > 1000000)
				return fprintf(stderr, "ferry: --files %s: expected 1..1000000\n", optarg), 2;
			d->files = (unsigned)files;
			break;
		case 's':
			if (ferry_cli_parse_size(optarg, &d->size) || d->size % 4)
				return fprintf(stderr, "ferry: --size %s: expected a multiple of 4 bytes\n",
					       optarg), 2;
			break;
		case 'h': fputs(demo_help, stdout); return 0;
		default: fputs(demo_help, stderr); return 2;
		}
	}
	if (optind < argc) {
		fputs(demo_help, stderr);
		return 2;
	}
	return -1;
}

/* Makes d->dir: the one given, or a fresh temporary directory. Returns 0 or 1. */
static int demo_make_dir(struct demo *d)
{
	const char *tmp = getenv("TMPDIR");

	if (d->keep) {
		if (mkdir(d->dir, 0755) == 0 || errno == EEXIST)
			return 0;
		fprintf(stderr, "ferry: %s: cannot create the directory: %s\n", d->dir, strerror(errno));
		return 1;
	}
	snprintf(d->tmp, sizeof(d->tmp), "%s/ferry-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(d->tmp)) {
		fprintf(stderr, "ferry: %s: cannot create a temporary directory: %s\n", d->tmp,
			strerror(errno));
		return 1;
	}
	d->dir = d->tmp;
	return 0;
}

int ferry_cli_demo(int argc, char **argv)
{
	struct demo d = { .files = 64, .size = 4u << 20 };
	int status = parse_demo_options(argc, argv, &d);

	if (status >= 0)
		return status;
	if (demo_make_dir(&d))
		return 1;
	printf("demo: writing %u float32 files of %" PRIu64 " bytes into %s\n", d.files, d.size, d.dir);
	fflush(stdout);
	status = demo_generate(&d);
	if (!status) {
		status = demo_load(&d);
		demo_report(&d, status);
	} else {
		printf("demo: FAILED (could not write the dataset)\n");
	}
	if (!d.keep)
		demo_cleanup(&d);
	return status;
}
