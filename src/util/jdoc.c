/*
 * jdoc.c - a small mutable JSON tree (see jdoc.h).
 *
 * The controller builds what it sends (components from templates, status
 * patches, Events) here rather than by splicing text, so that edits are
 * structural and the result is always well-formed JSON.
 *
 * Nodes: scalars carry their text in the same allocation (strings decoded,
 * numbers exactly as parsed); objects hold a member array in insertion
 * order, arrays an element array. Every node knows its parent, which lets
 * inserting refuse a node that already sits in a tree (or would make a
 * cycle) and lets sf_jd_free unlink a node from its parent first.
 *
 * Parsing is driven by yajl's callbacks with the same options as
 * sf_json_minify and reports errors with its helpers (sf_json_yajl_run,
 * sf_json_set_*, sf_errf), so the two accept the same texts and report the same
 * errors, and sf_jd_write escapes strings with sf_buf_put_json_str, byte
 * for byte as yajl_gen does: writing a parsed text gives sf_json_minify's
 * output. The one difference is
 * duplicate keys: the tree keeps one member per key, with the last value
 * (as Go's encoding/json, i.e. the API server) at the first key's position
 * (as successive sf_jd_set calls would). Duplicates are resolved when an
 * object closes, small objects by scanning and larger ones by sorting their
 * keys, so a hostile object of 100k members costs O(n log n), not O(n^2).
 * Lookups by key are linear: the objects a controller edits are small.
 *
 * Functions recurse over the tree. Parsed trees are at most 127 levels
 * deep; trees built through the API are as deep as their builder makes them.
 */
#include "steadfast/buf.h"
#include "steadfast/jdoc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "steadfast/jpath.h"

#define SMALL_OBJ 16 /* members up to which objects are scanned, not sorted */
#define NPOS ((size_t)-1)

struct member {
	char *key; /* NUL-terminated; NULL while a duplicate is being dropped */
	size_t klen;
	sf_jd *val; /* NULL only while parsing, between key and value */
};

struct sf_jd {
	sf_jd *parent; /* the container holding this node; NULL for a root */
	sf_json_type type;
	size_t len; /* members, elements, or bytes of text */
	size_t cap; /* allocated members or elements */
	union {
		struct member *m; /* SF_JSON_OBJECT */
		sf_jd **v;        /* SF_JSON_ARRAY */
	} u;
	char text[]; /* SF_JSON_STRING, SF_JSON_NUMBER: len bytes and a NUL */
};

/* ---- nodes ---- */

static sf_jd *node_new(sf_json_type t, const char *text, size_t n)
{
	size_t extra = 0;
	if (t == SF_JSON_STRING || t == SF_JSON_NUMBER) {
		if (n > SIZE_MAX - sizeof(sf_jd) - 1)
			return NULL;
		extra = n + 1;
	}
	sf_jd *d = malloc(sizeof(*d) + extra);
	if (!d)
		return NULL;
	d->parent = NULL;
	d->type = t;
	d->len = 0;
	d->cap = 0;
	d->u.m = NULL;
	if (extra) {
		if (n)
			memcpy(d->text, text, n);
		d->text[n] = '\0';
		d->len = n;
	}
	return d;
}

/* Frees n and everything under it, without looking at its parent. */
static void free_tree(sf_jd *n)
{
	if (!n)
		return;
	if (n->type == SF_JSON_OBJECT) {
		for (size_t i = 0; i < n->len; i++) {
			free(n->u.m[i].key);
			free_tree(n->u.m[i].val);
		}
		free(n->u.m);
	} else if (n->type == SF_JSON_ARRAY) {
		for (size_t i = 0; i < n->len; i++)
			free_tree(n->u.v[i]);
		free(n->u.v);
	}
	free(n);
}

/* Makes room for one more of len items of size bytes in p (capacity *cap).
 * Returns the (possibly moved) array, or NULL on -ENOMEM with p untouched. */
