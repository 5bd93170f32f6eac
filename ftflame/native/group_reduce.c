/* Node columns reduced per key (group_reduce.h). */
#include "group_reduce.h"

static inline int64_t at(const void *a, int wide, size_t i)
{
	return wide ? ((const int64_t *)a)[i] : (int64_t)((const int32_t *)a)[i];
}

void ftf_group_reduce(const void *keys, int keys_wide, const void *values, int values_wide, const int32_t *calls,
		      size_t n, enum ftf_group_op op, int64_t *out)
{
	for (size_t i = 0; i < n; i++) {
		if (calls && calls[i] <= 0)
			continue;
		int64_t k = at(keys, keys_wide, i), v = at(values, values_wide, i);
		if (op == FTF_GROUP_SUM)
			out[k] = (int64_t)((uint64_t)out[k] + (uint64_t)v);
		else if (op == FTF_GROUP_MIN ? v < out[k] : v > out[k])
			out[k] = v;
	}
}
