/*
 * test_upgrade.c - upgrade from a running upstream AppWrapper controller
 * (project-codeflare/appwrapper v1.2.1 and v1.2.2, built from its Go module
 * by test/cluster/build.sh --upstream) to Steadfast, and rollback, on the
 * real control plane with Kueue, kube-scheduler and kwok (KUEUE=true
 * up.sh): the steps of docs/operations.md ("Upgrade from the upstream
 * controller", "Rolling back"), exactly.
 *
 * Upgrade (upstream_to_steadfast; "step N" is docs/operations.md's):
 *   1. upstream's CRD (its module's config/crd/bases); upstream runs out of
 *      cluster (test/cluster/upstream-exec.sh) as in a pod of its namespace
 *      SYS: its ConfigMap appwrapper-operator-config with
 *      controllerManager.leaderElection true, its Lease
 *      SYS/f134c674.codeflare.dev; with webhooks, its certificate Secret
 *      and webhook configurations served on 127.0.0.1:9443
 *      (test/cluster/upstream-webhooks.sh);
 *   2. 20 AppWrappers of one Job each (a pod kwok runs for an hour): 15
 *      Running with a Running pod and PodsReady, 5 Suspended (with Kueue:
 *      the ClusterQueue's quota holds 15; without: spec.suspend true);
 *   3. step 1: the operator config, one text for both controllers (written
 *      with upstream's ConfigMap in 1.); step 2, with webhooks: Steadfast's
 *      admission (manifests/admission: the parameters, in Steadfast's own
 *      namespace, first, then the policies and bindings), shown in force by
 *      answers only they give (a dry-run create refused naming each
 *      validating policy, a dry-run create given the finalizer by the
 *      mutating policy), and only then upstream's two webhook
 *      configurations deleted: no moment without either;
 *   4. step 3: Steadfast's CRD applied over upstream's;
 *   5. step 4: two Steadfast replicas on upstream's Lease
 *      (--leader-election-namespace SYS, the default Lease name
 *      f134c674.codeflare.dev, --admission-params in their own namespace):
 *      they observe upstream as the leader and follow;
 *   6. step 5: upstream SIGTERMed, as a rolling update stops a pod; the handover
 *      (SIGTERM to a replica's "reconciling") is measured;
 *   7. two minutes ($STEADFAST_UPGRADE_OBSERVE_S) during which every change
 *      of every AppWrapper and every Event delivered is checked: no phase
 *      change, no Failed, Resetting, MissingComponent, Unhealthy condition
 *      or Warning Event; then the audit log of the whole handover: no Job
 *      or pod of the namespace created or deleted by anyone; then the
 *      status, labels, annotations and finalizers of all 20 compared with
 *      what upstream had written before the handover: structurally equal;
 *   8. the 5 admitted (the quota raised / spec.suspend false): each runs
 *      with one Job (one Job UID seen) and a Running pod;
 *   9. all 20 deleted: no AppWrapper, Job, pod (or Kueue Workload) left.
 *
 * Rollback (steadfast_to_upstream): the same with the roles reversed:
 * Steadfast's CRD and admission, two replicas leading on the Lease; the
 * 20 AppWrappers made under Steadfast; upstream started as a follower on
 * the Lease, with webhooks its Secret and webhook configurations applied
 * once it serves and a dry-run create answered through them, then
 * Steadfast's policies deleted; upstream's CRD applied; both replicas
 * SIGTERMed (the leader releases the Lease); the handover is SIGTERM to
 * upstream's "Starting workers" of its AppWrapper controller; the same two
 * minutes, audit and comparison (what Steadfast wrote is read by
 * upstream unchanged); admission of the 5 and deletion by upstream.
 *
 * Variants: with Kueue and both admission routes (upstream's webhooks,
 * Steadfast's policies), and without either (AppWrappers with no queue
 * label and an explicit spec.suspend; Kueue runs on the cluster but
 * manages none of them; webhooksEnabled false, no policies). Each
 * direction for each version and variant: 8 tests.
 *
 * Every handover time is appended to $STEADFAST_UPGRADE_RESULTS (default
 * build/test-results/upgrade-handover.tsv) as "direction version variant
 * ms"; make upgrade prints their p50 and max.
 *
 * The suite has a control plane of its own for the whole run, in
 * /tmp/steadfast-upgrade.<runner pid> (suite_clusters.c);
 * $STEADFAST_UPGRADE_CLUSTER_DIR names another one to use (and keep).
 * Upstream's webhook server listens on port 9443 of every address (fixed
 * in its main.go), so no two of these tests run at once.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "steadfast/awapi.h"
#include "steadfast/buf.h"
#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/json.h"
#include "steadfast/log.h"
#include "steadfast/time.h"
#include "tl.h"
#include "tl_audit.h"
#include "tl_aw.h"
#include "tl_ctl.h"
#include "tl_kueue.h"

#define DIR_ENV "STEADFAST_UPGRADE_CLUSTER_DIR"
#define LEASE "f134c674.codeflare.dev" /* upstream's LeaderElectionID */
#define UPSTREAM_CM "appwrapper-operator-config"
#define NRUN 15
#define NQUEUED 5
#define NAW (NRUN + NQUEUED)
#define POLICY "appwrappers.workload.codeflare.dev"
#define RBAC_POLICY "user-rbac." POLICY
#define MWH "appwrapper-mutating-webhook-configuration"
#define VWH "appwrapper-validating-webhook-configuration"

static const sf_gvr GVR_WORKLOADS = {"kueue.x-k8s.io", "v1beta2", "workloads", 1};
static const sf_gvr GVR_CLUSTERQUEUES = {"kueue.x-k8s.io", "v1beta2", "clusterqueues", 0};
static const sf_gvr GVR_RESOURCEFLAVORS = {"kueue.x-k8s.io", "v1beta2", "resourceflavors", 0};
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

static tl_kube K;
static tl_aw_watch W;
static char NS[64];      /* the AppWrappers' namespace */
static char SYS[64];     /* upstream's (and the Lease's) namespace */
static char OWN[64];     /* Steadfast's own (its admission parameters) */
static char PARAMS[160]; /* --admission-params OWN/steadfast-admission */
static char WORK[96];    /* scratch: configs, certificates, upstream's TMPDIR */
static char CFG[160];    /* the operator config file (Steadfast's copy) */

/* ---- what the watches delivered ---- */

typedef struct track {
	char aw[64];
	char job_uids[4][64]; /* the distinct UIDs of its Jobs */
	int njob_uids;
} track;
static track TRACK[NAW];

static int OBSERVING; /* the two minutes after the handover */
#define MAX_BAD 64
static char BAD[MAX_BAD][512]; /* what was seen that must not be */
static int NBAD;

static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bad(const char *fmt, ...)
{
	va_list ap;
	if (NBAD < MAX_BAD) {
		va_start(ap, fmt);
		vsnprintf(BAD[NBAD], sizeof(BAD[0]), fmt, ap);
		va_end(ap);
	}
	NBAD++;
}

static int aw_index(const char *name)
{
	if (strncmp(name, "aw-", 3) != 0)
		return -1;
	int i = atoi(name + 3);
	return i >= 0 && i < NAW ? i : -1;
}

/* A change of an AppWrapper while OBSERVING: the 15 stay Running, the 5
 * Suspended, none Failed, Resetting, Unhealthy or MissingComponent. */
