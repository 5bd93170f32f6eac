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

/* The function name at an address, NULL when unknown. */
typedef const char *(*ftf_name_fn)(void *ctx, uint64_t addr);

/* The function ids of the entries seen last per (CPU, depth), as slots of
 * FTF_IDCACHE_CPUS x FTF_IDCACHE_DEPTHS: an exit's function is nearly always
 * that of the entry its CPU recorded last at its depth, and a loop's next
 * entry often the one before it, where the address map's slot is a cache
 * miss (4% of the read). Compared by address: a wrong slot only misses. */
#define FTF_IDCACHE_CPUS 4
#define FTF_IDCACHE_DEPTHS 64
typedef struct {
	uint64_t addr; /* 0: empty */
	uint32_t id;
} ftf_idcache;

typedef struct {
	ftf_builder *b;
	ftf_u64map ids;  /* function address -> function id + 1 */
	ftf_idcache idcache[FTF_IDCACHE_CPUS * FTF_IDCACHE_DEPTHS];
	ftf_name_fn name_of;
	void *name_ctx;
	int decode_only; /* FTFLAME_BENCH_DECODE_ONLY=1: batches dropped unbuilt (bench/run.py
			  * times the decoding alone, and the builder as the rest) */
} ftf_batch_sink;

void ftf_batch_sink_init(ftf_batch_sink *s, ftf_builder *b, ftf_name_fn name_of, void *name_ctx);
/* Feeds the batch to the builder (function ids first) and empties it;
 * nonzero when the builder ran out of memory. */
int ftf_batch_build(ftf_batch_sink *s, ftf_batch *bt);
void ftf_batch_sink_free(ftf_batch_sink *s);

#endif
