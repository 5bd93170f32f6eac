/* The call builder (builder.c): events -> per-task stacks -> call-path aggregate.
 *
 * Every reader (trace.dat via libtracecmd, the text tokenizer) produces
 * ftf_event records and feeds them, in per-task order, to one ftf_builder.
 * The builder keeps one stack per task and aggregates completed calls into a
 * call-path tree whose size is O(distinct call paths), never O(events).
 */
#ifndef FTF_BUILDER_H
#define FTF_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "funcs.h"
#include "root_calls.h"
#include "u64map.h"

/* ---- events ------------------------------------------------------------ */

enum ftf_event_kind {
	FTF_EV_ENTRY = 1,  /* funcgraph_entry / fgraph_retaddr_entry */
	FTF_EV_EXIT = 2,   /* funcgraph_exit: calltime, rettime, overrun */
	FTF_EV_SWITCH = 3, /* sched_switch: pid = prev_pid, next_pid */
	FTF_EV_LOST = 4,   /* lost events on cpu: lost = count, -1 unknown */
	FTF_EV_LEAF = 5,   /* text only: entry+exit in one line (duration known) */
};

/* common_flags bits (include/linux/trace_events.h) */
#define FTF_FLAG_HARDIRQ 0x08
#define FTF_FLAG_SOFTIRQ 0x10
#define FTF_FLAG_NMI 0x40
#define FTF_FLAG_IRQ_MASK (FTF_FLAG_HARDIRQ | FTF_FLAG_SOFTIRQ | FTF_FLAG_NMI)

/* One cache line: written on the decoding thread, read on the builder's.
 * The fields are kind-specific, so those of kinds that never meet share
 * storage (the union); a reader reads only its kind's. */
typedef struct {
	uint8_t kind;
	uint8_t flags;     /* common_flags of the record */
	uint8_t has_retval; /* EXIT, LEAF: retval holds the call's return value */
	uint8_t subbuf_start; /* trace.dat: the record was the first of its ring-buffer sub-buffer
	                       * (page): writing it moved the buffer to a new sub-buffer */
	int32_t cpu;
	int32_t pid;       /* common_pid (prev_pid for SWITCH) */
	uint32_t func;     /* function id (ftf_funcs) */
	int32_t depth;     /* a trace.dat's is 32-bit (ftf_rd_depth_of), a text's below TXT_MAX_DEPTH */
	uint32_t nargs;    /* ENTRY, LEAF: values at args */
	uint64_t ts;       /* record timestamp: ring-buffer clock */
	uint64_t calltime; /* EXIT: trace_clock_local(), not the ts clock */
	uint64_t rettime;
	uint64_t retval;   /* EXIT, LEAF with has_retval: as recorded (an int's in the low 32 bits) */
	union {
		uint64_t overrun;  /* EXIT: the task's cumulative overrun counter */
		int64_t lost;      /* LOST: count of lost events, -1 when unknown */
		int32_t next_pid;  /* SWITCH */
		const uint64_t *args; /* ENTRY, LEAF: nargs argument values (funcgraph-args), valid while fed */
	};
} ftf_event;
_Static_assert(sizeof(ftf_event) == 64, "an event is one cache line");

/* ---- function names: funcs.h --------------------------------------------- */

int ftf_func_name_is_irq_entry(const char *name);
int ftf_func_name_is_sched_entry(const char *name);

/* ---- histogram: log2 buckets with 16 linear sub-buckets -----------------
 * Values 0..15 ns have exact buckets; above, each power of two is split in
 * 16, so a bucket's width is at most 1/16 of its lower bound (6.25%). */
#define FTF_HIST_SUB 16
#define FTF_HIST_OCTAVES 44 /* up to 2^48 ns (~3 days) */
#define FTF_HIST_BUCKETS (FTF_HIST_SUB + FTF_HIST_OCTAVES * FTF_HIST_SUB)
uint32_t ftf_hist_bucket(uint64_t v);
uint64_t ftf_hist_lower(uint32_t bucket);

