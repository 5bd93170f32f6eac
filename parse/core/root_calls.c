/* Per root call: the NFS operation it executed, and its call tree while it
 * is open, kept when it is among the slowest (see root_calls.h). Called by
 * the builder (builder.c) at each entry, each completed call and each
 * completed root call, with its state (ftf_root_calls, and the task's
 * ftf_task_calls); O(1) per event but for the copy of a tree that enters
 * the slowest set.
 *
 * How an operation is recognised (docs/design.md, "Operations"): below the
 * root call (never the root itself: a trace rooted at one procedure is one
 * operation), in task context,
 *  - the first NFSv2/v3, NFSACL or NLM procedure entered (nfsd_proc_*,
 *    nfsd3_proc_*, nfsacld_proc_*, nlmsvc_proc_*, nlm4svc_proc_*) or
 *    nfsd4_proc_null names it: "v3 WRITE", "NFSACL3 GETACL";
 *  - else the first nfsd4_proc_compound entered (the root may be it): the
 *    NFSv4 operation functions it calls directly (nfsd4_putfh, ...), in
 *    order, name it: "COMPOUND(PUTFH,WRITE)".
 * A root call that reaches none has no operation (FTF_OP_NONE), counted by
 * the reports as "(no procedure)". */
#define _GNU_SOURCE /* mremap */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mem.h"
#include "root_calls.h"

enum { OPK_NONE = 0, OPK_PROC = 1, OPK_COMPOUND = 2, OPK_V4OP = 3 };

/* Procedure functions: a name ending in '_' is a prefix, else the whole
 * name; the label is `label` and the name past `skip` bytes, upper case.
 * First match wins (the NFSACL procedures share nfsd3_proc_). */
static const struct {
	const char *prefix, *label;
	size_t skip;
} proc_prefixes[] = {
	{ "nfsd3_proc_getacl", "NFSACL3 ", 11 }, { "nfsd3_proc_setacl", "NFSACL3 ", 11 },
	{ "nfsacld_proc_", "NFSACL2 ", 13 }, { "nfsd3_proc_", "v3 ", 11 }, { "nfsd_proc_", "v2 ", 10 },
	{ "nfsd4_proc_null", "v4 ", 11 }, { "nlm4svc_proc_", "NLM4 ", 13 }, { "nlmsvc_proc_", "NLM ", 12 },
};

static int proc_match(const char *name)
{
	for (size_t i = 0; i < sizeof(proc_prefixes) / sizeof(proc_prefixes[0]); i++) {
		const char *p = proc_prefixes[i].prefix;
		size_t n = strlen(p);
		if (p[n - 1] == '_' ? (!strncmp(name, p, n) && name[n]) : !strcmp(name, p))
			return (int)i;
	}
	return -1;
}

/* The NFSv4 operations' functions (fs/nfsd/nfs4proc.c, nfsd4_ops[].op_func),
 * without their "nfsd4_" prefix: only these, called by the compound, are
 * operations (it calls helpers named nfsd4_* too). */
static const char *const v4_ops[] = {
	"access", "close", "commit", "create", "delegreturn", "getattr", "getfh", "link", "lock",
	"lockt", "locku", "lookup", "lookupp", "nverify", "open", "open_confirm", "open_downgrade",
	"putfh", "putrootfh", "read", "readdir", "readlink", "remove", "rename", "renew",
	"restorefh", "savefh", "secinfo", "setattr", "setclientid", "setclientid_confirm", "verify",
	"write", "release_lockowner", "exchange_id", "backchannel_ctl", "bind_conn_to_session",
	"create_session", "destroy_session", "free_stateid", "getdeviceinfo", "layoutget",
	"layoutcommit", "layoutreturn", "secinfo_no_name", "sequence", "test_stateid",
	"destroy_clientid", "reclaim_complete", "allocate", "copy", "copy_notify", "deallocate",
	"offload_cancel", "offload_status", "seek", "clone", "getxattr", "setxattr", "listxattrs",
	"removexattr", "layouterror", "layoutstats", "read_plus", "write_same", "io_advise",
	"putpubfh", "openattr", "delegpurge", "get_dir_delegation", "want_delegation",
};

