"""ferry.Array: memory ferry allocated, shared with numpy, torch, cupy and jax without copies."""
from __future__ import annotations

import ctypes
from typing import Any, Callable, Dict, Optional, Tuple, Union

from . import _lib

try:
    import numpy as _np
except ImportError:  # numpy is optional
    _np = None

# DLPack (dlpack.h, version 0.8 ABI): device types and type codes.
KDLCPU = 1
KDLCUDA = 2
_DL_CODES = {"b": 6, "i": 0, "u": 1, "f": 2, "c": 5}  # kDLBool, kDLInt, kDLUInt, kDLFloat, kDLComplex


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DLDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", _DLDeleter)]

# What each exported DLManagedTensor keeps alive, by its address, until its deleter runs.
_exported = {}


@_DLDeleter
def _dl_deleter(managed):
    _exported.pop(ctypes.addressof(managed.contents), None)


_CAPSULE_NAME = b"dltensor"
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CapsuleDestructor]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


@_CapsuleDestructor
def _capsule_destructor(capsule):
    # A consumer renames the capsule to "used_dltensor" and calls the deleter
    # itself; a capsule still named "dltensor" was never consumed.
    if _capsule_is_valid(capsule, _CAPSULE_NAME):
        _dl_deleter(ctypes.cast(_capsule_pointer(capsule, _CAPSULE_NAME),
                                ctypes.POINTER(_DLManagedTensor)))


