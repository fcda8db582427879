/*
 * informers.c - what the AppWrapper controller watches (ctl.h): the
 * handlers of its informers, which turn changes of AppWrappers, of their
 * components and pods, and of nodes into work queue keys, and the cache
 * transforms that keep only the fields the controller reads.
 *
 * Every replica runs these informers, so that a standby's caches are as
 * warm as the leader's; only a leader whose caches have passed this
 * term's barrier enqueues anything. The kinds an AppWrapper uses are
 * tracked from its informer, so a component kind is watched from the
 * first AppWrapper that names it. Nodes are watched only for Autopilot
 * (cfg.autopilot.monitor_nodes): a node that turns NoExecute brings back
 * the AppWrappers with pods on it, and what the node cache suggests is a
 * suspicion that a live read of the node must confirm before anyone
 * is evacuated.
 */
#include "ctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awnodes.h"
#include "steadfast/log.h"

const sf_gvr SF_AWCTL_GVR_NODES = {"", "v1", "nodes", 0};
/* pods by spec.nodeName, to find who a node change concerns */
#define NODE_INDEX "node"

/* ---- informer handlers ---- */

static void enqueue_key(sf_awctl *c, const char *key);

static int enqueue_each(void *ud, sf_obj *obj)
{
	if (obj->name[0])
		enqueue_key(ud, sf_obj_key(obj));
	return 0;
}

void sf_awctl_enqueue_all(sf_awctl *c)
{
	if (c->leading && c->aw_inf)
		sf_store_each(sf_informer_store(c->aw_inf), enqueue_each, c);
}

static void enqueue_key(sf_awctl *c, const char *key)
{
	if (!c->leading || !c->queue || c->fresh_term != c->term)
		return;
	sf_queue_add(c->queue, key);
}

static void enqueue_by_label(sf_awctl *c, const sf_obj *obj)
{
	char name[254], key[512];
	sf_jv labels = sf_jv_path(sf_obj_root(obj), "metadata.labels");
	if (sf_jv_str(sf_jv_get(labels, SF_AW_LABEL), name, sizeof(name)) <= 0)
		return;
	if (sf_cache_key(obj->ns, name, key, sizeof(key)) > 0)
		enqueue_key(c, key);
}

#define MAX_TRACKED 64 /* kinds one AppWrapper can make the registry watch */

static int add_pair(char (*api)[256], char (*kind)[128], size_t *n, sf_jv av, sf_jv kv)
{
	if (*n == MAX_TRACKED || sf_jv_str(av, api[*n], sizeof(api[0])) <= 0 ||
	    sf_jv_str(kv, kind[*n], sizeof(kind[0])) <= 0)
		return 0;
	for (size_t i = 0; i < *n; i++)
		if (strcmp(api[i], api[*n]) == 0 && strcmp(kind[i], kind[*n]) == 0)
			return 0;
	(*n)++;
	return 1;
}

/* Every replica: the kinds an AppWrapper uses (recorded in componentStatus,
 * and its templates') are watched, so a standby's component caches are as
 * warm as the leader's. */
static void track_kinds(sf_awctl *c, const sf_obj *obj)
{
	static char api[MAX_TRACKED][256], kind[MAX_TRACKED][128];
	const char *pairs[2 * MAX_TRACKED];
	size_t n = 0;
	if (!obj->name[0])
		return;
	const char *key = sf_obj_key(obj);
	sf_jv root = sf_obj_root(obj);
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(root, "status.componentStatus"));
	sf_jv v;
	while (sf_jv_next(&it, NULL, &v))
		add_pair(api, kind, &n, sf_jv_get(v, "apiVersion"), sf_jv_get(v, "kind"));
	it = sf_jv_iter_init(sf_jv_path(root, "spec.components"));
	while (sf_jv_next(&it, NULL, &v)) {
		sf_jv t = sf_jv_get(v, "template");
		add_pair(api, kind, &n, sf_jv_get(t, "apiVersion"), sf_jv_get(t, "kind"));
	}
	for (size_t i = 0; i < n; i++) {
		pairs[2 * i] = api[i];
		pairs[2 * i + 1] = kind[i];
	}
	if (sf_kinds_track(c->kinds, key, pairs, n) < 0)
		sf_log_error(LOGGER, "cannot track component kinds: out of memory", "namespace",
		             obj->ns, "name", obj->name, NULL);
}