static int name_op_kind(const char *name)
{
	if (!strcmp(name, "nfsd4_proc_compound"))
		return OPK_COMPOUND;
	if (proc_match(name) >= 0)
		return OPK_PROC;
	if (!strncmp(name, "nfsd4_", 6))
		for (size_t i = 0; i < sizeof(v4_ops) / sizeof(v4_ops[0]); i++)
			if (!strcmp(name + 6, v4_ops[i]))
				return OPK_V4OP;
	return OPK_NONE;
}

static int func_op_kind(ftf_root_calls *rc, const ftf_funcs *funcs, uint32_t func)
{
	if (func >= funcs->n)
		return OPK_NONE;
	if (func >= rc->nfunc_op) {
		uint32_t n = funcs->n;
		uint8_t *a = realloc(rc->func_op, n);
		if (!a) {
			rc->oom = 1;
			return OPK_NONE;
		}
		memset(a + rc->nfunc_op, 0, n - rc->nfunc_op);
		rc->func_op = a;
		rc->nfunc_op = n;
	}
	if (!rc->func_op[func])
		rc->func_op[func] = 1 + name_op_kind(funcs->names[func]);
	return rc->func_op[func] - 1;
}

/* ---- the trees' memory ---------------------------------------------------
 * Trees come and go all through the read: a task's open tree grows with its
 * root call and is given back at its end, a kept tree is replaced by a
 * slower one. From malloc, on the builder's thread, the holes they leave
 * among the builder's growing tables are memory its arena never gives back
 * (12 MB more peak RSS on the big fixture, for 1.4 MB of kept trees).
 * Blocks of FTF_BLK_MAP bytes or more are mappings of their own instead,
 * grown in place by mremap and given back on free (root_calls.h: the
 * builder's node table grows the same way). */

static size_t blk_pages(size_t n)
{
	static size_t page; /* the same value from any thread */
	if (!page)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return (n + page - 1) / page * page;
}

/* A mapping of FTF_HUGE or more starts on a 2 MB boundary (mapped 2 MB over,
 * the ends given back): a hinted block then takes huge pages from its first
 * byte, where one placed anywhere took 4 KB pages up to its first boundary
 * and past its last (docs/performance.md, "Figures behind choices"). */
