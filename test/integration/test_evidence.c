/*
 * test_evidence.c - only evidence acts: the paths where a misread could
 * fail, delete, reset or contradict, each on the real control plane
 * (kube-apiserver + etcd, kube-controller-manager for Jobs and garbage
 * collection) with the steadfast binary.
 *
 *   - a component whose version stops being served (CRD version switched
 *     to served: false while its objects live on under another version)
 *     is not missing: a new leader keeps the AppWrapper Running and its
 *     quota, says so in Unhealthy=Unknown and a Warning Event; Kueue's
 *     preemption (suspend) waits instead of "completing" without a
 *     DELETE; once the version is served again the suspension completes
 *     for real;
 *   - an AppWrapper that Kueue admitted while no replica ran is not
 *     suspended again by the create-time defaults;
 *   - a Job with completions 4 and parallelism 2 is not Succeeded after
 *     its first two pods: only once the Job says Complete;
 *   - a pod replaced long after deployment counts its grace from then,
 *     not from the deployment: no reset while the new pod starts;
 *   - a pod a lagging cache has not seen, found Pending by the live list,
 *     gets the warmup grace, not the admission grace: no reset;
 *   - a template renamed after admission is never created; the
 *     AppWrapper fails naming the field, and nothing is orphaned;
 *   - with Leases on an etcd of their own (their resourceVersions far
 *     ahead of everything else's), a new leader reconciles at once, with
 *     one catch-up LIST per resource (audit log);
 *   - a standby whose Job cache still holds the incarnation the last
 *     leader's reset deleted creates the Job when it leads, and U1's
 *     cached Failed=True resets nothing;
 *   - a preemption while the pod cache lags keeps QuotaReserved True until
 *     a live pod list finds no pod; the forced deletion deletes the pods
 *     that list found.
 *
 * Kueue is played (spec.suspend, podSetInfos) because these tests need
 * the exact moment of admission (while no replica runs, before a
 * failover); the kubelet is played for pod status.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/awapi.h"
#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/log.h"
#include "steadfast/time.h"
#include "tl.h"
#include "tl_audit.h"
#include "tl_aw.h"
#include "tl_ctl.h"

static tl_kube K;
static char NS[64];
static tl_aw_watch W;

#define WIDGET_CRD_NAME "widgets.evidence.steadfast.test"

static const sf_gvr WIDGETS_V1 = {"evidence.steadfast.test", "v1", "widgets", 1};
static const sf_gvr CRDS = {"apiextensions.k8s.io", "v1", "customresourcedefinitions", 0};

static void setup(void)
{
	tl_aw_env_open(&K, &W, "ev", NS, sizeof(NS));
}

static void teardown(void)
{
	tl_aw_env_close(&K, &W, NS);
}

TestSuite(evidence, .init = setup, .fini = teardown, .timeout = 240);

static tl_ctl *controller(const char *id)
{
	tl_ctl_opts o = {.ns = NS, .lease = "steadfast-test", .id = id};
	return tl_ctl_start(&K.loop, &o);
}

static int never(void *ud)
{
	(void)ud;
	return 0;
}

/* Lets the loop run for ms (informers keep delivering): for pacing a poll
 * of something no watch reports, never as a wait for an event. */
static void run_for(long ms)
{
	tl_run_until_fn(&K.loop, never, NULL, ms);
}

static const char *phase_of(const char *name)
{
	sf_obj *o = tl_aw_cached(&W, name);
	static char buf[32];
	buf[0] = 0;
	if (o)
		sf_jv_str(sf_jv_path(sf_obj_root(o), "status.phase"), buf, sizeof(buf));
	return buf;
}

typedef struct phase_watch {
	const char *aw, *phase;
} phase_watch;

static int phase_left(void *ud)
{
	phase_watch *p = ud;
	return strcmp(phase_of(p->aw), p->phase) != 0;
}

/* Fails unless AppWrapper aw stays in phase for ms. */
static void assert_stays(const char *aw, const char *phase, long ms)
{
	phase_watch p = {aw, phase};
	cr_assert_str_eq(phase_of(aw), phase);
	if (tl_run_until_fn(&K.loop, phase_left, &p, ms) == 0) {
		tl_aw_dump(&W, aw);
		cr_assert_fail("%s left %s for %s within %ld ms", aw, phase, phase_of(aw), ms);
	}
}

/* ---- 1. a version that is not served is no evidence of absence ---- */

static const char *WIDGET_CRD =
    "apiVersion: apiextensions.k8s.io/v1\n"
    "kind: CustomResourceDefinition\n"
    "metadata:\n"
    "  name: " WIDGET_CRD_NAME "\n"
    "spec:\n"
    "  group: evidence.steadfast.test\n"
    "  scope: Namespaced\n"
    "  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}\n"
    "  versions:\n"
    "  - name: v1\n"
    "    served: true\n"
    "    storage: true\n"
    "    schema:\n"
    "      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n"
    "  - name: v2\n"
    "    served: true\n"
    "    storage: false\n"
    "    schema:\n"
    "      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n";

static long get_path(const char *path)
{
	tl_res r = {0};
	sf_kube_req q = {.method = "GET", .path = path};
	tl_do(&K, &q, &r);
	long st = r.http_status;
	tl_res_clear(&r);
	return st;
}

/* Waits until discovery of evidence.steadfast.test/v2 answers `want`
 * (200 served, 404 not served), asking every 100 ms. */
static void wait_v2(long want, long timeout_ms)
{
	int64_t deadline = sf_mono_ns() + (int64_t)timeout_ms * 1000000;
	while (get_path("/apis/evidence.steadfast.test/v2") != want) {
		cr_assert(sf_mono_ns() < deadline, "v2 discovery never answered %ld", want);
		run_for(100);
	}
}

static void serve_v2(int served)
{
	char body[512];
	snprintf(body, sizeof(body),
	         "[{\"op\":\"replace\",\"path\":\"/spec/versions/1/served\",\"value\":%s}]",
	         served ? "true" : "false");
	tl_res r = {0};
	sf_kube_req q = {.method = "PATCH",
	                 .gvr = &CRDS,
	                 .name = WIDGET_CRD_NAME,
	                 .body = body,
	                 .body_len = strlen(body),
	                 .content_type = "application/json-patch+json"};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200, "%ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	wait_v2(served ? 200 : 404, 30000);
}

static const char *WIDGET_AW =
    "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"metadata\":{"
    "\"name\":\"wid\",\"annotations\":{\"" SF_AW_ANNOT_PREFIX
    "missingComponentGracePeriodDuration\":\"1s\","
    "\"" SF_AW_ANNOT_PREFIX
    "forcefulDeletionGracePeriodDuration\":\"2s\"}},\"spec\":{\"suspend\":false,"
    "\"components\":[{\"podSets\":[{\"replicas\":1,\"path\":\"template.spec.template\"}],"
    "\"template\":{\"apiVersion\":\"evidence.steadfast.test/v2\",\"kind\":\"Widget\","
    "\"metadata\":{\"name\":\"wid-w\"},\"spec\":{\"template\":{\"spec\":{\"containers\":[{"
    "\"name\":\"main\",\"image\":\"busybox\"}]}}}}}]}}";

