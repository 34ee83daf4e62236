/*
 * Host allocation faults of helpers.h. Programs linked with
 *   -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=posix_memalign
 * (the Makefile does so for tests/test_fault_*.c) send every such call of their
 * own objects and of libferry.a's through the __wrap_* functions here; when
 * armed, the Nth call fails. The __real_* references are weak so that programs
 * linked without the flags still link: they never call __wrap_*, and
 * t_alloc_wrapped() tells them apart.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

#include "helpers.h"

void *__real_malloc(size_t len) __attribute__((weak));
void *__real_calloc(size_t n, size_t size) __attribute__((weak));
void *__real_realloc(void *ptr, size_t len) __attribute__((weak));
int __real_posix_memalign(void **out, size_t align, size_t len) __attribute__((weak));

void *__wrap_malloc(size_t len);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *ptr, size_t len);
int __wrap_posix_memalign(void **out, size_t align, size_t len);

static atomic_int counting;        /* armed (n may be 0: count only) */
static atomic_ulong calls, nth;
static atomic_int fired;
static _Thread_local int paused;   /* the test's own allocations on this thread */

/* Counts one allocation; returns 1 when it is the one to fail. */
static int alloc_should_fail(void)
{
	if (!atomic_load(&counting) || paused)
		return 0;
	unsigned long n = atomic_fetch_add(&calls, 1) + 1;
	if (n != atomic_load(&nth))
		return 0;
	atomic_store(&fired, 1);
	return 1;
}

void *__wrap_malloc(size_t len)
{
	if (alloc_should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_malloc(len);
}

void *__wrap_calloc(size_t n, size_t size)
{
	if (alloc_should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

void *__wrap_realloc(void *ptr, size_t len)
{
	if (alloc_should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(ptr, len);
}

int __wrap_posix_memalign(void **out, size_t align, size_t len)
{
	if (alloc_should_fail())
		return ENOMEM;
	return __real_posix_memalign(out, align, len);
}

int t_alloc_wrapped(void)
{
	return __real_malloc != NULL;
}

void t_alloc_arm(unsigned long n)
{
	atomic_store(&counting, 0);
	atomic_store(&calls, 0);
	atomic_store(&nth, n);
	atomic_store(&fired, 0);
	atomic_store(&counting, 1);
}

void t_alloc_disarm(void)
{
	atomic_store(&counting, 0);
}

unsigned long t_alloc_calls(void)
{
	return atomic_load(&calls);
}

int t_alloc_fired(void)
{
	return atomic_load(&fired);
}

void t_alloc_pause(int pause)
{
	paused = pause;
}
