/* CPython binding of the C core: ftflame.parse._core.
 *
 * A plain CPython extension (not cffi): the whole read runs in C with the GIL
 * released, and only the finished aggregate (O(call paths + root calls)) is
 * converted to Python objects once, at the end. No Python runs per event.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <malloc.h>
#include <math.h>

#include "ftf.h"
#include "dat.h"
#include "rowfmt.h"

/* The node and sample tables: one int64 per column, written by position.
 * Their names, in column order, are exported as NODE_COLUMNS and
 * SAMPLE_COLUMNS; ftflame/profile.py names the columns the same way and
 * checks both against these when ftflame.parse.reading is imported. */
#define SUM_COLS 8 /* the ftf_sums fields, in sums_put's order */
enum {
	COL_PARENT, COL_FUNC, COL_FLAGS,
	COL_SUMS,                      /* over all completed calls */
	COL_GAP_SUMS = COL_SUMS + SUM_COLS, /* over the gap calls among them */
	COL_INCL_MIN = COL_GAP_SUMS + SUM_COLS, COL_INCL_MAX, COL_EXCL_MIN, COL_EXCL_MAX,
	COL_MIGRATED, COL_OPEN_END, COL_UNTERMINATED, COL_UNOWNED_CHILD_INCL, COL_IRQ_EARLY, COL_DEPTH,
	NODE_COLS
};
#define SUM_NAMES(prefix) prefix "calls", prefix "incl", prefix "excl", prefix "desc", prefix "nchild", \
	prefix "irq", prefix "irq_calls", prefix "offcpu"
static const char *const node_columns[] = {
	"parent", "func", "flags", SUM_NAMES(""), SUM_NAMES("gap_"),
	"incl_min", "incl_max", "excl_min", "excl_max",
	"migrated", "open_end", "unterminated", "unowned_child_incl", "irq_early", "depth",
};
_Static_assert(sizeof(node_columns) / sizeof(node_columns[0]) == NODE_COLS, "a name per node column");

enum {
	SCOL_NODE, SCOL_PID, SCOL_CPU, SCOL_FLAGS, SCOL_CALLTIME, SCOL_DUR, SCOL_DESC, SCOL_IRQ,
	SCOL_OFFCPU, SCOL_IRQ_CALLS, SCOL_IRQ_ROOTS,
	SAMPLE_COLS
};
static const char *const sample_columns[] = {
	"node", "pid", "cpu", "flags", "calltime", "dur", "desc", "irq", "offcpu", "irq_calls", "irq_roots",
};
_Static_assert(sizeof(sample_columns) / sizeof(sample_columns[0]) == SAMPLE_COLS, "a name per sample column");

static void sums_put(int64_t *row, const ftf_sums *s)
{
	row[0] = (int64_t)s->calls;
	row[1] = (int64_t)s->incl;
	row[2] = s->excl;
	row[3] = (int64_t)s->desc;
	row[4] = (int64_t)s->nchild;
	row[5] = (int64_t)s->irq;
	row[6] = (int64_t)s->irq_calls;
	row[7] = (int64_t)s->offcpu;
}

/* A histogram set in CSR form: offsets[n+1], buckets[], counts[]. */
static int hists_csr(const ftf_builder *b, int excl, PyObject **offs, PyObject **bks, PyObject **cnts)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < b->nnodes; i++) {
		const ftf_hist *h = excl ? &b->nodes[i].hist_excl : &b->nodes[i].hist_incl;
		if (h->dense) {
			for (uint32_t k = 0; k < FTF_HIST_BUCKETS; k++)
				total += h->dense[k] != 0;
		} else {
			total += h->n;
		}
	}
	*offs = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(b->nnodes + 1) * 8);
	*bks = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total * 4);
	*cnts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total * 4);
	if (!*offs || !*bks || !*cnts)
		return -1;
	int64_t *o = (int64_t *)PyBytes_AS_STRING(*offs);
	int32_t *bk = (int32_t *)PyBytes_AS_STRING(*bks);
	uint32_t *ct = (uint32_t *)PyBytes_AS_STRING(*cnts);
	uint64_t pos = 0;
	for (uint32_t i = 0; i < b->nnodes; i++) {
		const ftf_hist *h = excl ? &b->nodes[i].hist_excl : &b->nodes[i].hist_incl;
		o[i] = (int64_t)pos;
		if (h->dense) {
			for (uint32_t k = 0; k < FTF_HIST_BUCKETS; k++) {
				if (h->dense[k]) {
					bk[pos] = (int32_t)k;
					ct[pos++] = h->dense[k];
				}
			}
		} else {
			/* sparse entries are in arrival order: sort by bucket (n <= 32) */
			uint64_t s0 = pos;
			for (uint16_t k = 0; k < h->n; k++) {
				uint64_t j = pos++;
				while (j > s0 && bk[j - 1] > h->keys[k]) {
					bk[j] = bk[j - 1];
					ct[j] = ct[j - 1];
					j--;
				}
				bk[j] = h->keys[k];
				ct[j] = h->vals[k];
			}
		}
	}
	o[b->nnodes] = (int64_t)pos;
	return 0;
}

#define SET(d, k, v)                                                 \
	do {                                                         \
		PyObject *_v = (v);                                  \
		if (!_v || PyDict_SetItemString((d), (k), _v) < 0) { \
			Py_XDECREF(_v);                              \
			goto fail;                                   \
		}                                                    \
		Py_DECREF(_v);                                       \
	} while (0)

/* The aggregate as columnar bytes: converting 100k call paths into Python
 * objects one by one would cost more than reading the trace. */
