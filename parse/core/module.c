/* CPython binding of the C core: ftflame.parse._core.
 *
 * A plain CPython extension (not cffi): the whole read runs in C with the GIL
 * released, and only the finished aggregate (O(call paths + root calls)) is
 * converted to Python objects once, at the end. No Python runs per event.
 *
 * Only the reader and the call builder live here; the JSON row formatter is
 * report._rowfmt (report/native), the Profile's percentiles and tree order
 * ftflame._model (ftflame/native).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ftf.h"
#include "dat.h"
#include "mem.h"

#include <sys/mman.h>
#include <unistd.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

/* After a read: the builder's memory, freed, back to the system. The
 * builder ran on a thread of its own, so glibc kept its blocks in that
 * thread's arena, where the main thread's later allocations (the Profile's
 * columns, the renderers') never reuse them: 15-30 MB of peak RSS for
 * nothing on a 3 M-event trace. A few ms. */
static void give_back_freed_memory(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

/* The node and sample tables, written by position: the sample table one
 * int64 per column, the node table each column in its width (node_width).
 * Their names, in column order, are exported as NODE_COLUMNS and
 * SAMPLE_COLUMNS (the node columns' dtypes as NODE_DTYPES); ftflame/model/profile.py
 * names the columns the same way, and parse/tables.py checks both against these when
 * it is imported. */
#define SUM_COLS 12 /* the ftf_sums fields, in sums_put's order */
enum {
	COL_PARENT, COL_FUNC, COL_FLAGS,
	COL_SUMS,                      /* over all completed calls */
	COL_GAP_SUMS = COL_SUMS + SUM_COLS, /* over the gap calls among them */
	COL_DET_SUMS = COL_GAP_SUMS + SUM_COLS, /* over the kept calls whose caller is left out */
	COL_GROOT_SUMS = COL_DET_SUMS + SUM_COLS, /* irq roots: over the kept calls in a left-out root call */
	COL_INCL_MIN = COL_GROOT_SUMS + SUM_COLS, COL_INCL_MAX, COL_EXCL_MIN, COL_EXCL_MAX,
	COL_DET_IRQ_ROOTS, COL_MIGRATED, COL_OPEN_END, COL_UNTERMINATED, COL_UNOWNED_CHILD_INCL, COL_IRQ_EARLY,
	COL_ROOTS, COL_FUNC_ROOTS, COL_DEPTH,
	NODE_COLS
};
#define SUM_NAMES(prefix) prefix "calls", prefix "incl", prefix "excl", prefix "desc", prefix "nchild", \
	prefix "irq", prefix "irq_calls", prefix "offcpu", prefix "sched", prefix "sched_calls", prefix "sched_outs", \
	prefix "offcpu_calls"
static const char *const node_columns[] = {
	"parent", "func", "flags", SUM_NAMES(""), SUM_NAMES("gap_"), SUM_NAMES("det_"), SUM_NAMES("groot_"),
	"incl_min", "incl_max", "excl_min", "excl_max",
	"det_irq_roots", "migrated", "open_end", "unterminated", "unowned_child_incl", "irq_early", "roots",
	"func_roots", "depth",
};
_Static_assert(sizeof(node_columns) / sizeof(node_columns[0]) == NODE_COLS, "a name per node column");

/* Each node column's width in bytes (exported as NODE_DTYPES, "<i4" or
 * "<i8"): identifiers and counts in 32 bits (a count is at most the trace's
 * calls, checked as the table is written), nanoseconds in 64. The narrow
 * columns are 8 MB less for 125k call paths. */
static const unsigned char node_width[NODE_COLS] = {
	[COL_PARENT] = 4, [COL_FUNC] = 4, [COL_FLAGS] = 4,
	[COL_SUMS + 0] = 4, [COL_SUMS + 1] = 8, [COL_SUMS + 2] = 8, [COL_SUMS + 3] = 4, [COL_SUMS + 4] = 4,
	[COL_SUMS + 5] = 8, [COL_SUMS + 6] = 4, [COL_SUMS + 7] = 8, [COL_SUMS + 8] = 8, [COL_SUMS + 9] = 4,
	[COL_SUMS + 10] = 4, [COL_SUMS + 11] = 4,
	[COL_GAP_SUMS + 0] = 4, [COL_GAP_SUMS + 1] = 8, [COL_GAP_SUMS + 2] = 8, [COL_GAP_SUMS + 3] = 4,
	[COL_GAP_SUMS + 4] = 4, [COL_GAP_SUMS + 5] = 8, [COL_GAP_SUMS + 6] = 4, [COL_GAP_SUMS + 7] = 8,
	[COL_GAP_SUMS + 8] = 8, [COL_GAP_SUMS + 9] = 4, [COL_GAP_SUMS + 10] = 4, [COL_GAP_SUMS + 11] = 4,
	[COL_DET_SUMS + 0] = 4, [COL_DET_SUMS + 1] = 8, [COL_DET_SUMS + 2] = 8, [COL_DET_SUMS + 3] = 4,
	[COL_DET_SUMS + 4] = 4, [COL_DET_SUMS + 5] = 8, [COL_DET_SUMS + 6] = 4, [COL_DET_SUMS + 7] = 8,
	[COL_DET_SUMS + 8] = 8, [COL_DET_SUMS + 9] = 4, [COL_DET_SUMS + 10] = 4, [COL_DET_SUMS + 11] = 4,
	[COL_GROOT_SUMS + 0] = 4, [COL_GROOT_SUMS + 1] = 8, [COL_GROOT_SUMS + 2] = 8, [COL_GROOT_SUMS + 3] = 4,
	[COL_GROOT_SUMS + 4] = 4, [COL_GROOT_SUMS + 5] = 8, [COL_GROOT_SUMS + 6] = 4, [COL_GROOT_SUMS + 7] = 8,
	[COL_GROOT_SUMS + 8] = 8, [COL_GROOT_SUMS + 9] = 4, [COL_GROOT_SUMS + 10] = 4, [COL_GROOT_SUMS + 11] = 4,
	[COL_INCL_MIN] = 8, [COL_INCL_MAX] = 8, [COL_EXCL_MIN] = 8, [COL_EXCL_MAX] = 8,
	[COL_DET_IRQ_ROOTS] = 4, [COL_MIGRATED] = 4, [COL_OPEN_END] = 4, [COL_UNTERMINATED] = 4,
	[COL_UNOWNED_CHILD_INCL] = 8,
	[COL_IRQ_EARLY] = 4, [COL_ROOTS] = 4, [COL_FUNC_ROOTS] = 4, [COL_DEPTH] = 4,
};

/* The largest value a 32-bit node column takes: INT32_MAX, lowered by
 * tests (_core._set_narrow_max) to show the check without 2^31 calls. */
static int64_t narrow_max = INT32_MAX;

static const char *const sample_columns[] = {
	"node", "pid", "cpu", "flags", "calltime", "dur", "desc", "irq", "offcpu", "irq_calls", "irq_roots",
	"leaf_min", "leaves", "op", "sched", "sched_calls", "sched_outs", "offcpu_calls", "switches", "retval",
	"subbufs",
};
#define SAMPLE_COLS FTF_SCOLS
_Static_assert(sizeof(sample_columns) / sizeof(sample_columns[0]) == SAMPLE_COLS, "a name per sample column");

/* The calls of a kept slowest root call (root_calls.c), entry order, cross as
 * their compact records (ftf_rec: 32-bit fields, these names) and the extra
 * figures beside them (ftf_rec_extra: record, field id, value; the field ids
 * name these figures). */
static const char *const rec_fields[] = { "func", "parent", "start", "dur", "desc_flags" };
_Static_assert(sizeof(rec_fields) / sizeof(rec_fields[0]) * 4 == sizeof(ftf_rec), "a name per record field");
static const char *const rec_extra_fields[] = { "start", "dur", "desc", "irq", "offcpu", "irq_roots", "cpu",
						 "sched", "sched_calls", "sched_outs", "offcpu_calls", "retval",
						 "arg0", "arg1", "arg2", "arg3", "arg4", "arg5" };
_Static_assert(sizeof(rec_extra_fields) / sizeof(rec_extra_fields[0]) == FTF_EX_FIELDS, "a name per extra field");
_Static_assert(sizeof(ftf_rec_extra) == 16, "extras cross as 16-byte rows");

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
	row[8] = (int64_t)s->sched;
	row[9] = (int64_t)s->sched_calls;
	row[10] = (int64_t)s->sched_outs;
	row[11] = (int64_t)s->offcpu_calls;
}

/* A histogram set in CSR form: offsets[n+1], buckets[], counts[]; histogram
 * i at base + i * stride. */
