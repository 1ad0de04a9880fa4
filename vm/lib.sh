# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034  # its variables are for the scripts that source it
# Common helpers for the dmirror-thp bench scripts.  Sourced, not run.
#
# KERNEL picks the guest kernel (see kernel_select below), FLAVOR its
# configuration.  Everything one kernel builds lives under
# $CACHE/kernels/$KERNEL: the tree (linux/), one build folder and one
# stage folder per flavour (build-$FLAVOR/, stage-$FLAVOR/).  The relative
# path from a build folder to its tree is the same for every kernel, so the
# compiler cache (CCACHE_BASEDIR) hits across kernels built from the same
# source.

CACHE=${DMIRROR_THP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dmirror-thp}
TOP=$(cd "$(dirname "$0")/.." && pwd)
FLAVOR=${FLAVOR:-normal}
LOGDIR=$CACHE/logs
JOBS=${JOBS:-$(($(nproc) + 1))}
case $FLAVOR in
normal|debug|gcov) ;;
*) echo "FLAVOR must be 'normal', 'debug' or 'gcov', not '$FLAVOR'" >&2; exit 2 ;;
esac

_t0=$(date +%s)
# Python run from a kernel tree (kunit.py) leaves no __pycache__ in it.
export PYTHONDONTWRITEBYTECODE=1

die()
{
	echo "dmirror-thp: error: $*" >&2
	exit 1
}

# progress MESSAGE: a progress line with the seconds since the script
# started, on stderr: a script's stdout is data (the folders of debs.sh,
# the names of kernels.sh, ...) that another script may capture.
progress()
{
	printf '[%4ss] %s\n' "$(($(date +%s) - _t0))" "$*" >&2
}

# folders WHAT < LINES: LINES, a captured script's stdout, checked to be
# folders that exist and nothing else; a stray line stops the run here,
# naming the script, not a step later with an error about a path.
folders()
{
	local line n=0

	while IFS= read -r line; do
		n=$((n + 1))
		[ -d "$line" ] ||
			die "$1 printed '$line' where a folder was expected (stdout carries data only)"
		echo "$line"
	done
	[ "$n" -gt 0 ] || die "$1 printed no folder"
}

need()
{
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 ||
			die "'$t' is missing: run 'make deps' (as root) first"
	done
}

# A kernel is a file, vm/kernels/NAME, of "field: value" lines; "#" starts
# a comment.  kernel_file is its one reader (vm/kernels.sh prints what it
# reads for make and the reports).  The fields:
#
#   source:       debian PACKAGE [SUITE]   Debian's kernel source package;
#                 without SUITE from the system's apt sources (make deps
#                 installs it), with one through the private apt state in
#                 the cache (vm/source.sh)
#                 tree PATH [REV]   a kernel tree of one's own, read and
#                 never written: built with O= in the cache as it is
#                 (uncommitted changes included); with REV or a series, a
#                 scratch clone (git clone --shared) in the cache
#   series:       FOLDER       the series applied with git am (a folder of
#                 kernel-prereq-patches/ with a series file); none: pristine
#   upto:         POSTING      only the series' postings up to and
#                 including this folder of it (a prefix of the posting
#                 order: what a tree that took some of them has)
#   config:       FRAGMENT...  config fragments merged after
#                 vm/config/base.config (paths from the checkout's top)
#   stock-tests:  NAME    this tree's stock hmm-tests, built as
#                 hmm-tests-NAME and run on every kernel
#   harness:      yes     the project's selftests build against this tree's
#                 kselftest harness, selftests helpers and uapi headers
#   default:      yes     the kernel of the one-kernel targets
#   ci:           yes     make and make check without KERNEL= cover it
#   ci-plans:     PLAN... there, only these plans of make check's PLAN
#                 boot on it (mm: its mm selftests; crash: its crash
#                 boots); named (KERNEL=, KERNELS=), it boots them all
#   subset:       yes     a tree with some of the postings: make
#                 check-subsets runs it, and fails on an XPASS or an
#                 unexplained failure
#   compare:      NAME    upstream's own code for this kernel: make
#                 migrate-bench runs NAME, then this one
#   bench-target: PERCENT NAME   make bench-compare's target: this
#                 kernel's throughput at least PERCENT % of NAME's
#   mm-selftests: yes     make check runs the tree's own mm selftests on it
#                 (vm/guest/plans/mm), and compares them with its compare:
#                 kernel's when both run
#   module:       no      the tree has no device-private THP migration
#                 (pristine 6.12): no dmirror-thp.ko, only the plans whose
#                 image needs none (mm, stock) boot on it
#   arch:         x86_64 (the default) or arm64: the guest's architecture;
#                 arm64 is cross-built (aarch64-linux-gnu-), its user space
#                 too, and boots on QEMU's virt machine (vm/qemu.sh)
KERNEL_FIELDS="source series upto config stock-tests harness default ci ci-plans subset compare bench-target mm-selftests module arch"

