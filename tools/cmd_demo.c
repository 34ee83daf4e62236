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
	"usage: ferry demo [--dir DIR] [--files N] [--size BYTES] [--json | --quiet]\n"
	"\n"
	"Writes N float32 .npy files of BYTES payload each (64 x 4M) with the payload\n"
	"formula of 'ferry gen' (seed 1), loads every file onto the device with\n"
	"ferry_load (the GPU when there is one, else the host device; the output says\n"
	"which), copies each back and checks every byte against the formula, then prints\n"
	"how long each stage took, the load throughput and files/s (the files were just\n"
	"written, so they come from the page cache) and 'demo: ok', or says what failed.\n"
	"On the host device a copy to the 'device' is a memcpy, so the rate says nothing\n"
	"about a GPU.\n"
	"\n"
	"  --dir DIR      write the dataset into DIR and keep it (default: a temporary\n"
	"                 directory, removed afterwards); as for 'ferry gen', DIR must be\n"
	"                 new, empty or hold only sample_NNNNNN.npy files\n"
	"  --files N      how many files (64)\n"
	"  --size BYTES   payload bytes per file, a multiple of 4: 4096, 256k, 4M (4M)\n"
	"  --json         print one JSON object instead: {\"device\": \"cuda\"|\"host\", \"io\":\n"
	"                 NAME, \"dir\": DIR, \"kept\": true|false, \"files\": N, \"verified\": N,\n"
	"                 \"failed\": N, \"bytes\": N (payload bytes verified), \"seconds\":\n"
	"                 {\"write\": S, \"load\": S, \"verify\": S}, \"bytes_per_second\": R\n"
	"                 (of the loads), \"files_per_second\": R, \"ok\": true|false}\n"
	"  --quiet        print nothing on success (errors still go to stderr)\n"
	"\n"
	"On a terminal a progress line (files, bytes, rate, ETA) shows on stderr while\n"
	"writing and loading; never in a pipe, with --json or with --quiet.\n"
	"Exit status: 0 when every file loaded and verified, 1 otherwise, 2 for usage.\n";

struct demo {
	const char *dir;
	char tmp[4096];
	int keep, json, quiet;
	unsigned files;
	uint64_t size;
	unsigned failed;
	uint64_t bytes, write_ns, load_ns, verify_ns;
	const char *device, *io;  /* the context's, once opened */
};

static void sample_path(const struct demo *d, unsigned i, char *path, size_t len)
{
	snprintf(path, len, "%s/sample_%06u.npy", d->dir, i);
}

/* Returns 1 when lines other than errors are wanted on the terminal. */
static int chatty(const struct demo *d)
{
	return !d->json && !d->quiet;
}

/* Writes the dataset. Returns 0 or 1. */
static int demo_generate(struct demo *d)
{
	struct ferry_cli_gen_spec spec = { .dtype = FERRY_FLOAT32, .byteorder = '<', .ndim = 1 };
	void *scratch = malloc(FERRY_CLI_GEN_BUFFER);
	struct ferry_cli_progress p;
	uint64_t start = ferry__now_ns();
	char path[4200];
	int status = 0;

	if (!scratch)
		return ferry_cli_fail("%s: out of memory", d->dir);
	spec.shape[0] = (int64_t)(d->size / 4);
	ferry_cli_progress_start(&p, "demo: writing", "files", d->files, d->files * d->size,
				 chatty(d));
	for (unsigned i = 0; i < d->files && !status; i++) {
		sample_path(d, i, path, sizeof(path));
		status = ferry_cli_gen_file(path, &spec, ferry_cli_gen_key(DEMO_SEED, i), scratch,
					    FERRY_CLI_GEN_BUFFER);
		ferry_cli_progress(&p, i + 1, (i + 1) * d->size);
	}
	ferry_cli_progress_end(&p);
	ferry_cli_gen_remove_stale(d->dir, d->files);
	free(scratch);
	d->write_ns = ferry__now_ns() - start;
	return status;
}

