/*
 * The registration cache of the zero-copy path (docs/design.md, "Zero copy
 * from the page cache"): whole-file read-only mappings of warm files,
 * registered with the device once and kept across loads, so that a load
 * copies straight out of the page cache without a read or a CPU copy.
 *
 * Registering costs about 30 ms a GiB and serializes across threads, so it
 * never runs on a load's path: a load that read a large file through staging
 * offers it (a dup of its descriptor) to the context's one registrar thread,
 * which checks that the file is whole in the page cache, maps it, registers
 * it and inserts it; files below FERRY__MAPPED_GROUP offered together are
 * mapped side by side and registered as one range (a pin), which stays
 * pinned until its last file has left the cache. Loads look files up by
 * identity (ferry__file_id).
 *
 * The staging invariant, extended: a mapping is unregistered and unmapped only
 * when no copy out of it is in flight. Each entry remembers, per lane, the
 * batch that holds its newest copies (the engine's FIFO says when that batch
 * completed) and how many loads hold it between lookup and queueing. Only the
 * registrar frees entries (and the context's close, once it has stopped), so
 * it may look at them with the lock released.
 *
 * A registration holds its context's driver lock while it runs: copies queued
 * before it run on, but no copy can be launched in that context meanwhile
 * (tests/gpu/diag/register_overlap.c: on an H100 two threads launching copies
 * moved 54 GB/s alone, under 2 GB/s beside back-to-back registrations). CUDA
 * registers in a context of its own (FERRY__DEV_MAP_BESIDE), and the lanes'
 * launches run on. On a device without that flag the registrar holds the
 * lanes' early launches while it registers (the threads that would launch go
 * on reading into free buffers instead of waiting in the driver). Either way
 * it paces itself: after a registration that took t it waits
 * t * (100 - pace) / pace before the next (FERRY_PIN_PACE, a percent of the
 * time; at 0 the pause never ends; docs/zero-copy-measurements.md has the
 * measured trade-off). There is
 * nothing to hold up while no copy is launched (the training step's compute,
 * between batches): once the lanes launched nothing for FERRY__QUIET_NS, the
 * wait is cut short. The pace is for a file's first offer: one offered again
 * before it was registered (passed over while the registrar waited or its
 * queue was full: the dataset came round again) goes first and at once, so
 * that the first epoch pays for part of the registrations and the second
 * finishes them, rather than leaving them to later epochs.
 *
 * Pinned pages cannot be reclaimed, so the registrar also gives registrations
 * back: when the machine runs short of memory (the reserve), when their file
 * is gone from its path (nothing will look them up again), and for good after
 * the platform refused MAX_REFUSALS registrations in a row.
 */
#include "load/load.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* Offers waiting for the registrar at most: each holds a descriptor. */
#define MAX_OFFERS 64
/* Files one registration takes at most (FERRY__MAPPED_GROUP bounds its bytes). */
#define GROUP_FILES 16
/* Hash buckets of the entries by inode: a lookup per load of a large file must
 * not walk thousands of entries under the lock. */
#define BUCKETS 4096
/* Registrations refused in a row (none succeeding) after which the registrar
 * stops trying: the platform refuses, and each try maps a file for nothing. */
#define MAX_REFUSALS 3
/* How often an idle registrar checks for memory pressure (one read of
 * /proc/meminfo), and for files gone from their path (a stat an entry). */
#define PRESSURE_PERIOD_NS 1000000000ll
#define GONE_PERIOD_NS 10000000000ll
/* Files offered and not registered, remembered by a hash of their identity
 * in a table this long (a collision forgets one or takes one for another:
 * a registration made with the pause or without it, never a wrong mapping). */
#define PASSED_SLOTS 16384u

struct lane_use {
	struct ferry__staging *stg; /* NULL: no copy out of the entry on this slot yet */
	uint64_t seq;               /* the newest batch of copies out of the entry there */
};

/* One registration: one or more files mapped side by side into one reserved
 * range (files below FERRY__MAPPED_GROUP register together: a registration
 * costs the driver a fixed time a call on top of its time a byte). The range
 * is unregistered and unmapped once its last file has left the cache. */
struct pin {
	void *base;
	size_t len;         /* each file's size rounded up to a page, summed */
	int registered;
	unsigned files;     /* its entries in the cache */
};

struct ferry__mapping {
	struct ferry__file_id id;
	char *path;         /* the path it was offered by: is it still there? */
	struct pin *pin;    /* the registration it is part of */
	void *addr;         /* the file's first byte, inside pin's range */
	int stale;          /* another version of its file was seen: drop when idle */
	unsigned users;     /* loads between ferry__mapped_find and release */
	struct lane_use uses[FERRY__MAX_LANES];
	struct ferry__mapping *prev, *next; /* most recently used first */
	struct ferry__mapping *hnext;       /* its bucket's chain */
};

