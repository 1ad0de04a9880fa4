// SPDX-License-Identifier: GPL-2.0
/*
 * hmm-thp-stress: seeded, bounded stress of device-private THP migration.
 *
 * Each worker thread owns a few PMD-sized regions, filled with a pattern
 * that is a function of (seed, region, page, generation).  It performs
 * random operations (migrate to the device, fault back by reading or
 * writing, migrate to system memory, device writes, partial munmap and
 * remap, mprotect, MADV_DONTNEED, fork with the child verifying and
 * writing, FAIL_ALLOC toggles, and a refresh that maps the whole region
 * afresh, written or empty, so that THPs keep coming back after the
 * splits) and verifies every byte after every operation, through the
 * device or through the CPU.
 *
 * And the mm operations that found upstream's bugs, each where the guest
 * has it (the run lists what it lacks): mbind with MPOL_MF_MOVE to either
 * NUMA node, MADV_COLD, MADV_PAGEOUT, MADV_WILLNEED and MADV_COLLAPSE,
 * mremap away and back (aligned, or a page off, which splits a PMD),
 * KSM merging on and off, uffd-wp around a migration, and a live child:
 * forked, it keeps reading (bringing shared device pages back in its own
 * mm) and migrating its copy through a file of its own while the parent
 * goes on, until a later operation reaps it.
 *
 * Output is TAP: one test line per worker and a summary with the
 * operation counts, the bytes verified and any mismatch.
 *
 * hmm-thp-stress [-t threads] [-s seconds] [-g grace] [-S seed] [-r regions]
 *                [-d dev] [-T] [-m] [-p] [-P]
 *
 * -p makes each worker a process of its own rather than a thread.
 *
 * -P says that the run is under memory pressure (a memcg limit, reclaim,
 * KSM and NUMA balancing invalidating its ranges): up to a quarter of the
 * device reads may then fail for memory or give up (EBUSY).
 *
 * -T fails the run unless the device moved at least one THP whole in each
 * direction (for guests with memory to spare for THPs).
 *
 * -m gives the regions mixed folio orders: PMD, 1 MB, 64 kB and 16 kB in
 * turn, each region a vma of its folio's size, with those mTHP sizes
 * enabled for the run (and the sysfs policy restored at the end); with -T
 * each of those orders must then move whole both ways.
 *
 * A run fails for a mismatch, an undocumented errno, a worker that could not
 * start (its thread, its file or its buffer), a worker that is still
 * inside an operation -g seconds (30) after the end (its kernel stack is
 * printed: a debug kernel under reclaim wants more than a normal one), a
 * worker that did fewer than a tenth of the median worker's operations,
 * and device READs that failed for memory while no fault was injected
 * (/proc/self/make-it-fail): each such READ is a verification not done.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/mempolicy.h>
#include <linux/userfaultfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dmirror_thp_helpers.h"

#define PAGE		DM_PAGE_SIZE
#define THP		DM_THP_SIZE
#define MAX_REGIONS	16

struct worker;

/* What an operation needs of the guest: without it, it gets no weight. */
enum {
	NEED_NODE1	= 1 << 0,
	NEED_KSM	= 1 << 1,
	NEED_UFFD_WP	= 1 << 2,
};

/*
 * One operation on region @r of @w: 0 when done, 1 when a device command
 * failed for memory or gave up (a soft error), -1 when it failed
 * (w->failure says why).  A full check of the region follows all but -1.
 */
typedef int op_fn(struct worker *w, int r);

static op_fn op_to_dev, op_read_fault, op_write_fault, op_to_sys,
	     op_dev_write, op_munmap_remap, op_mprotect, op_dontneed, op_fork,
	     op_fail_alloc, op_refresh, op_mbind, op_madvise, op_mremap, op_ksm,
	     op_uffd_wp, op_live_child;

/*
 * The operations and how often each is picked.  The ones that keep THPs
 * whole (migrations, refresh) outweigh the ones that split them, so that
 * most migrations see a PMD-mapped folio rather than the debris of a
 * split.  The rows' order and weights decide what a seed picks.
 */
static const struct op {
	const char	*name;
	unsigned int	weight;
	unsigned int	need;		/* NEED_* */
	op_fn		*run;
} ops[] = {
	{ "migrate_to_dev",	4, 0,			op_to_dev },
	{ "read_fault",		2, 0,			op_read_fault },
	{ "write_fault",	1, 0,			op_write_fault },
	{ "migrate_to_sys",	2, 0,			op_to_sys },
	{ "device_write",	2, 0,			op_dev_write },
	{ "munmap_remap",	1, 0,			op_munmap_remap },
	{ "mprotect",		1, 0,			op_mprotect },
	{ "dontneed",		1, 0,			op_dontneed },
	{ "fork",		1, 0,			op_fork },
	{ "fail_alloc",		1, 0,			op_fail_alloc },
	{ "refresh",		2, 0,			op_refresh },
	{ "mbind",		1, NEED_NODE1,		op_mbind },
	{ "madvise",		1, 0,			op_madvise },
	{ "mremap",		1, 0,			op_mremap },
	{ "ksm",		1, NEED_KSM,		op_ksm },
	{ "uffd_wp",		1, NEED_UFFD_WP,	op_uffd_wp },
	{ "live_child",		1, 0,			op_live_child },
};
#define NR_OPS	(sizeof(ops) / sizeof(ops[0]))

/* The NEED_* bits this guest lacks (probe_needs()). */
static unsigned int missing;

#define HISTORY		8

struct region {
	char *addr;
	unsigned int order;	/* folio order its faults allocate */
	unsigned long npages;	/* 1 << order: one folio per region */
	uint32_t *gen;		/* per page; 0: the page reads as zeroes */
	bool ksm;		/* MADV_MERGEABLE */
	/* The last operations on the region, for a mismatch report. */
	struct {
		unsigned char op;
		unsigned short first, n;
	} hist[HISTORY];
	unsigned int nhist;
};

struct worker {
	int id;
	pthread_t thread;
	int fd;
	uint64_t rng;
	struct region region[MAX_REGIONS];
	uint64_t *buf;		/* the device's side of READ and WRITE */
	uint64_t op_count[NR_OPS];
	uint64_t soft_errors;	/* ENOMEM / EBUSY: allowed under pressure */
	uint64_t mremap_skips;	/* mremaps of a region split into vmas */
	uint64_t readback_misses; /* ENOENT from a migration's read-back */
	uint64_t reads;		/* device READs */
	uint64_t read_skips;	/* device READs that failed for memory */
	uint64_t bytes_verified;
	uint64_t mismatches;
	unsigned long first, n;	/* the range of the current operation */
	/* What it is doing, for the report at the end (-1: between ops). */
	volatile int cur_op;
	volatile double op_start;
	pid_t tid;
	char *spare;		/* a 2 MB-aligned place to mremap a region to */
	pid_t child;		/* the live child, or 0 */
	int child_pipe;		/* closing it ends the live child */
	int child_region;
	bool started;		/* its thread or process was created */
	volatile bool done;
	char failure[512];
};

