#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Configure and build the guest kernel out of tree (O=) in the cache, with
# ccache.  Incremental: only what changed is rebuilt.
# kernel.sh [--config-only]
set -eu
. "$(dirname "$0")/lib.sh"
need make gcc "$TARGET_CC" ccache bison flex bc

kbuild_env
# A tree without device-private THP is refused before anything builds,
# with the module's own probes (module/Kbuild) and its one message, unless
# its file says it has none (module: no).
if [ "$MODULE" != no ]; then
	printf 'comma := ,\ninclude %s/module/Kbuild\nprobe: ; @:\n' "$TOP" |
		make -s -f - srctree="$KSRC" probe 2>&1 | sed 's/^[^:]*:[0-9]*: \*\*\* //' >&2
	[ "${PIPESTATUS[1]}" = 0 ] ||
		die "cannot build dmirror-thp.ko against $KERNEL ($KSRC)"
fi

# One build at a time on this machine: helpers and CI share the lock.
KMAKE=(locked make -C "$KSRC" O="$KBUILD" ARCH="$KARCH" ${CROSS:+CROSS_COMPILE=$CROSS}
	"CC=${KCC:-ccache $TARGET_CC}" KCFLAGS=-pipe -j"$JOBS" -s)

# What device-private THP migration and the suites cannot do without.
NEEDED="ZONE_DEVICE|DEVICE_PRIVATE|TRANSPARENT_HUGEPAGE|MIGRATION|HMM_MIRROR|TEST_HMM|MODULES|NUMA"

# The common fragment, then what the tree's own mm selftests need (their
# config, and what it takes on top of tinyconfig), then the architecture's
# (which turns off what the architecture lacks), then the kernel's own
# (vm/kernels/$KERNEL's config:), then the flavour's: a later fragment
# overrides an earlier one.
frags="$TOP/vm/config/base.config"
mmcfg=$KSRC/tools/testing/selftests/mm/config
[ ! -f "$mmcfg" ] || frags="$frags $mmcfg $TOP/vm/config/mm-selftests.config"
frags="$frags $TOP/vm/config/$GUEST_ARCH.config"
for f in $CONFIGS; do
	[ -f "$TOP/$f" ] || die "vm/kernels/$KERNEL names $f, which does not exist"
	frags="$frags $TOP/$f"
done
[ "$FLAVOR" = debug ] && frags="$frags $TOP/vm/config/debug.config"
[ "$FLAVOR" = gcov ] && frags="$frags $TOP/vm/config/gcov.config"
# What the fragments set ("# CONFIG_X is not set" included), not their
# comments or where they live.
# shellcheck disable=SC2086  # a list of paths
key=$(cat $frags | sed -e '/^# CONFIG_[A-Za-z0-9_]* is not set/b' \
	-e '/^[[:space:]]*#/d' -e '/^[[:space:]]*$/d' | sha256sum | cut -c1-16)

