/* trace.dat headers: the initial format, then either version 6's fixed
 * sequence (header page/event, formats, kallsyms, printk, cmdlines, CPU
 * count, options, flyrecord table) or version 7's sections found through
 * chained options sections (trace-cmd.dat.v6(5), trace-cmd.dat.v7(5)).
 * Everything up to the event data is read here; the event data itself is
 * streamed by dat_pages.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dat.h"

/* Bounds on what the metadata may claim (a damaged size must not become a
 * huge allocation): a format file is a few KB, kallsyms a few MB. */
#define FORMAT_MAX (1u << 20)
#define EVENTS_MAX 65536u
#define SYMS_MAX (1ull << 30)
#define OPTION_MAX (64u << 20)
#define OPTION_SECTIONS_MAX 4096

enum {
	SEC_OPTIONS = 0, SEC_BUFFER = 3, SEC_HEADER_INFO = 16, SEC_FTRACE_EVENTS = 17,
	SEC_EVENT_FORMATS = 18, SEC_KALLSYMS = 19,
};

enum {
	OPT_DONE = 0, OPT_BUFFER = 3, OPT_TRACECLOCK = 4, OPT_UNAME = 5,
	OPT_CPUSTAT = 2, OPT_OFFSET = 7, OPT_CPUCOUNT = 8, OPT_VERSION = 9, OPT_TIME_SHIFT = 12, OPT_TSC2NSEC = 14,
	OPT_HEADER_INFO = 16, OPT_FTRACE_EVENTS = 17, OPT_EVENT_FORMATS = 18, OPT_KALLSYMS = 19,
	OPT_PRINTK = 20, OPT_CMDLINES = 21, OPT_BUFFER_TEXT = 22,
	/* the last id trace-cmd defines (3.4: BTF_FILE 23, LAST_BOOT_INFO 24,
	 * MODULES_FILE 25); a higher one is counted as unknown, and skipped */
	OPT_KNOWN_MAX = 25,
};

/* An option of an id no trace-cmd defines: skipped, counted (a note). */
static void option_seen(dat_file *f, uint16_t id)
{
	if (id > OPT_KNOWN_MAX && f->unknown_options++ == 0)
		f->first_unknown_option = id;
}

/* A section header that is not what its option or the file allow, where the
 * read goes on without the section (printk, cmdlines: never read; the
 * buffer section's size: the CPUs' own offsets and sizes are used). */