Test(evidence, a_version_not_served_is_no_evidence_of_absence)
{
	tl_aw_apply_yaml(&K, NULL, WIDGET_CRD, NULL, NULL);
	tl_aw_wait_established(&K, WIDGET_CRD_NAME, 30000);
	wait_v2(200, 30000);
	tl_ctl *a = controller("first");
	tl_aw_create(&W, WIDGET_AW);
	tl_aw_wait_phase(&W, "wid", "Suspended", 20000);
	tl_aw_admit(&W, "wid", NULL);
	tl_aw_wait_phase(&W, "wid", "Running", 20000);
	cr_assert_eq(tl_aw_req(&W, "GET", &WIDGETS_V1, "wid-w", NULL, NULL), 200);
	/* the Widget's own operator would run its pod: the test makes one */
	cr_assert_eq(tl_aw_req(&W, "POST", &SF_GVR_PODS, NULL, NULL,
	                       "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
	                       "\"wid-pod\",\"labels\":{\"" SF_AW_LABEL "\":"
	                       "\"wid\"}},\"spec\":{\"containers\":[{\"name\":\"main\","
	                       "\"image\":\"busybox\"}]}}"),
	             201);
	tl_aw_kubelet(&W, "wid-pod", "Running", 0, NULL);
	tl_aw_wait_cond(&W, "wid", "PodsReady", "True", 20000);

	/* v2 stops being served; the Widget lives on, stored as v1 */
	serve_v2(0);
	cr_assert_eq(tl_aw_req(&W, "GET", &WIDGETS_V1, "wid-w", NULL, NULL), 200);
	/* a new leader that never saw the kind served */
	tl_ctl_term_released(&K.loop, a, 20000);
	tl_ctl *b = controller("second");
	/* well past the missing grace (1 s): still Running, quota kept */
	assert_stays("wid", "Running", 8000);
	tl_aw_events ev = tl_aw_wait_event(&W, "wid", "cannot tell whether component", 20000);
	cr_assert(ev.warning);
	tl_aw_wait_cond(&W, "wid", "Unhealthy", "Unknown", 10000);
	char reason[64] = "", msg[1024] = "";
	tl_aw_cond(&W, "wid", "Unhealthy", reason, msg);
	cr_assert_str_eq(reason, "ComponentStatusUnknown");
	cr_assert(strstr(msg, "cannot tell whether component evidence.steadfast.test/v2 Widget "
	                      "wid-w exists: no matches for kind \"Widget\" in version "
	                      "\"evidence.steadfast.test/v2\"; keeping phase Running"),
	          "%s", msg);
	assert_stays("wid", "Running", 2000);
	cr_assert_str_eq(tl_aw_cond(&W, "wid", "QuotaReserved", NULL, NULL), "True");
	cr_assert_eq(tl_aw_req(&W, "GET", &WIDGETS_V1, "wid-w", NULL, NULL), 200);

	/* Kueue preempts: the deletion cannot be proven, so it waits, with
	 * the quota reserved (past the forceful deletion grace too) */
	cr_assert_eq(tl_aw_req(&W, "PATCH", &SF_GVR_APPWRAPPERS, "wid", NULL,
	                       "{\"spec\":{\"suspend\":true}}"),
	             200);
	tl_aw_wait_phase(&W, "wid", "Suspending", 20000);
	assert_stays("wid", "Suspending", 8000);
	cr_assert_str_eq(tl_aw_cond(&W, "wid", "QuotaReserved", NULL, NULL), "True");
	cr_assert_str_eq(tl_aw_cond(&W, "wid", "DeletingResources", reason, msg), "True");
	cr_assert(strstr(msg, "cannot tell whether component"), "%s", msg);
	cr_assert_eq(tl_aw_req(&W, "GET", &WIDGETS_V1, "wid-w", NULL, NULL), 200);

	/* served again: the controller's re-check (backoff 5 s, 10 s, ...)
	 * finds it and the suspension completes with a real DELETE */
	serve_v2(1);
	tl_aw_wait_phase(&W, "wid", "Suspended", 60000);
	cr_assert_str_eq(tl_aw_cond(&W, "wid", "QuotaReserved", NULL, NULL), "False");
	cr_assert_eq(tl_aw_req(&W, "GET", &WIDGETS_V1, "wid-w", NULL, NULL), 404);
	cr_assert(tl_ctl_alive(b));
}

/* ---- 5. Kueue's admission is never undone ---- */

static const char *QUEUED_JOB_AW =
    "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"metadata\":{"
    "\"name\":\"%s\",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"user-queue\"}},\"spec\":{"
    "\"suspend\":true,\"components\":[{\"template\":{\"apiVersion\":\"batch/v1\",\"kind\":"
    "\"Job\",\"metadata\":{\"name\":\"%s-job\"},\"spec\":{\"template\":{\"spec\":{"
    "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}}}"
    "}]}}";

static const char *KUEUE_ADMIT =
    "{\"spec\":{\"suspend\":false,\"components\":[{\"podSetInfos\":[{\"nodeSelector\":{"
    "\"pool\":\"a\"},\"labels\":{\"kueue.x-k8s.io/podset\":\"%s-0\"}}],\"template\":{"
    "\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"%s-job\"},\"spec\":{"
    "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\","
    "\"image\":\"busybox\"}]}}}}}]}}";

