/* `ferry read`: load .npy files onto the device, verify or dump what arrived. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "base/base.h"
#include "npy/npy.h"

static const char read_help[] =
	"usage: ferry read [--verify] [--dump OUTDIR] [--json | --quiet] [--threads N]\n"
	"                  [--direct] [--io posix|uring|cufile] FILE|FILE.npz:KEY...\n"
	"       ferry read --root DIR | --list FILE | --files PATH... [OPTIONS]\n"
	"\n"
	"ferry read has two modes. With FILEs it loads each one into new device memory\n"
	"with ferry_load (C order, native byte order) and prints a summary: files,\n"
	"bytes, load time and rate. With --root, --list or --files it runs the dataset\n"
	"reader instead (batches, shards, shuffling, regions), described below.\n"
	"FILE.npz:KEY loads the member KEY of an .npz archive (numpy's key: the member's\n"
	"name without .npy) with ferry_load_member: stored members are read like a .npy,\n"
	"deflated ones inflated on the CPU; every member's CRC-32 is checked.\n"
	"\n"
	"Loading FILEs:\n"
	"  --verify        compare what arrived on the device with an independent CPU\n"
	"                  read of the file (stdio, the tool's own byteswap and Fortran-\n"
	"                  to-C loops), byte for byte; a difference prints the first\n"
	"                  mismatching byte, and a 'verify:' line says what matched.\n"
	"                  Archive members are not verified (the tool has no zip\n"
	"                  reader of its own); their CRC-32 is checked by the load\n"
	"  --dump OUTDIR   copy each array back and write it to OUTDIR/REL.bin: REL is the\n"
	"                  file's path relative to the directory all FILEs share, without\n"
	"                  .npy (ds/s01.npy and d3/s01.npy give OUTDIR/ds/s01.bin and\n"
	"                  OUTDIR/d3/s01.bin); directories are created as needed. An\n"
	"                  existing file is never overwritten: that FILE fails instead.\n"
	"                  The bytes are numpy's\n"
	"                  np.load(f).astype(native dtype).tobytes(order='C')\n"
	"  --json          print one JSON document instead of the summary (below)\n"
	"  --quiet         print nothing on success (errors still go to stderr; with\n"
	"                  --json, only the JSON)\n"
	"  --threads N     IO threads (FERRY_THREADS; default: cores, at most 16)\n"
	"  --direct        read with O_DIRECT (FERRY_ODIRECT)\n"
	"  --io NAME       IO backend: posix, uring or cufile (FERRY_IO; default auto)\n"
	"\n"
	"Time and rate count the loads only, not --verify or --dump. Each failure prints\n"
	"'ferry: FILE: reason' on stderr and the remaining files are still read. On a\n"
	"terminal a progress line (files, bytes, rate, ETA) shows on stderr while\n"
	"loading; never in a pipe, with --json or with --quiet.\n"
	"\n"
	"--json prints one object: {\"device\": \"cuda\"|\"host\", \"io\": NAME, \"files\": N\n"
	"(loaded), \"failed\": N, \"bytes\": N (payload bytes loaded), \"seconds\": S,\n"
	"\"bytes_per_second\": R, \"verified\": N (files whose every byte matched; null\n"
	"without --verify), \"dump_dir\": OUTDIR|null, \"results\": [{\"path\": P, \"ok\":\n"
	"true|false, \"nbytes\": N|null, \"dump\": PATH|null, \"error\": MESSAGE|null}, ...]}\n"
	"(one result per FILE, in order).\n"
	"Exit status: 0 when every file loaded (and verified), 1 otherwise, 2 for usage.\n"
	"\n";

/* ---- options and results ---- */

struct read_opts {
	int verify, json, quiet;
	const char *dump_dir;
	struct ferry_ctx_options ctx;
};

struct file_result {
	const char *path;
	int ok;
	uint64_t nbytes;
	char *dump;   /* where its bytes went (malloc'ed), or NULL */
	char *error;  /* why it failed (malloc'ed), or NULL */
};

struct read_run {
	struct read_opts o;
	ferry_ctx *ctx;
	unsigned n;
	struct file_result *res;
	char **abs;          /* each FILE's absolute, normalized path (for --dump) */
	size_t common;       /* length of the directory all abs share, its '/' included */
	unsigned files, failed, verified;
	uint64_t bytes, load_ns;
	int member;          /* the file being checked is an archive member */
	unsigned members;    /* FILE.npz:KEY arguments, not verified */
};

