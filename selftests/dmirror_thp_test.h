/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dmirror-thp selftests: the fixture every test binary shares.  Include it
 * after kselftest_harness.h.
 *
 * Setup opens both devices, clears the flags, resets the event counters and
 * records the pool gauges.  Teardown unmaps everything the test allocated
 * through dm_ctx_buf()/dm_ctx_track() and then asserts, for each device,
 * that the pools balance and that resident_pages is back where it was:
 * a test that leaks device memory fails in its own teardown.
 */
#ifndef DMIRROR_THP_TEST_H
#define DMIRROR_THP_TEST_H

#include <errno.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dmirror_thp_helpers.h"

#define DM_MAX_BUFS	16

struct dm_ctx {
	int fd[DM_NDEVICES];
	struct dmirror_thp_stats base[DM_NDEVICES];
	struct dm_buf bufs[DM_MAX_BUFS];
	int nbufs;
	void *extra[DM_MAX_BUFS];
	size_t extra_len[DM_MAX_BUFS];
	int nextra;
};

static inline void dm_ctx_setup(struct __test_metadata *_metadata,
				struct dm_ctx *c)
{
	int d;

	memset(c, 0, sizeof(*c));
	c->fd[0] = c->fd[1] = -1;
	if (!dm_devices_present())
		SKIP(return, "no /dev/hmm_dmirror0 and 1: module " DM_MODULE_NAME " not loaded");
	for (d = 0; d < DM_NDEVICES; d++) {
		c->fd[d] = dm_open(d);
		ASSERT_LE(0, c->fd[d]);
		ASSERT_EQ(0, dm_set_flags(c->fd[d], 0));
		ASSERT_EQ(0, dm_stats_reset(c->fd[d]));
		ASSERT_EQ(0, dm_stats(c->fd[d], &c->base[d]));
		EXPECT_TRUE(dm_pool_balanced(&c->base[d]))
			dm_stats_print("setup", &c->base[d]);
	}
}

/* Re-read the baseline, e.g. after the module was reloaded. */
static inline void dm_ctx_rebase(struct __test_metadata *_metadata,
				 struct dm_ctx *c)
{
	int d;

	for (d = 0; d < DM_NDEVICES; d++)
		ASSERT_EQ(0, dm_stats(c->fd[d], &c->base[d]));
}

static inline void dm_ctx_unmap_all(struct dm_ctx *c)
{
	int i;

	for (i = 0; i < c->nbufs; i++)
		dm_buf_free(&c->bufs[i]);
	c->nbufs = 0;
	for (i = 0; i < c->nextra; i++)
		munmap(c->extra[i], c->extra_len[i]);
	c->nextra = 0;
}

/* The leak check: pools balance and nothing more is resident than before. */
static inline void dm_ctx_check_idle(struct __test_metadata *_metadata,
				     struct dm_ctx *c, const char *when)
{
	struct dmirror_thp_stats st;
	int d;

	for (d = 0; d < DM_NDEVICES; d++) {
		if (c->fd[d] < 0)
			continue;
		ASSERT_EQ(0, dm_stats(c->fd[d], &st));
		EXPECT_TRUE(dm_pool_balanced(&st)) {
			TH_LOG("%s: device %d pools unbalanced", when, d);
			dm_stats_print(when, &st);
		}
		EXPECT_EQ(c->base[d].resident_pages, st.resident_pages) {
			TH_LOG("%s: device %d leaked resident pages", when, d);
			dm_stats_print(when, &st);
		}
	}
}

static inline void dm_ctx_teardown(struct __test_metadata *_metadata,
				   struct dm_ctx *c)
{
	int d;

	dm_ctx_unmap_all(c);
	if (!dm_ensure_module()) {
		TH_LOG("the module is not loaded and could not be reloaded");
		_metadata->exit_code = KSFT_FAIL;
		return;
	}
	for (d = 0; d < DM_NDEVICES; d++)
		if (c->fd[d] >= 0)
			dm_set_flags(c->fd[d], 0);
	dm_ctx_check_idle(_metadata, c, "teardown");
	for (d = 0; d < DM_NDEVICES; d++)
		if (c->fd[d] >= 0)
			close(c->fd[d]);
}

