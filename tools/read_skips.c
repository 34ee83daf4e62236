/* Which files the dataset reader skipped under --on-error skip: ferry.h counts
 * them (files_skipped) but does not name them, so the tool lists the dataset
 * as the reader does and, for each finished epoch, names the files of that
 * epoch's shard that delivered no sample. The names are reported only when
 * their count agrees with the reader's. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/base.h"
#include "context/context.h"
#include "reader/reader.h"

struct entry {
	const char *path;
	size_t index;
};

struct ferry_cli_skips {
	struct ferry__dataset ds;
	struct entry *by_path;     /* ds.paths sorted by strcmp, for bsearch */
	unsigned char *seen;       /* delivered in the current epoch */
	unsigned char *skipped;    /* skipped in any epoch */
	const char **names;        /* the skipped files' paths */
	unsigned shard, nshards;
	int stick, started;
	uint64_t epoch, occurrences;
};

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

int ferry_cli_skips_open(const struct ferry_reader_config *cfg, struct ferry_cli_skips **out)
{
	struct ferry_cli_skips *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -1;
	if (ferry__dataset_list(cfg, &s->ds) < 0 ||
	    ferry__settings_shard(cfg->shard_id, cfg->num_shards, &s->shard, &s->nshards) < 0) {
		ferry_cli_skips_close(s);
		return -1;
	}
	s->stick = cfg->stick_to_shard;
	s->by_path = malloc((s->ds.n + 1) * sizeof(*s->by_path));
	s->seen = calloc(s->ds.n + 1, 1);
	s->skipped = calloc(s->ds.n + 1, 1);
	if (!s->by_path || !s->seen || !s->skipped) {
		ferry_cli_skips_close(s);
		return -1;
	}
	for (size_t i = 0; i < s->ds.n; i++)
		s->by_path[i] = (struct entry){ s->ds.paths[i], i };
	qsort(s->by_path, s->ds.n, sizeof(*s->by_path), by_path);
	*out = s;
	return 0;
}

void ferry_cli_skips_epoch_done(struct ferry_cli_skips *s)
{
	uint64_t begin, end;
	unsigned shard;

	if (!s || !s->started)
		return;
	shard = ferry__epoch_shard(s->shard, s->nshards, s->stick, s->epoch);
	ferry__shard_range(s->ds.n, shard, s->nshards, &begin, &end);
	for (uint64_t i = begin; i < end; i++)
		if (!s->seen[i]) {
			s->skipped[i] = 1;
			s->occurrences++;
		}
	memset(s->seen, 0, s->ds.n);
	s->started = 0;
}

void ferry_cli_skips_sample(struct ferry_cli_skips *s, uint64_t epoch, const char *path)
{
	struct entry key = { path, 0 }, *e;

	if (!s)
		return;
	if (s->started && epoch != s->epoch)
		ferry_cli_skips_epoch_done(s);
	s->epoch = epoch;
	s->started = 1;
	e = bsearch(&key, s->by_path, s->ds.n, sizeof(*s->by_path), by_path);
	if (e)
		s->seen[e->index] = 1;
}

size_t ferry_cli_skips_finish(struct ferry_cli_skips *s, uint64_t reader_count,
			      const char ***names)
{
	size_t n = 0;

	*names = NULL;
	if (!s || s->occurrences != reader_count || !reader_count)
		return 0;
	s->names = malloc(s->ds.n * sizeof(*s->names));
	for (size_t i = 0; s->names && i < s->ds.n; i++)
		if (s->skipped[i])
			s->names[n++] = s->ds.paths[i];
	*names = s->names;
	return s->names ? n : 0;
}

void ferry_cli_skips_close(struct ferry_cli_skips *s)
{
	if (!s)
		return;
	ferry__dataset_free(&s->ds);
	free(s->by_path);
	free(s->seen);
	free(s->skipped);
	free(s->names);
	free(s);
}
