// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp selftests: vma operations on device-resident THPs.
 *
 *  - partial munmap at 0, 512K and 1M, then faults on the rest (THP, 4K);
 *  - mremap MAYMOVE|FIXED, with and without DONTUNMAP, before and after the
 *    migration, to an aligned and to an unaligned destination;
 *  - mprotect of a whole device THP and of part of one, then read or write
 *    faults; a PTE-mapped device THP (mprotect of half and back) faulted
 *    on a tail page;
 *  - fork: child and parent each read, write and see only their own data
 *    (THP and 4K; the device entry readable or writable);
 *  - a THP that fork shares with a live child, migrated to the device
 *    whole, or split when the device answers with base pages: every
 *    mapping moves, and both processes read their data back;
 *  - MADV_DONTNEED of a whole device THP and of part of one;
 *  - exit (or SIGKILL) with device THPs still mapped leaks nothing.
 *
 * Every body runs over a table of variants (FIXTURE_VARIANT); every case
 * asserts the data and what happened (counters, SNAPSHOT, pagemap), and the
 * fixture's teardown asserts that no device page leaked.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "dmirror_thp_helpers.h"
#include "dmirror_thp_test.h"

#define RW	(PROT_READ | PROT_WRITE)

/* ---- partial munmap ---- */

DM_FIXTURE(punmap);

FIXTURE_VARIANT(punmap)
{
	bool thp;
	size_t off;
};

FIXTURE_VARIANT_ADD(punmap, thp_at_0) { .thp = true, .off = 0 };
FIXTURE_VARIANT_ADD(punmap, thp_at_512k) { .thp = true, .off = 512 * DM_ONEKB };
FIXTURE_VARIANT_ADD(punmap, thp_at_1m) { .thp = true, .off = DM_ONEMB };
FIXTURE_VARIANT_ADD(punmap, base_at_0) { .thp = false, .off = 0 };
FIXTURE_VARIANT_ADD(punmap, base_at_512k) { .thp = false, .off = 512 * DM_ONEKB };
FIXTURE_VARIANT_ADD(punmap, base_at_1m) { .thp = false, .off = DM_ONEMB };

/*
 * Unmap 1 MB of a device-resident 2 MB buffer at the variant's offset; the
 * rest stays on the device, faults back page by page with its data, and
 * once it is back nothing of the device folio is left resident.
 */
TEST_F(punmap, partial_munmap_then_fault)
{
	const size_t off = variant->off, hole = DM_ONEMB;
	const size_t left = dm_npages(DM_THP_SIZE - hole);
	struct dmirror_thp_stats st;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, DM_THP_SIZE, variant->thp, 20);
	int fd = self->c.fd[0];
	size_t i;

	DM_MIGRATE_PROVE(&self->c, 0, b, variant->thp);
	ASSERT_EQ(0, munmap(b->ptr + off, hole));

	/* What is left is still on the device, now as base page mappings. */
	if (off) {
		ASSERT_DEV_BASE(&self->c, 0, b->ptr, dm_npages(off));
	}
	if (off + hole < DM_THP_SIZE) {
		ASSERT_DEV_BASE(&self->c, 0, b->ptr + off + hole,
				dm_npages(DM_THP_SIZE - off - hole));
	}

	/* Fault the rest back, one page at a time. */
	for (i = 0; i < DM_THP_SIZE; i += DM_PAGE_SIZE) {
		if (i >= off && i < off + hole)
			continue;
		ASSERT_EQ(-1, dm_verify_at(b->ptr + i, i, DM_PAGE_SIZE, 20))
			TH_LOG("page %zu", i / DM_PAGE_SIZE);
	}
	DM_STATS(&self->c, 0, st);
	dm_stats_print("after faults", &st);
	ASSERT_EQ(0, st.thp_to_sys);
	ASSERT_EQ(left, st.base_to_sys);
	ASSERT_EQ(left, st.cpu_faults);
	/* The device THP was split exactly once; 4K pages never are. */
	ASSERT_EQ(variant->thp ? 1 : 0, st.split_callback);
	if (off)
		ASSERT_ON_SYS(&self->c, 0, b->ptr, dm_npages(off));
	if (off + hole < DM_THP_SIZE)
		ASSERT_ON_SYS(&self->c, 0, b->ptr + off + hole,
			      dm_npages(DM_THP_SIZE - off - hole));
	/* All of the device folio is free again, the unmapped part too. */
	ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
	ASSERT_TRUE(dm_pool_balanced(&st));
	(void)fd;
}

