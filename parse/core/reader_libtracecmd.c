/* trace.dat reader on libtracecmd.
 *
 * Opens with TRACECMD_FL_LOAD_NO_PLUGINS: trace-cmd's own fgraph print
 * handler otherwise reads ahead and swallows leaf exits. libtraceevent's
 * parse of the file's event formats says where each field of
 * record_decode.c's table lies; the records are decoded there, as the
 * builtin reader's are.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <trace-cmd.h>

#include "reader_libtracecmd.h"

/* Exported by libtracecmd.so.1 but declared only in the uninstalled
 * trace-cmd-private.h. */
int tracecmd_cpus(struct tracecmd_input *handle);
const char *tracecmd_get_uname(struct tracecmd_input *handle);
const char *tracecmd_get_trace_clock(struct tracecmd_input *handle);
const char *tracecmd_get_version(struct tracecmd_input *handle);
unsigned long tracecmd_get_in_file_version(struct tracecmd_input *handle);
int tracecmd_get_file_compress_proto(struct tracecmd_input *handle,
				     const char **name, const char **version);
struct tep_record *tracecmd_read_cpu_last(struct tracecmd_input *handle, int cpu);
int tracecmd_page_size(struct tracecmd_input *handle);

typedef struct quiet_stderr quiet_stderr;

typedef struct {
	ftf_builder *b;
	struct tep_handle *tep;
	struct tep_event *events[FTF_REC_NEVENTS]; /* NULL: not in the file */
	ftf_decoder dec;
	ftf_batch_sink sink;
	ftf_progress_fn progress;
	void *progress_ctx;
	uint64_t next_progress;
	int stopped;
	ftf_dat_meta *meta;
	quiet_stderr *quiet; /* fd 2 while libtracecmd runs */
	/* the last time stamp read per CPU, for the end-of-data check */
	unsigned long long last_ts[sizeof(((ftf_dat_meta *)0)->per_cpu_events) / sizeof(uint64_t)];
	const uint64_t *known_events; /* per CPU, another reader's count; NULL: unknown */
	/* the sub-buffer (page) of the last record per CPU, from the record's
	 * offset: a record on another page began a sub-buffer (ftf_event.subbuf_start,
	 * as the builtin reader marks it) */
	uint64_t page_size;
	uint64_t last_page[sizeof(((ftf_dat_meta *)0)->per_cpu_events) / sizeof(uint64_t)];
	uint8_t page_seen[sizeof(((ftf_dat_meta *)0)->per_cpu_events) / sizeof(uint64_t)];
} dat_ctx;

/* The bind table's fields, as libtraceevent parsed the formats. */
static void find_field(void *ctx, int event, int field, const char *name, ftf_field *out)
{
	struct tep_event *ev = ((dat_ctx *)ctx)->events[event];
	struct tep_format_field *f = ev ? tep_find_field(ev, name) : NULL;
	if (!f)
		f = ev ? tep_find_common_field(ev, name) : NULL;
	out->present = f != NULL;
	out->offset = out->size = 0;
	if (!f)
		return;
	/* an offset or size that does not fit reads as 0, as one past the record */
	if (f->offset < 0 || f->size < 0) {
		out->offset = UINT32_MAX;
		return;
	}
	out->offset = (uint32_t)f->offset;
	out->size = (uint32_t)f->size;
}

static const char *name_of(void *ctx, uint64_t addr)
{
	return tep_find_function(ctx, addr);
}

/* ---- decode (calling thread) --------------------------------------------
 *
 * libtracecmd's iteration (decompression, page parsing, the CPU merge) and
 * the call builder each cost about one core's worth of the read, so they run
 * on two threads: the calling thread iterates and decodes records into
 * batches of events, a builder thread feeds them to the builder. That way
 * round: libtracecmd allocates and frees a record per event, and glibc does
 * that fastest in the main thread's arena (a 3 M-event read takes 0.1-0.2 s
 * less when the CLI calls it from the main thread). Function ids are
 * assigned on the builder's side (the builder reads the function table), so
 * a batch carries raw addresses. Without a second thread the same code runs
 * inline.
 */
