/*
 * test_watch.c - streaming WATCH and LIST decoders: a realistic event stream
 * fed whole, split at every byte offset and one byte at a time (always the
 * same events), truncation, malformed input, size caps, stopping from the
 * callback, and LIST bodies (items, metadata, a Status instead of a list).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/json.h"
#include "steadfast/watch.h"

#define MAX_EV 16

typedef struct event {
	sf_watch_type type;
	char *json;
	char name[64];
	char rv[32];
} event;

typedef struct rec {
	event ev[MAX_EV];
	size_t n;
	size_t stop_after; /* return non-zero on this many events; 0 = never */
} rec;

static int on_event(void *ud, sf_watch_type type, sf_obj *obj)
{
	rec *r = ud;
	cr_assert_not_null(obj);
	cr_assert_lt(r->n, MAX_EV);
	event *e = &r->ev[r->n++];
	e->type = type;
	e->json = strdup(obj->json);
	cr_assert_not_null(e->json);
	cr_assert_eq(strlen(obj->json), obj->len);
	snprintf(e->name, sizeof(e->name), "%s", obj->name);
	snprintf(e->rv, sizeof(e->rv), "%s", obj->rv);
	sf_obj_unref(obj);
	return r->stop_after && r->n >= r->stop_after;
}

static void rec_clear(rec *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->ev[i].json);
	memset(r, 0, sizeof(*r));
}

/* Events as the API server writes them: one JSON object per line. The first
 * is pretty-printed (whitespace inside an event), the pod carries escapes,
 * non-ASCII text and a number beyond 64 bits. */
static const char *const events[] = {
    "{\"type\": \"ADDED\",\n \"object\": {\"apiVersion\": \"v1\", \"kind\": \"Pod\",\n"
    "  \"metadata\": {\"name\": \"web-0\", \"namespace\": \"prod\", \"uid\": \"u-1\","
    " \"resourceVersion\": \"100\", \"labels\": {\"app\": \"web\"}},\n"
    "  \"spec\": {\"containers\": [{\"name\": \"app\", \"image\": \"nginx\","
    " \"args\": [\"--msg=caf\\u00e9 \\\"x\\\"\", \"a/b\"]}]},\n"
    "  \"status\": {\"phase\": \"Pending\", \"big\": 184467440737095516160}}}",
    "{\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-0\","
    "\"namespace\":\"prod\",\"uid\":\"u-1\",\"resourceVersion\":\"101\"},"
    "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":"
    "\"True\"}]}},\"type\":\"MODIFIED\",\"extra\":{\"ignored\":[1,{\"type\":\"ERROR\"}]}}",
    "{\"type\":\"DELETED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
    "{\"name\":\"web-0\",\"namespace\":\"prod\",\"uid\":\"u-1\",\"resourceVersion\":\"102\"}}}",
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":"
    "{\"resourceVersion\":\"150\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}",
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
    "\"status\":\"Failure\",\"message\":\"too old resource version: 100 (150)\","
    "\"reason\":\"Expired\",\"code\":410}}",
};
#define NEV (sizeof(events) / sizeof(events[0]))

/* The stream (events joined by newlines) and where each event ends. */
static char *make_stream(size_t *len, size_t ends[NEV])
{
	size_t cap = 1;
	for (size_t i = 0; i < NEV; i++)
		cap += strlen(events[i]) + 1;
	char *s = malloc(cap);
	cr_assert_not_null(s);
	size_t n = 0;
	for (size_t i = 0; i < NEV; i++) {
		size_t l = strlen(events[i]);
		memcpy(s + n, events[i], l);
		n += l;
		if (ends)
			ends[i] = n;
		s[n++] = '\n';
	}
	s[n] = '\0';
	*len = n;
	return s;
}

