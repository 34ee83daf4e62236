"""ferry.Reader: batches of a .npy dataset, with DALI's numpy reader options."""
import ctypes
import errno
import heapq
import itertools
import os
import threading

from . import _check, _lib
from ._array import Array
from ._context import (DEVICES, _as_result, _check_ctx, _CopiesOwner, _torch_stream,
                       default_context, _stream_number)

_OOB = {"error": 0, "pad": 1, "trim_to_shape": 2, "trim": 2}
_ON_ERROR = {"stop": 0, "skip": 1}
# How long one wait in C lasts: between waits Python runs its signal handlers
# (Ctrl-C raises KeyboardInterrupt) and notices a close() from another thread.
_WAIT_SLICE_MS = 100


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


def _error_file(message):
    """The file a reader error names: libferry's messages start with it, or
    for an epoch whose every file was skipped, name the last one after
    '(the last: '. None when neither is an existing path."""
    for text in (message, message.partition("(the last: ")[2]):
        head = text.split(": ", 1)[0]
        if head and os.path.exists(head):
            return head
    return None


class Reader:
    """Reads a dataset of .npy files in batches, loading ahead in the
    background: a replacement for DALI's fn.readers.numpy, with its argument
    names.

    Sources (one of): file_root (a directory, searched recursively for names
    matching file_filter, default '*.npy'), file_list (a text file of paths,
    one a line, relative to file_root unless absolute), files (a list of
    paths, relative to file_root unless absolute). Files are sorted by path.

    batch_size (an int from 1 to 2**24, default 1); epochs (None: as many as
    you iterate, else an int >= 1); shard_id and num_shards (None: from
    $RANK and $WORLD_SIZE as torchrun sets them, else 0 of 1; as in DALI,
    shard_id needs num_shards and 0 <= shard_id < num_shards; num_shards
    alone takes the shard from $RANK, else 0; shard i of n holds samples
    [N*i/n, N*(i+1)/n)); stick_to_shard (False: epoch e reads shard
    (shard_id + e) % num_shards); random_shuffle, seed (an int from 0 to
    2**64 - 1; None: 0; the same permutation for the same seed and epoch on
    every machine); pad_last_batch (fill the last batch by repeating the last
    sample); prefetch_queue_depth (batches loading ahead, 1 to 1024, default
    2); num_threads (IO threads, 1 to 1024; None: the context's);
    cache_header_information (True: headers are cached, checked against size
    and mtime); on_error ('stop' raises, 'skip' leaves bad files out of their
    batch). The flags (stick_to_shard, random_shuffle, pad_last_batch,
    cache_header_information) take a bool, or 0 or 1.

    Region of interest, in C-order coordinates, as DALI defines it: roi_start,
    roi_end, roi_shape (sequences of ints that fit int64) or rel_roi_start,
    rel_roi_end, rel_roi_shape (fractions of the extent: finite real
    numbers), roi_axes (the axis of each value, distinct ints from 0 to 31;
    default the first axes), all of one length, out_of_bounds_policy
    ('error', 'pad' or 'trim_to_shape'), fill_value (padding value, a real
    number, 0).

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

    Every argument is checked before libferry sees it: TypeError for a wrong
    type (a bool where a number is meant included; numpy integers are
    accepted), ValueError for a value out of range (ValueError("embedded null
    byte") for a path with a NUL byte, as open() raises), each naming the
    argument and what it accepts.

    Iterating yields Batch objects (lists of arrays) up to the end of the
    current epoch; iterate again for the next epoch. len() is the number of
    batches in an epoch. Raises FerryError (bad options, no files, a file's
    error: that batch is dropped and iteration can go on; an epoch in which
    on_error='skip' skipped every file). Threads may share a reader
    (next_batch gives each batch to one of them). Use it as a context
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
        cfg = _lib.ReaderConfig()
        keep = []
        # Sources.
        cfg.root = _check.optional_path("file_root", file_root)
        cfg.filter = _check.pattern("file_filter", file_filter)
        cfg.file_list = _check.optional_path("file_list", file_list)
        if files is not None:
            names = _check.paths("files", files)
            arr = (ctypes.c_char_p * max(1, len(names)))(*names)
            keep += [names, arr]
            cfg.files, cfg.nfiles = arr, len(names)
        keep += [cfg.root, cfg.filter, cfg.file_list]
        # Batches, epochs, shards, order.
        cfg.batch_size = _check.integer("batch_size", batch_size, 1, _check.BATCH_MAX)
        cfg.epochs = _check.optional_integer("epochs", epochs, 1, _check.UINT64_MAX,
                                             "as many as you iterate") or 0
        num_shards = _check.optional_integer("num_shards", num_shards, 1, _check.INT_MAX,
                                             "$WORLD_SIZE, else 1")
        if shard_id is not None:
            if num_shards is None:
                raise ValueError("shard_id needs num_shards (shard_id=%r was given alone)"
                                 % (shard_id,))
            shard_id = _check.integer("shard_id", shard_id, 0, num_shards - 1,
                                      "an int from 0 to num_shards - 1 = %d" % (num_shards - 1))
        cfg.shard_id = -1 if shard_id is None else shard_id
        cfg.num_shards = 0 if num_shards is None else num_shards
        cfg.stick_to_shard = _check.flag("stick_to_shard", stick_to_shard)
        cfg.pad_last_batch = _check.flag("pad_last_batch", pad_last_batch)
        cfg.random_shuffle = _check.flag("random_shuffle", random_shuffle)
        cfg.seed = _check.optional_integer("seed", seed, 0, _check.UINT64_MAX, "seed 0") or 0
        cfg.threads = _check.optional_integer("num_threads", num_threads, 1, _check.THREADS_MAX,
                                              "the context's") or 0
        cfg.prefetch_depth = _check.integer("prefetch_queue_depth", prefetch_queue_depth, 1,
                                            _check.PREFETCH_MAX)
        cfg.no_header_cache = 1 - _check.flag("cache_header_information",
                                              cache_header_information)
        cfg.on_error = _ON_ERROR[_check.choice("on_error", on_error, tuple(_ON_ERROR))]
        # Region of interest.
        roi = [("roi_start", ctypes.c_int64, roi_start, "roi_start"),
               ("roi_end", ctypes.c_int64, roi_end, "roi_end"),
               ("roi_shape", ctypes.c_int64, roi_shape, "roi_shape"),
               ("roi_start_rel", ctypes.c_double, rel_roi_start, "rel_roi_start"),
               ("roi_end_rel", ctypes.c_double, rel_roi_end, "rel_roi_end"),
               ("roi_shape_rel", ctypes.c_double, rel_roi_shape, "rel_roi_shape"),
               ("roi_axes", ctypes.c_int, roi_axes, "roi_axes")]
        lengths = {}
        for field, ctype, values, name in roi:
            if values is None:
                continue
            if ctype is ctypes.c_double:
                values = _check.reals(name, values)
            elif name == "roi_axes":
                values = _check.axes(name, values)
            else:
                values = _check.integers(name, values, _check.INT64_MIN, _check.INT64_MAX,
                                         "an int that fits int64")
            lengths[name] = len(values)
            arr = (ctype * max(1, len(values)))(*values)
            keep.append(arr)
            setattr(cfg, field, ctypes.cast(arr, ctypes.POINTER(ctype)))
        if len(set(lengths.values())) > 1:
            raise ValueError("the ROI arguments must all have the same length, not %s" % ", ".join(
                "%s %d" % item for item in lengths.items()))
        cfg.roi_nvals = next(iter(lengths.values()), 0)
        cfg.out_of_bounds_policy = _OOB[_check.choice("out_of_bounds_policy",
                                                      out_of_bounds_policy, tuple(_OOB))]
        cfg.fill_value = _check.real("fill_value", fill_value)
        # Where batches go.
        _check.choice("device", device, DEVICES, none_ok=True)
        _check_ctx(ctx)
        _stream_number(stream)
        self._stream = stream
        # Guards _stash and _calls. Reentrant: a signal handler may close the
        # reader on a thread that holds it.
        self._lock = threading.RLock()
        self._calls_done = threading.Condition(self._lock)
        self._calls = {}               # thread id: calls in progress on this reader
        self._stash = []               # batches an iteration took from the next epoch
        self._seq = itertools.count()
        self._handle = None
        self._ctx = ctx or default_context(device)

        keep.append(cfg)
        ctx_handle = self._ctx._live()
        ptr = ctypes.c_void_p()
        _lib.check(_lib.get().ferry_reader_open(ctx_handle.ptr, ctypes.byref(cfg),
                                                ctypes.byref(ptr)),
                   file_list if file_list is not None else file_root)
        self._handle = _ReaderHandle(ctx_handle, ptr.value, keep)

    def _live(self):
        h = self._handle
        if h is None:
            raise ValueError("ferry.Reader is closed")
        return h

    def _hold(self):
        """Returns the live handle, counted as busy until _drop(h): close()
        waits for the calls in progress on other threads to end (next_batch
        ends its wait within a slice), so that the C reader is never freed
        under a call."""
        with self._lock:
            h = self._live()
            if not h.hold():
                raise ValueError("ferry.Reader is closed")
            me = threading.get_ident()
            self._calls[me] = self._calls.get(me, 0) + 1
        return h

    def _drop(self, h):
        h.drop_dependent()
        with self._lock:
            me = threading.get_ident()
            self._calls[me] -= 1
            if not self._calls[me]:
                del self._calls[me]
            self._calls_done.notify_all()

    @property
    def device(self):
        """The device batches land on: 'cuda' or 'host'."""
        return self._live().ctx.device

    def _epoch_info(self, h):
        out = _lib.EpochInfo()
        _lib.check(_lib.get().ferry_reader_epoch_info(h.ptr, ctypes.byref(out)))
        return {name: getattr(out, name) for name, _ in _lib.EpochInfo._fields_}

    def epoch_info(self):
        """Returns a dict describing the epoch of the batch libferry returned
        last (a batch that an iteration kept for the next one counts):
        epoch, samples (padding included), real_samples, batches, shard_id."""
        h = self._hold()
        try:
            return self._epoch_info(h)
        finally:
            self._drop(h)

    def stats(self):
        """Returns the reader's counters as a dict: samples, bytes_delivered,
        bytes_read, files_skipped, batches."""
        h = self._hold()
        try:
            out = _lib.ReaderStats()
            _lib.check(_lib.get().ferry_reader_stats(h.ptr, ctypes.byref(out)))
            return {name: getattr(out, name) for name, _ in _lib.ReaderStats._fields_}
        finally:
            self._drop(h)

    def __len__(self):
        """The number of batches in an epoch of this shard (the epoch of the
        batch returned last, or the first epoch before any)."""
        return int(self.epoch_info()["batches"])

    def next_batch(self):
        """Returns the next Batch, crossing epoch boundaries, or None after the
        last of the requested epochs. Raises FerryError for a batch that
        failed (it is dropped; a further call continues with the next), and
        for an epoch that delivered nothing because on_error='skip' skipped
        every file of it (the error is the last skipped file's).

        Threads may share a reader: each batch goes to one caller. While the
        next batch is loading the caller waits in slices of about 100 ms, so
        that Python's signal handlers run (Ctrl-C raises KeyboardInterrupt
        promptly) and a close() from another thread ends the wait with
        ValueError."""
        with self._lock:
            if self._stash:
                return heapq.heappop(self._stash)[-1]
        h = self._hold()
        try:
            return self._read(h)
        finally:
            self._drop(h)

    def _read(self, h):
        lib = _lib.get()
        ptr = ctypes.c_void_p()
        while True:
            rc = lib.ferry_reader_next_timeout(h.ptr, ctypes.byref(ptr), _WAIT_SLICE_MS)
            if rc != -errno.ETIMEDOUT:
                break
            # Nothing lost: the batch is still loading. Signal handlers run here.
            if self._handle is not h:
                raise ValueError("ferry.Reader is closed")
        if rc == -_lib.EEND:
            return None
        if rc < 0:
            err = _lib.make_error(rc)
            err.filename = _error_file(err.message)
            raise err
        owner = _BatchOwner(h, ptr.value)
        epoch, index = ctypes.c_uint64(), ctypes.c_uint64()
        _lib.check(lib.ferry_batch_position(ptr, ctypes.byref(epoch), ctypes.byref(index)))
        # The reader's epoch info describes the batch it returned last: ours,
        # unless another thread took a batch of another epoch meanwhile.
        info = self._epoch_info(h)
        batches = info["batches"] if info["epoch"] == epoch.value else None
        device = h.ctx.device
        stream = _stream_number(self._stream if self._stream is not None
                               else _torch_stream(device))
        cai_stream = owner.ready_on(device, stream)
        batch = Batch()
        batch.epoch, batch.index = epoch.value, index.value
        batch._last = batches is not None and batch.index + 1 >= batches
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

    def _keep_for_next(self, batch):
        with self._lock:
            heapq.heappush(self._stash, (batch.epoch, batch.index, next(self._seq), batch))

    def __iter__(self):
        """Yields the batches from here to the end of the current epoch (a
        whole epoch when the previous iteration ran to its end): the epoch of
        the first batch it gets. It ends after that epoch's last batch, or
        when a batch of a later epoch arrives (the epoch's last batches were
        dropped: on_error='skip' skipped all their files), which it keeps to
        yield first in the next iteration (next_batch returns it too)."""
        epoch = None
        while True:
            batch = self.next_batch()
            if batch is None:
                return
            if epoch is None:
                epoch = batch.epoch
            elif batch.epoch != epoch:
                self._keep_for_next(batch)
                return
            yield batch
            if batch._last:
                return

    def close(self):
        """Stops reading. Other threads waiting in next_batch() get ValueError
        within about 100 ms; close() waits for their calls to end. Then the C
        reader is closed, which waits for the loads in flight, raising
        FerryError for an error of a background load; but while an array of
        a batch is alive, only when the last one is collected. Calling it
        again does nothing."""
        me = threading.get_ident()
        with self._lock:
            h, self._handle = self._handle, None
            stash, self._stash = self._stash, []
            # Calls of this thread (a signal handler's close) cannot end first.
            self._calls_done.wait_for(lambda: not any(
                n for ident, n in self._calls.items() if ident != me))
        del stash
        if h is not None:
            _lib.check(h.release())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
