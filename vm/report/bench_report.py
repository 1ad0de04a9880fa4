#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The bench's report: tables, targets and plots from what it measured.

bench_report.py KERNEL_DIR        one kernel's bench (KERNEL_DIR/bench.json,
                                  and stock.json with BASELINE=stock)
bench_report.py --compare RUN_DIR the kernels of one run side by side
                                  (RUN_DIR/kernels, RUN_DIR/<kernel>/...)

A run of several passes (vm/check.sh's PASSES: each kernel booted once per
pass, the kernels in turns) leaves bench-N.json and stock-N.json instead:
a kernel's report pools the rounds of every pass, and the comparison
judges each kernel against its baseline (vm/kernels/' bench-target:
PERCENT NAME) by the median of its passes' ratios, each pass's kernels
having run next to each other.

The one reader of the bench's JSON (selftests/dmirror_thp_bench.c, version
2: every round's time, every 2 MB region's fault latency, the phases, the
copy ceiling and the kpageflags witness).  The bench measures; this judges:
every target is here, printed "met" or "missed" with its figure.  Writes
report.txt, bench.csv and the plots (PNG, with gnuplot) next to the JSON.
"""
import copy
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

PATHS = ["to_dev", "to_sys", "rt", "fault"]
PHASES = ["setup", "alloc", "copy", "pages", "finalize", "readback"]
TCG_NOTE = (
    "QEMU/TCG: every figure is the emulator's.  Under TCG a copy costs a\n"
    "softmmu TLB lookup per access, string copies (rep movs) run as loops\n"
    "(the guest runs with -erms,-fsrm and clearcpuid=rep_good so that the\n"
    "kernel's copies use the same loops for THP and 4K), and a TLB flush or\n"
    "an LRU drain that reaches the other vCPU costs a vCPU round trip (a\n"
    "bench on one CPU keeps its mm's on that one).  The THP/4K ratios\n"
    "compare like with like; absolute GiB/s are not a CPU's.")


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        doc = json.load(f)
    if doc.get("version") != 2:
        sys.exit("dmirror-thp: error: %s is not a version 2 bench JSON" % path)
    return doc


def merge_rounds(a, b):
    """Add the rounds of one buffer of another pass, b, to a."""
    for k in ("to_dev_s", "to_sys_s", "fault_s", "lat_2m_us"):
        a[k] = a[k] + b[k]
    for k in ("rounds", "remade"):
        a[k] += b[k]
    for k in a["whole"]:
        a["whole"][k] += b["whole"][k]
    for p, phases in a.get("phases_ns", {}).items():
        for ph in phases:
            phases[ph] += b["phases_ns"][p][ph]


def merge(docs):
    """The passes of one kernel's bench as one document."""
    m = copy.deepcopy(docs[0])
    for d in docs[1:]:
        if ([s["size_mb"] for s in d["sizes"]] != [s["size_mb"] for s in m["sizes"]] or
                [o["order"] for o in d.get("orders", [])] !=
                [o["order"] for o in m.get("orders", [])]):
            sys.exit("dmirror-thp: error: the passes of one bench measured different buffers")
        m["iters"] += d["iters"]
        m["rounds_redone"] = m.get("rounds_redone", 0) + d.get("rounds_redone", 0)
        for w, c in d.get("khugepaged", {}).items():
            mc = m.setdefault("khugepaged", {}).setdefault(w, {})
            for k, v in c.items():
                mc[k] = mc.get(k, 0) + v
        for sa, sb in zip(m["sizes"], d["sizes"]):
            ca, cb = sa.get("ceiling_us_per_2mb"), sb.get("ceiling_us_per_2mb")
            if ca and cb:
                for k in ca:
                    ca[k] = ca[k] + cb[k]
            for mode, r in sa["modes"].items():
                merge_rounds(r, sb["modes"][mode])
        for oa, ob in zip(m.get("orders", []), d.get("orders", [])):
            merge_rounds(oa, ob)
    m["passes"] = len(docs)
    return m


def load_passes(kdir, name):
    """NAME.json of KERNEL_DIR, or its passes NAME-1.json, NAME-2.json...
    merged: (the document, [each pass's document]); (None, []) if none."""
    one = load(os.path.join(kdir, name + ".json"))
    if one:
        return one, [one]
    found = {}
    for path in glob.glob(os.path.join(kdir, name + "-*.json")):
        m = re.fullmatch(re.escape(name) + r"-(\d+)\.json", os.path.basename(path))
        if m:
            found[int(m.group(1))] = load(path)
    docs = [found[n] for n in sorted(found)]
    return (merge(docs), docs) if docs else (None, [])


