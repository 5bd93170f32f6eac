/* Percentiles of CSR histograms (percentiles.h), exactly as the numpy
 * version kept in ftflame/model/profile.py computes them. */
#include <math.h>

#include "percentiles.h"

/* Rows ahead of the one read whose offsets, then entries, are prefetched */
#define PREFETCH_FAR 16
#define PREFETCH_NEAR 8

static inline int64_t count_at(const void *counts, int wide, int64_t k)
{
	return wide ? (int64_t)((const uint64_t *)counts)[k] : (int64_t)((const uint32_t *)counts)[k];
}

int ftf_hist_percentiles(const int64_t *offs, const int64_t *rows_at, size_t rows, const int32_t *bks,
			 const void *counts, int wide, const int64_t *mids, const int64_t *lo, const int64_t *hi,
			 const double *frac, size_t nq, int64_t *out, const ftf_hist_bounds *check, size_t *bad)
{
	for (size_t i = 0; i < rows; i++) {
		int64_t r = rows_at ? rows_at[i] : (int64_t)i;
		if (rows_at && i + PREFETCH_FAR < rows) {
			/* a chunk's rows are scattered over the table: their offsets
			 * asked for ahead, and the entries of those asked for before */
			int64_t f = rows_at[i + PREFETCH_FAR], g = rows_at[i + PREFETCH_NEAR];
			if (f >= 0 && (!check || f < check->rows))
				__builtin_prefetch(&offs[f]);
			if (g >= 0 && (!check || g < check->rows)) {
				int64_t at = offs[g];
				if (at >= 0 && (!check || at < check->entries)) {
					__builtin_prefetch(&bks[at]);
					__builtin_prefetch(wide ? (const void *)((const uint64_t *)counts + at)
								: (const void *)((const uint32_t *)counts + at));
				}
			}
		}
		if (check && (r < 0 || r >= check->rows)) {
			*bad = i;
			return FTF_PCT_BAD_ROW;
		}
		int64_t s = offs[r], e = offs[r + 1], total = 0;
		if (check && (s < 0 || s > e || e > check->entries)) {
			*bad = i;
			return FTF_PCT_BAD_OFFSETS;
		}
		/* the row's entries checked and counted in one pass, then read
		 * again from the cache for the ranks */
		for (int64_t k = s; k < e; k++) {
			if (check && (bks[k] < 0 || bks[k] >= check->mids)) {
				*bad = i;
				return FTF_PCT_BAD_BUCKET;
			}
			total += count_at(counts, wide, k);
		}
		/* the running count carried from one fraction to the next while
		 * they ascend (50, 90, 99): the entries walked once for all */
		int64_t run = 0, k = s, prev = -1;
		for (size_t j = 0; j < nq; j++) {
			int64_t val = 0;
			if (total > 0) {
				/* as numpy: ceil(total * (q / 100.0)), at least 1 */
				int64_t rank = (int64_t)ceil((double)total * frac[j]);
				if (rank < 1)
					rank = 1;
				if (rank < prev) { /* below the last fraction's: from the row's start */
					run = 0;
					k = s;
				}
				prev = rank;
				/* the first entry where the running count reaches rank; the
				 * last one when none does */
				for (; k < e - 1; k++) {
					int64_t c = count_at(counts, wide, k);
					if (run + c >= rank)
						break;
					run += c;
				}
				val = mids[bks[k]];
				if (val < lo[i])
					val = lo[i];
				if (val > hi[i])
					val = hi[i];
			}
			out[i * nq + j] = val;
		}
	}
	return FTF_PCT_OK;
}
