/* Row-template formatter (rowfmt.h): the JSON call tree of 100k+ call
 * paths is ~45 numbers per row; Python's % formatting spends seconds on it,
 * this writes them straight into one growing buffer.
 *
 * "%.1f" is exact: the value's binary expansion times ten, rounded half to
 * even, which is what glibc's printf and Python's float formatting do (both
 * round the exact value correctly); snprintf covers what the integer fast
 * path cannot hold (|v| >= 2^59).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

size_t ftf_fmt_i64(char *dst, int64_t v)
{
	size_t sign = v < 0;
	uint64_t u = sign ? 0 - (uint64_t)v : (uint64_t)v;
	size_t n = u64_len(u);
	if (sign)
		*dst = '-';
	u64_put(dst + sign + n, u);
	return sign + n;
}

size_t ftf_fmt_f1(char *dst, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof(bits));
	int neg = (int)(bits >> 63);
	int bexp = (int)((bits >> 52) & 0x7ff);
	uint64_t frac = bits & ((UINT64_C(1) << 52) - 1);
	if (bexp == 0x7ff) {
		/* as Python writes them (glibc would write "-nan") */
		if (frac) {
			memcpy(dst, "nan", 3);
			return 3;
		}
		memcpy(dst, neg ? "-inf" : "inf", 3 + (size_t)neg);
		return 3 + (size_t)neg;
	}
	/* |v| = m * 2^e exactly */
	uint64_t m = bexp ? frac | (UINT64_C(1) << 52) : frac;
	int e = bexp ? bexp - 1075 : -1074;
	uint64_t q; /* |v| * 10, rounded half to even */
	if (e >= 0) {
		if (e > 6) /* m * 2^e * 10 might not fit 63 bits */
			return (size_t)snprintf(dst, FTF_RF_F1_MAX, "%.1f", v);
		q = (m << e) * 10;
	} else if (e <= -58) {
		q = 0; /* 10m < 2^57 <= half of 2^-e: below 0.05 */
	} else {
		int k = -e;
		uint64_t t = m * 10; /* < 2^57 */
		uint64_t r = t & ((UINT64_C(1) << k) - 1), half = UINT64_C(1) << (k - 1);
		q = t >> k;
		if (r > half || (r == half && (q & 1)))
			q++;
	}
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

static int reserve(ftf_strbuf *out, size_t need)
{
	if (out->cap - out->len >= need)
		return 0;
	if (need > SIZE_MAX / 4 - out->len)
		return -1;
	size_t cap = out->cap ? out->cap * 2 : 1 << 16;
	while (cap - out->len < need)
		cap *= 2;
	char *b = realloc(out->buf, cap);
	if (!b)
		return -1;
	out->buf = b;
	out->cap = cap;
	return 0;
}

static inline int64_t int_at(const ftf_rowfmt_item *it, size_t r)
{
	return it->itemsize == 8 ? ((const int64_t *)it->col)[r] : ((const int32_t *)it->col)[r];
}

int ftf_rowfmt(const ftf_rowfmt_item *items, size_t nitems, size_t nrows, ftf_strbuf *out,
	       size_t *bad_row, size_t *bad_item)
{
	/* the most one row can take, REP items apart */
	size_t row_max = 0;
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
			w = FTF_RF_F1_MAX;
			break;
		case FTF_RF_ENUM:
			for (size_t k = 0; k < it->nfrags; k++)
				if (it->frags[k].len > w)
					w = it->frags[k].len;
			break;
		}
		if (w > SIZE_MAX / 4 - row_max)
			return FTF_RF_NOMEM;
		row_max += w;
	}
	for (size_t r = 0; r < nrows; r++) {
		if (reserve(out, row_max) < 0)
			return FTF_RF_NOMEM;
		char *p = out->buf + out->len;
		for (size_t i = 0; i < nitems; i++) {
			const ftf_rowfmt_item *it = &items[i];
			int64_t v;
			switch (it->kind) {
			case FTF_RF_LIT:
				memcpy(p, it->lit.s, it->lit.len);
				p += it->lit.len;
				break;
			case FTF_RF_INT:
				p += ftf_fmt_i64(p, int_at(it, r));
				break;
			case FTF_RF_F1:
				p += ftf_fmt_f1(p, ((const double *)it->col)[r]);
				break;
			case FTF_RF_ENUM:
				v = int_at(it, r);
				if (v < 0 || (uint64_t)v >= it->nfrags)
					goto bad;
				memcpy(p, it->frags[v].s, it->frags[v].len);
				p += it->frags[v].len;
				break;
			case FTF_RF_REP:
				v = int_at(it, r);
				if (v < 0)
					goto bad;
				if (v == 0 || it->lit.len == 0)
					break;
				if ((uint64_t)v > (SIZE_MAX / 4 - row_max) / it->lit.len)
					return FTF_RF_NOMEM;
				out->len = (size_t)(p - out->buf);
				if (reserve(out, (size_t)v * it->lit.len + row_max) < 0)
					return FTF_RF_NOMEM;
				p = out->buf + out->len;
				for (int64_t k = 0; k < v; k++) {
					memcpy(p, it->lit.s, it->lit.len);
					p += it->lit.len;
				}
				break;
			}
			continue;
bad:
			out->len = (size_t)(p - out->buf);
			*bad_row = r;
			*bad_item = i;
			return FTF_RF_BADVALUE;
		}
		out->len = (size_t)(p - out->buf);
	}
	return FTF_RF_OK;
}
