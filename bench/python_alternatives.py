#!/usr/bin/env python3
"""The Python loaders ferry is compared with, measured like `ferry bench` runs.

  numpy_torch  np.load(path), then torch.from_numpy(a).cuda()
  cupy_load    cupy.load(path) (numpy reads into host memory, then a copy)
  dali         nvidia.dali fn.readers.numpy(device="gpu") over the directory

Each runs warm (the files read once before) and, where writing
/proc/sys/vm/drop_caches is permitted, cold (dropped before the run). Timing
ends after the device is synchronized. Prints one JSON document whose "runs"
have the shape of `ferry bench --json` runs; a missing module or a failure is a
run with available=false and a note, never a crash. ratio_to_ceiling is left
null: bench/report.py fills it from the workload's ceilings.

usage: python_alternatives.py --dir DIR [--workload NAME] [--cache warm,cold]
       [--tools numpy_torch,cupy_load,dali] [--seconds-limit S] [--min-seconds S]
       [--series NAME] [--batch N]
"""
import argparse
import datetime
import json
import os
import resource
import socket
import sys
import time

TOOLS = ("numpy_torch", "cupy_load", "dali")


def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def drop_caches():
    """Returns True when writing 3 to drop_caches worked (it dropped them)."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def warm_files(paths):
    for p in paths:
        try:
            with open(p, "rb") as f:
                while f.read(4 << 20):
                    pass
        except OSError:
            pass


def list_files(directory):
    names = sorted(n for n in os.listdir(directory) if n.endswith(".npy"))
    return [os.path.join(directory, n) for n in names]


def base_run(tool, backend, args, cache, cold_method):
    return {
        "tool": tool, "backend": backend, "workload": args.workload, "series": args.series,
        "cache": cache, "cold_method": cold_method, "threads": 1, "callers": 1, "chunk": None,
        "gbps": None, "files_per_s": None, "cpu_s_per_gb": None, "ratio_to_ceiling": None,
        "seconds": 0.0, "bytes": 0, "files": 0, "available": False, "best": False, "note": None,
    }


def timed_loop(paths, load_one, sync, seconds_limit, min_seconds):
    """Loads files in order (repeating while under min_seconds), stops after
    seconds_limit; returns (seconds, cpu seconds, bytes, files)."""
    nbytes = files = 0
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    i = 0
    while True:
        elapsed = time.perf_counter() - t0
        if i >= len(paths) and elapsed >= min_seconds:
            break
        if i > 0 and elapsed >= seconds_limit:
            break
        nbytes += load_one(paths[i % len(paths)])
        files += 1
        i += 1
    sync()
    return time.perf_counter() - t0, cpu_seconds() - cpu0, nbytes, files


def fill_rates(run, seconds, cpu, nbytes, files):
    gb = nbytes / 1e9
    run.update(seconds=seconds, bytes=nbytes, files=files, available=files > 0)
    if files and seconds > 0:
        run.update(gbps=gb / seconds, files_per_s=files / seconds,
                   cpu_s_per_gb=cpu / gb if gb > 0 else None)


# ---- the loaders: each returns (load_one, sync) or raises ----

def setup_numpy_torch(args, paths):
    import numpy as np
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch.cuda is not available (no GPU)")
    torch.zeros(1).cuda()
    torch.cuda.synchronize()

    def load_one(path):
        a = np.load(path)
        torch.from_numpy(a).cuda()
        return a.nbytes
    return load_one, torch.cuda.synchronize


def setup_cupy_load(args, paths):
    import cupy
    cupy.zeros(1)
    cupy.cuda.runtime.deviceSynchronize()

    def load_one(path):
        return cupy.load(path).nbytes

    def sync():
        cupy.cuda.runtime.deviceSynchronize()
        try:
            import torch  # noqa: F401  (the brief's timing: torch's sync as well)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        except ImportError:
            pass
    return load_one, sync


def measure_simple(tool, setup, args, paths, cache, cold_method):
    run = base_run(tool, "python", args, cache, cold_method)
    try:
        load_one, sync = setup(args, paths)
    except ImportError as e:
        run["note"] = "not available: %s not importable" % (e.name or e)
        return run
    except Exception as e:  # noqa: BLE001 - any failure is "not available"
        run["note"] = "not available: %s" % e
        return run
    try:
        load_one(paths[0])  # first-use costs (CUDA context, allocator) out of the timing
        sync()
        if cache == "cold":
            drop_caches()
        else:
            warm_files(paths)
        lim = args.seconds_limit
        fill_rates(run, *timed_loop(paths, load_one, sync, lim,
                                    0 if cache == "cold" else args.min_seconds))
    except Exception as e:  # noqa: BLE001
        run.update(available=False, note="failed: %s" % e)
    return run


def payload_bytes(path):
    """File size less the .npy header (magic, version, header length, header)."""
    with open(path, "rb") as f:
        head = f.read(12)
    length_bytes = 2 if head[6:7] == b"\x01" else 4
    header_len = int.from_bytes(head[8:8 + length_bytes], "little")
    return os.path.getsize(path) - (8 + length_bytes + header_len)


def make_dali_pipeline(args, paths, batch, threads):
    from nvidia.dali import fn, pipeline_def
    names = [os.path.basename(p) for p in paths]

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0)
    def reader():
        return fn.readers.numpy(device="gpu", file_root=args.dir, files=names, name="Reader")

    pipe = reader()
    pipe.build()
    return pipe


def measure_dali(args, paths, cache, cold_method):
    """Batches of the reader in file order (no shuffle), so sample k is file
    k % n; its bytes are that file's payload."""
    run = base_run("dali", "fn.readers.numpy(gpu)", args, cache, cold_method)
    try:
        import nvidia.dali  # noqa: F401
    except ImportError:
        run["note"] = "DALI not importable"
        return run
    try:
        batch = max(1, min(args.batch, len(paths)))
        threads = min(8, os.cpu_count() or 1)
        payload = [payload_bytes(p) for p in paths]
        pipe = make_dali_pipeline(args, paths, batch, threads)
        if cache == "cold":
            drop_caches()
        else:
            warm_files(paths)
        min_seconds = 0 if cache == "cold" else args.min_seconds
        nbytes = files = 0
        cpu0, t0 = cpu_seconds(), time.perf_counter()
        while True:
            elapsed = time.perf_counter() - t0
            if files >= len(paths) and elapsed >= min_seconds:
                break
            if files and elapsed >= args.seconds_limit:
                break
            (out,) = pipe.run()  # GPU outputs, complete when returned
            for _ in range(len(out)):
                nbytes += payload[files % len(paths)]
                files += 1
        seconds, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        run.update(threads=threads, note="batch %d, %d reader threads" % (batch, threads))
        fill_rates(run, seconds, cpu, nbytes, files)
        del pipe
    except Exception as e:  # noqa: BLE001
        run.update(available=False, note="failed: %s" % e)
    return run


