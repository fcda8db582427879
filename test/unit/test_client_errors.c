/*
 * test_client_errors.c - client behaviour on responses a healthy API server
 * will not produce on demand, against a scripted local HTTP server: Status
 * decoding and classification, 429 + Retry-After, a watch cut mid-event,
 * timeouts, cancellation, client close with calls in flight, rate limiting,
 * verbs that address one object refusing an empty name. Also the pure
 * helpers: paths, queries, selectors.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakesrv.h"
#include "steadfast/awapi.h"
#include "steadfast/client.h"
#include "steadfast/time.h"
#include "tl.h"

Test(client_paths, core_group_cluster_and_subresource)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_kube_path(&b, &SF_GVR_PODS, "ns1", "p1", NULL), 0);
	cr_assert_str_eq(b.data, "/api/v1/namespaces/ns1/pods/p1");
	sf_buf_reset(&b);
	cr_assert_eq(sf_kube_path(&b, &SF_GVR_PODS, NULL, NULL, NULL), 0);
	cr_assert_str_eq(b.data, "/api/v1/pods");
	sf_buf_reset(&b);
	cr_assert_eq(sf_kube_path(&b, &SF_GVR_JOBS, "x", "j", "status"), 0);
	cr_assert_str_eq(b.data, "/apis/batch/v1/namespaces/x/jobs/j/status");
	sf_buf_reset(&b);
	cr_assert_eq(sf_kube_path(&b, &SF_GVR_NAMESPACES, "ignored", "default", NULL), 0);
	cr_assert_str_eq(b.data, "/api/v1/namespaces/default");
	sf_buf_reset(&b);
	cr_assert_eq(sf_kube_path(&b, &SF_GVR_PODS, "ns", "a/b", NULL), -EINVAL);
	sf_buf_reset(&b);
	cr_assert_eq(sf_kube_path(&b, &SF_GVR_PODS, "..", "a", NULL), -EINVAL);
	sf_buf_reset(&b);
	cr_assert_eq(sf_kube_path(&b, &SF_GVR_PODS, "ns", NULL, "status"), -EINVAL);
	sf_buf_free(&b);
}

Test(client_paths, query_and_selector_encoding)
{
	sf_buf q;
	sf_buf_init(&q, 0);
	cr_assert_eq(sf_kube_query_add(&q, "labelSelector", "app in (a,b),tier!=x"), 0);
	cr_assert_eq(sf_kube_query_add(&q, "continue", "abc/=+"), 0);
	cr_assert_str_eq(
	    q.data, "labelSelector=app%20in%20%28a%2Cb%29%2Ctier%21%3Dx&continue=abc%2F%3D%2B");
	sf_buf_free(&q);
	const char *kv[] = {SF_AW_LABEL, "aw1", "app", "x"};
	sf_buf s;
	sf_buf_init(&s, 0);
	cr_assert_eq(sf_kube_label_selector(&s, kv, 2), 0);
	cr_assert_str_eq(s.data, SF_AW_LABEL "=aw1,app=x");
	sf_buf_free(&s);
}

/* ---- against the scripted server ---- */

typedef struct fx {
	uv_loop_t loop;
	fakesrv *srv;
	sf_kube_config *cfg;
	sf_kube_client *c;
} fx;

static void fx_open(fx *f, const fake_resp *script, int n, const sf_kube_client_opts *opts)
{
	cr_assert_eq(uv_loop_init(&f->loop), 0);
	f->srv = fakesrv_start(&f->loop, script, n);
	char y[512];
	snprintf(y, sizeof(y),
	         "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  "
	         "cluster:\n    server: http://127.0.0.1:%d\n"
	         "users:\n- name: u\n  user:\n    token: secret-token\ncontexts:\n- name: c\n  "
	         "context: {cluster: c, user: u}\n",
	         fakesrv_port(f->srv));
	f->c = tl_inline_client(&f->loop, y, opts, &f->cfg);
}

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

