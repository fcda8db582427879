/*
 * fuzz_jdoc.c - libFuzzer target for jdoc.c.
 *
 * The input is parsed into a tree and, independently, minified with
 * sf_json_minify: both must accept or reject it alike, with the same error
 * message. A parsed tree must write out as the minified text, except that
 * duplicate keys collapse (last value at the first position), which is
 * checked against a small reference written here over sf_jv views of the
 * minified text. The output must parse back to an equal tree, write
 * unchanged again, and a clone must be equal. Paths through the tree must
 * find what sf_jv_path finds in the text, and a few edits on the clone
 * (set, del, append, remove, unlinking frees) must behave.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/jdoc.h"
#include "steadfast/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

static int same_bytes(const sf_buf *a, const sf_buf *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static int jv_eq(sf_jv a, sf_jv b)
{
	return a.n == b.n && memcmp(a.p, b.p, a.n) == 0;
}

/* Reference for duplicate keys, over minified text v (whose string escapes
 * are canonical, so equal keys have equal bytes): writes v with one member
 * per key, the last value at the first position. Sets *dups if any key
 * repeats. */
static void ref_write(sf_jv v, sf_buf *out, int *dups)
{
	sf_json_type t = sf_jv_type(v);
	sf_jv_iter it = sf_jv_iter_init(v);
	sf_jv k, e;
	int first = 1;
	if (t == SF_JSON_ARRAY) {
		CHECK(sf_buf_putc(out, '[') == 0);
		while (sf_jv_next(&it, NULL, &e)) {
			if (!first)
				CHECK(sf_buf_putc(out, ',') == 0);
			first = 0;
			ref_write(e, out, dups);
		}
		CHECK(sf_buf_putc(out, ']') == 0);
		return;
	}
	if (t != SF_JSON_OBJECT) {
		CHECK(sf_buf_append(out, v.p, v.n) == 0);
		return;
	}
	CHECK(sf_buf_putc(out, '{') == 0);
	while (sf_jv_next(&it, &k, &e)) {
		/* skip keys seen before; else take the last value for this key */
		sf_jv_iter j = sf_jv_iter_init(v);
		sf_jv k2, e2;
		int seen = 0;
		while (sf_jv_next(&j, &k2, &e2) && k2.p != k.p) {
			if (jv_eq(k, k2))
				seen = 1;
		}
		if (seen) {
			*dups = 1;
			continue;
		}
		sf_jv last = e;
		while (sf_jv_next(&j, &k2, &e2)) {
			if (jv_eq(k, k2))
				last = e2;
		}
		if (!first)
			CHECK(sf_buf_putc(out, ',') == 0);
		first = 0;
		CHECK(sf_buf_append(out, k.p, k.n) == 0 && sf_buf_putc(out, ':') == 0);
		ref_write(last, out, dups);
	}
	CHECK(sf_buf_putc(out, '}') == 0);
}

/* Reads every node: lengths, indexing, lookups and scalar accessors agree. */
static void walk(const sf_jd *n, int keys_have_nul)
{
	sf_json_type t = sf_jd_type(n);
	CHECK(t != SF_JSON_NONE);
	size_t len = sf_jd_len(n), sl;
	int64_t i64;
	int b;
	const char *key;
	CHECK(sf_jd_at(n, len, &key) == NULL && key == NULL);
	switch (t) {
	case SF_JSON_OBJECT:
		for (size_t i = 0; i < len; i++) {
			sf_jd *v = sf_jd_at(n, i, &key);
			CHECK(v && key);
			if (!keys_have_nul)
				CHECK(sf_jd_get(n, key) == v);
			walk(v, keys_have_nul);
		}
		break;
	case SF_JSON_ARRAY:
		for (size_t i = 0; i < len; i++) {
			sf_jd *v = sf_jd_at(n, i, &key);
			CHECK(v && !key);
			walk(v, keys_have_nul);
		}
		break;
	case SF_JSON_STRING: {
		const char *s = sf_jd_str(n, &sl);
		CHECK(s && s[sl] == '\0' && len == 0);
		break;
	}
	case SF_JSON_NUMBER: {
		int rc = sf_jd_int(n, &i64);
		CHECK(rc == 0 || rc == -EINVAL || rc == -ERANGE);
		CHECK(sf_jd_str(n, NULL) == NULL);
		break;
	}
	case SF_JSON_TRUE:
	case SF_JSON_FALSE: CHECK(sf_jd_bool(n, &b) == 0 && b == (t == SF_JSON_TRUE)); break;
	default: CHECK(sf_jd_bool(n, &b) == -EINVAL); break;
	}
}

