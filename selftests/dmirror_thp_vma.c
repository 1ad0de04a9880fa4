// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp selftests: every vma operation on device-private folios, as
 * one table of operations over folio orders.
 *
 * The rows (FIXTURE_VARIANT) are the folio orders: 2, 4 and 8, mTHPs that
 * PTEs map, and the PMD's, read at run time.  Each runs with that size alone
 * enabled in /sys/kernel/mm/transparent_hugepage/hugepages-<kb>kB/, and
 * skips where the kernel does not offer the size.  The columns (TEST_F) are
 * the operations, on a buffer of two PMDs of folios of the order, filled
 * and moved to the device whole: partial munmap, mprotect (whole and part,
 * read and write faults), a fault on a tail page, mremap (before and after
 * the migration, DONTUNMAP, to an aligned and an unaligned destination),
 * fork with COW, migration with a live child (whole, and the split
 * fallback), MADV_DONTNEED (whole and part), MADV_FREE, exit and SIGKILL,
 * eviction and module unload.
 *
 * Each operation computes its expected outcome from the order: whether a
 * PMD maps the folio, and whether the operation covers it whole.  It checks
 * the data byte for byte, and proves each folio's fate with witnesses the
 * driver does not write: pagemap and kpageflags (which folios are whole),
 * the size's stats/split, SNAPSHOT's PMD bit and, on arm64, the contiguous
 * bit of the CPU's PTEs (CPU_MAP) beside the device's per-order counters.  The fixture's teardown asserts that the pools
 * balance.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "dmirror_thp_helpers.h"
#include "dmirror_thp_test.h"

#define RW		(PROT_READ | PROT_WRITE)
#define NPMD		2
#define BUF_SIZE	(NPMD * DM_THP_SIZE)
#define SEED		23

DM_FOLIO_FIXTURE(vma);

/*
 * What a test knows of its buffer: np pages in nf folios of nr pages
 * (fsize bytes) each, pmd if a PMD maps each.
 */
struct geo {
	size_t nr, fsize, np, nf;
	bool pmd;
};

static struct geo geo_of(const struct dm_folio_ctx *f)
{
	struct geo g = {
		.nr = f->nr, .fsize = f->fsize, .np = dm_npages(BUF_SIZE),
		.pmd = f->order == DM_PMD_ORDER,
	};

	g.nf = g.np / g.nr;
	return g;
}

/* The fixture's buffer, filled with @seed and moved to device 0 whole. */
#define DEV_BUF(seed) ({						\
	struct dm_buf *__b = dm_folio_buf(_metadata, &self->f, BUF_SIZE, (seed)); \
	ASSERT_NE(NULL, __b);						\
	dm_folio_to_dev(_metadata, &self->f, __b, 0);			\
	__b; })

/*
 * What came back to system memory since the last reset: @whole folios of
 * the order and @base pages, every page of [addr, addr + np pages) present
 * and off the device, the folios whole in pagemap and kpageflags, and the
 * size's stats/split @nsplit more than in @n0.
 * An mTHP that came back whole is contpte-mapped again where the CPU has
 * the contiguous bit (EXPECT_CONT).
 */
static void assert_back(struct __test_metadata *_metadata,
			struct dm_folio_ctx *f, char *addr, size_t np,
			size_t whole, size_t base, long nsplit,
			struct dm_size_counts n0)
{
	struct dmirror_thp_order_stats os;

	ASSERT_EQ(0, dm_order_stats(f->c.fd[0], &os));
	ASSERT_EQ(whole, os.to_sys[f->order]);
	ASSERT_EQ(base, os.to_sys[0]);
	ASSERT_ON_SYS(&f->c, 0, addr, np);
	ASSERT_EQ((long)whole, pm_count_folios(addr, np, f->nr));
	ASSERT_EQ(n0.split + nsplit, dm_size_count(f->order).split);
	if (f->order != DM_PMD_ORDER)
		EXPECT_CONT(&f->c, 0, addr, np, f->nr, whole);
}

/* Nothing of the device's memory is resident any more. */
#define ASSERT_DEV_IDLE(f) do {						\
	struct dmirror_thp_stats __st;					\
	DM_STATS(&(f)->c, 0, __st);					\
	ASSERT_EQ((f)->c.base[0].resident_pages, __st.resident_pages);	\
} while (0)

/* The device's CPU faults since its counters were reset, or -1. */
static long cpu_faults(struct dm_folio_ctx *f)
{
	struct dmirror_thp_stats st;

	return dm_stats(f->c.fd[0], &st) ? -1 : (long)st.cpu_faults;
}

/* Read every page of [p + from, p + to) on its own, against @seed. */
static void assert_pages(struct __test_metadata *_metadata, char *p,
			 size_t from, size_t to, uint32_t seed)
{
	size_t off;

	for (off = from; off < to; off += DM_PAGE_SIZE)
		ASSERT_EQ(-1, dm_verify_at(p + off, off, DM_PAGE_SIZE, seed))
			TH_LOG("page %zu", off / DM_PAGE_SIZE);
}

/* ---- partial munmap ---- */

/*
 * Unmap half of the first folio at @off; the rest of it stays on the
 * device, mapped by PTEs, and faults back page by page; every other folio
 * comes back whole, in one fault.  The device folio is split once, and
 * none of it stays resident, the unmapped part included.
 */