static void aw_seen(void *ud, sf_obj *o)
{
	(void)ud;
	int i = aw_index(o->name);
	if (!OBSERVING || i < 0)
		return;
	sf_jv root = sf_obj_root(o);
	char phase[32] = "";
	sf_jv_str(sf_jv_path(root, "status.phase"), phase, sizeof(phase));
	const char *want = i < NRUN ? "Running" : "Suspended";
	if (strcmp(phase, want) != 0)
		bad("%s: phase %s (was %s)", o->name, phase, want);
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(root, "status.conditions"));
	sf_jv c;
	while (sf_jv_next(&it, NULL, &c)) {
		if (sf_jv_streq(sf_jv_get(c, "type"), "Unhealthy") &&
		    sf_jv_streq(sf_jv_get(c, "status"), "True"))
			bad("%s: condition Unhealthy True: %.*s", o->name, (int)c.n, c.p);
		if (sf_jv_streq(sf_jv_get(c, "reason"), "MissingComponent"))
			bad("%s: a condition with reason MissingComponent: %.*s", o->name, (int)c.n,
			    c.p);
	}
}

static void aw_add(void *ud, sf_obj *o)
{
	aw_seen(ud, o);
}

static void aw_update(void *ud, sf_obj *old, sf_obj *o)
{
	(void)old;
	aw_seen(ud, o);
}

static void aw_delete(void *ud, sf_obj *o)
{
	(void)ud;
	if (OBSERVING && aw_index(o->name) >= 0)
		bad("%s: deleted", o->name);
}

/* An Event while OBSERVING about one of the AppWrappers: a Warning, or a
 * reason or message of failure, reset or a missing component. */
static void event_seen(void *ud, sf_obj *o)
{
	(void)ud;
	if (!OBSERVING)
		return;
	sf_jv root = sf_obj_root(o);
	if (!sf_jv_streq(sf_jv_path(root, "involvedObject.kind"), "AppWrapper"))
		return;
	char type[32] = "", reason[64] = "", msg[256] = "", name[64] = "";
	sf_jv_str(sf_jv_get(root, "type"), type, sizeof(type));
	sf_jv_str(sf_jv_get(root, "reason"), reason, sizeof(reason));
	sf_jv_str(sf_jv_get(root, "message"), msg, sizeof(msg));
	sf_jv_str(sf_jv_path(root, "involvedObject.name"), name, sizeof(name));
	if (strcmp(type, "Warning") == 0 || strstr(reason, "Unhealthy") || strstr(reason, "Fail") ||
	    strstr(reason, "Reset") || strstr(msg, "MissingComponent") || strstr(msg, "Failed") ||
	    strstr(msg, "reset"))
		bad("Event about %s: %s %s: %s", name, type, reason, msg);
	else
		fprintf(stderr, "upgrade: Event during the observation, about %s: %s %s: %s\n",
		        name, type, reason, msg);
}

static void event_add(void *ud, sf_obj *o)
{
	event_seen(ud, o);
}

static void event_update(void *ud, sf_obj *old, sf_obj *o)
{
	(void)old;
	event_seen(ud, o);
}

/* A Job of NS seen: its UID into its AppWrapper's entry. */
static void job_seen(void *ud, sf_obj *o)
{
	(void)ud;
	char aw[64] = "", uid[64] = "";
	sf_jv root = sf_obj_root(o);
	sf_jv_str(sf_jv_get(sf_jv_path(root, "metadata.labels"), SF_AW_LABEL), aw, sizeof(aw));
	sf_jv_str(sf_jv_path(root, "metadata.uid"), uid, sizeof(uid));
	int i = aw_index(aw);
	if (i < 0)
		return;
	track *t = &TRACK[i];
	for (int j = 0; j < t->njob_uids && j < 4; j++)
		if (strcmp(t->job_uids[j], uid) == 0)
			return;
	if (t->njob_uids < 4)
		snprintf(t->job_uids[t->njob_uids], sizeof(t->job_uids[0]), "%s", uid);
	t->njob_uids++;
}

static void job_add(void *ud, sf_obj *o)
{
	job_seen(ud, o);
}

static void job_update(void *ud, sf_obj *old, sf_obj *o)
{
	(void)old;
	job_seen(ud, o);
}

/* ---- set-up ---- */

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
	tl_aw_env_open(&K, &W, "upg", NS, sizeof(NS));
	tl_namespace(&K, "upg-sys", SYS, sizeof(SYS));
	tl_namespace(&K, "upg-sf", OWN, sizeof(OWN));
	snprintf(PARAMS, sizeof(PARAMS), "--admission-params=%s/steadfast-admission", OWN);
	memset(TRACK, 0, sizeof(TRACK));
	for (int i = 0; i < NAW; i++)
		snprintf(TRACK[i].aw, sizeof(TRACK[i].aw), "aw-%02d", i);
	OBSERVING = 0;
	NBAD = 0;
	sf_informer_handler ha = {.on_add = aw_add, .on_update = aw_update, .on_delete = aw_delete};
	cr_assert_eq(sf_informer_add_handler(W.aws, &ha, NULL), 0);
	sf_informer_handler he = {.on_add = event_add, .on_update = event_update};
	cr_assert_eq(sf_informer_add_handler(W.events, &he, NULL), 0);
	sf_informer_handler hj = {.on_add = job_add, .on_update = job_update};
	cr_assert_eq(sf_informer_add_handler(W.jobs, &hj, NULL), 0);
	snprintf(WORK, sizeof(WORK), "/tmp/steadfast-upgrade-%d", (int)getpid());
	cr_assert_eq(tl_sh(NULL, "rm -rf '%s' && mkdir -p '%s/tmp'", WORK, WORK), 0);
	snprintf(CFG, sizeof(CFG), "%s/config.yaml", WORK);
}

static void delete_cluster_obj(const sf_gvr *gvr, const char *name)
{
	tl_kueue_delete(&K, gvr, name);
}

static void delete_policies(void)
{
	delete_cluster_obj(&VAPBS, POLICY);
	delete_cluster_obj(&VAPBS, RBAC_POLICY);
	delete_cluster_obj(&MAPBS, POLICY);
	delete_cluster_obj(&VAPS, POLICY);
	delete_cluster_obj(&VAPS, RBAC_POLICY);
	delete_cluster_obj(&MAPS, POLICY);
}

static void teardown(void)
{
	char name[128];
	tl_ctl_stop_all(&K.loop);
	/* the webhooks first: with upstream gone they would refuse every
	 * AppWrapper write, the finalizer removals below included */
	delete_cluster_obj(&MWHS, MWH);
	delete_cluster_obj(&VWHS, VWH);
	delete_policies();
	/* nothing runs to remove the finalizers of what a failed test left */
	sf_obj *objs[NAW];
	int n = 0;
	for (int i = 0; i < NAW; i++) {
		sf_obj *o = tl_aw_cached(&W, TRACK[i].aw);
		if (o && n < NAW)
			objs[n++] = sf_obj_ref(o);
	}
	for (int i = 0; i < n; i++) {
		tl_aw_req(&W, "PATCH", &SF_GVR_APPWRAPPERS, objs[i]->name, NULL,
		          "{\"metadata\":{\"finalizers\":null}}");
		sf_obj_unref(objs[i]);
	}
	tl_aw_watch_stop(&W);
	tl_namespace_delete(&K, NS);
	tl_namespace_delete(&K, SYS);
	tl_namespace_delete(&K, OWN);
	snprintf(name, sizeof(name), "%s-cq", NS);
	delete_cluster_obj(&GVR_CLUSTERQUEUES, name);
	snprintf(name, sizeof(name), "%s-rf", NS);
	delete_cluster_obj(&GVR_RESOURCEFLAVORS, name);
	tl_kube_close(&K);
	if (WORK[0])
		tl_sh(NULL, "rm -rf '%s'", WORK);
}

