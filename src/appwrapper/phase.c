/*
 * phase.c - the AppWrapper phase machine (see awphase.h).
 *
 * One call looks at one AppWrapper and decides one step, the way upstream's
 * Reconcile does, with the same phases, condition types, reasons and
 * messages. Where upstream acts on a cache read that may be stale, this
 * machine asks for evidence first:
 *  - a component absent from the cache is "missing" only after its grace
 *    window (since it was created or last confirmed) and a live GET that
 *    found nothing (SF_AWP_ACT_VERIFY); until then the step waits and says
 *    so in plan->suppressed_missing;
 *  - the pause before re-creating after a reset doubles with every reset
 *    already done, computed from resettingCount and Unhealthy's transition
 *    time in the status, never from anything in memory;
 *  - a pod failure's details (pod, container, exit code, reason, message)
 *    go into the Unhealthy condition and a Warning event in the same step
 *    that detects it, before any deletion is planned.
 *  - Succeeded counts each component's own Succeeded pods up to the number
 *    it expects (one component's surplus never stands in for another's
 *    pods), and never comes while a component of a kind that never
 *    completes (a Deployment, a StatefulSet...) expects pods; readiness
 *    counts the same way.
 * Everything else (how the status is written, how deletes are guarded with
 * preconditions) is the controller's job.
 */
#include "steadfast/awphase.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awcomp.h"
#include "steadfast/goparse.h"
#include "steadfast/time.h"

static const char *const phase_names[SF_AW_NPHASES] = {
    [SF_AW_EMPTY] = "",
    [SF_AW_SUSPENDED] = "Suspended",
    [SF_AW_RESUMING] = "Resuming",
    [SF_AW_RUNNING] = "Running",
    [SF_AW_RESETTING] = "Resetting",
    [SF_AW_SUSPENDING] = "Suspending",
    [SF_AW_SUCCEEDED] = "Succeeded",
    [SF_AW_FAILED] = "Failed",
    [SF_AW_TERMINATING] = "Terminating",
};

/* condition types */
#define C_QUOTA "QuotaReserved"
#define C_DEPLOYED "ResourcesDeployed"
#define C_PODSREADY "PodsReady"
#define C_UNHEALTHY "Unhealthy"
#define C_DELETING "DeletingResources"
#define R_UNRESOLVED "ComponentStatusUnknown"

#define REQUEUE_DELETE_MS 5000
#define REQUEUE_RETRY_CREATE_MS 1000
#define REQUEUE_NOT_READY_MS 5000
#define REQUEUE_READY_MS 60000
#define REQUEUE_LIVE_PODS_MS 2000
#define REQUEUE_UNRESOLVED_MS 5000
/* A time read back from a condition (whole seconds) may be up to this much
 * earlier than the event it records. */
#define SECOND_ROUND_UP 999

/* MUTANT(m) is 1 only in the model checker's build with mutation m switched
 * on (awphase.h): each marks an evidence check that the checker must be
 * seen to defend. The shipped code compiles it to 0. */
#ifdef SF_AWP_MUTANTS
sf_awp_mutant sf_awp_mutation;
#define MUTANT(m) (sf_awp_mutation == (m))

const char *sf_awp_mutant_name(sf_awp_mutant m)
{
	static const char *const names[SF_AWP_MUT_N] = {
	    [SF_AWP_MUT_NONE] = "none",
	    [SF_AWP_MUT_RESUME_TRUSTS_CACHE] = "resume-trusts-cache",
	    [SF_AWP_MUT_DELETE_ON_POD_CACHE] = "delete-on-pod-cache",
	    [SF_AWP_MUT_MISSING_WITHOUT_LIVE] = "missing-without-live-get",
	    [SF_AWP_MUT_FAILED_FROM_CACHE] = "failed-component-from-cache",
	    [SF_AWP_MUT_LIST_BEFORE_DELETE] = "pod-list-before-delete-ack",
	    [SF_AWP_MUT_SUCCESS_FROM_CACHE] = "success-from-cache",
	    [SF_AWP_MUT_FAILED_PODS_FROM_CACHE] = "failed-pods-from-cache",
	    [SF_AWP_MUT_FOREIGN_404_ABSENT] = "foreign-404-is-absence",
	    [SF_AWP_MUT_ADOPT_DELETING] = "adopt-a-deleting-incarnation",
	    [SF_AWP_MUT_SUCCESS_ACROSS] = "success-across-components",
	};
	return m >= 0 && m < SF_AWP_MUT_N ? names[m] : "?";
}
#else
#define MUTANT(m) 0
#endif

const char *sf_aw_phase_name(sf_aw_phase p)
{
	if (p < 0 || p >= SF_AW_NPHASES)
		return "Unknown";
	return phase_names[p];
}

sf_aw_phase sf_aw_phase_parse(sf_jv s)
{
	if (!sf_jv_ok(s) || sf_jv_type(s) == SF_JSON_NULL)
		return SF_AW_EMPTY;
	for (int p = 0; p < SF_AW_NPHASES; p++)
		if (sf_jv_streq(s, phase_names[p]))
			return (sf_aw_phase)p;
	return SF_AW_PHASE_INVALID;
}

/* ---- conditions ---- */

