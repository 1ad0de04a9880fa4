#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The one reader of a run's guest output.

results.py RUN_DIR
results.py --lava-pattern   the LAVA monitor pattern of the line format

The guest's line format (what vm/guest/init and the test programs write to the
results port, ttyS1, or to the console with dm_OUT=ttyS0), defined here
and read only here and by the LAVA monitor of make lab-bundle, whose
pattern is LAVA_PATTERN below:

  ### BEGIN plan=P kernel=K ...     a plan starts
  ### SUITE NAME / ### SUITE-END NAME rc=N   around a TAP program's output
  ### SUITE-SKIPPED NAME   a suite that vm/expect.list leaves out whole
  ### STEP ok WHAT / ### STEP not-ok WHAT   a plan step's result (its exit
                                    status in a diagnostic before it)
  ### FILE NAME ... ### FILE-END    a file sent back
  ### END status=N ...              the plan ended
  ok N NAME [# SKIP why | # XFAIL why | # MEASURE VALUE UNITS]
  not ok N NAME                     TAP results, inside a suite
  # text                            a diagnostic

A result's NAME is stable from run to run: it carries no figure.  A
figure goes in "# MEASURE VALUE UNITS" (LAVA's measurement and units), or
in a diagnostic line before the result.

A run covers one or more kernels (RUN_DIR/kernels lists them, in order);
each kernel's folder RUN_DIR/<kernel> holds its boots (the file "boots":
NAME KIND QEMU_RC [SUITE TEST] per line, KIND "plan" or "crash") with, per
boot, results-NAME.log (what the guest's /init wrote to ttyS1: ### markers
around TAP suites and plan steps, and files) and console-NAME.log (the
kernel console).  Writes:

  RUN_DIR/<kernel>/<name>  the files the guest sent (### FILE name ... END)
  stdout                   one line per test ("ok", "not ok", "skip" or
                           "xfail", the kernel, the suite and its name),
                           then "N passed, N failed, N skipped"
  RUN_DIR/results.ktap     the same as one KTAP v1 document: a subtest per
                           kernel, in it a subtest per suite, one for the
                           plans' steps, one for the crash boots, and the
                           console verdict as a test line of its own
  RUN_DIR/splats.txt       the consoles' reports, with context
  RUN_DIR/<kernel>/subtests.tsv   the results a runner's programs printed
                           ("# ok N ..." under run_vmtests.sh): SUITE,
                           PROGRAM, TEST, STATUS a line (mm_report.py)

The host's own checks, when the run has them (RUN_DIR/host.tap, the TAP
of vm/contracts.sh), are reported as one more "kernel", host, with no
console: every result must be a pass, and the plan must match.

What vm/expect.list expects of a kernel (vm/report/expect.py) is applied
here: an allowed skip is a skip, any other skip a failure; an expected failure is
XFAIL ("ok ... # XFAIL", counted with the passes, as kselftest and
kunit.py count it), an expected failure that passes (XPASS) a failure; a
crash boot passes as XFAIL only if its console shows the expected report.
Exit status: 0 if nothing failed.
"""
import fnmatch
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import expect  # noqa: E402
import mm_report  # noqa: E402

SPLATS = re.compile(
    r"BUG:|WARNING:|Oops|general protection|KASAN|kmemleak: .*suspected|"
    r"possible circular locking|inconsistent lock state|RCU stall|"
    r"detected stalls|self-detected stall|hung task|blocked for more than|"
    r"Kernel panic|kernel BUG at")
TAP_RESULT = re.compile(r"^(not ok|ok) [0-9]+ *(?:- *)?(.*)$")
# A program's own results under a runner that prefixes its output with
# "# " (run_vmtests.sh), after the runner's "# running PROGRAM" line.
NESTED_RESULT = re.compile(r"^# (not ok|ok) [0-9]+ *(?:- *)?(.*)$")
NESTED_PROGRAM = re.compile(r"^# running (.*)$")
RUNNER_SKIP = re.compile(r"^# \[SKIP\] \./(.*)$")
TAP_PLAN = re.compile(r"^1\.\.([0-9]+)")
DIRECTIVE = re.compile(r"#\s*(SKIP|XFAIL|MEASURE)\b\s*(.*)$", re.IGNORECASE)
# run_vmtests.sh names a failed program "not ok N PROG # exit=N": the
# test's name is PROG, whether it passed or not.
EXIT_STATUS = re.compile(r"\s+#\s*exit=-?[0-9]+$")
# The same result lines as LAVA's monitor sees them on the console.
LAVA_PATTERN = (r"\n(?:### STEP )?(?P<result>ok|not ok|not-ok)(?: \d+)? "
                r"(?P<test_case_id>[^#\r\n]+?)"
                r"(?: # MEASURE (?P<measurement>[-+.0-9eE]+) (?P<units>\S+))?"
                r" ?(?=\r*\n)")


class Test:
    def __init__(self, name, status, reason="", measure=None):
        self.name = name
        self.status = status          # "pass", "fail", "skip" or "xfail"
        self.reason = reason
        self.measure = measure        # "VALUE UNITS", or None


class Group:
    def __init__(self, name):
        self.name = name
        self.tests = []
        self.plan = None              # a TAP suite's "1..N", once seen
        self.nested = []              # (program, test, "ok"|"xfail"|"not ok"|"skip")
        self.program = ""             # the runner's program of the moment


# The run's flavour (RUN_DIR/flavour): vm/expect.list may name one.
FLAVOR = "normal"
# What each kernel's tree carries (RUN_DIR/KERNEL/patches, written by
# vm/patch-state.sh when its initramfs was packed): the needs: and lacks:
# entries of vm/expect.list follow it.
STATES = {}


def judge(entries, kernel, suite, name, ok, skip_reason):
    """A test's status and reason, by its result and vm/expect.list."""
    state = STATES.get(kernel)
    if skip_reason is not None:
        e = expect.lookup(entries, "skip", kernel, FLAVOR, state, suite, name)
        if e:
            # The program's own reason; the entry's where it gave none.
            return "skip", skip_reason or e.why(state)
        return "fail", "skipped, and not an allowed skip: " + skip_reason
    xf = expect.lookup(entries, "xfail", kernel, FLAVOR, state, suite, name)
    if xf and ok:
        return "fail", "XPASS: expected to fail on %s (%s)" % (kernel, xf.why(state))
    if xf:
        return "xfail", xf.why(state)
    if ok:
        return "pass", ""
    # A failure that an entry would explain, had the tree's state of its
    # patch been known.
    e = expect.unexplained(entries, ("xfail",), state, suite, name)
    if e:
        return "fail", ("%s: %s, which applies to this tree neither way "
                        "(changed otherwise?)" % (e.why(state),
                                                  ", ".join(e.unknown(state))))
    return "fail", ""


def read_boot(path, kernel, entries, suites, steps, out_dir):
    """Add one boot's results to suites and steps; (begun, ended)."""
    begun = ended = 0
    suite = None
    out = None
    with open(path, errors="replace") as f:
        lines = [l.rstrip("\r\n") for l in f]
    for line in lines:
        if line.startswith("### FILE-END"):
            if out:
                out.close()
            out = None
            continue
        if line.startswith("### FILE "):
            out = open(os.path.join(out_dir, line.split()[2]), "w")
            continue
        if out:
            out.write(line + "\n")
            continue
        if line.startswith("### BEGIN"):
            begun += 1
            print("guest %s: %s" % (kernel, line[4:]))
        elif line.startswith("### END"):
            ended += 1
            print("guest %s: %s" % (kernel, line[4:]))
        elif line.startswith("### SUITE-END"):
            rc = line.split("rc=")[-1]
            if suite and suite.plan is not None and len(suite.tests) < suite.plan:
                # It stopped before its end (a crash, a timeout).
                suite.tests.append(Test("exited with status %s after %d of %d results" %
                                        (rc, len(suite.tests), suite.plan), "fail"))
            elif (suite and rc != "0"
                  and not any(t.status in ("fail", "xfail")
                              for t in suite.tests)
                  # kselftest's KSFT_SKIP (4): every test skipped, as
                  # run_vmtests.sh exits when it ran nothing else.
                  and not (rc == "4" and suite.tests and
                           all(t.status == "skip" for t in suite.tests))):
                suite.tests.append(Test("exited with status " + rc +
                                        ("" if suite.tests else " and no results"),
                                        "fail"))
            elif suite and not suite.tests:
                # A report, not a test (the bench): its exit status.
                suite.tests.append(Test("exited with status 0", "pass"))
            if suite:
                # What the plan left out of it (-T): a skip, with why.
                for e in expect.of_kind(entries, ("omit",), kernel, FLAVOR,
                                        STATES.get(kernel)):
                    if not fnmatch.fnmatchcase(suite.name, e.suite):
                        continue
                    ran = e.test == "*" or any(
                        t.name == e.test or t.name.endswith("." + e.test)
                        for t in suite.tests)
                    suite.tests.append(
                        Test(e.test, "fail", "left out by vm/expect.list, and ran")
                        if ran else Test(e.test, "skip", "left out: " +
                                         e.why(STATES.get(kernel))))
            suite = None
        elif line.startswith("### SUITE-SKIPPED "):
            # Left out whole: an omit entry's skip (a crash entry's
            # suite is reported by its crash boot).
            g = Group(line.split()[2])
            state = STATES.get(kernel)
            for e in expect.of_kind(entries, ("omit",), kernel, FLAVOR,
                                    state):
                if e.test == "*" and fnmatch.fnmatchcase(g.name, e.suite):
                    g.tests.append(Test("*", "skip", "left out: " +
                                        e.why(state)))
            crashed = [e for e in (expect.crashes(entries, kernel, FLAVOR,
                                                  state) +
                                   expect.isolated(entries, kernel, FLAVOR,
                                                   state))
                       if e.test == "*" and fnmatch.fnmatchcase(g.name,
                                                                e.suite)]
            if not g.tests and not crashed:
                # Left out, and no entry says why.
                g.tests.append(Test("*", "fail", "left out of the plan, and "
                                    "no entry of vm/expect.list leaves it out"))
            if g.tests:
                suites.append(g)
        elif line.startswith("### SUITE "):
            suite = Group(line.split()[2])
            suites.append(suite)
        elif suite and suite.plan is None and TAP_PLAN.match(line):
            suite.plan = int(TAP_PLAN.match(line).group(1))
        elif line.startswith("### STEP ok "):
            steps.tests.append(Test(line[len("### STEP ok "):], "pass"))
        elif line.startswith("### STEP not-ok "):
            steps.tests.append(Test(line[len("### STEP not-ok "):], "fail"))
        elif suite and RUNNER_SKIP.match(line):
            # A program run_vmtests.sh does not run, which it counts
            # without a result line of its own.
            name = RUNNER_SKIP.match(line).group(1).strip()
            status, reason = judge(entries, kernel, suite.name, name, True,
                                   "run_vmtests.sh skipped it")
            suite.tests.append(Test(name, status, reason))
        elif suite and NESTED_PROGRAM.match(line):
            suite.program = NESTED_PROGRAM.match(line).group(1).strip()
        elif suite and NESTED_RESULT.match(line):
            m = NESTED_RESULT.match(line)
            d = DIRECTIVE.search(m.group(2))
            name = m.group(2)[:d.start()].strip() if d else m.group(2).strip()
            kind = d.group(1).upper() if d else ""
            # kselftest's "ok N # XFAIL name" puts the name after the
            # directive.
            if d and not name:
                name = d.group(2).strip()
            suite.nested.append((suite.program, name,
                                 {"SKIP": "skip", "XFAIL": "xfail"}.get(
                                     kind, m.group(1))))
        elif suite:
            m = TAP_RESULT.match(line)
            if not m:
                continue
            name, skip, measure = m.group(2), None, None
            d = DIRECTIVE.search(name)
            if d:
                name = name[:d.start()].strip()
                if d.group(1).upper() == "SKIP":
                    skip = d.group(2).strip()
                elif d.group(1).upper() == "MEASURE":
                    measure = d.group(2).strip()
            name = EXIT_STATUS.sub("", name)
            status, reason = judge(entries, kernel, suite.name, name,
                                   m.group(1) == "ok", skip)
            suite.tests.append(Test(name, status, reason, measure))
    return begun, ended


def console_lines(path):
    with open(path, errors="replace") as f:
        return [l.rstrip("\r\n") for l in f]


SUITE_MARK = re.compile(r"dmirror-thp: suite (\S+)")


def during(lines, i):
    """" (during SUITE)" for the suite whose start /init logged last."""
    for l in reversed(lines[:i]):
        m = SUITE_MARK.search(l)
        if m:
            return " (during %s)" % m.group(1)
    return ""


def splat_context(lines, hits, title):
    text = ["== " + title]
    for i in hits[:20]:
        text.append("-- %s" % (during(lines, i).strip(" ()") or "before any suite"))
        text.append("\n".join(lines[max(0, i - 2):i + 10]))
    return "\n".join(text) + "\n"


def entry_of(listing, entries, kernel, state, boot):
    """The entry of LISTING (expect.crashes or expect.isolated) that a
    boot of one test ran for, or None."""
    return next((e for e in listing(entries, kernel, FLAVOR, state)
                 if (e.suite, e.test) == (boot[3], boot[4])), None)


def ran_alone(results, kernel, entries, kdir):
    """The tests of a boot that ran one test alone."""
    suites = []
    read_boot(results, kernel, entries, suites, Group("steps"), kdir)
    return [t for g in suites for t in g.tests]


def read_boots(kdir):
    """A kernel folder's boots: [NAME, KIND, QEMU_RC, (SUITE, TEST)] each,
    [] if it has none."""
    try:
        with open(os.path.join(kdir, "boots")) as f:
            return [l.split() for l in f if l.strip()]
    except OSError:
        return []


def read_kernel(run, kernel, entries, splats):
    """The groups of one kernel: suites, steps, crash boots, console."""
    kdir = os.path.join(run, kernel)
    state = STATES.get(kernel)
    suites, steps, crashes = [], Group("steps"), Group("crash boots")
    isolated = Group("isolated boots")
    reports = []
    boots = read_boots(kdir)
    if not boots:
        steps.tests.append(Test("guest: no boot ran (see the build's error)", "fail"))
    for b in boots:
        name, kind, qemu_rc = b[0], b[1], b[2]
        results = os.path.join(kdir, "results-%s.log" % name)
        lines = console_lines(os.path.join(kdir, "console-%s.log" % name))
        hits = [i for i, l in enumerate(lines) if SPLATS.search(l)]
        if kind in ("isolated", "crash"):
            # One test alone in a boot (b[3], b[4]): its entry, and what
            # its suites reported when it did not take the kernel down.
            what = "%s: %s" % (b[3], b[4])
            e = entry_of(expect.isolated if kind == "isolated"
                         else expect.crashes, entries, kernel, state, b)
            ran = ran_alone(results, kernel, entries, kdir)
            passed = bool(ran) and all(t.status in ("pass", "skip")
                                       for t in ran)
        if kind == "isolated":
            # A test that may crash this tree (its patch is unknown here):
            # alone, it must pass with a clean console.
            if e is None:
                isolated.tests.append(Test(what, "fail", "no such entry"))
            elif hits:
                isolated.tests.append(Test(what, "fail", "%s (%s): %s, which "
                                           "applies to this tree neither way"
                                           % (lines[hits[0]].strip(),
                                              e.why(state),
                                              ", ".join(e.unknown(state)))))
            elif passed:
                isolated.tests.append(Test(what, "pass"))
            else:
                isolated.tests.append(Test(what, "fail", "; ".join(
                    "%s %s" % (t.name, t.status) for t in ran
                    if t.status not in ("pass", "skip")) or "no results"))
            if hits:
                splats.append(splat_context(lines, hits, "%s %s" % (kernel, name)))
            continue
        if kind == "crash":
            if e is None:
                crashes.tests.append(Test(what, "fail", "no such crash entry"))
                continue
            if any(e.signature.search(l) for l in lines):
                crashes.tests.append(Test(what, "xfail", e.why(state)))
                continue
            # No expected report: the test passed (XPASS) or failed
            # some other way; either fails the run.
            why = ("XPASS: no crash, and the test passed" if passed and not hits
                   else "the console does not show /%s/" % e.signature.pattern)
            crashes.tests.append(Test(what, "fail", why))
            if hits:
                splats.append(splat_context(lines, hits, "%s %s" % (kernel, name)))
                reports += [lines[i] + during(lines, i) for i in hits]
            continue
        begun, ended = read_boot(results, kernel, entries, suites, steps, kdir)
        if not begun:
            steps.tests.append(Test("guest: plan '%s' did not start (qemu exit %s)" %
                                    (name, qemu_rc), "fail"))
        elif not ended:
            steps.tests.append(Test("guest: plan '%s' did not finish (timeout or crash, qemu exit %s)" %
                                    (name, qemu_rc), "fail"))
        if hits:
            splats.append(splat_context(lines, hits, "%s %s" % (kernel, name)))
            reports += [lines[i] + during(lines, i) for i in hits]
    if reports:
        more = " (+%d more)" % (len(reports) - 1) if len(reports) > 1 else ""
        console = Test("console: " + reports[0] + more, "fail")
    else:
        console = Test("console clean", "pass")
    groups = suites + [g for g in (steps, crashes, isolated) if g.tests]
    # The programs' own results under a runner (run_vmtests.sh), for
    # vm/report/mm_report.py, which compares two kernels test by test.
    nested = [(g.name, p, t, st) for g in suites for p, t, st in g.nested]
    if nested:
        with open(os.path.join(kdir, "subtests.tsv"), "w") as f:
            f.write("".join("%s\t%s\t%s\t%s\n" % n for n in nested))
    return groups, console, reports


def read_host(run):
    """The host's checks (RUN_DIR/host.tap), as a group, or None."""
    path = os.path.join(run, "host.tap")
    if not os.path.exists(path):
        return None
    g = Group("stdout contracts (vm/contracts.sh)")
    why = ""
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = TAP_PLAN.match(line)
            if m:
                g.plan = int(m.group(1))
                continue
            if line.startswith("# ") and not line.startswith("#   "):
                why = line[2:]
                continue
            m = TAP_RESULT.match(line)
            if not m:
                continue
            name, d = m.group(2), DIRECTIVE.search(m.group(2))
            if d:
                name = name[:d.start()].strip()
            if m.group(1) == "ok" and not d:
                g.tests.append(Test(name, "pass"))
            else:
                g.tests.append(Test(name, "fail", why if m.group(1) != "ok"
                                    else "a host check does not skip"))
            why = ""
    if g.plan != len(g.tests):
        g.tests.append(Test("vm/contracts.sh ran to its end", "fail",
                            "planned %s, ran %d (see host.log)" %
                            (g.plan, len(g.tests))))
    return g


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


def ktap_test(out, ind, n, t):
    if t.measure:
        out.append("%s# %s: %s" % (ind, ktap_name(t.name), ktap_text(t.measure)))
    if t.status == "skip":
        out.append("%sok %d %s # SKIP %s" % (ind, n, ktap_name(t.name), ktap_text(t.reason)))
    elif t.status == "xfail":
        out.append("%sok %d %s # XFAIL %s" % (ind, n, ktap_name(t.name), ktap_text(t.reason)))
    elif t.status == "pass":
        out.append("%sok %d %s" % (ind, n, ktap_name(t.name)))
    else:
        if t.reason:
            out.append("%s# %s" % (ind, ktap_text(t.reason)))
        out.append("%snot ok %d %s" % (ind, n, ktap_name(t.name)))


def write_ktap(path, kernels):
    """kernels: [(name, groups, console, reports)]; console None for the
    host."""
    out = ["KTAP version 1", "1..%d" % len(kernels)]
    for k, (kname, groups, console, reports) in enumerate(kernels, 1):
        out += ["    KTAP version 1", "    # Subtest: %s" % ktap_name(kname),
                "    1..%d" % (len(groups) + (console is not None))]
        kfailed = console is not None and console.status == "fail"
        for n, g in enumerate(groups, 1):
            out += ["        KTAP version 1",
                    "        # Subtest: %s" % ktap_name(g.name),
                    "        1..%d" % len(g.tests)]
            for i, t in enumerate(g.tests, 1):
                ktap_test(out, "        ", i, t)
            failed = any(t.status == "fail" for t in g.tests)
            kfailed |= failed
            out.append("    %s %d %s" % ("not ok" if failed else "ok", n, ktap_name(g.name)))
        for r in reports[:10]:
            out.append("    # %s" % ktap_text(r))
        if console:
            ktap_test(out, "    ", len(groups) + 1, console)
        out.append("%s %d %s" % ("not ok" if kfailed else "ok", k, ktap_name(kname)))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def mm_compare(run, kernel, groups):
    """The mm selftests of a kernel against its base's (RUN_DIR/pairs): a
    test that passes there and fails here is a failure of its own."""
    for base, k in mm_report.pairs(run):
        if k != kernel:
            continue
        a, b = mm_report.load(run, base), mm_report.load(run, k)
        if not a and not b:
            continue
        g = Group("mm selftests against %s" % base)
        diff, regressions = mm_report.compare(a, b)
        for key, _, _ in regressions:
            g.tests.append(Test(mm_report.name(key), "fail",
                                "passes on %s, fails here" % base))
        g.tests.append(Test("%d tests compared, %d differ (mm-compare.txt)"
                            % (len(set(a) | set(b)), len(diff)),
                            "pass" if a and b else "fail",
                            "" if a and b else "a kernel ran none"))
        groups.append(g)


def main():
    global FLAVOR
    if sys.argv[1:] == ["--lava-pattern"]:
        print(LAVA_PATTERN)
        return 0
    run = sys.argv[1]
    # The list the run was judged by (vm/check.sh copies it in), so that a
    # report can be read again later.
    listed = os.path.join(run, "expect.list")
    entries = expect.load(listed if os.path.exists(listed) else expect.LIST)
    try:
        with open(os.path.join(run, "flavour")) as f:
            FLAVOR = f.read().strip()
    except OSError:
        pass
    with open(os.path.join(run, "kernels")) as f:
        names = f.read().split()
    counts = {"pass": 0, "fail": 0, "skip": 0, "xfail": 0}
    label = {"pass": "ok", "fail": "not ok", "skip": "skip", "xfail": "xfail"}
    kernels, splats = [], []
    for kname in names:
        path = os.path.join(run, kname, "patches")
        STATES[kname] = None
        if os.path.exists(path):
            STATES[kname] = expect.load_state(path)
            expect.validate(entries, STATES[kname])
    host = read_host(run)
    if host:
        kernels.append(("host", [host], None, []))
    for kname in names:
        groups, console, reports = read_kernel(run, kname, entries, splats)
        if STATES[kname] is None:
            # vm/run.sh copies the state before the first boot: a kernel
            # without one never booted, or its run is not make check's.
            groups.append(Group("patch state"))
            groups[-1].tests.append(Test("no %s/patches: expectations by "
                                         "patch not applied" % kname, "fail"))
        kernels.append((kname, groups, console, reports))
    # Every kernel's subtests.tsv is written: compare the pairs.
    for kname, groups, console, reports in kernels:
        mm_compare(run, kname, groups)
        for g in groups:
            for t in g.tests:
                counts[t.status] += 1
                extra = (" # SKIP " + t.reason if t.status == "skip" else
                         " # XFAIL " + t.reason if t.status == "xfail" else
                         " (" + t.reason + ")" if t.reason else
                         " = " + t.measure if t.measure else "")
                print("%-7s %s %s: %s%s" % (label[t.status], kname, g.name, t.name, extra))
        if console:
            counts[console.status] += 1
            print("%-7s %s %s" % (label[console.status], kname, console.name))
    if splats:
        with open(os.path.join(run, "splats.txt"), "w") as f:
            f.write("".join(splats))
    write_ktap(os.path.join(run, "results.ktap"), kernels)
    # Which of the project's patches each tree carries: what its
    # expectations followed.
    for kname in names:
        if STATES[kname]:
            for line in expect.summary(STATES[kname], brief=True):
                print("%s: %s" % (kname, line))
    if counts["xfail"]:
        print("%d of the passes are expected failures (XFAIL, vm/expect.list)" %
              counts["xfail"])
    print("%d passed, %d failed, %d skipped" %
          (counts["pass"] + counts["xfail"], counts["fail"], counts["skip"]))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
