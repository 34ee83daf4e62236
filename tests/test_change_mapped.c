/*
 * Files that change once the zero-copy path has them mapped and registered
 * (load/mapped.c). Between caching and the next load, a file truncated,
 * replaced by a rename over its path, rewritten in place or grown is another
 * version: the load misses the cache and reads the new bytes (or refuses a
 * truncated .npy), and the stale mapping is dropped. During the next load
 * (right after its header's pread, when the mapped copy is about to run), the
 * same changes give -FERRY_ECHANGED naming the file, or, for a rename over the
 * path, every byte of the file the load opened. Truncated under a mapping,
 * the host device's copy is an error, never SIGBUS.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context/context.h"
#include "io/io.h"
#include "test_reader_util.h"

#define ELEMS (1u << 20) /* float32: a 4 MiB payload */

enum change { TRUNCATE, RENAME, REWRITE, GROW, NCHANGES };
static const char *names[] = { "truncated", "renamed over", "rewritten in place", "grown" };

static char *dir, *path, *other;
static atomic_int armed;
static enum change what;

static void write_file(const char *p, uint32_t id)
{
	int64_t n = ELEMS;
	tr_write_npy(p, FERRY_FLOAT32, 0, 0, 1, &n, id);
}

/* Overwrites the payload's last 4 KiB, putting the modification time back. */
static void rewrite(void)
{
	char junk[4096];
	memset(junk, 0x5a, sizeof(junk));
	tr_overwrite_tail(path, junk, sizeof(junk));
}

static void grow(void)
{
	int fd = open(path, O_WRONLY | O_APPEND);
	T_ASSERT(fd >= 0);
	T_EQ(write(fd, "more", 4), 4);
	close(fd);
}

static void apply(enum change c)
{
	if (c == TRUNCATE)
		T_EQ(truncate(path, 4096), 0);
	else if (c == RENAME)
		T_EQ(rename(other, path), 0);
	else if (c == REWRITE)
		rewrite();
	else
		grow();
}

static void after_pread(void *arg, int fd, off_t offset)
{
	if (atomic_exchange(&armed, 0))
		apply(what);
}

static struct ferry__mapped_stats stats(ferry_ctx *ctx)
{
	struct ferry__mapped_stats st;
	ferry__mapped_stats(ctx->ld.mapped, &st);
	return st;
}

/* The last len bytes of the file as the CPU reads it now (a payload). */
static void *cpu_tail(size_t len, uint64_t *offset)
{
	void *buf = malloc(len);
	int fd = open(path, O_RDONLY);
	struct stat st;
	T_ASSERT(buf && fd >= 0 && fstat(fd, &st) == 0);
	*offset = (uint64_t)st.st_size - len;
	T_EQ((size_t)pread(fd, buf, len, (off_t)*offset), len);
	close(fd);
	return buf;
}

/* A grown .npy has bytes after its payload: read all of it raw and check it. */
static int read_grown(ferry_ctx *ctx)
{
	uint64_t offset;
	struct stat st;
	T_ASSERT(stat(path, &st) == 0);
	void *dev = NULL, *want = cpu_tail((size_t)st.st_size, &offset);
	T_OK(ferry_device_alloc(ctx, (size_t)st.st_size, &dev));
	int rc = ferry_read_range(ctx, path, 0, (uint64_t)st.st_size, dev);
	if (rc == 0)
		tr_check_bytes(ctx, dev, want, (uint64_t)st.st_size, "grown");
	ferry_device_free(ctx, dev);
	free(want);
	return rc;
}

/* Writes the file (and the one renamed over it), loads it once and waits
 * until its mapping is registered. */
static void cache_file(ferry_ctx *ctx)
{
	ferry_array *a = NULL;
	write_file(path, 1);
	write_file(other, 2);
	T_OK(ferry_load(ctx, path, &a));
	ferry_array_free(a);
	ferry__mapped_drain(ctx->ld.mapped);
	T_ASSERT(stats(ctx).entries >= 1);
}

static void expect_changed(int rc, const char *when, enum change c)
{
	if (rc != -FERRY_ECHANGED && rc != -FERRY_ETRUNCATED && rc != -FERRY_EFORMAT)
		T_FAIL("%s %s: load gave %d (%s), want an error", names[c], when, rc,
		       ferry_strerror(rc));
	if (!strstr(ferry_last_error(), path))
		T_FAIL("%s %s: the message does not name the file: %s", names[c], when,
		       ferry_last_error());
}

/* Changed between caching and the load: another version, read afresh. */
static void change_before(ferry_ctx *ctx, enum change c)
{
	ferry_array *a = NULL;
	cache_file(ctx);
	what = c;
	apply(c);
	uint64_t hits = stats(ctx).hits;
	int rc = c == GROW ? read_grown(ctx) : ferry_load(ctx, path, &a);
	T_EQ(stats(ctx).hits, hits); /* a miss: the identity differs */
	if (c == TRUNCATE)
		expect_changed(rc, "before the load", c);
	else
		T_OK(rc);
	if (a) {
		uint64_t offset;
		void *want = cpu_tail((size_t)ELEMS * 4, &offset);
		tr_check_bytes(ctx, ferry_array_data(a), want, (uint64_t)ELEMS * 4, names[c]);
		free(want);
		ferry_array_free(a);
	}
	/* A new version of the same inode drops the stale mapping once idle; a
	 * file renamed away keeps its mapping until the LRU evicts it (no lookup
	 * will ever match it again), beside the new file's. */
	ferry__mapped_drain(ctx->ld.mapped);
	unsigned most = c == RENAME ? 2 : 1;
	if (stats(ctx).entries > most)
		T_FAIL("%s before the load: %u mappings after the drain, want at most %u", names[c],
		       stats(ctx).entries, most);
}