static void bad_section(dat_file *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad_section(dat_file *f, const char *fmt, ...)
{
	if (f->bad_section_headers++ == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(f->first_bad_section, sizeof(f->first_bad_section), fmt, ap);
		va_end(ap);
	}
}

/* A v7 section's 16-byte header at off: its id, flags and payload size
 * (the string offset is not used), or -1 (a read error, said). */
static int section_header(dat_file *f, uint64_t off, const char *what, uint16_t *id, uint16_t *flags,
			  uint64_t *size)
{
	dat_cur h = { .src = &f->src, .swap = f->swap, .len = f->src.size, .pos = off, .what = what };
	uint32_t str;
	if (cur_u16(&h, id) < 0 || cur_u16(&h, flags) < 0 || cur_u32(&h, &str) < 0 || cur_u64(&h, size) < 0)
		return -1;
	return 0;
}

/* The header of a section ftflame does not read (printk, cmdlines): its id
 * and size checked against its option and the file, a note when wrong. */
static void unread_section(dat_file *f, uint64_t off, uint16_t want, const char *what)
{
	if (off > f->src.size || f->src.size - off < 16) {
		bad_section(f, "%s section at byte %llu: its header runs past the end of the file "
			    "(%llu bytes)", what, (unsigned long long)off, (unsigned long long)f->src.size);
		return;
	}
	uint16_t id, flags;
	uint64_t size;
	if (section_header(f, off, what, &id, &flags, &size) < 0)
		return; /* (a read error: the read ends with it) */
	if (id != want)
		bad_section(f, "%s section at byte %llu: its header says section %u, not %u (a section "
			    "ftflame does not read)", what, (unsigned long long)off, id, want);
	else if (size > f->src.size - off - 16)
		bad_section(f, "%s section at byte %llu: its size %llu runs past the end of the file "
			    "(%llu bytes; a section ftflame does not read)", what, (unsigned long long)off,
			    (unsigned long long)size, (unsigned long long)f->src.size);
}

/* ---- pieces shared by both versions ---------------------------------- */

static int take_format(dat_file *f, dat_cur *c, const char *system, const char *text, size_t len)
{
	for (int i = 0; i < FTF_REC_NEVENTS; i++) {
		if (strcmp(system, ftf_rec_events[i].system) != 0)
			continue;
		dat_evfmt *slot = &f->ev[i];
		if (slot->present)
			continue; /* the first definition counts */
		char err[200];
		int r = dat_format_parse(text, len, ftf_rec_events[i].name, slot, err, sizeof(err));
		if (r < 0)
			return cur_fail(c, "%s: a damaged trace.dat", err);
		if (r > 0)
			return 0;
	}
	return 0;
}

/* One format file: u64 size, then the text. Only the ftrace and sched
 * systems are read; others are skipped unread. */
static int one_format(dat_file *f, dat_cur *c, const char *system)
{
	uint64_t size;
	if (cur_u64(c, &size) < 0)
		return -1;
	if (strcmp(system, "ftrace") != 0 && strcmp(system, "sched") != 0) {
		if (size > FORMAT_MAX)
			return cur_fail(c, "an event format of %llu bytes (at most %u expected): a damaged "
					"trace.dat", (unsigned long long)size, FORMAT_MAX);
		return cur_skip(c, size);
	}
	char *text = cur_blob(c, size, FORMAT_MAX);
	if (!text)
		return -1;
	int rc = take_format(f, c, system, text, size);
	free(text);
	return rc;
}

static int ftrace_formats(dat_file *f, dat_cur *c)
{
	uint32_t n;
	if (cur_u32(c, &n) < 0)
		return -1;
	if (n > EVENTS_MAX)
		return cur_fail(c, "%u ftrace event formats (at most %u expected): a damaged trace.dat",
				n, EVENTS_MAX);
	for (uint32_t i = 0; i < n; i++)
		if (one_format(f, c, "ftrace") < 0)
			return -1;
	return 0;
}

static int event_formats(dat_file *f, dat_cur *c)
{
	uint32_t nsys;
	if (cur_u32(c, &nsys) < 0)
		return -1;
	if (nsys > EVENTS_MAX)
		return cur_fail(c, "%u event systems (at most %u expected): a damaged trace.dat", nsys,
				EVENTS_MAX);
	for (uint32_t s = 0; s < nsys; s++) {
		char system[256];
		uint32_t n;
		if (cur_str(c, system, sizeof(system), 255) < 0 || cur_u32(c, &n) < 0)
			return -1;
		if (n > EVENTS_MAX)
			return cur_fail(c, "%u formats in system %s (at most %u expected): a damaged "
					"trace.dat", n, system, EVENTS_MAX);
		for (uint32_t i = 0; i < n; i++)
			if (one_format(f, c, system) < 0)
				return -1;
	}
	return 0;
}

static int header_info(dat_file *f, dat_cur *c)
{
	char tag[13];
	uint64_t size;
	if (cur_bytes(c, tag, 12) < 0)
		return -1;
	if (memcmp(tag, "header_page", 12) != 0)
		return cur_fail(c, "\"header_page\" expected: a damaged trace.dat");
	if (cur_u64(c, &size) < 0)
		return -1;
	char *page = cur_blob(c, size, FORMAT_MAX);
	if (!page)
		return -1;
	char err[200];
	int rc = dat_header_page_parse(page, size, f->page_size, &f->page, err, sizeof(err));
	free(page);
	if (rc < 0)
		return cur_fail(c, "%s", err);
	if (cur_bytes(c, tag, 13) < 0)
		return -1;
	if (memcmp(tag, "header_event", 13) != 0)
		return cur_fail(c, "\"header_event\" expected: a damaged trace.dat");
	if (cur_u64(c, &size) < 0)
		return -1;
	char *event = cur_blob(c, size, FORMAT_MAX);
	if (!event)
		return -1;
	rc = dat_header_event_check(event, size, err, sizeof(err));
	free(event);
	return rc < 0 ? cur_fail(c, "%s", err) : 0;
}

static int kallsyms(dat_file *f, dat_cur *c)
{
	uint32_t size;
	if (cur_u32(c, &size) < 0)
		return -1;
	const char *text;
	char *copy = NULL;
	if (c->mem && size <= SYMS_MAX && c->pos <= c->len && size <= c->len - c->pos) {
		/* a section in memory (version 7) is parsed where it is: the copy
		 * of a Debian kernel's 9 MB was 5 ms of every read's open */
		text = (const char *)c->mem + c->pos;
		c->last = c->pos;
		c->pos += size;
	} else if (!(text = copy = cur_blob(c, size, SYMS_MAX))) { /* (its messages when it does not fit) */
		return -1;
	}
	int rc = dat_syms_parse(&f->syms, text, size);
	free(copy);
	return rc < 0 ? cur_fail(c, "out of memory for the kallsyms") : 0;
}

/* A NUL-terminated option string into out (at most outlen - 1 bytes). */
static void option_string(const uint8_t *data, uint32_t size, char *out, size_t outlen)
{
	size_t n = strnlen((const char *)data, size);
	while (n && (data[n - 1] == '\n' || data[n - 1] == ' '))
		n--;
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, data, n);
	out[n] = 0;
}

