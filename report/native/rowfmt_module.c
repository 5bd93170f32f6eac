/* CPython binding of the row-template formatter (rowfmt.c):
 * ftflame.report._rowfmt.format_rows, which writes the JSON call tree.
 *
 * Beside the JSON renderer (report/jsonout.py), so that a change to how JSON
 * numbers are written lives with the renderer that writes them, not in the
 * trace reader. The arguments are checked here, with the GIL held; the
 * formatting runs with it released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>

#include "pbrows_module.h"
#include "rowfmt.h"

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

/* A template checked and translated for rowfmt.c, with what keeps its
 * pointers valid while the GIL is released: the column buffers, the
 * fragment tuples and their ftf_str arrays. */
typedef struct {
	PyObject *tmpl;      /* a tuple copy of the template: its items stay alive */
	Py_ssize_t n;        /* template items */
	ftf_rowfmt_item *items;
	Py_buffer *views;    /* VIEWS_PER_ITEM per item; views[0..nviews) may hold a buffer */
	Py_ssize_t nviews;
	PyObject **keep;     /* per ENUM item: its fragments as a tuple */
	ftf_str **frags;     /* per ENUM item: their text */
	int ascii;           /* every literal and fragment is ASCII */
} parsed_template;

/* An item's buffers: a column; a SEG item's starts, counts and values. */
#define VIEWS_PER_ITEM 3

static void template_free(parsed_template *pt)
{
	for (Py_ssize_t i = 0; i < pt->nviews; i++)
		if (pt->views[i].obj)
			PyBuffer_Release(&pt->views[i]);
	for (Py_ssize_t i = 0; i < pt->n && pt->keep && pt->frags; i++) {
		Py_XDECREF(pt->keep[i]);
		free(pt->frags[i]);
	}
	free(pt->items);
	free(pt->views);
	free(pt->keep);
	free(pt->frags);
	Py_XDECREF(pt->tmpl);
}

/* The rowfmt kind named by a template tuple's first element; -1 if none. */
static int kind_named(const char *kind)
{
	if (!strcmp(kind, "i"))
		return FTF_RF_INT;
	if (!strcmp(kind, "f1"))
		return FTF_RF_F1;
	if (!strcmp(kind, "f1n"))
		return FTF_RF_F1N;
	if (!strcmp(kind, "e"))
		return FTF_RF_ENUM;
	if (!strcmp(kind, "rep"))
		return FTF_RF_REP;
	if (!strcmp(kind, "si") || !strcmp(kind, "sf1n") || !strcmp(kind, "se"))
		return FTF_RF_SEG;
	return -1;
}

/* An ENUM item's fragments (a sequence of str/bytes, not a string) into
 * pt->keep[i] and pt->frags[i]. */
static int enum_fragments(parsed_template *pt, Py_ssize_t i, PyObject *extra)
{
	ftf_rowfmt_item *it = &pt->items[i];
	if (PyUnicode_Check(extra) || PyBytes_Check(extra)) {
		PyErr_Format(PyExc_TypeError, "format_rows: template item %zd: fragments must "
			     "be a list of str, not a string", i);
		return -1;
	}
	pt->keep[i] = PySequence_Tuple(extra);
	if (!pt->keep[i])
		return -1;
	Py_ssize_t nf = PyTuple_GET_SIZE(pt->keep[i]);
	pt->frags[i] = calloc((size_t)nf + 1, sizeof(ftf_str));
	if (!pt->frags[i]) {
		PyErr_NoMemory();
		return -1;
	}
	for (Py_ssize_t k = 0; k < nf; k++)
		if (text_of(PyTuple_GET_ITEM(pt->keep[i], k), &pt->frags[i][k], &pt->ascii, "a fragment") < 0)
			return -1;
	it->frags = pt->frags[i];
	it->nfrags = (size_t)nf;
	return 0;
}

/* A SEG item's values: a 1-d buffer of any length, integers of 4 or 8
 * bytes (want_float 0) or float64. */
