/*
 * The storage IO backends. Every backend that sets up here (posix; uring when
 * built with liburing and allowed by the kernel; cufile on a GPU machine with
 * libcufile) reads files of awkward sizes back, buffered and direct, whole and
 * in pieces, with every byte checked; short reads at EOF report what they got;
 * errors name the file; a refused O_DIRECT falls back and says so once per
 * process; several requests per call, more than the uring queue depth, and
 * eight threads reading one file at once all land where they should.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "helpers.h"
#include "context/context.h"
#include "io/io.h"

#define PAGE 4096u
#define POISON 0xEE
#define THREADS 8

static const size_t k_sizes[] = { 0, 1, 4095, 4096, 4097, (1u << 20) + 123 };
#define NSIZES (sizeof(k_sizes) / sizeof(k_sizes[0]))
#define BIG (NSIZES - 1)

/* One backend under test. */
struct env {
	const struct ferry__io_ops *ops;
	struct ferry__io *io;
	struct ferry__device *dev;
	char paths[NSIZES][512];
};

/* A page-aligned destination: host memory, or device memory for cufile. */
struct tbuf {
	void *ptr;
	size_t len;
	int device;
};

static uint32_t file_id(size_t i)
{
	return (uint32_t)(i + 1);
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

static size_t round_up(size_t v)
{
	return (v + PAGE - 1) / PAGE * PAGE;
}

/* The result a read of len bytes at off of a file of size bytes must give. */
static ssize_t expected(size_t size, uint64_t off, size_t len)
{
	return off >= size ? 0 : (ssize_t)min_size(len, size - off);
}

/* ---- files and buffers --------------------------------------------------- */

static void write_file(const char *path, size_t size, uint32_t id)
{
	unsigned char *data = malloc(size ? size : 1);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	size_t done = 0;

	T_ASSERT(data && fd >= 0);
	t_fill_pattern(data, size, id, 0);
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);
		T_ASSERT(n > 0);
		done += (size_t)n;
	}
	T_EQ(close(fd), 0);
	free(data);
}

static struct tbuf buf_alloc(struct env *e, size_t len)
{
	struct tbuf b = { .len = len, .device = e->ops->placement == FERRY__STAGE_DEVICE };

	if (b.device) {
		T_OK(e->dev->ops->mem_alloc(e->dev, len, &b.ptr));
		if (e->ops->register_block)
			T_OK(e->ops->register_block(e->io, b.ptr, len));
		return b;
	}
	T_EQ(posix_memalign(&b.ptr, PAGE, len), 0);
	memset(b.ptr, POISON, len);
	return b;
}

static void buf_free(struct env *e, struct tbuf *b)
{
	if (!b->device) {
		free(b->ptr);
		return;
	}
	if (e->ops->deregister_block)
		e->ops->deregister_block(e->io, b->ptr, b->len);
	e->dev->ops->mem_free(e->dev, b->ptr);
}

/* Checks len bytes at b + at against file id's pattern from offset; with
 * poison_after, also that the next tail bytes were not written. */
static void buf_check(const struct env *e, const struct tbuf *b, size_t at, size_t len,
		      uint32_t id, uint64_t offset, size_t poison_after, const char *what)
{
	unsigned char *host = (unsigned char *)b->ptr + at;
	size_t bad;

	if (b->device)
		host = t_copy_back(e->dev, host, len);
	bad = t_check_pattern(host, len, id, offset);
	if (bad != len) {
		char where[96];
		t_describe_word(host + (bad & ~(size_t)7), where, sizeof(where));
		T_FAIL("%s: %s: byte %zu of %zu (file offset %llu) is wrong; that word holds %s",
		       e->ops->name, what, bad, len, (unsigned long long)(offset + bad), where);
	}
	for (size_t i = 0; !b->device && i < poison_after; i++)
		if (host[len + i] != POISON)
			T_FAIL("%s: %s: byte %zu past the result was written", e->ops->name, what, i);
	if (b->device)
		free(host);
}

/* ---- reading ------------------------------------------------------------- */

static struct ferry__file *open_ok(struct env *e, const char *path, int flags)
{
	struct ferry__file *f;

	T_OK(e->ops->open(e->io, path, flags, &f));
	return f;
}

