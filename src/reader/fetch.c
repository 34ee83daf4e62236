/*
 * Fetching a batch's outputs. The batch, not the file, is the unit of data
 * movement: FETCH_PACK outputs (small, C order, native byte order, buffered
 * reads into pinned staging: .npy files, and stored .npz members, whose
 * CRC-32 the CPU checks there; or deflated members, whose arrays the CPU
 * writes there) are placed back to back into one staging buffer,
 * laid out as they lie in batch memory, so that one copy per batch lands a
 * whole run of them; runs of consecutive batches share the buffer. A file
 * whose header came from the cache is read with its header in the same
 * system call, and the header bytes are checked against the cached ones.
 * Larger outputs go through the loader's chunked path, converted and padded
 * ones through the host. Every copy is queued on the calling thread's lane
 * against the batch's ticket for that lane; ferry__wait_copies waits for them.
 */
#include "reader/reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#define FILL_BUFFER_MAX (1u << 20)
#define PACK_REQS 8 /* requests of one output read without allocating */

/* Opens s's file unless the probe left it open. A header from the cache must
 * be the file's: otherwise s is stale and is planned again. Returns 0, 1
 * when stale, or an error (recorded). */
static int open_slot(struct ferry_reader *r, struct slot *s)
{
	if (s->f)
		return 0;
	ferry__clear_error(); /* a message left by another file must not be this one's */
	int rc = ferry__load_open(r->ld, r->ds.paths[s->file], &s->f);
	if (rc == 0 && r->key && !s->member)
		rc = ferry__slot_header(r, s); /* probes keep it open; this is for safety */
	if (rc < 0) {
		ferry__slot_fail(r, s, rc);
		ferry__slot_close(r, s);
		return rc;
	}
	if (!s->cached || !memcmp(&s->f->id, &s->id, sizeof(s->id)))
		return 0;
	s->stale = 1;
	ferry__slot_close(r, s);
	return 1;
}

/* The runs of s's region in its C-order payload (one for a whole array).
 * Returns their number (*runs malloc'd unless it is one) or an error. */
static int64_t region_runs(struct slot *s, struct ferry__run *one, struct ferry__run **runs)
{
	*runs = one;
	if (ferry__slot_whole(s)) {
		*one = (struct ferry__run){ 0, 0, s->nbytes };
		return s->nbytes ? 1 : 0;
	}
	return ferry__region_runs(&s->rg, s->h.shape, s->h.itemsize, runs);
}

/* Whether a packed output of s, read in the file's order, must be transposed
 * into C order: a Fortran-order region of more than one axis longer than 1. */
static int transposes(const struct slot *s)
{
	int long_axes = 0;
	for (int d = 0; ferry__slot_fortran(s) && d < s->rg.ndim; d++)
		long_axes += s->rg.shape[d] > 1;
	return long_axes > 1;
}

/* The runs of s's region as its file lays them out: region_runs for C order;
 * for Fortran order those of the reversed region in the reversed shape (the
 * file's C order), whose bytes lie in the Fortran order of the region. */
static int64_t file_runs(struct slot *s, struct ferry__run *one, struct ferry__run **runs)
{
	struct ferry__region rev = { .ndim = s->rg.ndim, .count = s->rg.count };
	int64_t shape[FERRY_MAX_DIMS];
	if (!ferry__slot_fortran(s))
		return region_runs(s, one, runs);
	for (int d = 0; d < rev.ndim; d++) {
		rev.start[d] = s->rg.start[rev.ndim - 1 - d];
		rev.shape[d] = s->rg.shape[rev.ndim - 1 - d];
		shape[d] = s->h.shape[rev.ndim - 1 - d];
	}
	*runs = NULL;
	return ferry__region_runs(&rev, shape, s->h.itemsize, runs);
}

/* The read requests of one file's outputs, growing past a stack array. */
struct reqs {
	struct ferry__io_req *v;
	unsigned n, cap;
	struct ferry__io_req stack[PACK_REQS];
};

static int push_req(struct reqs *q, struct ferry__io_req req)
{
	if (q->n == q->cap) {
		unsigned cap = 2 * q->cap;
		struct ferry__io_req *v = malloc(cap * sizeof(*v));
		if (!v)
			return ferry__fail(-ENOMEM, "out of memory planning %u reads", cap);
		memcpy(v, q->v, q->n * sizeof(*v));
		if (q->v != q->stack)
			free(q->v);
		q->v = v;
		q->cap = cap;
	}
	q->v[q->n++] = req;
	return 0;
}

