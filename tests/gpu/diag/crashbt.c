/* Diagnostics for the GPU machine: LD_PRELOAD it to get C backtraces of
 * an abort/segfault, and of every thread on SIGUSR2 (a hang under timeout). */
#define _GNU_SOURCE
#include <dirent.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile int busy;

static void dump(const char *why)
{
	void *f[64];
	char hdr[96];
	while (__sync_lock_test_and_set(&busy, 1))
		;
	int n = backtrace(f, 64);
	int l = snprintf(hdr, sizeof hdr, "== C stack (%s) tid %ld\n", why, (long)syscall(SYS_gettid));
	write(2, hdr, (size_t)l);
	backtrace_symbols_fd(f, n, 2);
	__sync_lock_release(&busy);
}

static void on_fatal(int sig)
{
	dump(strsignal(sig));
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_thread(int sig) { dump("all-threads"); }

static void on_all(int sig)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	long self = syscall(SYS_gettid);
	while (d && (e = readdir(d))) {
		long tid = atol(e->d_name);
		if (tid > 0 && tid != self)
			syscall(SYS_tgkill, getpid(), tid, SIGRTMIN + 3);
	}
	if (d)
		closedir(d);
	usleep(300000);
	dump("SIGUSR2 receiver");
}

__attribute__((constructor)) static void install(void)
{
	void *f[2];
	backtrace(f, 2);
	signal(SIGABRT, on_fatal);
	signal(SIGSEGV, on_fatal);
	signal(SIGBUS, on_fatal);
	signal(SIGUSR2, on_all);
	signal(SIGRTMIN + 3, on_thread);
}
