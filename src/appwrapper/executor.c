/*
 * executor.c - carries out a reconcile's plan (ctl.h): the one metadata or
 * status write, then - only if that write landed - the step's Events and
 * its actions (component creates, live reads, UID-guarded deletes, live
 * pod lists and pod deletes, live node reads), each a request whose
 * answer is turned into evidence for the next step and remembered in the
 * AppWrapper's memory (memory.c). Here are the op, the requests, the
 * write and the actions on components; those on pods and nodes are in
 * executor_pods.c.
 *
 * The callbacks come in pairs, start_X sending a request and X_done
 * reading its answer; an op (a reconcile in progress) counts the
 * requests it has out and is finished, and requeued as its results ask,
 * when the last is answered. An op that is no longer live (another term,
 * a controller stopping) still collects its answers, but remembers none
 * of them and requeues nothing. Every request is on the controller's list
 * until answered, so that stopping can cancel it; its buffers are its own
 * and freed with it.
 */
#include "ctl.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awcomp.h"
#include "steadfast/jdoc.h"
#include "steadfast/log.h"

/* A create of a component with a generated name whose answer was lost
 * (no answer, or a 5xx) may still land, later than a LIST that finds
 * nothing: such a component is only looked up, not created again, for
 * this long (kube-apiserver's default request timeout). */
#define LOST_CREATE_SETTLE_MS 60000

/* A live LIST of one kind, by the AppWrapper's label: the objects that are
 * component idx of this AppWrapper (sf_awc_generated_match). */
typedef struct found_list {
	const char *awuid; /* borrowed from the op's AppWrapper */
	size_t idx;
	pod_ref *refs;
	size_t n, cap;
} found_list;

static void found_list_free(found_list *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->refs[i].name);
	free(f->refs);
	free(f);
}

/* Fault injection (fault_crash_after_write): a write was acknowledged. */
void sf_awctl_write_acked(sf_awctl *c, const char *what)
{
	if (c->fault_crash_after <= 0 || ++c->writes_acked < c->fault_crash_after)
		return;
	char n[24];
	snprintf(n, sizeof(n), "%ld", c->writes_acked);
	sf_log_warn(LOGGER, "fault injection: killing the process after an acknowledged write",
	            "write", n, "what", what, NULL);
	raise(SIGKILL);
}

/* ---- requests ---- */

void sf_awctl_req_free(req *r)
{
	if (r) {
		sf_awctl_live_pods_free(r->pl);
		found_list_free(r->fl);
		free(r->body);
	}
	free(r);
}

void sf_awctl_req_cb(void *ud, const sf_kube_result *res)
{
	req *r = ud;
	sf_awctl *c = r->c;
	if (r->prev)
		r->prev->next = r->next;
	else
		c->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->done(r, res);
	sf_awctl_req_free(r);
}

req *sf_awctl_req_new(sf_awctl *c, op *o, void (*done)(req *, const sf_kube_result *))
{
	req *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->c = c;
	r->o = o;
	r->done = done;
	return r;
}

/* Links r after a successful start (rc >= 0), or frees it. */
static int req_started(sf_awctl *c, req *r, int rc)
{
	if (rc < 0) {
		sf_awctl_req_free(r);
		return rc;
	}
	r->next = c->reqs;
	if (c->reqs)
		c->reqs->prev = r;
	c->reqs = r;
	return 0;
}

/* ---- a reconcile in progress ---- */

/* A reconcile of key in this term, of aw (a reference is taken), counted
 * in c->ops until op_finish frees it. NULL on -ENOMEM. */
op *sf_awctl_op_new(sf_awctl *c, const char *key, sf_obj *aw)
{
	op *o = calloc(1, sizeof(*o));
	if (!o || !(o->key = strdup(key))) {
		free(o);
		return NULL;
	}
	o->c = c;
	c->ops++;
	o->term = c->term;
	o->aw = sf_obj_ref(aw);
	o->t0 = sf_mono_ns();
	o->plan.requeue_ms = -1;
	return o;
}

static void run_actions(op *o);

static void op_free(op *o)
{
	sf_awctl *c = o->c;
	if (--c->ops == 0 && c->queue_close_pending)
		sf_awctl_close_queue(c); /* the last reconcile of a stopping controller */
	sf_awp_plan_free(&o->plan);
	sf_obj_unref(o->aw);
	free(o->noexec);
	free(o->noexec_live);
	sf_awctl_live_pods_free(o->live_pods);
	free(o->key);
	free(o);
}

int sf_awctl_op_live(const op *o)
{
	return !o->c->stopping && o->c->leading && o->c->term == o->term;
}

void sf_awctl_op_req_done(op *o)
{
	if (--o->pending == 0)
		sf_awctl_op_finish(o);
}

