#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Prepare the selected kernel's tree in the cache: extract Debian's
# source package (vm/source.sh), commit it as a pristine base (tag
# base), and apply the kernel's series with git am on the dmirror-thp
# branch.  A pristine kernel stays at base.  Re-applies only when the
# series or the source version changes.
#
# A tree of one's own (source: tree PATH [REV]) is only checked when it is
# built as it is; with REV or a series its base is a scratch clone in the
# cache (git clone --shared: the tree's objects, read only) at REV, or at
# HEAD with the tree's uncommitted changes committed on top.
#
# The series is applied in a scratch worktree ($KDIR/am), and the build
# tree then checks out the result: git rewrites only the files that differ
# from what the build tree has, so an edit to one patch rebuilds what that
# patch touches, not everything the series touches.
#
# tree.sh [--upto N]   apply only the first N patches (bisect checks)
set -eu
. "$(dirname "$0")/lib.sh"
need git tar xz sha256sum flock

AM=$KDIR/am
upto=
[ "${1:-}" = --upto ] && upto=$2

# git commands on a tree of one's own, which must not write to it: git
# refreshes the index of a diff or describe --dirty whatever
# GIT_OPTIONAL_LOCKS says, so they run on a copy of the index in the
# cache.
git_ro()
{
	local idx

	idx=$(git -C "$SOURCE_TREE" rev-parse --path-format=absolute --git-path index)
	mkdir -p "$KDIR"
	rm -f "$KDIR/index.ro"
	[ ! -f "$idx" ] || cp "$idx" "$KDIR/index.ro"
	GIT_INDEX_FILE=$KDIR/index.ro GIT_OPTIONAL_LOCKS=0 git -C "$SOURCE_TREE" "$@"
}

# tree_is_git: the tree of one's own is a git tree's top (not a folder
# inside some other repository).
tree_is_git()
{
	[ "$(git -C "$SOURCE_TREE" rev-parse --show-toplevel 2>/dev/null)" = "$SOURCE_TREE" ]
}

