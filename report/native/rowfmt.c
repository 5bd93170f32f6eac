/* Row-template formatter (rowfmt.h): the JSON call tree of 100k+ call
 * paths is ~45 numbers per row; Python's % formatting spends seconds on it,
 * this writes them straight into one growing buffer.
 *
 * "%.1f" is exact: the value's binary expansion times ten, rounded half to
 * even, which is what glibc's printf and Python's float formatting do (both
 * round the exact value correctly); snprintf covers what the integer fast
 * path cannot hold (|v| >= 2^59).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include <unistd.h>

#include "rowfmt.h"

static const char digits2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

static inline size_t u64_len(uint64_t v)
{
	size_t n = 1;
	for (;;) {
		if (v < 10)
			return n;
		if (v < 100)
			return n + 1;
		if (v < 1000)
			return n + 2;
		if (v < 10000)
			return n + 3;
		v /= 10000;
		n += 4;
	}
}

/* v's decimal digits, the last one just before end */
static inline void u64_put(char *end, uint64_t v)
{
	while (v >= 100) {
		unsigned r = (unsigned)(v % 100);
		v /= 100;
		end -= 2;
		memcpy(end, digits2 + 2 * r, 2);
	}
	if (v >= 10) {
		end -= 2;
		memcpy(end, digits2 + 2 * v, 2);
	} else {
		*--end = (char)('0' + v);
	}
}

static inline __attribute__((always_inline)) size_t fmt_i64(char *dst, int64_t v)
{
	size_t sign = v < 0;
	uint64_t u = sign ? 0 - (uint64_t)v : (uint64_t)v;
	size_t n = u64_len(u);
	if (sign)
		*dst = '-';
	u64_put(dst + sign + n, u);
	return sign + n;
}

/* |v| * 10 rounded half to even, in *q, and the sign: 0; NaN, an infinity
 * or |v| >= 2^59, past the integer fast path: 1. */
static inline __attribute__((always_inline)) int f1_q(double v, int *neg, uint64_t *q)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof(bits));
	*neg = (int)(bits >> 63);
	int bexp = (int)((bits >> 52) & 0x7ff);
	uint64_t frac = bits & ((UINT64_C(1) << 52) - 1);
	if (bexp == 0x7ff)
		return 1;
	/* |v| = m * 2^e exactly */
	uint64_t m = bexp ? frac | (UINT64_C(1) << 52) : frac;
	int e = bexp ? bexp - 1075 : -1074;
	if (e >= 0) {
		if (e > 6) /* m * 2^e * 10 might not fit 63 bits */
			return 1;
		*q = (m << e) * 10;
	} else if (e <= -58) {
		*q = 0; /* 10m < 2^57 <= half of 2^-e: below 0.05 */
	} else {
		int k = -e;
		uint64_t t = m * 10; /* < 2^57 */
		uint64_t r = t & ((UINT64_C(1) << k) - 1), half = UINT64_C(1) << (k - 1);
		*q = t >> k;
		if (r > half || (r == half && (*q & 1)))
			(*q)++;
	}
	return 0;
}

/* NaN, infinities and |v| >= 2^59 */
__attribute__((noinline, cold)) static size_t fmt_f1_slow(char *dst, double v)
{
	if (v != v) { /* as Python writes it (glibc may write "-nan") */
		memcpy(dst, "nan", 3);
		return 3;
	}
	return (size_t)snprintf(dst, FTF_RF_F1_MAX, "%.1f", v); /* "inf", "-inf" alike */
}

static inline __attribute__((always_inline)) size_t fmt_f1(char *dst, double v)
{
	int neg;
	uint64_t q;
	if (__builtin_expect(f1_q(v, &neg, &q) != 0, 0))
		return fmt_f1_slow(dst, v);
	char *p = dst;
	if (neg)
		*p++ = '-'; /* -0.0 and -0.04 alike: "-0.0" */
	uint64_t ip = q / 10;
	size_t n = u64_len(ip);
	u64_put(p + n, ip);
	p += n;
	p[0] = '.';
	p[1] = (char)('0' + q % 10);
	return (size_t)(p + 2 - dst);
}

__attribute__((noinline, cold)) static size_t f1_len_slow(double v)
{
	char tmp[FTF_RF_F1_MAX];
	return fmt_f1_slow(tmp, v);
}