static void check_reference(const rec *r)
{
	cr_assert_eq(r->n, NEV);
	cr_expect_eq(r->ev[0].type, SF_WATCH_ADDED);
	cr_expect_eq(r->ev[1].type, SF_WATCH_MODIFIED);
	cr_expect_eq(r->ev[2].type, SF_WATCH_DELETED);
	cr_expect_eq(r->ev[3].type, SF_WATCH_BOOKMARK);
	cr_expect_eq(r->ev[4].type, SF_WATCH_ERROR);
	cr_expect_str_eq(
	    r->ev[0].json,
	    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-0\","
	    "\"namespace\":\"prod\",\"uid\":\"u-1\",\"resourceVersion\":\"100\","
	    "\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"app\","
	    "\"image\":\"nginx\",\"args\":[\"--msg=caf\xc3\xa9 \\\"x\\\"\",\"a/b\"]}]},"
	    "\"status\":{\"phase\":\"Pending\",\"big\":184467440737095516160}}");
	cr_expect_str_eq(r->ev[0].name, "web-0");
	cr_expect_str_eq(r->ev[0].rv, "100");
	cr_expect_str_eq(r->ev[1].rv, "101");
	cr_expect_str_eq(r->ev[2].rv, "102");
	/* The unknown "extra" member is not part of the object. */
	cr_expect_null(strstr(r->ev[1].json, "ignored"));
	cr_expect_str_eq(r->ev[3].name, "");
	cr_expect_str_eq(r->ev[3].rv, "150");
	cr_expect_str_eq(r->ev[4].rv, "");
	sf_jv st = sf_jv_root(r->ev[4].json, strlen(r->ev[4].json));
	int64_t code = 0;
	cr_expect_eq(sf_jv_int64(sf_jv_get(st, "code"), &code), 0);
	cr_expect_eq(code, 410);
	cr_expect(sf_jv_streq(sf_jv_get(st, "reason"), "Expired"));
	cr_expect(sf_jv_streq(sf_jv_get(st, "kind"), "Status"));
}

static void expect_same(const rec *a, const rec *b, const char *how)
{
	cr_assert_eq(a->n, b->n, "%s: %zu events, want %zu", how, a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		cr_assert_eq(a->ev[i].type, b->ev[i].type, "%s: event %zu", how, i);
		cr_assert_str_eq(a->ev[i].json, b->ev[i].json, "%s: event %zu", how, i);
		cr_assert_str_eq(a->ev[i].rv, b->ev[i].rv, "%s: event %zu", how, i);
	}
}

static sf_watch_decoder *new_watch(rec *r, size_t max)
{
	sf_watch_decoder *d = sf_watch_decoder_new(on_event, r, max);
	cr_assert_not_null(d);
	cr_assert_str_eq(sf_watch_decoder_error(d), "");
	return d;
}

static void decode_whole(const char *s, size_t n, rec *r)
{
	sf_watch_decoder *d = new_watch(r, 0);
	cr_assert_eq(sf_watch_decoder_feed(d, s, n), 0, "%s", sf_watch_decoder_error(d));
	cr_assert_eq(sf_watch_decoder_finish(d), 0, "%s", sf_watch_decoder_error(d));
	cr_assert_eq(sf_watch_decoder_count(d), r->n);
	sf_watch_decoder_free(d);
}

Test(watch, whole_stream)
{
	size_t n;
	char *s = make_stream(&n, NULL);
	rec r = {0};
	decode_whole(s, n, &r);
	check_reference(&r);
	rec_clear(&r);
	free(s);
}

