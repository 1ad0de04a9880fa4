#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The coverage report of a gcov-flavour run (make coverage): per kernel of
# the run, per boot, lcov's tracefile of the profile data the boot wrote
# (RUN_DIR/<kernel>/gcov-<boot>/, vm/guest/init's gcov_save), the boots
# merged, an HTML report (coverage-html/) and a table (coverage.md) of the
# files of vm/coverage.files and of dmirror-thp.ko, one column per boot
# and one for all of them.
#
# coverage.sh [RUN_DIR]     default: the latest run
set -eu
. "$(dirname "$0")/lib.sh"
need lcov genhtml gcov python3
[ "$FLAVOR" = gcov ] || die "coverage.sh reads a gcov-flavour run (FLAVOR=gcov)"

RUN=${1:-$LOGDIR/latest}
[ -f "$RUN/kernels" ] || die "no run at $RUN"
RUN=$(cd "$RUN" && pwd -P)
LCOV=(--quiet --rc lcov_branch_coverage=1)

while read -r k; do
	kernel_select "$k"
	K=$RUN/$KERNEL
	keep=("$STAGE/mod/module/*")
	while read -r f; do
		keep+=("*/$f")
	done < <(grep -v '^#' "$TOP/vm/coverage.files")
	cols=()
	infos=()
	for d in "$K"/gcov-*/; do
		[ -d "$d" ] || continue
		b=$(basename "$d")
		b=${b#gcov-}
		t=$(now)
		# The guest wrote each .gcda under its object's path on this host;
		# gcov wants the object's .gcno beside it.
		n=0
		while IFS= read -r f; do
			rel=${f#"${d%/}"}
			ln -sf "${rel%.gcda}.gcno" "${f%.gcda}.gcno"
			n=$((n + 1))
		done < <(find "$d" -name '*.gcda')
		[ $n -gt 0 ] || die "$KERNEL boot $b wrote no profile data (see $K/results-$b.log)"
		# The kernel's objects name their sources from the build folder,
		# the module's from its own (an external module builds there);
		# of what they ran, the listed files and the module's.
		parts=()
		for base in "$KBUILD" "$STAGE/mod"; do
			[ -d "$d$base" ] || continue
			lcov "${LCOV[@]}" --capture --directory "$d$base" --base-directory "$base" \
				--output-file "$K/coverage-$b-${#parts[@]}.info" 2>> "$K/coverage-$b.log" ||
				die "lcov could not read $KERNEL boot $b's profile (log: $K/coverage-$b.log)"
			parts+=(--add-tracefile "$K/coverage-$b-${#parts[@]}.info")
		done
		lcov "${LCOV[@]}" "${parts[@]}" --output-file "$K/coverage-$b.raw"
		lcov "${LCOV[@]}" --extract "$K/coverage-$b.raw" "${keep[@]}" \
			--output-file "$K/coverage-$b.info"
		rm -f "$K/coverage-$b".raw "$K/coverage-$b"-[0-9].info
		cols+=("$b=$K/coverage-$b.info")
		infos+=(--add-tracefile "$K/coverage-$b.info")
		took "$t" "coverage of $KERNEL boot $b ($n files)"
	done
	[ ${#cols[@]} -gt 0 ] || die "$KERNEL: no gcov-* folder in $K: not a gcov-flavour run"
	lcov "${LCOV[@]}" "${infos[@]}" --output-file "$K/coverage-all.info"
	cols+=("all=$K/coverage-all.info")
	python3 "$TOP/vm/report/coverage.py" table "$TOP/vm/coverage.files" \
		"$STAGE/mod" "${cols[@]}" > "$K/coverage.md"
	genhtml --quiet --branch-coverage --output-directory "$K/coverage-html" \
		"$K/coverage-all.info" > "$K/coverage-html.log" 2>&1 ||
		die "genhtml failed (log: $K/coverage-html.log)"
	progress "$KERNEL: $K/coverage.md, $K/coverage-html/index.html"
done < "$RUN/kernels"