static int values_of(PyObject *obj, Py_buffer *view, int want_float, Py_ssize_t index)
{
	if (PyObject_GetBuffer(obj, view, PyBUF_STRIDES | PyBUF_FORMAT) < 0)
		return -1;
	const char *f = view->format ? view->format : "B";
	if (*f == '@' || *f == '=' || *f == (PY_LITTLE_ENDIAN ? '<' : '>'))
		f++;
	int ok = want_float ? f[0] == 'd' && f[1] == 0 && view->itemsize == 8
			    : (f[0] == 'i' || f[0] == 'l' || f[0] == 'q') && f[1] == 0 &&
				      (view->itemsize == 4 || view->itemsize == 8);
	if (!ok || view->ndim != 1) {
		PyErr_Format(PyExc_ValueError, "format_rows: template item %zd: values must be a 1-d %s "
			     "buffer", index, want_float ? "float64" : "int64 or int32");
		PyBuffer_Release(view);
		return -1;
	}
	return 0;
}

/* A SEG item's (starts, counts, values[, fragments]) into it: every run
 * inside the values, every ENUM value an index of the fragments (rowfmt.c
 * trusts them). */
static int seg_item(parsed_template *pt, Py_ssize_t i, PyObject *t, const char *kind, Py_ssize_t nrows)
{
	ftf_rowfmt_item *it = &pt->items[i];
	Py_buffer *v = &pt->views[VIEWS_PER_ITEM * i];
	int floats = !strcmp(kind, "sf1n");
	it->seg.kind = floats ? FTF_RF_F1N : !strcmp(kind, "se") ? FTF_RF_ENUM : FTF_RF_INT;
	if (column_of(PyTuple_GET_ITEM(t, 2), &v[1], 0, nrows, i) < 0)
		return -1;
	if (values_of(PyTuple_GET_ITEM(t, 3), &v[2], floats, i) < 0)
		return -1;
	it->col2 = v[1].buf;
	it->stride2 = v[1].strides ? v[1].strides[0] : v[1].itemsize;
	it->itemsize2 = (int)v[1].itemsize;
	it->seg.values = v[2].buf;
	it->seg.nvalues = (size_t)v[2].shape[0];
	it->seg.stride = v[2].strides ? v[2].strides[0] : v[2].itemsize;
	it->seg.itemsize = (int)v[2].itemsize;
	for (Py_ssize_t r = 0; r < nrows; r++) {
		int64_t start = ftf_rowfmt_int((const char *)it->col + (ptrdiff_t)r * it->stride, it->itemsize);
		int64_t count = ftf_rowfmt_int((const char *)it->col2 + (ptrdiff_t)r * it->stride2, it->itemsize2);
		if (start < 0 || count < 0 || (uint64_t)start > it->seg.nvalues ||
		    (uint64_t)count > it->seg.nvalues - (uint64_t)start) {
			PyErr_Format(PyExc_ValueError, "format_rows: template item %zd, row %zd: run %lld+%lld "
				     "outside the %zu values", i, r, (long long)start, (long long)count,
				     it->seg.nvalues);
			return -1;
		}
	}
	if (it->seg.kind != FTF_RF_ENUM)
		return 0;
	if (enum_fragments(pt, i, PyTuple_GET_ITEM(t, 4)) < 0)
		return -1;
	for (size_t k = 0; k < it->seg.nvalues; k++) {
		int64_t x = ftf_rowfmt_int((const char *)it->seg.values + (ptrdiff_t)k * it->seg.stride,
					   it->seg.itemsize);
		if (x < 0 || (uint64_t)x >= it->nfrags) {
			PyErr_Format(PyExc_ValueError, "format_rows: template item %zd: value %zu: index %lld "
				     "out of range (%zu fragments)", i, k, (long long)x, it->nfrags);
			return -1;
		}
	}
	return 0;
}