Test(watch, every_split)
{
	size_t n;
	char *s = make_stream(&n, NULL);
	rec ref = {0};
	decode_whole(s, n, &ref);
	check_reference(&ref);
	for (size_t cut = 0; cut <= n; cut++) {
		rec r = {0};
		sf_watch_decoder *d = new_watch(&r, 0);
		cr_assert_eq(sf_watch_decoder_feed(d, s, cut), 0, "cut %zu: %s", cut,
		             sf_watch_decoder_error(d));
		cr_assert_eq(sf_watch_decoder_feed(d, s + cut, n - cut), 0, "cut %zu: %s", cut,
		             sf_watch_decoder_error(d));
		cr_assert_eq(sf_watch_decoder_finish(d), 0, "cut %zu: %s", cut,
		             sf_watch_decoder_error(d));
		char how[32];
		snprintf(how, sizeof(how), "cut at %zu", cut);
		expect_same(&r, &ref, how);
		cr_assert_eq(sf_watch_decoder_count(d), NEV);
		sf_watch_decoder_free(d);
		rec_clear(&r);
	}
	rec_clear(&ref);
	free(s);
}

Test(watch, byte_at_a_time)
{
	size_t n, ends[NEV];
	char *s = make_stream(&n, ends);
	rec ref = {0};
	decode_whole(s, n, &ref);
	rec r = {0};
	sf_watch_decoder *d = new_watch(&r, 0);
	size_t next = 0;
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(sf_watch_decoder_feed(d, s + i, 1), 0, "byte %zu: %s", i,
		             sf_watch_decoder_error(d));
		/* Each event is delivered as soon as its closing brace arrives. */
		if (next < NEV && i + 1 == ends[next])
			next++;
		cr_assert_eq(r.n, next, "after byte %zu", i);
	}
	cr_assert_eq(sf_watch_decoder_finish(d), 0);
	expect_same(&r, &ref, "byte at a time");
	sf_watch_decoder_free(d);
	rec_clear(&r);
	rec_clear(&ref);
	free(s);
}

/* A stream cut anywhere: finish succeeds exactly when the cut falls between
 * events, otherwise it reports truncation. */
Test(watch, truncated)
{
	size_t n, ends[NEV];
	char *s = make_stream(&n, ends);
	for (size_t cut = 0; cut < n; cut++) {
		size_t complete = 0;
		int between = cut == 0;
		for (size_t i = 0; i < NEV; i++) {
			if (ends[i] <= cut)
				complete = i + 1;
			if (cut == ends[i] || cut == ends[i] + 1)
				between = 1;
		}
		rec r = {0};
		sf_watch_decoder *d = new_watch(&r, 0);
		cr_assert_eq(sf_watch_decoder_feed(d, s, cut), 0);
		cr_assert_eq(r.n, complete, "cut %zu", cut);
		int rc = sf_watch_decoder_finish(d);
		if (between) {
			cr_assert_eq(rc, 0, "cut %zu: %s", cut, sf_watch_decoder_error(d));
		} else {
			cr_assert_eq(rc, -EBADMSG, "cut %zu", cut);
			cr_assert(strstr(sf_watch_decoder_error(d), "truncated") != NULL,
			          "cut %zu: %s", cut, sf_watch_decoder_error(d));
			/* Errors stick. */
			cr_assert_eq(sf_watch_decoder_feed(d, "\n", 1), -EBADMSG);
			cr_assert_eq(sf_watch_decoder_finish(d), -EBADMSG);
		}
		sf_watch_decoder_free(d);
		rec_clear(&r);
	}
	free(s);
}

Test(watch, empty_and_whitespace)
{
	rec r = {0};
	sf_watch_decoder *d = new_watch(&r, 0);
	cr_expect_eq(sf_watch_decoder_finish(d), 0, "%s", sf_watch_decoder_error(d));
	cr_expect_eq(sf_watch_decoder_count(d), 0);
	sf_watch_decoder_free(d);

	d = new_watch(&r, 0);
	cr_expect_eq(sf_watch_decoder_feed(d, " \r\n\t", 4), 0);
	cr_expect_eq(sf_watch_decoder_feed(d, "", 0), 0);
	cr_expect_eq(sf_watch_decoder_finish(d), 0, "%s", sf_watch_decoder_error(d));
	cr_expect_eq(r.n, 0);
	/* Nothing is accepted after finish. */
	cr_expect_eq(sf_watch_decoder_feed(d, "{}", 2), -EINVAL);
	sf_watch_decoder_free(d);
}