static inline __attribute__((always_inline)) size_t f1_len(double v)
{
	int neg;
	uint64_t q;
	if (__builtin_expect(f1_q(v, &neg, &q) != 0, 0))
		return f1_len_slow(v);
	return (size_t)neg + u64_len(q / 10) + 2;
}

size_t ftf_fmt_i64(char *dst, int64_t v)
{
	return fmt_i64(dst, v);
}

size_t ftf_fmt_f1(char *dst, double v)
{
	return fmt_f1(dst, v);
}

static inline int64_t int_at(const ftf_rowfmt_item *it, size_t r)
{
	return ftf_rowfmt_int((const char *)it->col + (ptrdiff_t)r * it->stride, it->itemsize);
}

/* A value an ENUM or REP item cannot write: an index out of range, a
 * negative count. */
static inline int bad_value(const ftf_rowfmt_item *it, int64_t v)
{
	return v < 0 || (it->kind == FTF_RF_ENUM && (uint64_t)v >= it->nfrags);
}

static inline double f64_at(const ftf_rowfmt_item *it, size_t r)
{
	double v;
	memcpy(&v, (const char *)it->col + (ptrdiff_t)r * it->stride, sizeof(v));
	return v;
}

/* Too big a text for any buffer: lengths stay far from overflowing. */
#define TOO_BIG (SIZE_MAX / 4)

/* The most one row can take, REP items apart. */
static size_t row_max(const ftf_rowfmt_item *items, size_t nitems)
{
	size_t max = 0;
	for (size_t i = 0; i < nitems; i++) {
		const ftf_rowfmt_item *it = &items[i];
		size_t w = 0;
		switch (it->kind) {
		case FTF_RF_LIT:
			w = it->lit.len;
			break;
		case FTF_RF_INT:
			w = FTF_RF_INT_MAX;
			break;
		case FTF_RF_F1:
		case FTF_RF_F1N:
			w = FTF_RF_F1_MAX;
			break;
		case FTF_RF_ENUM:
			for (size_t k = 0; k < it->nfrags; k++)
				if (it->frags[k].len > w)
					w = it->frags[k].len;
			break;
		}
		if (w >= TOO_BIG - max)
			return TOO_BIG;
		max += w;
	}
	return max;
}

