/* Percentiles of many histograms at once: the Profile's per-call-path
 * percentiles (ftflame/model/profile.py, Histograms.percentiles). No Python here:
 * model_module.c checks the arguments and calls this with the GIL released.
 */
#ifndef FTF_PERCENTILES_H
#define FTF_PERCENTILES_H

#include <stddef.h>
#include <stdint.h>

/* Histograms in CSR form: row r's entries are offs[r]..offs[r+1], each a
 * bucket (an index into mids) and its count (uint32, or uint64 when wide).
 * For the i-th of `rows` rows (row rows[i], or row i when rows is NULL) and
 * each fraction frac[j] (q / 100), out[i * nq + j] is mids[bucket] of the
 * first bucket whose running count reaches ceil(total * frac[j]) (at least
 * 1), clamped to [lo[i], hi[i]]; 0 for a row with no counts. With rows, a
 * chunk of the table's rows is read in place: its entries are not gathered
 * first. The caller has checked offsets, buckets and rows. */
void ftf_hist_percentiles(const int64_t *offs, const int64_t *rows_at, size_t rows, const int32_t *bks,
			  const void *counts, int wide, const int64_t *mids, const int64_t *lo, const int64_t *hi,
			  const double *frac, size_t nq, int64_t *out);

#endif
