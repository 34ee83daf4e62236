/*
 * ferry — move tensors stored as NumPy .npy files from storage into GPU memory.
 *
 * Every function that can fail returns 0 (or a count) on success and a negative
 * error code on failure: -errno for system errors, or one of the FERRY_E* codes
 * below. ferry_strerror() names a code; ferry_last_error() gives the calling
 * thread's last detailed message, which names the file involved.
 */
#ifndef FERRY_H
#define FERRY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FERRY_API __attribute__((visibility("default")))
#else
#define FERRY_API
#endif

#define FERRY_VERSION_MAJOR 0
#define FERRY_VERSION_MINOR 1
#define FERRY_VERSION_PATCH 0
#define FERRY_VERSION_STRING "0.1.0"

/* ferry's own error codes; functions return them negated. */
enum {
	FERRY_EFORMAT = 1000,   /* not a valid .npy file */
	FERRY_EUNSUPPORTED = 1001, /* valid, but a dtype or feature ferry lacks */
	FERRY_EDEVICE = 1002,   /* the CUDA driver reported an error */
	FERRY_ENODEVICE = 1003, /* the requested device is not available */
	FERRY_ELEASED = 1004,   /* destroyed while staging buffers were still leased */
	FERRY_ECONFIG = 1005,   /* an option or environment variable is invalid */
	FERRY_ETRUNCATED = 1006, /* end of file before the expected length */
	FERRY_EMISMATCH = 1007, /* samples of one batch disagree (dtype, rank, or
				 * shape where stacked), or a rank-0 file as rows */
	FERRY_EBOUNDS = 1008,   /* a region of interest is out of bounds */
	FERRY_ECHANGED = 1009,  /* a file changed while it was being read */
	FERRY_EIO_BACKEND = 1010, /* the requested IO backend is not available */
	FERRY_EEND = 1011,      /* no more batches */
};

/* Element types of .npy arrays ferry loads. */
enum ferry_dtype {
	FERRY_DTYPE_INVALID = 0,
	FERRY_BOOL,
	FERRY_INT8, FERRY_INT16, FERRY_INT32, FERRY_INT64,
	FERRY_UINT8, FERRY_UINT16, FERRY_UINT32, FERRY_UINT64,
	FERRY_FLOAT16, FERRY_FLOAT32, FERRY_FLOAT64,
	FERRY_COMPLEX64, FERRY_COMPLEX128,
};

#define FERRY_MAX_DIMS 32

/* Returns the size in bytes of one element of dtype (0 for an invalid dtype). */
FERRY_API size_t ferry_dtype_size(enum ferry_dtype dtype);
/* Returns numpy's name for dtype ("float32", "bool", ...), or "invalid". */
FERRY_API const char *ferry_dtype_name(enum ferry_dtype dtype);

/* ---- Contexts: a device, an IO backend, a staging engine, IO threads ---- */

typedef struct ferry_ctx ferry_ctx;

/* The largest values the settings take, from options and the environment alike. */
#define FERRY_THREADS_MAX 1024        /* IO threads of a context or a reader */
#define FERRY_BUFFERS_MAX 4096        /* staging buffers of a context */
#define FERRY_BATCH_MAX (1u << 24)    /* samples of a batch */
#define FERRY_PREFETCH_MAX 1024       /* batches a reader loads ahead */

/*
 * ferry_ctx_options.direct: whether reads bypass the page cache (O_DIRECT).
 * AUTO chooses per read of 1 MiB or more through staging: bytes mostly in the
 * page cache are read buffered; cold ones buffered while the context's page-cache
 * budget (FERRY_CACHE_BUDGET, default half of MemAvailable) lasts, so that a
 * dataset that fits in memory is warm for the next epoch, and with O_DIRECT
 * after that. Smaller reads are always buffered. Where a file system refuses
 * O_DIRECT, reads stay buffered.
 *
 * Zero copy: a warm file of 4 MiB or more that a context has read once is
 * mapped and registered with the device in the background; later loads of the
 * same file version (ferry_load*, ferry_read_range, the reader) copy it straight
 * from the page cache, without a read. FERRY_PIN_BUDGET bounds the bytes kept
 * registered (default a quarter of MemAvailable; 0 turns it off); `ferry env`
 * says whether the device can. A file that changes or shrinks under it gives
 * -FERRY_ECHANGED, never a crash.
 */
