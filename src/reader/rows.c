/*
 * Rows as samples (FERRY_SAMPLES_ROWS): every file's rows along axis 0 are
 * samples. The reader parses every file's header when it opens (priming the
 * header cache), checks that the files share a row's dtype and shape, and
 * numbers the rows across files; sample g is row g - row_start[i] of the file
 * i whose rows hold it.
 */
#include "reader/reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* Parses file i's header into s (a probe that keeps nothing open). */
static int header_of(struct ferry_reader *r, uint64_t i, struct slot *s)
{
	memset(s, 0, sizeof(*s));
	s->file = i;
	int rc = ferry__load_open(r->ld, r->ds.paths[i], &s->f);
	if (rc == 0)
		rc = ferry__load_header(s->f, &s->h, s->head);
	if (rc == 0)
		s->id = s->f->id;
	ferry__load_close(r->ld, s->f);
	s->f = NULL;
	return rc;
}

/* A file's rows must look like the first file's: same dtype, same row shape. */
static int check_rows(const struct ferry_reader *r, const struct slot *first,
		      const struct slot *s)
{
	const struct ferry__npy_header *a = &first->h, *b = &s->h;
	if (b->ndim < 1)
		return ferry__fail(-FERRY_EMISMATCH, "%s: a rank-0 array has no rows",
				   r->ds.paths[s->file]);
	if (a->dtype == b->dtype && a->ndim == b->ndim &&
	    !memcmp(a->shape + 1, b->shape + 1, sizeof(int64_t) * (size_t)(a->ndim - 1)))
		return 0;
	return ferry__fail(-FERRY_EMISMATCH, "%s: rows of dtype %s rank %d differ from those of %s "
			   "(dtype %s rank %d, or another row shape)", r->ds.paths[s->file],
			   ferry_dtype_name(b->dtype), b->ndim - 1, r->ds.paths[first->file],
			   ferry_dtype_name(a->dtype), a->ndim - 1);
}

int ferry__rows_index(struct ferry_reader *r)
{
	struct slot *first = calloc(2, sizeof(*first));
	int rc = 0;
	r->row_start = calloc(r->ds.n + 1, sizeof(*r->row_start));
	if (!first || !r->row_start) {
		free(first);
		return ferry__fail(-ENOMEM, "%s: out of memory indexing rows", r->name);
	}
	for (uint64_t i = 0; rc == 0 && i < r->ds.n; i++) {
		struct slot *s = i ? &first[1] : &first[0];
		rc = header_of(r, i, s);
		if (rc == 0)
			rc = check_rows(r, &first[0], s);
		if (rc == 0) {
			ferry__headers_store(r, s);
			r->row_start[i + 1] = r->row_start[i] + (uint64_t)s->h.shape[0];
		}
	}
	r->nsamples = r->row_start[r->ds.n];
	free(first);
	if (rc == 0 && r->nsamples == 0)
		rc = ferry__fail(-FERRY_ECONFIG, "%s: the files hold no rows", r->name);
	return rc;
}

void ferry__rows_locate(const struct ferry_reader *r, uint64_t sample, uint64_t *file,
			int64_t *row)
{
	uint64_t lo = 0, hi = r->ds.n; /* row_start[lo] <= sample < row_start[hi] */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (r->row_start[mid] <= sample)
			lo = mid;
		else
			hi = mid;
	}
	*file = lo;
	*row = (int64_t)(sample - r->row_start[lo]);
}
