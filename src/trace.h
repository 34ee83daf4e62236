/*
 * FERRY_TRACE=PATH: a CSV trace of engine events, so that a user chasing a
 * corrupt output can see which buffer fed which copy. Columns:
 * time_ns,thread,event,buffer,batch,dst,bytes,file,offset
 */
#ifndef FERRY_TRACE_H
#define FERRY_TRACE_H

#include <stdint.h>

struct ferry__trace;

/* Opens the trace named by FERRY_TRACE, or returns NULL when it is unset. */
struct ferry__trace *ferry__trace_open_env(void);
/* Opens a trace at path (NULL on failure). */
struct ferry__trace *ferry__trace_open(const char *path);
void ferry__trace_close(struct ferry__trace *t);
/* Appends one line; t may be NULL (then it does nothing). */
void ferry__trace(struct ferry__trace *t, const char *event, int buffer, uint64_t batch,
		  const void *dst, uint64_t bytes, const char *file, uint64_t offset);

#endif
