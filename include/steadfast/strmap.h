/*
 * strmap.h - hash map from C strings to opaque pointers.
 *
 * The work queue de-duplicates keys with it and the object cache indexes
 * objects by "namespace/name" with it, so it is general: any byte string
 * without NUL is a key, values are void * (NULL is a valid value).
 * Open addressing with linear probing and tombstones; lookups, inserts and
 * removes are O(1) on average. By default the map copies each key; with
 * SF_STRMAP_BORROW_KEYS it stores the caller's pointer instead, and the
 * caller keeps that string alive and unchanged until the entry is removed or
 * replaced (useful when the value already holds its own key).
 *
 * Removing entries never moves others, so removing the entry just returned
 * by sf_strmap_next while iterating is safe; inserting during an iteration
 * may rehash and is not. Not thread-safe.
 */
#ifndef STEADFAST_STRMAP_H
#define STEADFAST_STRMAP_H

#include <stddef.h>

typedef struct sf_strmap sf_strmap;

enum {
	SF_STRMAP_BORROW_KEYS = 1, /* store the caller's key pointers, don't copy */
};

typedef void (*sf_strmap_free_fn)(void *val);

/* hint: expected number of entries (0 = small). 0 and *out, or -ENOMEM. */
int sf_strmap_new(unsigned flags, size_t hint, sf_strmap **out);

/* A keyed map: every value holds its own key and key_of returns it, so a
 * slot keeps only the value (8 bytes instead of 16). Values must not be
 * NULL, and put refuses (-EINVAL) a value whose key_of is not the key
 * given; the value keeps that key alive and unchanged while it is in the
 * map. A value may be replaced by another carrying an equal key. Keys are
 * borrowed (SF_STRMAP_BORROW_KEYS is implied); sf_strmap_next returns
 * key_of's pointer. 0 and *out, -EINVAL (key_of NULL), -ENOMEM. */
typedef const char *(*sf_strmap_key_fn)(const void *val);
int sf_strmap_new_keyed(sf_strmap_key_fn key_of, size_t hint, sf_strmap **out);
/* Frees the map and its own key copies; free_val (may be NULL) is called on
 * each value. NULL m is a no-op. */
void sf_strmap_free(sf_strmap *m, sf_strmap_free_fn free_val);
/* Removes every entry (free_val as above) and keeps the table memory. */
void sf_strmap_clear(sf_strmap *m, sf_strmap_free_fn free_val);
size_t sf_strmap_len(const sf_strmap *m);
/* Bytes of the map and its slot table (which never shrinks), not of the
 * key copies: for memory accounting. */
size_t sf_strmap_table_bytes(const sf_strmap *m);
/* Makes room for n entries in total without further rehashing.
 * 0 or -ENOMEM. */
int sf_strmap_reserve(sf_strmap *m, size_t n);

/* Inserts key -> val, or replaces the value of an existing key (old, if not
 * NULL, receives the previous value; with SF_STRMAP_BORROW_KEYS the stored
 * key pointer becomes key). Returns 1 if inserted, 0 if replaced, or
 * -ENOMEM (the map is unchanged). */
int sf_strmap_put(sf_strmap *m, const char *key, void *val, void **old);
/* The value for key, or NULL when absent (see sf_strmap_find when NULL
 * values are stored). */
void *sf_strmap_get(const sf_strmap *m, const char *key);
/* Same for a key given as len bytes (need not be NUL-terminated). */
void *sf_strmap_getn(const sf_strmap *m, const char *key, size_t len);
/* 1 and *val (if val not NULL) when key is present, else 0. */
int sf_strmap_find(const sf_strmap *m, const char *key, void **val);
/* Removes key; *val (if not NULL) receives its value. 0 or -ENOENT. */
int sf_strmap_remove(sf_strmap *m, const char *key, void **val);

/* Iteration in unspecified order:
 *   sf_strmap_iter it = SF_STRMAP_ITER_INIT;
 *   const char *k; void *v;
 *   while (sf_strmap_next(m, &it, &k, &v)) ...
 * key and val may be NULL. Returns 1 per entry, then 0. */
typedef struct sf_strmap_iter {
	size_t pos;
} sf_strmap_iter;
#define SF_STRMAP_ITER_INIT                                                                        \
	{                                                                                          \
		0                                                                                  \
	}
int sf_strmap_next(const sf_strmap *m, sf_strmap_iter *it, const char **key, void **val);

#endif
