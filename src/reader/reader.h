/*
 * The dataset reader's internals: listing, sharding and shuffling a dataset
 * (dataset.c), and region-of-interest math (reader_roi.c). reader.c puts them
 * together with prefetching and batch memory.
 */
#ifndef FERRY_READER_H
#define FERRY_READER_H

#include <stddef.h>
#include <stdint.h>

#include "ferry.h"

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

/* ---- reader_roi.c ---- */

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

#endif