/* ---- mremap ---- */

DM_FIXTURE(remap);

FIXTURE_VARIANT(remap)
{
	bool after;		/* mremap the device THP, else the system THP */
	bool dontunmap;
	bool unaligned;
};

#define REMAP_VARIANT(name, a, d, u)					\
	FIXTURE_VARIANT_ADD(remap, name) {				\
		.after = a, .dontunmap = d, .unaligned = u,		\
	}
REMAP_VARIANT(before_aligned, false, false, false);
REMAP_VARIANT(before_unaligned, false, false, true);
REMAP_VARIANT(before_dontunmap_aligned, false, true, false);
REMAP_VARIANT(before_dontunmap_unaligned, false, true, true);
REMAP_VARIANT(after_aligned, true, false, false);
REMAP_VARIANT(after_unaligned, true, false, true);
REMAP_VARIANT(after_dontunmap_aligned, true, true, false);
REMAP_VARIANT(after_dontunmap_unaligned, true, true, true);

TEST_F(remap, mremap_thp)
{
	const unsigned int unaligned_off = 16 * DM_PAGE_SIZE;
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, DM_THP_SIZE, true, 30);
	int fd = self->c.fd[0];
	int flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	void *res, *r;
	size_t res_len;
	char *dst;

	if (variant->after)
		DM_MIGRATE_PROVE(&self->c, 0, b, true);

	/* The destination: inside a PROT_NONE reservation of its own. */
	dst = dm_reserve_aligned(2 * DM_THP_SIZE, &res, &res_len);
	ASSERT_NE(NULL, dst);
	dm_ctx_track(&self->c, res, res_len);
	if (variant->unaligned)
		dst += unaligned_off;
	if (variant->dontunmap)
		flags |= MREMAP_DONTUNMAP;
	r = mremap(b->ptr, DM_THP_SIZE, DM_THP_SIZE, flags, dst);
	ASSERT_EQ(dst, r);

	if (variant->dontunmap) {
		/* The old range stays mapped, empty: nothing of it is on the device. */
		ASSERT_EQ(0, dm_snap_local(fd, b->ptr, DM_THP_PAGES));
		ASSERT_PM_DEV(b->ptr, DM_THP_PAGES, 0);
		ASSERT_ZERO(b->ptr, DM_THP_SIZE);
	}

	if (!variant->after) {
		/* Move first, migrate the new location. */
		if (!variant->unaligned)
			ASSERT_TRUE(dm_is_sys_thp(dst, 1));
		ASSERT_EQ(0, dm_stats_reset(fd));
		ASSERT_EQ(0, dm_to_dev(fd, dst, DM_THP_PAGES, b->mirror, &cmd));
		DM_STATS(&self->c, 0, st);
		if (variant->unaligned) {
			/* A PTE-mapped THP: split, and moved as base pages. */
			ASSERT_EQ(0, st.thp_to_dev);
			ASSERT_EQ(DM_THP_PAGES, st.base_to_dev);
		} else {
			ASSERT_EQ(1, st.thp_to_dev);
			ASSERT_EQ(0, st.base_to_dev);
		}
		ASSERT_DATA(b->mirror, DM_THP_SIZE, 30);
	}

	/* The device pages are at the destination now. */
	if (variant->unaligned) {
		ASSERT_DEV_BASE(&self->c, 0, dst, DM_THP_PAGES);
	} else {
		ASSERT_DEV_THP(&self->c, 0, dst, 1);
	}
	/* The device reads them where they are, without moving them. */
	memset(b->mirror, 0xA5, DM_THP_SIZE);
	ASSERT_EQ(0, dm_read(fd, dst, DM_THP_PAGES, b->mirror, &cmd));
	ASSERT_DATA(b->mirror, DM_THP_SIZE, 30);
	ASSERT_EQ(DM_THP_PAGES, dm_snap_local(fd, dst, DM_THP_PAGES));

	/* CPU faults bring the data back from the new address. */
	ASSERT_EQ(0, dm_stats_reset(fd));
	ASSERT_DATA(dst, DM_THP_SIZE, 30);
	DM_STATS(&self->c, 0, st);
	if (variant->unaligned) {
		ASSERT_EQ(0, st.thp_to_sys);
		ASSERT_EQ(DM_THP_PAGES, st.base_to_sys);
	} else {
		SKIP_IF_REAL_ALLOC_FAIL(st);
		ASSERT_EQ(1, st.thp_to_sys);
		ASSERT_EQ(0, st.base_to_sys);
		ASSERT_EQ(1, st.cpu_faults);
		ASSERT_TRUE(dm_is_sys_thp(dst, 1));
	}
	ASSERT_ON_SYS(&self->c, 0, dst, DM_THP_PAGES);
	ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
}

