#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The bench's check of itself: the 'negative' plan has exactly one failing
# test and provokes exactly one kernel WARN.  The run must fail, and fail
# for exactly those two reasons: a bench that failed for another reason
# (a crash, a timeout, a missing file) has not shown it can see them.
set -eu
. "$(dirname "$0")/lib.sh"

if IMAGE=stock "$TOP/vm/check.sh" negative "$KERNEL"; then
	die "negative check FAILED: the bench passed a failing plan"
fi
S=$LOGDIR/latest/summary.txt
[ -f "$S" ] || die "negative check FAILED: no $S"
expect() {
	grep -qE "$1" "$S" || die "negative check FAILED: $S has no line /$1/"
}
expect "^not ok +$KERNEL negative-false: deliberate failure\$"
expect "^ok +$KERNEL steps: provoke a WARN\$"
expect "^not ok +$KERNEL console: .*WARNING:"
expect '^1 passed, 2 failed, 0 skipped$'
progress "negative check ok: the bench failed the failing plan, for its two reasons"