struct offer {
	struct ferry__file *f; /* a dup of the loaded file's descriptor */
	int again;             /* offered before and passed over: no pause for it */
	struct offer *next;
};

struct ferry__mapped {
	struct ferry__device *dev;
	const struct ferry__lanes *lanes; /* whose launches tell whether copies run */
	struct ferry__trace *trace;       /* FERRY_TRACE's, or NULL */
	uint64_t budget, pinned;     /* bytes of the pins registered (or being registered) */
	uint64_t reserve;            /* memory to leave free, as ferry__mapped_create says */
	unsigned pace;               /* percent of the time the registrar may register */
	uint64_t resume_ns;          /* paced: no registration before this time */
	struct ferry__quiet quiet;   /* the lanes' launches, as last looked at */
	pthread_mutex_t lock;
	pthread_cond_t work;         /* an offer came, a sweep is asked for, or stop */
	pthread_cond_t idle;         /* the registrar has no offer left and swept */
	struct ferry__mapping *head, *tail;
	unsigned count;
	struct ferry__mapping *buckets[BUCKETS];
	struct offer *offers;        /* those offered again first, then in order */
	unsigned noffers;
	struct ferry__file_id taking[GROUP_FILES]; /* offers being registered now */
	unsigned ntaking;
	int stopping, started;
	int held;                    /* ferry__mapped_hold: offers queue, none is taken */
	pthread_t thread;
	uint64_t sweeps_asked, sweeps_done; /* ferry__mapped_drain's forced sweeps */
	uint64_t next_pressure_ns, next_gone_ns;
	unsigned refused_in_row;
	int given_up;                /* MAX_REFUSALS in a row: no more offers */
	uint64_t *passed;            /* PASSED_SLOTS hashes of files offered, not registered */
	uint64_t registered_ever, registrations, refused, hits, released, gone, pressed, unpaced;
	uint64_t hurried;            /* registrations of files offered again, made at once */
	char last_refusal[256];      /* the newest registration that failed, and why */
};

static int same_id(const struct ferry__file_id *a, const struct ferry__file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns && a->nlink == b->nlink;
}

static struct ferry__mapping **bucket(struct ferry__mapped *m, const struct ferry__file_id *id)
{
	uint64_t h = (id->ino * 0x9e3779b97f4a7c15ull) ^ id->dev;
	return &m->buckets[(h >> 32) % BUCKETS];
}

/* id's slot in the table of files passed over; *h gets the hash kept there
 * (never 0, an empty slot). */
static uint64_t *passed_slot(struct ferry__mapped *m, const struct ferry__file_id *id,
			     uint64_t *h)
{
	uint64_t x = id->ino * 0x9e3779b97f4a7c15ull ^ id->dev * 0xc2b2ae3d27d4eb4full ^
		     (id->size + (uint64_t)id->mtime_ns) * 0x165667b19e3779f9ull;
	x ^= x >> 31;
	*h = x | 1;
	return &m->passed[(x >> 40) % PASSED_SLOTS];
}

/* Whether the file was offered before and not registered since; remembers
 * this offer. Lock held. */
static int passed_over(struct ferry__mapped *m, const struct ferry__file_id *id)
{
	uint64_t h, *slot = passed_slot(m, id, &h);
	int again = *slot == h;
	*slot = h;
	return again;
}

/* Forgets a file registered: offered again after an eviction, it waits its
 * turn like any first offer (a cache churning through a set larger than its
 * budget stays paced). Lock held. */
static void forget_passed(struct ferry__mapped *m, const struct ferry__file_id *id)
{
	uint64_t h, *slot = passed_slot(m, id, &h);
	if (*slot == h)
		*slot = 0;
}

static void hash_insert(struct ferry__mapped *m, struct ferry__mapping *e)
{
	struct ferry__mapping **b = bucket(m, &e->id);
	e->hnext = *b;
	*b = e;
}

static void hash_remove(struct ferry__mapped *m, struct ferry__mapping *e)
{
	struct ferry__mapping **p = bucket(m, &e->id);
	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
}

static void unlink_entry(struct ferry__mapped *m, struct ferry__mapping *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		m->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		m->tail = e->prev;
	e->prev = e->next = NULL;
	m->count--;
}

static void push_front(struct ferry__mapped *m, struct ferry__mapping *e)
{
	e->prev = NULL;
	e->next = m->head;
	if (m->head)
		m->head->prev = e;
	else
		m->tail = e;
	m->head = e;
	m->count++;
}

