/*
 * test_strmap.c - string hash map: basic operations, 100k keys, tombstone
 * churn and rehashing, iteration (with removal), borrowed keys, keyed maps
 * (values that hold their keys), what a table costs the heap.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/strmap.h"
#include "tl_heap.h"

#define MANY 100000

static void key_of(char *buf, size_t n, size_t i)
{
	snprintf(buf, n, "ns-%zu/object-%zu", i % 97, i);
}

static sf_strmap *new_map(unsigned flags, size_t hint)
{
	sf_strmap *m = NULL;
	cr_assert_eq(sf_strmap_new(flags, hint, &m), 0);
	cr_assert_not_null(m);
	return m;
}

Test(strmap, basic)
{
	sf_strmap *m = new_map(0, 0);
	int a = 1, b = 2;
	void *old = NULL;

	cr_assert_eq(sf_strmap_len(m), 0);
	cr_assert_null(sf_strmap_get(m, "x"));
	cr_assert_eq(sf_strmap_remove(m, "x", NULL), -ENOENT);

	cr_assert_eq(sf_strmap_put(m, "default/a", &a, NULL), 1);
	cr_assert_eq(sf_strmap_put(m, "default/b", &b, NULL), 1);
	cr_assert_eq(sf_strmap_len(m), 2);
	cr_assert_eq(sf_strmap_get(m, "default/a"), &a);
	cr_assert_eq(sf_strmap_get(m, "default/b"), &b);
	cr_assert_null(sf_strmap_get(m, "default/c"));

	cr_assert_eq(sf_strmap_put(m, "default/a", &b, &old), 0);
	cr_assert_eq(old, &a);
	cr_assert_eq(sf_strmap_get(m, "default/a"), &b);
	cr_assert_eq(sf_strmap_len(m), 2);

	void *v = NULL;
	cr_assert_eq(sf_strmap_remove(m, "default/a", &v), 0);
	cr_assert_eq(v, &b);
	cr_assert_null(sf_strmap_get(m, "default/a"));
	cr_assert_eq(sf_strmap_len(m), 1);
	cr_assert_eq(sf_strmap_remove(m, "default/a", NULL), -ENOENT);
	sf_strmap_free(m, NULL);
}

Test(strmap, empty_key_and_null_values)
{
	sf_strmap *m = new_map(0, 0);
	void *v = &v;
	cr_assert_eq(sf_strmap_find(m, "", &v), 0);
	cr_assert_eq(sf_strmap_put(m, "", NULL, NULL), 1);
	cr_assert_eq(sf_strmap_put(m, "k", NULL, NULL), 1);
	cr_assert_eq(sf_strmap_find(m, "", &v), 1);
	cr_assert_null(v);
	cr_assert_eq(sf_strmap_find(m, "k", NULL), 1);
	cr_assert_eq(sf_strmap_find(m, "kk", NULL), 0);
	cr_assert_null(sf_strmap_get(m, "k"));
	cr_assert_eq(sf_strmap_len(m), 2);
	sf_strmap_free(m, NULL);
}

Test(strmap, copies_keys)
{
	sf_strmap *m = new_map(0, 0);
	char key[16];
	strcpy(key, "ns/name");
	cr_assert_eq(sf_strmap_put(m, key, (void *)1, NULL), 1);
	strcpy(key, "ns/other");
	cr_assert_eq(sf_strmap_get(m, "ns/name"), (void *)1);
	cr_assert_null(sf_strmap_get(m, "ns/other"));
	sf_strmap_free(m, NULL);
}

Test(strmap, getn_unterminated)
{
	sf_strmap *m = new_map(0, 0);
	cr_assert_eq(sf_strmap_put(m, "kube-system/coredns", (void *)7, NULL), 1);
	const char buf[] = "kube-system/coredns-extra";
	cr_assert_eq(sf_strmap_getn(m, buf, 19), (void *)7);
	cr_assert_null(sf_strmap_getn(m, buf, 18));
	cr_assert_null(sf_strmap_getn(m, buf, sizeof(buf) - 1));
	sf_strmap_free(m, NULL);
}

Test(strmap, many_keys)
{
	sf_strmap *m = new_map(0, 0);
	char k[64];
	for (size_t i = 0; i < MANY; i++) {
		key_of(k, sizeof(k), i);
		cr_assert_eq(sf_strmap_put(m, k, (void *)(uintptr_t)(i + 1), NULL), 1);
	}
	cr_assert_eq(sf_strmap_len(m), MANY);
	for (size_t i = 0; i < MANY; i++) {
		key_of(k, sizeof(k), i);
		cr_assert_eq((uintptr_t)sf_strmap_get(m, k), i + 1, "key %s", k);
	}
	/* Remove the even ones; the odd ones must stay reachable past the
	 * tombstones. */
	for (size_t i = 0; i < MANY; i += 2) {
		key_of(k, sizeof(k), i);
		cr_assert_eq(sf_strmap_remove(m, k, NULL), 0);
	}
	cr_assert_eq(sf_strmap_len(m), MANY / 2);
	for (size_t i = 0; i < MANY; i++) {
		key_of(k, sizeof(k), i);
		void *v;
		int found = sf_strmap_find(m, k, &v);
		if (i % 2) {
			cr_assert_eq(found, 1, "key %s", k);
			cr_assert_eq((uintptr_t)v, i + 1);
		} else {
			cr_assert_eq(found, 0, "key %s", k);
		}
	}
	/* Put them back with new values; replacing the odd ones. */
	for (size_t i = 0; i < MANY; i++) {
		key_of(k, sizeof(k), i);
		cr_assert_eq(sf_strmap_put(m, k, (void *)(uintptr_t)(i + 2), NULL), i % 2 ? 0 : 1);
	}
	cr_assert_eq(sf_strmap_len(m), MANY);
	for (size_t i = 0; i < MANY; i++) {
		key_of(k, sizeof(k), i);
		cr_assert_eq((uintptr_t)sf_strmap_get(m, k), i + 2);
	}
	sf_strmap_free(m, NULL);
}

