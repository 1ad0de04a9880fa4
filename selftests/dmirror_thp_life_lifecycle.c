// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp-tests-life, lifecycle: included by dmirror_thp_life.c,
 * which declares the fixtures; not built on its own.
 *
 *  - RELEASE evicts device THPs (as THPs, or split under FAIL_ALLOC);
 *  - module unload with THPs resident, then reload: data intact, pools
 *    balanced, the new module works (always leaves the module loaded);
 *  - HMM_DMIRROR_FLAG_FAIL_ALLOC lives and dies with its file;
 *  - a device write over device THPs that a fork shares;
 *  - READ_UNLOCKED: a device read that waits for userfaultfd to resolve
 *    its faults, and reads device memory in place;
 *  - two open files of one device: each reads what the other migrated.
 */

/* ---- RELEASE ---- */

FIXTURE_VARIANT(release)
{
	bool fail_alloc;
};

FIXTURE_VARIANT_ADD(release, as_thp) { .fail_alloc = false };
FIXTURE_VARIANT_ADD(release, fail_alloc) { .fail_alloc = true };

TEST_F(release, release_evicts_thps)
{
	const size_t n = 2, np = n * DM_THP_PAGES;
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, n * DM_THP_SIZE, true, 80);
	int fd = self->c.fd[0];

	DM_MIGRATE_PROVE(&self->c, 0, b, true);
	if (variant->fail_alloc)
		ASSERT_EQ(0, dm_set_flags(fd, HMM_DMIRROR_FLAG_FAIL_ALLOC));
	ASSERT_EQ(0, dm_release(fd));

	DM_STATS(&self->c, 0, st);
	dm_stats_print("after release", &st);
	ASSERT_EQ(np, st.evicted_pages);
	ASSERT_EQ(0, st.cpu_faults);
	ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
	ASSERT_TRUE(dm_pool_balanced(&st));
	if (variant->fail_alloc) {
		ASSERT_EQ(1, st.alloc_fail_inject);
		ASSERT_EQ(1, st.split_migrate);
		ASSERT_EQ(n - 1, st.thp_to_sys);
		ASSERT_EQ(DM_THP_PAGES, st.base_to_sys);
	} else {
		SKIP_IF_REAL_ALLOC_FAIL(st);
		ASSERT_EQ(n, st.thp_to_sys);
		ASSERT_EQ(0, st.base_to_sys);
		ASSERT_TRUE(dm_is_sys_thp(b->ptr, n));
	}
	ASSERT_ON_SYS(&self->c, 0, b->ptr, np);
	/* The data is in system memory: reading it faults nothing back. */
	ASSERT_DATA(b->ptr, b->size, 80);
	memset(b->mirror, 0xA5, b->size);
	ASSERT_EQ(0, dm_read(fd, b->ptr, np, b->mirror, &cmd));
	ASSERT_DATA(b->mirror, b->size, 80);
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ(0, st.cpu_faults);
}

/* ---- module unload and reload ---- */

