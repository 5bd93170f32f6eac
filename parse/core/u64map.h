/* A map from 64-bit keys to nonzero 64-bit values (0 means absent): open
 * addressing with linear probing, grown to keep at most half of the slots
 * full. Insert and look up only. Serves the builder's call-path nodes,
 * the trace.dat readers' function addresses and reader_text's task stacks. */
#ifndef FTF_U64MAP_H
#define FTF_U64MAP_H

#include <stdint.h>

/* A key beside its value: a probe touches one cache line, not two. */
typedef struct {
	uint64_t key;
	uint64_t val; /* 0: empty slot */
} ftf_u64slot;

typedef struct {
	ftf_u64slot *slots;
	uint32_t n, nslots; /* nslots: 0 or a power of two */
} ftf_u64map;

static inline uint64_t ftf_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static inline uint64_t ftf_u64map_get(const ftf_u64map *m, uint64_t key)
{
	if (!m->nslots)
		return 0;
	uint32_t s = (uint32_t)ftf_mix64(key) & (m->nslots - 1);
	while (m->slots[s].val) {
		if (m->slots[s].key == key)
			return m->slots[s].val;
		s = (s + 1) & (m->nslots - 1);
	}
	return 0;
}

/* Sets key to val (nonzero), replacing a value already there. -1: out of
 * memory (the map is unchanged). */
int ftf_u64map_put(ftf_u64map *m, uint64_t key, uint64_t val);
void ftf_u64map_free(ftf_u64map *m);

#endif