/* Sparse until it holds FTF_HIST_SPARSE_MAX distinct buckets, then dense:
 * most call paths see few calls, and memory must stay O(call paths). */
#define FTF_HIST_SPARSE_MAX 32
/* A sparse bucket and its count side by side: one cache line holds
 * several, where separate key and count arrays cost two misses per call. */
typedef struct {
	uint16_t bucket;
	uint32_t count;
} ftf_hist_entry;
/* A histogram in 16 bytes, inside its node. Most call paths see a handful of
 * distinct durations (at most 4 on 82-87% of the nfsd fixtures' paths): their
 * buckets stay in the histogram itself, each a 32-bit word, bucket << 22 |
 * count, 0 when free, most frequent first (a separate block cost a cache miss
 * per call). A fifth bucket, or a count reaching 2^22 - 1, moves them out
 * ("spilled"): then the words hold a pointer to the sparse entries (cap of
 * them, n used) or to the dense counts (cap FTF_HIST_DENSE), and the last
 * word is FTF_HIST_SPILLED, a bucket no duration reaches (< FTF_HIST_BUCKETS). */
#define FTF_HIST_INLINE 4
#define FTF_HIST_COUNT_BITS 22
#define FTF_HIST_COUNT_MASK ((1u << FTF_HIST_COUNT_BITS) - 1)
#define FTF_HIST_SPILLED UINT32_MAX
#define FTF_HIST_DENSE UINT16_MAX
typedef union {
	uint32_t first[FTF_HIST_INLINE];
	struct {
		void *p;          /* ftf_hist_entry[cap], or uint32_t[FTF_HIST_BUCKETS] when dense */
		uint16_t n, cap;
		uint32_t tag;     /* FTF_HIST_SPILLED, over first[FTF_HIST_INLINE - 1] */
	} out;
} ftf_hist;
_Static_assert(sizeof(ftf_hist) == 16, "a histogram is 16 bytes of its node");
_Static_assert(((FTF_HIST_BUCKETS - 1) << FTF_HIST_COUNT_BITS | FTF_HIST_COUNT_MASK) < FTF_HIST_SPILLED,
	       "no inline bucket looks like the spilled tag");

static inline int ftf_hist_spilled(const ftf_hist *h)
{
	return h->out.tag == FTF_HIST_SPILLED;
}
/* The dense counts (FTF_HIST_BUCKETS of them), NULL while sparse. */
static inline const uint32_t *ftf_hist_dense(const ftf_hist *h)
{
	return ftf_hist_spilled(h) && h->out.cap == FTF_HIST_DENSE ? (const uint32_t *)h->out.p : NULL;
}
/* Of a sparse histogram: how many buckets, and the k-th (any order). */
uint32_t ftf_hist_nsparse(const ftf_hist *h);
void ftf_hist_sparse_at(const ftf_hist *h, uint32_t k, uint32_t *bucket, uint32_t *count);
int ftf_hist_add(ftf_hist *h, uint32_t bucket);
void ftf_hist_free(ftf_hist *h);
/* Tests: inline counts spill from this value on (FTF_HIST_COUNT_MASK), so
 * that a test need not make 4 M calls of one path. */
extern uint32_t ftf_hist_inline_max;

/* ---- the aggregate ----------------------------------------------------- */

/* Counts of a call path are 32 bits, saturated at FTF_COUNT_MAX (never
 * wrapped): the node table's 32-bit columns refuse a count past INT32_MAX
 * (module.c), so a saturated one is an error, not a figure. 48 bytes of
 * each node less than 64-bit counts (6 MB of the read's peak for 125k
 * call paths). */
#define FTF_COUNT_MAX UINT32_MAX
static inline uint32_t ftf_count_add(uint32_t count, uint64_t more)
{
	uint64_t sum = (uint64_t)count + more;
	return sum > FTF_COUNT_MAX ? FTF_COUNT_MAX : (uint32_t)sum;
}

