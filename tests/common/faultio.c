/*
 * The fault IO of helpers.h: an IO table that forwards to a real one (posix,
 * uring, ...) and fails the Nth call of the armed class. Table classes count
 * the table's calls; system-call classes count pread calls, which reach
 * __wrap_pread only in programs linked with -Wl,--wrap=pread (the Makefile
 * does so for tests/test_fault_*.c and tests/test_change_*.c): they reach
 * below the backends' loops and the header reads that do not go through the
 * table. Such programs may also run a hook after every pread.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/base.h"
#include "helpers.h"
#include "io/io.h"

#define SHORT_READ_MAX 61 /* bytes a short pread returns at most: less than any header */

ssize_t __real_pread(int fd, void *buf, size_t len, off_t offset) __attribute__((weak));
ssize_t __wrap_pread(int fd, void *buf, size_t len, off_t offset);
ssize_t __real_preadv(int fd, const struct iovec *iov, int n, off_t offset) __attribute__((weak));
ssize_t __wrap_preadv(int fd, const struct iovec *iov, int n, off_t offset);

static struct {
	pthread_mutex_t lock;
	const struct ferry__io_ops *inner;
	struct ferry__io_ops ops;
	enum t_io_fault armed;
	unsigned long nth, calls[T_IO_NCLASSES];
	int err, sticky, fired;
	void (*hook)(void *arg, int fd, off_t offset);
	void *hook_arg;
} fio = { .lock = PTHREAD_MUTEX_INITIALIZER };

void t_io_after_pread(void (*fn)(void *arg, int fd, off_t offset), void *arg)
{
	pthread_mutex_lock(&fio.lock);
	fio.hook = fn;
	fio.hook_arg = arg;
	pthread_mutex_unlock(&fio.lock);
}

static void run_hook(int fd, off_t offset)
{
	pthread_mutex_lock(&fio.lock);
	void (*fn)(void *, int, off_t) = fio.hook;
	void *arg = fio.hook_arg;
	pthread_mutex_unlock(&fio.lock);
	if (fn)
		fn(arg, fd, offset);
}

/* Counts a call of each class in classes; returns the armed one if it is to
 * fail (the caller then injects it and calls note_fired). */
static enum t_io_fault io_should_fail(const enum t_io_fault *classes, unsigned n, int *err)
{
	enum t_io_fault hit = T_IO_NONE;
	pthread_mutex_lock(&fio.lock);
	for (unsigned i = 0; i < n; i++) {
		unsigned long k = ++fio.calls[classes[i]];
		if (fio.armed == classes[i] && (k == fio.nth || (fio.sticky && k > fio.nth)))
			hit = classes[i];
	}
	*err = fio.err;
	pthread_mutex_unlock(&fio.lock);
	return hit;
}

static void note_fired(void)
{
	pthread_mutex_lock(&fio.lock);
	fio.fired = 1;
	pthread_mutex_unlock(&fio.lock);
}

/* Whether offset lies before the end of fd's file: a read there that reports
 * EOF is early. */
static int before_end(int fd, off_t offset)
{
	struct stat st;
	return fstat(fd, &st) == 0 && offset < st.st_size;
}

static int fio_open(struct ferry__io *io, const char *path, int flags, struct ferry__file **out)
{
	static const enum t_io_fault classes[] = { T_IO_OPEN };
	int err;
	*out = NULL;
	if (io_should_fail(classes, 1, &err)) {
		note_fired();
		return ferry__fail(err, "%s: %s (injected)", path, strerror(-err));
	}
	return fio.inner->open(io, path, flags, out);
}

/* Makes the first request that read something end halfway, as if the file
 * ended there (rounded down to the direct-IO alignment for direct files). */
static void cut_short(const struct ferry__file *f, struct ferry__io_req *reqs, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (reqs[i].result <= 0)
			continue;
		ssize_t cut = reqs[i].result / 2;
		if (f->direct)
			cut &= ~(ssize_t)4095;
		reqs[i].result = cut;
		return;
	}
}