static int hists_csr_of(const char *base, size_t stride, uint32_t nrows, PyObject **offs, PyObject **bks,
			PyObject **cnts)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < nrows; i++) {
		const ftf_hist *h = (const ftf_hist *)(base + i * stride);
		const uint32_t *dense = ftf_hist_dense(h);
		if (dense) {
			for (uint32_t k = 0; k < FTF_HIST_BUCKETS; k++)
				total += dense[k] != 0;
		} else {
			total += ftf_hist_nsparse(h);
		}
	}
	*offs = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(nrows + 1) * 8);
	*bks = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total * 4);
	*cnts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total * 4);
	if (!*offs || !*bks || !*cnts)
		return -1;
	int64_t *o = (int64_t *)PyBytes_AS_STRING(*offs);
	int32_t *bk = (int32_t *)PyBytes_AS_STRING(*bks);
	uint32_t *ct = (uint32_t *)PyBytes_AS_STRING(*cnts);
	uint64_t pos = 0;
	for (uint32_t i = 0; i < nrows; i++) {
		const ftf_hist *h = (const ftf_hist *)(base + i * stride);
		o[i] = (int64_t)pos;
		const uint32_t *dense = ftf_hist_dense(h);
		if (dense) {
			for (uint32_t k = 0; k < FTF_HIST_BUCKETS; k++) {
				if (dense[k]) {
					bk[pos] = (int32_t)k;
					ct[pos++] = dense[k];
				}
			}
		} else {
			/* sparse entries are in frequency order: sort by bucket (n <= 32) */
			uint64_t s0 = pos;
			for (uint32_t k = 0, n = ftf_hist_nsparse(h); k < n; k++) {
				uint32_t bucket, count;
				ftf_hist_sparse_at(h, k, &bucket, &count);
				uint64_t j = pos++;
				while (j > s0 && (uint32_t)bk[j - 1] > bucket) {
					bk[j] = bk[j - 1];
					ct[j] = ct[j - 1];
					j--;
				}
				bk[j] = (int32_t)bucket;
				ct[j] = count;
			}
		}
	}
	o[nrows] = (int64_t)pos;
	return 0;
}

static int hists_csr(const ftf_builder *b, int excl, PyObject **offs, PyObject **bks, PyObject **cnts)
{
	const ftf_node *n0 = b->nodes;
	const char *base = n0 ? (const char *)(excl ? &n0->hist_excl : &n0->hist_incl) : NULL;
	return hists_csr_of(base, sizeof(ftf_node), b->nnodes, offs, bks, cnts);
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

static PyObject *str_list(char *const *names, uint32_t n)
{
	PyObject *l = PyList_New(n);
	for (uint32_t i = 0; l && i < n; i++) {
		const char *c = names[i] ? names[i] : "";
		PyObject *s = PyUnicode_DecodeUTF8(c, strlen(c), "replace");
		if (!s) {
			Py_CLEAR(l);
			break;
		}
		PyList_SET_ITEM(l, i, s);
	}
	return l;
}

/* Operations (labels, how each was recognised) and the slowest root calls
 * as blocks: {"table": int64 rows of (sample index, base calltime (its
 * 64 bits), base CPU, records, extras; records -1 when the tree was too big
 * to keep), "recs": every kept tree's ftf_rec one tree after the other,
 * "extras": their ftf_rec_extra likewise}. A trace may keep a tree per
 * distinct root function: an object per tree cost more than its calls. */
/* The kept slowest calls' table: (sample, base, cpu, records (-1: no
 * tree), extras, kept by: 1 raw duration, 2 on-CPU time, 3 both, the
 * on-CPU time it was kept by (-1: kept by raw duration only)). The on-CPU
 * heap holds FTF_SLOWEST_CANDIDATES x N: Python picks N of them. */
#define KEPT_COLS 7

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int calls_result(ftf_builder *b, PyObject *res)
{
	PyObject *ops = str_list(b->root_calls.ops.names, b->root_calls.ops.n);
	if (!ops || PyDict_SetItemString(res, "ops", ops) < 0) {
		Py_XDECREF(ops);
		return -1;
	}
	Py_DECREF(ops);
	PyObject *how = str_list(b->root_calls.op_how, b->root_calls.op_how ? b->root_calls.ops.n : 0);
	if (!how || PyDict_SetItemString(res, "op_how", how) < 0) {
		Py_XDECREF(how);
		return -1;
	}
	Py_DECREF(how);
	/* each group's calls kept by raw duration, then those kept by on-CPU
	 * time only: a call kept by both is one row (column 5: 1 raw, 2 on-CPU) */
	uint64_t n = 0, nrecs = 0, nextras = 0, cut = 0;
	uint32_t most = 0;
	for (uint32_t g = 0; g < b->root_calls.nslow; g++) {
		const ftf_slow_group *sg = &b->root_calls.slow[g];
		most = sg->n > most ? sg->n : most;
		most = sg->n_c > most ? sg->n_c : most;
	}
	uint64_t *raw_samples = malloc(((size_t)most + 1) * sizeof(uint64_t) * 2);
	if (!raw_samples) {
		PyErr_NoMemory();
		return -1;
	}
	for (int pass = 0; pass < 2; pass++) {
		int64_t *row = NULL;
		char *rp = NULL, *ep = NULL;
		if (pass) {
			PyObject *slow = PyDict_New();
			if (!slow || PyDict_SetItemString(res, "slowest", slow) < 0) {
				Py_XDECREF(slow);
				free(raw_samples);
				return -1;
			}
			Py_DECREF(slow);
			Py_ssize_t tb = (Py_ssize_t)(n * KEPT_COLS * sizeof(int64_t));
			Py_ssize_t rb = (Py_ssize_t)(nrecs * sizeof(ftf_rec));
			Py_ssize_t eb = (Py_ssize_t)(nextras * sizeof(ftf_rec_extra));
			PyObject *table = PyBytes_FromStringAndSize(NULL, tb);
			PyObject *recs = PyBytes_FromStringAndSize(NULL, rb);
			PyObject *extras = PyBytes_FromStringAndSize(NULL, eb);
			if (!table || !recs || !extras || PyDict_SetItemString(slow, "table", table) < 0 ||
			    PyDict_SetItemString(slow, "recs", recs) < 0 ||
			    PyDict_SetItemString(slow, "extras", extras) < 0) {
				Py_XDECREF(table);
				Py_XDECREF(recs);
				Py_XDECREF(extras);
				free(raw_samples);
				return -1;
			}
			row = (int64_t *)PyBytes_AS_STRING(table);
			rp = PyBytes_AS_STRING(recs);
			ep = PyBytes_AS_STRING(extras);
			Py_DECREF(table);
			Py_DECREF(recs);
			Py_DECREF(extras);
		}
		for (uint32_t g = 0; g < b->root_calls.nslow; g++) {
			const ftf_slow_group *sg = &b->root_calls.slow[g];
			/* the samples of both heaps, sorted: which calls both kept */
			uint64_t *cs = raw_samples, *rs = raw_samples + most;
			for (uint32_t k = 0; k < sg->n_c; k++)
				cs[k] = sg->heap_c[k].sample;
			qsort(cs, sg->n_c, sizeof(*cs), cmp_u64);
			for (uint32_t k = 0; k < sg->n; k++)
				rs[k] = sg->heap[k].sample;
			qsort(rs, sg->n, sizeof(*rs), cmp_u64);
			for (uint32_t k = 0; k < sg->n + sg->n_c; k++) {
				int by_raw = k < sg->n;
				const ftf_kept *kp = by_raw ? &sg->heap[k] : &sg->heap_c[k - sg->n];
				int in_c = bsearch(&kp->sample, cs, sg->n_c, sizeof(*cs), cmp_u64) != NULL;
				if (!by_raw && bsearch(&kp->sample, rs, sg->n, sizeof(*rs), cmp_u64))
					continue; /* kept by both: its raw row says so */
				if (!pass) {
					n++;
					if (kp->recs) {
						nrecs += kp->nrecs;
						nextras += kp->nextras;
					} else {
						cut++;
					}
					continue;
				}
				row[0] = (int64_t)kp->sample;
				row[1] = (int64_t)kp->base;
				row[2] = kp->cpu;
				row[3] = kp->recs ? (int64_t)kp->nrecs : -1;
				row[4] = kp->recs ? (int64_t)kp->nextras : 0;
				row[5] = by_raw ? (in_c ? 3 : 1) : 2;
				row[6] = -1;
				if (!by_raw)
					row[6] = (int64_t)kp->dur;
				else if (in_c) /* the on-CPU heap's entry of the same call: its key */
					for (uint32_t j = 0; j < sg->n_c; j++)
						if (sg->heap_c[j].sample == kp->sample) {
							row[6] = (int64_t)sg->heap_c[j].dur;
							break;
						}
				row += KEPT_COLS;
				if (!kp->recs)
					continue;
				if (kp->nrecs) {
					memcpy(rp, kp->recs, (size_t)kp->nrecs * sizeof(ftf_rec));
					rp += (size_t)kp->nrecs * sizeof(ftf_rec);
				}
				if (kp->nextras) {
					memcpy(ep, kp->extras, (size_t)kp->nextras * sizeof(ftf_rec_extra));
					ep += (size_t)kp->nextras * sizeof(ftf_rec_extra);
				}
			}
		}
	}
	free(raw_samples);
	b->root_calls.slow_cut = cut; /* the rows without their tree (counters_dict) */
	return 0;
}

/* The function names, by id. */
static PyObject *funcs_list(const ftf_builder *b)
{
	PyObject *funcs = PyList_New(b->funcs.n);
	if (!funcs)
		return NULL;
	for (uint32_t i = 0; i < b->funcs.n; i++) {
		PyObject *s = PyUnicode_DecodeUTF8(b->funcs.names[i], strlen(b->funcs.names[i]), "replace");
		if (!s) {
			Py_DECREF(funcs);
			return NULL;
		}
		PyList_SET_ITEM(funcs, i, s);
	}
	return funcs;
}

/* A block from malloc, read through the buffer protocol (np.frombuffer) and
 * freed with the object: the node table reaches numpy where the builder
 * wrote it, without a copy (a copy was 29 MB more peak for 125k paths). */
typedef struct {
	PyObject_HEAD
	void *data;
	Py_ssize_t len;
} ftf_block;

static int block_getbuffer(PyObject *o, Py_buffer *view, int flags)
{
	ftf_block *blk = (ftf_block *)o;
	return PyBuffer_FillInfo(view, o, blk->data, blk->len, 1, flags);
}

static void block_dealloc(PyObject *o)
{
	free(((ftf_block *)o)->data);
	Py_TYPE(o)->tp_free(o);
}

static PyBufferProcs block_as_buffer = { block_getbuffer, NULL };

static Py_ssize_t block_length(PyObject *o)
{
	return ((ftf_block *)o)->len;
}

static PySequenceMethods block_as_sequence = { .sq_length = block_length };

/* == and != by content against any bytes-like object, as for bytes: two
 * reads of a trace are compared table by table (the reader parity test). */
static PyObject *block_richcompare(PyObject *a, PyObject *other, int op)
{
	if ((op != Py_EQ && op != Py_NE) || !PyObject_CheckBuffer(other))
		Py_RETURN_NOTIMPLEMENTED;
	Py_buffer view;
	if (PyObject_GetBuffer(other, &view, PyBUF_SIMPLE) < 0)
		return NULL;
	const ftf_block *blk = (const ftf_block *)a;
	int same = view.len == blk->len && (blk->len == 0 || memcmp(view.buf, blk->data, (size_t)blk->len) == 0);
	PyBuffer_Release(&view);
	return PyBool_FromLong(op == Py_EQ ? same : !same);
}

static PyTypeObject block_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "ftflame.parse._core.Block",
	.tp_basicsize = sizeof(ftf_block),
	.tp_dealloc = block_dealloc,
	.tp_as_buffer = &block_as_buffer,
	.tp_as_sequence = &block_as_sequence,
	.tp_richcompare = block_richcompare,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "a read-only block of memory from the C core (a table), freed with the object",
};

