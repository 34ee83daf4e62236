/*
 * .npz archive members (load.h): located through the zip directory, read
 * through the one open file. A stored member's payload goes through staging
 * like a .npy's, at its offset in the archive, its CRC-32 computed as the
 * chunks pass through host staging; a deflated one is read whole, inflated on
 * the CPU and checked before anything reaches the device, then staged from
 * host memory. docs/design.md, ".npz archives".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "io/io.h"
#include "load/load.h"
#include "npy/npy.h"

/* A central directory larger than this is refused as corrupt: numpy writes
 * about 100 bytes a member. */
#define CD_MAX ((uint64_t)256 << 20)
/* Deflate expands at most about 1032:1; a directory claiming more lies. */
#define DEFLATE_RATIO_MAX 1040
/* Members named in a missing-key message. */
#define KEYS_LISTED 5
/* A stored member's first bytes read for its .npy header (numpy writes 128
 * or so); a longer header is then read whole. */
#define HEAD_PROBE 4096

/* The archive's last bytes, read to find the end record (the whole archive
 * when it is small). A member's later reads that fall inside them (the
 * directory, a local header, a .npy header, deflated bytes) are served from
 * memory: one read of the file, not four. */
struct tail {
	unsigned char *bytes;
	uint64_t at;
	size_t len;
};

