/* Subcommands of the ferry tool and the helpers they share: each command
 * returns the process exit status (0 ok, 1 failure, 2 usage). */
#ifndef FERRY_CLI_H
#define FERRY_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ferry.h"
#include "npy/npy.h"

struct ferry_cli_command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

int ferry_cli_env(int argc, char **argv);
int ferry_cli_info(int argc, char **argv);
int ferry_cli_read(int argc, char **argv);
int ferry_cli_gen(int argc, char **argv);
int ferry_cli_demo(int argc, char **argv);
int ferry_cli_bench(int argc, char **argv);
/* `ferry read --root/--list/--files ...`: the dataset reader (cmd_read_dataset.c). */
int ferry_cli_read_dataset(int argc, char **argv);
/* The dataset reader's part of `ferry read --help`. */
extern const char ferry_cli_dataset_help[];
/* Prints `ferry read --help`: loading files, then reading a dataset. */
void ferry_cli_read_help(FILE *out);

/*
 * Prints "ferry: <message>" on stderr and returns 1. The message is
 * ferry_last_error() when set (prefixed with "what: " unless it already starts
 * with it, so a file is named once), else "what: ferry_strerror(rc)".
 */
int ferry_cli_error(const char *what, int rc);

/* ---- how commands talk (output.c) ---- */

/* Prints "ferry: MESSAGE" on stderr, keeps MESSAGE for ferry_cli_last_message
 * (so --json can carry it) and returns 1. */
int ferry_cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Returns the message of the last failure line printed (by ferry_cli_fail or
 * ferry_cli_error), or "". */
const char *ferry_cli_last_message(void);
/* After getopt_long returned c ('?' or ':', with opterr 0): prints one line
 * naming the option argv[optind - 1] and what is wrong with it, with "try
 * 'ferry COMMAND --help'", and returns 2 (the usage exit status). */
int ferry_cli_bad_option(const char *command, int c, char **argv);
/* Prints one line about an argument COMMAND does not take; returns 2. */
int ferry_cli_bad_argument(const char *command, const char *arg);

/* Each writes n in units that fit into buf and returns buf: "192 B", "64.0
 * KiB", "4.00 MiB" (powers of 1024); bytes per second as "640 MB/s", "1.23
 * GB/s" (powers of 1000, as GB/s is everywhere in ferry); "1.23 s", "12.3
 * ms", "45 us". Three significant digits; never "0.00" for a nonzero value. */
const char *ferry_cli_bytes(uint64_t n, char *buf, size_t len);
const char *ferry_cli_rate(uint64_t bytes, double seconds, char *buf, size_t len);
const char *ferry_cli_seconds(double s, char *buf, size_t len);

/* The progress line: "\rWHAT: 12/64 UNIT, 48.0 MiB of 256 MiB, 1.20 GB/s, ETA
 * 3.00 s" on stderr, only when it is a terminal and the command wants it (not
 * with --json or --quiet); the first update shows at once, then at most four
 * a second; ferry_cli_progress_end clears it. */
struct ferry_cli_progress {
	const char *what, *unit;
	uint64_t start_ns, last_ns;
	uint64_t files, total_files, bytes, total_bytes; /* totals: 0 when unknown */
	int on, shown;
};
void ferry_cli_progress_start(struct ferry_cli_progress *p, const char *what, const char *unit,
			      uint64_t files, uint64_t bytes, int wanted);
void ferry_cli_progress(struct ferry_cli_progress *p, uint64_t files, uint64_t bytes);
void ferry_cli_progress_end(struct ferry_cli_progress *p);

/* Parses a non-negative integer or a size ("4096", "64k", "4M"): it must start
 * with a digit (no sign or space). Returns 0 or -1. */
int ferry_cli_parse_size(const char *text, uint64_t *out);

/*
 * Parses the value text of a numeric option as an integer from lo to hi:
 * decimal digits with an optional k/M/G suffix (powers of 1024), nothing
 * else: no sign, space, trailing bytes or empty string, and no wrap-around.
 * Returns 0 with it in *out, else 2 (the usage exit status) after printing
 * "ferry: OPTION TEXT: expected an integer from LO to HI" when option is
 * not NULL (NULL: the caller names the value itself).
 */
int ferry_cli_parse_uint(const char *option, const char *text, uint64_t lo, uint64_t hi,
			 uint64_t *out);

/* Writes s to out as a JSON string that is valid whatever its bytes: valid
 * UTF-8 as is, control characters (C0, DEL, C1) as \u00XX, and each byte of
 * an invalid UTF-8 sequence as the lone surrogate \udcXX (Python's
 * "surrogateescape", so os.fsencode(json.loads(...)) gives back the bytes). */
void ferry_cli_json_string(FILE *out, const char *s);

/* FILE.npz:KEY names member KEY of an .npz archive (numpy's key: the member's
 * name without .npy): sets *path to a malloc'd copy of FILE.npz and *key into
 * arg; any other arg is a plain file (*key NULL). The split is at the last
 * ".npz:", so a key may hold ':' and a directory may end in .npz. Returns 0
 * or -1 when out of memory. */
int ferry_cli_member_arg(const char *arg, char **path, const char **key);

/* Returns the dtype numpy names name ("float32"), or FERRY_DTYPE_INVALID. */
enum ferry_dtype ferry_cli_dtype_by_name(const char *name);

/* ---- files the dataset reader skipped (read_skips.c) ---- */

