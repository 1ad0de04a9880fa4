// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp phase clock: the time of each phase of a migration path,
 * measured once and read two ways: summed in the device's counters for
 * HMM_DMIRROR_PHASES, and traced as dmirror_thp:phase events.  Calls
 * nothing of the module's.
 */
#include <linux/mm.h>

#include "dmirror.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

static unsigned int dmirror_dev_id(struct dmirror_device *mdevice)
{
	return MINOR(mdevice->cdevice.dev);
}

/**
 * dmirror_clock_start() - start the phase clock of one call of a path
 * @ctx:  the migration
 * @path: HMM_DMIRROR_PATH_*
 */
void dmirror_clock_start(struct dmirror_migrate_ctx *ctx, unsigned int path)
{
	ctx->path = path;
	atomic64_inc(&ctx->mdevice->path_calls[path]);
	trace_dmirror_thp_path(dmirror_dev_id(ctx->mdevice), path);
	ctx->t = ktime_get_ns();
}

/**
 * dmirror_clock_lap() - end the current phase and start the next
 * @ctx:   the migration
 * @phase: HMM_DMIRROR_PHASE_* that just ended
 */
void dmirror_clock_lap(struct dmirror_migrate_ctx *ctx, unsigned int phase)
{
	u64 now = ktime_get_ns(), ns = now - ctx->t;

	atomic64_add(ns, &ctx->mdevice->phase_ns[ctx->path][phase]);
	trace_dmirror_thp_phase(dmirror_dev_id(ctx->mdevice), ctx->path, phase,
				ns);
	ctx->t = ktime_get_ns();
}

/**
 * dmirror_trace_window() - trace what migrate_vma_setup() collected
 * @ctx:  the migration
 * @args: the collected window
 */
void dmirror_trace_window(struct dmirror_migrate_ctx *ctx,
			  const struct migrate_vma *args)
{
	unsigned long i, nr_migrate = 0, nr_compound = 0;

	if (!trace_dmirror_thp_window_enabled())
		return;
	for (i = 0; i < args->npages; i++) {
		if (!(args->src[i] & MIGRATE_PFN_MIGRATE))
			continue;
		nr_migrate++;
		nr_compound += !!(args->src[i] & MIGRATE_PFN_COMPOUND);
	}
	trace_dmirror_thp_window(dmirror_dev_id(ctx->mdevice), args->start,
				 args->npages, nr_migrate, nr_compound);
}
