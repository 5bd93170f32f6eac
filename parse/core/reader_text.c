/* One tokenizer for every text form of a function_graph trace.
 *
 * Dialects (docs/trace-formats.md, "Text forms"), told apart per line:
 *  - the kernel's printer (tracefs `trace`, trace_pipe, `perf ftrace`):
 *      [ABSTIME |] [ CPU)] [COMM-PID |] [LATFLAGS |] [MARK DURATION us] |  BODY
 *    plus irq arrows `==========>` / `<==========`, task-switch separators
 *    ` 0)  comm-1 => comm-2`, `CPU:N [LOST M EVENTS]` and ` (Overruns: N)`;
 *  - `trace-cmd report`:
 *      COMM-PID [CPU] [FLAGS] TS: funcgraph_entry: [MARK DURATION us] |  BODY
 *    (also -l latency columns, -R raw fields, the kernel print fmt without
 *    plugins, sched_switch lines, `CPU:N [M EVENTS DROPPED]`);
 *  - the mail form (FTF_TEXT_MAIL): kernel records re-flowed onto long lines
 *    with prose in between; records are found anywhere in a line and the
 *    depth is the structural one (indentation is lost).
 * BODY is `func() {`, `func();`, `}`, with optional C comments
 * (tails, return values, return addresses), module suffixes `func [mod]()`,
 * arguments `func(a=1)`, and trace-cmd's ` (N)` depth and ` (ret=...)`.
 *
 * Text has no calltime: a `}` line's printed duration is the call's
 * duration, a leaf line `func();` is an entry and exit at once (FTF_EV_LEAF).
 * With a timestamp on the line (abstime, trace-cmd), exits end at it and
 * leaves start at it; without one, calltime is 0.
 *
 * Stacks: per task when the line names the task (funcgraph-proc column,
 * trace-cmd); otherwise per CPU, switched to another task's stack at each
 * task-switch separator (the first task of a CPU is named by its first
 * separator). Text carries no irq flags except trace-cmd's latency column:
 * the arrows mark hardirq context, and the builder knows irq entry names.
 *
 * Input comes in chunks of any size; no line is copied unless it straddles
 * two chunks. Every byte sequence is safe input (see fuzz_text.c).
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "reader_text.h"

#define TXT_MAX_DEPTH 4096
#define TXT_MAX_LINE (64u << 20)
#define TXT_MAIL_RECORD 1024 /* longest record looked for in a mail line */
#define TXT_JOIN_MAX (1u << 20) /* longest mail line rebuilt from wrapped lines */
#define TXT_PEND_MAX 4096 /* longest line not understood that a next line may continue */

typedef struct {
	int32_t bpid;    /* pid handed to the builder (-1-cpu: unknown task of a CPU) */
	uint32_t *funcs; /* open function per depth, FTF_NONE when unknown */
	uint32_t n, cap;
	uint64_t overrun;
} tstack;

typedef struct {
	tstack *cur;     /* the task running here, for lines without a task column */
	uint64_t last_ts;
	int32_t irq;     /* ==========> nesting */
	uint8_t named;   /* a separator (or task column) said who ran here */
	uint8_t seen;    /* a record of this CPU was seen */
} tcpu;

enum rec_kind {
	R_NONE = 0, R_ENTRY, R_LEAF, R_EXIT, R_COMMENT, R_ARROW_IN, R_ARROW_OUT, R_SEP,
	R_LOST, R_SWITCH, R_OTHER, R_OVERRUN, R_HEADER,
};

typedef struct {
	int kind;
	int tracecmd;
	int has_cpu, has_pid, has_ts, has_dur, has_depth, has_indent;
	int32_t cpu, pid, next_pid;
	uint64_t ts, dur;
	const char *name; /* entry/leaf function, or an exit's tail name */
	size_t nlen;
	int64_t depth;    /* explicit: trace-cmd (N) or raw depth= */
	int64_t indent;   /* from the indentation */
	uint8_t flags;    /* irq bits from a latency column */
	int has_flags;
	int64_t lost;
	int raw_exit;     /* raw exit: calltime/rettime given */
	uint64_t calltime, rettime, overrun;
	int has_overrun;
	int has_retval;   /* exit/leaf: a return value printed */
	uint64_t retval;  /* as the kernel holds it: -22 is 0xffffffffffffffea */
} rec;

struct ftf_text {
	ftf_builder *b;
	int mode;
	char *carry;
	size_t ncarry, capcarry;
	int discarding;
	/* key -> stack (several keys can share one stack: aliases) */
	ftf_u64map stacks;
	tstack **all;
	uint32_t nall, capall;
	tcpu *cpus;
	uint32_t ncpus;
	tstack *last_stack;
	int last_dialect; /* 1 kernel, 2 trace-cmd */
	uint32_t unknown_func;
	ftf_text_sink sink;
	void *sink_ctx;
	ftf_text_stats st;
	/* Lines a mail client wrapped (see rejoin_*): mail mode keeps the line
	 * being rebuilt here; line mode the last line not understood. */
	char *join;
	size_t njoin, capjoin;
	uint64_t join_lines;  /* physical lines in it */
	uint64_t join_lineno; /* line mode: its line number */
	int join_header;      /* mail: it began as a header line */
};

/* ---- small scanners on [p, e) ------------------------------------------- */

/* Character classes, one table lookup each (the scanners run per byte). */
enum { C_NAME = 1, C_LAT = 2, C_MARK = 4 };
static uint8_t cclass[256];

static void cclass_init(void)
{
	if (cclass['a'])
		return;
	for (int c = 0x21; c < 0x7f; c++)
		if (!strchr("(){};|", c))
			cclass[c] |= C_NAME;
	for (int c = 0x80; c < 0x100; c++)
		cclass[c] |= C_NAME;
	for (const char *q = ".dDXnNpPbBLhHsSzZ0123456789"; *q; q++)
		cclass[(unsigned char)*q] |= C_LAT;
	for (const char *q = "+!#*@$"; *q; q++)
		cclass[(unsigned char)*q] |= C_MARK;
}

static inline int name_char_ok(char c)
{
	return cclass[(unsigned char)c] & C_NAME;
}

/* A function name at p into r->name; its end, or NULL when there is none. */
static const char *take_name(rec *r, const char *p, const char *e)
{
	const char *q = p;
	while (q < e && name_char_ok(*q))
		q++;
	if (q == p)
		return NULL;
	r->name = p;
	r->nlen = (size_t)(q - p);
	return q;
}

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }
static inline int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

static const char *skip_sp(const char *p, const char *e)
{
	while (p < e && is_space(*p))
		p++;
	return p;
}

static const char *rtrim(const char *s, const char *e)
{
	while (e > s && is_space(e[-1]))
		e--;
	return e;
}

static int starts(const char *p, const char *e, const char *lit)
{
	size_t n = strlen(lit);
	return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0;
}

static const char *find2(const char *p, const char *e, char a, char b)
{
	for (; p + 1 < e; p++)
		if (p[0] == a && p[1] == b)
			return p;
	return NULL;
}