/* A row of the registrar's in the trace (FERRY_TRACE), as lane 0: event, the
 * pin's bytes, its first file (NULL: none said) and its files in offset. */
static void trace_pin(struct ferry__mapped *m, const char *event, size_t len, const char *path,
		      unsigned files)
{
	ferry__trace(m->trace, 0, event, -1, 0, NULL, len, path, files);
}

/* Unregisters and unmaps a pin with no file left, and frees it. */
static void free_pin(struct ferry__mapped *m, struct pin *p)
{
	if (p->registered) {
		m->dev->ops->map_unregister(m->dev, p->base, p->len);
		trace_pin(m, "unpinned", p->len, NULL, 0);
	}
	ferry__io_unmap(p->base, p->len);
	free(p);
}

/* Frees an entry already retired, and its pin when it was the pin's last
 * (retire_entry said so). Lock not held. */
static void free_entry(struct ferry__mapped *m, struct ferry__mapping *e, int last)
{
	if (last)
		free_pin(m, e->pin);
	free(e->path);
	free(e);
}

/* No load holds e and every batch of copies out of it has completed. Lock held. */
static int entry_idle(const struct ferry__mapping *e)
{
	if (e->users)
		return 0;
	for (unsigned i = 0; i < FERRY__MAX_LANES && e->uses[i].stg; i++)
		if (!ferry__staging_reached(e->uses[i].stg, e->uses[i].seq))
			return 0;
	return 1;
}

/* Unlinks e; when it was its pin's last file, gives the pin's bytes back to
 * the budget and returns 1 (the pin is to be freed). Lock held. */
static int retire_entry(struct ferry__mapped *m, struct ferry__mapping *e)
{
	unlink_entry(m, e);
	hash_remove(m, e);
	if (--e->pin->files)
		return 0;
	m->pinned -= e->pin->len;
	return 1;
}

/* Retires e and frees it, the lock released meanwhile (unregistering takes
 * time). Registrar only. Returns the bytes given back to the budget (0 while
 * other files of its pin remain). Lock held on entry and return. */
static uint64_t evict(struct ferry__mapped *m, struct ferry__mapping *e)
{
	int last = retire_entry(m, e);
	uint64_t freed = last ? e->pin->len : 0;
	pthread_mutex_unlock(&m->lock);
	free_entry(m, e, last);
	pthread_mutex_lock(&m->lock);
	return freed;
}

/* The least recently used idle entry (stale ones first), or NULL. Lock held. */
static struct ferry__mapping *idle_victim(struct ferry__mapped *m)
{
	for (struct ferry__mapping *e = m->tail; e; e = e->prev)
		if (e->stale && entry_idle(e))
			return e;
	for (struct ferry__mapping *e = m->tail; e; e = e->prev)
		if (entry_idle(e))
			return e;
	return NULL;
}

/*
 * Reserves len bytes of the budget (and files entries of FERRY__MAPPED_MAX),
 * evicting idle entries from the cold end. The lock is released while an
 * evicted mapping is unregistered. Returns 1 when reserved, 0 when busy
 * entries leave no room. Lock held on entry and return.
 */
static int make_room(struct ferry__mapped *m, uint64_t len, unsigned files)
{
	while (len > m->budget - m->pinned || m->count + files > FERRY__MAPPED_MAX) {
		struct ferry__mapping *victim = len <= m->budget ? idle_victim(m) : NULL;
		if (!victim)
			return 0;
		evict(m, victim);
	}
	m->pinned += len;
	return 1;
}

/* Drops stale entries that nothing reads any more. Lock held on entry and return. */
static void drop_stale(struct ferry__mapped *m)
{
	for (struct ferry__mapping *e = m->tail, *prev; e; e = prev) {
		prev = e->prev;
		if (!e->stale || !entry_idle(e))
			continue;
		evict(m, e);
		prev = m->tail; /* the list may have changed meanwhile */
	}
}

/* Counts a refusal (lock held); enough of them in a row end the offers. */
static void note_refusal(struct ferry__mapped *m)
{
	m->refused++;
	if (++m->refused_in_row >= MAX_REFUSALS)
		m->given_up = 1;
	snprintf(m->last_refusal, sizeof(m->last_refusal), "%s", ferry_last_error());
	ferry__clear_error();
}

/* MemAvailable into *avail, the lock released meanwhile. Returns 0, or a
 * negative code when it cannot be read (then there is no pressure to see). */
static int read_available(struct ferry__mapped *m, uint64_t *avail)
{
	pthread_mutex_unlock(&m->lock);
	int rc = ferry__io_mem_available(avail);
	pthread_mutex_lock(&m->lock);
	return rc;
}