TEST_F_TIMEOUT(reload, unload_with_thps_resident, 180)
{
	struct dmirror_thp_stats st;
	struct dm_buf *b[DM_NDEVICES];
	int d;

	if (access(DM_MODULE_PATH, R_OK))
		SKIP(return, "no %s", DM_MODULE_PATH);
	if (dm_run("command -v rmmod >/dev/null && command -v insmod >/dev/null"))
		SKIP(return, "no rmmod/insmod on PATH");

	for (d = 0; d < DM_NDEVICES; d++) {
		b[d] = DM_FILLED_BUF(&self->c, DM_THP_SIZE, true, 90 + d);
		DM_MIGRATE_PROVE(&self->c, d, b[d], true);
	}
	/* An open file pins the module: close ours, keep the mappings. */
	for (d = 0; d < DM_NDEVICES; d++) {
		close(self->c.fd[d]);
		self->c.fd[d] = -1;
	}

	ASSERT_EQ(0, dm_run("rmmod " DM_MODULE_NAME));
	ASSERT_FALSE(dm_devices_present());
	/* Removal evicted the device memory: everything is back, intact. */
	for (d = 0; d < DM_NDEVICES; d++) {
		ASSERT_PM_PRESENT(b[d]->ptr, DM_THP_PAGES, DM_THP_PAGES);
		ASSERT_DATA(b[d]->ptr, DM_THP_SIZE, 90 + d);
	}

	ASSERT_EQ(0, dm_run("insmod " DM_MODULE_PATH));
	ASSERT_TRUE(dm_wait_devices(10));
	for (d = 0; d < DM_NDEVICES; d++) {
		self->c.fd[d] = dm_open(d);
		ASSERT_LE(0, self->c.fd[d]);
		DM_STATS(&self->c, d, st);
		/* A fresh module: no events, nothing resident, pools balanced. */
		ASSERT_EQ(0, st.thp_to_dev + st.base_to_dev + st.thp_to_sys +
			     st.base_to_sys + st.evicted_pages + st.cpu_faults);
		ASSERT_EQ(0, st.resident_pages);
		ASSERT_TRUE(dm_pool_balanced(&st));
	}
	dm_ctx_rebase(_metadata, &self->c);

	/*
	 * Eviction brought each device THP back as a system THP; the
	 * reloaded module migrates it whole again.
	 */
	for (d = 0; d < DM_NDEVICES; d++) {
		ASSERT_TRUE(dm_is_sys_thp(b[d]->ptr, 1)) TH_LOG("device %d", d);
		DM_MIGRATE_PROVE(&self->c, d, b[d], true);
		ASSERT_DATA(b[d]->mirror, DM_THP_SIZE, 90 + d);
		ASSERT_DATA(b[d]->ptr, DM_THP_SIZE, 90 + d);
		DM_STATS(&self->c, d, st);
		ASSERT_EQ(self->c.base[d].resident_pages, st.resident_pages);
	}
}

/* ---- HMM_DMIRROR_FLAG_FAIL_ALLOC is the file's ---- */

/* Migrate a fresh THP to device 0 through @fd: whole, or split. */
static void migrate_one(struct __test_metadata *_metadata, struct dm_ctx *c,
			int fd, bool whole, uint32_t seed)
{
	struct dmirror_thp_stats st;
	struct dm_buf *b = DM_FILLED_BUF(c, DM_THP_SIZE, true, seed);

	ASSERT_EQ(0, dm_stats_reset(c->fd[0]));
	ASSERT_EQ(0, dm_to_dev(fd, b->ptr, DM_THP_PAGES, b->mirror, NULL));
	DM_STATS(c, 0, st);
	ASSERT_EQ(whole, st.thp_to_dev);
	ASSERT_EQ(!whole, st.alloc_fail_inject);
	ASSERT_EQ(whole ? 0 : DM_THP_PAGES, st.base_to_dev);
	/* Through the device: a CPU read would consume an armed flag. */
	ASSERT_DATA(b->mirror, DM_THP_SIZE, seed);
}

/*
 * Armed and closed, the flag is gone: the next file's THP moves whole.
 * Armed on one file, it does not reach another file of the same process;
 * it fires on its own file's next large allocation.
 */
TEST_F(fail_alloc, scoped_to_the_file)
{
	int fd = dm_open(0), other;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, dm_set_flags(fd, HMM_DMIRROR_FLAG_FAIL_ALLOC));
	ASSERT_EQ(0, close(fd));
	fd = dm_open(0);
	ASSERT_LE(0, fd);
	migrate_one(_metadata, &self->c, fd, true, 150);

	other = dm_open(0);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, dm_set_flags(other, HMM_DMIRROR_FLAG_FAIL_ALLOC));
	migrate_one(_metadata, &self->c, fd, true, 151);
	migrate_one(_metadata, &self->c, other, false, 152);
	migrate_one(_metadata, &self->c, other, true, 153);
	close(other);
	close(fd);
}

