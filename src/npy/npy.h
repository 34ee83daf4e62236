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

/* Writes a reason into why (when why has room) and returns err: the parsers'
 * way of saying what is wrong without the thread's error message. */
int ferry__npy_reason(char *why, size_t why_len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The little-endian unsigned integer of n (at most 8) bytes at p. */
uint64_t ferry__read_le(const unsigned char *p, int n);

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

/* ==== zip archives (.npz): numpy's savez and savez_compressed ==== */
/*
 * An .npz is a zip archive of .npy members. These functions parse its records
 * from bytes (no IO): the end of central directory record (with the zip64
 * locator and record), central directory entries (with zip64 extra fields)
 * and local headers. Offsets and sizes are the archive's; nothing here trusts
 * them against the file: the caller checks them against its size.
 */

/* The end of central directory record parsed: where the directory lies. */
struct ferry__zip_end {
	uint64_t cd_offset;   /* of the central directory */
	uint64_t cd_size;     /* its bytes */
	uint64_t entries;     /* its entries */
	uint64_t record_at;   /* where the end record starts (the directory ends at or before it) */
	int zip64;            /* 1: the values above need the zip64 record at zip64_at */
	uint64_t zip64_at;
};

/* Bytes of the end record without its comment, of the zip64 locator and of
 * the zip64 end record (without its extensible data). */
#define FERRY__ZIP_END_LEN 22
#define FERRY__ZIP64_LOCATOR_LEN 20
#define FERRY__ZIP64_END_LEN 56
/* The tail of a file that holds any end record: comment of up to 64 KiB, locator. */
#define FERRY__ZIP_TAIL_MAX (FERRY__ZIP_END_LEN + 65535 + FERRY__ZIP64_LOCATOR_LEN)
/* A local header's fixed part. */
#define FERRY__ZIP_LOCAL_LEN 30

/*
 * Finds the end record in tail, the last tail_len bytes of a file of
 * file_size bytes: the last signature whose comment ends the file exactly.
 * With a zip64 locator before it, out->zip64 is set and out->zip64_at says
 * where the zip64 end record is, to parse with ferry__zip_parse_end64.
 * Returns 0, -FERRY_EFORMAT (no record: not a zip archive, or truncated) or
 * -FERRY_EUNSUPPORTED (a multi-disk archive), with a reason in why.
 */
int ferry__zip_find_end(const void *tail, size_t tail_len, uint64_t file_size,
			struct ferry__zip_end *out, char *why, size_t why_len);

/* Parses the zip64 end record (FERRY__ZIP64_END_LEN bytes at end->zip64_at)
 * into end. Returns 0, -FERRY_EFORMAT or -FERRY_EUNSUPPORTED (multi-disk). */
int ferry__zip_parse_end64(const void *bytes, size_t len, struct ferry__zip_end *end, char *why,
			   size_t why_len);

/* One central directory entry. */
struct ferry__zip_entry {
	const char *name;     /* into the directory's bytes, not NUL-terminated */
	size_t name_len;
	unsigned flags;       /* general purpose bits: 0 encrypted, 3 data descriptor */
	unsigned method;      /* 0 stored, 8 deflated, ... */
	uint32_t crc;         /* CRC-32 of the uncompressed bytes */
	uint64_t csize, usize; /* compressed and uncompressed sizes (zip64 where given) */
	uint64_t local_offset; /* of its local header */
};

/* Flag bits and methods ferry knows. */
#define FERRY__ZIP_FLAG_ENCRYPTED 0x0001u
#define FERRY__ZIP_FLAG_STRONG 0x0040u      /* strong encryption */
#define FERRY__ZIP_FLAG_DESCRIPTOR 0x0008u  /* sizes and CRC follow the data */
#define FERRY__ZIP_STORED 0
#define FERRY__ZIP_DEFLATED 8

/*
 * Parses the entry at *pos of the central directory cd[0..len) and moves *pos
 * past it. Returns 1 with out filled, 0 when *pos is at the end of cd, or
 * -FERRY_EFORMAT (a bad signature, an entry running past the directory, a
 * zip64 extra field lacking a value the entry defers to it) or
 * -FERRY_EUNSUPPORTED (the member starts on another disk), with a reason.
 */
int ferry__zip_next_entry(const void *cd, size_t len, size_t *pos, struct ferry__zip_entry *out,
			  char *why, size_t why_len);

/*
 * Checks the local header of entry e (bytes: at least FERRY__ZIP_LOCAL_LEN,
 * read at e->local_offset; its name follows when len allows) and gives where
 * the member's data starts relative to the local header: 30 + its name and
 * extra lengths (the local header's own, which differ from the central
 * directory's). Returns 0, or -FERRY_EFORMAT (bad signature, a name that is
 * not the entry's) with a reason.
 */
int ferry__zip_local_data(const void *bytes, size_t len, const struct ferry__zip_entry *e,
			  uint64_t *data_at, char *why, size_t why_len);

/* Whether entry e is the member numpy calls key: its name is key, or key
 * followed by ".npy". Returns 2 for the exact name, 1 for key + ".npy", 0 for neither. */
int ferry__zip_entry_is(const struct ferry__zip_entry *e, const char *key);

#endif