struct ferry_cli_skips;
/* Lists cfg's dataset and shard as the reader does. Returns 0 or -1. */
int ferry_cli_skips_open(const struct ferry_reader_config *cfg, struct ferry_cli_skips **out);
/* Notes a real (not padding) sample of epoch; a new epoch finishes the last. */
void ferry_cli_skips_sample(struct ferry_cli_skips *s, uint64_t epoch, const char *path);
/* Finishes the current epoch: its shard's files that gave no sample were skipped. */
void ferry_cli_skips_epoch_done(struct ferry_cli_skips *s);
/* Returns how many distinct files were skipped and points *names at their
 * paths (valid until close), or 0 when the epochs' skips do not add up to
 * reader_count (the reader's files_skipped): the names are then unknown. */
size_t ferry_cli_skips_finish(struct ferry_cli_skips *s, uint64_t reader_count,
			      const char ***names);
void ferry_cli_skips_close(struct ferry_cli_skips *s);

/* ---- the `ferry gen` dataset (gen_data.c) ---- */

/* splitmix64's output step (Steele, Lea, Flood 2014): the formula's mixer. */
uint64_t ferry_cli_gen_mix(uint64_t x);
/* The per-file key of the payload formula: mix(seed ^ mix(index)). */
uint64_t ferry_cli_gen_key(uint64_t seed, uint64_t index);
/* Fills buf with len payload bytes starting at payload offset `offset`. */
void ferry_cli_gen_fill(void *buf, size_t len, uint64_t key, uint64_t offset);
/* Returns the index of the first byte of buf that differs from the payload
 * at offset, or len when all match. */
size_t ferry_cli_gen_check(const void *buf, size_t len, uint64_t key, uint64_t offset);

/* One generated file: what `ferry gen` writes for index, seed, shape, ... */
struct ferry_cli_gen_spec {
	enum ferry_dtype dtype;
	char byteorder;		/* '<', '>' or '|' */
	int fortran_order;
	int ndim;
	int64_t shape[FERRY_MAX_DIMS];
	int version;		/* 0: smallest that fits, else 1, 2 or 3 */
};
/* The largest payload `ferry gen` writes: past the largest header, every
 * offset of the file must fit an off_t. */
#define FERRY_CLI_GEN_MAX_PAYLOAD \
	((uint64_t)INT64_MAX - FERRY__NPY_PREFIX_MAX - FERRY__NPY_MAX_HEADER)
/* The payload bytes of spec (element count times itemsize, overflow checked;
 * a zero dimension makes 0). Returns 0, or -1 when it passes the maximum. */
int ferry_cli_gen_nbytes(const struct ferry_cli_gen_spec *spec, uint64_t *nbytes);
/* Writes path as a .npy of spec whose payload is the formula for key.
 * Returns 0, or 1 after printing "ferry: PATH: reason". */
int ferry_cli_gen_file(const char *path, const struct ferry_cli_gen_spec *spec, uint64_t key,
		       void *scratch, size_t scratch_len);
/* Creates the missing parent directories of path that lie past its first
 * from bytes (path is restored). Returns 0, or -1 with errno set by the mkdir
 * that failed. */
int ferry_cli_make_parents(char *path, size_t from);
/* Creates dir and its missing parents (mkdir -p). Returns 0, or -1 with errno
 * set by the mkdir that failed (EEXIST: dir exists). */
int ferry_cli_mkdirs(const char *dir);
/* Makes dir (with its missing parents) unless it exists, as --dump's OUTDIR.
 * Returns 0, or 1 after printing "ferry: DIR: cannot create the directory:
 * reason". */
int ferry_cli_ensure_dir(const char *dir);
/* Writes len bytes of data to a new file at path, as --dump writes each array:
 * never over an existing file. Returns 0, or 1 after printing "ferry: NAME:
 * cannot write its dump: reason" (NAME: what the dump holds). */
int ferry_cli_write_dump(const char *path, const char *name, const void *data, uint64_t len);
/* Makes dir ready for a dataset: creates it (and its parents) when missing;
 * an existing one must hold nothing but sample_NNNNNN.npy files (a dataset
 * ferry gen or ferry demo wrote) unless force. Returns 0, or 1 after printing why not (naming
 * force_option, unless NULL, as the way to write anyway). */
int ferry_cli_gen_prepare_dir(const char *dir, int force, const char *force_option);
/* Removes dir's sample_NNNNNN.npy files numbered files or more (left by an
 * earlier, larger dataset). Returns how many it removed. */
unsigned ferry_cli_gen_remove_stale(const char *dir, unsigned files);
/* Size of the scratch buffer ferry_cli_gen_file writes through. */
#define FERRY_CLI_GEN_BUFFER (8u << 20)

/* ---- the independent CPU read behind `ferry read --verify` (cpu_read.c) ---- */

/*
 * Reads path with plain stdio and returns its array as ferry promises it:
 * C order, native byte order, converted with the tool's own loops (not
 * src/base/convert.c). *out is malloc'ed (free()), *nbytes its length. Returns 0,
 * or 1 after printing "ferry: PATH: reason".
 */
int ferry_cli_cpu_load(const char *path, void **out, uint64_t *nbytes);
/* Compares got with want (n bytes each); returns 0, or 1 after printing
 * "ferry: PATH: first mismatch at byte N ...". */
int ferry_cli_compare(const char *path, const void *got, const void *want, uint64_t n);

#endif
