/*
 * cache.h - object store with indexes, reflector (list + watch) and informer.
 *
 * Modelled on client-go's tools/cache:
 *
 *   sf_store      Store + Indexer. Holds one reference to each sf_obj, keyed
 *                 "namespace/name" ("name" for cluster-scoped objects), with
 *                 secondary indexes computed by index functions (an object
 *                 maps to zero or more index values). A re-list is applied
 *                 as a streaming replace: items are upserted as they arrive
 *                 and objects the list did not contain are deleted at the
 *                 end, so the handler sees ADD/UPDATE/DELETE deltas as with
 *                 DeltaFIFO.Replace, without holding two copies of the world.
 *   sf_reflector  Keeps a store in step with the API server on the libuv
 *                 loop: a WatchList stream (watch with sendInitialEvents)
 *                 where the server allows it, else LIST then WATCH from
 *                 the list's resourceVersion, with bookmarks; re-watch
 *                 when the server ends the stream; re-list on 410
 *                 Gone/Expired; exponential backoff with jitter on other
 *                 errors. Only the lists a freshness wait asks for are
 *                 quorum reads; the others may come from the API
 *                 server's watch cache, as client-go's reflector does.
 *   sf_informer   A reflector and its store plus event handlers, and a
 *                 freshness wait ("until the cache has seen RV >= X").
 *
 * Everything here runs on the loop thread; nothing is thread-safe. Objects
 * handed to handlers and returned by lookups are borrowed (take a reference
 * with sf_obj_ref to keep one); the lists returned by sf_store_list and
 * sf_store_by_index hold a reference per element.
 *
 * Handlers run synchronously inside store mutations and must not mutate the
 * store they are called from (they may read it, and may call
 * sf_informer_stop).
 */
#ifndef STEADFAST_CACHE_H
#define STEADFAST_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "steadfast/client.h"
#include "steadfast/json.h"
#include "steadfast/prom.h"
#include "steadfast/rv.h" /* the resourceVersions the cache orders */

/* ---- keys ---- */

/* Writes "ns/name" (or "name" when ns is "" or NULL) into buf. Returns the
 * length, or -ERANGE if buf is too small. */
int sf_cache_key(const char *ns, const char *name, char *buf, size_t cap);
/* ---- store ---- */

typedef struct sf_store sf_store;

typedef enum {
	SF_DELTA_ADD = 1,
	SF_DELTA_UPDATE,
	SF_DELTA_DELETE,
} sf_delta_type;

const char *sf_delta_type_name(sf_delta_type t);

/* Called after each change has been applied: ADD (old NULL), UPDATE (old
 * and new), DELETE (new NULL). Objects are borrowed for the call. */
typedef void (*sf_store_event_fn)(void *ud, sf_delta_type type, sf_obj *old, sf_obj *new_obj);

/* Index functions emit the values an object is indexed under. */
typedef struct sf_index_values sf_index_values;
/* Adds one value (n bytes, need not be NUL-terminated); duplicates of a
 * value already emitted for the same object are dropped. 0 or -ENOMEM. */
int sf_index_values_add(sf_index_values *v, const char *s, size_t n);
/* Returns 0 (having emitted zero or more values) or a negative errno; an
 * error leaves the object out of that index and is counted in
 * sf_store_stats.index_errors. */
typedef int (*sf_index_fn)(void *ud, const sf_obj *obj, sf_index_values *out);

/* Name of the built-in index on the controller owner (the ownerReference
 * with controller: true): value = that owner's UID. */
#define SF_INDEX_CONTROLLER_UID "controller-uid"
/* Name of the built-in index on metadata.namespace. */
#define SF_INDEX_NAMESPACE "namespace"

sf_store *sf_store_new(void);
/* Drops every object reference and the indexes; NULL is a no-op. Does not
 * call the event handler. */
void sf_store_free(sf_store *s);
void sf_store_set_handler(sf_store *s, sf_store_event_fn fn, void *ud);

/* Adds an index. Existing objects are indexed at once. -EEXIST if the name
 * is taken, -ENOMEM. name and the label key are copied. */
int sf_store_add_index(sf_store *s, const char *name, sf_index_fn fn, void *ud);
/* Index named after label_key; value = the label's value (objects without
 * the label are not in it). */
int sf_store_add_label_index(sf_store *s, const char *label_key);
int sf_store_add_controller_index(sf_store *s);
int sf_store_add_namespace_index(sf_store *s);

/* Upserts obj (the store takes its own reference; the caller keeps its).
 * Emits ADD, or UPDATE when the key existed; an object with the same key
 * but another UID emits DELETE of the old then ADD of the new. An object
 * with the stored one's UID and resourceVersion is the same object: the
 * stored one is kept and nothing is emitted (LIST items lack kind and
 * apiVersion, so a re-list does not turn every object into an update).
 * Returns 0, -EINVAL (no name), -ENOMEM. */
