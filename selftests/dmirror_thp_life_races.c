// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp-tests-life, races: included by dmirror_thp_life.c,
 * which declares the fixtures; not built on its own.
 *
 *  - several threads faulting the same device THP at once, and a fault
 *    storm of eight;
 *  - migration to the device and to system memory racing with CPU
 *    faults, and to the device racing with MADV_DONTNEED; EXCLUSIVE
 *    racing with MADV_DONTNEED;
 *  - eviction racing with the exit of the device memory's owner;
 * each bounded in time.
 */

/* ---- concurrency ---- */

#define RACE_THREADS	4
#define RACE_ROUNDS	5

struct fault_arg {
	pthread_barrier_t *bar;
	char *ptr;
	size_t page;
	uint32_t seed;
	bool write;
	long bad;	/* -1 or the failing offset */
};

static void *fault_thread(void *p)
{
	struct fault_arg *a = p;
	char *page = a->ptr + a->page * DM_PAGE_SIZE;

	pthread_barrier_wait(a->bar);
	if (a->write) {
		dm_fill_at(page, a->page * DM_PAGE_SIZE, DM_PAGE_SIZE, a->seed + 1);
		a->bad = dm_verify_at(page, a->page * DM_PAGE_SIZE, DM_PAGE_SIZE,
				      a->seed + 1);
	} else {
		a->bad = dm_verify_at(page, a->page * DM_PAGE_SIZE, DM_PAGE_SIZE,
				      a->seed);
	}
	return NULL;
}

FIXTURE_VARIANT(race)
{
	bool write;
};

FIXTURE_VARIANT_ADD(race, read) { .write = false };
FIXTURE_VARIANT_ADD(race, write) { .write = true };

/*
 * RACE_THREADS threads fault different pages of one device THP at the same
 * moment: the THP comes back exactly once, whole, and every thread sees
 * (or leaves) the right data.
 */
TEST_F_TIMEOUT(race, concurrent_faults_one_thp, 90)
{
	struct fault_arg args[RACE_THREADS];
	pthread_t th[RACE_THREADS];
	pthread_barrier_t bar;
	struct dmirror_thp_stats st;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, DM_THP_SIZE, true, 100);
	int round, t;

	for (round = 0; round < RACE_ROUNDS; round++) {
		uint32_t seed = 100 + 2 * round;
		size_t i;

		dm_fill(b->ptr, DM_THP_SIZE, seed);
		REQUIRE_SYS_THP(b->ptr, 1);
		DM_MIGRATE_PROVE(&self->c, 0, b, true);

		ASSERT_EQ(0, pthread_barrier_init(&bar, NULL, RACE_THREADS));
		for (t = 0; t < RACE_THREADS; t++) {
			args[t] = (struct fault_arg){
				.bar = &bar, .ptr = b->ptr, .seed = seed,
				.page = (size_t)t * (DM_THP_PAGES / RACE_THREADS) + round,
				.write = variant->write, .bad = -2,
			};
			ASSERT_EQ(0, pthread_create(&th[t], NULL, fault_thread, &args[t]));
		}
		for (t = 0; t < RACE_THREADS; t++) {
			ASSERT_EQ(0, pthread_join(th[t], NULL));
			ASSERT_EQ(-1, args[t].bad) TH_LOG("round %d thread %d", round, t);
		}
		pthread_barrier_destroy(&bar);

		DM_STATS(&self->c, 0, st);
		SKIP_IF_REAL_ALLOC_FAIL(st);
		ASSERT_EQ(1, st.thp_to_sys) dm_stats_print("race", &st);
		ASSERT_EQ(0, st.base_to_sys);
		ASSERT_LE(1, st.cpu_faults);
		ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
		ASSERT_ON_SYS(&self->c, 0, b->ptr, DM_THP_PAGES);
		for (i = 0; i < DM_THP_PAGES; i++) {
			uint32_t s = seed;

			for (t = 0; t < RACE_THREADS; t++)
				if (variant->write && args[t].page == i)
					s = seed + 1;
			ASSERT_EQ(-1, dm_verify_at(b->ptr + i * DM_PAGE_SIZE,
						   i * DM_PAGE_SIZE, DM_PAGE_SIZE, s));
		}
	}
}

