/*
 * test_barrier.c - the freshness barrier over informers fed by scripted
 * servers: done runs exactly once, when every informer is fresh (synced,
 * or with a list asked at or after the barrier's moment), from inside
 * sf_barrier_arm when all are fresh already (never before it is armed);
 * an informer that stops ends it with -ECANCELED; a cancelled barrier
 * never calls done.
 *
 * Each informer has a fakesrv of its own, so the order of its requests is
 * its script's whatever the other informers do.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "fakeapi.h"
#include "fakesrv.h"
#include "steadfast/barrier.h"
#include "steadfast/cache.h"
#include "steadfast/time.h"
#include "tl.h"

/* An informer of ConfigMaps in "ns" (LIST + WATCH) on a server of its own. */
typedef struct bfx_inf {
	fakesrv *srv;
	sf_kube_config *cfg;
	sf_kube_client *c;
	sf_informer *inf;
	int stopped;
} bfx_inf;

/* What done saw. */
typedef struct done_rec {
	int calls;
	int err;
} done_rec;

static void on_done(void *ud, int err)
{
	done_rec *d = ud;
	d->calls++;
	d->err = err;
}

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

/* The first list, then a watch that shows nothing; a quorum relist (asked
 * by a freshness wait) and its watch after that. */
static const fake_resp SCRIPT[] = {
    {LIST("10", "", CM("a", "ua", "9")), 0},
    {NULL, 1},
    {LIST("20", "", CM("a", "ua", "9")), 0},
    {NULL, 1},
};

static void inf_open(uv_loop_t *loop, bfx_inf *x)
{
	memset(x, 0, sizeof(*x));
	x->srv = fakesrv_start(loop, SCRIPT, 4);
	sf_kube_client_opts co = {.qps = -1};
	x->c = tl_fakesrv_client(loop, x->srv, &co, &x->cfg);
	sf_informer_opts o = {
	    .reflector = {.gvr = &SF_GVR_CONFIGMAPS, .ns = "ns", .watch_list = -1}};
	cr_assert_eq(sf_informer_new(loop, x->c, &o, &x->inf), 0);
}

static int inf_synced(void *ud)
{
	return sf_informer_synced(((bfx_inf *)ud)->inf);
}

static void inf_sync(uv_loop_t *loop, bfx_inf *x)
{
	cr_assert_eq(sf_informer_start(x->inf), 0);
	cr_assert_eq(tl_run_until_fn(loop, inf_synced, x, 5000), 0, "the informer did not sync");
}

static void inf_stop(uv_loop_t *loop, bfx_inf *x)
{
	if (!x->stopped) {
		int done = 0;
		sf_informer_stop(x->inf, set_flag, &done);
		cr_assert_eq(tl_run_until(loop, &done, 5000), 0, "the informer did not stop");
		x->stopped = 1;
	}
}

static void inf_close(uv_loop_t *loop, bfx_inf *x)
{
	inf_stop(loop, x);
	sf_informer_free(x->inf);
	int closed = 0;
	sf_kube_client_close(x->c, set_flag, &closed);
	fakesrv_stop(x->srv);
	cr_assert_eq(tl_run_until(loop, &closed, 5000), 0);
	sf_kube_config_free(x->cfg);
}

/* After every informer of the loop is closed: the servers' handles close. */
static void loop_end(uv_loop_t *loop)
{
	uv_run(loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(loop), 0);
}

/* Runs the loop for ms whatever happens. */
static int never(void *ud)
{
	(void)ud;
	return 0;
}

static void run_for(uv_loop_t *loop, long ms)
{
	tl_run_until_fn(loop, never, NULL, ms);
}

Test(barrier, done_once_when_every_informer_has_synced)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	bfx_inf a, b;
	inf_open(&loop, &a);
	inf_open(&loop, &b);
	done_rec d = {0, 99};
	sf_barrier *bar;
	cr_assert_eq(sf_barrier_new(0, on_done, &d, &bar), 0);
	cr_assert_eq(sf_barrier_add(bar, a.inf), 0);
	cr_assert_eq(sf_barrier_add(bar, b.inf), 0);
	/* a wait met before the barrier is armed does not end it */
	inf_sync(&loop, &a);
	cr_assert_eq(d.calls, 0, "done before arm");
	sf_barrier_arm(bar);
	run_for(&loop, 100);
	cr_assert_eq(d.calls, 0, "done while an informer has not synced");
	inf_sync(&loop, &b);
	cr_assert_eq(tl_run_until(&loop, &d.calls, 5000), 0, "done never ran");
	cr_assert_eq(d.err, 0);
	run_for(&loop, 100);
	cr_assert_eq(d.calls, 1, "done ran %d times", d.calls);
	inf_close(&loop, &a);
	inf_close(&loop, &b);
	loop_end(&loop);
}

