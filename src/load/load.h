/*
 * File loading: byte ranges of a file into device memory, chunk by chunk,
 * through the staging engine. Reads start at 4096-aligned offsets (as O_DIRECT
 * needs); the unaligned start of a range is a copy offset into the chunk.
 */
#ifndef FERRY_LOAD_H
#define FERRY_LOAD_H

#include <stdint.h>

#include "base/base.h"
#include "device/device.h"
#include "engine/engine.h"
#include "io/io.h"
#include "npy/npy.h"

/* What loading needs, as the context resolved it: plain values and handles. */
struct ferry__loader {
	struct ferry__device *dev;
	const struct ferry__io_ops *io_ops;
	struct ferry__io *io;
	struct ferry__lanes *lanes;  /* the staging engines */
	struct ferry__pool *pool;    /* IO threads beside the caller; may be NULL */
	/* The backend that reads small files whole, many per system call
	 * (read_files), or NULL: each is opened, read and closed on its own.
	 * Gathers of many scattered pieces of one file use it too
	 * (ferry__load_read). */
	const struct ferry__io_ops *files_ops;
	struct ferry__io *files_io;
	unsigned threads;            /* IO threads of one load, the caller included */
	int direct;                  /* enum ferry_direct: NEVER, ALWAYS or AUTO */
	uint64_t cache_budget;       /* AUTO: bytes of cold files read buffered at most */
	uint64_t *cache_used;        /* AUTO: those read so far (atomic; the context's) */
	/* Registered mappings of warm files that loads copy from without a read
	 * (mapped.c), or NULL: FERRY_PIN_BUDGET=0, or the device cannot. */
	struct ferry__mapped *mapped;
};

/* Opens path for reading through the loader's IO backend (O_DIRECT when the
 * loader's mode is ALWAYS; AUTO decides per read, ferry__load_choose). Returns
 * 0 or a negative code naming path. */
int ferry__load_open(const struct ferry__loader *ld, const char *path, struct ferry__file **out);

/* Requests of one file from which a gather goes to a deeper backend. */
#define FERRY__GATHER_MIN 16

/*
 * Reads the requests of the open file f (io_ops->read's contract): through
 * the loader's backend, or, when there are FERRY__GATHER_MIN or more (the
 * scattered runs of rows of a Fortran-order file, say) and files_ops keeps
 * more in flight at once, through files_ops (io_uring: all of them in one
 * submit, where pread would take a system call each).
 */
int ferry__load_read(const struct ferry__loader *ld, struct ferry__file *f,
		     struct ferry__io_req *reqs, unsigned n);

/* Reads smaller than this stay buffered in AUTO mode, without a probe. */
#define FERRY__DIRECT_MIN ((uint64_t)1 << 20)

/*
 * AUTO mode's choice for a read of [offset, offset + len) of the open file f
 * (direct.c, docs/design.md): buffered when the read is small, its bytes are
 * mostly in the page cache, or they fit in what is left of the page-cache
 * budget (then counted against it); else O_DIRECT turned on for f's
 * descriptor, which stays buffered where the file system refuses. Does
 * nothing in the other modes, or when f is direct already. Never fails.
 */
void ferry__load_choose(const struct ferry__loader *ld, struct ferry__file *f, uint64_t offset,
			uint64_t len);
/* Closes f (NULL is allowed). */
void ferry__load_close(const struct ferry__loader *ld, struct ferry__file *f);

/* Fails with rc, the error of an asynchronous copy of path's bytes: a copy
 * out of a mapping says -FERRY_ECHANGED when a page of it is gone (the file
 * shrank under it), anything else is the device's. Returns rc. */
int ferry__load_copy_failed(const char *path, int rc);

/* ---- zero copy from registered page-cache mappings (mapped.c) ---- */

/*
 * Files smaller than this are never mapped. Registering costs about 30 ms a
 * GiB plus a fixed cost a call, each mapping is one entry of /proc/self/maps
 * (vm.max_map_count), and below a few MiB the staging copy costs little: a
 * 4 MiB file is two default chunks, where the read's system calls already
 * weigh little against the bytes.
 */
