/*
 * What the reader tests share: a context, .npy files whose payload is the
 * pattern of tests/common/helpers.h, a reference slicer, and collecting the
 * order a reader delivers. Header-only (static functions) so every
 * tests/test_reader_*.c stays one program.
 */
#ifndef FERRY_TEST_READER_UTIL_H
#define FERRY_TEST_READER_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context/context.h"
#include "ferry.h"
#include "helpers.h"
#include "npy/npy.h"
#include "reader/reader.h"

/* A context on the device FERRY_DEVICE names (host here); skips without one. */
static inline ferry_ctx *tr_ctx(size_t chunk_size, unsigned threads)
{
	struct ferry_ctx_options o = { .gpu = -1, .chunk_size = chunk_size, .threads = threads,
				       .direct = -1 };
	ferry_ctx *ctx;
	int rc = ferry_ctx_create(&ctx, &o);
	if (rc == -FERRY_ENODEVICE)
		T_SKIP("no device: %s", ferry_last_error());
	T_OK(rc);
	return ctx;
}

/* A context with chunks of chunk bytes on a fault device that only counts
 * (the device calls a load makes: t_fault_calls). One lane and buffers to
 * spare, so that the event waits counted are a batch's own (one ticket a
 * batch), never a lease waiting for a buffer to come back, however slowly
 * the stream runs (under a sanitizer). */
static inline ferry_ctx *tr_counting_ctx(size_t chunk, struct ferry__device **fdev)
{
	struct ferry_ctx_options o = { .gpu = -1, .chunk_size = chunk, .threads = 2, .direct = -1,
				       .lanes = 1, .max_buffers = 1024 };
	struct ferry__device *dev;
	ferry_ctx *ctx;
	int rc = ferry__ctx_open_device(&o, &dev);
	if (rc == -FERRY_ENODEVICE)
		T_SKIP("no device: %s", ferry_last_error());
	T_OK(rc);
	*fdev = t_fault_device(dev);
	T_OK(ferry__ctx_create_on(*fdev, NULL, &o, &ctx));
	return ctx;
}

/* The staging counters of every lane of ctx, summed (batches launched,
 * launches held, waits, ...). */
static inline struct ferry__staging_stats tr_lanes_stats(ferry_ctx *ctx)
{
	struct ferry__staging_stats sum = {0}, st;
	for (unsigned i = 0; i < ferry__lanes_count(ctx->ld.lanes); i++) {
		ferry__staging_stats(ferry__lanes_get(ctx->ld.lanes, i), &st);
		sum.batches_launched += st.batches_launched;
		sum.waits += st.waits;
		sum.reclaimed += st.reclaimed;
		sum.grown += st.grown;
		sum.launches_held += st.launches_held;
	}
	return sum;
}

/* Waits (10 s at most) until a batch of r has loaded (its reads done, its
 * copies queued), whether or not its copies have landed or a caller took it:
 * 1 when one has, 0 after 10 s. */
static inline int tr_wait_loaded(ferry_reader *r)
{
	for (int k = 0; k < 10000; k++) {
		int loaded = 0;
		pthread_mutex_lock(&r->lock);
		for (unsigned i = 0; i < r->nall; i++)
			loaded |= r->all[i]->state == BATCH_READY || r->all[i]->state == BATCH_HELD;
		pthread_mutex_unlock(&r->lock);
		if (loaded)
			return 1;
		usleep(1000);
	}
	return 0;
}

/* The payload of a file with the given id: t_fill_pattern(id, 0). */
static inline void *tr_payload(uint32_t id, uint64_t nbytes)
{
	void *p = malloc(nbytes ? nbytes : 1);
	T_ASSERT(p);
	t_fill_pattern(p, nbytes, id, 0);
	return p;
}

/* Writes dir/name as a .npy of dtype, order, shape; payload tr_payload(id).
 * byteorder '<', '>' or 0 for native ('|' for one-byte types). */
