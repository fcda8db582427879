/*
 * test_jdoc.c - the mutable JSON tree: parse/write round trips checked
 * against sf_json_minify (escapes, big numbers kept as text), editing objects
 * and arrays (set in place, del, member creation, append/remove), paths,
 * equality, cloning, strings with NUL, integer ranges, duplicate keys and
 * their cost, the nesting limit, parse errors and ownership rules.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/jdoc.h"

static sf_jd *parse(const char *s)
{
	char err[160] = "";
	sf_jd *n = sf_jd_parse(s, strlen(s), err, sizeof(err));
	cr_assert_not_null(n, "parse %s: %s", s, err);
	cr_expect_str_eq(err, "");
	return n;
}

static void expect_dump(const sf_jd *n, const char *want)
{
	char *s = sf_jd_dump(n);
	cr_assert_not_null(s);
	cr_expect_str_eq(s, want);
	free(s);
}

/* sf_json_minify's output for in (which must be valid). */
static char *minified(const char *in, size_t len)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	char err[160];
	cr_assert_eq(sf_json_minify(in, len, &b, err, sizeof(err)), 0, "%s", err);
	char *s = sf_buf_detach(&b, NULL);
	cr_assert_not_null(s);
	return s;
}

/* Parsing and writing in gives exactly what sf_json_minify gives. */
static void expect_round_trip(const char *in)
{
	size_t len = strlen(in);
	char *want = minified(in, len);
	sf_jd *n = sf_jd_parse(in, len, NULL, 0);
	cr_assert_not_null(n, "parse %s", in);
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_jd_write(n, &b), 0);
	cr_expect_eq(b.len, strlen(want), "input %s", in);
	cr_expect_str_eq(b.data, want, "input %s", in);
	sf_buf_free(&b);
	sf_jd_free(n);
	free(want);
}

static const char *pod_pretty =
    "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Pod\",\n  \"metadata\": {\n"
    "    \"name\": \"web-0\", \"namespace\": \"prod\",\n"
    "    \"labels\": { \"app.kubernetes.io/name\": \"web\", \"tier\": \"front\" }\n  },\n"
    "  \"spec\": {\n    \"containers\": [\n"
    "      { \"name\": \"app\", \"image\": \"nginx:1.25\",\n"
    "        \"ports\": [ { \"containerPort\": 80 }, { \"containerPort\": 443 } ] },\n"
    "      { \"name\": \"sidecar\", \"args\": [ \"-v\", \"--x=[1,2]\" ] }\n    ],\n"
    "    \"priority\": -12, \"hostNetwork\": false, \"nodeName\": null,\n"
    "    \"ratio\": 0.25, \"big\": 12345678901234567890, \"huge\": 1e400\n  }\n}\n";

Test(jdoc, round_trip_matches_minify)
{
	expect_round_trip(pod_pretty);
	expect_round_trip("  [ 12345678901234567890, 1e400, -0, 0.10, -2.50E+10, 1E-7 ]  ");
	/* Escapes decode and re-encode as yajl_gen does: \/ becomes /, control
	 * characters are \u00XX in upper case, \b and \f stay short. */
	expect_round_trip("[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u0000\\u0001\\u001f\\u007f\"]");
	expect_round_trip(
	    "{\"\\u00e9\\u20ac\":\"\\ud83d\\ude00\",\"\xe6\x97\xa5\":\"\xe2\x82\xac\"}");
	/* Unpaired surrogates: whatever yajl decodes them to. */
	expect_round_trip("[\"\\ud800x\",\"\\udc00\"]");
	expect_round_trip("{\"e\":{},\"a\":[],\"n\":[[[]],{\"x\":{}}]}");
	expect_round_trip("\"top\"");
	expect_round_trip("7");
	expect_round_trip("true");
	expect_round_trip("null");

	sf_jd *n = parse("[12345678901234567890, 1e400, -0.0]");
	expect_dump(n, "[12345678901234567890,1e400,-0.0]");
	cr_expect_eq(sf_jd_type(sf_jd_at(n, 1, NULL)), SF_JSON_NUMBER);
	sf_jd_free(n);
	n = parse("[\"\\u001f\\u00e9\"]");
	expect_dump(n, "[\"\\u001F\xc3\xa9\"]");
	sf_jd_free(n);
}

