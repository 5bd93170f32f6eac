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
 * first.
 * check: the table's bounds, each row checked against them as it is read
 * (a row of the table, its offsets ascending within the entries, its
 * buckets inside mids): a chunk's rows are scattered over the table, and a
 * pass checking them first fetched each from memory once more. On the
 * first bad row its FTF_PCT_BAD_* code, its position in *bad. NULL: the
 * caller has checked the whole table. */
typedef struct {
	int64_t rows;    /* the table's rows */
	int64_t entries; /* its bucket entries */
	int64_t mids;    /* the mids table's length */
} ftf_hist_bounds;

#define FTF_PCT_OK 0
#define FTF_PCT_BAD_ROW (-1)     /* a row past the table */
#define FTF_PCT_BAD_OFFSETS (-2) /* a row's offsets not ascending within the entries */
#define FTF_PCT_BAD_BUCKET (-3)  /* a bucket past the mids table */

int ftf_hist_percentiles(const int64_t *offs, const int64_t *rows_at, size_t rows, const int32_t *bks,
			 const void *counts, int wide, const int64_t *mids, const int64_t *lo, const int64_t *hi,
			 const double *frac, size_t nq, int64_t *out, const ftf_hist_bounds *check, size_t *bad);

#endif
