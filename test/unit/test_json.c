/*
 * test_json.c - JSON views (types, lookups, paths, iteration, string
 * decoding, integers), minification with yajl and its errors, sf_obj
 * metadata extraction and reference counting, and views on malformed text.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/cache.h"
#include "steadfast/intern.h"
#include "steadfast/json.h"

static sf_jv root(const char *s)
{
	return sf_jv_root(s, strlen(s));
}

/* A view's text as a NUL-terminated copy (for comparisons). */
static char *text(sf_jv v)
{
	cr_assert(sf_jv_ok(v));
	char *s = malloc(v.n + 1);
	cr_assert_not_null(s);
	memcpy(s, v.p, v.n);
	s[v.n] = '\0';
	return s;
}

static void expect_text(sf_jv v, const char *want)
{
	char *s = text(v);
	cr_expect_str_eq(s, want);
	free(s);
}

static void expect_str(sf_jv v, const char *want)
{
	char *s = sf_jv_strdup(v);
	cr_assert_not_null(s, "expected a string, view is %.*s", (int)v.n, v.p ? v.p : "");
	cr_expect_str_eq(s, want);
	free(s);
}

static const char *pod =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-0\",\"namespace\":"
    "\"prod\",\"uid\":\"1f2e\",\"resourceVersion\":\"4711\",\"labels\":{\"app.kubernetes.io/"
    "name\":\"web\",\"tier\":\"front\"}},\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":"
    "\"nginx:1.25\",\"ports\":[{\"containerPort\":80},{\"containerPort\":443}]},{\"name\":"
    "\"sidecar\",\"args\":[\"-v\",\"--x=[1,2]\"]}],\"priority\":-12,\"hostNetwork\":false,"
    "\"nodeName\":null,\"ratio\":0.25,\"big\":123456789012345678901234567890}}";

Test(json, types)
{
	cr_expect_eq(sf_jv_type(root("{}")), SF_JSON_OBJECT);
	cr_expect_eq(sf_jv_type(root("[]")), SF_JSON_ARRAY);
	cr_expect_eq(sf_jv_type(root("\"x\"")), SF_JSON_STRING);
	cr_expect_eq(sf_jv_type(root("-1.5e3")), SF_JSON_NUMBER);
	cr_expect_eq(sf_jv_type(root("7")), SF_JSON_NUMBER);
	cr_expect_eq(sf_jv_type(root("true")), SF_JSON_TRUE);
	cr_expect_eq(sf_jv_type(root("false")), SF_JSON_FALSE);
	cr_expect_eq(sf_jv_type(root("null")), SF_JSON_NULL);
	cr_expect_eq(sf_jv_type(root("nul")), SF_JSON_NONE);
	cr_expect_eq(sf_jv_type(root("")), SF_JSON_NONE);
	cr_expect_eq(sf_jv_type(root("   ")), SF_JSON_NONE);
	cr_expect_eq(sf_jv_type(SF_JV_NONE), SF_JSON_NONE);
	cr_expect_not(sf_jv_ok(SF_JV_NONE));
	/* The root is the first value without surrounding whitespace. */
	expect_text(root(" \n\t{\"a\": [1, 2]} \n"), "{\"a\": [1, 2]}");
	expect_text(root("  42  "), "42");
}

Test(json, object_members)
{
	sf_jv r = root(pod);
	cr_assert_eq(sf_jv_type(r), SF_JSON_OBJECT);
	expect_str(sf_jv_get(r, "kind"), "Pod");
	sf_jv md = sf_jv_get(r, "metadata");
	cr_assert_eq(sf_jv_type(md), SF_JSON_OBJECT);
	expect_str(sf_jv_get(md, "name"), "web-0");
	sf_jv labels = sf_jv_get(md, "labels");
	/* Keys with dots and slashes only through sf_jv_get. */
	expect_str(sf_jv_get(labels, "app.kubernetes.io/name"), "web");
	cr_expect_eq(sf_jv_len(labels), 2);
	cr_expect_not(sf_jv_ok(sf_jv_get(md, "missing")));
	cr_expect_not(sf_jv_ok(sf_jv_get(md, "nam")));
	cr_expect_not(sf_jv_ok(sf_jv_get(sf_jv_get(md, "name"), "x")));
	/* A key nested deeper is not a member of the outer object. */
	cr_expect_not(sf_jv_ok(sf_jv_get(r, "name")));
	cr_expect_eq(sf_jv_type(sf_jv_path(r, "spec.nodeName")), SF_JSON_NULL);
	cr_expect_eq(sf_jv_type(sf_jv_path(r, "spec.hostNetwork")), SF_JSON_FALSE);
	expect_text(sf_jv_path(r, "spec.ratio"), "0.25");
	expect_text(sf_jv_path(r, "spec.big"), "123456789012345678901234567890");
	cr_expect_eq(sf_jv_len(r), 4);
	cr_expect_eq(sf_jv_len(sf_jv_get(r, "kind")), 0);
}