static sf_jd *cond_find(const sf_jd *conds, const char *type)
{
	size_t n = sf_jd_len(conds);
	for (size_t i = 0; i < n; i++) {
		sf_jd *c = sf_jd_at(conds, i, NULL);
		const char *t = sf_jd_str(sf_jd_get(c, "type"), NULL);
		if (t && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}

static const char *str_or_empty(const sf_jd *n)
{
	const char *s = sf_jd_str(n, NULL);
	return s ? s : "";
}

void sf_aw_cond_get(const sf_jd *conds, const char *type, sf_aw_cond *out)
{
	memset(out, 0, sizeof(*out));
	out->status = out->reason = out->message = "";
	sf_jd *c = cond_find(conds, type);
	if (!c)
		return;
	out->present = 1;
	out->status = str_or_empty(sf_jd_get(c, "status"));
	out->reason = str_or_empty(sf_jd_get(c, "reason"));
	out->message = str_or_empty(sf_jd_get(c, "message"));
	size_t len = 0;
	const char *t = sf_jd_str(sf_jd_get(c, "lastTransitionTime"), &len);
	int64_t ns;
	if (t && sf_time_parse_rfc3339(t, len, &ns) == 0)
		out->ltt_ms = ns / SF_NSEC_PER_MSEC;
}

int sf_aw_cond_true(const sf_jd *conds, const char *type)
{
	sf_aw_cond c;
	sf_aw_cond_get(conds, type, &c);
	return c.present && strcmp(c.status, "True") == 0;
}

static int set_str_if_diff(sf_jd *obj, const char *key, const char *val, int *changed)
{
	const char *cur = sf_jd_str(sf_jd_get(obj, key), NULL);
	if (cur && strcmp(cur, val) == 0)
		return 0;
	*changed = 1;
	return sf_jd_set_str(obj, key, val);
}

int sf_aw_cond_set(sf_jd *conds, const char *type, const char *status, const char *reason,
                   const char *message, int64_t now_ms, int64_t generation)
{
	char ts[40];
	int changed = 0, rc = 0;
	sf_jd *c = cond_find(conds, type);
	sf_time_rfc3339(now_ms * SF_NSEC_PER_MSEC, ts, sizeof(ts));
	if (!c) {
		c = sf_jd_new_obj();
		if (!c)
			return -ENOMEM;
		if ((rc = sf_jd_set_str(c, "type", type)) < 0 ||
		    (rc = sf_jd_set_str(c, "status", status)) < 0 ||
		    (generation > 0 &&
		     (rc = sf_jd_set_int(c, "observedGeneration", generation)) < 0) ||
		    (rc = sf_jd_set_str(c, "lastTransitionTime", ts)) < 0 ||
		    (rc = sf_jd_set_str(c, "reason", reason)) < 0 ||
		    (rc = sf_jd_set_str(c, "message", message ? message : "")) < 0) {
			sf_jd_free(c);
			return rc;
		}
		rc = sf_jd_append(conds, c);
		return rc < 0 ? rc : 1;
	}
	const char *cur = sf_jd_str(sf_jd_get(c, "status"), NULL);
	if (!cur || strcmp(cur, status) != 0) {
		if ((rc = sf_jd_set_str(c, "status", status)) < 0 ||
		    (rc = sf_jd_set_str(c, "lastTransitionTime", ts)) < 0)
			return rc;
		changed = 1;
	}
	if ((rc = set_str_if_diff(c, "reason", reason, &changed)) < 0 ||
	    (rc = set_str_if_diff(c, "message", message ? message : "", &changed)) < 0)
		return rc;
	if (generation > 0) {
		int64_t g = 0;
		if (sf_jd_int(sf_jd_get(c, "observedGeneration"), &g) != 0 || g != generation) {
			if ((rc = sf_jd_set_int(c, "observedGeneration", generation)) < 0)
				return rc;
			changed = 1;
		}
	}
	return changed;
}

/* ---- pods ---- */

static int code_in(const int *codes, int n, int code)
{
	for (int i = 0; i < n; i++)
		if (codes[i] == code)
			return 1;
	return 0;
}

static void copy_jv_str(sf_jv v, char *buf, size_t cap)
{
	int n = sf_jv_str(v, buf, cap);
	if (n == -ERANGE) {
		/* keep a prefix: the start of a long termination message */
		char *full = sf_jv_strdup(v);
		if (full) {
			snprintf(buf, cap, "%s", full);
			free(full);
			return;
		}
	}
	if (n < 0)
		buf[0] = 0;
}

void sf_awp_pods_add(sf_awp_pods *p, sf_jv pod, const sf_aw_settings *s)
{
	sf_jv phase = sf_jv_path(pod, "status.phase");
	p->total++;
	if (sf_jv_streq(phase, "Pending")) {
		p->pending++;
	} else if (sf_jv_streq(phase, "Running")) {
		if (!sf_jv_ok(sf_jv_path(pod, "metadata.deletionTimestamp")))
			p->running++;
	} else if (sf_jv_streq(phase, "Succeeded")) {
		p->succeeded++;
	} else if (sf_jv_streq(phase, "Failed")) {
		p->failed++;
		sf_jv_iter it = sf_jv_iter_init(sf_jv_path(pod, "status.containerStatuses"));
		sf_jv cs;
		int first_detail = !p->have_fail;
		while (sf_jv_next(&it, NULL, &cs)) {
			sf_jv term = sf_jv_path(cs, "state.terminated");
			if (!sf_jv_ok(term))
				continue;
			int64_t code = 0;
			if (sf_jv_int64(sf_jv_get(term, "exitCode"), &code) != 0 || code == 0)
				continue;
			if (s && code_in(s->terminal_codes, s->n_terminal, (int)code))
				p->terminal_failure = 1;
			if (s && s->n_retryable > 0 &&
			    !code_in(s->retryable_codes, s->n_retryable, (int)code))
				p->terminal_failure = 1;
			if (first_detail && !p->have_fail) {
				p->have_fail = 1;
				p->fail_exit_code = (int)code;
				copy_jv_str(sf_jv_path(pod, "metadata.name"), p->fail_pod,
				            sizeof(p->fail_pod));
				copy_jv_str(sf_jv_get(cs, "name"), p->fail_container,
				            sizeof(p->fail_container));
				copy_jv_str(sf_jv_get(term, "reason"), p->fail_reason,
				            sizeof(p->fail_reason));
				copy_jv_str(sf_jv_get(term, "message"), p->fail_message,
				            sizeof(p->fail_message));
			}
		}
		if (first_detail && !p->have_fail) {
			/* failed without a container exit code (evicted, deadline) */
			p->have_fail = 1;
			p->fail_exit_code = -1;
			copy_jv_str(sf_jv_path(pod, "metadata.name"), p->fail_pod,
			            sizeof(p->fail_pod));
			copy_jv_str(sf_jv_path(pod, "status.reason"), p->fail_reason,
			            sizeof(p->fail_reason));
			copy_jv_str(sf_jv_path(pod, "status.message"), p->fail_message,
			            sizeof(p->fail_message));
		}
	}
}

/* 1 when API versions a and b name the same group ("" for the core one). */
static int same_group(const char *a, const char *b)
{
	const char *sa = strchr(a, '/'), *sb = strchr(b, '/');
	size_t la = sa ? (size_t)(sa - a) : 0, lb = sb ? (size_t)(sb - b) : 0;
	return la == lb && strncmp(a, b, la) == 0;
}

/* 1 when componentStatus entry cs names the object (apiVersion's group,
 * kind, name) that ref (an owner reference) does. */
static int names_component(sf_jv cs, sf_jv ref)
{
	char api[256], ref_api[256], kind[128], name[254];
	if (sf_jv_str(sf_jv_get(cs, "name"), name, sizeof(name)) <= 0 ||
	    sf_jv_str(sf_jv_get(cs, "kind"), kind, sizeof(kind)) <= 0 ||
	    sf_jv_str(sf_jv_get(cs, "apiVersion"), api, sizeof(api)) <= 0 ||
	    sf_jv_str(sf_jv_get(ref, "apiVersion"), ref_api, sizeof(ref_api)) <= 0)
		return 0;
	return sf_jv_streq(sf_jv_get(ref, "name"), name) &&
	       sf_jv_streq(sf_jv_get(ref, "kind"), kind) && same_group(api, ref_api);
}

int sf_awp_pod_component(sf_jv pod, sf_jv component_status)
{
	sf_jv ref;
	int owned = sf_awc_controller_owner(pod, &ref);
	size_t n = sf_jv_len(component_status);
	for (size_t i = 0; i < n; i++) {
		sf_jv cs = sf_jv_at(component_status, i);
		char name[254];
		if (sf_jv_streq(sf_jv_get(cs, "kind"), "Pod") &&
		    sf_jv_streq(sf_jv_get(cs, "apiVersion"), "v1") &&
		    sf_jv_str(sf_jv_get(cs, "name"), name, sizeof(name)) > 0 &&
		    sf_jv_streq(sf_jv_path(pod, "metadata.name"), name))
			return (int)i; /* the pod is the component */
		if (owned && names_component(cs, ref))
			return (int)i;
	}
	return -1;
}

void sf_awp_nodes_add(sf_awp_nodes *ns, const char *node)
{
	size_t i = 0;
	while (i < ns->n && strcmp(ns->name[i], node) < 0)
		i++;
	if (i < ns->n && strcmp(ns->name[i], node) == 0)
		return;
	if (strlen(node) >= sizeof(ns->name[0]) || ns->n == SF_AWP_MAX_NODES) {
		ns->more++;
		return;
	}
	memmove(ns->name[i + 1], ns->name[i], (ns->n - i) * sizeof(ns->name[0]));
	snprintf(ns->name[i], sizeof(ns->name[0]), "%s", node);
	ns->n++;
}

void sf_awp_nodes_str(const sf_awp_nodes *ns, char *buf, size_t n)
{
	size_t w = 0;
	if (!n)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i <= ns->n && w < n; i++) {
		int k = i < ns->n ? snprintf(buf + w, n - w, "%s%s", i ? " " : "[", ns->name[i])
		                  : snprintf(buf + w, n - w, "%s]", ns->n ? "" : "[");
		if (k < 0)
			break;
		w += (size_t)k;
	}
	if (ns->more && w < n)
		snprintf(buf + w, n - w, " and %zu more", ns->more);
}

/* ---- the step ---- */

typedef struct step {
	const sf_awp_input *in;
	sf_awp_plan *plan;
	sf_jd *status; /* working copy */
	sf_jd *conds;  /* status.conditions */
	sf_jd *comps;  /* status.componentStatus */
	int64_t now;
	int64_t generation;
	int suspend;
	int rc; /* first -ENOMEM */
	size_t act_cap;
} step;

static void note_rc(step *st, int rc)
{
	if (rc < 0 && st->rc == 0)
		st->rc = rc;
}

static void cond(step *st, const char *type, const char *status, const char *reason,
                 const char *message)
{
	note_rc(st, sf_aw_cond_set(st->conds, type, status, reason, message, st->now, 0));
}

/* upstream's clearCondition: only a True condition is set to False */
static void clear_cond(step *st, const char *type, const char *reason, const char *message)
{
	if (sf_aw_cond_true(st->conds, type))
		cond(st, type, "False", reason, message);
}

static sf_aw_cond get_cond(step *st, const char *type)
{
	sf_aw_cond c;
	sf_aw_cond_get(st->conds, type, &c);
	return c;
}

static void act(step *st, sf_awp_act_kind kind, size_t idx)
{
	sf_awp_plan *p = st->plan;
	if (p->nacts == st->act_cap) {
		size_t cap = st->act_cap ? st->act_cap * 2 : 8;
		sf_awp_act *a = realloc(p->acts, cap * sizeof(*a));
		if (!a) {
			note_rc(st, -ENOMEM);
			return;
		}
		p->acts = a;
		st->act_cap = cap;
	}
	p->acts[p->nacts++] = (sf_awp_act){kind, idx};
}

static void drop_acts(step *st, sf_awp_act_kind kind)
{
	size_t j = 0;
	for (size_t i = 0; i < st->plan->nacts; i++)
		if (st->plan->acts[i].kind != kind)
			st->plan->acts[j++] = st->plan->acts[i];
	st->plan->nacts = j;
}

__attribute__((format(printf, 4, 5))) static void event(step *st, int warning, const char *reason,
                                                        const char *fmt, ...)
{
	sf_awp_plan *p = st->plan;
	if (p->nevents == SF_AWP_MAX_EVENTS)
		return;
	sf_awp_event *e = &p->events[p->nevents++];
	e->warning = warning;
	snprintf(e->reason, sizeof(e->reason), "%s", reason);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
}

static void requeue(step *st, int64_t ms)
{
	if (ms < 0)
		ms = 0;
	if (st->plan->requeue_ms < 0 || ms < st->plan->requeue_ms)
		st->plan->requeue_ms = ms;
}

static void to_phase(step *st, sf_aw_phase p)
{
	st->plan->to = p;
	note_rc(st, sf_jd_set_str(st->status, "phase", sf_aw_phase_name(p)));
	/* the next phase acts at once */
	requeue(st, 0);
}

static int64_t resetting_count(step *st)
{
	int64_t n = 0;
	if (sf_jd_int(sf_jd_get(st->status, "resettingCount"), &n) != 0 || n < 0)
		n = 0;
	return n;
}

static void reset_or_fail(step *st, int terminal, int incr)
{
	int64_t n = resetting_count(st);
	if (!terminal && n < st->in->s->retry_limit) {
		note_rc(st, sf_jd_set_int(st->status, "resettingCount", n + incr));
		to_phase(st, SF_AW_RESETTING);
	} else {
		to_phase(st, SF_AW_FAILED);
	}
}

static sf_jd *comp_status(step *st, size_t i)
{
	return sf_jd_at(st->comps, i, NULL);
}

static sf_jd *comp_conds(step *st, size_t i)
{
	sf_jd *cs = comp_status(st, i);
	sf_jd *cc = cs ? sf_jd_arr_member(cs, "conditions") : NULL;
	if (cs && !cc)
		note_rc(st, -ENOMEM);
	return cc;
}

/* for reading: never creates the member */
static const sf_jd *comp_conds_ro(step *st, size_t i)
{
	return sf_jd_get(comp_status(st, i), "conditions");
}

static const sf_awp_comp *obs(step *st, size_t i)
{
	static const sf_awp_comp none;
	return i < st->in->ncomp ? &st->in->comp[i] : &none;
}

static void comp_cond(step *st, size_t i, const char *status, const char *reason)
{
	sf_jd *cc = comp_conds(st, i);
	if (cc)
		note_rc(st, sf_aw_cond_set(cc, C_DEPLOYED, status, reason, "", st->now, 0));
}

/* Component i's kind cannot be resolved: condition `type` (Unhealthy while
 * running, DeletingResources while deleting) says that nothing can be said
 * about the component and that the phase and quota are kept; a Warning
 * Event when that news is new. */
static void unresolved_report(step *st, size_t i, const char *type)
{
	const sf_awp_comp *c = obs(st, i);
	const sf_jd *cs = comp_status(st, i);
	char msg[900];
	snprintf(msg, sizeof(msg),
	         "cannot tell whether component %s %s %s exists: %s; keeping phase %s and its "
	         "quota until the API server can say",
	         str_or_empty(sf_jd_get(cs, "apiVersion")), str_or_empty(sf_jd_get(cs, "kind")),
	         str_or_empty(sf_jd_get(cs, "name")),
	         c->unresolved_msg && c->unresolved_msg[0] ? c->unresolved_msg
	                                                   : "its kind is not resolved",
	         sf_aw_phase_name(st->plan->from));
	int rc;
	if (strcmp(type, C_UNHEALTHY) == 0)
		rc = sf_aw_cond_set(st->conds, type, "Unknown", R_UNRESOLVED, msg, st->now, 0);
	else
		rc = sf_aw_cond_set(st->conds, type, "True", "DeletionInitiated", msg, st->now, 0);
	note_rc(st, rc);
	if (rc > 0)
		event(st, 1, R_UNRESOLVED, "%s", msg);
	requeue(st, REQUEUE_UNRESOLVED_MS);
}

/* Every component's kind resolves again: an Unhealthy=Unknown of ours
 * goes back to False. */
static void unresolved_clear(step *st)
{
	sf_aw_cond u = get_cond(st, C_UNHEALTHY);
	if (u.present && strcmp(u.status, "Unknown") == 0 && strcmp(u.reason, R_UNRESOLVED) == 0)
		cond(st, C_UNHEALTHY, "False", "ComponentStatusKnown", "");
}

/* upstream's deleteComponents, one pass: returns 1 when every component and
 * every labelled pod is gone. */
static int delete_components(step *st)
{
	const sf_aw_settings *s = st->in->s;
	int remaining = 0, unresolved = 0;
	if (!sf_aw_cond_true(st->conds, C_DELETING))
		cond(st, C_DELETING, "True", "DeletionInitiated", "");
	size_t n = sf_jd_len(st->comps);
	for (size_t i = 0; i < n; i++) {
		sf_aw_cond rd;
		sf_aw_cond_get(comp_conds_ro(st, i), C_DEPLOYED, &rd);
		const char *name = str_or_empty(sf_jd_get(comp_status(st, i), "name"));
		char prefix[254];
		sf_jv tpl =
		    sf_jv_get(sf_jv_at(sf_jv_path(st->in->aw, "spec.components"), i), "template");
		/* upstream skips a create initiated under no name; with a
		 * generated name that is exactly a create whose answer may have
		 * been lost: the controller looks it up (by owner and index) */
		if (!rd.present || strcmp(rd.status, "False") == 0 ||
		    (strcmp(rd.status, "Unknown") == 0 && name[0] == 0 &&
		     sf_awc_template_name(tpl, prefix, sizeof(prefix)) <= 0))
			continue;
		if (obs(st, i)->unresolved) {
			/* no DELETE can be sent and no answer would prove it
			 * gone: wait, keeping the phase and the quota */
			unresolved_report(st, i, C_DELETING);
			remaining = unresolved = 1;
			continue;
		}
		if (obs(st, i)->delete_gone) {
			/* (upstream's reason, spelling included) */
			comp_cond(st, i, "False", "CompononetDeleted");
			continue;
		}
		act(st, SF_AWP_ACT_DELETE, i);
		remaining = 1;
	}
	if (!unresolved) {
		/* the message of an earlier unresolved pass goes */
		sf_aw_cond d = get_cond(st, C_DELETING);
		if (d.present && strcmp(d.reason, "DeletionInitiated") == 0 && d.message[0])
			cond(st, C_DELETING, "True", "DeletionInitiated", "");
	}
	sf_aw_cond del = get_cond(st, C_DELETING);
	int expired = st->now > del.ltt_ms + s->forceful_deletion_grace_ms;
	if (remaining && !expired) {
		requeue(st, REQUEUE_DELETE_MS);
		return 0;
	}
	/* The pod cache may not have seen pods the components' controllers
	 * made a moment ago (and a Job leaves its own watch at once under
	 * background propagation): the end of a deletion - and with it
	 * QuotaReserved False and the finalizer's removal - needs a live LIST
	 * asked after every DELETE this term had acknowledged, showing no
	 * pod. The cache only says when asking is worth it. */
	int32_t cached = st->in->pods ? st->in->pods->total : 0;
	const sf_awp_live_pods *lp = st->in->live_pods;
	int fresh =
	    lp && (lp->asked > st->in->deletes_acked || MUTANT(SF_AWP_MUT_LIST_BEFORE_DELETE));
	int32_t live = fresh ? lp->pods.total : -1; /* -1: not known */
	if (!remaining && cached == 0) {
		if (live == 0 || MUTANT(SF_AWP_MUT_DELETE_ON_POD_CACHE)) {
			clear_cond(st, C_DELETING, "DeletionComplete", "");
			return 1;
		}
		if (live < 0) {
			act(st, SF_AWP_ACT_LIST_PODS, 0);
			st->plan->why = "no pod in the cache; confirming with a live list";
			requeue(st, REQUEUE_LIVE_PODS_MS);
			return 0;
		}
		/* the live list found pods the cache has not seen: wait */
	}
	if (expired) {
		if (cached > 0 || live != 0) {
			/* pods left past the grace: delete, grace period 0, those a
			 * live list found (not the cache's), and list again */
			if (live > 0)
				act(st, SF_AWP_ACT_DELETE_PODS, 0);
			act(st, SF_AWP_ACT_LIST_PODS, 0);
		} else {
			for (size_t i = 0; i < st->plan->nacts; i++)
				if (st->plan->acts[i].kind == SF_AWP_ACT_DELETE)
					st->plan->acts[i].kind = SF_AWP_ACT_DELETE_FORCE;
		}
	}
	requeue(st, REQUEUE_DELETE_MS);
	return 0;
}

/* Returns 1 when the finalizer may go (components gone, conditions final). */
static int do_deletion(step *st, sf_aw_phase phase, int has_finalizer)
{
	st->plan->why = "deleting";
	if (!has_finalizer)
		return 0;
	if (sf_aw_cond_true(st->conds, C_DEPLOYED)) {
		if (!delete_components(st)) {
			if (phase != SF_AW_TERMINATING) {
				st->plan->to = SF_AW_TERMINATING;
				note_rc(st, sf_jd_set_str(st->status, "phase", "Terminating"));
			}
			return 0;
		}
		cond(st, C_DEPLOYED, "False", "Terminating", "Resources successfully deleted");
	}
	if (sf_aw_cond_true(st->conds, C_QUOTA))
		cond(st, C_QUOTA, "False", "Terminating", "No resources deployed");
	/* the finalizer goes in a separate write, once this status is in */
	st->plan->why = "remove finalizer";
	requeue(st, 0);
	return 1;
}

static sf_jd *finalizers_without(sf_jv fins, const char *drop, const char *add)
{
	sf_jd *arr = sf_jd_new_arr();
	if (!arr)
		return NULL;
	sf_jv_iter it = sf_jv_iter_init(fins);
	sf_jv f;
	while (sf_jv_next(&it, NULL, &f)) {
		if (drop && sf_jv_streq(f, drop))
			continue;
		sf_jd *v = sf_jd_from_jv(f);
		if (!v || sf_jd_append(arr, v) < 0) {
			sf_jd_free(arr);
			return NULL;
		}
	}
	if (add && sf_jd_append(arr, sf_jd_new_str(add)) < 0) {
		sf_jd_free(arr);
		return NULL;
	}
	return arr;
}

static int has_finalizer(sf_jv aw)
{
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(aw, "metadata.finalizers"));
	sf_jv f;
	while (sf_jv_next(&it, NULL, &f))
		if (sf_jv_streq(f, SF_AW_FINALIZER))
			return 1;
	return 0;
}