/* "local [global] counter": the clock in brackets */
static void clock_from_list(const char *list, char *out, size_t outlen)
{
	const char *o = strchr(list, '['), *e = o ? strchr(o, ']') : NULL;
	if (!o || !e || (size_t)(e - o - 1) >= outlen)
		return;
	memcpy(out, o + 1, (size_t)(e - o - 1));
	out[e - o - 1] = 0;
}

/* ---- version 6 ------------------------------------------------------- */

/* A CPUCOUNT option's value (a file may hold several): -2 when two disagree. */
static void cpucount_seen(dat_file *f, uint32_t n)
{
	if (f->cpucount_option == -1)
		f->cpucount_option = n;
	else if (f->cpucount_option != (int64_t)n)
		f->cpucount_option = -2;
}

/* The number after "name: " in a CPUSTAT text, -1 when absent. */
static int64_t stat_number(const char *text, const char *name)
{
	const char *p = strstr(text, name);
	if (!p)
		return -1;
	p += strlen(name);
	while (*p == ' ')
		p++;
	if (*p < '0' || *p > '9')
		return -1;
	int64_t v = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v;
}

/* A CPUSTAT option ("CPU: N\nentries: ...\nread events: N\n", one per
 * CPU): its CPU's read events kept. A CPU said twice (the stats of
 * another instance's buffer) drops them all: which is this data's is
 * unknown, and a check against the wrong one would be a false alarm. */
static void cpustat_seen(dat_file *f, const uint8_t *data, uint32_t size)
{
	if (f->stat_n == UINT32_MAX)
		return;
	char text[512];
	option_string(data, size, text, sizeof(text));
	int64_t cpu = stat_number(text, "CPU:"), read = stat_number(text, "read events:");
	if (cpu < 0 || cpu >= FTF_MAX_CPUS || read < 0)
		return;
	if ((uint32_t)cpu >= f->stat_n) {
		int64_t *grown = realloc(f->stat_read, ((size_t)cpu + 1) * sizeof(*grown));
		if (!grown)
			return;
		for (uint32_t i = f->stat_n; i <= (uint32_t)cpu; i++)
			grown[i] = -1;
		f->stat_read = grown;
		f->stat_n = (uint32_t)cpu + 1;
	}
	if (f->stat_read[cpu] != -1) {
		free(f->stat_read);
		f->stat_read = NULL;
		f->stat_n = UINT32_MAX;
		return;
	}
	f->stat_read[cpu] = read;
}

