/*
 * jdoc.h - a small mutable JSON tree, for the objects a controller writes.
 *
 * Cached objects stay immutable text (json.h). What the controller sends -
 * a component built from a template with labels, owner and pod-set info
 * injected, a status merge patch, an Event - is assembled here and written
 * out once. Members keep their insertion order; numbers keep the text they
 * were parsed from (no float round trip); strings are stored decoded, with
 * their length (they may contain NUL).
 *
 * Ownership: a node belongs to its parent once inserted; sf_jd_free frees a
 * node and everything under it (a node inside a tree is first removed from
 * its parent). Functions that insert take the value over even when they fail
 * (it is freed), so a call chain cannot leak. The exception is a value that
 * is not the caller's to give: one already inside a tree, or the container
 * itself or one of its ancestors (a cycle). That is refused with -EINVAL and
 * left alone.
 *
 * Parsed duplicate keys: the last value wins (as Go's encoding/json), kept
 * at the first key's position (as successive sf_jd_set calls would).
 */
#ifndef STEADFAST_JDOC_H
#define STEADFAST_JDOC_H

#include <stddef.h>
#include <stdint.h>

#include "steadfast/buf.h"
#include "steadfast/json.h"

typedef struct sf_jd sf_jd;

/* Parsing. Limits: nesting 127 levels (as sf_json_minify). */
sf_jd *sf_jd_parse(const char *json, size_t len, char *err, size_t errlen);
sf_jd *sf_jd_from_jv(sf_jv v); /* NULL if absent, malformed or -ENOMEM */
void sf_jd_free(sf_jd *n);     /* NULL is a no-op */
sf_jd *sf_jd_clone(const sf_jd *n);

/* Constructors (NULL on -ENOMEM). */
sf_jd *sf_jd_new_null(void);
sf_jd *sf_jd_new_bool(int b);
sf_jd *sf_jd_new_int(int64_t v);
sf_jd *sf_jd_new_str(const char *s);
sf_jd *sf_jd_new_strn(const char *s, size_t n);
sf_jd *sf_jd_new_obj(void);
sf_jd *sf_jd_new_arr(void);

sf_json_type sf_jd_type(const sf_jd *n); /* SF_JSON_NONE for NULL */

/* Scalars. */
const char *sf_jd_str(const sf_jd *n, size_t *len); /* NULL if not a string */
int sf_jd_int(const sf_jd *n, int64_t *out);        /* 0, -EINVAL, -ERANGE */
int sf_jd_bool(const sf_jd *n, int *out);           /* 0, -EINVAL */

/* Objects. get returns the member or NULL (also when n is not an object). */
sf_jd *sf_jd_get(const sf_jd *obj, const char *key);
/* Sets key to val (replacing in place if present, else appended); takes
 * val. 0, -EINVAL (obj not an object or val NULL), -ENOMEM. */
int sf_jd_set(sf_jd *obj, const char *key, sf_jd *val);
int sf_jd_set_str(sf_jd *obj, const char *key, const char *s);
int sf_jd_set_int(sf_jd *obj, const char *key, int64_t v);
int sf_jd_set_bool(sf_jd *obj, const char *key, int b);
int sf_jd_set_null(sf_jd *obj, const char *key);
/* Removes and frees a member: 0 or -ENOENT. */
int sf_jd_del(sf_jd *obj, const char *key);
/* The object (array) member key, created empty if absent; NULL if it exists
 * with another type, obj is not an object, or -ENOMEM. */
sf_jd *sf_jd_obj_member(sf_jd *obj, const char *key);
sf_jd *sf_jd_arr_member(sf_jd *obj, const char *key);

/* Objects and arrays: number of members / elements (0 for scalars), and
 * element i (for objects the i-th member's value, key in *key if given). */
size_t sf_jd_len(const sf_jd *n);
sf_jd *sf_jd_at(const sf_jd *n, size_t i, const char **key);

/* Arrays: append takes val (0, -EINVAL, -ENOMEM); remove frees element i
 * (0, -EINVAL not an array, -ENOENT out of range). */
int sf_jd_append(sf_jd *arr, sf_jd *val);
int sf_jd_remove(sf_jd *arr, size_t i);

/* Dotted path with [i] indexes, as sf_jv_path: "spec.template.spec",
 * "spec.replicatedJobs[0].template". NULL if any step is missing. */
sf_jd *sf_jd_path(const sf_jd *root, const char *path);

/* Deep equality: object members compared by key, order ignored; numbers
 * compared by their text, without normalising ("1.0" and "1" differ). Two
 * NULLs are equal. */
int sf_jd_equal(const sf_jd *a, const sf_jd *b);

/* Appends the minified JSON of n to out. 0, -EINVAL (n NULL), -E2BIG,
 * -ENOMEM; on failure out is left as it was. Strings are escaped as yajl_gen
 * does, so a parsed text (without duplicate keys) is written exactly as
 * sf_json_minify writes it. */
int sf_jd_write(const sf_jd *n, sf_buf *out);
/* Convenience: the minified JSON as a malloc'd string (NULL on -ENOMEM). */
char *sf_jd_dump(const sf_jd *n);

#endif