/* Give the memory of [from, to) back to the system (its contents are not
 * needed any more; the block stays allocated, to be freed later), in whole
 * FTF_HUGE units: the node table is a huge-page mapping (ftf_hint_huge), and
 * a range ending inside a huge page would split it first. Returns where the
 * part given back starts: [from, that) is still held. */
static char *release_pages(char *from, char *to)
{
	uintptr_t a = ((uintptr_t)from + FTF_HUGE - 1) & ~(uintptr_t)(FTF_HUGE - 1);
	uintptr_t e = (uintptr_t)to & ~(uintptr_t)(FTF_HUGE - 1);
	if (a >= e)
		return to;
	madvise((void *)a, e - a, MADV_DONTNEED);
	return (char *)a;
}

/* The columns mostly zero on real traces (interrupts, off-CPU time,
 * anomalies), exported as NODE_SPARSE: as their non-zero rows and values
 * only (sparse_col), which is what the Profile keeps of them (NodeTable). */
static const unsigned char node_sparse[NODE_COLS] = {
	[COL_SUMS + 5] = 1, [COL_SUMS + 6] = 1, [COL_SUMS + 7] = 1,
	[COL_SUMS + 8] = 1, [COL_SUMS + 9] = 1, [COL_SUMS + 10] = 1, [COL_SUMS + 11] = 1,
	[COL_GAP_SUMS + 5] = 1, [COL_GAP_SUMS + 6] = 1, [COL_GAP_SUMS + 7] = 1,
	[COL_GAP_SUMS + 8] = 1, [COL_GAP_SUMS + 9] = 1, [COL_GAP_SUMS + 10] = 1, [COL_GAP_SUMS + 11] = 1,
	/* detached calls: only under a gap */
	[COL_DET_SUMS + 0] = 1, [COL_DET_SUMS + 1] = 1, [COL_DET_SUMS + 2] = 1, [COL_DET_SUMS + 3] = 1,
	[COL_DET_SUMS + 4] = 1, [COL_DET_SUMS + 5] = 1, [COL_DET_SUMS + 6] = 1, [COL_DET_SUMS + 7] = 1,
	[COL_DET_SUMS + 8] = 1, [COL_DET_SUMS + 9] = 1, [COL_DET_SUMS + 10] = 1, [COL_DET_SUMS + 11] = 1,
	[COL_GROOT_SUMS + 0] = 1, [COL_GROOT_SUMS + 1] = 1, [COL_GROOT_SUMS + 2] = 1, [COL_GROOT_SUMS + 3] = 1,
	[COL_GROOT_SUMS + 4] = 1, [COL_GROOT_SUMS + 5] = 1, [COL_GROOT_SUMS + 6] = 1, [COL_GROOT_SUMS + 7] = 1,
	[COL_GROOT_SUMS + 8] = 1, [COL_GROOT_SUMS + 9] = 1, [COL_GROOT_SUMS + 10] = 1, [COL_GROOT_SUMS + 11] = 1,
	[COL_DET_IRQ_ROOTS] = 1, [COL_MIGRATED] = 1, [COL_OPEN_END] = 1, [COL_UNTERMINATED] = 1,
	[COL_UNOWNED_CHILD_INCL] = 1,
	[COL_IRQ_EARLY] = 1,
};

/* Where each dense column starts in the node table of n rows (bytes): the
 * columns but the NODE_SPARSE ones, one after another, each 8-byte aligned;
 * returns the table's length. */
static size_t node_offsets(size_t n, size_t off[NODE_COLS])
{
	size_t pos = 0;
	for (int c = 0; c < NODE_COLS; c++) {
		if (!node_sparse[c]) {
			off[c] = pos;
			pos += (n * node_width[c] + 7) & ~(size_t)7;
		}
	}
	return pos;
}

/* A NODE_SPARSE column as its non-zero rows (int32) and values (the
 * column's width), gathered as the table fills, from the last row to the
 * first. Written into dense columns they touched a page of each column per
 * 512-1024 rows: 58 MB of fresh pages for 220k call paths of a lost-event
 * trace, a third of its node table's export, for columns the Profile then
 * scanned for their few non-zero rows and gave back. */
typedef struct {
	int32_t *rows;
	void *values;
	size_t n, cap;
} sparse_col;

static int sparse_put(sparse_col *s, int width, size_t row, int64_t v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		int32_t *rows = realloc(s->rows, cap * sizeof(*rows));
		if (!rows)
			return -1;
		s->rows = rows;
		void *values = realloc(s->values, cap * (size_t)width);
		if (!values)
			return -1;
		s->values = values;
		s->cap = cap;
	}
	s->rows[s->n] = (int32_t)row;
	if (width == 8)
		((int64_t *)s->values)[s->n] = v;
	else
		((int32_t *)s->values)[s->n] = (int32_t)v;
	s->n++;
	return 0;
}

/* Rows ascending: gathered from the last row to the first. */
static void sparse_reverse(sparse_col *s, int width)
{
	for (size_t i = 0, j = s->n; i + 1 < j--; i++) {
		int32_t r = s->rows[i];
		s->rows[i] = s->rows[j];
		s->rows[j] = r;
		if (width == 8) {
			int64_t *v = s->values, t = v[i];
			v[i] = v[j];
			v[j] = t;
		} else {
			int32_t *v = s->values, t = v[i];
			v[i] = v[j];
			v[j] = t;
		}
	}
}

static PyObject *root_column(void **p, size_t len);

