/* `ferry bench`: ferry against its ceilings and the loaders people write
 * instead, in one run on one machine (bench_*.c hold the parts). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cli.h"
#include "base/base.h"
#include "context/context.h"

static const char bench_help[] =
	"usage: ferry bench [--json] [--dir DIR] [--workload large|medium|small|NAME]\n"
	"                   [--files N --size BYTES] [--cache warm|cold|warm,cold]\n"
	"                   [--tools LIST] [--backends LIST] [--threads LIST] [--chunk SIZE]\n"
	"                   [--callers N] [--seconds-limit S] [--min-seconds S]\n"
	"                   [--budget-seconds S] [--series NAME] [--device auto|cuda|host]\n"
	"                   [--cold-method auto|drop_caches|o_direct]\n"
	"                   [--batch-sizes LIST] [--reader-threads LIST]\n"
	"                   [--ceiling-threads N] [--warmup-seconds S] [--verify]\n"
	"                   [--ceilings-only]\n"
	"\n"
	"Measures, on this machine, how fast .npy files reach device memory: four\n"
	"ceilings, then ferry through each IO backend, the C reader at several batch\n"
	"sizes and the loaders people write instead, each in GB/s of payload, files/s\n"
	"and CPU seconds (user + system of the process) per GB.\n"
	"\n"
	"Dataset:\n"
	"  --dir DIR          the files: with --workload large|medium|small or --files and\n"
	"                     --size, DIR/sample_NNNNNN.npy (written first with ferry gen's\n"
	"                     formula, float32, seed 1, when missing); else every *.npy in\n"
	"                     DIR. Default: $TMPDIR/ferry-bench/WORKLOAD (/var/tmp/...)\n"
	"  --workload NAME    large: 64 x 64 MiB, medium: 1024 x 4 MiB, small: 16384 x\n"
	"                     128 KiB; another NAME is a label for --dir or --files/--size\n"
	"  --files N, --size BYTES  the dataset's shape instead of a preset's\n"
	"\n"
	"Ceilings (always measured; --ceilings-only stops there):\n"
	"  pinned_h2d         async copies of a 256 MiB pinned buffer to device memory\n"
	"                     (64 MiB under a --seconds-limit below 1)\n"
	"  storage_direct     ferry's IO layer reading the dataset with O_DIRECT into\n"
	"                     aligned memory, no copy, on min(2 x cores, 32) threads, each\n"
	"                     with up to 8 reads of 1 MiB in flight (io_uring; one pread\n"
	"                     at a time without liburing)\n"
	"  page_cache         buffered 1 MiB reads of the warm dataset through ferry's\n"
	"                     posix IO layer, min(cores, 16) threads\n"
	"  read_only          plain open, fstat, read (whole file) and close of the warm\n"
	"                     files into each thread's private host memory: no GPU, no\n"
	"                     ferry code; GB/s of payload and files/s, on\n"
	"                     --ceiling-threads N threads (the cores, at most 64)\n"
	"\n"
	"Runs:\n"
	"  --cache LIST       warm: files in the page cache (read once before); cold: the\n"
	"                     page cache dropped before each run (echo 3 >\n"
	"                     /proc/sys/vm/drop_caches) where that is permitted, else only\n"
	"                     O_DIRECT reads (cold_method says which). (warm)\n"
	"  --cold-method M    auto (above), drop_caches or o_direct (auto)\n"
	"  --tools LIST       ferry, naive_c, tuned_pread, cufile_per_file, reader (all):\n"
	"                     ferry: ferry_load_into_async into two device buffers per\n"
	"                       calling thread, in turn (a buffer's last load waited for\n"
	"                       before it is reused); one context; files split across\n"
	"                       the callers\n"
	"                     naive_c: open + read into malloc'ed memory + a synchronous\n"
	"                       pageable copy (ferry_copy_to_device), one thread\n"
	"                     tuned_pread: T threads, each pread-ing whole files into two\n"
	"                       pinned chunk buffers and queueing async copies on its own\n"
	"                       stream, an event per buffer (O_DIRECT under cold o_direct)\n"
	"                     cufile_per_file: cuFileRead of each payload into a device\n"
	"                       buffer registered once per thread (cold runs only; needs\n"
	"                       the cuda device and libcufile)\n"
	"                     reader: the C reader (ferry_reader_open over the files in\n"
	"                       order, prefetch_depth 0: automatic; ferry_reader_next,\n"
	"                       ferry_batch_wait, the batch as one stacked array,\n"
	"                       ferry_batch_release) at each --batch-sizes value, on a\n"
	"                       context of the user's defaults (FERRY_* variables\n"
	"                       apply); ratio to read_only of the same files (cold: a\n"
	"                       read_only run measured cold just before). Warm: the\n"
	"                       first batch and those of --warmup-seconds after it\n"
	"                       are not counted, nor the first epochs of files of\n"
	"                       4 MiB or more while the zero-copy path registers\n"
	"                       them (until one copied every file from a mapping; at\n"
	"                       most 256, or 10 s), then timed to the last batch\n"
	"                       released; cold: one pass from ferry_reader_open. A\n"
	"                       run stops at --seconds-limit once 3 batches counted;\n"
	"                       its note counts the timed files read buffered, read\n"
	"                       direct and copied from a registered mapping\n"
	"  --backends LIST    ferry's IO: posix, posix_direct, uring, uring_direct, cufile\n"
	"                     (all). Warm runs use the buffered ones; O_DIRECT ones (and\n"
	"                     cufile, which opens files with O_DIRECT) run cold\n"
	"  --threads LIST     thread counts to sweep, e.g. 1,4,8,16 (1,2,4,.. up to the\n"
	"                     cores, and the cores); ferry also runs once with its default\n"
	"  --chunk SIZE       ferry's staging chunk (its default, 2M) and tuned_pread's\n"
	"                     buffers (1M); a power of two, 4k..16M\n"
	"  --callers N        threads calling ferry_load_into_async (default: ceil(4 x threads x\n"
	"                     chunk / average file size), between 1 and threads)\n"
	"  --seconds-limit S  a run stops after the file in hand when S have passed (5)\n"
	"  --min-seconds S    warm runs repeat the dataset until S have passed (1)\n"
	"  --budget-seconds S runs that would start after S are reported as skipped (none)\n"
	"  --series NAME      a label copied into every run (matrix)\n"
	"  --device NAME      the device to load onto (FERRY_DEVICE, else auto)\n"
	"  --batch-sizes LIST reader: samples a batch, e.g. 1,4,32,256 (that)\n"
	"  --reader-threads LIST  reader: IO threads, e.g. 8,16 (the context's default)\n"
	"  --ceiling-threads N  read_only's threads (the cores, at most 64)\n"
	"  --warmup-seconds S reader, warm: not counted after the first batch (0.25;\n"
	"                     at least an epoch for files of 4 MiB or more)\n"
	"  --verify           reader: copy every batch back and compare every byte with\n"
	"                     a pread of its file (C-order, host-order files, as ferry gen\n"
	"                     writes); the time includes it, so leave it off for timing\n"
	"\n"
	"Output: a table on stdout, or with --json one JSON document: machine, date,\n"
	"device, ceilings {pinned_h2d_gbps, storage_direct_gbps, page_cache_gbps,\n"
	"read_only_gbps, read_only_files_per_s} and runs [{tool, backend, workload,\n"
	"cache, cold_method, threads, chunk, batch_size, gbps, files_per_s, cpu_s_per_gb,\n"
	"ceiling, ceiling_gbps, ratio_to_ceiling, verified, available, note, ...}].\n"
	"ceiling names what ratio_to_ceiling divides by: read_only for reader runs,\n"
	"pinned_h2d for other warm runs, storage_direct for other cold ones. On a\n"
	"terminal a progress line (the run in hand: files, bytes, rate, ETA) shows on\n"
	"stderr; never in a pipe or with --json. Only reader runs under --verify check\n"
	"the loaded bytes (ferry read --verify does for a load).\n"
	"Exit status: 0 when the bench ran (runs may be unavailable), 1 on an error, 2 on\n"
	"bad usage.\n";

static const char *const tool_names[] = { "ferry", "naive_c", "tuned_pread", "cufile_per_file",
					  "reader" };
static const unsigned default_batch_sizes[] = { 1, 4, 32, 256 };
static const char *const backend_names[] = { "posix", "posix_direct", "uring", "uring_direct",
					     "cufile" };

/* ---- options ---- */

