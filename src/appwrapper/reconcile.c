/*
 * reconcile.c - the reconcile of one AppWrapper key, the queue's
 * callback (ctl.h).
 *
 * A reconcile of one key: read the AppWrapper from the cache (skipped while
 * the cache is older than this controller's own last write to it), gather
 * observations of its components (cache + expectations + live reads) and
 * pods, run the pure phase machine, then carry out its plan in this order:
 * the one metadata or status write (a merge patch carrying the
 * resourceVersion the plan was made from, so nothing newer is clobbered),
 * then - only if that write landed - events and actions. Results of actions
 * are remembered per AppWrapper and fed into the next step.
 *
 * Destructive actions are guarded by what this controller can prove:
 * components are deleted only when the object of that name is controlled by
 * this AppWrapper's UID, with a UID precondition, so a late or repeated
 * delete can never remove an object that replaced ours; a component
 * missing from the cache is confirmed with a live GET before the machine
 * may fail the AppWrapper for it, and a NoExecute node (Autopilot) with a
 * live GET of the node before the machine may evacuate from it.
 *
 * Here: reading the AppWrapper, observing its components
 * (observe_components) and pods, and running the phase machine;
 * executor.c carries out the plan it returns.
 */
#include "ctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awcomp.h"
#include "steadfast/log.h"

#define NOT_READY_RETRY_MS 200
#define KIND_SYNC_WAIT_MS 10000

typedef struct comp_visit {
	sf_awp_pods *pods;
	sf_jv comp_status;  /* status.componentStatus */
	sf_awp_comp *comps; /* its components, for their succeeded pods */
	size_t ncomp;
	const char *ns;
	const sf_aw_settings *s;
	sf_awctl *c;
	int nodes;            /* the node cache may raise suspicions */
	sf_awp_nodes *noexec; /* allocated on the first suspect */
	int oom;
} comp_visit;

static int observe_components(sf_awctl *c, op *o, aw_mem *m, sf_awp_comp *comps, size_t n);
static int pod_visit_fn(void *ud, sf_obj *pod);
static int comp_recorded(sf_jv cs);
static void step(sf_awctl *c, op *o, aw_mem *m);
static void note_stale_reads(sf_awctl *c, sf_obj *aw, const sf_awp_comp *comps, size_t n);
static void note_plan(sf_awctl *c, const op *o);

void sf_awctl_process(void *ud, const char *key)
{
	sf_awctl *c = ud;
	if (!c->leading || c->stopping) {
		sf_queue_done(c->queue, key);
		return;
	}
	sf_obj *aw = sf_store_get(sf_informer_store(c->aw_inf), key);
	if (!aw) {
		sf_awctl_mem_forget(c->mem, key);
		sf_queue_forget(c->queue, key);
		sf_queue_done(c->queue, key);
		return;
	}
	op *o = sf_awctl_op_new(c, key, aw);
	if (!o) {
		sf_queue_add_rate_limited(c->queue, key);
		sf_queue_done(c->queue, key);
		return;
	}

	aw_mem *m = sf_awctl_op_mem(o);
	if (!m) {
		o->failed = 1;
		sf_awctl_op_finish(o);
		return;
	}
	uint64_t seen;
	if (m->written_rv && sf_rv_number(aw->rv, &seen) == 0 && seen < m->written_rv) {
		/* our own last write is not in the cache yet: its event will
		 * bring this key back */
		sf_awctl_op_finish(o);
		return;
	}
	step(c, o, m);
}

/* One step of o's AppWrapper with its memory m: observe, run the phase
 * machine, and have its plan carried out. */
