/*
 * A big-endian or Fortran-order file that the device converts, loaded while
 * the lanes' launches are held (as the zero-copy registrar holds them during
 * a registration on a device without FERRY__DEV_MAP_BESIDE: the host device
 * here). The conversion is queued on the lane's stream after the load's
 * copies; with the copies left pending by the hold it would run first, over
 * bytes not yet copied (a Fortran file's scratch memory, a swapped file's
 * destination), and hand out wrong bytes. Every byte is checked, through
 * ferry_load and ferry_load_async, with the hold on and, as a control, off.
 * 4 KiB chunks, so that each payload spans many staging buffers.
 */
#include "context/context.h"
#include "test_reader_util.h"

#define CHUNK ((size_t)4 << 10)

struct held_case {
	const char *name;
	enum ferry_dtype dtype;
	char byteorder;
	int fortran, ndim;
	int64_t shape[3];
};

static const struct held_case cases[] = {
	{ "swapped.npy", FERRY_INT32, '>', 0, 2, { 3, 5001 } },      /* swapped in place */
	{ "fortran.npy", FERRY_FLOAT32, 0, 1, 2, { 7, 3001 } },      /* through scratch */
	{ "both.npy", FERRY_FLOAT64, '>', 1, 3, { 5, 3, 401 } },
};

/* Whether the device converts (else the host does, and no conversion is
 * queued on a lane: nothing for this test to check). */
static int device_converts(ferry_ctx *ctx)
{
	struct ferry__device *dev = ctx->ld.dev;
	return (dev->ops->flags & FERRY__DEV_CONVERT) && dev->ops->convert_ready(dev, NULL, 0) == 0;
}

/* The bytes c's file must load as (C order, native byte order). */
static void *expected(const struct held_case *c, uint32_t id, uint64_t *nbytes)
{
	int64_t start[3] = { 0 };
	unsigned char fill[16] = { 0 }; /* never used: the region is the whole array */
	size_t isz = ferry_dtype_size(c->dtype);
	return tr_reference(id, isz, c->byteorder == '>' && isz > 1, c->fortran, c->ndim,
			    c->shape, start, c->shape, fill, nbytes);
}

static void check_loads(ferry_ctx *ctx, const char *path, const void *want, uint64_t nbytes,
			int held)
{
	char label[1200];
	ferry_array *a;
	ferry__lanes_hold_launches(ctx->ld.lanes, held);
	T_OK(ferry_load(ctx, path, &a));
	snprintf(label, sizeof(label), "%s, ferry_load, launches %s", path, held ? "held" : "free");
	tr_check_bytes(ctx, ferry_array_data(a), want, nbytes, label);
	ferry_array_free(a);
	T_OK(ferry_load_async(ctx, path, &a));
	T_OK(ferry_array_wait(a));
	snprintf(label, sizeof(label), "%s, ferry_load_async, launches %s", path,
		 held ? "held" : "free");
	tr_check_bytes(ctx, ferry_array_data(a), want, nbytes, label);
	ferry_array_free(a);
	ferry__lanes_hold_launches(ctx->ld.lanes, 0);
}

int main(void)
{
	char *dir = strdup(t_tmpdir());
	ferry_ctx *ctx = tr_ctx(CHUNK, 3);
	if (!device_converts(ctx)) {
		T_OK(ferry_ctx_destroy(ctx));
		t_rmtree(dir);
		free(dir);
		T_SKIP("the device does not convert: the host converts before any copy");
	}
	for (size_t i = 0; i < FERRY__ARRAY_LEN(cases); i++) {
		const struct held_case *c = &cases[i];
		const char *path = tr_path(dir, c->name);
		uint64_t nbytes;
		tr_write_npy(path, c->dtype, c->byteorder, c->fortran, c->ndim, c->shape,
			     (uint32_t)i + 1);
		void *want = expected(c, (uint32_t)i + 1, &nbytes);
		check_loads(ctx, path, want, nbytes, 0);
		check_loads(ctx, path, want, nbytes, 1);
		free(want);
	}
	/* The hold met the loads' commits: their copies were left pending. */
	T_ASSERT(tr_lanes_stats(ctx).launches_held > 0);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	free(dir);
	printf("conversions queued behind held launches: ok\n");
	return T_EXIT_PASS;
}