/* ---- mprotect ---- */

DM_FIXTURE(mprot);

FIXTURE_VARIANT(mprot)
{
	size_t off, len;
	bool write;	/* restore PROT_WRITE and write-fault, else read-fault */
};

FIXTURE_VARIANT_ADD(mprot, whole_read) { .off = 0, .len = 2 << 20, .write = false };
FIXTURE_VARIANT_ADD(mprot, whole_write) { .off = 0, .len = 2 << 20, .write = true };
FIXTURE_VARIANT_ADD(mprot, part_read) { .off = 512 << 10, .len = 1 << 20, .write = false };
FIXTURE_VARIANT_ADD(mprot, part_write) { .off = 512 << 10, .len = 1 << 20, .write = true };

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

TEST_F(mprot, mprotect_device_thp)
{
	const size_t off = variant->off, len = variant->len;
	const bool whole = len == DM_THP_SIZE;
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, DM_THP_SIZE, true, 40);
	int fd = self->c.fd[0];

	DM_MIGRATE_PROVE(&self->c, 0, b, true);
	ASSERT_EQ(DM_THP_PAGES, dm_snap_local_write(fd, b->ptr, DM_THP_PAGES));
	ASSERT_EQ(0, mprotect(b->ptr + off, len, PROT_READ));

	/* Still on the device; the protected part is read-only to it. */
	ASSERT_EQ(DM_THP_PAGES, dm_snap_local(fd, b->ptr, DM_THP_PAGES));
	if (whole) {
		ASSERT_PM_DEV_PMD(b->ptr, DM_THP_PAGES, DM_THP_PAGES);
	} else {
		ASSERT_PM_DEV(b->ptr, DM_THP_PAGES, DM_THP_PAGES);
	}
	ASSERT_EQ(0, dm_snap_local_write(fd, b->ptr + off, dm_npages(len)));
	ASSERT_EQ(DM_THP_PAGES - dm_npages(len),
		  dm_snap_local_write(fd, b->ptr, DM_THP_PAGES));
	/* A whole-PMD mprotect keeps the PMD; a partial one splits it. */
	ASSERT_EQ(whole ? DM_THP_PAGES : 0, dm_snap_local_pmd(fd, b->ptr, DM_THP_PAGES));

	/* A CPU write to the read-only part faults, and changes nothing. */
	ASSERT_TRUE(write_segfaults(b->ptr + off + DM_PAGE_SIZE));
	ASSERT_EQ(DM_THP_PAGES, dm_snap_local(fd, b->ptr, DM_THP_PAGES));
	memset(b->mirror, 0xA5, DM_THP_SIZE);
	ASSERT_EQ(0, dm_read(fd, b->ptr, DM_THP_PAGES, b->mirror, &cmd));
	ASSERT_DATA(b->mirror, DM_THP_SIZE, 40);
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ(0, st.cpu_faults);

	if (variant->write) {
		ASSERT_EQ(0, mprotect(b->ptr + off, len, RW));
		dm_fill(b->ptr, DM_THP_SIZE, 41);
		ASSERT_DATA(b->ptr, DM_THP_SIZE, 41);
	} else {
		ASSERT_EQ(-1, dm_verify_at(b->ptr + off, off, len, 40));
		ASSERT_DATA(b->ptr, DM_THP_SIZE, 40);
	}
	DM_STATS(&self->c, 0, st);
	dm_stats_print("after faults", &st);
	if (whole) {
		SKIP_IF_REAL_ALLOC_FAIL(st);
		ASSERT_EQ(1, st.cpu_faults);
		ASSERT_EQ(1, st.thp_to_sys);
		ASSERT_EQ(0, st.base_to_sys);
		/* Back as a THP, and (write) not COW-split by the write. */
		ASSERT_TRUE(dm_is_sys_thp(b->ptr, 1));
	} else if (variant->write) {
		/*
		 * mprotect back to RW merged the vmas again: the PTE-mapped
		 * device folio is covered whole, and one fault brings it back
		 * whole, as a THP mapped by PTEs (kpageflags).
		 */
		SKIP_IF_REAL_ALLOC_FAIL(st);
		ASSERT_EQ(1, st.cpu_faults);
		ASSERT_EQ(1, st.thp_to_sys);
		ASSERT_EQ(0, st.base_to_sys);
		ASSERT_EQ(1, pm_count_folios(b->ptr, DM_THP_PAGES, DM_THP_PAGES));
	} else {
		ASSERT_EQ(0, st.thp_to_sys);
		ASSERT_EQ(DM_THP_PAGES, st.base_to_sys);
		/*
		 * The PTE-mapped device folio comes back page by page; how many
		 * pages one fault takes along is the driver's choice.
		 */
		ASSERT_GE(st.cpu_faults, 1);
		ASSERT_LE(st.cpu_faults, DM_THP_PAGES);
	}
	ASSERT_ON_SYS(&self->c, 0, b->ptr, DM_THP_PAGES);
	ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
	if (!variant->write)
		ASSERT_TRUE(write_segfaults(b->ptr + off));
}

