/*
 * test_kueue.c - the AppWrapper controller with a real Kueue, a real
 * kube-scheduler and kwok's fake nodes (KUEUE=true test/cluster/up.sh):
 * nothing here plays Kueue or the kubelet. Kueue's webhooks suspend new
 * AppWrappers, Kueue admits them against ClusterQueue quota and writes
 * their podSetInfos, Steadfast creates the Job, kube-controller-manager its
 * pods, kube-scheduler binds them and kwok runs them (test/cluster/
 * kwok-pod-stages.yaml: Running once bound, a Job's pod succeeds after a
 * delay, a pod annotated so fails with the exit code it names).
 *
 *   - admission with quota: a ResourceFlavor with node labels and a
 *     toleration puts the pod on the one tainted, labelled node; the
 *     AppWrapper Succeeds, Kueue's Workload is Finished, usage drops to 0;
 *   - queueing: 10 AppWrappers on quota for 4 are never more than 4
 *     admitted at once (every Workload change seen through a watch), all
 *     finish, usage drops to 0;
 *   - a pod failing on a kwok node makes the AppWrapper Unhealthy with its
 *     exit code and message, in a condition and a Warning Event, and
 *     Failed with retryLimit 0; Kueue's Workload is Finished;
 *   - preemption: a higher WorkloadPriorityClass evicts a running
 *     AppWrapper, which is suspended (its pods gone), runs after the
 *     preemptor finishes and is admitted again.
 *
 * The suite has one control plane of its own for the whole run, in
 * /tmp/steadfast-kueue.<runner pid>: the first test's init starts it
 * (up.sh does nothing when it is up), the runner stops it once the suite is
 * done. $STEADFAST_KUEUE_CLUSTER_DIR names another one to use (and keep).
 */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "steadfast/awapi.h"
#include "steadfast/awphase.h"
#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/json.h"
#include "steadfast/log.h"
#include "tl.h"
#include "tl_aw.h"
#include "tl_ctl.h"

static const sf_gvr GVR_WORKLOADS = {"kueue.x-k8s.io", "v1beta2", "workloads", 1};
static const sf_gvr GVR_CLUSTERQUEUES = {"kueue.x-k8s.io", "v1beta2", "clusterqueues", 0};
static const sf_gvr GVR_RESOURCEFLAVORS = {"kueue.x-k8s.io", "v1beta2", "resourceflavors", 0};
static const sf_gvr GVR_PRIORITYCLASSES = {"kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses",
                                           0};
static const sf_gvr GVR_NODES = {"", "v1", "nodes", 0};

/* ---- the suite's control plane ---- */

#define DIR_ENV "STEADFAST_KUEUE_CLUSTER_DIR"
static char OWN_DIR[128]; /* in the runner: the directory it must stop */

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	(void)set;
	const char *d = getenv(DIR_ENV);
	if (d && *d)
		return;
	snprintf(OWN_DIR, sizeof(OWN_DIR), "/tmp/steadfast-kueue.%d", (int)getpid());
	setenv(DIR_ENV, OWN_DIR, 1);
}

ReportHook(POST_SUITE)(struct criterion_suite_stats *st)
{
	struct stat sb;
	if (!OWN_DIR[0] || strcmp(st->suite->name, "kueue") != 0 || stat(OWN_DIR, &sb) != 0)
		return;
	char cmd[4608], src[4096];
	const char *down = "test/cluster/down.sh";
	if (access(down, X_OK) != 0 && getenv("STEADFAST_SRC_DIR")) {
		snprintf(src, sizeof(src), "%s/%s", getenv("STEADFAST_SRC_DIR"), down);
		down = src;
	}
	snprintf(cmd, sizeof(cmd), "'%s' '%s' >>'%s.log' 2>&1", down, OWN_DIR, OWN_DIR);
	if (system(cmd) != 0)
		fprintf(stderr, "kueue: %s failed: see %s.log\n", cmd, OWN_DIR);
}

