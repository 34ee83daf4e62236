/*
 * The header cache: one entry per dataset file, the header as parsed and the
 * file it was parsed from (device, inode, size, mtime, ctime); with npz_key,
 * the stored member located in the archive too (where its header and payload
 * lie, its CRC-32s), so a later epoch reads it without the zip directory.
 * Deflated members are not kept: their probe inflates them. Entries are
 * published whole and never changed; a lookup reads one pointer, so IO threads
 * look up without a lock. A replaced entry is kept until the reader closes,
 * since another thread may still be copying it.
 */
#include "reader/reader.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct header_entry {
	struct ferry__file_id id;
	struct ferry__npy_header h;
	int has_member;
	struct ferry__member member; /* with npz_key: a stored member, no buffers */
	struct header_entry *retired_next;
	unsigned char head[]; /* the header's first ferry__slot_head_len bytes */
};

/* s's member from e's (s keeps it until the fetch closes the slot). */
static int member_into(const struct ferry_reader *r, struct slot *s, const struct header_entry *e)
{
	if (s->member)
		ferry__member_close(s->member);
	else if (!(s->member = malloc(sizeof(*s->member))))
		return 0; /* then the file is probed */
	*s->member = e->member;
	s->member->key = r->key;
	return 1;
}

/* A stored member whose whole .npy header the entry can hold. */
static int member_cacheable(const struct slot *s)
{
	return s->member && s->member->method == FERRY__ZIP_STORED && !s->member->inflated &&
	       s->h.data_offset - s->member->data_at <= FERRY__HEAD_MAX;
}

int ferry__headers_lookup(struct ferry_reader *r, struct slot *s)
{
	struct header_entry *e;
	if (!r->cache_on)
		return 0;
	e = atomic_load_explicit(&r->cache[s->file], memory_order_acquire);
	if (!e || (e->has_member && !member_into(r, s, e)))
		return 0;
	s->h = e->h;
	s->id = e->id;
	memcpy(s->head, e->head, ferry__slot_head_len(s));
	s->cached = 1;
	return 1;
}

static void retire(struct ferry_reader *r, struct header_entry *old)
{
	if (!old)
		return;
	pthread_mutex_lock(&r->retired_lock);
	old->retired_next = r->retired;
	r->retired = old;
	pthread_mutex_unlock(&r->retired_lock);
}

void ferry__headers_store(struct ferry_reader *r, const struct slot *s)
{
	size_t len = ferry__slot_head_len(s);
	struct header_entry *e = NULL;
	if (!r->cache_on)
		return;
	/* No entry (a member not kept, no memory): the next read parses again. */
	if ((!r->key || member_cacheable(s)) && (e = malloc(sizeof(*e) + len))) {
		e->id = s->id;
		e->h = s->h;
		e->has_member = r->key != NULL;
		if (e->has_member) {
			e->member = *s->member;
			e->member.key = NULL;
			e->member.inflated = e->member.array = e->member.whole = NULL;
		}
		e->retired_next = NULL;
		memcpy(e->head, s->head, len);
	}
	retire(r, atomic_exchange_explicit(&r->cache[s->file], e, memory_order_acq_rel));
}

void ferry__headers_free(struct ferry_reader *r)
{
	for (size_t i = 0; r->cache && i < r->ds.n; i++)
		free(atomic_load(&r->cache[i]));
	free(r->cache);
	r->cache = NULL;
	while (r->retired) {
		struct header_entry *e = r->retired;
		r->retired = e->retired_next;
		free(e);
	}
}