/* Unsigned decimal of at most maxd digits; NULL when there is none or it is longer. */
static const char *parse_u64(const char *p, const char *e, uint64_t *v, int maxd)
{
	uint64_t x = 0;
	int n = 0;
	while (p < e && is_digit(*p)) {
		if (++n > maxd)
			return NULL;
		x = x * 10 + (uint64_t)(*p - '0');
		p++;
	}
	if (!n)
		return NULL;
	*v = x;
	return p;
}

static const char *parse_pid(const char *p, const char *e, int32_t *pid)
{
	uint64_t v;
	const char *q = parse_u64(p, e, &v, 10);
	if (!q || v > 0x7fffffff)
		return NULL;
	*pid = (int32_t)v;
	return q;
}

/* SECONDS.FRACTION (1..9 fraction digits) as ns. */
static const char *parse_ts(const char *p, const char *e, uint64_t *ns)
{
	uint64_t sec, frac = 0;
	const char *q = parse_u64(p, e, &sec, 11);
	if (!q || q >= e || *q != '.')
		return NULL;
	q++;
	int n = 0;
	while (q < e && is_digit(*q)) {
		if (++n > 9)
			return NULL;
		frac = frac * 10 + (uint64_t)(*q - '0');
		q++;
	}
	if (!n)
		return NULL;
	for (; n < 9; n++)
		frac *= 10;
	*ns = sec * 1000000000ULL + frac;
	return q;
}

/* A duration field's whole content: [MARK] NUMBER[.FRACTION] UNIT. */
static int parse_duration(const char *p, const char *e, uint64_t *ns)
{
	p = skip_sp(p, e);
	e = rtrim(p, e);
	if (p < e && (cclass[(unsigned char)*p] & C_MARK)) {
		p++;
		if (p >= e || !is_space(*p))
			return 0;
		p = skip_sp(p, e);
	}
	uint64_t ip;
	const char *q = parse_u64(p, e, &ip, 12);
	if (!q)
		return 0;
	uint64_t frac = 0;
	int nf = 0;
	if (q < e && *q == '.') {
		q++;
		while (q < e && is_digit(*q)) {
			if (nf < 9) {
				frac = frac * 10 + (uint64_t)(*q - '0');
				nf++;
			}
			q++;
		}
	}
	q = skip_sp(q, e);
	uint64_t unit;
	size_t ul = (size_t)(e - q);
	if (ul == 2 && q[0] == 'u' && q[1] == 's')
		unit = 1000;
	else if (ul == 2 && q[0] == 'n' && q[1] == 's')
		unit = 1;
	else if (ul == 2 && q[0] == 'm' && q[1] == 's')
		unit = 1000000;
	else if (ul == 1 && q[0] == 's')
		unit = 1000000000ULL;
	else
		return 0;
	/* frac has nf digits: scale to the unit without floating point */
	uint64_t fns = frac * unit;
	for (int i = 0; i < nf; i++)
		fns /= 10;
	/* past 2^64 ns: the largest, which the builder cuts and counts */
	if (__builtin_mul_overflow(ip, unit, ns) || __builtin_add_overflow(*ns, fns, ns))
		*ns = UINT64_MAX;
	return 1;
}

/* `comm-pid` (comm may hold '-' and spaces): the pid after the last '-'. */
static int parse_comm_pid(const char *p, const char *e, int32_t *pid)
{
	p = skip_sp(p, e);
	e = rtrim(p, e);
	const char *d = e;
	while (d > p && is_digit(d[-1]))
		d--;
	if (d == e || d - 1 <= p || d[-1] != '-' || e - d > 10)
		return 0;
	return parse_pid(d, e, pid) == e;
}

/* A latency-flags token (d.h1., 1d.h2.): hard/soft irq bits at index 2. */
static int parse_lat_flags(const char *p, const char *e, uint8_t *flags)
{
	p = skip_sp(p, e);
	e = rtrim(p, e);
	size_t n = (size_t)(e - p);
	if (n < 3 || n > 8)
		return 0;
	for (const char *q = p; q < e; q++)
		if (!(cclass[(unsigned char)*q] & C_LAT))
			return 0;
	uint8_t f = 0;
	switch (p[2]) {
	case 'h': case 'H': f = FTF_FLAG_HARDIRQ; break;
	case 's': f = FTF_FLAG_SOFTIRQ; break;
	case 'z': case 'Z': f = FTF_FLAG_NMI; break;
	default: break;
	}
	*flags = f;
	return 1;
}

/* Skip a balanced (...) starting at p (which is '('); NULL if unbalanced. */
static const char *skip_parens(const char *p, const char *e)
{
	int depth = 0;
	for (; p < e; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')' && --depth == 0)
			return p + 1;
	}
	return NULL;
}

/* Skip a C comment starting at p; returns past it and its content bounds. */
static const char *skip_comment(const char *p, const char *e, const char **cs, const char **ce)
{
	if (!starts(p, e, "/*"))
		return NULL;
	const char *end = find2(p + 2, e, '*', '/');
	if (!end)
		return NULL;
	if (cs) {
		*cs = p + 2;
		*ce = end;
	}
	return end + 2;
}



static const char *parse_hex(const char *p, const char *e, uint64_t *v);

/* A printed return value at p: 0x-hex (funcgraph-retval-hex, or a value
 * that is no error code), or decimal with a sign (an error code). */
static int parse_retval(const char *p, const char *e, rec *r)
{
	p = skip_sp(p, e);
	uint64_t v;
	const char *q;
	if (starts(p, e, "0x")) {
		q = parse_hex(p, e, &v);
	} else {
		int neg = p < e && *p == '-';
		q = parse_u64(p + neg, e, &v, 19); /* no u64 wraps */
		if (neg)
			v = 0 - v;
	}
	if (!q)
		return 0;
	r->has_retval = 1;
	r->retval = v;
	return 1;
}

/* A return value in a comment's text [cs, ce): `= X` (6.5-6.12: `/\* = X *\/`,
 * `} /\* func = X *\/`) or `ret=X` (6.13+, after a return address or a name). */
static void comment_retval(const char *cs, const char *ce, rec *r)
{
	for (const char *q = cs; q < ce; q++) {
		if (*q != '=')
			continue;
		int ret = q - cs >= 3 && !memcmp(q - 3, "ret", 3) && (q - 3 == cs || q[-4] == ' ');
		int bare = q == cs || q[-1] == ' ';
		if (ret || bare) {
			parse_retval(q + 1, ce, r);
			return;
		}
	}
}

/* Trailing decorations after a body: comments, trace-cmd's (N) depth and
 * (ret=...). In mail mode stop at the first thing that is none of them. */