static void fx_close(fx *f)
{
	int closed = 0;
	sf_kube_client_close(f->c, set_flag, &closed);
	fakesrv_stop(f->srv);
	cr_assert_eq(tl_run_until(&f->loop, &closed, 5000), 0);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	sf_kube_config_free(f->cfg);
	cr_assert_eq(uv_loop_close(&f->loop), 0);
}

#define STATUS_RESP(code, text, reason, msg)                                                       \
	"HTTP/1.1 " #code " " text                                                                 \
	"\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"                          \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"" msg     \
	"\",\"reason\":\"" reason                                                                  \
	"\",\"details\":{\"name\":\"x\",\"kind\":\"configmaps\"},\"code\":" #code "}"

Test(client_errors, status_decoding_and_classification)
{
	static const fake_resp script[] = {
	    {STATUS_RESP(404, "Not Found", "NotFound", "configmaps \\\"x\\\" not found"), 0},
	    {STATUS_RESP(409, "Conflict", "AlreadyExists", "configmaps \\\"x\\\" already exists"),
	     0},
	    {STATUS_RESP(409, "Conflict", "Conflict", "the object has been modified"), 0},
	    {STATUS_RESP(410, "Gone", "Expired", "too old resource version: 1 (5)"), 0},
	    {STATUS_RESP(403, "Forbidden", "Forbidden",
	                 "configmaps is forbidden: User \\\"u\\\" cannot list"),
	     0},
	    {STATUS_RESP(504, "Gateway Timeout", "Timeout", "request timed out"), 0},
	    {"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nConnection: "
	     "close\r\n\r\nupstream broke\n",
	     0},
	};
	fx f;
	fx_open(&f, script, 7, NULL);
	tl_res r[7];
	memset(r, 0, sizeof(r));
	for (int i = 0; i < 7; i++) {
		/* sequential: each fake response goes to the next connection */
		cr_assert_eq(
		    sf_kube_get(f.c, &SF_GVR_CONFIGMAPS, "ns", "x", tl_res_cb, &r[i], NULL), 0);
		tl_wait(&f.loop, &r[i], 5000);
	}
	cr_assert_eq(r[0].http_status, 404);
	cr_assert_str_eq(r[0].reason, "NotFound");
	cr_assert_str_eq(r[0].message, "configmaps \"x\" not found");
	cr_assert_str_eq(r[1].reason, "AlreadyExists");
	cr_assert_str_eq(r[2].reason, "Conflict");
	cr_assert_eq(r[3].http_status, 410);
	cr_assert_str_eq(r[3].reason, "Expired");
	cr_assert_str_eq(r[4].reason, "Forbidden");
	cr_assert_str_eq(r[5].reason, "Timeout");
	cr_assert_eq(r[6].http_status, 500);
	cr_assert_str_eq(r[6].message, "upstream broke ", "non-JSON body surfaces as the message");
	/* the token and user agent went out with the request */
	const char *req0 = fakesrv_request(f.srv, 0);
	cr_assert(req0 && strstr(req0, "GET /api/v1/namespaces/ns/configmaps/x HTTP/1.1"), "%s",
	          req0);
	cr_assert(strstr(req0, "Authorization: Bearer secret-token"), "%s", req0);
	cr_assert(strstr(req0, "User-Agent: steadfast/"), "%s", req0);
	for (int i = 0; i < 7; i++)
		tl_res_clear(&r[i]);
	fx_close(&f);
}

typedef struct absent_res {
	int done, absent_x, absent_y, not_found;
} absent_res;

static void absent_cb(void *ud, const sf_kube_result *r)
{
	absent_res *a = ud;
	a->absent_x = sf_kube_is_absent(r, "x");
	a->absent_y = sf_kube_is_absent(r, "y");
	a->not_found = sf_kube_is_not_found(r);
	a->done = 1;
}

/* Only the API server's Status NotFound naming the object is evidence that
 * it is gone; a plain-text 404 (kube-apiserver's own for a version that is
 * not served, or a proxy's), a Status without the name, or one naming
 * another object say nothing about it. */