static void aw_add(void *ud, sf_obj *obj)
{
	track_kinds(ud, obj);
	enqueue_each(ud, obj);
}

static void aw_update(void *ud, sf_obj *old, sf_obj *new_obj)
{
	(void)old;
	track_kinds(ud, new_obj);
	enqueue_each(ud, new_obj);
}

static void aw_delete(void *ud, sf_obj *obj)
{
	sf_awctl *c = ud;
	if (obj->name[0]) {
		const char *key = sf_obj_key(obj);
		sf_kinds_untrack(c->kinds, key);
		sf_awctl_mem_forget(c->mem, key);
	}
}

static void labelled_add(void *ud, sf_obj *obj)
{
	enqueue_by_label(ud, obj);
}

static void labelled_update(void *ud, sf_obj *old, sf_obj *new_obj)
{
	(void)old;
	enqueue_by_label(ud, new_obj);
}

static void labelled_delete(void *ud, sf_obj *obj)
{
	enqueue_by_label(ud, obj);
}

/* A kind became usable: its owners look again (only they). */
static void enqueue_owner(void *ud, const char *key)
{
	enqueue_key(ud, key);
}

static void kind_ready(void *ud, sf_kind *k)
{
	sf_awctl *c = ud;
	if (c->leading)
		sf_kinds_each_owner(c->kinds, k, enqueue_owner, c);
}

/* ---- nodes (Autopilot) ---- */

/* The node cache may raise evacuation suspicions once it holds a list
 * asked for since this term began: a cache behind that means waiting. */
int sf_awctl_nodes_fresh(const sf_awctl *c)
{
	return c->node_inf && sf_informer_synced(c->node_inf) &&
	       sf_reflector_list_asked_ns(sf_informer_reflector(c->node_inf)) >= c->lead_ns;
}

static int node_index(void *ud, const sf_obj *pod, sf_index_values *out)
{
	(void)ud;
	sf_jv n = sf_jv_path(sf_obj_root(pod), "spec.nodeName");
	if (sf_jv_type(n) != SF_JSON_STRING || n.n <= 2)
		return 0;
	return sf_index_values_add(out, n.p + 1, n.n - 2);
}

static int enqueue_pod(void *ud, sf_obj *pod)
{
	enqueue_by_label(ud, pod);
	return 0;
}

/* The AppWrappers with pods on node name: looked at again. */
static void enqueue_node(sf_awctl *c, const char *name)
{
	if (c->leading && c->fresh_term == c->term && sf_awctl_nodes_fresh(c))
		sf_store_index_each(sf_informer_store(c->pod_inf), NODE_INDEX, name, enqueue_pod,
		                    c);
}

static int same_noexec(const sf_awn_health *a, const sf_awn_health *b)
{
	if (a->nnoexec != b->nnoexec)
		return 0;
	for (size_t i = 0; i < a->nnoexec; i++)
		if (!sf_awn_noexec_has(b, a->noexec[i]))
			return 0;
	return 1;
}

static void node_add(void *ud, sf_obj *obj)
{
	sf_awctl *c = ud;
	sf_awn_health h;
	if (sf_awn_classify(sf_obj_root(obj), &c->cfg.autopilot, &h) == 0 && h.nnoexec > 0)
		enqueue_node(c, obj->name);
}

static void node_update(void *ud, sf_obj *old, sf_obj *new_obj)
{
	sf_awctl *c = ud;
	sf_awn_health a, b;
	if (sf_awn_classify(sf_obj_root(new_obj), &c->cfg.autopilot, &b) != 0 || b.nnoexec == 0)
		return;
	if (sf_awn_classify(sf_obj_root(old), &c->cfg.autopilot, &a) != 0 || !same_noexec(&a, &b))
		enqueue_node(c, new_obj->name);
}

static int node_synced_visit(void *ud, sf_obj *obj)
{
	node_add(ud, obj);
	return 0;
}

/* After each (re)list, the first one of a term included: every node with
 * a NoExecute value is looked at again. */