#define NBATCHES 8

typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t filled, drained;
	ftf_batch *slots[NBATCHES];
	uint64_t head, tail; /* batches produced / consumed */
	int done;            /* the iteration has published its last batch */
	int stop;            /* either side asks the other to stop */
} pipe_state;

static void decode(dat_ctx *c, struct tep_record *rec, ftf_batch *out)
{
	uint32_t size = rec->size > 0 ? (uint32_t)rec->size : 0;
	int first = 0;
	if (c->page_size && rec->cpu >= 0 && rec->cpu < (int)(sizeof(c->last_page) / sizeof(c->last_page[0]))) {
		uint64_t page = (uint64_t)rec->offset / c->page_size;
		first = !c->page_seen[rec->cpu] || c->last_page[rec->cpu] != page;
		c->page_seen[rec->cpu] = 1;
		c->last_page[rec->cpu] = page;
	}
	uint32_t had = out->n;
	if (ftf_decode_record(&c->dec, c->meta, rec->cpu, rec->ts, rec->missed_events, rec->data, size,
			      out) &&
	    rec->cpu >= 0 && rec->cpu < (int)(sizeof(c->last_ts) / sizeof(c->last_ts[0])))
		c->last_ts[rec->cpu] = rec->ts;
	if (first && out->n > had)
		out->ev[out->n - 1].subbuf_start = 1;
}

/* libtracecmd prints to stderr past its log level (perror's "mmap: Unknown
 * error -22", "Can not mmap file, will read instead"): while it runs, fd 2
 * goes to /dev/null and ftflame says what went wrong in one line of its
 * own. Back for the progress callback (Python's progress bar). Left alone
 * under FTFLAME_DEBUG and AddressSanitizer, whose reports go to fd 2.
 * fd 2 is one per process and reads may run at once on several threads
 * (ftflame diff): they share one quieting, begun by the first and ended by
 * the last. (Each saving fd 2 for itself, a read begun while another had
 * it on /dev/null would "restore" /dev/null for good.) */
struct quiet_stderr {
	int on; /* this read counts among the quieting's users */
};

static pthread_mutex_t quiet_lock = PTHREAD_MUTEX_INITIALIZER;
static int quiet_users, quiet_saved = -1, quiet_null = -1;

static void quiet_begin(quiet_stderr *q)
{
	q->on = 0;
#ifndef __SANITIZE_ADDRESS__
	if (getenv("FTFLAME_DEBUG"))
		return;
	pthread_mutex_lock(&quiet_lock);
	if (quiet_users == 0) {
		quiet_null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		quiet_saved = quiet_null < 0 ? -1 : fcntl(2, F_DUPFD_CLOEXEC, 3);
		if (quiet_saved < 0 || dup2(quiet_null, 2) < 0) {
			if (quiet_null >= 0)
				close(quiet_null);
			if (quiet_saved >= 0)
				close(quiet_saved);
			quiet_saved = quiet_null = -1;
			pthread_mutex_unlock(&quiet_lock);
			return;
		}
	}
	quiet_users++;
	q->on = 1;
	pthread_mutex_unlock(&quiet_lock);
#endif
}

static void quiet_pause(quiet_stderr *q)
{
	if (!q->on)
		return;
	pthread_mutex_lock(&quiet_lock);
	dup2(quiet_saved, 2);
	pthread_mutex_unlock(&quiet_lock);
}

static void quiet_resume(quiet_stderr *q)
{
	if (!q->on)
		return;
	pthread_mutex_lock(&quiet_lock);
	dup2(quiet_null, 2);
	pthread_mutex_unlock(&quiet_lock);
}

static void quiet_end(quiet_stderr *q)
{
	if (!q->on)
		return;
	pthread_mutex_lock(&quiet_lock);
	if (--quiet_users == 0) {
		dup2(quiet_saved, 2);
		close(quiet_saved);
		close(quiet_null);
		quiet_saved = quiet_null = -1;
	}
	pthread_mutex_unlock(&quiet_lock);
	q->on = 0;
}

