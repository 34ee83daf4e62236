"""Means of an ab_first_epoch.sh log, per build (A, B, C...), run and size.

Reads the log's traced first epochs ("== A round 1, copy_path, 64M: ...
(31.0 GB/s)") and bench/pin_pace.sh's rows (epoch 1, epoch 2, epochs 2-8,
each in GB/s) and prints, for each, the number of runs, the mean and every
value, A's row above B's (and C's...), so that builds compare at a glance.

Usage: python3 tests/gpu/diag/ab_means.py LOG...
"""
import collections
import re
import sys

TRACED = re.compile(r"== ([A-Z]) round \d+, (copy_path|default), (\w+): .*\(([\d.]+) GB/s\)")
SIDE = re.compile(r"== ([A-Z]) round \d+, bench/pin_pace.sh")
SIZE = re.compile(r"== \d+ files of (\w+),")
ROW = re.compile(r"(copy_path|default)\s+epoch 1\s+([\d.]+) GB/s.*?epoch 2\s+([\d.]+) GB/s"
                 r".*?epochs 2-\d+\s+([\d.]+) GB/s")


def collect(paths):
    rows = collections.defaultdict(list)
    for path in paths:
        side = size = None
        for line in open(path):
            m = TRACED.match(line)
            if m:
                rows[(m[3] + " traced e1", m[2], m[1])].append(float(m[4]))
                side = None
                continue
            if m := SIDE.match(line):
                side = m[1]
            elif m := SIZE.match(line):
                size = m[1]
            elif (m := ROW.match(line)) and side and size:
                for label, value in zip(("e1", "e2", "e2-8"), m.groups()[1:]):
                    rows[(f"{size} {label}", m[1], side)].append(float(value))
    return rows


def main(paths):
    rows = collect(paths)
    if not rows:
        sys.exit("ab_means.py: no rows of any build in " + " ".join(paths))
    print(f"{'what':16} {'run':10} side  n  mean GB/s  values")
    for key in sorted(rows):
        v = rows[key]
        print(f"{key[0]:16} {key[1]:10} {key[2]:4} {len(v):2} {sum(v) / len(v):10.1f}  "
              + " ".join(f"{x:.1f}" for x in v))


if __name__ == "__main__":
    main(sys.argv[1:])