/* ---- a PTE-mapped device THP, faulted on a tail page ---- */

DM_FIXTURE(remerge);

/*
 * mprotect() of half a device THP splits its PMD, and mprotect() back
 * merges the VMAs again: the device folio is PTE-mapped and covered whole.
 * The first CPU access, a read of a tail page, brings all of it back in
 * one fault, as one folio (whole) or page by page (split in collect);
 * the fault page must be among them, and every page must stay locked
 * while it migrates (upstream 7.3: kernel BUG in folio_migrate_ksm(),
 * the head page migrated unlocked).
 */
TEST_F(remerge, tail_fault_brings_folio_back)
{
	const size_t tail = 300 * DM_PAGE_SIZE;
	struct dmirror_thp_stats st;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, DM_THP_SIZE, true, 42);
	int fd = self->c.fd[0];

	DM_MIGRATE_PROVE(&self->c, 0, b, true);
	ASSERT_EQ(0, mprotect(b->ptr + DM_ONEMB, DM_ONEMB, PROT_READ));
	ASSERT_EQ(0, mprotect(b->ptr + DM_ONEMB, DM_ONEMB, RW));
	ASSERT_EQ(DM_THP_PAGES, dm_snap_local(fd, b->ptr, DM_THP_PAGES));
	ASSERT_EQ(0, dm_snap_local_pmd(fd, b->ptr, DM_THP_PAGES));

	ASSERT_EQ(-1, dm_verify_at(b->ptr + tail, tail, DM_PAGE_SIZE, 42));
	DM_STATS(&self->c, 0, st);
	dm_stats_print("after the fault", &st);
	ASSERT_EQ(1, st.cpu_faults);
	ASSERT_EQ(DM_THP_PAGES, st.thp_to_sys * DM_THP_PAGES + st.base_to_sys);
	ASSERT_ON_SYS(&self->c, 0, b->ptr, DM_THP_PAGES);
	ASSERT_DATA(b->ptr, DM_THP_SIZE, 42);
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ(1, st.cpu_faults);
}

/* ---- fork ---- */

DM_FIXTURE(cow);

FIXTURE_VARIANT(cow)
{
	bool thp;
	bool readonly;	/* the device entry was made from a read-only vma */
};

FIXTURE_VARIANT_ADD(cow, thp_writable) { .thp = true, .readonly = false };
FIXTURE_VARIANT_ADD(cow, thp_readable) { .thp = true, .readonly = true };
FIXTURE_VARIANT_ADD(cow, base_writable) { .thp = false, .readonly = false };
FIXTURE_VARIANT_ADD(cow, base_readable) { .thp = false, .readonly = true };

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
 * The child: its own mirror must see device entries it may not write
 * (COW), then it reads the parent's data, writes its own, and must not see
 * the parent's later writes.  Exit status: 0, or the failing step.
 */
