/* `ferry gen`: a seeded synthetic .npy dataset whose every byte can be recomputed. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "base/base.h"
#include "npy/npy.h"

static const char gen_help[] =
	"usage: ferry gen --out DIR [--files N] [--size BYTES] [--dtype NAME] [--shape AxB...]\n"
	"                 [--seed S] [--fortran] [--big-endian] [--mix] [--force]\n"
	"                 [--json | --quiet]\n"
	"\n"
	"Writes N synthetic .npy files DIR/sample_000000.npy, sample_000001.npy, ... (DIR\n"
	"and its parents are created when missing). Each holds a 1-D array of BYTES /\n"
	"itemsize elements, or the --shape given, whose payload is a function of (seed,\n"
	"file index, offset).\n"
	"An existing DIR must hold nothing but sample_NNNNNN.npy files (an earlier\n"
	"dataset, which is replaced: its files numbered N or more are removed, so DIR\n"
	"holds exactly the new dataset); anything else there is refused unless --force.\n"
	"\n"
	"  --out DIR        where to write (required)\n"
	"  --files N        how many files, 1 to 100000000 (16)\n"
	"  --size BYTES     payload bytes per file: 4096, 64k, 4M, 1G (1M); a multiple of\n"
	"                   the itemsize\n"
	"  --dtype NAME     bool, int8..int64, uint8..uint64, float16, float32, float64,\n"
	"                   complex64, complex128 (float32)\n"
	"  --shape AxB...   the array's shape instead of --size, e.g. 64x3x224x224;\n"
	"                   --shape '' writes a rank-0 array\n"
	"  --seed S         seed of the payload formula (0)\n"
	"  --fortran        write fortran_order True\n"
	"  --big-endian     write descr '>' (one-byte dtypes are always '|')\n"
	"  --mix            vary the dtype, byte order, memory order, rank (0..4), format\n"
	"                   version (1.0, 2.0, 3.0) and size per file, with an empty array\n"
	"                   now and then; --size is then a target. For tests.\n"	"  --force          write into DIR even when it holds other files (they are kept)\n"
	"  --json           print one JSON object instead of the summary: {\"dir\": DIR,\n"
	"                   \"files\": N (written), \"failed\": N, \"removed_stale\": N,\n"
	"                   \"payload_bytes\": N, \"seed\": S, \"dtype\": NAME|\"mixed\",\n"
	"                   \"fortran_order\": true|false|null, \"byteorder\": \"<\"|\">\"|\"|\"|null\n"
	"                   (null: mixed), \"seconds\": S}\n"
	"  --quiet          print nothing on success (errors still go to stderr)\n"
	"\n"
	"On a terminal a progress line (files, bytes, rate, ETA) shows on stderr while\n"
	"writing; never in a pipe, with --json or with --quiet.\n"
	"\n"
	"Payload formula: the bytes of the payload exactly as stored in the file (whatever\n"
	"the dtype, byte order or memory order; u64 arithmetic modulo 2^64):\n"
	"  mix(x):  x += 0x9E3779B97F4A7C15; x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9;\n"
	"           x = (x ^ (x >> 27)) * 0x94D049BB133111EB; return x ^ (x >> 31)\n"
	"  key    = mix(seed ^ mix(file_index))\n"
	"  byte o = byte (o % 8) of the little-endian u64 mix(key + o / 8)\n"
	"So a little-endian C-order file loads as exactly those bytes. With --mix, file i's\n"
	"choices come from h = mix(seed ^ mix(i) ^ 0x6D6978): byte order '>' when h & 1,\n"
	"Fortran order when h & 2, rank (h >> 2) % 5, version 1 + (h >> 8) % 3, dtype\n"
	"number i % 14 in the order listed above.\n"
	"Exit status: 0 when every file was written, 1 otherwise, 2 for usage.\n";

/* ---- the dataset ---- */

struct gen_job {
	const char *dir;
	unsigned files;
	uint64_t seed, size;
	int mix, force, json, quiet;
	struct ferry_cli_gen_spec base;	/* every file's spec without --mix */
	unsigned failed, removed;
	uint64_t bytes;			/* payload bytes written */
	double seconds;
};