Test(jdoc, write_appends_and_keeps_buffer_on_error)
{
	sf_jd *n = parse("{\"a\" : [1, 2, 3]}");
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_buf_puts(&b, "x="), 0);
	cr_assert_eq(sf_jd_write(n, &b), 0);
	cr_expect_str_eq(b.data, "x={\"a\":[1,2,3]}");
	sf_buf_free(&b);

	sf_buf small;
	sf_buf_init(&small, 8);
	cr_assert_eq(sf_buf_puts(&small, "ab"), 0);
	cr_expect_eq(sf_jd_write(n, &small), -E2BIG);
	cr_expect_eq(small.len, 2);
	cr_expect_str_eq(small.data, "ab");
	sf_buf_free(&small);
	cr_expect_eq(sf_jd_write(NULL, &b), -EINVAL);
	cr_expect_null(sf_jd_dump(NULL));
	sf_jd_free(n);
}

Test(jdoc, build_and_types)
{
	sf_jd *o = sf_jd_new_obj();
	cr_assert_not_null(o);
	cr_expect_eq(sf_jd_set_str(o, "kind", "Event"), 0);
	cr_expect_eq(sf_jd_set_int(o, "count", -3), 0);
	cr_expect_eq(sf_jd_set_bool(o, "ok", 1), 0);
	cr_expect_eq(sf_jd_set_bool(o, "bad", 0), 0);
	cr_expect_eq(sf_jd_set_null(o, "z"), 0);
	cr_expect_eq(sf_jd_set(o, "min", sf_jd_new_int(INT64_MIN)), 0);
	cr_expect_eq(sf_jd_set(o, "s", sf_jd_new_str("q\"\n")), 0);
	expect_dump(o, "{\"kind\":\"Event\",\"count\":-3,\"ok\":true,\"bad\":false,\"z\":null,"
	               "\"min\":-9223372036854775808,\"s\":\"q\\\"\\n\"}");
	cr_expect_eq(sf_jd_type(o), SF_JSON_OBJECT);
	cr_expect_eq(sf_jd_type(sf_jd_get(o, "kind")), SF_JSON_STRING);
	cr_expect_eq(sf_jd_type(sf_jd_get(o, "count")), SF_JSON_NUMBER);
	cr_expect_eq(sf_jd_type(sf_jd_get(o, "ok")), SF_JSON_TRUE);
	cr_expect_eq(sf_jd_type(sf_jd_get(o, "bad")), SF_JSON_FALSE);
	cr_expect_eq(sf_jd_type(sf_jd_get(o, "z")), SF_JSON_NULL);
	cr_expect_eq(sf_jd_type(sf_jd_get(o, "nope")), SF_JSON_NONE);
	cr_expect_eq(sf_jd_type(NULL), SF_JSON_NONE);
	int b = -1;
	cr_expect_eq(sf_jd_bool(sf_jd_get(o, "ok"), &b), 0);
	cr_expect_eq(b, 1);
	cr_expect_eq(sf_jd_bool(sf_jd_get(o, "bad"), &b), 0);
	cr_expect_eq(b, 0);
	cr_expect_eq(sf_jd_bool(sf_jd_get(o, "z"), &b), -EINVAL);
	size_t len = 99;
	cr_expect_str_eq(sf_jd_str(sf_jd_get(o, "kind"), &len), "Event");
	cr_expect_eq(len, 5);
	cr_expect_null(sf_jd_str(sf_jd_get(o, "count"), &len));
	cr_expect_null(sf_jd_str(NULL, NULL));
	/* Lengths: members, elements, 0 for scalars. */
	cr_expect_eq(sf_jd_len(o), 7);
	cr_expect_eq(sf_jd_len(sf_jd_get(o, "kind")), 0);
	cr_expect_eq(sf_jd_len(NULL), 0);
	/* Bad arguments. */
	cr_expect_eq(sf_jd_set_str(o, "x", NULL), -EINVAL);
	cr_expect_eq(sf_jd_set(o, NULL, sf_jd_new_null()), -EINVAL);
	cr_expect_eq(sf_jd_set(o, "x", NULL), -EINVAL);
	cr_expect_eq(sf_jd_set(NULL, "x", sf_jd_new_null()), -EINVAL);
	cr_expect_eq(sf_jd_set_int(sf_jd_get(o, "kind"), "x", 1), -EINVAL);
	cr_expect_null(sf_jd_new_str(NULL));
	cr_expect_eq(sf_jd_len(o), 7);
	sf_jd_free(o);
}

