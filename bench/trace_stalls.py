"""Where a run's copies stalled, from a FERRY_TRACE file (plain or .gz).

Prints, for the whole trace: when each lane's staging pool grew, by how
much and how long the growth took; the bytes issued to the device per 10 ms
(GB/s at issue time); the gaps of more than 0.3 ms in which no lane launched
a batch (a pool's growth, a registration, or an empty pipeline: no launch can
happen while CUDA's lock is held by cuMemHostRegister), the first 40 of them,
each marked g where a pool grew and r where the registrar mapped or
registered during it; the registrar's registrations (when each began, its
MiB and files, the time spent mapping and registering); the time threads
spent waiting for batches; and the files whose loads began in each 10 ms, by
path (buffered, direct, mapped).

With --loads N, the gaps are also summed by what ran beside them (g, r,
gr, or - for neither) up to the (N+1)th load's begin: over the first epoch
of a set of N files.

Usage: python3 bench/trace_stalls.py [--loads N] TRACE [TRACE...]
(e.g. FERRY_TRACE=t.csv ferry read --root DIR --epochs 2, then this)
"""
import collections
import csv
import gzip
import sys

MS = 1_000_000


def rows_of(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        return list(csv.DictReader(f))


def growths(rows, at):
    """Each growth as (begin, end, lane, MiB); a lane grows one block at a
    time, so its "growing" row is the begin of its next "grow" (traces before
    2026-12-06 have none: begin None)."""
    began = {}
    out = []
    for r in rows:
        if r["event"] == "growing":
            began[r["lane"]] = at(r)
        elif r["event"] == "grow":
            out.append((began.pop(r["lane"], None), at(r), r["lane"], int(r["bytes"]) >> 20))
    return out


def growth_line(g):
    """end/lane/MiB/duration ("?" without a begin)."""
    start, end, lane, mib = g
    took = "?" if start is None else "%.1f" % ((end - start) / MS)
    return "%.1f/%s/%d/%s" % (end / MS, lane, mib, took)


def registrations(rows, at):
    """Each registration as (begin, end, MiB, files, mapping ns, registering
    ns), from its pinning, registering and pinned (or pin_failed) rows."""
    out, pinning, registering = [], None, None
    for r in rows:
        if r["event"] == "pinning":
            pinning = at(r)
        elif r["event"] == "registering":
            registering = at(r)
        elif r["event"] in ("pinned", "pin_failed") and pinning is not None:
            reg = registering if registering is not None else at(r)
            out.append((pinning, at(r), int(r["bytes"]) >> 20, int(r["offset"]), reg - pinning,
                        at(r) - reg))
            pinning = registering = None
    return out


def overlaps(spans, a, b):
    return any(s < b and e > a for s, e in spans)


def gaps_beside(rows, at, marked, loads):
    """The marked launch gaps that ended before the (loads+1)th load began,
    summed by what overlapped them."""
    begun = [at(r) for r in rows if r["event"] in ("buffered", "direct", "mapped")]
    end = begun[loads] if len(begun) > loads else at(rows[-1])
    count, ms = collections.Counter(), collections.Counter()
    for a, g, k in marked:
        if a + g <= end:
            count[k or "-"] += 1
            ms[k or "-"] += g / MS
    print("before load %d (%.1f ms), gaps by what ran beside them (count/ms): %s" % (
        loads + 1, end / MS, " ".join("%s %d/%.1f" % (k, count[k], ms[k]) for k in sorted(ms))))


def report(path, loads=None):
    rows = rows_of(path)
    if not rows:
        print("== %s: empty" % path)
        return
    t0 = int(rows[0]["time_ns"])
    at = lambda r: int(r["time_ns"]) - t0
    print("== %s: %d events over %.1f ms" % (path, len(rows), at(rows[-1]) / MS))
    grew = growths(rows, at)
    print("pool growth (ended at ms/lane/MiB/took ms):", " ".join(map(growth_line, grew)))
    issued = collections.Counter()
    for r in rows:
        if r["event"] == "copy":
            issued[at(r) // (10 * MS)] += int(r["bytes"])
    print("GB/s issued per 10 ms:",
          " ".join("%d:%.0f" % (b * 10, issued[b] / 1e9 / 0.01) for b in sorted(issued)))
    launches = sorted(at(r) for r in rows if r["event"] == "launch")
    gaps = [(a, b - a) for a, b in zip(launches, launches[1:]) if b - a > 0.3 * MS]
    regs = registrations(rows, at)
    grown = [(s, e) for s, e, *_ in grew if s is not None]
    registering = [(s, e) for s, e, *_ in regs]
    marked = [(a, g, ("g" if overlaps(grown, a, a + g) else "") +
               ("r" if overlaps(registering, a, a + g) else "")) for a, g in gaps]
    print("no launch for > 0.3 ms: %d times, %.1f ms in all:" % (len(gaps), sum(g for _, g in gaps) / MS),
          " ".join("%.1f+%.2f%s" % (a / MS, g / MS, k) for a, g, k in marked[:40]))
    if loads:
        gaps_beside(rows, at, marked, loads)
    print("registrations (began at ms/MiB/files/mapping ms/registering ms): %d," % len(regs),
          " ".join("%.1f/%d/%d/%.2f/%.2f" % (s / MS, mib, n, m / MS, g / MS)
                   for s, _, mib, n, m, g in regs[:40]))
    began, waited, waits = {}, 0, 0
    for r in rows:
        if r["event"] == "wait":
            began[r["thread"]] = at(r)
        elif r["event"] == "woke" and r["thread"] in began:
            waited += at(r) - began.pop(r["thread"])
            waits += 1
    print("waits for a batch: %d, %.1f ms in all" % (waits, waited / MS))
    loads = collections.Counter((at(r) // (10 * MS) * 10, r["event"]) for r in rows
                                if r["event"] in ("buffered", "direct", "mapped"))
    print("loads begun per 10 ms:", " ".join("%d:%s=%d" % (t, e, n) for (t, e), n in sorted(loads.items())))


if __name__ == "__main__":
    args = sys.argv[1:]
    loads = None
    if args[:1] == ["--loads"] and len(args) > 1 and args[1].isdigit():
        loads, args = int(args[1]), args[2:]
    if not args:
        sys.exit(__doc__)
    for p in args:
        report(p, loads)
