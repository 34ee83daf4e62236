/*
 * The cufile IO backend: NVIDIA cuFile (GPUDirect Storage) reads straight into
 * device staging. libcufile.so.0 is loaded with dlopen when the first backend
 * is set up, so that one build runs with or without it; the driver is opened
 * once per process and left open until exit.
 *
 * cuFileRead wants the base pointer a buffer was registered with plus an
 * offset into it, so the backend keeps the registered staging blocks sorted by
 * base and looks up the block of each destination.
 */
#include "io/io.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

/*
 * The few declarations of cufile.h (libcufile 1.x) that ferry needs, so that
 * building does not need the header.
 */
enum {
	CUFILE_SUCCESS = 0,
	CUFILE_BASE_ERR = 5000,          /* CUFILEOP_BASE_ERR */
	CUFILE_CUDA_DRIVER_ERROR = 5011, /* CU_FILE_CUDA_DRIVER_ERROR: cu_err says more */
	CUFILE_HANDLE_TYPE_OPAQUE_FD = 1,
};

typedef struct {        /* CUfileError_t */
	int err;        /* CUfileOpError */
	int cu_err;     /* CUresult */
} cufile_error;

typedef void *cufile_handle;    /* CUfileHandle_t */

typedef struct {                /* CUfileDescr_t */
	int type;               /* enum CUfileFileHandleType */
	union {
		int fd;
		void *handle;
	} handle;
	const void *fs_ops;     /* const CUfileFSOps_t *, NULL for plain files */
} cufile_descr;

/* CUfileDrvProps_t begins with nvfs; padded in case a release grows it. */
typedef union {
	struct {
		unsigned major_version; /* of nvidia-fs: 0.0 when it is not loaded */
		unsigned minor_version;
		size_t poll_thresh_size;
		size_t max_direct_io_size;
		unsigned dstatusflags;
		unsigned dcontrolflags;
	} nvfs;
	unsigned char pad[1024];
} cufile_props;

struct cufile_api {
	cufile_error (*driver_open)(void);
	cufile_error (*driver_get_properties)(cufile_props *props);
	cufile_error (*get_version)(int *version); /* optional: newer releases */
	cufile_error (*handle_register)(cufile_handle *fh, cufile_descr *descr);
	void (*handle_deregister)(cufile_handle fh);
	cufile_error (*buf_register)(const void *base, size_t len, int flags);
	cufile_error (*buf_deregister)(const void *base);
	ssize_t (*read)(cufile_handle fh, void *base, size_t size, off_t file_offset,
			off_t base_offset);
};

/* The process-wide library and driver state, set once by load_cufile. */
static struct {
	struct cufile_api api;
	int rc;          /* 0 when cuFile is usable, else a negative code */
	char why[256];   /* why it is not */
	int gds;         /* nvidia-fs is loaded: direct GDS, not compatibility mode */
	int version;     /* cuFileGetVersion: 1000 * major + 10 * minor; 0 unknown */
} g_cufile = { .rc = -FERRY_EIO_BACKEND };
static pthread_once_t g_cufile_once = PTHREAD_ONCE_INIT;

struct cufile_block {
	uintptr_t base;
	size_t len;
};

struct cufile_io {
	struct ferry__device *dev;
	pthread_rwlock_t lock;          /* guards blocks */
	struct cufile_block *blocks;    /* registered staging, sorted by base */
	unsigned count, cap;
};

static struct cufile_io *to_cufile(struct ferry__io *io)
{
	return (struct cufile_io *)(void *)io;
}