/* Reads one request; returns its result, or the call's error. */
static ssize_t read_one(struct env *e, struct ferry__file *f, void *dst, size_t len, uint64_t off)
{
	struct ferry__io_req r = { .dst = dst, .len = len, .offset = off, .result = -12345 };
	int rc = e->ops->read(e->io, f, &r, 1);

	return rc < 0 ? rc : r.result;
}

/* Reads len at off into b + at and checks the result and every byte. */
static void read_check(struct env *e, struct ferry__file *f, size_t size_index,
		       struct tbuf *b, size_t at, size_t len, uint64_t off, int poison)
{
	size_t size = k_sizes[size_index];
	ssize_t want = expected(size, off, len);
	ssize_t got = read_one(e, f, (char *)b->ptr + at, len, off);
	char what[160];

	snprintf(what, sizeof(what), "%s: %zu bytes at %llu", f->path, len,
		 (unsigned long long)off);
	if (got != want)
		T_FAIL("%s: %s: result %zd, expected %zd (%s)", e->ops->name, what, got, want,
		       got < 0 ? ferry_last_error() : "short read");
	buf_check(e, b, at, (size_t)got, file_id(size_index), off,
		  poison ? min_size(len - (size_t)got, 64) : 0, what);
}

/* Buffered: the whole file, a sequential walk in odd pieces, then random
 * offsets, lengths and destination misalignment, some past EOF. */
static void test_buffered(struct env *e, size_t si, uint64_t *rng)
{
	size_t size = k_sizes[si];
	struct ferry__file *f = open_ok(e, e->paths[si], 0);
	struct tbuf b = buf_alloc(e, round_up(size) + 4 * PAGE);

	T_EQ(f->size, size);
	if (e->ops->placement == FERRY__STAGE_PINNED) /* cufile always asks for O_DIRECT */
		T_EQ(f->direct, 0);
	read_check(e, f, si, &b, 0, size + 100, 0, 1);
	for (size_t off = 0; off < size; off += 1000)
		read_check(e, f, si, &b, off, 1000, off, 0);
	for (int i = 0; i < 200; i++) {
		uint64_t off = t_rand(rng) % (size + 200);
		size_t len = (size_t)(t_rand(rng) % (3 * PAGE + 100));
		size_t at = (size_t)(t_rand(rng) % 64);
		if (!b.device)
			memset(b.ptr, POISON, b.len);
		read_check(e, f, si, &b, at, len, off, 1);
	}
	T_EQ(read_one(e, f, b.ptr, 0, 0), 0);
	buf_free(e, &b);
	e->ops->close(e->io, f);
}

/* Misaligned direct requests fail with -EINVAL and say why (pinned backends:
 * cuFile aligns for itself). */
static void test_direct_misaligned(struct env *e, struct ferry__file *f, struct tbuf *b)
{
	char *p = b->ptr;

	if (!f->direct || e->ops->placement != FERRY__STAGE_PINNED)
		return;
	T_EQ(read_one(e, f, p + 1, PAGE, 0), -EINVAL);
	T_ASSERT(strstr(ferry_last_error(), "aligned"));
	T_EQ(read_one(e, f, p, PAGE + 1, 0), -EINVAL);
	T_EQ(read_one(e, f, p, PAGE, 512), -EINVAL);
}

/* Direct: aligned offsets, lengths rounded up past EOF, whole and by page. */
static void test_direct(struct env *e, size_t si, int *direct_seen)
{
	size_t size = k_sizes[si];
	struct ferry__file *f = open_ok(e, e->paths[si], FERRY__IO_DIRECT);
	struct tbuf b = buf_alloc(e, round_up(size) + 4 * PAGE);

	T_EQ(f->size, size);
	*direct_seen |= f->direct;
	read_check(e, f, si, &b, 0, round_up(size) + PAGE, 0, 0);
	for (size_t off = 0; off < size; off += PAGE)
		read_check(e, f, si, &b, off, PAGE, off, 0);
	for (size_t off = 0; off < size; off += 3 * PAGE)
		read_check(e, f, si, &b, 0, round_up(size - off), off, 0);
	read_check(e, f, si, &b, 0, 2 * PAGE, round_up(size) + PAGE, 0);
	test_direct_misaligned(e, f, &b);
	buf_free(e, &b);
	e->ops->close(e->io, f);
}

/* ---- many requests per call ---------------------------------------------- */

