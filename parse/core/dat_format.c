/* Event format text (tracefs events/<sys>/<event>/format, copied into the
 * trace.dat) -> the offsets and sizes of the fields ftflame reads. The
 * layouts changed many times (docs/trace-formats.md, "Event layouts"): every
 * field is found by name, none is assumed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dat.h"

/* The line starting at p (up to end): its length without the newline. */
static size_t line_len(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	return (size_t)((nl ? nl : end) - p);
}

/* A decimal number after key (e.g. "offset:") in the line, or -1. */
static long long number_after(const char *line, size_t len, const char *key)
{
	size_t klen = strlen(key);
	for (size_t i = 0; i + klen <= len; i++) {
		if (memcmp(line + i, key, klen) != 0)
			continue;
		size_t j = i + klen;
		while (j < len && line[j] == ' ')
			j++;
		long long v = 0;
		size_t digits = 0;
		while (j < len && line[j] >= '0' && line[j] <= '9' && digits < 12) {
			v = v * 10 + (line[j] - '0');
			j++;
			digits++;
		}
		return digits && digits < 12 ? v : -1;
	}
	return -1;
}

static int is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* "field:unsigned long args[6];" -> "args": the last identifier before
 * the ';', array brackets left out. 0 if the line is no field. */
static int field_name(const char *line, size_t len, char *out, size_t outlen)
{
	const char *f = NULL;
	for (size_t i = 0; i + 6 <= len; i++)
		if (memcmp(line + i, "field:", 6) == 0) {
			f = line + i + 6;
			break;
		}
	if (!f)
		return 0;
	const char *end = line + len;
	const char *semi = memchr(f, ';', (size_t)(end - f));
	if (!semi)
		return 0;
	const char *q = semi;
	/* drop array brackets: "name[6]" */
	const char *br = memchr(f, '[', (size_t)(semi - f));
	while (br) {
		const char *after = br + 1;
		/* the last '[' that follows an identifier */
		const char *next = memchr(after, '[', (size_t)(semi - after));
		if (br > f && is_ident(br[-1]) && !next) {
			q = br;
			break;
		}
		if (!next) {
			if (br > f && is_ident(br[-1]))
				q = br;
			break;
		}
		br = next;
	}
	const char *e = q;
	while (e > f && !is_ident(e[-1]))
		e--;
	const char *s = e;
	while (s > f && is_ident(s[-1]))
		s--;
	size_t n = (size_t)(e - s);
	if (!n || n >= outlen)
		return 0;
	memcpy(out, s, n);
	out[n] = 0;
	return 1;
}

int dat_format_name(const char *text, size_t len, char *name, size_t namelen)
{
	const char *p = text, *end = text + len;
	while (p < end) {
		size_t n = line_len(p, end);
		if (n > 6 && memcmp(p, "name: ", 6) == 0) {
			size_t k = n - 6;
			while (k && (p[6 + k - 1] == ' ' || p[6 + k - 1] == '\r'))
				k--;
			if (k >= namelen)
				return -1;
			memcpy(name, p + 6, k);
			name[k] = 0;
			return 0;
		}
		p += n + (p + n < end);
	}
	return -1;
}

