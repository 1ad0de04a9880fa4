#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The one reader of vm/expect.list: what a kernel is expected not to pass.

Each line is KIND WHEN SUITE TEST REASON, whitespace separated, with SUITE
and TEST shell globs (fnmatch) and REASON the rest of the line.  WHEN says
which kernels the entry is for:

  KERNEL            a kernel's name, a glob ("*", "6.12"), or a kernel and
                    a flavour ("*/debug"): a fact of the guest or of that
                    kernel's own driver
  needs:P[+P...]    every tree that lacks one of the patches P, each
                    SERIES/POSTING/NNNN (kernel-prereq-patches/SERIES/
                    POSTING/NNNN-*.patch): the test passes with them
  lacks:FILE:SYM    every tree whose FILE has no SYM (a word): what the
                    tree's own code cannot do
  with:P[+P...]     every tree that carries all of the patches P: joined
                    to a needs: (needs:A,with:B), a test that fails
                    without A only once B is there (B makes the test
                    reach A's bug)
  arch:ARCH         every kernel of that architecture (vm/kernels/' arch:,
                    x86_64 by default): what its guest or its mm cannot do
  C1,C2             needs:, with:, lacks: and arch: joined by commas: the kernels
                    for which each holds (needs:P,arch:x86_64: a bug of P's
                    that shows on x86 only)

Which patches a tree carries and which symbols it has is vm/patch-state.sh's
finding, the file STAGE/patches (RUN_DIR/KERNEL/patches in a run), read by
State below: a patch is present, absent, unknown (it applies neither way)
or n/a (the tree carries another series: 6.12's backport).  A needs: entry
applies when one of its patches is absent; when none is, it does not (the
test must pass), and a failure it would have explained, had its unknown
patch been absent, says so; a crash entry with an unknown patch runs its
test alone in a boot of its own (isolated), where a crash fails it without
taking the other tests down.  KIND is one of:

  skip   the test may skip on that kernel (the harness's SKIP)
  xfail  the test is expected to fail on that kernel: its failure is
         reported as XFAIL; a pass (XPASS) fails the run
  crash  the test is expected to crash that kernel: the plans leave it
         out (kselftest's -T NAME, so TEST is a bare test name) and it
         runs in a boot of its own, where the console must show the
         REASON's leading {regex}; anything else fails the run
  omit   the test cannot run in that kernel's guest (a benchmark that a
         debug kernel under an emulator takes past its harness timeout):
         the plans leave it out (-T NAME, as for crash) and it is
         reported as a skip with the REASON; TEST "*" leaves the whole
         suite out, reported as one skip

expect.py crashes KERNEL FLAVOR STATE   "crash SUITE TEST" for each crash
                                        entry of KERNEL, "isolated SUITE
                                        TEST" for each whose patch is
                                        unknown there: one boot each
expect.py exclude KERNEL FLAVOR STATE   "SUITE TEST" for each of those and
                                        each omit entry: what the plans
                                        leave out
expect.py probes        what vm/patch-state.sh must find out: "series S"
                        for each series a needs: names, "symbol FILE SYM"
                        for each lacks:
expect.py state STATE   which patches a tree carries, for a person
"""
import fnmatch
import os
import re
import sys

KINDS = ("skip", "xfail", "crash", "omit")
HERE = os.path.dirname(os.path.abspath(__file__))
# vm/expect.list in the checkout; beside this file in a lab bundle.
LIST = next((p for p in (os.path.join(HERE, "expect.list"),
                         os.path.join(HERE, os.pardir, "expect.list"))
             if os.path.exists(p)), os.path.join(HERE, "expect.list"))


class State:
    """What vm/patch-state.sh found in one tree."""

    def __init__(self, path):
        self.path = path
        self.patches = {}   # SERIES/POSTING/NNNN: (state, how, subject)
        self.symbols = {}   # FILE:SYM: whether the tree has it
        # The guest's architecture; a file without the line is of an
        # x86_64 kernel (vm/kernels/' default, and all there was before).
        self.arch = "x86_64"
        with open(path) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                w = line.split(None, 3)
                if (w[0] in ("present", "absent", "unknown", "n/a") and
                        len(w) >= 3):
                    self.patches[w[1]] = (w[0], w[2],
                                          w[3].strip() if len(w) > 3 else "")
                elif w[0] in ("has", "lacks") and len(w) == 2:
                    self.symbols[w[1]] = w[0] == "has"
                elif w[0] == "arch" and len(w) == 2:
                    self.arch = w[1]
                else:
                    raise ValueError("%s: cannot read '%s'"
                                     % (path, line.strip()))

    def patch(self, name):
        if name not in self.patches:
            raise ValueError("%s says nothing of %s (vm/expect.list names it:"
                             " a patch of no series?)" % (self.path, name))
        return self.patches[name]

    def has(self, symbol):
        if symbol not in self.symbols:
            raise ValueError("%s says nothing of %s" % (self.path, symbol))
        return self.symbols[symbol]


def load_state(path):
    """The State of a tree (vm/patch-state.sh's file)."""
    if not os.path.exists(path):
        raise ValueError("no %s: the tree's patch state (vm/patch-state.sh)"
                         % path)
    return State(path)


def validate(entries, state):
    """Every patch and symbol the entries name is one the state knows: a
    misspelt one stops the run before it boots, not after."""
    for e in entries:
        for n in e.needs + e.with_:
            state.patch(n)
        if e.lacks:
            state.has(e.lacks)


PATCH = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*/[0-9]{4}$")


def patches(cond, where):
    """The patches P+P... of a needs: or with: condition."""
    key, _, value = cond.partition(":")
    names = value.split("+")
    for n in names:
        if not PATCH.match(n):
            raise ValueError("%s: %s: names SERIES/POSTING/NNNN, not '%s'"
                             % (where, key, n))
    return names


class Entry:
    def __init__(self, kind, when, suite, test, reason, where):
        self.kind = kind
        self.kernel = None
        self.needs = []
        self.with_ = []
        self.lacks = None
        self.arch = None
        # Conditions joined by "," must all hold (needs:P,arch:x86_64).
        for cond in when.split(","):
            if cond.startswith("arch:"):
                if self.arch:
                    raise ValueError("%s: arch: given twice" % where)
                self.arch = cond[len("arch:"):]
                if self.arch not in ("x86_64", "arm64"):
                    raise ValueError("%s: arch: is arch:x86_64 or"
                                     " arch:arm64" % where)
            elif cond.startswith("needs:"):
                if self.needs:
                    raise ValueError("%s: needs: given twice" % where)
                self.needs = patches(cond, where)
            elif cond.startswith("with:"):
                if self.with_:
                    raise ValueError("%s: with: given twice" % where)
                self.with_ = patches(cond, where)
            elif cond.startswith("lacks:"):
                if self.lacks:
                    raise ValueError("%s: lacks: given twice" % where)
                self.lacks = cond[len("lacks:"):]
                if self.lacks.count(":") != 1:
                    raise ValueError("%s: lacks: is lacks:FILE:SYMBOL"
                                     % where)
            elif self.kernel is None and "," not in when:
                self.kernel = cond
            else:
                raise ValueError("%s: a kernel's name is a WHEN of its own,"
                                 " not '%s'" % (where, cond))
        self.suite = suite
        self.test = test
        self.reason = reason
        self.signature = None
        if kind == "crash":
            m = re.match(r"\{([^}]+)\}\s*(.*)$", reason)
            if not m:
                raise ValueError("%s: a crash entry's reason starts with "
                                 "{console regex}" % where)
            self.signature = re.compile(m.group(1))
            self.reason = m.group(2)
        if not self.reason:
            raise ValueError("%s: an entry needs a reason" % where)

    def for_kernel(self, kernel, flavour, state):
        if self.kernel is not None:
            if "/" in self.kernel:
                kernel = "%s/%s" % (kernel, flavour)
            return fnmatch.fnmatchcase(kernel, self.kernel)
        if state is None:
            # No state (a run whose kernel never booted, which fails
            # anyway): nothing by patch applies.
            return False
        if self.lacks and state.has(self.lacks):
            return False
        if self.arch and state.arch != self.arch:
            return False
        if any(state.patch(n)[0] != "present" for n in self.with_):
            return False
        if self.needs:
            return any(state.patch(n)[0] == "absent" for n in self.needs)
        return True

    def unknown(self, state):
        """The patches it needs whose state in the tree is unknown."""
        if state is None:
            return []
        return [n for n in self.needs if state.patch(n)[0] == "unknown"]

    def why(self, state):
        """The reason, with the subjects of the patches it needs."""
        if not self.needs or state is None:
            return self.reason
        return "needs %s: %s" % (", ".join(
            "%s (%s%s)" % (n, state.patch(n)[2],
                           "" if state.patch(n)[0] == "absent"
                           else ", %s here" % state.patch(n)[0])
            for n in self.needs), self.reason)

    def matches(self, kernel, flavour, state, suite, test):
        return (fnmatch.fnmatchcase(suite, self.suite) and
                fnmatch.fnmatchcase(test, self.test) and
                self.for_kernel(kernel, flavour, state))


def load(path=LIST):
    entries = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 4)
            where = "%s:%d" % (os.path.basename(path), n)
            if len(parts) < 5 or parts[0] not in KINDS:
                raise ValueError("%s: expected KIND KERNEL SUITE TEST REASON"
                                 " (KIND one of %s)" % (where, ", ".join(KINDS)))
            entries.append(Entry(*parts, where=where))
    return entries


def lookup(entries, kind, kernel, flavour, state, suite, test):
    """The first entry of KIND that matches, or None."""
    for e in entries:
        if e.kind == kind and e.matches(kernel, flavour, state, suite, test):
            return e
    return None


def unexplained(entries, kinds, state, suite, test):
    """An entry of KINDS for the test that needs a patch whose state in
    the tree is unknown: what a failure of the test may mean."""
    for e in entries:
        if (e.kind in kinds and e.unknown(state) and
                fnmatch.fnmatchcase(suite, e.suite) and
                fnmatch.fnmatchcase(test, e.test)):
            return e
    return None


def of_kind(entries, kinds, kernel, flavour, state):
    return [e for e in entries
            if e.kind in kinds and e.for_kernel(kernel, flavour, state)]


def crashes(entries, kernel, flavour, state):
    return of_kind(entries, ("crash",), kernel, flavour, state)


def isolated(entries, kernel, flavour, state):
    """The crash entries that a tree may or may not need: none of their
    patches is absent, one is unknown.  Each test runs alone in a boot of
    its own, as a crash boot does, so that a crash (the tree lacks the
    fix) fails that test and leaves the others standing."""
    return [e for e in entries
            if e.kind == "crash" and e.unknown(state) and
            not e.for_kernel(kernel, flavour, state)]


def probes(entries):
    series = sorted({n.split("/")[0] for e in entries
                     for n in e.needs + e.with_})
    symbols = sorted({e.lacks for e in entries if e.lacks})
    return (["series %s" % s for s in series] +
            ["symbol %s" % " ".join(s.split(":")) for s in symbols])


def summary(state, brief=False):
    """Per series, which of its patches the tree carries (brief: one line
    each, and what it lacks of the symbols)."""
    out, by = [], {}
    for n, (st, how, subj) in state.patches.items():
        by.setdefault(n.split("/")[0], []).append((n, st, how, subj))
    for series, ps in by.items():
        count = {k: sum(1 for p in ps if p[1] == k)
                 for k in ("present", "absent", "unknown", "n/a")}
        if count["n/a"] == len(ps):
            out.append("kernel-prereq-patches/%s: not applicable (%s)"
                       % (series, ps[0][3]))
            continue
        out.append("kernel-prereq-patches/%s: %d present, %d absent, "
                   "%d unknown (of %d)" % (series, count["present"],
                                           count["absent"], count["unknown"],
                                           len(ps)))
        if brief:
            continue
        for n, st, how, subj in ps:
            out.append("  %-7s %-22s %-8s %s" % (st, n, how, subj))
    lacks = [sym for sym, has in sorted(state.symbols.items()) if not has]
    if brief:
        out.append("lacks %s" % (", ".join(lacks) or "none of the symbols asked"))
    else:
        for sym, has in sorted(state.symbols.items()):
            out.append("%s %s" % ("has  " if has else "lacks", sym))
    return out


def main():
    try:
        return run(sys.argv[1:])
    except (ValueError, OSError) as err:
        sys.exit("expect.py: %s" % err)


def run(a):
    if a[:1] in (["crashes"], ["exclude"]) and len(a) == 4:
        entries, state = load(), load_state(a[3])
        validate(entries, state)
        if a[0] == "crashes":
            for e in crashes(entries, a[1], a[2], state):
                print("crash %s %s" % (e.suite, e.test))
            for e in isolated(entries, a[1], a[2], state):
                print("isolated %s %s" % (e.suite, e.test))
            return 0
        todo = (of_kind(entries, ("crash", "omit"), a[1], a[2], state) +
                isolated(entries, a[1], a[2], state))
    elif a == ["probes"]:
        print("\n".join(probes(load())))
        return 0
    elif a[:1] == ["state"] and len(a) == 2:
        print("\n".join(summary(State(a[1]))))
        return 0
    else:
        sys.exit("usage: expect.py crashes|exclude KERNEL FLAVOR STATE"
                 " | probes | state STATE")
    for e in todo:
        if (e.kind == "omit" and e.test != "*" and
                re.search(r"[][*?]", e.test)):
            sys.exit("%s: an omit entry names one test or \"*\", not a glob"
                     % e.test)
        print("%s %s" % (e.suite, e.test))
    return 0


if __name__ == "__main__":
    sys.exit(main())
