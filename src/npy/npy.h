/*
 * The NPY format: parses and validates .npy headers from bytes, writes them for
 * tests and `ferry gen`. No IO, no allocation, no globals: every function works on
 * the bytes it is given and never reads past their length.
 *
 * A file is: "\x93NUMPY", a major and a minor version byte, the header length
 * (little-endian u16 for version 1.0, u32 for 2.0 and 3.0), then the header: a
 * Python dict literal with exactly the keys 'descr', 'fortran_order' and 'shape',
 * padded with spaces and ended by '\n'. The payload follows it.
 */
#ifndef FERRY_NPY_H
#define FERRY_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "ferry.h"

struct ferry__npy_header {
	int major, minor;	/* 1.0, 2.0 or 3.0 */
	enum ferry_dtype dtype;
	size_t itemsize;
	int swap;		/* 1 when the file's byte order is not the host's; '|' and '=' never swap */
	int fortran_order;
	int ndim;		/* 0..FERRY_MAX_DIMS */
	int64_t shape[FERRY_MAX_DIMS];
	uint64_t count;		/* product of shape (1 for rank 0) */
	uint64_t data_offset;	/* where the payload starts */
	uint64_t data_size;	/* count * itemsize */
};

/*
 * Longest header dict ferry accepts, in bytes (the length field's value). numpy
 * refuses more than 10000 unless told otherwise (max_header_size); ferry accepts up
 * to 64 KiB so that every version 1.0 header and generously padded version 2.0 ones
 * load, while a corrupt length field cannot make a reader fetch gigabytes. A real
 * header of rank FERRY_MAX_DIMS needs well under 1 KiB.
 */
#define FERRY__NPY_MAX_HEADER 65536

/* Bytes before the dict: magic (6), version (2), length field (2 or 4). */
#define FERRY__NPY_PREFIX_MAX 12

/*
 * Given the first len bytes of a file (at least 12, or the whole file when it is
 * shorter), returns the total header length (magic + length field + dict), which
 * is where the payload starts. Returns -FERRY_EFORMAT with a reason in why for a
 * bad magic, an unknown version, too few bytes or a dict over the cap.
 */
int64_t ferry__npy_header_length(const void *prefix, size_t len, char *why, size_t why_len);

/*
 * Parses a whole header: bytes holds at least ferry__npy_header_length() bytes.
 * Returns 0 and fills out; -FERRY_EFORMAT when the header is malformed;
 * -FERRY_EUNSUPPORTED when it is valid npy that ferry cannot load (object,
 * structured or other dtypes, rank over FERRY_MAX_DIMS). why gets a short reason.
 */
int ferry__npy_parse(const void *bytes, size_t len, struct ferry__npy_header *out, char *why,
		     size_t why_len);

/*
 * Checks a parsed header against the file size: the payload must fill the rest of
 * the file exactly. Returns 0, or -FERRY_EFORMAT with "payload is N bytes, file
 * holds M after the header" in why.
 */
int ferry__npy_check_size(const struct ferry__npy_header *h, uint64_t file_size, char *why,
			  size_t why_len);

/*
 * Writes a valid header for dtype, byteorder ('<', '>', '|' or '=', written as
 * given), order and shape into buf, padded with spaces and '\n' so the payload
 * starts at a multiple of 64. major 0 picks version 1.0 when the dict fits in a
 * u16, else 2.0; 1, 2 or 3 forces that version. Returns the header length,
 * -EINVAL for bad arguments, -ENOSPC when cap is too small or the dict does not
 * fit the forced version.
 */
int ferry__npy_write_header(void *buf, size_t cap, enum ferry_dtype dtype, char byteorder,
			    int fortran_order, int ndim, const int64_t *shape, int major);

#endif
