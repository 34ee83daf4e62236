/* `ferry read --root DIR | --list FILE | --files PATH...`: the dataset reader. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "base/base.h"
#include "reader/reader.h"

const char ferry_cli_dataset_help[] =
	"Reading a dataset:\n"
	"  ferry read --root DIR [--filter GLOB] | --list FILE | --files PATH...\n"
	"             [--batch N] [--shard I/N] [--shuffle | --shuffle-dataset]\n"
	"             [--seed S] [--epochs E]\n"
	"             [--pad-last-batch] [--stick-to-shard] [--rows] [--key KEY]\n"
	"             [--threads T] [--prefetch P]\n"
	"             [--roi-start A,B,.. --roi-end C,D,.. | --roi-shape ...] [--roi-axes ...]\n"
	"             [--oob error|pad|trim] [--fill V] [--on-error stop|skip]\n"
	"             [--no-header-cache] [--order] [--dump OUTDIR] [--verify]\n"
	"             [--json | --quiet]\n"
	"\n"
	"Reads a dataset of .npy files in batches, as DALI's fn.readers.numpy does, and\n"
	"prints a summary: epochs, batches, samples, bytes delivered and read from\n"
	"storage, files skipped, time and rate; with more than one epoch, a line for\n"
	"each: its bytes, time, rate, CPU seconds per GB and the files the IO threads\n"
	"finished in that time (buffered, direct, mapped; they read ahead into the\n"
	"next epoch). An epoch lasts until the next one's first batch arrives (the\n"
	"last until its own last batch); the first starts at the reader's open\n"
	"(listing and headers included).\n"
	"\n"
	"  --root DIR        dataset directory; files whose name matches --filter\n"
	"                    (fnmatch, default *.npy), in all subdirectories\n"
	"  --list FILE       text file of paths, one a line (relative to --root, else to\n"
	"                    the list's directory); blank lines and # lines are skipped\n"
	"  --files           the remaining arguments are the files\n"
	"  --batch N         samples a batch (1)\n"
	"  --shard I/N       read shard I of N (default RANK/WORLD_SIZE, else 0/1); the\n"
	"                    shard rotates each epoch unless --stick-to-shard\n"
	"  --shuffle         shuffle each epoch, deterministically from --seed S (0)\n"
	"  --shuffle-dataset each epoch one order of the whole dataset (from --seed),\n"
	"                    then sharded: a shard's files change from epoch to epoch\n"
	"  --epochs E        epochs to read (1; 0 runs until interrupted)\n"
	"  --pad-last-batch  fill the last batch by repeating the last sample\n"
	"  --rows            every row along axis 0 of every file is a sample (the files\n"
	"                    share a row's dtype and shape); the ROI is on a row's axes\n"
	"  --key KEY         every file is an .npz archive (--filter then defaults to\n"
	"                    *.npz) and its sample is the member KEY (numpy's key: the\n"
	"                    member's name without .npy), its CRC-32 checked; a stored\n"
	"                    member's place is cached as a header is, a deflated one\n"
	"                    inflated every epoch; not with --rows or --verify\n"
	"  --threads T       IO threads (default: cores, at most 16)\n"
	"  --prefetch P      batches loading ahead (default: as many as keep every IO\n"
	"                    thread busy, within 256 MiB of batch memory, at least 2)\n"
	"  --roi-start, --roi-end, --roi-shape LIST    region of interest (integers)\n"
	"  --roi-start-rel, --roi-end-rel, --roi-shape-rel LIST   fractions of the extent\n"
	"  --roi-axes LIST   the axes the ROI values refer to (default 0, 1, ...)\n"
	"  --oob POLICY      out of bounds: error (default), pad, trim (trim_to_shape)\n"
	"  --fill V          padding value (0)\n"
	"  --on-error MODE   stop (default): a bad file ends the run; skip: leave it out,\n"
	"                    and name it at the end ('ferry: skipped FILE: reason')\n"
	"  --no-header-cache parse every file's header on every read; by default a\n"
	"                    header is parsed once and reused while the file is the same\n"
	"                    (device, inode, size, mtime and ctime unchanged)\n"
	"  --order           print EPOCH<TAB>BATCH<TAB>PATH per sample (then <TAB>row=N with\n"
	"                    --rows, <TAB>pad for padding) on stdout; the summary then goes\n"
	"                    to stderr\n"
	"  --dump OUTDIR     write each sample's bytes to OUTDIR/e<EPOCH>_b<BATCH>_<I>.bin\n"
	"                    (made with its parents where missing; never over an existing\n"
	"                    file: that sample fails instead)\n"
	"  --verify          compare each sample with an independent CPU read of its file\n"
	"                    and region, byte for byte; a 'verify:' line says what matched\n"
	"  --json            print one JSON document instead of the summary (below)\n"
	"  --quiet           print nothing on success (errors still go to stderr)\n"
	"\n"
	"A region or row of a big-endian or Fortran-order file that fits a staging\n"
	"chunk is read as its bytes and converted by the CPU in staging (a Fortran-\n"
	"order one while its runs in the file are at most 1024, or at most one for\n"
	"every 4 KiB of the array); whole arrays over 64 KiB and larger regions are\n"
	"read whole and converted on the device. On a terminal a progress line\n"
	"(samples, bytes, rate, ETA) shows on stderr; never in a pipe, with --json or\n"
	"with --quiet.\n"
	"--json prints one object: {\"device\": \"cuda\"|\"host\", \"epochs\": N (epochs\n"
	"delivered from), \"batches\": N, \"samples\": N, \"bytes_delivered\": N,\n"
	"\"bytes_read\": N, \"seconds\": S, \"bytes_per_second\": R, \"verified\": N|null\n"
	"(samples that matched; null without --verify), \"files_buffered\": N,\n"
	"\"files_direct\": N and \"files_mapped\": N (files read through the page cache,\n"
	"with O_DIRECT, or copied straight from a registered mapping of the page cache,\n"
	"once per fetch; FERRY_ODIRECT=auto chooses per file, FERRY_PIN_BUDGET bounds\n"
	"the mappings), \"files_skipped\": N (skips\n"
	"counted by the reader, a file once per epoch), \"skipped\": [{\"path\": P,\n"
	"\"error\": MESSAGE}, ...]|null (null when the names cannot be told),\n"
	"\"per_epoch\": [{\"seconds\": S, \"bytes_delivered\": N, \"cpu_seconds\": C,\n"
	"\"files_buffered\": N, \"files_direct\": N, \"files_mapped\": N}, ...] (each\n"
	"epoch's line above, in order; CPU is the process's user + system time),\n"
	"\"error\": MESSAGE|null (what ended the run early)}.\n"
	"Errors print 'ferry: FILE: reason' on stderr; exit status 0 ok, 1 failure, 2 usage.\n";

enum {
	OPT_ROOT = 256, OPT_FILTER, OPT_LIST, OPT_FILES, OPT_BATCH, OPT_SHARD, OPT_SHUFFLE,
	OPT_SEED, OPT_EPOCHS, OPT_PAD, OPT_STICK, OPT_THREADS, OPT_PREFETCH, OPT_ROI_START,
	OPT_ROI_END, OPT_ROI_SHAPE, OPT_ROI_START_REL, OPT_ROI_END_REL, OPT_ROI_SHAPE_REL,
	OPT_ROI_AXES, OPT_OOB, OPT_FILL, OPT_ON_ERROR, OPT_NO_CACHE, OPT_ORDER, OPT_DUMP,
	OPT_VERIFY, OPT_JSON, OPT_QUIET, OPT_HELP, OPT_ROWS, OPT_SHUFFLE_DATASET, OPT_KEY,
};

static const struct option dataset_options[] = {
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "filter", required_argument, NULL, OPT_FILTER },
	{ "list", required_argument, NULL, OPT_LIST },
	{ "files", no_argument, NULL, OPT_FILES },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "shard", required_argument, NULL, OPT_SHARD },
	{ "shuffle", no_argument, NULL, OPT_SHUFFLE },
	{ "shuffle-dataset", no_argument, NULL, OPT_SHUFFLE_DATASET },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "epochs", required_argument, NULL, OPT_EPOCHS },
	{ "pad-last-batch", no_argument, NULL, OPT_PAD },
	{ "stick-to-shard", no_argument, NULL, OPT_STICK },
	{ "rows", no_argument, NULL, OPT_ROWS },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "prefetch", required_argument, NULL, OPT_PREFETCH },
	{ "roi-start", required_argument, NULL, OPT_ROI_START },
	{ "roi-end", required_argument, NULL, OPT_ROI_END },
	{ "roi-shape", required_argument, NULL, OPT_ROI_SHAPE },
	{ "roi-start-rel", required_argument, NULL, OPT_ROI_START_REL },
	{ "roi-end-rel", required_argument, NULL, OPT_ROI_END_REL },
	{ "roi-shape-rel", required_argument, NULL, OPT_ROI_SHAPE_REL },
	{ "roi-axes", required_argument, NULL, OPT_ROI_AXES },
	{ "oob", required_argument, NULL, OPT_OOB },
	{ "fill", required_argument, NULL, OPT_FILL },
	{ "on-error", required_argument, NULL, OPT_ON_ERROR },
	{ "no-header-cache", no_argument, NULL, OPT_NO_CACHE },
	{ "order", no_argument, NULL, OPT_ORDER },
	{ "dump", required_argument, NULL, OPT_DUMP },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* ROI lists as parsed; each has its own count, checked to agree. */
