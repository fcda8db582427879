/*
 * test_store.c - the object store: keys and resourceVersion order, upsert /
 * delete deltas, the built-in and custom indexes, re-list (replace) deltas,
 * reference ownership and memory accounting.
 *
 * Objects are built from small JSON documents; every handler call is
 * recorded (tl_deltas) as "TYPE key rv" lines so each test can assert the
 * exact sequence of deltas. The reflector's tests are in test_reflector.c,
 * the informer's in test_informer.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awapi.h"
#include "steadfast/cache.h"
#include "steadfast/json.h"
#include "tl_deltas.h"
#include "tl_heap.h"

/* ---- helpers ---- */

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

static sf_store *new_store(tl_deltas *r)
{
	sf_store *s = sf_store_new();
	cr_assert_not_null(s);
	if (r) {
		memset(r, 0, sizeof(*r));
		r->s = s;
		sf_store_set_handler(s, tl_deltas_record, r);
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
	tl_deltas r;
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
	tl_deltas_expect(&r, want, 4);
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
	tl_deltas r;
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
	tl_deltas_expect(&r, want, 4);
	sf_store_stats st;
	sf_store_stats_get(s, &st);
	cr_assert_eq(st.unchanged, 3);
	sf_store_free(s);
}

Test(store, new_uid_same_name_is_delete_then_add)
{
	tl_deltas r;
	sf_store *s = new_store(&r);
	cr_assert_eq(sf_store_add_controller_index(s), 0);
	put(s,
	    mk("ns", "a", "uid-1", "5", NULL, "[{\"uid\":\"owner-1\",\"controller\":true}]", ""));
	put(s,
	    mk("ns", "a", "uid-2", "9", NULL, "[{\"uid\":\"owner-2\",\"controller\":true}]", ""));
	const char *want[] = {"ADD ns/a 5", "DELETE ns/a 5", "ADD ns/a 9"};
	tl_deltas_expect(&r, want, 3);
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
	tl_deltas r;
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
	tl_deltas r;
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
	tl_deltas_expect(&r, want, 3);
	cr_assert_eq(sf_store_len(s), 3);
	cr_assert_null(sf_store_get(s, "ns/a"));
	char buf[256];
	cr_assert_str_eq(by_index(s, "app", "x", buf, sizeof(buf)), "b,d");
	cr_assert_str_eq(by_index(s, "app", "y", buf, sizeof(buf)), "c");
	sf_store_free(s);
}

Test(store, replace_with_empty_list_deletes_everything)
{
	tl_deltas r;
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
	tl_deltas r;
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
	tl_deltas_expect(&r, want, 1);
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
