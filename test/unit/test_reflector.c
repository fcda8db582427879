/*
 * test_reflector.c - the reflector against a scripted server: paged lists
 * and the watch after them, bad streams, 410 relists and their backoff,
 * expired continue tokens, the watch watchdog, forced relists, freshness
 * relists, relists from the watch cache with quorum fallbacks, WatchList.
 *
 * The real API server will not truncate a stream or expire a continue token
 * on demand, so these drive the reflector through fakesrv: each request
 * takes the next scripted response, and the requests are checked for the
 * parameters the reflector must send. Every delta the reflector applies to
 * its store is recorded (tl_deltas) and asserted in order.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "fakeapi.h"
#include "fakesrv.h"
#include "steadfast/cache.h"
#include "steadfast/log.h"
#include "steadfast/time.h"
#include "tl.h"
#include "tl_deltas.h"

typedef struct rfx {
	uv_loop_t loop;
	fakesrv *srv;
	sf_kube_config *cfg;
	sf_kube_client *c;
	sf_store *store;
	sf_reflector *r;
	tl_deltas rec;
	int synced_calls;
	size_t len_at_sync[8]; /* the store's size at each on_synced */
	char rvs[32][16];      /* every on_rv value */
	int nrv;
	int stopped;
	int stop_in_handler; /* stop the reflector on the first delta */
} rfx;

static char log_lines[32][1024];
static int nlog;

static void capture_log(sf_log_level level, const char *line, void *ud)
{
	(void)ud;
	if (level <= SF_LOG_WARN && nlog < 32)
		snprintf(log_lines[nlog++], sizeof(log_lines[0]), "%s", line);
}

static void rfx_on_rv(void *ud, const char *rv)
{
	rfx *f = ud;
	cr_assert_lt(f->nrv, 32);
	if (f->nrv)
		cr_assert_gt(sf_rv_cmp(rv, f->rvs[f->nrv - 1]), 0, "rv went %s -> %s",
		             f->rvs[f->nrv - 1], rv);
	snprintf(f->rvs[f->nrv++], sizeof(f->rvs[0]), "%s", rv);
}

static void rfx_on_synced(void *ud)
{
	rfx *f = ud;
	if (f->synced_calls < 8)
		f->len_at_sync[f->synced_calls] = sf_store_len(f->store);
	f->synced_calls++;
	cr_assert(sf_reflector_synced(f->r));
}

static void rfx_stopped(void *ud)
{
	((rfx *)ud)->stopped = 1;
}

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

static void rfx_record(void *ud, sf_delta_type t, sf_obj *old, sf_obj *new_obj)
{
	rfx *f = ud;
	tl_deltas_record(&f->rec, t, old, new_obj);
	if (f->stop_in_handler && !f->stopped)
		sf_reflector_stop(f->r, rfx_stopped, f);
}

static long rfx_progress_ms; /* the next rfx_open's watch watchdog (0 = off) */
static int rfx_watch_list;   /* 1: the next rfx_open's reflector tries WatchList */

static void rfx_open(rfx *f, const fake_resp *script, int n, long page)
{
	memset(f, 0, sizeof(*f));
	nlog = 0;
	sf_log_set_sink(capture_log, NULL);
	cr_assert_eq(uv_loop_init(&f->loop), 0);
	f->srv = fakesrv_start(&f->loop, script, n);
	sf_kube_client_opts co = {.qps = -1};
	f->c = tl_fakesrv_client(&f->loop, f->srv, &co, &f->cfg);
	f->store = sf_store_new();
	f->rec.s = f->store;
	sf_store_set_handler(f->store, rfx_record, f);
	sf_reflector_opts o = {
	    .gvr = &SF_GVR_CONFIGMAPS,
	    .ns = "ns",
	    .label_selector = "app=x",
	    .page_size = page,
	    .watch_list = rfx_watch_list ? 0 : -1,
	    .watch_min_s = 5,
	    .watch_max_s = 8,
	    .backoff_initial_ms = 20,
	    .backoff_max_ms = 1000,
	    .backoff_jitter = -1,
	    .progress_timeout_ms = rfx_progress_ms ? rfx_progress_ms : -1,
	    .on_rv = rfx_on_rv,
	    .on_synced = rfx_on_synced,
	    .ud = f,
	};
	cr_assert_eq(sf_reflector_new(&f->loop, f->c, f->store, &o, &f->r), 0);
}

static void rfx_close(rfx *f)
{
	if (!f->stopped)
		sf_reflector_stop(f->r, rfx_stopped, f);
	cr_assert_eq(tl_run_until(&f->loop, &f->stopped, 5000), 0, "reflector did not stop");
	sf_reflector_free(f->r);
	int closed = 0;
	sf_kube_client_close(f->c, set_flag, &closed);
	fakesrv_stop(f->srv);
	cr_assert_eq(tl_run_until(&f->loop, &closed, 5000), 0);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	sf_kube_config_free(f->cfg);
	sf_store_free(f->store);
	cr_assert_eq(uv_loop_close(&f->loop), 0);
	sf_log_set_sink(NULL, NULL);
}