/* The options (parse_args()). */
static int nr_threads = 4, nr_regions = 2, seconds = 60, grace = 30;
static int need_thp, mthp, processes, pressure;
/* This task is under fault injection (faults_injected()). */
static bool injected;
/* With -m, regions take these orders in turn: PMD, 1 MB, 64 kB, 16 kB. */
static const unsigned int mthp_orders[] = { 9, 8, 4, 2 };
#define NR_MTHP_ORDERS	(sizeof(mthp_orders) / sizeof(mthp_orders[0]))

static bool mthp_order_used(unsigned int order)
{
	unsigned int i;

	for (i = 0; i < NR_MTHP_ORDERS; i++)
		if (mthp_orders[i] == order)
			return true;
	return false;
}
static uint64_t seed;
static const char *device = "/dev/hmm_dmirror0";
/* Shared with the worker processes of -p (see run_workers()). */
static volatile int *stop;

/*
 * Under fault injection a VMA operation may fail with ENOMEM, and then it
 * changed nothing: count it and try again, for 10 s at most.  A failure
 * that outlasts that is reported with its errno, not spun on silently.
 */
#define RETRY_ENOMEM(w, expr) ({					\
	double __end = dm_now() + 10;					\
	int __r;							\
	while ((__r = (expr)) && errno == ENOMEM && dm_now() < __end)	\
		(w)->soft_errors++;					\
	__r;								\
})

/*
 * The same for the sysfs files of -m, before and after the workers: an
 * injected failure makes their open fail with ENOMEM.
 */
#define RETRY_SYSFS(expr) ({						\
	double __end = dm_now() + 10;					\
	int __r;							\
	while ((__r = (expr)) == -ENOMEM && dm_now() < __end)		\
		;							\
	__r;								\
})

/*
 * The mTHP sizes' sysfs policy of -m.  Not the tree's hugepage_settings:
 * those exit on a failed open, and under fault injection an open fails
 * with ENOMEM now and then (RETRY_SYSFS retries these).
 */
struct mthp_policy {
	char mode[DM_MAX_ORDERS][16];
};

#define MTHP_FMT "/sys/kernel/mm/transparent_hugepage/hugepages-%lukB/%s"

static int mthp_get_enabled(unsigned long kb, char *mode, size_t len)
{
	char path[128], line[128], *l, *r;
	FILE *f;

	snprintf(path, sizeof(path), MTHP_FMT, kb, "enabled");
	f = fopen(path, "re");
	if (!f)
		return -errno;
	l = fgets(line, sizeof(line), f);
	fclose(f);
	if (!l || !(l = strchr(line, '[')) || !(r = strchr(l, ']')))
		return -EIO;
	*r = 0;
	snprintf(mode, len, "%s", l + 1);
	return 0;
}

static int mthp_set_enabled(unsigned long kb, const char *mode)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), MTHP_FMT, kb, "enabled");
	f = fopen(path, "we");
	if (!f)
		return -errno;
	ret = fprintf(f, "%s\n", mode) > 0 ? 0 : -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

static int mthp_policy_save(struct mthp_policy *p)
{
	unsigned int o;
	int ret;

	for (o = DM_MTHP_MIN_ORDER; o <= DM_PMD_ORDER && o < DM_MAX_ORDERS; o++) {
		ret = mthp_get_enabled(dm_order_kb(o), p->mode[o],
				       sizeof(p->mode[o]));
		if (ret)
			return ret;
	}
	return 0;
}

static int mthp_policy_restore(const struct mthp_policy *p)
{
	unsigned int o;
	int ret = 0;

	for (o = DM_MTHP_MIN_ORDER; o <= DM_PMD_ORDER && o < DM_MAX_ORDERS; o++)
		if (p->mode[o][0] && !ret)
			ret = mthp_set_enabled(dm_order_kb(o), p->mode[o]);
	return ret;
}

/*
 * -m: the mTHP sizes of the regions are enabled, every other size below
 * the PMD disabled; a region's vma is the size of its folio.  The policy
 * it replaces goes to @saved.  0, or -1 once it has said why.
 */
static int mthp_policy_set(struct mthp_policy *saved)
{
	unsigned int o;

	if (RETRY_SYSFS(mthp_policy_save(saved))) {
		printf("Bail out! -m: no mTHP sizes in sysfs\n");
		return -1;
	}
	for (o = DM_MTHP_MIN_ORDER; o < DM_PMD_ORDER; o++)
		if (RETRY_SYSFS(mthp_set_enabled(dm_order_kb(o),
				mthp_order_used(o) ? "always" : "never"))) {
			printf("Bail out! -m: cannot set the mTHP policy\n");
			return -1;
		}
	return 0;
}

static uint64_t pattern(struct worker *w, int r, unsigned long p, uint32_t gen)
{
	if (!gen)
		return 0;
	return seed ^ ((uint64_t)w->id << 56) ^ ((uint64_t)r << 48) ^
	       ((uint64_t)p << 32) ^ gen;
}

static void fill_page(uint64_t *dst, uint64_t v)
{
	unsigned long i;

	for (i = 0; i < PAGE / 8; i++)
		dst[i] = v ? v + i : 0;
}

static int check_page(struct worker *w, const uint64_t *src, int r,
		      unsigned long p, const char *how)
{
	uint64_t v = pattern(w, r, p, w->region[r].gen[p]);
	unsigned long i;

	w->bytes_verified += PAGE;
	for (i = 0; i < PAGE / 8; i++) {
		if (src[i] != (v ? v + i : 0)) {
			w->mismatches++;
			snprintf(w->failure, sizeof(w->failure),
				 "region %d page %lu word %lu: %#llx, expected %#llx (gen %u, %s)",
				 r, p, i, (unsigned long long)src[i],
				 (unsigned long long)(v ? v + i : 0),
				 w->region[r].gen[p], how);
			return -1;
		}
	}
	return 0;
}

