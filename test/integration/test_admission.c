/*
 * test_admission.c - AppWrapper admission by kube-apiserver itself: the
 * ValidatingAdmissionPolicies and the MutatingAdmissionPolicy of
 * manifests/admission (docs/admission.md), on the real control plane.
 *
 * No controller runs in this suite except in its last test: every refusal
 * and every default comes from the API server, which is the point of the
 * route (admission keeps working with every replica down). The suite
 * checks that no admission webhook for AppWrappers is registered either.
 * The last test runs a controller under the policies through a whole
 * lifecycle (its and Kueue's writes pass them), kills it, and shows
 * admission unchanged. Kueue's admission patch is played there, at a
 * chosen moment: the subject is that the policies let such an update
 * through, not queueing (suite kueue runs the real Kueue).
 *
 * Each test installs the manifests' policies under names suffixed with
 * its fresh namespace, bound to that namespace only (a namespaceSelector
 * on kubernetes.io/metadata.name) and reading their parameters from a copy
 * of the ConfigMap in it, so other suites on the same cluster are not
 * affected; teardown deletes them. Users: the admin (system:masters), the
 * cluster's certificate user steadfast-lowpriv (allowed here only what
 * the test grants), and a ServiceAccount token (a user with a uid).
 *
 * A policy is not enforced the moment it is stored (the server compiles
 * it from a watch) and a RoleBinding takes effect a moment after its
 * create: there is no event for either, so the helpers retry a dry-run
 * request until its answer shows the change, with a deadline.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/awapi.h"
#include "steadfast/buf.h"
#include "steadfast/client.h"
#include "steadfast/jdoc.h"
#include "steadfast/json.h"
#include "steadfast/log.h"
#include "steadfast/time.h"
#include "steadfast/yaml.h"
#include "tl.h"
#include "tl_aw.h"
#include "tl_ctl.h"

#define ADM_DIR "manifests/admission"
#define POLICY "appwrappers.workload.codeflare.dev"
#define RBAC_POLICY "user-rbac." POLICY
#define LOWPRIV "steadfast-lowpriv"
#define AWAIT_MS 30000
#define MAX_CREATED 40

static const sf_gvr VAPS = {"admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", 0};
static const sf_gvr VAPBS = {"admissionregistration.k8s.io", "v1",
                             "validatingadmissionpolicybindings", 0};
static const sf_gvr MAPS = {"admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies", 0};
static const sf_gvr MAPBS = {"admissionregistration.k8s.io", "v1",
                             "mutatingadmissionpolicybindings", 0};
static const sf_gvr VWHS = {"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                            0};
static const sf_gvr MWHS = {"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                            0};

static tl_kube K, L; /* admin, steadfast-lowpriv */
static char NS[64];
static char SUFFIX[80]; /* ".<NS>", appended to every policy object's name */
static char *CREATED[MAX_CREATED];
static size_t NCREATED;

/* ---- text helpers ---- */

/* s with every occurrence of from replaced by to (malloc'd). */
static char *replace_all(const char *s, const char *from, const char *to)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	size_t fl = strlen(from);
	for (const char *p; (p = strstr(s, from)); s = p + fl) {
		cr_assert_eq(sf_buf_append(&b, s, (size_t)(p - s)), 0);
		cr_assert_eq(sf_buf_puts(&b, to), 0);
	}
	cr_assert_eq(sf_buf_puts(&b, s), 0);
	char *out = sf_buf_detach(&b, NULL);
	cr_assert(out);
	return out;
}

static char *read_src(const char *rel)
{
	char path[1024];
	tl_aw_src_path(rel, path, sizeof(path));
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s: %s", path, strerror(errno));
	sf_buf b;
	sf_buf_init(&b, 0);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		cr_assert_eq(sf_buf_append(&b, chunk, n), 0);
	fclose(f);
	char *out = sf_buf_detach(&b, NULL);
	cr_assert(out);
	return out;
}

/* A policy file of manifests/admission made this test's: names suffixed,
 * parameters read from NS, bindings limited to NS. */
static char *policy_text(const char *file)
{
	char rel[256], sel[512];
	snprintf(rel, sizeof(rel), ADM_DIR "/%s", file);
	char *raw = read_src(rel);
	char named[128];
	snprintf(named, sizeof(named), POLICY "%s", SUFFIX);
	char *a = replace_all(raw, POLICY, named);
	char nsline[128];
	snprintf(nsline, sizeof(nsline), "namespace: %s", NS);
	char *b = replace_all(a, "namespace: steadfast-system", nsline);
	snprintf(sel, sizeof(sel),
	         "\n  matchResources:\n    namespaceSelector:\n      matchLabels:\n"
	         "        kubernetes.io/metadata.name: %s\n  policyName: ",
	         NS);
	char *c = replace_all(b, "\n  policyName: ", sel);
	cr_assert(strstr(c, "matchResources:"), "%s has no binding", rel);
	free(raw);
	free(a);
	free(b);
	return c;
}

/* ---- requests ---- */

static int has(const char *s, const char *needle)
{
	return s && strstr(s, needle) != NULL;
}

/* POSTs an AppWrapper (YAML) into NS as k; dry run unless real. */
static void aw_post(tl_kube *k, const char *yaml, int real, tl_res *r)
{
	char err[256] = "";
	char *json = sf_yaml_one_to_json(yaml, strlen(yaml), err, sizeof(err));
	cr_assert(json, "%s\n%s", err, yaml);
	sf_kube_req q = {.method = "POST",
	                 .gvr = &SF_GVR_APPWRAPPERS,
	                 .ns = NS,
	                 .query = real ? NULL : "dryRun=All",
	                 .body = json,
	                 .body_len = strlen(json)};
	tl_do(k, &q, r);
	free(json);
	if (real && r->http_status == 201 && NCREATED < MAX_CREATED)
		CREATED[NCREATED++] = strdup(r->obj->name);
}

/* Expects the AppWrapper refused with status and a message holding each
 * of the NULL-terminated needles (and naming the policy that refused). */
static void expect_refused(tl_kube *k, const char *yaml, long status, const char *policy, ...)
{
	tl_res r;
	aw_post(k, yaml, 0, &r);
	cr_assert_eq(r.http_status, status, "expected %ld, got %ld %s: %s", status, r.http_status,
	             r.reason, r.message);
	char named[160];
	snprintf(named, sizeof(named), "'%s%s'", policy, SUFFIX);
	cr_expect(has(r.message, named), "not refused by %s: %s", named, r.message);
	va_list ap;
	va_start(ap, policy);
	for (const char *n; (n = va_arg(ap, const char *));)
		cr_expect(has(r.message, n), "message lacks \"%s\": %s", n, r.message);
	va_end(ap);
	tl_res_clear(&r);
}

static long aw_patch(const char *name, const char *patch, char *msg, size_t n)
{
	tl_res r;
	sf_kube_req q = {.method = "PATCH",
	                 .gvr = &SF_GVR_APPWRAPPERS,
	                 .ns = NS,
	                 .name = name,
	                 .body = patch,
	                 .body_len = strlen(patch),
	                 .content_type = "application/merge-patch+json"};
	tl_do(&K, &q, &r);
	long st = r.http_status;
	if (msg)
		snprintf(msg, n, "%s", r.message);
	tl_res_clear(&r);
	return st;
}

/* Retries the dry-run POST of yaml as k until pred accepts the answer
 * (there is no event for "policy compiled" or "binding in effect"). */
static void await_answer(tl_kube *k, const char *yaml, int (*pred)(const tl_res *r),
                         const char *what)
{
	int64_t end = sf_mono_ns() + (int64_t)AWAIT_MS * 1000000;
	tl_res r;
	for (;;) {
		aw_post(k, yaml, 0, &r);
		int ok = pred(&r);
		if (ok || sf_mono_ns() > end)
			break;
		tl_res_clear(&r);
		usleep(100 * 1000);
	}
	cr_assert(pred(&r), "%s: not within %d ms; last answer %ld %s", what, AWAIT_MS,
	          r.http_status, r.message);
	tl_res_clear(&r);
}