/* A CPU fault in the mm that armed the flag consumes it. */
TEST_F(fail_alloc, cpu_fault_of_the_mm)
{
	struct dmirror_thp_stats st;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, DM_THP_SIZE, true, 154);
	int other = dm_open(0);

	ASSERT_LE(0, other);
	DM_MIGRATE_PROVE(&self->c, 0, b, true);
	ASSERT_EQ(0, dm_set_flags(other, HMM_DMIRROR_FLAG_FAIL_ALLOC));
	ASSERT_DATA(b->ptr, DM_THP_SIZE, 154);
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ(1, st.alloc_fail_inject);
	ASSERT_EQ(1, st.split_fault);
	ASSERT_EQ(DM_THP_PAGES, st.base_to_sys);
	close(other);
}

/* ---- a device write over fork-shared device memory ---- */

static int cow_holder(void *arg)
{
	(void)arg;
	pause();
	return 0;
}

/*
 * After fork, the device THPs are read-only in both processes.  A device
 * WRITE of 32 MB (16 PMD windows) in the parent migrates every window
 * back to break COW, window by window: it must succeed, however many
 * windows the range has, and write every byte.
 */
TEST_F_TIMEOUT(cow_write, write_32m_after_fork, 120)
{
	const size_t size = 32 * DM_ONEMB, np = dm_npages(size);
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, size, true, 160);
	int status;
	pid_t pid;

	DM_MIGRATE_PROVE(&self->c, 0, b, true);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(cow_holder(NULL));
	ASSERT_EQ(0, dm_snap_local_write(self->c.fd[0], b->ptr, np));
	dm_fill(b->mirror, size, 161);
	ASSERT_EQ(0, dm_write(self->c.fd[0], b->ptr, np, b->mirror, &cmd));
	ASSERT_EQ(np, cmd.cpages);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	DM_STATS(&self->c, 0, st);
	dm_stats_print("after the write", &st);
	ASSERT_EQ(size / DM_THP_SIZE, st.thp_to_sys + st.split_migrate);
	ASSERT_DATA(b->ptr, size, 161);
}

/* ---- READ_UNLOCKED ---- */

/* The userfaultfd handler: each missing page filled with its pattern. */
struct uffd_filler {
	int uffd, stop;
	char *base;
	long resolved;
};