static void *blk_map(size_t n, int populate)
{
	size_t len = blk_pages(n), over = len >= FTF_HUGE ? FTF_HUGE : 0;
	uint8_t *p = mmap(NULL, len + over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (over) { /* the boundary is less than `over` in: some tail is always left */
		uint8_t *a = (uint8_t *)(((uintptr_t)p + FTF_HUGE - 1) & ~(uintptr_t)(FTF_HUGE - 1));
		if (a > p)
			munmap(p, (size_t)(a - p));
		munmap(a + len, (size_t)(p + over - a));
		p = a;
	}
	ftf_hint_huge(p, n);
	/* a table written all over at once: its pages faulted in by one call, not
	 * one fault each (two where a read found the zero page first) */
	if (populate)
		madvise(p, len, MADV_POPULATE_WRITE);
	return p;
}

void *ftf_blk_zalloc(size_t n)
{
	return n < FTF_BLK_MAP ? calloc(1, n) : blk_map(n, 1);
}

void ftf_blk_free(void *p, size_t n)
{
	if (!p)
		return;
	if (n >= FTF_BLK_MAP)
		munmap(p, blk_pages(n));
	else
		free(p);
}

void *ftf_blk_grow(void *p, size_t old, size_t n)
{
	if (n < FTF_BLK_MAP)
		return realloc(p, n);
	if (old >= FTF_BLK_MAP) {
		void *q = mremap(p, blk_pages(old), blk_pages(n), MREMAP_MAYMOVE);
		if (q == MAP_FAILED)
			return NULL;
		ftf_hint_huge(q, n);
		return q;
	}
	void *q = blk_map(n, 0);
	if (q && old)
		memcpy(q, p, old);
	if (q)
		free(p);
	return q;
}

/* Memory stays O(open root calls' trees + kept trees), never O(events). A
 * task's buffers stay with it between root calls (no churn), up to
 * RETAIN_BUDGET bytes over all tasks: past it, buffers grown beyond
 * RECS_KEEP entries are given back when their root call ends (else memory
 * would be the largest tree each task ever had, times the tasks). */
#define RECS_KEEP 64
#define RETAIN_BUDGET ((uint64_t)8 << 20)

static size_t recs_bytes(const ftf_task_calls *tc)
{
	return (size_t)tc->caprecs * sizeof(*tc->recs) + (size_t)tc->capextras * sizeof(*tc->extras);
}

static void recs_free(ftf_task_calls *tc)
{
	ftf_blk_free(tc->recs, (size_t)tc->caprecs * sizeof(*tc->recs));
	ftf_blk_free(tc->extras, (size_t)tc->capextras * sizeof(*tc->extras));
	tc->recs = NULL;
	tc->extras = NULL;
	tc->caprecs = tc->capextras = 0;
}

/* The task's root call ended: its buffers kept for the next one, within the
 * budget. */
static void recs_release(ftf_root_calls *rc, ftf_task_calls *tc)
{
	size_t bytes = recs_bytes(tc);
	tc->nrecs = 0;
	tc->nextras = 0;
	if (tc->caprecs <= RECS_KEEP && tc->capextras <= RECS_KEEP)
		return;
	if (rc->retained + bytes <= RETAIN_BUDGET) {
		tc->retained = (uint32_t)bytes;
		rc->retained += bytes;
	} else {
		recs_free(tc);
	}
}

/* A root call opens on the task: its buffers are in use again. */
static void recs_reuse(ftf_root_calls *rc, ftf_task_calls *tc)
{
	rc->retained -= tc->retained;
	tc->retained = 0;
	tc->nrecs = 0;
	tc->nextras = 0;
}

void ftf_calls_root_start(ftf_root_calls *rc, ftf_task_calls *tc)
{
	recs_reuse(rc, tc); /* also after a root call that never completed (lost exit) */
	tc->op_kind = OPK_NONE;
	tc->op_n = 0;
	tc->op_more = 0;
	tc->op_compound = FTF_NONE;
	tc->nrecs = 0;
	tc->nextras = 0;
	tc->has_base = 0;
	tc->recs_cut = 0;
}

static void on_op_func(ftf_task_calls *tc, int kind, uint32_t func, uint32_t stack_idx, uint32_t lparent)
{
	if (tc->op_kind == OPK_PROC)
		return;
	if (kind == OPK_PROC) {
		if (stack_idx == 0 || tc->op_kind != OPK_NONE)
			return; /* the root itself: one operation; or inside a compound */
		tc->op_kind = OPK_PROC;
		tc->op_parts[0] = func;
		tc->op_n = 1;
	} else if (kind == OPK_COMPOUND) {
		if (tc->op_kind == OPK_NONE) {
			tc->op_kind = OPK_COMPOUND;
			tc->op_compound = stack_idx;
		}
	} else if (kind == OPK_V4OP && tc->op_kind == OPK_COMPOUND && lparent == tc->op_compound) {
		if (tc->op_n < FTF_OP_MAX_PARTS)
			tc->op_parts[tc->op_n++] = func;
		else
			tc->op_more = 1;
	}
}

int ftf_calls_rec_room(ftf_root_calls *rc, ftf_task_calls *tc)
{
	if ((!rc->slowest_n && !rc->spool) || tc->recs_cut)
		return 0;
	if (tc->nrecs >= FTF_TREE_MAX_RECS) {
		tc->recs_cut = 1;
		return 0;
	}
	if (tc->nrecs == tc->caprecs) {
		uint32_t cap = tc->caprecs ? tc->caprecs * 2 : RECS_KEEP;
		ftf_rec *r = ftf_blk_grow(tc->recs, (size_t)tc->caprecs * sizeof(*r), (size_t)cap * sizeof(*r));
		if (!r) {
			rc->oom = 1;
			tc->recs_cut = 1;
			return 0;
		}
		tc->recs = r;
		tc->caprecs = cap;
	}
	return 1;
}

void ftf_calls_op_func(ftf_root_calls *rc, ftf_task_calls *tc, const ftf_funcs *funcs, uint32_t func,
		       uint32_t stack_idx, uint32_t lparent)
{
	int kind = func_op_kind(rc, funcs, func);
	if (kind != OPK_NONE)
		on_op_func(tc, kind, func, stack_idx, lparent);
}

/* A figure of record `rec` that its ftf_rec does not hold. Past
 * FTF_TREE_MAX_RECS extras the tree is cut like one with too many calls. */
void ftf_calls_extra_add(ftf_root_calls *rc, ftf_task_calls *tc, uint32_t rec, uint32_t field, uint64_t value)
{
	if (tc->recs_cut)
		return;
	if (tc->nextras >= FTF_TREE_MAX_RECS) {
		tc->recs_cut = 1;
		return;
	}
	if (tc->nextras == tc->capextras) {
		uint32_t cap = tc->capextras ? tc->capextras * 2 : RECS_KEEP;
		ftf_rec_extra *e = ftf_blk_grow(tc->extras, (size_t)tc->capextras * sizeof(*e),
						(size_t)cap * sizeof(*e));
		if (!e) {
			rc->oom = 1;
			tc->recs_cut = 1;
			return;
		}
		tc->extras = e;
		tc->capextras = cap;
	}
	tc->extras[tc->nextras++] = (ftf_rec_extra){ .rec = rec, .field = field, .value = value };
}

void ftf_calls_values(ftf_root_calls *rc, ftf_task_calls *tc, uint32_t rec, uint32_t flag, uint32_t field,
		      const uint64_t *v, uint32_t n)
{
	if (rec >= tc->nrecs || tc->recs_cut)
		return;
	tc->recs[rec].desc_flags |= flag << FTF_REC_FLAGS_SHIFT;
	if (flag == FTF_REC_ARGS && n > rc->nargs)
		rc->nargs = n;
	for (uint32_t k = 0; k < n; k++)
		if (v[k]) /* most are 0: no extra */
			ftf_calls_extra_add(rc, tc, rec, field + k, v[k]);
}

/* "PUTFH" from "nfsd4_putfh": the function name past `skip` bytes, upper case */
static size_t put_upper(char *out, size_t room, const char *name, size_t skip)
{
	size_t n = 0;
	for (const char *c = name + skip; *c && n + 1 < room; c++)
		out[n++] = (*c >= 'a' && *c <= 'z') ? (char)(*c - 'a' + 'A') : *c;
	out[n] = '\0';
	return n;
}

int32_t ftf_calls_root_op(ftf_root_calls *rc, ftf_task_calls *tc, const ftf_funcs *funcs)
{
	char label[FTF_OP_MAX_PARTS * 32 + 32], how[FTF_OP_MAX_PARTS * 40 + 64];
	size_t n = 0, h = 0;
	if (tc->op_kind == OPK_PROC) {
		const char *name = funcs->names[tc->op_parts[0]];
		int i = proc_match(name);
		if (i < 0)
			return FTF_OP_NONE;
		n = (size_t)snprintf(label, sizeof(label), "%s", proc_prefixes[i].label);
		n += put_upper(label + n, sizeof(label) - n, name, proc_prefixes[i].skip);
		snprintf(how, sizeof(how), "%s", name);
	} else if (tc->op_kind == OPK_COMPOUND) {
		n = (size_t)snprintf(label, sizeof(label), "COMPOUND(");
		h = (size_t)snprintf(how, sizeof(how), "nfsd4_proc_compound >");
		for (uint32_t i = 0; i < tc->op_n; i++) {
			const char *name = funcs->names[tc->op_parts[i]];
			if (i)
				label[n++] = ',';
			n += put_upper(label + n, sizeof(label) - n - 8, name, 6);
			if (h < sizeof(how) - 48)
				h += (size_t)snprintf(how + h, sizeof(how) - h, "%s%s", i ? "," : " ", name);
		}
		n += (size_t)snprintf(label + n, sizeof(label) - n, "%s)", tc->op_more ? ",..." : "");
		if (tc->op_more)
			snprintf(how + h, sizeof(how) - h, ",...");
	} else {
		return FTF_OP_NONE;
	}
	uint32_t before = rc->ops.n;
	uint32_t id = ftf_funcs_intern(&rc->ops, label, n);
	if (id == FTF_NONE) {
		rc->oom = 1;
		return FTF_OP_NONE;
	}
	if (rc->ops.n != before) {
		char **a = realloc(rc->op_how, rc->ops.n * sizeof(*a));
		if (!a) {
			rc->oom = 1;
			return FTF_OP_NONE;
		}
		rc->op_how = a;
		a[id] = strdup(how);
		if (!a[id])
			rc->oom = 1;
	}
	return (int32_t)id;
}

/* ---- the slowest root calls: a min-heap per (root path, operation) ---- */

static ftf_slow_group *slow_group(ftf_root_calls *rc, uint32_t node, int32_t op)
{
	uint64_t key = ((uint64_t)node << 32) | (uint32_t)(op + 1);
	uint64_t found = ftf_u64map_get(&rc->slow_map, key);
	if (found)
		return &rc->slow[found - 1];
	if (rc->nslow == rc->capslow) {
		uint32_t cap = rc->capslow ? rc->capslow * 2 : 16;
		ftf_slow_group *g = realloc(rc->slow, cap * sizeof(*g));
		if (!g)
			return NULL;
		rc->slow = g;
		rc->capslow = cap;
	}
	if (ftf_u64map_put(&rc->slow_map, key, (uint64_t)rc->nslow + 1) < 0)
		return NULL;
	ftf_slow_group *g = &rc->slow[rc->nslow++];
	/* grown as trees come (heap_room), not slowest_n slots at once: with a
	 * root function per call (2 M distinct names) 20 slots of 64 bytes each
	 * were 1.3 KB per root path, most never used */
	g->heap = calloc(1, sizeof(*g->heap));
	g->heap_c = calloc(1, sizeof(*g->heap_c));
	g->n = g->n_c = 0;
	g->cap = g->cap_c = 1;
	return g->heap && g->heap_c ? g : NULL;
}

static void heap_down(ftf_kept *h, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && h[l].dur < h[m].dur)
			m = l;
		if (r < n && h[r].dur < h[m].dur)
			m = r;
		if (m == i)
			return;
		ftf_kept x = h[i];
		h[i] = h[m];
		h[m] = x;
		i = m;
	}
}

