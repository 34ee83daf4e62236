/*
 * The header cache: one entry per dataset file, the header as parsed and the
 * file it was parsed from (device, inode, size, mtime, ctime). Entries are
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
	struct header_entry *retired_next;
	unsigned char head[]; /* the header's first ferry__head_len(&h) bytes */
};

int ferry__headers_lookup(struct ferry_reader *r, struct slot *s)
{
	struct header_entry *e;
	if (!r->cache_on)
		return 0;
	e = atomic_load_explicit(&r->cache[s->file], memory_order_acquire);
	if (!e)
		return 0;
	s->h = e->h;
	s->id = e->id;
	memcpy(s->head, e->head, ferry__head_len(&e->h));
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
	size_t len = ferry__head_len(&s->h);
	struct header_entry *e;
	if (!r->cache_on || !(e = malloc(sizeof(*e) + len)))
		return; /* no entry: the next read parses again */
	e->id = s->id;
	e->h = s->h;
	e->retired_next = NULL;
	memcpy(e->head, s->head, len);
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
