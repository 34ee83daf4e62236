"""ferry.Context, ferry.load and ferry.info."""
import collections
import ctypes
import os
import sys
import threading

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
    device ('auto', 'cuda' or 'host'; $FERRY_DEVICE), gpu (the GPU ordinal,
    an int >= 0; None or -1: $FERRY_GPU, then $LOCAL_RANK, then 0), io
    ('auto', 'posix', 'uring' or 'cufile'; $FERRY_IO), threads (IO threads,
    1 to 1024; $FERRY_THREADS), chunk_size (staging chunk in bytes, a power of
    two from 4 KiB to 16 MiB; $FERRY_CHUNK_SIZE), max_buffers (staging buffers
    at most, 1 to 4096; $FERRY_MAX_BUFFERS), direct (a bool: O_DIRECT reads;
    $FERRY_ODIRECT).

    Arguments are checked before libferry sees them: TypeError for a wrong
    type (a bool where a number is meant included; numpy integers are
    accepted), ValueError for a value out of range, each naming the argument.
    Raises FerryError when the device or backend is unavailable or the
    environment holds an invalid value. Use it as a context manager, or call
    close(); arrays and readers made from it stay valid after close(), which
    frees the context only once the last of them is gone.
    """

    def __init__(self, device=None, io=None, threads=None, chunk_size=None, direct=None,
                 gpu=None, max_buffers=None):
        device = _check.choice("device", device, DEVICES, none_ok=True)
        io = _check.choice("io", io, IO_BACKENDS, none_ok=True)
        threads = _check.optional_integer("threads", threads, 1, _check.THREADS_MAX,
                                          "$FERRY_THREADS, else the default")
        chunk_size = _check.chunk_size("chunk_size", chunk_size)
        direct = None if direct is None else _check.flag("direct", direct)
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

    def _live(self):
        if self._handle is None:
            raise ValueError("ferry.Context is closed")
        return self._handle

    @property
    def device(self):
        """The device this context loads onto: 'cuda' or 'host'."""
        return self._live().device

    @property
    def device_id(self):
        """The GPU ordinal of a CUDA context (as libferry resolves it); 0 on the host."""
        return self._live().device_id

    @property
    def io(self):
        """The storage IO backend's name: 'posix', 'uring' or 'cufile'."""
        return _lib.get().ferry_ctx_io_name(self._live().ptr).decode()

    def describe(self):
        """Returns libferry's multi-line report on the device, IO backend,
        chunk size and threads."""
        lib = _lib.get()
        ptr = self._live().ptr
        n = lib.ferry_ctx_describe(ptr, None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        lib.ferry_ctx_describe(ptr, buf, n + 1)
        return buf.value.decode("utf-8", "replace")

    def load(self, path, stream=None):
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
        """
        raw = _lib.path_bytes(path)
        stream = _stream_number(stream)
        handle = self._live()
        lib = _lib.get()
        ptr = ctypes.c_void_p()
        _lib.check(lib.ferry_load_async(handle.ptr, raw, ctypes.byref(ptr)), path)
        owner = _LoadedOwner(handle, ptr.value, os.fspath(path))
        cai_stream = owner.ready_on(handle.device, stream)
        info = lib.ferry_array_info(ptr).contents
        shape = tuple(info.shape[i] for i in range(info.ndim))
        array = Array(owner, lib.ferry_array_data(ptr), shape, _lib.typestr(info.dtype),
                      handle.device, handle.device_id, os.fspath(path), stream=cai_stream)
        return _as_result(array)

    def close(self):
        """Closes the context: no further loads. The C context is destroyed
        once no array or reader made from it remains. Calling it again does
        nothing."""
        h, self._handle = self._handle, None
        if h is not None:
            h.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self._handle is None:
            return "ferry.Context(closed)"
        return "ferry.Context(device=%r, io=%r)" % (self.device, self.io)


_defaults = {}
_defaults_lock = threading.Lock()


def default_context(device=None):
    """Returns the module's shared Context for device ('cuda', 'host', 'auto'
    or None for $FERRY_DEVICE, else auto), creating it on first use. Raises
    TypeError or ValueError for another device, FerryError for an invalid
    $FERRY_DEVICE."""
    device = _check.choice("device", device, DEVICES, none_ok=True)
    env = os.environ.get("FERRY_DEVICE") or None
    key = device or env or "auto"
    with _defaults_lock:
        ctx = _defaults.get(key)
        if ctx is None:
            # From the environment, libferry checks the value and names the variable.
            ctx = _defaults[key] = Context(device=device or (key if key in DEVICES else None))
        return ctx


def _torch_stream(device):
    """torch.cuda.current_stream() when torch is already imported and the
    device is cuda, else None."""
    torch = sys.modules.get("torch")
    if device == "cuda" and torch is not None and torch.cuda.is_available():
        return torch.cuda.current_stream()
    return None


def load(path, device=None, stream=None, ctx=None):
    """Loads the .npy file at path and returns it (see Context.load): on the
    host device a numpy array viewing ferry's memory, on a GPU a ferry.Array
    that torch.as_tensor, torch.from_dlpack and cupy.asarray take without a
    copy.

    device ('cuda', 'host', 'auto'; None: $FERRY_DEVICE, else auto) picks the
    module's shared default context for that device; ctx, when given, is used
    instead. stream defaults to torch.cuda.current_stream() when torch is
    imported and the device is cuda: the result is then ready on that stream
    without a host sync (see Context.load; with no stream at all the load
    waits on the host and the result is ready on any stream). Raises
    FerryError (an OSError) naming the file; TypeError or ValueError for a
    bad argument (ValueError("embedded null byte") for a path with a NUL
    byte, as open() raises).
    """
    _lib.path_bytes(path)
    _check_ctx(ctx)
    _check.choice("device", device, DEVICES, none_ok=True)
    _stream_number(stream)
    ctx = ctx or default_context(device)
    if stream is None:
        stream = _torch_stream(ctx.device)
    return ctx.load(path, stream=stream)


ArrayInfo = collections.namedtuple(
    "ArrayInfo", "dtype shape fortran_order byteswapped data_offset nbytes version")
ArrayInfo.__doc__ = """What a .npy header says: dtype (numpy's type string of the
file, e.g. '>f4' when the file is big-endian), shape (tuple), fortran_order,
byteswapped (the file's byte order is not the host's), data_offset (where the
payload starts), nbytes, version ((major, minor))."""


def info(path):
    """Reads and validates the header of the .npy file at path (no context,
    no device) and returns an ArrayInfo namedtuple. Raises FerryError;
    TypeError for a path that is not str, bytes or os.PathLike,
    ValueError("embedded null byte") for a path with a NUL byte."""
    raw = _lib.path_bytes(path)
    out = _lib.ArrayInfo()
    _lib.check(_lib.get().ferry_info(raw, ctypes.byref(out)), path)
    return ArrayInfo(_lib.typestr(out.dtype, out.byteswapped),
                     tuple(out.shape[i] for i in range(out.ndim)), bool(out.fortran_order),
                     bool(out.byteswapped), out.data_offset, out.nbytes,
                     (out.version_major, out.version_minor))
