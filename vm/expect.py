#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The one reader of vm/expect.list: what a kernel is expected not to pass.

Each line is KIND KERNEL SUITE TEST REASON, whitespace separated, with
KERNEL, SUITE and TEST shell globs (fnmatch) and REASON the rest of the
line.  KIND is one of:

  skip   the test may skip on that kernel (the harness's SKIP)
  xfail  the test is expected to fail on that kernel: its failure is
         reported as XFAIL; a pass (XPASS) fails the run
  crash  the test is expected to crash that kernel: the plans leave it
         out (kselftest's -T NAME, so TEST is a bare test name) and it
         runs in a boot of its own, where the console must show the
         REASON's leading {regex}; anything else fails the run

expect.py crashes KERNEL   print "SUITE TEST" for each crash entry of KERNEL:
                           what the plans leave out, and one boot each
"""
import fnmatch
import os
import re
import sys

KINDS = ("skip", "xfail", "crash")
HERE = os.path.dirname(os.path.abspath(__file__))


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

    def matches(self, kernel, suite, test):
        return (fnmatch.fnmatchcase(kernel, self.kernel) and
                fnmatch.fnmatchcase(suite, self.suite) and
                fnmatch.fnmatchcase(test, self.test))


def load(path=os.path.join(HERE, "expect.list")):
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


def lookup(entries, kind, kernel, suite, test):
    """The first entry of KIND that matches, or None."""
    for e in entries:
        if e.kind == kind and e.matches(kernel, suite, test):
            return e
    return None


def crashes(entries, kernel):
    return [e for e in entries
            if e.kind == "crash" and fnmatch.fnmatchcase(kernel, e.kernel)]


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "crashes":
        sys.exit("usage: expect.py crashes KERNEL")
    for e in crashes(load(), sys.argv[2]):
        print("%s %s" % (e.suite, e.test))
    return 0


if __name__ == "__main__":
    sys.exit(main())
