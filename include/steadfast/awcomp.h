/*
 * awcomp.h - an AppWrapper's components: their pod sets, and the object to
 * create for each.
 *
 * Everything here is pure: it reads the AppWrapper (a json.h view) and
 * returns numbers, pod sets or a jdoc.h tree; the caller does the I/O. The
 * rules are upstream's (project-codeflare/appwrapper v1.2, pkg/utils and
 * createComponent) so that Kueue, which reads pod sets and writes
 * podSetInfos, sees Steadfast exactly as it saw the Go controller:
 *
 *  - Pod sets are declared (spec.components[i].podSets, replicas nil = 1) or,
 *    when none are declared, inferred for the kinds upstream knows. Once
 *    status.componentStatus has one entry per component, its podSets are
 *    the definitive ones (upstream caches them there so later edits of the
 *    spec do not change what Kueue admitted).
 *  - A pod-set path starts with "template" (the component's template
 *    itself) followed by ".field" and "[index]" steps, e.g.
 *    "template.spec.replicatedJobs[0].template.spec.template".
 *  - Building a component decodes its template, defaults the namespace,
 *    labels object and pod templates, injects Kueue's podSetInfos and makes
 *    the AppWrapper the controller owner. Where upstream would panic on a
 *    malformed template (a pod template without a spec, tolerations that
 *    are not a list) we return a fatal error instead.
 *
 * Errors are negative errno values with a message in err (which names the
 * component by index, kind and name). Content errors are -EINVAL; running
 * out of memory is -ENOMEM.
 */
#ifndef STEADFAST_AWCOMP_H
#define STEADFAST_AWCOMP_H

#include <stddef.h>
#include <stdint.h>

#include "steadfast/awapi.h"
#include "steadfast/awconfig.h"
#include "steadfast/jdoc.h"
#include "steadfast/json.h"

#define SF_AWC_PATH_MAX 256 /* longest path + 1; longer declared paths are rejected */
#define SF_AWC_MAX_ANNOTS 3 /* inferred annotations per pod set */

typedef struct sf_awc_annot {
	const char *key; /* a static string (one of the SF_AWC_TAS_* keys) */
	char value[64];
} sf_awc_annot;

/* One homogeneous set of pods. Plain data: copy freely. annotations borrows
 * the text of the AppWrapper it was read from. */
typedef struct sf_awc_podset {
	int32_t replicas;
	char path[SF_AWC_PATH_MAX];
	size_t nannots; /* inferred annotations (declared pod sets: 0) */
	sf_awc_annot annots[SF_AWC_MAX_ANNOTS];
	sf_jv annotations; /* declared/status podSets[i].annotations, SF_JV_NONE if none */
} sf_awc_podset;

/*
 * Pod sets of a template by kind, in upstream's order:
 *   v1 Pod                          "template", 1
 *   apps/v1 Deployment, StatefulSet "template.spec.template", spec.replicas (nil = 1)
 *   batch/v1 Job                    "template.spec.template",
 *                                   min(parallelism (default 1), completions)
 *   jobset.x-k8s.io/v1alpha2 JobSet each replicatedJobs[i] with a template:
 *                                   replicas (default 1) x its Job's pod count
 *   kubeflow.org/v1 PyTorchJob      pytorchReplicaSpecs.Master, then .Worker
 *   ray.io/v1 RayCluster, RayJob    head (always, 1), then each worker group
 * Any other kind (LeaderWorkerSet included: upstream infers nothing for it)
 * has no inferred pod sets, which is not an error. Each pod set found must
 * lead to an object with a spec object.
 *
 * Writes up to cap pod sets to out and their number to *n. Returns 0;
 * -ENOSPC when there are more than cap (*n = how many there are); -EINVAL
 * (template not an object, a replica count that is not an int32, a pod set
 * that is not a pod template); -ENOMEM.
 */
int sf_awc_infer_podsets(sf_jv template, sf_awc_podset *out, size_t cap, size_t *n, char *err,
                         size_t errlen);

/* A component's own pod sets: spec.components[i].podSets if it has any
 * (replicas nil = 1; path required), else inferred from its template. */
int sf_awc_podsets(sf_jv component, sf_awc_podset *out, size_t cap, size_t *n, char *err,
                   size_t errlen);

/* The definitive pod sets of component index of AppWrapper aw: from
 * status.componentStatus[index].podSets when the status has one entry per
 * component (upstream's EnsureComponentStatusInitialized), else as
 * sf_awc_podsets. These are the ones build injects into and Kueue sees. */