/* in must fail with -EBADMSG (after `good` events) and a message saying why. */
static void expect_bad_after(const char *in, size_t n, const char *why, size_t good)
{
	rec r = {0};
	sf_watch_decoder *d = new_watch(&r, 0);
	int rc = sf_watch_decoder_feed(d, in, n);
	if (rc == 0)
		rc = sf_watch_decoder_finish(d);
	cr_expect_eq(rc, -EBADMSG, "input %.*s", (int)n, in);
	cr_expect(strstr(sf_watch_decoder_error(d), why) != NULL, "input %.*s: \"%s\" lacks \"%s\"",
	          (int)n, in, sf_watch_decoder_error(d), why);
	cr_expect_eq(r.n, good, "input %.*s", (int)n, in);
	/* After an error the decoder accepts nothing more. */
	cr_expect_eq(sf_watch_decoder_feed(d, events[2], strlen(events[2])), -EBADMSG);
	cr_expect_eq(r.n, good);
	sf_watch_decoder_free(d);
	rec_clear(&r);
}

static void expect_bad(const char *in, size_t n, const char *why)
{
	expect_bad_after(in, n, why, 0);
}

#define BAD(lit, why) expect_bad(lit, sizeof(lit) - 1, why)
#define BAD_AFTER_ONE(lit, why) expect_bad_after(lit, sizeof(lit) - 1, why, 1)

Test(watch, malformed)
{
	BAD("not json", "lexical error");
	BAD("{\"type\":\"ADDED\",\"object\":{}", "truncated");
	BAD("[{\"type\":\"ADDED\",\"object\":{}}]", "event is an array");
	BAD("\"ADDED\"", "event is a string");
	BAD("42 ", "event is a number");
	BAD("42", "event is a number");
	BAD("null", "event is null");
	BAD("{\"type\":\"ADDED\"}", "without \"object\"");
	BAD("{\"object\":{\"kind\":\"Pod\"}}", "without \"type\"");
	BAD("{\"type\":\"UPSERTED\",\"object\":{}}", "unknown event type \"UPSERTED\"");
	BAD("{\"type\":\"added\",\"object\":{}}", "unknown event type");
	BAD("{\"type\":7,\"object\":{}}", "event type is a number");
	BAD("{\"type\":\"ADDED\",\"object\":null}", "\"object\" is null");
	BAD("{\"type\":\"ADDED\",\"object\":[1]}", "\"object\" is an array");
	BAD_AFTER_ONE("{\"type\":\"ADDED\",\"object\":{}} x", "lexical error");
	BAD_AFTER_ONE("{\"type\":\"ADDED\",\"object\":{}}\n\"partial", "truncated");
	BAD_AFTER_ONE("{\"type\":\"ADDED\",\"object\":{}}\ntru", "lexical error");
	BAD("{\"type\":\"ADDED\",,\"object\":{}}", "parse error");
	BAD("{\"type\":\"ADDED\",\"object\":{\"a\":\"\xc3\"}}", "lexical error");
	BAD("\x00\x01\xff\xfe", "lexical error");
	/* Unknown types are shown safely in the message. */
	BAD("{\"type\":\"\\u0007\\u00e9AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}",
	    "unknown event type \"???AAAA");
}

