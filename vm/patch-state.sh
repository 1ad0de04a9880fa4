#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Which of the project's patches the selected kernel's tree carries, and
# which of the symbols vm/expect.list asks about it has: the facts its
# expectations follow (an expected failure names the patch that makes the
# test pass, vm/report/expect.py).  One line each:
#
#   present|absent|unknown|n/a SERIES/POSTING/NNNN HOW SUBJECT
#   has|lacks FILE:SYMBOL
#   arch ARCH   the guest's architecture (expect.list's arch: entries)
#
# A patch is present when the feature it adds is in the tree (a symbol of
# the series' "features" file: PATCH FILE SYMBOL), else when it applies in
# reverse, the series peeled off from its last patch to its first; absent
# when, on what is left, it applies forward, in the series' order; unknown
# when it applies neither way (the tree changed those lines otherwise).
# A kernel that carries another series (6.12's backport) is not judged by
# this one's patches: n/a; one that carries a posting of it (7.3/hotfixes)
# is.  The tree is only read: the patches are tried
# on copies of the files they touch, in a scratch folder, under the build
# lock (no tree.sh changes the tree meanwhile).  Written per flavour, to
# $STAGE/patches: the file the flavour's initramfs and runs were judged by.
#
# patch-state.sh [--print]   --print: the summary, for make patches
set -eu
. "$(dirname "$0")/lib.sh"
need git python3

out=$STAGE/patches
mkdir -p "$STAGE" "$CACHE/tmp"
exec 8> "$CACHE/build.lock"
flock 8
S=$(mktemp -d "$CACHE/tmp/patch-state.XXXXXX")
trap 'rm -rf "$S"' EXIT
# git apply in the scratch folder as a plain patch tool, whatever repository
# the cache is in.
export GIT_CEILING_DIRECTORIES=$CACHE/tmp

# POSTING/NNNN (or NNNN) of a series entry POSTING/NNNN-subject.patch.
patch_id()
{
	local d=

	[ "${1#*/}" = "$1" ] || d=${1%/*}/
	echo "$d$(basename "$1" | sed 's/-.*//')"
}

tree=$KSRC
PATCHES_OWN=$PATCHES
{
	echo "# vm/patch-state.sh: $KERNEL ($tree)"
	echo "arch $GUEST_ARCH"
	python3 "$TOP/vm/report/expect.py" probes |
	while read -r what a b; do
		case $what in
		symbol)
			[ -f "$tree/$a" ] ||
				die "vm/expect.list asks for $b in $a, which the tree $tree does not have"
			if grep -q -w -e "$b" "$tree/$a"; then
				echo "has $a:$b"
			else
				echo "lacks $a:$b"
			fi
			;;
		series)
			PATCHES=$TOP/kernel-prereq-patches/$a
			[ -f "$PATCHES/series" ] ||
				die "vm/expect.list names series $a: no kernel-prereq-patches/$a/series"
			own=${PATCHES_OWN#"$TOP"/kernel-prereq-patches/}
			# The whole series, whatever prefix the tree took (upto:).
			mapfile -t list < <(UPTO= series_patches)
			# A posting of the series (series: 7.3/hotfixes) is part of it.
			if [ -n "$own" ] && [ "$own" != "$a" ] &&
				[ "${own#"$a"/}" = "$own" ]; then
				for p in "${list[@]}"; do
					echo "n/a $a/$(patch_id "$p") other-series the tree carries kernel-prereq-patches/$own"
				done
				continue
			fi
			# Copies of what the series touches.
			mkdir -p "$S/$a"
			(cd "$PATCHES" && sed -n 's,^\(---\|+++\) [ab]/,,p' "${list[@]}") |
				sort -u | while read -r f; do
				[ ! -f "$tree/$f" ] || install -D -m 644 "$tree/$f" "$S/$a/$f"
			done
			declare -A st=() how=()
			# Features the tree has.
			if [ -f "$PATCHES/features" ]; then
				while read -r p f sym; do
					[ -f "$tree/$f" ] ||
						die "$PATCHES/features names $f, which the tree $tree does not have"
					grep -q -w -e "$sym" "$tree/$f" || continue
					st[$p]=present how[$p]=feature
				done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$PATCHES/features")
			fi
			# Peel the series off, last patch first ...
			for ((i = ${#list[@]} - 1; i >= 0; i--)); do
				p=$(patch_id "${list[i]}")
				if (cd "$S/$a" && git apply -R --check "$PATCHES/${list[i]}") 2>/dev/null; then
					(cd "$S/$a" && git apply -R "$PATCHES/${list[i]}")
					st[$p]=present how[$p]=reverse
				fi
			done
			# ... then put it back, first patch first.
			for ((i = 0; i < ${#list[@]}; i++)); do
				p=$(patch_id "${list[i]}")
				if (cd "$S/$a" && git apply --check "$PATCHES/${list[i]}") 2>/dev/null; then
					(cd "$S/$a" && git apply "$PATCHES/${list[i]}")
					[ -n "${st[$p]:-}" ] || st[$p]=absent how[$p]=forward
				fi
				[ -n "${st[$p]:-}" ] || st[$p]=unknown how[$p]=neither
				# The Subject: header, unfolded, without its [PATCH].
				subj=$(awk '/^Subject: / { s = $0; sub(/^Subject: (\[[^]]*\] )?/, "", s); on = 1; next }
					    on && /^[ \t]/ { sub(/^[ \t]+/, " "); s = s $0; next }
					    on { print s; exit }' "$PATCHES/${list[i]}")
				echo "${st[$p]} $a/$p ${how[$p]} $subj"
			done
			unset st how
			;;
		*) die "expect.py probes printed '$what'" ;;
		esac
	done
} > "$out.new"
mv "$out.new" "$out"

if [ "${1:-}" = --print ]; then
	python3 "$TOP/vm/report/expect.py" state "$out"
fi