typedef struct until_req {
	rfx *f;
	int n;
} until_req;

static int reqs_at_least(void *ud)
{
	until_req *u = ud;
	return fakesrv_requests(u->f->srv) >= u->n;
}

static void run_to_request(rfx *f, int n)
{
	until_req u = {f, n};
	cr_assert_eq(tl_run_until_fn(&f->loop, reqs_at_least, &u, 10000), 0,
	             "only %d of %d requests arrived", fakesrv_requests(f->srv), n);
	/* let the reflector finish handling the previous response */
	for (int i = 0; i < 20; i++)
		uv_run(&f->loop, UV_RUN_NOWAIT);
}

static void req_has(rfx *f, int i, const char *what)
{
	const char *q = fakesrv_request(f->srv, i);
	cr_assert_not_null(q, "no request %d", i);
	const char *eol = strstr(q, "\r\n");
	size_t l = eol ? (size_t)(eol - q) : strlen(q);
	cr_assert(memmem(q, l, what, strlen(what)) != NULL, "request %d lacks %s: %.*s", i, what,
	          (int)l, q);
}

static void req_lacks(rfx *f, int i, const char *what)
{
	const char *q = fakesrv_request(f->srv, i);
	cr_assert_not_null(q, "no request %d", i);
	const char *eol = strstr(q, "\r\n");
	size_t l = eol ? (size_t)(eol - q) : strlen(q);
	cr_assert(memmem(q, l, what, strlen(what)) == NULL, "request %d has %s: %.*s", i, what,
	          (int)l, q);
}

Test(reflector, list_pages_watch_bad_stream_and_410_relist)
{
	static const fake_resp script[] = {
	    /* 0, 1: initial list in two pages */
	    {LIST("100", "tok1", CM("a", "ua", "10") "," CM("b", "ub", "11")), 0},
	    {LIST("100", "", CM("c", "uc", "12")), 0},
	    /* 2: events, a bookmark, then the server ends the stream */
	    {HDR EV("ADDED", CM("d", "ud", "101")) EV("MODIFIED", CM("a", "ua", "102"))
	         EV("DELETED", CM("b", "ub", "103")) EV("DELETED", CM("zz", "uz", "103"))
	             BOOKMARK("104"),
	     0},
	    /* 3: a stream cut in the middle of an event */
	    {HDR "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"na", 0},
	    /* 4: the resourceVersion has been compacted */
	    {HDR STATUS_EV(410, "Expired"), 0},
	    /* 5: relist: a unchanged, c modified, d gone, e new */
	    {LIST("200", "",
	          CM("a", "ua", "102") "," CM("c", "uc", "150") "," CM("e", "ue", "160")),
	     0},
	    /* 6: a watch that stays open */
	    {NULL, 1},
	};
	rfx f;
	rfx_open(&f, script, 7, 2);
	cr_assert_eq(sf_reflector_synced(f.r), 0);
	cr_assert_str_eq(sf_reflector_last_rv(f.r), "");
	cr_assert_eq(sf_reflector_start(f.r), 0);
	cr_assert_eq(sf_reflector_start(f.r), -EALREADY);
	run_to_request(&f, 7);

	const char *want[] = {
	    "ADD ns/a 10",         "ADD ns/b 11",         "ADD ns/c 12",     /* list */
	    "ADD ns/d 101",        "UPDATE ns/a 10->102", "DELETE ns/b 11",  /* watch */
	    "UPDATE ns/c 12->150", "ADD ns/e 160",        "DELETE ns/d 101", /* relist */
	};
	tl_deltas_expect(&f.rec, want, sizeof(want) / sizeof(want[0]));
	cr_assert_eq(sf_store_len(f.store), 3);
	cr_assert(sf_reflector_synced(f.r));
	cr_assert_str_eq(sf_reflector_last_rv(f.r), "200");
	cr_assert_eq(f.synced_calls, 2);
	cr_assert_eq(f.nrv, 6, "on_rv calls: %d", f.nrv);
	cr_assert_str_eq(f.rvs[0], "100");
	cr_assert_str_eq(f.rvs[4], "104");

	/* what was asked */
	req_has(&f, 0, "GET /api/v1/namespaces/ns/configmaps?");
	req_has(&f, 0, "limit=2");
	req_has(&f, 0, "labelSelector=app%3Dx");
	req_lacks(&f, 0, "continue=");
	/* a first list may come from the watch cache, as client-go's does */
	req_has(&f, 0, "resourceVersion=0&");
	req_lacks(&f, 0, "resourceVersionMatch=");
	req_has(&f, 1, "continue=tok1");
	req_lacks(&f, 1, "resourceVersion"); /* the token carries the list's version */
	req_has(&f, 2, "watch=true");
	req_has(&f, 2, "resourceVersion=100");
	req_has(&f, 2, "allowWatchBookmarks=true");
	req_has(&f, 2, "labelSelector=app%3Dx");
	const char *q = strstr(fakesrv_request(f.srv, 2), "timeoutSeconds=");
	cr_assert_not_null(q);
	long to = strtol(q + 15, NULL, 10);
	cr_assert(to >= 5 && to < 8, "timeoutSeconds %ld outside [5,8)", to);
	req_has(&f, 3, "resourceVersion=104"); /* from the bookmark */
	req_has(&f, 4, "resourceVersion=104"); /* re-watch after the bad stream */
	req_has(&f, 5, "limit=2"); /* the first list came in pages: no watch cache there */
	req_lacks(&f, 5, "continue=");
	req_lacks(&f, 5, "watch=");
	/* a relist after a watch's 410: not older than what the cache has seen */
	req_has(&f, 5, "resourceVersion=104&resourceVersionMatch=NotOlderThan");
	req_has(&f, 6, "resourceVersion=200");

	/* the cut stream was logged as an error naming the resource */
	int found = 0;
	for (int i = 0; i < nlog; i++) {
		if (strstr(log_lines[i], "\"cache.reflector\"") &&
		    strstr(log_lines[i], "malformed watch stream") &&
		    strstr(log_lines[i], "configmaps") && strstr(log_lines[i], "\"error\""))
			found++;
	}
	cr_assert_eq(found, 1, "expected one malformed-stream error line (%d lines logged)", nlog);

	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.lists, 2);
	cr_assert_eq(st.list_pages, 3);
	cr_assert_eq(st.relists, 1);
	cr_assert_eq(st.watches, 4);
	cr_assert_eq(st.events, 4);
	cr_assert_eq(st.bookmarks, 1);
	cr_assert_eq(st.gone, 1);
	cr_assert_eq(st.decode_errors, 1);
	cr_assert_eq(st.deleted_on_relist, 1);
	rfx_close(&f);
}