/* The node table: NODE_COLS columns of one value per call path (node
 * order). The dense ones in one block (node_offsets), each node_width[]
 * bytes a value, column after column: numpy reads each column as a
 * contiguous array (a column of a row-major table is strided over the whole
 * table: 0.1 s of a 125k-path report went to gathering them). Handed over
 * without a copy. The NODE_SPARSE ones as a (rows, values) pair of blocks
 * each, in NODE_COLUMNS order (sparse_col). The nodes are read from the
 * last to the first and the pages of those read are given back as the
 * columns fill, so the table costs no more peak memory than the nodes it
 * replaces (a node is bigger than its row). A value too big for its 32-bit
 * column is an error naming it, never a wrapped figure. The builder has no
 * nodes afterwards (their histograms are freed here too): this comes after
 * everything else that reads them. Returns (block, ((rows, values), ...)). */
static PyObject *nodes_table(ftf_builder *b)
{
	size_t off[NODE_COLS], n = b->nnodes, len = node_offsets(n, off);
	/* zeroed (a large calloc is fresh pages, zero until written); the
	 * alignment padding after a column reads as zeros too (the table
	 * compares by content) */
	char *cols = len ? calloc(1, len) : NULL;
	if (len && !cols)
		return PyErr_NoMemory();
	ftf_hint_huge(cols, len);
	char *col[NODE_COLS] = { 0 };
	for (int c = 0; cols && c < NODE_COLS; c++)
		col[c] = node_sparse[c] ? NULL : cols + off[c];
	sparse_col sp[NODE_COLS] = { 0 };
	int oom = 0;
	size_t bad_row = 0;
	int bad_col = -1;
	int64_t bad_value = 0;
	char *done = (char *)(b->nodes + n); /* nodes from here on are read and released */
#define PUT(c, v)                                                                          \
	do {                                                                               \
		int64_t _v = (int64_t)(v);                                                 \
		if (node_width[c] == 4 && (_v > narrow_max || _v < -narrow_max - 1) && bad_col < 0) { \
			bad_col = (c);                                                     \
			bad_row = i;                                                       \
			bad_value = _v;                                                    \
		}                                                                          \
		if (node_sparse[c]) {                                                      \
			if (_v && sparse_put(&sp[c], node_width[c], i, _v) < 0)            \
				oom = 1;                                                   \
		} else if (node_width[c] == 8) {                                           \
			((int64_t *)col[c])[i] = _v;                                       \
		} else {                                                                   \
			((int32_t *)col[c])[i] = (int32_t)_v;                              \
		}                                                                          \
	} while (0)
	for (size_t i = n; i-- > 0;) {
		ftf_node *nd = &b->nodes[i];
		ftf_hist_free(&nd->hist_incl);
		ftf_hist_free(&nd->hist_excl);
		PUT(COL_PARENT, nd->parent == FTF_NONE ? -1 : (int64_t)nd->parent);
		PUT(COL_FUNC, nd->func);
		PUT(COL_FLAGS, nd->flags);
		const ftf_node_more *m = ftf_node_more_of(b, nd);
		const ftf_sums all = ftf_node_all(b, nd);
		int64_t row[SUM_COLS];
		sums_put(row, &all);
		/* without rare figures the row's other columns are zero: not put */
		for (int c = 0; c < (m ? SUM_COLS : 5); c++)
			PUT(COL_SUMS + c, row[c]);
		if (m) {
			const ftf_sums *sums[3] = { &m->gap, &m->det, &m->groot };
			static const int first_col[3] = { COL_GAP_SUMS, COL_DET_SUMS, COL_GROOT_SUMS };
			for (int k = 0; k < 3; k++) {
				sums_put(row, sums[k]);
				for (int c = 0; c < SUM_COLS; c++)
					PUT(first_col[k] + c, row[c]);
			}
			PUT(COL_DET_IRQ_ROOTS, m->det_irq_roots);
			PUT(COL_MIGRATED, m->migrated);
			PUT(COL_OPEN_END, m->open_end);
			PUT(COL_UNTERMINATED, m->unterminated);
			PUT(COL_UNOWNED_CHILD_INCL, m->unowned_child_incl);
			PUT(COL_IRQ_EARLY, m->irq_early);
		}
		PUT(COL_INCL_MIN, nd->calls ? (int64_t)nd->incl_min : 0);
		PUT(COL_INCL_MAX, nd->incl_max);
		PUT(COL_EXCL_MIN, nd->calls ? nd->excl_min : 0);
		PUT(COL_EXCL_MAX, nd->calls ? nd->excl_max : 0);
		PUT(COL_ROOTS, nd->roots);
		PUT(COL_FUNC_ROOTS, nd->func_roots);
		if (done - (char *)nd >= (ptrdiff_t)(2 * FTF_HUGE))
			done = release_pages((char *)nd, done);
	}
	/* depth: parents come before their children */
	const int32_t *parent = (const int32_t *)col[COL_PARENT];
	int32_t *depth = (int32_t *)col[COL_DEPTH];
	for (size_t i = 0; i < n; i++)
		PUT(COL_DEPTH, parent[i] < 0 ? 0 : (int64_t)depth[parent[i]] + 1);
#undef PUT
	ftf_blk_free(b->nodes, (size_t)b->capnodes * sizeof(*b->nodes));
	b->nodes = NULL;
	b->nnodes = b->capnodes = 0;
	ftf_blk_free(b->more, (size_t)b->capmore * sizeof(*b->more));
	b->more = NULL;
	b->nmore = b->capmore = 0;
	PyObject *sparse = NULL;
	if (bad_col >= 0) {
		PyErr_Format(PyExc_ValueError,
			     "call path %zu: %s = %lld does not fit the node table's 32-bit column "
			     "(at most %lld): more calls on one path than ftflame can count",
			     bad_row, node_columns[bad_col], (long long)bad_value, (long long)narrow_max);
		goto fail;
	}
	if (oom) {
		PyErr_NoMemory();
		goto fail;
	}
	int nsparse = 0;
	for (int c = 0; c < NODE_COLS; c++)
		nsparse += node_sparse[c];
	if (!(sparse = PyTuple_New(nsparse)))
		goto fail;
	for (int c = 0, k = 0; c < NODE_COLS; c++) {
		if (!node_sparse[c])
			continue;
		sparse_reverse(&sp[c], node_width[c]);
		PyObject *rows = root_column((void **)&sp[c].rows, sp[c].n * sizeof(int32_t));
		PyObject *values = rows ? root_column(&sp[c].values, sp[c].n * node_width[c]) : NULL;
		PyObject *pair = values ? PyTuple_Pack(2, rows, values) : NULL;
		Py_XDECREF(rows);
		Py_XDECREF(values);
		if (!pair)
			goto fail;
		PyTuple_SET_ITEM(sparse, k++, pair);
	}
	ftf_block *dense = PyObject_New(ftf_block, &block_type);
	if (!dense)
		goto fail;
	dense->data = cols;
	dense->len = (Py_ssize_t)len;
	return Py_BuildValue("(NN)", (PyObject *)dense, sparse);
fail:
	free(cols);
	for (int c = 0; c < NODE_COLS; c++) {
		free(sp[c].rows);
		free(sp[c].values);
	}
	Py_XDECREF(sparse);
	return NULL;
}

/* One histogram set (inclusive or exclusive times) as (offsets, buckets, counts). */
static PyObject *hists_tuple(const ftf_builder *b, int excl)
{
	PyObject *ho = NULL, *hb = NULL, *hc = NULL;
	if (hists_csr(b, excl, &ho, &hb, &hc) < 0) {
		Py_XDECREF(ho);
		Py_XDECREF(hb);
		Py_XDECREF(hc);
		return NULL;
	}
	return Py_BuildValue("(NNN)", ho, hb, hc);
}

/* A column of the root calls handed over as a Block (no copy): the
 * builder's array cut to its rows (at least 8 bytes: a Block of nothing
 * still has a buffer); *p is the Block's afterwards. */
static PyObject *root_column(void **p, size_t len)
{
	size_t size = len > 8 ? len : 8;
	void *data = realloc(*p, size); /* a shrink, or the first block of an empty table */
	if (!data)
		data = *p;
	if (!data)
		return PyErr_NoMemory();
	*p = NULL;
	ftf_block *blk = PyObject_New(ftf_block, &block_type);
	if (!blk) {
		free(data);
		return NULL;
	}
	blk->data = data;
	blk->len = (Py_ssize_t)len;
	return (PyObject *)blk;
}

/* The root calls (ftf_roots): a dict of their columns, each the builder's own
 * array handed to numpy as a Block (a copy of all of them was the read's
 * peak: the 144-byte rows and a 160-byte table per root call); "extras" the
 * figures the columns do not hold (ftf_root_extra), "peak_bytes" the
 * columns' high-water mark while the builder grew them. */