Test(client_errors, only_a_not_found_status_naming_the_object_is_absence)
{
	static const fake_resp script[] = {
	    {STATUS_RESP(404, "Not Found", "NotFound", "configmaps \\\"x\\\" not found"), 0},
	    {"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
	     "404 page not found\n",
	     0},
	    {"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
	     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"
	     "\"the server could not find the requested resource\",\"reason\":\"NotFound\","
	     "\"details\":{},\"code\":404}",
	     0},
	    {"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n"
	     "<html><body>no route</body></html>",
	     0},
	};
	fx f;
	fx_open(&f, script, 4, NULL);
	absent_res a[4];
	memset(a, 0, sizeof(a));
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(
		    sf_kube_get(f.c, &SF_GVR_CONFIGMAPS, "ns", "x", absent_cb, &a[i], NULL), 0);
		cr_assert_eq(tl_run_until(&f.loop, &a[i].done, 5000), 0);
		cr_assert(a[i].not_found, "answer %d is a 404", i);
	}
	cr_assert(a[0].absent_x);
	cr_assert_not(a[0].absent_y, "a NotFound naming another object");
	for (int i = 1; i < 4; i++)
		cr_assert_not(a[i].absent_x, "answer %d is no evidence of absence", i);
	fx_close(&f);
}

/* classification helpers on hand-made results */
Test(client_errors, classifiers)
{
	sf_kube_status st = {.code = 404, .reason = "NotFound", .message = ""};
	sf_kube_result r = {.http_status = 404, .status = &st};
	cr_assert(sf_kube_is_not_found(&r));
	cr_assert(!sf_kube_is_conflict(&r));
	st.reason = "AlreadyExists";
	r.http_status = 409;
	cr_assert(sf_kube_is_already_exists(&r));
	cr_assert(!sf_kube_is_conflict(&r));
	st.reason = "Conflict";
	cr_assert(sf_kube_is_conflict(&r));
	st.reason = "Expired";
	r.http_status = 410;
	cr_assert(sf_kube_is_expired(&r) && sf_kube_is_gone(&r));
	st.reason = "TooManyRequests";
	r.http_status = 429;
	cr_assert(sf_kube_is_too_many_requests(&r));
	st.reason = "ServerTimeout";
	r.http_status = 500;
	cr_assert(sf_kube_is_server_timeout(&r));
	r.err = -ECONNREFUSED;
	cr_assert(sf_kube_is_transport(&r));
	cr_assert(!sf_kube_is_server_timeout(&r), "a transport error is not an HTTP status");
}

Test(client_errors, too_many_requests_honours_retry_after)
{
	static const fake_resp script[] = {
	    {"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Type: "
	     "application/json\r\nConnection: close\r\n\r\n"
	     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":"
	     "\"TooManyRequests\",\"code\":429,\"details\":{\"retryAfterSeconds\":1}}",
	     0},
	    {"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
	     "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\","
	     "\"namespace\":\"ns\",\"resourceVersion\":\"7\"}}",
	     0},
	};
	fx f;
	fx_open(&f, script, 2, NULL);
	tl_res r = {0};
	int64_t t0 = sf_mono_ns();
	cr_assert_eq(sf_kube_create(f.c, &SF_GVR_CONFIGMAPS, "ns",
	                            "{\"metadata\":{\"name\":\"x\"}}", tl_res_cb, &r, NULL),
	             0);
	tl_wait(&f.loop, &r, 10000);
	int64_t el = sf_mono_ns() - t0;
	cr_assert_eq(r.http_status, 201, "%ld %s", r.http_status, r.message);
	cr_assert_str_eq(r.obj->rv, "7");
	cr_assert(el >= 900 * SF_NSEC_PER_MSEC, "retried after %lld ms, before Retry-After",
	          (long long)(el / SF_NSEC_PER_MSEC));
	cr_assert_eq(fakesrv_requests(f.srv), 2);
	sf_kube_client_stats s;
	sf_kube_client_stats_get(f.c, &s);
	cr_assert_eq(s.retries_429, 1);
	tl_res_clear(&r);
	fx_close(&f);
}

