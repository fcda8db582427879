/*
 * test_events.c - the Event recorder (events.h) against the scripted
 * server: the first occurrence is a POST of an events.k8s.io/v1 Event with
 * the fields the API server requires (eventTime, reportingController,
 * reportingInstance, action) and none of core/v1's; the second a strategic
 * merge patch of series {count 2}, the third count 3; occurrences during a
 * write fold into one patch; another note or action is another Event; a
 * patch answered 404 creates the Event again with its series; the window
 * and max_keys end series; a failed create starts over; the write gate
 * refuses a write before it is sent; notes are made valid UTF-8 and cut to
 * the server's 1024 bytes; arguments the server would refuse are -EINVAL;
 * the bodies sent, byte for byte.
 * The real API server's answers are test/integration/test_appwrapper.c's
 * (events_are_events_k8s_io_v1_and_a_repeat_is_a_series).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakesrv.h"
#include "steadfast/events.h"
#include "steadfast/json.h"
#include "steadfast/time.h"
#include "tl.h"

TestSuite(events, .init = tl_log_quiet);

#define MAXR 8
#define EVENTS_PATH "/apis/events.k8s.io/v1/namespaces/ns1/events"

static const char *AW_JSON = "{\"metadata\":{\"name\":\"aw1\",\"namespace\":\"ns1\","
                             "\"uid\":\"u-1\",\"resourceVersion\":\"42\"}}";

typedef struct fx {
	uv_loop_t loop;
	fakesrv *srv;
	sf_kube_config *cfg;
	sf_kube_client *c;
	sf_events *ev;
	sf_obj *aw;
	char *raw[MAXR];
	fake_resp script[MAXR];
} fx;

/* A scripted answer: "201", "200", "404" (NotFound Status) or "500". */
static char *answer(const char *code)
{
	const char *status = "500 Internal Server Error",
	           *body = "{\"kind\":\"Status\","
	                   "\"status\":\"Failure\",\"code\":500}";
	if (strcmp(code, "201") == 0)
		status = "201 Created", body = "{\"metadata\":{\"name\":\"e\"}}";
	else if (strcmp(code, "200") == 0)
		status = "200 OK", body = "{\"metadata\":{\"name\":\"e\"}}";
	else if (strcmp(code, "404") == 0)
		status = "404 Not Found",
		body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
		       "\"reason\":\"NotFound\",\"code\":404}";
	char *r = NULL;
	cr_assert_geq(asprintf(&r,
	                       "HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
	                       "Content-Length: %zu\r\n\r\n%s",
	                       status, strlen(body), body),
	              0);
	return r;
}

/* answers: NULL-terminated; o: the recorder's options (NULL: defaults
 * with controller "appwrappers" and instance "replica-a"). */
static void fx_open(fx *f, const char *const *answers, const sf_events_opts *o)
{
	memset(f, 0, sizeof(*f));
	int n = 0;
	for (; answers[n]; n++) {
		cr_assert(n < MAXR);
		f->raw[n] = answer(answers[n]);
		f->script[n] = (fake_resp){f->raw[n], 0};
	}
	cr_assert_eq(uv_loop_init(&f->loop), 0);
	f->srv = fakesrv_start(&f->loop, f->script, n);
	sf_kube_client_opts co = {.http1_only = 1};
	f->c = tl_fakesrv_client(&f->loop, f->srv, &co, &f->cfg);
	sf_events_opts d = {.controller = "appwrappers", .instance = "replica-a"};
	cr_assert_eq(sf_events_new(&f->loop, f->c, o ? o : &d, &f->ev), 0);
	f->aw = sf_obj_parse(AW_JSON, strlen(AW_JSON), NULL, 0);
	cr_assert_not_null(f->aw);
}

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

static void fx_close(fx *f)
{
	int cl = 0;
	sf_events_close(f->ev, NULL, NULL);
	sf_kube_client_close(f->c, set_flag, &cl);
	fakesrv_stop(f->srv);
	cr_assert_eq(tl_run_until(&f->loop, &cl, 5000), 0);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	sf_kube_config_free(f->cfg);
	cr_assert_eq(uv_loop_close(&f->loop), 0);
	sf_obj_unref(f->aw);
	for (int i = 0; i < MAXR; i++)
		free(f->raw[i]);
}