/*
 * A fault storm: STORM_THREADS threads fault pages of one device THP at the
 * same moment, STORM_ROUNDS times.  The faults contend for the one folio:
 * the fault handler that holds its lock migrates it, the others wait for
 * the lock and find it back; without that lock, they all take a reference
 * and fail each other's migration (refcount check), over and over.  Each
 * round must end within STORM_ROUND_LIMIT seconds (a liveness bound, far
 * above what a round takes), with the data intact; the rounds' times and
 * the number of migrate_to_ram() calls are logged.
 */
#define STORM_THREADS		8
#define STORM_ROUNDS		64
#define STORM_ROUND_LIMIT	30

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

TEST_F_TIMEOUT(fault_storm, eight_threads_one_thp, 600)
{
	struct fault_arg args[STORM_THREADS];
	pthread_t th[STORM_THREADS];
	double secs[STORM_ROUNDS];
	pthread_barrier_t bar;
	struct dmirror_thp_stats st;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, DM_THP_SIZE, true, 180);
	unsigned long faults = 0;
	int round, t;

	for (round = 0; round < STORM_ROUNDS; round++) {
		uint32_t seed = 180 + round;
		double t0;

		dm_fill(b->ptr, DM_THP_SIZE, seed);
		REQUIRE_SYS_THP(b->ptr, 1);
		DM_MIGRATE_PROVE(&self->c, 0, b, true);

		ASSERT_EQ(0, pthread_barrier_init(&bar, NULL, STORM_THREADS + 1));
		for (t = 0; t < STORM_THREADS; t++) {
			args[t] = (struct fault_arg){
				.bar = &bar, .ptr = b->ptr, .seed = seed,
				.page = (size_t)t * (DM_THP_PAGES / STORM_THREADS) +
					round % (DM_THP_PAGES / STORM_THREADS),
				.bad = -2,
			};
			ASSERT_EQ(0, pthread_create(&th[t], NULL, fault_thread, &args[t]));
		}
		t0 = dm_now();
		pthread_barrier_wait(&bar);
		for (t = 0; t < STORM_THREADS; t++) {
			ASSERT_EQ(0, pthread_join(th[t], NULL));
			ASSERT_EQ(-1, args[t].bad) TH_LOG("round %d thread %d", round, t);
		}
		secs[round] = dm_now() - t0;
		pthread_barrier_destroy(&bar);
		ASSERT_GT(STORM_ROUND_LIMIT, secs[round])
			TH_LOG("round %d took %.1f s", round, secs[round]);

		DM_STATS(&self->c, 0, st);
		ASSERT_EQ(1, st.thp_to_sys + st.split_fault) dm_stats_print("storm", &st);
		ASSERT_ON_SYS(&self->c, 0, b->ptr, DM_THP_PAGES);
		ASSERT_DATA(b->ptr, DM_THP_SIZE, seed);
		faults += st.cpu_faults;
	}
	qsort(secs, STORM_ROUNDS, sizeof(secs[0]), cmp_double);
	TH_LOG("%d rounds of %d threads: round time median %.3f s, max %.3f s; %.1f migrate_to_ram calls per round",
	       STORM_ROUNDS, STORM_THREADS, secs[STORM_ROUNDS / 2],
	       secs[STORM_ROUNDS - 1], (double)faults / STORM_ROUNDS);
}

struct mig_arg {
	int fd;
	struct dm_buf *b;
	bool to_dev;
	/*
	 * Pages may be dropped, or moved back by another thread, meanwhile:
	 * MIGRATE_TO_DEV's read-back may then find one that the device
	 * cannot read without a fault, ENOENT (uapi/).
	 */
	bool racing;
	volatile bool *stop;
	unsigned long ok, busy;
	int bad_errno;
};