/* A 5xx with Retry-After is retried for a request that is safe to repeat
 * (a GET), never for a create: it may have happened (a retried create
 * would still be safe by adoption, but it is not sent again blindly). */
Test(client_errors, server_errors_with_retry_after_are_retried_only_when_idempotent)
{
	static const fake_resp script[] = {
	    {"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: "
	     "text/plain\r\nConnection: close\r\n\r\n"
	     "the server is shutting down",
	     0},
	    {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
	     "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\","
	     "\"namespace\":\"ns\",\"resourceVersion\":\"8\"}}",
	     0},
	    {"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: "
	     "text/plain\r\nConnection: close\r\n\r\n"
	     "the server is shutting down",
	     0},
	    {"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nConnection: "
	     "close\r\n\r\n"
	     "no Retry-After",
	     0},
	};
	fx f;
	fx_open(&f, script, 4, NULL);
	tl_res r = {0};
	int64_t t0 = sf_mono_ns();
	cr_assert_eq(sf_kube_get(f.c, &SF_GVR_CONFIGMAPS, "ns", "x", tl_res_cb, &r, NULL), 0);
	tl_wait(&f.loop, &r, 10000);
	cr_assert_eq(r.http_status, 200, "%ld %s", r.http_status, r.message);
	cr_assert(sf_mono_ns() - t0 >= 900 * SF_NSEC_PER_MSEC, "retried before Retry-After");
	tl_res_clear(&r);
	/* a create answered 503 + Retry-After: not sent again */
	cr_assert_eq(sf_kube_create(f.c, &SF_GVR_CONFIGMAPS, "ns",
	                            "{\"metadata\":{\"name\":\"y\"}}", tl_res_cb, &r, NULL),
	             0);
	tl_wait(&f.loop, &r, 10000);
	cr_assert_eq(r.http_status, 503);
	tl_res_clear(&r);
	/* a 5xx without Retry-After: not retried either */
	cr_assert_eq(sf_kube_get(f.c, &SF_GVR_CONFIGMAPS, "ns", "x", tl_res_cb, &r, NULL), 0);
	tl_wait(&f.loop, &r, 10000);
	cr_assert_eq(r.http_status, 500);
	tl_res_clear(&r);
	cr_assert_eq(fakesrv_requests(f.srv), 4);
	sf_kube_client_stats s;
	sf_kube_client_stats_get(f.c, &s);
	cr_assert_eq(s.retries_5xx, 1);
	cr_assert_eq(s.retries_429, 0);
	fx_close(&f);
}

typedef struct wctx {
	tl_res r;
	int events;
	sf_watch_type last;
} wctx;

static int on_ev(void *ud, sf_watch_type t, sf_obj *o)
{
	wctx *w = ud;
	w->events++;
	w->last = t;
	sf_obj_unref(o);
	return 0;
}

Test(client_errors, watch_cut_mid_event_is_an_error_after_the_whole_events)
{
	static const fake_resp script[] = {
	    {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
	     "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":"
	     "\"1\"}}}\n"
	     "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":"
	     "\"2\"}}}\n"
	     "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"na",
	     0},
	};
	fx f;
	fx_open(&f, script, 1, NULL);
	wctx w = {0};
	cr_assert_eq(sf_kube_watch(f.c, &SF_GVR_CONFIGMAPS, "ns", NULL, on_ev, tl_res_cb, &w, NULL),
	             0);
	tl_wait(&f.loop, &w.r, 5000);
	cr_assert_eq(w.events, 2);
	cr_assert_eq(w.last, SF_WATCH_MODIFIED);
	cr_assert_eq(w.r.err, -EBADMSG, "err %d %s", w.r.err, w.r.errmsg);
	cr_assert(w.r.errmsg[0], "the truncation has a message");
	const char *rq = fakesrv_request(f.srv, 0);
	cr_assert(strstr(rq, "watch=true"), "%s", rq);
	tl_res_clear(&w.r);
	fx_close(&f);
}