static const char *parse_trailer(const char *p, const char *e, rec *r, int mail)
{
	for (;;) {
		const char *q = skip_sp(p, e);
		if (q >= e)
			return q;
		if (q[0] == '/' && q + 1 < e && q[1] == '*') {
			const char *cs, *ce;
			const char *n = skip_comment(q, e, &cs, &ce);
			if (!n)
				return mail ? p : e;
			if (r->kind == R_EXIT && !r->name) {
				/* } /\* func *\/, } /\* func [mod] *\/, } /\* func = -22 *\/,
				 * } /\* func ret=0x0 *\/: the first word names the function */
				const char *w = skip_sp(cs, ce), *we = w;
				while (we < ce && name_char_ok(*we) && *we != '*')
					we++;
				if (we > w && *w != '=' && *w != '<' && !starts(w, we, "ret=")) {
					r->name = w;
					r->nlen = (size_t)(we - w);
				}
			}
			if (r->kind == R_EXIT || r->kind == R_LEAF)
				comment_retval(cs, ce, r);
			p = n;
			continue;
		}
		if (q[0] == '(') {
			const char *n = skip_parens(q, e);
			if (!n)
				return mail ? p : e;
			uint64_t d;
			const char *x = parse_u64(q + 1, n - 1, &d, 6);
			if (x == n - 1 && !mail) {
				r->depth = (int64_t)d;
				r->has_depth = 1;
			} else if ((r->kind == R_EXIT || r->kind == R_LEAF) && starts(q + 1, n - 1, "ret=")) {
				parse_retval(q + 5, n - 1, r); /* trace-cmd's (ret=X) */
			}
			p = n;
			continue;
		}
		return mail ? p : e;
	}
}

/* BODY after the `|`: returns the end of what was understood, NULL if it is
 * not a graph body. */
static const char *parse_body(const char *p, const char *e, rec *r, int mail)
{
	const char *q = skip_sp(p, e);
	r->indent = (q - p) >= 2 ? (q - p - 2) / 2 : 0;
	r->has_indent = !mail;
	if (q >= e)
		return NULL;
	if (*q == '}') {
		r->kind = R_EXIT;
		return parse_trailer(q + 1, e, r, mail);
	}
	if (q[0] == '/' && q + 1 < e && q[1] == '*') {
		const char *n = skip_comment(q, e, NULL, NULL);
		r->kind = R_COMMENT;
		return n ? n : e;
	}
	q = take_name(r, q, e);
	if (!q)
		return NULL;
	/* module suffix: func [mod]() */
	const char *m = skip_sp(q, e);
	if (m < e && *m == '[') {
		const char *c = memchr(m, ']', (size_t)(e - m));
		if (!c)
			return NULL;
		q = c + 1;
	}
	q = skip_sp(q, e);
	if (q >= e || *q != '(')
		return NULL;
	q = skip_parens(q, e);
	if (!q)
		return NULL;
	for (;;) {
		q = skip_sp(q, e);
		if (q < e && *q == '/') {
			const char *n = skip_comment(q, e, NULL, NULL);
			if (!n)
				return NULL;
			q = n;
			continue;
		}
		break;
	}
	if (q >= e)
		return NULL;
	if (*q == '{')
		r->kind = R_ENTRY;
	else if (*q == ';')
		r->kind = R_LEAF;
	else
		return NULL;
	return parse_trailer(q + 1, e, r, mail);
}

/* Fields from `p` up to the body: [COMM-PID |] [LATFLAGS |] [DURATION] |  BODY.
 * Also arrows. Returns the end of the record or NULL. */
static const char *parse_graph_fields(const char *p, const char *e, rec *r, int mail, int allow_proc)
{
	for (int field = 0; field < 4; field++) {
		const char *bar = memchr(p, '|', (size_t)(e - p));
		if (!bar)
			return NULL;
		const char *fs = skip_sp(p, bar), *fe = rtrim(fs, bar);
		if (fs == fe) {
			return parse_body(bar + 1, e, r, mail);
		}
		if (parse_duration(fs, fe, &r->dur)) {
			r->has_dur = 1;
			return parse_body(bar + 1, e, r, mail);
		}
		if (fe - fs == 11 && !memcmp(fs, "==========>", 11)) {
			r->kind = R_ARROW_IN;
			return bar + 1;
		}
		if (fe - fs == 11 && !memcmp(fs, "<==========", 11)) {
			r->kind = R_ARROW_OUT;
			return bar + 1;
		}
		if (allow_proc && !r->has_pid && parse_comm_pid(fs, fe, &r->pid)) {
			r->has_pid = 1;
			p = bar + 1;
			continue;
		}
		uint8_t f;
		if (parse_lat_flags(fs, fe, &f)) {
			r->flags |= f;
			r->has_flags = 1;
			p = bar + 1;
			continue;
		}
		return NULL;
	}
	return NULL;
}

/* ` 0)  comm-1  =>  comm-2` after the CPU column. */
static const char *parse_separator(const char *p, const char *e, rec *r, int mail)
{
	const char *arrow = find2(p, e, '=', '>');
	if (!arrow)
		return NULL;
	const char *ls = skip_sp(p, arrow), *le = rtrim(ls, arrow);
	/* the comm is cut to 7 chars, then -pid: one token (or two, with spaces) */
	if (le - ls > 40 || !parse_comm_pid(ls, le, &r->pid))
		return NULL;
	const char *rs = skip_sp(arrow + 2, e), *re = rs;
	if (mail) {
		while (re < e && !is_space(*re))
			re++;
	} else {
		re = rtrim(rs, e);
	}
	if (!parse_comm_pid(rs, re, &r->next_pid))
		return NULL;
	r->kind = R_SEP;
	return re;
}

/* The kernel printer's record from p (abstime or CPU column). */
static const char *parse_kernel(const char *p, const char *e, rec *r, int mail)
{
	const char *q = skip_sp(p, e);
	uint64_t ts;
	const char *t = parse_ts(q, e, &ts);
	if (t) {
		const char *b = skip_sp(t, e);
		if (b < e && *b == '|') {
			r->ts = ts;
			r->has_ts = 1;
			q = skip_sp(b + 1, e);
		}
	}
	uint64_t cpu;
	const char *c = parse_u64(q, e, &cpu, 4);
	if (c && c < e && *c == ')' && cpu < FTF_MAX_CPUS) {
		r->cpu = (int32_t)cpu;
		r->has_cpu = 1;
		q = c + 1;
		if (q < e && !is_space(*q))
			return NULL;
	} else if (mail) {
		return NULL;
	}
	rec saved = *r;
	const char *end = parse_graph_fields(q, e, r, mail, 1);
	if (end)
		return end;
	if (r->has_cpu) {
		*r = saved;
		return parse_separator(q, e, r, mail);
	}
	return NULL;
}

static const char *parse_tracecmd_payload(const char *p, const char *e, rec *r);

/* trace-cmd: COMM-PID [CPU] [FLAGS] TS: EVENT: PAYLOAD, or with -l
 * COMM-PID CPUFLAGS TS: EVENT: PAYLOAD. */
