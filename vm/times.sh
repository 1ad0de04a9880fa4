#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The closing line of make: what each timed step of this make took.
# times.sh T0   (T0: the epoch second make started, from the Makefile)
set -eu
. "$(dirname "$0")/lib.sh"
t0=${1:?usage: times.sh T0}
[ -f "$LOGDIR/times.log" ] || exit 0
awk -v t0="$t0" -v now="$(date +%s)" '
	$1 >= t0 { $1 = ""; secs = $2; $2 = ""; sub(/^ +/, ""); line = line sep $0 " " secs " s"; sep = ", " }
	END { if (line != "") printf "dmirror-thp: %s; total %d s\n", line, now - t0 }
' "$LOGDIR/times.log"