Test(json, arrays)
{
	sf_jv c = sf_jv_path(root(pod), "spec.containers");
	cr_assert_eq(sf_jv_type(c), SF_JSON_ARRAY);
	cr_expect_eq(sf_jv_len(c), 2);
	expect_str(sf_jv_get(sf_jv_at(c, 1), "name"), "sidecar");
	cr_expect_not(sf_jv_ok(sf_jv_at(c, 2)));
	cr_expect_not(sf_jv_ok(sf_jv_at(sf_jv_at(c, 0), 0))); /* object, not array */
	sf_jv args = sf_jv_get(sf_jv_at(c, 1), "args");
	/* Brackets inside strings do not confuse the scanner. */
	expect_str(sf_jv_at(args, 1), "--x=[1,2]");
	cr_expect_eq(sf_jv_len(root("[]")), 0);
	cr_expect_eq(sf_jv_len(root("[ 1 , [2,3] , {\"a\":[]} , \"]\" ]")), 4);
	expect_text(sf_jv_at(root("[ 1 , [2,3] , {\"a\":[]} , \"]\" ]"), 2), "{\"a\":[]}");
}

Test(json, paths)
{
	sf_jv r = root(pod);
	expect_str(sf_jv_path(r, "metadata.namespace"), "prod");
	expect_str(sf_jv_path(r, "spec.containers[0].image"), "nginx:1.25");
	expect_text(sf_jv_path(r, "spec.containers[0].ports[1].containerPort"), "443");
	expect_str(sf_jv_path(r, "spec.containers[1].args[0]"), "-v");
	expect_text(sf_jv_path(r, ""), pod);
	sf_jv nested = root("{\"m\":[[1,2],[3,[4,5]]]}");
	expect_text(sf_jv_path(nested, "m[1][1][0]"), "4");
	expect_text(sf_jv_path(root("[[\"a\"],[\"b\"]]"), "[1][0]"), "\"b\"");
	/* Absent or malformed paths. */
	cr_expect_not(sf_jv_ok(sf_jv_path(r, "spec.containers[2].name")));
	cr_expect_not(sf_jv_ok(sf_jv_path(r, "spec.nope.x")));
	cr_expect_not(sf_jv_ok(sf_jv_path(r, "metadata..name")));
	cr_expect_not(sf_jv_ok(sf_jv_path(r, "metadata.")));
	cr_expect_not(sf_jv_ok(sf_jv_path(r, ".metadata")));
	cr_expect_not(sf_jv_ok(sf_jv_path(r, "spec.containers[x]")));
	cr_expect_not(sf_jv_ok(sf_jv_path(r, "spec.containers[0")));
	cr_expect_not(sf_jv_ok(sf_jv_path(r, "spec.containers[]")));
	cr_expect_not(sf_jv_ok(sf_jv_path(r, "spec.containers[0]name")));
	cr_expect_not(sf_jv_ok(sf_jv_path(r, "spec.containers[99999999999999999999999]")));
	cr_expect_not(sf_jv_ok(sf_jv_path(r, NULL)));
	cr_expect_not(sf_jv_ok(sf_jv_path(SF_JV_NONE, "a")));
}

Test(json, iteration)
{
	sf_jv r = root("{ \"a\" : 1 , \"b\":[true,null], \"c\\u0041\":{\"d\":\"}\"} }");
	sf_jv_iter it = sf_jv_iter_init(r);
	sf_jv k, v;
	const char *keys[] = {"a", "b", "cA"};
	const char *vals[] = {"1", "[true,null]", "{\"d\":\"}\"}"};
	size_t n = 0;
	while (sf_jv_next(&it, &k, &v)) {
		cr_assert_lt(n, 3);
		expect_str(k, keys[n]);
		expect_text(v, vals[n]);
		n++;
	}
	cr_expect_eq(n, 3);
	/* Exhausted iterators stay exhausted. */
	cr_expect_eq(sf_jv_next(&it, &k, &v), 0);
	cr_expect_not(sf_jv_ok(k));
	cr_expect_not(sf_jv_ok(v));

	it = sf_jv_iter_init(root("[\"x\", 2 ,{}]"));
	const char *elems[] = {"\"x\"", "2", "{}"};
	n = 0;
	while (sf_jv_next(&it, &k, &v)) {
		cr_assert_lt(n, 3);
		cr_expect_not(sf_jv_ok(k));
		expect_text(v, elems[n]);
		n++;
	}
	cr_expect_eq(n, 3);

	it = sf_jv_iter_init(root("\"scalar\""));
	cr_expect_eq(sf_jv_next(&it, &k, &v), 0);
	it = sf_jv_iter_init(root("{}"));
	cr_expect_eq(sf_jv_next(&it, NULL, NULL), 0);
	it = sf_jv_iter_init(SF_JV_NONE);
	cr_expect_eq(sf_jv_next(&it, NULL, NULL), 0);
}

