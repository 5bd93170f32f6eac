/* trace.dat records -> ftf_events, the same for both readers
 * (record_decode.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record_decode.h"

const ftf_rec_event_name ftf_rec_events[FTF_REC_NEVENTS] = {
	[FTF_REC_ENTRY] = { "ftrace", "funcgraph_entry" },
	[FTF_REC_RETADDR_ENTRY] = { "ftrace", "fgraph_retaddr_entry" },
	[FTF_REC_EXIT] = { "ftrace", "funcgraph_exit" },
	[FTF_REC_SWITCH] = { "sched", "sched_switch" },
};

const char *const ftf_rec_fields[FTF_FLD_N] = {
	[FTF_FLD_FUNC] = "func",
	[FTF_FLD_DEPTH] = "depth",
	[FTF_FLD_OVERRUN] = "overrun",
	[FTF_FLD_CALLTIME] = "calltime",
	[FTF_FLD_RETTIME] = "rettime",
	[FTF_FLD_RETVAL] = "retval",
	[FTF_FLD_ARGS] = "args",
	[FTF_FLD_PREV_PID] = "prev_pid",
	[FTF_FLD_NEXT_PID] = "next_pid",
	[FTF_FLD_COMMON_PID] = "common_pid",
	[FTF_FLD_COMMON_FLAGS] = "common_flags",
};

int ftf_rec_field_index(const char *name)
{
	for (int i = 0; i < FTF_FLD_N; i++)
		if (strcmp(ftf_rec_fields[i], name) == 0)
			return i;
	return -1;
}

static void bind_std(ftf_decoder *d);

void ftf_decoder_bind(ftf_decoder *d, int swap, const int ids[FTF_REC_NEVENTS],
		      ftf_find_field_fn find, void *ctx)
{
	memset(d, 0, sizeof(*d));
	d->swap = swap;
	for (int e = 0; e < FTF_REC_NEVENTS; e++) {
		d->ev[e].id = ids[e];
		if (ids[e] < 0)
			continue;
		for (int k = 0; k < FTF_FLD_N; k++)
			find(ctx, e, k, ftf_rec_fields[k], &d->ev[e].field[k]);
	}
	bind_std(d);
}

/* A field of the common layout (ftf_decoder.std_need): its end, 0 when it
 * is absent or of another size. */
static uint32_t std_end(const ftf_field *fl, uint32_t size)
{
	return fl->present && fl->size == size ? fl->offset + size : 0;
}

static void bind_std(ftf_decoder *d)
{
	const ftf_rec_format *x = &d->ev[FTF_REC_EXIT];
	uint32_t common[] = { std_end(&x->field[FTF_FLD_COMMON_FLAGS], 1), std_end(&x->field[FTF_FLD_COMMON_PID], 4) };
	for (int e = 0; e < FTF_REC_NEVENTS; e++) {
		const ftf_rec_format *f = &d->ev[e];
		d->std_need[e] = 0;
		if (d->swap || f->id < 0 || e == FTF_REC_SWITCH)
			continue;
		uint32_t ends[7] = { common[0], common[1], std_end(&f->field[FTF_FLD_FUNC], 8),
				     std_end(&f->field[FTF_FLD_DEPTH], 4), 1, 1, 1 };
		if (e == FTF_REC_EXIT) {
			ends[4] = std_end(&f->field[FTF_FLD_OVERRUN], 4);
			ends[5] = std_end(&f->field[FTF_FLD_CALLTIME], 8);
			ends[6] = std_end(&f->field[FTF_FLD_RETTIME], 8);
		}
		uint32_t need = 8; /* (a record under 8 bytes has no type: ftf_decode_record) */
		for (int k = 0; k < 7; k++) {
			if (!ends[k]) {
				need = 0;
				break;
			}
			if (ends[k] > need)
				need = ends[k];
		}
		d->std_need[e] = need;
	}
}

int ftf_decoder_check(const ftf_decoder *d, char *err, size_t errlen)
{
	const ftf_rec_format *x = &d->ev[FTF_REC_EXIT];
	if (x->id < 0) {
		snprintf(err, errlen, "no function_graph events (funcgraph_exit) in this trace.dat: "
			 "record with 'trace-cmd record -p function_graph'");
		return -1;
	}
	if (!x->field[FTF_FLD_FUNC].present || !x->field[FTF_FLD_CALLTIME].present ||
	    !x->field[FTF_FLD_RETTIME].present || !x->field[FTF_FLD_DEPTH].present) {
		snprintf(err, errlen, "funcgraph_exit lacks func/depth/calltime/rettime fields: "
			 "unsupported event layout");
		return -1;
	}
	return 0;
}

void ftf_decoder_meta(const ftf_decoder *d, ftf_dat_meta *meta)
{
	meta->has_entry_event = d->ev[FTF_REC_ENTRY].id >= 0;
	meta->has_retaddr_event = d->ev[FTF_REC_RETADDR_ENTRY].id >= 0;
	meta->has_exit_event = d->ev[FTF_REC_EXIT].id >= 0;
	meta->has_switch_event = d->ev[FTF_REC_SWITCH].id >= 0;
	meta->has_retval = d->ev[FTF_REC_EXIT].field[FTF_FLD_RETVAL].present;
	meta->has_args = d->ev[FTF_REC_ENTRY].field[FTF_FLD_ARGS].present;
}

