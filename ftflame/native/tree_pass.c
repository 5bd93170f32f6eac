/* The correction's passes over the call tree (tree_pass.h). */
#include "tree_pass.h"

/* numpy's maximum(x, 0.0): a NaN stays NaN. */
static inline double max0(double x)
{
	return (x >= 0.0 || x != x) ? x : 0.0;
}

void ftf_irq_roots_up(const int32_t *order, const int64_t *level_at, size_t nlevels, const int32_t *parent,
		      const int32_t *flags, int32_t root_bit, int32_t irq_bit, const double *calls,
		      const int32_t *det_calls, const int32_t *det_R, double *R)
{
	/* a level's rows add into their parents in row order, as np.add.at did:
	 * the sums are of whole calls, exact in doubles, but the order is kept */
	for (size_t d = nlevels; d-- > 1;) {
		for (int64_t i = level_at[d]; i < level_at[d + 1]; i++) {
			int32_t r = order[i];
			double task = R[r], own = calls[r];
			if (det_calls) {
				task = task - (double)det_R[r];
				own = own - (double)det_calls[r];
			}
			double contrib = (flags[r] & root_bit) ? own : ((flags[r] & irq_bit) ? 0.0 : task);
			R[parent[r]] += contrib;
		}
	}
}

void ftf_clamp_down(const int32_t *order, const int64_t *level_at, size_t nlevels, const int32_t *parent,
		    const uint8_t *counted, const double *want, const double *det_want, const double *kid_want,
		    const double *switch_ns, double *ci, double *clamp_ns, double *scale)
{
	for (size_t d = 0; d < nlevels; d++) {
		for (int64_t i = level_at[d]; i < level_at[d + 1]; i++) {
			int32_t r = order[i];
			if (counted[r]) { /* its parent, a level up, is final */
				if (det_want)
					ci[r] = (want[r] - det_want[r]) * scale[parent[r]] + det_want[r];
				else
					ci[r] = want[r] * scale[parent[r]];
			}
			int over = kid_want[r] > ci[r] && kid_want[r] > 0;
			scale[r] = over ? ci[r] / kid_want[r] : 1.0;
			double excess = kid_want[r] - ci[r];
			if (switch_ns)
				excess -= max0(switch_ns[r]);
			/* added where not over too: 0.0 turns a -0.0 into 0.0, as before */
			clamp_ns[r] += over ? max0(excess) : 0.0;
		}
	}
}

void ftf_bits_down_up(const int32_t *order, const int64_t *level_at, size_t nlevels, const int32_t *parent,
		      const uint64_t *top, uint64_t *inside, uint64_t *outer, uint64_t *holds)
{
	for (size_t d = 0; d < nlevels; d++) {
		for (int64_t i = level_at[d]; i < level_at[d + 1]; i++) {
			int32_t r = order[i];
			uint64_t above = d > 0 ? inside[parent[r]] : 0;
			outer[r] = top[r] & ~above;
			holds[r] = inside[r] = top[r] | above;
		}
	}
	for (size_t d = nlevels; d-- > 1;)
		for (int64_t i = level_at[d]; i < level_at[d + 1]; i++)
			holds[parent[order[i]]] |= holds[order[i]];
}
