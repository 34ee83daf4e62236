"""ferry: load NumPy .npy tensors from storage into GPU memory.

A thin ctypes layer over libferry.so (no compiled extension, standard library
only; numpy is used when importable):

    import ferry
    x = ferry.load("a.npy")                  # GPU: ferry.Array; host device: numpy view
    t = torch.as_tensor(x, device="cuda")    # or torch.from_dlpack(x), cupy.asarray(x)
    ferry.info("a.npy").shape
    with ferry.Reader(file_root="data/", batch_size=32, random_shuffle=True) as r:
        for batch in r:                      # one epoch
            t = torch.as_tensor(batch, device="cuda")   # the whole [32, ...] batch, no copy

libferry is found through $FERRY_LIBRARY, a copy beside this package
(ferry/libferry.so*, where `pip install` puts it), the checkout's build/
directory, or the system's library path, in that order. Errors raise
ferry.FerryError, an OSError.
"""
from ._lib import (EBOUNDS, ECHANGED, ECONFIG, EDEVICE, EEND, EFORMAT, EIO_BACKEND, ELEASED,
                   EMISMATCH, ENODEVICE, ETRUNCATED, EUNSUPPORTED, FerryError, RaggedBatchError)
from ._array import Array
from ._context import (ArrayInfo, AsyncLoad, Context, default_context, info, load, load_async,
                       load_into, read_range)
from ._reader import Batch, Reader

__version__ = "0.1.0"

__all__ = ["Array", "ArrayInfo", "AsyncLoad", "Batch", "Context", "FerryError",
           "RaggedBatchError", "Reader", "default_context", "info", "library_version", "load",
           "load_async", "load_into", "read_range", "EBOUNDS", "ECHANGED", "ECONFIG", "EDEVICE",
           "EEND", "EFORMAT", "EIO_BACKEND", "ELEASED", "EMISMATCH", "ENODEVICE", "ETRUNCATED",
           "EUNSUPPORTED"]


def library_version() -> "tuple[str, str]":
    """Returns the loaded libferry's version string and path, e.g. ('0.1.0', '/.../libferry.so')."""
    from . import _lib
    lib = _lib.get()
    return lib.ferry_version().decode(), lib.path