static int want_synced;

static int synced_n(void *ud)
{
	rfx *f = ud;
	return f->synced_calls >= want_synced;
}

/* A leader's freshness by time: a list that may come from the watch cache
 * (resourceVersion=0) or that was asked before `since` does not count, one
 * quorum relist is made (however often it is asked for), and after it the
 * reflector holds. */
Test(reflector, want_fresh_relists_once_then_holds)
{
	static const fake_resp script[] = {
	    {LIST("10", "", CM("a", "ua", "9")), 0},
	    {NULL, 1}, /* the watch hangs: no event will bring anything newer */
	    {LIST("30", "", CM("a", "ua", "25")), 0},
	    {NULL, 1},
	    {LIST("40", "", CM("a", "ua", "25")), 0},
	    {NULL, 1},
	};
	rfx f;
	rfx_open(&f, script, 6, 0);
	cr_assert_eq(sf_reflector_start(f.r), 0);
	want_synced = 1;
	cr_assert_eq(tl_run_until_fn(&f.loop, synced_n, &f, 5000), 0);
	/* the first list (resourceVersion=0) may be the watch cache's past */
	req_has(&f, 0, "resourceVersion=0");
	cr_assert_eq(sf_reflector_list_asked_ns(f.r), 0);
	cr_assert_eq(sf_reflector_want_fresh(f.r, 1), 0, "a watch-cache list counted as fresh");
	want_synced = 2;
	cr_assert_eq(tl_run_until_fn(&f.loop, synced_n, &f, 5000), 0, "no relist");
	req_lacks(&f, 2, "resourceVersion"); /* a quorum read */
	req_lacks(&f, 2, "watch=");
	cr_assert_eq(sf_reflector_want_fresh(f.r, 1), 1);
	int64_t since = sf_mono_ns();
	cr_assert_eq(sf_reflector_want_fresh(f.r, since), 0);
	cr_assert_eq(sf_reflector_want_fresh(f.r, since), 0);
	want_synced = 3;
	cr_assert_eq(tl_run_until_fn(&f.loop, synced_n, &f, 5000), 0, "no relist");
	req_lacks(&f, 4, "resourceVersion");
	cr_assert_geq(sf_reflector_list_asked_ns(f.r), since);
	cr_assert_eq(sf_reflector_want_fresh(f.r, since), 1);
	cr_assert_str_eq(sf_reflector_last_rv(f.r), "40");
	cr_assert_eq(f.synced_calls, 3, "asking twice made two relists");
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.quorum_lists, 2);
	rfx_close(&f);
}

static int has_b(void *ud)
{
	rfx *f = ud;
	return sf_store_get_ns(f->store, "ns", "b") != NULL;
}

/* A watch that shows nothing, not even a bookmark, for the progress
 * timeout is ended and started again (on a fresh connection). */
