/*
 * test_store.c - the object store: keys and resourceVersion order, upsert /
 * delete deltas, the built-in and custom indexes, re-list (replace) deltas,
 * reference ownership and memory accounting.
 *
 * Objects are built from small JSON documents; every handler call is
 * recorded as "TYPE key rv" lines so each test can assert the exact
 * sequence of deltas.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awapi.h"
#include "steadfast/cache.h"
#include "steadfast/json.h"
#include "tl_heap.h"

/* ---- helpers ---- */

typedef struct rec {
	char lines[64][512];
	size_t n;
	sf_store *s; /* for handlers that look at the store */
	int saw_new_in_store;
} rec;

static void record(void *ud, sf_delta_type t, sf_obj *old, sf_obj *new_obj)
{
	rec *r = ud;
	cr_assert_lt(r->n, 64);
	const sf_obj *o = new_obj ? new_obj : old;
	char key[128];
	cr_assert_gt(sf_cache_key(o->ns, o->name, key, sizeof(key)), 0);
	if (t == SF_DELTA_UPDATE)
		snprintf(r->lines[r->n], sizeof(r->lines[0]), "UPDATE %s %s->%s", key, old->rv,
		         new_obj->rv);
	else
		snprintf(r->lines[r->n], sizeof(r->lines[0]), "%s %s %s", sf_delta_type_name(t),
		         key, o->rv);
	r->n++;
	/* The change is applied before the handler runs. */
	if (r->s && new_obj && sf_store_get(r->s, key) == new_obj)
		r->saw_new_in_store++;
	if (r->s && !new_obj)
		cr_assert_null(sf_store_get(r->s, key), "deleted object still in the store");
}

static void expect(const rec *r, const char *const *lines, size_t n)
{
	for (size_t i = 0; i < r->n && i < n; i++)
		cr_expect_str_eq(r->lines[i], lines[i], "delta %zu", i);
	cr_assert_eq(r->n, n, "expected %zu deltas, got %zu (first: %s)", n, r->n,
	             r->n ? r->lines[0] : "-");
}

/* A ConfigMap-like object; labels_json and owners_json may be NULL. */
static sf_obj *mk(const char *ns, const char *name, const char *uid, const char *rv,
                  const char *labels_json, const char *owners_json, const char *data)
{
	char buf[2048];
	char nsf[128] = "";
	if (ns && *ns)
		snprintf(nsf, sizeof(nsf), "\"namespace\":\"%s\",", ns);
	snprintf(buf, sizeof(buf),
	         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\",%s"
	         "\"uid\":\"%s\",\"resourceVersion\":\"%s\"%s%s%s%s},\"data\":{\"k\":\"%s\"}}",
	         name, nsf, uid, rv, labels_json ? ",\"labels\":" : "",
	         labels_json ? labels_json : "", owners_json ? ",\"ownerReferences\":" : "",
	         owners_json ? owners_json : "", data ? data : "");
	char err[128];
	sf_obj *o = sf_obj_parse(buf, strlen(buf), err, sizeof(err));
	cr_assert_not_null(o, "bad test object: %s: %s", err, buf);
	return o;
}

/* Object i of a numbered set in namespace ns: name prefix-i, uid-i,
 * resourceVersion 100+i, labelled for AppWrapper aw-g and controlled by
 * owner-g. */
static sf_obj *mk_numbered(const char *prefix, int i, int g, const char *data)
{
	char name[32], uid[32], rv[16], labels[128], owners[128];
	snprintf(name, sizeof(name), "%s-%d", prefix, i);
	snprintf(uid, sizeof(uid), "uid-%d", i);
	snprintf(rv, sizeof(rv), "%d", 100 + i);
	snprintf(labels, sizeof(labels), "{\"" SF_AW_LABEL "\":\"aw-%d\"}", g);
	snprintf(owners, sizeof(owners), "[{\"uid\":\"owner-%d\",\"controller\":true}]", g);
	return mk("ns", name, uid, rv, labels, owners, data);
}

/* Upserts and drops the caller's reference. */
static void put(sf_store *s, sf_obj *o)
{
	cr_assert_eq(sf_store_upsert(s, o), 0);
	sf_obj_unref(o);
}

static sf_store *new_store(rec *r)
{
	sf_store *s = sf_store_new();
	cr_assert_not_null(s);
	if (r) {
		memset(r, 0, sizeof(*r));
		r->s = s;
		sf_store_set_handler(s, record, r);
	}
	return s;
}

/* Names of the objects in a list, sorted, comma-joined. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *names(sf_obj **list, size_t n, char *buf, size_t cap)
{
	const char *v[256];
	cr_assert_leq(n, 256);
	for (size_t i = 0; i < n; i++)
		v[i] = list[i]->name;
	qsort(v, n, sizeof(v[0]), cmp_str);
	buf[0] = '\0';
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : "", v[i]);
	return buf;
}

static const char *by_index(sf_store *s, const char *index, const char *value, char *buf,
                            size_t cap)
{
	sf_obj **list = NULL;
	size_t n = 0;
	cr_assert_eq(sf_store_by_index(s, index, value, &list, &n), 0);
	cr_assert_eq((long)n, sf_store_index_count(s, index, value));
	names(list, n, buf, cap);
	sf_obj_list_free(list, n);
	return buf;
}

/* ---- keys ---- */

