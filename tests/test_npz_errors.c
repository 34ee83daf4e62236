/*
 * Archives ferry must refuse, each with its code and a message naming the
 * file (and the member, where one is at fault): an encrypted member (flag
 * patched), a flipped payload byte of a stored member over many chunks (its
 * CRC-32), a deflated member's CRC field flipped, a stored member's header
 * changed, corrupt deflate data, archives cut at the half, by their last
 * byte and before their directory, a missing key (the message lists the
 * archive's keys), a multi-disk end record, a stored member whose sizes
 * differ, bzip2 and lzma members, a member that is not a .npy, and a file
 * that is not a zip archive (tests/npz_cases.py writes them). Through
 * ferry_load_member, ferry_load_member_async and ferry_load_member_into;
 * ferry_info_member agrees wherever the header alone shows the fault. A
 * build without libdeflate must refuse the deflated ones (a corrupt stream,
 * a wrong CRC) as it refuses every deflated member instead (and the test
 * ends in a skip that counts them).
 */
#include "test_npz_util.h"

static struct tn_case cases[TN_MAX_CASES];

/* The code and a message naming the archive, the member where it is at fault, and the text. */
static void check_error(const struct tn_case *c, int rc, const char *how)
{
	const char *msg = ferry_last_error();
	if (rc != c->code)
		T_FAIL("%s[%s] by %s: %d (%s), want %d", c->archive, c->key, how, rc, msg, c->code);
	if (!strstr(msg, c->archive) || !strstr(msg, c->text))
		T_FAIL("%s[%s] by %s: message '%s' lacks the file or '%s'", c->archive, c->key, how,
		       msg, c->text);
	int member_fault = strstr(msg, "member") != NULL;
	if (member_fault && !strstr(msg, c->key))
		T_FAIL("%s[%s] by %s: message '%s' does not name the member", c->archive, c->key, how,
		       msg);
}

/* A deflated case without libdeflate: every call refuses it. */
static void check_refused(ferry_ctx *ctx, void *dst, size_t cap, const struct tn_case *c)
{
	ferry_array *a = NULL;
	struct ferry_array_info info;
	tn_check_refusal(ferry_load_member(ctx, c->archive, c->key, &a), c->archive, c->key,
			 "ferry_load_member");
	tn_check_refusal(ferry_load_member_async(ctx, c->archive, c->key, &a), c->archive, c->key,
			 "ferry_load_member_async");
	tn_check_refusal(ferry_load_member_into(ctx, c->archive, c->key, dst, cap, NULL),
			 c->archive, c->key, "ferry_load_member_into");
	tn_check_refusal(ferry_info_member(c->archive, c->key, &info), c->archive, c->key,
			 "ferry_info_member");
	T_ASSERT(!a);
}

static void check_case(ferry_ctx *ctx, void *dst, size_t cap, const struct tn_case *c)
{
	ferry_array *a = NULL;
	struct ferry_array_info info;
	check_error(c, ferry_load_member(ctx, c->archive, c->key, &a), "ferry_load_member");
	T_ASSERT(!a);
	check_error(c, ferry_load_member_async(ctx, c->archive, c->key, &a),
		    "ferry_load_member_async");
	T_ASSERT(!a);
	check_error(c, ferry_load_member_into(ctx, c->archive, c->key, dst, cap, NULL),
		    "ferry_load_member_into");
	int rc = ferry_info_member(c->archive, c->key, &info);
	/* A stored member's payload is not read by info: its CRC cannot fail there. */
	if (rc != 0 || !strstr(c->text, "CRC"))
		check_error(c, rc, "ferry_info_member");
}

int main(void)
{
	char *dir;
	unsigned n = tn_make_cases(cases, &dir), errs = 0, refused = 0;
	ferry_ctx *ctx = tr_ctx(4096, 3);
	size_t cap = 1 << 20;
	void *dst;
	T_OK(ferry_device_alloc(ctx, cap, &dst));
	for (unsigned i = 0; i < n; i++)
		if (!cases[i].ok && tn_refused(&cases[i])) {
			check_refused(ctx, dst, cap, &cases[i]);
			refused++;
		} else if (!cases[i].ok) {
			check_case(ctx, dst, cap, &cases[i]);
			errs++;
		}
	ferry_device_free(ctx, dst);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	printf("ok: %u broken archives refused with their reasons\n", errs);
	return tn_exit(refused);
}
