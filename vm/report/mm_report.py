#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The mm selftests of a run, kernel against kernel, test by test.

mm_report.py RUN_DIR

Compares each pair of RUN_DIR/pairs ("BASE KERNEL" a line: a kernel and
upstream's own code for it, written by vm/check.sh); without pairs, the
run's first kernel with each other one.  The tests are the programs' own
results under run_vmtests.sh, as vm/report/results.py wrote them
(RUN_DIR/<kernel>/subtests.tsv).  Prints, per kernel, how many tests
passed, failed and skipped, then every test whose result differs.  Exit
status 3 if a test that passes on the base fails on the other kernel, or
if a kernel of a pair ran none.  vm/report/results.py counts the same
regressions as failures (compare() below).
"""
import os
import re
import sys


def load(run, kernel):
    """{(suite, program, test, n): "ok"|"xfail"|"not ok"|"skip"}, n counting a
    name a program repeats; {} if the kernel ran none."""
    res = {}
    path = os.path.join(run, kernel, "subtests.tsv")
    if not os.path.exists(path):
        return res
    with open(path) as f:
        for line in f:
            suite, prog, test, status = line.rstrip("\n").split("\t")
            # Figures in a name (pagemap_ioctl's "Extra pages 42") are
            # not the test's: N, so that two runs name it alike.
            key = (suite, prog, re.sub(r"[0-9]+", "N", test))
            n = 1
            while key + (n,) in res:
                n += 1
            res[key + (n,)] = status
    return res


def pairs(run):
    path = os.path.join(run, "pairs")
    if os.path.exists(path):
        with open(path) as f:
            return [tuple(l.split()) for l in f if l.strip()]
    with open(os.path.join(run, "kernels")) as f:
        kernels = f.read().split()
    return [(kernels[0], k) for k in kernels[1:]]


def compare(base, other):
    """(every (key, base's, other's) that differs, those that pass on the
    base and fail on the other)."""
    diff = [(key, base.get(key, "absent"), other.get(key, "absent"))
            for key in sorted(set(base) | set(other))
            if base.get(key, "absent") != other.get(key, "absent")]
    return diff, [d for d in diff
                  if d[1] in ("ok", "xfail") and d[2] == "not ok"]


def name(key):
    suite, prog, test, n = key
    return "%s %s: %s%s" % (suite, prog, test, "" if n == 1 else " (#%d)" % n)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: mm_report.py RUN_DIR")
    run = sys.argv[1]
    rc = 0
    for base, k in pairs(run):
        res = {x: load(run, x) for x in (base, k)}
        if not res[base] and not res[k]:
            continue
        print("mm selftests (run_vmtests.sh), %s against %s:" % (k, base))
        for x in (base, k):
            c = {s: sum(1 for v in res[x].values() if v == s)
                 for s in ("ok", "xfail", "not ok", "skip")}
            print("  %-16s %5d passed (%d of them kselftest's XFAIL), %4d failed, %4d skipped"
                  % (x, c["ok"] + c["xfail"], c["xfail"], c["not ok"],
                     c["skip"]))
            if not res[x]:
                rc = 3
        diff, regressions = compare(res[base], res[k])
        print("  %d tests differ, %d pass on %s and fail on %s"
              % (len(diff), len(regressions), base, k))
        for key, a, b in diff:
            mark = ("REGRESSION" if a in ("ok", "xfail") and b == "not ok"
                    else "")
            print("  %-10s %-6s -> %-6s %s" % (mark, a, b, name(key)))
        if regressions:
            rc = 3
    return rc


if __name__ == "__main__":
    sys.exit(main())
