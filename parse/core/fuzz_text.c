/* libFuzzer harness: the text tokenizer and the call builder.
 *
 * Built by `make fuzz` with clang -fsanitize=fuzzer,address,undefined (never
 * by setup.py: files named fuzz_* are left out of the extension). The first
 * input byte picks the mode (lines or mail) and a chunk size, so lines that
 * straddle chunks are exercised; the rest is the text. After the run a few
 * invariants of the result are checked: a failure aborts, and libFuzzer keeps
 * the input as a finding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "reader_text.h"

static uint64_t sink_events;

static void sink(void *ctx, const ftf_event *ev, const ftf_builder *b)
{
	(void)ctx;
	/* every call event names a known function */
	if ((ev->kind == FTF_EV_ENTRY || ev->kind == FTF_EV_EXIT || ev->kind == FTF_EV_LEAF) &&
	    ev->func >= b->funcs.n)
		abort();
	if (ev->kind != FTF_TEXT_EV_RENAME)
		sink_events++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t ctl = data[0];
	data++;
	size--;
	static const size_t chunks[8] = { 1, 3, 7, 64, 509, 4096, 65536, SIZE_MAX };
	size_t chunk = chunks[(ctl >> 1) & 7];

	ftf_builder *b = fuzz_builder_new();
	if (!b)
		return 0;
	ftf_text *t = ftf_text_new(b, (ctl & 1) ? FTF_TEXT_MAIL : FTF_TEXT_LINES);
	if (!t) {
		fuzz_builder_free(b);
		return 0;
	}
	sink_events = 0;
	ftf_text_set_sink(t, sink, NULL);
	for (size_t off = 0; off < size;) {
		size_t n = size - off < chunk ? size - off : chunk;
		/* a private copy, so reads past the chunk are caught by ASan */
		uint8_t *copy = fuzz_copy(data + off, n);
		if (!copy)
			break;
		ftf_text_feed(t, (const char *)copy, n);
		free(copy);
		off += n;
	}
	ftf_text_finish(t);
	ftf_builder_finish(b);

	const ftf_text_stats *st = ftf_text_get_stats(t);
	if (st->bytes != size)
		abort();
	if (b->c.events != sink_events - b->c.lost_records)
		abort();
	fuzz_check_tree(b);
	ftf_text_free(t);
	fuzz_builder_free(b);
	return 0;
}