static tl_kube K;
static char NS[64];
static tl_aw_watch W;
static sf_informer *WLS; /* NS's Workloads */
static char CFG[128];    /* the controller's operator config */
static char NODE[96];    /* a node a test created, deleted by teardown */

/* The highest number of NS's Workloads holding quota at once, over every
 * change the watch delivered. */
static int ADMITTED_NOW, ADMITTED_MAX;

static int holds_quota(sf_jv wl)
{
	char reserved[16] = "", finished[16] = "";
	sf_jv c = sf_jv_path(wl, "status.conditions");
	tl_aw_condition(c, "QuotaReserved", reserved, sizeof(reserved));
	tl_aw_condition(c, "Finished", finished, sizeof(finished));
	return strcmp(reserved, "True") == 0 && strcmp(finished, "True") != 0;
}

static int count_visit(void *ud, sf_obj *o)
{
	*(int *)ud += holds_quota(sf_obj_root(o));
	return 0;
}

static void recount(void)
{
	int n = 0;
	sf_store_each(sf_informer_store(WLS), count_visit, &n);
	ADMITTED_NOW = n;
	if (n > ADMITTED_MAX)
		ADMITTED_MAX = n;
}

static void wl_add(void *ud, sf_obj *o)
{
	(void)ud;
	(void)o;
	recount();
}

static void wl_update(void *ud, sf_obj *old, sf_obj *o)
{
	(void)ud;
	(void)old;
	(void)o;
	recount();
}

static int wls_synced(void *ud)
{
	(void)ud;
	return sf_informer_synced(WLS);
}

static void setup(void)
{
	char src[4096], env[160];
	const char *dir = getenv(DIR_ENV);
	cr_assert(dir && *dir, DIR_ENV " is not set");
	cr_assert_eq(tl_sh(NULL, "KUEUE=true '%s' '%s' >>'%s.log' 2>&1",
	                   tl_aw_src_path("test/cluster/up.sh", src, sizeof(src)), dir, dir),
	             0, "KUEUE=true up.sh failed: see %s.log", dir);
	snprintf(env, sizeof(env), "%s/env", dir);
	setenv("STEADFAST_CLUSTER_ENV", env, 1);
	cr_assert_str_eq(tl_env("STEADFAST_KUEUE"), "true", "%s is not a KUEUE=true cluster", dir);
	tl_aw_env_open(&K, &W, "kueue", NS, sizeof(NS));

	ADMITTED_NOW = ADMITTED_MAX = 0;
	sf_informer_opts o = {.reflector = {.gvr = &GVR_WORKLOADS, .ns = NS}};
	cr_assert_eq(sf_informer_new(&K.loop, K.client, &o, &WLS), 0);
	sf_informer_handler h = {.on_add = wl_add, .on_update = wl_update, .on_delete = wl_add};
	cr_assert_eq(sf_informer_add_handler(WLS, &h, NULL), 0);
	cr_assert_eq(sf_informer_start(WLS), 0);
	cr_assert_eq(tl_run_until_fn(&K.loop, wls_synced, NULL, 10000), 0, "workloads not synced");

	/* Steadfast as deployed beside Kueue: AppWrappers without a queue are
	 * left alone (Kueue's manageJobsWithoutQueueName is false too). */
	snprintf(CFG, sizeof(CFG), "/tmp/steadfast-kueue-%d.yaml", (int)getpid());
	FILE *f = fopen(CFG, "w");
	cr_assert_not_null(f);
	fputs("appwrapper:\n  enableKueueIntegrations: true\n  kueueJobReconciller:\n"
	      "    manageJobsWithoutQueueName: false\n",
	      f);
	fclose(f);
	tl_ctl_opts co = {.ns = NS, .lease = "steadfast-kueue", .id = "kueue", .config = CFG};
	tl_ctl_start(&K.loop, &co);
}

