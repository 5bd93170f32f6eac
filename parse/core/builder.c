/* Per-task call builder and call-path aggregator.
 *
 * Rules (docs/design.md, "Call builder"; docs/trace-formats.md):
 *  - one stack per task (pid; pid 0 is per CPU), nesting by the task's event
 *    order, never by timestamp containment;
 *  - duration = rettime - calltime (the record ts is another clock);
 *  - a frame in hardirq/softirq/NMI context under a task-context frame starts
 *    an irq subtree: its time and calls are tracked apart so corrections can
 *    leave them out of the interrupted call;
 *  - off-CPU time (sched_switch out..in) is charged to every frame open on the
 *    task's stack, via per-task running totals (O(1) per event);
 *  - anything that breaks the picture (lost events, a missing exit or entry)
 *    taints the open frames: their calls still count in the raw sums (which
 *    must equal the tracer's own durations) but are also summed in the
 *    node's `gap` set, which corrected statistics leave out; the calls
 *    completed under them are whole and kept (their `det` sums say which);
 *  - overrun growth is the kernel's full return stack: the calls below it
 *    were never recorded, and the frames open are complete (counted only).
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "builder.h"
#include "mem.h"

/* The operations and slowest calls (root_calls.c) ran out of memory: so
 * did the builder. */
static inline void calls_oom(ftf_builder *b)
{
	if (b->root_calls.oom)
		b->oom = 1;
}

/* ---- histogram --------------------------------------------------------- */

uint32_t ftf_hist_bucket(uint64_t v)
{
	if (v < FTF_HIST_SUB)
		return (uint32_t)v;
	int k = 63 - __builtin_clzll(v); /* k >= 4 */
	uint32_t sub = (uint32_t)(v >> (k - 4)) & (FTF_HIST_SUB - 1);
	uint32_t b = FTF_HIST_SUB + (uint32_t)(k - 4) * FTF_HIST_SUB + sub;
	return b < FTF_HIST_BUCKETS ? b : FTF_HIST_BUCKETS - 1;
}

uint64_t ftf_hist_lower(uint32_t b)
{
	if (b < FTF_HIST_SUB)
		return b;
	uint32_t k = (b - FTF_HIST_SUB) / FTF_HIST_SUB + 4;
	uint32_t sub = (b - FTF_HIST_SUB) % FTF_HIST_SUB;
	return (1ULL << k) + ((uint64_t)sub << (k - 4));
}

uint32_t ftf_hist_inline_max = FTF_HIST_COUNT_MASK;

/* Move the inline buckets out into cap sparse entries (a fifth bucket, or a
 * count too big for its word). */
static int hist_spill(ftf_hist *h, uint16_t cap)
{
	ftf_hist_entry *e = malloc(cap * sizeof(*e));
	if (!e)
		return -1;
	uint16_t n = 0;
	for (; n < FTF_HIST_INLINE && h->first[n]; n++) {
		e[n].bucket = (uint16_t)(h->first[n] >> FTF_HIST_COUNT_BITS);
		e[n].count = h->first[n] & FTF_HIST_COUNT_MASK;
	}
	h->out.p = e;
	h->out.n = n;
	h->out.cap = cap;
	h->out.tag = FTF_HIST_SPILLED;
	return 0;
}

/* Inline: the bucket's word, most frequent first; 1: not inline (spill). */
static int hist_add_inline(ftf_hist *h, uint32_t bucket)
{
	uint32_t *w = h->first;
	for (int i = 0; i < FTF_HIST_INLINE; i++) {
		if (!w[i]) {
			w[i] = bucket << FTF_HIST_COUNT_BITS | 1;
			return 0;
		}
		if (w[i] >> FTF_HIST_COUNT_BITS != bucket)
			continue;
		if ((w[i] & FTF_HIST_COUNT_MASK) >= ftf_hist_inline_max)
			return 1;
		w[i]++;
		if (i > 0 && (w[i] & FTF_HIST_COUNT_MASK) > (w[i - 1] & FTF_HIST_COUNT_MASK)) {
			/* keep frequent buckets first: most searches end early */
			uint32_t x = w[i - 1];
			w[i - 1] = w[i];
			w[i] = x;
		}
		return 0;
	}
	return 1;
}

/* Sparse (spilled, not dense): the bucket's entry counted, most frequent
 * first; 1: the bucket has no entry yet. */
static inline __attribute__((always_inline)) int hist_sparse_add(ftf_hist *h, uint32_t bucket)
{
	ftf_hist_entry *e = h->out.p;
	for (uint16_t i = 0; i < h->out.n; i++) {
		if (e[i].bucket != bucket)
			continue;
		e[i].count++;
		if (i > 0 && e[i].count > e[i - 1].count) {
			ftf_hist_entry x = e[i - 1];
			e[i - 1] = e[i];
			e[i] = x;
		}
		return 0;
	}
	return 1;
}

int ftf_hist_add(ftf_hist *h, uint32_t bucket)
{
	if (!ftf_hist_spilled(h)) {
		if (!hist_add_inline(h, bucket))
			return 0;
		if (hist_spill(h, 2 * FTF_HIST_INLINE) < 0)
			return -1;
	}
	if (h->out.cap == FTF_HIST_DENSE) {
		((uint32_t *)h->out.p)[bucket]++;
		return 0;
	}
	if (!hist_sparse_add(h, bucket))
		return 0;
	ftf_hist_entry *e = h->out.p;
	if (h->out.n == h->out.cap) {
		if (h->out.cap >= FTF_HIST_SPARSE_MAX) {
			uint32_t *d = calloc(FTF_HIST_BUCKETS, sizeof(*d));
			if (!d)
				return -1;
			for (uint16_t i = 0; i < h->out.n; i++)
				d[e[i].bucket] = e[i].count;
			d[bucket]++;
			free(e);
			h->out.p = d;
			h->out.cap = FTF_HIST_DENSE;
			return 0;
		}
		uint16_t cap = h->out.cap * 2;
		ftf_hist_entry *grown = realloc(e, cap * sizeof(*grown));
		if (!grown)
			return -1;
		h->out.p = e = grown;
		h->out.cap = cap;
	}
	e[h->out.n].bucket = (uint16_t)bucket;
	e[h->out.n++].count = 1;
	return 0;
}

/* ftf_hist_add inline but for a spill, a new sparse bucket and a growth,
 * which ftf_hist_add does finding the histogram as this left it (a failed
 * inline add changes nothing): the call and its prologue were a third of
 * the update. */
static inline __attribute__((always_inline)) int hist_add(ftf_hist *h, uint32_t bucket)
{
	if (!ftf_hist_spilled(h)) {
		if (!hist_add_inline(h, bucket))
			return 0;
	} else if (h->out.cap == FTF_HIST_DENSE) {
		((uint32_t *)h->out.p)[bucket]++;
		return 0;
	} else if (!hist_sparse_add(h, bucket)) {
		return 0;
	}
	return ftf_hist_add(h, bucket);
}

uint32_t ftf_hist_nsparse(const ftf_hist *h)
{
	if (ftf_hist_spilled(h))
		return h->out.cap == FTF_HIST_DENSE ? 0 : h->out.n;
	uint32_t n = 0;
	while (n < FTF_HIST_INLINE && h->first[n])
		n++;
	return n;
}

void ftf_hist_sparse_at(const ftf_hist *h, uint32_t k, uint32_t *bucket, uint32_t *count)
{
	if (ftf_hist_spilled(h)) {
		const ftf_hist_entry *e = (const ftf_hist_entry *)h->out.p + k;
		*bucket = e->bucket;
		*count = e->count;
	} else {
		*bucket = h->first[k] >> FTF_HIST_COUNT_BITS;
		*count = h->first[k] & FTF_HIST_COUNT_MASK;
	}
}

void ftf_hist_free(ftf_hist *h)
{
	if (ftf_hist_spilled(h))
		free(h->out.p);
	memset(h, 0, sizeof(*h));
}

/* ---- irq entry functions ---------------------------------------------- */

/* Functions of the interrupt entry/exit path. irq_enter_rcu() runs before
 * the HARDIRQ count is raised, so its records carry task-context flags; text
 * traces carry no flags at all. */
static const char *const irq_exact[] = {
	"irq_enter_rcu", "irq_enter", "irq_exit_rcu", "irq_exit", "__irq_exit_rcu",
	"do_IRQ", "handle_softirqs", "__do_softirq", "do_softirq", "smp_apic_timer_interrupt",
	"common_interrupt", "__common_interrupt", "asm_common_interrupt",
	/* the interrupt's exit path in task context, after irq_exit_rcu():
	 * 7.x's preemption check and its deferred hrtimer rearm, written as
	 * children of the interrupted call (docs/overhead.md "What the model
	 * misses on 7.x") */
	"raw_irqentry_exit_cond_resched", "__hrtimer_rearm_deferred",
};
static const char *const irq_prefix[] = { "__sysvec_", "sysvec_", "asm_sysvec_", "smp_irq_work_interrupt" };

/* name is one of exact[], or begins with one of prefix[] */
static int name_in(const char *name, const char *const *exact, size_t nexact, const char *const *prefix,
		   size_t nprefix)
{
	for (size_t i = 0; i < nexact; i++)
		if (!strcmp(name, exact[i]))
			return 1;
	for (size_t i = 0; i < nprefix; i++)
		if (!strncmp(name, prefix[i], strlen(prefix[i])))
			return 1;
	return 0;
}

#define NAME_IN(name, exact, prefix) \
	name_in(name, exact, sizeof(exact) / sizeof(exact[0]), prefix, sizeof(prefix) / sizeof(prefix[0]))

int ftf_func_name_is_irq_entry(const char *name)
{
	return NAME_IN(name, irq_exact, irq_prefix);
}

/* The scheduler's entry points, which call __schedule() (untraced): a task
 * switched back in with one of them on top was switched out inside it, and
 * its traced work around the switch is switch work. On the nfsd fixtures
 * the frame is __cond_resched() (6.1 and 6.12); schedule() where a task
 * sleeps. Any other function on top (a root-only trace's root, a graph cut
 * by depth) holds work of its own besides the scheduler's: no switch frame. */
static const char *const sched_exact[] = {
	"schedule", "__schedule", "__cond_resched", "_cond_resched", "schedule_idle", "yield",
	"do_sched_yield", "io_schedule", "schedule_preempt_disabled", "schedule_rtlock",
};
static const char *const sched_prefix[] = { "preempt_schedule" };

int ftf_func_name_is_sched_entry(const char *name)
{
	return NAME_IN(name, sched_exact, sched_prefix);
}

/* A switch with no scheduler frame: the kernel preempts on an interrupt's
 * exit or at preempt_enable() through untraced entries (7.x), so
 * __schedule()'s traced callees are written as children of the preempted
 * call. rcu_note_context_switch(), __schedule()'s first traced callee,
 * opens such a window under a frame that is no scheduler entry; the
 * switch-in's finish_task_switch() closes it, and so does the runqueue's
 * unlock when no switch came (the task picked itself). */
#define CLASS_SW_OPEN 4
#define CLASS_SW_CLOSE 5
#define CLASS_SW_NOSWITCH 6
static const char *const sw_close_prefix[] = { "finish_task_switch" };
static const char *const sw_noswitch_exact[] = { "_raw_spin_unlock", "_raw_spin_unlock_irq" };

/* 1: none of these, 2: an irq entry function, 3: a scheduler entry,
 * 4-6: a frameless switch window's opening, closing, closing without switch. */
static uint8_t func_class_of(const char *name)
{
	if (ftf_func_name_is_irq_entry(name))
		return 2;
	if (ftf_func_name_is_sched_entry(name))
		return 3;
	if (!strcmp(name, "rcu_note_context_switch"))
		return CLASS_SW_OPEN;
	for (size_t i = 0; i < sizeof(sw_close_prefix) / sizeof(sw_close_prefix[0]); i++)
		if (!strncmp(name, sw_close_prefix[i], strlen(sw_close_prefix[i])))
			return CLASS_SW_CLOSE;
	for (size_t i = 0; i < sizeof(sw_noswitch_exact) / sizeof(sw_noswitch_exact[0]); i++)
		if (!strcmp(name, sw_noswitch_exact[i]))
			return CLASS_SW_NOSWITCH;
	return 1;
}

/* The class of func (func_class_of), made for every function known so far
 * when func is past the table; 0 when func has no name yet, 1 when out of
 * memory. */
static __attribute__((noinline)) uint8_t func_class_slow(ftf_builder *b, uint32_t func)
{
	if (func >= b->nfunc_irq) {
		uint32_t n = b->funcs.n > func + 1 ? b->funcs.n : func + 1;
		uint8_t *a = realloc(b->func_irq, n);
		if (!a) {
			b->oom = 1;
			return 1;
		}
		for (uint32_t i = b->nfunc_irq; i < n; i++)
			a[i] = i < b->funcs.n ? func_class_of(b->funcs.names[i]) : 0;
		b->func_irq = a;
		b->nfunc_irq = n;
	}
	if (!b->func_irq[func] && func < b->funcs.n)
		b->func_irq[func] = func_class_of(b->funcs.names[func]);
	return b->func_irq[func];
}

