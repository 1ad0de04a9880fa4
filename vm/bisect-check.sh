#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bisectability check of the selected kernel's series: apply it one patch
# at a time with git am in a scratch worktree of the pristine tree, and build
# the kernel after each one (incremental, ccache, one build at a time under
# the shared build lock).  Stops at the first patch that does not apply or
# does not build.
#
# bisect-check.sh [FIRST [LAST]]   build after patches FIRST..LAST only
#                                  (the earlier ones are applied unbuilt)
# BISECT_TARGETS="mm/ fs/proc/"    make targets (default: the image, modules)
set -eu
. "$(dirname "$0")/lib.sh"
need git make "$TARGET_CC" ccache flock

[ -n "$PATCHES" ] || die "$KERNEL has no series to bisect"
# Its worktrees live in the tree: only a tree of the cache.
! user_tree || die "$KERNEL is a tree of your own: bisect-check builds the project's kernels (vm/kernels/)"
WT=$KDIR/bisect/linux
B=$KDIR/bisect/build
TARGETS=${BISECT_TARGETS:-$KIMAGE_TARGET modules}

kbuild_env

git -C "$KSRC" rev-parse -q --verify base >/dev/null ||
	die "no pristine tree in $KSRC: run 'make tree' first"

mapfile -t list < <(series_patches)
n=${#list[@]}
[ "$n" -gt 0 ] || die "the series is empty"
first=${1:-1}
last=${2:-$n}
[ "$first" -ge 1 ] && [ "$last" -le "$n" ] && [ "$first" -le "$last" ] ||
	die "bad range $first..$last (the series has $n patches)"

# A fresh detached worktree at the pristine base; no branch is created.
progress "scratch worktree at base: $WT"
git -C "$KSRC" worktree remove --force "$WT" 2>/dev/null || rm -rf "$WT"
git -C "$KSRC" worktree prune
mkdir -p "$(dirname "$WT")"
git -C "$KSRC" worktree add -q --detach "$WT" base

mkdir -p "$B"
if [ ! -f "$B/.config" ]; then
	[ -f "$KBUILD/.config" ] ||
		die "no kernel config in $KBUILD: run 'make kernel KERNEL=$KERNEL' first"
	cp "$KBUILD/.config" "$B/.config"
fi

t0=$(now)
for i in $(seq 1 "$last"); do
	p=${list[$((i - 1))]}
	[ -f "$PATCHES/$p" ] || die "series names $p, which does not exist"
	am_patch "$WT" "$p" || die "$KERNEL patch $i/$n $p does not apply"
	[ "$i" -lt "$first" ] && continue
	t=$(now)
	# shellcheck disable=SC2086
	if ! locked make -C "$WT" O="$B" ARCH="$KARCH" ${CROSS:+CROSS_COMPILE=$CROSS} \
		"CC=ccache $TARGET_CC" KCFLAGS=-pipe \
		-j"$JOBS" -s olddefconfig $TARGETS > "$B/build-$i.log" 2>&1; then
		tail -n 40 "$B/build-$i.log" >&2
		die "$KERNEL patch $i/$n $p does not build (log: $B/build-$i.log)"
	fi
	progress "$KERNEL patch $i/$n builds ($(($(now) - t)) s): $p"
done
took "$t0" "bisect check of $KERNEL patches $first..$last"
