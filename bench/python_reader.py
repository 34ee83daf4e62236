#!/usr/bin/env python3
"""Batches of a dataset in Python, measured like `ferry bench`'s reader rows.

  python_reader_stacked     ferry.Reader, each batch taken whole as one tensor:
                            torch.as_tensor(batch, device="cuda") through the
                            Batch's __cuda_array_interface__ (else
                            torch.from_dlpack, else cupy.asarray) on a GPU;
                            numpy.asarray(batch) (its __array_interface__) on
                            the host device. No per-sample Python work.
  python_reader_per_sample  ferry.Reader, torch.as_tensor(a, device="cuda") on
                            each sample of the batch (numpy.asarray on the host
                            device): what a user wrote before stacked batches
  torch_dataloader          what a PyTorch user writes: a Dataset whose
                            __getitem__ is np.load(path), DataLoader(batch_size=B,
                            num_workers=W, pin_memory=True, persistent_workers=True),
                            .cuda(non_blocking=True) per batch; one run per W of
                            --workers at batch size --workers-at (warm), the
                            best W for every other run (the report names it)
  dali_reader               nvidia.dali fn.readers.numpy(device="gpu"), when
                            importable

Files are read in order (no shuffle, one shard) at each --batch-sizes value,
warm (the files read once before) and, where writing
/proc/sys/vm/drop_caches is permitted, cold (dropped before each run). A run
stops after --seconds-limit, or, warm, once every file was delivered and
--min-seconds passed; cold runs read the dataset at most once. Timing ends
after the device is synchronized. Warm ferry.Reader runs measure the steady
rate, as `ferry bench`'s reader rows: the first batch (its latency from
Reader() is first_batch_s) and what arrives within --warmup-seconds after it
are not counted, nor the first epochs of files of 4 MiB or more while the
zero-copy path registers them (as `ferry bench`'s: until an epoch in which
every file was copied from a mapping, 256 epochs or 10 s; bench/pin_pace.sh
measures those epochs); cold ones read the files once, timed from Reader(). Each
ferry.Reader run has a ferry.Context of its own, closed after it: the
zero-copy path's registrations pin their files' pages, which a drop of the
page cache leaves in memory, so a context shared across runs made later
"cold" runs warm (on 2026-12-05, 4 MiB files: 45 GB/s cold against 1.3 for
the storage). A run
stops at --seconds-limit once 3 batches were counted. The DataLoader's workers are started first (an epoch
of one batch: a one-off cost, left out, its time is first_batch_s); then a
fresh epoch is timed as the Reader's: warm after its first batch and the
warm-up, cold one pass from iter().

CPU seconds per GB: user + system of this process (ferry's IO threads and the
DataLoader's pin-memory thread included) plus, for the DataLoader, of its live
worker processes, from /proc/<pid>/stat (RUSAGE_CHILDREN sees no live child).

--repeats N runs the whole matrix N times in turn and gives each row as the
median of its N runs (bench/report_reader.py's merge_repeats: repeats, the
min and max of files/s, GB/s and CPU s/GB, every run's files/s);
bench/run.sh instead runs this script (and the C part) N times, alternating,
and its report merges the runs the same way.

Prints one JSON document whose "runs" have the shape of `ferry bench --json`
runs (plus batch_size, and workers for the DataLoader); a missing module, an
API this ferry lacks, or a failure is a run with available=false and a note,
never a crash. ratio_to_ceiling is left null with ceiling "read_only":
bench/report.py fills it from the read-only ceiling of the same files that
`ferry bench --tools reader` measured in the same run.

usage: python_reader.py --dir DIR [--workload NAME] [--cache warm,cold]
       [--batch-sizes 1,4,32,256] [--tools LIST] [--workers 8,16]
       [--seconds-limit S] [--min-seconds S] [--budget-seconds S]
       [--device auto|cuda|host] [--series NAME] [--verify] [--repeats N]
"""
import argparse
import datetime
import gc
import json
import os
import resource
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_alternatives import (drop_caches, gpu_name, list_files, payload_bytes,  # noqa: E402
                                 warm_files)
from report_reader import merge_repeats  # noqa: E402