/* Linear sums over a set of completed calls. */
typedef struct {
	uint64_t incl;   /* sum of rettime - calltime */
	int64_t excl;    /* sum of incl - children's incl (can be < 0 on clock skew) */
	uint64_t irq;    /* sum of time in irq subtrees nested inside the call */
	uint64_t offcpu; /* sum of time the task was switched out during the call */
	uint32_t calls;
	uint32_t desc;   /* sum of recorded descendants D (irq subtrees excluded) */
	uint32_t nchild; /* sum of direct children n (irq subtrees excluded) */
	uint32_t irq_calls; /* sum of calls recorded inside those irq subtrees */
	/* Switch work: the on-CPU time (inclusive, less its own off-CPU and
	 * interrupt time) of the task-context frames a switched-out task came
	 * back in (the scheduler's frame open across the switch: __cond_resched,
	 * schedule...), inside the call; charged like offcpu to the frame and
	 * every frame open around it. The calls the correction charges O_in
	 * (those frames and their descendants) and O_out (their descendants and
	 * irq subtrees) for, so its hook cost is taken out of it once. */
	uint64_t sched;
	uint32_t sched_calls, sched_outs;
	/* Calls the task recorded while switched out (after its sched_switch
	 * event, before its switch-in: the tail of __schedule(), such as
	 * switch_mm_irqs_off()) inside the call, not in sched_calls/outs: their
	 * time and hook cost are inside the off-CPU time. */
	uint32_t offcpu_calls;
} ftf_sums;

enum ftf_node_flags {
	FTF_NODE_IRQ = 1,      /* the calls ran in hardirq/softirq/NMI context */
	FTF_NODE_IRQ_ROOT = 2, /* ...and this is where the irq subtree starts */
	FTF_NODE_PARTIAL = 4,  /* under the (partial) root: ancestors unknown */
};

/* A call path, 128 bytes, 64-byte aligned (the table is 20+ MB, so each
 * line is a miss): the first line holds all a call of the path reads or
 * writes when its extremes do not move and the report keeps no exclusive
 * histogram (the text's): what the child lookup reads (func, flags, hints),
 * the counts and sums, the inclusive histogram, and the buckets of its
 * extremes, which tell without the second line whether a call can be a new
 * minimum or maximum (a value in a bucket strictly between those of the
 * extremes is neither). The second line holds the exact extremes, the
 * exclusive histogram and what is read at a hint's miss or once per root
 * call. The figures that are zero on almost every path (the gap set: 34-51%
 * of the nfsd fixtures' paths; interrupts, off-CPU time, anomalies: under
 * 1%) are in an ftf_node_more of its own, made on first use. Was 288 bytes
 * with them all inside (51 MB of the read's peak for 179k paths). */
typedef struct {
	/* ---- first line ---- */
	uint32_t func;
	/* flags: ftf_node_flags; incl_min_b, incl_max_b: ftf_hist_bucket() of
	 * incl_min and incl_max (below 2^10) */
	uint32_t flags : 3, incl_min_b : 10, incl_max_b : 10;
	/* Child lookup hints (node_child): the child path entered first under
	 * this path's last call, and the sibling entered after this path's last
	 * call under the same parent; FTF_NONE: none yet. Calls under a path
	 * mostly repeat the same sequence, so the next child is usually the
	 * hint and the node map (a cache miss or two) is not searched. */
	uint32_t first_child_hint, next_sibling_hint;
	/* of every completed call: ftf_sums but irq, irq_calls, offcpu (in more) */
	uint32_t calls, desc, nchild;
	int16_t excl_min_b, excl_max_b; /* excl_bucket() of excl_min and excl_max (builder.c) */
	uint64_t incl;
	int64_t excl;
	ftf_hist hist_incl;     /* inclusive time of every call */
	/* ---- second line ---- */
	uint32_t parent; /* FTF_NONE for a root */
	uint32_t more;   /* index in ftf_builder.more, FTF_NONE: all its figures zero */
	/* complete root calls (none spanning a gap) in which this path was
	 * called at least once: its calls' independent observations (calls
	 * inside one root call move together); 0 for a root path itself */
	uint32_t roots;
	/* of those root calls, the ones where this path was the first path of
	 * its function: summed over a function's paths, the root calls that
	 * called the function (a root call counted once, whatever its paths) */
	uint32_t func_roots;
	uint64_t incl_min, incl_max;
	int64_t excl_min, excl_max;
	ftf_hist hist_excl;     /* exclusive time (negative values in bucket 0) */
} ftf_node;
_Static_assert(sizeof(ftf_node) == 128, "a node is two cache lines");
_Static_assert(offsetof(ftf_node, parent) == 64, "the per-call fields are the first line");
_Static_assert(FTF_HIST_BUCKETS <= 1 << 10, "a bucket fits the node's 10-bit fields");
#define FTF_NODE_ALIGN 64

