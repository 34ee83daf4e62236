#include "base/base.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>


struct task {
	void (*fn)(void *arg);
	void *arg;
	struct task *next;
};

struct ferry__pool {
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct task *head, *tail;
	int exiting;
	unsigned n;
	pthread_t threads[];
};

static void *worker(void *arg)
{
	struct ferry__pool *pool = arg;
	pthread_mutex_lock(&pool->lock);
	for (;;) {
		while (!pool->head && !pool->exiting)
			pthread_cond_wait(&pool->work, &pool->lock);
		struct task *t = pool->head;
		if (!t)
			break; /* exiting, and the queue is empty */
		pool->head = t->next;
		if (!pool->head)
			pool->tail = NULL;
		pthread_mutex_unlock(&pool->lock);
		t->fn(t->arg);
		free(t);
		pthread_mutex_lock(&pool->lock);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

int ferry__pool_create(unsigned n, struct ferry__pool **out)
{
	struct ferry__pool *pool = calloc(1, sizeof(*pool) + n * sizeof(pthread_t));
	if (!pool)
		return ferry__fail(-ENOMEM, "thread pool: out of memory");
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work, NULL);
	for (; pool->n < n; pool->n++) {
		int rc = pthread_create(&pool->threads[pool->n], NULL, worker, pool);
		if (rc) {
			ferry__pool_destroy(pool);
			return ferry__fail(-rc, "thread pool: cannot start thread %u", pool->n);
		}
	}
	*out = pool;
	return 0;
}

void ferry__pool_destroy(struct ferry__pool *pool)
{
	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->exiting = 1;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	for (unsigned i = 0; i < pool->n; i++)
		pthread_join(pool->threads[i], NULL);
	pthread_cond_destroy(&pool->work);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}

int ferry__pool_submit(struct ferry__pool *pool, void (*fn)(void *arg), void *arg)
{
	struct task *t = malloc(sizeof(*t));
	if (!t)
		return ferry__fail(-ENOMEM, "thread pool: out of memory");
	*t = (struct task){ fn, arg, NULL };
	pthread_mutex_lock(&pool->lock);
	if (pool->tail)
		pool->tail->next = t;
	else
		pool->head = t;
	pool->tail = t;
	pthread_cond_signal(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

unsigned ferry__pool_size(struct ferry__pool *pool)
{
	return pool ? pool->n : 0;
}

/* A parallel call shared by the caller and the workers it asked for; freed by
 * whoever drops the last reference. */
struct parallel {
	pthread_mutex_t lock;
	pthread_cond_t idle;
	void (*fn)(void *arg, unsigned i);
	void *arg;
	unsigned refs, active, ran;
	int closed; /* the caller is done: calls not yet started are skipped */
};

/* Drops a reference (p->lock held), unlocks, and frees p after the last one. */
static void parallel_release(struct parallel *p)
{
	int last = --p->refs == 0;
	pthread_mutex_unlock(&p->lock);
	if (!last)
		return;
	pthread_cond_destroy(&p->idle);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

struct parallel_task {
	struct parallel *p;
	unsigned i;
};

static void parallel_worker(void *arg)
{
	struct parallel_task *task = arg;
	struct parallel *p = task->p;
	unsigned i = task->i;
	free(task);
	pthread_mutex_lock(&p->lock);
	if (!p->closed) {
		p->active++;
		p->ran++;
		pthread_mutex_unlock(&p->lock);
		p->fn(p->arg, i);
		pthread_mutex_lock(&p->lock);
		if (--p->active == 0)
			pthread_cond_broadcast(&p->idle);
	}
	parallel_release(p);
}

static void ask_workers(struct ferry__pool *pool, struct parallel *p, unsigned n)
{
	for (unsigned i = 1; i < n; i++) {
		struct parallel_task *task = malloc(sizeof(*task));
		if (!task)
			return; /* fewer helpers; the caller still does all the work */
		*task = (struct parallel_task){ p, i };
		pthread_mutex_lock(&p->lock);
		p->refs++;
		pthread_mutex_unlock(&p->lock);
		if (ferry__pool_submit(pool, parallel_worker, task) < 0) {
			free(task);
			pthread_mutex_lock(&p->lock);
			p->refs--;
			pthread_mutex_unlock(&p->lock);
			return;
		}
	}
}

unsigned ferry__pool_parallel(struct ferry__pool *pool, unsigned n,
			      void (*fn)(void *arg, unsigned i), void *arg)
{
	struct parallel *p = pool && n > 1 ? calloc(1, sizeof(*p)) : NULL;
	if (!p) {
		fn(arg, 0);
		return 1;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->idle, NULL);
	p->fn = fn;
	p->arg = arg;
	p->refs = 1;
	ask_workers(pool, p, n);
	fn(arg, 0);
	pthread_mutex_lock(&p->lock);
	p->closed = 1;
	while (p->active)
		pthread_cond_wait(&p->idle, &p->lock);
	unsigned ran = p->ran + 1;
	parallel_release(p);
	return ran;
}