Test(json, string_escapes)
{
	expect_str(root("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\""), "a\"b\\c/d\b\f\n\r\t");
	expect_str(root("\"caf\\u00e9 \\u20AC\""), "caf\xc3\xa9 \xe2\x82\xac");
	expect_str(root("\"\\ud83d\\ude00!\""), "\xf0\x9f\x98\x80!");
	expect_str(root("\"\\uDBFF\\uDFFF\""), "\xf4\x8f\xbf\xbf");
	/* Unpaired surrogates become U+FFFD. */
	expect_str(root("\"\\ud83dx\""), "\xef\xbf\xbdx");
	expect_str(root("\"\\ude00\""), "\xef\xbf\xbd");
	expect_str(root("\"\\ud83d\\u0041\""), "\xef\xbf\xbd"
	                                       "A");
	/* Raw UTF-8 passes through. */
	expect_str(root("\"\xe6\x97\xa5\xe6\x9c\xac\""), "\xe6\x97\xa5\xe6\x9c\xac");
	expect_str(root("\"\""), "");

	/* Malformed escapes. */
	cr_expect_null(sf_jv_strdup(root("\"\\x\"")));
	cr_expect_null(sf_jv_strdup(root("\"\\u12\"")));
	cr_expect_null(sf_jv_strdup(root("\"\\u12g4\"")));
	cr_expect_null(sf_jv_strdup(root("42")));
	cr_expect_null(sf_jv_strdup(SF_JV_NONE));
	/* A view cut inside an escape is not a string. */
	sf_jv cut = {"\"\\\"", 3};
	cr_expect_null(sf_jv_strdup(cut));

	char buf[8];
	cr_expect_eq(sf_jv_str(root("\"abc\""), buf, sizeof(buf)), 3);
	cr_expect_str_eq(buf, "abc");
	cr_expect_eq(sf_jv_str(root("\"abcdefg\""), buf, sizeof(buf)), 7);
	cr_expect_eq(sf_jv_str(root("\"abcdefgh\""), buf, sizeof(buf)), -ERANGE);
	cr_expect_eq(buf[sizeof(buf) - 1], '\0');
	cr_expect_eq(sf_jv_str(root("\"\\u00e9\""), buf, 2), -ERANGE);
	cr_expect_eq(sf_jv_str(root("\"\\u00e9\""), buf, 3), 2);
	cr_expect_eq(sf_jv_str(root("true"), buf, sizeof(buf)), -EINVAL);
	cr_expect_eq(sf_jv_str(root("\"x\""), NULL, 0), -ERANGE);
	/* \u0000 decodes to a NUL byte (counted in the length). */
	cr_expect_eq(sf_jv_str(root("\"a\\u0000b\""), buf, sizeof(buf)), 3);
	cr_expect_eq(memcmp(buf, "a\0b", 4), 0);
}

Test(json, string_equality)
{
	cr_expect(sf_jv_streq(root("\"Running\""), "Running"));
	cr_expect_not(sf_jv_streq(root("\"Running\""), "Run"));
	cr_expect_not(sf_jv_streq(root("\"Run\""), "Running"));
	cr_expect(sf_jv_streq(root("\"R\\u0075nning\""), "Running"));
	cr_expect_not(sf_jv_streq(root("\"R\\u0075nnin\""), "Running"));
	cr_expect_not(sf_jv_streq(root("\"R\\u0075nningX\""), "Running"));
	cr_expect(sf_jv_streq(root("\"a\\/b\""), "a/b"));
	cr_expect(sf_jv_streq(root("\"\""), ""));
	cr_expect_not(sf_jv_streq(root("\"\\q\""), "\\q"));
	cr_expect_not(sf_jv_streq(root("Running"), "Running"));
	cr_expect_not(sf_jv_streq(SF_JV_NONE, ""));
	/* Member lookup compares decoded keys. */
	expect_text(sf_jv_get(root("{\"a\\\"b\":1,\"a\":2}"), "a\"b"), "1");
	expect_text(sf_jv_get(root("{\"\\u00e9t\\u00e9\":3}"), "\xc3\xa9t\xc3\xa9"), "3");
}

Test(json, integers_and_bools)
{
	int64_t v = 1;
	cr_expect_eq(sf_jv_int64(root("0"), &v), 0);
	cr_expect_eq(v, 0);
	cr_expect_eq(sf_jv_int64(root("-17"), &v), 0);
	cr_expect_eq(v, -17);
	cr_expect_eq(sf_jv_int64(root("9223372036854775807"), &v), 0);
	cr_expect_eq(v, INT64_MAX);
	cr_expect_eq(sf_jv_int64(root("-9223372036854775808"), &v), 0);
	cr_expect_eq(v, INT64_MIN);
	v = 5;
	cr_expect_eq(sf_jv_int64(root("9223372036854775808"), &v), -ERANGE);
	cr_expect_eq(sf_jv_int64(root("-9223372036854775809"), &v), -ERANGE);
	cr_expect_eq(sf_jv_int64(root("123456789012345678901234567890"), &v), -ERANGE);
	cr_expect_eq(v, 5, "failed conversions leave *out alone");
	cr_expect_eq(sf_jv_int64(root("1.5"), &v), -EINVAL);
	cr_expect_eq(sf_jv_int64(root("1e3"), &v), -EINVAL);
	cr_expect_eq(sf_jv_int64(root("-"), &v), -EINVAL);
	cr_expect_eq(sf_jv_int64(root("\"12\""), &v), -EINVAL);
	cr_expect_eq(sf_jv_int64(SF_JV_NONE, &v), -EINVAL);
	cr_expect_eq(sf_jv_int64(sf_jv_path(root(pod), "spec.priority"), &v), 0);
	cr_expect_eq(v, -12);

	int b = -1;
	cr_expect_eq(sf_jv_bool(root("true"), &b), 0);
	cr_expect_eq(b, 1);
	cr_expect_eq(sf_jv_bool(root("false"), &b), 0);
	cr_expect_eq(b, 0);
	cr_expect_eq(sf_jv_bool(root("null"), &b), -EINVAL);
	cr_expect_eq(sf_jv_bool(root("\"true\""), &b), -EINVAL);
	cr_expect_eq(sf_jv_bool(root("1"), &b), -EINVAL);
}

