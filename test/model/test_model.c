/*
 * test_model.c - the model checker's tests (README.md): the phase machine
 * as shipped has no violation within the bound, and each seeded mutation
 * of its evidence rules (awphase.h, SF_AWP_MUTANTS) is caught, with its
 * shortest trace on stderr. STEADFAST_MODEL_BOUND=large (make model-large)
 * explores the larger bound.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "steadfast/awphase.h"

/* Every scenario gets the same perturbations: at most one leader crash,
 * one lost answer, one proxy 404, one Job held by a foreign finalizer, one
 * foreign deletion of a component; and Kueue, the user and the pods their
 * bounded share. */
static m_scen scen(const char *name, int seed, int depth)
{
	m_scen s = {
	    .name = name,
	    .seed = seed,
	    .depth = depth,
	    .admits = 2,
	    .preempts = 1,
	    .user_deletes = 1,
	    .pod_failures = 1,
	    .max_pods = 2,
	    .ticks = 3,
	    .crashes = 1,
	    .lost_answers = 1,
	    .foreign_404s = 1,
	    .lingers = 1,
	    .foreign_deletes = 1,
	};
	return s;
}

/* An AppWrapper with a second component (M_POD, M_DEPLOY), whose user
 * may edit its annotations once. A failover multiplies the states by
 * five (both component histories are kept whole while a crash may come):
 * only the failover scenario has one, and it does without the user's
 * edits and foreign deletions. */
static m_scen scen2(const char *name, int seed, int depth, int second)
{
	m_scen s = scen(name, seed, depth);
	s.second = second;
	s.edits = 1;
	s.crashes = 0;
	return s;
}

void m_bounds_small(m_bounds *b)
{
	memset(b, 0, sizeof(*b));
	b->name = "small";
	b->completions = 1, b->parallelism = 1, b->replicas = 1;
	b->admission_grace = 1, b->warmup_grace = 1, b->failure_grace = 1;
	b->retry_pause = 1, b->retry_limit = 1;
	b->forceful_grace = 2, b->success_ttl = 1, b->missing_grace = 1;
	b->liveness = 1;
	b->scen[b->nscen++] = scen("new", 0, 11);
	b->scen[b->nscen++] = scen("running", 2, 11);
	b->scen[b->nscen] = scen("preempted, the user edits", 3, 11);
	b->scen[b->nscen++].edits = 1;
	b->scen[b->nscen++] = scen("reset", 4, 11);
	b->scen[b->nscen] = scen("stalled-delete, gone on observation (executor variant)", 5, 11);
	b->scen[b->nscen++].gone_on_observe = 1;
	b->scen[b->nscen] = scen2("failover, with a Pod component", 6, 9, M_POD);
	b->scen[b->nscen].crashes = 1;
	b->scen[b->nscen].edits = 0;
	b->scen[b->nscen++].foreign_deletes = 0;
	b->scen[b->nscen++] = scen2("running, with a Pod component", 6, 8, M_POD);
	b->scen[b->nscen++] = scen2("done, with a Pod component", 8, 9, M_POD);
	b->scen[b->nscen++] = scen2("running, with a Deployment", 7, 8, M_DEPLOY);
	b->scen[b->nscen++] = scen2("serving, with a Deployment", 9, 9, M_DEPLOY);
	/* a Job of completions 2 and parallelism 1 (one pod expected, two
	 * left Succeeded) beside a Deployment that has made no pod, and
	 * beside a Pod component (F5, README.md) */
	b->scen[b->nscen] = scen2("job done, a Deployment without pods", 10, 8, M_DEPLOY);
	b->scen[b->nscen].completions = 2;
	b->scen[b->nscen++].parallelism = 1;
	b->scen[b->nscen] = scen2("job done, a Pod component pending", 11, 8, M_POD);
	b->scen[b->nscen].completions = 2;
	b->scen[b->nscen++].parallelism = 1;
}

/* The small bound's scenarios with Jobs of two pods (but for those that
 * script their Job: "done" and "serving" one pod, "job done" completions
 * 2 and parallelism 1), three pods to make, one more level (the Job-only
 * scenarios: depth 12). */
void m_bounds_large(m_bounds *b)
{
	m_bounds_small(b);
	b->name = "large";
	b->completions = 2, b->parallelism = 2;
	for (int i = 0; i < b->nscen; i++) {
		m_scen *s = &b->scen[i];
		s->max_pods = 3;
		s->depth = s->second ? s->depth + 1 : 12;
		if (s->seed == 8 || s->seed == 9)
			s->completions = s->parallelism = 1;
	}
}

