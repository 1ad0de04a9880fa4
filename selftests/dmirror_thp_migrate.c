// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp selftests: migration to the device and back.
 *
 * round_trip, one body over a matrix, as tools/testing/selftests/mm/cow.c:
 *   source     a THP with data, a hole, the huge zero page, 4K pages
 *   fail_alloc none, on the way to the device, on the way back
 *   way back   MIGRATE_TO_SYS, or CPU faults on every page
 *   placement  the aligned middle THP of three; [1 MB, 5 MB), half of
 *              each outer THP; the middle THP across a vma edge
 * It proves that every PMD-sized, PMD-covered part moves whole both ways
 * (the device's counters, SNAPSHOT's PMD bit, pagemap, and /proc/vmstat
 * seeing no split) and that everything else moves page by page (a forced
 * split that /proc/vmstat sees), with the data intact, and nothing of the
 * range left on the device.
 *
 * Then: 8 x 2 MB in one call, THP and base-page vmas in one range, and
 * both devices at once.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"

#include <sys/mman.h>

#include "dmirror_thp_helpers.h"
#include "dmirror_thp_test.h"

#define RW	(PROT_READ | PROT_WRITE)

/* ---- the round trip, as a matrix ---- */

enum src { SRC_THP, SRC_HOLE, SRC_ZERO, SRC_BASE };
enum fa { FA_NONE, FA_TODEV, FA_BACK };
enum way { WAY_IOCTL, WAY_FAULT };
enum place { PLACE_ALIGNED, PLACE_OFFSET, PLACE_VMA_EDGE };

DM_FIXTURE(mig);

FIXTURE_VARIANT(mig)
{
	enum src src;
	enum fa fa;
	enum way way;
	enum place place;
};

#define MIG(s, f, w, p)							\
	FIXTURE_VARIANT_ADD(mig, s##_##p##_failalloc_##f##_back_by_##w) { \
		.src = SRC_##s, .fa = FA_##f, .way = WAY_##w,		\
		.place = PLACE_##p,					\
	};
#define MIG_PLACES(s, f, w)						\
	MIG(s, f, w, ALIGNED) MIG(s, f, w, OFFSET) MIG(s, f, w, VMA_EDGE)
#define MIG_WAYS(s, f)	MIG_PLACES(s, f, IOCTL) MIG_PLACES(s, f, FAULT)
#define MIG_FAS(s)	MIG_WAYS(s, NONE) MIG_WAYS(s, TODEV) MIG_WAYS(s, BACK)

MIG_FAS(THP)
MIG_FAS(HOLE)
MIG_FAS(ZERO)
MIG_FAS(BASE)

#define BUF_THPS	3
#define SEED		11

/* The migrated range of a placement, in the 3-THP buffer. */
static size_t range_off(enum place p)
{
	return p == PLACE_OFFSET ? DM_ONEMB : DM_THP_SIZE;
}

static size_t range_len(enum place p)
{
	return p == PLACE_OFFSET ? 2 * DM_THP_SIZE : DM_THP_SIZE;
}

/*
 * A source of data in the buffer, or none; then the vma edge, which splits
 * a PMD that maps across it before anything is migrated.
 */
static void mig_source(struct __test_metadata *_metadata, const FIXTURE_VARIANT(mig) *v,
		      struct dm_buf *b)
{
	size_t i;

	switch (v->src) {
	case SRC_THP:
	case SRC_BASE:
		dm_fill(b->ptr, b->size, SEED);
		if (v->src == SRC_THP)
			REQUIRE_SYS_THP(b->ptr, BUF_THPS);
		else
			ASSERT_EQ(0, smaps_anon_huge_kb(b->ptr));
		break;
	case SRC_ZERO:
		/* One read per PMD maps the huge zero page. */
		for (i = 0; i < BUF_THPS; i++)
			ASSERT_EQ(0, *(volatile int *)(b->ptr + i * DM_THP_SIZE));
		ASSERT_PM_PRESENT(b->ptr, dm_npages(b->size), dm_npages(b->size));
		ASSERT_EQ(0, smaps_anon_huge_kb(b->ptr));
		break;
	case SRC_HOLE:
		ASSERT_PM_PRESENT(b->ptr, dm_npages(b->size), 0);
		break;
	}
	if (v->place == PLACE_VMA_EDGE)
		ASSERT_EQ(0, madvise(b->ptr + 3 * DM_ONEMB, 3 * DM_ONEMB,
				     MADV_DONTFORK));
}