/* Returns a short text for a CUfileOpError (the common ones), or NULL. */
static const char *cufile_error_text(int err)
{
	switch (err) {
	case 5001: return "nvidia-fs driver is not loaded and compatibility mode is off";
	case 5004: return "nvidia-fs driver version mismatch";
	case 5007: return "GPUDirect Storage not supported on this platform";
	case 5008: return "GPUDirect Storage not supported on this file";
	case 5009: return "GPUDirect Storage not supported on this GPU";
	case 5011: return "CUDA driver error";
	case 5012: return "invalid device pointer";
	case 5015: return "CUDA context mismatch";
	case 5018: return "unsupported file type";
	case 5020: return "file not opened with O_DIRECT";
	case 5022: return "invalid arguments";
	case 5023: return "device pointer already registered";
	case 5024: return "device pointer not registered";
	case 5025: return "driver or file access error";
	case 5027: return "file handle not registered";
	case 5029: return "GPU device not found";
	case 5030: return "internal error";
	case 5044: return "cuFile IO error";
	default: return NULL;
	}
}

/* Writes "cuFile error N (text)" for e into buf; returns buf. */
static const char *describe_error(cufile_error e, char *buf, size_t len)
{
	const char *text = cufile_error_text(e.err);

	if (e.err == CUFILE_CUDA_DRIVER_ERROR)
		snprintf(buf, len, "cuFile error %d (CUDA driver error %d)", e.err, e.cu_err);
	else
		snprintf(buf, len, "cuFile error %d (%s)", e.err, text ? text : "see cufile.log");
	return buf;
}

/* ---- loading the library and opening the driver, once ------------------- */

/* Records why cuFile is unusable; always returns -1 for the loader's flow. */
static int refuse(const char *fmt, const char *arg)
{
	g_cufile.rc = -FERRY_EIO_BACKEND;
	snprintf(g_cufile.why, sizeof(g_cufile.why), fmt, arg);
	return -1;
}

/* Resolves one required symbol into *slot. Returns 0 or -1 (refused). */
static int resolve(void *lib, const char *name, void *slot)
{
	void *sym = dlsym(lib, name);

	if (!sym)
		return refuse("cufile: libcufile.so.0 lacks %s", name);
	memcpy(slot, &sym, sizeof(sym));
	return 0;
}

/* Fills g_cufile.api from lib. Returns 0 or -1 (refused). */
static int resolve_api(void *lib)
{
	struct cufile_api *a = &g_cufile.api;
	void *version = dlsym(lib, "cuFileGetVersion");

	if (resolve(lib, "cuFileDriverOpen", &a->driver_open) ||
	    resolve(lib, "cuFileDriverGetProperties", &a->driver_get_properties) ||
	    resolve(lib, "cuFileHandleRegister", &a->handle_register) ||
	    resolve(lib, "cuFileHandleDeregister", &a->handle_deregister) ||
	    resolve(lib, "cuFileBufRegister", &a->buf_register) ||
	    resolve(lib, "cuFileBufDeregister", &a->buf_deregister) ||
	    resolve(lib, "cuFileRead", &a->read))
		return -1;
	memcpy(&a->get_version, &version, sizeof(version));
	return 0;
}

/* Some cuFile releases close standard descriptors while the driver opens; a
 * data file could then become descriptor 0. Puts /dev/null on any that are
 * closed. */
static void reopen_closed_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		int null_fd = open("/dev/null", O_RDWR);
		if (null_fd >= 0 && null_fd != fd) {
			dup2(null_fd, fd);
			close(null_fd);
		}
	}
}

/* Returns NULL when this system can host cuFile, else why not. */
static const char *unfit_system(void)
{
	char text[256] = "";
	FILE *f;

	/* Without udev's database cuFile cannot identify a file's volume:
	 * cuFileHandleRegister fails for every file, and some releases crash in
	 * cuFileDriverOpen. */
	if (access("/run/udev", R_OK | X_OK) != 0)
		return "/run/udev is not readable, and cuFile needs it to register files";
	f = fopen("/proc/sys/kernel/osrelease", "r");
	if (!f)
		return NULL;
	if (!fgets(text, sizeof(text), f))
		text[0] = '\0';
	fclose(f);
	if (strstr(text, "microsoft") || strstr(text, "Microsoft") || strstr(text, "WSL"))
		return "not used under WSL, where its driver open crashes";
	return NULL;
}

/* Asks the open driver whether nvidia-fs serves it (direct GDS) and which
 * library version it is. */
