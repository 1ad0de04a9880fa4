#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Summarise the last bench run of the selected kernel (or RUN_DIR, a
# kernel's folder of a run): see vm/bench_report.py.
#
# bench-report.sh [RUN_DIR]
set -eu
. "$(dirname "$0")/lib.sh"
need python3
exec python3 "$TOP/vm/bench_report.py" "${1:-$LOGDIR/latest/$KERNEL}"
