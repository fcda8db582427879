/*
 * test_appwrapper.c - the AppWrapper controller (the steadfast binary)
 * against the real control plane: kube-apiserver + etcd, and
 * kube-controller-manager for Jobs and garbage collection.
 *
 * The test plays Kueue (spec.suspend, podSetInfos) and kubelet (pod
 * status); nothing else is faked. It watches AppWrappers and pods with our
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
 *     while the controller keeps serving the others.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/log.h"
#include "steadfast/time.h"
#include "tl.h"
#include "tl_aw.h"
#include "tl_ctl.h"

static tl_kube K;
static char NS[64];
static sf_informer *AWS, *PODS, *JOBS;

static void inf_stopped(void *ud)
{
	(*(int *)ud)--;
}

static sf_informer *watch(const sf_gvr *gvr)
{
	sf_informer *inf = NULL;
	sf_informer_opts o = {.reflector = {.gvr = gvr, .ns = NS}};
	cr_assert_eq(sf_informer_new(&K.loop, K.client, &o, &inf), 0);
	cr_assert_eq(sf_informer_start(inf), 0);
	return inf;
}

static int all_synced(void *ud)
{
	(void)ud;
	return sf_informer_synced(AWS) && sf_informer_synced(PODS) && sf_informer_synced(JOBS);
}

static void setup(void)
{
	if (getenv("SF_DEBUG"))
		sf_log_set_level(SF_LOG_DEBUG);
	else
		sf_log_set_level(SF_LOG_WARN);
	tl_kube_open(&K, NULL, NULL);
	tl_aw_install_crd(&K);
	tl_namespace(&K, "aw", NS, sizeof(NS));
	AWS = watch(&TL_AW_GVR);
	PODS = watch(&SF_GVR_PODS);
	JOBS = watch(&SF_GVR_JOBS);
	cr_assert_eq(tl_run_until_fn(&K.loop, all_synced, NULL, 10000), 0);
}

static void teardown(void)
{
	tl_ctl_stop_all(&K.loop);
	int n = 3;
	sf_informer_stop(AWS, inf_stopped, &n);
	sf_informer_stop(PODS, inf_stopped, &n);
	sf_informer_stop(JOBS, inf_stopped, &n);
	tl_run_until(&K.loop, &(int){0}, 0);
	while (n > 0)
		uv_run(&K.loop, UV_RUN_ONCE);
	sf_informer_free(AWS);
	sf_informer_free(PODS);
	sf_informer_free(JOBS);
	tl_namespace_delete(&K, NS);
	tl_kube_close(&K);
}

TestSuite(appwrapper, .init = setup, .fini = teardown, .timeout = 240);

/* ---- helpers ---- */

static tl_ctl *controller(const char *id)
{
	tl_ctl_opts o = {.ns = NS, .lease = "steadfast-test", .id = id};
	return tl_ctl_start(&K.loop, &o);
}

static sf_obj *aw_cached(const char *name)
{
	return sf_store_get_ns(sf_informer_store(AWS), NS, name);
}

static void create_aw(const char *json)
{
	tl_res r = {0};
	sf_kube_req q = {.method = "POST", .gvr = &TL_AW_GVR, .ns = NS, .body = json,
	                 .body_len = strlen(json)};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 201, "create AppWrapper: %ld %s %s", r.http_status, r.reason,
	             r.message);
	tl_res_clear(&r);
}

static long patch(const sf_gvr *gvr, const char *name, const char *sub, const char *body)
{
	tl_res r = {0};
	sf_kube_req q = {.method = "PATCH", .gvr = gvr, .ns = NS, .name = name, .subresource = sub,
	                 .body = body, .body_len = strlen(body),
	                 .content_type = "application/merge-patch+json"};
	tl_do(&K, &q, &r);
	long st = r.http_status;
	tl_res_clear(&r);
	return st;
}

typedef struct phase_wait {
	const char *name;
	const char *phase;
} phase_wait;

static int has_phase(void *ud)
{
	phase_wait *w = ud;
	sf_obj *o = aw_cached(w->name);
	return o && sf_jv_streq(sf_jv_path(sf_obj_root(o), "status.phase"), w->phase);
}

static void dump_aw(const char *name)
{
	sf_obj *o = aw_cached(name);
	fprintf(stderr, "AppWrapper %s/%s: %s\n", NS, name, o ? o->json : "(absent)");
}

static void wait_phase(const char *name, const char *phase, long timeout_ms)
{
	phase_wait w = {name, phase};
	if (tl_run_until_fn(&K.loop, has_phase, &w, timeout_ms) != 0) {
		dump_aw(name);
		cr_assert_fail("%s did not reach phase %s within %ld ms", name, phase, timeout_ms);
	}
}