Test(reflector, a_silent_watch_is_restarted_by_its_watchdog)
{
	static const fake_resp script[] = {
	    {LIST("10", "", CM("a", "ua", "9")), 0},
	    {NULL, 1}, /* a watch that never says anything */
	    {HDR EV("ADDED", CM("b", "ub", "11")), 0},
	    {NULL, 1},
	};
	rfx_progress_ms = 300;
	rfx f;
	rfx_open(&f, script, 4, 0);
	rfx_progress_ms = 0;
	cr_assert_eq(sf_reflector_start(f.r), 0);
	cr_assert_eq(tl_run_until_fn(&f.loop, has_b, &f, 5000), 0, "the silent watch stayed");
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.watchdog_restarts, 1);
	cr_assert_geq(st.watches, 2);
	rfx_close(&f);
}

Test(reflector, expired_continue_token_restarts_the_list)
{
	static const fake_resp script[] = {
	    {LIST("300", "tok1", CM("a", "ua", "10") "," CM("b", "ub", "11")), 0},
	    {STATUS_RESP(410, "Gone", "Expired"), 0},
	    /* from the first page again: b has gone meanwhile */
	    {LIST("310", "tok2", CM("a", "ua", "10")), 0},
	    {LIST("310", "", CM("c", "uc", "305")), 0},
	    {NULL, 1},
	};
	rfx f;
	rfx_open(&f, script, 5, 2);
	cr_assert_eq(sf_reflector_start(f.r), 0);
	run_to_request(&f, 5);
	req_has(&f, 1, "continue=tok1");
	req_lacks(&f, 2, "continue=");
	req_has(&f, 3, "continue=tok2");
	req_has(&f, 4, "watch=true");
	req_has(&f, 4, "resourceVersion=310");
	/* b was listed by the abandoned pass, then not by the complete one */
	const char *want[] = {"ADD ns/a 10", "ADD ns/b 11", "ADD ns/c 305", "DELETE ns/b 11"};
	tl_deltas_expect(&f.rec, want, 4);
	cr_assert_eq(f.synced_calls, 1);
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.gone, 1);
	cr_assert_eq(st.lists, 1);
	cr_assert_eq(st.backoffs, 0, "one 410 is retried at once");
	rfx_close(&f);
}

Test(reflector, failures_back_off_and_error_events_rewatch)
{
	static const fake_resp script[] = {
	    /* 0, 1: two failed lists: 20 ms then 40 ms of backoff */
	    {STATUS_RESP(500, "Internal Server Error", "InternalError"), 0},
	    {STATUS_RESP(503, "Service Unavailable", "ServiceUnavailable"), 0},
	    {LIST("5", "", CM("a", "ua", "5")), 0},
	    /* 3: an ERROR event that is not 410: re-watch from the same RV after 80 ms */
	    {HDR EV("MODIFIED", CM("a", "ua", "6")) STATUS_EV(500, "InternalError"), 0},
	    /* 4: a watch that ends at once without events: 160 ms */
	    {HDR, 0},
	    /* 5: HTTP 410 on the watch: relist at once */
	    {STATUS_RESP(410, "Gone", "Gone"), 0},
	    {LIST("9", "", CM("a", "ua", "6")), 0},
	    {NULL, 1},
	};
	rfx f;
	rfx_open(&f, script, 8, 0);
	int64_t t0 = sf_mono_ns();
	cr_assert_eq(sf_reflector_start(f.r), 0);
	run_to_request(&f, 8);
	int64_t ms = (sf_mono_ns() - t0) / SF_NSEC_PER_MSEC;
	cr_assert_geq(ms, 20 + 40 + 80 + 160, "retries came after %lld ms", (long long)ms);
	req_has(&f, 3, "resourceVersion=5");
	req_has(&f, 4, "resourceVersion=6"); /* not a relist */
	req_has(&f, 5, "resourceVersion=6");
	req_lacks(&f, 6, "watch=");
	req_has(&f, 7, "resourceVersion=9");
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.backoffs, 4);
	cr_assert_eq(st.errors, 4);
	cr_assert_eq(st.gone, 1);
	cr_assert_eq(st.lists, 2);
	cr_assert_eq(st.watches, 4);
	const char *want[] = {"ADD ns/a 5", "UPDATE ns/a 5->6"};
	tl_deltas_expect(&f.rec, want, 2);
	rfx_close(&f);
}

Test(reflector, stop_from_a_handler_ends_everything)
{
	static const fake_resp script[] = {
	    {LIST("5", "", CM("a", "ua", "5") "," CM("b", "ub", "5")), 0},
	    {NULL, 1},
	};
	rfx f;
	rfx_open(&f, script, 2, 0);
	f.stop_in_handler = 1;
	cr_assert_eq(sf_reflector_start(f.r), 0);
	cr_assert_eq(tl_run_until(&f.loop, &f.stopped, 5000), 0);
	/* the list was abandoned after the first object: no sync, no watch */
	cr_assert_eq(f.rec.n, 1);
	cr_assert_eq(sf_reflector_synced(f.r), 0);
	cr_assert_eq(f.synced_calls, 0);
	cr_assert_eq(sf_reflector_start(f.r), -ESHUTDOWN);
	cr_assert_eq(sf_reflector_relist(f.r), -ESHUTDOWN);
	uv_run(&f.loop, UV_RUN_NOWAIT);
	cr_assert_eq(fakesrv_requests(f.srv), 1);
	rfx_close(&f);
}