/*
 * How many bytes short of the reserve the machine would be with more bytes
 * pinned on top of what this cache pins: MemAvailable counts pinned page-cache
 * pages as reclaimable, which they are not, so they are taken off it. Lock held.
 */
static uint64_t shortfall(const struct ferry__mapped *m, uint64_t avail, uint64_t more)
{
	uint64_t left = avail > m->pinned ? avail - m->pinned : 0;
	uint64_t want = more > UINT64_MAX - m->reserve ? UINT64_MAX : m->reserve + more;
	return left >= want ? 0 : want - left;
}

/* Whole in the page cache, and still the version the load read: mapping it
 * then reads nothing from storage. */
static int worth_mapping(struct ferry__file *f)
{
	uint64_t resident = 0;
	return ferry__io_resident(f, 0, f->size, &resident) == 0 && resident >= f->size &&
	       ferry__io_check_unchanged(f) == 0;
}

/* Puts the files' paths before the device's message (which names the call). */
static void name_files(struct ferry__file *const *fs, unsigned n, int rc)
{
	char *why = ferry__error_copy();
	const char *what = n > 1 ? " and the files beside it: registering their mapping"
				 : ": registering its mapping";
	ferry__fail(rc, "%s%s: %s", fs[0]->path, what, why ? why : ferry_strerror(rc));
	free(why);
}

/* Registers len bytes at addr. Where the device's registrations hold every
 * launch up (no FERRY__DEV_MAP_BESIDE), the lanes' early launches are held
 * meanwhile: the threads that would launch had better go on reading into free
 * buffers. *took gets the registration's time (what the pace weighs:
 * launching what the hold left pending is not). Returns 0 or the device's
 * code (its message kept, whatever ending the hold says). */
static int register_holding_launches(struct ferry__mapped *m, void *addr, size_t len,
				     uint64_t *took)
{
	int hold = m->lanes && !(m->dev->ops->flags & FERRY__DEV_MAP_BESIDE);
	if (hold)
		ferry__lanes_hold_launches(m->lanes, 1);
	uint64_t start = ferry__now_ns();
	int rc = m->dev->ops->map_register(m->dev, addr, len);
	*took = ferry__now_ns() - start;
	if (!hold)
		return rc;
	char *why = rc < 0 ? ferry__error_copy() : NULL;
	ferry__lanes_hold_launches(m->lanes, 0);
	if (why) {
		ferry__fail(rc, "%s", why);
		free(why);
	}
	return rc;
}

/* A file's room in a pin: its size rounded up to a page. */
static size_t slot_of(const struct ferry__file *f)
{
	return ferry__page_round((size_t)f->size);
}

/* Maps the n files side by side into a new pin of len bytes, each entry told
 * where its file is, and registers it (budget already reserved); *took gets
 * the registration's time. Returns 0 with the pin (no file counted in it yet)
 * or a negative code with a message naming a file. Lock not held. */
static int pin_files(struct ferry__mapped *m, struct ferry__file *const *fs,
		     struct ferry__mapping **es, unsigned n, size_t len, struct pin **out,
		     uint64_t *took)
{
	struct pin *p = calloc(1, sizeof(*p));
	if (!p)
		return ferry__fail(-ENOMEM, "%s: out of memory for a mapping", fs[0]->path);
	p->len = len;
	trace_pin(m, "pinning", len, fs[0]->path, n);
	size_t mapped;
	/* A file alone goes where the kernel places it (a large one at a huge
	 * page's boundary: on an H100 a 64 MiB file mapped into a page-aligned
	 * reservation instead copied 6% slower from epoch 2 on, 2026-12-06). */
	int rc = n == 1 ? ferry__io_map(fs[0], &p->base, &mapped)
			: ferry__io_reserve(len, &p->base);
	char *at = p->base;
	for (unsigned i = 0; rc == 0 && i < n; at += slot_of(fs[i]), i++) {
		if (n > 1)
			rc = ferry__io_map_at(fs[i], at); /* its message names the file */
		es[i]->pin = p;
		es[i]->addr = at;
	}
	if (rc == 0)
		trace_pin(m, "registering", len, fs[0]->path, n);
	if (rc == 0 && (rc = register_holding_launches(m, p->base, len, took)) < 0)
		name_files(fs, n, rc);
	p->registered = rc == 0;
	trace_pin(m, rc == 0 ? "pinned" : "pin_failed", len, fs[0]->path, n);
	if (rc < 0) {
		free_pin(m, p);
		return rc;
	}
	*out = p;
	return 0;
}

/* New entries for the n files, their pin not yet known. Returns 0 or -ENOMEM
 * (none made). */
