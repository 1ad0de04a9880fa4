// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp selftests: device-private folios of every order moved whole,
 * to the device and back.
 *
 * Each test makes the buffer's system folios of one order, with that size
 * alone enabled in /sys/kernel/mm/transparent_hugepage/hugepages-<kb>kB/
 * (orders 2, 4 and 8 are mTHPs mapped by PTEs; the PMD's, read at run time,
 * is the control), and proves the order at every step with witnesses the
 * driver does not write:
 *   - system side: pagemap pfns and /proc/kpageflags compound head and tail
 *     bits (pm_count_folios()), anon_fault_alloc of the size;
 *   - device side: pagemap (device-private entries), SNAPSHOT;
 *   - no split: the size's stats/split and /proc/vmstat's thp_split_*;
 *   - back whole: on arm64, the contiguous bit of every PTE of a folio of
 *     64 kB or more (CPU_MAP);
 * and the device's per-order counters (HMM_DMIRROR_ORDER_STATS).
 *
 * round_trip, one body over a matrix: order x fail_alloc (none, to the
 * device, back) x way back (MIGRATE_TO_SYS, CPU faults) x policy of the size
 * at fault time (allowed: back whole; denied: split, back as base pages).
 * What every vma operation does to device folios of each order is
 * dmirror_thp_vma.c's table.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"

#include <sys/ioctl.h>
#include <sys/mman.h>

#include "dmirror_thp_helpers.h"
#include "dmirror_thp_test.h"

#define BUF_SIZE	(2 * DM_THP_SIZE)
#define SEED		23

/* ---- the round trip, as a matrix ---- */

enum fa { FA_NONE, FA_TODEV, FA_BACK };
enum way { WAY_IOCTL, WAY_FAULT };

FIXTURE(mthp) { struct dm_folio_ctx f; };

FIXTURE_VARIANT(mthp)
{
	unsigned int order;
	enum fa fa;
	enum way way;
	bool deny;
};

/* order 0 stands for the PMD's, which only the running kernel knows */
FIXTURE_SETUP(mthp)
{
	dm_folio_ctx_setup(_metadata, &self->f,
			   variant->order ? variant->order : DM_PMD_ORDER);
}

FIXTURE_TEARDOWN(mthp) { dm_folio_ctx_teardown(_metadata, &self->f); }

#define RT(kb, o, f, w, d, dn)						\
	FIXTURE_VARIANT_ADD(mthp, kb##_failalloc_##f##_back_by_##w##dn) { \
		.order = o, .fa = FA_##f, .way = WAY_##w, .deny = d,	\
	};
#define RT_FA(kb, o, f)							\
	RT(kb, o, f, IOCTL, false, )					\
	RT(kb, o, f, FAULT, false, )					\
	RT(kb, o, f, FAULT, true, _size_disabled)
#define RT_ORDER(kb, o)	RT_FA(kb, o, NONE) RT_FA(kb, o, TODEV) RT_FA(kb, o, BACK)

RT_ORDER(order2, 2)
RT_ORDER(order4, 4)
RT_ORDER(order8, 8)
RT_ORDER(pmd, 0)