Test(store, key_format)
{
	char buf[16];
	cr_assert_eq(sf_cache_key("ns", "a", buf, sizeof(buf)), 4);
	cr_assert_str_eq(buf, "ns/a");
	cr_assert_eq(sf_cache_key("", "node-1", buf, sizeof(buf)), 6);
	cr_assert_str_eq(buf, "node-1");
	cr_assert_eq(sf_cache_key(NULL, "x", buf, sizeof(buf)), 1);
	cr_assert_str_eq(buf, "x");
	/* 15 characters + NUL fit, 16 do not */
	cr_assert_eq(sf_cache_key("ns", "0123456789ab", buf, sizeof(buf)), 15);
	cr_assert_eq(sf_cache_key("ns", "0123456789abc", buf, sizeof(buf)), -ERANGE);
}

/* ---- upsert / delete ---- */

Test(store, add_get_update_delete)
{
	rec r;
	sf_store *s = new_store(&r);
	put(s, mk("ns1", "a", "u-a", "10", NULL, NULL, "x"));
	put(s, mk("", "cluster-wide", "u-c", "11", NULL, NULL, "x"));
	cr_assert_eq(sf_store_len(s), 2);
	sf_obj *a = sf_store_get(s, "ns1/a");
	cr_assert_not_null(a);
	cr_assert_str_eq(a->rv, "10");
	cr_assert_eq(sf_store_get_ns(s, "ns1", "a"), a);
	cr_assert_not_null(sf_store_get(s, "cluster-wide"));
	cr_assert_null(sf_store_get(s, "ns2/a"));
	cr_assert_null(sf_store_get(s, "a"));

	put(s, mk("ns1", "a", "u-a", "12", NULL, NULL, "y"));
	cr_assert_str_eq(sf_store_get(s, "ns1/a")->rv, "12");
	cr_assert_eq(sf_store_len(s), 2);

	sf_obj *del = mk("ns1", "a", "u-a", "13", NULL, NULL, "y");
	cr_assert_eq(sf_store_delete(s, del), 0);
	cr_assert_eq(sf_store_delete(s, del), -ENOENT);
	sf_obj_unref(del);
	cr_assert_eq(sf_store_delete_key(s, "ns1/nope"), -ENOENT);
	cr_assert_eq(sf_store_len(s), 1);

	const char *want[] = {"ADD ns1/a 10", "ADD cluster-wide 11", "UPDATE ns1/a 10->12",
	                      "DELETE ns1/a 12"};
	expect(&r, want, 4);
	cr_assert_eq(r.saw_new_in_store, 3);

	sf_store_stats st;
	sf_store_stats_get(s, &st);
	cr_assert_eq(st.adds, 2);
	cr_assert_eq(st.updates, 1);
	cr_assert_eq(st.deletes, 1);
	sf_store_free(s);
}

Test(store, identical_object_is_not_an_update)
{
	rec r;
	sf_store *s = new_store(&r);
	put(s, mk("ns", "a", "u", "5", NULL, NULL, "x"));
	sf_obj *first = sf_store_get(s, "ns/a");
	put(s, mk("ns", "a", "u", "5", NULL, NULL, "x"));
	/* same uid and rv: the same object, whatever the bytes (a LIST item
	 * has no kind/apiVersion, a watch object has them) */
	const char *j = "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u\","
	                "\"resourceVersion\":\"5\"},\"data\":{\"k\":\"x\"}}";
	put(s, sf_obj_parse(j, strlen(j), NULL, 0));
	cr_assert_eq(sf_store_get(s, "ns/a"), first, "the stored object is kept");
	/* a new rv is a change even with equal data */
	put(s, mk("ns", "a", "u", "6", NULL, NULL, "x"));
	/* without versions, bytes decide */
	const char *n1 = "{\"metadata\":{\"name\":\"b\"},\"x\":1}";
	const char *n2 = "{\"metadata\":{\"name\":\"b\"},\"x\":2}";
	put(s, sf_obj_parse(n1, strlen(n1), NULL, 0));
	put(s, sf_obj_parse(n1, strlen(n1), NULL, 0));
	put(s, sf_obj_parse(n2, strlen(n2), NULL, 0));
	const char *want[] = {"ADD ns/a 5", "UPDATE ns/a 5->6", "ADD b ", "UPDATE b ->"};
	expect(&r, want, 4);
	sf_store_stats st;
	sf_store_stats_get(s, &st);
	cr_assert_eq(st.unchanged, 3);
	sf_store_free(s);
}

Test(store, new_uid_same_name_is_delete_then_add)
{
	rec r;
	sf_store *s = new_store(&r);
	cr_assert_eq(sf_store_add_controller_index(s), 0);
	put(s,
	    mk("ns", "a", "uid-1", "5", NULL, "[{\"uid\":\"owner-1\",\"controller\":true}]", ""));
	put(s,
	    mk("ns", "a", "uid-2", "9", NULL, "[{\"uid\":\"owner-2\",\"controller\":true}]", ""));
	const char *want[] = {"ADD ns/a 5", "DELETE ns/a 5", "ADD ns/a 9"};
	expect(&r, want, 3);
	cr_assert_str_eq(sf_store_get(s, "ns/a")->uid, "uid-2");
	cr_assert_eq(sf_store_index_count(s, SF_INDEX_CONTROLLER_UID, "owner-1"), 0);
	cr_assert_eq(sf_store_index_count(s, SF_INDEX_CONTROLLER_UID, "owner-2"), 1);
	sf_store_free(s);
}

