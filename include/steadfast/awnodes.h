/*
 * awnodes.h - what a Node's health labels and state make unusable, for
 * Autopilot's node monitoring (upstream's NodeHealthMonitor), free of I/O.
 *
 * From one Node object and the autopilot config: the resources whose
 * NoExecute label value the node carries (a Running AppWrapper with a pod
 * there that uses one is to be evacuated, after a live read confirms the
 * label), and the capacity the node takes out of scheduling: all of it
 * (except pods) when the node is cordoned or tainted not-ready or
 * unreachable, else the capacity of each resource whose NoSchedule or
 * NoExecute label value it carries (what a slack ClusterQueue's
 * lendingLimit would follow). A NotReady node alone is never a reason to
 * evacuate, as upstream.
 */
#ifndef STEADFAST_AWNODES_H
#define STEADFAST_AWNODES_H

#include <stddef.h>

#include "steadfast/awconfig.h"
#include "steadfast/json.h"

#define SF_AWN_MAX_RESOURCES 32

typedef struct sf_awn_quantity {
	char resource[254];
	char quantity[64]; /* as the node's status.capacity writes it */
} sf_awn_quantity;

typedef struct sf_awn_health {
	/* resources with a NoExecute label value on the node, config order */
	char noexec[SF_AW_MAX_TAINTS][254];
	size_t nnoexec;
	int unschedulable; /* spec.unschedulable, or a not-ready/unreachable taint */
	/* capacity out of scheduling (see above); at most SF_AWN_MAX_RESOURCES */
	sf_awn_quantity nosched[SF_AWN_MAX_RESOURCES];
	size_t nnosched;
} sf_awn_health;

/* Fills *out from node (a Node object) and ap. 0, or -EINVAL when node is
 * not an object. */
int sf_awn_classify(sf_jv node, const sf_aw_autopilot *ap, sf_awn_health *out);
/* 1 when h lists resource among its NoExecute resources. */
int sf_awn_noexec_has(const sf_awn_health *h, const char *resource);
/* 1 when pod (a Pod object) is one upstream would evacuate from a node of
 * health h: Running, not being deleted, and a container (spec.containers,
 * as upstream) requests or limits a non-zero quantity of one of h's
 * NoExecute resources. */
int sf_awn_pod_affected(sf_jv pod, const sf_awn_health *h);
/* The fields of a Node the classification reads, with the object's
 * identity (sf_obj_project paths, NULL-terminated): all the node cache
 * keeps; the rest (images, conditions, nodeInfo, ...) can be most of a
 * real node. */
extern const char *const SF_AWN_FIELDS[];

#endif