/* Inline: an entry asks it up to four times (1% of the read as a call). */
static inline uint8_t func_class(ftf_builder *b, uint32_t func)
{
	if (__builtin_expect(func < b->nfunc_irq && b->func_irq[func], 1))
		return b->func_irq[func];
	return func_class_slow(b, func);
}

static inline int func_is_irq_entry(ftf_builder *b, uint32_t func)
{
	return func_class(b, func) == 2;
}

static inline int func_is_sched_entry(ftf_builder *b, uint32_t func)
{
	return func_class(b, func) == 3;
}

/* ---- tasks ------------------------------------------------------------- */

/* A path's entry in a task's root journal (see journal_add): the sums of
 * its kept calls completed under the open frame `owner`, the fields every
 * call has here (56 bytes), the others in a side entry (ftf_jrare) made
 * only when one of them is not zero. The journal holds about one entry a
 * call on nfsd traces (a root call of ~900 calls has ~800 paths): at 168
 * bytes an entry it was a quarter of a lost-event trace's L1 misses. */
typedef struct {
	uint32_t node;
	uint32_t slot;
	uint32_t owner; /* serial of the open frame whose children it sums, 0: none */
	uint32_t next;  /* the owner's next entry + 1, 0: the last */
	uint32_t calls, desc, nchild; /* ftf_sums' */
	uint32_t rare;  /* its ftf_jrare + 1 in the task's jrare, 0: none (all zero) */
	uint32_t func;  /* the node's: journal_end reads the entries, not their nodes */
	uint64_t incl;
	int64_t excl;
} ftf_jentry;

typedef struct {
	ftf_work work;      /* the owner's sums' other fields */
	uint64_t irq_roots; /* interrupt subtrees inside the calls the entry sums */
	ftf_sums r;         /* an irq root's: all its kept calls under the open root call */
} ftf_jrare;

typedef struct {
	uint32_t node, func;
	uint32_t last_child; /* the node of the call entered last under this one, FTF_NONE */
	int64_t depth;
	uint64_t child_incl;  /* raw inclusive time of completed children */
	uint64_t calls_at;    /* task counters when the frame was pushed */
	uint64_t irq_calls_at;
	uint64_t irq_at, off_at;
	ftf_schedw sched_at;  /* the task's switch work when the frame was pushed */
	uint64_t switch_ins_at;
	uint64_t nchild;
	int32_t cpu;
	uint8_t irq; /* frame runs in irq context */
	uint8_t hard; /* its entry's flags say hardirq */
	uint8_t gap; /* frame spans something that makes its sums incomplete */
	uint8_t sw;  /* the task was switched back in with this frame on top: a switch frame */
	uint32_t lparent; /* stack index of the frame this call belongs to */
	uint8_t early;    /* irq root that hit the push window of a child not yet entered */
	/* The kernel may hold a call one level under this frame that the events
	 * do not show at this point: the child whose exit was written last (7.x
	 * lowers the depth only when the return handler ends), or the child an
	 * early irq was written under. Entries written in that window come one
	 * level deeper than this frame's children. Closed by the next child. */
	uint8_t window;
	/* the children completed last were irq subtrees (one interrupt often
	 * shows as several: irq_enter_rcu, the handler, irq_exit_rcu): */
	uint8_t has_last_irq, last_irq_early;
	uint64_t last_irq_calltime, last_irq_dur, last_irq_calls;
	/* an early irq charged to the caller, to move here if it began inside
	 * this call's window (known at the exit, from calltime) */
	uint8_t adopt_valid;
	uint64_t adopt_calltime, adopt_dur, adopt_calls;
	/* irqs taken after this call's return popped the shadow stack but before
	 * its exit event (written at this call's depth, so placed under the
	 * caller): moved here at the exit if they ran before its rettime */
	uint8_t popwin_valid;
	uint64_t popwin_start, popwin_end, popwin_dur, popwin_calls;
	uint64_t last_ret; /* rettime of the last child, 0: none (sibling gaps) */
	uint32_t rec;          /* the call's record in the task's open tree (root_calls.c) */
	uint32_t serial;       /* the task's frame serial, never 0 (journal owner) */
	uint32_t jhead;        /* its kept children's journal entries: first + 1, 0: none */
	uint64_t irq_roots_at; /* task's irq_roots when the frame was pushed */
	uint64_t entry_ts;     /* the entry record's timestamp */
	/* the earliest calltime and the latest rettime of the calls made
	 * inside (UINT64_MAX, 0: none), checked against this call's at its exit */
	uint64_t inner_call, inner_ret;
	/* how much later than its entry nosleep-time shows this call's calltime
	 * to be, at least (a callee's calltime before it, here or in a callee
	 * that was open meanwhile): the time it slept, as far as the trace says */
	uint64_t slept_shown;
	/* interrupts under this frame that may have come after its return (the
	 * task's ftf_retsnap ring, see after_return_split): how many are
	 * held; run: the children since the last one were all interrupt work */
	uint8_t nsnap, run;
	uint8_t snap_own; /* this call began an interrupt: its caller's ring's newest entry */
	uint64_t after_moved; /* time written under this call after its return, moved to the caller */
	uint64_t stalls_at;   /* the builder's stalled_stamps when the frame was pushed */
} ftf_frame;

/* A child that began an interrupt under a frame: the task's running totals
 * when it was entered, and its calltime once it completed. If it began
 * after the frame's rettime, it and every call after it were written under
 * the frame only because the kernel had not lowered the depth yet. */
typedef struct {
	uint64_t calltime; /* UINT64_MAX: not completed */
	uint64_t ts;       /* its entry record's timestamp */
	uint64_t child_incl, nchild, inner_ret;
	uint64_t calls, irq_calls, irq_ns, off_ns, irq_roots;
} ftf_retsnap;
#define FTF_RETSNAPS 4

struct ftf_task {
	uint64_t key;
	ftf_frame *stack;
	ftf_retsnap *rsnap; /* FTF_RETSNAPS per frame of stack */
	uint32_t n, cap;
	uint64_t calls;     /* completed calls so far (all contexts) */
	uint64_t irq_calls; /* ...of which in irq context */
	uint64_t irq_ns;    /* time of completed irq subtrees under task frames */
	uint64_t off_ns;    /* time switched out while frames were open */
	ftf_schedw sched;   /* switch work of completed switch frames (running totals) */
	uint64_t switch_ins; /* switch-ins with a scheduler frame on top (switch frames) */
	/* a frameless switch window (CLASS_SW_OPEN): stack index + 1 of the
	 * frame it is under, 0: none; whether the task was switched out in it */
	uint32_t vsw_at;
	uint8_t vsw_out;
	int64_t vsw_depth; /* the depth its opening call was written at */
	uint64_t out_ts;
	uint64_t overrun;
	uint8_t switched_out, have_overrun;
	int32_t cpu;
	/* calls completed under the open root call, per node (see journal_add) */
	ftf_jentry *jent;
	uint32_t *jslots;
	uint32_t jn, jcap, jnslots;
	ftf_jrare *jrare;
	uint32_t njrare, capjrare;
	uint32_t frame_serial;
	uint64_t irq_roots; /* irq subtrees completed under task frames */
	uint64_t root_irq_roots_at;
	uint64_t root_leaf_min; /* shortest task-context leaf under the open root call */
	uint64_t root_leaves;   /* task-context leaves under it */
	uint64_t root_subbufs;  /* sub-buffer switches inside it (ftf_sample.subbufs) */
	ftf_task_calls tc; /* the open root call's operation and tree (root_calls.c) */
};

/* The pid a task's samples carry (the idle task's key holds its CPU: 0). */
static int32_t task_pid(const ftf_task *t)
{
	return (int32_t)(t->key >> 63 ? 0 : t->key);
}

static uint64_t task_key(int32_t pid, int32_t cpu)
{
	/* pid 0 is the idle task of every CPU at once */
	if (pid == 0)
		return (1ULL << 63) | (uint32_t)cpu;
	return (uint32_t)pid;
}

static int tasks_grow(ftf_builder *b)
{
	uint32_t nslots = b->ntask_slots ? b->ntask_slots * 2 : 256;
	ftf_task **tasks = calloc(nslots, sizeof(*tasks));
	if (!tasks)
		return -1;
	for (uint32_t i = 0; i < b->ntask_slots; i++) {
		ftf_task *t = b->tasks[i];
		if (!t)
			continue;
		uint32_t s = ftf_mix64(t->key) & (nslots - 1);
		while (tasks[s])
			s = (s + 1) & (nslots - 1);
		tasks[s] = t;
	}
	free(b->tasks);
	b->tasks = tasks;
	b->ntask_slots = nslots;
	return 0;
}

static __attribute__((noinline)) ftf_task *task_find_slot(ftf_builder *b, uint64_t key, int create)
{
	ftf_task *t = NULL;
	if (b->ntask_slots) {
		uint32_t s = ftf_mix64(key) & (b->ntask_slots - 1);
		while (b->tasks[s]) {
			if (b->tasks[s]->key == key)
				return b->last_task = b->tasks[s];
			s = (s + 1) & (b->ntask_slots - 1);
		}
	}
	if (!create)
		return NULL;
	if ((b->ntasks + 1) * 2 > b->ntask_slots && tasks_grow(b) < 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->key = key;
	uint32_t s = ftf_mix64(key) & (b->ntask_slots - 1);
	while (b->tasks[s])
		s = (s + 1) & (b->ntask_slots - 1);
	b->tasks[s] = t;
	b->ntasks++;
	return b->last_task = t;
}

/* Inline: runs of events come from one task, whose slot need not be
 * searched (a call per event otherwise). */
static inline ftf_task *task_find(ftf_builder *b, uint64_t key, int create)
{
	if (b->last_task && b->last_task->key == key)
		return b->last_task;
	return task_find_slot(b, key, create);
}

int ftf_builder_rename_task(ftf_builder *b, int32_t old_pid, int32_t new_pid, int32_t cpu)
{
	uint64_t ok = task_key(old_pid, cpu), nk = task_key(new_pid, cpu);
	ftf_task *t = task_find(b, ok, 0);
	if (ok == nk || !t)
		return 0;
	if (task_find(b, nk, 0)) {
		/* the task is known already: only an empty stack can merge */
		if (t->n)
			return -1;
		goto samples;
	}
	/* re-insert every task: the table has no deletion */
	ftf_task **tasks = calloc(b->ntask_slots, sizeof(*tasks));
	if (!tasks) {
		b->oom = 1;
		return -1;
	}
	t->key = nk;
	for (uint32_t i = 0; i < b->ntask_slots; i++) {
		ftf_task *x = b->tasks[i];
		if (!x)
			continue;
		uint32_t s = ftf_mix64(x->key) & (b->ntask_slots - 1);
		while (tasks[s])
			s = (s + 1) & (b->ntask_slots - 1);
		tasks[s] = x;
	}
	free(b->tasks);
	b->tasks = tasks;
samples:
	/* root calls it already completed */
	for (uint64_t i = 0; i < b->roots.n; i++)
		if (b->roots.pid[i] == old_pid && (old_pid != 0 || ftf_root_cpu(&b->roots, i) == cpu))
			b->roots.pid[i] = new_pid;
	return 0;
}

static ftf_frame *task_push(ftf_task *t)
{
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		ftf_frame *st = realloc(t->stack, cap * sizeof(*st));
		if (!st)
			return NULL;
		t->stack = st;
		ftf_retsnap *rs = realloc(t->rsnap, (size_t)cap * FTF_RETSNAPS * sizeof(*rs));
		if (!rs)
			return NULL;
		t->rsnap = rs;
		t->cap = cap;
	}
	return &t->stack[t->n++];
}

/* ---- nodes ------------------------------------------------------------- */

/* A non-decreasing map of an exclusive time to -FTF_HIST_BUCKETS..
 * FTF_HIST_BUCKETS - 1: its histogram bucket, mirrored for a negative
 * value. A call whose value maps strictly between the images of a path's
 * extremes cannot move them. */
static inline int16_t excl_bucket(int64_t v)
{
	return v >= 0 ? (int16_t)ftf_hist_bucket((uint64_t)v) : (int16_t)(-1 - (int32_t)ftf_hist_bucket(~(uint64_t)v));
}

static void sums_init_minmax(ftf_node *n)
{
	n->incl_min = UINT64_MAX;
	n->excl_min = INT64_MAX;
	n->excl_max = INT64_MIN;
	n->incl_min_b = ftf_hist_bucket(n->incl_min) & 0x3ff;
	n->incl_max_b = ftf_hist_bucket(n->incl_max) & 0x3ff;
	n->excl_min_b = excl_bucket(n->excl_min);
	n->excl_max_b = excl_bucket(n->excl_max);
}

/* The extremes of a path, on its second line, and their images on its
 * first; called only when the images do not rule out a change. */