/* A metadata patch: {"metadata":{"finalizers":[...]}} plus extras. */
static sf_jd *meta_patch_finalizers(step *st, const char *drop, const char *add)
{
	sf_jd *patch = sf_jd_new_obj();
	sf_jd *md = patch ? sf_jd_obj_member(patch, "metadata") : NULL;
	sf_jd *fins = finalizers_without(sf_jv_path(st->in->aw, "metadata.finalizers"), drop, add);
	if (!md || !fins || sf_jd_set(md, "finalizers", fins) < 0) {
		if (!md || !patch)
			sf_jd_free(fins);
		sf_jd_free(patch);
		note_rc(st, -ENOMEM);
		return NULL;
	}
	return patch;
}

/* 1 when something says a queue has admitted aw: podSetInfos on a
 * component (Kueue writes them with suspend=false), a QuotaReserved
 * condition, or a phase past Empty. */
static int admission_evidence(sf_jv aw)
{
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(aw, "spec.components"));
	sf_jv c;
	while (sf_jv_next(&it, NULL, &c))
		if (sf_jv_len(sf_jv_get(c, "podSetInfos")) > 0)
			return 1;
	sf_jv_iter ci = sf_jv_iter_init(sf_jv_path(aw, "status.conditions"));
	sf_jv cd;
	while (sf_jv_next(&ci, NULL, &cd))
		if (sf_jv_streq(sf_jv_get(cd, "type"), C_QUOTA))
			return 1;
	return sf_aw_phase_parse(sf_jv_path(aw, "status.phase")) > SF_AW_EMPTY;
}

