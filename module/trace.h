/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dmirror-thp trace events: where each migration path's time goes.
 *
 *   dmirror_thp:path    a migration path starts (MIGRATE_TO_DEV, _TO_SYS,
 *                       a CPU fault, an eviction)
 *   dmirror_thp:phase   one of its phases ends, with its time: the same
 *                       measurement that HMM_DMIRROR_PHASES sums
 *   dmirror_thp:window  migrate_vma_setup() collected a window: how many
 *                       entries, how many of them to migrate, and of those
 *                       how many compound (a folio moving whole)
 *
 * trace-cmd record -e dmirror_thp, perf trace -e 'dmirror_thp:*', or
 * bpftrace; docs/tracing.md shows a trace of one THP round trip.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM dmirror_thp

#if !defined(_DMIRROR_THP_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _DMIRROR_THP_TRACE_H

#include <linux/tracepoint.h>

#include "dmirror_thp_uapi.h"

TRACE_DEFINE_ENUM(HMM_DMIRROR_PATH_TO_DEV);
TRACE_DEFINE_ENUM(HMM_DMIRROR_PATH_TO_SYS);
TRACE_DEFINE_ENUM(HMM_DMIRROR_PATH_FAULT);
TRACE_DEFINE_ENUM(HMM_DMIRROR_PATH_EVICT);
TRACE_DEFINE_ENUM(HMM_DMIRROR_PHASE_SETUP);
TRACE_DEFINE_ENUM(HMM_DMIRROR_PHASE_ALLOC);
TRACE_DEFINE_ENUM(HMM_DMIRROR_PHASE_COPY);
TRACE_DEFINE_ENUM(HMM_DMIRROR_PHASE_PAGES);
TRACE_DEFINE_ENUM(HMM_DMIRROR_PHASE_FINALIZE);
TRACE_DEFINE_ENUM(HMM_DMIRROR_PHASE_READBACK);

#define dmirror_trace_path(p)						\
	__print_symbolic(p,						\
			 { HMM_DMIRROR_PATH_TO_DEV, "to_dev" },		\
			 { HMM_DMIRROR_PATH_TO_SYS, "to_sys" },		\
			 { HMM_DMIRROR_PATH_FAULT, "fault" },		\
			 { HMM_DMIRROR_PATH_EVICT, "evict" })

#define dmirror_trace_phase(p)						\
	__print_symbolic(p,						\
			 { HMM_DMIRROR_PHASE_SETUP, "setup" },		\
			 { HMM_DMIRROR_PHASE_ALLOC, "alloc" },		\
			 { HMM_DMIRROR_PHASE_COPY, "copy" },		\
			 { HMM_DMIRROR_PHASE_PAGES, "pages" },		\
			 { HMM_DMIRROR_PHASE_FINALIZE, "finalize" },	\
			 { HMM_DMIRROR_PHASE_READBACK, "readback" })

TRACE_EVENT(dmirror_thp_path,
	    TP_PROTO(unsigned int dev, unsigned int path),
	    TP_ARGS(dev, path),
	    TP_STRUCT__entry(__field(unsigned int, dev)
			     __field(unsigned int, path)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->path = path;),
	    TP_printk("dev=%u path=%s", __entry->dev,
		      dmirror_trace_path(__entry->path))
);

TRACE_EVENT(dmirror_thp_phase,
	    TP_PROTO(unsigned int dev, unsigned int path, unsigned int phase,
		     u64 ns),
	    TP_ARGS(dev, path, phase, ns),
	    TP_STRUCT__entry(__field(unsigned int, dev)
			     __field(unsigned int, path)
			     __field(unsigned int, phase)
			     __field(u64, ns)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->path = path;
			   __entry->phase = phase;
			   __entry->ns = ns;),
	    TP_printk("dev=%u path=%s phase=%s ns=%llu", __entry->dev,
		      dmirror_trace_path(__entry->path),
		      dmirror_trace_phase(__entry->phase), __entry->ns)
);

TRACE_EVENT(dmirror_thp_window,
	    TP_PROTO(unsigned int dev, unsigned long start,
		     unsigned long npages, unsigned long nr_migrate,
		     unsigned long nr_compound),
	    TP_ARGS(dev, start, npages, nr_migrate, nr_compound),
	    TP_STRUCT__entry(__field(unsigned int, dev)
			     __field(unsigned long, start)
			     __field(unsigned long, npages)
			     __field(unsigned long, nr_migrate)
			     __field(unsigned long, nr_compound)),
	    TP_fast_assign(__entry->dev = dev;
			   __entry->start = start;
			   __entry->npages = npages;
			   __entry->nr_migrate = nr_migrate;
			   __entry->nr_compound = nr_compound;),
	    TP_printk("dev=%u start=0x%lx npages=%lu migrate=%lu compound=%lu",
		      __entry->dev, __entry->start, __entry->npages,
		      __entry->nr_migrate, __entry->nr_compound)
);

#endif /* _DMIRROR_THP_TRACE_H */

/* An out-of-tree module's trace header: found through -I$(src). */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
