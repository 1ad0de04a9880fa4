#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The one reader of a guest run's output.

results.py RUN_DIR NPLANS QEMU_RC

Reads RUN_DIR/results.log, what the guest's /init wrote to ttyS1 for every
plan (### markers around TAP suites and bench steps, and files), and
RUN_DIR/console.log, the kernel console.  Writes:

  RUN_DIR/<name>        the files the guest sent (### FILE name ... END)
  stdout                one line per test ("ok", "not ok" or "skip", and
                        its name), then "N passed, N failed, N skipped"
  RUN_DIR/results.ktap  the same as one KTAP v1 document: a subtest per
                        suite, one for the bench's steps, and the console
                        verdict as a test line of its own
  RUN_DIR/splats.txt    the console's reports, with context

A skip is a failure unless vm/skips.allow names its suite and reason.
Exit status: 0 if nothing failed.
"""
import fnmatch
import os
import re
import sys

SPLATS = re.compile(
    r"BUG:|WARNING:|Oops|general protection|KASAN|kmemleak: .*suspected|"
    r"possible circular locking|inconsistent lock state|RCU stall|"
    r"detected stalls|self-detected stall|hung task|blocked for more than|"
    r"Kernel panic")
TAP_RESULT = re.compile(r"^(not ok|ok) [0-9]+ *(?:- *)?(.*)$")
SKIP = re.compile(r"#\s*SKIP\b\s*(.*)$", re.IGNORECASE)


class Test:
    def __init__(self, name, status, reason=""):
        self.name = name
        self.status = status          # "pass", "fail" or "skip"
        self.reason = reason


class Group:
    def __init__(self, name):
        self.name = name
        self.tests = []


def load_allow(path):
    """(suite glob, reason regex) pairs of the allow-list."""
    allow = []
    if not os.path.exists(path):
        return allow
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            suite, _, reason = line.partition(" ")
            allow.append((suite, re.compile(reason.strip())))
    return allow


def allowed(allow, suite, reason):
    return any(fnmatch.fnmatch(suite, g) and r.search(reason) for g, r in allow)


def parse(run, nplans, qemu_rc, allow):
    suites, steps = [], Group("steps")
    begun = ended = 0
    suite = None
    out = None
    log = os.path.join(run, "results.log")
    with open(log, errors="replace") as f:
        lines = [l.rstrip("\r\n") for l in f]
    for line in lines:
        if line.startswith("### FILE-END"):
            if out:
                out.close()
            out = None
            continue
        if line.startswith("### FILE "):
            out = open(os.path.join(run, line.split()[2]), "w")
            continue
        if out:
            out.write(line + "\n")
            continue
        if line.startswith("### BEGIN"):
            begun += 1
            print("guest: " + line[4:])
        elif line.startswith("### END"):
            ended += 1
            print("guest: " + line[4:])
        elif line.startswith("### SUITE-END"):
            rc = line.split("rc=")[-1]
            if suite and rc != "0" and not any(t.status == "fail" for t in suite.tests):
                suite.tests.append(Test("exited with status " + rc +
                                        ("" if suite.tests else " and no results"),
                                        "fail"))
            elif suite and not suite.tests:
                # A report, not a test (the bench): its exit status.
                suite.tests.append(Test("exited with status 0", "pass"))
            suite = None
        elif line.startswith("### SUITE "):
            suite = Group(line.split()[2])
            suites.append(suite)
        elif line.startswith("### STEP ok "):
            steps.tests.append(Test(line[len("### STEP ok "):], "pass"))
        elif line.startswith("### STEP not-ok "):
            steps.tests.append(Test(line[len("### STEP not-ok "):], "fail"))
        elif suite:
            m = TAP_RESULT.match(line)
            if not m:
                continue
            name = m.group(2)
            s = SKIP.search(name)
            if s:
                name = name[:s.start()].strip()
                reason = s.group(1).strip()
                if allowed(allow, suite.name, reason):
                    suite.tests.append(Test(name, "skip", reason))
                else:
                    suite.tests.append(Test(name, "fail",
                                            "skipped, and not an allowed skip: " + reason))
            else:
                suite.tests.append(Test(name, "pass" if m.group(1) == "ok" else "fail"))
    if begun < nplans:
        steps.tests.append(Test("guest: %d plan(s) did not start (qemu exit %s)" %
                                (nplans - begun, qemu_rc), "fail"))
    elif ended < nplans:
        steps.tests.append(Test("guest: %d plan(s) did not finish (timeout or crash, qemu exit %s)" %
                                (nplans - ended, qemu_rc), "fail"))
    return suites, steps


def console_verdict(run):
    """The console test: clean, or its reports (and splats.txt)."""
    path = os.path.join(run, "console.log")
    with open(path, errors="replace") as f:
        lines = [l.rstrip("\r\n") for l in f]
    hits = [i for i, l in enumerate(lines) if SPLATS.search(l)]
    if not hits:
        return Test("console clean", "pass"), []
    with open(os.path.join(run, "splats.txt"), "w") as f:
        for i in hits[:20]:
            f.write("\n".join(lines[max(0, i - 2):i + 10]) + "\n--\n")
    reports = [lines[i] for i in hits]
    more = " (+%d more)" % (len(reports) - 1) if len(reports) > 1 else ""
    return Test("console: " + reports[0] + more, "fail"), reports


# kunit.py stops reading a document at the first line that holds one of
# these kernel messages (its KTAP_END), wherever it is in the line: the
# colon that makes them one is written as a dash.
KTAP_END = re.compile(r"List of all partitions:|Kernel panic - not syncing: VFS:|"
                      r"reboot: System halted")


def ktap_text(text):
    """Text for a KTAP line that kunit.py reads to its end."""
    return KTAP_END.sub(lambda m: m.group(0).replace(": ", " - ", 1)
                        .replace("partitions:", "partitions -"), text)


def ktap_name(name):
    return ktap_text(name.replace("#", "_")).strip() or "unnamed"


def write_ktap(path, groups, console, reports):
    out = ["KTAP version 1", "1..%d" % (len(groups) + 1)]
    n = 0
    for g in groups:
        n += 1
        out += ["    KTAP version 1", "    # Subtest: %s" % ktap_name(g.name),
                "    1..%d" % len(g.tests)]
        for i, t in enumerate(g.tests, 1):
            if t.status == "skip":
                out.append("    ok %d %s # SKIP %s" % (i, ktap_name(t.name),
                                                    ktap_text(t.reason)))
            elif t.status == "pass":
                out.append("    ok %d %s" % (i, ktap_name(t.name)))
            else:
                if t.reason:
                    out.append("    # %s" % ktap_text(t.reason))
                out.append("    not ok %d %s" % (i, ktap_name(t.name)))
        failed = any(t.status == "fail" for t in g.tests)
        out.append("%s %d %s" % ("not ok" if failed else "ok", n, ktap_name(g.name)))
    for r in reports[:10]:
        out.append("# %s" % ktap_text(r))
    out.append("%s %d console" % ("ok" if console.status == "pass" else "not ok",
                                  len(groups) + 1))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    run, nplans, qemu_rc = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    # Beside this file: vm/ here, the top of a lab bundle there.
    here = os.path.dirname(os.path.abspath(__file__))
    allow = load_allow(os.path.join(here, "skips.allow"))
    suites, steps = parse(run, nplans, qemu_rc, allow)
    console, reports = console_verdict(run)
    counts = {"pass": 0, "fail": 0, "skip": 0}
    label = {"pass": "ok", "fail": "not ok", "skip": "skip"}
    for g in suites:
        for t in g.tests:
            counts[t.status] += 1
            extra = " # SKIP " + t.reason if t.status == "skip" else \
                    " (" + t.reason + ")" if t.reason else ""
            print("%-7s %s: %s%s" % (label[t.status], g.name, t.name, extra))
    for t in steps.tests:
        counts[t.status] += 1
        print("%-7s %s" % (label[t.status], t.name))
    counts[console.status] += 1
    print("%-7s %s" % (label[console.status], console.name))
    groups = suites + ([steps] if steps.tests else [])
    write_ktap(os.path.join(run, "results.ktap"), groups, console, reports)
    print("%d passed, %d failed, %d skipped" %
          (counts["pass"], counts["fail"], counts["skip"]))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
