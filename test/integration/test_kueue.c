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
 *     Failed with retryLimit 0 (no reset, one Job); Kueue's Workload is
 *     Finished with reason Failed and usage drops to 0;
 *   - preemption: a higher WorkloadPriorityClass evicts a running
 *     AppWrapper, which is suspended (its pods gone), runs after the
 *     preemptor finishes and is admitted again;
 *   - a reset (retryLimit 1, the first pod failed by annotating it) keeps
 *     the Workload's quota on every change until Finished; the new pod
 *     succeeds;
 *   - a Job of 4 completions, 2 at a time: Succeeded only once the Job has
 *     all 4 (the Job read when Succeeded is first delivered);
 *   - incident A with real admission: 3 replicas, 20 AppWrappers, the
 *     leader SIGKILLed mid-way: none suspended again, Failed or
 *     MissingComponent, one Job each (UIDs and audit log), all Succeed;
 *   - every replica down while Kueue admits: a replica started later
 *     undoes nothing (suspend, generation, quota) and runs them;
 *   - in test_kueue_samples.c, the samples of test/samples of upstream's
 *     documented shapes (generateName, several kinds, pod sets declared
 *     and inferred), each run to the end from its file.
 *
 * The suite's crash_* tests (test_kueue_crash.c) crash the leader at
 * every write of two Kueue lifecycles (tl_crash.h).
 *
 * The watches also record, change by change, what each AppWrapper and its
 * Workload went through (track_aw, track_wl, job_add), so "never" is
 * checked on every event delivered, not sampled.
 *
 * The suite has one control plane of its own for the whole run, in
 * /tmp/steadfast-kueue.<runner pid>: the first test's init starts it
 * (up.sh does nothing when it is up), the runner stops it once the suite is
 * done. $STEADFAST_KUEUE_CLUSTER_DIR names another one to use (and keep).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
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
#include "tl_audit.h"
#include "tl_aw.h"
#include "tl_ctl.h"
#include "tl_kueue.h"
#include "kueue_suite.h"

static const sf_gvr GVR_WORKLOADS = {"kueue.x-k8s.io", "v1beta2", "workloads", 1};
static const sf_gvr GVR_CLUSTERQUEUES = {"kueue.x-k8s.io", "v1beta2", "clusterqueues", 0};
static const sf_gvr GVR_RESOURCEFLAVORS = {"kueue.x-k8s.io", "v1beta2", "resourceflavors", 0};
static const sf_gvr GVR_PRIORITYCLASSES = {"kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses",
                                           0};
static const sf_gvr GVR_NODES = {"", "v1", "nodes", 0};

/* ---- the suite's control plane ---- */

#define DIR_ENV "STEADFAST_KUEUE_CLUSTER_DIR"
/* the directory is named and stopped by suite_clusters.c */

static tl_kube K;
static char NS[64];
static tl_aw_watch W;
static sf_informer *WLS;       /* NS's Workloads */
static char CFG[128];          /* the controller's operator config */
static char NODE[96];          /* a node a test created, deleted by teardown */
static char NODE2[96];         /* a second one */
static char MORE_NODES[4][96]; /* more of them (kueue_suite.h) */
static tl_ctl *CTL;            /* the controller setup started */

/* The highest number of NS's Workloads holding quota at once, over every
 * change the watch delivered. */
static int ADMITTED_NOW, ADMITTED_MAX;

/* What the watches delivered about one AppWrapper of NS and its Workload,
 * change by change (each change is checked, none is sampled). */
#define MAX_TRACK 32
typedef struct track {
	char aw[64];
	int unsuspended;        /* spec.suspend seen false or absent (admitted) */
	int resuspended;        /* spec.suspend seen true again after that */
	int64_t generation;     /* metadata.generation when first seen unsuspended */
	int generation_changed; /* a later change had another generation */
	int failed;             /* phase Failed seen */
	int missing;            /* Unhealthy with reason MissingComponent seen */
	int resetting;          /* phase Resetting seen */
	int running_after_reset;
	int succeeded;         /* phase Succeeded seen */
	tl_res job_at_success; /* GET of its Job sent when Succeeded was first seen */
	char job_uids[4][64];  /* the distinct UIDs of its Jobs */
	int njob_uids;
	int wl_admitted; /* Workload seen QuotaReserved and Admitted */
	int wl_lost;     /* then seen without either before Finished */
	int wl_finished; /* Workload seen Finished */
	char wl_lost_conds[1024];
} track;
static track TRACK[MAX_TRACK];
static int NTRACK;

/* The entry of AppWrapper aw, made on first use (NULL when full). */
static track *track_of(const char *aw)
{
	for (int i = 0; i < NTRACK; i++)
		if (strcmp(TRACK[i].aw, aw) == 0)
			return &TRACK[i];
	if (NTRACK == MAX_TRACK)
		return NULL;
	track *t = &TRACK[NTRACK++];
	snprintf(t->aw, sizeof(t->aw), "%s", aw);
	return t;
}

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

static const char *cond_status(sf_jv conds, const char *type, char *buf, size_t n)
{
	buf[0] = '\0';
	tl_aw_condition(conds, type, buf, n);
	return buf;
}

/* A change of a Workload: its AppWrapper's entry learns whether it holds
 * quota (QuotaReserved and Admitted True), lost it before Finished, or is
 * Finished. */
