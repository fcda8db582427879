/*
 * test_syncer.c - the leader-side periodic syncer (syncer.h) on a real
 * loop: running starts a pass at once and only one; a paused syncer starts
 * none; pausing cancels the request in flight and its answer puts the
 * syncer back to idle (a run meanwhile passes again once it came); closing
 * releases the owner only after the timer is closed and nothing is in
 * flight, then calls back; within brings the next pass forward, never
 * back; the metrics are one counter family with a result label.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fakesrv.h"
#include "steadfast/syncer.h"
#include "tl.h"

TestSuite(syncer, .init = tl_log_quiet);

/* An owner as admparams and slackcq are: a syncer inside, freed by its
 * release hook. A pass sends one GET (to the scripted server) when
 * client is set, else ends at once. */
typedef struct owner {
	sf_syncer sync;
	sf_kube_client *client;
	int passes, answers, goes_on;
	int *released; /* set by release, which frees the owner */
	long next_ms;  /* after a pass: the next in this many ms */
} owner;

static const sf_gvr CMS = {"", "v1", "configmaps", 1};

static void answered(void *ud, const sf_kube_result *res)
{
	owner *o = ud;
	int *released = o->released;
	int go = sf_syncer_answer(&o->sync, res);
	if (*released)
		return; /* o is gone */
	o->answers++;
	if (!go)
		return;
	o->goes_on++;
	o->sync.step = 0;
	sf_syncer_schedule(&o->sync, o->next_ms);
}

static void pass(void *ud)
{
	owner *o = ud;
	o->passes++;
	if (!o->client) {
		sf_syncer_schedule(&o->sync, o->next_ms);
		return;
	}
	o->sync.step = 1;
	cr_assert_eq(sf_kube_get(o->client, &CMS, "ns", "cm", answered, o, &o->sync.call), 0);
}

static void release(void *ud)
{
	owner *o = ud;
	*o->released = 1;
	free(o);
}

static owner *owner_new(uv_loop_t *loop, sf_kube_client *client, int *released)
{
	owner *o = calloc(1, sizeof(*o));
	cr_assert_not_null(o);
	o->client = client;
	o->released = released;
	o->next_ms = 60000;
	*released = 0;
	sf_syncer_init(loop, &o->sync, pass, release, o);
	return o;
}

typedef struct closed {
	int called;
	int released_first; /* release had run when cb came */
	int *released;
} closed;

static void on_closed(void *ud)
{
	closed *c = ud;
	c->called = 1;
	c->released_first = *c->released;
}

static int passes_at_least(void *ud)
{
	owner *o = ((void **)ud)[0];
	int n = *(int *)((void **)ud)[1];
	return o->passes >= n;
}

static void run_until_passes(uv_loop_t *loop, owner *o, int n)
{
	void *ud[2] = {o, &n};
	cr_assert_eq(tl_run_until_fn(loop, passes_at_least, ud, 5000), 0, "%d passes, want %d",
	             o->passes, n);
}

static int never(void *ud)
{
	(void)ud;
	return 0;
}

Test(syncer, running_passes_at_once_and_once_then_pausing_stops)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	int released;
	owner *o = owner_new(&loop, NULL, &released);
	tl_run_until_fn(&loop, never, NULL, 30);
	cr_assert_eq(o->passes, 0, "a syncer not run passes");
	cr_assert_eq(sf_syncer_run(&o->sync), 1);
	cr_assert_eq(sf_syncer_run(&o->sync), 0, "already running");
	run_until_passes(&loop, o, 1);
	o->next_ms = 10;
	sf_syncer_schedule(&o->sync, 10);
	run_until_passes(&loop, o, 2);
	sf_syncer_pause(&o->sync);
	int n = o->passes;
	tl_run_until_fn(&loop, never, NULL, 60);
	cr_assert_eq(o->passes, n, "a paused syncer passes");
	cr_assert_eq(sf_syncer_run(&o->sync), 1);
	run_until_passes(&loop, o, n + 1);

	closed c = {.released = &released};
	sf_syncer_close(&o->sync, on_closed, &c);
	cr_assert_eq(sf_syncer_run(&o->sync), 0, "a closing syncer does not run");
	cr_assert_eq(tl_run_until(&loop, &c.called, 5000), 0);
	cr_assert(c.released_first, "the owner is released before the callback");
	cr_assert_eq(uv_loop_close(&loop), 0);
}

Test(syncer, within_brings_the_next_pass_forward_never_back)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	int released;
	owner *o = owner_new(&loop, NULL, &released);
	sf_syncer_run(&o->sync);
	run_until_passes(&loop, o, 1); /* the next in 60 s */
	sf_syncer_within(&o->sync, 20);
	run_until_passes(&loop, o, 2);
	sf_syncer_schedule(&o->sync, 10);
	sf_syncer_within(&o->sync, 60000); /* not later than 10 ms */
	run_until_passes(&loop, o, 3);

	closed c = {.released = &released};
	sf_syncer_close(&o->sync, on_closed, &c);
	cr_assert_eq(tl_run_until(&loop, &c.called, 5000), 0);
	cr_assert_eq(uv_loop_close(&loop), 0);
}

