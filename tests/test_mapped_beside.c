/*
 * Where a device's registrations leave the copies' launches alone
 * (FERRY__DEV_MAP_BESIDE: CUDA registers in a context of its own), the
 * registrar holds no launch while it registers; where they do not, it holds
 * the lanes' early launches meanwhile (docs/design.md, "Zero copy"). The
 * registration waits in the fault device while another file loads, every
 * byte checked, and the lanes count the launches they held.
 */
#include "test_mapped_util.h"

/* Files 1.. loaded without waiting (their commits may be left pending), then
 * waited for and checked. */
static void load_rest_async(ferry_ctx *ctx)
{
	ferry_array *a[TM_NFILES];
	uint64_t len = (uint64_t)TM_ELEMS * 4;
	for (unsigned i = 1; i < TM_NFILES; i++)
		T_OK(ferry_load_async(ctx, tm_paths[i], &a[i]));
	for (unsigned i = 1; i < TM_NFILES; i++) {
		T_OK(ferry_array_wait(a[i]));
		void *want = tm_cpu_read(tm_paths[i], tm_file_size - len, len);
		tr_check_bytes(ctx, ferry_array_data(a[i]), want, len, "a load beside a registration");
		free(want);
		ferry_array_free(a[i]);
	}
}

/* Launches the lanes held while loads ran beside a registration. */
static uint64_t held_beside_a_registration(int beside)
{
	struct ferry__device *fdev;
	ferry_ctx *ctx = tm_fault_ctx(T_FAULT_NONE, 0, 0, &fdev);
	if (beside)
		t_fault_map_beside(fdev);
	t_fault_hold(fdev, T_FAULT_MAP_REGISTER);
	tm_load(ctx, 0, "the file the registrar takes");
	t_fault_wait_held(fdev);
	uint64_t before = tr_lanes_stats(ctx).launches_held;
	load_rest_async(ctx);
	uint64_t held = tr_lanes_stats(ctx).launches_held - before;
	t_fault_hold(fdev, T_FAULT_NONE);
	ferry__mapped_drain(ctx->ld.mapped);
	T_EQ(tm_stats(ctx).registrations >= 1, 1);
	tm_load(ctx, 0, "copied from its registration");
	T_OK(ferry_ctx_destroy(ctx));
	return held;
}

int main(void)
{
	unsetenv("FERRY_IO");
	setenv("FERRY_ODIRECT", "0", 1);
	tm_setup();
	T_ASSERT(held_beside_a_registration(0) > 0);
	T_EQ(held_beside_a_registration(1), 0u);
	tm_teardown();
	printf("ok: launches held while a registration runs where the device's registrations "
	       "hold them up, none where they run beside them\n");
	return 0;
}
