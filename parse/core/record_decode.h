/* One trace.dat record -> ftf_event, for both trace.dat readers: the
 * builtin one (dat_*.c: records from our own page decoding) and the one on
 * libtracecmd (reader_libtracecmd.c: records from its iteration). Each
 * reader only says where a field lies in its file's formats; which events
 * and fields are bound, how a record's bytes become an event, and how the
 * events reach the builder are here once, so the two cannot decode
 * differently.
 */
#ifndef FTF_RECORD_DECODE_H
#define FTF_RECORD_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "builder.h"
#include "u64map.h"

/* What a trace.dat says of itself, filled by either reader. */
typedef struct {
	char kernel[256];
	char clock[64];
	char tracer_version[64];
	int cpus;
	int file_version;
	char compression[64];
	int has_entry_event, has_exit_event, has_retaddr_event, has_switch_event;
	int has_retval, has_args;
	uint64_t per_cpu_events[FTF_MAX_CPUS > 512 ? 512 : FTF_MAX_CPUS];
} ftf_dat_meta;

typedef int (*ftf_progress_fn)(void *ctx, uint64_t events);

/* ---- the bind table --------------------------------------------------- */

/* The events read, and the fields looked up by name in each of them (a
 * field an event lacks stays absent). The layouts changed many times
 * (docs/trace-formats.md, "Event layouts"): no offset is assumed. */
enum { FTF_REC_ENTRY, FTF_REC_RETADDR_ENTRY, FTF_REC_EXIT, FTF_REC_SWITCH, FTF_REC_NEVENTS };
enum {
	FTF_FLD_FUNC, FTF_FLD_DEPTH, FTF_FLD_OVERRUN, FTF_FLD_CALLTIME, FTF_FLD_RETTIME,
	FTF_FLD_RETVAL, FTF_FLD_ARGS, FTF_FLD_PREV_PID, FTF_FLD_NEXT_PID,
	FTF_FLD_COMMON_PID, FTF_FLD_COMMON_FLAGS, FTF_FLD_N
};

typedef struct {
	const char *system, *name;
} ftf_rec_event_name;

extern const ftf_rec_event_name ftf_rec_events[FTF_REC_NEVENTS];
extern const char *const ftf_rec_fields[FTF_FLD_N];
/* The index of a field name in ftf_rec_fields, -1 when it is not read. */
int ftf_rec_field_index(const char *name);

typedef struct {
	int present;
	uint32_t offset, size;
} ftf_field;

typedef struct {
	int id; /* -1: the file has no such event */
	ftf_field field[FTF_FLD_N];
} ftf_rec_format;

typedef struct {
	int swap; /* the file's byte order is not ours */
	ftf_rec_format ev[FTF_REC_NEVENTS];
	/* Per entry and exit event: the record size that holds every field a
	 * call needs when they have the common layout (native byte order,
	 * 1-byte flags, 4-byte pid and depth, 8-byte function, 4-byte overrun,
	 * 8-byte times: every kernel since 4.x on x86_64 and arm64); 0 when
	 * they do not. Such records are read without a check per field. */
	uint32_t std_need[FTF_REC_NEVENTS];
} ftf_decoder;

/* Where field `field` (named `name`) lies in event `event` of the file:
 * *out filled, present or not. */
typedef void (*ftf_find_field_fn)(void *ctx, int event, int field, const char *name,
				  ftf_field *out);

/* Binds every field of the table in every event the file has (ids[event]
 * >= 0) through find. */
void ftf_decoder_bind(ftf_decoder *d, int swap, const int ids[FTF_REC_NEVENTS],
		      ftf_find_field_fn find, void *ctx);
/* 0, or -1 with a one-line message: no function_graph events, or an exit
 * event without the fields a call needs. */
int ftf_decoder_check(const ftf_decoder *d, char *err, size_t errlen);
/* The has_* flags of meta. */
void ftf_decoder_meta(const ftf_decoder *d, ftf_dat_meta *meta);

/* ---- records -> events -> builder --------------------------------------- */

/* Events decoded on one thread, built on another: function addresses go in
 * addr[] and become function ids on the builder's side, which owns the
 * function table. */
#define FTF_BATCH_EVENTS 8192