static inline struct dm_buf *dm_ctx_buf(struct __test_metadata *_metadata,
					struct dm_ctx *c, size_t size, int prot,
					enum dm_thp_mode thp)
{
	struct dm_buf *b;

	if (c->nbufs >= DM_MAX_BUFS)
		return NULL;
	b = &c->bufs[c->nbufs];
	if (dm_buf_alloc(b, size, prot, thp))
		return NULL;
	c->nbufs++;
	return b;
}

static inline void *dm_ctx_track(struct dm_ctx *c, void *p, size_t len)
{
	if (p && p != MAP_FAILED && c->nextra < DM_MAX_BUFS) {
		c->extra[c->nextra] = p;
		c->extra_len[c->nextra++] = len;
	}
	return p;
}

/*
 * Run fn(arg) in a child process, with a deadline.  Returns its exit
 * status, -EINTR if it died of a signal, or -ETIMEDOUT if it did not end
 * in time (it is then sent SIGKILL and left behind if it cannot die).
 */
static inline int dm_run_child(int (*fn)(void *), void *arg, int timeout_s)
{
	double end = dm_now() + timeout_s;
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid)
		_exit(fn(arg));
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -EINTR;
		if (r < 0)
			return -errno;
		if (dm_now() > end)
			break;
		usleep(20000);
	}
	kill(pid, SIGKILL);
	for (end = dm_now() + 2; dm_now() < end; usleep(20000))
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
	return -ETIMEDOUT;
}

#define DM_FIXTURE(name)						\
	FIXTURE(name) { struct dm_ctx c; };				\
	FIXTURE_SETUP(name) { dm_ctx_setup(_metadata, &self->c); }	\
	FIXTURE_TEARDOWN(name) { dm_ctx_teardown(_metadata, &self->c); }

#define DM_STATS(c, dev, st) ASSERT_EQ(0, dm_stats((c)->fd[dev], &(st)))

/* Allocate a tracked buffer or fail the test. */
#define DM_BUF(c, size, prot, thp) ({					\
	struct dm_buf *__b = dm_ctx_buf(_metadata, (c), (size), (prot), (thp)); \
	ASSERT_NE(NULL, __b);						\
	__b; })

/*
 * THP availability in the guest is not guaranteed: a test that needs the
 * source to be a THP skips (with the reason) when it is not, rather than
 * fail or, worse, pass on 4K pages.
 */
#define REQUIRE_SYS_THP(addr, n) do {					\
	if (!thp_is_enabled())						\
		SKIP(return, "THP disabled (transparent_hugepage/enabled is never)"); \
	if (!dm_is_sys_thp((addr), (n)))					\
		SKIP(return, "source is not %zu system THP(s): AnonHugePages %ld kB", \
		     (size_t)(n), smaps_anon_huge_kb(addr));		\
} while (0)

/* A real PMD-order allocation failure is the system's, not the test's. */
#define SKIP_IF_REAL_ALLOC_FAIL(st) do {				\
	if ((st).alloc_fail_real)					\
		SKIP(return, "%llu PMD-order allocation(s) really failed: cannot check THP fault-back", \
		     (unsigned long long)(st).alloc_fail_real);		\
} while (0)

/* pagemap proofs; DMIRROR_THP_NO_PAGEMAP=1 turns them into no-ops */
#define ASSERT_PM_DEV(addr, npages, want) do {				\
	long __n = pm_count_dev((addr), (npages));			\
	if (__n != -ENOSYS)						\
		ASSERT_EQ((long)(want), __n);				\
} while (0)
#define ASSERT_PM_PRESENT(addr, npages, want) do {			\
	long __n = pm_count_present((addr), (npages));			\
	if (__n != -ENOSYS)						\
		ASSERT_EQ((long)(want), __n);				\
} while (0)

/* the same over a range that may hold device-private PMDs (opt-in) */
#define ASSERT_PM_DEV_PMD(addr, npages, want) do {			\
	if (pm_pmd_enabled())						\
		ASSERT_PM_DEV((addr), (npages), (want));		\
} while (0)