int sf_store_upsert(sf_store *s, sf_obj *obj);
/* Removes the object at obj's key and emits DELETE with the stored object.
 * Returns 0, or -ENOENT when the key is unknown (nothing emitted). */
int sf_store_delete(sf_store *s, const sf_obj *obj);
int sf_store_delete_key(sf_store *s, const char *key);

/* Streaming replace (re-list). begin starts a pass (restarting any open
 * one); each item of the new list goes through replace_item (upsert
 * semantics, the caller keeps its reference); end deletes every object not
 * seen since begin (emitting DELETE for each) and returns how many it
 * deleted. abort ends an open pass without deleting anything. */
void sf_store_replace_begin(sf_store *s);
int sf_store_replace_item(sf_store *s, sf_obj *obj);
size_t sf_store_replace_end(sf_store *s);
void sf_store_replace_abort(sf_store *s);
/* Convenience: begin + item for each of items[0..n) + end. Returns the
 * number deleted, or a negative errno (then the pass is aborted and objects
 * already upserted stay). */
long sf_store_replace(sf_store *s, sf_obj *const *items, size_t n);

/* Lookups: borrowed, NULL if absent. */
sf_obj *sf_store_get(const sf_store *s, const char *key);
sf_obj *sf_store_get_ns(const sf_store *s, const char *ns, const char *name);
size_t sf_store_len(const sf_store *s);

/* Visits every object (order unspecified); stops when fn returns non-zero
 * and returns that value. fn must not mutate the store. */
typedef int (*sf_store_visit_fn)(void *ud, sf_obj *obj);
int sf_store_each(const sf_store *s, sf_store_visit_fn fn, void *ud);
/* Snapshot of all objects: *out is a malloc'd array of *n references
 * (NULL when empty); free it with sf_obj_list_free. 0 or -ENOMEM. */
int sf_store_list(const sf_store *s, sf_obj ***out, size_t *n);
void sf_obj_list_free(sf_obj **list, size_t n);

/* Index queries. -ENOENT when no such index; an unknown value is an empty
 * result (0). */
int sf_store_by_index(const sf_store *s, const char *index, const char *value, sf_obj ***out,
                      size_t *n);
int sf_store_index_each(const sf_store *s, const char *index, const char *value,
                        sf_store_visit_fn fn, void *ud);
/* Number of objects under value, or -ENOENT for an unknown index. */
long sf_store_index_count(const sf_store *s, const char *index, const char *value);
/* The distinct values of an index (malloc'd array of malloc'd strings, free
 * with sf_strv_free). */
int sf_store_index_values(const sf_store *s, const char *index, char ***out, size_t *n);
void sf_strv_free(char **v, size_t n);

typedef struct sf_store_stats {
	size_t objects;
	size_t object_bytes;   /* sum of sf_obj_size over stored objects */
	size_t overhead_bytes; /* the store's own allocations (entries, keys, maps, indexes) */
	size_t index_values;   /* distinct (index, value) pairs */
	size_t index_entries;  /* (object, index, value) memberships */
	unsigned long adds, updates, deletes, unchanged, index_errors;
} sf_store_stats;
void sf_store_stats_get(const sf_store *s, sf_store_stats *out);
/* object_bytes + overhead_bytes. */
size_t sf_store_bytes(const sf_store *s);
/* Adds the store to the gauges steadfast_cache_objects and
 * steadfast_cache_bytes (object_bytes + overhead_bytes: the bytes asked of
 * malloc for the objects the store references and for its own entries,
 * keys, maps and indexes; not malloc's per-chunk headers or free space),
 * labelled group (the API group, "" for core) and resource. 0, -ENOMEM. */
int sf_store_metrics_add(const sf_store *s, sf_prom *p, const char *group, const char *resource);

/* ---- reflector ---- */

typedef struct sf_reflector sf_reflector;

