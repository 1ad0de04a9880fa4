#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What vm/kernels/ says, for make and the reports (lib.sh's kernel_file
# reads the files):
#
#   kernels.sh list [FIELD [ARCH]]  the kernels, in name order; with
#                                FIELD, those whose file has it; with
#                                ARCH, of those the guests of ARCH
#   kernels.sh get FIELD         the one kernel whose file has FIELD
#   kernels.sh field NAME FIELD  NAME's FIELD (empty if it has none)
#   kernels.sh images NAME [--ci-set]
#                                the initramfs images make packs for NAME:
#                                full (with dmirror-thp.ko, unless its file
#                                says module: no) and mm (if it says
#                                mm-selftests: yes, or has no module); with
#                                --ci-set, mm only if its ci-plans:, when it
#                                has one, names mm
#   kernels.sh arches NAME...    of those kernels, the first of each
#                                architecture (make tests builds each
#                                architecture's test binaries once)
set -eu
. "$(dirname "$0")/lib.sh"

# shellcheck disable=SC2086  # a list, one line

case ${1:-}:$# in
list:1) ks=$(kernel_names); echo $ks ;;
list:2) ks=$(kernels_with "$2"); echo $ks ;;
list:3)
	for k in $(kernels_with "$2"); do
		kernel_select "$k"
		[ "$GUEST_ARCH" != "$3" ] || echo "$k"
	done | tr '\n' ' ' | sed 's/ $/\n/'
	;;
get:2) the_kernel "$2" ;;
field:3)
	case " $KERNEL_FIELDS " in
	*" $3 "*) ;;
	*) die "'$3' is not a field ($KERNEL_FIELDS)" ;;
	esac
	kernel_file "$(kernel_name "$2")"
	echo "${KF[$3]:-}"
	;;
images:2|images:3)
	[ $# = 2 ] || [ "$3" = --ci-set ] || die "kernels.sh images NAME [--ci-set]"
	kernel_file "$(kernel_name "$2")"
	mm=${KF[mm-selftests]:-}
	if [ $# = 3 ] && [ -n "${KF[ci-plans]:-}" ]; then
		case " ${KF[ci-plans]} " in
		*" mm "*) ;;
		*) mm= ;;
		esac
	fi
	if [ "${KF[module]:-}" = no ]; then
		echo mm
	else
		echo full
		[ "$mm" != yes ] || echo mm
	fi
	;;
arches:*)
	shift
	declare -A seen=()
	for k in "$@"; do
		kernel_select "$k"
		[ -n "${seen[$GUEST_ARCH]:-}" ] || echo "$k"
		seen[$GUEST_ARCH]=1
	done
	;;
*) die "usage: kernels.sh list [FIELD [ARCH]] | get FIELD | field NAME FIELD | images NAME [--ci-set] | arches NAME..." ;;
esac
