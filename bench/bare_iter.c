/* The floor for any libtracecmd-based reader: open the file, iterate every
 * record in timestamp order, decode the funcgraph fields. Nothing else.
 * Build: cc -O2 -o bench/bare_iter bench/bare_iter.c $(pkg-config --cflags --libs libtracecmd)
 */
#include <stdio.h>
#include <string.h>
#include <trace-cmd.h>

struct ctx {
	struct tep_format_field *func, *depth, *calltime, *rettime, *edepth, *efunc;
	int exit_id, entry_id;
	unsigned long long n, sum;
	struct tep_handle *tep;
};

static int cb(struct tracecmd_input *h, struct tep_record *r, int cpu, void *data)
{
	struct ctx *c = data;
	unsigned long long v;
	int type = tep_data_type(c->tep, r);
	c->n++;
	if (type == c->exit_id) {
		tep_read_number_field(c->func, r->data, &v); c->sum += v;
		tep_read_number_field(c->depth, r->data, &v); c->sum += v;
		tep_read_number_field(c->calltime, r->data, &v); c->sum -= v;
		tep_read_number_field(c->rettime, r->data, &v); c->sum += v;
	} else if (type == c->entry_id) {
		tep_read_number_field(c->efunc, r->data, &v); c->sum += v;
		tep_read_number_field(c->edepth, r->data, &v); c->sum += v;
	}
	c->sum += (unsigned long long)tep_data_pid(c->tep, r);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s trace.dat\n", argv[0]);
		return 2;
	}
	tracecmd_set_loglevel(TEP_LOG_NONE);
	struct tracecmd_input *h = tracecmd_open(argv[1], TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!h) {
		fprintf(stderr, "%s: cannot open\n", argv[1]);
		return 2;
	}
	struct ctx c;
	memset(&c, 0, sizeof(c));
	c.tep = tracecmd_get_tep(h);
	struct tep_event *ex = tep_find_event_by_name(c.tep, "ftrace", "funcgraph_exit");
	struct tep_event *en = tep_find_event_by_name(c.tep, "ftrace", "funcgraph_entry");
	if (!ex || !en) {
		fprintf(stderr, "%s: no funcgraph events\n", argv[1]);
		return 2;
	}
	c.exit_id = ex->id;
	c.entry_id = en->id;
	c.func = tep_find_field(ex, "func");
	c.depth = tep_find_field(ex, "depth");
	c.calltime = tep_find_field(ex, "calltime");
	c.rettime = tep_find_field(ex, "rettime");
	c.efunc = tep_find_field(en, "func");
	c.edepth = tep_find_field(en, "depth");
	tracecmd_iterate_events(h, NULL, 0, cb, &c);
	printf("%llu records (checksum %llu)\n", c.n, c.sum);
	tracecmd_close(h);
	return 0;
}
