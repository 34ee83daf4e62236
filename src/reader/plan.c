/*
 * A batch's plan: the header and region of every sample (from the header
 * cache, or probed from the file), errors settled as on_error says, the
 * outputs laid out in the batch's memory (densely, [B, ...], when they share
 * a dtype and shape), and the fetch items that fill it.
 */
#include "reader/reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#define SAMPLE_ALIGN 256 /* outputs of a ragged batch start at multiples of it */
#define RUN_MIN ((uint64_t)256 << 10) /* the least run_cap cuts a PACK run to */

int ferry__slot_fail(struct ferry_reader *r, struct slot *s, int err)
{
	ferry__fail_subject(err, r->ds.paths[s->file]);
	free(s->msg);
	s->msg = ferry__error_copy();
	s->error = err;
	return err;
}

void ferry__slot_close(struct ferry_reader *r, struct slot *s)
{
	ferry__load_close(r->ld, s->f);
	s->f = NULL;
	if (s->member) {
		ferry__member_close(s->member);
		free(s->member);
		s->member = NULL;
	}
}

int ferry__slot_header(struct ferry_reader *r, struct slot *s)
{
	if (!r->key)
		return ferry__load_header(s->f, &s->h, s->head);
	if (!s->member && !(s->member = malloc(sizeof(*s->member))))
		return ferry__fail(-ENOMEM, "%s: out of memory", r->ds.paths[s->file]);
	int rc = ferry__member_open(s->f, r->key, s->member, s->head);
	if (rc < 0) {
		free(s->member);
		s->member = NULL;
		return rc;
	}
	s->h = s->member->h;
	return 0;
}

size_t ferry__slot_head_len(const struct slot *s)
{
	if (!s->member)
		return ferry__head_len(&s->h);
	uint64_t len = s->h.data_offset - s->member->data_at;
	return len < FERRY__HEAD_MAX ? (size_t)len : FERRY__HEAD_MAX;
}

int ferry__slot_whole(const struct slot *s)
{
	for (int d = 0; d < s->rg.ndim; d++)
		if (s->rg.start[d] != 0 || s->rg.shape[d] != s->h.shape[d])
			return 0;
	return 1;
}

int ferry__slot_live(const struct slot *s)
{
	return !s->skipped && !s->error;
}

const int64_t *ferry__slot_shape(const struct slot *s, int *ndim)
{
	int row = s->row >= 0;
	*ndim = s->rg.ndim - row;
	return s->rg.shape + row;
}

/* A row's region, in the file's coordinates (ferry__roi_resolve_row). */
static int resolve_row(struct ferry_reader *r, struct slot *s)
{
	const char *path = r->ds.paths[s->file];
	if (s->h.ndim < 1 || s->row >= s->h.shape[0])
		return ferry__fail(-FERRY_ECHANGED, "%s: changed: row %lld is past its %lld rows",
				   path, (long long)s->row, (long long)(s->h.ndim ? s->h.shape[0] : 0));
	return ferry__roi_resolve_row(&r->roi, s->h.ndim, s->h.shape, s->row, path, &s->rg);
}

/* Resolves s's region and output size from its header. Returns 0 or an error
 * (not recorded). */
static int resolve_region(struct ferry_reader *r, struct slot *s)
{
	int rc = s->row >= 0 ? resolve_row(r, s)
			     : ferry__roi_resolve(&r->roi, s->h.ndim, s->h.shape,
						  r->ds.paths[s->file], &s->rg);
	if (rc == 0)
		s->nbytes = s->rg.count * s->h.itemsize;
	return rc;
}

/* A cached header that fits the region; otherwise the file is probed, so a
 * region error is always about the file as it is. */
static int plan_slot_from_cache(struct ferry_reader *r, struct slot *s)
{
	if (s->stale || !ferry__headers_lookup(r, s))
		return 0;
	if (resolve_region(r, s) == 0)
		return 1;
	s->cached = 0;
	return 0;
}

void ferry__probe(struct ferry_batch *b, struct slot *s)
{
	struct ferry_reader *r = b->r;
	const char *path = r->ds.paths[s->file];
	int rc;

	ferry__clear_error(); /* a message left by another file must not be this one's */
	s->cached = s->stale = 0;
	rc = s->f ? 0 : ferry__load_open(r->ld, path, &s->f);
	if (rc == 0)
		rc = ferry__slot_header(r, s);
	if (rc == 0) {
		s->id = s->f->id;
		ferry__headers_store(r, s);
		rc = resolve_region(r, s);
	}
	if (rc < 0) {
		ferry__slot_fail(r, s, rc);
		ferry__slot_close(r, s);
	}
}