Test(reflector, stop_during_backoff)
{
	static const fake_resp script[] = {
	    {STATUS_RESP(500, "Internal Server Error", "InternalError"), 0},
	};
	rfx f;
	rfx_open(&f, script, 1, 0);
	cr_assert_eq(sf_reflector_start(f.r), 0);
	run_to_request(&f, 1);
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.backoffs, 1);
	sf_reflector_stop(f.r, rfx_stopped, &f);
	cr_assert_eq(f.stopped, 0, "stop completes from the loop");
	cr_assert_eq(tl_run_until(&f.loop, &f.stopped, 5000), 0);
	cr_assert_eq(fakesrv_requests(f.srv), 1, "no retry after stop");
	rfx_close(&f);
}

Test(reflector, forced_relist_and_rewatch_hook)
{
	static const fake_resp script[] = {
	    {LIST("50", "", CM("a", "ua", "40") "," CM("b", "ub", "41")), 0},
	    {NULL, 1}, /* 1: watch, interrupted by the relist */
	    {LIST("60", "", CM("a", "ua", "40")), 0},
	    {NULL, 1}, /* 3: watch from 60, interrupted by the hook */
	    {NULL, 1}, /* 4: watch from the old RV */
	};
	rfx f;
	rfx_open(&f, script, 5, 0);
	cr_assert_eq(sf_reflector_relist(f.r), -EAGAIN, "not started");
	cr_assert_eq(sf_reflector_start(f.r), 0);
	run_to_request(&f, 2);
	cr_assert_eq(sf_reflector_relist(f.r), 0);
	run_to_request(&f, 4);
	req_lacks(&f, 2, "watch=");
	req_lacks(&f, 2, "resourceVersion"); /* forced: a quorum read */
	req_has(&f, 3, "resourceVersion=60");
	const char *want[] = {"ADD ns/a 40", "ADD ns/b 41", "DELETE ns/b 41"};
	tl_deltas_expect(&f.rec, want, 3);
	cr_assert_eq(sf_reflector_rewatch_from(f.r, "7"), 0);
	run_to_request(&f, 5);
	req_has(&f, 4, "resourceVersion=7");
	cr_assert_str_eq(sf_reflector_last_rv(f.r), "60", "the hook does not move last_rv back");
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.relists, 1);
	cr_assert_eq(st.errors, 0, "cancelled watches are not errors");
	rfx_close(&f);
}

Test(reflector, repeated_410_backs_off)
{
	static const fake_resp script[] = {
	    {LIST("50", "", CM("a", "ua", "40")), 0},
	    {HDR STATUS_EV(410, "Expired"), 0},
	    {LIST("51", "", CM("a", "ua", "40")), 0},
	    /* a second 410 straight after a fresh list: something is off, wait */
	    {STATUS_RESP(410, "Gone", "Expired"), 0},
	    {LIST("52", "", CM("a", "ua", "40")), 0},
	    {NULL, 1},
	};
	rfx f;
	rfx_open(&f, script, 6, 0);
	cr_assert_eq(sf_reflector_start(f.r), 0);
	run_to_request(&f, 6);
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.gone, 2);
	cr_assert_eq(st.relists, 2);
	cr_assert_eq(st.lists, 3);
	cr_assert_eq(st.backoffs, 1);
	req_has(&f, 5, "resourceVersion=52");
	cr_assert_eq(f.rec.n, 1, "unchanged object re-listed: %s", f.rec.lines[1]);
	rfx_close(&f);
}

static void relist_on_b(void *ud, sf_delta_type t, sf_obj *old, sf_obj *new_obj)
{
	rfx *f = ud;
	tl_deltas_record(&f->rec, t, old, new_obj);
	if (new_obj && strcmp(new_obj->name, "b") == 0 && t == SF_DELTA_ADD)
		cr_assert_eq(sf_reflector_relist(f->r), 0);
}

Test(reflector, relist_requested_from_inside_an_event)
{
	static const fake_resp script[] = {
	    {LIST("50", "", CM("a", "ua", "40")), 0},
	    /* the handler asks for a relist on b: c must not be applied */
	    {HDR EV("ADDED", CM("b", "ub", "51")) EV("ADDED", CM("c", "uc", "52")), 0},
	    {LIST("60", "", CM("a", "ua", "40") "," CM("b", "ub", "51")), 0},
	    {NULL, 1},
	};
	rfx f;
	rfx_open(&f, script, 4, 0);
	sf_store_set_handler(f.store, relist_on_b, &f);
	cr_assert_eq(sf_reflector_start(f.r), 0);
	run_to_request(&f, 4);
	const char *want[] = {"ADD ns/a 40", "ADD ns/b 51"};
	tl_deltas_expect(&f.rec, want, 2);
	req_lacks(&f, 2, "watch=");
	req_has(&f, 3, "resourceVersion=60");
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.events, 1);
	cr_assert_eq(st.relists, 1);
	cr_assert_eq(st.errors, 0);
	rfx_close(&f);
}