static int new_entries(struct ferry__file *const *fs, unsigned n, struct ferry__mapping **es)
{
	for (unsigned i = 0; i < n; i++) {
		es[i] = calloc(1, sizeof(**es));
		if (es[i] && !(es[i]->path = strdup(fs[i]->path))) {
			free(es[i]);
			es[i] = NULL;
		}
		if (!es[i]) {
			while (i--)
				free_entry(NULL, es[i], 0);
			return ferry__fail(-ENOMEM, "%s: out of memory for a mapping", fs[0]->path);
		}
		es[i]->id = fs[i]->id;
	}
	return 0;
}

/* Puts the n new entries of pin p (pin_files placed them) into the cache.
 * Lock held. */
static void insert_entries(struct ferry__mapped *m, struct ferry__mapping **es, unsigned n,
			   struct pin *p)
{
	for (unsigned i = 0; i < n; i++) {
		push_front(m, es[i]);
		hash_insert(m, es[i]);
		forget_passed(m, &es[i]->id);
	}
	p->files = n;
	m->registered_ever += n;
	m->registrations++;
}

/* Keeps, in order, the files whole in the page cache and still the version
 * their load read; returns how many. */
static unsigned keep_worth_mapping(struct ferry__file **fs, unsigned n)
{
	unsigned kept = 0;
	for (unsigned i = 0; i < n; i++)
		if (worth_mapping(fs[i]))
			fs[kept++] = fs[i];
	return kept;
}

/* Whether pinning len more bytes would leave the machine short of memory.
 * Lock held on entry and return. */
static int pressed(struct ferry__mapped *m, uint64_t len)
{
	uint64_t avail;
	if (read_available(m, &avail) < 0 || !shortfall(m, avail, len))
		return 0;
	m->pressed++;
	return 1;
}

/* The time the pause after a registration that took took_ns ends: never
 * (UINT64_MAX) at pace 0. */
static uint64_t pause_end(uint64_t took_ns, unsigned pace)
{
	uint64_t now = ferry__now_ns(), pause = ferry__mapped_pause_ns(took_ns, pace);
	return pause > UINT64_MAX - now ? UINT64_MAX : now + pause;
}

/* The registrar's work for up to GROUP_FILES offers: one pin for those worth
 * mapping, as many as the budget takes; offers made again (again) are not
 * followed by a pause. Lock held on entry and return. */
static void register_offers(struct ferry__mapped *m, struct ferry__file **fs, unsigned n,
			    int again)
{
	pthread_mutex_unlock(&m->lock);
	n = keep_worth_mapping(fs, n);
	pthread_mutex_lock(&m->lock);
	size_t len = 0;
	unsigned k = 0;
	while (k < n && len + slot_of(fs[k]) <= m->budget)
		len += slot_of(fs[k++]);
	if (!k || m->given_up || pressed(m, len) || !make_room(m, len, k))
		return;
	pthread_mutex_unlock(&m->lock);
	struct ferry__mapping *es[GROUP_FILES];
	struct pin *p = NULL;
	uint64_t took = 0;
	int rc = new_entries(fs, k, es);
	if (rc == 0 && (rc = pin_files(m, fs, es, k, len, &p, &took)) < 0)
		for (unsigned i = 0; i < k; i++)
			free_entry(m, es[i], 0);
	pthread_mutex_lock(&m->lock);
	if (!again)
		m->resume_ns = pause_end(took, m->pace);
	if (rc < 0)
		note_refusal(m);
	ferry__clear_error();
	if (rc < 0) {
		m->pinned -= len;
		return;
	}
	m->refused_in_row = 0;
	m->hurried += again;
	insert_entries(m, es, k, p);
}

/* Under memory pressure: gives back idle registrations, least recently used
 * first, until the reserve is free again. Lock held on entry and return. */
static void relieve_pressure(struct ferry__mapped *m)
{
	uint64_t avail;
	if (read_available(m, &avail) < 0)
		return;
	uint64_t need = shortfall(m, avail, 0);
	struct ferry__mapping *victim;
	while (need && (victim = idle_victim(m))) {
		uint64_t freed = evict(m, victim);
		need = freed >= need ? 0 : need - freed;
		m->released++;
	}
}

/* Marks stale the entries whose path no longer names their file (renamed
 * away, removed, replaced, rewritten): no load will find them again, and
 * their pages would stay pinned until the LRU reached them. The lock is
 * released while the paths are looked at. Lock held on entry and return. */