/* A field's value; 0 when absent or past the record's end. */
static inline uint64_t field(const ftf_decoder *d, const ftf_field *fl, const uint8_t *data,
			     uint32_t size)
{
	if (!fl->present || (uint64_t)fl->offset + fl->size > size)
		return 0;
	const uint8_t *p = data + fl->offset;
	switch (fl->size) {
	case 1: return p[0];
	case 2: {
		uint16_t v;
		memcpy(&v, p, 2);
		return d->swap ? __builtin_bswap16(v) : v;
	}
	case 4: {
		uint32_t v;
		memcpy(&v, p, 4);
		return d->swap ? __builtin_bswap32(v) : v;
	}
	case 8: {
		uint64_t v;
		memcpy(&v, p, 8);
		return d->swap ? __builtin_bswap64(v) : v;
	}
	default: return 0;
	}
}

static inline int64_t field_signed(const ftf_decoder *d, const ftf_field *fl, const uint8_t *data,
				   uint32_t size)
{
	uint64_t v = field(d, fl, data, size);
	switch (fl->size) {
	case 1: return (int8_t)v;
	case 2: return (int16_t)v;
	case 4: return (int32_t)v;
	default: return (int64_t)v;
	}
}

/* depth: 6.15-rc declared an 8-byte depth over a 4-byte value */
static int64_t depth_of(const ftf_decoder *d, const ftf_field *fl, const uint8_t *data, uint32_t size)
{
	int64_t v = field_signed(d, fl, data, size);
	return fl->size == 8 ? (int32_t)v : v;
}

static inline uint32_t ld32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* An entry's argument values (funcgraph-args), when its format has them. */
static void entry_args(const ftf_decoder *d, const ftf_rec_format *e, const uint8_t *data, uint32_t size,
		       ftf_batch *out, const uint64_t *addr, ftf_event *ev)
{
	const ftf_field *args = &e->field[FTF_FLD_ARGS];
	if (!args->present)
		return;
	/* args[]: longs (func's width) to the record's end, as many as recorded */
	ftf_field one = { .present = 1, .offset = args->offset, .size = e->field[FTF_FLD_FUNC].size };
	uint64_t *v = out->args[addr - out->addr];
	while (ev->nargs < FTF_MAX_ARGS && one.size && (uint64_t)one.offset + one.size <= size) {
		v[ev->nargs++] = field(d, &one, data, size);
		one.offset += one.size;
	}
	ev->args = v;
}

/* An event with every field 0 but these: field by field, as a memset of the
 * 96-byte event compiled to `rep stos`, whose start-up cost a third of the
 * decoding's samples sat behind. */
static inline void event_start(ftf_event *ev, uint8_t kind, int32_t cpu, uint64_t ts)
{
	ev->kind = kind;
	ev->flags = 0;
	ev->has_retval = 0;
	ev->cpu = cpu;
	ev->pid = 0;
	ev->next_pid = 0;
	ev->func = 0;
	ev->depth = 0;
	ev->ts = ts;
	ev->calltime = 0;
	ev->rettime = 0;
	ev->overrun = 0;
	ev->lost = 0;
	ev->retval = 0;
	ev->args = NULL;
	ev->nargs = 0;
	ev->subbuf_start = 0;
}