Test(store, rejects_objects_without_name)
{
	sf_store *s = new_store(NULL);
	const char *j = "{\"metadata\":{\"namespace\":\"ns\"}}";
	sf_obj *o = sf_obj_parse(j, strlen(j), NULL, 0);
	cr_assert_not_null(o);
	cr_assert_eq(sf_store_upsert(s, o), -EINVAL);
	cr_assert_eq(sf_store_len(s), 0);
	sf_obj_unref(o);
	sf_store_free(s);
}

/* ---- references ---- */

Test(store, holds_its_own_reference)
{
	rec r;
	sf_store *s = new_store(&r);
	sf_obj *o = mk("ns", "a", "u", "1", NULL, NULL, "payload");
	cr_assert_eq(sf_store_upsert(s, o), 0);
	cr_assert_eq(o->refs, 2);
	sf_obj_unref(o); /* the store's reference keeps it alive */
	cr_assert_str_eq(sf_store_get(s, "ns/a")->name, "a");

	sf_obj **list;
	size_t n;
	cr_assert_eq(sf_store_list(s, &list, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(list[0]->refs, 2);
	cr_assert_eq(sf_store_delete_key(s, "ns/a"), 0);
	/* the snapshot still owns it after the store let go */
	cr_assert_eq(list[0]->refs, 1);
	cr_assert_str_eq(list[0]->name, "a");
	sf_obj_list_free(list, n);

	cr_assert_eq(sf_store_list(s, &list, &n), 0);
	cr_assert_eq(n, 0);
	cr_assert_null(list);
	sf_store_free(s);
}

/* ---- indexes ---- */

Test(store, label_index)
{
	sf_store *s = new_store(NULL);
	cr_assert_eq(sf_store_add_label_index(s, SF_AW_LABEL), 0);
	cr_assert_eq(sf_store_add_label_index(s, SF_AW_LABEL), -EEXIST);
	put(s, mk("ns", "j1", "u1", "1", "{\"" SF_AW_LABEL "\":\"aw-1\",\"x\":\"y\"}", NULL, ""));
	put(s, mk("ns", "j2", "u2", "2", "{\"" SF_AW_LABEL "\":\"aw-1\"}", NULL, ""));
	put(s, mk("ns", "j3", "u3", "3", "{\"" SF_AW_LABEL "\":\"aw-2\"}", NULL, ""));
	put(s, mk("ns", "plain", "u4", "4", "{\"x\":\"aw-1\"}", NULL, ""));
	put(s, mk("ns", "nolabels", "u5", "5", NULL, NULL, ""));

	char buf[256];
	cr_assert_str_eq(by_index(s, SF_AW_LABEL, "aw-1", buf, sizeof(buf)), "j1,j2");
	cr_assert_str_eq(by_index(s, SF_AW_LABEL, "aw-2", buf, sizeof(buf)), "j3");
	cr_assert_str_eq(by_index(s, SF_AW_LABEL, "aw-3", buf, sizeof(buf)), "");
	cr_assert_eq(sf_store_by_index(s, "no-such-index", "aw-1", &(sf_obj **){0}, &(size_t){0}),
	             -ENOENT);
	cr_assert_eq(sf_store_index_count(s, "no-such-index", "x"), -ENOENT);

	/* relabel j2: it moves buckets */
	put(s, mk("ns", "j2", "u2", "6", "{\"" SF_AW_LABEL "\":\"aw-2\"}", NULL, ""));
	cr_assert_str_eq(by_index(s, SF_AW_LABEL, "aw-1", buf, sizeof(buf)), "j1");
	cr_assert_str_eq(by_index(s, SF_AW_LABEL, "aw-2", buf, sizeof(buf)), "j2,j3");

	/* drop the label from j1: aw-1 is gone as a value */
	put(s, mk("ns", "j1", "u1", "7", "{\"x\":\"y\"}", NULL, ""));
	char **vals;
	size_t nv;
	cr_assert_eq(sf_store_index_values(s, SF_AW_LABEL, &vals, &nv), 0);
	cr_assert_eq(nv, 1);
	cr_assert_str_eq(vals[0], "aw-2");
	sf_strv_free(vals, nv);

	cr_assert_eq(sf_store_delete_key(s, "ns/j3"), 0);
	cr_assert_str_eq(by_index(s, SF_AW_LABEL, "aw-2", buf, sizeof(buf)), "j2");
	sf_store_stats st;
	sf_store_stats_get(s, &st);
	cr_assert_eq(st.index_values, 1);
	cr_assert_eq(st.index_entries, 1);
	sf_store_free(s);
}

Test(store, controller_owner_index)
{
	sf_store *s = new_store(NULL);
	cr_assert_eq(sf_store_add_controller_index(s), 0);
	put(s, mk("ns", "p1", "u1", "1", NULL,
	          "[{\"uid\":\"not-controller\",\"controller\":false},"
	          "{\"uid\":\"aw-uid\",\"controller\":true}]",
	          ""));
	put(s, mk("ns", "p2", "u2", "2", NULL, "[{\"uid\":\"aw-uid\",\"controller\":true}]", ""));
	put(s, mk("ns", "p3", "u3", "3", NULL, "[{\"uid\":\"aw-uid\"}]", "")); /* not controller */
	put(s, mk("ns", "p4", "u4", "4", NULL, "[]", ""));
	char buf[256];
	cr_assert_str_eq(by_index(s, SF_INDEX_CONTROLLER_UID, "aw-uid", buf, sizeof(buf)), "p1,p2");
	cr_assert_str_eq(by_index(s, SF_INDEX_CONTROLLER_UID, "not-controller", buf, sizeof(buf)),
	                 "");
	sf_store_free(s);
}

Test(store, namespace_index)
{
	sf_store *s = new_store(NULL);
	cr_assert_eq(sf_store_add_namespace_index(s), 0);
	put(s, mk("a", "x", "1", "1", NULL, NULL, ""));
	put(s, mk("a", "y", "2", "2", NULL, NULL, ""));
	put(s, mk("b", "x", "3", "3", NULL, NULL, ""));
	put(s, mk("", "cluster", "4", "4", NULL, NULL, ""));
	char buf[256];
	cr_assert_str_eq(by_index(s, SF_INDEX_NAMESPACE, "a", buf, sizeof(buf)), "x,y");
	cr_assert_str_eq(by_index(s, SF_INDEX_NAMESPACE, "b", buf, sizeof(buf)), "x");
	cr_assert_str_eq(by_index(s, SF_INDEX_NAMESPACE, "", buf, sizeof(buf)), "");
	sf_store_free(s);
}

/* Indexes every character of data.k as a value (duplicates included),
 * and fails for objects named "bad". */
static int chars_index(void *ud, const sf_obj *obj, sf_index_values *out)
{
	int *calls = ud;
	(*calls)++;
	if (strcmp(obj->name, "bad") == 0)
		return -EINVAL;
	char v[64];
	int n = sf_jv_str(sf_jv_path(sf_obj_root(obj), "data.k"), v, sizeof(v));
	for (int i = 0; i < n; i++) {
		int rc = sf_index_values_add(out, &v[i], 1);
		if (rc)
			return rc;
	}
	return 0;
}

Test(store, custom_multi_value_index)
{
	sf_store *s = new_store(NULL);
	int calls = 0;
	cr_assert_eq(sf_store_add_index(s, "chars", chars_index, &calls), 0);
	put(s, mk("ns", "o1", "1", "1", NULL, NULL, "abca"));
	put(s, mk("ns", "o2", "2", "2", NULL, NULL, "cd"));
	put(s, mk("ns", "bad", "3", "3", NULL, NULL, "abcd"));
	cr_assert_eq(calls, 3);
	char buf[256];
	cr_assert_str_eq(by_index(s, "chars", "a", buf, sizeof(buf)), "o1");
	cr_assert_str_eq(by_index(s, "chars", "c", buf, sizeof(buf)), "o1,o2");
	cr_assert_str_eq(by_index(s, "chars", "d", buf, sizeof(buf)), "o2");
	sf_store_stats st;
	sf_store_stats_get(s, &st);
	/* "abca" -> a,b,c (duplicate a dropped); "cd" -> c,d; bad -> none */
	cr_assert_eq(st.index_entries, 5);
	cr_assert_eq(st.index_values, 4);
	cr_assert_eq(st.index_errors, 1);
	cr_assert_eq(sf_store_len(s), 3, "an index error does not drop the object");
	sf_store_free(s);
}

Test(store, index_added_later_covers_existing_objects)
{
	sf_store *s = new_store(NULL);
	put(s, mk("ns", "j1", "u1", "1", "{\"app\":\"one\"}", NULL, ""));
	put(s, mk("ns", "j2", "u2", "2", "{\"app\":\"two\"}", NULL, ""));
	cr_assert_eq(sf_store_add_label_index(s, "app"), 0);
	cr_assert_eq(sf_store_add_namespace_index(s), 0);
	char buf[256];
	cr_assert_str_eq(by_index(s, "app", "one", buf, sizeof(buf)), "j1");
	cr_assert_str_eq(by_index(s, "app", "two", buf, sizeof(buf)), "j2");
	/* the second index did not disturb the first (the index array moved) */
	put(s, mk("ns", "j3", "u3", "3", "{\"app\":\"one\"}", NULL, ""));
	cr_assert_str_eq(by_index(s, "app", "one", buf, sizeof(buf)), "j1,j3");
	cr_assert_str_eq(by_index(s, SF_INDEX_NAMESPACE, "ns", buf, sizeof(buf)), "j1,j2,j3");
	cr_assert_eq(sf_store_delete_key(s, "ns/j1"), 0);
	cr_assert_str_eq(by_index(s, "app", "one", buf, sizeof(buf)), "j3");
	sf_store_free(s);
}

static int count_until(void *ud, sf_obj *obj)
{
	(void)obj;
	int *n = ud;
	return ++(*n) == 3 ? 42 : 0;
}

Test(store, each_stops_early)
{
	sf_store *s = new_store(NULL);
	cr_assert_eq(sf_store_add_namespace_index(s), 0);
	for (int i = 0; i < 5; i++) {
		char name[16];
		snprintf(name, sizeof(name), "o%d", i);
		put(s, mk("ns", name, name, "1", NULL, NULL, ""));
	}
	int n = 0;
	cr_assert_eq(sf_store_each(s, count_until, &n), 42);
	cr_assert_eq(n, 3);
	n = 0;
	cr_assert_eq(sf_store_index_each(s, SF_INDEX_NAMESPACE, "ns", count_until, &n), 42);
	cr_assert_eq(n, 3);
	n = 0;
	cr_assert_eq(sf_store_index_each(s, SF_INDEX_NAMESPACE, "other", count_until, &n), 0);
	cr_assert_eq(n, 0);
	sf_store_free(s);
}

Test(store, large_bucket_removal)
{
	/* 5000 objects under one namespace value: delete every other one and
	 * check membership stays exact. */
	sf_store *s = new_store(NULL);
	cr_assert_eq(sf_store_add_namespace_index(s), 0);
	char name[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "o%d", i);
		put(s, mk("big", name, name, "1", NULL, NULL, ""));
	}
	cr_assert_eq(sf_store_index_count(s, SF_INDEX_NAMESPACE, "big"), 5000);
	for (int i = 0; i < 5000; i += 2) {
		char key[40];
		snprintf(key, sizeof(key), "big/o%d", i);
		cr_assert_eq(sf_store_delete_key(s, key), 0);
	}
	cr_assert_eq(sf_store_index_count(s, SF_INDEX_NAMESPACE, "big"), 2500);
	sf_obj **list;
	size_t n;
	cr_assert_eq(sf_store_by_index(s, SF_INDEX_NAMESPACE, "big", &list, &n), 0);
	cr_assert_eq(n, 2500);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(atoi(list[i]->name + 1) % 2, 1, "%s should be gone", list[i]->name);
	sf_obj_list_free(list, n);
	sf_store_free(s);
}

/* ---- replace (re-list) ---- */

Test(store, replace_emits_update_add_delete)
{
	rec r;
	sf_store *s = new_store(&r);
	cr_assert_eq(sf_store_add_label_index(s, "app"), 0);
	put(s, mk("ns", "a", "ua", "1", "{\"app\":\"x\"}", NULL, "a"));
	put(s, mk("ns", "b", "ub", "2", "{\"app\":\"x\"}", NULL, "b"));
	put(s, mk("ns", "c", "uc", "3", "{\"app\":\"x\"}", NULL, "c"));
	r.n = 0;

	/* new world: a vanished, b unchanged, c modified, d new */
	sf_obj *items[3] = {
	    mk("ns", "b", "ub", "2", "{\"app\":\"x\"}", NULL, "b"),
	    mk("ns", "c", "uc", "8", "{\"app\":\"y\"}", NULL, "c2"),
	    mk("ns", "d", "ud", "9", "{\"app\":\"x\"}", NULL, "d"),
	};
	cr_assert_eq(sf_store_replace(s, items, 3), 1);
	for (int i = 0; i < 3; i++)
		sf_obj_unref(items[i]);

	const char *want[] = {"UPDATE ns/c 3->8", "ADD ns/d 9", "DELETE ns/a 1"};
	expect(&r, want, 3);
	cr_assert_eq(sf_store_len(s), 3);
	cr_assert_null(sf_store_get(s, "ns/a"));
	char buf[256];
	cr_assert_str_eq(by_index(s, "app", "x", buf, sizeof(buf)), "b,d");
	cr_assert_str_eq(by_index(s, "app", "y", buf, sizeof(buf)), "c");
	sf_store_free(s);
}

Test(store, replace_with_empty_list_deletes_everything)
{
	rec r;
	sf_store *s = new_store(&r);
	put(s, mk("ns", "a", "ua", "1", NULL, NULL, ""));
	put(s, mk("", "b", "ub", "2", NULL, NULL, ""));
	r.n = 0;
	cr_assert_eq(sf_store_replace(s, NULL, 0), 2);
	cr_assert_eq(r.n, 2);
	cr_assert_eq(strncmp(r.lines[0], "DELETE ", 7), 0);
	cr_assert_eq(strncmp(r.lines[1], "DELETE ", 7), 0);
	cr_assert_eq(sf_store_len(s), 0);
	sf_store_free(s);
}

Test(store, streaming_replace_restart_and_abort)
{
	rec r;
	sf_store *s = new_store(&r);
	put(s, mk("ns", "a", "ua", "1", NULL, NULL, ""));
	put(s, mk("ns", "b", "ub", "2", NULL, NULL, ""));
	r.n = 0;

	/* an aborted pass deletes nothing */
	sf_store_replace_begin(s);
	sf_obj *b = mk("ns", "b", "ub", "2", NULL, NULL, "");
	cr_assert_eq(sf_store_replace_item(s, b), 0);
	sf_store_replace_abort(s);
	cr_assert_eq(sf_store_replace_end(s), 0, "end after abort must not delete");
	cr_assert_eq(sf_store_len(s), 2);

	/* a pass restarted by begin forgets what the first pass saw: only
	 * items given after the last begin count as present */
	sf_store_replace_begin(s);
	cr_assert_eq(sf_store_replace_item(s, b), 0);
	sf_store_replace_begin(s);
	sf_obj *a = mk("ns", "a", "ua", "1", NULL, NULL, "");
	cr_assert_eq(sf_store_replace_item(s, a), 0);
	cr_assert_eq(sf_store_replace_end(s), 1);
	cr_assert_not_null(sf_store_get(s, "ns/a"));
	cr_assert_null(sf_store_get(s, "ns/b"));
	const char *want[] = {"DELETE ns/b 2"};
	expect(&r, want, 1);
	sf_obj_unref(a);
	sf_obj_unref(b);
	sf_store_free(s);
}

Test(store, upsert_during_pass_counts_as_seen)
{
	sf_store *s = new_store(NULL);
	put(s, mk("ns", "a", "ua", "1", NULL, NULL, ""));
	sf_store_replace_begin(s);
	put(s, mk("ns", "a", "ua", "2", NULL, NULL, ""));
	cr_assert_eq(sf_store_replace_end(s), 0);
	cr_assert_str_eq(sf_store_get(s, "ns/a")->rv, "2");
	sf_store_free(s);
}

/* ---- memory accounting ---- */

Test(store, memory_accounting)
{
	sf_store *s = new_store(NULL);
	cr_assert_eq(sf_store_add_label_index(s, SF_AW_LABEL), 0);
	cr_assert_eq(sf_store_add_controller_index(s), 0);
	size_t json = 0, objsize = 0;
	const int N = 2000;
	char data[256];
	memset(data, 'x', 200);
	data[200] = '\0';
	for (int i = 0; i < N; i++) {
		sf_obj *o = mk_numbered("obj", i, i % 50, data);
		json += o->len;
		objsize += sf_obj_size(o);
		put(s, o);
	}
	sf_store_stats st;
	sf_store_stats_get(s, &st);
	cr_assert_eq(st.objects, (size_t)N);
	cr_assert_eq(st.object_bytes, objsize, "object bytes %zu != sum of sf_obj_size %zu",
	             st.object_bytes, objsize);
	cr_assert_eq(st.index_entries, (size_t)(2 * N));
	cr_assert_eq(st.index_values, 100);
	cr_assert_gt(st.overhead_bytes, (size_t)N * 32, "overhead %zu implausibly small",
	             st.overhead_bytes);
	/* JSON ~ 400 bytes per object: the whole store stays within 1.6x of it */
	cr_assert_lt(sf_store_bytes(s), json * 16 / 10, "store %zu bytes for %zu bytes of JSON",
	             sf_store_bytes(s), json);
	cr_assert_eq(sf_store_bytes(s), st.object_bytes + st.overhead_bytes);

	/* updates swap the accounted size */
	sf_obj *big = mk("ns", "obj-0", "uid-0", "99999", NULL, NULL, data);
	size_t before = st.object_bytes;
	size_t old_size = sf_obj_size(sf_store_get(s, "ns/obj-0"));
	size_t new_size = sf_obj_size(big);
	put(s, big);
	sf_store_stats_get(s, &st);
	cr_assert_eq(st.object_bytes, before - old_size + new_size);
	cr_assert_eq(st.index_entries, (size_t)(2 * N - 2), "obj-0 lost its label and owner");

	/* and emptying the store returns everything */
	cr_assert_eq(sf_store_replace(s, NULL, 0), N);
	sf_store_stats_get(s, &st);
	cr_assert_eq(st.objects, 0);
	cr_assert_eq(st.object_bytes, 0);
	cr_assert_eq(st.index_entries, 0);
	cr_assert_eq(st.index_values, 0);
	/* what is left is the maps' tables, which keep their size (a key
	 * table of 4096 slots of 24 bytes for 2,000 objects) */
	cr_assert_lt(st.overhead_bytes, 128 * 1024, "overhead %zu left after emptying",
	             st.overhead_bytes);
	sf_store_free(s);
}

/* ---- reflector against a scripted server ----
 *
 * The real API server will not truncate a stream or expire a continue token
 * on demand, so these drive the reflector through fakesrv: each request
 * takes the next scripted response, and the requests are checked for the
 * parameters the reflector must send. */

#include <uv.h>

#include "fakesrv.h"
#include "steadfast/log.h"
#include "steadfast/time.h"
#include "tl.h"

#define HDR "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
#define CM(name, uid, rv)                                                                          \
	"{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name             \
	"\",\"namespace\":\"ns\",\"uid\":\"" uid "\",\"resourceVersion\":\"" rv "\"}}"
#define LIST(rv, cont, items)                                                                      \
	HDR "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":" \
	    "\"" rv "\",\"continue\":\"" cont "\"},\"items\":[" items "]}"
#define EV(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}\n"
#define BOOKMARK(rv)                                                                               \
	EV("BOOKMARK", "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"              \
	               "\"resourceVersion\":\"" rv "\"}}")
#define STATUS_EV(code, reason)                                                                    \
	EV("ERROR",                                                                                \
	   "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","                    \
	   "\"message\":\"test " reason "\",\"reason\":\"" reason "\",\"code\":" #code "}")
/* The WatchList's last initial event. */
#define END_BOOKMARK(rv)                                                                           \
	EV("BOOKMARK", "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"              \
	               "\"resourceVersion\":\"" rv "\",\"annotations\":{\"k8s.io/"                 \
	               "initial-events-end\":\"true\"}}}")
#define STATUS_RESP(code, text, reason)                                                            \
	"HTTP/1.1 " #code " " text                                                                 \
	"\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"                          \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"test\","  \
	"\"reason\":\"" reason "\",\"code\":" #code "}"

typedef struct rfx {
	uv_loop_t loop;
	fakesrv *srv;
	sf_kube_config *cfg;
	sf_kube_client *c;
	sf_store *store;
	sf_reflector *r;
	rec rec;
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
	record(&f->rec, t, old, new_obj);
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
	expect(&f.rec, want, sizeof(want) / sizeof(want[0]));
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
	expect(&f.rec, want, 4);
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
	expect(&f.rec, want, 2);
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
	expect(&f.rec, want, 3);
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

/* ---- informer: handler fan-out and freshness waits ---- */

typedef struct ifx {
	char log[64][64];
	int n;
	int waits_done[4];
	int waits_err[4];
	sf_informer *inf;
} ifx;

static void ilog(ifx *x, const char *who, const char *what, const sf_obj *o)
{
	cr_assert_lt(x->n, 64);
	snprintf(x->log[x->n++], sizeof(x->log[0]), "%s %s %s@%s", who, what, o->name, o->rv);
}

static void h1_add(void *ud, sf_obj *o)
{
	ilog(ud, "h1", "add", o);
}
static void h1_update(void *ud, sf_obj *old, sf_obj *o)
{
	(void)old;
	ilog(ud, "h1", "update", o);
}
static void h1_delete(void *ud, sf_obj *o)
{
	ilog(ud, "h1", "delete", o);
}
static void h2_add(void *ud, sf_obj *o)
{
	ilog(ud, "h2", "add", o);
}
static void h2_delete(void *ud, sf_obj *o)
{
	ilog(ud, "h2", "delete", o);
}
static void h3_add(void *ud, sf_obj *o)
{
	ilog(ud, "h3", "add", o);
}

typedef struct waitctx {
	ifx *x;
	int i;
} waitctx;

static void wait_done(void *ud, int err)
{
	waitctx *w = ud;
	w->x->waits_done[w->i]++;
	w->x->waits_err[w->i] = err;
	if (!err)
		cr_assert(sf_informer_synced(w->x->inf));
}

static int log_has(void *ud)
{
	ifx *x = ud;
	return x->n >= 6 && x->waits_done[1];
}

Test(informer, handlers_in_order_and_rv_waits)
{
	static const fake_resp script[] = {
	    {LIST("10", "", CM("a", "ua", "8")), 0},
	    {HDR EV("ADDED", CM("b", "ub", "11")) EV("DELETED", CM("a", "ua", "12")) BOOKMARK("20"),
	     0},
	    {NULL, 1},
	};
	uv_loop_t loop;
	nlog = 0;
	sf_log_set_sink(capture_log, NULL);
	cr_assert_eq(uv_loop_init(&loop), 0);
	fakesrv *srv = fakesrv_start(&loop, script, 3);
	sf_kube_config *cfg;
	sf_kube_client *c = tl_fakesrv_client(&loop, srv, NULL, &cfg);

	const char *labels[] = {"app", NULL};
	sf_informer_opts o = {
	    .reflector = {.gvr = &SF_GVR_CONFIGMAPS, .ns = "ns", .watch_list = -1},
	    .label_indexes = labels,
	    .controller_index = 1,
	    .namespace_index = 1};
	ifx x;
	memset(&x, 0, sizeof(x));
	cr_assert_eq(sf_informer_new(&loop, c, &o, &x.inf), 0);
	sf_informer_handler h1 = {.on_add = h1_add, .on_update = h1_update, .on_delete = h1_delete};
	sf_informer_handler h2 = {.on_add = h2_add, .on_delete = h2_delete};
	cr_assert_eq(sf_informer_add_handler(x.inf, &h1, &x), 0);
	cr_assert_eq(sf_informer_add_handler(x.inf, &h2, &x), 0);

	waitctx w[4] = {{&x, 0}, {&x, 1}, {&x, 2}, {&x, 3}};
	sf_rv_wait *cancelled = NULL;
	/* not synced yet: even an old RV waits for the first list */
	cr_assert_eq(sf_informer_wait_rv(x.inf, "5", wait_done, &w[0], NULL), 0);
	cr_assert_eq(sf_informer_wait_rv(x.inf, "15", wait_done, &w[1], NULL), 0);
	cr_assert_eq(sf_informer_wait_rv(x.inf, "1000", wait_done, &w[2], NULL), 0);
	cr_assert_eq(sf_informer_wait_rv(x.inf, "12", wait_done, &w[3], &cancelled), 0);
	sf_informer_wait_cancel(cancelled);

	cr_assert_eq(sf_informer_start(x.inf), 0);
	cr_assert_eq(tl_run_until_fn(&loop, log_has, &x, 5000), 0, "only %d events", x.n);
	const char *want[] = {"h1 add a@8",  "h2 add a@8",    "h1 add b@11",
	                      "h2 add b@11", "h1 delete a@8", "h2 delete a@8"};
	for (int i = 0; i < 6; i++)
		cr_assert_str_eq(x.log[i], want[i], "event %d", i);
	cr_assert_eq(x.waits_done[0], 1);
	cr_assert_eq(x.waits_err[0], 0);
	cr_assert_eq(x.waits_done[1], 1, "released by the bookmark at 20");
	cr_assert_eq(x.waits_done[2], 0);
	cr_assert_eq(x.waits_done[3], 0, "a cancelled wait never fires");
	cr_assert_str_eq(sf_informer_last_rv(x.inf), "20");
	cr_assert_eq(sf_informer_wait_rv(x.inf, "19", wait_done, &w[3], NULL), 1);

	/* a late handler is replayed the current contents */
	sf_informer_handler h3 = {.on_add = h3_add};
	cr_assert_eq(sf_informer_add_handler(x.inf, &h3, &x), 0);
	cr_assert_eq(x.n, 7);
	cr_assert_str_eq(x.log[6], "h3 add b@11");

	sf_store *st = sf_informer_store(x.inf);
	cr_assert_eq(sf_store_index_count(st, SF_INDEX_NAMESPACE, "ns"), 1);

	int stopped = 0;
	sf_informer_stop(x.inf, set_flag, &stopped);
	cr_assert_eq(tl_run_until(&loop, &stopped, 5000), 0);
	cr_assert_eq(x.waits_done[2], 1);
	cr_assert_eq(x.waits_err[2], -ECANCELED);
	cr_assert_eq(sf_informer_wait_rv(x.inf, "1", wait_done, &w[3], NULL), -ESHUTDOWN);
	/* the store outlives the stop */
	cr_assert_not_null(sf_store_get(st, "ns/b"));
	sf_informer_free(x.inf);

	int closed = 0;
	sf_kube_client_close(c, set_flag, &closed);
	fakesrv_stop(srv);
	cr_assert_eq(tl_run_until(&loop, &closed, 5000), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	sf_kube_config_free(cfg);
	cr_assert_eq(uv_loop_close(&loop), 0);
	cr_assert_eq(nlog, 0, "unexpected warning: %s", log_lines[0]);
	sf_log_set_sink(NULL, NULL);
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
	record(&f->rec, t, old, new_obj);
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
	expect(&f.rec, want, 2);
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
	expect(&f.rec, want, 3);
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
	expect(&f.rec, want, 5);
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
	expect(&f.rec, want, 5);
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

/* The gauges carry the store's accounting, and the accounting is what
 * malloc was really asked for: short of what the heap grew by while the
 * objects were built and stored only by chunk headers and rounding. */
Test(store, cache_gauges_match_the_heap)
{
	size_t m0 = tl_heap_in_use();
	sf_store *s = new_store(NULL);
	cr_assert_eq(sf_store_add_label_index(s, SF_AW_LABEL), 0);
	cr_assert_eq(sf_store_add_controller_index(s), 0);
	const int N = 3000;
	char data[512];
	memset(data, 'y', 300);
	data[300] = '\0';
	for (int i = 0; i < N; i++)
		put(s, mk_numbered("pod", i, i, data));
	size_t heap = tl_heap_in_use() - m0;
	size_t acct = sf_store_bytes(s);
	cr_assert_leq(acct, heap, "accounted %zu > the heap's growth %zu", acct, heap);
	cr_assert_geq(acct, heap * 3 / 4, "accounted %zu misses much of the heap's growth %zu",
	              acct, heap);

	sf_prom *p = sf_prom_new();
	cr_assert_not_null(p);
	cr_assert_eq(sf_store_metrics_add(s, p, "", "pods"), 0);
	cr_assert_eq(sf_store_metrics_add(s, p, "batch", "jobs"), 0);
	sf_buf out;
	sf_buf_init(&out, 0);
	cr_assert_eq(sf_prom_render(p, &out), 0);
	cr_assert_eq(sf_buf_putc(&out, '\0'), 0);
	char want[128];
	snprintf(want, sizeof(want), "steadfast_cache_bytes{group=\"\",resource=\"pods\"} %zu\n",
	         acct);
	cr_assert_not_null(strstr(out.data, want), "no %s in:\n%s", want, out.data);
	snprintf(want, sizeof(want),
	         "steadfast_cache_objects{group=\"batch\",resource=\"jobs\"} %d\n", N);
	cr_assert_not_null(strstr(out.data, want), "no %s in:\n%s", want, out.data);
	cr_assert_not_null(strstr(out.data, "# TYPE steadfast_cache_bytes gauge\n"));
	sf_buf_free(&out);
	sf_prom_free(p);

	/* emptied, the store gives the objects back and keeps its tables
	 * (three of 4,096 eight-byte slots, 110 KiB), and says so; the heap
	 * still counts as in use what the allocator keeps of the freed
	 * objects for reuse (its per-thread cache: a few tens of KiB) */
	cr_assert_eq(sf_store_replace(s, NULL, 0), N);
	size_t left = tl_heap_in_use() - m0;
	cr_assert_lt(left, heap / 5, "%zu of %zu bytes still in use after emptying", left, heap);
	cr_assert_leq(sf_store_bytes(s), left, "accounted %zu > %zu in use", sf_store_bytes(s),
	              left);
	cr_assert_geq(sf_store_bytes(s) + 64 * 1024, left, "accounted %zu, %zu in use",
	              sf_store_bytes(s), left);
	sf_store_free(s);
}