Test(evidence, admission_while_no_replica_runs_is_not_undone)
{
	char body[4096];
	const char *names[] = {"adm-a", "adm-b", "adm-c"};
	int64_t gen[3];
	/* created as Kueue's webhook leaves them (suspended) and admitted by
	 * Kueue before any Steadfast replica saw them */
	for (int i = 0; i < 3; i++) {
		snprintf(body, sizeof(body), QUEUED_JOB_AW, names[i], names[i]);
		tl_aw_create(&W, body);
		snprintf(body, sizeof(body), KUEUE_ADMIT, names[i], names[i]);
		tl_aw_admit(&W, names[i], body);
	}
	for (int i = 0; i < 3; i++) {
		sf_obj *o = NULL;
		tl_res r = {0};
		sf_kube_req q = {
		    .method = "GET", .gvr = &SF_GVR_APPWRAPPERS, .ns = NS, .name = names[i]};
		tl_do(&K, &q, &r);
		cr_assert_eq(r.http_status, 200);
		o = r.obj;
		cr_assert_eq(
		    sf_jv_int64(sf_jv_path(sf_obj_root(o), "metadata.generation"), &gen[i]), 0);
		tl_res_clear(&r);
	}
	controller("late");
	for (int i = 0; i < 3; i++) {
		tl_aw_wait_phase(&W, names[i], "Running", 30000);
		sf_obj *o = tl_aw_cached(&W, names[i]);
		int64_t g = 0;
		sf_jv_int64(sf_jv_path(sf_obj_root(o), "metadata.generation"), &g);
		cr_assert_eq(g, gen[i],
		             "%s: spec changed after admission (generation %lld -> %lld)", names[i],
		             (long long)gen[i], (long long)g);
		cr_assert_eq(sf_jv_type(sf_jv_path(sf_obj_root(o), "spec.suspend")), SF_JSON_FALSE);
	}
	/* and the admission's pod set info reached the pods */
	char pod[254];
	tl_aw_wait_pod(&W, "adm-a", pod, sizeof(pod), 20000);
	tl_res r = {0};
	sf_kube_req q = {.method = "GET", .gvr = &SF_GVR_PODS, .ns = NS, .name = pod};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200);
	cr_assert(sf_jv_streq(sf_jv_path(sf_obj_root(r.obj), "spec.nodeSelector.pool"), "a"));
	tl_res_clear(&r);
}

/* ---- 4b. Succeeded needs the component's own completion ---- */

typedef struct fresh_pods {
	const char *aw;
	char done[16][254];
	int ndone;
	char found[8][254];
	int n, want;
} fresh_pods;

static int is_done(const fresh_pods *f, const char *name)
{
	for (int i = 0; i < f->ndone; i++)
		if (strcmp(f->done[i], name) == 0)
			return 1;
	return 0;
}

static int fresh_visit(void *ud, sf_obj *o)
{
	fresh_pods *f = ud;
	sf_jv p = sf_obj_root(o);
	if (f->n < 8 &&
	    sf_jv_streq(sf_jv_get(sf_jv_path(p, "metadata.labels"), SF_AW_LABEL), f->aw) &&
	    !sf_jv_ok(sf_jv_path(p, "metadata.deletionTimestamp")) &&
	    !sf_jv_streq(sf_jv_path(p, "status.phase"), "Succeeded") &&
	    !sf_jv_streq(sf_jv_path(p, "status.phase"), "Failed") && !is_done(f, o->name))
		snprintf(f->found[f->n++], sizeof(f->found[0]), "%s", o->name);
	return 0;
}

static int fresh_appeared(void *ud)
{
	fresh_pods *f = ud;
	f->n = 0;
	sf_store_each(sf_informer_store(W.pods), fresh_visit, f);
	/* an AppWrapper that left Running ends the wait too */
	return f->n >= f->want || strcmp(phase_of(f->aw), "Running") != 0;
}

Test(evidence, job_succeeds_only_when_the_job_is_complete)
{
	controller("solo");
	tl_aw_create(
	    &W, "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	        "\"metadata\":{\"name\":\"comp4\"},\"spec\":{\"suspend\":false,\"components\":[{"
	        "\"template\":{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{"
	        "\"name\":\"comp4-job\"},\"spec\":{\"parallelism\":2,\"completions\":4,"
	        "\"backoffLimit\":0,\"template\":{\"spec\":{\"restartPolicy\":\"Never\","
	        "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}}}}]}}");
	tl_aw_wait_phase(&W, "comp4", "Suspended", 20000);
	tl_aw_admit(&W, "comp4", NULL);
	tl_aw_wait_phase(&W, "comp4", "Running", 20000);
	fresh_pods f = {.aw = "comp4", .want = 2};
	for (int round = 0; round < 2; round++) {
		/* (ends early when the AppWrapper leaves Running) */
		cr_assert_eq(tl_run_until_fn(&K.loop, fresh_appeared, &f, 30000), 0,
		             "round %d: the Job controller made %d new pods", round, f.n);
		/* the AppWrapper has not ended while pods are still coming */
		cr_assert_str_eq(phase_of("comp4"), "Running",
		                 "round %d: %s with %d of 4 completions", round, phase_of("comp4"),
		                 round * 2);
		char names[2][254];
		for (int i = 0; i < 2; i++)
			memcpy(names[i], f.found[i], sizeof(names[i]));
		for (int i = 0; i < 2; i++)
			tl_aw_kubelet(&W, names[i], "Running", 0, NULL);
		for (int i = 0; i < 2; i++) {
			tl_aw_kubelet(&W, names[i], "Succeeded", 0, NULL);
			memcpy(f.done[f.ndone++], names[i], sizeof(f.done[0]));
		}
	}
	tl_aw_wait_phase(&W, "comp4", "Succeeded", 30000);
	tl_res r = {0};
	sf_kube_req q = {.method = "GET", .gvr = &SF_GVR_JOBS, .ns = NS, .name = "comp4-job"};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200);
	int64_t succeeded = 0;
	sf_jv_int64(sf_jv_path(sf_obj_root(r.obj), "status.succeeded"), &succeeded);
	cr_assert_eq(succeeded, 4, "%s", r.obj->json);
	tl_res_clear(&r);
}

/* ---- 4a. too few pods: grace from the last time enough were seen ---- */

/* Creates NAME, wrapping the one-pod Job NAME-job, with the warmup and
 * admission grace periods given; admits it and waits until it is Running. */
static void graced_job_running(const char *name, const char *warmup, const char *admission)
{
	char json[1024];
	snprintf(json, sizeof(json),
	         "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	         "\"metadata\":{\"name\":\"%s\",\"annotations\":{"
	         "\"" SF_AW_ANNOT_PREFIX "warmupGracePeriodDuration\":\"%s\","
	         "\"" SF_AW_ANNOT_PREFIX "admissionGracePeriodDuration\":\"%s\"}},\"spec\":{"
	         "\"suspend\":false,\"components\":[{\"template\":{\"apiVersion\":\"batch/v1\","
	         "\"kind\":\"Job\",\"metadata\":{\"name\":\"%s-job\"},\"spec\":{"
	         "\"backoffLimit\":3,\"template\":{\"spec\":{\"restartPolicy\":\"Never\","
	         "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}}}}]}}",
	         name, warmup, admission, name);
	tl_aw_create(&W, json);
	tl_aw_wait_phase(&W, name, "Suspended", 20000);
	tl_aw_admit(&W, name, NULL);
	tl_aw_wait_phase(&W, name, "Running", 20000);
}

