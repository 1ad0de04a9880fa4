// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp-tests-life, bad input: included by dmirror_thp_life.c,
 * which declares the fixtures; not built on its own.
 *
 * Every ioctl with bad addresses, unaligned values, 0 and overflowing
 * npages, unmapped and partly unmapped ranges, PROT_NONE, read-only,
 * file-backed, shared and hugetlb vmas, bad pointers, bad flags and a bad
 * stats header: the documented errno, and nothing moved.
 */

/* ---- bad input: ranges ---- */

/*
 * expected outcome of one command, by its name: XP(READ, EFAULT); a
 * command not named is not tested; XP_OK success, else the errno
 */
#define XP(cmd, want)	[DM_IOC_##cmd] = (want)
#define XP_OK	-1
/* success, and the pages with no vma read as HMM_DMIRROR_PROT_ERROR */
#define XP_SNAPERR	-3
/* success, and the pages with no vma read as 0: nothing present (CPU_MAP) */
#define XP_CPUNONE	-4
#define ALL_EINVAL { XP(READ, EINVAL), XP(WRITE, EINVAL),		\
		     XP(MIGRATE_TO_DEV, EINVAL), XP(MIGRATE_TO_SYS, EINVAL), \
		     XP(SNAPSHOT, EINVAL), XP(EXCLUSIVE, EINVAL),	\
		     XP(CHECK_EXCLUSIVE, EINVAL), XP(CPU_MAP, EINVAL) }
/* no vma under the range */
#define NO_VMA { XP(READ, EFAULT), XP(WRITE, EFAULT),			\
		 XP(MIGRATE_TO_DEV, EINVAL), XP(MIGRATE_TO_SYS, EINVAL),	\
		 XP(SNAPSHOT, XP_SNAPERR), XP(EXCLUSIVE, EINVAL),		\
		 XP(CHECK_EXCLUSIVE, EINVAL), XP(CPU_MAP, XP_CPUNONE) }

enum range_kind {
	R_UNALIGNED, R_ZERO, R_TOO_MANY, R_OVERFLOW, R_UNMAPPED, R_HALF_UNMAPPED,
	R_PROT_NONE, R_READ_ONLY, R_MEMFD_SHARED, R_MEMFD_PRIVATE,
	R_ANON_SHARED, R_HUGETLB, R_NULL, R_KERNEL,
};

FIXTURE_VARIANT(badrange)
{
	enum range_kind kind;
	int exp[DM_IOC_NR_CMD];
};

#define BADRANGE(name, k, ...)						\
	FIXTURE_VARIANT_ADD(badrange, name) { .kind = (k), .exp = __VA_ARGS__ }

/*
 * The expected outcome of each command that takes a range, by name.
 * READ_UNLOCKED answers what READ answers (uapi/): the test takes READ's
 * for it.
 *
 * A malformed range: every command refuses it before looking at the mm.
 * Above TASK_SIZE (kernel_addr) is not a user range at all.
 */
BADRANGE(unaligned_addr, R_UNALIGNED, ALL_EINVAL);
BADRANGE(zero_npages, R_ZERO, ALL_EINVAL);
BADRANGE(too_many_npages, R_TOO_MANY, ALL_EINVAL);
BADRANGE(overflowing_range, R_OVERFLOW, ALL_EINVAL);
BADRANGE(kernel_addr, R_KERNEL, ALL_EINVAL);

/*
 * No vma: READ and WRITE fault like the CPU, EFAULT.  The migrations and
 * the exclusive commands look at the vmas first: EINVAL.  SNAPSHOT, as the
 * stock hmm-tests (which must pass unchanged) expect, succeeds and reports
 * HMM_DMIRROR_PROT_ERROR for a page with no vma; CPU_MAP reports nothing
 * present.
 */
BADRANGE(unmapped, R_UNMAPPED, NO_VMA);
BADRANGE(null_addr, R_NULL, NO_VMA);
BADRANGE(partly_unmapped, R_HALF_UNMAPPED, NO_VMA);