static int cow_child(struct dm_buf *b, int c2p, int p2c, bool thp)
{
	int fd = dm_open(0);
	long n;

	if (fd < 0)
		return 10;
	n = dm_snap_local(fd, b->ptr, DM_THP_PAGES);
	if (n != (long)DM_THP_PAGES)
		return 11;
	if (dm_snap_local_write(fd, b->ptr, DM_THP_PAGES) != 0)
		return 12;
	if (thp && dm_snap_local_pmd(fd, b->ptr, DM_THP_PAGES) != (long)DM_THP_PAGES)
		return 13;
	if (pipe_put(c2p, 'a') || pipe_get(p2c, 'b'))
		return 14;
	if (dm_verify(b->ptr, DM_THP_SIZE, 50) != -1)
		return 15;
	dm_fill(b->ptr, DM_THP_SIZE, 51);
	if (dm_verify(b->ptr, DM_THP_SIZE, 51) != -1)
		return 16;
	if (pipe_put(c2p, 'c') || pipe_get(p2c, 'd'))
		return 17;
	if (dm_verify(b->ptr, DM_THP_SIZE, 51) != -1)
		return 18;
	/* and the device sees the child's data in the child's mm */
	memset(b->mirror, 0xA5, DM_THP_SIZE);
	if (dm_read(fd, b->ptr, DM_THP_PAGES, b->mirror, NULL) ||
	    dm_verify(b->mirror, DM_THP_SIZE, 51) != -1)
		return 19;
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(cow, fork_device_thp, 60)
{
	struct dmirror_thp_stats st;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, DM_THP_SIZE, variant->thp, 50);
	int fd = self->c.fd[0];
	int c2p[2], p2c[2], status;
	pid_t pid;

	if (variant->readonly)
		ASSERT_EQ(0, mprotect(b->ptr, DM_THP_SIZE, PROT_READ));
	DM_MIGRATE_PROVE(&self->c, 0, b, variant->thp);
	ASSERT_EQ(variant->readonly ? 0 : DM_THP_PAGES,
		  dm_snap_local_write(fd, b->ptr, DM_THP_PAGES));
	if (variant->readonly)
		ASSERT_EQ(0, mprotect(b->ptr, DM_THP_SIZE, RW));

	ASSERT_EQ(0, pipe(c2p));
	ASSERT_EQ(0, pipe(p2c));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(c2p[0]);
		close(p2c[1]);
		_exit(cow_child(b, c2p[1], p2c[0], variant->thp));
	}
	close(c2p[1]);
	close(p2c[0]);

	/* Fork kept the device entries in the parent, write-protected. */
	ASSERT_EQ(0, pipe_get(c2p[0], 'a'));
	ASSERT_EQ(DM_THP_PAGES, dm_snap_local(fd, b->ptr, DM_THP_PAGES));
	ASSERT_EQ(0, dm_snap_local_write(fd, b->ptr, DM_THP_PAGES));
	if (variant->thp)
		ASSERT_EQ(DM_THP_PAGES, dm_snap_local_pmd(fd, b->ptr, DM_THP_PAGES));
	ASSERT_EQ(0, pipe_put(p2c[1], 'b'));

	/* The child has written: the parent still sees its own data. */
	ASSERT_EQ(0, pipe_get(c2p[0], 'c'));
	ASSERT_DATA(b->ptr, DM_THP_SIZE, 50);
	dm_fill(b->ptr, DM_THP_SIZE, 52);
	ASSERT_DATA(b->ptr, DM_THP_SIZE, 52);
	ASSERT_EQ(0, pipe_put(p2c[1], 'd'));

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child failed at step %d", WEXITSTATUS(status));
	close(c2p[0]);
	close(p2c[1]);

	ASSERT_DATA(b->ptr, DM_THP_SIZE, 52);
	DM_STATS(&self->c, 0, st);
	dm_stats_print("after fork", &st);
	ASSERT_LE(1, st.cpu_faults);
	/* Everything came back (once for both mms, or once per mm). */
	ASSERT_LE(DM_THP_PAGES, st.thp_to_sys * DM_THP_PAGES + st.base_to_sys);
	ASSERT_ON_SYS(&self->c, 0, b->ptr, DM_THP_PAGES);
	ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
}

/* ---- a THP shared with a live child ---- */

DM_FIXTURE(shared);

/*
 * The child, forked after the buffer was filled and before the migration:
 * it waits, then proves that its own mapping moved to the device too
 * (pagemap: migration replaces every mapping of a page), and reads its data
 * back through CPU faults in its own mm.  Exit status: 0, or the failing
 * step.
 */