static int fio_read(struct ferry__io *io, struct ferry__file *f, struct ferry__io_req *reqs,
		    unsigned n)
{
	static const enum t_io_fault classes[] = { T_IO_READ, T_IO_EARLY_EOF };
	int err;
	enum t_io_fault hit = io_should_fail(classes, 2, &err);
	if (hit)
		note_fired();
	if (hit == T_IO_READ) {
		for (unsigned i = 0; i < n; i++)
			reqs[i].result = err;
		return ferry__fail(err, "%s: read at offset %llu: %s (injected)", f->path,
				   n ? (unsigned long long)reqs[0].offset : 0ull, strerror(-err));
	}
	int rc = fio.inner->read(io, f, reqs, n);
	if (rc == 0 && hit == T_IO_EARLY_EOF)
		cut_short(f, reqs, n);
	return rc;
}

ssize_t __wrap_pread(int fd, void *buf, size_t len, off_t offset)
{
	static const enum t_io_fault classes[] = { T_IO_SHORT_READ, T_IO_SYS_READ, T_IO_SYS_EOF };
	int err;
	switch (io_should_fail(classes, 3, &err)) {
	case T_IO_SHORT_READ:
		if (len > 1 && before_end(fd, offset)) {
			len = len / 2 < SHORT_READ_MAX ? len / 2 : SHORT_READ_MAX;
			note_fired();
		}
		break;
	case T_IO_SYS_READ:
		note_fired();
		errno = -err;
		return -1;
	case T_IO_SYS_EOF:
		if (!before_end(fd, offset))
			break; /* at the real end: nothing to inject */
		note_fired();
		return 0;
	default:
		break;
	}
	ssize_t got = __real_pread(fd, buf, len, offset);
	int saved = errno;
	run_hook(fd, offset);
	errno = saved;
	return got;
}

/* A preadv counts as a pread of its first buffer's length: the same faults
 * (short: only that buffer, and half of it), then the same hook. */
ssize_t __wrap_preadv(int fd, const struct iovec *iov, int n, off_t offset)
{
	static const enum t_io_fault classes[] = { T_IO_SHORT_READ, T_IO_SYS_READ, T_IO_SYS_EOF };
	int err;
	switch (io_should_fail(classes, 3, &err)) {
	case T_IO_SHORT_READ:
		if (iov[0].iov_len > 1 && before_end(fd, offset)) {
			note_fired();
			size_t len = iov[0].iov_len / 2 < SHORT_READ_MAX ? iov[0].iov_len / 2
									  : SHORT_READ_MAX;
			return __wrap_pread(fd, iov[0].iov_base, len, offset);
		}
		break;
	case T_IO_SYS_READ:
		note_fired();
		errno = -err;
		return -1;
	case T_IO_SYS_EOF:
		if (!before_end(fd, offset))
			break;
		note_fired();
		return 0;
	default:
		break;
	}
	ssize_t got = __real_preadv(fd, iov, n, offset);
	int saved = errno;
	run_hook(fd, offset);
	errno = saved;
	return got;
}

const struct ferry__io_ops *t_fault_io(const struct ferry__io_ops *inner)
{
	pthread_mutex_lock(&fio.lock);
	fio.inner = inner;
	fio.ops = *inner;
	fio.ops.open = fio_open;
	fio.ops.read = fio_read;
	pthread_mutex_unlock(&fio.lock);
	return &fio.ops;
}

int t_io_syscalls_wrapped(void)
{
	return __real_pread != NULL;
}

void t_io_arm(enum t_io_fault cls, unsigned long n, int err, int sticky)
{
	pthread_mutex_lock(&fio.lock);
	fio.armed = cls;
	fio.nth = n;
	fio.err = err;
	fio.sticky = sticky;
	fio.fired = 0;
	memset(fio.calls, 0, sizeof(fio.calls));
	pthread_mutex_unlock(&fio.lock);
}

unsigned long t_io_calls(enum t_io_fault cls)
{
	pthread_mutex_lock(&fio.lock);
	unsigned long n = fio.calls[cls];
	pthread_mutex_unlock(&fio.lock);
	return n;
}

int t_io_fired(void)
{
	pthread_mutex_lock(&fio.lock);
	int fired = fio.fired;
	pthread_mutex_unlock(&fio.lock);
	return fired;
}
