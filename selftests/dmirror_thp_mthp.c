// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp selftests: device-private mTHP, anonymous folios of every order
 * moved whole.
 *
 * Each test makes the buffer's system folios of one order, with that size
 * alone enabled in /sys/kernel/mm/transparent_hugepage/hugepages-<kb>kB/
 * (16 kB, 64 kB and 1 MB are mTHPs mapped by PTEs; 2 MB, the PMD, is the
 * control), and proves the order at every step with witnesses the driver
 * does not write:
 *   - system side: pagemap pfns and /proc/kpageflags compound head and tail
 *     bits (pm_count_folios()), anon_fault_alloc of the size;
 *   - device side: pagemap (device-private entries), SNAPSHOT;
 *   - no split: the size's stats/split and /proc/vmstat's thp_split_*;
 * and the device's per-order counters (HMM_DMIRROR_ORDER_STATS).
 *
 * round_trip, one body over a matrix: order x fail_alloc (none, to the
 * device, back) x way back (MIGRATE_TO_SYS, CPU faults) x policy of the size
 * at fault time (allowed: back whole; denied: split, back as base pages).
 *
 * vma_op, one body over a matrix: order x an operation on a range that holds
 * device mTHPs (partial munmap, mprotect whole and part, mremap aligned and
 * not, MADV_DONTNEED whole and part, MADV_FREE, fork with COW, process exit,
 * RELEASE eviction, module unload), each with the data checked byte for
 * byte, whole folios
 * where the operation leaves them whole, and the pools balanced afterwards
 * (the fixture's leak check).
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"

#include <sys/ioctl.h>
#include <sys/mman.h>

#include "dmirror_thp_helpers.h"
#include "dmirror_thp_test.h"

#define RW		(PROT_READ | PROT_WRITE)
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

FIXTURE_SETUP(mthp) { dm_folio_ctx_setup(_metadata, &self->f, variant->order); }
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

RT_ORDER(16k, 2)
RT_ORDER(64k, 4)
RT_ORDER(1m, 8)
RT_ORDER(2m_pmd, 9)

TEST_F_TIMEOUT(mthp, round_trip, 180)
{
	struct dm_ctx *c = &self->f.c;
	unsigned int order = variant->order;
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

/* ---- every vma operation on device mTHPs, as a matrix ---- */

enum op {
	OP_MUNMAP_PART, OP_MPROTECT, OP_MPROTECT_PART, OP_MREMAP_ALIGNED,
	OP_MREMAP_UNALIGNED, OP_DONTNEED, OP_DONTNEED_PART, OP_FREE,
	OP_FORK_COW, OP_EXIT, OP_RELEASE, OP_UNLOAD,
};

FIXTURE(mthp_vma) { struct dm_folio_ctx f; };

FIXTURE_VARIANT(mthp_vma)
{
	unsigned int order;
	enum op op;
};

FIXTURE_SETUP(mthp_vma) { dm_folio_ctx_setup(_metadata, &self->f, variant->order); }
FIXTURE_TEARDOWN(mthp_vma) { dm_folio_ctx_teardown(_metadata, &self->f); }

#define VOP(kb, o, name, op_)						\
	FIXTURE_VARIANT_ADD(mthp_vma, kb##_##name) { .order = o, .op = op_ };
#define VOP_ORDER(kb, o)						\
	VOP(kb, o, munmap_part, OP_MUNMAP_PART)				\
	VOP(kb, o, mprotect, OP_MPROTECT)				\
	VOP(kb, o, mprotect_part, OP_MPROTECT_PART)			\
	VOP(kb, o, mremap_aligned, OP_MREMAP_ALIGNED)			\
	VOP(kb, o, mremap_unaligned, OP_MREMAP_UNALIGNED)		\
	VOP(kb, o, dontneed, OP_DONTNEED)				\
	VOP(kb, o, dontneed_part, OP_DONTNEED_PART)			\
	VOP(kb, o, madv_free, OP_FREE)					\
	VOP(kb, o, fork_cow, OP_FORK_COW)				\
	VOP(kb, o, exit, OP_EXIT)					\
	VOP(kb, o, release, OP_RELEASE)					\
	VOP(kb, o, unload, OP_UNLOAD)

VOP_ORDER(16k, 2)
VOP_ORDER(64k, 4)
VOP_ORDER(1m, 8)

/* The child of OP_EXIT: device mTHPs that its exit must free. */
struct exit_arg {
	unsigned int order;
};

static int exit_child(void *p)
{
	const struct exit_arg *a = p;
	size_t nr = 1UL << a->order, np = dm_npages(BUF_SIZE);
	struct dmirror_thp_order_stats os;
	struct hmm_dmirror_cmd cmd;
	struct dm_buf b;
	int fd = dm_open(0);

	if (fd < 0)
		return 10;
	if (dm_buf_alloc(&b, BUF_SIZE, RW, DM_THP_NONE))
		return 11;
	dm_fill(b.ptr, BUF_SIZE, SEED);
	if (dm_stats_reset(fd) || dm_to_dev(fd, b.ptr, np, b.mirror, &cmd))
		return 12;
	if (dm_order_stats(fd, &os) || os.to_dev[a->order] != np / nr)
		return 13;
	/* exit without unmapping or closing: the kernel must free it all */
	return 0;
}

/*
 * The child of OP_FORK_COW.  It waits until the parent has written its own
 * copy of the first half, then checks that it still sees the data of the
 * fork everywhere, writes its own copy of the second half, and checks it.
 */
struct cow_arg {
	struct dm_buf *b;
	int go[2];
};

static int cow_child(void *p)
{
	struct cow_arg *a = p;
	size_t half = a->b->size / 2;
	char c;

	close(a->go[1]);
	if (read(a->go[0], &c, 1) != 1)
		return 19;
	if (dm_verify(a->b->ptr, a->b->size, SEED) != -1)
		return 20;
	dm_fill_at(a->b->ptr + half, half, half, SEED + 1);
	if (dm_verify_at(a->b->ptr + half, half, half, SEED + 1) != -1)
		return 21;
	if (dm_verify_at(a->b->ptr, 0, half, SEED) != -1)
		return 22;
	return 0;
}

TEST_F_TIMEOUT(mthp_vma, vma_op, 180)
{
	struct dm_ctx *c = &self->f.c;
	unsigned int order = variant->order;
	size_t nr = 1UL << order, fsize = nr * DM_PAGE_SIZE;
	size_t np = dm_npages(BUF_SIZE), nf = np / nr;
	struct dmirror_thp_order_stats os;
	struct dmirror_thp_stats st;
	struct exit_arg ea = { order };
	struct dm_size_counts n0;
	struct dm_buf *b;
	void *res, *dst;
	size_t res_len;
	char *p;

	if (variant->op == OP_EXIT) {
		ASSERT_EQ(0, dm_run_child(exit_child, &ea, 120));
		return;	/* the fixture's leak check is the proof */
	}

	b = dm_folio_buf(_metadata, &self->f, BUF_SIZE, SEED);
	ASSERT_NE(NULL, b);
	dm_folio_to_dev(_metadata, &self->f, b, 0);
	p = b->ptr;
	n0 = dm_size_count(order);

	switch (variant->op) {
	case OP_MUNMAP_PART:
		/* The second half of the first folio goes. */
		ASSERT_EQ(0, munmap(p + fsize / 2, fsize / 2));
		ASSERT_EQ(-1, dm_verify_at(p, 0, fsize / 2, SEED));
		ASSERT_EQ(-1, dm_verify_at(p + fsize, fsize, BUF_SIZE - fsize,
					   SEED));
		/* The partly unmapped folio came back split, the rest whole. */
		ASSERT_EQ((long)nf - 1, pm_count_folios(p + fsize, np - nr, nr));
		ASSERT_EQ(n0.split + 1, dm_size_count(order).split);
		break;
	case OP_MPROTECT:
	case OP_MPROTECT_PART:
		/* Read-only, all of it or one page inside the first folio. */
		if (variant->op == OP_MPROTECT) {
			ASSERT_EQ(0, mprotect(p, BUF_SIZE, PROT_READ));
		} else {
			ASSERT_EQ(0, mprotect(p + DM_PAGE_SIZE, DM_PAGE_SIZE,
					      PROT_READ));
		}
		ASSERT_DATA(p, BUF_SIZE, SEED);
		ASSERT_EQ((long)(variant->op == OP_MPROTECT ? nf : nf - 1),
			  pm_count_folios(p, np, nr));
		ASSERT_EQ(n0.split + (variant->op == OP_MPROTECT ? 0 : 1),
			  dm_size_count(order).split);
		break;
	case OP_MREMAP_ALIGNED:
	case OP_MREMAP_UNALIGNED: {
		/*
		 * Moved one page off alignment, the folio that then straddles
		 * each of the two PMD boundaries is split on the way back:
		 * the walk collects within one page table.
		 */
		long straddle = variant->op == OP_MREMAP_UNALIGNED ? 2 : 0;

		dst = dm_reserve_aligned(BUF_SIZE + DM_THP_SIZE, &res, &res_len);
		ASSERT_NE(NULL, dst);
		dm_ctx_track(c, res, res_len);
		if (variant->op == OP_MREMAP_UNALIGNED)
			dst = (char *)dst + DM_PAGE_SIZE;
		p = mremap(b->ptr, BUF_SIZE, BUF_SIZE,
			   MREMAP_MAYMOVE | MREMAP_FIXED, dst);
		ASSERT_EQ(dst, p);
		b->ptr = NULL;	/* moved: the reservation owns it now */
		ASSERT_EQ((long)np, pm_count_dev(p, np));
		ASSERT_DATA(p, BUF_SIZE, SEED);
		/* A CPU fault brings each folio back whole, even unaligned. */
		ASSERT_EQ((long)nf - straddle, pm_count_folios(p, np, nr));
		ASSERT_EQ(n0.split + straddle, dm_size_count(order).split);
		break;
	}
	case OP_DONTNEED:
		ASSERT_EQ(0, madvise(p, BUF_SIZE, MADV_DONTNEED));
		DM_STATS(c, 0, st);
		ASSERT_EQ(c->base[0].resident_pages, st.resident_pages);
		ASSERT_ZERO(p, BUF_SIZE);
		ASSERT_EQ(n0.split, dm_size_count(order).split);
		break;
	case OP_DONTNEED_PART:
		/* The first page of every folio goes. */
		for (size_t i = 0; i < nf; i++)
			ASSERT_EQ(0, madvise(p + i * fsize, DM_PAGE_SIZE,
					     MADV_DONTNEED));
		for (size_t i = 0; i < nf; i++) {
			ASSERT_EQ(-1, dm_verify_zero(p + i * fsize, DM_PAGE_SIZE));
			ASSERT_EQ(-1, dm_verify_at(p + i * fsize + DM_PAGE_SIZE,
						   i * fsize + DM_PAGE_SIZE,
						   fsize - DM_PAGE_SIZE, SEED));
		}
		/* Each folio, mapped in part, came back split. */
		ASSERT_EQ(n0.split + (long)nf, dm_size_count(order).split);
		ASSERT_EQ(0, pm_count_folios(p, np, nr));
		break;
	case OP_FREE:
		/* MADV_FREE leaves device-private entries alone. */
		ASSERT_EQ(0, madvise(p, BUF_SIZE, MADV_FREE));
		ASSERT_PM_DEV(p, np, np);
		ASSERT_DATA(p, BUF_SIZE, SEED);
		ASSERT_EQ((long)nf, pm_count_folios(p, np, nr));
		break;
	case OP_FORK_COW: {
		/*
		 * Shared with a child, both alive: the parent writes the first
		 * half, the child the second half, each into its own copy.
		 * Nothing maps the device folios once only: they come back
		 * split, page by page.
		 */
		struct cow_arg ca = { .b = b };
		pid_t pid;
		int status;

		ASSERT_EQ(0, pipe(ca.go));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(cow_child(&ca));
		close(ca.go[0]);
		dm_fill_at(p, 0, BUF_SIZE / 2, SEED + 2);
		ASSERT_EQ(1, write(ca.go[1], "g", 1));
		close(ca.go[1]);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(0, WEXITSTATUS(status));
		ASSERT_EQ(-1, dm_verify_at(p, 0, BUF_SIZE / 2, SEED + 2));
		ASSERT_EQ(-1, dm_verify_at(p + BUF_SIZE / 2, BUF_SIZE / 2,
					   BUF_SIZE / 2, SEED));
		ASSERT_EQ(n0.split + (long)nf, dm_size_count(order).split);
		break;
	}
	case OP_RELEASE:
		/* Eviction moves every folio back whole, by pfn. */
		ASSERT_EQ(0, dm_release(c->fd[0]));
		ASSERT_EQ(0, dm_order_stats(c->fd[0], &os));
		ASSERT_EQ(nf, os.to_sys[order]);
		ASSERT_ON_SYS(c, 0, p, np);
		ASSERT_EQ((long)nf, pm_count_folios(p, np, nr));
		ASSERT_DATA(p, BUF_SIZE, SEED);
		ASSERT_EQ(n0.split, dm_size_count(order).split);
		break;
	case OP_UNLOAD:
		/* Device removal evicts every folio whole; then a fresh module. */
		for (int d = 0; d < DM_NDEVICES; d++) {
			close(c->fd[d]);
			c->fd[d] = -1;
		}
		ASSERT_EQ(0, dm_run("rmmod " DM_MODULE_NAME));
		ASSERT_FALSE(dm_devices_present());
		ASSERT_PM_PRESENT(p, np, np);
		ASSERT_EQ((long)nf, pm_count_folios(p, np, nr));
		ASSERT_DATA(p, BUF_SIZE, SEED);
		ASSERT_EQ(n0.split, dm_size_count(order).split);
		ASSERT_EQ(0, dm_run("insmod " DM_MODULE_PATH));
		ASSERT_TRUE(dm_wait_devices(10));
		for (int d = 0; d < DM_NDEVICES; d++) {
			c->fd[d] = dm_open(d);
			ASSERT_LE(0, c->fd[d]);
		}
		dm_ctx_rebase(_metadata, c);
		break;
	case OP_EXIT:
		break;
	}
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
