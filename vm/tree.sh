#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Prepare the kernel tree in the cache: extract Debian's linux-source-6.12,
# commit it as a pristine base, and apply kernel-prereq-patches/series with
# git am on the dmirror-thp branch.  Re-applies only when the series or the
# installed source version changes.
#
# tree.sh [--upto N]   apply only the first N patches (bisect checks)
set -eu
. "$(dirname "$0")/lib.sh"
need git tar xz sha256sum

PATCHES=$TOP/kernel-prereq-patches
TARBALL=/usr/src/linux-source-6.12.tar.xz
upto=
[ "${1:-}" = --upto ] && upto=$2

[ -f "$TARBALL" ] || die "$TARBALL not found: run 'make deps'"
ver=$(installed_src_version)
base=$(cat "$PATCHES/BASE" 2>/dev/null || true)
[ "$ver" = "$base" ] ||
	echo "dmirror-thp: warning: installed linux-source-6.12 is '$ver', the series was tested on '$base'" >&2

series_patches()
{
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$PATCHES/series"
}

list=$(series_patches)
[ -n "$upto" ] && list=$(echo "$list" | head -n "$upto")
key=$( {
	echo "$ver"
	for p in $list; do
		[ -f "$PATCHES/$p" ] || die "series names $p, which does not exist"
		sha256sum < "$PATCHES/$p"
	done
} | sha256sum | cut -c1-16)

git_k() { git -C "$KSRC" -c user.name=dmirror-thp -c user.email=bench@localhost "$@"; }

# A fresh or stale (other Debian version) tree is extracted again.
if [ "$(cat "$KSRC/.dmirror-version" 2>/dev/null)" != "$ver" ]; then
	t=$(now)
	step "extracting linux-source $ver into $KSRC"
	rm -rf "$KSRC" "$CACHE/linux-source-6.12"
	mkdir -p "$CACHE"
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

if [ "$(cat "$KSRC/.dmirror-series" 2>/dev/null)" = "$key" ]; then
	exit 0
fi

step "applying kernel-prereq-patches ($(echo "$list" | grep -c . || true) patches)"
git_k am --abort >/dev/null 2>&1 || true
git_k checkout -q -f -B dmirror-thp base
for p in $list; do
	if ! git_k am -q --whitespace=nowarn "$PATCHES/$p" > "$CACHE/am.log" 2>&1; then
		echo "dmirror-thp: error: patch $p does not apply:" >&2
		grep -v -e '^hint:' -e 'git am --' -e 'resolved this problem' "$CACHE/am.log" | sed 's/^/    /' >&2
		git_k apply --check -v "$PATCHES/$p" 2>&1 | grep -A8 -i 'error\|failed' | head -n 30 >&2 || true
		git_k am --abort >/dev/null 2>&1 || true
		rm -f "$KSRC/.dmirror-series"
		exit 1
	fi
done
echo "$key" > "$KSRC/.dmirror-series"
step "tree at $(git_k rev-parse --short HEAD) on branch dmirror-thp"