static void *grow(void *p, size_t *cap, size_t len, size_t size)
{
	if (len < *cap)
		return p;
	size_t nc = *cap ? *cap * 2 : 4;
	if (nc < *cap || nc > SIZE_MAX / size)
		return NULL;
	void *q = realloc(p, nc * size);
	if (q)
		*cap = nc;
	return q;
}

static int arr_push(sf_jd *a, sf_jd *val)
{
	sf_jd **v = grow(a->u.v, &a->cap, a->len, sizeof(*v));
	if (!v)
		return -ENOMEM;
	a->u.v = v;
	v[a->len++] = val;
	val->parent = a;
	return 0;
}

/* Appends a member without looking for key; val may be NULL (parsing). */
static int obj_push(sf_jd *o, const char *key, size_t klen, sf_jd *val)
{
	if (klen == SIZE_MAX)
		return -ENOMEM;
	char *k = malloc(klen + 1);
	if (!k)
		return -ENOMEM;
	struct member *m = grow(o->u.m, &o->cap, o->len, sizeof(*m));
	if (!m) {
		free(k);
		return -ENOMEM;
	}
	if (klen)
		memcpy(k, key, klen);
	k[klen] = '\0';
	o->u.m = m;
	m[o->len++] = (struct member){k, klen, val};
	if (val)
		val->parent = o;
	/* k now belongs to the member array */
	// cppcheck-suppress memleak
	return 0;
}

static size_t obj_find(const sf_jd *o, const char *key, size_t klen)
{
	for (size_t i = 0; i < o->len; i++) {
		const struct member *m = &o->u.m[i];
		if (m->klen == klen && memcmp(m->key, key, klen) == 0)
			return i;
	}
	return NPOS;
}

static sf_jd *get_n(const sf_jd *o, const char *key, size_t klen)
{
	if (!o || o->type != SF_JSON_OBJECT)
		return NULL;
	size_t i = obj_find(o, key, klen);
	return i == NPOS ? NULL : o->u.m[i].val;
}

static void obj_remove(sf_jd *o, size_t i)
{
	free(o->u.m[i].key);
	free_tree(o->u.m[i].val);
	memmove(&o->u.m[i], &o->u.m[i + 1], (o->len - i - 1) * sizeof(o->u.m[0]));
	o->len--;
}

static void arr_remove(sf_jd *a, size_t i)
{
	free_tree(a->u.v[i]);
	memmove(&a->u.v[i], &a->u.v[i + 1], (a->len - i - 1) * sizeof(a->u.v[0]));
	a->len--;
}

/* 0 if val may be inserted into container c. -EINVAL if val is NULL, already
 * belongs to a tree, or is c or one of its ancestors (a cycle): such a val is
 * not the caller's to hand over, so it is left alone. */
static int check_orphan(const sf_jd *c, const sf_jd *val)
{
	if (!val || val->parent)
		return -EINVAL;
	for (const sf_jd *a = c; a; a = a->parent) {
		if (a == val)
			return -EINVAL;
	}
	return 0;
}

/* ---- keys in sorted order (duplicates while parsing, equality) ---- */

struct kent {
	const char *key;
	size_t klen;
	size_t pos;
};

static int key_cmp(const struct kent *a, const struct kent *b)
{
	size_t n = a->klen < b->klen ? a->klen : b->klen;
	int c = n ? memcmp(a->key, b->key, n) : 0;
	if (c)
		return c;
	return (a->klen > b->klen) - (a->klen < b->klen);
}

static int kent_cmp(const void *x, const void *y)
{
	const struct kent *a = x, *b = y;
	int c = key_cmp(a, b);
	if (c)
		return c;
	return (a->pos > b->pos) - (a->pos < b->pos);
}