/* The spec of file index under --mix, from the documented h. */
static void mix_spec(const struct gen_job *job, unsigned index, struct ferry_cli_gen_spec *s)
{
	uint64_t h = ferry_cli_gen_mix(job->seed ^ ferry_cli_gen_mix(index) ^ 0x6D6978);
	size_t itemsize;
	uint64_t count, rest;

	s->dtype = (enum ferry_dtype)(FERRY_BOOL + index % 14);
	itemsize = ferry_dtype_size(s->dtype);
	s->byteorder = itemsize == 1 ? '|' : (h & 1) ? '>' : '<';
	s->fortran_order = (h >> 1) & 1;
	s->ndim = (int)((h >> 2) % 5);
	s->version = 1 + (int)((h >> 8) % 3);
	count = job->size / itemsize;
	/* Trim a few elements so sizes are rarely a multiple of 4096 or a chunk. */
	count -= count > 64 ? (h >> 48) % 61 : 0;
	rest = count ? count : 1;
	for (int d = 0; d + 1 < s->ndim; d++) {
		s->shape[d] = 2 + (int64_t)((h >> (16 + 2 * d)) % 3);
		rest = rest / (uint64_t)s->shape[d] ? rest / (uint64_t)s->shape[d] : 1;
	}
	if (s->ndim)
		s->shape[s->ndim - 1] = (int64_t)rest;
	if (s->ndim && (h >> 40) % 8 == 0)
		s->shape[0] = 0;
}

/* Writes every file, one after another: generating is cheap next to the kernel's
 * write path, and parallel writers only contend there. Returns 0 or 1. */
static int run_job(struct gen_job *job)
{
	unsigned char *scratch = malloc(FERRY_CLI_GEN_BUFFER);
	struct ferry_cli_progress p;
	char path[4200];
	uint64_t nbytes;

	if (!scratch)
		return ferry_cli_fail("%s: out of memory", job->dir);
	ferry_cli_progress_start(&p, "gen", "files", job->files,
				 job->mix ? 0 : (uint64_t)job->files * job->size,
				 !job->json && !job->quiet);
	for (unsigned i = 0; i < job->files; i++) {
		struct ferry_cli_gen_spec spec = job->base;
		if (job->mix)
			mix_spec(job, i, &spec);
		snprintf(path, sizeof(path), "%s/sample_%06u.npy", job->dir, i);
		if (ferry_cli_gen_file(path, &spec, ferry_cli_gen_key(job->seed, i), scratch,
				       FERRY_CLI_GEN_BUFFER))
			job->failed++;
		else if (ferry_cli_gen_nbytes(&spec, &nbytes) == 0)
			job->bytes += nbytes;
		ferry_cli_progress(&p, i + 1, job->bytes);
	}
	ferry_cli_progress_end(&p);
	free(scratch);
	return job->failed ? 1 : 0;
}

/* ---- options ---- */

/* Parses "64x3x224" (or "" for rank 0) into spec. Returns 0 or -1. */
static int parse_shape(const char *text, struct ferry_cli_gen_spec *spec)
{
	spec->ndim = 0;
	while (*text) {
		char *end;
		if (spec->ndim == FERRY_MAX_DIMS || *text < '0' || *text > '9')
			return -1;
		errno = 0;
		long long d = strtoll(text, &end, 10);
		if (errno || (*end && *end != 'x' && *end != ','))
			return -1;
		spec->shape[spec->ndim++] = d;
		text = *end ? end + 1 : end;
		if (*end && !*text)
			return -1;
	}
	return 0;
}

static void report(const struct gen_job *job)
{
	char size[32], time[32];

	printf("gen: wrote %u files to %s: ", job->files - job->failed, job->dir);
	if (job->mix)
		printf("mixed dtypes, orders and ranks");
	else
		printf("%s, %s order, '%c'", ferry_dtype_name(job->base.dtype),
		       job->base.fortran_order ? "Fortran" : "C", job->base.byteorder);
	printf("; %s of payload, seed %" PRIu64 ", in %s", ferry_cli_bytes(job->bytes, size, sizeof(size)),
	       job->seed, ferry_cli_seconds(job->seconds, time, sizeof(time)));
	if (job->failed)
		printf("; %u failed", job->failed);
	if (job->removed)
		printf("; removed %u files of the dataset that was there", job->removed);
	putchar('\n');
}

static void report_json(const struct gen_job *job)
{
	fputs("{\"dir\": ", stdout);
	ferry_cli_json_string(stdout, job->dir);
	printf(", \"files\": %u, \"failed\": %u, \"removed_stale\": %u, \"payload_bytes\": %" PRIu64
	       ", \"seed\": %" PRIu64 ", ", job->files - job->failed, job->failed, job->removed,
	       job->bytes, job->seed);
	if (job->mix)
		fputs("\"dtype\": \"mixed\", \"fortran_order\": null, \"byteorder\": null", stdout);
	else
		printf("\"dtype\": \"%s\", \"fortran_order\": %s, \"byteorder\": \"%c\"",
		       ferry_dtype_name(job->base.dtype), job->base.fortran_order ? "true" : "false",
		       job->base.byteorder);
	printf(", \"seconds\": %.6f}\n", job->seconds);
}

/* Checks what the options add up to and fills in the spec they imply.
 * Returns -1 to go on, else 2 after printing why. */