Test(client_errors, timeout_cancel_and_close_in_flight)
{
	static const fake_resp script[] = {{NULL, 1}, {NULL, 1}, {NULL, 1}};
	fx f;
	fx_open(&f, script, 3, NULL);
	tl_res a = {0}, b = {0}, c = {0};
	sf_kube_req slow = {.method = "GET", .path = "/version", .timeout_ms = 200};
	cr_assert_eq(sf_kube_do(f.c, &slow, tl_res_cb, &a, NULL), 0);
	tl_wait(&f.loop, &a, 5000);
	cr_assert_eq(a.err, -ETIMEDOUT, "err %d %s", a.err, a.errmsg);

	sf_kube_call *call;
	sf_kube_req hang = {.method = "GET", .path = "/version", .timeout_ms = -1};
	cr_assert_eq(sf_kube_do(f.c, &hang, tl_res_cb, &b, &call), 0);
	cr_assert_eq(tl_run_until_fn(&f.loop, (int (*)(void *))fakesrv_requests, f.srv, 5000), 0);
	sf_kube_call_cancel(call);
	cr_assert_eq(b.done, 0, "callbacks never run inside cancel");
	tl_wait(&f.loop, &b, 5000);
	cr_assert_eq(b.err, -ECANCELED);

	cr_assert_eq(sf_kube_do(f.c, &hang, tl_res_cb, &c, NULL), 0);
	uv_run(&f.loop, UV_RUN_NOWAIT);
	int closed = 0;
	sf_kube_client_close(f.c, set_flag, &closed);
	fakesrv_stop(f.srv);
	cr_assert_eq(tl_run_until(&f.loop, &closed, 5000), 0);
	cr_assert_eq(c.done, 1, "close completes calls in flight");
	cr_assert_eq(c.err, -ECANCELED);
	uv_run(&f.loop, UV_RUN_DEFAULT);
	sf_kube_config_free(f.cfg);
	cr_assert_eq(uv_loop_close(&f.loop), 0);
}

Test(client_errors, connection_refused_is_transport_error)
{
	fx f;
	fx_open(&f, NULL, 0, NULL);
	/* point a second client at a port nobody listens on */
	char y[512];
	snprintf(y, sizeof(y),
	         "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  "
	         "cluster:\n    server: http://127.0.0.1:1\n"
	         "users:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context: {cluster: c, "
	         "user: u}\n");
	sf_kube_config *cfg;
	sf_kube_client *c2 = tl_inline_client(&f.loop, y, NULL, &cfg);
	tl_res r = {0};
	cr_assert_eq(sf_kube_get(c2, &SF_GVR_NAMESPACES, NULL, "x", tl_res_cb, &r, NULL), 0);
	tl_wait(&f.loop, &r, 5000);
	cr_assert_eq(r.err, -ECONNREFUSED, "%d %s", r.err, r.errmsg);
	cr_assert(sf_kube_is_transport(&(sf_kube_result){.err = r.err}));
	int closed = 0;
	sf_kube_client_close(c2, set_flag, &closed);
	cr_assert_eq(tl_run_until(&f.loop, &closed, 5000), 0);
	sf_kube_config_free(cfg);
	fx_close(&f);
}

