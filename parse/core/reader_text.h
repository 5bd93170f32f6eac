/* The text tokenizer (reader_text.c): function_graph text in any chunks,
 * every dialect (tracefs, perf ftrace, trace-cmd report, mail), into
 * ftf_events fed to a call builder.
 */
#ifndef FTF_READER_TEXT_H
#define FTF_READER_TEXT_H

#include "builder.h"

enum ftf_text_mode {
	FTF_TEXT_LINES = 0, /* one record per line: tracefs, perf ftrace, trace-cmd report */
	FTF_TEXT_MAIL = 1,  /* records re-flowed onto long lines, prose in between */
};

/* What the tokenizer saw, line by line: nothing is dropped unseen. */
typedef struct {
	uint64_t bytes, lines;
	uint64_t records;       /* records understood (lines, or records in mail) */
	uint64_t header_lines;  /* '#' headers, blank lines, decorations */
	uint64_t unparsed;      /* lines no dialect explains */
	uint64_t too_long;      /* lines over 64 MiB, skipped */
	uint64_t too_deep;      /* records deeper than 4096, skipped */
	uint64_t entry_lines, leaf_lines, exit_lines;
	uint64_t cpu_lines;     /* call records with no task column: per-CPU stacks */
	uint64_t proc_lines;    /* ...with the funcgraph-proc comm-pid column */
	uint64_t tracecmd_lines;/* ...trace-cmd report lines (comm-pid on each) */
	uint64_t ts_lines;      /* call records with a timestamp */
	uint64_t cpus_seen;     /* CPUs with at least one record */
	uint64_t separators;    /* task-switch separators followed */
	uint64_t separator_conflicts; /* separators that disagree with the stacks */
	uint64_t irq_arrows;    /* ==========> / <========== lines */
	uint64_t flag_lines;    /* records with a latency-flags column */
	uint64_t latency_irq_lines; /* ...whose flags say hardirq/softirq/NMI */
	uint64_t lost_lines;
	uint64_t other_lines;   /* comments, other events */
	uint64_t overrun_lines;
	uint64_t no_duration;   /* leaves and exits printed without a duration */
	uint64_t unknown_exits; /* '}' whose function is unknown */
	uint64_t tail_mismatch; /* '}' tail names another function than the open entry */
	uint64_t prose_lines, prose_bytes; /* mail: text between records */
	uint64_t rejoined;      /* lines a mail client wrapped, joined to the line they continue */
	uint64_t broken_records;/* mail: `N) ... |` that is no record (cut inside a word?) */
	uint64_t first_unparsed_line;
	char first_unparsed[160];
} ftf_text_stats;

typedef struct ftf_text ftf_text;
/* Optional: see every event the tokenizer feeds (tests, fuzzing). */
/* Not a builder event: the sink is told that the tokenizer renamed a task
 * (pid = old, next_pid = new), so a test can follow the stacks. */
#define FTF_TEXT_EV_RENAME 100
typedef void (*ftf_text_sink)(void *ctx, const ftf_event *ev, const ftf_builder *b);

ftf_text *ftf_text_new(ftf_builder *b, int mode);
void ftf_text_set_sink(ftf_text *t, ftf_text_sink sink, void *ctx);
/* Feed any chunk of the input; returns -1 only when out of memory. */
int ftf_text_feed(ftf_text *t, const char *buf, size_t len);
/* Flush the last line (the builder is not finished: call ftf_builder_finish). */
int ftf_text_finish(ftf_text *t);
const ftf_text_stats *ftf_text_get_stats(const ftf_text *t);
void ftf_text_free(ftf_text *t);

#endif