Test(evidence, a_pod_replaced_long_after_deployment_does_not_reset)
{
	controller("solo");
	graced_job_running("repl", "20s", "20s");
	char pod[254];
	tl_aw_pod_ready(&W, "repl", pod, sizeof(pod), 20000);
	/* long-running: its deployment is older than both graces */
	assert_stays("repl", "Running", 21000);
	/* the pod goes (an eviction, a drain); the Job makes a new one */
	cr_assert_eq(tl_aw_req(&W, "DELETE", &SF_GVR_PODS, pod, NULL, "{\"gracePeriodSeconds\":0}"),
	             200);
	fresh_pods f = {.aw = "repl", .want = 1};
	memcpy(f.done[f.ndone++], pod, sizeof(f.done[0]));
	cr_assert_eq(tl_run_until_fn(&K.loop, fresh_appeared, &f, 30000), 0, "no replacement pod");
	/* (the Job controller's failure backoff makes it ~10 s later) it
	 * starts inside a grace counted from when the pods went short */
	cr_assert_str_eq(phase_of("repl"), "Running", "reset at once: %s", phase_of("repl"));
	char fresh[254];
	snprintf(fresh, sizeof(fresh), "%s", f.found[0]);
	tl_aw_kubelet(&W, fresh, "Running", 0, NULL);
	tl_aw_wait_cond(&W, "repl", "PodsReady", "True", 10000);
	assert_stays("repl", "Running", 3000);
	sf_obj *o = tl_aw_cached(&W, "repl");
	int64_t resets = -1;
	sf_jv_int64(sf_jv_path(sf_obj_root(o), "status.resettingCount"), &resets);
	cr_assert(resets <= 0, "resettingCount %lld", (long long)resets);
	cr_assert_neq(strcmp(tl_aw_cond(&W, "repl", "Unhealthy", NULL, NULL), "True"), 0);
}

/* The pod cache behind (its events applied 25 s late; the component cache
 * is not) past a 2 s admission grace: the controller sees no pod, lists
 * them live, and finds the Job's pod Pending (no kubelet here, as during
 * an image pull). Every pod exists, so the 1 h warmup grace applies, as it
 * would to a cache that was not behind: no reset. */
Test(evidence, a_pod_the_cache_has_not_seen_gets_the_warmup_grace)
{
	const char *env[] = {"STEADFAST_FAULT_POD_WATCH_DELAY_MS=25000", NULL};
	tl_ctl_opts o = {
	    .ns = NS, .lease = "steadfast-test", .id = "podlag", .env = env, .faults = 1};
	tl_ctl *c = tl_ctl_start(&K.loop, &o);
	graced_job_running("lagp", "1h", "2s");
	int64_t running_at = sf_mono_ns();
	char pod[254];
	tl_aw_wait_pod(&W, "lagp", pod, sizeof(pod), 20000); /* the test's own watch */
	cr_assert_eq(
	    tl_ctl_count(c, "\"msg\":\"fault injection: watch events are applied late\"", 0), 1,
	    "the pod watch was not delayed");
	/* until the pod's event reaches its cache (25 s after it arrived) */
	long left = 22000 - (long)((sf_mono_ns() - running_at) / 1000000);
	if (left > 0)
		assert_stays("lagp", "Running", left);
	cr_assert_geq(tl_ctl_wait_log(&K.loop, c, "all of them in a live list", 0, 1000), 0,
	              "the controller never found the pod in a live list");
	sf_obj *aw = tl_aw_cached(&W, "lagp");
	int64_t resets = -1;
	sf_jv_int64(sf_jv_path(sf_obj_root(aw), "status.resettingCount"), &resets);
	cr_assert(resets <= 0, "resettingCount %lld", (long long)resets);
	cr_assert_neq(strcmp(tl_aw_cond(&W, "lagp", "Unhealthy", NULL, NULL), "True"), 0,
	              "Unhealthy on a pod within its warmup grace");
	cr_assert_eq(tl_ctl_count(c, "InsufficientPodsReady", 0), 0);
}

/* ---- 5. a stale component cache never skips a create ---- */

/* 1 when replica p's Job cache holds n objects (its metrics; polled, since
 * no watch reports a cache's content). */
static int job_cache_holds(int port, long n)
{
	sf_buf b;
	char want[128];
	sf_buf_init(&b, 0);
	long st = tl_ctl_http_get(port, "/metrics", &b);
	snprintf(want, sizeof(want),
	         "steadfast_cache_objects{group=\"batch\",resource=\"jobs\"} %ld\n", n);
	int ok = st == 200 && b.data && strstr(b.data, want);
	sf_buf_free(&b);
	return ok;
}

typedef struct job_uid {
	const char *name, *not_uid;
	char uid[64];
} job_uid;

/* 1 when the test's own Job cache holds j->name with a UID other than
 * j->not_uid (into j->uid). */
static int job_other_uid(void *ud)
{
	job_uid *j = ud;
	sf_obj *o = sf_store_get_ns(sf_informer_store(W.jobs), NS, j->name);
	if (!o || (j->not_uid && strcmp(o->uid, j->not_uid) == 0))
		return 0;
	snprintf(j->uid, sizeof(j->uid), "%s", o->uid);
	return 1;
}

static int reset_paused(void *ud)
{
	char reason[TL_AW_REASON_LEN] = "";
	const char *st = tl_aw_cond(&W, ud, "ResourcesDeployed", reason, NULL);
	return strcmp(st, "False") == 0 && strcmp(reason, "Resetting") == 0;
}

/* Leader A resets an AppWrapper: its Job U1 failed, A deletes U1, and dies
 * in the reset pause, before its create. Standby B's Job cache still holds
 * U1 (its component watch applies events 120 s late: a stalled watch, a
 * first list from a lagging watch cache), Failed=True and no
 * deletionTimestamp (a Job has no finalizer). B leads, and after the pause
 * must create the Job: the cached copy is not this attempt's (it used to be
 * marked created - Running with no Job, then reset again for U1's
 * Failed=True). */