typedef struct nreq {
	fx *f;
	int n;
} nreq;

static int has_requests(void *ud)
{
	nreq *w = ud;
	return fakesrv_requests(w->f->srv) >= w->n;
}

/* Waits until the server has seen n requests. */
static void wait_requests(fx *f, int n)
{
	nreq w = {f, n};
	cr_assert_eq(tl_run_until_fn(&f->loop, has_requests, &w, 5000), 0, "%d requests, want %d",
	             fakesrv_requests(f->srv), n);
}

static int never(void *ud)
{
	(void)ud;
	return 0;
}

/* Runs the loop for ms, for a check that nothing more is sent. */
static void settle(fx *f, long ms)
{
	tl_run_until_fn(&f->loop, never, NULL, ms);
}

static int emit(fx *f, const char *reason, const char *action, const char *note)
{
	return sf_events_emit(f->ev, f->aw, "workload.codeflare.dev/v1beta2", "AppWrapper",
	                      "Warning", reason, action, note);
}

static sf_jv body(fx *f, int i)
{
	const char *b = fakesrv_body(f->srv, i);
	cr_assert_not_null(b, "no request %d", i);
	return sf_jv_root(b, strlen(b));
}

static void assert_request(fx *f, int i, const char *method_path)
{
	const char *r = fakesrv_request(f->srv, i);
	cr_assert_not_null(r, "no request %d", i);
	cr_assert_eq(strncmp(r, method_path, strlen(method_path)), 0, "request %d: %s", i, r);
}

static long series_count(sf_jv b)
{
	int64_t c = 0;
	if (sf_jv_int64(sf_jv_path(b, "series.count"), &c) != 0)
		return 0;
	return (long)c;
}

static void str_at(sf_jv b, const char *path, char *buf, size_t n)
{
	buf[0] = '\0';
	sf_jv_str(sf_jv_path(b, path), buf, n);
}

Test(events, the_first_occurrence_posts_an_events_k8s_io_v1_event)
{
	fx f;
	fx_open(&f, (const char *[]){"201", NULL}, NULL);
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "FoundFailedPods: pod p exited"), 0);
	wait_requests(&f, 1);
	assert_request(&f, 0, "POST " EVENTS_PATH " ");
	sf_jv b = body(&f, 0);
	static const char *const want[][2] = {
	    {"apiVersion", "events.k8s.io/v1"},
	    {"kind", "Event"},
	    {"metadata.namespace", "ns1"},
	    {"reportingController", "appwrappers"},
	    {"reportingInstance", "replica-a"},
	    {"action", "Resetting"},
	    {"reason", "Unhealthy"},
	    {"type", "Warning"},
	    {"note", "FoundFailedPods: pod p exited"},
	    {"regarding.apiVersion", "workload.codeflare.dev/v1beta2"},
	    {"regarding.kind", "AppWrapper"},
	    {"regarding.namespace", "ns1"},
	    {"regarding.name", "aw1"},
	    {"regarding.uid", "u-1"},
	    {"regarding.resourceVersion", "42"},
	};
	char v[1200];
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		str_at(b, want[i][0], v, sizeof(v));
		cr_assert_str_eq(v, want[i][1], "%s: %s", want[i][0], fakesrv_body(f.srv, 0));
	}
	/* "<object>.<16 hex>", as client-go names them */
	str_at(b, "metadata.name", v, sizeof(v));
	cr_assert_eq(strlen(v), strlen("aw1.") + 16, "%s", v);
	cr_assert_eq(strncmp(v, "aw1.", 4), 0, "%s", v);
	/* eventTime is a MicroTime */
	str_at(b, "eventTime", v, sizeof(v));
	int64_t t = 0;
	cr_assert_eq(sf_time_parse_rfc3339(v, strlen(v), &t), 0, "%s", v);
	cr_assert(strchr(v, '.') && strlen(strchr(v, '.')) == strlen(".123456Z"), "%s", v);
	/* no series yet, and nothing the events.k8s.io API refuses */
	static const char *const absent[] = {"series",        "count",          "firstTimestamp",
	                                     "lastTimestamp", "source",         "involvedObject",
	                                     "message",       "deprecatedCount"};
	for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
		cr_assert(!sf_jv_ok(sf_jv_get(b, absent[i])), "%s in %s", absent[i],
		          fakesrv_body(f.srv, 0));
	sf_events_stats st;
	sf_events_stats_get(f.ev, &st);
	cr_assert_eq(st.created, 1);
	fx_close(&f);
}

