/*
 * test_appwrapper.c - the AppWrapper controller (the steadfast binary)
 * against the real control plane: kube-apiserver + etcd, and
 * kube-controller-manager for Jobs and garbage collection.
 *
 * The test plays Kueue (spec.suspend, podSetInfos) and kubelet (pod
 * status); nothing else is faked. They are played, not run (the real ones
 * are in test_kueue.c, suite kueue), because these tests need exact
 * control of timing: the moment of admission and suspension, when each pod
 * turns Ready or fails and with which exit code, measured against the
 * phase machine's grace periods and retry pauses. It watches AppWrappers and pods with our
 * own informer and waits for states with deadlines, never fixed sleeps.
 *
 *   - happy path: a Job completes, the AppWrapper Succeeds, and its
 *     components go after the success TTL;
 *   - a Pod with podSetInfos gets them injected (labels, annotations,
 *     nodeSelector, tolerations, scheduling gates; its affinity kept);
 *   - suspending a running AppWrapper removes components and pods;
 *   - a pod failure with retryLimit 0 fails the AppWrapper with the exit
 *     code in its condition and an event, then removes its resources;
 *   - a component deleted by a user fails the AppWrapper with
 *     MissingComponent within its grace window plus a few seconds;
 *   - a create that finds its own component adopts it; one that finds a
 *     foreign object of that name fails with a message naming the owner;
 *   - an unknown kind and a malformed template fail clearly at creation
 *     while the controller keeps serving the others;
 *   - Events are events.k8s.io/v1 ones (reporter, action, regarding,
 *     eventTime), and a repeat is a series on one Event;
 *   - incident B: a pod that always fails is re-created after a pause that
 *     doubles, across a leader failover, and ends in Failed with its exit
 *     code on the AppWrapper and in an event; changes by others to a live
 *     component never re-create it;
 *   - incident A: 20 AppWrappers admitted at once while the leader is
 *     killed and a cold replica takes over, repeated, also with component
 *     watches lagging up to 2 s: no MissingComponent, no failure;
 *   - /healthz, /readyz and /metrics of a running controller.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/awphase.h"
#include "steadfast/awapi.h"
#include "steadfast/awcomp.h"
#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/log.h"
#include "steadfast/time.h"
#include "tl.h"
#include "tl_aw.h"
#include "tcpproxy.h"
#include "tl_ctl.h"

static tl_kube K;
static char NS[64];
static tl_aw_watch W; /* NS's AppWrappers, pods, Jobs and Events */

static void setup(void)
{
	tl_aw_env_open(&K, &W, "aw", NS, sizeof(NS));
}

static void teardown(void)
{
	tl_aw_env_close(&K, &W, NS);
}

TestSuite(appwrapper, .init = setup, .fini = teardown, .timeout = 240);

/* ---- helpers ---- */

static tl_ctl *controller(const char *id)
{
	tl_ctl_opts o = {.ns = NS, .lease = "steadfast-test", .id = id};
	return tl_ctl_start(&K.loop, &o);
}

static const char *JOB_AW =
    "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"metadata\":{"
    "\"name\":\"%s\",\"annotations\":{%s}},\"spec\":{\"suspend\":false,\"components\":[{"
    "\"template\":{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"%s-job\"},"
    "\"spec\":{\"backoffLimit\":0,\"template\":{\"spec\":{\"restartPolicy\":\"Never\","
    "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"command\":[\"sh\",\"-c\",\"true\"],"
    "\"resources\":{\"requests\":{\"cpu\":\"10m\"}}}]}}}}}]}}";

static void create_job_aw(const char *name, const char *annotations)
{
	char body[4096];
	snprintf(body, sizeof(body), JOB_AW, name, annotations ? annotations : "", name);
	tl_aw_create(&W, body);
}

/* ---- tests ---- */

typedef struct pods_find {
	const char *aw;
	int want;
	int n;
	char names[8][254];
} pods_find;

static int pods_visit(void *ud, sf_obj *o)
{
	pods_find *f = ud;
	sf_jv l = sf_jv_path(sf_obj_root(o), "metadata.labels");
	if (f->n < 8 && sf_jv_streq(sf_jv_get(l, SF_AW_LABEL), f->aw) &&
	    !sf_jv_ok(sf_jv_path(sf_obj_root(o), "metadata.deletionTimestamp")))
		snprintf(f->names[f->n++], 254, "%s", o->name);
	return 0;
}

static int pods_appeared(void *ud)
{
	pods_find *f = ud;
	f->n = 0;
	sf_store_each(sf_informer_store(W.pods), pods_visit, f);
	return f->n >= f->want;
}

/* Upstream's happy path: a Job of two pods; one completes (still Running),
 * then both (Succeeded), then the success TTL removes the components. */
Test(appwrapper, job_succeeds_then_ttl_removes_components)
{
	tl_ctl *c = controller("solo");
	tl_aw_create(&W,
	             "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	             "\"metadata\":{\"name\":\"happy\",\"annotations\":{"
	             "\"" SF_AW_ANNOT_PREFIX "successTTLDuration\":\"3s\"}},\"spec\":{"
	             "\"suspend\":false,\"components\":[{\"template\":{\"apiVersion\":\"batch/v1\","
	             "\"kind\":\"Job\",\"metadata\":{\"name\":\"happy-job\"},\"spec\":{"
	             "\"parallelism\":2,\"completions\":2,\"backoffLimit\":0,\"template\":{"
	             "\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\","
	             "\"image\":\"busybox\"}]}}}}}]}}");
	/* without a webhook the controller suspends it for Kueue */
	tl_aw_wait_phase(&W, "happy", "Suspended", 20000);
	sf_obj *o = tl_aw_cached(&W, "happy");
	cr_assert_eq(sf_jv_type(sf_jv_path(sf_obj_root(o), "spec.suspend")), SF_JSON_TRUE, "%s",
	             o->json);
	/* pod sets as Kueue reads them: one pod set of 2 */
	int64_t replicas = 0;
	sf_jv_int64(sf_jv_path(sf_obj_root(o), "status.componentStatus[0].podSets[0].replicas"),
	            &replicas);
	cr_assert_eq(replicas, 2);
	tl_aw_admit(&W, "happy", NULL);
	tl_aw_wait_phase(&W, "happy", "Running", 20000);
	cr_assert_str_eq(tl_aw_cond(&W, "happy", "QuotaReserved", NULL, NULL), "True");
	cr_assert_str_eq(tl_aw_cond(&W, "happy", "ResourcesDeployed", NULL, NULL), "True");
	pods_find f = {.aw = "happy", .want = 2};
	cr_assert_eq(tl_run_until_fn(&K.loop, pods_appeared, &f, 20000), 0,
	             "the Job controller made %d pods", f.n);
	char p0[254], p1[254];
	snprintf(p0, sizeof(p0), "%s", f.names[0]);
	snprintf(p1, sizeof(p1), "%s", f.names[1]);
	tl_aw_kubelet(&W, p0, "Running", 0, NULL);
	tl_aw_kubelet(&W, p1, "Running", 0, NULL);
	tl_aw_wait_cond(&W, "happy", "PodsReady", "True", 20000);
	tl_aw_kubelet(&W, p0, "Succeeded", 0, NULL);
	/* one done, one running: still Running, still ready */
	char msg[1024] = "";
	tl_aw_wait_cond(&W, "happy", "PodsReady", "True", 5000);
	sf_obj *now = tl_aw_cached(&W, "happy");
	cr_assert(sf_jv_streq(sf_jv_path(sf_obj_root(now), "status.phase"), "Running"));
	tl_aw_kubelet(&W, p1, "Succeeded", 0, NULL);
	tl_aw_wait_phase(&W, "happy", "Succeeded", 20000);
	char reason[64] = "";
	cr_assert_str_eq(tl_aw_cond(&W, "happy", "QuotaReserved", reason, msg), "False");
	cr_assert_str_eq(reason, "Succeeded");
	cr_assert_str_eq(msg, "2 pods succeeded and no running, pending, or failed pods");
	/* success TTL 3 s: then the components go */
	tl_aw_wait_all_gone(&W, "happy", 20000);
	cr_assert_eq(tl_aw_req(&W, "GET", &SF_GVR_JOBS, "happy-job", NULL, NULL), 404);
	tl_aw_wait_cond(&W, "happy", "ResourcesDeployed", "False", 10000);
	cr_assert_str_eq(tl_aw_cond(&W, "happy", "ResourcesDeployed", reason, msg), "False");
	cr_assert_str_eq(reason, "Succeeded");
	cr_assert(strstr(msg, "Time to live after success of 3s expired"), "%s", msg);
	cr_assert(tl_ctl_alive(c));
}

static const char *POD_AW =
    "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"metadata\":{"
    "\"name\":\"%s\",\"annotations\":{%s}},\"spec\":{\"suspend\":false,\"components\":[{"
    "\"template\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"},"
    "\"spec\":{\"restartPolicy\":\"Never\",%s\"containers\":[{\"name\":\"main\",\"image\":"
    "\"busybox\",\"command\":[\"sh\",\"-c\",\"exit 1\"]}]}}}]}}";

static void create_pod_aw(const char *name, const char *annotations, const char *pod_name,
                          const char *spec_extra)
{
	char body[4096];
	snprintf(body, sizeof(body), POD_AW, name, annotations ? annotations : "", pod_name,
	         spec_extra ? spec_extra : "");
	tl_aw_create(&W, body);
}

static sf_obj *get_obj(const sf_gvr *gvr, const char *name)
{
	tl_res r = {0};
	sf_kube_req q = {.method = "GET", .gvr = gvr, .ns = NS, .name = name};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200, "GET %s: %ld", name, r.http_status);
	sf_obj *o = r.obj;
	r.obj = NULL;
	tl_res_clear(&r);
	return o;
}