static void delete_obj(const sf_gvr *gvr, const char *name)
{
	tl_res r;
	sf_kube_req q = {.method = "DELETE", .gvr = gvr, .name = name};
	tl_do(&K, &q, &r);
	tl_res_clear(&r);
}

static void informer_stopped(void *ud)
{
	*(int *)ud = 1;
}

static void teardown(void)
{
	char name[128];
	tl_ctl_stop_all(&K.loop);
	if (WLS) {
		int stopped = 0;
		sf_informer_stop(WLS, informer_stopped, &stopped);
		while (!stopped)
			uv_run(&K.loop, UV_RUN_ONCE);
	}
	tl_aw_watch_stop(&W);
	tl_namespace_delete(&K, NS);
	/* cluster-scoped objects of the test, named after its namespace */
	snprintf(name, sizeof(name), "%s-cq", NS);
	delete_obj(&GVR_CLUSTERQUEUES, name);
	snprintf(name, sizeof(name), "%s-rf", NS);
	delete_obj(&GVR_RESOURCEFLAVORS, name);
	snprintf(name, sizeof(name), "%s-low", NS);
	delete_obj(&GVR_PRIORITYCLASSES, name);
	snprintf(name, sizeof(name), "%s-high", NS);
	delete_obj(&GVR_PRIORITYCLASSES, name);
	if (NODE[0])
		delete_obj(&GVR_NODES, NODE);
	if (WLS)
		sf_informer_free(WLS);
	WLS = NULL;
	tl_kube_close(&K);
	if (CFG[0])
		unlink(CFG);
}

TestSuite(kueue, .init = setup, .fini = teardown, .timeout = 300);

/* ---- helpers ---- */

/* GET of gvr/name (in NS when namespaced): the object (owned), or NULL on
 * 404; any other answer fails the test. */
static sf_obj *get_obj(const sf_gvr *gvr, const char *name)
{
	tl_res r;
	sf_kube_req q = {
	    .method = "GET", .gvr = gvr, .ns = gvr->namespaced ? NS : NULL, .name = name};
	tl_do(&K, &q, &r);
	if (r.http_status == 404) {
		tl_res_clear(&r);
		return NULL;
	}
	cr_assert_eq(r.http_status, 200, "GET %s/%s: %ld %s", gvr->resource, name, r.http_status,
	             r.message);
	sf_obj *o = r.obj;
	r.obj = NULL;
	tl_res_clear(&r);
	return o;
}

/* Runs the loop for ms (the poll interval of the waits below, which check
 * a condition the API server answers for and give up at a deadline). */
static void pause_loop(long ms)
{
	int never = 0;
	tl_run_until(&K.loop, &never, ms);
}

/* Applies YAML text (cluster-scoped kinds or NS's), failing the test
 * unless every document is stored. */
static void apply(const char *yaml)
{
	tl_aw_apply_yaml(&K, NS, yaml, NULL, NULL);
}

/* A ResourceFlavor "<NS>-rf" (extra: more of its spec, YAML at 2 spaces of
 * indent, or ""), a ClusterQueue "<NS>-cq" with quota cpu/gpu on it and
 * preemption policy `preemption` (or ""), a LocalQueue "lq" in NS; waits
 * until the ClusterQueue is Active. */
