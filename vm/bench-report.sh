#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Summarise the last bench run: the guest's table, the round-trip figures
# against memcpy, and a PNG of throughput against buffer size.
#
# bench-report.sh [RUN_DIR]   (default: the latest run)
set -eu
. "$(dirname "$0")/lib.sh"

RUN=${1:-$LOGDIR/latest}
CSV=$RUN/bench.csv
[ -f "$CSV" ] || die "no bench.csv in $RUN (did the bench run finish?)"

# The guest's own table.
awk '/^### SUITE bench/ { on = 1; next } /^### SUITE-END/ { on = 0 }
     on && /^(#|  )/ { sub(/\r$/, ""); print }' "$RUN/results.log"

# Round trip: both directions copy every byte once, so the round-trip rate
# is 1 / (1/to_dev + 1/to_sys) and the limit is the memcpy bandwidth.
awk -F, -v out="$RUN/bench-roundtrip.dat" '
NR > 1 && $7 == "GiB/s" { v[$1, $2, $3] = $4; size[$1] = 1 }
END {
	print "# MB memcpy thp_rt 4k_rt thp_to_dev 4k_to_dev thp_to_sys 4k_to_sys" > out
	printf "\n%-6s %9s %9s %9s %11s %9s\n", "MB", "memcpy", "THP rt",
	       "4K rt", "THP/memcpy", "THP/4K"
	n = asorti_num(size, keys)
	for (i = 1; i <= n; i++) {
		s = keys[i]
		cp = v[s, "ref", "memcpy"]
		t = rt(v[s, "thp", "to_dev"], v[s, "thp", "to_sys"])
		k = rt(v[s, "4k", "to_dev"], v[s, "4k", "to_sys"])
		printf "%-6s %9.3f %9.3f %9.3f %10.0f%% %9.2f\n", s, cp, t, k,
		       cp ? 100 * t / cp : 0, k ? t / k : 0
		printf "%s %g %g %g %g %g %g %g\n", s, cp, t, k, v[s, "thp", "to_dev"],
		       v[s, "4k", "to_dev"], v[s, "thp", "to_sys"], v[s, "4k", "to_sys"] > out
	}
	print "(GiB/s; rt = round trip, whose time per 2 MB is the latency, so THP/4K is also the latency ratio)"
}
function rt(a, b) { return a && b ? 1 / (1 / a + 1 / b) : 0 }
function asorti_num(src, dst,   k, n, i, j, t) {
	n = 0
	for (k in src) dst[++n] = k + 0
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && dst[j - 1] > dst[j]; j--) {
			t = dst[j]; dst[j] = dst[j - 1]; dst[j - 1] = t
		}
	return n
}' "$CSV"

if command -v gnuplot >/dev/null; then
	gnuplot <<PLOT
set terminal pngcairo size 900,560 noenhanced
set output "$RUN/bench.png"
set title "dmirror-thp: migration round trip vs memcpy (guest)"
set xlabel "buffer size (MB)"
set ylabel "GiB/s"
set logscale x 2
set key left top
set grid
plot "$RUN/bench-roundtrip.dat" using 1:2 with linespoints title "memcpy", \
     "" using 1:3 with linespoints title "THP round trip", \
     "" using 1:4 with linespoints title "4K round trip", \
     "" using 1:5 with linespoints dashtype 2 title "THP to device", \
     "" using 1:7 with linespoints dashtype 2 title "THP to system"
PLOT
	step "plot: $RUN/bench.png"
fi
step "CSV: $CSV, JSON: $RUN/bench.json"
