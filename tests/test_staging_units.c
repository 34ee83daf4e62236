/*
 * Unit tests of the staging engine: growth, giving back
 * unused buffers, the launch threshold, empty commits, validation, errors from
 * the device layer, and destroy with copies in flight or buffers leased.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "helpers.h"
#include "engine/engine.h"

#define CHUNK ((size_t)64 << 10)

static struct ferry__staging *make_engine(struct ferry__device *dev, unsigned max,
					  unsigned initial, unsigned launch_after)
{
	struct ferry__staging_config cfg = {
		.chunk_size = CHUNK, .max_buffers = max, .initial_buffers = initial,
		.launch_after = launch_after, .placement = FERRY__STAGE_PINNED,
	};
	struct ferry__staging *stg;
	T_OK(ferry__staging_create(dev, &cfg, &stg));
	return stg;
}

static struct ferry__staging_stats stats(struct ferry__staging *stg)
{
	struct ferry__staging_stats st;
	ferry__staging_stats(stg, &st);
	return st;
}

static void test_growth(struct ferry__device *dev)
{
	struct ferry__staging *stg = make_engine(dev, 16, 2, 32);
	struct ferry__buf *b[16];
	T_EQ(stats(stg).total, 0);
	for (int i = 0; i < 16; i++)
		T_OK(ferry__staging_lease(stg, &b[i]));
	struct ferry__staging_stats st = stats(stg);
	T_EQ(st.total, 16);
	T_EQ(st.grown, 4); /* 2, +2, +4, +8 */
	T_EQ(st.leased, 16);
	struct ferry__buf *extra;
	T_EQ(ferry__staging_try_lease(stg, &extra), -EAGAIN);
	int seen[16] = { 0 };
	for (int i = 0; i < 16; i++) {
		T_ASSERT(b[i]->id < 16 && !seen[b[i]->id]);
		seen[b[i]->id] = 1;
		T_EQ((uintptr_t)b[i]->data % 4096, 0);
		T_OK(ferry__staging_give_back(stg, b[i]));
	}
	st = stats(stg);
	T_EQ(st.free, 16);
	T_EQ(st.leased, 0);
	T_OK(ferry__staging_destroy(stg));

	stg = make_engine(dev, 8, 1, 32);
	T_OK(ferry__staging_reserve(stg, 100));
	T_EQ(stats(stg).total, 8);
	T_OK(ferry__staging_destroy(stg));
}

static void test_give_back_and_validation(struct ferry__device *dev)
{
	struct ferry__staging *stg = make_engine(dev, 4, 4, 32);
	struct ferry__buf *b;
	T_OK(ferry__staging_lease(stg, &b));
	T_OK(ferry__staging_give_back(stg, b));
	T_EQ(ferry__staging_give_back(stg, b), -EINVAL); /* not leased any more */
	T_OK(ferry__staging_lease(stg, &b));
	char dst[16];
	struct ferry__copy past = { .dst = dst, .src_offset = CHUNK - 8, .len = 16 };
	T_EQ(ferry__staging_queue(stg, b, &past, 1, NULL), -EINVAL);
	T_EQ(ferry__staging_queue(stg, b, &past, 0, NULL), -EINVAL);
	struct ferry__staging_stats st = stats(stg);
	T_EQ(st.leased, 0); /* a refused queue returns the buffer */
	T_EQ(st.free, 4);
	T_OK(ferry__staging_destroy(stg));
}

static void test_launch_threshold_and_empty_commit(struct ferry__device *dev)
{
	struct ferry__staging *stg = make_engine(dev, 8, 8, 4);
	char *out;
	T_OK(dev->ops->mem_alloc(dev, 8 * CHUNK, (void **)&out));
	T_OK(ferry__staging_commit(stg, NULL));
	T_OK(ferry__staging_wait(stg, NULL));
	T_EQ(stats(stg).batches_launched, 0);
	struct ferry__ticket t = { 0 };
	for (unsigned i = 0; i < 5; i++) {
		struct ferry__buf *b;
		T_OK(ferry__staging_lease(stg, &b));
		t_fill_pattern(b->data, CHUNK, 7, (uint64_t)i * CHUNK);
		struct ferry__copy c = { .dst = out + (size_t)i * CHUNK, .len = CHUNK };
		T_OK(ferry__staging_queue(stg, b, &c, 1, &t));
		T_EQ(stats(stg).batches_launched, i == 4 ? 1 : 0);
	}
	T_OK(ferry__staging_wait(stg, &t));
	T_EQ(t.error, 0);
	char *host = t_copy_back(dev, out, 5 * CHUNK);
	T_EQ(t_check_pattern(host, 5 * CHUNK, 7, 0), 5 * CHUNK);
	free(host);
	T_EQ(stats(stg).free, 8);
	T_OK(ferry__staging_commit(stg, NULL));
	T_EQ(stats(stg).batches_launched, 1);
	dev->ops->mem_free(dev, out);
	T_OK(ferry__staging_destroy(stg));
}