enum ferry_direct {
	FERRY_DIRECT_ENV = -1,   /* FERRY_ODIRECT decides (0, 1 or auto; default auto) */
	FERRY_DIRECT_NEVER = 0,  /* buffered reads */
	FERRY_DIRECT_ALWAYS = 1, /* every file opened with O_DIRECT */
	FERRY_DIRECT_AUTO = 2,
};

/* Zero (or NULL) fields take the environment's value, then the default; but for
 * gpu and direct 0 is a value (GPU 0, O_DIRECT never): -1 defers to the
 * environment. */
struct ferry_ctx_options {
	const char *device;  /* "auto", "cuda", "host"       (FERRY_DEVICE, auto) */
	int gpu;             /* GPU ordinal, -1: FERRY_GPU, LOCAL_RANK, else 0 */
	const char *io;      /* "auto", "posix", "uring", "cufile" (FERRY_IO, auto) */
	size_t chunk_size;   /* staging chunk: power of two, 4 KiB..16 MiB (FERRY_CHUNK_SIZE, 2 MiB) */
	unsigned max_buffers;  /* staging buffers at most, 1..FERRY_BUFFERS_MAX (FERRY_MAX_BUFFERS, 128) */
	unsigned threads;    /* IO threads, 1..FERRY_THREADS_MAX (FERRY_THREADS; default: cores, at most 16) */
	int direct;          /* enum ferry_direct: FERRY_DIRECT_ENV (-1: FERRY_ODIRECT, default auto),
			      * NEVER (0), ALWAYS (1: O_DIRECT) or AUTO (2: per file, below) */
	unsigned lanes;      /* staging engines, 1..16 (FERRY_LANES, 4; fewer when
			      * max_buffers cannot give each 8 buffers) */
};

/* Opens a context. opt may be NULL. Returns 0 or a negative code. */
FERRY_API int ferry_ctx_create(ferry_ctx **out, const struct ferry_ctx_options *opt);
/* Waits for outstanding copies and frees the context. Returns 0, or a negative
 * code when something was left behind (the message says what). */
FERRY_API int ferry_ctx_destroy(ferry_ctx *ctx);
/* Writes a multi-line report (device, driver, IO backend and why, chunk size,
 * threads) into buf. Returns the length it needed, like snprintf. */
FERRY_API int ferry_ctx_describe(ferry_ctx *ctx, char *buf, size_t len);
/* Returns "cuda" or "host". */
FERRY_API const char *ferry_ctx_device_kind(ferry_ctx *ctx);
/* Returns the IO backend's name ("posix", "uring" or "cufile"). */
FERRY_API const char *ferry_ctx_io_name(ferry_ctx *ctx);

/* Device memory of the context's device (host memory on the host device). */
FERRY_API int ferry_device_alloc(ferry_ctx *ctx, size_t len, void **out);
FERRY_API void ferry_device_free(ferry_ctx *ctx, void *ptr);
/* Synchronous copies between the device and the host. */
FERRY_API int ferry_copy_to_host(ferry_ctx *ctx, void *host, const void *device, size_t len);
FERRY_API int ferry_copy_to_device(ferry_ctx *ctx, void *device, const void *host, size_t len);

/* ---- .npy files ---- */

/* What a .npy header says. Loaded arrays are always C order, native byte order. */
struct ferry_array_info {
	enum ferry_dtype dtype;
	size_t itemsize;
	int ndim;
	int64_t shape[FERRY_MAX_DIMS];
	uint64_t count;        /* elements */
	uint64_t nbytes;       /* count * itemsize */
	int fortran_order;     /* the file's order (the loaded array is C order) */
	int byteswapped;       /* the file's byte order is not the host's */
	int version_major, version_minor;
	uint64_t data_offset;  /* where the payload starts in the file */
};

/* Reads and validates the header of path. No context needed. Returns 0,
 * -FERRY_EFORMAT or -FERRY_EUNSUPPORTED (the message names the file and the
 * reason), or -errno. */
FERRY_API int ferry_info(const char *path, struct ferry_array_info *out);

/* An array in device memory that ferry allocated. */
typedef struct ferry_array ferry_array;

/* Loads path into new device memory: C order, native byte order. Returns 0
 * or a negative code with a message naming the file. */
