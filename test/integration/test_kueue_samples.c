/*
 * test_kueue_samples.c - the samples of the shapes users copy from
 * upstream's documentation and end-to-end tests, each loaded from its file
 * in test/samples and run to the end on the kueue suite's control plane
 * (test_kueue.c: real Kueue, kube-scheduler, kwok nodes; nothing here plays
 * Kueue or the kubelet):
 *
 *   job-generatename.yaml          a Job named by the API server
 *                                  (generateName), its pod set declared
 *   job-and-pod.yaml               a Job and a bare Pod of a generated
 *                                  name, pod sets inferred
 *   job-service-pod.yaml           a Service, a Job and a bare Pod, pod
 *                                  sets declared
 *   pods-generatename.yaml         two bare Pods of one generateName prefix
 *   service-pod-generatename.yaml  a Service and a server Pod that never
 *                                  exits (restartPolicy Always), generated
 *                                  name, pod set inferred
 *
 * No template names a namespace. Each sample is created as it is in the
 * file (its queue label names the LocalQueue `default-queue`, which the
 * test makes on the suite's ClusterQueue), and must:
 *   - be suspended by Kueue's webhook at creation and admitted by Kueue,
 *     whose Workload has one pod set per pod set the sample declares or
 *     the controller infers (Pod: `template` x1; Job: `template.spec.
 *     template` x parallelism; Service: none), with the same counts, and
 *     take Kueue's podSetInfos (one per pod set);
 *   - go Running, then Succeeded once every pod kwok ran on a kwok node
 *     the scheduler chose succeeded (a Job's when the Job is complete, a
 *     bare Pod of restartPolicy Never by kwok's steadfast-bare-pod-complete
 *     stage), its Workload Finished and the ClusterQueue's usage back to
 *     0; a server instead stays Running with PodsReady True
 *     (SufficientPodsReady), every pod Running on a kwok node; never
 *     Failed, reset, MissingComponent or suspended again, its Workload
 *     never without quota before Finished;
 *   - record each component in status.componentStatus: kind, apiVersion,
 *     the pod sets, ResourcesDeployed True, and the name the object has in
 *     the AppWrapper's namespace: the template's, or for generateName the
 *     one the API server chose (the prefix and 5 more characters, the
 *     object carrying the component index), one object per component
 *     (live LISTs by label);
 *   - once deleted, take every component and pod with it (live reads) and
 *     give its quota back.
 *
 * One test per sample, so a failure names it; each phase change of the
 * sample is recorded as the watch delivers it. The server sample is also
 * preempted by Kueue (a WorkloadPriorityClass label added to its file's
 * labels): suspended, its Service and Pod deleted, then admitted again
 * after the preemptor finished and its Pod created under a new generated
 * name, recorded in place of the first; one Pod live at a time.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awapi.h"
#include "steadfast/awphase.h"
#include "steadfast/buf.h"
#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/json.h"
#include "kueue_suite.h"
#include "tl.h"
#include "tl_aw.h"
#include "tl_kueue.h"

static const sf_gvr GVR_SERVICES = {"", "v1", "services", 1};
static const sf_gvr GVR_NODES = {"", "v1", "nodes", 0};
static const sf_gvr GVR_LOCALQUEUES = {"kueue.x-k8s.io", "v1beta2", "localqueues", 1};

#define MAX_COMPS 8
#define MAX_PODSETS 8

/* What a component of the sample must become, read from the sample file
 * (pod sets inferred by the documented rule when none are declared). */
typedef struct want_comp {
	char api_version[64], kind[64];
	char name[254];   /* metadata.name, or "" */
	char prefix[254]; /* metadata.generateName when there is no name */
	const sf_gvr *gvr;
	int pods; /* pods it has made when done: a Job's completions, a Pod's 1 */
	size_t npodsets;
	char path[MAX_PODSETS][128];
	int64_t replicas[MAX_PODSETS];
} want_comp;

typedef struct want {
	char file[4096];
	char aw[254];
	size_t ncomps;
	want_comp comps[MAX_COMPS];
	int pods;         /* all of them */
	int long_running; /* a bare Pod of restartPolicy Always: never Succeeded */
} want;

/* The phases the watch delivered for one AppWrapper, in order, each
 * change of phase once ("Suspended Resuming Running Succeeded"). */
typedef struct phases {
	const char *aw;
	char seen[512];
	char last[32];
} phases;

static void phase_seen(void *ud, sf_obj *o)
{
	phases *p = ud;
	char ph[32] = "";
	if (strcmp(o->name, p->aw) != 0 ||
	    sf_jv_str(sf_jv_path(sf_obj_root(o), "status.phase"), ph, sizeof(ph)) < 0 ||
	    strcmp(ph, p->last) == 0)
		return;
	snprintf(p->last, sizeof(p->last), "%s", ph);
	size_t at = strlen(p->seen);
	snprintf(p->seen + at, sizeof(p->seen) - at, "%s%s", at ? " " : "", ph);
}