static void track_wl(sf_obj *o)
{
	char owner[64] = "", q[16], a[16], f[16];
	sf_jv root = sf_obj_root(o);
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(root, "metadata.ownerReferences"));
	sf_jv ref;
	while (sf_jv_next(&it, NULL, &ref))
		if (sf_jv_streq(sf_jv_get(ref, "kind"), "AppWrapper"))
			sf_jv_str(sf_jv_get(ref, "name"), owner, sizeof(owner));
	track *t = owner[0] ? track_of(owner) : NULL;
	if (!t)
		return;
	sf_jv conds = sf_jv_path(root, "status.conditions");
	if (strcmp(cond_status(conds, "Finished", f, sizeof(f)), "True") == 0)
		t->wl_finished = 1;
	else if (strcmp(cond_status(conds, "QuotaReserved", q, sizeof(q)), "True") == 0 &&
	         strcmp(cond_status(conds, "Admitted", a, sizeof(a)), "True") == 0)
		t->wl_admitted = 1;
	else if (t->wl_admitted && !t->wl_finished) {
		if (!t->wl_lost)
			snprintf(t->wl_lost_conds, sizeof(t->wl_lost_conds), "%.*s", (int)conds.n,
			         conds.p ? conds.p : "");
		t->wl_lost++;
	}
}

static void wl_add(void *ud, sf_obj *o)
{
	(void)ud;
	track_wl(o);
	recount();
}

static void wl_update(void *ud, sf_obj *old, sf_obj *o)
{
	(void)ud;
	(void)old;
	track_wl(o);
	recount();
}

static void wl_delete(void *ud, sf_obj *o)
{
	(void)ud;
	(void)o;
	recount();
}

/* A change of an AppWrapper of NS, into its entry. */
static void track_aw(sf_obj *o)
{
	track *t = track_of(o->name);
	if (!t)
		return;
	sf_jv root = sf_obj_root(o);
	int64_t gen = 0;
	sf_jv_int64(sf_jv_path(root, "metadata.generation"), &gen);
	/* Kueue's webhook stores new ones with suspend true; Kueue admits by
	 * setting it false, which its Go type omits when it writes */
	sf_json_type suspend = sf_jv_type(sf_jv_path(root, "spec.suspend"));
	if (suspend != SF_JSON_TRUE && !t->unsuspended) {
		t->unsuspended = 1;
		t->generation = gen;
	} else if (t->unsuspended) {
		if (suspend == SF_JSON_TRUE)
			t->resuspended++;
		if (gen != t->generation)
			t->generation_changed = 1;
	}
	sf_jv phase = sf_jv_path(root, "status.phase");
	if (sf_jv_streq(phase, "Failed"))
		t->failed = 1;
	if (sf_jv_streq(phase, "Resetting"))
		t->resetting = 1;
	if (sf_jv_streq(phase, "Running") && t->resetting)
		t->running_after_reset = 1;
	if (sf_jv_streq(phase, "Succeeded") && !t->succeeded) {
		t->succeeded = 1;
		char job[128];
		snprintf(job, sizeof(job), "%s-job", t->aw);
		cr_assert_eq(sf_kube_get(K.client, &SF_GVR_JOBS, NS, job, tl_res_cb,
		                         &t->job_at_success, NULL),
		             0);
	}
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(root, "status.conditions"));
	sf_jv c;
	while (sf_jv_next(&it, NULL, &c))
		if (sf_jv_streq(sf_jv_get(c, "type"), "Unhealthy") &&
		    sf_jv_streq(sf_jv_get(c, "reason"), "MissingComponent"))
			t->missing = 1;
}

static void aw_add(void *ud, sf_obj *o)
{
	(void)ud;
	track_aw(o);
}

static void aw_update(void *ud, sf_obj *old, sf_obj *o)
{
	(void)ud;
	(void)old;
	track_aw(o);
}

/* A Job of NS seen: its UID, into its AppWrapper's entry. */
static void job_add(void *ud, sf_obj *o)
{
	(void)ud;
	char aw[64] = "", uid[64] = "";
	sf_jv root = sf_obj_root(o);
	sf_jv_str(sf_jv_get(sf_jv_path(root, "metadata.labels"), SF_AW_LABEL), aw, sizeof(aw));
	sf_jv_str(sf_jv_path(root, "metadata.uid"), uid, sizeof(uid));
	track *t = aw[0] ? track_of(aw) : NULL;
	if (!t)
		return;
	for (int i = 0; i < t->njob_uids; i++)
		if (strcmp(t->job_uids[i], uid) == 0)
			return;
	if (t->njob_uids < 4)
		snprintf(t->job_uids[t->njob_uids], sizeof(t->job_uids[0]), "%s", uid);
	t->njob_uids++;
}

static void job_update(void *ud, sf_obj *old, sf_obj *o)
{
	(void)old;
	job_add(ud, o);
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
	sf_informer_handler h = {.on_add = wl_add, .on_update = wl_update, .on_delete = wl_delete};
	cr_assert_eq(sf_informer_add_handler(WLS, &h, NULL), 0);
	memset(TRACK, 0, sizeof(TRACK));
	NTRACK = 0;
	sf_informer_handler ha = {.on_add = aw_add, .on_update = aw_update};
	cr_assert_eq(sf_informer_add_handler(W.aws, &ha, NULL), 0);
	sf_informer_handler hj = {.on_add = job_add, .on_update = job_update};
	cr_assert_eq(sf_informer_add_handler(W.jobs, &hj, NULL), 0);
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
	CTL = tl_ctl_start(&K.loop, &co);
}

static void delete_obj(const sf_gvr *gvr, const char *name)
{
	tl_kueue_delete(&K, gvr, name);
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
	for (int i = 0; i < NTRACK; i++) {
		if (TRACK[i].succeeded)
			tl_wait(&K.loop, &TRACK[i].job_at_success, 10000);
		tl_res_clear(&TRACK[i].job_at_success);
	}
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
	if (NODE2[0])
		delete_obj(&GVR_NODES, NODE2);
	for (size_t i = 0; i < 4 && MORE_NODES[i][0]; i++)
		delete_obj(&GVR_NODES, MORE_NODES[i]);
	if (WLS)
		sf_informer_free(WLS);
	WLS = NULL;
	tl_kube_close(&K);
	if (CFG[0])
		unlink(CFG);
}

TestSuite(kueue, .init = setup, .fini = teardown, .timeout = 300);

