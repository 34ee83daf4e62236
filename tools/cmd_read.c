/* `ferry read`: load .npy files onto the device, verify or dump what arrived. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "base/base.h"
#include "npy/npy.h"

static const char read_help[] =
	"usage: ferry read [--verify] [--dump OUTDIR] [--threads N] [--direct]\n"
	"                  [--io posix|uring|cufile] FILE...\n"
	"       ferry read --root DIR | --list FILE | --files ...   (dataset reader)\n"
	"\n"
	"Loads each .npy FILE into new device memory with ferry_load (C order, native\n"
	"byte order) and prints one summary line: files, bytes, load seconds, GB/s.\n"
	"\n"
	"  --verify        compare what arrived on the device with an independent CPU\n"
	"                  read of the file (stdio, the tool's own byteswap and Fortran-\n"
	"                  to-C loops); a difference prints the first mismatching byte\n"
	"  --dump OUTDIR   copy each array back and write it to OUTDIR/NAME.bin, NAME\n"
	"                  being the file's name without .npy (OUTDIR is created when\n"
	"                  missing): the bytes numpy's\n"
	"                  np.load(f).astype(native dtype).tobytes(order='C') gives\n"
	"  --threads N     IO threads (FERRY_THREADS; default: cores, at most 16)\n"
	"  --direct        read with O_DIRECT (FERRY_ODIRECT)\n"
	"  --io NAME       IO backend: posix, uring or cufile (FERRY_IO; default auto)\n"
	"\n"
	"Seconds count the loads only, not --verify or --dump. Each failure prints\n"
	"'ferry: FILE: reason' on stderr and the remaining files are still read.\n"
	"Exit status: 0 when every file loaded (and verified), 1 otherwise, 2 for usage.\n"
	"\n"
	"With --root, --list or --files the dataset reader runs instead (see\n"
	"'ferry read --root . --help').\n";

/* Until tools/cmd_read_dataset.c is built, dataset options end here. */
__attribute__((weak)) int ferry_cli_read_dataset(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ferry: dataset reading is not built\n");
	return 2;
}

/* ---- loading ---- */

struct read_opts {
	int verify;
	const char *dump_dir;
	struct ferry_ctx_options ctx;
};

struct read_totals {
	unsigned files, failed;
	uint64_t bytes, load_ns;
};

/* Writes len bytes of data to OUTDIR/<basename of path without .npy>.bin. */
static int dump_array(const char *dir, const char *path, const void *data, uint64_t len)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = strlen(base);
	char out[4096];
	FILE *f;

	if (n >= 4 && !strcmp(base + n - 4, ".npy"))
		n -= 4;
	snprintf(out, sizeof(out), "%s/%.*s.bin", dir, (int)n, base);
	f = fopen(out, "wb");
	if (f) {
		int short_write = len && fwrite(data, 1, (size_t)len, f) != len;
		if (fclose(f) == 0 && !short_write)
			return 0;
	}
	fprintf(stderr, "ferry: %s: cannot write %s: %s\n", path, out, strerror(errno));
	return 1;
}

static int verify_array(const char *path, const void *got, uint64_t len)
{
	void *want;
	uint64_t want_len;
	int status;

	if (ferry_cli_cpu_load(path, &want, &want_len))
		return 1;
	if (want_len != len) {
		fprintf(stderr, "ferry: %s: verify failed: device holds %" PRIu64
			" bytes, the file %" PRIu64 "\n", path, len, want_len);
		status = 1;
	} else {
		status = ferry_cli_compare(path, got, want, len);
	}
	free(want);
	return status;
}

/* Copies a loaded array back to the host, then dumps and/or verifies it. */
static int check_array(ferry_ctx *ctx, const struct read_opts *o, const char *path,
		       const ferry_array *a)
{
	uint64_t len = ferry_array_info(a)->nbytes;
	void *host = malloc(len ? (size_t)len : 1);
	int status = 0, rc;

	if (!host) {
		fprintf(stderr, "ferry: %s: out of memory for %" PRIu64 " bytes\n", path, len);
		return 1;
	}
	ferry__clear_error();
	rc = len ? ferry_copy_to_host(ctx, host, ferry_array_data(a), (size_t)len) : 0;
	if (rc < 0)
		status = ferry_cli_error(path, rc);
	if (!status && o->dump_dir)
		status = dump_array(o->dump_dir, path, host, len);
	if (!status && o->verify)
		status = verify_array(path, host, len);
	free(host);
	return status;
}