static void read_mode(void)
{
	cufile_props props;
	int version = 0;

	memset(&props, 0, sizeof(props));
	if (g_cufile.api.driver_get_properties(&props).err == CUFILE_SUCCESS)
		g_cufile.gds = props.nvfs.major_version || props.nvfs.minor_version;
	if (access("/proc/driver/nvidia-fs", F_OK) != 0)
		g_cufile.gds = 0;
	if (g_cufile.api.get_version &&
	    g_cufile.api.get_version(&version).err == CUFILE_SUCCESS)
		g_cufile.version = version;
}

/* The pthread_once routine: loads libcufile, opens the driver, reads the mode.
 * Runs on the thread of the first init, whose CUDA context is current. */
static void load_cufile(void)
{
	const char *unfit = unfit_system();
	char text[128];
	void *lib;
	cufile_error e;

	if (unfit) {
		refuse("cufile: %s", unfit);
		return;
	}
	lib = dlopen("libcufile.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		refuse("cufile: cannot load libcufile.so.0: %s", dlerror());
		return;
	}
	if (resolve_api(lib) < 0)
		return; /* the library stays loaded: unloading it is not worth the risk */
	e = g_cufile.api.driver_open();
	reopen_closed_std_fds();
	if (e.err != CUFILE_SUCCESS) {
		refuse("cufile: cuFileDriverOpen failed: %s", describe_error(e, text, sizeof(text)));
		return;
	}
	read_mode();
	g_cufile.rc = 0;
}

/* ---- backend ------------------------------------------------------------ */

/* Makes dev's context current on this thread, as cuFile calls need. Returns 0
 * or a negative code. */
static int bind_device(struct ferry__device *dev)
{
	return dev->ops->make_current ? dev->ops->make_current(dev) : 0;
}

/* Returns 0 and a new backend, or -FERRY_EIO_BACKEND (with a message) when the
 * device is not CUDA or cuFile cannot be used here. */
static int cufile_init(struct ferry__device *dev, struct ferry__io **out)
{
	struct cufile_io *c;
	int rc;

	*out = NULL;
	if (!dev || !(dev->ops->flags & FERRY__DEV_GPU_MEMORY))
		return ferry__fail(-FERRY_EIO_BACKEND, "cufile: needs a device with GPU memory, not %s",
				   dev ? dev->ops->name : "none");
	rc = bind_device(dev);
	if (rc < 0)
		return rc;
	pthread_once(&g_cufile_once, load_cufile);
	if (g_cufile.rc < 0)
		return ferry__fail(g_cufile.rc, "%s", g_cufile.why);
	c = calloc(1, sizeof(*c));
	if (!c)
		return ferry__fail(-ENOMEM, "cufile: out of memory");
	c->dev = dev;
	pthread_rwlock_init(&c->lock, NULL);
	*out = (struct ferry__io *)(void *)c;
	return 0;
}

/* Deregisters the blocks the engine left registered and frees io. */
static void cufile_fini(struct ferry__io *io)
{
	struct cufile_io *c = to_cufile(io);

	if (!c)
		return;
	if (c->count && bind_device(c->dev) == 0)
		for (unsigned i = 0; i < c->count; i++)
			g_cufile.api.buf_deregister((const void *)c->blocks[i].base);
	free(c->blocks);
	pthread_rwlock_destroy(&c->lock);
	free(c);
}

/* Returns 0 after writing the mode and library version. */
static int cufile_describe(struct ferry__io *io, char *buf, size_t len)
{
	const char *mode = g_cufile.gds ? "direct GDS" : "compatibility mode (no nvidia-fs)";
	int v = g_cufile.version;

	if (v > 0)
		snprintf(buf, len, "cufile: %s, libcufile %d.%d", mode, v / 1000, v % 1000 / 10);
	else
		snprintf(buf, len, "cufile: %s", mode);
	return 0;
}

/* Opens path with O_DIRECT (buffered where the file system refuses it, which
 * compatibility mode accepts) and registers it with cuFile. Returns 0 or a
 * negative code. */