/* The members of o sorted by key, then position; NULL on -ENOMEM. */
static struct kent *sorted_keys(const sf_jd *o)
{
	if (o->len > SIZE_MAX / sizeof(struct kent))
		return NULL;
	struct kent *e = malloc(o->len * sizeof(*e));
	if (!e)
		return NULL;
	for (size_t i = 0; i < o->len; i++)
		e[i] = (struct kent){o->u.m[i].key, o->u.m[i].klen, i};
	qsort(e, o->len, sizeof(*e), kent_cmp);
	return e;
}

/* Member dup repeats the key of member first: first takes dup's value and
 * dup is marked for dropping. */
static void take_dup(sf_jd *o, size_t first, size_t dup)
{
	struct member *m = o->u.m;
	free_tree(m[first].val);
	m[first].val = m[dup].val;
	m[dup].val = NULL;
	free(m[dup].key);
	m[dup].key = NULL;
}

/* Leaves one member per key: the last value at the first position. */
static int obj_dedupe(sf_jd *o)
{
	struct member *m = o->u.m;
	size_t n = o->len, dropped = 0;
	if (n < 2)
		return 0;
	if (n <= SMALL_OBJ) {
		for (size_t i = 1; i < n; i++) {
			for (size_t j = 0; j < i; j++) {
				if (m[j].key && m[j].klen == m[i].klen &&
				    memcmp(m[j].key, m[i].key, m[i].klen) == 0) {
					take_dup(o, j, i);
					dropped++;
					break;
				}
			}
		}
	} else {
		struct kent *e = sorted_keys(o);
		if (!e)
			return -ENOMEM;
		for (size_t g = 0; g < n;) {
			size_t h = g + 1;
			while (h < n && key_cmp(&e[g], &e[h]) == 0)
				h++;
			for (size_t k = g + 1; k < h; k++) {
				take_dup(o, e[g].pos, e[k].pos);
				dropped++;
			}
			g = h;
		}
		free(e);
	}
	if (dropped) {
		size_t w = 0;
		for (size_t i = 0; i < n; i++) {
			if (m[i].key)
				m[w++] = m[i];
		}
		o->len = w;
	}
	return 0;
}

/* ---- parsing ---- */

struct parse {
	sf_jd *root;
	sf_jd *cur; /* innermost open container, NULL at the top level */
	int depth;
	int nomem; /* out of memory in a callback */
	int deep;  /* nesting limit hit */
	int bad;   /* callbacks out of order (yajl should never do this) */
};

/* Attaches a new value where the parse is. 1 to go on, 0 to stop. */
static int add(struct parse *p, sf_jd *n)
{
	if (!n) {
		p->nomem = 1;
		return 0;
	}
	sf_jd *c = p->cur;
	if (!c) {
		if (p->root) {
			free_tree(n);
			p->bad = 1;
			return 0;
		}
		p->root = n;
		return 1;
	}
	if (c->type == SF_JSON_ARRAY) {
		if (arr_push(c, n)) {
			free_tree(n);
			p->nomem = 1;
			return 0;
		}
		return 1;
	}
	if (!c->len || c->u.m[c->len - 1].val) {
		free_tree(n);
		p->bad = 1;
		return 0;
	}
	c->u.m[c->len - 1].val = n;
	n->parent = c;
	return 1;
}

static int pc_null(void *ctx)
{
	return add(ctx, node_new(SF_JSON_NULL, NULL, 0));
}

static int pc_bool(void *ctx, int b)
{
	return add(ctx, node_new(b ? SF_JSON_TRUE : SF_JSON_FALSE, NULL, 0));
}

static int pc_number(void *ctx, const char *s, size_t n)
{
	return add(ctx, node_new(SF_JSON_NUMBER, s, n));
}

static int pc_string(void *ctx, const unsigned char *s, size_t n)
{
	return add(ctx, node_new(SF_JSON_STRING, (const char *)s, n));
}