/* Template item i, a (kind, column[, extra]) tuple t, into pt->items[i]. */
static int column_item(parsed_template *pt, Py_ssize_t i, PyObject *t, Py_ssize_t nrows)
{
	ftf_rowfmt_item *it = &pt->items[i];
	Py_ssize_t tn = PyTuple_GET_SIZE(t);
	const char *kind = tn >= 1 && PyUnicode_Check(PyTuple_GET_ITEM(t, 0))
		? PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, 0)) : NULL;
	if (!kind) {
		PyErr_Clear();
		PyErr_Format(PyExc_TypeError, "format_rows: template item %zd: (kind, column[, extra]) "
			     "with kind a str", i);
		return -1;
	}
	it->kind = kind_named(kind);
	if (it->kind < 0) {
		PyErr_Format(PyExc_ValueError, "format_rows: template item %zd: unknown kind '%s' "
			     "(i, f1, f1n, e, rep, si, sf1n, se)", i, kind);
		return -1;
	}
	Py_ssize_t want = it->kind == FTF_RF_ENUM || it->kind == FTF_RF_REP ? 3
			: it->kind == FTF_RF_SEG ? (strcmp(kind, "se") ? 4 : 5) : 2;
	if (tn != want) {
		PyErr_Format(PyExc_ValueError, "format_rows: template item %zd: kind '%s' takes %zd "
			     "elements, got %zd", i, kind, want, tn);
		return -1;
	}
	int floats = it->kind == FTF_RF_F1 || it->kind == FTF_RF_F1N;
	Py_buffer *view = &pt->views[VIEWS_PER_ITEM * i];
	pt->nviews = VIEWS_PER_ITEM * (i + 1);
	if (column_of(PyTuple_GET_ITEM(t, 1), view, floats, nrows, i) < 0)
		return -1;
	it->col = view->buf;
	it->stride = view->strides ? view->strides[0] : view->itemsize;
	it->itemsize = (int)view->itemsize;
	if (it->kind == FTF_RF_SEG)
		return seg_item(pt, i, t, kind, nrows);
	if (it->kind == FTF_RF_REP)
		return text_of(PyTuple_GET_ITEM(t, 2), &it->lit, &pt->ascii, "a repeated literal");
	if (it->kind == FTF_RF_ENUM)
		return enum_fragments(pt, i, PyTuple_GET_ITEM(t, 2));
	return 0;
}

/* The Python template (literals and column tuples) into pt; on failure a
 * Python exception is set and pt holds what template_free releases. */
static int template_parse(parsed_template *pt, PyObject *tmpl_in, Py_ssize_t nrows)
{
	memset(pt, 0, sizeof(*pt));
	pt->ascii = 1;
	pt->tmpl = PySequence_Tuple(tmpl_in);
	if (!pt->tmpl)
		return -1;
	Py_ssize_t n = pt->n = PyTuple_GET_SIZE(pt->tmpl);
	pt->items = calloc((size_t)n + 1, sizeof(*pt->items));
	pt->views = calloc(VIEWS_PER_ITEM * ((size_t)n + 1), sizeof(*pt->views));
	pt->keep = calloc((size_t)n + 1, sizeof(*pt->keep));
	pt->frags = calloc((size_t)n + 1, sizeof(*pt->frags));
	if (!pt->items || !pt->views || !pt->keep || !pt->frags) {
		PyErr_NoMemory();
		return -1;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *t = PyTuple_GET_ITEM(pt->tmpl, i);
		if (!PyTuple_Check(t)) {
			pt->items[i].kind = FTF_RF_LIT;
			if (text_of(t, &pt->items[i].lit, &pt->ascii, "a literal") < 0)
				return -1;
		} else if (column_item(pt, i, t, nrows) < 0) {
			return -1;
		}
	}
	return 0;
}

