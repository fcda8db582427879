/*
 * store.c - keyed object store with secondary indexes (see cache.h).
 *
 * Layout. The store maps "namespace/name" to an entry; an entry holds the
 * object reference (the map reads the key from the object, sf_obj_key)
 * and one array of index nodes, one node per (index, value) the object
 * falls under. Each index maps a value to a bucket, and a bucket is an
 * intrusive doubly linked list of those nodes, so adding an object to, or
 * removing it from, any index is O(1) whatever the bucket's size (a
 * namespace index can hold thousands of objects under one value). Objects
 * stay minified JSON (sf_obj); nothing here builds a tree, so the store
 * costs the JSON plus a few dozen bytes per object and 32 bytes per index
 * membership.
 *
 * Updates attach the new index nodes before detaching the old ones: only
 * attaching allocates, and if it fails the object is still fully indexed
 * under its old values and the store is unchanged.
 *
 * Re-list. A replace pass bumps a generation counter; every upsert stamps
 * the entry with the current generation, and the end of the pass deletes
 * the entries still carrying an older one. The handler therefore sees the
 * same deltas DeltaFIFO.Replace produces (updates for objects that
 * changed, deletes for objects that vanished), but the new list is never
 * held next to the old one.
 */
#include "steadfast/cache.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/strmap.h"

#define KEY_MAX 512 /* namespace (63) + '/' + name (253), with room to spare */

typedef struct bucket bucket;
typedef struct entry entry;
typedef struct store_index store_index;

typedef struct idx_node {
	struct idx_node *prev, *next;
	entry *e;
	bucket *b;
} idx_node;

struct bucket {
	idx_node *head;
	size_t count;
	store_index *idx;
	char value[]; /* the index map borrows it as key */
};

struct store_index {
	char *name;
	sf_index_fn fn;
	void *ud;
	char *owned_ud;    /* label key for label indexes */
	sf_strmap *values; /* value -> bucket */
};

struct entry {
	sf_obj *obj; /* holds the entry's key (sf_obj_key), never NULL in the map */
	uint32_t gen;
	uint32_t nnodes;
	idx_node *nodes;
};

struct sf_index_values {
	sf_buf buf; /* values, each NUL-terminated, back to back */
	size_t n;
};

/* One pending (index, value) pair while an entry is (re)indexed. */
typedef struct pending {
	size_t index;
	size_t off; /* into scratch.buf */
} pending;

struct sf_store {
	sf_strmap *map; /* key -> entry (borrowed keys) */
	store_index *indexes;
	size_t nindexes;
	sf_store_event_fn fn;
	void *ud;
	uint32_t gen;
	int replacing;
	sf_index_values iv; /* values emitted by one index function */
	sf_buf scratch;     /* all values of the object being indexed */
	pending *pend;
	size_t pend_cap;
	size_t object_bytes;
	size_t own_bytes; /* entries, keys, nodes, buckets, index names */
	size_t index_entries;
	size_t index_values;
	sf_store_stats counters;
};

/* ---- keys and resourceVersions ---- */

int sf_cache_key(const char *ns, const char *name, char *buf, size_t cap)
{
	size_t nl = ns ? strlen(ns) : 0;
	size_t ml = name ? strlen(name) : 0;
	size_t need = nl ? nl + 1 + ml : ml;
	if (need + 1 > cap || need > INT32_MAX)
		return -ERANGE;
	if (nl) {
		memcpy(buf, ns, nl);
		buf[nl] = '/';
		memcpy(buf + nl + 1, name, ml);
	} else {
		memcpy(buf, name, ml);
	}
	buf[need] = '\0';
	return (int)need;
}

const char *sf_delta_type_name(sf_delta_type t)
{
	switch (t) {
	case SF_DELTA_ADD: return "ADD";
	case SF_DELTA_UPDATE: return "UPDATE";
	case SF_DELTA_DELETE: return "DELETE";
	}
	return "UNKNOWN";
}

/* ---- index values ---- */

int sf_index_values_add(sf_index_values *v, const char *s, size_t n)
{
	if (memchr(s, '\0', n))
		return -EINVAL;
	const char *p = v->buf.data;
	for (size_t i = 0; i < v->n; i++) {
		size_t l = strlen(p);
		if (l == n && memcmp(p, s, n) == 0)
			return 0;
		p += l + 1;
	}
	int rc = sf_buf_append(&v->buf, s, n);
	if (!rc)
		rc = sf_buf_putc(&v->buf, '\0');
	if (rc)
		return rc;
	v->n++;
	return 0;
}