struct roi_lists {
	int64_t start[FERRY_MAX_DIMS], end[FERRY_MAX_DIMS], shape[FERRY_MAX_DIMS];
	double start_rel[FERRY_MAX_DIMS], end_rel[FERRY_MAX_DIMS], shape_rel[FERRY_MAX_DIMS];
	int axes[FERRY_MAX_DIMS];
	int counts[7];
};

struct dataset_opts {
	struct ferry_reader_config cfg;
	struct roi_lists roi;
	int files_mode, order, verify, json, quiet;
	const char *dump;
};

static int usage_error(const char *opt, const char *arg, const char *expected)
{
	ferry_cli_fail("%s %s: expected %s", opt, *arg ? arg : "''", expected);
	return 2;
}

/* Parses option's value arg as an unsigned from lo to hi into *out. Returns 0,
 * or 2 after printing what was expected. */
static int parse_unsigned(const char *option, const char *arg, unsigned lo, unsigned hi,
			  unsigned *out)
{
	uint64_t v;

	if (ferry_cli_parse_uint(option, arg, lo, hi, &v))
		return 2;
	*out = (unsigned)v;
	return 0;
}

/* "A,B,C" into up to FERRY_MAX_DIMS integers (as_double 0) or doubles. */
static int parse_list(const char *s, int as_double, int64_t *ints, double *dbls)
{
	int n = 0;

	for (;;) {
		char *end;
		errno = 0;
		if (n == FERRY_MAX_DIMS)
			return -1;
		if (as_double)
			dbls[n] = strtod(s, &end);
		else
			ints[n] = strtoll(s, &end, 10);
		if (errno || end == s)
			return -1;
		n++;
		if (*end == 0)
			return n;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

static int parse_axes(const char *s, int *axes)
{
	int64_t v[FERRY_MAX_DIMS];
	int n = parse_list(s, 0, v, NULL);

	for (int i = 0; i < n; i++) {
		if (v[i] < 0 || v[i] >= FERRY_MAX_DIMS)
			return -1;
		axes[i] = (int)v[i];
	}
	return n;
}

/* The most shards, as for WORLD_SIZE (src/reader/dataset.c). */
#define SHARDS_MAX (1u << 30)

/* Parses "I/N" (0 <= I < N <= SHARDS_MAX) into cfg. Returns 0 or -1. */
static int parse_shard(const char *s, struct ferry_reader_config *cfg)
{
	const char *slash = strchr(s, '/');
	char first[24];
	uint64_t i, n;

	if (!slash || (size_t)(slash - s) >= sizeof(first))
		return -1;
	snprintf(first, sizeof(first), "%.*s", (int)(slash - s), s);
	if (ferry_cli_parse_uint(NULL, slash + 1, 1, SHARDS_MAX, &n) ||
	    ferry_cli_parse_uint(NULL, first, 0, n - 1, &i))
		return -1;
	cfg->shard_id = (int)i;
	cfg->num_shards = (int)n;
	return 0;
}

/* Parses the list of a ROI option into roi. Returns 0, or 2 after printing
 * what was expected, naming the option. */
static int parse_roi_option(int opt, const char *arg, struct roi_lists *roi)
{
	static const char *const names[] = { "--roi-start", "--roi-end", "--roi-shape",
					     "--roi-start-rel", "--roi-end-rel", "--roi-shape-rel",
					     "--roi-axes" };
	int k = opt - OPT_ROI_START, n;

	switch (opt) {
	case OPT_ROI_START: n = parse_list(arg, 0, roi->start, NULL); break;
	case OPT_ROI_END: n = parse_list(arg, 0, roi->end, NULL); break;
	case OPT_ROI_SHAPE: n = parse_list(arg, 0, roi->shape, NULL); break;
	case OPT_ROI_START_REL: n = parse_list(arg, 1, NULL, roi->start_rel); break;
	case OPT_ROI_END_REL: n = parse_list(arg, 1, NULL, roi->end_rel); break;
	case OPT_ROI_SHAPE_REL: n = parse_list(arg, 1, NULL, roi->shape_rel); break;
	default: n = parse_axes(arg, roi->axes); break;
	}
	if (n < 0)
		return usage_error(names[k], arg,
				   k == 6   ? "a comma-separated list of axes, 0 to 31"
				   : k >= 3 ? "a comma-separated list of numbers"
					    : "a comma-separated list of integers");
	roi->counts[k] = n;
	return 0;
}

/* Points the config's ROI fields at the lists given; 0, or 2 when their
 * lengths disagree. */
static int apply_roi(struct dataset_opts *o)
{
	struct roi_lists *roi = &o->roi;
	struct ferry_reader_config *cfg = &o->cfg;
	int n = 0;

	for (int k = 0; k < 7; k++) {
		if (!roi->counts[k])
			continue;
		if (n && roi->counts[k] != n) {
			ferry_cli_fail("the ROI lists must have the same length");
			return 2;
		}
		n = roi->counts[k];
	}
	cfg->roi_nvals = n;
	cfg->roi_start = roi->counts[0] ? roi->start : NULL;
	cfg->roi_end = roi->counts[1] ? roi->end : NULL;
	cfg->roi_shape = roi->counts[2] ? roi->shape : NULL;
	cfg->roi_start_rel = roi->counts[3] ? roi->start_rel : NULL;
	cfg->roi_end_rel = roi->counts[4] ? roi->end_rel : NULL;
	cfg->roi_shape_rel = roi->counts[5] ? roi->shape_rel : NULL;
	cfg->roi_axes = roi->counts[6] ? roi->axes : NULL;
	return 0;
}

static int parse_policy(const char *arg, enum ferry_oob_policy *out)
{
	if (!strcmp(arg, "error"))
		*out = FERRY_OOB_ERROR;
	else if (!strcmp(arg, "pad"))
		*out = FERRY_OOB_PAD;
	else if (!strcmp(arg, "trim") || !strcmp(arg, "trim_to_shape"))
		*out = FERRY_OOB_TRIM;
	else
		return -1;
	return 0;
}

static int parse_on_error(const char *arg, enum ferry_on_error *out)
{
	if (!strcmp(arg, "stop"))
		*out = FERRY_ON_ERROR_STOP;
	else if (!strcmp(arg, "skip"))
		*out = FERRY_ON_ERROR_SKIP;
	else
		return -1;
	return 0;
}

/* Parses a number into *out; one past a double's range is refused, not made
 * infinite ("inf" itself is fine). Returns 0 or -1. */
static int parse_fill(const char *arg, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(arg, &end);
	if (end == arg || *end || (errno == ERANGE && (*out == HUGE_VAL || *out == -HUGE_VAL)))
		return -1;
	return 0;
}

/* One option; 0 to go on, else the exit status (2 usage, 0 after --help). */
static int parse_one(int opt, const char *arg, struct dataset_opts *o)
{
	struct ferry_reader_config *cfg = &o->cfg;

	switch (opt) {
	case OPT_ROOT: cfg->root = arg; return 0;
	case OPT_FILTER: cfg->filter = arg; return 0;
	case OPT_LIST: cfg->file_list = arg; return 0;
	case OPT_FILES: o->files_mode = 1; return 0;
	case OPT_SHUFFLE: cfg->random_shuffle = 1; return 0;
	case OPT_SHUFFLE_DATASET: cfg->shuffle_dataset = 1; return 0;
	case OPT_PAD: cfg->pad_last_batch = 1; return 0;
	case OPT_STICK: cfg->stick_to_shard = 1; return 0;
	case OPT_ROWS: cfg->samples = FERRY_SAMPLES_ROWS; return 0;
	case OPT_KEY: cfg->npz_key = arg; return 0;
	case OPT_NO_CACHE: cfg->no_header_cache = 1; return 0;
	case OPT_ORDER: o->order = 1; return 0;
	case OPT_VERIFY: o->verify = 1; return 0;
	case OPT_JSON: o->json = 1; return 0;
	case OPT_QUIET: o->quiet = 1; return 0;
	case OPT_DUMP: o->dump = arg; return 0;
	case OPT_BATCH:
		return parse_unsigned("--batch", arg, 1, FERRY_BATCH_MAX, &cfg->batch_size);
	case OPT_SHARD:
		return parse_shard(arg, cfg) < 0 ? usage_error("--shard", arg, "I/N with I < N <= 2^30")
						 : 0;
	case OPT_SEED:
		return ferry_cli_parse_uint("--seed", arg, 0, UINT64_MAX, &cfg->seed);
	case OPT_EPOCHS:
		return ferry_cli_parse_uint("--epochs", arg, 0, UINT64_MAX, &cfg->epochs);
	case OPT_THREADS:
		return parse_unsigned("--threads", arg, 1, FERRY_THREADS_MAX, &cfg->threads);
	case OPT_PREFETCH:
		return parse_unsigned("--prefetch", arg, 1, FERRY_PREFETCH_MAX, &cfg->prefetch_depth);
	case OPT_OOB:
		return parse_policy(arg, &cfg->out_of_bounds_policy) < 0
			       ? usage_error("--oob", arg, "error, pad or trim") : 0;
	case OPT_ON_ERROR:
		return parse_on_error(arg, &cfg->on_error) < 0
			       ? usage_error("--on-error", arg, "stop or skip") : 0;
	case OPT_FILL:
		return parse_fill(arg, &cfg->fill_value) < 0
			       ? usage_error("--fill", arg, "a number within a double's range")
			       : 0;
	case OPT_HELP:
		ferry_cli_read_help(stdout);
		return -1;
	default:
		return parse_roi_option(opt, arg, &o->roi);
	}
}

/* Returns -1 to go on, else the exit status. */
static int parse_dataset_options(int argc, char **argv, struct dataset_opts *o)
{
	int opt, status;

	memset(o, 0, sizeof(*o));
	o->cfg.epochs = 1;
	o->cfg.shard_id = -1;
	o->cfg.num_shards = -1;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":", dataset_options, NULL)) != -1) {
		if (opt == '?' || opt == ':')
			return ferry_cli_bad_option("read", opt, argv);
		status = parse_one(opt, optarg, o);
		if (status < 0)
			return 0;
		if (status)
			return status;
	}
	if (o->files_mode) {
		o->cfg.files = (const char *const *)(argv + optind);
		o->cfg.nfiles = (size_t)(argc - optind);
	} else if (optind < argc) {
		fprintf(stderr, "ferry read: unexpected argument '%s' (files go after --files; try "
			"'ferry read --help')\n", argv[optind]);
		return 2;
	}
	if (apply_roi(o))
		return 2;
	if (o->cfg.npz_key && o->verify) {
		fprintf(stderr, "ferry read: --verify reads .npy files, not archive members (--key); "
			"a member's CRC-32 is checked as it loads\n");
		return 2;
	}
	return -1;
}

