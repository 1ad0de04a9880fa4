#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make mainline-series: kernel-prereq-patches/7.3 as a posting, ready for
# git send-email, in $CACHE/mainline-series:
#
#   0000-cover-letter.patch  the cover letter: kernel-prereq-patches/7.3/
#                            cover-letter.txt, with the recipients and the
#                            shortlog and diffstat of git format-patch
#   00NN-*.patch             the patches, numbered NN/total, threaded
#   checkpatch.txt           checkpatch.pl --strict of each, from 7.3's tree
#   recipients.txt           scripts/get_maintainer.pl of the series
#
# The patches are applied with git am to a scratch worktree of the pristine
# 7.3 tree, so what is posted is what the repository holds.
set -eu
. "$(dirname "$0")/lib.sh"
need git perl

kernel_select 7.3
# The stored patches carry no author and no sign-off: the poster's own
# identity is stamped on each (lib.sh's poster_ident), or nothing is written.
who=$(poster_ident) || die "no posting without the poster's identity (see above)"
OUT=$CACHE/mainline-series
WT=$KDIR/posting
COVER=$PATCHES/cover-letter.txt
[ -f "$COVER" ] || die "no $COVER"
git -C "$KSRC" rev-parse -q --verify base > /dev/null ||
	die "no pristine 7.3 tree in $KSRC: run 'make tree KERNEL=7.3'"

t=$(now)
progress "applying kernel-prereq-patches/7.3 to a scratch worktree of base"
git -C "$KSRC" worktree remove --force "$WT" 2>/dev/null || rm -rf "$WT"
git -C "$KSRC" worktree prune
git -C "$KSRC" worktree add -q --detach "$WT" base
n=0
for p in $(series_patches); do
	am_patch "$WT" "$p" signoff || die "$p does not apply to 7.3's base"
	n=$((n + 1))
done
[ "$n" -gt 0 ] || die "the 7.3 series is empty"

rm -rf "$OUT"
mkdir -p "$OUT"
progress "recipients (scripts/get_maintainer.pl)"
# --no-fixes: the Fixes: ids are upstream's, and Debian's tree has no
# history to find their authors in.
(cd "$WT" && git format-patch -q --stdout base..HEAD |
	perl scripts/get_maintainer.pl --no-rolestats --no-git --no-git-fallback \
	--no-fixes) \
	> "$OUT/recipients.txt" || die "get_maintainer.pl failed"
# To: linux-mm, the list of every file the series touches; the rest Cc.
to="linux-mm@kvack.org"

progress "formatting $n patches with a cover letter"
subject=$(sed -n 's/^Subject: //p' "$COVER" | head -n 1)
args=(--cover-letter --thread=shallow --numbered --zero-commit --from="$who"
      --subject-prefix=PATCH -o "$OUT" --to="$to")
while IFS= read -r r; do
	[ -n "$r" ] && [ "$r" != "$to" ] && args+=(--cc="$r")
done < "$OUT/recipients.txt"
(cd "$WT" && git format-patch -q "${args[@]}" base..HEAD) ||
	die "git format-patch failed"
# The cover letter's subject and body from cover-letter.txt, before the
# shortlog and diffstat that format-patch wrote.
python3 - "$OUT"/0000-cover-letter.patch "$COVER" "$subject" <<'EOF'
import re, sys
path, cover, subject = sys.argv[1:4]
text = open(path).read()
body = open(cover).read().split("\n", 1)[1].lstrip("\n")
text = text.replace("*** SUBJECT HERE ***", subject, 1)
text = text.replace("*** BLURB HERE ***", body.rstrip("\n"), 1)
open(path, "w").write(text)
EOF

progress "checkpatch --strict (from 7.3's tree)"
rc=0
for p in "$OUT"/0*.patch; do
	case $p in *cover-letter*) continue ;; esac
	{
		echo "== $(basename "$p")"
		# Debian's tree has no upstream history: checkpatch cannot
		# look the Fixes: ids up (UNKNOWN_COMMIT_ID), and would warn
		# on every one.
		(cd "$KSRC" && ./scripts/checkpatch.pl --strict -q \
			--ignore UNKNOWN_COMMIT_ID "$p") || rc=1
	} >> "$OUT/checkpatch.txt" 2>&1
done
git -C "$KSRC" worktree remove --force "$WT"
took "$t" "mainline series"
progress "$OUT: $(ls "$OUT"/0*.patch | wc -l) files; checkpatch: $(grep -E '^(ERROR|WARNING|CHECK)' "$OUT/checkpatch.txt" | wc -l) reports"
[ $rc = 0 ] || die "checkpatch.pl reported problems: see $OUT/checkpatch.txt"