TOOLS = ("python_reader_stacked", "python_reader_per_sample", "torch_dataloader", "dali_reader")


class NotAvailable(Exception):
    """The run cannot be made here; the message says why."""


def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def children_cpu_seconds():
    """User + system seconds of this process's live children (from /proc), or
    None when /proc cannot tell."""
    me, tick, total = os.getpid(), os.sysconf("SC_CLK_TCK"), 0.0
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[1]) == me:  # fields[1]: ppid (field 4 of stat)
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def base_run(tool, backend, args, batch, cache, cold_method):
    return {
        "tool": tool, "backend": backend, "workload": args.workload, "series": args.series,
        "cache": cache, "cold_method": cold_method, "threads": None, "callers": 1,
        "chunk": None, "batch_size": batch, "workers": None, "gbps": None, "files_per_s": None,
        "cpu_s_per_gb": None, "ceiling": "read_only", "ceiling_gbps": None,
        "ratio_to_ceiling": None, "verified": False, "first_batch_s": None, "seconds": 0.0,
        "bytes": 0, "files": 0,
        "available": False, "best": False, "note": None,
    }


def fill_rates(run, seconds, cpu, nbytes, files):
    gb = nbytes / 1e9
    run.update(seconds=seconds, bytes=nbytes, files=files, available=files > 0)
    if files and seconds > 0:
        run.update(gbps=gb / seconds, files_per_s=files / seconds,
                   cpu_s_per_gb=cpu / gb if gb > 0 and cpu is not None else None)
    if not files and not run.get("note"):
        run["note"] = "failed: no sample delivered"


MIN_BATCHES = 3  # counted before seconds_limit may end a run (as ferry bench's)


class Limits:
    """When a run is over: warm, every file delivered and min_seconds passed;
    or seconds_limit passed once MIN_BATCHES batches were counted (4 x
    seconds_limit: one is enough). warmup: warm runs do not count what
    arrives within that many seconds after their first batch."""

    def __init__(self, args, cache, nfiles):
        self.limit = args.seconds_limit
        self.min = 0.0 if cache == "cold" else args.min_seconds
        self.warmup = 0.0 if cache == "cold" else args.warmup_seconds
        self.nfiles = nfiles
        self.t0 = time.perf_counter()

    def start(self):
        self.t0 = time.perf_counter()

    def over(self, files, batches):
        elapsed = time.perf_counter() - self.t0
        if files >= self.nfiles and elapsed >= self.min:
            return True
        if batches >= MIN_BATCHES and elapsed >= self.limit:
            return True
        return batches > 0 and elapsed >= 4 * self.limit


# ---- the device side: torch, else cupy, else numpy (host device) ----