static void munmap_part(struct __test_metadata *_metadata,
			FIXTURE_DATA(vma) *self, size_t off)
{
	struct dm_folio_ctx *f = &self->f;
	struct geo g = geo_of(f);
	struct dm_buf *b = DEV_BUF(SEED);
	size_t hole = g.fsize / 2, left = dm_npages(g.fsize - hole);
	struct dm_size_counts n0 = dm_size_count(f->order);
	char *p = b->ptr;

	ASSERT_EQ(0, munmap(p + off, hole));
	if (off)
		ASSERT_DEV_BASE(&f->c, 0, p, dm_npages(off));
	if (off + hole < g.fsize)
		ASSERT_DEV_BASE(&f->c, 0, p + off + hole,
				dm_npages(g.fsize - off - hole));

	assert_pages(_metadata, p, 0, off, SEED);
	assert_pages(_metadata, p, off + hole, BUF_SIZE, SEED);
	ASSERT_EQ((long)(left + g.nf - 1), cpu_faults(f));
	if (off)
		ASSERT_ON_SYS(&f->c, 0, p, dm_npages(off));
	assert_back(_metadata, f, p + g.fsize, g.np - g.nr, g.nf - 1, left, 1,
		    n0);
	ASSERT_DEV_IDLE(f);
}

TEST_F(vma, munmap_head_half) { munmap_part(_metadata, self, 0); }
TEST_F(vma, munmap_middle_half) { munmap_part(_metadata, self, self->f.fsize / 4); }
TEST_F(vma, munmap_tail_half) { munmap_part(_metadata, self, self->f.fsize / 2); }

/* ---- mprotect ---- */

static sigjmp_buf segv_env;

static void segv_handler(int sig)
{
	(void)sig;
	siglongjmp(segv_env, 1);
}

/* Write one byte; true if the write raised SIGSEGV. */
static bool write_segfaults(volatile char *p)
{
	struct sigaction sa = { .sa_handler = segv_handler }, old;
	bool segv = false;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	if (sigsetjmp(segv_env, 1) == 0)
		*p = 0x5a;
	else
		segv = true;
	sigaction(SIGSEGV, &old, NULL);
	return segv;
}

/*
 * Make all of the buffer (@part: the middle half of the first folio)
 * read-only while it sits on the device: it stays there, read-only to the
 * device too, and a CPU write to it faults without moving anything.  Then
 * read it back (@write: make it writable again, to the device too, which
 * writes it in place; then read it and write it from the CPU, which takes
 * no write fault: pgreuse, and on arm64 the contpte bits, see it):
 *   - all of it read-only: every folio comes back whole, PMD-mapped for
 *     the PMD order;
 *   - part, made writable again: the vmas merge, the first folio is covered
 *     whole again and comes back whole too;
 *   - part, read: the first folio spans three vmas and comes back split,
 *     as many pages per fault as the driver takes; the others whole.
 */
static void mprotect_op(struct __test_metadata *_metadata,
			FIXTURE_DATA(vma) *self, bool part, bool write)
{
	struct dm_folio_ctx *f = &self->f;
	struct geo g = geo_of(f);
	struct dm_buf *b = DEV_BUF(SEED);
	size_t off = part ? g.fsize / 4 : 0, len = part ? g.fsize / 2 : BUF_SIZE;
	bool split = part && !write;
	int fd = f->c.fd[0];
	struct dm_size_counts n0;
	struct hmm_dmirror_cmd cmd;
	char *p = b->ptr;
	long faults;

	ASSERT_EQ((long)g.np, dm_snap_local_write(fd, p, g.np));
	ASSERT_EQ(0, mprotect(p + off, len, PROT_READ));

	/* Still on the device; the protected part is read-only to it. */
	ASSERT_EQ((long)g.np, dm_snap_local(fd, p, g.np));
	ASSERT_PM_DEV_PMD(p, g.np, g.np);
	ASSERT_EQ(0, dm_snap_local_write(fd, p + off, dm_npages(len)));
	ASSERT_EQ((long)(g.np - dm_npages(len)),
		  dm_snap_local_write(fd, p, g.np));
	/* A whole-PMD mprotect keeps the PMD; a partial one splits it. */
	ASSERT_EQ(g.pmd ? (long)(part ? g.np - g.nr : g.np) : 0,
		  dm_snap_local_pmd(fd, p, g.np));

	/* A CPU write to the read-only part faults, and changes nothing. */
	ASSERT_TRUE(write_segfaults(p + off + DM_PAGE_SIZE));
	ASSERT_EQ((long)g.np, dm_snap_local(fd, p, g.np));
	memset(b->mirror, 0xA5, BUF_SIZE);
	ASSERT_EQ(0, dm_read(fd, p, g.np, b->mirror, &cmd));
	ASSERT_DATA(b->mirror, BUF_SIZE, SEED);
	ASSERT_EQ(0, cpu_faults(f));

	n0 = dm_size_count(f->order);
	if (write) {
		long reuse;

		ASSERT_EQ(0, mprotect(p + off, len, RW));
		ASSERT_EQ((long)g.np, dm_snap_local_write(fd, p, g.np));
		dm_fill(b->mirror, BUF_SIZE, SEED + 1);
		ASSERT_EQ(0, dm_write(fd, p, g.np, b->mirror, &cmd));
		ASSERT_EQ((long)g.np, dm_snap_local_write(fd, p, g.np));
		ASSERT_EQ(0, cpu_faults(f));
		ASSERT_DATA(p, BUF_SIZE, SEED + 1);
		reuse = vmstat_get("pgreuse");
		ASSERT_LE(0, reuse) TH_LOG("no pgreuse in /proc/vmstat");
		dm_fill(p, BUF_SIZE, SEED + 2);
		ASSERT_EQ(reuse, vmstat_get("pgreuse"));
		ASSERT_DATA(p, BUF_SIZE, SEED + 2);
	} else {
		ASSERT_EQ(-1, dm_verify_at(p + off, off, len, SEED));
		ASSERT_DATA(p, BUF_SIZE, SEED);
	}
	faults = cpu_faults(f);
	if (split) {
		ASSERT_LE((long)g.nf, faults);
		ASSERT_GE((long)(g.nf - 1 + g.nr), faults);
		assert_back(_metadata, f, p + g.fsize, g.np - g.nr, g.nf - 1,
			    g.nr, 1, n0);
	} else {
		ASSERT_EQ((long)g.nf, faults);
		assert_back(_metadata, f, p, g.np, g.nf, 0, 0, n0);
		/* Back PMD-mapped, and (write) not COW-split by the write. */
		if (g.pmd && !part)
			ASSERT_TRUE(dm_is_sys_thp(p, NPMD));
	}
	ASSERT_ON_SYS(&f->c, 0, p, g.np);
	ASSERT_DEV_IDLE(f);
	if (!write)
		ASSERT_TRUE(write_segfaults(p + off));
}