/* Reads n requests of len bytes at offsets i * stride (wrapping past EOF by a
 * little) in one call, each into its own slot of one buffer; checks them all. */
static void read_many(struct env *e, int flags, unsigned n, size_t len, size_t stride)
{
	size_t size = k_sizes[BIG];
	struct ferry__file *f = open_ok(e, e->paths[BIG], flags);
	size_t slot = round_up(len);
	struct tbuf b = buf_alloc(e, n * slot);
	struct ferry__io_req *reqs = calloc(n, sizeof(*reqs));
	size_t span = round_up(size) + 3 * stride; /* stride is a page multiple for direct */

	T_ASSERT(reqs);
	for (unsigned i = 0; i < n; i++)
		reqs[i] = (struct ferry__io_req){ .dst = (char *)b.ptr + i * slot, .len = len,
						  .offset = (uint64_t)i * stride % span };
	T_OK(e->ops->read(e->io, f, reqs, n));
	for (unsigned i = 0; i < n; i++) {
		char what[96];
		snprintf(what, sizeof(what), "request %u of %u", i, n);
		T_EQ(reqs[i].result, expected(size, reqs[i].offset, len));
		buf_check(e, &b, i * slot, (size_t)reqs[i].result, file_id(BIG), reqs[i].offset,
			  0, what);
	}
	free(reqs);
	buf_free(e, &b);
	e->ops->close(e->io, f);
}

static void test_many_requests(struct env *e)
{
	read_many(e, 0, 10, 100000, 104729);
	read_many(e, 0, 300, 1000, 3001);
	read_many(e, FERRY__IO_DIRECT, 10, 8 * PAGE, 25 * PAGE);
	read_many(e, FERRY__IO_DIRECT, 300, PAGE, PAGE); /* > queue depth, some past EOF */
}

/* ---- threads ------------------------------------------------------------- */

struct reader {
	struct env *e;
	struct ferry__file *f;
	unsigned index;
	pthread_t thread;
};

/* Reads random pieces of this thread's eighth of the big file, four requests
 * per call, checking every byte. */
static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	size_t size = k_sizes[BIG], part = size / THREADS;
	uint64_t rng = 0x1234567ull + rd->index;
	struct tbuf b = buf_alloc(rd->e, 4 * 64 * 1024);

	for (int iter = 0; iter < 50; iter++) {
		struct ferry__io_req reqs[4];
		for (unsigned k = 0; k < 4; k++) {
			size_t len = (size_t)(t_rand(&rng) % (64 * 1024));
			uint64_t off = rd->index * part + t_rand(&rng) % part;
			reqs[k] = (struct ferry__io_req){ .dst = (char *)b.ptr + k * 64 * 1024,
							  .len = len, .offset = off };
		}
		T_OK(rd->e->ops->read(rd->e->io, rd->f, reqs, 4));
		for (unsigned k = 0; k < 4; k++) {
			T_EQ(reqs[k].result, expected(size, reqs[k].offset, reqs[k].len));
			buf_check(rd->e, &b, k * 64 * 1024, (size_t)reqs[k].result, file_id(BIG),
				  reqs[k].offset, 0, "thread read");
		}
	}
	buf_free(rd->e, &b);
	return NULL;
}

