/*
 * A deflated .npz member is inflated on the CPU, then goes to the device
 * through pinned staging as a file's bytes do: copied chunk by chunk into
 * staging buffers and copied out of them asynchronously, never with a
 * synchronous copy. Every deflated member of tests/npz_cases.py's archives
 * (every dtype, big-endian and Fortran order converted on the host, empty,
 * 0-d, one over many chunks) through ferry_load_member, ferry_load_member_async
 * and ferry_load_member_into, each byte checked, on a fault device that
 * counts: no copy_sync, and copies queued for every non-empty member. Then
 * the staging invariant for these bytes, on the host device: with two 4 KiB
 * buffers and the copy stream held by a gate, an async load of a member of
 * 75 chunks (on its own thread) cannot return, and nothing lands, while the
 * stream is held: the loader waits for its own copies rather than reusing a
 * buffer they read; once the gate opens, every byte is right. A build
 * without libdeflate must refuse each deflated member instead (the test then
 * ends in a skip that counts them).
 */
#include <pthread.h>
#include <unistd.h>

#include "context/context.h"
#include "test_npz_util.h"

#define CHUNK ((size_t)4 << 10)
#define POISON 0x5A

static struct tn_case cases[TN_MAX_CASES];

static ferry_ctx *make_ctx(struct ferry__device *dev, unsigned buffers)
{
	struct ferry_ctx_options o = { .gpu = -1, .chunk_size = CHUNK, .threads = 2, .direct = -1,
				       .max_buffers = buffers, .lanes = 1 };
	ferry_ctx *ctx;
	T_OK(ferry__ctx_create_on(dev, NULL, &o, &ctx));
	return ctx;
}

static struct ferry__device *open_device(void)
{
	struct ferry_ctx_options o = { .gpu = -1 };
	struct ferry__device *dev;
	int rc = ferry__ctx_open_device(&o, &dev);
	if (rc == -FERRY_ENODEVICE)
		T_SKIP("no device: %s", ferry_last_error());
	T_OK(rc);
	return dev;
}

/* The array at data holds c's expected bytes: read back uncounted. */
static void check_bytes(struct ferry__device *fdev, const struct tn_case *c, const void *data,
			const char *how)
{
	struct ferry__device *inner = t_fault_inner(fdev);
	uint64_t n;
	unsigned char *want = tn_expected(c, &n), *got = malloc(n + 1);
	T_ASSERT(got);
	if (n)
		T_OK(inner->ops->copy_sync(inner, got, data, n, FERRY__D2H));
	for (uint64_t i = 0; i < n; i++)
		if (got[i] != want[i])
			T_FAIL("%s[%s] by %s: byte %llu of %llu is 0x%02x, want 0x%02x", c->archive,
			       c->key, how, (unsigned long long)i, (unsigned long long)n, got[i],
			       want[i]);
	free(want);
	free(got);
}

/* Loads c three ways; returns the copies they queued. */
static unsigned long load_three_ways(ferry_ctx *ctx, struct ferry__device *fdev,
				     const struct tn_case *c)
{
	ferry_array *a;
	void *dst;
	unsigned long copies = t_fault_calls(fdev, T_FAULT_COPY);
	T_OK(ferry_load_member(ctx, c->archive, c->key, &a));
	check_bytes(fdev, c, ferry_array_data(a), "ferry_load_member");
	ferry_array_free(a);
	T_OK(ferry_load_member_async(ctx, c->archive, c->key, &a));
	T_OK(ferry_array_wait(a));
	check_bytes(fdev, c, ferry_array_data(a), "ferry_load_member_async");
	size_t len = ferry_array_info(a)->nbytes;
	ferry_array_free(a);
	T_OK(ferry_device_alloc(ctx, len ? len : 1, &dst));
	T_OK(ferry_load_member_into(ctx, c->archive, c->key, dst, len, NULL));
	check_bytes(fdev, c, dst, "ferry_load_member_into");
	ferry_device_free(ctx, dst);
	return t_fault_calls(fdev, T_FAULT_COPY) - copies;
}