Test(jdoc, set_replaces_in_place)
{
	sf_jd *o = parse("{\"a\":1,\"b\":{\"x\":[1]},\"c\":3}");
	cr_expect_eq(sf_jd_set_str(o, "b", "two"), 0);
	expect_dump(o, "{\"a\":1,\"b\":\"two\",\"c\":3}");
	cr_expect_eq(sf_jd_set_int(o, "a", 10), 0);
	cr_expect_eq(sf_jd_set_int(o, "d", 4), 0);
	expect_dump(o, "{\"a\":10,\"b\":\"two\",\"c\":3,\"d\":4}");
	cr_expect_eq(sf_jd_len(o), 4);
	const char *key = NULL;
	sf_jd *v = sf_jd_at(o, 1, &key);
	cr_expect_str_eq(key, "b");
	cr_expect_str_eq(sf_jd_str(v, NULL), "two");
	cr_expect_null(sf_jd_at(o, 4, &key));
	cr_expect_null(key);
	sf_jd_free(o);
}

Test(jdoc, del)
{
	sf_jd *o = parse("{\"a\":1,\"b\":[2],\"c\":3}");
	cr_expect_eq(sf_jd_del(o, "b"), 0);
	expect_dump(o, "{\"a\":1,\"c\":3}");
	cr_expect_eq(sf_jd_del(o, "b"), -ENOENT);
	cr_expect_eq(sf_jd_del(o, "c"), 0);
	cr_expect_eq(sf_jd_del(o, "a"), 0);
	expect_dump(o, "{}");
	cr_expect_eq(sf_jd_len(o), 0);
	cr_expect_eq(sf_jd_del(o, "a"), -ENOENT);
	cr_expect_eq(sf_jd_del(NULL, "a"), -ENOENT);
	sf_jd_free(o);
}

Test(jdoc, member_creation_and_type_mismatch)
{
	sf_jd *o = parse("{\"metadata\":{\"name\":\"x\"},\"s\":\"str\",\"l\":[1]}");
	sf_jd *labels = sf_jd_obj_member(sf_jd_obj_member(o, "metadata"), "labels");
	cr_assert_not_null(labels);
	cr_expect_eq(sf_jd_set_str(labels, "app", "web"), 0);
	sf_jd *owners = sf_jd_arr_member(sf_jd_obj_member(o, "metadata"), "ownerReferences");
	cr_assert_not_null(owners);
	cr_expect_eq(sf_jd_append(owners, sf_jd_new_obj()), 0);
	expect_dump(o, "{\"metadata\":{\"name\":\"x\",\"labels\":{\"app\":\"web\"},"
	               "\"ownerReferences\":[{}]},\"s\":\"str\",\"l\":[1]}");
	/* Existing members of the right type are returned as they are. */
	cr_expect_eq(sf_jd_obj_member(sf_jd_get(o, "metadata"), "labels"), labels);
	cr_expect_eq(sf_jd_arr_member(o, "l"), sf_jd_get(o, "l"));
	/* Wrong types, and containers that are not objects. */
	cr_expect_null(sf_jd_obj_member(o, "s"));
	cr_expect_null(sf_jd_arr_member(o, "s"));
	cr_expect_null(sf_jd_obj_member(o, "l"));
	cr_expect_null(sf_jd_arr_member(o, "metadata"));
	cr_expect_null(sf_jd_obj_member(sf_jd_get(o, "l"), "x"));
	cr_expect_null(sf_jd_arr_member(NULL, "x"));
	cr_expect_eq(sf_jd_type(sf_jd_get(o, "s")), SF_JSON_STRING);
	cr_expect_eq(sf_jd_len(o), 3);
	sf_jd_free(o);
}