TEST_F(vma, mprotect_whole_read) { mprotect_op(_metadata, self, false, false); }
TEST_F(vma, mprotect_whole_write) { mprotect_op(_metadata, self, false, true); }
TEST_F(vma, mprotect_part_read) { mprotect_op(_metadata, self, true, false); }
TEST_F(vma, mprotect_part_write) { mprotect_op(_metadata, self, true, true); }

/* ---- a fault on a tail page ---- */

/*
 * mprotect() of the second half of the first folio and back leaves it
 * PTE-mapped (a PMD is split) and covered whole.  The first CPU access, a
 * read of a tail page, brings all of it back whole in one fault; every
 * page must stay locked while it migrates (upstream 7.3: kernel BUG in
 * folio_migrate_ksm(), the head page migrated unlocked).
 */
TEST_F(vma, tail_fault_brings_folio_back)
{
	struct dm_folio_ctx *f = &self->f;
	struct geo g = geo_of(f);
	struct dm_buf *b = DEV_BUF(SEED);
	size_t tail = (g.nr - 1) * DM_PAGE_SIZE;
	struct dm_size_counts n0 = dm_size_count(f->order);
	int fd = f->c.fd[0];
	char *p = b->ptr;

	ASSERT_EQ(0, mprotect(p + g.fsize / 2, g.fsize / 2, PROT_READ));
	ASSERT_EQ(0, mprotect(p + g.fsize / 2, g.fsize / 2, RW));
	ASSERT_EQ((long)g.nr, dm_snap_local(fd, p, g.nr));
	ASSERT_EQ(0, dm_snap_local_pmd(fd, p, g.nr));

	ASSERT_EQ(-1, dm_verify_at(p + tail, tail, DM_PAGE_SIZE, SEED));
	ASSERT_EQ(1, cpu_faults(f));
	assert_back(_metadata, f, p, g.nr, 1, 0, 0, n0);
	ASSERT_DATA(p, BUF_SIZE, SEED);
	ASSERT_EQ((long)g.nf, cpu_faults(f));
	assert_back(_metadata, f, p, g.np, g.nf, 0, 0, n0);
	ASSERT_DEV_IDLE(f);
}

/* ---- mremap ---- */

enum { AFTER = 1, DONTUNMAP = 2, UNALIGNED = 4 };

/*
 * mremap(MAYMOVE | FIXED) of the buffer, after its migration (AFTER) or
 * before it, keeping the old range mapped (DONTUNMAP), to a PMD-aligned
 * destination or one page past it (UNALIGNED).  Unaligned, the folio that
 * straddles each of the two PMD boundaries in the range is split, when it
 * migrates or when it comes back: the walk collects within one page table.
 * Every other folio moves whole both ways, even unaligned, and the device
 * reads it where it is now.
 */
