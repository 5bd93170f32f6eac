/* Operations and the slowest root calls (root_calls.c), for the call
 * builder: it calls these hooks at each entry, each completed call and
 * each completed root call; they keep their state in an ftf_root_calls
 * (embedded in the builder) and each task's ftf_task_calls, and call
 * nothing of the builder's.
 */
#ifndef FTF_ROOT_CALLS_H
#define FTF_ROOT_CALLS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "funcs.h"
#include "u64map.h"

/* Operations: a root call that is a dispatcher (svc_process, nfsd_dispatch,
 * ...) is labelled by the NFS procedure it reached below it (the first
 * nfsd3_proc_* / nfsd_proc_* / nfsd4_proc_null, or the operations an
 * nfsd4_proc_compound called, "COMPOUND(PUTFH,WRITE)"). Slowest calls: the
 * calls of the open root call are kept per task (entry order) and, when it
 * completes among the N slowest of its (root path, operation), copied. */
#define FTF_OP_NONE (-1)
#define FTF_OP_MAX_PARTS 16 /* COMPOUND operations named; more show as ",..." */
#define FTF_SLOWEST_DEFAULT 20 /* slowest root calls kept per (root path, operation) */
#define FTF_TREE_MAX_RECS (1u << 18) /* calls kept for one open root call */
#define FTF_MAX_ARGS 6 /* argument values an entry records (funcgraph-args: FTRACE_REGS_MAX_ARGS) */

/* One call of an open or kept tree, 20 bytes: the figures that fit 32 bits
 * are here, the rest (and every irq, off-CPU, irq-subtree count and CPU
 * other than the tree's) is an ftf_rec_extra beside it. Most calls are
 * leaves in task context on one CPU: 20 B, where the full figures took 64. */
typedef struct {
	uint32_t func;
	uint32_t parent;     /* record index, FTF_NONE for the root */
	int32_t start;       /* calltime - the tree's base (ns); FTF_REC_START_ESC: an extra */
	uint32_t dur;        /* ns; FTF_REC_U32_ESC: an extra */
	uint32_t desc_flags; /* recorded descendants (low 24 bits; FTF_REC_DESC_ESC: an extra) | FTF_REC_* << 24 */
} ftf_rec;

#define FTF_REC_START_ESC INT32_MIN
#define FTF_REC_U32_ESC UINT32_MAX
#define FTF_REC_DESC_ESC 0xffffffu
#define FTF_REC_FLAGS_SHIFT 24

/* A figure of a call that is not in its ftf_rec (rare: a value too big for
 * it, or a non-zero irq/off-CPU figure, or another CPU than the tree's). */
typedef struct {
	uint32_t rec;   /* record index */
	uint32_t field; /* FTF_EX_* */
	uint64_t value;
} ftf_rec_extra;

enum ftf_rec_extra_field {
	FTF_EX_START,     /* calltime (absolute ns) */
	FTF_EX_DUR,
	FTF_EX_DESC,
	FTF_EX_IRQ,       /* ns in interrupt subtrees */
	FTF_EX_OFFCPU,
	FTF_EX_IRQ_ROOTS,
	FTF_EX_CPU,       /* where the call ended (int32) */
	FTF_EX_SCHED,     /* switch work inside the call (ftf_sums.sched) */
	FTF_EX_SCHED_CALLS,
	FTF_EX_SCHED_OUTS,
	FTF_EX_OFFCPU_CALLS,
	FTF_EX_RETVAL,    /* the return value, when not 0 (FTF_REC_RET) */
	FTF_EX_ARG0,      /* ...FTF_EX_ARG0 + FTF_MAX_ARGS - 1: argument values, when not 0 (FTF_REC_ARGS) */
	FTF_EX_FIELDS = FTF_EX_ARG0 + FTF_MAX_ARGS
};

enum ftf_rec_flags {
	FTF_REC_DONE = 1, /* the call completed (else: its exit never came) */
	FTF_REC_IRQ = 2,  /* ran in irq context */
	FTF_REC_GAP = 4,  /* spans lost events / overrun / lost exits */
	FTF_REC_RET = 8,  /* its exit carried a return value (an FTF_EX_RETVAL extra unless 0) */
	FTF_REC_ARGS = 16, /* its entry carried argument values (FTF_EX_ARG* extras unless 0) */
};