Test(jdoc, append_and_remove)
{
	sf_jd *a = sf_jd_new_arr();
	cr_assert_not_null(a);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(sf_jd_append(a, sf_jd_new_int(i)), 0);
	cr_expect_eq(sf_jd_len(a), 100);
	int64_t v = -1;
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 99, NULL), &v), 0);
	cr_expect_eq(v, 99);
	cr_expect_eq(sf_jd_remove(a, 0), 0);
	cr_expect_eq(sf_jd_remove(a, 50), 0); /* was 51 */
	cr_expect_eq(sf_jd_remove(a, 97), 0); /* the last, 99 */
	cr_expect_eq(sf_jd_remove(a, 97), -ENOENT);
	cr_expect_eq(sf_jd_len(a), 97);
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 0, NULL), &v), 0);
	cr_expect_eq(v, 1);
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 50, NULL), &v), 0);
	cr_expect_eq(v, 52);
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 96, NULL), &v), 0);
	cr_expect_eq(v, 98);
	const char *key = "unchanged";
	cr_expect_not_null(sf_jd_at(a, 3, &key));
	cr_expect_null(key, "arrays have no keys");
	cr_expect_null(sf_jd_at(a, 97, NULL));
	sf_jd_free(a);

	a = parse("[\"x\"]");
	cr_expect_eq(sf_jd_append(a, sf_jd_new_str("y")), 0);
	cr_expect_eq(sf_jd_append(a, NULL), -EINVAL);
	sf_jd *o = sf_jd_new_obj();
	cr_expect_eq(sf_jd_append(o, sf_jd_new_null()), -EINVAL);
	cr_expect_eq(sf_jd_remove(o, 0), -EINVAL);
	cr_expect_eq(sf_jd_remove(NULL, 0), -EINVAL);
	expect_dump(a, "[\"x\",\"y\"]");
	expect_dump(o, "{}");
	sf_jd_free(o);
	sf_jd_free(a);
}

Test(jdoc, paths)
{
	sf_jd *r = parse(pod_pretty);
	cr_expect_str_eq(sf_jd_str(sf_jd_path(r, "metadata.namespace"), NULL), "prod");
	cr_expect_str_eq(sf_jd_str(sf_jd_path(r, "spec.containers[0].image"), NULL), "nginx:1.25");
	int64_t v = 0;
	cr_expect_eq(sf_jd_int(sf_jd_path(r, "spec.containers[0].ports[1].containerPort"), &v), 0);
	cr_expect_eq(v, 443);
	cr_expect_str_eq(sf_jd_str(sf_jd_path(r, "spec.containers[1].args[1]"), NULL), "--x=[1,2]");
	cr_expect_eq(sf_jd_path(r, ""), r);
	cr_expect_null(sf_jd_path(r, "spec.containers[2].name"));
	cr_expect_null(sf_jd_path(r, "spec.nope.x"));
	cr_expect_null(sf_jd_path(r, "metadata..name"));
	cr_expect_null(sf_jd_path(r, "metadata."));
	cr_expect_null(sf_jd_path(r, ".metadata"));
	cr_expect_null(sf_jd_path(r, "spec.containers[x]"));
	cr_expect_null(sf_jd_path(r, "spec.containers[0"));
	cr_expect_null(sf_jd_path(r, "spec.containers[]"));
	cr_expect_null(sf_jd_path(r, "spec.containers[0]name"));
	cr_expect_null(sf_jd_path(r, "spec.containers[99999999999999999999999]"));
	cr_expect_null(sf_jd_path(r, "metadata[0]"), "index into an object");
	cr_expect_null(sf_jd_path(r, NULL));
	cr_expect_null(sf_jd_path(NULL, "a"));
	sf_jd_free(r);

	sf_jd *m = parse("{\"m\":[[1,2],[3,[4,5]]]}");
	cr_expect_eq(sf_jd_int(sf_jd_path(m, "m[1][1][0]"), &v), 0);
	cr_expect_eq(v, 4);
	sf_jd_free(m);
	sf_jd *a = parse("[[\"a\"],[\"b\"]]");
	cr_expect_str_eq(sf_jd_str(sf_jd_path(a, "[1][0]"), NULL), "b");
	sf_jd_free(a);
}

