/*
 * test_node.c - Steadfast on one real node: a control plane of its own
 * started with `KUBELET=true test/cluster/up.sh` (containerd, runc and a
 * kubelet named `localhost`, test/cluster/node.sh), so pods really run,
 * probes are really judged and signals really sent.
 *
 *   - the Deployment for real: manifests/default applied with the few
 *     changes this machine needs (deploy() names each), the image from
 *     `make image` imported into the node; 3 replicas get Ready and exactly
 *     one holds the Lease; deleting the leader's pod sends it SIGTERM, it
 *     exits 0 having released the Lease, and another replica leads within
 *     2 s of the DELETE (about 0.1 s here: followers watch the Lease);
 *   - incident B with a real container: a Pod AppWrapper whose container
 *     (Debian's static busybox in an image FROM scratch) writes a message
 *     and exits 1 ends Failed with the exit code and message the runtime
 *     reported, and a Warning Event. Kueue is not part of this profile: the
 *     test admits the AppWrapper itself (spec.suspend=false). The
 *     controller is the Deployment's leader;
 *   - readiness judged by the kubelet: a follower whose API server
 *     connection is cut (its packets to the API relay rejected inside the
 *     node's network namespace) goes unready and is not restarted, and is
 *     Ready again once the connection is back;
 *   - the PodDisruptionBudget holds: with 3 replicas healthy, evicting one
 *     is allowed and evicting a second right after is refused (429).
 * The suite has one control plane and node for the whole run, in
 * /tmp/steadfast-node.<runner pid>: the first test starts it (up.sh does
 * nothing when it is up), the runner stops it once the suite is done;
 * $STEADFAST_NODE_CLUSTER_DIR names another one to use (and keep). The
 * Deployment, once applied, stays for the next test (applying it again
 * changes nothing); the failover test runs first, so the replicas' logs it
 * reads have seen no other test. Waits poll the API with deadlines.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "steadfast/jdoc.h"
#include "steadfast/json.h"
#include "steadfast/log.h"
#include "steadfast/time.h"
#include "steadfast/watch.h"
#include "steadfast/yaml.h"
#include "tl.h"
#include "tl_audit.h"
#include "tl_aw.h"
#include "tl_ctl.h"

#define DEFAULT_DIR "manifests/default"
#define CTL_NS "steadfast-system"
#define DEPLOYMENT "steadfast-controller"
#define LEASE "f134c674.codeflare.dev"
#define MAX_PODS 8

static char STATE[64]; /* the control plane's state dir */
static char NODE[64];
static tl_kube K;
static int K_OPEN;
static tl_aw_watch W; /* incident B's namespace under watch */

static int never(void *ud)
{
	(void)ud;
	return 0;
}

/* Lets the loop run for ms (the pause between two polls of a deadline loop). */
static void pause_ms(long ms)
{
	tl_run_until_fn(&K.loop, never, NULL, ms);
}

static double ms_since(int64_t t0)
{
	return (double)(sf_mono_ns() - t0) / 1e6;
}

/* ---- the suite's control plane ---- */

#define DIR_ENV "STEADFAST_NODE_CLUSTER_DIR"
/* the directory is named and stopped by suite_clusters.c */

static void node_fini(void)
{
	if (K_OPEN) {
		tl_ctl_stop_all(&K.loop);
		tl_aw_watch_stop(&W);
		tl_kube_close(&K);
	}
}

TestSuite(node, .fini = node_fini, .timeout = 420);

/* The suite's KUBELET=true control plane (started by the first test), and
 * K on its API server. */
static void node_up(void)
{
	sf_log_set_level(getenv("SF_DEBUG") ? SF_LOG_DEBUG : SF_LOG_WARN);
	const char *dir = getenv(DIR_ENV);
	cr_assert(dir && *dir && strlen(dir) < sizeof(STATE), DIR_ENV " is not set");
	snprintf(STATE, sizeof(STATE), "%s", dir);
	int64_t t0 = sf_mono_ns();
	cr_assert_eq(
	    tl_sh(NULL, "KUBELET=true test/cluster/up.sh '%s' >>'%s.log' 2>&1", STATE, STATE), 0,
	    "KUBELET=true up.sh failed: see %s.log", STATE);
	fprintf(stderr, "node: KUBELET=true up.sh took %.1f s\n", ms_since(t0) / 1000);
	sf_buf out;
	sf_buf_init(&out, 0);
	cr_assert_eq(tl_sh(&out, ". '%s/env' && printf %%s \"$STEADFAST_NODE\"", STATE), 0);
	cr_assert(out.len > 0 && out.len < sizeof(NODE), "no STEADFAST_NODE in %s/env", STATE);
	snprintf(NODE, sizeof(NODE), "%s", out.data);
	sf_buf_free(&out);
	char kc[128];
	snprintf(kc, sizeof(kc), "%s/admin.kubeconfig", STATE);
	tl_kube_open(&K, kc, NULL);
	K_OPEN = 1;
}

/* node-image.sh: podman's image ref into the node (or, ref NULL, the
 * busybox image it builds; its reference into out). */
static void node_image(const char *ref, char *out, size_t n)
{
	sf_buf o;
	sf_buf_init(&o, 0);
	int64_t t0 = sf_mono_ns();
	int rc = ref ? tl_sh(&o, "test/cluster/node-image.sh '%s' '%s' 2>&1", STATE, ref)
	             : tl_sh(&o, "test/cluster/node-image.sh '%s' --busybox 2>&1", STATE);
	cr_assert_eq(rc, 0, "node-image.sh %s: %s", ref ? ref : "--busybox", o.data);
	while (o.len && (o.data[o.len - 1] == '\n'))
		o.data[--o.len] = '\0';
	fprintf(stderr, "node: imported %s in %.1f s\n", ref ? ref : o.data, ms_since(t0) / 1000);
	if (out) {
		cr_assert(o.len > 0 && o.len < n && !strchr(o.data, '\n'), "node-image.sh: %s",
		          o.data);
		snprintf(out, n, "%s", o.data);
	}
	sf_buf_free(&o);
}