static int v6_options(dat_file *f, dat_cur *c)
{
	for (int i = 0;; i++) {
		uint16_t id;
		uint32_t size;
		if (cur_u16(c, &id) < 0)
			return -1;
		if (id == OPT_DONE)
			return 0;
		if (cur_u32(c, &size) < 0)
			return -1;
		char *data = cur_blob(c, size, OPTION_MAX);
		if (!data)
			return -1;
		option_seen(f, id);
		if (id == OPT_TRACECLOCK) {
			char list[256];
			option_string((uint8_t *)data, size, list, sizeof(list));
			clock_from_list(list, f->clock, sizeof(f->clock));
		} else if (id == OPT_UNAME) {
			option_string((uint8_t *)data, size, f->uname, sizeof(f->uname));
		} else if (id == OPT_VERSION) {
			option_string((uint8_t *)data, size, f->version_str, sizeof(f->version_str));
		} else if (id == OPT_OFFSET || id == OPT_TSC2NSEC || id == OPT_TIME_SHIFT) {
			f->has_ts_offset = 1;
		} else if (id == OPT_CPUSTAT) {
			cpustat_seen(f, (uint8_t *)data, size);
		} else if (id == OPT_CPUCOUNT && size >= 4) {
			uint32_t n;
			memcpy(&n, data, 4);
			cpucount_seen(f, f->swap ? __builtin_bswap32(n) : n);
		}
		free(data);
	}
}

static int v6_headers(dat_file *f, uint64_t start)
{
	dat_cur c = { .src = &f->src, .swap = f->swap, .len = f->src.size, .pos = start,
		      .what = "headers" };
	if (header_info(f, &c) < 0)
		return -1;
	c.what = "ftrace event formats";
	if (ftrace_formats(f, &c) < 0)
		return -1;
	c.what = "event formats";
	if (event_formats(f, &c) < 0)
		return -1;
	c.what = "kallsyms";
	if (kallsyms(f, &c) < 0)
		return -1;
	uint32_t size32;
	uint64_t size64;
	c.what = "printk formats";
	if (cur_u32(&c, &size32) < 0 || cur_skip(&c, size32) < 0)
		return -1;
	c.what = "saved command lines";
	if (cur_u64(&c, &size64) < 0 || cur_skip(&c, size64) < 0)
		return -1;
	uint32_t cpus;
	c.what = "CPU count";
	if (cur_u32(&c, &cpus) < 0)
		return -1;
	if (cpus == 0 || cpus > FTF_MAX_CPUS)
		return cur_fail(&c, "the file claims %u CPUs (1 to %d supported): a damaged trace.dat",
				cpus, FTF_MAX_CPUS);
	f->cpus = (int)cpus;
	for (;;) {
		char tag[10];
		c.what = "data section tag";
		if (cur_bytes(&c, tag, 10) < 0)
			return -1;
		if (memcmp(tag, "options  ", 10) == 0) {
			c.what = "options";
			if (v6_options(f, &c) < 0)
				return -1;
			continue;
		}
		if (memcmp(tag, "latency  ", 10) == 0) {
			f->latency = 1;
			return 0;
		}
		if (memcmp(tag, "flyrecord", 10) != 0)
			return cur_fail(&c, "neither options, latency nor flyrecord: a damaged trace.dat");
		break;
	}
	c.what = "flyrecord CPU table";
	f->cpu = calloc(cpus, sizeof(*f->cpu));
	if (!f->cpu)
		return cur_fail(&c, "out of memory");
	f->ncpu = cpus;
	for (uint32_t i = 0; i < cpus; i++) {
		f->cpu[i].cpu = i;
		if (cur_u64(&c, &f->cpu[i].off) < 0 || cur_u64(&c, &f->cpu[i].size) < 0)
			return -1;
	}
	return 0;
}

/* ---- version 7 ------------------------------------------------------- */

