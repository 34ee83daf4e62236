"""Finding libferry.so, its ctypes declarations, and FerryError.

Nothing here is public except FerryError and the error-code constants, which
the package re-exports.
"""
import ctypes
import ctypes.util
import errno as _errno
import glob
import os
import sys
import threading

# ferry's own error codes (include/ferry.h); the C functions return them negated.
EFORMAT = 1000
EUNSUPPORTED = 1001
EDEVICE = 1002
ENODEVICE = 1003
ELEASED = 1004
ECONFIG = 1005
ETRUNCATED = 1006
EMISMATCH = 1007
EBOUNDS = 1008
ECHANGED = 1009
EIO_BACKEND = 1010
EEND = 1011

MAX_DIMS = 32

# enum ferry_dtype, in order, as numpy kind character and item size.
DTYPES = [None, ("b", 1), ("i", 1), ("i", 2), ("i", 4), ("i", 8), ("u", 1), ("u", 2),
          ("u", 4), ("u", 8), ("f", 2), ("f", 4), ("f", 8), ("c", 8), ("c", 16)]
NATIVE = "<" if sys.byteorder == "little" else ">"
SWAPPED = ">" if NATIVE == "<" else "<"


def typestr(dtype, byteswapped=False):
    """Returns numpy's type string ('<f4', '|u1') of a ferry dtype code."""
    if not 0 < dtype < len(DTYPES):
        raise ValueError("unknown ferry dtype code %d" % dtype)
    kind, size = DTYPES[dtype]
    component = size // 2 if kind == "c" else size
    order = "|" if component == 1 else (SWAPPED if byteswapped else NATIVE)
    return "%s%s%d" % (order, kind, size)


# typestr(code) of every dtype code, indexed by it: what a reader's batch
# (always native byte order) takes without a call.
NATIVE_TYPESTRS = (None,) + tuple(typestr(code) for code in range(1, len(DTYPES)))


class Handle:
    """Owns one C object that others depend on (a context: its readers and
    arrays; a reader: its batches, and the calls in progress on it). Its C
    close runs once, when it is released (closed, or collected) and no
    dependent is left. Counting dependents, rather than relying on the
    references between the Python objects, keeps the order right even when
    the garbage collector finalizes a whole cycle, which it does in no
    particular order. close_c(ptr) is the C close; parent is the Handle this
    one depends on, if any. Threads may share handles: dependents, released
    and ptr change only under the handle's lock."""

    def __init__(self, ptr, close_c, parent=None):
        self.ptr = ptr
        self._close_c = close_c
        self.parent = parent
        self.dependents = 0
        self.released = False
        # Reentrant: a finalizer that the collector runs on this thread while
        # it holds the lock may drop one of this handle's dependents.
        self._lock = threading.RLock()
        if parent is not None:
            with parent._lock:
                parent.dependents += 1

    def hold(self):
        """Counts a dependent (a call in progress on this handle, or what it
        hands that count to), so that a release() meanwhile (another thread
        closing) defers the C close until drop_dependent(). Returns False,
        holding nothing, when the handle is already released."""
        with self._lock:
            if self.released or not self.ptr:
                return False
            self.dependents += 1
            return True

    def drop_dependent(self):
        """One dependent is gone; closes when it was the last after release().
        Returns the C close's return code (0 when nothing was closed)."""
        with self._lock:
            self.dependents -= 1
            if self.dependents or not self.released:
                return 0
        return self._close_if_done()

    def release(self):
        """No new dependents: closes now, or when the last one goes. Returns
        the C close's return code (0 when it is deferred or already ran)."""
        with self._lock:
            self.released = True
        return self._close_if_done()

    def _close_if_done(self):
        with self._lock:
            if not (self.released and self.dependents == 0 and self.ptr):
                return 0
            ptr, self.ptr = self.ptr, None
        rc = self._close_c(ptr)
        if self.parent is not None:
            self.parent.drop_dependent()
        return rc or 0

    def __del__(self):
        self.release()


