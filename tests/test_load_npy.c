/*
 * Loading .npy files onto the device, every byte checked: every dtype and byte
 * order, C and Fortran order, versions 1.0 to 3.0, ranks 0 to 8, empty arrays,
 * sizes that are not multiples of 4096 nor of the chunk; through every IO
 * backend this machine has, buffered and O_DIRECT, with small and default chunks.
 * Also ferry_load_into, ferry_read_range and their errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "ferry.h"
#include "helpers.h"
#include "npy/npy.h"

static const enum ferry_dtype all_dtypes[] = {
	FERRY_BOOL, FERRY_INT8, FERRY_INT16, FERRY_INT32, FERRY_INT64, FERRY_UINT8,
	FERRY_UINT16, FERRY_UINT32, FERRY_UINT64, FERRY_FLOAT16, FERRY_FLOAT32, FERRY_FLOAT64,
	FERRY_COMPLEX64, FERRY_COMPLEX128,
};

struct array_case {
	enum ferry_dtype dtype;
	char byteorder;
	int fortran;
	int major;
	int ndim;
	int64_t shape[FERRY_MAX_DIMS];
};

static uint64_t count_of(const struct array_case *c)
{
	uint64_t n = 1;
	for (int i = 0; i < c->ndim; i++)
		n *= (uint64_t)c->shape[i];
	return n;
}

/* Naive reference: C-order element index -> Fortran-order element index. */
static uint64_t fortran_index(const struct array_case *c, uint64_t ci)
{
	uint64_t fi = 0, stride = 1, idx[FERRY_MAX_DIMS];
	for (int d = c->ndim - 1; d >= 0; d--) {
		idx[d] = ci % (uint64_t)c->shape[d];
		ci /= (uint64_t)c->shape[d];
	}
	for (int d = 0; d < c->ndim; d++) {
		fi += idx[d] * stride;
		stride *= (uint64_t)c->shape[d];
	}
	return fi;
}

/* The payload as the file holds it, from the expected C-order native bytes. */
static char *file_payload(const struct array_case *c, const char *expect, size_t itemsize)
{
	uint64_t n = count_of(c);
	char *out = malloc(n * itemsize + 1);
	int swap = c->byteorder == '>' && itemsize > 1;
	size_t part = c->dtype == FERRY_COMPLEX64 || c->dtype == FERRY_COMPLEX128 ? itemsize / 2
										   : itemsize;
	for (uint64_t i = 0; i < n; i++) {
		char *dst = out + (c->fortran ? fortran_index(c, i) : i) * itemsize;
		const char *src = expect + i * itemsize;
		for (size_t b = 0; b < itemsize; b++)
			dst[b] = swap ? src[(b / part) * part + (part - 1 - b % part)] : src[b];
	}
	return out;
}

static void write_npy(const char *path, const struct array_case *c, const char *payload,
		      size_t len)
{
	char header[4096];
	int hlen = ferry__npy_write_header(header, sizeof(header), c->dtype, c->byteorder,
					   c->fortran, c->ndim, c->shape, c->major);
	T_ASSERT(hlen > 0);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	T_ASSERT(fd >= 0);
	T_EQ(write(fd, header, (size_t)hlen), hlen);
	if (len)
		T_EQ(write(fd, payload, len), (long long)len);
	close(fd);
}

static void describe_case(const struct array_case *c, char *buf, size_t len)
{
	int at = snprintf(buf, len, "%s %c %s v%d shape (", ferry_dtype_name(c->dtype), c->byteorder,
			  c->fortran ? "F" : "C", c->major);
	for (int i = 0; i < c->ndim && at < (int)len; i++)
		at += snprintf(buf + at, len - (size_t)at, "%lld,", (long long)c->shape[i]);
	snprintf(buf + at, len - (size_t)at, ")");
}

static void check_case(ferry_ctx *ctx, const char *dir, const struct array_case *c, unsigned id)
{
	size_t itemsize = ferry_dtype_size(c->dtype);
	uint64_t n = count_of(c);
	size_t len = (size_t)(n * itemsize);
	char *expect = malloc(len + 1);
	t_fill_pattern(expect, len, id, 0);
	char *payload = file_payload(c, expect, itemsize);
	char path[512], what[256];
	snprintf(path, sizeof(path), "%s/case%u.npy", dir, id);
	write_npy(path, c, payload, len);
	describe_case(c, what, sizeof(what));
	ferry_array *a;
	if (ferry_load(ctx, path, &a) < 0)
		T_FAIL("%s: %s", what, ferry_last_error());
	const struct ferry_array_info *info = ferry_array_info(a);
	T_EQ(info->nbytes, len);
	T_EQ(info->ndim, c->ndim);
	T_EQ(info->dtype, c->dtype);
	char *got = malloc(len + 1);
	T_OK(ferry_copy_to_host(ctx, got, ferry_array_data(a), len));
	size_t bad = t_check_pattern(got, len, id, 0);
	if (bad != len)
		T_FAIL("%s via %s: byte %zu of %zu is wrong", what, ferry_ctx_io_name(ctx), bad, len);
	ferry_array_free(a);
	free(got);
	free(payload);
	free(expect);
	unlink(path);
}