/* A request by raw path; the answer in r (tl_res_clear it). */
static void req_path(const char *method, const char *path, const char *query, const char *body,
                     tl_res *r)
{
	sf_kube_req req = {.method = method,
	                   .path = path,
	                   .query = query,
	                   .body = body,
	                   .body_len = body ? strlen(body) : 0};
	tl_do(&K, &req, r);
}

/* GET of path: the object (caller unrefs), NULL on 404; other answers fail. */
static sf_obj *get_obj(const char *path)
{
	tl_res r;
	req_path("GET", path, NULL, NULL, &r);
	if (r.http_status == 404) {
		tl_res_clear(&r);
		return NULL;
	}
	cr_assert_eq(r.http_status, 200, "GET %s: %ld %s %s", path, r.http_status, r.message,
	             r.errmsg);
	sf_obj *o = r.obj;
	r.obj = NULL;
	tl_res_clear(&r);
	return o;
}

/* ---- the Deployment from manifests/default ---- */

/* The documents of a kustomization tree, in kustomize's order (resources
 * depth first). Only `resources`, `namespace` and `images` are modelled,
 * and manifests/default uses no more (test_manifests.c checks that); the
 * namespace is already in every file and the image is replaced below. */
typedef struct docs {
	size_t n;
	char *json[128];
} docs;

static int collect(void *ud, size_t index, const char *json, size_t len)
{
	(void)index;
	docs *d = ud;
	cr_assert(d->n < 128);
	d->json[d->n] = strndup(json, len);
	cr_assert(d->json[d->n]);
	d->n++;
	return 0;
}

static void walk(docs *d, const char *dir, int depth)
{
	cr_assert(depth < 8, "kustomizations nested too deep at %s", dir);
	char kpath[512];
	snprintf(kpath, sizeof(kpath), "%s/kustomization.yaml", dir);
	char *json = tl_aw_yaml_json(kpath);
	sf_jv root = sf_jv_root(json, strlen(json));
	sf_jv_iter it = sf_jv_iter_init(root);
	sf_jv key, val;
	while (sf_jv_next(&it, &key, &val)) {
		char k[64] = "";
		sf_jv_str(key, k, sizeof(k));
		cr_assert(strcmp(k, "apiVersion") == 0 || strcmp(k, "kind") == 0 ||
		              strcmp(k, "resources") == 0 || strcmp(k, "namespace") == 0 ||
		              strcmp(k, "images") == 0,
		          "%s: `%s` is a kustomize feature this test does not model", kpath, k);
	}
	sf_jv_iter ri = sf_jv_iter_init(sf_jv_get(root, "resources"));
	while (sf_jv_next(&ri, NULL, &val)) {
		char rel[256] = "", path[512], full[1024], err[512] = "";
		cr_assert(sf_jv_str(val, rel, sizeof(rel)) > 0, "%s: a resource is not a path",
		          kpath);
		snprintf(path, sizeof(path), "%s/%s", dir, rel);
		if (strstr(rel, ".yaml")) {
			tl_aw_src_path(path, full, sizeof(full));
			cr_assert_eq(sf_yaml_file_to_json(full, 0, collect, d, err, sizeof(err)), 0,
			             "%s: %s", path, err);
		} else {
			walk(d, path, depth + 1);
		}
	}
	free(json);
}

/* The overlay for this machine, applied to the Deployment's JSON: each
 * change and why. Nothing else differs from manifests/default. */
static char *overlay_deployment(const char *json, const char *image)
{
	char err[256] = "";
	sf_jd *d = sf_jd_parse(json, strlen(json), err, sizeof(err));
	cr_assert_not_null(d, "Deployment: %s", err);
	sf_jd *ps = sf_jd_path(d, "spec.template.spec");
	cr_assert_not_null(ps);
	/* 1. No kube-scheduler in this profile: the pods are bound to the one
	 * node by name (the topology spread constraints, a scheduler's
	 * business, then have no effect; on one node they could not spread
	 * anyway). */
	cr_assert_eq(sf_jd_set_str(ps, "nodeName", NODE), 0);
	sf_jd *cs = sf_jd_get(ps, "containers");
	int found = 0;
	for (size_t i = 0; i < sf_jd_len(cs); i++) {
		sf_jd *c = sf_jd_at(cs, i, NULL);
		const char *name = sf_jd_str(sf_jd_get(c, "name"), NULL);
		if (!name || strcmp(name, "manager") != 0)
			continue;
		found = 1;
		/* 2. The image as imported into the node from podman's store
		 * (localhost/steadfast:VERSION; kustomize's `images` would make it
		 * steadfast:0.1.0, which the runtime would look up in its default
		 * registry). */
		cr_assert_eq(sf_jd_set_str(c, "image", image), 0);
		/* 3. No registry is reachable: never pull, use the imported image. */
		cr_assert_eq(sf_jd_set_str(c, "imagePullPolicy", "Never"), 0);
	}
	cr_assert(found, "no container `manager` in the Deployment");
	/* Not changed: pod networking. Each replica has its own network
	 * namespace on the node's pod network, so all three bind 8080/8081,
	 * and reach the API server at the `kubernetes` Service address with
	 * their in-cluster configuration; no hostNetwork (which the restricted
	 * namespace would refuse anyway). */
	char *out = sf_jd_dump(d);
	cr_assert_not_null(out);
	sf_jd_free(d);
	return out;
}

/* Applies manifests/default with the overlay. Skipped: the ServiceMonitor
 * (its CRD comes with the Prometheus Operator, not installed here). */