static int pc_key(void *ctx, const unsigned char *s, size_t n)
{
	struct parse *p = ctx;
	if (!p->cur || p->cur->type != SF_JSON_OBJECT) {
		p->bad = 1;
		return 0;
	}
	if (obj_push(p->cur, (const char *)s, n, NULL)) {
		p->nomem = 1;
		return 0;
	}
	return 1;
}

static int pc_open(struct parse *p, sf_json_type t)
{
	if (p->depth >= SF_JSON_MAX_DEPTH) {
		p->deep = 1;
		return 0;
	}
	sf_jd *n = node_new(t, NULL, 0);
	if (!add(p, n))
		return 0;
	p->cur = n;
	p->depth++;
	return 1;
}

static int pc_close(struct parse *p, sf_json_type t)
{
	sf_jd *c = p->cur;
	if (!c || c->type != t) {
		p->bad = 1;
		return 0;
	}
	if (t == SF_JSON_OBJECT && obj_dedupe(c)) {
		p->nomem = 1;
		return 0;
	}
	p->cur = c->parent;
	p->depth--;
	return 1;
}

static int pc_start_map(void *ctx)
{
	return pc_open(ctx, SF_JSON_OBJECT);
}

static int pc_end_map(void *ctx)
{
	return pc_close(ctx, SF_JSON_OBJECT);
}

static int pc_start_array(void *ctx)
{
	return pc_open(ctx, SF_JSON_ARRAY);
}

static int pc_end_array(void *ctx)
{
	return pc_close(ctx, SF_JSON_ARRAY);
}

static const yajl_callbacks parse_callbacks = {
    .yajl_null = pc_null,
    .yajl_boolean = pc_bool,
    .yajl_number = pc_number,
    .yajl_string = pc_string,
    .yajl_start_map = pc_start_map,
    .yajl_map_key = pc_key,
    .yajl_end_map = pc_end_map,
    .yajl_start_array = pc_start_array,
    .yajl_end_array = pc_end_array,
};

sf_jd *sf_jd_parse(const char *json, size_t len, char *err, size_t errlen)
{
	struct parse p = {NULL, NULL, 0, 0, 0, 0};
	int ok = 0;
	if (err && errlen)
		err[0] = '\0';
	if (!json)
		len = 0;
	yajl_handle h = yajl_alloc(&parse_callbacks, NULL, &p);
	if (!h) {
		sf_errf(err, errlen, "out of memory");
		goto out;
	}
	size_t at;
	int st = sf_json_yajl_run(h, json, len, &at);
	if (p.nomem) {
		sf_errf(err, errlen, "out of memory");
	} else if (p.deep) {
		sf_json_set_invalid(err, errlen, at, "nested deeper than %d levels",
		                    SF_JSON_MAX_DEPTH);
	} else if (p.bad || (!st && (!p.root || p.cur))) {
		sf_json_set_invalid(err, errlen, at, "unexpected parser event");
	} else if (st) {
		sf_json_set_yajl_err(err, errlen, at, h);
	} else {
		ok = 1;
	}
out:
	if (h)
		yajl_free(h);
	if (!ok) {
		free_tree(p.root);
		return NULL;
	}
	return p.root;
}

sf_jd *sf_jd_from_jv(sf_jv v)
{
	if (!v.p)
		return NULL;
	return sf_jd_parse(v.p, v.n, NULL, 0);
}

void sf_jd_free(sf_jd *n)
{
	if (!n)
		return;
	sf_jd *c = n->parent;
	if (c && c->type == SF_JSON_OBJECT) {
		for (size_t i = 0; i < c->len; i++) {
			if (c->u.m[i].val == n) {
				obj_remove(c, i);
				return;
			}
		}
	} else if (c && c->type == SF_JSON_ARRAY) {
		for (size_t i = 0; i < c->len; i++) {
			if (c->u.v[i] == n) {
				arr_remove(c, i);
				return;
			}
		}
	}
	free_tree(n);
}

