/*
 * Settings: one table of the environment variables ferry reads, with what
 * each accepts and its default, and their resolution for a context (the
 * option, then the environment, then the default) and for a reader's shard.
 * The only code in ferry that reads the environment.
 */
#include "context/context.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

/* Measured with bench/tune.sh on an H200 (2026-12-03): one lane serializes
 * small files on its lock and stream (7.2 GB/s of 128 KiB files against 14.6
 * with 4 lanes); 4 lanes sharing 64 buffers starve large files' few callers. */
#define DEFAULT_LANES 4
#define DEFAULT_MAX_BUFFERS 128
#define DEFAULT_CHUNK ((size_t)2 << 20)
#define DEFAULT_MAX_THREADS 16
#define DEFAULT_PIN_PACE 100
#define MIN_LANE_BUFFERS 8
/* A lane's pool starts with this many buffers at its first lease and grows on
 * demand (the engine doubles it up to the lane's share; see context.c). */
#define LANE_START_BUFFERS 4
/* Small batches let copies start while the rest of a file is still read. */
#define LAUNCH_AFTER 4
#define MAX_GPU 1023
#define MAX_RANKS (1 << 30)

static const struct ferry__setting_info table[] = {
	{ "FERRY_DEVICE", "auto, cuda, host", "auto",
	  "device to load onto; auto: CUDA when libcuda.so.1 loads and has a device, else host" },
	{ "FERRY_GPU", "0 to 1023", "LOCAL_RANK, else 0", "GPU ordinal" },
	{ "FERRY_IO", "auto, posix, uring, cufile", "auto",
	  "storage IO backend (`ferry env` says what auto chose and why)" },
	{ "FERRY_CHUNK_SIZE", "a power of two from 4k to 16M (e.g. 65536, 64k, 2M)", "2M",
	  "staging chunk size" },
	{ "FERRY_THREADS", "1 to 1024", "cores, at most 16", "IO threads of one load" },
	{ "FERRY_LANES", "1 to 16", "4",
	  "staging engines, each with its own lock and copy stream, the threads that call "
	  "ferry spread over them; fewer when FERRY_MAX_BUFFERS cannot give each 8 buffers" },
	{ "FERRY_MAX_BUFFERS", "1 to 4096", "128",
	  "most staging buffers (one chunk of pinned memory each), shared out between the "
	  "lanes; each lane's pool starts with 4 and grows on demand" },
	{ "FERRY_ODIRECT", "0, 1, auto", "auto",
	  "1: read with O_DIRECT (buffered where the file system refuses); auto: per file, reads "
	  "of 1 MiB or more bypass the page cache when their bytes are not cached and "
	  "FERRY_CACHE_BUDGET is spent" },
	{ "FERRY_CACHE_BUDGET", "bytes, with k, M or G (e.g. 0, 512M, 8G)", "half of MemAvailable",
	  "with FERRY_ODIRECT=auto: how many bytes of cold files a context reads through the "
	  "page cache (so that they are warm next epoch) before it reads cold files with O_DIRECT" },
	{ "FERRY_PIN_BUDGET", "bytes, with k, M or G (e.g. 0, 512M, 16G)", "a quarter of MemAvailable",
	  "zero copy: how many bytes of warm files of 4 MiB or more a context keeps mapped and "
	  "registered with the device, to copy them straight from the page cache (pinned "
	  "pages cannot be reclaimed; with CUDA the registrations take a context of their "
	  "own, about 260 MiB of device memory); 0 turns the zero-copy path off" },
	{ "FERRY_PIN_RESERVE", "bytes, with k, M or G (e.g. 0, 1G)", "an eighth of MemAvailable",
	  "zero copy: memory to leave available; below it (MemAvailable less the bytes "
	  "pinned) nothing more is registered and registrations are given back, least "
	  "recently used first (checked about once a second)" },
	{ "FERRY_PIN_PACE", "0 to 100 (percent)", "100",
	  "zero copy: the share of the time the registrar may spend registering files offered "
	  "for the first time while copies run, all of it once none was launched for 0.5 ms "
	  "(at 0 it registers them only then); "
	  "a file offered again before it was registered goes at once (measured on two H100s "
	  "reading 256 warm 64 MiB files flat out: the first epoch at 0.93 of the copy path's "
	  "rate at 100 and 0.97 at 75 and 50 on one, 0.95 at all three on the other; the "
	  "second at 0.09-0.13 CPU s/GB at 100 and 0.21-0.26 at 75 and 50; on a third, 0 "
	  "against 100: the first epoch at 1.01 against 0.99, the second on the copy path, and "
	  "with 5 ms of compute a batch 13% of the second zero-copy against 97%)" },
	{ "FERRY_TRACE", "a file path", "off",
	  "write a CSV trace of the staging engines' events and the zero-copy registrar's "
	  "registrations (columns and events in src/engine/engine.h)" },
	{ "FERRY_CUDA_WAIT", "spin, poll, block", "spin",
	  "how a thread waits for a copy to the GPU to land (a staging buffer to come back, a "
	  "batch to arrive): spin polls until it lands (CUDA's default: a core busy all the "
	  "wait; measured no costlier in CPU per byte than sleeping, and faster); poll polls "
	  "for up to 20 us, then sleeps until the GPU signals; block sleeps at once" },
	{ "FERRY_CUDA_GATE", "auto, kernel", "auto",
	  "tests only: how a CUDA test gate holds a stream (auto: cuStreamWaitValue32 where the "
	  "driver has it, else a spin kernel)" },
	{ "LOCAL_RANK", "0 to 1023", "unset", "the GPU when FERRY_GPU is unset (set by torchrun)" },
	{ "RANK", "0 to 2^30 - 1", "unset", "a reader's shard when its config names none" },
	{ "WORLD_SIZE", "1 to 2^30", "unset", "a reader's shard count when its config names none" },
};