/* The requests of s's runs, into dst; adjacent ones (consecutive rows of one
 * file) merge into one preadv in the backend. */
static int add_runs(struct reqs *q, struct slot *s, char *dst)
{
	struct ferry__run one, *runs;
	int64_t nruns = file_runs(s, &one, &runs);
	int rc = nruns < 0 ? (int)nruns : 0;
	for (int64_t k = 0; rc == 0 && k < nruns; k++)
		rc = push_req(q, (struct ferry__io_req){ .dst = dst + runs[k].dst, .len = runs[k].len,
							 .offset = s->h.data_offset + runs[k].src });
	if (runs && runs != &one)
		free(runs);
	return rc;
}

static int header_changed(const struct slot *s)
{
	return ferry__fail(-FERRY_ECHANGED, "%s: changed while being read: its header is not the "
			   "one the batch was planned from", s->f->path);
}

/* Every request got all its bytes; a cached header read back unchanged. */
static int check_requests(struct slot *s, const struct reqs *q, const unsigned char *head)
{
	for (unsigned i = 0; i < q->n; i++)
		if (q->v[i].result < 0 || (size_t)q->v[i].result < q->v[i].len)
			return ferry__fail(-FERRY_ETRUNCATED, "%s: file ends before byte %llu",
					   s->f->path, (unsigned long long)(q->v[i].offset + q->v[i].len));
	if (s->cached && memcmp(head, s->head, q->v[0].len))
		return header_changed(s);
	return 0;
}

void ferry__swap_output(const struct slot *s, void *dst)
{
	if (s->h.swap)
		ferry__byteswap(dst, s->nbytes / s->h.itemsize, s->h.itemsize,
				s->h.dtype == FERRY_COMPLEX64 || s->h.dtype == FERRY_COMPLEX128);
}

/* Where the reads of outputs ss[0..n) land: their places in staging, but a
 * transposed one's in raw (malloc'd here, NULL when none is). */
static int read_places(struct slot **ss, char **dsts, unsigned n, char **into, char **raw)
{
	size_t len = 0;
	for (unsigned i = 0; i < n; i++)
		len += transposes(ss[i]) ? (size_t)ss[i]->nbytes : 0;
	*raw = NULL;
	if (len && !(*raw = malloc(len)))
		return ferry__fail(-ENOMEM, "reader: out of memory for %zu bytes to transpose", len);
	for (unsigned i = 0, at = 0; i < n; i++) {
		into[i] = transposes(ss[i]) ? *raw + at : dsts[i];
		at += transposes(ss[i]) ? (unsigned)ss[i]->nbytes : 0;
	}
	return 0;
}

/* Output s, read raw at into, into C order and native byte order at dst. */
static void convert_packed(const struct slot *s, char *dst, const char *into)
{
	if (into != dst)
		ferry__fortran_to_c(dst, into, s->rg.ndim, s->rg.shape, s->h.itemsize);
	ferry__swap_output(s, dst);
}

/* Outputs ss[0..n) of one file (rows of it, or the file) into host staging at
 * dsts[]: one open, one read call (with the cached header checked), one
 * close, then a big-endian or Fortran-order file's bytes converted there.
 * A failure is every one's: they are the same file. */
static void read_packed(struct ferry_reader *r, struct slot **ss, char **dsts, unsigned n)
{
	unsigned char head[FERRY__HEAD_MAX];
	struct reqs q = { .v = q.stack, .cap = PACK_REQS };
	struct slot *s = ss[0];
	char *into[PACK_REQS], *raw = NULL;
	int rc = open_slot(r, s);
	for (unsigned i = 1; i < n; i++)
		ss[i]->stale = s->stale;
	if (rc != 0)
		goto out;
	rc = read_places(ss, dsts, n, into, &raw);
	if (rc == 0 && s->cached)
		rc = push_req(&q, (struct ferry__io_req){ .dst = head, .len = ferry__head_len(&s->h) });
	for (unsigned i = 0; rc == 0 && i < n; i++)
		rc = add_runs(&q, ss[i], into[i]);
	if (rc == 0 && q.n)
		rc = ferry__load_read(r->ld, s->f, q.v, q.n);
	if (rc == 0)
		rc = check_requests(s, &q, head);
	if (rc == 0)
		rc = ferry__io_check_unchanged(s->f);
	for (unsigned i = 0; i < q.n && rc == 0; i++)
		s->stats.bytes_read += q.v[i].len;
	s->stats.reads += q.n;
	if (rc == 0)
		ferry__load_count_file(&s->stats, s->f);
	for (unsigned i = 0; i < n; i++)
		if (rc < 0)
			ferry__slot_fail(r, ss[i], rc);
		else
			convert_packed(ss[i], dsts[i], into[i]);
out:
	free(raw);
	if (q.v != q.stack)
		free(q.v);
	ferry__slot_close(r, s);
}

