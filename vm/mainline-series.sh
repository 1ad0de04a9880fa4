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
# BASE_COMMIT=ID adds "base-commit: ID" to every cover letter, as git
# format-patch --base would (Debian's tree has no upstream history: the
# poster gives the id of v7.3.4 from linux-stable).
#
# The stored patches carry no author and no sign-off: every patch is
# stamped with the poster's own identity (git config user.name and
# user.email, or GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL), From:, an
# Assisted-by: trailer (lib.sh's ASSISTED_BY, as the tree's
# Documentation/process/coding-assistants.rst asks) and the poster's
# Signed-off-by:, and nothing is written without one.  Every cover letter
# gets the series' disclosure.txt, the paragraph on how the patches were
# made and tested.  The postings are applied in order with git am to a
# scratch worktree of the kernel's pristine base, each on the ones before
# it, so what is posted is what the repository holds.
#
# What is written is then checked as a person would sign it: git mailinfo
# reads the poster as the author of every patch, the only Signed-off-by:
# is the poster's and follows the Assisted-by:, no address anywhere is in
# a domain reserved for examples, and checkpatch.pl --strict is clean.
#
# A cover letter starts with its headers, then a blank line and the body:
#   Subject: the posting's subject, without the [PATCH] prefix
#   Prefix:  the subject prefix, with the target branch (PATCH
#            mm-hotfixes, PATCH mm-new, RFC PATCH mm-new)
#   Cc:      one more recipient, who get_maintainer.pl does not name
#            (the authors of the code it fixes); one header each
#   Cc-maintainers-of: FILE   get_maintainer.pl's people and lists for a
#            file the posting does not touch (a driver that uses the API
#            it changes); one header each
set -eu
. "$(dirname "$0")/lib.sh"
need git perl

[ -n "$(series_postings)" ] ||
	die "the $KERNEL series has no postings (folders with a series file and a cover letter)"
who=$(poster_ident) || die "no posting without the poster's identity (see above)"
disclosure=$PATCHES/disclosure.txt
[ -s "$disclosure" ] ||
	die "no $disclosure: a posting says how its patches were made (Documentation/process/generated-content.rst)"
case ${BASE_COMMIT:-} in
''|[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]*) ;;
*) die "BASE_COMMIT=$BASE_COMMIT: the full id of the base's commit (v7.3.4 in linux-stable)" ;;
esac
[ -n "${BASE_COMMIT:-}" ] ||
	progress "no BASE_COMMIT: the cover letters name their base in words only; BASE_COMMIT=<the id of v7.3.4 in linux-stable> adds base-commit:"
[ -n "$ASSISTED_BY" ] || die "ASSISTED_BY is empty: a posting names the assistant (Documentation/process/coding-assistants.rst)"
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

# verify_posting DIR: what DIR holds is what its poster can sign, or say
# why not (on stderr) and fail.
verify_posting()
{
	local p name email bad=0 line

	for p in "$1"/0*.patch; do
		# Every address, anywhere in the file, outside reserved domains.
		while read -r line; do
			echo "$(basename "$p"): '$line' is in a domain reserved for examples" >&2
			bad=1
		done < <(reserved_addresses "$p")
		case $p in *cover-letter*)
			grep -qF "$(head -n 1 "$disclosure")" "$p" || {
				echo "$(basename "$p"): no disclosure paragraph" >&2
				bad=1
			}
			continue
			;;
		esac
		# The author as git am will read it.
		name=$(git mailinfo /dev/null /dev/null < "$p" | sed -n 's/^Author: //p')
		email=$(git mailinfo /dev/null /dev/null < "$p" | sed -n 's/^Email: //p')
		if [ "$name <$email>" != "$who" ]; then
			echo "$(basename "$p"): git mailinfo reads the author as '$name <$email>', not '$who'" >&2
			bad=1
		fi
		# One sign-off, the poster's, after the assistant's tag.
		if [ "$(grep -c '^Signed-off-by: ' "$p")" != 1 ] ||
			! grep -qxF "Signed-off-by: $who" "$p" ||
			[ "$(grep -E '^(Assisted-by|Signed-off-by): ' "$p" | head -n 2 | cut -d: -f1 | tr '\n' ' ')" != "Assisted-by Signed-off-by " ]; then
			echo "$(basename "$p"): not one Assisted-by: then the poster's one Signed-off-by:" >&2
			bad=1
		fi
	done
	[ $bad = 0 ]
}

t=$(now)
progress "postings of $PATCHES, as $who"
git -C "$KSRC" worktree remove --force "$WT" 2>/dev/null || rm -rf "$WT"
git -C "$KSRC" worktree prune
git -C "$KSRC" worktree add -q --detach "$WT" base
NOTES=refs/notes/commits
! git -C "$KSRC" rev-parse -q --verify "$NOTES" > /dev/null ||
	git -C "$KSRC" update-ref -d "$NOTES"
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
		# What the stored patch says below its "---" (review history,
		# not for the changelog), which git am drops: a note, which
		# format-patch --notes puts back there.
		notes=$(awk '/^---$/ && !cut { cut = 1; next }
			cut && (/^ [^ ].* \| +[0-9]+/ || /^ [0-9]+ files? changed/ || /^diff --git /) { exit }
			cut { print }' "$PATCHES/$posting/$p")
		[ -z "${notes//[[:space:]]/}" ] ||
			git -C "$WT" notes --ref="$NOTES" add -f -m "$notes" HEAD
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
	for f in $(header "$cover" Cc-maintainers-of); do
		[ -f "$WT/$f" ] || die "$cover: Cc-maintainers-of: no $f in the tree"
		(cd "$WT" && perl scripts/get_maintainer.pl --no-rolestats --no-git \
			--no-git-fallback -f "$f") >> "$dir/recipients.txt" ||
			die "get_maintainer.pl failed for $f"
	done
	awk '!seen[$0]++' "$dir/recipients.txt" > "$dir/recipients.tmp"
	mv "$dir/recipients.tmp" "$dir/recipients.txt"
	to="linux-mm@kvack.org"
	args=(--cover-letter --thread=shallow --zero-commit --notes="$NOTES"
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
	python3 - "$dir"/0000-cover-letter.patch "$cover" "$subject" "$disclosure" <<'EOF'
import sys
path, cover, subject, disclosure = sys.argv[1:5]
text = open(path).read()
body = open(cover).read().split("\n\n", 1)[1].strip("\n")
body += "\n\n" + open(disclosure).read().strip("\n")
text = text.replace("*** SUBJECT HERE ***", subject, 1)
text = text.replace("*** BLURB HERE ***", body, 1)
open(path, "w").write(text)
EOF
	# The base as git format-patch --base writes it, before the
	# signature; Debian's tree has no upstream history to find it in.
	if [ -n "${BASE_COMMIT:-}" ]; then
		sed -i "0,/^-- \$/s//base-commit: $BASE_COMMIT\n&/" "$dir"/0000-cover-letter.patch
	fi
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
	verify_posting "$dir" || rc=1
	progress "$(basename "$dir"): $count patches, checkpatch: $(grep -cE '^(ERROR|WARNING|CHECK)' "$dir/checkpatch.txt") reports"
done
git -C "$KSRC" worktree remove --force "$WT"
took "$t" "mainline postings"
[ $rc = 0 ] || die "the postings are not ready to sign: see above and $OUT/*/checkpatch.txt"
