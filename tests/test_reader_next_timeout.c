/*
 * ferry_reader_next_timeout: while a batch's file read is held up (a hook
 * after the read's pread waits for the test), calls with a timeout return
 * -ETIMEDOUT after about that long and lose nothing; once the read goes on,
 * the batch arrives whole, then the end of the epochs.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>

#include "base/base.h"
#include "test_reader_util.h"

static sem_t released;
static int holding = 1;
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;

static void after_pread(void *arg, int fd, off_t offset)
{
	pthread_mutex_lock(&hold_lock);
	int hold = holding;
	holding = 0;
	pthread_mutex_unlock(&hold_lock);
	if (hold)
		sem_wait(&released);
}

int main(void)
{
	if (!t_io_syscalls_wrapped())
		T_SKIP("needs the pread wrapper");
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	char *dir = strdup(t_tmpdir());
	tr_write_vectors(dir, 1);
	ferry_ctx *ctx = tr_ctx(4096, 1);
	struct ferry_reader_config cfg = { .root = dir, .epochs = 1, .threads = 1,
					   .num_shards = 1 };
	ferry_reader *r;
	ferry_batch *b = NULL;
	T_ASSERT(sem_init(&released, 0, 0) == 0);
	t_io_after_pread(after_pread, NULL);
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = ferry__now_ns();
		int rc = ferry_reader_next_timeout(r, &b, 50);
		uint64_t ms = (ferry__now_ns() - t0) / 1000000;
		if (rc != -ETIMEDOUT || b)
			T_FAIL("held read: %s (%s)", ferry_strerror(rc), ferry_last_error());
		T_ASSERT(ms >= 45 && ms < 5000);
	}
	sem_post(&released);
	T_OK(ferry_reader_next_timeout(r, &b, -1));
	struct ferry_sample s;
	T_OK(ferry_batch_sample(b, 0, &s));
	int64_t len = 4, start = 0;
	uint64_t nbytes;
	void *want = tr_reference(0, 4, 0, 0, 1, &len, &start, &len, "\0\0\0", &nbytes);
	tr_check_sample(ctx, &s, want, nbytes, "after the timeouts");
	free(want);
	ferry_batch_release(b);
	T_EQ(ferry_reader_next_timeout(r, &b, 50), -FERRY_EEND);
	t_io_after_pread(NULL, NULL);
	T_OK(ferry_reader_close(r));
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	printf("ferry_reader_next_timeout: -ETIMEDOUT while a read is held, then the batch\n");
	return T_EXIT_PASS;
}