static void deploy(const char *image)
{
	docs d = {0};
	walk(&d, DEFAULT_DIR, 0);
	int deployments = 0;
	/* kustomize's order: Namespaces and CRDs before everything else */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < d.n; i++) {
			sf_jv root = sf_jv_root(d.json[i], strlen(d.json[i]));
			int first =
			    sf_jv_streq(sf_jv_get(root, "kind"), "Namespace") ||
			    sf_jv_streq(sf_jv_get(root, "kind"), "CustomResourceDefinition");
			if (first != (pass == 0) ||
			    sf_jv_streq(sf_jv_get(root, "kind"), "ServiceMonitor"))
				continue;
			char *doc = d.json[i];
			char *patched = NULL;
			if (sf_jv_streq(sf_jv_get(root, "kind"), "Deployment")) {
				patched = doc = overlay_deployment(d.json[i], image);
				deployments++;
			}
			/* JSON is YAML; the newline makes tl_aw_apply_yaml read it as text */
			sf_buf text;
			sf_buf_init(&text, 0);
			sf_buf_printf(&text, "%s\n", doc);
			tl_aw_apply_yaml(&K, NULL, text.data, NULL, NULL);
			sf_buf_free(&text);
			free(patched);
		}
	cr_assert_eq(deployments, 1, "%d Deployments in " DEFAULT_DIR, deployments);
	for (size_t i = 0; i < d.n; i++)
		free(d.json[i]);
}

/* ---- pods, the Deployment and the Lease ---- */

typedef struct pod {
	char name[128];
	char uid[64];
	char ip[64];
	int ready;    /* condition Ready is True */
	int deleting; /* has a deletionTimestamp */
	long restarts;
} pod;

/* The controller's pods: how many (at most MAX_PODS into p). */
static int list_pods(pod *p)
{
	tl_res r;
	req_path(
	    "GET", "/api/v1/namespaces/" CTL_NS "/pods",
	    "labelSelector=app.kubernetes.io%2Fname%3Dsteadfast%2Capp.kubernetes.io%2Fcomponent%"
	    "3Dcontroller",
	    NULL, &r);
	cr_assert_eq(r.http_status, 200, "list pods: %ld %s", r.http_status, r.message);
	sf_jv items = sf_jv_get(sf_obj_root(r.obj), "items");
	int n = 0;
	for (size_t i = 0; i < sf_jv_len(items) && n < MAX_PODS; i++) {
		sf_jv it = sf_jv_at(items, i);
		pod *q = &p[n++];
		memset(q, 0, sizeof(*q));
		sf_jv_str(sf_jv_path(it, "metadata.name"), q->name, sizeof(q->name));
		sf_jv_str(sf_jv_path(it, "metadata.uid"), q->uid, sizeof(q->uid));
		sf_jv_str(sf_jv_path(it, "status.podIP"), q->ip, sizeof(q->ip));
		q->deleting = sf_jv_ok(sf_jv_path(it, "metadata.deletionTimestamp"));
		sf_jv conds = sf_jv_path(it, "status.conditions");
		for (size_t c = 0; c < sf_jv_len(conds); c++) {
			sf_jv cd = sf_jv_at(conds, c);
			if (sf_jv_streq(sf_jv_get(cd, "type"), "Ready"))
				q->ready = sf_jv_streq(sf_jv_get(cd, "status"), "True");
		}
		sf_jv cst = sf_jv_path(it, "status.containerStatuses");
		for (size_t c = 0; c < sf_jv_len(cst); c++) {
			int64_t rc = 0;
			sf_jv_int64(sf_jv_get(sf_jv_at(cst, c), "restartCount"), &rc);
			q->restarts += (long)rc;
		}
	}
	tl_res_clear(&r);
	return n;
}

static const pod *find_pod(const pod *p, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(p[i].name, name) == 0)
			return &p[i];
	return NULL;
}

/* The Lease's holderIdentity ("" when released or absent). */
static void lease_holder(char *buf, size_t n)
{
	buf[0] = '\0';
	sf_obj *o = get_obj("/apis/coordination.k8s.io/v1/namespaces/" CTL_NS "/leases/" LEASE);
	if (!o)
		return;
	sf_jv_str(sf_jv_path(sf_obj_root(o), "spec.holderIdentity"), buf, n);
	sf_obj_unref(o);
}

/* The pod a holder identity names (identities are POD_NAME_<uuid>), or NULL. */
static const pod *holder_pod(const pod *p, int n, const char *holder)
{
	for (int i = 0; i < n; i++) {
		size_t len = strlen(p[i].name);
		if (strncmp(holder, p[i].name, len) == 0 && holder[len] == '_')
			return &p[i];
	}
	return NULL;
}

/* Waits until the Deployment has `want` updated replicas, all Ready and
 * none more, and exactly want live pods, all Ready: those into p. Returns
 * the wait in ms. */
static double wait_replicas_ready(int want, pod *p, long timeout_ms)
{
	int64_t t0 = sf_mono_ns();
	char last[256] = "";
	for (;;) {
		sf_obj *o = get_obj("/apis/apps/v1/namespaces/" CTL_NS "/deployments/" DEPLOYMENT);
		cr_assert_not_null(o, "Deployment " DEPLOYMENT " is gone");
		sf_jv root = sf_obj_root(o);
		int64_t gen = 0, obs = -1, rep = 0, ready = 0, upd = 0;
		sf_jv_int64(sf_jv_path(root, "metadata.generation"), &gen);
		sf_jv_int64(sf_jv_path(root, "status.observedGeneration"), &obs);
		sf_jv_int64(sf_jv_path(root, "status.replicas"), &rep);
		sf_jv_int64(sf_jv_path(root, "status.readyReplicas"), &ready);
		sf_jv_int64(sf_jv_path(root, "status.updatedReplicas"), &upd);
		sf_obj_unref(o);
		snprintf(last, sizeof(last),
		         "generation %lld observed %lld, replicas %lld, ready %lld, "
		         "updated %lld",
		         (long long)gen, (long long)obs, (long long)rep, (long long)ready,
		         (long long)upd);
		if (obs >= gen && rep == want && ready == want && upd == want) {
			pod all[MAX_PODS];
			int n = list_pods(all), live = 0, live_ready = 0;
			for (int i = 0; i < n; i++) {
				if (all[i].deleting)
					continue;
				live_ready += all[i].ready;
				p[live++] = all[i];
			}
			if (live == want && live_ready == want)
				return ms_since(t0);
		}
		cr_assert(ms_since(t0) < timeout_ms, "Deployment not %d/%d Ready after %ld ms: %s",
		          want, want, timeout_ms, last);
		pause_ms(200);
	}
}

