/*
 * .npz members under failing host allocations: the Nth allocation fails in
 * ferry_load_member (a stored member over many chunks, a deflated one, a
 * big-endian Fortran-order one), ferry_load_member_async, ferry_info_member
 * (deflated), a reader with npz_key (a deflated member) and one whose batch
 * packs two small stored members (read into staging, CRC-32 checked there),
 * for every N until none is left to fail. Each failure returns a negative code whose message names the archive
 * (never another file's left over), nothing leaks (ASan), and the call
 * succeeds once the allocation it failed is past. Then the same calls with
 * the POSIX backend and the Nth pread failing (EIO), ending early (EOF) or
 * short (which must succeed: reads loop), for every N. In a build without
 * libdeflate the calls on deflated members must end, once no fault fires, in
 * their refusal (-FERRY_EUNSUPPORTED naming the archive, the member and
 * libdeflate) instead of success, and the test ends in a skip.
 */
#include "test_npz_util.h"

#define OTHER "no-such-file-elsewhere.npz"

struct subject {
	ferry_ctx *ctx;
	char stored[1100], deflated[1100], dir[1100];
};

/* A reader of member key of path, listed n times (one batch of n). */
static int reader_call(struct subject *s, const char *path, const char *key, size_t n)
{
	const char *files[2] = { path, path };
	struct ferry_reader_config cfg = { .files = files, .nfiles = n, .npz_key = key,
					   .batch_size = (unsigned)n, .epochs = 1, .num_shards = 1,
					   .threads = 1 };
	ferry_reader *r;
	ferry_batch *b;
	int rc = ferry_reader_open(s->ctx, &cfg, &r);
	if (rc < 0)
		return rc;
	rc = ferry_reader_next(r, &b);
	if (rc == 0)
		ferry_batch_release(b);
	t_alloc_pause(1);
	ferry_reader_close(r);
	t_alloc_pause(0);
	return rc;
}

static int call(struct subject *s, int k, ferry_array **a)
{
	struct ferry_array_info info;
	switch (k) {
	case 0: return ferry_load_member(s->ctx, s->stored, "large", a);
	case 1: return ferry_load_member(s->ctx, s->deflated, "large", a);
	case 2: return ferry_load_member(s->ctx, s->stored, "big_fortran", a);
	case 3: return ferry_load_member_async(s->ctx, s->stored, "large", a);
	case 4: return ferry_info_member(s->deflated, "big_fortran", &info);
	case 5: return reader_call(s, s->deflated, "big_fortran", 1);
	default: return reader_call(s, s->stored, "t_f4", 2); /* packed, CRC checked in staging */
	}
}

#define NCALLS 7
static const int on_stored[NCALLS] = { 1, 0, 1, 1, 0, 0, 1 };
static const char *const member_of[NCALLS] = { "large", "large", "big_fortran", "large",
					       "big_fortran", "big_fortran", "t_f4" };

/* Whether call k ends in a refusal (a deflated member, no libdeflate), then checked. */
static int refused(struct subject *s, int k, int rc)
{
	if (on_stored[k] || ferry__inflate_available())
		return 0;
	tn_check_refusal(rc, s->deflated, member_of[k], "a call of the sweep");
	return 1;
}

/* Runs call k once with allocation n failing. Returns whether it fired. */
static int shoot(struct subject *s, int k, unsigned long n)
{
	ferry_array *a = NULL, *other;
	T_ASSERT(ferry_load_member(s->ctx, OTHER, "x", &other) < 0);
	t_alloc_arm(n);
	int rc = call(s, k, &a);
	int fired = t_alloc_fired();
	t_alloc_disarm();
	const char *msg = ferry_last_error(), *want = on_stored[k] ? s->stored : s->deflated;
	/* the reader's own allocations (before any file) name the reader */
	int named = strstr(msg, want) || (k >= 5 && !strncmp(msg, "reader: ", 8));
	if (rc < 0 && (strstr(msg, OTHER) || !named))
		T_FAIL("call %d, allocation %lu failing: %s: message \"%s\" is not about %s", k, n,
		       ferry_strerror(rc), msg, want);
	if (!fired && !refused(s, k, rc) && rc < 0)
		T_FAIL("call %d failed with no allocation failing: %s", k, msg);
	if (a)
		ferry_array_free(a);
	return fired;
}

/* Runs call k once with pread n failing as cls says. Returns whether it fired. */
static int shoot_io(struct subject *s, int k, enum t_io_fault cls, unsigned long n)
{
	ferry_array *a = NULL;
	t_io_arm(cls, n, -EIO, 0);
	int rc = call(s, k, &a);
	int fired = t_io_fired();
	t_io_arm(T_IO_NONE, 0, 0, 0);
	if (cls == T_IO_SHORT_READ && !refused(s, k, rc) && rc < 0)
		T_FAIL("call %d with pread %lu short: %s", k, n, ferry_last_error());
	if (cls != T_IO_SHORT_READ && fired && rc >= 0)
		T_FAIL("call %d with pread %lu failing succeeded", k, n);
	if (rc < 0 && !strstr(ferry_last_error(), ".npz") && strncmp(ferry_last_error(), "reader", 6))
		T_FAIL("call %d, pread %lu failing: message \"%s\" names no archive", k, n,
		       ferry_last_error());
	if (a)
		ferry_array_free(a);
	return fired;
}

static unsigned long sweep_io(struct subject *s)
{
	static const enum t_io_fault classes[] = { T_IO_SYS_READ, T_IO_SYS_EOF, T_IO_SHORT_READ };
	unsigned long shots = 0;
	for (unsigned c = 0; c < 3; c++)
		for (int k = 0; k < NCALLS; k++)
			for (unsigned long n = 1; shoot_io(s, k, classes[c], n); n++)
				shots++;
	return shots;
}

int main(void)
{
	static struct tn_case cases[TN_MAX_CASES];
	if (!t_alloc_wrapped())
		T_SKIP("needs the allocation wrappers");
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	char *dir;
	tn_make_cases(cases, &dir);
	struct subject s;
	snprintf(s.stored, sizeof(s.stored), "%s/savez.npz", dir);
	snprintf(s.deflated, sizeof(s.deflated), "%s/savez_compressed.npz", dir);
	s.ctx = tr_ctx(4096, 2);
	unsigned long shots = 0;
	for (int k = 0; k < NCALLS; k++)
		for (unsigned long n = 1; shoot(&s, k, n); n++)
			shots++;
	T_OK(ferry_ctx_destroy(s.ctx));
	unsigned long io_shots = 0;
	if (t_io_syscalls_wrapped()) {
		setenv("FERRY_IO", "posix", 1);
		s.ctx = tr_ctx(4096, 2);
		io_shots = sweep_io(&s);
		T_OK(ferry_ctx_destroy(s.ctx));
	}
	t_rmtree(dir);
	printf("%lu failing allocations, %lu failing preads: every member call failed cleanly, "
	       "naming its archive\n", shots, io_shots);
	return tn_exit(ferry__inflate_available() ? 0 : 3); /* calls 1, 4 and 5 */
}