/* A section's payload in memory (decompressed if it says so), or -1. */
static int section(dat_file *f, uint64_t off, uint16_t want, const char *what, dat_cur *out,
		   uint8_t **owned)
{
	uint16_t id, flags;
	uint64_t size;
	if (section_header(f, off, what, &id, &flags, &size) < 0)
		return -1;
	if (id != want)
		return dat_fail(&f->src, "%s section at byte %llu: its header says section %u, not %u: "
				"a damaged trace.dat", what, (unsigned long long)off, id, want);
	uint64_t data = off + 16;
	if (size > f->src.size - data)
		return dat_fail(&f->src, "%s section at byte %llu: its size %llu runs past the end of the "
				"file (%llu bytes): a truncated or damaged trace.dat", what,
				(unsigned long long)off, (unsigned long long)size,
				(unsigned long long)f->src.size);
	uint8_t *buf;
	uint64_t len;
	if (flags & 1) {
		if (f->comp == DAT_COMP_NONE)
			return dat_fail(&f->src, "%s section at byte %llu: compressed, in a file that says "
					"it is not: a damaged trace.dat", what, (unsigned long long)off);
		if (dat_decomp_section(f, data, size, what, &buf, &len) < 0)
			return -1;
	} else {
		dat_cur c = { .src = &f->src, .swap = f->swap, .len = size, .base = data, .what = what };
		if (!(buf = (uint8_t *)cur_blob(&c, size, SYMS_MAX)))
			return -1;
		len = size;
	}
	*owned = buf;
	*out = (dat_cur){ .src = &f->src, .swap = f->swap, .mem = buf, .len = len, .base = off, .what = what };
	return 0;
}

typedef int (*section_reader)(dat_file *f, dat_cur *c);

static int read_section(dat_file *f, uint64_t off, uint16_t id, const char *what, section_reader fn)
{
	dat_cur c;
	uint8_t *buf = NULL;
	if (section(f, off, id, what, &c, &buf) < 0)
		return -1;
	int rc = fn(f, &c);
	free(buf);
	return rc;
}

/* BUFFER: the per-CPU data of one instance; the top one (name "") is read */
static int buffer_option(dat_file *f, dat_cur *c, int *have)
{
	uint64_t off;
	char name[256], clock[64];
	uint32_t page_size, n;
	if (cur_u64(c, &off) < 0 || cur_str(c, name, sizeof(name), 4096) < 0 ||
	    cur_str(c, clock, sizeof(clock), 4096) < 0 || cur_u32(c, &page_size) < 0 ||
	    cur_u32(c, &n) < 0)
		return -1;
	if (name[0] || *have)
		return 0;
	if (page_size != f->page_size)
		return cur_fail(c, "buffer page size %u differs from the file's %u: a damaged trace.dat",
				page_size, f->page_size);
	if (n > FTF_MAX_CPUS)
		return cur_fail(c, "the buffer claims %u CPUs (at most %d supported): a damaged trace.dat",
				n, FTF_MAX_CPUS);
	/* the flyrecord section: its header says whether the data is compressed */
	dat_cur h = { .src = &f->src, .swap = f->swap, .len = f->src.size, .pos = off,
		      .what = "buffer flyrecord section" };
	uint16_t id, flags;
	uint32_t str;
	uint64_t size;
	if (cur_u16(&h, &id) < 0 || cur_u16(&h, &flags) < 0 || cur_u32(&h, &str) < 0 ||
	    cur_u64(&h, &size) < 0)
		return -1;
	if (id != SEC_BUFFER)
		return cur_fail(&h, "section %u, not the buffer section 3: a damaged trace.dat", id);
	if (size > f->src.size - off - 16) /* (off + 16 is within the file: read above) */
		bad_section(f, "buffer section at byte %llu: its size %llu runs past the end of the file "
			    "(%llu bytes); the CPUs' own offsets and sizes used", (unsigned long long)off,
			    (unsigned long long)size, (unsigned long long)f->src.size);
	if ((flags & 1) && f->comp == DAT_COMP_NONE)
		return cur_fail(&h, "compressed, in a file that says it is not: a damaged trace.dat");
	f->cpu = calloc(n ? n : 1, sizeof(*f->cpu));
	if (!f->cpu)
		return cur_fail(c, "out of memory");
	f->ncpu = n;
	for (uint32_t i = 0; i < n; i++) {
		dat_cpu *cpu = &f->cpu[i];
		if (cur_u32(c, &cpu->cpu) < 0 || cur_u64(c, &cpu->off) < 0 || cur_u64(c, &cpu->size) < 0)
			return -1;
		if (cpu->cpu >= FTF_MAX_CPUS)
			return cur_fail(c, "CPU id %u (at most %d supported): a damaged trace.dat",
					cpu->cpu, FTF_MAX_CPUS - 1);
		for (uint32_t j = 0; j < i; j++)
			if (f->cpu[j].cpu == cpu->cpu)
				return cur_fail(c, "CPU %u listed twice: a damaged trace.dat", cpu->cpu);
		cpu->chunked = flags & 1;
	}
	snprintf(f->clock, sizeof(f->clock), "%s", clock);
	*have = 1;
	return 0;
}

