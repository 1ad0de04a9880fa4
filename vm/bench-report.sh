#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The bench's report (vm/report/bench_report.py): of the last bench run of the
# selected kernel, or of RUN_DIR (a kernel's folder of a run); with
# --compare, every kernel of the last run side by side, after each one's
# own report (report.txt in its folder).
#
# bench-report.sh [KERNEL_DIR]
# bench-report.sh --compare [RUN_DIR]
set -eu
. "$(dirname "$0")/lib.sh"
need python3
if [ "${1:-}" = --compare ]; then
	run=$(readlink -f "${2:-$LOGDIR/latest}")
	[ -f "$run/kernels" ] || die "no bench run in $run"
	for k in $(cat "$run/kernels"); do
		python3 "$TOP/vm/report/bench_report.py" "$run/$k" > /dev/null ||
			die "no report for $k (see $run/$k)"
		progress "$k: $run/$k/report.txt"
	done
	exec python3 "$TOP/vm/report/bench_report.py" --compare "$run"
fi
exec python3 "$TOP/vm/report/bench_report.py" "${1:-$LOGDIR/latest/$KERNEL}"
