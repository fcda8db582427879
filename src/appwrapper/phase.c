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
 *
 * This file holds the step itself (sf_awp_step), the deletion of the
 * components and the phases that delete (Suspending, Resetting, Failed,
 * Succeeded, a deletionTimestamp). The phases before Running are in
 * phase_start.c, Running in phase_run.c, the reading of pods and answers
 * in phase_input.c; the status is read and written through its typed view
 * (status.c), and phase_step.h is what these files share.
 */
#include "steadfast/awphase.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awcomp.h"
#include "steadfast/goparse.h"
#include "steadfast/time.h"

#include "phase_step.h"

/* The mutation switched on in the model checker's build (awphase.h). */
#ifdef SF_AWP_MUTANTS
sf_awp_mutant sf_awp_mutation;

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
#endif

/* ---- the step ---- */

/* the step's first error, the status's setters' included */
static int step_rc(const step *st)
{
	return st->rc ? st->rc : st->status.rc;
}

void sf_awp_reset_or_fail(step *st, int terminal, int incr)
{
	int64_t n = sf_aw_status_resetting_count(&st->status);
	if (!terminal && n < st->in->s->retry_limit) {
		sf_aw_status_set_resetting_count(&st->status, n + incr);
		to_phase(st, SF_AW_RESETTING);
	} else {
		to_phase(st, SF_AW_FAILED);
	}
}

/* Component i's kind cannot be resolved: condition `type` (Unhealthy while
 * running, DeletingResources while deleting) says that nothing can be said
 * about the component and that the phase and quota are kept; a Warning
 * Event when that news is new. */
void sf_awp_unresolved_report(step *st, size_t i, const char *type)
{
	const sf_awp_comp *c = obs(st, i);
	sf_aw_comp_status cs = comp_status(st, i);
	char msg[900];
	snprintf(msg, sizeof(msg),
	         "cannot tell whether component %s %s %s exists: %s; keeping phase %s and its "
	         "quota until the API server can say",
	         cs.id[SF_AW_ID_API_VERSION], cs.id[SF_AW_ID_KIND], cs.id[SF_AW_ID_NAME],
	         c->unresolved_msg && c->unresolved_msg[0] ? c->unresolved_msg
	                                                   : "its kind is not resolved",
	         sf_aw_phase_name(st->plan->from));
	int changed =
	    strcmp(type, C_UNHEALTHY) == 0
	        ? sf_aw_status_set_cond(&st->status, type, "Unknown", R_UNRESOLVED, msg)
	        : sf_aw_status_set_cond(&st->status, type, "True", "DeletionInitiated", msg);
	if (changed > 0)
		event(st, 1, R_UNRESOLVED, "%s", msg);
	requeue(st, REQUEUE_UNRESOLVED_MS);
}

/* A DELETE of every component that may exist: 1 while some remain (sent,
 * or unresolved: then *unresolved too), 0 when none does. */
