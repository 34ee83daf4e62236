/*
 * Storage IO backends: open a file, read aligned byte ranges into staging.
 *
 * posix and uring read into pinned host staging (the copy to the device is
 * host-to-device); cufile reads into device staging registered with
 * cuFileBufRegister (the copy is device-to-device). Every function returns 0
 * (or a byte count) on success, a negative code on failure, and sets
 * ferry_last_error() to a message naming the file.
 */
#ifndef FERRY_IO_H
#define FERRY_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "device/device.h"

struct ferry__io;  /* a backend's state, one per context */

/* What identifies one version of a file: a file replaced (rename, new inode)
 * or rewritten in place (size, mtime, ctime) no longer matches. */
struct ferry__file_id {
	uint64_t dev, ino;
	uint64_t size;
	int64_t mtime_ns, ctime_ns;
	uint64_t nlink;     /* a rename over the path or an unlink moves ctime, not the bytes */
};

struct ferry__file {
	const char *path;   /* as given by the caller (owned by the file) */
	int fd;             /* the descriptor reads use */
	int direct;         /* reads bypass the page cache (O_DIRECT): from the open, or
			     * turned on later by ferry__io_set_direct */
	uint64_t size;      /* file size at open (id.size) */
	struct ferry__file_id id; /* the file as it was opened */
	void *backend;      /* backend-private (cuFile handle) */
	int mapped;         /* the last load copied it from a registered mapping of the
			     * page cache (load/mapped.c), not through staging */
};

/* One read of a batch: len bytes at offset into dst. result: bytes read, or a
 * negative code. */
struct ferry__io_req {
	void *dst;
	size_t len;
	uint64_t offset;
	ssize_t result;
};

/* One small file read whole, by path, in a batch of them (read_files): its
 * bytes from offset into dst[0..ndst) in order (a header into scratch, the
 * payload into staging): a .npy file from 0, an archive's member from its
 * data. */
struct ferry__file_read {
	const char *path;
	uint64_t offset;
	struct iovec dst[2];
	unsigned ndst;
	size_t len;                 /* the sum of the dst lengths */
	ssize_t result;             /* out: bytes read, or -errno */
	struct ferry__file_id id;   /* out: the path's identity right after the read */
};

enum {
	FERRY__IO_DIRECT = 1,   /* open with O_DIRECT */
	FERRY__IO_BLOCKING = 2, /* clear O_NONBLOCK after the open (io_uring and cuFile
				 * honour it on regular files; pread does not) */
};

struct ferry__io_ops {
	const char *name;                 /* "posix", "uring", "cufile" */
	enum ferry__placement placement;  /* where its reads land */
	unsigned depth;                   /* requests one read call keeps in flight at once */

	/* Probes and sets up the backend for dev; -FERRY_EIO_BACKEND when absent. */
	int (*init)(struct ferry__device *dev, struct ferry__io **out);
	void (*fini)(struct ferry__io *io);
	/* One line: the mode (cuFile: "direct GDS" or "compatibility"), or "". */
	int (*describe)(struct ferry__io *io, char *buf, size_t len);

	/* Opens path for reading; flags FERRY__IO_DIRECT asks for O_DIRECT (falls
	 * back to buffered reads, saying so once, where the file system refuses). */
	int (*open)(struct ferry__io *io, const char *path, int flags, struct ferry__file **out);
	void (*close)(struct ferry__io *io, struct ferry__file *f);

	/* Reads every request of reqs (several in flight where the backend can);
	 * loops over short reads, stops at EOF. For direct files, dst, len and
	 * offset must be multiples of 4096 (len may run past EOF). Returns 0 when
	 * every request ran (each result says how far it got), or a negative code. */
	int (*read)(struct ferry__io *io, struct ferry__file *f, struct ferry__io_req *reqs,
		    unsigned n);

	/* Optional (NULL: open, read and close each file): reads n small files
	 * whole, opening, reading and closing them in the kernel without a system
	 * call each. Every file's result and identity say how it went. Returns 0,
	 * or a negative code when the batch could not run at all. */
	int (*read_files)(struct ferry__io *io, struct ferry__file_read *files, unsigned n);

	/* Staging blocks are registered once, as the engine allocates them (may be
	 * NULL when the backend needs no registration). */
	int (*register_block)(struct ferry__io *io, void *base, size_t len);
	void (*deregister_block)(struct ferry__io *io, void *base, size_t len);
};

/*
 * Reads len bytes at offset of the open file f into host memory at buf
 * (whatever the backend: headers and host conversions read this way, never
 * by reopening the path). Direct files are read through an aligned bounce
 * buffer unless buf, len and offset are aligned. With got NULL, a file that
 * ends first is -FERRY_ETRUNCATED; else *got says how many bytes were read.
 * Returns 0 or a negative code, with a message naming the file.
 */
int ferry__io_read_host(struct ferry__file *f, void *buf, size_t len, uint64_t offset,
			size_t *got);

/*
 * Checks that f still holds the bytes it held when opened: same device,
 * inode, size and modification time, and the same change time unless its
 * link count changed (renaming another file over the path, or unlinking it,
 * moves ctime but leaves an open file's bytes alone). Returns 0, or
 * -FERRY_ECHANGED with a message naming the file and what changed.
 */
int ferry__io_check_unchanged(struct ferry__file *f);