static void values_reset(sf_index_values *v)
{
	sf_buf_reset(&v->buf);
	v->n = 0;
}

/* ---- built-in index functions ---- */

static int index_label(void *ud, const sf_obj *obj, sf_index_values *out)
{
	const char *label = ud;
	sf_jv v = sf_jv_get(sf_jv_path(sf_obj_root(obj), "metadata.labels"), label);
	if (sf_jv_type(v) != SF_JSON_STRING)
		return 0;
	char buf[256];
	int n = sf_jv_str(v, buf, sizeof(buf));
	if (n >= 0)
		return sf_index_values_add(out, buf, (size_t)n);
	char *big = sf_jv_strdup(v);
	if (!big)
		return -ENOMEM;
	int rc = sf_index_values_add(out, big, strlen(big));
	free(big);
	return rc;
}

static int index_controller(void *ud, const sf_obj *obj, sf_index_values *out)
{
	(void)ud;
	sf_jv refs = sf_jv_path(sf_obj_root(obj), "metadata.ownerReferences");
	sf_jv_iter it = sf_jv_iter_init(refs);
	sf_jv ref;
	while (sf_jv_next(&it, NULL, &ref)) {
		int ctl = 0;
		if (sf_jv_bool(sf_jv_get(ref, "controller"), &ctl) || !ctl)
			continue;
		char uid[128];
		int n = sf_jv_str(sf_jv_get(ref, "uid"), uid, sizeof(uid));
		if (n > 0)
			return sf_index_values_add(out, uid, (size_t)n);
	}
	return 0;
}

static int index_namespace(void *ud, const sf_obj *obj, sf_index_values *out)
{
	(void)ud;
	if (!obj->ns[0])
		return 0;
	return sf_index_values_add(out, obj->ns, strlen(obj->ns));
}

/* ---- nodes and buckets ---- */

static void node_detach(sf_store *s, idx_node *nd)
{
	bucket *b = nd->b;
	if (nd->prev)
		nd->prev->next = nd->next;
	else
		b->head = nd->next;
	if (nd->next)
		nd->next->prev = nd->prev;
	nd->prev = nd->next = NULL;
	b->count--;
	s->index_entries--;
	if (!b->count) {
		sf_strmap_remove(b->idx->values, b->value, NULL);
		s->own_bytes -= sizeof(*b) + strlen(b->value) + 1;
		s->index_values--;
		free(b);
	}
}

static void nodes_detach(sf_store *s, idx_node *nodes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		node_detach(s, &nodes[i]);
}

static void nodes_free(sf_store *s, idx_node *nodes, size_t n)
{
	if (nodes)
		s->own_bytes -= n * sizeof(*nodes);
	free(nodes);
}

static int node_attach(sf_store *s, store_index *idx, const char *value, idx_node *nd)
{
	bucket *b = sf_strmap_get(idx->values, value);
	if (!b) {
		size_t vl = strlen(value);
		b = calloc(1, sizeof(*b) + vl + 1);
		if (!b)
			return -ENOMEM;
		memcpy(b->value, value, vl + 1);
		b->idx = idx;
		if (sf_strmap_put(idx->values, b->value, b, NULL) < 0) {
			free(b);
			return -ENOMEM;
		}
		s->own_bytes += sizeof(*b) + vl + 1;
		s->index_values++;
	}
	nd->b = b;
	nd->prev = NULL;
	nd->next = b->head;
	if (b->head)
		b->head->prev = nd;
	b->head = nd;
	b->count++;
	s->index_entries++;
	return 0;
}

/* Computes obj's index values over all indexes into s->pend (index number
 * and offset of the value in s->scratch). Returns the number of pairs or a
 * negative errno. An index function that fails leaves obj out of that index
 * only (counted); running out of memory fails the whole operation. */