/*
 * Protections: as test_hmm, the device faults like the CPU.  CPU_MAP only
 * reads the page table, whatever maps the range.
 */
BADRANGE(prot_none, R_PROT_NONE,
	 { XP(READ, EFAULT), XP(WRITE, EFAULT), XP(MIGRATE_TO_DEV, EINVAL),
	   XP(EXCLUSIVE, EINVAL), XP(CPU_MAP, XP_OK) });
BADRANGE(read_only, R_READ_ONLY,
	 { XP(READ, XP_OK), XP(WRITE, EPERM), XP(SNAPSHOT, XP_OK),
	   XP(CPU_MAP, XP_OK) });

/* Not private anonymous memory: it cannot move to the device. */
BADRANGE(memfd_shared, R_MEMFD_SHARED,
	 { XP(READ, XP_OK), XP(MIGRATE_TO_DEV, EINVAL), XP(SNAPSHOT, XP_OK),
	   XP(EXCLUSIVE, EINVAL), XP(CPU_MAP, XP_OK) });
BADRANGE(memfd_private, R_MEMFD_PRIVATE,
	 { XP(READ, XP_OK), XP(MIGRATE_TO_DEV, EINVAL), XP(CPU_MAP, XP_OK) });
BADRANGE(anon_shared, R_ANON_SHARED,
	 { XP(READ, XP_OK), XP(WRITE, XP_OK), XP(MIGRATE_TO_DEV, EINVAL),
	   XP(SNAPSHOT, XP_OK), XP(EXCLUSIVE, EINVAL), XP(CPU_MAP, XP_OK) });
BADRANGE(hugetlb, R_HUGETLB,
	 { XP(MIGRATE_TO_DEV, EINVAL), XP(EXCLUSIVE, EINVAL),
	   XP(CPU_MAP, XP_OK) });