/* Migrate the buffer to the device (or to system memory) until told. */
static void *mig_thread(void *p)
{
	struct mig_arg *a = p;
	size_t np = dm_npages(a->b->size);

	while (!*a->stop) {
		int ret = a->to_dev ?
			dm_to_dev(a->fd, a->b->ptr, np, a->b->mirror, NULL) :
			dm_to_sys(a->fd, a->b->ptr, np, NULL);

		if (!ret)
			a->ok++;
		else if (ret == -EBUSY || ret == -ENOMEM ||
			 (ret == -ENOENT && a->racing))
			a->busy++;	/* documented, transient */
		else if (!a->bad_errno)
			a->bad_errno = -ret;
	}
	return NULL;
}

static unsigned long mig_done(const struct mig_arg *a)
{
	return __atomic_load_n(&a->ok, __ATOMIC_RELAXED) +
	       __atomic_load_n(&a->busy, __ATOMIC_RELAXED);
}

static inline uint64_t race_word(uint32_t k, size_t page)
{
	return ((uint64_t)(0x80000000u | k) << 32) | page;
}

/*
 * Migration to the device and to system memory race with a CPU that keeps
 * rewriting the first word of every page: no write may be lost, no
 * migration may fail with an undocumented errno, nothing may leak.
 */
TEST_F_TIMEOUT(race2, migrate_races_fault_back, 120)
{
	const size_t n = 2, np = n * DM_THP_PAGES;
	struct mig_arg ma[2];
	pthread_t th[2];
	volatile bool stop = false;
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, n * DM_THP_SIZE, true, 110);
	double end = dm_now() + 20.0;
	uint32_t k = 0;
	size_t i = 0;
	int t;

	for (t = 0; t < 2; t++) {
		ma[t] = (struct mig_arg){ .fd = self->c.fd[0], .b = b,
					  .to_dev = t == 0, .racing = true,
					  .stop = &stop };
		ASSERT_EQ(0, pthread_create(&th[t], NULL, mig_thread, &ma[t]));
	}
	/*
	 * At least 200 rounds, and on until both migrators have run a few
	 * times: under emulation the CPU loop can otherwise end before a
	 * migrator thread is first scheduled, and nothing raced.
	 */
	while (dm_now() < end &&
	       (k < 200 || mig_done(&ma[0]) < 3 || mig_done(&ma[1]) < 3)) {
		k++;
		for (i = 0; i < np; i += 37) {
			volatile uint64_t *w = (uint64_t *)(b->ptr + i * DM_PAGE_SIZE);

			*w = race_word(k, i);
			if (*w != race_word(k, i))
				break;
		}
		if (i < np)
			break;
	}
	stop = true;
	for (t = 0; t < 2; t++)
		ASSERT_EQ(0, pthread_join(th[t], NULL));
	TH_LOG("%u CPU rounds; to_dev ok %lu busy %lu; to_sys ok %lu busy %lu",
	       k, ma[0].ok, ma[0].busy, ma[1].ok, ma[1].busy);
	ASSERT_LE(np, i) TH_LOG("a CPU write did not read back at page %zu", i);
	ASSERT_EQ(0, ma[0].bad_errno);
	ASSERT_EQ(0, ma[1].bad_errno);
	/* Both sides ran, and each succeeded at least once. */
	ASSERT_LT(0, ma[0].ok);
	ASSERT_LT(0, ma[1].ok);

	/* Every page: its last word written, and the rest untouched. */
	memset(b->mirror, 0xA5, b->size);
	ASSERT_EQ(0, dm_read(self->c.fd[0], b->ptr, np, b->mirror, &cmd));
	for (i = 0; i < np; i++) {
		const char *pg = b->ptr + i * DM_PAGE_SIZE;
		const char *mp = b->mirror + i * DM_PAGE_SIZE;
		uint64_t want = (i % 37) ? (((uint64_t)110 << 32) | (i * 512)) :
					   race_word(k, i);

		ASSERT_EQ(want, *(const uint64_t *)mp) TH_LOG("device, page %zu", i);
		ASSERT_EQ(-1, dm_verify_at(mp + 8, i * DM_PAGE_SIZE + 8,
					   DM_PAGE_SIZE - 8, 110));
		ASSERT_EQ(want, *(const uint64_t *)pg) TH_LOG("cpu, page %zu", i);
		ASSERT_EQ(-1, dm_verify_at(pg + 8, i * DM_PAGE_SIZE + 8,
					   DM_PAGE_SIZE - 8, 110));
	}
	ASSERT_EQ(0, dm_to_sys(self->c.fd[0], b->ptr, np, &cmd));
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
	ASSERT_TRUE(dm_pool_balanced(&st));
}