class Device:
    """How batches become tensors, and how to wait for the device."""

    def __init__(self, kind):
        self.kind, self.torch, self.cupy, self.np = kind, None, None, None
        try:
            import numpy
            self.np = numpy
        except ImportError:
            pass
        if kind != "cuda":
            return
        try:
            import torch
            if torch.cuda.is_available():
                self.torch = torch
                torch.zeros(1, device="cuda")  # CUDA's first-use costs out of the timing
        except ImportError:
            pass
        if self.torch is None:
            try:
                import cupy
                cupy.zeros(1)
                self.cupy = cupy
            except ImportError:
                pass

    def name(self):
        if self.kind == "cuda":
            return "torch" if self.torch else "cupy" if self.cupy else None
        return "numpy" if self.np else None

    def sync(self):
        if self.torch is not None:
            self.torch.cuda.synchronize()
        elif self.cupy is not None:
            self.cupy.cuda.runtime.deviceSynchronize()

    def stacked(self, batch):
        """The whole batch as one tensor, through the documented interface only
        (never a stacking copy). Returns (tensor, samples, bytes)."""
        if self.kind == "cuda":
            if self.torch is not None and hasattr(batch, "__cuda_array_interface__"):
                t = self.torch.as_tensor(batch, device="cuda")
            elif self.torch is not None and hasattr(batch, "__dlpack__"):
                t = self.torch.from_dlpack(batch)
            elif self.cupy is not None and hasattr(batch, "__cuda_array_interface__"):
                t = self.cupy.asarray(batch)
            else:
                raise NotAvailable("ferry.Batch has no __cuda_array_interface__ or __dlpack__ "
                                   "(this ferry's Python API has no stacked batches yet)")
            nbytes = t.nelement() * t.element_size() if self.torch is not None else t.nbytes
            return t, int(t.shape[0]), int(nbytes)
        if self.np is None:
            raise NotAvailable("numpy not importable (the host device's batches are numpy)")
        if not hasattr(batch, "__array_interface__"):
            raise NotAvailable("ferry.Batch has no __array_interface__ on the host device "
                               "(this ferry's Python API has no stacked batches yet)")
        a = self.np.asarray(batch)
        return a, int(a.shape[0]), int(a.nbytes)

    def per_sample(self, batch):
        """Each sample as its own tensor, as users wrote before. Returns
        (tensors, samples, bytes)."""
        out, nbytes = [], 0
        for a in batch:
            if self.torch is not None:
                t = self.torch.as_tensor(a, device="cuda")
                nbytes += t.nelement() * t.element_size()
            elif self.cupy is not None:
                t = self.cupy.asarray(a)
                nbytes += t.nbytes
            elif self.np is not None:
                t = self.np.asarray(a)
                nbytes += t.nbytes
            else:
                raise NotAvailable("neither torch, cupy nor numpy importable")
            out.append(t)
        return out, len(out), nbytes

    def to_host(self, t):
        if self.torch is not None:
            return t.cpu().numpy()
        if self.cupy is not None:
            return self.cupy.asnumpy(t)
        return self.np.asarray(t)


# ---- ferry.Reader ----

def open_reader(ferry, paths, batch, cache, ctx):
    """A Reader over the files in order with the automatic prefetch window,
    as the C reader's prefetch_depth 0: prefetch_queue_depth=None where that
    means automatic (ferry's Python API since stacked batches), else 0; a
    Reader that takes neither gets its default, said in the note."""
    kw = dict(files=paths, batch_size=batch, epochs=1 if cache == "cold" else None,
              ctx=ctx)
    for depth in (None, 0):
        try:
            return ferry.Reader(prefetch_queue_depth=depth, **kw), "prefetch auto"
        except (ValueError, TypeError):
            pass
    return ferry.Reader(**kw), "prefetch_queue_depth None or 0 (automatic) refused: the default"


def verify_stacked(dev, tensor, batch, payload_cache):
    """Each row of the stacked tensor against np.load of its file."""
    names = getattr(batch, "paths", None)
    if names is None:
        raise NotAvailable("--verify needs Batch.paths")
    host = dev.to_host(tensor)
    for i, name in enumerate(names):
        want = payload_cache.get(name)
        if want is None:
            want = payload_cache[name] = dev.np.load(name)
        if host[i].tobytes() != want.tobytes():
            raise RuntimeError("verify: row %d (%s) differs from np.load" % (i, name))


def take_next(dev, reader, take, verify, cache):
    """Takes the next batch as the row does; returns (samples, bytes), or None
    after the last epoch."""
    batch = reader.next_batch()
    if batch is None:
        return None
    t, n, b = take(batch)
    if verify:
        verify_stacked(dev, t, batch, cache)
    del batch, t  # the batch's memory goes back to the reader
    return n, b


def ferry_reader_loop(dev, reader, take, lim, verify, counts, timing=None):
    """Batches until the run is over; counts is (samples, bytes, batches) so far.
    timing (a warm run over mapped files: a Timing) starts the timed part
    again while files are still read beside the mappings."""
    files, nbytes, batches = counts
    cache = {}
    while not lim.over(files, batches):
        got = take_next(dev, reader, take, verify, cache)
        if got is None:
            break
        files, nbytes, batches = files + got[0], nbytes + got[1], batches + 1
        if timing and timing.read_beside_mappings():
            timing.start()
            files, nbytes, batches = 0, 0, 0
    dev.sync()
    return files, nbytes, batches