static void heap_up(ftf_kept *h, uint32_t i)
{
	while (i && h[(i - 1) / 2].dur > h[i].dur) {
		ftf_kept x = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = x;
		i = (i - 1) / 2;
	}
}

static void kept_free(ftf_kept *k)
{
	ftf_blk_free(k->recs, (size_t)k->caprecs * sizeof(*k->recs));
	ftf_blk_free(k->extras, (size_t)k->capextras * sizeof(*k->extras));
	k->recs = NULL;
	k->extras = NULL;
	k->caprecs = k->capextras = 0;
}

/* Slot k now holds the task's root call: the task's buffers move into it
 * (no copy), and the buffers of the call it replaces, if any, go to the
 * task for its next root call (trees of one group are of a size). */
static void kept_fill(ftf_root_calls *rc, ftf_task_calls *tc, ftf_kept *k, uint64_t sample, uint64_t dur)
{
	k->sample = sample;
	k->dur = dur;
	k->base = tc->base;
	k->cpu = tc->cpu;
	if (tc->recs_cut || !tc->nrecs) {
		kept_free(k);
		k->nrecs = k->nextras = 0;
		return;
	}
	if ((size_t)tc->nrecs * 2 < tc->caprecs && (size_t)tc->nextras * 2 <= tc->capextras) {
		/* a small tree in a bigger buffer (a task's first buffer holds
		 * RECS_KEEP calls, 1.5 KB): copied to a block of its size, the task
		 * keeps its buffer. With a root function per call, swapping kept
		 * 1.5 KB per root path for a tree of one call. */
		ftf_rec *r = ftf_blk_grow(NULL, 0, (size_t)tc->nrecs * sizeof(*r));
		ftf_rec_extra *e = tc->nextras ? ftf_blk_grow(NULL, 0, (size_t)tc->nextras * sizeof(*e)) : NULL;
		if (r && (e || !tc->nextras)) {
			kept_free(k);
			memcpy(r, tc->recs, (size_t)tc->nrecs * sizeof(*r));
			if (e)
				memcpy(e, tc->extras, (size_t)tc->nextras * sizeof(*e));
			k->recs = r;
			k->extras = e;
			k->nrecs = k->caprecs = tc->nrecs;
			k->nextras = k->capextras = tc->nextras;
			tc->nrecs = tc->nextras = 0;
			return;
		}
		ftf_blk_free(r, (size_t)tc->nrecs * sizeof(*r)); /* (out of memory: swapped below) */
	}
	ftf_kept old = *k;
	k->recs = tc->recs;
	k->extras = tc->extras;
	k->nrecs = tc->nrecs;
	k->nextras = tc->nextras;
	k->caprecs = tc->caprecs;
	k->capextras = tc->capextras;
	tc->recs = old.recs;
	tc->extras = old.extras;
	tc->caprecs = old.caprecs;
	tc->capextras = old.capextras;
	tc->nrecs = tc->nextras = 0;
}