/*
 * Migration to the device races with MADV_DONTNEED, which takes the mmap
 * lock for read only, as the migration does, and may zap its migration
 * entries, after which finalize frees the device folio.  Each round the
 * CPU rewrites one half with the round's data and drops the other, then
 * the device reads all of it: the dropped half must read as zeroes, the
 * rewritten one as that round's data.  A mirror entry left for a folio
 * that the zap freed would read what its memory holds next.
 */
TEST_F_TIMEOUT(race2, migrate_races_dontneed, 120)
{
	const size_t n = 2, np = n * DM_THP_PAGES, half = n * DM_THP_SIZE / 2;
	struct mig_arg ma;
	pthread_t th;
	volatile bool stop = false;
	struct dmirror_thp_stats st;
	struct hmm_dmirror_cmd cmd;
	struct dm_buf *b = DM_FILLED_BUF(&self->c, n * DM_THP_SIZE, true, 120);
	/* Not b->mirror: the migrations' read-backs write that one. */
	char *seen = malloc(b->size);
	double end = dm_now() + 10.0;
	uint32_t k = 0;
	long bad = -1;
	int ret;

	ASSERT_NE(NULL, seen);
	ma = (struct mig_arg){ .fd = self->c.fd[0], .b = b, .to_dev = true,
			       .racing = true, .stop = &stop };
	ASSERT_EQ(0, pthread_create(&th, NULL, mig_thread, &ma));
	while (bad < 0 && dm_now() < end && (k < 100 || mig_done(&ma) < 3)) {
		size_t keep = (k & 1) * half, drop = half - keep;

		k++;
		dm_fill_at(b->ptr + keep, keep, half, 120 + k);
		ASSERT_EQ(0, madvise(b->ptr + drop, half, MADV_DONTNEED));
		memset(seen, 0xA5, b->size);
		ret = dm_read(self->c.fd[0], b->ptr, np, seen, &cmd);
		if (ret == -EBUSY || ret == -ENOMEM)
			continue;	/* documented, transient */
		ASSERT_EQ(0, ret);
		bad = dm_verify_zero(seen + drop, half);
		if (bad < 0)
			bad = dm_verify_at(seen + keep, keep, half, 120 + k);
	}
	stop = true;
	free(seen);
	ASSERT_EQ(0, pthread_join(th, NULL));
	TH_LOG("%u rounds; to_dev ok %lu busy %lu", k, ma.ok, ma.busy);
	ASSERT_EQ(-1, bad) TH_LOG("round %u: the device read stale data", k);
	ASSERT_EQ(0, ma.bad_errno);
	ASSERT_LT(0, ma.ok);

	ASSERT_EQ(0, dm_to_sys(self->c.fd[0], b->ptr, np, &cmd));
	DM_STATS(&self->c, 0, st);
	ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
	ASSERT_TRUE(dm_pool_balanced(&st));
}

#define EXCLUSIVE_DELAY	"/sys/module/" DM_MODULE_NAME "/parameters/exclusive_delay_ms"
#define EXCLUSIVE_ROUNDS	30

struct ex_arg {
	int fd;
	char *page, *seen;
	int ret;
	struct hmm_dmirror_cmd cmd;
};

static void *ex_thread(void *p)
{
	struct ex_arg *a = p;

	a->ret = dm_cmd(a->fd, HMM_DMIRROR_EXCLUSIVE, (uintptr_t)a->page,
			(uintptr_t)a->seen, 1, &a->cmd);
	return NULL;
}

