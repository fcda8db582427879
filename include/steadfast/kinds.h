/*
 * kinds.h - the registry of component kinds: discovery state and one
 * informer per (apiVersion, kind) that something uses, on every replica.
 *
 * In the spirit of controller-runtime's informer cache: kinds are keyed by
 * apiVersion and kind, resolved through discovery, and watched (with the
 * label selector and indexes the owner asked for) while at least one owner
 * uses them. Owners say what they use with sf_kinds_track - the AppWrapper
 * controller does so from its AppWrapper informer on every replica, so a
 * standby holds the same warm component caches as the leader and a
 * failover lists nothing a standby could have listed. A kind nobody has
 * used for idle_ms has its informer stopped (the entry and its discovery
 * state stay, so pointers to entries are valid for the registry's life).
 *
 * Discovery has three outcomes, kept per kind: served; not served (the API
 * server said so: its group version answered 404, or its resource list
 * lacks the kind); cannot say (any other failure). "Not served" is never
 * evidence that objects of the kind are gone (they may live on under
 * another version); sf_kind_confirmed_not_served says when it may be used
 * to refuse a create. Kinds that are not served are asked again with
 * backoff (5 s doubling to 60 s) from the registry's own timer, and at once
 * after sf_kind_suspect; failures are never fanned out to owners, only a
 * kind that becomes usable is reported (on_ready).
 *
 * Everything runs on the loop thread.
 */
#ifndef STEADFAST_KINDS_H
#define STEADFAST_KINDS_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "steadfast/cache.h"
#include "steadfast/client.h"

typedef enum {
	SF_KIND_RESOLVING = 0, /* no discovery answer yet */
	SF_KIND_SERVED,
	SF_KIND_NOT_SERVED, /* the API server said it does not serve it */
	SF_KIND_UNKNOWN,    /* cannot say: discovery failed */
} sf_kind_state;

typedef struct sf_kinds sf_kinds;
typedef struct sf_kind sf_kind;

typedef struct sf_kinds_opts {
	const char *ns;                   /* NULL/"" = all namespaces */
	const char *label_selector;       /* every kind informer lists only these */
	const char *const *label_indexes; /* label keys to index, NULL-terminated */
	int controller_index;             /* add SF_INDEX_CONTROLLER_UID */
	int strip_managed_fields;
	/* every kind informer's cache transform (see sf_reflector_opts) */
	sf_obj *(*transform)(void *ud, sf_obj *obj);
	void *transform_ud;
	long fault_event_delay_max_ms; /* see sf_reflector_opts */
	long fault_event_delay_min_ms; /* see sf_reflector_opts */
	int fault_coalesce_events;     /* see sf_reflector_opts */
	/* Added to every kind informer (copied); handler_ud is its ud. */
	const sf_informer_handler *handler;
	void *handler_ud;
	/* A kind became usable: served again, or its informer (re)synced. */
	void (*on_ready)(void *ud, sf_kind *k);
	void *ud;
	long idle_ms; /* stop the informer of a kind unused this long; 0 = 60000 */
} sf_kinds_opts;

/* Strings and the handler in o are copied. 0 or -ENOMEM. */
int sf_kinds_new(uv_loop_t *loop, sf_kube_client *client, const sf_kinds_opts *o, sf_kinds **out);
/* Starts the timer (re-checks and idle sweeps). */
int sf_kinds_start(sf_kinds *ks);
/* Stops every informer and the timer; cb when all are closed. */
void sf_kinds_stop(sf_kinds *ks, void (*cb)(void *ud), void *ud);
/* After stop's cb (or if never started). NULL is a no-op. */
void sf_kinds_free(sf_kinds *ks);

/* Sets what `owner` (a key, copied) uses: n kinds as pairs[2i] (apiVersion)
 * and pairs[2i+1] (kind); replaces what it used before. A kind gets
 * resolved and watched as soon as anyone uses it. 0 or -ENOMEM. */
int sf_kinds_track(sf_kinds *ks, const char *owner, const char *const *pairs, size_t n);
void sf_kinds_untrack(sf_kinds *ks, const char *owner);
/* Calls fn(ud, owner) for each owner that uses k. */
void sf_kinds_each_owner(const sf_kinds *ks, const sf_kind *k,
                         void (*fn)(void *ud, const char *owner), void *ud);

/* The entry for (api_version, kind), created and resolved on first use,
 * re-checked when a re-check is due; NULL on -ENOMEM. Borrowed; valid for
 * the registry's life. */
sf_kind *sf_kinds_get(sf_kinds *ks, const char *api_version, const char *kind);
size_t sf_kinds_count(const sf_kinds *ks);
/* Watches of the kind informers ended by their progress watchdog. */
unsigned long sf_kinds_watchdog_restarts(const sf_kinds *ks);
/* Adds each watched kind's cache to steadfast_cache_objects and
 * steadfast_cache_bytes (sf_store_metrics_add). 0, -ENOMEM. */
int sf_kinds_metrics_write(const sf_kinds *ks, sf_prom *p);

sf_kind_state sf_kind_get_state(const sf_kind *k);
const char *sf_kind_api_version(const sf_kind *k);
const char *sf_kind_name(const sf_kind *k);
/* The discovery error ("" while served). */
const char *sf_kind_error(const sf_kind *k);
/* The resource (valid once served at least once), or NULL. */
const sf_gvr *sf_kind_gvr(const sf_kind *k);
/* Its informer while it is watched, or NULL. */
sf_informer *sf_kind_informer(const sf_kind *k);
/* 1 when served and its informer has synced. */
int sf_kind_ready(const sf_kind *k);
/* mono ms when its current informer started (0 if none). */
int64_t sf_kind_started_ms(const sf_kind *k);
/* 1 when a create of this kind may be refused for good: discovery said
 * twice, at least 5 s apart, that it is not served. */
int sf_kind_confirmed_not_served(const sf_kind *k);
/* An answer about an object of this kind did not come from the API server
 * (a plain-text or foreign 404): ask discovery again (at most every
 * second). */
void sf_kind_suspect(sf_kind *k);

#endif
