"""ferry.Context, ferry.load, ferry.load_into, ferry.load_async, ferry.read_range
and ferry.info."""
from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading
from typing import Any, NamedTuple, Optional, Tuple, Union

from . import _check, _lib
from ._array import Array

try:
    import numpy as _np
except ImportError:  # numpy is optional
    _np = None


class _CtxHandle(_lib.Handle):
    """Owns one ferry_ctx. Every array and reader made from it is a dependent,
    so ferry_ctx_destroy runs only after the last of them is gone."""

    def __init__(self, ptr, gpu):
        lib = _lib.get()
        super().__init__(ptr, lib.ferry_ctx_destroy)
        self.device = lib.ferry_ctx_device_kind(ptr).decode()
        self.device_id = gpu if self.device == "cuda" else 0


DEVICES = ("auto", "cuda", "host")
IO_BACKENDS = ("auto", "posix", "uring", "cufile")


DIRECT_AUTO = 2  # enum ferry_direct's FERRY_DIRECT_AUTO


def _direct_mode(direct):
    """ferry_ctx_options.direct for Context's direct: None (-1 there), a flag, or 'auto'."""
    if direct is None:
        return None
    if isinstance(direct, str) and direct == "auto":
        return DIRECT_AUTO
    return _check.flag("direct", direct)


def _stream_number(stream):
    """A DLPack-style stream number of a torch or cupy stream, or an int
    (TypeError or ValueError for anything else)."""
    return _check.stream("stream", stream)


def _check_ctx(ctx):
    """ctx must be None or a ferry.Context."""
    if ctx is not None and not isinstance(ctx, Context):
        raise TypeError("ctx must be None or a ferry.Context, not %s (%r)"
                        % (type(ctx).__name__, ctx))
    return ctx


class _CopiesOwner:
    """What owns memory whose copies may still run (a loaded array, a reader
    batch): subclasses set ptr, ctx and the C calls _stream_wait(ptr, CUstream)
    and _host_wait(ptr)."""

    __slots__ = ()

    def wait_stream(self, stream):
        """Makes a CUDA stream wait for the copies without blocking the host.
        stream is a DLPack stream number: None, 0 or 1 the legacy default
        stream, 2 the per-thread default stream, else a CUstream handle; -1
        does nothing. On the host device it waits on the host."""
        if stream == -1:
            return
        handle = None if stream in (None, 0, 1) else stream
        _lib.check(self._stream_wait(self.ptr, handle), self.path)

    def wait_host(self):
        """Waits on the host until the copies have completed."""
        _lib.check(self._host_wait(self.ptr), self.path)

    def ready_on(self, device, stream):
        """Makes the result ready for its user: on a CUDA device with a stream
        number given, that stream waits (no host sync) and the number for
        __cuda_array_interface__ is returned; otherwise a host wait, after which
        the data is ready for every stream (None)."""
        if device == "cuda" and stream is not None:
            self.wait_stream(stream)
            return stream if stream != 0 else 1
        self.wait_host()
        return None


class _LoadedOwner(_lib.Handle, _CopiesOwner):
    """Owns one ferry_array from ferry_load_async, a dependent of its context;
    frees it when collected (ferry_array_free waits for any copy still running
    first)."""

    def __init__(self, ctx, ptr, path):
        lib = _lib.get()
        super().__init__(ptr, lib.ferry_array_free, parent=ctx)
        self.ctx = ctx
        self.path = path
        self._stream_wait = lib.ferry_array_stream_wait
        self._host_wait = lib.ferry_array_wait


def _gpu_ordinal(gpu):
    """The GPU ordinal libferry picks: gpu, else $FERRY_GPU, else $LOCAL_RANK, else 0."""
    if gpu is not None and gpu >= 0:
        return int(gpu)
    for name in ("FERRY_GPU", "LOCAL_RANK"):
        value = os.environ.get(name, "")
        if value.strip().isdigit():
            return int(value)
    return 0


def _as_result(array):
    """What load returns: a numpy view on the host device (when numpy is
    importable), else the ferry.Array itself."""
    if array.device == "host" and _np is not None:
        return array.numpy()
    return array