typedef struct {
	uint32_t op_parts[FTF_OP_MAX_PARTS];
	uint8_t op_n, op_kind, op_more;
	uint32_t op_compound; /* stack index of nfsd4_proc_compound, FTF_NONE */
	ftf_rec *recs;        /* the open root call's calls, entry order */
	uint32_t nrecs, caprecs;
	ftf_rec_extra *extras; /* their figures that do not fit a ftf_rec, as they came (entry: args; exit) */
	uint32_t nextras, capextras;
	uint64_t base;        /* the tree's base calltime: its first completed call's */
	int32_t cpu;          /* the tree's CPU: where its first completed call ended */
	uint32_t retained;    /* bytes of recs and extras kept while no root call is open
			       * (ftf_builder.calls_retained) */
	uint8_t has_base;
	uint8_t recs_cut;     /* the open root call has more calls (or extras) than FTF_TREE_MAX_RECS */
} ftf_task_calls;

typedef struct {
	uint64_t sample; /* index in ftf_builder.samples */
	uint64_t dur;
	ftf_rec *recs;   /* NULL when the tree was too big to keep */
	ftf_rec_extra *extras;
	uint32_t nrecs, nextras;
	uint32_t caprecs, capextras; /* the buffers came from a task (swapped, not copied) */
	uint64_t base;
	int32_t cpu;
} ftf_kept;

/* the on-CPU heap's size, in slowest_n: candidates for the corrected ranking */
#define FTF_SLOWEST_CANDIDATES 4

typedef struct {
	ftf_kept *heap; /* min-heap by dur, at most slowest_n */
	uint32_t n, cap; /* cap grows to slowest_n as trees come: a root path seen once holds one */
	/* min-heap by the call's on-CPU task time (its dur less off-CPU, irq
	 * and switch-work time, in its .dur), at most FTF_SLOWEST_CANDIDATES x
	 * slowest_n: the candidates for the corrected figures' slowest calls.
	 * The hook cost is known only after the read, and a call's corrected
	 * duration is its on-CPU time less that cost times its own number of
	 * calls, so the two orders differ; a corrected duration is never more
	 * than the on-CPU time, and Python keeps the slowest_n of these by
	 * corrected duration (ftflame/correct/operations.py ranked_slowest),
	 * checking that no call left out was slower. */
	ftf_kept *heap_c;
	uint32_t n_c, cap_c;
} ftf_slow_group;

/* The call stream (report/perfetto.py): every root call's tree as the
 * slowest calls keep theirs (ftf_rec, ftf_rec_extra), and the task's
 * off-CPU stretches, lost-event marks and orphan exits, appended to three
 * files as they come: a row of FTF_SPOOL_COLS int64 per item (headers),
 * the trees' records and their extras one tree after the other. Memory
 * stays that of the open root calls; the renderer reads the files back a
 * batch at a time once the Profile and its corrections are made. */
#define FTF_SPOOL_COLS 10
enum ftf_spool_col {
	FTF_SP_KIND, FTF_SP_PID, FTF_SP_CPU, FTF_SP_SAMPLE, FTF_SP_FUNC, FTF_SP_T0, FTF_SP_T1,
	FTF_SP_NRECS, FTF_SP_NEXTRAS, FTF_SP_FLAGS
};
enum ftf_spool_kind {
	FTF_SPK_TREE = 1,   /* a root call's tree: SAMPLE (-1: never completed), T0 its base, CPU its
			     * CPU, NRECS records (-1: more than FTF_TREE_MAX_RECS, none written), NEXTRAS */
	FTF_SPK_OFFCPU = 2, /* the task was switched out from T0 to T1 (record timestamps) */
	FTF_SPK_LOST = 3,   /* a lost-event mark on CPU at T0, T1 events (-1: unknown) */
	FTF_SPK_ORPHAN = 4, /* an exit without its entry: FUNC from T0 (calltime) for T1 ns, FLAGS 1: irq */
};
typedef struct {
	FILE *f[3];   /* headers, records, extras */
	int err;      /* errno of the first failed write, 0 */
	uint64_t rows, recs;
} ftf_spool;