static PyObject *builder_result(ftf_builder *b)
{
	PyObject *res = PyDict_New(), *funcs = NULL, *cnt = NULL, *lost = NULL;
	PyObject *ho = NULL, *hb = NULL, *hc = NULL;
	if (!res)
		return NULL;
	funcs = PyList_New(b->funcs.n);
	if (!funcs)
		goto fail;
	for (uint32_t i = 0; i < b->funcs.n; i++) {
		PyObject *s = PyUnicode_DecodeUTF8(b->funcs.names[i], strlen(b->funcs.names[i]), "replace");
		if (!s)
			goto fail;
		PyList_SET_ITEM(funcs, i, s);
	}
	SET(res, "funcs", funcs);
	funcs = NULL;

	PyObject *nodes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)b->nnodes * NODE_COLS * 8);
	if (!nodes)
		goto fail;
	int64_t *row = (int64_t *)PyBytes_AS_STRING(nodes);
	for (uint32_t i = 0; i < b->nnodes; i++, row += NODE_COLS) {
		const ftf_node *n = &b->nodes[i];
		row[COL_PARENT] = n->parent == FTF_NONE ? -1 : (int64_t)n->parent;
		row[COL_FUNC] = n->func;
		row[COL_FLAGS] = n->flags;
		sums_put(row + COL_SUMS, &n->all);
		sums_put(row + COL_GAP_SUMS, &n->gap);
		row[COL_INCL_MIN] = n->all.calls ? (int64_t)n->incl_min : 0;
		row[COL_INCL_MAX] = (int64_t)n->incl_max;
		row[COL_EXCL_MIN] = n->all.calls ? n->excl_min : 0;
		row[COL_EXCL_MAX] = n->all.calls ? n->excl_max : 0;
		row[COL_MIGRATED] = (int64_t)n->migrated;
		row[COL_OPEN_END] = (int64_t)n->open_end;
		row[COL_UNTERMINATED] = (int64_t)n->unterminated;
		row[COL_UNOWNED_CHILD_INCL] = (int64_t)n->unowned_child_incl;
		row[COL_IRQ_EARLY] = (int64_t)n->irq_early;
		/* parents come before their children: one pass */
		row[COL_DEPTH] = n->parent == FTF_NONE ? 0 :
			((int64_t *)PyBytes_AS_STRING(nodes))[(int64_t)n->parent * NODE_COLS + COL_DEPTH] + 1;
	}
	SET(res, "nodes", nodes);

	if (hists_csr(b, 0, &ho, &hb, &hc) < 0)
		goto fail;
	SET(res, "hist_incl", Py_BuildValue("(NNN)", ho, hb, hc));
	ho = hb = hc = NULL;
	if (hists_csr(b, 1, &ho, &hb, &hc) < 0)
		goto fail;
	SET(res, "hist_excl", Py_BuildValue("(NNN)", ho, hb, hc));
	ho = hb = hc = NULL;

	PyObject *samples = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)b->nsamples * SAMPLE_COLS * 8);
	if (!samples)
		goto fail;
	int64_t *sr = (int64_t *)PyBytes_AS_STRING(samples);
	for (uint64_t i = 0; i < b->nsamples; i++, sr += SAMPLE_COLS) {
		const ftf_sample *s = &b->samples[i];
		sr[SCOL_NODE] = s->node;
		sr[SCOL_PID] = s->pid;
		sr[SCOL_CPU] = s->cpu;
		sr[SCOL_FLAGS] = s->flags;
		sr[SCOL_CALLTIME] = (int64_t)s->calltime;
		sr[SCOL_DUR] = (int64_t)s->dur;
		sr[SCOL_DESC] = (int64_t)s->desc;
		sr[SCOL_IRQ] = (int64_t)s->irq;
		sr[SCOL_OFFCPU] = (int64_t)s->offcpu;
		sr[SCOL_IRQ_CALLS] = (int64_t)s->irq_calls;
		sr[SCOL_IRQ_ROOTS] = (int64_t)s->irq_roots;
	}
	SET(res, "samples", samples);

	/* in-trace overhead estimate: [(kind, context, cpu, counts, over)] */
	PyObject *est = PyList_New(0);
	if (!est)
		goto fail;
	SET(res, "estimates", est);
	for (int k = 0; k < 2; k++) {
		for (int x = 0; x < FTF_NCTX; x++) {
			for (int c = 0; c < FTF_EST_CPUS; c++) {
				const ftf_est *e = &b->est[k][x][c];
				if (!e->hist && !e->over)
					continue;
				PyObject *counts = e->hist
					? PyBytes_FromStringAndSize((const char *)e->hist, FTF_EST_MAX * sizeof(uint32_t))
					: PyBytes_FromStringAndSize(NULL, 0);
				PyObject *item = counts ? Py_BuildValue("(iiiNK)", k, x, c, counts,
									(unsigned long long)e->over) : NULL;
				if (!item || PyList_Append(est, item) < 0) {
					Py_XDECREF(item);
					goto fail;
				}
				Py_DECREF(item);
			}
		}
	}

	cnt = PyDict_New();
	if (!cnt)
		goto fail;
#define C(name) SET(cnt, #name, PyLong_FromUnsignedLongLong(b->c.name))
	C(events); C(entries); C(exits); C(switches); C(other_events); C(lost_records);
	C(lost_events); C(lost_unknown); C(orphan_exits); C(unterminated); C(open_at_end);
	C(overrun_growth); C(depth_mismatch); C(migrations); C(gap_calls); C(gap_tree_calls); C(partial_entries);
	C(irq_roots); C(leaf_events); C(irq_outside_window); C(first_ts); C(last_ts);
#undef C
	/* anomalies of hostile or broken input: in the counters when they happened */
	if (b->c.duration_cut)
		SET(cnt, "duration_cut", PyLong_FromUnsignedLongLong(b->c.duration_cut));
	if (b->funcs.long_names)
		SET(cnt, "long_names", PyLong_FromUnsignedLongLong(b->funcs.long_names));
	SET(cnt, "max_depth", PyLong_FromLongLong(b->c.max_depth));
	SET(cnt, "max_cpu", PyLong_FromLong(b->max_cpu));
	SET(res, "counters", cnt);
	cnt = NULL;
	lost = PyDict_New();
	if (!lost)
		goto fail;
	for (int cpu = 0; cpu <= b->max_cpu && cpu < FTF_MAX_CPUS; cpu++) {
		if (!b->lost_marks_per_cpu[cpu])
			continue;
		PyObject *k = PyLong_FromLong(cpu),
			 *v = Py_BuildValue("(LK)", (long long)b->lost_per_cpu[cpu],
					    (unsigned long long)b->lost_unknown_per_cpu[cpu]);
		if (!k || !v || PyDict_SetItem(lost, k, v) < 0) {
			Py_XDECREF(k);
			Py_XDECREF(v);
			goto fail;
		}
		Py_DECREF(k);
		Py_DECREF(v);
	}
	SET(res, "lost_per_cpu", lost);
	lost = NULL;
	return res;
fail:
	Py_XDECREF(funcs);
	Py_XDECREF(cnt);
	Py_XDECREF(lost);
	Py_XDECREF(ho);
	Py_XDECREF(hb);
	Py_XDECREF(hc);
	Py_DECREF(res);
	return NULL;
}

typedef struct {
	PyObject *cb;
	int failed;
} progress_ctx;

static int progress_trampoline(void *ctx, uint64_t events)
{
	progress_ctx *p = ctx;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *r = PyObject_CallFunction(p->cb, "K", (unsigned long long)events);
	int stop = 0;
	if (!r) {
		p->failed = 1;
		stop = 1;
	} else {
		Py_DECREF(r);
	}
	PyGILState_Release(g);
	return stop;
}