/* The fields of ftf_sums that are zero for most calls (interrupt, off-CPU
 * and switch work): kept apart from the others wherever those are per call
 * (ftf_node_more, the root journal's side entries). */
typedef struct {
	uint64_t irq, offcpu, sched;
	uint32_t irq_calls, sched_calls, sched_outs, offcpu_calls;
} ftf_work;

/* s's fields that w holds, from w. */
static inline void ftf_sums_set_work(ftf_sums *s, const ftf_work *w)
{
	s->irq = w->irq;
	s->offcpu = w->offcpu;
	s->irq_calls = w->irq_calls;
	s->sched = w->sched;
	s->sched_calls = w->sched_calls;
	s->sched_outs = w->sched_outs;
	s->offcpu_calls = w->offcpu_calls;
}

/* The figures of a call path that are zero on most paths. */
typedef struct {
	ftf_sums gap;    /* the subset left out of corrected statistics: calls whose own
			  * interval holds a lost-event gap, a lost exit or a missing entry */
	ftf_sums det;    /* of the kept calls, the detached ones: their caller's call is
			  * left out or never completed, so their time is in no kept
			  * caller's (see the parent journal in builder.c) */
	uint32_t det_irq_roots; /* interrupt subtrees inside the detached calls */
	ftf_sums groot;  /* of an interrupt subtree's first path, its kept calls inside a root
			  * call left out: in no clean root call (the balance sheet's) */
	ftf_work work;          /* of every completed call (ftf_sums' other fields are in the node) */
	uint32_t migrated;      /* calls that ended on another CPU than they began */
	uint32_t open_end;      /* entries still open when the trace ended */
	uint32_t unterminated;  /* entries whose exit never came (lost) */
	uint32_t irq_early;     /* irqs in a child's push window that could not be moved into it */
	/* Time of child paths that this path's calls do not own (+): children of
	 * calls that never completed, irqs moved to the caller; or own time no
	 * child path shows (-): irqs moved in. Makes the tree add up exactly:
	 * incl + unowned_child_incl == excl + sum of children's incl. */
	int64_t unowned_child_incl;
} ftf_node_more;

/* node_slots hash keys: (parent+1) << 32 | func, this bit set for irq context */
typedef struct {
	uint32_t idx;  /* node index + 1, 0: free */
	uint32_t hash; /* the key's hash, its upper 32 bits (the lower ones index the slots) */
} ftf_node_slot;
#define FTF_NODE_KEY_IRQ 0x80000000u

/* Durations the int64 sums can hold: one call at most 2^53 ns (104 days,
 * still exact as a JSON number), all calls together at most 2^61 ns, so
 * that no sum (inclusive, exclusive, children's, interrupts') can wrap.
 * A duration over either bound is cut to it and counted (duration_cut). */
#define FTF_MAX_DURATION_NS (1ULL << 53)
#define FTF_DURATION_BUDGET_NS (1ULL << 61)

/* A completed root call (bottom of a task's stack), as the builder hands it
 * to its columns (ftf_roots). */