static int dmirror(struct worker *w, unsigned long req, void *addr,
		   unsigned long npages)
{
	int err = -dm_cmd(w->fd, req, (uintptr_t)addr, (uintptr_t)w->buf,
			  npages, NULL);

	if (!err)
		return 0;
	if (err == ENOMEM || err == EBUSY) {
		w->soft_errors++;
		return 1;
	}
	/*
	 * The read-back after MIGRATE_TO_DEV or EXCLUSIVE found a page it
	 * cannot read without a fault (uapi/): one that did not move
	 * (swapped out, a KSM page) or that a fault took back meanwhile (a
	 * live child reading a page it shares).  The data is verified all
	 * the same, by the next check.
	 */
	if (err == ENOENT && (req == HMM_DMIRROR_MIGRATE_TO_DEV ||
			      req == HMM_DMIRROR_EXCLUSIVE)) {
		w->readback_misses++;
		return 1;
	}
	snprintf(w->failure, sizeof(w->failure), "ioctl %#lx at %p x %lu: %s",
		 req, addr, npages, strerror(err));
	return -1;
}

/*
 * Verify through the device: it reads device pages in place.  A READ that
 * fails for memory verifies nothing: counted, and judged at the end.
 */
static int verify_device(struct worker *w, int r)
{
	unsigned long p;
	int ret = dmirror(w, HMM_DMIRROR_READ, w->region[r].addr,
			  w->region[r].npages);

	w->reads++;
	if (ret > 0)
		w->read_skips++;
	if (ret)
		return ret < 0 ? -1 : 0;
	for (p = 0; p < w->region[r].npages; p++)
		if (check_page(w, w->buf + p * PAGE / 8, r, p, "device read"))
			return -1;
	return 0;
}

/* Verify through the CPU: faults everything back to system memory. */
static int verify_cpu(struct worker *w, int r)
{
	unsigned long p;

	for (p = 0; p < w->region[r].npages; p++)
		if (check_page(w, (uint64_t *)(w->region[r].addr + p * PAGE),
			       r, p, "cpu read"))
			return -1;
	return 0;
}

static void write_pages(struct worker *w, int r, unsigned long first,
			unsigned long n)
{
	unsigned long p;

	for (p = first; p < first + n; p++) {
		w->region[r].gen[p]++;
		if (!w->region[r].gen[p])
			w->region[r].gen[p] = 1;
		fill_page((uint64_t *)(w->region[r].addr + p * PAGE),
			  pattern(w, r, p, w->region[r].gen[p]));
	}
}

/*
 * A 2 MB-aligned, THP-advised region of its own, one folio of @order: a
 * vma of exactly that size, so that its faults allocate a folio of that
 * order (the highest size enabled that fits, see -m).
 */