# Files the zero-copy path maps (FERRY__MAPPED_MIN in src/load/load.h): the
# registrar registers them over the first epochs (FERRY_PIN_PACE), every
# later epoch copies from the registrations.
MAPPED_MIN = 4 << 20
WARM_EPOCHS_MAX, WARM_SECONDS_MAX = 256, 10.0  # as tools/bench/reader.c's


def file_counts(reader):
    """The reader's files fetched from a mapping, and read (buffered, direct)."""
    st = reader.stats()
    return st["files_mapped"], st["files_buffered"] + st["files_direct"]


class Registering:
    """Whether the files of a mapped dataset (nfiles an epoch; 0: not mapped)
    are still being registered, looked at each epoch's end (taken: the files
    taken so far): until an epoch copied every file from a mapping, or
    WARM_EPOCHS_MAX epochs."""

    def __init__(self, reader, nfiles, taken):
        self.reader, self.nfiles, self.taken = reader, nfiles, taken
        self.epochs, self.at_epoch, self.read_at_epoch = 0, *file_counts(reader)
        self.registered = not nfiles

    def after(self, files):
        self.taken += files
        if not self.registered and self.taken % self.nfiles == 0:
            mapped, read = file_counts(self.reader)
            # Counted as fetched, and the window fetches ahead: an epoch's worth
            # of mapped files is not enough while some were still read beside them.
            done = mapped - self.at_epoch >= self.nfiles and read == self.read_at_epoch
            self.at_epoch, self.read_at_epoch = mapped, read
            self.epochs += 1
            self.registered = done or self.epochs >= WARM_EPOCHS_MAX
        return not self.registered


class Timing:
    """The timed part of a warm run: its clock (lim) and CPU time, started
    again (read_beside_mappings, as tools/bench/reader.c's) when a mapped
    dataset's file was read (buffered, direct) since it began, within
    WARM_SECONDS_MAX of the first batch: the warm-up ends at an epoch whose
    files all came from mappings, but IO threads fetch ahead and not strictly
    in order, so a batch fetched before the last registration can be taken
    after it."""

    def __init__(self, reader, lim, mapped, first_at):
        self.reader, self.lim, self.mapped, self.first_at = reader, lim, mapped, first_at
        self.restarts = 0
        self.start()

    def start(self):
        self.lim.start()
        self.cpu0, self.read0 = cpu_seconds(), file_counts(self.reader)[1] if self.mapped else 0

    def read_beside_mappings(self):
        if not self.mapped or time.perf_counter() - self.first_at >= WARM_SECONDS_MAX:
            return False
        if file_counts(self.reader)[1] == self.read0:
            return False
        self.restarts += 1
        return True


def warm_up(dev, reader, take, verify, seconds, nfiles, taken):
    """Takes (and does not count) the batches of the next seconds (the window
    that loaded while the first batch was awaited lands in a burst), and
    (nfiles: a mapped dataset's files an epoch, else 0) whole epochs while its
    files are being registered (Registering), at most WARM_SECONDS_MAX.
    Returns the whole epochs taken so."""
    t0, reg = time.perf_counter(), Registering(reader, nfiles, taken)
    registering = not reg.registered  # an epoch the first batch ended is not looked at
    while time.perf_counter() - t0 < seconds or (
            registering and time.perf_counter() - t0 < WARM_SECONDS_MAX):
        got = take_next(dev, reader, take, verify, {})
        if got is None:
            break
        registering = reg.after(got[0])
    return reg.epochs


