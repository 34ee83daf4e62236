/*
 * Zip records of .npz archives, parsed from bytes (npy.h). Every length read
 * from the bytes is checked against the bytes given before it is used.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "npy/npy.h"

#define SIG_END 0x06054b50u
#define SIG_END64 0x06064b50u
#define SIG_LOCATOR 0x07064b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_LOCAL 0x04034b50u
#define CENTRAL_LEN 46
#define ZIP64_EXTRA_ID 0x0001u

/* The position in tail of the last end record whose comment ends the file, or -1. */
static int64_t last_end_record(const unsigned char *t, size_t len)
{
	if (len < FERRY__ZIP_END_LEN)
		return -1;
	for (size_t at = len - FERRY__ZIP_END_LEN + 1; at-- > 0;) {
		if (ferry__read_le(t + at, 4) != SIG_END)
			continue;
		if (at + FERRY__ZIP_END_LEN + ferry__read_le(t + at + 20, 2) == len)
			return (int64_t)at;
		if (len - at > FERRY__ZIP_TAIL_MAX)
			break;
	}
	return -1;
}

/* The locator before the end record at t[at], if any: sets end->zip64_at. */
static int read_locator(const unsigned char *t, size_t at, struct ferry__zip_end *end, char *why,
			size_t why_len)
{
	if (at < FERRY__ZIP64_LOCATOR_LEN)
		return 0;
	const unsigned char *l = t + at - FERRY__ZIP64_LOCATOR_LEN;
	if (ferry__read_le(l, 4) != SIG_LOCATOR)
		return 0;
	if (ferry__read_le(l + 4, 4) != 0 || ferry__read_le(l + 16, 4) > 1)
		return ferry__npy_reason(why, why_len, -FERRY_EUNSUPPORTED,
				  "a multi-disk archive (zip64 locator names disk %" PRIu64 " of %" PRIu64 ")",
				  ferry__read_le(l + 4, 4), ferry__read_le(l + 16, 4));
	end->zip64 = 1;
	end->zip64_at = ferry__read_le(l + 8, 8);
	return 0;
}

int ferry__zip_find_end(const void *tail, size_t tail_len, uint64_t file_size,
			struct ferry__zip_end *out, char *why, size_t why_len)
{
	const unsigned char *t = tail;
	if (why && why_len)
		why[0] = '\0';
	*out = (struct ferry__zip_end){ 0 };
	if (tail_len > file_size)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT, "tail longer than the file");
	int64_t found = last_end_record(t, tail_len);
	if (found < 0)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "no zip end of central directory record (not a zip archive, or truncated)");
	const unsigned char *e = t + found;
	uint64_t disk = ferry__read_le(e + 4, 2), cd_disk = ferry__read_le(e + 6, 2);
	uint64_t on_disk = ferry__read_le(e + 8, 2), total = ferry__read_le(e + 10, 2);
	if ((disk != 0 && disk != 0xffff) || (cd_disk != 0 && cd_disk != 0xffff) || on_disk != total)
		return ferry__npy_reason(why, why_len, -FERRY_EUNSUPPORTED,
				  "a multi-disk archive (disk %" PRIu64 ", directory on disk %" PRIu64 ")",
				  disk, cd_disk);
	out->entries = total;
	out->cd_size = ferry__read_le(e + 12, 4);
	out->cd_offset = ferry__read_le(e + 16, 4);
	out->record_at = file_size - tail_len + (uint64_t)found;
	return read_locator(t, (size_t)found, out, why, why_len);
}

int ferry__zip_parse_end64(const void *bytes, size_t len, struct ferry__zip_end *end, char *why,
			   size_t why_len)
{
	const unsigned char *p = bytes;
	if (why && why_len)
		why[0] = '\0';
	if (len < FERRY__ZIP64_END_LEN || ferry__read_le(p, 4) != SIG_END64)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "no zip64 end of central directory record at byte %" PRIu64,
				  end->zip64_at);
	if (ferry__read_le(p + 16, 4) != 0 || ferry__read_le(p + 20, 4) != 0 || ferry__read_le(p + 24, 8) != ferry__read_le(p + 32, 8))
		return ferry__npy_reason(why, why_len, -FERRY_EUNSUPPORTED,
				  "a multi-disk archive (zip64 record: disk %" PRIu64 ")", ferry__read_le(p + 16, 4));
	end->entries = ferry__read_le(p + 32, 8);
	end->cd_size = ferry__read_le(p + 40, 8);
	end->cd_offset = ferry__read_le(p + 48, 8);
	return 0;
}

/* The zip64 extra field's values replace, in order, those the entry set to all ones. */
static int apply_zip64(const unsigned char *x, size_t len, struct ferry__zip_entry *e,
		       int disk_deferred, char *why, size_t why_len)
{
	uint64_t *vals[3] = { &e->usize, &e->csize, &e->local_offset };
	const uint64_t all_ones = 0xffffffffu;
	size_t at = 0;
	for (int i = 0; i < 3; i++) {
		if (*vals[i] != all_ones)
			continue;
		if (at + 8 > len)
			return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
					  "zip64 extra field too short for the sizes and offset");
		*vals[i] = ferry__read_le(x + at, 8);
		at += 8;
	}
	if (disk_deferred && (at + 4 > len || ferry__read_le(x + at, 4) != 0))
		return ferry__npy_reason(why, why_len, -FERRY_EUNSUPPORTED, "a member on another disk");
	return 0;
}