static void node_synced(void *ud)
{
	sf_awctl *c = ud;
	if (c->leading && c->fresh_term == c->term)
		sf_store_each(sf_informer_store(c->node_inf), node_synced_visit, c);
}

/* Adds to *ns (allocated on first use) the node of pod when it is one
 * health h says a pod like it must leave. */
int sf_awctl_note_noexec(sf_awp_nodes **ns, sf_jv pod, const sf_awn_health *h, const char *node)
{
	if (!sf_awn_pod_affected(pod, h))
		return 0;
	if (!*ns && !(*ns = calloc(1, sizeof(**ns))))
		return -ENOMEM;
	sf_awp_nodes_add(*ns, node);
	return 0;
}

static const sf_informer_handler node_handler = {node_add, node_update, NULL, node_synced};

/* ---- cache transforms ---- */

/* Pods: the phase machine's summary (sf_awp_pods_add: phase, deletion,
 * first failure's container, exit code, reason and message, the pod's
 * reason and message), Autopilot's check (sf_awn_pod_affected: the
 * containers' requests and limits, the node), the indexes (the
 * AppWrapper label, which is also the work queue's key, and the only
 * label kept; node), ownership (of each owner reference its uid and
 * whether it is the controller, all sf_awc_owned_by reads, and its
 * apiVersion, kind and name: which component the pod is,
 * sf_awp_pod_component) and the object's identity. */
const char *const SF_AWCTL_POD_FIELDS[] = {
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.resourceVersion",
    "metadata.labels.'" SF_AW_LABEL "'",
    "metadata.ownerReferences[].apiVersion",
    "metadata.ownerReferences[].kind",
    "metadata.ownerReferences[].name",
    "metadata.ownerReferences[].uid",
    "metadata.ownerReferences[].controller",
    "metadata.deletionTimestamp",
    "spec.nodeName",
    "spec.containers[].resources",
    "status.phase",
    "status.reason",
    "status.message",
    "status.containerStatuses[].name",
    "status.containerStatuses[].state.terminated",
    NULL,
};

/* Components: ownership (sf_awc_owned_by: of each owner reference its uid
 * and whether it is the controller), deletion, the conditions their kind
 * reports (Failed, Complete, Completed, Succeeded), the AppWrapper label
 * (the work queue's key; no other label is kept) and the identity. A
 * component's spec and its owner's kind and name are never read from the
 * cache (adoption and identity checks, and the message naming another
 * controller, read the object live). */
const char *const SF_AWCTL_COMPONENT_FIELDS[] = {
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.resourceVersion",
    "metadata.labels.'" SF_AW_LABEL "'",
    "metadata.ownerReferences[].uid",
    "metadata.ownerReferences[].controller",
    "metadata.deletionTimestamp",
    "status.conditions",
    NULL,
};

/* AppWrappers: the controller reads nearly all of one (the spec to build
 * its components, the status it carries on, the annotations, labels,
 * finalizers and deletion of its metadata), so their cache drops by name
 * only what nothing reads: managedFields, the type (the cache holds one
 * kind, and every owner reference, Event and request names it from
 * constants), creationTimestamp and generation (no step reads either;
 * conditions carry no observedGeneration). The status is never thinned:
 * merge patches replace its lists whole. */
const char *const SF_AWCTL_AW_OMIT[] = {
    "apiVersion",          "kind", "metadata.managedFields", "metadata.creationTimestamp",
    "metadata.generation", NULL,
};

static sf_obj *project_transform(void *ud, sf_obj *obj)
{
	return sf_obj_project(obj, ud);
}

static sf_obj *omit_transform(void *ud, sf_obj *obj)
{
	return sf_obj_omit(obj, ud);
}

static const sf_informer_handler aw_handler = {aw_add, aw_update, aw_delete, NULL};
static const sf_informer_handler labelled_handler = {labelled_add, labelled_update, labelled_delete,
                                                     NULL};

