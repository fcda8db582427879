/*
 * test_awphase.c - the AppWrapper phase machine from snapshots: each test
 * builds an AppWrapper and what the controller observed, runs one step and
 * checks the plan (status, conditions, events, actions, requeue). The
 * incident guards are here too: a component the cache has not seen is not
 * missing; a missing one needs grace + a live read; pod failure details
 * reach the condition and an event before any delete; the reset pause
 * doubles from the status alone; Running never plans a delete.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awapi.h"
#include "steadfast/awconfig.h"
#include "steadfast/awphase.h"
#include "steadfast/jdoc.h"
#include "steadfast/time.h"

#define NOW 1800000000000LL /* ms, a whole second */

static sf_aw_config cfg;
static sf_aw_settings set;

static char *ts(int64_t ms)
{
	static char buf[8][40];
	static int i;
	char *b = buf[i++ % 8];
	sf_time_rfc3339(ms * SF_NSEC_PER_MSEC, b, 40);
	return b;
}

static const char *JOB_TEMPLATE =
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"job-a\"},"
    "\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\","
    "\"image\":\"busybox\"}]}}}}";

/* An AppWrapper wrapping one Job, with the given metadata extras, spec
 * extras and status (JSON fragments). */
static char *aw_json(const char *meta_extra, const char *spec_extra, const char *status)
{
	char *s = NULL;
	int n = asprintf(&s,
	                 "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	                 "\"metadata\":{\"name\":\"aw\",\"namespace\":\"ns\",\"uid\":\"u-1\","
	                 "\"resourceVersion\":\"10\"%s%s},"
	                 "\"spec\":{\"components\":[{\"template\":%s}]%s%s}%s%s}",
	                 meta_extra ? "," : "", meta_extra ? meta_extra : "", JOB_TEMPLATE,
	                 spec_extra ? "," : "", spec_extra ? spec_extra : "",
	                 status ? ",\"status\":" : "", status ? status : "");
	cr_assert(n > 0);
	return s;
}

#define FIN "\"finalizers\":[\"" SF_AW_FINALIZER "\"]"

/* A status in phase with conditions (a JSON list body) and one component
 * status whose ResourcesDeployed condition is comp_rd ("" for none). */
static char *status_json(const char *phase, const char *conds, const char *comp_rd, int resets)
{
	char *s = NULL;
	int n = asprintf(&s,
	                 "{\"phase\":\"%s\",\"resettingCount\":%d,\"conditions\":[%s],"
	                 "\"componentStatus\":[{\"name\":\"job-a\",\"kind\":\"Job\",\"apiVersion\":"
	                 "\"batch/v1\",\"podSets\":[{\"replicas\":1,\"path\":\"template.spec."
	                 "template\"}]%s%s%s}]}",
	                 phase, resets, conds, comp_rd[0] ? ",\"conditions\":[" : "", comp_rd,
	                 comp_rd[0] ? "]" : "");
	cr_assert(n > 0);
	return s;
}

static char *cond_json(const char *type, const char *status, const char *reason, int64_t ltt)
{
	char *s = NULL;
	cr_assert(asprintf(&s,
	                   "{\"type\":\"%s\",\"status\":\"%s\",\"reason\":\"%s\",\"message\":\"\","
	                   "\"lastTransitionTime\":\"%s\"}",
	                   type, status, reason, ts(ltt)) > 0);
	return s;
}

typedef struct snap {
	char *json;
	sf_awp_comp comp[2];
	size_t ncomp; /* 0: one */
	sf_awp_pods pods;
	int64_t expected;
	int64_t now;
	int have_live; /* live (a live pod list) answered at live_ms */
	sf_awp_pods live;
	int64_t live_ms;
	uint64_t live_asked, deletes_acked; /* evidence clock */
	const sf_awp_nodes *noexec, *noexec_live;
	sf_awp_plan plan;
} snap;

static void setup(void)
{
	sf_awcfg_defaults(&cfg);
	sf_aw_settings_resolve(&cfg, SF_JV_NONE, &set);
}

static void run(snap *s)
{
	char err[256];
	sf_awp_live_pods lp = {.pods = s->live, .answered_ms = s->live_ms, .asked = s->live_asked};
	sf_awp_input in = {
	    .aw = sf_jv_root(s->json, strlen(s->json)),
	    .cfg = &cfg,
	    .s = &set,
	    .now_ms = s->now ? s->now : NOW,
	    .comp = s->comp,
	    .ncomp = s->ncomp ? s->ncomp : 1,
	    .pods = &s->pods,
	    .expected_pods = s->expected ? s->expected : 1,
	    .live_pods = s->have_live ? &lp : NULL,
	    .deletes_acked = s->deletes_acked,
	    .noexec = s->noexec,
	    .noexec_live = s->noexec_live,
	};
	cr_assert_eq(sf_awp_step(&in, &s->plan, err, sizeof(err)), 0, "%s", err);
}

/* A step that must first ask for live reads: runs one step, checks that it
 * asked (a live GET of the component or a live LIST of the pods) and
 * changed no phase, then gives it live answers that agree with its caches
 * and runs the step again. */
static void run_confirmed(snap *s)
{
	run(s);
	int asked = 0;
	for (size_t i = 0; i < s->plan.nacts; i++)
		asked |= s->plan.acts[i].kind == SF_AWP_ACT_VERIFY ||
		         s->plan.acts[i].kind == SF_AWP_ACT_LIST_PODS;
	cr_assert(asked, "the step acted without asking for a live read (%s)", s->plan.why);
	cr_assert_eq(s->plan.to, s->plan.from, "the phase changed on cached evidence");
	sf_awp_plan_free(&s->plan);
	s->have_live = 1;
	s->live = s->pods;
	s->live_ms = s->now ? s->now : NOW;
	s->live_asked = s->deletes_acked + 1;
	for (size_t i = 0; i < (s->ncomp ? s->ncomp : 1); i++) {
		sf_awp_comp *c = &s->comp[i];
		c->live.found =
		    c->cached.state == SF_AWP_COMP_ABSENT ? SF_AWP_LIVE_MISSING : SF_AWP_LIVE_FOUND;
		c->live.failed = c->cached.failed;
		c->live.complete = c->cached.complete;
		c->live_succeeded = c->succeeded;
	}
	run(s);
}

static void done(snap *s)
{
	sf_awp_plan_free(&s->plan);
	free(s->json);
}

static sf_aw_cond pcond(const snap *s, const char *type)
{
	sf_aw_cond c;
	cr_assert_not_null(s->plan.status, "no status in the plan");
	sf_aw_cond_get(sf_jd_get(s->plan.status, "conditions"), type, &c);
	return c;
}

static sf_aw_cond pcomp_cond(const snap *s)
{
	sf_aw_cond c;
	sf_jd *cs = sf_jd_at(sf_jd_get(s->plan.status, "componentStatus"), 0, NULL);
	sf_aw_cond_get(sf_jd_get(cs, "conditions"), "ResourcesDeployed", &c);
	return c;
}

static const char *pphase(const snap *s)
{
	return sf_jd_str(sf_jd_get(s->plan.status, "phase"), NULL);
}

static int has_act(const snap *s, sf_awp_act_kind k)
{
	for (size_t i = 0; i < s->plan.nacts; i++)
		if (s->plan.acts[i].kind == k)
			return 1;
	return 0;
}

/* Running with everything deployed at t0. */
static char *running_status(int64_t t0, const char *extra_cond, int resets)
{
	char *q = cond_json("QuotaReserved", "True", "Resuming", t0);
	char *r = cond_json("ResourcesDeployed", "True", "Resuming", t0);
	char *p = cond_json("PodsReady", "False", "Resuming", t0);
	char *u = extra_cond ? strdup(extra_cond) : cond_json("Unhealthy", "False", "Resuming", t0);
	char *cr = cond_json("ResourcesDeployed", "True", "ComponentCreatedSuccessfully", t0);
	char *all = NULL;
	cr_assert(asprintf(&all, "%s,%s,%s,%s", q, r, p, u) > 0);
	char *st = status_json("Running", all, cr, resets);
	free(q), free(r), free(p), free(u), free(cr), free(all);
	return st;
}

TestSuite(awphase, .init = setup);

Test(awphase, cond_set_keeps_transition_time_unless_status_changes)
{
	sf_jd *c = sf_jd_new_arr();
	cr_assert_eq(sf_aw_cond_set(c, "Unhealthy", "False", "Resuming", "x", NOW - 60000, 0), 1);
	cr_assert_eq(sf_aw_cond_set(c, "Unhealthy", "False", "Resuming", "x", NOW, 0), 0);
	cr_assert_eq(sf_aw_cond_set(c, "Unhealthy", "False", "Other", "y", NOW, 0), 1);
	sf_aw_cond g;
	sf_aw_cond_get(c, "Unhealthy", &g);
	cr_assert_eq(g.ltt_ms, NOW - 60000, "reason change moved the transition time");
	cr_assert_str_eq(g.reason, "Other");
	cr_assert_eq(sf_aw_cond_set(c, "Unhealthy", "True", "Other", "y", NOW, 0), 1);
	sf_aw_cond_get(c, "Unhealthy", &g);
	cr_assert_eq(g.ltt_ms, NOW);
	cr_assert_eq(sf_jd_len(c), 1);
	sf_jd_free(c);
}

/* v1.2.1's rule: an AppWrapper Kueue does not manage (no queue name, and
 * manageJobsWithoutQueueName false, Kueue's default) runs without Kueue: the
 * defaults add the finalizer and leave spec.suspend alone. */
Test(awphase, empty_without_queue_name_is_not_suspended_by_default)
{
	snap s = {.json = aw_json(NULL, "\"suspend\":false", NULL)};
	run(&s);
	cr_assert_not_null(s.plan.meta_patch);
	cr_assert_null(s.plan.status);
	char *p = sf_jd_dump(s.plan.meta_patch);
	cr_assert(strstr(p, "\"finalizers\":[\"" SF_AW_FINALIZER "\"]"), "%s", p);
	cr_assert(!strstr(p, "suspend"), "suspended without a queue name: %s", p);
	free(p);
	done(&s);
}

/* A queue name means Kueue manages it: suspended until Kueue admits it (what
 * Kueue's own webhook does at create). */
Test(awphase, empty_with_queue_name_is_suspended_for_kueue)
{
	snap s = {.json = aw_json("\"labels\":{\"" SF_AW_QUEUE_LABEL "\":\"team-q\"}",
	                          "\"suspend\":false", NULL)};
	run(&s);
	cr_assert_not_null(s.plan.meta_patch);
	char *p = sf_jd_dump(s.plan.meta_patch);
	cr_assert(strstr(p, "\"finalizers\":[\"" SF_AW_FINALIZER "\"]"), "%s", p);
	cr_assert(strstr(p, "\"suspend\":true"), "%s", p);
	free(p);
	done(&s);
}

/* manageJobsWithoutQueueName true (as Kueue's own setting, and older upstream
 * releases' default): every AppWrapper waits for Kueue. */
Test(awphase, empty_without_queue_name_is_suspended_when_kueue_manages_all)
{
	cfg.manage_jobs_without_queue_name = 1;
	snap s = {.json = aw_json(NULL, "\"suspend\":false", NULL)};
	run(&s);
	char *p = sf_jd_dump(s.plan.meta_patch);
	cr_assert(strstr(p, "\"suspend\":true"), "%s", p);
	free(p);
	done(&s);
}

