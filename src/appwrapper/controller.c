/*
 * controller.c - AppWrapper informers, queue and plan executor (see
 * controller.h).
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
 */
#include "ctl.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/admcheck.h"
#include "steadfast/admparams.h"
#include "steadfast/awcomp.h"
#include "steadfast/awnodes.h"
#include "steadfast/awphase.h"
#include "steadfast/barrier.h"
#include "steadfast/cache.h"
#include "steadfast/events.h"
#include "steadfast/jdoc.h"
#include "steadfast/kinds.h"
#include "steadfast/log.h"
#include "steadfast/queue.h"
#include "steadfast/slackcq.h"
#include "steadfast/strmap.h"
#include "steadfast/time.h"

const sf_gvr SF_GVR_APPWRAPPERS = {SF_AW_GROUP, SF_AW_VERSION, SF_AW_RESOURCE, 1};

#define FIELD_MANAGER "steadfast"
#define NOT_READY_RETRY_MS 200
#define KIND_SYNC_WAIT_MS 10000
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

/* upper bounds in seconds of the reconcile time histogram */
static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60};

/* Fault injection (fault_crash_after_write): a write was acknowledged. */
static void write_acked(sf_awctl *c, const char *what)
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

static void req_free(req *r)
{
	if (r) {
		sf_awctl_live_pods_free(r->pl);
		found_list_free(r->fl);
		free(r->body);
	}
	free(r);
}

static void req_cb(void *ud, const sf_kube_result *res)
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
	req_free(r);
}

static req *req_new(sf_awctl *c, op *o, void (*done)(req *, const sf_kube_result *))
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
		req_free(r);
		return rc;
	}
	r->next = c->reqs;
	if (c->reqs)
		c->reqs->prev = r;
	c->reqs = r;
	return 0;
}

/* ---- kinds ---- */

/* What the controller knows of a kind's own status reports. */
static int kind_reports_failed(const sf_kind *k)
{
	const char *a = sf_kind_api_version(k), *n = sf_kind_name(k);
	return (strcmp(a, "batch/v1") == 0 && strcmp(n, "Job") == 0) ||
	       (strcmp(a, "kubeflow.org/v1") == 0 && strcmp(n, "PyTorchJob") == 0);
}

/* The condition by which kind k reports its own completion, or NULL. */
static const char *kind_complete_cond(const sf_kind *k)
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

static int kind_served(const sf_kind *k)
{
	return sf_kind_get_state(k) == SF_KIND_SERVED && sf_kind_gvr(k);
}

/* ---- metrics helpers ---- */

static void count_phase(sf_awctl *c, const char *ns, sf_aw_phase p)
{
	if (p < 0 || p >= SF_AW_NPHASES)
		return;
	unsigned long *v = sf_strmap_get(c->phase_counts, ns);
	if (!v) {
		v = calloc(SF_AW_NPHASES, sizeof(*v));
		if (!v || sf_strmap_put(c->phase_counts, ns, v, NULL) < 0) {
			free(v);
			return;
		}
	}
	v[p]++;
}

/* ---- reconcile ---- */

static void op_finish(op *o);
static void run_actions(op *o);

static void part_closed(void *ud);

static void op_free(op *o)
{
	sf_awctl *c = o->c;
	if (--c->ops == 0 && c->queue_close_pending) {
		/* the last reconcile of a stopping controller: the queue may go */
		c->queue_close_pending = 0;
		sf_queue_close(c->queue, part_closed, c);
	}
	sf_awp_plan_free(&o->plan);
	sf_obj_unref(o->aw);
	free(o->noexec);
	free(o->noexec_live);
	sf_awctl_live_pods_free(o->live_pods);
	free(o->key);
	free(o);
}

static int op_live(const op *o)
{
	return !o->c->stopping && o->c->leading && o->c->term == o->term;
}

static void op_req_done(op *o)
{
	if (--o->pending == 0)
		op_finish(o);
}

/* Counts a started request in o->pending (callbacks never run inside the
 * starting call, so counting after the start is safe); a request that did
 * not start is freed. Returns rc. */
static int op_track(op *o, req *r, int rc)
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
	req *r = req_new(o->c, o, done);
	if (!r) {
		o->failed = 1;
		return NULL;
	}
	r->idx = i;
	r->k = k;
	comp_name(o, i, r->name, sizeof(r->name));
	return r;
}

static aw_mem *op_mem(op *o)
{
	if (!op_live(o))
		return NULL;
	size_t n = sf_jv_len(sf_jv_path(sf_obj_root(o->aw), "status.componentStatus"));
	size_t m = sf_jv_len(sf_jv_path(sf_obj_root(o->aw), "spec.components"));
	return sf_awctl_mem_get(o->c->mem, o->key, o->aw->uid, n > m ? n : m);
}

static void log_result(const char *what, const op *o, const sf_kube_result *res)
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
	aw_mem *m = op_mem(o);
	if (!m || i >= m->n)
		return;
	m->comp[i].create = oc;
	free(m->comp[i].create_msg);
	/* cut as the status message would be; lost only without memory */
	m->comp[i].create_msg = msg && msg[0] ? strndup(msg, 511) : NULL;
	o->results++;
}

