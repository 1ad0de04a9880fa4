#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The report of make migrate-bench: the kernels of one run side by side.

migrate_report.py RUN_DIR

Reads RUN_DIR/kernels and each kernel's migrate*.json (one per pass, from
selftests/mm_migrate_bench.c) and prints, per folio size and way of
moving (mbind(MPOL_MF_MOVE), move_pages()), the time per 2 MB of a move
of the buffer to node 1 and back on each kernel, over every round of every
pass, the median and the fastest round, how many rounds kept the folios
whole, and the ratio of the last kernel to the first.  It judges nothing: the bench's own result line says
whether every round kept its folios whole.
"""
import glob
import json
import os
import statistics
import sys


def load(kdir):
    rows = {}
    meta = None
    for path in sorted(glob.glob(os.path.join(kdir, "migrate*.json"))):
        with open(path) as f:
            doc = json.load(f)
        meta = doc
        for o in doc["orders"]:
            if o["skip"]:
                continue
            # us per 2 MB moved.
            per = 2.0 / doc["size_mb"]
            o["to1_us"] = [t * per for t in o["to1_us"]]
            o["to0_us"] = [t * per for t in o["to0_us"]]
            key = (o["kb"], o.get("method", "mbind"))
            r = rows.setdefault(key, {"to1": [], "to0": [],
                                      "whole": 0, "rounds": 0})
            r["to1"] += o["to1_us"]
            r["to0"] += o["to0_us"]
            r["whole"] += o["whole"]
            r["rounds"] += o["rounds"]
    return meta, rows


def table(kernels, data, stat, title):
    sizes = sorted({key for _, rows in data.values() for key in rows})
    head = "%8s %-10s" % ("folio", "by")
    for k in kernels:
        head += " %22s" % k
    if len(kernels) > 1:
        head += "   %s / %s" % (kernels[-1], kernels[0])
    print(head + "   (%s)" % title)
    for kb, method in sizes:
        line = "%6dkB %-10s" % (kb, method)
        val = []
        for k in kernels:
            r = data[k][1].get((kb, method))
            if not r:
                line += " %22s" % "-"
                val.append(None)
                continue
            v1, v0 = stat(r["to1"]), stat(r["to0"])
            val.append((v1, v0))
            line += " %9.0f %9.0f %2d/%-2d" % (v1, v0, r["whole"],
                                               r["rounds"])
        if len(kernels) > 1 and val[0] and val[-1]:
            line += "   %.2f %.2f" % (val[-1][0] / val[0][0],
                                      val[-1][1] / val[0][1])
        print(line)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: migrate_report.py RUN_DIR")
    run = sys.argv[1]
    with open(os.path.join(run, "kernels")) as f:
        kernels = f.read().split()
    data = {k: load(os.path.join(run, k)) for k in kernels}
    meta = next((m for m, _ in data.values() if m), None)
    if not meta:
        sys.exit("no migrate*.json in %s" % run)
    print("moves of %d MB, node 0 -> 1 and 1 -> 0, us per 2 MB over every "
          "round, rounds that kept the folios whole (%s)"
          % (meta["size_mb"], run))
    # The median, and the fastest round: a row whose rounds fall into
    # steps (PMD moves under TCG) is read by both.
    for stat, title in ((statistics.median, "median"), (min, "fastest round")):
        print()
        table(kernels, data, stat, title)
    return 0


if __name__ == "__main__":
    sys.exit(main())