static char *minify(const char *in, int *rc, char *err, size_t errlen)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	*rc = sf_json_minify(in, strlen(in), &b, err, errlen);
	char *s = strndup(b.data ? b.data : "", b.len);
	cr_assert_not_null(s);
	sf_buf_free(&b);
	return s;
}

Test(json, minify_pretty)
{
	const char *pretty =
	    "{\n  \"kind\" : \"Pod\",\n  \"metadata\": {\n    \"name\": \"a/b\",\n"
	    "    \"labels\": { }\n  },\n  \"n\": [ 1, -2.50, 3e+10, 1E-7, 0 ],\n"
	    "  \"big\": 123456789012345678901234567890,\n  \"t\": true, \"f\": false,"
	    " \"z\": null,\r\n  \"s\": \"\\u00e9\xe2\x82\xac\\/\\n\\u0001\\\"\",\n"
	    "  \"e\": [ ], \"emoji\": \"\\ud83d\\ude00\"\n}\n";
	int rc;
	char err[128] = "unchanged";
	char *out = minify(pretty, &rc, err, sizeof(err));
	cr_assert_eq(rc, 0, "%s", err);
	cr_expect_str_eq(err, "");
	/* Numbers pass through as written; strings are re-escaped minimally
	 * (UTF-8 kept, '/' not escaped, control characters escaped). */
	cr_expect_str_eq(out, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a/b\",\"labels\":{}},"
	                      "\"n\":[1,-2.50,3e+10,1E-7,0],\"big\":123456789012345678901234567890,"
	                      "\"t\":true,\"f\":false,\"z\":null,"
	                      "\"s\":\"\xc3\xa9\xe2\x82\xac/\\n\\u0001\\\"\",\"e\":[],"
	                      "\"emoji\":\"\xf0\x9f\x98\x80\"}");
	/* The result is stable and readable with views. */
	int rc2;
	char *again = minify(out, &rc2, err, sizeof(err));
	cr_expect_eq(rc2, 0);
	cr_expect_str_eq(again, out);
	sf_jv r = root(out);
	expect_str(sf_jv_get(r, "s"), "\xc3\xa9\xe2\x82\xac/\n\x01\"");
	expect_text(sf_jv_path(r, "n[2]"), "3e+10");
	free(again);
	free(out);

	out = minify("  [ \"x\" ]  ", &rc, err, sizeof(err));
	cr_expect_eq(rc, 0);
	cr_expect_str_eq(out, "[\"x\"]");
	free(out);
	out = minify("12", &rc, err, sizeof(err));
	cr_expect_eq(rc, 0);
	cr_expect_str_eq(out, "12");
	free(out);
}

Test(json, minify_appends)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_buf_puts(&b, "prefix:"), 0);
	char err[128];
	cr_assert_eq(sf_json_minify("{ \"a\" : 1 }", 11, &b, err, sizeof(err)), 0);
	cr_expect_str_eq(b.data, "prefix:{\"a\":1}");
	/* On error the buffer is left as it was. */
	cr_expect_eq(sf_json_minify("{ \"a\" : [1, 2 }", 15, &b, err, sizeof(err)), -EBADMSG);
	cr_expect_str_eq(b.data, "prefix:{\"a\":1}");
	cr_expect_eq(b.len, strlen("prefix:{\"a\":1}"));
	/* A capped buffer fails with -E2BIG, also leaving it alone. */
	sf_buf small;
	sf_buf_init(&small, 8);
	cr_expect_eq(sf_json_minify("[1,2,3,4,5,6,7]", 15, &small, err, sizeof(err)), -E2BIG);
	cr_expect_eq(small.len, 0);
	sf_buf_free(&small);
	sf_buf_free(&b);
}

static void expect_invalid(const char *in, const char *reason, size_t at)
{
	int rc;
	char err[160] = "";
	char *out = minify(in, &rc, err, sizeof(err));
	cr_expect_eq(rc, -EBADMSG, "input %s", in);
	cr_expect_str_eq(out, "", "input %s", in);
	cr_expect(strstr(err, reason) != NULL, "input %s: error \"%s\" lacks \"%s\"", in, err,
	          reason);
	char pos[48];
	snprintf(pos, sizeof(pos), "at byte %zu:", at);
	cr_expect(strstr(err, pos) != NULL, "input %s: error \"%s\" lacks \"%s\"", in, err, pos);
	free(out);
}