const struct ferry__setting_info *ferry__settings_table(size_t *n)
{
	*n = FERRY__ARRAY_LEN(table);
	return table;
}

static const struct ferry__setting_info *row(const char *name)
{
	for (size_t i = 0; i < FERRY__ARRAY_LEN(table); i++)
		if (!strcmp(table[i].name, name))
			return &table[i];
	return NULL;
}

/* The environment's text for name, or NULL when unset or empty. */
static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* "NAME=value: expected <values>" (who is a variable) or "option 'value':
 * expected <values>" (who is an option's name). */
static int invalid(const char *who, int is_env, const char *value, const char *values)
{
	if (is_env)
		return ferry__fail(-FERRY_ECONFIG, "%s=%s: expected %s", who, value, values);
	return ferry__fail(-FERRY_ECONFIG, "%s option '%s': expected %s", who, value, values);
}

static int parse_uint(const char *text, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(text, &end, 10);
	if (errno || end == text || *end || *text < '0' || *text > '9' || v < lo || v > hi)
		return -FERRY_ECONFIG;
	*out = v;
	return 0;
}

/* An unsigned variable in [lo, hi]: *out keeps its value when it is unset. */
static int env_uint(const char *name, unsigned long lo, unsigned long hi, unsigned long *out)
{
	const char *text = env(name);
	if (text && parse_uint(text, lo, hi, out) < 0)
		return invalid(name, 1, text, row(name)->values);
	return 0;
}

/* One of the words of choices (a NULL-ended list), as its static string; var
 * is the variable whose row says what is accepted. */
static int choose(const char *var, const char *who, int is_env, const char *text,
		  const char *const *choices, const char **out)
{
	for (const char *const *c = choices; *c; c++)
		if (!strcmp(text, *c)) {
			*out = *c;
			return 0;
		}
	return invalid(who, is_env, text, row(var)->values);
}

/* The option's word, else the variable's, else the first choice. */
static int resolve_choice(const char *option, const char *opt_name, const char *var,
			  const char *const *choices, const char **out)
{
	if (option && *option)
		return choose(var, opt_name, 0, option, choices, out);
	const char *text = env(var);
	if (text)
		return choose(var, var, 1, text, choices, out);
	*out = choices[0];
	return 0;
}

static int valid_chunk(uint64_t v)
{
	return v >= FERRY__CHUNK_MIN && v <= FERRY__CHUNK_MAX && !(v & (v - 1));
}