static PyObject *py_read_dat(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "progress", NULL };
	PyObject *path_obj, *progress = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O", kwlist, PyUnicode_FSConverter, &path_obj,
					 &progress))
		return NULL;
	const char *path = PyBytes_AS_STRING(path_obj);
	ftf_builder *b = malloc(sizeof(*b));
	ftf_dat_meta *meta = malloc(sizeof(*meta));
	if (!b || !meta) {
		free(b);
		free(meta);
		Py_DECREF(path_obj);
		return PyErr_NoMemory();
	}
	ftf_builder_init(b);
	char err[512] = "";
	progress_ctx pc = { progress, 0 };
	int rc;
	ftf_closing *closing = NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = ftf_read_dat(path, b, meta, progress == Py_None ? NULL : progress_trampoline, &pc, err,
			  sizeof(err), &closing);
	Py_END_ALLOW_THREADS
	Py_DECREF(path_obj);
	PyObject *res = NULL;
	if (pc.failed) {
		/* the progress callback raised (e.g. KeyboardInterrupt): keep its exception */
	} else if (rc < 0) {
		PyErr_SetString(PyExc_ValueError, err);
	} else {
		res = builder_result(b);
		if (res) {
			PyObject *m = Py_BuildValue(
				"{s:s,s:s,s:s,s:i,s:i,s:s,s:O,s:O,s:O,s:O,s:O,s:O}", "kernel", meta->kernel,
				"clock", meta->clock, "tracer_version", meta->tracer_version, "cpus",
				meta->cpus, "file_version", meta->file_version, "compression",
				meta->compression, "has_entry_event",
				meta->has_entry_event ? Py_True : Py_False, "has_exit_event",
				meta->has_exit_event ? Py_True : Py_False, "has_retaddr_event",
				meta->has_retaddr_event ? Py_True : Py_False, "has_switch_event",
				meta->has_switch_event ? Py_True : Py_False, "has_retval",
				meta->has_retval ? Py_True : Py_False, "has_args",
				meta->has_args ? Py_True : Py_False);
			PyObject *pce = PyDict_New();
			int ncpu = meta->cpus > 0 && meta->cpus < 512 ? meta->cpus : 0;
			for (int i = 0; m && pce && i < ncpu; i++) {
				PyObject *k = PyLong_FromLong(i),
					 *v = PyLong_FromUnsignedLongLong(meta->per_cpu_events[i]);
				if (k && v)
					PyDict_SetItem(pce, k, v);
				Py_XDECREF(k);
				Py_XDECREF(v);
			}
			if (!m || !pce || PyDict_SetItemString(m, "events_per_cpu", pce) < 0 ||
			    PyDict_SetItemString(res, "meta", m) < 0) {
				Py_CLEAR(res);
			}
			Py_XDECREF(pce);
			Py_XDECREF(m);
		}
	}
	ftf_builder_free(b);
	Py_BEGIN_ALLOW_THREADS
	ftf_close_wait(closing);
	Py_END_ALLOW_THREADS
	free(b);
	free(meta);
	return res;
}

/* read_dat_builtin(path, progress=None): read_dat's dict from the builtin
 * reader (dat_*.c), with meta["damage"]: what it skipped, counted. */
static PyObject *py_read_dat_builtin(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "progress", NULL };
	PyObject *path_obj, *progress = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O", kwlist, PyUnicode_FSConverter, &path_obj,
					 &progress))
		return NULL;
	ftf_builder *b = malloc(sizeof(*b));
	ftf_dat_meta *meta = malloc(sizeof(*meta));
	ftf_dat_damage *dmg = malloc(sizeof(*dmg));
	if (!b || !meta || !dmg) {
		free(b);
		free(meta);
		free(dmg);
		Py_DECREF(path_obj);
		return PyErr_NoMemory();
	}
	ftf_builder_init(b);
	char err[512] = "";
	progress_ctx pc = { progress, 0 };
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = ftf_read_dat_builtin(PyBytes_AS_STRING(path_obj), b, meta, dmg,
				  progress == Py_None ? NULL : progress_trampoline, &pc, err, sizeof(err));
	Py_END_ALLOW_THREADS
	Py_DECREF(path_obj);
	PyObject *res = NULL;
	if (pc.failed) {
		/* the progress callback raised (e.g. KeyboardInterrupt): keep its exception */
	} else if (rc < 0) {
		PyErr_SetString(PyExc_ValueError, err);
	} else if ((res = builder_result(b))) {
		PyObject *m = Py_BuildValue(
			"{s:s,s:s,s:s,s:i,s:i,s:s,s:O,s:O,s:O,s:O,s:O,s:O}", "kernel", meta->kernel, "clock",
			meta->clock, "tracer_version", meta->tracer_version, "cpus", meta->cpus,
			"file_version", meta->file_version, "compression", meta->compression,
			"has_entry_event", meta->has_entry_event ? Py_True : Py_False, "has_exit_event",
			meta->has_exit_event ? Py_True : Py_False, "has_retaddr_event",
			meta->has_retaddr_event ? Py_True : Py_False, "has_switch_event",
			meta->has_switch_event ? Py_True : Py_False, "has_retval",
			meta->has_retval ? Py_True : Py_False, "has_args", meta->has_args ? Py_True : Py_False);
		PyObject *d = Py_BuildValue(
			"{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:s}", "bad_pages", (unsigned long long)dmg->bad_pages,
			"bad_chunks", (unsigned long long)dmg->bad_chunks, "lost_bytes",
			(unsigned long long)dmg->lost_bytes, "cut_streams", (unsigned long long)dmg->cut_streams,
			"partial_page_bytes", (unsigned long long)dmg->partial_page_bytes, "zero_pages",
			(unsigned long long)dmg->zero_pages, "kallsyms_bad_lines",
			(unsigned long long)dmg->kallsyms_bad_lines, "first", dmg->first);
		PyObject *pce = PyDict_New();
		int ncpu = meta->cpus > 0 && meta->cpus < 512 ? meta->cpus : 0;
		for (int i = 0; m && pce && i < ncpu; i++) {
			PyObject *k = PyLong_FromLong(i), *v = PyLong_FromUnsignedLongLong(meta->per_cpu_events[i]);
			if (k && v)
				PyDict_SetItem(pce, k, v);
			Py_XDECREF(k);
			Py_XDECREF(v);
		}
		if (!m || !pce || !d || PyDict_SetItemString(m, "events_per_cpu", pce) < 0 ||
		    PyDict_SetItemString(m, "damage", d) < 0 || PyDict_SetItemString(res, "meta", m) < 0)
			Py_CLEAR(res);
		Py_XDECREF(pce);
		Py_XDECREF(d);
		Py_XDECREF(m);
	}
	ftf_builder_free(b);
	free(b);
	free(meta);
	free(dmg);
	return res;
}

/* build_events(events): feed hand-made events straight to the builder.
 * Each event is a tuple (kind, cpu, pid, flags, func, depth, ts, calltime,
 * rettime, overrun, next_pid, lost) with kind one of "entry", "exit",
 * "switch", "lost", "leaf" and func a function name. Used by tests to show
 * one named situation at a time. */
