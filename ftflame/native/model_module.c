/* CPython binding of the model's native parts: ftflame._model.
 *
 * hist_percentiles (percentiles.c): the Profile's per-call-path percentiles;
 * hist_group (hist_group.c): its per-function histograms; tree_preorder
 * (tree_order.c): the call tree's canonical order. Both are
 * figures of the Profile, computed once beside it (ftflame/model/profile.py) and
 * read by every renderer, so they live with the model, not with the trace
 * reader (parse._core) nor with one renderer. The arguments are checked
 * here, with the GIL held; the work runs with it released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "hist_group.h"
#include "percentiles.h"
#include "tree_order.h"

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

/* The table's rows `at` (n of them) are rows of it, each sound as check_csr
 * asks: only their entries are looked at (a chunk of a big table). */
static int check_rows(const int64_t *offs, Py_ssize_t rows, Py_ssize_t nbuckets, const int32_t *bks,
		      Py_ssize_t nmids, const int64_t *at, Py_ssize_t n)
{
	for (Py_ssize_t i = 0; i < n; i++) {
		int64_t r = at[i];
		if (r < 0 || r >= rows) {
			PyErr_Format(PyExc_ValueError, "hist_percentiles: row %lld past the table", (long long)r);
			return -1;
		}
		if (offs[r] < 0 || offs[r] > offs[r + 1] || offs[r + 1] > nbuckets) {
			PyErr_SetString(PyExc_ValueError, "hist_percentiles: offsets not ascending within the entries");
			return -1;
		}
		for (int64_t e = offs[r]; e < offs[r + 1]; e++) {
			if (bks[e] < 0 || bks[e] >= nmids) {
				PyErr_SetString(PyExc_ValueError, "hist_percentiles: a bucket past the mids table");
				return -1;
			}
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
	if (at ? check_rows(v[0].buf, rows, v[1].shape[0], v[1].buf, v[3].shape[0], at, n) < 0
	       : check_csr(v[0].buf, rows, v[1].shape[0], v[1].buf, v[3].shape[0]) < 0)
		goto done;
	out = PyBytes_FromStringAndSize(NULL, n * nq * 8);
	if (!out)
		goto done;
	int64_t *res = (int64_t *)PyBytes_AS_STRING(out);
	const int64_t *lo = v[nv - 2].buf, *hi = v[nv - 1].buf;
	Py_BEGIN_ALLOW_THREADS
	ftf_hist_percentiles(v[0].buf, at, (size_t)n, v[1].buf, v[2].buf, wide, v[3].buf, lo, hi, frac, (size_t)nq,
			     res);
	Py_END_ALLOW_THREADS
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