static void step(sf_awctl *c, op *o, aw_mem *m)
{
	sf_obj *aw = o->aw;
	char err[512];
	sf_aw_settings s;
	sf_aw_settings_resolve(&c->cfg, sf_jv_path(sf_obj_root(aw), "metadata.annotations"), &s);
	if (s.warning[0])
		sf_log_debug(LOGGER, "malformed annotation; using the default", "namespace", aw->ns,
		             "name", aw->name, "detail", s.warning, NULL);
	size_t n = sf_jv_len(sf_jv_path(sf_obj_root(aw), "status.componentStatus"));
	sf_awp_comp *comps = n ? calloc(n, sizeof(*comps)) : NULL;
	if (n && !comps) {
		o->failed = 1;
		sf_awctl_op_finish(o);
		return;
	}
	if (observe_components(c, o, m, comps, n)) {
		free(comps);
		o->plan.requeue_ms = NOT_READY_RETRY_MS;
		sf_awctl_op_finish(o);
		return;
	}
	note_stale_reads(c, aw, comps, n);
	sf_awp_pods pods = {0};
	comp_visit v = {.pods = &pods,
	                .comp_status = sf_jv_path(sf_obj_root(aw), "status.componentStatus"),
	                .comps = comps,
	                .ncomp = n,
	                .ns = aw->ns,
	                .s = &s,
	                .c = c,
	                .nodes = sf_awctl_nodes_fresh(c)};
	for (size_t i = 0; m->live_pods && i < n && i < m->live_pods->ncomp; i++)
		comps[i].live_succeeded = m->live_pods->succeeded[i];
	sf_store_index_each(sf_informer_store(c->pod_inf), SF_AW_LABEL, aw->name, pod_visit_fn, &v);
	o->noexec = v.noexec;
	if (v.oom) {
		free(comps);
		o->failed = 1;
		sf_awctl_op_finish(o);
		return;
	}
	int64_t expected = 0;
	if (n && sf_awc_expected_pods(sf_obj_root(aw), &expected, err, sizeof(err)) < 0)
		expected = 0;
	sf_awp_input in = {
	    .aw = sf_obj_root(aw),
	    .cfg = &c->cfg,
	    .s = &s,
	    .now_ms = wall_ms(),
	    .comp = comps,
	    .ncomp = n,
	    .pods = &pods,
	    .expected_pods = expected,
	    .live_pods = m->live_pods ? &m->live_pods->lp : NULL,
	    .deletes_acked = m->deletes_acked,
	    .noexec = o->noexec,
	    .noexec_live = m->noexec_live,
	};
	int rc = sf_awp_step(&in, &o->plan, err, sizeof(err));
	/* news for this step only; kept by the op for a DELETE_PODS of what
	 * it found */
	o->live_pods = m->live_pods;
	m->live_pods = NULL;
	free(comps);
	free(m->noexec_live);
	m->noexec_live = NULL;
	if (rc < 0) {
		sf_log_error(LOGGER, "cannot reconcile", "namespace", aw->ns, "name", aw->name,
		             "error", rc == -ENOMEM ? "out of memory" : err, NULL);
		o->failed = 1;
		sf_awctl_op_finish(o);
		return;
	}
	note_plan(c, o);
	sf_awctl_execute(o);
}

/* While Running, each component the cache does not show: what upstream's
 * cache-only count would call missing (counted and logged only). */
static void note_stale_reads(sf_awctl *c, sf_obj *aw, const sf_awp_comp *comps, size_t n)
{
	if (sf_aw_phase_parse(sf_jv_path(sf_obj_root(aw), "status.phase")) == SF_AW_RUNNING)
		for (size_t i = 0; i < n; i++)
			if (comps[i].cached.state != SF_AWP_COMP_PRESENT) {
				/* what upstream's count would call missing */
				c->st.stale_reads++;
				sf_log_debug(
				    LOGGER,
				    "component not in the cache while Running; a cache-only "
				    "count would call it missing",
				    "namespace", aw->ns, "name", aw->name, "state",
				    comps[i].cached.state == SF_AWP_COMP_PENDING
				        ? "created, not seen yet"
				        : "absent",
				    NULL);
			}
}

/* What a plan held back or did that the logs and counters tell. */
static void note_plan(sf_awctl *c, const op *o)
{
	const sf_obj *aw = o->aw;
	if (o->plan.suppressed_pods) {
		c->st.pods_suppressed++;
		sf_log_info(LOGGER, "too few pods in the cache, a live list disagrees: not acting",
		            "namespace", aw->ns, "name", aw->name, "reason", o->plan.why, NULL);
	}
	if (o->plan.suppressed_evacuation)
		sf_log_debug(LOGGER, "NoExecute nodes in the node cache, not in live reads",
		             "namespace", aw->ns, "name", aw->name, NULL);
	if (o->plan.evacuated) {
		c->st.evacuations++;
		sf_log_info(LOGGER, "evacuating from NoExecute nodes", "namespace", aw->ns, "name",
		            aw->name, NULL);
	}
	if (o->plan.suppressed_missing)
		sf_log_debug(LOGGER, "component not in the cache; not acting on it yet",
		             "namespace", aw->ns, "name", aw->name, NULL);
}

