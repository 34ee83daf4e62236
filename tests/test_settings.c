/*
 * Settings: every option and environment variable is resolved in one place.
 * Chunk sizes parse as documented (k/M suffixes, powers of two from 4k to
 * 16M); every invalid value of every variable is refused with -FERRY_ECONFIG
 * and a message that names the variable, its value and what it accepts (the
 * table's text); options win over the environment; FERRY_ODIRECT's modes,
 * the page-cache budget and FERRY_CUDA_WAIT's modes resolve; lanes fit the buffers;
 * the shard variables resolve as DALI's do; and the table lists every
 * variable this file tests.
 */
#include "context/context.h"
#include "test_reader_util.h"

static const char *const variables[] = {
	"FERRY_DEVICE", "FERRY_GPU", "FERRY_IO", "FERRY_CHUNK_SIZE", "FERRY_THREADS",
	"FERRY_LANES", "FERRY_MAX_BUFFERS", "FERRY_ODIRECT", "FERRY_CACHE_BUDGET", "FERRY_PIN_BUDGET", "FERRY_PIN_RESERVE", "FERRY_PIN_PACE",
	"FERRY_TRACE",
	"FERRY_CUDA_GATE", "FERRY_CUDA_WAIT",
	"LOCAL_RANK", "RANK", "WORLD_SIZE",
};

static void clear_env(void)
{
	for (size_t i = 0; i < FERRY__ARRAY_LEN(variables); i++)
		unsetenv(variables[i]);
}