/* ---- what each sample gets ---- */

/* The region of sample s of path, computed on the host from the whole array
 * (read by the tool's own CPU loader): element by element, in C order. */
static int cpu_region(const struct ferry_reader_config *cfg, const char *path,
		      const struct ferry_sample *s, unsigned char **out)
{
	struct ferry_array_info info;
	struct ferry__roi_spec spec;
	struct ferry__region rg;
	unsigned char fill[16], *whole = NULL, *region;
	uint64_t nbytes, idx[FERRY_MAX_DIMS] = { 0 };
	int rc;

	if ((rc = ferry_info(path, &info)) < 0 || (rc = ferry__roi_spec_from_config(cfg, &spec)) < 0)
		return ferry_cli_error(path, rc);
	rc = s->row >= 0 ? ferry__roi_resolve_row(&spec, info.ndim, info.shape, s->row, path, &rg)
			 : ferry__roi_resolve(&spec, info.ndim, info.shape, path, &rg);
	if (rc < 0)
		return ferry_cli_error(path, rc);
	int row = s->row >= 0; /* the sample's shape leaves out the row axis */
	if (ferry_cli_cpu_load(path, (void **)&whole, &nbytes))
		return 1;
	size_t isz = info.itemsize;
	ferry__fill_element(info.dtype, cfg->fill_value, fill);
	region = malloc(rg.count * isz + 1);
	if (!region) {
		free(whole);
		return ferry_cli_fail("%s: out of memory", path);
	}
	for (uint64_t e = 0; e < rg.count; e++) {
		uint64_t src = 0;
		int inside = 1;
		for (int d = 0; d < info.ndim; d++) {
			int64_t c = rg.start[d] + (int64_t)idx[d];
			inside &= c >= 0 && c < info.shape[d];
			src = src * (uint64_t)info.shape[d] + (uint64_t)(inside ? c : 0);
		}
		memcpy(region + e * isz, inside ? whole + src * isz : fill, isz);
		for (int d = info.ndim - 1; d >= 0 && ++idx[d] == (uint64_t)rg.shape[d]; d--)
			idx[d] = 0;
	}
	free(whole);
	if (rg.count * isz != s->nbytes ||
	    memcmp(rg.shape + row, s->shape, sizeof(int64_t) * (size_t)(rg.ndim - row))) {
		free(region);
		return ferry_cli_fail("%s: verify failed: the sample's shape is not the region's",
			       path);
	}
	*out = region;
	return 0;
}

