/* Protocol-buffer rows: many messages of one shape, each from one row of
 * columns, written one after the other into one bytes object
 * (ftflame.report._rowfmt.pack_rows). The Perfetto trace (report/perfetto.py)
 * has two packets per call, millions on a long trace: a protobuf object per
 * packet in Python would cost more than the read of the trace.
 *
 * A template is a list of items, written in order for each row:
 *   bytes                  the bytes as they are (field keys, constant fields)
 *   ("v", int64 column)    the value as a varint (negative: 10 bytes, as int64 fields are)
 *   ("d", float64 column)  the value's 8 bytes, little-endian (a double field)
 *   ("e", int64 column, [bytes...])  the fragment the value indexes; nothing for -1
 *   "("  ... ")"           a length-delimited field's body: its length written before it
 *   ("?", int64 column) ... "/"  the items between, only in the rows where the value is not 0
 * With events (pack_rows(template, ncalls, events)), a row per event, e for
 * a slice's begin and -1-e for its end, the columns one value per slice
 * (read at e): no column gathered per event. Then also
 *   ("t", begin column, end column)  the begin's value at a begin, the end's at an end, as a varint
 *   "B" ... "/"            the items between, only at a begin
 * The arguments are checked with the GIL held, the rows written without it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "pbrows.h"

enum { PB_LIT, PB_VARINT, PB_DOUBLE, PB_ENUM, PB_OPEN, PB_CLOSE, PB_IF, PB_ENDIF, PB_TIME, PB_BEGIN };

#define PB_MAX_NEST 16

typedef struct {
	int kind;
	const char *s; /* PB_LIT */
	size_t len;
	const void *col; /* int64 or float64, nrows values */
	const int64_t *col2; /* PB_TIME: the end's */
	const char *const *frags; /* PB_ENUM */
	const size_t *frag_len;
	Py_ssize_t nfrags;
	size_t end; /* PB_IF, PB_BEGIN: the index of its PB_ENDIF */
} pb_item;

typedef struct {
	pb_item *items;
	size_t n;
	Py_buffer *views;
	size_t nviews;
	const char **frags;
	size_t *frag_len;
	PyObject *seq; /* the template as a list or tuple: holds the bytes read */
} pb_template;

typedef struct {
	char *p;
	size_t n, cap;
} pb_buf;