int sf_awc_component_podsets(sf_jv aw, size_t index, sf_awc_podset *out, size_t cap, size_t *n,
                             char *err, size_t errlen);

/* Upstream's ExpectedPodCount: the sum of replicas over all components'
 * definitive pod sets. 0 or a negative errno. */
int sf_awc_expected_pods(sf_jv aw, int64_t *out, char *err, size_t errlen);
/* The same for component index alone: the pods it is expected to have. */
int sf_awc_component_expected_pods(sf_jv aw, size_t index, int64_t *out, char *err, size_t errlen);

/* 1 when objects of this kind never complete: their controller keeps their
 * pods running (replacing those that stop) until the object is deleted -
 * apps/v1 Deployment, StatefulSet, ReplicaSet and DaemonSet, v1
 * ReplicationController, LeaderWorkerSet, RayCluster (any version of
 * their group). An AppWrapper holding one that expects pods is never
 * Succeeded (docs/failure-semantics.md). */
int sf_awc_kind_never_completes(const char *api_version, const char *kind);

/* A pod set as componentStatus records it: {"replicas":N,"path":P} plus
 * "annotations" when it has any. NULL on -ENOMEM. Caller frees. */
sf_jd *sf_awc_podset_to_jd(const sf_awc_podset *ps);

/*
 * The object to create for spec.components[index], as upstream sends it:
 * the template with metadata.namespace defaulted to the AppWrapper's (a
 * different namespace is an error), SF_AW_LABEL added to its labels unless
 * already present, and for each definitive pod set (with podSetInfos[i],
 * when present):
 *   - the pod template's labels get SF_AW_LABEL and the info's labels,
 *     annotations and spec.nodeSelector the info's entries; an existing key
 *     with another value is an error naming the key;
 *   - tolerations are appended; scheduling gates appended unless one of
 *     the same name is there; spec.schedulerName is set to
 *     o->scheduler_name when that is non-empty and the template has none;
 *   - with o->autopilot and its inject_anti_affinities, a pod template
 *     whose containers or init containers request or limit a non-zero
 *     amount of a resource in its taints gets node anti-affinity: NotIn
 *     the NoSchedule and NoExecute label values (per label key, added to
 *     every nodeSelectorTerm of requiredDuringScheduling..., or to a new
 *     one), and one preferredDuringScheduling... term of the configured
 *     weight NotIn the PreferNoSchedule values; the template's own
 *     affinity is kept (upstream's injectAntiAffinities);
 * and finally metadata.ownerReferences with the AppWrapper as controller
 * (an existing controller that is not this AppWrapper is an error).
 *
 * On success *out is a new tree the caller frees (sf_jd_free) and *fatal = 0.
 * On error *out = NULL and *fatal says whether retrying cannot help (1 for
 * every content error, 0 for -ENOMEM). The template must have apiVersion,
 * kind and metadata.name or metadata.generateName; a generated name also
 * gets the annotation SF_AW_COMPONENT_INDEX (sf_awc_generated_match).
 */
/* 1 when a quantity string's number part has a non-zero digit ("500m",
 * "1Gi"; not "0", "0Gi", "0.0"): what upstream counts as a request, and
 * the node capacity that counts. */
int sf_awc_quantity_nonzero(const char *q);

typedef struct sf_awc_build_opts {
	const char *scheduler_name;       /* NULL / "" = none */
	const sf_aw_autopilot *autopilot; /* NULL = no anti-affinities */
} sf_awc_build_opts;
int sf_awc_build(sf_jv aw, size_t index, const sf_awc_build_opts *o, sf_jd **out, int *fatal,
                 char *err, size_t errlen);

/* The controller ownerReference of any object (first entry with
 * controller: true): 1 and *owner_ref_out set, or 0 (none). owner_ref_out
 * may be NULL. */
int sf_awc_controller_owner(sf_jv obj, sf_jv *owner_ref_out);

/* 1 if obj's controller owner has this UID, else 0. */
int sf_awc_owned_by(sf_jv obj, const char *uid);

/* The name a component template gives its object: 0 with the name in buf
 * (metadata.name), 1 with the prefix in buf (no name, metadata.generateName:
 * the API server chooses the rest at create), -EINVAL when it has neither
 * (or one that is not a string, or too long for buf). */
int sf_awc_template_name(sf_jv tmpl, char *buf, size_t n);

/* 1 when obj is component `index` of the AppWrapper with this UID as
 * sf_awc_build made it for a generated name: controlled by that UID and
 * annotated with that index. */
int sf_awc_generated_match(sf_jv obj, const char *awuid, size_t index);

#endif