static void phase_add(void *ud, sf_obj *o)
{
	phase_seen(ud, o);
}

static void phase_update(void *ud, sf_obj *old, sf_obj *o)
{
	(void)old;
	phase_seen(ud, o);
}

static int64_t int_or(sf_jv v, int64_t dflt)
{
	int64_t n;
	return sf_jv_ok(v) && sf_jv_int64(v, &n) == 0 ? n : dflt;
}

/* Reads the sample `file` (a name in test/samples) into w. */
static void read_sample(const char *file, want *w)
{
	char rel[512];
	memset(w, 0, sizeof(*w));
	snprintf(rel, sizeof(rel), TL_AW_SAMPLES_DIR "/%s", file);
	tl_aw_src_path(rel, w->file, sizeof(w->file));
	char *json = tl_aw_yaml_json(w->file);
	sf_jv root = sf_jv_root(json, strlen(json));
	cr_assert_geq(sf_jv_str(sf_jv_path(root, "metadata.name"), w->aw, sizeof(w->aw)), 0,
	              "%s: no name", file);
	cr_assert(sf_jv_streq(sf_jv_get(sf_jv_path(root, "metadata.labels"), SF_AW_QUEUE_LABEL),
	                      "default-queue"),
	          "%s: not in LocalQueue default-queue", file);
	sf_jv comps = sf_jv_path(root, "spec.components");
	w->ncomps = sf_jv_len(comps);
	cr_assert(w->ncomps > 0 && w->ncomps <= MAX_COMPS, "%s: %zu components", file, w->ncomps);
	for (size_t c = 0; c < w->ncomps; c++) {
		want_comp *wc = &w->comps[c];
		sf_jv comp = sf_jv_at(comps, c);
		sf_jv t = sf_jv_get(comp, "template");
		sf_jv_str(sf_jv_get(t, "apiVersion"), wc->api_version, sizeof(wc->api_version));
		sf_jv_str(sf_jv_get(t, "kind"), wc->kind, sizeof(wc->kind));
		sf_jv md = sf_jv_get(t, "metadata");
		cr_assert(!sf_jv_ok(sf_jv_get(md, "namespace")),
		          "%s: component %zu names a namespace", file, c);
		if (sf_jv_str(sf_jv_get(md, "name"), wc->name, sizeof(wc->name)) < 0)
			cr_assert_geq(sf_jv_str(sf_jv_get(md, "generateName"), wc->prefix,
			                        sizeof(wc->prefix)),
			              0, "%s: component %zu has neither name nor generateName",
			              file, c);
		/* the kinds of these samples, and the pod sets upstream infers
		 * for them */
		const char *inferred = NULL;
		int64_t inferred_replicas = 0;
		sf_jv spec = sf_jv_get(t, "spec");
		if (strcmp(wc->api_version, "v1") == 0 && strcmp(wc->kind, "Pod") == 0) {
			wc->gvr = &SF_GVR_PODS;
			wc->pods = 1;
			char rp[32] = "Always";
			sf_jv_str(sf_jv_get(spec, "restartPolicy"), rp, sizeof(rp));
			if (strcmp(rp, "Always") == 0)
				w->long_running = 1;
			inferred = "template";
			inferred_replicas = 1;
		} else if (strcmp(wc->api_version, "batch/v1") == 0 &&
		           strcmp(wc->kind, "Job") == 0) {
			wc->gvr = &SF_GVR_JOBS;
			inferred = "template.spec.template";
			inferred_replicas = int_or(sf_jv_get(spec, "parallelism"), 1);
			wc->pods = (int)int_or(sf_jv_get(spec, "completions"), inferred_replicas);
		} else if (strcmp(wc->api_version, "v1") == 0 && strcmp(wc->kind, "Service") == 0) {
			wc->gvr = &GVR_SERVICES;
		} else {
			cr_assert_fail("%s: component %zu is a %s %s, which this test cannot run",
			               file, c, wc->api_version, wc->kind);
		}
		w->pods += wc->pods;
		sf_jv ps = sf_jv_get(comp, "podSets");
		if (sf_jv_ok(ps)) {
			wc->npodsets = sf_jv_len(ps);
			cr_assert_leq(wc->npodsets, MAX_PODSETS);
			for (size_t i = 0; i < wc->npodsets; i++) {
				sf_jv p = sf_jv_at(ps, i);
				sf_jv_str(sf_jv_get(p, "path"), wc->path[i], sizeof(wc->path[i]));
				wc->replicas[i] = int_or(sf_jv_get(p, "replicas"), 1);
			}
		} else if (inferred) {
			wc->npodsets = 1;
			snprintf(wc->path[0], sizeof(wc->path[0]), "%s", inferred);
			wc->replicas[0] = inferred_replicas;
		}
	}
	free(json);
}