/* A sliding window of live keys: every insert lands in a table full of
 * tombstones, so this exercises tombstone reuse and same-size rehashes. */
Test(strmap, tombstone_churn)
{
	sf_strmap *m = new_map(0, 0);
	const size_t window = 50, total = 200000;
	char k[64];
	for (size_t i = 0; i < total; i++) {
		key_of(k, sizeof(k), i);
		cr_assert_eq(sf_strmap_put(m, k, (void *)(uintptr_t)i, NULL), 1);
		if (i >= window) {
			key_of(k, sizeof(k), i - window);
			void *v;
			cr_assert_eq(sf_strmap_remove(m, k, &v), 0);
			cr_assert_eq((uintptr_t)v, i - window);
		}
		cr_assert_eq(sf_strmap_len(m), i < window ? i + 1 : window);
	}
	for (size_t i = total - window; i < total; i++) {
		key_of(k, sizeof(k), i);
		cr_assert_eq((uintptr_t)sf_strmap_get(m, k), i);
	}
	key_of(k, sizeof(k), total - window - 1);
	cr_assert_null(sf_strmap_get(m, k));
	sf_strmap_free(m, NULL);
}

Test(strmap, reserve_and_clear)
{
	sf_strmap *m = new_map(0, 1000);
	char k[64];
	cr_assert_eq(sf_strmap_reserve(m, 5000), 0);
	for (size_t i = 0; i < 5000; i++) {
		key_of(k, sizeof(k), i);
		int *v = malloc(sizeof(*v));
		cr_assert_not_null(v);
		*v = (int)i;
		cr_assert_eq(sf_strmap_put(m, k, v, NULL), 1);
	}
	sf_strmap_clear(m, free);
	cr_assert_eq(sf_strmap_len(m), 0);
	key_of(k, sizeof(k), 10);
	cr_assert_null(sf_strmap_get(m, k));
	cr_assert_eq(sf_strmap_put(m, k, NULL, NULL), 1);
	cr_assert_eq(sf_strmap_len(m), 1);
	sf_strmap_free(m, NULL);
}

Test(strmap, iterate)
{
	sf_strmap *m = new_map(0, 0);
	const size_t n = 10000;
	char k[64];
	unsigned char *seen = calloc(n, 1);
	cr_assert_not_null(seen);

	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	cr_assert_eq(sf_strmap_next(m, &it, NULL, NULL), 0);

	for (size_t i = 0; i < n; i++) {
		key_of(k, sizeof(k), i);
		cr_assert_eq(sf_strmap_put(m, k, (void *)(uintptr_t)i, NULL), 1);
	}
	const char *key;
	void *v;
	size_t count = 0;
	it = (sf_strmap_iter)SF_STRMAP_ITER_INIT;
	while (sf_strmap_next(m, &it, &key, &v)) {
		size_t i = (uintptr_t)v;
		cr_assert_lt(i, n);
		cr_assert_eq(seen[i], 0, "entry %zu seen twice", i);
		seen[i] = 1;
		key_of(k, sizeof(k), i);
		cr_assert_str_eq(key, k);
		count++;
	}
	cr_assert_eq(count, n);
	free(seen);
	sf_strmap_free(m, NULL);
}