static void mark_gone(struct ferry__mapped *m)
{
	unsigned n = 0;
	struct ferry__mapping **all = m->count ? malloc(m->count * sizeof(*all)) : NULL;
	if (!all)
		return;
	for (struct ferry__mapping *e = m->head; e; e = e->next)
		all[n++] = e;
	pthread_mutex_unlock(&m->lock);
	for (unsigned i = 0; i < n; i++) {
		struct ferry__file_id now;
		if (ferry__io_path_id(all[i]->path, &now) == 0 && same_id(&now, &all[i]->id))
			all[i] = NULL;
	}
	pthread_mutex_lock(&m->lock);
	for (unsigned i = 0; i < n; i++)
		if (all[i] && !all[i]->stale) {
			all[i]->stale = 1;
			m->gone++;
		}
	free(all);
}

/* The registrar's upkeep between offers: files gone, memory pressure (each
 * when its period is up, or forced), stale entries. Lock held on entry and
 * return. */
static void sweep(struct ferry__mapped *m, int forced)
{
	uint64_t now = ferry__now_ns();
	if (forced || now >= m->next_gone_ns) {
		mark_gone(m);
		m->next_gone_ns = now + GONE_PERIOD_NS;
	}
	drop_stale(m);
	if (forced || now >= m->next_pressure_ns) {
		relieve_pressure(m);
		m->next_pressure_ns = now + PRESSURE_PERIOD_NS;
	}
}

uint64_t ferry__mapped_pause_ns(uint64_t took_ns, unsigned pace)
{
	if (pace >= 100)
		return 0;
	return pace ? took_ns / pace * (100 - pace) : UINT64_MAX;
}

/* Sleeps until an offer, a stop or the time ns (monotonic). Lock held. */
static void wait_until(struct ferry__mapped *m, uint64_t ns)
{
	struct timespec at = { .tv_sec = (time_t)(ns / 1000000000u),
			       .tv_nsec = (long)(ns % 1000000000u) };
	pthread_cond_timedwait(&m->work, &m->lock, &at);
}

/* Sleeps until an offer or a stop; while it holds registrations, at most
 * until the next pressure check is due. Lock held. */
static void wait_for_work(struct ferry__mapped *m)
{
	if (!m->count)
		pthread_cond_wait(&m->work, &m->lock);
	else
		wait_until(m, m->next_pressure_ns);
}

int ferry__quiet_look(struct ferry__quiet *q, uint64_t launched, uint64_t now)
{
	if (!q->looked || launched != q->launched) {
		*q = (struct ferry__quiet){ .looked = 1, .launched = launched, .since = now };
		return 0;
	}
	return now - q->since >= FERRY__QUIET_NS;
}

/* Whether the lanes launched no copy for FERRY__QUIET_NS. Lock held on entry
 * and return, released while the lanes are asked (their locks can be held
 * across a stream sync, and loads look mappings up under this one). */
static int quiet(struct ferry__mapped *m, uint64_t now)
{
	if (!m->lanes)
		return 0;
	pthread_mutex_unlock(&m->lock);
	uint64_t launched = ferry__lanes_launched(m->lanes);
	pthread_mutex_lock(&m->lock);
	return ferry__quiet_look(&m->quiet, launched, now); /* m->quiet: the registrar's own */
}

/* Takes the first offer and, when its file is below FERRY__MAPPED_GROUP, the
 * small ones queued right after it that share its turn (offered again, or
 * not), until the group holds FERRY__MAPPED_GROUP bytes or GROUP_FILES files;
 * registers them and closes their descriptors. Lock held. */
static void take_offers(struct ferry__mapped *m)
{
	struct ferry__file *fs[GROUP_FILES];
	unsigned n = 0;
	uint64_t bytes = 0;
	int again = m->offers->again;
	do {
		struct offer *o = m->offers;
		m->offers = o->next;
		m->noffers--;
		bytes += o->f->size;
		m->taking[n] = o->f->id;
		fs[n++] = o->f;
		free(o);
	} while (n < GROUP_FILES && bytes < FERRY__MAPPED_GROUP && m->offers &&
		 m->offers->f->size < FERRY__MAPPED_GROUP && m->offers->again == again);
	m->ntaking = n;
	register_offers(m, fs, n, again);
	m->ntaking = 0;
	for (unsigned i = 0; i < n; i++)
		ferry__io_file_close(fs[i]);
}