FERRY_API int ferry_load(ferry_ctx *ctx, const char *path, ferry_array **out);
FERRY_API void *ferry_array_data(const ferry_array *a);
FERRY_API const struct ferry_array_info *ferry_array_info(const ferry_array *a);
FERRY_API void ferry_array_free(ferry_array *a);

/* Loads path into the caller's device buffer dst of dst_len bytes (at least
 * the array's nbytes, else -ENOSPC). info may be NULL. */
FERRY_API int ferry_load_into(ferry_ctx *ctx, const char *path, void *dst, size_t dst_len,
			      struct ferry_array_info *info);

/* ---- Loading without waiting ----
 * The calls above return once the bytes are on the device. These return as
 * soon as every copy is queued (the file has been read; the copies to the
 * device may still run), so the next file's reads overlap this one's copies.
 * The array must not be read before ferry_array_wait or
 * ferry_array_stream_wait says so; ferry_array_free waits for the copies
 * first. A copy that fails after the call returned is reported by
 * ferry_array_wait, on CUDA as the stream's error, and by ferry_ctx_destroy. */

/* As ferry_load, returning once every copy is queued. */
FERRY_API int ferry_load_async(ferry_ctx *ctx, const char *path, ferry_array **out);
/* As ferry_load_into, returning once every copy is queued. The array views dst
 * (ferry_array_free does not free dst); its info is the array's header. */
FERRY_API int ferry_load_into_async(ferry_ctx *ctx, const char *path, void *dst, size_t dst_len,
				    ferry_array **out);
/* Waits on the host until the array's copies have completed. Returns 0 or a
 * negative code (the message names the file). At once for a ferry_load array. */
FERRY_API int ferry_array_wait(ferry_array *a);
/* Makes the caller's CUDA stream (a CUstream; NULL: the legacy default stream)
 * wait for the array's copies, without a host wait. On the host device it
 * waits on the host. Returns 0 or a negative code. */
FERRY_API int ferry_array_stream_wait(ferry_array *a, void *cuda_stream);

/* ---- .npz archives ----
 * An .npz (np.savez, np.savez_compressed) is a zip archive of .npy members;
 * key names one as numpy does: the member's name, or its name without ".npy"
 * (np.load(path)[key]). The command line writes FILE.npz:KEY, Python key=.
 * A stored member is read like a .npy, from its offset in the archive; a
 * deflated one is inflated on the CPU, then goes through staging as a read
 * does (the _async calls return once its copies are queued). Every member's
 * CRC-32 is checked (as its bytes pass through host memory; with cuFile, whose staging
 * is device memory, a stored member is read on the host to check it), except
 * by ferry_info_member on a stored member, which reads only its header.
 * Errors name the file and the member: -ENOENT (no such key; the message
 * lists some), -FERRY_EFORMAT (not a zip archive, truncated, inconsistent
 * sizes, a CRC mismatch, a member that is not a valid .npy),
 * -FERRY_EUNSUPPORTED (encrypted, multi-disk, compressed other than stored or
 * deflated). Zip64 archives and members, data descriptors and archive
 * comments are read. A NULL key makes each call its plain .npy variant. */

/* As ferry_info, for member key of the archive path (of a deflated member
 * only the first bytes are inflated, with zlib, to read its header: its
 * CRC-32 is checked when it is loaded; a build without zlib inflates and
 * checks it whole). info->data_offset is
 * where the payload starts: in the archive for a stored member, in the
 * inflated member for a deflated one. */
FERRY_API int ferry_info_member(const char *path, const char *key, struct ferry_array_info *out);
/* As ferry_load, ferry_load_async, ferry_load_into and ferry_load_into_async,
 * for member key of the archive path. */
FERRY_API int ferry_load_member(ferry_ctx *ctx, const char *path, const char *key,
				ferry_array **out);
FERRY_API int ferry_load_member_async(ferry_ctx *ctx, const char *path, const char *key,
				      ferry_array **out);
FERRY_API int ferry_load_member_into(ferry_ctx *ctx, const char *path, const char *key, void *dst,
				     size_t dst_len, struct ferry_array_info *info);
FERRY_API int ferry_load_member_into_async(ferry_ctx *ctx, const char *path, const char *key,
					   void *dst, size_t dst_len, ferry_array **out);

/* Reads len raw bytes of any file, starting at offset, into the device buffer
 * dst. Returns 0, -FERRY_ETRUNCATED when the file ends first, or -errno. */
