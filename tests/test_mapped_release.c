/*
 * The zero-copy path gives pinned pages back (load/mapped.c): under memory
 * pressure (less than the reserve available, MemAvailable less what is
 * pinned: ferry__mapped_set_reserve makes it so on demand) it releases every
 * idle registration but never one a load holds, registers nothing new, and
 * registers again once the pressure is gone; a file renamed away, removed or
 * replaced under its path loses its registration at the registrar's next
 * sweep (it would otherwise stay pinned until the LRU reached it). Every load
 * is checked byte by byte, whichever path it took.
 */
#include <stdio.h>

#include "test_mapped_util.h"

/* Loads the first n files, draining the registrar after each. */
static void load_first(ferry_ctx *ctx, unsigned n, const char *label)
{
	for (unsigned i = 0; i < n; i++)
		tm_load_and_drain_label(ctx, i, label);
}

/* Mappings of the test files in /proc/self/maps. */
static unsigned our_maps(void)
{
	unsigned lines, ours;
	tm_count_maps(&lines, &ours);
	return ours;
}

/* Holds file i's registration as a load does between lookup and queueing. */
static struct ferry__mapping *hold(ferry_ctx *ctx, unsigned i, struct ferry__file **f)
{
	T_OK(ferry__io_file_open(tm_paths[i], 0, f));
	struct ferry__mapping *e = ferry__mapped_find(ctx->ld.mapped, *f);
	T_ASSERT(e);
	return e;
}

static void check_pressure(void)
{
	ferry_ctx *ctx = tm_ctx("256M");
	load_first(ctx, TM_NFILES, "before the pressure");
	T_EQ(tm_stats(ctx).entries, (unsigned)TM_NFILES);
	struct ferry__file *f;
	struct ferry__mapping *held = hold(ctx, 3, &f);
	ferry__mapped_set_reserve(ctx->ld.mapped, UINT64_MAX / 2);
	ferry__mapped_drain(ctx->ld.mapped);
	struct ferry__mapped_stats st = tm_stats(ctx);
	T_EQ(st.entries, 1u); /* the held one stays */
	T_EQ(st.released, (uint64_t)TM_NFILES - 1);
	T_EQ(st.pinned, tm_slot);
	T_EQ(our_maps(), 1u);
	ferry__mapped_release(ctx->ld.mapped, held, NULL, 0);
	ferry__io_file_close(f);
	ferry__mapped_drain(ctx->ld.mapped);
	T_EQ(tm_stats(ctx).entries, 0u);
	T_EQ(our_maps(), 0u);
	load_first(ctx, 3, "under pressure");
	st = tm_stats(ctx);
	T_EQ(st.entries, 0u);
	T_ASSERT(st.pressed >= 3);
	ferry__mapped_set_reserve(ctx->ld.mapped, 0);
	load_first(ctx, 3, "after the pressure");
	T_EQ(tm_stats(ctx).entries, 3u);
	uint64_t hits = tm_stats(ctx).hits;
	load_first(ctx, 3, "mapped again");
	T_EQ(tm_stats(ctx).hits, hits + 3);
	T_OK(ferry_ctx_destroy(ctx));
}

/* Writes file i anew under a temporary name and renames it over its path. */
static void replace(unsigned i)
{
	char *keep = tm_paths[i];
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.new", keep);
	tm_paths[i] = tmp;
	tm_write_file(i);
	tm_paths[i] = keep;
	T_ASSERT(rename(tmp, keep) == 0);
}

static void check_gone(void)
{
	ferry_ctx *ctx = tm_ctx("256M");
	load_first(ctx, TM_NFILES, "before the changes");
	T_EQ(tm_stats(ctx).entries, (unsigned)TM_NFILES);
	char moved[4096];
	snprintf(moved, sizeof(moved), "%s.moved", tm_paths[0]);
	T_ASSERT(rename(tm_paths[0], moved) == 0);
	T_ASSERT(unlink(tm_paths[1]) == 0);
	replace(2);
	ferry__mapped_drain(ctx->ld.mapped);
	struct ferry__mapped_stats st = tm_stats(ctx);
	T_EQ(st.gone, 3);
	T_EQ(st.entries, (unsigned)TM_NFILES - 3);
	T_EQ(st.pinned, (TM_NFILES - 3) * tm_slot);
	T_EQ(our_maps(), (unsigned)TM_NFILES - 3);
	tm_load_path(ctx, moved, "renamed away");
	tm_load(ctx, 2, "replaced");
	uint64_t hits = tm_stats(ctx).hits;
	for (unsigned i = 3; i < TM_NFILES; i++)
		tm_load(ctx, i, "untouched");
	T_EQ(tm_stats(ctx).hits, hits + TM_NFILES - 3);
	T_OK(ferry_ctx_destroy(ctx));
	T_ASSERT(rename(moved, tm_paths[0]) == 0);
	tm_write_file(1);
}

int main(void)
{
	unsetenv("FERRY_IO");
	setenv("FERRY_ODIRECT", "0", 1);
	tm_setup();
	check_pressure();
	check_gone();
	tm_teardown();
	printf("ok: registrations given back under memory pressure (held ones kept) and when "
	       "their file leaves its path\n");
	return T_EXIT_PASS;
}
