// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp selftests: every mm operation a user can aim at a range whose
 * folios are resident on the device: device-private PMDs, and device mTHPs
 * that PTEs map.
 *
 * One body (mm_run()) runs over a table: the rows are the folio orders (2,
 * 4, 8 and the PMD's, read at run time), the columns the operations.  Each starts from two PMDs of
 * data in folios of the order, migrated to the device and proven to sit
 * there whole, runs the operation, which asserts its own return value and
 * what it observes (move_pages status, mincore, smaps, pagemap bits...),
 * and then the body asserts what the operation must have left:
 *   DEV_WHOLE     the device folios, writable as they were (PMD-mapped for
 *                 the PMD order)
 *   DEV_WHOLE_RO  the device folios, now read-only
 *   DEV_SPLIT     still on the device, mapped by PTEs (a PMD split)
 *   SYS_WHOLE     faulted back, every folio whole (a PMD's PMD-mapped)
 *   SYS_COLLAPSED back, and collapsed into PMD-mapped THPs (an operation
 *                 whose outcome the kernel chooses sets it in mm_ctx)
 * with three witnesses: the driver's counters, SNAPSHOT (what the device
 * sees) and the kernel's own /proc/vmstat split counters, pagemap and
 * kpageflags.  Then every byte is read back through the CPU.
 *
 * A test skips only when the kernel lacks the feature (no second NUMA
 * node, no swap, no userfaultfd...), with that as its reason.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "dmirror_thp_helpers.h"
#include "dmirror_thp_test.h"
/* The kernel tree's mm/gup_test.h, through -I tools/testing/selftests/mm */
#include "../../../../mm/gup_test.h"

#define RW		(PROT_READ | PROT_WRITE)
#define NTHP		2
#define SIZE		(NTHP * DM_THP_SIZE)
#define NPAGES		(SIZE / DM_PAGE_SIZE)
#define SEED		0x3d


#ifndef MPOL_BIND
#define MPOL_BIND	2
#endif
#ifndef MPOL_MF_STRICT
#define MPOL_MF_STRICT	(1 << 0)
#define MPOL_MF_MOVE	(1 << 1)
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#define MADV_POPULATE_WRITE	23
#endif

enum mm_after { DEV_WHOLE, DEV_WHOLE_RO, DEV_SPLIT, SYS_WHOLE, SYS_COLLAPSED };

enum mm_need {
	NEED_NODE1	= 1 << 0,
	NEED_SWAP	= 1 << 1,
	NEED_UFFD	= 1 << 2,
	NEED_UFFD_WP	= 1 << 3,
	NEED_KSM	= 1 << 4,
	NEED_SOFT_DIRTY	= 1 << 5,
	NEED_PM_SCAN	= 1 << 6,
	NEED_SPLIT_DBG	= 1 << 7,
	NEED_NUMA_BAL	= 1 << 8,
	NEED_GUP_TEST	= 1 << 9,
};

struct mm_ctx {
	struct dm_ctx *c;
	struct dm_buf *b;
	unsigned int order;	/* of the folios */
	size_t nr;		/* pages per folio */
	bool pmd;		/* PMD-sized: device-private PMDs */
	enum mm_after after;	/* what the operation left: op->after, or its own */
	pid_t helper;		/* a process started by prepare() */
	int pipe;		/* its command pipe */
};

struct mm_op {
	unsigned int need;
	/* before the buffer exists (a process that must not share it) */
	void (*prepare)(struct __test_metadata *_metadata, struct mm_ctx *m);
	void (*run)(struct __test_metadata *_metadata, struct mm_ctx *m);
	enum mm_after after;
	long split_pmds;	/* thp_split_pmd (PMD order), from /proc/vmstat */
};

/* ---- features ---- */

static long sys_userfaultfd(int flags)
{
	return syscall(__NR_userfaultfd, flags);
}

/* A userfaultfd with @features, or -errno. */
static int uffd_open(uint64_t features)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	int fd = sys_userfaultfd(O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, UFFDIO_API, &api)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static bool have_feature(unsigned int need, const char **why)
{
	if ((need & NEED_NODE1) && access("/sys/devices/system/node/node1", F_OK)) {
		*why = "no NUMA node 1 (boot with numa=fake=2)";
		return false;
	}
	if (need & NEED_SWAP) {
		char line[256];
		int n = 0;
		FILE *f = fopen("/proc/swaps", "re");

		while (f && fgets(line, sizeof(line), f))
			n++;
		if (f)
			fclose(f);
		if (n < 2) {
			*why = "no swap device";
			return false;
		}
	}
	if (need & (NEED_UFFD | NEED_UFFD_WP)) {
		int fd = uffd_open(need & NEED_UFFD_WP ?
				   UFFD_FEATURE_PAGEFAULT_FLAG_WP : 0);

		if (fd < 0) {
			*why = "no userfaultfd (or no uffd-wp)";
			return false;
		}
		close(fd);
	}
	if ((need & NEED_KSM) && access("/sys/kernel/mm/ksm/run", W_OK)) {
		*why = "no KSM";
		return false;
	}
	/*
	 * clear_refs takes "4" whether or not the kernel tracks soft-dirty;
	 * a new vma marked soft-dirty (smaps' "sd") says that it does.
	 */
	if ((need & NEED_SOFT_DIRTY) && !softdirty_supported()) {
		*why = "no soft-dirty tracking (CONFIG_MEM_SOFT_DIRTY; arm64 has none)";
		return false;
	}
	if ((need & NEED_SPLIT_DBG) &&
	    access("/sys/kernel/debug/split_huge_pages", W_OK)) {
		*why = "no /sys/kernel/debug/split_huge_pages";
		return false;
	}
	if ((need & NEED_GUP_TEST) &&
	    access("/sys/kernel/debug/gup_test", R_OK | W_OK)) {
		*why = "no /sys/kernel/debug/gup_test (CONFIG_GUP_TEST)";
		return false;
	}
	if ((need & NEED_NUMA_BAL) &&
	    (access("/proc/sys/kernel/numa_balancing", W_OK) ||
	     access("/sys/kernel/debug/sched/numa_balancing/scan_delay_ms", W_OK))) {
		*why = "no NUMA balancing";
		return false;
	}
	return true;
}

/* ---- the operations ---- */

static void op_mbind_move(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	unsigned long node1 = 1UL << 1;

	/* Device memory has no node: nothing to move, and no error. */
	ASSERT_EQ(0, syscall(__NR_mbind, m->b->ptr, SIZE, MPOL_BIND, &node1,
			     sizeof(node1) * 8, MPOL_MF_MOVE));
}

static void op_mbind_strict(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	unsigned long node1 = 1UL << 1;

	ASSERT_EQ(0, syscall(__NR_mbind, m->b->ptr, SIZE, MPOL_BIND, &node1,
			     sizeof(node1) * 8, MPOL_MF_MOVE | MPOL_MF_STRICT));
}

static void op_migrate_pages(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	unsigned long from = 1UL << 0, to = 1UL << 1;

	/* The return value is the number of pages that could not move. */
	ASSERT_EQ(0, syscall(__NR_migrate_pages, 0, sizeof(from) * 8, &from, &to));
}

/* move_pages() of every page: each reports -ENOENT, a page not present. */
static void move_pages_all(struct __test_metadata *_metadata, struct mm_ctx *m,
			   bool move)
{
	void *pages[NPAGES];
	int nodes[NPAGES], status[NPAGES];
	size_t i;

	for (i = 0; i < NPAGES; i++) {
		pages[i] = m->b->ptr + i * DM_PAGE_SIZE;
		nodes[i] = 1;
		status[i] = 12345;
	}
	ASSERT_EQ(0, syscall(__NR_move_pages, 0, NPAGES, pages,
			     move ? nodes : NULL, status, 0));
	for (i = 0; i < NPAGES; i++)
		ASSERT_EQ(-ENOENT, status[i]) TH_LOG("page %zu", i);
}

static void op_move_pages_query(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	move_pages_all(_metadata, m, false);
}

static void op_move_pages_move(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	move_pages_all(_metadata, m, true);
}

#define MADV_OP(name, advice, len)					\
static void op_##name(struct __test_metadata *_metadata, struct mm_ctx *m) \
{									\
	ASSERT_EQ(0, madvise(m->b->ptr, (len), (advice)));		\
}

MADV_OP(madv_free, MADV_FREE, SIZE)
MADV_OP(madv_free_half, MADV_FREE, DM_ONEMB)
MADV_OP(madv_cold, MADV_COLD, SIZE)
MADV_OP(madv_pageout, MADV_PAGEOUT, SIZE)
MADV_OP(madv_willneed, MADV_WILLNEED, SIZE)
MADV_OP(madv_populate_read, MADV_POPULATE_READ, SIZE)
MADV_OP(madv_populate_write, MADV_POPULATE_WRITE, SIZE)

/*
 * Device PMDs are already huge, but not present PMDs that khugepaged could
 * collapse: EINVAL.  Device mTHPs are PTEs to swap in first: 6.12 refuses
 * them (EINVAL) and 7.3 swaps them in, a migration back per folio, and
 * collapses the range into PMD-mapped THPs.  Either, in full.
 */
static void op_madv_collapse(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	int ret;

	errno = 0;
	ret = madvise(m->b->ptr, SIZE, MADV_COLLAPSE);
	if (m->pmd || ret) {
		ASSERT_EQ(-1, ret);
		ASSERT_EQ(EINVAL, errno);
		return;
	}
	TH_LOG("MADV_COLLAPSE brought the device mTHPs back and collapsed them");
	m->after = SYS_COLLAPSED;
}

static long read_sys_long(const char *path)
{
	long v = -1;
	FILE *f = fopen(path, "re");

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* ksmd scans the range twice over, merges nothing, moves nothing. */
static void op_ksm(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	long scans, t;

	ASSERT_EQ(0, madvise(m->b->ptr, SIZE, MADV_MERGEABLE));
	ASSERT_EQ(0, dm_run("echo 1000 > /sys/kernel/mm/ksm/pages_to_scan && "
			    "echo 0 > /sys/kernel/mm/ksm/sleep_millisecs && "
			    "echo 1 > /sys/kernel/mm/ksm/run"));
	scans = read_sys_long("/sys/kernel/mm/ksm/full_scans");
	for (t = 0; t < 300 &&
	     read_sys_long("/sys/kernel/mm/ksm/full_scans") < scans + 2; t++)
		usleep(20000);
	ASSERT_LE(scans + 2, read_sys_long("/sys/kernel/mm/ksm/full_scans"))
		TH_LOG("ksmd did not scan twice in 6 s");
	ASSERT_EQ(0, read_sys_long("/sys/kernel/mm/ksm/pages_sharing"));
	ASSERT_EQ(0, madvise(m->b->ptr, SIZE, MADV_UNMERGEABLE));
	ASSERT_EQ(0, dm_run("echo 2 > /sys/kernel/mm/ksm/run"));
}

/* In a child, touch the range: DONTFORK must fault, WIPEONFORK read 0. */
static int fork_child_touch(void *arg)
{
	const char *p = arg;

	return p[0] == 0 && p[SIZE - 1] == 0 ? 0 : 1;
}

static void op_dontfork(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	ASSERT_EQ(0, madvise(m->b->ptr, SIZE, MADV_DONTFORK));
	/* The child has no vma there: SIGSEGV. */
	ASSERT_EQ(-EINTR, dm_run_child(fork_child_touch, m->b->ptr, 30));
}

static void op_wipeonfork(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	ASSERT_EQ(0, madvise(m->b->ptr, SIZE, MADV_WIPEONFORK));
	/* The child's copy of the vma is empty: zeroes. */
	ASSERT_EQ(0, dm_run_child(fork_child_touch, m->b->ptr, 30));
}

/* A field of the smaps entry of the vma at @addr, in kB. */
static long smaps_field_kb(const char *file, void *addr, const char *field)
{
	uintptr_t a = (uintptr_t)addr;
	char line[512], key[64];
	bool in = addr == NULL;
	long kb = -ENOENT;
	FILE *f = fopen(file, "re");

	if (!f)
		return -errno;
	snprintf(key, sizeof(key), "%s: %%ld kB", field);
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		long v;

		if (addr && sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = a >= start && a < end;
			continue;
		}
		if (in && sscanf(line, key, &v) == 1) {
			kb = v;
			break;
		}
	}
	fclose(f);
	return kb;
}

/* mlock populates: the THPs come back, whole, and are locked. */
static void op_mlock(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	ASSERT_EQ(0, mlock(m->b->ptr, SIZE));
	ASSERT_EQ(SIZE / DM_ONEKB,
		  smaps_field_kb("/proc/self/smaps", m->b->ptr, "Locked"));
	ASSERT_EQ(0, munlock(m->b->ptr, SIZE));
}

/*
 * PROT_NONE: the device cannot read the range either; back to RW, the
 * entries stay on the device, writable again, as present PTEs of
 * exclusive anonymous pages would be.
 */
static void op_mprotect_none(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	ASSERT_EQ(0, mprotect(m->b->ptr, SIZE, PROT_NONE));
	ASSERT_EQ(-EFAULT, dm_read(m->c->fd[0], m->b->ptr, NPAGES, m->b->mirror,
				   NULL));
	ASSERT_EQ(0, mprotect(m->b->ptr, SIZE, RW));
}

/* The middle 2 MB: two vma splits, each splits a device PMD. */
static void op_mprotect_part(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	ASSERT_EQ(0, mprotect(m->b->ptr + DM_ONEMB, DM_THP_SIZE, PROT_READ));
	ASSERT_EQ(0, dm_snap_local_write(m->c->fd[0], m->b->ptr + DM_ONEMB,
					 dm_npages(DM_THP_SIZE)));
	ASSERT_EQ(dm_npages(DM_ONEMB),
		  dm_snap_local_write(m->c->fd[0], m->b->ptr, dm_npages(DM_ONEMB)));
}

static void op_mincore(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	unsigned char vec[NPAGES];
	size_t i;

	memset(vec, 0xee, NPAGES);
	ASSERT_EQ(0, mincore(m->b->ptr, SIZE, vec));
	for (i = 0; i < NPAGES; i++)
		ASSERT_EQ(1, vec[i] & 1) TH_LOG("page %zu", i);
}

/*
 * smaps counts device-private entries in Rss, and device PMDs as anonymous
 * huge memory of the vma (not device mTHPs, which PTEs map).
 */
static void op_smaps(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	ASSERT_EQ(m->pmd ? SIZE / DM_ONEKB : 0,
		  smaps_field_kb("/proc/self/smaps", m->b->ptr, "AnonHugePages"));
	ASSERT_EQ(SIZE / DM_ONEKB,
		  smaps_field_kb("/proc/self/smaps", m->b->ptr, "Rss"));
}

static void op_smaps_rollup(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	ASSERT_LE(SIZE / DM_ONEKB,
		  smaps_field_kb("/proc/self/smaps_rollup", NULL,
				 m->pmd ? "AnonHugePages" : "Rss"));
}

/* numa_maps reads the range; it has no node to name for device memory. */
static void op_numa_maps(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	char line[1024], start[32];
	bool found = false;
	FILE *f = fopen("/proc/self/numa_maps", "re");

	ASSERT_NE(NULL, f);
	snprintf(start, sizeof(start), "%lx ", (unsigned long)m->b->ptr);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, start, strlen(start)))
			found = true;
	fclose(f);
	ASSERT_TRUE(found);
}

