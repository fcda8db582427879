/*
 * test_kinds.c - the component-kind registry against a scripted server:
 * a kind an owner uses is resolved through discovery and watched, and
 * reported (on_ready) once its informer has synced; owners share kinds
 * and replace what they use; a kind nobody uses has its informer stopped
 * after idle_ms while its entry stays; discovery's three outcomes (served,
 * not served on a 404, cannot say on another failure), sf_kind_suspect's
 * re-ask at most every second, and "not served" confirmed only by two
 * answers at least 5 s apart.
 *
 * The registry's requests are sequential here (one kind at a time:
 * discovery, then its informer's WatchList, then the watch), so one
 * fakesrv script per test gives each request its answer.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "fakeapi.h"
#include "fakesrv.h"
#include "steadfast/buf.h"
#include "steadfast/kinds.h"
#include "steadfast/log.h"
#include "steadfast/prom.h"
#include "tl.h"

#define JOBS_DISCOVERY                                                                             \
	HDR "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":\"batch/v1\","   \
	    "\"resources\":[{\"name\":\"jobs\",\"namespaced\":true,\"kind\":\"Job\"},"             \
	    "{\"name\":\"jobs/status\",\"namespaced\":true,\"kind\":\"Job\"}]}"
#define WIDGETS_DISCOVERY                                                                          \
	HDR "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":"                \
	    "\"example.com/v1\",\"resources\":[{\"name\":\"widgets\",\"namespaced\":true,"         \
	    "\"kind\":\"Widget\"}]}"
/* kube-apiserver's answer for a group version it does not serve */
#define PLAIN_404                                                                                  \
	"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: "        \
	"close\r\n\r\n404 page not found\n"
#define JOB(name, uid, rv)                                                                         \
	"{\"kind\":\"Job\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"" name             \
	"\",\"namespace\":\"ns\",\"uid\":\"" uid "\",\"resourceVersion\":\"" rv "\"}}"

typedef struct kfx {
	uv_loop_t loop;
	fakesrv *srv;
	sf_kube_config *cfg;
	sf_kube_client *c;
	sf_kinds *ks;
	int ready_calls;
	sf_kind *ready_kind;
	int adds; /* the handler of the options saw these */
} kfx;

static void on_ready(void *ud, sf_kind *k)
{
	kfx *f = ud;
	f->ready_calls++;
	f->ready_kind = k;
	cr_assert(sf_kind_ready(k), "reported before it was ready");
}

static void on_add(void *ud, sf_obj *o)
{
	(void)o;
	((kfx *)ud)->adds++;
}

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

static void kfx_open(kfx *f, const fake_resp *script, int n, long idle_ms)
{
	memset(f, 0, sizeof(*f));
	tl_log_quiet();
	cr_assert_eq(uv_loop_init(&f->loop), 0);
	f->srv = fakesrv_start(&f->loop, script, n);
	sf_kube_client_opts co = {.qps = -1, .max_retries_429 = -1};
	f->c = tl_fakesrv_client(&f->loop, f->srv, &co, &f->cfg);
	static const sf_informer_handler h = {.on_add = on_add};
	const char *labels[] = {"app", NULL};
	sf_kinds_opts o = {.ns = "ns",
	                   .label_selector = "app=x",
	                   .label_indexes = labels,
	                   .handler = &h,
	                   .handler_ud = f,
	                   .on_ready = on_ready,
	                   .ud = f,
	                   .idle_ms = idle_ms};
	cr_assert_eq(sf_kinds_new(&f->loop, f->c, &o, &f->ks), 0);
}

static void kfx_close(kfx *f)
{
	int stopped = 0;
	sf_kinds_stop(f->ks, set_flag, &stopped);
	cr_assert_eq(tl_run_until(&f->loop, &stopped, 5000), 0, "the registry did not stop");
	sf_kinds_free(f->ks);
	int closed = 0;
	sf_kube_client_close(f->c, set_flag, &closed);
	fakesrv_stop(f->srv);
	cr_assert_eq(tl_run_until(&f->loop, &closed, 5000), 0);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	sf_kube_config_free(f->cfg);
	cr_assert_eq(uv_loop_close(&f->loop), 0);
}

