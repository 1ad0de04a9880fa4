// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp selftests: lifecycle, concurrency and bad input.
 *
 *  - RELEASE evicts device THPs (as THPs, or split under FAIL_ALLOC);
 *  - module unload with THPs resident, then reload: data intact, pools
 *    balanced, the new module works (always leaves the module loaded);
 *  - several threads faulting the same device THP at once; migration to
 *    the device and to system memory racing with CPU faults, and to the
 *    device racing with MADV_DONTNEED; EXCLUSIVE racing with MADV_DONTNEED;
 *    bounded;
 *  - READ_UNLOCKED: a device read that waits for userfaultfd to resolve
 *    its faults, and reads device memory in place;
 *  - two open files of one device: each reads what the other migrated;
 *  - bad input: every ioctl with bad addresses, unaligned values, 0 and
 *    overflowing npages, unmapped and partly unmapped ranges, PROT_NONE,
 *    read-only, file-backed, shared and hugetlb vmas, bad pointers, bad
 *    flags and a bad stats header: the documented errno, and nothing moved.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "dmirror_thp_helpers.h"
#include "dmirror_thp_test.h"

#define RW	(PROT_READ | PROT_WRITE)

/* ---- RELEASE ---- */

DM_FIXTURE(release);

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

DM_FIXTURE(reload);

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

DM_FIXTURE(race);

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

DM_FIXTURE(fault_storm);

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
	 * Pages may be dropped meanwhile: MIGRATE_TO_DEV's read-back may
	 * then find one that the device cannot read, ENOENT (uapi/).
	 */
	bool dropped;
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
			 (ret == -ENOENT && a->dropped))
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
DM_FIXTURE(race2);

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
					  .to_dev = t == 0, .stop = &stop };
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
			       .dropped = true, .stop = &stop };
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

DM_FIXTURE(evict_race);

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

/* ---- HMM_DMIRROR_FLAG_FAIL_ALLOC is the file's ---- */

DM_FIXTURE(fail_alloc);

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

DM_FIXTURE(cow_write);

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

DM_FIXTURE(read_unlocked);

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

DM_FIXTURE(two_files);

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

/* ---- bad input: ranges ---- */

/* expected outcome of one op: 0 untested, XP_OK success, else the errno */
#define XP_OK	-1
/* success, and the pages with no vma read as HMM_DMIRROR_PROT_ERROR */
#define XP_SNAPERR	-3
#define ALL_EINVAL { EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL, EINVAL }

enum range_kind {
	R_UNALIGNED, R_ZERO, R_TOO_MANY, R_OVERFLOW, R_UNMAPPED, R_HALF_UNMAPPED,
	R_PROT_NONE, R_READ_ONLY, R_MEMFD_SHARED, R_MEMFD_PRIVATE,
	R_ANON_SHARED, R_HUGETLB, R_NULL, R_KERNEL,
};

DM_FIXTURE(badrange);

FIXTURE_VARIANT(badrange)
{
	enum range_kind kind;
	int exp[DM_IOC_NR_CMD];
};

#define BADRANGE(name, k, ...)						\
	FIXTURE_VARIANT_ADD(badrange, name) { .kind = (k), .exp = __VA_ARGS__ }

/*
 * The expected outcome of each command, in the order of dm_iocs[]:
 * READ, WRITE, MIGRATE_TO_DEV, MIGRATE_TO_SYS, SNAPSHOT, EXCLUSIVE and
 * CHECK_EXCLUSIVE.  READ_UNLOCKED answers what READ answers (uapi/): the
 * test takes READ's column for it.
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
 * HMM_DMIRROR_PROT_ERROR for a page with no vma.
 */
BADRANGE(unmapped, R_UNMAPPED,
	 { EFAULT, EFAULT, EINVAL, EINVAL, XP_SNAPERR, EINVAL, EINVAL });
BADRANGE(null_addr, R_NULL,
	 { EFAULT, EFAULT, EINVAL, EINVAL, XP_SNAPERR, EINVAL, EINVAL });
BADRANGE(partly_unmapped, R_HALF_UNMAPPED,
	 { EFAULT, EFAULT, EINVAL, EINVAL, XP_SNAPERR, EINVAL, EINVAL });

/* Protections: as test_hmm, the device faults like the CPU. */
BADRANGE(prot_none, R_PROT_NONE, { EFAULT, EFAULT, EINVAL, 0, 0, EINVAL, 0 });
BADRANGE(read_only, R_READ_ONLY, { XP_OK, EPERM, 0, 0, XP_OK, 0, 0 });

/* Not private anonymous memory: it cannot move to the device. */
BADRANGE(memfd_shared, R_MEMFD_SHARED,
	 { XP_OK, 0, EINVAL, 0, XP_OK, EINVAL, 0 });
BADRANGE(memfd_private, R_MEMFD_PRIVATE, { XP_OK, 0, EINVAL, 0, 0, 0, 0 });
BADRANGE(anon_shared, R_ANON_SHARED,
	 { XP_OK, XP_OK, EINVAL, 0, XP_OK, EINVAL, 0 });
BADRANGE(hugetlb, R_HUGETLB, { 0, 0, EINVAL, 0, 0, EINVAL, 0 });

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
		addr = 0xffff888000000000ULL;	/* x86_64 direct map */
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

DM_FIXTURE(badarg);

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

TEST_HARNESS_MAIN