static PyObject *samples_table(ftf_builder *b)
{
	ftf_roots *r = &b->roots;
	size_t n = (size_t)r->n;
	PyObject *d = PyDict_New();
	if (!d)
		return NULL;
	static const char *const lazy_names[FTF_RL_N] = { "desc", "leaf_min", "leaves" };
#define COLUMN(name, p, width)                                                         \
	do {                                                                           \
		PyObject *_c = root_column((void **)&(p), n * (width));                \
		if (!_c || PyDict_SetItemString(d, name, _c) < 0) {                    \
			Py_XDECREF(_c);                                                \
			goto fail;                                                     \
		}                                                                      \
		Py_DECREF(_c);                                                         \
	} while (0)
	COLUMN("calltime", r->calltime, 8);
	COLUMN("node", r->node, 4);
	COLUMN("dur", r->dur, 4);
	COLUMN("pid", r->pid, 4);
	COLUMN("cpu", r->cpu, 2);
	COLUMN("op", r->op, 2);
	COLUMN("flags", r->flags, 1);
	for (int k = 0; k < FTF_RL_N; k++) {
		if (!r->lazy[k]) {
			if (PyDict_SetItemString(d, lazy_names[k], Py_None) < 0)
				goto fail;
			continue;
		}
		COLUMN(lazy_names[k], r->lazy[k], 4);
	}
#undef COLUMN
	PyObject *ex = root_column((void **)&r->extras, (size_t)r->nextras * sizeof(ftf_root_extra));
	if (!ex || PyDict_SetItemString(d, "extras", ex) < 0) {
		Py_XDECREF(ex);
		goto fail;
	}
	Py_DECREF(ex);
	PyObject *v = PyLong_FromUnsignedLongLong(r->n);
	if (!v || PyDict_SetItemString(d, "n", v) < 0) {
		Py_XDECREF(v);
		goto fail;
	}
	Py_DECREF(v);
	v = PyLong_FromUnsignedLongLong(r->peak);
	if (!v || PyDict_SetItemString(d, "peak_bytes", v) < 0) {
		Py_XDECREF(v);
		goto fail;
	}
	Py_DECREF(v);
	ftf_roots_free(r);
	return d;
fail:
	Py_DECREF(d);
	return NULL;
}

/* The in-trace overhead estimate: [(kind, context, cpu, counts, over)]
 * for every slot that saw a value. */
static PyObject *estimates_list(const ftf_builder *b)
{
	PyObject *est = PyList_New(0);
	if (!est)
		return NULL;
	for (int k = 0; k < 2; k++) {
		for (int x = 0; x < FTF_NCTX; x++) {
			for (int c = 0; c < FTF_EST_CPUS; c++) {
				const ftf_est *e = &b->est[k][x][c];
				if (!e->hist && !e->over)
					continue;
				PyObject *counts = e->hist
					? PyBytes_FromStringAndSize((const char *)e->hist,
								    FTF_EST_MAX * sizeof(uint32_t))
					: PyBytes_FromStringAndSize(NULL, 0);
				PyObject *item = counts ? Py_BuildValue("(iiiNK)", k, x, c, counts,
									(unsigned long long)e->over) : NULL;
				if (!item || PyList_Append(est, item) < 0) {
					Py_XDECREF(item);
					Py_DECREF(est);
					return NULL;
				}
				Py_DECREF(item);
			}
		}
	}
	return est;
}

/* Everything the builder counted, by name; the anomalies of hostile or
 * broken input only when they happened. */
static PyObject *counters_dict(const ftf_builder *b)
{
	PyObject *cnt = PyDict_New();
	if (!cnt)
		return NULL;
#define C(name) SET(cnt, #name, PyLong_FromUnsignedLongLong(b->c.name))
	C(events); C(entries); C(exits); C(switches); C(other_events); C(lost_records);
	C(lost_events); C(lost_unknown); C(orphan_exits); C(unterminated); C(open_at_end);
	C(overrun_growth); C(depth_mismatch); C(missing_entries); C(migrations); C(gap_calls);
	C(detached_calls); C(partial_entries);
	C(irq_roots); C(leaf_events); C(subbuf_starts); C(irq_outside_window); C(first_ts); C(last_ts);
#undef C
	if (b->root_calls.slow_cut) /* kept slowest root calls whose tree was too big to keep */
		SET(cnt, "slowest_without_tree", PyLong_FromUnsignedLongLong(b->root_calls.slow_cut));
	if (b->c.depth_limit_calls) { /* the kernel's return stack was full: calls below not recorded */
		SET(cnt, "depth_limit_calls", PyLong_FromUnsignedLongLong(b->c.depth_limit_calls));
		SET(cnt, "depth_limit", PyLong_FromLongLong(b->c.depth_limit));
	}
	if (b->c.duration_cut)
		SET(cnt, "duration_cut", PyLong_FromUnsignedLongLong(b->c.duration_cut));
	if (b->c.backwards_calls)
		SET(cnt, "backwards_calls", PyLong_FromUnsignedLongLong(b->c.backwards_calls));
	/* calls shorter than their records by more than they are known to have
	 * slept: without sched_switch events, in a trace that shows nosleep-time,
	 * a sleep no calltime showed; else refuted */
	uint64_t refuted = b->c.times_refuted + (b->c.nosleep_calls && !b->c.switches ? 0 : b->c.times_short);
	if (refuted) {
		int k = b->c.times_refuted ? 0 : 1; /* the first refuted call named, else the first short one */
		SET(cnt, "times_refuted", PyLong_FromUnsignedLongLong(refuted));
		SET(cnt, "times_refuted_first_func", PyLong_FromUnsignedLong(b->c.refuted_first_func[k]));
		SET(cnt, "times_refuted_first_ns", PyLong_FromUnsignedLongLong(b->c.refuted_first_ns[k]));
		SET(cnt, "times_refuted_first_pid", PyLong_FromLong(b->c.refuted_first_pid[k]));
	}
	if (b->c.stalled_stamps)
		SET(cnt, "stalled_stamps", PyLong_FromUnsignedLongLong(b->c.stalled_stamps));
	if (b->c.times_stalled)
		SET(cnt, "times_stalled", PyLong_FromUnsignedLongLong(b->c.times_stalled));
	if (b->c.inner_before_call)
		SET(cnt, "inner_before_call", PyLong_FromUnsignedLongLong(b->c.inner_before_call));
	if (b->c.inner_after_return)
		SET(cnt, "inner_after_return", PyLong_FromUnsignedLongLong(b->c.inner_after_return));
	if (b->funcs.long_names)
		SET(cnt, "long_names", PyLong_FromUnsignedLongLong(b->funcs.long_names));
	SET(cnt, "max_depth", PyLong_FromLongLong(b->c.max_depth));
	SET(cnt, "max_cpu", PyLong_FromLong(b->max_cpu));
	return cnt;
fail:
	Py_DECREF(cnt);
	return NULL;
}

/* {cpu: (known lost events, gaps of unknown size)} for the CPUs that lost any. */
static PyObject *lost_per_cpu_dict(const ftf_builder *b)
{
	PyObject *lost = PyDict_New();
	if (!lost)
		return NULL;
	for (int cpu = 0; cpu <= b->max_cpu && cpu < FTF_MAX_CPUS; cpu++) {
		if (!b->lost_marks_per_cpu[cpu])
			continue;
		PyObject *k = PyLong_FromLong(cpu),
			 *v = Py_BuildValue("(LK)", (long long)b->lost_per_cpu[cpu],
					    (unsigned long long)b->lost_unknown_per_cpu[cpu]);
		if (!k || !v || PyDict_SetItem(lost, k, v) < 0) {
			Py_XDECREF(k);
			Py_XDECREF(v);
			Py_DECREF(lost);
			return NULL;
		}
		Py_DECREF(k);
		Py_DECREF(v);
	}
	return lost;
}

/* Return values per function id (ftf_retvals), or None when no call had one:
 * (int64 table of RETVAL_COLUMNS by function id, the successful calls'
 * inclusive-time histograms, the error calls'). */
static const char *const RETVAL_COLUMNS[] = { "ok_calls", "ok_incl", "ok_min", "ok_max",
					       "err_calls", "err_incl", "err_min", "err_max" };
#define NRETVAL_COLUMNS (sizeof(RETVAL_COLUMNS) / sizeof(RETVAL_COLUMNS[0]))

