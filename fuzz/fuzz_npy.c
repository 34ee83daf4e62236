/*
 * libFuzzer target for the NPY format layer: the input is a whole .npy file.
 * Runs the loader's checks (header length, parse, payload size), then checks what
 * a successful parse promises: consistent sizes, a header that writes back and
 * parses to the same array, and conversions that stay inside the payload.
 * Build and run: make -f fuzz/Makefile fuzz-run (see fuzz/Makefile).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "npy/npy.h"

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "fuzz_npy: %s failed at line %d\n", #cond,   \
				__LINE__);                                           \
			abort();                                                     \
		}                                                                    \
	} while (0)

static void check_header(const struct ferry__npy_header *h, size_t size, int64_t hlen)
{
	uint64_t count = 1;
	CHECK(h->data_offset == (uint64_t)hlen && h->data_offset <= size);
	CHECK(h->ndim >= 0 && h->ndim <= FERRY_MAX_DIMS);
	CHECK(h->itemsize == ferry_dtype_size(h->dtype) && h->itemsize > 0);
	for (int i = 0; i < h->ndim; i++) {
		CHECK(h->shape[i] >= 0);
		count *= (uint64_t)h->shape[i];
	}
	CHECK(h->count == count && h->data_size == count * h->itemsize);
	CHECK(h->data_offset + h->data_size <= (uint64_t)INT64_MAX);
}

/* The bytes the nonzero dims span: what the parser bounds, even when a zero
 * dim makes the payload empty. */
static uint64_t nonzero_bytes(const struct ferry__npy_header *h)
{
	uint64_t n = h->itemsize;
	for (int i = 0; i < h->ndim; i++)
		if (h->shape[i] > 0)
			n *= (uint64_t)h->shape[i];
	return n;
}

/* A header written from the parsed fields parses back to the same array. */
static void check_rewrite(const struct ferry__npy_header *h)
{
	static unsigned char buf[4096];
	struct ferry__npy_header again;
	char order = h->swap ? (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? '<' : '>') : '=';
	int len = ferry__npy_write_header(buf, sizeof(buf), h->dtype, order, h->fortran_order,
					  h->ndim, h->shape, h->major);
	CHECK(len > 0 && len % 64 == 0);
	/* A longer header can push a payload that just fit past INT64_MAX: the
	 * parser refuses that rewrite rightly. It checks the product of the nonzero
	 * dims (numpy's rule), so an empty array with a huge dim counts too. */
	if (nonzero_bytes(h) > (uint64_t)INT64_MAX - (uint64_t)len)
		return;
	CHECK(ferry__npy_parse(buf, (size_t)len, &again, NULL, 0) == 0);
	CHECK(again.dtype == h->dtype && again.swap == h->swap && again.ndim == h->ndim);
	CHECK(again.fortran_order == h->fortran_order && again.major == h->major);
	CHECK(!memcmp(again.shape, h->shape, sizeof(int64_t) * (size_t)h->ndim));
	CHECK(again.count == h->count && again.data_size == h->data_size);
}

/* Swaps and reorders a copy of the payload; ASan catches any step outside it. */
static void run_conversions(const struct ferry__npy_header *h, const uint8_t *data)
{
	size_t n = (size_t)h->data_size;
	uint8_t *payload = malloc(n ? n : 1), *c_order = malloc(n ? n : 1);
	int is_complex = h->dtype == FERRY_COMPLEX64 || h->dtype == FERRY_COMPLEX128;
	CHECK(payload && c_order);
	memcpy(payload, data + h->data_offset, n);
	ferry__byteswap(payload, h->count, h->itemsize, is_complex);
	ferry__byteswap(payload, h->count, h->itemsize, is_complex);
	CHECK(!memcmp(payload, data + h->data_offset, n));
	ferry__fortran_to_c(c_order, payload, h->ndim, h->shape, h->itemsize);
	free(payload);
	free(c_order);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[96];
	struct ferry__npy_header h;
	int64_t hlen = ferry__npy_header_length(data, size < 12 ? size : 12, why, sizeof(why));
	int rc;

	CHECK(hlen > 0 || (hlen == -FERRY_EFORMAT && why[0]));
	rc = ferry__npy_parse(data, size, &h, why, sizeof(why));
	CHECK(rc == 0 || rc == -FERRY_EFORMAT || rc == -FERRY_EUNSUPPORTED);
	CHECK(rc == 0 ? why[0] == '\0' : why[0] != '\0');
	CHECK(rc != 0 || hlen > 0);
	if (rc != 0)
		return 0;
	check_header(&h, size, hlen);
	check_rewrite(&h);
	if (ferry__npy_check_size(&h, size, why, sizeof(why)) == 0)
		run_conversions(&h, data);
	else
		CHECK(why[0] != '\0');
	return 0;
}