/* What reading a deflated member took: its compressed bytes, which the probe
 * read whole (the zip directory's reads are not counted). */
static void count_inflated(struct slot *s)
{
	if (s->member && s->member->inflated) {
		s->stats.bytes_read += s->member->csize;
		s->stats.reads++;
	}
}

/* Ends the fetch of s: its failure, or what reading it took; then closes it. */
static void finish_slot(struct ferry_reader *r, struct slot *s, int rc)
{
	if (rc < 0) {
		ferry__slot_fail(r, s, rc);
	} else {
		count_inflated(s);
		ferry__load_count_file(&s->stats, s->f);
	}
	ferry__slot_close(r, s);
}

/* The output of s, a deflated member, into host staging at dst: the runs of
 * its region copied out of its array (inflated by the probe, converted on
 * the host) by the CPU. No read, and no copy of its own. */
static void place_member(struct ferry_reader *r, struct slot *s, char *dst)
{
	struct ferry__run one, *runs = NULL;
	const unsigned char *array = NULL;
	int rc = open_slot(r, s);
	if (rc != 0)
		return;
	int64_t n = region_runs(s, &one, &runs);
	rc = n < 0 ? (int)n : ferry__member_array(s->f, s->member, &array);
	for (int64_t k = 0; rc == 0 && k < n; k++)
		memcpy(dst + runs[k].dst, array + runs[k].src, runs[k].len);
	if (runs != &one)
		free(runs);
	finish_slot(r, s, rc);
}

/* Host memory a pack reuses for the payloads of stored members with a
 * region (each at most a chunk). */
struct scratch {
	char *p;
	size_t cap;
};

static char *scratch_get(struct scratch *sc, size_t len)
{
	if (len <= sc->cap)
		return sc->p;
	free(sc->p);
	sc->cap = (sc->p = malloc(len)) ? len : 0;
	if (!sc->p)
		ferry__fail(-ENOMEM, "reader: out of memory for %zu bytes of a member", len);
	return sc->p;
}

/* The payload of s, a stored member whose probe read the whole archive,
 * from those bytes into into. Returns 0 or -FERRY_EFORMAT. */
static int take_probed(struct ferry_reader *r, struct slot *s, char *into, size_t len)
{
	if (s->h.data_offset > s->f->size || len > s->f->size - s->h.data_offset)
		return ferry__fail(-FERRY_EFORMAT, "%s: member '%s' runs past the archive's end",
				   s->f->path, r->key);
	memcpy(into, s->member->whole + s->h.data_offset, len);
	s->stats.bytes_read += s->f->size; /* the probe's one read */
	s->stats.reads++;
	return 0;
}

/* The payload of s, a stored member, read into into in one call; with a
 * header from the cache, the header's bytes before it, checked against the
 * cached ones. Returns 0 or an error. */
static int read_payload(struct ferry_reader *r, struct slot *s, char *into, size_t len)
{
	unsigned char head[FERRY__HEAD_MAX];
	struct reqs q = { .v = q.stack, .cap = PACK_REQS };
	int rc = 0;
	if (s->cached)
		q.v[q.n++] = (struct ferry__io_req){ .dst = head, .len = ferry__slot_head_len(s),
						     .offset = s->member->data_at };
	if (len)
		q.v[q.n++] = (struct ferry__io_req){ .dst = into, .len = len,
						     .offset = s->h.data_offset };
	if (q.n) {
		rc = ferry__load_read(r->ld, s->f, q.v, q.n);
		if (rc == 0)
			rc = check_requests(s, &q, head);
		for (unsigned i = 0; i < q.n; i++)
			s->stats.bytes_read += q.v[i].len;
		s->stats.reads += q.n;
	}
	return rc;
}

