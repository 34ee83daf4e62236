/* ferry — the command-line tool. Each command lives in its own file
 * (tools/cmd_<name>.c, the bench in tools/bench/); this one dispatches. */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "cli.h"
#include "context/context.h"
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

/* Prints the commands, then the environment from the settings table. */
static void usage(FILE *out)
{
	size_t n;
	const struct ferry__setting_info *t = ferry__settings_table(&n);
	fprintf(out, "usage: ferry [--version] [--help] COMMAND [ARGS]\n\n"
		"--version prints 'ferry VERSION' and nothing else ('ferry env' describes the\n"
		"device and settings).\n\ncommands:\n");
	for (size_t i = 0; i < FERRY__ARRAY_LEN(commands); i++)
		fprintf(out, "  %-6s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'ferry COMMAND --help' describes a command.\n\nenvironment:\n");
	for (size_t i = 0; i < n; i++)
		fprintf(out, "  %s: %s (default: %s)\n      %s\n", t[i].name, t[i].values,
			t[i].fallback, t[i].about);
}

/*
 * On the host device every array is fresh host memory (src/device/host.c
 * allocates and zeroes it). Under glibc's adaptive mmap threshold an array of
 * a few MiB was either mapped, faulted in page by page and unmapped on every
 * load, or reused from the heap, depending on what the process had freed
 * before: ferry demo, whose 8 MiB write buffer once freed raised the
 * threshold, loaded 64 x 4 MiB files at 2.1 GB/s with 6k page faults where
 * ferry read took 68k faults and ran at 0.2 GB/s (2026-12-03, this VM, where a
 * fault costs about 15 us). Fixed thresholds make every command reuse freed
 * memory: ferry read then ran at 0.8 to 1.9 GB/s. What is left is the host
 * device faulting in memory the heap did not hand back. CUDA device memory
 * is not malloc's.
 */
static void tune_malloc(void)
{
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

int main(int argc, char **argv)
{
	opterr = 0; /* each command prints one line about a bad option itself */
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("ferry %s\n", ferry_version());
		return 0;
	}
	tune_malloc();
	for (size_t i = 0; i < FERRY__ARRAY_LEN(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "ferry: unknown command '%s' (try 'ferry --help')\n", argv[1]);
	return 2;
}