/*
 * EXCLUSIVE races with MADV_DONTNEED, which zaps under the mmap lock for
 * read, as EXCLUSIVE runs.  The module's exclusive_delay_ms holds the page
 * between make_device_exclusive() and the mirror's store, and the zap lands
 * there: the page is freed once EXCLUSIVE drops its reference, so an atomic
 * entry stored after the zap would have the device read and pin whatever
 * reuses that memory.  The witness is pagemap: after a round whose page the
 * process does not map (neither present nor swap), CHECK_EXCLUSIVE must
 * find no atomic entry; and EXCLUSIVE's read-back returns the page's data
 * before the zap or zeroes after it, or the documented ENOENT or EBUSY.
 * Every third round the zap comes after EXCLUSIVE, whose atomic entry it
 * must then remove.
 */
TEST_F_TIMEOUT(race2, exclusive_races_dontneed, 120)
{
	struct dm_buf *b = DM_FILLED_BUF(&self->c, 4 * DM_PAGE_SIZE, false, 130);
	struct ex_arg ea = { .fd = self->c.fd[0], .page = b->ptr };
	unsigned int k, zeroes = 0, unmapped = 0, busy = 0;
	struct hmm_dmirror_cmd cmd;
	pthread_t th;
	long stale;

	ea.seen = b->mirror;
	ASSERT_EQ(0, dm_run("echo 40 > " EXCLUSIVE_DELAY));
	for (k = 0; k < EXCLUSIVE_ROUNDS; k++) {
		dm_fill(b->ptr, DM_PAGE_SIZE, 130 + k);
		memset(b->mirror, 0xA5, DM_PAGE_SIZE);
		ASSERT_EQ(0, pthread_create(&th, NULL, ex_thread, &ea));
		/* Inside exclusive_delay_ms, or every third round after it. */
		usleep(k % 3 == 2 ? 100000 : 10000 + (k % 3) * 15000);
		ASSERT_EQ(0, madvise(b->ptr, DM_PAGE_SIZE, MADV_DONTNEED));
		ASSERT_EQ(0, pthread_join(th, NULL));
		if (ea.ret == -ENOENT || ea.ret == -EBUSY) {
			busy++;		/* documented, see the top */
			continue;
		}
		ASSERT_EQ(0, ea.ret) TH_LOG("round %u", k);
		if (dm_verify_zero(b->mirror, DM_PAGE_SIZE) < 0)
			zeroes++;
		else
			ASSERT_EQ(-1, dm_verify(b->mirror, DM_PAGE_SIZE, 130 + k))
				TH_LOG("round %u: the device read neither the data nor zeroes", k);
		stale = pm_count(b->ptr, 1, PM_PRESENT | PM_SWAP, 0);
		ASSERT_LE(0, stale);
		if (!stale)
			continue;
		unmapped++;
		ASSERT_EQ(0, dm_cmd(self->c.fd[0], HMM_DMIRROR_CHECK_EXCLUSIVE,
				    (uintptr_t)b->ptr, 0, 1, &cmd))
			TH_LOG("round %u: an atomic entry for a page the process does not map", k);
	}
	ASSERT_EQ(0, dm_run("echo 0 > " EXCLUSIVE_DELAY));
	TH_LOG("%u rounds: the device read zeroes in %u, the page unmapped after %u, ENOENT or EBUSY in %u",
	       k, zeroes, unmapped, busy);
	ASSERT_LT(0, zeroes) TH_LOG("no zap landed inside EXCLUSIVE: nothing raced");
	ASSERT_LT(0, unmapped) TH_LOG("no zap came after EXCLUSIVE");
}

/*
 * EXCLUSIVE over a whole THP, twice: every page made exclusive and
 * mirrored atomic, the read-back equal to the data, and a CPU read taking
 * the pages back.  The PMD split under the first page invalidates the
 * range, and a second EXCLUSIVE restores the first one's entries: neither
 * may leave the module retrying into EBUSY (it did, on every kernel).
 */