static inline void tr_write_npy(const char *path, enum ferry_dtype dtype, char byteorder,
				int fortran, int ndim, const int64_t *shape, uint32_t id)
{
	char header[4096];
	size_t isz = ferry_dtype_size(dtype);
	uint64_t count = 1;
	for (int d = 0; d < ndim; d++)
		count *= (uint64_t)shape[d];
	if (!byteorder || isz == 1)
		byteorder = isz == 1 ? '|' : '<';
	int hl = ferry__npy_write_header(header, sizeof(header), dtype, byteorder, fortran, ndim,
					 shape, 0);
	T_OK(hl);
	void *payload = tr_payload(id, count * isz);
	FILE *f = fopen(path, "wb");
	T_ASSERT(f);
	T_ASSERT(fwrite(header, 1, (size_t)hl, f) == (size_t)hl);
	T_ASSERT(fwrite(payload, 1, count * isz, f) == count * isz);
	T_ASSERT(fclose(f) == 0);
	free(payload);
}

/* Overwrites the last len bytes of path with src, keeping its size and
 * modification time: a change only the change time (ctime) reveals. */
static inline void tr_overwrite_tail(const char *path, const void *src, size_t len)
{
	struct stat st;
	int fd = open(path, O_WRONLY);
	T_ASSERT(fd >= 0 && fstat(fd, &st) == 0);
	T_ASSERT(pwrite(fd, src, len, st.st_size - (off_t)len) == (ssize_t)len);
	struct timespec times[2] = { st.st_atim, st.st_mtim };
	T_ASSERT(futimens(fd, times) == 0 && close(fd) == 0);
}

/* Writes path's pages back and drops them from the page cache. */
static inline void tr_drop_cache(const char *path)
{
	int fd = open(path, O_RDONLY);
	T_ASSERT(fd >= 0 && fsync(fd) == 0);
	T_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	close(fd);
}

/* Writes dir/NAME for name, building the path. */
static inline const char *tr_path(const char *dir, const char *name)
{
	static __thread char buf[8][1024];
	static __thread int next;
	char *p = buf[next++ % 8];
	snprintf(p, 1024, "%.900s/%.100s", dir, name);
	return p;
}

/* dir/fNNN.npy, file i of a numbered dataset (tr_file_index reads i back). */
static inline const char *tr_numbered(const char *dir, unsigned i)
{
	char name[32];
	snprintf(name, sizeof(name), "f%03u.npy", i);
	return tr_path(dir, name);
}

/* Writes n files f000.npy.. in dir: int32 vectors of length 4 + i % 3, file id i. */
static inline void tr_write_vectors(const char *dir, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		int64_t shape[1] = { 4 + i % 3 };
		tr_write_npy(tr_numbered(dir, i), FERRY_INT32, 0, 0, 1, shape, i);
	}
}

/* The index i of a path ending in fNNN.npy. */
static inline int tr_file_index(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	T_ASSERT(base[0] == 'f');
	return atoi(base + 1);
}

/* Reads every batch of r; writes the file index of each sample into idx (cap
 * entries), -1 - index for padding, and the number of samples of each batch
 * into sizes. Returns the number of samples. */
static inline unsigned tr_collect(ferry_reader *r, int *idx, unsigned cap, unsigned *sizes,
				  unsigned *nbatches)
{
	ferry_batch *b;
	unsigned n = 0, nb = 0;
	int rc;
	while ((rc = ferry_reader_next(r, &b)) == 0) {
		unsigned bs = ferry_batch_size(b);
		for (unsigned i = 0; i < bs; i++) {
			struct ferry_sample s;
			T_OK(ferry_batch_sample(b, i, &s));
			T_ASSERT(n < cap);
			int k = tr_file_index(s.path);
			idx[n++] = s.is_padding ? -1 - k : k;
		}
		if (sizes)
			sizes[nb] = bs;
		nb++;
		ferry_batch_release(b);
	}
	T_EQ(rc, -FERRY_EEND);
	if (nbatches)
		*nbatches = nb;
	return n;
}

/*
 * The reference slicer: what sample output of region (start, shape in C-order
 * coordinates) of the file (id, dtype, byteorder, order, ndim, src shape) must
 * be, element by element. fill: the fill element (isz bytes).
 */