static void node_extremes(ftf_node *n, uint64_t dur, uint32_t dur_b, int64_t excl, int16_t excl_b)
{
	if (dur < n->incl_min) {
		n->incl_min = dur;
		n->incl_min_b = dur_b & 0x3ff;
	}
	if (dur > n->incl_max) {
		n->incl_max = dur;
		n->incl_max_b = dur_b & 0x3ff;
	}
	if (excl < n->excl_min) {
		n->excl_min = excl;
		n->excl_min_b = excl_b;
	}
	if (excl > n->excl_max) {
		n->excl_max = excl;
		n->excl_max_b = excl_b;
	}
}

/* A node's rare figures, made on first use (ftf_node_more). The pointer
 * holds until the next node_more: it may move them. */
static ftf_node_more *node_more(ftf_builder *b, uint32_t idx)
{
	ftf_node *n = &b->nodes[idx];
	if (n->more != FTF_NONE)
		return &b->more[n->more];
	if (b->nmore == b->capmore) {
		uint32_t cap = b->capmore ? b->capmore * 2 : 1024;
		/* a mapping grown by mremap, as the node table */
		ftf_node_more *more = ftf_blk_grow(b->more, (size_t)b->capmore * sizeof(*more),
						   (size_t)cap * sizeof(*more));
		if (!more) {
			b->oom = 1;
			return NULL;
		}
		b->more = more;
		b->capmore = cap;
	}
	n->more = b->nmore++;
	ftf_node_more *m = &b->more[n->more];
	memset(m, 0, sizeof(*m));
	return m;
}

/* The node table's first size: a mapping (FTF_BLK_MAP) from the start. */
#define NODES_FIRST 1024
_Static_assert(NODES_FIRST * sizeof(ftf_node) >= FTF_BLK_MAP, "the node table is a mapping, page-aligned");

static uint64_t node_hash(uint32_t parent, uint32_t func, int irq)
{
	return ftf_mix64(((uint64_t)(uint32_t)(parent + 1) << 32) | func | (irq ? FTF_NODE_KEY_IRQ : 0));
}

/* Index every node again in twice the slots (load at most 1/2). */
static int node_slots_grow(ftf_builder *b)
{
	uint32_t nslots = b->nnode_slots ? b->nnode_slots * 2 : 1024;
	/* written all over at once by the loop below: a block on huge pages */
	ftf_node_slot *slots = ftf_blk_zalloc((size_t)nslots * sizeof(*slots));
	if (!slots)
		return -1;
	for (uint32_t i = 0; i < b->nnodes; i++) {
		const ftf_node *n = &b->nodes[i];
		uint64_t h = node_hash(n->parent, n->func, n->flags & FTF_NODE_IRQ);
		uint32_t s = (uint32_t)h & (nslots - 1);
		while (slots[s].idx)
			s = (s + 1) & (nslots - 1);
		slots[s].idx = i + 1;
		slots[s].hash = (uint32_t)(h >> 32);
	}
	ftf_blk_free(b->node_slots, (size_t)b->nnode_slots * sizeof(*b->node_slots));
	b->node_slots = slots;
	b->nnode_slots = nslots;
	return 0;
}

/* The child path of `parent` for calls of `func` in task (irq 0) or interrupt
 * context (irq 1). The context is part of the path: a function entered both
 * ways is two paths, so an interrupt never marks a task path as irq work. */
static uint32_t node_child(ftf_builder *b, uint32_t parent, uint32_t func, int irq)
{
	if (func & FTF_NODE_KEY_IRQ)
		goto oom; /* 2^31 distinct names: the key has no room for them */
	if ((b->nnodes + 1) * 2 > b->nnode_slots && node_slots_grow(b) < 0)
		goto oom;
	uint64_t h = node_hash(parent, func, irq);
	uint32_t mask = b->nnode_slots - 1, s = (uint32_t)h & mask, tag = (uint32_t)(h >> 32);
	for (; b->node_slots[s].idx; s = (s + 1) & mask) {
		if (b->node_slots[s].hash != tag)
			continue;
		uint32_t idx = b->node_slots[s].idx - 1;
		const ftf_node *n = &b->nodes[idx];
		/* func and flags first: on the node's first line (ftf_node) */
		if (n->func == func && !(n->flags & FTF_NODE_IRQ) == !irq && n->parent == parent)
			return idx;
	}
	if (b->nnodes == b->capnodes) {
		uint32_t cap = b->capnodes ? b->capnodes * 2 : NODES_FIRST;
		/* a mapping of its own (ftf_blk_grow), page-aligned, so that a
		 * node's first line is one cache line; grown by mremap: malloc's
		 * copy faulted in a second set of pages and held both at once */
		ftf_node *nodes = ftf_blk_grow(b->nodes, (size_t)b->capnodes * sizeof(*nodes),
					       (size_t)cap * sizeof(*nodes));
		if (!nodes)
			goto oom;
		b->nodes = nodes;
		b->capnodes = cap;
	}
	uint32_t idx = b->nnodes++;
	b->node_slots[s].idx = idx + 1;
	b->node_slots[s].hash = tag;
	ftf_node *n = &b->nodes[idx];
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->func = func;
	n->first_child_hint = n->next_sibling_hint = n->more = FTF_NONE;
	sums_init_minmax(n);
	if (parent != FTF_NONE && (b->nodes[parent].flags & FTF_NODE_PARTIAL))
		n->flags |= FTF_NODE_PARTIAL;
	if (irq)
		n->flags |= FTF_NODE_IRQ;
	return idx;
oom:
	b->oom = 1;
	return FTF_NONE;
}

/* node_child for a call entered under the open frame pf, looked up through
 * the hints first (ftf_node: the child that followed the frame's last child
 * the last time); the hints learn the answer. */
static uint32_t frame_child(ftf_builder *b, ftf_frame *pf, uint32_t func, int irq)
{
	uint32_t parent = pf->node;
	if (parent == FTF_NONE)
		return node_child(b, parent, func, irq);
	uint32_t c = pf->last_child == FTF_NONE ? b->nodes[parent].first_child_hint
						: b->nodes[pf->last_child].next_sibling_hint;
	if (c == FTF_NONE || b->nodes[c].func != func || !(b->nodes[c].flags & FTF_NODE_IRQ) != !irq) {
		c = node_child(b, parent, func, irq);
		if (c == FTF_NONE)
			return c;
		/* after node_child: it may have moved b->nodes */
		if (pf->last_child == FTF_NONE)
			b->nodes[parent].first_child_hint = c;
		else
			b->nodes[pf->last_child].next_sibling_hint = c;
	}
	pf->last_child = c;
	return c;
}

static uint32_t partial_root(ftf_builder *b)
{
	if (b->partial_root == FTF_NONE) {
		b->partial_func = ftf_funcs_intern(&b->funcs, "(partial)", 9);
		b->partial_root = node_child(b, FTF_NONE, b->partial_func, 0);
		if (b->partial_root != FTF_NONE)
			b->nodes[b->partial_root].flags |= FTF_NODE_PARTIAL;
	}
	return b->partial_root;
}

static void sums_add(ftf_sums *s, uint64_t dur, int64_t excl, uint64_t desc, uint64_t nchild,
		     uint64_t irq, uint64_t irq_calls, uint64_t off, const ftf_schedw *sw)
{
	s->sched += sw->ns;
	s->sched_calls = ftf_count_add(s->sched_calls, sw->calls);
	s->sched_outs = ftf_count_add(s->sched_outs, sw->outs);
	s->offcpu_calls = ftf_count_add(s->offcpu_calls, sw->offcpu_calls);
	s->calls = ftf_count_add(s->calls, 1);
	s->incl += dur;
	s->excl += excl;
	s->desc = ftf_count_add(s->desc, desc);
	s->nchild = ftf_count_add(s->nchild, nchild);
	s->irq += irq;
	s->irq_calls = ftf_count_add(s->irq_calls, irq_calls);
	s->offcpu += off;
}

/* ---- the parent journal -------------------------------------------------
 * Corrected statistics leave out the `gap` set: the calls whose own interval
 * holds a gap. A gap is inside every frame open at the time, so the left-out
 * calls are closed upwards (a left-out call's caller is left out) and the
 * kept ones downwards: the kept calls are whole call trees, some of them
 * under a caller that is left out or never completes (lost exit, open at
 * the end). Such a detached call's corrected time is in no kept caller's:
 * the correction must not subtract it from its caller's path, nor scale it
 * with that path's clamp, so the nodes sum the detached calls apart (`det`).
 * Whether a caller is left out is known only when it ends, so the kept
 * calls completed under an open frame are summed per node in the task's
 * journal, owned by that frame; when it ends they move into the `det` sums
 * (left out, or never completed) or are dropped (kept caller). A node has
 * at most one open frame per task (its path is the stack below it), so one
 * entry per node serves every call of it under the open root; the entries
 * also say which paths the root call had kept calls of (roots, func_roots).
 * Memory: one entry per distinct call path under the open root. */
static void sums_merge(ftf_sums *d, const ftf_sums *s)
{
	d->calls = ftf_count_add(d->calls, s->calls);
	d->incl += s->incl;
	d->excl += s->excl;
	d->desc = ftf_count_add(d->desc, s->desc);
	d->nchild = ftf_count_add(d->nchild, s->nchild);
	d->irq += s->irq;
	d->irq_calls = ftf_count_add(d->irq_calls, s->irq_calls);
	d->offcpu += s->offcpu;
	d->sched += s->sched;
	d->sched_calls = ftf_count_add(d->sched_calls, s->sched_calls);
	d->sched_outs = ftf_count_add(d->sched_outs, s->sched_outs);
	d->offcpu_calls = ftf_count_add(d->offcpu_calls, s->offcpu_calls);
}

/* A completed call's interrupt, off-CPU and switch work into w (as
 * sums_add counts it: a count saturates). */
static void work_add(ftf_work *w, uint64_t irq, uint64_t irq_calls, uint64_t off, const ftf_schedw *sw)
{
	w->irq += irq;
	w->irq_calls = ftf_count_add(w->irq_calls, irq_calls);
	w->offcpu += off;
	w->sched += sw->ns;
	w->sched_calls = ftf_count_add(w->sched_calls, sw->calls);
	w->sched_outs = ftf_count_add(w->sched_outs, sw->outs);
	w->offcpu_calls = ftf_count_add(w->offcpu_calls, sw->offcpu_calls);
}

static int journal_grow(ftf_task *t)
{
	uint32_t nslots = t->jnslots ? t->jnslots * 2 : 64;
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	ftf_jentry *ent = realloc(t->jent, (nslots / 2) * sizeof(*ent));
	if (!slots || !ent) {
		free(slots);
		if (ent)
			t->jent = ent;
		return -1;
	}
	for (uint32_t i = 0; i < t->jn; i++) {
		uint32_t s = ftf_mix64(ent[i].node) & (nslots - 1);
		while (slots[s])
			s = (s + 1) & (nslots - 1);
		slots[s] = i + 1;
		ent[i].slot = s;
	}
	free(t->jslots);
	t->jslots = slots;
	t->jent = ent;
	t->jnslots = nslots;
	t->jcap = nslots / 2;
	return 0;
}

/* A new side entry for e, zero; NULL when out of memory. */
static ftf_jrare *jrare_new(ftf_task *t, ftf_jentry *e)
{
	if (t->njrare == t->capjrare) {
		uint32_t cap = t->capjrare ? t->capjrare * 2 : 16;
		ftf_jrare *a = realloc(t->jrare, (size_t)cap * sizeof(*a));
		if (!a)
			return NULL;
		t->jrare = a;
		t->capjrare = cap;
	}
	ftf_jrare *x = &t->jrare[t->njrare++];
	memset(x, 0, sizeof(*x));
	e->rare = t->njrare;
	return x;
}