static int resolve_chunk(size_t option, size_t *out)
{
	const char *text = env("FERRY_CHUNK_SIZE");
	uint64_t v = option ? option : DEFAULT_CHUNK;
	if (option && !valid_chunk(option))
		return ferry__fail(-FERRY_ECONFIG, "chunk_size option %zu: expected %s", option,
				   row("FERRY_CHUNK_SIZE")->values);
	if (!option && text && (ferry__parse_size(text, &v) < 0 || !valid_chunk(v)))
		return invalid("FERRY_CHUNK_SIZE", 1, text, row("FERRY_CHUNK_SIZE")->values);
	*out = (size_t)v;
	return 0;
}

/* An unsigned option in [1, hi], else the variable, else def. */
static int resolve_count(unsigned option, const char *opt_name, const char *var,
			 unsigned long hi, unsigned long def, unsigned *out)
{
	unsigned long v = def;
	if (option > hi)
		return ferry__fail(-FERRY_ECONFIG, "%s option %u: expected 1 to %lu", opt_name,
				   option, hi);
	int rc = option ? 0 : env_uint(var, 1, hi, &v);
	*out = option ? option : (unsigned)v;
	return rc;
}

/* FERRY_PIN_PACE, the one count that may be 0 (first offers in quiet spells only). */
static int resolve_pace(unsigned *out)
{
	unsigned long v = DEFAULT_PIN_PACE;
	int rc = env_uint("FERRY_PIN_PACE", 0, 100, &v);
	*out = (unsigned)v;
	return rc;
}

static unsigned default_threads(void)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	return cores < 1 ? 1 : cores > DEFAULT_MAX_THREADS ? DEFAULT_MAX_THREADS : (unsigned)cores;
}

/* FERRY_GPU wins; LOCAL_RANK (set by torchrun and MPI launchers) comes next. */
static int resolve_gpu(int option, int *out)
{
	unsigned long v = 0;
	int rc = 0;
	if (option >= 0)
		v = (unsigned long)option;
	else if (env("FERRY_GPU"))
		rc = env_uint("FERRY_GPU", 0, MAX_GPU, &v);
	else
		rc = env_uint("LOCAL_RANK", 0, MAX_GPU, &v);
	*out = (int)v;
	return rc;
}

static int resolve_direct(int option, int *out)
{
	static const char *const words[] = { "auto", "0", "1", NULL };
	const char *word = words[0];
	if (option > FERRY_DIRECT_AUTO)
		return ferry__fail(-FERRY_ECONFIG, "direct option %d: expected -1 (FERRY_ODIRECT), "
				   "0 (never), 1 (always) or 2 (auto)", option);
	*out = option;
	if (option >= 0)
		return 0;
	int rc = resolve_choice(NULL, NULL, "FERRY_ODIRECT", words, &word);
	*out = word == words[0] ? FERRY_DIRECT_AUTO : word == words[1] ? FERRY_DIRECT_NEVER
								   : FERRY_DIRECT_ALWAYS;
	return rc;
}

const char *ferry__direct_name(int direct)
{
	return direct == FERRY_DIRECT_AUTO ? "auto" : direct == FERRY_DIRECT_ALWAYS ? "on" : "off";
}

/* A size setting whose default is MemAvailable / divisor (0 when that cannot
 * be read: FERRY_CACHE_BUDGET's cold files then go direct, FERRY_PIN_BUDGET's
 * zero copy is off, FERRY_PIN_RESERVE reserves nothing). */
static int resolve_memory_share(const char *name, unsigned divisor, uint64_t *out)
{
	const char *text = env(name);
	uint64_t avail = 0;
	*out = 0;
	if (text && ferry__parse_size(text, out) < 0)
		return invalid(name, 1, text, row(name)->values);
	if (!text && ferry__io_mem_available(&avail) == 0)
		*out = avail / divisor;
	return 0;
}

/* The CUDA device's test gates and how its threads wait. */
static int resolve_cuda(struct ferry__device_params *p)
{
	static const char *const gates[] = { "auto", "kernel", NULL };
	/* In the order of enum ferry__wait_mode. */
	static const char *const waits[] = { "spin", "poll", "block", NULL };
	const char *gate, *wait;
	int rc = resolve_choice(NULL, NULL, "FERRY_CUDA_GATE", gates, &gate);
	if (rc == 0)
		rc = resolve_choice(NULL, NULL, "FERRY_CUDA_WAIT", waits, &wait);
	if (rc < 0)
		return rc;
	p->gate_kernel = !strcmp(gate, "kernel");
	for (int i = 0; waits[i]; i++)
		if (!strcmp(wait, waits[i]))
			p->wait = (enum ferry__wait_mode)i;
	return 0;
}