/* A LocalQueue "default-queue" on the suite's ClusterQueue, Active. */
static void default_queue(void)
{
	tl_kube *k = kueue_suite_kube();
	const char *ns = kueue_suite_ns();
	char y[512];
	snprintf(y, sizeof(y),
	         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n"
	         "  name: default-queue\nspec:\n  clusterQueue: %s-cq\n",
	         ns);
	tl_aw_apply_yaml(k, ns, y, NULL, NULL);
	for (long ms = 30000;; ms -= 200) {
		sf_obj *o = tl_kueue_get(k, &GVR_LOCALQUEUES, ns, "default-queue");
		char st[16] = "";
		if (o)
			tl_aw_condition(sf_jv_path(sf_obj_root(o), "status.conditions"), "Active",
			                st, sizeof(st));
		sf_obj_unref(o);
		if (strcmp(st, "True") == 0)
			return;
		cr_assert_gt(ms, 0, "LocalQueue default-queue not Active in 30 s");
		tl_kueue_pause(k, 200);
	}
}

/* GET of the object of component wc named name in the suite's namespace:
 * the object (owned), or NULL when the API server answers 404. */
static sf_obj *get_component(const want_comp *wc, const char *name)
{
	return tl_kueue_get(kueue_suite_kube(), wc->gvr, kueue_suite_ns(), name);
}

/* The pods of AppWrapper aw in the watch's cache: how many, how many in
 * phase `phase`. */
typedef struct pod_count {
	const char *aw, *phase;
	int all, in_phase;
	char other[512]; /* the pods in another phase: name and phase */
} pod_count;

static int pod_visit(void *ud, sf_obj *o)
{
	pod_count *c = ud;
	sf_jv root = sf_obj_root(o);
	if (!sf_jv_streq(sf_jv_get(sf_jv_path(root, "metadata.labels"), SF_AW_LABEL), c->aw))
		return 0;
	c->all++;
	char ph[32] = "";
	sf_jv_str(sf_jv_path(root, "status.phase"), ph, sizeof(ph));
	if (strcmp(ph, c->phase) == 0)
		c->in_phase++;
	else {
		size_t at = strlen(c->other);
		snprintf(c->other + at, sizeof(c->other) - at, " %s:%s", o->name, ph[0] ? ph : "-");
	}
	return 0;
}

typedef struct pods_in {
	const char *aw, *phase;
	int want;
	pod_count last;
} pods_in;

/* AppWrapper aw has `want` pods, all in phase `phase`. */
static int all_pods_in(void *ud)
{
	pods_in *d = ud;
	memset(&d->last, 0, sizeof(d->last));
	d->last.aw = d->aw;
	d->last.phase = d->phase;
	sf_store_each(sf_informer_store(kueue_suite_watch()->pods), pod_visit, &d->last);
	return d->last.all == d->want && d->last.in_phase == d->want;
}

/* The pod was bound by kube-scheduler to a node kwok runs. */
static void assert_on_kwok_node(sf_obj *pod)
{
	char node[254];
	cr_assert_geq(sf_jv_str(sf_jv_path(sf_obj_root(pod), "spec.nodeName"), node, sizeof(node)),
	              0, "pod %s not bound: %s", pod->name, pod->json);
	sf_obj *n = tl_kueue_get(kueue_suite_kube(), &GVR_NODES, NULL, node);
	cr_assert_not_null(n, "pod %s bound to %s, which does not exist", pod->name, node);
	cr_assert(
	    sf_jv_streq(sf_jv_get(sf_jv_path(sf_obj_root(n), "metadata.labels"), "type"), "kwok"),
	    "pod %s bound to %s, not a kwok node: %s", pod->name, node, n->json);
	sf_obj_unref(n);
}

typedef struct pod_check {
	const char *aw;
	int n;
} pod_check;

static int pod_check_visit(void *ud, sf_obj *o)
{
	pod_check *c = ud;
	if (sf_jv_streq(sf_jv_get(sf_jv_path(sf_obj_root(o), "metadata.labels"), SF_AW_LABEL),
	                c->aw)) {
		assert_on_kwok_node(o);
		c->n++;
	}
	return 0;
}

/* The object of component index c, as recorded: in the namespace under
 * the recorded name, labelled and controlled by the AppWrapper (uid), and
 * for a generated name, carrying its component index. */