void ferry_cli_read_help(FILE *out)
{
	fputs(read_help, out);
	fputs(ferry_cli_dataset_help, out);
}

/* ---- --dump paths ---- */

/* Appends the components of path to out (len bytes, holding an absolute
 * path), resolving "." and ".." by their text. Returns 0 or -1 when too long. */
static int append_components(char *out, size_t len, const char *path)
{
	while (*path) {
		size_t n = strcspn(path, "/"), have = strlen(out);
		if (n == 2 && !strncmp(path, "..", 2)) {
			char *slash = strrchr(out, '/');
			*(slash == out ? slash + 1 : slash) = 0;
		} else if (n && !(n == 1 && *path == '.')) {
			if (have + n + 2 > len)
				return -1;
			snprintf(out + have, len - have, "%s%.*s", have > 1 ? "/" : "", (int)n, path);
		}
		path += n + (path[n] == '/');
	}
	return 0;
}

/* Returns path made absolute and normalized by its text (malloc'ed; symbolic
 * links are kept, so names stay the ones given), or NULL. */
static char *absolute_path(const char *path)
{
	char out[8192] = "/", cwd[4096];

	if (path[0] != '/' && (!getcwd(cwd, sizeof(cwd)) ||
			       append_components(out, sizeof(out), cwd) < 0))
		return NULL;
	if (append_components(out, sizeof(out), path) < 0)
		return NULL;
	return strdup(out);
}

/* Fills r->abs and r->common: the longest directory every FILE lies under.
 * Returns 0 or 1 after printing why. */
static int plan_dump(struct read_run *r, char **files)
{
	size_t k;

	r->abs = calloc(r->n, sizeof(*r->abs));
	if (!r->abs)
		return ferry_cli_fail("read: out of memory");
	for (unsigned i = 0; i < r->n; i++)
		if (!(r->abs[i] = absolute_path(files[i])))
			return ferry_cli_fail("%s: cannot make an absolute path of it", files[i]);
	k = (size_t)(strrchr(r->abs[0], '/') - r->abs[0]) + 1;
	for (unsigned i = 1; i < r->n; i++) {
		size_t j = 0;
		while (j < k && r->abs[i][j] == r->abs[0][j])
			j++;
		k = j;
	}
	while (k > 1 && r->abs[0][k - 1] != '/')
		k--;
	r->common = k;
	return 0;
}

/* Writes len bytes of data to OUTDIR/REL.bin, never over an existing file.
 * Returns 0, or 1 after printing why. */
static int dump_array(struct read_run *r, unsigned i, const void *data, uint64_t len)
{
	const char *rel = r->abs[i] + r->common;
	size_t n = strlen(rel), dir_len = strlen(r->o.dump_dir);
	char *out = malloc(dir_len + n + 8);

	if (!out)
		return ferry_cli_fail("%s: out of memory", r->res[i].path);
	if (n >= 4 && !strcmp(rel + n - 4, ".npy"))
		n -= 4;
	sprintf(out, "%s/%.*s.bin", r->o.dump_dir, (int)n, rel);
	(void)ferry_cli_make_parents(out, dir_len); /* a failure fails the write below */
	if (ferry_cli_write_dump(out, r->res[i].path, data, len)) {
		free(out);
		return 1;
	}
	r->res[i].dump = out;
	return 0;
}

/* ---- loading ---- */

static int verify_array(const char *path, const void *got, uint64_t len)
{
	void *want;
	uint64_t want_len;
	int status;

	if (ferry_cli_cpu_load(path, &want, &want_len))
		return 1;
	if (want_len != len)
		status = ferry_cli_fail("%s: verify failed: device holds %" PRIu64
					" bytes, the file %" PRIu64, path, len, want_len);
	else
		status = ferry_cli_compare(path, got, want, len);
	free(want);
	return status;
}