/* Sets a bit per name of a comma-separated list. Returns 0 or -1. */
static int parse_names(const char *list, const char *const *names, size_t n, unsigned *bits)
{
	char buf[512];
	char *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	*bits = 0;
	for (char *name = strtok_r(buf, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		size_t i = 0;
		while (i < n && strcmp(name, names[i]))
			i++;
		if (i == n)
			return -1;
		*bits |= 1u << i;
	}
	return *bits ? 0 : -1;
}

/* A comma-separated list of at most max numbers lo..hi into out[*n]. Returns 0 or -1. */
static int parse_uints(const char *list, uint64_t lo, uint64_t hi, unsigned *out, unsigned max,
		       unsigned *n)
{
	char buf[512];
	char *save = NULL;

	if (snprintf(buf, sizeof(buf), "%s", list) >= (int)sizeof(buf))
		return -1;
	*n = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (ferry_cli_parse_uint(NULL, t, lo, hi, &v) || *n == max)
			return -1;
		out[(*n)++] = (unsigned)v;
	}
	return *n ? 0 : -1;
}

static int parse_threads(const char *list, struct ferry_bench_options *opt)
{
	return parse_uints(list, 1, FERRY_BENCH_MAX_THREADS, opt->threads, FERRY_BENCH_MAX_THREADS,
			   &opt->nthreads);
}