/* Kueue's admission of a Pod AppWrapper, with pod set infos. */
Test(appwrapper, podsetinfos_are_injected_into_a_pod)
{
	controller("solo");
	create_pod_aw("inject", NULL, "inject-pod",
	              "\"nodeSelector\":{\"disk\":\"ssd\"},\"tolerations\":[{\"key\":\"a\","
	              "\"operator\":\"Exists\"}],\"affinity\":{\"nodeAffinity\":{"
	              "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
	              "\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":["
	              "\"z1\"]}]}]}}},"
	              "\"schedulingGates\":[{\"name\":\"g1\"}],");
	tl_aw_wait_phase(&W, "inject", "Suspended", 20000);
	tl_aw_admit(
	    &W, "inject",
	    "{\"spec\":{\"suspend\":false,\"components\":[{\"template\":{\"apiVersion\":\"v1\","
	    "\"kind\":\"Pod\",\"metadata\":{\"name\":\"inject-pod\"},\"spec\":{\"restartPolicy\":"
	    "\"Never\",\"nodeSelector\":{\"disk\":\"ssd\"},\"tolerations\":[{\"key\":\"a\","
	    "\"operator\":\"Exists\"}],\"affinity\":{\"nodeAffinity\":{"
	    "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
	    "\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"z1\"]}]}]}"
	    "}},"
	    "\"schedulingGates\":[{\"name\":\"g1\"}],\"containers\":[{\"name\":\"main\","
	    "\"image\":\"busybox\"}]}},\"podSetInfos\":[{\"labels\":{\"kueue.x-k8s.io/podset\":"
	    "\"main\"},\"annotations\":{\"kueue.x-k8s.io/workload\":\"w1\"},\"nodeSelector\":{"
	    "\"pool\":\"gpu\"},\"tolerations\":[{\"key\":\"b\",\"operator\":\"Equal\",\"value\":"
	    "\"v\",\"effect\":\"NoSchedule\"}],\"schedulingGates\":[{\"name\":\"g1\"},{\"name\":"
	    "\"kueue.x-k8s.io/topology\"}]}]}]}}");
	tl_aw_wait_phase(&W, "inject", "Running", 20000);
	sf_obj *pod = get_obj(&SF_GVR_PODS, "inject-pod");
	sf_jv p = sf_obj_root(pod);
	sf_jv labels = sf_jv_path(p, "metadata.labels");
	cr_assert(sf_jv_streq(sf_jv_get(labels, "kueue.x-k8s.io/podset"), "main"), "%s", pod->json);
	cr_assert(sf_jv_streq(sf_jv_get(labels, SF_AW_LABEL), "inject"));
	cr_assert(sf_jv_streq(
	    sf_jv_get(sf_jv_path(p, "metadata.annotations"), "kueue.x-k8s.io/workload"), "w1"));
	cr_assert(sf_jv_streq(sf_jv_path(p, "spec.nodeSelector.pool"), "gpu"));
	cr_assert(sf_jv_streq(sf_jv_path(p, "spec.nodeSelector.disk"), "ssd"));
	cr_assert(sf_jv_streq(sf_jv_path(p, "spec.tolerations[1].key"), "b"), "%s", pod->json);
	cr_assert_eq(sf_jv_len(sf_jv_path(p, "spec.schedulingGates")), 2, "%s", pod->json);
	cr_assert(sf_jv_streq(sf_jv_path(p, "spec.affinity.nodeAffinity."
	                                    "requiredDuringSchedulingIgnoredDuringExecution."
	                                    "nodeSelectorTerms[0].matchExpressions[0].key"),
	                      "zone"));
	/* owned by the AppWrapper as controller */
	sf_obj *aw = tl_aw_cached(&W, "inject");
	cr_assert(sf_jv_streq(sf_jv_path(p, "metadata.ownerReferences[0].uid"), aw->uid));
	cr_assert_eq(sf_jv_type(sf_jv_path(p, "metadata.ownerReferences[0].controller")),
	             SF_JSON_TRUE);
	sf_obj_unref(pod);
}

/* Autopilot's anti-affinities, on by default as upstream's: a GPU Job's
 * pod template avoids nodes labelled TESTING or EVICT (required) and WARN
 * (preferred, weight 50), keeps the affinity of its own, and the API
 * server accepts the Job and makes its pod with them. */
Test(appwrapper, gpu_pods_get_autopilot_anti_affinities)
{
	controller("gpu");
	char body[4096];
	snprintf(
	    body, sizeof(body),
	    "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"metadata\":{"
	    "\"name\":\"gpu\"},\"spec\":{\"components\":[{\"template\":{\"apiVersion\":"
	    "\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"gpu-job\"},\"spec\":{"
	    "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"affinity\":{\"nodeAffinity\":"
	    "{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
	    "\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"z1\"]}]}"
	    "]}}},\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"resources\":{"
	    "\"limits\":{\"nvidia.com/gpu\":1}}}]}}}}}]}}");
	tl_aw_create(&W, body);
	tl_aw_wait_phase(&W, "gpu", "Suspended", 20000);
	tl_aw_admit(&W, "gpu", NULL);
	tl_aw_wait_phase(&W, "gpu", "Running", 20000);
	sf_obj *job = get_obj(&SF_GVR_JOBS, "gpu-job");
	sf_jv na = sf_jv_path(sf_obj_root(job), "spec.template.spec.affinity.nodeAffinity");
	sf_jv exprs = sf_jv_path(na, "requiredDuringSchedulingIgnoredDuringExecution."
	                             "nodeSelectorTerms[0].matchExpressions");
	cr_assert_eq(sf_jv_len(exprs), 2, "%s", job->json);
	cr_assert(sf_jv_streq(sf_jv_path(exprs, "[0].key"), "zone"), "its own first: %s",
	          job->json);
	cr_assert(sf_jv_streq(sf_jv_path(exprs, "[1].key"), "autopilot.ibm.com/gpuhealth"));
	cr_assert(sf_jv_streq(sf_jv_path(exprs, "[1].operator"), "NotIn"));
	cr_assert(sf_jv_streq(sf_jv_path(exprs, "[1].values[0]"), "TESTING"));
	cr_assert(sf_jv_streq(sf_jv_path(exprs, "[1].values[1]"), "EVICT"));
	sf_jv pref = sf_jv_path(na, "preferredDuringSchedulingIgnoredDuringExecution[0]");
	int64_t weight = 0;
	cr_assert_eq(sf_jv_int64(sf_jv_get(pref, "weight"), &weight), 0, "%s", job->json);
	cr_assert_eq(weight, 50);
	cr_assert(
	    sf_jv_streq(sf_jv_path(pref, "preference.matchExpressions[0].values[0]"), "WARN"));
	/* the pod the Job controller made carries them */
	char pod[254];
	tl_aw_pod_ready(&W, "gpu", pod, sizeof(pod), 20000);
	sf_obj *p = get_obj(&SF_GVR_PODS, pod);
	cr_assert(sf_jv_streq(sf_jv_path(sf_obj_root(p),
	                                 "spec.affinity.nodeAffinity."
	                                 "requiredDuringSchedulingIgnoredDuringExecution."
	                                 "nodeSelectorTerms[0].matchExpressions[1].values[1]"),
	                      "EVICT"),
	          "%s", p->json);
	sf_obj_unref(p);
	sf_obj_unref(job);
}

/* Upstream v1.2.1's rule, with no operator config: an AppWrapper without a
 * queue name is not Kueue's (Kueue's manageJobsWithoutQueueName defaults to
 * false), so it runs at once, never suspended; with a queue name it waits
 * for Kueue. */
Test(appwrapper, without_a_queue_name_it_runs_at_once_by_default)
{
	tl_ctl_opts o = {
	    .ns = NS, .lease = "steadfast-test", .id = "shipped", .shipped_defaults = 1};
	tl_ctl_start(&K.loop, &o);
	char body[4096];
	snprintf(body, sizeof(body), JOB_AW, "noqueue", "", "noqueue");
	char *s = strstr(body, "\"suspend\":false,");
	cr_assert_not_null(s);
	memmove(s, s + strlen("\"suspend\":false,"), strlen(s + strlen("\"suspend\":false,")) + 1);
	tl_aw_create(&W, body);
	tl_aw_wait_phase(&W, "noqueue", "Running", 20000);
	sf_obj *o2 = tl_aw_cached(&W, "noqueue");
	cr_assert_neq(sf_jv_type(sf_jv_path(sf_obj_root(o2), "spec.suspend")), SF_JSON_TRUE, "%s",
	              o2->json);
	cr_assert_eq(tl_aw_req(&W, "GET", &SF_GVR_JOBS, "noqueue-job", NULL, NULL), 200);

	snprintf(body, sizeof(body), JOB_AW, "queued", "", "queued");
	s = strstr(body, "\"name\":\"queued\",");
	cr_assert_not_null(s);
	char with_label[4200];
	snprintf(with_label, sizeof(with_label), "%.*s\"labels\":{\"%s\":\"team-q\"},%s",
	         (int)(s - body) + (int)strlen("\"name\":\"queued\","), body, SF_AW_QUEUE_LABEL,
	         s + strlen("\"name\":\"queued\","));
	tl_aw_create(&W, with_label);
	tl_aw_wait_phase(&W, "queued", "Suspended", 20000);
	o2 = tl_aw_cached(&W, "queued");
	cr_assert_eq(sf_jv_type(sf_jv_path(sf_obj_root(o2), "spec.suspend")), SF_JSON_TRUE, "%s",
	             o2->json);
}

Test(appwrapper, suspending_a_running_appwrapper_removes_its_resources)
{
	controller("solo");
	create_job_aw("susp", NULL);
	tl_aw_wait_phase(&W, "susp", "Suspended", 20000);
	tl_aw_admit(&W, "susp", NULL);
	tl_aw_wait_phase(&W, "susp", "Running", 20000);
	char pod[254];
	tl_aw_wait_pod(&W, "susp", pod, sizeof(pod), 20000);
	tl_aw_kubelet(&W, pod, "Running", 0, NULL);
	cr_assert_eq(tl_aw_req(&W, "PATCH", &SF_GVR_APPWRAPPERS, "susp", NULL,
	                       "{\"spec\":{\"suspend\":true}}"),
	             200);
	tl_aw_wait_phase(&W, "susp", "Suspended", 30000);
	char reason[64] = "";
	cr_assert_str_eq(tl_aw_cond(&W, "susp", "QuotaReserved", reason, NULL), "False");
	cr_assert_str_eq(reason, "Suspended");
	cr_assert_str_eq(tl_aw_cond(&W, "susp", "ResourcesDeployed", NULL, NULL), "False");
	tl_aw_wait_all_gone(&W, "susp", 30000);
	cr_assert_eq(tl_aw_req(&W, "GET", &SF_GVR_JOBS, "susp-job", NULL, NULL), 404);
}

/* Events that count a repeated failure (a series of 2 or more). */
static int ev_aggregated(void *ud)
{
	tl_aw_events *e = ud;
	tl_aw_events_scan(&W, e);
	return e->count >= 2;
}

Test(appwrapper, failed_pod_with_retry_limit_0_fails_visibly_then_cleans_up)
{
	controller("solo");
	create_pod_aw("fail0",
	              "\"" SF_AW_ANNOT_PREFIX "retryLimit\":\"0\","
	              "\"" SF_AW_ANNOT_PREFIX "failureGracePeriodDuration\":\"0s\"",
	              "fail0-pod", NULL);
	tl_aw_wait_phase(&W, "fail0", "Suspended", 20000);
	tl_aw_admit(&W, "fail0", NULL);
	tl_aw_wait_phase(&W, "fail0", "Running", 20000);
	tl_aw_kubelet(&W, "fail0-pod", "Failed", 1, "config file /etc/app.yaml: no such file");
	tl_aw_wait_phase(&W, "fail0", "Failed", 20000);
	char reason[64] = "", msg[1024] = "";
	cr_assert_str_eq(tl_aw_cond(&W, "fail0", "Unhealthy", reason, msg), "True");
	cr_assert_str_eq(reason, "FoundFailedPods");
	cr_assert(strstr(msg, "pod fail0-pod container main exited with code 1 (Error): config "
	                      "file /etc/app.yaml: no such file"),
	          "%s", msg);
	tl_aw_events ev = tl_aw_wait_event(&W, "fail0", "exited with code 1", 10000);
	cr_assert(ev.warning);
	/* then its resources go and quota is released (Kueue: finished) */
	tl_aw_wait_cond(&W, "fail0", "ResourcesDeployed", "False", 30000);
	cr_assert_str_eq(tl_aw_cond(&W, "fail0", "QuotaReserved", reason, NULL), "False");
	cr_assert_str_eq(reason, "Failed");
	tl_aw_wait_all_gone(&W, "fail0", 30000);
	/* the failure stays on the AppWrapper */
	cr_assert_str_eq(tl_aw_cond(&W, "fail0", "Unhealthy", reason, msg), "True");
	cr_assert(strstr(msg, "exited with code 1"), "%s", msg);
}

/* A component really deleted by a user: MissingComponent, after the grace
 * window and a live read, within grace + a few seconds. */
Test(appwrapper, component_deleted_by_a_user_fails_with_missing_component)
{
	tl_ctl *c = controller("solo");
	create_job_aw("gone",
	              "\"" SF_AW_ANNOT_PREFIX "missingComponentGracePeriodDuration\":\"2s\"");
	tl_aw_wait_phase(&W, "gone", "Suspended", 20000);
	tl_aw_admit(&W, "gone", NULL);
	tl_aw_wait_phase(&W, "gone", "Running", 20000);
	char pod[254];
	tl_aw_pod_ready(&W, "gone", pod, sizeof(pod), 20000);
	size_t mark = tl_ctl_nlines(c);
	tl_res r = {0};
	sf_kube_req q = {.method = "DELETE",
	                 .gvr = &SF_GVR_JOBS,
	                 .ns = NS,
	                 .name = "gone-job",
	                 .body = "{\"propagationPolicy\":\"Background\"}",
	                 .body_len = strlen("{\"propagationPolicy\":\"Background\"}")};
	int64_t t0 = sf_mono_ns();
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200);
	tl_res_clear(&r);
	tl_aw_wait_phase(&W, "gone", "Failed", 15000);
	double s = (double)(sf_mono_ns() - t0) / 1e9;
	char reason[64] = "", msg[1024] = "";
	cr_assert_str_eq(tl_aw_cond(&W, "gone", "Unhealthy", reason, msg), "True");
	cr_assert_str_eq(reason, "MissingComponent");
	cr_assert_str_eq(msg, "Only found 0 deployed components, but was expecting 1");
	cr_assert(s >= 1.0 && s < 9.0, "failed %.2f s after the delete (grace 2 s)", s);
	cr_assert(tl_ctl_count(c, "confirmed missing by a live read", mark) >= 1);
	fprintf(stderr, "missing component: Failed %.2f s after the user's delete (grace 2 s)\n",
	        s);
}