/* Changed after the load opened the file, before its mapped copy. */
static void change_during(ferry_ctx *ctx, enum change c)
{
	ferry_array *a = NULL;
	cache_file(ctx);
	what = c;
	uint64_t hits = stats(ctx).hits;
	atomic_store(&armed, 1);
	int rc = ferry_load(ctx, path, &a);
	T_EQ(atomic_load(&armed), 0);
	T_EQ(stats(ctx).hits, hits + 1); /* it took the mapped path */
	if (c != RENAME) {
		expect_changed(rc, "during the load", c);
		return;
	}
	T_OK(rc); /* the descriptor still reads the file it opened */
	void *want = tr_payload(1, (uint64_t)ELEMS * 4);
	tr_check_bytes(ctx, ferry_array_data(a), want, (uint64_t)ELEMS * 4, "renamed over");
	free(want);
	ferry_array_free(a);
}

/* The device layer alone: a mapped copy of pages past the new end of file. */
static void truncated_under_copy(ferry_ctx *ctx)
{
	struct ferry__device *dev = ctx->ld.dev;
	struct ferry__file *f;
	write_file(path, 3);
	T_OK(ferry__io_file_open(path, 0, &f));
	void *map, *dst;
	size_t len;
	T_OK(ferry__io_map(f, &map, &len));
	T_OK(dev->ops->map_register(dev, map, len)); /* CUDA: DMA then reads pinned pages */
	T_EQ(truncate(path, 4096), 0);
	T_OK(dev->ops->mem_alloc(dev, len, &dst));
	int rc = dev->ops->copy_sync(dev, dst, map, len, FERRY__H2D_MAPPED);
	if (strcmp(dev->ops->name, "host") == 0 && rc != -FERRY_ECHANGED)
		T_FAIL("host: a mapped copy past the end of file gave %d, want ECHANGED", rc);
	printf("%s: a mapped copy of a file truncated under it: %d (%s)\n", dev->ops->name, rc,
	       rc ? ferry_strerror(rc) : "the pinned pages' bytes");
	ferry__clear_error();
	dev->ops->mem_free(dev, dst);
	dev->ops->map_unregister(dev, map, len);
	ferry__io_unmap(map, len);
	ferry__io_file_close(f);
}

/* The engine's path for a failed mapped copy: its batch's event reports it to
 * the ticket (host device: -FERRY_ECHANGED), and the engine stays usable. */
static void truncated_under_queued_copy(ferry_ctx *ctx)
{
	struct ferry__device *dev = ctx->ld.dev;
	struct ferry__staging *stg = ferry__lanes_get(ctx->ld.lanes, 0);
	struct ferry__file *f;
	void *map, *dst;
	size_t len;
	uint64_t seq;
	write_file(path, 4);
	T_OK(ferry__io_file_open(path, 0, &f));
	T_OK(ferry__io_map(f, &map, &len));
	T_OK(dev->ops->map_register(dev, map, len));
	T_EQ(truncate(path, 4096), 0);
	T_OK(dev->ops->mem_alloc(dev, len, &dst));
	struct ferry__copy copy = { .dst = dst, .src_offset = 0, .len = len, .tag = path };
	struct ferry__ticket t = { .stg = stg };
	T_OK(ferry__staging_queue_mapped(stg, map, &copy, 1, &t, &seq));
	int rc = ferry__staging_wait(stg, &t);
	if (strcmp(dev->ops->name, "host") == 0 && rc != -FERRY_ECHANGED)
		T_FAIL("host: a queued mapped copy past the end of file gave %d, want ECHANGED", rc);
	T_ASSERT(ferry__staging_reached(stg, seq));
	ferry__clear_error();
	struct ferry__ticket after = { .stg = stg }; /* the next copy is not blamed */
	copy.len = 4096;
	T_OK(ferry__staging_queue_mapped(stg, map, &copy, 1, &after, &seq));
	T_OK(ferry__staging_wait(stg, &after));
	dev->ops->mem_free(dev, dst);
	dev->ops->map_unregister(dev, map, len);
	ferry__io_unmap(map, len);
	ferry__io_file_close(f);
}

int main(void)
{
	if (!t_io_syscalls_wrapped())
		T_SKIP("needs the pread wrapper");
	unsetenv("FERRY_IO");
	setenv("FERRY_ODIRECT", "0", 1);
	setenv("FERRY_PIN_BUDGET", "64M", 1);
	dir = strdup(t_tmpdir());
	path = strdup(tr_path(dir, "x.npy"));
	other = strdup(tr_path(dir, "y.npy"));
	t_io_after_pread(after_pread, NULL);
	for (enum change c = 0; c < NCHANGES; c++) { /* a context each: a cache each */
		ferry_ctx *ctx = tr_ctx(0, 2);
		T_ASSERT(ctx->ld.mapped);
		change_before(ctx, c);
		T_OK(ferry_ctx_destroy(ctx));
		ctx = tr_ctx(0, 2);
		change_during(ctx, c);
		T_OK(ferry_ctx_destroy(ctx));
	}
	t_io_after_pread(NULL, NULL);
	ferry_ctx *ctx = tr_ctx(0, 2);
	truncated_under_copy(ctx);
	truncated_under_queued_copy(ctx);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	free(path);
	free(other);
	printf("ok: mapped files changed before a load read afresh, during one refused (a "
	       "rename over the path reads the opened file); no SIGBUS\n");
	return T_EXIT_PASS;
}
