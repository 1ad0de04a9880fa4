# shellcheck shell=sh
# SPDX-License-Identifier: GPL-2.0
# The soak's load and its checks (vm/guest/plans/soak runs them as steps):
# sourced by the plan in the guest, after /init's step, suite and left_out.
secs=${SOAK_SECONDS:-600}
seed=${SEED:-$(date +%s)}

# trinity runs as nobody, on the vm group without these (what would take
# the guest down, or its swap, and module loading), and on device 1's
# ioctls.
TRINITY_EXCLUDE="-x reboot -x kexec_load -x kexec_file_load -x swapon
	-x swapoff -x init_module -x finit_module -x delete_module"

# stress-ng's mm stressors, one instance each.  Every one must run: one
# that skips itself (no NUMA nodes, no privilege) prints no metrics line.
NG_STRESSORS="vm mmap mremap madvise mprotect numa userfaultfd pagemove
	pageswap mlock memfd fork"

# How long after the stress's end a worker may still be in its last
# operation (hmm-thp-stress -g): a swap-in under the memcg's reclaim
# outlasted 30 s on a debug kernel (KASAN, kmemleak) under TCG.
grace=30
TRINITY_START=120
if [ "${FLAVOR:-normal}" = debug ]; then
	grace=120
	TRINITY_START=400
fi

meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }

baseline()
{
	base_thp=$(meminfo AnonHugePages)
	base_pt=$(vmstat nr_page_table_pages)
	echo "# baseline: AnonHugePages $base_thp kB, nr_page_table_pages $base_pt"
}

load_on()
{
	sysctl=/proc/sys/kernel/numa_balancing
	[ -w $sysctl ] && echo 1 > $sysctl
	# stress-ng runs as nobody: its userfaultfd stressor needs this.
	uffd=/proc/sys/vm/unprivileged_userfaultfd
	[ -w $uffd ] && echo 1 > $uffd
	k=/sys/kernel/mm/ksm
	if [ -d $k ]; then
		echo 1000 > $k/pages_to_scan
		echo 20 > $k/sleep_millisecs
		echo 1 > $k/run
	fi
	mkdir -p /sys/fs/cgroup/soak
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control
	# Below what the stress maps (4 processes x 4 regions of 2 MB to
	# 16 kB and a 2 MB buffer each, about 20 MB, and its fork children's
	# copies), so that it reclaims to swap all along: the run reports the
	# memcg's pgscan and pgsteal.
	echo 16M > /sys/fs/cgroup/soak/memory.high
}

# The load runs in the background; each tool's status is judged after.
# Each tool as nobody, in a folder of its own: stress-ng as root would
# poison pages (MADV_HWPOISON) and lock memory without limit, and trinity
# wants its working folder to itself (and no sockets: neither of its runs
# is about them).
#
# Trinity first, alone, until its fd providers are set up: behind the rest
# of the load, on a debug kernel under TCG, it never got past them in
# 600 s.  It has TRINITY_START s for that.
trinity_vm_start()
{
	mkdir -p /tmp/trinity-vm
	chown nobody /tmp/trinity-vm
	# shellcheck disable=SC2086
	su -s /bin/sh nobody -c "cd /tmp/trinity-vm && exec trinity -q -l off -C 2 \
		--disable-fds=sockets --group vm -s $seed -T BAD_PAGE,DIE,WARN $TRINITY_EXCLUDE" \
		> /tmp/trinity-vm.log 2>&1 &
	tv=$!
	n=0
	until grep -q 'fd providers.*initialized' /tmp/trinity-vm.log; do
		if [ $n -ge "$TRINITY_START" ] || ! kill -0 $tv 2> /dev/null; then
			echo "# trinity vm $tv: not set up after $n s"
			cat /tmp/trinity-vm.log
			procs trinity
			return 1
		fi
		sleep 1
		n=$((n + 1))
	done
	echo "# trinity vm $tv: set up in $n s"
}

load_start()
{
	mkdir -p /tmp/ng
	chown nobody /tmp/ng
	ng_args=$(for s in $NG_STRESSORS; do printf -- '--%s 1 ' "$s"; done)
	su -s /bin/sh nobody -c "cd /tmp/ng && exec stress-ng $ng_args \
		--vm-bytes 64M --mmap-bytes 32M --timeout ${secs}s \
		--metrics-brief" > /tmp/stress-ng.log 2>&1 &
	ng=$!
	echo "# load: stress-ng $ng, trinity vm $tv"
}

# What the processes of a tool are doing: state, wait channel, syscall.
procs()
{
	for p in $(pidof "$@"); do
		echo "# $p $(tr '\0' ' ' < "/proc/$p/cmdline" | cut -c1-60):" \
			"$(grep State "/proc/$p/status"), wchan $(cat "/proc/$p/wchan")," \
			"syscall $(cut -d' ' -f1-3 "/proc/$p/syscall")"
	done 2> /dev/null
}

