/*
 * Loading without waiting: ferry_load_async and ferry_load_into_async return
 * once the copies are queued, ferry_array_wait / ferry_array_stream_wait say
 * when the bytes are there, every byte checked. On the device FERRY_DEVICE
 * names: many loads in flight at once, two buffers reused in turn (as a
 * pipelined caller does), converted and empty files, and the errors. On the
 * host device, with the copy stream held shut by a gate: the call returns
 * while its copies cannot have run (so it did not wait), the destination is
 * untouched until the gate opens, and a device error met after the return is
 * reported by ferry_array_wait, naming the file.
 */
#include <signal.h>
#include <unistd.h>

#include "context/context.h"
#include "test_reader_util.h"

#define NFILES 6
#define CHUNK ((size_t)8 << 10)
#define POISON 0x5A

/* Sizes that cross chunks, fit one, and are empty; one big-endian file. */
static void make_dataset(struct tr_files *d)
{
	static const int64_t lens[NFILES] = { 40000, 3000, 0, 17, 9000, 2500 };
	d->dir = strdup(t_tmpdir());
	d->n = NFILES;
	for (unsigned i = 0; i < NFILES; i++) {
		char name[32], fill[8] = { 0 };
		char order = i == 4 ? '>' : 0;
		int64_t start = 0;
		snprintf(name, sizeof(name), "f%u.npy", i);
		d->paths[i] = strdup(tr_path(d->dir, name));
		tr_write_npy(d->paths[i], FERRY_INT32, order, 0, 1, &lens[i], i + 1);
		d->want[i] = tr_reference(i + 1, 4, order == '>', 0, 1, &lens[i], &start, &lens[i],
					  fill, &d->nbytes[i]);
	}
}

/* Every file in flight at once, then waited for out of order. */
static void many_in_flight(ferry_ctx *ctx, const struct tr_files *d)
{
	ferry_array *a[NFILES];
	for (unsigned i = 0; i < NFILES; i++) {
		T_OK(ferry_load_async(ctx, d->paths[i], &a[i]));
		T_EQ(ferry_array_info(a[i])->nbytes, d->nbytes[i]);
	}
	for (unsigned k = 0; k < NFILES; k++) {
		unsigned i = (k * 5 + 3) % NFILES;
		if (k % 2)
			T_OK(ferry_array_wait(a[i]));
		else
			T_OK(ferry_array_stream_wait(a[i], NULL));
		tr_check_loaded(ctx, ferry_array_data(a[i]), d, i);
		T_OK(ferry_array_wait(a[i])); /* waiting again is harmless */
	}
	for (unsigned i = 0; i < NFILES; i++)
		ferry_array_free(a[i]);
}

/* Two poisoned buffers used in turn: the older load is waited for before its
 * buffer is loaded into again. */
static void two_buffers_in_turn(ferry_ctx *ctx, const struct tr_files *d)
{
	size_t cap = 40000 * 4;
	void *buf[2];
	unsigned char *poison = malloc(cap);
	T_ASSERT(poison);
	memset(poison, POISON, cap);
	ferry_array *inflight[2] = { NULL, NULL };
	unsigned file_of[2] = { 0, 0 };
	for (int k = 0; k < 2; k++) {
		T_OK(ferry_device_alloc(ctx, cap, &buf[k]));
		T_OK(ferry_copy_to_device(ctx, buf[k], poison, cap));
	}
	for (unsigned n = 0; n < 3 * NFILES + 2; n++) {
		unsigned k = n % 2;
		if (inflight[k]) {
			T_OK(ferry_array_wait(inflight[k]));
			tr_check_loaded(ctx, buf[k], d, file_of[k]);
			T_ASSERT(ferry_array_data(inflight[k]) == buf[k]);
			ferry_array_free(inflight[k]);
			inflight[k] = NULL;
		}
		if (n >= 3 * NFILES)
			continue;
		file_of[k] = (n * 7) % NFILES;
		T_OK(ferry_load_into_async(ctx, d->paths[file_of[k]], buf[k], cap, &inflight[k]));
	}
	for (int k = 0; k < 2; k++)
		ferry_device_free(ctx, buf[k]);
	free(poison);
}

static void errors(ferry_ctx *ctx, const struct tr_files *d)
{
	ferry_array *a = (ferry_array *)&a, *sentinel = a;
	char missing[600];
	void *small;
	snprintf(missing, sizeof(missing), "%s/missing.npy", d->dir);
	T_EQ(ferry_load_async(ctx, missing, &a), -ENOENT);
	T_ASSERT(a == sentinel);
	T_ASSERT(strstr(ferry_last_error(), missing));
	T_OK(ferry_device_alloc(ctx, 100, &small));
	T_EQ(ferry_load_into_async(ctx, d->paths[0], small, 100, &a), -ENOSPC);
	T_ASSERT(strstr(ferry_last_error(), d->paths[0]));
	T_EQ(ferry_load_into_async(ctx, d->paths[0], NULL, 100, &a), -EINVAL);
	T_ASSERT(a == sentinel);
	ferry_device_free(ctx, small);
	/* A ferry_load array is complete already: waits return at once. */
	T_OK(ferry_load(ctx, d->paths[1], &a));
	T_OK(ferry_array_wait(a));
	T_OK(ferry_array_stream_wait(a, NULL));
	tr_check_loaded(ctx, ferry_array_data(a), d, 1);
	ferry_array_free(a);
}