TEST_F_TIMEOUT(mthp, round_trip, 180)
{
	struct dm_ctx *c = &self->f.c;
	unsigned int order = self->f.order;
	size_t nr = 1UL << order, np = dm_npages(BUF_SIZE), nf = np / nr;
	size_t split_dev = variant->fa == FA_TODEV;
	size_t split_back, whole_back;
	struct dmirror_thp_order_stats os;
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	struct dm_size_counts n0, n1;
	struct dm_buf *b;

	b = dm_folio_buf(_metadata, &self->f, BUF_SIZE, SEED);
	ASSERT_NE(NULL, b);

	if (variant->fa == FA_TODEV)
		ASSERT_EQ(0, dm_set_flags(c->fd[0], HMM_DMIRROR_FLAG_FAIL_ALLOC));
	dm_folio_to_dev(_metadata, &self->f, b, split_dev);

	/*
	 * Back: every device folio whole, but for the one an injected failure
	 * splits, or all of them when a fault may not allocate the size.
	 */
	split_back = variant->fa == FA_BACK;
	if (variant->deny) {
		dm_thp_size_enable(order, THP_NEVER);
		split_back = nf - split_dev;
	}
	whole_back = nf - split_dev - split_back;
	if (variant->fa == FA_BACK)
		ASSERT_EQ(0, dm_set_flags(c->fd[0], HMM_DMIRROR_FLAG_FAIL_ALLOC));
	n0 = dm_size_count(order);
	if (variant->way == WAY_IOCTL) {
		ASSERT_EQ(0, dm_to_sys(c->fd[0], b->ptr, np, &cmd));
		ASSERT_EQ(np, cmd.cpages);
	} else {
		dm_touch_read(b->ptr, BUF_SIZE, DM_PAGE_SIZE);
	}
	n1 = dm_size_count(order);

	ASSERT_EQ(0, dm_order_stats(c->fd[0], &os));
	ASSERT_EQ(0, dm_stats(c->fd[0], &st));
	SKIP_IF_REAL_ALLOC_FAIL(st);
	ASSERT_EQ(whole_back, os.to_sys[order]);
	ASSERT_EQ((split_dev + split_back) * nr, os.to_sys[0]);
	/*
	 * The device folios split on the way back: the driver's fallback
	 * (fail_alloc), or the core, in collect, when the size is disabled;
	 * the driver then sees no large entry, and the flag stays armed.
	 */
	ASSERT_EQ(variant->fa == FA_BACK && !variant->deny,
		  st.split_migrate + st.split_fault);
	ASSERT_EQ(split_back, st.split_callback);
	ASSERT_ON_SYS(c, 0, b->ptr, np);
	ASSERT_EQ((long)whole_back, pm_count_folios(b->ptr, np, nr));
	if (order != DM_PMD_ORDER)
		EXPECT_CONT(c, 0, b->ptr, np, nr, whole_back);
	/* A fault that brought a folio back whole allocated one of its size. */
	ASSERT_EQ(variant->way == WAY_FAULT ? (long)whole_back : 0,
		  n1.fault_alloc - n0.fault_alloc);
	ASSERT_EQ((long)split_back, n1.split - n0.split);
	if (!split_back) {
		ASSERT_EQ(n0.split_pmd, n1.split_pmd);
		ASSERT_EQ(n0.split_page, n1.split_page);
	}
	ASSERT_DATA(b->ptr, BUF_SIZE, SEED);
}

/* ---- the per-order statistics ioctl ---- */

DM_FIXTURE(order_stats);

TEST_F(order_stats, bad_version_or_size_is_einval)
{
	struct dmirror_thp_order_stats os;

	ASSERT_EQ(0, dm_order_stats(self->c.fd[0], &os));
	ASSERT_EQ(DM_PMD_ORDER, os.max_order);
	memset(&os, 0, sizeof(os));
	os.version = DMIRROR_THP_ORDER_STATS_VERSION + 1;
	os.size = sizeof(os);
	ASSERT_EQ(-1, ioctl(self->c.fd[0], HMM_DMIRROR_ORDER_STATS, &os));
	ASSERT_EQ(EINVAL, errno);
	os.version = DMIRROR_THP_ORDER_STATS_VERSION;
	os.size = sizeof(os) - 1;
	ASSERT_EQ(-1, ioctl(self->c.fd[0], HMM_DMIRROR_ORDER_STATS, &os));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, ioctl(self->c.fd[0], HMM_DMIRROR_ORDER_STATS, NULL));
	ASSERT_EQ(EFAULT, errno);
}

TEST_F(order_stats, pools_balance_by_order)
{
	struct dmirror_thp_order_stats os;
	struct dmirror_thp_stats st;
	unsigned long free_pages = 0;
	unsigned int o;

	ASSERT_EQ(0, dm_order_stats(self->c.fd[0], &os));
	DM_STATS(&self->c, 0, st);
	for (o = 0; o <= os.max_order; o++)
		free_pages += os.free_blocks[o] << o;
	ASSERT_EQ(st.capacity_pages, free_pages + st.resident_pages);
	ASSERT_EQ(st.free_folios, os.free_blocks[os.max_order]);
}

TEST_HARNESS_MAIN