static int cufile_open(struct ferry__io *io, const char *path, int flags,
		       struct ferry__file **out)
{
	struct cufile_io *c = to_cufile(io);
	cufile_descr descr;
	cufile_handle handle = NULL;
	cufile_error e;
	char text[128];
	struct ferry__file *f;
	int rc = ferry__io_file_open(path, flags | FERRY__IO_DIRECT | FERRY__IO_BLOCKING, &f);

	*out = NULL;
	if (rc < 0)
		return rc;
	rc = bind_device(c->dev);
	if (rc < 0)
		goto fail;
	memset(&descr, 0, sizeof(descr));
	descr.type = CUFILE_HANDLE_TYPE_OPAQUE_FD;
	descr.handle.fd = f->fd;
	e = g_cufile.api.handle_register(&handle, &descr);
	if (e.err != CUFILE_SUCCESS) {
		rc = ferry__fail(-FERRY_EDEVICE, "%s: cuFileHandleRegister: %s", path,
				 describe_error(e, text, sizeof(text)));
		goto fail;
	}
	f->backend = handle;
	*out = f;
	return 0;
fail:
	ferry__io_file_close(f);
	return rc;
}

static void cufile_close(struct ferry__io *io, struct ferry__file *f)
{
	struct cufile_io *c = to_cufile(io);

	if (!f)
		return;
	if (f->backend && bind_device(c->dev) == 0)
		g_cufile.api.handle_deregister(f->backend);
	ferry__io_file_close(f);
}

/* ---- registered blocks -------------------------------------------------- */