static char *map_region(unsigned int order)
{
	size_t size = PAGE << order;
	void *res;
	size_t res_len;
	char *addr = dm_reserve_aligned(THP, &res, &res_len);

	int err;

	if (!addr)
		return NULL;
	if (mmap(addr, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		err = errno;
		munmap(res, res_len);
		errno = err;
		return NULL;
	}
	madvise(addr, size, MADV_HUGEPAGE);
	return addr;
}

/* A random run of pages of region @rg; returns its address. */
static char *subrange(struct worker *w, struct region *rg,
		      unsigned long *first, unsigned long *n)
{
	char *base = rg->addr;

	*first = dm_rand(&w->rng) % rg->npages;
	*n = 1 + dm_rand(&w->rng) % (rg->npages - *first);
	w->first = *first;
	w->n = *n;
	return base + *first * PAGE;
}

static void history_add(struct region *rg, unsigned int op, unsigned long first,
			unsigned long n)
{
	unsigned int i = rg->nhist++ % HISTORY;

	rg->hist[i].op = op;
	rg->hist[i].first = first;
	rg->hist[i].n = n;
}

/* Append the region's recent operations, oldest first, to the failure. */
static void history_report(struct worker *w, const struct region *rg)
{
	size_t len = strlen(w->failure);
	unsigned int i, k;

	i = rg->nhist > HISTORY ? rg->nhist - HISTORY : 0;
	for (; i < rg->nhist && len < sizeof(w->failure) - 40; i++) {
		k = i % HISTORY;
		len += snprintf(w->failure + len, sizeof(w->failure) - len,
				"; %s[%u+%u]",
				ops[rg->hist[k].op].name, rg->hist[k].first,
				rg->hist[k].n);
	}
}

/*
 * A fork child's own copy of its worker, taken before the fork.  The
 * workers live in a shared mapping (for -p): the generations that the
 * child writes, and the ones its parent writes after the fork, must each
 * stay on their own side.  NULL (out of memory): no fork.
 */
static struct worker *worker_copy(struct worker *w)
{
	struct worker *c = malloc(sizeof(*c));

	if (c)
		memcpy(c, w, sizeof(*c));
	return c;
}

/* Record why a VMA operation failed, if it did: the run fails with it. */
static int failed(struct worker *w, const char *what, int ret)
{
	if (!ret)
		return 0;
	snprintf(w->failure, sizeof(w->failure), "%s: %s", what,
		 strerror(errno));
	return -1;
}

/* A fresh anonymous mapping over [at, at + len). */
static int remap(char *at, size_t len)
{
	return mmap(at, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
	       MAP_FAILED ? -1 : 0;
}

/* End the live child, if any: it must have seen its data intact. */
static int reap_child(struct worker *w)
{
	int status;

	if (!w->child)
		return 0;
	close(w->child_pipe);
	if (waitpid(w->child, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		snprintf(w->failure, sizeof(w->failure),
			 "live child of region %d failed (status %#x)",
			 w->child_region, status);
		w->mismatches++;
		w->child = 0;
		return -1;
	}
	w->child = 0;
	return 0;
}

/*
 * The live child: until its parent closes the pipe (or 30 s), it reads
 * its copy of the region with the CPU, faulting shared device pages back
 * in its own mm, and moves it to the device and back through a file of
 * its own, verifying every byte.  Its copy is the region as it was at the
 * fork: the parent's later writes are not its.
 */
static int live_child(struct worker *w, int r, int rfd)
{
	double end = dm_now() + 30;
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	w->fd = open(device, O_RDWR);
	if (w->fd < 0)
		return 1;
	w->failure[0] = 0;
	while (dm_now() < end) {
		struct region *rg = &w->region[r];

		if (verify_cpu(w, r) ||
		    dmirror(w, HMM_DMIRROR_MIGRATE_TO_DEV, rg->addr,
			    rg->npages) < 0 || verify_device(w, r))
			goto fail;
		/* The pipe: closed (0) ends it, empty (EAGAIN) goes on. */
		if (read(rfd, &c, 1) == 0)
			break;
	}
	if (!verify_cpu(w, r))
		return 0;
fail:
	printf("# worker %d's live child: %s\n", w->id, w->failure);
	fflush(stdout);
	return 1;
}

/* ---- the operations, in the order of ops[] ---- */

static int op_to_dev(struct worker *w, int r)
{
	struct region *rg = &w->region[r];

	return dmirror(w, HMM_DMIRROR_MIGRATE_TO_DEV, rg->addr, rg->npages);
}

static int op_read_fault(struct worker *w, int r)
{
	struct region *rg = &w->region[r];
	unsigned long first, n, p;
	int ret = 0;

	subrange(w, rg, &first, &n);
	for (p = first; p < first + n && !ret; p++)
		ret = check_page(w, (uint64_t *)(rg->addr + p * PAGE), r, p,
				 "read fault");
	return ret;
}

static int op_write_fault(struct worker *w, int r)
{
	unsigned long first, n;

	subrange(w, &w->region[r], &first, &n);
	write_pages(w, r, first, n);
	return 0;
}

static int op_to_sys(struct worker *w, int r)
{
	struct region *rg = &w->region[r];

	return dmirror(w, HMM_DMIRROR_MIGRATE_TO_SYS, rg->addr, rg->npages);
}

/* The device writes the next generation of a subrange. */
static int op_dev_write(struct worker *w, int r)
{
	struct region *rg = &w->region[r];
	unsigned long first, n, p;
	int ret;

	subrange(w, rg, &first, &n);
	for (p = first; p < first + n; p++) {
		uint32_t gen = rg->gen[p] + 1 ? rg->gen[p] + 1 : 1;

		fill_page(w->buf + (p - first) * PAGE / 8,
			  pattern(w, r, p, gen));
	}
	ret = dmirror(w, HMM_DMIRROR_WRITE, rg->addr + first * PAGE, n);
	if (!ret) {
		for (p = first; p < first + n; p++)
			rg->gen[p] = rg->gen[p] + 1 ? rg->gen[p] + 1 : 1;
	} else if (ret > 0) {
		/*
		 * A write that failed for memory may have written a prefix:
		 * write the same next generation from the CPU.
		 */
		write_pages(w, r, first, n);
		ret = 0;
	}
	return ret;
}

/* MADV_DONTNEED, or munmap and map again, a subrange: it reads as zero. */
static int drop_pages(struct worker *w, int r, bool dontneed)
{
	struct region *rg = &w->region[r];
	unsigned long first, n;
	char *at = subrange(w, rg, &first, &n);
	size_t len = n * PAGE;

	if (dontneed) {
		if (failed(w, "MADV_DONTNEED",
			   RETRY_ENOMEM(w, madvise(at, len, MADV_DONTNEED))))
			return -1;
	} else if (failed(w, "munmap", RETRY_ENOMEM(w, munmap(at, len))) ||
		   failed(w, "remap", RETRY_ENOMEM(w, remap(at, len)))) {
		return -1;
	}
	memset(&rg->gen[first], 0, n * sizeof(rg->gen[0]));
	return 0;
}

static int op_munmap_remap(struct worker *w, int r)
{
	return drop_pages(w, r, false);
}

static int op_dontneed(struct worker *w, int r)
{
	return drop_pages(w, r, true);
}

/* A subrange read-only, read through the CPU, then writable again. */
static int op_mprotect(struct worker *w, int r)
{
	struct region *rg = &w->region[r];
	unsigned long first, n, p;
	char *at = subrange(w, rg, &first, &n);
	int ret = 0;

	if (failed(w, "mprotect(PROT_READ)",
		   RETRY_ENOMEM(w, mprotect(at, n * PAGE, PROT_READ))))
		return -1;
	for (p = first; p < first + n && !ret; p++)
		ret = check_page(w, (uint64_t *)(rg->addr + p * PAGE), r, p,
				 "read-only read");
	if (failed(w, "mprotect(PROT_READ | PROT_WRITE)",
		   RETRY_ENOMEM(w, mprotect(at, n * PAGE,
					    PROT_READ | PROT_WRITE))))
		return -1;
	return ret;
}

static int op_fork(struct worker *w, int r)
{
	unsigned long first, n;
	struct worker *c;
	pid_t pid;
	int status;

	subrange(w, &w->region[r], &first, &n);
	c = worker_copy(w);
	pid = c ? fork() : -1;
	if (pid < 0) {
		free(c);
		w->soft_errors++;
		return 0;
	}
	if (!pid) {
		/* Holding the device open, it must not outlive a killed parent. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);
		w = c;
		/* The child sees the parent's data, then writes its own. */
		if (verify_cpu(w, r))
			_exit(1);
		write_pages(w, r, first, n);
		_exit(verify_cpu(w, r) ? 1 : 0);
	}
	free(c);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		snprintf(w->failure, sizeof(w->failure),
			 "fork child of region %d failed (status %#x)", r, status);
		w->mismatches++;
		return -1;
	}
	return 0;
}

/* Arm or disarm the device's one-shot large-allocation failure. */
static int op_fail_alloc(struct worker *w, int r)
{
	uint64_t flags = dm_rand(&w->rng) & 1 ? HMM_DMIRROR_FLAG_FAIL_ALLOC : 0;

	(void)r;
	return dmirror(w, HMM_DMIRROR_FLAGS, NULL, flags);
}

/* Partial unmaps leave base pages: start over with a folio. */
static int op_refresh(struct worker *w, int r)
{
	struct region *rg = &w->region[r];

	if (failed(w, "refresh",
		   RETRY_ENOMEM(w, remap(rg->addr, rg->npages * PAGE))))
		return -1;
	madvise(rg->addr, rg->npages * PAGE, MADV_HUGEPAGE);
	memset(rg->gen, 0, rg->npages * sizeof(*rg->gen));
	/*
	 * Half the time leave it empty: migrating an empty PMD gives a
	 * device THP even when the system has none to give, and bringing
	 * that back is where a failing system-side THP allocation falls
	 * back to a split.
	 */
	if (dm_rand(&w->rng) & 1)
		write_pages(w, r, 0, rg->npages);
	return 0;
}

/* mbind(MPOL_BIND, one node, MPOL_MF_MOVE), then the default policy. */
static int op_mbind(struct worker *w, int r)
{
	struct region *rg = &w->region[r];
	unsigned long node = 1UL << (dm_rand(&w->rng) % 2);
	size_t len = rg->npages * PAGE;

	if (failed(w, "mbind(MPOL_BIND)",
		   RETRY_ENOMEM(w, syscall(SYS_mbind, rg->addr, len, MPOL_BIND,
					   &node, 8 * sizeof(node),
					   MPOL_MF_MOVE))))
		return -1;
	return failed(w, "mbind(MPOL_DEFAULT)",
		      RETRY_ENOMEM(w, syscall(SYS_mbind, rg->addr, len,
					      MPOL_DEFAULT, NULL, 0, 0)));
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif

/*
 * An madvise that keeps the data: MADV_COLD, MADV_PAGEOUT (to swap),
 * MADV_WILLNEED or MADV_COLLAPSE, on a subrange.  MADV_COLLAPSE may refuse
 * what it cannot collapse (device-private entries among them): EAGAIN,
 * EINVAL, ENOMEM or EBUSY then count as soft errors.
 */
static int op_madvise(struct worker *w, int r)
{
	struct region *rg = &w->region[r];
	static const int advice[] = {
		MADV_COLD, MADV_PAGEOUT, MADV_WILLNEED, MADV_COLLAPSE,
	};
	unsigned long first, n;
	char *at = subrange(w, rg, &first, &n);
	int a = advice[dm_rand(&w->rng) % 4];

	if (!RETRY_ENOMEM(w, madvise(at, n * PAGE, a)))
		return 0;
	if (a == MADV_COLLAPSE && (errno == EAGAIN || errno == EINVAL ||
				   errno == EBUSY || errno == ENOMEM)) {
		w->soft_errors++;
		return 0;
	}
	return failed(w, a == MADV_COLLAPSE ? "MADV_COLLAPSE" : "madvise", -1);
}

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif

/*
 * mremap the region to the spare place, aligned or a page off (which
 * splits a PMD), and back.  MREMAP_DONTUNMAP leaves each source mapped,
 * empty: no hole opens that another thread's mmap could take meanwhile.
 */
static int op_mremap(struct worker *w, int r)
{
	struct region *rg = &w->region[r];
	const int how = MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP;
	size_t len = rg->npages * PAGE;
	char *to = w->spare + (dm_rand(&w->rng) & 1 ? PAGE : 0);

	if (RETRY_ENOMEM(w, mremap(rg->addr, len, len, how, to) ==
			    MAP_FAILED ? -1 : 0)) {
		/*
		 * EFAULT: the region spans several vmas (a subrange that
		 * munmap_remap mapped again did not merge back): mremap
		 * moves one vma at a time.  The next refresh makes it one.
		 */
		if (errno == EFAULT) {
			w->mremap_skips++;
			return 0;
		}
		return failed(w, "mremap away", -1);
	}
	if (RETRY_ENOMEM(w, mremap(to, len, len, how, rg->addr) ==
			    MAP_FAILED ? -1 : 0))
		return failed(w, "mremap back", -1);
	return 0;
}

/* KSM merging of the region on, or off again. */
static int op_ksm(struct worker *w, int r)
{
	struct region *rg = &w->region[r];
	int a = rg->ksm ? MADV_UNMERGEABLE : MADV_MERGEABLE;

	if (failed(w, "MADV_(UN)MERGEABLE",
		   RETRY_ENOMEM(w, madvise(rg->addr, rg->npages * PAGE, a))))
		return -1;
	rg->ksm = !rg->ksm;
	return 0;
}

/*
 * uffd-wp on a subrange, a migration to the device and back under it,
 * then off: the protection rides on device-private entries.  Nothing
 * writes the region meanwhile (a write would wait for a handler there is
 * none of).
 */
static int op_uffd_wp(struct worker *w, int r)
{
	struct region *rg = &w->region[r];
	struct uffdio_api api = {
		.api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP,
	};
	struct uffdio_register reg = {
		.range = { (uintptr_t)rg->addr, rg->npages * PAGE },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct uffdio_writeprotect wp;
	unsigned long first, n;
	char *at = subrange(w, rg, &first, &n);
	int uffd, ret = -1;

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (uffd < 0)
		return failed(w, "userfaultfd", -1);
	if (failed(w, "UFFDIO_API", ioctl(uffd, UFFDIO_API, &api)) ||
	    failed(w, "UFFDIO_REGISTER",
		   RETRY_ENOMEM(w, ioctl(uffd, UFFDIO_REGISTER, &reg))))
		goto out;
	wp = (struct uffdio_writeprotect){
		.range = { (uintptr_t)at, n * PAGE },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};
	if (failed(w, "UFFDIO_WRITEPROTECT",
		   RETRY_ENOMEM(w, ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))))
		goto out;
	ret = dmirror(w, HMM_DMIRROR_MIGRATE_TO_DEV, rg->addr, rg->npages);
	if (ret >= 0)
		ret = dmirror(w, HMM_DMIRROR_MIGRATE_TO_SYS, rg->addr,
			      rg->npages);
	if (ret < 0)
		goto out;
	wp.mode = 0;
	ret = failed(w, "UFFDIO_WRITEPROTECT off",
		     RETRY_ENOMEM(w, ioctl(uffd, UFFDIO_WRITEPROTECT, &wp)));
	if (!ret)
		ret = failed(w, "UFFDIO_UNREGISTER",
			     RETRY_ENOMEM(w, ioctl(uffd, UFFDIO_UNREGISTER,
						   &reg.range)));
out:
	close(uffd);
	return ret < 0 ? -1 : 0;
}

static int op_live_child(struct worker *w, int r)
{
	struct worker *c;
	int pfd[2];
	pid_t pid;

	if (reap_child(w))
		return -1;
	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK)) {
		w->soft_errors++;
		return 0;
	}
	c = worker_copy(w);
	pid = c ? fork() : -1;
	if (pid < 0) {
		free(c);
		close(pfd[0]);
		close(pfd[1]);
		w->soft_errors++;
		return 0;
	}
	if (!pid) {
		close(pfd[1]);
		_exit(live_child(c, r, pfd[0]));
	}
	free(c);
	close(pfd[0]);
	w->child = pid;
	w->child_pipe = pfd[1];
	w->child_region = r;
	return 0;
}

static unsigned int op_weight(unsigned int op)
{
	return ops[op].need & missing ? 0 : ops[op].weight;
}

static unsigned int pick_op(struct worker *w)
{
	unsigned int total = 0, x, op;

	for (op = 0; op < NR_OPS; op++)
		total += op_weight(op);
	x = dm_rand(&w->rng) % total;
	for (op = 0; x >= op_weight(op); op++)
		x -= op_weight(op);
	return op;
}

static int one_op(struct worker *w)
{
	int r = dm_rand(&w->rng) % nr_regions;
	struct region *rg = &w->region[r];
	unsigned int op = pick_op(w);
	int ret;

	w->op_count[op]++;
	w->first = 0;
	w->n = rg->npages;
	w->op_start = dm_now();
	w->cur_op = op;
	ret = ops[op].run(w, r);
	history_add(rg, op, w->first, w->n);
	if (ret >= 0) {
		/* Every operation ends with a full check, mostly by the device. */
		ret = dm_rand(&w->rng) % 4 ? verify_device(w, r) :
					     verify_cpu(w, r);
		if (ret && w->mismatches)
			history_report(w, rg);
	}
	w->cur_op = -1;
	return ret < 0 ? -1 : 0;
}

static void worker_run(struct worker *w)
{
	size_t res_len;
	void *res;
	int r;

	/* A place of a region's size to mremap one to, a page off too. */
	w->spare = dm_reserve_aligned(2 * THP, &res, &res_len);
	if (!w->spare) {
		snprintf(w->failure, sizeof(w->failure), "no spare range: %s",
			 strerror(errno));
		return;
	}
	for (r = 0; r < nr_regions; r++) {
		struct region *rg = &w->region[r];

		rg->order = mthp ? mthp_orders[(w->id + r) % NR_MTHP_ORDERS] :
				   DM_PMD_ORDER;
		rg->npages = 1UL << rg->order;
		/* The worker's own: a -p worker process allocates it. */
		rg->gen = calloc(rg->npages, sizeof(*rg->gen));
		if (!rg->gen) {
			snprintf(w->failure, sizeof(w->failure), "no memory");
			return;
		}
		/* Injected faults fail an mmap now and then: retried. */
		if (RETRY_ENOMEM(w, (rg->addr = map_region(rg->order)) ? 0 : -1)) {
			snprintf(w->failure, sizeof(w->failure),
				 "mmap failed: %s", strerror(errno));
			return;
		}
		write_pages(w, r, 0, rg->npages);
	}
	while (!*stop && !w->failure[0])
		if (one_op(w) && !w->failure[0])
			snprintf(w->failure, sizeof(w->failure), "operation failed");
	if (!w->failure[0])
		reap_child(w);
	for (r = 0; r < nr_regions; r++) {
		if (!w->failure[0] && verify_cpu(w, r) == 0)
			munmap(w->region[r].addr, w->region[r].npages * PAGE);
		free(w->region[r].gen);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	w->tid = gettid();
	worker_run(w);
	w->done = true;
	return NULL;
}

/*
 * After the workers unmapped their regions, the device holds what it held
 * before the run, and its pools balance.
 */
static int pools_balanced(int fd, const struct dmirror_thp_stats *before,
			  char *why, size_t len)
{
	struct dmirror_thp_stats st;
	int ret = dm_stats(fd, &st);

	if (ret) {
		snprintf(why, len, "HMM_DMIRROR_STATS: %s", strerror(-ret));
		return 0;
	}
	snprintf(why, len,
		 "resident %llu (before %llu), free pages %llu + folios %llu, capacity %llu, evicted %llu",
		 (unsigned long long)st.resident_pages,
		 (unsigned long long)before->resident_pages,
		 (unsigned long long)st.free_pages,
		 (unsigned long long)st.free_folios,
		 (unsigned long long)st.capacity_pages,
		 (unsigned long long)st.evicted_pages);
	return st.resident_pages == before->resident_pages &&
	       dm_pool_balanced(&st);
}

/*
 * What the device did during the run.  With -T, THPs must have moved whole
 * both ways, or the run did not exercise what it is for.
 */
static int print_counters(int fd, const struct dmirror_thp_stats *before,
			  const struct dmirror_thp_order_stats *obefore)
{
	struct dmirror_thp_order_stats os;
	struct dmirror_thp_stats st;
	unsigned int i, o;
	int ret = 0;

	if (dm_stats(fd, &st) || dm_order_stats(fd, &os))
		return -1;
	for (i = 0; mthp && i < NR_MTHP_ORDERS; i++) {
		o = mthp_orders[i];
		printf("# device: %lu kB folios: to_dev %llu, to_sys %llu\n",
		       dm_order_kb(o),
		       (unsigned long long)(os.to_dev[o] - obefore->to_dev[o]),
		       (unsigned long long)(os.to_sys[o] - obefore->to_sys[o]));
		if (need_thp && (os.to_dev[o] == obefore->to_dev[o] ||
				 os.to_sys[o] == obefore->to_sys[o]))
			ret = -1;
	}
#define DELTA(f) ((unsigned long long)(st.f - before->f))
	printf("# device: thp_to_dev %llu, base_to_dev %llu, thp_to_sys %llu, base_to_sys %llu\n",
	       DELTA(thp_to_dev), DELTA(base_to_dev), DELTA(thp_to_sys),
	       DELTA(base_to_sys));
	printf("# device: split_migrate %llu, split_fault %llu, split_callback %llu, alloc_fail_inject %llu, alloc_fail_real %llu, cpu_faults %llu\n",
	       DELTA(split_migrate), DELTA(split_fault), DELTA(split_callback),
	       DELTA(alloc_fail_inject), DELTA(alloc_fail_real),
	       DELTA(cpu_faults));
	if (need_thp && (st.thp_to_dev == before->thp_to_dev ||
			 st.thp_to_sys == before->thp_to_sys))
		return -1;
	return ret;
#undef DELTA
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-t threads] [-s seconds] [-g grace] [-S seed] [-r regions] [-d device] [-T] [-m] [-p] [-P]\n",
		prog);
	exit(2);
}