/* errno in words; libtracecmd sometimes leaves it negative (-EINVAL),
 * which strerror calls "Unknown error -22" */
static const char *errno_words(int e, const char *otherwise)
{
	return e ? strerror(e < 0 ? -e : e) : otherwise;
}

/* Progress every 2^20 events, on the thread that called ftf_read_dat: the
 * callback may run Python, and Ctrl-C reaches Python only on the main
 * thread. Nonzero: stop. */
static int report_progress(dat_ctx *c, uint64_t events)
{
	if (!c->progress || events < c->next_progress)
		return 0;
	c->next_progress = events + (1u << 20);
	quiet_pause(c->quiet);
	int stop = c->progress(c->progress_ctx, events);
	quiet_resume(c->quiet);
	if (stop) {
		c->stopped = 1;
		return 1;
	}
	return 0;
}

/* ---- the two ways of running them --------------------------------------- */

typedef struct {
	dat_ctx *c;
	struct tracecmd_input *h;
	pipe_state *ps;
	ftf_batch *cur;
	ftf_batch *inline_batch; /* single-threaded: decode, then build at once */
	uint64_t published;  /* events in the batches published so far */
} run_ctx;

static int on_record_inline(struct tracecmd_input *handle, struct tep_record *rec, int cpu, void *data)
{
	run_ctx *r = data;
	decode(r->c, rec, r->inline_batch);
	/* tracecmd_iterate_events stops only on a negative return */
	return ftf_batch_build(&r->c->sink, r->inline_batch) ||
	       report_progress(r->c, r->c->b->c.events) ? -1 : 0;
}

/* Publish the current batch and take the next free slot; or, with stop,
 * ask the builder to stop. Nonzero: stop. */
static int publish(pipe_state *ps, ftf_batch **cur, int stop_now)
{
	pthread_mutex_lock(&ps->mu);
	if (stop_now) {
		ps->stop = 1;
		pthread_cond_signal(&ps->filled);
		pthread_mutex_unlock(&ps->mu);
		return 1;
	}
	ps->head++;
	pthread_cond_signal(&ps->filled);
	while (ps->head - ps->tail >= NBATCHES && !ps->stop)
		pthread_cond_wait(&ps->drained, &ps->mu);
	int stop = ps->stop;
	*cur = ps->slots[ps->head % NBATCHES];
	pthread_mutex_unlock(&ps->mu);
	return stop;
}

static int on_record_piped(struct tracecmd_input *handle, struct tep_record *rec, int cpu, void *data)
{
	run_ctx *r = data;
	decode(r->c, rec, r->cur);
	/* room for a LOST event and a record in the next call */
	if (r->cur->n + 2 > FTF_BATCH_EVENTS) {
		r->published += r->cur->n;
		return publish(r->ps, &r->cur, report_progress(r->c, r->published)) ? -1 : 0;
	}
	return 0;
}

/* The calling thread's side: libtracecmd's iteration, decoding into the
 * batches, until the file ends or the builder asks it to stop. */
static void iterate_into_batches(run_ctx *r)
{
	tracecmd_iterate_events(r->h, NULL, 0, on_record_piped, r);
	pipe_state *ps = r->ps;
	pthread_mutex_lock(&ps->mu);
	if (r->cur->n && !ps->stop)
		ps->head++;
	ps->done = 1;
	pthread_cond_signal(&ps->filled);
	pthread_mutex_unlock(&ps->mu);
}