Test(json, minify_errors)
{
	expect_invalid("", "premature EOF", 0);
	expect_invalid("   ", "premature EOF", 3);
	expect_invalid("{\"a\":1", "premature EOF", 6);
	expect_invalid("{\"a\":1} x", "trailing garbage", 9);
	expect_invalid("{\"a\":1} {}", "trailing garbage", 9);
	expect_invalid("1 2", "trailing garbage", 3);
	expect_invalid("{\"a\":1,}", "parse error", 8);
	expect_invalid("{\"a\" 1}", "parse error", 6);
	expect_invalid("[1,,2]", "parse error", 4);
	expect_invalid("{'a':1}", "lexical error", 2);
	expect_invalid("[01]", "parse error", 3);
	expect_invalid("[1.]", "lexical error", 3);
	expect_invalid("[\"a\nb\"]", "lexical error", 3);
	expect_invalid("[\"\\x\"]", "lexical error", 3);
	expect_invalid("[\"\xff\"]", "lexical error", 3);
	expect_invalid("[tru]", "lexical error", 4);
	expect_invalid("/* c */ 1", "comments are not enabled", 0);
	expect_invalid("\"abc", "premature EOF", 4);
	expect_invalid("[-]", "lexical error", 2);
	/* A NULL error buffer is allowed. */
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_expect_eq(sf_json_minify("{", 1, &b, NULL, 0), -EBADMSG);
	/* NULL input is the empty text, whatever the length says (no read) */
	char err[128] = "";
	cr_expect_eq(sf_json_minify(NULL, 5, &b, err, sizeof(err)), -EBADMSG);
	cr_expect_str_eq(err, "invalid JSON at byte 0: parse error: premature EOF");
	sf_buf_free(&b);
}

Test(json, minify_nesting)
{
	char deep[600];
	size_t n = 0;
	for (int i = 0; i < 100; i++)
		deep[n++] = '[';
	for (int i = 0; i < 100; i++)
		deep[n++] = ']';
	deep[n] = '\0';
	int rc;
	char err[160];
	char *out = minify(deep, &rc, err, sizeof(err));
	cr_expect_eq(rc, 0, "%s", err);
	cr_expect_str_eq(out, deep);
	free(out);

	n = 0;
	for (int i = 0; i < 200; i++)
		deep[n++] = '[';
	for (int i = 0; i < 200; i++)
		deep[n++] = ']';
	deep[n] = '\0';
	out = minify(deep, &rc, err, sizeof(err));
	cr_expect_eq(rc, -EBADMSG);
	cr_expect(strstr(err, "nested deeper") != NULL, "%s", err);
	cr_expect_str_eq(out, "");
	free(out);
	/* Views have no depth limit. */
	sf_jv v = root(deep);
	cr_expect_eq(v.n, 400);
	cr_expect_eq(sf_jv_len(v), 1);
}

Test(json, obj_metadata)
{
	sf_obj *o = sf_obj_new(pod, strlen(pod));
	cr_assert_not_null(o);
	cr_expect_eq(o->refs, 1);
	cr_expect_eq(o->len, strlen(pod));
	cr_expect_str_eq(o->json, pod);
	cr_expect_str_eq(o->ns, "prod");
	cr_expect_str_eq(o->name, "web-0");
	cr_expect_str_eq(o->uid, "1f2e");
	cr_expect_str_eq(o->rv, "4711");
	cr_expect_neq(o->json, pod, "the text is copied");
	size_t sz = sf_obj_size(o);
	cr_expect_geq(sz, sizeof(sf_obj) + strlen(pod) + 1 + 5 + 6 + 5 + 5);
	cr_expect_leq(sz, sizeof(sf_obj) + strlen(pod) + 64);
	expect_str(sf_jv_path(sf_obj_root(o), "spec.containers[1].name"), "sidecar");

	cr_expect_eq(sf_obj_ref(o), o);
	cr_expect_eq(o->refs, 2);
	sf_obj_unref(o);
	cr_expect_eq(o->refs, 1);
	sf_obj_unref(o);
	sf_obj_unref(NULL);
	cr_expect_null(sf_obj_ref(NULL));
}

Test(json, obj_edge_cases)
{
	/* Cluster-scoped, escaped name, numeric uid (ignored). */
	const char *j = "{\"metadata\":{\"name\":\"a\\u002fb\\\"c\",\"uid\":5}}";
	sf_obj *o = sf_obj_new(j, strlen(j));
	cr_assert_not_null(o);
	cr_expect_str_eq(o->ns, "");
	cr_expect_str_eq(o->name, "a/b\"c");
	cr_expect_str_eq(o->uid, "");
	cr_expect_str_eq(o->rv, "");
	sf_obj_unref(o);

	/* Surrounding whitespace is dropped so that the root view is exact. */
	j = "  {\"kind\":\"Status\"}\n";
	o = sf_obj_new(j, strlen(j));
	cr_assert_not_null(o);
	cr_expect_str_eq(o->json, "{\"kind\":\"Status\"}");
	cr_expect_eq(o->len, 17);
	cr_expect_str_eq(o->name, "");
	expect_str(sf_jv_get(sf_obj_root(o), "kind"), "Status");
	sf_obj_unref(o);

	cr_expect_null(sf_obj_new("[1]", 3));
	cr_expect_null(sf_obj_new("\"x\"", 3));
	cr_expect_null(sf_obj_new("{\"a\":1", 6));
	cr_expect_null(sf_obj_new("{} {}", 5));
	cr_expect_null(sf_obj_new("", 0));
	cr_expect_null(sf_obj_new(NULL, 0));
	/* Only len bytes count, no terminator needed. */
	o = sf_obj_new("{\"a\":1}garbage", 7);
	cr_assert_not_null(o);
	cr_expect_str_eq(o->json, "{\"a\":1}");
	sf_obj_unref(o);
}