/* As client-go: the second occurrence starts the series at 2, the third
 * raises it to 3; both strategic merge patches of the series alone. */
Test(events, repeats_patch_the_series_2_then_3)
{
	fx f;
	fx_open(&f, (const char *[]){"201", "200", "200", NULL}, NULL);
	char name[300] = "", path[400];
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "same"), 0);
	wait_requests(&f, 1);
	str_at(body(&f, 0), "metadata.name", name, sizeof(name));
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "same"), 0);
	wait_requests(&f, 2);
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "same"), 0);
	wait_requests(&f, 3);
	snprintf(path, sizeof(path), "PATCH " EVENTS_PATH "/%s ", name);
	for (int i = 1; i <= 2; i++) {
		assert_request(&f, i, path);
		cr_assert(strcasestr(fakesrv_request(f.srv, i),
		                     "content-type: application/strategic-merge-patch+json"),
		          "%s", fakesrv_request(f.srv, i));
		sf_jv b = body(&f, i);
		cr_assert_eq(series_count(b), i + 1, "%s", fakesrv_body(f.srv, i));
		char lo[64];
		int64_t t = 0;
		str_at(b, "series.lastObservedTime", lo, sizeof(lo));
		cr_assert_eq(sf_time_parse_rfc3339(lo, strlen(lo), &t), 0, "%s", lo);
		size_t members = 0;
		sf_jv_iter it = sf_jv_iter_init(b);
		while (sf_jv_next(&it, NULL, NULL))
			members++;
		cr_assert_eq(members, 1, "only the series: %s", fakesrv_body(f.srv, i));
	}
	settle(&f, 100);
	cr_assert_eq(fakesrv_requests(f.srv), 3);
	sf_events_stats st;
	sf_events_stats_get(f.ev, &st);
	cr_assert_eq(st.created, 1);
	cr_assert_eq(st.aggregated, 2);
	cr_assert_eq(st.failed, 0);
	fx_close(&f);
}

/* Occurrences while the create is in flight are counted and sent in one
 * patch once it is answered: one request per series at a time. */
Test(events, occurrences_during_a_write_fold_into_one_patch)
{
	fx f;
	fx_open(&f, (const char *[]){"201", "200", NULL}, NULL);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "same"), 0);
	wait_requests(&f, 2);
	assert_request(&f, 0, "POST ");
	assert_request(&f, 1, "PATCH ");
	cr_assert_eq(series_count(body(&f, 1)), 4, "%s", fakesrv_body(f.srv, 1));
	settle(&f, 100);
	cr_assert_eq(fakesrv_requests(f.srv), 2);
	fx_close(&f);
}

/* The note and the action are part of what is repeated: another note or
 * action is another Event. */
Test(events, another_note_or_action_is_another_event)
{
	fx f;
	fx_open(&f, (const char *[]){"201", "201", "201", NULL}, NULL);
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "exited with code 1"), 0);
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "exited with code 2"), 0);
	cr_assert_eq(emit(&f, "Unhealthy", "Failed", "exited with code 1"), 0);
	wait_requests(&f, 3);
	char n[3][300];
	for (int i = 0; i < 3; i++) {
		assert_request(&f, i, "POST ");
		str_at(body(&f, i), "metadata.name", n[i], sizeof(n[i]));
	}
	cr_assert(strcmp(n[0], n[1]) && strcmp(n[1], n[2]) && strcmp(n[0], n[2]));
	fx_close(&f);
}

/* A patch answered 404 (the Event expired or was deleted): the Event is
 * created again under its name with the series so far, as client-go. */
