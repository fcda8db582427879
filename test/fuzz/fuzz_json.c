/*
 * fuzz_json.c - libFuzzer target for json.c.
 *
 * The input is minified with sf_json_minify; when that succeeds the result
 * must be stable (minifying it again changes nothing), be one value that the
 * views read completely and consistently, and become an sf_obj whose metadata
 * matches what the views say (its cache key too). Independently, the views, sf_jv_path and
 * sf_obj_new run on the raw input bytes, which are usually not JSON at all:
 * they must never read outside them. The cache transforms (projection,
 * omission and path stripping) run on every object: what they return is minified JSON
 * again (minifying it changes nothing), still an object, never longer.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/cache.h"
#include "steadfast/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

static int inside(sf_jv outer, sf_jv v)
{
	return v.p >= outer.p && v.n <= outer.n && (size_t)(v.p - outer.p) <= outer.n - v.n;
}

/* Reads everything under v. With strict set, v comes from yajl's output and
 * every value must be well-formed. */
static void walk(sf_jv v, int strict, int depth)
{
	sf_json_type t = sf_jv_type(v);
	if (strict)
		CHECK(t != SF_JSON_NONE);
	int64_t i64;
	int b;
	char small[8];
	switch (t) {
	case SF_JSON_STRING: {
		char *s = sf_jv_strdup(v);
		char *all = malloc(v.n);
		if (strict)
			CHECK(s != NULL);
		int n = all ? sf_jv_str(v, all, v.n) : -ENOMEM;
		int m = sf_jv_str(v, small, sizeof(small));
		if (s && all) {
			/* Decoding never grows a string, so v.n bytes always fit. */
			CHECK(n >= 0 && memcmp(all, s, strlen(s) + 1) == 0);
			if ((size_t)n == strlen(s))
				CHECK(sf_jv_streq(v, s));
			CHECK(m == (n < (int)sizeof(small) ? n : -ERANGE));
		} else {
			CHECK(n == -EINVAL || n == -ENOMEM);
		}
		free(all);
		free(s);
		break;
	}
	case SF_JSON_NUMBER:
		if (sf_jv_int64(v, &i64) == 0 && strict)
			CHECK(memchr(v.p, '.', v.n) == NULL);
		break;
	case SF_JSON_TRUE:
	case SF_JSON_FALSE: CHECK(sf_jv_bool(v, &b) == 0 && b == (t == SF_JSON_TRUE)); break;
	case SF_JSON_OBJECT:
	case SF_JSON_ARRAY: {
		if (depth > 200)
			break;
		sf_jv_iter it = sf_jv_iter_init(v);
		sf_jv k, e;
		size_t count = 0;
		while (sf_jv_next(&it, &k, &e)) {
			CHECK(inside(v, e));
			if (t == SF_JSON_OBJECT) {
				CHECK(inside(v, k));
				char *key = sf_jv_strdup(k);
				if (strict)
					CHECK(key != NULL);
				if (key && strict && !memchr(k.p, '\\', k.n)) {
					/* The first member with this key comes at or before e. */
					sf_jv g = sf_jv_get(v, key);
					CHECK(g.p != NULL && g.p <= e.p);
				}
				free(key);
			} else {
				CHECK(!sf_jv_ok(k));
				if (count < 8) {
					sf_jv a = sf_jv_at(v, count);
					CHECK(a.p == e.p && a.n == e.n);
				}
			}
			count++;
			walk(e, strict, depth + 1);
		}
		CHECK(sf_jv_len(v) == count);
		if (t == SF_JSON_ARRAY)
			CHECK(!sf_jv_ok(sf_jv_at(v, count)));
		break;
	}
	default: break;
	}
}

/* 1 if the string's escapes include a surrogate (yajl decodes unpaired ones
 * differently from the views, so such strings are not compared). */
static int has_surrogate_escape(sf_jv v)
{
	for (size_t i = 0; i + 2 < v.n; i++) {
		if (v.p[i] == '\\') {
			char c = v.p[i + 2];
			if (v.p[i + 1] == 'u' && (c == 'd' || c == 'D'))
				return 1;
			i++;
		}
	}
	return 0;
}

static void same_string(sf_jv a, sf_jv b)
{
	char *x = sf_jv_strdup(a), *y = sf_jv_strdup(b);
	CHECK(x && y);
	if (!has_surrogate_escape(a))
		CHECK(strcmp(x, y) == 0);
	free(x);
	free(y);
}

/* Walks the input (with its whitespace and escapes) and yajl's minified
 * rendering of it side by side: the views must see the same document. */
static void same_doc(sf_jv a, sf_jv b, int depth)
{
	sf_json_type t = sf_jv_type(a);
	CHECK(t == sf_jv_type(b));
	if (t == SF_JSON_STRING) {
		same_string(a, b);
	} else if (t == SF_JSON_NUMBER) {
		CHECK(a.n == b.n && memcmp(a.p, b.p, a.n) == 0);
	} else if ((t == SF_JSON_OBJECT || t == SF_JSON_ARRAY) && depth < 200) {
		sf_jv_iter ia = sf_jv_iter_init(a), ib = sf_jv_iter_init(b);
		sf_jv ka, va, kb, vb;
		for (;;) {
			int na = sf_jv_next(&ia, &ka, &va), nb = sf_jv_next(&ib, &kb, &vb);
			CHECK(na == nb);
			if (!na)
				break;
			if (t == SF_JSON_OBJECT)
				same_string(ka, kb);
			same_doc(va, vb, depth + 1);
		}
	}
}