TEST_F(race2, exclusive_whole_thp)
{
	struct dm_buf *b = DM_FILLED_BUF(&self->c, DM_THP_SIZE, true, 140);
	struct hmm_dmirror_cmd cmd;
	int round;

	ASSERT_TRUE(dm_is_sys_thp(b->ptr, 1));
	for (round = 0; round < 2; round++) {
		memset(b->mirror, 0xA5, DM_THP_SIZE);
		ASSERT_EQ(0, dm_cmd(self->c.fd[0], HMM_DMIRROR_EXCLUSIVE,
				    (uintptr_t)b->ptr, (uintptr_t)b->mirror,
				    DM_THP_PAGES, &cmd)) TH_LOG("round %d", round);
		ASSERT_EQ(DM_THP_PAGES, cmd.cpages);
		ASSERT_DATA(b->mirror, DM_THP_SIZE, 140);
		ASSERT_EQ(-EPERM, dm_cmd(self->c.fd[0],
					 HMM_DMIRROR_CHECK_EXCLUSIVE,
					 (uintptr_t)b->ptr, 0, DM_THP_PAGES,
					 NULL));
	}
	/* The CPU's reads take every page back from the device. */
	ASSERT_DATA(b->ptr, DM_THP_SIZE, 140);
	ASSERT_EQ(0, dm_cmd(self->c.fd[0], HMM_DMIRROR_CHECK_EXCLUSIVE,
			    (uintptr_t)b->ptr, 0, DM_THP_PAGES, NULL));
}

/* ---- eviction racing process exit ---- */

#define EVICT_RACE_SECONDS	20
#define EVICT_RACE_VICTIMS	2
#define EVICT_DELAY		"/sys/module/" DM_MODULE_NAME "/parameters/evict_delay_ms"

/*
 * One short-lived process: two THPs of data to the device, then exit at
 * once, with the device THPs mapped, while RELEASE may be evicting them.
 */
static int evict_race_victim(void *arg)
{
	struct dm_buf b;
	int fd = dm_open(0);

	(void)arg;
	if (fd < 0 || dm_buf_alloc(&b, 2 * DM_THP_SIZE, RW, DM_THP_ON))
		return 1;
	dm_fill(b.ptr, 2 * DM_THP_SIZE, 140);
	dm_to_dev(fd, b.ptr, dm_npages(2 * DM_THP_SIZE), b.mirror, NULL);
	return 0;	/* exit: the mm goes, its anon_vmas with it */
}

/* Victims, one after another, until @end; returns how many, or -1. */
static long evict_race_victims(double end)
{
	long n = 0;

	while (dm_now() < end) {
		if (dm_run_child(evict_race_victim, NULL, 60))
			return -1;
		n++;
	}
	return n;
}

/*
 * Eviction (RELEASE, and the same at rmmod) collects device folios by pfn,
 * without the owner's mmap lock, unmaps them, copies them and maps their
 * copies back through the rmap.  Processes that migrate THPs to the device
 * and exit at once race with a loop of RELEASE for EVICT_RACE_SECONDS; the
 * module's evict_delay_ms holds every evicted block unmapped for 5 ms, so
 * that processes do exit in the middle of an eviction.  Nothing may crash
 * or be reported (the debug flavour has KASAN), every RELEASE returns 0,
 * and the pools balance afterwards.
 */