static void *registrar(void *arg)
{
	struct ferry__mapped *m = arg;
	pthread_mutex_lock(&m->lock);
	while (!m->stopping) {
		uint64_t now = ferry__now_ns();
		if (m->offers && !m->held &&
		    (m->offers->again || now >= m->resume_ns || (quiet(m, now) && !m->stopping))) {
			m->unpaced += !m->offers->again && now < m->resume_ns;
			take_offers(m);
			continue;
		}
		uint64_t asked = m->sweeps_asked;
		sweep(m, asked != m->sweeps_done); /* releases the lock: offers may come */
		m->sweeps_done = asked;
		if (m->sweeps_asked != asked || m->stopping)
			continue;
		/* paced: until the pause ends, or looking again for quiet */
		if (m->offers && !m->held) {
			now = ferry__now_ns();
			wait_until(m, now + FERRY__QUIET_NS < m->resume_ns ? now + FERRY__QUIET_NS
									  : m->resume_ns);
			continue;
		}
		pthread_cond_broadcast(&m->idle);
		wait_for_work(m);
	}
	pthread_cond_broadcast(&m->idle);
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

int ferry__mapped_create(struct ferry__device *dev, const struct ferry__lanes *lanes,
			 struct ferry__trace *trace, uint64_t budget, uint64_t reserve,
			 unsigned pace, struct ferry__mapped **out)
{
	struct ferry__mapped *m = calloc(1, sizeof(*m));
	*out = NULL;
	if (!m)
		return ferry__fail(-ENOMEM, "zero copy: out of memory");
	m->dev = dev;
	m->lanes = lanes;
	m->trace = trace;
	m->budget = budget;
	m->reserve = reserve;
	m->pace = pace;
	m->resume_ns = pace ? 0 : UINT64_MAX; /* at 0 even the first waits for quiet */
	m->passed = calloc(PASSED_SLOTS, sizeof(*m->passed));
	if (!m->passed) {
		free(m);
		return ferry__fail(-ENOMEM, "zero copy: out of memory");
	}
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_t monotonic; /* wait_for_work's deadlines are ferry__now_ns */
	pthread_condattr_init(&monotonic);
	pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
	pthread_cond_init(&m->work, &monotonic);
	pthread_condattr_destroy(&monotonic);
	pthread_cond_init(&m->idle, NULL);
	int rc = pthread_create(&m->thread, NULL, registrar, m);
	if (rc) {
		ferry__mapped_destroy(m);
		return ferry__fail(-rc, "zero copy: cannot start the registrar thread");
	}
	m->started = 1;
	*out = m;
	return 0;
}

void ferry__mapped_stop(struct ferry__mapped *m)
{
	if (!m || !m->started)
		return;
	pthread_mutex_lock(&m->lock);
	m->stopping = 1;
	pthread_cond_signal(&m->work);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);
	m->started = 0;
	while (m->offers) {
		struct offer *o = m->offers;
		m->offers = o->next;
		ferry__io_file_close(o->f);
		free(o);
	}
}

void ferry__mapped_destroy(struct ferry__mapped *m)
{
	if (!m)
		return;
	ferry__mapped_stop(m);
	while (m->head) {
		struct ferry__mapping *e = m->head;
		free_entry(m, e, retire_entry(m, e));
	}
	pthread_cond_destroy(&m->idle);
	pthread_cond_destroy(&m->work);
	pthread_mutex_destroy(&m->lock);
	free(m->passed);
	free(m);
}

/* The entry of f's inode, whatever its version, or NULL. Lock held. */
static struct ferry__mapping *find_inode(struct ferry__mapped *m, const struct ferry__file_id *id)
{
	for (struct ferry__mapping *e = *bucket(m, id); e; e = e->hnext)
		if (!e->stale && e->id.dev == id->dev && e->id.ino == id->ino)
			return e;
	return NULL;
}

/* Offered already: queued, or being registered (a load that misses meanwhile
 * must not queue the file a second time). Lock held. */
static int offered(const struct ferry__mapped *m, const struct ferry__file_id *id)
{
	for (const struct offer *o = m->offers; o; o = o->next)
		if (same_id(&o->f->id, id))
			return 1;
	for (unsigned i = 0; i < m->ntaking; i++)
		if (same_id(&m->taking[i], id))
			return 1;
	return 0;
}

struct ferry__mapping *ferry__mapped_find(struct ferry__mapped *m, const struct ferry__file *f)
{
	if (!m || f->size < FERRY__MAPPED_MIN)
		return NULL;
	pthread_mutex_lock(&m->lock);
	struct ferry__mapping *e = find_inode(m, &f->id);
	if (e && !same_id(&e->id, &f->id)) {
		e->stale = 1; /* the registrar drops it once idle */
		pthread_cond_signal(&m->work);
		e = NULL;
	}
	if (e) {
		m->hits++;
		e->users++;
		unlink_entry(m, e);
		push_front(m, e);
	}
	pthread_mutex_unlock(&m->lock);
	return e;
}

const void *ferry__mapping_addr(const struct ferry__mapping *e)
{
	return e->addr;
}

