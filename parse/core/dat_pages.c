/* One CPU's event data: chunks (v7 compressed) or plain bytes -> ring-buffer
 * pages -> records. A chunk is decompressed when its first page is needed
 * and dropped when its last page is done, so memory is one chunk per CPU
 * whatever the length of the trace.
 *
 * A page (the kernel's buffer_data_page, laid out as the file's header_page
 * says): a u64 timestamp, a commit word whose low bits are the bytes of
 * records and whose bits 31/30 say events were missed before this page (and
 * whether their count is stored after the records), then the records. Each
 * record starts with a 32-bit header: type_len (5 bits) and time_delta
 * (27 bits); type_len 29 is padding (time_delta 0: the rest of the page),
 * 30 a time extend (delta += next word << 27), 31 an absolute time stamp,
 * 1..28 a record of type_len * 4 bytes, 0 a record whose length (in bytes,
 * itself included) is the next word. */
#include <stdlib.h>
#include <string.h>

#include "dat.h"

#define MISSED_EVENTS (1ull << 31)
#define MISSED_STORED (1ull << 30)
#define COMMIT_MASK ((1ull << 27) - 1)
#define TYPE_PADDING 29
#define TYPE_TIME_EXTEND 30
#define TYPE_TIME_STAMP 31
#define TS_SHIFT 27
/* A chunk holds a few pages (trace-cmd writes 10): more than 64 MiB is damage. */
#define CHUNK_MAX (64u << 20)
/* Plain data is read this many bytes at a time. */
#define PLAIN_BLOCK (1u << 20)

int dat_stream_open(dat_stream *s, dat_file *f, const dat_cpu *c)
{
	memset(s, 0, sizeof(*s));
	s->f = f;
	s->cpu = c->cpu;
	uint64_t fsize = f->src.size;
	/* data outside the file: what is missing is counted, the rest read.
	 * Compressed, the size counts the chunks but not their count before
	 * them (trace-cmd 3.1 writes it so); trace-cmd 3.4 counts the count
	 * too. Which one wrote it shows where the last chunk ends: up to 4
	 * bytes before the end read here are the newer writer's, not damage. */
	uint64_t off = c->off, size = c->size;
	if (c->chunked && size) {
		size = size > UINT64_MAX - 4 ? UINT64_MAX : size + 4;
		s->slack = 4;
	}
	if (off <= fsize && size > fsize - off && size - (fsize - off) <= s->slack) {
		/* the last CPU's data, sized the newer way, ends with the file */
		s->slack -= (uint32_t)(size - (fsize - off));
		size = fsize - off;
	}
	if (off > fsize) {
		s->st.lost_bytes += size;
		s->st.cut++;
		off = fsize;
		size = 0;
	} else if (size > fsize - off) {
		s->st.lost_bytes += size - (fsize - off);
		s->st.cut++;
		size = fsize - off;
	}
	s->pos = off;
	s->end = off + size;
	if (c->chunked && size) {
		uint8_t b[4];
		if (size < 4) {
			s->st.lost_bytes += size;
			s->st.cut++;
			s->pos = s->end;
		} else {
			if (dat_read_at(&f->src, s->pos, b, 4, "chunk count") < 0)
				return -1;
			s->chunks_left = dat_get32(b, f->swap);
			s->pos += 4;
			s->dec = dat_decomp_new(f->comp);
			if (!s->dec)
				return dat_fail(&f->src, "out of memory");
		}
	}
	return 0;
}

void dat_stream_free(dat_stream *s)
{
	free(s->buf);
	free(s->cbuf);
	dat_decomp_free(s->dec);
	s->buf = s->cbuf = NULL;
	s->dec = NULL;
}

static int grow(uint8_t **p, size_t *cap, size_t want)
{
	if (*cap >= want)
		return 0;
	uint8_t *n = realloc(*p, want);
	if (!n)
		return -1;
	*p = n;
	*cap = want;
	return 0;
}

