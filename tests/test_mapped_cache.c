/*
 * The zero-copy path's registration cache (load/mapped.c): a warm file of
 * 4 MiB or more read once through staging is registered by the registrar
 * (waited for with ferry__mapped_drain, never a sleep); the next load copies
 * it straight from the mapping, whole and in sub-ranges, every byte checked
 * against a CPU read. Under a small FERRY_PIN_BUDGET the least recently used
 * idle mapping is evicted; a budget of 0 never maps; a paced registrar
 * (FERRY_PIN_PACE) waits between registrations but drops no offer, and
 * cuts the wait short once no copy was launched for FERRY__QUIET_NS (at pace
 * 0 it registers first offers only then); a file
 * offered again before its registration goes first, without the wait; 10,000
 * loads of a rotating set keep the mappings (entries, and lines of
 * /proc/self/maps) within the budget.
 */
#include "test_mapped_util.h"

/* Reads [offset, offset + len) of file i with ferry_read_range and checks it. */
static void range_and_check(ferry_ctx *ctx, unsigned i, uint64_t offset, uint64_t len)
{
	void *dev = NULL;
	T_OK(ferry_device_alloc(ctx, len, &dev));
	T_OK(ferry_read_range(ctx, tm_paths[i], offset, len, dev));
	void *want = tm_cpu_read(tm_paths[i], offset, len);
	tr_check_bytes(ctx, dev, want, len, "read_range");
	free(want);
	ferry_device_free(ctx, dev);
}

/* The trace has a mapped row for path. */
static void expect_trace_row(const char *trace, const char *path)
{
	char line[4096];
	int found = 0;
	FILE *f = fopen(trace, "r");
	T_ASSERT(f);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, ",mapped,") && strstr(line, path);
	fclose(f);
	if (!found)
		T_FAIL("%s: no mapped row for %s", trace, path);
}

static void check_second_load_maps(void)
{
	char *trace = strdup(tr_path(tm_dir, "trace.csv"));
	setenv("FERRY_TRACE", trace, 1);
	ferry_ctx *ctx = tm_ctx("64M");
	unsetenv("FERRY_TRACE");
	T_ASSERT(ctx->ld.mapped);
	tm_load(ctx, 0, "first load (staging)");
	tm_expect_hit(ctx, 0, 0, "first load");
	ferry__mapped_drain(ctx->ld.mapped);
	T_EQ(tm_stats(ctx).entries, 1u);
	T_EQ(tm_stats(ctx).pinned, tm_slot);
	tm_load(ctx, 0, "second load (mapped)");
	tm_expect_hit(ctx, 0, 1, "second load");
	static const uint64_t cuts[][2] = { { 0, 1 }, { 12345, (1u << 20) + 7 }, { 4096, 8192 },
					    { 1, 4 << 20 } };
	for (unsigned k = 0; k < 4; k++) {
		uint64_t before = tm_stats(ctx).hits;
		range_and_check(ctx, 0, cuts[k][0], cuts[k][1]);
		tm_expect_hit(ctx, before, 1, "read_range of a mapped file");
	}
	range_and_check(ctx, 0, tm_file_size - 3, 3);
	T_OK(ferry_ctx_destroy(ctx));
	expect_trace_row(trace, tm_paths[0]);
	free(trace);
}

static void check_lru_eviction(void)
{
	char budget[32];
	snprintf(budget, sizeof(budget), "%llu", (unsigned long long)(tm_file_size * 5 / 2));
	ferry_ctx *ctx = tm_ctx(budget);
	tm_load_and_drain(ctx, 0);
	tm_load_and_drain(ctx, 1);
	T_EQ(tm_stats(ctx).entries, 2u);
	uint64_t h = tm_stats(ctx).hits;
	tm_load_and_drain(ctx, 0); /* 0 becomes the most recently used */
	tm_expect_hit(ctx, h, 1, "file 0, cached");
	tm_load_and_drain(ctx, 2); /* read, then registered in place of 1 */
	T_EQ(tm_stats(ctx).entries, 2u);
	T_ASSERT(tm_stats(ctx).pinned <= tm_file_size * 5 / 2);
	h = tm_stats(ctx).hits;
	tm_load(ctx, 1, "file 1, evicted");
	tm_expect_hit(ctx, h, 0, "file 1 after its eviction");
	h = tm_stats(ctx).hits;
	tm_load(ctx, 2, "file 2, cached");
	tm_expect_hit(ctx, h, 1, "file 2");
	T_OK(ferry_ctx_destroy(ctx));
}

