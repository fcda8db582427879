/*
 * phase_run.c - the phase machine's Running phase (see awphase.h): the
 * components first (unresolved, missing, failed), then the pods (done,
 * failed, evacuated from NoExecute nodes, ready). Every verdict that ends,
 * resets or fails the workload rests on a live read; the caches only say
 * when asking is worth it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/awcomp.h"

#include "phase_step.h"

static void drop_acts(step *st, sf_awp_act_kind kind)
{
	size_t j = 0;
	for (size_t i = 0; i < st->plan->nacts; i++)
		if (st->plan->acts[i].kind != kind)
			st->plan->acts[j++] = st->plan->acts[i];
	st->plan->nacts = j;
}

/* Every component's kind resolves again: an Unhealthy=Unknown of ours
 * goes back to False. */
static void unresolved_clear(step *st)
{
	sf_aw_cond u = get_cond(st, C_UNHEALTHY);
	if (sf_aw_cond_is(&u, "Unknown", R_UNRESOLVED))
		cond(st, C_UNHEALTHY, "False", "ComponentStatusKnown", "");
}

/* When this replica's evidence that component i existed was last renewed. */
static int64_t comp_confirmed_ms(step *st, size_t i)
{
	const sf_awp_comp *c = obs(st, i);
	if (c->confirmed_ms > 0)
		return c->confirmed_ms;
	sf_aw_cond rd = comp_status(st, i).deployed;
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
	sf_awp_reset_or_fail(st, 0, 0);
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
	size_t n = ncomps(st);
	for (size_t i = 0; i < n; i++) {
		sf_aw_comp_status cs = comp_status(st, i);
		if (sf_awc_kind_never_completes(cs.id[SF_AW_ID_API_VERSION],
		                                cs.id[SF_AW_ID_KIND]) &&
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
	size_t n = ncomps(st);
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
	size_t n = ncomps(st);
	for (size_t i = 0; i < n; i++) {
		const sf_awp_comp *c = obs(st, i);
		if (!c->unresolved && c->cached.state == SF_AWP_COMP_PRESENT &&
		    !c->cached.deleting && c->cached.failed && !failure_confirmed(c) &&
		    c->live.found == SF_AWP_LIVE_NONE)
			act(st, SF_AWP_ACT_VERIFY, i);
	}
}

/* What the components say, from one pass over them. */
typedef struct comp_tally {
	size_t n;
	int64_t failed; /* Failed=True, confirmed by a live read */
	int missing;    /* gone, confirmed by a live read */
	int waiting;    /* unresolved, or absent from the cache and not yet confirmed */
	int doubt;      /* Failed=True in the cache only */
	int incomplete; /* reporting completion and not complete in the cache */
} comp_tally;

/* Component i present in the cache: counted complete or not, failed when a
 * live read says so, in doubt when only the cache does. */
static void tally_present(step *st, const sf_awp_comp *c, comp_tally *t)
{
	t->incomplete += c->completion_known && !c->cached.complete;
	if (failure_confirmed(c)) {
		t->failed++; /* confirmed by a live read */
	} else if (c->cached.failed) {
		/* the cache's copy says Failed: it may be an earlier
		 * incarnation's word; a reset needs the live object's
		 * (verify_cached_failures) */
		t->doubt = 1;
		if (c->live.found != SF_AWP_LIVE_NONE) {
			st->plan->suppressed_stale = 1;
			requeue(st, REQUEUE_NOT_READY_MS);
		}
	}
}

/* Component i absent from the cache (or being deleted by someone): a
 * suspicion, not evidence. Missing only on a live read's word, after the
 * grace; until then the step waits, or asks. */
static void tally_absent(step *st, size_t i, const sf_awp_comp *c, comp_tally *t)
{
	int64_t until = comp_confirmed_ms(st, i) + st->in->s->missing_grace_ms;
	if (c->live.found == SF_AWP_LIVE_MISSING ||
	    (MUTANT(SF_AWP_MUT_MISSING_WITHOUT_LIVE) && st->now >= until)) {
		t->missing++;
		return;
	}
	t->waiting = 1;
	if (c->live.found == SF_AWP_LIVE_FOUND) {
		/* a live read saw it: the cache is behind */
		requeue(st, REQUEUE_NOT_READY_MS);
	} else if (st->now < until) {
		requeue(st, until - st->now);
	} else {
		act(st, SF_AWP_ACT_VERIFY, i);
	}
}

static void tally_components(step *st, comp_tally *t)
{
	t->n = ncomps(st);
	for (size_t i = 0; i < t->n; i++) {
		const sf_awp_comp *c = obs(st, i);
		if (c->unresolved) {
			/* cannot say whether it exists: keep the phase and the
			 * quota, and say so */
			sf_awp_unresolved_report(st, i, C_UNHEALTHY);
			t->waiting = 1;
		} else if (c->cached.state == SF_AWP_COMP_PRESENT && !c->cached.deleting) {
			tally_present(st, c, t);
		} else if (c->cached.state != SF_AWP_COMP_PENDING) {
			/* (PENDING: we created it; the cache has not caught up) */
			tally_absent(st, i, c, t);
		}
	}
}

/* A component a live read found gone: Failed, as upstream. */
static void fail_missing(step *st, const comp_tally *t)
{
	char msg[160];
	snprintf(msg, sizeof(msg),
	         "Only found %" PRId64 " deployed components, but was expecting %zu",
	         (int64_t)t->n - t->missing, t->n);
	cond(st, C_UNHEALTHY, "True", "MissingComponent", msg);
	event(st, 1, C_UNHEALTHY, "MissingComponent: %s", msg);
	st->plan->why = "missing component";
	drop_acts(st, SF_AWP_ACT_VERIFY);
	st->plan->requeue_ms = -1;
	to_phase(st, SF_AW_FAILED);
}

/* Components a live read found Failed=True: a reset (or Failed). */
static void reset_failed_components(step *st, int64_t failed, const sf_awp_pods *pods)
{
	char msg[96];
	snprintf(msg, sizeof(msg), "Found %" PRId64 " failed components", failed);
	cond(st, C_UNHEALTHY, "True", "FailedComponent", msg);
	event(st, 1, C_UNHEALTHY, "FailedComponent: %s", msg);
	st->plan->why = "failed component";
	sf_awp_reset_or_fail(st, pods->terminal_failure, 1);
}

/* The caches say done. Succeeded ends the workload (Kueue finishes it,
 * QuotaReserved goes False): the live pods and each component that reports
 * its completion must say so too. */
static void succeed(step *st, const sf_awp_pods *pods)
{
	const sf_awp_pods *done = pods;
	if (!MUTANT(SF_AWP_MUT_SUCCESS_FROM_CACHE)) {
		int r = success_confirmed(st);
		if (r <= 0) {
			if (r < 0) {
				st->plan->why = "success in the caches; confirming with live reads";
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
	snprintf(msg, sizeof(msg), "%d pods succeeded and no running, pending, or failed pods",
	         done->succeeded);
	cond(st, C_QUOTA, "False", "Succeeded", msg);
	cond(st, C_DEPLOYED, "True", "Succeeded", msg);
	st->plan->why = "succeeded";
	to_phase(st, SF_AW_SUCCEEDED);
}

/* Failed pods in the cache: Unhealthy (and an event) at first sight; past
 * the failure grace a reset, once a live list shows the failure too (a
 * cached pod may be gone, or an earlier incarnation's), with the live
 * list's details. */
static void failed_pods(step *st, const sf_awp_pods *pods)
{
	char detail[800];
	failure_detail(pods, detail, sizeof(detail));
	sf_aw_cond before = get_cond(st, C_UNHEALTHY);
	int first = !sf_aw_cond_is(&before, "True", "FoundFailedPods");
	cond(st, C_UNHEALTHY, "True", "FoundFailedPods", detail);
	sf_aw_cond u = get_cond(st, C_UNHEALTHY);
	int64_t deadline = u.ltt_ms + st->in->s->failure_grace_ms;
	if (st->now < deadline) {
		/* first sight: tell the user now, before any reset */
		if (first)
			event(st, 1, "FoundFailedPods", "%s", detail);
		st->plan->why = "failed pods, within failure grace";
		requeue(st, deadline - st->now);
		return;
	}
	int terminal = pods->terminal_failure;
	if (!MUTANT(SF_AWP_MUT_FAILED_PODS_FROM_CACHE)) {
		const sf_awp_live_pods *lp = st->in->live_pods;
		if (!lp) {
			act(st, SF_AWP_ACT_LIST_PODS, 0);
			st->plan->why = "failed pods in the cache; confirming with a live list";
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
	sf_awp_reset_or_fail(st, terminal, 1);
}

/* Too few pods in the cache past their grace (counted from `from`): only
 * a live list answered after the grace expired, judged by the same rule,
 * may turn that into Unhealthy and a reset. */
static void too_few_pods(step *st, int64_t from, int64_t grace)
{
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
	char detail[128];
	snprintf(detail, sizeof(detail), "%d pods pending; %d pods running; %d pods succeeded",
	         live->pending, live->running, live->succeeded);
	cond(st, C_UNHEALTHY, "True", "InsufficientPodsReady", detail);
	event(st, 1, C_UNHEALTHY, "InsufficientPodsReady: %s", detail);
	st->plan->why = "insufficient pods ready";
	sf_awp_reset_or_fail(st, live->terminal_failure, 1);
}

/* PodsReady from the pod cache; too few pods wait out their grace. */
static void pods_readiness(step *st, const sf_awp_pods *pods)
{
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
	if (sf_aw_cond_is(&pr, "False", "InsufficientPodsReady") && pr.ltt_ms > from)
		from = pr.ltt_ms;
	int64_t grace = pods_grace(st, pods, 0);
	if (st->now < from + grace) {
		st->plan->why = "waiting for pods";
		int64_t left = from + grace - st->now;
		requeue(st, left < REQUEUE_NOT_READY_MS ? left : REQUEUE_NOT_READY_MS);
		return;
	}
	too_few_pods(st, from, grace);
}

/* Running: the components first (missing, unresolved, failed), then the
 * pods (done, failed, evacuated, ready). */
void sf_awp_step_running(step *st)
{
	static const sf_awp_pods no_pods;
	const sf_awp_pods *pods = st->in->pods ? st->in->pods : &no_pods;
	if (st->suspend) {
		st->plan->why = "suspend while running";
		to_phase(st, SF_AW_SUSPENDING);
		return;
	}
	comp_tally t = {0};
	tally_components(st, &t);
	if (t.missing) {
		fail_missing(st, &t);
		return;
	}
	if (t.waiting) {
		st->plan->suppressed_missing = 1;
		st->plan->why = "component not in cache; confirming before acting";
		return;
	}
	if (t.doubt) {
		verify_cached_failures(st);
		st->plan->why = "a cached Failed=True; confirming with a live read";
		return;
	}
	unresolved_clear(st);
	if (t.failed > 0)
		reset_failed_components(st, t.failed, pods);
	else if (pods_succeeded(st, pods, 0) && t.incomplete == 0 && !never_completes(st))
		succeed(st, pods);
	else if (pods->failed > 0)
		failed_pods(st, pods);
	else if (!evacuate(st)) {
		clear_cond(st, C_UNHEALTHY, "FoundNoFailedPods", "");
		pods_readiness(st, pods);
	}
}