static int cond_true(sf_jv obj, const char *type);

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
		aw_mem *m = op_mem(o);
		const char *cc = kind_complete_cond(r->k);
		a->owned = sf_awc_owned_by(obj, o->aw->uid);
		a->deleting = sf_jv_ok(sf_jv_path(obj, "metadata.deletionTimestamp"));
		a->ours_gone = m && r->idx < m->n &&
		               sf_awctl_uid_is(m->comp[r->idx].deleted_uid, res->obj->uid);
		a->failed = kind_reports_failed(r->k) && cond_true(obj, "Failed");
		a->complete = cc && cond_true(obj, cc);
	}
}

static void adopt_get_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	sf_awp_answer a;
	sf_awp_create_outcome oc;
	answer_of(o, r, res, &a);
	if (sf_awp_read_adopt(&a, &oc) < 0) {
		log_result("reading an existing component failed", o, res);
		o->failed = 1;
	} else if (oc == SF_AWP_CREATE_OK) {
		aw_mem *m = op_mem(o);
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
	op_req_done(o);
}

static void create_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	sf_awctl *c = r->c;
	if (res->err == -EPERM || res->err == -ECANCELED || !op_live(o)) {
		op_req_done(o);
		return;
	}
	if (sf_kube_ok(res))
		write_acked(c, "create");
	aw_mem *m = op_mem(o);
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
		op_req_done(o);
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
		op_req_done(o);
		return;
	}
	sf_awp_answer a;
	sf_awp_create_outcome oc = SF_AWP_CREATE_RETRYABLE;
	answer_of(o, r, res, &a);
	if (sf_awp_read_create(&a, &oc) > 0) {
		/* ours from an earlier attempt (adopt) or someone else's: ask
		 * the API server, not the cache */
		req *g = comp_req(o, r->idx, r->k, adopt_get_done);
		if (g && op_track(o, g,
		                  sf_kube_get(c->client, sf_kind_gvr(r->k), o->aw->ns, g->name,
		                              req_cb, g, &g->call)) < 0)
			o->failed = 1;
		op_req_done(o);
		return;
	}
	char msg[512];
	const char *em = res->status && res->status->message[0] ? res->status->message
	                                                        : (res->errmsg ? res->errmsg : "");
	snprintf(msg, sizeof(msg), "%s", em);
	set_create(o, r->idx, oc, msg);
	log_result("component create failed", o, res);
	op_req_done(o);
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
		req_free(r);
		o->failed = 1;
		return;
	}
	r->fl->awuid = o->aw->uid;
	r->fl->idx = i;
	c->st.finds++;
	sf_kube_list_opts lo = {.label_selector = sel};
	if (op_track(o, r,
	             sf_kube_list(c->client, sf_kind_gvr(k), o->aw->ns, &lo, found_item, req_cb, r,
	                          &r->call)) < 0)
		o->failed = 1;
}

static void send_create(op *o, size_t i, sf_kind *k, char *body);

/* Before a create of a component with a generated name: adopt what an
 * earlier attempt made (this AppWrapper's, that index, not going away),
 * wait while one goes away, else create. */
static void find_create_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	aw_mem *m = op_mem(o);
	comp_mem *cm = m && r->idx < m->n ? &m->comp[r->idx] : NULL;
	if (!sf_kube_ok(res) || !cm) {
		log_result("looking for a component before creating it failed", o, res);
		o->failed = 1;
		op_req_done(o);
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
	op_req_done(o);
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
	if (!kind_served(k)) {
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
	aw_mem *m = op_mem(o);
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
	if (op_track(o, r,
	             sf_kube_create(c->client, sf_kind_gvr(k), o->aw->ns, body, req_cb, r,
	                            &r->call)) < 0)
		o->failed = 1;
	free(body);
}

/* -- verify (live GET for the missing check) -- */

static void verify_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	aw_mem *m = op_mem(o);
	if (m && r->idx < m->n) {
		comp_mem *cm = &m->comp[r->idx];
		sf_awp_answer a;
		sf_awp_confirmed live;
		answer_of(o, r, res, &a);
		if (sf_awp_read_verify(&a, &live) < 0) {
			/* an error, or a 404 that is not the API server's answer
			 * about this object: cannot say */
			log_result("live read of a component failed", o, res);
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
	op_req_done(o);
}

static void start_verify(op *o, size_t i)
{
	sf_awctl *c = o->c;
	sf_kind *k = comp_kind(o, i);
	aw_mem *m = op_mem(o);
	if (!k || !m)
		return;
	if (!kind_served(k)) {
		/* not served is no evidence of absence: the phase machine
		 * was told the kind is unresolved and does not ask */
		o->failed = 1;
		return;
	}
	req *r = comp_req(o, i, k, verify_done);
	if (!r)
		return;
	c->st.verifies++;
	if (op_track(o, r,
	             sf_kube_get(c->client, sf_kind_gvr(k), o->aw->ns, r->name, req_cb, r,
	                         &r->call)) < 0)
		o->failed = 1;
}

/* -- delete (UID-guarded) -- */

static void delete_lookup_done(req *r, const sf_kube_result *res);

static void delete_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	aw_mem *m = op_mem(o);
	if (m && r->idx < m->n) {
		comp_mem *cm = &m->comp[r->idx];
		sf_awp_answer a;
		int gone = 0;
		answer_of(o, r, res, &a);
		int rc = 0;
		if (sf_kube_ok(res)) {
			write_acked(o->c, "delete");
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
				if (op_track(o, g,
				             sf_kube_get(o->c->client, sf_kind_gvr(r->k), o->aw->ns,
				                         g->name, req_cb, g, &g->call)) < 0)
					o->failed = 1;
			}
		} else {
			log_result("component delete failed", o, res);
		}
	}
	op_req_done(o);
}

