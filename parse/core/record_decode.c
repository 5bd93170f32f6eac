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

int ftf_decode_record(const ftf_decoder *d, ftf_dat_meta *meta, int32_t cpu, uint64_t ts,
		      int64_t missed, const uint8_t *data, uint32_t size, ftf_batch *out)
{
	return ftf_decode_record_inl(d, meta, cpu, ts, missed, data, size, out);
}

void ftf_batch_sink_init(ftf_batch_sink *s, ftf_builder *b, ftf_name_fn name_of, void *name_ctx)
{
	memset(s, 0, sizeof(*s));
	s->b = b;
	s->ids.name_of = name_of;
	s->ids.name_ctx = name_ctx;
	const char *decode_only = getenv("FTFLAME_BENCH_DECODE_ONLY");
	s->decode_only = decode_only && strcmp(decode_only, "1") == 0;
}

int ftf_batch_build(ftf_batch_sink *s, ftf_batch *bt)
{
	if (!s->decode_only)
		ftf_builder_feed_addrs(s->b, bt->ev, bt->addr, bt->n, &s->ids);
	bt->n = 0;
	return s->b->oom ? 1 : 0;
}

void ftf_batch_sink_free(ftf_batch_sink *s)
{
	ftf_u64map_free(&s->ids.map);
}