static void bounds(m_bounds *b)
{
	const char *e = getenv("STEADFAST_MODEL_BOUND");
	if (e && strcmp(e, "large") == 0)
		m_bounds_large(b);
	else
		m_bounds_small(b);
	const char *d = getenv("STEADFAST_MODEL_DEPTH");
	for (int i = 0; d && atoi(d) > 0 && i < b->nscen; i++)
		b->scen[i].depth = atoi(d);
	/* only the scenarios whose name contains this text */
	const char *only = getenv("STEADFAST_MODEL_ONLY");
	if (only && only[0]) {
		int n = 0;
		for (int i = 0; i < b->nscen; i++)
			if (strstr(b->scen[i].name, only))
				b->scen[n++] = b->scen[i];
		b->nscen = n;
	}
}

TestSuite(model, .timeout = 1800);

Test(model, unmutated_machine_has_no_violation)
{
	m_bounds b;
	m_result r;
	bounds(&b);
	sf_awp_mutation = SF_AWP_MUT_NONE;
	cr_assert_eq(m_explore(&b, &r), 0, "the model broke (see stderr)");
	cr_assert_not(r.violated,
	              "%d violations on the unmutated phase machine (the shortest trace of each is "
	              "above), the first: %s",
	              r.distinct, r.violation);
}

/* Mutant m is caught in the scenarios whose name contains only (all when
 * NULL). */
static void caught_in(sf_awp_mutant m, const char *only)
{
	m_bounds b;
	m_result r;
	bounds(&b);
	if (only) {
		int n = 0;
		for (int i = 0; i < b.nscen; i++)
			if (strstr(b.scen[i].name, only))
				b.scen[n++] = b.scen[i];
		b.nscen = n;
	}
	b.liveness = 0; /* a mutant is caught by a safety invariant */
	sf_awp_mutation = m;
	cr_assert_eq(m_explore(&b, &r), 0, "the model broke (see stderr)");
	cr_assert(r.violated, "mutant %s not caught within the bound (%llu states, depth %d)",
	          sf_awp_mutant_name(m), (unsigned long long)r.states, r.depth);
	cr_log_info("mutant %s caught in scenario %s: %s", sf_awp_mutant_name(m),
	            b.scen[r.scen].name, r.violation);
}

static void caught(sf_awp_mutant m)
{
	caught_in(m, NULL);
}

Test(model, catches_resume_trusts_cache)
{
	caught(SF_AWP_MUT_RESUME_TRUSTS_CACHE);
}

Test(model, catches_delete_on_pod_cache)
{
	caught(SF_AWP_MUT_DELETE_ON_POD_CACHE);
}

Test(model, catches_missing_without_live_get)
{
	caught(SF_AWP_MUT_MISSING_WITHOUT_LIVE);
}

Test(model, catches_failed_component_from_cache)
{
	caught(SF_AWP_MUT_FAILED_FROM_CACHE);
}

Test(model, catches_pod_list_before_delete_ack)
{
	caught(SF_AWP_MUT_LIST_BEFORE_DELETE);
}

Test(model, catches_success_from_cache)
{
	caught(SF_AWP_MUT_SUCCESS_FROM_CACHE);
}

Test(model, catches_failed_pods_from_cache)
{
	caught(SF_AWP_MUT_FAILED_PODS_FROM_CACHE);
}

Test(model, catches_foreign_404_as_absence)
{
	caught(SF_AWP_MUT_FOREIGN_404_ABSENT);
}

Test(model, catches_adopt_a_deleting_incarnation)
{
	caught(SF_AWP_MUT_ADOPT_DELETING);
}

/* Succeeded on pods summed across components (upstream's count, F5 in
 * README.md): a Job's surplus pod stands in for a Deployment's that was
 * never made. Only a scenario with two components can show it. */
Test(model, catches_success_across_components)
{
	caught_in(SF_AWP_MUT_SUCCESS_ACROSS, "job done");
}

/* The second component's own cache and live reads: a standby whose
 * caches of both components are behind fails the AppWrapper on them. */
Test(model, catches_missing_without_live_get_with_two_components)
{
	caught_in(SF_AWP_MUT_MISSING_WITHOUT_LIVE, "with a");
}
