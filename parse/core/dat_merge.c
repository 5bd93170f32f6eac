/* The builtin trace.dat reader: the file's CPUs merged by timestamp (the
 * earliest record next; on equal timestamps the CPU listed first, as
 * libtracecmd does), each record decoded into an ftf_event by
 * record_decode.c (as the libtracecmd reader's are) and fed to the builder. The builder
 * keeps per-task stacks; the order across CPUs matters where a task
 * migrates (its calls continue on another CPU) and at sched_switch (the
 * switched-out task's tail and the next task's start): hence the merge. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "dat.h"

typedef struct {
	dat_file *f;
	ftf_dat_meta *meta;
	ftf_decoder dec;
	ftf_batch_sink sink;
} decoder;

/* The bind table's fields, as dat_format.c found them. */
static void find_field(void *ctx, int event, int field, const char *name, ftf_field *out)
{
	const dat_file *f = ctx;
	*out = f->ev[event].field[field];
}

static const char *name_of(void *ctx, uint64_t addr)
{
	return dat_syms_find(ctx, addr);
}

static void fill_meta(const dat_file *f, ftf_dat_meta *meta)
{
	snprintf(meta->kernel, sizeof(meta->kernel), "%s", f->uname);
	snprintf(meta->clock, sizeof(meta->clock), "%s", f->clock);
	snprintf(meta->tracer_version, sizeof(meta->tracer_version), "%s", f->version_str);
	if (f->comp != DAT_COMP_NONE) /* libtracecmd names no compression for "none" */
		snprintf(meta->compression, sizeof(meta->compression), "%.30s%s%.30s", f->comp_name,
			 f->comp_version[0] ? " " : "", f->comp_version);
	meta->cpus = f->cpus;
	meta->file_version = f->version;
}

static int check_events(const dat_file *f, const ftf_decoder *dec, char *err, size_t errlen)
{
	if (f->latency) {
		snprintf(err, errlen, "a latency-format trace.dat: its data is the tracer's text, not "
			 "per-CPU event pages: give ftflame the output of 'trace-cmd report' on it");
		return -1;
	}
	if (f->has_ts_offset) {
		snprintf(err, errlen, "this trace.dat shifts its timestamps (OFFSET, TSC2NSEC or "
			 "TIME_SHIFT option), which the builtin reader does not apply: use --reader libtracecmd");
		return -1;
	}
	return ftf_decoder_check(dec, err, errlen);
}

/* Adds one CPU's stream statistics to the damage report. A CPU with
 * fewer records than its CPUSTAT option says the recorder had read from
 * the kernel's buffer by the time it wrote them lost records in the file:
 * the pages read are all written, and the events still in the buffer then
 * ("entries") only add to them. (The real recordings hold their read
 * events, plus their entries or up to a few pages less.) */
static void count_damage(const dat_file *f, const dat_stream *s, ftf_dat_damage *dmg)
{
	const dat_stream_stats *st = &s->st;
	int64_t said = s->cpu < f->stat_n && f->stat_read ? f->stat_read[s->cpu] : -1;
	if (said >= 0 && st->records < (uint64_t)said) {
		dmg->missing_records += (uint64_t)said - st->records;
		dmg->missing_record_cpus++;
	}
	dmg->bad_pages += st->bad_pages;
	dmg->bad_chunks += st->bad_chunks;
	dmg->lost_bytes += st->lost_bytes;
	dmg->cut_streams += st->cut != 0;
	dmg->partial_page_bytes += st->partial_page;
	dmg->zero_pages += st->zero_pages;
	char what[200] = "";
	if (st->cut)
		snprintf(what, sizeof(what), "CPU %u: its data is cut short (%llu bytes missing or "
			 "unreadable)", s->cpu, (unsigned long long)st->lost_bytes);
	else if (st->bad_chunks)
		snprintf(what, sizeof(what), "CPU %u: %llu compressed chunks did not decompress",
			 s->cpu, (unsigned long long)st->bad_chunks);
	else if (st->bad_pages)
		snprintf(what, sizeof(what), "CPU %u: %llu pages with records that do not fit the page",
			 s->cpu, (unsigned long long)st->bad_pages);
	if (said >= 0 && st->records < (uint64_t)said && !what[0])
		snprintf(what, sizeof(what), "CPU %u: %llu records, where the recording's statistics "
			 "say %lld were read", s->cpu, (unsigned long long)st->records, (long long)said);
	if (st->zero_pages && !what[0])
		snprintf(what, sizeof(what), "CPU %u: %llu pages are all zeros (timestamp and commit 0): "
			 "data overwritten?", s->cpu, (unsigned long long)st->zero_pages);
	if (what[0] && !dmg->first[0])
		snprintf(dmg->first, sizeof(dmg->first), "%s", what);
}

