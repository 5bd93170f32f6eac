/* libFuzzer harness: the builtin trace.dat reader (dat_*.c) and the builder.
 *
 * Built by `make fuzz` with clang -fsanitize=fuzzer,address,undefined (never
 * by setup.py: files named fuzz_* are left out of the extension). The input
 * is a whole trace.dat, read from memory. Whatever the bytes, the read ends
 * with a one-line error or a result; after a result a few invariants of the
 * aggregate are checked (a failure aborts, and libFuzzer keeps the input). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a private copy, so reads past the end are caught by ASan */
	uint8_t *copy = malloc(size ? size : 1);
	ftf_builder *b = malloc(sizeof(*b));
	ftf_dat_meta *meta = malloc(sizeof(*meta));
	ftf_dat_damage *dmg = malloc(sizeof(*dmg));
	if (!copy || !b || !meta || !dmg)
		abort();
	memcpy(copy, data, size);
	ftf_builder_init(b);
	char err[512] = "";
	int rc = ftf_read_dat_builtin_mem(copy, size, b, meta, dmg, err, sizeof(err));
	if (rc < 0) {
		/* one line, never empty */
		if (!err[0] || strchr(err, '\n'))
			abort();
	} else {
		uint64_t calls = 0;
		for (uint32_t i = 0; i < b->nnodes; i++) {
			const ftf_node *n = &b->nodes[i];
			if (n->parent != FTF_NONE && n->parent >= i)
				abort(); /* parents come first */
			if (n->func >= b->funcs.n)
				abort();
			calls += n->all.calls;
		}
		if (calls != b->c.exits)
			abort();
	}
	ftf_builder_free(b);
	free(b);
	free(meta);
	free(dmg);
	free(copy);
	return 0;
}