class FerryError(OSError):
    """An error reported by libferry.

    A subclass of OSError: ``errno`` is the positive errno for system errors
    (ENOENT, EACCES, ...) or one of ferry's codes (``ferry.EFORMAT`` = 1000 and
    up); ``strerror`` names the code; ``filename`` is the file involved when
    known; ``message`` is libferry's detailed message. Errors with a common
    errno are also instances of the matching builtin (FileNotFoundError,
    PermissionError, IsADirectoryError, NotADirectoryError).
    """

    def __init__(self, errno, strerror, filename=None, message=""):
        super().__init__(errno, strerror, filename)
        self.message = message

    def __str__(self):
        text = super().__str__()
        return "%s (%s)" % (text, self.message) if self.message else text


_ERRNO_BASES = {_errno.ENOENT: FileNotFoundError, _errno.EACCES: PermissionError,
                _errno.EPERM: PermissionError, _errno.EISDIR: IsADirectoryError,
                _errno.ENOTDIR: NotADirectoryError}
_ERRNO_CLASSES = {code: type(base.__name__.replace("Error", "") + "FerryError",
                             (FerryError, base), {"__doc__": "FerryError that is a %s." % base.__name__,
                                                  "__module__": "ferry"})
                  for code, base in _ERRNO_BASES.items()}


class RaggedBatchError(FerryError, ValueError):
    """A batch whose samples differ in shape was used as one array (errno
    ferry.EMISMATCH). Both a FerryError and a ValueError; the message names
    two of the files that differ. Its samples are still available one by one."""


RaggedBatchError.__module__ = "ferry"


def make_error(rc, filename=None):
    """Builds the FerryError for a negative return code rc of the calling thread's
    last ferry call (it reads ferry_last_error, so call it right away)."""
    lib = get()
    code = -rc
    strerror = lib.ferry_strerror(rc).decode("utf-8", "replace")
    message = lib.ferry_last_error().decode("utf-8", "replace")
    cls = _ERRNO_CLASSES.get(code, FerryError)
    return cls(code, strerror, filename, message)


def check(rc, filename=None):
    """Returns rc when it is not negative, else raises its FerryError."""
    if rc < 0:
        raise make_error(rc, filename)
    return rc


# ---- structures of include/ferry.h ----

c_int64_p = ctypes.POINTER(ctypes.c_int64)
c_double_p = ctypes.POINTER(ctypes.c_double)
c_int_p = ctypes.POINTER(ctypes.c_int)


class CtxOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_char_p), ("gpu", ctypes.c_int), ("io", ctypes.c_char_p),
                ("chunk_size", ctypes.c_size_t), ("max_buffers", ctypes.c_uint),
                ("threads", ctypes.c_uint), ("direct", ctypes.c_int), ("lanes", ctypes.c_uint)]


class ArrayInfo(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("itemsize", ctypes.c_size_t), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("count", ctypes.c_uint64),
                ("nbytes", ctypes.c_uint64), ("fortran_order", ctypes.c_int),
                ("byteswapped", ctypes.c_int), ("version_major", ctypes.c_int),
                ("version_minor", ctypes.c_int), ("data_offset", ctypes.c_uint64)]


class ReaderConfig(ctypes.Structure):
    _fields_ = [("root", ctypes.c_char_p), ("filter", ctypes.c_char_p),
                ("file_list", ctypes.c_char_p), ("files", ctypes.POINTER(ctypes.c_char_p)),
                ("nfiles", ctypes.c_size_t),
                ("batch_size", ctypes.c_uint), ("epochs", ctypes.c_uint64),
                ("shard_id", ctypes.c_int), ("num_shards", ctypes.c_int),
                ("stick_to_shard", ctypes.c_int), ("pad_last_batch", ctypes.c_int),
                ("random_shuffle", ctypes.c_int), ("seed", ctypes.c_uint64),
                ("shuffle_dataset", ctypes.c_int),
                ("threads", ctypes.c_uint), ("prefetch_depth", ctypes.c_uint),
                ("no_header_cache", ctypes.c_int), ("on_error", ctypes.c_int),
                ("roi_nvals", ctypes.c_int),
                ("roi_start", c_int64_p), ("roi_end", c_int64_p), ("roi_shape", c_int64_p),
                ("roi_start_rel", c_double_p), ("roi_end_rel", c_double_p),
                ("roi_shape_rel", c_double_p), ("roi_axes", c_int_p),
                ("out_of_bounds_policy", ctypes.c_int), ("fill_value", ctypes.c_double),
                ("resume", ctypes.c_void_p), ("samples", ctypes.c_int),
                ("npz_key", ctypes.c_char_p)]