FERRY_API int ferry_read_range(ferry_ctx *ctx, const char *path, uint64_t offset, uint64_t len,
			       void *dst);

/* Returns a static string naming an error code (never NULL). */
FERRY_API const char *ferry_strerror(int err);

/* Returns the calling thread's last error message (never NULL; "" if none). */
FERRY_API const char *ferry_last_error(void);

/* Returns the library version string, e.g. "0.1.0". */
FERRY_API const char *ferry_version(void);

/* ---- Dataset reader ---- */

/*
 * A replacement for DALI's fn.readers.numpy(device="gpu"): lists a dataset of
 * .npy files, shards and (optionally) shuffles it per epoch, and delivers
 * batches of samples in device memory, loading the next batches in the
 * background. A zero-initialized config means the defaults.
 */
typedef struct ferry_reader ferry_reader;
typedef struct ferry_batch ferry_batch;

enum ferry_oob_policy {
	FERRY_OOB_ERROR = 0, /* a region out of bounds is -FERRY_EBOUNDS (default) */
	FERRY_OOB_PAD,       /* out-of-bounds elements are fill_value */
	FERRY_OOB_TRIM,      /* the region is trimmed to the array (trim_to_shape) */
};

/* What a sample is. */
enum ferry_sample_unit {
	FERRY_SAMPLES_FILES = 0, /* each file is a sample (default) */
	FERRY_SAMPLES_ROWS,      /* each row of each file along axis 0 is a sample: files
				  * may differ in row count, not in row shape or dtype */
};

enum ferry_on_error {
	FERRY_ON_ERROR_STOP = 0, /* ferry_reader_next returns the error (default) */
	FERRY_ON_ERROR_SKIP,     /* the bad file is left out of its batch and counted */
};

struct ferry_reader_state;

struct ferry_reader_config {
	/* Sources, one of: root (+ filter), file_list, files. Paths sort by strcmp
	 * of the path relative to root. */
	const char *root;        /* dataset directory (also the base of relative paths) */
	const char *filter;      /* fnmatch pattern on file names, recursive (NULL: "*.npy") */
	const char *file_list;   /* text file: one path a line, '#' comments, blank lines skipped */
	const char *const *files; /* explicit paths (relative to root unless absolute) */
	size_t nfiles;           /* entries in files */

	unsigned batch_size;     /* samples a batch, up to FERRY_BATCH_MAX (0: 1) */
	uint64_t epochs;         /* epochs to read, then -FERRY_EEND (0: forever) */

	/* Shards: shard i of n holds samples [N*i/n, N*(i+1)/n). num_shards <= 0:
	 * both from WORLD_SIZE and RANK when set, else 1 and 0. shard_id -1: from
	 * RANK (else 0). */
	int shard_id;
	int num_shards;
	int stick_to_shard;      /* 1: every epoch reads shard_id; 0: epoch e reads (shard_id + e) % n */
	int pad_last_batch;      /* 1: fill the last batch by repeating the last sample */
	int random_shuffle;      /* 1: a permutation of the shard per epoch, from (seed, epoch) */
	uint64_t seed;           /* shuffle seed (0 is a valid seed) */
	int shuffle_dataset;     /* 1: each epoch one permutation of the whole dataset, from
				  * (seed, epoch), then sharded: every rank's shard changes
				  * each epoch, the shards still partitioning it (DALI's
				  * shuffle_after_epoch). Not with random_shuffle. */

	unsigned threads;        /* IO threads, up to FERRY_THREADS_MAX (0: the context's) */
	unsigned prefetch_depth; /* batches loading ahead of the caller, up to FERRY_PREFETCH_MAX
				  * (0: automatic: at least 2, and with small batches as many as
				  * keep every IO thread busy, within 256 MiB of batch memory) */
	int no_header_cache;     /* 1: parse every header on every read (default: cached, checked
				  * against each file's device, inode, size,
				  * mtime and ctime) */
	enum ferry_on_error on_error;

