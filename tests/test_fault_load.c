/*
 * Fault sweep of file loading: contexts made on a fault device and a fault IO
 * table (posix underneath), then ferry_load, ferry_load_async with
 * ferry_array_wait, ferry_load_into (a big-endian file, converted on the
 * host, and a small one) and ferry_read_range, with one call of one class
 * failing in each run. Every call that succeeds must
 * have put every byte right into a destination poisoned before the run; a
 * call that fails must say why (naming the file for IO faults); the pool ends
 * full and the context is destroyed cleanly. Run with 1 and 3 IO threads.
 */
#include "context/context.h"
#include "test_fault_util.h"
#include "test_reader_util.h"

#define CHUNK ((size_t)8 << 10)
#define POISON 0x5A
#define RANGE_OFFSET 1000
#define RANGE_LEN 15000

struct expected {
	const char *path;
	unsigned char *bytes;  /* what the load must produce */
	uint64_t nbytes;
};

struct load_case {
	char *dir;
	unsigned threads;
	struct expected big, swapped, small, range;
	unsigned char *back;   /* a host buffer as large as the largest */
	unsigned char *poison;
};

/* What a C-order, native or swapped file of id must load as. */
static struct expected expect_npy(const char *path, enum ferry_dtype dtype, char order,
				  int64_t len, uint32_t id)
{
	struct expected e = { .path = strdup(path) };
	int64_t start = 0;
	unsigned char fill[16] = { 0 };
	size_t isz = ferry_dtype_size(dtype);
	tr_write_npy(path, dtype, order, 0, 1, &len, id);
	e.bytes = tr_reference(id, isz, order == '>' && isz > 1, 0, 1, &len, &start, &len, fill,
			       &e.nbytes);
	return e;
}

static struct expected expect_range(const char *path, uint64_t offset, uint64_t len)
{
	struct expected e = { .path = strdup(path), .nbytes = len, .bytes = malloc(len) };
	FILE *f = fopen(path, "rb");
	T_ASSERT(f && e.bytes);
	T_ASSERT(fseek(f, (long)offset, SEEK_SET) == 0);
	T_ASSERT(fread(e.bytes, 1, len, f) == len);
	fclose(f);
	return e;
}

/* Every byte of dst (device memory) is what e says. */
static void check_loaded(struct load_case *c, const struct fault_shot *shot, ferry_ctx *ctx,
			 const void *dst, const struct expected *e)
{
	T_OK(ferry_copy_to_host(ctx, c->back, dst, e->nbytes));
	for (uint64_t i = 0; i < e->nbytes; i++)
		if (c->back[i] != e->bytes[i])
			shot_fail(shot, "%s reported loaded, byte %llu of %llu is 0x%02x, want 0x%02x",
				  e->path, (unsigned long long)i, (unsigned long long)e->nbytes,
				  c->back[i], e->bytes[i]);
}

/* Loads e into poisoned device memory with ferry_load_into (or read_range). */
static void load_into(struct load_case *c, struct fault_shot *shot, ferry_ctx *ctx,
		      const struct expected *e, int is_range)
{
	void *dst;
	if (shot_result(shot, ferry_device_alloc(ctx, e->nbytes, &dst)) < 0)
		return;
	T_OK(ferry_copy_to_device(ctx, dst, c->poison, e->nbytes));
	int rc = is_range ? ferry_read_range(ctx, e->path, RANGE_OFFSET, RANGE_LEN, dst)
			  : ferry_load_into(ctx, e->path, dst, e->nbytes, NULL);
	if (shot_result(shot, rc) == 0) {
		t_alloc_pause(1);
		check_loaded(c, shot, ctx, dst, e);
		t_alloc_pause(0);
	}
	ferry_device_free(ctx, dst);
}

static void load_new(struct load_case *c, struct fault_shot *shot, ferry_ctx *ctx,
		     const struct expected *e)
{
	ferry_array *a;
	if (shot_result(shot, ferry_load(ctx, e->path, &a)) < 0)
		return;
	t_alloc_pause(1);
	T_EQ(ferry_array_info(a)->nbytes, e->nbytes);
	check_loaded(c, shot, ctx, ferry_array_data(a), e);
	t_alloc_pause(0);
	ferry_array_free(a);
}

/* ferry_load_async, then a wait: a fault may show at either. */
static void load_new_async(struct load_case *c, struct fault_shot *shot, ferry_ctx *ctx,
			   const struct expected *e)
{
	ferry_array *a;
	if (shot_result(shot, ferry_load_async(ctx, e->path, &a)) < 0)
		return;
	if (shot_result(shot, ferry_array_wait(a)) == 0) {
		t_alloc_pause(1);
		check_loaded(c, shot, ctx, ferry_array_data(a), e);
		t_alloc_pause(0);
	}
	ferry_array_free(a);
}

static void load_workload(void *arg, struct fault_shot *shot)
{
	struct load_case *c = arg;
	struct ferry_ctx_options opt = { .chunk_size = CHUNK, .max_buffers = 2,
					 .threads = c->threads };
	ferry_ctx *ctx;
	shot->must_name = c->dir;
	if (!(ctx = shot_open_ctx(shot, &opt)))
		return;
	load_new(c, shot, ctx, &c->big);
	load_new_async(c, shot, ctx, &c->big);
	load_into(c, shot, ctx, &c->swapped, 0);
	load_into(c, shot, ctx, &c->small, 0);
	load_into(c, shot, ctx, &c->range, 1);
	shot_check_lanes(shot, ctx);
	shot_disarm(shot);
	T_OK(ferry_ctx_destroy(ctx));
}

static void free_expected(struct expected *e)
{
	free((char *)e->path);
	free(e->bytes);
}

int main(void)
{
	struct load_case c = { .dir = strdup(t_tmpdir()) };
	c.big = expect_npy(tr_path(c.dir, "big.npy"), FERRY_FLOAT32, 0, 5000, 1);
	c.swapped = expect_npy(tr_path(c.dir, "swapped.npy"), FERRY_INT32, '>', 700, 2);
	c.small = expect_npy(tr_path(c.dir, "small.npy"), FERRY_UINT8, 0, 100, 3);
	c.range = expect_range(c.big.path, RANGE_OFFSET, RANGE_LEN);
	c.back = malloc(c.big.nbytes);
	c.poison = malloc(c.big.nbytes);
	T_ASSERT(c.back && c.poison);
	memset(c.poison, POISON, c.big.nbytes);
	c.threads = 1;
	sweep_all("load, 1 thread", load_workload, &c, 400);
	c.threads = 3;
	sweep_all("load, 3 threads", load_workload, &c, 400);
	free_expected(&c.big);
	free_expected(&c.swapped);
	free_expected(&c.small);
	free_expected(&c.range);
	free(c.back);
	free(c.poison);
	t_rmtree(c.dir);
	free(c.dir);
	printf("fault sweep of loading: ok\n");
	return T_EXIT_PASS;
}
