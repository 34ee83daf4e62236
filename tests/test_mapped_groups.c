/*
 * Small files register in groups (load/mapped.c, FERRY__MAPPED_GROUP): offers
 * queued together (ferry__mapped_hold keeps the registrar from taking them
 * until all are made) are mapped side by side and registered with one call,
 * as many as the pin budget takes; every file of a group is then copied from
 * its own place in the range, every byte checked. A group's pages stay pinned
 * (and counted) until its last file leaves: eviction and memory pressure free
 * a group whole, a held file keeps its group, and a file of a group that
 * changes is read again from the file while the others stay mapped. A group
 * the device refuses counts one refusal and pins nothing. A file a load misses
 * while it is being registered is not offered a second time.
 */
#include "test_mapped_util.h"

/* Offers of files first..first+n-1 queued, then registered together. */
static void load_as_group(ferry_ctx *ctx, unsigned first, unsigned n)
{
	ferry__mapped_hold(ctx->ld.mapped, 1);
	for (unsigned i = first; i < first + n; i++)
		tm_load(ctx, i, "first load, offers held");
	T_EQ(tm_stats(ctx).entries, 0u);
	ferry__mapped_hold(ctx->ld.mapped, 0);
	ferry__mapped_drain(ctx->ld.mapped);
}

/* Mappings of the test files in /proc/self/maps. */
static unsigned our_maps(void)
{
	unsigned lines, ours;
	tm_count_maps(&lines, &ours);
	return ours;
}

/* Loads file i and expects the mapped path (hit) or the read path. */
static void load_expect(ferry_ctx *ctx, unsigned i, int hit, const char *label)
{
	uint64_t hits = tm_stats(ctx).hits;
	tm_load(ctx, i, label);
	tm_expect_hit(ctx, hits, hit, label);
}

/* The last bytes of file i and a range across its middle, from its mapping. */
static void check_edges(ferry_ctx *ctx, unsigned i)
{
	static const uint64_t cuts[][2] = { { 0, 5 }, { 4093, 4099 } };
	void *dev = NULL;
	T_OK(ferry_device_alloc(ctx, 8192, &dev));
	for (unsigned k = 0; k < 3; k++) {
		uint64_t off = k < 2 ? cuts[k][0] : tm_file_size - 3, len = k < 2 ? cuts[k][1] : 3;
		uint64_t hits = tm_stats(ctx).hits;
		T_OK(ferry_read_range(ctx, tm_paths[i], off, len, dev));
		tm_expect_hit(ctx, hits, 1, "read_range of a grouped file");
		void *want = tm_cpu_read(tm_paths[i], off, len);
		tr_check_bytes(ctx, dev, want, len, "read_range of a grouped file");
		free(want);
	}
	ferry_device_free(ctx, dev);
}

/* Six files of just over 4 MiB: the first four reach 16 MiB, one group; the
 * other two a second. */
static void check_groups_form(void)
{
	ferry_ctx *ctx = tm_ctx("256M");
	load_as_group(ctx, 0, TM_NFILES);
	struct ferry__mapped_stats st = tm_stats(ctx);
	T_EQ(st.registrations, 2u);
	T_EQ(st.registered, (uint64_t)TM_NFILES);
	T_EQ(st.entries, (unsigned)TM_NFILES);
	T_EQ(st.pinned, TM_NFILES * tm_slot);
	T_EQ(our_maps(), (unsigned)TM_NFILES);
	for (unsigned i = 0; i < TM_NFILES; i++) {
		load_expect(ctx, i, 1, "grouped file");
		check_edges(ctx, i);
	}
	T_OK(ferry_ctx_destroy(ctx));
	T_EQ(our_maps(), 0u);
}

/* Budget for five files: a group of four and one alone fit; a sixth file
 * evicts the whole group (its files the least recently used). */
static void check_group_evicted_whole(void)
{
	char budget[32];
	snprintf(budget, sizeof(budget), "%llu", (unsigned long long)(5 * tm_slot));
	ferry_ctx *ctx = tm_ctx(budget);
	load_as_group(ctx, 0, 4);
	tm_load_and_drain(ctx, 4);
	T_EQ(tm_stats(ctx).registrations, 2u);
	T_EQ(tm_stats(ctx).entries, 5u);
	tm_load_and_drain(ctx, 5);
	struct ferry__mapped_stats st = tm_stats(ctx);
	T_EQ(st.entries, 2u);
	T_EQ(st.pinned, 2 * tm_slot);
	T_EQ(our_maps(), 2u);
	load_expect(ctx, 4, 1, "alone, kept");
	load_expect(ctx, 5, 1, "alone, registered after the group left");
	load_expect(ctx, 0, 0, "its group evicted");
	T_OK(ferry_ctx_destroy(ctx));
}

/* A budget for two and a half files takes the first two of four offers. */
static void check_group_trimmed_to_budget(void)
{
	char budget[32];
	snprintf(budget, sizeof(budget), "%llu", (unsigned long long)(tm_file_size * 5 / 2));
	ferry_ctx *ctx = tm_ctx(budget);
	load_as_group(ctx, 0, 4);
	struct ferry__mapped_stats st = tm_stats(ctx);
	T_EQ(st.registrations, 1u);
	T_EQ(st.entries, 2u);
	T_EQ(st.pinned, 2 * tm_slot);
	load_expect(ctx, 0, 1, "within the budget");
	load_expect(ctx, 1, 1, "within the budget");
	load_expect(ctx, 2, 0, "past the budget");
	T_OK(ferry_ctx_destroy(ctx));
}