TestSuite(upgrade, .init = setup, .fini = teardown, .timeout = 1200);

/* ---- helpers ---- */

static char *read_file(const char *path)
{
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

static void pause_ms(long ms)
{
	tl_kueue_pause(&K, ms);
}

static long observe_ms(void)
{
	const char *s = getenv("STEADFAST_UPGRADE_OBSERVE_S");
	long v = s && *s ? atol(s) : 120;
	return (v > 0 ? v : 120) * 1000;
}

/* The upstream module's source directory (its CRD, webhook manifests). */
static void module_dir(const char *version, char *buf, size_t n)
{
	char src[4096];
	sf_buf out;
	sf_buf_init(&out, 0);
	cr_assert_eq(tl_sh(&out, "'%s' --print upstream-%s-module",
	                   tl_aw_src_path("test/cluster/build.sh", src, sizeof(src)), version),
	             0, "build.sh --print upstream-%s-module failed", version);
	char *nl = strchr(out.data, '\n');
	if (nl)
		*nl = '\0';
	snprintf(buf, n, "%s", out.data);
	sf_buf_free(&out);
	cr_assert(buf[0]);
}

/* Applies upstream's CRD of that version (over ours) or ours (over
 * upstream's), and waits until it is Established. */
static void apply_crd(const char *version)
{
	char path[4200];
	if (version) {
		char mod[4096];
		module_dir(version, mod, sizeof(mod));
		snprintf(path, sizeof(path),
		         "%s/config/crd/bases/workload.codeflare.dev_appwrappers.yaml", mod);
		tl_aw_apply_yaml(&K, NULL, path, NULL, NULL);
		tl_aw_wait_established(&K, SF_AW_CRD_NAME, 30000);
	} else {
		tl_aw_install_crd(&K);
	}
}

/* The operator config, as upstream reads it from its ConfigMap and as
 * Steadfast reads the copy in CFG (docs/operations.md, step 3): the same
 * text. Upstream ignores the keys it does not know
 * (enableKueueIntegrations, kueueJobReconciller). */
static const char *config_text(int kueue, char *buf, size_t n)
{
	char cm[512] = "";
	/* upstream's webhook server reads its certificate from
	 * $TMPDIR/k8s-webhook-server/serving-certs: the rotator must write it
	 * there */
	if (kueue)
		snprintf(
		    cm, sizeof(cm),
		    "certManagement:\n  certificateDir: %s/tmp/k8s-webhook-server/serving-certs\n",
		    WORK);
	snprintf(buf, n,
	         "controllerManager:\n"
	         "  leaderElection: true\n"
	         "  metrics:\n    bindAddress: \"127.0.0.1:0\"\n"
	         "  health:\n    bindAddress: \"127.0.0.1:0\"\n"
	         "webhooksEnabled: %s\n"
	         "%s"
	         "appwrapper:\n"
	         "  enableKueueIntegrations: %s\n"
	         "  kueueJobReconciller:\n    manageJobsWithoutQueueName: false\n",
	         kueue ? "true" : "false", cm, kueue ? "true" : "false");
	return buf;
}

/* Upstream's ConfigMap in SYS and Steadfast's copy in CFG. */
static void write_configs(int kueue)
{
	char text[2048];
	config_text(kueue, text, sizeof(text));
	FILE *f = fopen(CFG, "w");
	cr_assert(f);
	fputs(text, f);
	fclose(f);
	sf_buf body;
	sf_buf_init(&body, 0);
	cr_assert_eq(
	    sf_buf_printf(&body, "{\"metadata\":{\"name\":\"" UPSTREAM_CM "\"},\"data\":{"), 0);
	cr_assert_eq(sf_buf_puts(&body, "\"config.yaml\":\""), 0);
	for (const char *p = text; *p; p++) {
		if (*p == '\n')
			cr_assert_eq(sf_buf_puts(&body, "\\n"), 0);
		else if (*p == '"')
			cr_assert_eq(sf_buf_puts(&body, "\\\""), 0);
		else
			cr_assert_eq(sf_buf_append(&body, p, 1), 0);
	}
	cr_assert_eq(sf_buf_puts(&body, "\"}}"), 0);
	tl_res r;
	sf_kube_req q = {.method = "POST",
	                 .gvr = &SF_GVR_CONFIGMAPS,
	                 .ns = SYS,
	                 .body = body.data,
	                 .body_len = body.len};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 201, "ConfigMap %s/%s: %ld %s", SYS, UPSTREAM_CM, r.http_status,
	             r.message);
	tl_res_clear(&r);
	sf_buf_free(&body);
}

/* The upstream controller of that version, out of cluster as in a pod of
 * SYS (test/cluster/upstream-exec.sh), with the admin's kubeconfig. */
static tl_ctl *upstream_start(const char *version, const char *id)
{
	char src[4096], exec_sh[4096], bin[4096], kc[4200], nsenv[128], tmp[200];
	sf_buf out;
	sf_buf_init(&out, 0);
	cr_assert_eq(tl_sh(&out, "'%s' --print upstream-%s",
	                   tl_aw_src_path("test/cluster/build.sh", src, sizeof(src)), version),
	             0);
	char *nl = strchr(out.data, '\n');
	if (nl)
		*nl = '\0';
	snprintf(bin, sizeof(bin), "%s/manager", out.data);
	sf_buf_free(&out);
	cr_assert(access(bin, X_OK) == 0,
	          "%s: not built (make upgrade builds it: test/cluster/build.sh --upstream)", bin);
	tl_aw_src_path("test/cluster/upstream-exec.sh", exec_sh, sizeof(exec_sh));
	snprintf(kc, sizeof(kc), "KUBECONFIG=%s", tl_env("KUBECONFIG"));
	snprintf(nsenv, sizeof(nsenv), "NAMESPACE=%s", SYS);
	snprintf(tmp, sizeof(tmp), "TMPDIR=%s/tmp", WORK);
	const char *launcher[] = {"setpriv",  "--pdeathsig", "KILL",  "env", kc,
	                          nsenv,      tmp,           exec_sh, SYS,   bin,
	                          "--config", UPSTREAM_CM,   NULL};
	tl_ctl_opts o = {.ns = SYS, .id = id, .raw = 1, .launcher = launcher};
	return tl_ctl_start(&K.loop, &o);
}

/* A Steadfast replica on upstream's Lease in SYS, watching NS, keeping the
 * admission parameters in its own namespace (where the policies read
 * them), as docs/operations.md says: with the Lease in upstream's
 * namespace, the default (the Lease namespace) is not where they are. */
static tl_ctl *steadfast_start(const char *id)
{
	const char *extra[] = {PARAMS, NULL};
	tl_ctl_opts o = {.ns = NS,
	                 .extra = extra,
	                 .lease_ns = SYS,
	                 .lease = LEASE,
	                 .id = id,
	                 .config = CFG,
	                 /* the Deployment's (and upstream's) timings */
	                 .lease_ms = 15000,
	                 .renew_ms = 10000,
	                 .retry_ms = 2000};
	return tl_ctl_start(&K.loop, &o);
}

typedef struct log_wait {
	tl_ctl **ctls;
	int n;
	const char *a, *b; /* both on one line (b may be NULL) */
	int found;         /* the index of the process that logged it */
} log_wait;