Test(events, a_series_whose_event_is_gone_creates_it_again)
{
	fx f;
	fx_open(&f, (const char *[]){"201", "404", "201", NULL}, NULL);
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "same"), 0);
	wait_requests(&f, 1);
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "same"), 0);
	wait_requests(&f, 3);
	assert_request(&f, 1, "PATCH ");
	assert_request(&f, 2, "POST " EVENTS_PATH " ");
	char n0[300], n2[300];
	str_at(body(&f, 0), "metadata.name", n0, sizeof(n0));
	str_at(body(&f, 2), "metadata.name", n2, sizeof(n2));
	cr_assert_str_eq(n0, n2);
	sf_jv b = body(&f, 2);
	cr_assert_eq(series_count(b), 2, "%s", fakesrv_body(f.srv, 2));
	cr_assert(sf_jv_streq(sf_jv_get(b, "note"), "same"));
	cr_assert(sf_jv_streq(sf_jv_get(b, "action"), "Resetting"));
	fx_close(&f);
}

/* A failed create forgets the series: the next occurrence creates a new
 * Event, not a patch of one that does not exist. */
Test(events, a_failed_create_starts_over)
{
	fx f;
	fx_open(&f, (const char *[]){"500", "201", NULL}, NULL);
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "same"), 0);
	wait_requests(&f, 1);
	sf_events_stats st;
	for (int i = 0; i < 100; i++) {
		sf_events_stats_get(f.ev, &st);
		if (st.failed)
			break;
		settle(&f, 20);
	}
	cr_assert_eq(st.failed, 1);
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "same"), 0);
	wait_requests(&f, 2);
	assert_request(&f, 1, "POST ");
	cr_assert(!sf_jv_ok(sf_jv_get(body(&f, 1), "series")), "%s", fakesrv_body(f.srv, 1));
	fx_close(&f);
}

/* A series ends window_ms after its last occurrence: the next one is a
 * new Event. */
Test(events, the_window_ends_a_series)
{
	fx f;
	sf_events_opts o = {.controller = "appwrappers", .instance = "r", .window_ms = 30};
	fx_open(&f, (const char *[]){"201", "201", NULL}, &o);
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "same"), 0);
	wait_requests(&f, 1);
	settle(&f, 80);
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "same"), 0);
	wait_requests(&f, 2);
	assert_request(&f, 1, "POST ");
	char n0[300], n1[300];
	str_at(body(&f, 0), "metadata.name", n0, sizeof(n0));
	str_at(body(&f, 1), "metadata.name", n1, sizeof(n1));
	cr_assert_str_neq(n0, n1);
	sf_events_stats st;
	sf_events_stats_get(f.ev, &st);
	cr_assert_eq(st.dropped, 0, "an ended series is not a dropped one");
	fx_close(&f);
}

/* Memory is bounded: past max_keys the least recent series is forgotten
 * (its next occurrence is a new Event). */
Test(events, max_keys_drops_the_least_recent_series)
{
	fx f;
	sf_events_opts o = {.controller = "appwrappers", .instance = "r", .max_keys = 2};
	fx_open(&f, (const char *[]){"201", "201", "201", "201", NULL}, &o);
	cr_assert_eq(emit(&f, "R", "A", "one"), 0);
	cr_assert_eq(emit(&f, "R", "A", "two"), 0);
	cr_assert_eq(emit(&f, "R", "A", "three"), 0);
	wait_requests(&f, 3);
	sf_events_stats st;
	sf_events_stats_get(f.ev, &st);
	cr_assert_eq(st.dropped, 1);
	cr_assert_eq(emit(&f, "R", "A", "one"), 0);
	wait_requests(&f, 4);
	assert_request(&f, 3, "POST ");
	fx_close(&f);
}

static int refuse(void *ud, const sf_kube_req *req)
{
	(void)req;
	++*(int *)ud;
	return 1;
}

/* Every write passes the client's write gate (the leader's fence): a
 * refused one is never sent, counted as failed, and not logged. */
Test(events, writes_pass_the_fence)
{
	fx f;
	fx_open(&f, (const char *[]){"201", NULL}, NULL);
	int asked = 0;
	sf_kube_client_set_write_gate(f.c, refuse, &asked);
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "same"), 0);
	sf_events_stats st;
	for (int i = 0; i < 100; i++) {
		sf_events_stats_get(f.ev, &st);
		if (st.failed)
			break;
		settle(&f, 20);
	}
	cr_assert_eq(st.failed, 1);
	cr_assert_eq(asked, 1);
	cr_assert_eq(fakesrv_requests(f.srv), 0);
	fx_close(&f);
}