static PyObject *retvals_result(ftf_builder *b)
{
	const ftf_retvals *r = &b->retvals;
	if (!r->f)
		Py_RETURN_NONE;
	uint32_t n = b->funcs.n < r->n ? b->funcs.n : r->n;
	PyObject *tab = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)b->funcs.n * NRETVAL_COLUMNS * 8);
	if (!tab)
		return NULL;
	int64_t *row = (int64_t *)PyBytes_AS_STRING(tab);
	memset(row, 0, (size_t)b->funcs.n * NRETVAL_COLUMNS * 8);
	for (uint32_t i = 0; i < n; i++, row += NRETVAL_COLUMNS) {
		for (int k = 0; k < 2; k++) {
			const ftf_ret_side *sd = &r->f[i].side[k];
			row[4 * k] = sd->calls;
			row[4 * k + 1] = (int64_t)sd->incl;
			row[4 * k + 2] = (int64_t)sd->min;
			row[4 * k + 3] = (int64_t)sd->max;
		}
	}
	PyObject *h[2][3] = { { NULL } };
	for (int k = 0; k < 2; k++) {
		const char *base = (const char *)&r->f[0].side[k].hist;
		if (hists_csr_of(base, sizeof(ftf_fret), n, &h[k][0], &h[k][1], &h[k][2]) < 0) {
			Py_DECREF(tab);
			for (int j = 0; j <= k; j++)
				for (int x = 0; x < 3; x++)
					Py_XDECREF(h[j][x]);
			return NULL;
		}
	}
	return Py_BuildValue("(N(NNN)(NNN))", tab, h[0][0], h[0][1], h[0][2], h[1][0], h[1][1], h[1][2]);
}

/* The aggregate as columnar bytes: converting 100k call paths into Python
 * objects one by one would cost more than reading the trace. */
static PyObject *builder_result(ftf_builder *b)
{
	ftf_builder_shed(b);
	give_back_freed_memory();
	PyObject *res = PyDict_New();
	if (!res)
		return NULL;
	SET(res, "funcs", funcs_list(b));
	SET(res, "hist_incl", hists_tuple(b, 0));
	SET(res, "hist_excl", b->no_excl_hist ? Py_NewRef(Py_None) : hists_tuple(b, 1));
	SET(res, "retvals", retvals_result(b));
	SET(res, "call_args", PyLong_FromUnsignedLong(b->root_calls.nargs));
	/* the slowest calls kept per (root path, operation) and measure */
	SET(res, "slowest_n", PyLong_FromUnsignedLong(b->root_calls.slowest_n));
	SET(res, "samples", samples_table(b));
	if (calls_result(b, res) < 0)
		goto fail;
	SET(res, "estimates", estimates_list(b));
	SET(res, "counters", counters_dict(b));
	SET(res, "lost_per_cpu", lost_per_cpu_dict(b));
	SET(res, "nrows", PyLong_FromUnsignedLong(b->nnodes));
	SET(res, "nodes", nodes_table(b)); /* last: it takes the builder's nodes */
	return res;
fail:
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

/* A string the file brings, as text whatever its bytes (a uname in
 * Latin-1 is no reason to refuse a trace). */
static PyObject *file_text(const char *c)
{
	return PyUnicode_DecodeUTF8(c, (Py_ssize_t)strlen(c), "replace");
}

/* What a trace.dat says about itself: kernel, clock, tracer, CPUs, the
 * events and fields it has, and the records per CPU. */
static PyObject *dat_meta_dict(const ftf_dat_meta *meta)
{
	PyObject *m = Py_BuildValue(
		"{s:N,s:N,s:N,s:i,s:i,s:N,s:O,s:O,s:O,s:O,s:O,s:O}", "kernel", file_text(meta->kernel),
		"clock", file_text(meta->clock), "tracer_version", file_text(meta->tracer_version), "cpus",
		meta->cpus, "file_version", meta->file_version, "compression",
		file_text(meta->compression), "has_entry_event",
		meta->has_entry_event ? Py_True : Py_False, "has_exit_event",
		meta->has_exit_event ? Py_True : Py_False, "has_retaddr_event",
		meta->has_retaddr_event ? Py_True : Py_False, "has_switch_event",
		meta->has_switch_event ? Py_True : Py_False, "has_retval",
		meta->has_retval ? Py_True : Py_False, "has_args",
		meta->has_args ? Py_True : Py_False);
	PyObject *pce = PyDict_New();
	/* every CPU the file says the system had, up to the table's size; past
	 * it (a count the data refutes: 1,000 CPUs with data for 2), the CPUs
	 * with events: never an empty table for a trace with events */
	int table = (int)(sizeof(meta->per_cpu_events) / sizeof(meta->per_cpu_events[0]));
	int ncpu = meta->cpus > 0 && meta->cpus <= table ? meta->cpus : 0;
	for (int i = 0; m && pce && i < table; i++) {
		if (i >= ncpu && !meta->per_cpu_events[i])
			continue;
		PyObject *k = PyLong_FromLong(i),
			 *v = PyLong_FromUnsignedLongLong(meta->per_cpu_events[i]);
		if (k && v)
			PyDict_SetItem(pce, k, v);
		Py_XDECREF(k);
		Py_XDECREF(v);
	}
	if (!m || !pce || PyDict_SetItemString(m, "events_per_cpu", pce) < 0)
		Py_CLEAR(m);
	Py_XDECREF(pce);
	return m;
}

/* A reader's failure as a Python exception: an allocation that failed
 * (the readers say "out of memory") is a resource, MemoryError (exit 1),
 * not a fault of the file, ValueError (exit 2). */
static void set_read_error(const char *err)
{
	PyErr_SetString(strstr(err, "out of memory") ? PyExc_MemoryError : PyExc_ValueError, err);
}

/* d[key] = v, v's reference given to d; -1 (v released) when v is NULL or
 * the store fails. */
static int dict_put(PyObject *d, const char *key, PyObject *v)
{
	int rc = v ? PyDict_SetItemString(d, key, v) : -1;
	Py_XDECREF(v);
	return rc;
}

/* What the builtin reader skipped, counted (meta["damage"]). */
static PyObject *dat_damage_dict(const ftf_dat_damage *d)
{
	return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:L,s:K,s:K,s:s,s:K,s:I,s:K,s:s}", "bad_pages",
			     (unsigned long long)d->bad_pages, "bad_chunks", (unsigned long long)d->bad_chunks,
			     "lost_bytes", (unsigned long long)d->lost_bytes, "cut_streams",
			     (unsigned long long)d->cut_streams, "partial_page_bytes",
			     (unsigned long long)d->partial_page_bytes, "zero_pages",
			     (unsigned long long)d->zero_pages, "kallsyms_bad_lines",
			     (unsigned long long)d->kallsyms_bad_lines, "data_cpus",
			     (unsigned long long)d->data_cpus, "cpucount_option",
			     (long long)d->cpucount_option, "missing_records",
			     (unsigned long long)d->missing_records, "missing_record_cpus",
			     (unsigned long long)d->missing_record_cpus, "first", d->first,
			     "unknown_options", (unsigned long long)d->unknown_options, "first_unknown_option",
			     (unsigned int)d->first_unknown_option, "bad_section_headers",
			     (unsigned long long)d->bad_section_headers, "first_bad_section",
			     d->first_bad_section);
}

/* dat_decoder(path, reader) -> {(event, field): (offset, size)}: every
 * field of record_decode.c's table the reader bound in the file, as a read
 * would decode it (the reader parity tests compare the two readers'). */
static PyObject *py_dat_decoder(PyObject *self, PyObject *args)
{
	PyObject *path_obj;
	const char *reader;
	if (!PyArg_ParseTuple(args, "O&s", PyUnicode_FSConverter, &path_obj, &reader))
		return NULL;
	int builtin = strcmp(reader, "builtin") == 0;
	if (!builtin && strcmp(reader, "libtracecmd") != 0) {
		Py_DECREF(path_obj);
		PyErr_SetString(PyExc_ValueError, "reader: 'builtin' or 'libtracecmd'");
		return NULL;
	}
	ftf_decoder dec;
	char err[512] = "";
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = builtin ? ftf_read_dat_builtin_decoder(PyBytes_AS_STRING(path_obj), &dec, err, sizeof(err))
		     : ftf_read_dat_decoder(PyBytes_AS_STRING(path_obj), &dec, err, sizeof(err));
	Py_END_ALLOW_THREADS
	Py_DECREF(path_obj);
	if (rc < 0) {
		PyErr_SetString(PyExc_ValueError, err);
		return NULL;
	}
	PyObject *out = PyDict_New();
	for (int e = 0; out && e < FTF_REC_NEVENTS; e++)
		for (int k = 0; k < FTF_FLD_N; k++) {
			const ftf_field *f = &dec.ev[e].field[k];
			if (!f->present)
				continue;
			PyObject *key = Py_BuildValue("(ss)", ftf_rec_events[e].name, ftf_rec_fields[k]);
			PyObject *val = Py_BuildValue("(II)", f->offset, f->size);
			if (!key || !val || PyDict_SetItem(out, key, val) < 0)
				Py_CLEAR(out);
			Py_XDECREF(key);
			Py_XDECREF(val);
			if (!out)
				break;
		}
	return out;
}