def timed_reader(args, paths, dev, batch, take, verify, cache):
    """Warm: timed after the first batch and the warm-up (warm_up), which do
    not count (as the C reader rows); cold: one pass timed from the Reader's
    construction. Returns (seconds, cpu, samples, bytes, batches,
    first_batch_s, note)."""
    import ferry
    ctx = ferry.Context(device=args.device)
    lim = Limits(args, cache, len(paths))
    cpu0 = cpu_seconds()
    lim.start()
    reader, note = open_reader(ferry, paths, batch, cache, ctx)
    try:
        first = take_next(dev, reader, take, verify, {})
        if first is None:
            raise RuntimeError("no batch at all")
        first_batch_s = time.perf_counter() - lim.t0
        counts, timing, first_at = (first[0], first[1], 1), None, time.perf_counter()
        if cache == "warm":
            epochs = warm_up(dev, reader, take, verify, lim.warmup,
                             len(paths) if args.mapped else 0, first[0])
            if epochs:
                note += "; warm-up of %d epoch%s (registering)" % (epochs, "s" * (epochs > 1))
            timing, counts = Timing(reader, lim, args.mapped, first_at), (0, 0, 0)
        files, nbytes, batches = ferry_reader_loop(dev, reader, take, lim, verify, counts,
                                                   timing)
        if timing:
            cpu0 = timing.cpu0
            if timing.restarts:
                note += "; timing started again after a file read beside mapped ones"
        seconds, cpu = time.perf_counter() - lim.t0, cpu_seconds() - cpu0
    finally:
        reader.close()
        ctx.close()
        gc.collect()  # the batches' tensors hold the context until they go
    return seconds, cpu, files, nbytes, batches, first_batch_s, note


def measure_ferry_reader(args, paths, dev, batch, stacked, cache, cold_method):
    tool = "python_reader_stacked" if stacked else "python_reader_per_sample"
    run = base_run(tool, "ferry.Reader", args, batch, cache, cold_method)
    try:
        import ferry  # noqa: F401  (timed_reader uses it)
    except ImportError as e:
        run["note"] = "not available: ferry not importable (%s)" % e
        return run
    take = dev.stacked if stacked else dev.per_sample
    verify = args.verify and stacked
    if cache == "cold":
        drop_caches()
    try:
        seconds, cpu, files, nbytes, batches, first_batch_s, note = timed_reader(
            args, paths, dev, batch, take, verify, cache)
    except NotAvailable as e:
        run["note"] = "not available: %s" % e
        return run
    except Exception as e:  # noqa: BLE001 - any failure is a note
        run["note"] = "failed: %s: %s" % (type(e).__name__, e)
        return run
    run.update(verified=verify, first_batch_s=first_batch_s)
    run["note"] = "%s; %s; batches: %d; %s; first batch %.3g s after Reader()%s" % (
        note, dev.name(), batches,
        "timed after the first batch and a warm-up" if cache == "warm"
        else "one pass from Reader()",
        first_batch_s, "; every byte verified" if verify else "")
    fill_rates(run, seconds, cpu, nbytes, files)
    return run


# ---- torch DataLoader ----

def shm_free_bytes():
    try:
        st = os.statvfs("/dev/shm")
        return st.f_bavail * st.f_frsize
    except OSError:
        return None


def make_dataloader(torch, np, paths, batch, workers):
    """The DataLoader a PyTorch user writes, and its sampler: the files in
    order, whose indices the bench sets per epoch (a first epoch of one
    batch starts the workers; the sampler runs in this process, so the next
    iter() takes the whole order)."""
    class NpyFiles(torch.utils.data.Dataset):
        def __init__(self, files):
            self.files = files

        def __len__(self):
            return len(self.files)

        def __getitem__(self, i):
            return np.load(self.files[i])

    class Order(torch.utils.data.Sampler):
        def __init__(self, indices):
            self.indices = indices

        def __iter__(self):
            return iter(self.indices)

        def __len__(self):
            return len(self.indices)

    order = Order(list(range(min(batch, len(paths)))))
    loader = torch.utils.data.DataLoader(NpyFiles(paths), batch_size=batch, sampler=order,
                                         num_workers=workers, pin_memory=True,
                                         persistent_workers=True)
    return loader, order


class Clocks:
    """Wall, this process's CPU and its live workers' CPU, from start()."""

    def __init__(self, lim):
        self.lim = lim
        self.start()

    def start(self):
        self.lim.start()
        self.cpu0, self.kids0 = cpu_seconds(), children_cpu_seconds()

    def stop(self):
        seconds = time.perf_counter() - self.lim.t0
        kids1 = children_cpu_seconds()
        kids = kids1 - self.kids0 if self.kids0 is not None and kids1 is not None else None
        return seconds, cpu_seconds() - self.cpu0, kids