Test(reflector, replayed_stale_events_are_skipped)
{
	/* A watch from an old resourceVersion answered by a replay of history
	 * (the API server's watch cache does that) must not move objects
	 * backwards; LIST items without kind/apiVersion are not updates. */
	static const fake_resp script[] = {
	    {HDR "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{"
	         "\"resourceVersion\":\"50\"},\"items\":[{\"metadata\":{\"name\":\"a\","
	         "\"namespace\":\"ns\",\"uid\":\"ua\",\"resourceVersion\":\"40\"}}]}",
	     0},
	    {HDR EV("ADDED", CM("a", "ua", "30")) EV("MODIFIED", CM("a", "ua", "40"))
	         EV("ADDED", CM("b", "ub", "35")) EV("MODIFIED", CM("a", "ua", "45")),
	     0},
	    {NULL, 1},
	};
	rfx f;
	rfx_open(&f, script, 3, 0);
	cr_assert_eq(sf_reflector_start(f.r), 0);
	cr_assert_eq(sf_reflector_rewatch_from(f.r, "20"), 0);
	run_to_request(&f, 3);
	req_has(&f, 1, "resourceVersion=20");
	req_has(&f, 2, "resourceVersion=45");
	const char *want[] = {"ADD ns/a 40", "ADD ns/b 35", "UPDATE ns/a 40->45"};
	tl_deltas_expect(&f.rec, want, 3);
	cr_assert_str_eq(sf_reflector_last_rv(f.r), "50");
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.stale_events, 1);
	cr_assert_eq(st.events, 3);
	rfx_close(&f);
}

/* ---- relists from the watch cache, quorum fallbacks, WatchList ---- */

#define TOO_LARGE_RESP                                                                             \
	"HTTP/1.1 504 Gateway Timeout\r\nContent-Type: application/json\r\nConnection: "           \
	"close\r\n\r\n"                                                                            \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"Too "     \
	"large resource version: 20, current: "                                                    \
	"15\",\"reason\":\"Timeout\",\"details\":{\"causes\":"                                     \
	"[{\"reason\":\"ResourceVersionTooLarge\",\"message\":\"Too large resource "               \
	"version\"}],\"retryAfterSeconds\":1},\"code\":504}"

/* A relist after a watch's 410 is not older than the last version seen,
 * and unpaged (client-go: a paged list would bypass the watch cache); a
 * 410 or "too large resource version" on such a list falls back to a
 * quorum list at once, and the relist after that is served from the
 * cache again. */
Test(reflector, relists_come_from_the_watch_cache_with_quorum_fallbacks)
{
	static const fake_resp script[] = {
	    {LIST("10", "", CM("a", "ua", "9")), 0},
	    {HDR EV("ADDED", CM("b", "ub", "11")) STATUS_EV(410, "Expired"), 0},
	    /* 2: not older than 11: expired too */
	    {STATUS_RESP(410, "Gone", "Expired"), 0},
	    {LIST("20", "", CM("a", "ua", "9") "," CM("b", "ub", "11")), 0},
	    {HDR EV("MODIFIED", CM("a", "ua", "21")) STATUS_EV(410, "Expired"), 0},
	    /* 5: not older than 21: the cache is behind */
	    {TOO_LARGE_RESP, 0},
	    {LIST("30", "", CM("a", "ua", "21")), 0},
	    {HDR EV("MODIFIED", CM("a", "ua", "31")) STATUS_EV(410, "Expired"), 0},
	    {LIST("40", "", CM("a", "ua", "31")), 0},
	    {NULL, 1},
	};
	rfx f;
	rfx_open(&f, script, 10, 0);
	cr_assert_eq(sf_reflector_start(f.r), 0);
	run_to_request(&f, 10);
	req_has(&f, 0, "resourceVersion=0&");
	req_has(&f, 0, "limit=500"); /* the watch cache ignores it; etcd pages */
	req_has(&f, 1, "resourceVersion=10");
	req_has(&f, 2, "resourceVersion=11&resourceVersionMatch=NotOlderThan");
	req_lacks(&f, 2, "limit=");
	req_lacks(&f, 2, "watch=");
	req_lacks(&f, 3, "resourceVersion"); /* quorum, after the 410 */
	req_has(&f, 3, "limit=500");
	req_has(&f, 4, "watch=true");
	req_has(&f, 4, "resourceVersion=20");
	req_has(&f, 5, "resourceVersion=21&resourceVersionMatch=NotOlderThan");
	req_lacks(&f, 6, "resourceVersion"); /* quorum, after too large */
	req_has(&f, 7, "resourceVersion=30");
	req_has(&f, 8, "resourceVersion=31&resourceVersionMatch=NotOlderThan");
	req_has(&f, 9, "resourceVersion=40");
	const char *want[] = {"ADD ns/a 9", "ADD ns/b 11", "UPDATE ns/a 9->21", "DELETE ns/b 11",
	                      "UPDATE ns/a 21->31"};
	tl_deltas_expect(&f.rec, want, 5);
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.lists, 4);
	cr_assert_eq(st.quorum_lists, 2);
	cr_assert_eq(st.backoffs, 0, "a quorum fallback is not delayed");
	rfx_close(&f);
}