/* DELETE of r's component with its UID as precondition; 0 or the start
 * error (then r is freed). */
static int send_delete(op *o, req *r)
{
	sf_awctl *c = o->c;
	sf_kube_delete_opts d = {
	    .propagation = "Background", .precond_uid = r->uid, .grace_seconds = r->force ? 0 : -1};
	r->done = delete_done;
	return op_track(o, r,
	                sf_kube_delete(c->client, sf_kind_gvr(r->k), o->aw->ns, r->name, &d, req_cb,
	                               r, &r->call));
}

static void delete_lookup_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	aw_mem *m = op_mem(o);
	if (!m || r->idx >= m->n) {
		op_req_done(o);
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
		op_req_done(o);
		return;
	}
	if (rc < 0 || !res->obj) {
		log_result("reading a component before deleting it failed", o, res);
		op_req_done(o);
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
	op_req_done(o);
}

/* Deletion of a component with a generated name: each incarnation the live
 * LIST found is deleted with its UID as precondition; only a LIST that finds
 * none says the component is gone. */
static void find_delete_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	aw_mem *m = op_mem(o);
	if (!sf_kube_ok(res) || !m || r->idx >= m->n) {
		log_result("looking for a component before deleting it failed", o, res);
		op_req_done(o);
		return;
	}
	comp_mem *cm = &m->comp[r->idx];
	if (r->fl->n == 0) {
		cm->delete_gone = 1;
		cm->create = SF_AWP_CREATE_NONE;
		m->deletes_acked = ev_tick(o->c); /* learned gone now */
		o->results++;
		op_req_done(o);
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
	op_req_done(o);
}

static void start_delete(op *o, size_t i, int force)
{
	sf_awctl *c = o->c;
	sf_kind *k = comp_kind(o, i);
	aw_mem *m = op_mem(o);
	if (!k || !m)
		return;
	if (!kind_served(k)) {
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
		rc = op_track(o, r,
		              sf_kube_get(c->client, sf_kind_gvr(k), o->aw->ns, r->name, req_cb, r,
		                          &r->call));
	}
	if (rc < 0)
		o->failed = 1;
}

/* -- live pod list (evidence for resets, success and the end of a deletion) -- */

/* The component a Succeeded pod is its own (sf_awp_pod_component: the
 * phase machine counts each component's up to what it expects); -1 for
 * a pod that is not Succeeded, or no component's. */
static int succeeded_of(sf_jv pod, sf_jv comp_status)
{
	if (!sf_jv_streq(sf_jv_path(pod, "status.phase"), "Succeeded"))
		return -1;
	return sf_awp_pod_component(pod, comp_status);
}

static int pod_list_add(void *ud, const sf_obj *pod)
{
	req *r = ud;
	live_pods *l = r->pl;
	sf_awp_pods_add(&l->lp.pods, sf_obj_root(pod), &l->s);
	int own = succeeded_of(sf_obj_root(pod),
	                       sf_jv_path(sf_obj_root(r->o->aw), "status.componentStatus"));
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
	aw_mem *m = op_mem(o);
	if (!sf_kube_ok(res)) {
		log_result("live list of pods failed", o, res);
		o->failed = 1;
	} else if (m) {
		sf_awctl_live_pods_free(m->live_pods);
		m->live_pods = r->pl; /* handed over */
		r->pl = NULL;
		m->live_pods->lp.answered_ms = wall_ms();
		o->c->st.pod_lists++;
		o->results++;
	}
	op_req_done(o);
}

static void start_list_pods(op *o)
{
	sf_awctl *c = o->c;
	req *r = req_new(c, o, pod_list_done);
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
		req_free(r);
		o->failed = 1;
		return;
	}
	sf_aw_settings_resolve(&c->cfg, sf_jv_path(sf_obj_root(o->aw), "metadata.annotations"),
	                       &r->pl->s);
	r->pl->lp.asked = ev_tick(c);
	sf_kube_list_opts lo = {.label_selector = sel};
	if (op_track(o, r,
	             sf_kube_list(c->client, &SF_GVR_PODS, o->aw->ns, &lo, pod_list_item, req_cb, r,
	                          &r->call)) < 0)
		o->failed = 1;
}