/* spool=(fd, fd, fd): the call stream (root_calls.h, ftf_spool) into
 * these files, each a dup()ed stream of its own (the caller keeps its
 * descriptors); None: none. */
static int spool_open(PyObject *fds, ftf_spool *sp, ftf_builder *b)
{
	memset(sp, 0, sizeof(*sp));
	if (fds == Py_None)
		return 0;
	int fd[3];
	if (!PyArg_ParseTuple(fds, "iii;spool: three file descriptors", &fd[0], &fd[1], &fd[2]))
		return -1;
	for (int k = 0; k < 3; k++) {
		int d = dup(fd[k]);
		sp->f[k] = d < 0 ? NULL : fdopen(d, "wb");
		if (!sp->f[k]) {
			PyErr_SetFromErrno(PyExc_OSError);
			if (d >= 0)
				close(d);
			for (int j = 0; j < k; j++)
				fclose(sp->f[j]);
			memset(sp, 0, sizeof(*sp));
			return -1;
		}
		setvbuf(sp->f[k], NULL, _IOFBF, 1 << 20);
	}
	b->root_calls.spool = sp;
	return 0;
}

/* The call stream's files flushed and closed: the errno of a failed write
 * (a full disk), 0. */
static int spool_close(ftf_spool *sp)
{
	int err = sp->err;
	for (int k = 0; k < 3; k++)
		if (sp->f[k] && fclose(sp->f[k]) != 0 && !err)
			err = errno ? errno : EIO;
	memset(sp, 0, sizeof(*sp));
	return err;
}

/* A failed call stream's OSError, unless an exception is set already. */
static int spool_failed(int err)
{
	if (!err || PyErr_Occurred())
		return 0;
	errno = err;
	PyErr_SetFromErrno(PyExc_OSError);
	return 1;
}

/* read_dat(path, progress=None, slowest=N) through libtracecmd, and
 * read_dat_builtin(...) through the builtin reader (dat_*.c): the builder's
 * dict with "meta", and for the builtin reader meta["damage"]. */
static PyObject *read_dat_with(PyObject *args, PyObject *kw, int builtin)
{
	static char *kwlist[] = { "path", "progress", "slowest", "known_events", "check_only", "spool",
				  "excl_hist", NULL };
	PyObject *path_obj, *progress = Py_None, *known = Py_None, *spool_fds = Py_None;
	unsigned int slowest = FTF_SLOWEST_DEFAULT;
	int check_only = 0, excl_hist = 1;
	ftf_spool spool;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|OIOpOp", kwlist, PyUnicode_FSConverter, &path_obj,
					 &progress, &slowest, &known, &check_only, &spool_fds, &excl_hist))
		return NULL;
	/* known_events: {cpu: events} another reader found (libtracecmd only) */
	uint64_t known_events[sizeof(((ftf_dat_meta *)0)->per_cpu_events) / sizeof(uint64_t)] = { 0 };
	if (known != Py_None) {
		PyObject *key, *value;
		Py_ssize_t pos = 0;
		if (builtin || !PyDict_Check(known)) {
			Py_DECREF(path_obj);
			PyErr_SetString(PyExc_TypeError, "known_events: a dict {cpu: events}, libtracecmd only");
			return NULL;
		}
		while (PyDict_Next(known, &pos, &key, &value)) {
			long cpu = PyLong_AsLong(key);
			unsigned long long n = PyLong_AsUnsignedLongLong(value);
			if (PyErr_Occurred()) {
				Py_DECREF(path_obj);
				return NULL;
			}
			if (cpu >= 0 && (size_t)cpu < sizeof(known_events) / sizeof(known_events[0]))
				known_events[cpu] = n;
		}
	}
	ftf_builder *b = malloc(sizeof(*b));
	ftf_dat_meta *meta = malloc(sizeof(*meta));
	ftf_dat_damage *dmg = builtin ? malloc(sizeof(*dmg)) : NULL;
	if (!b || !meta || (builtin && !dmg)) {
		free(b);
		free(meta);
		free(dmg);
		Py_DECREF(path_obj);
		return PyErr_NoMemory();
	}
	ftf_builder_init(b);
	b->root_calls.slowest_n = slowest;
	b->check_only = check_only; /* the events read and counted, no calls built */
	b->no_excl_hist = !excl_hist; /* "hist_excl": None */
	if (spool_open(spool_fds, &spool, b) < 0) {
		ftf_builder_free(b);
		free(b);
		free(meta);
		free(dmg);
		Py_DECREF(path_obj);
		return NULL;
	}
	char err[512] = "";
	progress_ctx pc = { progress, 0 };
	ftf_progress_fn progress_fn = progress == Py_None ? NULL : progress_trampoline;
	int rc;
	ftf_closing *closing = NULL;
	Py_BEGIN_ALLOW_THREADS
	if (builtin)
		rc = ftf_read_dat_builtin(PyBytes_AS_STRING(path_obj), b, meta, dmg, progress_fn, &pc,
					  err, sizeof(err));
	else
		rc = ftf_read_dat(PyBytes_AS_STRING(path_obj), b, meta, known == Py_None ? NULL : known_events,
				  progress_fn, &pc, err,
				  sizeof(err), &closing);
	Py_END_ALLOW_THREADS
	Py_DECREF(path_obj);
	PyObject *res = NULL, *m = NULL;
	int spool_err = b->root_calls.spool ? spool_close(&spool) : 0;
	if (pc.failed) {
		/* the progress callback raised (e.g. KeyboardInterrupt): keep its exception */
	} else if (rc < 0) {
		set_read_error(err);
	} else if (spool_failed(spool_err)) {
		/* the call stream's write failed: its OSError */
	} else if ((res = builder_result(b)) &&
		   (!(m = dat_meta_dict(meta)) ||
		    (builtin && dict_put(m, "damage", dat_damage_dict(dmg)) < 0) ||
		    PyDict_SetItemString(res, "meta", m) < 0)) {
		Py_CLEAR(res);
	}
	Py_XDECREF(m);
	ftf_builder_free(b);
	if (closing) {
		/* libtracecmd's handle is closed on its own thread: wait for it */
		Py_BEGIN_ALLOW_THREADS
		ftf_close_wait(closing);
		Py_END_ALLOW_THREADS
	}
	free(b);
	free(meta);
	free(dmg);
	give_back_freed_memory();
	return res;
}

static PyObject *py_read_dat(PyObject *self, PyObject *args, PyObject *kw)
{
	return read_dat_with(args, kw, 0);
}

static PyObject *py_read_dat_builtin(PyObject *self, PyObject *args, PyObject *kw)
{
	return read_dat_with(args, kw, 1);
}

/* build_events(events): feed hand-made events straight to the builder.
 * Each event is a tuple (kind, cpu, pid, flags, func, depth, ts, calltime,
 * rettime, overrun, next_pid, lost[, retval[, args]]) with kind one of "entry", "exit",
 * "switch", "lost", "leaf", func a function name and depth a C int (as an
 * event holds it); a field of another kind than the event's is ignored.
 * Used by tests to show one named situation at a time. */
