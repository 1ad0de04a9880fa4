# SPDX-License-Identifier: GPL-2.0
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

# Elapsed seconds of a timed block: t=$(now); ...; took $t "what".
now() { date +%s; }
took()
{
	step "$2 took $(($(date +%s) - $1)) s"
}

installed_src_version()
{
	dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true
}