/* The merge: a binary heap of the streams with a record waiting, the
 * earliest timestamp on top, equal timestamps by the CPU table's order
 * (libtracecmd's: it takes the first CPU with the smallest). */
typedef struct {
	dat_stream *s;
	uint32_t *h;
	uint32_t n;
} merge;

static inline int before(const merge *m, uint32_t a, uint32_t b)
{
	uint64_t ta = m->s[a].rts, tb = m->s[b].rts;
	return ta < tb || (ta == tb && a < b);
}

static void sift_down(merge *m, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, least = i;
		if (l < m->n && before(m, m->h[l], m->h[least]))
			least = l;
		if (r < m->n && before(m, m->h[r], m->h[least]))
			least = r;
		if (least == i)
			return;
		uint32_t t = m->h[i];
		m->h[i] = m->h[least];
		m->h[least] = t;
		i = least;
	}
}

static void heapify(merge *m)
{
	for (uint32_t i = m->n / 2; i-- > 0;)
		sift_down(m, i);
}

/* ---- the two threads ----------------------------------------------------
 *
 * Decoding (decompression, pages, the merge) and the builder each cost
 * about one core's worth of the read, so they run on two threads: the
 * calling thread decodes into batches (and calls the progress callback:
 * Ctrl-C reaches Python only on the main thread), a builder thread feeds
 * them to the builder. FTFLAME_THREADS=1, or no thread, runs both here.
 * Four batches in flight (655 KB each) keep both threads busy: eight
 * were 2.6 MB more peak RSS for no time saved. */
#define NBATCHES 4

typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t filled, drained;
	ftf_batch *slots[NBATCHES];
	uint64_t head, tail; /* batches published / built */
	int done;            /* the last batch is published */
	int stop;            /* either side asks the other to stop */
	decoder *d;
	int threaded;
} pipeline;

static void *builder_main(void *arg)
{
	pipeline *p = arg;
	/* named for top -H, perf and bench/timeline.py (15 characters at most) */
	prctl(PR_SET_NAME, "ftflame-build", 0, 0, 0);
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (p->tail == p->head && !p->done && !p->stop)
			pthread_cond_wait(&p->filled, &p->mu);
		if (p->tail == p->head || p->stop) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		ftf_batch *bt = p->slots[p->tail % NBATCHES];
		pthread_mutex_unlock(&p->mu);
		int oom = ftf_batch_build(&p->d->sink, bt);
		pthread_mutex_lock(&p->mu);
		p->tail++;
		if (oom)
			p->stop = 1;
		pthread_cond_signal(&p->drained);
		pthread_mutex_unlock(&p->mu);
	}
}

/* The batch is full (or the last): built here, or handed over. Returns the
 * batch to fill next, NULL when the builder stopped. */
static ftf_batch *hand_over(pipeline *p, ftf_batch *cur)
{
	if (!p->threaded) {
		return ftf_batch_build(&p->d->sink, cur) ? NULL : cur;
	}
	pthread_mutex_lock(&p->mu);
	p->head++;
	pthread_cond_signal(&p->filled);
	while (p->head - p->tail >= NBATCHES && !p->stop)
		pthread_cond_wait(&p->drained, &p->mu);
	ftf_batch *next = p->stop ? NULL : p->slots[p->head % NBATCHES];
	pthread_mutex_unlock(&p->mu);
	return next;
}

static void finish(pipeline *p, pthread_t th, ftf_batch *cur, int stopped)
{
	if (!p->threaded) {
		if (cur && !stopped)
			ftf_batch_build(&p->d->sink, cur);
		return;
	}
	pthread_mutex_lock(&p->mu);
	if (stopped)
		p->stop = 1;
	else if (cur && cur->n)
		p->head++;
	p->done = 1;
	pthread_cond_signal(&p->filled);
	pthread_mutex_unlock(&p->mu);
	pthread_join(th, NULL);
}

/* The progress callback runs every this many events, and every
 * DAT_POLL_PAGES pages a stream reads without one (dat_pages.c): it is also
 * where Ctrl-C reaches the read (Python's handler runs in it), within a few
 * ms. */