/* The builder thread: feeds the published batches to the builder. */
static void *builder_main(void *arg)
{
	run_ctx *r = arg;
	pipe_state *ps = r->ps;
	/* named for top -H, perf and bench/timeline.py (15 characters at most) */
	prctl(PR_SET_NAME, "ftflame-build", 0, 0, 0);
	/* tep_find_function builds its address map (20 ms) on first use:
	 * here, while the iteration fills the first batches (only this
	 * thread looks names up) */
	tep_find_function(r->c->tep, 0);
	for (;;) {
		pthread_mutex_lock(&ps->mu);
		while (ps->tail == ps->head && !ps->done && !ps->stop)
			pthread_cond_wait(&ps->filled, &ps->mu);
		if (ps->tail == ps->head || ps->stop) {
			pthread_mutex_unlock(&ps->mu);
			break;
		}
		ftf_batch *bt = ps->slots[ps->tail % NBATCHES];
		pthread_mutex_unlock(&ps->mu);
		int stop = ftf_batch_build(&r->c->sink, bt);
		pthread_mutex_lock(&ps->mu);
		ps->tail++;
		if (stop)
			ps->stop = 1;
		pthread_cond_signal(&ps->drained);
		pthread_mutex_unlock(&ps->mu);
		if (stop)
			break;
	}
	return NULL;
}

static int iterate_piped(dat_ctx *c, struct tracecmd_input *h)
{
	pipe_state ps;
	memset(&ps, 0, sizeof(ps));
	for (int i = 0; i < NBATCHES; i++) {
		ps.slots[i] = malloc(sizeof(ftf_batch));
		if (!ps.slots[i]) {
			while (i--)
				free(ps.slots[i]);
			return -1;
		}
		ps.slots[i]->n = 0;
	}
	pthread_mutex_init(&ps.mu, NULL);
	pthread_cond_init(&ps.filled, NULL);
	pthread_cond_init(&ps.drained, NULL);
	run_ctx r = { .c = c, .h = h, .ps = &ps, .cur = ps.slots[0] };
	pthread_t th;
	int started = pthread_create(&th, NULL, builder_main, &r) == 0;
	if (started) {
		iterate_into_batches(&r);
		pthread_join(th, NULL);
	}
	pthread_cond_destroy(&ps.filled);
	pthread_cond_destroy(&ps.drained);
	pthread_mutex_destroy(&ps.mu);
	for (int i = 0; i < NBATCHES; i++)
		free(ps.slots[i]);
	return started ? 0 : -1;
}

static int iterate_inline(dat_ctx *c, struct tracecmd_input *h)
{
	ftf_batch *bt = malloc(sizeof(ftf_batch));
	if (!bt)
		return -1;
	bt->n = 0;
	tep_find_function(c->tep, 0);
	run_ctx r = { .c = c, .h = h, .inline_batch = bt };
	tracecmd_iterate_events(h, NULL, 0, on_record_inline, &r);
	free(bt);
	return 0;
}

/* libtracecmd's iteration can end before a CPU's data does, and say
 * nothing: trace-cmd 3.1.6 keeps a mapping per page of a big uncompressed
 * file, and once mmap fails (vm.max_map_count, 65530 by default: 2.4 copies
 * into a 5 GB file, 5 % of its events) the CPU simply ends; some damaged
 * pages end it too. So after the iteration each CPU's last record is read
 * directly: if it is later than the last one the iteration gave, or cannot
 * be read although the CPU had events, the read is incomplete. 0: complete;
 * otherwise err says which CPU and where it stopped. */
static int check_read_to_the_end(dat_ctx *c, struct tracecmd_input *h, char *err, size_t errlen)
{
	int cpus = tracecmd_cpus(h);
	int n = (int)(sizeof(c->last_ts) / sizeof(c->last_ts[0]));
	for (int cpu = 0; cpu < cpus && cpu < n; cpu++) {
		uint64_t seen = c->meta->per_cpu_events[cpu];
		/* a CPU neither reader found data on: nothing to miss, and a damaged
		 * header's CPU count (thousands) is no reason to make libtracecmd
		 * look up that many CPUs' last pages */
		if (!seen && c->known_events && !c->known_events[cpu])
			continue;
		struct tep_record *last = tracecmd_read_cpu_last(h, cpu);
		unsigned long long end = last ? last->ts : 0;
		if (last)
			tracecmd_free_record(last);
		if ((last && (!seen || end > c->last_ts[cpu])) || (!last && seen)) {
			if (last)
				snprintf(err, errlen, "libtracecmd stopped reading CPU %d after %llu events, "
					 "at %llu.%06llu s; its data goes on to %llu.%06llu s (a damaged page, "
					 "or a file too big for libtracecmd's page mappings): read it with the "
					 "builtin reader (the default)", cpu, (unsigned long long)seen,
					 c->last_ts[cpu] / 1000000000ull, c->last_ts[cpu] % 1000000000ull / 1000,
					 end / 1000000000ull, end % 1000000000ull / 1000);
			else
				snprintf(err, errlen, "libtracecmd cannot read CPU %d's last record after "
					 "%llu events (a damaged page, or a file too big for libtracecmd's "
					 "page mappings): read it with the builtin reader (the default)",
					 cpu, (unsigned long long)seen);
			return -1;
		}
	}
	return 0;
}