Test(evidence, a_standby_with_a_stale_job_cache_creates_after_a_reset, .timeout = 240)
{
	tl_ctl *a = controller("stale-a");
	tl_ctl_wait_log(&K.loop, a, "\"msg\":\"reconciling\"", 0, 20000);
	tl_aw_create(&W,
	             "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	             "\"metadata\":{\"name\":\"stale\",\"annotations\":{"
	             "\"" SF_AW_ANNOT_PREFIX "retryLimit\":\"3\","
	             "\"" SF_AW_ANNOT_PREFIX "failureGracePeriodDuration\":\"0s\","
	             "\"" SF_AW_ANNOT_PREFIX "retryPausePeriodDuration\":\"25s\"}},\"spec\":{"
	             "\"suspend\":false,\"components\":[{\"template\":{\"apiVersion\":\"batch/v1\","
	             "\"kind\":\"Job\",\"metadata\":{\"name\":\"stale-job\"},\"spec\":{"
	             "\"backoffLimit\":0,\"template\":{\"spec\":{\"restartPolicy\":\"Never\","
	             "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}}}}]}}");
	tl_aw_wait_phase(&W, "stale", "Suspended", 20000);
	tl_aw_admit(&W, "stale", NULL);
	tl_aw_wait_phase(&W, "stale", "Running", 20000);
	job_uid u1 = {.name = "stale-job"};
	cr_assert_eq(tl_run_until_fn(&K.loop, job_other_uid, &u1, 20000), 0, "no Job");
	/* the standby lists the Jobs now (U1 in it); later events reach its
	 * cache 120 s late */
	const char *env[] = {"STEADFAST_FAULT_COMPONENT_WATCH_DELAY_MS=120000", NULL};
	tl_ctl_opts bo = {
	    .ns = NS, .lease = "steadfast-test", .id = "stale-b", .env = env, .faults = 1};
	tl_ctl *b = tl_ctl_start(&K.loop, &bo);
	int port = tl_ctl_port(&K.loop, b, "metrics");
	int held = 0;
	for (int i = 0; i < 100 && !(held = job_cache_holds(port, 1)); i++)
		run_for(200);
	cr_assert(held, "the standby's Job cache never held the Job");
	/* U1 fails (backoffLimit 0: the Job controller marks it Failed) */
	char pod[254];
	tl_aw_wait_pod(&W, "stale", pod, sizeof(pod), 20000);
	tl_aw_kubelet(&W, pod, "Failed", 1, "boom");
	/* A resets: deletes U1 and starts the 25 s pause */
	cr_assert_eq(tl_run_until_fn(&K.loop, reset_paused, "stale", 40000), 0,
	             "no reset pause: %s", phase_of("stale"));
	cr_assert_eq(tl_aw_req(&W, "GET", &SF_GVR_JOBS, "stale-job", NULL, NULL), 404,
	             "U1 still exists");
	tl_ctl_signal(a, SIGKILL);
	cr_assert(job_cache_holds(port, 1), "the standby's Job cache caught up too early");
	/* B leads; after the pause it must create the Job itself */
	job_uid u2 = {.name = "stale-job", .not_uid = u1.uid};
	if (tl_run_until_fn(&K.loop, job_other_uid, &u2, 60000) != 0) {
		tl_aw_dump(&W, "stale");
		tl_ctl_dump(b, 40);
		cr_assert_fail("the new leader never created the Job (phase %s)",
		               phase_of("stale"));
	}
	/* (its log line may come a moment after the test's own watch saw the Job) */
	cr_assert_geq(tl_ctl_wait_log(&K.loop, b, "\"msg\":\"component created\"", 0, 10000), 0,
	              "the Job was not created by the new leader");
	tl_aw_wait_phase(&W, "stale", "Running", 20000);
	/* U1's cached Failed=True (still in B's cache) resets nothing */
	assert_stays("stale", "Running", 8000);
	sf_obj *aw = tl_aw_cached(&W, "stale");
	int64_t resets = -1;
	sf_jv_int64(sf_jv_path(sf_obj_root(aw), "status.resettingCount"), &resets);
	cr_assert_eq(resets, 1, "resettingCount %lld", (long long)resets);
	cr_assert(job_cache_holds(port, 1));
	cr_assert_eq(tl_aw_req(&W, "GET", &SF_GVR_JOBS, "stale-job", NULL, NULL), 200);
}

/* ---- 6. a deletion ends on a live pod list, not on the pod cache ---- */

static int quota_released(void *ud)
{
	return strcmp(tl_aw_cond(&W, ud, "QuotaReserved", NULL, NULL), "False") == 0;
}

/* The number of the AppWrapper's pods a live LIST finds. */
static long live_pods_of(const char *aw)
{
	char sel[256];
	snprintf(sel, sizeof(sel), "%s=%s", SF_AW_LABEL, aw);
	tl_res r = {0};
	sf_kube_req q = {.method = "GET", .gvr = &SF_GVR_PODS, .ns = NS};
	sf_buf qs;
	sf_buf_init(&qs, 0);
	cr_assert_eq(sf_kube_query_add(&qs, "labelSelector", sel), 0);
	q.query = qs.data;
	tl_do(&K, &q, &r);
	sf_buf_free(&qs);
	cr_assert_eq(r.http_status, 200);
	long n = (long)sf_jv_len(sf_jv_get(sf_obj_root(r.obj), "items"));
	tl_res_clear(&r);
	return n;
}

/* Kueue admits a Job with parallelism 4; its pods run on a node (no kubelet
 * here: a deleted pod stays Terminating until a grace-0 delete) while the
 * leader's pod watch lags 60 s, so its pod cache never sees them. Kueue
 * preempts: the Job's DELETE succeeds and the pod cache shows nothing, but
 * the pods are still there. QuotaReserved stays True (Kueue would hand the
 * quota on) until the forceful deletion grace, when the pods a live list
 * found are deleted with grace 0; only a live list that finds none ends
 * the suspension. */
Test(evidence, preemption_keeps_the_quota_while_pods_the_cache_missed_remain, .timeout = 240)
{
	const char *env[] = {"STEADFAST_FAULT_POD_WATCH_DELAY_MS=60000", NULL};
	tl_ctl_opts o = {
	    .ns = NS, .lease = "steadfast-test", .id = "podgone", .env = env, .faults = 1};
	tl_ctl *c = tl_ctl_start(&K.loop, &o);
	tl_aw_create(&W,
	             "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	             "\"metadata\":{\"name\":\"pre\",\"annotations\":{"
	             "\"" SF_AW_ANNOT_PREFIX "forcefulDeletionGracePeriodDuration\":\"15s\","
	             "\"" SF_AW_ANNOT_PREFIX "admissionGracePeriodDuration\":\"10m\"}},\"spec\":{"
	             "\"suspend\":false,\"components\":[{\"template\":{\"apiVersion\":\"batch/v1\","
	             "\"kind\":\"Job\",\"metadata\":{\"name\":\"pre-job\"},\"spec\":{"
	             "\"parallelism\":4,\"completions\":4,\"template\":{\"spec\":{"
	             "\"nodeName\":\"no-kubelet-node\",\"restartPolicy\":\"Never\","
	             "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}}}}]}}");
	tl_aw_wait_phase(&W, "pre", "Suspended", 20000);
	tl_aw_admit(&W, "pre", NULL);
	tl_aw_wait_phase(&W, "pre", "Running", 20000);
	long n = 0;
	for (int i = 0; i < 100 && (n = live_pods_of("pre")) < 4; i++)
		run_for(200);
	cr_assert_eq(n, 4, "the Job made %ld pods", n);
	/* Kueue preempts */
	cr_assert_eq(tl_aw_req(&W, "PATCH", &SF_GVR_APPWRAPPERS, "pre", NULL,
	                       "{\"spec\":{\"suspend\":true}}"),
	             200);
	tl_aw_wait_phase(&W, "pre", "Suspending", 20000);
	/* the Job goes at once; its pods stay Terminating */
	for (int i = 0; i < 100 && tl_aw_req(&W, "GET", &SF_GVR_JOBS, "pre-job", NULL, NULL) != 404;
	     i++)
		run_for(200);
	cr_assert_eq(tl_aw_req(&W, "GET", &SF_GVR_JOBS, "pre-job", NULL, NULL), 404);
	/* within the forceful deletion grace, the quota is kept */
	if (tl_run_until_fn(&K.loop, quota_released, "pre", 8000) == 0) {
		long left = live_pods_of("pre");
		tl_aw_dump(&W, "pre");
		cr_assert_fail("QuotaReserved went False while %ld pods remained", left);
	}
	cr_assert_str_eq(phase_of("pre"), "Suspending");
	cr_assert_eq(live_pods_of("pre"), 4, "the pods went without a forced deletion");
	/* past it: the pods the live list found are deleted with grace 0 */
	cr_assert_eq(tl_run_until_fn(&K.loop, quota_released, "pre", 40000), 0,
	             "the suspension never ended: %s", phase_of("pre"));
	cr_assert_eq(live_pods_of("pre"), 0, "QuotaReserved went False with pods remaining");
	tl_aw_wait_phase(&W, "pre", "Suspended", 10000);
	cr_assert(tl_ctl_alive(c));
}