static ferry_ctx *host_ctx(struct ferry__device *dev)
{
	struct ferry_ctx_options opt = { .chunk_size = CHUNK, .max_buffers = 16, .threads = 2 };
	ferry_ctx *ctx;
	T_OK(ferry__ctx_create_on(dev, &ferry__io_posix, &opt, &ctx));
	return ctx;
}

static struct ferry__device *open_host(void)
{
	struct ferry__device *dev;
	T_OK(ferry__device_open("host", &(struct ferry__device_params){ 0 }, &dev));
	return dev;
}

/* Holds the copy stream shut; the load must return all the same. */
static struct ferry__gate *hold_copies(ferry_ctx *ctx)
{
	struct ferry__gate *g;
	T_OK(ctx->ld.dev->ops->gate_create(ctx->ld.dev, &g));
	T_OK(ctx->ld.dev->ops->gate_hold(ctx->ld.dev, ferry__staging_stream(ferry__lanes_pick(ctx->ld.lanes)), g));
	return g;
}

/* Once the stream has passed it (after a wait), the gate can go. */
static void destroy_gate(ferry_ctx *ctx, struct ferry__gate *g)
{
	ctx->ld.dev->ops->gate_destroy(ctx->ld.dev, g);
}

static int all_poison(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != POISON)
			return 0;
	return 1;
}

static void returns_before_copies_run(const struct tr_files *d)
{
	ferry_ctx *ctx = host_ctx(open_host());
	size_t len = d->nbytes[1]; /* 2 chunks: the pool holds them while held */
	unsigned char *dst; /* host device memory is host memory: readable here */
	T_OK(ferry_device_alloc(ctx, len, (void **)&dst));
	memset(dst, POISON, len);
	struct ferry__gate *g = hold_copies(ctx);
	ferry_array *a;
	T_OK(ferry_load_into_async(ctx, d->paths[1], dst, len, &a));
	usleep(20000);
	T_ASSERT(all_poison(dst, len)); /* nothing lands while the stream is held */
	T_OK(ctx->ld.dev->ops->gate_open(ctx->ld.dev, g));
	T_OK(ferry_array_wait(a));
	destroy_gate(ctx, g);
	tr_check_loaded(ctx, dst, d, 1);
	ferry_array_free(a);
	ferry_device_free(ctx, dst);
	T_OK(ferry_ctx_destroy(ctx));
}

static void late_error_reported(const struct tr_files *d)
{
	struct ferry__device *fdev = t_fault_device(open_host());
	ferry_ctx *ctx = host_ctx(fdev);
	struct ferry__gate *g = hold_copies(ctx);
	ferry_array *a;
	T_OK(ferry_load_async(ctx, d->paths[1], &a));
	/* The next event query (the wait's first look at the copies) fails. */
	t_fault_arm(fdev, T_FAULT_EVENT_QUERY, 1, -EIO, 0);
	T_OK(ctx->ld.dev->ops->gate_open(ctx->ld.dev, g));
	T_EQ(ferry_array_wait(a), -EIO);
	T_ASSERT(t_fault_fired(fdev));
	T_ASSERT(strstr(ferry_last_error(), d->paths[1]));
	T_EQ(ferry_array_wait(a), -EIO); /* the array stays failed */
	t_fault_arm(fdev, T_FAULT_NONE, 0, 0, 0);
	ferry_array_free(a); /* waits for the copies: the gate is passed */
	destroy_gate(ctx, g);
	/* The engine goes on: a later load through the same context is whole. */
	T_OK(ferry_load_async(ctx, d->paths[0], &a));
	T_OK(ferry_array_wait(a));
	tr_check_loaded(ctx, ferry_array_data(a), d, 0);
	ferry_array_free(a);
	T_OK(ferry_ctx_destroy(ctx));
}

int main(void)
{
	struct tr_files d;
	alarm(120); /* a load that waited for its held copies would hang: fail instead */
	make_dataset(&d);
	ferry_ctx *ctx = tr_ctx(CHUNK, 3);
	many_in_flight(ctx, &d);
	two_buffers_in_turn(ctx, &d);
	errors(ctx, &d);
	T_OK(ferry_ctx_destroy(ctx));
	returns_before_copies_run(&d);
	late_error_reported(&d);
	tr_files_free(&d);
	printf("async loads: ok\n");
	return T_EXIT_PASS;
}
