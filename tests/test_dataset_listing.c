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

/* root/rel, in a buffer the next call reuses. */
static const char *in(const char *root, const char *rel)
{
	static char path[4096];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return path;
}

static void make_file(const char *root, const char *rel)
{
	int fd = open(in(root, rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	T_ASSERT(fd >= 0);
	close(fd);
}

/* The tree of the test: what it lists is `want`. */
static void make_tree(const char *root, const char *outside)
{
	make_file(root, "b.npy");
	make_file(root, "a.npy");
	make_file(root, "notes.txt");
	T_OK(mkdir(in(root, "sub"), 0755));
	make_file(root, "sub/c.npy");
	T_OK(mkdir(in(root, "sub/deeper"), 0755));
	make_file(root, "sub/deeper/d.npy");
	T_OK(mkdir(in(root, "sub/a.npy.d"), 0755)); /* a matching name: walked, not listed */
	make_file(root, "sub/a.npy.d/e.npy");
	T_OK(symlink("a.npy", in(root, "link.npy")));           /* a link to a file: listed */
	T_OK(symlink("missing.npy", in(root, "dangling.npy"))); /* dangling: not listed */
	T_OK(symlink("sub", in(root, "sublink.npy")));          /* to a directory: neither */
	T_OK(symlink(outside, in(root, "outside")));            /* not walked through */
	T_OK(mkfifo(in(root, "pipe.npy"), 0644));               /* special: not listed */
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
