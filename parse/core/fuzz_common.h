/* What the libFuzzer harnesses (fuzz_text.c, fuzz_dat.c) share: the
 * builder made and freed, private copies of the input (so that a read past
 * the end is caught by ASan, not hidden by libFuzzer's larger buffer), and
 * the invariants every result of the builder must hold. A broken invariant
 * aborts: libFuzzer then keeps the input as a finding. */
#ifndef FTF_FUZZ_COMMON_H
#define FTF_FUZZ_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"

/* A builder ready to feed, or NULL when out of memory. */
static inline ftf_builder *fuzz_builder_new(void)
{
	ftf_builder *b = malloc(sizeof(*b));
	if (b)
		ftf_builder_init(b);
	return b;
}

static inline void fuzz_builder_free(ftf_builder *b)
{
	ftf_builder_free(b);
	free(b);
}

/* n bytes of data in a buffer of exactly n bytes (one, for n = 0), or NULL. */
static inline uint8_t *fuzz_copy(const uint8_t *data, size_t n)
{
	uint8_t *copy = malloc(n ? n : 1);
	if (copy && n)
		memcpy(copy, data, n);
	return copy;
}

/* The call-path aggregate: parents come before their children, every node
 * names a known function, its minimum is at most its maximum, its gap calls
 * are some of its calls, and the calls sum to the exits seen. */
static inline void fuzz_check_tree(const ftf_builder *b)
{
	uint64_t calls = 0;
	for (uint32_t i = 0; i < b->nnodes; i++) {
		const ftf_node *n = &b->nodes[i];
		if (n->parent != FTF_NONE && n->parent >= i)
			abort();
		if (n->func >= b->funcs.n)
			abort();
		const ftf_node_more *m = ftf_node_more_of(b, n);
		if (n->calls && (n->incl_min > n->incl_max || (m && m->gap.calls > n->calls)))
			abort();
		calls += n->calls;
	}
	if (calls != b->c.exits)
		abort();
}

#endif
