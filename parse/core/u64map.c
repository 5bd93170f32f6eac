/* ftf_u64map (u64map.h). */
#include <stdlib.h>

#include "u64map.h"

static void place(uint64_t *keys, uint64_t *vals, uint32_t nslots, uint64_t key, uint64_t val)
{
	uint32_t s = (uint32_t)ftf_mix64(key) & (nslots - 1);
	while (vals[s])
		s = (s + 1) & (nslots - 1);
	keys[s] = key;
	vals[s] = val;
}

static int grow(ftf_u64map *m)
{
	uint32_t nslots = m->nslots ? m->nslots * 2 : 1024;
	uint64_t *keys = malloc(nslots * sizeof(*keys));
	uint64_t *vals = calloc(nslots, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -1;
	}
	for (uint32_t i = 0; i < m->nslots; i++)
		if (m->vals[i])
			place(keys, vals, nslots, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->nslots = nslots;
	return 0;
}

int ftf_u64map_put(ftf_u64map *m, uint64_t key, uint64_t val)
{
	if ((m->n + 1) * 2 > m->nslots && grow(m) < 0)
		return -1;
	uint32_t s = (uint32_t)ftf_mix64(key) & (m->nslots - 1);
	while (m->vals[s]) {
		if (m->keys[s] == key) {
			m->vals[s] = val;
			return 0;
		}
		s = (s + 1) & (m->nslots - 1);
	}
	m->keys[s] = key;
	m->vals[s] = val;
	m->n++;
	return 0;
}

void ftf_u64map_free(ftf_u64map *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->n = m->nslots = 0;
}