static void assert_component(const want *w, size_t c, const char *name, const char *aw_uid)
{
	const want_comp *wc = &w->comps[c];
	sf_obj *o = get_component(wc, name);
	cr_assert_not_null(o, "%s: component %zu (%s %s) not found", w->aw, c, wc->kind, name);
	sf_jv root = sf_obj_root(o);
	cr_assert_str_eq(o->ns, kueue_suite_ns(), "%s: component %zu in namespace %s", w->aw, c,
	                 o->ns);
	cr_assert(sf_jv_streq(sf_jv_get(sf_jv_path(root, "metadata.labels"), SF_AW_LABEL), w->aw),
	          "%s: component %zu without the AppWrapper label: %s", w->aw, c, o->json);
	int controlled = 0;
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(root, "metadata.ownerReferences"));
	sf_jv ref;
	while (sf_jv_next(&it, NULL, &ref))
		controlled |= sf_jv_streq(sf_jv_get(ref, "kind"), "AppWrapper") &&
		              sf_jv_streq(sf_jv_get(ref, "uid"), aw_uid) &&
		              sf_jv_type(sf_jv_get(ref, "controller")) == SF_JSON_TRUE;
	cr_assert(controlled, "%s: component %zu not controlled by the AppWrapper: %s", w->aw, c,
	          o->json);
	if (wc->prefix[0]) {
		char ix[24];
		snprintf(ix, sizeof(ix), "%zu", c);
		cr_assert(sf_jv_streq(sf_jv_path(root, "metadata.generateName"), wc->prefix),
		          "%s: component %zu: %s", w->aw, c, o->json);
		cr_assert(sf_jv_streq(sf_jv_get(sf_jv_path(root, "metadata.annotations"),
		                                SF_AW_COMPONENT_INDEX),
		                      ix),
		          "%s: component %zu without its index: %s", w->aw, c, o->json);
	}
	if (wc->gvr == &SF_GVR_JOBS) {
		/* complete, every completion made, as the API server has it */
		char st[16] = "";
		tl_aw_condition(sf_jv_path(root, "status.conditions"), "Complete", st, sizeof(st));
		cr_assert_str_eq(st, "True", "%s: Job %s not complete: %s", w->aw, name, o->json);
		cr_assert_eq(int_or(sf_jv_path(root, "status.succeeded"), -1), wc->pods,
		             "%s: Job %s: %s", w->aw, name, o->json);
	}
	if (wc->gvr == &SF_GVR_PODS) {
		const char *phase = w->long_running ? "Running" : "Succeeded";
		cr_assert(sf_jv_streq(sf_jv_path(root, "status.phase"), phase),
		          "%s: pod %s not %s: %s", w->aw, name, phase, o->json);
		assert_on_kwok_node(o);
	}
	sf_obj_unref(o);
}

/* How many objects of gvr labelled for AppWrapper aw a live LIST of the
 * suite's namespace answers. */
static unsigned long live_count(const sf_gvr *gvr, const char *aw)
{
	char sel[320];
	snprintf(sel, sizeof(sel), "labelSelector=" SF_AW_GROUP "%%2Fappwrapper%%3D%s", aw);
	tl_res r;
	sf_kube_req q = {.method = "GET", .gvr = gvr, .ns = kueue_suite_ns(), .query = sel};
	tl_do(kueue_suite_kube(), &q, &r);
	cr_assert_eq(r.http_status, 200, "LIST %s: %ld %s", gvr->resource, r.http_status,
	             r.message);
	sf_jv items = sf_jv_get(sf_obj_root(r.obj), "items");
	unsigned long n = sf_jv_len(items);
	tl_res_clear(&r);
	return n;
}

typedef struct phase_wait {
	const char *aw, *phase;
	int failed; /* reached Failed instead */
} phase_wait;

static int phase_or_failed(void *ud)
{
	phase_wait *p = ud;
	sf_obj *o = tl_aw_cached(kueue_suite_watch(), p->aw);
	sf_jv ph = o ? sf_jv_path(sf_obj_root(o), "status.phase") : SF_JV_NONE;
	p->failed = sf_jv_streq(ph, "Failed");
	return sf_jv_streq(ph, p->phase) || p->failed;
}

/* Waits until AppWrapper aw is in phase `phase`; fails the test at once
 * when it is Failed (naming why), or after ms. */
static void wait_phase(const char *file, const char *aw, const char *phase, long ms)
{
	tl_aw_watch *W = kueue_suite_watch();
	phase_wait p = {aw, phase, 0};
	int rc = tl_run_until_fn(&kueue_suite_kube()->loop, phase_or_failed, &p, ms);
	if (rc == 0 && !p.failed)
		return;
	tl_aw_dump(W, aw);
	char reason[TL_AW_REASON_LEN] = "", msg[TL_AW_MESSAGE_LEN] = "";
	tl_aw_cond(W, aw, "Unhealthy", reason, msg);
	if (p.failed)
		cr_assert_fail("%s: %s Failed, not %s: Unhealthy %s: %s", file, aw, phase, reason,
		               msg);
	cr_assert_fail("%s: %s not %s in %ld ms (Unhealthy %s: %s)", file, aw, phase, ms, reason,
	               msg);
}

static int aw_gone(void *ud)
{
	return tl_aw_cached(kueue_suite_watch(), ud) == NULL;
}

