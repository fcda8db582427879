/*
 * json.h - read-only JSON views and reference-counted API objects.
 *
 * Decoded Kubernetes objects are kept as their minified JSON text, not as a
 * tree: a cached object then costs about its JSON size. Fields are read with
 * sf_jv views that scan the text on demand. The text is produced by
 * sf_json_minify (or the stream decoders in watch.h), which validate with
 * yajl, so views only ever walk well-formed JSON; they still never read past
 * the view's bounds, whatever the bytes.
 *
 * sf_obj is immutable once built and shared by reference count: the cache
 * holds one reference, a reconcile takes its own while it uses the object.
 */
#ifndef STEADFAST_JSON_H
#define STEADFAST_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "steadfast/buf.h"

typedef enum {
	SF_JSON_NONE = 0, /* absent (missing member, index out of range) */
	SF_JSON_NULL,
	SF_JSON_FALSE,
	SF_JSON_TRUE,
	SF_JSON_NUMBER,
	SF_JSON_STRING,
	SF_JSON_ARRAY,
	SF_JSON_OBJECT,
} sf_json_type;

/* A view of one JSON value: p points at its first byte, n is its length.
 * p == NULL means absent. Views borrow the text they point into. */
typedef struct sf_jv {
	const char *p;
	size_t n;
} sf_jv;

#define SF_JV_NONE ((sf_jv){NULL, 0})

/* View of a whole text (leading/trailing whitespace ignored). */
sf_jv sf_jv_root(const char *json, size_t len);
sf_json_type sf_jv_type(sf_jv v);
static inline int sf_jv_ok(sf_jv v)
{
	return v.p != NULL;
}

/* Member of an object (SF_JV_NONE if v is not an object or has no key). */
sf_jv sf_jv_get(sf_jv obj, const char *key);
/* Element i of an array. */
sf_jv sf_jv_at(sf_jv arr, size_t i);
/* Follows a dotted path with optional [i] indexes: "spec.template.spec",
 * "spec.components[0].template", "items[3].metadata.name" (the grammar:
 * jpath.h). Keys that contain '.' or '[' (label keys) must be looked up
 * with sf_jv_get. */
sf_jv sf_jv_path(sf_jv v, const char *path);
/* Number of elements or members; 0 for scalars. */
size_t sf_jv_len(sf_jv v);

/* Iterates the members of an object or the elements of an array. */
typedef struct sf_jv_iter {
	const char *pos;
	const char *end;
	int object;
} sf_jv_iter;
sf_jv_iter sf_jv_iter_init(sf_jv container);
/* Returns 1 and the next element (key is the member's name as a string view,
 * SF_JV_NONE for arrays), or 0 at the end. */
int sf_jv_next(sf_jv_iter *it, sf_jv *key, sf_jv *val);

/* Strings. Escapes are decoded (including \uXXXX and surrogate pairs). */
char *sf_jv_strdup(sf_jv s); /* malloc'd, NULL if not a string */
/* Into buf (NUL-terminated): returns length, -EINVAL not a string,
 * -ERANGE buf too small. */
int sf_jv_str(sf_jv s, char *buf, size_t cap);
/* 1 if s is a string equal to lit, else 0. */
int sf_jv_streq(sf_jv s, const char *lit);
/* Integers (no fraction or exponent): 0, -EINVAL, -ERANGE. */
int sf_jv_int64(sf_jv v, int64_t *out);
/* Booleans: 0 and *out = 0/1, or -EINVAL. */
int sf_jv_bool(sf_jv v, int *out);

/* Validates in[0..len) with yajl and appends its minified form to out.
 * Returns 0, or -EBADMSG with a message (position and reason) in err
 * (-E2BIG/-ENOMEM if out cannot grow); on failure out is left as it was.
 * Numbers are copied as written; nesting is limited to 127 levels (yajl_gen). */
int sf_json_minify(const char *in, size_t len, sf_buf *out, char *err, size_t errlen);

/* ---- errors of the yajl-driven parsers ----
 * sf_json_minify and sf_jd_parse (jdoc.h) run yajl the same way and build
 * their messages with these, so both report the same text for the same
 * input. The setters write into the caller's err (at most errlen bytes,
 * always NUL-terminated, cut short if need be) and allocate nothing; with
 * err NULL or errlen 0 they do nothing. */

/* Nesting limit of both parsers (yajl_gen's: YAJL_MAX_DEPTH - 1). */
#define SF_JSON_MAX_DEPTH 127