/* The pause after a registration spends pace percent of the time on them. */
static void check_pause_formula(void)
{
	T_EQ(ferry__mapped_pause_ns(1000, 100), 0u);
	T_EQ(ferry__mapped_pause_ns(1000, 50), 1000u);
	T_EQ(ferry__mapped_pause_ns(1000, 10), 9000u);
	T_EQ(ferry__mapped_pause_ns(1000, 1), 99000u);
	T_EQ(ferry__mapped_pause_ns(0, 1), 0u);
	T_EQ(ferry__mapped_pause_ns(1000, 0), UINT64_MAX); /* until the lanes are quiet */
}

/* The registrar registers without its pause once the lanes' launch count
 * stood still over looks FERRY__QUIET_NS apart; a moved count starts again. */
static void check_quiet_rule(void)
{
	struct ferry__quiet q = { 0 };
	const uint64_t t = 1000000000u, quiet = FERRY__QUIET_NS;
	T_EQ(ferry__quiet_look(&q, 7, t), 0);                 /* the first look */
	T_EQ(ferry__quiet_look(&q, 7, t + quiet - 1), 0);     /* not long enough */
	T_EQ(ferry__quiet_look(&q, 7, t + quiet), 1);
	T_EQ(ferry__quiet_look(&q, 7, t + 5 * quiet), 1);
	T_EQ(ferry__quiet_look(&q, 8, t + 6 * quiet), 0);     /* a copy was launched */
	T_EQ(ferry__quiet_look(&q, 8, t + 7 * quiet - 1), 0);
	T_EQ(ferry__quiet_look(&q, 8, t + 7 * quiet), 1);
	T_EQ(ferry__quiet_look(&q, 9, t + 100 * quiet), 0);   /* a long gap, but it moved */
	struct ferry__quiet fresh = { 0 };
	T_EQ(ferry__quiet_look(&fresh, 0, 0), 0);             /* count 0 at time 0: a first look */
	T_EQ(ferry__quiet_look(&fresh, 0, quiet), 1);
}

/* At 1% the registrar waits 99 times each registration's time between them;
 * at 0 the pause never ends: files offered once are registered only after
 * the lanes launched nothing for FERRY__QUIET_NS (every registration
 * unpaced). Either way the files are registered, each load of them a hit
 * after. */
static void check_paced(const char *pace)
{
	setenv("FERRY_PIN_PACE", pace, 1);
	ferry_ctx *ctx = tm_ctx("64M");
	unsetenv("FERRY_PIN_PACE");
	for (unsigned i = 0; i < 3; i++)
		tm_load(ctx, i, "paced, first load");
	ferry__mapped_drain(ctx->ld.mapped);
	struct ferry__mapped_stats st = tm_stats(ctx);
	T_EQ(st.entries, 3u);
	if (strcmp(pace, "0"))
		T_ASSERT(st.unpaced < 3u); /* the first registration has no pause to cut */
	else
		T_ASSERT(st.registrations > 0 && st.unpaced == st.registrations);
	for (unsigned i = 0; i < 3; i++) {
		uint64_t h = tm_stats(ctx).hits;
		tm_load(ctx, i, "paced, second load");
		tm_expect_hit(ctx, h, 1, "paced, second load");
	}
	T_OK(ferry_ctx_destroy(ctx));
}

/* The paths of the trace's pinned rows (each a registration's first file),
 * in order, into got (n at most); returns how many. */
static unsigned pinned_rows(const char *trace, const char **got, unsigned n)
{
	char line[4096];
	unsigned k = 0;
	FILE *f = fopen(trace, "r");
	T_ASSERT(f);
	while (fgets(line, sizeof(line), f))
		for (unsigned i = 0; strstr(line, ",pinned,") && i < TM_NFILES; i++)
			if (strstr(line, tm_paths[i]) && k < n) {
				got[k++] = tm_paths[i];
				break;
			}
	fclose(f);
	return k;
}

/* A file offered again before its registration jumps the queue and goes
 * without the pause (offers 0, 1, 2 wait; 2 and then 1 are loaded again:
 * 2 and 1 register together first, then 0 on its own, paced); a file
 * registered, evicted and offered again waits its turn like a first offer.
 * Alike at pace 1 and at 0 (first offers in quiet spells only). */