static void aw_uid(const char *name, char *uid, size_t n)
{
	sf_obj *o = tl_aw_cached(&W, name);
	cr_assert_not_null(o);
	snprintf(uid, n, "%s", o->uid);
}

Test(appwrapper, existing_own_component_is_adopted_foreign_one_is_refused)
{
	tl_ctl *c = controller("solo");
	/* ours: a pod already created (e.g. by a previous leader) with this
	 * AppWrapper as controller */
	create_pod_aw("adopt", NULL, "adopt-pod", NULL);
	tl_aw_wait_phase(&W, "adopt", "Suspended", 20000);
	char uid[64], body[2048];
	aw_uid("adopt", uid, sizeof(uid));
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"adopt-pod\","
	         "\"labels\":{\"" SF_AW_LABEL "\":\"adopt\"},\"ownerReferences\":[{"
	         "\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"name\":"
	         "\"adopt\",\"uid\":\"%s\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
	         "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}",
	         uid);
	tl_res r = {0};
	sf_kube_req q = {.method = "POST",
	                 .gvr = &SF_GVR_PODS,
	                 .ns = NS,
	                 .body = body,
	                 .body_len = strlen(body)};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 201);
	char pod_uid[64];
	snprintf(pod_uid, sizeof(pod_uid), "%s", r.obj->uid);
	tl_res_clear(&r);
	tl_aw_admit(&W, "adopt", NULL);
	tl_aw_wait_phase(&W, "adopt", "Running", 20000);
	sf_obj *mine = get_obj(&SF_GVR_PODS, "adopt-pod");
	cr_assert_str_eq(mine->uid, pod_uid, "the existing pod was replaced");
	sf_obj_unref(mine);
	(void)c;
	char reason[64] = "";
	tl_aw_cond(&W, "adopt", "Unhealthy", reason, NULL);
	cr_assert_str_neq(reason, "CreateFailed");

	/* someone else's object holds the name */
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"taken-pod\"},"
	         "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}");
	cr_assert_eq(tl_aw_req(&W, "POST", &SF_GVR_PODS, NULL, NULL, body), 201);
	create_pod_aw("foreign", NULL, "taken-pod", NULL);
	tl_aw_wait_phase(&W, "foreign", "Suspended", 20000);
	tl_aw_admit(&W, "foreign", NULL);
	tl_aw_wait_phase(&W, "foreign", "Failed", 20000);
	char msg[1024] = "";
	cr_assert_str_eq(tl_aw_cond(&W, "foreign", "Unhealthy", reason, msg), "True");
	cr_assert_str_eq(reason, "CreateFailed");
	cr_assert(strstr(msg, "Pod taken-pod exists, but is not controlled by this AppWrapper"),
	          "%s", msg);
	/* and it was not touched */
	sf_obj *p = get_obj(&SF_GVR_PODS, "taken-pod");
	cr_assert_not(sf_jv_ok(sf_jv_path(sf_obj_root(p), "metadata.deletionTimestamp")));
	sf_obj_unref(p);
}

/* A create that lands but whose answer is lost (a timeout, a connection
 * cut after the request went out) is not retried blindly by the client
 * (test_client_errors.c); the controller's next step either sees the Job
 * in its cache, controlled by this AppWrapper, or creates again, meets
 * AlreadyExists, reads the object from the API server and adopts it. The
 * component cache lags here (up to 10 s) so that the second route is the
 * usual one. Either way: Running, with the one Job, never CreateFailed. */
Test(appwrapper, a_create_whose_answer_was_lost_is_adopted_not_duplicated)
{
	const char *env[] = {"STEADFAST_FAULT_LOST_CREATE_ANSWERS=1",
	                     "STEADFAST_FAULT_WATCH_DELAY_MS=10000", NULL};
	tl_ctl_opts o = {.ns = NS, .lease = "steadfast-l", .id = "lost", .env = env, .faults = 1};
	tl_ctl *c = tl_ctl_start(&K.loop, &o);
	create_job_aw("lost", NULL);
	tl_aw_wait_phase(&W, "lost", "Suspended", 20000); /* the create-time defaults */
	tl_aw_admit(&W, "lost", NULL);
	tl_aw_wait_phase(&W, "lost", "Running", 60000);
	cr_assert_eq(tl_ctl_count(c, "the answer to a create is dropped", 0), 1,
	             "the fault was not injected");
	cr_assert_eq(tl_ctl_count(c, "\"msg\":\"component created\"", 0), 0,
	             "a second create succeeded");
	char uid[64];
	aw_uid("lost", uid, sizeof(uid));
	sf_obj *job = get_obj(&SF_GVR_JOBS, "lost-job");
	cr_assert(sf_awc_owned_by(sf_obj_root(job), uid), "the Job is not controlled by it");
	sf_obj_unref(job);
	char reason[64] = "";
	tl_aw_cond(&W, "lost", "Unhealthy", reason, NULL);
	cr_assert_str_neq(reason, "CreateFailed");
	fprintf(stderr, "lost create answer: Running through %s\n",
	        tl_ctl_count(c, "is ours: adopted", 0) ? "AlreadyExists and adoption"
	                                               : "the cache seeing the Job");
}