static void queues(const char *rf_spec, int cpu, int gpu, const char *preemption)
{
	char y[4096];
	snprintf(
	    y, sizeof(y),
	    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: %s-rf\n"
	    "spec:\n%s\n"
	    "---\n"
	    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: %s-cq\n"
	    "spec:\n  namespaceSelector: {}\n%s\n  resourceGroups:\n"
	    "  - coveredResources: [cpu, memory, nvidia.com/gpu]\n    flavors:\n"
	    "    - name: %s-rf\n      resources:\n"
	    "      - {name: cpu, nominalQuota: %d}\n"
	    "      - {name: memory, nominalQuota: 64Gi}\n"
	    "      - {name: nvidia.com/gpu, nominalQuota: %d}\n"
	    "---\n"
	    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: lq\n"
	    "spec:\n  clusterQueue: %s-cq\n",
	    NS, rf_spec[0] ? rf_spec : "  {}", NS, preemption, NS, cpu, gpu, NS);
	apply(y);
	char cq[96], st[16];
	snprintf(cq, sizeof(cq), "%s-cq", NS);
	long deadline = 30000;
	for (;;) {
		sf_obj *o = get_obj(&GVR_CLUSTERQUEUES, cq);
		cr_assert_not_null(o, "ClusterQueue %s absent", cq);
		st[0] = '\0';
		tl_aw_condition(sf_jv_path(sf_obj_root(o), "status.conditions"), "Active", st,
		                sizeof(st));
		if (strcmp(st, "True") == 0) {
			sf_obj_unref(o);
			break;
		}
		if (deadline <= 0)
			cr_assert_fail("ClusterQueue %s not Active in 30 s: %s", cq, o->json);
		sf_obj_unref(o);
		pause_loop(200);
		deadline -= 200;
	}
}

/* An AppWrapper of one Job of one pod in LocalQueue "lq": requests cpu
 * (cores) and gpu, the Job pod's annotations pod_ann and the AppWrapper's
 * aw_ann (JSON members or ""), priority a WorkloadPriorityClass or NULL.
 * spec.suspend is left out: Kueue's webhook sets it. Returns the
 * AppWrapper as the API server stored it (owned). */
static sf_obj *create_aw(const char *name, int cpu, int gpu, const char *pod_ann,
                         const char *aw_ann, const char *priority)
{
	char body[4096], prio[160] = "";
	if (priority)
		snprintf(prio, sizeof(prio), ",\"kueue.x-k8s.io/priority-class\":\"%s\"", priority);
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"metadata\":{"
	         "\"name\":\"%s\",\"labels\":{\"" SF_AW_QUEUE_LABEL "\":\"lq\"%s},"
	         "\"annotations\":{%s}},\"spec\":{\"components\":[{\"template\":{"
	         "\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"%s-job\"},"
	         "\"spec\":{\"backoffLimit\":0,\"template\":{\"metadata\":{\"annotations\":{%s}},"
	         "\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\","
	         "\"image\":\"busybox\",\"resources\":{"
	         "\"requests\":{\"cpu\":\"%d\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"%d\"},"
	         "\"limits\":{\"nvidia.com/gpu\":\"%d\"}}}]}}}}}]}}",
	         name, prio, aw_ann, name, pod_ann, cpu, gpu, gpu);
	tl_res r;
	sf_kube_req q = {.method = "POST",
	                 .gvr = &SF_GVR_APPWRAPPERS,
	                 .ns = NS,
	                 .body = body,
	                 .body_len = strlen(body)};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 201, "create AppWrapper %s: %ld %s %s", name, r.http_status,
	             r.reason, r.message);
	sf_obj *o = r.obj;
	r.obj = NULL;
	tl_res_clear(&r);
	cr_assert_not_null(o);
	return o;
}

/* The cached Workload Kueue made for AppWrapper aw (borrowed), or NULL. */
typedef struct wl_find {
	const char *aw;
	sf_obj *found;
} wl_find;

static int wl_visit(void *ud, sf_obj *o)
{
	wl_find *f = ud;
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(sf_obj_root(o), "metadata.ownerReferences"));
	sf_jv ref;
	while (sf_jv_next(&it, NULL, &ref))
		if (sf_jv_streq(sf_jv_get(ref, "kind"), "AppWrapper") &&
		    sf_jv_streq(sf_jv_get(ref, "name"), f->aw)) {
			f->found = o;
			return 1;
		}
	return 0;
}

static sf_obj *workload_of(const char *aw)
{
	wl_find f = {aw, NULL};
	sf_store_each(sf_informer_store(WLS), wl_visit, &f);
	return f.found;
}