TEST_F_TIMEOUT(badrange, bad_range, 60)
{
	const size_t size = DM_THP_SIZE;
	struct dmirror_thp_stats st;
	uint64_t addr, npages = dm_npages(size);
	long old_hp = -1;
	char *p = NULL, *mirror;
	int op, memfd = -1;

	mirror = dm_ctx_track(&self->c, mmap(NULL, size, RW,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), size);
	ASSERT_NE(MAP_FAILED, mirror);
	memset(mirror, 0, size);

	switch (variant->kind) {
	case R_UNALIGNED:
	case R_ZERO:
	case R_TOO_MANY:
	case R_UNMAPPED:
	case R_HALF_UNMAPPED:
	case R_PROT_NONE:
	case R_READ_ONLY:
		p = DM_BUF(&self->c, size, RW, DM_THP_ON)->ptr;
		dm_fill(p, size, 120);
		addr = (uintptr_t)p;
		if (variant->kind == R_UNALIGNED) {
			addr += 8;
			npages = 1;
		}
		if (variant->kind == R_ZERO)
			npages = 0;
		if (variant->kind == R_TOO_MANY)
			npages = DMIRROR_THP_MAX_PAGES + 1;
		if (variant->kind == R_UNMAPPED)
			ASSERT_EQ(0, munmap(p, size));
		if (variant->kind == R_HALF_UNMAPPED) {
			ASSERT_EQ(0, munmap(p + DM_PAGE_SIZE, size - DM_PAGE_SIZE));
			npages = 2;
		}
		if (variant->kind == R_PROT_NONE)
			ASSERT_EQ(0, mprotect(p, size, PROT_NONE));
		if (variant->kind == R_READ_ONLY)
			ASSERT_EQ(0, mprotect(p, size, PROT_READ));
		break;
	case R_OVERFLOW:
		addr = ~0ULL & ~(DM_PAGE_SIZE - 1);
		npages = 2;
		break;
	case R_NULL:
		addr = 0;
		npages = 1;
		break;
	case R_KERNEL:
		addr = 0xffff888000000000ULL;	/* kernel space on x86_64 and arm64 */
		npages = 1;
		break;
	case R_MEMFD_SHARED:
	case R_MEMFD_PRIVATE:
		memfd = memfd_create("dmirror-thp", 0);
		ASSERT_LE(0, memfd);
		ASSERT_EQ(0, ftruncate(memfd, size));
		p = dm_ctx_track(&self->c, mmap(NULL, size,
				variant->kind == R_MEMFD_SHARED ? RW : PROT_READ,
				variant->kind == R_MEMFD_SHARED ? MAP_SHARED : MAP_PRIVATE,
				memfd, 0), size);
		ASSERT_NE(MAP_FAILED, p);
		close(memfd);
		(void)dm_touch_read(p, size, DM_PAGE_SIZE);
		addr = (uintptr_t)p;
		break;
	case R_ANON_SHARED:
		p = dm_ctx_track(&self->c, mmap(NULL, size, RW,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0), size);
		ASSERT_NE(MAP_FAILED, p);
		dm_fill(p, size, 121);
		addr = (uintptr_t)p;
		break;
	case R_HUGETLB:
		if (!dm_hugetlb_reserve(&old_hp))
			SKIP({ dm_hugetlb_restore(old_hp); return; },
			     "cannot reserve a 2 MB huge page (nr_hugepages)");
		p = mmap(NULL, size, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
			 -1, 0);
		if (p == MAP_FAILED) {
			dm_hugetlb_restore(old_hp);
			SKIP(return, "MAP_HUGETLB failed: %s", strerror(errno));
		}
		dm_ctx_track(&self->c, p, size);
		dm_fill(p, size, 122);
		addr = (uintptr_t)p;
		break;
	default:
		ASSERT_TRUE(false);
	}

	for (op = 0; op < DM_IOC_NR_CMD; op++) {
		const struct dm_ioc *ioc = &dm_iocs[op];
		int col = op == DM_IOC_READ_UNLOCKED ? DM_IOC_READ : op;
		int want = variant->exp[col];
		int ret;

		if (ioc->arg != DM_ARG_RANGE || !want)
			continue;
		ret = dm_cmd(self->c.fd[0], ioc->nr, addr, (uintptr_t)mirror,
			     npages, NULL);
		if (want == XP_OK) {
			EXPECT_EQ(0, ret) TH_LOG("%s: %s", ioc->name, strerror(-ret));
		} else if (want == XP_SNAPERR) {
			const unsigned char *m = (const unsigned char *)mirror;
			uint64_t i, first = variant->kind == R_HALF_UNMAPPED;

			EXPECT_EQ(0, ret) TH_LOG("%s: %s", ioc->name, strerror(-ret));
			for (i = first; !ret && i < npages; i++)
				EXPECT_EQ(HMM_DMIRROR_PROT_ERROR, m[i]) TH_LOG("page %llu",
									 (unsigned long long)i);
			/* the mapped page (it may have been migrated above) */
			if (first && !ret)
				EXPECT_NE(HMM_DMIRROR_PROT_ERROR, m[0]);
		} else if (want == XP_CPUNONE) {
			const unsigned char *m = (const unsigned char *)mirror;
			uint64_t i, first = variant->kind == R_HALF_UNMAPPED;

			EXPECT_EQ(0, ret) TH_LOG("%s: %s", ioc->name, strerror(-ret));
			for (i = first; !ret && i < npages; i++)
				EXPECT_EQ(0, m[i]) TH_LOG("page %llu",
							  (unsigned long long)i);
		} else {
			EXPECT_EQ(-want, ret)
				TH_LOG("%s: want %s, got %s", ioc->name,
				       strerror(want), ret ? strerror(-ret) : "success");
		}
	}
	/*
	 * Nothing moved to the device, and the data is where it was.  (A
	 * partly unmapped range may have moved its mapped head before the
	 * hole was found: the ABI does not promise all or nothing.)
	 */
	DM_STATS(&self->c, 0, st);
	if (variant->kind != R_HALF_UNMAPPED) {
		EXPECT_EQ(0, st.thp_to_dev + st.base_to_dev);
		EXPECT_EQ(self->c.base[0].resident_pages, st.resident_pages);
	}
	if (variant->kind == R_HUGETLB) {
		EXPECT_EQ(-1, dm_verify(p, size, 122));
		munmap(p, size);
		self->c.nextra--;
		dm_hugetlb_restore(old_hp);
	}
	if (variant->kind == R_ANON_SHARED)
		EXPECT_EQ(-1, dm_verify(p, size, 121));
	if (variant->kind == R_READ_ONLY || variant->kind == R_PROT_NONE) {
		ASSERT_EQ(0, mprotect(p, size, PROT_READ));
		EXPECT_EQ(-1, dm_verify(p, size, 120));
	}
}