static void delete_obj(const sf_gvr *gvr, const char *name)
{
	tl_res r;
	sf_kube_req q = {
	    .method = "DELETE", .gvr = gvr, .ns = gvr->namespaced ? NS : NULL, .name = name};
	tl_do(&K, &q, &r);
	cr_expect(r.http_status == 200 || r.http_status == 202 || r.http_status == 404,
	          "DELETE %s %s: %ld %s", gvr->resource, name, r.http_status, r.message);
	tl_res_clear(&r);
}

/* Applies YAML text (Roles, RoleBindings) into NS as the admin. */
static void apply(const char *yaml)
{
	tl_aw_apply_yaml(&K, NS, yaml, NULL, NULL);
}

/* ---- AppWrappers ---- */

#define AW_HEAD                                                                                    \
	"apiVersion: workload.codeflare.dev/v1beta2\nkind: AppWrapper\nmetadata:\n  name: %s\n"    \
	"%sspec:\n%s  components:\n"
/* The start of an AppWrapper named n, up to its first component. */
#define AW_OPEN(n)                                                                                 \
	"apiVersion: workload.codeflare.dev/v1beta2\nkind: AppWrapper\nmetadata: {name: " n "}\n"  \
	"spec:\n  components:\n"
#define POD_COMPONENT                                                                              \
	"  - template:\n      apiVersion: v1\n      kind: Pod\n      metadata: {name: p%d%s}\n"    \
	"      spec: {containers: [{name: main, image: busybox}]}\n"
#define JOB_COMPONENT                                                                              \
	"  - template:\n      apiVersion: batch/v1\n      kind: Job\n      metadata: {name: j}\n"  \
	"      spec:\n        template:\n          spec:\n            restartPolicy: Never\n"      \
	"            containers: [{name: main, image: busybox}]\n"

/* An AppWrapper of npods Pod components (malloc'd); meta and spec are
 * extra lines under metadata: and spec: ("" for none); ns_field an extra
 * flow-mapping entry of each Pod's metadata (e.g. ", namespace: x"). */
static char *pods_aw(const char *name, int npods, const char *meta, const char *spec,
                     const char *ns_field)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_buf_printf(&b, AW_HEAD, name, meta, spec), 0);
	for (int i = 0; i < npods; i++)
		cr_assert_eq(sf_buf_printf(&b, POD_COMPONENT, i, ns_field), 0);
	return sf_buf_detach(&b, NULL);
}

static char *job_aw(const char *name)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_buf_printf(&b, AW_HEAD JOB_COMPONENT, name, "", ""), 0);
	return sf_buf_detach(&b, NULL);
}

/* ---- probes for set-up ---- */

static int probe_structure(const tl_res *r)
{
	char named[160];
	snprintf(named, sizeof(named), "'%s%s'", POLICY, SUFFIX);
	return r->http_status == 422 && has(r->message, named);
}

static int probe_mutation(const tl_res *r)
{
	return r->http_status == 201 && r->obj &&
	       sf_jv_ok(sf_jv_get(sf_jv_path(sf_obj_root(r->obj), "metadata.labels"),
	                          "workload.codeflare.dev/user"));
}

static int probe_rbac(const tl_res *r)
{
	char named[160];
	snprintf(named, sizeof(named), "'%s%s'", RBAC_POLICY, SUFFIX);
	return r->http_status == 403 && has(r->message, named);
}

#define AW_USER_ROLE                                                                               \
	"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: aw-user}\n"        \
	"rules:\n- apiGroups: [workload.codeflare.dev]\n  resources: [appwrappers]\n"              \
	"  verbs: [create, get, list, watch, update, patch]\n---\n"                                \
	"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: aw-user}\n" \
	"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: aw-user}\n"              \
	"subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: " LOWPRIV "}]\n"

static void setup(void)
{
	srand((unsigned)sf_mono_ns());
	sf_log_set_level(getenv("SF_DEBUG") ? SF_LOG_DEBUG : SF_LOG_WARN);
	tl_kube_open(&K, NULL, NULL);
	tl_kube_open(&L, tl_env("STEADFAST_LOWPRIV_KUBECONFIG"), NULL);
	tl_aw_install_crd(&K);
	tl_namespace(&K, "adm", NS, sizeof(NS));
	snprintf(SUFFIX, sizeof(SUFFIX), ".%s", NS);
	/* the parameters first: the bindings deny everything without them */
	char *params = read_src(ADM_DIR "/params.yaml");
	char nsline[128];
	snprintf(nsline, sizeof(nsline), "namespace: %s", NS);
	char *moved = replace_all(params, "namespace: steadfast-system", nsline);
	tl_aw_apply_yaml(&K, NS, moved, NULL, NULL);
	free(params);
	free(moved);
	static const char *const files[] = {"validating_policy.yaml", "user_rbac_policy.yaml",
	                                    "mutating_policy.yaml", NULL};
	for (size_t i = 0; files[i]; i++) {
		char *t = policy_text(files[i]);
		tl_aw_apply_yaml(&K, NULL, t, NULL, NULL);
		free(t);
	}
	apply(AW_USER_ROLE);
	/* in force: each policy answers */
	static const char zero[] = AW_OPEN(
	    "probe") "  - template: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n";
	await_answer(&K, zero, probe_structure, "the validating policy");
	char *pod = pods_aw("probe", 1, "", "", "");
	await_answer(&K, pod, probe_mutation, "the mutating policy");
	await_answer(&L, pod, probe_rbac, "the user RBAC policy");
	free(pod);
}

static void teardown(void)
{
	/* the finalizer the policy added would hold the namespace forever:
	 * no controller runs here to remove it */
	for (size_t i = 0; i < NCREATED; i++) {
		aw_patch(CREATED[i], "{\"metadata\":{\"finalizers\":null}}", NULL, 0);
		free(CREATED[i]);
	}
	NCREATED = 0;
	char name[160];
	snprintf(name, sizeof(name), POLICY "%s", SUFFIX);
	delete_obj(&VAPBS, name);
	delete_obj(&VAPS, name);
	delete_obj(&MAPBS, name);
	delete_obj(&MAPS, name);
	snprintf(name, sizeof(name), RBAC_POLICY "%s", SUFFIX);
	delete_obj(&VAPBS, name);
	delete_obj(&VAPS, name);
	tl_namespace_delete(&K, NS);
	tl_kube_close(&L);
	tl_kube_close(&K);
}

TestSuite(admission, .init = setup, .fini = teardown, .timeout = 180);

/* ---- the user's rights ---- */

#define JOBS_ROLE                                                                                  \
	"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: jobs}\n"           \
	"rules:\n- {apiGroups: [batch], resources: [jobs], verbs: [create]}\n---\n"                \
	"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: jobs}\n"    \
	"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: jobs}\n"                 \
	"subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: " LOWPRIV "}]\n"