struct yajl_handle_t; /* yajl_handle, from <yajl/yajl_parse.h> */

/* Feeds in[0..len) (in NULL reads as "", len ignored) to h, the caller's parser, and
 * completes the parse. Returns 0 if yajl accepted the text, -EBADMSG if
 * not (malformed, or a callback stopped it). *at is the byte offset to
 * report: len, or as far as yajl got when it stopped before the end. */
int sf_json_yajl_run(struct yajl_handle_t *h, const char *in, size_t len, size_t *at);
/* Writes "invalid JSON at byte AT: " and the printf-formatted reason into
 * err. */
void sf_json_set_invalid(char *err, size_t errlen, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Writes "invalid JSON at byte AT: " and yajl's reason for rejecting the
 * text (one line, without its final '.', "parse error" if yajl gives none)
 * into err. h, after sf_json_yajl_run failed, stays the caller's. */
void sf_json_set_yajl_err(char *err, size_t errlen, size_t at, struct yajl_handle_t *h);

/* ---- API objects ---- */

typedef struct sf_obj {
	unsigned refs;
	uint32_t len; /* of json */
	/* metadata, NUL-terminated, "" when absent. name, uid and rv point
	 * into this allocation, name at the end of the cache key
	 * (sf_obj_key); ns is the copy every object of the namespace shares
	 * (intern.h). */
	const char *ns;
	const char *name;
	const char *uid;
	const char *rv; /* resourceVersion */
	char json[];    /* minified, NUL-terminated; never written once made */
} sf_obj;

/* The object's cache key, "namespace/name" or "name" (as sf_cache_key
 * writes it), kept in the object: stores key their entries with it. */
static inline const char *sf_obj_key(const sf_obj *o)
{
	return o->ns[0] ? o->name - strlen(o->ns) - 1 : o->name;
}

/* Copies already minified JSON (from sf_json_minify or a stream decoder)
 * into a new object with refs = 1 (surrounding whitespace is dropped).
 * Returns NULL if the text is not a JSON object or on -ENOMEM. Reference
 * counts are atomic, so objects may be shared between threads. */
sf_obj *sf_obj_new(const char *minified, size_t len);
/* Validates, minifies and wraps arbitrary JSON text; NULL with err set. */
sf_obj *sf_obj_parse(const char *text, size_t len, char *err, size_t errlen);
sf_obj *sf_obj_ref(sf_obj *o);
void sf_obj_unref(sf_obj *o); /* NULL is a no-op; frees at zero */
static inline sf_jv sf_obj_root(const sf_obj *o)
{
	return (sf_jv){o->json, o->len};
}
/* Drops metadata.managedFields, which controllers never read and which
 * is often a fifth of an object. Takes over the caller's reference: returns
 * o itself when there is nothing to drop (or on -ENOMEM), else a new object
 * with o released. */
sf_obj *sf_obj_strip_managed_fields(sf_obj *o);
/* The same for the member at a dotted path of plain keys
 * ("status.images"): a cache transform for fields a controller never
 * reads. Nothing happens when the path is absent. */
sf_obj *sf_obj_strip_path(sf_obj *o, const char *path);
/* The opposite: keeps only the members that paths (NULL-terminated, at
 * most 32) name and drops the rest, so a cache holds what its controller
 * reads. A path is dotted plain keys; a segment ending in "[]" names an
 * array whose every element the rest of the path applies to
 * ("status.containerStatuses[].state"); a last segment in single quotes
 * is one key taken as written ("metadata.labels.'example.com/x'"); an
 * object on a path keeps only
 * what paths name below it, anything else on a path is kept whole. Takes
 * over the caller's reference, as above (o itself when nothing is
 * dropped). */
sf_obj *sf_obj_project(sf_obj *o, const char *const *paths);
/* Drops the members paths (NULL-terminated, at most 32, written as for
 * sf_obj_project) name and keeps everything else: a cache transform for
 * a kind whose controller reads nearly all of it. A path ending at a
 * member (with or without "[]") drops it whole; "a[].b" drops b of every
 * element of a. Takes over the caller's reference, as above (o itself
 * when nothing is dropped). */
sf_obj *sf_obj_omit(sf_obj *o, const char *const *paths);
/* Bytes this object occupies in memory (for cache accounting). */
size_t sf_obj_size(const sf_obj *o);

#endif