Test(jdoc, equal_ignores_member_order)
{
	sf_jd *a = parse("{\"a\":1,\"b\":{\"x\":[1,{\"p\":true,\"q\":null}],\"y\":\"s\"}}");
	sf_jd *b = parse("{\"b\":{\"y\":\"s\",\"x\":[1,{\"q\":null,\"p\":true}]},\"a\":1}");
	cr_expect(sf_jd_equal(a, b));
	cr_expect(sf_jd_equal(b, a));
	cr_expect(sf_jd_equal(a, a));
	cr_expect(sf_jd_equal(NULL, NULL));
	cr_expect_not(sf_jd_equal(a, NULL));
	/* Array order matters; so do values, types and number text. */
	static const char *const other[] = {
	    "{\"a\":1,\"b\":{\"x\":[{\"p\":true,\"q\":null},1],\"y\":\"s\"}}",
	    "{\"a\":1.0,\"b\":{\"x\":[1,{\"p\":true,\"q\":null}],\"y\":\"s\"}}",
	    "{\"a\":1,\"b\":{\"x\":[1,{\"p\":false,\"q\":null}],\"y\":\"s\"}}",
	    "{\"a\":1,\"b\":{\"x\":[1,{\"p\":true,\"q\":null}],\"y\":\"S\"}}",
	    "{\"a\":1,\"b\":{\"x\":[1,{\"p\":true,\"q\":null}],\"y\":\"s\",\"z\":0}}",
	    "{\"a\":1,\"b\":{\"x\":[1,{\"p\":true,\"r\":null}],\"y\":\"s\"}}",
	    "{\"a\":1,\"b\":{\"x\":[1,{\"p\":true,\"q\":null},2],\"y\":\"s\"}}",
	    "{\"a\":\"1\",\"b\":{\"x\":[1,{\"p\":true,\"q\":null}],\"y\":\"s\"}}",
	    "{\"a\":1}",
	};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		sf_jd *c = parse(other[i]);
		cr_expect_not(sf_jd_equal(a, c), "%s", other[i]);
		cr_expect_not(sf_jd_equal(c, a), "%s", other[i]);
		sf_jd_free(c);
	}
	sf_jd_free(a);
	sf_jd_free(b);

	/* Large objects (compared by sorting): reversed order is equal, one
	 * changed value or key is not. */
	sf_jd *x = sf_jd_new_obj(), *y = sf_jd_new_obj(), *z = sf_jd_new_obj();
	cr_assert(x && y && z);
	char key[16];
	for (int i = 0; i < 50; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(sf_jd_set_int(x, key, i), 0);
		snprintf(key, sizeof(key), "k%d", 49 - i);
		cr_assert_eq(sf_jd_set_int(y, key, 49 - i), 0);
		snprintf(key, sizeof(key), "k%d", i == 7 ? 99 : i);
		cr_assert_eq(sf_jd_set_int(z, key, i), 0);
	}
	cr_expect(sf_jd_equal(x, y));
	cr_expect_not(sf_jd_equal(x, z));
	cr_expect_eq(sf_jd_set_int(y, "k30", 31), 0);
	cr_expect_not(sf_jd_equal(x, y));
	sf_jd_free(x);
	sf_jd_free(y);
	sf_jd_free(z);
}

Test(jdoc, clone_is_deep_and_independent)
{
	sf_jd *a = parse(pod_pretty);
	sf_jd *c = sf_jd_clone(a);
	cr_assert_not_null(c);
	cr_expect_neq(c, a);
	cr_expect(sf_jd_equal(a, c));
	char *da = sf_jd_dump(a), *dc = sf_jd_dump(c);
	cr_expect_str_eq(da, dc, "clone keeps member order");
	free(da);
	free(dc);
	cr_expect_eq(sf_jd_set_str(sf_jd_path(c, "spec.containers[0]"), "image", "x"), 0);
	cr_expect_not(sf_jd_equal(a, c));
	cr_expect_str_eq(sf_jd_str(sf_jd_path(a, "spec.containers[0].image"), NULL), "nginx:1.25");
	/* A clone of a subtree is a root of its own: it can be inserted. */
	sf_jd *md = sf_jd_clone(sf_jd_get(a, "metadata"));
	cr_assert_not_null(md);
	cr_expect_eq(sf_jd_set(c, "copy", md), 0);
	cr_expect(sf_jd_equal(sf_jd_get(c, "copy"), sf_jd_get(a, "metadata")));
	cr_expect_null(sf_jd_clone(NULL));
	sf_jd_free(c);
	sf_jd_free(a);
}

