#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The one reader of lcov's tracefiles (make coverage).

coverage.py table FILES MODDIR NAME=INFO...
    A Markdown table per column NAME (a tracefile INFO each, in order):
    per file of FILES (vm/coverage.files) and of dmirror-thp.ko (the
    sources under MODDIR), lines and branches hit / total and functions
    entered / total ("no data": the boot has no profile of the file, as
    for test_hmm.ko in a boot that never loads it); then per
    device-private function (below), lines and branches hit / total in
    each column.

coverage.py missed INFO SOURCE...
    The lines of SOURCE (paths as the tracefile names them, or a suffix
    of one) that INFO saw instrumented and never ran, as FILE:LINE.

A device-private function is one whose body names device-private memory
or the migrate_vma interface: a line between its first line and the next
function's that matches DEVICE_RE.  That is a reading of the source, not
of the tests, so a function the tests never enter is still listed.

The tracefile format (geninfo(1)): per source file an SF:PATH record,
then FN:LINE,NAME, FNDA:COUNT,NAME, DA:LINE,COUNT and
BRDA:LINE,BLOCK,BRANCH,TAKEN ("-" for a branch whose block never ran),
closed by end_of_record.
"""
import os
import re
import sys

DEVICE_RE = re.compile(r'device_private|is_device_private|zone_device|'
                       r'MIGRATE_PFN_|migrate_vma|migrate_device|'
                       r'dev_pagemap|pgmap|softleaf_is_device')


class Source:
    def __init__(self, path):
        self.path = path
        self.fn_line = {}      # name -> first line
        self.fn_hits = {}      # name -> count
        self.lines = {}        # line -> count
        self.branches = {}     # (line, block, branch) -> taken


def read_info(path):
    """{source path: Source} of one tracefile."""
    out = {}
    cur = None
    with open(path) as f:
        for raw in f:
            rec = raw.rstrip('\n')
            key, _, val = rec.partition(':')
            if key == 'SF':
                cur = out.setdefault(val, Source(val))
            elif rec == 'end_of_record':
                cur = None
            elif cur is None:
                continue
            elif key == 'FN':
                line, name = val.split(',', 1)
                cur.fn_line[name] = int(line)
            elif key == 'FNDA':
                count, name = val.split(',', 1)
                cur.fn_hits[name] = cur.fn_hits.get(name, 0) + int(count)
            elif key == 'DA':
                line, count = val.split(',')[:2]
                line = int(line)
                cur.lines[line] = cur.lines.get(line, 0) + int(count)
            elif key == 'BRDA':
                line, block, branch, taken = val.split(',')
                k = (int(line), block, branch)
                t = 0 if taken == '-' else int(taken)
                cur.branches[k] = cur.branches.get(k, 0) + t
    return out


def find(info, suffix):
    """The Source of INFO whose path ends with /SUFFIX, or None."""
    for path, src in info.items():
        if path == suffix or path.endswith('/' + suffix):
            return src
    return None


def ratio(hit, total):
    if not total:
        return '-'
    return '%d/%d (%.0f%%)' % (hit, total, 100.0 * hit / total)


def line_stats(src, lo=0, hi=1 << 30):
    lines = [c for n, c in src.lines.items() if lo <= n < hi]
    brs = [t for (n, _, _), t in src.branches.items() if lo <= n < hi]
    return (sum(1 for c in lines if c), len(lines),
            sum(1 for t in brs if t), len(brs))


def functions(src):
    """[(name, first line, end line)] of SRC, in the file's order."""
    fns = sorted(src.fn_line.items(), key=lambda x: x[1])
    out = []
    for i, (name, line) in enumerate(fns):
        end = fns[i + 1][1] if i + 1 < len(fns) else 1 << 30
        out.append((name, line, end))
    return out


def device_functions(src):
    try:
        with open(src.path, errors='replace') as f:
            text = f.read().split('\n')
    except OSError:
        return []
    out = []
    for name, lo, hi in functions(src):
        if any(DEVICE_RE.search(text[n - 1])
               for n in range(lo, min(hi, len(text) + 1))):
            out.append((name, lo, hi))
    return out


def table(files, moddir, columns):
    infos = [(name, read_info(path)) for name, path in columns]
    names = [n for n, _ in infos]
    # The sources: the listed kernel files, then the module's.
    wanted = [l.strip() for l in open(files)
              if l.strip() and not l.startswith('#')]
    mod = set()
    for _, info in infos:
        mod.update(p for p in info if p.startswith(moddir.rstrip('/') + '/'))
    rows = [(w, w) for w in wanted] + \
        [(p, 'dmirror-thp.ko: ' + os.path.relpath(p, moddir))
         for p in sorted(mod)]

    print('| file | ' + ' | '.join('%s: lines | %s: branches | %s: functions'
                                    % (n, n, n) for n in names) + ' |')
    print('|---|' + '---|---|---|' * len(names))
    for key, label in rows:
        cells = []
        for _, info in infos:
            src = find(info, key)
            if not src:
                cells += ['no data'] * 3
                continue
            lh, lt, bh, bt = line_stats(src)
            fh = sum(1 for n in src.fn_line if src.fn_hits.get(n, 0))
            cells += [ratio(lh, lt), ratio(bh, bt), ratio(fh, len(src.fn_line))]
        print('| %s | %s |' % (label, ' | '.join(cells)))

    print()
    print('Device-private functions (a body that names device-private '
          'memory, a pgmap or migrate_vma): lines hit/total, branches '
          'hit/total per column.')
    print()
    print('| function | ' + ' | '.join('%s: lines | %s: branches' % (n, n)
                                        for n in names) + ' |')
    print('|---|' + '---|---|' * len(names))
    for key, label in rows:
        # The function list comes from the last column, whose tracefile
        # has every profiled file of the run.
        src = find(infos[-1][1], key)
        if not src:
            continue
        for name, lo, hi in device_functions(src):
            cells = []
            for _, info in infos:
                s = find(info, key)
                if not s:
                    cells += ['-', '-']
                    continue
                lh, lt, bh, bt = line_stats(s, lo, hi)
                cells += [ratio(lh, lt), ratio(bh, bt)]
            print('| %s %s() | %s |' % (label.split(': ')[-1], name,
                                         ' | '.join(cells)))


def missed(info_path, sources):
    info = read_info(info_path)
    for s in sources:
        src = find(info, s)
        if not src:
            print('%s: no data' % s, file=sys.stderr)
            continue
        for n in sorted(src.lines):
            if not src.lines[n]:
                print('%s:%d' % (s, n))


def main(argv):
    if len(argv) >= 4 and argv[0] == 'table':
        table(argv[1], argv[2], [a.split('=', 1) for a in argv[3:]])
    elif len(argv) >= 3 and argv[0] == 'missed':
        missed(argv[1], argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv[1:])