/* Runs sample `file` from creation to deletion (the file's comment). */
static void run_sample(const char *file)
{
	tl_kube *k = kueue_suite_kube();
	tl_aw_watch *W = kueue_suite_watch();
	want w;
	read_sample(file, &w);
	kueue_suite_queues("", 8, 0, "");
	default_queue();

	/* static: the handler stays until the suite's tear-down */
	static phases ph;
	static char aw_name[254];
	snprintf(aw_name, sizeof(aw_name), "%s", w.aw);
	ph.aw = aw_name;
	sf_informer_handler h = {.on_add = phase_add, .on_update = phase_update};
	cr_assert_eq(sf_informer_add_handler(W->aws, &h, &ph), 0);

	/* the file as it is, created in the suite's namespace */
	tl_aw_applied a;
	cr_assert_eq(tl_aw_apply_yaml(k, kueue_suite_ns(), w.file, NULL, &a), 1);
	cr_assert_eq(a.docs[0].http_status, 201, "%s: %ld %s", file, a.docs[0].http_status,
	             a.docs[0].message);
	sf_jv created = sf_obj_root(a.docs[0].obj);
	cr_assert_eq(sf_jv_type(sf_jv_path(created, "spec.suspend")), SF_JSON_TRUE,
	             "%s: not suspended by Kueue's webhook at creation: %s", file,
	             a.docs[0].obj->json);
	char aw_uid[64];
	snprintf(aw_uid, sizeof(aw_uid), "%s", a.docs[0].obj->uid);
	tl_aw_applied_clear(&a);

	/* admitted by Kueue, its Workload made of the pod sets declared or
	 * inferred */
	kueue_suite_wait_wl_cond(w.aw, "Admitted", "True", 60000);
	sf_obj *wl = kueue_suite_workload(w.aw);
	sf_jv wps = sf_jv_path(sf_obj_root(wl), "spec.podSets");
	size_t want_ps = 0;
	for (size_t c = 0; c < w.ncomps; c++)
		for (size_t i = 0; i < w.comps[c].npodsets; i++, want_ps++) {
			int64_t count = int_or(sf_jv_get(sf_jv_at(wps, want_ps), "count"), -1);
			cr_assert_eq(count, w.comps[c].replicas[i],
			             "%s: Workload pod set %zu (component %zu, %s) of %lld, want "
			             "%lld: %s",
			             file, want_ps, c, w.comps[c].path[i], (long long)count,
			             (long long)w.comps[c].replicas[i], wl->json);
		}
	cr_assert_eq(sf_jv_len(wps), want_ps, "%s: Workload of %zu pod sets, want %zu: %s", file,
	             sf_jv_len(wps), want_ps, wl->json);
	cr_assert_eq(sf_jv_len(sf_jv_path(sf_obj_root(wl), "status.admission.podSetAssignments")),
	             want_ps, "%s: %s", file, wl->json);

	/* run by kwok to the end, or for a server until its pods are ready */
	pods_in d = {.aw = w.aw, .want = w.pods};
	if (w.long_running) {
		wait_phase(file, w.aw, "Running", 60000);
		tl_aw_wait_cond(W, w.aw, "PodsReady", "True", 60000);
		d.phase = "Running";
	} else {
		wait_phase(file, w.aw, "Succeeded", 120000);
		d.phase = "Succeeded";
	}
	if (tl_run_until_fn(&k->loop, all_pods_in, &d, 15000) != 0) {
		tl_aw_dump(W, w.aw);
		cr_assert_fail("%s: %d pods of which %d %s, want %d; others:%s", file, d.last.all,
		               d.last.in_phase, d.phase, w.pods, d.last.other);
	}
	pod_check pc = {.aw = w.aw};
	sf_store_each(sf_informer_store(W->pods), pod_check_visit, &pc);
	cr_assert_eq(pc.n, w.pods);
	if (w.long_running) {
		char reason[TL_AW_REASON_LEN] = "", msg[TL_AW_MESSAGE_LEN] = "";
		tl_aw_cond(W, w.aw, "PodsReady", reason, msg);
		cr_assert_str_eq(reason, "SufficientPodsReady", "%s: %s", file, msg);
		cr_assert_str_eq(ph.last, "Running", "%s: phases seen: %s", file, ph.seen);
		kueue_suite_wait_wl_cond(w.aw, "Admitted", "True", 1000);
	} else {
		cr_assert(strstr(ph.seen, "Running Succeeded"), "%s: phases seen: %s", file,
		          ph.seen);
		kueue_suite_wait_wl_cond(w.aw, "Finished", "True", 30000);
	}
	kueue_suite_seen s = kueue_suite_seen_of(w.aw);
	cr_assert(s.unsuspended && s.wl_admitted, "%s: admission never seen", file);
	cr_assert_eq(s.resuspended, 0, "%s: suspended again after admission", file);
	cr_assert(!s.failed && !s.resetting && !s.missing,
	          "%s: Failed %d, Resetting %d, MissingComponent %d on the way (phases: %s)", file,
	          s.failed, s.resetting, s.missing, ph.seen);
	cr_assert_eq(s.wl_lost, 0, "%s: its Workload lost its quota before Finished", file);

	/* what the AppWrapper recorded of each component, and the objects */
	sf_obj *aw = tl_aw_cached(W, w.aw);
	sf_jv root = sf_obj_root(aw);
	sf_jv cs = sf_jv_path(root, "status.componentStatus");
	cr_assert_eq(sf_jv_len(cs), w.ncomps, "%s: %s", file, aw->json);
	char names[MAX_COMPS][254];
	int jobs = 0, bare_pods = 0, services = 0;
	for (size_t c = 0; c < w.ncomps; c++) {
		const want_comp *wc = &w.comps[c];
		sf_jv e = sf_jv_at(cs, c);
		cr_assert(sf_jv_streq(sf_jv_get(e, "kind"), wc->kind) &&
		              sf_jv_streq(sf_jv_get(e, "apiVersion"), wc->api_version),
		          "%s: componentStatus[%zu]: %s", file, c, aw->json);
		cr_assert_geq(sf_jv_str(sf_jv_get(e, "name"), names[c], sizeof(names[c])), 0,
		              "%s: componentStatus[%zu] without a name: %s", file, c, aw->json);
		if (wc->name[0])
			cr_assert_str_eq(names[c], wc->name, "%s: componentStatus[%zu]", file, c);
		else
			cr_assert(strncmp(names[c], wc->prefix, strlen(wc->prefix)) == 0 &&
			              strlen(names[c]) == strlen(wc->prefix) + 5,
			          "%s: componentStatus[%zu] names %s, not one the API server made "
			          "from %s",
			          file, c, names[c], wc->prefix);
		for (size_t o = 0; o < c; o++)
			cr_assert(strcmp(names[o], names[c]) != 0 ||
			              strcmp(w.comps[o].kind, wc->kind) != 0,
			          "%s: components %zu and %zu both recorded as %s %s", file, o, c,
			          wc->kind, names[c]);
		char st[16] = "", reason[64] = "";
		sf_jv_iter it = sf_jv_iter_init(sf_jv_get(e, "conditions"));
		sf_jv cond;
		while (sf_jv_next(&it, NULL, &cond))
			if (sf_jv_streq(sf_jv_get(cond, "type"), "ResourcesDeployed")) {
				sf_jv_str(sf_jv_get(cond, "status"), st, sizeof(st));
				sf_jv_str(sf_jv_get(cond, "reason"), reason, sizeof(reason));
			}
		cr_assert(strcmp(st, "True") == 0 &&
		              strcmp(reason, "ComponentCreatedSuccessfully") == 0,
		          "%s: componentStatus[%zu] ResourcesDeployed %s %s: %s", file, c, st,
		          reason, aw->json);
		sf_jv ps = sf_jv_get(e, "podSets");
		cr_assert_eq(sf_jv_len(ps), wc->npodsets, "%s: componentStatus[%zu] pod sets: %s",
		             file, c, aw->json);
		for (size_t i = 0; i < wc->npodsets; i++) {
			sf_jv p = sf_jv_at(ps, i);
			cr_assert(sf_jv_streq(sf_jv_get(p, "path"), wc->path[i]) &&
			              int_or(sf_jv_get(p, "replicas"), 1) == wc->replicas[i],
			          "%s: componentStatus[%zu].podSets[%zu], want %s x%lld: %s", file,
			          c, i, wc->path[i], (long long)wc->replicas[i], aw->json);
		}
		/* Kueue's podSetInfos, one per pod set, were taken */
		cr_assert_eq(sf_jv_len(sf_jv_path(sf_jv_at(sf_jv_path(root, "spec.components"), c),
		                                  "podSetInfos")),
		             wc->npodsets, "%s: component %zu podSetInfos: %s", file, c, aw->json);
		assert_component(&w, c, names[c], aw_uid);
		jobs += wc->gvr == &SF_GVR_JOBS;
		bare_pods += wc->gvr == &SF_GVR_PODS;
		services += wc->gvr == &GVR_SERVICES;
	}
	/* one object per component: nothing created twice */
	cr_assert_eq(live_count(&SF_GVR_JOBS, w.aw), (unsigned long)jobs, "%s: Jobs", file);
	cr_assert_eq(live_count(&GVR_SERVICES, w.aw), (unsigned long)services, "%s: Services",
	             file);
	cr_assert_eq(live_count(&SF_GVR_PODS, w.aw), (unsigned long)w.pods,
	             "%s: pods (%d of them bare)", file, bare_pods);
	if (!w.long_running)
		kueue_suite_wait_cq_empty(30000);

	/* deleted: every component and pod goes with it */
	long st = tl_aw_req(W, "DELETE", &SF_GVR_APPWRAPPERS, w.aw, NULL, NULL);
	cr_assert_eq(st, 200, "DELETE %s: %ld", w.aw, st);
	if (tl_run_until_fn(&k->loop, aw_gone, w.aw, 60000) != 0) {
		tl_aw_dump(W, w.aw);
		cr_assert_fail("%s: AppWrapper %s still there 60 s after its deletion", file, w.aw);
	}
	for (size_t c = 0; c < w.ncomps; c++) {
		sf_obj *o = get_component(&w.comps[c], names[c]);
		cr_assert_null(o, "%s: component %zu (%s %s) outlived the AppWrapper: %s", file, c,
		               w.comps[c].kind, names[c], o ? o->json : "");
	}
	cr_assert_eq(live_count(&SF_GVR_PODS, w.aw), 0, "%s: pods outlived the AppWrapper", file);
	/* a server's quota is given back with its deletion */
	kueue_suite_wait_cq_empty(30000);
}