/* A kept call of `node` completed under the open frame `owner`. */
static void journal_add(ftf_builder *b, ftf_task *t, uint32_t node, ftf_frame *owner, uint64_t dur, int64_t excl,
			uint64_t desc, uint64_t nchild, uint64_t irq, uint64_t irq_calls, uint64_t off,
			const ftf_schedw *sw, uint64_t irq_roots)
{
	if (t->jn + 1 > t->jcap && journal_grow(t) < 0) {
		b->oom = 1;
		return;
	}
	uint32_t s = ftf_mix64(node) & (t->jnslots - 1);
	ftf_jentry *e = NULL;
	/* a slot is taken when it names an entry of this root call that names
	 * it back: slots are never cleared (journal_end), a stale one is free */
	for (uint32_t v; (v = t->jslots[s] - 1) < t->jn && t->jent[v].slot == s;) {
		ftf_jentry *x = &t->jent[v];
		if (x->node == node) {
			e = x;
			break;
		}
		s = (s + 1) & (t->jnslots - 1);
	}
	ftf_node *nd = &b->nodes[node];
	if (!e) {
		e = &t->jent[t->jn];
		e->node = node;
		e->slot = s;
		e->owner = 0;
		e->rare = 0;
		e->func = nd->func;
		t->jslots[s] = ++t->jn;
		/* the path has kept calls in this root call: counted now, while
		 * its node is in the cache, not when the root call ends */
		nd->roots = ftf_count_add(nd->roots, 1);
	}
	int irq_root = (nd->flags & FTF_NODE_IRQ_ROOT) != 0;
	ftf_jrare *x = e->rare ? &t->jrare[e->rare - 1] : NULL;
	/* one test of them all, not one each (most calls have none) */
	if (!x && (irq_root ||
		   (irq | irq_calls | off | sw->ns | sw->calls | sw->outs | sw->offcpu_calls | irq_roots))) {
		x = jrare_new(t, e);
		if (!x) {
			b->oom = 1;
			return;
		}
	}
	if (irq_root) {
		ftf_sums one = { 0 };
		sums_add(&one, dur, excl, desc, nchild, irq, irq_calls, off, sw);
		sums_merge(&x->r, &one);
	}
	/* as sums_add and sums_merge count (a count saturates: ftf_count_add) */
	if (e->owner == owner->serial) {
		e->calls = ftf_count_add(e->calls, 1);
		e->incl += dur;
		e->excl += excl;
		e->desc = ftf_count_add(e->desc, desc);
		e->nchild = ftf_count_add(e->nchild, nchild);
		if (x) {
			work_add(&x->work, irq, irq_calls, off, sw);
			x->irq_roots += irq_roots;
		}
		return;
	}
	/* (an owner still open, were two frames of one path open at once,
	 * loses the entry: its calls then count as attached) */
	e->owner = owner->serial;
	e->calls = 1;
	e->incl = dur;
	e->excl = excl;
	e->desc = ftf_count_add(0, desc);
	e->nchild = ftf_count_add(0, nchild);
	if (x) {
		x->work = (ftf_work){ 0 };
		work_add(&x->work, irq, irq_calls, off, sw);
		x->irq_roots = irq_roots;
	}
	e->next = owner->jhead;
	owner->jhead = (uint32_t)(e - t->jent) + 1;
}

/* The frame f ended: out, it is left out or never completed, and the kept
 * calls completed under it are detached. */
static void journal_settle(ftf_builder *b, ftf_task *t, ftf_frame *f, int out)
{
	for (uint32_t i = f->jhead; i;) {
		ftf_jentry *e = &t->jent[i - 1];
		i = e->next;
		if (e->owner != f->serial)
			continue; /* taken over (see journal_add) */
		e->owner = 0;
		ftf_node_more *m = out ? node_more(b, e->node) : NULL;
		if (m) {
			const ftf_jrare *x = e->rare ? &t->jrare[e->rare - 1] : NULL;
			ftf_sums es = { .calls = e->calls, .incl = e->incl, .excl = e->excl, .desc = e->desc,
					.nchild = e->nchild };
			if (x)
				ftf_sums_set_work(&es, &x->work);
			sums_merge(&m->det, &es);
			m->det_irq_roots = ftf_count_add(m->det_irq_roots, x ? x->irq_roots : 0);
			b->c.detached_calls += e->calls;
		}
	}
	f->jhead = 0;
}

/* The per-function stamp of func (ftf_builder.func_stamp), grown as
 * functions appear; NULL when out of memory. */
static uint32_t *func_stamp(ftf_builder *b, uint32_t func)
{
	if (func >= b->nfunc_stamp) {
		uint32_t n = func + 1 > 2 * b->nfunc_stamp ? func + 1 : 2 * b->nfunc_stamp;
		uint32_t *a = realloc(b->func_stamp, (size_t)n * sizeof(*a));
		if (!a) {
			b->oom = 1;
			return NULL;
		}
		memset(a + b->nfunc_stamp, 0, (size_t)(n - b->nfunc_stamp) * sizeof(*a));
		b->func_stamp = a;
		b->nfunc_stamp = n;
	}
	return &b->func_stamp[func];
}

/* The task's root call ended (its frames all settled; gap: it is left out
 * or never completed): the journal holds each path with kept calls once
 * per root call (their nodes' roots were counted as the entries came). A
 * function's root calls go to its first path here. */
static void journal_end(ftf_builder *b, ftf_task *t, int gap)
{
	uint32_t serial = ++b->root_serial;
	for (uint32_t i = 0; i < t->jn; i++) {
		ftf_jentry *e = &t->jent[i];
		const ftf_jrare *x = e->rare ? &t->jrare[e->rare - 1] : NULL;
		ftf_node_more *m = gap && x && x->r.calls ? node_more(b, e->node) : NULL;
		if (m)
			sums_merge(&m->groot, &x->r);
		uint32_t *stamp = func_stamp(b, e->func);
		if (stamp && *stamp != serial) {
			*stamp = serial;
			b->nodes[e->node].func_roots = ftf_count_add(b->nodes[e->node].func_roots, 1);
		}
	}
	/* the slots are left as they are: with no entry they are all free
	 * (journal_add); clearing a big root call's table cost more than the rest */
	t->jn = 0;
	t->njrare = 0;
}

/* A completed call of node idx; parent: the open frame it completed under,
 * NULL for a root call (or a call with no caller known). Inline: a call
 * with its 13 arguments (7 on the stack) and its prologue cost 30
 * instructions of a completed call's ~1,200. */
static inline __attribute__((always_inline)) void
node_add(ftf_builder *b, uint32_t idx, int gap, ftf_frame *parent, uint64_t dur, int64_t excl, uint64_t desc,
	 uint64_t nchild, uint64_t irq, uint64_t irq_calls, uint64_t off, const ftf_schedw *sw, uint64_t irq_roots)
{
	if (idx == FTF_NONE)
		return;
	ftf_task *t = b->cur_task;
	if ((irq | irq_calls | off | sw->ns | sw->calls | sw->offcpu_calls) || gap) {
		ftf_node_more *m = node_more(b, idx);
		if (m) {
			work_add(&m->work, irq, irq_calls, off, sw);
			if (gap)
				sums_add(&m->gap, dur, excl, desc, nchild, irq, irq_calls, off, sw);
		}
		if (gap)
			b->c.gap_calls++;
	}
	ftf_node *n = &b->nodes[idx];
	n->calls = ftf_count_add(n->calls, 1);
	n->incl += dur;
	n->excl += excl;
	n->desc = ftf_count_add(n->desc, desc);
	n->nchild = ftf_count_add(n->nchild, nchild);
	if (!gap && t && parent)
		journal_add(b, t, idx, parent, dur, excl, desc, nchild, irq, irq_calls, off, sw, irq_roots);
	if (t && !t->n && t->jn)
		journal_end(b, t, gap);
	uint32_t dur_b = ftf_hist_bucket(dur);
	int16_t excl_b = excl_bucket(excl);
	/* the second line only when the call may be an extreme (ftf_node) */
	if (!(dur_b > n->incl_min_b && dur_b < n->incl_max_b && excl_b > n->excl_min_b && excl_b < n->excl_max_b))
		node_extremes(n, dur, dur_b, excl, excl_b);
	if (hist_add(&n->hist_incl, dur_b) < 0 ||
	    (!b->no_excl_hist && hist_add(&n->hist_excl, excl_b > 0 ? (uint32_t)excl_b : 0) < 0))
		b->oom = 1;
}

static void roots_account(ftf_roots *r)
{
	int lazy = 0;
	for (int k = 0; k < FTF_RL_N; k++)
		lazy += r->lazy[k] != NULL;
	r->bytes = r->cap * (FTF_ROOT_DENSE_BYTES + 4 * (uint64_t)lazy) + r->capextras * sizeof(ftf_root_extra);
	if (r->bytes > r->peak)
		r->peak = r->bytes;
}

/* Every column to cap rows (lazy ones that exist too); 0 or -1. */
static int roots_grow(ftf_roots *r, uint64_t cap)
{
#define GROW(p)                                                        \
	do {                                                           \
		void *_q = realloc((p), cap * sizeof(*(p)));           \
		if (!_q)                                               \
			return -1;                                     \
		(p) = _q;                                              \
	} while (0)
	GROW(r->calltime);
	GROW(r->node);
	GROW(r->dur);
	GROW(r->pid);
	GROW(r->cpu);
	GROW(r->op);
	GROW(r->flags);
	for (int k = 0; k < FTF_RL_N; k++)
		if (r->lazy[k])
			GROW(r->lazy[k]);
#undef GROW
	r->cap = cap;
	roots_account(r);
	return 0;
}

static int roots_extra(ftf_roots *r, uint64_t row, int field, uint64_t value)
{
	if (r->nextras == r->capextras) {
		uint64_t cap = r->capextras ? r->capextras + r->capextras / 4 + 64 : 256;
		ftf_root_extra *e = realloc(r->extras, cap * sizeof(*e));
		if (!e)
			return -1;
		r->extras = e;
		r->capextras = cap;
		roots_account(r);
	}
	r->extras[r->nextras++] = (ftf_root_extra){ row << FTF_ROOT_EXTRA_SHIFT | (uint64_t)field, value };
	return 0;
}

/* A lazy column's value at row (made, zeros above, at its first non-zero). */
static int roots_lazy(ftf_roots *r, uint64_t row, int k, int field, uint64_t v)
{
	if (!r->lazy[k]) {
		if (!v)
			return 0;
		r->lazy[k] = calloc(r->cap, sizeof(uint32_t));
		if (!r->lazy[k])
			return -1;
		roots_account(r);
	}
	r->lazy[k][row] = v < UINT32_MAX ? (uint32_t)v : UINT32_MAX;
	return v < UINT32_MAX ? 0 : roots_extra(r, row, field, v);
}

int32_t ftf_root_cpu(const ftf_roots *r, uint64_t i)
{
	if (r->cpu[i] != INT16_MIN)
		return r->cpu[i];
	for (uint64_t e = 0; e < r->nextras; e++) /* rare: a CPU past int16 */
		if (r->extras[e].row_field == (i << FTF_ROOT_EXTRA_SHIFT | FTF_SCOL_CPU))
			return (int32_t)r->extras[e].value;
	return INT16_MIN;
}

static void add_sample(ftf_builder *b, const ftf_sample *s)
{
	ftf_roots *r = &b->roots;
	if (r->n == r->cap && roots_grow(r, r->cap ? r->cap + r->cap / 4 : 4096) < 0) {
		b->oom = 1;
		return;
	}
	uint64_t i = r->n;
	int err = 0;
	r->calltime[i] = s->calltime;
	r->node[i] = s->node;
	r->pid[i] = s->pid;
	r->flags[i] = (uint8_t)s->flags;
	r->dur[i] = s->dur < UINT32_MAX ? (uint32_t)s->dur : UINT32_MAX;
	if (s->dur >= UINT32_MAX)
		err |= roots_extra(r, i, FTF_SCOL_DUR, s->dur);
	r->cpu[i] = s->cpu > INT16_MIN && s->cpu <= INT16_MAX ? (int16_t)s->cpu : INT16_MIN;
	if (r->cpu[i] == INT16_MIN)
		err |= roots_extra(r, i, FTF_SCOL_CPU, (uint64_t)(int64_t)s->cpu);
	r->op[i] = s->op > INT16_MIN && s->op <= INT16_MAX ? (int16_t)s->op : INT16_MIN;
	if (r->op[i] == INT16_MIN)
		err |= roots_extra(r, i, FTF_SCOL_OP, (uint64_t)(int64_t)s->op);
	err |= roots_lazy(r, i, FTF_RL_DESC, FTF_SCOL_DESC, s->desc);
	err |= roots_lazy(r, i, FTF_RL_LEAF_MIN, FTF_SCOL_LEAF_MIN, s->leaf_min);
	err |= roots_lazy(r, i, FTF_RL_LEAVES, FTF_SCOL_LEAVES, s->leaves);
	const struct {
		int field;
		uint64_t v;
	} sparse[] = {
		{ FTF_SCOL_IRQ, s->irq },
		{ FTF_SCOL_OFFCPU, s->offcpu },
		{ FTF_SCOL_IRQ_CALLS, s->irq_calls },
		{ FTF_SCOL_IRQ_ROOTS, s->irq_roots },
		{ FTF_SCOL_SCHED, s->sched },
		{ FTF_SCOL_SCHED_CALLS, s->sched_calls },
		{ FTF_SCOL_SCHED_OUTS, s->sched_outs },
		{ FTF_SCOL_OFFCPU_CALLS, s->offcpu_calls },
		{ FTF_SCOL_SWITCHES, s->switches },
		{ FTF_SCOL_RETVAL, s->retval },
		{ FTF_SCOL_SUBBUFS, s->subbufs },
	};
	for (size_t k = 0; k < sizeof(sparse) / sizeof(sparse[0]); k++)
		if (sparse[k].v)
			err |= roots_extra(r, i, sparse[k].field, sparse[k].v);
	if (err) {
		b->oom = 1;
		return;
	}
	r->n++;
}

void ftf_roots_free(ftf_roots *r)
{
	free(r->calltime);
	free(r->node);
	free(r->dur);
	free(r->pid);
	free(r->cpu);
	free(r->op);
	free(r->flags);
	for (int k = 0; k < FTF_RL_N; k++)
		free(r->lazy[k]);
	free(r->extras);
	uint64_t peak = r->peak;
	memset(r, 0, sizeof(*r));
	r->peak = peak;
}