static sf_jd *clone_node(const sf_jd *n)
{
	sf_jd *c = node_new(n->type, n->text, n->len);
	if (!c || !n->len)
		return c;
	if (n->type == SF_JSON_ARRAY) {
		c->u.v = malloc(n->len * sizeof(c->u.v[0]));
		if (!c->u.v)
			goto fail;
		c->cap = n->len;
		for (size_t i = 0; i < n->len; i++) {
			sf_jd *e = clone_node(n->u.v[i]);
			if (!e)
				goto fail;
			e->parent = c;
			c->u.v[c->len++] = e;
		}
	} else if (n->type == SF_JSON_OBJECT) {
		c->u.m = malloc(n->len * sizeof(c->u.m[0]));
		if (!c->u.m)
			goto fail;
		c->cap = n->len;
		for (size_t i = 0; i < n->len; i++) {
			const struct member *m = &n->u.m[i];
			char *k = malloc(m->klen + 1);
			sf_jd *e = k ? clone_node(m->val) : NULL;
			if (!e) {
				free(k);
				goto fail;
			}
			memcpy(k, m->key, m->klen + 1);
			e->parent = c;
			c->u.m[c->len++] = (struct member){k, m->klen, e};
		}
	}
	return c;
fail:
	free_tree(c);
	return NULL;
}

sf_jd *sf_jd_clone(const sf_jd *n)
{
	return n ? clone_node(n) : NULL;
}

/* ---- constructors and scalars ---- */

sf_jd *sf_jd_new_null(void)
{
	return node_new(SF_JSON_NULL, NULL, 0);
}

sf_jd *sf_jd_new_bool(int b)
{
	return node_new(b ? SF_JSON_TRUE : SF_JSON_FALSE, NULL, 0);
}

sf_jd *sf_jd_new_int(int64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%" PRId64, v);
	return node_new(SF_JSON_NUMBER, buf, (size_t)n);
}

sf_jd *sf_jd_new_str(const char *s)
{
	return s ? node_new(SF_JSON_STRING, s, strlen(s)) : NULL;
}

sf_jd *sf_jd_new_strn(const char *s, size_t n)
{
	return s || !n ? node_new(SF_JSON_STRING, s, n) : NULL;
}

sf_jd *sf_jd_new_obj(void)
{
	return node_new(SF_JSON_OBJECT, NULL, 0);
}

sf_jd *sf_jd_new_arr(void)
{
	return node_new(SF_JSON_ARRAY, NULL, 0);
}

sf_json_type sf_jd_type(const sf_jd *n)
{
	return n ? n->type : SF_JSON_NONE;
}

const char *sf_jd_str(const sf_jd *n, size_t *len)
{
	if (!n || n->type != SF_JSON_STRING) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = n->len;
	return n->text;
}

int sf_jd_int(const sf_jd *n, int64_t *out)
{
	if (!n || n->type != SF_JSON_NUMBER)
		return -EINVAL;
	return sf_jv_int64((sf_jv){n->text, n->len}, out);
}

int sf_jd_bool(const sf_jd *n, int *out)
{
	if (!n || (n->type != SF_JSON_TRUE && n->type != SF_JSON_FALSE))
		return -EINVAL;
	*out = n->type == SF_JSON_TRUE;
	return 0;
}

/* ---- objects ---- */

sf_jd *sf_jd_get(const sf_jd *obj, const char *key)
{
	return key ? get_n(obj, key, strlen(key)) : NULL;
}

int sf_jd_set(sf_jd *obj, const char *key, sf_jd *val)
{
	int rc = check_orphan(obj, val);
	if (rc)
		return rc;
	if (!obj || obj->type != SF_JSON_OBJECT || !key) {
		free_tree(val);
		return -EINVAL;
	}
	size_t klen = strlen(key);
	size_t i = obj_find(obj, key, klen);
	if (i != NPOS) {
		sf_jd *old = obj->u.m[i].val;
		obj->u.m[i].val = val;
		val->parent = obj;
		free_tree(old);
		return 0;
	}
	rc = obj_push(obj, key, klen, val);
	if (rc)
		free_tree(val);
	return rc;
}