static void mremap_op(struct __test_metadata *_metadata,
		      FIXTURE_DATA(vma) *self, int how)
{
	struct dm_folio_ctx *f = &self->f;
	struct geo g = geo_of(f);
	size_t straddle = how & UNALIGNED ? 2 : 0;
	int flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	int fd = f->c.fd[0];
	struct dm_size_counts n0;
	struct hmm_dmirror_cmd cmd;
	struct dm_buf *b;
	size_t res_len;
	void *res;
	char *dst;

	if (how & AFTER) {
		b = DEV_BUF(SEED);
	} else {
		b = dm_folio_buf(_metadata, f, BUF_SIZE, SEED);
		ASSERT_NE(NULL, b);
	}

	/* The destination: inside a PROT_NONE reservation of its own. */
	dst = dm_reserve_aligned(BUF_SIZE + DM_THP_SIZE, &res, &res_len);
	ASSERT_NE(NULL, dst);
	dm_ctx_track(&f->c, res, res_len);
	if (how & UNALIGNED)
		dst += DM_PAGE_SIZE;
	if (how & DONTUNMAP)
		flags |= MREMAP_DONTUNMAP;
	ASSERT_EQ(dst, mremap(b->ptr, BUF_SIZE, BUF_SIZE, flags, dst));

	if (how & DONTUNMAP) {
		/* The old range stays mapped, empty: nothing of it on the device. */
		ASSERT_EQ(0, dm_snap_local(fd, b->ptr, g.np));
		ASSERT_PM_DEV(b->ptr, g.np, 0);
		ASSERT_ZERO(b->ptr, BUF_SIZE);
	} else {
		b->ptr = NULL;	/* moved: the reservation owns it now */
	}

	if (!(how & AFTER)) {
		/* Moved first, then migrated from the new place. */
		struct dmirror_thp_order_stats os;

		n0 = dm_size_count(f->order);
		/* mremap() moves folios whole, a PMD's as PTEs unaligned. */
		ASSERT_EQ((long)g.nf, pm_count_folios(dst, g.np, g.nr));
		ASSERT_EQ(0, dm_stats_reset(fd));
		ASSERT_EQ(0, dm_to_dev(fd, dst, g.np, b->mirror, &cmd));
		ASSERT_EQ(0, dm_order_stats(fd, &os));
		ASSERT_EQ(g.nf - straddle, os.to_dev[f->order]);
		ASSERT_EQ(straddle * g.nr, os.to_dev[0]);
		ASSERT_EQ(n0.split + (long)straddle, dm_size_count(f->order).split);
		ASSERT_DATA(b->mirror, BUF_SIZE, SEED);
	}

	/* The device pages are at the destination now, PMD-mapped if aligned. */
	ASSERT_EQ((long)g.np, dm_snap_local(fd, dst, g.np));
	ASSERT_EQ(g.pmd && !straddle ? (long)g.np : 0,
		  dm_snap_local_pmd(fd, dst, g.np));
	ASSERT_PM_DEV_PMD(dst, g.np, g.np);
	/* The device reads them where they are, without moving them. */
	memset(b->mirror, 0xA5, BUF_SIZE);
	ASSERT_EQ(0, dm_read(fd, dst, g.np, b->mirror, &cmd));
	ASSERT_DATA(b->mirror, BUF_SIZE, SEED);
	ASSERT_EQ((long)g.np, dm_snap_local(fd, dst, g.np));

	/* CPU faults bring the data back from the new address. */
	ASSERT_EQ(0, dm_stats_reset(fd));
	n0 = dm_size_count(f->order);
	ASSERT_DATA(dst, BUF_SIZE, SEED);
	if (how & AFTER) {
		assert_back(_metadata, f, dst, g.np, g.nf - straddle,
			    straddle * g.nr, straddle, n0);
	} else {
		/* What was split on the way there comes back as base pages. */
		assert_back(_metadata, f, dst, g.np, g.nf - straddle,
			    straddle * g.nr, 0, n0);
	}
	if (g.pmd && !straddle)
		ASSERT_TRUE(dm_is_sys_thp(dst, NPMD));
	ASSERT_DEV_IDLE(f);
}

TEST_F(vma, mremap_before_aligned) { mremap_op(_metadata, self, 0); }
TEST_F(vma, mremap_before_unaligned) { mremap_op(_metadata, self, UNALIGNED); }
TEST_F(vma, mremap_before_dontunmap_aligned) { mremap_op(_metadata, self, DONTUNMAP); }
TEST_F(vma, mremap_before_dontunmap_unaligned) { mremap_op(_metadata, self, DONTUNMAP | UNALIGNED); }
TEST_F(vma, mremap_after_aligned) { mremap_op(_metadata, self, AFTER); }
TEST_F(vma, mremap_after_unaligned) { mremap_op(_metadata, self, AFTER | UNALIGNED); }
TEST_F(vma, mremap_after_dontunmap_aligned) { mremap_op(_metadata, self, AFTER | DONTUNMAP); }
TEST_F(vma, mremap_after_dontunmap_unaligned) { mremap_op(_metadata, self, AFTER | DONTUNMAP | UNALIGNED); }

/* ---- fork ---- */

static int pipe_put(int fd, char c)
{
	return write(fd, &c, 1) == 1 ? 0 : -1;
}

static int pipe_get(int fd, char want)
{
	char c = 0;

	return read(fd, &c, 1) == 1 && c == want ? 0 : -1;
}

/*
 * A child in lockstep with the test: it runs fn(arg, c2p, p2c) and exits
 * with its return value; the parent keeps c2p[0] to hear from it and
 * p2c[1] to tell it.
 */
struct child {
	pid_t pid;
	int c2p[2], p2c[2];
};

