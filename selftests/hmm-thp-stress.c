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
 * Output is TAP: one test line per worker and a summary with the
 * operation counts, the bytes verified and any mismatch.
 *
 * hmm-thp-stress [-t threads] [-s seconds] [-S seed] [-r regions] [-d dev] [-T]
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
 * inside an operation 30 s after the end (its kernel stack is printed), a
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
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dmirror_thp_helpers.h"

#define PAGE		DM_PAGE_SIZE
#define THP		DM_THP_SIZE
#define NPAGES		DM_THP_PAGES
#define MAX_REGIONS	16

enum op {
	OP_TO_DEV, OP_READ_FAULT, OP_WRITE_FAULT, OP_TO_SYS, OP_DEV_WRITE,
	OP_MUNMAP_REMAP, OP_MPROTECT, OP_DONTNEED, OP_FORK, OP_FAIL_ALLOC,
	OP_REFRESH, OP_NR,
};

static const char *const op_names[OP_NR] = {
	"migrate_to_dev", "read_fault", "write_fault", "migrate_to_sys",
	"device_write", "munmap_remap", "mprotect", "dontneed", "fork",
	"fail_alloc", "refresh",
};

/*
 * How often each operation is picked.  The ones that keep THPs whole
 * (migrations, refresh) outweigh the ones that split them, so that most
 * migrations see a PMD-mapped folio rather than the debris of a split.
 */
static const unsigned int op_weight[OP_NR] = {
	[OP_TO_DEV] = 4, [OP_READ_FAULT] = 2, [OP_WRITE_FAULT] = 1,
	[OP_TO_SYS] = 2, [OP_DEV_WRITE] = 2, [OP_MUNMAP_REMAP] = 1,
	[OP_MPROTECT] = 1, [OP_DONTNEED] = 1, [OP_FORK] = 1,
	[OP_FAIL_ALLOC] = 1, [OP_REFRESH] = 2,
};

#define HISTORY		8

struct region {
	char *addr;
	unsigned int order;	/* folio order its faults allocate */
	unsigned long npages;	/* 1 << order: one folio per region */
	uint32_t gen[NPAGES];	/* 0: the page reads as zeroes */
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
	uint64_t ops[OP_NR];
	uint64_t soft_errors;	/* ENOMEM / EBUSY: allowed under pressure */
	uint64_t read_skips;	/* device READs that failed for memory */
	uint64_t bytes_verified;
	uint64_t mismatches;
	unsigned long first, n;	/* the range of the current operation */
	/* What it is doing, for the report at the end (-1: between ops). */
	volatile int cur_op;
	volatile double op_start;
	pid_t tid;
	bool started;		/* its thread was created */
	volatile bool done;
	char failure[512];
};

static int nr_threads = 4, nr_regions = 2, seconds = 60, need_thp, mthp;
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
static volatile int stop;

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

static uint64_t rnd(struct worker *w)
{
	/* xorshift64*: cheap, and reproducible from the seed. */
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 0x2545F4914F6CDD1DULL;
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
	struct hmm_dmirror_cmd cmd = {
		.addr = (uintptr_t)addr,
		.ptr = (uintptr_t)w->buf,
		.npages = npages,
	};

	while (ioctl(w->fd, req, &cmd) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == ENOMEM || errno == EBUSY) {
			w->soft_errors++;
			return 1;
		}
		snprintf(w->failure, sizeof(w->failure),
			 "ioctl %#lx at %p x %lu: %s", req, addr, npages,
			 strerror(errno));
		return -1;
	}
	return 0;
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

	*first = rnd(w) % rg->npages;
	*n = 1 + rnd(w) % (rg->npages - *first);
	w->first = *first;
	w->n = *n;
	return base + *first * PAGE;
}

static void history_add(struct region *rg, enum op op, unsigned long first,
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
				op_names[rg->hist[k].op], rg->hist[k].first,
				rg->hist[k].n);
	}
}

