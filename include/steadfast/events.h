/*
 * events.h - core/v1 Events with aggregation, as client-go's recorder.
 *
 * The same (object, type, reason, message) seen again within the
 * aggregation window updates the existing Event's count and lastTimestamp
 * (one PATCH) instead of creating another object, so a reconcile loop can
 * never flood the namespace. Events are best effort: a failed write is
 * logged and counted, never retried in a loop. Writes pass the client's
 * write gate like every other mutation.
 */
#ifndef STEADFAST_EVENTS_H
#define STEADFAST_EVENTS_H

#include <stddef.h>
#include <uv.h>

#include "steadfast/client.h"
#include "steadfast/json.h"

typedef struct sf_events sf_events;

typedef struct sf_events_opts {
	const char *component; /* source.component / reportingComponent */
	const char *instance;  /* reportingInstance (pod name); "" = hostname */
	long window_ms;        /* aggregation window; 0 = 10 min */
	size_t max_keys;       /* remembered series; 0 = 4096 (oldest dropped) */
} sf_events_opts;

typedef struct sf_events_stats {
	unsigned long created, aggregated, failed, dropped;
} sf_events_stats;

int sf_events_new(uv_loop_t *loop, sf_kube_client *client, const sf_events_opts *opts,
                  sf_events **out);
void sf_events_free(sf_events *ev); /* in-flight writes finish without it */

/* Records an event about obj (kind/apiVersion given, since cached objects
 * may lack them). type is "Normal" or "Warning". 0 or a negative errno. */
int sf_events_emit(sf_events *ev, const sf_obj *obj, const char *api_version, const char *kind,
                   const char *type, const char *reason, const char *message);
void sf_events_stats_get(const sf_events *ev, sf_events_stats *out);
/* Forgets every series (a new leadership term starts fresh). */
void sf_events_reset(sf_events *ev);

#endif