/* Writes sample i of batch (epoch, batch) to DIR/e<EPOCH>_b<BATCH>_<I>.bin,
 * never over an existing file. Returns 0, or 1 after printing why. */
static int dump_sample(const char *dir, uint64_t epoch, uint64_t batch, unsigned i,
		       const char *name, const void *data, uint64_t n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/e%" PRIu64 "_b%" PRIu64 "_%u.bin", dir, epoch, batch, i);
	return ferry_cli_write_dump(path, name, data, n);
}

/* ---- the run ---- */

/* Where a run stood when an epoch ended (the next epoch's first batch
 * arrived, or the run ended), counted from the start: the difference of two
 * marks is one epoch. */
struct epoch_mark {
	uint64_t ns, bytes, buffered, direct, mapped;
	double cpu; /* user + system seconds of the process, every thread */
};

struct dataset_run {
	const struct dataset_opts *o;
	ferry_ctx *ctx;
	struct ferry_cli_skips *skips; /* under --on-error skip, else NULL */
	struct ferry_cli_progress p;
	struct ferry_reader_stats st;
	uint64_t samples, bytes, verified, epochs;
	uint64_t start_ns, ns;
	char *error;                   /* what ended the run early (malloc'ed) */
	const char **skipped;          /* the files skipped, when known */
	size_t nskipped;
	struct epoch_mark *marks;      /* the run's state at the end of each epoch */
	size_t nmarks;
};

