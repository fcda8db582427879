/*
 * admparams.h - the leader keeps the parameters of the admission
 * policies (the ConfigMap of manifests/admission/params.yaml) in step
 * with discovery and with the operator config.
 *
 * The user RBAC policy asks the API server's authorizer whether the
 * requesting user may create each component, and the authorizer wants a
 * resource (`gizmoes`) where a template gives a kind (`Gizmo`). CEL has no
 * discovery, so the policy reads the kind -> resource table from that
 * ConfigMap. The manifests ship it with the kinds the controller can
 * create, so admission works before any replica ever ran and while none
 * runs; the leader then adds every namespaced kind discovery serves with
 * the create verb (a CRD installed later is admitted by the next pass,
 * not refused as unmapped), corrects a line that discovery contradicts,
 * and writes the create-time defaults the mutating policy reads
 * (defaultQueueName, enableKueueIntegrations, manageJobsWithoutQueueName)
 * from the operator config, so they no longer need mirroring by hand.
 *
 * Writes are server-side apply with field manager SF_ADMPARAMS_MANAGER,
 * forced, with the resourceVersion read as a precondition (the ConfigMap
 * is never created: absent means admission is not installed, or not
 * there). Apply owns exactly the keys it sends: a kind that discovery no
 * longer serves leaves the ConfigMap with the next write, unless someone
 * else (the manifests' `kubectl apply`) also set it. A pass whose
 * discovery was partial (a group version marked Stale) removes nothing.
 * Nothing is written when the ConfigMap already says what it should.
 * docs/admission.md has the rules and the failure behaviour.
 */
#ifndef STEADFAST_ADMPARAMS_H
#define STEADFAST_ADMPARAMS_H

#include <stddef.h>
#include <uv.h>

#include "steadfast/awconfig.h"
#include "steadfast/buf.h"
#include "steadfast/client.h"
#include "steadfast/json.h"
#include "steadfast/prom.h"
#include "steadfast/strmap.h"
#include "steadfast/syncer.h"

#define SF_ADMPARAMS_MANAGER "steadfast"
#define SF_ADMPARAMS_NAME "steadfast-admission"

/* ---- the decisions, free of I/O ---- */

/* Adds to out the kind keys of one aggregated discovery answer
 * (APIGroupDiscoveryList, apidiscovery.k8s.io/v2, from /api or /apis):
 * for each namespaced resource that has the create verb, "Kind" (core
 * group) or "Kind.group" -> its resource name (values malloc'd, owned by
 * the map, free with free()). Versions are taken in the order listed (the
 * server lists the preferred first) and a key already in out is kept.
 * Keys or resource names that are not ConfigMap keys / resource names are
 * skipped. *stale (if not NULL) is incremented per group version marked
 * Stale, whose resources are skipped. 0, -EINVAL with err when doc is not
 * such a list, -ENOMEM. */
int sf_admparams_discovered(sf_jv doc, sf_strmap *out, int *stale, char *err, size_t errlen);
/* Puts the config keys of cfg into out, replacing what is there. 0 or -ENOMEM. */
int sf_admparams_config(const sf_aw_config *cfg, sf_strmap *out);

typedef struct sf_admparams_plan {
	size_t added, changed, removed;
	char first[256]; /* the first key added, changed or removed (sorted order) */
	sf_buf body;     /* the apply patch, when a write is needed */
} sf_admparams_plan;
void sf_admparams_plan_init(sf_admparams_plan *p);
void sf_admparams_plan_free(sf_admparams_plan *p);
/* Compares desired (key -> char *) with the ConfigMap cm as read: keys
 * missing or different are added or changed; keys that manager owns by
 * apply (metadata.managedFields) and desired lacks are removed, unless
 * keep_owned (a partial discovery), when they are sent again as they are.
 * Returns 1 with p->body set when a write is needed, 0 when cm already
 * agrees, -EINVAL when cm has no name or resourceVersion, -ENOMEM. */
int sf_admparams_plan_make(sf_admparams_plan *p, const sf_strmap *desired, sf_jv cm,
                           const char *manager, int keep_owned);

/* ---- the leader's passes ---- */

typedef struct sf_admparams sf_admparams;

typedef struct sf_admparams_opts {
	const sf_aw_config *cfg; /* borrowed, must outlive it */
	const char *ns;          /* the ConfigMap (copied) */
	const char *name;
	long interval_ms; /* between passes; 0 = 60 s */
} sf_admparams_opts;

typedef sf_syncer_stats sf_admparams_stats; /* passes by outcome */

/* client borrowed (writes pass its write gate). 0 and *out, -EINVAL, -ENOMEM. */
int sf_admparams_new(uv_loop_t *loop, sf_kube_client *client, const sf_admparams_opts *o,
                     sf_admparams **out);
/* Starts passes: one at once, then one per interval (when leading). */
void sf_admparams_run(sf_admparams *p);
/* Stops passes; a request in flight is cancelled (when leading ends). */
void sf_admparams_pause(sf_admparams *p);
/* Pauses, then frees once nothing is in flight; cb (may be NULL) then,
 * possibly before this returns. NULL p just calls cb. The loop part is
 * the shared syncer's (syncer.h). */
void sf_admparams_close(sf_admparams *p, void (*cb)(void *ud), void *ud);
void sf_admparams_stats_get(const sf_admparams *p, sf_admparams_stats *out);
/* steadfast_admission_params_syncs_total{result}; NULL p writes zeros. */
int sf_admparams_metrics_write(const sf_admparams *p, sf_prom *prom);

#endif