/* make image's image (make integration passes it) into the node, then
 * manifests/default; returns once 3 replicas are Ready and one leads: its
 * pod's index in p (the 3 pods). */
static int deploy_and_wait(pod *p)
{
	const char *im = getenv("STEADFAST_IMAGE");
	cr_assert(im && im[0], "STEADFAST_IMAGE is not set (run through make integration, which "
	                       "builds the image first)");
	node_image(im, NULL, 0);
	int64_t t0 = sf_mono_ns();
	deploy(im);
	wait_replicas_ready(3, p, 180000);
	fprintf(stderr, "node: 3 replicas Ready %.1f s after applying " DEFAULT_DIR "\n",
	        ms_since(t0) / 1000);
	char holder[256] = "";
	const pod *leader = NULL;
	while (!(leader = holder_pod(p, 3, holder))) {
		cr_assert(ms_since(t0) < 200000, "no replica holds the Lease (holder `%s`)",
		          holder);
		pause_ms(200);
		lease_holder(holder, sizeof(holder));
	}
	return (int)(leader - p);
}

/* ---- watching the Lease and one pod ---- */

/* Every change of the Lease and of one pod, with when it arrived. */
typedef struct seen {
	int64_t t0; /* the DELETE */
	int nholders;
	struct {
		double ms;
		char holder[256];
	} holders[64];
	int terminated; /* the pod's container was seen terminated */
	int64_t exit_code;
	char reason[64];
	double terminated_ms;
	int deleted;
	double deleted_ms;
} seen;

/* One watch: what it records into, and the end of its stream. */
typedef struct watcher {
	seen *s;
	tl_res done;
	sf_kube_call *call;
} watcher;

static void on_watch_done(void *ud, const sf_kube_result *r)
{
	tl_res_cb(&((watcher *)ud)->done, r);
}

static int on_lease(void *ud, sf_watch_type type, sf_obj *obj)
{
	seen *s = ((watcher *)ud)->s;
	if ((type == SF_WATCH_ADDED || type == SF_WATCH_MODIFIED) && s->nholders < 64) {
		s->holders[s->nholders].ms = ms_since(s->t0);
		s->holders[s->nholders].holder[0] = '\0';
		sf_jv_str(sf_jv_path(sf_obj_root(obj), "spec.holderIdentity"),
		          s->holders[s->nholders].holder, sizeof(s->holders[0].holder));
		s->nholders++;
	}
	sf_obj_unref(obj);
	return 0;
}

static int on_pod(void *ud, sf_watch_type type, sf_obj *obj)
{
	seen *s = ((watcher *)ud)->s;
	if (type == SF_WATCH_ADDED || type == SF_WATCH_MODIFIED || type == SF_WATCH_DELETED) {
		sf_jv t =
		    sf_jv_path(sf_obj_root(obj), "status.containerStatuses[0].state.terminated");
		if (sf_jv_ok(t) && !s->terminated) {
			s->terminated = 1;
			s->terminated_ms = ms_since(s->t0);
			sf_jv_int64(sf_jv_get(t, "exitCode"), &s->exit_code);
			sf_jv_str(sf_jv_get(t, "reason"), s->reason, sizeof(s->reason));
		}
		if (type == SF_WATCH_DELETED) {
			s->deleted = 1;
			s->deleted_ms = ms_since(s->t0);
		}
	}
	sf_obj_unref(obj);
	return 0;
}

/* Starts w: a watch of one object (field selector metadata.name) from
 * resourceVersion rv, recording into s. */
static void watch_one(watcher *w, const sf_gvr *gvr, const char *name, const char *rv,
                      sf_watch_event_fn fn, seen *s)
{
	char fs[300];
	snprintf(fs, sizeof(fs), "metadata.name=%s", name);
	sf_kube_list_opts o = {
	    .field_selector = fs, .resource_version = rv, .timeout_seconds = 300};
	memset(w, 0, sizeof(*w));
	w->s = s;
	cr_assert_eq(sf_kube_watch(K.client, gvr, CTL_NS, &o, fn, on_watch_done, w, &w->call), 0);
}

static void watch_end(watcher *w)
{
	if (!w->done.done)
		sf_kube_call_cancel(w->call);
	tl_wait(&K.loop, &w->done, 10000);
	tl_res_clear(&w->done);
}

static int failover_seen(void *ud)
{
	const seen *s = ud;
	return s->deleted && s->nholders > 0 && s->holders[s->nholders - 1].holder[0];
}

/* The container log of pod p (the kubelet's file under the node's pod-logs
 * directory), appended to out. */
static void pod_log(const pod *p, sf_buf *out)
{
	tl_sh(out, "cat '%s'/node/kubelet/pod-logs/" CTL_NS "_%s_%s/manager/*.log 2>/dev/null",
	      STATE, p->name, p->uid);
}