/* WatchList: the initial events go into a replace pass, the informer is
 * synced only at the initial-events-end bookmark (whose version is the
 * first one reported), and the stream goes on as the watch. A relist
 * streams from the last version seen; a 410 on that falls back to a
 * consistent stream (no resourceVersion), whose end deletes what it did
 * not contain. */
Test(reflector, watch_list_syncs_at_its_end_bookmark_and_replaces)
{
	static const fake_resp script[] = {
	    {HDR EV("ADDED", CM("a", "ua", "7")) EV("ADDED", CM("b", "ub", "5")) END_BOOKMARK("10")
	         EV("MODIFIED", CM("a", "ua", "11")),
	     0},
	    /* 1: the plain watch after the stream ended */
	    {HDR STATUS_EV(410, "Expired"), 0},
	    /* 2: the WatchList relist from 11 */
	    {STATUS_RESP(410, "Gone", "Expired"), 0},
	    /* 3: consistent: a unchanged, c new, b gone */
	    {HDR EV("ADDED", CM("c", "uc", "12")) EV("ADDED", CM("a", "ua", "11"))
	         END_BOOKMARK("20"),
	     0},
	    {NULL, 1},
	};
	rfx_watch_list = 1;
	rfx f;
	rfx_open(&f, script, 5, 0);
	rfx_watch_list = 0;
	cr_assert_eq(sf_reflector_start(f.r), 0);
	run_to_request(&f, 5);
	req_has(&f, 0, "watch=true");
	req_has(&f, 0, "sendInitialEvents=true");
	req_has(&f, 0, "resourceVersionMatch=NotOlderThan");
	req_has(&f, 0, "allowWatchBookmarks=true");
	req_lacks(&f, 0, "resourceVersion="); /* consistent */
	req_lacks(&f, 0, "limit=");
	req_has(&f, 1, "resourceVersion=11");
	req_lacks(&f, 1, "sendInitialEvents");
	req_has(&f, 2, "sendInitialEvents=true");
	req_has(&f, 2, "resourceVersion=11&resourceVersionMatch=NotOlderThan");
	req_has(&f, 3, "sendInitialEvents=true");
	req_lacks(&f, 3, "resourceVersion=");
	req_has(&f, 4, "resourceVersion=20");
	req_lacks(&f, 4, "sendInitialEvents");
	const char *want[] = {"ADD ns/a 7", "ADD ns/b 5", "UPDATE ns/a 7->11", "ADD ns/c 12",
	                      "DELETE ns/b 5"};
	tl_deltas_expect(&f.rec, want, 5);
	cr_assert_eq(f.synced_calls, 2);
	cr_assert_eq(f.len_at_sync[0], 2, "synced before the end bookmark");
	/* initial events are not in resourceVersion order: only the end
	 * bookmark's version is reported */
	cr_assert_eq(f.nrv, 3, "on_rv calls: %d", f.nrv);
	cr_assert_str_eq(f.rvs[0], "10");
	cr_assert_str_eq(f.rvs[1], "11");
	cr_assert_str_eq(f.rvs[2], "20");
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.lists, 2);
	cr_assert_eq(st.watch_lists, 2);
	cr_assert_eq(st.quorum_lists, 2);
	cr_assert_eq(st.list_pages, 0);
	cr_assert_eq(st.deleted_on_relist, 1);
	cr_assert_eq(st.watch_list_fallbacks, 0);
	rfx_close(&f);
}

/* A server that refuses sendInitialEvents (WatchList feature gate off:
 * 422 Invalid) gets LIST + WATCH from then on. */
Test(reflector, watch_list_refused_falls_back_to_list_and_watch)
{
	static const fake_resp script[] = {
	    {STATUS_RESP(422, "Unprocessable Entity", "Invalid"), 0},
	    {LIST("10", "", CM("a", "ua", "9")), 0},
	    {HDR STATUS_EV(410, "Expired"), 0},
	    {LIST("20", "", CM("a", "ua", "9")), 0},
	    {NULL, 1},
	};
	rfx_watch_list = 1;
	rfx f;
	rfx_open(&f, script, 5, 0);
	rfx_watch_list = 0;
	cr_assert_eq(sf_reflector_start(f.r), 0);
	run_to_request(&f, 5);
	req_has(&f, 0, "sendInitialEvents=true");
	req_lacks(&f, 1, "watch=");
	req_has(&f, 1, "resourceVersion=0");
	req_has(&f, 2, "resourceVersion=10");
	req_lacks(&f, 2, "sendInitialEvents");
	req_lacks(&f, 3, "watch=");
	req_has(&f, 3, "resourceVersion=10&resourceVersionMatch=NotOlderThan");
	cr_assert_eq(f.synced_calls, 2);
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.watch_list_fallbacks, 1);
	cr_assert_eq(st.watch_lists, 0);
	cr_assert_eq(st.backoffs, 0);
	rfx_close(&f);
}

