/*
 * .npz members load as np.load(archive)[key] gives them, every byte checked:
 * archives written by np.savez and np.savez_compressed (every dtype, 0-d,
 * empty, big-endian, Fortran order, a member over many chunks, zeros), by
 * zipfile with data descriptors (an unseekable stream), a 65 KB comment,
 * extra fields, force_zip64 on and off, a stored member after a deflated
 * one, and by hand with zip64 sizes and offsets in the central directory and
 * a zip64 end record (tests/npz_cases.py writes them). Each member through
 * ferry_info_member, ferry_load_member, ferry_load_member_into,
 * ferry_load_member_async (waited on the host) and
 * ferry_load_member_into_async, with 4 KiB chunks and 3 IO threads, so that
 * stored payloads span many chunks and their CRC-32 is combined from pieces.
 * A .npz given to the plain calls is refused, saying it is an archive. A
 * build without libdeflate must refuse each deflated member by every call
 * instead (and the test ends in a skip that counts them).
 */
#include "test_npz_util.h"

static struct tn_case cases[TN_MAX_CASES];

static void check_info(const struct tn_case *c, const struct ferry_array_info *info)
{
	if (strcmp(ferry_dtype_name(info->dtype), c->dtype) || info->ndim != c->ndim)
		T_FAIL("%s[%s]: %s rank %d, numpy says %s rank %d", c->archive, c->key,
		       ferry_dtype_name(info->dtype), info->ndim, c->dtype, c->ndim);
	for (int d = 0; d < c->ndim; d++)
		T_EQ(info->shape[d], c->shape[d]);
	T_EQ(info->fortran_order, c->fortran);
}

static void check_case(ferry_ctx *ctx, const struct tn_case *c)
{
	char what[1300];
	uint64_t n;
	struct ferry_array_info info;
	ferry_array *a;
	void *want = tn_expected(c, &n), *dst;
	T_OK(ferry_info_member(c->archive, c->key, &info));
	check_info(c, &info);
	T_EQ(info.nbytes, n);

	snprintf(what, sizeof(what), "%s[%s] by ferry_load_member", c->archive, c->key);
	T_OK(ferry_load_member(ctx, c->archive, c->key, &a));
	check_info(c, ferry_array_info(a));
	tr_check_bytes(ctx, ferry_array_data(a), want, n, what);
	ferry_array_free(a);

	snprintf(what, sizeof(what), "%s[%s] by ferry_load_member_async", c->archive, c->key);
	T_OK(ferry_load_member_async(ctx, c->archive, c->key, &a));
	T_OK(ferry_array_wait(a));
	tr_check_bytes(ctx, ferry_array_data(a), want, n, what);
	ferry_array_free(a);

	T_OK(ferry_device_alloc(ctx, n + 1, &dst));
	snprintf(what, sizeof(what), "%s[%s] by ferry_load_member_into", c->archive, c->key);
	T_OK(ferry_load_member_into(ctx, c->archive, c->key, dst, n + 1, &info));
	check_info(c, &info);
	tr_check_bytes(ctx, dst, want, n, what);
	snprintf(what, sizeof(what), "%s[%s] by ferry_load_member_into_async", c->archive, c->key);
	T_OK(ferry_load_member_into_async(ctx, c->archive, c->key, dst, n + 1, &a));
	ferry_array_free(a); /* waits */
	tr_check_bytes(ctx, dst, want, n, what);
	ferry_device_free(ctx, dst);
	free(want);
}

/* A deflated member without libdeflate: every call refuses it. */
static void check_refused(ferry_ctx *ctx, const struct tn_case *c)
{
	struct ferry_array_info info;
	ferry_array *a = NULL;
	void *dst;
	tn_check_refusal(ferry_info_member(c->archive, c->key, &info), c->archive, c->key,
			 "ferry_info_member");
	tn_check_refusal(ferry_load_member(ctx, c->archive, c->key, &a), c->archive, c->key,
			 "ferry_load_member");
	tn_check_refusal(ferry_load_member_async(ctx, c->archive, c->key, &a), c->archive, c->key,
			 "ferry_load_member_async");
	T_OK(ferry_device_alloc(ctx, 1 << 20, &dst));
	tn_check_refusal(ferry_load_member_into(ctx, c->archive, c->key, dst, 1 << 20, &info),
			 c->archive, c->key, "ferry_load_member_into");
	ferry_device_free(ctx, dst);
	T_ASSERT(!a);
}

/* The plain calls refuse an archive, naming what to do instead. */
static void check_plain_refuses(ferry_ctx *ctx, const char *archive)
{
	struct ferry_array_info info;
	ferry_array *a;
	T_EQ(ferry_info(archive, &info), -FERRY_EFORMAT);
	T_ASSERT(strstr(ferry_last_error(), "zip archive (.npz)"));
	T_ASSERT(strstr(ferry_last_error(), archive));
	T_EQ(ferry_load(ctx, archive, &a), -FERRY_EFORMAT);
	T_ASSERT(strstr(ferry_last_error(), "zip archive (.npz)"));
}

int main(void)
{
	char *dir;
	unsigned n = tn_make_cases(cases, &dir), ok = 0, refused = 0;
	ferry_ctx *ctx = tr_ctx(4096, 3);
	for (unsigned i = 0; i < n; i++)
		if (cases[i].ok && tn_refused(&cases[i])) {
			check_refused(ctx, &cases[i]);
			refused++;
		} else if (cases[i].ok) {
			check_case(ctx, &cases[i]);
			ok++;
		}
	check_plain_refuses(ctx, cases[0].archive);
	/* key NULL is the plain call */
	T_EQ(ferry_info_member(cases[0].archive, NULL, &(struct ferry_array_info){ 0 }),
	     -FERRY_EFORMAT);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	printf("ok: %u members loaded five ways, every byte as numpy reads it\n", ok);
	return tn_exit(refused);
}
