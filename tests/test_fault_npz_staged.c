/*
 * Fault sweep of bytes staged from host memory (ferry__load_ranges with
 * opts->src): contexts on a fault device and a fault IO table (posix
 * underneath), 8 KiB chunks and two buffers, then ferry_load_member of a
 * deflated member of 38 chunks, ferry_load_member_async (then a wait) of a
 * deflated big-endian Fortran-order one (converted on the host),
 * ferry_load_into of a big-endian .npy into a destination misaligned for the
 * device's conversion (so the host converts it), and a reader over small
 * deflated archives (tests/npz_small.py: packed members, and one larger than
 * a chunk staged in chunks), with one call of one class failing in each run.
 * Every call that succeeds must have put every byte right (destinations
 * poisoned first); a failure must say why (naming the file for IO faults);
 * the pool ends full and the context is destroyed cleanly. A build without
 * libdeflate checks the refusal of the deflated member and ends in a skip.
 */
#include "context/context.h"
#include "test_fault_util.h"
#include "test_npz_util.h"

#define CHUNK ((size_t)8 << 10)
#define POISON 0x5A
#define NARCHIVES 8
#define MAX_NEXT 100

struct expected {
	char path[1100], key[64];
	unsigned char *bytes;
	uint64_t nbytes;
};

struct staged_case {
	char *dir;
	struct expected large, fortran, swapped, archives[NARCHIVES];
	unsigned char back[400 << 10], poison[400 << 10];
};

/* Every byte of dst (device memory) is what e says. */
static void check_loaded(struct staged_case *c, const struct fault_shot *shot, ferry_ctx *ctx,
			 const void *dst, const struct expected *e)
{
	t_alloc_pause(1);
	T_OK(ferry_copy_to_host(ctx, c->back, dst, e->nbytes));
	t_alloc_pause(0);
	for (uint64_t i = 0; i < e->nbytes; i++)
		if (c->back[i] != e->bytes[i])
			shot_fail(shot, "%s[%s] reported loaded, byte %llu of %llu is 0x%02x, want "
				  "0x%02x", e->path, e->key, (unsigned long long)i,
				  (unsigned long long)e->nbytes, c->back[i], e->bytes[i]);
}

static void load_member(struct staged_case *c, struct fault_shot *shot, ferry_ctx *ctx,
			const struct expected *e, int async)
{
	ferry_array *a;
	int rc = async ? ferry_load_member_async(ctx, e->path, e->key, &a)
		       : ferry_load_member(ctx, e->path, e->key, &a);
	if (shot_result(shot, rc) < 0)
		return;
	if (shot_result(shot, ferry_array_wait(a)) == 0)
		check_loaded(c, shot, ctx, ferry_array_data(a), e);
	ferry_array_free(a);
}

/* A big-endian .npy into dst + 1: misaligned for the device, so the host converts. */
static void load_misaligned(struct staged_case *c, struct fault_shot *shot, ferry_ctx *ctx)
{
	const struct expected *e = &c->swapped;
	char *dst;
	if (shot_result(shot, ferry_device_alloc(ctx, e->nbytes + 1, (void **)&dst)) < 0)
		return;
	T_OK(ferry_copy_to_device(ctx, dst, c->poison, e->nbytes + 1));
	if (shot_result(shot, ferry_load_into(ctx, e->path, dst + 1, e->nbytes, NULL)) == 0)
		check_loaded(c, shot, ctx, dst + 1, e);
	ferry_device_free(ctx, dst);
}

static void check_batch(struct staged_case *c, const struct fault_shot *shot, ferry_ctx *ctx,
			ferry_batch *b)
{
	for (unsigned k = 0; k < ferry_batch_size(b); k++) {
		struct ferry_sample s;
		T_OK(ferry_batch_sample(b, k, &s));
		int i = tr_file_index(s.path);
		T_ASSERT(i >= 0 && i < NARCHIVES);
		if (s.nbytes != c->archives[i].nbytes)
			shot_fail(shot, "%s: %llu bytes", s.path, (unsigned long long)s.nbytes);
		check_loaded(c, shot, ctx, s.data, &c->archives[i]);
	}
}

static void read_archives(struct staged_case *c, struct fault_shot *shot, ferry_ctx *ctx)
{
	char dir[1200];
	snprintf(dir, sizeof(dir), "%s/ragged", c->dir);
	struct ferry_reader_config cfg = { .root = dir, .npz_key = "x", .batch_size = 4,
					   .epochs = 1, .num_shards = 1, .threads = 2 };
	ferry_reader *r;
	ferry_batch *b;
	int rc;
	if (shot_result(shot, ferry_reader_open(ctx, &cfg, &r)) < 0)
		return;
	for (int i = 0; (rc = ferry_reader_next(r, &b)) != -FERRY_EEND; i++) {
		if (i == MAX_NEXT)
			shot_fail(shot, "ferry_reader_next never reached the end");
		if (shot_result(shot, rc) < 0)
			continue;
		check_batch(c, shot, ctx, b);
		ferry_batch_release(b);
	}
	shot_result(shot, ferry_reader_close(r));
}

