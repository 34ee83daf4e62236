/*
 * The registrar's rows in FERRY_TRACE (load/mapped.c): for each registration
 * "pinning" (before the files are mapped), "registering" (before the device
 * call) and "pinned" (after it), each with the registration's bytes (its
 * files' sizes rounded up to pages), its first file and its files in the
 * offset field; "pin_failed" in place of "pinned" when the device refuses;
 * "unpinned" once its last file has left the cache. A group of four files
 * is one registration; a file alone is one; a refused file leaves no
 * "unpinned" behind. The rows of one registration come in that order.
 */
#include "test_mapped_util.h"

struct pin_row {
	char event[32], file[512];
	uint64_t bytes, files;
};

static int is_pin_event(const char *ev)
{
	static const char *const events[] = { "pinning", "registering", "pinned", "pin_failed",
					      "unpinned" };
	for (unsigned i = 0; i < sizeof(events) / sizeof(*events); i++)
		if (!strcmp(ev, events[i]))
			return 1;
	return 0;
}

/* A quoted field's text (the trace's paths have no quotes to undouble). */
static const char *unquoted(char *field)
{
	size_t len = strlen(field);
	if (len < 2 || field[0] != '"' || field[len - 1] != '"')
		return field;
	field[len - 1] = 0;
	return field + 1;
}

/* The trace's registrar rows, in order; returns how many (at most cap). */
static unsigned pin_rows(const char *path, struct pin_row *rows, unsigned cap)
{
	char line[2048], *f[12];
	unsigned n = 0;
	FILE *in = fopen(path, "r");
	T_ASSERT(in && fgets(line, sizeof(line), in));
	while (fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\n")] = 0;
		/* time_ns,thread,lane,event,buffer,batch,dst,bytes,file,offset */
		T_EQ(t_csv_fields(line, f, 12), 10u);
		if (!is_pin_event(f[3]))
			continue;
		T_ASSERT(n < cap);
		rows[n] = (struct pin_row){ .bytes = strtoull(f[7], NULL, 10),
					    .files = strtoull(f[9], NULL, 10) };
		snprintf(rows[n].event, sizeof(rows[n].event), "%s", f[3]);
		snprintf(rows[n].file, sizeof(rows[n].file), "%s", unquoted(f[8]));
		n++;
	}
	fclose(in);
	return n;
}

static void expect_row(const struct pin_row *r, const char *event, uint64_t bytes,
		       const char *file, uint64_t files)
{
	T_ASSERT(!strcmp(r->event, event));
	T_EQ(r->bytes, bytes);
	T_ASSERT(!strcmp(r->file, file));
	T_EQ(r->files, files);
}

/* One registration's rows from at: pinning, registering, then outcome. */
static void expect_registration(const struct pin_row *at, const char *outcome, uint64_t bytes,
				const char *file, uint64_t files)
{
	expect_row(&at[0], "pinning", bytes, file, files);
	expect_row(&at[1], "registering", bytes, file, files);
	expect_row(&at[2], outcome, bytes, file, files);
}

static ferry_ctx *traced_ctx(const char *trace, struct ferry__device **fdev)
{
	setenv("FERRY_TRACE", trace, 1);
	ferry_ctx *ctx = tm_fault_ctx(T_FAULT_MAP_REGISTER, 3, 0, fdev); /* the third refused */
	unsetenv("FERRY_TRACE");
	return ctx;
}

int main(void)
{
	struct ferry__device *fdev;
	struct pin_row rows[16];
	unsetenv("FERRY_IO");
	setenv("FERRY_ODIRECT", "0", 1);
	tm_setup();
	char *trace = strdup(tr_path(tm_dir, "trace.csv"));
	ferry_ctx *ctx = traced_ctx(trace, &fdev);
	ferry__mapped_hold(ctx->ld.mapped, 1);
	for (unsigned i = 0; i < 4; i++)
		tm_load(ctx, i, "offered, the registrar held");
	ferry__mapped_hold(ctx->ld.mapped, 0);
	ferry__mapped_drain(ctx->ld.mapped);
	tm_load_and_drain_label(ctx, 4, "a file alone");
	tm_load_and_drain_label(ctx, 5, "refused");
	T_EQ(tm_stats(ctx).entries, 5u);
	T_OK(ferry_ctx_destroy(ctx));
	T_EQ(pin_rows(trace, rows, 16), 11u);
	expect_registration(&rows[0], "pinned", 4 * tm_slot, tm_paths[0], 4);
	expect_registration(&rows[3], "pinned", tm_slot, tm_paths[4], 1);
	expect_registration(&rows[6], "pin_failed", tm_slot, tm_paths[5], 1);
	unsigned group = 0, alone = 0;
	for (unsigned i = 9; i < 11; i++) { /* at the context's end, in either order */
		T_ASSERT(!strcmp(rows[i].event, "unpinned") && !rows[i].file[0] && !rows[i].files);
		group += rows[i].bytes == 4 * tm_slot;
		alone += rows[i].bytes == tm_slot;
	}
	T_EQ(group, 1u);
	T_EQ(alone, 1u);
	unlink(trace);
	free(trace);
	tm_teardown();
	printf("ok: each registration traced as pinning, registering and pinned (or pin_failed) "
	       "with its bytes, first file and file count, and unpinned when it goes\n");
	return 0;
}