tl_kube *kueue_suite_kube(void)
{
	return &K;
}

const char *kueue_suite_ns(void)
{
	return NS;
}

const char *kueue_suite_config(void)
{
	return CFG;
}

void kueue_suite_delete_node_at_end(const char *name)
{
	for (size_t i = 0; i < 4; i++)
		if (!MORE_NODES[i][0]) {
			snprintf(MORE_NODES[i], sizeof(MORE_NODES[i]), "%s", name);
			return;
		}
	cr_assert_fail("more than 4 nodes to delete at the end");
}

/* ---- helpers ---- */

static sf_obj *get_obj(const sf_gvr *gvr, const char *name)
{
	return tl_kueue_get(&K, gvr, NS, name);
}

static void pause_loop(long ms)
{
	tl_kueue_pause(&K, ms);
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

/* An AppWrapper of one Job in LocalQueue queue (NULL: no queue label):
 * its pod requests cpu (a quantity) and gpu, the Job's spec begins with job_spec (JSON members
 * with a trailing comma, e.g. completions and parallelism, or ""), the Job
 * pod's annotations are pod_ann and the AppWrapper's aw_ann (JSON members
 * or ""), priority a WorkloadPriorityClass or NULL. spec.suspend is left
 * out: Kueue's webhook sets it. Returns the AppWrapper as the API server
 * stored it (owned). */
static sf_obj *create_job_aw_in(const char *queue, const char *name, const char *cpu, int gpu,
                                const char *job_spec, const char *pod_ann, const char *aw_ann,
                                const char *priority)
{
	char body[4096], labels[320] = "";
	if (queue)
		snprintf(labels, sizeof(labels), "\"" SF_AW_QUEUE_LABEL "\":\"%s\"", queue);
	if (priority)
		snprintf(labels + strlen(labels), sizeof(labels) - strlen(labels),
		         "%s\"kueue.x-k8s.io/priority-class\":\"%s\"", queue ? "," : "", priority);
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"metadata\":{"
	         "\"name\":\"%s\",\"labels\":{%s},"
	         "\"annotations\":{%s}},\"spec\":{\"components\":[{\"template\":{"
	         "\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"%s-job\"},"
	         "\"spec\":{%s\"backoffLimit\":0,\"template\":{\"metadata\":{\"annotations\":{%s}},"
	         "\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\","
	         "\"image\":\"busybox\",\"resources\":{"
	         "\"requests\":{\"cpu\":\"%s\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"%d\"},"
	         "\"limits\":{\"nvidia.com/gpu\":\"%d\"}}}]}}}}}]}}",
	         name, labels, aw_ann, name, job_spec, pod_ann, cpu, gpu, gpu);
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

/* The same in LocalQueue "lq". */
static sf_obj *create_job_aw(const char *name, const char *cpu, int gpu, const char *job_spec,
                             const char *pod_ann, const char *aw_ann, const char *priority)
{
	return create_job_aw_in("lq", name, cpu, gpu, job_spec, pod_ann, aw_ann, priority);
}

/* The same with one pod of whole cores. */
static sf_obj *create_aw(const char *name, int cpu, int gpu, const char *pod_ann,
                         const char *aw_ann, const char *priority)
{
	char c[16];
	snprintf(c, sizeof(c), "%d", cpu);
	return create_job_aw(name, c, gpu, "", pod_ann, aw_ann, priority);
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

/* Creates node `name` with cpu/gpu capacity, Ready and schedulable (see
 * tl_kueue_create_node). */
static void create_node_named(const char *name, const char *labels, const char *taints, int cpu,
                              int gpu)
{
	tl_kueue_create_node(&K, NS, name, labels, taints, cpu, gpu);
}

static void create_node(const char *labels, const char *taints, int cpu, int gpu)
{
	create_node_named(NODE, labels, taints, cpu, gpu);
}

/* ---- for the suite's tests in other files (kueue_suite.h) ---- */

tl_aw_watch *kueue_suite_watch(void)
{
	return &W;
}

void kueue_suite_queues(const char *rf_spec, int cpu, int gpu, const char *preemption)
{
	queues(rf_spec, cpu, gpu, preemption);
}

sf_obj *kueue_suite_workload(const char *aw)
{
	return workload_of(aw);
}

void kueue_suite_wait_wl_cond(const char *aw, const char *type, const char *status, long ms)
{
	wait_wl_cond(aw, type, status, ms);
}

void kueue_suite_wait_cq_empty(long ms)
{
	wait_cq_empty(ms);
}

kueue_suite_seen kueue_suite_seen_of(const char *aw)
{
	kueue_suite_seen s = {0};
	track *t = track_of(aw);
	cr_assert_not_null(t, "more than %d AppWrappers tracked", MAX_TRACK);
	s.unsuspended = t->unsuspended;
	s.resuspended = t->resuspended;
	s.failed = t->failed;
	s.resetting = t->resetting;
	s.missing = t->missing;
	s.wl_admitted = t->wl_admitted;
	s.wl_lost = t->wl_lost;
	s.wl_finished = t->wl_finished;
	return s;
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
	/* Kueue finished it as a failure, after it had held quota */
	char wl_reason[64] = "";
	sf_jv_iter it =
	    sf_jv_iter_init(sf_jv_path(sf_obj_root(workload_of("crash")), "status.conditions"));
	sf_jv c;
	while (sf_jv_next(&it, NULL, &c))
		if (sf_jv_streq(sf_jv_get(c, "type"), "Finished"))
			sf_jv_str(sf_jv_get(c, "reason"), wl_reason, sizeof(wl_reason));
	cr_assert_str_eq(wl_reason, "Failed", "%s", workload_of("crash")->json);
	track *t = track_of("crash");
	cr_assert(t->wl_admitted && !t->wl_lost, "Workload lost quota before Finished: %s",
	          t->wl_lost_conds);
	/* retryLimit 0: no reset, one Job only */
	cr_assert(!t->resetting, "a reset with retryLimit 0");
	cr_assert_eq(t->njob_uids, 1);
	cr_assert_str_eq(tl_aw_cond(&W, "crash", "QuotaReserved", NULL, NULL), "False");
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

/* A pod of AppWrapper aw, live and with another name than `not`. */
typedef struct other_pod {
	const char *aw, *not ;
	char name[254];
} other_pod;

static int other_pod_visit(void *ud, sf_obj *o)
{
	other_pod *p = ud;
	sf_jv root = sf_obj_root(o);
	if (!sf_jv_streq(sf_jv_get(sf_jv_path(root, "metadata.labels"), SF_AW_LABEL), p->aw) ||
	    sf_jv_ok(sf_jv_path(root, "metadata.deletionTimestamp")) ||
	    strcmp(o->name, p->not ) == 0)
		return 0;
	snprintf(p->name, sizeof(p->name), "%s", o->name);
	return 1;
}

static int other_pod_found(void *ud)
{
	other_pod *p = ud;
	p->name[0] = '\0';
	sf_store_each(sf_informer_store(W.pods), other_pod_visit, p);
	return p->name[0] != '\0';
}

static int pod_phase_is(const char *pod, const char *phase)
{
	sf_obj *o = sf_store_get_ns(sf_informer_store(W.pods), NS, pod);
	return o && sf_jv_streq(sf_jv_path(sf_obj_root(o), "status.phase"), phase);
}

static int resetting(void *ud)
{
	return track_of(ud)->resetting;
}

static int running_again(void *ud)
{
	return track_of(ud)->running_after_reset;
}

/* A pod that fails once, with retryLimit 1: the AppWrapper resets (the
 * test makes its first pod fail by annotating it; kwok re-matches a
 * changed pod, so the Job's pods made after the reset, from the unchanged
 * template, succeed) and Kueue's Workload holds its quota through the
 * reset, on every change the watch delivered, until Finished. */
Test(kueue, e_a_reset_keeps_its_quota)
{
	char aw[] = "again";
	queues("", 4, 0, "");
	sf_obj_unref(create_aw("again", 1, 0, "\"steadfast.test/kwok-run-for\":\"4s\"",
	                       "\"" SF_AW_ANNOT_PREFIX "retryLimit\":\"1\","
	                       "\"" SF_AW_ANNOT_PREFIX "retryPausePeriodDuration\":\"1s\","
	                       "\"" SF_AW_ANNOT_PREFIX "failureGracePeriodDuration\":\"0s\"",
	                       NULL));
	tl_aw_wait_phase(&W, "again", "Running", 60000);
	char first[254];
	tl_aw_wait_pod(&W, "again", first, sizeof(first), 30000);
	wait_wl_cond("again", "Admitted", "True", 10000);
	long st = tl_aw_req(&W, "PATCH", &SF_GVR_PODS, first, NULL,
	                    "{\"metadata\":{\"annotations\":{"
	                    "\"steadfast.test/kwok-fail-exit-code\":\"7\","
	                    "\"steadfast.test/kwok-fail-message\":\"first pod only\","
	                    "\"steadfast.test/kwok-run-for\":\"500ms\"}}}");
	cr_assert_eq(st, 200, "annotating pod %s: %ld", first, st);

	if (tl_run_until_fn(&K.loop, resetting, aw, 30000) != 0) {
		tl_aw_dump(&W, "again");
		cr_assert_fail("no reset in 30 s after pod %s was to fail", first);
	}
	char reason[TL_AW_REASON_LEN] = "", msg[TL_AW_MESSAGE_LEN] = "";
	tl_aw_cond(&W, "again", "Unhealthy", reason, msg);
	cr_assert_str_eq(reason, "FoundFailedPods");
	cr_assert(strstr(msg, "exited with code 7 (Error): first pod only"), "%s", msg);
	if (tl_run_until_fn(&K.loop, running_again, aw, 60000) != 0) {
		tl_aw_dump(&W, "again");
		cr_assert_fail("not Running again after the reset in 60 s");
	}
	other_pod p = {.aw = "again", .not = first};
	if (tl_run_until_fn(&K.loop, other_pod_found, &p, 30000) != 0) {
		tl_aw_dump(&W, "again");
		cr_assert_fail("no new pod after the reset in 30 s");
	}
	tl_aw_wait_phase(&W, "again", "Succeeded", 60000);
	cr_assert(pod_phase_is(p.name, "Succeeded"), "the new pod %s did not succeed", p.name);
	wait_wl_cond("again", "Finished", "True", 30000);
	track *t = track_of("again");
	cr_assert(t->wl_admitted, "Workload never seen admitted");
	cr_assert_eq(t->wl_lost, 0, "Workload without quota %d times before Finished, first: %s",
	             t->wl_lost, t->wl_lost_conds);
	cr_assert_eq(t->resuspended, 0, "suspended again during the reset");
	cr_assert_eq(t->njob_uids, 2, "a reset re-creates the Job once: %d Jobs", t->njob_uids);
	int64_t resets = -1;
	sf_jv_int64(sf_jv_path(sf_obj_root(tl_aw_cached(&W, "again")), "status.resettingCount"),
	            &resets);
	cr_assert_eq(resets, 1);
	wait_cq_empty(30000);
}

/* A Job of 4 completions, 2 at a time: its first pair succeeding leaves no
 * pod running, but the AppWrapper is Succeeded (and Kueue's Workload
 * Finished) only once the Job has all 4: the Job as the API server had it
 * when the watch first delivered Succeeded says so. */
Test(kueue, f_a_job_of_four_completions_two_at_a_time_runs_them_all)
{
	queues("", 4, 0, "");
	sf_obj_unref(create_job_aw("pairs", "1", 0, "\"completions\":4,\"parallelism\":2,",
	                           "\"steadfast.test/kwok-run-for\":\"2s\"", "", NULL));
	tl_aw_wait_phase(&W, "pairs", "Running", 60000);
	/* Kueue admitted the pod set at the Job's parallelism */
	wait_wl_cond("pairs", "Admitted", "True", 10000);
	int64_t count = 0;
	sf_jv_int64(sf_jv_path(sf_obj_root(workload_of("pairs")),
	                       "status.admission.podSetAssignments[0].count"),
	            &count);
	cr_assert_eq(count, 2, "%s", workload_of("pairs")->json);

	tl_aw_wait_phase(&W, "pairs", "Succeeded", 90000);
	track *t = track_of("pairs");
	tl_wait(&K.loop, &t->job_at_success, 10000);
	sf_obj *job = t->job_at_success.obj;
	cr_assert_eq(t->job_at_success.http_status, 200);
	int64_t succeeded = -1;
	sf_jv_int64(sf_jv_path(sf_obj_root(job), "status.succeeded"), &succeeded);
	cr_assert_eq(succeeded, 4, "Succeeded with the Job at %lld: %s", (long long)succeeded,
	             job->json);
	char st[16] = "";
	tl_aw_condition(sf_jv_path(sf_obj_root(job), "status.conditions"), "Complete", st,
	                sizeof(st));
	cr_assert_str_eq(st, "True", "%s", job->json);
	cr_assert_eq(tl_aw_labelled(W.pods, "pairs"), 4);
	wait_wl_cond("pairs", "Finished", "True", 30000);
	cr_assert_eq(t->wl_lost, 0, "%s", t->wl_lost_conds);
	wait_cq_empty(30000);
}

/* The holder of Lease NS/name, into buf ("" when none). */
static void lease_holder(const char *name, char *buf, size_t n)
{
	tl_res r;
	sf_kube_req q = {.method = "GET", .gvr = &SF_GVR_LEASES, .ns = NS, .name = name};
	tl_do(&K, &q, &r);
	buf[0] = '\0';
	if (r.http_status == 200)
		sf_jv_str(sf_jv_path(sf_obj_root(r.obj), "spec.holderIdentity"), buf, n);
	tl_res_clear(&r);
}

/* Waits until the holder of Lease NS/name is one of ids[0..n) other than
 * `not` (NULL: any); returns its index. */
static int wait_leader(const char *name, const char *const *ids, int n, const char * not, long ms)
{
	char h[128];
	for (;; ms -= 200) {
		lease_holder(name, h, sizeof(h));
		for (int i = 0; i < n; i++)
			if (strcmp(h, ids[i]) == 0 && (!not || strcmp(h, not ) != 0))
				return i;
		if (ms <= 0)
			cr_assert_fail("Lease %s held by '%s', not by a replica (other than %s)",
			               name, h, not ? not : "-");
		pause_loop(200);
	}
}

/* The Job creates of aw0..aw<n> in NS, from the audit log: per AppWrapper
 * the creates answered 201, and the other creates (any other code, or a
 * request never completed: a replica killed with its create in flight
 * leaves one whose answer nobody read). Asserts that none was created
 * twice and that each has a create the server took (201, or one whose
 * answer was lost: its Job then shows up by UID in assert_undisturbed). */
static void audit_job_creates(int n)
{
	int ok[64] = {0}, other[64] = {0};
	char others[1024] = "";
	cr_assert_leq(n, 64);
	tl_audit_mark all;
	tl_audit_mark_start(&all, NULL);
	tl_audit_query q = {.ns = NS, .text = "\"resource\":\"jobs\""};
	tl_audit_req *v = NULL;
	size_t nv = tl_audit_select(&all, &q, &v);
	for (size_t k = 0; k < nv; k++) {
		const tl_audit_req *e = &v[k];
		int idx = -1;
		if (strcmp(e->verb, "create") != 0 || strcmp(e->resource, "jobs") != 0 ||
		    sscanf(e->name, "aw%d", &idx) != 1 || idx < 0 || idx >= n)
			continue;
		int complete = strcmp(e->stage, "ResponseComplete") == 0;
		if (complete && e->code == 201) {
			ok[idx]++;
			continue;
		}
		other[idx]++;
		size_t at = strlen(others);
		snprintf(others + at, sizeof(others) - at, " %.31s:%s/%ld", e->name,
		         complete ? "complete" : "started", e->code);
	}
	free(v);
	for (int i = 0; i < n; i++) {
		cr_assert_leq(ok[i], 1, "aw%d: its Job was created %d times (201)", i, ok[i]);
		cr_assert(ok[i] == 1 || other[i] > 0,
		          "aw%d: no create of its Job in the audit log (other creates:%s)", i,
		          others[0] ? others : " none");
	}
}

typedef struct phase_count {
	const char *phase;
	int n;
} phase_count;

static int phase_visit(void *ud, sf_obj *o)
{
	phase_count *c = ud;
	c->n += sf_jv_streq(sf_jv_path(sf_obj_root(o), "status.phase"), c->phase);
	return 0;
}

static int n_running_ge(void *ud)
{
	phase_count c = {"Running", 0};
	sf_store_each(sf_informer_store(W.aws), phase_visit, &c);
	return c.n >= *(int *)ud;
}

/* Every AppWrapper aw<0..n) of NS: admitted once, and after that never
 * suspended again nor its spec changed; never Failed, MissingComponent or
 * reset; exactly one Job (by UID); its Workload never without quota
 * before Finished. */
static void assert_undisturbed(int n)
{
	char name[32];
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "aw%d", i);
		track *t = track_of(name);
		cr_assert(t->unsuspended, "%s never admitted", name);
		cr_assert_eq(t->resuspended, 0, "%s suspended again after admission", name);
		cr_assert_eq(t->generation_changed, 0, "%s: spec changed after admission", name);
		cr_assert_eq(t->failed, 0, "%s was Failed", name);
		cr_assert_eq(t->missing, 0, "%s had a MissingComponent", name);
		cr_assert_eq(t->resetting, 0, "%s was reset", name);
		cr_assert_eq(t->njob_uids, 1, "%s had %d Jobs", name, t->njob_uids);
		cr_assert_eq(t->wl_lost, 0, "Workload of %s lost its quota: %s", name,
		             t->wl_lost_conds);
	}
}

/* Incident A with Kueue admitting: three replicas with leader election,
 * 20 AppWrappers, the leader SIGKILLed while half of them run. Nothing is
 * undone or failed: no false MissingComponent or Failed, none suspended
 * again after Kueue admitted it, one Job each (by UID, and in the audit
 * log no Job created twice), all Succeed. */
Test(kueue, g_leader_killed_while_kueue_admits_twenty)
{
	tl_ctl_stop_all(&K.loop); /* the suite's replica: this test runs its own */
	queues("", 10, 0, "");
	static const char *const ids[] = {"ha-0", "ha-1", "ha-2"};
	tl_ctl *rep[3];
	for (int i = 0; i < 3; i++) {
		tl_ctl_opts co = {.ns = NS,
		                  .lease = "steadfast-kueue-ha",
		                  .id = ids[i],
		                  .config = CFG,
		                  .lease_ms = 3000,
		                  .renew_ms = 2000,
		                  .retry_ms = 300};
		rep[i] = tl_ctl_start(&K.loop, &co);
	}
	int lead = wait_leader("steadfast-kueue-ha", ids, 3, NULL, 30000);
	char name[32];
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "aw%d", i);
		sf_obj_unref(create_job_aw(name, "500m", 0, "",
		                           "\"steadfast.test/kwok-run-for\":\"6s\"", "", NULL));
		if (i == 9) {
			int five = 5;
			if (tl_run_until_fn(&K.loop, n_running_ge, &five, 60000) != 0)
				cr_assert_fail("fewer than 5 AppWrappers Running in 60 s");
			tl_ctl_signal(rep[lead], SIGKILL);
			int sig = 0;
			int64_t status = 0;
			cr_assert_eq(tl_ctl_wait_exit(&K.loop, rep[lead], 10000, &status, &sig), 0);
			cr_assert_eq(sig, SIGKILL);
		}
	}
	int next = wait_leader("steadfast-kueue-ha", ids, 3, ids[lead], 30000);
	cr_assert_neq(next, lead);
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "aw%d", i);
		tl_aw_wait_phase(&W, name, "Succeeded", 120000);
		wait_wl_cond(name, "Finished", "True", 30000);
	}
	assert_undisturbed(20);
	audit_job_creates(20);
	wait_cq_empty(30000);
}