static sf_obj *obj_in(const char *ns_json, const char *name)
{
	char j[1024];
	snprintf(j, sizeof(j), "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\"}}", ns_json,
	         name);
	sf_obj *o = sf_obj_new(j, strlen(j));
	cr_assert_not_null(o, "%s", j);
	return o;
}

/* The cache key lives in the object (what sf_cache_key writes), and the
 * objects of a namespace share one copy of its name, held while any of
 * them lives. */
Test(json, obj_key_and_shared_namespace)
{
	size_t before = sf_intern_count();
	sf_obj *a = obj_in("team", "web-0"), *b = obj_in("te\\u0061m", "web-1");
	cr_expect_str_eq(sf_obj_key(a), "team/web-0");
	cr_expect_str_eq(sf_obj_key(b), "team/web-1");
	cr_expect_str_eq(a->name, "web-0");
	cr_expect_eq(a->ns, b->ns, "one copy of the namespace");
	cr_expect_eq(sf_intern_count(), before + 1);
	char key[64];
	cr_assert_gt(sf_cache_key(a->ns, a->name, key, sizeof(key)), 0);
	cr_expect_str_eq(sf_obj_key(a), key);
	sf_obj_unref(a);
	cr_expect_str_eq(b->ns, "team", "still held by the other");
	sf_obj_unref(b);
	cr_expect_eq(sf_intern_count(), before, "the last object released it");

	/* cluster-scoped: the key is the name */
	const char *j = "{\"metadata\":{\"name\":\"node-1\"}}";
	sf_obj *c = sf_obj_new(j, strlen(j));
	cr_assert_not_null(c);
	cr_expect_str_eq(c->ns, "");
	cr_expect_eq(sf_obj_key(c), c->name);
	sf_obj_unref(c);

	/* an escaped NUL ends the namespace as a C string reads it, and the
	 * key agrees */
	sf_obj *d = obj_in("a\\u0000b", "x");
	cr_expect_str_eq(d->ns, "a");
	cr_expect_str_eq(sf_obj_key(d), "a/x");
	sf_obj_unref(d);

	/* longer than any namespace the API allows: still read whole */
	char lng[301];
	memset(lng, 'n', 300);
	lng[300] = '\0';
	sf_obj *e = obj_in(lng, "y");
	cr_expect_eq(strlen(e->ns), 300);
	cr_expect_eq(strlen(sf_obj_key(e)), 302);
	sf_obj_unref(e);
	cr_expect_eq(sf_intern_count(), before);
}

Test(json, obj_parse)
{
	char err[128] = "";
	const char *t = "{\n \"metadata\": {\"namespace\": \"ns1\", \"name\": \"n1\",\n"
	                " \"resourceVersion\": \"99\"},\n \"data\": {\"k\": \"v\"}\n}\n";
	sf_obj *o = sf_obj_parse(t, strlen(t), err, sizeof(err));
	cr_assert_not_null(o, "%s", err);
	cr_expect_str_eq(o->json, "{\"metadata\":{\"namespace\":\"ns1\",\"name\":\"n1\","
	                          "\"resourceVersion\":\"99\"},\"data\":{\"k\":\"v\"}}");
	cr_expect_str_eq(o->ns, "ns1");
	cr_expect_str_eq(o->name, "n1");
	cr_expect_str_eq(o->rv, "99");
	sf_obj_unref(o);

	cr_expect_null(sf_obj_parse("{\"a\":", 5, err, sizeof(err)));
	cr_expect(strstr(err, "premature EOF") != NULL, "%s", err);
	cr_expect_null(sf_obj_parse("[1, 2]", 6, err, sizeof(err)));
	cr_expect_str_eq(err, "not a JSON object");
}

/* Every prefix and every one-byte corruption of a document: the views must
 * stay inside the bytes they were given (run under ASan/valgrind) and a cut
 * container never reads as complete. */
