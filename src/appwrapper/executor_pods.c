/*
 * executor_pods.c - the executor's actions on pods and nodes (ctl.h): the
 * live LIST of an AppWrapper's pods the phase machine asks for before it
 * resets, succeeds or ends a deletion on what the pod cache shows, the
 * forceful DELETE of the pods that list found, and the live reads of the
 * nodes the node cache says are NoExecute before an evacuation (Autopilot).
 *
 * Like every action (executor.c), each is a request counted in its op;
 * what it learns is handed to the AppWrapper's memory for the next step
 * only. Pods are deleted with their UID as precondition, and only those a
 * live list found, never the cache's.
 */
#include "ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/log.h"

/* -- live pod list (evidence for resets, success and the end of a deletion) -- */

static int pod_list_add(void *ud, const sf_obj *pod)
{
	req *r = ud;
	live_pods *l = r->pl;
	sf_awp_pods_add(&l->lp.pods, sf_obj_root(pod), &l->s);
	int own = sf_awctl_succeeded_of(
	    sf_obj_root(pod), sf_jv_path(sf_obj_root(r->o->aw), "status.componentStatus"));
	if (own >= 0 && (size_t)own < l->ncomp)
		l->succeeded[own]++;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		pod_ref *nr = realloc(l->refs, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		l->refs = nr;
		l->cap = cap;
	}
	pod_ref *pr = &l->refs[l->n];
	if (!(pr->name = strdup(pod->name)))
		return -ENOMEM;
	snprintf(pr->uid, sizeof(pr->uid), "%s", pod->uid);
	l->n++;
	return 0;
}

/* One pod of the live LIST (owned: released here). */
static int pod_list_item(void *ud, sf_obj *pod)
{
	int rc = pod_list_add(ud, pod);
	sf_obj_unref(pod);
	return rc;
}

static void pod_list_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	aw_mem *m = sf_awctl_op_mem(o);
	if (!sf_kube_ok(res)) {
		sf_awctl_log_result("live list of pods failed", o, res);
		o->failed = 1;
	} else if (m) {
		sf_awctl_live_pods_free(m->live_pods);
		m->live_pods = r->pl; /* handed over */
		r->pl = NULL;
		m->live_pods->lp.answered_ms = wall_ms();
		o->c->st.pod_lists++;
		o->results++;
	}
	sf_awctl_op_req_done(o);
}

void sf_awctl_start_list_pods(op *o)
{
	sf_awctl *c = o->c;
	req *r = sf_awctl_req_new(c, o, pod_list_done);
	char sel[512];
	size_t n = sf_jv_len(sf_jv_path(sf_obj_root(o->aw), "status.componentStatus"));
	if (r)
		r->pl = calloc(1, sizeof(*r->pl));
	if (r && r->pl && n) {
		r->pl->succeeded = calloc(n, sizeof(*r->pl->succeeded));
		r->pl->ncomp = r->pl->succeeded ? n : 0;
	}
	if (!r || !r->pl || (n && !r->pl->succeeded) ||
	    snprintf(sel, sizeof(sel), "%s=%s", SF_AW_LABEL, o->aw->name) >= (int)sizeof(sel)) {
		sf_awctl_req_free(r);
		o->failed = 1;
		return;
	}
	sf_aw_settings_resolve(&c->cfg, sf_jv_path(sf_obj_root(o->aw), "metadata.annotations"),
	                       &r->pl->s);
	r->pl->lp.asked = ev_tick(c);
	sf_kube_list_opts lo = {.label_selector = sel};
	if (sf_awctl_op_track(o, r,
	                      sf_kube_list(c->client, &SF_GVR_PODS, o->aw->ns, &lo, pod_list_item,
	                                   sf_awctl_req_cb, r, &r->call)) < 0)
		o->failed = 1;
}

static void pod_delete_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	aw_mem *m = sf_awctl_op_mem(o);
	if (sf_kube_ok(res))
		sf_awctl_write_acked(o->c, "pod delete");
	if (sf_kube_ok(res) && m)
		m->deletes_acked = ev_tick(o->c);
	else if (!sf_kube_ok(res) && !sf_kube_is_not_found(res) && !sf_kube_is_conflict(res))
		sf_awctl_log_result("forceful pod delete failed", o, res);
	sf_awctl_op_req_done(o);
}

/* Deletes, grace period 0 and each with its UID as precondition, the pods
 * the live list this step read found: never the cache's, which may miss
 * some. */
void sf_awctl_delete_listed_pods(op *o)
{
	const live_pods *l = o->live_pods;
	for (size_t i = 0; l && i < l->n; i++) {
		req *r = sf_awctl_req_new(o->c, o, pod_delete_done);
		if (!r) {
			o->failed = 1;
			return;
		}
		sf_kube_delete_opts d = {.precond_uid = l->refs[i].uid, .grace_seconds = 0};
		if (sf_awctl_op_track(o, r,
		                      sf_kube_delete(o->c->client, &SF_GVR_PODS, o->aw->ns,
		                                     l->refs[i].name, &d, sf_awctl_req_cb, r,
		                                     &r->call)) < 0)
			o->failed = 1;
	}
}

