"""A randomized sweep of `ferry read --verify` over settings ferry accepts.

Not part of `make test` (minutes, and timing-dependent; test_reader_settings_sweep
is the fixed sweep there, over files too small for the zero-copy path): run it
by hand after a change to the engine, the loaders or the zero-copy path, on any
build (a sanitizer build's ferry too). Each trial draws FERRY_* settings from
their accepted ranges, a dataset (mixed dtypes, byte orders and layouts;
big-endian and Fortran-order 5 MiB files, which the device converts; small,
large, rows) and a way to read it (files one by one, or the reader with random
batch, epochs, shuffling, rows, regions, prefetch), and fails on anything but
exit 0 with every byte verified. A first version of it found, on 2026-12-08,
converted files verified wrong while the zero-copy registrar held the lanes'
launches (the fix and its deterministic test: tests/test_convert_held.c).

Usage: /usr/bin/python3 tests/verify_sweep.py [--ferry build/ferry]
           [--trials 200] [--seed 1] [--device host] [--dir DIR]
Prints each failing trial's settings and command; exits 1 if any failed.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

SETTINGS = {
    'FERRY_CHUNK_SIZE': ['4k', '64k', '2M', '16M'],
    'FERRY_THREADS': ['1', '2', '3', '16', '64'],
    'FERRY_LANES': ['1', '2', '4', '16'],
    'FERRY_MAX_BUFFERS': ['1', '2', '3', '8', '128'],
    'FERRY_PIN_BUDGET': ['0', '1M', '5M', '9M', '1G'],
    'FERRY_PIN_PACE': ['0', '1', '50', '100'],
    'FERRY_PIN_RESERVE': ['0', '1G', '100G'],
    'FERRY_IO': ['posix', 'uring', 'auto'],
    'FERRY_ODIRECT': ['0', '1', 'auto'],
    'FERRY_CACHE_BUDGET': ['0', '8M', '1G'],
}

# name: ferry gen's arguments. 'mix' files differ in dtype: read one a batch.
DATASETS = {
    'mix': ['--files', '30', '--size', '5M', '--mix'],
    'small': ['--files', '300', '--size', '16k'],
    'big': ['--files', '6', '--size', '9M'],
    'rows': ['--files', '4', '--shape', '64x1000'],
    'swapped': ['--files', '12', '--shape', '64x20480', '--big-endian'],
    'fortran': ['--files', '12', '--shape', '64x20480', '--fortran'],
    'c2': ['--files', '12', '--shape', '64x20480'],
}
TWO_D = ('swapped', 'fortran', 'c2')


def make_datasets(ferry, root):
    for name, args in DATASETS.items():
        subprocess.run([ferry, 'gen', '--out', os.path.join(root, name), '--quiet'] + args,
                       check=True)


def reader_command(rnd, ferry, path, ds):
    cmd = [ferry, 'read', '--root', path, '--verify', '--quiet',
           '--batch', str(1 if ds == 'mix' else rnd.choice([1, 2, 3, 8])),
           '--epochs', str(rnd.choice([1, 2, 3]))]
    if rnd.random() < 0.5:
        cmd.append(rnd.choice(['--shuffle', '--shuffle-dataset']))
    if ds in TWO_D + ('rows',) and rnd.random() < 0.4:
        cmd.append('--rows')
    elif ds in TWO_D and rnd.random() < 0.5:
        a, b = rnd.randint(0, 60), rnd.randint(0, 20000)
        cmd += ['--roi-start', '%d,%d' % (a, b),
                '--roi-end', '%d,%d' % (a + rnd.randint(1, 8), b + rnd.randint(1, 9000)),
                '--oob', rnd.choice(['pad', 'trim'])]
    if rnd.random() < 0.3:
        cmd += ['--prefetch', str(rnd.choice([1, 2, 5, 64]))]
    if rnd.random() < 0.3:
        cmd += ['--threads', str(rnd.choice([1, 2, 7]))]
    if rnd.random() < 0.2:
        cmd.append('--pad-last-batch')
    return cmd


def trial(rnd, ferry, root, device):
    env = dict(os.environ, FERRY_DEVICE=device)
    drawn = {k: rnd.choice(v) for k, v in SETTINGS.items() if rnd.random() < 0.6}
    env.update(drawn)
    ds = rnd.choice(sorted(DATASETS))
    path = os.path.join(root, ds)
    if rnd.random() < 0.25:
        names = sorted(os.listdir(path))[:rnd.randint(1, 12)]
        cmd = [ferry, 'read', '--verify', '--quiet'] + [os.path.join(path, n) for n in names]
    else:
        cmd = reader_command(rnd, ferry, path, ds)
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rc, out = 'timed out after 300 s', ''
    if rc == 0 and 'ERROR' not in out and 'runtime error' not in out:
        return True
    print('FAIL (%s): %s %s' % (rc, ' '.join('%s=%s' % kv for kv in sorted(drawn.items())),
                                ' '.join(cmd)))
    print('    ' + out[-1500:].replace('\n', '\n    '))
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--ferry', default='build/ferry')
    ap.add_argument('--trials', type=int, default=200)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--device', default='host')
    ap.add_argument('--dir', help='where the datasets go (default: a temporary folder)')
    a = ap.parse_args()
    root = a.dir or tempfile.mkdtemp(prefix='ferry-sweep-')
    try:
        make_datasets(a.ferry, root)
        rnd = random.Random(a.seed)
        failed = sum(not trial(rnd, a.ferry, root, a.device) for _ in range(a.trials))
    finally:
        if not a.dir:
            shutil.rmtree(root, ignore_errors=True)
    print('verify sweep: %d trials, %d failed (seed %d, %s)' % (a.trials, failed, a.seed,
                                                                  a.ferry))
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