/* Every deflated member: loaded, counted. Returns how many were refused. */
static unsigned run_cases(unsigned n)
{
	struct ferry__device *fdev = t_fault_device(open_device());
	ferry_ctx *ctx = make_ctx(fdev, 8);
	unsigned loaded = 0, refused = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct tn_case *c = &cases[i];
		ferry_array *a = NULL;
		if (!c->ok || !c->deflated)
			continue;
		if (tn_refused(c)) {
			tn_check_refusal(ferry_load_member(ctx, c->archive, c->key, &a), c->archive,
					 c->key, "ferry_load_member");
			refused++;
			continue;
		}
		unsigned long copies = load_three_ways(ctx, fdev, c);
		int empty = !strcmp(c->key, "empty");
		if (!empty && copies < 3)
			T_FAIL("%s[%s]: %lu copies for three loads", c->archive, c->key, copies);
		loaded++;
	}
	if (t_fault_calls(fdev, T_FAULT_COPY_SYNC))
		T_FAIL("%lu synchronous copies for %u deflated members loaded three ways",
		       t_fault_calls(fdev, T_FAULT_COPY_SYNC), loaded);
	T_OK(ferry_ctx_destroy(ctx));
	printf("%u deflated members, three ways each: every byte, no synchronous copy\n", loaded);
	return refused;
}

struct held_load {
	ferry_ctx *ctx;
	const struct tn_case *c;
	void *dst;
	size_t len;
	ferry_array *a;
	int rc, returned;
};

static void *load_thread(void *arg)
{
	struct held_load *h = arg;
	h->rc = ferry_load_member_into_async(h->ctx, h->c->archive, h->c->key, h->dst, h->len,
					     &h->a);
	__atomic_store_n(&h->returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int all_poison(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != POISON)
			return 0;
	return 1;
}

/* The member of 75 chunks through two buffers, the copy stream held shut. */
static void run_held(const struct tn_case *c)
{
	struct ferry__device *dev = open_device();
	if (strcmp(dev->ops->name, "host") != 0) {
		dev->ops->close(dev);
		printf("the held load needs the host device (its memory is readable here)\n");
		return;
	}
	struct ferry__device *fdev = t_fault_device(dev);
	ferry_ctx *ctx = make_ctx(fdev, 2);
	struct held_load h = { .ctx = ctx, .c = c };
	struct ferry__gate *g;
	pthread_t t;
	uint64_t n;
	free(tn_expected(c, &n));
	h.len = n;
	T_OK(ferry_device_alloc(ctx, h.len, &h.dst));
	memset(h.dst, POISON, h.len);
	T_OK(dev->ops->gate_create(dev, &g));
	T_OK(dev->ops->gate_hold(dev, ferry__staging_stream(ferry__lanes_get(ctx->ld.lanes, 0)), g));
	T_ASSERT(pthread_create(&t, NULL, load_thread, &h) == 0);
	usleep(100000);
	T_ASSERT(!__atomic_load_n(&h.returned, __ATOMIC_ACQUIRE)); /* it waits for buffers */
	T_ASSERT(all_poison(h.dst, h.len)); /* and nothing landed */
	T_OK(dev->ops->gate_open(dev, g));
	T_ASSERT(pthread_join(t, NULL) == 0);
	T_OK(h.rc);
	T_OK(ferry_array_wait(h.a));
	check_bytes(fdev, c, h.dst, "an async load through two held buffers");
	T_EQ(t_fault_calls(fdev, T_FAULT_COPY_SYNC), 0);
	ferry_array_free(h.a);
	dev->ops->gate_destroy(dev, g);
	ferry_device_free(ctx, h.dst);
	T_OK(ferry_ctx_destroy(ctx));
	printf("%s[%s]: %zu bytes through two held 4 KiB buffers, every byte\n", c->archive,
	       c->key, h.len);
}

int main(void)
{
	char *dir;
	unsigned n = tn_make_cases(cases, &dir);
	unsigned refused = run_cases(n);
	for (unsigned i = 0; !refused && i < n; i++)
		if (cases[i].ok && cases[i].deflated && !strcmp(cases[i].key, "large") &&
		    strstr(cases[i].archive, "savez_compressed"))
			run_held(&cases[i]);
	t_rmtree(dir);
	return tn_exit(refused);
}