/* The slot of stg in e's uses (a free one when stg has none yet). */
static struct lane_use *use_slot(struct ferry__mapping *e, struct ferry__staging *stg)
{
	unsigned i = 0;
	while (i < FERRY__MAX_LANES - 1 && e->uses[i].stg && e->uses[i].stg != stg)
		i++;
	return &e->uses[i];
}

void ferry__mapped_release(struct ferry__mapped *m, struct ferry__mapping *e,
			   struct ferry__staging *stg, uint64_t seq)
{
	pthread_mutex_lock(&m->lock);
	struct lane_use *u = use_slot(e, stg);
	u->stg = stg;
	if (seq > u->seq)
		u->seq = seq;
	e->users--;
	pthread_mutex_unlock(&m->lock);
}

/* Whether an offer of f is worth a descriptor: large, buffered, not cached
 * or offered already, and within the budget. Lock held. */
static int wanted(struct ferry__mapped *m, const struct ferry__file *f)
{
	const struct ferry__mapping *e = find_inode(m, &f->id);
	return f->size >= FERRY__MAPPED_MIN && !f->direct && f->size <= m->budget && !m->given_up &&
	       !(e && same_id(&e->id, &f->id)) && m->noffers < MAX_OFFERS && !offered(m, &f->id);
}

/* Queues o: last, or, offered again, after the other offers made again
 * (ahead of every first offer). Lock held. */
static void enqueue_offer(struct ferry__mapped *m, struct offer *o)
{
	struct offer **at = &m->offers;
	while (*at && (!o->again || (*at)->again))
		at = &(*at)->next;
	o->next = *at;
	*at = o;
	m->noffers++;
	pthread_cond_signal(&m->work);
}

/* A file offered again while its first offer still waits: that offer moves
 * up and goes without the pause. Lock held. */
static void hurry_offer(struct ferry__mapped *m, const struct ferry__file_id *id)
{
	struct offer **at = &m->offers;
	while (*at && !same_id(&(*at)->f->id, id))
		at = &(*at)->next;
	struct offer *o = *at;
	if (!o || o->again)
		return;
	*at = o->next;
	m->noffers--;
	o->again = 1;
	enqueue_offer(m, o);
}

void ferry__mapped_offer(struct ferry__mapped *m, const struct ferry__file *f)
{
	if (!m || f->size < FERRY__MAPPED_MIN || f->direct)
		return;
	pthread_mutex_lock(&m->lock);
	int again = passed_over(m, &f->id);
	int want = wanted(m, f);
	if (!want && again)
		hurry_offer(m, &f->id);
	pthread_mutex_unlock(&m->lock);
	struct offer *o = want ? malloc(sizeof(*o)) : NULL;
	if (o && ferry__io_file_dup(f, &o->f) < 0) {
		free(o);
		o = NULL;
	}
	ferry__clear_error(); /* an offer refused is not the load's error */
	if (!o)
		return;
	o->again = again;
	pthread_mutex_lock(&m->lock);
	int queued = wanted(m, f); /* another thread may have offered it meanwhile */
	if (queued)
		enqueue_offer(m, o);
	pthread_mutex_unlock(&m->lock);
	if (!queued) {
		ferry__io_file_close(o->f);
		free(o);
	}
}

void ferry__mapped_drain(struct ferry__mapped *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	uint64_t asked = ++m->sweeps_asked;
	pthread_cond_signal(&m->work);
	while (m->started && !m->stopping && ((m->offers && !m->held) || m->sweeps_done < asked))
		pthread_cond_wait(&m->idle, &m->lock);
	pthread_mutex_unlock(&m->lock);
}

void ferry__mapped_hold(struct ferry__mapped *m, int held)
{
	pthread_mutex_lock(&m->lock);
	m->held = held;
	pthread_cond_signal(&m->work);
	pthread_mutex_unlock(&m->lock);
}

void ferry__mapped_set_reserve(struct ferry__mapped *m, uint64_t reserve)
{
	pthread_mutex_lock(&m->lock);
	m->reserve = reserve;
	pthread_mutex_unlock(&m->lock);
}

void ferry__mapped_stats(struct ferry__mapped *m, struct ferry__mapped_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	out->entries = m->count;
	out->pinned = m->pinned;
	out->budget = m->budget;
	out->reserve = m->reserve;
	out->registered = m->registered_ever;
	out->registrations = m->registrations;
	out->refused = m->refused;
	out->given_up = m->given_up;
	out->hits = m->hits;
	out->released = m->released;
	out->gone = m->gone;
	out->pressed = m->pressed;
	out->unpaced = m->unpaced;
	out->hurried = m->hurried;
	snprintf(out->last_refusal, sizeof(out->last_refusal), "%s", m->last_refusal);
	pthread_mutex_unlock(&m->lock);
}
