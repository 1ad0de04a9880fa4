#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The selected kernel's Debian source (vm/kernels/$KERNEL's source:): print
# "VERSION TARBALL", and nothing else, fetching it first if need be.
#
#   debian PACKAGE        from the system's own apt sources, installed by
#                         vm/deps.sh: /usr/src/PACKAGE.tar.xz
#   debian PACKAGE SUITE  from SUITE of the Debian mirror that the system's
#                         apt sources name.  The system's apt configuration
#                         is left alone: apt runs on a private state in
#                         $CACHE/apt (its own sources list, lists and
#                         archives), downloads the package without
#                         installing it, and the tarball is taken out of
#                         the .deb into the cache.  The index is refreshed
#                         once a day.
#
# source.sh PACKAGE SUITE fetches that package instead: a Debian kernel
# source to extract and build as a tree of one's own (docs/trees.md).
set -eu
. "$(dirname "$0")/lib.sh"

pkg=${1:-$SOURCE_PACKAGE}
suite=${2:-$SOURCE_SUITE}
[ $# = 0 ] || [ $# = 2 ] || die "usage: source.sh [PACKAGE SUITE]"
if [ -z "$suite" ]; then
	tarball=/usr/src/$pkg.tar.xz
	[ -f "$tarball" ] || die "$tarball not found: run 'make deps'"
	ver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null) ||
		die "$pkg is not installed: run 'make deps'"
	echo "$ver $tarball"
	exit 0
fi

need apt-get apt-cache dpkg-deb
. "$(dirname "$0")/apt.sh"
A=$CACHE/apt
apt_private "$A" "$suite" "$(dpkg --print-architecture)"
ver=$(apt-cache "${APT[@]}" show "$pkg" 2>/dev/null |
      awk '/^Version:/ { print $2; exit }')
[ -n "$ver" ] || die "$pkg is not in Debian's $suite"
tarball=$A/src/$pkg-$ver.tar.xz
if [ ! -f "$tarball" ]; then
	t=$(now)
	progress "downloading $pkg $ver"
	rm -f "$A"/archives/"${pkg}"_*.deb
	(cd "$A/archives" && apt-get "${APT[@]}" -qq download "$pkg=$ver") \
		> "$A/download.log" 2>&1 ||
		die "apt-get download $pkg=$ver failed (see $A/download.log)"
	deb=$(ls "$A"/archives/"${pkg}"_*.deb)
	rm -rf "$A/x"
	dpkg-deb -x "$deb" "$A/x"
	[ -f "$A/x/usr/src/$pkg.tar.xz" ] || die "$deb holds no usr/src/$pkg.tar.xz"
	rm -f "$A"/src/"$pkg"-*.tar.xz
	mv "$A/x/usr/src/$pkg.tar.xz" "$tarball"
	rm -rf "$A/x" "$deb"
	took "$t" "download of $pkg $ver"
fi
echo "$ver $tarball"