# A tree of one's own (make check KERNEL=/path/to/linux) is a kernel file
# too, written by kernel_name into $USER_KERNELS; vm/kernels/ lists only
# the project's own, those that make and make check cover.
USER_KERNELS=$CACHE/trees

# kernel_names: every kernel, in name order.
kernel_names()
{
	local f

	for f in "$TOP"/vm/kernels/*; do
		# Not an editor's or patch's leftover (7.3~, 7.3.orig).
		case ${f##*/} in
		*[!A-Za-z0-9._-]*|*.orig|*.rej) continue ;;
		esac
		[ -f "$f" ] && echo "${f##*/}"
	done
}

# kernel_file NAME: NAME's fields in KF[field] (an associative array).
kernel_file()
{
	local f=$TOP/vm/kernels/$1 line field n=0 w p
	local -a value

	[ -f "$f" ] || f=$USER_KERNELS/$1
	if [ ! -f "$f" ] || [ "${1#*/}" != "$1" ]; then
		n=$(kernel_names)
		die "no kernel '$1': vm/kernels/ has ${n//$'\n'/ } (or KERNEL=/path/to/linux, a tree of your own)"
	fi
	unset KF
	declare -gA KF=()
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		line=${line%%#*}
		[ -n "${line//[[:space:]]/}" ] || continue
		w="vm/kernels/$1:$n"
		case $line in
		*:*) ;;
		*) die "$w: not 'field: value'" ;;
		esac
		field=${line%%:*}
		field=${field//[[:space:]]/}
		read -r -a value <<< "${line#*:}"
		case " $KERNEL_FIELDS " in
		*" $field "*) ;;
		*) die "$w: '$field' is not a field ($KERNEL_FIELDS)" ;;
		esac
		[ -z "${KF[$field]+set}" ] || die "$w: $field given twice"
		case $field:${value[*]} in
		harness:yes|default:yes|ci:yes|subset:yes|mm-selftests:yes|module:no|arch:x86_64|arch:arm64) ;;
		arch:*) die "$w: arch takes x86_64 or arm64" ;;
		ci-plans:) die "$w: ci-plans takes plans of vm/guest/plans, mm or crash" ;;
		ci-plans:*)
			for p in "${value[@]}"; do
				[ -f "$TOP/vm/guest/plans/$p" ] ||
					die "$w: ci-plans: no plan vm/guest/plans/$p"
			done
			;;
		harness:*|default:*|ci:*|subset:*|mm-selftests:*) die "$w: $field takes 'yes'" ;;
		module:*) die "$w: module takes 'no' (without it, the module builds)" ;;
		esac
		KF[$field]=${value[*]}
	done < "$f"
	[ -z "${KF[upto]:-}" ] || [ -d "$TOP/${KF[series]:-/nonexistent}/${KF[upto]}" ] ||
		die "$f: upto: ${KF[upto]} is not a posting folder of its series"
	read -r -a value <<< "${KF[source]:-}"
	case ${value[0]:-}:${#value[@]} in
	debian:2|debian:3|tree:2|tree:3) ;;
	*) die "$f: source: is 'debian PACKAGE [SUITE]' or 'tree PATH [REV]'" ;;
	esac
}