/* Edits on a copy: each is undone or checked, and the copy stays valid. */
static void edit(sf_jd *c, const sf_jd *orig)
{
	sf_json_type t = sf_jd_type(c);
	size_t len = sf_jd_len(c);
	if (t == SF_JSON_OBJECT && !sf_jd_get(c, "\x01fz") && !sf_jd_get(c, "\x01fo")) {
		CHECK(sf_jd_set_int(c, "\x01fz", 1) == 0 && sf_jd_len(c) == len + 1);
		CHECK(!sf_jd_equal(c, orig));
		CHECK(sf_jd_set_str(c, "\x01fz", "x") == 0 && sf_jd_len(c) == len + 1);
		sf_jd *o = sf_jd_obj_member(c, "\x01fo");
		CHECK(o && sf_jd_obj_member(c, "\x01fo") == o && !sf_jd_arr_member(c, "\x01fo"));
		CHECK(!sf_jd_obj_member(c, "\x01fz"));
		CHECK(sf_jd_del(c, "\x01fz") == 0 && sf_jd_del(c, "\x01fz") == -ENOENT);
		sf_jd_free(o);
		CHECK(sf_jd_len(c) == len && sf_jd_equal(c, orig));
	} else if (t == SF_JSON_ARRAY) {
		CHECK(sf_jd_append(c, sf_jd_new_null()) == 0 && sf_jd_len(c) == len + 1);
		CHECK(!sf_jd_equal(c, orig));
		CHECK(sf_jd_remove(c, len) == 0 && sf_jd_remove(c, len) == -ENOENT);
		CHECK(sf_jd_equal(c, orig));
	}
	/* Drop the first member or element: once by unlinking free, and the
	 * rest must shift down. */
	if (len) {
		sf_jd *second = sf_jd_at(c, 1, NULL);
		sf_jd_free(sf_jd_at(c, 0, NULL));
		CHECK(sf_jd_len(c) == len - 1 && sf_jd_at(c, 0, NULL) == second);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	char err[256], merr[256];
	sf_buf mini, out, ref, again;
	sf_buf_init(&mini, 0);
	sf_buf_init(&out, 0);
	sf_buf_init(&ref, 0);
	sf_buf_init(&again, 0);

	sf_jd *n = sf_jd_parse(in, size, err, sizeof(err));
	int mrc = sf_json_minify(in, size, &mini, merr, sizeof(merr));
	if (!n) {
		CHECK(err[0] != '\0');
		CHECK(mrc == -EBADMSG && strcmp(err, merr) == 0);
		goto out;
	}
	CHECK(err[0] == '\0' && mrc == 0);

	CHECK(sf_jd_write(n, &out) == 0);
	int dups = 0;
	ref_write(sf_jv_root(mini.data, mini.len), &ref, &dups);
	CHECK(same_bytes(&out, &ref));
	if (!dups)
		CHECK(same_bytes(&out, &mini));
	else
		CHECK(out.len < mini.len);

	int keys_have_nul = memmem(mini.data, mini.len, "\\u0000", 6) != NULL;
	walk(n, keys_have_nul);

	/* Output parses back to an equal tree and writes the same again. */
	sf_jd *m = sf_jd_parse(out.data, out.len, err, sizeof(err));
	CHECK(m && sf_jd_equal(n, m) && sf_jd_equal(m, n));
	CHECK(sf_jd_write(m, &again) == 0 && same_bytes(&again, &out));
	sf_jd_free(m);
	m = sf_jd_from_jv((sf_jv){in, size});
	CHECK(m && sf_jd_equal(n, m));
	sf_jd_free(m);

	/* Paths find what the views find (which see the first of duplicate
	 * keys, the tree the last: compared only without duplicates). */
	static const char *const paths[] = {
	    "a",      "metadata.name", "items[0].metadata", "a[1][2].b", "[0]",
	    "[1][0]", "x.y.z",         "spec.template.spec"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && !dups; i++) {
		sf_jd *p = sf_jd_path(n, paths[i]);
		sf_jv v = sf_jv_path(sf_jv_root(mini.data, mini.len), paths[i]);
		CHECK(sf_jd_type(p) == sf_jv_type(v));
		if (p) {
			char *s = sf_jd_dump(p);
			CHECK(s && strlen(s) == v.n && memcmp(s, v.p, v.n) == 0);
			free(s);
		}
	}

	/* A clone is equal, writes the same, and can be edited on its own. */
	sf_jd *c = sf_jd_clone(n);
	CHECK(c && sf_jd_equal(n, c));
	sf_buf_reset(&again);
	CHECK(sf_jd_write(c, &again) == 0 && same_bytes(&again, &out));
	edit(c, n);
	sf_buf_reset(&again);
	CHECK(sf_jd_write(n, &again) == 0 && same_bytes(&again, &out));
	sf_jd_free(c);
	sf_jd_free(n);
out:
	sf_buf_free(&mini);
	sf_buf_free(&out);
	sf_buf_free(&ref);
	sf_buf_free(&again);
	return 0;
}