/* Whether the reader asks to stop (Ctrl-C), asked every DAT_POLL_PAGES
 * pages or chunks; a stopped stream ends. */
static int stop_asked(dat_stream *s)
{
	if (!s->poll || ++s->since_poll < DAT_POLL_PAGES)
		return 0;
	s->since_poll = 0;
	if (s->poll(s->poll_ctx))
		s->stopped = 1;
	return s->stopped;
}

/* The next chunk into buf: 1 loaded, 0 no more data, -1 fatal. A chunk
 * that does not decompress is skipped (its pages lost, counted); a chunk
 * table that runs past the CPU's data ends the stream (counted). */
static int load_chunk(dat_stream *s)
{
	dat_file *f = s->f;
	while (s->chunks_left) {
		if (stop_asked(s))
			return 0;
		if (s->end - s->pos < 8) {
			s->st.cut++;
			s->st.lost_bytes += s->end - s->pos;
			s->pos = s->end;
			s->chunks_left = 0;
			return 0;
		}
		uint8_t h[8];
		if (dat_read_at(&f->src, s->pos, h, 8, "chunk header") < 0)
			return -1;
		uint32_t csize = dat_get32(h, f->swap), usize = dat_get32(h + 4, f->swap);
		s->chunks_left--;
		if (csize > s->end - s->pos - 8 || usize > CHUNK_MAX) {
			/* the sizes are damaged: nothing after can be found */
			s->st.cut++;
			s->st.lost_bytes += s->end - s->pos;
			s->pos = s->end;
			s->chunks_left = 0;
			return 0;
		}
		uint64_t at = s->pos + 8;
		s->pos = at + csize;
		if (grow(&s->cbuf, &s->ccap, csize ? csize : 1) < 0)
			return dat_fail(&f->src, "out of memory for a %u-byte chunk", csize);
		if (dat_read_at(&f->src, at, s->cbuf, csize, "chunk") < 0)
			return -1;
		/* the size it claims is checked against the data before allocating */
		int ok = dat_decomp_plausible(s->dec, s->cbuf, csize, usize);
		if (ok && grow(&s->buf, &s->cap, usize ? usize : 1) < 0)
			return dat_fail(&f->src, "out of memory for a %u-byte chunk", usize);
		if (!ok || dat_decomp_run(s->dec, s->cbuf, csize, s->buf, usize) < 0) {
			s->st.bad_chunks++;
			s->st.lost_bytes += csize;
			s->gap = 1;
			continue;
		}
		s->len = usize;
		s->at = 0;
		return 1;
	}
	if (s->pos < s->end && s->end - s->pos > s->slack) {
		/* the chunk count ends before the data the file gives this CPU */
		s->st.cut++;
		s->st.lost_bytes += s->end - s->pos;
		s->pos = s->end;
	}
	return 0;
}

/* The next block of plain data into buf (whole pages). */
static int load_plain(dat_stream *s)
{
	uint64_t left = s->end - s->pos;
	uint32_t ps = s->f->page_size;
	if (left < ps) {
		s->st.partial_page += left;
		s->pos = s->end;
		return 0;
	}
	size_t n = left > PLAIN_BLOCK ? PLAIN_BLOCK : (size_t)(left - left % ps);
	if (grow(&s->buf, &s->cap, n) < 0)
		return dat_fail(&s->f->src, "out of memory");
	if (dat_read_at(&s->f->src, s->pos, s->buf, n, "CPU data") < 0)
		return -1;
	s->pos += n;
	s->len = n;
	s->at = 0;
	return 1;
}