static int informer_for(sf_awctl *c, const sf_gvr *gvr, const char *selector, const char *name,
                        sf_informer **out)
{
	static const char *const label_idx[] = {SF_AW_LABEL, NULL};
	sf_informer_opts o = {0};
	o.reflector.gvr = gvr;
	o.reflector.ns = c->ns;
	o.reflector.label_selector = selector;
	o.reflector.name = name;
	/* a projection keeps only the fields it lists, managedFields never
	 * among them: stripping first would only copy each object once more */
	if (gvr == &SF_GVR_PODS) {
		o.reflector.transform = project_transform;
		o.reflector.transform_ud = (void *)SF_AWCTL_POD_FIELDS;
	} else if (gvr == &SF_GVR_APPWRAPPERS) {
		o.reflector.transform = omit_transform;
		o.reflector.transform_ud = (void *)SF_AWCTL_AW_OMIT;
	} else {
		o.reflector.strip_managed_fields = 1;
	}
	/* the lag is injected where it can mislead: components and pods (a
	 * lagging AppWrapper watch only delays, since the controller waits for
	 * its own writes to show up) */
	o.reflector.fault_event_delay_max_ms = selector ? c->fault_delay_ms : 0;
	if (gvr == &SF_GVR_PODS && c->fault_pod_delay_ms > 0) {
		o.reflector.fault_event_delay_max_ms = o.reflector.fault_event_delay_min_ms =
		    c->fault_pod_delay_ms;
		o.reflector.fault_coalesce_events = c->fault_coalesce_ms > 0;
	}
	o.reflector.fault_stall_after_ms = selector ? 0 : c->fault_stall_ms;
	o.reflector.progress_timeout_ms = c->fault_progress_ms;
	/* the pods' AppWrapper label index is read (the pods of an AppWrapper);
	 * no index is kept that nothing reads: each costs a node, a bucket and
	 * a table slot per object (about 160 bytes per pod or Job) */
	o.label_indexes = gvr == &SF_GVR_PODS ? label_idx : NULL;
	return sf_informer_new(c->loop, c->client, &o, out);
}

/* ---- the informers ---- */

/* The informers of every replica: component kinds (as AppWrappers use
 * them), AppWrappers, their pods and, for Autopilot, nodes. */
int sf_awctl_informers_new(sf_awctl *c)
{
	int rc;
	/* components are read by name (sf_store_get_ns) and their ownership
	 * from the object: their caches keep no index */
	sf_kinds_opts ko = {
	    .ns = c->ns,
	    .label_selector = SF_AW_LABEL,
	    .transform = project_transform, /* (managedFields goes with it) */
	    .transform_ud = (void *)SF_AWCTL_COMPONENT_FIELDS,
	    .fault_event_delay_max_ms =
	        c->fault_comp_delay_ms > 0 ? c->fault_comp_delay_ms : c->fault_delay_ms,
	    .fault_event_delay_min_ms = c->fault_comp_delay_ms,
	    .fault_coalesce_events = c->fault_coalesce_ms > 0,
	    .handler = &labelled_handler,
	    .handler_ud = c,
	    .on_ready = kind_ready,
	    .ud = c,
	};
	if ((rc = sf_kinds_new(c->loop, c->client, &ko, &c->kinds)) < 0)
		return rc;
	if ((rc = informer_for(c, &SF_GVR_APPWRAPPERS, NULL, SF_AW_RESOURCE, &c->aw_inf)) < 0 ||
	    (rc = informer_for(c, &SF_GVR_PODS, SF_AW_LABEL, "pods", &c->pod_inf)) < 0 ||
	    (rc = sf_informer_add_handler(c->aw_inf, &aw_handler, c)) < 0 ||
	    (rc = sf_informer_add_handler(c->pod_inf, &labelled_handler, c)) < 0)
		return rc;
	if (c->cfg.autopilot.monitor_nodes) {
		sf_informer_opts no = {0};
		no.reflector.gvr = &SF_AWCTL_GVR_NODES;
		no.reflector.name = "nodes";
		no.reflector.transform = project_transform;
		no.reflector.transform_ud = (void *)SF_AWN_FIELDS;
		no.reflector.progress_timeout_ms = c->fault_progress_ms;
		if ((rc = sf_store_add_index(sf_informer_store(c->pod_inf), NODE_INDEX, node_index,
		                             NULL)) < 0 ||
		    (rc = sf_informer_new(c->loop, c->client, &no, &c->node_inf)) < 0 ||
		    (rc = sf_informer_add_handler(c->node_inf, &node_handler, c)) < 0)
			return rc;
	}
	return 0;
}