	/* Region of interest, in C-order coordinates of the array (whatever the
	 * file's order). roi_nvals values in each array given (NULL: not given);
	 * roi_axes names the axis of each value (NULL: axes 0..roi_nvals-1). start
	 * defaults to 0, end to the extent; end and shape exclude each other, as do
	 * an absolute array and its relative variant. Relative values are fractions
	 * of the extent, rounded to the nearest integer (end = round(start + shape)). */
	int roi_nvals;
	const int64_t *roi_start, *roi_end, *roi_shape;
	const double *roi_start_rel, *roi_end_rel, *roi_shape_rel;
	const int *roi_axes;
	enum ferry_oob_policy out_of_bounds_policy;
	double fill_value;       /* padding value, converted to the dtype (0) */

	/* Resume where a saved state says (NULL: from the first batch). */
	const struct ferry_reader_state *resume;

	/* Files or their rows as samples. Shuffling, shards, padding, epochs and
	 * resuming count samples; a region of interest applies to a sample's axes
	 * (a row's: the file's axes after the first). */
	enum ferry_sample_unit samples;

	/* Every file of the dataset is an .npz archive, and its sample is the
	 * member this key names (as numpy names it: ferry_load_member), read as
	 * ferry_load_member reads it, CRC-32 checked (NULL: files are .npy).
	 * The filter then defaults to "*.npz"; a stored member's header and
	 * place in its archive are cached as a .npy's header is (no_header_cache),
	 * a deflated member is read and inflated every epoch; not with
	 * FERRY_SAMPLES_ROWS. */
	const char *npz_key;
};

/* Where a reader stands: the next batch ferry_reader_next gives, and a
 * fingerprint of what decides the order of batches (the dataset listing,
 * batch size, shards, shuffle and seed, padding). */
struct ferry_reader_state {
	uint64_t epoch;          /* of the next batch */
	uint64_t index;          /* its index in that epoch */
	uint64_t fingerprint;
};

/* One sample of a batch. */
struct ferry_sample {
	void *data;              /* device memory, C order, native byte order */
	enum ferry_dtype dtype;
	int ndim;
	int64_t shape[FERRY_MAX_DIMS];
	uint64_t nbytes;
	const char *path;        /* the source file (valid until the reader closes) */
	int is_padding;          /* 1: a pad_last_batch repeat of the last real sample */
	int64_t row;             /* FERRY_SAMPLES_ROWS: the row of path it is; else -1 */
};

struct ferry_epoch_info {
	uint64_t epoch;          /* the epoch of the batch returned last (0 before any) */
	uint64_t samples;        /* samples of this shard in the epoch, padding included */
	uint64_t real_samples;   /* of which are real (not padding) */
	uint64_t batches;        /* batches in the epoch */
	int shard_id;            /* the shard this epoch reads */
};

struct ferry_reader_stats {
	uint64_t samples;        /* real samples delivered */
	uint64_t bytes_delivered; /* bytes of those samples */
	uint64_t bytes_read;     /* bytes requested from storage (aligned, chunked) */
	uint64_t files_skipped;  /* files left out under FERRY_ON_ERROR_SKIP */
	uint64_t batches;        /* batches delivered */
	/* Files read, once per fetch (a file in every epoch counts every epoch): */
	uint64_t files_buffered; /* through the page cache */
	uint64_t files_direct;   /* with O_DIRECT (FERRY_ODIRECT=1, or auto's choice) */
	/* copied straight from a registered mapping of the page cache, without a
	 * read (warm files of 4 MiB or more, within FERRY_PIN_BUDGET) */
	uint64_t files_mapped;
};

/* Lists the dataset and starts loading. Returns 0, -FERRY_ECONFIG (bad option,
 * no files, fewer files than shards, a resume state of another dataset or
 * other settings, or past its epochs) or another negative code. */
FERRY_API int ferry_reader_open(ferry_ctx *ctx, const struct ferry_reader_config *cfg,
				ferry_reader **out);
/* Gives the next batch, complete on the device. Returns 0, -FERRY_EEND after
 * the requested epochs, or the error of a file in it (the message names the
 * file; that batch is dropped and a further call continues with the next).
 * Under FERRY_ON_ERROR_SKIP, an epoch whose every file was skipped ends with
 * the last skipped file's error. Threads may call it at once on one reader:
 * each batch goes to one of them. */
FERRY_API int ferry_reader_next(ferry_reader *r, ferry_batch **out);
/* As ferry_reader_next, waiting at most timeout_ms milliseconds (< 0: as long
 * as it takes) for a batch that is still loading: -ETIMEDOUT when none was
 * ready by then (nothing is lost: call again). For callers that must stay
 * responsive, such as an interpreter polling for signals. */
