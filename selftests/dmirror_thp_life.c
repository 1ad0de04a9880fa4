// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp selftests: lifecycle, concurrency and bad input, one
 * harness binary from three parts that this file includes:
 *
 *   dmirror_thp_life_lifecycle.c  RELEASE, module unload and reload,
 *                                 FAIL_ALLOC's file, a device write after
 *                                 fork, READ_UNLOCKED, two files
 *   dmirror_thp_life_races.c      concurrent faults, migrations racing
 *                                 faults and zaps, eviction racing exit
 *   dmirror_thp_life_badinput.c   bad ranges and bad arguments
 *
 * Included, not linked: kselftest_harness.h keeps its fixture and test
 * lists in static variables, so the TEST_Fs of another translation unit
 * would never reach this one's runner.  The fixtures are declared here,
 * in the order the suite runs them (fixture by fixture, in the order of
 * their declaration); the parts add the variants and the tests.
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

DM_FIXTURE(release);
DM_FIXTURE(reload);
DM_FIXTURE(race);
DM_FIXTURE(fault_storm);
DM_FIXTURE(race2);
DM_FIXTURE(evict_race);
DM_FIXTURE(fail_alloc);
DM_FIXTURE(cow_write);
DM_FIXTURE(read_unlocked);
DM_FIXTURE(two_files);
DM_FIXTURE(badrange);
DM_FIXTURE(badarg);

#include "dmirror_thp_life_lifecycle.c"
#include "dmirror_thp_life_races.c"
#include "dmirror_thp_life_badinput.c"

TEST_HARNESS_MAIN