static int logged(void *ud)
{
	log_wait *w = ud;
	for (int i = 0; i < w->n; i++)
		for (size_t j = 0; j < tl_ctl_nlines(w->ctls[i]); j++) {
			const char *l = tl_ctl_line(w->ctls[i], j);
			if (strstr(l, w->a) && (!w->b || strstr(l, w->b))) {
				w->found = i;
				return 1;
			}
		}
	return 0;
}

/* Waits until one of the processes logs a line with a (and b); returns its
 * index, or fails the test after timeout_ms. */
static int wait_logged(tl_ctl **ctls, int n, const char *a, const char *b, long timeout_ms)
{
	log_wait w = {ctls, n, a, b, -1};
	if (tl_run_until_fn(&K.loop, logged, &w, timeout_ms) != 0) {
		for (int i = 0; i < n; i++)
			tl_ctl_dump(ctls[i], 30);
		cr_assert_fail("no line with '%s'%s%s in %ld ms", a, b ? " and " : "", b ? b : "",
		               timeout_ms);
	}
	return w.found;
}

/* Replica p logged that it observed a leader other than a Steadfast
 * replica (identities "sf-...") and not "(none)": upstream. */
static int follows_upstream(void *ud)
{
	tl_ctl *p = ud;
	for (size_t j = 0; j < tl_ctl_nlines(p); j++) {
		const char *l = tl_ctl_line(p, j);
		const char *at = strstr(l, "\"leader\":\"");
		if (strstr(l, "new leader observed") && at) {
			at += strlen("\"leader\":\"");
			if (strncmp(at, "sf-", 3) != 0 && strncmp(at, "(none)", 6) != 0)
				return 1;
		}
	}
	return 0;
}

/* The holder of the Lease now, into buf. */
static void lease_holder(char *buf, size_t n)
{
	sf_obj *o = tl_kueue_get(&K, &SF_GVR_LEASES, SYS, LEASE);
	cr_assert_not_null(o, "Lease %s/%s absent", SYS, LEASE);
	buf[0] = '\0';
	sf_jv_str(sf_jv_path(sf_obj_root(o), "spec.holderIdentity"), buf, n);
	sf_obj_unref(o);
}

/* ---- the workload ---- */

static void apply(const char *yaml)
{
	tl_aw_apply_yaml(&K, NS, yaml, NULL, NULL);
}

/* A ResourceFlavor, a ClusterQueue with cpu for the 15 pods of 500m (the
 * other 5 wait for quota) and a LocalQueue "lq"; waits until Active. */
static void queues(const char *cpu)
{
	char y[2048];
	snprintf(
	    y, sizeof(y),
	    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: %s-rf\n"
	    "spec: {}\n---\n"
	    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: %s-cq\n"
	    "spec:\n  namespaceSelector: {}\n  resourceGroups:\n"
	    "  - coveredResources: [cpu, memory]\n    flavors:\n"
	    "    - name: %s-rf\n      resources:\n"
	    "      - {name: cpu, nominalQuota: \"%s\"}\n"
	    "      - {name: memory, nominalQuota: 64Gi}\n"
	    "---\n"
	    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: lq\n"
	    "spec:\n  clusterQueue: %s-cq\n",
	    NS, NS, NS, cpu, NS);
	apply(y);
	char cq[96], st[16];
	snprintf(cq, sizeof(cq), "%s-cq", NS);
	for (long left = 30000;; left -= 200) {
		sf_obj *o = tl_kueue_get(&K, &GVR_CLUSTERQUEUES, NULL, cq);
		cr_assert_not_null(o, "ClusterQueue %s absent", cq);
		st[0] = '\0';
		tl_aw_condition(sf_jv_path(sf_obj_root(o), "status.conditions"), "Active", st,
		                sizeof(st));
		sf_obj_unref(o);
		if (strcmp(st, "True") == 0)
			break;
		cr_assert_gt(left, 0, "ClusterQueue %s not Active in 30 s", cq);
		pause_ms(200);
	}
}

/* AppWrapper aw-<i> of one Job whose pod (500m cpu) kwok runs for an hour.
 * With Kueue: queue label lq, spec.suspend left to Kueue's webhook;
 * without: no queue label, spec.suspend as given. */
static void create_aw(int i, int kueue, int suspend)
{
	char body[2048], labels[128] = "", susp[64] = "";
	if (kueue)
		snprintf(labels, sizeof(labels),
		         "\"labels\":{\"kueue.x-k8s.io/queue-name\":\"lq\"},");
	else
		snprintf(susp, sizeof(susp), "\"suspend\":%s,", suspend ? "true" : "false");
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"metadata\":{"
	         "\"name\":\"aw-%02d\",%s\"annotations\":{}},\"spec\":{%s\"components\":[{"
	         "\"template\":{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{"
	         "\"name\":\"aw-%02d-job\"},\"spec\":{\"completions\":1,\"parallelism\":1,"
	         "\"backoffLimit\":0,\"template\":{\"metadata\":{\"annotations\":{"
	         "\"steadfast.test/kwok-run-for\":\"1h\"}},\"spec\":{\"restartPolicy\":\"Never\","
	         "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"resources\":{"
	         "\"requests\":{\"cpu\":\"500m\",\"memory\":\"100Mi\"}}}]}}}}}]}}",
	         i, labels, susp, i);
	tl_aw_create(&W, body);
}

typedef struct running_wait {
	int from, to;
} running_wait;

static int pod_phase_visit(void *ud, sf_obj *o)
{
	int *cnt = ud;
	sf_jv root = sf_obj_root(o);
	char aw[64] = "";
	sf_jv_str(sf_jv_get(sf_jv_path(root, "metadata.labels"), SF_AW_LABEL), aw, sizeof(aw));
	int i = aw_index(aw);
	if (i >= 0 && sf_jv_streq(sf_jv_path(root, "status.phase"), "Running") &&
	    !sf_jv_ok(sf_jv_path(root, "metadata.deletionTimestamp")))
		cnt[i]++;
	return 0;
}

/* aw-<from>..aw-<to-1> Running, PodsReady True, each with one Running pod. */
static int all_running(void *ud)
{
	const running_wait *r = ud;
	int cnt[NAW] = {0};
	sf_store_each(sf_informer_store(W.pods), pod_phase_visit, cnt);
	for (int i = r->from; i < r->to; i++) {
		sf_obj *o = tl_aw_cached(&W, TRACK[i].aw);
		if (!o || !sf_jv_streq(sf_jv_path(sf_obj_root(o), "status.phase"), "Running") ||
		    strcmp(tl_aw_cond(&W, TRACK[i].aw, "PodsReady", NULL, NULL), "True") != 0 ||
		    cnt[i] != 1)
			return 0;
	}
	return 1;
}

/* aw-<i>'s Job as the watch has it, after its AppWrapper. */
static void dump_with_job(int i)
{
	char job[96];
	snprintf(job, sizeof(job), "%.63s-job", TRACK[i].aw);
	tl_aw_dump(&W, TRACK[i].aw);
	sf_obj *j = sf_store_get_ns(sf_informer_store(W.jobs), NS, job);
	fprintf(stderr, "Job %s/%s: %s\n", NS, job, j ? j->json : "(absent)");
}

