/* Protocol-buffer rows (pbrows.c): messages of one shape written from
 * columns, and calls made to nest in time; their Python binding is
 * pbrows_module.c (ftflame.report._rowfmt.pack_rows, nest_calls). */
#ifndef FTF_PBROWS_H
#define FTF_PBROWS_H

#include <stddef.h>
#include <stdint.h>

enum ftf_pb_kind {
	FTF_PB_LIT, FTF_PB_VARINT, FTF_PB_DOUBLE, FTF_PB_ENUM, FTF_PB_OPEN, FTF_PB_CLOSE, FTF_PB_IF, FTF_PB_ENDIF,
	FTF_PB_TIME, FTF_PB_BEGIN
};

#define FTF_PB_MAX_NEST 16

typedef struct {
	int kind;
	const char *s; /* PB_LIT */
	size_t len;
	const void *col; /* int64 or float64, a value per row (per slice with events) */
	const int64_t *col2; /* PB_TIME: the end's */
	const char *const *frags; /* PB_ENUM */
	const size_t *frag_len;
	int64_t nfrags;
	size_t end; /* PB_IF, PB_BEGIN: the index of its PB_ENDIF */
} ftf_pb_item;


typedef struct {
	char *p;
	size_t n, cap;
} ftf_pb_buf;


/* Rows 0..nrows-1 of the template (items), or with events a row per event
 * (e: slice e's begin, -1-e: its end), appended to b: 0, -1 out of memory. */
int ftf_pb_pack(const ftf_pb_item *items, size_t nitems, int64_t nrows, const int64_t *events, ftf_pb_buf *b);
/* nest_calls (pbrows.c): the number of events written, -1 out of memory. */
int ftf_nest_calls(const int64_t *parent, int64_t *start, int64_t *end, const int64_t *order, int64_t n,
		   int64_t *events);

/* evented_json (pbrows.c): speedscope's evented events of a call batch, as
 * JSON text appended to b: 0, -1 out of memory. */
int ftf_evented_json(const int64_t *events, int64_t nev, const int64_t *frame, const int64_t *wrap,
		     const int64_t *start, const int64_t *end, int64_t t0, ftf_pb_buf *b);

#endif