int sf_jd_set_str(sf_jd *obj, const char *key, const char *s)
{
	if (!s)
		return -EINVAL;
	sf_jd *v = sf_jd_new_str(s);
	return v ? sf_jd_set(obj, key, v) : -ENOMEM;
}

int sf_jd_set_int(sf_jd *obj, const char *key, int64_t v)
{
	sf_jd *n = sf_jd_new_int(v);
	return n ? sf_jd_set(obj, key, n) : -ENOMEM;
}

int sf_jd_set_bool(sf_jd *obj, const char *key, int b)
{
	sf_jd *n = sf_jd_new_bool(b);
	return n ? sf_jd_set(obj, key, n) : -ENOMEM;
}

int sf_jd_set_null(sf_jd *obj, const char *key)
{
	sf_jd *n = sf_jd_new_null();
	return n ? sf_jd_set(obj, key, n) : -ENOMEM;
}

int sf_jd_del(sf_jd *obj, const char *key)
{
	if (!obj || obj->type != SF_JSON_OBJECT || !key)
		return -ENOENT;
	size_t i = obj_find(obj, key, strlen(key));
	if (i == NPOS)
		return -ENOENT;
	obj_remove(obj, i);
	return 0;
}

static sf_jd *member_of_type(sf_jd *obj, const char *key, sf_json_type t)
{
	if (!obj || obj->type != SF_JSON_OBJECT || !key)
		return NULL;
	sf_jd *m = sf_jd_get(obj, key);
	if (m)
		return m->type == t ? m : NULL;
	m = node_new(t, NULL, 0);
	if (!m || sf_jd_set(obj, key, m))
		return NULL;
	return m;
}

sf_jd *sf_jd_obj_member(sf_jd *obj, const char *key)
{
	return member_of_type(obj, key, SF_JSON_OBJECT);
}

sf_jd *sf_jd_arr_member(sf_jd *obj, const char *key)
{
	return member_of_type(obj, key, SF_JSON_ARRAY);
}

/* ---- containers ---- */

size_t sf_jd_len(const sf_jd *n)
{
	if (!n || (n->type != SF_JSON_OBJECT && n->type != SF_JSON_ARRAY))
		return 0;
	return n->len;
}

sf_jd *sf_jd_at(const sf_jd *n, size_t i, const char **key)
{
	if (key)
		*key = NULL;
	if (!n || i >= sf_jd_len(n))
		return NULL;
	if (n->type == SF_JSON_ARRAY)
		return n->u.v[i];
	if (key)
		*key = n->u.m[i].key;
	return n->u.m[i].val;
}

int sf_jd_append(sf_jd *arr, sf_jd *val)
{
	int rc = check_orphan(arr, val);
	if (rc)
		return rc;
	if (!arr || arr->type != SF_JSON_ARRAY) {
		free_tree(val);
		return -EINVAL;
	}
	rc = arr_push(arr, val);
	if (rc)
		free_tree(val);
	return rc;
}

int sf_jd_remove(sf_jd *arr, size_t i)
{
	if (!arr || arr->type != SF_JSON_ARRAY)
		return -EINVAL;
	if (i >= arr->len)
		return -ENOENT;
	arr_remove(arr, i);
	return 0;
}

sf_jd *sf_jd_path(const sf_jd *root, const char *path)
{
	if (!path)
		return NULL;
	sf_jpath p = sf_jpath_init(path);
	sf_jpath_step st;
	const sf_jd *n = root;
	int rc = 0;
	while (n && (rc = sf_jpath_next(&p, &st)) > 0) {
		if (st.key)
			n = get_n(n, st.key, st.len);
		else
			n = n->type == SF_JSON_ARRAY ? sf_jd_at(n, st.index, NULL) : NULL;
	}
	return rc < 0 ? NULL : (sf_jd *)n;
}

