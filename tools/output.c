/* How the tool's commands talk: failure lines (kept for --json), one-line
 * usage errors, sizes, rates and durations in units that fit, and the
 * progress line on a terminal. */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "cli.h"

static char last_message[4096];

int ferry_cli_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_message, sizeof(last_message), fmt, ap);
	va_end(ap);
	fprintf(stderr, "ferry: %s\n", last_message);
	return 1;
}

const char *ferry_cli_last_message(void)
{
	return last_message;
}

/* Copies the option argv[optind - 1] names into name: "-x" for a short one,
 * "--long" (without "=value") for a long one. */
static void bad_option_name(char **argv, char *name, size_t len)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";

	if (strncmp(arg, "--", 2) && optopt > 0 && optopt < 256)
		snprintf(name, len, "-%c", optopt);
	else
		snprintf(name, len, "%.*s", (int)strcspn(arg, "="), arg);
}

int ferry_cli_bad_option(const char *command, int c, char **argv)
{
	char name[128];

	bad_option_name(argv, name, sizeof(name));
	if (c == ':')
		fprintf(stderr, "ferry %s: option '%s' needs a value", command, name);
	else if (optopt && !strncmp(name, "--", 2))
		fprintf(stderr, "ferry %s: option '%s' takes no value", command, name);
	else
		fprintf(stderr, "ferry %s: unknown option '%s'", command, name);
	fprintf(stderr, " (try 'ferry %s --help')\n", command);
	return 2;
}

int ferry_cli_bad_argument(const char *command, const char *arg)
{
	fprintf(stderr, "ferry %s: unexpected argument '%s' (try 'ferry %s --help')\n", command, arg,
		command);
	return 2;
}

/* ---- units ---- */

/* Writes v with three significant digits (at least its integer part). */
static void three_digits(char *buf, size_t len, double v, const char *unit)
{
	if (v == 0)
		snprintf(buf, len, "0 %s", unit);
	else
		snprintf(buf, len, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, unit);
}

const char *ferry_cli_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	int u = -1;

	if (n < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", n);
		return buf;
	}
	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	three_digits(buf, len, v, units[u]);
	return buf;
}

const char *ferry_cli_rate(uint64_t bytes, double seconds, char *buf, size_t len)
{
	static const char *const units[] = { "B/s", "kB/s", "MB/s", "GB/s", "TB/s" };
	double v = seconds > 0 ? (double)bytes / seconds : 0;
	int u = 0;

	if (seconds <= 0) {
		snprintf(buf, len, "n/a B/s");
		return buf;
	}
	while (v >= 1000 && u < 4) {
		v /= 1000;
		u++;
	}
	three_digits(buf, len, v, units[u]);
	return buf;
}

const char *ferry_cli_seconds(double s, char *buf, size_t len)
{
	if (s >= 1)
		three_digits(buf, len, s, "s");
	else if (s >= 1e-3)
		three_digits(buf, len, s * 1e3, "ms");
	else
		three_digits(buf, len, s * 1e6, "us");
	return buf;
}

/* ---- the progress line ---- */

/* At most this often (ns) after the first line. */
#define PROGRESS_EVERY 250000000ull

void ferry_cli_progress_start(struct ferry_cli_progress *p, const char *what, const char *unit,
			      uint64_t files, uint64_t bytes, int wanted)
{
	memset(p, 0, sizeof(*p));
	p->what = what;
	p->unit = unit;
	p->total_files = files;
	p->total_bytes = bytes;
	p->on = wanted && isatty(STDERR_FILENO);
	p->start_ns = ferry__now_ns();
}

/* Appends ", ETA ..." from whichever total is known. */
static void print_eta(const struct ferry_cli_progress *p, double secs)
{
	double left = -1;
	char text[32];

	if (p->total_bytes && p->bytes && p->bytes < p->total_bytes)
		left = secs * (double)(p->total_bytes - p->bytes) / (double)p->bytes;
	else if (p->total_files && p->files && p->files < p->total_files)
		left = secs * (double)(p->total_files - p->files) / (double)p->files;
	if (left >= 0)
		fprintf(stderr, ", ETA %s", ferry_cli_seconds(left, text, sizeof(text)));
}

void ferry_cli_progress(struct ferry_cli_progress *p, uint64_t files, uint64_t bytes)
{
	uint64_t now = ferry__now_ns();
	double secs = (double)(now - p->start_ns) / 1e9;
	char done[32], total[32], rate[48];

	p->files = files;
	p->bytes = bytes;
	if (!p->on || (p->shown && now - p->last_ns < PROGRESS_EVERY))
		return;
	p->last_ns = now;
	p->shown = 1;
	fprintf(stderr, "\r\033[K%s: %" PRIu64, p->what, files);
	if (p->total_files)
		fprintf(stderr, "/%" PRIu64, p->total_files);
	fprintf(stderr, " %s, %s", p->unit, ferry_cli_bytes(bytes, done, sizeof(done)));
	if (p->total_bytes)
		fprintf(stderr, " of %s", ferry_cli_bytes(p->total_bytes, total, sizeof(total)));
	fprintf(stderr, ", %s", ferry_cli_rate(bytes, secs, rate, sizeof(rate)));
	print_eta(p, secs);
	fflush(stderr);
}

void ferry_cli_progress_end(struct ferry_cli_progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr);
	p->shown = 0;
}

int ferry_cli_member_arg(const char *arg, char **path, const char **key)
{
	const char *split = NULL;
	for (const char *at = strstr(arg, ".npz:"); at; at = strstr(at + 1, ".npz:"))
		split = at;
	*key = split ? split + 5 : NULL;
	*path = split ? strndup(arg, (size_t)(split + 4 - arg)) : strdup(arg);
	return *path ? 0 : -1;
}
