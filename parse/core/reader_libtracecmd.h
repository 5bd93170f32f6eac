/* The trace.dat reader on libtracecmd (reader_libtracecmd.c): libtracecmd's
 * records, decoded by record_decode.c and fed to a call builder.
 */
#ifndef FTF_READER_LIBTRACECMD_H
#define FTF_READER_LIBTRACECMD_H

#include "record_decode.h"

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
/* The decoder a read of the file would use (the reader parity tests). */
int ftf_read_dat_decoder(const char *path, ftf_decoder *out, char *err, size_t errlen);

#endif
