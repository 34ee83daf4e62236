"""ferry.Reader: batches of a .npy dataset, with DALI's numpy reader options."""
from __future__ import annotations

import collections.abc
import ctypes
import errno
import heapq
import itertools
import os
import secrets
import threading
from typing import Any, Dict, Iterator, Optional, Sequence, Union

from . import _check, _lib
from ._batch import Batch, _BatchOwner, _make_batch
from ._context import DEVICES, Context, _check_ctx, shared_context, _stream_number, _key_bytes

_OOB = {"error": 0, "pad": 1, "trim_to_shape": 2, "trim": 2}
_ON_ERROR = {"stop": 0, "skip": 1}
_SAMPLES = {"files": 0, "rows": 1}
# How long one wait in C lasts: between waits Python runs its signal handlers
# (Ctrl-C raises KeyboardInterrupt) and notices a close() from another thread.
_WAIT_SLICE_MS = 100
# What Reader.state_dict() says it is.
STATE_FORMAT = "ferry.Reader/1"
# The seed of shuffle_after_epoch=True without shuffle_after_epoch_seed: fixed,
# so that every run reads the same orders, as DALI's fixed default seed does.
SHUFFLE_AFTER_EPOCH_SEED = 0x2545F4914F6CDD1D


class _ReaderHandle(_lib.Handle):
    """Owns one ferry_reader (and the config memory it was opened with), a
    dependent of its context. Its dependents are the calls in progress on it
    (Reader._hold to _drop) and its batches: the C reader closes when the
    reader is closed (or collected, or replaced by set_epoch or
    load_state_dict) and neither remains. A call that takes a batch hands its
    count to the batch's _BatchOwner, whose finalizer drops it
    (batch_gone)."""

    def __init__(self, ctx, ptr, keep):
        lib = _lib.get()
        super().__init__(ptr, lib.ferry_reader_close, parent=ctx)
        self.ctx = ctx          # the _CtxHandle: outlives the reader
        self.device = ctx.device
        self._keep = keep       # ctypes objects the config points into
        self._release_batch = lib.ferry_batch_release
        self.nfiles = None      # the dataset's files, once len() needed them
        self.epoch_batches = None  # (epoch, its batches), once a batch of it was read

    def batch_gone(self, ptr):
        """The last user of the batch at ptr is gone (its _BatchOwner's
        finalizer, on whichever thread dropped it): hands it back to the C
        reader, then drops its count, closing the C reader if the reader was
        closed and this was its last dependent."""
        self._release_batch(ptr)
        with self._lock:
            self.dependents -= 1
            if self.dependents or not self.released:
                return
        self._close_if_done()


def _error_file(message):
    """The file a reader error names: libferry's messages start with it, or
    for an epoch whose every file was skipped, name the last one after
    '(the last: '. None when neither is an existing path."""
    for text in (message, message.partition("(the last: ")[2]):
        head = text.split(": ", 1)[0]
        if head and os.path.exists(head):
            return head
    return None


def _world_size():
    """$WORLD_SIZE as libferry reads it when a reader names no shards (1 when unset)."""
    text = os.environ.get("WORLD_SIZE", "").strip()
    try:
        return max(1, int(text)) if text else 1
    except ValueError:
        return 1


