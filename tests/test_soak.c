/*
 * Soak: the reader over many epochs for SOAK_SECONDS (default 20), each round
 * with a random fault (a device or IO-table class, a random N), a random
 * number of threads, batch size, prefetch depth, shuffle and on_error. Every
 * byte of every sample is checked against its file's pattern, errors must
 * carry a message, the pool must end full and the reader close cleanly. The
 * seed is printed; SOAK_SEED=N repeats a run.
 */
#include <time.h>

#include "context/context.h"
#include "test_fault_util.h"
#include "test_reader_util.h"

#define NFILES 12
#define ID_BASE 200
#define MAX_NEXT 2000

struct soak {
	char *dir;
	uint64_t rng;
	unsigned char back[1 << 16];
	unsigned long rounds, samples, errors, fired;
};

static unsigned pick(struct soak *s, unsigned n)
{
	return (unsigned)(t_rand(&s->rng) % n);
}

static void check_sample(struct soak *s, ferry_ctx *ctx, const struct ferry_sample *smp)
{
	int k = tr_file_index(smp->path);
	uint64_t want = (uint64_t)(100 + 37 * k) * 4;
	if (smp->nbytes != want)
		T_FAIL("%s: %llu bytes, want %llu", smp->path, (unsigned long long)smp->nbytes,
		       (unsigned long long)want);
	T_OK(ferry_copy_to_host(ctx, s->back, smp->data, smp->nbytes));
	size_t at = t_check_pattern(s->back, smp->nbytes, ID_BASE + (uint32_t)k, 0);
	if (at != smp->nbytes) {
		char where[96];
		t_describe_word(s->back + (at & ~(size_t)7), where, sizeof(where));
		T_FAIL("%s: byte %zu wrong (holds %s)", smp->path, at, where);
	}
}

static void read_to_end(struct soak *s, ferry_ctx *ctx, ferry_reader *r)
{
	ferry_batch *b;
	int rc;
	for (int i = 0; (rc = ferry_reader_next(r, &b)) != -FERRY_EEND; i++) {
		if (i == MAX_NEXT)
			T_FAIL("ferry_reader_next never reached the end");
		if (rc < 0) {
			if (!*ferry_last_error())
				T_FAIL("error %s without a message", ferry_strerror(rc));
			s->errors++;
			continue;
		}
		for (unsigned k = 0; k < ferry_batch_size(b); k++) {
			struct ferry_sample smp;
			T_OK(ferry_batch_sample(b, k, &smp));
			check_sample(s, ctx, &smp);
			s->samples++;
		}
		if (pick(s, 2) && ferry_batch_wait(b) < 0) /* the fault may hit this wait */
			s->errors++;
		ferry_batch_release(b);
	}
}

/* A device or IO-table fault (the host-allocation and pread faults need the
 * fault sweeps' link flags). */
static int needs_link_wraps(const struct fault_class *fc)
{
	return fc->layer == LAYER_ALLOC || (fc->layer == LAYER_IO && fc->cls >= T_IO_SHORT_READ);
}

static const struct fault_class *pick_fault(struct soak *s)
{
	const struct fault_class *fc;
	do
		fc = &fault_classes[pick(s, FERRY__ARRAY_LEN(fault_classes))];
	while (needs_link_wraps(fc));
	return fc;
}

static void one_round(struct soak *s)
{
	unsigned threads = 1 + pick(s, 4);
	struct ferry_ctx_options opt = { .chunk_size = 4096u << pick(s, 3),
					 .max_buffers = 2 + pick(s, 6), .threads = threads };
	struct ferry_reader_config cfg = {
		.root = s->dir, .batch_size = 1 + pick(s, 4), .epochs = 1 + pick(s, 3),
		.threads = 1 + pick(s, 4), .prefetch_depth = 1 + pick(s, 3),
		.random_shuffle = (int)pick(s, 2), .seed = t_rand(&s->rng),
		.on_error = pick(s, 2) ? FERRY_ON_ERROR_SKIP : FERRY_ON_ERROR_STOP,
		.no_header_cache = pick(s, 4) == 0,
	};
	struct fault_shot shot = { .fc = pick_fault(s), .n = 1 + pick(s, 60) };
	struct ferry__device *fdev = t_fault_device(t_open_device());
	ferry_ctx *ctx;
	ferry_reader *r;
	shot_arm(&shot, fdev);
	if (ferry__ctx_create_on(fdev, t_fault_io(&ferry__io_posix), &opt, &ctx) < 0) {
		shot_device_lost(&shot);
		shot_disarm(&shot);
		return;
	}
	if (ferry_reader_open(ctx, &cfg, &r) == 0) {
		read_to_end(s, ctx, r);
		ferry_reader_close(r);
	}
	shot_check_lanes(&shot, ctx);
	shot_disarm(&shot);
	s->fired += shot.fired;
	T_OK(ferry_ctx_destroy(ctx));
}

int main(void)
{
	static struct soak s;
	const char *seed_env = getenv("SOAK_SEED"), *secs_env = getenv("SOAK_SECONDS");
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)getpid();
	double secs = secs_env ? atof(secs_env) : 20;
	unsetenv("WORLD_SIZE");
	unsetenv("RANK");
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("soak: seed %llu (SOAK_SEED=%llu repeats it), %.0f s\n", (unsigned long long)seed,
	       (unsigned long long)seed, secs);
	s.rng = seed;
	s.dir = strdup(t_tmpdir());
	for (unsigned i = 0; i < NFILES; i++) {
		char name[64];
		int64_t len = 100 + 37 * i;
		snprintf(name, sizeof(name), "f%03u.npy", i);
		tr_write_npy(tr_path(s.dir, name), FERRY_INT32, 0, 0, 1, &len, ID_BASE + i);
	}
	uint64_t end = ferry__now_ns() + (uint64_t)(secs * 1e9);
	while (ferry__now_ns() < end) {
		one_round(&s);
		s.rounds++;
	}
	printf("soak: %lu rounds, %lu samples checked, %lu errors returned, %lu faults fired\n",
	       s.rounds, s.samples, s.errors, s.fired);
	t_rmtree(s.dir);
	free(s.dir);
	return T_EXIT_PASS;
}
