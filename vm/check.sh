#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run a plan on one or more kernels (vm/run.sh each), then report every
# result and a last line "N passed, N failed, N skipped" (vm/report/results.py),
# also as KTAP (results.ktap, a subtest per kernel) and JSON
# (results.json).  Exit status 0 only if nothing failed and every console
# is clean.
#
# check.sh [--crashes] [--mm] [--host] [--ci-set] PLAN KERNEL...
#                   --crashes: also the crash boots that vm/expect.list
#                   lists; --mm: the mm plan on the kernels whose file says
#                   mm-selftests: yes; --host: first the host's check of
#                   its own scripts (vm/contracts.sh, on the first
#                   kernel's tree); --ci-set: the kernels are make check's
#                   CI set, where a kernel's ci-plans: limits its boots
# RUN_DIR=folder for the logs (default $CACHE/logs/FLAVOR-PLAN-TIME)
# PASSES=N: boot every kernel N times, in turns (make bench-compare): each
# pass runs the kernels in order, the next one starting a kernel later, so
# that what the host does at one time falls on every kernel alike.
set -eu
. "$(dirname "$0")/lib.sh"
need python3

crashes= mm= host= ci_set=
while :; do
	case ${1:-} in
	--crashes) crashes=--crashes ;;
	--mm) mm=--mm ;;
	--host) host=1 ;;
	--ci-set) ci_set=--ci-set ;;
	*) break ;;
	esac
	shift
done
PLAN=${1:?usage: check.sh [--crashes] [--mm] [--host] [--ci-set] PLAN KERNEL...}
shift
[ $# -gt 0 ] || set -- "$KERNEL"
# A tree of one's own (a path) runs under its name (lib.sh's kernel_name).
names=()
for k in "$@"; do
	names+=("$(kernel_name "$k")") || exit 1
done
set -- "${names[@]}"
PASSES=${PASSES:-1}
case $PASSES in
''|*[!0-9]*|0) die "PASSES=$PASSES: a number of passes, 1 or more" ;;
esac
# The crash boots are named per boot, not per pass: one pass only.
[ -z "$crashes" ] || [ "$PASSES" = 1 ] ||
	die "--crashes with PASSES=$PASSES: the crash boots run in one pass"
RUN=${RUN_DIR:-$LOGDIR/$FLAVOR-$(echo "$PLAN" | tr '+' '-')-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RUN"
ln -sfn "$RUN" "$LOGDIR/latest"
progress "logs in $RUN"
echo "$*" > "$RUN/kernels"
# The expectations it is judged by, with the run (vm/report/results.py).
cp "$TOP/vm/expect.list" "$RUN/expect.list"
# The pairs whose mm selftests the report compares test by test: a kernel
# and its compare: kernel (upstream's own code for it), both in the run.
: > "$RUN/pairs"
for k in "$@"; do
	c=$("$TOP/vm/kernels.sh" field "$k" compare)
	case " $* " in
	*" $c "*) echo "$c $k" >> "$RUN/pairs" ;;
	esac
done
echo "$FLAVOR" > "$RUN/flavour"
# The host's own check, TAP in host.tap (results.py reads it): cheap, and
# what it checks would otherwise show only on a machine with a cold cache.
if [ -n "$host" ]; then
	progress "host: vm/contracts.sh (the scripts' stdout, from an empty cache)"
	KERNEL=$1 "$TOP/vm/contracts.sh" > "$RUN/host.tap" 2> "$RUN/host.log" ||
		progress "host: vm/contracts.sh failed (see $RUN/host.tap and host.log)"
fi
for pass in $(seq "$PASSES"); do
	[ "$PASSES" = 1 ] || progress "pass $pass of $PASSES: $*"
	for k in "$@"; do
		# A kernel whose guest cannot even start is a failed run, not
		# a stop: the others still run, and results.py reports it.
		PASS=$([ "$PASSES" = 1 ] || echo "$pass") KERNEL=$k RUN_DIR=$RUN \
			"$TOP/vm/run.sh" $crashes $mm $ci_set "$PLAN" ||
			progress "$k: the boots did not all run (see $RUN/$k)"
	done
	set -- "${@:2}" "$1"
done

# The one reader of the guests' output (vm/report/results.py): the files they
# sent, one line per test, results.ktap and the consoles' verdicts.
# results.json is what the kernel tree's own KTAP parser makes of
# results.ktap.
st=0
python3 "$TOP/vm/report/results.py" "$RUN" > "$RUN/summary.txt" || st=$?
# The mm selftests' differences, test by test, from the subtests.tsv that
# results.py wrote (it counts the regressions among them as failures).
python3 "$TOP/vm/report/mm_report.py" "$RUN" > "$RUN/mm-compare.txt" ||
	[ $? = 3 ]	# a regression: results.py failed the run for it
[ -s "$RUN/mm-compare.txt" ] || rm -f "$RUN/mm-compare.txt"
cat "$RUN/summary.txt"
# kunit.py exits non-zero when the document has a failing test; what
# matters here is only that it could read it.
python3 "$(ksrc_of "$(the_kernel harness)")/tools/testing/kunit/kunit.py" parse --json="$RUN/results.json" \
	"$RUN/results.ktap" > "$RUN/kunit.log" 2>&1 || [ -s "$RUN/results.json" ] ||
	die "kunit.py could not parse $RUN/results.ktap (see $RUN/kunit.log)"
# ... and it must count what results.py counted.
ours=$(tail -n 1 "$RUN/summary.txt")
theirs=$(sed -n 's/.*Ran [0-9]* tests: //p' "$RUN/kunit.log" | tr -d ',' |
	awk '{ for (i = 1; i < NF; i += 2) n[$i] = $(i + 1) }
	     END { printf "%d passed, %d failed, %d skipped", n["passed:"], n["failed:"], n["skipped:"] }')
[ "$ours" = "$theirs" ] ||
	die "results.ktap says '$theirs' to kunit.py, results.py says '$ours'"
[ "$st" = 0 ] ||
	echo "dmirror-thp: FAILED: see $RUN/summary.txt, $RUN/splats.txt and $RUN/<kernel>/" >&2
exit "$st"