typedef struct {
	ftf_funcs ops;      /* operation labels; a root call's op indexes them */
	char **op_how;      /* per operation: the function(s) that named it */
	uint8_t *func_op;   /* per func: 0 unknown, else the function's kind of operation + 1 */
	uint32_t nfunc_op;
	/* the slowest root calls: slowest_n per (root path, operation) */
	uint32_t slowest_n; /* 0: none kept (set before feeding) */
	ftf_slow_group *slow;
	uint32_t nslow, capslow;
	ftf_u64map slow_map; /* (node, op) -> group idx+1 */
	uint64_t slow_cut;   /* root calls too big to keep their tree */
	uint64_t retained;   /* bytes of the tasks' idle tree buffers */
	uint32_t nargs;      /* the most argument values a kept call's entry carried */
	ftf_spool *spool;    /* every root call's tree written out (NULL: none) */
	int oom;             /* out of memory: the builder stops */
} ftf_root_calls;

/* A completed call's switch work (ftf_sums.sched, .sched_calls, .sched_outs, .offcpu_calls). */
typedef struct {
	uint64_t ns, calls, outs;
	uint64_t offcpu_calls; /* calls recorded while switched out (ftf_sums.offcpu_calls) */
} ftf_schedw;

/* A root call opens on the task. */
void ftf_calls_root_start(ftf_root_calls *rc, ftf_task_calls *tc);
/* A call enters (funcs: the builder's function names): its record index in
 * the task's tree, FTF_NONE when not kept. */
/* (ftf_calls_entry's and ftf_calls_exit's parts out of line: a function's
 * operation kind the first time, an operation's function, the records'
 * growth and cut, a figure its record does not hold) */
void ftf_calls_op_func(ftf_root_calls *rc, ftf_task_calls *tc, const ftf_funcs *funcs, uint32_t func,
		       uint32_t stack_idx, uint32_t lparent);
/* Room in the open tree for one more record (grown when full); 0: none,
 * the tree is not kept or is cut (too many calls, out of memory). */
int ftf_calls_rec_room(ftf_root_calls *rc, ftf_task_calls *tc);
void ftf_calls_extra_add(ftf_root_calls *rc, ftf_task_calls *tc, uint32_t rec, uint32_t field, uint64_t value);
/* Inline, as ftf_calls_exit: the builder calls both once a call, and the
 * calls into this file were some 35 instructions of a call's ~1,200. */
static inline uint32_t ftf_calls_entry(ftf_root_calls *rc, ftf_task_calls *tc, const ftf_funcs *funcs,
				       uint32_t func, uint32_t stack_idx, uint32_t lparent, uint32_t parent_rec,
				       int in_irq)
{
	/* func_op: the kind + 1, 1 for a function of no operation */
	if (!in_irq && !(func < rc->nfunc_op && rc->func_op[func] == 1))
		ftf_calls_op_func(rc, tc, funcs, func, stack_idx, lparent);
	/* (any of these: ftf_calls_rec_room decides) */
	if (((!rc->slowest_n && !rc->spool) || tc->recs_cut || tc->nrecs >= FTF_TREE_MAX_RECS ||
	     tc->nrecs == tc->caprecs) && !ftf_calls_rec_room(rc, tc))
		return FTF_NONE;
	ftf_rec *r = &tc->recs[tc->nrecs];
	r->func = func;
	r->parent = parent_rec < tc->nrecs ? parent_rec : FTF_NONE;
	r->start = 0;
	r->dur = 0;
	r->desc_flags = (uint32_t)(in_irq ? FTF_REC_IRQ : 0) << FTF_REC_FLAGS_SHIFT;
	return tc->nrecs++;
}
static inline void ftf_calls_exit(ftf_root_calls *rc, ftf_task_calls *tc, uint32_t rec, int gap, int irq,
				  int32_t cpu, uint64_t calltime, uint64_t dur, uint64_t desc, uint64_t irq_ns,
				  uint64_t off, uint64_t irq_roots, const ftf_schedw *sw)
{
	if (rec >= tc->nrecs || tc->recs_cut)
		return;
	if (!tc->has_base) {
		tc->has_base = 1;
		tc->base = calltime;
		tc->cpu = cpu;
	}
	ftf_rec *r = &tc->recs[rec];
	uint32_t flags = FTF_REC_DONE | (irq ? FTF_REC_IRQ : 0) | (gap ? FTF_REC_GAP : 0);
	int64_t start = (int64_t)(calltime - tc->base); /* two's complement: a call that began before the base */
	if (start > INT32_MIN && start <= INT32_MAX) {
		r->start = (int32_t)start;
	} else {
		r->start = FTF_REC_START_ESC;
		ftf_calls_extra_add(rc, tc, rec, FTF_EX_START, calltime);
	}
	r->dur = dur < FTF_REC_U32_ESC ? (uint32_t)dur : FTF_REC_U32_ESC;
	if (r->dur == FTF_REC_U32_ESC)
		ftf_calls_extra_add(rc, tc, rec, FTF_EX_DUR, dur);
	uint32_t d = desc < FTF_REC_DESC_ESC ? (uint32_t)desc : FTF_REC_DESC_ESC;
	if (d == FTF_REC_DESC_ESC)
		ftf_calls_extra_add(rc, tc, rec, FTF_EX_DESC, desc);
	flags |= (r->desc_flags >> FTF_REC_FLAGS_SHIFT) & (FTF_REC_RET | FTF_REC_ARGS);
	r->desc_flags = d | flags << FTF_REC_FLAGS_SHIFT;
	/* the figures most calls have none of: one test of them all first */
	if (!(irq_ns | off | irq_roots | sw->ns | sw->calls | sw->outs | sw->offcpu_calls) && cpu == tc->cpu)
		return;
	if (irq_ns)
		ftf_calls_extra_add(rc, tc, rec, FTF_EX_IRQ, irq_ns);
	if (off)
		ftf_calls_extra_add(rc, tc, rec, FTF_EX_OFFCPU, off);
	if (irq_roots)
		ftf_calls_extra_add(rc, tc, rec, FTF_EX_IRQ_ROOTS, irq_roots);
	if (cpu != tc->cpu)
		ftf_calls_extra_add(rc, tc, rec, FTF_EX_CPU, (uint64_t)(uint32_t)cpu);
	/* switch work: only around a switch, rare like off-CPU time */
	if (sw->ns)
		ftf_calls_extra_add(rc, tc, rec, FTF_EX_SCHED, sw->ns);
	if (sw->calls)
		ftf_calls_extra_add(rc, tc, rec, FTF_EX_SCHED_CALLS, sw->calls);
	if (sw->outs)
		ftf_calls_extra_add(rc, tc, rec, FTF_EX_SCHED_OUTS, sw->outs);
	if (sw->offcpu_calls)
		ftf_calls_extra_add(rc, tc, rec, FTF_EX_OFFCPU_CALLS, sw->offcpu_calls);
}
/* Values a call's entry or exit carried (flag FTF_REC_ARGS with the n
 * arguments from FTF_EX_ARG0, or FTF_REC_RET with its return value at
 * FTF_EX_RETVAL), kept with record rec of the open tree. */
