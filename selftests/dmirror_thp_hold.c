// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp-hold: put THPs on the device and keep them there, for a look
 * from outside (tools/dmirror-pmds.py under drgn, gdb, /proc/PID/smaps and
 * pagemap).  On SIGINT or SIGTERM it brings them back through CPU faults
 * and checks every byte.
 *
 * dmirror-thp-hold [NTHP [DEVICE]]    (default 4 THPs, device 0)
 *
 * Prints "ready: pid PID, NTHP THPs at ADDR on DEVICE" once the THPs are
 * device-private PMDs, then waits.  Exit status 0 if the data came back
 * intact, 1 otherwise.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dmirror_thp_helpers.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct hmm_dmirror_cmd cmd;
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t mask, old;
	size_t nthp = 4, size;
	struct dm_buf b;
	int dev = 0, fd;
	long bad;

	if (argc > 3 || (argc > 1 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: %s [NTHP [DEVICE]]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		nthp = strtoul(argv[1], NULL, 0);
	if (argc > 2)
		dev = atoi(argv[2]);
	if (!nthp || nthp > 512) {
		fprintf(stderr, "NTHP: 1 to 512 THPs\n");
		return 2;
	}
	size = nthp * DM_THP_SIZE;
	fd = dm_open(dev);
	if (fd < 0) {
		fprintf(stderr, "device %d: %s\n", dev, strerror(-fd));
		return 1;
	}
	if (dm_buf_alloc(&b, size, PROT_READ | PROT_WRITE, DM_THP_ON)) {
		perror("dm_buf_alloc");
		return 1;
	}
	dm_fill(b.ptr, size, 0x686f6c64);
	if (!dm_is_sys_thp(b.ptr, nthp))
		fprintf(stderr, "warning: not every 2 MB is a system THP\n");
	if (dm_to_dev(fd, b.ptr, dm_npages(size), b.mirror, &cmd)) {
		perror("MIGRATE_TO_DEV");
		return 1;
	}
	printf("ready: pid %d, %zu THPs at %p on /dev/hmm_dmirror%d (%llu pages moved)\n",
	       getpid(), nthp, (void *)b.ptr, dev, (unsigned long long)cmd.cpages);
	fflush(stdout);

	/* Blocked but while sigsuspend() waits: no signal slips in between. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, &old);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!stop)
		sigsuspend(&old);

	/* The CPU reads fault every THP back. */
	bad = dm_verify(b.ptr, size, 0x686f6c64);
	if (bad >= 0) {
		printf("not ok: mismatch at byte %ld\n", bad);
		return 1;
	}
	printf("ok: %zu MB read back intact\n", size >> 20);
	dm_buf_free(&b);
	close(fd);
	return 0;
}