def summary(v):
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


def per_2m(r, path):
    """us per 2 MB of each timed round of one buffer and path."""
    n2m = r["size_mb"] / 2.0
    if path == "rt":
        t = [a + b for a, b in zip(r["to_dev_s"], r["to_sys_s"])]
    else:
        t = r[path + "_s"]
    return [x * 1e6 / n2m for x in t]


def gib(us_2m):
    return 2.0 / 1024 / (us_2m / 1e6) if us_2m else float("nan")


def ratio(slow, fast, path):
    """slow's time over fast's: the median of the rounds' ratios (the two
    ran next to each other in each round); for lat_2m, of the medians."""
    if path == "lat_2m":
        return (statistics.median(slow["lat_2m_us"]) /
                statistics.median(fast["lat_2m_us"]))
    return statistics.median(a / b for a, b in zip(per_2m(slow, path),
                                                  per_2m(fast, path)))


def ceiling(size, path):
    """The ceiling of each round of one size for a path, us per 2 MB: to_dev
    copies into device memory and out to the mirror, the others once."""
    c = size.get("ceiling_us_per_2mb")
    if not c:
        return None
    k, u = c["copy"], c["to_user"]
    return {"to_dev": [a + b for a, b in zip(k, u)], "to_sys": k, "fault": k,
            "rt": [2 * a + b for a, b in zip(k, u)]}[path]


def ceiling_share(size, path):
    lim = ceiling(size, path)
    thp = size["modes"].get("thp")
    if not lim or not thp:
        return None
    return statistics.median(a / b for a, b in zip(lim, per_2m(thp, path)))


def cell(v):
    if not v:
        return "%20s" % "-"
    return "%6.0f [%5.0f..%5.0f]" % (v["median"], v["min"], v["max"])


def whole(r, path):
    """'' when every round left the folios whole, else 'k/n whole'."""
    if not r["order"]:
        return ""
    w = r["whole"]["fault" if path == "fault" else "to_dev"]
    return "" if w == r["rounds"] else " %d/%d whole" % (w, r["rounds"])


class Targets:
    def __init__(self):
        self.rows = []

    def add(self, where, what, value, want, fmt, at_most=False, fig=None):
        met = value <= want if at_most else value >= want
        self.rows.append((where, what, met, fig or fmt % value))

    def print(self, out):
        out.append("\ntargets")
        for where, what, met, fig in self.rows:
            out.append("  %-12s %-52s %-6s %s" % (where, what,
                                                  "met" if met else "missed", fig))
        out.append("  %d of %d met" % (sum(r[2] for r in self.rows), len(self.rows)))


def size_targets(t, size):
    thp, k4 = size["modes"].get("thp"), size["modes"].get("4k")
    mb = size["size_mb"]
    where = "%d MB" % mb
    if not thp or not k4:
        return
    if mb in (2, 8):
        for p in PATHS:
            t.add(where, "%s THP not slower than 4K" % p, ratio(k4, thp, p), 1.0, "%.2fx")
        if mb == 2:
            t.add(where, "to_dev THP/4K >= 3x", ratio(k4, thp, "to_dev"), 3.0, "%.2fx")
    elif mb in (64, 512):
        for p, want in (("rt", 2.5), ("to_dev", 2.0), ("to_sys", 2.0), ("fault", 5.0)):
            t.add(where, "%s THP/4K >= %gx" % (p, want), ratio(k4, thp, p), want, "%.2fx")
        t.add(where, "fault latency per 2 MB 4K/THP >= 5x",
              ratio(k4, thp, "lat_2m"), 5.0, "%.2fx")
        share = ceiling_share(size, "rt")
        if share is not None:
            t.add(where, "THP round trip >= 90% of the copy ceiling", 100 * share,
                  90, "%.0f%%")