/* pagemap: swap entries, not present, the PMD's soft-dirty bit. */
static void op_pagemap(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	ASSERT_EQ(NPAGES, pm_count(m->b->ptr, NPAGES, PM_SWAP | PM_PRESENT,
				   PM_SWAP));
	ASSERT_EQ(0, pm_count(m->b->ptr, NPAGES, PM_UFFD_WP, PM_UFFD_WP));
}

/*
 * Another process reads the range, through /proc/<pid>/mem or
 * process_vm_readv(): remote GUP faults the THPs back, whole.  The reader
 * is forked before the buffer exists, so it shares none of it (a THP
 * shared with a child cannot move to the device), and told the address
 * through a pipe.  It faults its own buffer in before it says it is ready:
 * its faults would otherwise race the parent's and add to the size's
 * anon_fault_alloc, which the parent counts.
 */
static int remote_reader(int go, int ready, pid_t pid, bool vm_readv)
{
	char *buf = malloc(SIZE), path[64];
	uint64_t addr;
	ssize_t n;

	if (!buf)
		return 2;
	memset(buf, 0, SIZE);
	if (write(ready, "r", 1) != 1 ||
	    read(go, &addr, sizeof(addr)) != sizeof(addr))
		return 2;
	if (vm_readv) {
		struct iovec local = { buf, SIZE };
		struct iovec remote = { (void *)(uintptr_t)addr, SIZE };

		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	} else {
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/mem", pid);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return 3;
		n = pread(fd, buf, SIZE, addr);
		close(fd);
	}
	if (n != SIZE)
		return 4;
	return dm_verify(buf, SIZE, SEED) == -1 ? 0 : 5;
}