/* The whole payload of s, a stored member, in host memory at into (the
 * member's CRC-32 covers every byte of it): from the archive's bytes when its
 * probe read it whole, else read (read_payload); then checks that the archive
 * did not change since it was opened, and the CRC-32 (these bytes after the
 * header's). Returns 0 or an error. */
static int read_stored(struct ferry_reader *r, struct slot *s, char *into)
{
	size_t len = (size_t)s->h.data_size;
	int rc = s->member->whole ? take_probed(r, s, into, len) : read_payload(r, s, into, len);
	if (rc == 0)
		rc = ferry__io_check_unchanged(s->f);
	if (rc == 0)
		rc = ferry__member_check_payload(s->f, s->member, ferry__crc32(0, into, len));
	return rc;
}

/* The output of s, a stored member whose payload fits a chunk, into host
 * staging at dst, checked before the pack's copy is queued: a whole array in
 * C order read straight into dst and its CRC-32 computed there; otherwise the
 * whole payload read into scratch and checked there, and the region's runs
 * copied out as the file lays them out (into raw first where a Fortran-order
 * region needs a transpose); then converted into C order and native byte
 * order at dst. No copy or wait of its own. */
static void pack_stored(struct ferry_reader *r, struct slot *s, char *dst, struct scratch *sc)
{
	struct ferry__run one, *runs = NULL;
	int rc = open_slot(r, s);
	if (rc != 0)
		return;
	int whole = ferry__slot_whole(s), turns = transposes(s);
	char *into = whole && !turns ? dst : scratch_get(sc, (size_t)s->h.data_size + 1);
	char *raw = turns && !whole ? malloc(s->nbytes ? s->nbytes : 1) : NULL;
	char *out = !turns ? dst : whole ? into : raw; /* the output in the file's order */
	int64_t n = whole ? 0 : file_runs(s, &one, &runs);
	if (!into)
		rc = -ENOMEM; /* scratch_get said why */
	else if (!out)
		rc = ferry__fail(-ENOMEM, "reader: out of memory for %llu bytes to transpose",
				 (unsigned long long)s->nbytes);
	else
		rc = n < 0 ? (int)n : read_stored(r, s, into);
	for (int64_t k = 0; rc == 0 && k < n; k++)
		memcpy(out + runs[k].dst, into + runs[k].src, runs[k].len);
	if (rc == 0)
		convert_packed(s, dst, out);
	if (runs && runs != &one)
		free(runs);
	free(raw);
	finish_slot(r, s, rc);
}

int ferry__item_packs(const struct ferry_batch *b, const struct item *it)
{
	return it->kind == ITEM_FETCH && b->slots[b->out[it->first]].kind == FETCH_PACK;
}

/* From the item's first output's row to the end of its last. */
uint64_t ferry__item_span(const struct ferry_batch *b, const struct item *it)
{
	const struct slot *first = &b->slots[b->out[it->first]];
	const struct slot *last = &b->slots[b->out[it->first + it->count - 1]];
	return last->offset + last->nbytes - first->offset;
}

/* Outputs k, k + 1, ... of item it that are the same .npy file, from the
 * cache (consecutive rows), up to cap; returns how many (at least 1). */
static unsigned same_file_run(struct ferry_batch *b, const struct item *it, unsigned k,
			      struct slot **ss, unsigned cap)
{
	unsigned n = 1;
	ss[0] = &b->slots[b->out[it->first + k]];
	while (n < cap && k + n < it->count && ss[0]->cached && !ss[0]->member && !ss[0]->f &&
	       !ss[0]->fetched) {
		struct slot *s = &b->slots[b->out[it->first + k + n]];
		if (s->file != ss[0]->file || s->fetched || s->f || !s->cached)
			break;
		ss[n++] = s;
	}
	return n;
}