typedef struct {
	ftf_event ev[FTF_BATCH_EVENTS];
	uint64_t addr[FTF_BATCH_EVENTS]; /* ENTRY/EXIT: function address */
	uint64_t args[FTF_BATCH_EVENTS][FTF_MAX_ARGS]; /* ENTRY: argument values (ev.args points here) */
	uint32_t n;
} ftf_batch;

/* Appends the record as an event to out (after a LOST event when missed is
 * nonzero: a count, or -1 unknown); out needs room for two. Counts the
 * record in meta->per_cpu_events. Returns 0 when the record is too short
 * to have a type (an event of no kind). */
int ftf_decode_record(const ftf_decoder *d, ftf_dat_meta *meta, int32_t cpu, uint64_t ts,
		      int64_t missed, const uint8_t *data, uint32_t size, ftf_batch *out);

typedef struct {
	ftf_builder *b;
	ftf_func_ids ids; /* function address -> id (builder.h) */
	int decode_only; /* FTFLAME_BENCH_DECODE_ONLY=1: batches dropped unbuilt (bench/run.py
			  * times the decoding alone, and the builder as the rest) */
} ftf_batch_sink;

void ftf_batch_sink_init(ftf_batch_sink *s, ftf_builder *b, ftf_name_fn name_of, void *name_ctx);
/* Feeds the batch to the builder (function ids first) and empties it;
 * nonzero when the builder ran out of memory. */
int ftf_batch_build(ftf_batch_sink *s, ftf_batch *bt);
void ftf_batch_sink_free(ftf_batch_sink *s);

/* ftf_decode_record's body, inline: the builtin reader's merge loop decodes
 * every record through it (a call per record was 20 instructions of
 * prologue and epilogue, 7% of the decoding); record_decode.c makes the
 * out-of-line ftf_decode_record of it for the libtracecmd reader. */