Test(awphase, empty_with_finalizer_initialises_component_status)
{
	snap s = {.json = aw_json(FIN, "\"suspend\":true", NULL)};
	run(&s);
	cr_assert_str_eq(pphase(&s), "Suspended");
	sf_jd *cs = sf_jd_at(sf_jd_get(s.plan.status, "componentStatus"), 0, NULL);
	cr_assert_str_eq(sf_jd_str(sf_jd_get(cs, "name"), NULL), "job-a");
	cr_assert_str_eq(sf_jd_str(sf_jd_get(cs, "kind"), NULL), "Job");
	cr_assert_str_eq(sf_jd_str(sf_jd_path(cs, "podSets[0].path"), NULL),
	                 "template.spec.template");
	done(&s);
}

Test(awphase, empty_with_unreadable_template_fails_with_reason)
{
	char *j = NULL;
	cr_assert(asprintf(&j,
	                   "{\"metadata\":{\"name\":\"aw\",\"namespace\":\"ns\",\"uid\":\"u\"," FIN
	                   "},"
	                   "\"spec\":{\"components\":[{\"template\":{\"kind\":\"Job\"}}]}}") > 0);
	snap s = {.json = j};
	run(&s);
	cr_assert_str_eq(pphase(&s), "Failed");
	sf_aw_cond u = pcond(&s, "Unhealthy");
	cr_assert_str_eq(u.reason, "CreateFailed");
	cr_assert(strstr(u.message, "component 0"), "%s", u.message);
	cr_assert_eq(s.plan.nevents, 1);
	done(&s);
}

Test(awphase, suspended_stays_while_suspend_is_true)
{
	char *st = status_json("Suspended", "", "", 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":true", st)};
	free(st);
	run(&s);
	cr_assert_null(s.plan.status);
	cr_assert_null(s.plan.meta_patch);
	cr_assert_eq(s.plan.requeue_ms, -1);
	done(&s);
}

Test(awphase, admitted_goes_to_resuming_with_upstream_conditions)
{
	char *st = status_json("Suspended", "", "", 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	run(&s);
	cr_assert_str_eq(pphase(&s), "Resuming");
	const char *types[] = {"QuotaReserved", "ResourcesDeployed", "PodsReady", "Unhealthy"};
	const char *want[] = {"True", "True", "False", "False"};
	for (int i = 0; i < 4; i++) {
		sf_aw_cond c = pcond(&s, types[i]);
		cr_assert_str_eq(c.status, want[i], "%s", types[i]);
		cr_assert_str_eq(c.reason, "Resuming");
		cr_assert_str_eq(c.message, "Suspend is false");
	}
	done(&s);
}

static char *resuming_status(int64_t t0, const char *comp_rd)
{
	char *q = cond_json("QuotaReserved", "True", "Resuming", t0);
	char *r = cond_json("ResourcesDeployed", "True", "Resuming", t0);
	char *all = NULL;
	cr_assert(asprintf(&all, "%s,%s", q, r) > 0);
	char *st = status_json("Resuming", all, comp_rd, 0);
	free(q), free(r), free(all);
	return st;
}

Test(awphase, resuming_records_creation_before_creating)
{
	char *st = resuming_status(NOW - 1000, "");
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	run(&s);
	cr_assert(has_act(&s, SF_AWP_ACT_CREATE));
	sf_aw_cond c = pcomp_cond(&s);
	cr_assert_str_eq(c.status, "Unknown");
	cr_assert_str_eq(c.reason, "ComponentCreationInitiated");
	cr_assert_str_eq(pphase(&s), "Resuming");
	done(&s);
}

Test(awphase, resuming_created_goes_running)
{
	char *cr = cond_json("ResourcesDeployed", "Unknown", "ComponentCreationInitiated", NOW);
	char *st = resuming_status(NOW - 1000, cr);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st), free(cr);
	s.comp[0].create = SF_AWP_CREATE_OK;
	s.comp[0].cached.state = SF_AWP_COMP_PENDING;
	run(&s);
	cr_assert_eq(s.plan.nacts, 0);
	cr_assert_str_eq(pcomp_cond(&s).reason, "ComponentCreatedSuccessfully");
	cr_assert_str_eq(pphase(&s), "Running");
	done(&s);
}

Test(awphase, resuming_fatal_create_error_fails)
{
	char *st = resuming_status(NOW - 1000, "");
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].create = SF_AWP_CREATE_FATAL;
	s.comp[0].create_msg = "no matches for kind \"Foo\" in version \"x/v1\"";
	run(&s);
	cr_assert_str_eq(pphase(&s), "Failed");
	sf_aw_cond u = pcond(&s, "Unhealthy");
	cr_assert_str_eq(u.reason, "CreateFailed");
	cr_assert(strstr(u.message, "error creating components: no matches for kind"), "%s",
	          u.message);
	cr_assert_str_eq(pcomp_cond(&s).reason, "ComponentCreationErrored");
	cr_assert_eq(s.plan.nevents, 1);
	done(&s);
}

Test(awphase, resuming_retryable_error_retries_within_admission_grace_then_resets)
{
	char *st = resuming_status(NOW - 1000, "");
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].create = SF_AWP_CREATE_RETRYABLE;
	s.comp[0].create_msg = "connection refused";
	run(&s);
	cr_assert_null(s.plan.status);
	cr_assert_eq(s.plan.requeue_ms, 1000);
	done(&s);

	st = resuming_status(NOW - 61000, "");
	snap t = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	t.comp[0].create = SF_AWP_CREATE_RETRYABLE;
	t.comp[0].create_msg = "connection refused";
	run(&t);
	cr_assert_str_eq(pphase(&t), "Resetting");
	int64_t n = 0;
	cr_assert_eq(sf_jd_int(sf_jd_get(t.plan.status, "resettingCount"), &n), 0);
	cr_assert_eq(n, 1);
	done(&t);
}

/* Incident A: the Job was created by us a moment ago and the cache has not
 * delivered it. Upstream fails the AppWrapper here. */