static void wait_running(int from, int to, long timeout_ms)
{
	running_wait r = {from, to};
	if (tl_run_until_fn(&K.loop, all_running, &r, timeout_ms) != 0) {
		for (int i = from; i < to; i++)
			dump_with_job(i);
		cr_assert_fail("aw-%02d..aw-%02d not all Running with PodsReady and a Running pod "
		               "in %ld ms",
		               from, to - 1, timeout_ms);
	}
}

static int aw_gone(void *ud)
{
	return tl_aw_cached(&W, (const char *)ud) == NULL;
}

/* A Job of aw-<i> with spec.suspend true while aw-<i> is not suspended:
 * Kueue suspended it (below). */
static int job_suspended_under(int i)
{
	char job[96];
	snprintf(job, sizeof(job), "%.63s-job", TRACK[i].aw);
	sf_obj *j = sf_store_get_ns(sf_informer_store(W.jobs), NS, job);
	sf_obj *a = tl_aw_cached(&W, TRACK[i].aw);
	return j && a && sf_jv_type(sf_jv_path(sf_obj_root(j), "spec.suspend")) == SF_JSON_TRUE &&
	       sf_jv_type(sf_jv_path(sf_obj_root(a), "spec.suspend")) != SF_JSON_TRUE;
}

/* Kueue v0.17.1 finished the Workload of aw-<i> as an orphan (condition
 * Finished True, reason OwnerNotFound) although aw-<i>, the very owner its
 * ownerReference names (same UID), exists: see make_workload. */
static int orphaned_by_kueue(int i)
{
	sf_obj *a = tl_aw_cached(&W, TRACK[i].aw);
	char uid[64] = "";
	if (!a)
		return 0;
	sf_jv_str(sf_jv_path(sf_obj_root(a), "metadata.uid"), uid, sizeof(uid));
	tl_res r;
	sf_kube_req q = {.method = "GET", .gvr = &GVR_WORKLOADS, .ns = NS};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 200, "list Workloads: %ld %s", r.http_status, r.message);
	int orphaned = 0;
	sf_jv_iter it = sf_jv_iter_init(sf_jv_get(sf_obj_root(r.obj), "items"));
	sf_jv wl;
	while (!orphaned && sf_jv_next(&it, NULL, &wl)) {
		sf_jv_iter oi = sf_jv_iter_init(sf_jv_path(wl, "metadata.ownerReferences"));
		sf_jv ref;
		int ours = 0;
		while (sf_jv_next(&oi, NULL, &ref))
			if (sf_jv_streq(sf_jv_get(ref, "kind"), "AppWrapper") &&
			    sf_jv_streq(sf_jv_get(ref, "name"), TRACK[i].aw) &&
			    sf_jv_streq(sf_jv_get(ref, "uid"), uid))
				ours = 1;
		if (!ours)
			continue;
		sf_jv_iter ci = sf_jv_iter_init(sf_jv_path(wl, "status.conditions"));
		sf_jv c;
		while (sf_jv_next(&ci, NULL, &c))
			if (sf_jv_streq(sf_jv_get(c, "type"), "Finished") &&
			    sf_jv_streq(sf_jv_get(c, "status"), "True") &&
			    sf_jv_streq(sf_jv_get(c, "reason"), "OwnerNotFound"))
				orphaned = 1;
	}
	tl_res_clear(&r);
	return orphaned;
}

/* Deletes aw-<i>, waits until it and its Job and pods are gone, and
 * creates it again (a new UID, so a new Workload). */
static void recreate_aw(int i)
{
	long st = tl_aw_req(&W, "DELETE", &SF_GVR_APPWRAPPERS, TRACK[i].aw, NULL, NULL);
	cr_assert(st == 200 || st == 202, "DELETE %s: %ld", TRACK[i].aw, st);
	cr_assert_eq(tl_run_until_fn(&K.loop, aw_gone, TRACK[i].aw, 60000), 0, "%s not gone",
	             TRACK[i].aw);
	tl_aw_wait_all_gone(&W, TRACK[i].aw, 60000);
	TRACK[i].njob_uids = 0;
	create_aw(i, 1, 0); /* suspended by Kueue's webhook */
}

/* With Kueue: those of aw-<from>..aw-<to-1> whose Workload Kueue finished
 * as an orphan, or whose Job it suspended under an unsuspended
 * AppWrapper, deleted and created again; returns how many. */
static int recreate_orphans(int from, int to)
{
	int again = 0;
	for (int i = from; i < to; i++) {
		int orphan = orphaned_by_kueue(i);
		if (!orphan && !job_suspended_under(i))
			continue;
		fprintf(stderr, "upgrade: set-up: %s: %s; deleting it and creating it again\n",
		        TRACK[i].aw,
		        orphan
		            ? "Kueue finished its Workload as an orphan (OwnerNotFound) while it "
		              "exists"
		            : "Kueue suspended its Job (no unfinished admitted Workload)");
		recreate_aw(i);
		again++;
	}
	return again;
}

/* The 20: 15 Running, 5 Suspended.
 *
 * With Kueue, Kueue v0.17.1 (feature FinishOrphanedWorkloads, beta, on by
 * default) finishes a Workload whose owner it does not find: it reads the
 * owner's metadata through a cache of its own, and for an AppWrapper just
 * created that cache may not have it yet. The Workload then carries
 * Finished True, reason OwnerNotFound, "The workload's owner no longer
 * exists", with the AppWrapper (same UID) in place, within the second of
 * its creation. What follows depends on how far Kueue had got: if not
 * yet admitted, the AppWrapper stays suspended for good; if admitted, it
 * runs, but Kueue suspends each Job created for it ("Kueue managed child
 * job suspended": no unfinished admitted Workload of the parent), so no
 * pod ever runs and the controller resets the AppWrapper after its
 * admission grace period, deleting that Job, again and again. Kueue's,
 * whichever controller runs the AppWrappers, before any handover; under
 * load it hits several of a burst of creations. The set-up deletes and
 * creates again every AppWrapper in that state (a new UID, a new
 * Workload), checking every 5 s for up to 2 minutes a round, 3 rounds at
 * most, so that the handover starts from 15 Running and 5 Suspended, each
 * with a live Workload. */
static void make_workload(int kueue)
{
	if (kueue)
		queues("7500m"); /* 15 x 500m */
	for (int i = 0; i < NRUN; i++)
		create_aw(i, kueue, 0);
	for (int round = 0; kueue && round < 3; round++) {
		/* Kueue admits one Workload per scheduling cycle: on a loaded
		 * 2-core machine the 15 take a while */
		running_wait r = {0, NRUN};
		int again = 0;
		for (long left = 120000; left > 0 && !again; left -= 5000) {
			if (tl_run_until_fn(&K.loop, all_running, &r, 5000) == 0)
				break;
			again = recreate_orphans(0, NRUN);
		}
		if (!again)
			break;
	}
	wait_running(0, NRUN, 240000);
	for (int i = NRUN; i < NAW; i++)
		create_aw(i, kueue, 1);
	for (int i = NRUN; i < NAW; i++)
		tl_aw_wait_phase(&W, TRACK[i].aw, "Suspended", 60000);
	/* the 5 stay suspended: nothing was created for them; with Kueue,
	 * each has a live Workload (Kueue reconciles a new one at once) */
	pause_ms(3000);
	for (int round = 0; kueue && round < 3 && recreate_orphans(NRUN, NAW); round++) {
		for (int i = NRUN; i < NAW; i++)
			tl_aw_wait_phase(&W, TRACK[i].aw, "Suspended", 60000);
		pause_ms(3000);
	}
	for (int i = NRUN; i < NAW; i++) {
		sf_obj *o = tl_aw_cached(&W, TRACK[i].aw);
		cr_assert(o && sf_jv_type(sf_jv_path(sf_obj_root(o), "spec.suspend")) ==
		                   SF_JSON_TRUE,
		          "%s is not suspended", TRACK[i].aw);
		cr_assert_eq(tl_aw_labelled(W.jobs, TRACK[i].aw), 0, "%s has a Job", TRACK[i].aw);
		if (kueue)
			cr_assert(!orphaned_by_kueue(i), "%s: Workload still finished as an orphan",
			          TRACK[i].aw);
	}
	if (kueue)
		for (int i = 0; i < NRUN; i++)
			cr_assert(!orphaned_by_kueue(i), "%s: Workload finished as an orphan",
			          TRACK[i].aw);
}