static void check_obj(const sf_obj *o)
{
	CHECK(o->refs == 1);
	CHECK(strlen(o->json) <= o->len);
	CHECK(sf_obj_size(o) > o->len);
	sf_jv r = sf_obj_root(o);
	CHECK(sf_jv_type(r) == SF_JSON_OBJECT);
	const char *paths[] = {"metadata.namespace", "metadata.name", "metadata.uid",
	                       "metadata.resourceVersion"};
	const char *have[] = {o->ns, o->name, o->uid, o->rv};
	for (int i = 0; i < 4; i++) {
		char *s = sf_jv_strdup(sf_jv_path(r, paths[i]));
		CHECK(strcmp(have[i], s ? s : "") == 0);
		free(s);
	}
	char key[1024];
	if (o->name[0] && sf_cache_key(o->ns, o->name, key, sizeof(key)) > 0)
		CHECK(strcmp(sf_obj_key(o), key) == 0);
}

/* Takes over o. */
static void transforms(sf_obj *o)
{
	static const char *const paths[] = {"metadata.name",
	                                    "metadata.labels",
	                                    "spec.a[].b",
	                                    "spec.a[].c.d",
	                                    "status.x[]",
	                                    "status.phase",
	                                    "metadata.uid",
	                                    "metadata.annotations.'a.b/c'",
	                                    NULL};
	size_t len = o->len;
	sf_obj *m = sf_obj_omit(sf_obj_ref(o), paths);
	CHECK(m->len <= len);
	sf_obj *p = sf_obj_project(o, paths);
	CHECK(p->len <= len);
	sf_obj *q = sf_obj_strip_path(sf_obj_ref(p), "metadata.labels");
	CHECK(q->len <= p->len);
	sf_obj *objs[] = {p, q, m};
	for (int i = 0; i < 3; i++) {
		sf_buf again;
		char err[64];
		sf_buf_init(&again, 0);
		CHECK(sf_json_minify(objs[i]->json, objs[i]->len, &again, err, sizeof(err)) == 0);
		CHECK(again.len == objs[i]->len &&
		      memcmp(again.data, objs[i]->json, again.len) == 0);
		CHECK(sf_jv_type(sf_obj_root(objs[i])) == SF_JSON_OBJECT);
		sf_buf_free(&again);
	}
	sf_obj_unref(m);
	sf_obj_unref(q);
	sf_obj_unref(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;

	/* Minify, then check the result. */
	sf_buf out;
	sf_buf_init(&out, 0);
	char err[256];
	if (sf_json_minify(in, size, &out, err, sizeof(err)) == 0) {
		CHECK(out.len > 0 && out.len <= size);
		CHECK(strlen(out.data) == out.len); /* control characters are escaped */
		sf_buf again;
		sf_buf_init(&again, 0);
		CHECK(sf_json_minify(out.data, out.len, &again, err, sizeof(err)) == 0);
		CHECK(again.len == out.len && memcmp(again.data, out.data, out.len) == 0);
		sf_buf_free(&again);
		sf_jv r = sf_jv_root(out.data, out.len);
		CHECK(r.p == out.data && r.n == out.len);
		walk(r, 1, 0);
		same_doc(sf_jv_root(in, size), r, 0);
		sf_obj *o = sf_obj_new(out.data, out.len);
		CHECK((o != NULL) == (out.data[0] == '{'));
		if (o) {
			check_obj(o);
			CHECK(sf_obj_ref(o) == o);
			sf_obj_unref(o);
			transforms(o);
		}
	} else {
		CHECK(err[0] != '\0');
		CHECK(out.len == 0);
	}
	sf_buf_free(&out);

	/* The raw bytes, in an allocation of exactly their size. */
	char *raw = malloc(size ? size : 1);
	if (!raw)
		return 0;
	memcpy(raw, data, size);
	sf_jv whole = {raw, size};
	sf_jv r = sf_jv_root(raw, size);
	if (sf_jv_ok(r))
		CHECK(inside(whole, r));
	walk(r, 0, 0);
	walk(whole, 0, 0);
	static const char *const paths[] = {"metadata.name", "items[0].metadata", "a[1][2].b",
	                                    "[0]", "x.y.z"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		sf_jv p = sf_jv_path(whole, paths[i]);
		if (sf_jv_ok(p))
			CHECK(inside(whole, p));
		walk(p, 0, 0);
	}
	/* A path taken from the input itself (its first line, at most 64 bytes). */
	char path[65];
	size_t pl = 0;
	while (pl < size && pl < 64 && raw[pl] != '\n' && raw[pl] != '\0') {
		path[pl] = raw[pl];
		pl++;
	}
	path[pl] = '\0';
	if (pl < size) {
		sf_jv rest = {raw + pl + 1, size - pl - 1};
		sf_jv p = sf_jv_path(sf_jv_root(rest.p, rest.n), path);
		if (sf_jv_ok(p))
			CHECK(inside(rest, p));
		walk(p, 0, 0);
	}
	sf_obj *o = sf_obj_new(raw, size);
	if (o) {
		walk(sf_obj_root(o), 0, 0);
		sf_obj_unref(o);
	}
	free(raw);
	return 0;
}