static void check_offered_again(const char *pace)
{
	char *trace = strdup(tr_path(tm_dir, "again.csv"));
	setenv("FERRY_TRACE", trace, 1);
	setenv("FERRY_PIN_PACE", pace, 1);
	ferry_ctx *ctx = tm_ctx("64M");
	unsetenv("FERRY_TRACE");
	ferry__mapped_hold(ctx->ld.mapped, 1);
	for (unsigned i = 0; i < 3; i++)
		tm_load(ctx, i, "offered once");
	tm_load(ctx, 2, "offered again");
	tm_load(ctx, 1, "offered again");
	ferry__mapped_hold(ctx->ld.mapped, 0);
	ferry__mapped_drain(ctx->ld.mapped);
	struct ferry__mapped_stats st = tm_stats(ctx);
	T_EQ(st.entries, 3u);
	T_EQ(st.registrations, 2u);
	T_EQ(st.hurried, 1u);
	T_OK(ferry_ctx_destroy(ctx));
	const char *order[4];
	T_EQ(pinned_rows(trace, order, 4), 2u);
	T_ASSERT(order[0] == tm_paths[2] && order[1] == tm_paths[0]);
	free(trace);

	char budget[32];
	snprintf(budget, sizeof(budget), "%llu", (unsigned long long)tm_slot);
	ctx = tm_ctx(budget);
	unsetenv("FERRY_PIN_PACE");
	tm_load_and_drain(ctx, 0);
	tm_load_and_drain(ctx, 1); /* registered in place of 0 */
	tm_load_and_drain(ctx, 0); /* offered again, but registered before: a first offer */
	st = tm_stats(ctx);
	T_EQ(st.registrations, 3u);
	T_EQ(st.hurried, 0u);
	T_OK(ferry_ctx_destroy(ctx));
}

static void check_budget_zero(void)
{
	ferry_ctx *ctx = tm_ctx("0");
	T_ASSERT(ctx->ld.mapped == NULL);
	char text[8192];
	ferry_ctx_describe(ctx, text, sizeof(text));
	T_ASSERT(strstr(text, "mapped:  off: FERRY_PIN_BUDGET is 0"));
	for (int k = 0; k < 3; k++)
		tm_load(ctx, 0, "budget 0");
	T_OK(ferry_ctx_destroy(ctx));
}

static void check_bounded(ferry_ctx *ctx, unsigned base_lines, unsigned most, unsigned k)
{
	unsigned lines, ours;
	tm_count_maps(&lines, &ours);
	struct ferry__mapped_stats st = tm_stats(ctx);
	if (st.entries > most || ours > most || lines > base_lines + most + 32)
		T_FAIL("after %u loads: %u entries, %u mappings of test files, %u lines of maps "
		       "(%u at the start), want at most %u mappings", k, st.entries, ours, lines,
		       base_lines, most);
}

static void check_rotation_bounded(void)
{
	char budget[32];
	snprintf(budget, sizeof(budget), "%llu", (unsigned long long)(tm_file_size * 3));
	ferry_ctx *ctx = tm_ctx(budget);
	unsigned base_lines, ours;
	tm_count_maps(&base_lines, &ours);
	uint64_t seed = 23;
	void *dev = NULL;
	T_OK(ferry_device_alloc(ctx, 4096, &dev));
	for (unsigned k = 0; k < 10000; k++) {
		unsigned i = (unsigned)(t_rand(&seed) % TM_NFILES);
		uint64_t offset = t_rand(&seed) % (tm_file_size - 4096);
		T_OK(ferry_read_range(ctx, tm_paths[i], offset, 4096, dev));
		if (k % 499 == 0) {
			void *want = tm_cpu_read(tm_paths[i], offset, 4096);
			tr_check_bytes(ctx, dev, want, 4096, "rotation");
			free(want);
			ferry__mapped_drain(ctx->ld.mapped);
			check_bounded(ctx, base_lines, 3, k);
		}
	}
	ferry__mapped_drain(ctx->ld.mapped);
	check_bounded(ctx, base_lines, 3, 10000);
	T_ASSERT(tm_stats(ctx).hits > 0 && tm_stats(ctx).registered > 3);
	ferry_device_free(ctx, dev);
	T_OK(ferry_ctx_destroy(ctx));
}

int main(void)
{
	unsetenv("FERRY_IO");
	setenv("FERRY_ODIRECT", "0", 1);
	tm_setup();
	check_second_load_maps();
	check_lru_eviction();
	check_budget_zero();
	check_pause_formula();
	check_quiet_rule();
	check_paced("1");
	check_paced("0");
	check_offered_again("1");
	check_offered_again("0");
	check_rotation_bounded();
	tm_teardown();
	printf("ok: warm files mapped after one load, LRU under a small budget, none with 0, "
	       "paced, quiet only, offered again first, bounded over 10000 loads\n");
	return T_EXIT_PASS;
}