Test(admission, user_without_pod_rights_is_refused_a_wrapped_pod)
{
	char *pod = pods_aw("wrapped-pod", 1, "", "", "");
	expect_refused(&L, pod, 403, RBAC_POLICY, "spec.components[0].template",
	               "user " LOWPRIV " is not authorized to create pods in namespace", NS,
	               "(kind Pod)", NULL);
	/* the same AppWrapper from a user who may create pods is accepted */
	tl_res r;
	aw_post(&K, pod, 0, &r);
	cr_assert_eq(r.http_status, 201, "admin: %ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	free(pod);
	/* with jobs granted, a Job then a Pod: the Pod, at index 1, is named */
	apply(JOBS_ROLE);
	char *job = job_aw("job-then-pod");
	await_answer(&L, job, probe_mutation, "jobs granted to " LOWPRIV);
	char *mixed = NULL;
	cr_assert(asprintf(&mixed, "%s" POD_COMPONENT, job, 1, "") > 0);
	expect_refused(&L, mixed, 403, RBAC_POLICY, "spec.components[1].template",
	               "not authorized to create pods", NULL);
	free(job);
	free(mixed);
}

#define JOBSETS_ROLE                                                                               \
	"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: jobsets}\n"        \
	"rules:\n- {apiGroups: [jobset.x-k8s.io], resources: [jobsets], verbs: [create]}\n---\n"   \
	"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: jobsets}\n" \
	"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: jobsets}\n"              \
	"subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: " LOWPRIV "}]\n"

static int refused_jobsets(const tl_res *r)
{
	return r->http_status == 403 && has(r->message, "not authorized to create jobsets");
}

/* A CRD kind is checked as a built-in one is: the authorizer is asked for
 * the resource the ConfigMap maps it to, whether or not the CRD is
 * installed (the AppWrapper is what is admitted). */
Test(admission, crd_kind_is_authorized_like_a_built_in)
{
	char *jobset = read_src(TL_AW_SAMPLES_DIR "/jobset.yaml");
	await_answer(&L, jobset, refused_jobsets, "refusal of jobsets");
	expect_refused(&L, jobset, 403, RBAC_POLICY, "spec.components[0].template",
	               "user " LOWPRIV " is not authorized to create jobsets.jobset.x-k8s.io in "
	               "namespace",
	               NS, "(kind JobSet.jobset.x-k8s.io)", NULL);
	apply(JOBSETS_ROLE);
	await_answer(&L, jobset, probe_mutation, "jobsets granted to " LOWPRIV);
	tl_res r;
	aw_post(&L, jobset, 1, &r);
	cr_assert_eq(r.http_status, 201, "%ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	free(jobset);
}

static int refused_jobs(const tl_res *r)
{
	return r->http_status == 403 && has(r->message, "not authorized to create jobs.batch");
}

Test(admission, job_allowed_once_the_user_may_create_jobs)
{
	char *job = job_aw("wrapped-job");
	/* before: refused, naming the resource and its group */
	await_answer(&L, job, refused_jobs, "refusal of jobs");
	expect_refused(&L, job, 403, RBAC_POLICY, "spec.components[0].template",
	               "user " LOWPRIV " is not authorized to create jobs.batch in namespace", NS,
	               "(kind Job.batch)", NULL);
	apply(JOBS_ROLE);
	await_answer(&L, job, probe_mutation, "jobs granted to " LOWPRIV);
	/* and stored for real */
	tl_res r;
	aw_post(&L, job, 1, &r);
	cr_assert_eq(r.http_status, 201, "%ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	free(job);
}

Test(admission, kind_without_resource_mapping_is_refused_naming_the_kind)
{
	static const char yaml[] =
	    AW_OPEN("widget") "  - template: {apiVersion: example.com/v1, kind: Widget, metadata: "
	                      "{name: w},\n"
	                      "               spec: {template: {spec: {containers: []}}}}\n"
	                      "    podSets: [{path: template.spec.template}]\n";
	/* refused even for the admin, who may create anything */
	expect_refused(&K, yaml, 403, RBAC_POLICY, "spec.components[0].template",
	               "kind Widget.example.com (apiVersion example.com/v1)",
	               "no resource in ConfigMap steadfast-admission", NULL);
}

/* One component of each kind: name, apiVersion, kind, extra fields. */
static const char *const KINDS[][3] = {
    {"v1", "Pod", "spec: {containers: [{name: main, image: busybox}]}"},
    {"v1", "Service", "spec: {ports: [{port: 80}]}"},
    {"v1", "ConfigMap", "data: {a: b}"},
    {"v1", "Secret", "data: {}"},
    {"v1", "ServiceAccount", "automountServiceAccountToken: false"},
    {"v1", "PersistentVolumeClaim",
     "spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}"},
    {"apps/v1", "ReplicaSet", "spec: {}"},
    {"apps/v1", "Deployment", "spec: {}"},
    {"apps/v1", "StatefulSet", "spec: {}"},
    {"batch/v1", "Job", "spec: {template: {spec: {containers: []}}}"},
    {"jobset.x-k8s.io/v1alpha2", "JobSet", "spec: {}"},
};

static char *kinds_aw(const char *name, size_t n)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_buf_printf(&b, AW_HEAD, name, "", ""), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(sf_buf_printf(&b,
		                           "  - template: {apiVersion: %s, kind: %s, metadata: "
		                           "{name: c%zu}, %s}\n",
		                           KINDS[i][0], KINDS[i][1], i, KINDS[i][2]),
		             0);
	return sf_buf_detach(&b, NULL);
}

/* The authorizer is consulted once per distinct resource, within the API
 * server's cost limits: 10 kinds are checked, an 11th is refused rather
 * than left unchecked, and many components of one kind cost one check. */
Test(admission, authorization_is_bounded_by_distinct_kinds_not_components)
{
	char *ten = kinds_aw("ten-kinds", 10);
	tl_res r;
	aw_post(&K, ten, 0, &r);
	cr_expect_eq(r.http_status, 201, "10 kinds: %ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	free(ten);
	char *eleven = kinds_aw("eleven-kinds", 11);
	expect_refused(&K, eleven, 403, RBAC_POLICY,
	               "spec.components: 11 different kinds of component; at most 10", NULL);
	free(eleven);
	/* 19 Pods are one check: the pod-set limit answers, not a cost error */
	char *pods = pods_aw("many", 19, "", "", "");
	aw_post(&L, pods, 0, &r);
	cr_expect(r.http_status == 403 || r.http_status == 422, "%ld %s", r.http_status, r.message);
	cr_expect(!has(r.message, "cost"), "%s", r.message);
	tl_res_clear(&r);
	free(pods);
}

/* Every kind of the ConfigMap that this cluster serves maps to the
 * resource discovery names for it. */
typedef struct resolved {
	int done, err;
	char resource[64];
} resolved;

static void on_resolved(void *ud, int err, const char *errmsg, const sf_gvr *gvr)
{
	(void)errmsg;
	resolved *r = ud;
	r->err = err;
	if (!err)
		snprintf(r->resource, sizeof(r->resource), "%s", gvr->resource);
	r->done = 1;
}

Test(admission, kind_mapping_agrees_with_discovery)
{
	char *json = NULL;
	{
		char *text = read_src(ADM_DIR "/params.yaml");
		char err[256] = "";
		json = sf_yaml_one_to_json(text, strlen(text), err, sizeof(err));
		cr_assert(json, "%s", err);
		free(text);
	}
	sf_jv data = sf_jv_get(sf_jv_root(json, strlen(json)), "data");
	sf_jv_iter it = sf_jv_iter_init(data);
	sf_jv key, val;
	int checked = 0;
	while (sf_jv_next(&it, &key, &val)) {
		char k[128] = "", res[64] = "", kind[64], av[128];
		sf_jv_str(key, k, sizeof(k));
		if (k[0] < 'A' || k[0] > 'Z')
			continue; /* a setting, not a kind */
		sf_jv_str(val, res, sizeof(res));
		const char *dot = strchr(k, '.');
		snprintf(kind, sizeof(kind), "%.*s", dot ? (int)(dot - k) : (int)strlen(k), k);
		/* the groups served here have a v1 */
		snprintf(av, sizeof(av), "%s%sv1", dot ? dot + 1 : "", dot ? "/" : "");
		resolved r = {0};
		cr_assert_eq(sf_kube_resolve(K.client, av, kind, on_resolved, &r), 0);
		cr_assert_eq(tl_run_until(&K.loop, &r.done, 30000), 0);
		if (r.err)
			continue; /* not installed on this cluster */
		cr_expect_str_eq(r.resource, res, "%s: discovery says %s, the ConfigMap %s", k,
		                 r.resource, res);
		checked++;
	}
	/* core, apps and batch kinds at least */
	cr_assert_geq(checked, 9, "only %d kinds could be checked", checked);
	free(json);
}

/* ---- structure ---- */

Test(admission, nineteen_pod_sets_are_refused_naming_spec_components)
{
	char *aw = pods_aw("many", 19, "", "", "");
	expect_refused(&K, aw, 422, POLICY, "spec.components: components contain 19 pod sets",
	               "at most 8", NULL);
	free(aw);
	/* 8 is the limit, not an error */
	aw = pods_aw("eight", 8, "", "", "");
	tl_res r;
	aw_post(&K, aw, 0, &r);
	cr_expect_eq(r.http_status, 201, "8 pod sets: %ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	free(aw);
	/* declared pod sets count when they exceed the inferred ones */
	static const char declared[] = AW_OPEN(
	    "declared") "  - template: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n"
	                "    podSets: [{path: a}, {path: b}, {path: c}, {path: d}, {path: e},\n"
	                "              {path: f}, {path: g}, {path: h}, {path: i}]\n";
	expect_refused(&K, declared, 422, POLICY, "components contain 9 pod sets", NULL);
}

Test(admission, no_pod_set_is_refused)
{
	static const char yaml[] =
	    AW_OPEN("empty") "  - template: {apiVersion: v1, kind: Service, metadata: {name: s},\n"
	                     "               spec: {ports: [{port: 80}]}}\n";
	expect_refused(&K, yaml, 422, POLICY, "spec.components: components contain no pod sets",
	               NULL);
}

Test(admission, pod_set_without_path_is_refused)
{
	static const char yaml[] =
	    AW_OPEN("nopath") "  - template: {apiVersion: v1, kind: Pod, metadata: {name: p},\n"
	                      "               spec: {containers: [{name: main, image: busybox}]}}\n"
	                      "    podSets: [{path: template}, {path: ''}]\n";
	expect_refused(&K, yaml, 422, POLICY, "spec.components[0].podSets[1].path", NULL);
}

/* A Job of 3 parallel pods and 2 completions (2 pods inferred) declaring
 * podSets; the rest of the AppWrapper around it. */
#define JOB_DECLARING(podsets)                                                                     \
	AW_OPEN("declaring")                                                                       \
	"  - template: {apiVersion: batch/v1, kind: Job, metadata: {name: j},\n"                   \
	"               spec: {parallelism: 3, completions: 2, template: {spec: {\n"               \
	"                 restartPolicy: Never, containers: [{name: main, image: busybox}]}}}}\n"  \
	"    podSets: " podsets "\n"

Test(admission, declared_pod_sets_contradicting_the_inferred_are_refused)
{
	static const struct {
		const char *yaml, *why;
	} bad[] = {
	    {JOB_DECLARING("[{path: template.spec.template, replicas: 3}]"),
	     "spec.components[0].podSets: the pod set with path template.spec.template declares "
	     "other replicas than the 2 inferred for Job"},
	    {JOB_DECLARING("[{path: template.spec.template}]"), "other replicas than the 2"},
	    {JOB_DECLARING("[{path: template.spec.x, replicas: 2}]"),
	     "spec.components[0].podSets: no pod set declared with path template.spec.template"},
	    {JOB_DECLARING("[{path: template.spec.template, replicas: 2}, {path: template}]"),
	     "spec.components[0].podSets: 2 pod sets declared, but 1 inferred for Job"},
	    {JOB_DECLARING("[{path: template.spec.template, replicas: 2},\n"
	                   "              {path: template.spec.template, replicas: 2}]"),
	     "spec.components[0].podSets: duplicate pod sets with path template.spec.template"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_refused(&K, bad[i].yaml, 422, POLICY, bad[i].why, NULL);
	/* what inference says, declared, is fine; so is any kind it does not know */
	static const char *const good[] = {
	    JOB_DECLARING("[{path: template.spec.template, replicas: 2}]"),
	    AW_OPEN(
	        "jobset") "  - template:\n"
	                  "      apiVersion: jobset.x-k8s.io/v1alpha2\n      kind: JobSet\n"
	                  "      metadata: {name: js}\n      spec:\n        replicatedJobs:\n"
	                  "        - name: a\n          replicas: 2\n          template:\n"
	                  "            spec: {parallelism: 2, template: {spec: {containers: []}}}\n"
	                  "    podSets:\n"
	                  "    - {path: 'template.spec.replicatedJobs[0].template.spec.template',"
	                  " replicas: 4}\n",
	    AW_OPEN("unknown-kind") "  - template: {apiVersion: apps/v1, kind: ReplicaSet, "
	                            "metadata: {name: r},\n"
	                            "               spec: {template: {spec: {containers: []}}}}\n"
	                            "    podSets: [{path: template.spec.template, replicas: 5}]\n",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		tl_res r;
		aw_post(&K, good[i], 0, &r);
		cr_expect_eq(r.http_status, 201, "good %zu: %ld %s", i, r.http_status, r.message);
		tl_res_clear(&r);
	}
}

/* A ReplicaSet (a kind nothing is inferred for) declaring one pod set. */
#define RS_DECLARING(path)                                                                         \
	AW_OPEN("rs")                                                                              \
	"  - template:\n      apiVersion: apps/v1\n      kind: ReplicaSet\n"                       \
	"      metadata: {name: r}\n      spec:\n        replicas: 2\n"                            \
	"        template:\n          spec: {containers: [{name: c, image: busybox}]}\n"           \
	"        list: [{a: 1}, {template: {spec: {}}}]\n"                                         \
	"    podSets: [{path: '" path "', replicas: 2}]\n"

Test(admission, pod_set_path_not_leading_to_a_pod_template_is_refused)
{
	static const struct {
		const char *yaml, *why;
	} bad[] = {
	    {RS_DECLARING("template.spec.nothere"), "nothing at that path"},
	    {RS_DECLARING("template.spec.replicas"), "not a map"},
	    {RS_DECLARING("template.metadata"),
	     "content at template.metadata does not contain a spec"},
	    {RS_DECLARING("template.spec.template.spec.containers"), "not a map"},
	    {RS_DECLARING("template.spec.list[0]"), "does not contain a spec"},
	    {RS_DECLARING("template.spec.list[2].template"), "nothing at that path"},
	    {RS_DECLARING("template.spec.template[0]"), "nothing at that path"},
	    {RS_DECLARING("template.spec.list[x].template"), "nothing at that path"},
	    {RS_DECLARING("spec.template"), "first element of the path must be 'template'"},
	    {RS_DECLARING("template.a.b.c.d.e.f.g.h.i.j.k.l"), "more than 12 path elements"},
	    /* an inferred path is walked too: a Job without a pod template */
	    {AW_OPEN("job-without-template") "  - template: {apiVersion: batch/v1, kind: Job, "
	                                     "metadata: {name: j}, spec: {parallelism: 1}}\n",
	     "spec.components[0].template: error inferring pod sets: template.spec.template does "
	     "not refer to a v1.PodSpecTemplate: nothing at that path"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_refused(&K, bad[i].yaml, 422, POLICY, bad[i].why, NULL);
	/* the field and the path are named */
	expect_refused(
	    &K, RS_DECLARING("template.spec.nothere"), 422, POLICY,
	    "spec.components[0].podSets[0].path: template.spec.nothere does not refer to "
	    "a v1.PodSpecTemplate",
	    NULL);
	static const char *const good[] = {
	    RS_DECLARING("template.spec.template"),
	    RS_DECLARING("template.spec.list[1].template"),
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		tl_res r;
		aw_post(&K, good[i], 0, &r);
		cr_expect_eq(r.http_status, 201, "good %zu: %ld %s", i, r.http_status, r.message);
		tl_res_clear(&r);
	}
}

Test(admission, nested_appwrapper_is_refused)
{
	static const char yaml[] =
	    AW_OPEN("outer") "  - template: {apiVersion: v1, kind: Pod, metadata: {name: p},\n"
	                     "               spec: {containers: [{name: main, image: busybox}]}}\n"
	                     "  - template:\n      apiVersion: workload.codeflare.dev/v1beta2\n"
	                     "      kind: AppWrapper\n      metadata: {name: inner}\n"
	                     "      spec: {components: []}\n";
	expect_refused(&K, yaml, 403, POLICY, "spec.components[1].template",
	               "nested AppWrappers are forbidden", NULL);
}

Test(admission, component_in_another_namespace_is_refused)
{
	char *aw = pods_aw("foreign", 2, "", "", ", namespace: kube-system");
	expect_refused(&K, aw, 403, POLICY, "spec.components[0].template.metadata.namespace",
	               "kube-system is not the AppWrapper namespace", NULL);
	free(aw);
	/* its own namespace, written out, is fine */
	char own[96];
	snprintf(own, sizeof(own), ", namespace: %s", NS);
	aw = pods_aw("own", 1, "", "", own);
	tl_res r;
	aw_post(&K, aw, 0, &r);
	cr_expect_eq(r.http_status, 201, "%ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	free(aw);
}

/* One rule for "ours", shared by admission and controller: spec.managedBy
 * unset or the controller's name. "" is neither: the controller would
 * never reconcile it (not even its deletion) while the mutating policy
 * added the finalizer, so it could never be deleted. Refused at create,
 * naming the field; the controller's name is fine. */
Test(admission, managed_by_empty_is_refused_at_create)
{
	char *aw = pods_aw("mby", 1, "", "  managedBy: \"\"\n", "");
	expect_refused(&K, aw, 422, POLICY, "spec.managedBy", NULL);
	free(aw);
	aw = pods_aw("mby-ours", 1, "",
	             "  managedBy: workload.codeflare.dev/appwrapper-controller\n", "");
	tl_res r;
	aw_post(&K, aw, 0, &r);
	cr_expect_eq(r.http_status, 201, "%ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	free(aw);
}

/* ---- update ---- */

Test(admission, immutable_fields_cannot_be_updated)
{
	char *aw = pods_aw("stored", 1, "", "", "");
	tl_res r;
	aw_post(&K, aw, 1, &r);
	cr_assert_eq(r.http_status, 201, "%ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	free(aw);
	static const struct {
		const char *patch, *field;
	} bad[] = {
	    {"{\"spec\":{\"components\":[{\"template\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	     "\"metadata\":{\"name\":\"p0\"},\"spec\":{\"containers\":[{\"name\":\"main\","
	     "\"image\":\"other\"}]}}}]}}",
	     "spec.components[0].template: immutable"},
	    {"{\"spec\":{\"components\":[{\"template\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	     "\"metadata\":{\"name\":\"p0\"},\"spec\":{\"containers\":[{\"name\":\"main\","
	     "\"image\":\"busybox\"}]}},\"podSets\":[{\"path\":\"template\",\"replicas\":2}]}]}}",
	     "spec.components[0].podSets: the number of pod sets, their paths and replicas"},
	    {"{\"spec\":{\"components\":[]}}", "spec.components: the number of components"},
	    {"{\"spec\":{\"managedBy\":\"example.com/other\"}}", "spec.managedBy: immutable"},
	    {"{\"metadata\":{\"labels\":{\"workload.codeflare.dev/user\":\"mallory\"}}}",
	     "workload.codeflare.dev/user and workload.codeflare.dev/userid are immutable"},
	    {"{\"metadata\":{\"labels\":{\"workload.codeflare.dev/userid\":\"42\"}}}",
	     "workload.codeflare.dev/userid are immutable"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char msg[512];
		long st = aw_patch("stored", bad[i].patch, msg, sizeof(msg));
		/* an empty components list is refused by the CRD schema first */
		if (strstr(bad[i].patch, "[]"))
			cr_expect(st == 422 || st == 403, "patch %zu: %ld %s", i, st, msg);
		else
			cr_expect(st == 403 && has(msg, bad[i].field),
			          "patch %zu: %ld %s (want 403 naming %s)", i, st, msg,
			          bad[i].field);
	}
	/* what Kueue and the controller change is still allowed */
	char msg[512];
	cr_expect_eq(aw_patch("stored",
	                      "{\"spec\":{\"components\":[{\"template\":{\"apiVersion\":\"v1\","
	                      "\"kind\":\"Pod\",\"metadata\":{\"name\":\"p0\"},\"spec\":{"
	                      "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}},"
	                      "\"podSetInfos\":[{\"labels\":{\"kueue\":\"admitted\"}}]}]}}",
	                      msg, sizeof(msg)),
	             200, "podSetInfos: %s", msg);
	cr_expect_eq(aw_patch("stored", "{\"spec\":{\"suspend\":false}}", msg, sizeof(msg)), 200,
	             "%s", msg);
	cr_expect_eq(aw_patch("stored",
	                      "{\"metadata\":{\"labels\":{\"kueue.x-k8s.io/queue-name\":\"q2\"}}}",
	                      msg, sizeof(msg)),
	             200, "%s", msg);
	cr_expect_eq(aw_patch("stored", "{\"metadata\":{\"finalizers\":null}}", msg, sizeof(msg)),
	             200, "%s", msg);
}

/* ---- create-time defaults ---- */

static const char *label(const sf_obj *o, const char *key, char *buf, size_t n)
{
	buf[0] = '\0';
	if (sf_jv_str(sf_jv_get(sf_jv_path(sf_obj_root(o), "metadata.labels"), key), buf, n) < 0)
		return NULL;
	return buf;
}

static int has_finalizer(const sf_obj *o)
{
	sf_jv f = sf_jv_path(sf_obj_root(o), "metadata.finalizers");
	sf_jv_iter it = sf_jv_iter_init(f);
	sf_jv v;
	while (sf_jv_next(&it, NULL, &v))
		if (sf_jv_streq(v, SF_AW_FINALIZER))
			return 1;
	return 0;
}

static int suspended(const sf_obj *o)
{
	return sf_jv_type(sf_jv_path(sf_obj_root(o), "spec.suspend")) == SF_JSON_TRUE;
}

Test(admission, create_sets_user_labels_finalizer_and_suspend)
{
	/* a ServiceAccount user: a name with ':' and a uid */
	apply("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: submitter}\n---\n"
	      "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: submitter}\n"
	      "rules:\n- {apiGroups: [workload.codeflare.dev], resources: [appwrappers],"
	      " verbs: [create]}\n- {apiGroups: [''], resources: [pods], verbs: [create]}\n---\n"
	      "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n"
	      "metadata: {name: submitter}\n"
	      "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: submitter}\n"
	      "subjects: [{kind: ServiceAccount, name: submitter}]\n");
	tl_res r;
	static const sf_gvr sas = {"", "v1", "serviceaccounts", 1};
	sf_kube_req get = {.method = "GET", .gvr = &sas, .ns = NS, .name = "submitter"};
	tl_do(&K, &get, &r);
	cr_assert_eq(r.http_status, 200, "%s", r.message);
	char uid[64];
	snprintf(uid, sizeof(uid), "%s", r.obj->uid);
	tl_res_clear(&r);

	char *tok = tl_mint_token(&K, NS, "submitter");
	char *kc = NULL, path[] = "/tmp/steadfast-adm-kubeconfig-XXXXXX";
	cr_assert(asprintf(&kc,
	                   "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
	                   "    server: %s\n    certificate-authority: %s\nusers:\n- name: sa\n"
	                   "  user:\n    token: %s\ncontexts:\n- name: sa\n  context:\n"
	                   "    cluster: c\n    user: sa\ncurrent-context: sa\n",
	                   tl_env("STEADFAST_APISERVER"), tl_env("STEADFAST_CA"), tok) > 0);
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, kc, strlen(kc)), (ssize_t)strlen(kc));
	close(fd);
	free(kc);
	free(tok);
	tl_kube S;
	tl_kube_open(&S, path, NULL);
	unlink(path);

	/* labels the request carried are replaced, the queue name kept */
	char *aw = pods_aw("by-sa", 1,
	                   "  labels: {workload.codeflare.dev/user: someone-else,\n"
	                   "           kueue.x-k8s.io/queue-name: team-a}\n",
	                   "  suspend: false\n", "");
	await_answer(&S, aw, probe_mutation, "the ServiceAccount's rights");
	aw_post(&S, aw, 1, &r);
	cr_assert_eq(r.http_status, 201, "%ld %s", r.http_status, r.message);
	char v[128], want[128];
	snprintf(want, sizeof(want), "system_serviceaccount_%s_submitter", NS);
	cr_expect_str_eq(label(r.obj, "workload.codeflare.dev/user", v, sizeof(v)), want);
	cr_expect_str_eq(label(r.obj, "workload.codeflare.dev/userid", v, sizeof(v)), uid);
	cr_expect_str_eq(label(r.obj, "kueue.x-k8s.io/queue-name", v, sizeof(v)), "team-a");
	cr_expect(has_finalizer(r.obj), "no finalizer: %s", r.obj->json);
	cr_expect(suspended(r.obj), "not suspended: %s", r.obj->json);
	tl_res_clear(&r);
	free(aw);
	tl_kube_close(&S);

	/* a certificate user has no uid: the label is empty */
	aw = pods_aw("by-admin", 1, "", "", "");
	aw_post(&K, aw, 0, &r);
	cr_assert_eq(r.http_status, 201, "%ld %s", r.http_status, r.message);
	cr_expect_str_eq(label(r.obj, "workload.codeflare.dev/user", v, sizeof(v)),
	                 "steadfast-admin");
	cr_expect_str_eq(label(r.obj, "workload.codeflare.dev/userid", v, sizeof(v)), "");
	/* manageJobsWithoutQueueName is false in the shipped ConfigMap (v1.2.1's
	 * rule, Kueue's default): no queue name, not Kueue's, not suspended */
	cr_expect(label(r.obj, "kueue.x-k8s.io/queue-name", v, sizeof(v)) == NULL,
	          "a queue name appeared: %s", v);
	cr_expect(!suspended(r.obj), "suspended without a queue name: %s", r.obj->json);
	cr_expect(has_finalizer(r.obj), "no finalizer: %s", r.obj->json);
	tl_res_clear(&r);
	free(aw);

	/* another controller's AppWrapper gets no finalizer */
	aw = pods_aw("elsewhere", 1, "", "  managedBy: example.com/other\n", "");
	aw_post(&K, aw, 0, &r);
	cr_assert_eq(r.http_status, 201, "%ld %s", r.http_status, r.message);
	cr_expect(!has_finalizer(r.obj), "finalizer on another controller's: %s", r.obj->json);
	tl_res_clear(&r);
	free(aw);
}

/* The kinds the samples must wrap between them: upstream's samples' shapes
 * and the other kinds the controller infers pod sets for. */
static const char *const SAMPLE_KINDS[] = {
    "v1 Pod",
    "v1 Service",
    "batch/v1 Job",
    "apps/v1 Deployment",
    "apps/v1 StatefulSet",
    "jobset.x-k8s.io/v1alpha2 JobSet",
    "kubeflow.org/v1 PyTorchJob",
    "ray.io/v1 RayCluster",
    "ray.io/v1 RayJob",
    "leaderworkerset.x-k8s.io/v1 LeaderWorkerSet",
};
#define NSAMPLE_KINDS (sizeof(SAMPLE_KINDS) / sizeof(SAMPLE_KINDS[0]))

/* Every sample of the repository, submitted by the admin, is admitted
 * with the documented defaults and nothing else changed in its spec. */
Test(admission, every_sample_is_admitted_with_its_defaults, .timeout = 240)
{
	char **files;
	size_t n = tl_aw_list_yaml(TL_AW_SAMPLES_DIR, &files);
	cr_assert_geq(n, 15, "only %zu samples", n);
	int seen[NSAMPLE_KINDS] = {0};
	int declared = 0, several = 0;
	for (size_t i = 0; i < n; i++) {
		char *yaml = read_src(files[i]);
		char *sent = tl_aw_yaml_json(files[i]);
		sf_jv sroot = sf_jv_root(sent, strlen(sent));
		tl_res r;
		aw_post(&K, yaml, 1, &r);
		cr_assert_eq(r.http_status, 201, "%s: %ld %s", files[i], r.http_status, r.message);
		char v[128];
		cr_expect_str_eq(label(r.obj, "workload.codeflare.dev/user", v, sizeof(v)),
		                 "steadfast-admin", "%s", files[i]);
		cr_expect_str_eq(label(r.obj, "workload.codeflare.dev/userid", v, sizeof(v)), "",
		                 "%s", files[i]);
		cr_expect_str_eq(label(r.obj, "kueue.x-k8s.io/queue-name", v, sizeof(v)),
		                 "default-queue", "%s", files[i]);
		cr_expect(has_finalizer(r.obj), "%s: no finalizer", files[i]);
		cr_expect(suspended(r.obj), "%s: not suspended", files[i]);
		/* the components as sent */
		char where[256];
		sf_jv scomps = sf_jv_path(sroot, "spec.components");
		sf_jv gcomps = sf_jv_path(sf_obj_root(r.obj), "spec.components");
		cr_expect(tl_aw_json_equal(scomps, gcomps, where, sizeof(where)), "%s: %s",
		          files[i], where);
		several += sf_jv_len(scomps) > 1;
		for (size_t c = 0; c < sf_jv_len(scomps); c++) {
			sf_jv comp = sf_jv_at(scomps, c);
			declared += sf_jv_len(sf_jv_get(comp, "podSets")) > 0;
			char av[128] = "", kd[128] = "", key[260];
			sf_jv_str(sf_jv_path(comp, "template.apiVersion"), av, sizeof(av));
			sf_jv_str(sf_jv_path(comp, "template.kind"), kd, sizeof(kd));
			snprintf(key, sizeof(key), "%s %s", av, kd);
			for (size_t k = 0; k < NSAMPLE_KINDS; k++)
				seen[k] += strcmp(key, SAMPLE_KINDS[k]) == 0;
		}
		tl_res_clear(&r);
		free(sent);
		free(yaml);
	}
	for (size_t k = 0; k < NSAMPLE_KINDS; k++)
		cr_expect(seen[k], "no sample wraps a %s", SAMPLE_KINDS[k]);
	cr_expect_geq(declared, 2, "declared podSets in %d components", declared);
	cr_expect(several, "no sample with several components");
	tl_aw_files_free(files, n);
}

static int queue_defaulted(const tl_res *r)
{
	char v[64];
	return r->http_status == 201 && r->obj &&
	       label(r->obj, "kueue.x-k8s.io/queue-name", v, sizeof(v)) &&
	       strcmp(v, "default-queue") == 0 && suspended(r->obj);
}

static int not_suspended(const tl_res *r)
{
	return r->http_status == 201 && r->obj && !suspended(r->obj) &&
	       sf_jv_ok(sf_jv_get(sf_jv_path(sf_obj_root(r->obj), "metadata.labels"),
	                          "workload.codeflare.dev/user"));
}

static int suspended_answer(const tl_res *r)
{
	return r->http_status == 201 && r->obj && suspended(r->obj);
}

Test(admission, default_queue_name_and_kueue_settings_come_from_the_configmap)
{
	char *aw = pods_aw("queued", 1, "", "", "");
	/* manageJobsWithoutQueueName true: Kueue manages every AppWrapper, one
	 * without a queue name waits for it too */
	char all[] = "{\"data\":{\"manageJobsWithoutQueueName\":\"true\"}}";
	tl_res r;
	sf_kube_req q = {.method = "PATCH",
	                 .gvr = &SF_GVR_CONFIGMAPS,
	                 .ns = NS,
	                 .name = "steadfast-admission",
	                 .body = all,
	                 .body_len = strlen(all),
	                 .content_type = "application/merge-patch+json"};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200, "%s", r.message);
	tl_res_clear(&r);
	await_answer(&K, aw, suspended_answer, "manageJobsWithoutQueueName true");
	/* defaultQueueName set: the label appears (parameters are read live) */
	char patch[] = "{\"data\":{\"defaultQueueName\":\"default-queue\","
	               "\"manageJobsWithoutQueueName\":\"false\"}}";
	q.body = patch;
	q.body_len = strlen(patch);
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200, "%s", r.message);
	tl_res_clear(&r);
	await_answer(&K, aw, queue_defaulted, "defaultQueueName");
	/* Kueue integration off: suspend left alone */
	char off[] = "{\"data\":{\"enableKueueIntegrations\":\"false\"}}";
	q.body = off;
	q.body_len = strlen(off);
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200, "%s", r.message);
	tl_res_clear(&r);
	await_answer(&K, aw, not_suspended, "enableKueueIntegrations false");
	free(aw);
}

static int denied_without_params(const tl_res *r)
{
	return r->http_status >= 400 && has(r->message, "no params found");
}

Test(admission, missing_parameters_fail_closed)
{
	delete_obj(&SF_GVR_CONFIGMAPS, "steadfast-admission");
	char *aw = pods_aw("unparameterised", 1, "", "", "");
	await_answer(&K, aw, denied_without_params, "refusal without the ConfigMap");
	free(aw);
}

/* ---- with no controller ---- */

/* Does any webhook of the configurations listed in obj (a List) see
 * AppWrappers? */
static int webhooks_for_appwrappers(const sf_gvr *gvr)
{
	tl_res r;
	sf_kube_req q = {.method = "GET", .gvr = gvr};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200, "list %s: %ld %s", gvr->resource, r.http_status,
	             r.message);
	int found = r.obj && (strstr(r.obj->json, "\"appwrappers\"") ||
	                      strstr(r.obj->json, "workload.codeflare.dev"));
	tl_res_clear(&r);
	return found;
}

Test(admission, enforced_by_the_api_server_with_no_controller)
{
	/* nothing outside the API server is consulted: no webhook is
	 * registered for AppWrappers, and this suite starts no controller */
	cr_assert(!webhooks_for_appwrappers(&VWHS), "a validating webhook sees AppWrappers");
	cr_assert(!webhooks_for_appwrappers(&MWHS), "a mutating webhook sees AppWrappers");
	/* yet each kind of rule answers: validation, authorization, mutation */
	char *aw = pods_aw("many", 9, "", "", "");
	expect_refused(&K, aw, 422, POLICY, "spec.components: components contain 9 pod sets", NULL);
	free(aw);
	aw = pods_aw("lowpriv-pod", 1, "  labels: {kueue.x-k8s.io/queue-name: team-q}\n", "", "");
	expect_refused(&L, aw, 403, RBAC_POLICY, "not authorized to create pods", NULL);
	tl_res r;
	aw_post(&K, aw, 1, &r);
	cr_assert_eq(r.http_status, 201, "%ld %s", r.http_status, r.message);
	cr_expect(has_finalizer(r.obj) && suspended(r.obj), "not defaulted: %s", r.obj->json);
	tl_res_clear(&r);
	free(aw);
}

/* ---- with a controller, then with none ---- */

/* ---- the parameters kept by the leader (admparams.h) ---- */

/* The value of data[key] of this test's parameters ConfigMap into buf: 1,
 * or 0 when the key is absent. */
static int param(const char *key, char *buf, size_t n)
{
	tl_res r;
	sf_kube_req q = {
	    .method = "GET", .gvr = &SF_GVR_CONFIGMAPS, .ns = NS, .name = "steadfast-admission"};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200, "GET the parameters: %ld %s", r.http_status, r.message);
	sf_jv v = sf_jv_get(sf_jv_get(sf_obj_root(r.obj), "data"), key);
	int found = sf_jv_ok(v) && sf_jv_str(v, buf, n) >= 0;
	tl_res_clear(&r);
	return found;
}

/* Waits until data[key] is want (NULL: absent), with a deadline. */
static void await_param(const char *key, const char *want, long ms)
{
	int64_t end = sf_mono_ns() + (int64_t)ms * 1000000;
	char have[256] = "";
	int found;
	for (;;) {
		found = param(key, have, sizeof(have));
		if (want ? found && strcmp(have, want) == 0 : !found)
			return;
		if (sf_mono_ns() > end)
			break;
		usleep(100 * 1000);
	}
	cr_assert_fail("parameter %s: want %s within %ld ms, have %s", key,
	               want ? want : "(absent)", ms, found ? have : "(absent)");
}

/* steadfast_admission_params_syncs_total{result} of c, from its /metrics. */
static long syncs(tl_ctl *c, const char *result)
{
	int port = tl_ctl_port(&K.loop, c, "metrics");
	sf_buf b;
	sf_buf_init(&b, 0);
	long st = tl_ctl_http_get(port, "/metrics", &b);
	cr_assert_eq(st, 200);
	cr_assert_eq(sf_buf_putc(&b, 0), 0);
	char needle[128];
	snprintf(needle, sizeof(needle), "steadfast_admission_params_syncs_total{result=\"%s\"} ",
	         result);
	const char *at = strstr(b.data, needle);
	cr_assert(at, "no %s in /metrics", needle);
	long v = strtol(at + strlen(needle), NULL, 10);
	sf_buf_free(&b);
	return v;
}

static int never(void *ud)
{
	(void)ud;
	return 0;
}

/* Runs the loop until c has counted at least n passes with result. */
static void await_syncs(tl_ctl *c, const char *result, long n, long ms)
{
	int64_t end = sf_mono_ns() + (int64_t)ms * 1000000;
	long have;
	while ((have = syncs(c, result)) < n && sf_mono_ns() < end)
		tl_run_until_fn(&K.loop, never, NULL, 100);
	cr_assert_geq(have, n, "not %ld passes with result %s within %ld ms (have %ld)", n, result,
	              ms, have);
}

/* A controller keeping this test's parameters, passes every second. */
static tl_ctl *params_keeper(const char *id, const char *config)
{
	static const char *const extra[] = {"--admission-params-interval=1s", NULL};
	tl_ctl_opts o = {.ns = NS,
	                 .lease = "steadfast-adm",
	                 .id = id,
	                 .extra = extra,
	                 .config = config,
	                 .shipped_defaults = !config};
	return tl_ctl_start(&K.loop, &o);
}

#define GIZMO_CRD                                                                                  \
	"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"                    \
	"metadata: {name: gizmoes.%s}\n"                                                           \
	"spec:\n  group: %s\n  scope: Namespaced\n"                                                \
	"  names: {plural: gizmoes, singular: gizmo, kind: Gizmo, listKind: GizmoList}\n"          \
	"  versions:\n  - name: v1\n    served: true\n    storage: true\n"                         \
	"    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: "      \
	"true}}\n"
#define GIZMO_AW                                                                                   \
	"apiVersion: workload.codeflare.dev/v1beta2\nkind: AppWrapper\nmetadata: {name: gizmo}\n"  \
	"spec:\n  components:\n  - template: {apiVersion: %s/v1, kind: Gizmo, metadata: {name: "   \
	"g},"                                                                                      \
	" spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}}\n"                  \
	"    podSets: [{path: template.spec.template}]\n"
#define GIZMO_ROLE                                                                                 \
	"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: gizmoes}\n"        \
	"rules:\n- {apiGroups: [%s], resources: [gizmoes], verbs: [create]}\n---\n"                \
	"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: gizmoes}\n" \
	"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gizmoes}\n"              \
	"subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: " LOWPRIV "}]\n"

static char GROUP[96];

static int refused_unmapped(const tl_res *r)
{
	return r->http_status == 403 && has(r->message, "has no resource in ConfigMap");
}

static int refused_gizmoes(const tl_res *r)
{
	char want[160];
	snprintf(want, sizeof(want), "not authorized to create gizmoes.%s", GROUP);
	return r->http_status == 403 && has(r->message, want);
}

static const sf_gvr CRDS = {"apiextensions.k8s.io", "v1", "customresourcedefinitions", 0};

/* A CRD installed after the manifests: its kind is in no shipped line, so
 * admission refuses it as unmapped until the leader, from discovery, adds
 * it; then the user's rights decide, as for a built-in kind. Its line
 * goes when the CRD does (the leader owned it alone). */
Test(admission, a_kind_installed_later_is_mapped_by_the_leader_from_discovery)
{
	snprintf(GROUP, sizeof(GROUP), "%s.example.com", NS);
	char crd[1024], aw[1024], role[1024], key[160], crdname[160];
	snprintf(crd, sizeof(crd), GIZMO_CRD, GROUP, GROUP);
	snprintf(aw, sizeof(aw), GIZMO_AW, GROUP);
	snprintf(role, sizeof(role), GIZMO_ROLE, GROUP);
	snprintf(key, sizeof(key), "Gizmo.%s", GROUP);
	snprintf(crdname, sizeof(crdname), "gizmoes.%s", GROUP);
	tl_aw_apply_yaml(&K, NULL, crd, NULL, NULL);
	tl_aw_wait_established(&K, crdname, 30000);
	/* no replica: the shipped table does not know the kind */
	await_answer(&K, aw, refused_unmapped, "refusal of an unmapped kind");
	char have[64];
	cr_assert_not(param(key, have, sizeof(have)), "%s already mapped", key);
	/* a leader adds it from discovery */
	tl_ctl *c = params_keeper("adm-params", NULL);
	await_param(key, "gizmoes", 20000);
	cr_assert_geq(tl_ctl_count(c, "admission parameters updated from discovery", 0), 1);
	/* now the user's rights decide: refused naming resource, kind and namespace */
	char kind[200];
	snprintf(kind, sizeof(kind), "(kind %s)", key);
	await_answer(&L, aw, refused_gizmoes, "refusal of gizmoes");
	expect_refused(&L, aw, 403, RBAC_POLICY, "spec.components[0].template", "in namespace", NS,
	               kind, NULL);
	/* and admitted once granted */
	apply(role);
	await_answer(&L, aw, probe_mutation, "gizmoes granted to " LOWPRIV);
	/* the CRD goes: so does the line the leader alone set */
	delete_obj(&CRDS, crdname);
	await_param(key, NULL, 30000);
	/* the shipped lines stay (kubectl set them too), whether served or not */
	cr_assert(param("JobSet.jobset.x-k8s.io", have, sizeof(have)) &&
	          strcmp(have, "jobsets") == 0);
	cr_assert(tl_ctl_alive(c));
	tl_ctl_stop_all(&K.loop);
}

#define QUEUE_CONFIG                                                                               \
	"appwrapper:\n  defaultQueueName: team-q\n  kueueJobReconciller:\n"                        \
	"    manageJobsWithoutQueueName: false\n"

static int queue_team_q(const tl_res *r)
{
	char q[64];
	return r->http_status == 201 && r->obj &&
	       sf_jv_str(sf_jv_get(sf_jv_path(sf_obj_root(r->obj), "metadata.labels"),
	                           "kueue.x-k8s.io/queue-name"),
	                 q, sizeof(q)) > 0 &&
	       strcmp(q, "team-q") == 0;
}

/* The create-time defaults the mutating policy reads come from the
 * operator config, and a line discovery contradicts is corrected: nothing
 * is mirrored by hand any more. */
Test(admission, the_leader_writes_the_config_keys_and_corrects_wrong_lines)
{
	char cfgpath[256];
	snprintf(cfgpath, sizeof(cfgpath), "/tmp/steadfast-admp-%d.yaml", (int)getpid());
	FILE *f = fopen(cfgpath, "w");
	cr_assert(f);
	fputs(QUEUE_CONFIG, f);
	fclose(f);
	static const char body[] = "{\"data\":{\"Job.batch\":\"jobz\"}}";
	tl_res w;
	sf_kube_req q = {.method = "PATCH",
	                 .gvr = &SF_GVR_CONFIGMAPS,
	                 .ns = NS,
	                 .name = "steadfast-admission",
	                 .body = body,
	                 .body_len = strlen(body),
	                 .content_type = "application/merge-patch+json"};
	tl_do(&K, &q, &w);
	cr_assert_eq(w.http_status, 200, "%ld %s", w.http_status, w.message);
	tl_res_clear(&w);
	char have[64];
	cr_assert(param("Job.batch", have, sizeof(have)) && strcmp(have, "jobz") == 0);
	char *pod = pods_aw("defaulted", 1, "", "", "");
	tl_ctl *c = params_keeper("adm-config", cfgpath);
	await_param("defaultQueueName", "team-q", 20000);
	await_param("manageJobsWithoutQueueName", "false", 5000);
	await_param("enableKueueIntegrations", "true", 5000);
	await_param("Job.batch", "jobs", 5000);
	/* the mutating policy now defaults the queue from it */
	await_answer(&K, pod, queue_team_q, "the queue defaulted from the config");
	/* one write did it all: the passes after it find nothing to change */
	await_syncs(c, "unchanged", 2, 10000);
	cr_assert_eq(syncs(c, "updated"), 1, "more than one write for one change");
	cr_assert_eq(syncs(c, "error"), 0);
	free(pod);
	unlink(cfgpath);
	tl_ctl_stop_all(&K.loop);
}

/* Absent parameters mean admission is not installed here: the leader
 * says so and creates nothing. */
Test(admission, absent_parameters_are_not_created)
{
	static const char *const extra[] = {"--admission-params-interval=1s",
	                                    "--admission-params=not-installed", NULL};
	tl_ctl_opts o = {.ns = NS,
	                 .lease = "steadfast-adm",
	                 .id = "adm-absent",
	                 .extra = extra,
	                 .shipped_defaults = 1};
	tl_ctl *c = tl_ctl_start(&K.loop, &o);
	cr_assert_geq(tl_ctl_wait_log(&K.loop, c, "admission parameters not found", 0, 20000), 0);
	/* more passes come and go without a create, logged once */
	size_t from = tl_ctl_nlines(c);
	await_syncs(c, "absent", 3, 10000);
	tl_res r;
	sf_kube_req q = {
	    .method = "GET", .gvr = &SF_GVR_CONFIGMAPS, .ns = NS, .name = "not-installed"};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 404, "created: %ld", r.http_status);
	tl_res_clear(&r);
	cr_assert_eq(tl_ctl_count(c, "admission parameters not found", from), 0,
	             "logged again for the same state");
	tl_ctl_stop_all(&K.loop);
}

static int aw_gone(void *ud)
{
	return tl_aw_cached(ud, "carried") == NULL;
}

Test(admission, controller_writes_pass_and_admission_outlives_the_last_replica)
{
	tl_aw_watch w = {0};
	tl_aw_watch_start(&w, &K, NS);
	tl_ctl_opts o = {.ns = NS, .lease = "steadfast-adm", .id = "adm", .shipped_defaults = 1};
	tl_ctl *c = tl_ctl_start(&K.loop, &o);
	char *aw = pods_aw("carried", 1, "  labels: {kueue.x-k8s.io/queue-name: team-q}\n", "", "");
	tl_res r;
	aw_post(&K, aw, 1, &r);
	cr_assert_eq(r.http_status, 201, "%ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	/* the controller's patches (defaults, status) and Kueue's admission
	 * are updates the policies allow */
	tl_aw_wait_phase(&w, "carried", "Suspended", 30000);
	tl_aw_admit(&w, "carried", NULL);
	tl_aw_wait_phase(&w, "carried", "Running", 30000);
	char pod[254];
	tl_aw_pod_ready(&w, "carried", pod, sizeof(pod), 30000);
	tl_aw_kubelet(&w, pod, "Succeeded", 0, NULL);
	tl_aw_wait_phase(&w, "carried", "Succeeded", 30000);
	/* deletion: the controller removes the finalizer the policy added */
	cr_assert(tl_aw_req(&w, "DELETE", &SF_GVR_APPWRAPPERS, "carried", NULL, NULL) < 300);
	cr_assert_eq(tl_run_until_fn(&K.loop, aw_gone, &w, 60000), 0,
	             "the AppWrapper was not deleted");
	cr_assert(tl_ctl_alive(c));
	/* the last replica dies: admission is unchanged */
	tl_ctl_signal(c, SIGKILL);
	int64_t status = 0;
	int sig = 0;
	cr_assert_eq(tl_ctl_wait_exit(&K.loop, c, 10000, &status, &sig), 0);
	expect_refused(&L, aw, 403, RBAC_POLICY, "spec.components[0].template",
	               "not authorized to create pods", NULL);
	char *many = pods_aw("many", 9, "", "", "");
	expect_refused(&K, many, 422, POLICY, "components contain 9 pod sets", NULL);
	free(many);
	aw_post(&K, aw, 1, &r);
	cr_assert_eq(r.http_status, 201, "%ld %s", r.http_status, r.message);
	cr_expect(has_finalizer(r.obj) && suspended(r.obj), "not defaulted: %s", r.obj->json);
	tl_res_clear(&r);
	free(aw);
	tl_ctl_stop_all(&K.loop);
	tl_aw_watch_stop(&w);
}