static int resolve_names(const struct ferry_ctx_options *opt, struct ferry__settings *s)
{
	static const char *const devices[] = { "auto", "cuda", "host", NULL };
	static const char *const ios[] = { "auto", "posix", "uring", "cufile", NULL };
	int rc = resolve_choice(opt->device, "device", "FERRY_DEVICE", devices, &s->device);
	if (rc == 0)
		rc = resolve_choice(opt->io, "io", "FERRY_IO", ios, &s->io);
	if (rc == 0)
		rc = resolve_cuda(&s->params);
	s->trace_path = env("FERRY_TRACE");
	return rc;
}

/* Lanes share the buffers: fewer lanes where each cannot have MIN_LANE_BUFFERS. */
static int resolve_staging(const struct ferry_ctx_options *opt, struct ferry__settings *s)
{
	int rc = resolve_chunk(opt->chunk_size, &s->chunk_size);
	if (rc == 0)
		rc = resolve_count(opt->max_buffers, "max_buffers", "FERRY_MAX_BUFFERS",
				   FERRY_BUFFERS_MAX, DEFAULT_MAX_BUFFERS, &s->max_buffers);
	if (rc == 0)
		rc = resolve_count(opt->lanes, "lanes", "FERRY_LANES", FERRY__MAX_LANES,
				   DEFAULT_LANES, &s->lanes);
	if (rc < 0)
		return rc;
	unsigned fit = s->max_buffers / MIN_LANE_BUFFERS;
	if (s->lanes > fit)
		s->lanes = fit ? fit : 1;
	s->launch_after = LAUNCH_AFTER;
	s->initial_buffers = s->max_buffers / s->lanes;
	if (s->initial_buffers > LANE_START_BUFFERS)
		s->initial_buffers = LANE_START_BUFFERS;
	return 0;
}

int ferry__settings_resolve(const struct ferry_ctx_options *opt, struct ferry__settings *out)
{
	static const struct ferry_ctx_options from_env = { .gpu = -1, .direct = -1 };
	struct ferry__settings s = { 0 };
	if (!opt)
		opt = &from_env;
	int rc = resolve_names(opt, &s);
	if (rc == 0)
		rc = resolve_gpu(opt->gpu, &s.params.ordinal);
	if (rc == 0)
		rc = resolve_count(opt->threads, "threads", "FERRY_THREADS", FERRY_THREADS_MAX,
				   default_threads(), &s.threads);
	if (rc == 0)
		rc = resolve_direct(opt->direct, &s.direct);
	if (rc == 0)
		rc = resolve_memory_share("FERRY_CACHE_BUDGET", 2, &s.cache_budget);
	if (rc == 0)
		rc = resolve_memory_share("FERRY_PIN_BUDGET", 4, &s.pin_budget);
	if (rc == 0)
		rc = resolve_memory_share("FERRY_PIN_RESERVE", 8, &s.pin_reserve);
	if (rc == 0)
		rc = resolve_pace(&s.pin_pace);
	if (rc == 0)
		rc = resolve_staging(opt, &s);
	if (rc == 0)
		*out = s;
	return rc;
}

int ferry__settings_shard(int shard_id, int num_shards, unsigned *shard, unsigned *nshards)
{
	unsigned long id = 0, n = 1;
	int rc = 0;
	if (num_shards > 0)
		n = (unsigned long)num_shards;
	else if ((rc = env_uint("WORLD_SIZE", 1, MAX_RANKS, &n)) == 0)
		shard_id = -1;
	if (rc == 0 && shard_id >= 0)
		id = (unsigned long)shard_id;
	else if (rc == 0)
		rc = env_uint("RANK", 0, MAX_RANKS - 1, &id);
	if (rc == 0 && id >= n)
		rc = ferry__fail(-FERRY_ECONFIG, "reader: shard %lu of %lu does not exist", id, n);
	*shard = (unsigned)id;
	*nshards = (unsigned)n;
	return rc;
}