/* ---- 7. deleted before the first reconcile ---- */

static int aw_gone_from_cache(void *ud)
{
	return tl_aw_cached(&W, ud) == NULL;
}

/* The admission policy adds the finalizer at create; the user deletes the
 * AppWrapper before any controller reconciled it (no status yet). The
 * controller must still let it go (it used to plan nothing: Terminating
 * for good). Found by the model checker. */
Test(evidence, an_appwrapper_deleted_before_its_first_reconcile_goes)
{
	tl_aw_create(&W,
	             "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	             "\"metadata\":{\"name\":\"early\",\"finalizers\":[\"" SF_AW_FINALIZER
	             "\"]},\"spec\":{\"suspend\":true,\"components\":[{\"template\":{"
	             "\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"early-pod\"},"
	             "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}}]}}");
	cr_assert_eq(tl_aw_req(&W, "DELETE", &SF_GVR_APPWRAPPERS, "early", NULL, NULL), 200);
	/* the finalizer holds it */
	cr_assert_eq(tl_aw_req(&W, "GET", &SF_GVR_APPWRAPPERS, "early", NULL, NULL), 200);
	controller("early");
	if (tl_run_until_fn(&K.loop, aw_gone_from_cache, "early", 30000) != 0) {
		tl_aw_dump(&W, "early");
		cr_assert_fail("the AppWrapper deleted before its first reconcile is still there");
	}
	cr_assert_eq(tl_aw_req(&W, "GET", &SF_GVR_APPWRAPPERS, "early", NULL, NULL), 404);
}

/* ---- 3. component identity is fixed when first recorded ---- */

Test(evidence, a_renamed_template_is_never_created)
{
	controller("solo");
	tl_aw_create(&W,
	             "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	             "\"metadata\":{\"name\":\"ren\",\"annotations\":{"
	             "\"" SF_AW_ANNOT_PREFIX "retryLimit\":\"2\",\"" SF_AW_ANNOT_PREFIX
	             "failureGracePeriodDuration\":\"0s\","
	             "\"" SF_AW_ANNOT_PREFIX
	             "retryPausePeriodDuration\":\"0s\"}},\"spec\":{\"suspend\":false,"
	             "\"components\":[{\"template\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	             "\"metadata\":{\"name\":\"ren-pod\"},\"spec\":{\"restartPolicy\":\"Never\","
	             "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}}]}}");
	tl_aw_wait_phase(&W, "ren", "Suspended", 20000);
	tl_aw_admit(&W, "ren", NULL);
	tl_aw_wait_phase(&W, "ren", "Running", 20000);
	/* a user renames the template of the running component */
	cr_assert_eq(tl_aw_req(&W, "PATCH", &SF_GVR_APPWRAPPERS, "ren", NULL,
	                       "{\"spec\":{\"components\":[{\"template\":{\"apiVersion\":\"v1\","
	                       "\"kind\":\"Pod\",\"metadata\":{\"name\":\"ren-pod-2\"},\"spec\":{"
	                       "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\","
	                       "\"image\":\"busybox\"}]}}}]}}"),
	             200);
	/* the pod fails: a reset deletes ren-pod and would create the
	 * template's ren-pod-2 */
	tl_aw_kubelet(&W, "ren-pod", "Failed", 1, NULL);
	tl_aw_wait_phase(&W, "ren", "Failed", 30000);
	char reason[64] = "", msg[1024] = "";
	cr_assert_str_eq(tl_aw_cond(&W, "ren", "Unhealthy", reason, msg), "True");
	cr_assert_str_eq(reason, "CreateFailed", "%s: %s", reason, msg);
	cr_assert(strstr(msg, "spec.components[0].template.metadata.name is \"ren-pod-2\", but the "
	                      "component was recorded as \"ren-pod\""),
	          "%s", msg);
	tl_aw_wait_event(&W, "ren", "template.metadata.name", 10000);
	cr_assert_eq(tl_aw_req(&W, "GET", &SF_GVR_PODS, "ren-pod-2", NULL, NULL), 404);
	tl_aw_wait_cond(&W, "ren", "QuotaReserved", "False", 30000);
	tl_aw_wait_all_gone(&W, "ren", 30000);
}

/* ---- 2. freshness per resource: Leases on an etcd of their own ---- */

static sf_obj *get_obj_on(tl_kube *k, const sf_gvr *gvr, const char *ns, const char *name)
{
	tl_res r = {0};
	sf_kube_req q = {.method = "GET", .gvr = gvr, .ns = ns, .name = name};
	tl_do(k, &q, &r);
	sf_obj *o = r.http_status == 200 ? r.obj : NULL;
	r.obj = o ? NULL : r.obj;
	tl_res_clear(&r);
	return o;
}

/* The newest resourceVersion of the main etcd, as a quorum LIST of
 * ConfigMaps reports it. */
static long long main_rv(tl_kube *k, const char *ns)
{
	tl_res r = {0};
	sf_kube_req q = {.method = "GET", .gvr = &SF_GVR_CONFIGMAPS, .ns = ns, .query = "limit=1"};
	tl_do(k, &q, &r);
	cr_assert_eq(r.http_status, 200);
	long long v = atoll(r.list_rv[0] ? r.list_rv : (r.obj ? r.obj->rv : ""));
	tl_res_clear(&r);
	cr_assert_gt(v, 0, "no resourceVersion in the list");
	return v;
}