# Nothing of the load may outlive it: trinity's main can exit before a
# child of its own, whose page tables would then count against the
# baseline.
no_leftovers()
{
	n=0
	while pids=$(pidof trinity stress-ng) && [ $n -lt 30 ]; do
		if [ $n = 0 ]; then
			echo "# left over from the load:"
			procs trinity stress-ng
		fi
		# shellcheck disable=SC2086
		kill -KILL $pids 2> /dev/null
		sleep 1
		n=$((n + 1))
	done
	! pidof trinity stress-ng > /dev/null
}

# Trinity's ioctl fuzzing of device 1, as nobody, in a phase of its own
# before the load: under the whole load it made no call in 30 s.  Whatever
# it draws must get an errno and no console report, and it must have made
# calls: its closing line counts them.
trinity_ioctl()
{
	t=$((secs / 4))
	[ $t -ge 30 ] || t=30
	mkdir -p /tmp/trinity-ioctl
	chown nobody /tmp/trinity-ioctl
	chmod 0666 /dev/hmm_dmirror1
	su -s /bin/sh nobody -c "cd /tmp/trinity-ioctl && exec trinity -q -l off \
		-C 1 --disable-fds=sockets -c ioctl -V /dev/hmm_dmirror1 -s $seed \
		-T BAD_PAGE,DIE,WARN" > /tmp/trinity-ioctl.log 2>&1 &
	ti=$!
	sleep $t
	procs trinity
	killall -INT trinity 2> /dev/null
	wait $ti
	no_leftovers || return 1
	chmod 0600 /dev/hmm_dmirror1
	tail -n 5 /tmp/trinity-ioctl.log
	grep -q 'Ran [1-9][0-9]* syscalls' /tmp/trinity-ioctl.log
}

load_stop()
{
	killall -INT trinity 2> /dev/null
	wait "$ng"
	rc=$?
	wait "$tv"
	no_leftovers || rc=leftovers
	# What failed or stopped early, then the metrics.
	grep -E -i 'fail|error|killed|oom|abort|signal' /tmp/stress-ng.log |
		head -n 40
	tail -n 20 /tmp/stress-ng.log
	tail -n 5 /tmp/trinity-vm.log
	echo "# stress-ng exit status $rc"
	for s in $NG_STRESSORS; do
		awk -v s="$s" '$2 == "metrc:" && $4 == s { ok = 1 }
			END { exit !ok }' /tmp/stress-ng.log && continue
		echo "# stress-ng's $s stressor did not run"
		rc=no-$s
	done
	# trinity must have fuzzed: its closing line counts the calls.
	grep -q 'Ran [1-9][0-9]* syscalls' /tmp/trinity-vm.log || rc=trinity-vm
	echo "# status: $rc"
	# 0: every stressor passed; 3: one lacked resources; 4: one is not
	# implemented here.  2 (a stressor failed) and the rest fail the run.
	[ "$rc" = 0 ] || [ "$rc" = 3 ] || [ "$rc" = 4 ]
}

load_off()
{
	[ -w "$sysctl" ] && echo 0 > "$sysctl"
	[ -w "$uffd" ] && echo 0 > "$uffd"
	[ -d "$k" ] && echo 2 > "$k/run"
	return 0
}

# Back to the baseline within 60 s of the load's end (exiting processes,
# KSM unmerging, deferred frees).
back_to_baseline()
{
	n=0
	while [ $n -lt 60 ]; do
		thp=$(meminfo AnonHugePages)
		pt=$(vmstat nr_page_table_pages)
		[ "$thp" -le "$base_thp" ] && [ "$pt" -le "$((base_pt + 8))" ] &&
			break
		sleep 1
		n=$((n + 1))
	done
	echo "# after: AnonHugePages $thp kB, nr_page_table_pages $pt ($n s)"
	[ "$thp" -le "$base_thp" ] && [ "$pt" -le "$((base_pt + 8))" ] &&
		return 0
	# Whose page tables: every process that has any.
	grep -H VmPTE /proc/[0-9]*/status | grep -v ' 0 kB'
	return 1
}

# The fuzzer on device 1 beside the stress on device 0: its TAP goes to a
# file, reported as a suite of its own once the stress has ended.  Its two
# random tests take half the time each, so that it lets go of device 1
# when the stress ends (the suite's settled check waits 120 s for that).
fuzz_start()
{
	(
		DMIRROR_THP_FUZZ_SECONDS=$((secs / 2)) DMIRROR_THP_FUZZ_SEED=$seed \
		DMIRROR_THP_FUZZ_DEVICE=1 timeout -s KILL $((secs + 300)) \
			/selftests/dmirror-thp-tests-fuzz -t random_threads \
			-t random_parent_and_child > /tmp/fuzz.tap 2>&1
		echo $? > /tmp/fuzz.rc
	) &
	fuzz=$!
}

# What the memcg's reclaim did while the stress ran in it.
memcg_reclaim()
{
	echo "# the memcg's reclaim: $(grep -E '^(pgscan|pgsteal|thp_fault_alloc|thp_collapse_alloc) ' \
		/sys/fs/cgroup/soak/memory.stat | tr '\n' ' ')"
}
