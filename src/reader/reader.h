/*
 * The dataset reader. Its files, each with one job:
 *   dataset.c   listing, sharding and shuffling a dataset
 *   roi.c       region-of-interest math
 *   headers.c   the header cache
 *   rows.c      rows as samples: every file's rows numbered across files
 *   plan.c      a batch's plan: headers, layout in batch memory, work items
 *   fetch.c     the work items: files read into staging, copies queued
 *   fetch_files.c  small files read whole, many per system call
 *   pipeline.c  the window of batches in flight, the IO threads, the queue
 *   api.c       the public ferry_reader_* and ferry_batch_* calls
 * See docs/design.md, "The batch path".
 */
#ifndef FERRY_READER_H
#define FERRY_READER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "context/context.h"
#include "ferry.h"
#include "io/io.h"
#include "load/load.h"

/* ---- dataset.c ---- */

/* The files of a dataset, sorted by key (the path relative to the root). */
struct ferry__dataset {
	char **paths;   /* what to open: root/key, or key when absolute or no root */
	char **keys;    /* the sort key */
	size_t n;
};

/* Lists the files cfg names (root + filter, file_list or files), sorted.
 * Returns 0, -FERRY_ECONFIG (no source, several sources, no files) or -errno,
 * with a message naming the directory or list. */
int ferry__dataset_list(const struct ferry_reader_config *cfg, struct ferry__dataset *out);
void ferry__dataset_free(struct ferry__dataset *ds);

/* Shard i of n over count samples, as DALI computes it:
 * [floor(count*i/n), floor(count*(i+1)/n)). */
void ferry__shard_range(uint64_t count, unsigned shard, unsigned nshards, uint64_t *begin,
			uint64_t *end);

/* The shard epoch reads: shard, or (shard + epoch) % nshards. */
unsigned ferry__epoch_shard(unsigned shard, unsigned nshards, int stick, uint64_t epoch);

/* A portable generator: splitmix64. */
uint64_t ferry__splitmix64(uint64_t *state);

/* Fisher-Yates shuffle of idx[0..n) from a generator seeded with (seed, epoch):
 * the same permutation on every machine. */
void ferry__shuffle(uint64_t *idx, uint64_t n, uint64_t seed, uint64_t epoch);

/* ---- roi.c ---- */

/* A region of interest, as the config gives it, validated. */
struct ferry__roi_spec {
	int n;                          /* values in each array; 0: no ROI */
	int axes[FERRY_MAX_DIMS];
	int has_start, has_end, has_shape;  /* 0: not given, 1: absolute, 2: relative */
	int64_t start[FERRY_MAX_DIMS], end[FERRY_MAX_DIMS], shape[FERRY_MAX_DIMS];
	double start_rel[FERRY_MAX_DIMS], end_rel[FERRY_MAX_DIMS], shape_rel[FERRY_MAX_DIMS];
	enum ferry_oob_policy policy;
};

/* What one sample's output is, in C-order coordinates of its source array:
 * output index o along axis d reads source index start[d] + o. */
struct ferry__region {
	int ndim;
	int64_t start[FERRY_MAX_DIMS];  /* may be negative when padding */
	int64_t shape[FERRY_MAX_DIMS];  /* the output shape */
	uint64_t count;                 /* output elements */
	int padded;                     /* some output elements lie outside the source */
};

/* One contiguous piece: len bytes at byte offset src of the C-order payload go
 * to byte offset dst of the output. */
struct ferry__run {
	uint64_t src, dst, len;
};

/* Validates the config's ROI fields into spec. Returns 0 or -FERRY_ECONFIG. */
int ferry__roi_spec_from_config(const struct ferry_reader_config *cfg,
				struct ferry__roi_spec *spec);

/* Resolves spec against an array of rank ndim and shape: the region to output.
 * Returns 0, -FERRY_EBOUNDS (policy error, or end before start) or
 * -FERRY_ECONFIG (an axis the array lacks), with a message naming path. */
int ferry__roi_resolve(const struct ferry__roi_spec *spec, int ndim, const int64_t *shape,
		       const char *path, struct ferry__region *out);

/* The region of row `row` of an array of rank ndim >= 1 and shape, in the
 * array's coordinates: [row, row + 1) on axis 0, spec (resolved on the row's
 * axes, the array's after the first) on the others. Returns 0 or as
 * ferry__roi_resolve does. */
int ferry__roi_resolve_row(const struct ferry__roi_spec *spec, int ndim, const int64_t *shape,
			   int64_t row, const char *path, struct ferry__region *out);

/*
 * The runs that copy the in-bounds part of region out of a C-order payload of
 * the given shape and itemsize, sorted by src, adjacent runs merged. *runs is
 * malloc'd (NULL when there are none). Returns the number of runs, or -ENOMEM
 * / -FERRY_EUNSUPPORTED (too many runs).
 */