/* The API server counts the note after decoding, where an invalid byte is
 * U+FFFD (3 bytes), and refuses more than 1024 bytes: the note is made
 * valid and cut on a character boundary, ending "...". */
Test(events, the_note_is_valid_utf8_of_at_most_1024_bytes)
{
	fx f;
	fx_open(&f, (const char *[]){"201", "201", NULL}, NULL);
	char note[1400];
	size_t n = 0;
	while (n < 1100) {
		memcpy(note + n, "\xc3\xa9", 2); /* é */
		n += 2;
	}
	note[n] = '\0';
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", note), 0);
	/* 1023 bytes then a lone lead byte: 1026 once decoded */
	memset(note, 'a', 1023);
	note[1023] = '\xe2';
	note[1024] = '\0';
	cr_assert_eq(emit(&f, "Unhealthy", "Failed", note), 0);
	wait_requests(&f, 2);
	for (int i = 0; i < 2; i++) {
		char got[2048] = "";
		str_at(body(&f, i), "note", got, sizeof(got));
		size_t l = strlen(got);
		cr_assert_leq(l, SF_EVENTS_NOTE_MAX, "request %d: %zu bytes", i, l);
		cr_assert_eq(strcmp(got + l - 3, "..."), 0, "request %d: %s", i, got + l - 8);
		for (size_t j = 0; j + 3 < l; j++)
			cr_assert(got[j] == 'a' || (unsigned char)got[j] == 0xc3 ||
			              (unsigned char)got[j] == 0xa9,
			          "request %d: byte %zu is 0x%02x", i, j, (unsigned char)got[j]);
		if (i == 0)
			cr_assert_eq((unsigned char)got[l - 4], 0xa9, "cut inside a character");
	}
	fx_close(&f);
}

Test(events, a_short_invalid_byte_becomes_u_fffd)
{
	fx f;
	fx_open(&f, (const char *[]){"201", NULL}, NULL);
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", "bad \xff byte"), 0);
	wait_requests(&f, 1);
	char got[64] = "";
	str_at(body(&f, 0), "note", got, sizeof(got));
	cr_assert_str_eq(got, "bad \xef\xbf\xbd byte");
	fx_close(&f);
}

/* What the API server would refuse is not sent. */
Test(events, arguments_the_server_refuses_are_einval)
{
	fx f;
	fx_open(&f, (const char *[]){NULL}, NULL);
	char long_word[200];
	memset(long_word, 'x', 129);
	long_word[129] = '\0';
	cr_assert_eq(sf_events_emit(f.ev, f.aw, "v1", "K", "Info", "R", "A", "n"), -EINVAL);
	cr_assert_eq(emit(&f, "", "A", "n"), -EINVAL);
	cr_assert_eq(emit(&f, "R", "", "n"), -EINVAL);
	cr_assert_eq(emit(&f, "R", NULL, "n"), -EINVAL);
	cr_assert_eq(emit(&f, long_word, "A", "n"), -EINVAL);
	cr_assert_eq(emit(&f, "R", long_word, "n"), -EINVAL);
	cr_assert_eq(emit(&f, "R\n", "A", "n"), -EINVAL);
	const char *cluster = "{\"metadata\":{\"name\":\"n\",\"uid\":\"u\"}}";
	sf_obj *o = sf_obj_parse(cluster, strlen(cluster), NULL, 0);
	cr_assert_eq(sf_events_emit(f.ev, o, "v1", "Node", "Normal", "R", "A", "n"), -EINVAL);
	sf_obj_unref(o);
	settle(&f, 50);
	cr_assert_eq(fakesrv_requests(f.srv), 0);
	sf_events_stats st;
	sf_events_stats_get(f.ev, &st);
	cr_assert_eq(st.created, 0);
	fx_close(&f);
}

/* reportingInstance is at most 128 bytes. */
Test(events, a_long_instance_is_cut_to_128_bytes)
{
	fx f;
	char inst[300];
	memset(inst, 'i', 250);
	inst[250] = '\0';
	sf_events_opts o = {.controller = "appwrappers", .instance = inst};
	fx_open(&f, (const char *[]){"201", NULL}, &o);
	cr_assert_eq(emit(&f, "R", "A", "n"), 0);
	wait_requests(&f, 1);
	char got[300] = "";
	str_at(body(&f, 0), "reportingInstance", got, sizeof(got));
	cr_assert_eq(strlen(got), SF_EVENTS_INSTANCE_MAX);
	fx_close(&f);
}