/*
 * The identity of whatever path names now (stat, following links), for
 * questions about a file no longer open: was it replaced or removed since?
 * Never a way to read it (reads go through the file opened). Returns 0, or
 * -errno without a message.
 */
int ferry__io_path_id(const char *path, struct ferry__file_id *out);

/* ==== the page cache (residency.c) ==== */

/*
 * How many bytes of [offset, offset + len) of the open file f (cut to its size
 * at open) are in the page cache, into *bytes: cachestat(2) on f's descriptor,
 * or, where the kernel lacks it or refuses (ENOSYS, EPERM, EINVAL), mincore(2)
 * over a shared read-only mapping of the same descriptor, never touched.
 * Returns 0, or -errno without a message: callers treat the answer as unknown.
 */
int ferry__io_resident(const struct ferry__file *f, uint64_t offset, uint64_t len,
		       uint64_t *bytes);
/* The mincore fallback of ferry__io_resident on its own (tests compare the two). */
int ferry__io_resident_mincore(const struct ferry__file *f, uint64_t offset, uint64_t len,
			       uint64_t *bytes);
/* "cachestat" when this kernel answers it, else "mincore". */
const char *ferry__io_residency_method(void);

/*
 * Maps the whole of the open file f (its size at open) read-only and shared
 * from f's own descriptor (never by path), for copies straight out of the
 * page cache (load/mapped.c). A page past the end of a file that shrank
 * since raises SIGBUS when touched: only the device's FERRY__H2D_MAPPED
 * copies, which never fault, may read it. Returns 0 with *addr and *len, or
 * a negative code with a message naming the file.
 */
int ferry__io_map(const struct ferry__file *f, void **addr, size_t *len);
/* Reserves len bytes of address space (no access, no memory), starting at a
 * huge page's boundary, for files to be mapped side by side with
 * ferry__io_map_at. Returns 0 or a negative code. */
int ferry__io_reserve(size_t len, void **addr);
/* As ferry__io_map, but at addr (page-aligned, inside a reservation, room for
 * f's size): the mapping replaces that part of the reservation. */
int ferry__io_map_at(const struct ferry__file *f, void *addr);
/* Unmaps what ferry__io_map mapped, or a reservation and all that was mapped
 * into it (addr NULL is allowed). */
void ferry__io_unmap(void *addr, size_t len);

/*
 * Turns O_DIRECT on for f's descriptor in place (fcntl F_SETFL, keeping its
 * other flags; never a second open, so the bytes stay those of the file f
 * opened) and sets f->direct. Returns 0, or -errno without a message: -EINVAL
 * where the file system refuses O_DIRECT (f stays buffered).
 */
int ferry__io_set_direct(struct ferry__file *f);

/* MemAvailable of /proc/meminfo in bytes. Returns 0 or -errno (no message). */
int ferry__io_mem_available(uint64_t *bytes);

extern const struct ferry__io_ops ferry__io_posix;
extern const struct ferry__io_ops ferry__io_uring; /* name NULL when built without liburing */
extern const struct ferry__io_ops ferry__io_cufile;

/* The table named name, or NULL when unknown or not built. */
const struct ferry__io_ops *ferry__io_find(const char *name);

/* ==== shared by the backends ==== */
/*
 * What the IO backends share (implemented in file.c): opening a file with the
 * O_DIRECT fallback, checking requests, ending reads at EOF, and the message
 * of a failed read.
 */

/* O_DIRECT alignment of buffers, lengths and file offsets. */
#define FERRY__IO_ALIGN 4096u

/*
 * Opens path read-only into a new ferry__file (path copied, size and mtime from
 * fstat; directories and other non-regular files are refused). With
 * FERRY__IO_DIRECT it resolves the path and tries O_DIRECT first; where the
 * file system refuses, it falls back to buffered reads and says so on stderr,
 * once per process. Returns 0 or a negative code with a message naming path.
 */
int ferry__io_file_open(const char *path, int flags, struct ferry__file **out);

/* A second ferry__file on a dup() of f's descriptor: the same open file (never
 * the path again), with f's identity, for work that outlives f (the
 * registrar of load/mapped.c). Close it with ferry__io_file_close. Returns 0
 * or a negative code naming the file. */
int ferry__io_file_dup(const struct ferry__file *f, struct ferry__file **out);

/* Closes f's descriptor and frees f (NULL is allowed). */
void ferry__io_file_close(struct ferry__file *f);

/*
 * Checks every request of reqs against f and zeroes its result: the range must
 * fit in an off_t and, when aligned is set and f is direct, dst, len and offset
 * must be multiples of FERRY__IO_ALIGN. Returns 0, or -EINVAL with a message
 * (the offending request's result is set to it too).
 */
int ferry__io_check_requests(const struct ferry__file *f, struct ferry__io_req *reqs,
			     unsigned n, int aligned);

/* Returns 1 when a read of f that has got done bytes so far has reached EOF
 * although it asked for more: direct reads end short (unaligned) only there. */
int ferry__io_direct_eof(const struct ferry__file *f, size_t done);

/* Sets the message "PATH: read at offset N: strerror(-err)" and returns err. */
int ferry__io_read_failed(const struct ferry__file *f, uint64_t offset, int err);

/* Sets the message "PATH: file ends at byte END, expected at least WANT" and
 * returns -FERRY_ETRUNCATED. */
int ferry__io_truncated(const struct ferry__file *f, uint64_t end, uint64_t want);

#endif
