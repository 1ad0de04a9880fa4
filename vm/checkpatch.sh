#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch.pl --strict from the extracted trees, run from the tree's own
# folder: each series against its own kernel's checkpatch, the module's
# sources against the newest tree's (vm/kernels/' harness: yes).  The Debian trees have no upstream history, so
# checkpatch cannot look up a Fixes: id: UNKNOWN_COMMIT_ID is left out.
set -eu
. "$(dirname "$0")/lib.sh"
# The stored patches are unsigned: each is checked as it would be posted,
# stamped with an identity (the poster's, or this machine's account).
who=$(tree_ident)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
for k in $(kernels_with series); do
	kernel_select "$k"
	# A tree with some of a series' postings (subset: yes) has no patch
	# of its own.
	[ -z "${KF[subset]:-}" ] || continue
	CP=$KSRC/scripts/checkpatch.pl
	[ -x "$CP" ] || die "no $CP: run 'make tree'"
	# A series of postings as make mainline-series stamps it, with the
	# Assisted-by: trailer in the form its tree's
	# coding-assistants.rst gives (7.3's); a backport that is not posted
	# (6.12, whose checkpatch wants another form of the tag) without.
	ab=
	[ -z "$(series_postings)" ] || ab=$ASSISTED_BY
	for p in $(series_patches); do
		progress "checkpatch --strict $k/$p"
		ASSISTED_BY=$ab stamp "$who" signoff < "$PATCHES/$p" > "$tmp/${p##*/}"
		(cd "$KSRC" && "$CP" --strict -q --ignore UNKNOWN_COMMIT_ID \
			"$tmp/${p##*/}") || rc=1
	done
done
kernel_select "$(the_kernel harness)"
CP=$KSRC/scripts/checkpatch.pl
progress "checkpatch --strict module/ uapi/ ($KERNEL's checkpatch)"
(cd "$KSRC" && "$CP" --strict -q --no-tree -f "$TOP"/module/*.[ch] "$TOP"/uapi/*.h) || rc=1
exit $rc
