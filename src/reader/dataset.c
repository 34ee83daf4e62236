/*
 * Datasets for the reader: listing (a directory tree with a glob filter, a file
 * list, explicit paths), sorting, shards and the per-epoch shuffle.
 */
#include "reader/reader.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"

/* A growing list of (path, key) pairs. */
struct listing {
	struct ferry__dataset ds;
	size_t cap;
	const char *root;  /* may be NULL */
};

static char *join_path(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);

	if (!p)
		return NULL;
	memcpy(p, dir, a);
	p[a] = '/';
	memcpy(p + a + 1, name, b + 1);
	return p;
}

/* Adds key; its path is root/key unless key is absolute or there is no root. */
static int listing_add(struct listing *l, const char *key)
{
	struct ferry__dataset *ds = &l->ds;

	if (ds->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		char **p = realloc(ds->paths, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		ds->paths = p;
		char **k = realloc(ds->keys, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		ds->keys = k;
		l->cap = cap;
	}
	char *k = strdup(key);
	char *p = (key[0] == '/' || !l->root) ? strdup(key) : join_path(l->root, key);
	if (!k || !p) {
		free(k);
		free(p);
		return -ENOMEM;
	}
	ds->keys[ds->n] = k;
	ds->paths[ds->n] = p;
	ds->n++;
	return 0;
}

/* Says why child cannot be listed: too long to open, or unreadable. */
static int child_error(const char *child, int err)
{
	if (err == ENAMETOOLONG || strlen(child) >= PATH_MAX)
		return ferry__fail(-ENAMETOOLONG, "%.200s...: a path in the dataset is %zu bytes, "
				   "longer than PATH_MAX (%d): ferry cannot open it",
				   child, strlen(child), PATH_MAX);
	return ferry__fail(-err, "%s: %s", child, strerror(err));
}

/* The filter of a root walk: the config's, else every .npy (.npz with npz_key). */
static const char *default_filter(const struct ferry_reader_config *cfg)
{
	return cfg->filter ? cfg->filter : cfg->npz_key ? "*.npz" : "*.npy";
}

static int walk(struct listing *l, const char *rel, const char *filter);

/* What an entry is (S_IFDIR, S_IFREG, S_IFLNK, ...): from its directory
 * entry where the file system says (no system call), else from lstat.
 * Returns 0 or -errno (-ENOENT: gone since readdir). */
static int entry_type(const char *path, unsigned char d_type, mode_t *type)
{
	struct stat st;
	if (d_type != DT_UNKNOWN) {
		*type = DTTOIF(d_type);
		return 0;
	}
	if (lstat(path, &st) < 0)
		return -errno;
	*type = st.st_mode & S_IFMT;
	return 0;
}

/* Whether path, a symbolic link, leads to a regular file. */
static int leads_to_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Adds the entry rel/name: a directory (not through a symbolic link) is
 * walked, a regular file (or a link to one) whose name matches is listed. */
static int visit(struct listing *l, const char *child_rel, const char *name, unsigned char d_type,
		 const char *filter)
{
	char *child = join_path(l->root, child_rel);
	mode_t type = 0;
	int rc = 0;

	if (!child)
		return -ENOMEM;
	if (strlen(child) >= PATH_MAX)
		rc = child_error(child, ENAMETOOLONG);
	else if ((rc = entry_type(child, d_type, &type)) < 0)
		rc = rc == -ENOENT ? 0 : child_error(child, -rc); /* gone since readdir */
	else if (type == S_IFDIR)
		rc = walk(l, child_rel, filter);
	else if (fnmatch(filter, name, 0) == 0 &&
		 (type == S_IFREG || (type == S_IFLNK && leads_to_file(child))))
		rc = listing_add(l, child_rel);
	free(child);
	return rc;
}

/* Walks root/rel (rel "" for the root itself), adding files whose name
 * matches filter. Symbolic links to directories are not followed. */
static int walk(struct listing *l, const char *rel, const char *filter)
{
	char *dir = rel[0] ? join_path(l->root, rel) : strdup(l->root);
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (!dir)
		return -ENOMEM;
	d = opendir(dir);
	if (!d) {
		rc = ferry__fail(-errno, "%s: %s", dir, strerror(errno));
		free(dir);
		return rc;
	}
	while (rc == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *child_rel = rel[0] ? join_path(rel, e->d_name) : strdup(e->d_name);
		rc = child_rel ? visit(l, child_rel, e->d_name, e->d_type, filter) : -ENOMEM;
		free(child_rel);
	}
	closedir(d);
	free(dir);
	return rc;
}

static void trim_trailing_space(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = 0;
}

static int read_file_list(struct listing *l, const char *list)
{
	FILE *fp = fopen(list, "r");
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;

	if (!fp)
		return ferry__fail(-errno, "%s: %s", list, strerror(errno));
	while (rc == 0 && getline(&line, &cap, fp) >= 0) {
		char *s = line;
		trim_trailing_space(s);
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s && *s != '#')
			rc = listing_add(l, s);
	}
	if (rc == 0 && ferror(fp))
		rc = ferry__fail(-EIO, "%s: read error", list);
	free(line);
	fclose(fp);
	return rc;
}

/* The directory holding path ("." when none), in new memory. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

static int compare_keys(const void *a, const void *b, void *arg)
{
	char **keys = arg;
	return strcmp(keys[*(const size_t *)a], keys[*(const size_t *)b]);
}

/* Sorts paths and keys together by key. */
static int sort_dataset(struct ferry__dataset *ds)
{
	size_t *order = malloc((ds->n ? ds->n : 1) * sizeof(*order));
	char **paths = malloc((ds->n ? ds->n : 1) * sizeof(*paths));
	char **keys = malloc((ds->n ? ds->n : 1) * sizeof(*keys));

	if (!order || !paths || !keys) {
		free(order), free(paths), free(keys);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ds->n; i++)
		order[i] = i;
	qsort_r(order, ds->n, sizeof(*order), compare_keys, ds->keys);
	for (size_t i = 0; i < ds->n; i++) {
		paths[i] = ds->paths[order[i]];
		keys[i] = ds->keys[order[i]];
	}
	free(ds->paths), free(ds->keys), free(order);
	ds->paths = paths;
	ds->keys = keys;
	return 0;
}

static int count_sources(const struct ferry_reader_config *cfg)
{
	return (cfg->file_list != NULL) + (cfg->files != NULL) +
	       (cfg->root != NULL && !cfg->file_list && !cfg->files);
}

static int list_sources(const struct ferry_reader_config *cfg, struct listing *l)
{
	if (cfg->files) {
		for (size_t i = 0; i < cfg->nfiles; i++) {
			int rc = listing_add(l, cfg->files[i]);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	if (cfg->file_list)
		return read_file_list(l, cfg->file_list);
	return walk(l, "", default_filter(cfg));
}

int ferry__dataset_list(const struct ferry_reader_config *cfg, struct ferry__dataset *out)
{
	struct listing l = { .root = cfg->root };
	char *list_dir = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (count_sources(cfg) != 1)
		return ferry__fail(-FERRY_ECONFIG,
				   "reader: give exactly one of root, file_list and files");
	if (cfg->file_list && !cfg->root) {
		list_dir = dir_of(cfg->file_list);
		if (!list_dir)
			return -ENOMEM;
		l.root = list_dir;
	}
	rc = list_sources(cfg, &l);
	if (rc == 0)
		rc = sort_dataset(&l.ds);
	if (rc == 0 && l.ds.n == 0)
		rc = ferry__fail(-FERRY_ECONFIG, "%s: no files%s%s", cfg->file_list ? cfg->file_list :
				 cfg->root ? cfg->root : "reader",
				 cfg->file_list || cfg->files ? "" : " match ",
				 cfg->file_list || cfg->files ? "" : default_filter(cfg));
	free(list_dir);
	if (rc < 0) {
		if (rc == -ENOMEM)
			ferry__fail(rc, "reader: out of memory listing the dataset");
		ferry__dataset_free(&l.ds);
		return rc;
	}
	*out = l.ds;
	return 0;
}

void ferry__dataset_free(struct ferry__dataset *ds)
{
	for (size_t i = 0; i < ds->n; i++) {
		free(ds->paths[i]);
		free(ds->keys[i]);
	}
	free(ds->paths);
	free(ds->keys);
	memset(ds, 0, sizeof(*ds));
}

void ferry__shard_range(uint64_t count, unsigned shard, unsigned nshards, uint64_t *begin,
			uint64_t *end)
{
	/* In 128 bits, so count * (shard + 1) cannot overflow. */
	unsigned __int128 c = count;
	*begin = (uint64_t)(c * shard / nshards);
	*end = (uint64_t)(c * (shard + 1u) / nshards);
}

unsigned ferry__epoch_shard(unsigned shard, unsigned nshards, int stick, uint64_t epoch)
{
	if (stick)
		return shard;
	return (unsigned)((shard + epoch % nshards) % nshards);
}

uint64_t ferry__splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A uniform integer in [0, bound), without modulo bias. */
static uint64_t uniform_below(uint64_t *state, uint64_t bound)
{
	uint64_t threshold = (0 - bound) % bound;
	uint64_t x;

	do
		x = ferry__splitmix64(state);
	while (x < threshold);
	return x % bound;
}

void ferry__shuffle(uint64_t *idx, uint64_t n, uint64_t seed, uint64_t epoch)
{
	uint64_t mix = seed;
	uint64_t state = ferry__splitmix64(&mix);
	uint64_t emix = epoch ^ 0x5851f42d4c957f2dull;

	state ^= ferry__splitmix64(&emix);
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = uniform_below(&state, i);
		uint64_t t = idx[i - 1];
		idx[i - 1] = idx[j];
		idx[j] = t;
	}
}