static void remote_prepare(struct __test_metadata *_metadata, struct mm_ctx *m,
			   bool vm_readv)
{
	pid_t parent = getpid();
	int go[2], ready[2];
	char c;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	m->helper = fork();
	ASSERT_LE(0, m->helper);
	if (!m->helper) {
		close(go[1]);
		close(ready[0]);
		_exit(remote_reader(go[0], ready[1], parent, vm_readv));
	}
	close(go[0]);
	close(ready[1]);
	m->pipe = go[1];
	ASSERT_EQ(1, read(ready[0], &c, 1));
	close(ready[0]);
}

static void remote_read(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	uint64_t addr = (uintptr_t)m->b->ptr;
	int status;

	ASSERT_EQ(sizeof(addr), write(m->pipe, &addr, sizeof(addr)));
	close(m->pipe);
	ASSERT_EQ(m->helper, waitpid(m->helper, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
}

static void prep_proc_mem(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	remote_prepare(_metadata, m, false);
}

static void prep_process_vm_readv(struct __test_metadata *_metadata,
				  struct mm_ctx *m)
{
	remote_prepare(_metadata, m, true);
}

static void op_proc_mem(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	remote_read(_metadata, m);
}

static void op_process_vm_readv(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	remote_read(_metadata, m);
}

/*
 * write() of the first page of each folio into a pipe: the kernel's copy
 * faults each folio back.
 */
static void op_pipe_write(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	size_t fsize = m->nr * DM_PAGE_SIZE, off;
	char *got = malloc(DM_PAGE_SIZE);
	int p[2];

	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, pipe(p));
	for (off = 0; off < SIZE; off += fsize) {
		ASSERT_EQ(DM_PAGE_SIZE, write(p[1], m->b->ptr + off,
					      DM_PAGE_SIZE));
		ASSERT_EQ(DM_PAGE_SIZE, read(p[0], got, DM_PAGE_SIZE));
		ASSERT_EQ(-1, dm_verify_at(got, off, DM_PAGE_SIZE, SEED));
	}
	close(p[0]);
	close(p[1]);
	free(got);
}

/*
 * A long-term pin (gup_test's, as cow.c takes it) faults the folios back
 * whole and keeps them in system memory: migrating them to the device then
 * moves nothing, and maps every page back where it was, exclusive and
 * writable, which a CPU write that the pin sees proves (a page that lost
 * its exclusive flag would be copied on write, and the pin would not see
 * the write).
 */
static void op_pin_longterm(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	struct pin_longterm_test pin = {
		.addr = (uintptr_t)m->b->ptr, .size = SIZE,
		.flags = PIN_LONGTERM_TEST_FLAG_USE_WRITE,
	};
	struct dmirror_thp_order_stats os0, os;
	char *got = malloc(SIZE);
	__u64 to = (uintptr_t)got;
	int fd, o;
	size_t i;

	ASSERT_NE(NULL, got);
	fd = open("/sys/kernel/debug/gup_test", O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, PIN_LONGTERM_TEST_START, &pin));
	ASSERT_EQ(0, dm_order_stats(m->c->fd[0], &os0));

	ASSERT_EQ(0, dm_to_dev(m->c->fd[0], m->b->ptr, NPAGES, m->b->mirror,
			       NULL));
	ASSERT_EQ(0, dm_order_stats(m->c->fd[0], &os));
	for (o = 0; o < DMIRROR_THP_NR_ORDERS; o++)
		ASSERT_EQ(os0.to_dev[o], os.to_dev[o]) TH_LOG("order %d", o);
	ASSERT_EQ(NPAGES, pm_count_present(m->b->ptr, NPAGES));
	ASSERT_EQ(0, memcmp(m->b->mirror, m->b->ptr, SIZE));

	for (i = 0; i < NPAGES; i++)
		m->b->ptr[i * DM_PAGE_SIZE] ^= 0xff;
	ASSERT_EQ(0, ioctl(fd, PIN_LONGTERM_TEST_READ, &to));
	ASSERT_EQ(0, memcmp(got, m->b->ptr, SIZE));
	for (i = 0; i < NPAGES; i++)
		m->b->ptr[i * DM_PAGE_SIZE] ^= 0xff;

	ASSERT_EQ(0, ioctl(fd, PIN_LONGTERM_TEST_STOP));
	close(fd);
	free(got);
}