static int never(void *ud)
{
	(void)ud;
	return 0;
}

static void run_for(kfx *f, long ms)
{
	tl_run_until_fn(&f->loop, never, NULL, ms);
}

typedef struct state_is {
	const sf_kind *k;
	sf_kind_state want;
} state_is;

static int state_reached(void *ud)
{
	state_is *s = ud;
	return sf_kind_get_state(s->k) == s->want;
}

static void wait_state(kfx *f, const sf_kind *k, sf_kind_state want)
{
	state_is s = {k, want};
	cr_assert_eq(tl_run_until_fn(&f->loop, state_reached, &s, 5000), 0, "state %d, not %d (%s)",
	             sf_kind_get_state(k), want, sf_kind_error(k));
}

static int no_informer(void *ud)
{
	return sf_kind_informer(ud) == NULL;
}

/* The owners of k, sorted, comma-joined. */
typedef struct owners_buf {
	char *v[8];
	size_t n;
} owners_buf;

static void collect_owner(void *ud, const char *owner)
{
	owners_buf *b = ud;
	cr_assert_lt(b->n, 8);
	b->v[b->n++] = strdup(owner);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *owners_of(kfx *f, const sf_kind *k, char *buf, size_t cap)
{
	owners_buf b = {.n = 0};
	sf_kinds_each_owner(f->ks, k, collect_owner, &b);
	qsort(b.v, b.n, sizeof(b.v[0]), cmp_str);
	buf[0] = '\0';
	size_t len = 0;
	for (size_t i = 0; i < b.n; i++) {
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : "", b.v[i]);
		free(b.v[i]);
	}
	return buf;
}

static const char *const JOB_PAIR[] = {"batch/v1", "Job"};

Test(kinds, a_used_kind_is_resolved_watched_and_reported_once_synced)
{
	static const fake_resp script[] = {
	    {JOBS_DISCOVERY, 0},
	    {HDR EV("ADDED", JOB("a", "ua", "5")) END_BOOKMARK("6"), 0},
	    {NULL, 1},
	};
	kfx f;
	kfx_open(&f, script, 3, 0);
	cr_assert_eq(sf_kinds_track(f.ks, "ns/aw1", JOB_PAIR, 1), 0);
	sf_kind *k = sf_kinds_get(f.ks, "batch/v1", "Job");
	cr_assert_not_null(k);
	cr_assert_eq(sf_kinds_count(f.ks), 1);
	cr_assert_eq(sf_kind_get_state(k), SF_KIND_RESOLVING);
	cr_assert_null(sf_kind_gvr(k));
	cr_assert_null(sf_kind_informer(k));
	cr_assert_eq(sf_kind_started_ms(k), 0);

	cr_assert_eq(tl_run_until(&f.loop, &f.ready_calls, 5000), 0, "never reported ready");
	cr_assert_eq(f.ready_kind, k);
	cr_assert_eq(sf_kind_get_state(k), SF_KIND_SERVED);
	cr_assert_str_empty(sf_kind_error(k));
	const sf_gvr *g = sf_kind_gvr(k);
	cr_assert_not_null(g);
	cr_assert_str_eq(g->group, "batch");
	cr_assert_str_eq(g->version, "v1");
	cr_assert_str_eq(g->resource, "jobs");
	cr_assert(g->namespaced);
	cr_assert_not_null(sf_kind_informer(k));
	cr_assert(sf_kind_ready(k));
	cr_assert_gt(sf_kind_started_ms(k), 0);
	cr_assert_str_eq(sf_kind_api_version(k), "batch/v1");
	cr_assert_str_eq(sf_kind_name(k), "Job");
	/* the informer is the one the options describe */
	cr_assert_eq(f.adds, 1, "the options' handler saw %d adds", f.adds);
	sf_store *st = sf_informer_store(sf_kind_informer(k));
	cr_assert_not_null(sf_store_get(st, "ns/a"));
	const char *q = fakesrv_request(f.srv, 0);
	cr_assert(strncmp(q, "GET /apis/batch/v1 ", 19) == 0, "discovery: %.60s", q);
	q = fakesrv_request(f.srv, 1);
	cr_assert(strncmp(q, "GET /apis/batch/v1/namespaces/ns/jobs?", 38) == 0, "%.80s", q);
	cr_assert_not_null(strstr(q, "labelSelector=app%3Dx"), "%.200s", q);
	char buf[128];
	cr_assert_str_eq(owners_of(&f, k, buf, sizeof(buf)), "ns/aw1");

	/* the same entry for the same kind; none for a half-named one */
	cr_assert_eq(sf_kinds_get(f.ks, "batch/v1", "Job"), k);
	cr_assert_null(sf_kinds_get(f.ks, "", "Job"));
	cr_assert_null(sf_kinds_get(f.ks, "batch/v1", NULL));
	cr_assert_eq(sf_kinds_count(f.ks), 1);

	/* its cache in the metrics */
	sf_prom *p = sf_prom_new();
	cr_assert_not_null(p);
	cr_assert_eq(sf_kinds_metrics_write(f.ks, p), 0);
	sf_buf out;
	sf_buf_init(&out, 0);
	cr_assert_eq(sf_prom_render(p, &out), 0);
	cr_assert_eq(sf_buf_putc(&out, '\0'), 0);
	cr_assert_not_null(
	    strstr(out.data, "steadfast_cache_objects{group=\"batch\",resource=\"jobs\"} 1\n"),
	    "%s", out.data);
	sf_buf_free(&out);
	sf_prom_free(p);

	run_for(&f, 100);
	cr_assert_eq(f.ready_calls, 1, "reported %d times", f.ready_calls);
	kfx_close(&f);
}

