#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The one reader of vm/expect.list: what a kernel is expected not to pass.

Each line is KIND KERNEL SUITE TEST REASON, whitespace separated, with
KERNEL, SUITE and TEST shell globs (fnmatch) and REASON the rest of the
line.  KERNEL names a kernel ("7.3-pristine"), or a kernel and a flavour
("*/debug"): an entry for one flavour only.  KIND is one of:

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

expect.py crashes KERNEL FLAVOR   "SUITE TEST" for each crash entry of
                                  KERNEL: one boot each
expect.py exclude KERNEL FLAVOR   "SUITE TEST" for each crash and omit
                                  entry: what the plans leave out
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


class Entry:
    def __init__(self, kind, kernel, suite, test, reason, where):
        self.kind = kind
        self.kernel = kernel
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

    def for_kernel(self, kernel, flavour):
        if "/" in self.kernel:
            kernel = "%s/%s" % (kernel, flavour)
        return fnmatch.fnmatchcase(kernel, self.kernel)

    def matches(self, kernel, flavour, suite, test):
        return (self.for_kernel(kernel, flavour) and
                fnmatch.fnmatchcase(suite, self.suite) and
                fnmatch.fnmatchcase(test, self.test))


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


def lookup(entries, kind, kernel, flavour, suite, test):
    """The first entry of KIND that matches, or None."""
    for e in entries:
        if e.kind == kind and e.matches(kernel, flavour, suite, test):
            return e
    return None


def of_kind(entries, kinds, kernel, flavour):
    return [e for e in entries
            if e.kind in kinds and e.for_kernel(kernel, flavour)]


def crashes(entries, kernel, flavour):
    return of_kind(entries, ("crash",), kernel, flavour)


def main():
    a = sys.argv[1:]
    if a[:1] == ["crashes"] and len(a) == 3:
        todo = crashes(load(), a[1], a[2])
    elif a[:1] == ["exclude"] and len(a) == 3:
        todo = of_kind(load(), ("crash", "omit"), a[1], a[2])
    else:
        sys.exit("usage: expect.py crashes|exclude KERNEL FLAVOR")
    for e in todo:
        if (e.kind == "omit" and e.test != "*" and
                re.search(r"[][*?]", e.test)):
            sys.exit("%s: an omit entry names one test or \"*\", not a glob"
                     % e.test)
        print("%s %s" % (e.suite, e.test))
    return 0


if __name__ == "__main__":
    sys.exit(main())