/* A copy that fails to issue: its ticket carries the error, the pool refills. */
static void test_copy_error(struct ferry__device *fdev)
{
	struct ferry__staging *stg = make_engine(fdev, 8, 8, 32);
	char *out;
	T_OK(fdev->ops->mem_alloc(fdev, 3 * CHUNK, (void **)&out));
	t_fault_arm(fdev, T_FAULT_COPY, 2, -EIO, 0);
	struct ferry__ticket t = { 0 };
	for (unsigned i = 0; i < 3; i++) {
		struct ferry__buf *b;
		T_OK(ferry__staging_lease(stg, &b));
		struct ferry__copy c = { .dst = out + (size_t)i * CHUNK, .len = CHUNK };
		T_OK(ferry__staging_queue(stg, b, &c, 1, &t));
	}
	T_EQ(ferry__staging_wait(stg, &t), -EIO);
	T_ASSERT(t_fault_fired(fdev));
	struct ferry__staging_stats st = stats(stg);
	T_EQ(st.free, st.total);
	/* The engine stays usable after the failed batch. */
	struct ferry__ticket t2 = { 0 };
	struct ferry__buf *b;
	T_OK(ferry__staging_lease(stg, &b));
	t_fill_pattern(b->data, CHUNK, 9, 0);
	struct ferry__copy c = { .dst = out, .len = CHUNK };
	T_OK(ferry__staging_queue(stg, b, &c, 1, &t2));
	T_OK(ferry__staging_wait(stg, &t2));
	char *host = t_copy_back(fdev, out, CHUNK);
	T_EQ(t_check_pattern(host, CHUNK, 9, 0), CHUNK);
	free(host);
	fdev->ops->mem_free(fdev, out);
	T_OK(ferry__staging_destroy(stg));
}

/* An allocation that fails: the lease reports it, the pool stays consistent. */
static void test_allocation_error(struct ferry__device *fdev)
{
	struct ferry__staging *stg = make_engine(fdev, 8, 2, 32);
	t_fault_arm(fdev, T_FAULT_PINNED_ALLOC, 1, -ENOMEM, 0);
	struct ferry__buf *b;
	T_EQ(ferry__staging_lease(stg, &b), -ENOMEM);
	T_EQ(stats(stg).total, 0);
	T_OK(ferry__staging_lease(stg, &b));
	T_EQ(stats(stg).total, 2);
	T_OK(ferry__staging_give_back(stg, b));
	T_OK(ferry__staging_destroy(stg));
}

/* An event that cannot be created: the batch is issued all the same and the
 * stream waited for, so no copy is left to run after its owner's wait. */