static PyObject *py_build_events(PyObject *self, PyObject *args)
{
	PyObject *seq;
	if (!PyArg_ParseTuple(args, "O", &seq))
		return NULL;
	PyObject *fast = PySequence_Fast(seq, "events must be a sequence");
	if (!fast)
		return NULL;
	ftf_builder *b = malloc(sizeof(*b));
	if (!b) {
		Py_DECREF(fast);
		return PyErr_NoMemory();
	}
	ftf_builder_init(b);
	Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
	for (Py_ssize_t i = 0; i < n; i++) {
		const char *kind, *func;
		ftf_event ev;
		memset(&ev, 0, sizeof(ev));
		unsigned long long ts, calltime, rettime, overrun;
		long long depth, lost;
		int cpu, pid, flags, next_pid;
		if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "siiisLKKKKiL;event tuple", &kind,
				      &cpu, &pid, &flags, &func, &depth, &ts, &calltime, &rettime, &overrun,
				      &next_pid, &lost)) {
			ftf_builder_free(b);
			free(b);
			Py_DECREF(fast);
			return NULL;
		}
		if (!strcmp(kind, "entry"))
			ev.kind = FTF_EV_ENTRY;
		else if (!strcmp(kind, "exit"))
			ev.kind = FTF_EV_EXIT;
		else if (!strcmp(kind, "switch"))
			ev.kind = FTF_EV_SWITCH;
		else if (!strcmp(kind, "lost"))
			ev.kind = FTF_EV_LOST;
		else if (!strcmp(kind, "leaf"))
			ev.kind = FTF_EV_LEAF;
		else
			ev.kind = 0;
		ev.cpu = cpu;
		ev.pid = pid;
		ev.flags = (uint8_t)flags;
		ev.func = ftf_funcs_intern(&b->funcs, func, strlen(func));
		ev.depth = depth;
		ev.ts = ts;
		ev.calltime = calltime;
		ev.rettime = rettime;
		ev.overrun = overrun;
		ev.next_pid = next_pid;
		ev.lost = lost;
		ftf_builder_feed(b, &ev);
	}
	ftf_builder_finish(b);
	Py_DECREF(fast);
	PyObject *res = builder_result(b);
	ftf_builder_free(b);
	free(b);
	return res;
}

/* ---- text ------------------------------------------------------------- */

/* Events the tokenizer fed, kept for tests: (kind, cpu, pid, func, depth,
 * calltime, rettime, flags) int64 rows. */
typedef struct {
	int64_t *rows;
	size_t n, cap;
	int oom;
} event_log;

static void log_sink(void *ctx, const ftf_event *ev, const ftf_builder *b)
{
	event_log *l = ctx;
	if (l->oom)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4096;
		int64_t *r = realloc(l->rows, cap * 8 * sizeof(*r));
		if (!r) {
			l->oom = 1;
			return;
		}
		l->rows = r;
		l->cap = cap;
	}
	int64_t *r = l->rows + l->n++ * 8;
	r[0] = ev->kind;
	r[1] = ev->cpu;
	r[2] = ev->pid;
	r[3] = ev->func;
	r[4] = ev->kind == FTF_TEXT_EV_RENAME ? ev->next_pid : ev->depth;
	r[5] = (int64_t)ev->calltime;
	r[6] = (int64_t)ev->rettime;
	r[7] = ev->flags;
}

static PyObject *text_stats_dict(const ftf_text_stats *st)
{
	PyObject *d = PyDict_New();
	if (!d)
		return NULL;
#define T(name) SET(d, #name, PyLong_FromUnsignedLongLong(st->name))
	T(bytes); T(lines); T(records); T(header_lines); T(unparsed); T(too_long); T(too_deep);
	T(entry_lines); T(leaf_lines); T(exit_lines); T(cpu_lines); T(proc_lines);
	T(tracecmd_lines); T(ts_lines); T(cpus_seen); T(separators); T(separator_conflicts); T(irq_arrows);
	T(flag_lines); T(latency_irq_lines); T(lost_lines); T(other_lines); T(overrun_lines); T(no_duration);
	T(unknown_exits); T(tail_mismatch); T(prose_lines); T(prose_bytes); T(first_unparsed_line);
	T(rejoined); T(broken_records);
#undef T
	SET(d, "first_unparsed", PyUnicode_DecodeUTF8(st->first_unparsed, strlen(st->first_unparsed), "replace"));
	return d;
fail:
	Py_DECREF(d);
	return NULL;
}

/* read_text_chunks(chunks, mode=0, progress=None, events=False): feed an
 * iterable of bytes-like chunks (any split, e.g. 1 MiB of decompressed text)
 * to the text tokenizer and the call builder. Each chunk is tokenized with
 * the GIL released; Python runs only between chunks, never per line. */
static PyObject *py_read_text_chunks(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "chunks", "mode", "progress", "events", NULL };
	PyObject *chunks, *progress = Py_None;
	int mode = FTF_TEXT_LINES, want_events = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iOp", kwlist, &chunks, &mode, &progress,
					 &want_events))
		return NULL;
	if (mode != FTF_TEXT_LINES && mode != FTF_TEXT_MAIL) {
		PyErr_SetString(PyExc_ValueError, "mode must be TEXT_LINES or TEXT_MAIL");
		return NULL;
	}
	PyObject *it = PyObject_GetIter(chunks);
	if (!it)
		return NULL;
	ftf_builder *b = malloc(sizeof(*b));
	if (!b) {
		Py_DECREF(it);
		return PyErr_NoMemory();
	}
	ftf_builder_init(b);
	ftf_text *t = ftf_text_new(b, mode);
	event_log log = { NULL, 0, 0, 0 };
	PyObject *res = NULL, *item;
	int rc = 0;
	if (!t) {
		PyErr_NoMemory();
		goto out;
	}
	if (want_events)
		ftf_text_set_sink(t, log_sink, &log);
	while ((item = PyIter_Next(it))) {
		Py_buffer view;
		if (PyObject_GetBuffer(item, &view, PyBUF_SIMPLE) < 0) {
			Py_DECREF(item);
			goto out;
		}
		Py_BEGIN_ALLOW_THREADS
		rc = ftf_text_feed(t, view.buf, (size_t)view.len);
		Py_END_ALLOW_THREADS
		PyBuffer_Release(&view);
		Py_DECREF(item);
		if (rc < 0) {
			PyErr_NoMemory();
			goto out;
		}
		if (progress != Py_None) {
			PyObject *r = PyObject_CallFunction(progress, "K",
							    (unsigned long long)ftf_text_get_stats(t)->records);
			if (!r)
				goto out;
			Py_DECREF(r);
		}
	}
	if (PyErr_Occurred())
		goto out;
	if (ftf_text_finish(t) < 0 || log.oom) {
		PyErr_NoMemory();
		goto out;
	}
	ftf_builder_finish(b);
	res = builder_result(b);
	if (!res)
		goto out;
	PyObject *st = text_stats_dict(ftf_text_get_stats(t));
	if (!st || PyDict_SetItemString(res, "text", st) < 0) {
		Py_XDECREF(st);
		Py_CLEAR(res);
		goto out;
	}
	Py_DECREF(st);
	if (want_events) {
		PyObject *ev = PyBytes_FromStringAndSize((const char *)log.rows,
							 (Py_ssize_t)(log.n * 8 * sizeof(int64_t)));
		if (!ev || PyDict_SetItemString(res, "events", ev) < 0)
			Py_CLEAR(res);
		Py_XDECREF(ev);
	}
