/*
 * CRC-32 as zip computes it (base.h): the check value of "123456789"
 * (0xCBF43926), the empty string, and ferry__crc32_combine against the CRC of
 * the whole for every split of a random buffer into two, and for pieces of
 * a 1 MiB buffer combined in order as staging chunks are (lengths 0 to 4 KiB,
 * odd ones included). Also ferry__inflate_raw's refusals of corrupt or
 * wrongly sized input, naming why; a build without libdeflate must refuse
 * every stream instead, naming libdeflate (and the test ends in a skip).
 */
#include "base/base.h"
#include "helpers.h"

static void check_splits(const unsigned char *buf, size_t len)
{
	uint32_t whole = ferry__crc32(0, buf, len);
	for (size_t cut = 0; cut <= len; cut++) {
		uint32_t a = ferry__crc32(0, buf, cut), b = ferry__crc32(0, buf + cut, len - cut);
		if (ferry__crc32_combine(a, b, len - cut) != whole)
			T_FAIL("combine at %zu of %zu bytes", cut, len);
	}
}

static void check_pieces(const unsigned char *buf, size_t len, uint64_t *seed)
{
	uint32_t crc = 0;
	for (size_t at = 0; at < len;) {
		size_t n = (size_t)(t_rand(seed) % 4097);
		if (n > len - at)
			n = len - at;
		crc = ferry__crc32_combine(crc, ferry__crc32(0, buf + at, n), n);
		at += n;
	}
	T_EQ(crc, ferry__crc32(0, buf, len));
}

/* Without libdeflate: each of the streams refused, naming libdeflate. Returns their count. */
static unsigned check_inflate_unsupported(const unsigned char *garbage, size_t garbage_len,
					  const unsigned char *stored, size_t stored_len)
{
	char why[200];
	unsigned char out[64];
	size_t out_len[] = { 3, 4, 2 };
	T_EQ(ferry__inflate_raw(garbage, garbage_len, out, sizeof(out), why, sizeof(why)),
	     -FERRY_EUNSUPPORTED);
	T_ASSERT(strstr(why, "libdeflate"));
	for (int i = 0; i < 3; i++) {
		why[0] = 0;
		T_EQ(ferry__inflate_raw(stored, stored_len, out, out_len[i], why, sizeof(why)),
		     -FERRY_EUNSUPPORTED);
		T_ASSERT(strstr(why, "libdeflate"));
	}
	return 4;
}

/* Returns how many cases were checked only for their refusal (no libdeflate). */
static unsigned check_inflate_refusals(void)
{
	char why[200];
	unsigned char out[64];
	const unsigned char garbage[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	/* a stored deflate block of "abc": it inflates to 3 bytes, not 4 or 2 */
	const unsigned char stored[] = { 0x01, 0x03, 0x00, 0xfc, 0xff, 'a', 'b', 'c' };
	if (!ferry__inflate_available())
		return check_inflate_unsupported(garbage, sizeof(garbage), stored, sizeof(stored));
	T_EQ(ferry__inflate_raw(garbage, sizeof(garbage), out, sizeof(out), why, sizeof(why)),
	     -FERRY_EFORMAT);
	T_ASSERT(why[0]);
	T_OK(ferry__inflate_raw(stored, sizeof(stored), out, 3, why, sizeof(why)));
	T_ASSERT(!memcmp(out, "abc", 3));
	T_EQ(ferry__inflate_raw(stored, sizeof(stored), out, 4, why, sizeof(why)), -FERRY_EFORMAT);
	T_ASSERT(strstr(why, "fewer bytes"));
	T_EQ(ferry__inflate_raw(stored, sizeof(stored), out, 2, why, sizeof(why)), -FERRY_EFORMAT);
	T_ASSERT(strstr(why, "more bytes"));
	return 0;
}

int main(void)
{
	uint64_t seed = 20;
	size_t len = (size_t)1 << 20;
	unsigned char *buf = malloc(len);
	T_ASSERT(buf);
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)t_rand(&seed);
	T_EQ(ferry__crc32(0, "123456789", 9), 0xCBF43926u);
	T_EQ(ferry__crc32(0, "", 0), 0);
	T_EQ(ferry__crc32(ferry__crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
	check_splits(buf, 300);
	for (int i = 0; i < 4; i++)
		check_pieces(buf, len, &seed);
	unsigned refused = check_inflate_refusals();
	free(buf);
	printf("ok: CRC-32 check value, combining split and chunked buffers, inflate refusals\n");
	if (refused) {
		printf("skip: this build has no libdeflate: %u deflated cases checked only for their "
		       "refusal\n", refused);
		return T_EXIT_SKIP;
	}
	return T_EXIT_PASS;
}