Test(watch, object_nested_too_deep)
{
	char buf[1024];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "{\"type\":\"ADDED\",\"object\":{\"a\":");
	for (int i = 0; i < 200; i++)
		buf[n++] = '[';
	for (int i = 0; i < 200; i++)
		buf[n++] = ']';
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "}}");
	expect_bad(buf, n, "object nested deeper than 127 levels");

	/* 127 levels (the object and 126 arrays) are fine. */
	n = (size_t)snprintf(buf, sizeof(buf), "{\"type\":\"ADDED\",\"object\":{\"a\":");
	for (int i = 0; i < 126; i++)
		buf[n++] = '[';
	for (int i = 0; i < 126; i++)
		buf[n++] = ']';
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "}}");
	rec r = {0};
	sf_watch_decoder *d = new_watch(&r, 0);
	cr_expect_eq(sf_watch_decoder_feed(d, buf, n), 0, "%s", sf_watch_decoder_error(d));
	cr_expect_eq(r.n, 1);
	cr_expect_eq(r.n ? strlen(r.ev[0].json) : 0, 5 + 2 * 126 + 1);
	sf_watch_decoder_free(d);
	rec_clear(&r);
}

Test(watch, size_cap)
{
	const char *small = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n";
	char big[512];
	snprintf(
	    big, sizeof(big),
	    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\"},\"data\":\"%0200d\"}}\n",
	    0);
	rec r = {0};
	sf_watch_decoder *d = new_watch(&r, 128);
	cr_assert_eq(sf_watch_decoder_feed(d, small, strlen(small)), 0);
	cr_assert_eq(r.n, 1);
	cr_assert_str_eq(r.ev[0].name, "a");
	int rc = sf_watch_decoder_feed(d, big, strlen(big));
	cr_expect_eq(rc, -E2BIG);
	cr_expect(strstr(sf_watch_decoder_error(d), "larger than 128 bytes") != NULL, "%s",
	          sf_watch_decoder_error(d));
	cr_expect_eq(r.n, 1);
	cr_expect_eq(sf_watch_decoder_finish(d), -E2BIG);
	sf_watch_decoder_free(d);
	rec_clear(&r);

	/* The same event split in small pieces: the cap holds mid-event. */
	d = new_watch(&r, 128);
	rc = 0;
	size_t i = 0;
	for (; i < strlen(big) && rc == 0; i += 7) {
		size_t m = strlen(big) - i < 7 ? strlen(big) - i : 7;
		rc = sf_watch_decoder_feed(d, big + i, m);
	}
	cr_expect_eq(rc, -E2BIG);
	cr_expect_eq(r.n, 0);
	sf_watch_decoder_free(d);

	/* A top-level token that never ends is not buffered without bound. */
	size_t huge = (size_t)4 << 20;
	char *junk = malloc(huge);
	cr_assert_not_null(junk);
	memset(junk, 'a', huge);
	junk[0] = '"';
	d = new_watch(&r, 1 << 20);
	cr_expect_eq(sf_watch_decoder_feed(d, junk, huge), -E2BIG);
	sf_watch_decoder_free(d);
	/* Nor is an event that never ends. */
	d = new_watch(&r, 1 << 20);
	const char *head = "{\"type\":\"ADDED\",\"object\":{\"x\":";
	cr_assert_eq(sf_watch_decoder_feed(d, head, strlen(head)), 0);
	cr_expect_eq(sf_watch_decoder_feed(d, junk, huge), -E2BIG);
	sf_watch_decoder_free(d);
	free(junk);
}

Test(watch, large_events_and_whitespace)
{
	/* Events close to the default cap go through, and whitespace between
	 * events does not count against it. */
	size_t pad = (size_t)3 << 20;
	char *s = malloc(pad + 128);
	cr_assert_not_null(s);
	size_t n = (size_t)sprintf(s, "{\"type\":\"ADDED\",\"object\":{\"data\":\"");
	memset(s + n, 'x', pad);
	n += pad;
	n += (size_t)sprintf(s + n, "\"}}");
	rec r = {0};
	sf_watch_decoder *d = new_watch(&r, (size_t)4 << 20);
	for (int round = 0; round < 3; round++) {
		cr_assert_eq(sf_watch_decoder_feed(d, s, n), 0, "%s", sf_watch_decoder_error(d));
		char *ws = malloc(pad);
		cr_assert_not_null(ws);
		memset(ws, '\n', pad);
		cr_assert_eq(sf_watch_decoder_feed(d, ws, pad), 0, "%s", sf_watch_decoder_error(d));
		free(ws);
	}
	cr_assert_eq(sf_watch_decoder_finish(d), 0);
	cr_expect_eq(r.n, 3);
	cr_expect_eq(strlen(r.ev[2].json), pad + 11);
	sf_watch_decoder_free(d);
	rec_clear(&r);
	free(s);
}