static int do_fork(struct worker *w, int r)
{
	unsigned long first, n;
	pid_t pid;
	int status;

	subrange(w, &w->region[r], &first, &n);
	pid = fork();
	if (pid < 0) {
		w->soft_errors++;
		return 0;
	}
	if (!pid) {
		/* Holding the device open, it must not outlive a killed parent. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);
		/* The child sees the parent's data, then writes its own. */
		if (verify_cpu(w, r))
			_exit(1);
		write_pages(w, r, first, n);
		_exit(verify_cpu(w, r) ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		snprintf(w->failure, sizeof(w->failure),
			 "fork child of region %d failed (status %#x)", r, status);
		w->mismatches++;
		return -1;
	}
	return 0;
}

static enum op pick_op(struct worker *w)
{
	unsigned int total = 0, x;
	int op;

	for (op = 0; op < OP_NR; op++)
		total += op_weight[op];
	x = rnd(w) % total;
	for (op = 0; x >= op_weight[op]; op++)
		x -= op_weight[op];
	return op;
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

/* MADV_DONTNEED, or munmap and map again, a subrange: it reads as zero. */
static int drop_pages(struct worker *w, struct region *rg, enum op op)
{
	unsigned long first, n;
	char *at = subrange(w, rg, &first, &n);
	size_t len = n * PAGE;

	if (op == OP_DONTNEED) {
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

static int one_op(struct worker *w)
{
	int r = rnd(w) % nr_regions;
	struct region *rg = &w->region[r];
	enum op op = pick_op(w);
	unsigned long first, n, p;
	uint64_t flags;
	int ret = 0;
	char *at;

	w->ops[op]++;
	w->first = 0;
	w->n = rg->npages;
	w->op_start = dm_now();
	w->cur_op = op;
	switch (op) {
	case OP_TO_DEV:
		ret = dmirror(w, HMM_DMIRROR_MIGRATE_TO_DEV, rg->addr,
			      rg->npages);
		break;
	case OP_READ_FAULT:
		subrange(w, rg, &first, &n);
		for (p = first; p < first + n && !ret; p++)
			ret = check_page(w, (uint64_t *)(rg->addr + p * PAGE),
					 r, p, "read fault");
		break;
	case OP_WRITE_FAULT:
		subrange(w, rg, &first, &n);
		write_pages(w, r, first, n);
		break;
	case OP_TO_SYS:
		ret = dmirror(w, HMM_DMIRROR_MIGRATE_TO_SYS, rg->addr,
			      rg->npages);
		break;
	case OP_DEV_WRITE:
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
			 * A write that failed for memory may have written a
			 * prefix: write the same next generation from the CPU.
			 */
			write_pages(w, r, first, n);
			ret = 0;
		}
		break;
	case OP_MUNMAP_REMAP:
	case OP_DONTNEED:
		if (drop_pages(w, rg, op))
			return -1;
		break;
	case OP_MPROTECT:
		at = subrange(w, rg, &first, &n);
		if (failed(w, "mprotect(PROT_READ)",
			   RETRY_ENOMEM(w, mprotect(at, n * PAGE, PROT_READ))))
			return -1;
		for (p = first; p < first + n && !ret; p++)
			ret = check_page(w, (uint64_t *)(rg->addr + p * PAGE),
					 r, p, "read-only read");
		if (failed(w, "mprotect(PROT_READ | PROT_WRITE)",
			   RETRY_ENOMEM(w, mprotect(at, n * PAGE,
						    PROT_READ | PROT_WRITE))))
			return -1;
		break;
	case OP_FORK:
		ret = do_fork(w, r);
		break;
	case OP_REFRESH:
		/* Partial unmaps leave base pages: start over with a folio. */
		if (failed(w, "refresh",
			   RETRY_ENOMEM(w, remap(rg->addr, rg->npages * PAGE))))
			return -1;
		madvise(rg->addr, rg->npages * PAGE, MADV_HUGEPAGE);
		memset(rg->gen, 0, sizeof(rg->gen));
		/*
		 * Half the time leave it empty: migrating an empty PMD gives
		 * a device THP even when the system has none to give, and
		 * bringing that back is where a failing system-side THP
		 * allocation falls back to a split.
		 */
		if (rnd(w) & 1)
			write_pages(w, r, 0, rg->npages);
		break;
	case OP_FAIL_ALLOC:
		/* Arm or disarm the device's one-shot large-allocation failure. */
		flags = rnd(w) & 1 ? HMM_DMIRROR_FLAG_FAIL_ALLOC : 0;
		ret = dmirror(w, HMM_DMIRROR_FLAGS, NULL, flags);
		break;
	case OP_NR:
		break;
	}
	history_add(rg, op, w->first, w->n);
	if (ret >= 0) {
		/* Every operation ends with a full check, mostly by the device. */
		ret = rnd(w) % 4 ? verify_device(w, r) : verify_cpu(w, r);
		if (ret && w->mismatches)
			history_report(w, rg);
	}
	w->cur_op = -1;
	return ret < 0 ? -1 : 0;
}

static void worker_run(struct worker *w)
{
	int r;

	for (r = 0; r < nr_regions; r++) {
		struct region *rg = &w->region[r];

		rg->order = mthp ? mthp_orders[(w->id + r) % NR_MTHP_ORDERS] :
				   DM_PMD_ORDER;
		rg->npages = 1UL << rg->order;
		/* Injected faults fail an mmap now and then: retried. */
		if (RETRY_ENOMEM(w, (rg->addr = map_region(rg->order)) ? 0 : -1)) {
			snprintf(w->failure, sizeof(w->failure),
				 "mmap failed: %s", strerror(errno));
			return;
		}
		write_pages(w, r, 0, rg->npages);
	}
	while (!stop && !w->failure[0])
		if (one_op(w) && !w->failure[0])
			snprintf(w->failure, sizeof(w->failure), "operation failed");
	for (r = 0; r < nr_regions; r++)
		if (!w->failure[0] && verify_cpu(w, r) == 0)
			munmap(w->region[r].addr, w->region[r].npages * PAGE);
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
		"usage: %s [-t threads] [-s seconds] [-S seed] [-r regions] [-d device] [-T] [-m]\n",
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

static uint64_t worker_ops(const struct worker *w)
{
	uint64_t n = 0;
	int j;

	for (j = 0; j < OP_NR; j++)
		n += w->ops[j];
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

	snprintf(path, sizeof(path), "/proc/self/task/%d/stack", tid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("#   %s", line);
	fclose(f);
}

/* Wait for the workers to end: at most 30 s after stop. */
static void join_workers(struct worker *workers, int n)
{
	double end = dm_now() + 30;
	int i;

	for (i = 0; i < n; i++) {
		while (!workers[i].done && dm_now() < end)
			usleep(10000);
		if (workers[i].done && workers[i].started)
			pthread_join(workers[i].thread, NULL);
	}
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

int main(int argc, char **argv)
{
	uint64_t total[OP_NR] = {}, bytes = 0, bad = 0, soft = 0, skips = 0;
	struct dmirror_thp_order_stats obefore;
	struct dmirror_thp_stats before;
	struct mthp_policy policy;
	struct worker *workers;
	int opt, i, j, fd, failed = 0, ntest;
	uint64_t floor;
	bool injected = faults_injected();
	char why[256];

	seed = time(NULL);
	while ((opt = getopt(argc, argv, "t:s:S:r:d:Tmh")) != -1) {
		switch (opt) {
		case 't':
			nr_threads = atoi(optarg);
			break;
		case 's':
			seconds = atoi(optarg);
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
		default:
			usage(argv[0]);
		}
	}
	if (nr_threads < 1 || nr_threads > 64 || seconds < 1 ||
	    nr_regions < 1 || nr_regions > MAX_REGIONS)
		usage(argv[0]);

	printf("TAP version 13\n1..%d\n", nr_threads + 3);
	printf("# hmm-thp-stress: %d threads x %d regions, %d s, seed %#llx, %s%s\n",
	       nr_threads, nr_regions, seconds, (unsigned long long)seed, device,
	       injected ? ", under fault injection" : "");
	fflush(stdout);

	fd = open(device, O_RDWR);
	if (fd < 0 || dm_stats(fd, &before) || dm_order_stats(fd, &obefore)) {
		printf("Bail out! %s: %s\n", device, strerror(errno));
		return 1;
	}
	/*
	 * -m: the mTHP sizes of the regions are enabled, every other size
	 * below the PMD disabled; a region's vma is the size of its folio.
	 */
	if (mthp) {
		unsigned int o;

		if (RETRY_SYSFS(mthp_policy_save(&policy))) {
			printf("Bail out! -m: no mTHP sizes in sysfs\n");
			return 1;
		}
		for (o = DM_MTHP_MIN_ORDER; o < DM_PMD_ORDER; o++)
			if (RETRY_SYSFS(mthp_set_enabled(dm_order_kb(o),
					mthp_order_used(o) ? "always" : "never"))) {
				printf("Bail out! -m: cannot set the mTHP policy\n");
				return 1;
			}
	}
	workers = calloc(nr_threads, sizeof(*workers));
	if (!workers)
		return 1;
	for (i = 0; i < nr_threads; i++) {
		struct worker *w = &workers[i];

		w->id = i;
		w->rng = seed * 0x9E3779B97F4A7C15ULL + i + 1;
		start_worker(w);
	}
	sleep(seconds);
	stop = 1;
	join_workers(workers, nr_threads);
	floor = ops_floor(workers, nr_threads);
	for (i = 0; i < nr_threads; i++) {
		struct worker *w = &workers[i];
		uint64_t n = worker_ops(w);
		int op = w->cur_op;

		for (j = 0; j < OP_NR; j++)
			total[j] += w->ops[j];
		bytes += w->bytes_verified;
		bad += w->mismatches;
		soft += w->soft_errors;
		skips += w->read_skips;
		printf("# worker %d: %llu ops, %s", i, (unsigned long long)n,
		       w->done ? "ended" : "still running");
		if (op >= 0)
			printf(", in %s for %.1f s", op_names[op],
			       dm_now() - w->op_start);
		printf(", %llu ENOMEM/EBUSY, %llu device reads not done\n",
		       (unsigned long long)w->soft_errors,
		       (unsigned long long)w->read_skips);
		if (!w->done) {
			failed++;
			printf("# worker %d: its last operation (%s) has not returned\n",
			       i, op >= 0 ? op_names[op] : "setup");
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
	ntest = nr_threads + 1;
	if (pools_balanced(fd, &before, why, sizeof(why))) {
		printf("# %s\nok %d pools balanced\n", why, ntest);
	} else {
		failed++;
		printf("# %s\nnot ok %d pools balanced\n", why, ntest);
	}
	ntest++;
	if (print_counters(fd, &before, &obefore)) {
		failed++;
		printf("not ok %d THPs%s moved whole both ways\n", ntest,
		       mthp ? " of every order" : "");
	} else {
		printf("ok %d THPs%s moved whole both ways%s\n", ntest,
		       mthp ? " of every order" : "",
		       need_thp ? "" : " # SKIP not required (no -T)");
	}
	if (mthp && RETRY_SYSFS(mthp_policy_restore(&policy)))
		printf("# could not restore the mTHP sizes' policy\n");
	ntest++;
	/* A device READ that failed for memory verified nothing. */
	if (skips && !injected) {
		failed++;
		printf("# %llu device reads failed for memory with no fault injected\n",
		       (unsigned long long)skips);
		printf("not ok %d every device read verified or explained\n",
		       ntest);
	} else {
		printf("# %llu device reads failed under fault injection\n",
		       (unsigned long long)skips);
		printf("ok %d every device read verified or explained\n", ntest);
	}
	close(fd);
	for (j = 0; j < OP_NR; j++)
		printf("# %-16s %llu\n", op_names[j], (unsigned long long)total[j]);
	printf("# bytes verified %llu (%llu MiB), mismatches %llu, ENOMEM/EBUSY %llu, seed %#llx\n",
	       (unsigned long long)bytes, (unsigned long long)(bytes >> 20),
	       (unsigned long long)bad, (unsigned long long)soft,
	       (unsigned long long)seed);
	fflush(stdout);
	/* A worker stuck in the kernel cannot be joined: leave without it. */
	_exit(failed ? 1 : 0);
}