/* -- live node reads (evacuation check) -- */

typedef struct node_pods {
	const char *ns, *node;
	const sf_awn_health *h;
	sf_awp_nodes **out;
	int oom;
} node_pods;

static int node_pod_visit(void *ud, sf_obj *pod)
{
	node_pods *v = ud;
	sf_jv root = sf_obj_root(pod);
	if (strcmp(pod->ns, v->ns) == 0 &&
	    sf_jv_streq(sf_jv_path(root, "spec.nodeName"), v->node) &&
	    sf_awctl_note_noexec(v->out, root, v->h, v->node) < 0)
		v->oom = 1;
	return 0;
}

static void node_read_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	sf_awn_health h;
	if (sf_kube_ok(res) && res->obj &&
	    sf_awn_classify(sf_obj_root(res->obj), &o->c->cfg.autopilot, &h) == 0) {
		/* the live node judged against the pods this AppWrapper has
		 * there: the label must still be on it */
		node_pods v = {o->aw->ns, r->name, &h, &o->noexec_live, 0};
		sf_store_index_each(sf_informer_store(o->c->pod_inf), SF_AW_LABEL, o->aw->name,
		                    node_pod_visit, &v);
		if (v.oom)
			o->node_read_failed = 1;
	} else if (!sf_kube_is_absent(res, r->name)) {
		/* a node deleted since holds none of our pods any more; any
		 * other answer says nothing */
		sf_awctl_log_result("live read of a node failed", o, res);
		o->node_read_failed = 1;
	}
	if (--o->node_reads == 0) {
		aw_mem *m = sf_awctl_op_mem(o);
		if (o->node_read_failed) {
			o->failed = 1;
		} else if (m) {
			if (!o->noexec_live)
				o->noexec_live = calloc(1, sizeof(*o->noexec_live));
			if (!o->noexec_live) {
				o->failed = 1;
			} else {
				if (o->noexec_live->n == 0 && o->noexec_live->more == 0) {
					/* counted here: the next step may find the
					 * node cache caught up, with nothing to
					 * suppress any more */
					char nodes[700];
					sf_awp_nodes_str(o->noexec, nodes, sizeof(nodes));
					o->c->st.evac_suppressed++;
					sf_log_info(
					    LOGGER,
					    "NoExecute nodes in the node cache, not in live "
					    "reads: not evacuating",
					    "namespace", o->aw->ns, "name", o->aw->name, "nodes",
					    nodes, NULL);
				}
				free(m->noexec_live);
				m->noexec_live = o->noexec_live; /* handed over */
				o->noexec_live = NULL;
				o->results++;
			}
		}
	}
	sf_awctl_op_req_done(o);
}

static void read_nodes(op *o)
{
	sf_awctl *c = o->c;
	if (!o->noexec || !sf_awctl_op_live(o)) {
		o->failed = 1;
		return;
	}
	o->node_reads = 1; /* held while starting */
	for (size_t i = 0; i < o->noexec->n; i++) {
		req *r = sf_awctl_req_new(c, o, node_read_done);
		if (!r) {
			o->node_read_failed = 1;
			break;
		}
		snprintf(r->name, sizeof(r->name), "%s", o->noexec->name[i]);
		c->st.node_checks++;
		if (sf_awctl_op_track(o, r,
		                      sf_kube_get(c->client, &SF_AWCTL_GVR_NODES, NULL, r->name,
		                                  sf_awctl_req_cb, r, &r->call)) < 0) {
			o->node_read_failed = 1;
			break;
		}
		o->node_reads++;
	}
	if (--o->node_reads == 0)
		o->failed = 1; /* nothing was read */
}

static void node_delay_closed(uv_handle_t *h)
{
	free(h);
}

static void node_delay_fired(uv_timer_t *t)
{
	op *o = t->data;
	o->node_delay = NULL;
	uv_close((uv_handle_t *)t, node_delay_closed);
	read_nodes(o);
	sf_awctl_op_req_done(o);
}

void sf_awctl_start_verify_nodes(op *o)
{
	sf_awctl *c = o->c;
	if (o->noexec) {
		char nodes[700];
		sf_awp_nodes_str(o->noexec, nodes, sizeof(nodes));
		sf_log_info(LOGGER, "confirming NoExecute nodes with live reads", "namespace",
		            o->aw->ns, "name", o->aw->name, "nodes", nodes, NULL);
	}
	if (c->fault_node_check_ms <= 0) {
		read_nodes(o);
		return;
	}
	uv_timer_t *t = calloc(1, sizeof(*t));
	if (!t || uv_timer_init(c->loop, t) < 0) {
		free(t);
		o->failed = 1;
		return;
	}
	sf_log_warn(LOGGER, "fault injection: the live node reads wait", "namespace", o->aw->ns,
	            "name", o->aw->name, NULL);
	t->data = o;
	o->node_delay = t;
	o->pending++;
	uv_timer_start(t, node_delay_fired, (uint64_t)c->fault_node_check_ms, 0);
}