int64_t ferry__region_runs(const struct ferry__region *rg, const int64_t *shape, size_t itemsize,
			   struct ferry__run **runs);

/* Writes fill converted to dtype (native byte order) into out (itemsize
 * bytes): saturated and rounded toward zero for integers, v != 0 for bool, the
 * real part for complex. Returns the itemsize, or 0 for an invalid dtype. */
size_t ferry__fill_element(enum ferry_dtype dtype, double fill, void *out);

/* ---- the reader and its batches ---- */

enum batch_state { BATCH_FREE, BATCH_LOADING, BATCH_READY, BATCH_HELD };

/* How a sample is fetched. */
enum fetch_kind {
	FETCH_PACK, /* read with others into one staging buffer: one copy for all
		     * (big-endian ones swapped there by the CPU) */
	FETCH_BIG,  /* larger than a chunk, or read with O_DIRECT or into device
		     * staging: the loader's chunked, parallel path */
	FETCH_SLOW, /* transposed, swapped and larger than a chunk, padded
		     * around its region, or a stored .npz
		     * member that does not pack: loaded whole (its CRC-32
		     * checked); a whole array queued on the batch's ticket, a
		     * region loaded into scratch, waited for and copied out */
};

/* One sample of a batch while it loads. */
struct slot {
	uint64_t file;          /* dataset index */
	int64_t row;            /* rows as samples: the file's row; else -1 */
	int skipped, error;
	char *msg;              /* the error's message (names the file) */
	int cached;             /* h came from the cache: checked against the file when opened */
	int stale;              /* the cache was wrong about the file: parse again */
	int fetched;            /* read with others in one system call (fetch_files.c) */
	struct ferry__file *f;  /* open from the probe until the fetch closes it */
	struct ferry__member *member; /* npz_key: the archive's member, open with f (malloc'd) */
	struct ferry__npy_header h;
	unsigned char head[FERRY__HEAD_MAX]; /* the header bytes h was parsed from */
	struct ferry__file_id id; /* the file h was parsed from */
	struct ferry__region rg;
	enum fetch_kind kind;
	uint64_t nbytes;        /* output bytes */
	uint64_t offset;        /* the output's offset in batch memory */
	struct ferry__load_stats stats; /* what reading it took */
};

enum item_kind { ITEM_PLAN, ITEM_PROBE, ITEM_FETCH };

/* A piece of work for an IO thread: plan a batch, probe one slot's file, or
 * fetch outputs [first, first + count) (a FETCH_PACK run, or one sample). */
struct item {
	enum item_kind kind;
	unsigned first, count;
};

struct ferry_batch_layout {
	int dense;              /* every output has one dtype and shape: [B, ...] */
	enum ferry_dtype dtype;
	int ndim;               /* of a sample */
	int64_t shape[FERRY_MAX_DIMS];
	uint64_t sample_bytes;
	uint64_t bytes;         /* used bytes of batch memory */
};

struct ferry_batch {
	struct ferry_reader *r;
	enum batch_state state;
	atomic_int held;               /* handed out and not yet released */
	struct ferry_batch *next;      /* in the queue or in the free list */
	struct ferry_batch *work_next; /* in the work list */
	uint64_t epoch, index;
	struct ferry_epoch_info info;
	struct slot *slots;            /* the batch's real samples */
	unsigned nslots;
	uint64_t *samples;             /* their sample numbers, as scheduled (slots_cap);
					* the ITEM_PLAN makes the slots from them */
	unsigned *out;                 /* the delivered samples: slot indices, rows in order */
	unsigned nout;
	unsigned pad_asked;            /* pad_last_batch rows the schedule asks for */
	unsigned npad;                 /* padding rows after the outputs, copies of the last */
	uint64_t pad_offset, pad_stride; /* where the padding rows lie in batch memory */
	struct item *items;
	unsigned nitems, items_cap;
	uint64_t run_cap;              /* the most a PACK item of it spans (plan.c) */
	enum item_kind phase;          /* the kind of its items now */
	unsigned next_item;            /* the next item an IO thread takes (reader lock) */
	/* Items not yet finished: set under the reader lock when the items are
	 * listed, counted down without it by the threads that ran them. */
	_Atomic unsigned items_left;
	unsigned replans;              /* plans made again because a file changed */
	char *mem;                     /* device memory of the samples */
	size_t mem_cap;
	struct ferry_batch_layout lay;
	struct ferry__ticket tickets[FERRY__MAX_LANES]; /* the copies, per lane */
	int error;
	char *msg;
	int skip_error;                /* the last skipped file's error, and its message */
	char *skip_msg;
	uint64_t bytes_read, bytes_delivered, skipped, real;
	uint64_t files_buffered, files_direct, files_mapped; /* the slots' files, by their path */
};