/*
 * The full proof that nthp THPs at addr sit on device dev as device THPs:
 * every page a local device page inside a PMD (SNAPSHOT), none of them in
 * system memory (pagemap, unless DMIRROR_THP_PAGEMAP_PMD=0), and the caller
 * checks thp_to_dev.
 */
#define ASSERT_DEV_THP(c, dev, addr, nthp) do {				\
	ASSERT_EQ((long)((nthp) * DM_THP_PAGES),			\
		  dm_snap_local_pmd((c)->fd[dev], (addr), (nthp) * DM_THP_PAGES)); \
	ASSERT_PM_DEV_PMD((addr), (nthp) * DM_THP_PAGES, (nthp) * DM_THP_PAGES); \
} while (0)

/* Base device pages: local, and not one of them in a PMD. */
#define ASSERT_DEV_BASE(c, dev, addr, npages) do {			\
	ASSERT_EQ((long)(npages), dm_snap_local((c)->fd[dev], (addr), (npages))); \
	ASSERT_EQ(0, dm_snap_local_pmd((c)->fd[dev], (addr), (npages))); \
	ASSERT_PM_DEV((addr), (npages), (npages));			\
} while (0)

/* Nothing of the range is on device dev any more, everything present. */
#define ASSERT_ON_SYS(c, dev, addr, npages) do {			\
	ASSERT_EQ(0, dm_snap_local((c)->fd[dev], (addr), (npages)));	\
	ASSERT_PM_PRESENT((addr), (npages), (npages));			\
} while (0)

/*
 * Where the CPU maps a naturally aligned block of PTEs of one folio as one
 * TLB entry (arm64's contpte: 16 PTEs of 4 kB), every page of the @whole
 * PTE-mapped folios of @nr pages in [addr, addr + npages pages) is so
 * mapped (CPU_MAP), if @nr is at least a block and the folios start at
 * @addr, aligned (mremap may move them to an unaligned address); no other
 * page of the range is.  Elsewhere no page is.  An EXPECT: the test's
 * other checks still run where the mapping differs.
 */
#define EXPECT_CONT(c, dev, addr, npages, nr, whole) do {		\
	size_t __cont = dm_cont_ptes();					\
	bool __on = __cont && (nr) >= __cont &&				\
		    !((uintptr_t)(addr) % (__cont * DM_PAGE_SIZE));	\
									\
	EXPECT_EQ(__on ? (long)((whole) * (nr)) : 0,			\
		  dm_cpu_cont((c)->fd[dev], (addr), (npages)));		\
} while (0)

/*
 * /proc/vmstat's THP split counters: the kernel's own witness that a move
 * was whole (neither moved) or that a split was forced (one of them did).
 */
struct dm_splits {
	long pmd, page;
};

#define DM_SPLITS() ({							\
	struct dm_splits __s = { vmstat_get("thp_split_pmd"),		\
				 vmstat_get("thp_split_page") };		\
	ASSERT_LE(0, __s.pmd) TH_LOG("no thp_* events in /proc/vmstat");	\
	__s; })

#define ASSERT_NO_SPLIT(s0) do {					\
	ASSERT_EQ((s0).pmd, vmstat_get("thp_split_pmd"));		\
	ASSERT_EQ((s0).page, vmstat_get("thp_split_page"));		\
} while (0)

#define ASSERT_SPLIT(s0)						\
	ASSERT_LT((s0).pmd + (s0).page,					\
		  vmstat_get("thp_split_pmd") + vmstat_get("thp_split_page"))

#define ASSERT_DATA(p, size, seed) ASSERT_EQ(-1, dm_verify((p), (size), (seed)))
#define ASSERT_ZERO(p, size) ASSERT_EQ(-1, dm_verify_zero((p), (size)))

/*
 * Reset the counters of device dev, migrate all of b to it and prove that
 * it moved as THPs (thp: and /proc/vmstat saw no split) or as base pages;
 * the counters are reset again afterwards, so what the test asserts next
 * is about its next step only.
 */