/* ---- the builder ------------------------------------------------------- */

int ftf_builder_init(ftf_builder *b)
{
	memset(b, 0, sizeof(*b));
	ftf_funcs_init(&b->funcs);
	b->partial_root = FTF_NONE;
	b->partial_func = FTF_NONE;
	b->max_cpu = -1;
	b->c.max_depth = -1;
	b->c.depth_limit = -1;
	return 0;
}

/* What only feeding needs: the tasks (stacks, root journals, idle tree
 * buffers) and the node map. */
void ftf_builder_shed(ftf_builder *b)
{
	for (uint32_t i = 0; i < b->ntask_slots; i++) {
		if (b->tasks[i]) {
			free(b->tasks[i]->jent);
			free(b->tasks[i]->jslots);
			free(b->tasks[i]->jrare);
			free(b->tasks[i]->stack);
			free(b->tasks[i]->rsnap);
			ftf_task_calls_free(&b->root_calls, &b->tasks[i]->tc);
			free(b->tasks[i]);
		}
	}
	free(b->tasks);
	b->tasks = NULL;
	b->ntasks = b->ntask_slots = 0;
	b->cur_task = b->last_task = NULL;
	memset(b->cpu_tail, 0, sizeof(b->cpu_tail));
	ftf_blk_free(b->node_slots, (size_t)b->nnode_slots * sizeof(*b->node_slots));
	b->node_slots = NULL;
	b->nnode_slots = 0;
}

void ftf_builder_free(ftf_builder *b)
{
	ftf_builder_shed(b);
	for (uint32_t i = 0; i < b->nnodes; i++) {
		ftf_hist_free(&b->nodes[i].hist_incl);
		ftf_hist_free(&b->nodes[i].hist_excl);
	}
	ftf_blk_free(b->nodes, (size_t)b->capnodes * sizeof(*b->nodes));
	ftf_blk_free(b->more, (size_t)b->capmore * sizeof(*b->more));
	ftf_roots_free(&b->roots);
	free(b->func_irq);
	free(b->func_stamp);
	ftf_calls_free(&b->root_calls);
	for (uint32_t i = 0; i < b->retvals.n; i++)
		for (int k = 0; k < 2; k++)
			ftf_hist_free(&b->retvals.f[i].side[k].hist);
	free(b->retvals.f);
	for (int k = 0; k < 2; k++)
		for (int x = 0; x < FTF_NCTX; x++)
			for (int c = 0; c < FTF_EST_CPUS; c++)
				free(b->est[k][x][c].hist);
	ftf_funcs_free(&b->funcs);
	memset(b, 0, sizeof(*b));
}

static void taint_all(ftf_task *t)
{
	/* and no window: a depth jump after damage is a missing entry */
	for (uint32_t i = 0; i < t->n; i++) {
		t->stack[i].gap = 1;
		t->stack[i].window = 0;
	}
}

/* Frames above `keep` never saw their exit: drop them, and mark what remains
 * as incomplete (their children's time is now unaccounted). */
static void drop_unterminated(ftf_builder *b, ftf_task *t, uint32_t keep)
{
	if (t->n <= keep)
		return;
	for (uint32_t i = t->n; i-- > keep;) {
		ftf_node_more *m = t->stack[i].node != FTF_NONE ? node_more(b, t->stack[i].node) : NULL;
		if (m) {
			m->unterminated = ftf_count_add(m->unterminated, 1);
			m->unowned_child_incl += t->stack[i].child_incl;
		}
		journal_settle(b, t, &t->stack[i], 1);
	}
	b->c.unterminated += t->n - keep;
	t->n = keep;
	taint_all(t);
	if (!keep && t->jn)
		journal_end(b, t, 1); /* the root never completes */
}

static inline __attribute__((always_inline)) void on_entry_inl(ftf_builder *b, ftf_task *t, const ftf_event *ev)
{
	ftf_frame *top = t->n ? &t->stack[t->n - 1] : NULL;
	/* irq context: the record's flags, or an irq entry/exit function (whose
	 * glue runs before the HARDIRQ count is raised), or inherited from the
	 * frame the call is placed under (decided below: lost exits may pop the
	 * top first): everything nested in an irq frame is irq work even when the
	 * flags say otherwise (irq_exit_rcu's tail runs with the hardirq count
	 * already dropped). */
	int own_irq = (ev->flags & FTF_FLAG_IRQ_MASK) != 0 || func_is_irq_entry(b, ev->func);
	int irq_root = own_irq && !(top && top->irq);
	uint32_t lparent = t->n ? t->n - 1 : FTF_NONE;
	int early = 0;
	b->c.entries++;
	if (ev->depth > b->c.max_depth)
		b->c.max_depth = ev->depth;

	if (top && irq_root) {
		/* An interrupt continues the depth of the interrupted frame. When its
		 * depth is not top+1, it hit a window where the shadow stack and the
		 * events disagree: between a return's pop and its exit event (depth
		 * <= top: the irq belongs to the frame below), or between a push and
		 * its entry event (depth > top+1: kept under the top, counted). */
		if (ev->depth <= top->depth) {
			uint32_t i = t->n;
			while (i > 0 && t->stack[i - 1].depth >= ev->depth)
				i--;
			if (i > 0) {
				lparent = i - 1;
				b->c.irq_outside_window++;
			}
		} else if (ev->depth > top->depth + 1) {
			/* The irq's time is inside the window of a child whose entry
			 * event is not written yet: it is placed under the top, and
			 * moved into that child at its exit (see adopt_valid). */
			b->c.irq_outside_window++;
			early = 1;
			if (ev->depth == top->depth + 2)
				top->window = 1;
		}
	} else if (top && ev->depth <= top->depth) {
		/* (not a child of the top: rare, the only entries that need these) */
		int hard = (ev->flags & FTF_FLAG_HARDIRQ) || func_is_irq_entry(b, ev->func);
		uint32_t i = t->n;
		while (i > 0 && t->stack[i - 1].depth >= ev->depth)
			i--;
		if (top->irq && !top->hard && hard && i > 0 && !b->text_order) {
			/* A hardirq taken in a softirq call's pop window (5.10
			 * lowers the depth at the pop, before the exit event): at
			 * the returned call's depth, the caller's, as for a task
			 * frame above. No exit is lost. */
			lparent = i - 1;
			b->c.irq_outside_window++;
		} else {
			/* exits were lost: pop to this entry's level */
			uint32_t keep = t->n;
			while (keep && t->stack[keep - 1].depth >= ev->depth)
				keep--;
			b->c.depth_mismatch++;
			drop_unterminated(b, t, keep);
			lparent = t->n ? t->n - 1 : FTF_NONE;
		}
	} else if (top) {
		if (ev->depth == top->depth + 2 && top->irq && func_is_irq_entry(b, ev->func)) {
			/* A hardirq nested in an irq frame (a softirq) hit the same
			 * push or pop window as above, one level deeper than the
			 * events say: under the top, moved into the next child at its
			 * exit when it began inside that child's call. No entry is
			 * missing (6.12's deep stacks show it thousands of times). */
			b->c.irq_outside_window++;
			early = 1;
			top->window = 1;
		} else if (top->window && ev->depth == top->depth + 2) {
			/* Written while the kernel still held a call one level under
			 * the top: the tail of an interrupt (its exit work runs with the
			 * hardirq count dropped), or a preemption when the return
			 * handler's ring-buffer write re-enables preemption. Its time is
			 * the top's: no entry is missing. */
		} else if (ev->depth > top->depth + 1) {
			/* entries were lost between the top and this one */
			b->c.depth_mismatch++;
			b->c.missing_entries++;
			taint_all(t);
		}
	}

	if (t->n && ev->depth == t->stack[t->n - 1].depth + 1)
		t->stack[t->n - 1].window = 0; /* a child: the hidden call was popped or written */

	/* the frame this call now belongs to (until task_push, which may move
	 * the stack), and its context */
	ftf_frame *lp = lparent != FTF_NONE ? &t->stack[lparent] : NULL;
	int parent_irq = lp && lp->irq;
	int in_irq = own_irq || parent_irq;
	irq_root = in_irq && !parent_irq;

	uint32_t node;
	if (lp) {
		node = frame_child(b, lp, ev->func, in_irq);
	} else if (ev->depth > 0) {
		b->c.partial_entries++;
		node = node_child(b, partial_root(b), ev->func, in_irq);
	} else {
		node = node_child(b, FTF_NONE, ev->func, in_irq);
	}
	if (node != FTF_NONE && irq_root && lp)
		b->nodes[node].flags |= FTF_NODE_IRQ_ROOT;
	/* an interrupt's first call under its frame (an irq root, or a hardirq
	 * nested in an irq frame): where the frame's calls written after its
	 * return would begin */
	int bnd = lp && in_irq && (irq_root || func_is_irq_entry(b, ev->func));
	int snap_own = 0;
	if (bnd && !lp->run && !b->text_order) {
		ftf_frame *pf = lp;
		ftf_retsnap *r = &t->rsnap[(size_t)lparent * FTF_RETSNAPS];
		if (pf->nsnap == FTF_RETSNAPS) {
			memmove(r, r + 1, (FTF_RETSNAPS - 1) * sizeof(*r));
			pf->nsnap--;
		}
		ftf_retsnap *sn = &r[pf->nsnap++];
		sn->calltime = UINT64_MAX; /* known at its exit */
		sn->ts = ev->ts;
		sn->child_incl = pf->child_incl;
		sn->nchild = pf->nchild;
		sn->inner_ret = pf->inner_ret;
		sn->calls = t->calls;
		sn->irq_calls = t->irq_calls;
		sn->irq_ns = t->irq_ns;
		sn->off_ns = t->off_ns;
		sn->irq_roots = t->irq_roots;
		snap_own = 1;
	}
	if (lp)
		lp->run = (uint8_t)bnd; /* any other call ends the run */
	/* a frameless switch window (CLASS_SW_OPEN): its task-context children
	 * are the scheduler's, each a switch frame */
	/* closed when its frame is gone, or by a child written at another depth
	 * than the opening one: __schedule()'s callees are written at one depth
	 * (7.x writes a preemption in a return's window one level deeper than
	 * the frame's own children, which come back at theirs) */
	if (t->vsw_at > t->n || (t->vsw_at && lparent == t->vsw_at - 1 && ev->depth != t->vsw_depth)) {
		t->vsw_at = 0;
		t->vsw_out = 0;
	}
	int vsw = 0;
	if (lp && !in_irq && !lp->irq) {
		if (!t->vsw_at && func_class(b, ev->func) == CLASS_SW_OPEN && !func_is_sched_entry(b, lp->func)) {
			t->vsw_at = lparent + 1;
			t->vsw_out = 0;
			t->vsw_depth = ev->depth;
		}
		vsw = t->vsw_at == lparent + 1;
	}
	ftf_frame *f = task_push(t);
	if (!f) {
		b->oom = 1;
		return;
	}
	f->node = node;
	f->last_child = FTF_NONE;
	f->func = ev->func;
	f->depth = ev->depth;
	f->child_incl = 0;
	f->calls_at = t->calls;
	f->irq_calls_at = t->irq_calls;
	f->irq_at = t->irq_ns;
	f->off_at = t->off_ns;
	if (t->switched_out && !in_irq)
		t->sched.offcpu_calls++; /* the tail of __schedule(), inside the off-CPU time: its callers' */
	f->sched_at = t->sched;
	f->switch_ins_at = t->switch_ins;
	f->sw = (uint8_t)vsw;
	f->nchild = 0;
	f->cpu = ev->cpu;
	f->irq = in_irq;
	f->hard = (ev->flags & FTF_FLAG_HARDIRQ) != 0;
	f->gap = 0;
	f->lparent = lparent;
	f->serial = ++t->frame_serial ? t->frame_serial : ++t->frame_serial;
	f->jhead = 0;
	f->early = early;
	f->window = 0;
	f->has_last_irq = 0;

	f->adopt_valid = 0;
	f->popwin_valid = 0;

	ftf_frame *pf = t->n >= 2 ? f - 1 : NULL; /* the frame under the new one */
	if (pf && pf->has_last_irq && (!in_irq || (pf->irq && !early))) {
		/* Interrupts completed just before this entry may have run inside
		 * this call's window: taken after its calltime was read but before
		 * its shadow-stack push or its entry event. Decide at the exit,
		 * when this call's calltime is known. (Under an irq frame only a
		 * nested hardirq seen in the window sets has_last_irq, and its
		 * own sibling subtrees are not candidates.) */
		f->adopt_valid = 1;
		f->adopt_calltime = pf->last_irq_calltime;
		f->adopt_dur = pf->last_irq_dur;
		f->adopt_calls = pf->last_irq_calls;
	}
	f->last_ret = 0;
	if (t->n == 1) {
		t->root_irq_roots_at = t->irq_roots;
		t->root_leaf_min = UINT64_MAX;
		t->root_leaves = 0;
		t->root_subbufs = 0;
		/* a root call that never completed (lost exit) leaves its tree */
		ftf_spool_tree(&b->root_calls, &t->tc, task_pid(t), -1);
		ftf_calls_root_start(&b->root_calls, &t->tc);
	}
	f->irq_roots_at = t->irq_roots;
	f->entry_ts = ev->ts;
	f->inner_call = UINT64_MAX;
	f->inner_ret = 0;
	f->slept_shown = 0;
	f->nsnap = 0;
	f->run = 0;
	f->snap_own = (uint8_t)snap_own;
	f->after_moved = 0;
	f->stalls_at = b->c.stalled_stamps;
	f->rec = ftf_calls_entry(&b->root_calls, &t->tc, &b->funcs, ev->func, t->n - 1, lparent,
				 lparent != FTF_NONE ? t->stack[lparent].rec : FTF_NONE, in_irq);
	if (ev->nargs)
		ftf_calls_values(&b->root_calls, &t->tc, f->rec, FTF_REC_ARGS, FTF_EX_ARG0, ev->args, ev->nargs);
	calls_oom(b);
}