typedef struct wl_cond_wait {
	const char *aw, *type, *status;
} wl_cond_wait;

static int wl_cond_is(void *ud)
{
	const wl_cond_wait *c = ud;
	sf_obj *o = workload_of(c->aw);
	char st[16] = "";
	if (!o)
		return 0;
	tl_aw_condition(sf_jv_path(sf_obj_root(o), "status.conditions"), c->type, st, sizeof(st));
	return strcmp(st, c->status) == 0;
}

/* Waits until the Workload of AppWrapper aw has condition type = status. */
static void wait_wl_cond(const char *aw, const char *type, const char *status, long ms)
{
	wl_cond_wait c = {aw, type, status};
	if (tl_run_until_fn(&K.loop, wl_cond_is, &c, ms) != 0) {
		sf_obj *o = workload_of(aw);
		cr_assert_fail("Workload of %s: no %s=%s in %ld ms: %s", aw, type, status, ms,
		               o ? o->json : "(none)");
	}
}

/* Waits until ClusterQueue <NS>-cq holds no quota and counts no
 * reserving or admitted Workload; fails after ms. */
static void wait_cq_empty(long ms)
{
	char cq[96];
	snprintf(cq, sizeof(cq), "%s-cq", NS);
	for (;;) {
		sf_obj *o = get_obj(&GVR_CLUSTERQUEUES, cq);
		cr_assert_not_null(o);
		sf_jv s = sf_jv_path(sf_obj_root(o), "status");
		int64_t admitted = -1, reserving = -1;
		sf_jv_int64(sf_jv_get(s, "admittedWorkloads"), &admitted);
		sf_jv_int64(sf_jv_get(s, "reservingWorkloads"), &reserving);
		if (!sf_jv_ok(sf_jv_get(s, "admittedWorkloads")))
			admitted = 0; /* omitted when 0 */
		if (!sf_jv_ok(sf_jv_get(s, "reservingWorkloads")))
			reserving = 0;
		/* every quantity of every flavor's usage back to "0" */
		int used = 0, seen = 0;
		sf_jv_iter fi = sf_jv_iter_init(sf_jv_get(s, "flavorsUsage"));
		sf_jv fl;
		while (sf_jv_next(&fi, NULL, &fl)) {
			sf_jv_iter ri = sf_jv_iter_init(sf_jv_get(fl, "resources"));
			sf_jv res;
			while (sf_jv_next(&ri, NULL, &res)) {
				seen++;
				if (!sf_jv_streq(sf_jv_get(res, "total"), "0"))
					used++;
			}
		}
		if (admitted == 0 && reserving == 0 && used == 0 && seen > 0) {
			sf_obj_unref(o);
			return;
		}
		if (ms <= 0)
			cr_assert_fail("ClusterQueue %s still holds quota: %s", cq, o->json);
		sf_obj_unref(o);
		pause_loop(200);
		ms -= 200;
	}
}

/* The node a live pod of AppWrapper aw was bound to, once it has one. */
typedef struct pod_node {
	const char *aw;
	char pod[254], node[254];
} pod_node;

static int pod_node_visit(void *ud, sf_obj *o)
{
	pod_node *p = ud;
	sf_jv root = sf_obj_root(o);
	if (!sf_jv_streq(sf_jv_get(sf_jv_path(root, "metadata.labels"), SF_AW_LABEL), p->aw) ||
	    sf_jv_ok(sf_jv_path(root, "metadata.deletionTimestamp")))
		return 0;
	if (sf_jv_str(sf_jv_path(root, "spec.nodeName"), p->node, sizeof(p->node)) < 0)
		return 0;
	snprintf(p->pod, sizeof(p->pod), "%s", o->name);
	return 1;
}

static int pod_bound(void *ud)
{
	pod_node *p = ud;
	p->node[0] = '\0';
	sf_store_each(sf_informer_store(W.pods), pod_node_visit, p);
	return p->node[0] != '\0';
}

