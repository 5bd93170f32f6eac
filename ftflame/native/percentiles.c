/* Percentiles of CSR histograms (percentiles.h), exactly as the numpy
 * version kept in ftflame/model/profile.py computes them. */
#include <math.h>

#include "percentiles.h"

static int64_t count_at(const void *counts, int wide, int64_t k)
{
	return wide ? (int64_t)((const uint64_t *)counts)[k] : (int64_t)((const uint32_t *)counts)[k];
}

/* The bucket index (into bks) of entries s..e-1 where the running count
 * first reaches rank; the last entry when none does. */
static int64_t entry_at_rank(const void *counts, int wide, int64_t s, int64_t e, int64_t rank)
{
	int64_t run = 0, k = s;
	for (; k < e - 1; k++) {
		run += count_at(counts, wide, k);
		if (run >= rank)
			break;
	}
	return k;
}

void ftf_hist_percentiles(const int64_t *offs, const int64_t *rows_at, size_t rows, const int32_t *bks,
			  const void *counts, int wide, const int64_t *mids, const int64_t *lo, const int64_t *hi,
			  const double *frac, size_t nq, int64_t *out)
{
	for (size_t i = 0; i < rows; i++) {
		int64_t r = rows_at ? rows_at[i] : (int64_t)i;
		int64_t s = offs[r], e = offs[r + 1], total = 0;
		for (int64_t k = s; k < e; k++)
			total += count_at(counts, wide, k);
		for (size_t j = 0; j < nq; j++) {
			int64_t val = 0;
			if (total > 0) {
				/* as numpy: ceil(total * (q / 100.0)), at least 1 */
				int64_t rank = (int64_t)ceil((double)total * frac[j]);
				if (rank < 1)
					rank = 1;
				val = mids[bks[entry_at_rank(counts, wide, s, e, rank)]];
				if (val < lo[i])
					val = lo[i];
				if (val > hi[i])
					val = hi[i];
			}
			out[i * nq + j] = val;
		}
	}
}
