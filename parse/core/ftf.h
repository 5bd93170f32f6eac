/* ftflame C core (ftflame.parse._core): events -> per-task call builder ->
 * call-path aggregate. Each unit declares its public functions in its own
 * header; this one gathers them for the module glue (module.c):
 *
 *   builder.h             events, histograms, the aggregate, the builder
 *   funcs.h               function names (an interned string table)
 *   root_calls.h          operations and the slowest root calls (the builder's)
 *   record_decode.h       trace.dat records -> events, for both trace.dat readers
 *   reader_libtracecmd.h  the trace.dat reader on libtracecmd
 *   dat.h                 the builtin trace.dat reader (module.c includes it)
 *   reader_text.h         the text tokenizer
 *   u64map.h              the open-addressing map the builder keys call paths with
 *   mem.h                 memory hints (huge pages for the big tables)
 */
#ifndef FTF_H
#define FTF_H

#include "builder.h"
#include "reader_libtracecmd.h"
#include "reader_text.h"

#endif