Test(kinds, owners_share_a_kind_and_one_unused_for_idle_ms_stops_watching)
{
	static const fake_resp script[] = {
	    {JOBS_DISCOVERY, 0},
	    {HDR END_BOOKMARK("6"), 0},
	    {NULL, 1},
	};
	kfx f;
	kfx_open(&f, script, 3, 50);
	cr_assert_eq(sf_kinds_start(f.ks), 0);
	cr_assert_eq(sf_kinds_start(f.ks), -EALREADY);
	/* the same kind twice in one owner counts once */
	static const char *const twice[] = {"batch/v1", "Job", "batch/v1", "Job"};
	cr_assert_eq(sf_kinds_track(f.ks, "o1", JOB_PAIR, 1), 0);
	cr_assert_eq(sf_kinds_track(f.ks, "o2", twice, 2), 0);
	sf_kind *k = sf_kinds_get(f.ks, "batch/v1", "Job");
	cr_assert_eq(tl_run_until(&f.loop, &f.ready_calls, 5000), 0, "never reported ready");
	char buf[128];
	cr_assert_str_eq(owners_of(&f, k, buf, sizeof(buf)), "o1,o2");

	/* o2 still uses it: it stays watched past idle_ms and a sweep */
	sf_kinds_untrack(f.ks, "o1");
	sf_kinds_untrack(f.ks, "nobody");
	cr_assert_str_eq(owners_of(&f, k, buf, sizeof(buf)), "o2");
	run_for(&f, 1500);
	cr_assert_not_null(sf_kind_informer(k), "stopped while o2 uses it");

	/* o2 now uses nothing: the next sweep stops the informer */
	cr_assert_eq(sf_kinds_track(f.ks, "o2", NULL, 0), 0);
	cr_assert_str_empty(owners_of(&f, k, buf, sizeof(buf)));
	cr_assert_eq(tl_run_until_fn(&f.loop, no_informer, k, 3000), 0, "still watched");
	cr_assert_eq(sf_kind_started_ms(k), 0);
	cr_assert_eq(sf_kinds_get(f.ks, "batch/v1", "Job"), k, "the entry went");
	cr_assert_eq(sf_kind_get_state(k), SF_KIND_SERVED);
	cr_assert_eq(sf_kinds_count(f.ks), 1);
	kfx_close(&f);
}

/* A 404 is "not served", another failure "cannot say"; neither starts an
 * informer or is reported. sf_kind_suspect asks again, at most every
 * second; a kind served at last is watched and reported. */