static double cpu_seconds(void)
{
	struct rusage u;
	if (getrusage(RUSAGE_SELF, &u) < 0)
		return 0;
	return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
	       ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) / 1e6;
}

/* Marks the end of the epoch d is in. Returns 0 or 1 (out of memory). */
static int mark_epoch(struct dataset_run *d, ferry_reader *r)
{
	struct ferry_reader_stats st;
	struct epoch_mark *m = realloc(d->marks, (d->nmarks + 1) * sizeof(*m));
	if (!m)
		return ferry_cli_fail("out of memory");
	d->marks = m;
	ferry_reader_stats(r, &st, sizeof(st));
	m[d->nmarks++] = (struct epoch_mark){ ferry__now_ns() - d->start_ns, d->bytes,
					      st.files_buffered, st.files_direct,
					      st.files_mapped, cpu_seconds() };
	return 0;
}

/* Copies sample i back, then dumps and/or verifies it. Returns 0 or 1. */
static int check_sample(struct dataset_run *d, uint64_t epoch, uint64_t batch, unsigned i,
			const struct ferry_sample *s)
{
	const struct dataset_opts *o = d->o;
	unsigned char *host = malloc(s->nbytes + 1), *want = NULL;
	int status = 0, rc;

	if (!host)
		return ferry_cli_fail("%s: out of memory", s->path);
	rc = s->nbytes ? ferry_copy_to_host(d->ctx, host, s->data, s->nbytes) : 0;
	if (rc < 0)
		status = ferry_cli_error(s->path, rc);
	if (!status && o->dump)
		status = dump_sample(o->dump, epoch, batch, i, s->path, host, s->nbytes);
	if (!status && o->verify) {
		status = cpu_region(&o->cfg, s->path, s, &want);
		if (!status)
			status = ferry_cli_compare(s->path, host, want, s->nbytes);
		d->verified += !status;
	}
	free(want);
	free(host);
	return status;
}

