#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make mainline-series: each posting of the selected kernel's series (the
# default kernel's, kernel-prereq-patches/7.3) ready for git send-email, in
# $CACHE/mainline-series/NN-POSTING/:
#
#   0000-cover-letter.patch  the cover letter: POSTING/cover-letter.txt, with
#                            the recipients and the shortlog and diffstat of
#                            git format-patch
#   00NN-*.patch             the patches, numbered NN/total, threaded
#   checkpatch.txt           checkpatch.pl --strict of each, from the tree's
#   recipients.txt           scripts/get_maintainer.pl of the posting
#
# The stored patches carry no author and no sign-off: every patch is
# stamped with the poster's own identity (git config user.name and
# user.email, or GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL), From: and
# Signed-off-by:, and nothing is written without one.  The postings are
# applied in order with git am to a scratch worktree of the kernel's
# pristine base, each on the ones before it, so what is posted is what the
# repository holds.
#
# A cover letter starts with its headers, then a blank line and the body:
#   Subject: the posting's subject, without the [PATCH] prefix
#   Prefix:  the subject prefix, PATCH if absent (RFC PATCH for an RFC)
#   Cc:      one more recipient, who get_maintainer.pl does not name
#            (the authors of the code it fixes); one header each
set -eu
. "$(dirname "$0")/lib.sh"
need git perl

[ -n "$(series_postings)" ] ||
	die "the $KERNEL series has no postings (folders with a series file and a cover letter)"
who=$(poster_ident) || die "no posting without the poster's identity (see above)"
OUT=$CACHE/mainline-series
WT=$KDIR/posting
# Its worktree lives in the tree: only a tree of the cache.
! user_tree || die "$KERNEL is a tree of your own: mainline-series posts the project's series (vm/kernels/)"
git -C "$KSRC" rev-parse -q --verify base > /dev/null ||
	die "no pristine $KERNEL tree in $KSRC: run 'make tree KERNEL=$KERNEL'"
mapfile -t postings < <(series_postings)
[ "${#postings[@]}" -gt 0 ] || die "$PATCHES/series names no posting folder"

# header FILE NAME: the values of a cover letter's header, one per line.
header()
{
	sed -n "1,/^\$/s/^$2: //p" "$1"
}

t=$(now)
progress "postings of $PATCHES, as $who"
git -C "$KSRC" worktree remove --force "$WT" 2>/dev/null || rm -rf "$WT"
git -C "$KSRC" worktree prune
git -C "$KSRC" worktree add -q --detach "$WT" base
rm -rf "$OUT"
mkdir -p "$OUT"
rc=0
n=0
for posting in "${postings[@]}"; do
	n=$((n + 1))
	dir=$OUT/$(printf '%02d' "$n")-$posting
	cover=$PATCHES/$posting/cover-letter.txt
	[ -f "$cover" ] || die "no $cover"
	subject=$(header "$cover" Subject | head -n 1)
	prefix=$(header "$cover" Prefix | head -n 1)
	[ -n "$subject" ] || die "$cover has no Subject: header"
	from=$(git -C "$WT" rev-parse HEAD)
	for p in $(PATCHES=$PATCHES/$posting series_patches); do
		am_patch "$WT" "$posting/$p" signoff ||
			die "$posting/$p does not apply to $KERNEL's base and the postings before it"
	done
	count=$(git -C "$WT" rev-list --count "$from..HEAD")
	[ "$count" -gt 0 ] || die "posting $posting is empty"
	mkdir -p "$dir"

	# To: linux-mm, the list of every file the series touches; the rest Cc.
	(cd "$WT" && git format-patch -q --stdout "$from..HEAD" |
		perl scripts/get_maintainer.pl --no-rolestats --no-git \
		--no-git-fallback --no-fixes) > "$dir/recipients.txt" ||
		die "get_maintainer.pl failed for $posting"
	header "$cover" Cc >> "$dir/recipients.txt"
	awk '!seen[$0]++' "$dir/recipients.txt" > "$dir/recipients.tmp"
	mv "$dir/recipients.tmp" "$dir/recipients.txt"
	to="linux-mm@kvack.org"
	args=(--cover-letter --thread=shallow --zero-commit
	      --subject-prefix="${prefix:-PATCH}" -o "$dir" --to="$to")
	[ "$count" -gt 1 ] && args+=(--numbered)
	while IFS= read -r r; do
		[ -n "$r" ] && [ "$r" != "$to" ] && args+=(--cc="$r")
	done < "$dir/recipients.txt"
	# The poster's identity for the cover letter and the message ids too.
	(cd "$WT" && git -c user.name="$(ident_name "$who")" \
		-c user.email="$(ident_email "$who")" \
		format-patch -q --from="$who" "${args[@]}" "$from..HEAD") ||
		die "git format-patch failed for $posting"
	# The cover letter's subject and body from cover-letter.txt, before
	# the shortlog and diffstat that format-patch wrote.
	python3 - "$dir"/0000-cover-letter.patch "$cover" "$subject" <<'EOF'
import sys
path, cover, subject = sys.argv[1:4]
text = open(path).read()
body = open(cover).read().split("\n\n", 1)[1].strip("\n")
text = text.replace("*** SUBJECT HERE ***", subject, 1)
text = text.replace("*** BLURB HERE ***", body, 1)
open(path, "w").write(text)
EOF
	for p in "$dir"/0*.patch; do
		case $p in *cover-letter*) continue ;; esac
		{
			echo "== $(basename "$p")"
			# Debian's tree has no upstream history: checkpatch cannot
			# look the Fixes: ids up (UNKNOWN_COMMIT_ID).
			(cd "$KSRC" && ./scripts/checkpatch.pl --strict -q \
				--ignore UNKNOWN_COMMIT_ID "$p") || rc=1
		} >> "$dir/checkpatch.txt" 2>&1
	done
	progress "$(basename "$dir"): $count patches, checkpatch: $(grep -cE '^(ERROR|WARNING|CHECK)' "$dir/checkpatch.txt") reports"
done
git -C "$KSRC" worktree remove --force "$WT"
took "$t" "mainline postings"
[ $rc = 0 ] || die "checkpatch.pl reported problems: see $OUT/*/checkpatch.txt"