Test(awphase, running_component_created_but_not_in_cache_is_not_missing)
{
	char *st = running_status(NOW - 100, NULL, 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_PENDING;
	run(&s);
	cr_assert(s.plan.status == NULL || strcmp(pphase(&s), "Running") == 0);
	cr_assert_eq(s.plan.nevents, 0);
	cr_assert_not(has_act(&s, SF_AWP_ACT_VERIFY));
	done(&s);
}

/* A cold cache after failover: not in this replica's memory, not in the
 * cache, inside the grace window. */
Test(awphase, running_absent_within_grace_waits)
{
	char *st = running_status(NOW - 2000, NULL, 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_ABSENT;
	run(&s);
	cr_assert(s.plan.suppressed_missing);
	cr_assert_null(s.plan.status);
	cr_assert_not(has_act(&s, SF_AWP_ACT_VERIFY));
	cr_assert_eq(s.plan.requeue_ms, set.missing_grace_ms - 2000 + 999);
	done(&s);
}

Test(awphase, running_absent_after_grace_asks_for_a_live_read)
{
	char *st = running_status(NOW - 60000, NULL, 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_ABSENT;
	run(&s);
	cr_assert(s.plan.suppressed_missing);
	cr_assert(has_act(&s, SF_AWP_ACT_VERIFY));
	cr_assert_null(s.plan.status);
	done(&s);
}

Test(awphase, running_recently_confirmed_component_restarts_the_grace)
{
	char *st = running_status(NOW - 60000, NULL, 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_ABSENT;
	s.comp[0].confirmed_ms = NOW - 1000; /* a live read found it a second ago */
	run(&s);
	cr_assert_not(has_act(&s, SF_AWP_ACT_VERIFY));
	cr_assert_eq(s.plan.requeue_ms, set.missing_grace_ms - 1000);
	done(&s);
}

Test(awphase, running_confirmed_missing_fails_with_upstream_message)
{
	char *st = running_status(NOW - 60000, NULL, 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_ABSENT;
	s.comp[0].live.found = SF_AWP_LIVE_MISSING;
	run(&s);
	cr_assert_str_eq(pphase(&s), "Failed");
	sf_aw_cond u = pcond(&s, "Unhealthy");
	cr_assert_str_eq(u.reason, "MissingComponent");
	cr_assert_str_eq(u.message, "Only found 0 deployed components, but was expecting 1");
	cr_assert_eq(s.plan.nacts, 0);
	done(&s);
}

static void fail_pod(sf_awp_pods *p)
{
	p->failed = 1;
	p->total = 1;
	p->have_fail = 1;
	p->fail_exit_code = 1;
	strcpy(p->fail_pod, "job-a-xyz");
	strcpy(p->fail_container, "c");
	strcpy(p->fail_reason, "Error");
	strcpy(p->fail_message, "walk bundle dir \"/manifests\": not a directory");
}

/* Incident B: the failure is on the AppWrapper, in words, at first sight,
 * and nothing is deleted in that step. */
Test(awphase, running_failed_pod_is_reported_before_anything_is_deleted)
{
	char *st = running_status(NOW - 60000, NULL, 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	fail_pod(&s.pods);
	run(&s);
	sf_aw_cond u = pcond(&s, "Unhealthy");
	cr_assert_str_eq(u.status, "True");
	cr_assert_str_eq(u.reason, "FoundFailedPods");
	cr_assert(strstr(u.message, "pod job-a-xyz container c exited with code 1 (Error): walk "
	                            "bundle dir \"/manifests\": not a directory"),
	          "%s", u.message);
	cr_assert_eq(s.plan.nevents, 1);
	cr_assert(s.plan.events[0].warning);
	cr_assert(strstr(s.plan.events[0].message, "exited with code 1"));
	cr_assert_eq(s.plan.nacts, 0);
	cr_assert_str_eq(pphase(&s), "Running");
	cr_assert_eq(s.plan.requeue_ms, set.failure_grace_ms);
	done(&s);
}

Test(awphase, running_failed_pod_after_failure_grace_resets)
{
	char *u = cond_json("Unhealthy", "True", "FoundFailedPods", NOW - 61000);
	char *st = running_status(NOW - 120000, u, 1);
	free(u);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	fail_pod(&s.pods);
	run_confirmed(&s);
	cr_assert_str_eq(pphase(&s), "Resetting");
	int64_t n = 0;
	sf_jd_int(sf_jd_get(s.plan.status, "resettingCount"), &n);
	cr_assert_eq(n, 2);
	cr_assert_eq(s.plan.nacts, 0, "deleting belongs to the Resetting step");
	cr_assert(strstr(pcond(&s, "Unhealthy").message, "exited with code 1"));
	done(&s);
}

Test(awphase, running_failed_pod_at_retry_limit_fails)
{
	char *u = cond_json("Unhealthy", "True", "FoundFailedPods", NOW - 61000);
	char *st = running_status(NOW - 120000, u, 3);
	free(u);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	fail_pod(&s.pods);
	run_confirmed(&s);
	cr_assert_str_eq(pphase(&s), "Failed");
	done(&s);
}

Test(awphase, running_terminal_exit_code_fails_without_retry)
{
	char *u = cond_json("Unhealthy", "True", "FoundFailedPods", NOW - 61000);
	char *st = running_status(NOW - 120000, u, 0);
	free(u);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	fail_pod(&s.pods);
	s.pods.terminal_failure = 1;
	run_confirmed(&s);
	cr_assert_str_eq(pphase(&s), "Failed");
	done(&s);
}

Test(awphase, running_failed_job_component_resets_at_once)
{
	char *st = running_status(NOW - 120000, NULL, 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	s.comp[0].cached.failed = 1;
	run_confirmed(&s);
	cr_assert_str_eq(pphase(&s), "Resetting");
	cr_assert_str_eq(pcond(&s, "Unhealthy").message, "Found 1 failed components");
	done(&s);
}

Test(awphase, running_all_succeeded_is_success)
{
	char *st = running_status(NOW - 120000, NULL, 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	s.pods.succeeded = 1;
	s.pods.total = 1;
	run_confirmed(&s);
	cr_assert_str_eq(pphase(&s), "Succeeded");
	sf_aw_cond q = pcond(&s, "QuotaReserved");
	cr_assert_str_eq(q.status, "False");
	cr_assert_str_eq(q.reason, "Succeeded");
	cr_assert_str_eq(pcond(&s, "ResourcesDeployed").status, "True");
	done(&s);
}

Test(awphase, running_pods_ready)
{
	char *st = running_status(NOW - 120000, NULL, 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	s.pods.running = 1;
	s.pods.total = 1;
	run(&s);
	sf_aw_cond p = pcond(&s, "PodsReady");
	cr_assert_str_eq(p.status, "True");
	cr_assert_str_eq(p.message, "1 pods running; 0 pods succeeded");
	cr_assert_eq(s.plan.requeue_ms, 60000);
	done(&s);
}

Test(awphase, running_insufficient_pods_waits_for_warmup_then_resets)
{
	char *st = running_status(NOW - 10000, NULL, 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	s.pods.pending = 1;
	s.pods.total = 1;
	run(&s);
	cr_assert(s.plan.requeue_ms > 0 && s.plan.requeue_ms <= 5000);
	cr_assert(s.plan.status == NULL || strcmp(pphase(&s), "Running") == 0);
	done(&s);

	st = running_status(NOW - 301000, NULL, 0);
	snap t = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	t.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	t.pods.pending = 1;
	t.pods.total = 1;
	run(&t);
	/* past the grace: first a live list, nothing reset yet */
	cr_assert(has_act(&t, SF_AWP_ACT_LIST_PODS));
	cr_assert(t.plan.status == NULL || strcmp(pphase(&t), "Running") == 0);
	done(&t);

	st = running_status(NOW - 301000, NULL, 0);
	snap u = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	u.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	u.pods.pending = 1;
	u.pods.total = 1;
	u.have_live = 1;
	u.live = u.pods;
	u.live_ms = NOW;
	run(&u);
	cr_assert_str_eq(pphase(&u), "Resetting");
	cr_assert_str_eq(pcond(&u, "Unhealthy").reason, "InsufficientPodsReady");
	done(&u);
}

/* A Running AppWrapper deployed deployed_ms ago whose pod cache shows no
 * pod; with a live list (have_live) of `pending` Pending pods answered at
 * live_ms. */
static void run_cacheless(snap *s, int64_t deployed_ms, int have_live, int pending, int64_t live_ms)
{
	char *st = running_status(NOW - deployed_ms, NULL, 0);
	*s = (snap){.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s->comp[0].cached.state = SF_AWP_COMP_PRESENT;
	s->have_live = have_live;
	s->live.pending = pending;
	s->live.total = pending;
	s->live_ms = live_ms;
	run(s);
}

/* The pod cache is behind: it shows no pod a minute after deployment, past
 * the admission grace, but the live list finds the pod, still Pending (an
 * image pull). The live tally is judged by the rule the cache's would be:
 * all pods exist, so the warmup grace applies and nothing is reset; only a
 * live list answered after that grace too may reset. */
Test(awphase, a_live_list_finding_pending_pods_gets_the_warmup_grace)
{
	snap s;
	run_cacheless(&s, 61000, 0, 0, 0);
	cr_assert(has_act(&s, SF_AWP_ACT_LIST_PODS), "no live list past the admission grace");
	done(&s);

	snap t;
	run_cacheless(&t, 61000, 1, 1, NOW);
	cr_assert(t.plan.status == NULL || strcmp(pphase(&t), "Running") == 0,
	          "reset while the live list shows every pod within the warmup grace: %s",
	          pphase(&t));
	cr_assert(t.plan.status == NULL || strcmp(pcond(&t, "Unhealthy").status, "True") != 0,
	          "Unhealthy on a pending pod within the warmup grace");
	cr_assert_eq(t.plan.nevents, 0);
	cr_assert(t.plan.suppressed_pods);
	cr_assert(t.plan.requeue_ms > 0);
	done(&t);

	/* past the warmup grace as well, a live list answered before it
	 * expired is no evidence: a new one is asked for */
	snap u;
	run_cacheless(&u, 301000, 1, 1, NOW - 2000);
	cr_assert(has_act(&u, SF_AWP_ACT_LIST_PODS));
	cr_assert(u.plan.status == NULL || strcmp(pphase(&u), "Running") == 0);
	done(&u);

	/* and one answered after it resets, as the cache would */
	snap v;
	run_cacheless(&v, 301000, 1, 1, NOW);
	cr_assert_str_eq(pphase(&v), "Resetting");
	cr_assert_str_eq(pcond(&v, "Unhealthy").reason, "InsufficientPodsReady");
	done(&v);

	/* a live list finding no pod past the admission grace resets */
	snap w;
	run_cacheless(&w, 61000, 1, 0, NOW);
	cr_assert_str_eq(pphase(&w), "Resetting");
	done(&w);
}

/* Whatever Running sees, it never deletes: only Resetting, Suspending,
 * Failed, Succeeded and deletion do. */
Test(awphase, running_never_plans_a_delete)
{
	for (int st_i = 0; st_i < 3; st_i++)
		for (int live = 0; live < 3; live++)
			for (int pods = 0; pods < 4; pods++) {
				char *st = running_status(NOW - 400000, NULL, 0);
				snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
				free(st);
				s.comp[0].cached.state = (sf_awp_comp_state)st_i;
				s.comp[0].live.found = (sf_awp_live)live;
				if (pods == 1)
					fail_pod(&s.pods);
				else if (pods == 2)
					s.pods.pending = 1, s.pods.total = 1;
				else if (pods == 3)
					s.pods.succeeded = 1, s.pods.total = 1;
				run(&s);
				cr_assert_not(has_act(&s, SF_AWP_ACT_DELETE));
				cr_assert_not(has_act(&s, SF_AWP_ACT_DELETE_FORCE));
				cr_assert_not(has_act(&s, SF_AWP_ACT_DELETE_PODS));
				done(&s);
			}
}

static char *resetting_status(int64_t unhealthy_ltt, int deployed, int resets)
{
	char *q = cond_json("QuotaReserved", "True", "Resuming", NOW - 900000);
	char *r = cond_json("ResourcesDeployed", deployed ? "True" : "False",
	                    deployed ? "Resuming" : "Resetting", NOW - 900000);
	char *u = cond_json("Unhealthy", "True", "FoundFailedPods", unhealthy_ltt);
	char *cr =
	    cond_json("ResourcesDeployed", "True", "ComponentCreatedSuccessfully", NOW - 900000);
	char *all = NULL;
	cr_assert(asprintf(&all, "%s,%s,%s", q, r, u) > 0);
	char *st = status_json("Resetting", all, cr, resets);
	free(q), free(r), free(u), free(cr), free(all);
	return st;
}

Test(awphase, resetting_deletes_components_first)
{
	char *st = resetting_status(NOW - 1000, 1, 1);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	run(&s);
	cr_assert(has_act(&s, SF_AWP_ACT_DELETE));
	sf_aw_cond d = pcond(&s, "DeletingResources");
	cr_assert_str_eq(d.status, "True");
	cr_assert_str_eq(d.reason, "DeletionInitiated");
	cr_assert_eq(s.plan.requeue_ms, 5000);
	cr_assert_str_eq(pphase(&s), "Resetting");
	done(&s);
}

/* The pause before re-creation doubles per reset already done; it is
 * computed from resettingCount and Unhealthy's transition time only. */
Test(awphase, resetting_pause_doubles_per_reset)
{
	set.retry_pause_ms = 2000;
	for (int resets = 1; resets <= 5; resets++) {
		char *st = resetting_status(NOW - 1000, 0, resets);
		snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
		free(st);
		run(&s);
		int64_t want = (2000LL << (resets - 1)) - 1000 + 999;
		cr_assert_eq(s.plan.requeue_ms, want, "resets %d: requeue %lld, want %lld", resets,
		             (long long)s.plan.requeue_ms, (long long)want);
		cr_assert(s.plan.status == NULL || strcmp(pphase(&s), "Resetting") == 0);
		done(&s);
	}
	/* capped by the ceiling */
	cfg.ft.retry_pause_ceiling_ms = 3000;
	char *st = resetting_status(NOW - 1000, 0, 5);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	run(&s);
	cr_assert_eq(s.plan.requeue_ms, 2999);
	done(&s);
}

Test(awphase, resetting_pause_over_resumes)
{
	set.retry_pause_ms = 1000;
	char *st = resetting_status(NOW - 5000, 0, 3);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	run(&s);
	cr_assert_str_eq(pphase(&s), "Resuming");
	sf_aw_cond r = pcond(&s, "ResourcesDeployed");
	cr_assert_str_eq(r.status, "True");
	cr_assert_str_eq(r.message, "Reset complete; resuming");
	/* the failure stays visible until a later state replaces it */
	cr_assert_str_eq(pcond(&s, "Unhealthy").reason, "FoundFailedPods");
	done(&s);
}

Test(awphase, resetting_delete_done_marks_component_deleted)
{
	char *st = resetting_status(NOW - 1000, 1, 1);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].delete_gone = 1;
	run_confirmed(&s);
	cr_assert_not(has_act(&s, SF_AWP_ACT_DELETE));
	cr_assert_str_eq(pcomp_cond(&s).status, "False");
	sf_aw_cond r = pcond(&s, "ResourcesDeployed");
	cr_assert_str_eq(r.status, "False");
	cr_assert_str_eq(r.reason, "Resetting");
	cr_assert_str_eq(pcond(&s, "DeletingResources").reason, "DeletionComplete");
	done(&s);
}

Test(awphase, deletion_waits_for_pods_then_forces_after_grace)
{
	char *st = resetting_status(NOW - 1000, 1, 1);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].delete_gone = 1;
	s.pods.total = 2;
	run(&s);
	cr_assert_not(has_act(&s, SF_AWP_ACT_DELETE_PODS), "forced before the grace");
	cr_assert_str_eq(pcond(&s, "ResourcesDeployed").status, "True");
	done(&s);

	/* deletion started longer ago than the forceful deletion grace */
	char *d = cond_json("DeletingResources", "True", "DeletionInitiated", NOW - 700000);
	char *q = cond_json("ResourcesDeployed", "True", "Resuming", NOW - 900000);
	char *all = NULL;
	cr_assert(asprintf(&all, "%s,%s", d, q) > 0);
	char *cr = cond_json("ResourcesDeployed", "True", "ComponentCreatedSuccessfully", NOW);
	st = status_json("Suspending", all, cr, 0);
	free(d), free(q), free(all), free(cr);
	snap t = {.json = aw_json(FIN, "\"suspend\":true", st)};
	free(st);
	t.comp[0].delete_gone = 1;
	t.pods.total = 2;
	char *json = strdup(t.json);
	run(&t);
	/* the pods to delete are a live list's, never the cache's */
	cr_assert_not(has_act(&t, SF_AWP_ACT_DELETE_PODS));
	cr_assert(has_act(&t, SF_AWP_ACT_LIST_PODS));
	sf_awp_plan_free(&t.plan);
	t.have_live = 1;
	t.live.total = 2;
	t.live.running = 2;
	t.live_asked = 1;
	run(&t);
	cr_assert(has_act(&t, SF_AWP_ACT_DELETE_PODS));
	cr_assert(has_act(&t, SF_AWP_ACT_LIST_PODS), "no fresh list after the deletes");
	done(&t);

	/* a cache that shows no pod while a live list finds two: deleted too */
	snap u = {.json = json};
	u.comp[0].delete_gone = 1;
	u.have_live = 1;
	u.live.total = 2;
	u.live.pending = 2;
	u.live_asked = 3;
	u.deletes_acked = 2;
	run(&u);
	cr_assert(has_act(&u, SF_AWP_ACT_DELETE_PODS));
	cr_assert_str_eq(pphase(&u), "Suspending");
	done(&u);
}

Test(awphase, suspend_while_running_suspends_and_releases_quota)
{
	char *st = running_status(NOW - 120000, NULL, 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":true", st)};
	free(st);
	run(&s);
	cr_assert_str_eq(pphase(&s), "Suspending");
	done(&s);

	char *q = cond_json("QuotaReserved", "True", "Resuming", NOW - 9000);
	char *r = cond_json("ResourcesDeployed", "False", "Suspended", NOW - 9000);
	char *all = NULL;
	cr_assert(asprintf(&all, "%s,%s", q, r) > 0);
	st = status_json("Suspending", all, "", 0);
	free(q), free(r), free(all);
	snap t = {.json = aw_json(FIN, "\"suspend\":true", st)};
	free(st);
	run(&t);
	cr_assert_str_eq(pphase(&t), "Suspended");
	sf_aw_cond qr = pcond(&t, "QuotaReserved");
	cr_assert_str_eq(qr.status, "False");
	cr_assert_str_eq(qr.message, "Suspend is true");
	done(&t);
}

Test(awphase, deletion_removes_components_then_finalizer)
{
	char *st = running_status(NOW - 120000, NULL, 0);
	snap s = {.json = aw_json(FIN ",\"deletionTimestamp\":\"2027-01-01T00:00:00Z\"",
	                          "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	run(&s);
	cr_assert(has_act(&s, SF_AWP_ACT_DELETE));
	cr_assert_str_eq(pphase(&s), "Terminating");
	cr_assert_null(s.plan.meta_patch);
	done(&s);

	/* components gone: final conditions first ... */
	st = running_status(NOW - 120000, NULL, 0);
	snap t = {.json = aw_json(FIN ",\"deletionTimestamp\":\"2027-01-01T00:00:00Z\"",
	                          "\"suspend\":false", st)};
	free(st);
	t.comp[0].delete_gone = 1;
	run(&t);
	/* no finalizer removal on the pod cache's word */
	cr_assert(has_act(&t, SF_AWP_ACT_LIST_PODS));
	cr_assert_null(t.plan.meta_patch);
	cr_assert_str_eq(pcond(&t, "QuotaReserved").status, "True");
	sf_awp_plan_free(&t.plan);
	t.have_live = 1; /* a live list, asked after the DELETE, finds none */
	t.live_asked = 1;
	run(&t);
	cr_assert_null(t.plan.meta_patch);
	cr_assert_str_eq(pcond(&t, "ResourcesDeployed").reason, "Terminating");
	cr_assert_str_eq(pcond(&t, "QuotaReserved").status, "False");
	/* ... and with those written, the finalizer goes */
	char *written = sf_jd_dump(t.plan.status);
	snap u = {.json = aw_json(FIN ",\"deletionTimestamp\":\"2027-01-01T00:00:00Z\"",
	                          "\"suspend\":false", written)};
	free(written);
	run(&u);
	cr_assert_not_null(u.plan.meta_patch);
	char *p = sf_jd_dump(u.plan.meta_patch);
	cr_assert_str_eq(p, "{\"metadata\":{\"finalizers\":[]}}");
	free(p);
	done(&t);
	done(&u);
}

Test(awphase, failed_pauses_deletion_when_annotated)
{
	char *u = cond_json("Unhealthy", "True", "FoundFailedPods", NOW - 1000);
	char *r = cond_json("ResourcesDeployed", "True", "Resuming", NOW - 9000);
	char *all = NULL;
	cr_assert(asprintf(&all, "%s,%s", u, r) > 0);
	char *st = status_json("Failed", all, "", 0);
	free(u), free(r), free(all);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	set.deletion_on_failure_grace_ms = 60000;
	run(&s);
	sf_aw_cond d = pcond(&s, "DeletingResources");
	cr_assert_str_eq(d.reason, "DeletionPaused");
	cr_assert(strstr(d.message, "deletionOnFailureGracePeriodDuration has value 1m0s"), "%s",
	          d.message);
	cr_assert_eq(s.plan.nacts, 0);
	cr_assert_eq(s.plan.requeue_ms, 60000);
	done(&s);
}

Test(awphase, succeeded_keeps_components_until_ttl)
{
	char *r = cond_json("ResourcesDeployed", "True", "Succeeded", NOW - 1000);
	char *st = status_json("Succeeded", r, "", 0);
	free(r);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	set.success_ttl_ms = 10000;
	run(&s);
	cr_assert_null(s.plan.status);
	cr_assert_eq(s.plan.requeue_ms, 9000);
	done(&s);
}

Test(awphase, managed_by_another_controller_is_skipped)
{
	snap s = {.json = aw_json(FIN, "\"managedBy\":\"someone/else\"", NULL)};
	run(&s);
	cr_assert(s.plan.skipped);
	cr_assert_null(s.plan.status);
	cr_assert_null(s.plan.meta_patch);
	done(&s);
}

Test(awphase, pods_summary_exit_codes)
{
	static const char pod[] =
	    "{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":\"Failed\",\"containerStatuses\":"
	    "[{\"name\":\"main\",\"state\":{\"terminated\":{\"exitCode\":42,\"reason\":\"Error\","
	    "\"message\":\"boom\"}}}]}}";
	sf_awp_pods p = {0};
	sf_awp_pods_add(&p, sf_jv_root(pod, strlen(pod)), &set);
	cr_assert_eq(p.failed, 1);
	cr_assert_not(p.terminal_failure);
	cr_assert_eq(p.fail_exit_code, 42);
	cr_assert_str_eq(p.fail_container, "main");
	cr_assert_str_eq(p.fail_message, "boom");

	set.n_terminal = 1;
	set.terminal_codes[0] = 42;
	sf_awp_pods q = {0};
	sf_awp_pods_add(&q, sf_jv_root(pod, strlen(pod)), &set);
	cr_assert(q.terminal_failure);

	set.n_terminal = 0;
	set.n_retryable = 1;
	set.retryable_codes[0] = 3;
	sf_awp_pods r = {0};
	sf_awp_pods_add(&r, sf_jv_root(pod, strlen(pod)), &set);
	cr_assert(r.terminal_failure, "42 is not retryable");
}

/* ---- evidence on every path ---- */

/* Kueue admitted it before any replica reconciled it (suspend=false with
 * podSetInfos): the create-time defaults must not suspend it again. */
Test(awphase, empty_admitted_before_first_reconcile_keeps_suspend_false)
{
	char *j = NULL;
	cr_assert(asprintf(&j,
	                   "{\"metadata\":{\"name\":\"aw\",\"namespace\":\"ns\",\"uid\":\"u\","
	                   "\"labels\":{\"kueue.x-k8s.io/queue-name\":\"q\"}},"
	                   "\"spec\":{\"suspend\":false,\"components\":[{\"template\":%s,"
	                   "\"podSetInfos\":[{\"nodeSelector\":{\"a\":\"b\"}}]}]}}",
	                   JOB_TEMPLATE) > 0);
	snap s = {.json = j};
	run(&s);
	cr_assert_not_null(s.plan.meta_patch);
	char *p = sf_jd_dump(s.plan.meta_patch);
	cr_assert(strstr(p, SF_AW_FINALIZER), "%s", p);
	cr_assert_null(strstr(p, "suspend"), "%s", p);
	free(p);
	done(&s);

	/* without evidence of admission the default still applies */
	cr_assert(asprintf(&j,
	                   "{\"metadata\":{\"name\":\"aw\",\"namespace\":\"ns\",\"uid\":\"u\","
	                   "\"labels\":{\"kueue.x-k8s.io/queue-name\":\"q\"}},"
	                   "\"spec\":{\"suspend\":false,\"components\":[{\"template\":%s}]}}",
	                   JOB_TEMPLATE) > 0);
	snap t = {.json = j};
	run(&t);
	p = sf_jd_dump(t.plan.meta_patch);
	cr_assert(strstr(p, "\"suspend\":true"), "%s", p);
	free(p);
	done(&t);
}

/* The template was renamed after componentStatus recorded the component:
 * never created under the new name, reported naming the field. */
Test(awphase, resuming_never_creates_a_component_whose_identity_changed)
{
	char *st = resuming_status(NOW - 1000, "");
	char *j = aw_json(FIN, "\"suspend\":false", st);
	free(st);
	/* the template says job-b, componentStatus says job-a */
	char *at = strstr(j, "\"name\":\"job-a\"");
	cr_assert_not_null(at);
	at[12] = 'b';
	snap s = {.json = j};
	run(&s);
	cr_assert_not(has_act(&s, SF_AWP_ACT_CREATE));
	cr_assert_str_eq(pphase(&s), "Failed");
	sf_aw_cond u = pcond(&s, "Unhealthy");
	cr_assert_str_eq(u.reason, "CreateFailed");
	cr_assert(strstr(u.message, "spec.components[0].template.metadata.name is \"job-b\", but "
	                            "the component was recorded as \"job-a\""),
	          "%s", u.message);
	cr_assert_eq(s.plan.nevents, 1);
	cr_assert(strstr(s.plan.events[0].message, "template.metadata.name"));
	done(&s);
}

/* A kind that cannot be resolved (not served, discovery failing): no live
 * read is asked for, nothing fails, the quota is kept, and the condition
 * and a Warning Event say why. */
Test(awphase, running_with_an_unresolved_kind_keeps_phase_and_quota)
{
	char *st = running_status(NOW - 600000, NULL, 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].unresolved = 1;
	s.comp[0].unresolved_msg = "no matches for kind \"Job\" in version \"batch/v1\"";
	s.comp[0].live.found = SF_AWP_LIVE_MISSING; /* even a stale verdict is not used */
	run(&s);
	cr_assert_not(has_act(&s, SF_AWP_ACT_VERIFY));
	cr_assert_str_eq(pphase(&s), "Running");
	cr_assert_str_eq(pcond(&s, "QuotaReserved").status, "True");
	sf_aw_cond u = pcond(&s, "Unhealthy");
	cr_assert_str_eq(u.status, "Unknown");
	cr_assert_str_eq(u.reason, "ComponentStatusUnknown");
	cr_assert(strstr(u.message, "cannot tell whether component batch/v1 Job job-a exists: no "
	                            "matches for kind"),
	          "%s", u.message);
	cr_assert_eq(s.plan.nevents, 1);
	cr_assert(s.plan.events[0].warning);
	cr_assert(s.plan.requeue_ms > 0);
	done(&s);

	/* resolved again: Unhealthy goes back to False */
	char *uc = cond_json("Unhealthy", "Unknown", "ComponentStatusUnknown", NOW - 1000);
	st = running_status(NOW - 600000, uc, 0);
	free(uc);
	snap t = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	t.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	t.pods.running = 1;
	t.pods.total = 1;
	run(&t);
	cr_assert_str_eq(pcond(&t, "Unhealthy").status, "False");
	cr_assert_str_eq(pphase(&t), "Running");
	done(&t);
}

/* Suspending (Kueue's preemption), Resetting and Failed never complete a
 * deletion they cannot prove: no DELETE is planned for an unresolved kind
 * and the quota stays reserved. */
Test(awphase, deletion_with_an_unresolved_kind_waits_and_keeps_quota)
{
	const char *phases[] = {"Suspending", "Resetting", "Failed"};
	for (int i = 0; i < 3; i++) {
		char *q = cond_json("QuotaReserved", "True", "Resuming", NOW - 60000);
		char *r = cond_json("ResourcesDeployed", "True", "Resuming", NOW - 60000);
		char *d = cond_json("DeletingResources", "True", "DeletionInitiated", NOW - 600000);
		char *cr = cond_json("ResourcesDeployed", "True", "ComponentCreatedSuccessfully",
		                     NOW - 60000);
		char *all = NULL;
		cr_assert(asprintf(&all, "%s,%s,%s", q, r, d) > 0);
		char *st = status_json(phases[i], all, cr, 0);
		free(q), free(r), free(d), free(cr), free(all);
		snap s = {.json =
		              aw_json(FIN, i == 0 ? "\"suspend\":true" : "\"suspend\":false", st)};
		free(st);
		s.comp[0].unresolved = 1;
		s.comp[0].unresolved_msg = "discovery of batch/v1 Job failed: 503";
		s.comp[0].delete_gone = 1; /* a stale verdict is not used either */
		run(&s);
		cr_assert_not(has_act(&s, SF_AWP_ACT_DELETE), "%s", phases[i]);
		cr_assert_not(has_act(&s, SF_AWP_ACT_DELETE_FORCE), "%s", phases[i]);
		cr_assert_str_eq(pphase(&s), phases[i]);
		cr_assert_str_eq(pcond(&s, "QuotaReserved").status, "True", "%s", phases[i]);
		cr_assert_str_eq(pcond(&s, "ResourcesDeployed").status, "True", "%s", phases[i]);
		sf_aw_cond d2 = pcond(&s, "DeletingResources");
		cr_assert(strstr(d2.message, "cannot tell whether component batch/v1 Job job-a"),
		          "%s", d2.message);
		cr_assert(s.plan.requeue_ms > 0);
		done(&s);
	}
}

/* Pods all succeeded, but the Job has not said Complete (completions 4,
 * parallelism 2: two pods done, the next two not created yet). */
Test(awphase, running_succeeds_only_when_a_reporting_component_is_complete)
{
	for (int complete = 0; complete < 2; complete++) {
		char *st = running_status(NOW - 60000, NULL, 0);
		snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
		free(st);
		s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
		s.comp[0].completion_known = 1;
		s.comp[0].cached.complete = complete;
		s.pods.succeeded = 2;
		s.pods.total = 2;
		s.expected = 2;
		if (complete)
			run_confirmed(&s);
		else
			run(&s);
		if (complete) {
			cr_assert_str_eq(pphase(&s), "Succeeded");
		} else {
			cr_assert_str_eq(pphase(&s), "Running");
			cr_assert_str_eq(pcond(&s, "QuotaReserved").status, "True");
		}
		done(&s);
	}
}

/* The caches say done, live reads do not (the cached Job is an earlier
 * incarnation's, or the cached pods are gone): no Succeeded. */
Test(awphase, running_success_in_the_caches_needs_live_reads_that_agree)
{
	for (int which = 0; which < 2; which++) {
		char *st = running_status(NOW - 60000, NULL, 0);
		snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
		free(st);
		s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
		s.comp[0].completion_known = 1;
		s.comp[0].cached.complete = 1;
		s.pods.succeeded = 1;
		s.pods.total = 1;
		s.have_live = 1;
		s.live = s.pods;
		s.comp[0].live.found = SF_AWP_LIVE_FOUND;
		s.comp[0].live.complete = 1;
		if (which == 0)
			s.comp[0].live.complete = 0; /* the live Job is not complete */
		else
			s.live.succeeded = 0, s.live.running = 1; /* a pod still runs */
		run(&s);
		cr_assert(s.plan.status == NULL || strcmp(pphase(&s), "Running") == 0);
		cr_assert(s.plan.suppressed_stale);
		done(&s);
	}
}

/* ---- two components: success is each component's, never a sum ---- */

/* A Job of completions 2 and parallelism 1: one pod expected, two left
 * Succeeded once it is Complete. */
static const char *JOB_2_1_TEMPLATE =
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"job-a\"},"
    "\"spec\":{\"completions\":2,\"parallelism\":1,\"template\":{\"spec\":{\"restartPolicy\":"
    "\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}";

static const char *POD_TEMPLATE =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-b\"},"
    "\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":"
    "\"busybox\"}]}}";

/* a Deployment of `replicas` pods */
static char *deploy_template(int replicas)
{
	char *s = NULL;
	cr_assert(
	    asprintf(&s,
	             "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{"
	             "\"name\":\"deploy-b\"},\"spec\":{\"replicas\":%d,\"selector\":{"
	             "\"matchLabels\":{\"app\":\"b\"}},\"template\":{\"metadata\":{\"labels\":"
	             "{\"app\":\"b\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
	             "\"busybox\"}]}}}}",
	             replicas) > 0);
	return s;
}

/* A Running AppWrapper (deployed at t0) of the Job above and a second
 * component: template, and its componentStatus kind, apiVersion, name, pod
 * set path and replicas. */
static char *running_two(int64_t t0, const char *second, const char *kind, const char *api,
                         const char *name, const char *path, int replicas)
{
	char *q = cond_json("QuotaReserved", "True", "Resuming", t0);
	char *r = cond_json("ResourcesDeployed", "True", "Resuming", t0);
	char *p = cond_json("PodsReady", "False", "Resuming", t0);
	char *u = cond_json("Unhealthy", "False", "Resuming", t0);
	char *cr = cond_json("ResourcesDeployed", "True", "ComponentCreatedSuccessfully", t0);
	char *s = NULL;
	cr_assert(asprintf(&s,
	                   "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	                   "\"metadata\":{\"name\":\"aw\",\"namespace\":\"ns\",\"uid\":\"u-1\","
	                   "\"resourceVersion\":\"10\"," FIN "},\"spec\":{\"suspend\":false,"
	                   "\"components\":[{\"template\":%s},{\"template\":%s}]},"
	                   "\"status\":{\"phase\":\"Running\",\"resettingCount\":0,\"conditions\":"
	                   "[%s,%s,%s,%s],\"componentStatus\":["
	                   "{\"name\":\"job-a\",\"kind\":\"Job\",\"apiVersion\":\"batch/v1\","
	                   "\"podSets\":[{\"replicas\":1,\"path\":\"template.spec.template\"}],"
	                   "\"conditions\":[%s]},"
	                   "{\"name\":\"%s\",\"kind\":\"%s\",\"apiVersion\":\"%s\",\"podSets\":"
	                   "[{\"replicas\":%d,\"path\":\"%s\"}],\"conditions\":[%s]}]}}",
	                   JOB_2_1_TEMPLATE, second, q, r, p, u, cr, name, kind, api, replicas,
	                   path, cr) > 0);
	free(q), free(r), free(p), free(u), free(cr);
	return s;
}

/* The Job is Complete with its two pods Succeeded; cache and live reads
 * agree. */
static void job_done(snap *s)
{
	s->ncomp = 2;
	s->expected = 2;
	s->comp[0].cached.state = SF_AWP_COMP_PRESENT;
	s->comp[0].completion_known = 1;
	s->comp[0].cached.complete = 1;
	s->comp[0].succeeded = 2;
	s->comp[1].cached.state = SF_AWP_COMP_PRESENT;
	s->pods.succeeded = 2;
	s->pods.total = 2;
}

/* What the live reads answer: the caches' view. */
static void live_agrees(snap *s)
{
	s->have_live = 1;
	s->live = s->pods;
	s->live_ms = NOW;
	s->live_asked = s->deletes_acked + 1;
	for (size_t i = 0; i < s->ncomp; i++) {
		s->comp[i].live.found = SF_AWP_LIVE_FOUND;
		s->comp[i].live.complete = s->comp[i].cached.complete;
		s->comp[i].live_succeeded = s->comp[i].succeeded;
	}
}

static void assert_not_succeeded(const snap *s, const char *what)
{
	cr_assert(s->plan.status == NULL || strcmp(pphase(s), "Running") == 0, "%s: phase %s", what,
	          s->plan.status ? pphase(s) : "(unchanged)");
	cr_assert(s->plan.status == NULL || strcmp(pcond(s, "QuotaReserved").status, "True") == 0,
	          "%s: QuotaReserved released", what);
}

/* Found by the model checker (F5): the Job's surplus pod stood in for the
 * Pod component's. pod-b runs, being deleted by someone else (a Running
 * pod with a deletionTimestamp is not counted as running, as upstream),
 * and its own cache has not seen the deletion: the Job's two Succeeded
 * pods made "2 succeeded of 2 expected", and the AppWrapper was Succeeded
 * (QuotaReserved False) while pod-b ran and had never completed. */
Test(awphase, a_jobs_surplus_pods_never_stand_in_for_a_pod_components)
{
	snap s = {.json =
	              running_two(NOW - 10000, POD_TEMPLATE, "Pod", "v1", "pod-b", "template", 1)};
	job_done(&s);
	s.pods.total = 3; /* pod-b: Running, deleting */
	live_agrees(&s);
	run(&s);
	assert_not_succeeded(&s, "pod-b never succeeded");
	done(&s);

	/* once pod-b succeeded too, it is Succeeded */
	s = (snap){.json =
	               running_two(NOW - 10000, POD_TEMPLATE, "Pod", "v1", "pod-b", "template", 1)};
	job_done(&s);
	s.comp[1].succeeded = 1;
	s.pods.succeeded = s.pods.total = 3;
	run_confirmed(&s);
	cr_assert_str_eq(pphase(&s), "Succeeded");
	cr_assert_str_eq(pcond(&s, "QuotaReserved").status, "False");
	cr_assert_str_eq(pcond(&s, "QuotaReserved").message,
	                 "3 pods succeeded and no running, pending, or failed pods");
	done(&s);
}

/* Found by the model checker (F5): a Deployment whose controller has made
 * no pod yet (slow, or its pods refused); the Job's two pods made "2
 * succeeded of 2 expected". A Deployment never completes: while it
 * expects pods, the AppWrapper is never Succeeded - not even when a pod
 * of it ends Succeeded (a graceful stop with exit code 0), which no
 * component claims (it is its ReplicaSet's). */
Test(awphase, a_component_that_never_completes_blocks_success)
{
	char *d = deploy_template(1);
	for (int stray = 0; stray < 2; stray++) {
		snap s = {.json = running_two(NOW - 10000, d, "Deployment", "apps/v1", "deploy-b",
		                              "template.spec.template", 1)};
		job_done(&s);
		if (stray)
			s.pods.succeeded = s.pods.total = 3;
		live_agrees(&s);
		run(&s);
		assert_not_succeeded(&s, stray ? "a Deployment's pod Succeeded"
		                               : "the Deployment has made no pod");
		done(&s);
	}
	free(d);

	/* one of no replicas expects no pod, and runs none: as upstream,
	 * the Job's success is the AppWrapper's */
	d = deploy_template(0);
	snap s = {.json = running_two(NOW - 10000, d, "Deployment", "apps/v1", "deploy-b",
	                              "template.spec.template", 0)};
	free(d);
	job_done(&s);
	s.expected = 1;
	run_confirmed(&s);
	cr_assert_str_eq(pphase(&s), "Succeeded");
	done(&s);
}

/* The same count decides readiness: the Job's surplus pod does not make
 * up for the Deployment's, which never left Pending (unschedulable).
 * Upstream said PodsReady=True ("0 pods running; 2 pods succeeded") and
 * held the quota for good; past the warmup grace, with a live list
 * answered after it that agrees, it is InsufficientPodsReady (a reset),
 * as for a Job that leaves no surplus. */
Test(awphase, a_jobs_surplus_pods_never_make_another_component_ready)
{
	char *d = deploy_template(1);
	snap s = {.json = running_two(NOW - 3600000, d, "Deployment", "apps/v1", "deploy-b",
	                              "template.spec.template", 1)};
	free(d);
	job_done(&s);
	s.pods.pending = 1;
	s.pods.total = 3;
	live_agrees(&s);
	run(&s);
	cr_assert_str_neq(pcond(&s, "PodsReady").status, "True");
	cr_assert_str_eq(pphase(&s), "Resetting");
	sf_aw_cond u = pcond(&s, "Unhealthy");
	cr_assert_str_eq(u.reason, "InsufficientPodsReady");
	cr_assert_str_eq(u.message, "1 pods pending; 0 pods running; 2 pods succeeded");
	done(&s);
}

/* Which component a pod is: the Pod component itself by its name; a pod
 * whose controller owner reference names a component (group, kind, name)
 * that component; a pod of an intermediate owner (a Deployment's
 * ReplicaSet) or of none, no component. */
Test(awphase, a_pod_is_claimed_by_the_component_it_is_or_its_controller_names)
{
	static const char *cs =
	    "[{\"name\":\"job-a\",\"kind\":\"Job\",\"apiVersion\":\"batch/v1\"},"
	    "{\"name\":\"pod-b\",\"kind\":\"Pod\",\"apiVersion\":\"v1\"},"
	    "{\"name\":\"deploy-c\",\"kind\":\"Deployment\",\"apiVersion\":\"apps/v1\"},"
	    "{\"name\":\"\",\"kind\":\"Job\",\"apiVersion\":\"batch/v1\"}]";
	static const struct {
		const char *pod;
		int want;
	} cases[] = {
	    {"{\"metadata\":{\"name\":\"job-a-x1\",\"ownerReferences\":[{"
	     "\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"job-a\",\"uid\":\"j1\","
	     "\"controller\":true}]}}",
	     0},
	    /* another version of the same group */
	    {"{\"metadata\":{\"name\":\"job-a-x2\",\"ownerReferences\":[{"
	     "\"apiVersion\":\"batch/v2\",\"kind\":\"Job\",\"name\":\"job-a\",\"uid\":\"j1\","
	     "\"controller\":true}]}}",
	     0},
	    {"{\"metadata\":{\"name\":\"pod-b\",\"ownerReferences\":[{"
	     "\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"name\":\"aw\","
	     "\"uid\":\"u-1\",\"controller\":true}]}}",
	     1},
	    {"{\"metadata\":{\"name\":\"deploy-c-5d8f-x\",\"ownerReferences\":[{\"apiVersion\":"
	     "\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"deploy-c-5d8f\",\"uid\":\"r1\","
	     "\"controller\":true}]}}",
	     -1},
	    /* a Job of that name in another group */
	    {"{\"metadata\":{\"name\":\"x\",\"ownerReferences\":[{\"apiVersion\":\"other.io/v1\","
	     "\"kind\":\"Job\",\"name\":\"job-a\",\"uid\":\"o1\",\"controller\":true}]}}",
	     -1},
	    /* an owner that is not the controller */
	    {"{\"metadata\":{\"name\":\"y\",\"ownerReferences\":[{\"apiVersion\":\"batch/v1\","
	     "\"kind\":\"Job\",\"name\":\"job-a\",\"uid\":\"j1\"}]}}",
	     -1},
	    {"{\"metadata\":{\"name\":\"z\"}}", -1},
	};
	sf_jv arr = sf_jv_root(cs, strlen(cs));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sf_jv pod = sf_jv_root(cases[i].pod, strlen(cases[i].pod));
		cr_assert_eq(sf_awp_pod_component(pod, arr), cases[i].want, "case %zu", i);
	}
}

/* G1, found by the model checker's liveness check: one component absent
 * from the cache within its missing-component grace, another's cached
 * copy Failed=True. The step returns at the first before it could use a
 * live read of the second, so asking one then only made a GET whose
 * answer expired unused (news for one step), and the next step asked
 * again: a live GET every reconcile until the grace ended. It is asked
 * once nothing else makes the step wait. */
Test(awphase, a_cached_failure_is_not_read_live_while_another_component_waits)
{
	snap s = {.json =
	              running_two(NOW - 60000, POD_TEMPLATE, "Pod", "v1", "pod-b", "template", 1)};
	s.ncomp = 2;
	s.expected = 2;
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	s.comp[0].cached.failed = 1;
	s.comp[0].completion_known = 1;
	s.comp[1].cached.state = SF_AWP_COMP_ABSENT;
	s.comp[1].confirmed_ms = NOW - 1000; /* within the grace */
	run(&s);
	cr_assert(s.plan.suppressed_missing);
	cr_assert_null(s.plan.status);
	cr_assert_not(has_act(&s, SF_AWP_ACT_VERIFY), "a live read that could not be used");
	cr_assert_eq(s.plan.requeue_ms, set.missing_grace_ms - 1000);
	sf_awp_plan_free(&s.plan);

	/* the second component seen again: the cached failure is read live */
	s.comp[1].cached.state = SF_AWP_COMP_PRESENT;
	run(&s);
	cr_assert_eq(s.plan.nacts, 1);
	cr_assert_eq(s.plan.acts[0].kind, SF_AWP_ACT_VERIFY);
	cr_assert_eq(s.plan.acts[0].idx, 0);
	done(&s);
}

/* Long after deployment, one step sees too few pods (PodsReady True a
 * moment ago): the grace counts from now, not from the deployment. */
Test(awphase, running_pods_grace_counts_from_the_last_time_enough_were_seen)
{
	char *p = cond_json("PodsReady", "True", "SufficientPodsReady", NOW - 3600000);
	char *q = cond_json("QuotaReserved", "True", "Resuming", NOW - 86400000);
	char *r = cond_json("ResourcesDeployed", "True", "Resuming", NOW - 86400000);
	char *u = cond_json("Unhealthy", "False", "Resuming", NOW - 86400000);
	char *cr =
	    cond_json("ResourcesDeployed", "True", "ComponentCreatedSuccessfully", NOW - 86400000);
	char *all = NULL;
	cr_assert(asprintf(&all, "%s,%s,%s,%s", q, r, p, u) > 0);
	char *st = status_json("Running", all, cr, 0);
	free(p), free(q), free(r), free(u), free(cr), free(all);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	s.pods.pending = 1;
	s.pods.total = 1;
	run(&s);
	cr_assert_str_eq(pphase(&s), "Running");
	sf_aw_cond pr = pcond(&s, "PodsReady");
	cr_assert_str_eq(pr.status, "False");
	cr_assert_eq(pr.ltt_ms, NOW);
	cr_assert_not(has_act(&s, SF_AWP_ACT_LIST_PODS));
	cr_assert(s.plan.requeue_ms > 0);
	done(&s);

	/* past that grace, a live list that finds enough pods wins over the
	 * cache: nothing is reset */
	char *p2 = cond_json("PodsReady", "False", "InsufficientPodsReady", NOW - 301000);
	q = cond_json("QuotaReserved", "True", "Resuming", NOW - 86400000);
	r = cond_json("ResourcesDeployed", "True", "Resuming", NOW - 86400000);
	u = cond_json("Unhealthy", "False", "Resuming", NOW - 86400000);
	cr = cond_json("ResourcesDeployed", "True", "ComponentCreatedSuccessfully", NOW - 86400000);
	cr_assert(asprintf(&all, "%s,%s,%s,%s", q, r, p2, u) > 0);
	char *st2 = status_json("Running", all, cr, 0);
	free(p2), free(q), free(r), free(u), free(cr), free(all);
	snap t = {.json = aw_json(FIN, "\"suspend\":false", st2)};
	free(st), free(st2);
	t.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	t.pods.pending = 1;
	t.pods.total = 1;
	t.have_live = 1;
	t.live.running = 1;
	t.live.total = 1;
	t.live_ms = NOW;
	run(&t);
	cr_assert(t.plan.suppressed_pods);
	cr_assert(t.plan.status == NULL || strcmp(pphase(&t), "Running") == 0);
	cr_assert_eq(t.plan.nevents, 0);
	/* and a live list from before the grace expired does not count */
	t.live.running = 0;
	t.live.pending = 1;
	t.live_ms = NOW - 2000;
	sf_awp_plan_free(&t.plan);
	run(&t);
	cr_assert(has_act(&t, SF_AWP_ACT_LIST_PODS));
	cr_assert(t.plan.status == NULL || strcmp(pphase(&t), "Running") == 0);
	done(&t);
}

Test(awphase, nodes_are_kept_sorted_once_and_counted_beyond_the_bound)
{
	sf_awp_nodes ns = {0};
	char buf[256];
	sf_awp_nodes_str(&ns, buf, sizeof(buf));
	cr_assert_str_eq(buf, "[]");
	sf_awp_nodes_add(&ns, "b");
	sf_awp_nodes_add(&ns, "a");
	sf_awp_nodes_add(&ns, "b");
	sf_awp_nodes_str(&ns, buf, sizeof(buf));
	cr_assert_str_eq(buf, "[a b]");
	for (int i = 0; i < SF_AWP_MAX_NODES + 2; i++) {
		char n[16];
		snprintf(n, sizeof(n), "n%02d", i);
		sf_awp_nodes_add(&ns, n);
	}
	cr_assert_eq(ns.n, SF_AWP_MAX_NODES);
	cr_assert_eq(ns.more, 4);
	sf_awp_nodes_str(&ns, buf, sizeof(buf));
	cr_assert(strstr(buf, "] and 4 more"), "%s", buf);
}

/* Running with `resets` resets and its one pod Running on node gpu-1, which
 * the node cache says is NoExecute for a resource the pod uses (when
 * suspected) and a live read confirmed (live: NULL = no read answered,
 * else the nodes it confirmed). */
static void run_noexec(snap *s, int resets, const sf_awp_nodes *sus, const sf_awp_nodes *live)
{
	char *st = running_status(NOW - 120000, NULL, resets);
	s->json = aw_json(FIN, "\"suspend\":false", st);
	free(st);
	s->comp[0].cached.state = SF_AWP_COMP_PRESENT;
	s->pods.running = 1;
	s->pods.total = 1;
	s->noexec = sus;
	s->noexec_live = live;
	run(s);
}

/* No reset before a live read confirms the node cache's suspicion. */
Test(awphase, running_on_a_noexec_node_asks_for_live_reads_first)
{
	sf_awp_nodes sus = {0};
	sf_awp_nodes_add(&sus, "gpu-1");
	snap s = {0};
	run_noexec(&s, 0, &sus, NULL);
	cr_assert(has_act(&s, SF_AWP_ACT_VERIFY_NODES));
	cr_assert_null(s.plan.status, "nothing written on a suspicion");
	cr_assert_eq(s.plan.to, SF_AW_RUNNING);
	cr_assert_eq(s.plan.evacuated, 0);
	done(&s);
}

Test(awphase, running_confirmed_noexec_resets_without_counting_a_retry)
{
	sf_awp_nodes sus = {0}, live = {0};
	sf_awp_nodes_add(&sus, "gpu-1");
	sf_awp_nodes_add(&live, "gpu-1");
	snap s = {0};
	run_noexec(&s, 2, &sus, &live);
	cr_assert_str_eq(pphase(&s), "Resetting");
	int64_t n = -1;
	sf_jd_int(sf_jd_get(s.plan.status, "resettingCount"), &n);
	cr_assert_eq(n, 2, "an evacuation is not a retry");
	sf_aw_cond u = pcond(&s, "Unhealthy");
	cr_assert_str_eq(u.status, "True");
	cr_assert_str_eq(u.reason, "AutopilotNoExecute");
	cr_assert_str_eq(u.message,
	                 "Workload contains pods using NoExecute resources on Nodes: [gpu-1]");
	cr_assert_eq(s.plan.nevents, 1);
	cr_assert_eq(s.plan.events[0].warning, 0, "upstream's event is Normal");
	cr_assert_str_eq(s.plan.events[0].reason, "Unhealthy");
	cr_assert_eq(s.plan.evacuated, 1);
	done(&s);
}

Test(awphase, running_noexec_at_the_retry_limit_fails_as_upstream)
{
	sf_awp_nodes sus = {0}, live = {0};
	sf_awp_nodes_add(&sus, "gpu-1");
	sf_awp_nodes_add(&live, "gpu-1");
	snap s = {0};
	run_noexec(&s, 3, &sus, &live);
	cr_assert_str_eq(pphase(&s), "Failed");
	done(&s);
}

Test(awphase, running_noexec_the_live_reads_disprove_is_suppressed)
{
	sf_awp_nodes sus = {0}, live = {0}; /* read: the label has gone */
	sf_awp_nodes_add(&sus, "gpu-1");
	snap s = {0};
	run_noexec(&s, 0, &sus, &live);
	cr_assert_eq(s.plan.suppressed_evacuation, 1);
	cr_assert_eq(s.plan.evacuated, 0);
	cr_assert_not(has_act(&s, SF_AWP_ACT_VERIFY_NODES));
	cr_assert_str_eq(pcond(&s, "PodsReady").status, "True", "the step goes on as usual");
	cr_assert_neq(s.plan.to, SF_AW_RESETTING);
	done(&s);
}

/* ---- evidence: no stale view reaches a destructive or create-skipping step ---- */

/* A standby's Job cache still holds the incarnation the last leader deleted
 * before it died (no finalizer, so no deletionTimestamp): that copy is not
 * this attempt's component. Only a create's answer (or AlreadyExists and a
 * live read) says it was created. */
Test(awphase, resuming_never_takes_a_cached_component_as_created)
{
	char *cr = cond_json("ResourcesDeployed", "False", "CompononetDeleted", NOW - 5000);
	char *st = resuming_status(NOW - 1000, cr);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st), free(cr);
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT; /* the cache's copy: a stale one */
	run(&s);
	cr_assert(has_act(&s, SF_AWP_ACT_CREATE), "the component was not created");
	cr_assert_str_neq(pcomp_cond(&s).reason, "ComponentCreatedSuccessfully");
	cr_assert_str_eq(pphase(&s), "Resuming");
	done(&s);
}

/* Kueue preempts while the pod cache lags: the Job's DELETE succeeded, the
 * cache shows no pod, but pods may still run. QuotaReserved stays True until
 * a live pod LIST asked after the DELETE shows none. */
Test(awphase, suspending_releases_quota_only_after_a_live_pod_list)
{
	char *q = cond_json("QuotaReserved", "True", "Resuming", NOW - 9000);
	char *r = cond_json("ResourcesDeployed", "True", "Resuming", NOW - 9000);
	char *cr = cond_json("ResourcesDeployed", "True", "ComponentCreatedSuccessfully", NOW);
	char *all = NULL;
	cr_assert(asprintf(&all, "%s,%s", q, r) > 0);
	char *st = status_json("Suspending", all, cr, 0);
	free(q), free(r), free(cr), free(all);
	snap s = {.json = aw_json(FIN, "\"suspend\":true", st)};
	free(st);
	s.comp[0].delete_gone = 1; /* the DELETE was answered */
	run(&s);                   /* the pod cache shows nothing */
	cr_assert(has_act(&s, SF_AWP_ACT_LIST_PODS), "no live pod list asked for");
	cr_assert_str_eq(pphase(&s), "Suspending");
	cr_assert_str_eq(pcond(&s, "QuotaReserved").status, "True");
	cr_assert_str_neq(pcond(&s, "DeletingResources").reason, "DeletionComplete");
	done(&s);
}

/* A Failed=True on the cache's copy may be an earlier incarnation's: a
 * reset needs it confirmed by a live read. */
Test(awphase, running_failed_component_is_confirmed_live_before_a_reset)
{
	char *st = running_status(NOW - 120000, NULL, 0);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	s.comp[0].cached.state = SF_AWP_COMP_PRESENT;
	s.comp[0].cached.failed = 1;
	run(&s);
	cr_assert(has_act(&s, SF_AWP_ACT_VERIFY), "no live read asked for");
	cr_assert(s.plan.status == NULL || strcmp(pphase(&s), "Running") == 0);
	done(&s);
}

/* ---- upstream's status shapes ---- */

/* Upstream v1.2.x initialises componentStatus with pod sets only: name,
 * kind and apiVersion are "" until it creates the component. An AppWrapper
 * it queued, admitted after the upgrade: the identity is recorded from the
 * template, not contradicted by it. */
Test(awphase, resuming_records_an_identity_upstream_left_empty)
{
	char *q = cond_json("QuotaReserved", "True", "Resuming", NOW - 1000);
	char *r = cond_json("ResourcesDeployed", "True", "Resuming", NOW - 1000);
	char *st = NULL;
	cr_assert(asprintf(&st,
	                   "{\"phase\":\"Resuming\",\"conditions\":[%s,%s],\"componentStatus\":["
	                   "{\"name\":\"\",\"kind\":\"\",\"apiVersion\":\"\",\"podSets\":[{"
	                   "\"replicas\":1,\"path\":\"template.spec.template\"}]}]}",
	                   q, r) > 0);
	free(q), free(r);
	snap s = {.json = aw_json(FIN, "\"suspend\":false", st)};
	free(st);
	run(&s);
	cr_assert_str_eq(pphase(&s), "Resuming", "%s", pcond(&s, "Unhealthy").message);
	cr_assert_neq(strcmp(pcond(&s, "Unhealthy").status, "True"), 0);
	sf_jd *cs = sf_jd_at(sf_jd_get(s.plan.status, "componentStatus"), 0, NULL);
	cr_assert_str_eq(sf_jd_str(sf_jd_get(cs, "name"), NULL), "job-a");
	cr_assert_str_eq(sf_jd_str(sf_jd_get(cs, "kind"), NULL), "Job");
	cr_assert_str_eq(sf_jd_str(sf_jd_get(cs, "apiVersion"), NULL), "batch/v1");
	/* the create follows once the identity is written (the executor
	 * reads the kind and name from the recorded status) */
	cr_assert_not(has_act(&s, SF_AWP_ACT_CREATE));
	cr_assert_eq(s.plan.requeue_ms, 0);
	done(&s);
}

/* A create's answer, as upstream classifies it: only Invalid (422) is
 * fatal (a kind not served is refused before any create); a 400 - what a
 * webhook that refuses without a code answers, often for a passing
 * reason - and everything else is retried within the admission grace. */
Test(awphase, a_create_refused_with_400_is_retried_as_upstream_does)
{
	sf_awp_create_outcome oc = SF_AWP_CREATE_NONE;
	sf_awp_answer a = {.kind = SF_AWP_ANS_ERROR}; /* 400, 403, 5xx, transport */
	cr_assert_eq(sf_awp_read_create(&a, &oc), 0);
	cr_assert_eq(oc, SF_AWP_CREATE_RETRYABLE);
	a.kind = SF_AWP_ANS_ABSENT; /* the namespace's NotFound */
	cr_assert_eq(sf_awp_read_create(&a, &oc), 0);
	cr_assert_eq(oc, SF_AWP_CREATE_RETRYABLE);
	a.kind = SF_AWP_ANS_FOREIGN_404;
	cr_assert_eq(sf_awp_read_create(&a, &oc), 0);
	cr_assert_eq(oc, SF_AWP_CREATE_RETRYABLE);
	a.kind = SF_AWP_ANS_INVALID;
	cr_assert_eq(sf_awp_read_create(&a, &oc), 0);
	cr_assert_eq(oc, SF_AWP_CREATE_FATAL);
	a.kind = SF_AWP_ANS_OK;
	cr_assert_eq(sf_awp_read_create(&a, &oc), 0);
	cr_assert_eq(oc, SF_AWP_CREATE_OK);
	a.kind = SF_AWP_ANS_EXISTS; /* a live read decides (sf_awp_read_adopt) */
	cr_assert_eq(sf_awp_read_create(&a, &oc), 1);
}

/* Found by the model checker: an AppWrapper deleted before its first
 * reconcile (the admission policy added the finalizer at create; no status
 * yet) kept its finalizer forever - the step planned neither a status
 * write (nothing to write) nor the finalizer's removal (it compared with a
 * status that did not exist). */
Test(awphase, deleted_before_any_status_loses_its_finalizer)
{
	snap s = {.json = aw_json(FIN ",\"deletionTimestamp\":\"2027-01-01T00:00:00Z\"",
	                          "\"suspend\":true", NULL)};
	run(&s);
	cr_assert_not_null(s.plan.meta_patch, "the finalizer stays (%s)", s.plan.why);
	char *p = sf_jd_dump(s.plan.meta_patch);
	cr_assert_str_eq(p, "{\"metadata\":{\"finalizers\":[]}}");
	free(p);
	done(&s);
}

/* ---- cached views alone never decide ---- */

/* Every phase that can end, destroy, release or skip, with every
 * combination of what the caches may show (the component absent, present,
 * pending, being deleted, Failed, Complete; no pod, a pending, running,
 * succeeded, failed or terminally failed pod) and no evidence at all (no
 * create answer, no live read, no live list; DELETEs answered where a
 * deletion is under way), long past every grace: no step is terminal,
 * resetting, quota-releasing, create-skipping, success-declaring or
 * finishing a deletion, and no pod is deleted. A rule that reads a cache
 * where it needs evidence fails here. */
typedef struct sweep_case {
	const char *phase;   /* status.phase */
	int suspend, del;    /* spec.suspend; a deletionTimestamp */
	const char *comp_rd; /* componentStatus ResourcesDeployed: True or Unknown */
	int delete_gone;     /* the DELETE answered gone (evidence, given) */
} sweep_case;

static char *sweep_status(const sweep_case *c)
{
	int64_t t0 = NOW - 30LL * 24 * 3600 * 1000; /* a month ago */
	char *q = cond_json("QuotaReserved", "True", "Resuming", t0);
	char *r = cond_json("ResourcesDeployed", "True", "Resuming", t0);
	char *p = cond_json("PodsReady", "False", "Resuming", t0);
	char *u = cond_json("Unhealthy", "True", "FoundFailedPods", t0);
	char *d = cond_json("DeletingResources", "True", "DeletionInitiated", t0);
	char *cr = cond_json("ResourcesDeployed", c->comp_rd,
	                     strcmp(c->comp_rd, "True") == 0 ? "ComponentCreatedSuccessfully"
	                                                     : "ComponentCreationInitiated",
	                     t0);
	char *all = NULL;
	cr_assert(asprintf(&all, "%s,%s,%s,%s,%s", q, r, p, u, d) > 0);
	char *st = status_json(c->phase, all, cr, 1);
	free(q), free(r), free(p), free(u), free(d), free(cr), free(all);
	return st;
}

static void sweep_pods(sf_awp_pods *p, int kind)
{
	memset(p, 0, sizeof(*p));
	switch (kind) {
	case 1: p->pending = p->total = 1; break;
	case 2: p->running = p->total = 1; break;
	case 3: p->succeeded = p->total = 1; break;
	case 4: fail_pod(p); break;
	case 5: fail_pod(p), p->terminal_failure = 1; break;
	default: break;
	}
}

Test(awphase, cached_views_alone_never_decide)
{
	static const sweep_case cases[] = {
	    {"Resuming", 0, 0, "Unknown", 0}, {"Running", 0, 0, "True", 0},
	    {"Suspending", 1, 0, "True", 1},  {"Resetting", 0, 0, "True", 1},
	    {"Failed", 0, 0, "True", 1},      {"Succeeded", 0, 0, "True", 1},
	    {"Running", 0, 1, "True", 1},     {"Terminating", 0, 1, "True", 1},
	};
	size_t n = 0;
	set.success_ttl_ms = 1000;
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
		for (int state = 0; state < 3; state++)
			for (int bits = 0; bits < 16; bits++)
				for (int pods = 0; pods < 6; pods++) {
					const sweep_case *c = &cases[ci];
					char *st = sweep_status(c);
					char meta[160];
					snprintf(
					    meta, sizeof(meta), "%s%s", FIN,
					    c->del
					        ? ",\"deletionTimestamp\":\"2027-01-01T00:00:00Z\""
					        : "");
					snap s = {.json = aw_json(meta,
					                          c->suspend ? "\"suspend\":true"
					                                     : "\"suspend\":false",
					                          st)};
					free(st);
					sf_awp_cached *k = &s.comp[0].cached;
					k->state = (sf_awp_comp_state)state;
					k->deleting = bits & 1;
					k->failed = (bits >> 1) & 1;
					k->complete = (bits >> 2) & 1;
					s.comp[0].completion_known = (bits >> 3) & 1;
					s.comp[0].delete_gone = c->delete_gone;
					sweep_pods(&s.pods, pods);
					run(&s);
					const char *why = s.plan.why ? s.plan.why : "";
					char ctx[200];
					snprintf(ctx, sizeof(ctx),
					         "%s%s, cached state %d bits %d pods %d: %s",
					         c->phase, c->del ? " (deleted)" : "", state, bits,
					         pods, why);
					if (s.plan.to != s.plan.from) {
						cr_assert_neq(s.plan.to, SF_AW_FAILED, "Failed: %s",
						              ctx);
						cr_assert_neq(s.plan.to, SF_AW_SUCCEEDED,
						              "Succeeded: %s", ctx);
					}
					if (s.plan.from == SF_AW_RUNNING)
						cr_assert_neq(s.plan.to, SF_AW_RESETTING,
						              "reset: %s", ctx);
					cr_assert_not(has_act(&s, SF_AWP_ACT_DELETE_PODS),
					              "pods deleted: %s", ctx);
					if (s.plan.meta_patch) {
						char *mp = sf_jd_dump(s.plan.meta_patch);
						cr_assert(strstr(mp, SF_AW_FINALIZER),
						          "finalizer removed: %s (%s)", ctx, mp);
						free(mp);
					}
					if (s.plan.status) {
						sf_aw_cond q = pcond(&s, "QuotaReserved");
						cr_assert_str_neq(q.status, "False",
						                  "quota released: %s", ctx);
						sf_aw_cond d = pcond(&s, "DeletingResources");
						cr_assert_str_neq(d.reason, "DeletionComplete",
						                  "deletion complete: %s", ctx);
						if (strcmp(c->comp_rd, "True") != 0)
							cr_assert_str_neq(
							    pcomp_cond(&s).reason,
							    "ComponentCreatedSuccessfully",
							    "create skipped: %s", ctx);
					}
					done(&s);
					n++;
				}
	cr_assert_eq(n, 8 * 3 * 16 * 6);
}

/* Found by the model checker: a DELETE's 409 (UID precondition failed)
 * only says the name holds another object, which may be a newer
 * incarnation of ours; it is not "gone" (a live GET decides). A NotFound
 * for the name and another's object are. */
Test(awphase, a_delete_conflict_is_not_gone)
{
	int gone = 7;
	sf_awp_answer a = {.kind = SF_AWP_ANS_CONFLICT};
	cr_assert_eq(sf_awp_read_delete(&a, &gone), 0);
	cr_assert_eq(gone, 0);
	a.kind = SF_AWP_ANS_ABSENT;
	cr_assert_eq(sf_awp_read_delete(&a, &gone), 1);
	cr_assert_eq(gone, 1);
	a = (sf_awp_answer){.kind = SF_AWP_ANS_OK, .owned = 0};
	cr_assert_eq(sf_awp_read_delete(&a, &gone), 1);
	a = (sf_awp_answer){.kind = SF_AWP_ANS_OK, .owned = 1};
	cr_assert_eq(sf_awp_read_delete(&a, &gone), 0);
	a.kind = SF_AWP_ANS_FOREIGN_404;
	cr_assert_eq(sf_awp_read_delete(&a, &gone), -EAGAIN);
}

/* ---- generated names (metadata.generateName) ---- */

/* json with the Job template's name replaced by generateName "job-" and, in
 * the status, the recorded name "job-a" by recorded (frees json). */
static char *generated(char *json, const char *recorded)
{
	static const char *tn = "\"metadata\":{\"name\":\"job-a\"}";
	static const char *sn = "\"name\":\"job-a\",\"kind\"";
	sf_buf b;
	sf_buf_init(&b, 0);
	const char *p = json;
	for (;;) {
		const char *a = strstr(p, tn), *c = strstr(p, sn);
		const char *at = a && (!c || a < c) ? a : c;
		if (!at)
			break;
		cr_assert_eq(sf_buf_append(&b, p, (size_t)(at - p)), 0);
		if (at == a)
			cr_assert_eq(sf_buf_puts(&b, "\"metadata\":{\"generateName\":\"job-\"}"),
			             0);
		else
			cr_assert_eq(sf_buf_printf(&b, "\"name\":\"%s\",\"kind\"", recorded), 0);
		p = at + strlen(at == a ? tn : sn);
	}
	cr_assert_eq(sf_buf_puts(&b, p), 0);
	cr_assert_eq(sf_buf_putc(&b, '\0'), 0);
	free(json);
	return b.data;
}

Test(awphase, generate_name_initialises_an_unrecorded_name)
{
	snap s = {.json = generated(aw_json(FIN, "\"suspend\":true", NULL), "")};
	run(&s);
	cr_assert_str_eq(pphase(&s), "Suspended");
	sf_jd *cs = sf_jd_at(sf_jd_get(s.plan.status, "componentStatus"), 0, NULL);
	cr_assert_str_eq(sf_jd_str(sf_jd_get(cs, "name"), NULL), "", "the server has not chosen");
	cr_assert_str_eq(sf_jd_str(sf_jd_get(cs, "kind"), NULL), "Job");
	done(&s);
}

/* The create's answer carries the name the API server chose: recorded in the
 * very write that says the component was created. */
Test(awphase, resuming_records_the_name_the_server_chose)
{
	char *q = cond_json("QuotaReserved", "True", "Resuming", NOW - 1000);
	char *rd =
	    cond_json("ResourcesDeployed", "Unknown", "ComponentCreationInitiated", NOW - 500);
	char *st = status_json("Resuming", q, rd, 0);
	snap s = {.json = generated(aw_json(FIN, "\"suspend\":false", st), "")};
	free(q);
	free(rd);
	free(st);
	s.comp[0].create = SF_AWP_CREATE_OK;
	s.comp[0].created_name = "job-x7k2p";
	run(&s);
	sf_jd *cs = sf_jd_at(sf_jd_get(s.plan.status, "componentStatus"), 0, NULL);
	cr_assert_str_eq(sf_jd_str(sf_jd_get(cs, "name"), NULL), "job-x7k2p");
	sf_aw_cond c;
	sf_aw_cond_get(sf_jd_get(cs, "conditions"), "ResourcesDeployed", &c);
	cr_assert_str_eq(c.status, "True");
	cr_assert_str_eq(pphase(&s), "Running");
	done(&s);
}

/* A recorded name the template's prefix could not have made is a changed
 * identity: never created (the recorded one would be orphaned). */
Test(awphase, a_recorded_name_of_another_prefix_is_a_changed_identity)
{
	char *q = cond_json("QuotaReserved", "True", "Resuming", NOW - 1000);
	char *st = status_json("Resuming", q, "", 0);
	snap s = {.json = generated(aw_json(FIN, "\"suspend\":false", st), "other-x7k2p")};
	free(q);
	free(st);
	run(&s);
	cr_assert(!has_act(&s, SF_AWP_ACT_CREATE));
	sf_aw_cond u = pcond(&s, "Unhealthy");
	cr_assert_str_eq(u.reason, "CreateFailed");
	cr_assert(strstr(u.message, "generateName is \"job-\""), "%s", u.message);
	done(&s);

	/* one it could have made is the component: created again after a reset */
	q = cond_json("QuotaReserved", "True", "Resuming", NOW - 1000);
	char *rd = cond_json("ResourcesDeployed", "False", "CompononetDeleted", NOW - 500);
	st = status_json("Resuming", q, rd, 0);
	snap s2 = {.json = generated(aw_json(FIN, "\"suspend\":false", st), "job-old12")};
	free(q);
	free(rd);
	free(st);
	run(&s2);
	cr_assert(has_act(&s2, SF_AWP_ACT_CREATE));
	done(&s2);
}

/* A create initiated under a generated name may have landed with its answer
 * lost: a deletion asks the controller to look for it (upstream skips it,
 * leaving the object behind). */
Test(awphase, deleting_an_unrecorded_generated_component_looks_for_it)
{
	char *q1 = cond_json("QuotaReserved", "True", "Resuming", NOW - 1000);
	char *q2 = cond_json("ResourcesDeployed", "True", "Resuming", NOW - 1000);
	char *q = NULL;
	cr_assert(asprintf(&q, "%s,%s", q1, q2) > 0);
	free(q1);
	free(q2);
	char *rd =
	    cond_json("ResourcesDeployed", "Unknown", "ComponentCreationInitiated", NOW - 500);
	char *st = status_json("Resuming", q, rd, 0);
	snap s = {.json = generated(aw_json(FIN, "\"suspend\":true", st), "")};
	free(q);
	free(rd);
	free(st);
	run(&s); /* Resuming -> Suspending */
	cr_assert_str_eq(pphase(&s), "Suspending");
	char *st2 = sf_jd_dump(s.plan.status);
	done(&s);
	snap s3 = {.json = NULL};
	cr_assert(asprintf(&s3.json,
	                   "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	                   "\"metadata\":{\"name\":\"aw\",\"namespace\":\"ns\",\"uid\":\"u-1\","
	                   "\"resourceVersion\":\"11\"," FIN "},\"spec\":{\"suspend\":true,"
	                   "\"components\":[{\"template\":{\"apiVersion\":\"batch/v1\",\"kind\":"
	                   "\"Job\",\"metadata\":{\"generateName\":\"job-\"},\"spec\":{}}}]},"
	                   "\"status\":%s}",
	                   st2) > 0);
	free(st2);
	run(&s3);
	cr_assert(has_act(&s3, SF_AWP_ACT_DELETE),
	          "no DELETE for an unrecorded generated name: %s %s", s3.plan.why, s3.json);
	done(&s3);
}
