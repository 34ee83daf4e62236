"""The reader part of bench/report.py (issue 18): the read-only ceiling of each
file set, the reader rows' ratios to it, the reader table, the targets and
reader.png.

Rows come from `ferry bench --tools reader --series reader` parts (tool
"reader": the C reader; "read_only": the cold ceiling) and
bench/python_reader.py parts (python_reader_stacked, python_reader_per_sample,
torch_dataloader, dali_reader). The ceiling of a (file set, cache) pair is the
read-only ceiling that the C part of that file set measured: warm, its
ceilings.read_only_*; cold, its read_only run (measured cold just before its
cold reader rows).

Repeats (bench/run.sh --repeats N runs each file set's C and Python parts N
times, alternating; python_reader.py --repeats N its rows): the runs of one
row (same tool, backend, file set, cache, batch size, threads or workers)
are merged into one by merge_repeats, each of its numbers the median of its
available runs' (for an even count, the mean of the middle two), with
`repeats` (how many), the min and max of files/s, GB/s and CPU s/GB, and
every run's files/s in `runs_files_per_s`; a file set's ceiling is likewise
the median of the ceilings its C parts measured.
"""
import os
import statistics

COLUMNS = (("reader", "C reader"), ("python_reader_stacked", "Python stacked"),
           ("python_reader_per_sample", "Python per-sample"),
           ("torch_dataloader", "DataLoader (best W)"), ("dali_reader", "DALI"))
READER_TOOLS = {tool for tool, _ in COLUMNS}


def by_key(doc):
    """doc's reader_ceilings (a list, as results.json keeps them) by (workload, cache)."""
    return {(c["workload"], c["cache"]): c for c in doc.get("reader_ceilings") or []}


def as_list(ceils):
    return [dict(c, workload=k[0], cache=k[1]) for k, c in sorted(ceils.items(),
                                                                  key=lambda kv: str(kv[0]))]


def is_reader_run(run):
    return run.get("series") == "reader" or run.get("tool") in READER_TOOLS


# ---- repeats: medians ----

# What makes runs the same row (their repeats).
IDENTITY = ("tool", "backend", "workload", "series", "cache", "cold_method", "threads", "callers",
            "chunk", "batch_size", "workers")
SPREAD = ("files_per_s", "gbps", "cpu_s_per_gb")
MEDIANS = SPREAD + ("seconds", "bytes", "files", "first_batch_s")


def values_of(runs, key):
    """Every run's values of key: a merged run's list of them, else its value."""
    out = []
    for r in runs:
        listed = r.get("runs_" + key)
        if listed is not None:
            out += listed
        elif r.get(key) is not None:
            out.append(r[key])
    return out


