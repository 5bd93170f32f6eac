/* The file's kallsyms (/proc/kallsyms of the traced machine) -> a sorted
 * address table. An address resolves to the symbol at or below it, as
 * trace-cmd does; absolute symbols ('A'/'a': per-CPU variable offsets on
 * x86-64) and ARM's '$a' mapping symbols are left out, like trace-cmd.
 *
 * Several names at one address (aliases: __do_softirq and
 * __softirqentry_text_start) are all valid; which one libtraceevent prints
 * depends on where its binary search first lands. For identical output the
 * same search is made here: the table in libtraceevent's order (by address,
 * equal addresses in reverse file order) and a halving search that stops at
 * the first entry whose address equals the one sought or whose range holds
 * it (the last entry's range is its address alone). */
#include <stdlib.h>
#include <string.h>

#include "dat.h"
#include "mem.h"

typedef struct dat_sym sym;

/* tab (n entries, file order) into libtraceevent's order: by address,
 * equal addresses in reverse file order. A stable radix sort of the
 * reversed table by address, a byte at a time from the lowest, skipping a
 * byte every address shares (the top four of a kernel's): a comparison
 * sort through qsort's callback took 40% of parsing a kallsyms of 110k
 * lines. tmp: room for n entries. Returns the sorted table, tab or tmp. */
static sym *sort_syms(sym *tab, sym *tmp, uint32_t n)
{
	for (uint32_t i = 0, j = n - 1; i < j; i++, j--) {
		sym x = tab[i];
		tab[i] = tab[j];
		tab[j] = x;
	}
	for (int shift = 0; shift < 64; shift += 8) {
		uint32_t count[256] = { 0 };
		for (uint32_t i = 0; i < n; i++)
			count[(tab[i].addr >> shift) & 0xff]++;
		if (count[(tab[0].addr >> shift) & 0xff] == n)
			continue; /* one value: the order stands */
		uint32_t pos = 0;
		for (int d = 0; d < 256; d++) {
			uint32_t c = count[d];
			count[d] = pos;
			pos += c;
		}
		for (uint32_t i = 0; i < n; i++)
			tmp[count[(tab[i].addr >> shift) & 0xff]++] = tab[i];
		sym *t = tab;
		tab = tmp;
		tmp = t;
	}
	return tab;
}

/* a hex digit's value + 1, 0 for any other byte */
static const unsigned char hex1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
	['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* "ffffffff81000000 T _stext\t[mod]" -> addr, type, name span */
static int parse_line(const char *p, size_t n, uint64_t *addr, char *type, size_t *ns, size_t *nl)
{
	size_t i = 0, digits = 0;
	uint64_t a = 0;
	while (i < n && hex1[(unsigned char)p[i]]) {
		if (digits++ >= 16)
			return -1;
		a = a << 4 | (uint64_t)(hex1[(unsigned char)p[i]] - 1);
		i++;
	}
	if (!digits || i >= n || p[i] != ' ')
		return -1;
	i++;
	if (i >= n)
		return -1;
	*type = p[i++];
	if (i >= n || p[i] != ' ')
		return -1;
	i++;
	size_t s = i;
	while (i < n && (unsigned char)p[i] >= 0x21 && (unsigned char)p[i] <= 0x7e)
		i++;
	if (i < n && p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
		return -1; /* no kernel symbol has such a byte: a damaged name */
	if (i == s)
		return -1;
	*addr = a;
	*ns = s;
	*nl = i - s;
	return 0;
}

int dat_syms_parse(dat_syms *s, const char *text, size_t len)
{
	memset(s, 0, sizeof(*s));
	/* Both tables sized once: a line makes one entry at most (and an entry
	 * takes 6 bytes at least, "0 T x\n", so a section of empty lines asks
	 * for no more than entries could fill), and a name with its NUL takes
	 * no more bytes than its line. Grown by realloc, they were copied at
	 * each doubling (blocks of a few MB come from the heap once glibc has
	 * raised its mmap threshold): 5 ms of the 25 a Debian kernel's 9 MB
	 * kallsyms took. Pages past the part used are never touched. */
	size_t most = 1, nlen = 0;
	for (const char *q = text; (q = memchr(q, '\n', (size_t)(text + len - q))); q++)
		most++;
	if (most > (len + 1) / 6 + 1)
		most = (len + 1) / 6 + 1;
	sym *tab = malloc(most * sizeof(*tab)), *tmp = NULL;
	char *names = malloc(len + 1);
	if (!tab || !names)
		goto oom;
	ftf_hint_huge(tab, most * sizeof(*tab));
	ftf_hint_huge(names, len);
	uint32_t n = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = (size_t)((nl ? nl : end) - p);
		uint64_t addr;
		char type;
		size_t ns, nn;
		if (ll && parse_line(p, ll, &addr, &type, &ns, &nn) < 0) {
			s->bad_lines++;
		} else if (ll && p[ns] != '$' && type != 'A' && type != 'a') {
			if (n == UINT32_MAX || nlen + nn + 1 > UINT32_MAX)
				goto oom;
			memcpy(names + nlen, p + ns, nn);
			names[nlen + nn] = 0;
			tab[n] = (sym){ .addr = addr, .name = (uint32_t)nlen };
			nlen += nn + 1;
			n++;
		}
		p += ll + (nl != NULL);
	}
	sym *sorted = tab;
	if (n > 1) {
		tmp = malloc(n * sizeof(*tmp));
		if (!tmp)
			goto oom;
		ftf_hint_huge(tmp, n * sizeof(*tmp));
		sorted = sort_syms(tab, tmp, n);
	}
	/* the sorted table is the lookup table: the other one goes */
	free(sorted == tab ? tmp : tab);
	s->tab = sorted;
	s->n = n;
	s->names = names;
	return 0;
oom:
	free(tab);
	free(tmp);
	free(names);
	memset(s, 0, sizeof(*s));
	return -1;
}

const char *dat_syms_find(const dat_syms *s, uint64_t addr)
{
	uint32_t lo = 0, hi = s->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t at = s->tab[mid].addr;
		int holds = addr == at ||
			    (addr > at && mid + 1 < s->n && addr < s->tab[mid + 1].addr);
		if (holds)
			return s->names + s->tab[mid].name;
		if (addr < at)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

void dat_syms_free(dat_syms *s)
{
	free(s->tab);
	free(s->names);
	memset(s, 0, sizeof(*s));
}
