/* The builtin trace.dat reader (dat_*.c): written from the format's
 * documentation (trace-cmd.dat.v6(5), trace-cmd.dat.v7(5), the kernel's
 * ring-buffer page format as the file's own header_page/header_event
 * describe it), without libtracecmd.
 *
 *   dat_src.c     bounded reads of the file (or of a buffer: the fuzzer)
 *   dat_file.c    file header, v6 header sequence, v7 sections and options
 *   dat_format.c  event format text -> field offsets and sizes
 *   dat_decomp.c  zlib / zstd chunks
 *   dat_pages.c   one CPU's stream: chunks -> pages -> records
 *   dat_syms.c    kallsyms -> function names, resolved once per address
 *   dat_merge.c   the CPUs' records merged by timestamp, decoded by
 *                 record_decode.c (as the libtracecmd reader's are), built
 *
 * Every length and offset read from the file is checked before use, with
 * 64-bit arithmetic; damage to the metadata is an error naming the section
 * and the byte offset, damage to the event data is counted per page.
 */
#ifndef FTF_DAT_H
#define FTF_DAT_H

#include <stddef.h>
#include <stdint.h>

#include "record_decode.h"

#define DAT_ERRLEN 480

/* ---- the bytes (dat_src.c) ------------------------------------------- */

typedef struct {
	int fd;             /* -1: read mem instead */
	const uint8_t *mem;
	uint64_t size;      /* bytes in the file */
	int failed;
	char err[DAT_ERRLEN];
} dat_src;