/* The THP split debugfs file walks the range and splits nothing here. */
static void op_split_debugfs(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd),
		 "echo %d,0x%lx,0x%lx > /sys/kernel/debug/split_huge_pages",
		 getpid(), (unsigned long)m->b->ptr,
		 (unsigned long)m->b->ptr + SIZE);
	ASSERT_EQ(0, dm_run(cmd));
}

/*
 * NUMA balancing scans the task's memory and marks it for hinting faults.
 * Device memory has no node to hint at: its entries must stay writable,
 * or the next device write costs a migration back for nothing.
 */
static void op_numa_balancing(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	long updates = vmstat_get("numa_pte_updates");
	double end;
	volatile unsigned long spin = 0;

	ASSERT_EQ(0, dm_run("cd /sys/kernel/debug/sched/numa_balancing && "
			    "echo 0 > scan_delay_ms && echo 100 > scan_period_min_ms && "
			    "echo 1000 > scan_size_mb && "
			    "echo 1 > /proc/sys/kernel/numa_balancing"));
	/* Scans run from the task's ticks: keep the CPU busy for a while. */
	for (end = dm_now() + 3; dm_now() < end &&
	     vmstat_get("numa_pte_updates") == updates; )
		spin++;
	for (end = dm_now() + 1; dm_now() < end; )
		spin++;
	ASSERT_EQ(0, dm_run("echo 0 > /proc/sys/kernel/numa_balancing && "
			    "cd /sys/kernel/debug/sched/numa_balancing && "
			    "echo 1000 > scan_delay_ms && echo 1000 > scan_period_min_ms && "
			    "echo 256 > scan_size_mb"));
	ASSERT_LT(updates, vmstat_get("numa_pte_updates"))
		TH_LOG("no NUMA balancing scan ran in 3 s");
}

/*
 * UFFDIO_MOVE out of a device-private PMD: not a present page, ENOENT; out
 * of device-private PTEs, neither a page nor a swap entry to move, EFAULT.
 */
static void op_uffd_move(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_move mv = { 0 };
	void *dst;
	int uffd = uffd_open(UFFD_FEATURE_MOVE);

	if (uffd == -EINVAL)
		SKIP(return, "no UFFDIO_MOVE");
	ASSERT_LE(0, uffd);
	dst = mmap(NULL, SIZE + DM_THP_SIZE, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, dst);
	dm_ctx_track(m->c, dst, SIZE + DM_THP_SIZE);
	dst = (void *)(((uintptr_t)dst + DM_THP_SIZE - 1) & ~(DM_THP_SIZE - 1));
	reg.range.start = (uintptr_t)dst;
	reg.range.len = SIZE;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));
	reg.range.start = (uintptr_t)m->b->ptr;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));
	mv.src = (uintptr_t)m->b->ptr;
	mv.dst = (uintptr_t)dst;
	mv.len = DM_THP_SIZE;
	errno = 0;
	ASSERT_EQ(-1, ioctl(uffd, UFFDIO_MOVE, &mv));
	ASSERT_EQ(m->pmd ? ENOENT : EFAULT, errno);
	/* the error, as UFFDIO_MOVE reports it */
	ASSERT_EQ(m->pmd ? -ENOENT : -EFAULT, mv.move);
	close(uffd);
}

/*
 * uffd-wp on the device PMDs, then mprotect read-only and back: the
 * write-protect bit must survive both, the entries stay read-only to the
 * device, and the bit clears when resolved.
 */
static void op_uffd_wp_mprotect(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	struct uffdio_writeprotect wp = { 0 };
	int uffd = uffd_open(UFFD_FEATURE_PAGEFAULT_FLAG_WP);

	ASSERT_LE(0, uffd);
	reg.range.start = (uintptr_t)m->b->ptr;
	reg.range.len = SIZE;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));
	wp.range = reg.range;
	wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_WRITEPROTECT, &wp));
	ASSERT_EQ(NPAGES, pm_count(m->b->ptr, NPAGES, PM_UFFD_WP, PM_UFFD_WP));
	ASSERT_EQ(0, mprotect(m->b->ptr, SIZE, PROT_READ));
	ASSERT_EQ(0, mprotect(m->b->ptr, SIZE, RW));
	ASSERT_EQ(NPAGES, pm_count(m->b->ptr, NPAGES, PM_UFFD_WP, PM_UFFD_WP));
	ASSERT_EQ(0, dm_snap_local_write(m->c->fd[0], m->b->ptr, NPAGES));
	wp.mode = 0;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_WRITEPROTECT, &wp));
	ASSERT_EQ(0, pm_count(m->b->ptr, NPAGES, PM_UFFD_WP, PM_UFFD_WP));
	close(uffd);
}