int dat_format_parse(const char *text, size_t len, const char *name, dat_evfmt *out, char *err,
		     size_t errlen)
{
	char got[128];
	if (dat_format_name(text, len, got, sizeof(got)) < 0) {
		snprintf(err, errlen, "an event format without a name line");
		return -1;
	}
	if (strcmp(got, name) != 0)
		return 0;
	dat_evfmt e;
	memset(&e, 0, sizeof(e));
	e.id = -1;
	const char *p = text, *end = text + len;
	while (p < end) {
		size_t n = line_len(p, end);
		if (n > 4 && memcmp(p, "ID: ", 4) == 0) {
			long long id = number_after(p, n, "ID:");
			if (id < 0 || id > 65535) {
				snprintf(err, errlen, "event %s: ID not a number from 0 to 65535", name);
				return -1;
			}
			e.id = (int)id;
		}
		char fname[64];
		if (field_name(p, n, fname, sizeof(fname))) {
			int k = ftf_rec_field_index(fname);
			if (k >= 0) {
				ftf_field *f = &e.field[k];
				long long off = number_after(p, n, "offset:");
				long long size = number_after(p, n, "size:");
				if (off < 0 || size < 0 || off > 65535 || size > 65535) {
					snprintf(err, errlen, "event %s: field %s has offset %lld, size %lld "
						 "(0 to 65535 expected)", name, fname, off, size);
					return -1;
				}
				f->present = 1;
				f->offset = (uint32_t)off;
				f->size = (uint32_t)size;
			}
		}
		p += n + (p + n < end);
	}
	if (e.id < 0) {
		snprintf(err, errlen, "event %s: no ID line", name);
		return -1;
	}
	e.present = 1;
	*out = e;
	return 1;
}

int dat_header_page_parse(const char *text, size_t len, uint32_t page_size, dat_page_layout *out,
			  char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	int have_ts = 0, have_commit = 0, have_data = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		size_t n = line_len(p, end);
		char fname[64];
		if (field_name(p, n, fname, sizeof(fname))) {
			long long off = number_after(p, n, "offset:");
			long long size = number_after(p, n, "size:");
			if (off < 0 || size < 0 || off > page_size || size > page_size) {
				snprintf(err, errlen, "header_page: field %s at offset %lld, size %lld "
					 "does not fit a %u-byte page", fname, off, size, page_size);
				return -1;
			}
			if (strcmp(fname, "timestamp") == 0) {
				out->ts_off = (uint32_t)off;
				out->ts_size = (uint32_t)size;
				have_ts = 1;
			} else if (strcmp(fname, "commit") == 0) {
				out->commit_off = (uint32_t)off;
				out->commit_size = (uint32_t)size;
				have_commit = 1;
			} else if (strcmp(fname, "data") == 0) {
				out->data_off = (uint32_t)off;
				have_data = 1;
			}
		}
		p += n + (p + n < end);
	}
	if (!have_ts || !have_commit || !have_data) {
		snprintf(err, errlen, "header_page lacks the timestamp, commit or data field");
		return -1;
	}
	if (out->ts_size != 8 || (out->commit_size != 4 && out->commit_size != 8) ||
	    out->ts_off + 8 > out->data_off || out->commit_off + out->commit_size > out->data_off ||
	    out->data_off >= page_size) {
		snprintf(err, errlen, "header_page: an unknown page layout (timestamp %u+%u, commit %u+%u, "
			 "data at %u)", out->ts_off, out->ts_size, out->commit_off, out->commit_size,
			 out->data_off);
		return -1;
	}
	return 0;
}

int dat_header_event_check(const char *text, size_t len, char *err, size_t errlen)
{
	/* the kernel has used the same event header since 2.6.30: say so
	 * rather than misread a file that announces another */
	const char *want[] = { "type_len", "time_delta" };
	const int bits[] = { 5, 27 };
	for (int i = 0; i < 2; i++) {
		const char *p = text, *end = text + len;
		int found = 0;
		while (p < end) {
			size_t n = line_len(p, end);
			size_t w = strlen(want[i]);
			const char *hit = NULL;
			for (size_t j = 0; j + w <= n; j++)
				if (memcmp(p + j, want[i], w) == 0) {
					hit = p + j;
					break;
				}
			if (hit) {
				long long b = number_after(hit, n - (size_t)(hit - p), ":");
				if (b != bits[i]) {
					snprintf(err, errlen, "header_event: %s is %lld bits, not %d: "
						 "an event header this reader does not know", want[i], b, bits[i]);
					return -1;
				}
				found = 1;
				break;
			}
			p += n + (p + n < end);
		}
		if (!found) {
			snprintf(err, errlen, "header_event lacks %s", want[i]);
			return -1;
		}
	}
	return 0;
}
