/* Bounded reads of a trace.dat: nothing is read that the file does not
 * hold, and the first failure is kept as the one-line message. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dat.h"

int dat_fail(dat_src *s, const char *fmt, ...)
{
	if (s->failed)
		return -1;
	s->failed = 1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	/* one line of plain text, whatever bytes of the file it quotes */
	for (char *p = s->err; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	return -1;
}

int dat_src_open(dat_src *s, const char *path)
{
	memset(s, 0, sizeof(*s));
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		return dat_fail(s, "cannot open: %s", strerror(errno));
	struct stat st;
	if (fstat(s->fd, &st) < 0)
		return dat_fail(s, "cannot stat: %s", strerror(errno));
	s->size = (uint64_t)st.st_size;
	return 0;
}

void dat_src_mem(dat_src *s, const uint8_t *data, size_t size)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->mem = data;
	s->size = size;
}

void dat_src_close(dat_src *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

int dat_read_at(dat_src *s, uint64_t off, void *buf, size_t n, const char *what)
{
	if (off > s->size || n > s->size - off)
		return dat_fail(s, "%s at byte %llu: %zu bytes run past the end of the file "
				"(%llu bytes): a truncated or damaged trace.dat",
				what, (unsigned long long)off, n, (unsigned long long)s->size);
	if (s->fd < 0) {
		memcpy(buf, s->mem + off, n);
		return 0;
	}
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(s->fd, (char *)buf + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return dat_fail(s, "%s at byte %llu: read failed (%s)", what,
					(unsigned long long)(off + done), r < 0 ? strerror(errno) : "file shrank");
		done += (size_t)r;
	}
	return 0;
}

/* ---- cursors ------------------------------------------------------------ */

int cur_fail(dat_cur *c, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->mem)
		return dat_fail(c->src, "%s section at byte %llu, byte %llu of its decompressed data: %s",
				c->what, (unsigned long long)c->base, (unsigned long long)c->last, msg);
	return dat_fail(c->src, "%s at byte %llu: %s", c->what,
			(unsigned long long)(c->base + c->last), msg);
}

int cur_bytes(dat_cur *c, void *out, uint64_t n)
{
	c->last = c->pos;
	if (c->src->failed)
		return -1;
	if (c->pos > c->len || n > c->len - c->pos)
		return cur_fail(c, "%llu bytes wanted, %llu left: a truncated or damaged trace.dat",
				(unsigned long long)n,
				(unsigned long long)(c->len - (c->pos < c->len ? c->pos : c->len)));
	if (c->mem)
		memcpy(out, c->mem + c->pos, n);
	else if (dat_read_at(c->src, c->base + c->pos, out, n, c->what) < 0)
		return -1;
	c->pos += n;
	return 0;
}

int cur_skip(dat_cur *c, uint64_t n)
{
	c->last = c->pos;
	if (c->pos > c->len || n > c->len - c->pos)
		return cur_fail(c, "a size of %llu runs past the end (%llu bytes left)",
				(unsigned long long)n,
				(unsigned long long)(c->len - (c->pos < c->len ? c->pos : c->len)));
	c->pos += n;
	return 0;
}

int cur_u16(dat_cur *c, uint16_t *v)
{
	uint8_t b[2];
	if (cur_bytes(c, b, 2) < 0)
		return -1;
	*v = dat_get16(b, c->swap);
	return 0;
}

int cur_u32(dat_cur *c, uint32_t *v)
{
	uint8_t b[4];
	if (cur_bytes(c, b, 4) < 0)
		return -1;
	*v = dat_get32(b, c->swap);
	return 0;
}

int cur_u64(dat_cur *c, uint64_t *v)
{
	uint8_t b[8];
	if (cur_bytes(c, b, 8) < 0)
		return -1;
	*v = dat_get64(b, c->swap);
	return 0;
}

int cur_str(dat_cur *c, char *out, size_t outlen, size_t max)
{
	uint64_t start = c->pos;
	size_t n = 0;
	for (;;) {
		char ch;
		if (cur_bytes(c, &ch, 1) < 0)
			return -1;
		if (!ch)
			break;
		if (n >= max) {
			c->last = start;
			return cur_fail(c, "a string longer than %zu bytes: a damaged trace.dat", max);
		}
		if (n + 1 < outlen)
			out[n] = ch;
		n++;
	}
	if (outlen)
		out[n < outlen ? n : outlen - 1] = 0;
	c->last = start;
	return 0;
}

char *cur_blob(dat_cur *c, uint64_t n, uint64_t max)
{
	c->last = c->pos;
	if (n > max) {
		cur_fail(c, "a size of %llu bytes (at most %llu expected): a damaged trace.dat",
			 (unsigned long long)n, (unsigned long long)max);
		return NULL;
	}
	if (c->pos > c->len || n > c->len - c->pos) {
		cur_fail(c, "a size of %llu runs past the end (%llu bytes left): a truncated or damaged trace.dat",
			 (unsigned long long)n, (unsigned long long)(c->len - (c->pos < c->len ? c->pos : c->len)));
		return NULL;
	}
	char *p = malloc((size_t)n + 1);
	if (!p) {
		cur_fail(c, "out of memory for %llu bytes", (unsigned long long)n);
		return NULL;
	}
	if (cur_bytes(c, p, n) < 0) {
		free(p);
		return NULL;
	}
	p[n] = 0;
	return p;
}