/* Checks a loaded array's shape and every byte against the formula. Returns 0 or 1. */
static int demo_verify(ferry_ctx *ctx, const struct demo *d, unsigned i, const char *path,
		       const ferry_array *a, void *host)
{
	const struct ferry_array_info *info = ferry_array_info(a);
	size_t bad;
	int rc;

	if (info->dtype != FERRY_FLOAT32 || info->nbytes != d->size)
		return ferry_cli_fail("%s: loaded as %s of %" PRIu64 " bytes, wrote float32 of %" PRIu64,
				      path, ferry_dtype_name(info->dtype), info->nbytes, d->size);
	ferry__clear_error();
	rc = d->size ? ferry_copy_to_host(ctx, host, ferry_array_data(a), (size_t)d->size) : 0;
	if (rc < 0)
		return ferry_cli_error(path, rc);
	bad = ferry_cli_gen_check(host, (size_t)d->size, ferry_cli_gen_key(DEMO_SEED, i), 0);
	if (bad == d->size)
		return 0;
	return ferry_cli_fail("%s: verify failed: byte %zu is 0x%02x, the formula says otherwise",
			      path, bad, ((unsigned char *)host)[bad]);
}

static int demo_load_one(ferry_ctx *ctx, struct demo *d, unsigned i, void *host)
{
	char path[4200];
	ferry_array *a = NULL;
	uint64_t start = ferry__now_ns(), loaded;
	int rc, status;

	sample_path(d, i, path, sizeof(path));
	ferry__clear_error();
	rc = ferry_load(ctx, path, &a);
	loaded = ferry__now_ns();
	d->load_ns += loaded - start;
	if (rc < 0)
		return ferry_cli_error(path, rc);
	status = demo_verify(ctx, d, i, path, a, host);
	d->verify_ns += ferry__now_ns() - loaded;
	if (!status)
		d->bytes += d->size;
	ferry_array_free(a);
	return status;
}

/* Says which device the demo loads onto. */
static void say_device(const struct demo *d)
{
	if (!chatty(d))
		return;
	if (!strcmp(d->device, "cuda"))
		printf("demo: loading onto the GPU (cuda device), IO backend %s\n", d->io);
	else
		printf("demo: no GPU in use: loading onto the host device (a copy there is a "
		       "memcpy, so the rate below says nothing about a GPU), IO backend %s\n", d->io);
}

/* Loads and verifies every file. Returns 0 or 1. */
static int demo_load(struct demo *d)
{
	ferry_ctx *ctx = NULL;
	void *host = malloc(d->size ? (size_t)d->size : 1);
	struct ferry_cli_progress p;
	int rc;

	ferry__clear_error();
	rc = host ? ferry_ctx_create(&ctx, NULL) : -ENOMEM;
	if (rc < 0) {
		free(host);
		d->failed = d->files;
		return ferry_cli_error("cannot open a context", rc);
	}
	d->device = ferry_ctx_device_kind(ctx);
	d->io = ferry_ctx_io_name(ctx);
	say_device(d);
	ferry_cli_progress_start(&p, "demo: loading", "files", d->files, d->files * d->size,
				 chatty(d));
	for (unsigned i = 0; i < d->files; i++) {
		d->failed += (unsigned)demo_load_one(ctx, d, i, host);
		ferry_cli_progress(&p, i + 1, d->bytes);
	}
	ferry_cli_progress_end(&p);
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
		ferry_cli_fail("%s: cannot remove: %s", d->dir, strerror(errno));
}

static void demo_report(const struct demo *d, int status)
{
	double load = (double)d->load_ns / 1e9;
	char size[32], w[32], l[32], v[32], rate[32];

	printf("demo: wrote %u files of %s in %s; loaded them in %s: %s, %.0f files/s; copied "
	       "back and checked every byte in %s\n",
	       d->files, ferry_cli_bytes(d->size, size, sizeof(size)),
	       ferry_cli_seconds((double)d->write_ns / 1e9, w, sizeof(w)),
	       ferry_cli_seconds(load, l, sizeof(l)), ferry_cli_rate(d->bytes, load, rate, sizeof(rate)),
	       load > 0 ? (double)(d->files - d->failed) / load : 0.0,
	       ferry_cli_seconds((double)d->verify_ns / 1e9, v, sizeof(v)));
	if (status)
		printf("demo: FAILED (%u of %u files did not load or verify; see above)\n", d->failed,
		       d->files);
	else
		printf("demo: ok\n");
}