typedef struct {
	uint32_t node;
	int32_t pid;
	int32_t cpu;
	uint32_t flags; /* FTF_SAMPLE_* */
	uint64_t calltime;
	uint64_t dur;
	uint64_t desc;
	uint64_t irq;
	uint64_t offcpu;
	uint64_t irq_calls; /* calls recorded inside the irq subtrees (not in desc) */
	uint64_t irq_roots; /* irq subtrees inside the call */
	uint64_t leaf_min;  /* shortest task-context leaf descendant, ns (0: none): the
	                     * call's hook-cost level (docs/overhead.md "hook level") */
	uint64_t leaves;    /* task-context leaf descendants (no recorded children) */
	int32_t op;         /* operation id (ftf_root_calls.ops), FTF_OP_NONE */
	uint64_t sched;     /* switch work inside the call (ftf_sums.sched), ns */
	uint64_t sched_calls, sched_outs; /* its hook counts (ftf_sums) */
	uint64_t offcpu_calls; /* (ftf_sums.offcpu_calls) */
	uint64_t switches;  /* switch-ins inside the call with a scheduler frame on top */
	uint64_t retval;    /* FTF_SAMPLE_RET: the call's return value as its exit recorded
	                     * it (ftf_event.retval); 0 without */
	uint64_t subbufs;   /* sub-buffer switches inside the call: task-context records from
	                     * its entry (included) to its exit (not: written after its
	                     * rettime) that began a sub-buffer (ftf_event.subbuf_start) */
} ftf_sample;

/* The sample columns (module.c's SAMPLE_COLUMNS, the Profile's), by index:
 * an ftf_root_extra's field. */
enum ftf_scol {
	FTF_SCOL_NODE, FTF_SCOL_PID, FTF_SCOL_CPU, FTF_SCOL_FLAGS, FTF_SCOL_CALLTIME, FTF_SCOL_DUR,
	FTF_SCOL_DESC, FTF_SCOL_IRQ, FTF_SCOL_OFFCPU, FTF_SCOL_IRQ_CALLS, FTF_SCOL_IRQ_ROOTS,
	FTF_SCOL_LEAF_MIN, FTF_SCOL_LEAVES, FTF_SCOL_OP, FTF_SCOL_SCHED, FTF_SCOL_SCHED_CALLS,
	FTF_SCOL_SCHED_OUTS, FTF_SCOL_OFFCPU_CALLS, FTF_SCOL_SWITCHES, FTF_SCOL_RETVAL,
	FTF_SCOL_SUBBUFS, FTF_SCOLS
};

/* A figure of a root call that its columns do not hold: a value too wide for
 * its column (which holds the column's escape: UINT32_MAX, INT16_MIN), or a
 * non-zero value of a mostly-zero figure (interrupts, off-CPU time, switch
 * work, return value, sub-buffer moves), which has no column. */
typedef struct {
	uint64_t row_field; /* row << 5 | FTF_SCOL_* */
	uint64_t value;
} ftf_root_extra;
#define FTF_ROOT_EXTRA_SHIFT 5

/* The lazy columns: none until a root call has a non-zero value (a text of
 * one-line root calls has none: no descendants, no leaves). */
enum ftf_root_lazy { FTF_RL_DESC, FTF_RL_LEAF_MIN, FTF_RL_LEAVES, FTF_RL_N };

/* The completed root calls as columns of fixed-width fields, 25 bytes a root
 * call (calltime 8, node 4, dur 4, pid 4, cpu 2, op 2, flags 1), 4 more per
 * lazy column present and 16 per extra: the 144-byte ftf_sample a root call
 * took before was 160 again when exported (docs/performance.md, branch
 * rootcols). Grown by a quarter at a time: the capacity not yet used is at
 * most a quarter of the rows (big blocks grow by mremap, not a copy). */
typedef struct {
	uint64_t n, cap;
	uint64_t *calltime;
	uint32_t *node, *dur;
	int32_t *pid;
	int16_t *cpu, *op;
	uint8_t *flags;
	uint32_t *lazy[FTF_RL_N];
	ftf_root_extra *extras;
	uint64_t nextras, capextras;
	uint64_t bytes, peak; /* bytes allocated for the columns and extras; their high-water mark */
} ftf_roots;
#define FTF_ROOT_DENSE_BYTES (8 + 4 + 4 + 4 + 2 + 2 + 1)