static int shared_child(struct dm_buf *b, int c2p, int p2c)
{
	long dev;

	if (pipe_put(c2p, 'a') || pipe_get(p2c, 'b'))
		return 10;
	dev = pm_count_dev(b->ptr, DM_THP_PAGES);
	if (dev != -ENOSYS && dev != (long)DM_THP_PAGES)
		return 11;
	if (dm_verify(b->ptr, DM_THP_SIZE, 60) != -1)
		return 12;
	return 0;
}

/*
 * Migrate a THP that a live child shares (neither has written it since
 * fork) to the device, the device answering with one PMD-order folio or,
 * under FAIL_ALLOC, with base pages: the source is split while both
 * processes map it through PMD migration entries.  Both must read their
 * data back, in either order of faults.
 */
static void shared_thp_migrate(struct __test_metadata *_metadata,
			       struct dm_ctx *c, bool fail_alloc)
{
	struct dm_buf *b = DM_FILLED_BUF(c, DM_THP_SIZE, true, 60);
	struct dmirror_thp_stats st;
	int fd = c->fd[0];
	int c2p[2], p2c[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(c2p));
	ASSERT_EQ(0, pipe(p2c));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(c2p[0]);
		close(p2c[1]);
		_exit(shared_child(b, c2p[1], p2c[0]));
	}
	close(c2p[1]);
	close(p2c[0]);
	ASSERT_EQ(0, pipe_get(c2p[0], 'a'));

	if (fail_alloc)
		ASSERT_EQ(0, dm_set_flags(fd, HMM_DMIRROR_FLAG_FAIL_ALLOC));
	ASSERT_EQ(0, dm_stats_reset(fd));
	ASSERT_EQ(0, dm_to_dev(fd, b->ptr, DM_THP_PAGES, b->mirror, NULL));
	ASSERT_DATA(b->mirror, DM_THP_SIZE, 60);
	DM_STATS(c, 0, st);
	dm_stats_print("after the migration", &st);
	if (fail_alloc) {
		ASSERT_EQ(1, st.alloc_fail_inject);
		ASSERT_EQ(1, st.split_migrate);
		ASSERT_EQ(DM_THP_PAGES, st.base_to_dev);
		ASSERT_DEV_BASE(c, 0, b->ptr, DM_THP_PAGES);
	} else {
		ASSERT_EQ(1, st.thp_to_dev);
		ASSERT_DEV_THP(c, 0, b->ptr, 1);
	}
	/* Shared with the child: the device may read it, not write it. */
	ASSERT_EQ(0, dm_snap_local_write(fd, b->ptr, DM_THP_PAGES));

	/* The child faults its copy back first, then the parent. */
	ASSERT_EQ(0, pipe_put(p2c[1], 'b'));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child failed at step %d", WEXITSTATUS(status));
	close(c2p[0]);
	close(p2c[1]);
	ASSERT_DATA(b->ptr, DM_THP_SIZE, 60);
	ASSERT_ON_SYS(c, 0, b->ptr, DM_THP_PAGES);
}

TEST_F_TIMEOUT(shared, thp_moves_whole_with_live_child, 60)
{
	shared_thp_migrate(_metadata, &self->c, false);
}

/*
 * The split fallback with a second mm mapping the THP: every PMD migration
 * entry of the folio must be split before the folio is, not only the one
 * of the mm that migrates (upstream 7.3: kernel BUG in
 * remove_migration_pte()).
 */
TEST_F_TIMEOUT(shared, split_fallback_with_live_child, 60)
{
	shared_thp_migrate(_metadata, &self->c, true);
}

/* ---- MADV_DONTNEED ---- */

DM_FIXTURE(dontneed);

FIXTURE_VARIANT(dontneed)
{
	size_t off, len;
};

FIXTURE_VARIANT_ADD(dontneed, whole) { .off = 0, .len = 2 << 20 };
FIXTURE_VARIANT_ADD(dontneed, first_half) { .off = 0, .len = 1 << 20 };
FIXTURE_VARIANT_ADD(dontneed, middle) { .off = 512 << 10, .len = 1 << 20 };