def order_targets(t, orders):
    by = {o["order"]: o for o in orders}
    pmd = by.get(9)
    if not pmd or 0 not in by:
        return
    rt = {k: statistics.median(per_2m(o, "rt")) for k, o in by.items()}
    # One fault per folio: us per folio, the median of the regions' time
    # per folio.
    lat = {k: statistics.median(o["lat_2m_us"]) / (512 >> k) for k, o in by.items()}
    for order, want in ((8, 75), (4, 55)):
        if order in by:
            t.add("orders", "%d kB round trip >= %d%% of the PMD's throughput" %
                  (4 << order, want), 100 * rt[9] / rt[order], want, "%.0f%%")
    if 8 in by:
        t.add("orders", "1 MB fault per folio <= 60% of the PMD's",
              100 * lat[8] / lat[9], 60, "%.0f%%", at_most=True)
    ks = sorted(by)
    for path, name in (("rt", "round-trip"), ("fault", "CPU-fault")):
        gains = [ratio(by[0], by[k], path) for k in ks]
        grows = all(b >= a for a, b in zip(gains, gains[1:]))
        t.add("orders", "the %s gain over 4K grows with the order" % name,
              float(grows), 1.0, "", fig=" ".join("%.2fx" % g for g in gains))


def report_one(kdir, out, plots=True):
    bench = load_passes(kdir, "bench")[0]
    if not bench:
        sys.exit("dmirror-thp: error: no bench.json in %s (did the bench run finish?)" % kdir)
    stock = load_passes(kdir, "stock")[0]
    meta = bench["meta"]
    out.append("# dmirror-thp bench, %s" % kdir)
    out.append("# clocksource %s (clock_getres %s ns), cpu %s, accel %s, %s" % (
        meta.get("clocksource"), meta.get("clock_res_ns"), meta.get("cpu"),
        meta.get("accel"), "the bench on CPU %s alone" % meta["bench_cpu"]
        if meta.get("bench_cpu", "all") != "all" else "the bench on any CPU"))
    out.append("# kernel %s, series %s; %d rounds%s after %d warm-up; median [min..max]" % (
        meta.get("kernel"), meta.get("series"), bench["iters"],
        " in %d boots, each" % bench["passes"] if bench.get("passes", 1) > 1 else "",
        bench["warmup"]))
    if meta.get("accel") == "tcg":
        out += ["# " + l for l in TCG_NOTE.split("\n")]
    if bench.get("rounds_redone"):
        out.append("# %d round(s) run again: MIGRATE_TO_DEV left a page in system memory" %
                   bench["rounds_redone"])
    kh = bench.get("khugepaged")
    if kh:
        out.append("# khugepaged while the bench measured: %s" % "; ".join(
            "%s sweep %d pages collapsed, %d full scans" % (
                w, c["pages_collapsed"], c["full_scans"]) for w, c in kh.items()))
    for s in bench["sizes"]:
        c = s.get("ceiling_us_per_2mb")
        if c:
            out.append("# %4d MB copy ceiling: copy_highpage %.0f, copy to user %.0f us per 2 MB" % (
                s["size_mb"], statistics.median(c["copy"]), statistics.median(c["to_user"])))
    st = {s["size_mb"]: s for s in (stock or {}).get("sizes", [])}
    out.append("")
    out.append("us per 2 MB %-5s %-7s %20s %20s %20s %20s %7s %8s" % (
        "MB", "path", "test_hmm THP" if stock else "", "test_hmm 4K" if stock else "",
        "dmirror-thp THP", "dmirror-thp 4K", "THP/4K", "ceiling"))
    csv = ["size_mb,driver,mode,path,median,min,max,unit,rounds"]
    for s in bench["sizes"]:
        thp, k4 = s["modes"].get("thp"), s["modes"].get("4k")
        ss = st.get(s["size_mb"], {}).get("modes", {})
        for p in PATHS + ["lat_2m"]:
            def val(r):
                if not r:
                    return None
                return summary(r["lat_2m_us"] if p == "lat_2m" else per_2m(r, p))
            row = [(ss.get("thp"), "test_hmm", "thp"), (ss.get("4k"), "test_hmm", "4k"),
                   (thp, "dmirror-thp", "thp"), (k4, "dmirror-thp", "4k")]
            cells = []
            for r, drv, mode in row:
                v = val(r)
                cells.append(cell(v) + (whole(r, p) if r and p != "lat_2m" else "")
                             if r else ("%20s" % "" if drv == "test_hmm" and not stock else cell(None)))
                if v:
                    csv.append("%d,%s,%s,%s,%.6g,%.6g,%.6g,us_per_2MB,%d" % (
                        s["size_mb"], drv, mode, p, v["median"], v["min"], v["max"],
                        r["rounds"]))
            rat = "%6.2fx" % ratio(k4, thp, p) if thp and k4 else "%7s" % "-"
            share = ceiling_share(s, p) if p != "lat_2m" else None
            out.append("            %-5s %-7s %s %s %s" % (
                s["size_mb"], p, " ".join(cells), rat,
                "%7.0f%%" % (100 * share) if share is not None else ""))

    # Where the time went.
    out.append("\nphases, us per 2 MB (THP | 4K)")
    out.append("  %-5s %-7s" % ("MB", "path") + "".join(" %15s" % p for p in PHASES))
    for s in bench["sizes"]:
        thp, k4 = s["modes"].get("thp"), s["modes"].get("4k")
        if not thp or not k4 or "phases_ns" not in thp:
            continue
        n = s["size_mb"] / 2.0 * thp["rounds"]
        for p in ("to_dev", "to_sys", "fault"):
            out.append("  %-5s %-7s" % (s["size_mb"], p) + "".join(
                " %6.0f | %6.0f" % (thp["phases_ns"][p][ph] / 1e3 / n,
                                    k4["phases_ns"][p][ph] / 1e3 / n) for ph in PHASES))

    orders = bench.get("orders", [])
    if orders:
        by = {o["order"]: o for o in orders}
        mb = orders[0]["size_mb"]
        out.append("\nfolio orders, %d MB each: us per 2 MB; x4K is 4K's time over the order's" % mb)
        out.append("  %-8s %20s %20s %20s %20s %7s %7s %16s %s" % (
            "folio", "to_dev", "to_sys", "round trip", "CPU fault", "rt x4K",
            "flt x4K", "fault us/folio", "whole after"))
        for k in sorted(by):
            o = by[k]
            lat = [x / (512 >> k) for x in o["lat_2m_us"]]
            lv = summary(lat)
            w = o["whole"]
            out.append("  %-8s %s %s %s %s %6.2fx %6.2fx %16s %s" % (
                "%d kB" % o["folio_kb"] if k else "4K",
                cell(summary(per_2m(o, "to_dev"))), cell(summary(per_2m(o, "to_sys"))),
                cell(summary(per_2m(o, "rt"))), cell(summary(per_2m(o, "fault"))),
                ratio(by[0], o, "rt"), ratio(by[0], o, "fault"),
                "%.0f [%.0f..%.0f]" % (lv["median"], lv["min"], lv["max"]),
                "-" if not k else "migrate %d/%d, fault %d/%d%s" % (
                    w["to_dev"], o["rounds"], w["fault"], o["rounds"],
                    ", %d buffers made again" % o["remade"] if o["remade"] else "")))
            for p in ("to_dev", "to_sys", "fault"):
                csv.append("%d,dmirror-thp,order%d,%s,%.6g,%.6g,%.6g,us_per_2MB,%d" % (
                    mb, k, p, *[summary(per_2m(o, p))[x] for x in ("median", "min", "max")],
                    o["rounds"]))
        if "phases_ns" in orders[0]:
            out.append("\n  phases by order, us per 2 MB")
            out.append("  %-8s %-7s" % ("folio", "path") + "".join(" %9s" % p for p in PHASES))
            for k in sorted(by):
                o = by[k]
                n = mb / 2.0 * o["rounds"]
                for p in ("to_dev", "to_sys", "fault"):
                    out.append("  %-8s %-7s" % ("%d kB" % o["folio_kb"] if k else "4K", p) +
                               "".join(" %9.0f" % (o["phases_ns"][p][ph] / 1e3 / n)
                                       for ph in PHASES))

    t = Targets()
    for s in bench["sizes"]:
        size_targets(t, s)
    order_targets(t, orders)
    t.print(out)

    with open(os.path.join(kdir, "bench.csv"), "w") as f:
        f.write("\n".join(csv) + "\n")
    if plots and shutil.which("gnuplot"):
        plot_sizes(kdir, bench, stock)
        if orders:
            plot_orders(kdir, bench)
        out.append("\nplots: %s/bench.png%s" % (kdir, ", bench-orders.png" if orders else ""))
    return bench