static int buf_room(pb_buf *b, size_t more)
{
	if (b->n + more <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 1 << 16;
	while (cap < b->n + more)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static size_t varint_put(char *out, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		out[n++] = (char)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (char)v;
	return n;
}

/* Every row of the template into b: 0, -1 out of memory. */
static int pack(const pb_template *t, Py_ssize_t nrows, const int64_t *events, pb_buf *b)
{
	size_t open[PB_MAX_NEST];
	for (Py_ssize_t row = 0; row < nrows; row++) {
		size_t depth = 0;
		int64_t e = events ? events[row] : row, r = e >= 0 ? e : -1 - e; /* (checked) */
		for (size_t i = 0; i < t->n; i++) {
			const pb_item *it = &t->items[i];
			switch (it->kind) {
			case PB_LIT:
				if (buf_room(b, it->len) < 0)
					return -1;
				memcpy(b->p + b->n, it->s, it->len);
				b->n += it->len;
				break;
			case PB_VARINT:
				if (buf_room(b, 10) < 0)
					return -1;
				b->n += varint_put(b->p + b->n, (uint64_t)((const int64_t *)it->col)[r]);
				break;
			case PB_DOUBLE:
				if (buf_room(b, 8) < 0)
					return -1;
				memcpy(b->p + b->n, (const double *)it->col + r, 8); /* as x86 and arm64 hold it: little-endian */
				b->n += 8;
				break;
			case PB_ENUM: {
				int64_t k = ((const int64_t *)it->col)[r];
				if (k < 0 || k >= it->nfrags)
					break;
				if (buf_room(b, it->frag_len[k]) < 0)
					return -1;
				memcpy(b->p + b->n, it->frags[k], it->frag_len[k]);
				b->n += it->frag_len[k];
				break;
			}
			case PB_OPEN:
				open[depth++] = b->n;
				break;
			case PB_CLOSE: {
				size_t at = open[--depth], len = b->n - at, vl = varint_len(len);
				if (buf_room(b, vl) < 0)
					return -1;
				memmove(b->p + at + vl, b->p + at, len);
				varint_put(b->p + at, len);
				b->n += vl;
				break;
			}
			case PB_IF:
				if (!((const int64_t *)it->col)[r])
					i = it->end;
				break;
			case PB_BEGIN:
				if (e < 0)
					i = it->end;
				break;
			case PB_TIME:
				if (buf_room(b, 10) < 0)
					return -1;
				b->n += varint_put(b->p + b->n, (uint64_t)(e >= 0 ? ((const int64_t *)it->col)[r] : it->col2[r]));
				break;
			default: /* PB_ENDIF */
				break;
			}
		}
	}
	return 0;
}

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
	size_t ifs[PB_MAX_NEST], nif = 0, depth = 0, fused = 0;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
		pb_item *it = &t->items[t->n];
		const char *kind = NULL;
		if (PyBytes_Check(o)) {
			it->kind = PB_LIT;
			it->s = PyBytes_AS_STRING(o);
			it->len = (size_t)PyBytes_GET_SIZE(o);
		} else if (PyUnicode_Check(o) && (kind = PyUnicode_AsUTF8(o)) && strlen(kind) == 1 &&
			   strchr("()/B", kind[0])) {
			if (kind[0] == 'B') {
				it->kind = PB_BEGIN;
				if (nif == PB_MAX_NEST)
					goto bad;
				ifs[nif++] = t->n;
			} else if (kind[0] == '(') {
				it->kind = PB_OPEN;
				depth++;
			} else if (kind[0] == ')') {
				it->kind = PB_CLOSE;
				if (!depth--)
					goto bad;
			} else {
				it->kind = PB_ENDIF;
				if (!nif)
					goto bad;
				t->items[ifs[--nif]].end = t->n;
			}
		} else if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) >= 2 && PyUnicode_Check(PyTuple_GET_ITEM(o, 0)) &&
			   (kind = PyUnicode_AsUTF8(PyTuple_GET_ITEM(o, 0)))) {
			PyObject *col = PyTuple_GET_ITEM(o, 1);
			if (!strcmp(kind, "v") || !strcmp(kind, "?") || !strcmp(kind, "e")) {
				it->kind = kind[0] == 'v' ? PB_VARINT : kind[0] == '?' ? PB_IF : PB_ENUM;
				if (!(it->col = column(t, col, 0, nrows, i)))
					goto fail;
			} else if (!strcmp(kind, "d")) {
				it->kind = PB_DOUBLE;
				if (!(it->col = column(t, col, 1, nrows, i)))
					goto fail;
			} else if (!strcmp(kind, "t") && PyTuple_GET_SIZE(o) == 3) {
				it->kind = PB_TIME;
				if (!(it->col = column(t, col, 0, nrows, i)) ||
				    !(it->col2 = column(t, PyTuple_GET_ITEM(o, 2), 0, nrows, i)))
					goto fail;
			} else {
				goto bad;
			}
			if (it->kind == PB_IF) {
				if (nif == PB_MAX_NEST)
					goto bad;
				ifs[nif++] = t->n;
			}
			if (it->kind == PB_ENUM) {
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
		if (depth > PB_MAX_NEST)
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
		pb_buf b = { NULL, 0, 0 };
		int rc;
		Py_BEGIN_ALLOW_THREADS
		rc = pack(&t, nout, evs, &b);
		Py_END_ALLOW_THREADS
		res = rc < 0 ? PyErr_NoMemory() : PyBytes_FromStringAndSize(b.p ? b.p : "", (Py_ssize_t)b.n);
		free(b.p);
	}
	template_free(&t);
	if (evs)
		PyBuffer_Release(&ev);
	return res;
}

