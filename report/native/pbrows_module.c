/* CPython binding of the protocol-buffer rows (pbrows.c):
 * ftflame.report._rowfmt.pack_rows and nest_calls, registered by
 * rowfmt_module.c. The template is parsed and checked here, with the GIL
 * held; the rows are written without it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "pbrows.h"
#include "pbrows_module.h"

typedef struct {
	ftf_pb_item *items;
	size_t n;
	Py_buffer *views;
	size_t nviews;
	const char **frags;
	size_t *frag_len;
	PyObject *seq; /* the template as a list or tuple: holds the bytes read */
} pb_template;


static void template_free(pb_template *t)
{
	for (size_t k = 0; k < t->nviews; k++)
		PyBuffer_Release(&t->views[k]);
	PyMem_Free(t->views);
	PyMem_Free(t->items);
	PyMem_Free(t->frags);
	PyMem_Free(t->frag_len);
	Py_XDECREF(t->seq);
}

/* A column of nrows values, contiguous, of format 'q' (int64) or 'd'. */
static const void *column(pb_template *t, PyObject *obj, int is_float, Py_ssize_t nrows, Py_ssize_t i)
{
	Py_buffer *v = &t->views[t->nviews];
	if (PyObject_GetBuffer(obj, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
		return NULL;
	t->nviews++;
	const char *f = v->format ? v->format : "B";
	if (*f == '<' || *f == '=' || *f == '@')
		f++;
	int ok = v->itemsize == 8 && v->ndim == 1 && v->shape[0] == nrows &&
		 (is_float ? !strcmp(f, "d") : (!strcmp(f, "q") || !strcmp(f, "l")));
	if (!ok) {
		PyErr_Format(PyExc_ValueError, "pack_rows: item %zd: a 1-d contiguous %s column of %zd values", i,
			     is_float ? "float64" : "int64", nrows);
		return NULL;
	}
	return v->buf;
}

static int template_parse(pb_template *t, PyObject *seq_in, Py_ssize_t nrows)
{
	memset(t, 0, sizeof(*t));
	PyObject *seq = t->seq = PySequence_Fast(seq_in, "pack_rows: the template must be a sequence");
	if (!seq)
		return -1;
	Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), nfrags = 0;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
		if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) == 3 && PyList_Check(PyTuple_GET_ITEM(o, 2)))
			nfrags += PyList_GET_SIZE(PyTuple_GET_ITEM(o, 2));
	}
	t->items = PyMem_Calloc((size_t)n + 1, sizeof(*t->items));
	t->views = PyMem_Calloc((size_t)n * 2 + 1, sizeof(*t->views));
	t->frags = PyMem_Calloc((size_t)nfrags + 1, sizeof(*t->frags));
	t->frag_len = PyMem_Calloc((size_t)nfrags + 1, sizeof(*t->frag_len));
	if (!t->items || !t->views || !t->frags || !t->frag_len) {
		PyErr_NoMemory();
		return -1;
	}
	size_t ifs[FTF_PB_MAX_NEST], nif = 0, depth = 0, fused = 0;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
		ftf_pb_item *it = &t->items[t->n];
		const char *kind = NULL;
		if (PyBytes_Check(o)) {
			it->kind = FTF_PB_LIT;
			it->s = PyBytes_AS_STRING(o);
			it->len = (size_t)PyBytes_GET_SIZE(o);
		} else if (PyUnicode_Check(o) && (kind = PyUnicode_AsUTF8(o)) && strlen(kind) == 1 &&
			   strchr("()/B", kind[0])) {
			if (kind[0] == 'B') {
				it->kind = FTF_PB_BEGIN;
				if (nif == FTF_PB_MAX_NEST)
					goto bad;
				ifs[nif++] = t->n;
			} else if (kind[0] == '(') {
				it->kind = FTF_PB_OPEN;
				depth++;
			} else if (kind[0] == ')') {
				it->kind = FTF_PB_CLOSE;
				if (!depth--)
					goto bad;
			} else {
				it->kind = FTF_PB_ENDIF;
				if (!nif)
					goto bad;
				t->items[ifs[--nif]].end = t->n;
			}
		} else if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) >= 2 && PyUnicode_Check(PyTuple_GET_ITEM(o, 0)) &&
			   (kind = PyUnicode_AsUTF8(PyTuple_GET_ITEM(o, 0)))) {
			PyObject *col = PyTuple_GET_ITEM(o, 1);
			if (!strcmp(kind, "v") || !strcmp(kind, "?") || !strcmp(kind, "e")) {
				it->kind = kind[0] == 'v' ? FTF_PB_VARINT : kind[0] == '?' ? FTF_PB_IF : FTF_PB_ENUM;
				if (!(it->col = column(t, col, 0, nrows, i)))
					goto fail;
			} else if (!strcmp(kind, "d")) {
				it->kind = FTF_PB_DOUBLE;
				if (!(it->col = column(t, col, 1, nrows, i)))
					goto fail;
			} else if (!strcmp(kind, "t") && PyTuple_GET_SIZE(o) == 3) {
				it->kind = FTF_PB_TIME;
				if (!(it->col = column(t, col, 0, nrows, i)) ||
				    !(it->col2 = column(t, PyTuple_GET_ITEM(o, 2), 0, nrows, i)))
					goto fail;
			} else {
				goto bad;
			}
			if (it->kind == FTF_PB_IF) {
				if (nif == FTF_PB_MAX_NEST)
					goto bad;
				ifs[nif++] = t->n;
			}
			if (it->kind == FTF_PB_ENUM) {
				PyObject *fr = PyTuple_GET_SIZE(o) == 3 ? PyTuple_GET_ITEM(o, 2) : NULL;
				if (!fr || !PyList_Check(fr))
					goto bad;
				it->frags = t->frags + fused;
				it->frag_len = t->frag_len + fused;
				it->nfrags = PyList_GET_SIZE(fr);
				for (Py_ssize_t k = 0; k < it->nfrags; k++) {
					PyObject *f = PyList_GET_ITEM(fr, k);
					if (!PyBytes_Check(f))
						goto bad;
					t->frags[fused] = PyBytes_AS_STRING(f);
					t->frag_len[fused++] = (size_t)PyBytes_GET_SIZE(f);
				}
			}
		} else {
			if (PyErr_Occurred())
				goto fail;
			goto bad;
		}
		if (depth > FTF_PB_MAX_NEST)
			goto bad;
		t->n++;
		continue;
