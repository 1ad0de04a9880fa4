#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch.pl from the extracted tree: --strict on the series, and on the
# module's sources.
set -eu
. "$(dirname "$0")/lib.sh"
CP=$KSRC/scripts/checkpatch.pl
[ -x "$CP" ] || die "no $CP: run 'make tree'"
rc=0
for p in $(series_patches); do
	step "checkpatch --strict $p"
	(cd "$KSRC" && "$CP" --strict -q "$TOP/kernel-prereq-patches/$p") || rc=1
done
step "checkpatch --strict module/ uapi/"
(cd "$KSRC" && "$CP" --strict -q --no-tree -f "$TOP"/module/*.[ch] "$TOP"/uapi/*.h) || rc=1
exit $rc
