/* ftf_u64map (u64map.h). */
#include <stdlib.h>

#include "u64map.h"

static void place(ftf_u64slot *slots, uint32_t nslots, uint64_t key, uint64_t val)
{
	uint32_t s = (uint32_t)ftf_mix64(key) & (nslots - 1);
	while (slots[s].val)
		s = (s + 1) & (nslots - 1);
	slots[s].key = key;
	slots[s].val = val;
}

static int grow(ftf_u64map *m)
{
	uint32_t nslots = m->nslots ? m->nslots * 2 : 1024;
	ftf_u64slot *slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -1;
	for (uint32_t i = 0; i < m->nslots; i++)
		if (m->slots[i].val)
			place(slots, nslots, m->slots[i].key, m->slots[i].val);
	free(m->slots);
	m->slots = slots;
	m->nslots = nslots;
	return 0;
}

int ftf_u64map_put(ftf_u64map *m, uint64_t key, uint64_t val)
{
	if ((m->n + 1) * 2 > m->nslots && grow(m) < 0)
		return -1;
	uint32_t s = (uint32_t)ftf_mix64(key) & (m->nslots - 1);
	while (m->slots[s].val) {
		if (m->slots[s].key == key) {
			m->slots[s].val = val;
			return 0;
		}
		s = (s + 1) & (m->nslots - 1);
	}
	m->slots[s].key = key;
	m->slots[s].val = val;
	m->n++;
	return 0;
}

void ftf_u64map_free(ftf_u64map *m)
{
	free(m->slots);
	m->slots = NULL;
	m->n = m->nslots = 0;
}