/* Under memory pressure the idle files of a group go, but a load holding one
 * keeps the whole range pinned (and counted) until it lets go. */
static void check_held_file_keeps_group(void)
{
	ferry_ctx *ctx = tm_ctx("256M");
	load_as_group(ctx, 0, 4);
	struct ferry__file *f;
	T_OK(ferry__io_file_open(tm_paths[1], 0, &f));
	struct ferry__mapping *held = ferry__mapped_find(ctx->ld.mapped, f);
	T_ASSERT(held);
	ferry__mapped_set_reserve(ctx->ld.mapped, UINT64_MAX / 2);
	ferry__mapped_drain(ctx->ld.mapped);
	struct ferry__mapped_stats st = tm_stats(ctx);
	T_EQ(st.entries, 1u);
	T_EQ(st.released, 3u);
	T_EQ(st.pinned, 4 * tm_slot);
	T_EQ(our_maps(), 4u);
	ferry__mapped_release(ctx->ld.mapped, held, NULL, 0);
	ferry__io_file_close(f);
	ferry__mapped_drain(ctx->ld.mapped);
	st = tm_stats(ctx);
	T_EQ(st.entries, 0u);
	T_EQ(st.pinned, 0u);
	T_EQ(our_maps(), 0u);
	T_OK(ferry_ctx_destroy(ctx));
}

/* File 2 of a group is replaced by other bytes: its load reads the new file,
 * its old entry is dropped, and the group's other files stay mapped. */
static void check_member_replaced(void)
{
	ferry_ctx *ctx = tm_ctx("256M");
	load_as_group(ctx, 0, 4);
	T_ASSERT(unlink(tm_paths[2]) == 0);
	int64_t n = TM_ELEMS;
	tr_write_npy(tm_paths[2], FERRY_FLOAT32, 0, 0, 1, &n, 77);
	load_expect(ctx, 2, 0, "replaced, read again");
	ferry__mapped_drain(ctx->ld.mapped);
	struct ferry__mapped_stats st = tm_stats(ctx);
	T_EQ(st.entries, 4u);           /* 0, 1, 3 in the group; the new 2 alone */
	T_EQ(st.registrations, 2u);
	T_EQ(st.pinned, 5 * tm_slot);   /* the old 2's pages go with its group */
	for (unsigned i = 0; i < 4; i++)
		load_expect(ctx, i, 1, "after a file of the group was replaced");
	T_OK(ferry_ctx_destroy(ctx));
	T_ASSERT(unlink(tm_paths[2]) == 0);
	tm_write_file(2);
}

/* A group the device refuses: one refusal, nothing pinned, every load whole
 * through the read path; offered again, the files register. */
static void check_group_refused(void)
{
	struct ferry__device *fdev;
	ferry_ctx *ctx = tm_fault_ctx(T_FAULT_MAP_REGISTER, 1, 0, &fdev);
	load_as_group(ctx, 0, 4);
	struct ferry__mapped_stats st = tm_stats(ctx);
	T_EQ(st.refused, 1u);
	T_EQ(st.entries, 0u);
	T_EQ(st.pinned, 0u);
	T_EQ(our_maps(), 0u);
	T_ASSERT(strstr(st.last_refusal, tm_paths[0]) && strstr(st.last_refusal, "beside it"));
	for (unsigned i = 0; i < 4; i++)
		load_expect(ctx, i, 0, "group refused");
	ferry__mapped_drain(ctx->ld.mapped);
	T_EQ(tm_stats(ctx).entries, 4u);
	for (unsigned i = 0; i < 4; i++)
		load_expect(ctx, i, 1, "offered again");
	T_OK(ferry_ctx_destroy(ctx));
}

/* A load that misses while its file is being registered (the registrar
 * inside map_register) does not offer it again: one registration, one entry. */
static void check_no_second_offer_while_registering(void)
{
	struct ferry__device *fdev;
	ferry_ctx *ctx = tm_fault_ctx(T_FAULT_NONE, 0, 0, &fdev);
	t_fault_hold(fdev, T_FAULT_MAP_REGISTER);
	tm_load(ctx, 0, "first load");
	t_fault_wait_held(fdev);
	load_expect(ctx, 0, 0, "a load while its file is being registered");
	t_fault_hold(fdev, T_FAULT_NONE);
	ferry__mapped_drain(ctx->ld.mapped);
	struct ferry__mapped_stats st = tm_stats(ctx);
	T_EQ(st.registrations, 1u);
	T_EQ(st.entries, 1u);
	T_EQ(t_fault_calls(fdev, T_FAULT_MAP_REGISTER), 1ul);
	load_expect(ctx, 0, 1, "registered once");
	T_OK(ferry_ctx_destroy(ctx));
}

int main(void)
{
	unsetenv("FERRY_IO");
	setenv("FERRY_ODIRECT", "0", 1);
	tm_setup();
	check_groups_form();
	check_group_evicted_whole();
	check_group_trimmed_to_budget();
	check_held_file_keeps_group();
	check_member_replaced();
	check_group_refused();
	check_no_second_offer_while_registering();
	tm_teardown();
	printf("ok: offers queued together registered as one range, every file copied from its "
	       "place in it; a group pinned until its last file goes (eviction, pressure, a held "
	       "file, a replaced file); a budget trims a group; a refused group pins nothing; a "
	       "file being registered is not offered again\n");
	return 0;
}
