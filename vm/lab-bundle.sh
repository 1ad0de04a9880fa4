#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make lab-bundle: everything a lab needs to run one test plan on one
# kernel, in one folder: the bzImage, the modules, the initramfs (which
# holds the modules, the tests and the plans), a swap disk, the kernel
# command line, a LAVA job for the QEMU device type, and boot.sh, which
# boots the same guest with nothing but qemu-system-x86_64 and writes
# run/KERNEL/console-PLAN.log, results-PLAN.log and (with python3)
# run/results.ktap.
#
# LAB_PLAN=thp (a plan of vm/guest/plans)
# LAB_DIR=$CACHE/lab-bundle/$KERNEL-$FLAVOR
# MEM=3G  SMP=2  SWAP=512M
set -eu
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/qemu.sh"
[ "$GUEST_ARCH" = x86_64 ] ||
	die "make lab-bundle packs x86_64 guests only ($KERNEL is $GUEST_ARCH)"

PLAN=${LAB_PLAN:-thp}
OUT=${LAB_DIR:-$CACHE/lab-bundle/$KERNEL-$FLAVOR}
MEM=${MEM:-3G}
SMP=${SMP:-2}
SWAP=${SWAP:-512M}
KIMAGE=$KBUILD/arch/x86/boot/bzImage
INITRD=$STAGE/initramfs-full.cpio.gz
[ -f "$KIMAGE" ] || die "no kernel at $KIMAGE: run 'make kernel KERNEL=$KERNEL'"
[ -f "$INITRD" ] || die "no initramfs at $INITRD: run 'make initramfs KERNEL=$KERNEL'"
[ -f "$TOP/vm/guest/plans/$PLAN" ] || die "no plan vm/guest/plans/$PLAN"