/* The index of the first block whose base is above p. Caller holds the lock. */
static unsigned upper_bound(const struct cufile_io *c, uintptr_t p)
{
	unsigned lo = 0, hi = c->count;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (c->blocks[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Finds the registered block holding [dst, dst + len): writes its base and
 * dst's offset in it. Unregistered memory reads with itself as base (cuFile
 * then bounces it through its own buffers). */
static void find_block(struct cufile_io *c, void *dst, size_t len, void **base, off_t *offset)
{
	uintptr_t p = (uintptr_t)dst;
	unsigned i;

	*base = dst;
	*offset = 0;
	pthread_rwlock_rdlock(&c->lock);
	i = upper_bound(c, p);
	if (i > 0) {
		const struct cufile_block *b = &c->blocks[i - 1];
		size_t into = p - b->base;
		if (into <= b->len && len <= b->len - into) {
			*base = (void *)b->base;
			*offset = (off_t)into;
		}
	}
	pthread_rwlock_unlock(&c->lock);
}

/* Adds a block to the sorted array. Returns 0 or -ENOMEM. */
static int insert_block(struct cufile_io *c, uintptr_t base, size_t len)
{
	unsigned i;
	int rc = 0;

	pthread_rwlock_wrlock(&c->lock);
	if (c->count == c->cap) {
		unsigned cap = c->cap ? 2 * c->cap : 16;
		struct cufile_block *grown = realloc(c->blocks, cap * sizeof(*grown));
		if (!grown) {
			rc = -ENOMEM;
			goto out;
		}
		c->blocks = grown;
		c->cap = cap;
	}
	i = upper_bound(c, base);
	memmove(&c->blocks[i + 1], &c->blocks[i], (c->count - i) * sizeof(*c->blocks));
	c->blocks[i] = (struct cufile_block){ .base = base, .len = len };
	c->count++;
out:
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

/* Removes the block based at base. Returns 1 when it was there, else 0. */
static int remove_block(struct cufile_io *c, uintptr_t base)
{
	unsigned i;
	int found;

	pthread_rwlock_wrlock(&c->lock);
	i = upper_bound(c, base);
	found = i > 0 && c->blocks[i - 1].base == base;
	if (found) {
		memmove(&c->blocks[i - 1], &c->blocks[i], (c->count - i) * sizeof(*c->blocks));
		c->count--;
	}
	pthread_rwlock_unlock(&c->lock);
	return found;
}

/* Registers a staging block with cuFile, once. Returns 0 or a negative code. */
static int cufile_register_block(struct ferry__io *io, void *base, size_t len)
{
	struct cufile_io *c = to_cufile(io);
	char text[128];
	cufile_error e;
	int rc = bind_device(c->dev);

	if (rc < 0)
		return rc;
	e = g_cufile.api.buf_register(base, len, 0);
	if (e.err != CUFILE_SUCCESS)
		return ferry__fail(-FERRY_EDEVICE, "cufile: cuFileBufRegister(%p, %zu): %s", base,
				   len, describe_error(e, text, sizeof(text)));
	rc = insert_block(c, (uintptr_t)base, len);
	if (rc < 0) {
		g_cufile.api.buf_deregister(base);
		return ferry__fail(rc, "cufile: out of memory");
	}
	return 0;
}

static void cufile_deregister_block(struct ferry__io *io, void *base, size_t len)
{
	struct cufile_io *c = to_cufile(io);

	if (remove_block(c, (uintptr_t)base) && bind_device(c->dev) == 0)
		g_cufile.api.buf_deregister(base);
}

/* ---- reads -------------------------------------------------------------- */

/* Turns a failed cuFileRead's return into a code with a message. */
static int read_failed(const struct ferry__file *f, uint64_t offset, ssize_t ret)
{
	cufile_error e = { .err = (int)-ret };
	char text[128];

	if (ret == -1)
		return ferry__io_read_failed(f, offset, errno ? -errno : -EIO);
	if (-ret > CUFILE_BASE_ERR)
		return ferry__fail(-EIO, "%s: read at offset %" PRIu64 ": %s", f->path, offset,
				   describe_error(e, text, sizeof(text)));
	return ferry__io_read_failed(f, offset, (int)ret); /* some releases: -errno */
}

/* Reads r with cuFileRead until it is complete or EOF. Returns the byte count
 * or a negative code (with a message). */
static ssize_t read_request(struct cufile_io *c, const struct ferry__file *f,
			    const struct ferry__io_req *r)
{
	size_t done = 0;
	void *base;
	off_t base_offset;

	find_block(c, r->dst, r->len, &base, &base_offset);
	while (done < r->len) {
		errno = 0;
		ssize_t got = g_cufile.api.read(f->backend, base, r->len - done,
						(off_t)(r->offset + done),
						base_offset + (off_t)done);
		if (got < 0)
			return read_failed(f, r->offset + done, got);
		if (got == 0)
			break;
		done += (size_t)got;
		if (ferry__io_direct_eof(f, done))
			break;
	}
	return (ssize_t)done;
}

/*
 * Runs every request, each result saying how far it got or its error. Returns
 * 0, or the first failed request's error (the message is that one's). cuFile
 * handles unaligned ranges itself (through its bounce buffers), so requests
 * need no alignment even on an O_DIRECT descriptor.
 */
static int cufile_read(struct ferry__io *io, struct ferry__file *f, struct ferry__io_req *reqs,
		       unsigned n)
{
	struct cufile_io *c = to_cufile(io);
	int first_error = ferry__io_check_requests(f, reqs, n, 0);
	char *first_message = NULL;

	if (first_error == 0)
		first_error = bind_device(c->dev);
	if (first_error < 0)
		return first_error;
	for (unsigned i = 0; i < n; i++) {
		reqs[i].result = read_request(c, f, &reqs[i]);
		if (reqs[i].result < 0 && !first_error) {
			first_error = (int)reqs[i].result;
			first_message = ferry__error_copy();
		}
	}
	if (first_error && first_message)
		ferry__fail(first_error, "%s", first_message);
	free(first_message);
	return first_error;
}

const struct ferry__io_ops ferry__io_cufile = {
	.name = "cufile",
	.placement = FERRY__STAGE_DEVICE,
	.depth = 1,
	.init = cufile_init,
	.fini = cufile_fini,
	.describe = cufile_describe,
	.open = cufile_open,
	.close = cufile_close,
	.read = cufile_read,
	.register_block = cufile_register_block,
	.deregister_block = cufile_deregister_block,
};