static void child_start(struct __test_metadata *_metadata, struct child *ch,
			int (*fn)(void *arg, int c2p, int p2c), void *arg)
{
	ASSERT_EQ(0, pipe(ch->c2p));
	ASSERT_EQ(0, pipe(ch->p2c));
	ch->pid = fork();
	ASSERT_LE(0, ch->pid);
	if (!ch->pid) {
		close(ch->c2p[0]);
		close(ch->p2c[1]);
		_exit(fn(arg, ch->c2p[1], ch->p2c[0]));
	}
	close(ch->c2p[1]);
	close(ch->p2c[0]);
}

/* Wait for the child; it must have exited with 0. */
static void child_end(struct __test_metadata *_metadata, struct child *ch)
{
	int status;

	ASSERT_EQ(ch->pid, waitpid(ch->pid, &status, 0));
	close(ch->c2p[0]);
	close(ch->p2c[1]);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child failed at step %d", WEXITSTATUS(status));
}

/*
 * The child of fork_cow: its own mirror must see device entries it may not
 * write (COW), PMD-mapped for the PMD order; then it reads the parent's
 * data, writes its own, and must not see the parent's later writes.  Exit
 * status: 0, or the failing step.
 */
struct cow_arg {
	struct dm_buf *b;
	struct geo g;
};

static int cow_child(void *arg, int c2p, int p2c)
{
	struct cow_arg *a = arg;
	struct dm_buf *b = a->b;
	const struct geo *g = &a->g;
	int fd = dm_open(0);

	if (fd < 0)
		return 10;
	if (dm_snap_local(fd, b->ptr, g->np) != (long)g->np)
		return 11;
	if (dm_snap_local_write(fd, b->ptr, g->np) != 0)
		return 12;
	if (dm_snap_local_pmd(fd, b->ptr, g->np) != (g->pmd ? (long)g->np : 0))
		return 13;
	if (pipe_put(c2p, 'a') || pipe_get(p2c, 'b'))
		return 14;
	if (dm_verify(b->ptr, BUF_SIZE, SEED) != -1)
		return 15;
	dm_fill(b->ptr, BUF_SIZE, SEED + 1);
	if (dm_verify(b->ptr, BUF_SIZE, SEED + 1) != -1)
		return 16;
	if (pipe_put(c2p, 'c') || pipe_get(p2c, 'd'))
		return 17;
	if (dm_verify(b->ptr, BUF_SIZE, SEED + 1) != -1)
		return 18;
	/* and the device sees the child's data in the child's mm */
	memset(b->mirror, 0xA5, BUF_SIZE);
	if (dm_read(fd, b->ptr, g->np, b->mirror, NULL) ||
	    dm_verify(b->mirror, BUF_SIZE, SEED + 1) != -1)
		return 19;
	close(fd);
	return 0;
}

/*
 * Fork with the buffer on the device (@readonly: its entries made from a
 * read-only vma): fork keeps the device entries in both, write-protected;
 * child and parent each read, write and see only their own data.  Device
 * folios that two mms map come back split, page by page.
 */
static void fork_cow(struct __test_metadata *_metadata,
		     FIXTURE_DATA(vma) *self, bool readonly)
{
	struct dm_folio_ctx *f = &self->f;
	struct geo g = geo_of(f);
	struct dm_buf *b = dm_folio_buf(_metadata, f, BUF_SIZE, SEED);
	int fd = f->c.fd[0];
	struct cow_arg arg = { .b = b, .g = g };
	struct dmirror_thp_order_stats os;
	struct dm_size_counts n0;
	struct child ch;

	ASSERT_NE(NULL, b);
	if (readonly)
		ASSERT_EQ(0, mprotect(b->ptr, BUF_SIZE, PROT_READ));
	dm_folio_to_dev(_metadata, f, b, 0);
	ASSERT_EQ(readonly ? 0 : (long)g.np,
		  dm_snap_local_write(fd, b->ptr, g.np));
	if (readonly)
		ASSERT_EQ(0, mprotect(b->ptr, BUF_SIZE, RW));
	n0 = dm_size_count(f->order);
	child_start(_metadata, &ch, cow_child, &arg);

	/* Fork kept the device entries in the parent, write-protected. */
	ASSERT_EQ(0, pipe_get(ch.c2p[0], 'a'));
	ASSERT_EQ((long)g.np, dm_snap_local(fd, b->ptr, g.np));
	ASSERT_EQ(0, dm_snap_local_write(fd, b->ptr, g.np));
	ASSERT_EQ(g.pmd ? (long)g.np : 0, dm_snap_local_pmd(fd, b->ptr, g.np));
	ASSERT_EQ(0, pipe_put(ch.p2c[1], 'b'));

	/* The child has written: the parent still sees its own data. */
	ASSERT_EQ(0, pipe_get(ch.c2p[0], 'c'));
	ASSERT_DATA(b->ptr, BUF_SIZE, SEED);
	dm_fill(b->ptr, BUF_SIZE, SEED + 2);
	ASSERT_DATA(b->ptr, BUF_SIZE, SEED + 2);
	ASSERT_EQ(0, pipe_put(ch.p2c[1], 'd'));
	child_end(_metadata, &ch);

	ASSERT_DATA(b->ptr, BUF_SIZE, SEED + 2);
	ASSERT_LE(1, cpu_faults(f));
	/*
	 * Every page came back once, for both mms.  Two mms map each
	 * device mTHP: it is split in collect, and comes back page by page.
	 */
	ASSERT_EQ(0, dm_order_stats(fd, &os));
	ASSERT_EQ(g.np, os.to_sys[f->order] * g.nr + os.to_sys[0]);
	if (!g.pmd) {
		ASSERT_EQ(0, os.to_sys[f->order]);
		ASSERT_EQ(n0.split + (long)g.nf, dm_size_count(f->order).split);
	}
	ASSERT_ON_SYS(&f->c, 0, b->ptr, g.np);
	ASSERT_DEV_IDLE(f);
}