static void step_empty(step *st)
{
	const sf_aw_config *cfg = st->in->cfg;
	sf_jv aw = st->in->aw;
	if (!has_finalizer(aw)) {
		/* No admission webhook: apply its defaults here (upstream's dev
		 * mode path): the queue label, suspend for Kueue, the finalizer. */
		sf_jd *patch = meta_patch_finalizers(st, NULL, SF_AW_FINALIZER);
		if (!patch)
			return;
		if (cfg->enable_kueue_integrations) {
			sf_jv labels = sf_jv_path(aw, "metadata.labels");
			int has_queue = sf_jv_ok(sf_jv_get(labels, SF_AW_QUEUE_LABEL));
			if (!has_queue && cfg->default_queue_name[0]) {
				sf_jd *l = sf_jd_obj_member(sf_jd_get(patch, "metadata"), "labels");
				note_rc(st, l ? sf_jd_set_str(l, SF_AW_QUEUE_LABEL,
				                              cfg->default_queue_name)
				              : -ENOMEM);
				has_queue = 1;
			}
			/* Never undo a queue's decision: an AppWrapper admitted
			 * before its first reconcile (every replica down, a
			 * failover window) keeps suspend=false. */
			if ((has_queue || cfg->manage_jobs_without_queue_name) && !st->suspend &&
			    !admission_evidence(aw)) {
				sf_jd *sp = sf_jd_obj_member(patch, "spec");
				note_rc(st, sp ? sf_jd_set_bool(sp, "suspend", 1) : -ENOMEM);
			}
		}
		st->plan->meta_patch = patch;
		st->plan->why = "apply defaults";
		requeue(st, 0);
		return;
	}
	if (sf_jd_len(st->comps) != sf_jv_len(sf_jv_path(aw, "spec.components"))) {
		sf_jd *init = NULL;
		char err[512];
		int rc = sf_awp_component_status_init(aw, &init, err, sizeof(err));
		if (rc == -ENOMEM) {
			note_rc(st, rc);
			return;
		}
		if (rc < 0) {
			/* a template we cannot read never gets better: fail it
			 * with the reason, instead of retrying forever */
			char msg[1100];
			snprintf(msg, sizeof(msg), "error creating components: %s", err);
			cond(st, C_UNHEALTHY, "True", "CreateFailed", msg);
			event(st, 1, C_UNHEALTHY, "CreateFailed: %s", msg);
			st->plan->why = "invalid component";
			to_phase(st, SF_AW_FAILED);
			return;
		}
		note_rc(st, sf_jd_set(st->status, "componentStatus", init));
		st->comps = sf_jd_get(st->status, "componentStatus");
	}
	st->plan->why = "initialised";
	to_phase(st, SF_AW_SUSPENDED);
}

static void step_suspended(step *st)
{
	if (st->suspend) {
		st->plan->why = "suspended";
		return;
	}
	if (!has_finalizer(st->in->aw)) {
		st->plan->meta_patch = meta_patch_finalizers(st, NULL, SF_AW_FINALIZER);
		st->plan->why = "add finalizer";
		requeue(st, 0);
		return;
	}
	cond(st, C_QUOTA, "True", "Resuming", "Suspend is false");
	cond(st, C_DEPLOYED, "True", "Resuming", "Suspend is false");
	cond(st, C_PODSREADY, "False", "Resuming", "Suspend is false");
	cond(st, C_UNHEALTHY, "False", "Resuming", "Suspend is false");
	st->plan->why = "admitted";
	to_phase(st, SF_AW_RESUMING);
}

/* 1 (with msg naming the field) when component i's template would create
 * an object other than the one componentStatus[i] tracks: identity
 * (apiVersion, kind, name) is fixed when componentStatus first records it,
 * whatever later edits of the template say. A field not recorded yet (""
 * - upstream v1.2.x initialises componentStatus with pod sets only and
 * records the rest when it creates the component) is recorded from the
 * template, and *recorded says so: the create waits for that write. */
static int identity_changed(step *st, size_t i, char *msg, size_t n, int *recorded)
{
	static const struct {
		const char *tpl, *cs;
	} f[] = {{"apiVersion", "apiVersion"}, {"kind", "kind"}, {"metadata.name", "name"}};
	sf_jv tpl = sf_jv_get(sf_jv_at(sf_jv_path(st->in->aw, "spec.components"), i), "template");
	sf_jd *cs = comp_status(st, i);
	char prefix[254];
	int gen = sf_awc_template_name(tpl, prefix, sizeof(prefix)) > 0;
	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
		char want[254] = "", have[254] = "";
		sf_jv_str(sf_jv_path(tpl, f[k].tpl), have, sizeof(have));
		snprintf(want, sizeof(want), "%s", str_or_empty(sf_jd_get(cs, f[k].cs)));
		if (gen && strcmp(f[k].cs, "name") == 0) {
			/* the API server chooses the name: none recorded yet, or
			 * one it made from this prefix */
			if (!want[0] || strncmp(want, prefix, strlen(prefix)) == 0)
				continue;
			snprintf(
			    msg, n,
			    "spec.components[%zu].template.metadata.generateName is \"%s\", but "
			    "the component was recorded as \"%s\" (status.componentStatus[%zu]."
			    "name); a component's apiVersion, kind and name cannot change once "
			    "recorded",
			    i, prefix, want, i);
			return 1;
		}
		if (!want[0] && have[0] && cs) {
			note_rc(st, sf_jd_set_str(cs, f[k].cs, have));
			*recorded = 1;
			continue;
		}
		if (strcmp(want, have) != 0) {
			snprintf(
			    msg, n,
			    "spec.components[%zu].template.%s is \"%s\", but the component "
			    "was recorded as \"%s\" (status.componentStatus[%zu].%s); a "
			    "component's apiVersion, kind and name cannot change once recorded",
			    i, f[k].tpl, have, want, i, f[k].cs);
			return 1;
		}
	}
	return 0;
}