/* Copies file i's array back to the host, then dumps and/or verifies it. */
static int check_array(struct read_run *r, unsigned i, const ferry_array *a)
{
	const char *path = r->res[i].path;
	uint64_t len = ferry_array_info(a)->nbytes;
	void *host = malloc(len ? (size_t)len : 1);
	int status = 0, rc;

	if (!host)
		return ferry_cli_fail("%s: out of memory for %" PRIu64 " bytes", path, len);
	ferry__clear_error();
	rc = len ? ferry_copy_to_host(r->ctx, host, ferry_array_data(a), (size_t)len) : 0;
	if (rc < 0)
		status = ferry_cli_error(path, rc);
	if (!status && r->o.dump_dir)
		status = dump_array(r, i, host, len);
	if (!status && r->o.verify && !r->member && !(status = verify_array(path, host, len)))
		r->verified++;
	free(host);
	return status;
}

/* Loads file i and checks it; a failure is kept in its result. */
static void read_one(struct read_run *r, unsigned i)
{
	struct file_result *res = &r->res[i];
	ferry_array *a = NULL;
	uint64_t start = ferry__now_ns();
	int rc, status = 0;

	char *path;
	const char *key;
	ferry__clear_error();
	if (ferry_cli_member_arg(res->path, &path, &key) < 0) {
		path = NULL;
		key = NULL;
	}
	r->member = key != NULL;
	r->members += r->member;
	rc = path ? ferry_load_member(r->ctx, path, key, &a) : -ENOMEM;
	free(path);
	r->load_ns += ferry__now_ns() - start;
	if (rc < 0)
		status = ferry_cli_error(res->path, rc);
	else if (r->o.verify || r->o.dump_dir)
		status = check_array(r, i, a);
	if (!status) {
		res->ok = 1;
		res->nbytes = ferry_array_info(a)->nbytes;
		r->bytes += res->nbytes;
		r->files++;
	} else {
		res->error = strdup(ferry_cli_last_message());
		r->failed++;
	}
	ferry_array_free(a);
}

/* ---- output ---- */

static void print_summary(const struct read_run *r)
{
	double secs = (double)r->load_ns / 1e9;
	char size[32], time[32], rate[32];

	printf("read: %u files, %s in %s (%s, %s device)", r->files,
	       ferry_cli_bytes(r->bytes, size, sizeof(size)),
	       ferry_cli_seconds(secs, time, sizeof(time)),
	       ferry_cli_rate(r->bytes, secs, rate, sizeof(rate)), ferry_ctx_device_kind(r->ctx));
	if (r->failed)
		printf(", %u failed", r->failed);
	putchar('\n');
	if (r->o.verify)
		printf("verify: %u of %u files match an independent CPU read of the file byte "
		       "for byte (stdio and the tool's own conversion loops, not ferry's)%s\n",
		       r->verified, r->files + r->failed - r->members,
		       r->members ? "; archive members are not verified, their CRC-32 was checked" : "");
	if (r->o.dump_dir)
		printf("dump: %u files written under %s, each at its path relative to %.*s\n",
		       r->files, r->o.dump_dir, (int)(r->common > 1 ? r->common - 1 : 1),
		       r->abs[0]);
}

/* A JSON string, or null for NULL. */
static void json_string_or_null(const char *s)
{
	if (s)
		ferry_cli_json_string(stdout, s);
	else
		fputs("null", stdout);
}