static void staged_workload(void *arg, struct fault_shot *shot)
{
	struct staged_case *c = arg;
	struct ferry_ctx_options opt = { .chunk_size = CHUNK, .max_buffers = 2, .threads = 2 };
	ferry_ctx *ctx;
	shot->must_name = c->dir;
	if (!(ctx = shot_open_ctx(shot, &opt)))
		return;
	load_member(c, shot, ctx, &c->large, 0);
	load_member(c, shot, ctx, &c->fortran, 1);
	load_misaligned(c, shot, ctx);
	read_archives(c, shot, ctx);
	shot_check_lanes(shot, ctx);
	shot_disarm(shot);
	T_OK(ferry_ctx_destroy(ctx));
}

static void expect_file(struct expected *e, const char *path, const char *key, const char *bin)
{
	struct tn_case c;
	snprintf(e->path, sizeof(e->path), "%s", path);
	snprintf(e->key, sizeof(e->key), "%s", key);
	snprintf(c.expected, sizeof(c.expected), "%s", bin);
	e->bytes = tn_expected(&c, &e->nbytes);
	T_ASSERT(e->nbytes <= sizeof(((struct staged_case *)0)->back) - 1);
}

/* The two deflated members of savez_compressed.npz the sweep loads. */
static void pick_members(struct staged_case *c, const struct tn_case *cases, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const struct tn_case *k = &cases[i];
		if (!k->ok || !strstr(k->archive, "/savez_compressed.npz"))
			continue;
		if (!strcmp(k->key, "large"))
			expect_file(&c->large, k->archive, k->key, k->expected);
		if (!strcmp(k->key, "big_fortran"))
			expect_file(&c->fortran, k->archive, k->key, k->expected);
	}
	T_ASSERT(c->large.bytes && c->fortran.bytes);
}

static void make_files(struct staged_case *c)
{
	char path[1200], bin[1200];
	int64_t len = 3000, start = 0;
	unsigned char fill[4] = { 0 };
	tn_write_small(c->dir, NARCHIVES, 100, "");
	for (int i = 0; i < NARCHIVES; i++) {
		snprintf(path, sizeof(path), "%s/ragged/f%03d.npz", c->dir, i);
		snprintf(bin, sizeof(bin), "%s/ragged/f%03d.x.bin", c->dir, i);
		expect_file(&c->archives[i], path, "x", bin);
	}
	snprintf(c->swapped.path, sizeof(c->swapped.path), "%s/swapped.npy", c->dir);
	tr_write_npy(c->swapped.path, FERRY_INT32, '>', 0, 1, &len, 7);
	c->swapped.bytes = tr_reference(7, 4, 1, 0, 1, &len, &start, &len, fill, &c->swapped.nbytes);
}

static void free_expected(struct expected *e)
{
	free(e->bytes);
}

int main(void)
{
	static struct tn_case cases[TN_MAX_CASES];
	static struct staged_case c;
	char *dir;
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	unsigned n = tn_make_cases(cases, &dir); /* skips without numpy */
	c.dir = dir;
	if (!ferry__inflate_available()) {
		ferry_ctx *ctx = tr_ctx(CHUNK, 2);
		ferry_array *a;
		for (unsigned i = 0; i < n; i++)
			if (cases[i].ok && !strcmp(cases[i].key, "large") &&
			    strstr(cases[i].archive, "/savez_compressed.npz"))
				tn_check_refusal(ferry_load_member(ctx, cases[i].archive, "large", &a),
						 cases[i].archive, "large", "the sweep's first call");
		T_OK(ferry_ctx_destroy(ctx));
		t_rmtree(dir);
		return tn_exit(1);
	}
	pick_members(&c, cases, n);
	make_files(&c);
	memset(c.poison, POISON, sizeof(c.poison));
	sweep_all("bytes staged from host memory", staged_workload, &c, 150);
	free_expected(&c.large);
	free_expected(&c.fortran);
	free_expected(&c.swapped);
	for (int i = 0; i < NARCHIVES; i++)
		free_expected(&c.archives[i]);
	t_rmtree(dir);
	printf("fault sweep of staging from host memory: ok\n");
	return T_EXIT_PASS;
}
