#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarise a bench run: dmirror-thp THP and 4K side by side (and the stock
test_hmm's 4K with BASELINE=stock), the copy ceiling, where the time went,
the targets, and a PNG of throughput against buffer size.

bench_report.py [RUN_DIR]   (default: the latest run)

The one reader of the bench's JSON (selftests/dmirror_thp_bench.c).
"""
import json
import os
import shutil
import subprocess
import sys

METRICS = ["to_dev", "to_sys", "rt", "fault", "lat_2m"]
PHASES = ["setup", "alloc", "copy", "pages", "finalize", "readback"]


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def index(doc):
    """{(size_mb, mode, metric): result} of a bench JSON."""
    out = {}
    for r in (doc or {}).get("results", []):
        out[(r["size_mb"], r["mode"], r["metric"])] = r
    return out



def cell(r):
    if not r:
        return "%16s" % "-"
    s = r["us_per_2mb"]
    return "%6.0f [%4.0f..%4.0f]" % (s["median"], s["min"], s["max"])


def main():
    cache = os.environ.get("DMIRROR_THP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
        "dmirror-thp")
    run = sys.argv[1] if len(sys.argv) > 1 else os.path.join(cache, "logs", "latest", "7.3")
    bench = load(os.path.join(run, "bench.json"))
    if not bench:
        sys.exit("dmirror-thp: error: no bench.json in %s (did the bench run finish?)" % run)
    stock = load(os.path.join(run, "stock.json"))
    b, s = index(bench), index(stock)
    meta = bench["meta"]

    print("# dmirror-thp bench, %s" % run)
    print("# clocksource %s (clock_getres %s ns), cpu %s, accel %s" % (
        meta.get("clocksource"), meta.get("clock_res_ns"), meta.get("cpu"),
        meta.get("accel")))
    print("# kernel %s, series %s; %d rounds after %d warm-up, median [min..max]" % (
        meta.get("kernel"), meta.get("series"), bench["iters"], bench["warmup"]))
    if bench.get("rounds_redone"):
        print("# %d round(s) run again: MIGRATE_TO_DEV left a page in system memory" %
              bench["rounds_redone"])
    # The in-kernel copy ceiling, measured at each size in the same run.
    limits = {}
    for c in bench.get("ceiling_us_per_2mb", []):
        k, u = c["copy"]["median"], c["to_user"]["median"]
        print("# %4s MB copy ceiling: copy_highpage %.0f, copy to user %.0f us per 2 MB" % (
            c["size_mb"], k, u))
        limits[c["size_mb"]] = {"to_dev": k + u, "to_sys": k, "rt": 2 * k + u, "fault": k}

    sizes = sorted({k[0] for k in b})
    print()
    print("us per 2 MB  %-5s %-7s %18s %18s %18s %7s %8s" % (
        "MB", "metric", "stock 4K" if stock else "", "dmirror-thp 4K",
        "dmirror-thp THP", "THP/4K", "ceiling"))
    for size in sizes:
        for m in METRICS:
            thp, k4, st = b.get((size, "thp", m)), b.get((size, "4k", m)), s.get((size, "4k", m))
            # The bench's own figures: medians over the rounds of each
            # round's ratio and share (not a ratio of medians).
            ratio = "%6.2fx" % thp["thp_4k"] if thp and "thp_4k" in thp else "%7s" % "-"
            share = ("%7.0f%%" % (100 * thp["ceiling_share"])
                     if thp and "ceiling_share" in thp else "%8s" % "")
            print("            %-5s %-7s %18s %18s %18s %7s %s" % (
                size, m, cell(st) if stock else "", cell(k4), cell(thp), ratio, share))

    phases = bench.get("phases_us_per_2mb", [])
    if phases:
        print("\nphases, us per 2 MB (THP | 4K)")
        print("  %-5s %-7s" % ("MB", "path") + "".join(" %15s" % p for p in PHASES))
        ph = {(p["size_mb"], p["mode"], p["path"]): p for p in phases}
        for size in sizes:
            for path in ("to_dev", "to_sys", "fault"):
                t, k = ph.get((size, "thp", path)), ph.get((size, "4k", path))
                if not t or not k:
                    continue
                print("  %-5s %-7s" % (size, path) +
                      "".join(" %6.0f | %6.0f" % (t[p], k[p]) for p in PHASES))

    orders = bench.get("orders", [])
    if orders:
        # The folio-order sweep: the gain grows with the order.
        print("\nfolio orders, %s MB each: us per 2 MB, median [min..max]; x4K is 4K's time over the order's" %
              orders[0]["size_mb"])
        print("  %-8s %18s %18s %18s %18s %7s %7s %16s %s" % (
            "folio", "to_dev", "to_sys", "round trip", "CPU fault", "rt x4K",
            "flt x4K", "fault us/folio", "moves whole"))
        for o in orders:
            name = "%d kB" % o["folio_kb"] if o["order"] else "4K"
            lat = o["lat_folio_us"]
            whole = "%d of %d" % (o["moves_whole"], o["moves"]) if o["order"] else "-"
            print("  %-8s %18s %18s %18s %18s %6.2fx %6.2fx %16s %s" % (
                name, cell({"us_per_2mb": o["to_dev"]}), cell({"us_per_2mb": o["to_sys"]}),
                cell({"us_per_2mb": o["rt"]}), cell({"us_per_2mb": o["fault"]}),
                o["rt_x4k"], o["fault_x4k"],
                "%.0f [%.0f..%.0f]" % (lat["median"], lat["min"], lat["max"]), whole))
        oph = bench.get("orders_phases_us_per_2mb", [])
        if oph:
            print("\n  phases by order, us per 2 MB")
            print("  %-8s %-7s" % ("folio", "path") + "".join(" %9s" % p for p in PHASES))
            for p in oph:
                name = "%d kB" % p["folio_kb"] if p["order"] else "4K"
                print("  %-8s %-7s" % (name, p["path"]) +
                      "".join(" %9.0f" % p[ph] for ph in PHASES))
        grows = bench.get("orders_gain_grows", {})
        for k, what in (("rt", "round-trip"), ("fault", "CPU-fault")):
            if k in grows:
                print("  target: the %s gain over 4K grows with the order: %s" % (
                    what, "met" if grows[k] else "missed"))

    targets = bench.get("targets", [])
    if targets:
        print("\ntargets")
        for t in targets:
            v = t["value"]
            fig = "%.0f%%" % (100 * v) if "ceiling" in t["target"] else "%.2fx" % v
            print("  %-5s %-46s %-6s %s" % (t["size_mb"], t["target"],
                                            "met" if t["met"] else "missed", fig))
        print("  %d of %d met" % (sum(t["met"] for t in targets), len(targets)))

    # The plot: GiB/s of the round trip and of the fault path by size.
    if not shutil.which("gnuplot"):
        return
    dat = os.path.join(run, "bench-plot.dat")
    with open(dat, "w") as f:
        f.write("# MB thp_rt 4k_rt stock_rt thp_fault 4k_fault ceiling_rt\n")
        for size in sizes:
            def gib(idx, mode, m):
                r = idx.get((size, mode, m))
                return r["gib_s"] if r else float("nan")
            limit = limits.get(size, {})
            crt = 2.0 / 1024 / (limit["rt"] / 1e6) if "rt" in limit else float("nan")
            f.write("%s %g %g %g %g %g %g\n" % (
                size, gib(b, "thp", "rt"), gib(b, "4k", "rt"), gib(s, "4k", "rt"),
                gib(b, "thp", "fault"), gib(b, "4k", "fault"), crt))
    png = os.path.join(run, "bench.png")
    script = """set terminal pngcairo size 900,560 noenhanced
set output "%s"
set title "dmirror-thp: migration throughput by buffer size (%s)"
set xlabel "buffer size (MB)"
set ylabel "GiB/s"
set logscale x 2
set key left top
set grid
plot "%s" using 1:7 with lines dashtype 2 title "round-trip copy ceiling", \\
     "" using 1:2 with linespoints title "THP round trip", \\
     "" using 1:3 with linespoints title "4K round trip", \\
     "" using 1:4 with linespoints title "stock test_hmm 4K round trip", \\
     "" using 1:5 with linespoints title "THP CPU fault", \\
     "" using 1:6 with linespoints title "4K CPU fault"
""" % (png, meta.get("accel"), dat)
    subprocess.run(["gnuplot"], input=script.encode(), check=True)
    print("\nplot: %s" % png)


if __name__ == "__main__":
    main()
