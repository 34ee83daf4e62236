/*
 * The trace of engine events (FERRY_TRACE): one CSV file per context, shared
 * by its lanes, one line per event written whole under one lock.
 */
#include "engine/engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"

struct ferry__trace {
	FILE *out;
	pthread_mutex_t lock;
	uint64_t start_ns;
};

int ferry__trace_open(const char *path, struct ferry__trace **out)
{
	struct ferry__trace *t = calloc(1, sizeof(*t));
	*out = NULL;
	if (!t)
		return ferry__fail(-ENOMEM, "trace: out of memory");
	t->out = fopen(path, "we");
	if (!t->out) {
		int err = errno;
		free(t);
		return ferry__fail(-err, "%s: cannot open the trace: %s", path, strerror(err));
	}
	pthread_mutex_init(&t->lock, NULL);
	t->start_ns = ferry__now_ns();
	fprintf(t->out, "time_ns,thread,lane,event,buffer,batch,dst,bytes,file,offset\n");
	*out = t;
	return 0;
}

void ferry__trace_close(struct ferry__trace *t)
{
	if (!t)
		return;
	fclose(t->out);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Writes s as one CSV field: quoted, with quotes doubled. Lock held. */
static void put_field(FILE *out, const char *s)
{
	fputc('"', out);
	for (; s && *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

void ferry__trace(struct ferry__trace *t, unsigned lane, const char *event, int buffer,
		  uint64_t batch, const void *dst, uint64_t bytes, const char *file,
		  uint64_t offset)
{
	if (!t)
		return;
	uint64_t now = ferry__now_ns() - t->start_ns;
	long tid = syscall(SYS_gettid);
	pthread_mutex_lock(&t->lock);
	fprintf(t->out, "%llu,%ld,%u,%s,%d,%llu,%p,%llu,", (unsigned long long)now, tid, lane,
		event, buffer, (unsigned long long)batch, dst, (unsigned long long)bytes);
	put_field(t->out, file);
	fprintf(t->out, ",%llu\n", (unsigned long long)offset);
	pthread_mutex_unlock(&t->lock);
}