/* The node is schedulable: no taint of the node lifecycle controller's
 * (node.kubernetes.io/not-ready, set on every new node, until it is Ready). */
static int untainted(sf_jv node)
{
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(node, "spec.taints"));
	sf_jv t;
	char key[128];
	while (sf_jv_next(&it, NULL, &t))
		if (sf_jv_str(sf_jv_get(t, "key"), key, sizeof(key)) >= 0 &&
		    strncmp(key, "node.kubernetes.io/", 19) == 0)
			return 0;
	return 1;
}

/* Creates node NODE (the kwok label, `labels` and `taints` as YAML flow
 * text) with cpu/gpu capacity, and waits until kwok has made it Ready and
 * the node lifecycle controller has lifted its not-ready taint. */
static void create_node(const char *labels, const char *taints, int cpu, int gpu)
{
	char y[2048];
	snprintf(
	    y, sizeof(y),
	    "apiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n"
	    "  labels: {type: kwok, kubernetes.io/hostname: %s, %s}\n"
	    "  annotations: {kwok.x-k8s.io/node: fake}\n"
	    "spec:\n  taints: %s\n"
	    "status:\n  capacity: {cpu: \"%d\", memory: 32Gi, pods: \"110\", "
	    "nvidia.com/gpu: \"%d\"}\n"
	    "  allocatable: {cpu: \"%d\", memory: 32Gi, pods: \"110\", nvidia.com/gpu: \"%d\"}\n",
	    NODE, NODE, labels, taints, cpu, gpu, cpu, gpu);
	apply(y);
	for (long ms = 30000;; ms -= 200) {
		sf_obj *o = get_obj(&GVR_NODES, NODE);
		cr_assert_not_null(o);
		char st[16] = "";
		tl_aw_condition(sf_jv_path(sf_obj_root(o), "status.conditions"), "Ready", st,
		                sizeof(st));
		if (strcmp(st, "True") == 0 && untainted(sf_obj_root(o))) {
			sf_obj_unref(o);
			return;
		}
		if (ms <= 0)
			cr_assert_fail("node %s not Ready and schedulable in 30 s: %s", NODE,
			               o->json);
		sf_obj_unref(o);
		pause_loop(200);
	}
}

/* ---- tests ---- */

/* Kueue admits a Job AppWrapper against quota on a flavor whose node
 * labels and toleration reach the pod; the scheduler puts it on that
 * flavor's node (the only one tainted and labelled so), kwok completes
 * it, and everything is released. */
