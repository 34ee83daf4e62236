#!/usr/bin/env python3
"""Rows as samples against separate files and np.load(mmap) (issue 20, part 1).

One N x ROW-byte float32 array in one .npy file (N rows of ROW bytes: 8 GiB as
131072 x 64 KiB by default), the same rows as N separate .npy files, and three
ways to read them in shuffled batches of --batch rows onto the device, warm
(every file read once before timing):

  rows       ferry.Reader(files=[big], samples="rows", random_shuffle=True)
  files      ferry.Reader(file_root=the N files, random_shuffle=True)
  np_mmap    np.load(big, mmap_mode="r")[sorted random idx], then
             torch.from_numpy(...).pin_memory().cuda() (numpy on the host device)

Each is timed for --seconds after its first batch; every batch is taken as one
tensor (torch.as_tensor(batch, device="cuda"), numpy on the host device).
Prints rows/s, GB/s and CPU s/GB per way, and bytes read against bytes
delivered from ferry_reader_stats for the rows reader; one JSON line per way
with --json FILE.

usage: rows.py DIR [--rows 131072] [--row-bytes 65536] [--batch 256]
       [--seconds 5] [--json FILE]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

import ferry


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def write_datasets(d, rows, row_bytes, ferry_tool):
    """DIR/big.npy ((rows, row_bytes/4) float32) and DIR/files/ (rows files of
    the same rows): written once, kept for the next run."""
    big = os.path.join(d, "big.npy")
    files = os.path.join(d, "files")
    cols = row_bytes // 4
    if not os.path.exists(big):
        a = np.lib.format.open_memmap(big + ".tmp", mode="w+", dtype="<f4", shape=(rows, cols))
        step = max(1, (256 << 20) // row_bytes)
        for i in range(0, rows, step):
            n = min(step, rows - i)
            a[i:i + n] = np.arange(i, i + n, dtype="<f4")[:, None]
        a.flush()
        del a
        os.rename(big + ".tmp", big)
    if not os.path.isdir(files):
        subprocess.run([ferry_tool, "gen", "--out", files + ".tmp", "--files", str(rows),
                        "--size", str(row_bytes), "--quiet"], check=True)
        os.rename(files + ".tmp", files)
    return big, files


def device_side():
    """(name, batch -> device tensor, sync)."""
    try:
        import torch
        if torch.cuda.is_available():
            torch.zeros(1, device="cuda")
            return ("torch", lambda b: torch.as_tensor(b, device="cuda"), torch.cuda.synchronize,
                    lambda a: torch.from_numpy(a).pin_memory().cuda(non_blocking=True))
    except ImportError:
        pass
    return "numpy", np.asarray, lambda: None, np.ascontiguousarray


def timed(name, seconds, next_batch, sync, row_bytes):
    """Runs next_batch for seconds after a first untimed call; a result row."""
    next_batch()
    sync()
    n, cpu0, t0 = 0, cpu_seconds(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        n += next_batch()
    sync()
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    gb = n * row_bytes / 1e9
    return {"way": name, "rows": n, "seconds": wall, "rows_per_s": n / wall,
            "gbps": gb / wall, "cpu_s_per_gb": cpu / gb if gb else None}


def through_reader(name, reader, make, seconds, sync, row_bytes):
    """A row for a ferry.Reader that never ends (epochs None)."""
    def one():
        b = reader.next_batch()
        make(b)
        return len(b)
    row = timed(name, seconds, one, sync, row_bytes)
    s = reader.stats()
    if s["bytes_delivered"]:
        row["bytes_read"], row["bytes_delivered"] = s.get("bytes_read"), s.get("bytes_delivered")
    return row


def through_mmap(big, batch, to_device, seconds, sync, row_bytes):
    a = np.load(big, mmap_mode="r")
    rng = np.random.default_rng(0)

    def one():
        idx = np.sort(rng.choice(a.shape[0], batch, replace=False))
        to_device(a[idx])
        return batch
    return timed("np_mmap", seconds, one, sync, row_bytes)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--rows", type=int, default=131072)
    p.add_argument("--row-bytes", type=int, default=65536)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--json")
    p.add_argument("--ferry", default=os.path.join(os.environ.get("FERRY_BUILD", "build"), "ferry"))
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    big, files = write_datasets(a.dir, a.rows, a.row_bytes, a.ferry)
    kind, make, sync, to_device = device_side()
    for path in [big] + [os.path.join(files, f) for f in sorted(os.listdir(files))]:
        with open(path, "rb") as f:  # warm: every byte in the page cache
            while f.read(1 << 24):
                pass
    results = []
    with ferry.Reader(files=[big], samples="rows", batch_size=a.batch, random_shuffle=True,
                      seed=1) as r:
        results.append(through_reader("rows", r, make, a.seconds, sync, a.row_bytes))
    with ferry.Reader(file_root=files, batch_size=a.batch, random_shuffle=True, seed=1) as r:
        results.append(through_reader("files", r, make, a.seconds, sync, a.row_bytes))
    results.append(through_mmap(big, a.batch, to_device, a.seconds, sync, a.row_bytes))
    print("%d rows x %d bytes, batch %d, tensors by %s" % (a.rows, a.row_bytes, a.batch, kind))
    for row in results:
        extra = ""
        if row.get("bytes_delivered"):
            extra = "  read/delivered %.3f" % (row["bytes_read"] / row["bytes_delivered"])
        print("%-8s %10.0f rows/s %8.2f GB/s %7.3f CPU s/GB%s"
              % (row["way"], row["rows_per_s"], row["gbps"], row["cpu_s_per_gb"] or 0, extra))
    if a.json:
        with open(a.json, "w") as f:
            for row in results:
                f.write(json.dumps(dict(row, batch=a.batch, row_bytes=a.row_bytes,
                                        total_rows=a.rows, tensors=kind)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