static int parse_cache(const char *list, struct ferry_bench_options *opt)
{
	static const char *const names[] = { "warm", "cold" };
	unsigned bits;
	if (!strcmp(list, "both"))
		list = "warm,cold";
	if (parse_names(list, names, 2, &bits))
		return -1;
	opt->warm = bits & 1;
	opt->cold = (bits >> 1) & 1;
	return 0;
}

static int parse_seconds(const char *text, double *out)
{
	char *end;
	double v = strtod(text, &end);
	if (*end || !(v >= 0) || v > 1e6)
		return -1;
	*out = v;
	return 0;
}

static int parse_chunk(const char *text, size_t *out)
{
	uint64_t v;
	if (ferry_cli_parse_size(text, &v) || v < 4096 || v > (16u << 20) || (v & (v - 1)))
		return -1;
	*out = (size_t)v;
	return 0;
}

static int parse_count(const char *text, unsigned max, unsigned *out)
{
	uint64_t v;
	if (ferry_cli_parse_size(text, &v) || !v || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int usage_error(const char *option, const char *value, const char *expected)
{
	fprintf(stderr, "ferry: bench: %s %s: expected %s\n", option, value, expected);
	return 2;
}

/* Parses a list option's value; -1 to go on, or 2 after saying what was expected. */
static int check(int failed, const char *option, const char *value, const char *expected)
{
	return failed ? usage_error(option, value, expected) : -1;
}

/* The reader rows' options; -1 to go on, else an exit status. */
static int apply_reader_option(int c, const char *arg, char **argv,
			       struct ferry_bench_options *opt)
{
	switch (c) {
	case 'V': opt->verify = 1; return -1;
	case 'z':
		return check(parse_uints(arg, 1, FERRY_BATCH_MAX, opt->batch_sizes,
					 FERRY_BENCH_MAX_BATCH_SIZES, &opt->nbatch_sizes),
			     "--batch-sizes", arg, "a list such as 1,4,32,256 (1..16777216, 16 at most)");
	case 'R':
		return check(parse_uints(arg, 1, FERRY_THREADS_MAX, opt->reader_threads,
					 FERRY_BENCH_MAX_THREADS, &opt->nreader_threads),
			     "--reader-threads", arg, "a list such as 8,16 (1..1024)");
	case 'e':
		return check(parse_count(arg, FERRY_BENCH_MAX_THREADS, &opt->ceiling_threads),
			     "--ceiling-threads", arg, "1..64");
	case 'W':
		return check(parse_seconds(arg, &opt->reader_warmup), "--warmup-seconds", arg,
			     "seconds");
	default: return ferry_cli_bad_option("bench", c, argv);
	}
}

/* Applies one option. Returns -1 to go on, else an exit status. */
static int apply_option(int c, const char *arg, char **argv, struct ferry_bench_options *opt)
{
	switch (c) {
	case 'j': opt->json = 1; return -1;
	case 'd': opt->dir = arg; return -1;
	case 'w': opt->workload = arg; return -1;
	case 'S': opt->series = arg; return -1;
	case 'D': opt->device = arg; return -1;
	case 'M':
		opt->cold_method = arg;
		return check(strcmp(arg, "auto") && strcmp(arg, "drop_caches") && strcmp(arg, "o_direct"),
			     "--cold-method", arg, "auto, drop_caches or o_direct");
	case 'o': opt->ceilings_only = 1; return -1;
	case 'n':
		return check(parse_count(arg, 10000000, &opt->files), "--files", arg, "1..10000000");
	case 's':
		return check(ferry_cli_parse_size(arg, &opt->size) || !opt->size || opt->size % 4,
			     "--size", arg, "a multiple of 4 bytes, e.g. 4M");
	case 'c':
		return check(parse_cache(arg, opt), "--cache", arg, "warm, cold or warm,cold");
	case 't':
		return check(parse_names(arg, tool_names, FERRY__ARRAY_LEN(tool_names), &opt->tools),
			     "--tools", arg,
			     "a list of ferry, naive_c, tuned_pread, cufile_per_file, reader");
	case 'b':
		return check(parse_names(arg, backend_names, FERRY__ARRAY_LEN(backend_names),
					 &opt->backends),
			     "--backends", arg,
			     "a list of posix, posix_direct, uring, uring_direct, cufile");
	case 'T':
		return check(parse_threads(arg, opt), "--threads", arg, "a list such as 1,4,8 (1..64)");
	case 'k':
		return check(parse_chunk(arg, &opt->chunk), "--chunk", arg, "a power of two, 4k..16M");
	case 'C':
		return check(parse_count(arg, FERRY_BENCH_MAX_THREADS, &opt->callers), "--callers", arg,
			     "1..64");
	case 'l':
		return check(parse_seconds(arg, &opt->seconds_limit), "--seconds-limit", arg, "seconds");
	case 'm':
		return check(parse_seconds(arg, &opt->min_seconds), "--min-seconds", arg, "seconds");
	case 'B':
		return check(parse_seconds(arg, &opt->budget_seconds), "--budget-seconds", arg,
			     "seconds");
	case 'h': fputs(bench_help, stdout); return 0;
	default: return apply_reader_option(c, arg, argv, opt);
	}
}

static int parse_bench_options(int argc, char **argv, struct ferry_bench_options *opt)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "dir", required_argument, NULL, 'd' },
		{ "workload", required_argument, NULL, 'w' },
		{ "files", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "cache", required_argument, NULL, 'c' },
		{ "tools", required_argument, NULL, 't' },
		{ "backends", required_argument, NULL, 'b' },
		{ "threads", required_argument, NULL, 'T' },
		{ "chunk", required_argument, NULL, 'k' },
		{ "callers", required_argument, NULL, 'C' },
		{ "seconds-limit", required_argument, NULL, 'l' },
		{ "min-seconds", required_argument, NULL, 'm' },
		{ "budget-seconds", required_argument, NULL, 'B' },
		{ "series", required_argument, NULL, 'S' },
		{ "cold-method", required_argument, NULL, 'M' },
		{ "device", required_argument, NULL, 'D' },
		{ "ceilings-only", no_argument, NULL, 'o' },
		{ "batch-sizes", required_argument, NULL, 'z' },
		{ "reader-threads", required_argument, NULL, 'R' },
		{ "ceiling-threads", required_argument, NULL, 'e' },
		{ "verify", no_argument, NULL, 'V' },
		{ "warmup-seconds", required_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, status;

	*opt = (struct ferry_bench_options){
		.series = "matrix", .warm = 1, .cold_method = "auto", .tools = ~0u, .backends = ~0u,
		.seconds_limit = 5, .min_seconds = 1, .reader_warmup = 0.25,
	};
	optind = 0; /* reset getopt for a subcommand */
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1)
		if ((status = apply_option(c, optarg, argv, opt)) >= 0)
			return status;
	if (optind < argc)
		return ferry_cli_bad_argument("bench", argv[optind]);
	if (opt->seconds_limit <= 0)
		opt->seconds_limit = 1e6;
	if (opt->json)
		ferry_bench_progress_disable();
	if (!opt->nbatch_sizes) {
		memcpy(opt->batch_sizes, default_batch_sizes, sizeof(default_batch_sizes));
		opt->nbatch_sizes = FERRY__ARRAY_LEN(default_batch_sizes);
	}
	return -1;
}