/* A stream that ends before its end bookmark is not a sync (a server that
 * ignores sendInitialEvents never sends one): LIST + WATCH instead. */
Test(reflector, watch_list_without_end_bookmark_is_not_a_sync)
{
	static const fake_resp script[] = {
	    {HDR EV("ADDED", CM("a", "ua", "5")) BOOKMARK("9"), 0},
	    {LIST("10", "", CM("a", "ua", "5") "," CM("b", "ub", "6")), 0},
	    {NULL, 1},
	};
	rfx_watch_list = 1;
	rfx f;
	rfx_open(&f, script, 3, 0);
	rfx_watch_list = 0;
	cr_assert_eq(sf_reflector_start(f.r), 0);
	run_to_request(&f, 3);
	req_lacks(&f, 1, "watch=");
	req_has(&f, 2, "resourceVersion=10");
	cr_assert_eq(f.synced_calls, 1);
	cr_assert_eq(f.len_at_sync[0], 2);
	cr_assert_str_eq(f.rvs[0], "10", "the stream's versions were taken");
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.watch_list_fallbacks, 1);
	cr_assert_eq(st.lists, 1);
	rfx_close(&f);
}

/* With WatchList, a freshness wait is met by a stream asked without a
 * resourceVersion after `since` (consistent: the server takes a quorum
 * version), never by one from the last version seen. */
Test(reflector, watch_list_freshness_is_a_consistent_stream)
{
	static const fake_resp script[] = {
	    {HDR EV("ADDED", CM("a", "ua", "5")) END_BOOKMARK("10"), 0},
	    {HDR STATUS_EV(410, "Expired"), 0}, /* 1: watch from 10 */
	    /* 2: a relist from the last version: not fresh */
	    {HDR EV("ADDED", CM("a", "ua", "5")) END_BOOKMARK("15"), 0},
	    {NULL, 1}, /* 3: watch from 15, until the freshness wait */
	    {HDR EV("ADDED", CM("a", "ua", "5")) END_BOOKMARK("30"), 0},
	    {NULL, 1},
	};
	rfx_watch_list = 1;
	rfx f;
	rfx_open(&f, script, 6, 0);
	rfx_watch_list = 0;
	int64_t t0 = sf_mono_ns();
	cr_assert_eq(sf_reflector_start(f.r), 0);
	run_to_request(&f, 4);
	req_has(&f, 2, "resourceVersion=10&resourceVersionMatch=NotOlderThan");
	/* the first stream was consistent, the relist was not */
	cr_assert_geq(sf_reflector_list_asked_ns(f.r), t0);
	int64_t since = sf_mono_ns();
	cr_assert_lt(sf_reflector_list_asked_ns(f.r), since);
	cr_assert_eq(sf_reflector_want_fresh(f.r, since), 0);
	run_to_request(&f, 6);
	req_has(&f, 4, "sendInitialEvents=true");
	req_lacks(&f, 4, "resourceVersion=");
	req_has(&f, 5, "resourceVersion=30");
	cr_assert_geq(sf_reflector_list_asked_ns(f.r), since);
	cr_assert_eq(sf_reflector_want_fresh(f.r, since), 1);
	cr_assert_eq(f.synced_calls, 3);
	rfx_close(&f);
}

/* Only a refusal of the parameters (400/422) turns WatchList off: a 404
 * (a CRD not served yet) or a 5xx would meet a LIST as well, and is
 * retried as a WatchList after the backoff. */
Test(reflector, watch_list_errors_other_than_a_refusal_are_retried)
{
	static const fake_resp script[] = {
	    {STATUS_RESP(404, "Not Found", "NotFound"), 0},
	    {STATUS_RESP(503, "Service Unavailable", "ServiceUnavailable"), 0},
	    {HDR EV("ADDED", CM("a", "ua", "5")) END_BOOKMARK("10"), 0},
	    {NULL, 1},
	};
	rfx_watch_list = 1;
	rfx f;
	rfx_open(&f, script, 4, 0);
	rfx_watch_list = 0;
	cr_assert_eq(sf_reflector_start(f.r), 0);
	run_to_request(&f, 4);
	for (int i = 0; i < 3; i++)
		req_has(&f, i, "sendInitialEvents=true");
	req_has(&f, 3, "resourceVersion=10");
	sf_reflector_stats st;
	sf_reflector_stats_get(f.r, &st);
	cr_assert_eq(st.watch_list_fallbacks, 0);
	cr_assert_eq(st.backoffs, 2);
	cr_assert_eq(st.watch_lists, 1);
	cr_assert_eq(f.synced_calls, 1);
	rfx_close(&f);
}