/* A text leaf's entry (rare): out of line, where an entry event's is inline
 * in the feed loop (its prologue and epilogue were 18 instructions of it). */
static __attribute__((noinline)) void on_entry(ftf_builder *b, ftf_task *t, const ftf_event *ev)
{
	on_entry_inl(b, t, ev);
}

/* A call's duration as the sums can hold it (FTF_MAX_DURATION_NS): a cut
 * is counted, never a silent wrap to a negative sum. */
static uint64_t bounded_dur(ftf_builder *b, uint64_t dur)
{
	uint64_t d = dur < FTF_MAX_DURATION_NS ? dur : FTF_MAX_DURATION_NS;
	uint64_t room = FTF_DURATION_BUDGET_NS - b->dur_total;
	if (d > room)
		d = room;
	if (d != dur)
		b->c.duration_cut++;
	b->dur_total += d;
	return d;
}

/* An irq subtree completed in the pop window of the frame `f` (the one frame
 * above the irq's caller): hold it on `f` until f's exit tells whether it ran
 * before f's rettime. One interrupt often shows as several subtrees. */
static void popwin_hold(ftf_frame *f, uint64_t calltime, uint64_t dur, uint64_t calls)
{
	if (!f->popwin_valid) {
		f->popwin_valid = 1;
		f->popwin_start = calltime;
		f->popwin_end = calltime + dur;
		f->popwin_dur = 0;
		f->popwin_calls = 0;
	}
	if (calltime < f->popwin_start)
		f->popwin_start = calltime;
	if (calltime + dur > f->popwin_end)
		f->popwin_end = calltime + dur;
	f->popwin_dur += dur;
	f->popwin_calls += calls;
}

/* unowned_child_incl += v (ftf_node_more), on a node when there is one. */
static void node_unowned_add(ftf_builder *b, uint32_t node, int64_t v)
{
	ftf_node_more *m = node != FTF_NONE && v ? node_more(b, node) : NULL;
	if (m)
		m->unowned_child_incl += v;
}

/* An irq that the caller pf counted as its child ran inside the returning
 * call f (its duration holds it): move its time and calls from pf's children
 * into f's irq figures. Its nodes stay under the caller's path, so the
 * difference is kept as unowned child time on both nodes. */
static void irq_into_call(ftf_builder *b, ftf_frame *pf, ftf_frame *f, uint64_t dur, uint64_t calls)
{
	pf->child_incl -= dur;
	f->child_incl += dur;
	if (!f->irq) /* an irq frame's nested hardirq is its descendant, not irq time */
		f->irq_at -= dur;
	f->calls_at -= calls;
	f->irq_calls_at -= calls;
	node_unowned_add(b, pf->node, (int64_t)dur);
	node_unowned_add(b, f->node, -(int64_t)dur);
}

/* A switch frame (the task was switched back in with it on top: the
 * scheduler's frame open across the switch, __cond_resched() or schedule())
 * completed: all its on-CPU time, its duration less its off-CPU and
 * interrupt time, is switch work, with its descendants (the scheduler's
 * traced work before and after the switch) and its irq subtrees for the
 * hook costs. Set, not added: a switch frame nested in it (a second switch)
 * is inside this one's time, and counts once. In irq context no frame is a
 * switch frame: the interrupt subtree leaves the interrupted call whole. */
static void sched_frame_done(ftf_task *t, const ftf_frame *f, uint64_t dur, uint64_t desc, uint64_t irq,
			     uint64_t off)
{
	uint64_t out = off + irq;
	/* the calls recorded while switched out are in off: not the scheduler's on-CPU work */
	uint64_t tail = t->sched.offcpu_calls - f->sched_at.offcpu_calls;
	uint64_t on = desc > tail ? desc - tail : 0; /* a tail call whose exit was lost is in no desc */
	t->sched.ns = f->sched_at.ns + (dur > out ? dur - out : 0);
	t->sched.calls = f->sched_at.calls + 1 + on;
	t->sched.outs = f->sched_at.outs + on + (t->irq_roots - f->irq_roots_at);
}

/* Pop the top frame as a completed call of duration dur; ret: the return
 * value its exit recorded, NULL: none (a root call's sample keeps it). */
static void complete_top(ftf_builder *b, ftf_task *t, uint64_t dur, int32_t cpu, uint64_t calltime,
			 const uint64_t *ret)
{
	/* the popped frame in place: the slot is free but not reused until the
	 * next entry, which sets every field it reads; a copy cost 2% of the read */
	ftf_frame *f = &t->stack[--t->n];
	ftf_frame *under = t->n ? f - 1 : NULL; /* the frame under it, now the top */
	uint64_t moved = 0;
	if (f->adopt_valid && !b->text_order) {
		ftf_frame *pf = under;
		if (pf && f->adopt_calltime >= calltime && f->adopt_calltime <= calltime + dur) {
			/* the early irq ran inside this call: move it here from the caller */
			irq_into_call(b, pf, f, f->adopt_dur, f->adopt_calls);
		} else if (pf && pf->node != FTF_NONE && pf->last_irq_early) {
			ftf_node_more *m = node_more(b, pf->node);
			if (m)
				m->irq_early = ftf_count_add(m->irq_early, 1);
		}
	}
	if (f->popwin_valid && !b->text_order && f->popwin_start >= calltime &&
	    f->popwin_end <= calltime + dur) {
		/* The irqs placed under the caller from this call's pop window ran
		 * before its rettime was read (6.1 lowers the depth first): this
		 * call's duration holds them. Move them here, or the caller counts
		 * them twice. Their nodes stay under the caller's path (unowned). */
		irq_into_call(b, under, f, f->popwin_dur, f->popwin_calls);
	}
	if (f->snap_own && f->lparent < t->n && t->stack[f->lparent].nsnap)
		t->rsnap[(size_t)f->lparent * FTF_RETSNAPS + t->stack[f->lparent].nsnap - 1].calltime = calltime;
	moved = f->after_moved; /* taken out of f by after_return_split */
	uint64_t dcalls = t->calls - f->calls_at;
	uint64_t dirq_calls = t->irq_calls - f->irq_calls_at;
	uint64_t desc = f->irq ? dcalls : dcalls - dirq_calls;
	uint64_t irq_calls = f->irq ? 0 : dirq_calls;
	uint64_t irq = t->irq_ns - f->irq_at;
	uint64_t off = t->off_ns - f->off_at;
	if (f->sw && !f->irq)
		sched_frame_done(t, f, dur, desc, irq, off);
	if (t->vsw_at > t->n) { /* the window's frame completed */
		t->vsw_at = 0;
		t->vsw_out = 0;
	} else if (t->vsw_at && f->lparent == t->vsw_at - 1 && !f->irq) {
		uint8_t c = func_class(b, f->func);
		if (c == CLASS_SW_CLOSE || (c == CLASS_SW_NOSWITCH && !t->vsw_out)) {
			t->vsw_at = 0;
			t->vsw_out = 0;
		}
	}
	ftf_schedw sw = { t->sched.ns - f->sched_at.ns, t->sched.calls - f->sched_at.calls,
			  t->sched.outs - f->sched_at.outs, t->sched.offcpu_calls - f->sched_at.offcpu_calls };
	int64_t excl = (int64_t)dur - (int64_t)f->child_incl;
	ftf_calls_exit(&b->root_calls, &t->tc, f->rec, f->gap, f->irq, cpu, calltime, dur, desc, irq, off,
		       t->irq_roots - f->irq_roots_at, &sw);
	calls_oom(b);

	t->calls++;
	if (f->irq)
		t->irq_calls++;
	ftf_frame *parent = under;
	if (parent && f->irq && parent->irq && f->lparent < t->n - 1) {
		/* a hardirq in a softirq call's pop window: the frame below's,
		 * or the returned call's if it ran before its rettime (as below) */
		for (uint32_t k = f->lparent + 1; k < t->n; k++) {
			t->stack[k].calls_at += dcalls + 1;
			t->stack[k].irq_calls_at += dcalls + 1;
		}
		if (f->lparent == t->n - 2)
			popwin_hold(under, calltime, dur, dcalls + 1);
		parent = &t->stack[f->lparent];
	} else if (parent && f->irq && !parent->irq && f->lparent < t->n - 1) {
		/* an irq taken after the top frames had returned: it belongs to
		 * the frame below them, and the returned frames must not see it */
		for (uint32_t k = f->lparent + 1; k < t->n; k++) {
			t->stack[k].calls_at += dcalls + 1;
			t->stack[k].irq_calls_at += dcalls + 1;
			t->stack[k].irq_at += dur;
			t->stack[k].irq_roots_at++; /* (counted below) */
		}
		if (f->lparent == t->n - 2)
			popwin_hold(under, calltime, dur, dcalls + 1);
		parent = &t->stack[f->lparent];
	}
	if (parent) {
		parent->child_incl += dur;
		if (!f->irq || parent->irq)
			parent->nchild++;
		if (f->gap)
			parent->gap = 1;
		if (moved) {
			parent->child_incl += moved;
			node_unowned_add(b, parent->node, -(int64_t)moved);
		}
		if (f->irq && (!parent->irq || f->early)) {
			if (!parent->has_last_irq) {
				parent->has_last_irq = 1;
				parent->last_irq_calltime = calltime;
				parent->last_irq_dur = 0;
				parent->last_irq_calls = 0;
				parent->last_irq_early = 0;
			}
			parent->last_irq_early |= f->early;
			parent->last_irq_dur += dur;
			parent->last_irq_calls += dcalls + 1;
		} else {
			parent->has_last_irq = 0;
		}
	}
	if (f->irq && (!parent || !parent->irq)) {
		/* an irq subtree ends: its time is irq time for the frames below,
		 * but for what it spent switched out, which they take out as
		 * off-CPU time already (not twice) */
		t->irq_ns += dur > off ? dur - off : 0;
		b->c.irq_roots++;
		t->irq_roots++;
	}
	if (f->cpu != cpu && cpu >= 0) {
		b->c.migrations++;
		ftf_node_more *m = f->node != FTF_NONE ? node_more(b, f->node) : NULL;
		if (m)
			m->migrated = ftf_count_add(m->migrated, 1);
	}
	journal_settle(b, t, f, f->gap);
	/* an irq call's own subtree is no interrupt inside it (corrections.py's R) */
	node_add(b, f->node, f->gap, parent, dur, excl, desc, f->nchild, irq, irq_calls, off, &sw,
		 f->irq ? 0 : t->irq_roots - f->irq_roots_at);
	if (parent && !f->irq && dcalls == 0) {
		t->root_leaves++;
		if (dur < t->root_leaf_min)
			t->root_leaf_min = dur;
	}
	if (!parent && f->node != FTF_NONE) {
		ftf_sample s = {
			.node = f->node, .pid = (int32_t)(t->key >> 63 ? 0 : t->key), .cpu = cpu,
			.flags = (f->gap ? FTF_SAMPLE_GAP : 0) |
				 ((b->nodes[f->node].flags & FTF_NODE_PARTIAL) ? FTF_SAMPLE_PARTIAL : 0) |
				 (f->irq ? FTF_SAMPLE_IRQ : 0) | (ret ? FTF_SAMPLE_RET : 0),
			.calltime = calltime, .dur = dur, .desc = desc, .irq = irq, .offcpu = off,
			.irq_calls = irq_calls, .irq_roots = t->irq_roots - t->root_irq_roots_at,
			.leaf_min = t->root_leaf_min == UINT64_MAX ? 0 : t->root_leaf_min,
			.leaves = t->root_leaves,
			.op = ftf_calls_root_op(&b->root_calls, &t->tc, &b->funcs),
			.sched = sw.ns, .sched_calls = sw.calls, .sched_outs = sw.outs,
			.offcpu_calls = sw.offcpu_calls,
			.switches = t->switch_ins - f->switch_ins_at,
			.retval = ret ? *ret : 0,
			.subbufs = t->root_subbufs,
		};
		uint64_t before = b->roots.n;
		add_sample(b, &s);
		if (b->roots.n > before) {
			const ftf_sample *kept = &s;
			ftf_spool_tree(&b->root_calls, &t->tc, kept->pid, (int64_t)before);
			/* its on-CPU task time ranks it for the corrected figures (a
			 * gap call has none: last) */
			uint64_t gone = kept->offcpu + kept->irq + kept->sched;
			uint64_t on_cpu = kept->dur > gone && !(kept->flags & FTF_SAMPLE_GAP) ? kept->dur - gone : 0;
			ftf_calls_root_end(&b->root_calls, &t->tc, before, kept->node, kept->op, kept->dur, on_cpu);
		}
		calls_oom(b);
	}
}