struct ftf_closing {
	pthread_t thread;
	struct tracecmd_input *h;
};

static void *close_main(void *arg)
{
	prctl(PR_SET_NAME, "ftflame-close", 0, 0, 0);
	tracecmd_close(((ftf_closing *)arg)->h);
	return NULL;
}

/* tracecmd_close(h) on a thread, or here when none can start. */
static ftf_closing *close_async(struct tracecmd_input *h)
{
	ftf_closing *cl = malloc(sizeof(*cl));
	if (cl) {
		cl->h = h;
		if (pthread_create(&cl->thread, NULL, close_main, cl) == 0)
			return cl;
		free(cl);
	}
	tracecmd_close(h);
	return NULL;
}

void ftf_close_wait(ftf_closing *cl)
{
	if (!cl)
		return;
	pthread_join(cl->thread, NULL);
	free(cl);
}

/* tracecmd_open() in two steps: libtracecmd 3.1 crashes in tracecmd_close()
 * on a handle whose CPU data it could not set up (a data section not on a
 * page boundary or past the end of the file), which tracecmd_open() does
 * itself on that failure. Such a handle is left unclosed (its memory and
 * fd, once, on the way to exit code 2). */
static struct tracecmd_input *open_dat(const char *path, char *err, size_t errlen)
{
	errno = 0;
	struct tracecmd_input *h = tracecmd_open_head(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!h) {
		snprintf(err, errlen, "libtracecmd could not open it (%s): not a complete trace.dat",
			 errno_words(errno, "bad or truncated headers"));
		return NULL;
	}
	errno = 0;
	if (tracecmd_init_data(h) < 0) {
		snprintf(err, errlen, "libtracecmd could not read its event data (%s): "
			 "a damaged or truncated trace.dat", errno_words(errno, "bad CPU data sections"));
		return NULL;
	}
	return h;
}

/* libtracecmd's open of a compressed trace.dat sets up every CPU's data
 * with no callback: 0.3 s on s14, seconds on a bigger file or a loaded
 * machine (over 5 s under ASan), during which Ctrl-C reached nobody. With a
 * progress callback (where Ctrl-C reaches Python) the open runs on a thread
 * while this one calls it every 50 ms with 0 events; on a stop the opening
 * thread is left to finish and close what it opened. */
typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t finished;
	int done, abandoned;
	char *path;
	struct tracecmd_input *h;
	char err[512];
} opening;

static void opening_free(opening *o)
{
	pthread_cond_destroy(&o->finished);
	pthread_mutex_destroy(&o->mu);
	free(o->path);
	free(o);
}

static void *opening_main(void *arg)
{
	opening *o = arg;
	prctl(PR_SET_NAME, "ftflame-open", 0, 0, 0);
	struct tracecmd_input *h = open_dat(o->path, o->err, sizeof(o->err));
	pthread_mutex_lock(&o->mu);
	int abandoned = o->abandoned;
	o->h = h;
	o->done = 1;
	pthread_cond_signal(&o->finished);
	pthread_mutex_unlock(&o->mu);
	if (abandoned) {
		if (h)
			tracecmd_close(h);
		opening_free(o);
	}
	return NULL;
}