/* The pid, CPU and figures of root call i that the builder reads back. */
int32_t ftf_root_cpu(const ftf_roots *r, uint64_t i);
void ftf_roots_free(ftf_roots *r);

enum ftf_sample_flags {
	FTF_SAMPLE_GAP = 1,     /* spans lost events / overrun / lost exits */
	FTF_SAMPLE_PARTIAL = 2, /* entry seen but ancestors unknown */
	FTF_SAMPLE_IRQ = 4,
	FTF_SAMPLE_RET = 8,     /* its exit recorded a return value (retval holds it) */
};

/* Everything the tool could not account for, counted. */
typedef struct {
	uint64_t events;         /* records seen */
	uint64_t entries, exits, switches, other_events;
	uint64_t lost_records;   /* records that carried a missed-events mark */
	uint64_t lost_events;    /* sum of known lost counts */
	uint64_t lost_unknown;   /* marks with an unknown count */
	uint64_t orphan_exits;   /* exit without a matching entry */
	uint64_t unterminated;   /* entry whose exit never came (popped by a later event) */
	uint64_t open_at_end;    /* frames still open when the trace ended */
	uint64_t overrun_growth; /* times a task's overrun counter grew */
	uint64_t depth_mismatch; /* entry/exit depth not what the stack says */
	uint64_t missing_entries; /* ...an entry deeper than its parent + 1: those between never written */
	uint64_t migrations;     /* calls that ended on a different CPU */
	uint64_t gap_calls;      /* completed calls left out of corrected statistics */
	uint64_t detached_calls; /* kept calls whose caller's call is left out or never completed */
	uint64_t depth_limit_calls; /* calls the kernel did not record, its return stack full (overrun growth) */
	int64_t depth_limit;     /* the depth of the first call not recorded, -1: none */
	uint64_t partial_entries;/* entries at depth > 0 with no open parent */
	uint64_t irq_roots;      /* irq subtrees */
	uint64_t leaf_events;    /* text leaf lines */
	uint64_t subbuf_starts;  /* records that began a sub-buffer (trace.dat only: 0 elsewhere) */
	uint64_t irq_outside_window; /* irq depth says it hit a push/pop race window */
	uint64_t duration_cut;   /* durations cut to fit the sums (FTF_MAX_DURATION_NS) */
	uint64_t backwards_calls; /* exits whose calltime is after their rettime: duration 0 */
	uint64_t times_refuted;  /* calls whose rettime - calltime the records' timestamps refute */
	/* the first such call of each kind (refuted, short): its function,
	 * calltime and pid, for the note that names it */
	uint64_t refuted_first_ns[2];
	uint32_t refuted_first_func[2];
	int32_t refuted_first_pid[2];
	uint64_t stalled_stamps; /* records carrying their CPU's previous record's timestamp */
	uint64_t times_stalled;  /* ...refuted calls with such a record inside: the stamps are wrong */
	uint64_t times_short;    /* ...refuted calls shorter than their records' interval, by more
	                          * than they are known to have slept: refuted unless the trace
	                          * shows nosleep-time and has no sched_switch (module.c) */
	uint64_t nosleep_calls;  /* calls whose calltime is after a callee's: nosleep-time moved it */
	uint64_t inner_before_call;  /* calls with a call inside that started before they did */
	uint64_t inner_after_return; /* calls with a call inside that returned after they did */
	int64_t max_depth;
	uint64_t first_ts, last_ts;
} ftf_counters;

#define FTF_MAX_CPUS 4096

/* In-trace overhead estimate (ftflame/correct/calibration.py): exact 1-ns histograms
 * of leaf durations (about O_in) and of gaps between consecutive siblings,
 * calltime(B) - rettime(A) (about O_out), per CPU and context. Values from
 * FTF_EST_MAX ns up only count as over. CPUs from FTF_EST_CPUS up share the
 * last slot. Allocated on first use. */