static void step_resuming(step *st)
{
	const sf_aw_settings *s = st->in->s;
	if (st->suspend) {
		st->plan->why = "suspend while resuming";
		to_phase(st, SF_AW_SUSPENDING);
		return;
	}
	size_t n = sf_jd_len(st->comps);
	int creating = 0, fatal = 0;
	char idmsg[700];
	const char *errmsg = NULL;
	size_t err_idx = 0;
	for (size_t i = 0; i < n && !errmsg; i++) {
		sf_aw_cond rd;
		sf_aw_cond_get(comp_conds_ro(st, i), C_DEPLOYED, &rd);
		if (rd.present && strcmp(rd.status, "True") == 0)
			continue;
		const sf_awp_comp *c = obs(st, i);
		/* Created only on this attempt's evidence: the create's answer,
		 * or AlreadyExists and a live read of an object this AppWrapper
		 * controls that is not going away. A cached copy may be the
		 * incarnation a reset deleted (the last leader's, which this
		 * term never knew): a create settles it either way. */
		if (c->create == SF_AWP_CREATE_OK ||
		    (MUTANT(SF_AWP_MUT_RESUME_TRUSTS_CACHE) &&
		     c->cached.state == SF_AWP_COMP_PRESENT && !c->cached.deleting)) {
			/* a name the API server chose is recorded in the same
			 * write that says the component exists */
			if (c->created_name && c->created_name[0])
				note_rc(st,
				        sf_jd_set_str(comp_status(st, i), "name", c->created_name));
			comp_cond(st, i, "True", "ComponentCreatedSuccessfully");
			continue;
		}
		if (c->create == SF_AWP_CREATE_FATAL || c->create == SF_AWP_CREATE_RETRYABLE) {
			fatal = c->create == SF_AWP_CREATE_FATAL;
			errmsg = c->create_msg ? c->create_msg : "unknown error";
			err_idx = i;
			break;
		}
		if (c->cached.state == SF_AWP_COMP_PRESENT && c->cached.deleting) {
			/* the previous incarnation is still going away */
			requeue(st, REQUEUE_RETRY_CREATE_MS);
			creating = 1;
			continue;
		}
		int recorded = 0;
		if (identity_changed(st, i, idmsg, sizeof(idmsg), &recorded)) {
			/* what would be created is not what is tracked: never
			 * create it (the old one would be orphaned and the new
			 * one reported missing) */
			fatal = 1;
			errmsg = idmsg;
			err_idx = i;
			break;
		}
		comp_cond(st, i, "Unknown", "ComponentCreationInitiated");
		creating = 1;
		if (recorded)
			requeue(st, 0); /* create once the identity is written */
		else
			act(st, SF_AWP_ACT_CREATE, i);
	}
	if (errmsg) {
		if (!fatal) {
			sf_aw_cond rd = get_cond(st, C_DEPLOYED);
			if (st->now < rd.ltt_ms + s->admission_grace_ms) {
				st->plan->why = "create failed, retrying";
				requeue(st, REQUEUE_RETRY_CREATE_MS);
				return;
			}
		} else {
			comp_cond(st, err_idx, "False", "ComponentCreationErrored");
		}
		char msg[1100];
		snprintf(msg, sizeof(msg), "error creating components: %s", errmsg);
		cond(st, C_UNHEALTHY, "True", "CreateFailed", msg);
		event(st, 1, C_UNHEALTHY, "CreateFailed: %s", msg);
		st->plan->why = "create failed";
		if (fatal)
			to_phase(st, SF_AW_FAILED);
		else
			reset_or_fail(st, 0, 1);
		return;
	}
	if (creating) {
		st->plan->why = "creating components";
		return;
	}
	st->plan->why = "components created";
	to_phase(st, SF_AW_RUNNING);
}

/* When this replica's evidence that component i existed was last renewed. */
static int64_t comp_confirmed_ms(step *st, size_t i)
{
	const sf_awp_comp *c = obs(st, i);
	if (c->confirmed_ms > 0)
		return c->confirmed_ms;
	sf_aw_cond rd;
	sf_aw_cond_get(comp_conds_ro(st, i), C_DEPLOYED, &rd);
	if (rd.present && rd.ltt_ms > 0)
		return rd.ltt_ms + SECOND_ROUND_UP;
	return get_cond(st, C_DEPLOYED).ltt_ms + SECOND_ROUND_UP;
}

static void failure_detail(const sf_awp_pods *p, char *buf, size_t n)
{
	if (!p->have_fail) {
		snprintf(buf, n, "%d failed pods", p->failed);
		return;
	}
	if (p->fail_exit_code >= 0)
		snprintf(buf, n, "%d failed pods; pod %s container %s exited with code %d (%s)%s%s",
		         p->failed, p->fail_pod, p->fail_container, p->fail_exit_code,
		         p->fail_reason[0] ? p->fail_reason : "no reason",
		         p->fail_message[0] ? ": " : "", p->fail_message);
	else
		snprintf(buf, n, "%d failed pods; pod %s failed (%s)%s%s", p->failed, p->fail_pod,
		         p->fail_reason[0] ? p->fail_reason : "no reason",
		         p->fail_message[0] ? ": " : "", p->fail_message);
}

/* Autopilot's evacuation: a Running pod on a node whose NoExecute label
 * value names a resource the pod uses. The node cache only raises the
 * suspicion; a live read of each suspected node, answered since the last
 * step, decides, so a label already gone (or a node cache behind) never
 * costs a user a running workload. The reset does not count against the
 * retry limit, as upstream (which fails the AppWrapper instead when the
 * limit is already reached). Returns 1 when the step ends here. */
static int evacuate(step *st)
{
	const sf_awp_nodes *sus = st->in->noexec;
	if (!sus || (sus->n == 0 && sus->more == 0))
		return 0;
	const sf_awp_nodes *live = st->in->noexec_live;
	if (!live) {
		act(st, SF_AWP_ACT_VERIFY_NODES, 0);
		st->plan->why =
		    "pods on NoExecute nodes in the node cache; confirming with live reads";
		requeue(st, REQUEUE_LIVE_PODS_MS);
		return 1;
	}
	if (live->n == 0 && live->more == 0) {
		st->plan->suppressed_evacuation = 1;
		return 0;
	}
	char nodes[700], msg[800];
	sf_awp_nodes_str(live, nodes, sizeof(nodes));
	snprintf(msg, sizeof(msg), "Workload contains pods using NoExecute resources on Nodes: %s",
	         nodes);
	cond(st, C_UNHEALTHY, "True", "AutopilotNoExecute", msg);
	event(st, 0, C_UNHEALTHY, "%s", msg);
	st->plan->why = "evacuation from NoExecute nodes";
	st->plan->evacuated = 1;
	reset_or_fail(st, 0, 0);
	return 1;
}

/* The pods component i is expected to have (its definitive pod sets). */
static int64_t comp_expected(const step *st, size_t i)
{
	int64_t e = 0;
	char err[64];
	if (sf_awc_component_expected_pods(st->in->aw, i, &e, err, sizeof(err)) < 0)
		return 0;
	return e;
}

/* The succeeded pods of tally p (live: the live list's, else the pod
 * cache's) that count towards the expected ones: each component's own up
 * to the number it expects, and every pod no component claims (a
 * Deployment's, through its ReplicaSet; a JobSet's, through its Jobs).
 * Upstream counts them all, so one component's surplus (a Job of
 * completions 2 and parallelism 1 expects one pod and leaves two) stood in
 * for another's pods that never succeeded. */
static int64_t succeeded_counted(const step *st, const sf_awp_pods *p, int live)
{
	int64_t claimed = 0, counted = 0;
	if (MUTANT(SF_AWP_MUT_SUCCESS_ACROSS))
		return p->succeeded;
	for (size_t i = 0; i < st->in->ncomp; i++) {
		const sf_awp_comp *c = &st->in->comp[i];
		int64_t own = live ? c->live_succeeded : c->succeeded;
		int64_t e = comp_expected(st, i);
		claimed += own;
		counted += own < e ? own : e;
	}
	return counted + (p->succeeded > claimed ? p->succeeded - claimed : 0);
}

/* The grace the pods of a tally get (live: the live list's): the warmup
 * grace once they all exist (pending, running or succeeded), the
 * admission grace while some do not. */
static int64_t pods_grace(const step *st, const sf_awp_pods *p, int live)
{
	return ((int64_t)p->pending + p->running + succeeded_counted(st, p, live) >=
	        st->in->expected_pods)
	           ? st->in->s->warmup_grace_ms
	           : st->in->s->admission_grace_ms;
}

/* Too few pods in the cache past their grace: a live list of them first,
 * and a step again once it is answered. */
static void confirm_with_live_list(step *st)
{
	act(st, SF_AWP_ACT_LIST_PODS, 0);
	st->plan->why = "too few pods in the cache; confirming with a live list";
	requeue(st, REQUEUE_LIVE_PODS_MS);
}

/* The pods say the workload is done: enough succeeded (each component's
 * own counted up to what it expects), none pending, running or failed. */
static int pods_succeeded(const step *st, const sf_awp_pods *p, int live)
{
	return succeeded_counted(st, p, live) >= st->in->expected_pods &&
	       p->pending + p->running + p->failed == 0;
}

/* 1 when a component of a kind that never completes (a Deployment, a
 * StatefulSet...: sf_awc_kind_never_completes) expects pods: its pods run
 * until it is deleted, so the AppWrapper holding it is never Succeeded. */
static int never_completes(step *st)
{
	if (MUTANT(SF_AWP_MUT_SUCCESS_ACROSS))
		return 0;
	size_t n = sf_jd_len(st->comps);
	for (size_t i = 0; i < n; i++) {
		const sf_jd *cs = comp_status(st, i);
		if (sf_awc_kind_never_completes(str_or_empty(sf_jd_get(cs, "apiVersion")),
		                                str_or_empty(sf_jd_get(cs, "kind"))) &&
		    comp_expected(st, i) > 0)
			return 1;
	}
	return 0;
}

/* Success as live reads say it: 1 when a live pod list and a live read of
 * every component that reports its completion agree; 0 when they
 * disagree; -1 when some are missing (then they are asked for). */
static int success_confirmed(step *st)
{
	int ask = 0, ok = 1;
	const sf_awp_live_pods *lp = st->in->live_pods;
	if (!lp) {
		act(st, SF_AWP_ACT_LIST_PODS, 0);
		ask = 1;
	} else if (!pods_succeeded(st, &lp->pods, 1)) {
		ok = 0;
	}
	size_t n = sf_jd_len(st->comps);
	for (size_t i = 0; i < n; i++) {
		const sf_awp_comp *c = obs(st, i);
		if (!c->completion_known)
			continue;
		if (c->live.found == SF_AWP_LIVE_NONE) {
			act(st, SF_AWP_ACT_VERIFY, i);
			ask = 1;
		} else if (c->live.found != SF_AWP_LIVE_FOUND || !c->live.complete) {
			ok = 0;
		}
	}
	if (ask) {
		/* a verdict from a mix of this step's and the next's reads
		 * would compare different moments: ask for all of them */
		if (lp)
			act(st, SF_AWP_ACT_LIST_PODS, 0);
		for (size_t i = 0; i < n; i++)
			if (obs(st, i)->completion_known &&
			    obs(st, i)->live.found != SF_AWP_LIVE_NONE)
				act(st, SF_AWP_ACT_VERIFY, i);
		return -1;
	}
	return ok;
}