typedef struct admitted_wait {
	int n;
} admitted_wait;

static int all_admitted(void *ud)
{
	admitted_wait *a = ud;
	char name[32];
	for (int i = 0; i < a->n; i++) {
		snprintf(name, sizeof(name), "aw%d", i);
		track *t = track_of(name);
		if (!t->unsuspended || !t->wl_admitted)
			return 0;
	}
	return 1;
}

/* Every replica down while Kueue admits: with no controller running,
 * Kueue admits three AppWrappers (spec.suspend false, podSetInfos); a
 * replica started then undoes nothing (not suspended again, generation
 * kept, the Workloads keep their quota) and runs them to the end. */
Test(kueue, h_appwrappers_admitted_while_every_replica_is_down_run)
{
	tl_ctl_stop_all(&K.loop);
	queues("", 4, 0, "");
	char name[32];
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "aw%d", i);
		sf_obj_unref(
		    create_aw(name, 1, 0, "\"steadfast.test/kwok-run-for\":\"2s\"", "", NULL));
	}
	admitted_wait a = {3};
	if (tl_run_until_fn(&K.loop, all_admitted, &a, 60000) != 0) {
		sf_obj *wl = workload_of("aw0");
		tl_aw_dump(&W, "aw0");
		cr_assert_fail("Kueue did not admit all three in 60 s; aw0's Workload: %s",
		               wl ? wl->json : "(none)");
	}
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "aw%d", i);
		sf_jv root = sf_obj_root(tl_aw_cached(&W, name));
		cr_assert(sf_jv_ok(sf_jv_path(root, "spec.components[0].podSetInfos")),
		          "admitted without podSetInfos: %s", tl_aw_cached(&W, name)->json);
		/* nobody ran it: no status, no Job */
		cr_assert(!sf_jv_ok(sf_jv_path(root, "status.phase")),
		          "a phase with no controller: %s", tl_aw_cached(&W, name)->json);
		cr_assert_eq(tl_aw_labelled(W.jobs, name), 0);
	}
	tl_ctl_opts co = {.ns = NS, .lease = "steadfast-kueue", .id = "kueue-late", .config = CFG};
	tl_ctl_start(&K.loop, &co);
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "aw%d", i);
		tl_aw_wait_phase(&W, name, "Succeeded", 90000);
		wait_wl_cond(name, "Finished", "True", 30000);
	}
	assert_undisturbed(3);
	wait_cq_empty(30000);
}

