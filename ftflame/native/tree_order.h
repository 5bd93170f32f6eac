/* The call tree's canonical order: rows in pre-order, siblings by inclusive
 * time descending, then name rank, then row. The JSON tree is written in it
 * (report/jsonout.py). No Python here: model_module.c checks the arguments
 * and calls this with the GIL released.
 */
#ifndef FTF_TREE_ORDER_H
#define FTF_TREE_ORDER_H

#include <stddef.h>
#include <stdint.h>

/* parent[i] in -1..n-1 (checked by the caller); -1 for a root. Writes the
 * n rows in pre-order into pre and each row's depth into depth. Scratch:
 * kids[n], first[n + 2] (zeroed), stack[n]. Returns -1 when the parents do
 * not form a forest (a cycle), else 0. */
int ftf_tree_preorder(const int64_t *parent, const int64_t *incl, const int64_t *name_rank, size_t n,
		      int64_t *pre, int64_t *depth, int64_t *kids, int64_t *first, int64_t *stack);

#endif