/* status of condition type, "" if absent; reason/message optional */
static const char *cond(const char *name, const char *type, char *reason, char *message)
{
	static char status[16];
	status[0] = 0;
	sf_obj *o = aw_cached(name);
	if (!o)
		return status;
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(sf_obj_root(o), "status.conditions"));
	sf_jv c;
	while (sf_jv_next(&it, NULL, &c))
		if (sf_jv_streq(sf_jv_get(c, "type"), type)) {
			sf_jv_str(sf_jv_get(c, "status"), status, sizeof(status));
			if (reason)
				sf_jv_str(sf_jv_get(c, "reason"), reason, 64);
			if (message)
				sf_jv_str(sf_jv_get(c, "message"), message, 1024);
		}
	return status;
}

typedef struct cond_wait {
	const char *name, *type, *status;
} cond_wait;

static int cond_is(void *ud)
{
	cond_wait *w = ud;
	return strcmp(cond(w->name, w->type, NULL, NULL), w->status) == 0;
}

static void wait_cond(const char *name, const char *type, const char *status, long timeout_ms)
{
	cond_wait w = {name, type, status};
	if (tl_run_until_fn(&K.loop, cond_is, &w, timeout_ms) != 0) {
		dump_aw(name);
		cr_assert_fail("%s: %s did not become %s within %ld ms", name, type, status,
		               timeout_ms);
	}
}

/* Kueue admits: suspend false (with podSetInfos when given). */
static void admit(const char *name, const char *podsetinfos_json)
{
	char body[4096];
	if (podsetinfos_json)
		snprintf(body, sizeof(body), "%s", podsetinfos_json);
	else
		snprintf(body, sizeof(body), "{\"spec\":{\"suspend\":false}}");
	cr_assert_eq(patch(&TL_AW_GVR, name, NULL, body), 200);
}

typedef struct pod_find {
	const char *label_value;
	char name[254];
} pod_find;

static int find_pod_visit(void *ud, sf_obj *o)
{
	pod_find *f = ud;
	sf_jv l = sf_jv_path(sf_obj_root(o), "metadata.labels");
	if (sf_jv_streq(sf_jv_get(l, "workload.codeflare.dev/appwrapper"), f->label_value) &&
	    !sf_jv_ok(sf_jv_path(sf_obj_root(o), "metadata.deletionTimestamp"))) {
		snprintf(f->name, sizeof(f->name), "%s", o->name);
		return 1;
	}
	return 0;
}

static int pod_appeared(void *ud)
{
	pod_find *f = ud;
	f->name[0] = 0;
	return sf_store_each(sf_informer_store(PODS), find_pod_visit, f) == 1;
}

/* Waits for a live pod of AppWrapper aw; its name into buf. */
static void wait_pod(const char *aw, char *buf, size_t n, long timeout_ms)
{
	pod_find f = {.label_value = aw};
	if (tl_run_until_fn(&K.loop, pod_appeared, &f, timeout_ms) != 0) {
		dump_aw(aw);
		cr_assert_fail("no pod of %s within %ld ms", aw, timeout_ms);
	}
	snprintf(buf, n, "%s", f.name);
}

typedef struct count_ctx {
	const char *aw;
	int n;
} count_ctx;

static int count_visit(void *ud, sf_obj *o)
{
	count_ctx *c = ud;
	sf_jv l = sf_jv_path(sf_obj_root(o), "metadata.labels");
	if (sf_jv_streq(sf_jv_get(l, "workload.codeflare.dev/appwrapper"), c->aw))
		c->n++;
	return 0;
}

static int labelled(sf_informer *inf, const char *aw)
{
	count_ctx c = {aw, 0};
	sf_store_each(sf_informer_store(inf), count_visit, &c);
	return c.n;
}

typedef struct gone_ctx {
	const char *aw;
} gone_ctx;

static int all_gone(void *ud)
{
	gone_ctx *g = ud;
	return labelled(PODS, g->aw) == 0 && labelled(JOBS, g->aw) == 0;
}

static void wait_all_gone(const char *aw, long timeout_ms)
{
	gone_ctx g = {aw};
	if (tl_run_until_fn(&K.loop, all_gone, &g, timeout_ms) != 0) {
		dump_aw(aw);
		cr_assert_fail("components/pods of %s still there after %ld ms (pods %d, jobs %d)",
		               aw, timeout_ms, labelled(PODS, aw), labelled(JOBS, aw));
	}
}

