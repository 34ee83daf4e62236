"""ferry.Batch: one batch of a ferry.Reader, as one array and as its samples."""
from __future__ import annotations

import collections.abc
import ctypes
import functools
import operator
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from . import _lib
from ._array import Array
from ._context import _as_result, _CopiesOwner

try:
    import numpy as _np
except ImportError:  # numpy is optional
    _np = None


class _BatchOwner(_CopiesOwner):
    """Owns one ferry_batch for its users: the Batch, and every array, view,
    tensor and DLPack capsule made from it reference this object (a numpy
    view through its base, a capsule through the Array it exports, a
    __cuda_array_interface__ consumer through the Batch it keeps), so
    Python's reference count is the batch's count of users, and no lock or
    count of its own is needed. When the last user is gone it is collected:
    its finalizer hands the batch back to the reader (ferry_batch_release)
    and then drops the count on the reader's handle that the call which
    took the batch passed to it, which keeps the C reader open until then.
    Made only by Reader.next_batch."""

    __slots__ = ("ptr", "parent", "described", "__weakref__")
    path = None  # a batch's wait error names no single file

    def __init__(self, parent, ptr):
        self.parent = parent    # the _ReaderHandle; one of its dependents is this batch's
        self.ptr = ptr
        self.described = None

    def __del__(self):
        self.parent.batch_gone(self.ptr)

    @property
    def ctx(self):
        return self.parent.ctx

    @property
    def _stream_wait(self):
        return _lib.get().ferry_batch_stream_wait

    @property
    def _host_wait(self):
        return _lib.get().ferry_batch_wait

    def describe(self):
        """(paths, is_padding, rows) of the batch's samples, asked of libferry
        once (one call a sample), when first wanted."""
        got = self.described
        if got is None:
            lib = _lib.get()
            sample = _lib.Sample()
            paths, padding, rows = [], [], []
            for i in range(lib.ferry_batch_size(self.ptr)):
                _lib.check(lib.ferry_batch_sample(self.ptr, i, ctypes.byref(sample)))
                paths.append(os.fsdecode(sample.path) if sample.path else None)
                padding.append(bool(sample.is_padding))
                rows.append(sample.row if sample.row >= 0 else None)
            got = self.described = (paths, padding, rows)
        return got


def _path_of(owner, i):
    return owner.describe()[0][i]