class Array:
    """An n-dimensional array in memory ferry owns: device memory of a CUDA
    context, or host memory of the host device. C order, native byte order.

    It exposes ``__cuda_array_interface__`` (CUDA arrays) and ``__dlpack__`` /
    ``__dlpack_device__`` (both devices), so ``torch.as_tensor``,
    ``torch.from_dlpack`` and ``cupy.asarray`` share its memory without a copy;
    on the host device ``numpy()`` returns a view. The memory stays valid while
    this object or anything made from it (a view, a tensor, a DLPack capsule)
    is alive.

    Attributes: ``shape`` (tuple), ``typestr`` (numpy's '<f4' form), ``dtype``
    (a numpy dtype when numpy is importable, else the type string), ``ptr``
    (the data address, an int), ``nbytes``, ``device`` ('cuda' or 'host'),
    ``device_id`` (the GPU ordinal; 0 on the host), ``path`` (the source
    file, or None).
    """

    def __init__(self, owner: Any, ptr: Optional[int], shape: Tuple[int, ...], typestr: str,
                 device: str, device_id: int = 0,
                 path: Union[str, None, Callable[[], Optional[str]]] = None,
                 stream: Optional[int] = None) -> None:
        """Wraps memory at ptr that owner keeps alive. Not for direct use:
        ferry.load and ferry.Reader build arrays. path is the source file, or a
        callable that returns it when first asked for (a reader's samples).
        stream is the CUDA stream the data is ready on (None: ready for every
        stream)."""
        self._owner = owner
        self.ptr = int(ptr or 0)
        self.shape = tuple(int(n) for n in shape)
        self.typestr = typestr
        self.device = device
        self.device_id = device_id
        self._path = path
        self._stream = stream
        count = 1
        for n in self.shape:
            count *= n
        self.itemsize = int(typestr[2:])
        self.nbytes = count * self.itemsize

    @property
    def path(self) -> Optional[str]:
        """The file the data came from, or None."""
        if callable(self._path):
            self._path = self._path()
        return self._path

    @property
    def dtype(self) -> Any:
        """The element type: a numpy dtype when numpy is importable, else the type string."""
        return _np.dtype(self.typestr) if _np is not None else self.typestr

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    def __len__(self) -> int:
        """The length of the first axis (TypeError for a 0-d array)."""
        if not self.shape:
            raise TypeError("len() of a 0-d ferry.Array")
        return self.shape[0]

    def __repr__(self) -> str:
        path = self._path if not callable(self._path) else None  # repr reads no file names
        return "ferry.Array(shape=%r, dtype=%r, device=%r%s)" % (
            self.shape, self.typestr, self.device, ", path=%r" % path if path else "")

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        """The CUDA Array Interface, version 3 (CUDA arrays only; AttributeError
        on the host device). ``stream`` is None when the data is ready for every
        stream, else the stream (an int) whose work produces it."""
        if self.device != "cuda":
            raise AttributeError("__cuda_array_interface__: this array is in host memory")
        return {"shape": self.shape, "typestr": self.typestr, "data": (self.ptr, False),
                "strides": None, "version": 3, "stream": self._stream}

    @property
    def __array_interface__(self) -> Dict[str, Any]:
        """numpy's array interface, version 3 (host arrays only; AttributeError
        for CUDA arrays). The memory stays valid only while this Array lives:
        prefer numpy(), whose view holds it."""
        if self.device == "cuda":
            raise AttributeError("__array_interface__: this array is in GPU memory")
        return {"shape": self.shape, "typestr": self.typestr, "data": (self.ptr, False),
                "strides": None, "version": 3}

    def __dlpack_device__(self) -> Tuple[int, int]:
        """Returns (device type, device id): (2, ordinal) for kDLCUDA, (1, 0) for kDLCPU."""
        return (KDLCUDA, self.device_id) if self.device == "cuda" else (KDLCPU, 0)

    def __dlpack__(self, stream: Optional[int] = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """Returns a PyCapsule named "dltensor" over a DLManagedTensor that
        shares this array's memory and keeps it alive until the consumer calls
        its deleter (or the unconsumed capsule is collected).

        stream is the consumer's CUDA stream (DLPack: None or 1 the legacy
        default stream, 2 the per-thread one, another int a stream handle, -1
        no synchronization). That stream is made to wait for the array's copies
        (on the device, no host sync). Only the legacy (unversioned) capsule is
        produced, whatever max_version asks for; copy=True and a dl_device other
        than the array's raise BufferError.
        """
        if copy:
            raise BufferError("ferry.Array.__dlpack__: copy=True is not supported")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("ferry.Array.__dlpack__: cannot export to device %r" % (dl_device,))
        if self.device == "cuda" and stream != -1:
            self._wait_stream(stream)
        kind, bits = self.typestr[1], self.itemsize * 8
        managed = _DLManagedTensor()
        shape = (ctypes.c_int64 * max(1, self.ndim))(*self.shape)
        t = managed.dl_tensor
        t.data = self.ptr
        t.device = _DLDevice(*self.__dlpack_device__())
        t.ndim = self.ndim
        t.dtype = _DLDataType(_DL_CODES[kind], bits, 1)
        t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = None
        t.byte_offset = 0
        managed.deleter = _dl_deleter
        _exported[ctypes.addressof(managed)] = (managed, shape, self)
        return _capsule_new(ctypes.addressof(managed), _CAPSULE_NAME, _capsule_destructor)

    def _wait_stream(self, stream):
        """Makes the DLPack stream number `stream` wait for the data (a no-op
        for an owner without copies of its own)."""
        wait = getattr(self._owner, "wait_stream", None)
        if wait is not None:
            wait(stream)

    def _wait_host(self):
        """Waits on the host until the data is complete."""
        wait = getattr(self._owner, "wait_host", None)
        if wait is not None:
            wait()

    def numpy(self) -> Any:
        """Returns a numpy array of the data. On the host device it is a view of
        ferry's memory (its ``base`` chain holds this Array, so the memory
        outlives the Array object); for a CUDA array it is a copy to the host
        (waiting for the data first). Requires numpy."""
        if _np is None:
            raise ImportError("ferry.Array.numpy() needs numpy")
        if self.device == "cuda":
            self._wait_host()
            out = _np.empty(self.shape, self.typestr)
            if self.nbytes:
                _lib.check(_lib.get().ferry_copy_to_host(self._owner.ctx.ptr, out.ctypes.data,
                                                         self.ptr, self.nbytes), self.path)
            return out
        if self.nbytes == 0:
            return _np.empty(self.shape, self.typestr)
        buf = (ctypes.c_char * self.nbytes).from_address(self.ptr)
        buf._ferry_array = self  # the view's base is buf; buf holds this Array
        return _np.frombuffer(buf, self.typestr).reshape(self.shape)