/* Reads the outputs of item it of b into buf at pos; describes its copy. */
static void read_pack_item(struct ferry_batch *b, const struct item *it, struct ferry__buf *buf,
			   size_t pos, unsigned lane, struct ferry__copy *copy, struct scratch *sc)
{
	const struct slot *first = &b->slots[b->out[it->first]];
	struct slot *ss[PACK_REQS];
	char *dsts[PACK_REQS];
	for (unsigned k = 0; k < it->count;) {
		unsigned n = same_file_run(b, it, k, ss, PACK_REQS);
		k += n;
		if (ss[0]->fetched) {
			ss[0]->fetched = 0; /* read by ferry__fetch_whole_files */
			continue;
		}
		for (unsigned i = 0; i < n; i++)
			dsts[i] = (char *)buf->data + pos + (ss[i]->offset - first->offset);
		if (ss[0]->member && ss[0]->member->inflated)
			place_member(b->r, ss[0], dsts[0]);
		else if (ss[0]->member)
			pack_stored(b->r, ss[0], dsts[0], sc);
		else
			read_packed(b->r, ss, dsts, n);
	}
	*copy = (struct ferry__copy){ .dst = b->mem + first->offset, .src_offset = pos,
				      .len = (size_t)ferry__item_span(b, it),
				      .tag = b->r->ds.paths[first->file], .tag_offset = 0,
				      .ticket = &b->tickets[lane] };
}

/* A failure of the staging engine fails every output the buffer held. */
static void fail_items(struct ferry_batch *const *bs, const struct item *items, unsigned n, int rc)
{
	char *msg = ferry__error_copy();
	for (unsigned j = 0; j < n; j++)
		for (unsigned k = 0; k < items[j].count; k++) {
			struct slot *s = &bs[j]->slots[bs[j]->out[items[j].first + k]];
			ferry__fail(rc, "%s", msg ? msg : ferry_strerror(rc));
			ferry__slot_fail(bs[j]->r, s, rc);
		}
	free(msg);
}

/* PACK items of one or more batches: one buffer, one copy per item. */
static void fetch_packed(struct ferry_batch *const *bs, const struct item *items, unsigned n)
{
	const struct ferry__loader *ld = bs[0]->r->ld;
	unsigned lane = ferry__lanes_pick_index(ld->lanes);
	struct ferry__staging *stg = ferry__lanes_get(ld->lanes, lane);
	struct ferry__copy copies[n];
	struct ferry__buf *buf;
	struct scratch sc = { 0 };
	size_t base[n], pos = 0;
	int rc = ferry__staging_lease(stg, &buf);
	for (unsigned j = 0; j < n; j++) {
		base[j] = pos;
		pos += (size_t)ferry__item_span(bs[j], &items[j]);
	}
	if (rc == 0)
		ferry__fetch_whole_files(bs, items, n, buf->data, base);
	for (unsigned j = 0; rc == 0 && j < n; j++)
		read_pack_item(bs[j], &items[j], buf, base[j], lane, &copies[j], &sc);
	free(sc.p);
	if (rc == 0)
		rc = pos ? ferry__staging_queue(stg, buf, copies, n, NULL)
			 : ferry__staging_give_back(stg, buf);
	/* A buffer at least half as full as the plan lets a run be (a chunk, or
	 * less: run_cap) has its copies start now; smaller ones join the lane's
	 * next launch (after launch_after copies, or when the batch is waited
	 * for). Half a chunk alone would hold back every run run_cap cut short. */
	if (rc == 0 && pos >= bs[0]->run_cap / 2)
		rc = ferry__staging_commit(stg, NULL);
	if (rc < 0)
		fail_items(bs, items, n, rc);
}

/* Fills the whole output of s with the fill value (the data goes on top). */
static int fill_output(struct ferry_reader *r, struct slot *s, char *dst)
{
	struct ferry__device *dev = r->dev;
	unsigned char elem[16];
	size_t isz = ferry__fill_element(s->h.dtype, r->fill_value, elem);
	int same = 1, rc = 0;
	for (size_t i = 1; i < isz; i++)
		same &= elem[i] == elem[0];
	if (same) {
		rc = dev->ops->memset_async(dev, r->side, dst, elem[0], s->nbytes);
		return rc < 0 ? rc : dev->ops->stream_sync(dev, r->side);
	}
	size_t len = s->nbytes < FILL_BUFFER_MAX ? s->nbytes : FILL_BUFFER_MAX / isz * isz;
	unsigned char *buf = malloc(len);
	if (!buf)
		return ferry__fail(-ENOMEM, "reader: out of memory for a fill pattern");
	for (size_t i = 0; i < len; i += isz)
		memcpy(buf + i, elem, isz);
	for (uint64_t off = 0; rc == 0 && off < s->nbytes; off += len) {
		size_t n = s->nbytes - off < len ? (size_t)(s->nbytes - off) : len;
		rc = dev->ops->copy_sync(dev, dst + off, buf, n, FERRY__H2D);
	}
	free(buf);
	return rc;
}

