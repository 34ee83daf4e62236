/* A small thread pool: one mutex, one condition variable, a task queue. */
#ifndef FERRY_POOL_H
#define FERRY_POOL_H

struct ferry__pool;

/* Starts n worker threads (n >= 1). Returns 0 or a negative code. */
int ferry__pool_create(unsigned n, struct ferry__pool **out);
/* Runs the tasks still queued, then stops and joins the workers. */
void ferry__pool_destroy(struct ferry__pool *pool);
/* Queues fn(arg) to run on a worker. Returns 0 or -ENOMEM. */
int ferry__pool_submit(struct ferry__pool *pool, void (*fn)(void *arg), void *arg);
/* Runs fn(arg, i) on the caller (i = 0) and on up to n - 1 workers (i = 1..),
 * and returns when every started call has returned. Calls that no worker has
 * started by the time the caller's own call returns are skipped, so fn should
 * pull its work from a shared counter; this also makes it safe to call from a
 * pool worker. Returns how many calls ran. */
unsigned ferry__pool_parallel(struct ferry__pool *pool, unsigned n,
			      void (*fn)(void *arg, unsigned i), void *arg);
/* Number of worker threads. */
unsigned ferry__pool_size(struct ferry__pool *pool);

#endif
