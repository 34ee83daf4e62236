/*
 * zlib against libdeflate, inflating what np.savez_compressed writes: a raw
 * deflate stream (zipfile's default level 6) of a 64 MiB float32 .npy member,
 * random-ish (float32 of a smooth signal plus noise: mantissas do not compress
 * much) and all zeros. Prints MB/s of inflated output for each library, best of
 * 5, on one core. Built by `make bench-inflate` (needs zlib1g-dev and
 * libdeflate-dev); not part of `make` since libferry links only the one it uses.
 */
#include <libdeflate.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define MEMBER (64u << 20)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fill_randomish(float *x, size_t n)
{
	uint64_t s = 42;
	for (size_t i = 0; i < n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		x[i] = (float)(i % 1000) * 0.001f + (float)(s >> 40) * 1e-7f;
	}
}

/* Raw deflate (wbits -15), level 6, as zipfile writes a ZIP_DEFLATED member. */
static size_t compress_raw(const void *in, size_t len, unsigned char **out)
{
	z_stream z = { 0 };
	deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
	size_t cap = deflateBound(&z, len);
	*out = malloc(cap);
	z.next_in = (unsigned char *)in;
	z.avail_in = (uInt)len;
	z.next_out = *out;
	z.avail_out = (uInt)cap;
	deflate(&z, Z_FINISH);
	size_t n = z.total_out;
	deflateEnd(&z);
	return n;
}

static int inflate_zlib(const unsigned char *in, size_t len, void *out, size_t out_len)
{
	z_stream z = { 0 };
	inflateInit2(&z, -15);
	z.next_in = (unsigned char *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)out_len;
	int rc = inflate(&z, Z_FINISH);
	inflateEnd(&z);
	return rc == Z_STREAM_END ? 0 : -1;
}

static int inflate_libdeflate(const unsigned char *in, size_t len, void *out, size_t out_len)
{
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	enum libdeflate_result rc = libdeflate_deflate_decompress(d, in, len, out, out_len, NULL);
	libdeflate_free_decompressor(d);
	return rc == LIBDEFLATE_SUCCESS ? 0 : -1;
}

static void measure(const char *name, const void *data)
{
	unsigned char *z;
	size_t zlen = compress_raw(data, MEMBER, &z);
	void *out = malloc(MEMBER);
	double best[2] = { 1e9, 1e9 }, crc_best[2] = { 1e9, 1e9 };
	for (int rep = 0; rep < 5; rep++) {
		double t0 = now();
		int bad = inflate_zlib(z, zlen, out, MEMBER);
		double t1 = now();
		if (bad || memcmp(out, data, MEMBER))
			fprintf(stderr, "zlib failed\n");
		memset(out, 1, MEMBER);
		double t1b = now();
		bad = inflate_libdeflate(z, zlen, out, MEMBER);
		double t2 = now();
		if (bad || memcmp(out, data, MEMBER))
			fprintf(stderr, "libdeflate failed\n");
		t1 = t0 + (t1 - t0), t2 = t1 + (t2 - t1b);
		volatile unsigned long c1 = crc32(0, out, MEMBER);
		double t3 = now();
		volatile uint32_t c2 = libdeflate_crc32(0, out, MEMBER);
		double t4 = now();
		(void)c1, (void)c2;
		if (t1 - t0 < best[0]) best[0] = t1 - t0;
		if (t2 - t1 < best[1]) best[1] = t2 - t1;
		if (t3 - t2 < crc_best[0]) crc_best[0] = t3 - t2;
		if (t4 - t3 < crc_best[1]) crc_best[1] = t4 - t3;
	}
	printf("%-10s ratio %5.2f  inflate MB/s: zlib %7.0f  libdeflate %7.0f (x%.2f)  "
	       "crc32 MB/s: zlib %6.0f  libdeflate %6.0f\n", name, (double)MEMBER / zlen,
	       MEMBER / best[0] / 1e6, MEMBER / best[1] / 1e6, best[0] / best[1],
	       MEMBER / crc_best[0] / 1e6, MEMBER / crc_best[1] / 1e6);
	free(z);
	free(out);
}

int main(void)
{
	float *x = malloc(MEMBER);
	fill_randomish(x, MEMBER / sizeof(float));
	measure("randomish", x);
	memset(x, 0, MEMBER);
	measure("zeros", x);
	free(x);
	printf("zlib %s, libdeflate %s\n", zlibVersion(), LIBDEFLATE_VERSION_STRING);
	return 0;
}