static PyObject *py_build_events(PyObject *self, PyObject *args)
{
	PyObject *seq, *spool_fds = Py_None;
	unsigned int slowest = FTF_SLOWEST_DEFAULT;
	ftf_spool spool;
	if (!PyArg_ParseTuple(args, "O|IO", &seq, &slowest, &spool_fds))
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
	b->root_calls.slowest_n = slowest;
	if (spool_open(spool_fds, &spool, b) < 0) {
		ftf_builder_free(b);
		free(b);
		Py_DECREF(fast);
		return NULL;
	}
	Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
	for (Py_ssize_t i = 0; i < n; i++) {
		const char *kind, *func;
		ftf_event ev;
		memset(&ev, 0, sizeof(ev));
		unsigned long long ts, calltime, rettime, overrun;
		long long lost;
		int cpu, pid, flags, depth, next_pid;
		PyObject *retval = NULL, *argv = NULL;
		uint64_t args[FTF_MAX_ARGS];
		if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "siiisiKKKKiL|OO;event tuple", &kind,
				      &cpu, &pid, &flags, &func, &depth, &ts, &calltime, &rettime, &overrun,
				      &next_pid, &lost, &retval, &argv) ||
		    (retval && retval != Py_None && !PyLong_Check(retval) &&
		     !PyErr_Format(PyExc_TypeError, "event tuple: the return value must be an int")) ||
		    (argv && argv != Py_None && (!PyTuple_Check(argv) || PyTuple_GET_SIZE(argv) > FTF_MAX_ARGS) &&
		     !PyErr_Format(PyExc_TypeError, "event tuple: the arguments must be a tuple of at most %d ints",
				   FTF_MAX_ARGS))) {
			if (b->root_calls.spool)
				spool_close(&spool);
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
		/* each in its kind only: they share the event's storage */
		if (ev.kind == FTF_EV_EXIT)
			ev.overrun = overrun;
		else if (ev.kind == FTF_EV_SWITCH)
			ev.next_pid = next_pid;
		else if (ev.kind == FTF_EV_LOST)
			ev.lost = lost;
		if (retval && retval != Py_None) {
			ev.has_retval = 1; /* -22 as the kernel holds it: two's complement */
			ev.retval = (uint64_t)PyLong_AsUnsignedLongLongMask(retval);
		}
		if (argv && argv != Py_None && (ev.kind == FTF_EV_ENTRY || ev.kind == FTF_EV_LEAF)) {
			for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(argv); k++)
				args[k] = (uint64_t)PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(argv, k));
			ev.args = args;
			ev.nargs = (uint32_t)PyTuple_GET_SIZE(argv);
		}
		if (PyErr_Occurred()) { /* a return value or argument that is no int */
			if (b->root_calls.spool)
				spool_close(&spool);
			ftf_builder_free(b);
			free(b);
			Py_DECREF(fast);
			return NULL;
		}
		ftf_builder_feed(b, &ev);
	}
	ftf_builder_finish(b);
	Py_DECREF(fast);
	int spool_err = b->root_calls.spool ? spool_close(&spool) : 0;
	PyObject *res = spool_failed(spool_err) ? NULL : builder_result(b);
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
	static char *kwlist[] = { "chunks", "mode", "progress", "events", "slowest", "spool", "excl_hist", NULL };
	PyObject *chunks, *progress = Py_None, *spool_fds = Py_None;
	int mode = FTF_TEXT_LINES, want_events = 0, excl_hist = 1;
	unsigned int slowest = FTF_SLOWEST_DEFAULT;
	ftf_spool spool;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iOpIOp", kwlist, &chunks, &mode, &progress,
					 &want_events, &slowest, &spool_fds, &excl_hist))
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
	b->root_calls.slowest_n = slowest;
	b->no_excl_hist = !excl_hist; /* "hist_excl": None */
	if (spool_open(spool_fds, &spool, b) < 0) {
		ftf_builder_free(b);
		free(b);
		Py_DECREF(it);
		return NULL;
	}
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
	if (b->root_calls.spool && spool_failed(spool_close(&spool)))
		goto out;
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
	if (b->root_calls.spool)
		spool_close(&spool);
	Py_DECREF(it);
	ftf_text_free(t);
	ftf_builder_free(b);
	free(b);
	free(log.rows);
	give_back_freed_memory();
	return res;
}

static PyObject *py_hist_lower(PyObject *self, PyObject *args)
{
	unsigned int bucket;
	if (!PyArg_ParseTuple(args, "I", &bucket))
		return NULL;
	return PyLong_FromUnsignedLongLong(ftf_hist_lower(bucket));
}

/* give_back_freed_memory(): between the stages of a report, the heap's
 * freed pages back to the system (a stage's temporaries would otherwise
 * stay in the RSS under the next stage's peak). */
static PyObject *py_give_back_freed_memory(PyObject *self, PyObject *unused)
{
	Py_BEGIN_ALLOW_THREADS
	give_back_freed_memory();
	Py_END_ALLOW_THREADS
	Py_RETURN_NONE;
}

/* _set_narrow_max(v) -> the previous value: the largest value a 32-bit
 * node column may take (tests show the check with a small one). */
static PyObject *py_set_narrow_max(PyObject *self, PyObject *args)
{
	long long v;
	if (!PyArg_ParseTuple(args, "L", &v))
		return NULL;
	if (v < 0 || v > INT32_MAX)
		return PyErr_Format(PyExc_ValueError, "_set_narrow_max: 0..%d", INT32_MAX);
	long long before = narrow_max;
	narrow_max = v;
	return PyLong_FromLongLong(before);
}

/* _set_hist_inline_max(v) -> the previous value: the count from which a
 * histogram's inline bucket moves out (tests show it without 4 M calls). */
static PyObject *py_set_hist_inline_max(PyObject *self, PyObject *args)
{
	long long v;
	if (!PyArg_ParseTuple(args, "L", &v))
		return NULL;
	if (v < 1 || v > FTF_HIST_COUNT_MASK)
		return PyErr_Format(PyExc_ValueError, "_set_hist_inline_max: 1..%u", FTF_HIST_COUNT_MASK);
	long long before = ftf_hist_inline_max;
	ftf_hist_inline_max = (uint32_t)v;
	return PyLong_FromLongLong(before);
}

static PyMethodDef methods[] = {
	{ "give_back_freed_memory", py_give_back_freed_memory, METH_NOARGS,
	  "give_back_freed_memory(): the heap's freed pages back to the system (malloc_trim), between stages" },
	{ "_set_narrow_max", py_set_narrow_max, METH_VARARGS,
	  "_set_narrow_max(v) -> previous: the largest value a 32-bit node column takes (tests)" },
	{ "_set_hist_inline_max", py_set_hist_inline_max, METH_VARARGS,
	  "_set_hist_inline_max(v) -> previous: tests only, the count from which a histogram's inline "
	  "bucket moves out" },
	{ "read_dat", (PyCFunction)(void (*)(void))py_read_dat, METH_VARARGS | METH_KEYWORDS,
	  "read_dat(path, progress=None, slowest=20) -> dict: read a trace.dat (libtracecmd) into the "
	  "call-path aggregate" },
	{ "read_dat_builtin", (PyCFunction)(void (*)(void))py_read_dat_builtin, METH_VARARGS | METH_KEYWORDS,
	  "read_dat_builtin(path, progress=None, slowest=20) -> dict: read_dat with the builtin reader "
	  "(no libtracecmd)" },
	{ "dat_decoder", py_dat_decoder, METH_VARARGS,
	  "dat_decoder(path, reader) -> {(event, field): (offset, size)}: the fields a read of the trace.dat "
	  "with that reader ('builtin', 'libtracecmd') decodes" },
	{ "build_events", py_build_events, METH_VARARGS,
	  "build_events(events, slowest=20) -> dict: feed hand-made events to the call builder" },
	{ "read_text_chunks", (PyCFunction)(void (*)(void))py_read_text_chunks, METH_VARARGS | METH_KEYWORDS,
	  "read_text_chunks(chunks, mode=TEXT_LINES, progress=None, events=False) -> dict: tokenize "
	  "function_graph text fed as an iterable of byte chunks into the call-path aggregate" },
	{ "hist_lower", py_hist_lower, METH_VARARGS, "lower bound (ns) of a histogram bucket" },
	{ NULL, NULL, 0, NULL },
};


static struct PyModuleDef moduledef = {
	PyModuleDef_HEAD_INIT, "_core", "ftflame C core: trace readers and call builder", -1, methods,
	NULL, NULL, NULL, NULL,
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
	if (PyType_Ready(&block_type) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&moduledef);
	if (!m)
		return NULL;
	PyModule_AddIntConstant(m, "HIST_BUCKETS", FTF_HIST_BUCKETS);
	PyModule_AddIntConstant(m, "NODE_COLS", NODE_COLS);
	PyModule_AddIntConstant(m, "TREE_MAX_CALLS", FTF_TREE_MAX_RECS);
	const char *node_dtypes[NODE_COLS], *sparse[NODE_COLS];
	int nsparse = 0;
	for (int c = 0; c < NODE_COLS; c++) {
		node_dtypes[c] = node_width[c] == 4 ? "<i4" : "<i8";
		if (node_sparse[c])
			sparse[nsparse++] = node_columns[c];
	}
	if (add_names(m, "NODE_COLUMNS", node_columns, NODE_COLS) < 0 ||
	    add_names(m, "NODE_DTYPES", node_dtypes, NODE_COLS) < 0 ||
	    add_names(m, "NODE_SPARSE", sparse, nsparse) < 0 ||
	    add_names(m, "SAMPLE_COLUMNS", sample_columns, SAMPLE_COLS) < 0 ||
	    add_names(m, "CALL_RECORD", rec_fields, (int)(sizeof(rec_fields) / sizeof(rec_fields[0]))) < 0 ||
	    add_names(m, "CALL_EXTRAS", rec_extra_fields, FTF_EX_FIELDS) < 0 ||
	    add_names(m, "RETVAL_COLUMNS", RETVAL_COLUMNS, (int)NRETVAL_COLUMNS) < 0) {
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
	PyModule_AddIntConstant(m, "SAMPLE_RET", FTF_SAMPLE_RET);
	PyModule_AddIntConstant(m, "TEXT_LINES", FTF_TEXT_LINES);
	PyModule_AddIntConstant(m, "TEXT_MAIL", FTF_TEXT_MAIL);
	PyModule_AddIntConstant(m, "SLOWEST_DEFAULT", FTF_SLOWEST_DEFAULT);
	return m;
}