def dataloader_loop(torch, loader, clocks, warm):
    """Epochs of fresh iterators over started workers until the run is over.
    Warm: the clocks restart after the first batch and the warm-up, which do
    not count (as the reader rows'); cold: one pass from iter()."""
    files = nbytes = batches = 0
    lim, first, warming = clocks.lim, warm, None
    while not lim.over(files, batches):
        for x in loader:  # a new epoch: iter() resumes the persistent workers
            x = x.cuda(non_blocking=True)
            if first or (warming and time.perf_counter() - warming < lim.warmup):
                warming, first = warming or time.perf_counter(), False
                continue
            if warming:
                torch.cuda.synchronize()
                clocks.start()
                warming = None
                continue
            files, batches = files + int(x.shape[0]), batches + 1
            nbytes += x.nelement() * x.element_size()
            del x
            if lim.over(files, batches):
                break
        if not warm and files >= lim.nfiles:
            break
    torch.cuda.synchronize()
    return files, nbytes


def dataloader_check(args, paths, batch, workers):
    """The modules, a GPU, and room in /dev/shm for the batches in flight."""
    try:
        import numpy as np
        import torch
    except ImportError as e:
        raise NotAvailable("%s not importable" % (e.name or e))
    if not torch.cuda.is_available():
        raise NotAvailable("torch.cuda is not available (no GPU)")
    batch_bytes = min(batch, len(paths)) * os.path.getsize(paths[0])
    need, free = 2 * workers * batch_bytes, shm_free_bytes()  # prefetch_factor 2
    if free is not None and need > free // 2:
        raise NotAvailable("W=%d workers x 2 batches of %.1f GiB in flight need %.1f GiB of "
                           "/dev/shm, more than half of its %.1f GiB free"
                           % (workers, batch_bytes / 2**30, need / 2**30, free / 2**30))
    return torch, np


def start_dataloader(torch, np, paths, batch, workers):
    """A DataLoader whose workers have started and delivered a first epoch of
    one batch, then given the whole order. Returns (loader, seconds to that
    first batch)."""
    t_start = time.perf_counter()
    loader, order = make_dataloader(torch, np, paths, batch, workers)
    for x in loader:
        x.cuda(non_blocking=True)
    torch.cuda.synchronize()
    order.indices = list(range(len(paths)))
    return loader, time.perf_counter() - t_start


def measure_dataloader(args, paths, batch, workers, cache, cold_method):
    run = base_run("torch_dataloader", "np.load+DataLoader", args, batch, cache, cold_method)
    run.update(workers=workers, threads=workers)
    try:
        torch, np = dataloader_check(args, paths, batch, workers)
        loader, run["first_batch_s"] = start_dataloader(torch, np, paths, batch, workers)
        if cache == "cold":
            drop_caches()
        clocks = Clocks(Limits(args, cache, len(paths)))
        files, nbytes = dataloader_loop(torch, loader, clocks, cache == "warm")
        seconds, cpu, workers_cpu = clocks.stop()
        del loader
    except NotAvailable as e:
        run["note"] = "not available: %s" % e
        return run
    except Exception as e:  # noqa: BLE001
        run["note"] = "failed: %s: %s" % (type(e).__name__, e)
        return run
    run["note"] = "W=%d workers, pin_memory, persistent; started (%.3g s to a first batch), " \
        "then %s; CPU: this process + %s" % (
            workers, run["first_batch_s"],
            "timed after the first batch of a fresh epoch and a warm-up" if cache == "warm"
            else "one pass from a fresh iter()",
            "its workers (/proc)" if workers_cpu is not None
            else "not its workers (/proc unreadable)")
    fill_rates(run, seconds, cpu + (workers_cpu or 0.0), nbytes, files)
    return run


# ---- DALI ----

