#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Several runs' boots as one run, reported as one.

merge_runs.py OUT RUN_DIR...

A suite too long for one boot (the mm selftests' every category in the
debug flavour under TCG) runs in parts: a category list a run
(make mm-selftests MM_CATEGORIES=...), a kernel or both of a pair a run.
This puts every boot of the RUN_DIRs, in their order, into the new run
folder OUT (which must not exist): per kernel, each boot's results and
console, renamed NAME-rI for the Ith RUN_DIR, listed in OUT/<kernel>/boots.
The kernels, in the order they first appear, their pairs, their patch
state and the expectations are the last RUN_DIR's that has them; the runs
must be of one flavour, and a kernel's patch state the same in every run.
Then it writes OUT/summary.txt (vm/report/results.py) and
OUT/mm-compare.txt (vm/report/mm_report.py), prints their last lines and
exits with results.py's status.
"""
import filecmp
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import results  # noqa: E402


def words(path):
    try:
        with open(path) as f:
            return f.read().split()
    except OSError:
        return []


def lines(path):
    try:
        with open(path) as f:
            return [l for l in f if l.strip()]
    except OSError:
        return []


def report(out, script, name):
    """Run vm/report/SCRIPT on OUT into OUT/NAME, print its last line;
    return its exit status."""
    path = os.path.join(out, name)
    with open(path, "w") as f:
        rc = subprocess.call([sys.executable, os.path.join(HERE, script), out],
                             stdout=f)
    print("%s: %s" % (name, (lines(path) or ["(empty)"])[-1].strip()))
    return rc


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: merge_runs.py OUT RUN_DIR...")
    out, runs = sys.argv[1], sys.argv[2:]
    if os.path.exists(out):
        sys.exit("%s exists: give a new folder" % out)
    flavours = {" ".join(words(os.path.join(r, "flavour"))) for r in runs}
    if len(flavours) != 1:
        sys.exit("runs of different flavours: %s" % ", ".join(sorted(flavours)))
    kernels, pairs, boots = [], [], {}
    for i, run in enumerate(runs, 1):
        names = words(os.path.join(run, "kernels"))
        if not names:
            sys.exit("%s: no kernels file: not a run folder" % run)
        for l in lines(os.path.join(run, "pairs")):
            if l not in pairs:
                pairs.append(l)
        for k in names:
            if k not in kernels:
                kernels.append(k)
            kdir = os.path.join(run, k)
            for b in results.read_boots(kdir):
                boots.setdefault(k, []).append((kdir, i, b))
    os.makedirs(out)
    for f in ("flavour", "expect.list"):
        have = [r for r in runs if os.path.exists(os.path.join(r, f))]
        if have:
            shutil.copy(os.path.join(have[-1], f), os.path.join(out, f))
    with open(os.path.join(out, "kernels"), "w") as f:
        f.write(" ".join(kernels) + "\n")
    if pairs:
        with open(os.path.join(out, "pairs"), "w") as f:
            f.write("".join(pairs))
    for k in kernels:
        kout = os.path.join(out, k)
        os.makedirs(kout)
        states = [os.path.join(r, k, "patches") for r in runs
                  if os.path.exists(os.path.join(r, k, "patches"))]
        for s in states[1:]:
            if not filecmp.cmp(states[0], s, shallow=False):
                sys.exit("%s and %s differ: %s was not the same tree in "
                         "every run" % (states[0], s, k))
        if states:
            shutil.copy(states[-1], os.path.join(kout, "patches"))
        with open(os.path.join(kout, "boots"), "w") as f:
            for kdir, i, b in boots.get(k, []):
                name = "%s-r%d" % (b[0], i)
                for kind in ("results", "console"):
                    src = os.path.join(kdir, "%s-%s.log" % (kind, b[0]))
                    if os.path.exists(src):
                        shutil.copy(src, os.path.join(
                            kout, "%s-%s.log" % (kind, name)))
                f.write(" ".join([name] + b[1:]) + "\n")
    st = report(out, "results.py", "summary.txt")
    report(out, "mm_report.py", "mm-compare.txt")
    return st


if __name__ == "__main__":
    sys.exit(main())