/* ---- components with generated names (metadata.generateName) ---- */

/* An AppWrapper whose one Job has generateName "<name>-" (upstream's
 * samples' shape). */
static void create_generated_aw(const char *name, const char *annotations)
{
	char body[4096];
	snprintf(body, sizeof(body), JOB_AW, name, annotations ? annotations : "", name);
	char from[300], to[300];
	snprintf(from, sizeof(from), "\"metadata\":{\"name\":\"%s-job\"}", name);
	snprintf(to, sizeof(to), "\"metadata\":{\"generateName\":\"%s-job-\"}", name);
	char *at = strstr(body, from);
	cr_assert_not_null(at);
	char out[4200];
	snprintf(out, sizeof(out), "%.*s%s%s", (int)(at - body), body, to, at + strlen(from));
	tl_aw_create(&W, out);
}

/* The Jobs labelled for AppWrapper aw, read live: their count, and the
 * names of those not being deleted into names[] (up to 4). */
static int live_jobs(const char *aw, char names[4][254], int *deleting)
{
	char sel[300], qs[400];
	snprintf(sel, sizeof(sel), "%s=%s", SF_AW_LABEL, aw);
	sf_buf q;
	sf_buf_init(&q, 0);
	cr_assert_eq(sf_kube_query_add(&q, "labelSelector", sel), 0);
	snprintf(qs, sizeof(qs), "%.*s", (int)q.len, q.data);
	sf_buf_free(&q);
	tl_res r = {0};
	sf_kube_req rq = {.method = "GET", .gvr = &SF_GVR_JOBS, .ns = NS, .query = qs};
	tl_do(&K, &rq, &r);
	cr_assert_eq(r.http_status, 200, "list jobs: %ld", r.http_status);
	sf_jv_iter it = sf_jv_iter_init(sf_jv_get(sf_obj_root(r.obj), "items"));
	sf_jv item;
	int n = 0, del = 0;
	while (sf_jv_next(&it, NULL, &item)) {
		if (sf_jv_ok(sf_jv_path(item, "metadata.deletionTimestamp"))) {
			del++;
			continue;
		}
		if (n < 4)
			sf_jv_str(sf_jv_path(item, "metadata.name"), names[n], 254);
		n++;
	}
	tl_res_clear(&r);
	if (deleting)
		*deleting = del;
	return n;
}

static void recorded_name(const char *aw, char *buf, size_t n)
{
	sf_obj *o = tl_aw_cached(&W, aw);
	cr_assert_not_null(o);
	buf[0] = 0;
	sf_jv_str(sf_jv_path(sf_obj_root(o), "status.componentStatus[0].name"), buf, n);
}

typedef struct gen_reset {
	const char *aw;
	char old[254];
	char now[254];
	int jobs;       /* cached Jobs labelled for aw */
	char live[254]; /* the name of a cached one not being deleted */
} gen_reset;

static int gen_visit(void *ud, sf_obj *o)
{
	gen_reset *g = ud;
	sf_jv root = sf_obj_root(o);
	if (!sf_jv_streq(sf_jv_get(sf_jv_path(root, "metadata.labels"), SF_AW_LABEL), g->aw))
		return 0;
	g->jobs++;
	if (!sf_jv_ok(sf_jv_path(root, "metadata.deletionTimestamp")))
		snprintf(g->live, sizeof(g->live), "%s", o->name);
	return 0;
}

/* In the test's caches (a predicate runs inside the loop, so it must not
 * ask the API server): a new Job under another name, recorded, and the old
 * one gone. */
static int replaced(void *ud)
{
	gen_reset *g = ud;
	g->jobs = 0;
	g->live[0] = 0;
	sf_store_each(sf_informer_store(W.jobs), gen_visit, g);
	recorded_name(g->aw, g->now, sizeof(g->now));
	return g->jobs == 1 && strcmp(g->live, g->now) == 0 && strcmp(g->now, g->old) != 0;
}

/* Upstream runs a template with generateName and records the name the API
 * server chose; here too, with that name written before anything else is
 * done with it, through a reset (a new Job under a new name, the old one
 * deleted) and a deletion that leaves nothing behind. */
Test(appwrapper, generated_component_names_are_recorded_through_a_reset, .timeout = 180)
{
	controller("solo");
	create_generated_aw("gen", "\"" SF_AW_ANNOT_PREFIX "retryLimit\":\"1\","
	                           "\"" SF_AW_ANNOT_PREFIX "failureGracePeriodDuration\":\"0s\","
	                           "\"" SF_AW_ANNOT_PREFIX "retryPausePeriodDuration\":\"1s\"");
	tl_aw_wait_phase(&W, "gen", "Suspended", 20000);
	tl_aw_admit(&W, "gen", NULL);
	tl_aw_wait_phase(&W, "gen", "Running", 20000);
	char names[4][254], rec[254];
	int del = 0;
	cr_assert_eq(live_jobs("gen", names, &del), 1, "not one Job");
	recorded_name("gen", rec, sizeof(rec));
	cr_assert_str_eq(rec, names[0], "the status does not name the Job");
	cr_assert(strncmp(rec, "gen-job-", 8) == 0 && strlen(rec) > 8, "%s", rec);
	sf_obj *job = get_obj(&SF_GVR_JOBS, rec);
	char uid[64];
	aw_uid("gen", uid, sizeof(uid));
	cr_assert(sf_awc_generated_match(sf_obj_root(job), uid, 0), "%s", job->json);
	sf_obj_unref(job);

	/* its pod fails: reset, the Job deleted, a new one under a new name */
	char pod[254];
	tl_aw_wait_pod(&W, "gen", pod, sizeof(pod), 20000);
	tl_aw_kubelet(&W, pod, "Failed", 1, "boom");
	gen_reset g = {.aw = "gen"};
	snprintf(g.old, sizeof(g.old), "%s", rec);
	cr_assert_eq(tl_run_until_fn(&K.loop, replaced, &g, 60000), 0,
	             "no new Job recorded after the reset (recorded %s, was %s)", g.now, g.old);
	tl_aw_wait_phase(&W, "gen", "Running", 30000);
	cr_assert_eq(live_jobs("gen", names, &del), 1, "not one Job after the reset");
	cr_assert_str_eq(names[0], g.now);
	cr_assert_eq(tl_aw_req(&W, "GET", &SF_GVR_JOBS, g.old, NULL, NULL), 404);

	/* deletion: nothing left */
	cr_assert(tl_aw_req(&W, "DELETE", &SF_GVR_APPWRAPPERS, "gen", NULL, NULL) < 300);
	tl_aw_wait_all_gone(&W, "gen", 30000);
	cr_assert_eq(live_jobs("gen", names, &del) + del, 0, "a Job was left behind");
}

/* The answer to the create of a generated name is lost: AlreadyExists
 * cannot catch a second create, so before any retry the controller looks
 * the component up live by owner and index and adopts what it finds. One
 * Job, its name recorded, never a second. */
Test(appwrapper, a_lost_create_of_a_generated_name_is_found_not_duplicated)
{
	const char *env[] = {"STEADFAST_FAULT_LOST_CREATE_ANSWERS=1",
	                     "STEADFAST_FAULT_WATCH_DELAY_MS=10000", NULL};
	tl_ctl_opts o = {
	    .ns = NS, .lease = "steadfast-l", .id = "lostgen", .env = env, .faults = 1};
	tl_ctl *c = tl_ctl_start(&K.loop, &o);
	create_generated_aw("lostgen", NULL);
	tl_aw_wait_phase(&W, "lostgen", "Suspended", 20000);
	tl_aw_admit(&W, "lostgen", NULL);
	tl_aw_wait_phase(&W, "lostgen", "Running", 60000);
	cr_assert_eq(tl_ctl_count(c, "the answer to a create is dropped", 0), 1,
	             "the fault was not injected");
	char names[4][254], rec[254];
	int del = 0;
	cr_assert_eq(live_jobs("lostgen", names, &del), 1, "%d Jobs (%s, %s)",
	             live_jobs("lostgen", names, &del), names[0], names[1]);
	recorded_name("lostgen", rec, sizeof(rec));
	cr_assert_str_eq(rec, names[0]);
	cr_assert_eq(tl_ctl_count(c, "is ours: adopted", 0), 1);
	cr_assert_eq(tl_ctl_count(c, "\"msg\":\"component created\"", 0), 0,
	             "a second create succeeded");
}