/* What the previous controller wrote, taken before the handover. */
static sf_obj *SNAP[NAW];

static void snapshot(void)
{
	for (int i = 0; i < NAW; i++) {
		sf_obj *o = tl_aw_cached(&W, TRACK[i].aw);
		cr_assert_not_null(o);
		SNAP[i] = sf_obj_ref(o);
	}
}

/* status, labels, annotations and finalizers of the 20, now and in the
 * snapshot: structurally equal, or the test fails naming each difference. */
static void compare_snapshot(const char *who_before)
{
	static const char *const paths[] = {"status",
	                                    "metadata.labels",
	                                    "metadata.annotations",
	                                    "metadata.finalizers",
	                                    "spec.suspend",
	                                    NULL};
	int diffs = 0;
	for (int i = 0; i < NAW; i++) {
		sf_obj *now = tl_aw_cached(&W, TRACK[i].aw);
		cr_assert_not_null(now);
		for (size_t p = 0; paths[p]; p++) {
			sf_jv a = sf_jv_path(sf_obj_root(SNAP[i]), paths[p]);
			sf_jv b = sf_jv_path(sf_obj_root(now), paths[p]);
			char where[512] = "";
			if (!sf_jv_ok(a) && !sf_jv_ok(b))
				continue;
			if (sf_jv_ok(a) && sf_jv_ok(b) &&
			    tl_aw_json_equal(a, b, where, sizeof(where)))
				continue;
			diffs++;
			fprintf(stderr,
			        "upgrade: %s: %s written by %s changed at %s:\n  before: %.*s\n  "
			        "after:  %.*s\n",
			        TRACK[i].aw, paths[p], who_before, where, (int)a.n, a.p ? a.p : "",
			        (int)b.n, b.p ? b.p : "");
		}
	}
	for (int i = 0; i < NAW; i++) {
		sf_obj_unref(SNAP[i]);
		SNAP[i] = NULL;
	}
	cr_assert_eq(diffs, 0, "%d fields %s wrote were changed after the handover (above)", diffs,
	             who_before);
}

/* The audit log from the mark: no Job or pod of NS created or deleted, by
 * anyone; the writes of the new controller to the AppWrappers reported. */
static void check_audit(const tl_audit_mark *m)
{
	tl_audit_sync(&K, m, NS, 30000);
	tl_audit_req *v = NULL;
	size_t n = tl_audit_read(m, NS, &v);
	int comp = 0, awwrites = 0;
	for (size_t i = 0; i < n; i++) {
		const tl_audit_req *e = &v[i];
		if (!tl_audit_is_write(e))
			continue;
		int create_or_delete = strcmp(e->verb, "create") == 0 ||
		                       strcmp(e->verb, "delete") == 0 ||
		                       strcmp(e->verb, "deletecollection") == 0;
		if ((strcmp(e->resource, "jobs") == 0 || strcmp(e->resource, "pods") == 0) &&
		    create_or_delete && !e->sub[0]) {
			comp++;
			fprintf(stderr, "upgrade: audit: %s %s %s/%s by '%s' (%ld)\n", e->verb,
			        e->resource, e->ns, e->name, e->who, e->code);
		}
		if (strcmp(e->resource, "appwrappers") == 0) {
			awwrites++;
			fprintf(stderr, "upgrade: audit: %s appwrappers%s%s %s by '%s' (%ld)\n",
			        e->verb, e->sub[0] ? "/" : "", e->sub, e->name, e->who, e->code);
		}
	}
	free(v);
	fprintf(stderr,
	        "upgrade: audit: %d AppWrapper writes across the handover and the "
	        "observation\n",
	        awwrites);
	cr_assert_eq(comp, 0, "%d Jobs or pods created or deleted across the handover (above)",
	             comp);
}

static void observe(const char *what)
{
	long ms = observe_ms();
	fprintf(stderr, "upgrade: %s: observing for %ld s\n", what, ms / 1000);
	OBSERVING = 1;
	pause_ms(ms);
	OBSERVING = 0;
	for (int i = 0; i < NBAD && i < MAX_BAD; i++)
		fprintf(stderr, "upgrade: seen: %s\n", BAD[i]);
	cr_assert_eq(NBAD, 0, "%d forbidden changes or Events during the observation (above)",
	             NBAD);
}

static void record_handover(const char *dir, const char *version, int kueue, double ms)
{
	const char *path = getenv("STEADFAST_UPGRADE_RESULTS");
	char def[4200];
	if (!path || !*path) {
		const char *bin = getenv("STEADFAST_BIN");
		snprintf(def, sizeof(def), "%s", bin ? bin : "build/steadfast");
		char *slash = strrchr(def, '/');
		snprintf(slash ? slash + 1 : def, 64, "test-results/upgrade-handover.tsv");
		path = def;
	}
	fprintf(stderr, "upgrade: handover %s %s %s: %.0f ms\n", dir, version,
	        kueue ? "kueue+webhooks" : "plain", ms);
	FILE *f = fopen(path, "a");
	if (f) {
		fprintf(f, "%s\t%s\t%s\t%.0f\n", dir, version, kueue ? "kueue+webhooks" : "plain",
		        ms);
		fclose(f);
	}
}

/* The 5 admitted: each runs with one Job and a Running pod. */
static void admit_queued(int kueue)
{
	if (kueue) {
		char cq[96];
		snprintf(cq, sizeof(cq), "%s-cq", NS);
		char patch[512];
		snprintf(
		    patch, sizeof(patch),
		    "{\"spec\":{\"resourceGroups\":[{\"coveredResources\":[\"cpu\",\"memory\"],"
		    "\"flavors\":[{\"name\":\"%s-rf\",\"resources\":[{\"name\":\"cpu\","
		    "\"nominalQuota\":\"10\"},{\"name\":\"memory\",\"nominalQuota\":\"64Gi\"}]}]}]}"
		    "}",
		    NS);
		tl_res r;
		sf_kube_req q = {.method = "PATCH",
		                 .gvr = &GVR_CLUSTERQUEUES,
		                 .name = cq,
		                 .body = patch,
		                 .body_len = strlen(patch),
		                 .content_type = "application/merge-patch+json"};
		tl_do(&K, &q, &r);
		cr_assert_eq(r.http_status, 200, "raise the quota: %ld %s", r.http_status,
		             r.message);
		tl_res_clear(&r);
	} else {
		for (int i = NRUN; i < NAW; i++)
			tl_aw_admit(&W, TRACK[i].aw, NULL);
	}
	wait_running(NRUN, NAW, 180000);
	for (int i = 0; i < NAW; i++)
		cr_assert_eq(TRACK[i].njob_uids, 1, "%s had %d Jobs", TRACK[i].aw,
		             TRACK[i].njob_uids);
}

