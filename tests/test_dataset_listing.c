/*
 * Listing a dataset directory: regular files whose names match the filter,
 * in subdirectories too, and symbolic links to such files are listed, sorted
 * by the path below the root; directories reached through a symbolic link,
 * dangling links, links to directories, special files (a FIFO) and names
 * the filter rejects are not. An empty tree is a clear error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "reader/reader.h"

static void make_file(const char *root, const char *rel)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	T_ASSERT(fd >= 0);
	close(fd);
}

static void make_dir(const char *root, const char *rel)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	T_OK(mkdir(path, 0755));
}

static void make_link(const char *root, const char *target, const char *rel)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	T_OK(symlink(target, path));
}

/* The tree of the test: what it lists is `want`. */
static void make_tree(const char *root, const char *outside)
{
	make_file(root, "b.npy");
	make_file(root, "a.npy");
	make_file(root, "notes.txt");
	make_dir(root, "sub");
	make_file(root, "sub/c.npy");
	make_dir(root, "sub/deeper");
	make_file(root, "sub/deeper/d.npy");
	make_dir(root, "sub/a.npy.d");      /* a directory whose name matches: walked, not listed */
	make_file(root, "sub/a.npy.d/e.npy");
	make_link(root, "a.npy", "link.npy");             /* a link to a file: listed */
	make_link(root, "missing.npy", "dangling.npy");   /* dangling: not listed */
	make_link(root, "sub", "sublink.npy");            /* a link to a directory: neither */
	make_link(root, outside, "outside");              /* a linked directory is not walked */
	char fifo[4096];
	snprintf(fifo, sizeof(fifo), "%s/pipe.npy", root);
	T_OK(mkfifo(fifo, 0644));                         /* special: not listed */
}

static const char *const want[] = {
	"a.npy", "b.npy", "link.npy", "sub/a.npy.d/e.npy", "sub/c.npy", "sub/deeper/d.npy",
};

int main(void)
{
	char *root = strdup(t_tmpdir()), *outside = strdup(t_tmpdir()); /* t_tmpdir's is static */
	struct ferry__dataset ds;
	T_ASSERT(root && outside);
	make_file(outside, "x.npy");
	make_tree(root, outside);
	struct ferry_reader_config cfg = { .root = root };
	T_OK(ferry__dataset_list(&cfg, &ds));
	T_EQ(ds.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < ds.n; i++)
		if (strcmp(ds.keys[i], want[i]))
			T_FAIL("listed %zu: '%s', want '%s'", i, ds.keys[i], want[i]);
	ferry__dataset_free(&ds);

	cfg.filter = "*.txt";
	T_OK(ferry__dataset_list(&cfg, &ds));
	T_EQ(ds.n, 1);
	T_ASSERT(!strcmp(ds.keys[0], "notes.txt"));
	ferry__dataset_free(&ds);

	cfg.filter = "*.none";
	T_EQ(ferry__dataset_list(&cfg, &ds), -FERRY_ECONFIG);
	T_ASSERT(strstr(ferry_last_error(), root));
	t_rmtree(root);
	t_rmtree(outside);
	free(root);
	free(outside);
	printf("dataset listing: ok\n");
	return T_EXIT_PASS;
}
