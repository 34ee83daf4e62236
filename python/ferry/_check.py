"""Checks of the arguments of ferry.Context, ferry.load, ferry.info and
ferry.Reader, made in Python before any value reaches C through ctypes (which
would truncate, wrap or convert it silently).

Each function takes the argument's name and value and returns the value as C
wants it, or raises TypeError (wrong type) or ValueError (a value out of
range) with a message that names the argument and what it accepts. bool is
refused wherever a number is meant (it is an int to Python, never a count);
numpy integers are accepted (operator.index).
"""
import math
import numbers
import operator
import os
from typing import Union

try:
    import numpy as _np
except ImportError:  # numpy is optional
    _np = None

# include/ferry.h
BATCH_MAX = 1 << 24        # FERRY_BATCH_MAX
PREFETCH_MAX = 1024        # FERRY_PREFETCH_MAX
THREADS_MAX = 1024         # FERRY_THREADS_MAX
BUFFERS_MAX = 4096         # FERRY_BUFFERS_MAX
CHUNK_MIN, CHUNK_MAX = 4096, 16 << 20
MAX_DIMS = 32              # FERRY_MAX_DIMS
INT_MAX = 2 ** 31 - 1
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
UINT64_MAX = 2 ** 64 - 1


def _is_bool(value):
    return isinstance(value, bool) or (_np is not None and isinstance(value, _np.bool_))


def _range_text(lo, hi):
    if lo is not None and hi is not None:
        return "an int from %d to %d" % (lo, hi)
    if lo is not None:
        return "an int >= %d" % lo
    if hi is not None:
        return "an int <= %d" % hi
    return "an int"


def integer(name, value, lo=None, hi=None, what=None):
    """Returns value as an int in [lo, hi] (either bound may be None).
    what replaces the generated description of the accepted values."""
    what = what or _range_text(lo, hi)
    if _is_bool(value):
        raise TypeError("%s must be %s, not a bool (%r)" % (name, what, value))
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError("%s must be %s, not %s (%r)"
                        % (name, what, type(value).__name__, value)) from None
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise ValueError("%s must be %s, not %d" % (name, what, n))
    return n


def optional_integer(name, value, lo=None, hi=None, none_means="the default", what=None):
    """As integer, with None accepted (returned as None)."""
    if value is None:
        return None
    what = "None (%s) or %s" % (none_means, what or _range_text(lo, hi))
    return integer(name, value, lo, hi, what)


def flag(name, value):
    """Returns a flag as 0 or 1: a bool (numpy's too), or the int 0 or 1."""
    what = "a bool (or 0 or 1)"
    if _is_bool(value):
        return int(bool(value))
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError("%s must be %s, not %s (%r)"
                        % (name, what, type(value).__name__, value)) from None
    if n not in (0, 1):
        raise ValueError("%s must be %s, not %d" % (name, what, n))
    return n


def real(name, value, finite=False):
    """Returns a real number (int, float, numpy's; not bool) as a float;
    finite=True also refuses nan and infinities."""
    what = "a finite real number" if finite else "a real number"
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError("%s must be %s, not %s (%r)" % (name, what, type(value).__name__, value))
    try:
        x = float(value)
    except OverflowError:
        raise ValueError("%s must be %s that fits a double, not %r" % (name, what, value)) from None
    if finite and not math.isfinite(x):
        raise ValueError("%s must be %s, not %r" % (name, what, x))
    return x


def choice(name, value, choices, none_ok=False):
    """Returns value, one of the strings in choices (or None when none_ok)."""
    if value is None and none_ok:
        return None
    names = (["None"] if none_ok else []) + [repr(c) for c in choices]
    what = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    if not isinstance(value, str):
        raise TypeError("%s must be %s, not %s (%r)" % (name, what, type(value).__name__, value))
    if value not in choices:
        raise ValueError("%s must be %s, not %r" % (name, what, value))
    return value


def path(name, value):
    """Returns a path (str, bytes or os.PathLike) as bytes for C. A NUL byte
    would end the path early in C: ValueError("embedded null byte"), as
    open() raises."""
    try:
        raw = os.fsencode(os.fspath(value))
    except TypeError:
        raise TypeError("%s must be a path (str, bytes or os.PathLike), not %s (%r)"
                        % (name, type(value).__name__, value)) from None
    if b"\0" in raw:
        raise ValueError("embedded null byte")
    return raw


def optional_path(name, value):
    """As path, with None returned as None."""
    return None if value is None else path(name, value)