out:
	Py_DECREF(it);
	ftf_text_free(t);
	ftf_builder_free(b);
	free(b);
	free(log.rows);
	return res;
}

static PyObject *py_hist_lower(PyObject *self, PyObject *args)
{
	unsigned int bucket;
	if (!PyArg_ParseTuple(args, "I", &bucket))
		return NULL;
	return PyLong_FromUnsignedLongLong(ftf_hist_lower(bucket));
}

/* ---- format_rows: the row-template formatter (rowfmt.c) ----------------- */

/* Pre-encoded text of a literal or fragment: str as UTF-8, bytes as they
 * are. The pointer lives as long as obj, which the caller keeps. */
static int text_of(PyObject *obj, ftf_str *out, int *ascii, const char *what)
{
	if (PyUnicode_Check(obj)) {
		Py_ssize_t n;
		const char *s = PyUnicode_AsUTF8AndSize(obj, &n);
		if (!s)
			return -1;
		out->s = s;
		out->len = (size_t)n;
		*ascii &= PyUnicode_IS_ASCII(obj) != 0;
		return 0;
	}
	if (PyBytes_Check(obj)) {
		out->s = PyBytes_AS_STRING(obj);
		out->len = (size_t)PyBytes_GET_SIZE(obj);
		for (size_t i = 0; i < out->len; i++)
			if ((unsigned char)out->s[i] >= 0x80)
				*ascii = 0;
		return 0;
	}
	PyErr_Format(PyExc_TypeError, "format_rows: %s must be str or bytes, not %.80s", what,
		     Py_TYPE(obj)->tp_name);
	return -1;
}

/* A 1-d column of nrows values, strided or not (a column of a 2-d array):
 * signed integers of 4 or 8 bytes (want_float 0) or float64 (want_float 1). */
static int column_of(PyObject *obj, Py_buffer *view, int want_float, Py_ssize_t nrows, Py_ssize_t index)
{
	if (PyObject_GetBuffer(obj, view, PyBUF_STRIDES | PyBUF_FORMAT) < 0)
		return -1;
	const char *f = view->format ? view->format : "B";
	if (*f == '@' || *f == '=' || *f == (PY_LITTLE_ENDIAN ? '<' : '>'))
		f++;
	int ok;
	if (want_float)
		ok = f[0] == 'd' && f[1] == 0 && view->itemsize == 8;
	else
		ok = (f[0] == 'i' || f[0] == 'l' || f[0] == 'q') && f[1] == 0 &&
		     (view->itemsize == 4 || view->itemsize == 8);
	if (!ok) {
		PyErr_Format(PyExc_ValueError, "format_rows: template item %zd: column must be %s, "
			     "not format '%s' of itemsize %zd", index,
			     want_float ? "float64" : "int64 or int32", view->format ? view->format : "B",
			     view->itemsize);
	} else if (view->ndim != 1 || view->shape[0] != nrows) {
		PyErr_Format(PyExc_ValueError, "format_rows: template item %zd: column must be 1-d of "
			     "length %zd (nrows)", index, nrows);
		ok = 0;
	}
	if (!ok) {
		PyBuffer_Release(view);
		return -1;
	}
	return 0;
}

/* The Python exception for a failed format (not FTF_RF_IO). */
static void rowfmt_error(int rc, const ftf_rowfmt_item *items, size_t bad_row, size_t bad_item)
{
	if (rc == FTF_RF_BADVALUE) {
		const ftf_rowfmt_item *it = &items[bad_item];
		long long v = it->itemsize == 8 ? (long long)((const int64_t *)it->col)[bad_row]
						: (long long)((const int32_t *)it->col)[bad_row];
		if (it->kind == FTF_RF_ENUM)
			PyErr_Format(PyExc_ValueError, "format_rows: template item %zu, row %zu: index %lld "
				     "out of range (%zu fragments)", bad_item, bad_row, v, it->nfrags);
		else
			PyErr_Format(PyExc_ValueError, "format_rows: template item %zu, row %zu: negative "
				     "repeat count %lld", bad_item, bad_row, v);
	} else if (rc == FTF_RF_CHANGED) {
		PyErr_SetString(PyExc_RuntimeError, "format_rows: a column changed while it was formatted");
	} else {
		PyErr_NoMemory();
	}
}