bad:
		PyErr_Format(PyExc_ValueError, "pack_rows: item %zd is not a template item (or unbalanced)", i);
		goto fail;
	}
	if (depth || nif) {
		PyErr_SetString(PyExc_ValueError, "pack_rows: unbalanced ( ) or ? /");
		goto fail;
	}
	return 0;
fail:
	return -1;
}

PyObject *ftf_py_pack_rows(PyObject *self, PyObject *args)
{
	PyObject *tmpl, *events = Py_None;
	Py_ssize_t nrows;
	if (!PyArg_ParseTuple(args, "On|O", &tmpl, &nrows, &events))
		return NULL;
	if (nrows < 0)
		return PyErr_Format(PyExc_ValueError, "pack_rows: nrows must be >= 0");
	Py_buffer ev = { 0 };
	const int64_t *evs = NULL;
	Py_ssize_t nout = nrows;
	if (events != Py_None) {
		if (PyObject_GetBuffer(events, &ev, PyBUF_SIMPLE) < 0)
			return NULL;
		evs = ev.buf;
		nout = ev.len / 8;
		for (Py_ssize_t k = 0; k < nout; k++)
			if (evs[k] >= nrows || evs[k] < -nrows) {
				PyBuffer_Release(&ev);
				return PyErr_Format(PyExc_ValueError, "pack_rows: event %zd is no row", k);
			}
	}
	pb_template t;
	PyObject *res = NULL;
	if (template_parse(&t, tmpl, nrows) == 0) {
		ftf_pb_buf b = { NULL, 0, 0 };
		int rc;
		Py_BEGIN_ALLOW_THREADS
		rc = ftf_pb_pack(t.items, t.n, nout, evs, &b);
		Py_END_ALLOW_THREADS
		res = rc < 0 ? PyErr_NoMemory() : PyBytes_FromStringAndSize(b.p ? b.p : "", (Py_ssize_t)b.n);
		free(b.p);
	}
	template_free(&t);
	if (evs)
		PyBuffer_Release(&ev);
	return res;
}