Test(watch, callback_stops)
{
	size_t n;
	char *s = make_stream(&n, NULL);
	rec r = {0};
	r.stop_after = 2;
	sf_watch_decoder *d = new_watch(&r, 0);
	cr_expect_eq(sf_watch_decoder_feed(d, s, n), -ECANCELED);
	cr_expect_eq(r.n, 2, "no event after the callback asked to stop");
	cr_expect_eq(sf_watch_decoder_count(d), 2);
	cr_expect(strstr(sf_watch_decoder_error(d), "stopped") != NULL);
	cr_expect_eq(sf_watch_decoder_feed(d, s, n), -ECANCELED);
	cr_expect_eq(sf_watch_decoder_finish(d), -ECANCELED);
	cr_expect_eq(r.n, 2);
	sf_watch_decoder_free(d);
	rec_clear(&r);
	free(s);
}

Test(watch, type_names)
{
	cr_expect_str_eq(sf_watch_type_name(SF_WATCH_ADDED), "ADDED");
	cr_expect_str_eq(sf_watch_type_name(SF_WATCH_MODIFIED), "MODIFIED");
	cr_expect_str_eq(sf_watch_type_name(SF_WATCH_DELETED), "DELETED");
	cr_expect_str_eq(sf_watch_type_name(SF_WATCH_BOOKMARK), "BOOKMARK");
	cr_expect_str_eq(sf_watch_type_name(SF_WATCH_ERROR), "ERROR");
	cr_expect_str_eq(sf_watch_type_name((sf_watch_type)0), "UNKNOWN");
}

/* ---- LIST ---- */

typedef struct items {
	char *json[8];
	char names[8][16];
	size_t n;
	size_t stop_after;
} items;

static int on_item(void *ud, sf_obj *o)
{
	items *it = ud;
	cr_assert_lt(it->n, 8);
	it->json[it->n] = strdup(o->json);
	snprintf(it->names[it->n], sizeof(it->names[0]), "%s", o->name);
	it->n++;
	sf_obj_unref(o);
	return it->stop_after && it->n >= it->stop_after;
}

static void items_clear(items *it)
{
	for (size_t i = 0; i < it->n; i++)
		free(it->json[i]);
	memset(it, 0, sizeof(*it));
}

static const char list_body[] =
    "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"9001\","
    "\"continue\":\"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTAwMSwic3RhcnQiOiJiXHUwMDAwIn0\","
    "\"remainingItemCount\":42},\n\"items\": [\n"
    " {\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"1\"},"
    "\"spec\":{\"items\":[{\"metadata\":{\"resourceVersion\":\"x\"}}]}},\n"
    " {\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\",\"resourceVersion\":\"2\"},"
    "\"status\":{\"n\":-1.5e-3,\"list\":[[],{}]}},\n"
    " {\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\",\"resourceVersion\":\"3\","
    "\"labels\":{\"continue\":\"no\"}}}\n]}\n";