typedef struct {
	uint64_t header_info, ftrace_events, event_formats, kallsyms, printk, cmdlines;
	int have_buffer, have_text, have_cpucount;
	uint32_t cpucount;
	char clock_list[256];
} v7_refs;

static int v7_option(dat_file *f, dat_cur *c, uint16_t id, uint32_t size, v7_refs *r)
{
	uint64_t end = c->pos + size;
	uint64_t *ref = id == OPT_HEADER_INFO ? &r->header_info :
			id == OPT_FTRACE_EVENTS ? &r->ftrace_events :
			id == OPT_EVENT_FORMATS ? &r->event_formats :
			id == OPT_KALLSYMS ? &r->kallsyms :
			id == OPT_PRINTK ? &r->printk :
			id == OPT_CMDLINES ? &r->cmdlines : NULL;
	int rc = 0;
	option_seen(f, id);
	if (ref) {
		if (size < 8)
			return cur_fail(c, "option %u of %u bytes (8 expected): a damaged trace.dat", id, size);
		rc = cur_u64(c, ref);
	} else if (id == OPT_BUFFER) {
		dat_cur sub = *c;
		sub.len = end;
		rc = buffer_option(f, &sub, &r->have_buffer);
	} else if (id == OPT_BUFFER_TEXT) {
		r->have_text = 1;
	} else if (id == OPT_CPUCOUNT) {
		if (size < 4)
			return cur_fail(c, "CPUCOUNT option of %u bytes (4 expected): a damaged trace.dat", size);
		rc = cur_u32(c, &r->cpucount);
		r->have_cpucount = 1;
		cpucount_seen(f, r->cpucount);
	} else if (id == OPT_CPUSTAT) {
		char *text = cur_blob(c, size, OPTION_MAX);
		if (!text)
			return -1;
		cpustat_seen(f, (uint8_t *)text, size);
		free(text);
	} else if (id == OPT_TRACECLOCK || id == OPT_UNAME || id == OPT_VERSION) {
		char *text = cur_blob(c, size, OPTION_MAX);
		if (!text)
			return -1;
		if (id == OPT_TRACECLOCK)
			option_string((uint8_t *)text, size, r->clock_list, sizeof(r->clock_list));
		else if (id == OPT_UNAME)
			option_string((uint8_t *)text, size, f->uname, sizeof(f->uname));
		else
			option_string((uint8_t *)text, size, f->version_str, sizeof(f->version_str));
		free(text);
	} else if (id == OPT_OFFSET || id == OPT_TSC2NSEC || id == OPT_TIME_SHIFT) {
		f->has_ts_offset = 1;
	}
	if (rc < 0)
		return -1;
	c->pos = end;
	return 0;
}