#define FERRY__MAPPED_MIN ((uint64_t)4 << 20)
/*
 * Files smaller than this register in groups: mapped side by side into one
 * reserved range, registered with one call once the group holds this many
 * bytes (or the offers queued run out), so that the driver's fixed cost a
 * call is paid once a group. On an H100 (2026-12-06, -1906-) 4 MiB files read
 * 8 epochs were copied from their registration in 5680-5699 of 8192 loads
 * (4555-4893 one registration a file), epochs 2-8 at 0.095-0.103 CPU s/GB
 * (0.136-0.152), at the same GB/s; a group of four registers in about 1 ms,
 * under a 64 MiB file's time. A group's pages stay pinned until its last file
 * leaves the cache.
 */
#define FERRY__MAPPED_GROUP ((uint64_t)16 << 20)
/* Mappings a context keeps at most: a quarter of the default
 * vm.max_map_count (65530), whatever the pin budget. */
#define FERRY__MAPPED_MAX 16384u

struct ferry__mapped;  /* a context's registration cache and its registrar thread */
struct ferry__mapping; /* one registered mapping of one version of a file */

/*
 * Makes a cache that pins at most budget bytes, with its registrar thread.
 * It registers nothing that would leave less than reserve bytes of memory
 * available (MemAvailable less what it pins), and gives registrations back,
 * least recently used first, when the machine falls below that (checked
 * about once a second). While copies are being launched on lanes (may be
 * NULL: always), registering spends at most pace percent (0 to 100) of the
 * time, and the lanes' early launches are held while it registers
 * (ferry__lanes_hold_launches): after each registration the registrar waits
 * ferry__mapped_pause_ns; once no batch was launched for FERRY__QUIET_NS it
 * registers without waiting (a training step's compute leaves the loader
 * idle), and a file offered again before it was registered goes first and
 * without the pause. The caller checked that dev can (map_ready). Returns 0
 * or a negative code. Its registrations go into trace (may be NULL) as they
 * happen.
 */
int ferry__mapped_create(struct ferry__device *dev, const struct ferry__lanes *lanes,
			 struct ferry__trace *trace, uint64_t budget, uint64_t reserve,
			 unsigned pace, struct ferry__mapped **out);
/* No copy launched for this long: the registrar's pause is cut short. */
#define FERRY__QUIET_NS 500000u
/* The registrar's looks at the lanes' launch count. */
struct ferry__quiet {
	int looked;
	uint64_t launched, since; /* the count, and since when it stood still */
};
/* Looks at the launch count at time now (ns): 1 when it has stood still over
 * looks spanning FERRY__QUIET_NS, else 0 (a moved count starts the time again). */
int ferry__quiet_look(struct ferry__quiet *q, uint64_t launched, uint64_t now);
/* How long the registrar waits after a registration that took took_ns, so
 * that registering spends pace percent of the time: 0 at 100, UINT64_MAX
 * (until the lanes are quiet) at 0. */
uint64_t ferry__mapped_pause_ns(uint64_t took_ns, unsigned pace);
/* Stops the registrar (offers not yet registered are dropped). Call it before
 * the lanes go away: the registrar asks them whether copies completed. */
void ferry__mapped_stop(struct ferry__mapped *m);
/* Stops the registrar, then unregisters and unmaps every entry: call it once
 * no copy is in flight (after the lanes were destroyed). NULL is allowed. */
void ferry__mapped_destroy(struct ferry__mapped *m);

/*
 * After a load read f through staging: hands a dup() of f's descriptor to the
 * registrar, which maps the whole file, registers it and inserts it when the
 * file is whole in the page cache, unchanged, and fits in the budget (idle
 * entries are evicted, least recently used first). Never waits for it; does
 * nothing for small or direct files, or files cached or offered already.
 */
void ferry__mapped_offer(struct ferry__mapped *m, const struct ferry__file *f);
/*
 * The registered mapping of exactly f's version (its ferry__file_id), held
 * for the caller until ferry__mapped_release, or NULL (m NULL, not cached,
 * or another version: that entry is dropped once idle).
 */