rm -rf "$OUT"
mkdir -p "$OUT/modules"
cp "$KIMAGE" "$OUT/bzImage"
cp "$INITRD" "$OUT/initramfs.cpio.gz"
cp "$STAGE"/initramfs-full/lib/modules/*.ko "$OUT/modules/"
cp "$TOP"/vm/report/results.py "$TOP"/vm/report/expect.py "$TOP"/vm/expect.list \
	"$OUT/"
# What the tree carries (vm/patch-state.sh): what its expectations follow.
[ -f "$STAGE/patches" ] || die "no $STAGE/patches: run 'make initramfs KERNEL=$KERNEL'"
cp "$STAGE/patches" "$OUT/patches"
truncate -s "$SWAP" "$OUT/swap.img"

# The guest of make check, under TCG (labs rarely nest KVM), with the
# bundle's files named relative to the bundle.
# shellcheck disable=SC2034  # read by qemu_cmd
KIMAGE=bzImage INITRD=initramfs.cpio.gz SWAPFILE=swap.img GDB=0
qemu_cmd tcg
series=$(cat "$KSRC/.dmirror-series" 2>/dev/null || echo unknown)
cmdline="$KCMD plan=$PLAN dm_ACCEL=tcg dm_KERNEL=$KERNEL dm_SERIES=$series"
echo "$cmdline" > "$OUT/cmdline.txt"

cat > "$OUT/boot.sh" <<EOF
#!/bin/sh
# Boot this bundle with nothing but qemu-system-x86_64: the kernel console
# goes to run/$KERNEL/console-$PLAN.log, the results to results-$PLAN.log
# beside it; with python3, the summary and run/results.ktap as make check
# writes them.  Exit status 0 when every test passed and the console is
# clean.
cd "\$(dirname "\$0")" || exit 1
mkdir -p run/$KERNEL
cp patches run/$KERNEL/patches
echo $KERNEL > run/kernels
echo $FLAVOR > run/flavour
rc=0
${QEMU[*]} \\
	-serial file:run/$KERNEL/console-$PLAN.log -serial file:run/$KERNEL/results-$PLAN.log \\
	-append "\$(cat cmdline.txt)" > run/$KERNEL/qemu-$PLAN.log 2>&1 || rc=\$?
echo "$PLAN plan \$rc" > run/$KERNEL/boots
# isa-debug-exit: 1 is the guest's "all ok".
command -v python3 >/dev/null || { echo "qemu exit \$rc (1: all ok)"; [ "\$rc" = 1 ]; exit; }
python3 results.py run
EOF
chmod 755 "$OUT/boot.sh"

# LAVA: the same QEMU options; the results on the console (dm_OUT=ttyS0),
# where the monitor test action turns every TAP result line into a test
# case (kselftest's "ok N name" and the plan's "### STEP ok what").  A
# monitor has one pattern and so no third result: a "# SKIP" line is
# left out, not counted as a pass.  Each match starts at a line's first
# character and ends before its newline, which the next match starts with.
extra=""
skip=0
for a in "${QEMU[@]}"; do
	if [ $skip = 1 ]; then
		skip=0
		continue
	fi
	case $a in
	qemu-system-x86_64|-nographic) ;;
	-kernel|-initrd|-drive) skip=1 ;;
	*) extra="$extra $a" ;;
	esac
done
url="file://$OUT"
cat > "$OUT/job.yaml" <<EOF
# A LAVA job for the QEMU device type: dmirror-thp plan '$PLAN' on the
# $KERNEL $FLAVOR kernel.  Submit it with lavacli (lavacli jobs submit job.yaml)
# after replacing $url with where the lab can fetch the bundle.
device_type: qemu
job_name: dmirror-thp $PLAN ($KERNEL $FLAVOR)
visibility: public
priority: medium
timeouts:
  job: {minutes: 90}
  action: {minutes: 60}
  connection: {minutes: 2}
context:
  arch: amd64
  no_kvm: true
  extra_options:
$(for o in $extra; do printf '  - "%s"\n' "$o"; done)
actions:
- deploy:
    to: tmpfs
    timeout: {minutes: 5}
    images:
      kernel:
        image_arg: '-kernel {kernel} -append "$cmdline dm_OUT=ttyS0"'
        url: $url/bzImage
      initrd:
        image_arg: -initrd {initrd}
        url: $url/initramfs.cpio.gz
      swap:
        image_arg: -drive format=raw,if=virtio,cache=unsafe,file={swap}
        url: $url/swap.img
- boot:
    method: qemu
    media: tmpfs
    timeout: {minutes: 5}
    prompts: ["Run /init as init process"]
- test:
    timeout: {minutes: 60}
    monitors:
    - name: dmirror-thp-$PLAN
      start: "### BEGIN plan="
      end: "### END status="
      pattern: '$(python3 "$TOP/vm/report/results.py" --lava-pattern)'
      fixupdict: {"ok": pass, "not ok": fail, "not-ok": fail}
EOF
# What a lab's qemu device type renders for this job (lava-server's
# qemu.jinja2 with the job's context), for lava-run on this machine: the
# QEMU options above, nothing of the lab's own.
{
	cat <<EOF
# A QEMU device for lava-run (LAVA's dispatcher) on this machine:
#   lava-run --job-id 1 --output-dir out --device device.yaml job.yaml
device_type: qemu
available_architectures: [amd64]
constants:
  kernel-start-message: "Linux version [0-9]"
  default-shell-prompt: "lava-test: # "
  shutdown-message: "reboot: Restarting system"
  spawn_maxread: "4092"
  failure_retry: 1
  boot_retry: 1
  posix:
    lava_test_sh_cmd: /bin/sh
    lava_test_results_dir: /lava-%s
    lava_test_shell_file: ~/.bashrc
actions:
  deploy:
    connections: {serial: null}
    methods:
      tmpfs: null
      image:
        parameters:
          guest: {size: 512, interface: virtio, driveid: lavatest}
  boot:
    connections: {serial: null}
    methods:
      qemu:
        parameters:
          command: qemu-system-x86_64
          options:
EOF
	for o in $extra -nographic; do
		printf '          - "%s"\n' "$o"
	done
	cat <<EOF
timeouts:
  actions: {}
  connections: {}
EOF
} > "$OUT/device.yaml"

progress "lab bundle for plan '$PLAN' ($KERNEL $FLAVOR) in $OUT"
ls -s "$OUT" | sed 's/^/    /'