def measure_dali(args, paths, batch, cache, cold_method):
    run = base_run("dali_reader", "fn.readers.numpy(gpu)", args, batch, cache, cold_method)
    try:
        import nvidia.dali  # noqa: F401  (make_dali_pipeline imports from it)
        from python_alternatives import make_dali_pipeline
    except ImportError:
        run["note"] = "not available: DALI (nvidia.dali) not importable"
        return run
    try:
        threads = min(16, os.cpu_count() or 1)
        payload = [payload_bytes(p) for p in paths]
        pipe = make_dali_pipeline(args, paths, min(batch, len(paths)), threads)
        if cache == "cold":
            drop_caches()
        lim = Limits(args, cache, len(paths))
        files = nbytes = 0
        cpu0 = cpu_seconds()
        lim.start()
        batches = 0
        while not lim.over(files, batches):
            (out,) = pipe.run()
            batches += 1
            for _ in range(len(out)):
                nbytes += payload[files % len(paths)]
                files += 1
        seconds, cpu = time.perf_counter() - lim.t0, cpu_seconds() - cpu0
        run.update(threads=threads, note="%d reader threads" % threads)
        fill_rates(run, seconds, cpu, nbytes, files)
        del pipe
    except Exception as e:  # noqa: BLE001
        run.update(available=False, note="failed: %s: %s" % (type(e).__name__, e))
    return run


# ---- the matrix ----

def reader_device(args):
    """'cuda' or 'host': where ferry.Reader's batches land (None: no ferry)."""
    try:
        import ferry
        return ferry.default_context(args.device).device
    except Exception:  # noqa: BLE001
        return None


def runs_of(tool, args, paths, dev, batch, cache, cold_method):
    if tool == "python_reader_stacked":
        return [measure_ferry_reader(args, paths, dev, batch, True, cache, cold_method)]
    if tool == "python_reader_per_sample":
        return [measure_ferry_reader(args, paths, dev, batch, False, cache, cold_method)]
    if tool == "torch_dataloader":
        # Every W of --workers at the first batch size measured (the matrix
        # takes --workers-at first), then the best of them.
        workers = [args.best_workers] if args.best_workers else args.worker_list
        runs = [measure_dataloader(args, paths, batch, w, cache, cold_method) for w in workers]
        ok = [r for r in runs if r["available"]]
        if not args.best_workers and ok:
            args.best_workers = max(ok, key=lambda r: r["files_per_s"])["workers"]
        return runs
    return [measure_dali(args, paths, batch, cache, cold_method)]


def skipped(tool, args, batch, cache, cold_method, why):
    run = base_run(tool, "-", args, batch, cache, cold_method)
    run["note"] = why
    return run


def lacks(runs):
    """The note of a tool that cannot run here whatever the batch size (a
    module or API missing, no GPU), else None."""
    notes = [r["note"] or "" for r in runs]
    if notes and all(n.startswith("not available") and "/dev/shm" not in n for n in notes):
        return notes[0]
    return None


def matrix(args, paths, dev, can_drop, start):
    runs = []
    for cache in args.caches:
        missing = {}  # tool: why it cannot run (one row says so)
        cold_method = "drop_caches" if cache == "cold" else None
        if cache == "warm":
            warm_files(paths)
        # --workers-at first: the DataLoader's worker counts are tried there.
        order = sorted(args.batch_list, key=lambda b: b != args.workers_at)
        for batch in order:
            for tool in args.tool_list:
                done = len(runs)
                if tool in missing:
                    continue
                if cache == "cold" and not can_drop:
                    runs.append(skipped(tool, args, batch, cache, "o_direct",
                                        "not available: cold needs drop_caches (not permitted)"))
                elif args.budget_seconds and time.perf_counter() - start > args.budget_seconds:
                    runs.append(skipped(tool, args, batch, cache, cold_method,
                                        "skipped: --budget-seconds %g spent"
                                        % args.budget_seconds))
                else:
                    runs += runs_of(tool, args, paths, dev, batch, cache, cold_method)
                    if lacks(runs[done:]):
                        missing[tool] = lacks(runs[done:])
                for r in runs[done:]:
                    print("python_reader: %s %s batch %d: %s" % (
                        r["tool"], cache, batch, "%.0f files/s, %.2f GB/s" % (
                            r["files_per_s"], r["gbps"]) if r["available"] else r["note"]),
                        file=sys.stderr)
    return runs