static int check_gen_job(struct gen_job *job, const char *shape, int big)
{
	size_t itemsize = ferry_dtype_size(job->base.dtype);
	uint64_t nbytes;

	job->base.byteorder = itemsize == 1 ? '|' : big ? '>' : '<';
	if (shape && !job->mix && ferry_cli_gen_nbytes(&job->base, &nbytes) < 0)
		return fprintf(stderr, "ferry: --shape %s: too large: %s items would pass the %" PRIu64
			       "-byte limit of a .npy payload\n",
			       shape, ferry_dtype_name(job->base.dtype), FERRY_CLI_GEN_MAX_PAYLOAD), 2;
	if (!shape && !job->mix) {
		if (job->size % itemsize)
			return fprintf(stderr, "ferry: --size %" PRIu64 ": not a multiple of %s's %zu bytes\n",
				       job->size, ferry_dtype_name(job->base.dtype), itemsize), 2;
		job->base.ndim = 1;
		job->base.shape[0] = (int64_t)(job->size / itemsize);
	}
	return -1;
}

/* Applies one option to job (shape and big are the --shape text and
 * --big-endian). Returns -1 to go on, -3 for an option getopt did not know, else
 * an exit status. */
static int apply_gen_option(int c, const char *arg, struct gen_job *job, const char **shape,
			    int *big)
{
	uint64_t files;

	switch (c) {
	case 'o': job->dir = arg; return -1;
	case 'n':
		if (ferry_cli_parse_uint("--files", arg, 1, 100000000, &files))
			return 2;
		job->files = (unsigned)files;
		return -1;
	case 's': return ferry_cli_parse_uint("--size", arg, 0, FERRY_CLI_GEN_MAX_PAYLOAD, &job->size) ? 2 : -1;
	case 'r': return ferry_cli_parse_uint("--seed", arg, 0, UINT64_MAX, &job->seed) ? 2 : -1;
	case 'd':
		job->base.dtype = ferry_cli_dtype_by_name(arg);
		if (!job->base.dtype)
			return fprintf(stderr, "ferry: --dtype %s: unknown dtype\n", arg), 2;
		return -1;
	case 'S':
		if (parse_shape(arg, &job->base))
			return fprintf(stderr, "ferry: --shape %s: expected AxBxC: at most %d dimensions,"
				       " each from 0 to %" PRId64 "\n", arg, FERRY_MAX_DIMS, INT64_MAX), 2;
		*shape = arg;
		return -1;
	case 'F': job->base.fortran_order = 1; return -1;
	case 'B': *big = 1; return -1;
	case 'm': job->mix = 1; return -1;
	case 'f': job->force = 1; return -1;
	case 'j': job->json = 1; return -1;
	case 'q': job->quiet = 1; return -1;
	case 'h': fputs(gen_help, stdout); return 0;
	default: return -3; /* a bad option: the caller says which */
	}
}

/* Fills job from the options. Returns -1 to go on, else an exit status. */
static int parse_gen_options(int argc, char **argv, struct gen_job *job)
{
	static const struct option options[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "files", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "dtype", required_argument, NULL, 'd' },
		{ "shape", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 'r' },
		{ "fortran", no_argument, NULL, 'F' },
		{ "big-endian", no_argument, NULL, 'B' },
		{ "mix", no_argument, NULL, 'm' },
		{ "force", no_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *shape = NULL;
	int c, big = 0, status;

	while ((c = getopt_long(argc, argv, ":o:n:s:d:S:r:FBmfjqh", options, NULL)) != -1)
		if ((status = apply_gen_option(c, optarg, job, &shape, &big)) != -1)
			return status == -3 ? ferry_cli_bad_option("gen", c, argv) : status;
	if (optind < argc)
		return ferry_cli_bad_argument("gen", argv[optind]);
	if (!job->dir) {
		fprintf(stderr, "ferry gen: --out DIR is required (try 'ferry gen --help')\n");
		return 2;
	}
	return check_gen_job(job, shape, big);
}

int ferry_cli_gen(int argc, char **argv)
{
	struct gen_job job = { .files = 16, .size = 1u << 20, .base = { .dtype = FERRY_FLOAT32 } };
	uint64_t start;
	int status;
	status = parse_gen_options(argc, argv, &job);
	if (status >= 0)
		return status;
	if (ferry_cli_gen_prepare_dir(job.dir, job.force, "--force"))
		return 1;
	start = ferry__now_ns();
	status = run_job(&job);
	job.removed = ferry_cli_gen_remove_stale(job.dir, job.files);
	job.seconds = (double)(ferry__now_ns() - start) / 1e9;
	if (job.json)
		report_json(&job);
	else if (!job.quiet)
		report(&job);
	return status;
}