Test(jdoc, strings_with_nul)
{
	sf_jd *n = parse("{\"k\\u0000ey\":\"a\\u0000b\"}");
	size_t len = 0;
	const char *key = NULL;
	sf_jd *v = sf_jd_at(n, 0, &key);
	const char *s = sf_jd_str(v, &len);
	cr_assert_not_null(s);
	cr_expect_eq(len, 3);
	cr_expect(memcmp(s, "a\0b", 4) == 0, "decoded with its NUL and terminated");
	cr_expect(memcmp(key, "k\0ey", 5) == 0);
	/* Lookups stop at the caller's NUL: "k" is not the key "k\0ey". */
	cr_expect_null(sf_jd_get(n, "k"));
	expect_dump(n, "{\"k\\u0000ey\":\"a\\u0000b\"}");

	sf_jd *m = sf_jd_new_strn("a\0b", 3);
	sf_jd *m2 = sf_jd_new_strn("a\0c", 3);
	cr_assert(m && m2);
	cr_expect(sf_jd_equal(m, v));
	cr_expect_not(sf_jd_equal(m2, v), "bytes after the NUL count");
	expect_dump(m, "\"a\\u0000b\"");
	sf_jd *e = sf_jd_new_strn(NULL, 0);
	cr_assert_not_null(e);
	expect_dump(e, "\"\"");
	cr_expect_null(sf_jd_new_strn(NULL, 1));
	sf_jd_free(e);
	sf_jd_free(m);
	sf_jd_free(m2);
	sf_jd_free(n);
}

Test(jdoc, int_range)
{
	sf_jd *a = parse("[9223372036854775807,-9223372036854775808,9223372036854775808,"
	                 "-9223372036854775809,12345678901234567890,1.5,1e3,-0,\"1\",true,0]");
	int64_t v = 7;
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 0, NULL), &v), 0);
	cr_expect_eq(v, INT64_MAX);
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 1, NULL), &v), 0);
	cr_expect_eq(v, INT64_MIN);
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 2, NULL), &v), -ERANGE);
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 3, NULL), &v), -ERANGE);
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 4, NULL), &v), -ERANGE);
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 5, NULL), &v), -EINVAL);
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 6, NULL), &v), -EINVAL);
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 7, NULL), &v), 0);
	cr_expect_eq(v, 0);
	v = 7;
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 8, NULL), &v), -EINVAL);
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 9, NULL), &v), -EINVAL);
	cr_expect_eq(sf_jd_int(NULL, &v), -EINVAL);
	cr_expect_eq(v, 7, "untouched on error");
	cr_expect_eq(sf_jd_int(sf_jd_at(a, 10, NULL), &v), 0);
	cr_expect_eq(v, 0);
	sf_jd_free(a);

	sf_jd *n = sf_jd_new_int(INT64_MAX);
	cr_expect_eq(sf_jd_int(n, &v), 0);
	cr_expect_eq(v, INT64_MAX);
	expect_dump(n, "9223372036854775807");
	sf_jd_free(n);
}

Test(jdoc, duplicate_keys_last_wins)
{
	sf_jd *o = parse("{\"a\":1,\"b\":2,\"a\":{\"x\":1},\"c\":3,\"a\":[4]}");
	expect_dump(o, "{\"a\":[4],\"b\":2,\"c\":3}");
	cr_expect_eq(sf_jd_len(o), 3);
	sf_jd_free(o);
	/* Escaped and plain spellings of one key are the same key. */
	o = parse("{\"k\":1,\"\\u006b\":2}");
	expect_dump(o, "{\"k\":2}");
	sf_jd_free(o);
	/* Nested objects are resolved on their own. */
	o = parse("{\"o\":{\"a\":1,\"a\":2},\"o2\":{\"a\":3}}");
	expect_dump(o, "{\"o\":{\"a\":2},\"o2\":{\"a\":3}}");
	sf_jd_free(o);
}