static int delete_each_component(step *st, int *unresolved)
{
	int remaining = 0;
	size_t n = ncomps(st);
	for (size_t i = 0; i < n; i++) {
		sf_aw_comp_status cs = comp_status(st, i);
		const sf_aw_cond rd = cs.deployed;
		const char *name = cs.id[SF_AW_ID_NAME];
		char prefix[254];
		sf_jv tpl =
		    sf_jv_get(sf_jv_at(sf_jv_path(st->in->aw, "spec.components"), i), "template");
		/* upstream skips a create initiated under no name; with a
		 * generated name that is exactly a create whose answer may have
		 * been lost: the controller looks it up (by owner and index) */
		if (!rd.present || sf_aw_cond_is(&rd, "False", NULL) ||
		    (sf_aw_cond_is(&rd, "Unknown", NULL) && name[0] == 0 &&
		     sf_awc_template_name(tpl, prefix, sizeof(prefix)) <= 0))
			continue;
		if (obs(st, i)->unresolved) {
			/* no DELETE can be sent and no answer would prove it
			 * gone: wait, keeping the phase and the quota */
			sf_awp_unresolved_report(st, i, C_DELETING);
			remaining = *unresolved = 1;
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
	return remaining;
}

/* Once no component remains, or the forceful deletion grace expired: 1
 * when the pods are gone too. The pod cache may not have seen pods the
 * components' controllers made a moment ago (and a Job leaves its own
 * watch at once under background propagation): the end of a deletion -
 * and with it QuotaReserved False and the finalizer's removal - needs a
 * live LIST asked after every DELETE this term had acknowledged, showing
 * no pod. The cache only says when asking is worth it. Past the grace,
 * what is left is deleted with grace period 0. */
static int pods_gone(step *st, int remaining, int expired)
{
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

/* upstream's deleteComponents, one pass: returns 1 when every component and
 * every labelled pod is gone. */
static int delete_components(step *st)
{
	int unresolved = 0;
	if (!cond_true(st, C_DELETING))
		cond(st, C_DELETING, "True", "DeletionInitiated", "");
	int remaining = delete_each_component(st, &unresolved);
	if (!unresolved) {
		/* the message of an earlier unresolved pass goes */
		sf_aw_cond d = get_cond(st, C_DELETING);
		if (d.present && strcmp(d.reason, "DeletionInitiated") == 0 && d.message[0])
			cond(st, C_DELETING, "True", "DeletionInitiated", "");
	}
	sf_aw_cond del = get_cond(st, C_DELETING);
	int expired = st->now > del.ltt_ms + st->in->s->forceful_deletion_grace_ms;
	if (remaining && !expired) {
		requeue(st, REQUEUE_DELETE_MS);
		return 0;
	}
	return pods_gone(st, remaining, expired);
}

/* Returns 1 when the finalizer may go (components gone, conditions final). */
static int do_deletion(step *st, sf_aw_phase phase, int has_finalizer)
{
	st->plan->why = "deleting";
	if (!has_finalizer)
		return 0;
	if (cond_true(st, C_DEPLOYED)) {
		if (!delete_components(st)) {
			if (phase != SF_AW_TERMINATING) {
				st->plan->to = SF_AW_TERMINATING;
				sf_aw_status_set_phase(&st->status, SF_AW_TERMINATING);
			}
			return 0;
		}
		cond(st, C_DEPLOYED, "False", "Terminating", "Resources successfully deleted");
	}
	if (cond_true(st, C_QUOTA))
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

int sf_awp_has_finalizer(sf_jv aw)
{
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(aw, "metadata.finalizers"));
	sf_jv f;
	while (sf_jv_next(&it, NULL, &f))
		if (sf_jv_streq(f, SF_AW_FINALIZER))
			return 1;
	return 0;
}

/* A metadata patch: {"metadata":{"finalizers":[...]}} plus extras. */
sf_jd *sf_awp_finalizers_patch(step *st, const char *drop, const char *add)
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

static void step_suspending(step *st)
{
	st->plan->why = "suspending";
	if (cond_true(st, C_DEPLOYED)) {
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
	if (cond_true(st, C_DEPLOYED)) {
		if (!delete_components(st))
			return;
		cond(st, C_DEPLOYED, "False", "Resetting",
		     "Resources deleted for resetting AppWrapper");
	}
	int64_t count = sf_aw_status_resetting_count(&st->status);
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
	if (sf_aw_cond_is(&rd, "False", "Resetting") && rd.ltt_ms > from)
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
	if (cond_true(st, C_DEPLOYED)) {
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
	if (!cond_true(st, C_DEPLOYED))
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

/* A deletionTimestamp: the components go, then the conditions become
 * final, then (a write of its own) the finalizer. */
static void step_deleted(step *st, sf_jv status, sf_aw_phase phase)
{
	if (!do_deletion(st, phase, sf_awp_has_finalizer(st->in->aw)) || step_rc(st) != 0)
		return;
	/* conditions already final: drop the finalizer now (a status never
	 * written compares as the empty one, or an AppWrapper deleted before
	 * its first reconcile would keep its finalizer) */
	int same = sf_aw_status_unchanged(&st->status, status);
	if (same < 0) {
		note_rc(st, same);
	} else if (same) {
		st->plan->meta_patch = sf_awp_finalizers_patch(st, SF_AW_FINALIZER, NULL);
		st->plan->requeue_ms = -1;
	}
}

static void step_phase(step *st, sf_aw_phase phase, char *err, size_t errlen)
{
	switch (phase) {
	case SF_AW_EMPTY: sf_awp_step_empty(st); break;
	case SF_AW_SUSPENDED: sf_awp_step_suspended(st); break;
	case SF_AW_RESUMING: sf_awp_step_resuming(st); break;
	case SF_AW_RUNNING: sf_awp_step_running(st); break;
	case SF_AW_SUSPENDING: step_suspending(st); break;
	case SF_AW_RESETTING: step_resetting(st); break;
	case SF_AW_FAILED: step_failed(st); break;
	case SF_AW_SUCCEEDED: step_succeeded(st); break;
	case SF_AW_TERMINATING:
		/* only meaningful with a deletionTimestamp */
		st->plan->why = "terminating";
		break;
	default:
		snprintf(err, errlen, "unknown phase in status");
		st->plan->why = "unknown phase";
		break;
	}
}

/* The plan as the step left it: one write per step (a metadata patch, or
 * the status when it differs from status, the object's). 0 or an error
 * (then nothing is planned). */
static int plan_finish(step *st, sf_jv status)
{
	sf_awp_plan *plan = st->plan;
	int rc = step_rc(st);
	if (rc < 0) {
		sf_aw_status_close(&st->status);
		sf_awp_plan_free(plan);
		return rc;
	}
	if (plan->meta_patch) {
		/* one write per step: the status waits for the next pass */
		sf_aw_status_close(&st->status);
		free(plan->acts);
		plan->acts = NULL;
		plan->nacts = 0;
		plan->nevents = 0;
		return 0;
	}
	int same = sf_aw_status_unchanged(&st->status, status);
	if (same < 0) {
		sf_aw_status_close(&st->status);
		sf_awp_plan_free(plan);
		return same;
	}
	if (!same)
		plan->status = sf_aw_status_take(&st->status);
	sf_aw_status_close(&st->status);
	return 0;
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
	if (sf_aw_status_open(&st.status, status, in->now_ms) < 0)
		return -ENOMEM;
	sf_aw_phase phase = sf_aw_phase_parse(sf_jv_get(status, "phase"));
	plan->from = plan->to = phase;
	if (sf_jv_ok(sf_jv_path(aw, "metadata.deletionTimestamp")))
		step_deleted(&st, status, phase);
	else
		step_phase(&st, phase, err, errlen);
	return plan_finish(&st, status);
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