/* Errors that say nothing about one file, so skipping it would not help. */
static int error_is_global(int err)
{
	return err == -ENOMEM || err == -FERRY_EDEVICE || err == -FERRY_ENODEVICE;
}

static void keep_message(char **dst, const char *msg)
{
	free(*dst);
	*dst = msg ? strdup(msg) : NULL;
}

/* Applies on_error to the slots that failed: returns the first error (and
 * keeps its message) under stop, or marks them skipped under skip. */
int ferry__settle(struct ferry_batch *b)
{
	struct ferry_reader *r = b->r;
	for (unsigned i = 0; i < b->nslots; i++) {
		struct slot *s = &b->slots[i];
		if (!s->error)
			continue;
		if (r->on_error == FERRY_ON_ERROR_STOP || error_is_global(s->error)) {
			keep_message(&b->msg, s->msg);
			return s->error;
		}
		ferry__slot_close(r, s);
		s->skipped = 1;
		b->skip_error = s->error;
		keep_message(&b->skip_msg, s->msg);
		s->error = 0;
		b->skipped++;
	}
	return 0;
}

/* All samples of a batch share dtype and rank; a file that breaks that fails. */
static int check_batch_types(struct ferry_batch *b)
{
	struct slot *first = NULL;
	for (unsigned i = 0; i < b->nslots; i++) {
		struct slot *s = &b->slots[i];
		if (!ferry__slot_live(s))
			continue;
		if (!first) {
			first = s;
			continue;
		}
		if (s->h.dtype == first->h.dtype && s->h.ndim == first->h.ndim)
			continue;
		ferry__fail(-FERRY_EMISMATCH,
			    "%s: dtype %s rank %d differs from %s (dtype %s rank %d) in one batch",
			    b->r->ds.paths[s->file], ferry_dtype_name(s->h.dtype), s->h.ndim,
			    b->r->ds.paths[first->file], ferry_dtype_name(first->h.dtype),
			    first->h.ndim);
		ferry__slot_fail(b->r, s, -FERRY_EMISMATCH);
		ferry__slot_close(b->r, s);
	}
	return ferry__settle(b);
}

/* The live samples in order; padding rows need a live one to repeat. */
static void list_outputs(struct ferry_batch *b)
{
	b->nout = 0;
	b->bytes_delivered = 0;
	for (unsigned i = 0; i < b->nslots; i++) {
		struct slot *s = &b->slots[i];
		if (!ferry__slot_live(s))
			continue;
		b->out[b->nout++] = i;
		b->bytes_delivered += s->nbytes;
	}
	b->real = b->nout;
	b->npad = b->nout ? b->pad_asked : 0;
}

/* Whether every output has the first one's dtype and shape. */
static int outputs_dense(const struct ferry_batch *b)
{
	int n0, n;
	const struct slot *first = &b->slots[b->out[0]];
	const int64_t *shape0 = ferry__slot_shape(first, &n0);
	for (unsigned k = 1; k < b->nout; k++) {
		const struct slot *s = &b->slots[b->out[k]];
		const int64_t *shape = ferry__slot_shape(s, &n);
		if (s->h.dtype != first->h.dtype || n != n0 ||
		    memcmp(shape, shape0, sizeof(int64_t) * (size_t)n))
			return 0;
	}
	return 1;
}

/* Grows the batch's device memory to at least len bytes (never shrinks it,
 * so a steady state allocates nothing). */
static int reserve_memory(struct ferry_batch *b, size_t len)
{
	struct ferry__device *dev = b->r->dev;
	size_t cap = b->mem_cap + b->mem_cap / 2;
	void *mem;
	if (len <= b->mem_cap)
		return 0;
	if (cap < len)
		cap = len;
	if (b->mem)
		dev->ops->mem_free(dev, b->mem);
	b->mem = NULL;
	b->mem_cap = 0;
	int rc = dev->ops->mem_alloc(dev, cap, &mem);
	if (rc < 0)
		return ferry__fail(rc, "%s: cannot allocate %zu bytes of batch memory", b->r->name,
				   cap);
	b->mem = mem;
	b->mem_cap = cap;
	return 0;
}