def gnuplot(script):
    subprocess.run(["gnuplot"], input=script.encode(), check=True)


def median_gib(r, path):
    return gib(statistics.median(per_2m(r, path))) if r else float("nan")


def plot_sizes(kdir, bench, stock):
    st = {s["size_mb"]: s["modes"] for s in (stock or {}).get("sizes", [])}
    dat = os.path.join(kdir, "bench-plot.dat")
    with open(dat, "w") as f:
        f.write("# MB thp_rt 4k_rt stock_thp_rt stock_4k_rt thp_fault 4k_fault ceiling_rt\n")
        for s in bench["sizes"]:
            m, sm = s["modes"], st.get(s["size_mb"], {})
            lim = ceiling(s, "rt")
            f.write("%d %g %g %g %g %g %g %g\n" % (
                s["size_mb"], median_gib(m.get("thp"), "rt"), median_gib(m.get("4k"), "rt"),
                median_gib(sm.get("thp"), "rt"), median_gib(sm.get("4k"), "rt"),
                median_gib(m.get("thp"), "fault"), median_gib(m.get("4k"), "fault"),
                gib(statistics.median(lim)) if lim else float("nan")))
    gnuplot("""set terminal pngcairo size 1000,560 noenhanced
set output "%s/bench.png"
set title "migration throughput by buffer size (%s, %s)"
set xlabel "buffer size (MB)"
set ylabel "GiB/s"
set logscale x 2
set key outside right top
set grid
plot "%s" using 1:8 with lines dashtype 2 title "round-trip copy ceiling", \\
     "" using 1:2 with linespoints title "dmirror-thp THP round trip", \\
     "" using 1:3 with linespoints title "dmirror-thp 4K round trip", \\
     "" using 1:4 with linespoints title "test_hmm THP round trip", \\
     "" using 1:5 with linespoints title "test_hmm 4K round trip", \\
     "" using 1:6 with linespoints title "dmirror-thp THP CPU fault", \\
     "" using 1:7 with linespoints title "dmirror-thp 4K CPU fault"
""" % (kdir, bench["meta"].get("kernel", "").split()[0], bench["meta"].get("accel"), dat))