static unsigned check_dtype_matrix(ferry_ctx *ctx, const char *dir, unsigned id)
{
	static const char orders[] = { '<', '>', '|', '=' };
	for (size_t d = 0; d < FERRY__ARRAY_LEN(all_dtypes); d++)
		for (size_t o = 0; o < FERRY__ARRAY_LEN(orders); o++)
			for (int f = 0; f <= 1; f++) {
				size_t isz = ferry_dtype_size(all_dtypes[d]);
				if ((orders[o] == '|') != (isz == 1) && orders[o] != '=')
					continue; /* numpy writes '|' exactly for one-byte types */
				struct array_case c = { all_dtypes[d], orders[o], f, 1 + (int)(id % 3),
							3, { 3, 5, 7 } };
				check_case(ctx, dir, &c, id++);
			}
	return id;
}

static unsigned check_shapes(ferry_ctx *ctx, const char *dir, unsigned id, size_t chunk)
{
	for (int rank = 0; rank <= 8; rank++)
		for (int f = 0; f <= 1; f++) {
			struct array_case c = { FERRY_FLOAT32, '<', f, 1, rank, { 0 } };
			for (int i = 0; i < rank; i++)
				c.shape[i] = 2 + (i % 3);
			check_case(ctx, dir, &c, id++);
		}
	struct array_case empty = { FERRY_FLOAT64, '<', 0, 1, 2, { 4, 0 } };
	check_case(ctx, dir, &empty, id++);
	/* Several chunks, ending neither on 4096 nor on the chunk. */
	uint64_t big = (uint64_t)chunk * 5 / 2 + 123;
	struct array_case large = { FERRY_UINT8, '|', 0, 1, 1, { (int64_t)big } };
	check_case(ctx, dir, &large, id++);
	struct array_case large_be = { FERRY_INT32, '>', 0, 2, 2, { 77, (int64_t)(chunk / 64 + 3) } };
	check_case(ctx, dir, &large_be, id++);
	struct array_case large_f = { FERRY_FLOAT32, '<', 1, 1, 2, { 333, (int64_t)(chunk / 512) } };
	check_case(ctx, dir, &large_f, id++);
	return id;
}

static void check_into_and_ranges(ferry_ctx *ctx, const char *dir)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/raw.bin", dir);
	size_t len = 300000;
	char *bytes = malloc(len);
	t_fill_pattern(bytes, len, 42, 0);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	T_EQ(write(fd, bytes, len), (long long)len);
	close(fd);
	void *dev;
	T_OK(ferry_device_alloc(ctx, len, &dev));
	static const uint64_t spans[][2] = { { 0, 1 }, { 1, 4095 }, { 4095, 2 }, { 12345, 250000 },
					    { 0, 300000 }, { 299999, 1 } };
	for (size_t i = 0; i < FERRY__ARRAY_LEN(spans); i++) {
		T_OK(ferry_read_range(ctx, path, spans[i][0], spans[i][1], dev));
		char *got = malloc(spans[i][1]);
		T_OK(ferry_copy_to_host(ctx, got, dev, spans[i][1]));
		T_EQ(t_check_pattern(got, spans[i][1], 42, spans[i][0]), spans[i][1]);
		free(got);
	}
	T_EQ(ferry_read_range(ctx, path, 299990, 11, dev), -FERRY_ETRUNCATED);
	T_ASSERT(strstr(ferry_last_error(), "raw.bin"));
	T_EQ(ferry_info(path, &(struct ferry_array_info){ 0 }), -FERRY_EFORMAT);
	T_ASSERT(strstr(ferry_last_error(), "raw.bin"));

	struct array_case c = { FERRY_INT16, '<', 0, 1, 1, { 1000 } };
	snprintf(path, sizeof(path), "%s/small.npy", dir);
	write_npy(path, &c, bytes, 2000);
	struct ferry_array_info info;
	T_EQ(ferry_load_into(ctx, path, dev, 1999, &info), -ENOSPC);
	T_OK(ferry_load_into(ctx, path, dev, len, &info));
	T_EQ(info.nbytes, 2000);
	char got[2000];
	T_OK(ferry_copy_to_host(ctx, got, dev, 2000));
	T_EQ(t_check_pattern(got, 2000, 42, 0), 2000);
	snprintf(path, sizeof(path), "%s/missing.npy", dir);
	T_EQ(ferry_load_into(ctx, path, dev, len, &info), -ENOENT);
	T_ASSERT(strstr(ferry_last_error(), "missing.npy"));
	ferry_device_free(ctx, dev);
	free(bytes);
}

static void run_backend(const char *io, size_t chunk, int direct, const char *dir)
{
	struct ferry_ctx_options opt = { .gpu = -1, .io = io, .chunk_size = chunk, .direct = direct,
					 .threads = 3 };
	ferry_ctx *ctx;
	int rc = ferry_ctx_create(&ctx, &opt);
	if (rc == -FERRY_EIO_BACKEND || rc == -FERRY_ENODEVICE) {
		printf("io %s: not available here (%s)\n", io, ferry_last_error());
		return;
	}
	T_OK(rc);
	unsigned id = check_dtype_matrix(ctx, dir, 1);
	check_shapes(ctx, dir, id, chunk);
	check_into_and_ranges(ctx, dir);
	T_OK(ferry_ctx_destroy(ctx));
	printf("io %s, chunk %zu, %s: ok\n", io, chunk, direct ? "O_DIRECT" : "buffered");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	char *dir = t_tmpdir();
	static const char *backends[] = { "posix", "uring", "cufile" };
	for (size_t b = 0; b < FERRY__ARRAY_LEN(backends); b++)
		for (int direct = 0; direct <= 1; direct++) {
			run_backend(backends[b], 4096, direct, dir);
			run_backend(backends[b], 64 << 10, direct, dir);
		}
	run_backend("posix", 2 << 20, 0, dir);
	t_rmtree(dir);
	return T_EXIT_PASS;
}