static void test_threads(struct env *e)
{
	struct reader readers[THREADS];
	struct ferry__file *f = open_ok(e, e->paths[BIG], 0);

	for (unsigned i = 0; i < THREADS; i++) {
		readers[i] = (struct reader){ .e = e, .f = f, .index = i };
		T_EQ(pthread_create(&readers[i].thread, NULL, reader_main, &readers[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++)
		T_EQ(pthread_join(readers[i].thread, NULL), 0);
	e->ops->close(e->io, f);
}

/* ---- errors -------------------------------------------------------------- */

/* Opening path must fail with want (any negative code when want is 0) and a
 * message naming path. */
static void expect_open_error(struct env *e, const char *path, int flags, int want)
{
	struct ferry__file *f = NULL;
	int rc = e->ops->open(e->io, path, flags, &f);

	if (rc >= 0 || (want && rc != want))
		T_FAIL("%s: open %s gave %d, expected %d", e->ops->name, path, rc, want);
	T_ASSERT(f == NULL);
	if (!strstr(ferry_last_error(), path))
		T_FAIL("%s: message \"%s\" does not name %s", e->ops->name, ferry_last_error(),
		       path);
}

static void test_errors(struct env *e, const char *dir)
{
	char path[600];
	struct ferry__file *f;
	char buf[64];

	snprintf(path, sizeof(path), "%s/missing.npy", dir);
	expect_open_error(e, path, 0, -ENOENT);
	expect_open_error(e, path, FERRY__IO_DIRECT, -ENOENT);
	expect_open_error(e, dir, 0, -EISDIR);
	expect_open_error(e, dir, FERRY__IO_DIRECT, -EISDIR);
	if (geteuid() != 0) {
		snprintf(path, sizeof(path), "%s/unreadable.npy", dir);
		write_file(path, 100, 99);
		T_EQ(chmod(path, 0), 0);
		expect_open_error(e, path, 0, -EACCES);
		T_EQ(unlink(path), 0);
	}
	/* The path is the file's own copy. */
	snprintf(path, sizeof(path), "%s", e->paths[1]);
	f = open_ok(e, path, 0);
	path[0] = '#';
	T_ASSERT(!strcmp(f->path, e->paths[1]));
	T_EQ(read_one(e, f, buf, 1, (uint64_t)1 << 63), -EINVAL);
	T_ASSERT(strstr(ferry_last_error(), e->paths[1]));
	e->ops->close(e->io, f);
}

/* ---- O_DIRECT refused ---------------------------------------------------- */

/* Opens path direct (twice) and reads it back when it is one of ours. Sets
 * *fell_back when the backend fell back to buffered reads. Returns 0, or the
 * open's error for the caller to report once stderr is back. Runs with stderr
 * captured, so it checks nothing that would exit. */
static int open_direct_twice(struct env *e, const char *path, size_t si, int *fell_back)
{
	for (int i = 0; i < 2; i++) {
		struct ferry__file *f;
		int rc = e->ops->open(e->io, path, FERRY__IO_DIRECT, &f);
		if (rc < 0)
			return rc;
		*fell_back |= !f->direct;
		if (si < NSIZES) {
			struct tbuf b = buf_alloc(e, round_up(k_sizes[si]) + PAGE);
			ssize_t got = read_one(e, f, b.ptr, b.len, 0);
			if (got != (ssize_t)k_sizes[si])
				rc = got < 0 ? (int)got : -EIO;
			else if (!b.device && t_check_pattern(b.ptr, (size_t)got, file_id(si), 0) !=
						      (size_t)got)
				rc = ferry__fail(-EIO, "%s: wrong bytes", path);
			buf_free(e, &b);
		}
		e->ops->close(e->io, f);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Counts the lines of text that contain needle. */
static int count_lines(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* Direct opens of every backend with stderr captured into log. Returns 0 or
 * the first error, its message copied into why. */
static int open_all_direct(struct env *envs, unsigned n, const char *shm, int *fell_back,
			   char *why, size_t why_len)
{
	for (unsigned i = 0; i < n; i++) {
		int pinned = envs[i].ops->placement == FERRY__STAGE_PINNED;
		int rc = open_direct_twice(&envs[i], shm, 4, fell_back);
		if (rc < 0 && !pinned && rc == -FERRY_EDEVICE) {
			/* cuFile may refuse tmpfs files outright (no udev device). */
			snprintf(why, why_len, "%s", ferry_last_error());
			printf("note: %s: refused %s: %s\n", envs[i].ops->name, shm, why);
			rc = 0;
		}
		if (rc == 0 && pinned)
			rc = open_direct_twice(&envs[i], "/proc/self/status", NSIZES, fell_back);
		if (rc < 0) {
			snprintf(why, why_len, "%s: %s (%s)", envs[i].ops->name, ferry_strerror(rc),
				 ferry_last_error());
			return rc;
		}
	}
	return 0;
}

/* Runs every backend's direct opens of a tmpfs file (tmpfs takes O_DIRECT since
 * Linux 6.6) and of a procfs file (never takes it) with stderr captured: every
 * refusal falls back, and the process says so exactly once. Must run before
 * anything else opens direct. */
static void test_direct_fallback(struct env *envs, unsigned n, const char *dir)
{
	char shm[256], log[600], text[4096] = "", why[512] = "";
	int fell_back = 0, saved = dup(2), logfd, rc;
	ssize_t len;

	snprintf(shm, sizeof(shm), "/dev/shm/ferry-test-%d.bin", (int)getpid());
	snprintf(log, sizeof(log), "%s/stderr.log", dir);
	write_file(shm, k_sizes[4], file_id(4));
	logfd = open(log, O_RDWR | O_CREAT | O_TRUNC, 0644);
	T_ASSERT(saved >= 0 && logfd >= 0);
	fflush(stderr);
	T_ASSERT(dup2(logfd, 2) == 2);
	rc = open_all_direct(envs, n, shm, &fell_back, why, sizeof(why));
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	len = pread(logfd, text, sizeof(text) - 1, 0);
	text[len > 0 ? len : 0] = '\0';
	close(logfd);
	unlink(shm);
	fprintf(stderr, "%s", text);
	if (rc < 0)
		T_FAIL("direct open or read failed: %s", why);
	T_EQ(count_lines(text, "ferry: O_DIRECT refused by the file system of "), fell_back);
	printf("ok: O_DIRECT refusal %s\n", fell_back ? "fell back, said once" : "never seen");
}

/* ---- main ---------------------------------------------------------------- */

/* Sets up the backend named name into e. Returns 1 when it is available. */
static int setup(struct env *e, const char *name, struct ferry__device *dev, const char *dir)
{
	char line[256] = "";

	memset(e, 0, sizeof(*e));
	e->ops = ferry__io_find(name);
	e->dev = dev;
	if (!e->ops) {
		printf("skip: %s: not built\n", name);
		return 0;
	}
	T_ASSERT(!strcmp(e->ops->name, name));
	int rc = e->ops->init(dev, &e->io);
	if (rc < 0) {
		T_ASSERT(e->io == NULL);
		printf("skip: %s: %s (%s)\n", name, ferry_strerror(rc), ferry_last_error());
		return 0;
	}
	T_OK(e->ops->describe(e->io, line, sizeof(line)));
	printf("backend %s: %s\n", name, line);
	for (size_t i = 0; i < NSIZES; i++)
		snprintf(e->paths[i], sizeof(e->paths[i]), "%s/size-%zu.bin", dir, k_sizes[i]);
	return 1;
}

static void test_backend(struct env *e, const char *dir)
{
	uint64_t rng = 0x5eedull;
	int direct_seen = 0;

	for (size_t i = 0; i < NSIZES; i++) {
		test_buffered(e, i, &rng);
		test_direct(e, i, &direct_seen);
	}
	printf("ok: %s: sizes read back buffered and %s\n", e->ops->name,
	       direct_seen ? "with O_DIRECT" : "direct (fell back to buffered here)");
	test_many_requests(e);
	printf("ok: %s: many requests per call\n", e->ops->name);
	test_threads(e);
	printf("ok: %s: %d threads at once\n", e->ops->name, THREADS);
	test_errors(e, dir);
	printf("ok: %s: errors\n", e->ops->name);
}

int main(void)
{
	static const char *const names[] = { "posix", "uring", "cufile" };
	struct env envs[3];
	struct ferry__device *dev = NULL;
	char *dir = t_tmpdir();
	unsigned n = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	T_ASSERT(ferry__io_find("nonesuch") == NULL && ferry__io_find(NULL) == NULL);
	if (ferry__ctx_open_device(NULL, &dev) < 0) {
		printf("note: no device (%s)\n", ferry_last_error());
		dev = NULL;
	}
	for (size_t i = 0; i < NSIZES; i++) {
		char path[600];
		snprintf(path, sizeof(path), "%s/size-%zu.bin", dir, k_sizes[i]);
		write_file(path, k_sizes[i], file_id(i));
	}
	for (unsigned i = 0; i < 3; i++)
		n += (unsigned)setup(&envs[n], names[i], dev, dir);
	T_ASSERT(n > 0 && !strcmp(envs[0].ops->name, "posix"));
	test_direct_fallback(envs, n, dir);
	for (unsigned i = 0; i < n; i++)
		test_backend(&envs[i], dir);
	for (unsigned i = 0; i < n; i++)
		envs[i].ops->fini(envs[i].io);
	if (dev)
		dev->ops->close(dev);
	t_rmtree(dir);
	printf("pass\n");
	return T_EXIT_PASS;
}