/* The text of the sample file of w with `label: value` added to the
 * AppWrapper's own labels (its first `labels:` at 2 spaces), malloc'd. */
static char *sample_with_label(const want *w, const char *label, const char *value)
{
	FILE *f = fopen(w->file, "r");
	cr_assert(f, "%s: %s", w->file, strerror(errno));
	sf_buf b;
	sf_buf_init(&b, 0);
	char line[1024];
	int done = 0;
	while (fgets(line, sizeof(line), f)) {
		cr_assert_eq(sf_buf_append(&b, line, strlen(line)), 0);
		if (!done && strcmp(line, "  labels:\n") == 0) {
			char add[512];
			snprintf(add, sizeof(add), "    %s: %s\n", label, value);
			cr_assert_eq(sf_buf_append(&b, add, strlen(add)), 0);
			done = 1;
		}
	}
	fclose(f);
	cr_assert(done, "%s: no labels", w->file);
	char *out = sf_buf_detach(&b, NULL);
	cr_assert_not_null(out);
	return out;
}

typedef struct renamed {
	const char *aw;
	size_t comp;
	const char * not ;
	char name[254];
} renamed;

/* AppWrapper r->aw is Running with component r->comp recorded under
 * another name than r->not (into r->name). */
static int running_renamed(void *ud)
{
	renamed *r = ud;
	sf_obj *o = tl_aw_cached(kueue_suite_watch(), r->aw);
	r->name[0] = 0;
	if (!o || !sf_jv_streq(sf_jv_path(sf_obj_root(o), "status.phase"), "Running"))
		return 0;
	sf_jv cs = sf_jv_at(sf_jv_path(sf_obj_root(o), "status.componentStatus"), r->comp);
	sf_jv_str(sf_jv_get(cs, "name"), r->name, sizeof(r->name));
	return r->name[0] && strcmp(r->name, r->not ) != 0;
}