/* ---- Autopilot ---- */

#define GPUHEALTH "autopilot.ibm.com/gpuhealth"

/* Two GPU nodes of this test's pool (a flavor with their label and
 * toleration), NODE and NODE2, and queues with quota for 2 GPUs. */
static void gpu_pool(void)
{
	char labels[160], taints[256], rf[512];
	snprintf(NODE, sizeof(NODE), "%s-gpu-a", NS);
	snprintf(NODE2, sizeof(NODE2), "%s-gpu-b", NS);
	snprintf(labels, sizeof(labels), "steadfast.test/pool: %s", NS);
	snprintf(taints, sizeof(taints),
	         "[{key: steadfast.test/pool, value: %s, effect: NoSchedule}]", NS);
	create_node_named(NODE, labels, taints, 4, 1);
	create_node_named(NODE2, labels, taints, 4, 1);
	snprintf(rf, sizeof(rf),
	         "  nodeLabels: {steadfast.test/pool: %s}\n"
	         "  tolerations: [{key: steadfast.test/pool, operator: Equal, value: %s, "
	         "effect: NoSchedule}]",
	         NS, NS);
	queues(rf, 8, 2, "");
}

/* Sets (value) or removes (NULL) the GPU health label of node. */
static void label_node(const char *node, const char *value)
{
	char body[256];
	if (value)
		snprintf(body, sizeof(body),
		         "{\"metadata\":{\"labels\":{\"" GPUHEALTH "\":\"%s\"}}}", value);
	else
		snprintf(body, sizeof(body),
		         "{\"metadata\":{\"labels\":{\"" GPUHEALTH "\":null}}}");
	tl_res r;
	sf_kube_req q = {.method = "PATCH",
	                 .gvr = &GVR_NODES,
	                 .name = node,
	                 .content_type = "application/merge-patch+json",
	                 .body = body,
	                 .body_len = strlen(body)};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200, "labelling node %s: %ld %s", node, r.http_status,
	             r.message);
	tl_res_clear(&r);
}