/* {"k0":0,"k1":1,...} with n members, keys taken modulo mod. */
static char *big_object(size_t n, size_t mod)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	int rc = sf_buf_putc(&b, '{');
	for (size_t i = 0; i < n && !rc; i++)
		rc = sf_buf_printf(&b, "%s\"k%zu\":%zu", i ? "," : "", i % mod, i);
	if (!rc)
		rc = sf_buf_putc(&b, '}');
	cr_assert_eq(rc, 0);
	return sf_buf_detach(&b, NULL);
}

/* A quadratic duplicate check would take minutes on these. */
Test(jdoc, big_objects_parse_fast, .timeout = 20)
{
	const size_t n = 100000;
	char *all_same = big_object(n, 1);
	sf_jd *o = parse(all_same);
	cr_expect_eq(sf_jd_len(o), 1);
	char want[32];
	snprintf(want, sizeof(want), "{\"k0\":%zu}", n - 1);
	expect_dump(o, want);
	sf_jd_free(o);
	free(all_same);

	char *distinct = big_object(n, n);
	o = parse(distinct);
	cr_expect_eq(sf_jd_len(o), n);
	expect_dump(o, distinct);
	sf_jd *c = sf_jd_clone(o);
	cr_expect(sf_jd_equal(o, c));
	sf_jd_free(c);
	sf_jd_free(o);
	free(distinct);

	/* Many duplicates of many keys: first positions keep the last values. */
	char *mixed = big_object(n, 1000);
	o = parse(mixed);
	cr_expect_eq(sf_jd_len(o), 1000);
	const char *key = NULL;
	int64_t v = 0;
	cr_expect_eq(sf_jd_int(sf_jd_at(o, 5, &key), &v), 0);
	cr_expect_str_eq(key, "k5");
	cr_expect_eq(v, (int64_t)(n - 1000 + 5));
	sf_jd_free(o);
	free(mixed);
}

static char *nested(int depth)
{
	char *s = malloc((size_t)depth * 2 + 1);
	cr_assert_not_null(s);
	for (int i = 0; i < depth; i++) {
		s[i] = '[';
		s[2 * depth - 1 - i] = ']';
	}
	s[2 * depth] = '\0';
	return s;
}

Test(jdoc, nesting_limit)
{
	char *ok = nested(127);
	sf_jd *n = parse(ok);
	expect_dump(n, ok);
	sf_jd_free(n);
	free(ok);

	char *deep = nested(128);
	char err[160] = "", merr[160] = "";
	cr_expect_null(sf_jd_parse(deep, strlen(deep), err, sizeof(err)));
	cr_expect(strstr(err, "nested deeper than 127 levels") != NULL, "%s", err);
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_expect_eq(sf_json_minify(deep, strlen(deep), &b, merr, sizeof(merr)), -EBADMSG);
	cr_expect_str_eq(err, merr, "the same error as sf_json_minify");
	sf_buf_free(&b);
	free(deep);

	/* Objects count too. */
	sf_buf o;
	sf_buf_init(&o, 0);
	for (int i = 0; i < 128; i++)
		cr_assert_eq(sf_buf_puts(&o, "{\"a\":"), 0);
	cr_assert_eq(sf_buf_puts(&o, "1"), 0);
	for (int i = 0; i < 128; i++)
		cr_assert_eq(sf_buf_putc(&o, '}'), 0);
	cr_expect_null(sf_jd_parse(o.data, o.len, err, sizeof(err)));
	cr_expect(strstr(err, "nested deeper") != NULL, "%s", err);
	sf_buf_free(&o);
}

/* in is rejected with sf_json_minify's message, which has reason and the
 * byte offset. */