static const char *parse_tracecmd(const char *p, const char *e, rec *r)
{
	/* the timestamp token: digits.digits followed by ':' */
	const char *ts_s = NULL, *ts_e = NULL;
	for (const char *q = p; q < e; q++) {
		if (*q != ':' || q == p || !is_digit(q[-1]))
			continue;
		const char *s = q;
		while (s > p && (is_digit(s[-1]) || s[-1] == '.'))
			s--;
		if (s == p || !is_space(s[-1]))
			continue;
		if (parse_ts(s, q, &r->ts) == q) {
			ts_s = s;
			ts_e = q + 1;
			break;
		}
	}
	if (!ts_s)
		return NULL;
	r->has_ts = 1;
	/* walk back: [FLAGS] [CPU] or CPUFLAGS, then COMM-PID */
	const char *x = rtrim(p, ts_s);
	const char *tok = x;
	while (tok > p && !is_space(tok[-1]))
		tok--;
	if (tok == x)
		return NULL;
	uint8_t f = 0;
	if (*tok != '[' && !is_digit(*tok)) {
		/* flags after [CPU] */
		if (!parse_lat_flags(tok, x, &f))
			return NULL;
		r->flags |= f;
		r->has_flags = 1;
		x = rtrim(p, tok);
		tok = x;
		while (tok > p && !is_space(tok[-1]))
			tok--;
		if (tok == x)
			return NULL;
	}
	uint64_t cpu;
	if (*tok == '[') {
		const char *c = parse_u64(tok + 1, x, &cpu, 4);
		if (!c || c + 1 != x || *c != ']')
			return NULL;
	} else {
		/* -l: "1d.h2." = cpu digits then the flags */
		const char *c = parse_u64(tok, x, &cpu, 4);
		if (!c)
			return NULL;
		if (c < x && !parse_lat_flags(c, x, &f))
			return NULL;
		r->flags |= f;
		r->has_flags = c < x;
	}
	if (cpu >= FTF_MAX_CPUS)
		return NULL;
	r->cpu = (int32_t)cpu;
	r->has_cpu = 1;
	if (!parse_comm_pid(p, tok, &r->pid))
		return NULL;
	r->has_pid = 1;
	r->tracecmd = 1;

	return parse_tracecmd_payload(ts_e, e, r);
}

/* The value after ` key=` in [p, e), or NULL. */
static const char *find_key(const char *p, const char *e, const char *key)
{
	size_t n = strlen(key);
	for (const char *q = p; q + n <= e; q++)
		if ((q == p || is_space(q[-1])) && !memcmp(q, key, n))
			return q + n;
	return NULL;
}

static const char *parse_hex(const char *p, const char *e, uint64_t *v)
{
	if (starts(p, e, "0x"))
		p += 2;
	uint64_t x = 0;
	int n = 0;
	for (; p < e; p++, n++) {
		int d;
		if (is_digit(*p))
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			break;
		if (n >= 16)
			return NULL;
		x = x * 16 + (uint64_t)d;
	}
	if (!n)
		return NULL;
	*v = x;
	return p;
}

/* sched_switch, with trace-cmd's plugin (`a:1 [120] S ==> b:2 [120]`) or the
 * kernel's print fmt (`prev_pid=1 ... ==> ... next_pid=2 ...`). */
static int parse_switch(const char *p, const char *e, rec *r)
{
	const char *arrow = NULL;
	for (const char *q = p; q + 3 <= e; q++)
		if (q[0] == '=' && q[1] == '=' && q[2] == '>') {
			arrow = q;
			break;
		}
	if (!arrow)
		return 0;
	const char *a = find_key(p, arrow, "prev_pid="), *b = find_key(arrow, e, "next_pid=");
	if (a && b)
		return parse_pid(a, e, &r->pid) && parse_pid(b, e, &r->next_pid);
	/* plugin form: the pid before " [prio]" on each side */
	const char *sides[2][2] = { { p, arrow }, { arrow + 3, e } };
	int32_t pids[2];
	for (int i = 0; i < 2; i++) {
		const char *s = sides[i][0], *se = sides[i][1], *br = NULL;
		for (const char *q = s; q + 1 < se; q++)
			if (q[0] == ' ' && q[1] == '[')
				br = q;
		if (!br)
			return 0;
		const char *d = br;
		while (d > s && is_digit(d[-1]))
			d--;
		if (d == br || d == s || d[-1] != ':' || br - d > 10 || parse_pid(d, br, &pids[i]) != br)
			return 0;
	}
	r->pid = pids[0];
	r->next_pid = pids[1];
	return 1;
}

static const char *parse_tracecmd_payload(const char *p, const char *e, rec *r)
{
	const char *ev = skip_sp(p, e), *eve = ev;
	while (eve < e && *eve != ':' && !is_space(*eve))
		eve++;
	if (eve >= e || *eve != ':' || eve == ev)
		return NULL;
	const char *pl = eve + 1;
	size_t evl = (size_t)(eve - ev);
	int is_entry = (evl == 15 && !memcmp(ev, "funcgraph_entry", 15)) ||
		       (evl == 20 && !memcmp(ev, "fgraph_retaddr_entry", 20));
	int is_exit = evl == 14 && !memcmp(ev, "funcgraph_exit", 14);
	if (is_entry || is_exit) {
		const char *ps = skip_sp(pl, e);
		uint64_t v;
		if (starts(ps, e, "func=") || starts(ps, e, "--> ") || starts(ps, e, "<-- ")) {
			/* -R raw fields, or the kernel's print fmt (no plugins) */
			int raw = ps[0] == 'f';
			const char *ne = take_name(r, ps + (raw ? 5 : 4), e);
			if (!ne)
				return NULL;
			const char *d;
			if (raw) {
				d = find_key(ne, e, "depth=");
			} else {
				d = skip_sp(ne, e);
				d = d < e && *d == '(' ? d + 1 : NULL;
			}
			int neg = d && d < e && *d == '-';
			if (!d || !parse_u64(d + neg, e, &v, 10) || neg)
				return NULL;
			r->depth = (int64_t)v;
			r->has_depth = 1;
			if (is_entry) {
				r->kind = R_ENTRY;
				return e;
			}
			const char *ct = find_key(ne, e, raw ? "calltime=" : "(start:");
			const char *rt = find_key(ne, e, raw ? "rettime=" : "end:");
			const char *ov = find_key(ne, e, raw ? "overrun=" : "over:");
			if (ct && !raw)
				ct = skip_sp(ct, e);
			if (rt && !raw)
				rt = skip_sp(rt, e);
			if (!ct || !rt || !parse_hex(ct, e, &r->calltime) || !parse_hex(rt, e, &r->rettime))
				return NULL;
			if (ov && raw && parse_u64(skip_sp(ov, e), e, &v, 20)) {
				r->overrun = v;
				r->has_overrun = 1;
			}
			const char *rv = find_key(ne, e, raw ? "retval=" : "retval:");
			if (rv && parse_hex(skip_sp(rv, e), e, &v)) {
				r->has_retval = 1;
				r->retval = v;
			}
			r->raw_exit = 1;
			r->kind = R_EXIT;
			return e;
		}
		const char *end = parse_graph_fields(pl, e, r, 0, 0);
		if (!end || !(r->kind == R_ENTRY || r->kind == R_LEAF || r->kind == R_EXIT))
			return NULL;
		if ((r->kind == R_EXIT) != is_exit)
			return NULL;
		return end;
	}
	if (evl == 12 && !memcmp(ev, "sched_switch", 12) && parse_switch(pl, e, r)) {
		r->kind = R_SWITCH;
		return e;
	}
	r->kind = R_OTHER;
	return e;
}