/* kubelet: pod phase, and for a terminated container its exit code. */
static void kubelet(const char *pod, const char *phase, int exit_code, const char *message)
{
	char body[2048], ts[40];
	sf_time_rfc3339(sf_wall_ns(), ts, sizeof(ts));
	if (strcmp(phase, "Running") == 0)
		snprintf(body, sizeof(body),
		         "{\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\",\"conditions\":[{"
		         "\"type\":\"Ready\",\"status\":\"True\"}],\"containerStatuses\":[{\"name\":"
		         "\"main\",\"image\":\"busybox\",\"imageID\":\"\",\"ready\":true,\"restartCount\":0,"
		         "\"state\":{\"running\":{\"startedAt\":\"%s\"}}}]}}",
		         ts, ts);
	else
		snprintf(body, sizeof(body),
		         "{\"status\":{\"phase\":\"%s\",\"startTime\":\"%s\",\"containerStatuses\":[{"
		         "\"name\":\"main\",\"image\":\"busybox\",\"imageID\":\"\",\"ready\":false,"
		         "\"restartCount\":0,\"state\":{\"terminated\":{\"exitCode\":%d,\"reason\":\"%s\","
		         "\"message\":\"%s\",\"startedAt\":\"%s\",\"finishedAt\":\"%s\"}}}]}}",
		         phase, ts, exit_code, exit_code ? "Error" : "Completed", message ? message : "",
		         ts, ts);
	long st = patch(&SF_GVR_PODS, pod, "status", body);
	cr_assert_eq(st, 200, "kubelet patch of %s: %ld", pod, st);
}

static long get_status(const sf_gvr *gvr, const char *name)
{
	tl_res r = {0};
	sf_kube_req q = {.method = "GET", .gvr = gvr, .ns = NS, .name = name};
	tl_do(&K, &q, &r);
	long st = r.http_status;
	tl_res_clear(&r);
	return st;
}

static const char *JOB_AW =
    "{\"apiVersion\":\"workload.codeflare.dev/v1beta2\",\"kind\":\"AppWrapper\",\"metadata\":{"
    "\"name\":\"%s\",\"annotations\":{%s}},\"spec\":{\"suspend\":false,\"components\":[{"
    "\"template\":{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"%s-job\"},"
    "\"spec\":{\"backoffLimit\":0,\"template\":{\"spec\":{\"restartPolicy\":\"Never\","
    "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"command\":[\"sh\",\"-c\",\"true\"],"
    "\"resources\":{\"requests\":{\"cpu\":\"10m\"}}}]}}}}}]}}";

static void create_job_aw(const char *name, const char *annotations)
{
	char body[4096];
	snprintf(body, sizeof(body), JOB_AW, name, annotations ? annotations : "", name);
	create_aw(body);
}

/* ---- tests ---- */

Test(appwrapper, job_succeeds_then_ttl_removes_components)
{
	tl_ctl *c = controller("solo");
	create_job_aw("happy", "\"workload.codeflare.dev.appwrapper/successTTLDuration\":\"3s\"");
	/* without a webhook the controller suspends it for Kueue */
	wait_phase("happy", "Suspended", 20000);
	sf_obj *o = aw_cached("happy");
	cr_assert(sf_jv_streq(sf_jv_path(sf_obj_root(o), "spec.suspend"), "true") ||
	              sf_jv_type(sf_jv_path(sf_obj_root(o), "spec.suspend")) == SF_JSON_TRUE,
	          "%s", o->json);
	admit("happy", NULL);
	wait_phase("happy", "Running", 20000);
	cr_assert_str_eq(cond("happy", "QuotaReserved", NULL, NULL), "True");
	cr_assert_str_eq(cond("happy", "ResourcesDeployed", NULL, NULL), "True");
	char pod[254];
	wait_pod("happy", pod, sizeof(pod), 20000); /* made by the Job controller */
	kubelet(pod, "Running", 0, NULL);
	kubelet(pod, "Succeeded", 0, NULL);
	wait_phase("happy", "Succeeded", 20000);
	char reason[64] = "";
	cr_assert_str_eq(cond("happy", "QuotaReserved", reason, NULL), "False");
	cr_assert_str_eq(reason, "Succeeded");
	/* success TTL 3 s: then the components go */
	wait_all_gone("happy", 20000);
	cr_assert_eq(get_status(&SF_GVR_JOBS, "happy-job"), 404);
	wait_cond("happy", "ResourcesDeployed", "False", 10000);
	char msg[1024] = "";
	cr_assert_str_eq(cond("happy", "ResourcesDeployed", reason, msg), "False");
	cr_assert_str_eq(reason, "Succeeded");
	cr_assert(strstr(msg, "Time to live after success of 3s expired"), "%s", msg);
	cr_assert(tl_ctl_alive(c));
}