struct header_entry;

struct ferry_reader {
	ferry_ctx *ctx;
	const struct ferry__loader *ld;
	struct ferry__device *dev;
	struct ferry__dataset ds;
	struct ferry__roi_spec roi;
	unsigned batch_size, threads, depth, shard, nshards;
	unsigned slots_cap;          /* real samples a batch may hold: min(batch, largest shard) */
	uint64_t epochs, seed;
	int stick, pad, shuffle, shuffle_all, cache_on, packable;
	int host_staging;            /* staging is pinned host memory, which the CPU can write */
	int rows;                    /* FERRY_SAMPLES_ROWS */
	char *key;                   /* npz_key: the member every archive gives (owned), or NULL */
	uint64_t nsamples;           /* files, or rows of all files */
	uint64_t *row_start;         /* rows: the first sample of each file, ds.n + 1 entries */
	enum ferry_on_error on_error;
	double fill_value;
	size_t chunk;                /* the staging chunk: the most one PACK run holds */
	struct ferry__pool *pool;    /* the IO threads, each running pipeline_worker */
	struct ferry__stream *side;  /* fills and device-to-device copies of FETCH_SLOW */
	char *name;                  /* the dataset's directory or list, for messages */

	pthread_mutex_t lock;
	pthread_cond_t loaded;       /* a batch finished loading */
	pthread_cond_t work;         /* an item can be taken, or the reader closes */
	int closing;
	unsigned workers;            /* IO threads still in pipeline_worker */
	unsigned idle;               /* of them, those waiting for work */
	struct ferry_batch *queue_head, *queue_tail; /* scheduled, in order */
	unsigned queued;
	struct ferry_batch *work_head, *work_tail;   /* batches with items to take */
	unsigned work_items;         /* items in the work list not yet taken */
	struct ferry_batch *free_list;
	/* Batches the caller released, pushed without the lock (a stack through
	 * their next); ferry__pipeline_next moves them to free_list. */
	struct ferry_batch *_Atomic returned;
	struct ferry_batch **all;    /* every batch object, for close */
	unsigned nall;
	uint64_t batch_bytes;        /* the largest batch memory seen: sizes the window */

	/* The scheduling cursor and the order of its epoch (under lock). */
	uint64_t next_epoch, next_index;
	uint64_t *order, order_n, order_epoch;
	unsigned order_shard;
	int order_valid;

	struct ferry_epoch_info info;
	struct ferry_reader_stats stats;
	uint64_t fingerprint;        /* of what decides the order (ferry_reader_state) */
	uint64_t taken_epoch, taken_index; /* the position after the last batch taken */
	/* The epoch callers are taking batches of, and how many samples it gave. */
	uint64_t consume_epoch, consume_delivered;
	int consume_started;

	struct header_entry *_Atomic *cache; /* one per file, published whole */
	pthread_mutex_t retired_lock;
	struct header_entry *retired;        /* replaced entries, freed at close */
};

/* ---- headers.c ---- */

/* Fills s's header from the cache when it holds file s->file (s->cached set;
 * with npz_key, s->member too). */
int ferry__headers_lookup(struct ferry_reader *r, struct slot *s);
/* Publishes s's header (h, head, id; a stored member's place) for its file,
 * or, for a member the cache does not keep, drops the file's entry. */
void ferry__headers_store(struct ferry_reader *r, const struct slot *s);
/* Frees the cache. */
void ferry__headers_free(struct ferry_reader *r);

/* ---- rows.c ---- */

/* Parses every file's header (into the cache), checks their rows agree, and
 * numbers the rows. Returns 0, -FERRY_EMISMATCH naming two files, or an error. */
int ferry__rows_index(struct ferry_reader *r);
/* The file and row that sample is. */
void ferry__rows_locate(const struct ferry_reader *r, uint64_t sample, uint64_t *file,
			int64_t *row);

/* ---- plan.c ---- */

/* A sample's output shape: its region's, less the row axis in rows mode. */
const int64_t *ferry__slot_shape(const struct slot *s, int *ndim);

/* Records err on the slot with the calling thread's message (naming the file). */
int ferry__slot_fail(struct ferry_reader *r, struct slot *s, int err);
void ferry__slot_close(struct ferry_reader *r, struct slot *s);
int ferry__slot_live(const struct slot *s);
/* Whether s's region is its whole array. */
int ferry__slot_whole(const struct slot *s);
/* Whether s's array lies in its file in Fortran order (of more than one axis):
 * its region's bytes then lie as the C order of the reversed axes. */
int ferry__slot_fortran(const struct slot *s);
/* Parses the header of s's open file into s->h and s->head: with npz_key,
 * the member's (s->member opened). Returns 0 or an error (not recorded). */
