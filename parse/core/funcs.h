/* An interned string table (funcs.c): function names, each stored once and
 * known by a dense id; the builder's function table and the operations'
 * labels.
 */
#ifndef FTF_FUNCS_H
#define FTF_FUNCS_H

#include <stddef.h>
#include <stdint.h>

/* No id, no index: an id the tables never reach. */
#define FTF_NONE UINT32_MAX

typedef struct {
	char **names;
	uint32_t n, cap;
	/* open-addressing map name -> id */
	uint32_t *slots; /* id+1, 0 = empty */
	uint32_t nslots;
	uint64_t long_names; /* names cut to FTF_MAX_NAME bytes */
} ftf_funcs;

/* A function name longer than this (bytes) is cut and marked "...": no
 * kernel symbol comes close, and a 50 MB one cost 1.2 GB in the JSON. */
#define FTF_MAX_NAME 4096

void ftf_funcs_init(ftf_funcs *f);
void ftf_funcs_free(ftf_funcs *f);
uint32_t ftf_funcs_intern(ftf_funcs *f, const char *name, size_t len);
#endif