static void demo_report_json(const struct demo *d, int status)
{
	double load = (double)d->load_ns / 1e9;

	printf("{\"device\": \"%s\", \"io\": \"%s\", \"dir\": ", d->device ? d->device : "",
	       d->io ? d->io : "");
	ferry_cli_json_string(stdout, d->dir);
	printf(", \"kept\": %s, \"files\": %u, \"verified\": %u, \"failed\": %u, \"bytes\": %" PRIu64
	       ", \"seconds\": {\"write\": %.6f, \"load\": %.6f, \"verify\": %.6f}, "
	       "\"bytes_per_second\": %.0f, \"files_per_second\": %.1f, \"ok\": %s}\n",
	       d->keep ? "true" : "false", d->files, d->files - d->failed, d->failed, d->bytes,
	       (double)d->write_ns / 1e9, load, (double)d->verify_ns / 1e9,
	       load > 0 ? (double)d->bytes / load : 0.0,
	       load > 0 ? (double)(d->files - d->failed) / load : 0.0, status ? "false" : "true");
}

/* Applies option c. Returns -1 to go on, else an exit status. */
static int apply_demo_option(int c, const char *arg, char **argv, struct demo *d)
{
	uint64_t files;

	switch (c) {
	case 'd': d->dir = arg; d->keep = 1; return -1;
	case 'n':
		if (ferry_cli_parse_uint("--files", arg, 1, 1000000, &files))
			return 2;
		d->files = (unsigned)files;
		return -1;
	case 's':
		if (ferry_cli_parse_size(arg, &d->size) || d->size % 4 || d->size > (1ull << 40)) {
			fprintf(stderr, "ferry: --size %s: expected a multiple of 4 bytes, at most "
				"1T\n", arg);
			return 2;
		}
		return -1;
	case 'j': d->json = 1; return -1;
	case 'q': d->quiet = 1; return -1;
	case 'h': fputs(demo_help, stdout); return 0;
	default: return ferry_cli_bad_option("demo", c, argv);
	}
}

/* Fills d from the options. Returns -1 to go on, else an exit status. */
static int parse_demo_options(int argc, char **argv, struct demo *d)
{
	static const struct option options[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "files", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, status;

	while ((c = getopt_long(argc, argv, ":d:n:s:jqh", options, NULL)) != -1)
		if ((status = apply_demo_option(c, optarg, argv, d)) >= 0)
			return status;
	if (optind < argc)
		return ferry_cli_bad_argument("demo", argv[optind]);
	return -1;
}

/* Makes d->dir: the one given, or a fresh temporary directory. Returns 0 or 1. */
static int demo_make_dir(struct demo *d)
{
	const char *tmp = getenv("TMPDIR");

	if (d->keep)
		return ferry_cli_gen_prepare_dir(d->dir, 0, NULL);
	snprintf(d->tmp, sizeof(d->tmp), "%s/ferry-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(d->tmp))
		return ferry_cli_fail("%s: cannot create a temporary directory: %s", d->tmp,
				      strerror(errno));
	d->dir = d->tmp;
	return 0;
}

int ferry_cli_demo(int argc, char **argv)
{
	struct demo d = { .files = 64, .size = 4u << 20 };
	int status = parse_demo_options(argc, argv, &d);
	char size[32];

	if (status >= 0)
		return status;
	if (demo_make_dir(&d))
		return 1;
	if (chatty(&d))
		printf("demo: writing %u float32 files of %s into %s\n", d.files,
		       ferry_cli_bytes(d.size, size, sizeof(size)), d.dir);
	fflush(stdout);
	status = demo_generate(&d);
	if (!status)
		status = demo_load(&d);
	else if (!d.json)
		printf("demo: FAILED (could not write the dataset)\n");
	if (d.json)
		demo_report_json(&d, status);
	else if (d.device && (status || !d.quiet))
		demo_report(&d, status);
	if (!d.keep)
		demo_cleanup(&d);
	return status;
}