/* What a range reads as: the data it was filled with, or zeroes. */
static long mig_verify(const FIXTURE_VARIANT(mig) *v, const char *p,
		       size_t off, size_t len)
{
	if (v->src == SRC_HOLE || v->src == SRC_ZERO)
		return dm_verify_zero(p, len);
	return dm_verify_at(p, off, len, SEED);
}

TEST_F_TIMEOUT(mig, round_trip, 120)
{
	const FIXTURE_VARIANT(mig) *v = variant;
	const size_t off = range_off(v->place), len = range_len(v->place);
	const size_t np = dm_npages(len);
	struct dm_buf *b = DM_BUF(&self->c, BUF_THPS * DM_THP_SIZE, RW,
				  v->src == SRC_BASE ? DM_THP_OFF : DM_THP_ON);
	char *start = b->ptr + off, *mid = b->ptr + DM_THP_SIZE;
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	struct dm_splits s0;
	int fd = self->c.fd[0];
	size_t whole, base, i;
	bool split_to_dev, split_back;

	mig_source(_metadata, v, b);
	if (_metadata->exit_code == KSFT_SKIP)
		return;

	/*
	 * The middle THP moves whole where the range covers it and it is
	 * still PMD-mapped; everything else in the range page by page.  The
	 * half-covered THPs of PLACE_OFFSET must be split on the way.
	 */
	whole = v->src != SRC_BASE && v->place != PLACE_VMA_EDGE;
	split_to_dev = v->place == PLACE_OFFSET &&
		       (v->src == SRC_THP || v->src == SRC_ZERO);
	split_to_dev |= v->place == PLACE_VMA_EDGE && v->src == SRC_THP;
	/* FAIL_ALLOC fires on the first large allocation, if there is one. */
	if (v->fa == FA_TODEV && whole) {
		whole = 0;
		split_to_dev |= v->src == SRC_THP || v->src == SRC_ZERO;
	}
	base = np - whole * DM_THP_PAGES;

	/* To the device. */
	if (v->fa == FA_TODEV)
		ASSERT_EQ(0, dm_set_flags(fd, HMM_DMIRROR_FLAG_FAIL_ALLOC));
	s0 = DM_SPLITS();
	ASSERT_EQ(0, dm_to_dev(fd, start, np, b->mirror, &cmd));
	ASSERT_EQ(np, cmd.cpages);
	ASSERT_EQ(-1, mig_verify(v, b->mirror, off, len));
	DM_STATS(&self->c, 0, st);
	dm_stats_print("to the device", &st);
	ASSERT_EQ(whole, st.thp_to_dev);
	ASSERT_EQ(base, st.base_to_dev);
	ASSERT_EQ(v->fa == FA_TODEV && v->src != SRC_BASE &&
		  v->place != PLACE_VMA_EDGE, st.alloc_fail_inject);
	ASSERT_EQ(v->fa == FA_TODEV && v->src == SRC_THP &&
		  v->place != PLACE_VMA_EDGE, st.split_migrate);
	ASSERT_EQ(np, dm_snap_local(fd, start, np));
	ASSERT_EQ(whole * DM_THP_PAGES, dm_snap_local_pmd(fd, start, np));
	ASSERT_PM_DEV_PMD(start, np, np);
	if (split_to_dev) {
		ASSERT_SPLIT(s0);
	} else {
		ASSERT_NO_SPLIT(s0);
	}
	/* Outside the range: in system memory. */
	ASSERT_EQ(0, dm_snap_local(fd, b->ptr, dm_npages(off)));

	/* And back. */
	ASSERT_EQ(0, dm_stats_reset(fd));
	if (v->fa == FA_BACK)
		ASSERT_EQ(0, dm_set_flags(fd, HMM_DMIRROR_FLAG_FAIL_ALLOC));
	split_back = v->fa == FA_BACK && whole;
	s0 = DM_SPLITS();
	if (v->way == WAY_FAULT) {
		for (i = 0; i < len; i += DM_PAGE_SIZE)
			ASSERT_EQ(-1, mig_verify(v, start + i, off + i, DM_PAGE_SIZE))
				TH_LOG("page %zu", i / DM_PAGE_SIZE);
	} else {
		ASSERT_EQ(0, dm_to_sys(fd, start, np, &cmd));
		ASSERT_EQ(np, cmd.cpages);
	}
	DM_STATS(&self->c, 0, st);
	dm_stats_print("back", &st);
	if (!split_back)
		SKIP_IF_REAL_ALLOC_FAIL(st);
	ASSERT_EQ(split_back, st.alloc_fail_inject);
	ASSERT_EQ(whole - split_back, st.thp_to_sys);
	ASSERT_EQ(base + split_back * DM_THP_PAGES, st.base_to_sys);
	ASSERT_EQ(split_back, v->way == WAY_FAULT ? st.split_fault :
						    st.split_migrate);
	ASSERT_EQ(v->way == WAY_FAULT ? whole + base : 0, st.cpu_faults);
	if (split_back) {
		ASSERT_SPLIT(s0);
	} else {
		ASSERT_NO_SPLIT(s0);
	}
	ASSERT_ON_SYS(&self->c, 0, start, np);
	if (whole && !split_back)
		ASSERT_TRUE(dm_is_sys_thp(mid, 1));
	ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);

	/* Every byte, in the range and around it. */
	ASSERT_EQ(-1, mig_verify(v, b->ptr, 0, b->size));
	/* And the device reads the same from system memory. */
	memset(b->mirror, 0xA5, len);
	ASSERT_EQ(0, dm_read(fd, start, np, b->mirror, &cmd));
	ASSERT_EQ(-1, mig_verify(v, b->mirror, off, len));
}

