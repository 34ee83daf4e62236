/*
 * ferry__load_read's choice of backend for one file's requests: fewer than
 * FERRY__GATHER_MIN go through the loader's own backend; a gather of that
 * many or more scattered pieces goes to files_ops when it keeps more in
 * flight (io_uring beside pread); with no such backend beside it, or one as
 * shallow, the loader's own backend reads them all. Every byte of every
 * request is checked against the file's pattern. Skipped where this build
 * or kernel has no io_uring.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "helpers.h"
#include "io/io.h"
#include "load/load.h"

#define FILE_BYTES (1 << 20)
#define PIECE 12    /* bytes a request reads: scattered, unaligned */
#define STRIDE 4099 /* bytes between the starts of two requests */
#define REQS_MAX 64

/* Reads n scattered pieces of f through ld, checks every byte, and returns
 * how many read calls the loader's own (counting) backend took. */
static unsigned long gather(const struct ferry__loader *ld, struct ferry__file *f, unsigned n)
{
	static unsigned char dst[REQS_MAX][PIECE];
	struct ferry__io_req reqs[REQS_MAX];
	memset(dst, 0, sizeof(dst));
	for (unsigned i = 0; i < n; i++)
		reqs[i] = (struct ferry__io_req){ .dst = dst[i], .len = PIECE,
						  .offset = (uint64_t)i * STRIDE + 3 };
	t_io_arm(T_IO_NONE, 0, 0, 0);
	T_OK(ferry__load_read(ld, f, reqs, n));
	for (unsigned i = 0; i < n; i++) {
		T_EQ(reqs[i].result, PIECE);
		T_EQ(t_check_pattern(dst[i], PIECE, 7, reqs[i].offset), PIECE);
	}
	return t_io_calls(T_IO_READ);
}

int main(void)
{
	if (!ferry__io_uring.name)
		T_SKIP("built without liburing");
	struct ferry__device *dev = t_open_device();
	struct ferry__io *own_io, *uring_io;
	const struct ferry__io_ops *own = t_fault_io(&ferry__io_posix);
	T_OK(own->init(dev, &own_io));
	if (ferry__io_uring.init(dev, &uring_io) < 0)
		T_SKIP("io_uring refused here: %s", ferry_last_error());
	struct ferry__loader ld = { .dev = dev, .io_ops = own, .io = own_io,
				    .files_ops = &ferry__io_uring, .files_io = uring_io };
	struct ferry__file *f;
	char *dir = strdup(t_tmpdir()), path[1100];
	snprintf(path, sizeof(path), "%s/pattern.bin", dir);
	t_write_pattern_file(path, FILE_BYTES, 7);
	T_OK(own->open(own_io, path, 0, &f));

	T_EQ(gather(&ld, f, 1), 1);
	T_EQ(gather(&ld, f, FERRY__GATHER_MIN - 1), 1);
	T_EQ(gather(&ld, f, FERRY__GATHER_MIN), 0);
	T_EQ(gather(&ld, f, REQS_MAX), 0);

	ld.files_ops = NULL; /* nothing beside it: its own backend reads them all */
	T_EQ(gather(&ld, f, REQS_MAX), 1);
	ld.files_ops = own; /* beside it, but no deeper */
	ld.files_io = own_io;
	T_EQ(gather(&ld, f, REQS_MAX), 1);

	own->close(own_io, f);
	ferry__io_uring.fini(uring_io);
	own->fini(own_io);
	dev->ops->close(dev);
	t_rmtree(dir);
	free(dir);
	printf("test_load_gather: ok\n");
	return 0;
}