Test(kinds, discovery_outcomes_and_suspect)
{
	static const fake_resp script[] = {
	    {PLAIN_404, 0},
	    {STATUS_RESP(500, "Internal Server Error", "InternalError"), 0},
	    {WIDGETS_DISCOVERY, 0},
	    {HDR END_BOOKMARK("6"), 0},
	    {NULL, 1},
	};
	kfx f;
	kfx_open(&f, script, 5, 0);
	static const char *const widget[] = {"example.com/v1", "Widget"};
	cr_assert_eq(sf_kinds_track(f.ks, "o", widget, 1), 0);
	sf_kind *k = sf_kinds_get(f.ks, "example.com/v1", "Widget");
	wait_state(&f, k, SF_KIND_NOT_SERVED);
	cr_assert_str_eq(sf_kind_error(k),
	                 "no matches for kind \"Widget\" in version \"example.com/v1\"");
	cr_assert_eq(sf_kind_confirmed_not_served(k), 0, "confirmed by one answer");
	cr_assert_null(sf_kind_gvr(k));
	cr_assert_null(sf_kind_informer(k));
	cr_assert(strncmp(fakesrv_request(f.srv, 0), "GET /apis/example.com/v1 ", 25) == 0);

	/* asked again at most every second */
	sf_kind_suspect(k);
	run_for(&f, 200);
	cr_assert_eq(fakesrv_requests(f.srv), 1, "suspect asked within a second");
	run_for(&f, 900);
	sf_kind_suspect(k);
	wait_state(&f, k, SF_KIND_UNKNOWN);
	cr_assert_eq(fakesrv_requests(f.srv), 2);
	cr_assert_not_null(strstr(sf_kind_error(k), "discovery of example.com/v1 Widget failed"),
	                   "%s", sf_kind_error(k));
	cr_assert_eq(sf_kind_confirmed_not_served(k), 0);
	cr_assert_null(sf_kind_informer(k));
	cr_assert_eq(f.ready_calls, 0);

	run_for(&f, 1100);
	sf_kind_suspect(k);
	cr_assert_eq(tl_run_until(&f.loop, &f.ready_calls, 5000), 0, "never reported ready");
	cr_assert_eq(sf_kind_get_state(k), SF_KIND_SERVED);
	cr_assert_str_empty(sf_kind_error(k));
	cr_assert_str_eq(sf_kind_gvr(k)->resource, "widgets");
	cr_assert_not_null(sf_kind_informer(k));
	cr_assert(strstr(fakesrv_request(f.srv, 3), "/apis/example.com/v1/namespaces/ns/widgets?"));
	kfx_close(&f);
}

/* "Not served" may refuse a create only when discovery said so twice, at
 * least 5 s apart. */
Test(kinds, not_served_is_confirmed_by_two_answers_five_seconds_apart)
{
	static const fake_resp script[] = {
	    {PLAIN_404, 0},
	    {PLAIN_404, 0},
	    {PLAIN_404, 0},
	};
	kfx f;
	kfx_open(&f, script, 3, 0);
	static const char *const widget[] = {"example.com/v1", "Widget"};
	cr_assert_eq(sf_kinds_track(f.ks, "o", widget, 1), 0);
	sf_kind *k = sf_kinds_get(f.ks, "example.com/v1", "Widget");
	wait_state(&f, k, SF_KIND_NOT_SERVED);
	run_for(&f, 1100);
	sf_kind_suspect(k);
	run_for(&f, 300);
	cr_assert_eq(fakesrv_requests(f.srv), 2);
	cr_assert_eq(sf_kind_get_state(k), SF_KIND_NOT_SERVED);
	cr_assert_eq(sf_kind_confirmed_not_served(k), 0, "two answers a second apart confirmed it");
	run_for(&f, 4000);
	sf_kind_suspect(k);
	run_for(&f, 300);
	cr_assert_eq(fakesrv_requests(f.srv), 3);
	cr_assert_eq(sf_kind_confirmed_not_served(k), 1, "not confirmed after 5 s");
	cr_assert_null(sf_kind_informer(k));
	cr_assert_eq(f.ready_calls, 0);
	kfx_close(&f);
}