static void root_keep(ftf_root_calls *rc, ftf_task_calls *tc, uint64_t sample, uint32_t node, int32_t op,
		      uint64_t dur, uint64_t on_cpu);

void ftf_calls_root_end(ftf_root_calls *rc, ftf_task_calls *tc, uint64_t sample, uint32_t node, int32_t op,
			uint64_t dur, uint64_t on_cpu)
{
	root_keep(rc, tc, sample, node, op, dur, on_cpu);
	recs_release(rc, tc);
}

/* Slot k now holds a copy of the task's root call (kept by the other
 * measure too, whose slot took the task's buffers): its own buffers grown
 * to fit. */
static void kept_copy(ftf_root_calls *rc, ftf_task_calls *tc, ftf_kept *k, uint64_t sample, uint64_t key)
{
	k->sample = sample;
	k->dur = key;
	k->base = tc->base;
	k->cpu = tc->cpu;
	k->nrecs = k->nextras = 0;
	if (tc->recs_cut || !tc->nrecs) {
		kept_free(k);
		return;
	}
	if (k->caprecs < tc->nrecs) {
		ftf_rec *r = ftf_blk_grow(k->recs, (size_t)k->caprecs * sizeof(*r), (size_t)tc->nrecs * sizeof(*r));
		if (!r) {
			rc->oom = 1;
			kept_free(k);
			return;
		}
		k->recs = r;
		k->caprecs = tc->nrecs;
	}
	if (tc->nextras && k->capextras < tc->nextras) {
		size_t had = (size_t)k->capextras * sizeof(ftf_rec_extra);
		ftf_rec_extra *e = ftf_blk_grow(k->extras, had, (size_t)tc->nextras * sizeof(*e));
		if (!e) {
			rc->oom = 1;
			kept_free(k);
			return;
		}
		k->extras = e;
		k->capextras = tc->nextras;
	}
	memcpy(k->recs, tc->recs, (size_t)tc->nrecs * sizeof(*tc->recs));
	if (tc->nextras)
		memcpy(k->extras, tc->extras, (size_t)tc->nextras * sizeof(*tc->extras));
	k->nrecs = tc->nrecs;
	k->nextras = tc->nextras;
}

