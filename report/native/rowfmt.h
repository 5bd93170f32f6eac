/* Row-template formatter: many rows of numbers and pre-encoded fragments
 * written into one text buffer (the JSON call tree of 100k+ call paths).
 *
 * A template is a list of items written in order for each row 0..nrows-1;
 * columns are nrows values, `stride` bytes apart (a column of a row-major
 * table is read in place). No Python here: the binding
 * (rowfmt_module.c, report._rowfmt.format_rows) validates the arguments and calls this with
 * the GIL released.
 */
#ifndef FTF_ROWFMT_H
#define FTF_ROWFMT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum ftf_rowfmt_kind {
	FTF_RF_LIT = 0,  /* the literal, every row */
	FTF_RF_INT = 1,  /* signed integer column (itemsize 4 or 8), decimal */
	FTF_RF_F1 = 2,   /* float64 column, as printf/Python "%.1f" */
	FTF_RF_ENUM = 3, /* integer index column: frags[index] */
	FTF_RF_REP = 4,  /* integer count column: the literal count times */
	FTF_RF_F1N = 5,  /* float64 column, as FTF_RF_F1 but NaN as "null" (JSON's word for a missing figure) */
	FTF_RF_SEG = 6,  /* a run of values per row, comma-separated: see ftf_rowfmt_seg */
};

/* FTF_RF_SEG: row r writes values[start[r]] .. values[start[r] + count[r] - 1]
 * (start and count: the item's col and col2 columns), each as seg_kind
 * writes one (FTF_RF_INT, FTF_RF_F1N or FTF_RF_ENUM, frags indexed by the
 * value), with a comma between two: a JSON array's body per row, of a
 * length of its own (a kept call tree's column per tree, without a string
 * per tree). The caller has checked that every run lies within the values
 * and every ENUM value indexes frags. */
typedef struct {
	int kind;            /* FTF_RF_INT, FTF_RF_F1N or FTF_RF_ENUM */
	const void *values;
	size_t nvalues;
	ptrdiff_t stride;    /* bytes from one value to the next */
	int itemsize;        /* 4 or 8 (integer values) */
} ftf_rowfmt_seg;

typedef struct {
	const char *s;
	size_t len;
} ftf_str;

typedef struct {
	int kind;
	const void *col;     /* nrows values; NULL for LIT */
	ptrdiff_t stride;    /* bytes from one value to the next */
	int itemsize;        /* 4 or 8 (integer columns) */
	ftf_str lit;         /* LIT, REP */
	const ftf_str *frags; /* ENUM, SEG of ENUM */
	size_t nfrags;
	const void *col2;    /* SEG: the count column (col: the start column) */
	ptrdiff_t stride2;
	int itemsize2;
	ftf_rowfmt_seg seg;  /* SEG */
} ftf_rowfmt_item;

#define FTF_RF_OK 0
#define FTF_RF_NOMEM (-1)    /* the text would not fit a size_t */
#define FTF_RF_BADVALUE (-2) /* ENUM index out of range or negative REP count */
#define FTF_RF_CHANGED (-3)  /* the columns changed between the two passes */
#define FTF_RF_IO (-4)       /* a write to the file descriptor failed (errno in *err) */

/* Two passes, so that the text is written once, straight into its final
 * buffer (a 75 MB text copied from a growing buffer costs as much again in
 * page faults and copying as formatting it):
 * ftf_rowfmt_size: an upper bound of the text's length, in *len: exact for
 * literals, fragments and repeats, the widest value of each number column
 * times nrows (a buffer of that size is only touched where written); checks
 * every ENUM index and REP count (FTF_RF_BADVALUE: *bad_row and *bad_item
 * say where).
 * ftf_rowfmt_write: writes the text into dst, at most cap bytes (the bound),
 * its length in *len; FTF_RF_CHANGED when it does not fit (the columns
 * changed since they were sized), never writing past dst + cap. */
int ftf_rowfmt_size(const ftf_rowfmt_item *items, size_t nitems, size_t nrows, size_t *len,
		    size_t *bad_row, size_t *bad_item);
int ftf_rowfmt_write(const ftf_rowfmt_item *items, size_t nitems, size_t nrows, char *dst, size_t cap,
		     size_t *len);

/* The same text written to fd (a file, a pipe) instead of a buffer, in
 * chunks of about 1 MiB written by a second thread while the next is
 * formatted; no size pass, no buffer of the whole text. *len: the text's
 * length. FTF_RF_IO with *err the errno when a write fails (what was
 * written stays written: the caller writes to a temporary file);
 * FTF_RF_BADVALUE for the first row holding a bad value (*bad_item: the
 * first such item in it). */
int ftf_rowfmt_write_fd(const ftf_rowfmt_item *items, size_t nitems, size_t nrows, int fd, size_t *len,
			int *err, size_t *bad_row, size_t *bad_item);

/* Single values (dst needs FTF_RF_INT_MAX / FTF_RF_F1_MAX bytes); return
 * the length written, no terminating NUL. */
#define FTF_RF_INT_MAX 20
#define FTF_RF_F1_MAX 320
size_t ftf_fmt_i64(char *dst, int64_t v);
size_t ftf_fmt_f1(char *dst, double v);

/* An int64 or int32 value at `at` (columns may be strided, unaligned). */
static inline int64_t ftf_rowfmt_int(const char *at, int itemsize)
{
	if (itemsize == 8) {
		int64_t v;
		memcpy(&v, at, sizeof(v));
		return v;
	}
	int32_t v;
	memcpy(&v, at, sizeof(v));
	return v;
}

#endif