class Sample(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("nbytes", ctypes.c_uint64),
                ("path", ctypes.c_char_p), ("is_padding", ctypes.c_int), ("row", ctypes.c_int64)]


class EpochInfo(ctypes.Structure):
    _fields_ = [("epoch", ctypes.c_uint64), ("samples", ctypes.c_uint64),
                ("real_samples", ctypes.c_uint64), ("batches", ctypes.c_uint64),
                ("shard_id", ctypes.c_int)]


class ReaderStats(ctypes.Structure):
    _fields_ = [("samples", ctypes.c_uint64), ("bytes_delivered", ctypes.c_uint64),
                ("bytes_read", ctypes.c_uint64), ("files_skipped", ctypes.c_uint64),
                ("batches", ctypes.c_uint64), ("files_buffered", ctypes.c_uint64),
                ("files_direct", ctypes.c_uint64), ("files_mapped", ctypes.c_uint64)]


class ReaderState(ctypes.Structure):
    _fields_ = [("epoch", ctypes.c_uint64), ("index", ctypes.c_uint64),
                ("fingerprint", ctypes.c_uint64)]


class BatchShape(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * (MAX_DIMS + 1)), ("nbytes", ctypes.c_uint64)]


class BatchInfo(ctypes.Structure):
    _fields_ = [("epoch", ctypes.c_uint64), ("index", ctypes.c_uint64), ("data", ctypes.c_void_p),
                ("size", ctypes.c_uint), ("stacked", ctypes.c_int), ("shape", BatchShape)]