/* Room for one more call in heap *h (n calls, *cap slots) while it holds
 * fewer than most: its slots double as calls come. -1: out of memory. */
static int heap_room(ftf_kept **h, uint32_t n, uint32_t *cap, uint32_t most)
{
	if (n < most && n == *cap) {
		uint32_t c = *cap * 2 < most ? *cap * 2 : most;
		ftf_kept *p = realloc(*h, c * sizeof(*p));
		if (!p)
			return -1;
		memset(p + *cap, 0, (c - *cap) * sizeof(*p));
		*h = p;
		*cap = c;
	}
	return 0;
}

/* The slot of heap h (n calls) a call of key `key` takes, or -1: a new one
 * while there is room, else the least one's if it is less. */
static int64_t heap_slot(const ftf_kept *h, uint32_t n, uint32_t cap, uint64_t key)
{
	if (n < cap)
		return n;
	return key > h[0].dur ? 0 : -1;
}

static void root_keep(ftf_root_calls *rc, ftf_task_calls *tc, uint64_t sample, uint32_t node, int32_t op,
		      uint64_t dur, uint64_t on_cpu)
{
	if (!rc->slowest_n)
		return;
	ftf_slow_group *g = slow_group(rc, node, op);
	if (!g) {
		rc->oom = 1;
		return;
	}
	uint32_t most_c = rc->slowest_n <= UINT32_MAX / FTF_SLOWEST_CANDIDATES ?
				  rc->slowest_n * FTF_SLOWEST_CANDIDATES : UINT32_MAX;
	if (heap_room(&g->heap, g->n, &g->cap, rc->slowest_n) < 0 ||
	    heap_room(&g->heap_c, g->n_c, &g->cap_c, most_c) < 0) {
		rc->oom = 1;
		return;
	}
	int64_t raw = heap_slot(g->heap, g->n, rc->slowest_n, dur);
	int64_t cpu = heap_slot(g->heap_c, g->n_c, most_c, on_cpu);
	if (cpu >= 0) {
		/* the task's buffers go to the raw slot when it takes one: a copy here */
		if (raw >= 0)
			kept_copy(rc, tc, &g->heap_c[cpu], sample, on_cpu);
		else
			kept_fill(rc, tc, &g->heap_c[cpu], sample, on_cpu);
		if (cpu == g->n_c)
			heap_up(g->heap_c, g->n_c++);
		else
			heap_down(g->heap_c, g->n_c, 0);
	}
	if (raw >= 0) {
		kept_fill(rc, tc, &g->heap[raw], sample, dur);
		if (raw == g->n)
			heap_up(g->heap, g->n++);
		else
			heap_down(g->heap, g->n, 0);
	}
}