/* ---- several THPs ---- */

DM_FIXTURE(thp);

/* 8 x 2 MB in one MIGRATE_TO_DEV, then back in one MIGRATE_TO_SYS. */
TEST_F_TIMEOUT(thp, migrate_8_thps_one_call, 120)
{
	const size_t n = 8, size = n * DM_THP_SIZE, np = dm_npages(size);
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, size, true, 6);
	struct dm_splits s0;
	int fd = self->c.fd[0];

	DM_MIGRATE_PROVE(&self->c, 0, b, true);
	ASSERT_DATA(b->mirror, size, 6);

	s0 = DM_SPLITS();
	ASSERT_EQ(0, dm_to_sys(fd, b->ptr, np, &cmd));
	ASSERT_EQ(np, cmd.cpages);
	DM_STATS(&self->c, 0, st);
	SKIP_IF_REAL_ALLOC_FAIL(st);
	ASSERT_EQ(n, st.thp_to_sys);
	ASSERT_EQ(0, st.base_to_sys);
	ASSERT_EQ(0, st.cpu_faults);
	ASSERT_TRUE(dm_is_sys_thp(b->ptr, n));
	ASSERT_ON_SYS(&self->c, 0, b->ptr, np);
	ASSERT_NO_SPLIT(s0);
	ASSERT_DATA(b->ptr, size, 6);
}

/*
 * One range, three vmas: [THP][2 MB of base pages (MADV_NOHUGEPAGE)][THP].
 * The THPs move whole, the middle as base pages.
 */
TEST_F(thp, migrate_mixed_thp_and_base)
{
	const size_t size = 3 * DM_THP_SIZE, np = dm_npages(size);
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	struct dm_buf *b = DM_BUF(&self->c, size, RW, DM_THP_ON);
	char *mid = b->ptr + DM_THP_SIZE, *last = b->ptr + 2 * DM_THP_SIZE;
	struct dm_splits s0;
	int fd = self->c.fd[0];

	ASSERT_EQ(0, madvise(mid, DM_THP_SIZE, MADV_NOHUGEPAGE));
	dm_fill(b->ptr, size, 7);
	REQUIRE_SYS_THP(b->ptr, 1);
	REQUIRE_SYS_THP(last, 1);
	ASSERT_EQ(0, smaps_anon_huge_kb(mid));

	s0 = DM_SPLITS();
	ASSERT_EQ(0, dm_to_dev(fd, b->ptr, np, b->mirror, &cmd));
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ(2, st.thp_to_dev);
	ASSERT_EQ(DM_THP_PAGES, st.base_to_dev);
	ASSERT_DEV_THP(&self->c, 0, b->ptr, 1);
	ASSERT_DEV_BASE(&self->c, 0, mid, DM_THP_PAGES);
	ASSERT_DEV_THP(&self->c, 0, last, 1);
	ASSERT_DATA(b->mirror, size, 7);

	ASSERT_EQ(0, dm_stats_reset(fd));
	ASSERT_EQ(0, dm_to_sys(fd, b->ptr, np, &cmd));
	ASSERT_EQ(np, cmd.cpages);
	DM_STATS(&self->c, 0, st);
	SKIP_IF_REAL_ALLOC_FAIL(st);
	ASSERT_EQ(2, st.thp_to_sys);
	ASSERT_EQ(DM_THP_PAGES, st.base_to_sys);
	ASSERT_ON_SYS(&self->c, 0, b->ptr, np);
	ASSERT_NO_SPLIT(s0);
	ASSERT_DATA(b->ptr, size, 7);
}

