#include "engine/engine.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"

struct ferry__trace {
	FILE *out;
	pthread_mutex_t lock;
	uint64_t start_ns;
};

struct ferry__trace *ferry__trace_open(const char *path)
{
	struct ferry__trace *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->out = fopen(path, "w");
	if (!t->out) {
		free(t);
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->start_ns = ferry__now_ns();
	fprintf(t->out, "time_ns,thread,event,buffer,batch,dst,bytes,file,offset\n");
	return t;
}

struct ferry__trace *ferry__trace_open_env(void)
{
	const char *path = getenv("FERRY_TRACE");
	if (!path || !*path)
		return NULL;
	struct ferry__trace *t = ferry__trace_open(path);
	if (!t)
		fprintf(stderr, "ferry: FERRY_TRACE=%s: cannot open; tracing is off\n", path);
	return t;
}

void ferry__trace_close(struct ferry__trace *t)
{
	if (!t)
		return;
	fclose(t->out);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

void ferry__trace(struct ferry__trace *t, const char *event, int buffer, uint64_t batch,
		  const void *dst, uint64_t bytes, const char *file, uint64_t offset)
{
	if (!t)
		return;
	uint64_t now = ferry__now_ns() - t->start_ns;
	long tid = syscall(SYS_gettid);
	pthread_mutex_lock(&t->lock);
	fprintf(t->out, "%llu,%ld,%s,%d,%llu,%p,%llu,%s,%llu\n", (unsigned long long)now, tid,
		event, buffer, (unsigned long long)batch, dst, (unsigned long long)bytes,
		file ? file : "", (unsigned long long)offset);
	pthread_mutex_unlock(&t->lock);
}
