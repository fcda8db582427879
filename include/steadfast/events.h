/*
 * events.h - Events through events.k8s.io/v1, aggregated into series, as
 * client-go's tools/events recorder writes them (upstream's controller and
 * Kueue record through it).
 *
 * The first occurrence of an event creates an Event (POST) with eventTime,
 * reportingController, reportingInstance, action, reason, regarding, note
 * and type. The same (object, type, reason, action, note) again within the
 * window since its last occurrence is a series on that Event, not another
 * object: the second occurrence patches series {count 2, lastObservedTime}
 * (as client-go), later ones raise the count the same way, so a reconcile
 * loop can never flood the namespace. Events are best effort: a failed
 * write is logged and counted, never retried in a loop. Writes pass the
 * client's rate limiter and write gate (the leader's fence) like every
 * other mutation.
 */
#ifndef STEADFAST_EVENTS_H
#define STEADFAST_EVENTS_H

#include <stddef.h>
#include <uv.h>

#include "steadfast/client.h"
#include "steadfast/json.h"
#include "steadfast/prom.h"

typedef struct sf_events sf_events;

/* The API server's limits on an events.k8s.io/v1 Event (validation of
 * kubernetes pkg/apis/core/validation/events.go): longer notes are cut to
 * fit (on a UTF-8 boundary, ending "..."), longer reasons and actions are
 * refused, a longer instance is cut. */
#define SF_EVENTS_NOTE_MAX 1024
#define SF_EVENTS_REASON_MAX 128
#define SF_EVENTS_ACTION_MAX 128
#define SF_EVENTS_INSTANCE_MAX 128

/* How long a series stays open after its last occurrence: client-go's
 * finishTime (6 min). */
#define SF_EVENTS_WINDOW_MS (6 * 60 * 1000L)

typedef struct sf_events_opts {
	const char *controller; /* reportingController (a qualified name); NULL = "steadfast" */
	const char *instance;   /* reportingInstance (the replica's identity); ""/NULL = hostname */
	long window_ms;         /* series window; 0 = SF_EVENTS_WINDOW_MS */
	size_t max_keys;        /* remembered series; 0 = 4096 (oldest dropped) */
} sf_events_opts;

typedef struct sf_events_stats {
	/* created: new Event objects; aggregated: occurrences counted in a
	 * series; failed: writes that failed; dropped: series forgotten
	 * before their window ended (max_keys) */
	unsigned long created, aggregated, failed, dropped;
} sf_events_stats;

int sf_events_new(uv_loop_t *loop, sf_kube_client *client, const sf_events_opts *opts,
                  sf_events **out);
/* Forgets every series and frees the recorder (writes in flight finish
 * without it); cb (may be NULL) then, before this returns. NULL ev just
 * calls cb. */
void sf_events_close(sf_events *ev, void (*cb)(void *ud), void *ud);

/* Records an event about obj (namespaced; kind/apiVersion given, since
 * cached objects may lack them). type is "Normal" or "Warning"; reason and
 * action are short machine-readable words (1 to 128 bytes, no control
 * characters); note is for humans. 0, or -EINVAL (an argument the API
 * server would refuse), -ENOMEM, or the client's error. */
int sf_events_emit(sf_events *ev, const sf_obj *obj, const char *api_version, const char *kind,
                   const char *type, const char *reason, const char *action, const char *note);
void sf_events_stats_get(const sf_events *ev, sf_events_stats *out);
/* steadfast_events_total{outcome}: created, aggregated, failed. */
int sf_events_metrics_write(const sf_events *ev, sf_prom *p);
/* Forgets every series (a new leadership term starts fresh). */
void sf_events_reset(sf_events *ev);

#endif