class Context:
    """A ferry context: one device, one storage IO backend, a staging pool and
    IO threads. Loading through a context reuses all of them.

    Arguments (None takes the environment's value, then libferry's default):
    device ('auto', 'cuda' or 'host', DALI's 'gpu' and 'cpu' meaning 'cuda'
    and 'host'; $FERRY_DEVICE), gpu (the GPU ordinal,
    an int >= 0; None or -1: $FERRY_GPU, then $LOCAL_RANK, then 0), io
    ('auto', 'posix', 'uring' or 'cufile'; $FERRY_IO), threads (IO threads,
    1 to 1024; $FERRY_THREADS), chunk_size (staging chunk in bytes, a power of
    two from 4 KiB to 16 MiB; $FERRY_CHUNK_SIZE), max_buffers (staging buffers
    at most, 1 to 4096; $FERRY_MAX_BUFFERS), direct (True: every file read
    with O_DIRECT, False: none, 'auto': per file, cold large reads with
    O_DIRECT once the page-cache budget $FERRY_CACHE_BUDGET is spent;
    $FERRY_ODIRECT, whose default is 'auto').

    Arguments are checked before libferry sees them: TypeError for a wrong
    type (a bool where a number is meant included; numpy integers are
    accepted), ValueError for a value out of range, each naming the argument.
    Raises FerryError when the device or backend is unavailable or the
    environment holds an invalid value. Use it as a context manager, or call
    close(); arrays and readers made from it stay valid after close(), which
    frees the context only once the last of them is gone.
    """

    def __init__(self, device: Optional[str] = None, io: Optional[str] = None,
                 threads: Optional[int] = None, chunk_size: Optional[int] = None,
                 direct: Union[bool, str, None] = None, gpu: Optional[int] = None,
                 max_buffers: Optional[int] = None) -> None:
        self._handle = None
        device = _check.device("device", device, DEVICES)
        io = _check.choice("io", io, IO_BACKENDS, none_ok=True)
        threads = _check.optional_integer("threads", threads, 1, _check.THREADS_MAX,
                                          "$FERRY_THREADS, else the default")
        chunk_size = _check.chunk_size("chunk_size", chunk_size)
        direct = _direct_mode(direct)
        gpu = _check.optional_integer("gpu", gpu, -1, _check.INT_MAX,
                                      "$FERRY_GPU, then $LOCAL_RANK, then 0; -1 the same")
        max_buffers = _check.optional_integer("max_buffers", max_buffers, 1, _check.BUFFERS_MAX,
                                              "$FERRY_MAX_BUFFERS, else the default")
        lib = _lib.get()
        opt = _lib.CtxOptions()
        opt.device = device.encode() if device else None
        opt.gpu = -1 if gpu is None else gpu
        opt.io = io.encode() if io else None
        opt.chunk_size = chunk_size or 0
        opt.max_buffers = max_buffers or 0
        opt.threads = threads or 0
        opt.direct = -1 if direct is None else direct
        ptr = ctypes.c_void_p()
        _lib.check(lib.ferry_ctx_create(ctypes.byref(ptr), ctypes.byref(opt)))
        self._handle = _CtxHandle(ptr.value, _gpu_ordinal(gpu))
        # as asked (None: $FERRY_ODIRECT)
        self.direct = {None: None, 0: False, 1: True, DIRECT_AUTO: "auto"}[direct]

    def _live(self):
        if self._handle is None:
            raise ValueError("ferry.Context is closed")
        return self._handle

    @property
    def device(self) -> str:
        """The device this context loads onto: 'cuda' or 'host'."""
        return self._live().device

    @property
    def device_id(self) -> int:
        """The GPU ordinal of a CUDA context (as libferry resolves it); 0 on the host."""
        return self._live().device_id

    @property
    def io(self) -> str:
        """The storage IO backend's name: 'posix', 'uring' or 'cufile'."""
        return _lib.get().ferry_ctx_io_name(self._live().ptr).decode()

    def describe(self) -> str:
        """Returns libferry's multi-line report on the device, IO backend,
        chunk size and threads."""
        lib = _lib.get()
        ptr = self._live().ptr
        n = lib.ferry_ctx_describe(ptr, None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        lib.ferry_ctx_describe(ptr, buf, n + 1)
        return buf.value.decode("utf-8", "replace")

    def load(self, path: _check.PathLike, stream: Any = None, key: Optional[str] = None) -> Any:
        """Loads the .npy file at path into new memory of this context's
        device, in C order and native byte order, and returns it: a numpy array
        viewing ferry's memory on the host device (when numpy is importable),
        else a ferry.Array (CUDA: usable through __cuda_array_interface__ and
        DLPack).

        stream is the CUDA stream the caller will use the result on: a
        torch/cupy stream, or a DLPack stream number (0 or 1 the legacy default
        stream, 2 the per-thread one, another int a CUstream handle). With a
        stream, on a GPU, the load returns as soon as the file is read and its
        copies are queued, having made that stream wait for them: no host sync,
        and the array's __cuda_array_interface__ 'stream' names it. Without one
        (and on the host device) it waits on the host until the data is
        complete, so the result is ready on every stream ('stream' None).
        Raises FerryError naming the file; a copy that fails after the return
        shows as that stream's CUDA error. TypeError for a path that is not
        str, bytes or os.PathLike, ValueError("embedded null byte") for a path
        with a NUL byte (as open() raises), TypeError or ValueError for a bad
        stream.

        key names a member of an .npz archive at path (np.savez,
        np.savez_compressed) as numpy does: np.load(path)[key]. Stored members
        are read like a .npy, deflated ones inflated on the CPU; every
        member's CRC-32 is checked. None: path is a .npy.
        """
        stream = _stream_number(stream)
        pending = self._start(path, None, stream, key)
        pending._ready(stream)
        return pending._result()

    def load_async(self, path: _check.PathLike, stream: Any = None,
                   key: Optional[str] = None) -> "AsyncLoad":
        """Starts loading the .npy file at path into new memory and returns an
        AsyncLoad as soon as the file is read and its copies are queued (the
        copies to the device may still run), so that the next file's reads
        overlap them. With a stream (as for load; CUDA only), that stream is
        made to wait for the copies on the device, and the AsyncLoad's array
        is ready on it at once; in any case AsyncLoad.wait() waits on the host
        and returns the result. Errors and key as for load."""
        stream = _stream_number(stream)
        pending = self._start(path, None, stream, key)
        pending._ready(stream, host_wait=False)
        return pending

    def load_into(self, path: _check.PathLike, out: Any, stream: Any = None,
                  key: Optional[str] = None) -> Any:
        """Loads the .npy file at path into out, memory of the caller's, and
        returns out. out is, for a CUDA context, anything with
        __cuda_array_interface__ (a torch CUDA tensor, a CuPy array, ...); on
        the host device a writable numpy array (anything with a writable
        __array_interface__). It must be C-contiguous, of the file's dtype in
        native byte order, and hold exactly as many elements as the file (its
        shape may differ: a flat buffer of the same size works): else
        ValueError, or TypeError for a buffer of the wrong kind, before any
        byte is read. A CUDA buffer whose __cuda_array_interface__ names a
        stream (CuPy's do) has that stream synchronized first, through CuPy or
        torch (ValueError when neither is imported), so that ferry's copies
        cannot overtake work queued there. stream is as for load: with one,
        the call returns once the copies are queued and that stream waits for
        them; without one it waits on the host. key as for load."""
        stream = _stream_number(stream)
        pending = self._start(path, out, stream, key)
        pending._ready(stream)
        return out

    def load_into_async(self, path: _check.PathLike, out: Any, stream: Any = None,
                        key: Optional[str] = None) -> "AsyncLoad":
        """As load_into, returning an AsyncLoad once the copies are queued (see
        load_async); its wait() returns out."""
        stream = _stream_number(stream)
        pending = self._start(path, out, stream, key)
        pending._ready(stream, host_wait=False)
        return pending

    def read_range(self, path: _check.PathLike, offset: int, length: int, out: Any = None) -> Any:
        """Reads length raw bytes of any file, from byte offset, into device
        memory and returns them: into out when given (a buffer as for
        load_into, C-contiguous and writable, of at least length bytes; its
        first length bytes are written), else into new memory, returned as a
        numpy uint8 array on the host device (when numpy is importable) or a
        ferry.Array of length bytes ('|u1'). The bytes are on the device when
        it returns, ready on every stream. Raises FerryError
        (ferry.ETRUNCATED when the file ends before offset + length);
        TypeError or ValueError for a bad argument."""
        raw = _lib.path_bytes(path)
        offset = _check.integer("offset", offset, 0, _check.UINT64_MAX)
        length = _check.integer("length", length, 0, _check.UINT64_MAX)
        handle = self._live()
        lib = _lib.get()
        if out is not None:
            target = _Target(out, handle.device, "out")
            if target.nbytes < length:
                raise ValueError("out holds %d bytes, fewer than length=%d"
                                 % (target.nbytes, length))
            target.sync_producer()
            _lib.check(lib.ferry_read_range(handle.ptr, raw, offset, length, target.ptr), path)
            return out
        ptr = ctypes.c_void_p()
        _lib.check(lib.ferry_device_alloc(handle.ptr, length, ctypes.byref(ptr)))
        owner = _MemoryOwner(handle, ptr.value)
        _lib.check(lib.ferry_read_range(handle.ptr, raw, offset, length, ptr), path)
        array = Array(owner, ptr.value, (length,), "|u1", handle.device, handle.device_id,
                      os.fspath(path))
        return _as_result(array)

    def _start(self, path, out, stream, key=None):
        """Queues the load of path (its member key, when given; into out when
        given) and returns its AsyncLoad, nothing waited for yet."""
        raw = _lib.path_bytes(path)
        raw_key = _key_bytes(key)
        stream = _stream_number(stream)
        handle = self._live()
        lib = _lib.get()
        ptr = ctypes.c_void_p()
        if out is None:
            _lib.check(lib.ferry_load_member_async(handle.ptr, raw, raw_key, ctypes.byref(ptr)),
                       path)
            target = None
        else:
            target = _Target(out, handle.device, "out")
            target.check_file(path, key)
            target.sync_producer()
            _lib.check(lib.ferry_load_member_into_async(handle.ptr, raw, raw_key, target.ptr,
                                                        target.nbytes, ctypes.byref(ptr)), path)
        owner = _LoadedOwner(handle, ptr.value, os.fspath(path))
        info = lib.ferry_array_info(ptr).contents
        shape = tuple(info.shape[i] for i in range(info.ndim))
        array = Array(owner, lib.ferry_array_data(ptr), shape, _lib.typestr(info.dtype),
                      handle.device, handle.device_id, os.fspath(path))
        return AsyncLoad(owner, array, out)

    def close(self) -> None:
        """Closes the context: no further loads. The C context is destroyed
        once no array or reader made from it remains. Calling it again does
        nothing."""
        h, self._handle = self._handle, None
        if h is not None:
            h.release()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._handle is None:
            return "ferry.Context(closed)"
        return "ferry.Context(device=%r, io=%r%s)" % (
            self.device, self.io, ", direct=%r" % self.direct if self.direct is not None else "")


class _MemoryOwner(_lib.Handle):
    """Owns device memory from ferry_device_alloc (ferry.read_range's), a
    dependent of its context; frees it when collected."""

    def __init__(self, ctx, ptr):
        super().__init__(ptr, functools.partial(_device_free, ctx), parent=ctx)
        self.ctx = ctx


def _device_free(ctx, ptr):
    _lib.get().ferry_device_free(ctx.ptr, ptr)
    return 0


class AsyncLoad:
    """A load that ferry.load_async (or load_into_async) started: the file has
    been read and its copies to the device are queued, and may still run.

    wait() waits on the host until they are done and returns the result (as
    ferry.load or ferry.load_into would: a numpy array on the host device, a
    ferry.Array on a GPU, or your out buffer). wait_stream(s) makes another
    CUDA stream wait for the copies without a host sync. ``stream`` is the
    DLPack stream number the load was given (that stream already waits for
    the copies; None: none was, or the host device), ``array`` the result:
    with a stream it is usable on that stream at once, without one asking for
    it waits on the host first. ``path`` is the file."""

    def __init__(self, owner, array, out=None):
        self._owner = owner
        self._array = array
        self._out = out
        self.path = owner.path
        self.stream = None

    def _ready(self, stream, host_wait=True):
        """A CUDA load with a stream: that stream waits (no host sync); other
        loads wait on the host, unless host_wait is False (load_async)."""
        if self._array.device == "cuda" and stream is not None:
            self._owner.wait_stream(stream)
            self.stream = stream
            self._array._stream = stream if stream != 0 else 1
        elif host_wait:
            self.wait()

    def wait(self) -> Any:
        """Waits on the host until the copies have completed and returns the
        result, then ready on every stream. Raises FerryError for a copy that
        failed."""
        self._owner.wait_host()
        self._array._stream = None
        return self._result()

    def wait_stream(self, stream: Any) -> None:
        """Makes stream (a torch/cupy stream or a DLPack stream number) wait
        for the copies on the device, without a host sync (on the host device:
        a host wait)."""
        self._owner.wait_stream(_stream_number(stream))

    @property
    def array(self) -> Any:
        """The result: ready on ``stream`` when the load had one, else waited
        for on the host first."""
        if self.stream is None:
            return self.wait()
        return self._result()

    def _result(self):
        return self._out if self._out is not None else _as_result(self._array)

    def __repr__(self) -> str:
        return "ferry.AsyncLoad(path=%r, stream=%r)" % (self.path, self.stream)


def _native_typestr(typestr):
    """numpy's type string with the byte order spelled out ('=f4' is '<f4'
    here, '<u1' is '|u1')."""
    if _np is not None:
        try:
            return _np.dtype(typestr).str
        except TypeError:
            return typestr
    if typestr[:1] == "=":
        typestr = _lib.NATIVE + typestr[1:]
    if typestr[2:] == "1":
        typestr = "|" + typestr[1:]
    return typestr


class _Target:
    """A caller's buffer to load into, from its __cuda_array_interface__ (CUDA)
    or __array_interface__ (host device): its address, size, type and the
    stream its producer names. TypeError for a buffer of the wrong kind,
    ValueError for one read-only, not C-contiguous or masked."""

    def __init__(self, out, device, name):
        self.name = name
        if device == "cuda":
            attr, what = "__cuda_array_interface__", (
                "a CUDA buffer with __cuda_array_interface__ (a torch CUDA tensor, a CuPy array)")
        else:
            attr, what = "__array_interface__", (
                "a writable numpy array (the host device loads into host memory)")
        try:
            iface = getattr(out, attr)
        except AttributeError:
            iface = None
        if not isinstance(iface, dict):
            raise TypeError("%s must be %s, not %s" % (name, what, type(out).__name__))
        data = iface.get("data")
        if not isinstance(data, tuple) or len(data) != 2:
            raise TypeError("%s: %s['data'] is not a (pointer, read-only) pair" % (name, attr))
        if data[1]:
            raise ValueError("%s is read-only" % name)
        if iface.get("mask") is not None:
            raise ValueError("%s is a masked array" % name)
        self.shape = tuple(int(n) for n in iface["shape"])
        self.typestr = _native_typestr(iface["typestr"])
        self.itemsize = int(self.typestr[2:])
        count = 1
        for n in self.shape:
            count *= n
        self.count = count
        self.nbytes = count * self.itemsize
        strides = iface.get("strides")
        if strides is not None and count > 1:
            want, step = [], self.itemsize
            for n in reversed(self.shape):
                want.append(step)
                step *= n
            if any(n > 1 and s != w for n, s, w in zip(self.shape, strides, reversed(want))):
                raise ValueError("%s must be C-contiguous (strides %r, shape %r)"
                                 % (name, tuple(strides), self.shape))
        self.ptr = int(data[0] or 0) + int(iface.get("offset", 0) or 0)
        self.stream = iface.get("stream") if device == "cuda" else None

    def check_file(self, path, key=None):
        """out must be of the file's (or member's) dtype (native byte order)
        and hold as many elements: ValueError naming both otherwise."""
        file = info(path, key=key)
        want = _native_typestr(_lib.NATIVE + file.dtype[1:] if file.byteswapped else file.dtype)
        count = 1
        for n in file.shape:
            count *= n
        if self.typestr != want:
            raise ValueError("%s has dtype %r, but %s holds %r" % (
                self.name, self.typestr, os.fspath(path), want))
        if self.count != count:
            raise ValueError("%s holds %d elements (shape %r), but %s holds %d (shape %r)" % (
                self.name, self.count, self.shape, os.fspath(path), count, file.shape))

    def sync_producer(self):
        """Waits for the stream that out's __cuda_array_interface__ names
        (CAI version 3), through CuPy or torch, whichever is imported."""
        stream = self.stream
        if stream is None:
            return
        cupy = sys.modules.get("cupy")
        torch = sys.modules.get("torch")
        if cupy is not None:
            if stream == 1:
                cupy.cuda.Stream.null.synchronize()
            elif stream == 2:
                cupy.cuda.Stream.ptds.synchronize()
            else:
                cupy.cuda.ExternalStream(stream).synchronize()
        elif torch is not None:
            if stream in (1, 2):
                torch.cuda.synchronize()
            else:
                torch.cuda.ExternalStream(stream).synchronize()
        else:
            raise ValueError("%s names CUDA stream %r in its __cuda_array_interface__; ferry "
                             "can synchronize it only through CuPy or torch, neither imported"
                             % (self.name, stream))


_defaults = {}
_defaults_lock = threading.Lock()


def default_context(device: Optional[str] = None) -> Context:
    """Returns the module's shared Context for device ('cuda', 'host', 'auto',
    DALI's 'gpu' and 'cpu', or None for $FERRY_DEVICE, else auto), creating it
    on first use. Raises TypeError or ValueError for another device,
    FerryError for an invalid $FERRY_DEVICE."""
    return shared_context(device)


def shared_context(device=None, direct=False):
    """default_context(device), or with direct=True a shared context of that
    device reading with O_DIRECT (a Reader's use_o_direct=True)."""
    device = _check.device("device", device, DEVICES)
    env = os.environ.get("FERRY_DEVICE") or None
    key = device or env or "auto"
    with _defaults_lock:
        ctx = _defaults.get((key, direct))
        if ctx is None:
            # From the environment, libferry checks the value and names the variable.
            ctx = _defaults[(key, direct)] = Context(
                device=device or (key if key in DEVICES else None), direct=True if direct else None)
        return ctx


def _torch_stream(device):
    """torch.cuda.current_stream() when torch is already imported and the
    device is cuda, else None."""
    torch = sys.modules.get("torch")
    if device == "cuda" and torch is not None and torch.cuda.is_available():
        return torch.cuda.current_stream()
    return None


def _pick(ctx, device, out=None):
    """The context a module-level call uses: ctx, else the shared one of
    device, else (device None with a buffer out) the device out lives on."""
    _check_ctx(ctx)
    device = _check.device("device", device, DEVICES)
    if ctx is not None:
        return ctx
    if device is None and out is not None and os.environ.get("FERRY_DEVICE") is None:
        device = "cuda" if hasattr(out, "__cuda_array_interface__") else "host"
    return default_context(device)


def load(path: _check.PathLike, device: Optional[str] = None, stream: Any = None,
         ctx: Optional[Context] = None, key: Optional[str] = None) -> Any:
    """Loads the .npy file at path and returns it (see Context.load): on the
    host device a numpy array viewing ferry's memory, on a GPU a ferry.Array
    that torch.as_tensor, torch.from_dlpack, cupy.asarray and
    jax.dlpack.from_dlpack take without a copy.

    device ('cuda', 'host', 'auto', DALI's 'gpu' and 'cpu'; None:
    $FERRY_DEVICE, else auto) picks the module's shared default context for
    that device; ctx, when given, is used instead. stream defaults to
    torch.cuda.current_stream() when torch is imported and the device is
    cuda: the result is then ready on that stream without a host sync (see
    Context.load; with no stream at all the load waits on the host and the
    result is ready on any stream). Raises FerryError (an OSError) naming the
    file; TypeError or ValueError for a bad argument (ValueError("embedded
    null byte") for a path with a NUL byte, as open() raises).

    key names a member of the .npz archive at path, as np.load(path)[key]
    does: ferry.load("data.npz", key="x"). Every member's CRC-32 is checked;
    FerryError names the file and the member (a missing key lists some).
    """
    _lib.path_bytes(path)
    _key_bytes(key)
    _stream_number(stream)
    ctx = _pick(ctx, device)
    if stream is None:
        stream = _torch_stream(ctx.device)
    return ctx.load(path, stream=stream, key=key)


def load_async(path: _check.PathLike, device: Optional[str] = None, stream: Any = None,
               ctx: Optional[Context] = None, key: Optional[str] = None) -> AsyncLoad:
    """Starts loading the .npy file at path and returns an AsyncLoad once it
    is read and its copies are queued (see Context.load_async): wait() waits
    on the host and returns the array; with a stream (not defaulted: pass
    torch.cuda.current_stream() to use torch's) that stream waits on the
    device. device, ctx and key as for load."""
    _lib.path_bytes(path)
    _key_bytes(key)
    _stream_number(stream)
    return _pick(ctx, device).load_async(path, stream=stream, key=key)


def load_into(path: _check.PathLike, out: Any, device: Optional[str] = None, stream: Any = None,
              ctx: Optional[Context] = None, key: Optional[str] = None) -> Any:
    """Loads the .npy file at path into out and returns out (see
    Context.load_into): a torch CUDA tensor, CuPy array or anything with
    __cuda_array_interface__ on a GPU, a writable numpy array on the host
    device, C-contiguous, of the file's dtype and number of elements (checked
    before reading: ValueError or TypeError). The context is ctx, else the
    shared one of device, else (device None) that of out's kind: CUDA for a
    __cuda_array_interface__ buffer, the host device for a numpy array
    ($FERRY_DEVICE, when set, decides instead). stream defaults to
    torch.cuda.current_stream() as for load; key as for load."""
    _lib.path_bytes(path)
    _key_bytes(key)
    _stream_number(stream)
    ctx = _pick(ctx, device, out)
    if stream is None:
        stream = _torch_stream(ctx.device)
    return ctx.load_into(path, out, stream=stream, key=key)


def read_range(path: _check.PathLike, offset: int, length: int, out: Any = None,
               device: Optional[str] = None, ctx: Optional[Context] = None) -> Any:
    """Reads length raw bytes of any file from byte offset into device memory
    (see Context.read_range): returns a numpy uint8 array on the host device,
    a ferry.Array of '|u1' on a GPU, or out when given. device and ctx as for
    load_into."""
    _lib.path_bytes(path)
    return _pick(ctx, device, out).read_range(path, offset, length, out=out)


def _key_bytes(key: Optional[str]) -> Optional[bytes]:
    """An .npz member's key for libferry: None, or str (UTF-8, as zipfile
    names members) or bytes without a NUL byte."""
    if key is None:
        return None
    if isinstance(key, str):
        raw = key.encode("utf-8", "surrogateescape")
    elif isinstance(key, bytes):
        raw = key
    else:
        raise TypeError("key must be str, bytes or None, not %s" % type(key).__name__)
    if b"\0" in raw:
        raise ValueError("embedded null byte in key")
    return raw


class ArrayInfo(NamedTuple):
    """What a .npy header says: dtype (numpy's type string of the file, e.g.
    '>f4' when the file is big-endian), shape (tuple), fortran_order,
    byteswapped (the file's byte order is not the host's), data_offset (where
    the payload starts), nbytes, version ((major, minor))."""
    dtype: str
    shape: Tuple[int, ...]
    fortran_order: bool
    byteswapped: bool
    data_offset: int
    nbytes: int
    version: Tuple[int, int]


def info(path: _check.PathLike, key: Optional[str] = None) -> ArrayInfo:
    """Reads and validates the header of the .npy file at path (no context,
    no device) and returns an ArrayInfo namedtuple. Raises FerryError;
    TypeError for a path that is not str, bytes or os.PathLike,
    ValueError("embedded null byte") for a path with a NUL byte. key names a
    member of an .npz archive (as for load): data_offset is then where its
    payload starts in the archive (stored) or in the inflated member
    (deflated: only its first bytes are inflated to read the header, so its
    payload's CRC-32 is checked when it is loaded, not here; a build without
    zlib inflates and checks it whole)."""
    raw = _lib.path_bytes(path)
    raw_key = _key_bytes(key)
    out = _lib.ArrayInfo()
    _lib.check(_lib.get().ferry_info_member(raw, raw_key, ctypes.byref(out)), path)
    return ArrayInfo(_lib.typestr(out.dtype, out.byteswapped),
                     tuple(out.shape[i] for i in range(out.ndim)), bool(out.fortran_order),
                     bool(out.byteswapped), out.data_offset, out.nbytes,
                     (out.version_major, out.version_minor))