Test(strmap, remove_while_iterating)
{
	sf_strmap *m = new_map(0, 0);
	const size_t n = 20000;
	char k[64];
	for (size_t i = 0; i < n; i++) {
		key_of(k, sizeof(k), i);
		cr_assert_eq(sf_strmap_put(m, k, (void *)(uintptr_t)i, NULL), 1);
	}
	/* Remove every entry divisible by 3 as it is visited; every entry is
	 * still visited exactly once. */
	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	const char *key;
	void *v;
	size_t visited = 0, removed = 0;
	while (sf_strmap_next(m, &it, &key, &v)) {
		visited++;
		if ((uintptr_t)v % 3 == 0) {
			cr_assert_eq(sf_strmap_remove(m, key, NULL), 0);
			removed++;
		}
	}
	cr_assert_eq(visited, n);
	cr_assert_eq(sf_strmap_len(m), n - removed);
	for (size_t i = 0; i < n; i++) {
		key_of(k, sizeof(k), i);
		cr_assert_eq(sf_strmap_find(m, k, NULL), i % 3 != 0, "key %s", k);
	}
	sf_strmap_free(m, NULL);
}

typedef struct obj {
	char key[32];
	int n;
} obj;

Test(strmap, borrowed_keys)
{
	sf_strmap *m = new_map(SF_STRMAP_BORROW_KEYS, 0);
	obj *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	cr_assert(a && b);
	strcpy(a->key, "ns/x");
	strcpy(b->key, "ns/x");
	cr_assert_eq(sf_strmap_put(m, a->key, a, NULL), 1);
	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	const char *key;
	cr_assert_eq(sf_strmap_next(m, &it, &key, NULL), 1);
	cr_assert_eq(key, a->key, "the map must keep the caller's pointer");

	/* Replacing switches the stored key to the new object's copy, so the
	 * old object can be freed. */
	void *old;
	cr_assert_eq(sf_strmap_put(m, b->key, b, &old), 0);
	cr_assert_eq(old, a);
	free(a);
	it = (sf_strmap_iter)SF_STRMAP_ITER_INIT;
	cr_assert_eq(sf_strmap_next(m, &it, &key, NULL), 1);
	cr_assert_eq(key, b->key);
	cr_assert_eq(sf_strmap_get(m, "ns/x"), b);
	sf_strmap_free(m, free);
}

static int freed_count;

static void count_free(void *v)
{
	freed_count++;
	free(v);
}

Test(strmap, free_values)
{
	sf_strmap *m = new_map(0, 0);
	char k[64];
	freed_count = 0;
	for (size_t i = 0; i < 300; i++) {
		key_of(k, sizeof(k), i);
		cr_assert_eq(sf_strmap_put(m, k, malloc(8), NULL), 1);
	}
	sf_strmap_free(m, count_free);
	cr_assert_eq(freed_count, 300);
	sf_strmap_free(NULL, NULL);
}

/* The heap grew by at most per_key bytes a key since m0 for m's n keys,
 * and sf_strmap_table_bytes says what it grew by. */
static void table_costs(const sf_strmap *m, size_t m0, size_t n, size_t per_key)
{
	size_t heap = tl_heap_in_use() - m0;
	cr_assert_leq(heap, n * per_key, "%zu bytes for %zu keys (%.1f a key)", heap, n,
	              (double)heap / (double)n);
	size_t acct = sf_strmap_table_bytes(m);
	cr_assert_leq(acct, heap, "accounted %zu > the heap's growth %zu", acct, heap);
	cr_assert_geq(acct + 4096, heap, "accounted %zu, the heap grew by %zu", acct, heap);
}

/* A table's slots are paid about twice per entry (the load is 3/8 to 3/4),
 * for every cache and for each of the leader's per-AppWrapper maps: 4,000
 * borrowed keys (a table of 8,192 slots) cost the heap at most 36 bytes a
 * key (24-byte slots, the whole hash and the length in each, took 49), and
 * sf_strmap_table_bytes says what the heap pays. */