/*
 * Both devices at once: a THP on each, counted on its own device only and
 * mirrored as local by its own device only.  Device 1 reading the THP of
 * device 0 gets the data (and brings it back from device 0).
 */
TEST_F(thp, migrate_two_devices)
{
	struct dmirror_thp_stats s0, s1;
	struct hmm_dmirror_cmd cmd;
	struct dm_buf *a = DM_FILLED_BUF(&self->c, DM_THP_SIZE, true, 9);
	struct dm_buf *b = DM_FILLED_BUF(&self->c, DM_THP_SIZE, true, 10);
	int fd0 = self->c.fd[0], fd1 = self->c.fd[1];

	DM_MIGRATE_PROVE(&self->c, 0, a, true);
	DM_MIGRATE_PROVE(&self->c, 1, b, true);
	ASSERT_EQ(0, dm_snap_local(fd1, a->ptr, DM_THP_PAGES));
	ASSERT_EQ(0, dm_snap_local(fd0, b->ptr, DM_THP_PAGES));
	ASSERT_DATA(a->mirror, DM_THP_SIZE, 9);
	ASSERT_DATA(b->mirror, DM_THP_SIZE, 10);

	/* Device 1 reads device 0's THP. */
	memset(a->mirror, 0xA5, DM_THP_SIZE);
	ASSERT_EQ(0, dm_read(fd1, a->ptr, DM_THP_PAGES, a->mirror, &cmd));
	ASSERT_EQ(DM_THP_PAGES, cmd.cpages);
	ASSERT_DATA(a->mirror, DM_THP_SIZE, 9);
	DM_STATS(&self->c, 0, s0);
	ASSERT_LE(1, s0.cpu_faults);
	ASSERT_EQ(0, dm_snap_local(fd0, a->ptr, DM_THP_PAGES));
	ASSERT_EQ(self->c.base[0].resident_pages, s0.resident_pages);

	ASSERT_EQ(0, dm_to_sys(fd1, b->ptr, DM_THP_PAGES, &cmd));
	ASSERT_EQ(DM_THP_PAGES, cmd.cpages);
	DM_STATS(&self->c, 1, s1);
	ASSERT_EQ(self->c.base[1].resident_pages, s1.resident_pages);
	ASSERT_ON_SYS(&self->c, 1, b->ptr, DM_THP_PAGES);
	ASSERT_DATA(a->ptr, DM_THP_SIZE, 9);
	ASSERT_DATA(b->ptr, DM_THP_SIZE, 10);
}

/*
 * A device PMD that migration installs deposits a page table for a later
 * split, and zapping the PMD must free it.  Rounds of holes and of THPs
 * migrated to the device and unmapped there, or brought back first, leave
 * nr_page_table_pages where it was.  (Upstream leaked one on an error path
 * of the insert, 2c6f81d58741; this watches every path a test can reach.)
 * Each round maps the same addresses afresh, so that the upper levels of
 * the page table stay as they are and only a leak can move the count.
 */