/* ---- the matrix ---- */

struct bench {
	struct ferry_bench_options opt;
	struct ferry_bench_dataset ds;
	struct ferry_bench_report report;
	ferry_ctx *ctx;            /* device for the ceilings and tuned_pread */
	enum ferry_bench_cold cold_method;
	uint64_t start_ns;
	unsigned sweep[FERRY_BENCH_MAX_THREADS];
	unsigned nsweep;
	double cold_read_only_gbps; /* the reader rows' cold ceiling (0: not measured) */
};

static void add_note(struct bench *b, const char *text)
{
	if (b->report.nnotes < FERRY__ARRAY_LEN(b->report.notes))
		snprintf(b->report.notes[b->report.nnotes++], sizeof(b->report.notes[0]), "%s", text);
}

/* 1,2,4,... below the cores, then the cores; or --threads. */
static void make_sweep(struct bench *b)
{
	unsigned cores = ferry_bench_cores();

	if (b->opt.nthreads) {
		memcpy(b->sweep, b->opt.threads, sizeof(b->sweep));
		b->nsweep = b->opt.nthreads;
		return;
	}
	for (unsigned t = 1; t < cores && b->nsweep + 1 < FERRY_BENCH_MAX_THREADS; t *= 2)
		b->sweep[b->nsweep++] = t;
	b->sweep[b->nsweep++] = cores < FERRY_BENCH_MAX_THREADS ? cores : FERRY_BENCH_MAX_THREADS;
}