def merged(runs):
    """One row of several runs of it (see the module's docstring)."""
    ok = [r for r in runs if r.get("available")]
    if not ok:
        return dict(runs[0])
    out = dict(ok[len(ok) // 2])
    for key in MEDIANS:
        vals = values_of(ok, key)
        out[key] = statistics.median(vals) if vals else None
        if key in SPREAD:
            out[key + "_min"] = min(vals) if vals else None
            out[key + "_max"] = max(vals) if vals else None
            out["runs_" + key] = vals
    out["repeats"] = len(values_of(ok, "files_per_s"))
    out["verified"] = all(r.get("verified") for r in ok)
    for key in ("ratio_to_ceiling", "ratio_to_pinned_h2d", "ceiling_gbps"):
        out[key] = None  # recomputed from the medians (fill)
    failed = [r.get("note") for r in runs if not r.get("available")]
    out["note"] = "median of %d runs%s; %s" % (
        out["repeats"], " (%d more unavailable: %s)" % (len(failed), failed[0]) if failed else "",
        out.get("note") or "")
    return out


def merge_repeats(runs):
    """runs with the repeats of each reader row merged into one row (in the
    place of its first run); other runs as they are."""
    groups, order = {}, []
    for r in runs:
        if not is_reader_run(r):
            order.append(("run", r))
            continue
        key = tuple(r.get(k) for k in IDENTITY)
        if key not in groups:
            groups[key] = []
            order.append(("group", key))
        groups[key].append(r)
    return [item if kind == "run" else (merged(groups[item]) if len(groups[item]) > 1
                                        else groups[item][0])
            for kind, item in order]


def median_ceiling(found):
    """One ceiling of the ceilings several parts measured: the medians of
    gbps and files/s, with their min and max and how many there were."""
    if len(found) == 1:
        return found[0]
    out = dict(found[0])
    for key in ("gbps", "files_per_s", "pinned_h2d_gbps"):
        vals = [c[key] for c in found if c.get(key) is not None]
        out[key] = statistics.median(vals) if vals else None
        if key != "pinned_h2d_gbps":
            out[key + "_min"] = min(vals) if vals else None
            out[key + "_max"] = max(vals) if vals else None
    out["repeats"] = len(found)
    return out


def ceilings(parts):
    """{(workload, cache): {gbps, files_per_s, pinned_h2d_gbps, file_bytes,
    threads, note}} from the C reader parts (the median of several parts'
    of one file set: see median_ceiling)."""
    found = {}
    for _, doc in parts:
        runs = doc.get("runs") or []
        if not any(r.get("tool") == "reader" for r in runs):
            continue
        name = (doc.get("dataset") or {}).get("name")
        ds = doc.get("dataset") or {}
        c = doc.get("ceilings") or {}
        common = {"pinned_h2d_gbps": c.get("pinned_h2d_gbps"),
                  "file_bytes": ds["bytes"] / ds["files"] if ds.get("files") else None}
        found.setdefault((name, "warm"), []).append(
            dict(common, gbps=c.get("read_only_gbps"), files_per_s=c.get("read_only_files_per_s"),
                 note=(doc.get("ceiling_notes") or {}).get("read_only")))
        for r in runs:
            if r.get("tool") == "read_only" and r.get("cache") == "cold":
                found.setdefault((name, "cold"), []).append(
                    dict(common, gbps=r.get("gbps"), files_per_s=r.get("files_per_s"),
                         note=r.get("note")))
    return {key: median_ceiling(cs) for key, cs in found.items()}


def fill(runs, ceils):
    """Python rows get the ratio to the read-only ceiling of their file set and
    cache; every reader row the ratio to the pinned copy ceiling too."""
    for run in runs:
        if not is_reader_run(run) or run.get("tool") == "read_only":
            continue
        c = ceils.get((run.get("workload"), run.get("cache"))) or {}
        if run.get("ceiling_gbps") is None and c.get("gbps"):
            run["ceiling"] = "read_only"
            run["ceiling_gbps"] = c["gbps"]
        if run.get("ratio_to_ceiling") is None and run.get("available") and run.get("gbps") \
                and run.get("ceiling_gbps"):
            run["ratio_to_ceiling"] = run["gbps"] / run["ceiling_gbps"]
            if run.get("repeats"):
                run["ratio_to_ceiling_min"] = run["gbps_min"] / run["ceiling_gbps"]
                run["ratio_to_ceiling_max"] = run["gbps_max"] / run["ceiling_gbps"]
        pinned = c.get("pinned_h2d_gbps")
        run["ratio_to_pinned_h2d"] = run["gbps"] / pinned if run.get("available") and \
            run.get("gbps") and pinned else None


# ---- the table ----

def size_label(nbytes):
    if not nbytes:
        return "?"
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= div:
            return "%g %s" % (round(nbytes / div, 1), unit)
    return "%d B" % nbytes


def count(v):
    if v is None:
        return "n/a"
    if v >= 1e6:
        return "%.2fM" % (v / 1e6)
    if v >= 1e3:
        return "%.1fK" % (v / 1e3)
    return "%.0f" % v


def num(v, digits=2):
    return "n/a" if v is None else "%.*f" % (digits, v)


def best(runs, tool, workload, cache, batch):
    """The fastest available run of tool in the cell, else an unavailable one."""
    cell = [r for r in runs if r.get("tool") == tool and r.get("workload") == workload
            and r.get("cache") == cache and r.get("batch_size") == batch]
    ok = [r for r in cell if r.get("available")]
    if ok:
        return max(ok, key=lambda r: r.get("files_per_s") or 0)
    if cell:
        return cell[0]
    # A tool that cannot run here says so once per file set and cache.
    return next((r for r in runs if r.get("tool") == tool and r.get("workload") == workload
                 and r.get("cache") == cache), None)


def spread(run, key="files_per_s", show=count):
    """' (min–max)' of a merged row's runs, else ''."""
    if not run.get("repeats") or run.get(key + "_min") is None:
        return ""
    return " (%s–%s)" % (show(run[key + "_min"]), show(run[key + "_max"]))


def cell(run, notes):
    if run is None:
        return "–"
    if not run.get("available"):
        note = run.get("note") or "not measured"
        if note not in notes:
            notes.append(note)
        return "n/a [%d]" % (notes.index(note) + 1)
    text = "%s%s · %s · **%s** · %s" % (count(run.get("files_per_s")), spread(run),
                                        num(run.get("gbps")), num(run.get("ratio_to_ceiling")),
                                        num(run.get("cpu_s_per_gb"), 3))
    if run.get("tool") == "torch_dataloader" and run.get("workers"):
        text += " (W=%d)" % run["workers"]
    return text


def cells(runs):
    """The table's rows: (file bytes, workload, cache, batch), sorted."""
    keys = set()
    for r in runs:
        if is_reader_run(r) and r.get("batch_size"):
            keys.add((r.get("workload"), r.get("cache"), r.get("batch_size")))
    return keys


def table(doc):
    runs = [r for r in doc["runs"] if is_reader_run(r)]
    ceils = by_key(doc)
    cols = [(t, h) for t, h in COLUMNS
            if t != "dali_reader" or any(r.get("tool") == t and r.get("available") for r in runs)]
    head = "| file size | cache | batch | read-only ceiling | " + \
        " | ".join(h for _, h in cols) + " |"
    lines = [head, "|" + "---|" * (4 + len(cols))]
    notes = []
    order = sorted(cells(runs), key=lambda k: (
        (ceils.get((k[0], "warm")) or {}).get("file_bytes") or 0, k[1] != "warm", k[2]))
    for workload, cache, batch in order:
        c = ceils.get((workload, cache)) or {}
        ceiling = "%s%s · %s" % (count(c.get("files_per_s")), spread(c), num(c.get("gbps"))) \
            if c.get("gbps") else "n/a"
        size = size_label((ceils.get((workload, "warm")) or {}).get("file_bytes"))
        row = [cell(best(runs, tool, workload, cache, batch), notes) for tool, _ in cols]
        lines.append("| %s (%s) | %s | %d | %s | %s |" % (size, workload, cache, batch, ceiling,
                                                          " | ".join(row)))
    lines += [""] + ["[%d] %s" % (i + 1, n) for i, n in enumerate(notes)]
    if not any(r.get("tool") == "dali_reader" and r.get("available") for r in runs):
        lines.append("")
        lines.append("DALI: not measured (%s)." % next(
            (r.get("note") for r in runs if r.get("tool") == "dali_reader"),
            "bench/python_reader.py did not run"))
    return "\n".join(lines)


# ---- the targets of issue 18 ----

def by_size(doc, nbytes):
    """The workload whose files hold nbytes of payload (within 1%), or None."""
    for (workload, cache), c in (by_key(doc)).items():
        if cache == "warm" and c.get("file_bytes") and abs(c["file_bytes"] / nbytes - 1) < 0.01:
            return workload
    return None


def value(doc, tool, workload, batch, key="ratio_to_ceiling"):
    r = best(doc["runs"], tool, workload, "warm", batch) if workload else None
    return r.get(key) if r and r.get("available") else None


def verdict(v, goal):
    if v is None:
        return "not measured"
    return "met" if v >= goal else "missed by %.2f" % (goal - v)


def target_stacked(doc, label, nbytes, goal):
    w = by_size(doc, nbytes)
    v = value(doc, "python_reader_stacked", w, 32)
    return "| %s warm, Python stacked, batch 32: >= %.1f of read-only | %s | %s |" % (
        label, goal, num(v), verdict(v, goal))


def target_c_vs_python(doc):
    worst = None
    for workload, cache, batch in cells(doc["runs"]):
        c = value(doc, "reader", workload, batch, "gbps") if cache == "warm" else None
        p = value(doc, "python_reader_stacked", workload, batch, "gbps") if cache == "warm" \
            else None
        if c and p and (worst is None or c / p < worst[0]):
            worst = (c / p, workload, batch)
    if worst is None:
        return "| C reader >= Python stacked, every warm cell | n/a | not measured |"
    return "| C reader >= Python stacked, every warm cell | worst C/Python %.2f (%s, batch %d) " \
        "| %s |" % (worst[0], worst[1], worst[2], verdict(worst[0], 1.0))


def target_batch4(doc):
    rows = []
    for key, c in sorted((by_key(doc)).items(),
                         key=lambda kv: kv[1].get("file_bytes") or 0):
        if key[1] != "warm":
            continue
        b4, b32 = value(doc, "reader", key[0], 4, "gbps"), value(doc, "reader", key[0], 32, "gbps")
        v = b4 / b32 if b4 and b32 else None
        rows.append("| %s warm, C reader batch 4 / batch 32: >= 0.8 | %s | %s |" % (
            size_label(c.get("file_bytes")), num(v), verdict(v, 0.8)))
    return rows


def target_large(doc):
    w = by_size(doc, 64 << 20)
    rows = []
    for tool, label in (("reader", "C reader"), ("python_reader_stacked", "Python stacked")):
        vals = [value(doc, tool, w, b, "ratio_to_pinned_h2d") for b in (1, 4, 32, 256)]
        vals = [v for v in vals if v is not None]
        v = min(vals) if vals else None
        rows.append("| 64 MiB warm, %s, every batch size: >= 0.9 of the pinned copy | %s | %s |"
                    % (label, "%s (worst batch)" % num(v) if v is not None else "n/a",
                       verdict(v, 0.9)))
    return rows


def targets(doc):
    lines = ["| target | measured | |", "|---|---|---|",
             target_stacked(doc, "128 KiB", 128 << 10, 0.8),
             target_stacked(doc, "16 KiB", 16 << 10, 0.6), target_c_vs_python(doc)]
    return "\n".join(lines + target_batch4(doc) + target_large(doc))


def host_device(doc):
    return any(k == "host" for k in doc.get("device_kinds") or [])


def markdown(doc):
    if not any(is_reader_run(r) for r in doc["runs"]):
        return []
    out = ["", "## Reader: batches against the read-only ceiling (issue 18)", ""]
    if host_device(doc):
        out += ["**The device is the host device (no GPU): copies are memcpy and the numbers "
                "below say nothing about a GPU.**", ""]
    out += [repeats_line(doc), "",
            "Each cell: files/s · GB/s · **ratio to the read-only ceiling** of the same files "
            "(measured in the same run: T threads open, fstat, read and close each whole file "
            "into private memory, no GPU, no ferry code) · CPU s/GB (user + system of the "
            "process; for the DataLoader its worker processes too). The ceiling cell is files/s "
            "· GB/s. Payload bytes only. C reader: ferry_reader_next, the batch as one stacked "
            "array; Python stacked: the Batch as one tensor (torch.as_tensor(batch, "
            "device=\"cuda\"), numpy on the host device); Python per-sample: torch.as_tensor on "
            "each sample; DataLoader: np.load in W workers, pin_memory, .cuda(non_blocking=True) "
            "per batch, the best W of those tried. Warm rows are timed from the first batch "
            "(its latency is in the list of every reader run below), cold rows read the files "
            "once from the start, as the ceiling's cold run.", "", table(doc), "",
            "### Targets (issue 18's, set for an H200; this run's device: %s; never asserted "
            "in tests)" % doc.get("device", "unknown"), "", targets(doc), ""]
    return out


def repeats_line(doc):
    """What each number of the reader's rows is: one run, or the median of several."""
    counts = sorted({r.get("repeats") or 1 for r in doc["runs"]
                     if is_reader_run(r) and r.get("available")})
    if counts in ([], [1]):
        return ("Each row is one run (bench/run.sh --repeats N makes each the median of N, "
                "with their spread).")
    return ("Each row is the median of %s runs of it (bench/run.sh --repeats, the C and Python "
            "parts alternating), and each ceiling the median of those its file set's C parts "
            "measured; files/s is followed by the (min–max) of those runs." % (
                " to ".join(str(n) for n in (counts[0], counts[-1])) if len(counts) > 1
                else counts[0]))


def run_row(run):
    return "| %s | %s | %s | %s | %s | %s | %s | %s | %s%s | %s | %s | %s | %s | %s | %s |" % (
        run.get("tool"), run.get("backend"), run.get("workload"), run.get("cache"),
        run.get("batch_size") or "", run.get("threads") or "", run.get("repeats") or 1,
        num(run.get("gbps")), num(run.get("files_per_s"), 0),
        spread(run, show=lambda v: num(v, 0)), num(run.get("cpu_s_per_gb"), 3),
        num(run.get("ratio_to_ceiling")), num(run.get("ratio_to_pinned_h2d")),
        num(run.get("first_batch_s"), 3), "yes" if run.get("verified") else "",
        (run.get("note") or "").replace("|", "/"))


def every_run(doc):
    runs = [r for r in doc["runs"] if is_reader_run(r)]
    if not runs:
        return []
    return ["", "## Every reader run", "",
            "| tool | backend | workload | cache | batch | threads / W | runs | GB/s | "
            "files/s (min–max) | CPU s/GB | ratio to read-only | ratio to pinned copy | "
            "first batch s | verified | note |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"] + [
                run_row(r) for r in runs]


# ---- reader.png ----

def chart(doc, outdir):
    """reader.png: per file set (warm), the ratio to the read-only ceiling
    against the batch size, a line per tool, the min and max of a row's
    repeats as error bars. matplotlib only."""
    runs = [r for r in doc["runs"] if is_reader_run(r) and r.get("cache") == "warm"]
    if not runs:
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "reader.png skipped: matplotlib not importable"
    ceils = by_key(doc)
    sets = sorted({r["workload"] for r in runs},
                  key=lambda w: (ceils.get((w, "warm")) or {}).get("file_bytes") or 0)
    fig, axes = plt.subplots(1, len(sets), figsize=(4.5 * len(sets), 4), squeeze=False)
    for ax, w in zip(axes[0], sets):
        for tool, label in COLUMNS:
            cells = sorted((b, best(runs, tool, w, "warm", b) or {})
                           for b in {r["batch_size"] for r in runs if r.get("workload") == w})
            pts = [(b, r) for b, r in cells if r.get("ratio_to_ceiling") is not None]
            if pts:
                ys = [r["ratio_to_ceiling"] for _, r in pts]
                # The spread of a row's repeats, as error bars (none for one run).
                err = [[y - r.get("ratio_to_ceiling_min", y) for y, (_, r) in zip(ys, pts)],
                       [r.get("ratio_to_ceiling_max", y) - y for y, (_, r) in zip(ys, pts)]]
                ax.errorbar([b for b, _ in pts], ys, yerr=err, marker="o", capsize=3,
                            label=label)
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        ax.axhline(1, color="k", linestyle="--", linewidth=0.8)
        c = ceils.get((w, "warm")) or {}
        if c.get("pinned_h2d_gbps") and c.get("gbps"):
            ax.axhline(c["pinned_h2d_gbps"] / c["gbps"], color="grey", linestyle=":",
                       linewidth=0.8, label="pinned copy ceiling")
        ax.set_title("%s files (%s), warm" % (size_label((ceils.get((w, "warm")) or {})
                                                         .get("file_bytes")), w))
        ax.set_xlabel("batch size")
        ax.set_ylabel("ratio to the read-only ceiling")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "reader.png"), dpi=100)
    return "reader.png drawn with matplotlib"