TEST_F_TIMEOUT(vma, fork_cow, 60) { fork_cow(_metadata, self, false); }
TEST_F_TIMEOUT(vma, fork_cow_readonly, 60) { fork_cow(_metadata, self, true); }

/* ---- migration with a live child ---- */

/*
 * The child, forked after the buffer was filled and before the migration:
 * it waits, then proves that its own mapping moved to the device too
 * (pagemap: migration replaces every mapping of a page), and reads its data
 * back through CPU faults in its own mm.  Exit status: 0, or the failing
 * step.
 */
static int live_child(void *arg, int c2p, int p2c)
{
	struct dm_buf *b = arg;
	size_t np = dm_npages(BUF_SIZE);
	long dev;

	if (pipe_put(c2p, 'a') || pipe_get(p2c, 'b'))
		return 10;
	dev = pm_count_dev(b->ptr, np);
	if (dev != -ENOSYS && dev != (long)np)
		return 11;
	if (dm_verify(b->ptr, BUF_SIZE, SEED) != -1)
		return 12;
	return 0;
}

/*
 * Migrate folios that a live child shares (neither has written them since
 * fork) to the device: a PMD-mapped one moves whole, the device answering
 * with one folio or, under @fail_alloc, with base pages, which split the
 * source while both processes map it through PMD migration entries; a
 * PTE-mapped one that another mm maps is split in collect and moves as
 * base pages.  Both processes read their data back, the child first.
 */
static void live_child_migrate(struct __test_metadata *_metadata,
			       FIXTURE_DATA(vma) *self, bool fail_alloc)
{
	struct dm_folio_ctx *f = &self->f;
	struct geo g = geo_of(f);
	struct dm_buf *b = dm_folio_buf(_metadata, f, BUF_SIZE, SEED);
	/* The injected failure refuses one folio: the first. */
	size_t whole = g.pmd ? g.nf - fail_alloc : 0;
	struct dmirror_thp_order_stats os;
	struct dmirror_thp_stats st;
	int fd = f->c.fd[0];
	struct dm_size_counts n0;
	struct child ch;

	ASSERT_NE(NULL, b);
	child_start(_metadata, &ch, live_child, b);
	ASSERT_EQ(0, pipe_get(ch.c2p[0], 'a'));

	if (fail_alloc)
		ASSERT_EQ(0, dm_set_flags(fd, HMM_DMIRROR_FLAG_FAIL_ALLOC));
	n0 = dm_size_count(f->order);
	ASSERT_EQ(0, dm_stats_reset(fd));
	ASSERT_EQ(0, dm_to_dev(fd, b->ptr, g.np, b->mirror, NULL));
	ASSERT_DATA(b->mirror, BUF_SIZE, SEED);
	ASSERT_EQ(0, dm_order_stats(fd, &os));
	DM_STATS(&f->c, 0, st);
	dm_stats_print("after the migration", &st);
	ASSERT_EQ(whole, os.to_dev[f->order]);
	ASSERT_EQ(g.np - whole * g.nr, os.to_dev[0]);
	ASSERT_EQ(g.pmd && fail_alloc ? 1 : 0, (long)st.split_migrate);
	ASSERT_EQ(n0.split + (long)(g.nf - whole), dm_size_count(f->order).split);
	ASSERT_EQ((long)(whole * g.nr), dm_snap_local_pmd(fd, b->ptr, g.np));
	ASSERT_PM_DEV_PMD(b->ptr, g.np, g.np);
	/* Shared with the child: the device may read it, not write it. */
	ASSERT_EQ(0, dm_snap_local_write(fd, b->ptr, g.np));

	/* The child faults its copy back first, then the parent. */
	ASSERT_EQ(0, pipe_put(ch.p2c[1], 'b'));
	child_end(_metadata, &ch);
	ASSERT_DATA(b->ptr, BUF_SIZE, SEED);
	ASSERT_ON_SYS(&f->c, 0, b->ptr, g.np);
	ASSERT_DEV_IDLE(f);
}

TEST_F_TIMEOUT(vma, migrate_with_live_child, 60)
{
	live_child_migrate(_metadata, self, false);
}

/*
 * The split fallback with a second mm mapping the folio: every PMD
 * migration entry of the folio must be split before the folio is, not
 * only the one of the mm that migrates (upstream 7.3: kernel BUG in
 * remove_migration_pte()).
 */
TEST_F_TIMEOUT(vma, split_fallback_with_live_child, 60)
{
	live_child_migrate(_metadata, self, true);
}

/* ---- MADV_DONTNEED ---- */