/* The pages PAGEMAP_SCAN reports as written, write-protecting them. */
static long pm_scan_written(int pm, void *addr, struct page_region *r, int nr)
{
	struct pm_scan_arg arg = {
		.size = sizeof(arg),
		.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
		.start = (uintptr_t)addr,
		.end = (uintptr_t)addr + SIZE,
		.vec = (uintptr_t)r,
		.vec_len = nr,
		.category_mask = PAGE_IS_WRITTEN,
		.return_mask = PAGE_IS_WRITTEN,
	};
	long n = ioctl(pm, PAGEMAP_SCAN, &arg), pages = 0, i;

	if (n < 0)
		return -errno;
	for (i = 0; i < n; i++)
		pages += (r[i].end - r[i].start) / DM_PAGE_SIZE;
	return pages;
}

/*
 * Async uffd-wp dirty tracking: the first scan finds the range written and
 * write-protects it, read-only to the device too; nothing wrote since, so
 * the second finds nothing.
 */
static void op_pagemap_scan(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	struct page_region r[16];
	int uffd = uffd_open(UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED |
			     UFFD_FEATURE_PAGEFAULT_FLAG_WP);
	int pm;

	if (uffd == -EINVAL)
		SKIP(return, "no async uffd-wp");
	ASSERT_LE(0, uffd);
	reg.range.start = (uintptr_t)m->b->ptr;
	reg.range.len = SIZE;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));
	pm = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_LE(0, pm);
	ASSERT_EQ(NPAGES, pm_scan_written(pm, m->b->ptr, r, 16));
	ASSERT_EQ(0, pm_scan_written(pm, m->b->ptr, r, 16));
	ASSERT_EQ(NPAGES, pm_count(m->b->ptr, NPAGES, PM_UFFD_WP, PM_UFFD_WP));
	ASSERT_EQ(0, dm_snap_local_write(m->c->fd[0], m->b->ptr, NPAGES));
	close(pm);
	close(uffd);
}

/*
 * clear_refs soft-dirty: the device folios were written, so soft-dirty; the
 * bit is cleared, and they are write-protected to catch the next write.
 * A CPU write then brings each folio back and marks what it wrote dirty
 * again: a PMD's every page, a folio that PTEs map the written page.
 */
static void op_clear_refs(struct __test_metadata *_metadata, struct mm_ctx *m)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);
	size_t i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(NPAGES, pm_count(m->b->ptr, NPAGES, PM_SOFT_DIRTY,
				   PM_SOFT_DIRTY));
	ASSERT_EQ(1, write(fd, "4", 1));
	close(fd);
	ASSERT_EQ(0, pm_count(m->b->ptr, NPAGES, PM_SOFT_DIRTY, PM_SOFT_DIRTY));
	ASSERT_EQ(0, dm_snap_local_write(m->c->fd[0], m->b->ptr, NPAGES));
	for (i = 0; i < SIZE; i += m->nr * DM_PAGE_SIZE) {
		volatile char *p = m->b->ptr + i;

		*p = *p;
	}
	ASSERT_EQ(m->pmd ? NPAGES : NPAGES / m->nr,
		  pm_count(m->b->ptr, NPAGES, PM_SOFT_DIRTY, PM_SOFT_DIRTY));
}

/*
 * mremap() marks what it moves soft-dirty, device PMDs too.  The bits are
 * cleared while the THPs are in system memory (clear_refs), and the THPs
 * go back to the device with clean, read-only PMDs before they are moved.
 */
static void op_mremap_soft_dirty(struct __test_metadata *_metadata,
				 struct mm_ctx *m)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);
	char *res, *dst;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, dm_to_sys(m->c->fd[0], m->b->ptr, NPAGES, NULL));
	ASSERT_EQ(1, write(fd, "4", 1));
	close(fd);
	ASSERT_EQ(0, dm_to_dev(m->c->fd[0], m->b->ptr, NPAGES, m->b->mirror, NULL));
	ASSERT_EQ(0, dm_stats_reset(m->c->fd[0]));
	ASSERT_EQ(m->pmd ? NPAGES : 0,
		  dm_snap_local_pmd(m->c->fd[0], m->b->ptr, NPAGES));
	ASSERT_EQ(0, pm_count(m->b->ptr, NPAGES, PM_SOFT_DIRTY, PM_SOFT_DIRTY));

	res = mmap(NULL, SIZE + DM_THP_SIZE, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, res);
	dm_ctx_track(m->c, res, SIZE + DM_THP_SIZE);
	dst = (char *)(((uintptr_t)res + DM_THP_SIZE - 1) & ~(DM_THP_SIZE - 1));
	ASSERT_EQ(dst, mremap(m->b->ptr, SIZE, SIZE,
			      MREMAP_MAYMOVE | MREMAP_FIXED, dst));
	m->b->ptr = dst;
	/*
	 * A device PMD moves as an entry, marked soft-dirty; the folios that
	 * PTEs map move with their page table, whole (move_normal_pmd()),
	 * which marks nothing, for any memory.
	 */
	ASSERT_EQ(m->pmd ? NPAGES : 0,
		  pm_count(m->b->ptr, NPAGES, PM_SOFT_DIRTY, PM_SOFT_DIRTY));
}

/* ---- the table ---- */

DM_FOLIO_FIXTURE(mmop);

/*
 * Two PMDs of data in folios of the order, on the device; the operation;
 * then what it must have left, by three witnesses, and every byte through
 * the CPU.
 */
