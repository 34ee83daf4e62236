/*
 * libFuzzer target for the reader's option parsing that lives in the library:
 * file lists (ferry__dataset_list on a file_list) and regions of interest
 * (ferry__roi_spec_from_config, ferry__roi_resolve, ferry__region_runs). The
 * CLI's own string parsing (--roi-start 1,2 ...) is static in tools/ and is
 * not reached here.
 *
 * Input: a selector byte; 0 mod 2: the rest is a file list; 1: the rest
 * encodes an ROI config (counts, flags, values) and an array shape, and what
 * a successful parse promises is checked: a region inside its bounds, runs
 * that stay inside the payload and the output, sorted by source.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "reader/reader.h"

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "fuzz_reader_options: %s failed at line %d\n", \
				#cond, __LINE__);                                    \
			abort();                                                     \
		}                                                                    \
	} while (0)

#define MAX_ARRAY_BYTES (1u << 20) /* keep regions small enough to walk */

static void fuzz_file_list(const uint8_t *data, size_t size)
{
	int fd = memfd_create("list", 0);
	char path[64];
	struct ferry__dataset ds;
	if (fd < 0)
		return;
	CHECK(write(fd, data, size) == (ssize_t)size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct ferry_reader_config cfg = { .root = "/data", .file_list = path };
	if (ferry__dataset_list(&cfg, &ds) == 0) {
		CHECK(ds.n > 0);
		for (size_t i = 0; i < ds.n; i++) {
			CHECK(ds.keys[i][0] && ds.keys[i][0] != '#' && ds.keys[i][0] != ' ');
			CHECK(!strchr(ds.keys[i], '\n'));
			if (ds.keys[i][0] != '/')
				CHECK(!strncmp(ds.paths[i], "/data/", 6) &&
				      !strcmp(ds.paths[i] + 6, ds.keys[i]));
			if (i)
				CHECK(strcmp(ds.keys[i - 1], ds.keys[i]) <= 0);
		}
		ferry__dataset_free(&ds);
	}
	close(fd);
}

/* Takes n bytes from the input (zeros past its end). */
static void take(const uint8_t **p, const uint8_t *end, void *out, size_t n)
{
	size_t have = (size_t)(end - *p) < n ? (size_t)(end - *p) : n;
	memset(out, 0, n);
	memcpy(out, *p, have);
	*p += have;
}

static void check_runs(const struct ferry__region *rg, const int64_t *shape, size_t isz)
{
	struct ferry__run *runs;
	uint64_t src_bytes = isz, out_bytes = rg->count * isz, last = 0;
	for (int d = 0; d < rg->ndim; d++)
		src_bytes *= (uint64_t)shape[d];
	int64_t n = ferry__region_runs(rg, shape, isz, &runs);
	for (int64_t k = 0; k < n; k++) {
		CHECK(runs[k].len > 0);
		CHECK(runs[k].src + runs[k].len <= src_bytes);
		CHECK(runs[k].dst + runs[k].len <= out_bytes);
		CHECK(runs[k].src >= last);
		last = runs[k].src + runs[k].len;
	}
	free(runs);
}

static void fuzz_roi(const uint8_t *p, const uint8_t *end)
{
	uint8_t hdr[4];
	int64_t start[33], stop[33], shp[33], shape[FERRY_MAX_DIMS];
	double start_rel[33], stop_rel[33], shape_rel[33];
	int axes[33];
	struct ferry__roi_spec spec;
	struct ferry__region rg;
	take(&p, end, hdr, sizeof(hdr));
	int nvals = hdr[0] % 35 - 1, ndim = hdr[2] % 7, flags = hdr[1];
	size_t isz = 1u << (hdr[3] % 4);
	uint64_t bytes = isz;
	for (int d = 0; d < ndim; d++) {
		uint8_t e;
		take(&p, end, &e, 1);
		shape[d] = e % 17;
		bytes *= (uint64_t)shape[d] + 1;
	}
	take(&p, end, start, sizeof(start));
	take(&p, end, stop, sizeof(stop));
	take(&p, end, shp, sizeof(shp));
	take(&p, end, start_rel, sizeof(start_rel));
	take(&p, end, stop_rel, sizeof(stop_rel));
	take(&p, end, shape_rel, sizeof(shape_rel));
	take(&p, end, axes, sizeof(axes));
	struct ferry_reader_config cfg = {
		.roi_nvals = nvals,
		.roi_start = flags & 1 ? start : NULL,
		.roi_start_rel = flags & 2 ? start_rel : NULL,
		.roi_end = flags & 4 ? stop : NULL,
		.roi_end_rel = flags & 8 ? stop_rel : NULL,
		.roi_shape = flags & 16 ? shp : NULL,
		.roi_shape_rel = flags & 32 ? shape_rel : NULL,
		.roi_axes = flags & 64 ? axes : NULL,
		.out_of_bounds_policy = (enum ferry_oob_policy)(hdr[3] >> 4) % 4,
	};
	if (ferry__roi_spec_from_config(&cfg, &spec) < 0 || bytes > MAX_ARRAY_BYTES)
		return;
	if (ferry__roi_resolve(&spec, ndim, shape, "fuzz.npy", &rg) < 0)
		return;
	uint64_t count = 1;
	CHECK(rg.ndim == ndim);
	for (int d = 0; d < ndim; d++) {
		CHECK(rg.shape[d] >= 0);
		if (spec.policy != FERRY_OOB_PAD)
			CHECK(rg.start[d] >= 0 && rg.start[d] + rg.shape[d] <= shape[d]);
		count *= (uint64_t)rg.shape[d];
	}
	CHECK(rg.count == count);
	if (count * isz <= MAX_ARRAY_BYTES)
		check_runs(&rg, shape, isz);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] % 2 == 0)
		fuzz_file_list(data + 1, size - 1);
	else
		fuzz_roi(data + 1, data + size);
	return 0;
}