/* A GPU AppWrapper of one long-running pod on the pool: Running, its pod
 * bound (into *p); the pod carries Autopilot's anti-affinities. */
static void gpu_aw_running(const char *name, pod_node *p)
{
	sf_obj_unref(create_aw(name, 1, 1, "\"steadfast.test/kwok-run-for\":\"10m\"",
	                       "\"" SF_AW_ANNOT_PREFIX "retryLimit\":\"1\","
	                       "\"" SF_AW_ANNOT_PREFIX "retryPausePeriodDuration\":\"1s\"",
	                       NULL));
	tl_aw_wait_phase(&W, name, "Running", 60000);
	p->aw = name;
	if (tl_run_until_fn(&K.loop, pod_bound, p, 30000) != 0) {
		tl_aw_dump(&W, name);
		cr_assert_fail("no pod of %s bound to a node in 30 s", name);
	}
	cr_assert(strcmp(p->node, NODE) == 0 || strcmp(p->node, NODE2) == 0,
	          "pod on %s, not on the pool", p->node);
	sf_obj *pod = sf_store_get_ns(sf_informer_store(W.pods), NS, p->pod);
	cr_assert_not_null(pod);
	sf_jv aff = sf_jv_path(sf_obj_root(pod), "spec.affinity.nodeAffinity");
	sf_jv req =
	    sf_jv_path(aff, "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
	                    "matchExpressions[0]");
	cr_assert(sf_jv_streq(sf_jv_get(req, "key"), GPUHEALTH) &&
	              sf_jv_streq(sf_jv_get(req, "operator"), "NotIn") &&
	              sf_jv_streq(sf_jv_at(sf_jv_get(req, "values"), 1), "EVICT"),
	          "the pod lacks the required anti-affinity: %s", pod->json);
	sf_jv pref = sf_jv_path(aff, "preferredDuringSchedulingIgnoredDuringExecution[0]");
	int64_t w = 0;
	sf_jv_int64(sf_jv_get(pref, "weight"), &w);
	cr_assert_eq(w, 50, "the pod lacks the preferred anti-affinity: %s", pod->json);
}