/*
 * MADV_DONTNEED of [off, off + len) of the first folio: the dropped part is
 * gone from device and system alike and reads as zeroes (the zero page, not
 * the device); the rest of that folio comes back split, as many pages per
 * fault as the driver takes; every other folio whole.
 */
static void dontneed_part(struct __test_metadata *_metadata,
			  FIXTURE_DATA(vma) *self, size_t off, size_t len)
{
	struct dm_folio_ctx *f = &self->f;
	struct geo g = geo_of(f);
	struct dm_buf *b = DEV_BUF(SEED);
	size_t left = g.nr - dm_npages(len);
	int fd = f->c.fd[0];
	struct dm_size_counts n0 = dm_size_count(f->order);
	char *p = b->ptr;
	long faults;

	ASSERT_EQ(0, madvise(p + off, len, MADV_DONTNEED));
	ASSERT_EQ(0, dm_snap_local(fd, p + off, dm_npages(len)));
	ASSERT_PM_DEV(p + off, dm_npages(len), 0);
	ASSERT_PM_PRESENT(p + off, dm_npages(len), 0);
	ASSERT_EQ((long)(g.np - dm_npages(len)), dm_snap_local(fd, p, g.np));

	assert_pages(_metadata, p, 0, off, SEED);
	ASSERT_ZERO(p + off, len);
	assert_pages(_metadata, p, off + len, BUF_SIZE, SEED);
	faults = cpu_faults(f);
	ASSERT_LE((long)g.nf, faults);
	ASSERT_GE((long)(g.nf - 1 + left), faults);
	assert_back(_metadata, f, p + g.fsize, g.np - g.nr, g.nf - 1, left, 1,
		    n0);
	ASSERT_ON_SYS(&f->c, 0, p, g.np);
	ASSERT_DEV_IDLE(f);
}

TEST_F(vma, dontneed_head_half)
{
	dontneed_part(_metadata, self, 0, self->f.fsize / 2);
}

TEST_F(vma, dontneed_middle_half)
{
	dontneed_part(_metadata, self, self->f.fsize / 4, self->f.fsize / 2);
}

/* All of it: nothing comes back, nothing stays resident. */
TEST_F(vma, dontneed_whole)
{
	struct dm_folio_ctx *f = &self->f;
	struct geo g = geo_of(f);
	struct dm_buf *b = DEV_BUF(SEED);
	struct dm_size_counts n0 = dm_size_count(f->order);

	ASSERT_EQ(0, madvise(b->ptr, BUF_SIZE, MADV_DONTNEED));
	ASSERT_EQ(0, dm_snap_local(f->c.fd[0], b->ptr, g.np));
	ASSERT_PM_DEV(b->ptr, g.np, 0);
	ASSERT_PM_PRESENT(b->ptr, g.np, 0);
	ASSERT_DEV_IDLE(f);
	ASSERT_ZERO(b->ptr, BUF_SIZE);
	ASSERT_EQ(0, cpu_faults(f));
	ASSERT_EQ(n0.split, dm_size_count(f->order).split);
}

/* The first page of every folio: each folio comes back split. */
TEST_F(vma, dontneed_first_page_each)
{
	struct dm_folio_ctx *f = &self->f;
	struct geo g = geo_of(f);
	struct dm_buf *b = DEV_BUF(SEED);
	struct dm_size_counts n0 = dm_size_count(f->order);
	char *p = b->ptr;
	size_t i;

	for (i = 0; i < g.nf; i++)
		ASSERT_EQ(0, madvise(p + i * g.fsize, DM_PAGE_SIZE,
				     MADV_DONTNEED));
	for (i = 0; i < g.nf; i++) {
		ASSERT_ZERO(p + i * g.fsize, DM_PAGE_SIZE);
		ASSERT_EQ(-1, dm_verify_at(p + i * g.fsize + DM_PAGE_SIZE,
					   i * g.fsize + DM_PAGE_SIZE,
					   g.fsize - DM_PAGE_SIZE, SEED));
	}
	assert_back(_metadata, f, p, g.np, 0, g.np - g.nf, g.nf, n0);
	ASSERT_DEV_IDLE(f);
}

/* ---- MADV_FREE ---- */

/* MADV_FREE leaves device-private entries alone: they come back whole. */
TEST_F(vma, madv_free)
{
	struct dm_folio_ctx *f = &self->f;
	struct geo g = geo_of(f);
	struct dm_buf *b = DEV_BUF(SEED);
	struct dm_size_counts n0 = dm_size_count(f->order);

	ASSERT_EQ(0, madvise(b->ptr, BUF_SIZE, MADV_FREE));
	ASSERT_PM_DEV_PMD(b->ptr, g.np, g.np);
	ASSERT_EQ((long)g.np, dm_snap_local(f->c.fd[0], b->ptr, g.np));
	ASSERT_DATA(b->ptr, BUF_SIZE, SEED);
	assert_back(_metadata, f, b->ptr, g.np, g.nf, 0, 0, n0);
	ASSERT_DEV_IDLE(f);
}

/* ---- exit with device folios mapped ---- */

struct exit_arg {
	struct dm_folio_ctx *f;
	bool wait;		/* wait to be killed, else exit */
};

/*
 * The child: folios of the order on the device, then exit without
 * unmapping or closing anything, or say so and wait to be killed.  Exit
 * status: 0, or the failing step.
 */