#define DM_MIGRATE_PROVE(c, dev, b, thp) do {				\
	struct dmirror_thp_stats __st;					\
	struct hmm_dmirror_cmd __cmd;					\
	size_t __np = dm_npages((b)->size);				\
	struct dm_splits __s0 = DM_SPLITS();				\
	ASSERT_EQ(0, dm_stats_reset((c)->fd[dev]));			\
	ASSERT_EQ(0, dm_to_dev((c)->fd[dev], (b)->ptr, __np, (b)->mirror, &__cmd)); \
	ASSERT_EQ(0, dm_stats((c)->fd[dev], &__st));			\
	if (thp) {							\
		ASSERT_EQ(__np / DM_THP_PAGES, __st.thp_to_dev);	\
		ASSERT_EQ(0, __st.base_to_dev);				\
		ASSERT_DEV_THP(c, dev, (b)->ptr, __np / DM_THP_PAGES);	\
		ASSERT_NO_SPLIT(__s0);					\
	} else {							\
		ASSERT_EQ(0, __st.thp_to_dev);				\
		ASSERT_EQ(__np, __st.base_to_dev);			\
		ASSERT_DEV_BASE(c, dev, (b)->ptr, __np);		\
	}								\
	ASSERT_EQ(__np, __st.resident_pages - (c)->base[dev].resident_pages); \
	ASSERT_EQ(0, dm_stats_reset((c)->fd[dev]));			\
} while (0)

/* A filled buffer that is (thp) or is not (!thp) made of system THPs. */
#define DM_FILLED_BUF(c, size, thp, seed) ({				\
	struct dm_buf *__fb = DM_BUF((c), (size), PROT_READ | PROT_WRITE, \
				     (thp) ? DM_THP_ON : DM_THP_OFF);	\
	dm_fill(__fb->ptr, (size), (seed));				\
	if (thp)							\
		REQUIRE_SYS_THP(__fb->ptr, (size) / DM_THP_SIZE);	\
	else								\
		ASSERT_EQ(0, smaps_anon_huge_kb(__fb->ptr));		\
	__fb; })

/* ---- device folios of one order ---- */

/*
 * The fixture of a test over folio orders: dm_ctx, and the THP sizes of the
 * guest, where only the order's size may be allocated by a fault (saved,
 * and restored by the teardown).
 */
struct dm_folio_ctx {
	struct dm_ctx c;
	unsigned int order;
	size_t nr;		/* pages per folio */
	size_t fsize;		/* bytes per folio */
};

static inline void dm_folio_ctx_setup(struct __test_metadata *_metadata,
				      struct dm_folio_ctx *f,
				      unsigned int order)
{
	f->order = order;
	f->nr = 1UL << order;
	f->fsize = f->nr * DM_PAGE_SIZE;
	dm_ctx_setup(_metadata, &f->c);
	if (!thp_is_enabled())
		SKIP(return, "THP disabled (transparent_hugepage/enabled is never)");
	if (!(thp_supported_orders() & (1UL << order)))
		SKIP(return, "no %lu kB THP size in this kernel", dm_order_kb(order));
	dm_thp_only(order, THP_ALWAYS);
}

/*
 * The sizes first: an ASSERT in dm_ctx_teardown() ends the teardown, and
 * a policy left behind would fail every later test of the guest.
 */
static inline void dm_folio_ctx_teardown(struct __test_metadata *_metadata,
					 struct dm_folio_ctx *f)
{
	thp_restore_settings();
	dm_ctx_teardown(_metadata, &f->c);
}

/*
 * The fixture of a table over folio orders: its rows are the orders 2, 4
 * and 8 (mTHPs that PTEs map) and the PMD's (order 0 stands for it: only
 * the running kernel knows it); its columns are the TEST_Fs.
 */
#define DM_FOLIO_FIXTURE(name)						\
	FIXTURE(name) { struct dm_folio_ctx f; };			\
	FIXTURE_VARIANT(name) { unsigned int order; };			\
	FIXTURE_VARIANT_ADD(name, order2) { .order = 2 };		\
	FIXTURE_VARIANT_ADD(name, order4) { .order = 4 };		\
	FIXTURE_VARIANT_ADD(name, order8) { .order = 8 };		\
	FIXTURE_VARIANT_ADD(name, pmd) { .order = 0 };			\
	FIXTURE_SETUP(name)						\
	{								\
		dm_folio_ctx_setup(_metadata, &self->f, variant->order ? \
				   variant->order : DM_PMD_ORDER);	\
	}								\
	FIXTURE_TEARDOWN(name)						\
	{								\
		dm_folio_ctx_teardown(_metadata, &self->f);		\
	}