/* Counts a started request in o->pending (callbacks never run inside the
 * starting call, so counting after the start is safe); a request that did
 * not start is freed. Returns rc. */
int sf_awctl_op_track(op *o, req *r, int rc)
{
	rc = req_started(o->c, r, rc);
	if (rc == 0)
		o->pending++;
	return rc;
}

static void comp_name(op *o, size_t i, char *buf, size_t n);

/* A request about component i (its index, kind and name filled in); NULL
 * with o failed on -ENOMEM. */
static req *comp_req(op *o, size_t i, sf_kind *k, void (*done)(req *, const sf_kube_result *))
{
	req *r = sf_awctl_req_new(o->c, o, done);
	if (!r) {
		o->failed = 1;
		return NULL;
	}
	r->idx = i;
	r->k = k;
	comp_name(o, i, r->name, sizeof(r->name));
	return r;
}

aw_mem *sf_awctl_op_mem(op *o)
{
	if (!sf_awctl_op_live(o))
		return NULL;
	size_t n = sf_jv_len(sf_jv_path(sf_obj_root(o->aw), "status.componentStatus"));
	size_t m = sf_jv_len(sf_jv_path(sf_obj_root(o->aw), "spec.components"));
	return sf_awctl_mem_get(o->c->mem, o->key, o->aw->uid, n > m ? n : m);
}

void sf_awctl_log_result(const char *what, const op *o, const sf_kube_result *res)
{
	char buf[512];
	if (res->err == -EPERM || res->err == -ECANCELED)
		return; /* fenced or stopping: the election logs that */
	sf_log_warn(LOGGER, what, "namespace", o->aw->ns, "name", o->aw->name, "error",
	            sf_kube_result_str(res, buf, sizeof(buf)), NULL);
}

static sf_kind *comp_kind(op *o, size_t i)
{
	sf_jv cs = sf_jv_at(sf_jv_path(sf_obj_root(o->aw), "status.componentStatus"), i);
	char api[256], kind[128];
	if (sf_jv_str(sf_jv_get(cs, "apiVersion"), api, sizeof(api)) <= 0 ||
	    sf_jv_str(sf_jv_get(cs, "kind"), kind, sizeof(kind)) <= 0)
		return NULL;
	return sf_kinds_get(o->c->kinds, api, kind);
}

static void comp_name(op *o, size_t i, char *buf, size_t n)
{
	sf_jv cs = sf_jv_at(sf_jv_path(sf_obj_root(o->aw), "status.componentStatus"), i);
	if (sf_jv_str(sf_jv_get(cs, "name"), buf, n) < 0)
		buf[0] = 0;
}

/* 1 when component i's template leaves its name to the API server
 * (generateName): its incarnations are found by a live LIST, never by the
 * recorded name alone, which may be a deleted incarnation's or none. */
static int comp_generated(op *o, size_t i)
{
	char prefix[254];
	sf_jv t =
	    sf_jv_get(sf_jv_at(sf_jv_path(sf_obj_root(o->aw), "spec.components"), i), "template");
	return sf_awc_template_name(t, prefix, sizeof(prefix)) > 0;
}

/* -- create -- */

static void set_create(op *o, size_t i, sf_awp_create_outcome oc, const char *msg)
{
	aw_mem *m = sf_awctl_op_mem(o);
	if (!m || i >= m->n)
		return;
	m->comp[i].create = oc;
	free(m->comp[i].create_msg);
	/* cut as the status message would be; lost only without memory */
	m->comp[i].create_msg = msg && msg[0] ? strndup(msg, 511) : NULL;
	o->results++;
}

/* What res says about r's component, for the sf_awp_read_* rules: the one
 * place where an HTTP answer becomes evidence (a 404 that is not the API
 * server's NotFound for that very name proves nothing, and makes discovery
 * of the kind be asked again). */
static void answer_of(op *o, const req *r, const sf_kube_result *res, sf_awp_answer *a)
{
	memset(a, 0, sizeof(*a));
	if (sf_kube_is_absent(res, r->name)) {
		a->kind = SF_AWP_ANS_ABSENT;
	} else if (sf_kube_is_not_found(res)) {
		a->kind = SF_AWP_ANS_FOREIGN_404;
		sf_kind_suspect(r->k);
	} else if (sf_kube_is_already_exists(res)) {
		a->kind = SF_AWP_ANS_EXISTS;
	} else if (sf_kube_is_conflict(res)) {
		a->kind = SF_AWP_ANS_CONFLICT;
	} else if (sf_kube_is_invalid(res)) {
		a->kind = SF_AWP_ANS_INVALID;
	} else if (!sf_kube_ok(res)) {
		a->kind = SF_AWP_ANS_ERROR;
	} else {
		a->kind = SF_AWP_ANS_OK;
		if (!res->obj)
			return;
		sf_jv obj = sf_obj_root(res->obj);
		aw_mem *m = sf_awctl_op_mem(o);
		const char *cc = sf_awctl_kind_complete_cond(r->k);
		a->owned = sf_awc_owned_by(obj, o->aw->uid);
		a->deleting = sf_jv_ok(sf_jv_path(obj, "metadata.deletionTimestamp"));
		a->ours_gone = m && r->idx < m->n &&
		               sf_awctl_uid_is(m->comp[r->idx].deleted_uid, res->obj->uid);
		a->failed = sf_awctl_kind_reports_failed(r->k) && sf_awctl_cond_true(obj, "Failed");
		a->complete = cc && sf_awctl_cond_true(obj, cc);
	}
}

