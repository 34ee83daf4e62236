/*
 * libFuzzer target for the zip directory parser of .npz archives (npy.h): the
 * input is a whole archive. Finds the end record in its tail, the zip64 record
 * where the locator points, walks the central directory and each entry's local
 * header, as src/load/npz.c does, but on the bytes in memory. Checks what a
 * successful parse promises: the directory inside the input, every entry
 * inside the directory, names inside their entries, data offsets past their
 * local headers. Build and run: make -f fuzz/Makefile fuzz-run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy/npy.h"

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "fuzz_zip: %s failed at line %d\n", #cond,   \
				__LINE__);                                           \
			abort();                                                     \
		}                                                                    \
	} while (0)

static int ok_code(int rc)
{
	return rc == -FERRY_EFORMAT || rc == -FERRY_EUNSUPPORTED;
}

/* The end record, and the zip64 one when the locator points inside the input. */
static int find_end(const uint8_t *data, size_t size, struct ferry__zip_end *end)
{
	char why[200];
	size_t tail = size < FERRY__ZIP_TAIL_MAX ? size : FERRY__ZIP_TAIL_MAX;
	int rc = ferry__zip_find_end(data + size - tail, tail, size, end, why, sizeof(why));
	CHECK(rc == 0 ? why[0] == '\0' : ok_code(rc) && why[0]);
	if (rc < 0)
		return rc;
	CHECK(end->record_at + FERRY__ZIP_END_LEN <= size);
	if (!end->zip64)
		return 0;
	if (end->zip64_at > end->record_at || end->record_at - end->zip64_at < FERRY__ZIP64_END_LEN)
		return -FERRY_EFORMAT;
	rc = ferry__zip_parse_end64(data + end->zip64_at, FERRY__ZIP64_END_LEN, end, why,
				    sizeof(why));
	CHECK(rc == 0 || (ok_code(rc) && why[0]));
	return rc;
}

static void check_local(const uint8_t *data, size_t size, const struct ferry__zip_entry *e)
{
	char why[200];
	uint64_t at;
	if (e->local_offset >= size || size - e->local_offset < FERRY__ZIP_LOCAL_LEN + e->name_len)
		return;
	int rc = ferry__zip_local_data(data + e->local_offset, FERRY__ZIP_LOCAL_LEN + e->name_len,
				       e, &at, why, sizeof(why));
	CHECK(rc == 0 ? at >= FERRY__ZIP_LOCAL_LEN + e->name_len : ok_code(rc) && why[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ferry__zip_end end;
	struct ferry__zip_entry e;
	char why[200];
	if (find_end(data, size, &end) < 0)
		return 0;
	if (end.cd_offset > size || end.cd_size > size - end.cd_offset)
		return 0;
	const uint8_t *cd = data + end.cd_offset;
	size_t pos = 0, len = (size_t)end.cd_size;
	int rc;
	while ((rc = ferry__zip_next_entry(cd, len, &pos, &e, why, sizeof(why))) == 1) {
		CHECK(pos <= len);
		CHECK((const uint8_t *)e.name >= cd && (const uint8_t *)e.name + e.name_len <= cd + pos);
		CHECK(ferry__zip_entry_is(&e, "a") >= 0);
		check_local(data, size, &e);
	}
	CHECK(rc == 0 || (ok_code(rc) && why[0]));
	return 0;
}