static long collect_values(sf_store *s, const sf_obj *obj)
{
	size_t np = 0;
	sf_buf_reset(&s->scratch);
	for (size_t i = 0; i < s->nindexes; i++) {
		/* Each index gets its own value set (de-duplication is per index). */
		values_reset(&s->iv);
		int rc = s->indexes[i].fn(s->indexes[i].ud, obj, &s->iv);
		if (rc) {
			s->counters.index_errors++;
			if (rc == -ENOMEM)
				return rc;
			continue;
		}
		const char *p = s->iv.buf.data;
		for (size_t k = 0; k < s->iv.n; k++) {
			size_t l = strlen(p);
			if (np == s->pend_cap) {
				size_t cap = s->pend_cap ? s->pend_cap * 2 : 8;
				pending *pp = realloc(s->pend, cap * sizeof(*pp));
				if (!pp)
					return -ENOMEM;
				s->pend = pp;
				s->pend_cap = cap;
			}
			s->pend[np].index = i;
			s->pend[np].off = s->scratch.len;
			if (sf_buf_append(&s->scratch, p, l + 1))
				return -ENOMEM;
			np++;
			p += l + 1;
		}
	}
	return (long)np;
}

/* Builds and attaches a fresh node array for obj under entry e. On success
 * *nodes_out and *n_out are set; on failure nothing stays attached. */