static void adopt_get_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	sf_awp_answer a;
	sf_awp_create_outcome oc;
	answer_of(o, r, res, &a);
	if (sf_awp_read_adopt(&a, &oc) < 0) {
		sf_awctl_log_result("reading an existing component failed", o, res);
		o->failed = 1;
	} else if (oc == SF_AWP_CREATE_OK) {
		aw_mem *m = sf_awctl_op_mem(o);
		if (m && r->idx < m->n)
			sf_awctl_comp_made(&m->comp[r->idx], res->obj->uid);
		o->c->st.adopted++;
		sf_log_info(LOGGER, "component already exists and is ours: adopted", "namespace",
		            o->aw->ns, "name", o->aw->name, "component", r->name, NULL);
		set_create(o, r->idx, SF_AWP_CREATE_OK, NULL);
	} else if (oc == SF_AWP_CREATE_RETRYABLE) {
		/* an earlier incarnation on its way out, or gone meanwhile */
		set_create(o, r->idx, SF_AWP_CREATE_RETRYABLE,
		           a.kind == SF_AWP_ANS_ABSENT
		               ? "component vanished while checking its owner"
		               : "the previous instance of the component is still being deleted");
	} else {
		sf_jv obj = sf_obj_root(res->obj);
		char msg[512], okind[64] = "", oname[254] = "";
		sf_jv ref;
		if (sf_awc_controller_owner(obj, &ref)) {
			sf_jv_str(sf_jv_get(ref, "kind"), okind, sizeof(okind));
			sf_jv_str(sf_jv_get(ref, "name"), oname, sizeof(oname));
			snprintf(msg, sizeof(msg),
			         "%s %s exists, but is controlled by %s %s, not by this AppWrapper",
			         sf_kind_name(r->k), r->name, okind, oname);
		} else {
			snprintf(msg, sizeof(msg),
			         "%s %s exists, but is not controlled by this AppWrapper",
			         sf_kind_name(r->k), r->name);
		}
		set_create(o, r->idx, SF_AWP_CREATE_FATAL, msg);
	}
	sf_awctl_op_req_done(o);
}

static void create_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	sf_awctl *c = r->c;
	if (res->err == -EPERM || res->err == -ECANCELED || !sf_awctl_op_live(o)) {
		sf_awctl_op_req_done(o);
		return;
	}
	if (sf_kube_ok(res))
		sf_awctl_write_acked(c, "create");
	aw_mem *m = sf_awctl_op_mem(o);
	comp_mem *cm = m && r->idx < m->n ? &m->comp[r->idx] : NULL;
	if (cm && (res->http_status == 0 || res->http_status >= 500 ||
	           (sf_kube_ok(res) && c->fault_lost_creates > 0)))
		cm->lost_create_ms = mono_ms(); /* it may have landed, or still land */
	if (sf_kube_ok(res) && c->fault_lost_creates > 0) {
		c->fault_lost_creates--;
		sf_log_warn(LOGGER, "fault injection: the answer to a create is dropped",
		            "namespace", o->aw->ns, "name", o->aw->name, "component", r->name,
		            NULL);
		set_create(o, r->idx, SF_AWP_CREATE_RETRYABLE, "the answer to the create was lost");
		sf_awctl_op_req_done(o);
		return;
	}
	if (sf_kube_ok(res)) {
		if (cm) {
			sf_awctl_comp_made(cm, res->obj ? res->obj->uid : NULL);
			sf_awctl_created_name_set(cm, res->obj ? res->obj->name : NULL);
		}
		c->st.creates++;
		sf_log_info(LOGGER, "component created", "namespace", o->aw->ns, "name",
		            o->aw->name, "kind", sf_kind_name(r->k), "component",
		            res->obj ? res->obj->name : r->name, NULL);
		set_create(o, r->idx, SF_AWP_CREATE_OK, NULL);
		sf_awctl_op_req_done(o);
		return;
	}
	sf_awp_answer a;
	sf_awp_create_outcome oc = SF_AWP_CREATE_RETRYABLE;
	answer_of(o, r, res, &a);
	if (sf_awp_read_create(&a, &oc) > 0) {
		/* ours from an earlier attempt (adopt) or someone else's: ask
		 * the API server, not the cache */
		req *g = comp_req(o, r->idx, r->k, adopt_get_done);
		if (g && sf_awctl_op_track(o, g,
		                           sf_kube_get(c->client, sf_kind_gvr(r->k), o->aw->ns,
		                                       g->name, sf_awctl_req_cb, g, &g->call)) < 0)
			o->failed = 1;
		sf_awctl_op_req_done(o);
		return;
	}
	char msg[512];
	const char *em = res->status && res->status->message[0] ? res->status->message
	                                                        : (res->errmsg ? res->errmsg : "");
	snprintf(msg, sizeof(msg), "%s", em);
	set_create(o, r->idx, oc, msg);
	sf_awctl_log_result("component create failed", o, res);
	sf_awctl_op_req_done(o);
}

