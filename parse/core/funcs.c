/* Interned strings (funcs.h): open addressing on an FNV-1a hash, each name
 * copied once. */
#include <stdlib.h>
#include <string.h>

#include "funcs.h"

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

void ftf_funcs_init(ftf_funcs *f)
{
	memset(f, 0, sizeof(*f));
}

void ftf_funcs_free(ftf_funcs *f)
{
	for (uint32_t i = 0; i < f->n; i++)
		free(f->names[i]);
	free(f->names);
	free(f->slots);
	memset(f, 0, sizeof(*f));
}

static int funcs_grow(ftf_funcs *f)
{
	uint32_t nslots = f->nslots ? f->nslots * 2 : 1024;
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -1;
	for (uint32_t i = 0; i < f->n; i++) {
		uint64_t h = hash_bytes(f->names[i], strlen(f->names[i]));
		uint32_t s = h & (nslots - 1);
		while (slots[s])
			s = (s + 1) & (nslots - 1);
		slots[s] = i + 1;
	}
	free(f->slots);
	f->slots = slots;
	f->nslots = nslots;
	return 0;
}

uint32_t ftf_funcs_intern(ftf_funcs *f, const char *name, size_t len)
{
	char cut[FTF_MAX_NAME + 4];
	if (len > FTF_MAX_NAME) {
		/* cut on a UTF-8 character boundary, marked, counted */
		size_t keep = FTF_MAX_NAME;
		while (keep > 0 && ((unsigned char)name[keep] & 0xC0) == 0x80)
			keep--;
		memcpy(cut, name, keep);
		memcpy(cut + keep, "...", 4);
		name = cut;
		len = keep + 3;
		f->long_names++;
	}
	if ((f->n + 1) * 2 > f->nslots && funcs_grow(f) < 0)
		return FTF_NONE;
	uint64_t h = hash_bytes(name, len);
	uint32_t s = h & (f->nslots - 1);
	while (f->slots[s]) {
		const char *cand = f->names[f->slots[s] - 1];
		if (strncmp(cand, name, len) == 0 && cand[len] == '\0')
			return f->slots[s] - 1;
		s = (s + 1) & (f->nslots - 1);
	}
	if (f->n == f->cap) {
		uint32_t cap = f->cap ? f->cap * 2 : 256;
		char **names = realloc(f->names, cap * sizeof(*names));
		if (!names)
			return FTF_NONE;
		f->names = names;
		f->cap = cap;
	}
	char *copy = malloc(len + 1);
	if (!copy)
		return FTF_NONE;
	memcpy(copy, name, len);
	copy[len] = '\0';
	f->names[f->n] = copy;
	f->slots[s] = f->n + 1;
	return f->n++;
}