static int nodes_build(sf_store *s, entry *e, const sf_obj *obj, idx_node **nodes_out,
                       uint32_t *n_out)
{
	*nodes_out = NULL;
	*n_out = 0;
	if (!s->nindexes)
		return 0;
	long np = collect_values(s, obj);
	if (np < 0)
		return (int)np;
	if (np == 0)
		return 0;
	if ((unsigned long)np > UINT32_MAX)
		return -E2BIG;
	idx_node *nodes = calloc((size_t)np, sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	for (long i = 0; i < np; i++) {
		nodes[i].e = e;
		int rc = node_attach(s, &s->indexes[s->pend[i].index],
		                     s->scratch.data + s->pend[i].off, &nodes[i]);
		if (rc) {
			nodes_detach(s, nodes, (size_t)i);
			free(nodes);
			return rc;
		}
	}
	s->own_bytes += (size_t)np * sizeof(*nodes);
	*nodes_out = nodes;
	*n_out = (uint32_t)np;
	return 0;
}

/* Re-indexes e for new_obj: attach new nodes, then drop the old ones. */
static int entry_reindex(sf_store *s, entry *e, const sf_obj *new_obj)
{
	idx_node *nodes;
	uint32_t n;
	int rc = nodes_build(s, e, new_obj, &nodes, &n);
	if (rc)
		return rc;
	nodes_detach(s, e->nodes, e->nnodes);
	nodes_free(s, e->nodes, e->nnodes);
	e->nodes = nodes;
	e->nnodes = n;
	return 0;
}

static void emit(sf_store *s, sf_delta_type t, sf_obj *old, sf_obj *new_obj)
{
	if (s->fn)
		s->fn(s->ud, t, old, new_obj);
}

/* ---- lifecycle ---- */

static const char *entry_key(const void *e)
{
	return sf_obj_key(((const entry *)e)->obj);
}

static const char *bucket_key(const void *b)
{
	return ((const bucket *)b)->value;
}

sf_store *sf_store_new(void)
{
	sf_store *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (sf_strmap_new_keyed(entry_key, 0, &s->map)) {
		free(s);
		return NULL;
	}
	sf_buf_init(&s->iv.buf, 0);
	sf_buf_init(&s->scratch, 0);
	return s;
}

static void entry_free(sf_store *s, entry *e)
{
	s->object_bytes -= sf_obj_size(e->obj);
	s->own_bytes -= sizeof(*e);
	sf_obj_unref(e->obj);
	free(e);
}

void sf_store_free(sf_store *s)
{
	if (!s)
		return;
	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	void *v;
	while (sf_strmap_next(s->map, &it, NULL, &v)) {
		entry *e = v;
		nodes_detach(s, e->nodes, e->nnodes);
		nodes_free(s, e->nodes, e->nnodes);
		entry_free(s, e);
	}
	sf_strmap_free(s->map, NULL);
	for (size_t i = 0; i < s->nindexes; i++) {
		sf_strmap_free(s->indexes[i].values, free);
		free(s->indexes[i].name);
		free(s->indexes[i].owned_ud);
	}
	free(s->indexes);
	free(s->pend);
	sf_buf_free(&s->iv.buf);
	sf_buf_free(&s->scratch);
	free(s);
}

void sf_store_set_handler(sf_store *s, sf_store_event_fn fn, void *ud)
{
	s->fn = fn;
	s->ud = ud;
}

/* ---- indexes ---- */

static store_index *find_index(const sf_store *s, const char *name)
{
	for (size_t i = 0; i < s->nindexes; i++) {
		if (strcmp(s->indexes[i].name, name) == 0)
			return &s->indexes[i];
	}
	return NULL;
}

static int add_index(sf_store *s, const char *name, sf_index_fn fn, void *ud, const char *owned)
{
	if (!name || !*name || !fn)
		return -EINVAL;
	if (find_index(s, name))
		return -EEXIST;
	int rc = -ENOMEM;
	char *nm = strdup(name);
	char *own = owned ? strdup(owned) : NULL;
	sf_strmap *values = NULL;
	if (!nm || (owned && !own) || sf_strmap_new_keyed(bucket_key, 0, &values))
		goto fail;
	/* Buckets point at their index, so the array must not move while
	 * objects are indexed: grow it by reallocating and re-pointing. */
	store_index *arr = realloc(s->indexes, (s->nindexes + 1) * sizeof(*arr));
	if (!arr)
		goto fail;
	if (arr != s->indexes) {
		for (size_t i = 0; i < s->nindexes; i++) {
			sf_strmap_iter it = SF_STRMAP_ITER_INIT;
			void *v;
			while (sf_strmap_next(arr[i].values, &it, NULL, &v))
				((bucket *)v)->idx = &arr[i];
		}
	}
	s->indexes = arr;
	store_index *idx = &arr[s->nindexes++];
	idx->name = nm;
	idx->fn = fn;
	idx->owned_ud = own;
	idx->ud = own ? own : ud;
	idx->values = values;
	s->own_bytes += strlen(nm) + 1 + (own ? strlen(own) + 1 : 0);
	/* Index what is already there. */
	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	void *v;
	while (sf_strmap_next(s->map, &it, NULL, &v)) {
		entry *e = v;
		rc = entry_reindex(s, e, e->obj);
		if (rc)
			return rc; /* index exists; objects already done stay indexed */
	}
	return 0;
fail:
	free(nm);
	free(own);
	sf_strmap_free(values, NULL);
	return rc;
}

int sf_store_add_index(sf_store *s, const char *name, sf_index_fn fn, void *ud)
{
	return add_index(s, name, fn, ud, NULL);
}

int sf_store_add_label_index(sf_store *s, const char *label_key)
{
	if (!label_key || !*label_key)
		return -EINVAL;
	return add_index(s, label_key, index_label, NULL, label_key);
}

int sf_store_add_controller_index(sf_store *s)
{
	return add_index(s, SF_INDEX_CONTROLLER_UID, index_controller, NULL, NULL);
}

int sf_store_add_namespace_index(sf_store *s)
{
	return add_index(s, SF_INDEX_NAMESPACE, index_namespace, NULL, NULL);
}

/* ---- mutation ---- */

static const char *obj_key(const sf_obj *obj)
{
	return obj && obj->name[0] ? sf_obj_key(obj) : NULL;
}

/* The API server gives every change a new resourceVersion, so the same UID
 * and version is the same object, even when the bytes differ (LIST items
 * come without kind and apiVersion, watch objects with them). Without a
 * version, only identical bytes count as unchanged. */
static int same_object(const sf_obj *a, const sf_obj *b)
{
	if (a == b)
		return 1;
	if (a->rv[0] || b->rv[0])
		return strcmp(a->rv, b->rv) == 0 && strcmp(a->uid, b->uid) == 0;
	return a->len == b->len && memcmp(a->json, b->json, a->len) == 0;
}

static void remove_entry(sf_store *s, entry *e)
{
	sf_strmap_remove(s->map, sf_obj_key(e->obj), NULL);
	nodes_detach(s, e->nodes, e->nnodes);
	nodes_free(s, e->nodes, e->nnodes);
	sf_obj *old = e->obj;
	e->obj = NULL;
	s->object_bytes -= sf_obj_size(old);
	s->own_bytes -= sizeof(*e);
	free(e);
	s->counters.deletes++;
	emit(s, SF_DELTA_DELETE, old, NULL);
	sf_obj_unref(old);
}

static int insert_entry(sf_store *s, sf_obj *obj)
{
	int rc = -ENOMEM;
	entry *e = calloc(1, sizeof(*e));
	if (!e)
		return rc;
	rc = nodes_build(s, e, obj, &e->nodes, &e->nnodes);
	if (rc)
		goto fail;
	e->obj = obj; /* the map reads the key from it */
	if (sf_strmap_put(s->map, sf_obj_key(obj), e, NULL) < 0) {
		rc = -ENOMEM;
		nodes_detach(s, e->nodes, e->nnodes);
		nodes_free(s, e->nodes, e->nnodes);
		goto fail;
	}
	sf_obj_ref(obj);
	e->gen = s->gen;
	s->object_bytes += sf_obj_size(obj);
	s->own_bytes += sizeof(*e);
	s->counters.adds++;
	emit(s, SF_DELTA_ADD, NULL, obj);
	return 0;
fail:
	free(e);
	return rc;
}

int sf_store_upsert(sf_store *s, sf_obj *obj)
{
	const char *key = obj_key(obj);
	if (!key)
		return -EINVAL;
	entry *e = sf_strmap_get(s->map, key);
	if (!e)
		return insert_entry(s, obj);
	if (same_object(e->obj, obj)) {
		e->gen = s->gen;
		s->counters.unchanged++;
		return 0;
	}
	if (e->obj->uid[0] && obj->uid[0] && strcmp(e->obj->uid, obj->uid) != 0) {
		/* Same name, another object: the old one was deleted. */
		remove_entry(s, e);
		return insert_entry(s, obj);
	}
	int rc = entry_reindex(s, e, obj);
	if (rc)
		return rc;
	sf_obj *old = e->obj;
	e->obj = sf_obj_ref(obj);
	e->gen = s->gen;
	s->object_bytes += sf_obj_size(obj);
	s->object_bytes -= sf_obj_size(old);
	s->counters.updates++;
	emit(s, SF_DELTA_UPDATE, old, obj);
	sf_obj_unref(old);
	return 0;
}

int sf_store_delete_key(sf_store *s, const char *key)
{
	entry *e = sf_strmap_get(s->map, key);
	if (!e)
		return -ENOENT;
	remove_entry(s, e);
	return 0;
}

int sf_store_delete(sf_store *s, const sf_obj *obj)
{
	const char *key = obj_key(obj);
	if (!key)
		return -EINVAL;
	return sf_store_delete_key(s, key);
}

void sf_store_replace_begin(sf_store *s)
{
	s->gen++;
	s->replacing = 1;
}

int sf_store_replace_item(sf_store *s, sf_obj *obj)
{
	return sf_store_upsert(s, obj);
}

size_t sf_store_replace_end(sf_store *s)
{
	if (!s->replacing)
		return 0;
	s->replacing = 0;
	size_t n = 0;
	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	void *v;
	/* Removing the entry just returned is safe while iterating. */
	while (sf_strmap_next(s->map, &it, NULL, &v)) {
		entry *e = v;
		if (e->gen != s->gen) {
			remove_entry(s, e);
			n++;
		}
	}
	return n;
}

void sf_store_replace_abort(sf_store *s)
{
	s->replacing = 0;
}

long sf_store_replace(sf_store *s, sf_obj *const *items, size_t n)
{
	sf_store_replace_begin(s);
	for (size_t i = 0; i < n; i++) {
		int rc = sf_store_replace_item(s, items[i]);
		if (rc) {
			sf_store_replace_abort(s);
			return rc;
		}
	}
	return (long)sf_store_replace_end(s);
}

/* ---- queries ---- */

sf_obj *sf_store_get(const sf_store *s, const char *key)
{
	entry *e = sf_strmap_get(s->map, key);
	return e ? e->obj : NULL;
}

sf_obj *sf_store_get_ns(const sf_store *s, const char *ns, const char *name)
{
	char key[KEY_MAX];
	if (sf_cache_key(ns, name, key, sizeof(key)) < 0)
		return NULL;
	return sf_store_get(s, key);
}

size_t sf_store_len(const sf_store *s)
{
	return sf_strmap_len(s->map);
}

int sf_store_each(const sf_store *s, sf_store_visit_fn fn, void *ud)
{
	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	void *v;
	while (sf_strmap_next(s->map, &it, NULL, &v)) {
		int rc = fn(ud, ((entry *)v)->obj);
		if (rc)
			return rc;
	}
	return 0;
}

void sf_obj_list_free(sf_obj **list, size_t n)
{
	if (!list)
		return;
	for (size_t i = 0; i < n; i++)
		sf_obj_unref(list[i]);
	free(list);
}

int sf_store_list(const sf_store *s, sf_obj ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t len = sf_strmap_len(s->map);
	if (!len)
		return 0;
	sf_obj **v = malloc(len * sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t i = 0;
	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	void *e;
	while (i < len && sf_strmap_next(s->map, &it, NULL, &e))
		v[i++] = sf_obj_ref(((entry *)e)->obj);
	*out = v;
	*n = i;
	return 0;
}

static const bucket *find_bucket(const sf_store *s, const char *index, const char *value, int *err)
{
	store_index *idx = find_index(s, index);
	if (!idx) {
		*err = -ENOENT;
		return NULL;
	}
	*err = 0;
	return value ? sf_strmap_get(idx->values, value) : NULL;
}

int sf_store_by_index(const sf_store *s, const char *index, const char *value, sf_obj ***out,
                      size_t *n)
{
	*out = NULL;
	*n = 0;
	int err;
	const bucket *b = find_bucket(s, index, value, &err);
	if (!b)
		return err;
	sf_obj **v = malloc(b->count * sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t i = 0;
	for (const idx_node *nd = b->head; nd; nd = nd->next)
		v[i++] = sf_obj_ref(nd->e->obj);
	*out = v;
	*n = i;
	return 0;
}

int sf_store_index_each(const sf_store *s, const char *index, const char *value,
                        sf_store_visit_fn fn, void *ud)
{
	int err;
	const bucket *b = find_bucket(s, index, value, &err);
	if (!b)
		return err;
	for (const idx_node *nd = b->head; nd;) {
		const idx_node *next = nd->next;
		int rc = fn(ud, nd->e->obj);
		if (rc)
			return rc;
		nd = next;
	}
	return 0;
}

long sf_store_index_count(const sf_store *s, const char *index, const char *value)
{
	int err;
	const bucket *b = find_bucket(s, index, value, &err);
	if (!b)
		return err;
	return (long)b->count;
}

void sf_strv_free(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int sf_store_index_values(const sf_store *s, const char *index, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	store_index *idx = find_index(s, index);
	if (!idx)
		return -ENOENT;
	size_t len = sf_strmap_len(idx->values);
	if (!len)
		return 0;
	char **v = calloc(len, sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t i = 0;
	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	const char *k;
	while (i < len && sf_strmap_next(idx->values, &it, &k, NULL)) {
		v[i] = strdup(k);
		if (!v[i]) {
			sf_strv_free(v, i);
			return -ENOMEM;
		}
		i++;
	}
	*out = v;
	*n = i;
	return 0;
}

void sf_store_stats_get(const sf_store *s, sf_store_stats *out)
{
	*out = s->counters;
	out->objects = sf_strmap_len(s->map);
	out->object_bytes = s->object_bytes;
	out->index_values = s->index_values;
	out->index_entries = s->index_entries;
	size_t own = sizeof(*s) + s->own_bytes + sf_strmap_table_bytes(s->map) +
	             s->nindexes * sizeof(store_index) + s->scratch.cap + s->iv.buf.cap +
	             s->pend_cap * sizeof(pending);
	for (size_t i = 0; i < s->nindexes; i++)
		own += sf_strmap_table_bytes(s->indexes[i].values);
	out->overhead_bytes = own;
}

size_t sf_store_bytes(const sf_store *s)
{
	sf_store_stats st;
	sf_store_stats_get(s, &st);
	return st.object_bytes + st.overhead_bytes;
}

int sf_store_metrics_add(const sf_store *s, sf_prom *p, const char *group, const char *resource)
{
	sf_store_stats st;
	sf_store_stats_get(s, &st);
	const char *const labels[] = {"group", group ? group : "", "resource", resource, NULL};
	int rc = sf_prom_add_u(sf_prom_family_get(p, "steadfast_cache_objects", SF_PROM_GAUGE,
	                                          "Objects held by an informer's cache"),
	                       labels, st.objects);
	if (rc < 0)
		return rc;
	return sf_prom_add_u(
	    sf_prom_family_get(p, "steadfast_cache_bytes", SF_PROM_GAUGE,
	                       "Bytes an informer's cache asked of malloc for its objects and its "
	                       "own entries, keys and indexes (without malloc's overhead)"),
	    labels, st.object_bytes + st.overhead_bytes);
}