#define PROGRESS_EVERY (1u << 16)

typedef struct {
	ftf_progress_fn fn;
	void *ctx;
	uint64_t events; /* records decoded so far */
} progress;

/* A stream's poll: the progress callback, with the events so far. */
static int poll_progress(void *ctx)
{
	progress *pr = ctx;
	return pr->fn(pr->ctx, pr->events);
}

/* The merge and decode loop; nonzero when the progress callback stopped it.
 * The stream on top stays there while its records come before the next
 * stream's head (the smaller of its children in the heap): a run of its
 * records is decoded against that one bound, with no sift per record (the
 * long bench traces have two streams, each record's sift was 3% of the
 * read); the heap is restored once the run ends. */
static int decode_all(pipeline *p, dat_stream *s, merge *m, ftf_batch *cur, progress *pr)
{
	dat_file *f = p->d->f;
	uint64_t next_progress = PROGRESS_EVERY;
	while (m->n && cur && !f->src.failed) {
		uint32_t top = m->h[0];
		dat_stream *st = &s[top];
		/* the bound: the next stream's head; ties go to the lower index */
		uint64_t bound_ts = UINT64_MAX;
		uint32_t bound = UINT32_MAX;
		if (m->n > 1) {
			bound = m->h[1];
			if (m->n > 2 && before(m, m->h[2], bound))
				bound = m->h[2];
			bound_ts = s[bound].rts;
		}
		for (;;) {
			uint32_t had = cur->n;
			ftf_decode_record_inl(&p->d->dec, p->d->meta, (int32_t)st->cpu, st->rts, st->rmissed,
					      st->rdata, st->rsize, cur);
			/* the record's event (after a LOST event, if any) began a sub-buffer */
			if (st->rfirst && cur->n > had)
				cur->ev[cur->n - 1].subbuf_start = 1;
			int more = dat_stream_next_inl(st) > 0;
			if (!more) {
				if (st->stopped)
					return 1;
				m->h[0] = m->h[--m->n];
			}
			int stay = more && (st->rts < bound_ts || (st->rts == bound_ts && top < bound));
			if (!stay)
				sift_down(m, 0);
			if (cur->n + 2 > FTF_BATCH_EVENTS) /* room for a LOST event and a record */
				cur = hand_over(p, cur);
			if (++pr->events >= next_progress && pr->fn) {
				next_progress = pr->events + PROGRESS_EVERY;
				if (pr->fn(pr->ctx, pr->events))
					return 1;
			}
			if (!stay || !cur || f->src.failed)
				break;
		}
	}
	return 0;
}

static int read_streams(decoder *d, ftf_dat_damage *dmg, ftf_progress_fn progress_fn,
			void *progress_ctx, char *err, size_t errlen)
{
	dat_file *f = d->f;
	ftf_builder *b = d->sink.b;
	uint32_t n = f->ncpu;
	dat_stream *s = calloc(n ? n : 1, sizeof(*s));
	uint32_t *live = calloc(n ? n : 1, sizeof(*live)); /* streams with a record waiting */
	pipeline p;
	memset(&p, 0, sizeof(p));
	p.d = d;
	int nslots = 0;
	for (; nslots < NBATCHES; nslots++) {
		if (!(p.slots[nslots] = malloc(sizeof(ftf_batch))))
			break;
		p.slots[nslots]->n = 0;
	}
	int rc = 0, stopped = 0;
	if (!s || !live || nslots < NBATCHES) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
		goto out;
	}
	progress pr = { .fn = progress_fn, .ctx = progress_ctx };
	uint32_t nlive = 0;
	for (uint32_t i = 0; i < n && !f->src.failed && !stopped; i++) {
		if (dat_stream_open(&s[i], f, &f->cpu[i]) < 0)
			break;
		if (progress_fn) {
			s[i].poll = poll_progress;
			s[i].poll_ctx = &pr;
		}
		if (dat_stream_next(&s[i]) > 0)
			live[nlive++] = i;
		stopped = s[i].stopped;
	}
	merge m = { .s = s, .h = live, .n = nlive };
	heapify(&m);
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.filled, NULL);
	pthread_cond_init(&p.drained, NULL);
	const char *threads = getenv("FTFLAME_THREADS");
	pthread_t th;
	p.threaded = !(threads && strcmp(threads, "1") == 0) &&
		     pthread_create(&th, NULL, builder_main, &p) == 0;
	ftf_batch *cur = p.slots[0];
	if (!stopped)
		stopped = decode_all(&p, s, &m, cur, &pr);
	/* the batch being filled: the one after the last handed over */
	cur = p.threaded ? (p.stop ? NULL : p.slots[p.head % NBATCHES]) : p.slots[0];
	finish(&p, th, cur, stopped || f->src.failed);
	pthread_cond_destroy(&p.filled);
	pthread_cond_destroy(&p.drained);
	pthread_mutex_destroy(&p.mu);
	ftf_builder_finish(b);
	for (uint32_t i = 0; i < n; i++) {
		if (!stopped && !f->src.failed)
			count_damage(f, &s[i], dmg);
		dat_stream_free(&s[i]);
	}
	dmg->kallsyms_bad_lines = f->syms.bad_lines;
	dmg->data_cpus = f->ncpu;
	dmg->cpucount_option = f->cpucount_option;
	dmg->unknown_options = f->unknown_options;
	dmg->first_unknown_option = f->first_unknown_option;
	dmg->bad_section_headers = f->bad_section_headers;
	snprintf(dmg->first_bad_section, sizeof(dmg->first_bad_section), "%s", f->first_bad_section);
	if (f->src.failed) {
		snprintf(err, errlen, "%s", f->src.err);
		rc = -1;
	} else if (b->oom) {
		snprintf(err, errlen, "out of memory while building the call tree");
		rc = -1;
	} else if (stopped) {
		snprintf(err, errlen, "interrupted");
		rc = -1;
	}