static int budget_spent(const struct bench *b)
{
	double elapsed = (double)(ferry__now_ns() - b->start_ns) / 1e9;
	return b->opt.budget_seconds > 0 && elapsed >= b->opt.budget_seconds;
}

/* A new run of the report for cache, or NULL when the report is full. */
static struct ferry_bench_run *new_run(struct bench *b, int cold)
{
	struct ferry_bench_run *run;

	if (b->report.nruns == FERRY_BENCH_MAX_RUNS)
		return NULL;
	run = &b->report.runs[b->report.nruns++];
	memset(run, 0, sizeof(*run));
	run->cache = cold ? "cold" : "warm";
	if (cold)
		run->cold_method = b->cold_method == FERRY_BENCH_COLD_DROP ? "drop_caches" : "o_direct";
	return run;
}

/* Fills the ceiling that bounds the run and the ratio to it: read_only of the
 * same cache state for reader runs, else pinned_h2d (warm) or storage_direct
 * (cold). read_only runs are a ceiling themselves. */
static void set_ratio(const struct bench *b, struct ferry_bench_run *run)
{
	const struct ferry_bench_ceilings *c = &b->report.ceilings;
	int cold = !strcmp(run->cache, "cold");

	if (!strcmp(run->tool, "read_only"))
		return;
	if (!strcmp(run->tool, "reader")) {
		run->ceiling = "read_only";
		run->ceiling_gbps = cold ? b->cold_read_only_gbps : c->read_only_gbps;
	} else {
		run->ceiling = cold ? "storage_direct" : "pinned_h2d";
		run->ceiling_gbps = cold ? c->storage_direct_gbps : c->pinned_h2d_gbps;
	}
	run->ratio_to_ceiling = run->available && run->ceiling_gbps > 0
					? run->gbps / run->ceiling_gbps : 0;
}

/* Gets a run ready to start: 0 to measure, -1 when the budget is spent. */
static int begin_run(struct bench *b, struct ferry_bench_run *run, int cold)
{
	if (budget_spent(b)) {
		run->available = 0;
		snprintf(run->note, sizeof(run->note), "skipped: --budget-seconds %g spent",
			 b->opt.budget_seconds);
		return -1;
	}
	if (run->batch_size)
		ferry_bench_progress("[%u] %s %s threads %u batch %u", b->report.nruns, run->tool,
				     run->cache, run->threads, run->batch_size);
	else
		ferry_bench_progress("[%u] %s %s %s threads %u", b->report.nruns, run->tool,
				     run->backend, run->cache, run->threads);
	if (cold && b->cold_method == FERRY_BENCH_COLD_DROP)
		ferry_bench_drop_caches();
	return 0;
}

static void end_run(struct bench *b, struct ferry_bench_run *run)
{
	set_ratio(b, run);
}

static struct ferry_bench_limits run_limits(const struct bench *b, int cold)
{
	/* Cold runs read the dataset once: a second pass would be warm. */
	struct ferry_bench_limits lim = { b->opt.seconds_limit, cold ? 0 : b->opt.min_seconds };
	return lim;
}

/* Whether ferry's backend runs under this cache state. */
static int backend_runs(const struct bench *b, const char *backend, int cold)
{
	int reads_direct = strstr(backend, "direct") || !strcmp(backend, "cufile");
	if (!cold)
		return !reads_direct;
	return b->cold_method == FERRY_BENCH_COLD_DROP || reads_direct;
}