static void *uffd_fill(void *arg)
{
	struct uffd_filler *u = arg;
	char *page = malloc(DM_PAGE_SIZE);

	while (page) {
		struct pollfd pfd[2] = {
			{ .fd = u->uffd, .events = POLLIN },
			{ .fd = u->stop, .events = POLLIN },
		};
		struct uffdio_copy copy = { 0 };
		struct uffd_msg msg;
		size_t off;

		if (poll(pfd, 2, -1) <= 0 || pfd[1].revents)
			break;
		if (read(u->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
		    msg.event != UFFD_EVENT_PAGEFAULT)
			break;
		off = (msg.arg.pagefault.address - (uintptr_t)u->base) &
		      ~(DM_PAGE_SIZE - 1);
		/* the page of the pattern dm_fill(base, size, 170) writes */
		dm_fill_at(page, off, DM_PAGE_SIZE, 170);
		copy.dst = (uintptr_t)u->base + off;
		copy.src = (uintptr_t)page;
		copy.len = DM_PAGE_SIZE;
		if (ioctl(u->uffd, UFFDIO_COPY, &copy))
			break;
		u->resolved++;
	}
	free(page);
	return NULL;
}

/*
 * A range registered with userfaultfd (missing pages): READ_UNLOCKED waits
 * while the handler resolves each fault, and reads what it put there.
 */
TEST_F_TIMEOUT(read_unlocked, waits_for_userfaultfd, 60)
{
	const size_t npages = 16, size = npages * DM_PAGE_SIZE;
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffd_filler u = { 0 };
	struct hmm_dmirror_cmd cmd;
	uint64_t stop = 1;
	pthread_t thread;
	char *mirror;
	int ret;

	u.uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, u.uffd) TH_LOG("userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(u.uffd, UFFDIO_API, &api));
	u.base = dm_ctx_track(&self->c, mmap(NULL, size, RW,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), size);
	ASSERT_NE(MAP_FAILED, u.base);
	mirror = dm_ctx_track(&self->c, mmap(NULL, size, RW,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), size);
	ASSERT_NE(MAP_FAILED, mirror);
	reg.range.start = (uintptr_t)u.base;
	reg.range.len = size;
	ASSERT_EQ(0, ioctl(u.uffd, UFFDIO_REGISTER, &reg));
	u.stop = eventfd(0, EFD_CLOEXEC);
	ASSERT_LE(0, u.stop);
	ASSERT_EQ(0, pthread_create(&thread, NULL, uffd_fill, &u));

	ret = dm_cmd(self->c.fd[0], HMM_DMIRROR_READ_UNLOCKED,
		     (uintptr_t)u.base, (uintptr_t)mirror, npages, &cmd);

	ASSERT_EQ(sizeof(stop), write(u.stop, &stop, sizeof(stop)));
	pthread_join(thread, NULL);
	close(u.stop);
	close(u.uffd);
	ASSERT_EQ(0, ret) TH_LOG("READ_UNLOCKED: %s", strerror(-ret));
	ASSERT_EQ(npages, cmd.cpages);
	ASSERT_LE(1, cmd.faults);
	/* Every page came from the handler, and the device read it. */
	ASSERT_EQ(npages, u.resolved);
	ASSERT_DATA(mirror, size, 170);
	ASSERT_DATA(u.base, size, 170);
}

/* Device memory of this device is read in place: nothing comes back. */
TEST_F(read_unlocked, reads_device_thp_in_place)
{
	struct dm_buf *b = DM_BUF(&self->c, DM_THP_SIZE, RW, DM_THP_ON);
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	int ret;

	dm_fill(b->ptr, DM_THP_SIZE, 171);
	ASSERT_TRUE(dm_is_sys_thp(b->ptr, 1));
	ASSERT_EQ(0, dm_to_dev(self->c.fd[0], b->ptr, DM_THP_PAGES, b->mirror, NULL));
	ASSERT_EQ(DM_THP_PAGES, dm_snap_local_pmd(self->c.fd[0], b->ptr, DM_THP_PAGES));
	memset(b->mirror, 0, DM_THP_SIZE);

	ret = dm_cmd(self->c.fd[0], HMM_DMIRROR_READ_UNLOCKED, (uintptr_t)b->ptr,
		     (uintptr_t)b->mirror, DM_THP_PAGES, &cmd);
	ASSERT_EQ(0, ret) TH_LOG("READ_UNLOCKED: %s", strerror(-ret));
	ASSERT_EQ(DM_THP_PAGES, cmd.cpages);
	ASSERT_DATA(b->mirror, DM_THP_SIZE, 171);
	/* Still one device PMD: the read faulted nothing back. */
	ASSERT_EQ(DM_THP_PAGES, dm_snap_local_pmd(self->c.fd[0], b->ptr, DM_THP_PAGES));
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ(0, st.cpu_faults + st.thp_to_sys + st.base_to_sys);
	ASSERT_DATA(b->ptr, DM_THP_SIZE, 171);
}

/* ---- two files of one device ---- */

/*
 * Two open files of one device in one process: what the first migrated to
 * the device, the second reads in place through its own mirror (the pages'
 * owner is the device, not the file), and nothing comes back to system
 * memory.  (Upstream 7.3's test_hmm oopses here: it reads a device page
 * through the direct map instead of its backing page.)
 */
TEST_F(two_files, read_the_other_files_device_memory)
{
	struct dm_buf *b = DM_FILLED_BUF(&self->c, DM_THP_SIZE, true, 172);
	struct dmirror_thp_stats st;
	int fd2 = dm_open(0);

	ASSERT_LE(0, fd2);
	DM_MIGRATE_PROVE(&self->c, 0, b, true);
	memset(b->mirror, 0, DM_THP_SIZE);
	ASSERT_EQ(0, dm_read(fd2, b->ptr, DM_THP_PAGES, b->mirror, NULL));
	ASSERT_DATA(b->mirror, DM_THP_SIZE, 172);
	/* The second file sees the first one's device THP as its own device's. */
	ASSERT_EQ(DM_THP_PAGES, dm_snap_local_pmd(fd2, b->ptr, DM_THP_PAGES));
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ(0, st.cpu_faults + st.thp_to_sys + st.base_to_sys);
	close(fd2);
	ASSERT_DATA(b->ptr, DM_THP_SIZE, 172);
}