#define OK_RESP                                                                                    \
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: "                        \
	"close\r\n\r\n{\"major\":\"1\"}"

Test(client_errors, token_bucket_spaces_requests)
{
	static const fake_resp script[] = {{OK_RESP, 0}, {OK_RESP, 0}, {OK_RESP, 0},
	                                   {OK_RESP, 0}, {OK_RESP, 0}, {OK_RESP, 0}};
	sf_kube_client_opts o = {.qps = 10, .burst = 2};
	fx f;
	fx_open(&f, script, 6, &o);
	tl_res r[6];
	memset(r, 0, sizeof(r));
	int64_t t0 = sf_mono_ns();
	for (int i = 0; i < 6; i++) {
		sf_kube_req req = {.method = "GET", .path = "/version"};
		cr_assert_eq(sf_kube_do(f.c, &req, tl_res_cb, &r[i], NULL), 0);
	}
	for (int i = 0; i < 6; i++)
		tl_wait(&f.loop, &r[i], 10000);
	int64_t el = sf_mono_ns() - t0;
	/* 2 at once from the burst, then 4 more at 10/s: at least ~400 ms */
	cr_assert(el >= 350 * SF_NSEC_PER_MSEC, "6 requests took only %lld ms",
	          (long long)(el / SF_NSEC_PER_MSEC));
	for (int i = 0; i < 6; i++) {
		cr_assert_eq(r[i].http_status, 200);
		tl_res_clear(&r[i]);
	}
	fx_close(&f);
}

/* An empty name on a verb that addresses one object would address the
 * collection instead (a LIST, a DELETE of every object, ...), whose 200 a
 * caller reads as an answer about the object: the client refuses it before
 * anything is queued, so no callback runs and nothing reaches the server. */
Test(client_errors, one_object_verbs_refuse_an_empty_name)
{
	static const fake_resp script[] = {{OK_RESP, 0}, {OK_RESP, 0}, {OK_RESP, 0}, {OK_RESP, 0},
	                                   {OK_RESP, 0}, {OK_RESP, 0}, {OK_RESP, 0}, {OK_RESP, 0}};
	fx f;
	fx_open(&f, script, 8, NULL);
	const sf_gvr *cm = &SF_GVR_CONFIGMAPS;
	const char *body = "{\"data\":{\"v\":\"1\"}}";
	tl_res r[7], x = {0};
	memset(r, 0, sizeof(r));
	cr_expect_eq(sf_kube_get(f.c, cm, "ns", "", tl_res_cb, &r[0], NULL), -EINVAL, "get \"\"");
	cr_expect_eq(sf_kube_get(f.c, cm, "ns", NULL, tl_res_cb, &r[1], NULL), -EINVAL, "get NULL");
	cr_expect_eq(sf_kube_delete(f.c, cm, "ns", "", NULL, tl_res_cb, &r[2], NULL), -EINVAL,
	             "delete \"\"");
	cr_expect_eq(sf_kube_patch(f.c, cm, "ns", "", NULL, SF_PATCH_MERGE, body, NULL, 0,
	                           tl_res_cb, &r[3], NULL),
	             -EINVAL, "patch \"\"");
	cr_expect_eq(sf_kube_patch(f.c, cm, "ns", NULL, NULL, SF_PATCH_APPLY, body, "mgr", 1,
	                           tl_res_cb, &r[4], NULL),
	             -EINVAL, "apply NULL");
	cr_expect_eq(sf_kube_update(f.c, cm, "ns", "", NULL, body, tl_res_cb, &r[5], NULL), -EINVAL,
	             "update \"\"");
	/* a subresource needs its object's name too */
	cr_expect_eq(sf_kube_patch(f.c, cm, "ns", "", "status", SF_PATCH_MERGE, body, NULL, 0,
	                           tl_res_cb, &r[6], NULL),
	             -EINVAL, "patch \"\"/status");
	/* calls go out in order: once this one is answered, anything queued
	 * before it has been sent */
	cr_assert_eq(sf_kube_get(f.c, cm, "ns", "x", tl_res_cb, &x, NULL), 0);
	tl_wait(&f.loop, &x, 5000);
	cr_assert_eq(x.http_status, 200, "%d %s", x.err, x.errmsg);
	tl_res_clear(&x);
	cr_assert_eq(fakesrv_requests(f.srv), 1, "the server got %d requests, the first: %s",
	             fakesrv_requests(f.srv), fakesrv_request(f.srv, 0));
	cr_assert(strstr(fakesrv_request(f.srv, 0), "GET /api/v1/namespaces/ns/configmaps/x "),
	          "%s", fakesrv_request(f.srv, 0));
	/* close would complete any call still queued */
	fx_close(&f);
	for (int i = 0; i < 7; i++) {
		cr_assert_eq(r[i].done, 0, "call %d ran its callback: %d %ld %s", i, r[i].err,
		             r[i].http_status, r[i].errmsg);
		tl_res_clear(&r[i]);
	}
}

static int drop_item(void *ud, sf_obj *o)
{
	(void)ud;
	sf_obj_unref(o);
	return 0;
}

/* The API server refuses resourceVersion or resourceVersionMatch next to a
 * continue token (the token carries the list's version): a continue page
 * sends only the token, whatever the caller passed. A WatchList sends what
 * the server requires of it. */
Test(client_paths, list_and_watch_list_queries)
{
	static const fake_resp script[] = {
	    {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
	     "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[]}",
	     0},
	    {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
	     "{\"kind\":\"ConfigMapList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[]}",
	     0},
	    {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n", 0},
	};
	fx f;
	fx_open(&f, script, 3, NULL);
	sf_kube_list_opts o = {.limit = 50,
	                       .continue_token = "tok",
	                       .resource_version = "7",
	                       .resource_version_match = "NotOlderThan"};
	tl_res r = {0};
	cr_assert_eq(
	    sf_kube_list(f.c, &SF_GVR_CONFIGMAPS, "ns", &o, drop_item, tl_res_cb, &r, NULL), 0);
	tl_wait(&f.loop, &r, 5000);
	tl_res_clear(&r);
	o.continue_token = NULL;
	memset(&r, 0, sizeof(r));
	cr_assert_eq(
	    sf_kube_list(f.c, &SF_GVR_CONFIGMAPS, "ns", &o, drop_item, tl_res_cb, &r, NULL), 0);
	tl_wait(&f.loop, &r, 5000);
	tl_res_clear(&r);
	sf_kube_list_opts w = {.resource_version_match = "NotOlderThan",
	                       .send_initial_events = 1,
	                       .allow_bookmarks = 1,
	                       .timeout_seconds = 30};
	wctx wc = {0};
	cr_assert_eq(sf_kube_watch(f.c, &SF_GVR_CONFIGMAPS, "ns", &w, on_ev, tl_res_cb, &wc, NULL),
	             0);
	tl_wait(&f.loop, &wc.r, 5000);
	tl_res_clear(&wc.r);
	char line[3][512];
	for (int i = 0; i < 3; i++) {
		const char *q = fakesrv_request(f.srv, i);
		cr_assert_not_null(q);
		snprintf(line[i], sizeof(line[i]), "%.*s", (int)strcspn(q, "\r\n"), q);
	}
	cr_assert_str_eq(line[0],
	                 "GET /api/v1/namespaces/ns/configmaps?limit=50&continue=tok HTTP/1.1");
	cr_assert_str_eq(line[1], "GET /api/v1/namespaces/ns/configmaps?resourceVersion=7&"
	                          "resourceVersionMatch=NotOlderThan&limit=50 HTTP/1.1");
	cr_assert_str_eq(line[2],
	                 "GET /api/v1/namespaces/ns/configmaps?watch=true&resourceVersionMatch="
	                 "NotOlderThan&timeoutSeconds=30&allowWatchBookmarks=true&"
	                 "sendInitialEvents=true HTTP/1.1");
	fx_close(&f);
}

/* The sum of the sample line `name{labels}` in an exposition, or -1. */
static double prom_value(const char *text, const char *line_prefix)
{
	const char *p = strstr(text, line_prefix);
	if (!p)
		return -1;
	return strtod(p + strlen(line_prefix), NULL);
}

#define OK_CM                                                                                      \
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"           \
	"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\","              \
	"\"namespace\":"                                                                           \
	"\"ns\",\"resourceVersion\":\"7\"}}"

/* rest_client_rate_limiter_duration_seconds holds the wait for a token,
 * rest_client_request_duration_seconds the time from sending to the
 * answer, and neither holds the other's. */
Test(client_metrics, limiter_wait_and_request_time_apart)
{
	static const fake_resp script[] = {{OK_CM, 0}, {OK_CM, 0}, {NULL, 1}};
	fx f;
	sf_kube_client_opts co = {.qps = 5, .burst = 1, .http1_only = 1};
	fx_open(&f, script, 3, &co);
	tl_res a = {0}, b = {0}, h = {0};
	/* the second waits 200 ms for its token */
	cr_assert_eq(sf_kube_get(f.c, &SF_GVR_CONFIGMAPS, "ns", "x", tl_res_cb, &a, NULL), 0);
	cr_assert_eq(sf_kube_get(f.c, &SF_GVR_CONFIGMAPS, "ns", "x", tl_res_cb, &b, NULL), 0);
	tl_wait(&f.loop, &a, 10000);
	tl_wait(&f.loop, &b, 10000);
	cr_assert_eq(b.http_status, 200);

	char host[64], pre[160];
	snprintf(host, sizeof(host), "127.0.0.1:%d", fakesrv_port(f.srv));
	sf_prom *p = sf_prom_new();
	cr_assert_eq(sf_kube_client_metrics_write(f.c, p), 0);
	sf_buf out;
	sf_buf_init(&out, 0);
	cr_assert_eq(sf_prom_render(p, &out), 0);
	snprintf(pre, sizeof(pre),
	         "rest_client_rate_limiter_duration_seconds_count{verb=\"GET\",host=\"%s\"} ",
	         host);
	cr_assert_eq(prom_value(out.data, pre), 2, "%s", out.data);
	snprintf(pre, sizeof(pre),
	         "rest_client_rate_limiter_duration_seconds_sum{verb=\"GET\",host=\"%s\"} ", host);
	double waited = prom_value(out.data, pre);
	cr_assert_geq(waited, 0.19, "%s", out.data);
	snprintf(pre, sizeof(pre),
	         "rest_client_rate_limiter_duration_seconds_bucket{verb=\"GET\",host=\"%s\",le=\"0."
	         "005\"} ",
	         host);
	cr_assert_eq(prom_value(out.data, pre), 1, "the first had its token at once: %s", out.data);
	snprintf(pre, sizeof(pre),
	         "rest_client_request_duration_seconds_count{verb=\"GET\",host=\"%s\"} ", host);
	cr_assert_eq(prom_value(out.data, pre), 2, "%s", out.data);
	snprintf(pre, sizeof(pre),
	         "rest_client_request_duration_seconds_sum{verb=\"GET\",host=\"%s\"} ", host);
	cr_assert_lt(prom_value(out.data, pre), waited,
	             "the limiter's wait is not request time: %s", out.data);
	cr_assert_null(strstr(out.data, "verb=\"POST\""), "no sample for a verb never used");
	sf_prom_free(p);

	/* a server that takes 300 ms (here: never answers, the request times out) */
	sf_kube_req rq = {
	    .method = "GET", .gvr = &SF_GVR_CONFIGMAPS, .ns = "ns", .name = "x", .timeout_ms = 300};
	cr_assert_eq(sf_kube_do(f.c, &rq, tl_res_cb, &h, NULL), 0);
	tl_wait(&f.loop, &h, 10000);
	cr_assert_neq(h.err, 0);
	p = sf_prom_new();
	cr_assert_eq(sf_kube_client_metrics_write(f.c, p), 0);
	sf_buf_reset(&out);
	cr_assert_eq(sf_prom_render(p, &out), 0);
	snprintf(pre, sizeof(pre),
	         "rest_client_request_duration_seconds_count{verb=\"GET\",host=\"%s\"} ", host);
	cr_assert_eq(prom_value(out.data, pre), 3, "%s", out.data);
	snprintf(pre, sizeof(pre),
	         "rest_client_request_duration_seconds_sum{verb=\"GET\",host=\"%s\"} ", host);
	cr_assert_geq(prom_value(out.data, pre), 0.3, "%s", out.data);
	snprintf(
	    pre, sizeof(pre),
	    "rest_client_request_duration_seconds_bucket{verb=\"GET\",host=\"%s\",le=\"0.25\"} ",
	    host);
	cr_assert_eq(prom_value(out.data, pre), 2, "%s", out.data);
	sf_prom_free(p);
	sf_buf_free(&out);
	tl_res_clear(&a);
	tl_res_clear(&b);
	tl_res_clear(&h);
	fx_close(&f);
}
