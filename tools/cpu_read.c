/* The independent CPU read behind `ferry read --verify` and the demo: stdio
 * and the tool's own conversion loops, none of ferry's loading code. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"
#include "base/base.h"
#include "npy/npy.h"

/* ---- the independent CPU read ---- */

/* Reads exactly len bytes at offset; 0, or 1 after printing why. */
static int read_exact(FILE *f, const char *path, uint64_t offset, void *buf, size_t len)
{
	if (fseeko(f, (off_t)offset, SEEK_SET) != 0) {
		ferry_cli_fail("%s: cannot seek: %s", path, strerror(errno));
		return 1;
	}
	if (len && fread(buf, 1, len, f) != len) {
		ferry_cli_fail("%s: %s", path,
			ferror(f) ? strerror(errno) : "file ends early");
		return 1;
	}
	return 0;
}

/* Reads and parses the header of the open file f. Returns 0 or 1. */
static int cpu_read_header(FILE *f, const char *path, struct ferry__npy_header *h)
{
	unsigned char prefix[FERRY__NPY_PREFIX_MAX], *bytes;
	char why[256];
	struct stat st;
	size_t have = fread(prefix, 1, sizeof(prefix), f);
	int64_t total = ferry__npy_header_length(prefix, have, why, sizeof(why));
	int rc;

	if (total < 0 || fstat(fileno(f), &st) != 0) {
		ferry_cli_fail("%s: %s", path, total < 0 ? why : strerror(errno));
		return 1;
	}
	if ((uint64_t)total > (uint64_t)st.st_size) {
		ferry_cli_fail("%s: header of %" PRId64 " bytes is past the end of the file",
			path, total);
		return 1;
	}
	bytes = malloc((size_t)total);
	if (!bytes || read_exact(f, path, 0, bytes, (size_t)total)) {
		if (!bytes)
			ferry_cli_fail("%s: out of memory", path);
		free(bytes);
		return 1;
	}
	rc = ferry__npy_parse(bytes, (size_t)total, h, why, sizeof(why));
	free(bytes);
	if (rc == 0)
		rc = ferry__npy_check_size(h, (uint64_t)st.st_size, why, sizeof(why));
	if (rc < 0) {
		ferry_cli_fail("%s: %s", path, why);
		return 1;
	}
	return 0;
}

static int is_complex(enum ferry_dtype dtype)
{
	return dtype == FERRY_COMPLEX64 || dtype == FERRY_COMPLEX128;
}

/* Reverses the bytes of each scalar (each half of a complex number). */
static void swap_scalars(unsigned char *data, uint64_t nbytes, size_t scalar)
{
	for (uint64_t at = 0; scalar > 1 && at < nbytes; at += scalar)
		for (size_t lo = 0, hi = scalar - 1; lo < hi; lo++, hi--) {
			unsigned char t = data[at + lo];
			data[at + lo] = data[at + hi];
			data[at + hi] = t;
		}
}

/* Copies the Fortran-order array src into dst in C order: walks the C-order
 * index with an odometer and reads each element at its Fortran offset. */
static void fortran_to_c(unsigned char *dst, const unsigned char *src,
			 const struct ferry__npy_header *h)
{
	int64_t index[FERRY_MAX_DIMS] = { 0 }, stride[FERRY_MAX_DIMS];
	uint64_t from = 0;

	for (int d = 0; d < h->ndim; d++)
		stride[d] = d ? stride[d - 1] * h->shape[d - 1] : 1;
	for (uint64_t i = 0; i < h->count; i++) {
		memcpy(dst + i * h->itemsize, src + from * h->itemsize, h->itemsize);
		for (int d = h->ndim - 1; d >= 0; d--) {
			from += (uint64_t)stride[d];
			if (++index[d] < h->shape[d])
				break;
			from -= (uint64_t)(stride[d] * index[d]);
			index[d] = 0;
		}
	}
}

int ferry_cli_cpu_load(const char *path, void **out, uint64_t *nbytes)
{
	struct ferry__npy_header h;
	unsigned char *data = NULL, *c_order;
	FILE *f = fopen(path, "rb");
	int status = 1;

	if (!f) {
		ferry_cli_fail("%s: %s", path, strerror(errno));
		return 1;
	}
	if (cpu_read_header(f, path, &h))
		goto out;
	data = malloc(h.data_size ? (size_t)h.data_size : 1);
	if (!data) {
		ferry_cli_fail("%s: out of memory", path);
		goto out;
	}
	if (read_exact(f, path, h.data_offset, data, (size_t)h.data_size))
		goto out;
	if (h.swap)
		swap_scalars(data, h.data_size, is_complex(h.dtype) ? h.itemsize / 2 : h.itemsize);
	if (h.fortran_order && h.ndim > 1 && h.count) {
		c_order = malloc((size_t)h.data_size);
		if (!c_order) {
			ferry_cli_fail("%s: out of memory", path);
			goto out;
		}
		fortran_to_c(c_order, data, &h);
		free(data);
		data = c_order;
	}
	*out = data;
	*nbytes = h.data_size;
	data = NULL;
	status = 0;
out:
	free(data);
	fclose(f);
	return status;
}

int ferry_cli_compare(const char *path, const void *got, const void *want, uint64_t n)
{
	const unsigned char *g = got, *w = want;

	if (!n || !memcmp(g, w, (size_t)n))
		return 0;
	for (uint64_t i = 0; i < n; i++)
		if (g[i] != w[i]) {
			ferry_cli_fail(
				"%s: verify failed: first mismatch at byte %" PRIu64 " of %" PRIu64
				" (device 0x%02x, file 0x%02x)",
				path, i, n, g[i], w[i]);
			break;
		}
	return 1;
}