/* -- finding a component with a generated name (live LIST) -- */

static int found_add(void *ud, const sf_obj *obj)
{
	req *r = ud;
	found_list *f = r->fl;
	sf_jv root = sf_obj_root(obj);
	if (!sf_awc_generated_match(root, f->awuid, f->idx))
		return 0;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 4;
		pod_ref *nr = realloc(f->refs, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		f->refs = nr;
		f->cap = cap;
	}
	pod_ref *pr = &f->refs[f->n];
	if (!(pr->name = strdup(obj->name)))
		return -ENOMEM;
	snprintf(pr->uid, sizeof(pr->uid), "%s", obj->uid);
	pr->deleting = sf_jv_ok(sf_jv_path(root, "metadata.deletionTimestamp"));
	f->n++;
	return 0;
}

/* One item of the live LIST (owned: released here). */
static int found_item(void *ud, sf_obj *obj)
{
	int rc = found_add(ud, obj);
	sf_obj_unref(obj);
	return rc;
}

/* A live LIST of component i's kind by the AppWrapper's label; done reads
 * r->fl, the incarnations of component i. body (owned, or NULL) goes with
 * the request. */
static void start_find(op *o, size_t i, sf_kind *k, char *body, int force,
                       void (*done)(req *, const sf_kube_result *))
{
	sf_awctl *c = o->c;
	req *r = comp_req(o, i, k, done);
	char sel[512];
	if (r) {
		r->body = body;
		body = NULL;
		r->force = force;
		r->fl = calloc(1, sizeof(*r->fl));
	}
	if (!r || !r->fl ||
	    snprintf(sel, sizeof(sel), "%s=%s", SF_AW_LABEL, o->aw->name) >= (int)sizeof(sel)) {
		free(body);
		sf_awctl_req_free(r);
		o->failed = 1;
		return;
	}
	r->fl->awuid = o->aw->uid;
	r->fl->idx = i;
	c->st.finds++;
	sf_kube_list_opts lo = {.label_selector = sel};
	if (sf_awctl_op_track(o, r,
	                      sf_kube_list(c->client, sf_kind_gvr(k), o->aw->ns, &lo, found_item,
	                                   sf_awctl_req_cb, r, &r->call)) < 0)
		o->failed = 1;
}

static void send_create(op *o, size_t i, sf_kind *k, char *body);

/* Before a create of a component with a generated name: adopt what an
 * earlier attempt made (this AppWrapper's, that index, not going away),
 * wait while one goes away, else create. */
static void find_create_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	aw_mem *m = sf_awctl_op_mem(o);
	comp_mem *cm = m && r->idx < m->n ? &m->comp[r->idx] : NULL;
	if (!sf_kube_ok(res) || !cm) {
		sf_awctl_log_result("looking for a component before creating it failed", o, res);
		o->failed = 1;
		sf_awctl_op_req_done(o);
		return;
	}
	const pod_ref *live = NULL;
	int going = 0;
	for (size_t j = 0; j < r->fl->n; j++) {
		const pod_ref *p = &r->fl->refs[j];
		if (p->deleting || sf_awctl_uid_is(cm->deleted_uid, p->uid))
			going = 1;
		else if (!live)
			live = p;
		else
			sf_log_error(LOGGER, "two live objects for one component", "namespace",
			             o->aw->ns, "name", o->aw->name, "component", live->name,
			             "other", p->name, NULL);
	}
	if (live) {
		sf_awctl_comp_made(cm, live->uid);
		sf_awctl_created_name_set(cm, live->name);
		o->c->st.adopted++;
		sf_log_info(LOGGER, "component already exists and is ours: adopted", "namespace",
		            o->aw->ns, "name", o->aw->name, "component", live->name, NULL);
		set_create(o, r->idx, SF_AWP_CREATE_OK, NULL);
	} else if (going) {
		set_create(o, r->idx, SF_AWP_CREATE_RETRYABLE,
		           "the previous instance of the component is still being deleted");
	} else if (cm->lost_create_ms && mono_ms() - cm->lost_create_ms < LOST_CREATE_SETTLE_MS) {
		set_create(o, r->idx, SF_AWP_CREATE_RETRYABLE,
		           "the answer to a create was lost and the object has not shown yet");
	} else {
		char *body = r->body;
		r->body = NULL;
		send_create(o, r->idx, r->k, body);
	}
	sf_awctl_op_req_done(o);
}

