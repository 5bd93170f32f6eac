/* The correction's passes over the call tree a level at a time
 * (ftflame/correct/corrections.py): interrupt subtrees summed up from the
 * leaves, corrected inclusive times clamped down from the roots. No Python
 * here: model_module.c checks the arguments and calls these with the GIL
 * released.
 *
 * Both walk `order`, the rows level by level (depth ascending, a level's
 * rows ascending), level d being order[level_at[d]..level_at[d + 1]]; a
 * row's parent is on the level above it. Per row they do the float
 * operations the numpy passes they replace did per level, in the same
 * order (this file is built with -ffp-contract=off: no fused
 * multiply-add), so every figure is the same to the bit.
 */
#ifndef FTF_TREE_PASS_H
#define FTF_TREE_PASS_H

#include <stddef.h>
#include <stdint.h>

/* R[parent] += the row's contribution, levels from the deepest up to
 * level 1: its clean calls (calls less det_calls) when flags has root_bit
 * (an interrupt's root), 0 when it has irq_bit, else its own R less det_R
 * (interrupt subtrees inside task-context descendants). det_calls and
 * det_R may be NULL (no detached calls). R holds n zeros on entry. */
void ftf_irq_roots_up(const int32_t *order, const int64_t *level_at, size_t nlevels, const int32_t *parent,
		      const int32_t *flags, int32_t root_bit, int32_t irq_bit, const double *calls,
		      const int32_t *det_calls, const int32_t *det_R, double *R);

/* The top-down clamp, levels from the roots down: a counted row (counted[r])
 * takes its parent's scale, ci[r] = want[r] * scale[parent] (or, with
 * det_want, (want[r] - det_want[r]) * scale[parent] + det_want[r]); a row
 * whose children want more than its ci (kid_want[r] > ci[r], > 0) scales
 * them by ci[r] / kid_want[r] and adds the excess (less its switch work
 * switch_ns[r] when given, taken at 0 or above) to clamp_ns[r]. ci holds
 * want on entry; scale is n doubles of scratch. det_want and switch_ns may
 * be NULL. */
void ftf_clamp_down(const int32_t *order, const int64_t *level_at, size_t nlevels, const int32_t *parent,
		    const uint8_t *counted, const double *want, const double *det_want, const double *kid_want,
		    const double *switch_ns, double *ci, double *clamp_ns, double *scale);

/* Bit sets carried over the tree, a bit per set (the operations' call
 * paths, ftflame/correct/operations.py _operation_nodes): from the roots
 * down, inside[r] = top[r] | inside[parent] and outer[r] = top[r] &
 * ~inside[parent] (a row in a set, or below one; in a set with none above
 * it); then from the deepest level up, holds[parent] |= holds[r], holds
 * starting as inside (in a set, below one or above one). A root (level 0)
 * has nothing above it. inside, outer and holds: n values, written. */
void ftf_bits_down_up(const int32_t *order, const int64_t *level_at, size_t nlevels, const int32_t *parent,
		      const uint64_t *top, uint64_t *inside, uint64_t *outer, uint64_t *holds);

#endif
