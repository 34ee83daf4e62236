/*
 * The zero-copy path when the platform refuses it (load/mapped.c): a device
 * whose map_ready fails, and registrations that fail (the fault device's
 * T_FAULT_MAP_READY and T_FAULT_MAP_REGISTER), as a kernel that will not pin
 * file pages or a driver without read-only registration would. Every load
 * still delivers every byte through the read path; `ferry env` says what
 * refused; three refusals in a row end the tries (the registrar stops mapping
 * files for nothing), and a refusal followed by a success does not.
 */
#include "test_mapped_util.h"

/* ferry env's mapped: line holds each of the words. */
static void expect_env(ferry_ctx *ctx, const char *a, const char *b)
{
	char text[8192];
	T_OK(ferry_ctx_describe(ctx, text, sizeof(text)));
	char *line = strstr(text, "mapped:  ");
	char *end = line ? strchr(line, '\n') : NULL;
	if (end)
		*end = 0;
	if (!line || !strstr(line, a) || (b && !strstr(line, b)))
		T_FAIL("ferry env's mapped: line is \"%s\", want \"%s\" and \"%s\"",
		       line ? line : "(none)", a, b ? b : "");
}

/* Every file loaded once, the registrar drained after each load. */
static void load_all(ferry_ctx *ctx, const char *label)
{
	for (unsigned i = 0; i < TM_NFILES; i++)
		tm_load_and_drain_label(ctx, i, label);
}

static void check_not_ready(void)
{
	struct ferry__device *fdev;
	ferry_ctx *ctx = tm_fault_ctx(T_FAULT_MAP_READY, 1, 1, &fdev);
	T_ASSERT(ctx->ld.mapped == NULL);
	expect_env(ctx, "off: ", "injected fault (T_FAULT_MAP_READY)");
	for (unsigned i = 0; i < TM_NFILES; i++)
		tm_load(ctx, i, "device cannot map");
	T_EQ(t_fault_calls(fdev, T_FAULT_MAP_REGISTER), 0ul);
	T_OK(ferry_ctx_destroy(ctx));
}

static void check_refused_for_good(void)
{
	struct ferry__device *fdev;
	ferry_ctx *ctx = tm_fault_ctx(T_FAULT_MAP_REGISTER, 1, 1, &fdev);
	load_all(ctx, "registration refused"); /* files 0-2 refused, 3-5 not offered */
	load_all(ctx, "refused for good");
	struct ferry__mapped_stats st = tm_stats(ctx);
	T_EQ(st.entries, 0u);
	T_EQ(st.hits, 0);
	T_EQ(st.refused, 3);
	T_ASSERT(st.given_up);
	T_EQ(t_fault_calls(fdev, T_FAULT_MAP_REGISTER), 3ul); /* no tries after the third */
	T_ASSERT(strstr(st.last_refusal, tm_dir) && strstr(st.last_refusal, "registering"));
	expect_env(ctx, "off after 3 refused registrations", "injected fault (T_FAULT_MAP_REGISTER)");
	T_OK(ferry_ctx_destroy(ctx));
}

static void check_refused_once(void)
{
	struct ferry__device *fdev;
	ferry_ctx *ctx = tm_fault_ctx(T_FAULT_MAP_REGISTER, 1, 0, &fdev);
	load_all(ctx, "one registration refused"); /* file 0 refused, 1-5 registered */
	tm_load_and_drain_label(ctx, 0, "offered again");
	struct ferry__mapped_stats st = tm_stats(ctx);
	T_EQ(st.refused, 1);
	T_ASSERT(!st.given_up);
	T_EQ(st.entries, (unsigned)TM_NFILES);
	expect_env(ctx, "refused last: ", "injected fault (T_FAULT_MAP_REGISTER)");
	uint64_t hits = st.hits;
	for (unsigned i = 0; i < TM_NFILES; i++)
		tm_load(ctx, i, "mapped after a refusal");
	T_EQ(tm_stats(ctx).hits, hits + TM_NFILES);
	T_OK(ferry_ctx_destroy(ctx));
}

int main(void)
{
	unsetenv("FERRY_IO");
	setenv("FERRY_ODIRECT", "0", 1);
	tm_setup();
	check_not_ready();
	check_refused_for_good();
	check_refused_once();
	tm_teardown();
	printf("ok: a refused zero-copy path loads every byte by reading, says why, and stops "
	       "trying after 3 refusals in a row\n");
	return T_EXIT_PASS;
}