int dat_src_open(dat_src *s, const char *path);
void dat_src_mem(dat_src *s, const uint8_t *data, size_t size);
void dat_src_close(dat_src *s);
/* The first failure is kept; later ones are dropped. Always -1. */
int dat_fail(dat_src *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Reads n bytes at off, or fails naming `what` and the offset. */
int dat_read_at(dat_src *s, uint64_t off, void *buf, size_t n, const char *what);

/* A cursor over the file or over a section's decompressed bytes. */
typedef struct {
	dat_src *src;
	int swap;
	const uint8_t *mem; /* NULL: the file itself */
	uint64_t len;       /* readable bytes (from 0) */
	uint64_t pos;
	uint64_t last;      /* where the item read last began (messages) */
	uint64_t base;      /* file offset of the section (messages) */
	const char *what;   /* section name (messages) */
} dat_cur;

int cur_fail(dat_cur *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cur_bytes(dat_cur *c, void *out, uint64_t n);
int cur_skip(dat_cur *c, uint64_t n);
int cur_u16(dat_cur *c, uint16_t *v);
int cur_u32(dat_cur *c, uint32_t *v);
int cur_u64(dat_cur *c, uint64_t *v);
/* A NUL-terminated string of at most max bytes, copied into out (outlen). */
int cur_str(dat_cur *c, char *out, size_t outlen, size_t max);
/* n bytes (at most max) in a new NUL-terminated buffer; NULL on failure. */
char *cur_blob(dat_cur *c, uint64_t n, uint64_t max);

static inline uint16_t dat_get16(const uint8_t *p, int swap)
{
	uint16_t v;
	__builtin_memcpy(&v, p, 2);
	return swap ? __builtin_bswap16(v) : v;
}
static inline uint32_t dat_get32(const uint8_t *p, int swap)
{
	uint32_t v;
	__builtin_memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}
static inline uint64_t dat_get64(const uint8_t *p, int swap)
{
	uint64_t v;
	__builtin_memcpy(&v, p, 8);
	return swap ? __builtin_bswap64(v) : v;
}

/* ---- event formats (dat_format.c) ------------------------------------ */

/* An event's format: the fields of record_decode.c's table it has. */
typedef struct {
	int present;
	int id;
	ftf_field field[FTF_FLD_N];
} dat_evfmt;

/* header_page: where the page's timestamp, commit and data are */
typedef struct {
	uint32_t ts_off, ts_size;
	uint32_t commit_off, commit_size;
	uint32_t data_off;
} dat_page_layout;

/* Parses one event's format text; fills *out when its name is `name`.
 * Returns 1 matched, 0 another event, -1 malformed (message in err). */
int dat_format_parse(const char *text, size_t len, const char *name, dat_evfmt *out,
		     char *err, size_t errlen);
int dat_format_name(const char *text, size_t len, char *name, size_t namelen);
int dat_header_page_parse(const char *text, size_t len, uint32_t page_size, dat_page_layout *out,
			  char *err, size_t errlen);
/* header_event: checks the event header is the 5-bit type_len / 27-bit delta */
int dat_header_event_check(const char *text, size_t len, char *err, size_t errlen);

/* ---- kallsyms (dat_syms.c) ------------------------------------------- */

struct dat_sym {
	uint64_t addr;
	uint32_t name; /* offset into names */
};

typedef struct {
	struct dat_sym *tab; /* in libtraceevent's order (dat_syms.c) */
	char *names;         /* NUL-separated */
	uint32_t n;
	uint64_t bad_lines;
} dat_syms;

int dat_syms_parse(dat_syms *s, const char *text, size_t len);
/* The function containing addr: the symbol at or below it; NULL if none. */
const char *dat_syms_find(const dat_syms *s, uint64_t addr);
void dat_syms_free(dat_syms *s);

/* ---- the file (dat_file.c) ------------------------------------------- */

enum { DAT_COMP_NONE = 0, DAT_COMP_ZLIB = 1, DAT_COMP_ZSTD = 2 };

typedef struct {
	uint32_t cpu;
	uint64_t off, size; /* the CPU's data in the file */
	int chunked;        /* compressed in chunks (v7) */
} dat_cpu;

typedef struct {
	dat_src src;
	int version;
	int swap;
	int long_size;
	uint32_t page_size;
	int comp;
	char comp_name[64], comp_version[64];
	dat_page_layout page;
	dat_evfmt ev[FTF_REC_NEVENTS]; /* by record_decode.h's FTF_REC_* */
	dat_syms syms;
	int cpus;           /* CPUs the file says the system had */
	dat_cpu *cpu;       /* the top instance's per-CPU data */
	uint32_t ncpu;
	int latency;        /* a latency (text) trace: no per-CPU data */
	int has_ts_offset;  /* OFFSET / TSC2NSEC / TIME_SHIFT: not applied, refused */
	int64_t cpucount_option; /* the CPUCOUNT option's value, -1: none, -2: options disagree */
	/* Header oddities the read goes on without (notes, not damage): options
	 * of ids no trace-cmd defines (the first one's id), and section headers
	 * that are not what their option or the file allow (the first, in words). */
	uint64_t unknown_options;
	uint32_t first_unknown_option;
	uint64_t bad_section_headers;
	char first_bad_section[200];
	/* CPUSTAT options: each CPU's "read events", the records the recorder
	 * had taken from the kernel's buffer when it wrote them (-1: none said);
	 * all -1 when a CPU's stats come twice (another instance's?) */
	int64_t *stat_read;
	uint32_t stat_n;
	char uname[256], clock[64], version_str[64];
} dat_file;

/* Opens and reads every header and section up to the event data. */
int dat_file_open(dat_file *f, const char *path);
int dat_file_open_mem(dat_file *f, const uint8_t *data, size_t size);
void dat_file_close(dat_file *f);

/* ---- decompression (dat_decomp.c) ------------------------------------ */

typedef struct dat_decomp dat_decomp;
dat_decomp *dat_decomp_new(int comp);
/* Whether in can decompress to outlen bytes (checked before allocating). */
int dat_decomp_plausible(const dat_decomp *d, const void *in, size_t inlen, size_t outlen);
/* Decompresses in into exactly outlen bytes; -1 when it does not. */
int dat_decomp_run(dat_decomp *d, const void *in, size_t inlen, void *out, size_t outlen);
void dat_decomp_free(dat_decomp *d);
/* A whole compressed section (v7 section header flag 1) */
int dat_decomp_section(dat_file *f, uint64_t off, uint64_t size, const char *what, uint8_t **out,
		       uint64_t *outlen);

/* ---- one CPU's records (dat_pages.c) --------------------------------- */

/* Why pages were skipped, counted per CPU. */
typedef struct {
	uint64_t pages;          /* pages decoded */
	uint64_t records;        /* data records */
	uint64_t bad_pages;      /* pages whose commit or records did not fit: rest skipped */
	uint64_t bad_chunks;     /* compressed chunks that did not decompress: pages lost */
	uint64_t lost_bytes;     /* bytes of data given up (bad chunks, a cut stream) */
	uint64_t cut;            /* the stream ended early: damaged chunk table or size */
	uint64_t partial_page;   /* bytes at the end not filling a page */
	uint64_t missed_marks;   /* pages with the missed-events flag */
	uint64_t zero_pages;     /* timestamp and commit 0: not a page the kernel wrote */
} dat_stream_stats;

typedef struct {
	dat_file *f;
	uint32_t cpu;
	uint64_t pos, end;       /* the CPU's data still unread in the file */
	uint32_t chunks_left;    /* compressed */
	uint32_t slack;          /* bytes the size may count past the chunks: the writer's quirk */
	dat_decomp *dec;
	uint8_t *cbuf;
	size_t ccap;
	uint8_t *buf;            /* decompressed chunk or read block */
	size_t cap, len, at;     /* at: next page in buf */
	/* the page being decoded */
	const uint8_t *data;     /* its records */
	uint32_t dlen, idx;
	uint64_t ts;
	int64_t missed;          /* the page's missed-events mark, until its first record */
	int gap;                 /* data was skipped before the next record */
	/* the next record */
	uint64_t rts;
	const uint8_t *rdata;
	uint32_t rsize;
	int64_t rmissed;         /* 0, a count, or -1 unknown */
	int page_first;          /* no record of the page returned yet */
	int rfirst;              /* the record is the first of its page */
	dat_stream_stats st;
	/* Asked every DAT_POLL_PAGES pages or chunks read: a run of pages with
	 * no record (zeros, damage: gigabytes from a small compressed file)
	 * must not keep Ctrl-C waiting. Nonzero stops the stream (stopped). */
	int (*poll)(void *ctx);
	void *poll_ctx;
	uint32_t since_poll;
	int stopped;
} dat_stream;

#define DAT_POLL_PAGES 4096u

int dat_stream_open(dat_stream *s, dat_file *f, const dat_cpu *c);
/* 1: a record in rts/rdata/rsize/rmissed; 0: the stream ended (or its
 * poll stopped it: stopped). */
int dat_stream_next(dat_stream *s);

/* The record in rdata/rsize is the stream's next: its time, whether it
 * began a page, and the events missed before it (dat_stream_next and its
 * inline case alike); returns 1. */
static inline int dat_stream_took(dat_stream *s)
{
	s->rts = s->ts;
	s->rfirst = s->page_first;
	s->page_first = 0;
	s->rmissed = s->missed;
	if (s->gap && !s->rmissed)
		s->rmissed = -1; /* pages were skipped before this record */
	s->missed = 0;
	s->gap = 0;
	s->st.records++;
	return 1;
}

/* dat_stream_next, its common case inline (the merge loop asks once a
 * record: the call's prologue and epilogue were 16 instructions of the 76 a
 * record took): a data record of 1 to 28 words on the current page, in the
 * machine's byte order (type_len 1-28: its length in the header); anything
 * else, out of line. The same fields set as there. */
static inline int dat_stream_next_inl(dat_stream *s)
{
	if (s->data && s->idx < s->dlen && s->dlen - s->idx >= 4 && !s->f->swap) {
		uint32_t left = s->dlen - s->idx;
		const uint8_t *p = s->data + s->idx;
		uint32_t hdr = dat_get32(p, 0);
		uint32_t type_len = hdr & 31, len = type_len * 4;
		if (type_len - 1 < 28 && len <= left - 4) {
			s->ts += hdr >> 5;
			s->rdata = p + 4;
			s->rsize = len;
			s->idx += 4 + len;
			return dat_stream_took(s);
		}
	}
	return dat_stream_next(s);
}
void dat_stream_free(dat_stream *s);

/* ---- the reader (dat_merge.c) ---------------------------------------- */

/* What the builtin reader skipped or doubted, for the anomaly list. */
typedef struct {
	uint64_t bad_pages, bad_chunks, lost_bytes, cut_streams, partial_page_bytes;
	uint64_t zero_pages;         /* pages of zeros: no kernel writes one */
	uint64_t kallsyms_bad_lines;
	uint64_t data_cpus;          /* the CPUs the file has data sections for (not damage) */
	int64_t cpucount_option;     /* as dat_file's (not damage in itself) */
	uint64_t unknown_options;    /* as dat_file's: notes, not damage */
	uint32_t first_unknown_option;
	uint64_t bad_section_headers;
	char first_bad_section[200];
	uint64_t missing_records;    /* records the CPUSTAT options say were read, not in the data */
	uint64_t missing_record_cpus;
	char first[256];             /* the first damage, in words */
} ftf_dat_damage;

int ftf_read_dat_builtin(const char *path, ftf_builder *b, ftf_dat_meta *meta,
			 ftf_dat_damage *damage, ftf_progress_fn progress, void *progress_ctx,
			 char *err, size_t errlen);
/* The same from a buffer (the fuzzer). */
int ftf_read_dat_builtin_mem(const uint8_t *data, size_t size, ftf_builder *b, ftf_dat_meta *meta,
			     ftf_dat_damage *damage, char *err, size_t errlen);
/* The decoder a read of the file would use (the reader parity tests). */
int ftf_read_dat_builtin_decoder(const char *path, ftf_decoder *out, char *err, size_t errlen);

#endif