/* 1 when the live read answered since the last step found component c
 * Failed=True (the only word a FailedComponent reset takes). */
static int failure_confirmed(const sf_awp_comp *c)
{
	if (c->live.found == SF_AWP_LIVE_FOUND)
		return c->live.failed;
	return MUTANT(SF_AWP_MUT_FAILED_FROM_CACHE) && c->cached.failed;
}

/* A live read of each component whose cached copy alone says Failed=True
 * (an earlier incarnation's word, maybe), asked once nothing else makes
 * the step wait: its answer is news for one step, so one asked while the
 * step still waits would expire unused, and every step until the wait
 * ends would ask again. */
static void verify_cached_failures(step *st)
{
	size_t n = sf_jd_len(st->comps);
	for (size_t i = 0; i < n; i++) {
		const sf_awp_comp *c = obs(st, i);
		if (!c->unresolved && c->cached.state == SF_AWP_COMP_PRESENT &&
		    !c->cached.deleting && c->cached.failed && !failure_confirmed(c) &&
		    c->live.found == SF_AWP_LIVE_NONE)
			act(st, SF_AWP_ACT_VERIFY, i);
	}
}

static void step_running(step *st)
{
	const sf_aw_settings *s = st->in->s;
	static const sf_awp_pods no_pods;
	const sf_awp_pods *pods = st->in->pods ? st->in->pods : &no_pods;
	if (st->suspend) {
		st->plan->why = "suspend while running";
		to_phase(st, SF_AW_SUSPENDING);
		return;
	}
	size_t n = sf_jd_len(st->comps);
	int64_t failed = 0;
	int missing = 0, waiting = 0, doubt = 0, incomplete = 0;
	for (size_t i = 0; i < n; i++) {
		const sf_awp_comp *c = obs(st, i);
		if (c->unresolved) {
			/* cannot say whether it exists: keep the phase and the
			 * quota, and say so */
			unresolved_report(st, i, C_UNHEALTHY);
			waiting = 1;
			continue;
		}
		if (c->cached.state == SF_AWP_COMP_PRESENT && !c->cached.deleting) {
			incomplete += c->completion_known && !c->cached.complete;
			if (failure_confirmed(c)) {
				failed++; /* confirmed by a live read */
			} else if (c->cached.failed) {
				/* the cache's copy says Failed: it may be an
				 * earlier incarnation's word; a reset needs the
				 * live object's (verify_cached_failures) */
				doubt = 1;
				if (c->live.found != SF_AWP_LIVE_NONE) {
					st->plan->suppressed_stale = 1;
					requeue(st, REQUEUE_NOT_READY_MS);
				}
			}
			continue;
		}
		if (c->cached.state == SF_AWP_COMP_PENDING)
			continue; /* we created it; the cache has not caught up */
		/* Absent from the cache (or being deleted by someone). That is
		 * a suspicion, not evidence. */
		int64_t until = comp_confirmed_ms(st, i) + s->missing_grace_ms;
		if (c->live.found == SF_AWP_LIVE_MISSING ||
		    (MUTANT(SF_AWP_MUT_MISSING_WITHOUT_LIVE) && st->now >= until)) {
			missing++;
			continue;
		}
		waiting = 1;
		if (c->live.found == SF_AWP_LIVE_FOUND) {
			/* a live read saw it: the cache is behind */
			requeue(st, REQUEUE_NOT_READY_MS);
		} else if (st->now < until) {
			requeue(st, until - st->now);
		} else {
			act(st, SF_AWP_ACT_VERIFY, i);
		}
	}
	if (missing) {
		char msg[160];
		snprintf(msg, sizeof(msg),
		         "Only found %" PRId64 " deployed components, but was expecting %zu",
		         (int64_t)n - missing, n);
		cond(st, C_UNHEALTHY, "True", "MissingComponent", msg);
		event(st, 1, C_UNHEALTHY, "MissingComponent: %s", msg);
		st->plan->why = "missing component";
		drop_acts(st, SF_AWP_ACT_VERIFY);
		st->plan->requeue_ms = -1;
		to_phase(st, SF_AW_FAILED);
		return;
	}
	if (waiting) {
		st->plan->suppressed_missing = 1;
		st->plan->why = "component not in cache; confirming before acting";
		return;
	}
	if (doubt) {
		verify_cached_failures(st);
		st->plan->why = "a cached Failed=True; confirming with a live read";
		return;
	}
	unresolved_clear(st);
	if (failed > 0) {
		char msg[96];
		snprintf(msg, sizeof(msg), "Found %" PRId64 " failed components", failed);
		cond(st, C_UNHEALTHY, "True", "FailedComponent", msg);
		event(st, 1, C_UNHEALTHY, "FailedComponent: %s", msg);
		st->plan->why = "failed component";
		reset_or_fail(st, pods->terminal_failure, 1);
		return;
	}
	if (pods_succeeded(st, pods, 0) && incomplete == 0 && !never_completes(st)) {
		/* The caches say done. Succeeded ends the workload (Kueue
		 * finishes it, QuotaReserved goes False): the live pods and
		 * each component that reports its completion must say so. */
		const sf_awp_pods *done = pods;
		if (!MUTANT(SF_AWP_MUT_SUCCESS_FROM_CACHE)) {
			int r = success_confirmed(st);
			if (r <= 0) {
				if (r < 0) {
					st->plan->why =
					    "success in the caches; confirming with live reads";
				} else {
					st->plan->suppressed_stale = 1;
					st->plan->why = "success in the caches, not in live reads";
				}
				requeue(st, REQUEUE_LIVE_PODS_MS);
				return;
			}
			done = &st->in->live_pods->pods;
		}
		char msg[128];
		snprintf(msg, sizeof(msg),
		         "%d pods succeeded and no running, pending, or failed pods",
		         done->succeeded);
		cond(st, C_QUOTA, "False", "Succeeded", msg);
		cond(st, C_DEPLOYED, "True", "Succeeded", msg);
		st->plan->why = "succeeded";
		to_phase(st, SF_AW_SUCCEEDED);
		return;
	}
	if (pods->failed > 0) {
		char detail[800];
		failure_detail(pods, detail, sizeof(detail));
		sf_aw_cond before = get_cond(st, C_UNHEALTHY);
		int first = !(before.present && strcmp(before.status, "True") == 0 &&
		              strcmp(before.reason, "FoundFailedPods") == 0);
		cond(st, C_UNHEALTHY, "True", "FoundFailedPods", detail);
		sf_aw_cond u = get_cond(st, C_UNHEALTHY);
		int64_t deadline = u.ltt_ms + s->failure_grace_ms;
		if (st->now < deadline) {
			/* first sight: tell the user now, before any reset */
			if (first)
				event(st, 1, "FoundFailedPods", "%s", detail);
			st->plan->why = "failed pods, within failure grace";
			requeue(st, deadline - st->now);
			return;
		}
		/* Past the grace a reset follows: the failure must be in a
		 * live list (a cached pod may be gone, or an earlier
		 * incarnation's), and its details are the live list's. */
		int terminal = pods->terminal_failure;
		if (!MUTANT(SF_AWP_MUT_FAILED_PODS_FROM_CACHE)) {
			const sf_awp_live_pods *lp = st->in->live_pods;
			if (!lp) {
				act(st, SF_AWP_ACT_LIST_PODS, 0);
				st->plan->why =
				    "failed pods in the cache; confirming with a live list";
				requeue(st, REQUEUE_LIVE_PODS_MS);
				return;
			}
			if (lp->pods.failed == 0) {
				st->plan->suppressed_stale = 1;
				st->plan->why = "failed pods in the cache, none in a live list";
				requeue(st, REQUEUE_LIVE_PODS_MS);
				return;
			}
			failure_detail(&lp->pods, detail, sizeof(detail));
			cond(st, C_UNHEALTHY, "True", "FoundFailedPods", detail);
			terminal = lp->pods.terminal_failure;
		}
		event(st, 1, C_UNHEALTHY, "FoundFailedPods: %s", detail);
		st->plan->why = "failed pods";
		reset_or_fail(st, terminal, 1);
		return;
	}
	if (evacuate(st))
		return;
	clear_cond(st, C_UNHEALTHY, "FoundNoFailedPods", "");
	if ((int64_t)pods->running + succeeded_counted(st, pods, 0) >= st->in->expected_pods) {
		char msg[96];
		snprintf(msg, sizeof(msg), "%d pods running; %d pods succeeded", pods->running,
		         pods->succeeded);
		cond(st, C_PODSREADY, "True", "SufficientPodsReady", msg);
		st->plan->why = "pods ready";
		requeue(st, REQUEUE_READY_MS);
		return;
	}
	char detail[128];
	snprintf(detail, sizeof(detail), "%d pods pending; %d pods running; %d pods succeeded",
	         pods->pending, pods->running, pods->succeeded);
	clear_cond(st, C_PODSREADY, "InsufficientPodsReady", detail);
	/* The grace counts from the later of the deployment and the last time
	 * enough pods were seen (PodsReady turning False): one step with a
	 * stale pod cache on a long-running AppWrapper must not reset it. */
	sf_aw_cond rd = get_cond(st, C_DEPLOYED);
	sf_aw_cond pr = get_cond(st, C_PODSREADY);
	int64_t from = rd.ltt_ms;
	if (pr.present && strcmp(pr.status, "False") == 0 &&
	    strcmp(pr.reason, "InsufficientPodsReady") == 0 && pr.ltt_ms > from)
		from = pr.ltt_ms;
	int64_t grace = pods_grace(st, pods, 0);
	if (st->now < from + grace) {
		st->plan->why = "waiting for pods";
		int64_t left = from + grace - st->now;
		requeue(st, left < REQUEUE_NOT_READY_MS ? left : REQUEUE_NOT_READY_MS);
		return;
	}
	/* Too few pods in the cache past the grace: confirm with a live list
	 * answered after the grace expired before anything is reset. */
	const sf_awp_pods *live = st->in->live_pods ? &st->in->live_pods->pods : NULL;
	int64_t live_ms = st->in->live_pods ? st->in->live_pods->answered_ms : 0;
	if (!live || live_ms < from + grace) {
		confirm_with_live_list(st);
		return;
	}
	if ((int64_t)live->running + succeeded_counted(st, live, 1) >= st->in->expected_pods) {
		/* the cache is behind: enough pods exist */
		st->plan->suppressed_pods = 1;
		st->plan->why = "too few pods in the cache, enough in a live list";
		requeue(st, REQUEUE_LIVE_PODS_MS);
		return;
	}
	/* The live tally is judged by the rule the cache's is: a cache behind
	 * that misses pods the live list finds (Pending, pulling an image)
	 * must not cut their warmup grace down to the admission grace. */
	int64_t live_grace = pods_grace(st, live, 1);
	if (st->now < from + live_grace) {
		st->plan->suppressed_pods = 1;
		st->plan->why = "too few pods in the cache, all of them in a live list";
		int64_t left = from + live_grace - st->now;
		requeue(st, left < REQUEUE_LIVE_PODS_MS ? left : REQUEUE_LIVE_PODS_MS);
		return;
	}
	if (live_ms < from + live_grace) {
		confirm_with_live_list(st); /* answered before that grace expired */
		return;
	}
	snprintf(detail, sizeof(detail), "%d pods pending; %d pods running; %d pods succeeded",
	         live->pending, live->running, live->succeeded);
	cond(st, C_UNHEALTHY, "True", "InsufficientPodsReady", detail);
	event(st, 1, C_UNHEALTHY, "InsufficientPodsReady: %s", detail);
	st->plan->why = "insufficient pods ready";
	reset_or_fail(st, live->terminal_failure, 1);
}