/* Places the outputs in order: rows of one size when dense, else aligned. */
static int lay_out(struct ferry_batch *b)
{
	struct ferry_batch_layout *l = &b->lay;
	const struct slot *first = b->nout ? &b->slots[b->out[0]] : NULL;
	uint64_t total = 0;
	memset(l, 0, sizeof(*l));
	if (!first)
		return 0;
	l->dense = outputs_dense(b);
	l->dtype = first->h.dtype;
	const int64_t *shape = ferry__slot_shape(first, &l->ndim);
	memcpy(l->shape, shape, sizeof(int64_t) * (size_t)l->ndim);
	l->sample_bytes = first->nbytes;
	uint64_t align = l->dense ? 1 : SAMPLE_ALIGN;
	for (unsigned k = 0; k < b->nout; k++) {
		struct slot *s = &b->slots[b->out[k]];
		s->offset = (total + align - 1) / align * align;
		total = s->offset + s->nbytes;
	}
	const struct slot *last = &b->slots[b->out[b->nout - 1]];
	b->pad_stride = (last->nbytes + align - 1) / align * align;
	b->pad_offset = last->offset + b->pad_stride;
	if (b->npad)
		total = b->pad_offset + (b->npad - 1) * b->pad_stride + last->nbytes;
	l->bytes = total;
	return reserve_memory(b, total);
}

int ferry__slot_fortran(const struct slot *s)
{
	return s->h.fortran_order && s->h.ndim > 1;
}

/*
 * A packed Fortran-order output is read as the runs its region makes in the
 * file (a row of an [N, C] array: C runs of one element, a column apart), in
 * one gather (io_uring where it works: about 0.4 us a run on the 2-core VM,
 * a pread each, 5 us, where not). Otherwise the whole array is loaded and
 * transposed on the device, for every such output. Gathering pays while a
 * run costs less than reading a page of the array: up to RUNS_ALWAYS runs
 * always (the whole-array path's fixed cost per output is larger), more in
 * proportion to the array's size, never past RUNS_MAX (a gather's requests
 * are allocated).
 */
#define RUNS_ALWAYS 1024
#define RUNS_MAX 65536
#define BYTES_A_RUN_PAYS 4096

/* How many runs s's region makes in a Fortran-order file: axis 0 is the
 * innermost there, so a run grows over the leading axes the region covers
 * whole, and one more. */
static uint64_t fortran_runs(const struct slot *s)
{
	uint64_t run = 1;
	for (int d = 0; d < s->rg.ndim; d++) {
		run *= (uint64_t)s->rg.shape[d];
		if (s->rg.shape[d] != s->h.shape[d])
			break;
	}
	return run ? s->rg.count / run : 0;
}

static int gather_pays(const struct slot *s)
{
	uint64_t runs = fortran_runs(s);
	return runs <= RUNS_ALWAYS ||
	       (runs <= RUNS_MAX && runs <= s->h.data_size / BYTES_A_RUN_PAYS);
}

/* Whole arrays the CPU converts in staging; larger ones are the device's
 * kernels' (a GPU's costs the CPU a launch, the CPU's a pass over the bytes). */
#define CONVERT_IN_STAGING_MAX ((uint64_t)64 << 10)

/*
 * Whether s is read raw and converted on the device, rather than packed and
 * converted by the CPU in staging (a byte swap, a transpose of a few runs).
 * A region or row packs whenever it fits, since the device's path loads the
 * whole array for it; a whole array only while it is small.
 */
static int converted_apart(const struct ferry_reader *r, const struct slot *s, uint64_t packed)
{
	if (!s->h.swap && !ferry__slot_fortran(s))
		return 0;
	if (!r->packable || packed > r->chunk ||
	    (ferry__slot_fortran(s) && !gather_pays(s)))
		return 1;
	return ferry__slot_whole(s) && packed > CONVERT_IN_STAGING_MAX;
}

/*
 * An archive member's fetch. A deflated one's output is written into staging
 * by the CPU (its array, inflated by the probe and converted on the host):
 * packed with others when it fits a chunk, else chunked; read in no staging
 * buffer, so O_DIRECT does not matter. A stored one is packed as a small
 * file is when its whole payload fits a chunk (its CRC-32 covers every byte,
 * so the fetch reads all of it, region or not): a big-endian or
 * Fortran-order one is then swapped or transposed by the CPU in staging, as
 * a small .npy file is, but for whole arrays over CONVERT_IN_STAGING_MAX;
 * larger ones take the loader's path, checked as they pass.
 * Padded outputs (filled first) and device staging are FETCH_SLOW.
 */