/* ---- in-trace overhead estimate -------------------------------------- */

static void est_add(ftf_builder *b, int kind, int ctx, int32_t cpu, uint64_t v)
{
	if (cpu < 0)
		return;
	ftf_est *e = &b->est[kind][ctx][cpu < FTF_EST_CPUS ? cpu : FTF_EST_CPUS - 1];
	if (v >= FTF_EST_MAX) {
		e->over++;
		return;
	}
	if (!e->hist && !(e->hist = calloc(FTF_EST_MAX, sizeof(*e->hist)))) {
		b->oom = 1;
		return;
	}
	e->hist[v]++;
}

/* The top frame is about to complete with this exit: a call with no
 * recorded calls inside is a leaf (its duration is O_in plus its body);
 * calltime minus the previous sibling's rettime is O_out plus the caller's
 * code between the two calls. An irq between siblings breaks the pair. */
static void est_exit(ftf_builder *b, ftf_task *t, ftf_frame *f, ftf_frame *p, const ftf_event *ev, uint64_t dur)
{
	int ctx = (ev->flags & FTF_FLAG_HARDIRQ) ? FTF_CTX_HARDIRQ
		  : (ev->flags & FTF_FLAG_SOFTIRQ) ? FTF_CTX_SOFTIRQ
		  : f->irq ? FTF_CTX_HARDIRQ : FTF_CTX_TASK;
	if (f->gap)
		return;
	if (t->calls == f->calls_at)
		est_add(b, FTF_EST_LEAF, ctx, ev->cpu, dur);
	if (!p || p->gap || f->lparent != t->n - 2)
		return;
	if (f->irq && !p->irq) {
		p->last_ret = 0;
		return;
	}
	if (p->last_ret && ev->calltime >= p->last_ret)
		est_add(b, FTF_EST_GAP, ctx, ev->cpu, ev->calltime - p->last_ret);
	p->last_ret = ev->rettime;
}

/* The exit with its calltime as the builder takes it: a calltime after the
 * rettime is refuted by the exit itself (a damaged record or format): the
 * call is taken as ending at its rettime, 0 ns long, and counted. */
static ftf_event checked_exit(ftf_builder *b, const ftf_event *ev)
{
	ftf_event e = *ev;
	if (e.calltime > e.rettime) {
		b->c.backwards_calls++;
		e.calltime = e.rettime;
	}
	return e;
}

/* Whether the interval between a call's entry and exit records (another
 * clock, at the same rate when both are nanoseconds) refutes its rettime -
 * calltime: the clocks' offsets differ by at most milliseconds, even across
 * CPUs; a damaged calltime or rettime is usually off by far more.
 * Without sleep-time (nosleep-time) the tracer adds the time the task was
 * switched out to the calltime of every call open on its stack: such a
 * call is shorter than its records' interval by the time it slept. That
 * time is known from sched_switch events (the frame's off-CPU time), or
 * shown by a callee that began before the call's calltime (slept_shown);
 * a call shorter by more is counted apart (times_short), refuted only in
 * a trace where no calltime shows nosleep-time (a sleeping call without
 * an earlier callee shows nothing of its own). */
#define FTF_TIMES_SLACK_NS 50000000ULL
static void check_times(ftf_builder *b, ftf_task *t, ftf_frame *f, ftf_frame *p, const ftf_event *ev,
			uint64_t end_ts)
{
	if (f->gap) /* a gap: the entry may be another call's, its callees another's */
		return;
	if (f->inner_call != UINT64_MAX && ev->calltime > f->inner_call &&
	    ev->calltime - f->inner_call > f->slept_shown)
		f->slept_shown = ev->calltime - f->inner_call;
	if (f->slept_shown > FTF_TIMES_SLACK_NS)
		b->c.nosleep_calls++;
	/* every call open meanwhile slept as long: the caller as well (0, most
	 * calls' figure, raises none) */
	if (f->slept_shown && p && p->slept_shown < f->slept_shown)
		p->slept_shown = f->slept_shown;
	if (!b->ts_ns)
		return;
	uint64_t dur = ev->rettime - ev->calltime;
	uint64_t span = end_ts >= f->entry_ts ? end_ts - f->entry_ts : f->entry_ts - end_ts;
	/* what the time slept takes off can only lower the difference: one in
	 * bounds already (most calls') is not refuted */
	if (end_ts >= f->entry_ts && (dur > span ? dur - span : span - dur) <= FTF_TIMES_SLACK_NS + span / 100)
		return;
	uint64_t slept = t->off_ns - f->off_at;
	if (f->slept_shown > slept)
		slept = f->slept_shown;
	uint64_t off = dur > span ? dur - span : span - dur;
	int shorter = dur < span;
	if (shorter)
		off = off > slept ? off - slept : 0;
	if (end_ts < f->entry_ts || off > FTF_TIMES_SLACK_NS + span / 100) {
		/* a record between its entry and exit that repeats its CPU's
		 * previous stamp: the records' clock stalled (see
		 * ftf_builder_feed), not the call's times */
		int kind = -1;
		if (b->c.stalled_stamps != f->stalls_at)
			b->c.times_stalled++;
		else if (shorter && end_ts >= f->entry_ts)
			kind = b->c.times_short++ ? -1 : 1;
		else
			kind = b->c.times_refuted++ ? -1 : 0;
		if (kind >= 0) { /* the first of its kind */
			b->c.refuted_first_ns[kind] = ev->calltime;
			b->c.refuted_first_func[kind] = ev->func;
			b->c.refuted_first_pid[kind] = task_pid(t);
		}
	}
}

/* The top frame completes: its caller (the frame under it, running all
 * along) hears of its interval. */
static void note_inner(ftf_frame *p, const ftf_event *ev)
{
	if (!p)
		return;
	if (ev->calltime < p->inner_call)
		p->inner_call = ev->calltime;
	if (ev->rettime > p->inner_ret)
		p->inner_ret = ev->rettime;
}

/* Whether the calls made inside this one lie outside it. A callee's rettime
 * after the call's own is impossible. Its calltime before the call's own is
 * not always: without sleep-time (nosleep-time) the tracer adds the time a
 * task was switched out to the calltime of every call on its stack, so a
 * caller that slept after a callee returned has a later calltime than that
 * callee's. Its real start, its rettime less its entry-to-exit record
 * interval, bounds every callee's calltime either way. Same slack as
 * check_times (the clocks of CPUs a task migrated between). */
static void check_inner(ftf_builder *b, const ftf_frame *f, const ftf_event *ev, uint64_t end_ts)
{
	if (!b->ts_ns || f->gap || f->inner_call == UINT64_MAX || end_ts < f->entry_ts)
		return;
	uint64_t span = end_ts - f->entry_ts;
	uint64_t start = ev->rettime > span && ev->rettime - span < ev->calltime ? ev->rettime - span : ev->calltime;
	if (f->inner_call + FTF_TIMES_SLACK_NS < start)
		b->c.inner_before_call++;
	if (f->inner_ret > ev->rettime + FTF_TIMES_SLACK_NS)
		b->c.inner_after_return++;
}

/* The top frame returns at ev's rettime. The kernel writes a call's exit
 * event some time after it reads the rettime, and 7.x lowers the depth only
 * after that write (docs/trace-formats.md, "Depth: when the kernel lowers
 * it"): an interrupt taken in between is written one level under the
 * returned call, before its exit, and so is the interrupt's exit work that
 * runs in task context after it (raw_irqentry_exit_cond_resched ...). The
 * calls from the first interrupt that began at or after the rettime on are
 * the caller's: take them out of the top frame (its duration does not hold
 * them) and keep their time for the caller (complete_top). Their nodes stay
 * under this call's path (unowned here). Returns the timestamp that ends
 * the call's records: the first such call's entry, else the exit's. */
static uint64_t after_return_split(ftf_builder *b, ftf_task *t, ftf_frame *f, const ftf_event *ev)
{
	uint32_t i = t->n - 1;
	const ftf_retsnap *r = &t->rsnap[(size_t)i * FTF_RETSNAPS];
	uint32_t k = 0;
	f->after_moved = 0;
	if (b->text_order)
		return ev->ts;
	while (k < f->nsnap && (r[k].calltime == UINT64_MAX || r[k].calltime < ev->rettime))
		k++;
	if (k == f->nsnap)
		return ev->ts;
	const ftf_retsnap *s = &r[k];
	if (f->child_incl < s->child_incl || f->nchild < s->nchild)
		return ev->ts; /* moved since (an early irq adopted): not a suffix any more */
	f->after_moved = f->child_incl - s->child_incl;
	f->child_incl = s->child_incl;
	f->nchild = s->nchild;
	f->inner_ret = s->inner_ret;
	f->calls_at += t->calls - s->calls;
	f->irq_calls_at += t->irq_calls - s->irq_calls;
	f->irq_at += t->irq_ns - s->irq_ns;
	f->off_at += t->off_ns - s->off_ns;
	f->irq_roots_at += t->irq_roots - s->irq_roots;
	node_unowned_add(b, f->node, (int64_t)f->after_moved);
	b->c.irq_outside_window++;
	return s->ts;
}

void ftf_builder_set_clock(ftf_builder *b, const char *clock)
{
	static const char *const ns_clocks[] = { "local", "global", "mono", "mono_raw", "boot", "perf", "tai" };
	b->ts_ns = 0;
	for (size_t i = 0; clock && i < sizeof(ns_clocks) / sizeof(ns_clocks[0]); i++)
		if (!strcmp(clock, ns_clocks[i]))
			b->ts_ns = 1;
}

/* A completed call of func that returned retval after dur ns
 * (ftf_retvals). */
static void retval_add(ftf_builder *b, uint32_t func, uint64_t retval, uint64_t dur)
{
	ftf_retvals *r = &b->retvals;
	if (func >= r->n) {
		uint32_t n = r->n ? r->n : 64;
		while (n <= func && n <= UINT32_MAX / 2)
			n *= 2;
		ftf_fret *f = n > func ? realloc(r->f, (size_t)n * sizeof(*f)) : NULL;
		if (!f) {
			b->oom = 1;
			return;
		}
		memset(f + r->n, 0, (size_t)(n - r->n) * sizeof(*f));
		r->f = f;
		r->n = n;
	}
	ftf_ret_side *s = &r->f[func].side[ftf_retval_is_error(retval)];
	if (!s->calls || dur < s->min)
		s->min = dur;
	if (dur > s->max)
		s->max = dur;
	s->incl += dur;
	s->calls = ftf_count_add(s->calls, 1);
	if (ftf_hist_add(&s->hist, ftf_hist_bucket(dur)) < 0)
		b->oom = 1;
}