static inline size_t int_len(int64_t v)
{
	return (size_t)(v < 0) + u64_len(v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

/* The widest of n integers (itemsize 4 or 8, stride bytes apart): that of
 * the least or the greatest. */
static size_t ints_width(const void *col, ptrdiff_t stride, int itemsize, size_t n)
{
	int64_t lo = 0, hi = 0;
	for (size_t r = 0; r < n; r++) {
		int64_t v = ftf_rowfmt_int((const char *)col + (ptrdiff_t)r * stride, itemsize);
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	size_t a = int_len(lo), b = int_len(hi);
	return a > b ? a : b;
}

/* The widest value of an integer column. */
static size_t int_width(const ftf_rowfmt_item *it, size_t nrows)
{
	return ints_width(it->col, it->stride, it->itemsize, nrows);
}

/* Of n float64 values (stride bytes apart), what bounds their "%.1f": the
 * largest magnitude and whether one is negative, of those not NaN; whether
 * one is NaN; whether one is infinite or past 2^59 (its exact length then). */
typedef struct {
	double amax;
	int neg, nan, big;
} f1_scan;

static f1_scan f1_scan_of(const void *col, ptrdiff_t stride, size_t n)
{
	f1_scan sc = { 0 };
	for (size_t r = 0; r < n; r++) {
		double v;
		memcpy(&v, (const char *)col + (ptrdiff_t)r * stride, sizeof(v));
		if (v != v) {
			sc.nan = 1;
			continue;
		}
		double a = fabs(v);
		sc.big |= !(a < 576460752303423488.0); /* 2^59 */
		sc.amax = a > sc.amax ? a : sc.amax;
		sc.neg |= signbit(v) != 0;
	}
	return sc;
}

/* The widest "%.1f" of a scan without big values (the integer part written
 * is at most the largest magnitude + 1). */
static size_t f1_scan_width(f1_scan sc)
{
	return (size_t)sc.neg + u64_len((uint64_t)sc.amax + 1) + 2;
}

/* The widest "%.1f" of a float column; 0 when a value is NaN, infinite or
 * past 2^59. */
static size_t f1_width(const ftf_rowfmt_item *it, size_t nrows)
{
	f1_scan sc = f1_scan_of(it->col, it->stride, nrows);
	return sc.nan || sc.big ? 0 : f1_scan_width(sc);
}

/* The length of a value of an F1 or F1N column ("null": NaN of an F1N one). */
static inline size_t f1n_len(int kind, double v)
{
	return kind == FTF_RF_F1N && v != v ? 4 : f1_len(v);
}

/* FTF_RF_SEG: row r's run's length (its start: the item's column) */
static inline size_t seg_count(const ftf_rowfmt_item *it, size_t r)
{
	return (size_t)ftf_rowfmt_int((const char *)it->col2 + (ptrdiff_t)r * it->stride2, it->itemsize2);
}

static inline int64_t seg_int(const ftf_rowfmt_seg *g, size_t k)
{
	return ftf_rowfmt_int((const char *)g->values + (ptrdiff_t)k * g->stride, g->itemsize);
}

static inline double seg_f64(const ftf_rowfmt_seg *g, size_t k)
{
	double v;
	memcpy(&v, (const char *)g->values + (ptrdiff_t)k * g->stride, sizeof(v));
	return v;
}

/* The widest value a SEG item writes (its comma apart), over all its
 * values: a bound for every run. */
static size_t seg_width(const ftf_rowfmt_item *it)
{
	const ftf_rowfmt_seg *g = &it->seg;
	if (g->kind == FTF_RF_INT)
		return ints_width(g->values, g->stride, g->itemsize, g->nvalues);
	if (g->kind == FTF_RF_F1N) {
		f1_scan sc = f1_scan_of(g->values, g->stride, g->nvalues);
		if (sc.big) /* infinities, huge values: snprintf's */
			return FTF_RF_F1_MAX;
		size_t f = f1_scan_width(sc);
		return sc.nan && f < 4 ? 4 : f; /* NaN: null */
	}
	size_t w = 0;
	for (size_t k = 0; k < it->nfrags; k++)
		w = it->frags[k].len > w ? it->frags[k].len : w;
	return w;
}

/* At most how many bytes a SEG item writes for a run of count values, each
 * at most width bytes: TOO_BIG when that does not fit. */
static inline size_t seg_bytes(size_t count, size_t width)
{
	if (count && width + 1 > TOO_BIG / count)
		return TOO_BIG;
	return count * (width + 1);
}

int ftf_rowfmt_size(const ftf_rowfmt_item *items, size_t nitems, size_t nrows, size_t *len,
		    size_t *bad_row, size_t *bad_item)
{
	size_t total = 0;
	if (row_max(items, nitems) >= TOO_BIG)
		return FTF_RF_NOMEM;
	/* column by column: each column is read as one stream */
	for (size_t i = 0; i < nitems; i++) {
		const ftf_rowfmt_item *it = &items[i];
		uint64_t sum = 0; /* <= 320 * nrows apart from REP, checked */
		int64_t v;
		switch (it->kind) {
		case FTF_RF_LIT:
			if (it->lit.len && nrows > (TOO_BIG - total) / it->lit.len)
				return FTF_RF_NOMEM;
			sum = (uint64_t)it->lit.len * nrows;
			break;
		case FTF_RF_INT:
			sum = int_width(it, nrows) * (uint64_t)nrows;
			break;
		case FTF_RF_F1:
		case FTF_RF_F1N:
			sum = f1_width(it, nrows) * (uint64_t)nrows;
			if (sum == 0) /* NaN, infinities or huge values: exact lengths */
				for (size_t r = 0; r < nrows; r++)
					sum += f1n_len(it->kind, f64_at(it, r));
			break;
		case FTF_RF_ENUM:
			for (size_t r = 0; r < nrows; r++) {
				v = int_at(it, r);
				if (bad_value(it, v))
					goto bad;
				sum += it->frags[v].len;
			}
			break;
		case FTF_RF_REP:
			for (size_t r = 0; r < nrows; r++) {
				v = int_at(it, r);
				if (bad_value(it, v))
					goto bad;
				if (it->lit.len && (uint64_t)v > (TOO_BIG - sum) / it->lit.len)
					return FTF_RF_NOMEM;
				sum += (uint64_t)v * it->lit.len;
			}
			break;
		case FTF_RF_SEG: {
			size_t w = seg_width(it);
			for (size_t r = 0; r < nrows; r++) {
				size_t b = seg_bytes(seg_count(it, r), w);
				if (b >= TOO_BIG - sum)
					return FTF_RF_NOMEM;
				sum += b;
			}
			break;
		}
		}
		if (sum >= TOO_BIG - total)
			return FTF_RF_NOMEM;
		total += (size_t)sum;
		continue;
bad:
		*bad_item = i;
		for (size_t r = 0; r < nrows; r++) {
			if (bad_value(it, int_at(it, r))) {
				*bad_row = r;
				break;
			}
		}
		return FTF_RF_BADVALUE;
	}
	*len = total;
	return FTF_RF_OK;
}

/* ---- the write pass ---------------------------------------------------
 * The template is first compiled into ops, each a literal followed by at
 * most one value: half as many steps per row. Every literal and fragment is
 * copied into an arena with PAD bytes after it, so that the short ones are
 * copied PAD bytes at a time (a fixed-size copy the compiler inlines; the
 * bytes past the literal are overwritten by what follows, and row_max
 * leaves PAD bytes of room for the last). */
#define PAD 32

typedef struct {
	ftf_str pre;  /* the literal before the value */
	int kind;     /* FTF_RF_LIT: no value (a template's trailing literal) */
	const char *col;
	ptrdiff_t stride;
	int itemsize;
	const ftf_str *frags; /* ENUM, SEG of ENUM */
	size_t nfrags;
	ftf_str lit;          /* REP */
	const char *col2;     /* SEG: the counts (col: the starts) */
	ptrdiff_t stride2;
	int itemsize2;
	ftf_rowfmt_seg seg;
	size_t segw;          /* SEG: the widest value (seg_width) */
} rf_op;

typedef struct {
	rf_op *ops;
	size_t nops;
	size_t nrows; /* the rows' count: how far ahead write_row may prefetch */
	ftf_str *frags;
	char *arena;
} rf_prog;

static void prog_free(rf_prog *g)
{
	free(g->ops);
	free(g->frags);
	free(g->arena);
}

static ftf_str arena_put(char **at, const char *s, size_t len)
{
	ftf_str out = { *at, len };
	memcpy(*at, s, len);
	memset(*at + len, 0, PAD);
	*at += len + PAD;
	return out;
}

static int prog_compile(const ftf_rowfmt_item *items, size_t nitems, rf_prog *g)
{
	size_t bytes = PAD, nfrags = 0, nops = 1;
	memset(g, 0, sizeof(*g));
	for (size_t i = 0; i < nitems; i++) {
		const ftf_rowfmt_item *it = &items[i];
		bytes += it->lit.len + 2 * PAD; /* a value's padded prefix; REP's literal */
		if (it->kind != FTF_RF_LIT)
			nops++;
		if (it->kind == FTF_RF_ENUM || (it->kind == FTF_RF_SEG && it->seg.kind == FTF_RF_ENUM)) {
			nfrags += it->nfrags;
			for (size_t k = 0; k < it->nfrags; k++)
				bytes += it->frags[k].len + PAD;
		}
	}
	g->ops = calloc(nops, sizeof(*g->ops));
	g->frags = calloc(nfrags + 1, sizeof(*g->frags));
	g->arena = malloc(bytes);
	if (!g->ops || !g->frags || !g->arena) {
		prog_free(g);
		return -1;
	}
	char *at = g->arena;
	ftf_str *fr = g->frags;
	rf_op *op = g->ops;
	op->pre.s = at;
	for (size_t i = 0; i < nitems; i++) {
		const ftf_rowfmt_item *it = &items[i];
		if (it->kind == FTF_RF_LIT) { /* adjacent literals: one */
			memcpy(at, it->lit.s, it->lit.len);
			at += it->lit.len;
			op->pre.len += it->lit.len;
			continue;
		}
		memset(at, 0, PAD);
		at += PAD;
		op->kind = it->kind;
		op->col = it->col;
		op->stride = it->stride;
		op->itemsize = it->itemsize;
		if (it->kind == FTF_RF_REP)
			op->lit = arena_put(&at, it->lit.s, it->lit.len);
		if (it->kind == FTF_RF_SEG) {
			op->col2 = it->col2;
			op->stride2 = it->stride2;
			op->itemsize2 = it->itemsize2;
			op->seg = it->seg;
			op->segw = seg_width(it);
		}
		if (it->kind == FTF_RF_ENUM || (it->kind == FTF_RF_SEG && it->seg.kind == FTF_RF_ENUM)) {
			op->frags = fr;
			op->nfrags = it->nfrags;
			for (size_t k = 0; k < it->nfrags; k++)
				*fr++ = arena_put(&at, it->frags[k].s, it->frags[k].len);
		}
		op++;
		op->pre.s = at;
	}
	memset(at, 0, PAD);
	g->nops = (size_t)(op - g->ops) + 1; /* the last: a trailing literal (maybe empty) */
	return 0;
}

static inline __attribute__((always_inline)) char *put(char *p, ftf_str s)
{
	if (s.len <= PAD)
		memcpy(p, s.s, PAD);
	else
		memcpy(p, s.s, s.len);
	return p + s.len;
}

static inline int64_t op_int(const rf_op *op, size_t r)
{
	return ftf_rowfmt_int(op->col + (ptrdiff_t)r * op->stride, op->itemsize);
}

static inline size_t op_seg_count(const rf_op *op, size_t r)
{
	return (size_t)ftf_rowfmt_int(op->col2 + (ptrdiff_t)r * op->stride2, op->itemsize2);
}

/* A SEG op's run of row r at p, taking its bytes out of *slack; NULL when
 * they do not fit (or a value is out of range: the columns changed). */
static char *write_seg(const rf_op *op, size_t r, char *p, size_t *slack)
{
	size_t start = (size_t)op_int(op, r), count = op_seg_count(op, r);
	size_t need = seg_bytes(count, op->segw);
	if (need > *slack || start > op->seg.nvalues || count > op->seg.nvalues - start)
		return NULL;
	*slack -= need;
	const ftf_rowfmt_seg *g = &op->seg;
	for (size_t k = start; k < start + count; k++) {
		if (k > start)
			*p++ = ',';
		if (g->kind == FTF_RF_INT) {
			p += fmt_i64(p, seg_int(g, k));
		} else if (g->kind == FTF_RF_F1N) {
			double d = seg_f64(g, k);
			if (d != d) {
				memcpy(p, "null", 4);
				p += 4;
			} else {
				p += fmt_f1(p, d);
			}
		} else {
			int64_t v = seg_int(g, k);
			if (v < 0 || (uint64_t)v >= op->nfrags)
				return NULL;
			p = put(p, op->frags[v]);
		}
	}
	return p;
}

/* Rows ahead whose values write_row asks the cache for: a row reads one
 * value of each of about 45 columns, more streams than the hardware
 * prefetcher follows, and the columns were just written on another core. */
#define PREFETCH_ROWS 16

/* Row r at p; end - p >= max (row_max + PAD) on entry. NULL when it does
 * not fit or an index is out of range: the columns changed since they
 * were sized. */
static inline char *write_row(const rf_prog *g, size_t r, char *p, const char *end, size_t max)
{
	size_t slack = (size_t)(end - p) - max; /* what REP items may take */
	ptrdiff_t ahead = r + PREFETCH_ROWS < g->nrows ? PREFETCH_ROWS : 0;
	for (const rf_op *op = g->ops, *last = g->ops + g->nops; op < last; op++) {
		int64_t v;
		double d;
		p = put(p, op->pre);
		if (op->kind != FTF_RF_LIT)
			__builtin_prefetch(op->col + ((ptrdiff_t)r + ahead) * op->stride);
		switch (op->kind) {
		case FTF_RF_INT:
			p += fmt_i64(p, op_int(op, r));
			break;
		case FTF_RF_F1:
			memcpy(&d, op->col + (ptrdiff_t)r * op->stride, sizeof(d));
			p += fmt_f1(p, d);
			break;
		case FTF_RF_F1N:
			memcpy(&d, op->col + (ptrdiff_t)r * op->stride, sizeof(d));
			if (d != d) {
				memcpy(p, "null", 4);
				p += 4;
			} else {
				p += fmt_f1(p, d);
			}
			break;
		case FTF_RF_ENUM:
			v = op_int(op, r);
			if (v < 0 || (uint64_t)v >= op->nfrags)
				return NULL;
			p = put(p, op->frags[v]);
			break;
		case FTF_RF_REP:
			v = op_int(op, r);
			if (v < 0 || (op->lit.len && (uint64_t)v > slack / op->lit.len))
				return NULL;
			slack -= (size_t)v * op->lit.len;
			for (int64_t k = 0; k < v; k++)
				p = put(p, op->lit);
			break;
		case FTF_RF_SEG:
			p = write_seg(op, r, p, &slack);
			if (!p)
				return NULL;
			break;
		}
	}
	return p;
}

/* REP bytes of row r (the columns were sized: no overflow unless changed) */
static size_t rep_bytes(const rf_prog *g, size_t r)
{
	size_t n = 0;
	for (size_t i = 0; i < g->nops; i++) {
		const rf_op *op = &g->ops[i];
		if (op->kind == FTF_RF_SEG) {
			size_t b = seg_bytes(op_seg_count(op, r), op->segw);
			if (b >= TOO_BIG - n)
				return TOO_BIG;
			n += b;
			continue;
		}
		if (op->kind != FTF_RF_REP)
			continue;
		int64_t v = op_int(op, r);
		if (v < 0 || (op->lit.len && (uint64_t)v > (TOO_BIG - n) / op->lit.len))
			return TOO_BIG;
		n += (size_t)v * op->lit.len;
	}
	return n;
}

int ftf_rowfmt_write(const ftf_rowfmt_item *items, size_t nitems, size_t nrows, char *dst, size_t cap,
		     size_t *len)
{
	rf_prog g;
	size_t max = row_max(items, nitems);
	if (max >= TOO_BIG - PAD)
		return FTF_RF_NOMEM;
	max += PAD;
	if (prog_compile(items, nitems, &g) < 0)
		return FTF_RF_NOMEM;
	g.nrows = nrows;
	char *p = dst, *end = dst + cap, *scratch = NULL;
	size_t scap = 0;
	int rc = FTF_RF_OK;
	for (size_t r = 0; r < nrows; r++) {
		char *q = (size_t)(end - p) >= max ? write_row(&g, r, p, end, max) : NULL;
		if (q) {
			p = q;
			continue;
		}
		/* the last rows, whose row_max would run past the end: through
		 * a scratch row, copied when the row does fit */
		size_t need = rep_bytes(&g, r);
		if (need >= TOO_BIG - max) {
			rc = FTF_RF_CHANGED;
			break;
		}
		need += max;
		if (need > scap) {
			char *s = realloc(scratch, need);
			if (!s) {
				rc = FTF_RF_NOMEM;
				break;
			}
			scratch = s;
			scap = need;
		}
		q = write_row(&g, r, scratch, scratch + scap, max);
		if (!q || (size_t)(q - scratch) > (size_t)(end - p)) {
			rc = FTF_RF_CHANGED;
			break;
		}
		memcpy(p, scratch, (size_t)(q - scratch));
		p += q - scratch;
	}
	free(scratch);
	prog_free(&g);
	*len = (size_t)(p - dst);
	return rc;
}

/* ---- streaming to a file descriptor --------------------------------------
 * The rows go through two chunk buffers: this thread formats one while a
 * writer thread write()s the other. The whole text never exists in memory
 * (75 MB for a 3 M-event trace: as a string, then as bytes, then in the page
 * cache, each page touched fresh), and writing overlaps formatting. */
#define CHUNK ((size_t)1 << 20)

typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fd;
	char *buf[2];
	size_t cap[2], fill[2];
	int full[2]; /* handed to the writer, not yet written */
	int done;    /* no more chunks */
	int err;     /* errno of the first failed write; later chunks are dropped */
} rf_sink;

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno ? errno : EIO;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *writer_main(void *arg)
{
	rf_sink *s = arg;
	prctl(PR_SET_NAME, "ftflame-write", 0, 0, 0); /* for top -H, perf, bench/timeline.py */
	for (int k = 0;; k ^= 1) {
		pthread_mutex_lock(&s->mu);
		while (!s->full[k] && !s->done)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->full[k]) {
			pthread_mutex_unlock(&s->mu);
			return NULL;
		}
		int failed = s->err;
		pthread_mutex_unlock(&s->mu);
		int e = failed ? 0 : write_all(s->fd, s->buf[k], s->fill[k]);
		pthread_mutex_lock(&s->mu);
		if (e)
			s->err = e;
		s->full[k] = 0;
		s->fill[k] = 0;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
	}
}

/* Hand buffer k to the writer (or write it here, without a writer thread)
 * and wait until the other one is free. Returns the buffer to fill next. */
static int sink_flush(rf_sink *s, int k, int threaded)
{
	if (!threaded) {
		if (!s->err)
			s->err = write_all(s->fd, s->buf[k], s->fill[k]);
		s->fill[k] = 0;
		return k;
	}
	pthread_mutex_lock(&s->mu);
	s->full[k] = 1;
	pthread_cond_broadcast(&s->cv);
	k ^= 1;
	while (s->full[k])
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	return k;
}

/* The first bad value of row r (ENUM index out of range, negative REP
 * count): its item in *bad_item, FTF_RF_BADVALUE; else FTF_RF_OK. */
static int check_row(const ftf_rowfmt_item *items, size_t nitems, size_t r, size_t *bad_item)
{
	for (size_t i = 0; i < nitems; i++) {
		const ftf_rowfmt_item *it = &items[i];
		if ((it->kind == FTF_RF_ENUM || it->kind == FTF_RF_REP) && bad_value(it, int_at(it, r))) {
			*bad_item = i;
			return FTF_RF_BADVALUE;
		}
	}
	return FTF_RF_OK;
}

int ftf_rowfmt_write_fd(const ftf_rowfmt_item *items, size_t nitems, size_t nrows, int fd, size_t *len,
			int *err, size_t *bad_row, size_t *bad_item)
{
	rf_prog g;
	size_t max = row_max(items, nitems);
	*len = 0;
	*err = 0;
	if (max >= TOO_BIG - PAD - CHUNK)
		return FTF_RF_NOMEM;
	max += PAD;
	if (prog_compile(items, nitems, &g) < 0)
		return FTF_RF_NOMEM;
	g.nrows = nrows;
	rf_sink s;
	memset(&s, 0, sizeof(s));
	s.fd = fd;
	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.cv, NULL);
	int rc = FTF_RF_OK;
	for (int k = 0; k < 2; k++) {
		s.cap[k] = CHUNK + max;
		s.buf[k] = malloc(s.cap[k]);
		if (!s.buf[k])
			rc = FTF_RF_NOMEM;
	}
	pthread_t th;
	int threaded = rc == FTF_RF_OK && pthread_create(&th, NULL, writer_main, &s) == 0;
	int k = 0;
	for (size_t r = 0; rc == FTF_RF_OK && r < nrows; r++) {
		char *p = s.buf[k] + s.fill[k], *end = s.buf[k] + s.cap[k];
		char *q = (size_t)(end - p) >= max ? write_row(&g, r, p, end, max) : NULL;
		if (!q && (rc = check_row(items, nitems, r, bad_item)) != FTF_RF_OK) {
			*bad_row = r;
			break;
		}
		if (!q && s.fill[k]) { /* full: on to the other buffer */
			k = sink_flush(&s, k, threaded);
			q = write_row(&g, r, s.buf[k], s.buf[k] + s.cap[k], max);
		}
		if (!q) { /* a row longer than a chunk (a deep REP): a bigger buffer */
			size_t need = rep_bytes(&g, r);
			char *b = need < TOO_BIG - max ? realloc(s.buf[k], need + max) : NULL;
			if (!b) {
				rc = FTF_RF_NOMEM;
				break;
			}
			s.buf[k] = b;
			s.cap[k] = need + max;
			q = write_row(&g, r, b, b + s.cap[k], max);
			if (!q) {
				rc = FTF_RF_CHANGED;
				break;
			}
		}
		*len += (size_t)(q - s.buf[k]) - s.fill[k];
		s.fill[k] = (size_t)(q - s.buf[k]);
		if (s.fill[k] >= CHUNK)
			k = sink_flush(&s, k, threaded);
		if (threaded ? __atomic_load_n(&s.err, __ATOMIC_RELAXED) : s.err)
			break;
	}
	if (rc == FTF_RF_OK && s.fill[k])
		sink_flush(&s, k, threaded);
	if (threaded) {
		pthread_mutex_lock(&s.mu);
		s.done = 1;
		pthread_cond_broadcast(&s.cv);
		pthread_mutex_unlock(&s.mu);
		pthread_join(th, NULL);
	}
	pthread_cond_destroy(&s.cv);
	pthread_mutex_destroy(&s.mu);
	free(s.buf[0]);
	free(s.buf[1]);
	prog_free(&g);
	if (rc == FTF_RF_OK && s.err) {
		*err = s.err;
		rc = FTF_RF_IO;
	}
	return rc;
}