int ferry__slot_header(struct ferry_reader *r, struct slot *s);
/* How many bytes of s->head are its header's: a .npy file's first bytes, or
 * its member's .npy header (at s->member->data_at in the archive). */
size_t ferry__slot_head_len(const struct slot *s);
/* Makes b's one item the ITEM_PLAN that plans it on an IO thread. Returns 0
 * or -ENOMEM. */
int ferry__plan_later(struct ferry_batch *b);
/* The ITEM_PLAN item: probe items for the slots the cache does not hold, or
 * the finished plan when it holds them all. Returns 0 or a batch error. */
int ferry__plan(struct ferry_batch *b);
/* The ITEM_PROBE item of slot s: opens its file, parses its header, resolves its region. */
void ferry__probe(struct ferry_batch *b, struct slot *s);
/* After the probes: settles errors, lays the batch out in its memory and
 * makes its fetch items. Returns 0 or the batch's error. */
int ferry__finish_plan(struct ferry_batch *b);
/* Applies on_error to slots that failed since: returns the first error under
 * stop (or a global one), else marks them skipped (b->skipped counts them). */
int ferry__settle(struct ferry_batch *b);

/* ---- fetch.c ---- */

/* Fills b's padding rows with its last output, on the device, once every
 * copy of b has landed. Returns 0 or an error. */
int ferry__fill_padding(struct ferry_batch *b);
/* Runs the FETCH items items[0..n) of batches bs[0..n) (PACK runs of
 * consecutive batches share one staging buffer; other kinds come alone),
 * queueing their copies on the calling thread's lane. */
void ferry__fetch(struct ferry_batch *const *bs, const struct item *items, unsigned n);
/* Launches b's copies that still wait in their lanes' pending batches, once
 * b's items are done: a small batch's copies join a lane's next launch, and
 * otherwise the caller's wait for b launched them and waited a whole copy. */
void ferry__launch_copies(struct ferry_batch *b);
/* Waits until every copy of b has completed. Returns 0 or the first error. */
int ferry__wait_copies(struct ferry_batch *b);

/* ---- fetch_files.c ---- */

/* Reads the outputs of PACK items items[0..n) of bs[] that are whole files
 * with cached headers, many per system call where the loader can, into buf
 * (item j's rows at base[j]); marks them fetched (or stale). The rest are for
 * the per-file path. */
void ferry__fetch_whole_files(struct ferry_batch *const *bs, const struct item *items,
			      unsigned n, char *buf, const size_t *base);
/* Swaps the output of s, a big-endian FETCH_PACK one read raw into host
 * staging at dst, into native byte order (nothing for any other). */
void ferry__swap_output(const struct slot *s, void *dst);
/* Whether item it of b is a run of FETCH_PACK outputs, and the bytes its rows span. */
int ferry__item_packs(const struct ferry_batch *b, const struct item *it);
uint64_t ferry__item_span(const struct ferry_batch *b, const struct item *it);

/* ---- pipeline.c ---- */

/* Batches in flight the window aims at, for batches of batch_bytes:
 * prefetch_depth + 1 when the config gives a depth; else enough samples for
 * every IO thread, within WINDOW_BYTES of batch memory, never fewer than
 * AUTO_DEPTH + 1, at most FERRY_PREFETCH_MAX (batch_bytes 0: the least). */
unsigned ferry__window(const struct ferry_reader *r, uint64_t batch_bytes);

/* Starts the IO threads. Returns 0 or a negative code. */
int ferry__pipeline_start(struct ferry_reader *r);
/* Stops them after the items in progress; waits for every copy. */
void ferry__pipeline_stop(struct ferry_reader *r);
/* Takes the next loaded batch (waiting until deadline, NULL: forever); *out
 * NULL at the end. Lock held. Returns 0, -ETIMEDOUT or a negative code. */
int ferry__pipeline_next(struct ferry_reader *r, struct ferry_batch **out,
			 const struct timespec *deadline);
/* Hands b back for reuse (lock held). */
void ferry__pipeline_release(struct ferry_batch *b);
/* Hands back a batch the caller holds, without the lock: the next
 * ferry__pipeline_next reuses it. A second call for it does nothing. */
void ferry__pipeline_return(struct ferry_batch *b);
/* The epoch before any batch was taken: its sizes (lock held). */
struct ferry_epoch_info ferry__pipeline_first_epoch(struct ferry_reader *r);
/* Starts scheduling at a saved position. Returns 0 or -FERRY_ECONFIG. */
int ferry__pipeline_resume(struct ferry_reader *r, const struct ferry_reader_state *st);
/* Frees every batch object (the pipeline is stopped). */
void ferry__pipeline_free(struct ferry_reader *r);

#endif