Test(node, a_deployment_three_replicas_one_leader_failover_on_delete)
{
	node_up();
	pod p[MAX_PODS];
	int li = deploy_and_wait(p);
	pod leader = p[li];
	fprintf(stderr, "node: leader %s\n", leader.name);

	/* exactly one leader, by the replicas' own logs too */
	int acquired = 0;
	for (int i = 0; i < 3; i++) {
		sf_buf log;
		sf_buf_init(&log, 0);
		pod_log(&p[i], &log);
		cr_assert(log.len > 0, "no container log for pod %s", p[i].name);
		int has = strstr(log.data, "acquired the lease") != NULL;
		cr_assert_eq(has, i == li, "pod %s %s the lease, the Lease names %s", p[i].name,
		             has ? "acquired" : "did not acquire", leader.name);
		acquired += has;
		sf_buf_free(&log);
	}
	cr_assert_eq(acquired, 1);

	/* Watch the Lease and the leader's pod from now on (every change is
	 * seen, however short), then DELETE the pod as a user would. */
	seen s = {0};
	sf_obj *lo = get_obj("/apis/coordination.k8s.io/v1/namespaces/" CTL_NS "/leases/" LEASE);
	cr_assert_not_null(lo);
	char path[256];
	snprintf(path, sizeof(path), "/api/v1/namespaces/" CTL_NS "/pods/%s", leader.name);
	sf_obj *po = get_obj(path);
	cr_assert_not_null(po);
	watcher lw, pw;
	watch_one(&lw, &SF_GVR_LEASES, LEASE, lo->rv, on_lease, &s);
	watch_one(&pw, &SF_GVR_PODS, leader.name, po->rv, on_pod, &s);
	sf_obj_unref(lo);
	sf_obj_unref(po);
	s.t0 = sf_mono_ns();
	tl_res r;
	req_path("DELETE", path, NULL, NULL, &r);
	cr_assert_eq(r.http_status, 200, "DELETE %s: %ld %s", path, r.http_status, r.message);
	tl_res_clear(&r);
	/* the pod's grace period is 30 s; it should take about 1 s */
	cr_assert_eq(tl_run_until_fn(&K.loop, failover_seen, &s, 40000), 0,
	             "after 40 s: pod deleted %d, %d Lease changes", s.deleted, s.nholders);
	watch_end(&lw);
	watch_end(&pw);

	/* it got SIGTERM and exited 0 (not killed at the end of the grace period) */
	cr_assert(s.terminated, "the pod's container was never seen terminated");
	cr_assert_eq(s.exit_code, 0, "the old leader exited %lld (%s)", (long long)s.exit_code,
	             s.reason);
	/* it released the Lease: an empty holder, then another replica's */
	double released = -1, led = -1;
	char next[256] = "";
	for (int i = 0; i < s.nholders; i++) {
		fprintf(stderr, "node: +%.0f ms Lease holder `%s`\n", s.holders[i].ms,
		        s.holders[i].holder);
		if (!s.holders[i].holder[0] && released < 0)
			released = s.holders[i].ms;
		if (s.holders[i].holder[0] && !holder_pod(&leader, 1, s.holders[i].holder) &&
		    led < 0) {
			led = s.holders[i].ms;
			snprintf(next, sizeof(next), "%s", s.holders[i].holder);
		}
	}
	fprintf(stderr,
	        "node: DELETE -> Lease released %.0f ms, -> new leader %.0f ms, -> "
	        "container exited %.0f ms, -> pod gone %.0f ms\n",
	        released, led, s.terminated_ms, s.deleted_ms);
	cr_assert_geq(released, 0, "the old leader did not release the Lease");
	cr_assert_geq(led, released, "no other replica took the Lease after its release");
	/* another replica: one of the two others, or the pod the ReplicaSet
	 * made at once to replace the deleted one (a candidate like the
	 * others; it wins the race for a released Lease now and then),
	 * checked against the replicas once they are Ready below */
	const pod *np = holder_pod(p, 3, next);
	cr_assert(next[0] && np != &p[li], "the deleted leader `%s` holds the Lease again", next);
	if (!np)
		fprintf(stderr, "node: the replacement pod took the Lease\n");
	/* followers watch the Lease: the release is taken over at once, not at
	 * the next 2 s retry; the DELETE itself reaches the container through
	 * the kubelet's watch */
	cr_assert_leq(led - released, 1000, "new leader %.0f ms after the release", led - released);
	cr_assert_leq(led, 2000, "new leader %.0f ms after the DELETE", led);

	/* the Deployment replaces the pod; the new leader keeps the Lease */
	pod q[MAX_PODS];
	wait_replicas_ready(3, q, 120000);
	cr_assert_null(find_pod(q, 3, leader.name), "the deleted pod is back");
	cr_assert_not_null(holder_pod(q, 3, next), "the new holder `%s` is none of the replicas",
	                   next);
	char holder[256];
	lease_holder(holder, sizeof(holder));
	cr_assert_str_eq(holder, next, "the Lease moved on again");
}

/* ---- incident B with a real container ---- */

Test(node, incident_b_real_container_exit_fails_the_appwrapper)
{
	node_up();
	char bb[128];
	node_image(NULL, bb, sizeof(bb));
	tl_aw_install_crd(&K);
	char ns[64];
	tl_namespace(&K, "node-b", ns, sizeof(ns));
	tl_aw_watch_start(&W, &K, ns);
	/* the controller is the Deployment's leader (a second controller
	 * process here would reconcile the same AppWrapper) */
	pod p[MAX_PODS];
	deploy_and_wait(p);

	/* The container's message is what the runtime reads back from
	 * /dev/termination-log when it exits; terminalExitCodes makes exit 1
	 * final (no reset), failureGracePeriodDuration 0s reports it at once. */
	char aw[2048];
	snprintf(
	    aw, sizeof(aw),
	    "{\"apiVersion\":\"workload.codeflare.dev/v1beta2\",\"kind\":\"AppWrapper\","
	    "\"metadata\":{\"name\":\"real-exit\",\"namespace\":\"%s\",\"annotations\":{"
	    "\"workload.codeflare.dev.appwrapper/terminalExitCodes\":\"1\","
	    "\"workload.codeflare.dev.appwrapper/failureGracePeriodDuration\":\"0s\"}},"
	    "\"spec\":{\"suspend\":true,\"components\":[{\"template\":{\"apiVersion\":\"v1\","
	    "\"kind\":\"Pod\",\"metadata\":{\"name\":\"real-exit\"},\"spec\":{"
	    "\"nodeName\":\"%s\",\"restartPolicy\":\"Never\",\"terminationGracePeriodSeconds\":0,"
	    "\"containers\":[{\"name\":\"main\",\"image\":\"%s\",\"imagePullPolicy\":\"Never\","
	    "\"command\":[\"/bin/busybox\",\"sh\",\"-c\",\"echo the disk is full >"
	    "/dev/termination-log; exit 1\"]}]}}}]}}",
	    ns, NODE, bb);
	tl_aw_create(&W, aw);
	/* Kueue is not part of this profile: once the controller has applied
	 * its defaults (Suspended), the test admits it as Kueue would */
	tl_aw_wait_phase(&W, "real-exit", "Suspended", 30000);
	tl_aw_admit(&W, "real-exit", NULL);
	tl_aw_wait_phase(&W, "real-exit", "Failed", 90000);
	char reason[TL_AW_REASON_LEN] = "", msg[TL_AW_MESSAGE_LEN] = "";
	const char *st = tl_aw_cond(&W, "real-exit", "Unhealthy", reason, msg);
	fprintf(stderr, "node: Unhealthy=%s %s: %s\n", st, reason, msg);
	cr_assert_str_eq(st, "True");
	cr_assert_str_eq(reason, "FoundFailedPods");
	/* exit code, reason and message as the kubelet reported them from the
	 * runtime (the message ends with the newline echo wrote) */
	cr_assert(strstr(msg,
	                 "pod real-exit container main exited with code 1 (Error): the disk is "
	                 "full"),
	          "%s", msg);
	tl_aw_events e = tl_aw_wait_event(&W, "real-exit", "the disk is full", 30000);
	cr_assert(e.warning, "the Event is not a Warning");
	/* the pod really ran and failed: the kubelet's own report */
	char path[256];
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/real-exit", ns);
	sf_obj *po = get_obj(path);
	if (po) {
		sf_jv t =
		    sf_jv_path(sf_obj_root(po), "status.containerStatuses[0].state.terminated");
		int64_t code = -1;
		sf_jv_int64(sf_jv_get(t, "exitCode"), &code);
		cr_assert_eq(code, 1, "%s", po->json);
		cr_assert(sf_jv_ok(sf_jv_get(t, "containerID")), "no containerID: %s", po->json);
		sf_obj_unref(po);
	}
}