Test(kueue, a_admission_with_quota_places_the_pod_on_the_flavors_node)
{
	char labels[160], taints[256], rf[512];
	snprintf(NODE, sizeof(NODE), "%s-gpu", NS);
	snprintf(labels, sizeof(labels), "steadfast.test/pool: %s", NS);
	snprintf(taints, sizeof(taints),
	         "[{key: steadfast.test/pool, value: %s, effect: NoSchedule}]", NS);
	create_node(labels, taints, 4, 2);
	snprintf(rf, sizeof(rf),
	         "  nodeLabels: {steadfast.test/pool: %s}\n"
	         "  tolerations: [{key: steadfast.test/pool, operator: Equal, value: %s, "
	         "effect: NoSchedule}]",
	         NS, NS);
	queues(rf, 4, 2, "");

	sf_obj *o = create_aw("quota", 1, 1, "", "", NULL);
	/* Kueue's mutating webhook suspended it before it was stored */
	cr_assert_eq(sf_jv_type(sf_jv_path(sf_obj_root(o), "spec.suspend")), SF_JSON_TRUE,
	             "not suspended at creation: %s", o->json);
	sf_obj_unref(o);

	tl_aw_wait_phase(&W, "quota", "Running", 60000);
	o = tl_aw_cached(&W, "quota");
	sf_jv psi = sf_jv_path(sf_obj_root(o), "spec.components[0].podSetInfos[0]");
	cr_assert(sf_jv_streq(sf_jv_get(sf_jv_get(psi, "nodeSelector"), "steadfast.test/pool"), NS),
	          "podSetInfos without the flavor's node selector: %s", o->json);
	cr_assert(sf_jv_streq(sf_jv_get(sf_jv_at(sf_jv_get(psi, "tolerations"), 0), "key"),
	                      "steadfast.test/pool"),
	          "podSetInfos without the flavor's toleration: %s", o->json);
	/* the Workload Kueue made: admitted to our queue on our flavor */
	wait_wl_cond("quota", "Admitted", "True", 10000);
	sf_obj *wl = workload_of("quota");
	sf_jv adm = sf_jv_path(sf_obj_root(wl), "status.admission");
	char want[96];
	snprintf(want, sizeof(want), "%s-cq", NS);
	cr_assert(sf_jv_streq(sf_jv_get(adm, "clusterQueue"), want), "%s", wl->json);
	snprintf(want, sizeof(want), "%s-rf", NS);
	cr_assert(sf_jv_streq(sf_jv_path(adm, "podSetAssignments[0].flavors.cpu"), want), "%s",
	          wl->json);

	/* the Job's pod, bound by the scheduler to the flavor's node alone */
	pod_node p = {.aw = "quota"};
	if (tl_run_until_fn(&K.loop, pod_bound, &p, 30000) != 0) {
		tl_aw_dump(&W, "quota");
		cr_assert_fail("no pod of quota bound to a node in 30 s");
	}
	cr_assert_str_eq(p.node, NODE, "pod %s bound to %s, not to the flavor's node %s", p.pod,
	                 p.node, NODE);
	sf_obj *pod = sf_store_get_ns(sf_informer_store(W.pods), NS, p.pod);
	cr_assert_not_null(pod);
	cr_assert(sf_jv_streq(sf_jv_get(sf_jv_path(sf_obj_root(pod), "spec.nodeSelector"),
	                                "steadfast.test/pool"),
	                      NS),
	          "%s", pod->json);

	/* kwok runs it to completion: Succeeded, Finished, quota released */
	tl_aw_wait_phase(&W, "quota", "Succeeded", 60000);
	wait_wl_cond("quota", "Finished", "True", 30000);
	wait_cq_empty(30000);
}

/* Ten AppWrappers of 1 cpu on a queue of 4 cpus: every change of their
 * Workloads, as the watch delivered them, shows at most 4 holding quota
 * (and 4 at some point: the quota, not something else, is what limits). */
Test(kueue, b_ten_appwrappers_on_quota_for_four_queue)
{
	queues("", 4, 0, "");
	char name[32];
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "q%d", i);
		sf_obj_unref(
		    create_aw(name, 1, 0, "\"steadfast.test/kwok-run-for\":\"3s\"", "", NULL));
	}
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "q%d", i);
		tl_aw_wait_phase(&W, name, "Succeeded", 120000);
		cr_assert_leq(ADMITTED_MAX, 4, "%d Workloads held quota at once", ADMITTED_MAX);
	}
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "q%d", i);
		wait_wl_cond(name, "Finished", "True", 30000);
	}
	cr_assert_eq(ADMITTED_MAX, 4, "at most %d Workloads held quota at once, quota is for 4",
	             ADMITTED_MAX);
	cr_assert_eq(sf_store_len(sf_informer_store(WLS)), 10);
	wait_cq_empty(30000);
	cr_assert_eq(ADMITTED_NOW, 0);
}

/* A pod that kwok fails with exit code 42: the AppWrapper is Unhealthy
 * with that code and message (condition and Warning Event) and, with
 * retryLimit 0, Failed; Kueue's Workload is Finished. */