static void start_create(op *o, size_t i)
{
	sf_awctl *c = o->c;
	sf_kind *k = comp_kind(o, i);
	char err[512];
	if (!k) {
		set_create(o, i, SF_AWP_CREATE_FATAL, "componentStatus entry without kind");
		return;
	}
	if (sf_kind_confirmed_not_served(k)) {
		set_create(o, i, SF_AWP_CREATE_FATAL, sf_kind_error(k));
		return;
	}
	if (!sf_awctl_kind_served(k)) {
		set_create(o, i, SF_AWP_CREATE_RETRYABLE,
		           sf_kind_error(k)[0] ? sf_kind_error(k) : "kind not resolved yet");
		return;
	}
	sf_jd *obj = NULL;
	int fatal = 0;
	sf_awc_build_opts bo = {.scheduler_name = c->cfg.scheduler_name,
	                        .autopilot = &c->cfg.autopilot};
	int rc = sf_awc_build(sf_obj_root(o->aw), i, &bo, &obj, &fatal, err, sizeof(err));
	if (rc < 0) {
		set_create(o, i, fatal ? SF_AWP_CREATE_FATAL : SF_AWP_CREATE_RETRYABLE, err);
		return;
	}
	char *body = sf_jd_dump(obj);
	sf_jd_free(obj);
	if (body && comp_generated(o, i)) {
		/* no name to make the create idempotent: look for an
		 * incarnation an earlier attempt made first */
		start_find(o, i, k, body, 0, find_create_done);
		return;
	}
	send_create(o, i, k, body);
}

/* POSTs body (owned) as component i. */
static void send_create(op *o, size_t i, sf_kind *k, char *body)
{
	sf_awctl *c = o->c;
	req *r = body ? comp_req(o, i, k, create_done) : NULL;
	aw_mem *m = sf_awctl_op_mem(o);
	if (r && m && i < m->n) {
		/* "gone" was learned of the last attempt's object: a create sent
		 * now may land even if its answer is lost, so it no longer
		 * holds (a deletion must look again) */
		m->comp[i].delete_gone = 0;
		m->comp[i].deleted_cached = 0;
	}
	if (!r) {
		free(body);
		o->failed = 1;
		return;
	}
	if (sf_awctl_op_track(o, r,
	                      sf_kube_create(c->client, sf_kind_gvr(k), o->aw->ns, body,
	                                     sf_awctl_req_cb, r, &r->call)) < 0)
		o->failed = 1;
	free(body);
}

/* -- verify (live GET for the missing check) -- */

static void verify_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	aw_mem *m = sf_awctl_op_mem(o);
	if (m && r->idx < m->n) {
		comp_mem *cm = &m->comp[r->idx];
		sf_awp_answer a;
		sf_awp_confirmed live;
		answer_of(o, r, res, &a);
		if (sf_awp_read_verify(&a, &live) < 0) {
			/* an error, or a 404 that is not the API server's answer
			 * about this object: cannot say */
			sf_awctl_log_result("live read of a component failed", o, res);
			o->failed = 1;
		} else {
			cm->live = live;
			o->results++;
			if (live.found == SF_AWP_LIVE_MISSING) {
				sf_log_info(
				    LOGGER,
				    a.kind == SF_AWP_ANS_ABSENT
				        ? "component confirmed missing by a live read"
				        : "component replaced or being deleted by someone else",
				    "namespace", o->aw->ns, "name", o->aw->name, "component",
				    r->name, NULL);
			} else {
				cm->confirmed_ms = wall_ms();
				sf_log_debug(LOGGER, "live read of a component", "namespace",
				             o->aw->ns, "name", o->aw->name, "component", r->name,
				             "failed", live.failed ? "true" : "false", "complete",
				             live.complete ? "true" : "false", NULL);
			}
		}
	}
	sf_awctl_op_req_done(o);
}