static int count_visit(void *ud, sf_obj *o)
{
	(void)o;
	(*(int *)ud)++;
	return 0;
}

static int store_count(sf_informer *inf)
{
	int n = 0;
	sf_store_each(sf_informer_store(inf), count_visit, &n);
	return n;
}

static int nothing_left(void *ud)
{
	(void)ud;
	return store_count(W.aws) == 0 && store_count(W.jobs) == 0 && store_count(W.pods) == 0;
}

/* All 20 deleted: nothing of them left (AppWrappers, Jobs, pods and, with
 * Kueue, Workloads). */
static void delete_all(int kueue)
{
	for (int i = 0; i < NAW; i++) {
		long st = tl_aw_req(&W, "DELETE", &SF_GVR_APPWRAPPERS, TRACK[i].aw, NULL, NULL);
		cr_assert(st == 200 || st == 202, "DELETE %s: %ld", TRACK[i].aw, st);
	}
	if (tl_run_until_fn(&K.loop, nothing_left, NULL, 120000) != 0)
		cr_assert_fail("after deleting all: %d AppWrappers, %d Jobs, %d pods left",
		               store_count(W.aws), store_count(W.jobs), store_count(W.pods));
	if (kueue) {
		for (long left = 60000;; left -= 500) {
			tl_res r;
			sf_kube_req q = {.method = "GET", .gvr = &GVR_WORKLOADS, .ns = NS};
			tl_do(&K, &q, &r);
			cr_assert_eq(r.http_status, 200);
			unsigned long items = 0;
			if (r.obj)
				items = sf_jv_len(sf_jv_get(sf_obj_root(r.obj), "items"));
			tl_res_clear(&r);
			if (items == 0)
				break;
			cr_assert_gt(left, 0, "%lu Workloads left in %s", items, NS);
			pause_ms(500);
		}
	}
}

/* ---- admission ---- */

/* Steadfast's admission (manifests/admission) with its parameters in OWN
 * (Steadfast's namespace, steadfast-system in the manifests), the parameters
 * first (the bindings deny every create without them), set as the config
 * says (manageJobsWithoutQueueName false, as Kueue here). */
static void install_policies(void)
{
	char path[4096], nsline[128];
	snprintf(nsline, sizeof(nsline), "namespace: %s", OWN);
	char *params =
	    read_file(tl_aw_src_path("manifests/admission/params.yaml", path, sizeof(path)));
	char *p1 = replace_all(params, "namespace: steadfast-system", nsline);
	/* shipped "false" since b236d31; set in any case, as the doc says */
	char *p2 = replace_all(p1, "manageJobsWithoutQueueName: \"true\"",
	                       "manageJobsWithoutQueueName: \"false\"");
	cr_assert(strstr(p2, "manageJobsWithoutQueueName: \"false\""),
	          "params.yaml: no manageJobsWithoutQueueName");
	tl_aw_apply_yaml(&K, OWN, p2, NULL, NULL);
	free(params);
	free(p1);
	free(p2);
	static const char *const files[] = {"validating_policy.yaml", "user_rbac_policy.yaml",
	                                    "mutating_policy.yaml", NULL};
	for (size_t i = 0; files[i]; i++) {
		char rel[128];
		snprintf(rel, sizeof(rel), "manifests/admission/%s", files[i]);
		char *t = read_file(tl_aw_src_path(rel, path, sizeof(path)));
		char *m = replace_all(t, "namespace: steadfast-system", nsline);
		tl_aw_apply_yaml(&K, NULL, m, NULL, NULL);
		free(t);
		free(m);
	}
}

static void dry_run_create(const char *json, tl_res *r)
{
	sf_kube_req q = {.method = "POST",
	                 .gvr = &SF_GVR_APPWRAPPERS,
	                 .ns = NS,
	                 .query = "dryRun=All",
	                 .body = json,
	                 .body_len = strlen(json)};
	tl_do(&K, &q, r);
}

#define PROBE_HEAD                                                                                 \
	"{\"apiVersion\":\"" SF_AW_API_VERSION                                                     \
	"\",\"kind\":\"AppWrapper\",\"metadata\":{\"name\":"                                       \
	"\"probe\",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"lq\"}},\"spec\":{\"components\":["
#define PROBE_POD(ns_member)                                                                       \
	"{\"template\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"            \
	"\"p\"" ns_member                                                                          \
	"},\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}}"

/* Retries a dry-run create until pred holds for its answer (30 s). */
static void await_answer(const char *json, int (*pred)(const tl_res *r), const char *what)
{
	tl_res r;
	for (long left = 30000;; left -= 200) {
		dry_run_create(json, &r);
		if (pred(&r))
			break;
		cr_assert_gt(left, 0, "%s: not within 30 s; last answer %ld %s", what,
		             r.http_status, r.message);
		tl_res_clear(&r);
		pause_ms(200);
	}
	tl_res_clear(&r);
}

static int refused_by_validating_policy(const tl_res *r)
{
	return r->http_status == 403 && strstr(r->message, "'" POLICY "'");
}

static int refused_by_rbac_policy(const tl_res *r)
{
	return r->http_status == 403 && strstr(r->message, "'" RBAC_POLICY "'");
}

static int given_the_finalizer(const tl_res *r)
{
	if (r->http_status != 201 || !r->obj)
		return 0;
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(sf_obj_root(r->obj), "metadata.finalizers"));
	sf_jv f;
	while (sf_jv_next(&it, NULL, &f))
		if (sf_jv_streq(f, SF_AW_FINALIZER))
			return 1;
	return 0;
}

static int created(const tl_res *r)
{
	return r->http_status == 201;
}

/* Each policy shown in force by an answer only it gives: the validating
 * policy refuses a component in another namespace naming itself, the user
 * RBAC policy a kind it has no resource for, and the mutating policy adds
 * the finalizer (upstream's webhook does not; upstream's controller adds
 * it after creation). */
static void await_policies(void)
{
	await_answer(PROBE_HEAD PROBE_POD(",\"namespace\":\"kube-system\"") "]}}",
	             refused_by_validating_policy, "the validating policy");
	await_answer(PROBE_HEAD
	             "{\"podSets\":[{\"path\":\"template.spec.template\"}],\"template\":{"
	             "\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":"
	             "\"w\"},\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"main\","
	             "\"image\":\"busybox\"}]}}}}}]}}",
	             refused_by_rbac_policy, "the user RBAC policy");
	await_answer(PROBE_HEAD PROBE_POD("") "]}}", given_the_finalizer, "the mutating policy");
}

/* Upstream's certificate Secret (SYS) and webhook configurations
 * (test/cluster/upstream-webhooks.sh). */
static void upstream_webhook_files(const char *version)
{
	char src[4096], mod[4096];
	module_dir(version, mod, sizeof(mod));
	cr_assert_eq(tl_sh(NULL, "'%s' '%s/wh' '%s' '%s' >&2",
	                   tl_aw_src_path("test/cluster/upstream-webhooks.sh", src, sizeof(src)),
	                   WORK, SYS, mod),
	             0, "upstream-webhooks.sh failed");
	char path[256];
	snprintf(path, sizeof(path), "%s/wh/secret.yaml", WORK);
	tl_aw_apply_yaml(&K, SYS, path, NULL, NULL);
	/* in a pod the Secret is mounted there: controller-runtime's webhook
	 * server reads the files when it starts, before the rotator writes */
	cr_assert_eq(tl_sh(NULL,
	                   "d='%s/tmp/k8s-webhook-server/serving-certs' && mkdir -p \"$d\" && "
	                   "cp '%s/wh/tls.crt' '%s/wh/tls.key' '%s/wh/ca.crt' \"$d/\"",
	                   WORK, WORK, WORK, WORK),
	             0);
}

