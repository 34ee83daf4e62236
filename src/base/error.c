#include "base/base.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Room for a reason and two paths of PATH_MAX bytes (a batch names two files). */
#define MESSAGE_MAX 16384

static __thread char last_error[MESSAGE_MAX];

int ferry__fail(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}

int ferry__fail_subject(int err, const char *subject)
{
	if (err >= 0 || !subject || strstr(last_error, subject))
		return err;
	if (!last_error[0])
		return ferry__fail(err, "%s: %s", subject, ferry_strerror(err));
	char *reason = strdup(last_error);
	if (!reason)
		return ferry__fail(err, "%s: %s", subject, ferry_strerror(err));
	ferry__fail(err, "%s: %s", subject, reason);
	free(reason);
	return err;
}

char *ferry__error_copy(void)
{
	return strdup(last_error);
}

void ferry__clear_error(void)
{
	last_error[0] = '\0';
}

const char *ferry_last_error(void)
{
	return last_error;
}

const char *ferry_version(void)
{
	return FERRY_VERSION_STRING;
}

static const char *ferry_error_text(int err)
{
	switch (-err) {
	case FERRY_EFORMAT: return "not a valid .npy file";
	case FERRY_EUNSUPPORTED: return "unsupported .npy feature";
	case FERRY_EDEVICE: return "device error";
	case FERRY_ENODEVICE: return "device not available";
	case FERRY_ELEASED: return "staging buffers still leased";
	case FERRY_ECONFIG: return "invalid configuration";
	case FERRY_ETRUNCATED: return "unexpected end of file";
	case FERRY_EMISMATCH: return "samples of a batch disagree";
	case FERRY_EBOUNDS: return "region of interest out of bounds";
	case FERRY_ECHANGED: return "file changed while reading";
	case FERRY_EIO_BACKEND: return "IO backend not available";
	case FERRY_EEND: return "end of data";
	default: return NULL;
	}
}

const char *ferry_strerror(int err)
{
	const char *text = ferry_error_text(err);
	if (text)
		return text;
	if (err < 0 && err > -FERRY_EFORMAT)
		return strerror(-err);
	return err == 0 ? "success" : "unknown error";
}

int ferry__parse_size(const char *text, uint64_t *out)
{
	char *end;
	if (!text || !*text || *text == '-')
		return -FERRY_ECONFIG;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || end == text)
		return -FERRY_ECONFIG;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end || (shift && v > (ULLONG_MAX >> shift)))
		return -FERRY_ECONFIG;
	*out = (uint64_t)v << shift;
	return 0;
}

uint64_t ferry__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

size_t ferry__page_size(void)
{
	long page = sysconf(_SC_PAGESIZE);
	return page > 0 ? (size_t)page : 4096;
}

size_t ferry__page_round(size_t len)
{
	size_t page = ferry__page_size();
	return (len + page - 1) / page * page;
}

void *ferry__aligned_alloc(size_t align, size_t len)
{
	void *p = NULL;
	size_t rounded = (len + align - 1) / align * align;
	if (posix_memalign(&p, align, rounded ? rounded : align))
		return NULL;
	memset(p, 0, rounded ? rounded : align);
	return p;
}
