/*
 * Prints, as JSON, the layout of every public struct of include/ferry.h: its
 * size and alignment, and the name, offset and size of each field, in
 * declaration order. tests/test_python_layout.py compares it with the ctypes
 * restatements in python/ferry/_lib.py, and checks this table against the
 * header's own struct and field names, so a struct or field added to ferry.h
 * without a line here fails that test.
 *
 * Built by the Makefile as $(BUILD)/tests/layout/struct_layout (not test_*: it
 * is a helper, not a test). Usage: struct_layout > layout.json
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>

#include <ferry.h>

static int nstructs, nfields;

static void begin(const char *name, size_t size, size_t align)
{
	printf("%s\n  {\"name\": \"%s\", \"size\": %zu, \"align\": %zu, \"fields\": [",
	       nstructs++ ? "," : "", name, size, align);
	nfields = 0;
}

static void field(const char *name, size_t offset, size_t size)
{
	printf("%s\n    {\"name\": \"%s\", \"offset\": %zu, \"size\": %zu}",
	       nfields++ ? "," : "", name, offset, size);
}

static void end(void)
{
	printf("\n  ]}");
}

/* STRUCT(name, F(field) F(field) ...): one struct, its fields in declaration order. */
#define STRUCT(name, fields)                                           \
	do {                                                           \
		typedef struct name T;                                 \
		begin(#name, sizeof(T), alignof(T));                   \
		fields                                                 \
		end();                                                 \
	} while (0);
#define F(f) field(#f, offsetof(T, f), sizeof(((T *)0)->f));

int main(void)
{
	printf("{\"structs\": [");
	STRUCT(ferry_ctx_options,
	       F(device) F(gpu) F(io) F(chunk_size) F(max_buffers) F(threads) F(direct) F(lanes))
	STRUCT(ferry_array_info,
	       F(dtype) F(itemsize) F(ndim) F(shape) F(count) F(nbytes) F(fortran_order)
	       F(byteswapped) F(version_major) F(version_minor) F(data_offset))
	STRUCT(ferry_reader_config,
	       F(root) F(filter) F(file_list) F(files) F(nfiles)
	       F(batch_size) F(epochs)
	       F(shard_id) F(num_shards) F(stick_to_shard) F(pad_last_batch) F(random_shuffle) F(seed)
	       F(shuffle_dataset)
	       F(threads) F(prefetch_depth) F(no_header_cache) F(on_error)
	       F(roi_nvals) F(roi_start) F(roi_end) F(roi_shape)
	       F(roi_start_rel) F(roi_end_rel) F(roi_shape_rel) F(roi_axes)
	       F(out_of_bounds_policy) F(fill_value) F(resume) F(samples) F(npz_key))
	STRUCT(ferry_sample,
	       F(data) F(dtype) F(ndim) F(shape) F(nbytes) F(path) F(is_padding) F(row))
	STRUCT(ferry_epoch_info,
	       F(epoch) F(samples) F(real_samples) F(batches) F(shard_id))
	STRUCT(ferry_reader_stats,
	       F(samples) F(bytes_delivered) F(bytes_read) F(files_skipped) F(batches)
	       F(files_buffered) F(files_direct) F(files_mapped))
	STRUCT(ferry_reader_state,
	       F(epoch) F(index) F(fingerprint))
	STRUCT(ferry_batch_shape,
	       F(dtype) F(ndim) F(shape) F(nbytes))
	STRUCT(ferry_batch_info,
	       F(epoch) F(index) F(data) F(size) F(stacked) F(shape))
	printf("\n]}\n");
	return ferror(stdout) ? 1 : 0;
}
