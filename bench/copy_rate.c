/*
 * copy_rate: what one host-to-device copy costs on this device, the ceiling
 * under the reader's batches of small files (one copy a batch). From one
 * thread, copies of each size out of a pinned ring into device memory,
 * spread over 1 and 4 streams (the reader's lanes), issued one call a copy
 * and BATCH at a time through copy_batch_async. One JSON line a
 * measurement: copies/s and GB/s until every copy landed, and the issuing
 * thread's time a copy (the launch cost the thread that launches pays).
 * Usage: copy_rate [bytes...]   (default 16K 64K 256K 1M 4M)
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/base.h"
#include "context/context.h"

#define RING 64               /* copies whose sources and destinations differ */
#define BATCH 8               /* copies a batched call takes */
#define BYTES_EACH (1ull << 30) /* what each measurement moves, at least */
#define COPIES_MIN 20000
#define STREAMS_MAX 4

static void check(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "copy_rate: %s: %s (%s)\n", what, ferry_strerror(rc),
			ferry_last_error());
		exit(1);
	}
}

struct setup {
	struct ferry__device *dev;
	struct ferry__stream *streams[STREAMS_MAX];
	char *src, *dst;
};

/* Copies [i, i + n) of the ring's pattern, as copy_batch_async takes them. */
static void ring_ops(const struct setup *s, size_t len, uint64_t i, unsigned n,
		     struct ferry__copy_op *ops)
{
	for (unsigned k = 0; k < n; k++) {
		size_t at = (size_t)((i + k) % RING) * len;
		ops[k] = (struct ferry__copy_op){ s->dst + at, s->src + at, len };
	}
}

/* One measurement: copies of len over nstreams, batch at a time (1: one
 * copy_async call each). Prints its line. */
static void measure(struct setup *s, size_t len, unsigned nstreams, unsigned batch)
{
	const struct ferry__device_ops *ops = s->dev->ops;
	uint64_t copies = BYTES_EACH / len < COPIES_MIN ? COPIES_MIN : BYTES_EACH / len;
	struct ferry__copy_op run[BATCH];
	copies -= copies % (batch * nstreams);
	uint64_t t0 = ferry__now_ns();
	for (uint64_t i = 0; i < copies; i += batch) {
		struct ferry__stream *st = s->streams[i / batch % nstreams];
		ring_ops(s, len, i, batch, run);
		if (batch == 1)
			check(ops->copy_async(s->dev, st, run[0].dst, run[0].src, len, FERRY__H2D), "copy");
		else
			check(ops->copy_batch_async(s->dev, st, run, batch, FERRY__H2D), "batch copy");
	}
	uint64_t issued = ferry__now_ns();
	for (unsigned k = 0; k < nstreams; k++)
		check(ops->stream_sync(s->dev, s->streams[k]), "sync");
	double secs = (double)(ferry__now_ns() - t0) / 1e9;
	printf("{\"bench\":\"copy_rate\",\"device\":\"%s\",\"bytes\":%zu,\"streams\":%u,"
	       "\"per_call\":%u,\"copies\":%llu,\"copies_per_s\":%.0f,\"gbps\":%.2f,"
	       "\"issue_us_per_copy\":%.3f}\n",
	       ops->name, len, nstreams, batch, (unsigned long long)copies, copies / secs,
	       copies * (double)len / secs / 1e9, (double)(issued - t0) / 1e3 / copies);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const size_t defaults[] = { 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20 };
	struct setup s;
	size_t biggest = 0;
	int nsizes = argc > 1 ? argc - 1 : 5;
	size_t *sizes = malloc(sizeof(size_t) * (size_t)nsizes);
	if (!sizes)
		return 1;
	for (int i = 0; i < nsizes; i++) {
		uint64_t v = defaults[i < 5 ? i : 0];
		if (argc > 1 && (ferry__parse_size(argv[i + 1], &v) < 0 || !v || v > (1u << 30))) {
			fprintf(stderr, "copy_rate: '%s' is not a size (1 byte to 1G, e.g. 64K)\n", argv[i + 1]);
			return 2;
		}
		sizes[i] = (size_t)v;
		biggest = sizes[i] > biggest ? sizes[i] : biggest;
	}
	check(ferry__ctx_open_device(NULL, &s.dev), "device");
	check(s.dev->ops->pinned_alloc(s.dev, RING * biggest, (void **)&s.src), "pinned memory");
	check(s.dev->ops->mem_alloc(s.dev, RING * biggest, (void **)&s.dst), "device memory");
	for (unsigned k = 0; k < STREAMS_MAX; k++)
		check(s.dev->ops->stream_create(s.dev, &s.streams[k]), "stream");
	for (int i = 0; i < nsizes; i++)
		for (unsigned nstreams = 1; nstreams <= STREAMS_MAX; nstreams *= 4)
			for (unsigned batch = 1; batch <= BATCH; batch *= BATCH)
				if (batch == 1 || s.dev->ops->copy_batch_async)
					measure(&s, sizes[i], nstreams, batch);
	for (unsigned k = 0; k < STREAMS_MAX; k++)
		s.dev->ops->stream_destroy(s.dev, s.streams[k]);
	s.dev->ops->mem_free(s.dev, s.dst);
	s.dev->ops->pinned_free(s.dev, s.src, RING * biggest);
	s.dev->ops->close(s.dev);
	free(sizes);
	return 0;
}