typedef struct sf_reflector_opts {
	const sf_gvr *gvr;          /* required; borrowed, must outlive the reflector */
	const char *ns;             /* NULL/"" = all namespaces */
	const char *label_selector; /* or NULL */
	const char *field_selector; /* or NULL */
	long page_size;             /* LIST limit, 0 = 500, < 0 = unpaged */
	/* Lists as a WatchList stream (watch=true&sendInitialEvents=true):
	 * 0 = where the server allows it, falling back to LIST + WATCH for
	 * good when it refuses (400/422) or ends the stream before the
	 * initial-events-end bookmark; < 0 = LIST + WATCH only. */
	int watch_list;
	long watch_min_s;        /* watch timeoutSeconds in [min, max): 0 = 300 */
	long watch_max_s;        /* 0 = 600 */
	long backoff_initial_ms; /* 0 = 800 */
	long backoff_max_ms;     /* 0 = 30000 */
	long backoff_reset_ms; /* a failure after this much calm restarts at initial; 0 = 120000 */
	double backoff_jitter; /* delay += rand * jitter * delay; 0 = 1.0, < 0 = none */
	const char *name;      /* for logs; NULL = resource name */
	int strip_managed_fields; /* drop metadata.managedFields before storing */
	/* A cache transform (client-go's TransformFunc): each listed or
	 * watched object (not bookmarks or errors) goes through it before it
	 * is stored, after strip_managed_fields. It takes over the reference
	 * it is given and returns the object to store (the same one, or a new
	 * one with the old released). NULL = none. */
	sf_obj *(*transform)(void *ud, sf_obj *obj);
	void *transform_ud;
	/* Fault injection for tests: each watch event (and the resourceVersion
	 * it carries) is applied a random 0..N ms after it arrived, in order,
	 * so the cache lags the API server the way a slow watch does. Queued
	 * events are dropped when a re-list starts. 0 = off. */
	long fault_event_delay_max_ms;
	/* ... and at least this many ms late (at most the maximum), so that a
	 * test can count on the lag. 0 = no minimum. */
	long fault_event_delay_min_ms;
	/* ... and an event for an object that still has one queued replaces
	 * it (its states in between are never delivered, as when a watch
	 * coalesces or a relist skips them). */
	int fault_coalesce_events;
	/* Watch progress watchdog: a watch that delivers no event and no
	 * bookmark for this long is ended and started again on a fresh
	 * connection (the API server sends a bookmark about every minute to
	 * a watch that asks for them). 0 = 150000 (2.5 bookmark intervals),
	 * < 0 = off. */
	long progress_timeout_ms;
	/* Fault injection for tests: from this many ms after start, the watch
	 * open then delivers nothing more (its events and bookmarks are
	 * dropped), as a stream stalled while its connection stays healthy,
	 * until the progress watchdog restarts it; once. 0 = off. */
	long fault_stall_after_ms;
	/* Each time the newest seen resourceVersion advances (list end, watch
	 * event, bookmark). */
	void (*on_rv)(void *ud, const char *rv);
	/* Each time a (re)list has been fully applied to the store. */
	void (*on_synced)(void *ud);
	void *ud;
} sf_reflector_opts;

typedef struct sf_reflector_stats {
	unsigned long lists;        /* complete (re)lists applied (LIST or WatchList) */
	unsigned long list_pages;   /* LIST requests that succeeded */
	unsigned long watch_lists;  /* of lists: WatchList streams up to their end bookmark */
	unsigned long quorum_lists; /* of lists: consistent reads (no resourceVersion asked) */
	unsigned long watch_list_fallbacks; /* WatchList refused: LIST + WATCH from then on */
	unsigned long relists;      /* re-lists of a synced store (410 on the watch, forced) */
	unsigned long watches;      /* WATCH requests started */
	unsigned long events;       /* ADDED/MODIFIED/DELETED applied */
	unsigned long stale_events; /* skipped: older than the stored version of that object */
	unsigned long coalesced;    /* fault injection: replaced by a newer one while queued */
	unsigned long bookmarks;
	unsigned long gone;              /* 410 Gone/Expired seen (HTTP or ERROR event) */
	unsigned long errors;            /* failed list/watch requests, ERROR events, bad streams */
	unsigned long decode_errors;     /* malformed or truncated streams */
	unsigned long backoffs;          /* retries scheduled with backoff */
	unsigned long deleted_on_relist; /* objects a relist found gone */
	unsigned long watchdog_restarts; /* watches ended for making no progress */
} sf_reflector_stats;

/* client and store are borrowed and must outlive the reflector. Copies
 * the strings in opts. 0, -EINVAL, -ENOMEM. */
int sf_reflector_new(uv_loop_t *loop, sf_kube_client *client, sf_store *store,
                     const sf_reflector_opts *opts, sf_reflector **out);
/* Starts listing. -EALREADY if running, -ESHUTDOWN once stopped. */
int sf_reflector_start(sf_reflector *r);
/* Cancels the in-flight list/watch and closes the timer; cb (optional)
 * runs from the loop when nothing is pending any more (at once if the
 * reflector was never started). The store is left as it is, with any
 * partial re-list kept but no deletes applied. A stopped reflector cannot
 * be started again; free it after cb (or at any time if never started).
 * A reflector whose client is closed under it stops itself (logged as an
 * error); sf_reflector_stop still reports through cb then. */
void sf_reflector_stop(sf_reflector *r, void (*cb)(void *ud), void *ud);
void sf_reflector_free(sf_reflector *r);

/* 1 once the first list has been applied (stays 1 across relists); for a
 * WatchList, once its initial-events-end bookmark has arrived. */