Test(kueue, c_a_pod_failing_on_a_kwok_node_makes_the_appwrapper_unhealthy)
{
	queues("", 4, 0, "");
	sf_obj_unref(create_aw("crash", 1, 0,
	                       "\"steadfast.test/kwok-fail-exit-code\":\"42\","
	                       "\"steadfast.test/kwok-fail-message\":\"out of cheese\","
	                       "\"steadfast.test/kwok-run-for\":\"1s\"",
	                       "\"" SF_AW_ANNOT_PREFIX "retryLimit\":\"0\","
	                       "\"" SF_AW_ANNOT_PREFIX "failureGracePeriodDuration\":\"0s\"",
	                       NULL));
	tl_aw_wait_phase(&W, "crash", "Failed", 60000);
	char reason[TL_AW_REASON_LEN] = "", msg[TL_AW_MESSAGE_LEN] = "";
	cr_assert_str_eq(tl_aw_cond(&W, "crash", "Unhealthy", reason, msg), "True");
	cr_assert_str_eq(reason, "FoundFailedPods");
	cr_assert(strstr(msg, "container main exited with code 42 (Error): out of cheese"), "%s",
	          msg);
	tl_aw_events ev = tl_aw_wait_event(&W, "crash", "exited with code 42", 10000);
	cr_assert(ev.warning, "the Event about exit code 42 is not a Warning");
	wait_wl_cond("crash", "Finished", "True", 30000);
	wait_cq_empty(30000);
}

/* A running AppWrapper of a low WorkloadPriorityClass is preempted by one
 * of a higher: Kueue evicts it, Steadfast suspends it and its pods go, the
 * preemptor runs and finishes, then the first is admitted again. */
Test(kueue, d_a_higher_priority_appwrapper_preempts_a_running_one)
{
	char y[1024], low[96], high[96];
	snprintf(low, sizeof(low), "%s-low", NS);
	snprintf(high, sizeof(high), "%s-high", NS);
	snprintf(y, sizeof(y),
	         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n"
	         "  name: %s\nvalue: 10\n---\n"
	         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n"
	         "  name: %s\nvalue: 1000\n",
	         low, high);
	apply(y);
	queues("", 1, 0, "  preemption: {withinClusterQueue: LowerPriority}");

	sf_obj_unref(create_aw("victim", 1, 0, "\"steadfast.test/kwok-run-for\":\"1h\"", "", low));
	tl_aw_wait_phase(&W, "victim", "Running", 60000);
	tl_aw_wait_cond(&W, "victim", "PodsReady", "True", 30000);
	char victim_pod[254];
	tl_aw_wait_pod(&W, "victim", victim_pod, sizeof(victim_pod), 1000);

	sf_obj_unref(create_aw("boss", 1, 0, "", "", high));
	wait_wl_cond("victim", "Evicted", "True", 30000);
	sf_obj *v = workload_of("victim");
	char reason[64] = "";
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(sf_obj_root(v), "status.conditions"));
	sf_jv c;
	while (sf_jv_next(&it, NULL, &c))
		if (sf_jv_streq(sf_jv_get(c, "type"), "Evicted"))
			sf_jv_str(sf_jv_get(c, "reason"), reason, sizeof(reason));
	cr_assert_str_eq(reason, "Preempted", "%s", v->json);
	/* Steadfast takes it down: suspended, its Job and pods gone */
	tl_aw_wait_phase(&W, "victim", "Suspended", 60000);
	tl_aw_wait_all_gone(&W, "victim", 60000);
	/* the preemptor runs and finishes, then the victim is back */
	tl_aw_wait_phase(&W, "boss", "Succeeded", 60000);
	wait_wl_cond("boss", "Finished", "True", 30000);
	tl_aw_wait_phase(&W, "victim", "Running", 60000);
	wait_wl_cond("victim", "Admitted", "True", 30000);
	cr_assert_leq(ADMITTED_MAX, 1, "%d Workloads held quota at once on a quota of 1",
	              ADMITTED_MAX);
}