/* `CPU:N [LOST M EVENTS]`, `CPU:N [LOST EVENTS]`, `CPU:N [M EVENTS DROPPED]`,
 * `CPU:N [EVENTS DROPPED]`. */
static const char *parse_lost(const char *p, const char *e, rec *r)
{
	uint64_t cpu, n;
	const char *q = parse_u64(p + 4, e, &cpu, 5);
	if (!q || cpu >= FTF_MAX_CPUS)
		return NULL;
	q = skip_sp(q, e);
	if (q >= e || *q != '[')
		return NULL;
	q++;
	r->lost = -1;
	const char *suffix = "EVENTS DROPPED]";
	if (starts(q, e, "LOST ")) {
		q += 5;
		suffix = "EVENTS]";
	}
	const char *x = parse_u64(q, e, &n, 19);
	if (x) {
		r->lost = (int64_t)n;
		q = skip_sp(x, e);
	}
	if (!starts(q, e, suffix))
		return NULL;
	q += strlen(suffix);
	if (r->lost == 0)
		r->lost = -1;
	r->cpu = (int32_t)cpu;
	r->has_cpu = 1;
	r->kind = R_LOST;
	return q;
}

/* Lines that are not records but are understood. */
static int parse_special(const char *p, const char *e, rec *r)
{
	const char *q = skip_sp(p, e);
	if (q == e || *q == '#') {
		r->kind = R_HEADER;
		return 1;
	}
	if (starts(q, e, "CPU:") && parse_lost(q, e, r))
		return 1;
	if (starts(q, e, "----")) {
		const char *x = q;
		while (x < e && *x == '-')
			x++;
		if (skip_sp(x, e) == e) {
			r->kind = R_HEADER;
			return 1;
		}
	}
	if (starts(q, e, "(Overruns:")) {
		uint64_t v;
		if (parse_u64(skip_sp(q + 10, e), e, &v, 20)) {
			r->overrun = v;
			r->kind = R_OVERRUN;
			return 1;
		}
	}
	if (starts(q, e, "cpus=") || starts(q, e, "version =") || starts(q, e, "CPU ")) {
		r->kind = R_HEADER;
		return 1;
	}
	return 0;
}

/* ---- stacks ------------------------------------------------------------ */

static int64_t pid_key(int32_t pid, int32_t cpu)
{
	/* pid 0 is the idle task of every CPU at once */
	return pid == 0 ? ((int64_t)1 << 40) | (uint32_t)cpu : pid;
}

static tstack *stack_new(ftf_text *t, int32_t bpid)
{
	if (t->nall == t->capall) {
		uint32_t cap = t->capall ? t->capall * 2 : 64;
		tstack **a = realloc(t->all, cap * sizeof(*a));
		if (!a)
			return NULL;
		t->all = a;
		t->capall = cap;
	}
	tstack *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->bpid = bpid;
	t->all[t->nall++] = s;
	return s;
}

static int map_put(ftf_text *t, int64_t key, tstack *s)
{
	return ftf_u64map_put(&t->stacks, (uint64_t)key, (uint64_t)(uintptr_t)s);
}

static tstack *map_get(ftf_text *t, int64_t key)
{
	return (tstack *)(uintptr_t)ftf_u64map_get(&t->stacks, (uint64_t)key);
}

static tstack *stack_of_pid(ftf_text *t, int32_t pid, int32_t cpu)
{
	int64_t key = pid_key(pid, cpu);
	tstack *s = map_get(t, key);
	if (s)
		return s;
	s = stack_new(t, pid);
	if (!s || map_put(t, key, s) < 0)
		return NULL;
	return s;
}

static tcpu *cpu_of(ftf_text *t, int32_t cpu)
{
	if ((uint32_t)cpu >= t->ncpus) {
		uint32_t n = t->ncpus ? t->ncpus : 8;
		while (n <= (uint32_t)cpu)
			n *= 2;
		tcpu *c = realloc(t->cpus, n * sizeof(*c));
		if (!c)
			return NULL;
		memset(c + t->ncpus, 0, (n - t->ncpus) * sizeof(*c));
		t->cpus = c;
		t->ncpus = n;
	}
	return &t->cpus[cpu];
}

/* The stack of the task running on a CPU, for lines without a task column. */
static tstack *stack_of_cpu(ftf_text *t, tcpu *c, int32_t cpu)
{
	if (!c->cur)
		c->cur = stack_new(t, -1 - cpu);
	return c->cur;
}

static int shadow_reserve(tstack *s, uint32_t n)
{
	if (n <= s->cap)
		return 0;
	uint32_t cap = s->cap ? s->cap : 32;
	while (cap < n)
		cap *= 2;
	uint32_t *f = realloc(s->funcs, cap * sizeof(*f));
	if (!f)
		return -1;
	s->funcs = f;
	s->cap = cap;
	return 0;
}

/* ---- events ------------------------------------------------------------ */

static void emit(ftf_text *t, const ftf_event *ev)
{
	if (t->sink)
		t->sink(t->sink_ctx, ev, t->b);
	ftf_builder_feed(t->b, ev);
}

static uint32_t intern(ftf_text *t, const char *name, size_t len)
{
	uint32_t id = ftf_funcs_intern(&t->b->funcs, name, len);
	if (id == FTF_NONE)
		t->b->oom = 1;
	return id;
}

static void oom(ftf_text *t)
{
	t->b->oom = 1;
}

/* Room for n more bytes in the carry buffer (a line cut by a chunk end). */
static int carry_reserve(ftf_text *t, size_t n)
{
	if (t->ncarry + n <= t->capcarry)
		return 0;
	size_t cap = t->capcarry ? t->capcarry : 4096;
	while (cap < t->ncarry + n)
		cap *= 2;
	char *c = realloc(t->carry, cap);
	if (!c) {
		oom(t);
		return -1;
	}
	t->carry = c;
	t->capcarry = cap;
	return 0;
}

/* The CPU a record was printed on, with its last timestamp and whether it
 * printed a record yet noted; NULL when out of memory. */
static tcpu *cpu_of_record(ftf_text *t, const rec *r, int32_t cpu)
{
	tcpu *c = cpu_of(t, cpu);
	if (!c)
		return NULL;
	if (r->has_ts)
		c->last_ts = r->ts;
	if (!c->seen && r->kind != R_HEADER) {
		c->seen = 1;
		t->st.cpus_seen++;
	}
	return c;
}

/* A task-switch separator: the task running on the CPU changes, so do the
 * stacks. The first separator of a CPU names the task that ran there so far. */
