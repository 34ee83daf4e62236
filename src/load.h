/*
 * File loading: byte ranges of a file into device memory, chunk by chunk,
 * through the staging engine. Reads start at 4096-aligned offsets (as O_DIRECT
 * needs); the unaligned start of a range is a copy offset into the chunk.
 */
#ifndef FERRY_LOAD_H
#define FERRY_LOAD_H

#include <stdint.h>

#include "context.h"
#include "npy.h"

/* len bytes of the file at offset go to device memory at dst. */
struct ferry__range {
	uint64_t offset;
	uint64_t len;
	char *dst;
};

/* What a load read: for the stats of callers (the reader's bytes-read counter). */
struct ferry__load_stats {
	uint64_t bytes_read;   /* bytes requested from storage (aligned, chunked) */
	uint64_t reads;        /* read requests */
};

/*
 * Reads every range of the open file f into device memory, on up to parallel
 * threads (the caller and pool workers), coalescing ranges that fall into one
 * chunk into one read. Ranges must be sorted by offset and not overlap.
 * Returns 0 once every byte is on the device, or the first error (with a
 * message naming the file). With async (a zeroed ticket, or one used before) it
 * returns 0 once every copy is launched, queued on that ticket and on the lane
 * it names (the calling thread's, ferry__ctx_lane, when the ticket had none):
 * the caller waits for them with ferry__staging_wait(async->stg, async), which
 * also reports
 * a copy failing later, and must before async goes away. After an error no
 * copy is left in flight either way. stats may be NULL; it is added to.
 */
int ferry__load_ranges(ferry_ctx *ctx, struct ferry__file *f, const struct ferry__range *ranges,
		       unsigned n, unsigned parallel, struct ferry__ticket *async,
		       struct ferry__load_stats *stats);

/* Reads and validates the header of the open file f (against its size too). */
int ferry__load_header(struct ferry__file *f, struct ferry__npy_header *h);

/* Loads the payload of f, whose header is h, into dst as C order, native byte
 * order (converting on the host when the file is big-endian or Fortran order).
 * async as for ferry__load_ranges (a converted payload is complete on return). */
int ferry__load_payload(ferry_ctx *ctx, struct ferry__file *f, const struct ferry__npy_header *h,
			void *dst, unsigned parallel, struct ferry__ticket *async,
			struct ferry__load_stats *stats);

/* Fills ferry_array_info from a parsed header. */
void ferry__info_from_header(const struct ferry__npy_header *h, struct ferry_array_info *out);

#endif