static enum fetch_kind member_kind(const struct ferry_reader *r, const struct slot *s)
{
	if (!r->host_staging || s->rg.padded)
		return FETCH_SLOW;
	if (s->member->inflated)
		return s->nbytes > r->chunk ? FETCH_BIG : FETCH_PACK;
	if (!r->packable || s->h.data_size > r->chunk)
		return FETCH_SLOW;
	if ((s->h.swap || ferry__slot_fortran(s)) && ferry__slot_whole(s) &&
	    s->h.data_size > CONVERT_IN_STAGING_MAX)
		return FETCH_SLOW;
	return FETCH_PACK;
}

/* A small big-endian or Fortran-order output packs like the others: its
 * region's runs are read into staging and the CPU swaps or transposes them
 * there, so a row of such a file reads only its bytes. */
static enum fetch_kind kind_of(const struct ferry_reader *r, const struct slot *s)
{
	if (s->member)
		return member_kind(r, s);
	if (s->rg.padded || converted_apart(r, s, s->nbytes))
		return FETCH_SLOW;
	if (!r->packable || s->nbytes > r->chunk)
		return FETCH_BIG;
	return FETCH_PACK;
}

static int add_item(struct ferry_batch *b, enum item_kind kind, unsigned first, unsigned count)
{
	if (b->nitems == b->items_cap) {
		unsigned cap = b->items_cap ? 2 * b->items_cap : 8;
		struct item *grown = realloc(b->items, cap * sizeof(*grown));
		if (!grown)
			return ferry__fail(-ENOMEM, "%s: out of memory planning a batch", b->r->name);
		b->items = grown;
		b->items_cap = cap;
	}
	b->items[b->nitems++] = (struct item){ kind, first, count };
	return 0;
}

/* The end of output k's row, relative to the start of output first's. */
static uint64_t span_to(const struct ferry_batch *b, unsigned first, unsigned k)
{
	const struct slot *s = &b->slots[b->out[k]];
	return s->offset + s->nbytes - b->slots[b->out[first]].offset;
}

/* The most one PACK run of b spans: a chunk, or less when the window's
 * batches would otherwise give the IO threads fewer than two runs each: a
 * window of 4 batches of 256 files of 16 KiB made 8 runs of a chunk for 16
 * threads, and half of them waited. Never less than RUN_MIN; runs of
 * consecutive batches are taken together (take_items), up to a chunk, so
 * shorter runs do not mean smaller reads. */
static uint64_t run_cap(const struct ferry_batch *b)
{
	const struct ferry_reader *r = b->r;
	uint64_t runs_wanted = 2ull * r->threads;
	uint64_t cap = b->lay.bytes * ferry__window(r, b->lay.bytes) / runs_wanted;
	if (cap < RUN_MIN)
		cap = RUN_MIN;
	return cap < r->chunk ? cap : r->chunk;
}

/* One item per FETCH_BIG or FETCH_SLOW output; FETCH_PACK outputs in runs
 * whose rows span at most run_cap. */
static int make_fetch_items(struct ferry_batch *b)
{
	uint64_t cap = b->run_cap = run_cap(b);
	int rc = 0;
	b->nitems = 0;
	for (unsigned k = 0; rc == 0 && k < b->nout;) {
		struct slot *s = &b->slots[b->out[k]];
		unsigned n = 1;
		s->kind = kind_of(b->r, s);
		while (s->kind == FETCH_PACK && k + n < b->nout &&
		       kind_of(b->r, &b->slots[b->out[k + n]]) == FETCH_PACK &&
		       span_to(b, k, k + n) <= cap)
			b->slots[b->out[k + n++]].kind = FETCH_PACK;
		rc = add_item(b, ITEM_FETCH, k, n);
		k += n;
	}
	return rc;
}

int ferry__finish_plan(struct ferry_batch *b)
{
	int rc = ferry__settle(b);
	if (rc == 0)
		rc = check_batch_types(b);
	if (rc < 0)
		return rc;
	list_outputs(b);
	rc = lay_out(b);
	return rc < 0 ? rc : make_fetch_items(b);
}

int ferry__plan_later(struct ferry_batch *b)
{
	b->nitems = 0;
	return add_item(b, ITEM_PLAN, 0, 0);
}

int ferry__plan(struct ferry_batch *b)
{
	b->nitems = 0;
	for (unsigned i = 0; i < b->nslots; i++) {
		struct slot *s = &b->slots[i];
		if (!ferry__slot_live(s) || plan_slot_from_cache(b->r, s))
			continue;
		int rc = add_item(b, ITEM_PROBE, i, 1);
		if (rc < 0)
			return rc;
	}
	return b->nitems ? 0 : ferry__finish_plan(b);
}