/* A server whose every answer hangs: the request stays in flight. */
typedef struct fx {
	uv_loop_t loop;
	fakesrv *srv;
	sf_kube_config *cfg;
	sf_kube_client *c;
	fake_resp script[4];
} fx;

static void fx_open(fx *f)
{
	memset(f, 0, sizeof(*f));
	for (int i = 0; i < 4; i++)
		f->script[i] = (fake_resp){"", 1};
	cr_assert_eq(uv_loop_init(&f->loop), 0);
	f->srv = fakesrv_start(&f->loop, f->script, 4);
	sf_kube_client_opts co = {.http1_only = 1};
	f->c = tl_fakesrv_client(&f->loop, f->srv, &co, &f->cfg);
}

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

static void fx_close(fx *f)
{
	int cl = 0;
	sf_kube_client_close(f->c, set_flag, &cl);
	fakesrv_stop(f->srv);
	cr_assert_eq(tl_run_until(&f->loop, &cl, 5000), 0);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	sf_kube_config_free(f->cfg);
	cr_assert_eq(uv_loop_close(&f->loop), 0);
}

static int has_requests(void *ud)
{
	fx *f = ud;
	return fakesrv_requests(f->srv) >= 1;
}

static int answered_once(void *ud)
{
	return ((owner *)ud)->answers >= 1;
}

Test(syncer, a_pause_cancels_and_a_run_meanwhile_passes_again_after_the_answer)
{
	fx f;
	fx_open(&f);
	int released;
	owner *o = owner_new(&f.loop, f.c, &released);
	sf_syncer_run(&o->sync);
	cr_assert_eq(tl_run_until_fn(&f.loop, has_requests, &f, 5000), 0);
	cr_assert_eq(o->passes, 1);
	cr_assert_not_null(o->sync.call);
	sf_syncer_pause(&o->sync);
	sf_syncer_run(&o->sync); /* the pass is still under way: none started */
	cr_assert_eq(o->passes, 1);
	cr_assert_eq(tl_run_until_fn(&f.loop, answered_once, o, 5000), 0);
	cr_assert_eq(o->goes_on, 0, "a cancelled answer does not go on");
	run_until_passes(&f.loop, o, 2); /* idle again, and running */

	closed c = {.released = &released};
	sf_syncer_close(&o->sync, on_closed, &c);
	cr_assert_eq(tl_run_until(&f.loop, &c.called, 5000), 0);
	cr_assert(c.released_first);
	fx_close(&f);
}

Test(syncer, close_waits_for_the_cancelled_answer)
{
	fx f;
	fx_open(&f);
	int released;
	owner *o = owner_new(&f.loop, f.c, &released);
	sf_syncer_run(&o->sync);
	cr_assert_eq(tl_run_until_fn(&f.loop, has_requests, &f, 5000), 0);
	closed c = {.released = &released};
	sf_syncer_close(&o->sync, on_closed, &c);
	cr_assert_eq(c.called, 0);
	cr_assert_eq(released, 0, "freed with a request in flight");
	cr_assert_eq(tl_run_until(&f.loop, &c.called, 5000), 0);
	cr_assert(c.released_first);
	fx_close(&f);
}

Test(syncer, metrics_are_passes_by_result)
{
	sf_syncer_stats st = {.unchanged = 3, .updated = 2, .absent = 1, .errors = 4};
	const char *want_fmt = "# HELP x_total Passes.\n"
	                       "# TYPE x_total counter\n"
	                       "x_total{result=\"unchanged\"} %d\n"
	                       "x_total{result=\"updated\"} %d\n"
	                       "x_total{result=\"absent\"} %d\n"
	                       "x_total{result=\"error\"} %d\n";
	for (int z = 0; z < 2; z++) {
		sf_prom *p = sf_prom_new();
		cr_assert_not_null(p);
		cr_assert_eq(sf_syncer_metrics_write(z ? NULL : &st, p, "x_total", "Passes."), 0);
		sf_buf out;
		sf_buf_init(&out, 0);
		cr_assert_eq(sf_prom_render(p, &out), 0);
		cr_assert_eq(sf_buf_putc(&out, 0), 0);
		char want[512];
		if (z)
			snprintf(want, sizeof(want), want_fmt, 0, 0, 0, 0);
		else
			snprintf(want, sizeof(want), want_fmt, 3, 2, 1, 4);
		cr_assert_str_eq(out.data, want);
		sf_buf_free(&out);
		sf_prom_free(p);
	}
}