/* A field's value; 0 when absent or past the record's end. */
static inline uint64_t ftf_rd_field(const ftf_decoder *d, const ftf_field *fl, const uint8_t *data,
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

static inline int64_t ftf_rd_field_signed(const ftf_decoder *d, const ftf_field *fl, const uint8_t *data,
					  uint32_t size)
{
	uint64_t v = ftf_rd_field(d, fl, data, size);
	switch (fl->size) {
	case 1: return (int8_t)v;
	case 2: return (int16_t)v;
	case 4: return (int32_t)v;
	default: return (int64_t)v;
	}
}

/* depth: 6.15-rc declared an 8-byte depth over a 4-byte value */
static inline int64_t ftf_rd_depth_of(const ftf_decoder *d, const ftf_field *fl, const uint8_t *data,
				      uint32_t size)
{
	int64_t v = ftf_rd_field_signed(d, fl, data, size);
	return fl->size == 8 ? (int32_t)v : v;
}

static inline uint32_t ftf_rd_ld32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t ftf_rd_ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* An entry's argument values (funcgraph-args), when its format has them. */
static inline void ftf_rd_entry_args(const ftf_decoder *d, const ftf_rec_format *e, const uint8_t *data,
				     uint32_t size, ftf_batch *out, const uint64_t *addr, ftf_event *ev)
{
	const ftf_field *args = &e->field[FTF_FLD_ARGS];
	if (!args->present)
		return;
	/* args[]: longs (func's width) to the record's end, as many as recorded */
	ftf_field one = { .present = 1, .offset = args->offset, .size = e->field[FTF_FLD_FUNC].size };
	uint64_t *v = out->args[addr - out->addr];
	while (ev->nargs < FTF_MAX_ARGS && one.size && (uint64_t)one.offset + one.size <= size) {
		v[ev->nargs++] = ftf_rd_field(d, &one, data, size);
		one.offset += one.size;
	}
	ev->args = v;
}

/* An event with every field 0 but these: field by field, as a memset of the
 * event compiled to `rep stos`, whose start-up cost a third of the
 * decoding's samples sat behind. */
static inline void ftf_rd_event_start(ftf_event *ev, uint8_t kind, int32_t cpu, uint64_t ts)
{
	ev->kind = kind;
	ev->flags = 0;
	ev->has_retval = 0;
	ev->subbuf_start = 0;
	ev->cpu = cpu;
	ev->pid = 0;
	ev->func = 0;
	ev->depth = 0;
	ev->nargs = 0;
	ev->ts = ts;
	ev->calltime = 0;
	ev->rettime = 0;
	ev->retval = 0;
	ev->overrun = 0; /* and lost, next_pid, args: the union */
}

static inline __attribute__((always_inline)) int
ftf_decode_record_inl(const ftf_decoder *d, ftf_dat_meta *meta, int32_t cpu, uint64_t ts, int64_t missed,
		      const uint8_t *data, uint32_t size, ftf_batch *out)
{
	ftf_event *ev = &out->ev[out->n];
	if (missed) {
		ftf_rd_event_start(ev, FTF_EV_LOST, cpu, ts);
		ev->lost = missed > 0 ? missed : -1;
		ev = &out->ev[++out->n];
	}
	uint64_t *addr = &out->addr[out->n++];
	ftf_rd_event_start(ev, 0, cpu, ts);
	if (size < 8)
		return 0; /* counted as an other event */
	int type = (int)ftf_rd_field(d, &(ftf_field){ .present = 1, .offset = 0, .size = 2 }, data, size);
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
		ev->pid = (int32_t)ftf_rd_ld32(data + x->field[FTF_FLD_COMMON_PID].offset);
		*addr = ftf_rd_ld64(data + e->field[FTF_FLD_FUNC].offset);
		ev->depth = (int32_t)ftf_rd_ld32(data + e->field[FTF_FLD_DEPTH].offset);
		if (k == FTF_REC_EXIT) {
			ev->kind = FTF_EV_EXIT;
			ev->overrun = ftf_rd_ld32(data + x->field[FTF_FLD_OVERRUN].offset);
			ev->calltime = ftf_rd_ld64(data + x->field[FTF_FLD_CALLTIME].offset);
			ev->rettime = ftf_rd_ld64(data + x->field[FTF_FLD_RETTIME].offset);
			if (x->field[FTF_FLD_RETVAL].present) {
				ev->has_retval = 1;
				ev->retval = ftf_rd_field(d, &x->field[FTF_FLD_RETVAL], data, size);
			}
		} else {
			ev->kind = FTF_EV_ENTRY;
			ftf_rd_entry_args(d, e, data, size, out, addr, ev);
		}
		return 1;
	}
	ev->flags = (uint8_t)ftf_rd_field(d, &x->field[FTF_FLD_COMMON_FLAGS], data, size);
	ev->pid = (int32_t)ftf_rd_field(d, &x->field[FTF_FLD_COMMON_PID], data, size);
	if (type == x->id) {
		ev->kind = FTF_EV_EXIT;
		*addr = ftf_rd_field(d, &x->field[FTF_FLD_FUNC], data, size);
		ev->depth = ftf_rd_depth_of(d, &x->field[FTF_FLD_DEPTH], data, size);
		ev->overrun = ftf_rd_field(d, &x->field[FTF_FLD_OVERRUN], data, size);
		ev->calltime = ftf_rd_field(d, &x->field[FTF_FLD_CALLTIME], data, size);
		ev->rettime = ftf_rd_field(d, &x->field[FTF_FLD_RETTIME], data, size);
		if (x->field[FTF_FLD_RETVAL].present) {
			/* as recorded: ftf_retval_is_error reads an int's in the low 32 bits */
			ev->has_retval = 1;
			ev->retval = ftf_rd_field(d, &x->field[FTF_FLD_RETVAL], data, size);
		}
	} else if (type == en->id || type == ra->id) {
		const ftf_rec_format *e = type == en->id ? en : ra;
		ev->kind = FTF_EV_ENTRY;
		*addr = ftf_rd_field(d, &e->field[FTF_FLD_FUNC], data, size);
		ev->depth = ftf_rd_depth_of(d, &e->field[FTF_FLD_DEPTH], data, size);
		ftf_rd_entry_args(d, e, data, size, out, addr, ev);
	} else if (type == sw->id) {
		ev->kind = FTF_EV_SWITCH;
		ev->pid = (int32_t)ftf_rd_field(d, &sw->field[FTF_FLD_PREV_PID], data, size);
		ev->next_pid = (int32_t)ftf_rd_field(d, &sw->field[FTF_FLD_NEXT_PID], data, size);
	}
	return 1;
}

#endif
