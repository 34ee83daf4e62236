/* `ferry env`: the device, IO backend and settings a default context gets. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/base.h"
#include "context/context.h"

static const char env_help[] =
	"usage: ferry env [--json]\n"
	"\n"
	"Opens a context with default options (the FERRY_* environment variables apply)\n"
	"and prints its report: the device and driver, the IO backend and why it was\n"
	"chosen, the staging chunk size, lanes and buffers (pools start small and grow\n"
	"on demand up to that number), the IO threads and O_DIRECT (off, on, or auto:\n"
	"per file, with its page-cache budget and how residency is asked). 'ferry --help'\n"
	"lists the environment variables.\n"
	"\n"
	"  --json   print one JSON object instead: {\"version\": V, \"device\": {\"kind\":\n"
	"           \"cuda\"|\"host\", \"description\": TEXT}, \"io\": {\"backend\": NAME,\n"
	"           \"description\": TEXT, \"reason\": TEXT}, \"staging\": {\"chunk_size\": N,\n"
	"           \"memory\": \"pinned host\"|\"device\", \"lanes\": N, \"max_buffers\": N,\n"
	"           \"first_buffers_per_lane\": N}, \"threads\": N, \"direct\": true|false\n"
	"           (every file opened with O_DIRECT), \"o_direct\": \"auto\"|\"on\"|\"off\",\n"
	"           \"cache_budget\": N|null (bytes; auto only), \"residency\":\n"
	"           \"cachestat\"|\"mincore\" (how auto asks the page cache)}\n"
	"\n"
	"Exit status: 0, 1 when no context can be opened (the reason is printed), 2 for\n"
	"usage.\n";

/* Prints ferry_ctx_describe's report of ctx. Returns 0 or 1. */
static int print_report(ferry_ctx *ctx)
{
	int need = ferry_ctx_describe(ctx, NULL, 0);
	char *report;

	if (need < 0)
		return ferry_cli_error("describing the context", need);
	report = malloc((size_t)need + 1);
	if (!report)
		return ferry_cli_error("describing the context", -ENOMEM);
	ferry_ctx_describe(ctx, report, (size_t)need + 1);
	fputs(report, stdout);
	if (need > 0 && report[need - 1] != '\n')
		putchar('\n');
	free(report);
	return 0;
}

/* Prints `"key": "text"` with text as a JSON string. */
static void json_pair(const char *key, const char *text, const char *after)
{
	printf("\"%s\": ", key);
	ferry_cli_json_string(stdout, text);
	fputs(after, stdout);
}

/* Prints the JSON object of ctx (the schema of env_help). Returns 0. */
static int print_json(ferry_ctx *ctx)
{
	const struct ferry__loader *ld = &ctx->ld;
	const struct ferry__settings *s = &ctx->set;
	char device[256] = "", io[256] = "";

	ld->dev->ops->describe(ld->dev, device, sizeof(device));
	if (ld->io_ops->describe)
		ld->io_ops->describe(ld->io, io, sizeof(io));
	printf("{\"version\": \"%s\", \"device\": {\"kind\": \"%s\", ", ferry_version(),
	       ld->dev->ops->name);
	json_pair("description", device, "}, \"io\": {");
	json_pair("backend", ld->io_ops->name, ", ");
	json_pair("description", io, ", ");
	json_pair("reason", ctx->io_reason, "}, ");
	printf("\"staging\": {\"chunk_size\": %zu, \"memory\": \"%s\", \"lanes\": %u, "
	       "\"max_buffers\": %u, \"first_buffers_per_lane\": %u}, \"threads\": %u, "
	       "\"direct\": %s, \"o_direct\": \"%s\", \"cache_budget\": ",
	       s->chunk_size, ld->io_ops->placement == FERRY__STAGE_DEVICE ? "device" : "pinned host",
	       s->lanes, s->max_buffers, s->initial_buffers, ld->threads,
	       ld->direct == FERRY_DIRECT_ALWAYS ? "true" : "false", ferry__direct_name(ld->direct));
	if (ld->direct == FERRY_DIRECT_AUTO)
		printf("%llu", (unsigned long long)ld->cache_budget);
	else
		fputs("null", stdout);
	printf(", \"residency\": \"%s\"}\n", ferry__io_residency_method());
	return 0;
}

/* Opens a default context and prints its report. Returns the exit status. */
static int env_report(int json)
{
	ferry_ctx *ctx = NULL;
	int rc, status;

	ferry__clear_error();
	rc = ferry_ctx_create(&ctx, NULL);
	if (rc < 0)
		return ferry_cli_error("cannot open a context", rc);
	status = json ? print_json(ctx) : print_report(ctx);
	ferry__clear_error();
	rc = ferry_ctx_destroy(ctx);
	if (rc < 0)
		status = ferry_cli_error("closing the context", rc);
	return status;
}

int ferry_cli_env(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, json = 0;

	while ((c = getopt_long(argc, argv, ":jh", options, NULL)) != -1) {
		if (c == 'j')
			json = 1;
		else if (c == 'h')
			return fputs(env_help, stdout), 0;
		else
			return ferry_cli_bad_option("env", c, argv);
	}
	if (optind < argc)
		return ferry_cli_bad_argument("env", argv[optind]);
	return env_report(json);
}
