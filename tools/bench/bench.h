/* `ferry bench` (cmd_bench.c and bench_*.c): what its parts share. */
#ifndef FERRY_BENCH_H
#define FERRY_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "ferry.h"

#define FERRY_BENCH_MAX_RUNS 512
#define FERRY_BENCH_MAX_THREADS 64
#define FERRY_BENCH_MAX_BATCH_SIZES 16

/* The files one run loads: payload sizes and offsets come from their headers. */
struct ferry_bench_dataset {
	char dir[4096];
	char workload[64];
	unsigned count;
	char **paths;
	uint64_t *nbytes;       /* payload bytes of each file */
	uint64_t *data_offset;  /* where each payload starts */
	uint64_t *file_size;    /* bytes of each file */
	uint64_t total_bytes;   /* sum of nbytes */
	uint64_t max_file_size; /* of file_size */
};

/* Cold-cache runs: how the page cache is kept out of them. */
enum ferry_bench_cold {
	FERRY_BENCH_COLD_DROP,    /* echo 3 > /proc/sys/vm/drop_caches before each run */
	FERRY_BENCH_COLD_DIRECT,  /* not permitted: O_DIRECT reads only */
};

/* What the whole bench was asked to do. */
struct ferry_bench_options {
	int json;
	const char *dir;
	const char *workload;   /* large, medium, small or a label */
	const char *series;     /* a label for merged results ("matrix") */
	unsigned files;         /* 0: the workload's, or every .npy in dir */
	uint64_t size;          /* payload bytes per file (0: the workload's) */
	int warm, cold;         /* --cache */
	const char *cold_method; /* "auto", "drop_caches" or "o_direct" */
	unsigned tools;         /* FERRY_BENCH_TOOL_* bits */
	unsigned backends;      /* FERRY_BENCH_BACKEND_* bits */
	unsigned threads[FERRY_BENCH_MAX_THREADS];
	unsigned nthreads;      /* 0: the default sweep */
	unsigned callers;       /* ferry: threads calling ferry_load_into (0: auto) */
	size_t chunk;           /* 0: each tool's default */
	double seconds_limit;   /* each run stops after this (s) */
	double min_seconds;     /* warm runs repeat the dataset for at least this (s) */
	double budget_seconds;  /* the whole bench; later runs are skipped (0: none) */
	int ceilings_only;
	const char *device;     /* ferry_ctx_options.device (NULL: FERRY_DEVICE / auto) */
	/* reader rows (tool reader) and the read-only ceiling */
	unsigned batch_sizes[FERRY_BENCH_MAX_BATCH_SIZES];
	unsigned nbatch_sizes;  /* 0: 1, 4, 32, 256 */
	unsigned reader_threads[FERRY_BENCH_MAX_THREADS];
	unsigned nreader_threads; /* 0: the reader's default only (0 = the context's) */
	unsigned ceiling_threads; /* read-only ceiling's threads (0: the cores, at most 64) */
	int verify;             /* reader rows check every byte against a CPU read */
	double reader_warmup;   /* warm reader rows: seconds after the first batch not counted */
};

enum {
	FERRY_BENCH_TOOL_FERRY = 1u << 0,
	FERRY_BENCH_TOOL_NAIVE_C = 1u << 1,
	FERRY_BENCH_TOOL_TUNED_PREAD = 1u << 2,
	FERRY_BENCH_TOOL_CUFILE_PER_FILE = 1u << 3,
	FERRY_BENCH_TOOL_READER = 1u << 4,
};

enum {
	FERRY_BENCH_BACKEND_POSIX = 1u << 0,
	FERRY_BENCH_BACKEND_POSIX_DIRECT = 1u << 1,
	FERRY_BENCH_BACKEND_URING = 1u << 2,
	FERRY_BENCH_BACKEND_URING_DIRECT = 1u << 3,
	FERRY_BENCH_BACKEND_CUFILE = 1u << 4,
};