TEST_F_TIMEOUT(thp, page_tables_balanced, 120)
{
	const size_t nthp = 4, size = nthp * DM_THP_SIZE, np = dm_npages(size);
	const int rounds = 32;
	struct dm_buf *b = DM_BUF(&self->c, size, RW, DM_THP_ON);
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	int round, fd = self->c.fd[0];
	long before = -1, after;

	for (round = -1; round < rounds; round++) {
		ASSERT_EQ(b->ptr, mmap(b->ptr, size, RW,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				       -1, 0));
		ASSERT_EQ(0, madvise(b->ptr, size, MADV_HUGEPAGE));
		/* Odd rounds: THPs with data; even: holes, filled as PMDs. */
		if (round & 1)
			dm_fill(b->ptr, size, round);
		ASSERT_EQ(0, dm_to_dev(fd, b->ptr, np, b->mirror, &cmd));
		ASSERT_DEV_THP(&self->c, 0, b->ptr, nthp);
		if (round & 2)
			ASSERT_EQ(0, dm_to_sys(fd, b->ptr, np, &cmd));
		ASSERT_EQ(0, munmap(b->ptr, size));
		/* Round -1 warms up: the count starts after it. */
		if (round < 0)
			before = vmstat_get_exact("nr_page_table_pages");
	}
	after = vmstat_get_exact("nr_page_table_pages");
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ((rounds + 1) * nthp, st.thp_to_dev);
	ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
	/* A leak is a table per PMD of one kind of round at least: 32. */
	ASSERT_LE(0, before);
	ASSERT_LE(after, before + 2)
		TH_LOG("nr_page_table_pages %ld after round 0, %ld after %d rounds",
		       before, after, rounds);
}

/*
 * Holes in a range whose page table stops above the PMD level (a fresh,
 * 1 GB-aligned mapping: no PUD entry yet): the page walk reports all of it
 * as one hole, which must become one device THP per PMD (upstream 7.3:
 * only the first one).  The module migrates several PMDs per window.
 */
TEST_F_TIMEOUT(thp, holes_under_an_empty_pud, 60)
{
	const size_t nthp = 4, size = nthp * DM_THP_SIZE, gb = 1UL << 30;
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	char *res, *p, *mirror;

	res = dm_ctx_track(&self->c, mmap(NULL, 2 * gb, PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				-1, 0), 2 * gb);
	ASSERT_NE(MAP_FAILED, res);
	p = (char *)(((uintptr_t)res + gb - 1) & ~(gb - 1));
	ASSERT_EQ(p, mmap(p, size, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			  -1, 0));
	ASSERT_EQ(0, madvise(p, size, MADV_HUGEPAGE));
	mirror = dm_ctx_track(&self->c, mmap(NULL, size, RW,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), size);
	ASSERT_NE(MAP_FAILED, mirror);

	ASSERT_EQ(0, dm_to_dev(self->c.fd[0], p, dm_npages(size), mirror, &cmd));
	DM_STATS(&self->c, 0, st);
	dm_stats_print("after the migration", &st);
	ASSERT_EQ(nthp, st.thp_to_dev);
	ASSERT_DEV_THP(&self->c, 0, p, nthp);
	ASSERT_ZERO(mirror, size);
	ASSERT_ZERO(p, size);
}

/* ---- a device read that starts inside a device THP ---- */

DM_FIXTURE(read);

/*
 * The device reads the second half of a device THP, then a window that
 * starts in its middle and ends in the next one: hmm_range_fault() must
 * report each page of the device PMD from where the range starts
 * (upstream 7.3 reports the PMD's first pages), and nothing migrates.
 */
TEST_F(read, inside_a_device_thp)
{
	const size_t half = DM_THP_SIZE / 2;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, 2 * DM_THP_SIZE, true, 190);
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	int fd2 = dm_open(0);

	ASSERT_LE(0, fd2);
	DM_MIGRATE_PROVE(&self->c, 0, b, true);
	/* A second file: its mirror has seen nothing of the range yet. */
	memset(b->mirror, 0, b->size);
	ASSERT_EQ(0, dm_read(fd2, b->ptr + half, dm_npages(half), b->mirror, &cmd));
	ASSERT_EQ(-1, dm_verify_at(b->mirror, half, half, 190));
	close(fd2);
	fd2 = dm_open(0);
	ASSERT_LE(0, fd2);
	memset(b->mirror, 0, b->size);
	ASSERT_EQ(0, dm_read(fd2, b->ptr + half, dm_npages(DM_THP_SIZE),
			     b->mirror, &cmd));
	ASSERT_EQ(-1, dm_verify_at(b->mirror, half, DM_THP_SIZE, 190));
	close(fd2);
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ(0, st.cpu_faults + st.thp_to_sys + st.base_to_sys);
	ASSERT_DEV_THP(&self->c, 0, b->ptr, 2);
}

TEST_HARNESS_MAIN