/* EPOCH<TAB>BATCH<TAB>PATH, then <TAB>row=N for a row, <TAB>pad for padding. */
static void print_order(uint64_t epoch, uint64_t index, const struct ferry_sample *s)
{
	printf("%" PRIu64 "\t%" PRIu64 "\t%s", epoch, index, s->path);
	if (s->row >= 0)
		printf("\trow=%" PRId64, s->row);
	puts(s->is_padding ? "\tpad" : "");
}

static int run_batch(struct dataset_run *d, ferry_reader *r, ferry_batch *b)
{
	const struct dataset_opts *o = d->o;
	uint64_t epoch, index;
	struct ferry_sample s;
	int status = 0;

	ferry_batch_position(b, &epoch, &index);
	while (!status && d->nmarks < epoch) /* b is the first of a new epoch */
		status = mark_epoch(d, r);
	if (epoch + 1 > d->epochs)
		d->epochs = epoch + 1;
	for (unsigned i = 0; i < ferry_batch_size(b) && !status; i++) {
		ferry_batch_sample(b, i, &s);
		if (o->order)
			print_order(epoch, index, &s);
		if (o->dump || o->verify)
			status = check_sample(d, epoch, index, i, &s);
		if (!s.is_padding) {
			d->samples++;
			d->bytes += s.nbytes;
			ferry_cli_skips_sample(d->skips, epoch, s.path);
		}
	}
	return status;
}

/* Reads batches until the epochs end or one fails. Returns 0 or 1. */
static int read_batches(struct dataset_run *d, ferry_reader *r)
{
	struct ferry_epoch_info info;
	ferry_batch *b;
	int status = 0, rc;

	ferry_reader_epoch_info(r, &info);
	ferry_cli_progress_start(&d->p, "read", "samples", info.real_samples * d->o->cfg.epochs, 0,
				 !d->o->json && !d->o->quiet);
	while (!status && (rc = ferry_reader_next(r, &b)) == 0) {
		status = run_batch(d, r, b);
		ferry_batch_release(b);
		ferry_cli_progress(&d->p, d->samples, d->bytes);
	}
	ferry_cli_progress_end(&d->p);
	if (d->nmarks < d->epochs && mark_epoch(d, r)) /* the last epoch, whole or cut short */
		status = 1;
	if (!status && rc == -FERRY_EEND)
		ferry_cli_skips_epoch_done(d->skips);
	else if (!status)
		status = ferry_cli_error(NULL, rc);
	if (status)
		d->error = strdup(ferry_cli_last_message());
	return status;
}