static void expect_invalid(const char *in, const char *reason, size_t at)
{
	char err[160] = "", merr[160] = "";
	cr_expect_null(sf_jd_parse(in, strlen(in), err, sizeof(err)), "input %s", in);
	cr_expect(strstr(err, reason) != NULL, "input %s: error \"%s\" lacks \"%s\"", in, err,
	          reason);
	char pos[48];
	snprintf(pos, sizeof(pos), "at byte %zu:", at);
	cr_expect(strstr(err, pos) != NULL, "input %s: error \"%s\" lacks \"%s\"", in, err, pos);
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_expect_eq(sf_json_minify(in, strlen(in), &b, merr, sizeof(merr)), -EBADMSG);
	cr_expect_str_eq(err, merr, "input %s", in);
	sf_buf_free(&b);
}

Test(jdoc, malformed_input)
{
	expect_invalid("", "premature EOF", 0);
	expect_invalid("   ", "premature EOF", 3);
	expect_invalid("{\"a\":1", "premature EOF", 6);
	expect_invalid("{\"a\":[1,{\"b\":", "premature EOF", 13);
	expect_invalid("{\"a\":1} x", "trailing garbage", 9);
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
	/* A NULL error buffer and NULL text are allowed. */
	cr_expect_null(sf_jd_parse("{", 1, NULL, 0));
	char err[64] = "";
	cr_expect_null(sf_jd_parse(NULL, 5, err, sizeof(err)));
	cr_expect(strstr(err, "premature EOF") != NULL, "%s", err);
	/* A small error buffer is truncated, not overrun. */
	char tiny[8];
	memset(tiny, 'x', sizeof(tiny));
	cr_expect_null(sf_jd_parse("[", 1, tiny, sizeof(tiny)));
	cr_expect_eq(strlen(tiny), sizeof(tiny) - 1);
}

Test(jdoc, from_jv)
{
	const char *text = "{\"spec\":{\"template\":{\"a\": [1, \"x\"]}}, \"z\":0}";
	sf_jv t = sf_jv_path(sf_jv_root(text, strlen(text)), "spec.template");
	sf_jd *n = sf_jd_from_jv(t);
	cr_assert_not_null(n);
	expect_dump(n, "{\"a\":[1,\"x\"]}");
	sf_jd_free(n);
	cr_expect_null(sf_jd_from_jv(SF_JV_NONE));
	cr_expect_null(sf_jd_from_jv((sf_jv){"{\"a\":", 5}));
}

Test(jdoc, ownership)
{
	sf_jd_free(NULL); /* a no-op */
	sf_jd *o = parse("{\"a\":{\"b\":[1,2,3]},\"c\":true}");
	sf_jd *a = sf_jd_get(o, "a");
	sf_jd *arr = sf_jd_get(a, "b");
	/* A node inside a tree, or one that would make a cycle, is refused
	 * and left alone. */
	cr_expect_eq(sf_jd_set(o, "again", a), -EINVAL);
	cr_expect_eq(sf_jd_append(arr, sf_jd_at(arr, 0, NULL)), -EINVAL);
	cr_expect_eq(sf_jd_set(a, "self", a), -EINVAL);
	cr_expect_eq(sf_jd_set(a, "root", o), -EINVAL);
	cr_expect_eq(sf_jd_append(arr, o), -EINVAL);
	expect_dump(o, "{\"a\":{\"b\":[1,2,3]},\"c\":true}");
	/* Freeing a node inside a tree unlinks it first. */
	sf_jd_free(sf_jd_at(arr, 1, NULL));
	expect_dump(o, "{\"a\":{\"b\":[1,3]},\"c\":true}");
	sf_jd_free(sf_jd_get(o, "c"));
	sf_jd_free(arr);
	expect_dump(o, "{\"a\":{}}");
	cr_expect_eq(sf_jd_len(o), 1);
	/* A value that failed to go in was freed (ASan would see a leak). */
	cr_expect_eq(sf_jd_set(sf_jd_get(o, "missing"), "x", sf_jd_new_obj()), -EINVAL);
	cr_expect_eq(sf_jd_append(a, sf_jd_new_arr()), -EINVAL);
	sf_jd_free(o);
}
