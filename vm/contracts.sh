#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The host's check of its own scripts, as TAP on stdout: a vm/ script whose
# stdout another one captures ($(...), <(...), make's $(shell ...)) prints
# there only what its contract says, the first time as every later time.
# It runs them in a temporary cache whose private apt state is empty, so
# that every first-time message (a new apt index, a download) has its
# chance to leak into the data, as it does on a fresh machine.  No kernel
# is built; what is fetched is two apt indexes and four small arm64
# packages from the Debian mirror the system's sources name.
#
#   debs.sh ARCH PKG...      one existing folder per package, in order
#   kernels.sh ...           names of vm/kernels/ (images: full, mm)
#   source.sh                "VERSION TARBALL" of an existing tarball
#   mm-selftests.sh          its folder: a build, not run here; checked
#   rootfs.sh                where captured (lib.sh's folders)
#
# Every capture of a vm/ script must name one of these.  patch-state.sh
# is captured by no one, but its file is read by the reports: nothing on
# its stdout, and every line of the file in its grammar.  The stored
# patches are data with a contract too: no identity in them.
#
# contracts.sh   KERNEL (the environment's): patch-state.sh reads its tree
#                (make check runs it, through vm/check.sh --host)
set -eu
. "$(dirname "$0")/lib.sh"
need apt-get dpkg-deb git

CONTRACTS="debs.sh kernels.sh source.sh mm-selftests.sh rootfs.sh"
# The kernel whose tree patch-state.sh reads: the selected one.
KERNEL_ARG=$KERNEL
tree=$KSRC
[ -f "$tree/Makefile" ] || die "no tree at $tree: run 'make tree KERNEL=$KERNEL' first"