/* ---- equality ---- */

static int obj_equal(const sf_jd *a, const sf_jd *b)
{
	/* Keys are unique within an object, so same size and every member of
	 * a matched in b means the same members. */
	if (a->len != b->len)
		return 0;
	struct kent *ka = NULL, *kb = NULL;
	if (a->len > SMALL_OBJ) {
		ka = sorted_keys(a);
		kb = ka ? sorted_keys(b) : NULL;
	}
	int eq = 1;
	if (kb) {
		for (size_t i = 0; i < a->len && eq; i++) {
			eq = key_cmp(&ka[i], &kb[i]) == 0 &&
			     sf_jd_equal(a->u.m[ka[i].pos].val, b->u.m[kb[i].pos].val);
		}
	} else {
		/* small, or no memory to sort: scan */
		for (size_t i = 0; i < a->len && eq; i++) {
			const struct member *m = &a->u.m[i];
			size_t j = obj_find(b, m->key, m->klen);
			eq = j != NPOS && sf_jd_equal(m->val, b->u.m[j].val);
		}
	}
	free(ka);
	free(kb);
	return eq;
}

int sf_jd_equal(const sf_jd *a, const sf_jd *b)
{
	if (a == b)
		return 1;
	if (!a || !b || a->type != b->type)
		return 0;
	switch (a->type) {
	case SF_JSON_STRING:
	case SF_JSON_NUMBER: return a->len == b->len && memcmp(a->text, b->text, a->len) == 0;
	case SF_JSON_ARRAY:
		if (a->len != b->len)
			return 0;
		for (size_t i = 0; i < a->len; i++) {
			if (!sf_jd_equal(a->u.v[i], b->u.v[i]))
				return 0;
		}
		return 1;
	case SF_JSON_OBJECT: return obj_equal(a, b);
	default: return 1;
	}
}

/* ---- output ---- */

static int write_node(const sf_jd *n, sf_buf *b)
{
	int rc = 0;
	switch (n->type) {
	case SF_JSON_NULL: return sf_buf_append(b, "null", 4);
	case SF_JSON_TRUE: return sf_buf_append(b, "true", 4);
	case SF_JSON_FALSE: return sf_buf_append(b, "false", 5);
	case SF_JSON_NUMBER: return sf_buf_append(b, n->text, n->len);
	case SF_JSON_STRING: return sf_buf_put_json_str(b, n->text, n->len);
	case SF_JSON_ARRAY:
		rc = sf_buf_putc(b, '[');
		for (size_t i = 0; i < n->len && !rc; i++) {
			if (i)
				rc = sf_buf_putc(b, ',');
			if (!rc)
				rc = write_node(n->u.v[i], b);
		}
		return rc ? rc : sf_buf_putc(b, ']');
	case SF_JSON_OBJECT:
		rc = sf_buf_putc(b, '{');
		for (size_t i = 0; i < n->len && !rc; i++) {
			if (i)
				rc = sf_buf_putc(b, ',');
			if (!rc)
				rc = sf_buf_put_json_str(b, n->u.m[i].key, n->u.m[i].klen);
			if (!rc)
				rc = sf_buf_putc(b, ':');
			if (!rc)
				rc = write_node(n->u.m[i].val, b);
		}
		return rc ? rc : sf_buf_putc(b, '}');
	default: return -EINVAL;
	}
}

int sf_jd_write(const sf_jd *n, sf_buf *out)
{
	if (!n || !out)
		return -EINVAL;
	size_t base = out->len;
	int rc = write_node(n, out);
	if (rc) {
		out->len = base;
		if (out->data)
			out->data[base] = '\0';
	}
	return rc;
}

char *sf_jd_dump(const sf_jd *n)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	char *s = NULL;
	if (sf_jd_write(n, &b) == 0)
		s = sf_buf_detach(&b, NULL);
	sf_buf_free(&b);
	return s;
}