int ftf_decode_record(const ftf_decoder *d, ftf_dat_meta *meta, int32_t cpu, uint64_t ts,
		      int64_t missed, const uint8_t *data, uint32_t size, ftf_batch *out)
{
	ftf_event *ev = &out->ev[out->n];
	if (missed) {
		event_start(ev, FTF_EV_LOST, cpu, ts);
		ev->lost = missed > 0 ? missed : -1;
		ev = &out->ev[++out->n];
	}
	uint64_t *addr = &out->addr[out->n++];
	event_start(ev, 0, cpu, ts);
	if (size < 8)
		return 0; /* counted as an other event */
	int type = (int)field(d, &(ftf_field){ .present = 1, .offset = 0, .size = 2 }, data, size);
	const ftf_rec_format *x = &d->ev[FTF_REC_EXIT];
	if (cpu >= 0 && (size_t)cpu < sizeof(meta->per_cpu_events) / sizeof(meta->per_cpu_events[0]))
		meta->per_cpu_events[cpu]++;
	const ftf_rec_format *en = &d->ev[FTF_REC_ENTRY], *ra = &d->ev[FTF_REC_RETADDR_ENTRY];
	const ftf_rec_format *sw = &d->ev[FTF_REC_SWITCH];
	/* the common layout (std_need): the same values as below, without a
	 * check per field */
	int k = type == x->id ? FTF_REC_EXIT : type == en->id ? FTF_REC_ENTRY
		: type == ra->id ? FTF_REC_RETADDR_ENTRY : -1;
	if (k >= 0 && d->std_need[k] && size >= d->std_need[k]) {
		const ftf_rec_format *e = &d->ev[k];
		ev->flags = data[x->field[FTF_FLD_COMMON_FLAGS].offset];
		ev->pid = (int32_t)ld32(data + x->field[FTF_FLD_COMMON_PID].offset);
		*addr = ld64(data + e->field[FTF_FLD_FUNC].offset);
		ev->depth = (int32_t)ld32(data + e->field[FTF_FLD_DEPTH].offset);
		if (k == FTF_REC_EXIT) {
			ev->kind = FTF_EV_EXIT;
			ev->overrun = ld32(data + x->field[FTF_FLD_OVERRUN].offset);
			ev->calltime = ld64(data + x->field[FTF_FLD_CALLTIME].offset);
			ev->rettime = ld64(data + x->field[FTF_FLD_RETTIME].offset);
			if (x->field[FTF_FLD_RETVAL].present) {
				ev->has_retval = 1;
				ev->retval = field(d, &x->field[FTF_FLD_RETVAL], data, size);
			}
		} else {
			ev->kind = FTF_EV_ENTRY;
			entry_args(d, e, data, size, out, addr, ev);
		}
		return 1;
	}
	ev->flags = (uint8_t)field(d, &x->field[FTF_FLD_COMMON_FLAGS], data, size);
	ev->pid = (int32_t)field(d, &x->field[FTF_FLD_COMMON_PID], data, size);
	if (type == x->id) {
		ev->kind = FTF_EV_EXIT;
		*addr = field(d, &x->field[FTF_FLD_FUNC], data, size);
		ev->depth = depth_of(d, &x->field[FTF_FLD_DEPTH], data, size);
		ev->overrun = field(d, &x->field[FTF_FLD_OVERRUN], data, size);
		ev->calltime = field(d, &x->field[FTF_FLD_CALLTIME], data, size);
		ev->rettime = field(d, &x->field[FTF_FLD_RETTIME], data, size);
		if (x->field[FTF_FLD_RETVAL].present) {
			/* as recorded: ftf_retval_is_error reads an int's in the low 32 bits */
			ev->has_retval = 1;
			ev->retval = field(d, &x->field[FTF_FLD_RETVAL], data, size);
		}
	} else if (type == en->id || type == ra->id) {
		const ftf_rec_format *e = type == en->id ? en : ra;
		ev->kind = FTF_EV_ENTRY;
		*addr = field(d, &e->field[FTF_FLD_FUNC], data, size);
		ev->depth = depth_of(d, &e->field[FTF_FLD_DEPTH], data, size);
		entry_args(d, e, data, size, out, addr, ev);
	} else if (type == sw->id) {
		ev->kind = FTF_EV_SWITCH;
		ev->pid = (int32_t)field(d, &sw->field[FTF_FLD_PREV_PID], data, size);
		ev->next_pid = (int32_t)field(d, &sw->field[FTF_FLD_NEXT_PID], data, size);
	}
	return 1;
}

void ftf_batch_sink_init(ftf_batch_sink *s, ftf_builder *b, ftf_name_fn name_of, void *name_ctx)
{
	memset(s, 0, sizeof(*s));
	s->b = b;
	s->name_of = name_of;
	s->name_ctx = name_ctx;
	const char *decode_only = getenv("FTFLAME_BENCH_DECODE_ONLY");
	s->decode_only = decode_only && strcmp(decode_only, "1") == 0;
}

/* Function names are looked up once per address: a lookup per record
 * costs more than the decoding. */
static uint32_t func_id(ftf_batch_sink *s, uint64_t addr)
{
	uint64_t known = ftf_u64map_get(&s->ids, addr);
	if (known)
		return (uint32_t)(known - 1);
	const char *name = s->name_of(s->name_ctx, addr);
	char buf[32];
	if (!name) {
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)addr);
		name = buf;
	}
	uint32_t id = ftf_funcs_intern(&s->b->funcs, name, strlen(name));
	if (id == FTF_NONE) {
		s->b->oom = 1;
		id = 0;
	}
	if (ftf_u64map_put(&s->ids, addr, (uint64_t)id + 1) < 0)
		s->b->oom = 1;
	return id;
}

int ftf_batch_build(ftf_batch_sink *s, ftf_batch *bt)
{
	for (uint32_t i = 0; i < bt->n && !s->decode_only; i++) {
		ftf_event *ev = &bt->ev[i];
		if (ev->kind == FTF_EV_ENTRY || ev->kind == FTF_EV_EXIT) {
			uint64_t addr = bt->addr[i];
			ftf_idcache *c = &s->idcache[((uint32_t)ev->cpu % FTF_IDCACHE_CPUS) * FTF_IDCACHE_DEPTHS +
						     ((uint64_t)ev->depth % FTF_IDCACHE_DEPTHS)];
			if (c->addr == addr && addr) {
				ev->func = c->id;
			} else {
				ev->func = func_id(s, addr);
				c->addr = addr;
				c->id = ev->func;
			}
		}
		ftf_builder_feed(s->b, ev);
	}
	bt->n = 0;
	return s->b->oom ? 1 : 0;
}

void ftf_batch_sink_free(ftf_batch_sink *s)
{
	ftf_u64map_free(&s->ids);
}