Test(appwrapper, bad_components_fail_clearly_and_others_are_served)
{
	controller("solo");
	tl_aw_create(&W,
	             "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	             "\"metadata\":{\"name\":\"unknown-kind\"},\"spec\":{\"suspend\":false,"
	             "\"components\":[{\"template\":{\"apiVersion\":\"example.com/v1\",\"kind\":"
	             "\"Widget\",\"metadata\":{\"name\":\"w\"},\"spec\":{}}}]}}");
	tl_aw_create(
	    &W,
	    "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	    "\"metadata\":{\"name\":\"bad-path\"},\"spec\":{\"suspend\":false,"
	    "\"components\":[{\"podSets\":[{\"path\":\"template.spec.nothere\",\"replicas\":1}],"
	    "\"template\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"bp\"},"
	    "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}}]}}");
	create_pod_aw("fine", NULL, "fine-pod", NULL);
	tl_aw_wait_phase(&W, "unknown-kind", "Suspended", 20000);
	tl_aw_wait_phase(&W, "fine", "Suspended", 20000);
	tl_aw_admit(&W, "unknown-kind", NULL);
	tl_aw_admit(&W, "fine", NULL);
	tl_aw_wait_phase(&W, "unknown-kind", "Failed", 20000);
	char reason[64] = "", msg[1024] = "";
	cr_assert_str_eq(tl_aw_cond(&W, "unknown-kind", "Unhealthy", reason, msg), "True");
	cr_assert_str_eq(reason, "CreateFailed");
	cr_assert(strstr(msg, "no matches for kind \"Widget\" in version \"example.com/v1\""), "%s",
	          msg);
	tl_aw_wait_phase(&W, "fine", "Running", 20000);
	/* a pod set path that points nowhere: failed with the path named */
	tl_aw_wait_phase(&W, "bad-path", "Suspended", 20000);
	tl_aw_admit(&W, "bad-path", NULL);
	tl_aw_wait_phase(&W, "bad-path", "Failed", 20000);
	cr_assert_str_eq(tl_aw_cond(&W, "bad-path", "Unhealthy", reason, msg), "True");
	cr_assert(strstr(msg, "nothere"), "%s", msg);
}

/* ---- incident B: a pod that always fails ---- */

#define MAX_INCARNATIONS 16

typedef struct crashloop {
	const char *pod;
	char uids[MAX_INCARNATIONS][64];
	double created_ms[MAX_INCARNATIONS]; /* first seen by the test */
	double failed_ms[MAX_INCARNATIONS];  /* when the test (kubelet) failed it */
	int n;
} crashloop;

static double now_ms(void)
{
	return (double)sf_mono_ns() / 1e6;
}

/* kubelet for the crash loop: each new incarnation of the pod fails at
 * once with exit code 1. */
static int crashloop_step(void *ud)
{
	crashloop *cl = ud;
	sf_obj *p = sf_store_get_ns(sf_informer_store(W.pods), NS, cl->pod);
	if (!p || sf_jv_ok(sf_jv_path(sf_obj_root(p), "metadata.deletionTimestamp")))
		return 0;
	if (cl->n > 0 && strcmp(cl->uids[cl->n - 1], p->uid) == 0)
		return 0;
	cr_assert(cl->n < MAX_INCARNATIONS, "too many incarnations");
	snprintf(cl->uids[cl->n], 64, "%s", p->uid);
	cl->created_ms[cl->n] = now_ms();
	cl->n++;
	return 1;
}

static int is_failed_phase(const char *name)
{
	sf_obj *o = tl_aw_cached(&W, name);
	return o && sf_jv_streq(sf_jv_path(sf_obj_root(o), "status.phase"), "Failed");
}

typedef struct leader_ctx {
	const char *lease;
	char holder[128];
} leader_ctx;

static void lease_holder(const char *lease, char *buf, size_t n)
{
	tl_res r = {0};
	sf_kube_req q = {.method = "GET", .gvr = &SF_GVR_LEASES, .ns = NS, .name = lease};
	tl_do(&K, &q, &r);
	buf[0] = 0;
	if (r.http_status == 200)
		sf_jv_str(sf_jv_path(sf_obj_root(r.obj), "spec.holderIdentity"), buf, n);
	tl_res_clear(&r);
}

/* The reset pause doubles (1 s, 2 s, 4 s, 8 s, 16 s), survives a leader
 * failover in the middle, and the loop ends in Failed with the exit code
 * on the AppWrapper and in an aggregated event. */
Test(appwrapper, failing_pod_backoff_doubles_across_failover_then_fails, .timeout = 300)
{
	tl_ctl *a = controller("replica-a");
	tl_ctl *b = controller("replica-b");
	create_pod_aw("crashloop",
	              "\"" SF_AW_ANNOT_PREFIX "retryLimit\":\"5\","
	              "\"" SF_AW_ANNOT_PREFIX "failureGracePeriodDuration\":\"0s\","
	              "\"" SF_AW_ANNOT_PREFIX "retryPausePeriodDuration\":\"1s\"",
	              "crashloop-pod", NULL);
	tl_aw_wait_phase(&W, "crashloop", "Suspended", 20000);
	tl_aw_admit(&W, "crashloop", NULL);
	crashloop cl = {.pod = "crashloop-pod"};
	int killed = 0;
	while (!is_failed_phase("crashloop")) {
		int before = cl.n;
		if (tl_run_until_fn(&K.loop, crashloop_step, &cl, 60000) != 0) {
			if (is_failed_phase("crashloop"))
				break;
			tl_aw_dump(&W, "crashloop");
			cr_assert_fail("no new incarnation within 60 s (had %d)", cl.n);
		}
		cr_assert_eq(cl.n, before + 1);
		tl_aw_kubelet(&W, cl.pod, "Failed", 1,
		              "walk bundle dir /manifests: not a directory");
		cl.failed_ms[cl.n - 1] = now_ms();
		if (cl.n == 3 && !killed) {
			/* the leader dies in the middle of the backoff */
			char holder[128];
			lease_holder("steadfast-test", holder, sizeof(holder));
			tl_ctl *leader = strcmp(holder, "replica-a") == 0 ? a : b;
			cr_assert(strcmp(holder, "replica-a") == 0 ||
			              strcmp(holder, "replica-b") == 0,
			          "holder %s", holder);
			tl_ctl_signal(leader, SIGKILL);
			killed = 1;
			fprintf(stderr, "crashloop: killed the leader %s after incarnation 3\n",
			        holder);
		}
		/* wait until this incarnation is gone or the AppWrapper failed */
		if (cl.n == 6)
			break;
	}
	tl_aw_wait_phase(&W, "crashloop", "Failed", 60000);
	cr_assert_eq(cl.n, 6, "incarnations: %d (1 + retryLimit 5)", cl.n);
	for (int k = 1; k < cl.n; k++) {
		double gap = (cl.created_ms[k] - cl.failed_ms[k - 1]) / 1000.0;
		double want = (double)(1 << (k - 1));
		fprintf(stderr, "crashloop: re-creation %d after %.2f s (pause %.0f s)\n", k, gap,
		        want);
		/* never early; late by at most the detection, the deletion,
		 * a second of condition-time resolution and (once) a failover */
		cr_assert(gap >= want - 0.1 && gap <= want + 4.5,
		          "re-creation %d came %.2f s after the failure; the pause is %.0f s", k,
		          gap, want);
		if (k >= 2)
			cr_assert(cl.created_ms[k] - cl.failed_ms[k - 1] >
			              cl.created_ms[k - 1] - cl.failed_ms[k - 2] - 1000,
			          "the pause did not grow");
	}
	char reason[64] = "", msg[1024] = "";
	cr_assert_str_eq(tl_aw_cond(&W, "crashloop", "Unhealthy", reason, msg), "True");
	cr_assert(strstr(msg, "exited with code 1 (Error): walk bundle dir /manifests: not a "
	                      "directory"),
	          "%s", msg);
	sf_obj *o = tl_aw_cached(&W, "crashloop");
	int64_t resets = 0;
	sf_jv_int64(sf_jv_path(sf_obj_root(o), "status.resettingCount"), &resets);
	cr_assert_eq(resets, 5);
	tl_aw_events ev = tl_aw_wait_event(&W, "crashloop", "exited with code 1", 10000);
	cr_assert(ev.warning);
	cr_assert(killed);
	/* aggregated: the same failure again is a count on one Event, not a
	 * new Event per reconcile (each leader keeps its own series) */
	cr_assert(ev.found <= 4, "%d Events for 6 failures", ev.found);
	tl_aw_events agg = {.aw = "crashloop", .needle = "exited with code 1"};
	cr_assert_eq(tl_run_until_fn(&K.loop, ev_aggregated, &agg, 10000), 0,
	             "no Event counts a repeated failure (largest count %ld)", agg.count);
}

/* The Event about AppWrapper aw with this reason and action, from a live
 * list of events.k8s.io/v1 Events (not the cache): a copy of it, or NULL.
 * Fails the test when more than one matches. */
static sf_obj *event_v1(const char *aw, const char *reason, const char *action)
{
	tl_res r = {0};
	sf_kube_req q = {.method = "GET", .gvr = &TL_GVR_EVENTS, .ns = NS};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200, "list events.k8s.io/v1 Events: %ld %s", r.http_status,
	             r.message);
	sf_jv items = sf_jv_get(sf_obj_root(r.obj), "items");
	sf_obj *found = NULL;
	for (size_t i = 0; i < sf_jv_len(items); i++) {
		sf_jv e = sf_jv_at(items, i);
		if (!sf_jv_streq(sf_jv_path(e, "regarding.name"), aw) ||
		    !sf_jv_streq(sf_jv_get(e, "reason"), reason) ||
		    !sf_jv_streq(sf_jv_get(e, "action"), action))
			continue;
		cr_assert_null(found, "two Events about %s with reason %s, action %s: %s", aw,
		               reason, action, r.obj->json);
		char err[128] = "";
		found = sf_obj_parse(e.p, e.n, err, sizeof(err));
		cr_assert(found, "%s", err);
	}
	tl_res_clear(&r);
	return found;
}

