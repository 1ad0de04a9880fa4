# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034  # its variables are for the scripts that source it
# Common helpers for the dmirror-thp bench scripts.  Sourced, not run.

CACHE=${DMIRROR_THP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dmirror-thp}
TOP=$(cd "$(dirname "$0")/.." && pwd)
FLAVOR=${FLAVOR:-normal}
KSRC=$CACHE/linux
KBUILD=$CACHE/build/$FLAVOR
STAGE=$CACHE/stage/$FLAVOR
LOGDIR=$CACHE/logs
JOBS=${JOBS:-$(($(nproc) + 1))}

case $FLAVOR in
normal|debug) ;;
*) echo "FLAVOR must be 'normal' or 'debug', not '$FLAVOR'" >&2; exit 2 ;;
esac

_t0=$(date +%s)

die()
{
	echo "dmirror-thp: error: $*" >&2
	exit 1
}

# step MESSAGE: a progress line with the seconds since the script started.
step()
{
	printf '[%4ss] %s\n' "$(($(date +%s) - _t0))" "$*"
}

need()
{
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 ||
			die "'$t' is missing: run 'make deps' (as root) first"
	done
}

# Elapsed seconds of a timed block: t=$(now); ...; took $t "what".  Each
# one is also logged for make's closing summary (vm/times.sh).
now() { date +%s; }
took()
{
	local secs=$(($(date +%s) - $1))

	step "$2 took $secs s"
	mkdir -p "$LOGDIR"
	echo "$(date +%s) $secs $2" >> "$LOGDIR/times.log"
}

# The one build environment of every kernel and module build: the compiler
# cache in the cache folder, in depend mode (it hashes the sources and the
# headers that the compiler lists with -MD instead of running the
# preprocessor first: a cold build then costs what plain gcc costs, against
# +55% in preprocessor mode, measured on mm/), and stable build strings so
# that rebuilds and clean clones hit it.
kbuild_env()
{
	export CCACHE_DIR=$CACHE/ccache
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
	export CCACHE_COMPILERCHECK=content
	export CCACHE_DEPEND=1
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

# The patches of kernel-prereq-patches/series, in order, one per line.
series_patches()
{
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$TOP/kernel-prereq-patches/series"
}

installed_src_version()
{
	dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true
}