/* One measured (or unavailable) configuration. */
struct ferry_bench_run {
	char tool[32];
	char backend[32];
	const char *cache;       /* "warm" or "cold" */
	const char *cold_method; /* "drop_caches", "o_direct" or NULL */
	unsigned threads;
	unsigned callers;        /* threads calling the tool's per-file function */
	size_t chunk;            /* 0: not applicable */
	unsigned batch_size;     /* reader rows: samples a batch (0: not applicable) */
	int verified;            /* reader rows: every byte was checked (--verify) */
	double first_batch_s;    /* reader rows: ferry_reader_open to the first batch (0: n/a) */
	const char *ceiling;     /* what ratio_to_ceiling divides by (NULL: none) */
	double ceiling_gbps;     /* its value (0: not measured) */
	double gbps, files_per_s, cpu_s_per_gb, ratio_to_ceiling;
	double seconds;
	uint64_t bytes, files;
	int available;
	int best;                /* the fastest of its tool, backend and cache */
	char note[320];
};

/* Ceilings: 0 means not measured (JSON null). */
struct ferry_bench_ceilings {
	double pinned_h2d_gbps;
	double storage_direct_gbps;
	double page_cache_gbps;
	double read_only_gbps, read_only_files_per_s; /* plain open/fstat/read/close, warm */
	char pinned_h2d_note[320], storage_direct_note[320], page_cache_note[320];
	char read_only_note[320];
};

struct ferry_bench_report {
	char machine[256];
	char date[64];
	char device[256];
	char device_kind[16];
	struct ferry_bench_ceilings ceilings;
	struct ferry_bench_run runs[FERRY_BENCH_MAX_RUNS];
	unsigned nruns;
	char notes[4][320];
	unsigned nnotes;
};

/* How long one run may take and whether it repeats the dataset. */
struct ferry_bench_limits {
	double seconds_limit;
	double min_seconds; /* 0: one pass */
};

/* What a timed run measured. */
struct ferry_bench_measure {
	double seconds, cpu_seconds;
	uint64_t bytes, files;
	int error;             /* first error (0: none) */
	char message[256];     /* its text */
};

/*
 * A tool that loads one file at a time: per-thread state made outside the
 * timed part, then load_one for file indices until the run ends, then finish
 * (inside the timed part: wait for outstanding copies) and fini (outside).
 */
struct ferry_bench_tool {
	void *arg;
	int (*thread_init)(void *arg, unsigned thread, void **state);
	int (*load_one)(void *arg, void *state, unsigned file);
	int (*finish)(void *arg, void *state); /* may be NULL */
	void (*thread_fini)(void *arg, void *state);
};

/* ---- bench_dataset.c ---- */

/* Lists the .npy files of opt->dir (generating the workload there first when
 * it is missing) and reads their headers. Returns 0, or 1 after a message. */
int ferry_bench_dataset_open(const struct ferry_bench_options *opt, struct ferry_bench_dataset *ds);
void ferry_bench_dataset_close(struct ferry_bench_dataset *ds);
/* Workload presets: files and payload bytes. Returns 0, or -1 when unknown. */
int ferry_bench_workload_preset(const char *name, unsigned *files, uint64_t *size);

/* Returns 1 when writing 3 to /proc/sys/vm/drop_caches works (it drops them). */
int ferry_bench_drop_caches(void);
/* Reads every file once with buffered reads so the page cache holds them. */
void ferry_bench_warm_files(const struct ferry_bench_dataset *ds);

/* ---- bench_drive.c ---- */

/* Runs tool on threads threads over ds (files split by a shared counter) and
 * measures wall time, process CPU time, bytes (payload) and files. */
void ferry_bench_drive(const struct ferry_bench_dataset *ds, const struct ferry_bench_limits *lim,
		       unsigned threads, const struct ferry_bench_tool *tool,
		       struct ferry_bench_measure *out);