/* Why path was skipped, as far as the tool can tell now: its header's (with
 * --key, its member's) or its region's fault, else that the reader's reason
 * was not kept. */
static void skip_reason(const struct dataset_opts *o, const char *path, char *buf, size_t len)
{
	struct ferry_array_info info;
	struct ferry__roi_spec spec;
	struct ferry__region rg;
	size_t n = strlen(path);
	const char *msg, *key = o->cfg.npz_key;

	ferry__clear_error();
	if ((key ? ferry_info_member(path, key, &info) : ferry_info(path, &info)) < 0 ||
	    (ferry__roi_spec_from_config(&o->cfg, &spec) == 0 &&
	     ferry__roi_resolve(&spec, info.ndim, info.shape, path, &rg) < 0)) {
		msg = ferry_last_error();
		if (!strncmp(msg, path, n) && msg[n] == ':' && msg[n + 1] == ' ')
			msg += n + 2; /* the path is named already */
		snprintf(buf, len, "%s", msg);
	} else if (key) {
		snprintf(buf, len, "the reader's error was not kept; member '%s', its header and "
			 "region are fine now (a stored member's CRC-32 is checked only as its "
			 "data is read)", key);
	} else {
		snprintf(buf, len, "the reader's error was not kept, and its header and region "
			 "are fine now");
	}
	ferry__clear_error();
}

/* Names each skipped file on stderr, and in json (a JSON list, or null when
 * the names are unknown) when json is not NULL. */
static void report_skips(const struct dataset_run *d, FILE *json)
{
	int known = !d->st.files_skipped || d->nskipped;
	char why[1024];

	if (!known && d->st.files_skipped)
		fprintf(stderr, "ferry: %" PRIu64 " files skipped (the tool cannot tell which)\n",
			d->st.files_skipped);
	if (json)
		fputs(known ? "[" : "null", json);
	for (size_t i = 0; i < d->nskipped; i++) {
		skip_reason(d->o, d->skipped[i], why, sizeof(why));
		fprintf(stderr, "ferry: skipped %s: %s\n", d->skipped[i], why);
		if (!json)
			continue;
		fputs(i ? ", {\"path\": " : "{\"path\": ", json);
		ferry_cli_json_string(json, d->skipped[i]);
		fputs(", \"error\": ", json);
		ferry_cli_json_string(json, why);
		putc('}', json);
	}
	if (json && known)
		putc(']', json);
}

/* Epoch e's part of a mark: its difference from the mark before. */
static struct epoch_mark epoch_part(const struct dataset_run *d, size_t e)
{
	struct epoch_mark m = d->marks[e], z = { 0 }, p = e ? d->marks[e - 1] : z;
	return (struct epoch_mark){ m.ns - p.ns, m.bytes - p.bytes, m.buffered - p.buffered,
				    m.direct - p.direct, m.mapped - p.mapped, m.cpu - p.cpu };
}

static void print_epoch(FILE *out, const struct dataset_run *d, size_t e)
{
	struct epoch_mark m = epoch_part(d, e);
	double secs = (double)m.ns / 1e9;
	char got[32], time[32], rate[32];

	fprintf(out, "  epoch %zu: %s in %s (%s), %.3f CPU s/GB, %" PRIu64 " files buffered, %"
		PRIu64 " direct, %" PRIu64 " mapped\n", e + 1,
		ferry_cli_bytes(m.bytes, got, sizeof(got)), ferry_cli_seconds(secs, time, sizeof(time)),
		ferry_cli_rate(m.bytes, secs, rate, sizeof(rate)),
		m.bytes ? m.cpu / ((double)m.bytes / 1e9) : 0.0, m.buffered, m.direct, m.mapped);
}

static void print_summary(const struct dataset_run *d)
{
	FILE *out = d->o->order ? stderr : stdout;
	double secs = (double)d->ns / 1e9;
	char got[32], read[32], time[32], rate[32];

	fprintf(out, "read: %" PRIu64 " epoch%s, %" PRIu64 " batches, %" PRIu64 " samples, %s "
		"delivered, %s read (%" PRIu64 " files buffered, %" PRIu64 " direct, %" PRIu64
		" mapped), %" PRIu64
		" files skipped, in %s (%s, %s device)\n",
		d->epochs, d->epochs == 1 ? "" : "s", d->st.batches, d->st.samples,
		ferry_cli_bytes(d->st.bytes_delivered, got, sizeof(got)),
		ferry_cli_bytes(d->st.bytes_read, read, sizeof(read)), d->st.files_buffered,
		d->st.files_direct, d->st.files_mapped, d->st.files_skipped,
		ferry_cli_seconds(secs, time, sizeof(time)),
		ferry_cli_rate(d->st.bytes_delivered, secs, rate, sizeof(rate)),
		ferry_ctx_device_kind(d->ctx));
	for (size_t e = 0; d->nmarks > 1 && e < d->nmarks; e++)
		print_epoch(out, d, e);
	if (d->o->verify)
		fprintf(out, "verify: %" PRIu64 " samples match an independent CPU read of their "
			"file and region, byte for byte (stdio and the tool's own loops)\n",
			d->verified);
}

