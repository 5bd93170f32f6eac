/* Histograms of many rows merged per key: the Profile's per-function
 * histograms from its per-call-path ones (ftflame/model/profile.py,
 * Histograms.group). No Python here: model_module.c checks the arguments and
 * calls this with the GIL released.
 */
#ifndef FTF_HIST_GROUP_H
#define FTF_HIST_GROUP_H

#include <stddef.h>
#include <stdint.h>

/* Rows in CSR form (offs[rows + 1]; each entry a bucket in 0..nb-1 and its
 * count, uint32, or uint64 when wide), keys[row] in 0..ngroups-1 (checked by
 * the caller). Group g's histogram has one entry per bucket any of its rows
 * has (a count of 0 included), buckets ascending, counts summed.
 *
 * Called twice: with out_bks NULL it writes out_offs[ngroups + 1] (where
 * each group's entries start); then, with out_bks and out_cnts of
 * out_offs[ngroups] entries, the entries. Scratch: order[rows] and
 * starts[ngroups + 1] (the rows by key, filled by the first call and read
 * by the second), sums[nb] and seen[nb] (seen zeroed before the first call). */
void ftf_hist_group(const int64_t *offs, size_t rows, const int32_t *bks, const void *counts, int wide,
		    const int64_t *keys, size_t ngroups, size_t nb, int64_t *out_offs, int32_t *out_bks,
		    uint64_t *out_cnts, int64_t *order, int64_t *starts, uint64_t *sums, int64_t *seen);

/* The same merge when a (group x bucket) table is small (the caller
 * decides): one pass over the entries in row order, the table
 * cells[ngroups * nbr] (zeroed before the first call) holding 1 + the sum
 * of each bucket b0 .. b0 + nbr - 1 a group has (0: none). Called twice
 * like ftf_hist_group: out_offs, then the entries. */
void ftf_hist_group_dense(const int64_t *offs, size_t rows, const int32_t *bks, const void *counts, int wide,
			  const int64_t *keys, size_t ngroups, int32_t b0, size_t nbr, int64_t *out_offs,
			  int32_t *out_bks, uint64_t *out_cnts, uint64_t *cells);

#endif