def int_list(text, name, lo):
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        values = []
    if not values or min(values) < lo:
        raise SystemExit("python_reader: %s %s: expected a list of ints >= %d" % (name, text, lo))
    return values


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Python readers of a .npy dataset, as bench runs.")
    ap.add_argument("--dir", required=True, help="directory of .npy files")
    ap.add_argument("--workload", help="label of the dataset (default: the directory's name)")
    ap.add_argument("--cache", default="warm", help="warm, cold or warm,cold (warm)")
    ap.add_argument("--batch-sizes", default="1,4,32,256", help="(1,4,32,256)")
    ap.add_argument("--tools", default=",".join(TOOLS), help=",".join(TOOLS))
    ap.add_argument("--workers", help="DataLoader num_workers to try (8 and the cores)")
    ap.add_argument("--workers-at", type=int, default=32,
                    help="the batch size at which every --workers value is tried, warm; other "
                         "runs use the best (32; absent from --batch-sizes: the first)")
    ap.add_argument("--warmup-seconds", type=float, default=0.25,
                    help="warm runs do not count what arrives within S after their first "
                         "batch (0.25)")
    ap.add_argument("--seconds-limit", type=float, default=2.0, help="a run stops after S (2)")
    ap.add_argument("--min-seconds", type=float, default=0.5,
                    help="warm runs repeat the dataset for at least S (0.5)")
    ap.add_argument("--budget-seconds", type=float, default=0,
                    help="runs that would start after S are skipped (none)")
    ap.add_argument("--device", default=None, help="ferry.Reader's device (None: ferry's default)")
    ap.add_argument("--series", default="reader", help="label copied into every run (reader)")
    ap.add_argument("--verify", action="store_true",
                    help="check every stacked row against np.load of its file (timed too)")
    ap.add_argument("--repeats", type=int, default=1,
                    help="runs of each row, the matrix N times in turn; each row is their "
                         "median, with their min and max (1)")
    args = ap.parse_args(argv)
    args.workload = args.workload or os.path.basename(os.path.normpath(args.dir))
    args.caches = [c for c in args.cache.replace("both", "warm,cold").split(",") if c]
    args.batch_list = int_list(args.batch_sizes, "--batch-sizes", 1)
    cores = os.cpu_count() or 1
    args.worker_list = int_list(args.workers or ",".join(str(w) for w in sorted({8, max(8, cores)})),
                                "--workers", 1)
    args.best_workers = None  # the DataLoader's best num_workers, once tried
    if args.repeats < 1:
        ap.error("--repeats must be a whole number from 1")
    args.tool_list = [t for t in args.tools.split(",") if t]
    for t in args.tool_list:
        if t not in TOOLS:
            ap.error("unknown tool %s (expected %s)" % (t, ", ".join(TOOLS)))
    return args


def main(argv):
    args = parse_args(argv)
    start = time.perf_counter()
    paths = list_files(args.dir)
    if not paths:
        print("python_reader: %s: no .npy files" % args.dir, file=sys.stderr)
        return 1
    sizes = [os.path.getsize(p) for p in paths]
    args.mapped = max(sizes) >= MAPPED_MIN  # as tools/bench/reader.c's warming_up
    kind = reader_device(args)
    dev = Device(kind or "host")
    notes = []
    can_drop = "cold" in args.caches and drop_caches()
    if "cold" in args.caches and not can_drop:
        notes.append("cold runs need drop_caches, which is not permitted here: not measured")
    if kind == "host":
        notes.append("ferry.Reader on the host device: its numbers say nothing about a GPU")
    runs = []
    for _ in range(args.repeats):
        runs += matrix(args, paths, dev, can_drop, start)
    if args.repeats > 1:
        runs = merge_repeats(runs)
        notes.append("each row is the median of its %d runs (--repeats)" % args.repeats)
    doc = {
        "machine": socket.gethostname(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": gpu_name() if kind == "cuda" else None, "device_kind": kind,
        "dataset": {"name": args.workload, "dir": args.dir, "files": len(paths),
                    "bytes": sum(sizes)},
        "ceilings": {"pinned_h2d_gbps": None, "storage_direct_gbps": None,
                     "page_cache_gbps": None, "read_only_gbps": None,
                     "read_only_files_per_s": None},
        "notes": notes, "runs": runs,
    }
    json.dump(doc, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