struct ferry__mapping *ferry__mapped_find(struct ferry__mapped *m, const struct ferry__file *f);
/* Where the whole file is mapped: byte k of the file is at addr + k. */
const void *ferry__mapping_addr(const struct ferry__mapping *e);
/* Ends the caller's hold on e, whose copies went in batch seq of stg (seq 0:
 * none): e is not unmapped before that batch has completed. */
void ferry__mapped_release(struct ferry__mapped *m, struct ferry__mapping *e,
			   struct ferry__staging *stg, uint64_t seq);
/* Tests: returns once every offer made so far is registered or refused and
 * the registrar has swept once since the call (files gone from their path
 * marked stale, idle stale entries dropped, memory pressure relieved). */
void ferry__mapped_drain(struct ferry__mapped *m);
/* Tests: while held, the registrar takes no offer (they queue, up to 64), so
 * that offers made one after another register as one group once released. */
void ferry__mapped_hold(struct ferry__mapped *m, int held);
/* Changes the reserve of ferry__mapped_create (tests: pressure on demand). */
void ferry__mapped_set_reserve(struct ferry__mapped *m, uint64_t reserve);

struct ferry__mapped_stats {
	unsigned entries;          /* mappings registered now */
	uint64_t pinned, budget;   /* their bytes, and the most allowed */
	uint64_t reserve;          /* memory left available, or registrations go */
	uint64_t registered;       /* files ever registered */
	uint64_t registrations;    /* registrations ever made (a group of files is one) */
	uint64_t refused;          /* registrations the device or the kernel refused */
	int given_up;              /* refused MAX_REFUSALS times in a row: no more tries */
	uint64_t hits;             /* loads that found their file's mapping */
	uint64_t released;         /* registrations given back under memory pressure */
	uint64_t gone;             /* entries whose file left its path */
	uint64_t pressed;          /* registrations not made for want of memory */
	uint64_t unpaced;          /* registrations made early: no copy was being launched */
	uint64_t hurried;          /* registrations made at once: their files offered again */
	char last_refusal[256];    /* the newest of those, and why ("" if none) */
};
void ferry__mapped_stats(struct ferry__mapped *m, struct ferry__mapped_stats *out);

/* Header bytes a load keeps to re-check: every header numpy writes fits. */
#define FERRY__HEAD_MAX 512

/* len bytes of the file at offset go to device memory at dst. */
struct ferry__range {
	uint64_t offset;
	uint64_t len;
	char *dst;
};

/* What a load read: for the stats of callers (the reader's bytes-read counter). */
struct ferry__load_stats {
	uint64_t bytes_read;   /* bytes requested from storage (aligned, chunked) */
	uint64_t reads;        /* read requests */
	uint64_t files_buffered, files_direct; /* files read, by the path they took */
	uint64_t files_mapped; /* files copied from a registered mapping, without a read */
};

/* Counts f in stats as mapped, read direct or buffered (f->mapped, f->direct). */
void ferry__load_count_file(struct ferry__load_stats *stats, const struct ferry__file *f);

/* How to run one load. A zeroed struct waits for the copies, on one thread. */
struct ferry__load_opts {
	unsigned parallel;               /* IO threads: the caller and pool workers */
	struct ferry__ticket *async;     /* see ferry__load_ranges; NULL: wait */
	struct ferry__load_stats *stats; /* added to; may be NULL */
	/* The file's first head_len bytes as its header was parsed from (NULL:
	 * none): a read of offset 0 that sees other bytes is another version of
	 * the file. */
	const unsigned char *head;
	size_t head_len;
	/* Non-NULL: gets the CRC-32 of the ranges' bytes in order (one contiguous
	 * run), computed as each chunk passes through host staging. Callers must
	 * not ask it of a backend whose staging is device memory: see
	 * ferry__load_payload, which reads on the host then. */
	uint32_t *crc;
	/* Non-NULL: the ranges' bytes already sit in host memory here (an
	 * inflated .npz member, a payload converted on the host), and a range's
	 * offset is into src, not the file; f only names the load in messages
	 * and the trace. They go to the device as a file's would: each planned
	 * read copies its ranges' bytes into a leased staging buffer instead of
	 * reading, and queues the copies out of it (no mapping, no check of the
	 * file, no CRC, no head). Every byte is in staging when the call
	 * returns, so src may then be freed. Where staging is device memory
	 * (cuFile), which the CPU cannot write, each range is copied
	 * synchronously instead. */
	const void *src;
};