Test(json, views_on_damaged_text)
{
	size_t n = strlen(pod);
	for (size_t len = 0; len <= n; len++) {
		char *cut = malloc(len ? len : 1);
		cr_assert_not_null(cut);
		memcpy(cut, pod, len);
		sf_jv r = sf_jv_root(cut, len);
		if (len < n)
			cr_expect_not(sf_jv_ok(r), "prefix of %zu bytes read as a value", len);
		else
			cr_expect_eq(r.n, n);
		sf_jv raw = {cut, len}; /* a view the scanner never checked */
		sf_jv_iter it = sf_jv_iter_init(raw);
		sf_jv k, v;
		while (sf_jv_next(&it, &k, &v)) {
			free(sf_jv_strdup(k));
			free(sf_jv_strdup(v));
			sf_jv_len(v);
		}
		sf_jv_path(raw, "metadata.labels.tier");
		sf_jv_path(raw, "spec.containers[1].args[1]");
		free(cut);
	}
	const char flips[] = "\"\\{}[],:u0 x";
	for (size_t i = 0; i < n; i++) {
		for (size_t f = 0; f < sizeof(flips) - 1; f++) {
			char *bad = malloc(n);
			cr_assert_not_null(bad);
			memcpy(bad, pod, n);
			bad[i] = flips[f];
			sf_jv raw = {bad, n};
			sf_jv_path(raw, "spec.containers[0].ports[1].containerPort");
			sf_jv_iter it = sf_jv_iter_init(raw);
			sf_jv k, v;
			while (sf_jv_next(&it, &k, &v))
				free(sf_jv_strdup(v));
			sf_obj_unref(sf_obj_new(bad, n));
			free(bad);
		}
	}
	/* A well-formed document is unaffected by what follows its bounds. */
	sf_jv r = sf_jv_root("{\"a\":\"b\"}\"", 9);
	expect_str(sf_jv_get(r, "a"), "b");
}

Test(buf, detach_of_empty_buffer_is_an_empty_string)
{
	sf_buf b;
	sf_buf_init(&b, 16);
	size_t n = 99;
	char *s = sf_buf_detach(&b, &n);
	cr_assert_not_null(s);
	cr_assert_eq(n, 0);
	cr_assert_str_eq(s, "");
	free(s);
	cr_assert_eq(sf_buf_append(&b, "0123456789abcdef", 16), 0);
	cr_assert_eq(sf_buf_putc(&b, 'x'), -E2BIG, "the cap holds");
	sf_buf_free(&b);
}