static struct tracecmd_input *open_dat_interruptible(dat_ctx *c, const char *path, char *err,
						      size_t errlen)
{
	opening *o = c->progress ? calloc(1, sizeof(*o)) : NULL;
	if (o && !(o->path = strdup(path))) {
		free(o);
		o = NULL;
	}
	if (!o)
		return open_dat(path, err, errlen);
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->finished, NULL);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t th;
	int started = pthread_create(&th, &attr, opening_main, o) == 0;
	pthread_attr_destroy(&attr);
	if (!started) {
		opening_free(o);
		return open_dat(path, err, errlen);
	}
	pthread_mutex_lock(&o->mu);
	while (!o->done) {
		struct timespec at;
		clock_gettime(CLOCK_REALTIME, &at);
		at.tv_nsec += 50 * 1000 * 1000;
		if (at.tv_nsec >= 1000000000L) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&o->finished, &o->mu, &at);
		if (o->done)
			break;
		pthread_mutex_unlock(&o->mu);
		quiet_pause(c->quiet);
		int stop = c->progress(c->progress_ctx, 0);
		quiet_resume(c->quiet);
		pthread_mutex_lock(&o->mu);
		if (stop) {
			c->stopped = 1;
			snprintf(err, errlen, "interrupted");
			if (!o->done) { /* the opening thread closes and frees */
				o->abandoned = 1;
				pthread_mutex_unlock(&o->mu);
				return NULL;
			}
			pthread_mutex_unlock(&o->mu);
			if (o->h)
				tracecmd_close(o->h);
			opening_free(o);
			return NULL;
		}
	}
	struct tracecmd_input *h = o->h;
	if (!h)
		snprintf(err, errlen, "%s", o->err);
	pthread_mutex_unlock(&o->mu);
	opening_free(o);
	return h;
}

/* The file's events and the decoder bound to them. */
static void bind_events(dat_ctx *c, struct tep_handle *tep)
{
	int ids[FTF_REC_NEVENTS];
	for (int e = 0; e < FTF_REC_NEVENTS; e++) {
		c->events[e] = tep_find_event_by_name(tep, ftf_rec_events[e].system, ftf_rec_events[e].name);
		ids[e] = c->events[e] ? c->events[e]->id : -1;
	}
	ftf_decoder_bind(&c->dec, tep_is_file_bigendian(tep) != tep_is_local_bigendian(tep), ids,
			 find_field, c);
}

int ftf_read_dat_decoder(const char *path, ftf_decoder *out, char *err, size_t errlen)
{
	quiet_stderr quiet;
	quiet_begin(&quiet);
	tracecmd_set_loglevel(TEP_LOG_NONE);
	struct tracecmd_input *h = open_dat(path, err, errlen);
	if (h) {
		dat_ctx c;
		memset(&c, 0, sizeof(c));
		bind_events(&c, tracecmd_get_tep(h));
		*out = c.dec;
		tracecmd_close(h);
	}
	quiet_end(&quiet);
	return h ? 0 : -1;
}

/* The compression the file's header names (version 7: after the page size,
 * "name\0version\0"). libtracecmd reports the version of its own
 * compressor, not the writer's. 0 when the header names none. */
static int file_compression(const char *path, char *out, size_t outlen)
{
	uint8_t h[160];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = pread(fd, h, sizeof(h), 0);
	close(fd);
	if (n < 10 + 2 + 2 + 4 || memcmp(h, "\x17\x08\x44tracing", 10) != 0)
		return 0;
	size_t at = 10;
	if (h[at] != '7' || h[at + 1] != 0)
		return 0;
	at += 2 + 2 + 4; /* version, endianness and long size, page size */
	const char *name = (const char *)h + at;
	size_t nlen = strnlen(name, (size_t)n - at);
	if (!nlen || at + nlen + 1 >= (size_t)n)
		return 0;
	const char *ver = name + nlen + 1;
	size_t vlen = strnlen(ver, (size_t)n - at - nlen - 1);
	if (at + nlen + 1 + vlen >= (size_t)n)
		return 0;
	snprintf(out, outlen, "%.30s%s%.30s", name, vlen ? " " : "", ver);
	return 1;
}

