/*
 * How fast can T threads read many small files whole into private memory,
 * with no GPU: the measurement behind the reader's choice of system calls for
 * small files (issue 18: io_uring's linked open/read/close against pread).
 *
 *   plain  open, read, close (what the read-only ceiling does, size known)
 *   ferry  open, fstat, preadv (header + payload), fstat, close: the reader's
 *          cached-header path with its identity checks
 *   uring  per thread one ring with a sparse table of registered files; files
 *          in batches of BATCH: openat into a fixed slot, linked to a read
 *          from that slot, linked to a close of it; one submit a batch
 *   uring_checked  the same with a statx of the path after the read: the
 *          identity ferry compares with its header cache's
 *
 * usage: small_reads DIR THREADS MODE SECONDS   (prints one JSON line)
 * The files are the .npy files of DIR, listed and sized once before timing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define BATCH 32
#define MAX_FILE (64u << 20)

struct files {
	char **path;
	size_t *size;
	size_t n;
};

struct job {
	const struct files *fs;
	const char *mode;
	double seconds;
	atomic_size_t next;
	atomic_ulong done, bytes, errors;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int list_files(const char *dir, struct files *fs)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t cap = 0;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		struct stat st;
		char path[4096];
		if (len < 5 || strcmp(e->d_name + len - 4, ".npy"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) || st.st_size > MAX_FILE)
			continue;
		if (fs->n == cap) {
			cap = cap ? 2 * cap : 1024;
			fs->path = realloc(fs->path, cap * sizeof(*fs->path));
			fs->size = realloc(fs->size, cap * sizeof(*fs->size));
		}
		fs->path[fs->n] = strdup(path);
		fs->size[fs->n++] = (size_t)st.st_size;
	}
	closedir(d);
	return fs->n ? 0 : -1;
}

/* One file the way mode says, into buf; returns the bytes read or -1. */
static ssize_t read_plain(const char *path, size_t size, char *buf, int checks)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;
	if (fd < 0)
		return -1;
	if (checks) {
		struct iovec iov[2] = { { buf, 128 }, { buf + 128, size > 128 ? size - 128 : 0 } };
		fstat(fd, &st);
		got = preadv(fd, iov, 2, 0);
		fstat(fd, &st);
	} else {
		got = read(fd, buf, size);
	}
	close(fd);
	return got;
}

static void run_plain(struct job *j, char *buf, int checks)
{
	double end = now() + j->seconds;
	while (now() < end) {
		size_t i = atomic_fetch_add(&j->next, 1) % j->fs->n;
		ssize_t got = read_plain(j->fs->path[i], j->fs->size[i], buf, checks);
		if (got != (ssize_t)j->fs->size[i])
			atomic_fetch_add(&j->errors, 1);
		atomic_fetch_add(&j->done, 1);
		atomic_fetch_add(&j->bytes, (unsigned long)(got > 0 ? got : 0));
	}
}

static void queue_statx(struct io_uring *ring, const char *path, struct statx *out)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_prep_statx(sqe, AT_FDCWD, path, 0, STATX_BASIC_STATS, out);
	sqe->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(sqe, 0);
}

/* Queues open -> read -> close of file i in slot k (checked: statx around). */
static void queue_file(struct io_uring *ring, const struct files *fs, size_t i, unsigned k,
		       char *dst, struct statx *sx)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_prep_openat_direct(sqe, AT_FDCWD, fs->path[i], O_RDONLY, 0, k);
	sqe->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(sqe, 0);
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_read(sqe, (int)k, dst, (unsigned)fs->size[i], 0);
	sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_LINK;
	io_uring_sqe_set_data64(sqe, 1 + i);
	if (sx)
		queue_statx(ring, fs->path[i], &sx[1]);
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_close_direct(sqe, k);
	io_uring_sqe_set_data64(sqe, 0);
}

static void run_uring(struct job *j, char *buf, int checked)
{
	struct io_uring ring;
	static _Thread_local struct statx sx[BATCH][2];
	unsigned per = checked ? 4 : 3;
	double end = now() + j->seconds;
	if (io_uring_queue_init(5 * BATCH, &ring, 0) || io_uring_register_files_sparse(&ring, BATCH)) {
		atomic_fetch_add(&j->errors, 1);
		return;
	}
	while (now() < end) {
		for (unsigned k = 0; k < BATCH; k++)
			queue_file(&ring, j->fs, atomic_fetch_add(&j->next, 1) % j->fs->n, k,
				   buf + (size_t)k * MAX_FILE / BATCH, checked ? sx[k] : NULL);
		io_uring_submit_and_wait(&ring, per * BATCH);
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			uint64_t tag = io_uring_cqe_get_data64(cqe);
			if (tag && cqe->res != (int)j->fs->size[tag - 1])
				atomic_fetch_add(&j->errors, 1);
			if (tag) {
				atomic_fetch_add(&j->done, 1);
				atomic_fetch_add(&j->bytes, (unsigned long)(cqe->res > 0 ? cqe->res : 0));
			}
			seen++;
		}
		io_uring_cq_advance(&ring, seen);
	}
	io_uring_queue_exit(&ring);
}

static void *worker(void *arg)
{
	struct job *j = arg;
	char *buf = aligned_alloc(4096, MAX_FILE);
	if (!strncmp(j->mode, "uring", 5))
		run_uring(j, buf, !strcmp(j->mode, "uring_checked"));
	else
		run_plain(j, buf, !strcmp(j->mode, "ferry"));
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	struct files fs = { 0 };
	if (argc != 5 || list_files(argv[1], &fs)) {
		fprintf(stderr, "usage: small_reads DIR THREADS plain|ferry|uring|uring_checked SECONDS\n");
		return 2;
	}
	unsigned threads = (unsigned)atoi(argv[2]);
	struct job j = { .fs = &fs, .mode = argv[3], .seconds = atof(argv[4]) };
	pthread_t tid[256];
	double t0 = now();
	for (unsigned i = 0; i < threads && i < 256; i++)
		pthread_create(&tid[i], NULL, worker, &j);
	for (unsigned i = 0; i < threads && i < 256; i++)
		pthread_join(tid[i], NULL);
	double secs = now() - t0;
	printf("{\"mode\":\"%s\",\"threads\":%u,\"files\":%zu,\"file_bytes\":%zu,"
	       "\"files_per_s\":%.0f,\"gbps\":%.3f,\"errors\":%lu}\n", j.mode, threads, fs.n,
	       fs.size[0], (double)j.done / secs, (double)j.bytes / secs / 1e9, j.errors);
	return 0;
}
