/*
 * slowread.so: an LD_PRELOAD shim for tests that need file reads to be slow.
 * When FERRY_SLOWREAD_MS is set to a positive number, every pread (and
 * pread64) sleeps that many milliseconds before reading; otherwise it reads
 * at once. libferry.so calls pread through its PLT, so preloading this shim
 * slows libferry's reads. The read itself is the system call, so the shim
 * works after libasan in LD_PRELOAD too (ASan's interceptor calls the next
 * pread, this one).
 */
/* Fortified headers (Ubuntu's gcc turns _FORTIFY_SOURCE on by default) make
 * pread an inline wrapper, which a definition of pread cannot replace. */
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void slow_down(void)
{
	const char *env = getenv("FERRY_SLOWREAD_MS");
	long ms = env ? strtol(env, NULL, 10) : 0;
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static ssize_t read_at(int fd, void *buf, size_t len, off_t offset)
{
	int saved = errno;

	slow_down();
	errno = saved;
	return syscall(SYS_pread64, fd, buf, len, offset);
}

ssize_t pread(int fd, void *buf, size_t len, off_t offset)
{
	return read_at(fd, buf, len, offset);
}

ssize_t pread64(int fd, void *buf, size_t len, off_t offset)
{
	return read_at(fd, buf, len, offset);
}