static int read_dat(const char *path, ftf_builder *b, ftf_dat_meta *meta,
		    const uint64_t *known_events, ftf_progress_fn progress, void *progress_ctx,
		    char *err, size_t errlen, ftf_closing **closing, quiet_stderr *quiet)
{
	if (closing)
		*closing = NULL;
	dat_ctx c;
	memset(&c, 0, sizeof(c));
	memset(meta, 0, sizeof(*meta));
	c.b = b;
	c.meta = meta;
	c.known_events = known_events;
	c.progress = progress;
	c.progress_ctx = progress_ctx;
	c.next_progress = 1u << 20;
	c.quiet = quiet;

	tracecmd_set_loglevel(TEP_LOG_NONE);
	struct tracecmd_input *h = open_dat_interruptible(&c, path, err, errlen);
	if (!h)
		return -1;
	struct tep_handle *tep = tracecmd_get_tep(h);
	tep_set_loglevel(TEP_LOG_NONE);
	c.tep = tep;
	int ps = tracecmd_page_size(h);
	c.page_size = ps > 0 ? (uint64_t)ps : 0;
	bind_events(&c, tep);
	ftf_decoder_meta(&c.dec, meta);
	if (ftf_decoder_check(&c.dec, err, errlen) < 0) {
		tracecmd_close(h);
		return -1;
	}

	const char *s;
	if ((s = tracecmd_get_uname(h)))
		snprintf(meta->kernel, sizeof(meta->kernel), "%s", s);
	if ((s = tracecmd_get_trace_clock(h)))
		snprintf(meta->clock, sizeof(meta->clock), "%s", s);
	if ((s = tracecmd_get_version(h)))
		snprintf(meta->tracer_version, sizeof(meta->tracer_version), "%s", s);
	const char *cname = NULL, *cver = NULL;
	if (tracecmd_get_file_compress_proto(h, &cname, &cver) == 0 && cname &&
	    !file_compression(path, meta->compression, sizeof(meta->compression)))
		snprintf(meta->compression, sizeof(meta->compression), "%s%s%s", cname,
			 cver ? " " : "", cver ? cver : "");
	meta->cpus = tracecmd_cpus(h);
	meta->file_version = (int)tracecmd_get_in_file_version(h);
	ftf_builder_set_clock(b, meta->clock);
	ftf_batch_sink_init(&c.sink, b, name_of, tep);

	const char *threads = getenv("FTFLAME_THREADS");
	int piped = !(threads && strcmp(threads, "1") == 0);
	if ((piped ? iterate_piped(&c, h) : -1) < 0 && iterate_inline(&c, h) < 0)
		b->oom = 1;
	int short_read = !b->oom && !c.stopped && check_read_to_the_end(&c, h, err, errlen) < 0;
	ftf_builder_finish(b);
	/* (closing on a detached thread that outlives the export would keep the
	 * decompressed streams alive while Python builds the Profile: +35 MB
	 * of peak RSS on a 3 M-event trace; the export only overlaps it) */
	if (closing && !b->oom && !c.stopped && !short_read)
		*closing = close_async(h);
	else
		tracecmd_close(h);
	ftf_batch_sink_free(&c.sink);
	if (b->oom) {
		snprintf(err, errlen, "out of memory while building the call tree");
		return -1;
	}
	if (c.stopped) {
		snprintf(err, errlen, "interrupted");
		return -1;
	}
	return short_read ? -1 : 0;
}

int ftf_read_dat(const char *path, ftf_builder *b, ftf_dat_meta *meta, const uint64_t *known_events,
		 ftf_progress_fn progress, void *progress_ctx, char *err, size_t errlen,
		 ftf_closing **closing)
{
	quiet_stderr quiet;
	quiet_begin(&quiet);
	int rc = read_dat(path, b, meta, known_events, progress, progress_ctx, err, errlen, closing, &quiet);
	quiet_end(&quiet);
	return rc;
}