static void check_list(const sf_list_decoder *l, const items *it, const char *how)
{
	cr_assert_eq(it->n, 3, "%s", how);
	cr_assert_eq(sf_list_decoder_count(l), 3, "%s", how);
	cr_assert_str_eq(it->names[0], "a", "%s", how);
	cr_assert_str_eq(it->names[1], "b", "%s", how);
	cr_assert_str_eq(it->names[2], "c", "%s", how);
	cr_assert_str_eq(
	    it->json[0],
	    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"1\"},"
	    "\"spec\":{\"items\":[{\"metadata\":{\"resourceVersion\":\"x\"}}]}}",
	    "%s", how);
	cr_assert_str_eq(
	    it->json[1],
	    "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\",\"resourceVersion\":\"2\"},"
	    "\"status\":{\"n\":-1.5e-3,\"list\":[[],{}]}}",
	    "%s", how);
	cr_assert_str_eq(sf_list_decoder_rv(l), "9001", "%s", how);
	cr_assert_str_eq(sf_list_decoder_continue(l),
	                 "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTAwMSwic3RhcnQiOiJiXHUwMDAwIn0",
	                 "%s", how);
	cr_assert_eq(sf_list_decoder_remaining(l), 42, "%s", how);
	cr_assert_str_eq(sf_list_decoder_kind(l), "PodList", "%s", how);
	cr_assert_str_eq(sf_list_decoder_error(l), "", "%s", how);
}

Test(list, every_split)
{
	size_t n = sizeof(list_body) - 1;
	for (size_t cut = 0; cut <= n; cut++) {
		items it = {0};
		sf_list_decoder *l = sf_list_decoder_new(on_item, &it, 0);
		cr_assert_not_null(l);
		cr_assert_eq(sf_list_decoder_feed(l, list_body, cut), 0, "cut %zu: %s", cut,
		             sf_list_decoder_error(l));
		cr_assert_eq(sf_list_decoder_feed(l, list_body + cut, n - cut), 0, "cut %zu: %s",
		             cut, sf_list_decoder_error(l));
		cr_assert_eq(sf_list_decoder_finish(l), 0, "cut %zu: %s", cut,
		             sf_list_decoder_error(l));
		char how[32];
		snprintf(how, sizeof(how), "cut at %zu", cut);
		check_list(l, &it, how);
		sf_list_decoder_free(l);
		items_clear(&it);
	}
}

Test(list, byte_at_a_time_streams_items)
{
	size_t n = sizeof(list_body) - 1;
	items it = {0};
	sf_list_decoder *l = sf_list_decoder_new(on_item, &it, 0);
	cr_assert_not_null(l);
	const char *first_end = strstr(list_body, "}}]}}") + 5;
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(sf_list_decoder_feed(l, list_body + i, 1), 0);
		/* The first item is handed over as soon as it is complete. */
		if (list_body + i + 1 == first_end)
			cr_assert_eq(it.n, 1);
		if (list_body + i + 1 < first_end)
			cr_assert_eq(it.n, 0);
	}
	cr_assert_eq(sf_list_decoder_finish(l), 0);
	check_list(l, &it, "byte at a time");
	sf_list_decoder_free(l);
	items_clear(&it);
}

Test(list, metadata_after_items_and_defaults)
{
	const char *b =
	    "{\"items\":[],\"metadata\":{\"resourceVersion\":\"77\"},\"kind\":\"ConfigMapList\"}";
	items it = {0};
	sf_list_decoder *l = sf_list_decoder_new(on_item, &it, 0);
	cr_assert_not_null(l);
	cr_assert_eq(sf_list_decoder_feed(l, b, strlen(b)), 0);
	cr_assert_eq(sf_list_decoder_finish(l), 0);
	cr_expect_eq(it.n, 0);
	cr_expect_str_eq(sf_list_decoder_rv(l), "77");
	cr_expect_str_eq(sf_list_decoder_continue(l), "");
	cr_expect_eq(sf_list_decoder_remaining(l), -1);
	cr_expect_str_eq(sf_list_decoder_kind(l), "ConfigMapList");
	sf_list_decoder_free(l);

	/* "items": null is an empty list. */
	b = "{\"kind\":\"PodList\",\"items\":null}";
	l = sf_list_decoder_new(on_item, &it, 0);
	cr_assert_not_null(l);
	cr_assert_eq(sf_list_decoder_feed(l, b, strlen(b)), 0);
	cr_assert_eq(sf_list_decoder_finish(l), 0);
	cr_expect_eq(sf_list_decoder_count(l), 0);
	cr_expect_str_eq(sf_list_decoder_rv(l), "");
	sf_list_decoder_free(l);
}