/* Fills comps[] from the caches and memory. Returns 0, or 1 when a kind is
 * not ready yet (try again shortly). */
static int observe_components(sf_awctl *c, op *o, aw_mem *m, sf_awp_comp *comps, size_t n)
{
	sf_jv css = sf_jv_path(sf_obj_root(o->aw), "status.componentStatus");
	int64_t now_mono = mono_ms();
	for (size_t i = 0; i < n; i++) {
		sf_jv cs = sf_jv_at(css, i);
		char api[256], kind[128], name[254];
		comp_mem *cm = &m->comp[i];
		sf_awp_comp *oc = &comps[i];
		memset(oc, 0, sizeof(*oc));
		oc->create = cm->create;
		oc->create_msg = cm->create_msg ? cm->create_msg : "";
		oc->live = cm->live; /* evidence: news for this step only */
		cm->live = (sf_awp_confirmed){0};
		oc->delete_gone = cm->delete_gone;
		if (cm->created_name && comp_recorded(cs) &&
		    sf_jv_streq(sf_jv_get(cs, "name"), cm->created_name))
			sf_awctl_created_name_set(cm, NULL); /* the status has it */
		oc->created_name = cm->created_name;
		/* an empty name: a generated one not recorded yet (the cache
		 * cannot be asked; creates and deletions look it up live) */
		if (sf_jv_str(sf_jv_get(cs, "apiVersion"), api, sizeof(api)) <= 0 ||
		    sf_jv_str(sf_jv_get(cs, "kind"), kind, sizeof(kind)) <= 0 ||
		    sf_jv_str(sf_jv_get(cs, "name"), name, sizeof(name)) < 0)
			continue;
		sf_kind *k = sf_kinds_get(c->kinds, api, kind);
		if (!k || sf_kind_get_state(k) == SF_KIND_RESOLVING)
			return 1;
		if (!sf_awctl_kind_served(k)) {
			/* not served or cannot say: no evidence either way */
			oc->unresolved = 1;
			oc->unresolved_msg = sf_kind_error(k);
			oc->confirmed_ms = cm->confirmed_ms;
			if (cm->create == SF_AWP_CREATE_RETRYABLE || comp_recorded(cs))
				cm->create = SF_AWP_CREATE_NONE;
			continue;
		}
		sf_informer *kinf = sf_kind_informer(k);
		if (!kinf)
			return 1; /* (tracked from the AppWrapper informer: starting) */
		if (!sf_informer_synced(kinf)) {
			/* Wait for the first list a while; a kind that cannot be
			 * listed (no RBAC) is then observed as absent: creates
			 * and live reads report the real error, and an absent
			 * component never fails anything without a live read. */
			if (mono_ms() - sf_kind_started_ms(k) < KIND_SYNC_WAIT_MS)
				return 1;
			oc->cached.state = SF_AWP_COMP_ABSENT;
			oc->confirmed_ms = cm->confirmed_ms;
			if (cm->create == SF_AWP_CREATE_RETRYABLE || comp_recorded(cs))
				cm->create = SF_AWP_CREATE_NONE;
			continue;
		}
		const char *cc = sf_awctl_kind_complete_cond(k);
		oc->completion_known = cc != NULL;
		/* what the cache shows is a suspicion (awphase.h) */
		sf_obj *obj =
		    name[0] ? sf_store_get_ns(sf_informer_store(kinf), o->aw->ns, name) : NULL;
		if (obj && sf_awctl_uid_is(cm->deleted_uid, obj->uid)) {
			/* the incarnation we deleted, not yet gone from the cache:
			 * it must not count as the component */
			oc->cached.state = SF_AWP_COMP_PRESENT;
			oc->cached.deleting = 1;
		} else if (obj && sf_awc_owned_by(sf_obj_root(obj), o->aw->uid)) {
			sf_jv root = sf_obj_root(obj);
			oc->cached.state = SF_AWP_COMP_PRESENT;
			oc->cached.deleting =
			    sf_jv_ok(sf_jv_path(root, "metadata.deletionTimestamp"));
			oc->cached.failed =
			    sf_awctl_kind_reports_failed(k) && sf_awctl_cond_true(root, "Failed");
			oc->cached.complete = cc && sf_awctl_cond_true(root, cc);
			if (!oc->cached.deleting)
				cm->confirmed_ms = wall_ms(); /* only ever delays a step */
			sf_awctl_expect_seen(cm, obj->uid);
		} else if (sf_awctl_expect_pending(cm, now_mono, c->expect_timeout_ms)) {
			oc->cached.state = SF_AWP_COMP_PENDING;
		} else {
			oc->cached.state = SF_AWP_COMP_ABSENT;
		}
		oc->confirmed_ms = cm->confirmed_ms;
		/* A create outcome is news for the next step only: a retryable
		 * error is reported once (the step after tries again), and a
		 * success once the status records it. */
		if (cm->create == SF_AWP_CREATE_RETRYABLE || comp_recorded(cs))
			cm->create = SF_AWP_CREATE_NONE;
	}
	return 0;
}

