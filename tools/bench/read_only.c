/*
 * `ferry bench`: the read-only ceiling of a file set. T threads open, fstat,
 * read whole and close the files into private host memory (each thread's own
 * buffer, allocated and touched before the timing), nothing else: no GPU, no
 * copy, no ferry code on the read path, only those four system calls. What
 * the kernel can hand any loader of these files; the reader rows are
 * measured against it. GB/s counts payload bytes (as every run does), though
 * each file is read whole, header included.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"

#define READ_ONLY_ALIGN 4096u
#define READ_ONLY_MAX_THREADS 64u

struct read_only {
	const struct ferry_bench_dataset *ds;
	size_t buffer_len;
	int direct;
};

static int read_only_thread_init(void *arg, unsigned thread, void **state)
{
	struct read_only *r = arg;
	void *buf = NULL;

	if (posix_memalign(&buf, READ_ONLY_ALIGN, r->buffer_len))
		return -ENOMEM;
	memset(buf, 0, r->buffer_len); /* the pages exist before the timing */
	*state = buf;
	return 0;
}

static void read_only_thread_fini(void *arg, void *state)
{
	free(state);
}

/* read() until size bytes or EOF into buf (of cap bytes). Returns 0 or -errno. */
static int read_whole(int fd, char *buf, size_t size, size_t cap)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = read(fd, buf + done, cap - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -FERRY_ETRUNCATED;
		done += (size_t)n;
	}
	return 0;
}

static int read_only_load_one(void *arg, void *state, unsigned file)
{
	struct read_only *r = arg;
	int fd = open(r->ds->paths[file], O_RDONLY | O_CLOEXEC | (r->direct ? O_DIRECT : 0));
	struct stat st;
	int rc;

	if (fd < 0)
		return -errno;
	rc = fstat(fd, &st) ? -errno : 0;
	if (rc == 0 && (size_t)st.st_size > r->buffer_len)
		rc = -EFBIG; /* grew since the dataset was listed */
	if (rc == 0)
		rc = read_whole(fd, state, (size_t)st.st_size, r->buffer_len);
	close(fd);
	return rc;
}

unsigned ferry_bench_read_only_threads(const struct ferry_bench_options *opt)
{
	unsigned cores = ferry_bench_cores();

	if (opt->ceiling_threads)
		return opt->ceiling_threads;
	return cores < READ_ONLY_MAX_THREADS ? cores : READ_ONLY_MAX_THREADS;
}

void ferry_bench_read_only(const struct ferry_bench_dataset *ds,
			   const struct ferry_bench_limits *lim, unsigned threads, int direct,
			   struct ferry_bench_measure *out)
{
	uint64_t cap = ds->max_file_size ? ds->max_file_size : 1;
	struct read_only r = { .ds = ds, .direct = direct };
	struct ferry_bench_tool tool = { &r, read_only_thread_init, read_only_load_one, NULL,
					 read_only_thread_fini };

	/* Room for a whole file, in O_DIRECT's units. */
	r.buffer_len = (size_t)((cap + READ_ONLY_ALIGN - 1) / READ_ONLY_ALIGN * READ_ONLY_ALIGN);
	ferry_bench_drive(ds, lim, threads, &tool, out);
}