PyObject *ftf_py_nest_calls(PyObject *self, PyObject *args)
{
	Py_buffer pv, sv, ev, ov = { 0 };
	PyObject *order = Py_None;
	if (!PyArg_ParseTuple(args, "y*w*w*|O", &pv, &sv, &ev, &order))
		return NULL;
	Py_ssize_t n = pv.len / 8;
	PyObject *res = NULL;
	int have_order = order != Py_None && PyObject_GetBuffer(order, &ov, PyBUF_SIMPLE) == 0;
	if (order != Py_None && !have_order) {
		/* its buffer error */
	} else if (sv.len != pv.len || ev.len != pv.len || (have_order && ov.len != pv.len) || pv.len % 8) {
		PyErr_SetString(PyExc_ValueError, "nest_calls: int64 columns of one length");
	} else if ((res = PyBytes_FromStringAndSize(NULL, pv.len * 2))) {
		int64_t *out = (int64_t *)PyBytes_AS_STRING(res);
		int rc;
		for (Py_ssize_t i = 0; i < n; i++) /* a parent that is no earlier row, or no track */
			if (((const int64_t *)pv.buf)[i] >= n) {
				PyErr_SetString(PyExc_ValueError, "nest_calls: a parent past the rows");
				Py_CLEAR(res);
				break;
			}
		if (res) {
			Py_BEGIN_ALLOW_THREADS
			rc = ftf_nest_calls(pv.buf, sv.buf, ev.buf, have_order ? ov.buf : NULL, n, out);
			Py_END_ALLOW_THREADS
			if (rc < 0)
				Py_SETREF(res, PyErr_NoMemory());
			else if (_PyBytes_Resize(&res, (Py_ssize_t)rc * 8) < 0)
				res = NULL;
		}
	}
	PyBuffer_Release(&pv);
	PyBuffer_Release(&sv);
	PyBuffer_Release(&ev);
	if (have_order)
		PyBuffer_Release(&ov);
	return res;
}

PyObject *ftf_py_evented_json(PyObject *self, PyObject *args)
{
	Py_buffer v[5];
	long long t0;
	if (!PyArg_ParseTuple(args, "y*y*y*y*y*L", &v[0], &v[1], &v[2], &v[3], &v[4], &t0))
		return NULL;
	PyObject *res = NULL;
	Py_ssize_t nev = v[0].len / 8, nrows = v[1].len / 8;
	int ok = v[0].len % 8 == 0 && v[1].len % 8 == 0;
	for (int k = 2; k < 5; k++)
		ok &= v[k].len == v[1].len;
	if (!ok) {
		PyErr_SetString(PyExc_ValueError, "evented_json: int64 events, and four int64 columns of one length");
		goto out;
	}
	const int64_t *ev = v[0].buf;
	for (Py_ssize_t k = 0; k < nev; k++)
		if (ev[k] >= nrows || ev[k] < -nrows) {
			PyErr_Format(PyExc_ValueError, "evented_json: event %zd is no row", k);
			goto out;
		}
	ftf_pb_buf b = { NULL, 0, 0 };
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = ftf_evented_json(ev, nev, v[1].buf, v[2].buf, v[3].buf, v[4].buf, (int64_t)t0, &b);
	Py_END_ALLOW_THREADS
	res = rc < 0 ? PyErr_NoMemory() : PyBytes_FromStringAndSize(b.p ? b.p : "", (Py_ssize_t)b.n);
	free(b.p);
out:
	for (int k = 0; k < 5; k++)
		PyBuffer_Release(&v[k]);
	return res;
}