/* What the kernel counted for a size, and its splits. */
struct dm_size_counts {
	long fault_alloc, split, split_pmd, split_page;
};

static inline struct dm_size_counts dm_size_count(unsigned int order)
{
	struct dm_size_counts n = {
		mthp_stat(order, "anon_fault_alloc"),
		mthp_stat(order, "split"),
		vmstat_get("thp_split_pmd"),
		vmstat_get("thp_split_page"),
	};

	return n;
}

/*
 * A tracked buffer of @size, filled with @seed, made of system folios of the
 * fixture's order: the faults that filled it allocated one folio of the
 * order per folio-sized part (anon_fault_alloc), and the page tables map
 * them whole (pagemap and kpageflags).
 */
static inline struct dm_buf *dm_folio_buf(struct __test_metadata *_metadata,
					  struct dm_folio_ctx *f, size_t size,
					  uint32_t seed)
{
	size_t np = dm_npages(size), nf = np / f->nr;
	struct dm_size_counts n0;
	struct dm_buf *b;
	long alloc, whole;

	b = dm_ctx_buf(_metadata, &f->c, size, PROT_READ | PROT_WRITE,
		       DM_THP_NONE);
	if (!b)
		return NULL;
	n0 = dm_size_count(f->order);
	dm_fill(b->ptr, size, seed);
	alloc = dm_size_count(f->order).fault_alloc - n0.fault_alloc;
	whole = pm_count_folios(b->ptr, np, f->nr);
	if (alloc != (long)nf || whole != (long)nf) {
		TH_LOG("%lu kB folios: %ld allocated, %ld mapped whole, of %zu",
		       dm_order_kb(f->order), alloc, whole, nf);
		return NULL;
	}
	return b;
}

/*
 * Migrate all of @b to device 0 and prove it: folios of the order whole,
 * but @nsplit of them split by an injected allocation failure; a PMD-sized
 * one mapped by a device-private PMD (SNAPSHOT).  The counters are reset
 * afterwards.
 */
static inline void dm_folio_to_dev(struct __test_metadata *_metadata,
				   struct dm_folio_ctx *f, struct dm_buf *b,
				   size_t nsplit)
{
	size_t np = dm_npages(b->size), nf = np / f->nr;
	struct dm_size_counts n0 = dm_size_count(f->order);
	bool pmd = f->order == DM_PMD_ORDER;
	struct dmirror_thp_order_stats os;
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	int fd = f->c.fd[0];

	ASSERT_EQ(0, dm_stats_reset(fd));
	ASSERT_EQ(0, dm_to_dev(fd, b->ptr, np, b->mirror, &cmd));
	ASSERT_EQ(np, cmd.cpages);
	ASSERT_EQ(0, dm_order_stats(fd, &os));
	ASSERT_EQ(0, dm_stats(fd, &st));
	ASSERT_EQ(nf - nsplit, os.to_dev[f->order]);
	ASSERT_EQ(nsplit * f->nr, os.to_dev[0]);
	ASSERT_EQ(nsplit, st.split_migrate);
	ASSERT_EQ(np, st.resident_pages - f->c.base[0].resident_pages);
	ASSERT_EQ((long)np, dm_snap_local(fd, b->ptr, np));
	ASSERT_EQ(pmd ? (long)((nf - nsplit) * f->nr) : 0,
		  dm_snap_local_pmd(fd, b->ptr, np));
	ASSERT_PM_DEV_PMD(b->ptr, np, np);
	/* The kernel split exactly the folios the device refused. */
	ASSERT_EQ(n0.split + (long)nsplit, dm_size_count(f->order).split);
	if (!nsplit) {
		ASSERT_EQ(n0.split_pmd, vmstat_get("thp_split_pmd"));
		ASSERT_EQ(n0.split_page, vmstat_get("thp_split_page"));
	}
	ASSERT_EQ(0, dm_stats_reset(fd));
}

#endif /* DMIRROR_THP_TEST_H */