/* Fills a run's rates from a measure (available, or not with the error as note). */
void ferry_bench_fill_run(struct ferry_bench_run *run, const struct ferry_bench_measure *m);
/* Process user + system CPU seconds so far. */
double ferry_bench_cpu_seconds(void);
/* Cores online (at least 1). */
unsigned ferry_bench_cores(void);

/* ---- bench_ceilings.c ---- */

/* Measures the three ceilings on ctx's device and the dataset. */
void ferry_bench_ceilings(ferry_ctx *ctx, const struct ferry_bench_dataset *ds,
			  const struct ferry_bench_options *opt, struct ferry_bench_ceilings *out);

/* ---- read_only.c ---- */

/* The read-only ceiling: threads threads open, fstat, read whole and close the
 * files into private host memory (each thread's own buffer), nothing else; no
 * ferry code on the read path. O_DIRECT (aligned buffer) when direct. */
void ferry_bench_read_only(const struct ferry_bench_dataset *ds,
			   const struct ferry_bench_limits *lim, unsigned threads, int direct,
			   struct ferry_bench_measure *out);
/* Its thread count: opt->ceiling_threads, else the cores (at most 64). */
unsigned ferry_bench_read_only_threads(const struct ferry_bench_options *opt);

/* ---- reader.c ---- */

/* A context for the reader rows: the user's defaults (FERRY_* variables
 * included) on opt->device; O_DIRECT reads when direct (cold o_direct). */
int ferry_bench_reader_context(const struct ferry_bench_options *opt, int direct, ferry_ctx **out);
/* The C reader on ctx over ds (ferry_reader_open with ds's files, batch_size
 * batch, threads IO threads (0: the context's), prefetch_depth 0), taking
 * each batch as the stacked array; with opt->verify every byte of every batch
 * checked against a CPU read of its file. Fills run (backend, threads,
 * batch_size, rates, verified, note). */
void ferry_bench_run_reader(ferry_ctx *ctx, const struct ferry_bench_options *opt,
			    const struct ferry_bench_dataset *ds,
			    const struct ferry_bench_limits *lim, unsigned batch, unsigned threads,
			    struct ferry_bench_run *run);

/* ---- bench_tools.c ---- */

/* Each fills run (tool, backend, threads, chunk, rates, available, note). */
void ferry_bench_run_ferry(const struct ferry_bench_options *opt,
			   const struct ferry_bench_dataset *ds, const struct ferry_bench_limits *lim,
			   const char *backend, unsigned threads, struct ferry_bench_run *run);
void ferry_bench_run_naive_c(const struct ferry_bench_options *opt,
			     const struct ferry_bench_dataset *ds,
			     const struct ferry_bench_limits *lim, struct ferry_bench_run *run);
void ferry_bench_run_tuned_pread(ferry_ctx *ctx, const struct ferry_bench_options *opt,
				 const struct ferry_bench_dataset *ds,
				 const struct ferry_bench_limits *lim, unsigned threads, int direct,
				 struct ferry_bench_run *run);
void ferry_bench_run_cufile_per_file(const struct ferry_bench_options *opt,
				     const struct ferry_bench_dataset *ds,
				     const struct ferry_bench_limits *lim, unsigned threads,
				     struct ferry_bench_run *run);

/* ---- bench_report.c ---- */

void ferry_bench_print_json(const struct ferry_bench_report *r,
			    const struct ferry_bench_options *opt,
			    const struct ferry_bench_dataset *ds);
void ferry_bench_print_table(const struct ferry_bench_report *r,
			     const struct ferry_bench_options *opt,
			     const struct ferry_bench_dataset *ds);
/* The progress line: "\rbench: <text>" on stderr when it is a terminal and
 * not disabled (NULL: clears the line); the text labels the run in hand. */
void ferry_bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Adds the run's files, bytes, rate and ETA (seconds) to the label's line. */
void ferry_bench_progress_run(uint64_t files, uint64_t bytes, double elapsed, double eta);
/* No progress line at all (--json). */
void ferry_bench_progress_disable(void);
/* Returns 1 when the progress line shows. */
int ferry_bench_progress_wanted(void);

#endif