/* ---- readiness judged by the kubelet ---- */

/* Runs a command in the node's network namespace (node.sh made it). */
static int in_node_netns(sf_buf *out, const char *cmd)
{
	return tl_sh(out, "nsenter --net='%s/node/netns' %s 2>&1", STATE, cmd);
}

static int pod_state(const char *name, pod *out)
{
	pod p[MAX_PODS];
	int n = list_pods(p);
	const pod *q = find_pod(p, n, name);
	if (!q)
		return -1;
	*out = *q;
	return 0;
}

Test(node, api_cut_follower_goes_unready_and_is_not_restarted)
{
	node_up();
	pod p[MAX_PODS];
	int li = deploy_and_wait(p);
	pod f = p[(li + 1) % 3];
	cr_assert(f.ip[0], "follower %s has no pod IP", f.name);
	fprintf(stderr, "node: cutting follower %s (%s) off the API server\n", f.name, f.ip);

	/* Reject (TCP reset) whatever the follower sends to the API relay, its
	 * open connections included; the kubelet's probes (to the pod, from
	 * the node's address) are untouched. Inside the node's namespace only. */
	char rule[256];
	snprintf(rule, sizeof(rule),
	         "INPUT -s %s -p tcp --dport 443 -j REJECT --reject-with tcp-reset", f.ip);
	sf_buf out;
	sf_buf_init(&out, 0);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "iptables -I %s", rule);
	cr_assert_eq(in_node_netns(&out, cmd), 0, "iptables: %s", out.data);
	int64_t t0 = sf_mono_ns();

	/* /readyz fails once the Lease API has not answered for lease + 20 s
	 * (35 s), and the kubelet marks it unready after 3 failed probes 10 s
	 * apart: about 45-65 s */
	pod now;
	for (;;) {
		cr_assert_eq(pod_state(f.name, &now), 0, "pod %s is gone", f.name);
		if (!now.ready)
			break;
		cr_assert(ms_since(t0) < 120000, "%s still Ready 120 s after the cut", f.name);
		pause_ms(500);
	}
	double unready = ms_since(t0);
	fprintf(stderr, "node: %s unready %.1f s after the cut\n", f.name, unready / 1000);
	cr_assert_geq(unready, 30000, "unready before the election's API bound: %.0f ms", unready);
	/* /healthz ignores the API (a follower is not leading): liveness holds,
	 * so the kubelet does not restart it; give it a liveness period or two */
	int64_t t1 = sf_mono_ns();
	while (ms_since(t1) < 45000) {
		cr_assert_eq(pod_state(f.name, &now), 0, "pod %s is gone", f.name);
		cr_assert_eq(now.restarts, 0, "%s was restarted while cut off", f.name);
		cr_assert_eq(now.ready, 0, "%s Ready again while cut off", f.name);
		pause_ms(1000);
	}
	/* the leader is not disturbed */
	char holder[256];
	lease_holder(holder, sizeof(holder));
	cr_assert(holder_pod(&p[li], 1, holder), "the Lease moved to `%s`", holder);

	/* the connection back: Ready again, still never restarted */
	snprintf(cmd, sizeof(cmd), "iptables -D %s", rule);
	cr_assert_eq(in_node_netns(&out, cmd), 0, "iptables: %s", out.data);
	int64_t t2 = sf_mono_ns();
	for (;;) {
		cr_assert_eq(pod_state(f.name, &now), 0, "pod %s is gone", f.name);
		if (now.ready)
			break;
		cr_assert(ms_since(t2) < 90000, "%s not Ready 90 s after the connection came back",
		          f.name);
		pause_ms(500);
	}
	fprintf(stderr, "node: %s Ready again %.1f s after the connection came back\n", f.name,
	        ms_since(t2) / 1000);
	cr_assert_eq(now.restarts, 0, "%s was restarted", f.name);
	sf_buf_free(&out);
}

/* ---- the PodDisruptionBudget ---- */

/* POST pods/NAME/eviction: the HTTP status; the message into msg. */
static long evict(const char *name, char *msg, size_t n)
{
	char path[256], body[256];
	snprintf(path, sizeof(path), "/api/v1/namespaces/" CTL_NS "/pods/%s/eviction", name);
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":"
	         "\"%s\",\"namespace\":\"" CTL_NS "\"}}",
	         name);
	tl_res r;
	req_path("POST", path, NULL, body, &r);
	long code = r.http_status;
	snprintf(msg, n, "%s", r.message);
	tl_res_clear(&r);
	return code;
}