static void handle_separator(ftf_text *t, tcpu *c, const rec *r, int32_t cpu)
{
	t->st.separators++;
	tstack *cur = stack_of_cpu(t, c, cpu);
	if (!cur) {
		oom(t);
		return;
	}
	int64_t key = pid_key(r->pid, cpu);
	tstack *known = map_get(t, key);
	if (!c->named) {
		/* cur is the CPU's unknown first task: now it has a name */
		c->named = 1;
		/* its calls so far, open or done, get the real pid; a task
		 * seen elsewhere already (it migrated) can take them over
		 * only when none is open here */
		if ((!known || (known != cur && cur->n == 0)) &&
		    ftf_builder_rename_task(t->b, cur->bpid, r->pid, cpu) == 0) {
			if (t->sink) {
				ftf_event rn = { .kind = FTF_TEXT_EV_RENAME, .cpu = cpu,
						 .pid = cur->bpid, .next_pid = r->pid };
				t->sink(t->sink_ctx, &rn, t->b);
			}
			cur->bpid = r->pid;
			if (!known && map_put(t, key, cur) < 0)
				oom(t);
		} else if (known != cur) {
			/* the task was seen elsewhere too, with calls open here */
			t->st.separator_conflicts++;
		}
	} else if (known != cur && cur->n > 0) {
		t->st.separator_conflicts++;
	}
	tstack *next = stack_of_pid(t, r->next_pid, cpu);
	if (!next) {
		oom(t);
		return;
	}
	c->cur = next;
	c->irq = 0;
}

/* A record that is no call (header, lost events, irq arrow, separator,
 * overrun, sched_switch, comment, other event): counted, fed when the
 * builder needs it. Returns 0 for a call record, left to the caller. */
static int handle_non_call(ftf_text *t, tcpu *c, const rec *r, ftf_event *ev)
{
	switch (r->kind) {
	case R_HEADER:
		t->st.records--;
		t->st.header_lines++;
		return 1;
	case R_LOST:
		t->st.lost_lines++;
		ev->kind = FTF_EV_LOST;
		ev->lost = r->lost;
		ev->ts = c->last_ts;
		emit(t, ev);
		return 1;
	case R_ARROW_IN:
		t->st.irq_arrows++;
		if (c->irq < 64)
			c->irq++;
		return 1;
	case R_ARROW_OUT:
		t->st.irq_arrows++;
		if (c->irq > 0)
			c->irq--;
		return 1;
	case R_SEP:
		handle_separator(t, c, r, ev->cpu);
		return 1;
	case R_OVERRUN:
		t->st.overrun_lines++;
		if (t->last_stack && r->overrun > t->last_stack->overrun)
			t->last_stack->overrun = r->overrun;
		return 1;
	case R_SWITCH:
		ev->kind = FTF_EV_SWITCH;
		ev->pid = r->pid;
		ev->next_pid = r->next_pid;
		emit(t, ev);
		return 1;
	case R_COMMENT:
	case R_OTHER:
		t->st.other_lines++;
		ev->kind = 0;
		ev->pid = r->has_pid ? r->pid : 0;
		emit(t, ev);
		return 1;
	default:
		return 0;
	}
}

/* The stack a call record belongs to: its task's when the line names one
 * (a funcgraph-proc line also says who runs on the CPU now), else the
 * CPU's current task's; NULL when out of memory. */
static tstack *stack_of_call(ftf_text *t, tcpu *c, const rec *r, int32_t cpu)
{
	if (!r->has_pid) {
		t->st.cpu_lines++;
		return stack_of_cpu(t, c, cpu);
	}
	tstack *s = stack_of_pid(t, r->pid, cpu);
	if (r->tracecmd) {
		t->st.tracecmd_lines++;
	} else {
		t->st.proc_lines++;
		c->cur = s;
		c->named = 1;
	}
	return s;
}

/* A call record's depth: printed, or the indentation, else what the stack
 * says (an exit closes its top). */
static int64_t call_depth(const rec *r, const tstack *s)
{
	if (r->has_depth)
		return r->depth;
	if (r->has_indent)
		return r->indent;
	if (r->kind == R_EXIT)
		return s->n ? (int64_t)s->n - 1 : 0;
	return s->n;
}

static void handle_entry(ftf_text *t, const rec *r, tstack *s, ftf_event *ev, int64_t depth)
{
	uint32_t d = (uint32_t)depth;
	uint32_t func = intern(t, r->name, r->nlen);
	if (func == FTF_NONE)
		return;
	if (shadow_reserve(s, d + 1) < 0) {
		oom(t);
		return;
	}
	for (uint32_t i = s->n; i < d; i++)
		s->funcs[i] = FTF_NONE;
	s->funcs[d] = func;
	s->n = d + 1;
	ev->kind = FTF_EV_ENTRY;
	ev->func = func;
	ev->depth = depth;
	t->st.entry_lines++;
	emit(t, ev);
}

/* A leaf: entry and exit on one line, the duration printed. */
static void handle_leaf(ftf_text *t, const rec *r, tstack *s, ftf_event *ev, int64_t depth)
{
	uint32_t d = (uint32_t)depth;
	uint32_t func = intern(t, r->name, r->nlen);
	if (func == FTF_NONE)
		return;
	if (s->n > d)
		s->n = d;
	t->b->text_order = 1;
	ev->kind = FTF_EV_LEAF;
	ev->func = func;
	ev->depth = depth;
	ev->calltime = ev->ts;
	if (__builtin_add_overflow(ev->ts, r->dur, &ev->rettime))
		ev->rettime = UINT64_MAX; /* cut and counted by the builder */
	ev->has_retval = (uint8_t)r->has_retval;
	ev->retval = r->retval;
	t->st.leaf_lines++;
	emit(t, ev);
}

/* The function an exit closes: the tail's name, else the open entry's,
 * else "(unknown)" (counted); FTF_NONE when it cannot be interned. */
static uint32_t exit_func(ftf_text *t, const rec *r, const tstack *s, uint32_t d)
{
	uint32_t func = FTF_NONE;
	uint32_t open = d < s->n ? s->funcs[d] : FTF_NONE;
	if (r->name) {
		func = intern(t, r->name, r->nlen);
		if (func == FTF_NONE)
			return FTF_NONE;
		if (open != FTF_NONE && open != func)
			t->st.tail_mismatch++;
	} else {
		func = open;
	}
	if (func == FTF_NONE) {
		if (t->unknown_func == FTF_NONE)
			t->unknown_func = intern(t, "(unknown)", 9);
		func = t->unknown_func;
		if (func == FTF_NONE)
			return FTF_NONE;
		t->st.unknown_exits++;
	}
	return func;
}

