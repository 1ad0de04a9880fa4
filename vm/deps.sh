#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install, from Debian's packages, whatever the bench needs and is missing.
# Idempotent: a no-op (well under 5 s) when everything is present.
#
# deps.sh [KERNEL...]   also what those kernels' architectures need (a
#                       cross compiler, QEMU); without KERNEL, every
#                       kernel's of vm/kernels/
set -eu
. "$(dirname "$0")/lib.sh"

PKGS="busybox-static kmod cpio bc bison flex libelf-dev
libssl-dev ccache xz-utils gcc make libc6-dev perl python3 rsync sparse
gnuplot-nox git debian-archive-keyring stress-ng trinity bash-static
libnuma-dev libcap-dev"
# The kernel sources that come from the system's own apt sources
# (vm/kernels/: a source: without a suite).
for k in $(kernel_names); do
	kernel_select "$k"
	[ "$SOURCE_KIND" != debian ] || [ -n "$SOURCE_SUITE" ] ||
		PKGS="$PKGS $SOURCE_PACKAGE"
done
# make coverage (the gcov flavour) reads its profile with lcov.
[ "$FLAVOR" != gcov ] || PKGS="$PKGS lcov"
for k in ${*:-$(kernel_names)}; do
	kernel_select "$k"
	PKGS="$PKGS $(arch_packages)"
done

missing=
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

[ "$(id -u)" = 0 ] || die "missing packages:$missing (run 'make deps' as root)"
progress "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null ||
	die "apt-get update failed"
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
	die "apt-get install failed for:$missing"
progress "packages installed"