TEST_F_TIMEOUT(evict_race, release_races_exit, EVICT_RACE_SECONDS + 90)
{
	struct dmirror_thp_stats st;
	double end = dm_now() + EVICT_RACE_SECONDS;
	pid_t evictor, victims[EVICT_RACE_VICTIMS];
	long total = 0;
	int status, i;

	ASSERT_EQ(0, dm_run("echo 5 > " EVICT_DELAY));
	evictor = fork();
	ASSERT_LE(0, evictor);
	if (!evictor) {
		while (dm_now() < end)
			if (dm_release(self->c.fd[0]))
				_exit(1);
		_exit(0);
	}
	for (i = 0; i < EVICT_RACE_VICTIMS; i++) {
		victims[i] = fork();
		ASSERT_LE(0, victims[i]);
		if (!victims[i]) {
			long n = evict_race_victims(end);

			_exit(n < 0 ? 255 : n > 254 ? 254 : n);
		}
	}
	for (i = 0; i < EVICT_RACE_VICTIMS; i++) {
		ASSERT_EQ(victims[i], waitpid(victims[i], &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_NE(255, WEXITSTATUS(status));
		total += WEXITSTATUS(status);
	}
	ASSERT_EQ(evictor, waitpid(evictor, &status, 0));
	ASSERT_EQ(0, dm_run("echo 0 > " EVICT_DELAY));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, dm_release(self->c.fd[0]));
	DM_STATS(&self->c, 0, st);
	dm_stats_print("after the race", &st);
	TH_LOG("%ld victims", total);
	ASSERT_LE(10, total);
	ASSERT_LT(0, st.evicted_pages);
	ASSERT_TRUE(dm_pool_balanced(&st));
	ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
}

/*
 * The first pagemap entry of [addr, ...) in process @pid, or 0.  As root,
 * a swap entry shows its type and offset: the type tells a device-private
 * entry from the migration entry that replaces it while it is evicted.
 */
static uint64_t pm_entry_of(pid_t pid, uintptr_t addr)
{
	char path[64];
	uint64_t ent = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (pread(fd, &ent, sizeof(ent), addr / DM_PAGE_SIZE * sizeof(ent)) !=
	    sizeof(ent))
		ent = 0;
	close(fd);
	return ent;
}

/* A process that migrates a THP to the device, then exits when told. */
static void owner_victim(int to_parent, int from_parent)
{
	struct dm_buf b;
	uintptr_t addr;
	int fd = dm_open(0);
	char c;

	if (fd < 0 || dm_buf_alloc(&b, DM_THP_SIZE, RW, DM_THP_ON))
		_exit(1);
	dm_fill(b.ptr, DM_THP_SIZE, 141);
	if (dm_to_dev(fd, b.ptr, DM_THP_PAGES, b.mirror, NULL))
		_exit(2);
	addr = (uintptr_t)b.ptr;
	if (write(to_parent, &addr, sizeof(addr)) != sizeof(addr) ||
	    read(from_parent, &c, 1) != 1)
		_exit(3);
	_exit(0);	/* the mm goes, with the PMD eviction has unmapped */
}

static void *release_thread(void *arg)
{
	int *fd = arg;

	*fd = dm_release(*fd);
	return NULL;
}

/*
 * The same race, made certain: the owner of a device THP exits exactly
 * while eviction holds the THP unmapped (a PMD migration entry in its mm),
 * which the parent sees in the owner's pagemap.  The exit zaps a migration
 * entry, which holds neither a mapping nor a reference of the folio
 * (upstream 7.3: both dropped once more, kernel BUG in page_ref_unfreeze()
 * when eviction goes on).
 */
TEST_F_TIMEOUT(evict_race, owner_exits_mid_eviction, 60)
{
	struct dmirror_thp_stats st;
	int p2c[2], c2p[2], status, rel;
	uint64_t dev_ent, ent;
	pthread_t th;
	uintptr_t addr;
	double end;
	pid_t pid;

	ASSERT_EQ(0, pipe(p2c));
	ASSERT_EQ(0, pipe(c2p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(c2p[0]);
		close(p2c[1]);
		owner_victim(c2p[1], p2c[0]);
	}
	close(c2p[1]);
	close(p2c[0]);
	ASSERT_EQ(sizeof(addr), read(c2p[0], &addr, sizeof(addr)));
	dev_ent = pm_entry_of(pid, addr);
	ASSERT_TRUE(dev_ent & PM_SWAP) TH_LOG("pagemap %#llx", (unsigned long long)dev_ent);

	ASSERT_EQ(0, dm_run("echo 2000 > " EVICT_DELAY));
	rel = self->c.fd[0];
	ASSERT_EQ(0, pthread_create(&th, NULL, release_thread, &rel));
	/* Until eviction has replaced the device entry by a migration one. */
	for (end = dm_now() + 30, ent = dev_ent; ent == dev_ent && dm_now() < end;
	     usleep(1000))
		ent = pm_entry_of(pid, addr);
	EXPECT_NE(dev_ent, ent) TH_LOG("eviction never unmapped the THP");
	ASSERT_EQ(1, write(p2c[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, dm_run("echo 0 > " EVICT_DELAY));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, rel);
	DM_STATS(&self->c, 0, st);
	dm_stats_print("after the exit", &st);
	ASSERT_TRUE(dm_pool_balanced(&st));
	ASSERT_EQ(self->c.base[0].resident_pages, st.resident_pages);
}