static int pod_visit_fn(void *ud, sf_obj *pod)
{
	comp_visit *v = ud;
	if (strcmp(pod->ns, v->ns) != 0)
		return 0;
	sf_jv root = sf_obj_root(pod);
	sf_awp_pods_add(v->pods, root, v->s);
	int own = sf_awctl_succeeded_of(root, v->comp_status);
	if (own >= 0 && (size_t)own < v->ncomp)
		v->comps[own].succeeded++;
	char node[254];
	if (!v->nodes || sf_jv_str(sf_jv_path(root, "spec.nodeName"), node, sizeof(node)) <= 0)
		return 0;
	sf_obj *n = sf_store_get(sf_informer_store(v->c->node_inf), node);
	sf_awn_health h;
	if (n && sf_awn_classify(sf_obj_root(n), &v->c->cfg.autopilot, &h) == 0 &&
	    sf_awctl_note_noexec(&v->noexec, root, &h, node) < 0)
		v->oom = 1;
	return 0;
}

/* ---- what a component's kind and a pod say ---- */

/* What the controller knows of a kind's own status reports. */
int sf_awctl_kind_reports_failed(const sf_kind *k)
{
	const char *a = sf_kind_api_version(k), *n = sf_kind_name(k);
	return (strcmp(a, "batch/v1") == 0 && strcmp(n, "Job") == 0) ||
	       (strcmp(a, "kubeflow.org/v1") == 0 && strcmp(n, "PyTorchJob") == 0);
}

/* The condition by which kind k reports its own completion, or NULL. */
const char *sf_awctl_kind_complete_cond(const sf_kind *k)
{
	const char *a = sf_kind_api_version(k), *n = sf_kind_name(k);
	if (strcmp(a, "batch/v1") == 0 && strcmp(n, "Job") == 0)
		return "Complete";
	if (strncmp(a, "jobset.x-k8s.io/", 16) == 0 && strcmp(n, "JobSet") == 0)
		return "Completed";
	if (strcmp(a, "kubeflow.org/v1") == 0 && strcmp(n, "PyTorchJob") == 0)
		return "Succeeded";
	return NULL;
}

int sf_awctl_kind_served(const sf_kind *k)
{
	return sf_kind_get_state(k) == SF_KIND_SERVED && sf_kind_gvr(k);
}

/* 1 if obj's status.conditions has `type` with status True. */
int sf_awctl_cond_true(sf_jv obj, const char *type)
{
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(obj, "status.conditions"));
	sf_jv cd;
	while (sf_jv_next(&it, NULL, &cd))
		if (sf_jv_streq(sf_jv_get(cd, "type"), type) &&
		    sf_jv_streq(sf_jv_get(cd, "status"), "True"))
			return 1;
	return 0;
}

/* 1 if componentStatus entry cs already says ResourcesDeployed=True. */
static int comp_recorded(sf_jv cs)
{
	sf_jv_iter it = sf_jv_iter_init(sf_jv_get(cs, "conditions"));
	sf_jv cd;
	while (sf_jv_next(&it, NULL, &cd))
		if (sf_jv_streq(sf_jv_get(cd, "type"), "ResourcesDeployed"))
			return sf_jv_streq(sf_jv_get(cd, "status"), "True");
	return 0;
}

/* The component a Succeeded pod is its own (sf_awp_pod_component: the
 * phase machine counts each component's up to what it expects); -1 for
 * a pod that is not Succeeded, or no component's. */
int sf_awctl_succeeded_of(sf_jv pod, sf_jv comp_status)
{
	if (!sf_jv_streq(sf_jv_path(pod, "status.phase"), "Succeeded"))
		return -1;
	return sf_awp_pod_component(pod, comp_status);
}