/* Loads the runs through the loader's chunked path: read straight from a
 * C-order, native-endian file, or (src) copied out of that array in host
 * memory. With a ticket, returns once the copies are queued. */
static int read_runs(struct ferry_reader *r, struct slot *s, char *dst, const struct ferry__run *runs,
		     int64_t n, struct ferry__ticket *async, const void *src)
{
	struct ferry__range *ranges = malloc((size_t)(n ? n : 1) * sizeof(*ranges));
	uint64_t base = src ? 0 : s->h.data_offset;
	struct ferry__load_opts opts = { .parallel = r->ld->threads, .async = async,
					 .stats = &s->stats, .head = s->cached ? s->head : NULL,
					 .head_len = ferry__head_len(&s->h), .src = src };
	if (!ranges)
		return ferry__fail(-ENOMEM, "reader: out of memory for %lld ranges", (long long)n);
	for (int64_t k = 0; k < n; k++)
		ranges[k] = (struct ferry__range){ .offset = base + runs[k].src,
						   .len = runs[k].len, .dst = dst + runs[k].dst };
	int rc = n ? ferry__load_ranges(r->ld, s->f, ranges, (unsigned)n, &opts)
		   : ferry__io_check_unchanged(s->f);
	free(ranges);
	return rc;
}

/* A FETCH_BIG output: the runs of a C-order, native-endian file, or of a
 * deflated member's array (converted on the host), queued on async. */
static int big_runs(struct ferry_reader *r, struct slot *s, char *dst, const struct ferry__run *runs,
		    int64_t n, struct ferry__ticket *async)
{
	const unsigned char *array = NULL;
	if (!s->member)
		return read_runs(r, s, dst, runs, n, async, NULL);
	int rc = ferry__member_array(s->f, s->member, &array);
	return rc < 0 ? rc : read_runs(r, s, dst, runs, n, async, array);
}

/* The whole array of s (its archive member's with npz_key) into dst. */
static int load_whole(struct ferry_reader *r, struct slot *s, void *dst,
		      const struct ferry__load_opts *opts)
{
	if (s->member)
		return ferry__member_load(r->ld, s->f, s->member, dst, opts);
	return ferry__load_payload(r->ld, s->f, &s->h, dst, opts);
}

/* Loads the whole payload (as C order) into scratch device memory and copies
 * the runs out of it: for Fortran-order and byte-swapped files, and archive
 * members (whose CRC covers the whole member). A whole array goes straight
 * into dst, returning once its copies (and conversion) are queued on async. */
static int copy_runs_via_scratch(struct ferry_reader *r, struct slot *s, char *dst,
				 const struct ferry__run *runs, int64_t n,
				 struct ferry__ticket *async)
{
	struct ferry__device *dev = r->dev;
	struct ferry__load_opts opts = { .parallel = r->ld->threads, .stats = &s->stats };
	void *scratch;
	if (n == 1 && runs[0].src == 0 && runs[0].dst == 0 && runs[0].len == s->h.data_size) {
		opts.async = async;
		return load_whole(r, s, dst, &opts);
	}
	int rc = dev->ops->mem_alloc(dev, s->h.data_size ? s->h.data_size : 1, &scratch);
	if (rc < 0)
		return ferry__fail(rc, "reader: cannot allocate %llu bytes of scratch memory",
				   (unsigned long long)s->h.data_size);
	rc = load_whole(r, s, scratch, &opts);
	for (int64_t k = 0; rc == 0 && k < n; k++)
		rc = dev->ops->copy_async(dev, r->side, dst + runs[k].dst,
					  (char *)scratch + runs[k].src, runs[k].len, FERRY__D2D);
	int sync = dev->ops->stream_sync(dev, r->side);
	dev->ops->mem_free(dev, scratch);
	return rc < 0 ? rc : sync;
}

/* A stored member whose header came from the cache: its header's bytes read
 * back unchanged (the packed path reads them with the payload). */
