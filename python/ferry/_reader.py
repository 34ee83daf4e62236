"""ferry.Reader: batches of a .npy dataset, with DALI's numpy reader options."""
import ctypes
import os

from . import _lib
from ._array import Array
from ._context import (_as_result, _CopiesOwner, _torch_stream, default_context,
                       _stream_number)

_OOB = {"error": 0, "pad": 1, "trim_to_shape": 2, "trim": 2}
_ON_ERROR = {"stop": 0, "skip": 1}


class _ReaderHandle(_lib.Handle):
    """Owns one ferry_reader (and the config memory it was opened with), a
    dependent of its context. Its batches are its dependents: the C reader
    closes when the reader is closed (or collected) and no batch remains."""

    def __init__(self, ctx, ptr, keep):
        super().__init__(ptr, _lib.get().ferry_reader_close, parent=ctx)
        self.ctx = ctx          # the _CtxHandle: outlives the reader
        self._keep = keep       # ctypes objects the config points into


class _BatchOwner(_lib.Handle, _CopiesOwner):
    """Owns one ferry_batch, a dependent of its reader. Every array of the
    batch holds it; when the last one is collected the batch goes back to the
    reader for reuse."""

    def __init__(self, reader, ptr):
        lib = _lib.get()
        super().__init__(ptr, lib.ferry_batch_release, parent=reader)
        self.ctx = reader.ctx
        self.path = None  # a batch's wait error names no single file
        self._stream_wait = lib.ferry_batch_stream_wait
        self._host_wait = lib.ferry_batch_wait


class Batch(list):
    """One batch: a list of arrays (numpy views on the host device, ferry.Array
    on a GPU), one a sample, padding included. Attributes: epoch, index (the
    batch's position in its epoch), paths (each sample's source file),
    is_padding (per sample: a pad_last_batch repeat). The batch's memory goes
    back to the reader only after every array of it is gone."""


def _roi_array(ctype, values, name, n):
    if values is None:
        return None
    values = list(values)
    if len(values) != n:
        raise ValueError("%s has %d values, other ROI arguments %d" % (name, len(values), n))
    return (ctype * max(1, n))(*values)


def _path_or_none(value):
    return None if value is None else _lib.path_bytes(value)