static void mm_run(struct __test_metadata *_metadata, FIXTURE_DATA(mmop) *self,
		   const struct mm_op *op)
{
	struct dm_folio_ctx *f = &self->f;
	struct mm_ctx m = {
		.c = &f->c, .order = f->order, .nr = f->nr,
		.pmd = f->order == DM_PMD_ORDER, .after = op->after,
	};
	size_t nf = NPAGES / m.nr;
	struct dmirror_thp_order_stats os;
	long split_pmd, split_page;
	struct dmirror_thp_stats st;
	const char *why;

	if (!have_feature(op->need, &why))
		SKIP(return, "%s", why);
	if (op->prepare)
		op->prepare(_metadata, &m);
	m.b = dm_folio_buf(_metadata, f, SIZE, SEED);
	ASSERT_NE(NULL, m.b);
	dm_folio_to_dev(_metadata, f, m.b, 0);
	ASSERT_EQ(NPAGES, dm_snap_local_write(f->c.fd[0], m.b->ptr, NPAGES));
	split_pmd = vmstat_get("thp_split_pmd");
	split_page = vmstat_get("thp_split_page");
	ASSERT_LE(0, split_pmd) TH_LOG("no thp_* in /proc/vmstat (VM_EVENT_COUNTERS)");

	op->run(_metadata, &m);

	DM_STATS(&f->c, 0, st);
	ASSERT_EQ(0, dm_order_stats(f->c.fd[0], &os));
	dm_stats_print("after the operation", &st);
	ASSERT_EQ(split_pmd + (m.pmd ? op->split_pmds : 0),
		  vmstat_get("thp_split_pmd"));
	ASSERT_EQ(split_page, vmstat_get("thp_split_page"));
	switch (m.after) {
	case DEV_WHOLE:
	case DEV_WHOLE_RO:
		ASSERT_EQ(0, st.cpu_faults + st.thp_to_sys + st.base_to_sys);
		ASSERT_EQ(NPAGES, dm_snap_local(f->c.fd[0], m.b->ptr, NPAGES));
		ASSERT_EQ(m.pmd ? NPAGES : 0,
			  dm_snap_local_pmd(f->c.fd[0], m.b->ptr, NPAGES));
		ASSERT_PM_DEV_PMD(m.b->ptr, NPAGES, NPAGES);
		ASSERT_EQ(m.after == DEV_WHOLE ? NPAGES : 0,
			  dm_snap_local_write(f->c.fd[0], m.b->ptr, NPAGES));
		break;
	case DEV_SPLIT:
		ASSERT_EQ(0, st.cpu_faults + st.thp_to_sys + st.base_to_sys);
		ASSERT_EQ(NPAGES, dm_snap_local(f->c.fd[0], m.b->ptr, NPAGES));
		ASSERT_EQ(0, dm_snap_local_pmd(f->c.fd[0], m.b->ptr, NPAGES));
		ASSERT_PM_DEV(m.b->ptr, NPAGES, NPAGES);
		break;
	case SYS_WHOLE:
		ASSERT_EQ(nf, os.to_sys[m.order]);
		ASSERT_EQ(0, os.to_sys[0] + st.split_fault);
		ASSERT_ON_SYS(&f->c, 0, m.b->ptr, NPAGES);
		ASSERT_EQ((long)nf, pm_count_folios(m.b->ptr, NPAGES, m.nr));
		if (m.pmd)
			ASSERT_TRUE(dm_is_sys_thp(m.b->ptr, NTHP));
		break;
	case SYS_COLLAPSED:
		ASSERT_EQ(nf, os.to_sys[m.order] + os.to_sys[0] / m.nr);
		ASSERT_ON_SYS(&f->c, 0, m.b->ptr, NPAGES);
		ASSERT_TRUE(dm_is_sys_thp(m.b->ptr, NTHP));
		break;
	}
	ASSERT_DATA(m.b->ptr, SIZE, SEED);
}

/* One operation, a test of its own, over the fixture's orders. */
#define MMOP_TEST(name, prep, needs, leaves, pmd_splits)		\
	TEST_F_TIMEOUT(mmop, name, 120)					\
	{								\
		static const struct mm_op op = {			\
			.need = (needs), .prepare = (prep),		\
			.run = op_##name, .after = (leaves),		\
			.split_pmds = (pmd_splits),			\
		};							\
		mm_run(_metadata, self, &op);				\
	}
/* op_NAME over every order: what it needs, what it leaves, PMDs split */
#define MMOP(name, needs, leaves, pmd_splits)				\
	MMOP_TEST(name, NULL, needs, leaves, pmd_splits)