static void start_verify(op *o, size_t i)
{
	sf_awctl *c = o->c;
	sf_kind *k = comp_kind(o, i);
	aw_mem *m = sf_awctl_op_mem(o);
	if (!k || !m)
		return;
	if (!sf_awctl_kind_served(k)) {
		/* not served is no evidence of absence: the phase machine
		 * was told the kind is unresolved and does not ask */
		o->failed = 1;
		return;
	}
	req *r = comp_req(o, i, k, verify_done);
	if (!r)
		return;
	c->st.verifies++;
	if (sf_awctl_op_track(o, r,
	                      sf_kube_get(c->client, sf_kind_gvr(k), o->aw->ns, r->name,
	                                  sf_awctl_req_cb, r, &r->call)) < 0)
		o->failed = 1;
}

/* -- delete (UID-guarded) -- */

static void delete_lookup_done(req *r, const sf_kube_result *res);

static void delete_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	aw_mem *m = sf_awctl_op_mem(o);
	if (m && r->idx < m->n) {
		comp_mem *cm = &m->comp[r->idx];
		sf_awp_answer a;
		int gone = 0;
		answer_of(o, r, res, &a);
		int rc = 0;
		if (sf_kube_ok(res)) {
			sf_awctl_write_acked(o->c, "delete");
			sf_awctl_uid_set(&cm->deleted_uid, r->uid);
			cm->deleted_cached = r->uid_cached;
			cm->create = SF_AWP_CREATE_NONE; /* the next create is a new one */
			m->deletes_acked = ev_tick(o->c);
			o->c->st.deletes++;
		} else if ((rc = sf_awp_read_delete(&a, &gone)) > 0) {
			/* NotFound for that name: someone deleted it at a moment
			 * we do not know, so a pod list must be asked from now */
			cm->delete_gone = !r->generated;
			cm->create = SF_AWP_CREATE_NONE;
			m->deletes_acked = ev_tick(o->c);
			o->results++;
		} else if (rc == 0) {
			/* 409: the name holds another object than the one we
			 * meant (a cache behind, a newer incarnation): who holds
			 * it is read live, and a DELETE follows for ours */
			req *g = comp_req(o, r->idx, r->k, delete_lookup_done);
			if (g) {
				g->force = r->force;
				g->generated = r->generated;
				snprintf(g->name, sizeof(g->name), "%s", r->name);
				if (sf_awctl_op_track(
				        o, g,
				        sf_kube_get(o->c->client, sf_kind_gvr(r->k), o->aw->ns,
				                    g->name, sf_awctl_req_cb, g, &g->call)) < 0)
					o->failed = 1;
			}
		} else {
			sf_awctl_log_result("component delete failed", o, res);
		}
	}
	sf_awctl_op_req_done(o);
}

/* DELETE of r's component with its UID as precondition; 0 or the start
 * error (then r is freed). */
static int send_delete(op *o, req *r)
{
	sf_awctl *c = o->c;
	sf_kube_delete_opts d = {
	    .propagation = "Background", .precond_uid = r->uid, .grace_seconds = r->force ? 0 : -1};
	r->done = delete_done;
	return sf_awctl_op_track(o, r,
	                         sf_kube_delete(c->client, sf_kind_gvr(r->k), o->aw->ns, r->name,
	                                        &d, sf_awctl_req_cb, r, &r->call));
}

static void delete_lookup_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	aw_mem *m = sf_awctl_op_mem(o);
	if (!m || r->idx >= m->n) {
		sf_awctl_op_req_done(o);
		return;
	}
	sf_awp_answer a;
	int gone = 0;
	answer_of(o, r, res, &a);
	int rc = sf_awp_read_delete(&a, &gone);
	if (rc > 0) {
		m->comp[r->idx].delete_gone = !r->generated;
		m->comp[r->idx].create = SF_AWP_CREATE_NONE;
		m->deletes_acked = ev_tick(o->c); /* learned gone now */
		o->results++;
		sf_awctl_op_req_done(o);
		return;
	}
	if (rc < 0 || !res->obj) {
		sf_awctl_log_result("reading a component before deleting it failed", o, res);
		sf_awctl_op_req_done(o);
		return;
	}
	req *d = comp_req(o, r->idx, r->k, delete_done);
	if (d) {
		d->force = r->force;
		d->generated = r->generated;
		snprintf(d->name, sizeof(d->name), "%s", r->name);
		snprintf(d->uid, sizeof(d->uid), "%s", res->obj->uid);
		if (send_delete(o, d) < 0)
			o->failed = 1;
	}
	sf_awctl_op_req_done(o);
}

/* Deletion of a component with a generated name: each incarnation the live
 * LIST found is deleted with its UID as precondition; only a LIST that finds
 * none says the component is gone. */
