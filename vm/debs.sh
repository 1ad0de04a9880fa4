#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Another architecture's Debian packages, unpacked in the cache (dpkg-deb
# -x, never installed): the static busybox and bash of an arm64 guest's
# initramfs, the static libraries its mm selftests link.  The packages come from the system's own Debian release and
# mirror through a private apt state per architecture ($CACHE/apt-ARCH,
# vm/apt.sh): the system's apt configuration is left alone (no
# dpkg --add-architecture).
#
# debs.sh ARCH PACKAGE...   prints the folder each PACKAGE is unpacked in,
#                           one line each, in order, and nothing else
#                           (progress goes to stderr)
set -eu
. "$(dirname "$0")/lib.sh"
need apt-get apt-cache dpkg-deb
. "$(dirname "$0")/apt.sh"

[ $# -ge 2 ] || die "usage: debs.sh ARCH PACKAGE..."
arch=$1
shift
# shellcheck disable=SC1091
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$suite" ] || die "no VERSION_CODENAME in /etc/os-release: which Debian release is this?"
A=$CACHE/apt-$arch
apt_private "$A" "$suite" "$arch"
for pkg in "$@"; do
	ver=$(apt-cache "${APT[@]}" show "$pkg:$arch" 2>/dev/null |
	      awk '/^Version:/ { print $2; exit }')
	[ -n "$ver" ] || die "$pkg ($arch) is not in Debian's $suite"
	out=$CACHE/debs-$arch/$pkg-${ver#*:}
	if [ ! -d "$out" ]; then
		progress "downloading $pkg $ver ($arch)"
		rm -f "$A"/archives/"${pkg}"_*.deb
		(cd "$A/archives" && apt-get "${APT[@]}" -qq download "$pkg:$arch=$ver") \
			> "$A/download.log" 2>&1 ||
			die "apt-get download $pkg:$arch=$ver failed (see $A/download.log)"
		rm -rf "$out.new"
		mkdir -p "$CACHE/debs-$arch"
		dpkg-deb -x "$A"/archives/"${pkg}"_*.deb "$out.new" ||
			die "cannot unpack $pkg $ver ($arch)"
		rm -f "$A"/archives/"${pkg}"_*.deb
		mv "$out.new" "$out"
	fi
	echo "$out"
done