/* ... with prep_NAME run first */
#define MMOP_PREP(name, needs, leaves, pmd_splits)			\
	MMOP_TEST(name, prep_##name, needs, leaves, pmd_splits)

/* NUMA placement: device memory is on no node, the folios stay put. */
MMOP(mbind_move, NEED_NODE1, DEV_WHOLE, 0)
MMOP(mbind_strict, NEED_NODE1, DEV_WHOLE, 0)
MMOP(migrate_pages, NEED_NODE1, DEV_WHOLE, 0)
MMOP(move_pages_query, 0, DEV_WHOLE, 0)
MMOP(move_pages_move, NEED_NODE1, DEV_WHOLE, 0)

/* Reclaim hints: device memory is not on an LRU, nothing changes. */
MMOP(madv_free, 0, DEV_WHOLE, 0)
MMOP(madv_free_half, 0, DEV_WHOLE, 0)
MMOP(madv_cold, 0, DEV_WHOLE, 0)
MMOP(madv_pageout, NEED_SWAP, DEV_WHOLE, 0)

/* Fault-in hints: the populating ones bring the folios back, whole. */
MMOP(madv_willneed, 0, DEV_WHOLE, 0)
MMOP(madv_collapse, 0, DEV_WHOLE, 0)
MMOP(madv_populate_read, 0, SYS_WHOLE, 0)
MMOP(madv_populate_write, 0, SYS_WHOLE, 0)

/* Merging, fork flags, locking (which populates) and protection. */
MMOP(ksm, NEED_KSM, DEV_WHOLE, 0)
MMOP(dontfork, 0, DEV_WHOLE, 0)
MMOP(wipeonfork, 0, DEV_WHOLE, 0)
MMOP(mlock, 0, SYS_WHOLE, 0)
MMOP(mprotect_none, 0, DEV_WHOLE, 0)
MMOP(mprotect_part, 0, DEV_SPLIT, 2)

/* Reports: they read the entries and change nothing. */
MMOP(mincore, 0, DEV_WHOLE, 0)
MMOP(smaps, 0, DEV_WHOLE, 0)
MMOP(smaps_rollup, 0, DEV_WHOLE, 0)
MMOP(numa_maps, 0, DEV_WHOLE, 0)
MMOP(pagemap, 0, DEV_WHOLE, 0)

/* Another process, or the kernel, reads the data: it comes back whole. */
MMOP_PREP(proc_mem, 0, SYS_WHOLE, 0)
MMOP_PREP(process_vm_readv, 0, SYS_WHOLE, 0)
MMOP(pipe_write, 0, SYS_WHOLE, 0)
MMOP(pin_longterm, NEED_GUP_TEST, SYS_WHOLE, 0)

/* What the core does to large folios on its own, and userfaultfd. */
MMOP(split_debugfs, NEED_SPLIT_DBG, DEV_WHOLE, 0)
MMOP(numa_balancing, NEED_NUMA_BAL | NEED_NODE1, DEV_WHOLE, 0)
MMOP(uffd_move, NEED_UFFD, DEV_WHOLE, 0)

/*
 * Write-protection trackers: the entries stay, read-only while tracked and
 * writable again once uffd-wp is resolved or its file closed, as present
 * PTEs would be; clear_refs then writes from the CPU, which brings the
 * folios back whole.
 */
MMOP(uffd_wp_mprotect, NEED_UFFD_WP, DEV_WHOLE, 0)
MMOP(pagemap_scan, NEED_UFFD_WP, DEV_WHOLE, 0)
MMOP(clear_refs, NEED_SOFT_DIRTY, SYS_WHOLE, 0)
MMOP(mremap_soft_dirty, NEED_SOFT_DIRTY, DEV_WHOLE_RO, 0)

/* ---- the THP policy of a hole migrated whole ---- */

FIXTURE(hole) { struct dm_ctx c; };
FIXTURE_SETUP(hole) { dm_ctx_setup(_metadata, &self->c); }
FIXTURE_TEARDOWN(hole)
{
	prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
	dm_ctx_teardown(_metadata, &self->c);
}

FIXTURE_VARIANT(hole)
{
	enum dm_thp_mode madv;
	bool prctl_disable;
	bool pmd;		/* the hole may become a device PMD */
};

FIXTURE_VARIANT_ADD(hole, hugepage) { .madv = DM_THP_ON, .pmd = true };
FIXTURE_VARIANT_ADD(hole, nohugepage) { .madv = DM_THP_OFF, .pmd = false };
FIXTURE_VARIANT_ADD(hole, thp_disable) {
	.madv = DM_THP_ON, .prctl_disable = true, .pmd = false,
};

/*
 * An empty range migrated with SELECT_COMPOUND: a device PMD only where the
 * vma's THP policy allows a THP (MADV_HUGEPAGE, and no PR_SET_THP_DISABLE);
 * base device pages otherwise.  Reads back as zeroes either way.
 */
TEST_F(hole, thp_policy)
{
	struct dm_buf *b;

	if (variant->prctl_disable)
		ASSERT_EQ(0, prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0));
	b = DM_BUF(&self->c, DM_THP_SIZE, RW, variant->madv);
	DM_MIGRATE_PROVE(&self->c, 0, b, variant->pmd);
	ASSERT_ZERO(b->mirror, DM_THP_SIZE);
	ASSERT_ZERO(b->ptr, DM_THP_SIZE);
}

/* ---- memcg reclaim ---- */

#define MEMCG	"/sys/fs/cgroup/dmirror-thp-test"

/*
 * In a small memcg (memory.max 32 MB, swap allowed), a process moves two
 * THPs to the device, then allocates and writes 64 MB: reclaim swaps part
 * of it out (the memcg's swap usage must show it), and must neither touch
 * nor lose the device THPs.  Runs in a child, which must be in the memcg
 * when it migrates.  One pass over twice memory.max is enough to make
 * reclaim swap; three passes over three times it took longer than the
 * child's 150 s in the debug flavour under TCG.
 */
static int memcg_child(void *arg)
{
	struct dm_buf b;
	int fd = dm_open(0);
	size_t big = 64 << 20;
	char *p;

	(void)arg;
	if (fd < 0 || dm_run("echo $PPID > " MEMCG "/cgroup.procs") ||
	    dm_buf_alloc(&b, SIZE, RW, DM_THP_ON))
		return 10;
	dm_fill(b.ptr, SIZE, SEED);
	if (!dm_is_sys_thp(b.ptr, NTHP))
		return 11;
	if (dm_to_dev(fd, b.ptr, NPAGES, b.mirror, NULL))
		return 12;
	if (dm_snap_local_pmd(fd, b.ptr, NPAGES) != NPAGES)
		return 13;
	p = mmap(NULL, big, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 14;
	dm_fill(p, big, 7);
	if (read_sys_long(MEMCG "/memory.swap.current") <= 0)
		return 18;
	if (dm_verify(p, big, 7) != -1)
		return 15;
	/* Still on the device, as PMDs; then every byte back by the CPU. */
	if (dm_snap_local_pmd(fd, b.ptr, NPAGES) != NPAGES ||
	    pm_count_dev(b.ptr, NPAGES) != NPAGES)
		return 16;
	if (dm_verify(b.ptr, SIZE, SEED) != -1)
		return 17;
	return 0;
}

DM_FIXTURE(memcg);

TEST_F_TIMEOUT(memcg, reclaim_keeps_device_thps, 180)
{
	const char *why;
	int ret;

	if (!have_feature(NEED_SWAP, &why))
		SKIP(return, "%s", why);
	if (dm_run("grep -qw memory /sys/fs/cgroup/cgroup.controllers"))
		SKIP(return, "no memory controller (CONFIG_MEMCG, cgroup2 mounted)");
	ASSERT_EQ(0, dm_run("echo +memory > /sys/fs/cgroup/cgroup.subtree_control && "
			    "mkdir -p " MEMCG " && echo 32M > " MEMCG "/memory.max"));
	ret = dm_run_child(memcg_child, NULL, 150);
	dm_run("cat " MEMCG "/memory.events >&2; rmdir " MEMCG);
	/* 10..18: which step of memcg_child() failed. */
	ASSERT_EQ(0, ret);
}

/*
 * A device write into system memory survives reclaim.  A read fault maps
 * an exclusive swap-cache folio writable and clean; the device then writes
 * it through the mirror, and no CPU write dirties its PTE.  Unless the
 * driver marks the folio dirty, the next pageout frees it for its swap
 * copy, and the read after finds the data from before the write.
 */
#define WB_NR		16
#define WB_SIZE		(WB_NR * DM_PAGE_SIZE)

DM_FIXTURE(swapcache);

/*
 * MADV_PAGEOUT of the WB_NR pages at @p until pagemap shows every one
 * swapped out, from every CPU in turn, for up to a second: it skips a
 * folio whose swap write is still in flight, and drains only its own
 * CPU's LRU batches, while a folio whose swap write completed can wait in
 * the batch of the CPU that completed it.
 */
static bool page_out(char *p)
{
	cpu_set_t allowed, one;
	bool done = false;
	int i, cpu;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return false;
	for (i = 0; i < 100 && !done; i++) {
		if (i)
			usleep(10000);
		for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
			if (!CPU_ISSET(cpu, &allowed))
				continue;
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			if (sched_setaffinity(0, sizeof(one), &one) ||
			    madvise(p, WB_SIZE, MADV_PAGEOUT))
				goto out;
		}
		done = pm_count(p, WB_NR, PM_SWAP | PM_PRESENT, PM_SWAP) == WB_NR;
	}
out:
	if (sched_setaffinity(0, sizeof(allowed), &allowed))
		return false;
	return done;
}

