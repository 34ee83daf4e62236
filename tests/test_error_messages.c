/*
 * Messages that must survive long paths and odd bytes:
 *  - a bad file at the end of a 3,000-byte path: the message names the whole
 *    path and still ends with the reason (messages used to stop at 1,024);
 *  - a dataset directory holding a file deeper than PATH_MAX: opening the
 *    reader says so, naming the path, instead of leaving the file out.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_reader_util.h"

#define NAME_LEN 200

/* A directory name of NAME_LEN bytes. */
static const char *long_name(void)
{
	static char name[NAME_LEN + 1];
	memset(name, 'd', NAME_LEN);
	return name;
}

/* Descends from dir through depth new long-named directories (chdir). */
static void descend(const char *dir, int depth)
{
	T_ASSERT(chdir(dir) == 0);
	for (int i = 0; i < depth; i++) {
		T_ASSERT(mkdir(long_name(), 0755) == 0);
		T_ASSERT(chdir(long_name()) == 0);
	}
}

/* Removes file (if any) here and depth directories above it, back to dir. */
static void climb_and_remove(const char *dir, const char *file, int depth)
{
	if (file)
		T_ASSERT(unlink(file) == 0);
	for (int i = 0; i < depth; i++) {
		T_ASSERT(chdir("..") == 0);
		T_ASSERT(rmdir(long_name()) == 0);
	}
	T_ASSERT(chdir(dir) == 0);
}

static void write_bad(const char *name)
{
	FILE *f = fopen(name, "wb");
	T_ASSERT(f && fputs("this is not a numpy file", f) >= 0 && fclose(f) == 0);
}

static void test_long_path(const char *dir)
{
	char path[PATH_MAX];
	struct ferry_array_info info;
	int depth = 15; /* 15 x 201 bytes: about 3,000 */
	descend(dir, depth);
	write_bad("x.npy");
	T_ASSERT(getcwd(path, sizeof(path)));
	strcat(path, "/x.npy");
	int rc = ferry_info(path, &info);
	T_EQ(rc, -FERRY_EFORMAT);
	const char *msg = ferry_last_error();
	if (strncmp(msg, path, strlen(path)) || !strstr(msg + strlen(path), "magic"))
		T_FAIL("message of %zu bytes lost the path or the reason: ...%s",
		       strlen(msg), msg + (strlen(msg) > 120 ? strlen(msg) - 120 : 0));
	climb_and_remove(dir, "x.npy", depth);
}

static void test_walk_too_deep(ferry_ctx *ctx, const char *dir)
{
	struct ferry_reader_config cfg = { .root = dir, .num_shards = 1 };
	ferry_reader *r;
	int depth = 22; /* 22 x 201 bytes: over PATH_MAX */
	tr_write_vectors(dir, 1);
	descend(dir, depth);
	tr_write_vectors(".", 1);
	T_ASSERT(chdir(dir) == 0);
	int rc = ferry_reader_open(ctx, &cfg, &r);
	if (rc != -ENAMETOOLONG || !strstr(ferry_last_error(), "PATH_MAX") ||
	    !strstr(ferry_last_error(), dir))
		T_FAIL("a file past PATH_MAX: %s (%s)", ferry_strerror(rc), ferry_last_error());
	T_ASSERT(chdir(dir) == 0);
	for (int i = 0; i < depth; i++)
		T_ASSERT(chdir(long_name()) == 0);
	climb_and_remove(dir, "f000.npy", depth);
}

int main(void)
{
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	char *dir = strdup(t_tmpdir());
	ferry_ctx *ctx = tr_ctx(4096, 1);
	test_long_path(dir);
	test_walk_too_deep(ctx, dir);
	T_ASSERT(chdir("/") == 0);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	printf("long paths: messages keep the path and the reason; too deep is said\n");
	return T_EXIT_PASS;
}