/* Prints the events.k8s.io/v1 Events about AppWrapper aw (live list). */
static void dump_events_v1(const char *aw)
{
	tl_res r = {0};
	sf_kube_req q = {.method = "GET", .gvr = &TL_GVR_EVENTS, .ns = NS};
	tl_do(&K, &q, &r);
	sf_jv items = sf_jv_get(sf_obj_root(r.obj), "items");
	for (size_t i = 0; i < sf_jv_len(items); i++) {
		sf_jv e = sf_jv_at(items, i);
		if (sf_jv_streq(sf_jv_path(e, "regarding.name"), aw))
			fprintf(stderr, "Event about %s: %.*s\n", aw, (int)e.n, e.p);
	}
	tl_res_clear(&r);
}

typedef struct series_find {
	const char *aw, *reason, *action;
	long count; /* the cached Event's series.count, 0 if none */
} series_find;

static int series_visit(void *ud, sf_obj *o)
{
	series_find *f = ud;
	sf_jv e = sf_obj_root(o);
	int64_t c = 0;
	if (sf_jv_streq(sf_jv_path(e, "regarding.name"), f->aw) &&
	    sf_jv_streq(sf_jv_get(e, "reason"), f->reason) &&
	    sf_jv_streq(sf_jv_get(e, "action"), f->action) &&
	    sf_jv_int64(sf_jv_path(e, "series.count"), &c) == 0 && c > f->count)
		f->count = (long)c;
	return 0;
}

/* In the watch's cache: an Event with that reason and action whose series
 * counts 2 or more. */
static int series_of_two(void *ud)
{
	series_find *f = ud;
	f->count = 0;
	sf_store_each(sf_informer_store(W.events), series_visit, f);
	return f->count >= 2;
}

/* Events go through events.k8s.io/v1, as client-go's events recorder
 * writes them (upstream and Kueue): the AppWrapper as `regarding`,
 * reportingController "appwrappers" (upstream's recorder name), the
 * replica's identity as reportingInstance, an action (the phase the step
 * moves to), eventTime; and a repeat is a series on the one Event
 * (series.count 2 at the second occurrence, as client-go), not a second
 * Event. Core/v1 shows the same object. Three failures with retryLimit 2:
 * two resets with the same note (one Event, a series of 2), then the
 * failure (another Event: another action). */
Test(appwrapper, events_are_events_k8s_io_v1_and_a_repeat_is_a_series)
{
	controller("solo");
	create_pod_aw("series",
	              "\"" SF_AW_ANNOT_PREFIX "retryLimit\":\"2\","
	              "\"" SF_AW_ANNOT_PREFIX "failureGracePeriodDuration\":\"0s\","
	              "\"" SF_AW_ANNOT_PREFIX "retryPausePeriodDuration\":\"0s\"",
	              "series-pod", NULL);
	tl_aw_wait_phase(&W, "series", "Suspended", 20000);
	tl_aw_admit(&W, "series", NULL);
	crashloop cl = {.pod = "series-pod"};
	while (cl.n < 3) {
		if (tl_run_until_fn(&K.loop, crashloop_step, &cl, 60000) != 0) {
			tl_aw_dump(&W, "series");
			cr_assert_fail("no new incarnation within 60 s (had %d)", cl.n);
		}
		tl_aw_kubelet(&W, cl.pod, "Failed", 7, "out of cheese");
	}
	tl_aw_wait_phase(&W, "series", "Failed", 30000);
	series_find sf = {"series", "Unhealthy", "Resetting", 0};
	if (tl_run_until_fn(&K.loop, series_of_two, &sf, 15000) != 0) {
		dump_events_v1("series");
		cr_assert_fail("no events.k8s.io/v1 Event with reason Unhealthy, action Resetting "
		               "and series.count >= 2 about the AppWrapper (its Events above)");
	}
	/* the cached object is borrowed: a request runs the loop, and an
	 * update may free it, so keep its UID */
	char awuid[64];
	aw_uid("series", awuid, sizeof(awuid));
	sf_obj *e = event_v1("series", "Unhealthy", "Resetting");
	if (!e)
		dump_events_v1("series");
	cr_assert_not_null(e, "the watch showed a series, a live list no such Event (above)");
	sf_jv ev = sf_obj_root(e);
	char note[1100] = "";
	int64_t count = 0;
	sf_jv_str(sf_jv_get(ev, "note"), note, sizeof(note));
	cr_assert(strstr(note, "pod series-pod container main exited with code 7"), "%s", e->json);
	cr_assert(sf_jv_streq(sf_jv_get(ev, "type"), "Warning"), "%s", e->json);
	cr_assert(sf_jv_streq(sf_jv_get(ev, "reportingController"), "appwrappers"), "%s", e->json);
	cr_assert(sf_jv_streq(sf_jv_get(ev, "reportingInstance"), "solo"), "%s", e->json);
	cr_assert(sf_jv_streq(sf_jv_path(ev, "regarding.apiVersion"), SF_AW_API_VERSION), "%s",
	          e->json);
	cr_assert(sf_jv_streq(sf_jv_path(ev, "regarding.kind"), SF_AW_KIND), "%s", e->json);
	cr_assert(sf_jv_streq(sf_jv_path(ev, "regarding.namespace"), NS), "%s", e->json);
	cr_assert(sf_jv_streq(sf_jv_path(ev, "regarding.uid"), awuid), "%s", e->json);
	cr_assert(sf_jv_ok(sf_jv_get(ev, "eventTime")), "no eventTime: %s", e->json);
	cr_assert_eq(sf_jv_int64(sf_jv_path(ev, "series.count"), &count), 0, "%s", e->json);
	cr_assert_eq(count, 2, "two resets, series.count %lld: %s", (long long)count, e->json);
	cr_assert(sf_jv_ok(sf_jv_path(ev, "series.lastObservedTime")), "%s", e->json);
	/* nothing of the core/v1 writer's (the server shows an empty
	 * deprecatedSource and null timestamps) */
	cr_assert(!sf_jv_ok(sf_jv_get(ev, "deprecatedCount")), "%s", e->json);
	cr_assert(!sf_jv_ok(sf_jv_path(ev, "deprecatedSource.component")), "%s", e->json);
	cr_assert(!sf_jv_ok(sf_jv_get(ev, "deprecatedLastTimestamp")) ||
	              sf_jv_type(sf_jv_get(ev, "deprecatedLastTimestamp")) == SF_JSON_NULL,
	          "%s", e->json);
	/* the core/v1 view of the same object: message, reporter and series;
	 * its `count` is the deprecated one, unset (kubectl shows the series') */
	tl_res r = {0};
	sf_kube_req q = {.method = "GET", .gvr = &SF_GVR_EVENTS, .ns = NS, .name = e->name};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200, "core/v1 GET of %s: %ld", e->name, r.http_status);
	sf_jv cv = sf_obj_root(r.obj);
	cr_assert(sf_jv_streq(sf_jv_path(cv, "involvedObject.name"), "series"), "%s", r.obj->json);
	cr_assert(sf_jv_streq(sf_jv_get(cv, "message"), note), "%s", r.obj->json);
	cr_assert(sf_jv_streq(sf_jv_get(cv, "reportingComponent"), "appwrappers"), "%s",
	          r.obj->json);
	count = 0;
	sf_jv_int64(sf_jv_path(cv, "series.count"), &count);
	cr_assert_eq(count, 2, "%s", r.obj->json);
	cr_assert(!sf_jv_ok(sf_jv_get(cv, "count")), "%s", r.obj->json);
	tl_res_clear(&r);
	sf_obj_unref(e);
	/* the failure: the same note, another action, so another Event */
	e = event_v1("series", "Unhealthy", "Failed");
	cr_assert(e, "no Event with action Failed");
	cr_assert(!sf_jv_ok(sf_jv_get(sf_obj_root(e), "series")), "%s", e->json);
	sf_obj_unref(e);
}

/* Someone else (a webhook, the API server's defaults) changes the live
 * component: that is not drift, nothing is re-created. */
Test(appwrapper, changes_by_others_to_a_live_component_do_not_recreate_it)
{
	controller("solo");
	create_pod_aw("drift", NULL, "drift-pod",
	              "\"volumes\":[{\"name\":\"cfg\",\"configMap\":{\"name\":\"cfg\"}}],");
	tl_aw_wait_phase(&W, "drift", "Suspended", 20000);
	tl_aw_admit(&W, "drift", NULL);
	tl_aw_wait_phase(&W, "drift", "Running", 20000);
	sf_obj *p = get_obj(&SF_GVR_PODS, "drift-pod");
	char uid[64];
	snprintf(uid, sizeof(uid), "%s", p->uid);
	/* the server defaulted the ConfigMap volume's mode */
	int64_t mode = 0;
	cr_assert_eq(
	    sf_jv_int64(sf_jv_path(sf_obj_root(p), "spec.volumes[0].configMap.defaultMode"), &mode),
	    0);
	cr_assert_eq(mode, 420);
	sf_obj_unref(p);
	/* a webhook-like mutation of labels and annotations */
	cr_assert_eq(
	    tl_aw_req(&W, "PATCH", &SF_GVR_PODS, "drift-pod", NULL,
	              "{\"metadata\":{\"labels\":{\"injected-by\":\"webhook\"},\"annotations\":{"
	              "\"sidecar.example.com/status\":\"injected\"}}}"),
	    200);
	/* then the pod runs: PodsReady proves a reconcile after the changes */
	tl_aw_kubelet(&W, "drift-pod", "Running", 0, NULL);
	tl_aw_wait_cond(&W, "drift", "PodsReady", "True", 20000);
	p = get_obj(&SF_GVR_PODS, "drift-pod");
	cr_assert_str_eq(p->uid, uid, "the pod was re-created");
	cr_assert_not(sf_jv_ok(sf_jv_path(sf_obj_root(p), "metadata.deletionTimestamp")));
	sf_obj_unref(p);
	sf_obj *o = tl_aw_cached(&W, "drift");
	cr_assert(sf_jv_streq(sf_jv_path(sf_obj_root(o), "status.phase"), "Running"));
	int64_t resets = 0; /* absent = 0 */
	sf_jv_int64(sf_jv_path(sf_obj_root(o), "status.resettingCount"), &resets);
	cr_assert_eq(resets, 0);
}

