/*
 * Files that are not regular files never block an entry point: a FIFO named
 * x.npy (whose open would wait for a writer), a character device and a
 * directory are refused at once with an error naming them, through
 * ferry_info, ferry_load, ferry_load_async, ferry_load_into, ferry_read_range
 * and the reader, buffered and with O_DIRECT.
 */
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_reader_util.h"

static const char *current;

static void watchdog(int sig)
{
	static const char msg[] = "FAIL: an open of a special file blocked: ";
	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	(void)!write(2, current, strlen(current));
	(void)!write(2, "\n", 1);
	_exit(T_EXIT_FAIL);
}

static void expect_refused(int rc, const char *path, const char *call)
{
	alarm(0);
	if (rc >= 0)
		T_FAIL("%s(%s) succeeded", call, path);
	if (!strstr(ferry_last_error(), path))
		T_FAIL("%s(%s): message does not name the file: %s", call, path, ferry_last_error());
}

static void try_reader(ferry_ctx *ctx, const char *path)
{
	const char *files[1] = { path };
	struct ferry_reader_config cfg = { .files = files, .nfiles = 1, .epochs = 1,
					   .num_shards = 1 };
	ferry_reader *r;
	ferry_batch *b = NULL;
	T_OK(ferry_reader_open(ctx, &cfg, &r));
	alarm(10);
	expect_refused(ferry_reader_next(r, &b), path, "ferry_reader_next");
	T_OK(ferry_reader_close(r));
}

static void try_all(ferry_ctx *ctx, const char *path)
{
	struct ferry_array_info info;
	ferry_array *a;
	void *dst;
	current = path;
	T_OK(ferry_device_alloc(ctx, 4096, &dst));
	alarm(10);
	expect_refused(ferry_info(path, &info), path, "ferry_info");
	alarm(10);
	expect_refused(ferry_load(ctx, path, &a), path, "ferry_load");
	alarm(10);
	expect_refused(ferry_load_async(ctx, path, &a), path, "ferry_load_async");
	alarm(10);
	expect_refused(ferry_load_into(ctx, path, dst, 4096, NULL), path, "ferry_load_into");
	alarm(10);
	expect_refused(ferry_read_range(ctx, path, 0, 16, dst), path, "ferry_read_range");
	try_reader(ctx, path);
	ferry_device_free(ctx, dst);
}

int main(void)
{
	signal(SIGALRM, watchdog);
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	char *dir = strdup(t_tmpdir());
	char *fifo = strdup(tr_path(dir, "x.npy"));
	char *subdir = strdup(tr_path(dir, "d.npy"));
	T_ASSERT(mkfifo(fifo, 0644) == 0);
	T_ASSERT(mkdir(subdir, 0755) == 0);
	for (int direct = 0; direct < 2; direct++) {
		struct ferry_ctx_options o = { .gpu = -1, .direct = direct, .threads = 2 };
		ferry_ctx *ctx;
		T_OK(ferry_ctx_create(&ctx, &o));
		try_all(ctx, fifo);
		try_all(ctx, "/dev/null");
		try_all(ctx, subdir);
		T_OK(ferry_ctx_destroy(ctx));
	}
	t_rmtree(dir);
	free(dir), free(fifo), free(subdir);
	printf("FIFOs, devices and directories: refused at once by every entry point\n");
	return T_EXIT_PASS;
}