static int member_fail(int rc, struct ferry__file *f, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* "PATH: member 'KEY': reason". */
static int member_fail(int rc, struct ferry__file *f, const char *key, const char *fmt, ...)
{
	char why[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return ferry__fail(rc, "%s: member '%s': %s", f->path, key, why);
}

static int archive_fail(int rc, struct ferry__file *f, const char *why)
{
	return ferry__fail(rc, "%s: not a readable .npz archive: %s", f->path, why);
}

/* len bytes of the archive at offset into buf: from t when it holds them,
 * else read through f. Returns 0 or as ferry__io_read_host. */
static int archive_read(struct ferry__file *f, const struct tail *t, void *buf, size_t len,
			uint64_t offset)
{
	if (offset >= t->at && offset - t->at <= t->len && len <= t->len - (offset - t->at)) {
		memcpy(buf, t->bytes + (offset - t->at), len);
		return 0;
	}
	return ferry__io_read_host(f, buf, len, offset, NULL);
}

/* Reads the archive's tail into t (the caller frees t->bytes). */
static int read_tail(struct ferry__file *f, struct tail *t)
{
	t->len = f->size < FERRY__ZIP_TAIL_MAX ? (size_t)f->size : FERRY__ZIP_TAIL_MAX;
	t->at = f->size - t->len;
	if (!(t->bytes = malloc(t->len ? t->len : 1)))
		return ferry__fail(-ENOMEM, "%s: out of memory reading the zip directory", f->path);
	int rc = ferry__io_read_host(f, t->bytes, t->len, t->at, NULL);
	if (rc < 0)
		t->len = 0; /* serves nothing */
	return rc;
}

/* The end record (and the zip64 one): where the directory is, checked against the file. */
static int read_end(struct ferry__file *f, struct ferry__zip_end *end, struct tail *t)
{
	char why[200];
	int rc = read_tail(f, t);
	if (rc == 0 && (rc = ferry__zip_find_end(t->bytes, t->len, f->size, end, why, sizeof(why))) < 0)
		archive_fail(rc, f, why);
	uint64_t dir_end = end->record_at;
	if (rc == 0 && end->zip64) {
		unsigned char rec[FERRY__ZIP64_END_LEN];
		if (end->zip64_at > end->record_at || end->record_at - end->zip64_at < sizeof(rec))
			return archive_fail(-FERRY_EFORMAT, f, "the zip64 locator points past its record");
		if ((rc = archive_read(f, t, rec, sizeof(rec), end->zip64_at)) < 0)
			return rc;
		if ((rc = ferry__zip_parse_end64(rec, sizeof(rec), end, why, sizeof(why))) < 0)
			return archive_fail(rc, f, why);
		dir_end = end->zip64_at;
	}
	if (rc == 0 && (end->cd_offset > dir_end || end->cd_size > dir_end - end->cd_offset))
		return archive_fail(-FERRY_EFORMAT, f, "the central directory runs past its end "
				    "record (a truncated or inconsistent archive)");
	if (rc == 0 && end->cd_size > CD_MAX)
		return archive_fail(-FERRY_EFORMAT, f, "a central directory over 256 MiB");
	return rc;
}

/* Appends "'name'" (without .npy, as numpy names keys) to list. */
static void list_key(char *list, size_t cap, const struct ferry__zip_entry *e, unsigned n)
{
	size_t used = strlen(list), len = e->name_len;
	if (len >= 4 && !memcmp(e->name + len - 4, ".npy", 4))
		len -= 4;
	if (n < KEYS_LISTED)
		snprintf(list + used, cap - used, "%s'%.*s'", n ? ", " : "", (int)(len < 100 ? len : 100),
			 e->name);
	else if (n == KEYS_LISTED)
		snprintf(list + used, cap - used, ", ...");
}

/* Finds key's entry in the directory cd: the exact name wins over key.npy. */
static int find_entry(struct ferry__file *f, const char *key, const unsigned char *cd,
		      size_t cd_len, struct ferry__zip_entry *out)
{
	char why[200], keys[700] = "";
	struct ferry__zip_entry e;
	size_t pos = 0;
	unsigned n = 0;
	int best = 0, rc;
	while ((rc = ferry__zip_next_entry(cd, cd_len, &pos, &e, why, sizeof(why))) == 1) {
		int match = ferry__zip_entry_is(&e, key);
		if (match > best) {
			best = match;
			*out = e;
		}
		list_key(keys, sizeof(keys), &e, n++);
	}
	if (rc < 0)
		return archive_fail(rc, f, why);
	if (!best)
		return member_fail(-ENOENT, f, key, "no such member; the archive holds %u: %s", n,
				   n ? keys : "none");
	return 0;
}

/* What ferry can read of entry e: its flags, method and sizes. */
static int check_entry(struct ferry__file *f, const char *key, const struct ferry__zip_entry *e,
		       uint64_t cd_offset)
{
	if (e->flags & (FERRY__ZIP_FLAG_ENCRYPTED | FERRY__ZIP_FLAG_STRONG))
		return member_fail(-FERRY_EUNSUPPORTED, f, key, "encrypted (ferry reads plain members)");
	if (e->method != FERRY__ZIP_STORED && e->method != FERRY__ZIP_DEFLATED)
		return member_fail(-FERRY_EUNSUPPORTED, f, key,
				   "compression method %u (ferry reads stored (0) and deflated (8) "
				   "members)", e->method);
	if (e->method == FERRY__ZIP_STORED && e->csize != e->usize)
		return member_fail(-FERRY_EFORMAT, f, key, "stored, but its sizes differ (%" PRIu64
				   " compressed, %" PRIu64 ")", e->csize, e->usize);
	if (e->method == FERRY__ZIP_DEFLATED && e->usize / DEFLATE_RATIO_MAX > e->csize)
		return member_fail(-FERRY_EFORMAT, f, key, "%" PRIu64 " bytes cannot inflate to %"
				   PRIu64, e->csize, e->usize);
	if (e->local_offset >= cd_offset)
		return member_fail(-FERRY_EFORMAT, f, key, "its local header lies past the directory");
	return 0;
}

/* Reads e's local header and sets m->data_at; the data must end before the directory. */
static int locate_data(struct ferry__file *f, const struct tail *t, const char *key,
		       const struct ferry__zip_entry *e, uint64_t cd_offset, struct ferry__member *m)
{
	char why[200];
	uint64_t data_at, room = cd_offset - e->local_offset;
	size_t want = FERRY__ZIP_LOCAL_LEN + e->name_len;
	if (want > room)
		return member_fail(-FERRY_EFORMAT, f, key, "its local header runs into the directory");
	unsigned char *local = malloc(want);
	if (!local)
		return ferry__fail(-ENOMEM, "%s: out of memory reading a local header", f->path);
	int rc = archive_read(f, t, local, want, e->local_offset);
	if (rc == 0 && (rc = ferry__zip_local_data(local, want, e, &data_at, why, sizeof(why))) < 0)
		member_fail(rc, f, key, "%s", why);
	free(local);
	if (rc < 0)
		return rc;
	if (data_at > room || e->csize > room - data_at)
		return member_fail(-FERRY_EFORMAT, f, key, "its data runs past the central directory "
				   "(a truncated archive, or inconsistent sizes)");
	m->data_at = e->local_offset + data_at;
	return 0;
}

/* Locates key's data in the archive: method, sizes, CRC and offset into m;
 * t gets the archive's tail. */
static int locate_member(struct ferry__file *f, const char *key, struct ferry__member *m,
			 struct tail *t)
{
	struct ferry__zip_end end;
	struct ferry__zip_entry e;
	int rc = read_end(f, &end, t);
	if (rc < 0)
		return rc;
	unsigned char *cd = malloc(end.cd_size ? end.cd_size : 1);
	if (!cd)
		return ferry__fail(-ENOMEM, "%s: out of memory reading the zip directory", f->path);
	rc = archive_read(f, t, cd, end.cd_size, end.cd_offset);
	if (rc == 0)
		rc = find_entry(f, key, cd, end.cd_size, &e);
	if (rc == 0)
		rc = check_entry(f, key, &e, end.cd_offset);
	if (rc == 0 && (rc = locate_data(f, t, key, &e, end.cd_offset, m)) == 0) {
		m->method = e.method;
		m->crc = e.crc;
		m->csize = e.csize;
		m->usize = e.usize;
	}
	free(cd);
	return rc;
}

/* Parses the .npy header at the start of a member's bytes (have of them). */
static int parse_member_header(struct ferry__file *f, struct ferry__member *m,
			       const unsigned char *bytes, size_t have)
{
	char why[200];
	int64_t need = ferry__npy_header_length(bytes, have, why, sizeof(why));
	if (need >= 0 && (uint64_t)need > have)
		return member_fail(-FERRY_EFORMAT, f, m->key, "its .npy header runs past the member");
	int rc = need < 0 ? (int)need : ferry__npy_parse(bytes, have, &m->h, why, sizeof(why));
	if (rc == 0)
		rc = ferry__npy_check_size(&m->h, m->usize, why, sizeof(why));
	return rc < 0 ? member_fail(rc, f, m->key, "%s", why) : 0;
}

/* Compressed bytes read beyond a deflated member's wanted output, for the
 * stream's block headers (a dynamic block's tables take up to about 300). */
#define INFLATE_SLACK 1024

/* The first len bytes of a deflated member into out, inflated from as few of
 * its compressed bytes as give them: *have of them (fewer when the stream
 * ends first). */
static int inflate_prefix(struct ferry__file *f, const struct tail *t, const struct ferry__member *m,
			  unsigned char *out, size_t len, size_t *have)
{
	char why[200];
	uint64_t in_len = m->csize < (uint64_t)len + INFLATE_SLACK ? m->csize : len + INFLATE_SLACK;
	for (;;) {
		unsigned char *in = malloc(in_len ? in_len : 1);
		if (!in)
			return ferry__fail(-ENOMEM, "%s: out of memory reading a header", f->path);
		int rc = archive_read(f, t, in, in_len, m->data_at);
		if (rc == 0 && (rc = ferry__inflate_prefix(in, in_len, out, len, have, why,
							   sizeof(why))) < 0)
			member_fail(rc, f, m->key, "%s", why);
		free(in);
		if (rc < 0 || rc == 1 || *have == len || in_len == m->csize)
			return rc < 0 ? rc : 0; /* 1: the stream ended, short of len */
		in_len = m->csize / 2 < in_len ? m->csize : in_len * 2; /* stored blocks, say */
	}
}

/* A member's first len bytes into bytes: *have of them. */
static int member_bytes(struct ferry__file *f, const struct tail *t, const struct ferry__member *m,
			unsigned char *bytes, size_t len, size_t *have)
{
	if (m->method == FERRY__ZIP_DEFLATED)
		return inflate_prefix(f, t, m, bytes, len, have);
	*have = len;
	return archive_read(f, t, bytes, len, m->data_at);
}

/* A member's first bytes into *out (malloc'd), *have of them: its first
 * HEAD_PROBE, or its whole .npy header when that is longer and the member
 * holds it. A deflated member's are inflated from its first compressed bytes. */
static int member_prefix(struct ferry__file *f, const struct tail *t, const struct ferry__member *m,
			 unsigned char **out, size_t *have)
{
	size_t len = m->usize < HEAD_PROBE ? (size_t)m->usize : HEAD_PROBE;
	for (;;) {
		unsigned char *bytes = malloc(len ? len : 1);
		if (!bytes)
			return ferry__fail(-ENOMEM, "%s: out of memory reading a header", f->path);
		int rc = member_bytes(f, t, m, bytes, len, have);
		if (rc < 0) {
			free(bytes);
			return rc;
		}
		int64_t need = ferry__npy_header_length(bytes, *have, NULL, 0);
		if (need <= (int64_t)*have || (uint64_t)need > m->usize || *have < len) {
			*out = bytes; /* a bad header is parse_member_header's to report */
			return 0;
		}
		free(bytes);
		len = (size_t)need; /* a long header: read it whole */
	}
}

/* A stored member's header, read through f; its payload offset made the archive's. */
static int stored_header(struct ferry__file *f, const struct tail *t, struct ferry__member *m,
			 unsigned char *head)
{
	unsigned char *bytes = NULL;
	size_t have = 0;
	int rc = member_prefix(f, t, m, &bytes, &have);
	if (rc < 0)
		return rc;
	rc = parse_member_header(f, m, bytes, have);
	if (rc == 0) {
		m->head_crc = ferry__crc32(0, bytes, (size_t)m->h.data_offset);
		if (head)
			memcpy(head, bytes, ferry__head_len(&m->h));
		m->h.data_offset += m->data_at;
	}
	free(bytes);
	return rc;
}

/* The member's CRC-32 (crc, over all its bytes) against the directory's. */
static int check_crc(struct ferry__file *f, const struct ferry__member *m, uint32_t crc)
{
	if (crc == m->crc)
		return 0;
	return member_fail(-FERRY_EFORMAT, f, m->key, "CRC-32 mismatch: the archive says %08" PRIx32
			   ", the data is %08" PRIx32 " (a corrupt archive)", m->crc, crc);
}

/* A deflated member: read whole, inflated, checked, its header parsed. */
static int inflate_member(struct ferry__file *f, const struct tail *t, struct ferry__member *m)
{
	char why[200];
	unsigned char *packed = malloc(m->csize ? m->csize : 1);
	m->inflated = malloc(m->usize ? m->usize : 1);
	if (!packed || !m->inflated) {
		free(packed);
		return member_fail(-ENOMEM, f, m->key, "out of memory inflating %" PRIu64 " bytes",
				   m->usize);
	}
	int rc = archive_read(f, t, packed, m->csize, m->data_at);
	if (rc == 0 && (rc = ferry__inflate_raw(packed, m->csize, m->inflated, m->usize, why,
						sizeof(why))) < 0)
		member_fail(rc, f, m->key, "%s", why);
	free(packed);
	if (rc == 0)
		rc = check_crc(f, m, ferry__crc32(0, m->inflated, m->usize));
	if (rc == 0)
		rc = parse_member_header(f, m, m->inflated, m->usize);
	return rc;
}

/* A deflated member's header alone, from its first bytes inflated: its
 * payload neither inflated nor checked. */
static int deflated_header(struct ferry__file *f, const struct tail *t, struct ferry__member *m)
{
	unsigned char *bytes = NULL;
	size_t have = 0;
	int rc = member_prefix(f, t, m, &bytes, &have);
	if (rc == 0)
		rc = parse_member_header(f, m, bytes, have);
	free(bytes);
	return rc;
}

/* Whether a deflated member's header can be read alone: a build that cannot
 * inflate members refuses them everywhere, ferry info too. */
static int can_peek(void)
{
	return ferry__inflate_available() && ferry__inflate_prefix_available();
}

static int open_member(struct ferry__file *f, const char *key, struct ferry__member *m,
		       unsigned char head[FERRY__HEAD_MAX], int header_only)
{
	struct tail t = { 0 };
	*m = (struct ferry__member){ .key = key };
	int rc = locate_member(f, key, m, &t);
	if (rc == 0 && m->method == FERRY__ZIP_STORED)
		rc = stored_header(f, &t, m, head);
	else if (rc == 0 && header_only && can_peek())
		rc = deflated_header(f, &t, m);
	else if (rc == 0)
		rc = inflate_member(f, &t, m);
	if (rc == 0 && m->method == FERRY__ZIP_STORED && t.at == 0 && t.len == f->size &&
	    !header_only) {
		m->whole = t.bytes;
		t.bytes = NULL;
	}
	free(t.bytes);
	if (rc == 0 && head && m->inflated)
		memcpy(head, m->inflated, ferry__head_len(&m->h));
	if (rc < 0)
		ferry__member_close(m);
	return rc;
}

int ferry__member_open(struct ferry__file *f, const char *key, struct ferry__member *m,
		       unsigned char head[FERRY__HEAD_MAX])
{
	return open_member(f, key, m, head, 0);
}

int ferry__member_header(struct ferry__file *f, const char *key, struct ferry__member *m)
{
	return open_member(f, key, m, NULL, 1);
}

void ferry__member_close(struct ferry__member *m)
{
	if (m->array && m->array != m->inflated + m->h.data_offset)
		free(m->array); /* a transposed copy */
	free(m->inflated);
	free(m->whole);
	m->inflated = m->array = m->whole = NULL;
}

int ferry__member_array(struct ferry__file *f, struct ferry__member *m,
			const unsigned char **out)
{
	void *array = m->array;
	int rc = ferry__io_check_unchanged(f);
	if (rc == 0 && !array)
		rc = ferry__convert_on_host(f, &m->h, m->inflated + m->h.data_offset, &array);
	if (rc < 0)
		return rc;
	m->array = array;
	*out = array;
	return 0;
}

/* A deflated member: its array staged from host memory. */
static int load_inflated(const struct ferry__loader *ld, struct ferry__file *f,
			 struct ferry__member *m, void *dst, const struct ferry__load_opts *opts)
{
	const unsigned char *array = NULL;
	int rc = ferry__member_array(f, m, &array);
	return rc < 0 ? rc : ferry__load_from_memory(ld, f, array, m->h.data_size, dst, opts);
}

int ferry__member_load(const struct ferry__loader *ld, struct ferry__file *f,
		       struct ferry__member *m, void *dst, const struct ferry__load_opts *opts)
{
	if (m->inflated)
		return load_inflated(ld, f, m, dst, opts);
	uint32_t crc = 0;
	struct ferry__load_opts o = *opts;
	o.crc = &crc;
	o.head = NULL; /* offset 0 is the archive's first local header, not this header */
	int rc = ferry__load_payload(ld, f, &m->h, dst, &o);
	return rc < 0 ? rc : ferry__member_check_payload(f, m, crc);
}

int ferry__member_check_payload(struct ferry__file *f, const struct ferry__member *m,
				uint32_t payload_crc)
{
	return check_crc(f, m, ferry__crc32_combine(m->head_crc, payload_crc, m->h.data_size));
}