static const char *values_of(const char *name)
{
	size_t n;
	const struct ferry__setting_info *t = ferry__settings_table(&n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return t[i].values;
	T_FAIL("%s is not in the settings table", name);
}

/* A context's variables go through ferry__settings_resolve, the shard's
 * through ferry__settings_shard. */
static int resolve_all(void)
{
	struct ferry__settings s;
	unsigned id, n;
	int rc = ferry__settings_resolve(NULL, &s);
	return rc < 0 ? rc : ferry__settings_shard(-1, 0, &id, &n);
}

static void expect_refused(const char *name, const char *value)
{
	char want[256];
	setenv(name, value, 1);
	int rc = resolve_all();
	unsetenv(name);
	snprintf(want, sizeof(want), "%s=%s: expected %s", name, value, values_of(name));
	if (rc != -FERRY_ECONFIG || strcmp(ferry_last_error(), want))
		T_FAIL("%s=%s: %s (\"%s\"), want \"%s\"", name, value, ferry_strerror(rc),
		       ferry_last_error(), want);
}

static size_t chunk_from_env(const char *text)
{
	struct ferry__settings s;
	setenv("FERRY_CHUNK_SIZE", text, 1);
	T_OK(ferry__settings_resolve(NULL, &s));
	unsetenv("FERRY_CHUNK_SIZE");
	return s.chunk_size;
}

static void test_chunk_sizes(void)
{
	static const struct { const char *text; size_t want; } good[] = {
		{ "4096", 4096 }, { "4k", 4096 }, { "64K", 65536 }, { "2M", 2u << 20 },
		{ "16M", 16u << 20 }, { "1048576", 1u << 20 }, { "8MiB", 8u << 20 },
	};
	static const char *bad[] = { "0", "3000", "2k", "32M", "abc", "2X", "-4096", "6M", "1G" };
	for (size_t i = 0; i < FERRY__ARRAY_LEN(good); i++)
		T_EQ(chunk_from_env(good[i].text), good[i].want);
	for (size_t i = 0; i < FERRY__ARRAY_LEN(bad); i++)
		expect_refused("FERRY_CHUNK_SIZE", bad[i]);
	struct ferry__settings s;
	T_OK(ferry__settings_resolve(NULL, &s));
	T_EQ(s.chunk_size, 2u << 20);
	struct ferry_ctx_options o = { .gpu = -1, .direct = -1, .chunk_size = 3000 };
	T_EQ(ferry__settings_resolve(&o, &s), -FERRY_ECONFIG);
	T_ASSERT(strstr(ferry_last_error(), "chunk_size option 3000"));
}

static void test_every_variable_refuses(void)
{
	static const struct { const char *name, *value; } bad[] = {
		{ "FERRY_DEVICE", "gpu" }, { "FERRY_IO", "foo" }, { "FERRY_CUDA_GATE", "foo" },
		{ "FERRY_CUDA_WAIT", "yield" }, { "FERRY_CUDA_WAIT", "SPIN" },
		{ "FERRY_GPU", "-1" }, { "FERRY_GPU", "1024" }, { "FERRY_GPU", "x" },
		{ "FERRY_THREADS", "0" }, { "FERRY_THREADS", "5000" }, { "FERRY_THREADS", "1e3" },
		{ "FERRY_LANES", "0" }, { "FERRY_LANES", "17" }, { "FERRY_MAX_BUFFERS", "0" },
		{ "FERRY_MAX_BUFFERS", "4097" }, { "FERRY_ODIRECT", "2" }, { "FERRY_ODIRECT", "yes" },
		{ "FERRY_ODIRECT", "AUTO" }, { "FERRY_CACHE_BUDGET", "-1" },
		{ "FERRY_CACHE_BUDGET", "lots" }, { "FERRY_CACHE_BUDGET", "8T" },
		{ "FERRY_PIN_BUDGET", "-1" }, { "FERRY_PIN_BUDGET", "some" },
		{ "FERRY_PIN_RESERVE", "-1" }, { "FERRY_PIN_RESERVE", "1T1" },
		{ "FERRY_PIN_PACE", "-1" }, { "FERRY_PIN_PACE", "101" }, { "FERRY_PIN_PACE", "5%" },
		{ "LOCAL_RANK", "-3" },
	};
	for (size_t i = 0; i < FERRY__ARRAY_LEN(bad); i++)
		expect_refused(bad[i].name, bad[i].value);
}

static void test_options_win(void)
{
	struct ferry__settings s;
	struct ferry_ctx_options o = { .gpu = 3, .direct = 0, .threads = 5, .max_buffers = 40,
				       .lanes = 2, .device = "host", .io = "posix" };
	setenv("FERRY_THREADS", "9", 1);
	setenv("FERRY_DEVICE", "cuda", 1);
	setenv("FERRY_ODIRECT", "1", 1);
	setenv("FERRY_GPU", "1", 1);
	T_OK(ferry__settings_resolve(&o, &s));
	T_EQ(s.threads, 5);
	T_ASSERT(!strcmp(s.device, "host") && !strcmp(s.io, "posix"));
	T_EQ(s.direct, 0);
	T_EQ(s.params.ordinal, 3);
	T_EQ(s.lanes, 2);
	o = (struct ferry_ctx_options){ .gpu = -1, .direct = -1, .device = "gpu" };
	T_EQ(ferry__settings_resolve(&o, &s), -FERRY_ECONFIG);
	T_ASSERT(strstr(ferry_last_error(), "device option 'gpu': expected auto, cuda, host"));
	clear_env();
	setenv("LOCAL_RANK", "2", 1);
	T_OK(ferry__settings_resolve(NULL, &s));
	T_EQ(s.params.ordinal, 2);
	unsetenv("LOCAL_RANK");
}

/* FERRY_ODIRECT's words and the option's values; the budget's default and sizes. */
static void test_direct_modes(void)
{
	static const struct { const char *text; int want; } words[] = {
		{ NULL, FERRY_DIRECT_AUTO }, { "auto", FERRY_DIRECT_AUTO },
		{ "0", FERRY_DIRECT_NEVER }, { "1", FERRY_DIRECT_ALWAYS },
	};
	struct ferry__settings s;
	for (size_t i = 0; i < FERRY__ARRAY_LEN(words); i++) {
		if (words[i].text)
			setenv("FERRY_ODIRECT", words[i].text, 1);
		T_OK(ferry__settings_resolve(NULL, &s));
		T_EQ(s.direct, words[i].want);
	}
	struct ferry_ctx_options o = { .gpu = -1, .direct = FERRY_DIRECT_AUTO };
	setenv("FERRY_ODIRECT", "0", 1);
	T_OK(ferry__settings_resolve(&o, &s));
	T_EQ(s.direct, FERRY_DIRECT_AUTO);
	o.direct = 3;
	T_EQ(ferry__settings_resolve(&o, &s), -FERRY_ECONFIG);
	T_ASSERT(strstr(ferry_last_error(), "direct option 3"));
	clear_env();
	uint64_t avail;
	T_OK(ferry__io_mem_available(&avail));
	T_OK(ferry__settings_resolve(NULL, &s));
	T_ASSERT(s.cache_budget > 0 && s.cache_budget <= avail); /* half of it, when read */
	setenv("FERRY_CACHE_BUDGET", "512M", 1);
	T_OK(ferry__settings_resolve(NULL, &s));
	T_EQ(s.cache_budget, 512ull << 20);
	setenv("FERRY_CACHE_BUDGET", "0", 1);
	T_OK(ferry__settings_resolve(NULL, &s));
	T_EQ(s.cache_budget, 0);
	clear_env();
	T_OK(ferry__settings_resolve(NULL, &s));
	T_ASSERT(s.pin_budget > 0 && s.pin_budget <= avail / 4 + avail / 8); /* a quarter */
	T_ASSERT(s.pin_reserve > 0 && s.pin_reserve <= avail / 8 + avail / 16); /* an eighth */
	setenv("FERRY_PIN_BUDGET", "16G", 1);
	T_OK(ferry__settings_resolve(NULL, &s));
	T_EQ(s.pin_budget, 16ull << 30);
	setenv("FERRY_PIN_BUDGET", "0", 1);
	T_OK(ferry__settings_resolve(NULL, &s));
	T_EQ(s.pin_budget, 0);
	setenv("FERRY_PIN_RESERVE", "3G", 1);
	T_OK(ferry__settings_resolve(NULL, &s));
	T_EQ(s.pin_reserve, 3ull << 30);
	T_EQ(s.pin_pace, 100u);
	setenv("FERRY_PIN_PACE", "0", 1); /* first offers in quiet spells only */
	T_OK(ferry__settings_resolve(NULL, &s));
	T_EQ(s.pin_pace, 0u);
	clear_env();
}

/* FERRY_CUDA_WAIT's words, spin when unset. */
static void test_wait_modes(void)
{
	static const struct { const char *text; enum ferry__wait_mode want; } words[] = {
		{ NULL, FERRY__WAIT_SPIN }, { "spin", FERRY__WAIT_SPIN },
		{ "poll", FERRY__WAIT_POLL }, { "block", FERRY__WAIT_BLOCK },
	};
	struct ferry__settings s;
	for (size_t i = 0; i < FERRY__ARRAY_LEN(words); i++) {
		if (words[i].text)
			setenv("FERRY_CUDA_WAIT", words[i].text, 1);
		T_OK(ferry__settings_resolve(NULL, &s));
		T_EQ(s.params.wait, words[i].want);
	}
	clear_env();
}

static void test_lanes_fit(void)
{
	static const struct { unsigned buffers, lanes, want; } cases[] = {
		{ 128, 4, 4 }, { 48, 16, 6 }, { 7, 4, 1 }, { 16, 4, 2 }, { 4096, 16, 16 },
	};
	for (size_t i = 0; i < FERRY__ARRAY_LEN(cases); i++) {
		struct ferry__settings s;
		struct ferry_ctx_options o = { .gpu = -1, .direct = -1,
					       .max_buffers = cases[i].buffers,
					       .lanes = cases[i].lanes };
		T_OK(ferry__settings_resolve(&o, &s));
		T_EQ(s.lanes, cases[i].want);
	}
}

static void test_shards(void)
{
	unsigned id, n;
	T_OK(ferry__settings_shard(-1, 0, &id, &n));
	T_ASSERT(id == 0 && n == 1);
	setenv("WORLD_SIZE", "4", 1);
	setenv("RANK", "3", 1);
	T_OK(ferry__settings_shard(1, 0, &id, &n)); /* num_shards unset: both from the environment */
	T_ASSERT(id == 3 && n == 4);
	T_OK(ferry__settings_shard(1, 2, &id, &n));
	T_ASSERT(id == 1 && n == 2);
	T_OK(ferry__settings_shard(-1, 8, &id, &n));
	T_ASSERT(id == 3 && n == 8);
	setenv("RANK", "4", 1);
	T_EQ(ferry__settings_shard(-1, 0, &id, &n), -FERRY_ECONFIG);
	clear_env();
	expect_refused("RANK", "x");
	expect_refused("WORLD_SIZE", "0");
}

int main(void)
{
	clear_env();
	test_chunk_sizes();
	test_every_variable_refuses();
	test_options_win();
	test_direct_modes();
	test_wait_modes();
	test_lanes_fit();
	test_shards();
	size_t n;
	ferry__settings_table(&n);
	T_EQ(n, FERRY__ARRAY_LEN(variables));
	printf("settings: resolved in one place, every bad value named\n");
	return T_EXIT_PASS;
}
