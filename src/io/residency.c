/*
 * The page cache and an open file: how many of its bytes are resident
 * (cachestat(2), else mincore(2) over a mapping of the same descriptor), how
 * much memory the cache could take (MemAvailable), and turning O_DIRECT on
 * for a descriptor already open.
 */
#include "io/io.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451 /* Linux 6.5; the same number on x86_64 and aarch64 */
#endif

/* The kernel's struct cachestat_range and struct cachestat (uapi/linux/mman.h),
 * under our names: older libc headers lack them. */
struct cs_range {
	uint64_t off, len;
};

struct cs_result {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

/* Pages one mincore call looks at: its vector lives on the stack. */
#define MINCORE_PAGES 4096

/* Set once cachestat answered ENOSYS or EPERM: absent, or filtered out. */
static int cachestat_absent;

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* [offset, offset + len) cut to the file's size at open. */
static uint64_t clamp_len(const struct ferry__file *f, uint64_t offset, uint64_t len)
{
	return offset >= f->size ? 0 : min_u64(len, f->size - offset);
}

static int cachestat_call(int fd, uint64_t offset, uint64_t len, uint64_t *pages)
{
	struct cs_range range = { offset, len };
	struct cs_result st;

	if (syscall(__NR_cachestat, fd, &range, &st, 0) < 0)
		return -errno;
	*pages = st.nr_cache;
	return 0;
}

/* Resident pages of [start, start + len) of the mapping at map. */
static int count_mincore(char *map, size_t len, size_t page, uint64_t *pages)
{
	unsigned char vec[MINCORE_PAGES];
	size_t step = (size_t)MINCORE_PAGES * page;

	*pages = 0;
	for (size_t at = 0; at < len; at += step) {
		size_t part = len - at < step ? len - at : step;
		if (mincore(map + at, part, vec) < 0)
			return -errno;
		for (size_t i = 0; i < (part + page - 1) / page; i++)
			*pages += vec[i] & 1;
	}
	return 0;
}

int ferry__io_resident_mincore(const struct ferry__file *f, uint64_t offset, uint64_t len,
			       uint64_t *bytes)
{
	size_t page = ferry__page_size();
	uint64_t start = offset / page * page, pages = 0;
	uint64_t span = clamp_len(f, offset, len) + (offset - start);
	void *map;
	int rc;

	*bytes = 0;
	if (span == offset - start)
		return 0;
	/* Shared and read-only; mincore never touches the pages, so a file cut
	 * short since the open cannot raise SIGBUS here. */
	map = mmap(NULL, (size_t)span, PROT_READ, MAP_SHARED, f->fd, (off_t)start);
	if (map == MAP_FAILED)
		return -errno;
	rc = count_mincore(map, (size_t)span, page, &pages);
	munmap(map, (size_t)span);
	*bytes = min_u64(pages * page, clamp_len(f, offset, len));
	return rc;
}

/* Whether err says cachestat is absent or filtered out (then remembered). */
static int cachestat_missing(int err)
{
	int missing = err == -ENOSYS || err == -EPERM;
	if (missing)
		__atomic_store_n(&cachestat_absent, 1, __ATOMIC_RELAXED);
	return missing;
}

/* Whether cachestat cannot answer: missing, or it refuses this file. */
static int cachestat_refused(int err)
{
	return cachestat_missing(err) || err == -EINVAL || err == -EOPNOTSUPP;
}

int ferry__io_resident(const struct ferry__file *f, uint64_t offset, uint64_t len,
		       uint64_t *bytes)
{
	uint64_t want = clamp_len(f, offset, len), pages = 0;
	int rc;

	*bytes = 0;
	if (want == 0)
		return 0;
	if (__atomic_load_n(&cachestat_absent, __ATOMIC_RELAXED))
		return ferry__io_resident_mincore(f, offset, want, bytes);
	rc = cachestat_call(f->fd, offset, want, &pages);
	if (rc < 0 && cachestat_refused(rc))
		return ferry__io_resident_mincore(f, offset, want, bytes);
	if (rc == 0)
		*bytes = min_u64(pages * ferry__page_size(), want);
	return rc;
}

const char *ferry__io_residency_method(void)
{
	uint64_t pages;
	/* A bad descriptor tells an implemented syscall (EBADF) from an absent one. */
	int rc = __atomic_load_n(&cachestat_absent, __ATOMIC_RELAXED) ? -ENOSYS
								      : cachestat_call(-1, 0, 0, &pages);

	return cachestat_missing(rc) ? "mincore" : "cachestat";
}

/* Maps f read-only and shared at addr (NULL: where the kernel likes; else
 * MAP_FIXED, over part of a reservation) into *map. Returns 0 or -errno. */
static int map_file_at(const struct ferry__file *f, void *addr, void **map)
{
	*map = NULL;
	if (f->size == 0 || f->size > SIZE_MAX)
		return ferry__fail(-EINVAL, "%s: cannot map %" PRIu64 " bytes", f->path, f->size);
	void *p = mmap(addr, (size_t)f->size, PROT_READ, MAP_SHARED | (addr ? MAP_FIXED : 0),
		       f->fd, 0);
	if (p == MAP_FAILED)
		return ferry__fail(-errno, "%s: mmap: %s", f->path, strerror(errno));
	*map = p;
	return 0;
}

int ferry__io_map(const struct ferry__file *f, void **addr, size_t *len)
{
	int rc = map_file_at(f, NULL, addr);
	*len = rc == 0 ? (size_t)f->size : 0;
	return rc;
}

/* The alignment of a reservation: a huge page's, as the kernel places a large
 * file mapping of its own (on an H100 a 64 MiB file mapped into a merely
 * page-aligned range registered and copied slower: docs/design.md). */
#define RESERVE_ALIGN ((size_t)2 << 20)

int ferry__io_reserve(size_t len, void **addr)
{
	*addr = NULL;
	if (len > SIZE_MAX - RESERVE_ALIGN)
		return ferry__fail(-EINVAL, "cannot reserve %zu bytes of address space", len);
	char *p = mmap(NULL, len + RESERVE_ALIGN, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return ferry__fail(-errno, "reserving %zu bytes of address space: %s", len,
				   strerror(errno));
	uintptr_t mask = RESERVE_ALIGN - 1;
	char *start = (char *)(((uintptr_t)p + mask) & ~mask);
	size_t end = ferry__page_round((size_t)(start - p) + len);
	if (start > p)
		munmap(p, (size_t)(start - p));
	if (end < len + RESERVE_ALIGN)
		munmap(p + end, len + RESERVE_ALIGN - end);
	*addr = start;
	return 0;
}

int ferry__io_map_at(const struct ferry__file *f, void *addr)
{
	void *map;
	return map_file_at(f, addr, &map);
}

void ferry__io_unmap(void *addr, size_t len)
{
	if (addr)
		munmap(addr, len);
}

int ferry__io_set_direct(struct ferry__file *f)
{
	int flags = fcntl(f->fd, F_GETFL);

	/* F_SETFL replaces O_NONBLOCK too: keep whatever the open left. */
	if (flags < 0 || fcntl(f->fd, F_SETFL, flags | O_DIRECT) < 0)
		return -errno;
	f->direct = 1;
	return 0;
}

int ferry__io_mem_available(uint64_t *bytes)
{
	char line[256];
	unsigned long long kib;
	int rc = -ENOENT;
	FILE *in = fopen("/proc/meminfo", "re");

	if (!in)
		return -errno;
	while (rc < 0 && fgets(line, sizeof(line), in))
		if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
			*bytes = (uint64_t)kib << 10;
			rc = 0;
		}
	fclose(in);
	return rc;
}