def plot_orders(kdir, bench):
    by = {o["order"]: o for o in bench["orders"]}
    dat = os.path.join(kdir, "bench-orders.dat")
    with open(dat, "w") as f:
        f.write("# folio_kb rt_x4k fault_x4k\n")
        for k in sorted(by):
            f.write("%d %g %g\n" % (by[k]["folio_kb"], ratio(by[0], by[k], "rt"),
                                    ratio(by[0], by[k], "fault")))
    gnuplot("""set terminal pngcairo size 900,520 noenhanced
set output "%s/bench-orders.png"
set title "gain over 4K by folio size (%s)"
set xlabel "folio size (kB)"
set ylabel "4K's time over the folio size's"
set logscale x 2
set key outside right top
set grid
plot "%s" using 1:2 with linespoints title "round trip", \\
     "" using 1:3 with linespoints title "CPU fault"
""" % (kdir, bench["meta"].get("kernel", "").split()[0], dat))


# ---- the like-for-like comparison ----

def kernel_field(name, field):
    """A field of vm/kernels/NAME, as vm/kernels.sh (lib.sh) reads it."""
    sh = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      os.pardir, "kernels.sh")
    r = subprocess.run([sh, "field", name, field], stdout=subprocess.PIPE,
                       text=True)
    # A kernel of an older run may have no file any more: no field then.
    return r.stdout.strip() if r.returncode == 0 else ""


def columns(kernels):
    """dmirror-thp on each kernel of the run, then test_hmm on each."""
    return ([(k, "bench", "dmirror-thp on %s" % k) for k in kernels] +
            [(k, "stock", "test_hmm on %s" % k) for k in kernels])


def targets(kernels):
    """(kernel, PERCENT, baseline) of each kernel with a bench-target:."""
    out = []
    for k in kernels:
        bt = kernel_field(k, "bench-target").split()
        if len(bt) == 2 and bt[1] in kernels:
            out.append((k, int(bt[0]), bt[1]))
    return out


def pass_ratios(docs, base, mb, mode, path):
    """docs' throughput over base's, pass by pass, in %."""
    out = []
    for d, b in zip(docs, base):
        r = {s["size_mb"]: s["modes"] for s in d["sizes"]}.get(mb, {}).get(mode)
        q = {s["size_mb"]: s["modes"] for s in b["sizes"]}.get(mb, {}).get(mode)
        if r and q:
            out.append(100 * median_gib(r, path) / median_gib(q, path))
    return out