static long long patch_lease(tl_kube *k, const char *ns, int i)
{
	char body[128];
	snprintf(body, sizeof(body), "{\"spec\":{\"holderIdentity\":\"bump-%d\"}}", i);
	tl_res r = {0};
	sf_kube_req q = {.method = "PATCH",
	                 .gvr = &SF_GVR_LEASES,
	                 .ns = ns,
	                 .name = "bump",
	                 .body = body,
	                 .body_len = strlen(body),
	                 .content_type = "application/merge-patch+json"};
	tl_do(k, &q, &r);
	cr_assert_eq(r.http_status, 200, "%ld %s", r.http_status, r.message);
	long long v = atoll(r.obj->rv);
	tl_res_clear(&r);
	return v;
}

/* Audit lines of the controllers' lists of `resource` after mark m:
 * LISTs, and watches with sendInitialEvents (WatchList) when they open. */
static int controller_lists(const tl_audit_mark *m, const char *resource)
{
	tl_audit_query q = {.text = "appwrapper-controller"};
	tl_audit_req *v = NULL;
	size_t n = tl_audit_select(m, &q, &v);
	int lists = 0;
	for (size_t i = 0; i < n; i++)
		lists += strcmp(v[i].resource, resource) == 0 &&
		         ((strcmp(v[i].stage, "ResponseComplete") == 0 &&
		           strcmp(v[i].verb, "list") == 0) ||
		          (strcmp(v[i].stage, "ResponseStarted") == 0 &&
		           strstr(v[i].uri, "sendInitialEvents=true") != NULL));
	free(v);
	return lists;
}

/* A control plane of its own (LEASE_ETCD=true test/cluster/up.sh), stopped
 * by the suite's fini whatever the outcome. */
static char SPLIT_DIR[64];
static tl_kube k2;
static int k2_open;

static void split_fini(void)
{
	char src[4096];
	if (k2_open) {
		tl_ctl_stop_all(&k2.loop);
		tl_kube_close(&k2);
	}
	if (SPLIT_DIR[0])
		tl_sh(NULL, "'%s' '%s' >>'%s.log' 2>&1",
		      tl_aw_src_path("test/cluster/down.sh", src, sizeof(src)), SPLIT_DIR,
		      SPLIT_DIR);
}

TestSuite(lease_etcd, .fini = split_fini, .timeout = 180);

Test(lease_etcd, a_leader_whose_leases_live_on_another_etcd_reconciles_promptly)
{
	if (getenv("SF_DEBUG"))
		sf_log_set_level(SF_LOG_DEBUG);
	else
		sf_log_set_level(SF_LOG_WARN);
	snprintf(SPLIT_DIR, sizeof(SPLIT_DIR), "/tmp/steadfast-lease-etcd.%d", (int)getpid());
	char src[4096], kc[256], audit[256];
	cr_assert_eq(tl_sh(NULL, "LEASE_ETCD=true '%s' '%s' >'%s.log' 2>&1",
	                   tl_aw_src_path("test/cluster/up.sh", src, sizeof(src)), SPLIT_DIR,
	                   SPLIT_DIR),
	             0, "LEASE_ETCD=true up.sh failed: see %s.log", SPLIT_DIR);
	snprintf(kc, sizeof(kc), "%s/admin.kubeconfig", SPLIT_DIR);
	snprintf(audit, sizeof(audit), "%s/audit.log", SPLIT_DIR);
	tl_audit_mark split_log; /* the whole audit log of that control plane */
	tl_audit_mark_start(&split_log, audit);
	tl_kube_open(&k2, kc, NULL);
	k2_open = 1;
	tl_aw_install_crd(&k2);
	char ns[64];
	tl_namespace(&k2, "lease-etcd", ns, sizeof(ns));

	/* Lease resourceVersions run well ahead of everything else's (node
	 * leases renewing, in a real cluster) */
	char body[256];
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{"
	         "\"name\":\"bump\"},\"spec\":{\"holderIdentity\":\"bump\"}}");
	tl_res r = {0};
	sf_kube_req q = {.method = "POST",
	                 .gvr = &SF_GVR_LEASES,
	                 .ns = ns,
	                 .body = body,
	                 .body_len = strlen(body)};
	tl_do(&k2, &q, &r);
	cr_assert_eq(r.http_status, 201);
	tl_res_clear(&r);
	long long target = main_rv(&k2, ns) + 1500, lrv = patch_lease(&k2, ns, 0);
	/* puts of a key outside the API server's prefix, one curl process on
	 * one connection, each a revision of the Lease etcd */
	if (lrv <= target) {
		char conf[256];
		snprintf(conf, sizeof(conf), "%s/bump.curl", SPLIT_DIR);
		FILE *f = fopen(conf, "w");
		cr_assert_not_null(f);
		for (long long i = lrv; i <= target; i++)
			fprintf(f, "url = \"LEASE_ETCD/v3/kv/put\"\ndata = "
			           "\"{\\\"key\\\":\\\"YnVtcA==\\\",\\\"value\\\":\\\"eA==\\\"}"
			           "\"\noutput = \"/dev/null\"\n");
		fclose(f);
		cr_assert_eq(
		    tl_sh(NULL,
		          ". '%s/env' && sed -i \"s|LEASE_ETCD|$STEADFAST_LEASE_ETCD|\" '%s' && "
		          "curl -sS --fail -K '%s'",
		          SPLIT_DIR, conf, conf),
		    0);
	}
	lrv = patch_lease(&k2, ns, 1);
	cr_assert_gt(lrv, main_rv(&k2, ns) + 1000, "Lease and main revisions did not diverge");

	tl_ctl_opts o = {.ns = ns, .lease = "steadfast-test", .id = "split", .kubeconfig = kc};
	tl_ctl *c = tl_ctl_start(&k2.loop, &o);
	if (tl_ctl_wait_log(&k2.loop, c, "\"msg\":\"reconciling\"", 0, 30000) < 0)
		cr_assert_fail("the leader never started reconciling in 30 s (lease rv %lld, main "
		               "rv %lld); its LISTs meanwhile: %d of appwrappers, %d of pods",
		               lrv, main_rv(&k2, ns), controller_lists(&split_log, "appwrappers"),
		               controller_lists(&split_log, "pods"));
	int64_t t0 = sf_mono_ns();
	snprintf(
	    body, sizeof(body),
	    "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	    "\"metadata\":{\"name\":\"split\"},\"spec\":{\"suspend\":true,\"components\":[]}}");
	sf_kube_req cq = {.method = "POST",
	                  .gvr = &SF_GVR_APPWRAPPERS,
	                  .ns = ns,
	                  .body = body,
	                  .body_len = strlen(body)};
	tl_do(&k2, &cq, &r);
	cr_assert_eq(r.http_status, 201);
	tl_res_clear(&r);
	/* its first reconcile (defaults, Suspended) comes as fast as ever */
	int done = 0;
	while (!done) {
		sf_obj *aw = get_obj_on(&k2, &SF_GVR_APPWRAPPERS, ns, "split");
		done = aw && sf_jv_streq(sf_jv_path(sf_obj_root(aw), "status.phase"), "Suspended");
		sf_obj_unref(aw);
		cr_assert(sf_mono_ns() - t0 < 10 * SF_NSEC_PER_SEC,
		          "not reconciled within 10 s of leading");
		if (!done)
			tl_run_until_fn(&k2.loop, never, NULL, 50);
	}
	double s = (double)(sf_mono_ns() - t0) / 1e9;
	int aw_lists = controller_lists(&split_log, "appwrappers");
	int pod_lists = controller_lists(&split_log, "pods");
	fprintf(stderr,
	        "leases on their own etcd (lease rv %lld, main rv %lld): Suspended %.2f s after "
	        "creation; controller LISTs: %d appwrappers, %d pods\n",
	        lrv, main_rv(&k2, ns), s, aw_lists, pod_lists);
	/* the initial list and one catch-up list each */
	cr_assert(aw_lists >= 1 && aw_lists <= 3, "%d LISTs of appwrappers", aw_lists);
	cr_assert(pod_lists >= 1 && pod_lists <= 3, "%d LISTs of pods", pod_lists);
	cr_assert(tl_ctl_alive(c));
}