def gpu_name():
    try:
        import torch
        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001
        pass
    return None


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Python alternatives to ferry, as bench runs.")
    ap.add_argument("--dir", required=True, help="directory of .npy files")
    ap.add_argument("--workload", help="label of the dataset (default: the directory's name)")
    ap.add_argument("--cache", default="warm", help="warm, cold or warm,cold (warm)")
    ap.add_argument("--tools", default=",".join(TOOLS), help="numpy_torch,cupy_load,dali")
    ap.add_argument("--seconds-limit", type=float, default=5.0, help="a run stops after S (5)")
    ap.add_argument("--min-seconds", type=float, default=1.0,
                    help="warm runs repeat the dataset for at least S (1)")
    ap.add_argument("--series", default="python", help="label copied into every run")
    ap.add_argument("--batch", type=int, default=16, help="DALI batch size (16)")
    args = ap.parse_args(argv)
    args.workload = args.workload or os.path.basename(os.path.normpath(args.dir))
    args.caches = [c for c in args.cache.replace("both", "warm,cold").split(",") if c]
    args.tool_list = [t for t in args.tools.split(",") if t]
    for t in args.tool_list:
        if t not in TOOLS:
            ap.error("unknown tool %s (expected %s)" % (t, ", ".join(TOOLS)))
    return args


def measure(tool, args, paths, cache, cold_method):
    if tool == "dali":
        return measure_dali(args, paths, cache, cold_method)
    setup = setup_numpy_torch if tool == "numpy_torch" else setup_cupy_load
    return measure_simple(tool, setup, args, paths, cache, cold_method)


def main(argv):
    args = parse_args(argv)
    paths = list_files(args.dir)
    if not paths:
        print("python_alternatives: %s: no .npy files" % args.dir, file=sys.stderr)
        return 1
    notes, runs = [], []
    can_drop = "cold" in args.caches and drop_caches()
    if "cold" in args.caches and not can_drop:
        notes.append("cold runs need drop_caches, which is not permitted here: not measured")
    for cache in args.caches:
        for tool in args.tool_list:
            if cache == "cold" and not can_drop:
                run = base_run(tool, "python", args, cache, "o_direct")
                run["note"] = "not available: cold needs drop_caches (not permitted); " \
                              "these loaders have no O_DIRECT path"
            else:
                run = measure(tool, args, paths, cache, "drop_caches" if cache == "cold" else None)
            print("python_alternatives: %s %s: %s" % (
                tool, cache, "%.2f GB/s" % run["gbps"] if run["available"] else run["note"]),
                file=sys.stderr)
            runs.append(run)
    doc = {
        "machine": socket.gethostname(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": gpu_name(),
        "dataset": {"name": args.workload, "dir": args.dir, "files": len(paths),
                    "bytes": sum(os.path.getsize(p) for p in paths)},
        "ceilings": {"pinned_h2d_gbps": None, "storage_direct_gbps": None,
                     "page_cache_gbps": None, "read_only_gbps": None,
                     "read_only_files_per_s": None},
        "notes": notes,
        "runs": runs,
    }
    json.dump(doc, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
