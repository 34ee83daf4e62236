/* ferry — the command-line tool. Each subcommand lives in its own file
 * (tools/cmd_<name>.c); this one dispatches and holds the shared helpers. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "common.h"
#include "ferry.h"

static const struct ferry_cli_command commands[] = {
	{ "env", "print the device, IO backend and settings ferry would use", ferry_cli_env },
	{ "info", "print the header of .npy files (dtype, shape, order, offset)", ferry_cli_info },
	{ "read", "load .npy files onto the device; optionally verify or dump them",
	  ferry_cli_read },
	{ "gen", "write a seeded synthetic .npy dataset", ferry_cli_gen },
	{ "demo", "make a small dataset, load it onto the device, verify it, print the throughput",
	  ferry_cli_demo },
	{ "bench", "measure ferry against its ceilings and other loaders", ferry_cli_bench },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: ferry [--version] [--help] COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < FERRY__ARRAY_LEN(commands); i++)
		fprintf(out, "  %-6s %s\n", commands[i].name, commands[i].summary);
	fprintf(out,
		"\n'ferry COMMAND --help' describes a command.\n"
		"\nenvironment:\n"
		"  FERRY_DEVICE=auto|cuda|host     device to load onto (auto: a GPU when there is one)\n"
		"  FERRY_GPU=N                     GPU ordinal (else LOCAL_RANK, else 0)\n"
		"  FERRY_IO=auto|posix|uring|cufile  storage IO backend\n"
		"  FERRY_CHUNK_SIZE=4k..16M        staging chunk size, a power of two (2M)\n"
		"  FERRY_ODIRECT=0|1               read with O_DIRECT (0)\n"
		"  FERRY_THREADS=N                 IO threads (cores, at most 16)\n"
		"  FERRY_LANES=N                   staging engines sharing the buffers, 1..16 (4)\n"
		"  FERRY_MAX_BUFFERS=N             staging buffers (chunks of pinned memory), 1..4096 (128)\n"
		"  FERRY_TRACE=PATH                write a trace of the engine's events to PATH\n");
}

int ferry_cli_error(const char *what, int rc)
{
	const char *msg = ferry_last_error();
	size_t what_len = what ? strlen(what) : 0;

	if (!*msg)
		fprintf(stderr, "ferry: %s%s%s\n", what ? what : "", what ? ": " : "",
			ferry_strerror(rc));
	else if (!what || (!strncmp(msg, what, what_len) && msg[what_len] == ':'))
		fprintf(stderr, "ferry: %s\n", msg);
	else
		fprintf(stderr, "ferry: %s: %s\n", what, msg);
	return 1;
}

int ferry_cli_parse_size(const char *text, uint64_t *out)
{
	return ferry__parse_size(text, out) < 0 ? -1 : 0;
}

enum ferry_dtype ferry_cli_dtype_by_name(const char *name)
{
	for (int d = FERRY_BOOL; d <= FERRY_COMPLEX128; d++)
		if (!strcmp(name, ferry_dtype_name((enum ferry_dtype)d)))
			return (enum ferry_dtype)d;
	return FERRY_DTYPE_INVALID;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version"))
		return ferry_cli_version();
	for (size_t i = 0; i < FERRY__ARRAY_LEN(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "ferry: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