static void ferry_once(struct bench *b, const char *backend, unsigned threads, int cold,
		       unsigned *default_threads, int *available)
{
	struct ferry_bench_limits lim = run_limits(b, cold);
	struct ferry_bench_run *run = new_run(b, cold);

	if (!run)
		return;
	snprintf(run->tool, sizeof(run->tool), "ferry");
	snprintf(run->backend, sizeof(run->backend), "%s", backend);
	run->threads = threads;
	if (begin_run(b, run, cold) == 0)
		ferry_bench_run_ferry(&b->opt, &b->ds, &lim, backend, threads, run);
	end_run(b, run);
	if (!threads)
		*default_threads = run->threads;
	*available = run->available || !strncmp(run->note, "skipped", 7);
}

/* ferry through backend: its defaults, then the sweep. */
static void ferry_backend(struct bench *b, const char *backend, int cold)
{
	unsigned default_threads = 0;
	int available;

	ferry_once(b, backend, 0, cold, &default_threads, &available);
	for (unsigned i = 0; available && i < b->nsweep; i++)
		if (b->sweep[i] != default_threads)
			ferry_once(b, backend, b->sweep[i], cold, &default_threads, &available);
}

static void run_ferry(struct bench *b, int cold)
{
	for (size_t i = 0; i < FERRY__ARRAY_LEN(backend_names); i++)
		if ((b->opt.backends & (1u << i)) && backend_runs(b, backend_names[i], cold))
			ferry_backend(b, backend_names[i], cold);
}

static void run_naive_c(struct bench *b, int cold)
{
	struct ferry_bench_limits lim = run_limits(b, cold);
	struct ferry_bench_run *run = new_run(b, cold);

	if (!run)
		return;
	snprintf(run->tool, sizeof(run->tool), "naive_c");
	snprintf(run->backend, sizeof(run->backend), "read+pageable_copy");
	run->threads = run->callers = 1;
	if (cold && b->cold_method == FERRY_BENCH_COLD_DIRECT)
		snprintf(run->note, sizeof(run->note),
			 "not available: cold runs read with O_DIRECT here (no drop_caches) and "
			 "a naive reader has no O_DIRECT path");
	else if (begin_run(b, run, cold) == 0)
		ferry_bench_run_naive_c(&b->opt, &b->ds, &lim, run);
	end_run(b, run);
}

static void run_tuned_pread(struct bench *b, int cold)
{
	struct ferry_bench_limits lim = run_limits(b, cold);
	int direct = cold && b->cold_method == FERRY_BENCH_COLD_DIRECT;

	for (unsigned i = 0; i < b->nsweep; i++) {
		struct ferry_bench_run *run = new_run(b, cold);
		if (!run)
			return;
		snprintf(run->tool, sizeof(run->tool), "tuned_pread");
		snprintf(run->backend, sizeof(run->backend), direct ? "pread_direct" : "pread");
		run->threads = b->sweep[i];
		if (begin_run(b, run, cold) == 0)
			ferry_bench_run_tuned_pread(b->ctx, &b->opt, &b->ds, &lim, b->sweep[i], direct,
						    run);
		end_run(b, run);
		if (!run->available && strncmp(run->note, "skipped", 7))
			return;
	}
}

static void run_cufile_per_file(struct bench *b, int cold)
{
	struct ferry_bench_limits lim = run_limits(b, cold);

	for (unsigned i = 0; cold && i < b->nsweep; i++) {
		struct ferry_bench_run *run = new_run(b, cold);
		if (!run)
			return;
		snprintf(run->tool, sizeof(run->tool), "cufile_per_file");
		snprintf(run->backend, sizeof(run->backend), "cufile");
		run->threads = b->sweep[i];
		if (begin_run(b, run, cold) == 0)
			ferry_bench_run_cufile_per_file(&b->opt, &b->ds, &lim, b->sweep[i], run);
		end_run(b, run);
		if (!run->available && strncmp(run->note, "skipped", 7))
			return; /* not available: once is enough */
	}
}

/* ---- the reader rows ---- */