FERRY_API int ferry_reader_next_timeout(ferry_reader *r, ferry_batch **out, int timeout_ms);
/* Returns the number of samples in the batch, padding included. */
FERRY_API unsigned ferry_batch_size(const ferry_batch *b);
/* Describes sample i. Returns 0, or -EINVAL when i is out of range. */
FERRY_API int ferry_batch_sample(const ferry_batch *b, unsigned i, struct ferry_sample *out);
/* A batch as one array: its samples stacked, [samples, sample shape...]. */
struct ferry_batch_shape {
	enum ferry_dtype dtype;
	int ndim;                          /* the samples' rank + 1 */
	int64_t shape[FERRY_MAX_DIMS + 1]; /* shape[0]: samples, padding included */
	uint64_t nbytes;
};

/* Describes the batch as one dense C-order array of its samples (padding
 * included) at ferry_batch_data. Returns 0, or -FERRY_EMISMATCH when its
 * samples differ in shape (a ragged batch; the message names two of them). */
FERRY_API int ferry_batch_shape(const ferry_batch *b, struct ferry_batch_shape *out);
/* Returns the batch's device memory: the stacked array when ferry_batch_shape
 * succeeds; in any case each sample's data lies inside it. */
FERRY_API void *ferry_batch_data(const ferry_batch *b);
/* Gives the batch's epoch and its index in the epoch. Returns 0. */
FERRY_API int ferry_batch_position(const ferry_batch *b, uint64_t *epoch, uint64_t *index);
/* What a binding needs of a batch, in one call. */
struct ferry_batch_info {
	uint64_t epoch, index;           /* as ferry_batch_position */
	void *data;                      /* as ferry_batch_data */
	unsigned size;                   /* as ferry_batch_size */
	int stacked;                     /* 1: shape is ferry_batch_shape's; 0: ragged */
	struct ferry_batch_shape shape;  /* all zero when ragged */
};
/* Fills out with the batch's position, memory, size and stacked shape: one
 * call instead of four (the Python Reader takes each batch with it). A ragged
 * batch is not an error here: stacked is 0, and ferry_batch_shape says why.
 * Returns 0. */
FERRY_API int ferry_batch_describe(const ferry_batch *b, struct ferry_batch_info *out);
/* Waits on the host until the batch's copies have completed. Batches are
 * handed out complete today, so it returns 0 at once; it stays the call that
 * makes a batch safe to read. Returns 0 or a negative code. */
FERRY_API int ferry_batch_wait(ferry_batch *b);
/* Makes the caller's CUDA stream (a CUstream; NULL: the legacy default stream)
 * wait for the batch (at once, as for ferry_batch_wait). Returns 0 or a
 * negative code. */
FERRY_API int ferry_batch_stream_wait(ferry_batch *b, void *cuda_stream);
/* Hands the batch's memory back to the reader for reuse. Returns nothing. */
FERRY_API void ferry_batch_release(ferry_batch *b);
/* Describes the epoch of the batch returned last. Returns 0. */
FERRY_API int ferry_reader_epoch_info(ferry_reader *r, struct ferry_epoch_info *out);
/* Saves the reader's position: after the batches ferry_reader_next has given
 * (and those it dropped for errors). A reader opened on the same dataset with
 * the same settings and config.resume pointing at it gives the same batches
 * from there, in the same order. Returns 0. */
FERRY_API int ferry_reader_save_state(ferry_reader *r, struct ferry_reader_state *out);
/* Size of the first version of struct ferry_reader_stats (its first five
 * fields): the smallest size ferry_reader_stats accepts. */
#define FERRY_READER_STATS_MIN_SIZE 40
/* Writes the reader's counters into out, which is size bytes long: pass
 * sizeof(struct ferry_reader_stats). The struct only grows at its end, and
 * only the first size bytes are written, so a program built against an older
 * header gets the fields it knows. Returns 0, or -EINVAL when size is smaller
 * than FERRY_READER_STATS_MIN_SIZE. */
FERRY_API int ferry_reader_stats(ferry_reader *r, struct ferry_reader_stats *out, size_t size);
/* Waits for the background loads and frees the reader, its batches included
 * (released or not). Returns 0 or the first error of a background step. */
FERRY_API int ferry_reader_close(ferry_reader *r);

#ifdef __cplusplus
}
#endif
#endif