if user_tree; then
	# Out-of-tree builds need a source tree that was never built in
	# place; kbuild's own message comes only after the configuration.
	for f in .config include/config include/generated; do
		[ ! -e "$SOURCE_TREE/$f" ] ||
			die "$SOURCE_TREE has $f: it was built in place, and kbuild builds out of tree (O=) only from a clean source tree; run 'make mrproper' there (SERIES= builds a scratch clone of it instead, with that series applied)"
	done
	mk=$SOURCE_TREE/Makefile
	ver=$(awk -F' *= *' '/^VERSION/ { v = $2 } /^PATCHLEVEL/ { p = $2 }
		/^SUBLEVEL/ { s = $2 } /^EXTRAVERSION/ { e = $2; exit }
		END { printf "%s.%s.%s%s", v, p, s, e }' "$mk")
	if [ "$KSRC" = "$SOURCE_TREE" ]; then
		desc=
		! tree_is_git || desc=", $(git_ro describe --always --dirty)"
		progress "$KERNEL: $SOURCE_TREE ($ver$desc), built as it is"
		exit 0
	fi
	tree_is_git ||
		die "$SOURCE_TREE is not a git tree: SERIES= (or a kernel file's REV) needs one, to clone"
	rev=${SOURCE_REV:-HEAD}
	commit=$(git_ro rev-parse -q --verify "$rev^{commit}") ||
		die "$SOURCE_TREE has no commit '$rev'"
	# At HEAD, what the tree has not committed is part of it (its tracked
	# files: a file git does not track is not part of the clone).
	dirty=
	[ -n "$SOURCE_REV" ] || dirty=$(git_ro diff HEAD --binary | sha256sum | cut -c1-16)
	[ "$dirty" != "$(: | sha256sum | cut -c1-16)" ] || dirty=
	ver="$commit${dirty:++$dirty}"
fi
if [ "$SOURCE_KIND" = debian ]; then
	src=$(KERNEL=$KERNEL "$TOP/vm/source.sh") || exit 1
	read -r ver tarball extra <<< "$src"
	[ -f "$tarball" ] && [ -z "$extra" ] && [ "$(echo "$src" | wc -l)" = 1 ] ||
		die "vm/source.sh printed '$src' where 'VERSION TARBALL' was expected"
fi
if [ -n "$PATCHES" ]; then
	# A posting of a series (series: kernel-prereq-patches/7.3/hotfixes)
	# has the series' BASE.
	bfile=$PATCHES/BASE
	[ -f "$bfile" ] || bfile=$(dirname "$PATCHES")/BASE
	[ -f "$bfile" ] || die "no $PATCHES/BASE"
	base=$(cat "$bfile")
	[ "$ver" = "$base" ] ||
		echo "dmirror-thp: warning: ${SOURCE_PACKAGE:-$SOURCE_TREE} is '$ver', the series ${PATCHES#"$TOP"/} was tested on $base" >&2
fi

list=$(series_patches)
[ -n "$upto" ] && list=$(echo "$list" | head -n "$upto")
for p in $list; do
	[ -f "$PATCHES/$p" ] || die "series names $p, which does not exist"
done
# shellcheck disable=SC2086
key=$( { echo "$ver"; [ -z "$list" ] || (cd "$PATCHES" && cat $list); } |
	sha256sum | cut -c1-16)

# The trees' commits are by this machine's account (lib.sh's tree_ident).
who=$(tree_ident)
GIT_AUTHOR_NAME=$(ident_name "$who")
GIT_AUTHOR_EMAIL=$(ident_email "$who")
export GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
git_k() { git -C "$KSRC" "$@"; }
git_am() { git -C "$AM" "$@"; }
# Abort a git am that an interrupted run left in the scratch worktree.
am_abort() { [ ! -d "$(git_am rev-parse --path-format=absolute --git-path rebase-apply)" ] || git_am am --abort; }

# Everything below changes the tree: one at a time, and never under a build
# (the build lock of lib.sh's locked(), held until the script exits).
mkdir -p "$KDIR"
exec 8> "$CACHE/build.lock"
flock 8
# No "git gc --auto" after a commit: it goes to the background with the
# lock's descriptor and holds the lock, and the next build, for as long as
# it repacks a kernel's objects.  The cache's trees are scratch.
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=gc.auto GIT_CONFIG_VALUE_0=0

# The base branch: Debian's source, or one's own tree.
BR=debian
user_tree && BR=source
# A tree of one's own: a scratch clone at the commit, its uncommitted
# changes committed on top.
if user_tree && [ "$(cat "$KSRC/.dmirror-version" 2>/dev/null)" != "$ver" ]; then
	t=$(now)
	progress "cloning $SOURCE_TREE at ${SOURCE_REV:-HEAD} (${commit:0:12}${dirty:+ and its uncommitted changes}) into $KSRC"
	if ! git_k rev-parse -q --verify HEAD > /dev/null 2>&1; then
		rm -rf "$KSRC" "$AM"
		git clone -q --shared --no-checkout "$SOURCE_TREE" "$KSRC"
		echo "/.dmirror-*" >> "$KSRC/.git/info/exclude"
	fi
	[ ! -d "$AM" ] || am_abort
	git_k checkout -q -f -B "$BR" "$commit"
	if [ -n "$dirty" ]; then
		git_ro diff HEAD --binary | git_k apply --index ||
			die "the uncommitted changes of $SOURCE_TREE do not apply to its HEAD"
		git_k commit -q -m "uncommitted changes of $SOURCE_TREE"
	fi
	git_k tag -f base > /dev/null
	rm -f "$KSRC/.dmirror-series"
	echo "$ver" > "$KSRC/.dmirror-version"
	took "$t" "clone ($KERNEL)"
fi

# A fresh or stale (other Debian version) tree is extracted again.
if [ "$SOURCE_KIND" = debian ] &&
   [ "$(cat "$KSRC/.dmirror-version" 2>/dev/null)" != "$ver" ]; then
	t=$(now)
	progress "extracting $SOURCE_PACKAGE $ver into $KSRC"
	rm -rf "$KSRC" "$AM" "$KDIR/${SOURCE_PACKAGE:?}"
	tar -C "$KDIR" -xf "$tarball"
	mv "$KDIR/$SOURCE_PACKAGE" "$KSRC"
	progress "committing the pristine base"
	git_k init -q -b debian
	echo "/.dmirror-*" >> "$KSRC/.git/info/exclude"
	# Debian's .gitignore ignores the whole top level: force.
	git_k add -A -f
	git_k commit -q -m "$SOURCE_PACKAGE $ver (Debian)"
	git_k tag base
	echo "$ver" > "$KSRC/.dmirror-version"
	took "$t" "extract ($KERNEL)"
fi

[ "$(cat "$KSRC/.dmirror-series" 2>/dev/null)" = "$key" ] && exit 0

if [ -z "$list" ]; then
	git_k checkout -q -f "$BR"
	git_k reset -q --hard base
	echo "$key" > "$KSRC/.dmirror-series"
	progress "$KERNEL: pristine tree at base ($ver)"
	exit 0
fi

t=$(now)
progress "applying the $KERNEL series ($(echo "$list" | grep -c .) patches)"
if ! git -C "$AM" rev-parse -q --verify HEAD >/dev/null 2>&1; then
	rm -rf "$AM"
	git_k worktree prune
	git_k worktree add -q --detach "$AM" base
fi
am_abort
git_am checkout -q -f --detach base
for p in $list; do
	if ! am_patch "$AM" "$p" > "$KDIR/am.log" 2>&1; then
		echo "dmirror-thp: error: $KERNEL patch $p does not apply:" >&2
		grep -v -e '^hint:' -e 'git am --' -e 'resolved this problem' "$KDIR/am.log" | sed 's/^/    /' >&2
		git_am apply --check -v "$PATCHES/$p" 2>&1 | grep -A8 -i 'error\|failed' | head -n 30 >&2
		am_abort
		rm -f "$KSRC/.dmirror-series"
		exit 1
	fi
done
# Only the files that differ from the build tree's are written.
git_k checkout -q -f -B dmirror-thp "$(git_am rev-parse HEAD)"
echo "$key" > "$KSRC/.dmirror-series"
progress "$KERNEL tree at $(git_k rev-parse --short HEAD) on branch dmirror-thp"
took "$t" "series ($KERNEL)"
