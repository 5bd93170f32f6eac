/* Protocol-buffer rows: many messages of one shape, each from one row of
 * columns, written one after the other into one bytes object
 * (ftflame.report._rowfmt.pack_rows). The Perfetto trace (report/perfetto.py)
 * has two packets per call, millions on a long trace: a protobuf object per
 * packet in Python would cost more than the read of the trace.
 *
 * A template is a list of items, written in order for each row:
 *   bytes                  the bytes as they are (field keys, constant fields)
 *   ("v", int64 column)    the value as a varint (negative: 10 bytes, as int64 fields are)
 *   ("d", float64 column)  the value's 8 bytes, little-endian (a double field)
 *   ("e", int64 column, [bytes...])  the fragment the value indexes; nothing for -1
 *   "("  ... ")"           a length-delimited field's body: its length written before it
 *   ("?", int64 column) ... "/"  the items between, only in the rows where the value is not 0
 * With events (pack_rows(template, ncalls, events)), a row per event, e for
 * a slice's begin and -1-e for its end, the columns one value per slice
 * (read at e): no column gathered per event. Then also
 *   ("t", begin column, end column)  the begin's value at a begin, the end's at an end, as a varint
 *   "B" ... "/"            the items between, only at a begin
 * No Python here: pbrows_module.c checks the arguments and calls these
 * with the GIL released.
 */
#include <stdlib.h>
#include <string.h>

#include "pbrows.h"