/* One options section; *next: the offset of the next one, 0 for none. */
static int v7_options(dat_file *f, dat_cur *c, v7_refs *r, uint64_t *next)
{
	*next = 0;
	for (;;) {
		uint16_t id;
		uint32_t size;
		if (cur_u16(c, &id) < 0 || cur_u32(c, &size) < 0)
			return -1;
		if (size > c->len - c->pos)
			return cur_fail(c, "option %u of %u bytes runs past the section's end: a damaged "
					"trace.dat", id, size);
		if (id == OPT_DONE) {
			if (size >= 8 && cur_u64(c, next) < 0)
				return -1;
			return 0;
		}
		if (v7_option(f, c, id, size, r) < 0)
			return -1;
	}
}

static int v7_headers(dat_file *f, uint64_t first)
{
	v7_refs r;
	memset(&r, 0, sizeof(r));
	uint64_t seen[OPTION_SECTIONS_MAX];
	int nseen = 0;
	for (uint64_t off = first; off;) {
		for (int i = 0; i < nseen; i++)
			if (seen[i] == off)
				return dat_fail(&f->src, "options section at byte %llu: the options chain loops: "
						"a damaged trace.dat", (unsigned long long)off);
		if (nseen == OPTION_SECTIONS_MAX)
			return dat_fail(&f->src, "more than %d options sections: a damaged trace.dat",
					OPTION_SECTIONS_MAX);
		seen[nseen++] = off;
		dat_cur c;
		uint8_t *buf = NULL;
		if (section(f, off, SEC_OPTIONS, "options", &c, &buf) < 0)
			return -1;
		int rc = v7_options(f, &c, &r, &off);
		free(buf);
		if (rc < 0)
			return -1;
	}
	if (!r.header_info)
		return dat_fail(&f->src, "options: no header info section: a damaged trace.dat");
	if (read_section(f, r.header_info, SEC_HEADER_INFO, "header info", header_info) < 0)
		return -1;
	if (r.ftrace_events &&
	    read_section(f, r.ftrace_events, SEC_FTRACE_EVENTS, "ftrace event formats", ftrace_formats) < 0)
		return -1;
	if (r.event_formats &&
	    read_section(f, r.event_formats, SEC_EVENT_FORMATS, "event formats", event_formats) < 0)
		return -1;
	if (r.kallsyms && read_section(f, r.kallsyms, SEC_KALLSYMS, "kallsyms", kallsyms) < 0)
		return -1;
	if (r.printk)
		unread_section(f, r.printk, OPT_PRINTK, "printk");
	if (r.cmdlines)
		unread_section(f, r.cmdlines, OPT_CMDLINES, "cmdlines");
	if (!r.have_buffer) {
		if (r.have_text) {
			f->latency = 1;
			return 0;
		}
		return dat_fail(&f->src, "options: no buffer with trace data: a damaged trace.dat");
	}
	if (!f->clock[0])
		clock_from_list(r.clock_list, f->clock, sizeof(f->clock));
	f->cpus = r.have_cpucount ? (int)(r.cpucount > FTF_MAX_CPUS ? FTF_MAX_CPUS : r.cpucount) : (int)f->ncpu;
	return 0;
}

/* ---- the per-CPU table ------------------------------------------------ */