/* The next page: 1 set up, 0 the stream ended, -1 fatal. */
static int next_page(dat_stream *s)
{
	dat_file *f = s->f;
	uint32_t ps = f->page_size;
	for (;;) {
		if (stop_asked(s))
			return 0;
		if (s->len - s->at < ps) {
			if (s->len > s->at)
				s->st.partial_page += s->len - s->at; /* a chunk not made of whole pages */
			s->len = s->at = 0;
			int r = s->dec ? load_chunk(s) : load_plain(s);
			if (r <= 0)
				return r;
			continue;
		}
		const uint8_t *p = s->buf + s->at;
		s->at += ps;
		const dat_page_layout *L = &f->page;
		uint64_t commit = L->commit_size == 8 ? dat_get64(p + L->commit_off, f->swap)
						      : dat_get32(p + L->commit_off, f->swap);
		uint64_t size = commit & COMMIT_MASK;
		uint64_t room = ps - L->data_off;
		s->st.pages++;
		if (commit == 0 && dat_get64(p + L->ts_off, f->swap) == 0)
			s->st.zero_pages++;
		if (size > room) {
			s->st.bad_pages++;
			s->gap = 1;
			continue;
		}
		s->ts = dat_get64(p + L->ts_off, f->swap);
		s->data = p + L->data_off;
		s->dlen = (uint32_t)size;
		s->idx = 0;
		s->page_first = 1;
		s->missed = 0;
		if (commit & MISSED_EVENTS) {
			s->st.missed_marks++;
			s->missed = -1;
			if ((commit & MISSED_STORED) && room - size >= L->commit_size) {
				uint64_t n = L->commit_size == 8 ? dat_get64(s->data + size, f->swap)
								 : dat_get32(s->data + size, f->swap);
				s->missed = n > INT64_MAX ? -1 : (int64_t)n;
			}
		}
		return 1;
	}
}

int dat_stream_next(dat_stream *s)
{
	int swap = s->f->swap;
	for (;;) {
		if (!s->data || s->idx >= s->dlen) {
			s->data = NULL;
			int r = next_page(s);
			if (r <= 0)
				return r;
			continue;
		}
		uint32_t left = s->dlen - s->idx;
		const uint8_t *p = s->data + s->idx;
		if (left < 4)
			goto bad;
		uint32_t hdr = dat_get32(p, swap);
		uint32_t type_len, delta;
		if (swap) { /* a big-endian kernel's bitfields start at the top */
			type_len = hdr >> 27;
			delta = hdr & ((1u << 27) - 1);
		} else {
			type_len = hdr & 31;
			delta = hdr >> 5;
		}
		uint32_t word = left >= 8 ? dat_get32(p + 4, swap) : 0;
		switch (type_len) {
		case TYPE_PADDING:
			if (delta == 0) { /* the rest of the page is empty */
				s->idx = s->dlen;
				continue;
			}
			/* a discarded record: its length follows, its delta counts */
			if (left < 8 || word > left - 4)
				goto bad;
			s->ts += delta;
			s->idx += 4 + word;
			continue;
		case TYPE_TIME_EXTEND:
			if (left < 8)
				goto bad;
			s->ts += ((uint64_t)word << TS_SHIFT) + delta;
			s->idx += 8;
			continue;
		case TYPE_TIME_STAMP:
			if (left < 8)
				goto bad;
			s->ts = ((uint64_t)word << TS_SHIFT) + delta;
			s->idx += 8;
			continue;
		case 0: {
			if (left < 8 || word < 4)
				goto bad;
			uint64_t len = ((uint64_t)word - 4 + 3) & ~3ull;
			if (len > left - 8)
				goto bad;
			s->ts += delta;
			s->rdata = p + 8;
			s->rsize = (uint32_t)len;
			s->idx += 8 + (uint32_t)len;
			break;
		}
		default: {
			uint32_t len = type_len * 4;
			if (len > left - 4)
				goto bad;
			s->ts += delta;
			s->rdata = p + 4;
			s->rsize = len;
			s->idx += 4 + len;
			break;
		}
		}
		return dat_stream_took(s);
	bad:
		/* a record that does not fit its page: the rest of the page is lost */
		s->st.bad_pages++;
		s->gap = 1;
		s->idx = s->dlen;
	}
}
