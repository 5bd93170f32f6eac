/* CPython binding of the model's native parts: ftflame._model.
 *
 * hist_percentiles (percentiles.c): the Profile's per-call-path percentiles;
 * hist_group (hist_group.c): its per-function histograms; tree_preorder
 * (tree_order.c): the call tree's canonical order; group_reduce
 * (group_reduce.c): the function table's sums and extremes; irq_roots_up and
 * clamp_down (tree_pass.c): the correction's passes over the tree;
 * bits_down_up (tree_pass.c): the operations' call paths. All are
 * figures of the Profile, computed once beside it (ftflame/model/profile.py) and
 * read by every renderer, so they live with the model, not with the trace
 * reader (parse._core) nor with one renderer. The arguments are checked
 * here, with the GIL held; the work runs with it released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "group_reduce.h"
#include "hist_group.h"
#include "percentiles.h"
#include "tree_order.h"
#include "tree_pass.h"

/* views[*nv]: obj as a C-contiguous 1-d buffer (of n items unless n < 0)
 * whose struct format is one of `formats` (e.g. "ql": int64) with the given
 * itemsize; *nv counts the views to release. what: "function: argument". */
static int take_flat_as(PyObject *obj, Py_buffer *views, int *nv, const char *formats, Py_ssize_t itemsize,
			Py_ssize_t n, const char *what, int flags)
{
	Py_buffer *v = &views[*nv];
	if (PyObject_GetBuffer(obj, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | flags) < 0)
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

static int take_flat(PyObject *obj, Py_buffer *views, int *nv, const char *formats, Py_ssize_t itemsize,
		     Py_ssize_t n, const char *what)
{
	return take_flat_as(obj, views, nv, formats, itemsize, n, what, 0);
}

/* take_flat of obj unless it is None (then *buf stays NULL). */
static int take_optional(PyObject *obj, Py_buffer *views, int *nv, const char *formats, Py_ssize_t itemsize,
			 Py_ssize_t n, const char *what, const void **buf)
{
	*buf = NULL;
	if (obj == Py_None)
		return 0;
	if (take_flat(obj, views, nv, formats, itemsize, n, what) < 0)
		return -1;
	*buf = views[*nv - 1].buf;
	return 0;
}

/* The tree's levels for tree_pass.c: order (int32) holds rows, level_at
 * (int64) ascends from 0 to n, and the parent (int32) of each row that
 * reads it (below the top level; with `counted`, the counted rows only) is
 * a row: the passes index by them. *nlevels set; -1 with an exception set. */
static int check_levels(Py_buffer *v, int at, Py_ssize_t n, const uint8_t *counted, size_t *nlevels,
			const char *who)
{
	const int32_t *order = v[at].buf, *parent = v[at + 2].buf;
	const int64_t *level_at = v[at + 1].buf;
	Py_ssize_t nl = v[at + 1].shape[0] - 1;
	if (v[at].shape[0] != n || nl < 0 || level_at[0] != 0 || level_at[nl] != n) {
		PyErr_Format(PyExc_ValueError, "%s: the levels do not cover the rows", who);
		return -1;
	}
	for (Py_ssize_t d = 0; d < nl; d++) {
		if (level_at[d] > level_at[d + 1]) {
			PyErr_Format(PyExc_ValueError, "%s: level bounds not ascending", who);
			return -1;
		}
		for (int64_t i = level_at[d]; i < level_at[d + 1]; i++) {
			int32_t r = order[i];
			if (r < 0 || r >= n) {
				PyErr_Format(PyExc_ValueError, "%s: row %lld out of range", who, (long long)r);
				return -1;
			}
			if ((counted ? counted[r] : d > 0) && (parent[r] < 0 || parent[r] >= n)) {
				PyErr_Format(PyExc_ValueError, "%s: row %lld: parent %lld out of range", who,
					     (long long)r, (long long)parent[r]);
				return -1;
			}
		}
	}
	*nlevels = (size_t)nl;
	return 0;
}

/* A histogram table as three flat buffers pushed on views: offsets (int64,
 * rows + 1 of them), buckets (int32) and counts (uint32, or uint64: *wide
 * set), one count per bucket entry. Sets *rows; -1 with an exception set. */
static int take_hists(PyObject *o_offs, PyObject *o_bks, PyObject *o_cnts, Py_buffer *v, int *nv,
		      Py_ssize_t *rows, int *wide, const char *who)
{
	char what[96];
	snprintf(what, sizeof(what), "%s: offsets", who);
	if (take_flat(o_offs, v, nv, "ql", 8, -1, what) < 0)
		return -1;
	*rows = v[*nv - 1].shape[0] - 1;
	if (*rows < 0) {
		PyErr_Format(PyExc_ValueError, "%s: offsets: empty", who);
		return -1;
	}
	snprintf(what, sizeof(what), "%s: buckets", who);
	if (take_flat(o_bks, v, nv, "i", 4, -1, what) < 0)
		return -1;
	Py_ssize_t nbuckets = v[*nv - 1].shape[0];
	*wide = 0;
	snprintf(what, sizeof(what), "%s: counts", who);
	if (take_flat(o_cnts, v, nv, "I", 4, nbuckets, what) < 0) {
		PyErr_Clear();
		snprintf(what, sizeof(what), "%s: counts (uint32 or uint64)", who);
		if (take_flat(o_cnts, v, nv, "QL", 8, nbuckets, what) < 0)
			return -1;
		*wide = 1;
	}
	return 0;
}

/* The percentiles qs (0..100) as fractions; NULL with an exception set. */
static double *fractions_of(PyObject *qs, Py_ssize_t nq)
{
	double *frac = PyMem_Calloc((size_t)nq + 1, sizeof(double));
	if (!frac)
		return (double *)PyErr_NoMemory();
	for (Py_ssize_t j = 0; j < nq; j++) {
		frac[j] = PyFloat_AsDouble(PyTuple_GET_ITEM(qs, j)) / 100.0;
		if (frac[j] == -1.0 / 100.0 && PyErr_Occurred()) {
			PyMem_Free(frac);
			return NULL;
		}
	}
	return frac;
}

/* The CSR structure is sound: offsets ascending within the entries, every
 * bucket inside the mids table. */
static int check_csr(const int64_t *offs, Py_ssize_t rows, Py_ssize_t nbuckets, const int32_t *bks,
		     Py_ssize_t nmids)
{
	Py_ssize_t entries = offs[rows];
	if (entries < 0 || entries > nbuckets) {
		PyErr_SetString(PyExc_ValueError, "hist_percentiles: offsets past the entries");
		return -1;
	}
	for (Py_ssize_t i = 0; i < rows; i++) {
		if (offs[i] < 0 || offs[i] > offs[i + 1]) {
			PyErr_SetString(PyExc_ValueError, "hist_percentiles: offsets not ascending");
			return -1;
		}
	}
	for (Py_ssize_t e = 0; e < entries; e++) {
		if (bks[e] < 0 || bks[e] >= nmids) {
			PyErr_SetString(PyExc_ValueError, "hist_percentiles: a bucket past the mids table");
			return -1;
		}
	}
	return 0;
}

static PyObject *py_hist_percentiles(PyObject *self, PyObject *args)
{
	PyObject *o_offs, *o_bks, *o_cnts, *o_mids, *o_lo, *o_hi, *o_qs, *o_rows = Py_None;
	if (!PyArg_ParseTuple(args, "OOOOOOO|O", &o_offs, &o_bks, &o_cnts, &o_mids, &o_lo, &o_hi, &o_qs, &o_rows))
		return NULL;
	PyObject *qs = PySequence_Tuple(o_qs);
	if (!qs)
		return NULL;
	Py_ssize_t nq = PyTuple_GET_SIZE(qs);
	double *frac = fractions_of(qs, nq);
	Py_buffer v[7];
	int nv = 0;
	PyObject *out = NULL;
	if (!frac)
		goto done;
	Py_ssize_t rows, n;
	int wide;
	const int64_t *at = NULL;
	if (take_hists(o_offs, o_bks, o_cnts, v, &nv, &rows, &wide, "hist_percentiles") < 0)
		goto done;
	if (take_flat(o_mids, v, &nv, "ql", 8, -1, "hist_percentiles: mids") < 0)
		goto done;
	n = rows;
	if (o_rows != Py_None) { /* those rows of the table, in that order */
		if (take_flat(o_rows, v, &nv, "ql", 8, -1, "hist_percentiles: rows") < 0)
			goto done;
		at = v[4].buf;
		n = v[4].shape[0];
	}
	if (take_flat(o_lo, v, &nv, "ql", 8, n, "hist_percentiles: lo") < 0 ||
	    take_flat(o_hi, v, &nv, "ql", 8, n, "hist_percentiles: hi") < 0)
		goto done;
	/* the whole table checked here; a chunk's rows as they are read */
	if (!at && check_csr(v[0].buf, rows, v[1].shape[0], v[1].buf, v[3].shape[0]) < 0)
		goto done;
	out = PyBytes_FromStringAndSize(NULL, n * nq * 8);
	if (!out)
		goto done;
	int64_t *res = (int64_t *)PyBytes_AS_STRING(out);
	const int64_t *lo = v[nv - 2].buf, *hi = v[nv - 1].buf;
	ftf_hist_bounds bounds = { rows, v[1].shape[0], v[3].shape[0] };
	size_t bad = 0;
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = ftf_hist_percentiles(v[0].buf, at, (size_t)n, v[1].buf, v[2].buf, wide, v[3].buf, lo, hi, frac,
				  (size_t)nq, res, at ? &bounds : NULL, &bad);
	Py_END_ALLOW_THREADS
	if (rc == FTF_PCT_BAD_ROW)
		PyErr_Format(PyExc_ValueError, "hist_percentiles: row %lld past the table", (long long)at[bad]);
	else if (rc == FTF_PCT_BAD_OFFSETS)
		PyErr_SetString(PyExc_ValueError, "hist_percentiles: offsets not ascending within the entries");
	else if (rc == FTF_PCT_BAD_BUCKET)
		PyErr_SetString(PyExc_ValueError, "hist_percentiles: a bucket past the mids table");
	if (rc != FTF_PCT_OK)
		Py_CLEAR(out);
done:
	for (int i = 0; i < nv; i++)
		PyBuffer_Release(&v[i]);
	PyMem_Free(frac);
	Py_DECREF(qs);
	return out;
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
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = ftf_tree_preorder(parent, v[1].buf, v[2].buf, (size_t)n, pre, depth, kids, first, stack);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
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

/* hist_group through a (group x bucket) table up to this many cells (4 MiB:
 * under the keyed passes' row order for 500k call paths and more). */
#define HIST_GROUP_DENSE_CELLS ((size_t)1 << 19)

/* hist_group's result by ftf_hist_group_dense; offs_b made, v as checked. */
static PyObject *group_dense(Py_buffer *v, Py_ssize_t rows, int wide, const int64_t *keys, Py_ssize_t ngroups,
			     int32_t b0, size_t nbr, PyObject *offs_b)
{
	PyObject *bks_b = NULL, *cnts_b = NULL, *out = NULL;
	uint64_t *cells = PyMem_Calloc((size_t)ngroups * nbr + 1, 8);
	if (!cells)
		return PyErr_NoMemory();
	int64_t *offs = (int64_t *)PyBytes_AS_STRING(offs_b);
	Py_BEGIN_ALLOW_THREADS
	ftf_hist_group_dense(v[0].buf, (size_t)rows, v[1].buf, v[2].buf, wide, keys, (size_t)ngroups, b0, nbr, offs,
			     NULL, NULL, cells);
	Py_END_ALLOW_THREADS
	Py_ssize_t entries = (Py_ssize_t)offs[ngroups];
	bks_b = PyBytes_FromStringAndSize(NULL, entries * 4);
	cnts_b = PyBytes_FromStringAndSize(NULL, entries * 8);
	if (bks_b && cnts_b) {
		int32_t *out_bks = (int32_t *)PyBytes_AS_STRING(bks_b);
		uint64_t *out_cnts = (uint64_t *)PyBytes_AS_STRING(cnts_b);
		Py_BEGIN_ALLOW_THREADS
		ftf_hist_group_dense(v[0].buf, (size_t)rows, v[1].buf, v[2].buf, wide, keys, (size_t)ngroups, b0, nbr,
				     offs, out_bks, out_cnts, cells);
		Py_END_ALLOW_THREADS
		out = Py_BuildValue("(OOO)", offs_b, bks_b, cnts_b);
	}
	Py_XDECREF(bks_b);
	Py_XDECREF(cnts_b);
	PyMem_Free(cells);
	return out;
}

static PyObject *py_hist_group(PyObject *self, PyObject *args)
{
	PyObject *o_offs, *o_bks, *o_cnts, *o_keys;
	Py_ssize_t ngroups;
	if (!PyArg_ParseTuple(args, "OOOOn", &o_offs, &o_bks, &o_cnts, &o_keys, &ngroups))
		return NULL;
	Py_buffer v[4];
	int nv = 0;
	PyObject *offs_b = NULL, *bks_b = NULL, *cnts_b = NULL, *out = NULL;
	int64_t *order = NULL, *starts = NULL, *seen = NULL;
	uint64_t *sums = NULL;
	if (ngroups < 0) {
		PyErr_SetString(PyExc_ValueError, "hist_group: ngroups < 0");
		goto done;
	}
	Py_ssize_t rows;
	int wide;
	if (take_hists(o_offs, o_bks, o_cnts, v, &nv, &rows, &wide, "hist_group") < 0)
		goto done;
	if (take_flat(o_keys, v, &nv, "ql", 8, rows, "hist_group: keys") < 0)
		goto done;
	const int32_t *bks = v[1].buf;
	Py_ssize_t nb = 0;
	int32_t b0 = 1 << 16;
	for (Py_ssize_t e = 0; e < v[1].shape[0]; e++) {
		if (bks[e] < 0 || bks[e] >= 1 << 16) { /* the histograms' geometry has about 1,000 */
			PyErr_SetString(PyExc_ValueError, "hist_group: a bucket outside 0..65535");
			goto done;
		}
		if (bks[e] >= nb)
			nb = (Py_ssize_t)bks[e] + 1;
		if (bks[e] < b0)
			b0 = bks[e];
	}
	if (b0 > nb)
		b0 = 0;
	if (check_csr(v[0].buf, rows, v[1].shape[0], bks, nb) < 0)
		goto done;
	const int64_t *keys = v[3].buf;
	for (Py_ssize_t r = 0; r < rows; r++) {
		if (keys[r] < 0 || keys[r] >= ngroups) {
			PyErr_Format(PyExc_ValueError, "hist_group: row %zd: key %lld not in 0..%zd", r,
				     (long long)keys[r], ngroups - 1);
			goto done;
		}
	}
	offs_b = PyBytes_FromStringAndSize(NULL, (ngroups + 1) * 8);
	if (!offs_b)
		goto done;
	size_t nbr = (size_t)(nb - b0);
	if ((size_t)ngroups * nbr <= HIST_GROUP_DENSE_CELLS) {
		out = group_dense(v, rows, wide, keys, ngroups, b0, nbr, offs_b);
		goto done;
	}
	order = PyMem_Malloc((size_t)(rows ? rows : 1) * 8);
	starts = PyMem_Malloc((size_t)(ngroups + 1) * 8);
	sums = PyMem_Malloc((size_t)(nb ? nb : 1) * 8);
	seen = PyMem_Calloc((size_t)(nb ? nb : 1), 8);
	if (!offs_b || !order || !starts || !sums || !seen) {
		PyErr_NoMemory();
		goto done;
	}
	int64_t *offs = (int64_t *)PyBytes_AS_STRING(offs_b);
	Py_BEGIN_ALLOW_THREADS
	ftf_hist_group(v[0].buf, (size_t)rows, bks, v[2].buf, wide, keys, (size_t)ngroups, (size_t)nb, offs, NULL,
		       NULL, order, starts, sums, seen);
	Py_END_ALLOW_THREADS
	Py_ssize_t entries = (Py_ssize_t)offs[ngroups];
	bks_b = PyBytes_FromStringAndSize(NULL, entries * 4);
	cnts_b = PyBytes_FromStringAndSize(NULL, entries * 8);
	if (!bks_b || !cnts_b)
		goto done;
	int32_t *out_bks = (int32_t *)PyBytes_AS_STRING(bks_b);
	uint64_t *out_cnts = (uint64_t *)PyBytes_AS_STRING(cnts_b);
	Py_BEGIN_ALLOW_THREADS
	ftf_hist_group(v[0].buf, (size_t)rows, bks, v[2].buf, wide, keys, (size_t)ngroups, (size_t)nb, offs,
		       out_bks, out_cnts, order, starts, sums, seen);
	Py_END_ALLOW_THREADS
	out = Py_BuildValue("(OOO)", offs_b, bks_b, cnts_b);
done:
	for (int i = 0; i < nv; i++)
		PyBuffer_Release(&v[i]);
	Py_XDECREF(offs_b);
	Py_XDECREF(bks_b);
	Py_XDECREF(cnts_b);
	PyMem_Free(order);
	PyMem_Free(starts);
	PyMem_Free(sums);
	PyMem_Free(seen);
	return out;
}

/* take_flat of an int32 or int64 column; *wide set. */
static int take_ints(PyObject *obj, Py_buffer *v, int *nv, Py_ssize_t n, int *wide, const char *what)
{
	if (take_flat(obj, v, nv, "ql", 8, n, what) == 0) {
		*wide = 1;
		return 0;
	}
	PyErr_Clear();
	*wide = 0;
	return take_flat(obj, v, nv, "i", 4, n, what);
}

static PyObject *py_group_reduce(PyObject *self, PyObject *args)
{
	PyObject *o_keys, *o_values, *o_calls, *o_out;
	int op;
	if (!PyArg_ParseTuple(args, "OOOiO", &o_keys, &o_values, &o_calls, &op, &o_out))
		return NULL;
	if (op < FTF_GROUP_SUM || op > FTF_GROUP_MAX) {
		PyErr_SetString(PyExc_ValueError, "group_reduce: op is 0 (sum), 1 (min) or 2 (max)");
		return NULL;
	}
	Py_buffer v[4];
	int nv = 0, keys_wide, values_wide;
	PyObject *out = NULL;
	const void *calls;
	if (take_flat_as(o_out, v, &nv, "ql", 8, -1, "group_reduce: out", PyBUF_WRITABLE) < 0 ||
	    take_ints(o_keys, v, &nv, -1, &keys_wide, "group_reduce: keys (int32 or int64)") < 0)
		goto done;
	Py_ssize_t ngroups = v[0].shape[0], n = v[1].shape[0];
	if (take_ints(o_values, v, &nv, n, &values_wide, "group_reduce: values (int32 or int64)") < 0 ||
	    take_optional(o_calls, v, &nv, "i", 4, n, "group_reduce: calls", &calls) < 0)
		goto done;
	for (Py_ssize_t i = 0; i < n; i++) {
		int64_t k = keys_wide ? ((const int64_t *)v[1].buf)[i] : ((const int32_t *)v[1].buf)[i];
		if (k < 0 || k >= ngroups) {
			PyErr_Format(PyExc_ValueError, "group_reduce: row %zd: key %lld out of range", i, (long long)k);
			goto done;
		}
	}
	Py_BEGIN_ALLOW_THREADS
	ftf_group_reduce(v[1].buf, keys_wide, v[2].buf, values_wide, calls, (size_t)n, (enum ftf_group_op)op,
			 v[0].buf);
	Py_END_ALLOW_THREADS
	Py_INCREF(Py_None);
	out = Py_None;
done:
	for (int i = 0; i < nv; i++)
		PyBuffer_Release(&v[i]);
	return out;
}

static PyObject *py_irq_roots_up(PyObject *self, PyObject *args)
{
	PyObject *o_order, *o_at, *o_parent, *o_flags, *o_calls, *o_dcalls, *o_dR, *o_R;
	int root_bit, irq_bit;
	if (!PyArg_ParseTuple(args, "OOOOiiOOOO", &o_order, &o_at, &o_parent, &o_flags, &root_bit, &irq_bit, &o_calls,
			      &o_dcalls, &o_dR, &o_R))
		return NULL;
	Py_buffer v[8];
	int nv = 0;
	PyObject *out = NULL;
	const void *dcalls, *dR;
	size_t nlevels;
	if (take_flat_as(o_R, v, &nv, "d", 8, -1, "irq_roots_up: R", PyBUF_WRITABLE) < 0)
		goto done;
	Py_ssize_t n = v[0].shape[0];
	if (take_flat(o_order, v, &nv, "i", 4, -1, "irq_roots_up: order") < 0 ||
	    take_flat(o_at, v, &nv, "ql", 8, -1, "irq_roots_up: level_at") < 0 ||
	    take_flat(o_parent, v, &nv, "i", 4, n, "irq_roots_up: parent") < 0 ||
	    check_levels(v, 1, n, NULL, &nlevels, "irq_roots_up") < 0 ||
	    take_flat(o_flags, v, &nv, "i", 4, n, "irq_roots_up: flags") < 0 ||
	    take_flat(o_calls, v, &nv, "d", 8, n, "irq_roots_up: calls") < 0 ||
	    take_optional(o_dcalls, v, &nv, "i", 4, n, "irq_roots_up: det_calls", &dcalls) < 0 ||
	    take_optional(o_dR, v, &nv, "i", 4, n, "irq_roots_up: det_R", &dR) < 0)
		goto done;
	if (!dcalls != !dR) {
		PyErr_SetString(PyExc_ValueError, "irq_roots_up: det_calls and det_R: both or neither");
		goto done;
	}
	Py_BEGIN_ALLOW_THREADS
	ftf_irq_roots_up(v[1].buf, v[2].buf, nlevels, v[3].buf, v[4].buf, root_bit, irq_bit, v[5].buf, dcalls, dR,
			 v[0].buf);
	Py_END_ALLOW_THREADS
	Py_INCREF(Py_None);
	out = Py_None;
done:
	for (int i = 0; i < nv; i++)
		PyBuffer_Release(&v[i]);
	return out;
}

static PyObject *py_bits_down_up(PyObject *self, PyObject *args)
{
	PyObject *o_order, *o_at, *o_parent, *o_top, *o_inside, *o_outer, *o_holds;
	if (!PyArg_ParseTuple(args, "OOOOOOO", &o_order, &o_at, &o_parent, &o_top, &o_inside, &o_outer, &o_holds))
		return NULL;
	Py_buffer v[7];
	int nv = 0;
	PyObject *out = NULL;
	size_t nlevels;
	if (take_flat(o_top, v, &nv, "QL", 8, -1, "bits_down_up: top") < 0)
		goto done;
	Py_ssize_t n = v[0].shape[0];
	if (take_flat(o_order, v, &nv, "i", 4, -1, "bits_down_up: order") < 0 ||
	    take_flat(o_at, v, &nv, "ql", 8, -1, "bits_down_up: level_at") < 0 ||
	    take_flat(o_parent, v, &nv, "i", 4, n, "bits_down_up: parent") < 0 ||
	    check_levels(v, 1, n, NULL, &nlevels, "bits_down_up") < 0 ||
	    take_flat_as(o_inside, v, &nv, "QL", 8, n, "bits_down_up: inside", PyBUF_WRITABLE) < 0 ||
	    take_flat_as(o_outer, v, &nv, "QL", 8, n, "bits_down_up: outer", PyBUF_WRITABLE) < 0 ||
	    take_flat_as(o_holds, v, &nv, "QL", 8, n, "bits_down_up: holds", PyBUF_WRITABLE) < 0)
		goto done;
	Py_BEGIN_ALLOW_THREADS
	ftf_bits_down_up(v[1].buf, v[2].buf, nlevels, v[3].buf, v[0].buf, v[4].buf, v[5].buf, v[6].buf);
	Py_END_ALLOW_THREADS
	Py_INCREF(Py_None);
	out = Py_None;
done:
	for (int i = 0; i < nv; i++)
		PyBuffer_Release(&v[i]);
	return out;
}

static PyObject *py_clamp_down(PyObject *self, PyObject *args)
{
	PyObject *o_order, *o_at, *o_parent, *o_counted, *o_want, *o_dwant, *o_kid, *o_sw, *o_ci, *o_clamp;
	if (!PyArg_ParseTuple(args, "OOOOOOOOOO", &o_order, &o_at, &o_parent, &o_counted, &o_want, &o_dwant, &o_kid,
			      &o_sw, &o_ci, &o_clamp))
		return NULL;
	Py_buffer v[10];
	int nv = 0;
	PyObject *out = NULL;
	double *scale = NULL;
	const void *dwant, *sw;
	size_t nlevels;
	if (take_flat_as(o_ci, v, &nv, "d", 8, -1, "clamp_down: ci", PyBUF_WRITABLE) < 0)
		goto done;
	Py_ssize_t n = v[0].shape[0];
	if (take_flat(o_order, v, &nv, "i", 4, -1, "clamp_down: order") < 0 ||
	    take_flat(o_at, v, &nv, "ql", 8, -1, "clamp_down: level_at") < 0 ||
	    take_flat(o_parent, v, &nv, "i", 4, n, "clamp_down: parent") < 0 ||
	    take_flat_as(o_clamp, v, &nv, "d", 8, n, "clamp_down: clamp_ns", PyBUF_WRITABLE) < 0 ||
	    take_flat(o_counted, v, &nv, "?", 1, n, "clamp_down: counted") < 0 ||
	    check_levels(v, 1, n, v[5].buf, &nlevels, "clamp_down") < 0 ||
	    take_flat(o_want, v, &nv, "d", 8, n, "clamp_down: want") < 0 ||
	    take_flat(o_kid, v, &nv, "d", 8, n, "clamp_down: kid_want") < 0 ||
	    take_optional(o_dwant, v, &nv, "d", 8, n, "clamp_down: det_want", &dwant) < 0 ||
	    take_optional(o_sw, v, &nv, "d", 8, n, "clamp_down: switch_ns", &sw) < 0)
		goto done;
	scale = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(double));
	if (!scale) {
		PyErr_NoMemory();
		goto done;
	}
	Py_BEGIN_ALLOW_THREADS
	ftf_clamp_down(v[1].buf, v[2].buf, nlevels, v[3].buf, v[5].buf, v[6].buf, dwant, v[7].buf, sw, v[0].buf,
		       v[4].buf, scale);
	Py_END_ALLOW_THREADS
	Py_INCREF(Py_None);
	out = Py_None;
done:
	for (int i = 0; i < nv; i++)
		PyBuffer_Release(&v[i]);
	PyMem_Free(scale);
	return out;
}

static PyMethodDef methods[] = {
	{ "tree_preorder", py_tree_preorder, METH_VARARGS,
	  "tree_preorder(parent, incl, name_rank) -> (pre, depth) as bytes of int64: the rows in "
	  "pre-order, siblings by inclusive time descending, then name rank, then row; each row's depth" },
	{ "hist_group", py_hist_group, METH_VARARGS,
	  "hist_group(offsets, buckets, counts, keys, ngroups) -> (offsets, buckets, counts) as bytes of "
	  "int64, int32, uint64: the CSR rows merged per key (0..ngroups-1), one entry per bucket any of "
	  "a group's rows has, buckets ascending, counts summed" },
	{ "hist_percentiles", py_hist_percentiles, METH_VARARGS,
	  "hist_percentiles(offsets, buckets, counts, mids, lo, hi, qs[, rows]) -> bytes of rows x len(qs) int64: "
	  "per CSR row (or per row of the int64 `rows`, lo and hi one per row given), each percentile q (0..100) "
	  "as mids[bucket] of the first bucket whose running count reaches ceil(total * q / 100) (at least 1), "
	  "clamped to [lo, hi]; 0 for empty rows" },
	{ "group_reduce", py_group_reduce, METH_VARARGS,
	  "group_reduce(keys, values, calls, op, out): per key (0..len(out)-1), values summed (op 0, wrapping as "
	  "int64), or their least (1) or greatest (2), into out (int64, each group's starting value), over the "
	  "rows with calls > 0 (int32) or every row (None); keys and values int32 or int64" },
	{ "irq_roots_up", py_irq_roots_up, METH_VARARGS,
	  "irq_roots_up(order, level_at, parent, flags, root_bit, irq_bit, calls, det_calls, det_R, R): the "
	  "interrupt subtrees inside each row's clean calls summed into R (n zeros), levels from the deepest up "
	  "(tree_pass.h); det_calls and det_R None without detached calls" },
	{ "bits_down_up", py_bits_down_up, METH_VARARGS,
	  "bits_down_up(order, level_at, parent, top, inside, outer, holds): bit sets (uint64) carried down the "
	  "tree's levels (inside, outer) and back up (holds); ftflame/native/tree_pass.c" },
	{ "clamp_down", py_clamp_down, METH_VARARGS,
	  "clamp_down(order, level_at, parent, counted, want, det_want, kid_want, switch_ns, ci, clamp_ns): the "
	  "corrected inclusive times clamped from the roots down into ci (want on entry), the excess added to "
	  "clamp_ns (tree_pass.h); det_want and switch_ns may be None" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef moduledef = {
	PyModuleDef_HEAD_INIT, "_model",
	"ftflame's model, native parts: histogram percentiles and groups, the tree order", -1,
	methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__model(void)
{
	return PyModule_Create(&moduledef);
}