/* The bodies byte for byte (name and times as sent): the create, the
 * series patch, and the create again with its series after a 404, for a
 * note that needs escaping and an invalid byte made U+FFFD. */
Test(events, bodies_byte_for_byte)
{
	fx f;
	fx_open(&f, (const char *[]){"201", "404", "201", NULL}, NULL);
	const char *note = "\"quoted\" back\\slash\nnew\ttab\x01 caf\xc3\xa9 \xff";
	const char *note_json = "\"\\\"quoted\\\" back\\\\slash\\nnew\\ttab\\u0001 caf\xc3\xa9 "
	                        "\xef\xbf\xbd\"";
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", note), 0);
	wait_requests(&f, 1);
	cr_assert_eq(emit(&f, "Unhealthy", "Resetting", note), 0);
	wait_requests(&f, 3);
	char name[300], et[64], lo[64], want[2048];
	str_at(body(&f, 0), "metadata.name", name, sizeof(name));
	str_at(body(&f, 0), "eventTime", et, sizeof(et));
	str_at(body(&f, 1), "series.lastObservedTime", lo, sizeof(lo));
	const char *fmt =
	    "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"%s\","
	    "\"namespace\":\"ns1\"},\"eventTime\":\"%s\",\"reportingController\":\"appwrappers\","
	    "\"reportingInstance\":\"replica-a\",\"action\":\"Resetting\",\"reason\":\"Unhealthy\","
	    "\"regarding\":{\"apiVersion\":\"workload.codeflare.dev/v1beta2\",\"kind\":"
	    "\"AppWrapper\",\"namespace\":\"ns1\",\"name\":\"aw1\",\"uid\":\"u-1\","
	    "\"resourceVersion\":\"42\"},\"note\":%s,\"type\":\"Warning\"%s}";
	snprintf(want, sizeof(want), fmt, name, et, note_json, "");
	cr_assert_str_eq(fakesrv_body(f.srv, 0), want);
	snprintf(want, sizeof(want), "{\"series\":{\"count\":2,\"lastObservedTime\":\"%s\"}}", lo);
	cr_assert_str_eq(fakesrv_body(f.srv, 1), want);
	char series[128];
	snprintf(series, sizeof(series), ",\"series\":{\"count\":2,\"lastObservedTime\":\"%s\"}",
	         lo);
	snprintf(want, sizeof(want), fmt, name, et, note_json, series);
	cr_assert_str_eq(fakesrv_body(f.srv, 2), want);
	fx_close(&f);
}

/* An object without a resourceVersion is regarded without one. */
Test(events, a_reference_without_a_resource_version)
{
	fx f;
	fx_open(&f, (const char *[]){"201", NULL}, NULL);
	const char *js = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns1\",\"uid\":\"u-2\"}}";
	sf_obj *o = sf_obj_parse(js, strlen(js), NULL, 0);
	cr_assert_not_null(o);
	cr_assert_eq(sf_events_emit(f.ev, o, "v1", "Pod", "Normal", "Seen", "Looked", ""), 0);
	wait_requests(&f, 1);
	char name[300], et[64], want[1024];
	str_at(body(&f, 0), "metadata.name", name, sizeof(name));
	str_at(body(&f, 0), "eventTime", et, sizeof(et));
	snprintf(want, sizeof(want),
	         "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":"
	         "\"%s\",\"namespace\":\"ns1\"},\"eventTime\":\"%s\",\"reportingController\":"
	         "\"appwrappers\",\"reportingInstance\":\"replica-a\",\"action\":\"Looked\","
	         "\"reason\":\"Seen\",\"regarding\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	         "\"namespace\":\"ns1\",\"name\":\"p\",\"uid\":\"u-2\"},\"note\":\"\",\"type\":"
	         "\"Normal\"}",
	         name, et);
	cr_assert_str_eq(fakesrv_body(f.srv, 0), want);
	sf_obj_unref(o);
	fx_close(&f);
}
