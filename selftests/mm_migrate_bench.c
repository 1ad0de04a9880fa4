// SPDX-License-Identifier: GPL-2.0
/*
 * mm-migrate-bench: what migrating ordinary anonymous memory between NUMA
 * nodes costs, folio order by folio order.  No device memory: this is the
 * path of mbind(), move_pages(), NUMA balancing and compaction, which
 * remove_migration_pte() ends for every one of them.
 *
 * For each order (0 is base pages; 2 up to the PMD's are THPs of that size
 * alone, the others "never") and each way of moving (mbind(MPOL_MF_MOVE)
 * of the range, move_pages() of every page), a 2 MB-aligned buffer is
 * faulted in, checked to be folios of that order (pagemap and
 * /proc/kpageflags), then moved to node 1 and back to node 0, --iters
 * times, each move timed.  After each move every page must be on the node
 * it was sent to (move_pages() without nodes says where each is) and the
 * folios must still be of their order: a round where either fails is
 * reported, and the run fails.
 *
 *   mm-migrate-bench [-s MB] [-i ITERS] [-o ORDERS] [-m mbind|move_pages|both] [-j JSON]
 *
 * Output: one TAP result, the table as comments, and with -j the figures
 * as JSON, for vm/report/migrate_report.py to compare kernels.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dmirror_thp_helpers.h"

#define MPOL_BIND	2
#define MPOL_MF_MOVE	(1 << 1)

enum method { MBIND, MOVE_PAGES, NR_METHODS };
static const char *const method_name[NR_METHODS] = { "mbind", "move_pages" };

struct order_result {
	unsigned int order;
	enum method method;
	double *to1, *to0;	/* us per move, one per round */
	unsigned int rounds, whole;
	long splits, failed;	/* the order's split stat, pgmigrate_fail */
	const char *skip;
};

/*
 * Move [p, p + size) to @node: bind it there with mbind(MPOL_MF_MOVE), or
 * ask move_pages() for every page (@nodes and @status: one per page).
 */
static long move_to(enum method m, char *p, size_t size, int node,
		    void **pages, int *nodes, int *status)
{
	unsigned long mask = 1UL << node, i, n = size / DM_PAGE_SIZE;

	if (m == MBIND)
		return syscall(SYS_mbind, p, size, MPOL_BIND, &mask,
			       sizeof(mask) * 8, MPOL_MF_MOVE);
	for (i = 0; i < n; i++)
		nodes[i] = node;
	return syscall(SYS_move_pages, 0, n, pages, nodes, status,
		       MPOL_MF_MOVE);
}

/* Whether every page is on @node, as move_pages() without nodes says. */
static bool all_on(void **pages, int *status, unsigned long n, int node)
{
	unsigned long i;

	if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0))
		return false;
	for (i = 0; i < n; i++)
		if (status[i] != node)
			return false;
	return true;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, unsigned int n)
{
	double *s = malloc(n * sizeof(*s));
	double m;

	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

static bool folios_whole(char *p, unsigned long npages, unsigned int order)
{
	if (!order)
		return true;
	return pm_count_folios(p, npages, 1UL << order) ==
	       (long)(npages >> order);
}

static int run_order(struct order_result *r, size_t size, unsigned int iters)
{
	unsigned long npages = size / DM_PAGE_SIZE, i;
	int *status, *nodes;
	struct dm_buf b;
	void **pages;
	unsigned int k;
	char *p;
	int ret;

	dm_thp_only(r->order, THP_ALWAYS);
	/* 2 MB-aligned, so that a PMD-sized folio can back every part. */
	ret = dm_buf_alloc(&b, size, PROT_READ | PROT_WRITE, DM_THP_NONE);
	if (ret)
		return ret;
	p = b.ptr;
	pages = calloc(npages, sizeof(*pages));
	status = calloc(npages, sizeof(*status));
	nodes = calloc(npages, sizeof(*nodes));
	r->to1 = calloc(iters, sizeof(double));
	r->to0 = calloc(iters, sizeof(double));
	if (!pages || !status || !nodes || !r->to1 || !r->to0) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < npages; i++) {
		pages[i] = p + i * DM_PAGE_SIZE;
		p[i * DM_PAGE_SIZE] = (char)i;
	}
	if (!folios_whole(p, npages, r->order)) {
		r->skip = "no folios of this order to move";
		goto out;
	}
	if (move_to(r->method, p, size, 0, pages, nodes, status) ||
	    !all_on(pages, status, npages, 0)) {
		ret = -EIO;
		goto out;
	}

	r->splits = r->order ? mthp_stat(r->order, "split") : 0;
	r->failed = vmstat_get("pgmigrate_fail");
	for (k = 0; k < iters; k++) {
		double t0;
		bool ok;

		t0 = dm_now();
		ok = !move_to(r->method, p, size, 1, pages, nodes, status);
		r->to1[k] = (dm_now() - t0) * 1e6;
		ok &= all_on(pages, status, npages, 1) &&
		      folios_whole(p, npages, r->order);
		t0 = dm_now();
		ok &= !move_to(r->method, p, size, 0, pages, nodes, status);
		r->to0[k] = (dm_now() - t0) * 1e6;
		ok &= all_on(pages, status, npages, 0) &&
		      folios_whole(p, npages, r->order);
		r->rounds++;
		r->whole += ok;
	}
	r->splits = (r->order ? mthp_stat(r->order, "split") : 0) - r->splits;
	r->failed = vmstat_get("pgmigrate_fail") - r->failed;
	for (i = 0; i < npages; i++)
		if (p[i * DM_PAGE_SIZE] != (char)i)
			ret = -EIO;
out:
	free(pages);
	free(status);
	free(nodes);
	dm_buf_free(&b);
	return ret;
}