# kernel_name KERNEL: the kernel's name.  A path is a tree of one's own:
# its kernel file ($USER_KERNELS/NAME, NAME from the folder's name and a
# hash of its path and SERIES) is written here, with SERIES=NAME's folder
# of kernel-prereq-patches/ as its series, and its own hmm-tests.
kernel_name()
{
	local path name f series=

	case $1 in
	*/*) ;;
	*) kernel_file "$1"; echo "$1"; return ;;
	esac
	path=$(realpath -e "$1" 2>/dev/null) || die "KERNEL=$1: no such folder"
	if [ ! -f "$path/Makefile" ] || [ ! -d "$path/mm" ] || [ ! -f "$path/Kconfig" ]; then
		die "KERNEL=$1: not a Linux source tree (no Makefile, Kconfig and mm/)"
	fi
	if [ -n "${SERIES:-}" ]; then
		series=kernel-prereq-patches/$SERIES
		[ -f "$TOP/$series/series" ] ||
			die "SERIES=$SERIES: no $series/series"
	fi
	name=$(basename "$path" | tr -c 'A-Za-z0-9._\n-' _)
	name=$name-$(echo "$path $series" | sha256sum | cut -c1-8)
	f=$USER_KERNELS/$name
	mkdir -p "$USER_KERNELS"
	{
		echo "# make check KERNEL=$1${series:+ SERIES=$SERIES}: a tree of one's own"
		echo "source:      tree $path"
		[ -z "$series" ] || echo "series:      $series"
		echo "stock-tests: $name"
	} > "$f.new"
	# Every script names the kernel: rewrite the file only if it changed.
	if cmp -s "$f.new" "$f"; then
		rm "$f.new"
	else
		mv "$f.new" "$f"
	fi
	kernel_file "$name"
	echo "$name"
}

# kernel_select NAME: the variables of one guest kernel, from its file:
# SOURCE_PACKAGE and SOURCE_SUITE (vm/source.sh), PATCHES (the series
# folder, empty for a pristine kernel), CONFIGS (its fragments, after
# vm/config/base.config), STOCK_TESTS (the name of the stock hmm-tests its
# tree provides, or empty), COMPARE (upstream's own code for it, or
# empty) and MODULE (no: dmirror-thp.ko does not build on it); and where
# it lives in the cache.  Its architecture (arch_select) gives the rest.
kernel_select()
{
	local -a src

	KERNEL=$(kernel_name "$1") || exit 1
	kernel_file "$KERNEL"
	read -r -a src <<< "${KF[source]}"
	SOURCE_KIND=${src[0]}
	SOURCE_PACKAGE='' SOURCE_SUITE='' SOURCE_TREE='' SOURCE_REV=''
	if [ "$SOURCE_KIND" = debian ]; then
		SOURCE_PACKAGE=${src[1]}
		SOURCE_SUITE=${src[2]:-}
	else
		SOURCE_TREE=${src[1]}
		SOURCE_REV=${src[2]:-}
	fi
	PATCHES=${KF[series]:+$TOP/${KF[series]}}
	UPTO=${KF[upto]:-}
	CONFIGS=${KF[config]:-}
	STOCK_TESTS=${KF[stock-tests]:-}
	COMPARE=${KF[compare]:-}
	MODULE=${KF[module]:-yes}
	KDIR=$CACHE/kernels/$KERNEL
	KSRC=$KDIR/linux
	# A tree built as it is: the tree itself, never written (O=).
	[ "$SOURCE_KIND" = debian ] || [ -n "$SOURCE_REV$PATCHES" ] ||
		KSRC=$SOURCE_TREE
	KBUILD=$KDIR/build-$FLAVOR
	STAGE=$KDIR/stage-$FLAVOR
	arch_select "${KF[arch]:-x86_64}"
}

# arch_select ARCH: what a guest of ARCH is built and booted with: GUEST_ARCH
# (x86_64, arm64), the kernel's ARCH= (KARCH) and CROSS_COMPILE= (CROSS,
# empty for the host's own), the image it boots (KIMAGE), QEMU, and the
# folder of its static test binaries (USR; the host's: $CACHE/userspace).
arch_select()
{
	GUEST_ARCH=$1
	case $1 in
	x86_64)
		KARCH=x86 CROSS= QEMU_SYSTEM=qemu-system-x86_64
		KIMAGE_TARGET=bzImage USR=$CACHE/userspace
		;;
	arm64)
		KARCH=arm64 CROSS=aarch64-linux-gnu- QEMU_SYSTEM=qemu-system-aarch64
		KIMAGE_TARGET=Image USR=$CACHE/userspace-arm64
		;;
	esac
	KIMAGE=$KBUILD/arch/$KARCH/boot/$KIMAGE_TARGET
	TARGET_CC=${CROSS}gcc
}

# arch_packages: the Debian packages that build and boot the selected
# kernel's architecture on this (amd64) machine.
arch_packages()
{
	case $GUEST_ARCH in
	x86_64) echo qemu-system-x86 ;;
	arm64) echo qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross binutils-aarch64-linux-gnu ;;
	esac
}

# user_tree: whether the selected kernel is a tree of one's own.
user_tree() { [ "$SOURCE_KIND" = tree ]; }

# kernels_with FIELD: the kernels whose file has FIELD, in name order.
kernels_with()
{
	local k

	for k in $(kernel_names); do
		kernel_file "$k"
		[ -z "${KF[$1]+set}" ] || echo "$k"
	done
}

# stock_tests: "KERNEL NAME" for each kernel whose tree provides stock
# hmm-tests (stock-tests: NAME), built as hmm-tests-NAME; at least one.
# A tree of one's own adds its own, when it is the selected kernel.
stock_tests()
{
	local k=

	for k in $(kernels_with stock-tests); do
		kernel_file "$k"
		echo "$k ${KF[stock-tests]}"
	done
	[ -n "$k" ] || die "no kernel of vm/kernels/ has stock-tests:"
	! user_tree || [ -z "$STOCK_TESTS" ] || echo "$KERNEL $STOCK_TESTS"
}

# uapi_headers NAME TREE OUT: TREE's uapi headers for the selected kernel's
# architecture installed in OUT (make headers_install in a build folder of
# its own: no configured kernel needed), again only when a uapi header of
# the tree is newer.
uapi_headers()
{
	local stamp=$3/usr/include/linux/mman.h

	[ ! -f "$stamp" ] ||
		[ -n "$(find "$2/include/uapi" "$2/arch/$KARCH/include/uapi" \
			-newer "$stamp" -print -quit)" ] || return 0
	progress "installing the $1 tree's uapi headers ($GUEST_ARCH)"
	locked make -s -C "$2" O="$3" ARCH="$KARCH" headers_install > /dev/null ||
		die "headers_install of $2 failed"
	touch "$stamp"
}

# guest_lib_flags PKG...: the compiler flags that link a static guest
# program with Debian's -dev packages PKG of the guest's architecture.
# Native, they are the host's (make deps): no flags; cross-built, they are
# unpacked in the cache (vm/debs.sh).
guest_lib_flags()
{
	local debs d flags=

	[ -n "$CROSS" ] || return 0
	debs=$("$TOP/vm/debs.sh" "$GUEST_ARCH" "$@") ||
		die "no $* for $GUEST_ARCH"
	for d in $(folders vm/debs.sh <<< "$debs"); do
		flags="$flags -isystem $d/usr/include -L$(echo "$d"/usr/lib/*-linux-gnu)"
	done
	echo "$flags"
}

# ksrc_of KERNEL: the tree the kernel builds from (kernel_select's KSRC).
ksrc_of() { (kernel_select "$1"; echo "$KSRC"); }

# the_kernel FIELD: the one kernel whose file has FIELD.
the_kernel()
{
	local ks

	ks=$(kernels_with "$1")
	[ "$(echo "$ks" | grep -c .)" = 1 ] ||
		die "vm/kernels/: '$1:' must be in exactly one file (it is in: ${ks//$'\n'/ })"
	echo "$ks"
}
# Every file is read once here: a mistake in any stops every script.
for _k in $(kernel_names); do
	kernel_file "$_k"
done
kernel_select "${KERNEL:-$(the_kernel default)}"

# Elapsed seconds of a timed block: t=$(now); ...; took $t "what".  Each
# one is also logged for make's closing summary (vm/times.sh).
now() { date +%s; }
took()
{
	local secs=$(($(date +%s) - $1))

	progress "$2 took $secs s"
	mkdir -p "$LOGDIR"
	echo "$(date +%s) $secs $2" >> "$LOGDIR/times.log"
}

# The one build environment of every kernel and module build: the compiler
# cache in the cache folder, in depend mode (it hashes the sources and the
# headers that the compiler lists with -MD instead of running the
# preprocessor first: a cold build then costs what plain gcc costs, against
# +55% in preprocessor mode, measured on mm/), paths relative to the
# kernels' folder, and stable build strings so that rebuilds, clean clones
# and the other kernels of the same source hit it.
kbuild_env()
{
	export CCACHE_DIR=$CACHE/ccache
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
	export CCACHE_COMPILERCHECK=content
	export CCACHE_DEPEND=1
	export CCACHE_BASEDIR=$CACHE/kernels CCACHE_NOHASHDIR=1
	export KBUILD_BUILD_TIMESTAMP="2026-01-01"
	export KBUILD_BUILD_USER=dmirror KBUILD_BUILD_HOST=bench
}

# locked CMD...: run CMD under the cache's lock, so that two builds (or a
# build and a change of the tree) never run at once on this machine.
locked()
{
	mkdir -p "$CACHE"
	flock "$CACHE/build.lock" "$@"
}

# The entries of a series file, one per line, without comments.
_series_entries()
{
	[ -f "$1" ] || die "no $1"
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' -e 's/[[:space:]]*$//' "$1"
}

# The patches of the selected kernel's series, in order, one per line, as
# paths under $PATCHES (none for a pristine kernel).  A line of a series
# file names a patch, or a folder with a series file of its own (a posting,
# as in kernel-prereq-patches/7.3), whose patches come in its own order.
series_patches()
{
	local e

	[ -n "$PATCHES" ] || return 0
	[ -n "${UPTO:-}" ] || { _series_patches ""; return 0; }
	# A prefix of the postings (upto:).
	for e in $(_series_entries "$PATCHES/series"); do
		if [ -d "$PATCHES/$e" ]; then
			_series_patches "$e/"
		else
			echo "$e"
		fi
		[ "$e" != "$UPTO" ] || return 0
	done
	die "upto: $UPTO is not in ${PATCHES#"$TOP"/}/series"
}

_series_patches()
{
	local e

	for e in $(_series_entries "$PATCHES/${1}series"); do
		if [ -d "$PATCHES/$1$e" ]; then
			_series_patches "$1$e/"
		else
			echo "$1$e"
		fi
	done
}

# The posting folders of the selected kernel's series, in order.
series_postings()
{
	local e

	[ -n "$PATCHES" ] || return 0
	for e in $(_series_entries "$PATCHES/series"); do
		[ ! -d "$PATCHES/$e" ] || echo "$e"
	done
}

# The stored patches carry no author and no Signed-off-by: a Developer's
# Certificate of Origin is the poster's to give.  poster_ident prints
# "Name <address>" from GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL, or git's
# user.name and user.email, and fails, saying why, when either is unset or
# the address is in a domain reserved for examples and tests (RFC 2606,
# RFC 6761).
poster_ident()
{
	local name email

	name=${GIT_AUTHOR_NAME:-$(git config --default '' user.name)}
	email=${GIT_AUTHOR_EMAIL:-$(git config --default '' user.email)}
	if [ -z "$name" ] || [ -z "$email" ]; then
		echo "no git identity: set user.name and user.email (git config), whose owner signs off every patch" >&2
		return 1
	fi
	case ${email,,} in
	*@*.*) ;;
	*)
		echo "'$email' is not a mail address" >&2
		return 1
		;;
	esac
	if [ -n "$(echo "$email" | reserved_addresses)" ]; then
		echo "'$email' is in a domain reserved for examples: set your own user.email" >&2
		return 1
	fi
	echo "$name <$email>"
}

# reserved_addresses [FILE...]: each address in FILE (or stdin) whose domain
# is reserved for examples and tests (RFC 2606, RFC 6761), and each
# example.com, .net or .org, one FILE:LINE:MATCH a line (MATCH alone on
# stdin); nothing if there is none.
reserved_addresses()
{
	grep -noiE '[a-z0-9._%+-]+@([a-z0-9-]+\.)*(example|invalid|test|localhost)([^a-z0-9.-]|$)|example\.(com|net|org)([^a-z0-9-]|$)' \
		${1:+-H} "$@" || [ $? = 1 ]
}

# Whom the commits of the cache's trees are by: the poster if there is one,
# else this machine's account.  Those trees are never posted.
tree_ident()
{
	poster_ident 2>/dev/null || echo "$(id -un) <$(id -un)@$(uname -n)>"
}

# The name and the address of an identity "Name <address>".
ident_name() { echo "${1% <*}"; }
ident_email() { local e=${1##*<}; echo "${e%>}"; }

# How the patches were made, as the tree's
# Documentation/process/coding-assistants.rst asks a posting to say: the
# value of the Assisted-by: trailer the posting adds before the poster's
# Signed-off-by: ("LLM [TOOL...]"; no tool signs off).  Empty: none, for
# a tree whose checkpatch.pl does not know the tag (6.12).
ASSISTED_BY=${ASSISTED_BY-LLM}

# stamp IDENT [signoff] < PATCH: the stored patch as git am takes it, with
# "From: IDENT" and, with signoff, "Assisted-by: $ASSISTED_BY" and IDENT's
# Signed-off-by: as its last trailers (before the "---" that ends the
# message, or the first diff).
stamp()
{
	awk -v who="$1" -v sob="${2:-}" -v ab="$ASSISTED_BY" '
		NR == 1 { print; print "From: " who; hdr = 1; next }
		hdr && /^$/ { hdr = 0 }
		hdr && /^From: / { next }
		!cut && (/^---$/ || /^diff --git /) {
			if (sob != "" && ab != "")
				print "Assisted-by: " ab
			if (sob != "")
				print "Signed-off-by: " who
			cut = 1
		}
		{ print }'
}

# am_patch WORKTREE PATCH [signoff]: git am one patch of $PATCHES in
# WORKTREE, stamped with the trees' identity, or with signoff with the
# poster's.
am_patch()
{
	local who

	if [ "${3:-}" = signoff ]; then
		who=$(poster_ident) || return 1
	else
		who=$(tree_ident)
	fi
	stamp "$who" "${3:-}" < "$PATCHES/$2" |
		GIT_COMMITTER_NAME=$(ident_name "$who") \
		GIT_COMMITTER_EMAIL=$(ident_email "$who") \
		git -C "$1" am -q --whitespace=nowarn
}