Test(strmap, a_slot_is_sixteen_bytes_and_a_tag)
{
	enum { N = 4000 };
	static char keys[N][32];
	for (size_t i = 0; i < N; i++)
		key_of(keys[i], sizeof(keys[i]), i);
	size_t m0 = tl_heap_in_use();
	sf_strmap *m = new_map(SF_STRMAP_BORROW_KEYS, 0);
	for (size_t i = 0; i < N; i++)
		cr_assert_eq(sf_strmap_put(m, keys[i], keys[i], NULL), 1);
	table_costs(m, m0, N, 36);
	for (size_t i = 0; i < N; i++)
		cr_assert_eq(sf_strmap_get(m, keys[i]), keys[i]);
	sf_strmap_free(m, NULL);
}

/* ---- keyed maps ---- */

typedef struct rec {
	int v;
	char key[32];
} rec;

static const char *rec_key(const void *r)
{
	return ((const rec *)r)->key;
}

static sf_strmap *new_keyed(size_t hint)
{
	sf_strmap *m = NULL;
	cr_assert_eq(sf_strmap_new_keyed(rec_key, hint, &m), 0);
	return m;
}

/* The churn of many_keys and tombstone_churn, with the keys only in the
 * values: every lookup, rehash and iteration must find its key there. */
Test(strmap, keyed_map_finds_keys_in_its_values)
{
	enum { N = 20000 };
	rec *r = calloc(N, sizeof(*r));
	cr_assert_not_null(r);
	sf_strmap *m = new_keyed(0);
	for (size_t i = 0; i < N; i++) {
		key_of(r[i].key, sizeof(r[i].key), i);
		r[i].v = (int)i;
		cr_assert_eq(sf_strmap_put(m, r[i].key, &r[i], NULL), 1);
	}
	for (size_t i = 0; i < N; i += 2)
		cr_assert_eq(sf_strmap_remove(m, r[i].key, NULL), 0);
	cr_assert_eq(sf_strmap_len(m), N / 2);
	char k[32];
	for (size_t i = 0; i < N; i++) {
		key_of(k, sizeof(k), i); /* a copy: found by content */
		rec *got = sf_strmap_get(m, k);
		if (i % 2)
			cr_assert_eq(got, &r[i], "key %s", k);
		else
			cr_assert_null(got, "key %s", k);
	}
	/* the even ones back, which reuses tombstones and rehashes */
	for (size_t i = 0; i < N; i += 2)
		cr_assert_eq(sf_strmap_put(m, r[i].key, &r[i], NULL), 1);
	size_t seen = 0;
	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	const char *key;
	void *v;
	while (sf_strmap_next(m, &it, &key, &v)) {
		cr_assert_eq(key, ((rec *)v)->key, "the value's own key is returned");
		seen++;
	}
	cr_assert_eq(seen, N);
	sf_strmap_free(m, NULL);
	free(r);
}

/* A value replaces another that carries an equal key (an object replaced
 * by its next version); a value whose key is not the one given, or no
 * value, is refused and the map is unchanged. */
Test(strmap, keyed_map_replaces_and_refuses)
{
	rec a = {1, "team/aw"}, b = {2, "team/aw"}, c = {3, "team/other"};
	sf_strmap *m = new_keyed(0);
	cr_assert_eq(sf_strmap_put(m, a.key, &a, NULL), 1);
	void *old = NULL;
	cr_assert_eq(sf_strmap_put(m, "team/aw", &b, &old), 0);
	cr_assert_eq(old, &a);
	cr_assert_eq(sf_strmap_get(m, "team/aw"), &b);
	cr_assert_eq(sf_strmap_put(m, "team/aw", &c, NULL), -EINVAL);
	cr_assert_eq(sf_strmap_put(m, "team/x", NULL, NULL), -EINVAL);
	cr_assert_eq(sf_strmap_len(m), 1);
	cr_assert_eq(sf_strmap_get(m, "team/aw"), &b);
	cr_assert_null(sf_strmap_get(m, "team/other"));
	cr_assert_eq(sf_strmap_new_keyed(NULL, 0, &m), -EINVAL);
	sf_strmap_free(m, NULL);
}

/* A keyed map's slot is one pointer and a tag: 4,000 keys (8,192 slots)
 * cost the heap at most 20 bytes a key, about half a plain map's. */
Test(strmap, a_keyed_slot_is_eight_bytes_and_a_tag)
{
	enum { N = 4000 };
	static rec r[N];
	for (size_t i = 0; i < N; i++)
		key_of(r[i].key, sizeof(r[i].key), i);
	size_t m0 = tl_heap_in_use();
	sf_strmap *m = new_keyed(0);
	for (size_t i = 0; i < N; i++)
		cr_assert_eq(sf_strmap_put(m, r[i].key, &r[i], NULL), 1);
	table_costs(m, m0, N, 20);
	sf_strmap_free(m, NULL);
}
