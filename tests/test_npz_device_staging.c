/*
 * Where staging is device memory (cuFile), a stored member's bytes would
 * never pass through the host, so its CRC-32 could not be computed there:
 * ferry reads archive members on the host path instead. Checked with the
 * POSIX table relabelled as device staging (on the host device, whose device
 * memory is host memory): every member of tests/npz_cases.py's archives
 * loads byte for byte without one staged read of the backend, a flipped
 * payload byte is still a CRC mismatch, and a plain .npy still goes through
 * staging. A build without libdeflate must refuse the deflated members
 * instead (and the test ends in a skip that counts them).
 */
#include "context/context.h"
#include "test_npz_util.h"

static struct tn_case cases[TN_MAX_CASES];
static struct ferry__io_ops device_staged;
static unsigned long staged_reads;

static int counting_read(struct ferry__io *io, struct ferry__file *f, struct ferry__io_req *reqs,
			 unsigned n)
{
	__atomic_fetch_add(&staged_reads, 1, __ATOMIC_RELAXED);
	return ferry__io_posix.read(io, f, reqs, n);
}

static ferry_ctx *device_staged_ctx(void)
{
	struct ferry__device *dev = t_open_device();
	if (strcmp(dev->ops->name, "host") != 0)
		T_SKIP("relabelling staging as device memory needs the host device");
	device_staged = ferry__io_posix;
	device_staged.placement = FERRY__STAGE_DEVICE;
	device_staged.read = counting_read;
	device_staged.read_files = NULL;
	struct ferry_ctx_options opt = { .gpu = -1, .chunk_size = 4096, .threads = 3, .direct = -1 };
	ferry_ctx *ctx;
	T_OK(ferry__ctx_create_on(dev, &device_staged, &opt, &ctx));
	return ctx;
}

int main(void)
{
	char *dir, npy[1100];
	unsigned n = tn_make_cases(cases, &dir), ok = 0, refused = 0;
	ferry_ctx *ctx = device_staged_ctx();
	for (unsigned i = 0; i < n; i++) {
		const struct tn_case *c = &cases[i];
		ferry_array *a = NULL;
		if (tn_refused(c) && (c->ok || strstr(c->text, "CRC"))) {
			tn_check_refusal(ferry_load_member(ctx, c->archive, c->key, &a), c->archive,
					 c->key, "ferry_load_member");
			refused++;
			continue;
		}
		if (!c->ok) {
			if (strstr(c->text, "CRC"))
				T_EQ(ferry_load_member(ctx, c->archive, c->key, &a), -FERRY_EFORMAT);
			continue;
		}
		uint64_t len;
		void *want = tn_expected(c, &len);
		T_OK(ferry_load_member(ctx, c->archive, c->key, &a));
		tr_check_bytes(ctx, ferry_array_data(a), want, len, c->archive);
		ferry_array_free(a);
		free(want);
		ok++;
	}
	T_EQ(staged_reads, 0);
	snprintf(npy, sizeof(npy), "%s/plain.npy", dir);
	int64_t shape[1] = { 5000 };
	tr_write_npy(npy, FERRY_FLOAT32, '<', 0, 1, shape, 9);
	ferry_array *a;
	T_OK(ferry_load(ctx, npy, &a));
	ferry_array_free(a);
	T_ASSERT(staged_reads > 0);
	T_OK(ferry_ctx_destroy(ctx));
	t_rmtree(dir);
	printf("ok: %u members read on the host where staging is device memory, CRC checked\n", ok);
	return tn_exit(refused);
}