/* read_only, cold: the ceiling of the cold reader rows, measured just before them. */
static void read_only_cold(struct bench *b, int direct)
{
	struct ferry_bench_limits lim = run_limits(b, 1);
	struct ferry_bench_run *run = new_run(b, 1);
	struct ferry_bench_measure m;

	if (!run)
		return;
	snprintf(run->tool, sizeof(run->tool), "read_only");
	snprintf(run->backend, sizeof(run->backend), direct ? "open+read_direct" : "open+read");
	run->threads = run->callers = ferry_bench_read_only_threads(&b->opt);
	if (begin_run(b, run, 1) == 0) {
		ferry_bench_read_only(&b->ds, &lim, run->threads, direct, &m);
		ferry_bench_fill_run(run, &m);
		if (m.error == -EINVAL && direct)
			snprintf(run->note, sizeof(run->note),
				 "not available: O_DIRECT refused here (%s)", m.message);
		else if (run->available)
			snprintf(run->note, sizeof(run->note),
				 "plain open, fstat, read, close into private memory; the cold "
				 "reader rows' ceiling");
	}
	end_run(b, run);
	b->cold_read_only_gbps = run->available ? run->gbps : 0;
}

static void reader_once(struct bench *b, ferry_ctx *ctx, const char *ctx_error, int cold,
			unsigned batch, unsigned threads)
{
	struct ferry_bench_limits lim = run_limits(b, cold);
	struct ferry_bench_run *run = new_run(b, cold);

	if (!run)
		return;
	snprintf(run->tool, sizeof(run->tool), "reader");
	snprintf(run->backend, sizeof(run->backend), "-");
	run->batch_size = batch;
	run->threads = threads;
	run->callers = 1;
	if (!ctx)
		snprintf(run->note, sizeof(run->note), "not available: %s", ctx_error);
	else if (begin_run(b, run, cold) == 0)
		ferry_bench_run_reader(ctx, &b->opt, &b->ds, &lim, batch, threads, run);
	end_run(b, run);
}

/* A context for the reader rows, or NULL with why in error. */
static ferry_ctx *reader_context(struct bench *b, int direct, char *error, size_t len)
{
	ferry_ctx *ctx = NULL;
	if (ferry_bench_reader_context(&b->opt, direct, &ctx) < 0) {
		snprintf(error, len, "%s", ferry_last_error());
		return NULL;
	}
	return ctx;
}

/* The C reader at every batch size (and --reader-threads): warm rows share
 * one context; each cold row has its own, destroyed before the next row's
 * drop_caches, since the zero-copy path's registrations pin the pages of the
 * files they map and a drop leaves pinned pages in memory (on 2026-12-05 the
 * H100's cold 4 MiB rows rose from 1.3 GB/s at batch 1 to 49 at batch 256
 * as the registrations of earlier rows piled up). */
static void run_reader(struct bench *b, int cold)
{
	int direct = cold && b->cold_method == FERRY_BENCH_COLD_DIRECT;
	unsigned none = 0, nthreads = b->opt.nreader_threads ? b->opt.nreader_threads : 1;
	const unsigned *threads = b->opt.nreader_threads ? b->opt.reader_threads : &none;
	char error[256] = "";
	ferry_ctx *ctx = NULL;

	if (cold)
		read_only_cold(b, direct);
	for (unsigned t = 0; t < nthreads; t++)
		for (unsigned i = 0; i < b->opt.nbatch_sizes; i++) {
			if (!ctx)
				ctx = reader_context(b, direct, error, sizeof(error));
			reader_once(b, ctx, error, cold, b->opt.batch_sizes[i], threads[t]);
			if (ctx && cold) {
				ferry_ctx_destroy(ctx);
				ctx = NULL;
			}
		}
	if (ctx)
		ferry_ctx_destroy(ctx);
}

static void run_cache_state(struct bench *b, int cold)
{
	if (!cold)
		ferry_bench_warm_files(&b->ds);
	if (b->opt.tools & FERRY_BENCH_TOOL_FERRY)
		run_ferry(b, cold);
	if (b->opt.tools & FERRY_BENCH_TOOL_NAIVE_C)
		run_naive_c(b, cold);
	if (b->opt.tools & FERRY_BENCH_TOOL_TUNED_PREAD)
		run_tuned_pread(b, cold);
	if (b->opt.tools & FERRY_BENCH_TOOL_CUFILE_PER_FILE)
		run_cufile_per_file(b, cold);
	if (b->opt.tools & FERRY_BENCH_TOOL_READER)
		run_reader(b, cold);
}