/*
 * Reads every range of the open file f into device memory, on up to
 * opts->parallel threads, coalescing ranges that fall into one chunk into one
 * read; in AUTO mode it first chooses buffered or direct for the ranges' span
 * (ferry__load_choose). Ranges must be sorted by offset and not overlap.
 * Returns 0 once every byte is on the device, or the first error (with a message naming the file):
 * -FERRY_ECHANGED when the file changed while it was read, or when a read of
 * offset 0 saw other header bytes than opts->head. With opts->async (a zeroed
 * ticket, or one used before) it returns 0 once every copy is launched, queued
 * on that ticket and on the lane it names (the calling thread's,
 * ferry__lanes_pick, when the ticket had none): the caller waits for them with
 * ferry__staging_wait(async->stg, async), which also reports a copy failing
 * later, and must before async goes away. After an error no copy is left in
 * flight either way.
 */
int ferry__load_ranges(const struct ferry__loader *ld, struct ferry__file *f, const struct ferry__range *ranges,
		       unsigned n, const struct ferry__load_opts *opts);

/* Reads and validates the header of the open file f (against its size too),
 * through the IO layer. head (may be NULL) gets the header's first
 * ferry__head_len(h) bytes. */
int ferry__load_header(struct ferry__file *f, struct ferry__npy_header *h,
		       unsigned char head[FERRY__HEAD_MAX]);
/* How many bytes of h's header a load keeps to re-check: min(data_offset,
 * FERRY__HEAD_MAX). */
size_t ferry__head_len(const struct ferry__npy_header *h);

/* Loads the payload of f, whose header is h, into dst as C order, native byte
 * order. A big-endian or Fortran-order payload is converted on the device
 * where it can (read raw through staging, converted on the ticket's lane
 * after the copies, the ticket covering the conversion: docs/design.md),
 * else on the host from the same open file (then complete on return). opts
 * as for ferry__load_ranges. */
int ferry__load_payload(const struct ferry__loader *ld, struct ferry__file *f, const struct ferry__npy_header *h,
			void *dst, const struct ferry__load_opts *opts);

/* Converts the raw payload h describes, in host memory, to C order and native
 * byte order: a byte swap in place, then (Fortran order) a transpose into a
 * new buffer. *out gets raw, or that buffer (malloc'd: the caller frees it
 * when it is not raw). Returns 0 or -ENOMEM naming f. */
int ferry__convert_on_host(struct ferry__file *f, const struct ferry__npy_header *h, void *raw,
			   void **out);
/* Converts (in place, or through a copy for Fortran order) the raw payload
 * that h describes, which lies in host memory, and loads it into dst through
 * staging as ferry__load_ranges loads from host memory (opts->src): waited
 * for, or queued on opts->async. raw may be freed once it returns. Returns 0
 * or a negative code naming f. */
int ferry__load_from_host(const struct ferry__loader *ld, struct ferry__file *f,
			  const struct ferry__npy_header *h, void *raw, void *dst,
			  const struct ferry__load_opts *opts);
/* Loads len bytes at src (host memory, f's array) into dst through staging
 * (ferry__load_ranges with opts->src), with opts's threads, waited for or
 * queued on opts->async. src may be freed once it returns. */
int ferry__load_from_memory(const struct ferry__loader *ld, struct ferry__file *f,
			    const void *src, uint64_t len, void *dst,
			    const struct ferry__load_opts *opts);

/* ---- .npz archive members (npz.c) ---- */