#define FTF_EST_MAX 8192
#define FTF_EST_CPUS 64
enum { FTF_EST_LEAF = 0, FTF_EST_GAP = 1 };
enum { FTF_CTX_TASK = 0, FTF_CTX_SOFTIRQ = 1, FTF_CTX_HARDIRQ = 2, FTF_NCTX = 3 };
typedef struct {
	uint32_t *hist; /* FTF_EST_MAX counts */
	uint64_t over;
} ftf_est;

typedef struct ftf_task ftf_task;

/* Return values per function: every completed call whose exit carries one
 * (funcgraph_exit's `retval`, CONFIG_FUNCTION_GRAPH_RETVAL; the text's
 * return-value comments) counts in side[1] when it is an error code, else
 * in side[0], with its inclusive time. O(functions), made on the first. */
typedef struct {
	uint64_t incl, min, max;
	uint32_t calls;
	ftf_hist hist; /* inclusive time, the node histograms' buckets */
} ftf_ret_side;

typedef struct {
	ftf_ret_side side[2];
} ftf_fret;

typedef struct {
	ftf_fret *f; /* by function id; NULL: no return value seen */
	uint32_t n;
} ftf_retvals;

/* Whether a return value is an error code, as the kernel's printer decides
 * (print_graph_retval): a value with its upper 32 bits clear and bit 31 set
 * is an int's and is sign-extended from 32 bits; then -4095..-1
 * (IS_ERR_VALUE) is an error. */
static inline int ftf_retval_is_error(uint64_t v)
{
	int64_t s = (v >> 32) == 0 && (v & 0x80000000u) ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v;
	return s >= -4095 && s <= -1;
}

typedef struct {
	ftf_funcs funcs;
	ftf_node *nodes;
	uint32_t nnodes, capnodes;
	ftf_node_more *more; /* ftf_node.more indexes them */
	uint32_t nmore, capmore;
	/* the nodes by (parent, func, context): open addressing, idx+1 (0: free)
	 * and 32 bits of the key's hash; a slot holds no key (compared on the
	 * node): 8 bytes, not 16. The hash bits spare a probe the other nodes'
	 * lines (two cache misses each: func, then parent): a third of the
	 * lookups' samples on the lost bench trace, where hints miss most. */
	ftf_node_slot *node_slots;
	uint32_t nnode_slots;
	uint32_t partial_root; /* the (partial) pseudo-root node, FTF_NONE until needed */
	uint32_t partial_func;

	ftf_task **tasks; /* open-addressing map key -> task */
	uint32_t ntasks, ntask_slots;

	ftf_roots roots; /* one row per completed root call */

	ftf_counters c;
	int64_t lost_per_cpu[FTF_MAX_CPUS]; /* known lost events */
	uint64_t lost_unknown_per_cpu[FTF_MAX_CPUS]; /* gaps of unknown size */
	uint64_t lost_marks_per_cpu[FTF_MAX_CPUS];
	int32_t max_cpu;
	int oom;
	uint8_t *func_irq; /* per func: 0 unknown, 1 no, 2 irq entry function */
	/* Text input without calltime (all but trace-cmd -R): never move
	 * interrupts across push/pop windows by calltime; the printed order is
	 * the truth. Read at each exit. */
	int text_order;
	uint64_t dur_total; /* all durations fed so far (FTF_DURATION_BUDGET_NS) */
	/* the records' timestamps are nanoseconds (ftf_builder_set_clock): a
	 * call's entry-to-exit record interval can refute its duration */
	int ts_ns;
	uint64_t cpu_last_ts[FTF_MAX_CPUS]; /* the last record's timestamp per CPU, + 1 (0: none) */
	/* count the events only (a reader's check of a file: module.c) */
	int check_only;
	/* no exclusive-time histograms (hist_excl stays empty): the caller's
	 * output prints no exclusive percentiles (the text report), and the
	 * second histogram update per call is 5% of the read's CPU */
	int no_excl_hist;
	uint32_t nfunc_irq;
	/* per func: the serial of the last root call that counted it
	 * (ftf_node.func_roots); root_serial counts the complete root calls */
	uint32_t *func_stamp;
	uint32_t nfunc_stamp, root_serial;
	ftf_task *cur_task; /* the task of the event being fed */
	ftf_task *last_task; /* the task task_find found last (compared by key) */
	/* per CPU: the task whose sched_switch-out came last and which may
	 * still record the tail of __schedule() before the switch happens */
	ftf_task *cpu_tail[FTF_MAX_CPUS];
	ftf_est est[2][FTF_NCTX][FTF_EST_CPUS]; /* [kind][context][cpu] */
	ftf_root_calls root_calls; /* operations and the slowest root calls (root_calls.h) */
	ftf_retvals retvals; /* return values per function */
} ftf_builder;