static void print_json(const struct dataset_run *d)
{
	double secs = (double)d->ns / 1e9;

	printf("{\"device\": \"%s\", \"epochs\": %" PRIu64 ", \"batches\": %" PRIu64
	       ", \"samples\": %" PRIu64 ", \"bytes_delivered\": %" PRIu64 ", \"bytes_read\": %" PRIu64
	       ", \"seconds\": %.6f, \"bytes_per_second\": %.0f, \"verified\": ",
	       ferry_ctx_device_kind(d->ctx), d->epochs, d->st.batches, d->st.samples,
	       d->st.bytes_delivered, d->st.bytes_read, secs,
	       secs > 0 ? (double)d->st.bytes_delivered / secs : 0.0);
	if (d->o->verify)
		printf("%" PRIu64, d->verified);
	else
		fputs("null", stdout);
	printf(", \"files_buffered\": %" PRIu64 ", \"files_direct\": %" PRIu64
	       ", \"files_mapped\": %" PRIu64 ", \"files_skipped\": %" PRIu64 ", \"skipped\": ",
	       d->st.files_buffered, d->st.files_direct, d->st.files_mapped, d->st.files_skipped);
	report_skips(d, stdout);
	fputs(", \"per_epoch\": [", stdout);
	for (size_t e = 0; e < d->nmarks; e++) {
		struct epoch_mark m = epoch_part(d, e);
		printf("%s{\"seconds\": %.6f, \"bytes_delivered\": %" PRIu64 ", \"cpu_seconds\": %.3f, "
		       "\"files_buffered\": %" PRIu64 ", \"files_direct\": %" PRIu64
		       ", \"files_mapped\": %" PRIu64 "}", e ? ", " : "", (double)m.ns / 1e9, m.bytes,
		       m.cpu, m.buffered, m.direct, m.mapped);
	}
	fputs("], \"error\": ", stdout);
	if (d->error)
		ferry_cli_json_string(stdout, d->error);
	else
		fputs("null", stdout);
	fputs("}\n", stdout);
}

static int read_dataset(struct dataset_run *d)
{
	ferry_reader *r;
	int status, rc;

	d->start_ns = ferry__now_ns();
	rc = ferry_reader_open(d->ctx, &d->o->cfg, &r);
	if (rc < 0)
		return ferry_cli_error("reader", rc);
	if (d->o->cfg.on_error == FERRY_ON_ERROR_SKIP && ferry_cli_skips_open(&d->o->cfg, &d->skips))
		ferry__clear_error(); /* the names stay unknown; the count is still reported */
	status = read_batches(d, r);
	d->ns = ferry__now_ns() - d->start_ns;
	ferry_reader_stats(r, &d->st, sizeof(d->st));
	d->nskipped = ferry_cli_skips_finish(d->skips, d->st.files_skipped, &d->skipped);
	if (d->o->json)
		print_json(d);
	else
		report_skips(d, NULL);
	if (!d->o->json && !d->o->quiet)
		print_summary(d);
	rc = ferry_reader_close(r);
	if (rc < 0 && !status)
		status = ferry_cli_error("closing the reader", rc);
	return status;
}

int ferry_cli_read_dataset(int argc, char **argv)
{
	struct dataset_opts o;
	struct dataset_run d = { .o = &o };
	struct ferry_ctx_options copt = { .gpu = -1, .direct = -1 };
	int status = parse_dataset_options(argc, argv, &o), rc;

	if (status >= 0)
		return status;
	if (o.dump && ferry_cli_ensure_dir(o.dump))
		return 1;
	copt.threads = o.cfg.threads;
	ferry__clear_error();
	rc = ferry_ctx_create(&d.ctx, &copt);
	if (rc < 0)
		return ferry_cli_error("cannot open a context", rc);
	status = read_dataset(&d);
	ferry_cli_skips_close(d.skips);
	free(d.marks);
	free(d.error);
	ferry__clear_error();
	rc = ferry_ctx_destroy(d.ctx);
	if (rc < 0 && !status)
		status = ferry_cli_error("closing the context", rc);
	return status;
}
