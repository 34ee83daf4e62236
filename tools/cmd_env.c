/* `ferry env`: the device, IO backend and settings a default context gets. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/base.h"

static const char env_help[] =
	"usage: ferry env\n"
	"\n"
	"Opens a context with default options (the FERRY_* environment variables apply)\n"
	"and prints its report: the device and driver, the IO backend and why it was\n"
	"chosen, the staging chunk size and the number of IO threads.\n"
	"Exit status: 0, or 1 when no context can be opened (the reason is printed).\n";

/* Prints ferry_ctx_describe's report of ctx, without its first line when that
 * is the version line already printed. Returns 0 or 1. */
static int print_report(ferry_ctx *ctx, const char *printed_line)
{
	int need = ferry_ctx_describe(ctx, NULL, 0);
	size_t skip = printed_line ? strlen(printed_line) : 0;
	char *report;

	if (need < 0)
		return ferry_cli_error("describing the context", need);
	report = malloc((size_t)need + 1);
	if (!report)
		return ferry_cli_error("describing the context", -ENOMEM);
	ferry_ctx_describe(ctx, report, (size_t)need + 1);
	if (!skip || strncmp(report, printed_line, skip))
		skip = 0;
	fputs(report + skip, stdout);
	if (need > 0 && report[need - 1] != '\n')
		putchar('\n');
	free(report);
	return 0;
}

/* Opens a default context and prints its report. Returns the exit status. */
static int env_report(const char *printed_line)
{
	ferry_ctx *ctx = NULL;
	int rc, status;

	ferry__clear_error();
	rc = ferry_ctx_create(&ctx, NULL);
	if (rc < 0)
		return ferry_cli_error("cannot open a context", rc);
	status = print_report(ctx, printed_line);
	ferry__clear_error();
	rc = ferry_ctx_destroy(ctx);
	if (rc < 0)
		status = ferry_cli_error("closing the context", rc);
	return status;
}

int ferry_cli_version(void)
{
	char line[64];

	snprintf(line, sizeof(line), "ferry %s\n", ferry_version());
	fputs(line, stdout);
	return env_report(line);
}

int ferry_cli_env(int argc, char **argv)
{
	static const struct option options[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	int c;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		fputs(env_help, c == 'h' ? stdout : stderr);
		return c == 'h' ? 0 : 2;
	}
	if (optind < argc) {
		fputs(env_help, stderr);
		return 2;
	}
	return env_report(NULL);
}
