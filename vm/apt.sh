# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# A private apt state in the cache, for packages the system does not
# install: a Debian kernel source of another suite (vm/source.sh), or
# another architecture's static programs (vm/debs.sh).  The system's apt
# configuration is left alone: apt runs with its own sources list, lists,
# archives and an empty dpkg status, and only downloads.  Sourced after
# lib.sh.

keyring=/usr/share/keyrings/debian-archive-keyring.gpg

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

# apt_private DIR SUITE ARCH: the state in DIR for SUITE (main) of that
# mirror and packages of ARCH; apt-get's options in APT.  DIR stays locked
# (descriptor 9) until the script ends.  The index is refreshed once a
# day, or when SUITE changes.
apt_private()
{
	local A=$1 suite=$2 arch=$3 uri t

	[ -f "$keyring" ] || die "no $keyring: install debian-archive-keyring"
	uri=$(mirror | head -n 1)
	[ -n "$uri" ] || die "no Debian bookworm source in /etc/apt: cannot tell which mirror to fetch from"
	mkdir -p "$A/lists/partial" "$A/archives/partial" "$A/etc/preferences.d" "$A/src"
	echo "deb [signed-by=$keyring] $uri $suite main" > "$A/etc/sources.list.new"
	cmp -s "$A/etc/sources.list.new" "$A/etc/sources.list" 2>/dev/null ||
		{ mv "$A/etc/sources.list.new" "$A/etc/sources.list"; rm -f "$A/updated"; }
	rm -f "$A/etc/sources.list.new"
	APT=(-o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A" -o "Dir::Cache::archives=$A/archives"
	     -o "Dir::Etc::SourceList=$A/etc/sources.list" -o "Dir::Etc::SourceParts=$A/etc/none"
	     -o "Dir::Etc::Preferences=$A/etc/none" -o "Dir::Etc::PreferencesParts=$A/etc/preferences.d"
	     -o "Dir::State::status=/dev/null" -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1"
	     -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch")

	exec 9> "$A/lock"
	flock 9
	if [ -z "$(find "$A/updated" -mmin -1440 2>/dev/null)" ]; then
		t=$(now)
		progress "apt (private state in $A): $uri $suite $arch"
		apt-get "${APT[@]}" -qq update > "$A/update.log" 2>&1 ||
			die "apt-get update of $uri $suite ($arch) failed (see $A/update.log)"
		touch "$A/updated"
		took "$t" "apt index of $suite ($arch)"
	fi
}