def paths(name, values):
    """Returns a list of paths (any iterable of them, but not one path) as bytes."""
    if isinstance(values, (str, bytes, os.PathLike)):
        raise TypeError("%s must be a list of paths, not a single path (%r)" % (name, values))
    try:
        items = list(values)
    except TypeError:
        raise TypeError("%s must be a list of paths, not %s (%r)"
                        % (name, type(values).__name__, values)) from None
    return [path("%s[%d]" % (name, i), v) for i, v in enumerate(items)]


def pattern(name, value):
    """Returns a file name pattern (str or bytes, no NUL byte) as bytes, or None."""
    if value is None:
        return None
    if isinstance(value, str):
        raw = os.fsencode(value)
    elif isinstance(value, bytes):
        raw = value
    else:
        raise TypeError("%s must be None or a pattern (str or bytes), not %s (%r)"
                        % (name, type(value).__name__, value))
    if b"\0" in raw:
        raise ValueError("embedded null byte")
    return raw


def _sequence(name, values, what):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError("%s must be a sequence of %s, not %s (%r)"
                        % (name, what, type(values).__name__, values))
    values = list(values)
    if len(values) > MAX_DIMS:
        raise ValueError("%s must have at most %d values (FERRY_MAX_DIMS), not %d"
                         % (name, MAX_DIMS, len(values)))
    return values


def integers(name, values, lo, hi, what):
    """Returns a sequence of ints, each in [lo, hi], as a list."""
    values = _sequence(name, values, what + "s")
    return [integer("%s[%d]" % (name, i), v, lo, hi, what) for i, v in enumerate(values)]


def reals(name, values):
    """Returns a sequence of finite real numbers as a list of floats."""
    values = _sequence(name, values, "finite real numbers")
    return [real("%s[%d]" % (name, i), v, finite=True) for i, v in enumerate(values)]


def axes(name, values):
    """Returns a sequence of distinct axes (ints 0..MAX_DIMS-1) as a list."""
    out = integers(name, values, 0, MAX_DIMS - 1, "an axis from 0 to %d" % (MAX_DIMS - 1))
    for i, axis in enumerate(out):
        if axis in out[:i]:
            raise ValueError("%s must name each axis once, but %d is repeated" % (name, axis))
    return out


def chunk_size(name, value):
    """Returns a staging chunk size: None, or a power of two from 4 KiB to 16 MiB."""
    what = "None (the default) or a power of two from %d (4 KiB) to %d (16 MiB)" % (
        CHUNK_MIN, CHUNK_MAX)
    if value is None:
        return None
    n = integer(name, value, what=what)
    if not CHUNK_MIN <= n <= CHUNK_MAX or n & (n - 1):
        raise ValueError("%s must be %s, not %d" % (name, what, n))
    return n


def stream(name, value):
    """Returns a DLPack stream number: None, an int (-1, 0, 1, 2 or a CUstream
    handle), or the handle of a torch or cupy stream."""
    what = "None, an int (a DLPack stream number: -1, 0, 1, 2 or a CUstream) or a torch/cupy stream"
    if value is None:
        return None
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        if not isinstance(value, numbers.Integral) and hasattr(value, attr):
            value = getattr(value, attr)
            break
    return integer(name, value, -1, UINT64_MAX, what)


# DALI's device names for ferry's: "gpu" is "cuda", "cpu" the host device.
DEVICE_ALIASES = {"gpu": "cuda", "cpu": "host"}


def device(name, value, devices, none_ok=True):
    """Returns a device name from devices ('auto', 'cuda', 'host'), DALI's
    'gpu' and 'cpu' given as 'cuda' and 'host', or None when none_ok."""
    if isinstance(value, str) and value in DEVICE_ALIASES:
        return DEVICE_ALIASES[value]
    return choice(name, value, tuple(devices) + tuple(DEVICE_ALIASES), none_ok=none_ok)


def seed(name, value):
    """Returns a shuffle seed as an int from 0 to 2**64 - 1, or None for
    DALI's "random" (None or -1)."""
    what = "None or -1 (a random seed) or an int from 0 to %d" % UINT64_MAX
    if value is None:
        return None
    n = integer(name, value, -1, UINT64_MAX, what)
    return None if n == -1 else n


def optional_name(name, value):
    """Returns None or a str (the reader's name)."""
    if value is not None and not isinstance(value, str):
        raise TypeError("%s must be None or a str, not %s (%r)"
                        % (name, type(value).__name__, value))
    return value


def hint(name, value):
    """Returns DALI's bytes_per_sample_hint: an int >= 0 or a sequence of them."""
    what = "an int >= 0 or a list of them"
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        return [integer(name, value, 0, None, what)]
    return [integer("%s[%d]" % (name, i), v, 0, None, what) for i, v in enumerate(value)]


# What the path arguments accept (for type hints).
PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