Test(json, strip_managed_fields_keeps_everything_else)
{
	const char *cases[][2] = {
	    {"{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"m\",\"fieldsV1\":{"
	     "\"f:x\":{}}}],\"uid\":\"u\"},\"spec\":{}}",
	     "{\"metadata\":{\"name\":\"a\",\"uid\":\"u\"},\"spec\":{}}"},
	    {"{\"metadata\":{\"name\":\"a\",\"managedFields\":[]}}",
	     "{\"metadata\":{\"name\":\"a\"}}"},
	    {"{\"metadata\":{\"managedFields\":[],\"name\":\"a\"}}",
	     "{\"metadata\":{\"name\":\"a\"}}"},
	    {"{\"metadata\":{\"managedFields\":[]}}", "{\"metadata\":{}}"},
	    {"{\"metadata\":{\"name\":\"a\"},\"spec\":{\"managedFields\":1}}",
	     "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"managedFields\":1}}"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sf_obj *o = sf_obj_new(cases[i][0], strlen(cases[i][0]));
		cr_assert_not_null(o);
		sf_obj *s = sf_obj_strip_managed_fields(o);
		cr_assert_str_eq(s->json, cases[i][1], "case %zu", i);
		if (strcmp(cases[i][0], cases[i][1]) == 0)
			cr_assert_eq(s, o, "unchanged objects are returned as they are");
		sf_obj_unref(s);
	}
}

Test(json, strip_path_drops_one_nested_member_and_nothing_else)
{
	const char *cases[][3] = {
	    {"status.images",
	     "{\"metadata\":{\"name\":\"n\"},\"status\":{\"capacity\":{\"cpu\":\"8\"},\"images\":[{"
	     "\"names\":[\"a\"]}]}}",
	     "{\"metadata\":{\"name\":\"n\"},\"status\":{\"capacity\":{\"cpu\":\"8\"}}}"},
	    {"status.images", "{\"status\":{\"images\":[],\"capacity\":{}}}",
	     "{\"status\":{\"capacity\":{}}}"},
	    {"status.images", "{\"status\":{\"capacity\":{}}}", "{\"status\":{\"capacity\":{}}}"},
	    {"status.images", "{\"status\":\"images\"}", "{\"status\":\"images\"}"},
	    {"metadata.annotations", "{\"metadata\":{\"annotations\":{\"a\":\"b\"}}}",
	     "{\"metadata\":{}}"},
	    {"spec", "{\"spec\":{\"x\":1},\"status\":{}}", "{\"status\":{}}"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sf_obj *o = sf_obj_new(cases[i][1], strlen(cases[i][1]));
		cr_assert_not_null(o);
		sf_obj *s = sf_obj_strip_path(o, cases[i][0]);
		cr_assert_str_eq(s->json, cases[i][2], "case %zu", i);
		sf_obj_unref(s);
	}
}

/* Each case's input (first) becomes its output (second) through the
 * transform, which is again an object. */
static void transform_cases(sf_obj *(*transform)(sf_obj *, const char *const *),
                            const char *const *paths, const char *cases[][2], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		sf_obj *o = sf_obj_new(cases[i][0], strlen(cases[i][0]));
		cr_assert_not_null(o);
		sf_obj *p = transform(o, paths);
		cr_assert_str_eq(p->json, cases[i][1], "case %zu", i);
		sf_jv root = sf_jv_root(p->json, p->len);
		cr_assert_eq(sf_jv_type(root), SF_JSON_OBJECT, "case %zu: not valid JSON", i);
		sf_obj_unref(p);
	}
}

Test(json, project_keeps_the_named_members_and_drops_the_rest)
{
	static const char *const paths[] = {"metadata.name",
	                                    "spec.containers[].resources",
	                                    "status.containerStatuses[].state.terminated",
	                                    "status.phase",
	                                    "list[]",
	                                    NULL};
	const char *cases[][2] = {
	    {"{\"metadata\":{\"name\":\"p\",\"annotations\":{\"a\":\"b\"}},\"spec\":{"
	     "\"containers\":[{\"name\":\"a\",\"image\":\"i\",\"resources\":{\"limits\":{\"x\":"
	     "\"1\"}}},{\"name\":\"b\"}],\"volumes\":[]},\"status\":{\"phase\":\"Failed\","
	     "\"containerStatuses\":[{\"name\":\"a\",\"state\":{\"terminated\":{\"exitCode\":1}},"
	     "\"image\":\"i\"}],\"conditions\":[]}}",
	     "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"resources\":{\"limits\":{"
	     "\"x\":\"1\"}}},{}]},\"status\":{\"phase\":\"Failed\",\"containerStatuses\":[{"
	     "\"state\":{\"terminated\":{\"exitCode\":1}}}]}}"},
	    /* a path through something that is not an object keeps it whole */
	    {"{\"metadata\":\"m\",\"spec\":{\"containers\":7},\"other\":1}",
	     "{\"metadata\":\"m\",\"spec\":{\"containers\":7}}"},
	    {"{\"list\":[1,{\"a\":2}],\"x\":[]}", "{\"list\":[1,{\"a\":2}]}"},
	    /* a path ending in [] that meets something else keeps it whole */
	    {"{\"list\":{\"a\":2},\"x\":[]}", "{\"list\":{\"a\":2}}"},
	    {"{}", "{}"},
	};
	transform_cases(sf_obj_project, paths, cases, sizeof(cases) / sizeof(cases[0]));
}

/* The opposite transform: the named members go, whatever they hold, and
 * everything else stays byte for byte; with nothing to drop the object
 * itself is kept (no copy). */
Test(json, omit_drops_the_named_members_and_keeps_the_rest)
{
	static const char *const paths[] = {"kind", "metadata.managedFields", "items[].secret",
	                                    "metadata.labels.'a.b/c'", NULL};
	const char *cases[][2] = {
	    {"{\"kind\":\"K\",\"metadata\":{\"name\":\"n\",\"managedFields\":[{\"m\":1}],\"uid\":"
	     "\"u\"},\"spec\":{\"kind\":\"inner\"}}",
	     "{\"metadata\":{\"name\":\"n\",\"uid\":\"u\"},\"spec\":{\"kind\":\"inner\"}}"},
	    {"{\"metadata\":{\"labels\":{\"a.b/"
	     "c\":\"x\",\"d\":\"y\"}},\"items\":[{\"secret\":1,\"k\":2},3,{}]}",
	     "{\"metadata\":{\"labels\":{\"d\":\"y\"}},\"items\":[{\"k\":2},3,{}]}"},
	    /* a path through something that is not an object leaves it be */
	    {"{\"metadata\":\"m\",\"x\":1,\"kind\":[]}", "{\"metadata\":\"m\",\"x\":1}"},
	    {"{\"kind\":1}", "{}"},
	};
	transform_cases(sf_obj_omit, paths, cases, sizeof(cases) / sizeof(cases[0]));
	const char *keep = "{\"metadata\":{\"name\":\"n\"},\"spec\":{}}";
	sf_obj *o = sf_obj_new(keep, strlen(keep));
	cr_assert_not_null(o);
	cr_assert_eq(sf_obj_omit(o, paths), o, "nothing to drop: the same object");
	sf_obj_unref(o);
}

Test(json, project_a_quoted_segment_keeps_one_label)
{
	static const char *const paths[] = {"metadata.name", "metadata.labels.'example.com/keep'",
	                                    "metadata.annotations.'a.b'", "status.'x", NULL};
	const char *cases[][2] = {
	    {"{\"metadata\":{\"name\":\"p\",\"labels\":{\"job-name\":\"j\",\"example.com/keep\":"
	     "\"v\",\"example.com/keep2\":\"w\"},\"annotations\":{\"a\":{\"b\":1},\"a.b\":\"2\"}},"
	     "\"status\":{\"'x\":1,\"x\":2}}",
	     "{\"metadata\":{\"name\":\"p\",\"labels\":{\"example.com/keep\":\"v\"},"
	     "\"annotations\":{\"a.b\":\"2\"}},\"status\":{}}"},
	    /* an unterminated quote names nothing */
	    {"{\"metadata\":{\"labels\":{\"other\":\"o\"}}}", "{\"metadata\":{\"labels\":{}}}"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sf_obj *o = sf_obj_new(cases[i][0], strlen(cases[i][0]));
		cr_assert_not_null(o);
		sf_obj *p = sf_obj_project(o, paths);
		cr_assert_str_eq(p->json, cases[i][1], "case %zu", i);
		sf_obj_unref(p);
	}
}