/* A node's rare figures, NULL when they are all zero. */
static inline const ftf_node_more *ftf_node_more_of(const ftf_builder *b, const ftf_node *n)
{
	return n->more == FTF_NONE ? NULL : &b->more[n->more];
}
/* The sums over every completed call of a node, whole (ftf_sums). */
static inline ftf_sums ftf_node_all(const ftf_builder *b, const ftf_node *n)
{
	const ftf_node_more *m = ftf_node_more_of(b, n);
	ftf_sums s = { .incl = n->incl, .excl = n->excl, .calls = n->calls, .desc = n->desc,
		       .nchild = n->nchild };
	if (m)
		ftf_sums_set_work(&s, &m->work);
	return s;
}

/* ---- events by function address (trace.dat) ----------------------------- */

/* The function name at an address, NULL when unknown. */
typedef const char *(*ftf_name_fn)(void *ctx, uint64_t addr);

/* The function ids of the entries seen last per (CPU, depth), as slots of
 * FTF_IDCACHE_CPUS x FTF_IDCACHE_DEPTHS: an exit's function is nearly always
 * that of the entry its CPU recorded last at its depth, and a loop's next
 * entry often the one before it, where the address map's slot is a cache
 * miss (4% of the read). Compared by address: a wrong slot only misses. */
#define FTF_IDCACHE_CPUS 4
#define FTF_IDCACHE_DEPTHS 64
typedef struct {
	uint64_t addr; /* 0: empty */
	uint32_t id;
} ftf_idcache;

/* Function addresses to the builder's function ids: names are looked up
 * once per address (a lookup per record costs more than the decoding). */
typedef struct {
	ftf_u64map map;  /* function address -> function id + 1 */
	ftf_idcache cache[FTF_IDCACHE_CPUS * FTF_IDCACHE_DEPTHS];
	ftf_name_fn name_of;
	void *name_ctx;
} ftf_func_ids;

int ftf_builder_init(ftf_builder *b);
void ftf_builder_free(ftf_builder *b);
void ftf_builder_feed(ftf_builder *b, const ftf_event *ev);
/* Feeds n events in order, each entry's and exit's function id (func) set
 * first from its address addr[i]. One call a batch: a call into the builder
 * per event cost some 20 instructions of it. */
void ftf_builder_feed_addrs(ftf_builder *b, ftf_event *ev, const uint64_t *addr, uint32_t n, ftf_func_ids *ids);
void ftf_builder_set_clock(ftf_builder *b, const char *clock);
/* Close the trace: count frames still open. */
void ftf_builder_finish(ftf_builder *b);
/* After finish, before the result is taken: free what only feeding needs
 * (the tasks' stacks, journals and idle tree buffers, the node map: up to
 * 15 MB on a 3 M-event trace), so that the result's tables do not add to
 * it at the peak. Nothing can be fed afterwards. */
void ftf_builder_shed(ftf_builder *b);
/* Text: a task known so far only as "the first task of CPU n" got its pid
 * (from a task-switch separator). If new_pid has a task already, only an
 * empty stack can be merged into it (its samples relabelled); else -1. */
int ftf_builder_rename_task(ftf_builder *b, int32_t old_pid, int32_t new_pid, int32_t cpu);

#endif