_P = ctypes.c_void_p
_PROTOTYPES = {
    "ferry_version": (ctypes.c_char_p, []),
    "ferry_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "ferry_last_error": (ctypes.c_char_p, []),
    "ferry_ctx_create": (ctypes.c_int, [ctypes.POINTER(_P), ctypes.POINTER(CtxOptions)]),
    "ferry_ctx_destroy": (ctypes.c_int, [_P]),
    "ferry_ctx_describe": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_size_t]),
    "ferry_ctx_device_kind": (ctypes.c_char_p, [_P]),
    "ferry_ctx_io_name": (ctypes.c_char_p, [_P]),
    "ferry_device_alloc": (ctypes.c_int, [_P, ctypes.c_size_t, ctypes.POINTER(_P)]),
    "ferry_device_free": (None, [_P, _P]),
    "ferry_copy_to_host": (ctypes.c_int, [_P, _P, _P, ctypes.c_size_t]),
    "ferry_copy_to_device": (ctypes.c_int, [_P, _P, _P, ctypes.c_size_t]),
    "ferry_info": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ArrayInfo)]),
    "ferry_load": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(_P)]),
    "ferry_array_data": (_P, [_P]),
    "ferry_array_info": (ctypes.POINTER(ArrayInfo), [_P]),
    "ferry_array_free": (None, [_P]),
    "ferry_load_async": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(_P)]),
    "ferry_array_wait": (ctypes.c_int, [_P]),
    "ferry_array_stream_wait": (ctypes.c_int, [_P, _P]),
    "ferry_load_into": (ctypes.c_int, [_P, ctypes.c_char_p, _P, ctypes.c_size_t,
                                       ctypes.POINTER(ArrayInfo)]),
    "ferry_load_into_async": (ctypes.c_int, [_P, ctypes.c_char_p, _P, ctypes.c_size_t,
                                             ctypes.POINTER(_P)]),
    "ferry_read_range": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64,
                                        _P]),
    # .npz archive members (key NULL: the plain call).
    "ferry_info_member": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.POINTER(ArrayInfo)]),
    "ferry_load_member_async": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p,
                                               ctypes.POINTER(_P)]),
    "ferry_load_member_into_async": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p, _P,
                                                    ctypes.c_size_t, ctypes.POINTER(_P)]),
    # The dataset reader; optional until libferry provides it.
    "ferry_reader_open": (ctypes.c_int, [_P, ctypes.POINTER(ReaderConfig), ctypes.POINTER(_P)]),
    "ferry_reader_next": (ctypes.c_int, [_P, ctypes.POINTER(_P)]),
    "ferry_reader_next_timeout": (ctypes.c_int, [_P, ctypes.POINTER(_P), ctypes.c_int]),
    "ferry_batch_size": (ctypes.c_uint, [_P]),
    "ferry_batch_sample": (ctypes.c_int, [_P, ctypes.c_uint, ctypes.POINTER(Sample)]),
    "ferry_batch_shape": (ctypes.c_int, [_P, ctypes.POINTER(BatchShape)]),
    "ferry_batch_data": (_P, [_P]),
    "ferry_batch_position": (ctypes.c_int, [_P, ctypes.POINTER(ctypes.c_uint64),
                                            ctypes.POINTER(ctypes.c_uint64)]),
    "ferry_batch_describe": (ctypes.c_int, [_P, ctypes.POINTER(BatchInfo)]),
    "ferry_batch_wait": (ctypes.c_int, [_P]),
    "ferry_batch_stream_wait": (ctypes.c_int, [_P, _P]),
    "ferry_batch_release": (None, [_P]),
    "ferry_reader_epoch_info": (ctypes.c_int, [_P, ctypes.POINTER(EpochInfo)]),
    "ferry_reader_stats": (ctypes.c_int, [_P, ctypes.POINTER(ReaderStats), ctypes.c_size_t]),
    "ferry_reader_save_state": (ctypes.c_int, [_P, ctypes.POINTER(ReaderState)]),
    "ferry_reader_close": (ctypes.c_int, [_P]),
}
READER_FUNCTIONS = [name for name in _PROTOTYPES if "reader" in name or "batch" in name]


def candidates():
    """Returns the paths tried for libferry, in order: $FERRY_LIBRARY, a copy
    beside this package (ferry/libferry.so*), the checkout's build tree
    (../../build/libferry.so), then the system's search path."""
    here = os.path.dirname(os.path.abspath(__file__))
    paths = []
    if os.environ.get("FERRY_LIBRARY"):
        paths.append(os.environ["FERRY_LIBRARY"])
    paths += sorted(glob.glob(os.path.join(here, "libferry.so*")), key=len)
    paths.append(os.path.normpath(os.path.join(here, "..", "..", "build", "libferry.so")))
    system = ctypes.util.find_library("ferry")
    if system:
        paths.append(system)
    return paths


_lib = None


def get():
    """Returns the loaded libferry (a ctypes.CDLL with prototypes set), loading
    it on first use. Raises OSError naming every path tried when none loads."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (not found)" % path)
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (restype, argtypes) in _PROTOTYPES.items():
            func = getattr(lib, name, None)
            if func is not None:
                func.restype, func.argtypes = restype, argtypes
            elif name not in READER_FUNCTIONS:
                raise OSError("%s lacks %s: not a matching libferry" % (path, name))
        lib.path = path
        _lib = lib
        return lib
    raise OSError("cannot load libferry: build it with `make` in the ferry checkout, or set "
                  "FERRY_LIBRARY to its path; tried: " + "; ".join(tried or ["nothing"]))


def missing_reader_functions():
    """Returns the names of the reader functions the loaded libferry lacks."""
    lib = get()
    return [name for name in READER_FUNCTIONS if not hasattr(lib, name)]


def path_bytes(path, name="path"):
    """Returns path (str, bytes or os.PathLike) as bytes for a C call: TypeError
    for another type, ValueError("embedded null byte") for a path C would cut
    short at a NUL byte."""
    from . import _check
    return _check.path(name, path)
