/* Memory hints shared by the reader and the builder. */
#ifndef FTF_MEM_H
#define FTF_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* ftf_hint_huge: the whole pages of [p, p + n), when n >= FTF_HUGE, asked to be
 * backed by transparent huge pages where the kernel leaves that to the program
 * (transparent_hugepage=madvise): a table first written in 2 MB units takes one
 * page fault per unit instead of 512. Page faults were a sixth of the report's
 * CPU on the lost-event bench trace; the big tables (the node table and its
 * slots, the trees, the exported columns, the kallsyms and its tables) take a
 * third fewer this way (docs/performance.md, "Figures behind choices in the
 * code"), for at most one partly used huge page more resident per table.
 * Blocks from malloc too: only their whole pages are hinted, and a huge page
 * is used only where 2 MB aligned fit inside. */
#define FTF_HUGE ((size_t)2 << 20)

static inline void ftf_hint_huge(void *p, size_t n)
{
	if (!p || n < FTF_HUGE)
		return;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), e = ((uintptr_t)p + n) & ~(page - 1);
	if (a < e)
		madvise((void *)a, e - a, MADV_HUGEPAGE);
}

#endif
