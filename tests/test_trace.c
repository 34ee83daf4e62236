/*
 * FERRY_TRACE with several lanes: one file per context, every event of every
 * lane in it, each line whole. Eight threads load files through 4 lanes; the
 * trace must then hold exactly one "queue" line and one "copy" line per
 * planned copy, one "lease" per buffer read into, as many "reclaim" lines as
 * leases (every buffer came back), well-formed lines of 10 fields, lines
 * of every lane, and on every lane a "growing" line before each "grow". An unwritable FERRY_TRACE is an error naming the variable.
 */
#include <pthread.h>

#include "context/context.h"
#include "test_reader_util.h"

#define NTHREADS 8
#define NFILES 6
#define CHUNK 4096
#define ROUNDS 5

struct counts {
	unsigned long lines, queue, copy, lease, reclaim, give_back, launch;
	unsigned long growing[4], grown[4]; /* per lane: growths begun, ended */
	unsigned lanes_seen;
};

static struct tr_files files;
static ferry_ctx *ctx;

static void *load_some(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	for (unsigned k = 0; k < ROUNDS * NFILES; k++) {
		unsigned i = (id + k) % NFILES;
		ferry_array *a;
		T_OK(ferry_load(ctx, files.paths[i], &a));
		tr_check_loaded(ctx, ferry_array_data(a), &files, i);
		ferry_array_free(a);
	}
	return NULL;
}

static void count_line(struct counts *c, char *line)
{
	char *f[12];
	if (t_csv_fields(line, f, 12) != 10)
		T_FAIL("malformed trace line: %s", line);
	unsigned lane = (unsigned)atoi(f[2]);
	T_ASSERT(lane < 4);
	c->lanes_seen |= 1u << lane;
	const char *ev = f[3];
	c->queue += !strcmp(ev, "queue");
	c->copy += !strcmp(ev, "copy");
	c->lease += !strcmp(ev, "lease");
	c->reclaim += !strcmp(ev, "reclaim");
	c->give_back += !strcmp(ev, "give_back");
	c->launch += !strcmp(ev, "launch");
	if (!strcmp(ev, "growing")) /* one growth at a time on a lane: begun, then ended */
		T_EQ(c->growing[lane]++, c->grown[lane]);
	if (!strcmp(ev, "grow"))
		T_EQ(++c->grown[lane], c->growing[lane]);
	c->lines++;
}

static struct counts read_trace(const char *path)
{
	struct counts c = { 0 };
	char line[8192];
	FILE *f = fopen(path, "r");
	T_ASSERT(f && fgets(line, sizeof(line), f));
	T_ASSERT(!strcmp(line, "time_ns,thread,lane,event,buffer,batch,dst,bytes,file,offset\n"));
	while (fgets(line, sizeof(line), f)) {
		T_ASSERT(strchr(line, '\n'));
		*strchr(line, '\n') = 0;
		count_line(&c, line);
	}
	fclose(f);
	return c;
}

static void make_files(void)
{
	files.dir = strdup(t_tmpdir());
	files.n = NFILES;
	for (unsigned i = 0; i < NFILES; i++) {
		char name[32], fill[4] = { 0 };
		int64_t len = 1000 + 1500 * i, start = 0; /* 1 to 8 chunks of payload */
		snprintf(name, sizeof(name), "f,%u.npy", i); /* a comma: the field is quoted */
		files.paths[i] = strdup(tr_path(files.dir, name));
		tr_write_npy(files.paths[i], FERRY_INT32, 0, 0, 1, &len, 60 + i);
		files.want[i] = tr_reference(60 + i, 4, 0, 0, 1, &len, &start, &len, fill,
					     &files.nbytes[i]);
	}
}

/* Copies of one load: one per chunk the payload (at offset 128) touches. */
static unsigned long copies_per_round(void)
{
	unsigned long n = 0;
	for (unsigned i = 0; i < NFILES; i++)
		n += (128 + files.nbytes[i] + CHUNK - 1) / CHUNK;
	return n;
}

int main(void)
{
	struct ferry_ctx_options o = { .gpu = -1, .direct = 0, .chunk_size = CHUNK, .threads = 1,
				       .lanes = 4, .max_buffers = 32, .io = "posix" };
	pthread_t tid[NTHREADS];
	make_files();
	char *trace = strdup(tr_path(files.dir, "trace.csv"));
	setenv("FERRY_TRACE", "/nonexistent-dir/trace.csv", 1);
	T_EQ(ferry_ctx_create(&ctx, &o), -FERRY_ECONFIG);
	T_ASSERT(strstr(ferry_last_error(), "FERRY_TRACE=/nonexistent-dir/trace.csv"));
	setenv("FERRY_TRACE", trace, 1);
	T_OK(ferry_ctx_create(&ctx, &o));
	unsetenv("FERRY_TRACE");
	for (uintptr_t i = 0; i < NTHREADS; i++)
		T_ASSERT(pthread_create(&tid[i], NULL, load_some, (void *)i) == 0);
	for (unsigned i = 0; i < NTHREADS; i++)
		pthread_join(tid[i], NULL);
	T_OK(ferry_ctx_destroy(ctx));
	struct counts c = read_trace(trace);
	unsigned long copies = copies_per_round() * ROUNDS * NTHREADS;
	T_EQ(c.queue, copies);
	T_EQ(c.copy, copies);
	T_EQ(c.lease, copies); /* a read per chunk, a buffer per read */
	T_EQ(c.reclaim + c.give_back, c.lease);
	T_ASSERT(c.launch > 0);
	T_EQ(c.lanes_seen, 0xf);
	for (unsigned lane = 0; lane < 4; lane++) /* every lane began with an empty pool */
		T_ASSERT(c.grown[lane] >= 1 && c.grown[lane] == c.growing[lane]);
	printf("trace of 4 lanes: %lu lines, %lu copies, every one accounted for\n", c.lines,
	       copies);
	free(trace);
	tr_files_free(&files);
	return T_EXIT_PASS;
}