Test(barrier, informers_fresh_already_end_it_inside_arm)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	bfx_inf a;
	inf_open(&loop, &a);
	inf_sync(&loop, &a);
	done_rec d = {0, 99};
	sf_barrier *bar;
	cr_assert_eq(sf_barrier_new(0, on_done, &d, &bar), 0);
	cr_assert_eq(sf_barrier_add(bar, a.inf), 0);
	cr_assert_eq(d.calls, 0, "done before arm");
	sf_barrier_arm(bar);
	cr_assert_eq(d.calls, 1, "done did not run inside arm");
	cr_assert_eq(d.err, 0);
	/* and a barrier over no informer at all */
	done_rec e = {0, 99};
	cr_assert_eq(sf_barrier_new(0, on_done, &e, &bar), 0);
	sf_barrier_arm(bar);
	cr_assert_eq(e.calls, 1);
	cr_assert_eq(e.err, 0);
	inf_close(&loop, &a);
	loop_end(&loop);
}

/* Until it is armed more informers may come: waits that have all been met
 * do not end it, arm does. */
Test(barrier, waits_met_before_arm_end_it_at_arm)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	bfx_inf a;
	inf_open(&loop, &a);
	done_rec d = {0, 99};
	sf_barrier *bar;
	cr_assert_eq(sf_barrier_new(0, on_done, &d, &bar), 0);
	cr_assert_eq(sf_barrier_add(bar, a.inf), 0);
	inf_sync(&loop, &a);
	run_for(&loop, 100);
	cr_assert_eq(d.calls, 0, "done before arm");
	sf_barrier_arm(bar);
	cr_assert_eq(d.calls, 1, "done did not run inside arm");
	cr_assert_eq(d.err, 0);
	inf_close(&loop, &a);
	loop_end(&loop);
}

/* Synced is not fresh: with a moment, the barrier waits for a list asked
 * at or after it, which the informer makes. */
Test(barrier, a_moment_waits_for_a_list_asked_after_it)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	bfx_inf a;
	inf_open(&loop, &a);
	inf_sync(&loop, &a);
	int64_t since = sf_mono_ns();
	done_rec d = {0, 99};
	sf_barrier *bar;
	cr_assert_eq(sf_barrier_new(since, on_done, &d, &bar), 0);
	cr_assert_eq(sf_barrier_add(bar, a.inf), 0);
	sf_barrier_arm(bar);
	cr_assert_eq(d.calls, 0, "a list from before the moment counted as fresh");
	cr_assert_eq(tl_run_until(&loop, &d.calls, 5000), 0, "done never ran");
	cr_assert_eq(d.err, 0);
	cr_assert_geq(fakesrv_requests(a.srv), 3, "done without a new list");
	cr_assert_geq(sf_reflector_list_asked_ns(sf_informer_reflector(a.inf)), since);
	cr_assert_str_eq(sf_informer_last_rv(a.inf), "20");
	inf_close(&loop, &a);
	loop_end(&loop);
}

Test(barrier, an_informer_that_stops_ends_it_with_ecanceled)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	bfx_inf a, b;
	inf_open(&loop, &a);
	inf_open(&loop, &b);
	done_rec d = {0, 99};
	sf_barrier *bar;
	cr_assert_eq(sf_barrier_new(0, on_done, &d, &bar), 0);
	cr_assert_eq(sf_barrier_add(bar, a.inf), 0);
	cr_assert_eq(sf_barrier_add(bar, b.inf), 0);
	sf_barrier_arm(bar);
	/* a stops while b still waits: no need to wait for b */
	inf_stop(&loop, &a);
	cr_assert_eq(tl_run_until(&loop, &d.calls, 5000), 0, "done never ran");
	cr_assert_eq(d.err, -ECANCELED);
	/* b syncs later: done is not called again */
	inf_sync(&loop, &b);
	run_for(&loop, 100);
	cr_assert_eq(d.calls, 1, "done ran %d times", d.calls);

	/* a stopped informer cannot be added */
	done_rec e = {0, 99};
	cr_assert_eq(sf_barrier_new(0, on_done, &e, &bar), 0);
	cr_assert_eq(sf_barrier_add(bar, a.inf), -ESHUTDOWN);
	sf_barrier_cancel(bar);
	cr_assert_eq(e.calls, 0);
	inf_close(&loop, &a);
	inf_close(&loop, &b);
	loop_end(&loop);
}

Test(barrier, a_cancelled_barrier_never_calls_done)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	bfx_inf a;
	inf_open(&loop, &a);
	done_rec d = {0, 99};
	sf_barrier *bar;
	cr_assert_eq(sf_barrier_new(0, on_done, &d, &bar), 0);
	cr_assert_eq(sf_barrier_add(bar, a.inf), 0);
	sf_barrier_arm(bar);
	sf_barrier_cancel(bar);
	sf_barrier_cancel(NULL);
	/* the informer syncs, and later stops: neither reaches done */
	inf_sync(&loop, &a);
	run_for(&loop, 100);
	inf_stop(&loop, &a);
	cr_assert_eq(d.calls, 0, "done ran after cancel (err %d)", d.err);
	inf_close(&loop, &a);
	loop_end(&loop);
}