/* ---- bad input: arguments ---- */

/*
 * A NULL or unmapped ioctl argument: EFAULT from every command of struct
 * hmm_dmirror_cmd, and from STATS (the rows of dm_iocs[] up to it).
 */
TEST_F(badarg, bad_ioctl_argument)
{
	void *hole = mmap(NULL, DM_PAGE_SIZE, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned int i;

	ASSERT_NE(MAP_FAILED, hole);
	for (i = 0; i <= DM_IOC_STATS; i++) {
		const struct dm_ioc *ioc = &dm_iocs[i];

		errno = 0;
		EXPECT_EQ(-1, ioctl(self->c.fd[0], ioc->nr, NULL));
		EXPECT_EQ(EFAULT, errno) TH_LOG("%s, NULL", ioc->name);
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->c.fd[0], ioc->nr, hole));
		EXPECT_EQ(EFAULT, errno) TH_LOG("%s, PROT_NONE", ioc->name);
	}
	munmap(hole, DM_PAGE_SIZE);
}

/* cmd.ptr not a valid user pointer: EFAULT from the commands that use it. */
TEST_F(badarg, bad_cmd_ptr)
{
	/*
	 * Not EXCLUSIVE: 6.12 cannot make a page of a THP exclusive at all
	 * (race2.exclusive_whole_thp), so it would answer EBUSY there.
	 */
	static const unsigned int uses_ptr[] = {
		DM_IOC_READ, DM_IOC_WRITE, DM_IOC_SNAPSHOT,
		DM_IOC_MIGRATE_TO_DEV, DM_IOC_READ_UNLOCKED,
	};
	struct dm_buf *b = DM_BUF(&self->c, DM_THP_SIZE, RW, DM_THP_ON);
	uint64_t bad[] = { 0, 1, (uintptr_t)b->res };	/* NULL, odd, PROT_NONE */
	size_t i, j;

	dm_fill(b->ptr, DM_THP_SIZE, 130);
	for (i = 0; i < sizeof(uses_ptr) / sizeof(uses_ptr[0]); i++)
		for (j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			const struct dm_ioc *ioc = &dm_iocs[uses_ptr[i]];
			int ret = dm_cmd(self->c.fd[0], ioc->nr,
					 (uintptr_t)b->ptr, bad[j],
					 DM_THP_PAGES, NULL);

			EXPECT_EQ(-EFAULT, ret)
				TH_LOG("%s ptr %#llx: %s", ioc->name,
				       (unsigned long long)bad[j], strerror(-ret));
		}
	/* A failed command corrupts nothing. */
	ASSERT_DATA(b->ptr, DM_THP_SIZE, 130);
}