static int check_member_head(struct slot *s)
{
	unsigned char head[FERRY__HEAD_MAX];
	size_t len = ferry__slot_head_len(s);
	if (!s->cached || !s->member)
		return 0;
	int rc = ferry__io_read_host(s->f, head, len, s->member->data_at, NULL);
	s->stats.bytes_read += len;
	s->stats.reads++;
	if (rc == 0 && memcmp(head, s->head, len))
		rc = header_changed(s);
	return rc;
}

/* One FETCH_BIG or FETCH_SLOW output; a BIG one, and a SLOW one loaded whole
 * (converted, or an archive member), return once their copies are queued. */
static void fetch_one(struct ferry_batch *b, struct slot *s)
{
	struct ferry_reader *r = b->r;
	struct ferry__run one, *runs = NULL;
	char *dst = b->mem + s->offset;
	unsigned lane = ferry__lanes_pick_index(r->ld->lanes);
	int rc = open_slot(r, s);
	if (rc != 0)
		return;
	int64_t n = region_runs(s, &one, &runs);
	rc = n < 0 ? (int)n : check_member_head(s);
	if (rc == 0 && s->rg.padded)
		rc = fill_output(r, s, dst);
	if (rc == 0 && s->kind == FETCH_BIG)
		rc = big_runs(r, s, dst, runs, n, &b->tickets[lane]);
	else if (rc == 0)
		rc = s->h.swap || s->h.fortran_order || s->member
			     ? copy_runs_via_scratch(r, s, dst, runs, n, &b->tickets[lane])
			     : read_runs(r, s, dst, runs, n, NULL, NULL);
	if (runs != &one)
		free(runs);
	finish_slot(r, s, rc);
}

void ferry__fetch(struct ferry_batch *const *bs, const struct item *items, unsigned n)
{
	struct ferry_batch *b = bs[0];
	struct slot *s = &b->slots[b->out[items[0].first]];
	if (s->kind == FETCH_PACK)
		fetch_packed(bs, items, n);
	else
		fetch_one(b, s);
}

/* The padding rows repeat the last output: its row is copied after itself,
 * then the rows so far after themselves, doubling (log2 of the rows copies). */
int ferry__fill_padding(struct ferry_batch *b)
{
	struct ferry__device *dev = b->r->dev;
	const struct slot *last = &b->slots[b->out[b->nout - 1]];
	char *row0 = b->mem + last->offset;
	uint64_t have = 1, want = 1 + (uint64_t)b->npad;
	int rc = ferry__wait_copies(b);
	while (rc == 0 && have < want) {
		uint64_t n = have < want - have ? have : want - have;
		size_t len = (size_t)((n - 1) * b->pad_stride + last->nbytes);
		rc = dev->ops->copy_async(dev, b->r->side, row0 + have * b->pad_stride, row0, len,
					  FERRY__D2D);
		have += n;
	}
	int sync = dev->ops->stream_sync(dev, b->r->side);
	if (rc == 0 && sync < 0)
		rc = sync;
	return rc < 0 ? ferry__fail(rc, "%s: filling the padding of a batch: %s", b->r->name,
				    ferry_strerror(rc)) : 0;
}

void ferry__launch_copies(struct ferry_batch *b)
{
	const struct ferry__lanes *lanes = b->r->ld->lanes;
	for (unsigned i = 0; i < ferry__lanes_count(lanes); i++)
		if (b->tickets[i].seq) /* an error reaches the ticket: the wait reports it */
			(void)ferry__staging_launch_for(ferry__lanes_get(lanes, i), &b->tickets[i]);
}

int ferry__wait_copies(struct ferry_batch *b)
{
	const struct ferry__lanes *lanes = b->r->ld->lanes;
	int first = 0;
	for (unsigned i = 0; i < ferry__lanes_count(lanes); i++) {
		struct ferry__staging *stg = ferry__lanes_get(lanes, i);
		int rc;
		if (!b->tickets[i].seq)
			continue;
		/* b's items are done: no thread queues on its tickets any more */
		if (!ferry__staging_settled(stg, &b->tickets[i], &rc))
			rc = ferry__staging_wait(stg, &b->tickets[i]);
		if (rc == 0)
			b->tickets[i].seq = 0; /* landed: a later wait (reuse) has nothing to ask */
		if (rc < 0 && !first)
			first = rc;
	}
	return first;
}