int main(int argc, char **argv)
{
	const char *orders_arg = "0,2,4,8,9", *json = NULL;
	struct order_result res[DM_MAX_ORDERS * NR_METHODS];
	unsigned int methods = 1U << MBIND | 1U << MOVE_PAGES;
	unsigned int iters = 7, nres = 0, i;
	unsigned long size_mb = 16;
	bool failed = false;
	char *list, *tok;
	int c;

	while ((c = getopt(argc, argv, "s:i:o:m:j:")) != -1) {
		switch (c) {
		case 's':
			size_mb = strtoul(optarg, NULL, 0);
			break;
		case 'i':
			iters = strtoul(optarg, NULL, 0);
			break;
		case 'o':
			orders_arg = optarg;
			break;
		case 'm':
			if (!strcmp(optarg, "mbind"))
				methods = 1U << MBIND;
			else if (!strcmp(optarg, "move_pages"))
				methods = 1U << MOVE_PAGES;
			else if (!strcmp(optarg, "both"))
				methods = 1U << MBIND | 1U << MOVE_PAGES;
			else
				methods = 0;
			break;
		case 'j':
			json = optarg;
			break;
		default:
			methods = 0;
			break;
		}
	}
	if (!methods) {
		fprintf(stderr, "usage: %s [-s MB] [-i ITERS] [-o ORDERS] [-m mbind|move_pages|both] [-j JSON]\n",
			argv[0]);
		return 2;
	}
	/* Whole 2 MB: a PMD-sized folio backs every part of the buffer. */
	if (!size_mb || size_mb % 2 || !iters || iters > 1000) {
		fprintf(stderr, "bad -s or -i\n");
		return 2;
	}

	printf("TAP version 13\n1..1\n");
	if (access("/sys/devices/system/node/node1", F_OK)) {
		printf("ok 1 mm-migrate-bench # SKIP one NUMA node\n");
		return 0;
	}

	list = strdup(orders_arg);
	for (tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		unsigned int order = strtoul(tok, NULL, 0);
		enum method m;

		for (m = 0; m < NR_METHODS; m++) {
			struct order_result *r;
			int ret;

			if (!(methods & 1U << m) || nres == DM_MAX_ORDERS * NR_METHODS)
				continue;
			r = &res[nres++];
			memset(r, 0, sizeof(*r));
			r->order = order;
			r->method = m;
			if (order && (order > DM_PMD_ORDER ||
				      !(thp_supported_orders() & (1UL << order)))) {
				r->skip = "no anonymous THP of this order";
				continue;
			}
			ret = run_order(r, size_mb << 20, iters);
			if (ret) {
				printf("# order %u, %s: %s\n", order,
				       method_name[m], strerror(-ret));
				failed = true;
			} else if (!r->skip && r->whole != r->rounds) {
				printf("# order %u, %s: %u of %u rounds kept the folios whole on the right node\n",
				       order, method_name[m], r->whole, r->rounds);
				failed = true;
			}
		}
	}
	free(list);
	thp_restore_settings();

	printf("# moves of %lu MB, node 0 -> 1 -> 0, %u rounds, median us\n",
	       size_mb, iters);
	printf("# %-8s %-10s %12s %12s %10s %8s %8s\n", "folio", "by",
	       "to node 1", "to node 0", "whole", "splits", "failed");
	for (i = 0; i < nres; i++) {
		struct order_result *r = &res[i];

		if (r->skip) {
			printf("# %6lukB %-10s %s\n", dm_order_kb(r->order),
			       method_name[r->method], r->skip);
			continue;
		}
		if (!r->rounds)
			continue;
		printf("# %6lukB %-10s %12.0f %12.0f %6u/%-3u %8ld %8ld\n",
		       dm_order_kb(r->order), method_name[r->method],
		       median(r->to1, r->rounds),
		       median(r->to0, r->rounds), r->whole, r->rounds,
		       r->splits, r->failed);
	}

	if (json) {
		FILE *f = fopen(json, "w");
		unsigned int k;

		if (!f) {
			perror(json);
			return 1;
		}
		fprintf(f, "{\"size_mb\": %lu, \"iters\": %u, \"orders\": [",
			size_mb, iters);
		for (i = 0; i < nres; i++) {
			struct order_result *r = &res[i];

			fprintf(f, "%s{\"order\": %u, \"kb\": %lu, \"method\": \"%s\", \"skip\": %s%s%s, \"whole\": %u, \"rounds\": %u, \"splits\": %ld, \"failed\": %ld, \"to1_us\": [",
				i ? ", " : "", r->order, dm_order_kb(r->order),
				method_name[r->method],
				r->skip ? "\"" : "", r->skip ? r->skip : "null",
				r->skip ? "\"" : "", r->whole, r->rounds,
				r->splits, r->failed);
			for (k = 0; k < r->rounds; k++)
				fprintf(f, "%s%.1f", k ? ", " : "", r->to1[k]);
			fprintf(f, "], \"to0_us\": [");
			for (k = 0; k < r->rounds; k++)
				fprintf(f, "%s%.1f", k ? ", " : "", r->to0[k]);
			fprintf(f, "]}");
		}
		fprintf(f, "]}\n");
		fclose(f);
	}
	printf("%s 1 mm-migrate-bench\n", failed ? "not ok" : "ok");
	return failed;
}