/* ---- incident A: failover with a cold cache while Kueue admits ---- */

#define A_AWS 20

typedef struct admits {
	int pending;
	int failed;
} admits;

static void admit_done(void *ud, const sf_kube_result *r)
{
	admits *a = ud;
	a->pending--;
	if (!sf_kube_ok(r))
		a->failed++;
}

static int admits_done(void *ud)
{
	return ((admits *)ud)->pending == 0;
}

/* Kueue admits all of them at once: the PATCHes are all in flight together. */
static void admit_all(const char *prefix, int n)
{
	admits a = {0};
	for (int i = 0; i < n; i++) {
		char name[64];
		snprintf(name, sizeof(name), "%s-%d", prefix, i);
		cr_assert_eq(sf_kube_patch(K.client, &SF_GVR_APPWRAPPERS, NS, name, NULL,
		                           SF_PATCH_MERGE, "{\"spec\":{\"suspend\":false}}", NULL,
		                           0, admit_done, &a, NULL),
		             0);
		a.pending++;
	}
	cr_assert_eq(tl_run_until_fn(&K.loop, admits_done, &a, 30000), 0);
	cr_assert_eq(a.failed, 0);
}

typedef struct round_ctx {
	const char *prefix;
	int n;
	const char *phase;
	int running, failed, missing;
} round_ctx;

static int round_count(void *ud)
{
	round_ctx *rc = ud;
	rc->running = rc->failed = rc->missing = 0;
	for (int i = 0; i < rc->n; i++) {
		char name[64], reason[64] = "";
		snprintf(name, sizeof(name), "%s-%d", rc->prefix, i);
		sf_obj *o = tl_aw_cached(&W, name);
		if (!o)
			continue;
		sf_jv ph = sf_jv_path(sf_obj_root(o), "status.phase");
		if (sf_jv_streq(ph, rc->phase))
			rc->running++;
		if (sf_jv_streq(ph, "Failed"))
			rc->failed++;
		tl_aw_cond(&W, name, "Unhealthy", reason, NULL);
		if (strcmp(reason, "MissingComponent") == 0)
			rc->missing++;
	}
	return rc->running == rc->n || rc->failed > 0 || rc->missing > 0;
}

static tl_ctl *replica(const char *id, long lag_ms)
{
	static char lag_env[64];
	snprintf(lag_env, sizeof(lag_env), "STEADFAST_FAULT_WATCH_DELAY_MS=%ld", lag_ms);
	const char *env[] = {lag_env, NULL};
	tl_ctl_opts o = {.ns = NS,
	                 .lease = "steadfast-a",
	                 .id = id,
	                 .lease_ms = 1000,
	                 .renew_ms = 700,
	                 .retry_ms = 200,
	                 .env = lag_ms ? env : NULL,
	                 .faults = lag_ms != 0};
	return tl_ctl_start(&K.loop, &o);
}

static long env_long(const char *k, long dflt)
{
	const char *v = getenv(k);
	return v && v[0] ? atol(v) : dflt;
}

/* Each round: 20 AppWrappers wrapping a Job are admitted at once; the
 * leader is SIGKILLed right away and a new replica, started cold, takes
 * over and finishes what the old one began. No AppWrapper may fail with
 * MissingComponent (or fail at all). */
static void incident_a(long lag_ms, int rounds)
{
	tl_ctl *all[128];
	size_t nall = 0;
	tl_ctl *leader = replica("a-0", lag_ms);
	all[nall++] = leader;
	double t_start = now_ms();
	int total = 0;
	for (int r = 0; r < rounds; r++) {
		char prefix[32];
		snprintf(prefix, sizeof(prefix), "r%d", r);
		for (int i = 0; i < A_AWS; i++) {
			char name[64];
			snprintf(name, sizeof(name), "%s-%d", prefix, i);
			create_job_aw(name, NULL);
		}
		round_ctx rc = {.prefix = prefix, .n = A_AWS, .phase = "Suspended"};
		if (tl_run_until_fn(&K.loop, round_count, &rc, 60000) != 0 || rc.running != A_AWS) {
			tl_ctl_dump(leader, 30);
			cr_assert_fail("round %d: only %d of %d suspended", r, rc.running, A_AWS);
		}
		admit_all(prefix, A_AWS);
		/* the leader dies while it is creating their Jobs */
		tl_ctl_signal(leader, SIGKILL);
		char id[32];
		snprintf(id, sizeof(id), "a-%d", r + 1);
		leader = replica(id, lag_ms);
		if (nall < 128)
			all[nall++] = leader;
		rc = (round_ctx){.prefix = prefix, .n = A_AWS, .phase = "Running"};
		int ok = tl_run_until_fn(&K.loop, round_count, &rc, 90000) == 0;
		if (!ok || rc.failed || rc.missing || rc.running != A_AWS) {
			tl_ctl_dump(leader, 40);
			for (int i = 0; i < A_AWS; i++) {
				char name[64];
				snprintf(name, sizeof(name), "%s-%d", prefix, i);
				tl_aw_dump(&W, name);
			}
			cr_assert_fail("round %d: %d running, %d failed, %d MissingComponent", r,
			               rc.running, rc.failed, rc.missing);
		}
		/* kubelet starts their pods: PodsReady needs Running steps that
		 * count the (possibly lagging) cached components and pods */
		for (int i = 0; i < A_AWS; i++) {
			char name[64], pod[254];
			snprintf(name, sizeof(name), "%s-%d", prefix, i);
			tl_aw_wait_pod(&W, name, pod, sizeof(pod), 30000);
			tl_aw_kubelet(&W, pod, "Running", 0, NULL);
		}
		for (int i = 0; i < A_AWS; i++) {
			char name[64];
			snprintf(name, sizeof(name), "%s-%d", prefix, i);
			tl_aw_wait_cond(&W, name, "PodsReady", "True", 30000);
		}
		rc = (round_ctx){.prefix = prefix, .n = A_AWS, .phase = "Running"};
		round_count(&rc);
		cr_assert(rc.running == A_AWS && rc.failed == 0 && rc.missing == 0,
		          "round %d after PodsReady: %d running, %d failed, %d MissingComponent", r,
		          rc.running, rc.failed, rc.missing);
		total += A_AWS;
		/* clean up behind us: the new leader removes components and
		 * finalizers */
		for (int i = 0; i < A_AWS; i++) {
			char name[64];
			snprintf(name, sizeof(name), "%s-%d", prefix, i);
			/* fire and forget: no callback (the last round's
			 * answers arrive after this function returns) */
			cr_assert_eq(sf_kube_delete(K.client, &SF_GVR_APPWRAPPERS, NS, name, NULL,
			                            NULL, NULL, NULL) >= 0,
			             1);
		}
	}
	size_t suspicions = 0, expectations = 0;
	for (size_t i = 0; i < nall; i++) {
		suspicions += tl_ctl_count(all[i], "a cache-only count would call it missing", 0);
		expectations += tl_ctl_count(all[i], "\"msg\":\"component created\"", 0);
	}
	fprintf(stderr,
	        "incident A (component and pod watches lagging up to %ld ms): %d rounds, %d "
	        "AppWrappers admitted across a "
	        "leader kill and cold start, 0 failed, 0 MissingComponent, %.0f s; %zu creates, "
	        "%zu Running steps where the cache lacked a component (a cache-only count, as "
	        "upstream's, would have failed them)\n",
	        lag_ms, rounds, total, (now_ms() - t_start) / 1000, expectations, suspicions);
	if (lag_ms > 0)
		cr_assert(suspicions > 0, "the lag never put the cache behind a create: the test "
		                          "did not exercise the guard");
}

/* 20 and 8 rounds (400 and 160 AppWrappers, as many failovers as rounds)
 * keep make test within its time with the kueue and node suites, whose
 * incident A runs through the real Kueue; STEADFAST_INCIDENT_ROUNDS=50
 * STEADFAST_INCIDENT_LAG_ROUNDS=20 is the longer run the earlier figures
 * came from. */
Test(appwrapper, incident_a_failover_with_cold_cache, .timeout = 1200)
{
	incident_a(0, (int)env_long("STEADFAST_INCIDENT_ROUNDS", 20));
}

Test(appwrapper, incident_a_with_lagging_watches, .timeout = 1200)
{
	incident_a(2000, (int)env_long("STEADFAST_INCIDENT_LAG_ROUNDS", 8));
}

/* Fault points live only in the test build: the shipped binary, given the
 * same environment, injects nothing (and says nothing about it). */
Test(appwrapper, the_shipped_binary_reads_no_fault_settings)
{
	const char *env[] = {"STEADFAST_FAULT_WATCH_DELAY_MS=2000", NULL};
	tl_ctl_opts o = {.ns = NS, .lease = "steadfast-f", .id = "shipped", .env = env};
	tl_ctl *shipped = tl_ctl_start(&K.loop, &o);
	cr_assert_geq(tl_ctl_wait_log(&K.loop, shipped, "\"msg\":\"reconciling\"", 0, 30000), 0);
	cr_assert_eq(tl_ctl_count(shipped, "fault injection", 0), 0,
	             "the shipped binary honoured STEADFAST_FAULT_WATCH_DELAY_MS");
	tl_ctl_signal(shipped, SIGTERM);
	cr_assert_eq(tl_ctl_wait_exit(&K.loop, shipped, 20000, NULL, NULL), 0);
	/* the test build does inject: the incident tests rely on it */
	o.id = "faults";
	o.faults = 1;
	tl_ctl *test_build = tl_ctl_start(&K.loop, &o);
	cr_assert_geq(tl_ctl_wait_log(&K.loop, test_build, "fault injection", 0, 30000), 0);
}

