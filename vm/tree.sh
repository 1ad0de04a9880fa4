#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Prepare the kernel tree in the cache: extract Debian's linux-source-6.12,
# commit it as a pristine base, and apply kernel-prereq-patches/series with
# git am on the dmirror-thp branch.  Re-applies only when the series or the
# installed source version changes.
#
# The series is applied in a scratch worktree ($CACHE/am), and the build
# tree then checks out the result: git rewrites only the files that differ
# from what the build tree has, so an edit to one patch rebuilds what that
# patch touches, not everything the series touches.
#
# tree.sh [--upto N]   apply only the first N patches (bisect checks)
set -eu
. "$(dirname "$0")/lib.sh"
need git tar xz sha256sum flock

PATCHES=$TOP/kernel-prereq-patches
TARBALL=/usr/src/linux-source-6.12.tar.xz
AM=$CACHE/am
upto=
[ "${1:-}" = --upto ] && upto=$2

[ -f "$TARBALL" ] || die "$TARBALL not found: run 'make deps'"
ver=$(installed_src_version)
base=$(cat "$PATCHES/BASE" 2>/dev/null || true)
[ "$ver" = "$base" ] ||
	echo "dmirror-thp: warning: installed linux-source-6.12 is '$ver', the series was tested on '$base'" >&2

list=$(series_patches)
[ -n "$upto" ] && list=$(echo "$list" | head -n "$upto")
for p in $list; do
	[ -f "$PATCHES/$p" ] || die "series names $p, which does not exist"
done
# shellcheck disable=SC2086
key=$( { echo "$ver"; (cd "$PATCHES" && cat $list); } | sha256sum | cut -c1-16)

git_k() { git -C "$KSRC" -c user.name=dmirror-thp -c user.email=bench@localhost "$@"; }
git_am() { git -C "$AM" -c user.name=dmirror-thp -c user.email=bench@localhost "$@"; }

# Everything below changes the tree: one at a time, and never under a build
# (the build lock of lib.sh's locked(), held until the script exits).
mkdir -p "$CACHE"
exec 8> "$CACHE/build.lock"
flock 8

# A fresh or stale (other Debian version) tree is extracted again.
if [ "$(cat "$KSRC/.dmirror-version" 2>/dev/null)" != "$ver" ]; then
	t=$(now)
	step "extracting linux-source $ver into $KSRC"
	rm -rf "$KSRC" "$AM" "$CACHE/linux-source-6.12"
	tar -C "$CACHE" -xf "$TARBALL"
	mv "$CACHE/linux-source-6.12" "$KSRC"
	step "committing the pristine base"
	git_k init -q -b debian
	echo "/.dmirror-*" >> "$KSRC/.git/info/exclude"
	# Debian's .gitignore ignores the whole top level: force.
	git_k add -A -f
	git_k commit -q -m "linux-source-6.12 $ver (Debian)"
	git_k tag base
	echo "$ver" > "$KSRC/.dmirror-version"
	took "$t" "extract"
fi

[ "$(cat "$KSRC/.dmirror-series" 2>/dev/null)" = "$key" ] && exit 0

t=$(now)
step "applying kernel-prereq-patches ($(echo "$list" | grep -c .) patches)"
if ! git -C "$AM" rev-parse -q --verify HEAD >/dev/null 2>&1; then
	rm -rf "$AM"
	git_k worktree prune
	git_k worktree add -q --detach "$AM" base
fi
git_am am --abort >/dev/null 2>&1 || true
git_am checkout -q -f --detach base
for p in $list; do
	if ! git_am am -q --whitespace=nowarn "$PATCHES/$p" > "$CACHE/am.log" 2>&1; then
		echo "dmirror-thp: error: patch $p does not apply:" >&2
		grep -v -e '^hint:' -e 'git am --' -e 'resolved this problem' "$CACHE/am.log" | sed 's/^/    /' >&2
		git_am apply --check -v "$PATCHES/$p" 2>&1 | grep -A8 -i 'error\|failed' | head -n 30 >&2
		git_am am --abort >/dev/null 2>&1 || true
		rm -f "$KSRC/.dmirror-series"
		exit 1
	fi
done
# Only the files that differ from the build tree's are written.
git_k checkout -q -f -B dmirror-thp "$(git_am rev-parse HEAD)"
echo "$key" > "$KSRC/.dmirror-series"
step "tree at $(git_k rev-parse --short HEAD) on branch dmirror-thp"
took "$t" "series"
