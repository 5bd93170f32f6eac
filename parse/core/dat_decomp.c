/* Decompression of trace.dat chunks and sections: zstd and zlib, the two
 * algorithms trace-cmd writes. Every call states the size it expects out,
 * and anything else is a failure. */
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "dat.h"
#include "mem.h"

struct dat_decomp {
	int comp;
	ZSTD_DCtx *zstd;
};

dat_decomp *dat_decomp_new(int comp)
{
	dat_decomp *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->comp = comp;
	if (comp == DAT_COMP_ZSTD && !(d->zstd = ZSTD_createDCtx())) {
		free(d);
		return NULL;
	}
	return d;
}

int dat_decomp_plausible(const dat_decomp *d, const void *in, size_t inlen, size_t outlen)
{
	if (d->comp == DAT_COMP_ZSTD) {
		/* trace-cmd's frames state their size: believe no other */
		unsigned long long n = ZSTD_getFrameContentSize(in, inlen);
		return n == ZSTD_CONTENTSIZE_UNKNOWN || n == outlen;
	}
	if (d->comp == DAT_COMP_ZLIB) /* deflate expands at most 1032:1 */
		return outlen / 1032 <= inlen + 64;
	return inlen == outlen;
}

int dat_decomp_run(dat_decomp *d, const void *in, size_t inlen, void *out, size_t outlen)
{
	if (d->comp == DAT_COMP_ZSTD) {
		size_t r = ZSTD_decompressDCtx(d->zstd, out, outlen, in, inlen);
		return ZSTD_isError(r) || r != outlen ? -1 : 0;
	}
	if (d->comp == DAT_COMP_ZLIB) {
		uLongf got = (uLongf)outlen;
		if (inlen > (uLong)-1)
			return -1;
		int r = uncompress(out, &got, in, (uLong)inlen);
		return r != Z_OK || got != outlen ? -1 : 0;
	}
	if (inlen != outlen)
		return -1;
	memcpy(out, in, outlen);
	return 0;
}

void dat_decomp_free(dat_decomp *d)
{
	if (!d)
		return;
	if (d->zstd)
		ZSTD_freeDCtx(d->zstd);
	free(d);
}

/* Metadata sections are small next to the file (kallsyms: a few MB): at
 * most 1 GiB decompressed, and never more than 1024 times the compressed
 * size, so that four damaged bytes cannot ask for 4 GiB. */
#define SECTION_MAX (1ull << 30)

int dat_decomp_section(dat_file *f, uint64_t off, uint64_t size, const char *what, uint8_t **out,
		       uint64_t *outlen)
{
	dat_cur c = { .src = &f->src, .swap = f->swap, .len = size, .base = off, .what = what };
	uint32_t csize, usize;
	if (cur_u32(&c, &csize) < 0 || cur_u32(&c, &usize) < 0)
		return -1;
	if (csize > size - 8)
		return cur_fail(&c, "compressed size %u is more than the section holds (%llu bytes)",
				csize, (unsigned long long)(size - 8));
	if (usize > SECTION_MAX || (uint64_t)usize > (uint64_t)csize * 1024 + 4096)
		return cur_fail(&c, "decompressed size %u is not believable for %u compressed bytes",
				usize, csize);
	char *in = cur_blob(&c, csize, csize);
	if (!in)
		return -1;
	uint8_t *buf = malloc((size_t)usize + 1);
	ftf_hint_huge(buf, usize);
	dat_decomp *d = dat_decomp_new(f->comp);
	int rc = 0;
	if (!buf || !d)
		rc = dat_fail(&f->src, "%s section at byte %llu: out of memory", what, (unsigned long long)off);
	else if (dat_decomp_run(d, in, csize, buf, usize) < 0)
		rc = dat_fail(&f->src, "%s section at byte %llu: its %s data does not decompress to the "
			      "%u bytes it announces: a damaged trace.dat", what,
			      (unsigned long long)off, f->comp_name, usize);
	dat_decomp_free(d);
	free(in);
	if (rc < 0) {
		free(buf);
		return -1;
	}
	buf[usize] = 0;
	*out = buf;
	*outlen = usize;
	return 0;
}
