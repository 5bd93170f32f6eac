/* libFuzzer harness: the builtin trace.dat reader (dat_*.c) and the builder.
 *
 * Built by `make fuzz` with clang -fsanitize=fuzzer,address,undefined (never
 * by setup.py: files named fuzz_* are left out of the extension). The input
 * is a whole trace.dat, read from memory. Whatever the bytes, the read ends
 * with a one-line error or a result; after a result the builder's
 * invariants are checked (fuzz_common.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dat.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = fuzz_copy(data, size);
	ftf_builder *b = fuzz_builder_new();
	ftf_dat_meta *meta = malloc(sizeof(*meta));
	ftf_dat_damage *dmg = malloc(sizeof(*dmg));
	if (!copy || !b || !meta || !dmg)
		abort();
	char err[512] = "";
	int rc = ftf_read_dat_builtin_mem(copy, size, b, meta, dmg, err, sizeof(err));
	if (rc < 0) {
		/* one line, never empty */
		if (!err[0] || strchr(err, '\n'))
			abort();
	} else {
		fuzz_check_tree(b);
	}
	fuzz_builder_free(b);
	free(meta);
	free(dmg);
	free(copy);
	return 0;
}