/* nest_calls(parent, start, end[, order]) -> events: the calls of a batch
 * (parent: a row, or -1 - track for a call on top of its track) made to
 * nest in time, as a timeline of begin/end pairs must: a call starts no
 * earlier than its caller or its previous sibling ended, ends no later
 * than its caller, moved with its duration kept where it fits, else cut
 * (start and end are changed in place; a trace's times mostly nest
 * already: text timestamps of a microsecond and clocks read a few ns apart
 * do not always). order: the rows, callers before callees, siblings and a
 * track's top calls in the order they were entered (NULL: the rows' own
 * order, which is that when every caller's row comes before its callees').
 * events: 2n values, row for its begin and -1-row for its end, each top
 * call's tree depth first, top calls in that order. */
static int nest(const int64_t *parent, int64_t *start, int64_t *end, const int64_t *order, int64_t n,
		int64_t *events)
{
	int64_t ntracks = 0;
	for (int64_t i = 0; i < n; i++)
		if (parent[i] < 0 && -1 - parent[i] >= ntracks)
			ntracks = -parent[i];
	int64_t *first = malloc((size_t)(4 * n + ntracks + 1) * sizeof(int64_t));
	if (!first)
		return -1;
	int64_t *last = first + n, *next = last + n, *stack = next + n, *last_top = stack + n;
	for (int64_t i = 0; i < n; i++)
		first[i] = last[i] = next[i] = -1;
	for (int64_t t = 0; t < ntracks; t++)
		last_top[t] = -1;
	int64_t prev_top = -1, ntop_first = -1;
	for (int64_t k = 0; k < n; k++) {
		int64_t i = order ? order[k] : k, p = i >= 0 && i < n ? parent[i] : n;
		if (p >= n)
			continue;
		/* the previous sibling, or the previous call on top of this track */
		int64_t prev = p >= 0 ? last[p] : last_top[-1 - p];
		/* moved, its duration kept, into [lo, hi]: after its caller's start
		 * and its previous sibling's end, before its caller's end; cut
		 * only where it does not fit */
		int64_t d = end[i] > start[i] ? end[i] - start[i] : 0;
		int64_t lo = p >= 0 ? start[p] : INT64_MIN, hi = p >= 0 ? end[p] : INT64_MAX;
		if (prev >= 0 && end[prev] > lo)
			lo = end[prev];
		if (start[i] < lo) {
			start[i] = lo;
			end[i] = d <= INT64_MAX - lo ? lo + d : INT64_MAX;
		} else {
			end[i] = start[i] + d;
		}
		if (end[i] > hi) {
			int64_t back = end[i] - hi < start[i] - lo ? end[i] - hi : start[i] - lo;
			start[i] -= back;
			end[i] -= back;
			if (end[i] > hi)
				end[i] = hi;
			if (start[i] > end[i])
				start[i] = end[i];
		}
		if (p >= 0) {
			if (last[p] >= 0)
				next[last[p]] = i;
			else
				first[p] = i;
			last[p] = i;
		} else {
			last_top[-1 - p] = i;
			if (prev_top >= 0)
				next[prev_top] = i;
			else
				ntop_first = i;
			prev_top = i;
		}
	}
	int64_t ne = 0;
	for (int64_t top = ntop_first; top >= 0; top = next[top]) {
		int64_t sp = 0;
		stack[sp++] = top;
		events[ne++] = top;
		while (sp) {
			int64_t i = stack[sp - 1];
			int64_t c = first[i];
			if (c >= 0) {
				first[i] = next[c]; /* its next child, the next time round */
				stack[sp++] = c;
				events[ne++] = c;
			} else {
				events[ne++] = -1 - i;
				sp--;
			}
		}
	}
	free(first);
	return (int)ne;
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
			rc = nest(pv.buf, sv.buf, ev.buf, have_order ? ov.buf : NULL, n, out);
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