static int by_offset(const void *a, const void *b)
{
	const dat_cpu *x = *(const dat_cpu *const *)a, *y = *(const dat_cpu *const *)b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Two CPUs whose data overlap would be read twice (a damaged table can
 * point thousands of CPUs at the same bytes): refused. */
static int check_cpu_ranges(dat_file *f)
{
	if (f->ncpu < 2)
		return 0;
	const dat_cpu **order = malloc(f->ncpu * sizeof(*order));
	if (!order)
		return dat_fail(&f->src, "out of memory");
	uint32_t n = 0;
	for (uint32_t i = 0; i < f->ncpu; i++)
		if (f->cpu[i].size)
			order[n++] = &f->cpu[i];
	qsort(order, n, sizeof(*order), by_offset);
	int rc = 0;
	for (uint32_t i = 1; i < n && !rc; i++) {
		const dat_cpu *a = order[i - 1], *b = order[i];
		uint64_t a_end = a->off + a->size + (a->chunked ? 4 : 0);
		if (a_end < a->off || a_end > b->off)
			rc = dat_fail(&f->src, "flyrecord CPU table: CPU %u's data (byte %llu, %llu bytes) "
				      "overlaps CPU %u's (byte %llu): a damaged trace.dat", a->cpu,
				      (unsigned long long)a->off, (unsigned long long)a->size, b->cpu,
				      (unsigned long long)b->off);
	}
	free(order);
	return rc;
}

/* ---- the initial format ---------------------------------------------- */

static int open_common(dat_file *f)
{
	for (int i = 0; i < FTF_REC_NEVENTS; i++)
		f->ev[i].id = -1;
	dat_cur c = { .src = &f->src, .len = f->src.size, .what = "file header" };
	uint8_t magic[10];
	if (cur_bytes(&c, magic, 10) < 0)
		return -1;
	if (memcmp(magic, "\x17\x08\x44tracing", 10) != 0)
		return cur_fail(&c, "no trace.dat magic");
	char version[16];
	if (cur_str(&c, version, sizeof(version), 8) < 0)
		return -1;
	f->version = atoi(version);
	if (f->version != 6 && f->version != 7)
		return dat_fail(&f->src, "file header: file version %s (6 and 7 are read): "
				"try --reader libtracecmd, or trace-cmd convert --file-version 7", version);
	uint8_t endian, long_size;
	if (cur_bytes(&c, &endian, 1) < 0 || cur_bytes(&c, &long_size, 1) < 0)
		return -1;
	if (endian > 1 || (long_size != 4 && long_size != 8))
		return cur_fail(&c, "endianness %u / long size %u: a damaged trace.dat", endian, long_size);
	f->swap = endian != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
	c.swap = f->swap;
	f->long_size = long_size;
	if (cur_u32(&c, &f->page_size) < 0)
		return -1;
	if (f->page_size < 256 || f->page_size > (1u << 24) || (f->page_size & (f->page_size - 1)))
		return cur_fail(&c, "page size %u: a damaged trace.dat", f->page_size);
	if (f->version == 6) {
		snprintf(f->comp_name, sizeof(f->comp_name), "none");
		return v6_headers(f, c.pos);
	}
	if (cur_str(&c, f->comp_name, sizeof(f->comp_name), 63) < 0 ||
	    cur_str(&c, f->comp_version, sizeof(f->comp_version), 63) < 0)
		return -1;
	if (strcmp(f->comp_name, "none") == 0)
		f->comp = DAT_COMP_NONE;
	else if (strcmp(f->comp_name, "zstd") == 0)
		f->comp = DAT_COMP_ZSTD;
	else if (strcmp(f->comp_name, "zlib") == 0)
		f->comp = DAT_COMP_ZLIB;
	else
		return dat_fail(&f->src, "file header: compression \"%s\" (zstd, zlib and none are read): "
				"trace-cmd convert --compression zstd makes a copy this reader reads",
				f->comp_name);
	uint64_t options;
	if (cur_u64(&c, &options) < 0)
		return -1;
	return v7_headers(f, options);
}

int dat_file_open(dat_file *f, const char *path)
{
	memset(f, 0, sizeof(*f));
	f->cpucount_option = -1;
	if (dat_src_open(&f->src, path) < 0)
		return -1;
	return open_common(f) < 0 ? -1 : check_cpu_ranges(f);
}

int dat_file_open_mem(dat_file *f, const uint8_t *data, size_t size)
{
	memset(f, 0, sizeof(*f));
	f->cpucount_option = -1;
	dat_src_mem(&f->src, data, size);
	return open_common(f) < 0 ? -1 : check_cpu_ranges(f);
}

void dat_file_close(dat_file *f)
{
	dat_syms_free(&f->syms);
	free(f->cpu);
	f->cpu = NULL;
	free(f->stat_read);
	f->stat_read = NULL;
	dat_src_close(&f->src);
}