Test(node, pdb_refuses_a_second_eviction)
{
	node_up();
	pod p[MAX_PODS];
	deploy_and_wait(p);
	/* the disruption controller's view first: 3 healthy, 1 disruption allowed */
	int64_t t0 = sf_mono_ns();
	int64_t healthy = 0, allowed = 0;
	for (;;) {
		sf_obj *o = get_obj("/apis/policy/v1/namespaces/" CTL_NS
		                    "/poddisruptionbudgets/steadfast-controller");
		cr_assert_not_null(o, "no PodDisruptionBudget steadfast-controller");
		sf_jv_int64(sf_jv_path(sf_obj_root(o), "status.currentHealthy"), &healthy);
		sf_jv_int64(sf_jv_path(sf_obj_root(o), "status.disruptionsAllowed"), &allowed);
		sf_obj_unref(o);
		if (healthy == 3 && allowed == 1)
			break;
		cr_assert(ms_since(t0) < 60000, "PDB: %lld healthy, %lld allowed after 60 s",
		          (long long)healthy, (long long)allowed);
		pause_ms(200);
	}
	char msg[512];
	long code = evict(p[0].name, msg, sizeof(msg));
	cr_assert_eq(code, 201, "first eviction: %ld %s", code, msg);
	code = evict(p[1].name, msg, sizeof(msg));
	fprintf(stderr, "node: second eviction: %ld %s\n", code, msg);
	cr_assert_eq(code, 429, "second eviction: %ld %s", code, msg);
	cr_assert(strstr(msg, "disruption budget"), "%s", msg);
	/* the second pod stays; the first is replaced, after which one
	 * eviction is allowed again */
	pod q;
	cr_assert_eq(pod_state(p[1].name, &q), 0, "%s went anyway", p[1].name);
	cr_assert(!q.deleting, "%s is being deleted", p[1].name);
	pod r[MAX_PODS];
	wait_replicas_ready(3, r, 120000);
	t0 = sf_mono_ns();
	for (;;) {
		code = evict(p[1].name, msg, sizeof(msg));
		if (code == 201)
			break;
		cr_assert_eq(code, 429, "eviction after recovery: %ld %s", code, msg);
		cr_assert(ms_since(t0) < 60000, "eviction still refused 60 s after recovery: %s",
		          msg);
		pause_ms(500);
	}
}

/* ---- kubectl rollout restart ---- */

/* One request of a replica, from the audit log. */
typedef struct areq {
	char who[128]; /* the identity in its user agent */
	char verb[24], res[64], name[254];
	int lease; /* an update of the election Lease */
	long long us;
} areq;

/* The successful mutating requests of the replicas after mark m. */
static size_t audit_writes(const tl_audit_mark *m, areq **out)
{
	tl_audit_query q = {.stage = "ResponseComplete", .text = "appwrapper-controller/"};
	tl_audit_req *v = NULL;
	size_t nv = tl_audit_select(m, &q, &v);
	areq *a = calloc(nv ? nv : 1, sizeof(*a));
	cr_assert(a);
	size_t n = 0;
	for (size_t i = 0; i < nv; i++) {
		const tl_audit_req *e = &v[i];
		/* who: a replica's identity, from its user agent */
		if (!e->who[0] || !tl_audit_is_write(e))
			continue;
		areq *x = &a[n++];
		snprintf(x->who, sizeof(x->who), "%s", e->who);
		snprintf(x->verb, sizeof(x->verb), "%s", e->verb);
		snprintf(x->res, sizeof(x->res), "%s", e->resource);
		snprintf(x->name, sizeof(x->name), "%s", e->name);
		x->lease = !strcmp(e->resource, "leases") && !strcmp(e->name, LEASE);
		x->us = e->done_us;
	}
	free(v);
	*out = a;
	return n;
}

/* A Pod AppWrapper of a container that sleeps, on the node. */
static void sleeper_aw(const char *ns, const char *name, const char *image)
{
	char aw[2048];
	snprintf(
	    aw, sizeof(aw),
	    "{\"apiVersion\":\"workload.codeflare.dev/v1beta2\",\"kind\":\"AppWrapper\","
	    "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":{\"components\":[{"
	    "\"template\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"},"
	    "\"spec\":{\"nodeName\":\"%s\",\"restartPolicy\":\"Never\","
	    "\"terminationGracePeriodSeconds\":0,\"containers\":[{\"name\":\"main\",\"image\":"
	    "\"%s\",\"imagePullPolicy\":\"Never\",\"command\":[\"/bin/busybox\",\"sleep\","
	    "\"3600\"]}]}}}]}}",
	    name, ns, name, NODE, image);
	tl_aw_create(&W, aw);
}

/* The phase, resettingCount and the component pod's uid of AppWrapper n. */
static void aw_state(const char *ns, const char *n, char *phase, size_t pn, int64_t *resets,
                     char *uid, size_t un)
{
	char path[256];
	snprintf(path, sizeof(path),
	         "/apis/workload.codeflare.dev/v1beta2/namespaces/%s/appwrappers/%s", ns, n);
	sf_obj *o = get_obj(path);
	cr_assert_not_null(o, "AppWrapper %s is gone", n);
	phase[0] = 0;
	*resets = 0;
	sf_jv_str(sf_jv_path(sf_obj_root(o), "status.phase"), phase, pn);
	sf_jv_int64(sf_jv_path(sf_obj_root(o), "status.resettingCount"), resets);
	sf_obj_unref(o);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, n);
	sf_obj *p = get_obj(path);
	uid[0] = 0;
	if (p) {
		snprintf(uid, un, "%s", p->uid);
		sf_obj_unref(p);
	}
}

/* `kubectl rollout restart` of the Deployment, with two AppWrappers
 * running: all three replicas are replaced one by one, the Lease passes
 * to a new pod, and from the audit log (each replica's identity is in its
 * user agent) every successful write of a replica falls inside its own
 * leadership (from its first to its last Lease write; the first leader's
 * from before the log was opened, the last one's to its end), the
 * leaderships do not overlap, and the AppWrappers stay Running with their pods, never
 * reset. */
