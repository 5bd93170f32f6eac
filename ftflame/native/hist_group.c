/* Histograms merged per key (hist_group.h): when the (group x bucket)
 * table is small (943 functions x 280 buckets on s18-long: 2 MB), one
 * sequential pass into it; else one group at a time through a
 * bucket-indexed scratch row, so that the memory beside the result is the
 * rows' order and one row of buckets. Never an entry-long key column (the
 * numpy version's keyed entries and float weights: 11 MiB for 178k call
 * paths). The keyed passes read the rows out of order (5x slower than the
 * sequential pass on s18-long), hence the table where it fits. */
#include "hist_group.h"

static uint64_t count_at(const void *counts, int wide, int64_t k)
{
	return wide ? ((const uint64_t *)counts)[k] : (uint64_t)((const uint32_t *)counts)[k];
}

/* The rows ordered by key (a counting sort, stable): group g's rows are
 * order[starts[g]] .. order[starts[g + 1] - 1]. */
static void rows_by_key(const int64_t *keys, size_t rows, size_t ngroups, int64_t *order, int64_t *starts)
{
	for (size_t g = 0; g <= ngroups; g++)
		starts[g] = 0;
	for (size_t r = 0; r < rows; r++)
		starts[keys[r] + 1]++;
	for (size_t g = 0; g < ngroups; g++)
		starts[g + 1] += starts[g];
	/* fill from each group's start; starts[g] moves to its end, then back */
	for (size_t r = 0; r < rows; r++)
		order[starts[keys[r]]++] = (int64_t)r;
	for (size_t g = ngroups; g > 0; g--)
		starts[g] = starts[g - 1];
	starts[0] = 0;
}

void ftf_hist_group(const int64_t *offs, size_t rows, const int32_t *bks, const void *counts, int wide,
		    const int64_t *keys, size_t ngroups, size_t nb, int64_t *out_offs, int32_t *out_bks,
		    uint64_t *out_cnts, int64_t *order, int64_t *starts, uint64_t *sums, int64_t *seen)
{
	int fill = out_bks != NULL;
	if (!fill)
		rows_by_key(keys, rows, ngroups, order, starts);
	/* seen[b] == stamp: bucket b has an entry in the group being merged;
	 * each pass has stamps of its own, so seen is zeroed only once */
	int64_t stamp_base = fill ? (int64_t)ngroups : 0;
	int64_t k = 0;
	out_offs[0] = 0;
	for (size_t g = 0; g < ngroups; g++) {
		int64_t stamp = stamp_base + (int64_t)g + 1;
		size_t lo = nb, hi = 0;
		for (int64_t i = starts[g]; i < starts[g + 1]; i++) {
			int64_t r = order[i];
			for (int64_t e = offs[r]; e < offs[r + 1]; e++) {
				size_t b = (size_t)bks[e];
				if (seen[b] != stamp) {
					seen[b] = stamp;
					sums[b] = 0;
					if (b < lo)
						lo = b;
					if (b + 1 > hi)
						hi = b + 1;
				}
				sums[b] += count_at(counts, wide, e);
			}
		}
		for (size_t b = lo; b < hi; b++) {
			if (seen[b] != stamp)
				continue;
			if (fill) {
				out_bks[k] = (int32_t)b;
				out_cnts[k] = sums[b];
			}
			k++;
		}
		if (!fill)
			out_offs[g + 1] = k;
	}
}

void ftf_hist_group_dense(const int64_t *offs, size_t rows, const int32_t *bks, const void *counts, int wide,
			  const int64_t *keys, size_t ngroups, int32_t b0, size_t nbr, int64_t *out_offs,
			  int32_t *out_bks, uint64_t *out_cnts, uint64_t *cells)
{
	if (out_bks == NULL) {
		for (size_t r = 0; r < rows; r++) {
			uint64_t *row = cells + (size_t)keys[r] * nbr;
			for (int64_t e = offs[r]; e < offs[r + 1]; e++) {
				uint64_t *cell = row + (bks[e] - b0);
				*cell += count_at(counts, wide, e) + (*cell == 0);
			}
		}
		int64_t k = 0;
		out_offs[0] = 0;
		for (size_t g = 0; g < ngroups; g++) {
			for (size_t b = 0; b < nbr; b++)
				k += cells[g * nbr + b] != 0;
			out_offs[g + 1] = k;
		}
		return;
	}
	int64_t k = 0;
	for (size_t i = 0; i < ngroups * nbr; i++) {
		if (cells[i]) {
			out_bks[k] = (int32_t)(i % nbr) + b0;
			out_cnts[k] = cells[i] - 1;
			k++;
		}
	}
}