/* Straight to the file: UTF-8 as it is, no size pass. The bytes written. */
static PyObject *format_to_fd(const parsed_template *pt, Py_ssize_t nrows, int fd)
{
	size_t bad_row = 0, bad_item = 0, len = 0;
	int rc, err = 0;
	Py_BEGIN_ALLOW_THREADS
	rc = ftf_rowfmt_write_fd(pt->items, (size_t)pt->n, (size_t)nrows, fd, &len, &err, &bad_row, &bad_item);
	Py_END_ALLOW_THREADS
	if (rc == FTF_RF_OK)
		return PyLong_FromSize_t(len);
	if (rc == FTF_RF_IO) {
		errno = err;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	rowfmt_error(rc, pt->items, bad_row, bad_item);
	return NULL;
}

/* Into a str: sized first, then written once. ASCII text is written
 * straight into the str, cut to its length after; else as UTF-8, decoded
 * after. */
static PyObject *format_to_str(const parsed_template *pt, Py_ssize_t nrows)
{
	size_t bad_row = 0, bad_item = 0, len = 0;
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = ftf_rowfmt_size(pt->items, (size_t)pt->n, (size_t)nrows, &len, &bad_row, &bad_item);
	Py_END_ALLOW_THREADS
	if (rc == FTF_RF_OK && len > (size_t)PY_SSIZE_T_MAX)
		rc = FTF_RF_NOMEM;
	if (rc != FTF_RF_OK) {
		rowfmt_error(rc, pt->items, bad_row, bad_item);
		return NULL;
	}
	PyObject *res = NULL;
	char *out = NULL, *dst;
	size_t bound = len;
	if (pt->ascii) {
		res = PyUnicode_New((Py_ssize_t)bound, 127);
		if (!res)
			return NULL;
		dst = PyUnicode_DATA(res);
	} else {
		dst = out = malloc(bound ? bound : 1);
		if (!out)
			return PyErr_NoMemory();
	}
	Py_BEGIN_ALLOW_THREADS
	rc = ftf_rowfmt_write(pt->items, (size_t)pt->n, (size_t)nrows, dst, bound, &len);
	Py_END_ALLOW_THREADS
	if (rc != FTF_RF_OK) {
		Py_CLEAR(res);
		if (rc == FTF_RF_NOMEM)
			PyErr_NoMemory();
		else
			PyErr_SetString(PyExc_RuntimeError, "format_rows: a column changed while it was formatted");
	} else if (!pt->ascii) {
		res = PyUnicode_DecodeUTF8(out, (Py_ssize_t)len, "strict");
	} else if (len < bound && PyUnicode_Resize(&res, (Py_ssize_t)len) < 0) {
		Py_CLEAR(res);
	}
	free(out);
	return res;
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
	parsed_template pt;
	PyObject *res = NULL;
	if (template_parse(&pt, tmpl_in, nrows) == 0)
		res = fd >= 0 ? format_to_fd(&pt, nrows, fd) : format_to_str(&pt, nrows);
	template_free(&pt);
	return res;
}

static PyMethodDef methods[] = {
	{ "format_rows", py_format_rows, METH_VARARGS,
	  "format_rows(template, nrows[, fd]) -> str, or with fd the number of bytes written to it "
	  "(UTF-8, in chunks, while the next is formatted): rows 0..nrows-1 of a template, a list of literals "
	  "(str/bytes) and (kind, column[, extra]) tuples, columns 1-d buffers of nrows values: "
	  "('i', int64/int32 column), ('f1', float64 "
	  "column: '%.1f'), ('f1n', float64 column: '%.1f', NaN as null), ('e', index column, fragments), "
	  "('rep', count column, literal), and a comma-separated run of values per row: ('si', start column, "
	  "count column, int64/int32 values), ('sf1n', ..., float64 values: as f1n), ('se', ..., index values, "
	  "fragments)" },
	{ "pack_rows", ftf_py_pack_rows, METH_VARARGS,
	  "pack_rows(template, nrows) -> bytes: a protocol-buffer message per row 0..nrows-1 (report/native/pbrows.c): "
	  "bytes literals, ('v', int64 column) varints, ('d', float64 column), ('e', int64 column, [bytes]), "
	  "'(' ... ')' a length-delimited body, ('?', int64 column) ... '/' only where non-zero" },
	{ "nest_calls", ftf_py_nest_calls, METH_VARARGS,
	  "nest_calls(parent, start, end, order) -> bytes of int64 events (row: begin, -1-row: end): "
	  "start and end (int64, written) made to nest; report/native/pbrows.c" },
	{ "evented_json", ftf_py_evented_json, METH_VARARGS,
	  "evented_json(events, frame, wrap, start, end, t0) -> bytes: speedscope's evented events of a batch "
	  "(event e: row e opens, -1-e: it closes), each ',{...}'; report/native/pbrows.c" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef moduledef = {
	PyModuleDef_HEAD_INIT, "_rowfmt", "ftflame's row-template formatter: the JSON renderer's rows", -1, methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rowfmt(void)
{
	return PyModule_Create(&moduledef);
}