out:
	for (int i = 0; i < nslots; i++)
		free(p.slots[i]);
	free(s);
	free(live);
	return rc;
}

static void bind(dat_file *f, ftf_decoder *dec)
{
	int ids[FTF_REC_NEVENTS];
	for (int i = 0; i < FTF_REC_NEVENTS; i++)
		ids[i] = f->ev[i].present ? f->ev[i].id : -1;
	ftf_decoder_bind(dec, f->swap, ids, find_field, f);
}

static int read_opened(dat_file *f, int opened, ftf_builder *b, ftf_dat_meta *meta,
		       ftf_dat_damage *dmg, ftf_progress_fn progress, void *progress_ctx, char *err,
		       size_t errlen)
{
	if (opened < 0) {
		snprintf(err, errlen, "%s", f->src.err);
		return -1;
	}
	decoder d = { .f = f, .meta = meta };
	bind(f, &d.dec);
	if (check_events(f, &d.dec, err, errlen) < 0)
		return -1;
	fill_meta(f, meta);
	ftf_decoder_meta(&d.dec, meta);
	ftf_builder_set_clock(b, meta->clock);
	ftf_batch_sink_init(&d.sink, b, name_of, &f->syms);
	int rc = read_streams(&d, dmg, progress, progress_ctx, err, errlen);
	ftf_batch_sink_free(&d.sink);
	return rc;
}

int ftf_read_dat_builtin(const char *path, ftf_builder *b, ftf_dat_meta *meta, ftf_dat_damage *damage,
			 ftf_progress_fn progress, void *progress_ctx, char *err, size_t errlen)
{
	memset(meta, 0, sizeof(*meta));
	memset(damage, 0, sizeof(*damage));
	dat_file *f = malloc(sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int opened = dat_file_open(f, path);
	int rc = read_opened(f, opened, b, meta, damage, progress, progress_ctx, err, errlen);
	dat_file_close(f);
	free(f);
	return rc;
}

int ftf_read_dat_builtin_mem(const uint8_t *data, size_t size, ftf_builder *b, ftf_dat_meta *meta,
			     ftf_dat_damage *damage, char *err, size_t errlen)
{
	memset(meta, 0, sizeof(*meta));
	memset(damage, 0, sizeof(*damage));
	dat_file *f = malloc(sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int opened = dat_file_open_mem(f, data, size);
	int rc = read_opened(f, opened, b, meta, damage, NULL, NULL, err, errlen);
	dat_file_close(f);
	free(f);
	return rc;
}

int ftf_read_dat_builtin_decoder(const char *path, ftf_decoder *out, char *err, size_t errlen)
{
	dat_file *f = malloc(sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int rc = dat_file_open(f, path);
	if (rc < 0)
		snprintf(err, errlen, "%s", f->src.err);
	else
		bind(f, out);
	dat_file_close(f);
	free(f);
	return rc < 0 ? -1 : 0;
}