static inline void *tr_reference(uint32_t id, size_t isz, int swap, int fortran, int ndim,
				 const int64_t *src, const int64_t *start, const int64_t *shape,
				 const void *fill, uint64_t *nbytes_out)
{
	uint64_t count = 1, src_count = 1, idx[FERRY_MAX_DIMS] = { 0 };
	for (int d = 0; d < ndim; d++) {
		count *= (uint64_t)shape[d];
		src_count *= (uint64_t)src[d];
	}
	unsigned char *payload = tr_payload(id, src_count * isz);
	unsigned char *out = malloc(count * isz + 1);
	T_ASSERT(out);
	for (uint64_t e = 0; e < count; e++) {
		int inside = 1;
		uint64_t lin = 0;
		for (int k = 0; k < ndim; k++) {
			int d = fortran ? ndim - 1 - k : k;
			int64_t c = start[d] + (int64_t)idx[d];
			inside &= c >= 0 && c < src[d];
			lin = lin * (uint64_t)src[d] + (uint64_t)(inside ? c : 0);
		}
		unsigned char *o = out + e * isz;
		if (!inside) {
			memcpy(o, fill, isz);
		} else {
			for (size_t b = 0; b < isz; b++)
				o[b] = payload[lin * isz + (swap ? isz - 1 - b : b)];
		}
		for (int d = ndim - 1; d >= 0 && ++idx[d] == (uint64_t)shape[d]; d--)
			idx[d] = 0;
	}
	free(payload);
	*nbytes_out = count * isz;
	return out;
}

/* Fails unless nbytes of device memory at dev hold want, naming the first
 * wrong byte after label. */
static inline void tr_check_bytes(ferry_ctx *ctx, const void *dev, const void *want,
				  uint64_t nbytes, const char *label)
{
	const unsigned char *w = want;
	unsigned char *got = malloc(nbytes + 1);
	T_ASSERT(got);
	if (nbytes)
		T_OK(ferry_copy_to_host(ctx, got, dev, nbytes));
	/* memcmp first: a sanitizer checks it as one range, not byte by byte */
	int differ = nbytes && memcmp(got, w, nbytes) != 0;
	for (uint64_t i = 0; differ && i < nbytes; i++)
		if (got[i] != w[i])
			T_FAIL("%s: byte %llu of %llu is 0x%02x, want 0x%02x", label,
			       (unsigned long long)i, (unsigned long long)nbytes, got[i], w[i]);
	free(got);
}

/* Compares a sample on the device with want; fails naming the first byte. */
static inline void tr_check_sample(ferry_ctx *ctx, const struct ferry_sample *s, const void *want,
				   uint64_t nbytes, const char *what)
{
	char label[4200];
	if (s->nbytes != nbytes)
		T_FAIL("%s: %s: %llu bytes, want %llu", what, s->path,
		       (unsigned long long)s->nbytes, (unsigned long long)nbytes);
	snprintf(label, sizeof(label), "%s: %s", what, s->path);
	tr_check_bytes(ctx, s->data, want, nbytes, label);
}

/* .npy files a loading test writes, with the bytes each must load as. */
#define TR_MAX_FILES 16
struct tr_files {
	char *dir;
	unsigned n;
	char *paths[TR_MAX_FILES];
	unsigned char *want[TR_MAX_FILES];
	uint64_t nbytes[TR_MAX_FILES];
};

static inline void tr_files_free(struct tr_files *d)
{
	for (unsigned i = 0; i < d->n; i++) {
		free(d->paths[i]);
		free(d->want[i]);
	}
	t_rmtree(d->dir);
	free(d->dir);
}

/* Fails unless the device memory at dev_ptr holds file i's bytes. */
static inline void tr_check_loaded(ferry_ctx *ctx, const void *dev_ptr, const struct tr_files *d,
				   unsigned i)
{
	tr_check_bytes(ctx, dev_ptr, d->want[i], d->nbytes[i], d->paths[i]);
}

#endif