class Batch(collections.abc.Sequence):
    """One batch of a ferry.Reader.

    When its samples share a shape (as after a ROI of fixed size; the samples
    of a batch always share a dtype) the batch is one dense C-order array [B, ...] in device
    memory, B counting padding: ``__cuda_array_interface__`` and
    ``__dlpack__`` / ``__dlpack_device__`` on a GPU, ``__array_interface__``
    and ``numpy()`` (a view) on the host device. So
    ``torch.as_tensor(batch, device="cuda")``, ``torch.from_dlpack(batch)``,
    ``cupy.asarray(batch)``, ``jax.dlpack.from_dlpack(batch)`` and
    ``np.asarray(batch)`` are the whole batch without a copy. ``stackable``
    says whether it is; ``shape``, ``dtype``, ``typestr``, ``ptr``,
    ``nbytes`` describe that array. A batch whose samples differ in shape (a
    ragged batch) raises ferry.RaggedBatchError (a FerryError and a
    ValueError naming two of the files) for all of these.

    It is also a sequence of its samples: ``len(batch)``, ``batch[i]``,
    iteration, each sample a numpy view (host device) or a ferry.Array (GPU)
    inside the batch's memory, made only when asked for. ``epoch``,
    ``index`` (its position in its epoch), ``paths`` (each sample's file)
    and ``is_padding`` (per sample: a pad_last_batch repeat, whose data is a
    copy of the last real sample) are read from libferry only when asked.

    The batch's memory goes back to the reader once the Batch and every
    array, view, tensor or DLPack capsule made from it are gone.
    """

    # Slots make a batch quicker to build; __dict__ (made only when used) still
    # lets a user attach attributes of their own, as before.
    __slots__ = ("_owner", "device", "epoch", "index", "_size", "_ptr", "_shape", "_typestr",
                 "_ragged", "_last", "_stream", "_whole", "_samples", "_np", "__weakref__",
                 "__dict__")

    def __init__(self, owner, device, epoch, index, size, ptr, shape, typestr, ragged, last,
                 stream):
        """Not for direct use: ferry.Reader makes batches. shape and typestr
        are the stacked array's (shape None when ragged: ragged is then the
        FerryError libferry gave for stacking); stream is the CUDA stream
        number the batch is ready on (None: every stream); last says it is
        the last batch of its epoch."""
        self._owner = owner
        self.device = device
        self.epoch = epoch
        self.index = index
        self._size = size
        self._ptr = ptr
        self._shape = shape
        self._typestr = typestr
        self._ragged = ragged
        self._last = last
        self._stream = stream
        self._whole = None       # the stacked batch as a ferry.Array, once asked for
        self._samples = None
        self._np = None

    # ---- as a sequence of samples ----

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i: Union[int, slice]) -> Any:
        if isinstance(i, slice):
            return [self._sample(k) for k in range(*i.indices(self._size))]
        k = operator.index(i)
        if k < 0:
            k += self._size
        if not 0 <= k < self._size:
            raise IndexError("batch index %d out of range (%d samples)" % (i, self._size))
        return self._sample(k)

    def __iter__(self) -> Iterator[Any]:
        for k in range(self._size):
            yield self._sample(k)

    def _sample(self, k):
        samples = self._samples
        if samples is None:
            if self._shape is None:
                self._ragged_samples()
                return self._samples[k]
            samples = self._samples = [None] * self._size
        x = samples[k]
        if x is None:
            x = samples[k] = self._view(k)
        return x

    def _view(self, k):
        """Sample k of a stacked batch: a view into it, no call into libferry."""
        if self.device != "cuda" and _np is not None:
            return self.numpy()[k]
        whole = self._array()
        step = whole.nbytes // self._size
        return Array(self._owner, self._ptr + k * step, self._shape[1:], self._typestr,
                     self.device, whole.device_id, functools.partial(_path_of, self._owner, k),
                     stream=self._stream)

    def _ragged_samples(self):
        """A ragged batch's samples, each described by libferry."""
        lib = _lib.get()
        owner = self._owner
        device_id = owner.ctx.device_id
        sample = _lib.Sample()
        out, paths, padding, rows = [], [], [], []
        for k in range(self._size):
            _lib.check(lib.ferry_batch_sample(owner.ptr, k, ctypes.byref(sample)))
            path = os.fsdecode(sample.path) if sample.path else None
            shape = tuple(sample.shape[d] for d in range(sample.ndim))
            array = Array(owner, sample.data, shape, _lib.typestr(sample.dtype), self.device,
                          device_id, path, stream=self._stream)
            out.append(_as_result(array))
            paths.append(path)
            padding.append(bool(sample.is_padding))
            rows.append(sample.row if sample.row >= 0 else None)
        owner.described = (paths, padding, rows)
        self._samples = out

    @property
    def paths(self) -> List[Optional[str]]:
        """Each sample's source file (padding repeats the last real one's)."""
        return self._owner.describe()[0]

    @property
    def is_padding(self) -> List[bool]:
        """Per sample: True for a pad_last_batch repeat."""
        return self._owner.describe()[1]

    @property
    def rows(self) -> List[Optional[int]]:
        """Per sample, with samples="rows": the row of its file it is (None
        when the samples are files)."""
        return self._owner.describe()[2]

    # ---- as one array ----

    @property
    def stackable(self) -> bool:
        """True when the batch is one dense [B, ...] array (its samples share a shape)."""
        return self._shape is not None

    def _stacked(self):
        """The stacked shape; RaggedBatchError for a ragged batch."""
        shape = self._shape
        if shape is None:
            e = self._ragged
            raise _lib.RaggedBatchError(
                e.errno, e.strerror, None,
                "%s; batch %d of epoch %d can only be used sample by sample (batch[i])"
                % (e.message, self.index, self.epoch))
        return shape

    def _array(self):
        """The stacked batch as a ferry.Array (made once, when first needed:
        DLPack, numpy(), a GPU batch's samples)."""
        whole = self._whole
        if whole is None:
            shape = self._stacked()
            whole = self._whole = Array(self._owner, self._ptr, shape, self._typestr,
                                        self.device, self._owner.ctx.device_id,
                                        stream=self._stream)
        return whole

    @property
    def shape(self) -> Tuple[int, ...]:
        """The stacked batch's shape: (samples, padding included, *sample shape)."""
        return self._stacked()

    @property
    def typestr(self) -> str:
        """The element type as numpy's type string ('<f4')."""
        self._stacked()
        return self._typestr

    @property
    def dtype(self) -> Any:
        """The element type: a numpy dtype when numpy is importable, else the type string."""
        self._stacked()
        return _np.dtype(self._typestr) if _np is not None else self._typestr

    @property
    def ndim(self) -> int:
        return len(self._stacked())

    @property
    def ptr(self) -> int:
        """The stacked batch's address in device memory."""
        self._stacked()
        return self._ptr

    @property
    def nbytes(self) -> int:
        return self._array().nbytes

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        """The CUDA Array Interface (version 3) of the stacked batch (a GPU
        batch; AttributeError on the host device). A consumer keeps the
        batch alive by keeping this Batch, as torch.as_tensor and cupy do."""
        if self.device != "cuda":
            raise AttributeError("__cuda_array_interface__: this batch is in host memory")
        return {"shape": self._stacked(), "typestr": self._typestr, "data": (self._ptr, False),
                "strides": None, "version": 3, "stream": self._stream}

    @property
    def __array_interface__(self) -> Dict[str, Any]:
        """numpy's array interface of the stacked batch (host device only;
        AttributeError on a GPU). np.asarray(batch) keeps the batch alive."""
        if self.device == "cuda":
            raise AttributeError("__array_interface__: this batch is in GPU memory")
        return {"shape": self._stacked(), "typestr": self._typestr, "data": (self._ptr, False),
                "strides": None, "version": 3}

    def __dlpack_device__(self) -> Tuple[int, int]:
        """(2, ordinal) on a GPU (kDLCUDA), (1, 0) on the host device (kDLCPU)."""
        return (2, self._owner.ctx.device_id) if self.device == "cuda" else (1, 0)

    def __dlpack__(self, stream: Optional[int] = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """A DLPack capsule of the stacked batch (see ferry.Array.__dlpack__);
        it keeps the batch's memory alive until its consumer lets it go."""
        return self._array().__dlpack__(stream=stream, max_version=max_version,
                                         dl_device=dl_device, copy=copy)

    def numpy(self) -> Any:
        """The stacked batch as a numpy array: a view of ferry's memory on the
        host device (the same one each call), a copy to the host for a GPU
        batch. Requires numpy."""
        whole = self._array()
        if whole.device == "cuda":
            return whole.numpy()
        if self._np is None:
            self._np = whole.numpy()
        return self._np

    def __repr__(self) -> str:
        if self._shape is not None:
            what = "shape=%r, dtype=%r" % (self._shape, self._typestr)
        else:
            what = "samples=%d, ragged" % self._size
        return "ferry.Batch(epoch=%d, index=%d, %s, device=%r)" % (
            self.epoch, self.index, what, self.device)


def _make_batch(owner, info, device, last, stream):
    """A Batch of the ferry_batch owner holds, which ferry_batch_describe
    gave info of: no further call into libferry unless the batch is ragged."""
    if info.stacked:
        shape = info.shape
        dims = tuple(shape.shape[:shape.ndim])
        return Batch(owner, device, info.epoch, info.index, dims[0], info.data, dims,
                     _lib.NATIVE_TYPESTRS[shape.dtype], None, last, stream)
    lib = _lib.get()
    rc = lib.ferry_batch_shape(owner.ptr, ctypes.byref(_lib.BatchShape()))
    if rc != -_lib.EMISMATCH:
        raise _lib.make_error(rc)
    ragged = _lib.make_error(rc)  # libferry's message names two files that differ
    return Batch(owner, device, info.epoch, info.index, info.size, info.data, None, None,
                 ragged, last, stream)
