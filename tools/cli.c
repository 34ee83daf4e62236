/* What the tool's commands share: error lines, strict number parsing, JSON
 * strings and dtype names. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "cli.h"

int ferry_cli_error(const char *what, int rc)
{
	const char *msg = ferry_last_error();
	size_t what_len = what ? strlen(what) : 0;

	if (!*msg)
		return ferry_cli_fail("%s%s%s", what ? what : "", what ? ": " : "", ferry_strerror(rc));
	if (!what || (!strncmp(msg, what, what_len) && msg[what_len] == ':'))
		return ferry_cli_fail("%s", msg);
	return ferry_cli_fail("%s: %s", what, msg);
}

int ferry_cli_parse_size(const char *text, uint64_t *out)
{
	size_t len = text ? strlen(text) : 0;

	/* strtoull would skip spaces and wrap "-1"; "4i" is no size either. */
	if (!len || *text < '0' || *text > '9' || text[len - 1] == 'i')
		return -1;
	return ferry__parse_size(text, out) < 0 ? -1 : 0;
}

int ferry_cli_parse_uint(const char *option, const char *text, uint64_t lo, uint64_t hi,
			 uint64_t *out)
{
	uint64_t v;

	if (ferry_cli_parse_size(text, &v) == 0 && v >= lo && v <= hi) {
		*out = v;
		return 0;
	}
	if (option)
		fprintf(stderr, "ferry: %s %s: expected an integer from %" PRIu64 " to %" PRIu64 "\n",
			option, *text ? text : "''", lo, hi);
	return 2;
}

/* Returns the length (1 to 4) of the valid UTF-8 sequence that starts at p,
 * or 0 when none does: no overlong forms, surrogates or code points past
 * U+10FFFF. Reads no further than a NUL. */
static size_t utf8_length(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xbf;	/* the second byte's range */
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, lo = p[0] == 0xe0 ? 0xa0 : 0x80, hi = p[0] == 0xed ? 0x9f : 0xbf;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, lo = p[0] == 0xf0 ? 0x90 : 0x80, hi = p[0] == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

void ferry_cli_json_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putc('"', out);
	while (*p) {
		size_t n = utf8_length(p);
		unsigned cp = n == 2 ? (unsigned)(p[0] & 0x1f) << 6 | (p[1] & 0x3f) : p[0];

		if (!n)
			fprintf(out, "\\udc%02x", p[0]);
		else if (cp == '"' || cp == '\\')
			fprintf(out, "\\%c", (int)cp);
		else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
			fprintf(out, "\\u%04x", cp);
		else
			fwrite(p, 1, n, out);
		p += n ? n : 1;
	}
	putc('"', out);
}

enum ferry_dtype ferry_cli_dtype_by_name(const char *name)
{
	for (int d = FERRY_BOOL; d <= FERRY_COMPLEX128; d++)
		if (!strcmp(name, ferry_dtype_name((enum ferry_dtype)d)))
			return (enum ferry_dtype)d;
	return FERRY_DTYPE_INVALID;
}

int ferry_cli_make_parents(char *path, size_t from)
{
	for (char *p = path + from; (p = strchr(p + 1, '/')) != NULL;) {
		*p = 0;
		int rc = mkdir(path, 0755) < 0 && errno != EEXIST ? -1 : 0;
		*p = '/';
		if (rc < 0)
			return -1;
	}
	return 0;
}

int ferry_cli_mkdirs(const char *dir)
{
	char *path = strdup(dir);
	int rc = path ? ferry_cli_make_parents(path, 0) : -1;

	if (rc == 0 && mkdir(path, 0755) < 0)
		rc = -1;
	free(path);
	return rc;
}

int ferry_cli_ensure_dir(const char *dir)
{
	if (ferry_cli_mkdirs(dir) < 0 && errno != EEXIST)
		return ferry_cli_fail("%s: cannot create the directory: %s", dir, strerror(errno));
	return 0;
}

/* All of it (one write(2) moves at most about 2 GiB). Returns 0, or an errno. */
static int write_all(int fd, const char *data, uint64_t len)
{
	while (len) {
		ssize_t n = write(fd, data, len > (1u << 30) ? (1u << 30) : (size_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		data += n;
		len -= (uint64_t)n;
	}
	return 0;
}

int ferry_cli_write_dump(const char *path, const char *name, const void *data, uint64_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	int err = fd < 0 ? errno : write_all(fd, data, len);
	if (fd >= 0 && close(fd) != 0 && !err)
		err = errno;
	if (err)
		return ferry_cli_fail("%s: cannot write its dump: %s%s", name, strerror(err),
				      err == EEXIST ? " (--dump never overwrites a file)" : "");
	return 0;
}