class Reader:
    """Reads a dataset of .npy files in batches, loading ahead in the
    background: a replacement for DALI's fn.readers.numpy, with its argument
    names.

    Sources (one of): file_root (a directory, searched recursively for names
    matching file_filter, default '*.npy'), file_list (a text file of paths,
    one a line, relative to file_root unless absolute), files (a list of
    paths, relative to file_root unless absolute). Files are sorted by path.

    batch_size (1); epochs (None: as many as you iterate); shard_id and
    num_shards (None: from $RANK and $WORLD_SIZE as torchrun sets them, else
    0 of 1; shard i of n holds samples [N*i/n, N*(i+1)/n)); stick_to_shard
    (False: epoch e reads shard (shard_id + e) % num_shards);
    random_shuffle, seed (None: 0; the same permutation for the same seed and
    epoch on every machine); pad_last_batch (fill the last batch by repeating
    the last sample); prefetch_queue_depth (batches loading ahead, 2);
    num_threads (IO threads; None: the context's); cache_header_information
    (True: headers are cached, checked against size and mtime); on_error
    ('stop' raises, 'skip' leaves bad files out of their batch).

    Region of interest, in C-order coordinates, as DALI defines it: roi_start,
    roi_end, roi_shape (ints) or rel_roi_start, rel_roi_end, rel_roi_shape
    (fractions of the extent), roi_axes (the axis of each value; default the
    first axes), out_of_bounds_policy ('error', 'pad' or 'trim_to_shape'),
    fill_value (padding value, 0).

    device ('cuda', 'host', 'auto'; None: $FERRY_DEVICE) picks the module's
    default context, unless ctx (a ferry.Context) is given. stream (None, an
    int CUstream, or a torch/cupy stream) is where batches must be ready;
    None means torch.cuda.current_stream() (taken at each batch) when torch is
    imported and the device is cuda, else batches are waited for on the host
    (ferry_batch_wait). With a stream, ferry_batch_stream_wait makes that
    stream wait for the batch, and each array's __cuda_array_interface__
    'stream' names it (1 for the legacy default stream). libferry currently
    completes every batch before handing it over, so either wait returns at
    once; the caller's thread blocks only while the next batch is loading.

    Iterating yields Batch objects (lists of arrays) up to the end of the
    current epoch; iterate again for the next epoch. len() is the number of
    batches in an epoch. Raises FerryError (bad options, no files, a file's
    error: that batch is dropped and iteration can go on). Use it as a context
    manager, or call close().
    """

    def __init__(self, file_root=None, file_list=None, files=None, file_filter=None,
                 batch_size=1, shard_id=None, num_shards=None, random_shuffle=False,
                 seed=None, stick_to_shard=False, pad_last_batch=False, prefetch_queue_depth=2,
                 num_threads=None, roi_start=None, roi_end=None, roi_shape=None,
                 rel_roi_start=None, rel_roi_end=None, rel_roi_shape=None, roi_axes=None,
                 out_of_bounds_policy="error", fill_value=0.0, epochs=None, device=None,
                 ctx=None, stream=None, cache_header_information=True, on_error="stop"):
        missing = _lib.missing_reader_functions()
        if missing:
            raise NotImplementedError(
                "ferry.Reader needs the dataset reader C API, which the loaded libferry (%s) "
                "lacks: %s" % (_lib.get().path, ", ".join(missing)))
        if out_of_bounds_policy not in _OOB:
            raise ValueError("out_of_bounds_policy must be 'error', 'pad' or 'trim_to_shape', "
                             "not %r" % (out_of_bounds_policy,))
        if on_error not in _ON_ERROR:
            raise ValueError("on_error must be 'stop' or 'skip', not %r" % (on_error,))
        _stream_number(stream)  # type check now
        self._stream = stream
        self._ctx = ctx or default_context(device)
        cfg = _lib.ReaderConfig()
        keep = []
        cfg.root = _path_or_none(file_root)
        cfg.filter = None if file_filter is None else file_filter.encode()
        cfg.file_list = _path_or_none(file_list)
        if files is not None:
            if isinstance(files, (str, bytes, os.PathLike)):
                raise TypeError("files must be a list of paths, not a single path")
            names = [_lib.path_bytes(f) for f in files]
            arr = (ctypes.c_char_p * max(1, len(names)))(*names)
            keep += [names, arr]
            cfg.files, cfg.nfiles = arr, len(names)
        keep += [cfg.root, cfg.filter, cfg.file_list]
        cfg.batch_size = int(batch_size)
        cfg.epochs = int(epochs or 0)
        cfg.shard_id = -1 if shard_id is None else int(shard_id)
        cfg.num_shards = 0 if num_shards is None else int(num_shards)
        cfg.stick_to_shard = int(bool(stick_to_shard))
        cfg.pad_last_batch = int(bool(pad_last_batch))
        cfg.random_shuffle = int(bool(random_shuffle))
        cfg.seed = int(seed or 0) & (2 ** 64 - 1)
        cfg.threads = int(num_threads or 0)
        cfg.prefetch_depth = int(prefetch_queue_depth or 0)
        cfg.no_header_cache = int(not cache_header_information)
        cfg.on_error = _ON_ERROR[on_error]

        given = [v for v in (roi_start, roi_end, roi_shape, rel_roi_start, rel_roi_end,
                             rel_roi_shape, roi_axes) if v is not None]
        n = len(list(given[0])) if given else 0
        roi = [("roi_start", ctypes.c_int64, roi_start, "roi_start"),
               ("roi_end", ctypes.c_int64, roi_end, "roi_end"),
               ("roi_shape", ctypes.c_int64, roi_shape, "roi_shape"),
               ("roi_start_rel", ctypes.c_double, rel_roi_start, "rel_roi_start"),
               ("roi_end_rel", ctypes.c_double, rel_roi_end, "rel_roi_end"),
               ("roi_shape_rel", ctypes.c_double, rel_roi_shape, "rel_roi_shape"),
               ("roi_axes", ctypes.c_int, roi_axes, "roi_axes")]
        cfg.roi_nvals = n
        for field, ctype, values, name in roi:
            arr = _roi_array(ctype, values, name, n)
            if arr is not None:
                keep.append(arr)
                setattr(cfg, field, ctypes.cast(arr, ctypes.POINTER(ctype)))
        cfg.out_of_bounds_policy = _OOB[out_of_bounds_policy]
        cfg.fill_value = float(fill_value)

        ctx_handle = self._ctx._live()
        ptr = ctypes.c_void_p()
        _lib.check(_lib.get().ferry_reader_open(ctx_handle.ptr, ctypes.byref(cfg),
                                                ctypes.byref(ptr)),
                   file_list if file_list is not None else file_root)
        self._handle = _ReaderHandle(ctx_handle, ptr.value, keep)

    def _live(self):
        if self._handle is None:
            raise ValueError("ferry.Reader is closed")
        return self._handle

    @property
    def device(self):
        """The device batches land on: 'cuda' or 'host'."""
        return self._live().ctx.device

    def epoch_info(self):
        """Returns a dict describing the epoch of the batch returned last:
        epoch, samples (padding included), real_samples, batches, shard_id."""
        out = _lib.EpochInfo()
        _lib.check(_lib.get().ferry_reader_epoch_info(self._live().ptr, ctypes.byref(out)))
        return {name: getattr(out, name) for name, _ in _lib.EpochInfo._fields_}

    def stats(self):
        """Returns the reader's counters as a dict: samples, bytes_delivered,
        bytes_read, files_skipped, batches."""
        out = _lib.ReaderStats()
        _lib.check(_lib.get().ferry_reader_stats(self._live().ptr, ctypes.byref(out)))
        return {name: getattr(out, name) for name, _ in _lib.ReaderStats._fields_}

    def __len__(self):
        """The number of batches in an epoch of this shard (the epoch of the
        batch returned last, or the first epoch before any)."""
        return int(self.epoch_info()["batches"])

    def next_batch(self):
        """Returns the next Batch, crossing epoch boundaries, or None after the
        last of the requested epochs. Raises FerryError for a batch that
        failed (it is dropped; a further call continues with the next)."""
        h = self._live()
        lib = _lib.get()
        ptr = ctypes.c_void_p()
        rc = lib.ferry_reader_next(h.ptr, ctypes.byref(ptr))
        if rc == -_lib.EEND:
            return None
        if rc < 0:
            err = _lib.make_error(rc)
            head = err.message.split(": ", 1)[0]
            if head and os.path.exists(head):
                err.filename = head
            raise err
        owner = _BatchOwner(h, ptr.value)
        device = h.ctx.device
        stream = _stream_number(self._stream if self._stream is not None
                               else _torch_stream(device))
        cai_stream = owner.ready_on(device, stream)
        epoch, index = ctypes.c_uint64(), ctypes.c_uint64()
        _lib.check(lib.ferry_batch_position(ptr, ctypes.byref(epoch), ctypes.byref(index)))
        batch = Batch()
        batch.epoch, batch.index = epoch.value, index.value
        batch.paths, batch.is_padding = [], []
        sample = _lib.Sample()
        for i in range(lib.ferry_batch_size(ptr)):
            _lib.check(lib.ferry_batch_sample(ptr, i, ctypes.byref(sample)))
            path = os.fsdecode(sample.path) if sample.path else None
            shape = tuple(sample.shape[d] for d in range(sample.ndim))
            array = Array(owner, sample.data, shape, _lib.typestr(sample.dtype), device,
                          h.ctx.device_id, path, stream=cai_stream)
            batch.append(_as_result(array))
            batch.paths.append(path)
            batch.is_padding.append(bool(sample.is_padding))
        return batch

    def __iter__(self):
        """Yields the batches from here to the end of the current epoch (a
        whole epoch when the previous iteration ran to its end)."""
        while True:
            batch = self.next_batch()
            if batch is None:
                return
            yield batch
            if batch.index + 1 >= len(self):
                return

    def close(self):
        """Stops reading. The C reader is closed now when no batch array is
        alive (raising FerryError for an error of a background load), else
        when the last one is collected. Calling it again does nothing."""
        h, self._handle = self._handle, None
        if h is not None:
            _lib.check(h.release())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
