/* Experiment for the GPU machine: LD_PRELOAD it to measure, per call
 * site, how long threads wait to acquire a pthread mutex; prints the sites at
 * exit (resolve them with addr2line -e BINARY). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define SITES 256
static struct { void *site; uint64_t calls, contended, wait_ns; } tab[SITES];
static int (*real_lock)(pthread_mutex_t *);
static int (*real_trylock)(pthread_mutex_t *);

static uint64_t ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }

static void account(void *site, int contended, uint64_t w)
{
	unsigned h = ((uintptr_t)site >> 2) % SITES;
	for (unsigned k = 0; k < SITES; k++, h = (h + 1) % SITES) {
		void *cur = __atomic_load_n(&tab[h].site, __ATOMIC_ACQUIRE);
		if (!cur) {
			void *none = NULL;
			if (!__atomic_compare_exchange_n(&tab[h].site, &none, site, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) && none != site)
				continue;
			cur = site;
		}
		if (cur == site) {
			__atomic_add_fetch(&tab[h].calls, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&tab[h].contended, contended, __ATOMIC_RELAXED);
			__atomic_add_fetch(&tab[h].wait_ns, w, __ATOMIC_RELAXED);
			return;
		}
	}
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	if (!real_lock) {
		real_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
		real_trylock = dlsym(RTLD_NEXT, "pthread_mutex_trylock");
	}
	void *site = __builtin_return_address(0);
	if (real_trylock(m) == 0) {
		account(site, 0, 0);
		return 0;
	}
	uint64_t t = ns();
	int rc = real_lock(m);
	account(site, 1, ns() - t);
	return rc;
}

__attribute__((destructor)) static void report(void)
{
	for (unsigned i = 0; i < SITES; i++) {
		if (!tab[i].site || tab[i].calls < 100)
			continue;
		Dl_info d = { 0 };
		dladdr(tab[i].site, &d);
		fprintf(stderr, "lockprof %s+0x%lx calls %lu contended %lu wait_s %.3f\n",
			d.dli_fname ? d.dli_fname : "?", (unsigned long)((char *)tab[i].site - (char *)d.dli_fbase),
			(unsigned long)tab[i].calls, (unsigned long)tab[i].contended, tab[i].wait_ns / 1e9);
	}
}
