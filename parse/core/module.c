/* CPython binding of the C core: ftflame.parse._core.
 *
 * A plain CPython extension (not cffi): the whole read runs in C with the GIL
 * released, and only the finished aggregate (O(call paths + root calls)) is
 * converted to Python objects once, at the end. No Python runs per event.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ftf.h"

static PyObject *sums_tuple(const ftf_sums *s)
{
	return Py_BuildValue("(KKLKKKKK)", (unsigned long long)s->calls, (unsigned long long)s->incl,
			     (long long)s->excl, (unsigned long long)s->desc,
			     (unsigned long long)s->nchild, (unsigned long long)s->irq,
			     (unsigned long long)s->irq_calls, (unsigned long long)s->offcpu);
}

static PyObject *hist_list(const uint32_t *h)
{
	PyObject *l = PyList_New(0);
	if (!l || !h)
		return l;
	for (uint32_t i = 0; i < FTF_HIST_BUCKETS; i++) {
		if (!h[i])
			continue;
		PyObject *t = Py_BuildValue("(KI)", (unsigned long long)ftf_hist_lower(i), h[i]);
		if (!t || PyList_Append(l, t) < 0) {
			Py_XDECREF(t);
			Py_DECREF(l);
			return NULL;
		}
		Py_DECREF(t);
	}
	return l;
}

#define SET(d, k, v)                                              \
	do {                                                      \
		PyObject *_v = (v);                               \
		if (!_v || PyDict_SetItemString((d), (k), _v) < 0) { \
			Py_XDECREF(_v);                           \
			goto fail;                                \
		}                                                 \
		Py_DECREF(_v);                                    \
	} while (0)

static PyObject *builder_result(ftf_builder *b)
{
	PyObject *res = PyDict_New(), *funcs = NULL, *nodes = NULL, *samples = NULL, *cnt = NULL,
		 *lost = NULL;
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
	nodes = PyList_New(b->nnodes);
	if (!nodes)
		goto fail;
	for (uint32_t i = 0; i < b->nnodes; i++) {
		const ftf_node *n = &b->nodes[i];
		PyObject *all = sums_tuple(&n->all), *gap = sums_tuple(&n->gap), *h = hist_list(n->hist);
		PyObject *t = NULL;
		if (all && gap && h)
			t = Py_BuildValue("(llIOOKKLLKKKO)", n->parent == FTF_NONE ? -1L : (long)n->parent,
					  (long)n->func, n->flags, all, gap,
					  (unsigned long long)(n->all.calls ? n->incl_min : 0),
					  (unsigned long long)n->incl_max,
					  (long long)(n->all.calls ? n->excl_min : 0),
					  (long long)(n->all.calls ? n->excl_max : 0),
					  (unsigned long long)n->migrated, (unsigned long long)n->open_end,
					  (unsigned long long)n->unterminated, h);
		Py_XDECREF(all);
		Py_XDECREF(gap);
		Py_XDECREF(h);
		if (!t)
			goto fail;
		PyList_SET_ITEM(nodes, i, t);
	}
	samples = PyList_New((Py_ssize_t)b->nsamples);
	if (!samples)
		goto fail;
	for (uint64_t i = 0; i < b->nsamples; i++) {
		const ftf_sample *s = &b->samples[i];
		PyObject *t = Py_BuildValue("(IiiIKKKKK)", s->node, s->pid, s->cpu, s->flags,
					    (unsigned long long)s->calltime, (unsigned long long)s->dur,
					    (unsigned long long)s->desc, (unsigned long long)s->irq,
					    (unsigned long long)s->offcpu);
		if (!t)
			goto fail;
		PyList_SET_ITEM(samples, (Py_ssize_t)i, t);
	}
	cnt = PyDict_New();
	if (!cnt)
		goto fail;
#define C(name) SET(cnt, #name, PyLong_FromUnsignedLongLong(b->c.name))
	C(events); C(entries); C(exits); C(switches); C(other_events); C(lost_records);
	C(lost_events); C(lost_unknown); C(orphan_exits); C(unterminated); C(open_at_end);
	C(overrun_growth); C(depth_mismatch); C(migrations); C(gap_calls); C(partial_entries);
	C(irq_roots); C(leaf_events); C(irq_outside_window); C(first_ts); C(last_ts);
#undef C
	SET(cnt, "max_depth", PyLong_FromLongLong(b->c.max_depth));
	SET(cnt, "max_cpu", PyLong_FromLong(b->max_cpu));
	lost = PyDict_New();
	if (!lost)
		goto fail;
	for (int cpu = 0; cpu <= b->max_cpu && cpu < FTF_MAX_CPUS; cpu++) {
		if (!b->lost_marks_per_cpu[cpu])
			continue;
		PyObject *k = PyLong_FromLong(cpu), *v = PyLong_FromLongLong(b->lost_per_cpu[cpu]);
		if (!k || !v || PyDict_SetItem(lost, k, v) < 0) {
			Py_XDECREF(k);
			Py_XDECREF(v);
			goto fail;
		}
		Py_DECREF(k);
		Py_DECREF(v);
	}
	SET(res, "funcs", funcs);
	funcs = NULL;
	SET(res, "nodes", nodes);
	nodes = NULL;
	SET(res, "samples", samples);
	samples = NULL;
	SET(res, "counters", cnt);
	cnt = NULL;
	SET(res, "lost_per_cpu", lost);
	lost = NULL;
	return res;
fail:
	Py_XDECREF(funcs);
	Py_XDECREF(nodes);
	Py_XDECREF(samples);
	Py_XDECREF(cnt);
	Py_XDECREF(lost);
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
	Py_BEGIN_ALLOW_THREADS
	rc = ftf_read_dat(path, b, meta, progress == Py_None ? NULL : progress_trampoline, &pc, err,
			  sizeof(err));
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
	free(b);
	free(meta);
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

static PyObject *py_hist_lower(PyObject *self, PyObject *args)
{
	unsigned int bucket;
	if (!PyArg_ParseTuple(args, "I", &bucket))
		return NULL;
	return PyLong_FromUnsignedLongLong(ftf_hist_lower(bucket));
}

static PyMethodDef methods[] = {
	{ "read_dat", (PyCFunction)(void (*)(void))py_read_dat, METH_VARARGS | METH_KEYWORDS,
	  "read_dat(path, progress=None) -> dict: read a trace.dat into the call-path aggregate" },
	{ "build_events", py_build_events, METH_VARARGS,
	  "build_events(events) -> dict: feed hand-made events to the call builder" },
	{ "hist_lower", py_hist_lower, METH_VARARGS, "lower bound (ns) of a histogram bucket" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef moduledef = {
	PyModuleDef_HEAD_INIT, "_core", "ftflame C core: trace readers and call builder", -1, methods,
};

PyMODINIT_FUNC PyInit__core(void)
{
	PyObject *m = PyModule_Create(&moduledef);
	if (!m)
		return NULL;
	PyModule_AddIntConstant(m, "HIST_BUCKETS", FTF_HIST_BUCKETS);
	PyModule_AddIntConstant(m, "HIST_SUB", FTF_HIST_SUB);
	PyModule_AddIntConstant(m, "NODE_IRQ", FTF_NODE_IRQ);
	PyModule_AddIntConstant(m, "NODE_IRQ_ROOT", FTF_NODE_IRQ_ROOT);
	PyModule_AddIntConstant(m, "NODE_PARTIAL", FTF_NODE_PARTIAL);
	PyModule_AddIntConstant(m, "SAMPLE_GAP", FTF_SAMPLE_GAP);
	PyModule_AddIntConstant(m, "SAMPLE_PARTIAL", FTF_SAMPLE_PARTIAL);
	PyModule_AddIntConstant(m, "SAMPLE_IRQ", FTF_SAMPLE_IRQ);
	return m;
}