/* One member of an .npz archive, located and its .npy header parsed. */
struct ferry__member {
	const char *key;          /* as the caller named it (not owned) */
	unsigned method;          /* FERRY__ZIP_STORED or FERRY__ZIP_DEFLATED */
	uint32_t crc;             /* the central directory's CRC-32 */
	uint64_t data_at;         /* where its data starts in the archive */
	uint64_t csize, usize;    /* compressed and uncompressed sizes */
	/* Its header. Stored: data_offset is the payload's offset in the
	 * archive. Deflated: in inflated. */
	struct ferry__npy_header h;
	uint32_t head_crc;        /* stored: the CRC-32 of the header's bytes */
	unsigned char *inflated;  /* deflated: the whole member, CRC checked */
	/* Stored, in an archive small enough that the search for its directory
	 * read it whole: those bytes (the reader's fetch takes the payload from
	 * them instead of reading it again), else NULL. */
	unsigned char *whole;
	/* Deflated, once ferry__member_array made it: the array as C order and
	 * native byte order (in inflated, or a transposed copy it owns). */
	unsigned char *array;
};

/*
 * Locates key's member in the archive f (numpy's key: the member's name, or
 * its name without ".npy") through the zip directory, and parses its .npy
 * header: a stored member's from the archive, a deflated one's after
 * inflating it whole and checking its CRC-32. head (may be NULL) gets the
 * header's first ferry__head_len bytes. Returns 0, -ENOENT (no such key: the
 * message lists some), -FERRY_EFORMAT (not a zip archive, truncated,
 * inconsistent sizes, a CRC mismatch, a member that is not a .npy) or
 * -FERRY_EUNSUPPORTED (encrypted, multi-disk, another compression method),
 * with a message naming the file and the member.
 */
int ferry__member_open(struct ferry__file *f, const char *key, struct ferry__member *m,
		       unsigned char head[FERRY__HEAD_MAX]);
/*
 * Locates key's member and parses its .npy header alone (ferry_info_member):
 * as ferry__member_open, but a deflated member's header is inflated from its
 * first compressed bytes (zlib), its payload neither read nor checked, where
 * the build has zlib (without it, inflated whole as ferry__member_open
 * does). Close m with ferry__member_close.
 */
int ferry__member_header(struct ferry__file *f, const char *key, struct ferry__member *m);
/* Frees what ferry__member_open kept (the inflated bytes, the array). */
void ferry__member_close(struct ferry__member *m);
/*
 * A deflated member's array in host memory as C order and native byte order
 * (m->inflated set): its inflated payload, converted on the host at the first
 * call (ferry__convert_on_host; m keeps the result), once the archive is
 * checked unchanged since it was opened (the bytes are those of the file
 * the caller has). *out is valid until ferry__member_close. Returns 0,
 * -FERRY_ECHANGED or -ENOMEM naming f.
 */
int ferry__member_array(struct ferry__file *f, struct ferry__member *m,
			const unsigned char **out);
/*
 * Loads m's array into dst, as ferry__load_payload loads a .npy's: a stored
 * member through staging from its offset in the archive, its CRC-32 (header
 * bytes and payload) checked as the bytes pass through host memory (on the
 * host where staging is device memory); a deflated one from its array
 * (ferry__member_array) through staging, as bytes in host memory
 * (opts->src of ferry__load_ranges). Waited for, or queued on opts->async.
 * -FERRY_EFORMAT on a CRC mismatch (an async load's copies may then be in
 * flight on opts->async: the caller waits for them).
 */
int ferry__member_load(const struct ferry__loader *ld, struct ferry__file *f,
		       struct ferry__member *m, void *dst, const struct ferry__load_opts *opts);

/*
 * A stored member's CRC-32 check, for callers that read its payload
 * themselves (the reader's packed batches): payload_crc is the CRC-32 of its
 * h.data_size payload bytes as read, combined here with that of the header
 * bytes parsed by ferry__member_open (the directory's CRC covers both).
 * Returns 0, or -FERRY_EFORMAT naming f and the member ("CRC-32 mismatch").
 */
int ferry__member_check_payload(struct ferry__file *f, const struct ferry__member *m,
				uint32_t payload_crc);

/* Fills ferry_array_info from a parsed header. */
void ferry__info_from_header(const struct ferry__npy_header *h, struct ferry_array_info *out);

#endif