/* Unknown flag bits: EINVAL, and FAIL_ALLOC is not armed by the attempt. */
TEST_F(badarg, bad_flags)
{
	const uint64_t bad[] = { 1ULL << 1, 1ULL << 63,
				 HMM_DMIRROR_FLAG_FAIL_ALLOC | (1ULL << 7) };
	struct dmirror_thp_stats st;
	struct dm_buf *b;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_EQ(-EINVAL, dm_set_flags(self->c.fd[0], bad[i]));
	b = DM_FILLED_BUF(&self->c, DM_THP_SIZE, true, 131);
	DM_MIGRATE_PROVE(&self->c, 0, b, true);
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ(0, st.alloc_fail_inject);
	/* and the valid flag word is accepted and clears */
	ASSERT_EQ(0, dm_set_flags(self->c.fd[0], HMM_DMIRROR_FLAG_FAIL_ALLOC));
	ASSERT_EQ(0, dm_set_flags(self->c.fd[0], 0));
	ASSERT_DATA(b->ptr, DM_THP_SIZE, 131);
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ(0, st.alloc_fail_inject);
	SKIP_IF_REAL_ALLOC_FAIL(st);
	ASSERT_EQ(1, st.thp_to_sys);
}

/* STATS: a wrong version or a short size is EINVAL; a longer size is fine. */
TEST_F(badarg, bad_stats_header)
{
	struct {
		struct dmirror_thp_stats st;
		char pad[64];
	} big;
	struct dmirror_thp_stats st;
	const struct { uint32_t version, size; int err; } cases[] = {
		{ 0, sizeof(st), EINVAL },
		{ DMIRROR_THP_STATS_VERSION + 1, sizeof(st), EINVAL },
		{ DMIRROR_THP_STATS_VERSION, 8, EINVAL },
		{ DMIRROR_THP_STATS_VERSION, sizeof(st) - 8, EINVAL },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&st, 0, sizeof(st));
		st.version = cases[i].version;
		st.size = cases[i].size;
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->c.fd[0], HMM_DMIRROR_STATS, &st));
		EXPECT_EQ(cases[i].err, errno) TH_LOG("case %zu", i);
	}
	memset(&big, 0x5a, sizeof(big));
	big.st.version = DMIRROR_THP_STATS_VERSION;
	big.st.size = sizeof(big);
	ASSERT_EQ(0, ioctl(self->c.fd[0], HMM_DMIRROR_STATS, &big));
	ASSERT_EQ(DMIRROR_THP_STATS_VERSION, big.st.version);
	ASSERT_EQ(sizeof(st), big.st.size);
	ASSERT_TRUE(dm_pool_balanced(&big.st));
}

/* An unknown command: ENOTTY, the kernel's convention (ioctl(2)). */
TEST_F(badarg, unknown_ioctl)
{
	static const unsigned long unknown[] = {
		_IOWR('H', 0x3f, struct hmm_dmirror_cmd),
		_IOWR('H', 0x0a, struct hmm_dmirror_cmd),
		_IO('H', 0x44), _IOWR('X', 0x00, struct hmm_dmirror_cmd),
	};
	struct hmm_dmirror_cmd cmd = { 0 };
	size_t i;

	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->c.fd[0], unknown[i], &cmd));
		EXPECT_EQ(ENOTTY, errno) TH_LOG("ioctl %#lx", unknown[i]);
	}
}

/* A file is bound to its opener's mm: a forked child cannot use it. */
TEST_F(badarg, foreign_mm)
{
	struct dm_buf *b = DM_BUF(&self->c, DM_THP_SIZE, RW, DM_THP_ON);
	int status;
	pid_t pid;

	dm_fill(b->ptr, DM_THP_SIZE, 132);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int r1 = dm_read(self->c.fd[0], b->ptr, DM_THP_PAGES, b->mirror, NULL);
		int r2 = dm_to_dev(self->c.fd[0], b->ptr, DM_THP_PAGES, b->mirror, NULL);

		/* uapi: EINVAL, the caller's mm is not the opener's */
		_exit(r1 == -EINVAL && r2 == -EINVAL ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_DATA(b->ptr, DM_THP_SIZE, 132);
}