/* ---- warm standbys: component caches on every replica ---- */

static const char *KIND_AWS[][3] = {
    {"wk-pod", "v1", "Pod"},
    {"wk-job", "batch/v1", "Job"},
    {"wk-deploy", "apps/v1", "Deployment"},
    {"wk-sts", "apps/v1", "StatefulSet"},
    {"wk-cm", "v1", "ConfigMap"},
};

static void create_kind_aw(const char *name, const char *api, const char *kind)
{
	char spec[1024], body[2048];
	const char *pod = "{\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}";
	if (strcmp(kind, "Pod") == 0)
		snprintf(spec, sizeof(spec), "%s", pod);
	else if (strcmp(kind, "Job") == 0)
		snprintf(spec, sizeof(spec),
		         "{\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{"
		         "\"name\":\"main\",\"image\":\"busybox\"}]}}}");
	else if (strcmp(kind, "ConfigMap") == 0)
		spec[0] = 0;
	else
		snprintf(spec, sizeof(spec),
		         "{\"replicas\":1,%s\"selector\":{\"matchLabels\":{\"app\":\"%s\"}},"
		         "\"template\":{\"metadata\":{\"labels\":{\"app\":\"%s\"}},\"spec\":%s}}",
		         strcmp(kind, "StatefulSet") == 0 ? "\"serviceName\":\"x\"," : "", name,
		         name, pod);
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	         "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"suspend\":false,\"components\":[{"
	         "\"template\":{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{\"name\":"
	         "\"%s-c\"}%s%s%s}}]}}",
	         name, api, kind, name, spec[0] ? ",\"spec\":" : "", spec,
	         strcmp(kind, "ConfigMap") == 0 ? ",\"data\":{\"a\":\"b\"}" : "");
	tl_aw_create(&W, body);
}

Test(evidence, a_standby_takes_over_with_warm_component_caches)
{
	tl_ctl *a = controller("leader");
	cr_assert_geq(tl_ctl_wait_log(&K.loop, a, "\"msg\":\"reconciling\"", 0, 30000), 0);
	tl_ctl *b = controller("standby");
	size_t n = sizeof(KIND_AWS) / sizeof(KIND_AWS[0]);
	for (size_t i = 0; i < n; i++) {
		create_kind_aw(KIND_AWS[i][0], KIND_AWS[i][1], KIND_AWS[i][2]);
		tl_aw_wait_phase(&W, KIND_AWS[i][0], "Suspended", 20000);
		tl_aw_admit(&W, KIND_AWS[i][0], NULL);
		/* (a ConfigMap has no pods: it succeeds at once) */
		tl_aw_wait_phase(&W, KIND_AWS[i][0],
		                 strcmp(KIND_AWS[i][2], "ConfigMap") == 0 ? "Succeeded" : "Running",
		                 20000);
	}
	/* the standby watches every kind in use, without leading */
	for (size_t i = 0; i < n; i++) {
		char needle[128];
		snprintf(
		    needle, sizeof(needle),
		    "\"msg\":\"watching component kind\",\"apiVersion\":\"%s\",\"kind\":\"%s\"",
		    KIND_AWS[i][1], KIND_AWS[i][2]);
		cr_assert_geq(tl_ctl_wait_log(&K.loop, b, needle, 0, 20000), 0,
		              "the standby does not watch %s", KIND_AWS[i][2]);
	}
	static const char *resources[] = {"jobs", "deployments", "statefulsets", "configmaps"};
	for (size_t i = 0; i < 4; i++) {
		char needle[128];
		snprintf(needle, sizeof(needle), "\"msg\":\"list applied\",\"resource\":\"%s\"",
		         resources[i]);
		cr_assert_geq(tl_ctl_wait_log(&K.loop, b, needle, 0, 20000), 0,
		              "the standby never listed %s", resources[i]);
	}
	tl_audit_mark mark;
	tl_audit_mark_now(&mark);
	size_t from = tl_ctl_nlines(b);
	tl_ctl_signal(a, SIGKILL);
	cr_assert_geq(tl_ctl_wait_log(&K.loop, b, "became leader", from, 30000), 0);
	int64_t t_lead = sf_mono_ns();
	cr_assert_geq(tl_ctl_wait_log(&K.loop, b, "\"msg\":\"reconciling\"", from, 30000), 0);
	double ms = (double)(sf_mono_ns() - t_lead) / 1e6;
	/* it reconciles: a change made now is acted on */
	cr_assert_eq(tl_aw_req(&W, "PATCH", &SF_GVR_APPWRAPPERS, "wk-deploy", NULL,
	                       "{\"spec\":{\"suspend\":true}}"),
	             200);
	tl_aw_wait_phase(&W, "wk-deploy", "Suspended", 20000);
	int total = 0;
	for (size_t i = 0; i < 4; i++) {
		int l = controller_lists(&mark, resources[i]);
		cr_assert_geq(l, 0);
		total += l;
		fprintf(stderr, "failover: %d LISTs of %s by the new leader\n", l, resources[i]);
	}
	fprintf(stderr,
	        "failover with 5 component kinds: %.0f ms from leading to reconciling; %d "
	        "component-kind LISTs (jobs, deployments, statefulsets, configmaps)\n",
	        ms, total);
	cr_assert_eq(total, 0, "the new leader listed component kinds a standby had listed");
	cr_assert_str_eq(phase_of("wk-pod"), "Running");
	cr_assert_str_eq(phase_of("wk-job"), "Running");
	cr_assert_str_eq(phase_of("wk-sts"), "Running");
}
