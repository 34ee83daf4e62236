#!/usr/bin/env python3
"""Merges the parts bench/run.sh wrote into results.json, results.md and chart.png.

usage: report.py --out DIR --machine NAME [--note TEXT ...] PART.json ...

Each part is a `ferry bench --json`, `python_alternatives.py` or
`python_reader.py` document. results.json: {"machine", "date", "device",
"device_kinds", "ceilings" (the best of the parts), "ceilings_by_workload",
"reader_ceilings" (the read-only ceiling of each file set and cache that the
reader rows are measured against, from the C reader's parts), "notes", "runs"};
the repeats of a reader row (bench/run.sh --repeats) are merged into one run
of medians with their spread, and a file set's ceiling is the median of its
parts' (report_reader.py);
runs without a ratio_to_ceiling get it from their workload's ceilings: the
reader rows (report_reader.py) from reader_ceilings, the other Python ones
from pinned_h2d when warm, storage_direct when cold; reader rows also get
ratio_to_pinned_h2d. chart.png needs matplotlib, else gnuplot; without either
it is skipped with a note; reader.png needs matplotlib. Uses only the standard
library otherwise.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import report_reader

CEILINGS = ("pinned_h2d_gbps", "storage_direct_gbps", "page_cache_gbps", "read_only_gbps",
            "read_only_files_per_s")


def load_parts(paths, notes):
    parts = []
    for p in paths:
        try:
            with open(p) as f:
                parts.append((p, json.load(f)))
        except (OSError, ValueError) as e:
            notes.append("part %s unreadable: %s" % (os.path.basename(p), e))
    return parts


def merge_ceilings(parts):
    """Per workload: the best of its parts; overall: the best of all."""
    by_workload, best = {}, dict.fromkeys(CEILINGS)
    for _, doc in parts:
        name = (doc.get("dataset") or {}).get("name")
        for key in CEILINGS:
            v = (doc.get("ceilings") or {}).get(key)
            if v is None:
                continue
            w = by_workload.setdefault(name, dict.fromkeys(CEILINGS))
            w[key] = max(v, w[key] or 0)
            best[key] = max(v, best[key] or 0)
    return best, by_workload


def fill_ratio(run, by_workload):
    if run.get("ratio_to_ceiling") is not None or not run.get("available") or not run.get("gbps"):
        return
    if report_reader.is_reader_run(run):
        return  # report_reader.fill: to the read-only ceiling
    c = by_workload.get(run.get("workload")) or {}
    ceiling = c.get("storage_direct_gbps" if run.get("cache") == "cold" else "pinned_h2d_gbps")
    if ceiling:
        run["ratio_to_ceiling"] = run["gbps"] / ceiling


def first_device(parts):
    devices = [d.get("device") for _, d in parts if d.get("device")]
    gpu = [d.get("device") for _, d in parts if d.get("device_kind") == "cuda" and d.get("device")]
    return (gpu or devices or [None])[0]


def merge(parts, machine, extra_notes):
    best, by_workload = merge_ceilings(parts)
    reader_ceilings = report_reader.ceilings(parts)
    notes, runs = list(extra_notes), []
    for _, doc in parts:
        for n in doc.get("notes") or []:
            if n not in notes:
                notes.append(n)
        for run in doc.get("runs") or []:
            fill_ratio(run, by_workload)
            runs.append(run)
    runs = report_reader.merge_repeats(runs)
    report_reader.fill(runs, reader_ceilings)
    dates = sorted(d.get("date") for _, d in parts if d.get("date"))
    return {
        "machine": machine,
        "date": dates[0] if dates else None,
        "device": first_device(parts),
        "device_kinds": sorted({d["device_kind"] for _, d in parts if d.get("device_kind")}),
        "reader_ceilings": report_reader.as_list(reader_ceilings),
        "ferry_version": next((d["ferry_version"] for _, d in parts if d.get("ferry_version")), None),
        "ceilings": best,
        "ceilings_by_workload": by_workload,
        "notes": notes,
        "parts": [os.path.basename(p) for p, _ in parts],
        "runs": runs,
    }


# ---- results.md ----

def fmt(v, digits=2):
    if v is None:
        return "n/a"
    return "%.*f" % (digits, v)


def row(run):
    return "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        run.get("tool"), run.get("backend"), run.get("workload"),
        run.get("cache") + (" (%s)" % run["cold_method"] if run.get("cold_method") else ""),
        run.get("threads"), fmt(run.get("gbps")), fmt(run.get("files_per_s"), 0),
        fmt(run.get("cpu_s_per_gb"), 3), fmt(run.get("ratio_to_ceiling")),
        (run.get("note") or "").replace("|", "/"))


HEADER = ("| tool | backend | workload | cache | threads | GB/s | files/s | CPU s/GB | "
          "ratio to ceiling | note |\n|---|---|---|---|---|---|---|---|---|---|")


def best_runs(runs):
    """The fastest available run of each (tool, backend, workload, cache), and
    one unavailable run for groups with none available."""
    groups = {}
    for r in runs:
        key = (r.get("tool"), r.get("backend"), r.get("workload"), r.get("cache"))
        cur = groups.get(key)
        if cur is None or (r.get("available") and (not cur.get("available")
                                                  or (r.get("gbps") or 0) > (cur.get("gbps") or 0))):
            groups[key] = r
    return list(groups.values())


def ceilings_row(name, c):
    return "| %s | %s | %s | %s | %s | %s |" % (
        name, fmt(c.get("pinned_h2d_gbps")), fmt(c.get("storage_direct_gbps")),
        fmt(c.get("page_cache_gbps")), fmt(c.get("read_only_gbps")),
        fmt(c.get("read_only_files_per_s"), 0))


def ceilings_table(doc):
    lines = ["| workload | pinned_h2d GB/s | storage_direct GB/s | page_cache GB/s | "
             "read_only GB/s | read_only files/s |", "|---|---|---|---|---|---|"]
    for name, c in sorted(doc["ceilings_by_workload"].items(), key=lambda kv: str(kv[0])):
        lines.append(ceilings_row(name, c))
    lines.append(ceilings_row("**best**", doc["ceilings"]))
    return "\n".join(lines)


def series(runs, name):
    return [r for r in runs if r.get("series") == name]


def markdown(doc):
    runs = doc["runs"]
    main = series(runs, "matrix") + series(runs, "python")
    out = ["# ferry bench: %s" % doc["machine"], ""]
    if report_reader.host_device(doc):
        out += ["**No GPU: the host device stood in (copies are memcpy). These numbers say "
                "nothing about a GPU; they show that the bench runs.**", ""]
    out += ["- date: %s" % doc["date"], "- device: %s" % doc["device"],
            "- ferry: %s" % doc["ferry_version"], ""]
    out += ["- note: %s" % n for n in doc["notes"]]
    out += ["", "## Ceilings", "", ceilings_table(doc), "",
            "Ratios are to pinned_h2d for warm runs and to storage_direct for cold runs, "
            "each of the run's own workload; the reader's are to read_only (below). "
            "page_cache reads through ferry's posix IO layer in 1 MiB reads; read_only is "
            "plain open, fstat, read, close of whole files."]
    if main:
        out += ["", "## Best of each tool, backend, workload and cache", "", HEADER]
        out += [row(r) for r in sorted(best_runs(main), key=sort_key)]
    out += report_reader.markdown(doc)
    for title, name, key in (("Throughput vs file size", "size_scaling", by_file_size),
                             ("Throughput vs threads", "thread_scaling", by_threads)):
        if series(runs, name):
            out += ["", "## %s" % title, "", HEADER]
            out += [row(r) for r in sorted(series(runs, name), key=key)]
    if main:
        out += ["", "## Every run of the matrix", "", HEADER]
        out += [row(r) for r in main]
    out += report_reader.every_run(doc)
    return "\n".join(out) + "\n"


def by_file_size(r):
    return (r.get("tool"), (r.get("bytes") or 0) / (r.get("files") or 1))


def by_threads(r):
    return (r.get("tool"), r.get("threads") or 0)


def sort_key(r):
    order = {"large": 0, "medium": 1, "small": 2}
    return (order.get(r.get("workload"), 9), str(r.get("workload")), r.get("cache") != "warm",
            -(r.get("gbps") or 0))


# ---- chart.png ----

TOOLS_SHOWN = ("ferry", "tuned_pread", "naive_c", "cufile_per_file", "numpy_torch",
               "cupy_load", "dali")


def best_by_tool(runs, cache):
    """{workload: {tool: best GB/s}} over backends and threads."""
    out = {}
    for r in runs:
        if r.get("cache") != cache or not r.get("available") or r.get("gbps") is None:
            continue
        w = out.setdefault(r["workload"], {})
        w[r["tool"]] = max(w.get(r["tool"], 0), r["gbps"])
    return out


def size_points(runs, tool):
    pts = []
    for r in series(runs, "size_scaling"):
        if r.get("tool") == tool and r.get("available"):
            size = r["bytes"] / r["files"] if r.get("files") else None
            if size:
                pts.append((size, r["gbps"]))
    best = {}
    for size, gbps in pts:
        best[round(size)] = max(best.get(round(size), 0), gbps)
    return sorted(best.items())


def thread_points(runs, tool):
    best = {}
    for r in series(runs, "thread_scaling"):
        if r.get("tool") == tool and r.get("available"):
            best[r["threads"]] = max(best.get(r["threads"], 0), r["gbps"])
    return sorted(best.items())


def chart_matplotlib(doc, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = doc["runs"]
    fig, axes = plt.subplots(2, 2, figsize=(14, 9))
    for ax, cache in zip(axes[0], ("warm", "cold")):
        data = best_by_tool(series(runs, "matrix") + series(runs, "python"), cache)
        workloads = sorted(data, key=lambda w: sort_key({"workload": w}))
        tools = [t for t in TOOLS_SHOWN if any(t in data[w] for w in workloads)]
        width = 0.8 / max(1, len(tools))
        for i, tool in enumerate(tools):
            xs = [j + i * width for j in range(len(workloads))]
            ax.bar(xs, [data[w].get(tool, 0) for w in workloads], width, label=tool)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(workloads))])
        ax.set_xticklabels(workloads)
        key = "pinned_h2d_gbps" if cache == "warm" else "storage_direct_gbps"
        if doc["ceilings"].get(key):
            ax.axhline(doc["ceilings"][key], color="k", linestyle="--", label=key)
        ax.set_title("%s cache: best GB/s of each tool" % cache)
        ax.set_ylabel("GB/s")
        ax.legend(fontsize=7)
    for tool in ("ferry", "tuned_pread"):
        pts = size_points(runs, tool)
        if pts:
            axes[1][0].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=tool)
        pts = thread_points(runs, tool)
        if pts:
            axes[1][1].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=tool)
    axes[1][0].set_xscale("log", base=2)
    axes[1][0].set_title("warm: GB/s vs file size (bytes)")
    axes[1][1].set_title("warm: GB/s vs threads")
    for ax in axes[1]:
        ax.set_ylabel("GB/s")
        ax.legend(fontsize=7)
    fig.suptitle("ferry bench: %s (%s)" % (doc["machine"], doc["date"]))
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def chart_gnuplot(doc, path):
    with tempfile.TemporaryDirectory() as workdir:
        draw_gnuplot(doc, path, workdir)


def draw_gnuplot(doc, path, workdir):
    runs = doc["runs"]
    data = best_by_tool(series(runs, "matrix") + series(runs, "python"), "warm")
    workloads = sorted(data, key=lambda w: sort_key({"workload": w}))
    tools = [t for t in TOOLS_SHOWN if any(t in data[w] for w in workloads)]
    bars = os.path.join(workdir, "chart_bars.dat")
    with open(bars, "w") as f:
        for w in workloads:
            f.write(w + " " + " ".join("%g" % data[w].get(t, 0) for t in tools) + "\n")
    sizes = os.path.join(workdir, "chart_sizes.dat")
    with open(sizes, "w") as f:
        for size, gbps in size_points(runs, "ferry"):
            f.write("%d %g\n" % (size, gbps))
    plots = ", ".join("'%s' using %d:xtic(1) title '%s'" % (bars, i + 2, t)
                      for i, t in enumerate(tools))
    script = ["set terminal pngcairo size 1200,500" if has_pngcairo() else
              "set terminal png size 1200,500",
              "set output '%s'" % path, "set termoption noenhanced", "set multiplot layout 1,2",
              "set style data histograms", "set style fill solid", "set ylabel 'GB/s'",
              "set yrange [0:*]",
              "set title 'warm cache: best GB/s of each tool'", "set key top left"]
    script += ["plot " + plots if tools else "plot 0 notitle"]
    script += ["set style data linespoints", "set logscale x 2", "set format x '%.0b%BB'",
               "set title 'ferry, warm: GB/s vs file size (bytes)'",
               "plot '%s' using 1:2 with linespoints title 'ferry'" % sizes
               if size_points(runs, "ferry") else "plot 0 notitle", "unset multiplot"]
    subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def has_pngcairo():
    try:
        out = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
        return "pngcairo" in out.stdout + out.stderr
    except OSError:
        return False


def make_chart(doc, outdir):
    path = os.path.join(outdir, "chart.png")
    try:
        chart_matplotlib(doc, path)
        return "chart.png drawn with matplotlib"
    except ImportError:
        pass
    except Exception as e:  # noqa: BLE001
        return "chart.png skipped: matplotlib failed: %s" % e
    if shutil.which("gnuplot"):
        try:
            chart_gnuplot(doc, path)
            return "chart.png drawn with gnuplot (matplotlib not importable)"
        except (OSError, subprocess.CalledProcessError) as e:
            return "chart.png skipped: gnuplot failed: %s" % (getattr(e, "stderr", "") or e)
    return "chart.png skipped: neither matplotlib nor gnuplot is available"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--machine", required=True)
    ap.add_argument("--note", action="append", default=[])
    ap.add_argument("parts", nargs="*")
    args = ap.parse_args(argv)
    notes = list(args.note)
    os.makedirs(args.out, exist_ok=True)
    doc = merge(load_parts(args.parts, notes), args.machine, notes)
    doc["notes"].append(make_chart(doc, args.out))
    reader_chart = report_reader.chart(doc, args.out)
    if reader_chart:
        doc["notes"].append(reader_chart)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(markdown(doc))
    print("report: %d runs from %d parts; %s" % (len(doc["runs"]), len(doc["parts"]),
                                                "; ".join(n for n in doc["notes"]
                                                          if ".png" in n)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