static void apply_upstream_webhooks(void)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/wh/webhooks.yaml", WORK);
	tl_aw_apply_yaml(&K, NULL, path, NULL, NULL);
}

/* Upstream's webhooks answer: a valid dry-run create passes both (with
 * failurePolicy Fail, a webhook the API server cannot call refuses it). */
static void await_upstream_webhooks(void)
{
	await_answer(PROBE_HEAD PROBE_POD("") "]}}", created, "upstream's webhooks");
}

static void delete_upstream_webhooks(void)
{
	delete_cluster_obj(&MWHS, MWH);
	delete_cluster_obj(&VWHS, VWH);
}

/* ---- the two directions ---- */

static void upstream_to_steadfast(const char *version, int kueue)
{
	char id[64];
	/* 1. upstream, leading on its Lease */
	apply_crd(version);
	write_configs(kueue);
	if (kueue) {
		upstream_webhook_files(version);
		apply_upstream_webhooks();
	}
	snprintf(id, sizeof(id), "upstream-%s", version);
	tl_ctl *up = upstream_start(version, id);
	wait_logged(&up, 1, "uccessfully acquired lease", LEASE, 60000);
	if (kueue)
		await_upstream_webhooks();
	/* 2. the workload, under upstream */
	make_workload(kueue);
	pause_ms(5000); /* whatever upstream still writes, before the snapshot */
	/* 3. admission: the policies in force, then upstream's webhooks gone */
	if (kueue) {
		install_policies();
		await_policies();
		delete_upstream_webhooks();
		await_policies();
	}
	/* 4. Steadfast's CRD */
	apply_crd(NULL);
	/* 5. two replicas following upstream */
	tl_ctl *sf[2] = {steadfast_start("sf-a"), steadfast_start("sf-b")};
	for (int i = 0; i < 2; i++)
		if (tl_run_until_fn(&K.loop, follows_upstream, sf[i], 30000) != 0) {
			tl_ctl_dump(sf[i], 20);
			cr_assert_fail("replica %d did not observe upstream leading", i);
		}
	pause_ms(3000);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(tl_ctl_count(sf[i], "acquired the lease", 0), 0,
		             "replica %d took the Lease upstream holds", i);
	char holder[256];
	lease_holder(holder, sizeof(holder));
	cr_assert(holder[0] && strncmp(holder, "sf-", 3) != 0, "the Lease's holder is '%s'",
	          holder);
	snapshot();
	/* 6. upstream stopped as a rolling update stops it */
	tl_audit_mark mark;
	tl_audit_mark_now(&mark);
	OBSERVING = 1;
	int64_t t0 = sf_mono_ns();
	tl_ctl_signal(up, SIGTERM);
	wait_logged(sf, 2, "\"msg\":\"reconciling\"", NULL, 60000);
	double ms = (double)(sf_mono_ns() - t0) / 1e6;
	record_handover("upgrade", version, kueue, ms);
	int64_t status = -1;
	cr_assert_eq(tl_ctl_wait_exit(&K.loop, up, 30000, &status, NULL), 0,
	             "upstream did not exit within 30 s of SIGTERM");
	/* 7. two minutes */
	observe("upgrade");
	check_audit(&mark);
	compare_snapshot("upstream");
	/* 8, 9 */
	admit_queued(kueue);
	delete_all(kueue);
}

static void steadfast_to_upstream(const char *version, int kueue)
{
	char id[64];
	/* Steadfast: its CRD (installed by the set-up), its admission, two
	 * replicas leading on the Lease upstream uses */
	write_configs(kueue);
	if (kueue) {
		install_policies();
		await_policies();
	}
	tl_ctl *sf[2] = {steadfast_start("sf-a"), steadfast_start("sf-b")};
	wait_logged(sf, 2, "\"msg\":\"reconciling\"", NULL, 60000);
	make_workload(kueue);
	pause_ms(5000);
	/* upstream following, its webhooks in force before the policies go */
	snprintf(id, sizeof(id), "upstream-%s", version);
	if (kueue)
		upstream_webhook_files(version);
	tl_ctl *up = upstream_start(version, id);
	wait_logged(&up, 1, "ttempting to acquire leader lease", LEASE, 60000);
	if (kueue) {
		wait_logged(&up, 1, "Serving webhook server", NULL, 60000);
		apply_upstream_webhooks();
		await_upstream_webhooks();
		delete_policies();
	}
	apply_crd(version);
	pause_ms(3000);
	cr_assert_eq(tl_ctl_count(up, "uccessfully acquired lease", 0), 0,
	             "upstream took the Lease Steadfast holds");
	char holder[256];
	lease_holder(holder, sizeof(holder));
	cr_assert(strncmp(holder, "sf-", 3) == 0, "the Lease's holder is '%s'", holder);
	snapshot();
	tl_audit_mark mark;
	tl_audit_mark_now(&mark);
	OBSERVING = 1;
	int64_t t0 = sf_mono_ns();
	/* the Deployment scaled to zero: every replica SIGTERMed */
	tl_ctl_signal(sf[0], SIGTERM);
	tl_ctl_signal(sf[1], SIGTERM);
	wait_logged(&up, 1, "Starting workers", "\"controller\": \"AppWrapper\"", 60000);
	double ms = (double)(sf_mono_ns() - t0) / 1e6;
	record_handover("rollback", version, kueue, ms);
	for (int i = 0; i < 2; i++) {
		int64_t status = -1;
		cr_assert_eq(tl_ctl_wait_exit(&K.loop, sf[i], 30000, &status, NULL), 0);
		cr_assert_eq(status, 0, "replica %d exited %lld", i, (long long)status);
	}
	observe("rollback");
	check_audit(&mark);
	compare_snapshot("Steadfast");
	admit_queued(kueue);
	delete_all(kueue);
}

Test(upgrade, upstream_v1_2_1_to_steadfast_with_kueue_and_webhooks)
{
	upstream_to_steadfast("v1.2.1", 1);
}

Test(upgrade, upstream_v1_2_1_to_steadfast_without_kueue_or_webhooks)
{
	upstream_to_steadfast("v1.2.1", 0);
}

Test(upgrade, upstream_v1_2_2_to_steadfast_with_kueue_and_webhooks)
{
	upstream_to_steadfast("v1.2.2", 1);
}

Test(upgrade, upstream_v1_2_2_to_steadfast_without_kueue_or_webhooks)
{
	upstream_to_steadfast("v1.2.2", 0);
}

Test(upgrade, steadfast_back_to_upstream_v1_2_1_with_kueue_and_webhooks)
{
	steadfast_to_upstream("v1.2.1", 1);
}

Test(upgrade, steadfast_back_to_upstream_v1_2_1_without_kueue_or_webhooks)
{
	steadfast_to_upstream("v1.2.1", 0);
}

Test(upgrade, steadfast_back_to_upstream_v1_2_2_with_kueue_and_webhooks)
{
	steadfast_to_upstream("v1.2.2", 1);
}

Test(upgrade, steadfast_back_to_upstream_v1_2_2_without_kueue_or_webhooks)
{
	steadfast_to_upstream("v1.2.2", 0);
}
