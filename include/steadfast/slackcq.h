/*
 * slackcq.h - the leader keeps the lendingLimit of a slack ClusterQueue
 * (appwrapper.slackQueueName) in step with what Autopilot's node health
 * takes out of scheduling, as upstream's SlackClusterQueueMonitor.
 *
 * Kueue lends a ClusterQueue's unused nominal quota to the other queues
 * of its cohort up to its lendingLimit. A slack queue holds the spare
 * capacity of a cluster; when nodes are cordoned, not ready, or labelled
 * by Autopilot as unhealthy for a resource (a NoSchedule or NoExecute
 * taint of the config), that capacity does not exist, and lending it
 * would admit workloads that cannot run. So, for the first flavor of the
 * first resource group of that ClusterQueue, each resource's lendingLimit
 * is nominalQuota minus the unusable amount summed over every node (0 when
 * that is more than the quota), and there is no lendingLimit for a
 * resource none of which is unusable.
 *
 * Writes are one JSON Patch (RFC 6902) guarded by `test` operations on
 * the resourceVersion read and on the name of each resource entry
 * touched, so a ClusterQueue edited meanwhile is read again, never
 * overwritten blindly; nothing is written when the limits are already
 * right (compared as quantities, "8" equals "8000m"). An absent
 * ClusterQueue is nothing to do. docs/operations.md has the rules.
 */
#ifndef STEADFAST_SLACKCQ_H
#define STEADFAST_SLACKCQ_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "steadfast/awconfig.h"
#include "steadfast/awnodes.h"
#include "steadfast/buf.h"
#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/json.h"
#include "steadfast/prom.h"
#include "steadfast/syncer.h"

/* Distinct resources summed over the nodes, and entries of a flavor
 * (Kueue allows 64 of either). */
#define SF_SLACKCQ_MAX_RESOURCES 64

/* ---- the decisions, free of I/O ---- */

typedef struct sf_slackcq_amount {
	char resource[254];
	int64_t milli;
} sf_slackcq_amount;

/* The capacity out of scheduling, summed over nodes. */
typedef struct sf_slackcq_unusable {
	sf_slackcq_amount r[SF_SLACKCQ_MAX_RESOURCES];
	size_t n;
	size_t skipped; /* quantities not counted: unparsable, overflowing, or no room */
} sf_slackcq_unusable;

void sf_slackcq_unusable_init(sf_slackcq_unusable *u);
/* Adds one node's nosched quantities (zeros add nothing). Returns the
 * number of quantities skipped (also added to u->skipped), 0 when all
 * were counted. */
size_t sf_slackcq_unusable_add(sf_slackcq_unusable *u, const sf_awn_health *h);
/* The unusable amount of resource, 0 when none. */
int64_t sf_slackcq_unusable_get(const sf_slackcq_unusable *u, const char *resource);

/* 1 when a Node's change (old or new_obj NULL: added, deleted) changes
 * what it takes out of scheduling under ap: when a pass is worth asking
 * for (sf_slackcq_kick). */
int sf_slackcq_node_changed(const sf_obj *old, const sf_obj *new_obj, const sf_aw_autopilot *ap);

/* One resource entry whose lendingLimit is to change. */
typedef struct sf_slackcq_change {
	char resource[254];
	size_t index;      /* in resourceGroups[0].flavors[0].resources */
	int had, has;      /* a lendingLimit before, after */
	int64_t old_milli; /* when had */
	int64_t new_milli; /* when has */
	int64_t nominal_milli;
} sf_slackcq_change;

typedef struct sf_slackcq_plan {
	char flavor[254]; /* resourceGroups[0].flavors[0].name */
	sf_slackcq_change ch[SF_SLACKCQ_MAX_RESOURCES];
	size_t nch;
	sf_buf body; /* the JSON Patch, when a write is needed */
} sf_slackcq_plan;
void sf_slackcq_plan_init(sf_slackcq_plan *p);
void sf_slackcq_plan_free(sf_slackcq_plan *p);
/* Compares the lendingLimits of ClusterQueue cq (as read) with what u
 * makes them. Returns 1 with p->body set to the JSON Patch when a write is
 * needed, 0 when cq already agrees, -EINVAL with err naming the field when
 * cq is malformed (no resourceVersion, no resourceGroups[0].flavors[0],
 * a resource without a name, a nominalQuota or lendingLimit that is not a
 * quantity), -ENOMEM. */
int sf_slackcq_plan_make(sf_slackcq_plan *p, sf_jv cq, const sf_slackcq_unusable *u, char *err,
                         size_t errlen);
/* "gpu 8->4, cpu none->12" into buf: the plan's changes for a log line. */
const char *sf_slackcq_plan_str(const sf_slackcq_plan *p, char *buf, size_t n);

/* ---- the leader's passes ---- */

typedef struct sf_slackcq sf_slackcq;

typedef struct sf_slackcq_opts {
	const char *name;                 /* the ClusterQueue (copied) */
	const sf_aw_autopilot *autopilot; /* borrowed, must outlive it */
	sf_store *nodes;                  /* the Node cache, borrowed */
	/* When set, passes wait until it returns 1 (the Node cache synced):
	 * a partial cache would lend capacity that does not exist. */
	int (*nodes_synced)(void *ud);
	void *nodes_ud;
	long interval_ms; /* between passes; 0 = 30 s */
	long kick_ms;     /* how soon a kick runs a pass; 0 = 500 ms */
} sf_slackcq_opts;

typedef sf_syncer_stats sf_slackcq_stats; /* passes by outcome */

/* client borrowed (writes pass its write gate). 0 and *out, -EINVAL, -ENOMEM. */
int sf_slackcq_new(uv_loop_t *loop, sf_kube_client *client, const sf_slackcq_opts *o,
                   sf_slackcq **out);
/* Starts passes: one at once, then one per interval (when leading). */
void sf_slackcq_run(sf_slackcq *s);
/* Asks for a pass within kick_ms (coalesced; nothing when not running):
 * the nodes' health changed. */
void sf_slackcq_kick(sf_slackcq *s);
/* Kicks whenever a change of a Node of nodes (the informer whose store
 * is opts.nodes) matters (sf_slackcq_node_changed): its handlers, called
 * until the informer stops, which must be before s is freed. 0 or
 * -ENOMEM. */
int sf_slackcq_watch(sf_slackcq *s, sf_informer *nodes);
/* Stops passes; a request in flight is cancelled (when leading ends). */
void sf_slackcq_pause(sf_slackcq *s);
/* Pauses, then frees once nothing is in flight; cb (may be NULL) then,
 * possibly before this returns. NULL s just calls cb. The loop part is
 * the shared syncer's (syncer.h). */
void sf_slackcq_close(sf_slackcq *s, void (*cb)(void *ud), void *ud);
void sf_slackcq_stats_get(const sf_slackcq *s, sf_slackcq_stats *out);
/* steadfast_slack_queue_syncs_total{result}; NULL s writes zeros. */
int sf_slackcq_metrics_write(const sf_slackcq *s, sf_prom *prom);

#endif