class Reader:
    """Reads a dataset of .npy files in batches, loading ahead in the
    background: a replacement for DALI's fn.readers.numpy, with its argument
    names (python/README.md has a table of every DALI argument and what ferry
    does with it).

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
    2**64 - 1, the same permutation for the same seed and epoch on every
    machine; None or -1, DALI's default: a random seed drawn once for this
    reader, which ``seed`` then holds); pad_last_batch (fill the last batch
    by repeating the last sample); shuffle_after_epoch (DALI's: every epoch a
    new permutation of the whole dataset, the same in every run unless
    shuffle_after_epoch_seed is given; each shard then reads its slice of
    that permutation, so its samples change from epoch to epoch; not with
    random_shuffle or stick_to_shard); prefetch_queue_depth (batches loading ahead, 1
    to 1024; None, the default: libferry sizes the window, at least 2 batches
    and more for small ones); num_threads (IO threads, 1 to 1024; None: the
    context's); cache_header_information (True: headers are cached, checked
    against the file's device, inode, size, mtime and ctime); on_error
    ('stop' raises, 'skip' leaves bad files out of their batch); samples ('files': each file is a sample; 'rows':
    each row along axis 0 of each file is one, the files sharing a row's
    dtype and shape, shuffled, sharded and padded as rows, a region of
    interest applying to a row's axes; Batch.rows says which row each sample
    is); key (every file is an .npz archive, np.savez's or
    savez_compressed's, and its sample is the member key names, as
    np.load(path)[key] does: file_filter then defaults to '*.npz'; each
    member's CRC-32 is checked; a stored member's place in its archive is
    cached like a header, a deflated one is read and inflated every epoch;
    not with samples='rows'). The flags take a bool, or 0 or 1.

    Region of interest, in C-order coordinates, as DALI defines it: roi_start,
    roi_end, roi_shape (sequences of ints that fit int64) or rel_roi_start,
    rel_roi_end, rel_roi_shape (fractions of the extent: finite real
    numbers), roi_axes (the axis of each value, distinct ints from 0 to 31;
    default the first axes), all of one length, out_of_bounds_policy
    ('error', 'pad' or 'trim_to_shape'), fill_value (padding value, a real
    number, 0).

    device ('cuda', 'host', 'auto', DALI's 'gpu' and 'cpu'; None:
    $FERRY_DEVICE) picks the module's default context, unless ctx (a
    ferry.Context) is given; use_o_direct=True picks a shared context of that
    device that reads with O_DIRECT (with ctx, the context must have been
    made with direct=True). stream (None, an int CUstream, or a torch/cupy
    stream) is the stream a batch's __cuda_array_interface__ 'stream' names
    (1 for the legacy default stream), after ferry_batch_stream_wait made it
    wait for the batch. libferry completes every batch before handing it
    over, so that wait returns at once, and with stream None a batch names
    no stream ('stream' None: ready on every stream) and nothing waits. The
    caller's thread blocks only while the next batch is loading.

    state (a dict from state_dict(), perhaps of another process) starts the
    reader where that state was; lazy_init=True opens the dataset at the
    first use instead of here (DALI's lazy_init); name names the reader (in
    its repr). DALI's dont_use_mmap, read_ahead, initial_fill,
    tensor_init_bytes, skip_cached_images, register_buffers,
    bytes_per_sample_hint and preserve are checked and accepted, and change
    nothing (see python/README.md).

    Every argument is checked before libferry sees it: TypeError for a wrong
    type (a bool where a number is meant included; numpy integers are
    accepted), ValueError for a value out of range (ValueError("embedded null
    byte") for a path with a NUL byte, as open() raises), each naming the
    argument and what it accepts.

    Iterating yields Batch objects up to the end of the current epoch;
    iterate again for the next epoch. len() is the number of batches of the
    epoch the next iteration reads. set_epoch(e) makes the next iteration read
    epoch e; state_dict() and load_state_dict() save and restore the
    position. Raises FerryError (bad options, no files, a file's error: that
    batch is dropped and iteration can go on; an epoch in which
    on_error='skip' skipped every file). Threads may share a reader
    (next_batch gives each batch to one of them). Use it as a context
    manager, or call close().
    """

    def __init__(self, file_root: Optional[_check.PathLike] = None,
                 file_list: Optional[_check.PathLike] = None,
                 files: Optional[Sequence[_check.PathLike]] = None,
                 file_filter: Optional[Union[str, bytes]] = None, batch_size: int = 1,
                 shard_id: Optional[int] = None, num_shards: Optional[int] = None,
                 random_shuffle: bool = False, seed: Optional[int] = None,
                 stick_to_shard: bool = False, pad_last_batch: bool = False,
                 prefetch_queue_depth: Optional[int] = None, num_threads: Optional[int] = None,
                 roi_start: Optional[Sequence[int]] = None, roi_end: Optional[Sequence[int]] = None,
                 roi_shape: Optional[Sequence[int]] = None,
                 rel_roi_start: Optional[Sequence[float]] = None,
                 rel_roi_end: Optional[Sequence[float]] = None,
                 rel_roi_shape: Optional[Sequence[float]] = None,
                 roi_axes: Optional[Sequence[int]] = None, out_of_bounds_policy: str = "error",
                 fill_value: float = 0.0, epochs: Optional[int] = None,
                 device: Optional[str] = None, ctx: Optional[Context] = None, stream: Any = None,
                 cache_header_information: bool = True, on_error: str = "stop", *,
                 state: Optional[Dict[str, Any]] = None, name: Optional[str] = None,
                 lazy_init: bool = False, use_o_direct: bool = False,
                 shuffle_after_epoch: bool = False,
                 shuffle_after_epoch_seed: Optional[int] = None, dont_use_mmap: bool = False,
                 read_ahead: bool = False, initial_fill: int = 1024,
                 tensor_init_bytes: int = 1048576, skip_cached_images: bool = False,
                 register_buffers: bool = True,
                 bytes_per_sample_hint: Union[int, Sequence[int]] = 0,
                 preserve: bool = False, samples: str = "files",
                 key: Optional[str] = None) -> None:
        self._handle = None
        self._closed = False
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
        seed = _check.seed("seed", seed)
        cfg.threads = _check.optional_integer("num_threads", num_threads, 1, _check.THREADS_MAX,
                                              "the context's") or 0
        cfg.prefetch_depth = _check.optional_integer(
            "prefetch_queue_depth", prefetch_queue_depth, 1, _check.PREFETCH_MAX,
            "sized by libferry") or 0
        cfg.no_header_cache = 1 - _check.flag("cache_header_information",
                                              cache_header_information)
        cfg.on_error = _ON_ERROR[_check.choice("on_error", on_error, tuple(_ON_ERROR))]
        cfg.samples = _SAMPLES[_check.choice("samples", samples, tuple(_SAMPLES))]
        raw_key = _key_bytes(key)
        if raw_key is not None and not raw_key:
            raise ValueError("key must not be empty")
        if raw_key is not None and samples == "rows":
            raise ValueError("key (a member of each .npz archive) does not take samples='rows'")
        cfg.npz_key = raw_key
        keep.append(raw_key)
        # Region of interest.
        roi = [("roi_start", ctypes.c_int64, roi_start, "roi_start"),
               ("roi_end", ctypes.c_int64, roi_end, "roi_end"),
               ("roi_shape", ctypes.c_int64, roi_shape, "roi_shape"),
               ("roi_start_rel", ctypes.c_double, rel_roi_start, "rel_roi_start"),
               ("roi_end_rel", ctypes.c_double, rel_roi_end, "rel_roi_end"),
               ("roi_shape_rel", ctypes.c_double, rel_roi_shape, "rel_roi_shape"),
               ("roi_axes", ctypes.c_int, roi_axes, "roi_axes")]
        lengths = {}
        for field, ctype, values, arg in roi:
            if values is None:
                continue
            if ctype is ctypes.c_double:
                values = _check.reals(arg, values)
            elif arg == "roi_axes":
                values = _check.axes(arg, values)
            else:
                values = _check.integers(arg, values, _check.INT64_MIN, _check.INT64_MAX,
                                         "an int that fits int64")
            lengths[arg] = len(values)
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
        # DALI's remaining arguments.
        self.name = _check.optional_name("name", name)
        lazy_init = _check.flag("lazy_init", lazy_init)
        use_o_direct = _check.flag("use_o_direct", use_o_direct)
        for arg, value in (("dont_use_mmap", dont_use_mmap), ("read_ahead", read_ahead),
                           ("skip_cached_images", skip_cached_images),
                           ("register_buffers", register_buffers), ("preserve", preserve)):
            _check.flag(arg, value)
        _check.integer("initial_fill", initial_fill, 1, None)
        _check.integer("tensor_init_bytes", tensor_init_bytes, 0, None)
        _check.hint("bytes_per_sample_hint", bytes_per_sample_hint)
        if _check.flag("shuffle_after_epoch", shuffle_after_epoch):
            seed = self._shuffle_after_epoch(cfg, shuffle_after_epoch_seed)
        elif shuffle_after_epoch_seed is not None:
            _check.integer("shuffle_after_epoch_seed", shuffle_after_epoch_seed,
                           _check.INT64_MIN, _check.UINT64_MAX)
        self._seed_given = seed is not None
        self.seed = seed if seed is not None else secrets.randbits(64)
        cfg.seed = self.seed
        # Where batches go.
        device = _check.device("device", device, DEVICES)
        _check_ctx(ctx)
        stream_no = _stream_number(stream)
        if use_o_direct and ctx is not None and ctx.direct is not True:
            raise ValueError("use_o_direct=True: ctx was not made with direct=True "
                             "(make it so, or leave ctx out for a shared O_DIRECT context)")
        self._stream_no = stream_no  # its DLPack number, fixed for the reader's life
        # Guards _handle, _stash and _calls. Reentrant: a signal handler may
        # close the reader on a thread that holds it.
        self._lock = threading.RLock()
        self._calls_done = threading.Condition(self._lock)
        self._calls = {}               # thread id: calls in progress on this reader
        self._closers = 0              # threads waiting in _wait_calls, to be notified
        self._stash = []               # batches an iteration took from the next epoch
        self._seq = itertools.count()
        self._exhausted = None         # (epoch, 0) when a state put it past its epochs
        self._pending_epoch = None     # set_epoch before the dataset was opened
        self._pending_state = None
        self._cfg, self._keep = cfg, keep
        self._source = file_list if file_list is not None else file_root
        self._ctx = ctx or shared_context(device, direct=bool(use_o_direct))
        if state is not None:
            self._pending_state = self._take_state(state)
        if not lazy_init:
            self._start()

    def _shuffle_after_epoch(self, cfg, seed):
        """DALI's shuffle_after_epoch: every epoch one permutation of the whole
        dataset, then sharded (libferry's shuffle_dataset)."""
        if cfg.random_shuffle:
            raise ValueError("shuffle_after_epoch and random_shuffle cannot both be set "
                             "(as in DALI)")
        if cfg.stick_to_shard:
            raise ValueError("shuffle_after_epoch and stick_to_shard cannot both be set "
                             "(as in DALI)")
        cfg.shuffle_dataset = 1
        if seed is None:
            return SHUFFLE_AFTER_EPOCH_SEED
        return _check.integer("shuffle_after_epoch_seed", seed, _check.INT64_MIN,
                              _check.UINT64_MAX) % (1 << 64)

    # ---- opening the C reader ----

    def _open_c(self, resume=None):
        """Opens a C reader on this reader's config, at resume (epoch, index,
        fingerprint) when given."""
        cfg = _lib.ReaderConfig.from_buffer_copy(self._cfg)
        keep = [self._cfg, self._keep, cfg]
        if resume is not None:
            st = _lib.ReaderState(epoch=resume[0], index=resume[1], fingerprint=resume[2])
            keep.append(st)
            cfg.resume = ctypes.addressof(st)
        ctx_handle = self._ctx._live()
        ptr = ctypes.c_void_p()
        _lib.check(_lib.get().ferry_reader_open(ctx_handle.ptr, ctypes.byref(cfg),
                                                ctypes.byref(ptr)), self._source)
        return _ReaderHandle(ctx_handle, ptr.value, keep)

    def _open_at(self, target):
        """Opens a C reader at target (epoch, index, fingerprint) or at the
        start (None). Returns it and, for a target at the end of the last
        epoch (where a finished run's state stands), (epochs, 0): the reader
        then gives nothing. libferry refuses a state of another dataset or
        other settings; this checks the fingerprint of an end state itself."""
        epochs = self._cfg.epochs
        if target is None or not epochs or target[0] < epochs:
            return self._open_c(target), None
        h = self._open_c(None)
        fingerprint = self._fingerprint(h)
        if fingerprint != target[2] or tuple(target[:2]) != (epochs, 0):
            h.release()
            lib = _lib.get()
            why = ("the state is of another dataset listing or other settings (fingerprint "
                   "%016x, this reader's %016x)" % (target[2], fingerprint)
                   if fingerprint != target[2] else
                   "the state's batch %d of epoch %d does not exist (%d epochs)"
                   % (target[1], target[0], epochs))
            raise _lib.FerryError(_lib.ECONFIG, lib.ferry_strerror(-_lib.ECONFIG).decode(),
                                  self._source, "%s: %s" % (self._source_name(), why))
        return h, (epochs, 0)

    def _source_name(self):
        source = self._source
        return os.fsdecode(source) if source is not None else "reader"

    def _start(self):
        """The C reader, opened now if it was not (lazy_init, or after a
        set_epoch or state given before)."""
        with self._lock:
            h = self._handle
            if h is not None:
                return h
            if self._closed:
                raise ValueError("ferry.Reader is closed")
            state, epoch = self._pending_state, self._pending_epoch
            h, exhausted = self._open_at(state)
            if epoch:
                fingerprint = self._fingerprint(h)
                h.release()
                h, exhausted = self._open_at((epoch, 0, fingerprint))
            self._handle, self._exhausted = h, exhausted
            self._pending_state = self._pending_epoch = None
            return h

    def _reset(self, target):
        """Replaces the C reader by one opened at target (set_epoch,
        load_state_dict). Batches taken before stay valid; other threads
        waiting in next_batch get ValueError."""
        with self._lock:
            if self._closed:
                raise ValueError("ferry.Reader is closed")
            new, exhausted = self._open_at(target)
            old, self._handle = self._handle, new
            self._exhausted = exhausted
            self._pending_state = self._pending_epoch = None
            stash, self._stash = self._stash, []
            self._wait_calls()
        del stash
        if old is not None:
            old.release()  # a background error of the reader left behind is of no interest

    def _wait_calls(self):
        """Waits (holding self._lock) until no other thread has a call in
        progress on this reader: close() and _reset() then release the old
        C reader with nobody inside it. Calls of this thread (a signal
        handler's close) cannot end first and are not waited for."""
        me = threading.get_ident()
        self._closers += 1
        try:
            self._calls_done.wait_for(lambda: not any(
                n for ident, n in self._calls.items() if ident != me))
        finally:
            self._closers -= 1

    def _hold(self):
        """Returns the live handle (opening it for lazy_init), counted as a
        dependent of it and as a call of this thread until _drop(h): close()
        waits for the calls in progress on other threads to end (next_batch
        ends its wait within a slice), and the C reader is never freed under
        a call. One lock of the reader's and one of the handle's."""
        me = threading.get_ident()
        with self._lock:
            h = self._handle
            if h is None:
                h = self._start()  # ValueError when closed
            if not h.hold():
                raise ValueError("ferry.Reader is closed")
            calls = self._calls
            calls[me] = calls.get(me, 0) + 1
        return h

    def _drop(self, h, handed_on=False):
        """Ends the call _hold(h) began. handed_on: its count on h went to
        the batch it took (whose finalizer drops it), so h keeps it. The
        count goes before the call does: a close() that saw no call left
        then closes the C reader itself, and gets its error."""
        if not handed_on:
            h.drop_dependent()
        me = threading.get_ident()
        with self._lock:
            calls = self._calls
            n = calls[me] - 1
            if n:
                calls[me] = n
            else:
                del calls[me]
            if self._closers:
                self._calls_done.notify_all()

    # ---- what it is ----

    @property
    def device(self) -> str:
        """The device batches land on: 'cuda' or 'host'."""
        if self._closed:
            raise ValueError("ferry.Reader is closed")
        h = self._handle
        return h.ctx.device if h is not None else self._ctx.device

    @property
    def batch_size(self) -> int:
        return self._cfg.batch_size

    @property
    def epochs(self) -> Optional[int]:
        """The epochs to read (None: no limit)."""
        return self._cfg.epochs or None

    def _epoch_info(self, h):
        out = _lib.EpochInfo()
        _lib.check(_lib.get().ferry_reader_epoch_info(h.ptr, ctypes.byref(out)))
        return {name: getattr(out, name) for name, _ in _lib.EpochInfo._fields_}

    def epoch_info(self) -> Dict[str, int]:
        """Returns a dict describing the epoch of the batch libferry returned
        last (a batch that an iteration kept for the next one counts):
        epoch, samples (padding included), real_samples, batches, shard_id."""
        h = self._hold()
        try:
            return self._epoch_info(h)
        finally:
            self._drop(h)

    def stats(self) -> Dict[str, int]:
        """Returns the reader's counters as a dict: samples, bytes_delivered,
        bytes_read, files_skipped, batches, files_buffered, files_direct and
        files_mapped (files read through the page cache, with O_DIRECT, or
        copied straight from a registered mapping of the page cache without a
        read, once per fetch: a file read every epoch counts every epoch;
        FERRY_ODIRECT=auto chooses per file, the zero-copy path takes warm
        files of 4 MiB or more within FERRY_PIN_BUDGET). Of the C reader in use: set_epoch and load_state_dict start
        new counts."""
        h = self._hold()
        try:
            out = _lib.ReaderStats()
            _lib.check(_lib.get().ferry_reader_stats(
                h.ptr, ctypes.byref(out), ctypes.sizeof(out)))
            return {name: getattr(out, name) for name, _ in _lib.ReaderStats._fields_}
        finally:
            self._drop(h)

    def __len__(self) -> int:
        """The number of batches of the epoch the next iteration reads (the
        current one while an epoch is under way), padding and this reader's
        shard of that epoch taken into account; 0 after the last of epochs.
        With shards that rotate (stick_to_shard False, several shards) an
        epoch not yet begun may have a shard of another size: the first time
        that matters the dataset is listed once more to count its files."""
        h = self._hold()
        try:
            return self._batches_of_next(h)
        finally:
            self._drop(h)

    def _batches_of_next(self, h):
        epoch, _ = self._position(h)
        if self._cfg.epochs and epoch >= self._cfg.epochs:
            return 0
        info = self._epoch_info(h)
        if info["epoch"] == epoch or self._cfg.stick_to_shard or self._shards() == 1:
            return int(info["batches"])
        return self._batches_in(h, epoch, info)

    def _shards(self):
        return self._cfg.num_shards if self._cfg.num_shards > 0 else _world_size()

    def _batches_in(self, h, epoch, info):
        """Batches of a rotating shard's epoch, from the number of files."""
        n = self._shards()
        files = self._count_files(h)
        first = (info["shard_id"] - info["epoch"]) % n  # the shard epoch 0 reads

        def samples(e):
            s = (first + e) % n
            return files * (s + 1) // n - files * s // n
        if samples(info["epoch"]) != info["real_samples"]:  # the listing changed meanwhile
            return int(info["batches"])
        size = self._cfg.batch_size
        return (samples(epoch) + size - 1) // size

    def _count_files(self, h):
        """The number of files in the dataset: a second listing, by a C reader
        of one shard that loads one file, once per C reader."""
        if h.nfiles is None:
            cfg = _lib.ReaderConfig.from_buffer_copy(self._cfg)
            cfg.batch_size, cfg.epochs, cfg.shard_id, cfg.num_shards = 1, 1, 0, 1
            cfg.pad_last_batch = cfg.random_shuffle = cfg.shuffle_dataset = 0
            cfg.threads = cfg.prefetch_depth = 1
            cfg.on_error = _ON_ERROR["skip"]
            cfg.roi_nvals = 0
            for field in ("roi_start", "roi_end", "roi_shape", "roi_start_rel", "roi_end_rel",
                          "roi_shape_rel", "roi_axes"):
                setattr(cfg, field, None)
            cfg.resume = None
            lib = _lib.get()
            ptr = ctypes.c_void_p()
            _lib.check(lib.ferry_reader_open(h.ctx.ptr, ctypes.byref(cfg), ctypes.byref(ptr)),
                       self._source)
            try:
                out = _lib.EpochInfo()
                lib.ferry_reader_epoch_info(ptr, ctypes.byref(out))
                h.nfiles = out.real_samples
            finally:
                lib.ferry_reader_close(ptr)
        return h.nfiles

    # ---- where it stands ----

    def _fingerprint(self, h):
        st = _lib.ReaderState()
        _lib.check(_lib.get().ferry_reader_save_state(h.ptr, ctypes.byref(st)))
        return st.fingerprint

    def _position(self, h):
        """(epoch, index) of the batch the reader gives next: a batch an
        iteration kept for the next one, else libferry's saved position."""
        if self._exhausted is not None:
            return self._exhausted
        with self._lock:
            if self._stash:
                return self._stash[0][0], self._stash[0][1]
        st = _lib.ReaderState()
        _lib.check(_lib.get().ferry_reader_save_state(h.ptr, ctypes.byref(st)))
        return st.epoch, st.index

    def state_dict(self) -> Dict[str, Any]:
        """Returns where the reader stands as a small dict of ints and a
        string (JSON, pickle and torch.save take it): the epoch and index of
        the batch it gives next, a fingerprint of the dataset listing and of
        the settings that decide the order, and the seed. Reader(...,
        state=d) or load_state_dict(d) on a reader of the same dataset and
        settings, in this process or another, gives the same batches from
        there in the same order: the rest of the epoch, then the same later
        epochs. Batches taken before are not in it, whether or not you have
        used them."""
        h = self._hold()
        try:
            epoch, index = self._position(h)
            fingerprint = self._fingerprint(h)
        finally:
            self._drop(h)
        return {"format": STATE_FORMAT, "epoch": int(epoch), "index": int(index),
                "fingerprint": int(fingerprint), "seed": int(self.seed)}

    def _take_state(self, state):
        """Checks a state_dict() and returns its (epoch, index, fingerprint);
        a reader whose seed was drawn at random (seed None or -1) takes the
        state's seed."""
        if not isinstance(state, collections.abc.Mapping):
            raise TypeError("state must be a dict from Reader.state_dict(), not %s (%r)"
                            % (type(state).__name__, state))
        if state.get("format") != STATE_FORMAT:
            raise ValueError("state is not a ferry.Reader state: its 'format' is %r, not %r"
                             % (state.get("format"), STATE_FORMAT))
        for key in ("epoch", "index", "fingerprint", "seed"):
            if key not in state:
                raise ValueError("state has no %r: not a ferry.Reader state" % key)
        target = tuple(_check.integer("state[%r]" % key, state[key], 0, _check.UINT64_MAX)
                       for key in ("epoch", "index", "fingerprint"))
        seed = _check.integer("state['seed']", state["seed"], 0, _check.UINT64_MAX)
        if seed != self.seed:
            if self._seed_given and (self._cfg.random_shuffle or self._cfg.shuffle_dataset):
                raise ValueError("state['seed'] is %d, but this reader shuffles with seed %d: "
                                 "make it with seed=None (or -1) to take the state's"
                                 % (seed, self.seed))
            if not self._seed_given:
                self.seed = self._cfg.seed = seed
        return target

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continues from state (a dict from state_dict()): the C reader is
        opened again at that position, so the next batch is the one the state
        names. Raises TypeError or ValueError for something not such a dict
        (or of another seed than this reader's explicit one), FerryError
        (ferry.ECONFIG) for a state of another dataset listing or other
        settings, or past this reader's epochs; the reader is then unchanged.
        Batches taken before stay valid."""
        seed = self.seed
        try:
            target = self._take_state(state)
            self._reset(target)
        except BaseException:
            self.seed = self._cfg.seed = seed
            raise

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration (or next_batch) read epoch epoch from its
        first batch, as torch's DistributedSampler.set_epoch does for its
        sampler: epoch e has e's shard and e's order, wherever the reader
        stood. Calling it with the epoch the reader is about to begin (the
        usual loop, set_epoch(e) before iterating epoch e) changes nothing;
        otherwise the C reader is opened again at (epoch, 0). ValueError for
        an epoch past epochs."""
        epoch = _check.integer("epoch", epoch, 0, _check.UINT64_MAX)
        epochs = self._cfg.epochs
        if epochs and epoch >= epochs:
            raise ValueError("epoch must be an int from 0 to epochs - 1 = %d, not %d"
                             % (epochs - 1, epoch))
        with self._lock:
            if self._closed:
                raise ValueError("ferry.Reader is closed")
            if self._handle is None:  # not opened yet (lazy_init)
                self._pending_epoch, self._pending_state = epoch, None
                return
        h = self._hold()
        try:
            position = self._position(h)
            fingerprint = self._fingerprint(h)
        finally:
            self._drop(h)
        if tuple(position) != (epoch, 0):
            self._reset((epoch, 0, fingerprint))

    # ---- reading ----

    def next_batch(self) -> Optional[Batch]:
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
        if self._stash:
            with self._lock:
                if self._stash:
                    return heapq.heappop(self._stash)[-1]
        h = self._hold()
        owner = None
        try:
            if self._exhausted is not None:
                return None
            ptr = self._wait_next(h)
            if ptr is None:
                return None
            # From here the batch holds the call's count on h, until its last user is gone.
            owner = _BatchOwner(h, ptr)
            return self._describe(h, owner)
        finally:
            self._drop(h, owner is not None)

    def _wait_next(self, h):
        """The next ferry_batch's address, waiting for it in slices; None
        after the last epoch. FerryError for a batch that failed,
        ValueError once the reader was closed or moved meanwhile."""
        lib = _lib.get()
        ptr = ctypes.c_void_p()
        while True:
            rc = lib.ferry_reader_next_timeout(h.ptr, ptr, _WAIT_SLICE_MS)
            if rc != -errno.ETIMEDOUT:
                break
            # Nothing lost: the batch is still loading. Signal handlers run here.
            if self._handle is not h:
                raise ValueError("ferry.Reader is closed (or was moved by set_epoch or "
                                 "load_state_dict while this call waited)")
        if rc == -_lib.EEND:
            return None
        if rc < 0:
            err = _lib.make_error(rc)
            err.filename = _error_file(err.message)
            raise err
        return ptr.value

    def _describe(self, h, owner):
        """The Batch of the ferry_batch owner holds: one libferry call
        (ferry_batch_describe), and one more at an epoch's first batch."""
        info = _lib.BatchInfo()
        _lib.check(_lib.get().ferry_batch_describe(owner.ptr, info))
        known = h.epoch_batches
        if known is not None and known[0] == info.epoch:
            batches = known[1]
        else:
            batches = self._epoch_batches(h, info.epoch)
        last = batches is not None and info.index + 1 >= batches
        # libferry hands out complete batches: with no stream asked for, none
        # is named and nothing waits (no per-batch query of torch's stream).
        stream = None
        if self._stream_no is not None:
            stream = owner.ready_on(h.device, self._stream_no)
        return _make_batch(owner, info, h.device, last, stream)

    def _epoch_batches(self, h, epoch):
        """The batches of epoch (a number fixed for the life of the C reader h),
        asked of libferry once an epoch; None when another thread took a batch
        of another epoch meanwhile (the epoch info describes the batch returned
        last): then it is asked again at the next batch."""
        known = h.epoch_batches
        if known is not None and known[0] == epoch:
            return known[1]
        info = self._epoch_info(h)
        if info["epoch"] != epoch:
            return None
        h.epoch_batches = (epoch, info["batches"])
        return info["batches"]

    def _keep_for_next(self, batch):
        with self._lock:
            heapq.heappush(self._stash, (batch.epoch, batch.index, next(self._seq), batch))

    def __iter__(self) -> Iterator[Batch]:
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

    def close(self) -> None:
        """Stops reading. Other threads waiting in next_batch() get ValueError
        within about 100 ms; close() waits for their calls to end. Then the C
        reader is closed, which waits for the loads in flight, raising
        FerryError for an error of a background load; but while a batch or an
        array of one is alive, only when the last one is collected. Calling it
        again does nothing."""
        with self._lock:
            h, self._handle = self._handle, None
            self._closed = True
            stash, self._stash = self._stash, []
            self._wait_calls()
        del stash
        if h is not None:
            _lib.check(h.release())

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        cfg = self._cfg
        parts = ["name=%r" % self.name] if self.name else []
        if cfg.files:
            parts.append("files=[%d paths]" % cfg.nfiles)
        elif cfg.file_list:
            parts.append("file_list=%r" % os.fsdecode(cfg.file_list))
        if cfg.root:
            parts.append("file_root=%r" % os.fsdecode(cfg.root))
        parts.append("batch_size=%d" % cfg.batch_size)
        if cfg.random_shuffle or cfg.shuffle_dataset:
            parts.append("seed=%d" % self.seed)
        if cfg.num_shards:
            parts.append("shard=%s/%d" % (cfg.shard_id if cfg.shard_id >= 0 else "$RANK",
                                          cfg.num_shards))
        if cfg.epochs:
            parts.append("epochs=%d" % cfg.epochs)
        if self._closed:
            parts.append("closed")
        else:
            parts.append("device=%r" % (self._ctx._handle.device if self._ctx._handle else "?"))
        return "ferry.Reader(%s)" % ", ".join(parts)