Test(kueue, s_sample_job_generatename)
{
	run_sample("job-generatename.yaml");
}

Test(kueue, s_sample_job_and_pod)
{
	run_sample("job-and-pod.yaml");
}

Test(kueue, s_sample_job_service_pod)
{
	run_sample("job-service-pod.yaml");
}

Test(kueue, s_sample_pods_generatename)
{
	run_sample("pods-generatename.yaml");
}

Test(kueue, s_sample_service_pod_generatename)
{
	run_sample("service-pod-generatename.yaml");
}

/* The server sample, low priority, on quota for it alone: a high-priority
 * AppWrapper makes Kueue preempt it; it is suspended and its components
 * deleted (the generated Pod by its recorded name), then admitted again
 * once the preemptor is done, its Pod created under a new name that
 * replaces the first in componentStatus; deleted, it takes that one. */
Test(kueue, s_sample_service_pod_generatename_preempted_and_readmitted)
{
	const char *file = "service-pod-generatename.yaml";
	tl_kube *k = kueue_suite_kube();
	tl_aw_watch *W = kueue_suite_watch();
	const char *ns = kueue_suite_ns();
	want w;
	read_sample(file, &w);
	size_t pod = w.ncomps, svc = w.ncomps;
	for (size_t c = 0; c < w.ncomps; c++) {
		if (w.comps[c].gvr == &SF_GVR_PODS && w.comps[c].prefix[0])
			pod = c;
		if (w.comps[c].gvr == &GVR_SERVICES)
			svc = c;
	}
	cr_assert(pod < w.ncomps && svc < w.ncomps && w.long_running,
	          "%s: not a Service and a server Pod of a generated name", file);

	char y[1024], low[96], high[96];
	snprintf(low, sizeof(low), "%s-low", ns); /* both deleted by the tear-down */
	snprintf(high, sizeof(high), "%s-high", ns);
	snprintf(y, sizeof(y),
	         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n"
	         "  name: %s\nvalue: 10\n---\n"
	         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n"
	         "  name: %s\nvalue: 1000\n",
	         low, high);
	tl_aw_apply_yaml(k, ns, y, NULL, NULL);
	kueue_suite_queues("", 1, 0, "  preemption: {withinClusterQueue: LowerPriority}");
	default_queue();

	char *text = sample_with_label(&w, "kueue.x-k8s.io/priority-class", low);
	tl_aw_apply_yaml(k, ns, text, NULL, NULL);
	free(text);
	wait_phase(file, w.aw, "Running", 60000);
	tl_aw_wait_cond(W, w.aw, "PodsReady", "True", 60000);
	char first[254] = "", service[254] = "";
	sf_jv cs = sf_jv_path(sf_obj_root(tl_aw_cached(W, w.aw)), "status.componentStatus");
	sf_jv_str(sf_jv_get(sf_jv_at(cs, pod), "name"), first, sizeof(first));
	sf_jv_str(sf_jv_get(sf_jv_at(cs, svc), "name"), service, sizeof(service));
	cr_assert(strncmp(first, w.comps[pod].prefix, strlen(w.comps[pod].prefix)) == 0, "%s",
	          first);
	sf_obj *o = get_component(&w.comps[pod], first);
	cr_assert_not_null(o, "the first pod %s is not there", first);
	sf_obj_unref(o);

	snprintf(y, sizeof(y),
	         "apiVersion: " SF_AW_API_VERSION "\nkind: AppWrapper\nmetadata:\n  name: boss\n"
	         "  labels: {" SF_AW_QUEUE_LABEL ": default-queue, "
	         "kueue.x-k8s.io/priority-class: %s}\n"
	         "spec:\n  components:\n  - template:\n      apiVersion: batch/v1\n"
	         "      kind: Job\n      metadata: {name: boss}\n      spec:\n"
	         "        template:\n          spec:\n            restartPolicy: Never\n"
	         "            containers:\n            - name: main\n"
	         "              image: busybox:1.36\n"
	         "              resources: {requests: {cpu: \"1\"}}\n",
	         high);
	tl_aw_apply_yaml(k, ns, y, NULL, NULL);
	kueue_suite_wait_wl_cond(w.aw, "Evicted", "True", 30000);
	wait_phase(file, w.aw, "Suspended", 60000);
	tl_aw_wait_all_gone(W, w.aw, 60000);
	cr_assert_null(get_component(&w.comps[pod], first), "%s: pod %s outlived the suspension",
	               file, first);
	cr_assert_null(get_component(&w.comps[svc], service),
	               "%s: Service %s outlived the suspension", file, service);

	wait_phase("boss", "boss", "Succeeded", 60000);
	renamed r = {.aw = w.aw, .comp = pod, .not = first};
	if (tl_run_until_fn(&k->loop, running_renamed, &r, 90000) != 0) {
		tl_aw_dump(W, w.aw);
		cr_assert_fail("%s: not Running again with a new pod in 90 s (recorded: %s)", file,
		               r.name);
	}
	tl_aw_wait_cond(W, w.aw, "PodsReady", "True", 60000);
	cr_assert(strncmp(r.name, w.comps[pod].prefix, strlen(w.comps[pod].prefix)) == 0 &&
	              strlen(r.name) == strlen(w.comps[pod].prefix) + 5,
	          "%s: recorded %s", file, r.name);
	o = get_component(&w.comps[pod], r.name);
	cr_assert_not_null(o, "%s: the new pod %s is not there", file, r.name);
	cr_assert(sf_jv_streq(sf_jv_path(sf_obj_root(o), "status.phase"), "Running"), "%s",
	          o->json);
	assert_on_kwok_node(o);
	sf_obj_unref(o);
	cr_assert_eq(live_count(&SF_GVR_PODS, w.aw), 1, "%s: more than the new pod", file);
	cr_assert_eq(live_count(&GVR_SERVICES, w.aw), 1, "%s: Services", file);
	kueue_suite_seen s = kueue_suite_seen_of(w.aw);
	cr_assert(!s.failed && !s.resetting && !s.missing,
	          "%s: Failed %d, Resetting %d, MissingComponent %d", file, s.failed, s.resetting,
	          s.missing);

	long st = tl_aw_req(W, "DELETE", &SF_GVR_APPWRAPPERS, w.aw, NULL, NULL);
	cr_assert_eq(st, 200, "DELETE %s: %ld", w.aw, st);
	if (tl_run_until_fn(&k->loop, aw_gone, w.aw, 60000) != 0) {
		tl_aw_dump(W, w.aw);
		cr_assert_fail("%s: still there 60 s after its deletion", file);
	}
	cr_assert_null(get_component(&w.comps[pod], r.name), "%s: pod %s outlived the AppWrapper",
	               file, r.name);
	cr_assert_eq(live_count(&SF_GVR_PODS, w.aw), 0, "%s: pods outlived the AppWrapper", file);
	kueue_suite_wait_cq_empty(30000);
}