static void print_json(const struct read_run *r)
{
	double secs = (double)r->load_ns / 1e9;

	printf("{\"device\": \"%s\", \"io\": \"%s\", \"files\": %u, \"failed\": %u, "
	       "\"bytes\": %" PRIu64 ", \"seconds\": %.6f, \"bytes_per_second\": %.0f, \"verified\": ",
	       ferry_ctx_device_kind(r->ctx), ferry_ctx_io_name(r->ctx), r->files, r->failed,
	       r->bytes, secs, secs > 0 ? (double)r->bytes / secs : 0.0);
	if (r->o.verify)
		printf("%u", r->verified);
	else
		fputs("null", stdout);
	fputs(", \"dump_dir\": ", stdout);
	json_string_or_null(r->o.dump_dir);
	fputs(", \"results\": [", stdout);
	for (unsigned i = 0; i < r->n; i++) {
		const struct file_result *res = &r->res[i];
		fputs(i ? ", {\"path\": " : "{\"path\": ", stdout);
		ferry_cli_json_string(stdout, res->path);
		printf(", \"ok\": %s, \"nbytes\": ", res->ok ? "true" : "false");
		if (res->ok)
			printf("%" PRIu64, res->nbytes);
		else
			fputs("null", stdout);
		fputs(", \"dump\": ", stdout);
		json_string_or_null(res->dump);
		fputs(", \"error\": ", stdout);
		json_string_or_null(res->error);
		putchar('}');
	}
	fputs("]}\n", stdout);
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

/* Applies option c. Returns -1 to go on, else an exit status. */
static int apply_read_option(int c, const char *arg, char **argv, struct read_opts *o)
{
	uint64_t threads;

	switch (c) {
	case 'v': o->verify = 1; return -1;
	case 'D': o->dump_dir = arg; return -1;
	case 'j': o->json = 1; return -1;
	case 'q': o->quiet = 1; return -1;
	case 't':
		if (ferry_cli_parse_uint("--threads", arg, 1, FERRY_THREADS_MAX, &threads))
			return 2;
		o->ctx.threads = (unsigned)threads;
		return -1;
	case 'd': o->ctx.direct = 1; return -1;
	case 'i': o->ctx.io = arg; return -1;
	case 'h': ferry_cli_read_help(stdout); return 0;
	default: return ferry_cli_bad_option("read", c, argv);
	}
}

/* Fills o from the options. Returns -1 to go on, else an exit status. */
static int parse_read_options(int argc, char **argv, struct read_opts *o)
{
	static const struct option options[] = {
		{ "verify", no_argument, NULL, 'v' },
		{ "dump", required_argument, NULL, 'D' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "threads", required_argument, NULL, 't' },
		{ "direct", no_argument, NULL, 'd' },
		{ "io", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, status;

	while ((c = getopt_long(argc, argv, ":vD:jqt:di:h", options, NULL)) != -1)
		if ((status = apply_read_option(c, optarg, argv, o)) >= 0)
			return status;
	if (optind == argc) {
		fprintf(stderr, "ferry read: no FILE given (try 'ferry read --help')\n");
		return 2;
	}
	if (o->dump_dir && ferry_cli_ensure_dir(o->dump_dir))
		return 1;
	return -1;
}

/* ---- the run ---- */

static void free_run(struct read_run *r)
{
	for (unsigned i = 0; r->res && i < r->n; i++) {
		free(r->res[i].dump);
		free(r->res[i].error);
	}
	for (unsigned i = 0; r->abs && i < r->n; i++)
		free(r->abs[i]);
	free(r->res);
	free(r->abs);
}

/* Loads every file with the progress line. Returns 0 or 1. */
static int load_all(struct read_run *r, char **files)
{
	struct ferry_cli_progress p;

	r->res = calloc(r->n, sizeof(*r->res));
	if (!r->res)
		return ferry_cli_fail("read: out of memory");
	if (r->o.dump_dir && plan_dump(r, files))
		return 1;
	ferry_cli_progress_start(&p, "read", "files", r->n, 0, !r->o.json && !r->o.quiet);
	for (unsigned i = 0; i < r->n; i++) {
		r->res[i].path = files[i];
		read_one(r, i);
		ferry_cli_progress(&p, i + 1, r->bytes);
	}
	ferry_cli_progress_end(&p);
	return 0;
}

int ferry_cli_read(int argc, char **argv)
{
	struct read_run r = { .o = { .ctx = { .gpu = -1, .direct = -1 } } };
	int status, rc;

	if (wants_dataset(argc, argv))
		return ferry_cli_read_dataset(argc, argv);
	status = parse_read_options(argc, argv, &r.o);
	if (status >= 0)
		return status;
	ferry__clear_error();
	rc = ferry_ctx_create(&r.ctx, &r.o.ctx);
	if (rc < 0)
		return ferry_cli_error("cannot open a context", rc);
	r.n = (unsigned)(argc - optind);
	status = load_all(&r, argv + optind);
	if (!status && r.o.json)
		print_json(&r);
	else if (!status && !r.o.quiet)
		print_summary(&r);
	ferry__clear_error();
	rc = ferry_ctx_destroy(r.ctx);
	if (rc < 0)
		status = ferry_cli_error("closing the context", rc);
	free_run(&r);
	return status || r.failed ? 1 : 0;
}