static int64_t resets_of(const char *aw)
{
	int64_t n = -1;
	sf_jv_int64(sf_jv_path(sf_obj_root(tl_aw_cached(&W, aw)), "status.resettingCount"), &n);
	return n < 0 ? 0 : n;
}

/* Labelling a running GPU AppWrapper's node EVICT resets it once, without
 * consuming retryLimit, with upstream's reason and message; its new pod
 * avoids the node (the required anti-affinity) and runs on the other. */
Test(kueue, i_an_evict_label_evacuates_once_without_a_retry)
{
	gpu_pool();
	pod_node p = {0};
	gpu_aw_running("evac", &p);
	const char *other = strcmp(p.node, NODE) == 0 ? NODE2 : NODE;
	size_t from = tl_ctl_nlines(CTL);
	label_node(p.node, "EVICT");
	if (tl_run_until_fn(&K.loop, resetting, "evac", 30000) != 0) {
		tl_aw_dump(&W, "evac");
		cr_assert_fail("no evacuation in 30 s after labelling %s EVICT", p.node);
	}
	char reason[TL_AW_REASON_LEN] = "", msg[TL_AW_MESSAGE_LEN] = "", want[512];
	tl_aw_cond(&W, "evac", "Unhealthy", reason, msg);
	cr_assert_str_eq(reason, "AutopilotNoExecute");
	snprintf(want, sizeof(want),
	         "Workload contains pods using NoExecute resources on Nodes: [%s]", p.node);
	cr_assert_str_eq(msg, want);
	tl_aw_events ev = tl_aw_wait_event(&W, "evac", want, 10000);
	cr_assert(!ev.warning, "upstream's evacuation event is Normal");
	if (tl_run_until_fn(&K.loop, running_again, "evac", 60000) != 0) {
		tl_aw_dump(&W, "evac");
		cr_assert_fail("not Running again after the evacuation in 60 s");
	}
	other_pod o = {.aw = "evac", .not = p.pod};
	if (tl_run_until_fn(&K.loop, other_pod_found, &o, 30000) != 0) {
		tl_aw_dump(&W, "evac");
		cr_assert_fail("no new pod after the evacuation in 30 s");
	}
	pod_node q = {.aw = "evac"};
	snprintf(q.pod, sizeof(q.pod), "%s", o.name);
	sf_obj *np = NULL;
	for (long ms = 30000; ms > 0; ms -= 100) {
		np = sf_store_get_ns(sf_informer_store(W.pods), NS, o.name);
		if (np && sf_jv_ok(sf_jv_path(sf_obj_root(np), "spec.nodeName")))
			break;
		pause_loop(100);
	}
	cr_assert_not_null(np);
	cr_assert(sf_jv_streq(sf_jv_path(sf_obj_root(np), "spec.nodeName"), other),
	          "the new pod is not on the healthy node %s: %s", other, np->json);
	cr_assert_eq(resets_of("evac"), 0, "the evacuation consumed a retry");
	cr_assert_eq(tl_ctl_count(CTL, "evacuating from NoExecute nodes", from), 1,
	             "not exactly one evacuation");
	track *t = track_of("evac");
	cr_assert_eq(t->njob_uids, 2, "%d Jobs: the evacuation re-creates the Job once",
	             t->njob_uids);
	cr_assert_eq(t->resuspended, 0, "suspended again during the evacuation");
	cr_assert(!t->failed);
}

