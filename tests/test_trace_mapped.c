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

/* The trace's registrar rows, in order; returns how many (at most cap). */
static unsigned pin_rows(const char *path, struct pin_row *rows, unsigned cap)
{
	char line[2048];
	unsigned n = 0;
	FILE *f = fopen(path, "r");
	T_ASSERT(f && fgets(line, sizeof(line), f));
	while (fgets(line, sizeof(line), f)) {
		char ev[32], file[512] = "";
		unsigned long long bytes, files;
		/* time,thread,lane,event,buffer,batch,dst,bytes,"file",offset */
		if (sscanf(line, "%*[^,],%*[^,],%*[^,],%31[^,],%*[^,],%*[^,],%*[^,],%llu,", ev,
			   &bytes) != 2 || !is_pin_event(ev))
			continue;
		char *q = strchr(line, '"'), *end = q ? strchr(q + 1, '"') : NULL;
		if (q && end && end - q - 1 < (long)sizeof(file))
			memcpy(file, q + 1, (size_t)(end - q - 1));
		T_ASSERT(sscanf(strrchr(line, ',') + 1, "%llu", &files) == 1);
		T_ASSERT(n < cap);
		rows[n] = (struct pin_row){ .bytes = bytes, .files = files };
		snprintf(rows[n].event, sizeof(rows[n].event), "%s", ev);
		snprintf(rows[n].file, sizeof(rows[n].file), "%s", file);
		n++;
	}
	fclose(f);
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