/* ---- the call stream ---------------------------------------------------- */

static void spool_write(ftf_spool *sp, int k, const void *p, size_t n)
{
	if (!sp->err && n && fwrite(p, 1, n, sp->f[k]) != n)
		sp->err = errno ? errno : EIO;
}

void ftf_spool_row(ftf_spool *sp, const int64_t row[FTF_SPOOL_COLS])
{
	spool_write(sp, 0, row, FTF_SPOOL_COLS * sizeof(int64_t));
	sp->rows++;
}

void ftf_spool_tree(ftf_root_calls *rc, ftf_task_calls *tc, int32_t pid, int64_t sample)
{
	ftf_spool *sp = rc->spool;
	if (!sp || (!tc->nrecs && !tc->recs_cut))
		return;
	int64_t row[FTF_SPOOL_COLS] = { 0 };
	row[FTF_SP_KIND] = FTF_SPK_TREE;
	row[FTF_SP_PID] = pid;
	row[FTF_SP_CPU] = tc->cpu;
	row[FTF_SP_SAMPLE] = sample;
	row[FTF_SP_T0] = (int64_t)tc->base;
	row[FTF_SP_NRECS] = tc->recs_cut ? -1 : (int64_t)tc->nrecs;
	row[FTF_SP_NEXTRAS] = tc->recs_cut ? 0 : (int64_t)tc->nextras;
	ftf_spool_row(sp, row);
	if (tc->recs_cut)
		return;
	spool_write(sp, 1, tc->recs, (size_t)tc->nrecs * sizeof(*tc->recs));
	spool_write(sp, 2, tc->extras, (size_t)tc->nextras * sizeof(*tc->extras));
	sp->recs += tc->nrecs;
}

void ftf_task_calls_free(ftf_root_calls *rc, ftf_task_calls *tc)
{
	recs_reuse(rc, tc);
	recs_free(tc);
}

void ftf_calls_free(ftf_root_calls *rc)
{
	for (uint32_t i = 0; i < rc->nslow; i++) {
		for (uint32_t k = 0; k < rc->slow[i].n; k++)
			kept_free(&rc->slow[i].heap[k]);
		for (uint32_t k = 0; k < rc->slow[i].n_c; k++)
			kept_free(&rc->slow[i].heap_c[k]);
		free(rc->slow[i].heap);
		free(rc->slow[i].heap_c);
	}
	free(rc->slow);
	ftf_u64map_free(&rc->slow_map);
	for (uint32_t i = 0; i < rc->ops.n; i++)
		free(rc->op_how ? rc->op_how[i] : NULL);
	free(rc->op_how);
	ftf_funcs_free(&rc->ops);
	free(rc->func_op);
}