/* The node cache shows EVICT, but the label is gone when the live read is
 * made (the test build holds the read back 4 s; the test removes the label
 * in that window): no evacuation, the suppression logged and counted. */
Test(kueue, j_a_label_gone_before_the_live_read_suppresses_the_evacuation)
{
	tl_ctl_stop_all(&K.loop);
	static const char *const env[] = {"STEADFAST_FAULT_NODE_CHECK_DELAY_MS=4000", NULL};
	tl_ctl_opts co = {.ns = NS,
	                  .lease = "steadfast-kueue",
	                  .id = "kueue-held",
	                  .config = CFG,
	                  .faults = 1,
	                  .env = env};
	CTL = tl_ctl_start(&K.loop, &co);
	gpu_pool();
	pod_node p = {0};
	gpu_aw_running("stay", &p);
	size_t from = tl_ctl_nlines(CTL);
	label_node(p.node, "EVICT");
	cr_assert_geq(tl_ctl_wait_log(&K.loop, CTL, "confirming NoExecute nodes with live reads",
	                              from, 20000),
	              0, "the controller never saw the EVICT label");
	label_node(p.node, NULL);
	cr_assert_geq(
	    tl_ctl_wait_log(&K.loop, CTL, "not in live reads: not evacuating", from, 20000), 0,
	    "no suppression logged");
	track *t = track_of("stay");
	cr_assert(!t->resetting, "evacuated although the label was gone");
	cr_assert(sf_jv_streq(sf_jv_path(sf_obj_root(tl_aw_cached(&W, "stay")), "status.phase"),
	                      "Running"));
	cr_assert_eq(resets_of("stay"), 0);
	cr_assert_eq(t->njob_uids, 1);
	cr_assert_eq(tl_ctl_count(CTL, "evacuating from NoExecute nodes", from), 0);
	sf_buf b;
	sf_buf_init(&b, 0);
	int port = tl_ctl_port(&K.loop, CTL, "metrics");
	cr_assert_eq(tl_ctl_http_get(port, "/metrics", &b), 200);
	const char *m = strstr(b.data, "\nsteadfast_appwrapper_evacuations_suppressed_total ");
	cr_assert(m && atol(m + 51) >= 1, "%s", b.data);
	m = strstr(b.data, "\nsteadfast_appwrapper_evacuations_total ");
	cr_assert(m && atol(m + 40) == 0, "%s", b.data);
	sf_buf_free(&b);
}

/* ---- Kueue's own defaulting ---- */

static const sf_gvr GVR_LOCALQUEUES = {"kueue.x-k8s.io", "v1beta2", "localqueues", 1};

/* Kueue's webhook gives an AppWrapper created without a queue name the
 * LocalQueue named `default` when its namespace has one (Kueue's
 * LocalQueueDefaulting, locked on in v0.17), and suspends it; Steadfast,
 * deployed with manageJobsWithoutQueueName false, then runs it through
 * that queue like any other. */
Test(kueue, k_kueue_defaults_the_queue_to_the_local_queue_named_default)
{
	queues("", 4, 0, "");
	char y[512], lq[] = "default";
	snprintf(
	    y, sizeof(y),
	    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: default\n"
	    "spec:\n  clusterQueue: %s-cq\n",
	    NS);
	apply(y);
	for (long ms = 30000;; ms -= 200) {
		sf_obj *o = get_obj(&GVR_LOCALQUEUES, lq);
		char st[16] = "";
		if (o)
			tl_aw_condition(sf_jv_path(sf_obj_root(o), "status.conditions"), "Active",
			                st, sizeof(st));
		sf_obj_unref(o);
		if (strcmp(st, "True") == 0)
			break;
		cr_assert_gt(ms, 0, "LocalQueue default not Active in 30 s");
		pause_loop(200);
	}
	sf_obj *o = create_job_aw_in(NULL, "unqueued", "1", 0, "",
	                             "\"steadfast.test/kwok-run-for\":\"1s\"", "", NULL);
	sf_jv root = sf_obj_root(o);
	cr_assert(sf_jv_streq(sf_jv_get(sf_jv_path(root, "metadata.labels"), SF_AW_QUEUE_LABEL),
	                      "default"),
	          "Kueue's webhook did not default the queue name: %s", o->json);
	cr_assert_eq(sf_jv_type(sf_jv_path(root, "spec.suspend")), SF_JSON_TRUE,
	             "not suspended at creation: %s", o->json);
	sf_obj_unref(o);
	tl_aw_wait_phase(&W, "unqueued", "Succeeded", 60000);
	wait_wl_cond("unqueued", "Finished", "True", 30000);
	sf_obj *wl = workload_of("unqueued");
	cr_assert(sf_jv_streq(sf_jv_path(sf_obj_root(wl), "spec.queueName"), "default"), "%s",
	          wl->json);
	track *t = track_of("unqueued");
	cr_assert(t->wl_admitted, "its Workload was never admitted");
	wait_cq_empty(30000);
}