static void pod_delete_done(req *r, const sf_kube_result *res)
{
	op *o = r->o;
	aw_mem *m = op_mem(o);
	if (sf_kube_ok(res))
		write_acked(o->c, "pod delete");
	if (sf_kube_ok(res) && m)
		m->deletes_acked = ev_tick(o->c);
	else if (!sf_kube_ok(res) && !sf_kube_is_not_found(res) && !sf_kube_is_conflict(res))
		log_result("forceful pod delete failed", o, res);
	op_req_done(o);
}

/* Deletes, grace period 0 and each with its UID as precondition, the pods
 * the live list this step read found: never the cache's, which may miss
 * some. */
static void delete_listed_pods(op *o)
{
	const live_pods *l = o->live_pods;
	for (size_t i = 0; l && i < l->n; i++) {
		req *r = req_new(o->c, o, pod_delete_done);
		if (!r) {
			o->failed = 1;
			return;
		}
		sf_kube_delete_opts d = {.precond_uid = l->refs[i].uid, .grace_seconds = 0};
		if (op_track(o, r,
		             sf_kube_delete(o->c->client, &SF_GVR_PODS, o->aw->ns, l->refs[i].name,
		                            &d, req_cb, r, &r->call)) < 0)
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
		log_result("live read of a node failed", o, res);
		o->node_read_failed = 1;
	}
	if (--o->node_reads == 0) {
		aw_mem *m = op_mem(o);
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
	op_req_done(o);
}

static void read_nodes(op *o)
{
	sf_awctl *c = o->c;
	if (!o->noexec || !op_live(o)) {
		o->failed = 1;
		return;
	}
	o->node_reads = 1; /* held while starting */
	for (size_t i = 0; i < o->noexec->n; i++) {
		req *r = req_new(c, o, node_read_done);
		if (!r) {
			o->node_read_failed = 1;
			break;
		}
		snprintf(r->name, sizeof(r->name), "%s", o->noexec->name[i]);
		c->st.node_checks++;
		if (op_track(o, r,
		             sf_kube_get(c->client, &SF_AWCTL_GVR_NODES, NULL, r->name, req_cb, r,
		                         &r->call)) < 0) {
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
	op_req_done(o);
}

static void start_verify_nodes(op *o)
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

static void run_actions(op *o)
{
	o->pending++; /* held while starting */
	for (size_t i = 0; i < o->plan.nacts && op_live(o); i++) {
		const sf_awp_act *a = &o->plan.acts[i];
		switch (a->kind) {
		case SF_AWP_ACT_CREATE: start_create(o, a->idx); break;
		case SF_AWP_ACT_VERIFY: start_verify(o, a->idx); break;
		case SF_AWP_ACT_DELETE: start_delete(o, a->idx, 0); break;
		case SF_AWP_ACT_DELETE_FORCE: start_delete(o, a->idx, 1); break;
		case SF_AWP_ACT_LIST_PODS: start_list_pods(o); break;
		case SF_AWP_ACT_VERIFY_NODES: start_verify_nodes(o); break;
		case SF_AWP_ACT_DELETE_PODS: delete_listed_pods(o); break;
		}
	}
	op_req_done(o);
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
	if (!op_live(o)) {
		op_req_done(o);
		return;
	}
	if (sf_kube_ok(res)) {
		write_acked(c, o->status_write ? "status" : "metadata");
		o->wrote = 1;
		aw_mem *m = op_mem(o);
		if (m && res->obj && sf_rv_number(res->obj->rv, &m->written_rv) < 0)
			m->written_rv = 0; /* one that does not order: no wait for it */
		if (o->status_write) {
			c->st.status_writes++;
			if (o->plan.to != o->plan.from) {
				count_phase(c, o->aw->ns, o->plan.to);
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
		log_result("AppWrapper write failed", o, res);
		o->failed = 1;
	}
	op_req_done(o);
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
	req *r = body ? req_new(c, o, write_done) : NULL;
	if (r)
		rc = op_track(o, r,
		              sf_kube_patch(c->client, &SF_GVR_APPWRAPPERS, o->aw->ns, o->aw->name,
		                            sub, SF_PATCH_MERGE, body, NULL, 0, req_cb, r,
		                            &r->call));
	free(body);
	return rc;
}

static void op_finish(op *o)
{
	sf_awctl *c = o->c;
	int live = op_live(o);
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

static int pod_visit_fn(void *ud, sf_obj *pod)
{
	comp_visit *v = ud;
	if (strcmp(pod->ns, v->ns) != 0)
		return 0;
	sf_jv root = sf_obj_root(pod);
	sf_awp_pods_add(v->pods, root, v->s);
	int own = succeeded_of(root, v->comp_status);
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

/* 1 if obj's status.conditions has `type` with status True. */
static int cond_true(sf_jv obj, const char *type)
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
		if (!kind_served(k)) {
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
		const char *cc = kind_complete_cond(k);
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
			oc->cached.failed = kind_reports_failed(k) && cond_true(root, "Failed");
			oc->cached.complete = cc && cond_true(root, cc);
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

static void process(void *ud, const char *key)
{
	sf_awctl *c = ud;
	char err[512];
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
	op *o = calloc(1, sizeof(*o));
	if (!o || !(o->key = strdup(key))) {
		free(o);
		sf_queue_add_rate_limited(c->queue, key);
		sf_queue_done(c->queue, key);
		return;
	}
	o->c = c;
	c->ops++;
	o->term = c->term;
	o->aw = sf_obj_ref(aw);
	o->t0 = sf_mono_ns();
	o->plan.requeue_ms = -1;

	aw_mem *m = op_mem(o);
	if (!m) {
		o->failed = 1;
		op_finish(o);
		return;
	}
	uint64_t seen;
	if (m->written_rv && sf_rv_number(aw->rv, &seen) == 0 && seen < m->written_rv) {
		/* our own last write is not in the cache yet: its event will
		 * bring this key back */
		op_finish(o);
		return;
	}
	sf_aw_settings s;
	sf_aw_settings_resolve(&c->cfg, sf_jv_path(sf_obj_root(aw), "metadata.annotations"), &s);
	if (s.warning[0])
		sf_log_debug(LOGGER, "malformed annotation; using the default", "namespace", aw->ns,
		             "name", aw->name, "detail", s.warning, NULL);
	size_t n = sf_jv_len(sf_jv_path(sf_obj_root(aw), "status.componentStatus"));
	sf_awp_comp *comps = n ? calloc(n, sizeof(*comps)) : NULL;
	if (n && !comps) {
		o->failed = 1;
		op_finish(o);
		return;
	}
	if (observe_components(c, o, m, comps, n)) {
		free(comps);
		o->plan.requeue_ms = NOT_READY_RETRY_MS;
		op_finish(o);
		return;
	}
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
		op_finish(o);
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
		op_finish(o);
		return;
	}
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
	o->pending = 1; /* held while starting */
	if (o->plan.meta_patch || o->plan.status) {
		if (start_write(o) < 0)
			o->failed = 1;
	} else {
		emit_events(o);
		run_actions(o);
	}
	op_req_done(o);
}

/* ---- lifecycle ---- */

static int slack_nodes_fresh(void *ud)
{
	return sf_awctl_nodes_fresh(ud);
}

int sf_awctl_new(uv_loop_t *loop, sf_kube_client *client, const sf_awctl_opts *opts, sf_awctl **out)
{
	sf_awctl *c = calloc(1, sizeof(*c));
	int rc = -ENOMEM;
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->client = client;
	sf_prom_hist_init(&c->reconcile_time, buckets, sizeof(buckets) / sizeof(buckets[0]));
	if (opts && opts->cfg)
		c->cfg = *opts->cfg;
	else
		sf_awcfg_defaults(&c->cfg);
	c->expect_timeout_ms =
	    opts && opts->expectation_timeout_ms > 0 ? opts->expectation_timeout_ms : 60000;
	c->fault_delay_ms = opts ? opts->fault_watch_delay_ms : 0;
	c->fault_pod_delay_ms = opts ? opts->fault_pod_watch_delay_ms : 0;
	c->fault_comp_delay_ms = opts ? opts->fault_component_watch_delay_ms : 0;
	c->fault_coalesce_ms = opts ? opts->fault_watch_coalesce_ms : 0;
	if (c->fault_coalesce_ms > 0 && c->fault_comp_delay_ms <= 0)
		c->fault_comp_delay_ms = c->fault_coalesce_ms;
	if (c->fault_coalesce_ms > 0 && c->fault_pod_delay_ms <= 0)
		c->fault_pod_delay_ms = c->fault_coalesce_ms;
	c->fault_lost_creates = opts ? opts->fault_lost_create_answers : 0;
	c->fault_crash_after = opts ? opts->fault_crash_after_write : 0;
	c->fault_stall_ms = opts ? opts->fault_watch_stall_after_ms : 0;
	c->fault_progress_ms = opts ? opts->fault_watch_progress_timeout_ms : 0;
	c->fault_node_check_ms = opts ? opts->fault_node_check_delay_ms : 0;
	if (opts && opts->ns && opts->ns[0] && !(c->ns = strdup(opts->ns)))
		goto fail;
	sf_queue_opts q = {
	    .name = "appwrapper",
	    .max_in_flight = opts && opts->workers ? opts->workers : 16,
	    .process = process,
	    .ud = c,
	};
	sf_events_opts eo = {.controller = SF_AW_EVENT_CONTROLLER,
	                     .instance = opts ? opts->identity : NULL};
	if ((rc = sf_awctl_mems_new(&c->mem)) < 0 ||
	    (rc = sf_strmap_new(0, 8, &c->phase_counts)) < 0 ||
	    (rc = sf_queue_new(loop, &q, &c->queue)) < 0 ||
	    (rc = sf_events_new(loop, client, &eo, &c->events)) < 0)
		goto fail;
	sf_queue_shutdown(c->queue, NULL, NULL); /* opened by lead */
	if ((rc = sf_awctl_informers_new(c)) < 0)
		goto fail;
	if (opts && opts->admission_params_name && opts->admission_params_name[0]) {
		/* last: nothing after it can fail (its timer is closed by stop) */
		sf_admparams_opts ao = {.cfg = &c->cfg,
		                        .ns = opts->admission_params_ns,
		                        .name = opts->admission_params_name,
		                        .interval_ms = opts->admission_params_interval_ms};
		if ((rc = sf_admparams_new(loop, client, &ao, &c->admparams)) < 0)
			goto fail;
	}
	if (c->cfg.slack_queue_name[0] && c->node_inf) {
		/* after admparams: nothing after it can fail either */
		sf_slackcq_opts so = {.name = c->cfg.slack_queue_name,
		                      .autopilot = &c->cfg.autopilot,
		                      .nodes = sf_informer_store(c->node_inf),
		                      .nodes_synced = slack_nodes_fresh,
		                      .nodes_ud = c};
		if ((rc = sf_slackcq_new(loop, client, &so, &c->slackcq)) < 0)
			goto fail;
	}
	*out = c;
	return 0;
fail:
	sf_awctl_free(c);
	return rc;
}

int sf_awctl_start(sf_awctl *c)
{
	int rc;
	if (c->started)
		return -EALREADY;
	if ((rc = sf_kinds_start(c->kinds)) < 0 || (rc = sf_informer_start(c->aw_inf)) < 0 ||
	    (rc = sf_informer_start(c->pod_inf)) < 0 ||
	    (c->node_inf && (rc = sf_informer_start(c->node_inf)) < 0))
		return rc;
	/* every replica, once: its log shows a misinstalled admission too */
	if ((rc = sf_admcheck_start(c->client, &c->cfg, &c->admcheck)) < 0)
		sf_log_warn(LOGGER, "cannot check the installed admission", "error", strerror(-rc),
		            NULL);
	c->started = 1;
	return 0;
}

static void barrier_done(void *ud, int err)
{
	sf_awctl *c = ud;
	c->barrier = NULL; /* freed after this returns */
	if (!c->leading || c->stopping)
		return;
	if (err == 0) {
		c->fresh_term = c->term;
		sf_log_info(LOGGER, "caches are at least as new as the lease", NULL);
	}
	void (*cb)(void *, int) = c->ready;
	c->ready = NULL;
	if (cb)
		cb(c->ready_ud, err);
}

int sf_awctl_lead(sf_awctl *c, const char *rv, void (*ready)(void *ud, int err), void *ud)
{
	int rc = 0;
	if (c->stopping)
		return -ESHUTDOWN;
	/* The Lease write was acknowledged before this call: a quorum list
	 * of each resource asked from now on is served after it. Per
	 * resource, because resourceVersions compare only within one
	 * resource (Leases may live on an etcd of their own). Component
	 * caches are not waited for: a stale one can only delay (absence
	 * needs a live read, Failed and Complete are terminal for the object
	 * they are on), and every replica keeps them warm. */
	int64_t since = rv ? sf_mono_ns() : 0;
	sf_barrier_cancel(c->barrier);
	c->barrier = NULL;
	c->term++;
	c->leading = 1;
	c->ready = ready;
	c->ready_ud = ud;
	sf_barrier *b = NULL;
	if ((rc = sf_barrier_new(since, barrier_done, c, &b)) < 0 ||
	    (rc = sf_barrier_add(b, c->aw_inf)) < 0 || (rc = sf_barrier_add(b, c->pod_inf)) < 0) {
		sf_barrier_cancel(b);
		c->leading = 0;
		c->ready = NULL;
		return rc;
	}
	c->barrier = b;
	/* Nodes are not in the barrier (a node cache that cannot list must
	 * not stop reconciling): the node cache only raises suspicions once
	 * it holds a list asked since now, and every evacuation waits for a
	 * live read anyway. */
	c->lead_ns = sf_mono_ns();
	if (c->node_inf)
		sf_reflector_want_fresh(sf_informer_reflector(c->node_inf), c->lead_ns);
	sf_barrier_arm(b); /* may call barrier_done at once */
	return 0;
}

int sf_awctl_activate(sf_awctl *c)
{
	if (!c->leading || c->stopping || c->fresh_term != c->term)
		return -EAGAIN;
	sf_queue_reopen(c->queue);
	sf_admparams_run(c->admparams);
	sf_slackcq_run(c->slackcq);
	sf_log_info(LOGGER, "reconciling", NULL);
	sf_awctl_enqueue_all(c);
	return 0;
}

void sf_awctl_unlead(sf_awctl *c)
{
	if (!c->leading)
		return;
	c->leading = 0;
	c->term++;
	c->ready = NULL;
	sf_barrier_cancel(c->barrier);
	c->barrier = NULL;
	sf_queue_shutdown(c->queue, NULL, NULL);
	sf_admparams_pause(c->admparams);
	sf_slackcq_pause(c->slackcq);
	sf_awctl_mems_clear(c->mem);
	sf_events_reset(c->events);
	sf_log_info(LOGGER, "stopped reconciling", NULL);
}

int sf_awctl_synced(const sf_awctl *c)
{
	return sf_informer_synced(c->aw_inf) && sf_informer_synced(c->pod_inf);
}

int sf_awctl_leading(const sf_awctl *c)
{
	return c->leading;
}

static void part_closed(void *ud)
{
	sf_awctl *c = ud;
	if (--c->closing_parts > 0)
		return;
	void (*cb)(void *) = c->stop_cb;
	c->stop_cb = NULL;
	c->queue = NULL;
	if (cb)
		cb(c->stop_ud);
}

void sf_awctl_stop(sf_awctl *c, void (*cb)(void *ud), void *ud)
{
	sf_awctl_unlead(c);
	c->stopping = 1;
	c->stop_cb = cb;
	c->stop_ud = ud;
	c->closing_parts = 1;
	for (req *r = c->reqs; r; r = r->next)
		sf_kube_call_cancel(r->call);
	c->closing_parts++;
	sf_informer_stop(c->aw_inf, part_closed, c);
	c->closing_parts++;
	sf_informer_stop(c->pod_inf, part_closed, c);
	if (c->node_inf) {
		c->closing_parts++;
		sf_informer_stop(c->node_inf, part_closed, c);
	}
	c->closing_parts++;
	sf_kinds_stop(c->kinds, part_closed, c);
	c->closing_parts++;
	sf_admcheck_stop(c->admcheck, part_closed, c);
	c->closing_parts++;
	sf_admparams_close(c->admparams, part_closed, c);
	c->admparams = NULL;
	c->closing_parts++;
	sf_slackcq_close(c->slackcq, part_closed, c);
	c->slackcq = NULL;
	c->closing_parts++;
	if (c->ops == 0)
		sf_queue_close(c->queue, part_closed, c);
	else
		c->queue_close_pending = 1; /* their sf_queue_done must come first */
	part_closed(c);
}

void sf_awctl_free(sf_awctl *c)
{
	if (!c)
		return;
	if (c->queue && !c->stopping)
		sf_queue_close(c->queue, NULL, NULL);
	sf_informer_free(c->aw_inf);
	sf_informer_free(c->pod_inf);
	sf_informer_free(c->node_inf);
	sf_barrier_cancel(c->barrier);
	sf_kinds_free(c->kinds);
	sf_admcheck_free(c->admcheck);
	sf_admparams_close(c->admparams, NULL, NULL); /* only when never stopped */
	sf_slackcq_close(c->slackcq, NULL, NULL);
	sf_events_free(c->events);
	sf_awctl_mems_free(c->mem);
	sf_strmap_free(c->phase_counts, free);
	free(c->ns);
	free(c);
}

void sf_awctl_stats_get(const sf_awctl *c, sf_awctl_stats *out)
{
	*out = c->st;
	sf_events_stats es;
	sf_events_stats_get(c->events, &es);
	out->events_created = es.created;
	out->events_aggregated = es.aggregated;
}

static unsigned long watchdog_restarts(const sf_awctl *c)
{
	sf_reflector_stats a, p;
	sf_reflector_stats_get(sf_informer_reflector(c->aw_inf), &a);
	sf_reflector_stats_get(sf_informer_reflector(c->pod_inf), &p);
	unsigned long n = 0;
	if (c->node_inf) {
		sf_reflector_stats ns;
		sf_reflector_stats_get(sf_informer_reflector(c->node_inf), &ns);
		n = ns.watchdog_restarts;
	}
	return a.watchdog_restarts + p.watchdog_restarts + n + sf_kinds_watchdog_restarts(c->kinds);
}

/* One unlabelled counter. */
static void add_count(sf_prom *p, const char *name, const char *help, uint64_t v)
{
	sf_prom_add_u(sf_prom_family_get(p, name, SF_PROM_COUNTER, help), NULL, v);
}

int sf_awctl_metrics_write(const sf_awctl *c, sf_prom *p)
{
	sf_admparams_metrics_write(c->admparams, p);
	sf_store_metrics_add(sf_informer_store(c->aw_inf), p, SF_GVR_APPWRAPPERS.group,
	                     SF_GVR_APPWRAPPERS.resource);
	sf_store_metrics_add(sf_informer_store(c->pod_inf), p, "", "pods");
	if (c->node_inf)
		sf_store_metrics_add(sf_informer_store(c->node_inf), p, "", "nodes");
	sf_kinds_metrics_write(c->kinds, p);
	if (c->slackcq)
		sf_slackcq_metrics_write(c->slackcq, p);
	add_count(p, "steadfast_watch_restarts_total",
	          "Watches ended by the progress watchdog (no event or bookmark for 150 s) and "
	          "started again on a fresh connection",
	          watchdog_restarts(c));
	sf_prom_family *f = sf_prom_family_get(p, "appwrapper_phase_total", SF_PROM_COUNTER,
	                                       "Total number of appwrappers per phase");
	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	const char *ns;
	void *v;
	while (sf_strmap_next(c->phase_counts, &it, &ns, &v)) {
		const unsigned long *cnt = v;
		for (int ph = 1; ph < SF_AW_NPHASES; ph++)
			if (cnt[ph])
				sf_prom_add_u(f,
				              (const char *[]){"namespace", ns, "phase",
				                               sf_aw_phase_name((sf_aw_phase)ph),
				                               NULL},
				              cnt[ph]);
	}
	const char *const CTL[] = {"controller", "appwrapper", NULL};
	const struct {
		const char *result;
		unsigned long v;
	} results[] = {{"success", c->res_success},
	               {"error", c->res_error},
	               {"requeue", c->res_requeue},
	               {"requeue_after", c->res_requeue_after}};
	f = sf_prom_family_get(p, "controller_runtime_reconcile_total", SF_PROM_COUNTER,
	                       "Total number of reconciliations per controller");
	for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++)
		sf_prom_add_u(
		    f,
		    (const char *[]){"controller", "appwrapper", "result", results[i].result, NULL},
		    results[i].v);
	sf_prom_add_u(sf_prom_family_get(p, "controller_runtime_reconcile_errors_total",
	                                 SF_PROM_COUNTER,
	                                 "Total number of reconciliation errors per controller"),
	              CTL, c->st.reconcile_errors);
	sf_prom_add_hist(sf_prom_family_get(p, "controller_runtime_reconcile_time_seconds",
	                                    SF_PROM_HISTOGRAM,
	                                    "Length of time per reconciliation per controller"),
	                 CTL, &c->reconcile_time);
	sf_queue_metrics qm = {0};
	if (c->queue)
		sf_queue_stats(c->queue, &qm);
	sf_prom_add_u(sf_prom_family_get(p, "controller_runtime_active_workers", SF_PROM_GAUGE,
	                                 "Number of currently used workers per controller"),
	              CTL, qm.in_flight);
	const char *const Q[] = {"name", "appwrapper", NULL};
	const struct {
		const char *name;
		sf_prom_type type;
		const char *help;
		double v;
	} wq[] = {
	    {"workqueue_depth", SF_PROM_GAUGE, "Current depth of workqueue", (double)qm.depth},
	    {"workqueue_adds_total", SF_PROM_COUNTER, "Total number of adds handled by workqueue",
	     (double)qm.adds},
	    {"workqueue_retries_total", SF_PROM_COUNTER,
	     "Total number of retries handled by workqueue", (double)qm.retries},
	    {"workqueue_longest_running_processor_seconds", SF_PROM_GAUGE,
	     "How many seconds has the longest running processor for workqueue been running.",
	     qm.longest_running_s},
	    {"workqueue_unfinished_work_seconds", SF_PROM_GAUGE,
	     "How many seconds of work has been done that is in progress.", qm.unfinished_work_s},
	};
	for (size_t i = 0; i < sizeof(wq) / sizeof(wq[0]); i++)
		sf_prom_add_f(sf_prom_family_get(p, wq[i].name, wq[i].type, wq[i].help), Q,
		              wq[i].v);
	if (c->queue) {
		sf_prom_add_hist(
		    sf_prom_family_get(p, "workqueue_queue_duration_seconds", SF_PROM_HISTOGRAM,
		                       "How long in seconds an item stays in workqueue before "
		                       "being requested"),
		    Q, &qm.queue_duration);
		sf_prom_add_hist(sf_prom_family_get(p, "workqueue_work_duration_seconds",
		                                    SF_PROM_HISTOGRAM,
		                                    "How long in seconds processing an item from "
		                                    "workqueue takes."),
		                 Q, &qm.work_duration);
	}
	const struct {
		const char *name, *help;
		unsigned long v;
	} counts[] = {
	    {"missing_suppressed",
	     "Components absent from the cache that a live read or the grace "
	     "window showed were not missing",
	     c->st.missing_suppressed},
	    {"missing_checks", "Live reads made before declaring a component missing",
	     c->st.verifies},
	    {"pods_suppressed",
	     "Steps where too few pods were cached but a live list found enough, or "
	     "all of them within the warmup grace (no InsufficientPodsReady)",
	     c->st.pods_suppressed},
	    {"pod_checks", "Live pod lists made before declaring too few pods ready",
	     c->st.pod_lists},
	    {"component_lookups",
	     "Live lists made to find a component whose name the API server chose "
	     "(generateName) before creating or deleting it",
	     c->st.finds},
	    {"node_checks", "Live node reads made before evacuating from a NoExecute node",
	     c->st.node_checks},
	    {"evacuations", "Resets of Running AppWrappers off Autopilot NoExecute nodes",
	     c->st.evacuations},
	    {"evacuations_suppressed",
	     "Steps where the node cache showed a NoExecute node that live reads did not "
	     "(no evacuation)",
	     c->st.evac_suppressed},
	    {"components_created", "Components created", c->st.creates},
	    {"components_adopted",
	     "Creates that found the component already there and owned by its AppWrapper",
	     c->st.adopted},
	    {"status_conflicts", "Status or metadata writes refused because the object had changed",
	     c->st.conflicts},
	};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		char name[96];
		snprintf(name, sizeof(name), "steadfast_appwrapper_%s_total", counts[i].name);
		add_count(p, name, counts[i].help, counts[i].v);
	}
	sf_events_stats es;
	sf_events_stats_get(c->events, &es);
	f = sf_prom_family_get(p, "steadfast_events_total", SF_PROM_COUNTER,
	                       "Events written, by outcome");
	sf_prom_add_u(f, (const char *[]){"outcome", "created", NULL}, es.created);
	sf_prom_add_u(f, (const char *[]){"outcome", "aggregated", NULL}, es.aggregated);
	return sf_prom_add_u(f, (const char *[]){"outcome", "failed", NULL}, es.failed);
}
