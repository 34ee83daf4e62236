/* `ferry bench`: the JSON document, the human table and the progress line. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cli.h"

/* ---- JSON ---- */

/* A JSON string (null for NULL), valid whatever the bytes (cli.c). */
static void json_string(const char *s)
{
	if (!s)
		fputs("null", stdout);
	else
		ferry_cli_json_string(stdout, s);
}

/* A number, or null when it was not measured (0 or less). */
static void json_number(double v)
{
	if (v > 0)
		printf("%.6g", v);
	else
		fputs("null", stdout);
}

static void json_key(const char *key, int first)
{
	printf("%s\n    ", first ? "" : ",");
	json_string(key);
	fputs(": ", stdout);
}

static void json_ceilings(const struct ferry_bench_ceilings *c)
{
	fputs("{\"pinned_h2d_gbps\": ", stdout);
	json_number(c->pinned_h2d_gbps);
	fputs(", \"storage_direct_gbps\": ", stdout);
	json_number(c->storage_direct_gbps);
	fputs(", \"page_cache_gbps\": ", stdout);
	json_number(c->page_cache_gbps);
	fputs(", \"read_only_gbps\": ", stdout);
	json_number(c->read_only_gbps);
	fputs(", \"read_only_files_per_s\": ", stdout);
	json_number(c->read_only_files_per_s);
	fputs("}", stdout);
}

static void json_ceiling_notes(const struct ferry_bench_ceilings *c)
{
	fputs("{\"pinned_h2d\": ", stdout);
	json_string(c->pinned_h2d_note);
	fputs(", \"storage_direct\": ", stdout);
	json_string(c->storage_direct_note);
	fputs(", \"page_cache\": ", stdout);
	json_string(c->page_cache_note);
	fputs(", \"read_only\": ", stdout);
	json_string(c->read_only_note);
	fputs("}", stdout);
}

static void json_run(const struct ferry_bench_run *r, const struct ferry_bench_options *opt,
		     const struct ferry_bench_dataset *ds)
{
	fputs("    {\"tool\": ", stdout);
	json_string(r->tool);
	fputs(", \"backend\": ", stdout);
	json_string(r->backend);
	fputs(", \"workload\": ", stdout);
	json_string(ds->workload);
	fputs(", \"series\": ", stdout);
	json_string(opt->series);
	fputs(", \"cache\": ", stdout);
	json_string(r->cache);
	fputs(", \"cold_method\": ", stdout);
	json_string(r->cold_method);
	printf(", \"threads\": %u, \"callers\": %u, \"chunk\": ", r->threads, r->callers);
	if (r->chunk)
		printf("%zu", r->chunk);
	else
		fputs("null", stdout);
	fputs(", \"batch_size\": ", stdout);
	if (r->batch_size)
		printf("%u", r->batch_size);
	else
		fputs("null", stdout);
	fputs(",\n     \"gbps\": ", stdout);
	json_number(r->available ? r->gbps : 0);
	fputs(", \"files_per_s\": ", stdout);
	json_number(r->available ? r->files_per_s : 0);
	fputs(", \"cpu_s_per_gb\": ", stdout);
	json_number(r->available ? r->cpu_s_per_gb : 0);
	fputs(", \"ceiling\": ", stdout);
	json_string(r->ceiling);
	fputs(", \"ceiling_gbps\": ", stdout);
	json_number(r->ceiling_gbps);
	fputs(", \"ratio_to_ceiling\": ", stdout);
	json_number(r->available ? r->ratio_to_ceiling : 0);
	printf(", \"verified\": %s, \"first_batch_s\": ", r->verified ? "true" : "false");
	json_number(r->first_batch_s);
	printf(", \"seconds\": %.6g, \"bytes\": %" PRIu64 ", \"files\": %" PRIu64, r->seconds,
	       r->bytes, r->files);
	printf(", \"available\": %s, \"best\": %s, \"note\": ", r->available ? "true" : "false",
	       r->best ? "true" : "false");
	json_string(*r->note ? r->note : NULL);
	fputs("}", stdout);
}

static void json_dataset(const struct ferry_bench_dataset *ds)
{
	fputs("{\"name\": ", stdout);
	json_string(ds->workload);
	fputs(", \"dir\": ", stdout);
	json_string(ds->dir);
	printf(", \"files\": %u, \"bytes\": %" PRIu64 "}", ds->count, ds->total_bytes);
}

void ferry_bench_print_json(const struct ferry_bench_report *r,
			    const struct ferry_bench_options *opt,
			    const struct ferry_bench_dataset *ds)
{
	fputs("{", stdout);
	json_key("machine", 1);
	json_string(r->machine);
	json_key("date", 0);
	json_string(r->date);
	json_key("device", 0);
	json_string(r->device);
	json_key("device_kind", 0);
	json_string(r->device_kind);
	json_key("ferry_version", 0);
	json_string(ferry_version());
	json_key("dataset", 0);
	json_dataset(ds);
	json_key("ceilings", 0);
	json_ceilings(&r->ceilings);
	json_key("ceiling_notes", 0);
	json_ceiling_notes(&r->ceilings);
	json_key("notes", 0);
	fputs("[", stdout);
	for (unsigned i = 0; i < r->nnotes; i++) {
		fputs(i ? ", " : "", stdout);
		json_string(r->notes[i]);
	}
	fputs("]", stdout);
	json_key("runs", 0);
	fputs("[\n", stdout);
	for (unsigned i = 0; i < r->nruns; i++) {
		json_run(&r->runs[i], opt, ds);
		fputs(i + 1 < r->nruns ? ",\n" : "\n", stdout);
	}
	fputs("  ]\n}\n", stdout);
}