static void step_suspending(step *st)
{
	st->plan->why = "suspending";
	if (sf_aw_cond_true(st->conds, C_DEPLOYED)) {
		if (!delete_components(st))
			return;
		cond(st, C_DEPLOYED, "False", "Suspended", "Suspend is true");
	}
	cond(st, C_QUOTA, "False", "Suspended", "Suspend is true");
	clear_cond(st, C_PODSREADY, "Suspended", "");
	clear_cond(st, C_UNHEALTHY, "Suspended", "");
	to_phase(st, SF_AW_SUSPENDED);
}

static void step_resetting(step *st)
{
	if (st->suspend) {
		st->plan->why = "suspend while resetting";
		to_phase(st, SF_AW_SUSPENDING);
		return;
	}
	st->plan->why = "resetting";
	clear_cond(st, C_PODSREADY, "Resetting", "");
	if (sf_aw_cond_true(st->conds, C_DEPLOYED)) {
		if (!delete_components(st))
			return;
		cond(st, C_DEPLOYED, "False", "Resetting",
		     "Resources deleted for resetting AppWrapper");
	}
	int64_t count = resetting_count(st);
	int64_t pause = sf_aw_retry_pause_ms(st->in->s, st->in->cfg,
	                                     count > 0 ? (int)(count > 62 ? 62 : count - 1) : 0);
	/* Upstream counts the pause from Unhealthy's transition. When the
	 * re-created pods fail again before any healthy pass, Unhealthy never
	 * left True and its time is the first failure's: the pause would
	 * shrink with every reset. The end of this reset's deletion
	 * (ResourcesDeployed turning False, reason Resetting) is fresh in
	 * every cycle and kept in the status, so the pause counts from the
	 * later of the two. */
	sf_aw_cond u = get_cond(st, C_UNHEALTHY);
	sf_aw_cond rd = get_cond(st, C_DEPLOYED);
	int64_t from = u.ltt_ms;
	if (rd.present && strcmp(rd.status, "False") == 0 && strcmp(rd.reason, "Resetting") == 0 &&
	    rd.ltt_ms > from)
		from = rd.ltt_ms;
	/* condition times have whole seconds: count from the end of that
	 * second so the pause is never shorter than configured */
	int64_t deadline = from + SECOND_ROUND_UP + pause;
	if (st->now < deadline) {
		st->plan->why = "pausing before re-creating";
		requeue(st, deadline - st->now);
		return;
	}
	cond(st, C_DEPLOYED, "True", "Resuming", "Reset complete; resuming");
	to_phase(st, SF_AW_RESUMING);
}

static void step_failed(step *st)
{
	const sf_aw_settings *s = st->in->s;
	int64_t delay = s->deletion_on_failure_grace_ms;
	st->plan->why = "failed";
	if (delay > 0 && !st->suspend) {
		char d[40], msg[128];
		sf_go_duration_format(delay * SF_NSEC_PER_MSEC, d, sizeof(d));
		snprintf(msg, sizeof(msg), "%sdeletionOnFailureGracePeriodDuration has value %s",
		         SF_AW_ANNOT_PREFIX, d);
		cond(st, C_DELETING, "False", "DeletionPaused", msg);
		sf_aw_cond dc = get_cond(st, C_DELETING);
		if (st->now < dc.ltt_ms + delay) {
			st->plan->why = "failed; deletion paused";
			requeue(st, dc.ltt_ms + delay - st->now);
			return;
		}
	}
	if (sf_aw_cond_true(st->conds, C_DEPLOYED)) {
		if (!delete_components(st))
			return;
		cond(st, C_DEPLOYED, "False", "Failed",
		     delay > 0 && st->suspend
		         ? "Kueue forced resource deletion by suspending AppWrapper"
		         : "Resources deleted for failed AppWrapper");
	}
	cond(st, C_QUOTA, "False", "Failed", "No resources deployed");
}

static void step_succeeded(step *st)
{
	st->plan->why = "succeeded";
	if (!sf_aw_cond_true(st->conds, C_DEPLOYED))
		return;
	int64_t ttl = st->in->s->success_ttl_ms;
	sf_aw_cond rd = get_cond(st, C_DEPLOYED);
	if (st->now < rd.ltt_ms + ttl) {
		requeue(st, rd.ltt_ms + ttl - st->now);
		return;
	}
	if (!delete_components(st))
		return;
	char d[40], msg[96];
	sf_go_duration_format(ttl * SF_NSEC_PER_MSEC, d, sizeof(d));
	snprintf(msg, sizeof(msg), "Time to live after success of %s expired", d);
	cond(st, C_DEPLOYED, "False", "Succeeded", msg);
}

/* 1 when the working status st says what status (the object's, maybe
 * absent) says, once both are normalised the same way (conditions and
 * componentStatus lists present); 0 when not; -ENOMEM. */
static int status_unchanged(sf_jv status, const sf_jd *st)
{
	sf_jd *orig =
	    sf_jv_type(status) == SF_JSON_OBJECT ? sf_jd_from_jv(status) : sf_jd_new_obj();
	if (!orig)
		return -ENOMEM;
	if (!sf_jd_arr_member(orig, "conditions")) {
		sf_jd_del(orig, "conditions");
		sf_jd_arr_member(orig, "conditions");
	}
	if (sf_jd_type(sf_jd_get(orig, "componentStatus")) != SF_JSON_ARRAY) {
		sf_jd_del(orig, "componentStatus");
		sf_jd_arr_member(orig, "componentStatus");
	}
	int same = sf_jd_equal(orig, st);
	sf_jd_free(orig);
	return same;
}