TEST_F(dontneed, dontneed_device_thp)
{
	const size_t off = variant->off, len = variant->len;
	struct dmirror_thp_stats st;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, DM_THP_SIZE, true, 60);
	int fd = self->c.fd[0];
	size_t i;

	DM_MIGRATE_PROVE(&self->c, 0, b, true);
	ASSERT_EQ(0, madvise(b->ptr + off, len, MADV_DONTNEED));

	/* The dropped part is gone from device and system alike. */
	ASSERT_EQ(0, dm_snap_local(fd, b->ptr + off, dm_npages(len)));
	ASSERT_PM_DEV(b->ptr + off, dm_npages(len), 0);
	ASSERT_PM_PRESENT(b->ptr + off, dm_npages(len), 0);
	ASSERT_EQ(DM_THP_PAGES - dm_npages(len), dm_snap_local(fd, b->ptr, DM_THP_PAGES));
	if (len == DM_THP_SIZE) {
		DM_STATS(&self->c, 0, st);
		ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
	}

	/* It reads as zeroes, the rest as the data. */
	for (i = 0; i < DM_THP_SIZE; i += DM_PAGE_SIZE) {
		if (i >= off && i < off + len) {
			ASSERT_ZERO(b->ptr + i, DM_PAGE_SIZE);
		} else {
			ASSERT_EQ(-1, dm_verify_at(b->ptr + i, i, DM_PAGE_SIZE, 60));
		}
	}
	DM_STATS(&self->c, 0, st);
	/*
	 * Zeroes come from the zero page, not from the device; the rest comes
	 * back as base pages, as many per fault as the driver takes.
	 */
	if (len < DM_THP_SIZE) {
		ASSERT_GE(st.cpu_faults, 1);
		ASSERT_LE(st.cpu_faults, dm_npages(DM_THP_SIZE - len));
	} else {
		ASSERT_EQ(0, st.cpu_faults);
	}
	ASSERT_EQ(0, st.thp_to_sys);
	ASSERT_EQ(dm_npages(DM_THP_SIZE - len), st.base_to_sys);
	ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
	ASSERT_ON_SYS(&self->c, 0, b->ptr, DM_THP_PAGES);
}

/* ---- exit with device THPs mapped ---- */

DM_FIXTURE(exit);

FIXTURE_VARIANT(exit)
{
	bool sigkill;
};

FIXTURE_VARIANT_ADD(exit, exit) { .sigkill = false };
FIXTURE_VARIANT_ADD(exit, sigkill) { .sigkill = true };

/* The child: 2 device THPs, then exit or wait to be killed. 4: no THP. */
static int exit_child(int ready)
{
	struct dmirror_thp_stats st;
	struct dm_buf b;
	int fd = dm_open(0);

	if (fd < 0 || dm_buf_alloc(&b, 2 * DM_THP_SIZE, RW, DM_THP_ON))
		return 1;
	dm_fill(b.ptr, b.size, 70);
	if (!dm_is_sys_thp(b.ptr, 2))
		return 4;
	if (dm_to_dev(fd, b.ptr, dm_npages(b.size), b.mirror, NULL))
		return 2;
	if (dm_stats(fd, &st) || st.thp_to_dev != 2 ||
	    dm_snap_local_pmd(fd, b.ptr, dm_npages(b.size)) != (long)dm_npages(b.size))
		return 3;
	if (ready >= 0) {
		if (pipe_put(ready, 'r'))
			return 5;
		for (;;)
			pause();
	}
	return 0;	/* no munmap, no close */
}

TEST_F_TIMEOUT(exit, exit_with_device_thps, 60)
{
	struct dmirror_thp_stats st;
	int p[2], status;
	pid_t pid;

	if (!thp_is_enabled())
		SKIP(return, "THP disabled");
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(p[0]);
		_exit(exit_child(variant->sigkill ? p[1] : -1));
	}
	close(p[1]);
	if (variant->sigkill) {
		char c = 0;

		if (read(p[0], &c, 1) == 1 && c == 'r') {
			/* resident while the child lives */
			DM_STATS(&self->c, 0, st);
			ASSERT_EQ(2 * DM_THP_PAGES,
				  st.resident_pages - self->c.base[0].resident_pages);
			kill(pid, SIGKILL);
		}
	}
	close(p[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 4)
		SKIP(return, "the child got no system THPs");
	if (variant->sigkill) {
		ASSERT_TRUE(WIFSIGNALED(status));
		ASSERT_EQ(SIGKILL, WTERMSIG(status));
	} else {
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(0, WEXITSTATUS(status));
	}
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ(2, st.thp_to_dev);
	/* Nothing came back: the pages were freed, not migrated. */
	ASSERT_EQ(0, st.thp_to_sys + st.base_to_sys);
	ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
	ASSERT_TRUE(dm_pool_balanced(&st));
}

TEST_HARNESS_MAIN
