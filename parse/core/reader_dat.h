/* The trace.dat reader (reader_dat.c): libtracecmd's records, decoded into
 * ftf_events and fed in per-task order to a call builder.
 */
#ifndef FTF_READER_DAT_H
#define FTF_READER_DAT_H

#include "builder.h"

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

/* Returns 0 on success, else -1 with a one-line message in err.
 * known_events (NULL, or per CPU as ftf_dat_meta.per_cpu_events): the events
 * another reader found per CPU; the end-of-data check skips the CPUs where
 * neither found any. With
 * closing non-NULL, libtracecmd's handle is closed on a thread of its own
 * (it frees the decompressed CPU streams: 20 ms on a 3 M-event trace) while
 * the caller exports the aggregate; ftf_close_wait(*closing) must follow.
 * *closing is NULL when the handle was closed before returning. */
typedef struct ftf_closing ftf_closing;
int ftf_read_dat(const char *path, ftf_builder *b, ftf_dat_meta *meta, const uint64_t *known_events,
		 ftf_progress_fn progress, void *progress_ctx,
		 char *err, size_t errlen, ftf_closing **closing);
void ftf_close_wait(ftf_closing *closing);

#endif