def report_compare(run, out):
    with open(os.path.join(run, "kernels")) as f:
        kernels = f.read().split()
    cols = []
    for k, fn, name in columns(kernels):
        doc, docs = load_passes(os.path.join(run, k), fn)
        if doc:
            cols.append((k, fn, name, doc, docs))
    if not cols:
        sys.exit("dmirror-thp: error: no bench.json under %s" % run)
    passes = min(len(c[4]) for c in cols)
    head = cols[0][3]
    out.append("# like for like: the same guest, bench and sizes on each kernel; GiB/s, median of %d rounds" %
               head["iters"])
    if passes > 1:
        out.append("# in %d passes: each kernel booted once per pass, the kernels in turns;" % passes)
        out.append("# a ratio is the median of the %d passes' ratios [lowest..highest]," % passes)
        out.append("# each pass's kernels having run one after the other")
    for i, (k, fn, name, doc, docs) in enumerate(cols):
        out.append("#  [%d] %s (%s)" % (i + 1, name, doc["meta"].get("kernel", "").split()[0]))
    if head["meta"].get("accel") == "tcg":
        out += ["# " + l for l in TCG_NOTE.split("\n")]
    out.append("")
    rel_w = 17 if passes > 1 else 8
    num = {c[:2]: i + 1 for i, c in enumerate(cols)}
    tgts = [(k, want, base) for k, want, base in targets(kernels)
            if (k, "bench") in num and (base, "bench") in num]
    out.append("  %-5s %-4s %-7s" % ("MB", "mode", "path") +
               "".join(" %8s" % ("[%d]" % (i + 1)) for i in range(len(cols))) +
               "".join("  %*s" % (rel_w, "[%d]/[%d]" % (num[(k, "bench")],
                                                          num[(b, "bench")]))
                       for k, _, b in tgts))
    idx = {c[:2]: {s["size_mb"]: s["modes"] for s in c[3]["sizes"]} for c in cols}
    passes_of = {c[:2]: c[4] for c in cols}
    sizes = sorted({s["size_mb"] for c in cols for s in c[3]["sizes"]})
    t = Targets()
    dat = []
    for mb in sizes:
        for mode in ("thp", "4k"):
            for p in PATHS:
                vals = []
                for k, fn, name, doc, docs in cols:
                    r = idx[(k, fn)].get(mb, {}).get(mode)
                    vals.append(median_gib(r, p) if r else float("nan"))
                rel = ""
                for k, want, base in tgts:
                    rs = pass_ratios(passes_of[(k, "bench")],
                                     passes_of[(base, "bench")], mb, mode, p)
                    if not rs:
                        rel += "  %*s" % (rel_w, "-")
                        continue
                    v = statistics.median(rs)
                    fig = "%.0f%%" % v
                    if passes > 1:
                        fig += " [%.0f..%.0f]" % (min(rs), max(rs))
                    rel += "  %*s" % (rel_w, fig)
                    t.add("%d MB %s" % (mb, mode),
                          "%s: %s >= %d%% of %s" % (p, k, want, base),
                          v, want, "%.0f%%", fig=fig)
                out.append("  %-5d %-4s %-7s" % (mb, mode, p) +
                           "".join(" %8.3f" % v for v in vals) + rel)
                if p == "rt":
                    dat.append((mb, mode, vals))
    t.print(out)
    if shutil.which("gnuplot"):
        path = os.path.join(run, "bench-compare.dat")
        with open(path, "w") as f:
            for mode in ("thp", "4k"):
                f.write("# %s: MB then one column per driver and kernel\n" % mode)
                for mb, m, vals in dat:
                    if m == mode:
                        f.write("%d %s\n" % (mb, " ".join("%g" % v for v in vals)))
                f.write("\n\n")
        lines = []
        for i, c in enumerate(cols):
            for blk, mode, dash in ((0, "THP", 1), (1, "4K", 2)):
                lines.append('"%s" index %d using 1:%d with linespoints dashtype %d title "%s %s"' % (
                    path, blk, i + 2, dash, c[2], mode))
        gnuplot("""set terminal pngcairo size 1100,600 noenhanced
set output "%s/bench-compare.png"
set title "round trip by buffer size: the same bench on each kernel"
set xlabel "buffer size (MB)"
set ylabel "GiB/s"
set logscale x 2
set key outside right top
set grid
plot %s
""" % (run, ", \\\n     ".join(lines)))
        out.append("\nplot: %s/bench-compare.png" % run)


def main():
    args = sys.argv[1:]
    out = []
    if args[:1] == ["--compare"] and len(args) == 2:
        report_compare(args[1], out)
        dest = os.path.join(args[1], "bench-compare.txt")
    elif len(args) == 1:
        report_one(args[0], out)
        dest = os.path.join(args[0], "report.txt")
    else:
        sys.exit("usage: bench_report.py KERNEL_DIR | --compare RUN_DIR")
    text = "\n".join(out) + "\n"
    with open(dest, "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