Test(list, status_instead_of_list)
{
	const char *b =
	    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
	    "\"message\":\"The provided continue parameter is too old\",\"reason\":\"Expired\","
	    "\"code\":410}";
	items it = {0};
	sf_list_decoder *l = sf_list_decoder_new(on_item, &it, 0);
	cr_assert_not_null(l);
	cr_assert_eq(sf_list_decoder_feed(l, b, strlen(b)), 0);
	cr_assert_eq(sf_list_decoder_finish(l), 0, "%s", sf_list_decoder_error(l));
	cr_expect_str_eq(sf_list_decoder_kind(l), "Status");
	cr_expect_eq(it.n, 0);
	cr_expect_eq(sf_list_decoder_count(l), 0);
	cr_expect_str_eq(sf_list_decoder_rv(l), "");
	cr_expect_eq(sf_list_decoder_remaining(l), -1);
	sf_list_decoder_free(l);
}

static void expect_list_bad(const char *b, size_t n, int want, const char *why, size_t max)
{
	items it = {0};
	sf_list_decoder *l = sf_list_decoder_new(on_item, &it, max);
	cr_assert_not_null(l);
	int rc = sf_list_decoder_feed(l, b, n);
	if (rc == 0)
		rc = sf_list_decoder_finish(l);
	cr_expect_eq(rc, want, "body %.*s", (int)n, b);
	cr_expect(strstr(sf_list_decoder_error(l), why) != NULL, "body %.*s: \"%s\" lacks \"%s\"",
	          (int)n, b, sf_list_decoder_error(l), why);
	cr_expect_eq(sf_list_decoder_feed(l, "{}", 2), want);
	sf_list_decoder_free(l);
	items_clear(&it);
}

Test(list, malformed)
{
	size_t n = sizeof(list_body) - 1;
	for (size_t cut = 0; cut < n - 1; cut++)
		expect_list_bad(list_body, cut, -EBADMSG, "truncated", 0);
	expect_list_bad("[]", 2, -EBADMSG, "LIST body is an array", 0);
	expect_list_bad("{\"items\":{}}", 12, -EBADMSG, "\"items\" is an object", 0);
	expect_list_bad("{\"items\":[{},1]}", 16, -EBADMSG, "item 1 is a number", 0);
	expect_list_bad("{\"items\":[]} {}", 15, -EBADMSG, "trailing garbage", 0);
	expect_list_bad("{\"items\":[}", 11, -EBADMSG, "malformed LIST body", 0);
	expect_list_bad("", 0, -EBADMSG, "truncated", 0);
}

Test(list, size_cap_and_stop)
{
	char body[1024];
	snprintf(body, sizeof(body), "{\"items\":[{\"a\":1},{\"b\":\"%0300d\"},{\"c\":3}]}", 0);
	expect_list_bad(body, strlen(body), -E2BIG, "LIST item larger than 100 bytes", 100);
	snprintf(body, sizeof(body), "{\"kind\":\"%0300d\",\"items\":[]}", 0);
	expect_list_bad(body, strlen(body), -E2BIG, "outside items", 100);

	items it = {0};
	it.stop_after = 2;
	sf_list_decoder *l = sf_list_decoder_new(on_item, &it, 0);
	cr_assert_not_null(l);
	cr_expect_eq(sf_list_decoder_feed(l, list_body, sizeof(list_body) - 1), -ECANCELED);
	cr_expect_eq(it.n, 2);
	cr_expect_eq(sf_list_decoder_count(l), 2);
	cr_expect_eq(sf_list_decoder_finish(l), -ECANCELED);
	sf_list_decoder_free(l);
	items_clear(&it);
}