static void handle_exit(ftf_text *t, const rec *r, tstack *s, ftf_event *ev, int64_t depth)
{
	uint32_t d = (uint32_t)depth;
	uint32_t func = exit_func(t, r, s, d);
	if (func == FTF_NONE)
		return;
	if (s->n > d)
		s->n = d;
	ev->kind = FTF_EV_EXIT;
	ev->func = func;
	ev->depth = depth;
	ev->overrun = r->has_overrun ? r->overrun : s->overrun;
	/* trace-cmd -R prints the real calltime and rettime: then the builder
	 * may place interrupts by them, as for a trace.dat */
	t->b->text_order = !r->raw_exit;
	if (r->raw_exit) {
		ev->calltime = r->calltime;
		ev->rettime = r->rettime;
	} else {
		if (!r->has_dur)
			t->st.no_duration++;
		ev->rettime = ev->ts >= r->dur ? ev->ts : r->dur;
		ev->calltime = ev->rettime - r->dur;
	}
	ev->has_retval = (uint8_t)r->has_retval;
	ev->retval = r->retval;
	t->st.exit_lines++;
	emit(t, ev);
}

/* A call record (entry, leaf, exit): onto its task's stack, counted, fed
 * to the builder. */
static void handle_call(ftf_text *t, tcpu *c, const rec *r, ftf_event *ev)
{
	tstack *s = stack_of_call(t, c, r, ev->cpu);
	if (!s) {
		oom(t);
		return;
	}
	t->last_stack = s;
	if (r->has_ts)
		t->st.ts_lines++;
	ev->pid = s->bpid;
	ev->flags = r->flags;
	if (r->has_flags)
		t->st.flag_lines++;
	if (r->flags & FTF_FLAG_IRQ_MASK)
		t->st.latency_irq_lines++;
	if (c->irq > 0)
		ev->flags |= FTF_FLAG_HARDIRQ;
	int64_t depth = call_depth(r, s);
	if (depth >= TXT_MAX_DEPTH) {
		t->st.records--;
		t->st.too_deep++;
		return;
	}
	if (r->kind == R_LEAF && !r->has_dur)
		t->st.no_duration++;
	if (r->kind == R_ENTRY)
		handle_entry(t, r, s, ev, depth);
	else if (r->kind == R_LEAF)
		handle_leaf(t, r, s, ev, depth);
	else
		handle_exit(t, r, s, ev, depth);
}

static void handle(ftf_text *t, rec *r)
{
	ftf_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.cpu = r->has_cpu ? r->cpu : 0;
	ev.ts = r->has_ts ? r->ts : 0;
	tcpu *c = cpu_of_record(t, r, ev.cpu);
	if (!c) {
		oom(t);
		return;
	}
	t->st.records++;
	if (!handle_non_call(t, c, r, &ev))
		handle_call(t, c, r, &ev);
}

/* ---- lines ------------------------------------------------------------- */

static void note_unparsed(ftf_text *t, const char *p, const char *e)
{
	t->st.unparsed++;
	if (!t->st.first_unparsed_line) {
		t->st.first_unparsed_line = t->st.lines;
		size_t n = (size_t)(e - p);
		if (n > sizeof(t->st.first_unparsed) - 1)
			n = sizeof(t->st.first_unparsed) - 1;
		for (size_t i = 0; i < n; i++)
			t->st.first_unparsed[i] = (unsigned char)p[i] < 0x20 ? ' ' : p[i];
		t->st.first_unparsed[n] = '\0';
	}
}

/* One line in line mode: returns 1 when understood (and handled). */
static int parse_line(ftf_text *t, const char *p, const char *e)
{
	rec r;
	memset(&r, 0, sizeof(r));
	if (parse_special(p, e, &r)) {
		handle(t, &r);
		return 1;
	}
	for (int attempt = 0; attempt < 2; attempt++) {
		int tc = (t->last_dialect == 2) ^ attempt;
		memset(&r, 0, sizeof(r));
		const char *end = tc ? parse_tracecmd(p, e, &r) : parse_kernel(p, e, &r, 0);
		if (end) {
			t->last_dialect = tc ? 2 : 1;
			handle(t, &r);
			return 1;
		}
	}
	return 0;
}

/* A line a mail client wrapped continues the one before it; a line that
 * begins with a record's own prefix never does: the CPU column `N)` or an
 * abstime, and in line mode (where the CPU column may be off) also a
 * duration, an overhead mark or the `|` of the graph. In mail mode every
 * record has its CPU column, and a duration begins a line wherever the cut
 * fell after `N)`. */
static int starts_record(const char *p, const char *e, int mail)
{
	const char *q = skip_sp(p, e), *d = q;
	if (q == e)
		return 0;
	if (*q == '|')
		return !mail;
	if ((cclass[(unsigned char)*q] & C_MARK) && q + 1 < e && is_space(q[1]))
		return !mail;
	while (d < e && is_digit(*d))
		d++;
	if (d == q)
		return 0;
	if (d < e && *d == ')')
		return d - q <= 4 && (d + 1 == e || is_space(d[1]));
	if (d < e && *d == '.') {
		uint64_t ts;
		const char *x = parse_ts(q, e, &ts);
		if (!x)
			return 0;
		x = skip_sp(x, e);
		/* "SEC.USEC |" (abstime) or "1.234 us" (a duration) */
		return x < e && (*x == '|' || (!mail && (starts(x, e, "us") || starts(x, e, "ns") ||
							 starts(x, e, "ms") || *x == 's')));
	}
	return 0;
}

static int join_reserve(ftf_text *t, size_t n)
{
	if (n <= t->capjoin)
		return 0;
	size_t cap = t->capjoin ? t->capjoin : 4096;
	while (cap < n)
		cap *= 2;
	char *j = realloc(t->join, cap);
	if (!j) {
		oom(t);
		return -1;
	}
	t->join = j;
	t->capjoin = cap;
	return 0;
}

/* Line mode: the held line not understood is counted as such. */
static void pending_unparsed(ftf_text *t)
{
	if (!t->njoin)
		return;
	uint64_t lines = t->st.lines;
	t->st.lines = t->join_lineno; /* note_unparsed records the line number */
	note_unparsed(t, t->join, t->join + t->njoin);
	t->st.lines = lines;
	t->njoin = 0;
}

static void line_lines(ftf_text *t, const char *p, const char *e)
{
	if (parse_line(t, p, e)) {
		pending_unparsed(t);
		return;
	}
	if (t->njoin && !starts_record(p, e, 0)) {
		/* the line before was not understood either: a mail client may
		 * have wrapped it here; try the two as one */
		size_t n = t->njoin + 1 + (size_t)(e - p);
		if (join_reserve(t, n) < 0)
			return;
		t->join[t->njoin] = ' ';
		memcpy(t->join + t->njoin + 1, p, (size_t)(e - p));
		if (parse_line(t, t->join, t->join + n)) {
			t->st.rejoined++;
			t->njoin = 0;
			return;
		}
	}
	pending_unparsed(t);
	if ((size_t)(e - p) > TXT_PEND_MAX) {
		note_unparsed(t, p, e);
		return;
	}
	/* hold it: the next line may continue it */
	if (join_reserve(t, (size_t)(e - p) + 1) < 0)
		return;
	memcpy(t->join, p, (size_t)(e - p));
	t->njoin = (size_t)(e - p);
	t->join_lineno = t->st.lines;
}