static inline __attribute__((always_inline)) void on_exit_event(ftf_builder *b, ftf_task *t, const ftf_event *raw)
{
	/* checked_exit's copy only for the rare backwards call: a 64-byte copy
	 * per exit otherwise */
	ftf_event checked;
	const ftf_event *ev = raw;
	if (raw->calltime > raw->rettime) {
		checked = checked_exit(b, raw);
		ev = &checked;
	}
	uint64_t dur = bounded_dur(b, ev->rettime - ev->calltime);
	b->c.exits++;
	if (ev->has_retval)
		retval_add(b, ev->func, ev->retval, dur);

	if (t->have_overrun && ev->overrun > t->overrun) {
		/* The kernel's return stack was full (its only cause of overrun
		 * growth, docs/trace-formats.md): the calls below the deepest frame
		 * were never recorded, hooks and all, and the frames open are whole,
		 * their durations holding those calls' time. Nothing is lost. */
		b->c.overrun_growth++;
		b->c.depth_limit_calls += ev->overrun - t->overrun;
		int64_t below = (int64_t)ev->depth + 1; /* the refused calls were this call's */
		if (below > b->c.depth_limit)
			b->c.depth_limit = below;
	}
	t->overrun = ev->overrun;
	t->have_overrun = 1;

	/* find the matching frame, normally the top */
	uint32_t i = t->n;
	while (i > 0) {
		ftf_frame *f = &t->stack[i - 1];
		if (f->func == ev->func && f->depth == ev->depth)
			break;
		if (f->depth < ev->depth) {
			i = 0;
			break;
		}
		i--;
	}
	if (i > 0) {
		int clean = i == t->n;
		if (!clean) {
			b->c.depth_mismatch++;
			drop_unterminated(b, t, i);
		}
		/* the returning frame and its caller, found once for these */
		ftf_frame *f = &t->stack[t->n - 1];
		ftf_frame *p = t->n >= 2 ? f - 1 : NULL;
		uint64_t end_ts = after_return_split(b, t, f, ev);
		check_times(b, t, f, p, ev, end_ts);
		check_inner(b, f, ev, end_ts);
		note_inner(p, ev);
		est_exit(b, t, f, p, ev, dur);
		if (ev->has_retval)
			ftf_calls_values(&b->root_calls, &t->tc, f->rec, FTF_REC_RET, FTF_EX_RETVAL, &ev->retval, 1);
		complete_top(b, t, dur, ev->cpu, ev->calltime, ev->has_retval ? &ev->retval : NULL);
		if (clean && t->n)
			t->stack[t->n - 1].window = 1;
		return;
	}

	/* orphan exit: the entry was not seen (trace started mid-call, lost
	 * events, or an exit-only tracing_thresh trace). The call is complete
	 * and its duration known; its descendants are not. */
	b->c.orphan_exits++;
	if (t->n && t->stack[t->n - 1].depth >= ev->depth) {
		uint32_t keep = t->n;
		while (keep && t->stack[keep - 1].depth >= ev->depth)
			keep--;
		b->c.depth_mismatch++;
		drop_unterminated(b, t, keep);
	}
	/* Not under the open parent: the call's own descendants, whose entries
	 * came after the gap, are already counted as the parent's children. */
	uint32_t node = node_child(b, partial_root(b), ev->func, (ev->flags & FTF_FLAG_IRQ_MASK) != 0);
	if (t->n)
		t->stack[t->n - 1].gap = 1;
	t->calls++;
	static const ftf_schedw none = { 0 };
	node_add(b, node, 1, NULL, dur, (int64_t)dur, 0, 0, 0, 0, 0, &none, 0);
	if (b->root_calls.spool) {
		int64_t row[FTF_SPOOL_COLS] = { 0 };
		row[FTF_SP_KIND] = FTF_SPK_ORPHAN;
		row[FTF_SP_PID] = task_pid(t);
		row[FTF_SP_CPU] = ev->cpu;
		row[FTF_SP_FUNC] = ev->func;
		row[FTF_SP_T0] = (int64_t)ev->calltime;
		row[FTF_SP_T1] = (int64_t)dur;
		row[FTF_SP_FLAGS] = (ev->flags & FTF_FLAG_IRQ_MASK) != 0;
		ftf_spool_row(b->root_calls.spool, row);
	}
}

static void on_lost(ftf_builder *b, const ftf_event *ev)
{
	b->c.lost_records++;
	if (ev->lost > 0)
		b->c.lost_events += (uint64_t)ev->lost;
	else
		b->c.lost_unknown++;
	if (b->root_calls.spool) {
		int64_t row[FTF_SPOOL_COLS] = { 0 };
		row[FTF_SP_KIND] = FTF_SPK_LOST;
		row[FTF_SP_CPU] = ev->cpu;
		row[FTF_SP_T0] = (int64_t)ev->ts;
		row[FTF_SP_T1] = ev->lost > 0 ? ev->lost : -1;
		ftf_spool_row(b->root_calls.spool, row);
	}
	if (ev->cpu >= 0 && ev->cpu < FTF_MAX_CPUS) {
		b->lost_marks_per_cpu[ev->cpu]++;
		if (ev->lost > 0)
			b->lost_per_cpu[ev->cpu] += ev->lost;
		else
			b->lost_unknown_per_cpu[ev->cpu]++;
	}
	/* every task last seen on that CPU may have lost entries or exits */
	for (uint32_t i = 0; i < b->ntask_slots; i++) {
		ftf_task *t = b->tasks[i];
		if (t && t->n && t->cpu == ev->cpu)
			taint_all(t);
	}
}

static void on_switch(ftf_builder *b, const ftf_event *ev)
{
	ftf_task **tail = ev->cpu >= 0 && ev->cpu < FTF_MAX_CPUS ? &b->cpu_tail[ev->cpu] : NULL;
	b->c.switches++;
	if (tail)
		*tail = NULL;
	if (ev->pid != 0) {
		ftf_task *prev = task_find(b, task_key(ev->pid, ev->cpu), 0);
		if (prev && prev->n) {
			prev->switched_out = 1;
			prev->out_ts = ev->ts;
			if (prev->vsw_at && prev->vsw_at <= prev->n)
				prev->vsw_out = 1;
			if (tail)
				*tail = prev;
		}
	}
	if (ev->next_pid != 0) {
		ftf_task *next = task_find(b, task_key(ev->next_pid, ev->cpu), 0);
		if (next && next->switched_out) {
			if (ev->ts >= next->out_ts) {
				next->off_ns += ev->ts - next->out_ts;
				if (b->root_calls.spool) {
					int64_t row[FTF_SPOOL_COLS] = { 0 };
					row[FTF_SP_KIND] = FTF_SPK_OFFCPU;
					row[FTF_SP_PID] = task_pid(next);
					row[FTF_SP_CPU] = ev->cpu;
					row[FTF_SP_T0] = (int64_t)next->out_ts;
					row[FTF_SP_T1] = (int64_t)ev->ts;
					ftf_spool_row(b->root_calls.spool, row);
				}
				/* the scheduler's frame open across the switch: its work
				 * around the switch is the scheduler's */
				ftf_frame *top = next->n ? &next->stack[next->n - 1] : NULL;
				if (top && !top->irq && func_is_sched_entry(b, top->func)) {
					top->sw = 1;
					next->switch_ins++;
				} else if (next->vsw_at && next->vsw_at <= next->n) {
					/* in a frameless switch window: its calls are switch frames */
					next->switch_ins++;
				}
			}
			next->switched_out = 0;
		}
	}
}

static inline __attribute__((always_inline)) void feed_one(ftf_builder *b, const ftf_event *ev)
{
	b->c.events++;
	if (b->check_only)
		return;
	if (!b->c.first_ts || ev->ts < b->c.first_ts)
		b->c.first_ts = ev->ts;
	if (ev->ts > b->c.last_ts)
		b->c.last_ts = ev->ts;
	if (ev->cpu > b->max_cpu && ev->cpu < FTF_MAX_CPUS)
		b->max_cpu = ev->cpu;
	if (b->ts_ns && ev->kind != FTF_EV_LOST && ev->cpu >= 0 && ev->cpu < FTF_MAX_CPUS) {
		/* Two records of one CPU a nanosecond clock stamps alike: the
		 * ring buffer wrote no time between them. The "global" clock
		 * (the kernel's default when sched_clock is unstable) holds a CPU
		 * whose own clock lags at the last stamp any CPU wrote until its
		 * next tick: record times stall, then jump (5.10: by up to 0.1 s);
		 * calltime and rettime (trace_clock_local) do not. */
		if (b->cpu_last_ts[ev->cpu] == ev->ts + 1)
			b->c.stalled_stamps++;
		b->cpu_last_ts[ev->cpu] = ev->ts + 1;
	}

	switch (ev->kind) {
	case FTF_EV_ENTRY:
	case FTF_EV_EXIT:
	case FTF_EV_LEAF: {
		ftf_task *t = task_find(b, task_key(ev->pid, ev->cpu), 1);
		if (!t) {
			b->oom = 1;
			return;
		}
		/* After its sched_switch event, the outgoing task still runs the
		 * end of __schedule() (switch_mm...) and records it: that tail is
		 * not a switch-in. Any other task's event on the CPU ends the
		 * tail; an event of a switched-out task after that means its
		 * switch-in was missed (its off-CPU time is then not known). */
		if (ev->cpu >= 0 && ev->cpu < FTF_MAX_CPUS) {
			ftf_task **tail = &b->cpu_tail[ev->cpu];
			if (*tail != t) { /* (so not the tail: switched in, or missed) */
				*tail = NULL;
				t->switched_out = 0;
			}
		} else {
			t->switched_out = 0;
		}
		t->cpu = ev->cpu;
		b->cur_task = t;
		/* A sub-buffer switch costs the record that made it a few hundred
		 * ns: inside the open root call from its own entry record (written
		 * after its calltime) up to its exit record (written after its
		 * rettime: not); interrupt records go with their subtree. */
		int sb = ev->subbuf_start && !(ev->flags & FTF_FLAG_IRQ_MASK);
		b->c.subbuf_starts += ev->subbuf_start;
		if (ev->kind == FTF_EV_ENTRY) {
			on_entry_inl(b, t, ev);
			if (sb && t->n)
				t->root_subbufs++;
		} else if (ev->kind == FTF_EV_EXIT) {
			if (sb && t->n > 1)
				t->root_subbufs++;
			on_exit_event(b, t, ev);
		} else {
			/* a leaf line: entry and exit at once */
			b->c.leaf_events++;
			on_entry(b, t, ev);
			b->c.entries--;
			b->c.exits++;
			const ftf_event leaf = checked_exit(b, ev);
			uint64_t dur = bounded_dur(b, leaf.rettime - leaf.calltime);
			if (t->n) {
				if (leaf.has_retval) {
					retval_add(b, leaf.func, leaf.retval, dur);
					ftf_calls_values(&b->root_calls, &t->tc, t->stack[t->n - 1].rec, FTF_REC_RET,
							 FTF_EX_RETVAL, &leaf.retval, 1);
				}
				note_inner(t->n >= 2 ? &t->stack[t->n - 2] : NULL, &leaf);
				complete_top(b, t, dur, leaf.cpu, leaf.calltime, leaf.has_retval ? &leaf.retval : NULL);
				if (t->n)
					t->stack[t->n - 1].window = 1;
			}
		}
		b->cur_task = NULL;
		break;
	}
	case FTF_EV_SWITCH:
		on_switch(b, ev);
		break;
	case FTF_EV_LOST:
		b->c.events--; /* a mark on a record, not a record of its own */
		on_lost(b, ev);
		break;
	default:
		b->c.other_events++;
		break;
	}
}

void ftf_builder_feed(ftf_builder *b, const ftf_event *ev)
{
	/* (no ids: ev is not written) */
	ftf_builder_feed_addrs(b, (ftf_event *)ev, NULL, 1, NULL);
}

/* A function first seen at addr: its name interned, its id mapped. */
static __attribute__((noinline)) uint32_t func_new(ftf_builder *b, ftf_func_ids *ids, uint64_t addr)
{
	const char *name = ids->name_of(ids->name_ctx, addr);
	char buf[32];
	if (!name) {
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)addr);
		name = buf;
	}
	uint32_t id = ftf_funcs_intern(&b->funcs, name, strlen(name));
	if (id == FTF_NONE) {
		b->oom = 1;
		id = 0;
	}
	if (ftf_u64map_put(&ids->map, addr, (uint64_t)id + 1) < 0)
		b->oom = 1;
	return id;
}

/* The id of the function at addr, its name interned on first sight; inline
 * (the id cache misses on about every other entry, a call's sibling). */
static inline uint32_t func_id(ftf_builder *b, ftf_func_ids *ids, uint64_t addr)
{
	uint64_t known = ftf_u64map_get(&ids->map, addr);
	return known ? (uint32_t)(known - 1) : func_new(b, ids, addr);
}

void ftf_builder_feed_addrs(ftf_builder *b, ftf_event *ev, const uint64_t *addr, uint32_t n, ftf_func_ids *ids)
{
	for (uint32_t i = 0; i < n; i++) {
		ftf_event *e = &ev[i];
		if (ids && (e->kind == FTF_EV_ENTRY || e->kind == FTF_EV_EXIT)) {
			ftf_idcache *c = &ids->cache[((uint32_t)e->cpu % FTF_IDCACHE_CPUS) * FTF_IDCACHE_DEPTHS +
						     ((uint64_t)e->depth % FTF_IDCACHE_DEPTHS)];
			if (c->addr == addr[i] && addr[i]) {
				e->func = c->id;
			} else {
				e->func = func_id(b, ids, addr[i]);
				c->addr = addr[i];
				c->id = e->func;
			}
		}
		feed_one(b, e);
	}
}

void ftf_builder_finish(ftf_builder *b)
{
	for (uint32_t i = 0; i < b->ntask_slots; i++) {
		ftf_task *t = b->tasks[i];
		if (!t)
			continue;
		for (uint32_t k = t->n; k-- > 0;) {
			ftf_node_more *m = t->stack[k].node != FTF_NONE ? node_more(b, t->stack[k].node) : NULL;
			if (m) {
				m->open_end = ftf_count_add(m->open_end, 1);
				m->unowned_child_incl += t->stack[k].child_incl;
			}
			journal_settle(b, t, &t->stack[k], 1); /* never completed */
		}
		b->c.open_at_end += t->n;
		if (t->n && t->jn)
			journal_end(b, t, 1); /* the root never completed */
		t->n = 0;
		ftf_spool_tree(&b->root_calls, &t->tc, task_pid(t), -1); /* open at the end */
	}
}