static void find_delete_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	aw_mem *m = sf_awctl_op_mem(o);
	if (!sf_kube_ok(res) || !m || r->idx >= m->n) {
		sf_awctl_log_result("looking for a component before deleting it failed", o, res);
		sf_awctl_op_req_done(o);
		return;
	}
	comp_mem *cm = &m->comp[r->idx];
	if (r->fl->n == 0) {
		cm->delete_gone = 1;
		cm->create = SF_AWP_CREATE_NONE;
		m->deletes_acked = ev_tick(o->c); /* learned gone now */
		o->results++;
		sf_awctl_op_req_done(o);
		return;
	}
	for (size_t j = 0; j < r->fl->n; j++) {
		const pod_ref *p = &r->fl->refs[j];
		if (p->deleting && !r->force)
			continue; /* on its way out: the next pass looks again */
		req *d = comp_req(o, r->idx, r->k, delete_done);
		if (!d)
			break;
		d->force = r->force;
		d->generated = 1;
		snprintf(d->name, sizeof(d->name), "%s", p->name);
		snprintf(d->uid, sizeof(d->uid), "%s", p->uid);
		if (send_delete(o, d) < 0)
			o->failed = 1;
	}
	sf_awctl_op_req_done(o);
}

static void start_delete(op *o, size_t i, int force)
{
	sf_awctl *c = o->c;
	sf_kind *k = comp_kind(o, i);
	aw_mem *m = sf_awctl_op_mem(o);
	if (!k || !m)
		return;
	if (!sf_awctl_kind_served(k)) {
		/* not served: no DELETE can prove anything (the phase machine
		 * does not ask while the kind is unresolved) */
		o->failed = 1;
		return;
	}
	if (comp_generated(o, i)) {
		start_find(o, i, k, NULL, force, find_delete_done);
		return;
	}
	req *r = comp_req(o, i, k, delete_lookup_done);
	if (!r)
		return;
	r->force = force;
	sf_obj *cached = sf_kind_ready(k) ? sf_store_get_ns(sf_informer_store(sf_kind_informer(k)),
	                                                    o->aw->ns, r->name)
	                                  : NULL;
	comp_mem *cm = &m->comp[i];
	if (!cached && sf_kind_ready(k) && cm->deleted_uid && cm->deleted_cached) {
		/* we deleted the cache's copy and the cache has dropped it:
		 * gone, without asking the API server again */
		free(r);
		cm->delete_gone = 1;
		cm->create = SF_AWP_CREATE_NONE;
		m->deletes_acked = ev_tick(c); /* learned gone now */
		o->results++;
		return;
	}
	int rc;
	if (cached && sf_awc_owned_by(sf_obj_root(cached), o->aw->uid)) {
		snprintf(r->uid, sizeof(r->uid), "%s", cached->uid);
		r->uid_cached = 1;
		rc = send_delete(o, r);
	} else {
		/* not in the cache, or the cache's copy is not ours (a cache
		 * behind proves nothing either way): ask the API server who
		 * holds the name */
		rc = sf_awctl_op_track(o, r,
		                       sf_kube_get(c->client, sf_kind_gvr(k), o->aw->ns, r->name,
		                                   sf_awctl_req_cb, r, &r->call));
	}
	if (rc < 0)
		o->failed = 1;
}

static void run_actions(op *o)
{
	o->pending++; /* held while starting */
	for (size_t i = 0; i < o->plan.nacts && sf_awctl_op_live(o); i++) {
		const sf_awp_act *a = &o->plan.acts[i];
		switch (a->kind) {
		case SF_AWP_ACT_CREATE: start_create(o, a->idx); break;
		case SF_AWP_ACT_VERIFY: start_verify(o, a->idx); break;
		case SF_AWP_ACT_DELETE: start_delete(o, a->idx, 0); break;
		case SF_AWP_ACT_DELETE_FORCE: start_delete(o, a->idx, 1); break;
		case SF_AWP_ACT_LIST_PODS: sf_awctl_start_list_pods(o); break;
		case SF_AWP_ACT_VERIFY_NODES: sf_awctl_start_verify_nodes(o); break;
		case SF_AWP_ACT_DELETE_PODS: sf_awctl_delete_listed_pods(o); break;
		}
	}
	sf_awctl_op_req_done(o);
}

/* The step's Events, once its write landed. Their action is the phase the
 * step moves the AppWrapper to (Resetting, Failed; the phase it stays in
 * when it stays). */
static void emit_events(op *o)
{
	const char *action = sf_aw_phase_name(o->plan.to);
	if (!action[0])
		action = "Reconcile"; /* (no step plans an event and stays in Empty) */
	for (size_t i = 0; i < o->plan.nevents; i++) {
		const sf_awp_event *e = &o->plan.events[i];
		sf_events_emit(o->c->events, o->aw, SF_AW_API_VERSION, SF_AW_KIND,
		               e->warning ? "Warning" : "Normal", e->reason, action, e->message);
	}
}