/* Mail: kernel records anywhere in the line, prose in between. Returns how
 * many were found. */
static uint64_t line_mail(ftf_text *t, const char *p, const char *e)
{
	rec r;
	const char *q = p;
	uint64_t found = 0;
	while (q < e) {
		const char *par = memchr(q, ')', (size_t)(e - q));
		if (!par)
			break;
		const char *d = par;
		while (d > q && is_digit(d[-1]))
			d--;
		if (d == par || par - d > 4 || (d > p && !is_space(d[-1]))) {
			q = par + 1;
			continue;
		}
		/* an abstime column before the CPU: "SEC.USEC |  CPU)" */
		const char *start = d, *b = d;
		while (b > p && is_space(b[-1]))
			b--;
		if (b > p && b[-1] == '|') {
			const char *x = b - 1;
			while (x > p && is_space(x[-1]))
				x--;
			const char *s = x;
			while (s > p && (is_digit(s[-1]) || s[-1] == '.'))
				s--;
			uint64_t ts;
			if (s < x && (s == p || is_space(s[-1])) && parse_ts(s, x, &ts) == x)
				start = s;
		}
		memset(&r, 0, sizeof(r));
		/* a record is short: bound the work spent on each candidate, so a
		 * long line of near-records stays linear */
		const char *lim = (size_t)(e - start) > TXT_MAIL_RECORD ? start + TXT_MAIL_RECORD : e;
		const char *end = parse_kernel(start, lim, &r, 1);
		if (!end) {
			/* `N)` with the graph's `|` close after it: a record that
			 * a cut inside a word or number left beyond repair */
			size_t near = (size_t)(e - par - 1) < 32 ? (size_t)(e - par - 1) : 32;
			if (par + 1 < e && is_space(par[1]) && memchr(par + 1, '|', near))
				t->st.broken_records++;
			q = par + 1;
			continue;
		}
		if (start > q)
			t->st.prose_bytes += (uint64_t)(start - q);
		found++;
		handle(t, &r);
		q = end;
	}
	if (q < e)
		t->st.prose_bytes += (uint64_t)(e - q);
	return found;
}

/* Mail: the line rebuilt from wrapped lines is read. */
static void mail_flush(ftf_text *t)
{
	if (!t->join_lines)
		return;
	if (!line_mail(t, t->join, t->join + t->njoin)) {
		if (t->join_header)
			t->st.header_lines += t->join_lines;
		else
			t->st.prose_lines += t->join_lines;
	}
	t->njoin = 0;
	t->join_lines = 0;
}

/* Mail: a mail client wraps long lines at spaces (and re-flows short ones,
 * as `fmt` does), cutting records apart. A line that begins no record of
 * its own continues the line before it: the two are read as one, joined by
 * a space (in mail the depth is the structural one, so the indentation lost
 * at the cut does not matter). Blank lines end a paragraph. */
static void mail_physical_line(ftf_text *t, const char *p, const char *e)
{
	rec r;
	memset(&r, 0, sizeof(r));
	const char *q = skip_sp(p, e);
	if (q == e) {
		mail_flush(t);
		t->st.header_lines++;
		return;
	}
	int special = parse_special(p, e, &r);
	if (special && r.kind != R_HEADER) {
		mail_flush(t);
		handle(t, &r);
		return;
	}
	size_t n = (size_t)(e - p);
	if (t->join_lines && !special && !starts_record(p, e, 1) && t->njoin + 1 + n <= TXT_JOIN_MAX) {
		if (join_reserve(t, t->njoin + 1 + n) < 0)
			return;
		t->join[t->njoin] = ' ';
		memcpy(t->join + t->njoin + 1, p, n);
		t->njoin += 1 + n;
		t->join_lines++;
		t->st.rejoined++;
		return;
	}
	mail_flush(t);
	if (join_reserve(t, n) < 0)
		return;
	memcpy(t->join, p, n);
	t->njoin = n;
	t->join_lines = 1;
	t->join_header = special;
}

static void do_line(ftf_text *t, const char *p, const char *e)
{
	t->st.lines++;
	if (e > p && e[-1] == '\r')
		e--;
	if (t->mode == FTF_TEXT_MAIL)
		mail_physical_line(t, p, e);
	else
		line_lines(t, p, e);
}

/* ---- the API ----------------------------------------------------------- */

ftf_text *ftf_text_new(ftf_builder *b, int mode)
{
	cclass_init();
	ftf_text *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->b = b;
	t->mode = mode;
	t->unknown_func = FTF_NONE;
	/* Text has no calltime: keep the builder from moving interrupts
	 * across push/pop windows by calltime; the printed order is the truth. */
	b->text_order = 1;
	return t;
}

void ftf_text_set_sink(ftf_text *t, ftf_text_sink sink, void *ctx)
{
	t->sink = sink;
	t->sink_ctx = ctx;
}

int ftf_text_feed(ftf_text *t, const char *buf, size_t len)
{
	const char *p = buf, *e = buf + len;
	t->st.bytes += len;
	while (p < e) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		if (!nl) {
			/* keep the partial line for the next chunk */
			size_t n = (size_t)(e - p);
			if (t->discarding)
				return 0;
			if (t->ncarry + n > TXT_MAX_LINE) {
				t->st.too_long++;
				t->st.lines++;
				t->ncarry = 0;
				t->discarding = 1;
				return 0;
			}
			if (carry_reserve(t, n) < 0)
				return -1;
			memcpy(t->carry + t->ncarry, p, n);
			t->ncarry += n;
			return t->b->oom ? -1 : 0;
		}
		if (t->discarding) {
			t->discarding = 0;
		} else if (t->ncarry) {
			size_t n = (size_t)(nl - p);
			if (t->ncarry + n > TXT_MAX_LINE) {
				t->st.too_long++;
				t->st.lines++;
			} else {
				if (carry_reserve(t, n) < 0)
					return -1;
				memcpy(t->carry + t->ncarry, p, n);
				do_line(t, t->carry, t->carry + t->ncarry + n);
			}
			t->ncarry = 0;
		} else {
			do_line(t, p, nl);
		}
		p = nl + 1;
	}
	return t->b->oom ? -1 : 0;
}

int ftf_text_finish(ftf_text *t)
{
	if (t->ncarry && !t->discarding)
		do_line(t, t->carry, t->carry + t->ncarry);
	t->ncarry = 0;
	t->discarding = 0;
	if (t->mode == FTF_TEXT_MAIL)
		mail_flush(t);
	else
		pending_unparsed(t);
	return t->b->oom ? -1 : 0;
}

const ftf_text_stats *ftf_text_get_stats(const ftf_text *t)
{
	return &t->st;
}

void ftf_text_free(ftf_text *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nall; i++) {
		free(t->all[i]->funcs);
		free(t->all[i]);
	}
	free(t->all);
	ftf_u64map_free(&t->stacks);
	free(t->cpus);
	free(t->carry);
	free(t->join);
	free(t);
}