int sf_awp_step(const sf_awp_input *in, sf_awp_plan *plan, char *err, size_t errlen)
{
	memset(plan, 0, sizeof(*plan));
	plan->requeue_ms = -1;
	plan->why = "";
	if (errlen)
		err[0] = 0;
	sf_jv aw = in->aw;
	if (sf_jv_type(aw) != SF_JSON_OBJECT) {
		snprintf(err, errlen, "not an object");
		return -EINVAL;
	}
	sf_jv managed_by = sf_jv_path(aw, "spec.managedBy");
	if (sf_jv_type(managed_by) == SF_JSON_STRING &&
	    !sf_jv_streq(managed_by, SF_AW_CONTROLLER_NAME)) {
		plan->skipped = 1;
		plan->why = "managed by another controller";
		return 0;
	}
	step st = {.in = in, .plan = plan, .now = in->now_ms};
	int b = 0;
	if (sf_jv_bool(sf_jv_path(aw, "spec.suspend"), &b) == 0)
		st.suspend = b;
	sf_jv status = sf_jv_get(aw, "status");
	st.status = sf_jv_type(status) == SF_JSON_OBJECT ? sf_jd_from_jv(status) : sf_jd_new_obj();
	if (!st.status)
		return -ENOMEM;
	st.conds = sf_jd_arr_member(st.status, "conditions");
	if (!st.conds) {
		/* a conditions member of the wrong type: start over */
		sf_jd_del(st.status, "conditions");
		st.conds = sf_jd_arr_member(st.status, "conditions");
	}
	st.comps = sf_jd_get(st.status, "componentStatus");
	if (sf_jd_type(st.comps) != SF_JSON_ARRAY) {
		sf_jd_del(st.status, "componentStatus");
		st.comps = sf_jd_arr_member(st.status, "componentStatus");
	}
	if (!st.conds || !st.comps) {
		sf_jd_free(st.status);
		return -ENOMEM;
	}
	sf_aw_phase phase = sf_aw_phase_parse(sf_jv_get(status, "phase"));
	plan->from = plan->to = phase;
	int fin = has_finalizer(aw);

	if (sf_jv_ok(sf_jv_path(aw, "metadata.deletionTimestamp"))) {
		if (do_deletion(&st, phase, fin) && st.rc == 0) {
			/* conditions already final: drop the finalizer now (a
			 * status never written compares as the empty one, or an
			 * AppWrapper deleted before its first reconcile would
			 * keep its finalizer) */
			int same = status_unchanged(status, st.status);
			if (same < 0) {
				note_rc(&st, same);
			} else if (same) {
				plan->meta_patch =
				    meta_patch_finalizers(&st, SF_AW_FINALIZER, NULL);
				plan->requeue_ms = -1;
			}
		}
	} else {
		switch (phase) {
		case SF_AW_EMPTY: step_empty(&st); break;
		case SF_AW_SUSPENDED: step_suspended(&st); break;
		case SF_AW_RESUMING: step_resuming(&st); break;
		case SF_AW_RUNNING: step_running(&st); break;
		case SF_AW_SUSPENDING: step_suspending(&st); break;
		case SF_AW_RESETTING: step_resetting(&st); break;
		case SF_AW_FAILED: step_failed(&st); break;
		case SF_AW_SUCCEEDED: step_succeeded(&st); break;
		case SF_AW_TERMINATING:
			/* only meaningful with a deletionTimestamp */
			plan->why = "terminating";
			break;
		default:
			snprintf(err, errlen, "unknown phase in status");
			plan->why = "unknown phase";
			break;
		}
	}
	if (st.rc < 0) {
		sf_jd_free(st.status);
		sf_awp_plan_free(plan);
		return st.rc;
	}
	if (plan->meta_patch) {
		/* one write per step: the status waits for the next pass */
		sf_jd_free(st.status);
		free(plan->acts);
		plan->acts = NULL;
		plan->nacts = 0;
		plan->nevents = 0;
		return 0;
	}
	int same = status_unchanged(status, st.status);
	if (same < 0) {
		sf_jd_free(st.status);
		sf_awp_plan_free(plan);
		return same;
	}
	if (same)
		sf_jd_free(st.status);
	else
		plan->status = st.status;
	return 0;
}

/* ---- reading answers ---- */

int sf_awp_read_verify(const sf_awp_answer *a, sf_awp_confirmed *out)
{
	memset(out, 0, sizeof(*out));
	switch (a->kind) {
	case SF_AWP_ANS_ABSENT: out->found = SF_AWP_LIVE_MISSING; return 0;
	case SF_AWP_ANS_FOREIGN_404:
		if (MUTANT(SF_AWP_MUT_FOREIGN_404_ABSENT)) {
			out->found = SF_AWP_LIVE_MISSING;
			return 0;
		}
		return -EAGAIN;
	case SF_AWP_ANS_OK:
		/* someone else's object under the name, or ours being deleted
		 * by someone else: ours is gone for good */
		if (!a->owned || (a->deleting && !a->ours_gone)) {
			out->found = SF_AWP_LIVE_MISSING;
			return 0;
		}
		out->found = SF_AWP_LIVE_FOUND;
		out->failed = a->failed;
		out->complete = a->complete;
		return 0;
	default: return -EAGAIN;
	}
}

int sf_awp_read_create(const sf_awp_answer *a, sf_awp_create_outcome *out)
{
	switch (a->kind) {
	case SF_AWP_ANS_EXISTS: return 1;
	case SF_AWP_ANS_OK: *out = SF_AWP_CREATE_OK; return 0;
	case SF_AWP_ANS_INVALID: *out = SF_AWP_CREATE_FATAL; return 0;
	default: *out = SF_AWP_CREATE_RETRYABLE; return 0;
	}
}

int sf_awp_read_adopt(const sf_awp_answer *a, sf_awp_create_outcome *out)
{
	switch (a->kind) {
	case SF_AWP_ANS_ABSENT:
		/* gone between the create and the read: create again */
		*out = SF_AWP_CREATE_RETRYABLE;
		return 0;
	case SF_AWP_ANS_OK:
		if (!a->owned)
			*out = SF_AWP_CREATE_FATAL;
		else if ((a->deleting || a->ours_gone) && !MUTANT(SF_AWP_MUT_ADOPT_DELETING))
			*out = SF_AWP_CREATE_RETRYABLE; /* an earlier incarnation, going */
		else
			*out = SF_AWP_CREATE_OK;
		return 0;
	default: return -EAGAIN;
	}
}

int sf_awp_read_delete(const sf_awp_answer *a, int *gone)
{
	*gone = 0;
	switch (a->kind) {
	case SF_AWP_ANS_ABSENT: *gone = 1; return 1;
	case SF_AWP_ANS_CONFLICT:
		/* the UID precondition failed: the name holds another object,
		 * which may be a newer incarnation of ours (a create whose
		 * answer was lost, a cache behind): only a live read can say */
		return 0;
	case SF_AWP_ANS_FOREIGN_404:
		if (MUTANT(SF_AWP_MUT_FOREIGN_404_ABSENT)) {
			*gone = 1;
			return 1;
		}
		return -EAGAIN;
	case SF_AWP_ANS_OK:
		if (!a->owned) {
			*gone = 1; /* the name holds another's object: ours is gone */
			return 1;
		}
		return 0;
	default: return -EAGAIN;
	}
}

void sf_awp_plan_free(sf_awp_plan *plan)
{
	if (!plan)
		return;
	sf_jd_free(plan->status);
	sf_jd_free(plan->meta_patch);
	free(plan->acts);
	plan->status = plan->meta_patch = NULL;
	plan->acts = NULL;
	plan->nacts = 0;
}

#define MAX_PODSETS 64

int sf_awp_component_status_init(sf_jv aw, sf_jd **out, char *err, size_t errlen)
{
	sf_jv comps = sf_jv_path(aw, "spec.components");
	sf_awc_podset *ps = calloc(MAX_PODSETS, sizeof(*ps));
	sf_jd *arr = sf_jd_new_arr();
	int rc = 0;
	*out = NULL;
	if (!ps || !arr) {
		rc = -ENOMEM;
		goto out;
	}
	if (sf_jv_type(comps) != SF_JSON_ARRAY) {
		snprintf(err, errlen, "spec.components is not a list");
		rc = -EINVAL;
		goto out;
	}
	size_t n = sf_jv_len(comps);
	for (size_t i = 0; i < n; i++) {
		sf_jv c = sf_jv_at(comps, i);
		sf_jv t = sf_jv_get(c, "template");
		char name[254], kind[128], api[256];
		int gen = sf_awc_template_name(t, name, sizeof(name));
		if (gen < 0 || sf_jv_str(sf_jv_get(t, "kind"), kind, sizeof(kind)) <= 0 ||
		    sf_jv_str(sf_jv_get(t, "apiVersion"), api, sizeof(api)) <= 0) {
			snprintf(err, errlen,
			         "component %zu: template needs apiVersion, kind and metadata.name "
			         "or metadata.generateName",
			         i);
			rc = -EINVAL;
			goto out;
		}
		size_t nps = 0;
		rc = sf_awc_podsets(c, ps, MAX_PODSETS, &nps, err, errlen);
		if (rc == -ENOSPC) {
			snprintf(err, errlen, "component %zu (%s %s): more than %d pod sets", i,
			         kind, name, MAX_PODSETS);
			rc = -EINVAL;
		}
		if (rc < 0)
			goto out;
		sf_jd *cs = sf_jd_new_obj();
		sf_jd *psa = cs ? sf_jd_new_arr() : NULL;
		if (!psa || sf_jd_append(arr, cs) < 0) {
			sf_jd_free(psa);
			if (!psa)
				sf_jd_free(cs);
			rc = -ENOMEM;
			goto out;
		}
		/* a generated name is recorded once the API server chose it */
		if (sf_jd_set_str(cs, "name", gen ? "" : name) < 0 ||
		    sf_jd_set_str(cs, "kind", kind) < 0 ||
		    sf_jd_set_str(cs, "apiVersion", api) < 0 || sf_jd_set(cs, "podSets", psa) < 0) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t k = 0; k < nps; k++) {
			sf_jd *one = sf_awc_podset_to_jd(&ps[k]);
			if (!one || sf_jd_append(psa, one) < 0) {
				rc = -ENOMEM;
				goto out;
			}
		}
	}
	*out = arr;
	arr = NULL;
out:
	sf_jd_free(arr);
	free(ps);
	return rc;
}