static PyObject *py_format_rows(PyObject *self, PyObject *args)
{
	PyObject *tmpl_in;
	Py_ssize_t nrows;
	int fd = -1;
	if (!PyArg_ParseTuple(args, "On|i", &tmpl_in, &nrows, &fd))
		return NULL;
	if (nrows < 0)
		return PyErr_Format(PyExc_ValueError, "format_rows: nrows must be >= 0");
	/* a tuple copy: its items (and theirs) stay alive while the GIL is released */
	PyObject *tmpl = PySequence_Tuple(tmpl_in);
	if (!tmpl)
		return NULL;
	Py_ssize_t n = PyTuple_GET_SIZE(tmpl);
	ftf_rowfmt_item *items = calloc((size_t)n + 1, sizeof(*items));
	Py_buffer *views = calloc((size_t)n + 1, sizeof(*views));
	PyObject **keep = calloc((size_t)n + 1, sizeof(*keep)); /* fragment tuples */
	ftf_str **frags = calloc((size_t)n + 1, sizeof(*frags));
	char *out = NULL; /* the UTF-8 text when not ASCII */
	PyObject *res = NULL;
	Py_ssize_t nviews = 0;
	int ascii = 1;
	if (!items || !views || !keep || !frags) {
		PyErr_NoMemory();
		goto done;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *t = PyTuple_GET_ITEM(tmpl, i);
		ftf_rowfmt_item *it = &items[i];
		if (!PyTuple_Check(t)) {
			it->kind = FTF_RF_LIT;
			if (text_of(t, &it->lit, &ascii, "a literal") < 0)
				goto done;
			continue;
		}
		Py_ssize_t tn = PyTuple_GET_SIZE(t);
		const char *kind = tn >= 1 && PyUnicode_Check(PyTuple_GET_ITEM(t, 0))
			? PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, 0)) : NULL;
		if (!kind) {
			PyErr_Clear();
			PyErr_Format(PyExc_TypeError, "format_rows: template item %zd: (kind, column[, extra]) "
				     "with kind a str", i);
			goto done;
		}
		if (!strcmp(kind, "i"))
			it->kind = FTF_RF_INT;
		else if (!strcmp(kind, "f1"))
			it->kind = FTF_RF_F1;
		else if (!strcmp(kind, "e"))
			it->kind = FTF_RF_ENUM;
		else if (!strcmp(kind, "rep"))
			it->kind = FTF_RF_REP;
		else {
			PyErr_Format(PyExc_ValueError, "format_rows: template item %zd: unknown kind '%s' "
				     "(i, f1, e, rep)", i, kind);
			goto done;
		}
		Py_ssize_t want = it->kind == FTF_RF_ENUM || it->kind == FTF_RF_REP ? 3 : 2;
		if (tn != want) {
			PyErr_Format(PyExc_ValueError, "format_rows: template item %zd: kind '%s' takes %zd "
				     "elements, got %zd", i, kind, want, tn);
			goto done;
		}
		if (column_of(PyTuple_GET_ITEM(t, 1), &views[i], it->kind == FTF_RF_F1, nrows, i) < 0)
			goto done;
		nviews = i + 1;
		it->col = views[i].buf;
		it->stride = views[i].strides ? views[i].strides[0] : views[i].itemsize;
		it->itemsize = (int)views[i].itemsize;
		if (it->kind == FTF_RF_REP) {
			if (text_of(PyTuple_GET_ITEM(t, 2), &it->lit, &ascii, "a repeated literal") < 0)
				goto done;
		} else if (it->kind == FTF_RF_ENUM) {
			PyObject *extra = PyTuple_GET_ITEM(t, 2);
			if (PyUnicode_Check(extra) || PyBytes_Check(extra)) {
				PyErr_Format(PyExc_TypeError, "format_rows: template item %zd: fragments must "
					     "be a list of str, not a string", i);
				goto done;
			}
			keep[i] = PySequence_Tuple(extra);
			if (!keep[i])
				goto done;
			Py_ssize_t nf = PyTuple_GET_SIZE(keep[i]);
			frags[i] = calloc((size_t)nf + 1, sizeof(ftf_str));
			if (!frags[i]) {
				PyErr_NoMemory();
				goto done;
			}
			for (Py_ssize_t k = 0; k < nf; k++)
				if (text_of(PyTuple_GET_ITEM(keep[i], k), &frags[i][k], &ascii, "a fragment") < 0)
					goto done;
			it->frags = frags[i];
			it->nfrags = (size_t)nf;
		}
	}
	size_t bad_row = 0, bad_item = 0, len = 0;
	int rc;
	if (fd >= 0) {
		/* straight to the file: UTF-8 as it is, no size pass */
		int err = 0;
		Py_BEGIN_ALLOW_THREADS
		rc = ftf_rowfmt_write_fd(items, (size_t)n, (size_t)nrows, fd, &len, &err, &bad_row, &bad_item);
		Py_END_ALLOW_THREADS
		if (rc == FTF_RF_OK) {
			res = PyLong_FromSize_t(len);
		} else if (rc == FTF_RF_IO) {
			errno = err;
			PyErr_SetFromErrno(PyExc_OSError);
		} else {
			rowfmt_error(rc, items, bad_row, bad_item);
		}
		goto done;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = ftf_rowfmt_size(items, (size_t)n, (size_t)nrows, &len, &bad_row, &bad_item);
	Py_END_ALLOW_THREADS
	if (rc == FTF_RF_OK && len > (size_t)PY_SSIZE_T_MAX)
		rc = FTF_RF_NOMEM;
	if (rc != FTF_RF_OK) {
		rowfmt_error(rc, items, bad_row, bad_item);
		goto done;
	}
	/* ASCII: written straight into the str, cut to its length after;
	 * else UTF-8, decoded after */
	char *dst;
	size_t bound = len;
	if (ascii) {
		res = PyUnicode_New((Py_ssize_t)bound, 127);
		if (!res)
			goto done;
		dst = PyUnicode_DATA(res);
	} else {
		dst = out = malloc(bound ? bound : 1);
		if (!out) {
			PyErr_NoMemory();
			goto done;
		}
	}
	Py_BEGIN_ALLOW_THREADS
	rc = ftf_rowfmt_write(items, (size_t)n, (size_t)nrows, dst, bound, &len);
	Py_END_ALLOW_THREADS
	if (rc != FTF_RF_OK) {
		Py_CLEAR(res);
		if (rc == FTF_RF_NOMEM)
			PyErr_NoMemory();
		else
			PyErr_SetString(PyExc_RuntimeError, "format_rows: a column changed while it was formatted");
		goto done;
	}
	if (!ascii)
		res = PyUnicode_DecodeUTF8(out, (Py_ssize_t)len, "strict");
	else if (len < bound && PyUnicode_Resize(&res, (Py_ssize_t)len) < 0)
		Py_CLEAR(res);
done:
	for (Py_ssize_t i = 0; i < nviews; i++)
		if (views[i].obj)
			PyBuffer_Release(&views[i]);
	for (Py_ssize_t i = 0; i < n && keep && frags; i++) {
		Py_XDECREF(keep[i]);
		free(frags[i]);
	}
	free(items);
	free(views);
	free(keep);
	free(frags);
	free(out);
	Py_DECREF(tmpl);
	return res;
}

/* ---- hist_percentiles: percentiles of CSR histograms ------------------- */

/* views[*nv]: obj as a C-contiguous 1-d buffer (of n items unless n < 0)
 * whose struct format is one of `formats` (e.g. "ql": int64) with the given
 * itemsize; *nv counts the views to release. what: "function: argument". */
