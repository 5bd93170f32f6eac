/* Node columns reduced per key (the function table: every call path's
 * figures summed, or their extremes taken, per function). No Python here:
 * model_module.c checks the arguments and calls this with the GIL released.
 */
#ifndef FTF_GROUP_REDUCE_H
#define FTF_GROUP_REDUCE_H

#include <stddef.h>
#include <stdint.h>

enum ftf_group_op { FTF_GROUP_SUM = 0, FTF_GROUP_MIN = 1, FTF_GROUP_MAX = 2 };

/* Per group: out[keys[i]] gets values[i] summed (as unsigned 64-bit:
 * wrapping as numpy's int64 does), or the least or greatest of them, over
 * the rows with calls[i] > 0 when calls is given; out holds each group's
 * starting value on entry. keys index out, checked by the caller; keys
 * and values 32 or 64 bits wide (*_wide). One pass over the columns as
 * stored: memory-bound (0.3 ms for 220k call paths; four partial results
 * per group to break the adds' chain gained nothing). */
void ftf_group_reduce(const void *keys, int keys_wide, const void *values, int values_wide, const int32_t *calls,
		      size_t n, enum ftf_group_op op, int64_t *out);

#endif