static int buf_room(ftf_pb_buf *b, size_t more)
{
	if (b->n + more <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 1 << 16;
	while (cap < b->n + more)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static size_t varint_put(char *out, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		out[n++] = (char)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (char)v;
	return n;
}

/* The most bytes one row of the template can take: its room is made once
 * a row, not once an item (millions of packets). */
static size_t row_bound(const ftf_pb_item *items, size_t nitems)
{
	size_t n = 0;
	for (size_t i = 0; i < nitems; i++) {
		const ftf_pb_item *it = &items[i];
		switch (it->kind) {
		case FTF_PB_LIT:
			n += it->len;
			break;
		case FTF_PB_ENUM: { /* one fragment: the longest */
			size_t most = 0;
			for (int64_t k = 0; k < it->nfrags; k++)
				most = it->frag_len[k] > most ? it->frag_len[k] : most;
			n += most;
			break;
		}
		case FTF_PB_DOUBLE:
			n += 8;
			break;
		case FTF_PB_VARINT:
		case FTF_PB_TIME:
		case FTF_PB_CLOSE: /* a body's length */
			n += 10;
			break;
		default:
			break;
		}
	}
	return n;
}

/* Every row of the template into b: 0, -1 out of memory. */
int ftf_pb_pack(const ftf_pb_item *items, size_t nitems, int64_t nrows, const int64_t *events, ftf_pb_buf *b)
{
	size_t open[FTF_PB_MAX_NEST], bound = row_bound(items, nitems);
	for (int64_t row = 0; row < nrows; row++) {
		size_t depth = 0;
		int64_t e = events ? events[row] : row, r = e >= 0 ? e : -1 - e; /* (checked) */
		if (buf_room(b, bound) < 0)
			return -1;
		for (size_t i = 0; i < nitems; i++) {
			const ftf_pb_item *it = &items[i];
			switch (it->kind) {
			case FTF_PB_LIT:
				memcpy(b->p + b->n, it->s, it->len);
				b->n += it->len;
				break;
			case FTF_PB_VARINT:
				b->n += varint_put(b->p + b->n, (uint64_t)((const int64_t *)it->col)[r]);
				break;
			case FTF_PB_DOUBLE:
				/* the double's bytes as x86 and arm64 hold it: little-endian, the wire's */
				memcpy(b->p + b->n, (const double *)it->col + r, 8);
				b->n += 8;
				break;
			case FTF_PB_ENUM: {
				int64_t k = ((const int64_t *)it->col)[r];
				if (k < 0 || k >= it->nfrags)
					break;
				memcpy(b->p + b->n, it->frags[k], it->frag_len[k]);
				b->n += it->frag_len[k];
				break;
			}
			case FTF_PB_OPEN:
				open[depth++] = b->n;
				break;
			case FTF_PB_CLOSE: {
				size_t at = open[--depth], len = b->n - at, vl = varint_len(len);
				memmove(b->p + at + vl, b->p + at, len);
				varint_put(b->p + at, len);
				b->n += vl;
				break;
			}
			case FTF_PB_IF:
				if (!((const int64_t *)it->col)[r])
					i = it->end;
				break;
			case FTF_PB_BEGIN:
				if (e < 0)
					i = it->end;
				break;
			case FTF_PB_TIME: {
				int64_t v;
				v = e >= 0 ? ((const int64_t *)it->col)[r] : it->col2[r];
				b->n += varint_put(b->p + b->n, (uint64_t)v);
				break;
			}
			default: /* FTF_PB_ENDIF */
				break;
			}
		}
	}
	return 0;
}

/* nest_calls(parent, start, end[, order]) -> events: the calls of a batch
 * (parent: a row, or -1 - track for a call on top of its track) made to
 * nest in time, as a timeline of begin/end pairs must: a call starts no
 * earlier than its caller or its previous sibling ended, ends no later
 * than its caller, moved with its duration kept where it fits, else cut
 * (start and end are changed in place; a trace's times mostly nest
 * already: text timestamps of a microsecond and clocks read a few ns apart
 * do not always). order: the rows, callers before callees, siblings and a
 * track's top calls in the order they were entered (NULL: the rows' own
 * order, which is that when every caller's row comes before its callees').
 * events: 2n values, row for its begin and -1-row for its end, each top
 * call's tree depth first, top calls in that order. */
int ftf_nest_calls(const int64_t *parent, int64_t *start, int64_t *end, const int64_t *order, int64_t n,
		   int64_t *events)
{
	int64_t ntracks = 0;
	for (int64_t i = 0; i < n; i++)
		if (parent[i] < 0 && -1 - parent[i] >= ntracks)
			ntracks = -parent[i];
	int64_t *first = malloc((size_t)(4 * n + ntracks + 1) * sizeof(int64_t));
	if (!first)
		return -1;
	int64_t *last = first + n, *next = last + n, *stack = next + n, *last_top = stack + n;
	for (int64_t i = 0; i < n; i++)
		first[i] = last[i] = next[i] = -1;
	for (int64_t t = 0; t < ntracks; t++)
		last_top[t] = -1;
	int64_t prev_top = -1, ntop_first = -1;
	for (int64_t k = 0; k < n; k++) {
		int64_t i = order ? order[k] : k, p = i >= 0 && i < n ? parent[i] : n;
		if (p >= n)
			continue;
		/* the previous sibling, or the previous call on top of this track */
		int64_t prev = p >= 0 ? last[p] : last_top[-1 - p];
		/* moved, its duration kept, into [lo, hi]: after its caller's start
		 * and its previous sibling's end, before its caller's end; cut
		 * only where it does not fit */
		int64_t d = end[i] > start[i] ? end[i] - start[i] : 0;
		int64_t lo = p >= 0 ? start[p] : INT64_MIN, hi = p >= 0 ? end[p] : INT64_MAX;
		if (prev >= 0 && end[prev] > lo)
			lo = end[prev];
		if (start[i] < lo) {
			start[i] = lo;
			end[i] = d <= INT64_MAX - lo ? lo + d : INT64_MAX;
		} else {
			end[i] = start[i] + d;
		}
		if (end[i] > hi) {
			int64_t back = end[i] - hi < start[i] - lo ? end[i] - hi : start[i] - lo;
			start[i] -= back;
			end[i] -= back;
			if (end[i] > hi)
				end[i] = hi;
			if (start[i] > end[i])
				start[i] = end[i];
		}
		if (p >= 0) {
			if (last[p] >= 0)
				next[last[p]] = i;
			else
				first[p] = i;
			last[p] = i;
		} else {
			last_top[-1 - p] = i;
			if (prev_top >= 0)
				next[prev_top] = i;
			else
				ntop_first = i;
			prev_top = i;
		}
	}
	int64_t ne = 0;
	for (int64_t top = ntop_first; top >= 0; top = next[top]) {
		int64_t sp = 0;
		stack[sp++] = top;
		events[ne++] = top;
		while (sp) {
			int64_t i = stack[sp - 1];
			int64_t c = first[i];
			if (c >= 0) {
				first[i] = next[c]; /* its next child, the next time round */
				stack[sp++] = c;
				events[ne++] = c;
			} else {
				events[ne++] = -1 - i;
				sp--;
			}
		}
	}
	free(first);
	return (int)ne;
}

/* evented_json: speedscope's "evented" events, text: for each event (e: a
 * call's open, -1-e: its close) `,{"type":"O","frame":F,"at":T}`, T its
 * start (or end) less t0, F its frame; a call whose wrap is not -1 is
 * opened inside a frame of its own (an interrupt's "[irq]") opened and
 * closed with it. Each object has a comma before it: the caller leaves out
 * the first of a profile. 0, -1 out of memory. */
static char *put_i64(char *p, int64_t v)
{
	char tmp[24];
	int n = 0;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*p++ = '-';
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_event(char *p, int open, int64_t frame, int64_t at)
{
	static const char o[] = ",{\"type\":\"O\",\"frame\":", c[] = ",{\"type\":\"C\",\"frame\":", a[] = ",\"at\":";
	memcpy(p, open ? o : c, sizeof(o) - 1);
	p = put_i64(p + sizeof(o) - 1, frame);
	memcpy(p, a, sizeof(a) - 1);
	p = put_i64(p + sizeof(a) - 1, at);
	*p++ = '}';
	return p;
}

int ftf_evented_json(const int64_t *events, int64_t nev, const int64_t *frame, const int64_t *wrap,
		     const int64_t *start, const int64_t *end, int64_t t0, ftf_pb_buf *b)
{
	/* an event: at most two objects of 21 + 20 + 6 + 20 + 1 bytes */
	enum { MAX_EVENT = 2 * 72 };
	for (int64_t k = 0; k < nev; k++) {
		if (buf_room(b, MAX_EVENT) < 0)
			return -1;
		char *p = b->p + b->n;
		int64_t e = events[k], r = e >= 0 ? e : -1 - e;
		if (e >= 0) {
			if (wrap[r] >= 0)
				p = put_event(p, 1, wrap[r], start[r] - t0);
			p = put_event(p, 1, frame[r], start[r] - t0);
		} else {
			p = put_event(p, 0, frame[r], end[r] - t0);
			if (wrap[r] >= 0)
				p = put_event(p, 0, wrap[r], end[r] - t0);
		}
		b->n = (size_t)(p - b->p);
	}
	return 0;
}