mkdir -p "$KBUILD"
if [ "$(cat "$KBUILD/.dmirror-config" 2>/dev/null)" != "$key" ]; then
	progress "configuring $KERNEL ($FLAVOR, $GUEST_ARCH): tinyconfig + $(echo $frags | sed "s|$TOP/||g")"
	"${KMAKE[@]}" tinyconfig >/dev/null
	if user_tree; then
		# The project's fragments name options of its own kernels: an
		# option this tree's Kconfig does not have is left out.
		known=$(find "$KSRC" -name 'Kconfig*' -not -path '*/.git/*' \
			-exec sed -n 's/^[[:space:]]*\(menu\)\{0,1\}config[[:space:]]\{1,\}\([A-Za-z0-9_]*\).*/\2/p' {} + |
			sort -u)
		# shellcheck disable=SC2086
		cat $frags > "$KBUILD/fragments.all"
		sed -n 's/^\(# \)\{0,1\}CONFIG_\([A-Za-z0-9_]*\)[= ].*/\2/p' "$KBUILD/fragments.all" |
			sort -u | comm -23 - <(echo "$known") > "$KBUILD/fragments.unknown"
		grep -v -E "^(# )?CONFIG_($(paste -sd'|' "$KBUILD/fragments.unknown"))[= ]" \
			"$KBUILD/fragments.all" > "$KBUILD/fragments.config" ||
			[ $? = 1 ]	# grep: no line left
		[ ! -s "$KBUILD/fragments.unknown" ] ||
			progress "$KERNEL's Kconfig has no $(paste -sd' ' "$KBUILD/fragments.unknown"): left out of its config"
		missing=$(grep -xE "$NEEDED" "$KBUILD/fragments.unknown" | paste -sd' ')
		[ -z "$missing" ] ||
			die "$KERNEL's Kconfig has no $missing, which device-private THP migration needs"
		frags=$KBUILD/fragments.config
	fi
	# shellcheck disable=SC2086
	(cd "$KBUILD" && "$KSRC/scripts/kconfig/merge_config.sh" -m -O "$KBUILD" \
		"$KBUILD/.config" $frags >/dev/null)
	"${KMAKE[@]}" olddefconfig >/dev/null
	# Every option of the fragments must have survived olddefconfig; a
	# later fragment overrides an earlier one.
	bad=
	# shellcheck disable=SC2086
	while IFS= read -r l; do
		case $l in
		CONFIG_*=n) ! grep -q "^${l%=n}=[ym]" "$KBUILD/.config" ||
				bad="$bad $l" ;;
		CONFIG_*) grep -qx "$l" "$KBUILD/.config" || bad="$bad $l" ;;
		esac
	done < <(cat $frags | grep '^CONFIG_' |
		 awk -F= '{ v[$1] = $0; if (!($1 in o)) o[$1] = n++ }
			  END { for (k in v) print o[k], v[k] }' | sort -n | cut -d' ' -f2-)
	# A tree of one's own may differ from the project's kernels in any
	# option but those device-private THP migration needs.
	if [ -n "$bad" ] && user_tree; then
		need_bad=$(echo "$bad" | tr ' ' '\n' | grep -E "^CONFIG_($NEEDED)=" | paste -sd' ')
		[ -n "$need_bad" ] ||
			{ progress "$KERNEL: its Kconfig does not take$bad"; bad=; }
		bad=${need_bad:+ $need_bad}
	fi
	[ -z "$bad" ] || die "kernel config lost:$bad"
	echo "$key" > "$KBUILD/.dmirror-config"
fi

[ "${1:-}" = --config-only ] && exit 0
t=$(now)
progress "building kernel $KERNEL ($FLAVOR, $GUEST_ARCH, -j$JOBS) in $KBUILD"
targets="$KIMAGE_TARGET modules"
# The gdb helpers (vmlinux-gdb.py) for make gdb, where the flavour has them.
grep -q '^CONFIG_GDB_SCRIPTS=y' "$KBUILD/.config" && targets="$targets scripts_gdb"
# The gcov flavour profiles the files of vm/coverage.files only, and the
# tree's Makefiles stay as they are: make's command line sets Kbuild's
# per-object GCOV_PROFILE_<stem>.o for every directory, and its value
# says y only in the listed file's own ($(obj)), so that a file of the
# same name elsewhere (arch/x86/boot/memory.c, 16-bit setup code that
# cannot call gcov) is built as before.
gcov=()
if [ "$FLAVOR" = gcov ]; then
	while read -r f; do
		gcov+=("GCOV_PROFILE_$(basename "$f" .c).o=\$(if \$(filter $(dirname "$f"),\$(obj)),y)")
	done < <(grep -v '^#' "$TOP/vm/coverage.files")
fi
# shellcheck disable=SC2086
"${KMAKE[@]}" "${gcov[@]}" $targets > "$KBUILD/build.log" 2>&1 || {
	tail -n 40 "$KBUILD/build.log" >&2
	die "kernel build failed (log: $KBUILD/build.log)"
}
took "$t" "kernel build ($KERNEL $FLAVOR)"
