/*
 * Small files read whole, many per system call: where the loader has a
 * backend with read_files (io_uring), the FETCH_PACK outputs of a run whose
 * headers came from the cache are opened, read (header into scratch, payload
 * straight into staging) and closed in the kernel, with the path's identity
 * taken right after the read. Stored .npz members too: their .npy header and
 * payload, read from where the cache says the member's data starts, its
 * CRC-32 checked. An output whose file changed since its header was cached
 * is stale (its batch is planned again); one the batch could not read (not
 * in the page cache, gone, refused, a CRC-32 that does not match) is left to
 * the per-file path, which reads it or says why not.
 */
#include "reader/reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#define GROUP 128 /* files one read_files call takes */

struct group {
	struct ferry__file_read reads[GROUP];
	struct slot *slots[GROUP];
	unsigned char heads[GROUP][FERRY__HEAD_MAX];
	unsigned n;
};

/* Where the read of s starts: its file's first byte, or its member's. */
static uint64_t read_start(const struct slot *s)
{
	return s->member ? s->member->data_at : 0;
}

/* A whole array whose header the cache gave, not yet opened. */
static int readable_whole(const struct ferry_reader *r, const struct slot *s)
{
	if (!s->cached || s->f || s->stale || !ferry__slot_live(s) ||
	    s->h.data_offset - read_start(s) > FERRY__HEAD_MAX ||
	    ferry__slot_fortran(s))
		return 0; /* a Fortran-order file is transposed as read_packed reads it */
	return ferry__slot_whole(s);
}

static void add_read(struct group *g, const struct ferry_reader *r, struct slot *s, char *dst)
{
	unsigned i = g->n++;
	size_t head = (size_t)(s->h.data_offset - read_start(s));
	g->slots[i] = s;
	g->reads[i] = (struct ferry__file_read){
		.path = r->ds.paths[s->file], .offset = read_start(s), .ndst = s->nbytes ? 2 : 1,
		.dst = { { g->heads[i], head }, { dst, s->nbytes } }, .len = head + s->nbytes };
}

/* Whether s's payload, read to dst, is what its member's CRC-32 says (a
 * .npy file has none to check). */
static int crc_matches(const struct slot *s, const struct ferry__file_read *fr)
{
	const struct ferry__member *m = s->member;
	if (!m)
		return 1;
	uint32_t crc = s->nbytes ? ferry__crc32(0, fr->dst[1].iov_base, s->nbytes) : 0;
	return ferry__crc32_combine(m->head_crc, crc, m->h.data_size) == m->crc;
}

/* What one read says about its slot: read (fetched), stale, or for the
 * per-file path (neither flag set). */
static void settle_read(const struct ferry__file_read *fr, const unsigned char *head,
			struct slot *s)
{
	if (fr->result < 0 || (size_t)fr->result != fr->len)
		return; /* the per-file path reads it, or says why it cannot */
	if (memcmp(&fr->id, &s->id, sizeof(s->id)) ||
	    memcmp(head, s->head, ferry__slot_head_len(s))) {
		s->fetched = s->stale = 1;
		return;
	}
	if (!crc_matches(s, fr))
		return; /* the per-file path reads it again and says so */
	ferry__swap_output(s, fr->dst[1].iov_base);
	s->fetched = 1;
	s->stats.bytes_read += fr->len;
	s->stats.reads++;
	s->stats.files_buffered++; /* read_files never opens with O_DIRECT */
}

static void flush(const struct ferry_reader *r, struct group *g)
{
	const struct ferry__loader *ld = r->ld;
	if (g->n && ld->files_ops->read_files(ld->files_io, g->reads, g->n) == 0)
		for (unsigned i = 0; i < g->n; i++)
			settle_read(&g->reads[i], g->heads[i], g->slots[i]);
	ferry__clear_error(); /* what failed is read again, and its error is that read's */
	g->n = 0;
}

void ferry__fetch_whole_files(struct ferry_batch *const *bs, const struct item *items,
			      unsigned n, char *buf, const size_t *base)
{
	const struct ferry_reader *r = bs[0]->r;
	struct group *g;
	if (!r->ld->files_ops || !(g = malloc(sizeof(*g))))
		return; /* each file is then read on its own */
	g->n = 0;
	for (unsigned j = 0; j < n; j++) {
		const struct ferry_batch *b = bs[j];
		uint64_t first = b->slots[b->out[items[j].first]].offset;
		for (unsigned k = 0; k < items[j].count; k++) {
			struct slot *s = &b->slots[b->out[items[j].first + k]];
			if (!readable_whole(r, s))
				continue;
			add_read(g, r, s, buf + base[j] + (s->offset - first));
			if (g->n == GROUP)
				flush(r, g);
		}
	}
	flush(r, g);
	free(g);
}
