/* `ferry info`: what the header of each .npy file says. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "base/base.h"

static const char info_help[] =
	"usage: ferry info [--json] FILE...\n"
	"\n"
	"Reads and validates the header of each .npy FILE (no device needed) and prints\n"
	"one line per file: format version, dtype, shape, memory order (C or Fortran),\n"
	"whether the file's byte order differs from the host's (byteswapped), where the\n"
	"payload starts and how many bytes it holds. The payload must fill the rest of\n"
	"the file exactly.\n"
	"\n"
	"FILE.npz:KEY names the member KEY of an .npz archive (np.savez, savez_compressed;\n"
	"KEY as numpy names it: the member's name without .npy). Its data offset is in\n"
	"the archive for a stored member, in the inflated member for a deflated one, whose\n"
	"first bytes alone are inflated to read the header (its payload is neither\n"
	"inflated nor CRC-checked: loading it checks it; `ferry env` says so on its npz:\n"
	"line, and a build without zlib inflates and checks the whole member instead).\n"
	"\n"
	"  --json   one JSON object per line instead, with the keys path, version,\n"
	"           dtype, shape (an array), fortran_order, byteswapped, data_offset,\n"
	"           nbytes; a path's bytes that are not UTF-8 are written as \\udcXX\n"
	"           (Python's surrogateescape: os.fsencode() gives the path back)\n"
	"\n"
	"A file that cannot be read prints 'ferry: FILE: reason' on stderr and the rest\n"
	"are still read. Exit status: 0 when every file was valid, 1 otherwise, 2 for\n"
	"a usage error.\n";

static void print_shape(const struct ferry_array_info *info, const char *open, const char *close)
{
	fputs(open, stdout);
	for (int i = 0; i < info->ndim; i++)
		printf("%s%" PRId64, i ? ", " : "", info->shape[i]);
	/* Python spells a 1-tuple "(3,)"; JSON has no such thing. */
	if (info->ndim == 1 && *open == '(')
		putchar(',');
	fputs(close, stdout);
}

static void print_text(const char *path, const struct ferry_array_info *info)
{
	printf("%s: version %d.%d, %s, shape ", path, info->version_major, info->version_minor,
	       ferry_dtype_name(info->dtype));
	print_shape(info, "(", ")");
	printf(", %s order, %s, data offset %" PRIu64 ", %" PRIu64 " bytes\n",
	       info->fortran_order ? "Fortran" : "C",
	       info->byteswapped ? "byteswapped" : "native byte order", info->data_offset,
	       info->nbytes);
}

static void print_json(const char *path, const struct ferry_array_info *info)
{
	fputs("{\"path\": ", stdout);
	ferry_cli_json_string(stdout, path);
	printf(", \"version\": \"%d.%d\", \"dtype\": \"%s\", \"shape\": ", info->version_major,
	       info->version_minor, ferry_dtype_name(info->dtype));
	print_shape(info, "[", "]");
	printf(", \"fortran_order\": %s, \"byteswapped\": %s, \"data_offset\": %" PRIu64
	       ", \"nbytes\": %" PRIu64 "}\n",
	       info->fortran_order ? "true" : "false", info->byteswapped ? "true" : "false",
	       info->data_offset, info->nbytes);
}

int ferry_cli_info(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, json = 0, status = 0;

	while ((c = getopt_long(argc, argv, ":jh", options, NULL)) != -1) {
		if (c == 'j')
			json = 1;
		else if (c == 'h')
			return fputs(info_help, stdout), 0;
		else
			return ferry_cli_bad_option("info", c, argv);
	}
	if (optind == argc) {
		fprintf(stderr, "ferry info: no FILE given (try 'ferry info --help')\n");
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		struct ferry_array_info info;
		int rc;

		char *path;
		const char *key;
		ferry__clear_error();
		if (ferry_cli_member_arg(argv[i], &path, &key) < 0)
			return ferry_cli_fail("info: out of memory");
		rc = ferry_info_member(path, key, &info);
		free(path);
		if (rc < 0) {
			status = ferry_cli_error(argv[i], rc);
			continue;
		}
		(json ? print_json : print_text)(argv[i], &info);
	}
	return status;
}