static int exit_child(void *p, int c2p, int p2c)
{
	const struct exit_arg *a = p;
	struct geo g = geo_of(a->f);
	struct dmirror_thp_order_stats os;
	struct dm_buf b;
	int fd = dm_open(0);

	(void)p2c;
	if (fd < 0)
		return 10;
	if (dm_buf_alloc(&b, BUF_SIZE, RW, DM_THP_NONE))
		return 11;
	dm_fill(b.ptr, BUF_SIZE, SEED);
	if (pm_count_folios(b.ptr, g.np, g.nr) != (long)g.nf)
		return 12;
	if (dm_to_dev(fd, b.ptr, g.np, b.mirror, NULL))
		return 13;
	if (dm_order_stats(fd, &os) || os.to_dev[a->f->order] != g.nf)
		return 14;
	if (a->wait) {
		if (pipe_put(c2p, 'r'))
			return 15;
		for (;;)
			pause();
	}
	return 0;
}

/*
 * A process that exits, or is killed, with device folios mapped: the kernel
 * frees them, nothing comes back, and the pools balance.
 */
static void exit_op(struct __test_metadata *_metadata,
		    FIXTURE_DATA(vma) *self, bool sigkill)
{
	struct dm_folio_ctx *f = &self->f;
	struct geo g = geo_of(f);
	struct exit_arg a = { .f = f, .wait = sigkill };
	struct dmirror_thp_order_stats os;
	struct dmirror_thp_stats st;
	struct child ch;
	int status;

	child_start(_metadata, &ch, exit_child, &a);
	if (sigkill) {
		ASSERT_EQ(0, pipe_get(ch.c2p[0], 'r'));
		/* resident while the child lives */
		DM_STATS(&f->c, 0, st);
		ASSERT_EQ(g.np, st.resident_pages - f->c.base[0].resident_pages);
		ASSERT_EQ(0, kill(ch.pid, SIGKILL));
		ASSERT_EQ(ch.pid, waitpid(ch.pid, &status, 0));
		close(ch.c2p[0]);
		close(ch.p2c[1]);
		ASSERT_TRUE(WIFSIGNALED(status));
		ASSERT_EQ(SIGKILL, WTERMSIG(status));
	} else {
		child_end(_metadata, &ch);
	}
	ASSERT_EQ(0, dm_order_stats(f->c.fd[0], &os));
	ASSERT_EQ(g.nf, os.to_dev[f->order]);
	/* Nothing came back: the pages were freed, not migrated. */
	ASSERT_EQ(0, os.to_sys[f->order] + os.to_sys[0]);
	DM_STATS(&f->c, 0, st);
	ASSERT_EQ(f->c.base[0].resident_pages, st.resident_pages);
	ASSERT_TRUE(dm_pool_balanced(&st));
}

TEST_F_TIMEOUT(vma, exit_with_device_folios, 60) { exit_op(_metadata, self, false); }
TEST_F_TIMEOUT(vma, sigkill_with_device_folios, 60) { exit_op(_metadata, self, true); }

/* ---- eviction and device removal ---- */

/* Eviction (RELEASE) moves every folio back whole, by pfn. */
TEST_F(vma, release_evicts_folios_whole)
{
	struct dm_folio_ctx *f = &self->f;
	struct geo g = geo_of(f);
	struct dm_buf *b = DEV_BUF(SEED);
	struct dm_size_counts n0 = dm_size_count(f->order);

	ASSERT_EQ(0, dm_release(f->c.fd[0]));
	assert_back(_metadata, f, b->ptr, g.np, g.nf, 0, 0, n0);
	ASSERT_EQ(0, cpu_faults(f));
	ASSERT_DATA(b->ptr, BUF_SIZE, SEED);
	ASSERT_DEV_IDLE(f);
}

/* Device removal evicts every folio whole; then a fresh module. */
TEST_F(vma, unload_evicts_folios_whole)
{
	struct dm_folio_ctx *f = &self->f;
	struct geo g = geo_of(f);
	struct dm_buf *b = DEV_BUF(SEED);
	struct dm_size_counts n0 = dm_size_count(f->order);
	int d;

	for (d = 0; d < DM_NDEVICES; d++) {
		close(f->c.fd[d]);
		f->c.fd[d] = -1;
	}
	ASSERT_EQ(0, dm_run("rmmod " DM_MODULE_NAME));
	ASSERT_FALSE(dm_devices_present());
	ASSERT_PM_PRESENT(b->ptr, g.np, g.np);
	ASSERT_EQ((long)g.nf, pm_count_folios(b->ptr, g.np, g.nr));
	ASSERT_EQ(n0.split, dm_size_count(f->order).split);
	ASSERT_DATA(b->ptr, BUF_SIZE, SEED);
	ASSERT_EQ(0, dm_run("insmod " DM_MODULE_PATH));
	ASSERT_TRUE(dm_wait_devices(10));
	for (d = 0; d < DM_NDEVICES; d++) {
		f->c.fd[d] = dm_open(d);
		ASSERT_LE(0, f->c.fd[d]);
	}
	dm_ctx_rebase(_metadata, &f->c);
}

TEST_HARNESS_MAIN
