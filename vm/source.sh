#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The selected kernel's Debian source (vm/kernels/$KERNEL's source:): print
# "VERSION TARBALL" on the last line, fetching it first if need be.
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
A=$CACHE/apt
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || die "no $keyring: install debian-archive-keyring"

# The Debian archive's address as the system's sources name it: the URI of
# the first source that carries a bookworm suite, deb822 or one-line style.
mirror()
{
	local f

	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '/^$/ { if (deb && uri) { print uri; exit } uri = deb = 0 }
		     /^URIs:/ { uri = $2 }
		     /^Suites:/ && / bookworm( |$)/ { deb = 1 }
		     END { if (deb && uri) print uri }' "$f"
	done
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /=/ && $i !~ /\]$/) break;
			if ($(i + 1) == "bookworm") print $i }'
}
uri=$(mirror | head -n 1)
[ -n "$uri" ] || die "no Debian bookworm source in /etc/apt: cannot tell which mirror to fetch $pkg from"

mkdir -p "$A/lists/partial" "$A/archives/partial" "$A/etc/preferences.d" "$A/src"
echo "deb [signed-by=$keyring] $uri $suite main" > "$A/etc/sources.list.new"
cmp -s "$A/etc/sources.list.new" "$A/etc/sources.list" 2>/dev/null ||
	{ mv "$A/etc/sources.list.new" "$A/etc/sources.list"; rm -f "$A/updated"; }
rm -f "$A/etc/sources.list.new"
APT=(-o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A" -o "Dir::Cache::archives=$A/archives"
     -o "Dir::Etc::SourceList=$A/etc/sources.list" -o "Dir::Etc::SourceParts=$A/etc/none"
     -o "Dir::Etc::Preferences=$A/etc/none" -o "Dir::Etc::PreferencesParts=$A/etc/preferences.d"
     -o "Dir::State::status=/dev/null" -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1"
     -o "APT::Architecture=$(dpkg --print-architecture)")

exec 9> "$A/lock"
flock 9
if [ -z "$(find "$A/updated" -mmin -1440 2>/dev/null)" ]; then
	t=$(now)
	progress "apt (private state in $A): $uri $suite"
	apt-get "${APT[@]}" -qq update > "$A/update.log" 2>&1 ||
		die "apt-get update of $uri $suite failed (see $A/update.log)"
	touch "$A/updated"
	took "$t" "apt index of $suite"
fi
ver=$(apt-cache "${APT[@]}" show "$pkg" 2>/dev/null |
      awk '/^Version:/ { print $2; exit }')
[ -n "$ver" ] || die "$pkg is not in $uri $suite"
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
