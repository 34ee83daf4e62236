/*
 * CRC-32 and raw deflate for .npz members (base.h): libdeflate where the build
 * found it (linked statically, as liburing is), else a table CRC and no
 * inflate. bench/inflate_libs.c measured libdeflate against zlib (docs/design.md).
 * A stream's first bytes alone (a member's .npy header for ferry info) come
 * from zlib where the build found it: libdeflate inflates whole streams only.
 */
#include "base/base.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#ifdef FERRY_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif
#ifdef FERRY_HAVE_ZLIB
#include <limits.h>
#include <zlib.h>
#endif

#define CRC_POLY 0xedb88320u /* CRC-32 (zip, gzip), bits reflected */

#ifdef FERRY_HAVE_LIBDEFLATE
uint32_t ferry__crc32(uint32_t crc, const void *data, size_t len)
{
	return libdeflate_crc32(crc, data, len);
}

int ferry__inflate_raw(const void *in, size_t in_len, void *out, size_t out_len, char *why,
		       size_t why_len)
{
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	if (!d)
		return -ENOMEM;
	size_t used = 0;
	enum libdeflate_result rc = libdeflate_deflate_decompress_ex(d, in, in_len, out, out_len,
								     &used, NULL);
	libdeflate_free_decompressor(d);
	if (rc == LIBDEFLATE_SUCCESS && used == in_len)
		return 0;
	snprintf(why, why_len, "%s",
		 rc == LIBDEFLATE_SUCCESS ? "compressed data continues past the end of its stream"
		 : rc == LIBDEFLATE_SHORT_OUTPUT ? "inflates to fewer bytes than the directory says"
		 : rc == LIBDEFLATE_INSUFFICIENT_SPACE ? "inflates to more bytes than the directory says"
						       : "corrupt deflate data");
	return -FERRY_EFORMAT;
}

int ferry__inflate_available(void)
{
	return 1;
}
#else
static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void make_crc_table(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC_POLY : c >> 1;
		crc_table[n] = c;
	}
}

uint32_t ferry__crc32(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;
	pthread_once(&crc_once, make_crc_table);
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

int ferry__inflate_raw(const void *in, size_t in_len, void *out, size_t out_len, char *why,
		       size_t why_len)
{
	(void)in, (void)in_len, (void)out, (void)out_len;
	snprintf(why, why_len, "deflated members need libdeflate, which this build lacks "
		 "(Debian/Ubuntu: apt-get install libdeflate-dev, then rebuild)");
	return -FERRY_EUNSUPPORTED;
}

int ferry__inflate_available(void)
{
	return 0;
}
#endif

/* a(x) * b(x) modulo the CRC polynomial, reflected. */
static uint32_t multmodp(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31, p = 0;
	for (;;) {
		if (a & m) {
			p ^= b;
			if ((a & (m - 1)) == 0)
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ CRC_POLY : b >> 1;
	}
	return p;
}

/* CRC(A B) from CRC(A), CRC(B) and B's length: CRC(A) shifted by len2 zero
 * bytes (x^(8 len2) mod P, by squaring), then B's CRC added. */
uint32_t ferry__crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2)
{
	uint32_t sq = 1u << 30; /* x^1 */
	uint32_t shift = 1u << 31; /* x^0 */
	for (int i = 0; i < 3; i++)
		sq = multmodp(sq, sq); /* x^8: one byte */
	for (; len2; len2 >>= 1) {
		if (len2 & 1)
			shift = multmodp(sq, shift);
		sq = multmodp(sq, sq);
	}
	return multmodp(shift, crc1) ^ crc2;
}

#ifdef FERRY_HAVE_ZLIB
int ferry__inflate_prefix(const void *in, size_t in_len, void *out, size_t want, size_t *got,
			  char *why, size_t why_len)
{
	z_stream z = { .next_in = (Bytef *)in, .avail_in = in_len < UINT_MAX ? in_len : UINT_MAX,
		       .next_out = out, .avail_out = want < UINT_MAX ? want : UINT_MAX };
	*got = 0;
	snprintf(why, why_len, "out of memory for zlib's inflate state");
	if (inflateInit2(&z, -MAX_WBITS) != Z_OK) /* negative: raw deflate, no zlib header */
		return -ENOMEM;
	int rc = inflate(&z, Z_SYNC_FLUSH);
	*got = (size_t)(z.next_out - (Bytef *)out);
	snprintf(why, why_len, "corrupt deflate data (zlib: %s)", z.msg ? z.msg : "no reason");
	inflateEnd(&z);
	if (rc == Z_STREAM_END)
		return 1;
	/* Z_BUF_ERROR: no progress possible, in ran out (or want was 0). */
	if (rc == Z_OK || rc == Z_BUF_ERROR)
		return 0;
	return rc == Z_MEM_ERROR ? -ENOMEM : -FERRY_EFORMAT;
}

int ferry__inflate_prefix_available(void)
{
	return 1;
}
#else
int ferry__inflate_prefix(const void *in, size_t in_len, void *out, size_t want, size_t *got,
			  char *why, size_t why_len)
{
	(void)in, (void)in_len, (void)out, (void)want;
	*got = 0;
	snprintf(why, why_len, "inflating a stream's first bytes needs zlib, which this build "
		 "lacks");
	return -FERRY_EUNSUPPORTED;
}

int ferry__inflate_prefix_available(void)
{
	return 0;
}
#endif