/* This task is under fault injection (fail_page_alloc, failslab). */
static bool faults_injected(void)
{
	FILE *f = fopen("/proc/self/make-it-fail", "re");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* Why the guest lacks @need, or NULL. */
static const char *lacks(unsigned int need)
{
	struct uffdio_api api = {
		.api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP,
	};
	bool have;
	int uffd;

	switch (need) {
	case NEED_NODE1:
		return access("/sys/devices/system/node/node1", F_OK) ?
		       "one NUMA node" : NULL;
	case NEED_KSM:
		return access("/sys/kernel/mm/ksm/run", F_OK) ? "no KSM" : NULL;
	case NEED_UFFD_WP:
		uffd = syscall(SYS_userfaultfd,
			       O_CLOEXEC | UFFD_USER_MODE_ONLY);
		have = uffd >= 0 && !ioctl(uffd, UFFDIO_API, &api);
		if (uffd >= 0)
			close(uffd);
		return have ? NULL : "no uffd-wp";
	}
	return NULL;
}

/* What the guest lacks: those operations get no weight, and a line. */
static void probe_needs(void)
{
	const char *why;
	unsigned int j;

	for (j = 0; j < NR_OPS; j++) {
		why = ops[j].need ? lacks(ops[j].need) : NULL;
		if (!why)
			continue;
		missing |= ops[j].need;
		printf("# %s: not in this guest (%s)\n", ops[j].name, why);
	}
}

/* The row of @run in ops[], for the summary's lines about one of them. */
static unsigned int op_index(op_fn *run)
{
	unsigned int j = 0;

	while (j < NR_OPS - 1 && ops[j].run != run)
		j++;
	return j;
}

static uint64_t worker_ops(const struct worker *w)
{
	uint64_t n = 0;
	unsigned int j;

	for (j = 0; j < NR_OPS; j++)
		n += w->op_count[j];
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The least a worker must have done: a tenth of the median worker's
 * operations, and at least one.  A worker below it made no progress for
 * most of the run: stuck, or spinning on a failure.
 */
static uint64_t ops_floor(const struct worker *workers, int n)
{
	uint64_t *v = calloc(n, sizeof(*v)), f;
	int i;

	if (!v)
		return 1;
	for (i = 0; i < n; i++)
		v[i] = worker_ops(&workers[i]);
	qsort(v, n, sizeof(*v), cmp_u64);
	f = v[n / 2] / 10;
	free(v);
	return f ? f : 1;
}

/* Print a stuck worker's kernel stack, if the kernel lets us read it. */
static void print_stack(pid_t tid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stack", tid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("#   %s", line);
	fclose(f);
}

/*
 * Wait for the workers to end: at most @grace s after stop.  A worker
 * still in its last operation then is reported with its kernel stack.
 */
static void join_workers(struct worker *workers, int n, int grace)
{
	double end = dm_now() + grace;
	int i;

	for (i = 0; i < n; i++) {
		while (!workers[i].done && dm_now() < end)
			usleep(10000);
		if (!workers[i].done || !workers[i].started)
			continue;
		if (processes)
			waitpid(workers[i].tid, NULL, 0);
		else
			pthread_join(workers[i].thread, NULL);
	}
}

/* -p: the worker as a process; it opens its own file (its own mm). */
static void worker_process(struct worker *w)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	w->tid = getpid();
	w->fd = open(device, O_RDWR);
	w->buf = mmap(NULL, THP, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w->fd < 0 || w->buf == MAP_FAILED)
		snprintf(w->failure, sizeof(w->failure),
			 "could not start: %s", strerror(errno));
	else
		worker_run(w);
	w->done = true;
	_exit(0);
}

/*
 * Open the device, map the bounce buffer and start the thread of @w.  Under
 * fault injection each of them fails now and then (clone() with EAGAIN or
 * ENOMEM, most often): retried for 10 s, then the worker fails with the
 * reason.  A worker that never started must not pass with 0 ops.
 */
static void start_worker(struct worker *w)
{
	double end = dm_now() + 10;
	int err;

	w->cur_op = -1;
	if (processes) {
		pid_t pid;

		while ((pid = fork()) < 0 && (errno == EAGAIN || errno == ENOMEM) &&
		       dm_now() < end)
			w->soft_errors++;
		if (!pid)
			worker_process(w);
		if (pid > 0) {
			w->tid = pid;
			w->started = true;
			return;
		}
		goto fail;
	}
	while ((w->fd = open(device, O_RDWR)) < 0 && errno == ENOMEM &&
	       dm_now() < end)
		w->soft_errors++;
	if (w->fd < 0)
		goto fail;
	while ((w->buf = mmap(NULL, THP, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED &&
	       errno == ENOMEM && dm_now() < end)
		w->soft_errors++;
	if (w->buf == MAP_FAILED)
		goto fail;
	madvise(w->buf, THP, MADV_NOHUGEPAGE);
	while ((err = pthread_create(&w->thread, NULL, worker_main, w)) &&
	       (err == EAGAIN || err == ENOMEM) && dm_now() < end)
		w->soft_errors++;
	if (!err) {
		w->started = true;
		return;
	}
	errno = err;
fail:
	snprintf(w->failure, sizeof(w->failure), "could not start: %s",
		 strerror(errno));
	w->done = true;
}

/* The options; a bad one prints the usage and exits. */
static void parse_args(int argc, char **argv)
{
	int opt;

	seed = time(NULL);
	while ((opt = getopt(argc, argv, "t:s:g:S:r:d:TmpPh")) != -1) {
		switch (opt) {
		case 't':
			nr_threads = atoi(optarg);
			break;
		case 's':
			seconds = atoi(optarg);
			break;
		case 'g':
			grace = atoi(optarg);
			break;
		case 'S':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			nr_regions = atoi(optarg);
			break;
		case 'd':
			device = optarg;
			break;
		case 'T':
			need_thp = 1;
			break;
		case 'm':
			mthp = 1;
			break;
		case 'p':
			processes = 1;
			break;
		case 'P':
			pressure = 1;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (nr_threads < 1 || nr_threads > 64 || seconds < 1 || grace < 1 ||
	    nr_regions < 1 || nr_regions > MAX_REGIONS)
		usage(argv[0]);
}

/*
 * Start the workers, let them run for -s seconds, stop them and wait for
 * them (-g).  They live in a shared mapping, so that -p's worker
 * processes report back through it: NULL if it cannot be had.
 */
static struct worker *run_workers(void)
{
	struct worker *workers;
	int i;

	workers = mmap(NULL, nr_threads * sizeof(*workers) + sizeof(*stop),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (workers == MAP_FAILED)
		return NULL;
	stop = (volatile int *)&workers[nr_threads];
	for (i = 0; i < nr_threads; i++) {
		struct worker *w = &workers[i];

		w->id = i;
		w->rng = seed * 0x9E3779B97F4A7C15ULL + i + 1;
		start_worker(w);
	}
	sleep(seconds);
	*stop = 1;
	join_workers(workers, nr_threads, grace);
	return workers;
}

/* The workers' figures, summed for the report. */
struct totals {
	uint64_t op_count[NR_OPS];
	uint64_t bytes, mismatches, soft, read_skips, reads;
	uint64_t mremap_skips, readback_misses;
};

/*
 * A TAP line per worker: not ok if it is stuck, failed or did too little.
 * Sums their figures into @t; returns the number that failed.
 */
static int report_workers(struct worker *workers, struct totals *t)
{
	uint64_t floor = ops_floor(workers, nr_threads);
	int i, failed = 0;
	unsigned int j;

	for (i = 0; i < nr_threads; i++) {
		struct worker *w = &workers[i];
		uint64_t n = worker_ops(w);
		int op = w->cur_op;

		for (j = 0; j < NR_OPS; j++)
			t->op_count[j] += w->op_count[j];
		t->bytes += w->bytes_verified;
		t->mismatches += w->mismatches;
		t->soft += w->soft_errors;
		t->read_skips += w->read_skips;
		t->reads += w->reads;
		t->mremap_skips += w->mremap_skips;
		t->readback_misses += w->readback_misses;
		printf("# worker %d: %llu ops, %s", i, (unsigned long long)n,
		       w->done ? "ended" : "still running");
		if (op >= 0)
			printf(", in %s for %.1f s", ops[op].name,
			       dm_now() - w->op_start);
		printf(", %llu ENOMEM/EBUSY, %llu device reads not done\n",
		       (unsigned long long)w->soft_errors,
		       (unsigned long long)w->read_skips);
		if (!w->done) {
			failed++;
			printf("# worker %d: its last operation (%s) has not returned\n",
			       i, op >= 0 ? ops[op].name : "setup");
			printf("not ok %d worker %d\n", i + 1, i);
			print_stack(w->tid);
		} else if (w->failure[0]) {
			failed++;
			printf("# worker %d: %s\n", i, w->failure);
			printf("not ok %d worker %d\n", i + 1, i);
		} else if (n < floor) {
			failed++;
			printf("# worker %d: %llu ops, below the floor of %llu (a tenth of the median)\n",
			       i, (unsigned long long)n,
			       (unsigned long long)floor);
			printf("not ok %d worker %d\n", i + 1, i);
		} else {
			printf("# worker %d: %llu ops\n", i, (unsigned long long)n);
			printf("ok %d worker %d # MEASURE %llu MiB\n",
			       i + 1, i,
			       (unsigned long long)(w->bytes_verified >> 20));
		}
		if (w->done && w->fd >= 0)
			close(w->fd);
	}
	return failed;
}

/*
 * The device's two TAP lines: its pools balanced, and (with -T) THPs
 * moved whole both ways.  Returns the number that failed.
 */
static int report_device(int fd, const struct dmirror_thp_stats *before,
			 const struct dmirror_thp_order_stats *obefore)
{
	int ntest = nr_threads + 1, failed = 0;
	char why[256];

	if (pools_balanced(fd, before, why, sizeof(why))) {
		printf("# %s\nok %d pools balanced\n", why, ntest);
	} else {
		failed++;
		printf("# %s\nnot ok %d pools balanced\n", why, ntest);
	}
	ntest++;
	if (print_counters(fd, before, obefore)) {
		failed++;
		printf("not ok %d THPs%s moved whole both ways\n", ntest,
		       mthp ? " of every order" : "");
	} else {
		printf("ok %d THPs%s moved whole both ways%s\n", ntest,
		       mthp ? " of every order" : "",
		       need_thp ? "" : " # SKIP not required (no -T)");
	}
	return failed;
}

/*
 * The last TAP line: a device READ that failed for memory verified
 * nothing.  Allowed under fault injection; for at most a quarter of the
 * reads under memory pressure (-P: measured 5% on a normal kernel and 15%
 * on a debug one, where each retry of hmm_range_fault() is slower); and
 * for at most 1% where other processes (-p, live children) invalidate the
 * range while hmm_range_fault() walks it, until it gives up (EBUSY).
 * Returns 1 if it failed.
 */
static int report_reads(const struct totals *t)
{
	int ntest = nr_threads + 3;
	bool contended = processes ||
			 t->op_count[op_index(op_live_child)];
	uint64_t skips = t->read_skips, reads = t->reads;

	if (skips && !injected && !(pressure && skips * 4 <= reads) &&
	    !(contended && skips * 100 <= reads)) {
		printf("# %llu of %llu device reads failed for memory with no fault injected\n",
		       (unsigned long long)skips, (unsigned long long)reads);
		printf("not ok %d every device read verified or explained\n",
		       ntest);
		return 1;
	}
	printf("# %llu of %llu device reads failed for memory (%s)\n",
	       (unsigned long long)skips, (unsigned long long)reads,
	       injected ? "fault injection" :
	       pressure ? "memory pressure" : "contention");
	printf("ok %d every device read verified or explained\n", ntest);
	return 0;
}

/* The summary: what each operation ran, what was verified, the seed. */
static void report_summary(const struct totals *t)
{
	unsigned int j;

	for (j = 0; j < NR_OPS; j++)
		printf("# %-16s %llu\n", ops[j].name,
		       (unsigned long long)t->op_count[j]);
	printf("# read-backs that met a page off the device (ENOENT): %llu\n",
	       (unsigned long long)t->readback_misses);
	printf("# mremap: %llu of %llu left alone, their region split into vmas\n",
	       (unsigned long long)t->mremap_skips,
	       (unsigned long long)t->op_count[op_index(op_mremap)]);
	printf("# bytes verified %llu (%llu MiB), mismatches %llu, ENOMEM/EBUSY %llu, seed %#llx\n",
	       (unsigned long long)t->bytes,
	       (unsigned long long)(t->bytes >> 20),
	       (unsigned long long)t->mismatches, (unsigned long long)t->soft,
	       (unsigned long long)seed);
}

int main(int argc, char **argv)
{
	struct dmirror_thp_order_stats obefore;
	struct dmirror_thp_stats before;
	struct mthp_policy policy;
	struct totals t = {};
	struct worker *workers;
	int fd, failed;

	injected = faults_injected();
	parse_args(argc, argv);
	printf("TAP version 13\n1..%d\n", nr_threads + 3);
	printf("# hmm-thp-stress: %d %s x %d regions, %d s, seed %#llx, %s%s\n",
	       nr_threads, processes ? "processes" : "threads", nr_regions,
	       seconds, (unsigned long long)seed, device,
	       injected ? ", under fault injection" : "");
	probe_needs();
	fflush(stdout);

	fd = open(device, O_RDWR);
	if (fd < 0 || dm_stats(fd, &before) || dm_order_stats(fd, &obefore)) {
		printf("Bail out! %s: %s\n", device, strerror(errno));
		return 1;
	}
	if (mthp && mthp_policy_set(&policy))
		return 1;
	workers = run_workers();
	if (!workers)
		return 1;
	failed = report_workers(workers, &t);
	failed += report_device(fd, &before, &obefore);
	if (mthp && RETRY_SYSFS(mthp_policy_restore(&policy)))
		printf("# could not restore the mTHP sizes' policy\n");
	failed += report_reads(&t);
	close(fd);
	report_summary(&t);
	fflush(stdout);
	/* A worker stuck in the kernel cannot be joined: leave without it. */
	_exit(failed ? 1 : 0);
}