TEST_F(swapcache, device_write_survives_pageout)
{
	struct hmm_dmirror_cmd cmd;
	const char *why;
	char *p, *src;

	if (!have_feature(NEED_SWAP, &why))
		SKIP(return, "%s", why);
	p = dm_ctx_track(&self->c, mmap(NULL, 2 * WB_SIZE, RW,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
			 2 * WB_SIZE);
	ASSERT_NE(MAP_FAILED, p);
	src = p + WB_SIZE;
	ASSERT_EQ(0, madvise(p, WB_SIZE, MADV_NOHUGEPAGE));
	dm_fill(p, WB_SIZE, SEED);
	ASSERT_TRUE(page_out(p));
	/* Read faults: in memory again, clean, the swap copy kept. */
	ASSERT_DATA(p, WB_SIZE, SEED);
	ASSERT_EQ(WB_NR, pm_count_present(p, WB_NR));
	dm_fill(src, WB_SIZE, SEED + 1);
	ASSERT_EQ(0, dm_write(self->c.fd[0], p, WB_NR, src, &cmd));
	ASSERT_EQ(WB_NR, cmd.cpages);
	ASSERT_TRUE(page_out(p));
	ASSERT_DATA(p, WB_SIZE, SEED + 1);
}

/*
 * Pages that KSM merged stay in system memory when their range migrates:
 * KSM reads a stable page through the direct map (memcmp_pages()), which
 * device memory does not have.  Each stable page is mapped once when the
 * range migrates (its twin is unmapped), so that collect takes it without
 * the rmap walk; then ksmd compares new twins with it, twice over.
 */
#define KSM_NR		16
#define KSM_SIZE	(KSM_NR * DM_PAGE_SIZE)
#define KSM_SYS		"/sys/kernel/mm/ksm/"

static bool ksm_wait(long (*done)(void *), void *arg)
{
	int t;

	for (t = 0; t < 1000 && !done(arg); t++)
		usleep(20000);
	return done(arg);
}

static long ksm_sharing_at_least(void *want)
{
	return read_sys_long(KSM_SYS "pages_sharing") >= *(long *)want;
}

static long ksm_scanned_past(void *scans)
{
	return read_sys_long(KSM_SYS "full_scans") >= *(long *)scans;
}

/* KSM_NR pages, page i filled with byte 0x40 + i, MADV_MERGEABLE. */
static char *ksm_area(struct __test_metadata *_metadata)
{
	char *p = mmap(NULL, KSM_SIZE, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int i;

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, madvise(p, KSM_SIZE, MADV_NOHUGEPAGE));
	for (i = 0; i < KSM_NR; i++)
		memset(p + i * DM_PAGE_SIZE, 0x40 + i, DM_PAGE_SIZE);
	ASSERT_EQ(0, madvise(p, KSM_SIZE, MADV_MERGEABLE));
	return p;
}

FIXTURE(ksm) { struct dm_ctx c; };
FIXTURE_SETUP(ksm) { dm_ctx_setup(_metadata, &self->c); }
FIXTURE_TEARDOWN(ksm)
{
	/* Unmerge everything, then stop ksmd. */
	dm_run("echo 2 > " KSM_SYS "run");
	dm_ctx_teardown(_metadata, &self->c);
}

TEST_F_TIMEOUT(ksm, merged_pages_stay_in_system_memory, 120)
{
	struct dmirror_thp_stats st;
	char *mirror, *a, *b, *c;
	long want, scans;
	const char *why;

	if (!have_feature(NEED_KSM, &why))
		SKIP(return, "%s", why);
	ASSERT_EQ(0, dm_run("echo 2 > " KSM_SYS "run && "
			    "echo 1000 > " KSM_SYS "pages_to_scan && "
			    "echo 0 > " KSM_SYS "sleep_millisecs && "
			    "echo 1 > " KSM_SYS "run"));
	mirror = mmap(NULL, KSM_SIZE, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mirror);
	/* KSM_NR stable pages, each mapped by a and by its twin b. */
	a = ksm_area(_metadata);
	b = ksm_area(_metadata);
	want = KSM_NR;
	ASSERT_TRUE(ksm_wait(ksm_sharing_at_least, &want))
		TH_LOG("ksmd merged %ld of %d pairs in 20 s",
		       read_sys_long(KSM_SYS "pages_sharing"), KSM_NR);
	ASSERT_EQ(0, munmap(b, KSM_SIZE));

	ASSERT_EQ(0, dm_to_dev(self->c.fd[0], a, KSM_NR, mirror, NULL));
	ASSERT_EQ(0, dm_stats(self->c.fd[0], &st));
	/* pagemap: every page still present in system memory. */
	EXPECT_EQ(KSM_NR, pm_count_present(a, KSM_NR));
	EXPECT_EQ(0, pm_count_dev(a, KSM_NR));
	EXPECT_EQ(0, st.base_to_dev);
	EXPECT_EQ(0, memcmp(mirror, a, KSM_SIZE));

	/* New twins: ksmd compares each with a's stable page. */
	c = ksm_area(_metadata);
	EXPECT_TRUE(ksm_wait(ksm_sharing_at_least, &want));
	scans = read_sys_long(KSM_SYS "full_scans") + 2;
	ASSERT_TRUE(ksm_wait(ksm_scanned_past, &scans))
		TH_LOG("ksmd did not scan twice in 20 s");
	EXPECT_EQ(0, memcmp(a, c, KSM_SIZE));
	EXPECT_EQ(0x40 + KSM_NR - 1, a[KSM_SIZE - 1]);
	munmap(a, KSM_SIZE);
	munmap(c, KSM_SIZE);
	munmap(mirror, KSM_SIZE);
}

TEST_HARNESS_MAIN