/* Walks the extra fields x[0..len) and applies the zip64 one. */
static int parse_extra(const unsigned char *x, size_t len, struct ferry__zip_entry *e,
		       int disk_deferred, char *why, size_t why_len)
{
	int seen = 0;
	for (size_t at = 0; at + 4 <= len;) {
		size_t id = (size_t)ferry__read_le(x + at, 2), n = (size_t)ferry__read_le(x + at + 2, 2);
		if (at + 4 + n > len)
			return ferry__npy_reason(why, why_len, -FERRY_EFORMAT, "an extra field runs past its entry");
		if (id == ZIP64_EXTRA_ID) {
			int rc = apply_zip64(x + at + 4, n, e, disk_deferred, why, why_len);
			if (rc < 0)
				return rc;
			seen = 1;
		}
		at += 4 + n;
	}
	if (!seen && (e->usize == 0xffffffffu || e->csize == 0xffffffffu ||
		      e->local_offset == 0xffffffffu))
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "an entry defers its sizes to a zip64 extra field it lacks");
	if (!seen && disk_deferred)
		return ferry__npy_reason(why, why_len, -FERRY_EUNSUPPORTED, "a member on another disk");
	return 0;
}

int ferry__zip_next_entry(const void *cd, size_t len, size_t *pos, struct ferry__zip_entry *out,
			  char *why, size_t why_len)
{
	const unsigned char *p = (const unsigned char *)cd + *pos;
	if (why && why_len)
		why[0] = '\0';
	if (*pos >= len)
		return 0;
	if (len - *pos < CENTRAL_LEN || ferry__read_le(p, 4) != SIG_CENTRAL)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "bad central directory entry at byte %zu of the directory", *pos);
	size_t name_len = (size_t)ferry__read_le(p + 28, 2), extra_len = (size_t)ferry__read_le(p + 30, 2);
	size_t entry_len = CENTRAL_LEN + name_len + extra_len + (size_t)ferry__read_le(p + 32, 2);
	if (entry_len > len - *pos)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "a central directory entry runs past the directory");
	uint64_t disk = ferry__read_le(p + 34, 2);
	*out = (struct ferry__zip_entry){
		.name = (const char *)p + CENTRAL_LEN, .name_len = name_len,
		.flags = (unsigned)ferry__read_le(p + 8, 2), .method = (unsigned)ferry__read_le(p + 10, 2),
		.crc = (uint32_t)ferry__read_le(p + 16, 4), .csize = ferry__read_le(p + 20, 4), .usize = ferry__read_le(p + 24, 4),
		.local_offset = ferry__read_le(p + 42, 4),
	};
	if (disk != 0 && disk != 0xffff)
		return ferry__npy_reason(why, why_len, -FERRY_EUNSUPPORTED,
				  "a member on disk %" PRIu64 " (a multi-disk archive)", disk);
	int rc = parse_extra(p + CENTRAL_LEN + name_len, extra_len, out, disk == 0xffff, why,
			     why_len);
	if (rc < 0)
		return rc;
	*pos += entry_len;
	return 1;
}

int ferry__zip_local_data(const void *bytes, size_t len, const struct ferry__zip_entry *e,
			  uint64_t *data_at, char *why, size_t why_len)
{
	const unsigned char *p = bytes;
	if (why && why_len)
		why[0] = '\0';
	if (len < FERRY__ZIP_LOCAL_LEN || ferry__read_le(p, 4) != SIG_LOCAL)
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "no local header at byte %" PRIu64, e->local_offset);
	size_t name_len = (size_t)ferry__read_le(p + 26, 2), extra_len = (size_t)ferry__read_le(p + 28, 2);
	size_t have = len - FERRY__ZIP_LOCAL_LEN;
	if (name_len != e->name_len ||
	    (have >= name_len && memcmp(p + FERRY__ZIP_LOCAL_LEN, e->name, name_len) != 0))
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "the local header names another member than the central directory");
	if ((ferry__read_le(p + 6, 2) ^ e->flags) & (FERRY__ZIP_FLAG_ENCRYPTED | FERRY__ZIP_FLAG_STRONG))
		return ferry__npy_reason(why, why_len, -FERRY_EFORMAT,
				  "the local header and the central directory disagree on encryption");
	*data_at = FERRY__ZIP_LOCAL_LEN + name_len + extra_len;
	return 0;
}

int ferry__zip_entry_is(const struct ferry__zip_entry *e, const char *key)
{
	size_t n = strlen(key);
	if (e->name_len == n && memcmp(e->name, key, n) == 0)
		return 2;
	return e->name_len == n + 4 && memcmp(e->name, key, n) == 0 &&
	       memcmp(e->name + n, ".npy", 4) == 0;
}