T=$(mktemp -d "${TMPDIR:-/tmp}/dmirror-contracts.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/cache"
n=0 failed=0

# ok DESCRIPTION [why]: a result; with why (and its diagnostics in $T/why),
# a failure.
ok()
{
	n=$((n + 1))
	if [ $# = 1 ]; then
		echo "ok $n - $1"
		return
	fi
	failed=$((failed + 1))
	echo "# $2"
	[ ! -s "$T/why" ] || sed 's/^/#   /' "$T/why" | head -n 20
	echo "not ok $n - $1"
}

# run NAME ARGS...: vm/NAME in the temporary cache, for the selected kernel
# (or RUN_KERNEL); its stdout in $T/out, stderr in $T/err, exit status in
# rc.
run()
{
	local s=$1

	shift
	rc=0
	env DMIRROR_THP_CACHE="$T/cache" KERNEL="${RUN_KERNEL:-$KERNEL}" \
		"$TOP/vm/$s" "$@" > "$T/out" 2> "$T/err" || rc=$?
	: > "$T/why"
}

# expect_lines DESCRIPTION TEST: the result of a run, every line of whose
# stdout must pass TEST (a function of one line); and at least one line.
expect_lines()
{
	local line bad=0

	if [ "$rc" != 0 ]; then
		cat "$T/err" > "$T/why"
		ok "$1" "exit status $rc"
		return
	fi
	while IFS= read -r line; do
		"$2" "$line" && continue
		echo "stdout: '$line'" >> "$T/why"
		bad=1
	done < "$T/out"
	if [ ! -s "$T/out" ]; then
		ok "$1" "printed nothing"
	elif [ $bad = 1 ]; then
		ok "$1" "printed what is not its data"
	else
		ok "$1"
	fi
}

# The captures: every vm/ script that a command substitution, a process
# substitution or make's $(shell) runs, by name.
captured=$(cd "$TOP" && cat vm/*.sh Makefile selftests/Makefile |
	grep -v '^[[:space:]]*#' |
	grep -oE '(\$\$?\(|<\()[^()]*vm/[a-z0-9_-]+\.sh' |
	grep -v '^\$(call ' | sed -E 's,.*vm/,,' | sort -u)
: > "$T/why"
for s in $captured; do
	case " $CONTRACTS " in
	*" $s "*) ;;
	*) echo "vm/$s is captured, and this script does not check what it prints" >> "$T/why" ;;
	esac
done
if [ -z "$captured" ]; then
	ok "every captured vm/ script has a contract here" "found no capture at all: the scan is broken"
elif [ -s "$T/why" ]; then
	ok "every captured vm/ script has a contract here" "a capture without a contract"
else
	ok "every captured vm/ script has a contract here"
fi

# debs.sh: cold (an empty private apt state: the index and the packages
# are fetched, with their progress), then warm.
debs="busybox-static bash-static libcap-dev libnuma-dev"
debs_folder()
{
	case $1 in
	"$T/cache/debs-arm64/"*) [ -d "$1" ] ;;
	*) false ;;
	esac
}
# shellcheck disable=SC2086
run debs.sh arm64 $debs
expect_lines "debs.sh arm64, an empty apt state: one folder per package" debs_folder
cp "$T/out" "$T/cold"
# shellcheck disable=SC2086
run debs.sh arm64 $debs
expect_lines "debs.sh arm64, warm: one folder per package" debs_folder
if [ "$(wc -l < "$T/cold")" = "$(echo "$debs" | wc -w)" ] && cmp -s "$T/cold" "$T/out"; then
	ok "debs.sh: as many lines as packages, cold and warm alike"
else
	diff "$T/cold" "$T/out" > "$T/why" || [ $? = 1 ]
	ok "debs.sh: as many lines as packages, cold and warm alike" "the two runs differ, or miss a package"
fi

# kernels.sh: names of vm/kernels/, or an image's.
names=" $(kernel_names | tr '\n' ' ') "
kernel_word()
{
	local w

	[ -n "$1" ] || return 1
	for w in $1; do
		case $names in
		*" $w "*) ;;
		*) return 1 ;;
		esac
	done
}
image_word() { case $1 in full|mm) ;; *) false ;; esac; }
run kernels.sh list
expect_lines "kernels.sh list: names of vm/kernels/" kernel_word
run kernels.sh list ci
expect_lines "kernels.sh list ci: names of vm/kernels/" kernel_word
for f in default harness; do
	run kernels.sh get "$f"
	expect_lines "kernels.sh get $f: one name of vm/kernels/" kernel_word
done
# shellcheck disable=SC2086
run kernels.sh arches $names
expect_lines "kernels.sh arches: names of vm/kernels/" kernel_word
for k in $names; do
	run kernels.sh images "$k"
	expect_lines "kernels.sh images $k: image names" image_word
	run kernels.sh field "$k" compare
	c=$(cat "$T/out")
	if [ "$rc" = 0 ] && [ "$(wc -l < "$T/out")" = 1 ] && { [ -z "$c" ] || kernel_word "$c"; }; then
		ok "kernels.sh field $k compare: one line, empty or a name"
	else
		cat "$T/out" "$T/err" > "$T/why"
		ok "kernels.sh field $k compare: one line, empty or a name" "exit status $rc"
	fi
done
run kernels.sh field no-such-kernel compare
if [ "$rc" != 0 ] && [ ! -s "$T/out" ] && [ -s "$T/err" ]; then
	ok "kernels.sh field of no kernel: an error, on stderr only"
else
	cat "$T/out" > "$T/why"
	ok "kernels.sh field of no kernel: an error, on stderr only" "exit status $rc"
fi

# source.sh, once per Debian source of vm/kernels/: from a suite through
# an empty private apt state (the index is fetched, with its progress),
# the tarball taken from this cache (a hard link, not 150 MB again);
# from the system's own sources at once.
version_tarball()
{
	local v f x

	read -r v f x <<< "$1"
	[ -n "$v" ] && [ -f "$f" ] && [ -z "$x" ]
}
declare -A seen=()
for k in $(kernel_names); do
	kernel_select "$k"
	[ "$SOURCE_KIND" = debian ] || continue
	[ -z "${seen[$SOURCE_PACKAGE $SOURCE_SUITE]:-}" ] || continue
	seen[$SOURCE_PACKAGE $SOURCE_SUITE]=1
	if [ -n "$SOURCE_SUITE" ]; then
		have=
		mkdir -p "$T/cache/apt/src"
		for f in "$CACHE"/apt/src/"$SOURCE_PACKAGE"-*.tar.xz; do
			[ -f "$f" ] || continue
			ln "$f" "$T/cache/apt/src/" 2>/dev/null || cp "$f" "$T/cache/apt/src/"
			have=1
		done
		if [ -z "$have" ]; then
			echo "# source.sh $SOURCE_PACKAGE $SOURCE_SUITE: not checked, this cache has not fetched it"
			continue
		fi
	fi
	RUN_KERNEL=$k run source.sh
	what="source.sh ($SOURCE_PACKAGE${SOURCE_SUITE:+ from $SOURCE_SUITE, an empty apt state})"
	expect_lines "$what: VERSION TARBALL" version_tarball
	if [ "$(wc -l < "$T/out")" = 1 ]; then
		ok "$what: one line"
	else
		cp "$T/out" "$T/why"
		ok "$what: one line" "$(wc -l < "$T/out") lines"
	fi
done
kernel_select "$KERNEL_ARG"

# patch-state.sh on the selected kernel's tree, read as a tree of one's
# own: nothing on stdout, its file in its grammar.
state_line()
{
	case $1 in
	"# vm/patch-state.sh: "*) ;;
	"arch x86_64"|"arch arm64") ;;
	has\ *:*|lacks\ *:*) [ "$(echo "$1" | wc -w)" = 2 ] ;;
	present\ *|absent\ *|unknown\ *|n/a\ *)
		echo "$1" | grep -qE '^[a-z/]+ [A-Za-z0-9._-]+/([A-Za-z0-9._-]+/)?[0-9]{4} (feature|reverse|forward|neither|other-series) .+$'
		;;
	*) false ;;
	esac
}
RUN_KERNEL=$tree run patch-state.sh
if [ "$rc" = 0 ] && [ ! -s "$T/out" ]; then
	ok "patch-state.sh: nothing on stdout"
else
	cat "$T/out" "$T/err" > "$T/why"
	ok "patch-state.sh: nothing on stdout" "exit status $rc"
fi
state=$(find "$T/cache/kernels" -path '*/stage-*/patches' | head -n 1)
if [ -f "$state" ]; then
	cp "$state" "$T/out"
	expect_lines "patch-state.sh's file: every line in its grammar" state_line
else
	ok "patch-state.sh's file: every line in its grammar" "it wrote no file"
fi

# The stored patches carry no identity: the posting step stamps the
# poster's (vm/mainline-series.sh).  Their header is the mbox From line,
# Date: and Subject: (folded or not), and nothing anywhere signs off or
# names an address in a domain reserved for examples.
: > "$T/why"
for p in "$TOP"/kernel-prereq-patches/*/*.patch "$TOP"/kernel-prereq-patches/*/*/*.patch; do
	[ -f "$p" ] || continue
	awk -v f="${p#"$TOP"/}" '
		NR == 1 { if ($0 !~ /^From [0-9a-f]+ /) print f ": line 1 is not an mbox From line"; hdr = 1; next }
		hdr && /^$/ { hdr = 0; next }
		hdr && /^(Date|Subject): / { subj = /^Subject: /; next }
		hdr && /^[ \t]/ && subj { next }
		hdr { print f ":" NR ": a header line other than Date: and Subject: (" $0 ")"; subj = 0; next }
		/^---$/ { exit }
		/^(Signed-off-by|From): / { print f ":" NR ": " $0 }
	' "$p" >> "$T/why"
	reserved_addresses "$p" | sed "s,^$TOP/,," >> "$T/why"
done
if [ -s "$T/why" ]; then
	ok "kernel-prereq-patches: no identity in a stored patch" "an author, a sign-off or a reserved address"
else
	ok "kernel-prereq-patches: no identity in a stored patch"
fi

echo "1..$n"
[ "$failed" = 0 ]