static int take_flat(PyObject *obj, Py_buffer *views, int *nv, const char *formats, Py_ssize_t itemsize,
		     Py_ssize_t n, const char *what)
{
	Py_buffer *v = &views[*nv];
	if (PyObject_GetBuffer(obj, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
		return -1;
	const char *f = v->format ? v->format : "B";
	if (*f == '@' || *f == '=' || *f == (PY_LITTLE_ENDIAN ? '<' : '>'))
		f++;
	if (!f[0] || f[1] || !strchr(formats, f[0]) || v->itemsize != itemsize || v->ndim != 1 ||
	    (n >= 0 && v->shape[0] != n)) {
		PyErr_Format(PyExc_ValueError, "%s: wrong type or length", what);
		PyBuffer_Release(v);
		return -1;
	}
	(*nv)++;
	return 0;
}

static PyObject *py_hist_percentiles(PyObject *self, PyObject *args)
{
	PyObject *o_offs, *o_bks, *o_cnts, *o_mids, *o_lo, *o_hi, *o_qs;
	if (!PyArg_ParseTuple(args, "OOOOOOO", &o_offs, &o_bks, &o_cnts, &o_mids, &o_lo, &o_hi, &o_qs))
		return NULL;
	PyObject *qs = PySequence_Tuple(o_qs);
	if (!qs)
		return NULL;
	Py_ssize_t nq = PyTuple_GET_SIZE(qs);
	double *frac = PyMem_Calloc((size_t)nq + 1, sizeof(double));
	Py_buffer v[6];
	int nv = 0;
	PyObject *out = NULL;
	if (!frac) {
		PyErr_NoMemory();
		goto done;
	}
	for (Py_ssize_t j = 0; j < nq; j++) {
		frac[j] = PyFloat_AsDouble(PyTuple_GET_ITEM(qs, j)) / 100.0;
		if (frac[j] == -1.0 / 100.0 && PyErr_Occurred())
			goto done;
	}
	if (take_flat(o_offs, v, &nv, "ql", 8, -1, "hist_percentiles: offsets") < 0)
		goto done;
	Py_ssize_t rows = v[0].shape[0] - 1;
	const int64_t *offs = v[0].buf;
	if (rows < 0) {
		PyErr_SetString(PyExc_ValueError, "hist_percentiles: offsets: empty");
		goto done;
	}
	Py_ssize_t entries = offs[rows];
	if (take_flat(o_bks, v, &nv, "i", 4, -1, "hist_percentiles: buckets") < 0)
		goto done;
	Py_buffer *cv = &v[2];
	int wide = 0;
	if (take_flat(o_cnts, v, &nv, "I", 4, v[1].shape[0], "hist_percentiles: counts") < 0) {
		PyErr_Clear();
		if (take_flat(o_cnts, v, &nv, "QL", 8, v[1].shape[0],
			      "hist_percentiles: counts (uint32 or uint64)") < 0)
			goto done;
		wide = 1;
	}
	if (take_flat(o_mids, v, &nv, "ql", 8, -1, "hist_percentiles: mids") < 0 ||
	    take_flat(o_lo, v, &nv, "ql", 8, rows, "hist_percentiles: lo") < 0 ||
	    take_flat(o_hi, v, &nv, "ql", 8, rows, "hist_percentiles: hi") < 0)
		goto done;
	const int32_t *bks = v[1].buf;
	const int64_t *mids = v[3].buf, *lo = v[4].buf, *hi = v[5].buf;
	Py_ssize_t nmids = v[3].shape[0];
	if (entries < 0 || entries > v[1].shape[0]) {
		PyErr_SetString(PyExc_ValueError, "hist_percentiles: offsets past the entries");
		goto done;
	}
	for (Py_ssize_t i = 0; i < rows; i++) {
		if (offs[i] < 0 || offs[i] > offs[i + 1]) {
			PyErr_SetString(PyExc_ValueError, "hist_percentiles: offsets not ascending");
			goto done;
		}
	}
	for (Py_ssize_t e = 0; e < entries; e++) {
		if (bks[e] < 0 || bks[e] >= nmids) {
			PyErr_SetString(PyExc_ValueError, "hist_percentiles: a bucket past the mids table");
			goto done;
		}
	}
	out = PyBytes_FromStringAndSize(NULL, rows * nq * 8);
	if (!out)
		goto done;
	int64_t *res = (int64_t *)PyBytes_AS_STRING(out);
	const uint32_t *c32 = cv->buf;
	const uint64_t *c64 = cv->buf;
	Py_BEGIN_ALLOW_THREADS
	for (Py_ssize_t i = 0; i < rows; i++) {
		int64_t s = offs[i], e = offs[i + 1], total = 0;
		for (int64_t k = s; k < e; k++)
			total += wide ? (int64_t)c64[k] : (int64_t)c32[k];
		for (Py_ssize_t j = 0; j < nq; j++) {
			int64_t val = 0;
			if (total > 0) {
				/* as numpy: ceil(total * (q / 100.0)), at least 1; the
				 * first bucket whose running count reaches it */
				int64_t rank = (int64_t)ceil((double)total * frac[j]);
				if (rank < 1)
					rank = 1;
				int64_t run = 0, k = s;
				for (; k < e - 1; k++) {
					run += wide ? (int64_t)c64[k] : (int64_t)c32[k];
					if (run >= rank)
						break;
				}
				val = mids[bks[k]];
				if (val < lo[i])
					val = lo[i];
				if (val > hi[i])
					val = hi[i];
			}
			res[i * nq + j] = val;
		}
	}
	Py_END_ALLOW_THREADS
done:
	for (int i = 0; i < nv; i++)
		PyBuffer_Release(&v[i]);
	PyMem_Free(frac);
	Py_DECREF(qs);
	return out;
}

/* ---- tree_preorder: the call tree in pre-order, siblings sorted -------- */

static const int64_t *sort_incl, *sort_name;

/* siblings: inclusive time descending, then name, then row */
static int sibling_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	if (sort_incl[x] != sort_incl[y])
		return sort_incl[x] > sort_incl[y] ? -1 : 1;
	if (sort_name[x] != sort_name[y])
		return sort_name[x] < sort_name[y] ? -1 : 1;
	return (x > y) - (x < y);
}

static PyObject *py_tree_preorder(PyObject *self, PyObject *args)
{
	PyObject *o_parent, *o_incl, *o_name;
	if (!PyArg_ParseTuple(args, "OOO", &o_parent, &o_incl, &o_name))
		return NULL;
	Py_buffer v[3];
	int nv = 0;
	PyObject *pre_b = NULL, *depth_b = NULL, *out = NULL;
	int64_t *kids = NULL, *first = NULL, *stack = NULL;
	if (take_flat(o_parent, v, &nv, "ql", 8, -1, "tree_preorder: parent") < 0)
		goto done;
	Py_ssize_t n = v[0].shape[0];
	if (take_flat(o_incl, v, &nv, "ql", 8, n, "tree_preorder: incl") < 0 ||
	    take_flat(o_name, v, &nv, "ql", 8, n, "tree_preorder: name rank") < 0)
		goto done;
	const int64_t *parent = v[0].buf;
	for (Py_ssize_t i = 0; i < n; i++) {
		if (parent[i] < -1 || parent[i] >= n) {
			PyErr_Format(PyExc_ValueError, "tree_preorder: row %zd: parent %lld out of range", i,
				     (long long)parent[i]);
			goto done;
		}
	}
	pre_b = PyBytes_FromStringAndSize(NULL, n * 8);
	depth_b = PyBytes_FromStringAndSize(NULL, n * 8);
	kids = PyMem_Malloc((size_t)(n ? n : 1) * 8);
	first = PyMem_Calloc((size_t)n + 2, 8);
	stack = PyMem_Malloc((size_t)(n ? n : 1) * 8);
	if (!pre_b || !depth_b || !kids || !first || !stack) {
		PyErr_NoMemory();
		goto done;
	}
	int64_t *pre = (int64_t *)PyBytes_AS_STRING(pre_b), *depth = (int64_t *)PyBytes_AS_STRING(depth_b);
	Py_ssize_t written = 0;
	Py_BEGIN_ALLOW_THREADS
	/* children per parent (the roots in slot 0), then each sorted: counts
	 * first, their running sums the slots' starts (first[s] for slot s) */
	for (Py_ssize_t i = 0; i < n; i++)
		first[parent[i] + 2]++;
	for (Py_ssize_t i = 2; i < n + 2; i++)
		first[i] += first[i - 1];
	for (Py_ssize_t i = 0; i < n; i++)
		kids[first[parent[i] + 1]++] = i;
	/* slot s (0: the roots, x + 1: x's children) is now kids[first[s - 1]]
	 * up to kids[first[s]] (from 0 for s = 0) */
	sort_incl = v[1].buf;
	sort_name = v[2].buf;
	for (Py_ssize_t slot = 0; slot <= n; slot++) {
		int64_t b = slot ? first[slot - 1] : 0, e = first[slot];
		if (e - b > 1)
			qsort(kids + b, (size_t)(e - b), 8, sibling_cmp);
	}
	/* depth first, each group of siblings pushed last one first */
	Py_ssize_t top = 0;
	for (int64_t k = first[0] - 1; k >= 0; k--)
		stack[top++] = kids[k];
	while (top) {
		int64_t x = stack[--top];
		if (written == n) { /* a cycle: more visits than rows */
			written = -1;
			break;
		}
		pre[written++] = x;
		depth[x] = parent[x] < 0 ? 0 : depth[parent[x]] + 1;
		for (int64_t k = first[x + 1] - 1; k >= first[x]; k--)
			stack[top++] = kids[k];
	}
	Py_END_ALLOW_THREADS
	if (written != n) {
		PyErr_SetString(PyExc_ValueError, "tree_preorder: the parents do not form a forest");
		goto done;
	}
	out = Py_BuildValue("(OO)", pre_b, depth_b);
done:
	for (int i = 0; i < nv; i++)
		PyBuffer_Release(&v[i]);
	Py_XDECREF(pre_b);
	Py_XDECREF(depth_b);
	PyMem_Free(kids);
	PyMem_Free(first);
	PyMem_Free(stack);
	return out;
}

/* ---- keep_freed_memory: malloc tuning for the ftflame command ---------- */

static PyObject *py_keep_freed_memory(PyObject *self, PyObject *noargs)
{
	/* Blocks up to 256 MiB from the heap, where freed memory is reused,
	 * rather than from fresh mappings given back on free: a report allocates
	 * and frees ~100 MB in big arrays (the builder's tables, their export,
	 * the Profile's columns), and each page the kernel hands out anew costs
	 * a fault. 50 ms less on a 3 M-event report, for 35 MB more peak RSS
	 * (memory kept that a later block does not fit). For a short-lived
	 * command only. */
	int ok = mallopt(M_MMAP_THRESHOLD, 256 << 20);
	return PyBool_FromLong(ok);
}

static PyMethodDef methods[] = {
	{ "read_dat", (PyCFunction)(void (*)(void))py_read_dat, METH_VARARGS | METH_KEYWORDS,
	  "read_dat(path, progress=None) -> dict: read a trace.dat into the call-path aggregate" },
	{ "read_dat_builtin", (PyCFunction)(void (*)(void))py_read_dat_builtin, METH_VARARGS | METH_KEYWORDS,
	  "read_dat_builtin(path, progress=None) -> dict: read_dat with the builtin reader (no libtracecmd)" },
	{ "keep_freed_memory", py_keep_freed_memory, METH_NOARGS,
	  "keep_freed_memory() -> bool: glibc serves blocks up to 256 MiB from the heap, where freed "
	  "memory is reused (mallopt M_MMAP_THRESHOLD): fewer page faults in a short-lived process, "
	  "more peak RSS; the ftflame command calls it" },
	{ "tree_preorder", py_tree_preorder, METH_VARARGS,
	  "tree_preorder(parent, incl, name_rank) -> (pre, depth) as bytes of int64: the rows in "
	  "pre-order, siblings by inclusive time descending, then name rank, then row; each row's depth" },
	{ "hist_percentiles", py_hist_percentiles, METH_VARARGS,
	  "hist_percentiles(offsets, buckets, counts, mids, lo, hi, qs) -> bytes of rows x len(qs) int64: "
	  "per CSR row, each percentile q (0..100) as mids[bucket] of the first bucket whose running "
	  "count reaches ceil(total * q / 100) (at least 1), clamped to [lo, hi]; 0 for empty rows" },
	{ "build_events", py_build_events, METH_VARARGS,
	  "build_events(events) -> dict: feed hand-made events to the call builder" },
	{ "read_text_chunks", (PyCFunction)(void (*)(void))py_read_text_chunks, METH_VARARGS | METH_KEYWORDS,
	  "read_text_chunks(chunks, mode=TEXT_LINES, progress=None, events=False) -> dict: tokenize "
	  "function_graph text fed as an iterable of byte chunks into the call-path aggregate" },
	{ "hist_lower", py_hist_lower, METH_VARARGS, "lower bound (ns) of a histogram bucket" },
	{ "format_rows", py_format_rows, METH_VARARGS,
	  "format_rows(template, nrows[, fd]) -> str, or with fd the number of bytes written to it "
	  "(UTF-8, in chunks, while the next is formatted): rows 0..nrows-1 of a template, a list of literals "
	  "(str/bytes) and (kind, column[, extra]) tuples, columns 1-d buffers of nrows values: "
	  "('i', int64/int32 column), ('f1', float64 "
	  "column: '%.1f'), ('e', index column, fragments), ('rep', count column, literal)" },
	{ NULL, NULL, 0, NULL },
};


static struct PyModuleDef moduledef = {
	PyModuleDef_HEAD_INIT, "_core", "ftflame C core: trace readers and call builder", -1, methods, NULL, NULL, NULL, NULL,
};

/* module.NAME = a tuple of the n strings of names */
static int add_names(PyObject *m, const char *name, const char *const *names, int n)
{
	PyObject *t = PyTuple_New(n);
	if (!t)
		return -1;
	for (int i = 0; i < n; i++) {
		PyObject *s = PyUnicode_FromString(names[i]);
		if (!s) {
			Py_DECREF(t);
			return -1;
		}
		PyTuple_SET_ITEM(t, i, s);
	}
	if (PyModule_AddObject(m, name, t) < 0) {
		Py_DECREF(t);
		return -1;
	}
	return 0;
}

PyMODINIT_FUNC PyInit__core(void)
{
	PyObject *m = PyModule_Create(&moduledef);
	if (!m)
		return NULL;
	PyModule_AddIntConstant(m, "HIST_BUCKETS", FTF_HIST_BUCKETS);
	PyModule_AddIntConstant(m, "NODE_COLS", NODE_COLS);
	if (add_names(m, "NODE_COLUMNS", node_columns, NODE_COLS) < 0 ||
	    add_names(m, "SAMPLE_COLUMNS", sample_columns, SAMPLE_COLS) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	PyModule_AddIntConstant(m, "HIST_SUB", FTF_HIST_SUB);
	PyModule_AddIntConstant(m, "NODE_IRQ", FTF_NODE_IRQ);
	PyModule_AddIntConstant(m, "NODE_IRQ_ROOT", FTF_NODE_IRQ_ROOT);
	PyModule_AddIntConstant(m, "NODE_PARTIAL", FTF_NODE_PARTIAL);
	PyModule_AddIntConstant(m, "SAMPLE_GAP", FTF_SAMPLE_GAP);
	PyModule_AddIntConstant(m, "SAMPLE_PARTIAL", FTF_SAMPLE_PARTIAL);
	PyModule_AddIntConstant(m, "SAMPLE_IRQ", FTF_SAMPLE_IRQ);
	PyModule_AddIntConstant(m, "TEXT_LINES", FTF_TEXT_LINES);
	PyModule_AddIntConstant(m, "TEXT_MAIL", FTF_TEXT_MAIL);
	return m;
}