int sf_reflector_synced(const sf_reflector *r);
/* Newest resourceVersion seen ("" before the first list). */
const char *sf_reflector_last_rv(const sf_reflector *r);
void sf_reflector_stats_get(const sf_reflector *r, sf_reflector_stats *out);
/* Forces a fresh (quorum) list now, replacing the store, then a new watch.
 * -ESHUTDOWN when stopped. */
int sf_reflector_relist(sf_reflector *r);
/* Freshness by the clock rather than by resourceVersion (which is only
 * comparable within one resource): returns 1 when the last applied
 * consistent list (a LIST or WatchList asked without a resourceVersion: a
 * quorum read, never served from a watch cache's past) was asked for at
 * or after since_ns (mono), else makes sure one will be -
 * a watching reflector re-lists now, a listing one lists again once the
 * list in flight is applied, one waiting out a backoff lists when the
 * backoff ends - and returns 0 (on_synced reports it). -ESHUTDOWN when
 * stopped. */
int sf_reflector_want_fresh(sf_reflector *r, int64_t since_ns);
/* When (mono ns) the first page of the last applied consistent list was
 * asked for; 0 before the first. */
int64_t sf_reflector_list_asked_ns(const sf_reflector *r);
/* Test hook: ends the current watch and starts the next one from rv
 * (e.g. an old, compacted resourceVersion to provoke 410 Gone). */
int sf_reflector_rewatch_from(sf_reflector *r, const char *rv);

/* ---- informer ---- */

typedef struct sf_informer sf_informer;

/* Handlers; any member may be NULL. Objects are borrowed. */
typedef struct sf_informer_handler {
	void (*on_add)(void *ud, sf_obj *obj);
	void (*on_update)(void *ud, sf_obj *old, sf_obj *new_obj);
	void (*on_delete)(void *ud, sf_obj *obj);
	void (*on_synced)(void *ud); /* after each (re)list has been applied */
} sf_informer_handler;

typedef struct sf_informer_opts {
	sf_reflector_opts reflector; /* its on_rv/on_synced/ud are taken by the informer */
	/* Label keys to index (each becomes an index of that name), NULL-terminated. */
	const char *const *label_indexes;
	int controller_index; /* add SF_INDEX_CONTROLLER_UID */
	int namespace_index;  /* add SF_INDEX_NAMESPACE */
} sf_informer_opts;

int sf_informer_new(uv_loop_t *loop, sf_kube_client *client, const sf_informer_opts *opts,
                    sf_informer **out);
/* Registers handlers (h is copied). A handler added while the store holds
 * objects is first called with on_add for each of them, as client-go does.
 * Returns 0, -ENOMEM. */
int sf_informer_add_handler(sf_informer *inf, const sf_informer_handler *h, void *ud);
int sf_informer_start(sf_informer *inf);
/* Stops the reflector (see sf_reflector_stop); cb when fully closed. The
 * store stays readable until sf_informer_free; handlers are not called any
 * more and pending freshness waits end with -ECANCELED. */
void sf_informer_stop(sf_informer *inf, void (*cb)(void *ud), void *ud);
void sf_informer_free(sf_informer *inf);

sf_store *sf_informer_store(sf_informer *inf);
sf_reflector *sf_informer_reflector(sf_informer *inf);
int sf_informer_synced(const sf_informer *inf);
const char *sf_informer_last_rv(const sf_informer *inf);

/* Freshness barrier: cb(ud, 0) once the informer is synced and has seen a
 * resourceVersion >= rv (compared with sf_rv_cmp); cb(ud, -ECANCELED) if
 * the informer stops first. Returns 1 if that already holds (cb is not
 * called), 0 if the wait was registered (cb will run exactly once, from a
 * later list/event/bookmark or from stop, unless cancelled with
 * sf_informer_wait_cancel first), or -ENOMEM/-ESHUTDOWN. The wait is
 * freed before cb runs. */
typedef struct sf_rv_wait sf_rv_wait;
int sf_informer_wait_rv(sf_informer *inf, const char *rv, void (*cb)(void *ud, int err), void *ud,
                        sf_rv_wait **out);
/* The same for a list asked at or after since_ns (mono ns): what a new
 * leader needs from every resource's cache, since resourceVersions of
 * different resources are not comparable (they may come from different
 * etcds). Starts that list (sf_reflector_want_fresh) when needed. Returns
 * 1 if it already holds, 0 if registered, -EINVAL, -ENOMEM, -ESHUTDOWN. */
int sf_informer_wait_fresh(sf_informer *inf, int64_t since_ns, void (*cb)(void *ud, int err),
                           void *ud, sf_rv_wait **out);
/* Cancels a pending wait; its cb is not called. */
void sf_informer_wait_cancel(sf_rv_wait *w);

#endif