/* ---- the table ---- */

static void print_ceiling(const char *name, double gbps, const char *note)
{
	if (gbps > 0)
		printf("  %-15s %8.2f GB/s  (%s)\n", name, gbps, note);
	else
		printf("  %-15s %8s       (%s)\n", name, "-", *note ? note : "not measured");
}

static void print_read_only(const struct ferry_bench_ceilings *c)
{
	print_ceiling("read_only", c->read_only_gbps, c->read_only_note);
	if (c->read_only_files_per_s > 0)
		printf("  %-15s %8.0f files/s\n", "", c->read_only_files_per_s);
}

static void print_row(const struct ferry_bench_run *r)
{
	char chunk[24] = "-", batch[16] = "-";

	if (r->chunk)
		snprintf(chunk, sizeof(chunk), "%zuK", r->chunk >> 10);
	if (r->batch_size)
		snprintf(batch, sizeof(batch), "%u", r->batch_size);
	printf("%c %-15s %-18s %-4s %3u %3u %6s %5s ", r->best ? '*' : ' ', r->tool, r->backend,
	       r->cache, r->threads, r->callers, chunk, batch);
	if (r->available && r->ratio_to_ceiling > 0)
		printf("%8.2f %9.0f %7.3f %6.2f", r->gbps, r->files_per_s, r->cpu_s_per_gb,
		       r->ratio_to_ceiling);
	else if (r->available)
		printf("%8.2f %9.0f %7.3f %6s", r->gbps, r->files_per_s, r->cpu_s_per_gb, "-");
	else
		printf("%8s %9s %7s %6s", "-", "-", "-", "-");
	printf("  %s\n", r->note);
}

void ferry_bench_print_table(const struct ferry_bench_report *r,
			     const struct ferry_bench_options *opt,
			     const struct ferry_bench_dataset *ds)
{
	printf("ferry bench on %s, %s\n", r->machine, r->date);
	printf("device:   %s\n", r->device);
	printf("workload: %s: %u files, %.3f GB in %s\n", ds->workload, ds->count,
	       (double)ds->total_bytes / 1e9, ds->dir);
	for (unsigned i = 0; i < r->nnotes; i++)
		printf("note:     %s\n", r->notes[i]);
	printf("ceilings:\n");
	print_ceiling("pinned_h2d", r->ceilings.pinned_h2d_gbps, r->ceilings.pinned_h2d_note);
	print_ceiling("storage_direct", r->ceilings.storage_direct_gbps,
		      r->ceilings.storage_direct_note);
	print_ceiling("page_cache", r->ceilings.page_cache_gbps, r->ceilings.page_cache_note);
	print_read_only(&r->ceilings);
	if (!r->nruns)
		return;
	printf("\n  %-15s %-18s %-4s %3s %3s %6s %5s %8s %9s %7s %6s  %s\n", "tool", "backend",
	       "cache", "thr", "cal", "chunk", "batch", "GB/s", "files/s", "CPUs/GB", "ratio", "note");
	for (unsigned i = 0; i < r->nruns; i++)
		print_row(&r->runs[i]);
	printf("\n* fastest of its tool, backend, cache (and batch); thr: IO threads, cal: threads "
	       "calling the per-file function;\nratio: reader runs to read_only (cold: the cold "
	       "read_only run), others to pinned_h2d (warm) or storage_direct (cold)\n");
}

/* ---- progress ---- */

static int progress_off;      /* --json */
static int progress_shown;
static char progress_label[256];

void ferry_bench_progress_disable(void)
{
	progress_off = 1;
}

int ferry_bench_progress_wanted(void)
{
	return !progress_off && isatty(STDERR_FILENO);
}

void ferry_bench_progress(const char *fmt, ...)
{
	va_list ap;

	if (!ferry_bench_progress_wanted())
		return;
	if (!fmt) {
		if (progress_shown)
			fputs("\r\033[K", stderr);
		progress_shown = 0;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(progress_label, sizeof(progress_label), fmt, ap);
	va_end(ap);
	fprintf(stderr, "\r\033[Kbench: %s", progress_label);
	fflush(stderr);
	progress_shown = 1;
}

void ferry_bench_progress_run(uint64_t files, uint64_t bytes, double elapsed, double eta)
{
	char size[32], rate[32], left[32];

	if (!ferry_bench_progress_wanted())
		return;
	fprintf(stderr, "\r\033[Kbench: %s: %" PRIu64 " files, %s, %s, ETA %s", progress_label,
		files, ferry_cli_bytes(bytes, size, sizeof(size)),
		ferry_cli_rate(bytes, elapsed, rate, sizeof(rate)),
		ferry_cli_seconds(eta, left, sizeof(left)));
	fflush(stderr);
	progress_shown = 1;
}