static int same_group(const struct ferry_bench_run *a, const struct ferry_bench_run *b)
{
	return !strcmp(a->tool, b->tool) && !strcmp(a->backend, b->backend) &&
	       !strcmp(a->cache, b->cache) && a->batch_size == b->batch_size;
}

/* Marks the fastest run of each (tool, backend, cache) that has several. */
static void mark_best(struct ferry_bench_report *r)
{
	for (unsigned i = 0; i < r->nruns; i++) {
		struct ferry_bench_run *a = &r->runs[i];
		int best = a->available, rivals = 0;
		for (unsigned j = 0; best && j < r->nruns; j++) {
			const struct ferry_bench_run *o = &r->runs[j];
			if (j == i || !o->available || !same_group(a, o))
				continue;
			rivals++;
			if (o->gbps > a->gbps || (o->gbps == a->gbps && j < i))
				best = 0;
		}
		a->best = best && rivals > 0;
	}
}

/* ---- setting up ---- */

static void describe_machine(struct bench *b)
{
	struct ferry_bench_report *r = &b->report;
	time_t now = time(NULL);
	struct tm tm;

	if (gethostname(r->machine, sizeof(r->machine)))
		snprintf(r->machine, sizeof(r->machine), "unknown");
	r->machine[sizeof(r->machine) - 1] = 0;
	gmtime_r(&now, &tm);
	strftime(r->date, sizeof(r->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	b->ctx->ld.dev->ops->describe(b->ctx->ld.dev, r->device, sizeof(r->device));
	snprintf(r->device_kind, sizeof(r->device_kind), "%s", ferry_ctx_device_kind(b->ctx));
	if (strcmp(r->device_kind, "cuda"))
		add_note(b, "no GPU in use: the host device stands in (copies are memcpy); GPU-only "
			    "runs are reported as not available");
}

static void choose_cold_method(struct bench *b)
{
	if (!b->opt.cold)
		return;
	if (!strcmp(b->opt.cold_method, "o_direct")) {
		b->cold_method = FERRY_BENCH_COLD_DIRECT;
		add_note(b, "cold runs: O_DIRECT reads (--cold-method o_direct); buffered tools are "
			    "not available");
	} else if (ferry_bench_drop_caches()) {
		b->cold_method = FERRY_BENCH_COLD_DROP;
		add_note(b, "cold runs: the page cache is dropped before each (drop_caches)");
	} else {
		b->cold_method = FERRY_BENCH_COLD_DIRECT;
		add_note(b, "cold runs: writing /proc/sys/vm/drop_caches is not permitted, so "
			    "cold means O_DIRECT reads (o_direct); buffered tools are not available");
		if (!strcmp(b->opt.cold_method, "drop_caches"))
			fprintf(stderr, "ferry: bench: --cold-method drop_caches is not permitted "
					"here; using o_direct\n");
	}
}

static int open_bench(struct bench *b)
{
	struct ferry_ctx_options o = { .device = b->opt.device, .gpu = -1, .io = "posix",
				       .threads = 1, .max_buffers = 1 };
	int rc;

	b->start_ns = ferry__now_ns();
	if (ferry_bench_dataset_open(&b->opt, &b->ds))
		return 1;
	ferry__clear_error();
	rc = ferry_ctx_create(&b->ctx, &o);
	if (rc < 0)
		return ferry_cli_error("cannot open a context", rc);
	make_sweep(b);
	describe_machine(b);
	choose_cold_method(b);
	return 0;
}

int ferry_cli_bench(int argc, char **argv)
{
	struct bench *b = calloc(1, sizeof(*b));
	int status;

	if (!b)
		return fprintf(stderr, "ferry: bench: out of memory\n"), 1;
	status = parse_bench_options(argc, argv, &b->opt);
	if (status < 0 && (status = open_bench(b)) == 0) {
		ferry_bench_ceilings(b->ctx, &b->ds, &b->opt, &b->report.ceilings);
		for (int cold = 0; cold < 2 && !b->opt.ceilings_only; cold++)
			if (cold ? b->opt.cold : b->opt.warm)
				run_cache_state(b, cold);
		mark_best(&b->report);
		ferry_bench_progress(NULL);
		if (b->opt.json)
			ferry_bench_print_json(&b->report, &b->opt, &b->ds);
		else
			ferry_bench_print_table(&b->report, &b->opt, &b->ds);
	}
	if (b->ctx)
		ferry_ctx_destroy(b->ctx);
	ferry_bench_dataset_close(&b->ds);
	free(b);
	return status;
}