/* A huge AppWrapper (about 1 MiB: its container has a 1 MiB environment
 * value) is carried through like any other, and the others are served. */
Test(appwrapper, huge_appwrapper_is_handled_and_others_served)
{
	controller("solo");
	size_t big = 1024 * 1024;
	char *val = malloc(big + 1);
	cr_assert(val);
	memset(val, 'x', big);
	val[big] = 0;
	char *body = NULL;
	cr_assert(
	    asprintf(&body,
	             "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	             "\"metadata\":{\"name\":\"huge\"},\"spec\":{\"suspend\":false,"
	             "\"components\":[{\"template\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	             "\"metadata\":{\"name\":\"huge-pod\"},\"spec\":{\"containers\":[{\"name\":"
	             "\"main\",\"image\":\"busybox\",\"env\":[{\"name\":\"BLOB\",\"value\":"
	             "\"%s\"}]}]}}}]}}",
	             val) > 0);
	free(val);
	tl_aw_create(&W, body);
	free(body);
	create_pod_aw("fine2", NULL, "fine2-pod", NULL);
	tl_aw_wait_phase(&W, "huge", "Suspended", 30000);
	tl_aw_wait_phase(&W, "fine2", "Suspended", 30000);
	tl_aw_admit(&W, "huge", NULL);
	tl_aw_admit(&W, "fine2", NULL);
	tl_aw_wait_phase(&W, "fine2", "Running", 30000);
	tl_aw_wait_phase(&W, "huge", "Running", 30000);
	sf_obj *p = get_obj(&SF_GVR_PODS, "huge-pod");
	cr_assert_eq(sf_jv_len(sf_jv_path(sf_obj_root(p), "spec.containers[0].env[0].value")), 0);
	char *v = sf_jv_strdup(sf_jv_path(sf_obj_root(p), "spec.containers[0].env[0].value"));
	cr_assert(v && strlen(v) == big, "env value of %zu bytes", v ? strlen(v) : 0);
	free(v);
	sf_obj_unref(p);
}

/* ---- probes and metrics ---- */

static int never_true(void *ud)
{
	(void)ud;
	return 0;
}

/* Checks the text format of a /metrics body: every family has one
 * "# HELP" directly followed by its "# TYPE", declared once, and each sample
 * belongs to the family declared last (a histogram's by its _bucket, _sum
 * and _count series). */
static void expect_one_header_per_family(const char *body)
{
	char seen[8192] = "\n", fam[128] = "", type[16] = "";
	const char *l = body;
	while (*l) {
		const char *nl = strchr(l, '\n');
		cr_assert(nl, "/metrics does not end in a newline");
		char line[512];
		snprintf(line, sizeof(line), "%.*s", (int)(nl - l), l);
		char name[128];
		if (sscanf(line, "# HELP %127s", name) == 1) {
			char key[132];
			snprintf(key, sizeof(key), "\n%s\n", name);
			cr_assert(!strstr(seen, key), "family %s declared twice:\n%s", name, body);
			cr_assert(strlen(seen) + strlen(name) + 2 < sizeof(seen));
			strcat(seen, name);
			strcat(seen, "\n");
			const char *next = nl + 1;
			cr_assert(sscanf(next, "# TYPE %127s %15s", fam, type) == 2 &&
			              strcmp(fam, name) == 0,
			          "no TYPE right after HELP of %s", name);
			l = strchr(next, '\n') + 1;
			continue;
		}
		cr_assert(line[0] != '#', "stray comment: %s", line);
		cr_assert(sscanf(line, "%127[a-zA-Z0-9_:]", name) == 1, "bad line: %s", line);
		size_t fl = strlen(fam);
		int ok = strcmp(name, fam) == 0;
		if (!ok && strcmp(type, "histogram") == 0 && strncmp(name, fam, fl) == 0)
			ok = strcmp(name + fl, "_bucket") == 0 || strcmp(name + fl, "_sum") == 0 ||
			     strcmp(name + fl, "_count") == 0;
		cr_assert(ok, "sample %s outside its family (last declared: %s)", line, fam);
		l = nl + 1;
	}
}

Test(appwrapper, probes_and_metrics)
{
	tl_ctl *c = controller("solo");
	int hp = tl_ctl_port(&K.loop, c, "health");
	int mp = tl_ctl_port(&K.loop, c, "metrics");
	create_pod_aw("metered", NULL, "metered-pod", NULL);
	tl_aw_wait_phase(&W, "metered", "Suspended", 20000);
	tl_aw_admit(&W, "metered", NULL);
	tl_aw_wait_phase(&W, "metered", "Running", 20000);
	sf_buf b;
	sf_buf_init(&b, 1 << 22);
	cr_assert_eq(tl_ctl_http_get(hp, "/healthz", &b), 200, "%s", b.data);
	sf_buf_reset(&b);
	cr_assert_eq(tl_ctl_http_get(hp, "/readyz", &b), 200, "%s", b.data);
	sf_buf_reset(&b);
	cr_assert_eq(tl_ctl_http_get(hp, "/nope", &b), 404);
	sf_buf_reset(&b);
	cr_assert_eq(tl_ctl_http_get(mp, "/metrics", &b), 200);
	char want[256];
	snprintf(want, sizeof(want), "appwrapper_phase_total{namespace=\"%s\",phase=\"Running\"} 1",
	         NS);
	const char *needles[] = {
	    want,
	    "controller_runtime_reconcile_total{controller=\"appwrapper\",result=\"success\"}",
	    "controller_runtime_reconcile_time_seconds_bucket{controller=\"appwrapper\",le=\"+"
	    "Inf\"}",
	    "workqueue_depth{name=\"appwrapper\"}",
	    "rest_client_requests_total{code=\"201\",method=\"POST\"}",
	    /* the split of a reconcile's time */
	    "workqueue_queue_duration_seconds_count{name=\"appwrapper\"}",
	    "workqueue_work_duration_seconds_bucket{name=\"appwrapper\",le=\"1e-08\"}",
	    "rest_client_rate_limiter_duration_seconds_count{verb=\"POST\",host=\"127.0.0.1:",
	    "rest_client_request_duration_seconds_bucket{verb=\"PATCH\",host=\"127.0.0.1:",
	    "leader_election_master_status{name=\"steadfast-test\"} 1",
	    "steadfast_appwrapper_components_created_total 1",
	    "steadfast_build_info{version=",
	};
	/* the controller counts a phase once its write's answer is in, which
	 * can come after the watch showed the test that phase: ask again
	 * until every line is there (5 s at most) */
	int64_t deadline = sf_mono_ns() + 5 * SF_NSEC_PER_SEC;
	for (size_t i = 0; i < sizeof(needles) / sizeof(needles[0]); i++) {
		while (!strstr(b.data, needles[i]) && sf_mono_ns() < deadline) {
			tl_run_until_fn(&K.loop, never_true, NULL, 100);
			sf_buf_reset(&b);
			cr_assert_eq(tl_ctl_http_get(mp, "/metrics", &b), 200);
		}
		cr_assert(strstr(b.data, needles[i]), "/metrics lacks %s:\n%s", needles[i], b.data);
	}
	expect_one_header_per_family(b.data);
	sf_buf_free(&b);
}

/* ---- start-up while the API server cannot be reached ---- */

typedef struct ready_poll {
	int port;
	long want;
	long last;
} ready_poll;

static int readyz_is(void *ud)
{
	ready_poll *r = ud;
	sf_buf b;
	sf_buf_init(&b, 1 << 16);
	r->last = tl_ctl_http_get(r->port, "/readyz", &b);
	sf_buf_free(&b);
	return r->last == r->want;
}

Test(appwrapper, starts_while_the_api_is_unreachable_and_recovers)
{
	char kcfg[256];
	snprintf(kcfg, sizeof(kcfg), "/tmp/steadfast-unreachable-%d.kubeconfig", (int)getpid());
	tp_proxy *proxy = tl_api_proxy(&K.loop, kcfg);
	tp_blackhole(proxy, 1); /* a partition: nothing gets through */
	tl_ctl_opts o = {.ns = NS, .lease = "steadfast-test", .id = "cut-off", .kubeconfig = kcfg};
	tl_ctl *c = tl_ctl_start(&K.loop, &o);
	int hport = tl_ctl_port(&K.loop, c, "health");
	/* it keeps trying (and says so) instead of exiting */
	cr_assert(tl_ctl_wait_log(&K.loop, c, "not answering", 0, 20000) >= 0,
	          "no retry reported while the API is unreachable");
	cr_assert(tl_ctl_alive(c), "the controller exited while the API was unreachable");
	ready_poll r = {hport, 503, 0};
	cr_assert_eq(tl_run_until_fn(&K.loop, readyz_is, &r, 5000), 0, "/readyz said %ld", r.last);
	/* the network comes back: it becomes ready and works */
	tp_blackhole(proxy, 0);
	r = (ready_poll){hport, 200, 0};
	cr_assert_eq(tl_run_until_fn(&K.loop, readyz_is, &r, 60000), 0, "/readyz said %ld", r.last);
	create_pod_aw("after-outage", NULL, "after-outage-pod", NULL);
	tl_aw_wait_phase(&W, "after-outage", "Suspended", 30000);
	cr_assert(tl_ctl_alive(c));
	tl_ctl_stop_all(&K.loop);
	tp_close(proxy);
	unlink(kcfg);
}
