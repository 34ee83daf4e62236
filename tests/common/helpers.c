#include "helpers.h"

#include "context/context.h"
#include "engine/engine.h"

#include <ftw.h>
#include <unistd.h>

struct ferry__device *t_open_device(void)
{
	struct ferry__device *dev;
	int rc = ferry__ctx_open_device(NULL, &dev);
	if (rc < 0)
		T_SKIP("no device: %s (%s)", ferry_strerror(rc), ferry_last_error());
	return dev;
}

struct ferry__staging *t_pinned_engine_after(struct ferry__device *dev, size_t chunk,
					     unsigned buffers, unsigned launch_after)
{
	struct ferry__staging_config cfg = { .chunk_size = chunk, .max_buffers = buffers,
					     .initial_buffers = buffers, .launch_after = launch_after,
					     .placement = FERRY__STAGE_PINNED };
	struct ferry__staging *stg;
	T_OK(ferry__staging_create(dev, &cfg, &stg));
	return stg;
}

struct ferry__staging *t_pinned_engine(struct ferry__device *dev, size_t chunk, unsigned buffers)
{
	return t_pinned_engine_after(dev, chunk, buffers, 32);
}

/* Each 8-byte word holds (file_id << 40) | (offset / 8), offset rounded down. */
static uint64_t pattern_word(uint32_t file_id, uint64_t word_index)
{
	return ((uint64_t)file_id << 40) ^ (word_index & ((1ull << 40) - 1));
}

static uint8_t pattern_byte(uint32_t file_id, uint64_t pos)
{
	uint64_t w = pattern_word(file_id, pos / 8);
	return (uint8_t)(w >> (8 * (pos % 8)));
}

void t_fill_pattern(void *dst, size_t len, uint32_t file_id, uint64_t offset)
{
	uint8_t *p = dst;
	size_t i = 0;
	for (; i < len && (offset + i) % 8; i++)
		p[i] = pattern_byte(file_id, offset + i);
	for (; i + 8 <= len; i += 8) {
		uint64_t w = pattern_word(file_id, (offset + i) / 8);
		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = pattern_byte(file_id, offset + i);
}

/* Word by word where it can (a sanitizer checks each access: 8 times fewer),
 * then byte by byte from the first word that differs, to name its byte. */
void t_write_pattern_file(const char *path, size_t len, uint32_t file_id)
{
	char *buf = malloc(len);
	T_ASSERT(buf);
	t_fill_pattern(buf, len, file_id, 0);
	FILE *f = fopen(path, "wb");
	T_ASSERT(f && fwrite(buf, 1, len, f) == len && fclose(f) == 0);
	free(buf);
}

size_t t_check_pattern(const void *buf, size_t len, uint32_t file_id, uint64_t offset)
{
	const uint8_t *p = buf;
	size_t i = 0;
	for (; i < len && (offset + i) % 8; i++)
		if (p[i] != pattern_byte(file_id, offset + i))
			return i;
	for (; i + 8 <= len; i += 8) {
		uint64_t got, want = pattern_word(file_id, (offset + i) / 8);
		memcpy(&got, p + i, 8);
		if (got != want)
			break;
	}
	for (; i < len; i++)
		if (p[i] != pattern_byte(file_id, offset + i))
			return i;
	return len;
}

void t_describe_word(const void *word, char *buf, size_t len)
{
	uint64_t w;
	memcpy(&w, word, 8);
	snprintf(buf, len, "file %llu offset %llu", (unsigned long long)(w >> 40),
		 (unsigned long long)((w & ((1ull << 40) - 1)) * 8));
}

void *t_copy_back(struct ferry__device *dev, const void *src, size_t len)
{
	void *host = malloc(len ? len : 1);
	T_ASSERT(host);
	if (len)
		T_OK(dev->ops->copy_sync(dev, host, src, len, FERRY__D2H));
	return host;
}

uint64_t t_rand(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

char *t_tmpdir(void)
{
	static __thread char path[256];
	const char *base = getenv("TMPDIR");
	snprintf(path, sizeof(path), "%s/ferry-test-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(path))
		T_FAIL("mkdtemp %s failed", path);
	return path;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

void t_rmtree(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

unsigned t_csv_fields(char *line, char **fields, unsigned cap)
{
	unsigned n = 0;
	int quoted = 0;
	fields[n++] = line;
	for (char *p = line; *p; p++) {
		if (*p == '"')
			quoted = !quoted;
		else if (*p == ',' && !quoted && n < cap) {
			*p = 0;
			fields[n++] = p + 1;
		}
	}
	return n;
}