static int read_one(ferry_ctx *ctx, const struct read_opts *o, const char *path,
		    struct read_totals *t)
{
	ferry_array *a = NULL;
	uint64_t start = ferry__now_ns();
	int rc, status = 0;

	ferry__clear_error();
	rc = ferry_load(ctx, path, &a);
	t->load_ns += ferry__now_ns() - start;
	if (rc < 0)
		return ferry_cli_error(path, rc);
	if (o->verify || o->dump_dir)
		status = check_array(ctx, o, path, a);
	if (!status)
		t->bytes += ferry_array_info(a)->nbytes;
	ferry_array_free(a);
	return status;
}

static void print_summary(const struct read_totals *t)
{
	double seconds = (double)t->load_ns / 1e9;

	printf("read: %u files, %" PRIu64 " bytes, %.3f s, %.2f GB/s", t->files, t->bytes, seconds,
	       seconds > 0 ? (double)t->bytes / seconds / 1e9 : 0.0);
	if (t->failed)
		printf(", %u failed", t->failed);
	putchar('\n');
}

/* ---- options ---- */

/* Returns 1 when an argument asks for the dataset reader. */
static int wants_dataset(int argc, char **argv)
{
	static const char *const names[] = { "--root", "--list", "--files" };
	for (int i = 1; i < argc; i++)
		for (size_t k = 0; k < FERRY__ARRAY_LEN(names); k++) {
			size_t n = strlen(names[k]);
			if (!strncmp(argv[i], names[k], n) && (!argv[i][n] || argv[i][n] == '='))
				return 1;
		}
	return 0;
}

/* Fills o from the options. Returns -1 to go on, else an exit status. */
static int parse_read_options(int argc, char **argv, struct read_opts *o)
{
	static const struct option options[] = {
		{ "verify", no_argument, NULL, 'v' },
		{ "dump", required_argument, NULL, 'D' },
		{ "threads", required_argument, NULL, 't' },
		{ "direct", no_argument, NULL, 'd' },
		{ "io", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t threads;
	int c;

	while ((c = getopt_long(argc, argv, "vD:t:di:h", options, NULL)) != -1) {
		switch (c) {
		case 'v': o->verify = 1; break;
		case 'D': o->dump_dir = optarg; break;
		case 't':
			if (ferry_cli_parse_uint("--threads", optarg, 1, FERRY_THREADS_MAX, &threads))
				return 2;
			o->ctx.threads = (unsigned)threads;
			break;
		case 'd': o->ctx.direct = 1; break;
		case 'i': o->ctx.io = optarg; break;
		case 'h': fputs(read_help, stdout); return 0;
		default: fputs(read_help, stderr); return 2;
		}
	}
	if (optind == argc) {
		fputs(read_help, stderr);
		return 2;
	}
	if (o->dump_dir && mkdir(o->dump_dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "ferry: %s: cannot create the directory: %s\n", o->dump_dir,
			strerror(errno));
		return 1;
	}
	return -1;
}

int ferry_cli_read(int argc, char **argv)
{
	struct read_opts o = { .ctx = { .gpu = -1, .direct = -1 } };
	struct read_totals t = { 0 };
	ferry_ctx *ctx = NULL;
	int status, rc;

	if (wants_dataset(argc, argv))
		return ferry_cli_read_dataset(argc, argv);
	status = parse_read_options(argc, argv, &o);
	if (status >= 0)
		return status;
	ferry__clear_error();
	rc = ferry_ctx_create(&ctx, &o.ctx);
	if (rc < 0)
		return ferry_cli_error("cannot open a context", rc);
	for (int i = optind; i < argc; i++) {
		if (read_one(ctx, &o, argv[i], &t))
			t.failed++;
		else
			t.files++;
	}
	print_summary(&t);
	ferry__clear_error();
	rc = ferry_ctx_destroy(ctx);
	if (rc < 0)
		ferry_cli_error("closing the context", rc);
	return t.failed || rc < 0 ? 1 : 0;
}