void ftf_calls_values(ftf_root_calls *rc, ftf_task_calls *tc, uint32_t rec, uint32_t flag, uint32_t field,
		      const uint64_t *v, uint32_t n);
/* The completed root call's operation, FTF_OP_NONE. */
int32_t ftf_calls_root_op(ftf_root_calls *rc, ftf_task_calls *tc, const ftf_funcs *funcs);
/* The completed root call became sample `sample` (its root path's node,
 * its operation, its duration, its on-CPU task time): kept if among the
 * slowest by either. */
void ftf_calls_root_end(ftf_root_calls *rc, ftf_task_calls *tc, uint64_t sample, uint32_t node, int32_t op,
			uint64_t dur, uint64_t on_cpu);
void ftf_calls_free(ftf_root_calls *rc);
/* The call stream: one header row; the task's open (or just completed) root
 * call's tree, sample -1 for one that never completed, written unless it
 * has no records. */
void ftf_spool_row(ftf_spool *sp, const int64_t row[FTF_SPOOL_COLS]);
void ftf_spool_tree(ftf_root_calls *rc, ftf_task_calls *tc, int32_t pid, int64_t sample);
void ftf_task_calls_free(ftf_root_calls *rc, ftf_task_calls *tc);


/* A block of memory for a table that grows all through the read (root_calls.c):
 * under FTF_BLK_MAP bytes from malloc, else a mapping of its own (page-aligned),
 * grown in place by mremap (no copy, no second set of pages) and given back on
 * free. ftf_blk_grow: p (old bytes) grown to n bytes, its content kept; NULL (p
 * untouched) when out of memory. ftf_blk_zalloc: n bytes of zeros, to be given
 * back by ftf_blk_free; NULL when out of memory. ftf_blk_free: p of n bytes. */
#define FTF_BLK_MAP ((size_t)16 << 10)
void *ftf_blk_grow(void *p, size_t old, size_t n);
void *ftf_blk_zalloc(size_t n);
void ftf_blk_free(void *p, size_t n);

#endif