Test(node, rollout_restart_keeps_one_leader_and_disturbs_no_appwrapper)
{
	node_up();
	pod p[MAX_PODS];
	deploy_and_wait(p);
	char bb[128];
	node_image(NULL, bb, sizeof(bb));
	char ns[64];
	tl_namespace(&K, "node-roll", ns, sizeof(ns));
	tl_aw_watch_start(&W, &K, ns);
	static const char *const names[] = {"roll-a", "roll-b"};
	char uids[2][64];
	for (int i = 0; i < 2; i++) {
		sleeper_aw(ns, names[i], bb);
		tl_aw_wait_phase(&W, names[i], "Suspended", 30000);
		tl_aw_admit(&W, names[i], NULL);
		tl_aw_wait_phase(&W, names[i], "Running", 60000);
	}
	for (int i = 0; i < 2; i++) {
		char phase[32];
		int64_t resets;
		int64_t t0 = sf_mono_ns();
		do {
			aw_state(ns, names[i], phase, sizeof(phase), &resets, uids[i],
			         sizeof(uids[i]));
			if (uids[i][0])
				break;
			pause_ms(200);
		} while (ms_since(t0) < 30000);
		cr_assert(uids[i][0], "no pod for %s", names[i]);
	}
	char holder0[256];
	lease_holder(holder0, sizeof(holder0));
	cr_assert(holder0[0], "no leader before the restart");

	char apath[160];
	snprintf(apath, sizeof(apath), "%s/audit.log", STATE);
	tl_audit_mark from;
	tl_audit_mark_end(&from, apath);
	/* what `kubectl rollout restart` sends */
	char body[256];
	snprintf(body, sizeof(body),
	         "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{"
	         "\"kubectl.kubernetes.io/restartedAt\":\"%lld\"}}}}}",
	         (long long)time(NULL));
	sf_kube_req q = {.method = "PATCH",
	                 .path = "/apis/apps/v1/namespaces/" CTL_NS "/deployments/" DEPLOYMENT,
	                 .body = body,
	                 .body_len = strlen(body),
	                 .content_type = "application/strategic-merge-patch+json"};
	tl_res r;
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200, "rollout restart: %ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	int64_t t0 = sf_mono_ns();
	pod n[MAX_PODS];
	wait_replicas_ready(3, n, 240000);
	for (int i = 0; i < 3; i++)
		cr_assert_null(find_pod(p, 3, n[i].name), "pod %s was not replaced", n[i].name);
	char holder[256] = "";
	while (!holder_pod(n, 3, holder)) {
		cr_assert(ms_since(t0) < 260000, "no new replica leads (holder `%s`)", holder);
		pause_ms(200);
		lease_holder(holder, sizeof(holder));
	}
	fprintf(stderr, "node: rollout done in %.1f s; leader %s -> %s\n", ms_since(t0) / 1000,
	        holder0, holder);

	/* the AppWrappers saw nothing */
	for (int i = 0; i < 2; i++) {
		char phase[32], uid[64];
		int64_t resets;
		aw_state(ns, names[i], phase, sizeof(phase), &resets, uid, sizeof(uid));
		cr_assert_str_eq(phase, "Running", "%s", names[i]);
		cr_assert_eq(resets, 0, "%s was reset", names[i]);
		cr_assert_str_eq(uid, uids[i], "the pod of %s was re-created", names[i]);
	}

	/* one leader at a time, and nobody writes outside its leadership */
	pause_ms(1000); /* the audit log is written as requests finish */
	areq *a = NULL;
	size_t na = audit_writes(&from, &a);
	struct {
		char who[128];
		long long first, last;
	} lead[16];
	size_t nl = 0;
	for (size_t i = 0; i < na; i++) {
		if (!a[i].lease)
			continue;
		size_t j = 0;
		while (j < nl && strcmp(lead[j].who, a[i].who) != 0)
			j++;
		if (j == nl) {
			cr_assert(nl < 16);
			snprintf(lead[nl].who, sizeof(lead[nl].who), "%s", a[i].who);
			lead[nl].first = lead[nl].last = a[i].us;
			nl++;
		}
		if (a[i].us < lead[j].first)
			lead[j].first = a[i].us;
		if (a[i].us > lead[j].last)
			lead[j].last = a[i].us;
	}
	cr_assert_geq(nl, 2, "the Lease did not change hands in the audit log (%zu writers)", nl);
	/* the leader when the log was opened led already, and the last one
	 * still leads: their leaderships run past the log's ends */
	for (size_t j = 0; j < nl; j++) {
		if (strcmp(lead[j].who, holder0) == 0)
			lead[j].first = LLONG_MIN;
		if (strcmp(lead[j].who, holder) == 0)
			lead[j].last = LLONG_MAX;
	}
	for (size_t i = 0; i < nl; i++)
		for (size_t j = 0; j < nl; j++)
			if (i != j)
				cr_assert(
				    lead[i].last < lead[j].first || lead[j].last < lead[i].first,
				    "leaderships of %s and %s overlap", lead[i].who, lead[j].who);
	size_t others = 0;
	for (size_t i = 0; i < na; i++) {
		if (a[i].lease)
			continue;
		others++;
		size_t j = 0;
		while (j < nl && strcmp(lead[j].who, a[i].who) != 0)
			j++;
		cr_assert(j < nl, "%s %s/%s by %s, which never held the Lease", a[i].verb, a[i].res,
		          a[i].name, a[i].who);
		cr_assert(a[i].us >= lead[j].first && a[i].us <= lead[j].last,
		          "%s %s/%s by %s outside its leadership", a[i].verb, a[i].res, a[i].name,
		          a[i].who);
	}
	fprintf(stderr,
	        "node: audit: %zu successful writes by replicas, %zu Lease writers, all "
	        "inside their holder's leadership\n",
	        na, nl);
	(void)others;
	free(a);
}