static void write_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	sf_awctl *c = r->c;
	if (!sf_awctl_op_live(o)) {
		sf_awctl_op_req_done(o);
		return;
	}
	if (sf_kube_ok(res)) {
		sf_awctl_write_acked(c, o->status_write ? "status" : "metadata");
		o->wrote = 1;
		aw_mem *m = sf_awctl_op_mem(o);
		if (m && res->obj && sf_rv_number(res->obj->rv, &m->written_rv) < 0)
			m->written_rv = 0; /* one that does not order: no wait for it */
		if (o->status_write) {
			c->st.status_writes++;
			if (o->plan.to != o->plan.from) {
				sf_awctl_count_phase(c, o->aw->ns, o->plan.to);
				sf_log_info(LOGGER, sf_aw_phase_name(o->plan.to), "namespace",
				            o->aw->ns, "name", o->aw->name, "phase",
				            sf_aw_phase_name(o->plan.to), "from",
				            sf_aw_phase_name(o->plan.from), "why", o->plan.why,
				            NULL);
			}
		} else {
			sf_log_info(LOGGER, o->plan.why, "namespace", o->aw->ns, "name",
			            o->aw->name, NULL);
		}
		emit_events(o);
		run_actions(o);
	} else if (sf_kube_is_conflict(res)) {
		/* someone wrote after our read: read again, never overwrite */
		c->st.conflicts++;
		o->failed = 1;
	} else if (sf_kube_is_not_found(res)) {
		/* deleted meanwhile */
	} else {
		sf_awctl_log_result("AppWrapper write failed", o, res);
		o->failed = 1;
	}
	sf_awctl_op_req_done(o);
}

/* The one write of a step: merge patch with the resourceVersion it read. */
static int start_write(op *o)
{
	sf_awctl *c = o->c;
	sf_jd *patch = NULL;
	const char *sub = NULL;
	int rc = -ENOMEM;
	if (o->plan.meta_patch) {
		patch = o->plan.meta_patch;
		o->plan.meta_patch = NULL;
	} else {
		patch = sf_jd_new_obj();
		sf_jd *st = o->plan.status;
		o->plan.status = NULL; /* handed to the patch */
		if (!patch) {
			sf_jd_free(st);
			return -ENOMEM;
		}
		if (sf_jd_set(patch, "status", st) < 0) {
			sf_jd_free(patch);
			return -ENOMEM;
		}
		o->status_write = 1;
		sub = "status";
	}
	sf_jd *md = sf_jd_obj_member(patch, "metadata");
	char *body = NULL;
	if (md && sf_jd_set_str(md, "resourceVersion", o->aw->rv) == 0)
		body = sf_jd_dump(patch);
	sf_jd_free(patch);
	req *r = body ? sf_awctl_req_new(c, o, write_done) : NULL;
	if (r)
		rc = sf_awctl_op_track(o, r,
		                       sf_kube_patch(c->client, &SF_GVR_APPWRAPPERS, o->aw->ns,
		                                     o->aw->name, sub, SF_PATCH_MERGE, body, NULL,
		                                     0, sf_awctl_req_cb, r, &r->call));
	free(body);
	return rc;
}

void sf_awctl_op_finish(op *o)
{
	sf_awctl *c = o->c;
	int live = sf_awctl_op_live(o);
	sf_prom_hist_observe(&c->reconcile_time, (double)(sf_mono_ns() - o->t0) / 1e9);
	c->st.reconciles++;
	if (live) {
		if (o->failed) {
			c->st.reconcile_errors++;
			c->res_error++;
			sf_queue_add_rate_limited(c->queue, o->key);
		} else {
			sf_queue_forget(c->queue, o->key);
			int64_t rq = o->plan.requeue_ms;
			if (o->results > 0) {
				c->res_requeue++;
				sf_queue_add(c->queue, o->key);
			} else if (rq > 0) {
				c->res_requeue_after++;
				sf_queue_add_after(c->queue, o->key, (uint64_t)rq);
			} else if (rq == 0) {
				c->res_requeue++;
				/* after a write the informer brings the new
				 * version; this is only a fallback */
				if (o->wrote)
					sf_queue_add_after(c->queue, o->key, 2000);
				else
					sf_queue_add(c->queue, o->key);
			} else {
				c->res_success++;
			}
		}
	}
	if (c->queue)
		sf_queue_done(c->queue, o->key);
	op_free(o);
}

/* Carries out o's plan: its one write if it has one, then (once that
 * landed) its events and actions; o is finished when the last request
 * is answered. */
void sf_awctl_execute(op *o)
{
	o->pending = 1; /* held while starting */
	if (o->plan.meta_patch || o->plan.status) {
		if (start_write(o) < 0)
			o->failed = 1;
	} else {
		emit_events(o);
		run_actions(o);
	}
	sf_awctl_op_req_done(o);
}