static void test_event_errors(struct ferry__device *fdev)
{
	struct ferry__staging *stg = make_engine(fdev, 4, 4, 32);
	char *out;
	T_OK(fdev->ops->mem_alloc(fdev, CHUNK, (void **)&out));
	t_fault_arm(fdev, T_FAULT_EVENT_CREATE, 1, -ENOMEM, 0);
	struct ferry__buf *b;
	T_OK(ferry__staging_lease(stg, &b));
	t_fill_pattern(b->data, CHUNK, 3, 0);
	struct ferry__copy c = { .dst = out, .len = CHUNK };
	struct ferry__ticket t = { 0 };
	T_OK(ferry__staging_queue(stg, b, &c, 1, &t));
	T_OK(ferry__staging_commit(stg, NULL));
	T_ASSERT(t_fault_fired(fdev));
	struct ferry__staging_stats after = stats(stg);
	T_EQ(after.pending, 0);
	T_EQ(after.in_flight, 0);
	T_EQ(after.free, after.total);
	T_OK(ferry__staging_wait(stg, &t));
	char *host = t_copy_back(fdev, out, CHUNK);
	T_EQ(t_check_pattern(host, CHUNK, 3, 0), CHUNK);
	free(host);

	/* A failed query never frees a buffer; the wait falls back to syncing. */
	t_fault_arm(fdev, T_FAULT_EVENT_QUERY, 1, -EIO, 1);
	struct ferry__ticket t2 = { 0 };
	T_OK(ferry__staging_lease(stg, &b));
	T_OK(ferry__staging_queue(stg, b, &c, 1, &t2));
	T_EQ(ferry__staging_wait(stg, &t2), -EIO);
	t_fault_arm(fdev, T_FAULT_NONE, 0, 0, 0);
	struct ferry__staging_stats st = stats(stg);
	T_EQ(st.free, st.total);
	fdev->ops->mem_free(fdev, out);
	T_OK(ferry__staging_destroy(stg));
}

struct opener {
	struct ferry__device *dev;
	struct ferry__gate *gate;
};

static void *open_gate_later(void *arg)
{
	struct opener *o = arg;
	usleep(100 * 1000);
	o->dev->ops->gate_open(o->dev, o->gate);
	return NULL;
}

static void test_destroy_in_flight(struct ferry__device *dev)
{
	struct ferry__staging *stg = make_engine(dev, 4, 4, 32);
	char *out;
	T_OK(dev->ops->mem_alloc(dev, 4 * CHUNK, (void **)&out));
	struct opener o = { .dev = dev };
	/* Allocate before holding the stream: on CUDA an allocation may wait for it. */
	T_OK(ferry__staging_reserve(stg, 4));
	T_OK(dev->ops->gate_create(dev, &o.gate));
	T_OK(dev->ops->gate_hold(dev, ferry__staging_stream(stg), o.gate));
	for (unsigned i = 0; i < 4; i++) {
		struct ferry__buf *b;
		T_OK(ferry__staging_lease(stg, &b));
		t_fill_pattern(b->data, CHUNK, 5, (uint64_t)i * CHUNK);
		struct ferry__copy c = { .dst = out + (size_t)i * CHUNK, .len = CHUNK };
		T_OK(ferry__staging_queue(stg, b, &c, 1, NULL));
	}
	T_OK(ferry__staging_commit(stg, NULL));
	pthread_t opener;
	pthread_create(&opener, NULL, open_gate_later, &o);
	T_OK(ferry__staging_destroy(stg)); /* must wait for the held batch */
	pthread_join(opener, NULL);
	char *host = t_copy_back(dev, out, 4 * CHUNK);
	T_EQ(t_check_pattern(host, 4 * CHUNK, 5, 0), 4 * CHUNK);
	free(host);
	dev->ops->gate_destroy(dev, o.gate);

	dev->ops->mem_free(dev, out);
}

/* Destroy with a buffer still leased reports it and leaks the memory on
 * purpose; a child process keeps that leak out of LeakSanitizer's report. The
 * child uses the host device: CUDA cannot be used across fork. */
static void test_destroy_leased(void)
{
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		struct ferry__device *dev;
		T_OK(ferry__device_host.open(0, &dev));
		struct ferry__staging *stg = make_engine(dev, 4, 4, 32);
		struct ferry__buf *b;
		T_OK(ferry__staging_lease(stg, &b));
		T_EQ(ferry__staging_destroy(stg), -FERRY_ELEASED);
		T_ASSERT(strstr(ferry_last_error(), "1 buffers still leased"));
		_exit(0);
	}
	int status;
	T_EQ(waitpid(pid, &status, 0), pid);
	T_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	struct ferry__device *dev = t_open_device();
	test_growth(dev);
	test_give_back_and_validation(dev);
	test_launch_threshold_and_empty_commit(dev);
	test_destroy_in_flight(dev);
	test_destroy_leased();
	struct ferry__device *fdev = t_fault_device(dev);
	test_copy_error(fdev);
	test_allocation_error(fdev);
	test_event_errors(fdev);
	fdev->ops->close(fdev);
	printf("staging units: ok\n");
	return T_EXIT_PASS;
}
