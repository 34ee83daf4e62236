/* The `ferry gen` dataset: the payload formula every byte of which can be
 * recomputed (for --verify and the bench), and writing one file of it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "base/base.h"
#include "npy/npy.h"

/* ---- the payload formula ---- */

/* splitmix64's output step (Steele, Lea, Flood 2014). */
uint64_t ferry_cli_gen_mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

uint64_t ferry_cli_gen_key(uint64_t seed, uint64_t index)
{
	return ferry_cli_gen_mix(seed ^ ferry_cli_gen_mix(index));
}

static void store_le64(unsigned char *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, 8);
}

void ferry_cli_gen_fill(void *buf, size_t len, uint64_t key, uint64_t offset)
{
	unsigned char *p = buf, word[8];
	size_t done = 0;

	/* An unaligned start and a partial last word go byte by byte. */
	while (done < len && ((offset + done) % 8 || len - done < 8)) {
		store_le64(word, ferry_cli_gen_mix(key + (offset + done) / 8));
		p[done] = word[(offset + done) % 8];
		done++;
	}
	for (uint64_t w = (offset + done) / 8; len - done >= 8; w++, done += 8)
		store_le64(p + done, ferry_cli_gen_mix(key + w));
	while (done < len) {
		store_le64(word, ferry_cli_gen_mix(key + (offset + done) / 8));
		p[done] = word[(offset + done) % 8];
		done++;
	}
}

size_t ferry_cli_gen_check(const void *buf, size_t len, uint64_t key, uint64_t offset)
{
	const unsigned char *p = buf;
	unsigned char want[4096];

	for (size_t done = 0; done < len; done += sizeof(want)) {
		size_t n = len - done < sizeof(want) ? len - done : sizeof(want);
		ferry_cli_gen_fill(want, n, key, offset + done);
		if (memcmp(p + done, want, n))
			for (size_t i = 0; i < n; i++)
				if (p[done + i] != want[i])
					return done + i;
	}
	return len;
}

/* ---- writing one file ---- */

/* The largest payload `ferry gen` writes: after the largest header, every offset
 * of the file still fits an int64, as numpy and ferry require. */

/* Computes the payload bytes of spec: element count times itemsize, each
 * product checked for overflow (zero dimensions left out of the check, as
 * numpy and ferry's reader do). Returns 0, or -1 when a dimension is negative
 * or the payload would pass FERRY_CLI_GEN_MAX_PAYLOAD. */
int ferry_cli_gen_nbytes(const struct ferry_cli_gen_spec *spec, uint64_t *nbytes)
{
	int64_t product = (int64_t)ferry_dtype_size(spec->dtype);
	int any_zero = 0;

	for (int i = 0; i < spec->ndim; i++) {
		if (spec->shape[i] < 0)
			return -1;
		if (spec->shape[i] == 0)
			any_zero = 1;
		else if (__builtin_mul_overflow(product, spec->shape[i], &product))
			return -1;
	}
	if ((uint64_t)product > FERRY_CLI_GEN_MAX_PAYLOAD)
		return -1;
	*nbytes = any_zero ? 0 : (uint64_t)product;
	return 0;
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Writes the header, then the payload bytes in scratch-sized pieces. Returns 0
 * or -errno. */
static int write_npy(int fd, const struct ferry_cli_gen_spec *spec, uint64_t payload,
		     uint64_t key, unsigned char *scratch, size_t scratch_len)
{
	uint64_t offset = 0;
	int header = ferry__npy_write_header(scratch, scratch_len, spec->dtype, spec->byteorder,
					     spec->fortran_order, spec->ndim, spec->shape,
					     spec->version);
	size_t used;

	if (header < 0)
		return header;
	used = (size_t)header;
	do {
		size_t n = scratch_len - used;
		if (n > payload - offset)
			n = (size_t)(payload - offset);
		ferry_cli_gen_fill(scratch + used, n, key, offset);
		int rc = write_all(fd, scratch, used + n);
		if (rc < 0)
			return rc;
		offset += n;
		used = 0;
	} while (offset < payload);
	return 0;
}

int ferry_cli_gen_file(const char *path, const struct ferry_cli_gen_spec *spec, uint64_t key,
		       void *scratch, size_t scratch_len)
{
	uint64_t payload;
	int fd, rc;

	/* Refused before the file is created: a payload too large for a .npy. */
	if (ferry_cli_gen_nbytes(spec, &payload) < 0) {
		fprintf(stderr, "ferry: %s: cannot write: the shape's payload overflows a .npy file\n",
			path);
		return 1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "ferry: %s: cannot create: %s\n", path, strerror(errno));
		return 1;
	}
	rc = write_npy(fd, spec, payload, key, scratch, scratch_len);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc < 0) {
		fprintf(stderr, "ferry: %s: cannot write: %s\n", path,
			rc == -EINVAL ? "invalid dtype or shape" : strerror(-rc));
		unlink(path);
		return 1;
	}
	return 0;
}

/* ---- the dataset's directory ---- */

/* Returns the index of a name "sample_NNNNNN.npy" (six digits or more), or -1. */
static long sample_index(const char *name)
{
	size_t digits = 0;
	long v = 0;

	if (strncmp(name, "sample_", 7))
		return -1;
	for (name += 7; *name >= '0' && *name <= '9' && digits < 12; name++, digits++)
		v = v * 10 + (*name - '0');
	return digits >= 6 && !strcmp(name, ".npy") ? v : -1;
}

int ferry_cli_gen_prepare_dir(const char *dir, int force, const char *force_option)
{
	char other[256] = "";
	struct dirent *e;
	DIR *d;

	if (ferry_cli_mkdirs(dir) == 0)
		return 0;
	if (errno != EEXIST)
		return ferry_cli_fail("%s: cannot create the directory: %s", dir, strerror(errno));
	if (!(d = opendir(dir)))
		return ferry_cli_fail("%s: %s", dir, strerror(errno));
	while (!*other && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && sample_index(e->d_name) < 0)
			snprintf(other, sizeof(other), "%s", e->d_name);
	closedir(d);
	if (!*other || force)
		return 0;
	return ferry_cli_fail("%s: not empty, and '%s' is not a file ferry gen writes: refusing "
			      "to mix datasets (empty it or choose another directory%s%s)", dir, other,
			      force_option ? ", or add " : "", force_option ? force_option : "");
}

unsigned ferry_cli_gen_remove_stale(const char *dir, unsigned files)
{
	unsigned removed = 0;
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d)) != NULL)
		if (sample_index(e->d_name) >= (long)files && unlinkat(dirfd(d), e->d_name, 0) == 0)
			removed++;
	if (d)
		closedir(d);
	return removed;
}
