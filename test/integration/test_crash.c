/*
 * test_crash.c - a crash at every write (Sieve's intermediate states, with
 * its stale and unobserved states on the replica that takes over), on the
 * real control plane (kube-apiserver + etcd, kube-controller-manager for
 * Jobs and garbage collection) with the steadfast test build.
 *
 * Four lifecycles of an AppWrapper wrapping a one-pod Job:
 *   S1 job-succeeds: admitted, its pod Running then Succeeded: Succeeded;
 *   S2 job-fails-resets-then-fails: retryLimit 1, the pod fails (exit 1),
 *      the AppWrapper resets, the new Job's pod fails: Failed, components
 *      deleted;
 *   S3 preempt-readmit: admitted, pod Running, Kueue preempts (suspend):
 *      Suspended (Job deleted, QuotaReserved False), admitted again:
 *      Running with a new Job whose pod runs;
 *   S4 delete-while-running: admitted, pod Running, the user deletes the
 *      AppWrapper: Job deleted, finalizer removed, the AppWrapper gone.
 *
 * Each lifecycle first runs clean (one replica, the shipped binary): the
 * audit log gives W, the controller's acknowledged writes (its 2xx
 * creates, updates, patches and deletes of appwrappers, appwrappers/status,
 * jobs and pods; Events are not counted, as the fault point does not count
 * them), their sequence, and the outcome. Then for a write k in 1..W and a
 * view p of the standby, in a fresh namespace: replica A
 * (STEADFAST_FAULT_CRASH_AFTER_WRITE=k) leads, standby B starts with p's
 * faults (a: none; b: stale, its component and pod watch events applied
 * 8 s late; c: coalesced, component and pod events held 3 s and only each
 * object's newest state delivered), the same lifecycle is driven, A
 * SIGKILLs itself right after the API server acknowledged its write k, B
 * takes over (2 s Leases) and runs it to the end. The oracles, from the
 * audit log and the objects:
 *   (i)   the outcome is the clean run's (phase, or gone for S4);
 *   (ii)  as many Job creates answered 201 as in the clean run: never a
 *         second incarnation of the component;
 *   (iii) as many successful Job DELETEs as the clean run, and pod
 *         DELETEs only where the clean run had them;
 *   (iv)  QuotaReserved never turns False while a pod of the AppWrapper
 *         exists that is not Succeeded or Failed (at each event of the
 *         test's own watch where it turns False, a live LIST of the pods
 *         labelled with the AppWrapper);
 *   (v)   no write of A completed after B's first write, and no write of
 *         either replica was received before that replica's first
 *         acknowledged Lease write (its acquisition).
 * A cell whose lifecycle ended before A's write k says so (A never
 * crashed); the oracles still apply. A cell also fails when A died without
 * the fault point's line, or B died.
 *
 * The driver reacts to what the test's own watch shows, never to what it
 * assumes a replica did: it admits an AppWrapper it sees Suspended, plays
 * the kubelet for whatever pod of a Running AppWrapper exists, preempts or
 * deletes once PodsReady is True. Kueue is played (spec.suspend, as
 * tl_aw_admit does) rather than run because the cells need the exact
 * moment of admission and preemption relative to A's writes; the kubelet
 * is played for pod status (test_kueue_crash.c runs the Kueue lifecycles'
 * matrix with the real Kueue, kube-scheduler and kwok; the machinery both
 * share is test/lib/tl_crash.c). Oracle (iv)'s LIST is answered before the
 * driver acts again, so a pod its next step brings about (a readmission's)
 * is never in it.
 *
 * A cell ends when the lifecycle's end holds and the leader of the moment
 * is idle (its /metrics, polled: queue empty, no reconcile in flight, at
 * least one reconcile done) - B only once it took over and the window in
 * which its late events still arrive has passed (9 s for b, 4 s for c).
 * Then the replicas are stopped and the audit log is read up to a request
 * the test makes after that (tl_audit_sync).
 *
 * STEADFAST_CRASH_CELLS="s2:18b" runs only the cells named (lifecycle,
 * write, view; a comma-separated list) with their clean runs, and
 * STEADFAST_CRASH_CELL_SECONDS changes a cell's deadline (240 s): for
 * reproducing one.
 *
 * `make test` runs a slice: for each lifecycle k = 1, the middle write, W
 * and every Job create and delete with view a, plus one cell of b (S1, A
 * dying at its Job create) and one of c (S3, A dying at its Job delete).
 * STEADFAST_CRASH_MATRIX=full (make crash-matrix) runs every k with every
 * view. Each test writes its lifecycle's matrix to $RESULTS (else the
 * build directory's test-results)/crash-matrix-parts/<shape>.md, assembles
 * crash-matrix.md from the sections there, prints its section to stderr,
 * and fails naming every failed cell and oracle.
 */
#include <criterion/criterion.h>
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
#include "tl_crash.h"
#include "tl_ctl.h"

#define AW "crash"
#define JOB AW "-job"
#define LEASE "steadfast-crash"
#define MAX_PODS 16 /* pods a driver keeps track of */
#define CELL_S 240L /* a cell's deadline; STEADFAST_CRASH_CELL_SECONDS overrides it */

static tl_kube K;

static void setup(void)
{
	sf_log_set_level(getenv("SF_DEBUG") ? SF_LOG_DEBUG : SF_LOG_WARN);
	tl_kube_open(&K, NULL, NULL);
	tl_aw_install_crd(&K);
}

static void teardown(void)
{
	tl_ctl_stop_all(&K.loop);
	tl_kube_close(&K);
}

/* The full matrix takes most of an hour; every wait inside has its own
 * deadline. */
TestSuite(crash, .init = setup, .fini = teardown, .timeout = 5400);

/* ---- a run: one lifecycle in one namespace ---- */

typedef enum {
	ACT_NONE,
	ACT_ADMIT,
	ACT_RUN,     /* kubelet: the pod Running */
	ACT_SUCCEED, /* kubelet: the pod Succeeded */
	ACT_FAIL,    /* kubelet: the pod Failed, exit code 1 */
	ACT_PREEMPT, /* Kueue: spec.suspend true */
	ACT_DELETE,  /* the user deletes the AppWrapper */
	ACT_END,
} act;

typedef struct run run;

typedef struct shape {
	tl_crash_shape c;        /* tag, id, the clean run's outcome (a phase, or
	                          * "gone"), the slice's extra cell */
	const char *annotations; /* members of metadata.annotations */
	act (*next)(run *r);     /* the driver: what to do now */
} shape;

typedef struct pod_seen {
	char name[254], uid[64], phase[16], owner[64];
} pod_seen;

struct run {
	const shape *s;
	char ns[64];
	tl_aw_watch w;
	/* the driver */
	int admits, preempted, deleted;
	char ran[MAX_PODS][64]; /* UIDs of pods made Running */
	int nran;
	char ended[MAX_PODS][64]; /* UIDs of pods made Succeeded or Failed */
	int nended;
	char first_job[64]; /* UID of the first Job the watch showed */
	act a;
	pod_seen pod; /* the pod of ACT_RUN, ACT_SUCCEED, ACT_FAIL */
	char driver_err[256];
	tl_crash_quota quota; /* oracle (iv) */
};

static const char *phase(run *r)
{
	static char buf[32];
	buf[0] = 0;
	sf_obj *o = tl_aw_cached(&r->w, AW);
	if (o)
		sf_jv_str(sf_jv_path(sf_obj_root(o), "status.phase"), buf, sizeof(buf));
	return buf;
}

static int is(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static int cond_is(run *r, const char *type, const char *status)
{
	return is(tl_aw_cond(&r->w, AW, type, NULL, NULL), status);
}

static int in(char (*set)[64], int n, const char *uid)
{
	for (int i = 0; i < n; i++)
		if (is(set[i], uid))
			return 1;
	return 0;
}

static void add(char (*set)[64], int *n, const char *uid)
{
	if (*n < MAX_PODS && !in(set, *n, uid))
		snprintf(set[(*n)++], 64, "%s", uid);
}

typedef struct pods_seen {
	pod_seen p[MAX_PODS];
	int n;
} pods_seen;

static int pods_visit(void *ud, sf_obj *o)
{
	pods_seen *ps = ud;
	sf_jv root = sf_obj_root(o);
	if (ps->n >= MAX_PODS ||
	    !sf_jv_streq(sf_jv_get(sf_jv_path(root, "metadata.labels"), SF_AW_LABEL), AW) ||
	    sf_jv_ok(sf_jv_path(root, "metadata.deletionTimestamp")))
		return 0;
	pod_seen *p = &ps->p[ps->n++];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", o->name);
	snprintf(p->uid, sizeof(p->uid), "%s", o->uid);
	sf_jv_str(sf_jv_path(root, "status.phase"), p->phase, sizeof(p->phase));
	sf_jv_str(sf_jv_path(root, "metadata.ownerReferences[0].uid"), p->owner, sizeof(p->owner));
	return 0;
}

/* The live (not terminating) pods of the AppWrapper in the test's cache. */
static pods_seen pods(run *r)
{
	pods_seen ps;
	ps.n = 0;
	sf_store_each(sf_informer_store(r->w.pods), pods_visit, &ps);
	return ps;
}

static void note_job(run *r)
{
	sf_obj *j = sf_store_get_ns(sf_informer_store(r->w.jobs), r->ns, JOB);
	if (j && !r->first_job[0])
		snprintf(r->first_job, sizeof(r->first_job), "%s", j->uid);
}

/* A pod the kubelet has not started yet. */
static int pod_to_run(run *r, pod_seen *out)
{
	pods_seen ps = pods(r);
	for (int i = 0; i < ps.n; i++)
		if (!in(r->ran, r->nran, ps.p[i].uid) && !in(r->ended, r->nended, ps.p[i].uid) &&
		    !is(ps.p[i].phase, "Running") && !is(ps.p[i].phase, "Succeeded") &&
		    !is(ps.p[i].phase, "Failed")) {
			*out = ps.p[i];
			return 1;
		}
	return 0;
}

/* A pod the kubelet made Running (and the watch shows so) and has not
 * ended; with a Job other than the first one when `new_job`. */
static int pod_running(run *r, pod_seen *out, int new_job)
{
	pods_seen ps = pods(r);
	for (int i = 0; i < ps.n; i++)
		if (in(r->ran, r->nran, ps.p[i].uid) && !in(r->ended, r->nended, ps.p[i].uid) &&
		    is(ps.p[i].phase, "Running") &&
		    (!new_job || (r->first_job[0] && !is(ps.p[i].owner, r->first_job)))) {
			*out = ps.p[i];
			return 1;
		}
	return 0;
}

/* S1: admitted; its pod Running, then (PodsReady) Succeeded. */
static act s1_next(run *r)
{
	const char *ph = phase(r);
	if (is(ph, "Succeeded"))
		return ACT_END;
	if (is(ph, "Suspended") && r->admits == 0)
		return ACT_ADMIT;
	if (is(ph, "Running")) {
		if (pod_to_run(r, &r->pod))
			return ACT_RUN;
		if (cond_is(r, "PodsReady", "True") && pod_running(r, &r->pod, 0))
			return ACT_SUCCEED;
	}
	return ACT_NONE;
}

/* S2: admitted; every pod of a Running AppWrapper fails. */
static act s2_next(run *r)
{
	const char *ph = phase(r);
	if (is(ph, "Failed") && cond_is(r, "QuotaReserved", "False") &&
	    cond_is(r, "ResourcesDeployed", "False"))
		return ACT_END;
	if (is(ph, "Suspended") && r->admits == 0)
		return ACT_ADMIT;
	if (is(ph, "Running")) {
		pods_seen ps = pods(r);
		for (int i = 0; i < ps.n; i++)
			if (!in(r->ended, r->nended, ps.p[i].uid) && !is(ps.p[i].phase, "Failed") &&
			    !is(ps.p[i].phase, "Succeeded")) {
				r->pod = ps.p[i];
				return ACT_FAIL;
			}
	}
	return ACT_NONE;
}

/* S3: admitted, pod Running, preempted once PodsReady, admitted again
 * once Suspended with the quota released; ends Running with a pod of a
 * new Job Running. */
static act s3_next(run *r)
{
	const char *ph = phase(r);
	pod_seen p;
	note_job(r);
	if (r->admits == 2 && is(ph, "Running") && cond_is(r, "PodsReady", "True") &&
	    pod_running(r, &p, 1))
		return ACT_END;
	if (is(ph, "Suspended") && r->admits == 0)
		return ACT_ADMIT;
	if (is(ph, "Suspended") && r->admits == 1 && r->preempted &&
	    cond_is(r, "QuotaReserved", "False"))
		return ACT_ADMIT;
	if (is(ph, "Running")) {
		if (pod_to_run(r, &r->pod))
			return ACT_RUN;
		if (!r->preempted && cond_is(r, "PodsReady", "True") && pod_running(r, &p, 0))
			return ACT_PREEMPT;
	}
	return ACT_NONE;
}

/* S4: admitted, pod Running, deleted once PodsReady; ends when the
 * AppWrapper, its Job and its pods are gone. */
static act s4_next(run *r)
{
	const char *ph = phase(r);
	pod_seen p;
	if (r->deleted && !tl_aw_cached(&r->w, AW) && tl_aw_labelled(r->w.jobs, AW) == 0 &&
	    tl_aw_labelled(r->w.pods, AW) == 0)
		return ACT_END;
	if (is(ph, "Suspended") && r->admits == 0)
		return ACT_ADMIT;
	if (is(ph, "Running") && !r->deleted) {
		if (pod_to_run(r, &r->pod))
			return ACT_RUN;
		if (cond_is(r, "PodsReady", "True") && pod_running(r, &p, 0))
			return ACT_DELETE;
	}
	return ACT_NONE;
}

/* The slice's one cell of b: S1, A dying at its Job create; of c: S3, A
 * dying at its Job delete (the preemption). */
static const shape SHAPES[] = {
    {{"s1", "job-succeeds", "Succeeded", {{"create jobs", 1, TL_CRASH_STALE}}, 1, 0}, "", s1_next},
    {{"s2", "job-fails-resets-then-fails", "Failed", {{0}}, 0, 0},
     "\"" SF_AW_ANNOT_PREFIX "retryLimit\":\"1\","
     "\"" SF_AW_ANNOT_PREFIX "failureGracePeriodDuration\":\"0s\","
     "\"" SF_AW_ANNOT_PREFIX "retryPausePeriodDuration\":\"1s\"",
     s2_next},
    {{"s3", "preempt-readmit", "Running", {{"delete jobs", 1, TL_CRASH_COALESCED}}, 1, 0},
     "",
     s3_next},
    {{"s4", "delete-while-running", "gone", {{0}}, 0, 0}, "", s4_next},
};

static int next_pred(void *ud)
{
	run *r = ud;
	/* a live pod LIST for oracle (iv) is answered before the driver acts
	 * again: a pod the next step brings about (a readmission's) must not
	 * be in it */
	if (r->quota.pending > 0)
		return 0;
	r->a = r->s->next(r);
	return r->a != ACT_NONE;
}

static void perform(run *r)
{
	long st = 0;
	const char *what = "";
	switch (r->a) {
	case ACT_ADMIT:
		what = "admit";
		st = tl_aw_req(&r->w, "PATCH", &SF_GVR_APPWRAPPERS, AW, NULL,
		               "{\"spec\":{\"suspend\":false}}");
		r->admits++;
		break;
	case ACT_PREEMPT:
		what = "preempt";
		st = tl_aw_req(&r->w, "PATCH", &SF_GVR_APPWRAPPERS, AW, NULL,
		               "{\"spec\":{\"suspend\":true}}");
		r->preempted = 1;
		break;
	case ACT_DELETE:
		what = "delete";
		st = tl_aw_req(&r->w, "DELETE", &SF_GVR_APPWRAPPERS, AW, NULL, NULL);
		r->deleted = 1;
		break;
	case ACT_RUN:
		add(r->ran, &r->nran, r->pod.uid);
		/* a pod deleted meanwhile (404) is no driver error */
		if ((st = tl_aw_kubelet_try(&r->w, r->pod.name, "Running", 0, NULL)) == 404)
			st = 200;
		what = "kubelet Running";
		break;
	case ACT_SUCCEED:
	case ACT_FAIL:
		add(r->ended, &r->nended, r->pod.uid);
		st =
		    tl_aw_kubelet_try(&r->w, r->pod.name, r->a == ACT_FAIL ? "Failed" : "Succeeded",
		                      r->a == ACT_FAIL ? 1 : 0, r->a == ACT_FAIL ? "boom" : NULL);
		if (st == 404)
			st = 200;
		what = r->a == ACT_FAIL ? "kubelet Failed" : "kubelet Succeeded";
		break;
	default: return;
	}
	if ((st < 200 || st >= 300) && !r->driver_err[0])
		snprintf(r->driver_err, sizeof(r->driver_err), "%s answered %ld", what, st);
}

/* Drives r until its end, or the deadline: 1 at the end, else 0. */
static int drive(run *r, int64_t deadline)
{
	for (;;) {
		long left = (long)((deadline - sf_mono_ns()) / 1000000);
		if (left <= 0 || tl_run_until_fn(&K.loop, next_pred, r, left) != 0)
			return 0;
		if (r->a == ACT_END)
			return 1;
		perform(r);
	}
}

/* ---- oracle (iv): QuotaReserved False only with no pod left ---- */

static void quota_seen(run *r, sf_obj *old, sf_obj *now)
{
	char was[16] = "", is_now[16] = "", reason[32] = "", at[128];
	if (!now)
		return;
	if (old)
		tl_aw_condition(sf_jv_path(sf_obj_root(old), "status.conditions"), "QuotaReserved",
		                was, sizeof(was));
	sf_jv conds = sf_jv_path(sf_obj_root(now), "status.conditions");
	if (tl_aw_condition(conds, "QuotaReserved", is_now, sizeof(is_now)) != 0 ||
	    !is(is_now, "False") || is(was, "False"))
		return;
	for (size_t i = 0; i < sf_jv_len(conds); i++) {
		char path[48];
		snprintf(path, sizeof(path), "[%zu].type", i);
		if (sf_jv_streq(sf_jv_path(conds, path), "QuotaReserved")) {
			snprintf(path, sizeof(path), "[%zu].reason", i);
			sf_jv_str(sf_jv_path(conds, path), reason, sizeof(reason));
		}
	}
	snprintf(at, sizeof(at), "QuotaReserved False (rv %s, %s)", now->rv, reason);
	snprintf(r->quota.note, sizeof(r->quota.note), "(first Job %.8s, admitted %d times)",
	         r->first_job, r->admits);
	tl_crash_quota_list(&r->quota, at);
}

static void on_aw_add(void *ud, sf_obj *o)
{
	quota_seen(ud, NULL, o);
}

static void on_aw_update(void *ud, sf_obj *old, sf_obj *now)
{
	quota_seen(ud, old, now);
}

static tl_ctl *replica(run *r, const char *id, int faults, const char *const *env)
{
	return tl_crash_replica(&K, r->ns, LEASE, id, NULL, faults, env);
}

static void outcome(run *r, char *buf, size_t n)
{
	tl_res res;
	sf_kube_req q = {.method = "GET", .gvr = &SF_GVR_APPWRAPPERS, .ns = r->ns, .name = AW};
	tl_do(&K, &q, &res);
	if (res.http_status == 404)
		snprintf(buf, n, "gone");
	else if (res.http_status == 200) {
		buf[0] = 0;
		sf_jv_str(sf_jv_path(sf_obj_root(res.obj), "status.phase"), buf, n);
		if (!buf[0])
			snprintf(buf, n, "(no phase)");
	} else
		snprintf(buf, n, "(GET answered %ld)", res.http_status);
	tl_res_clear(&res);
}

/* ---- a cell ---- */

/* One lifecycle of shape s: clean (k == 0: one replica, the shipped
 * binary) or with A crashing at its write k and B, with view p, taking
 * over. The audit figures land in *t, the verdict in *c (a clean run's
 * problems fail the test at once: there is nothing to compare with). */
static void run_cell(void *ud, const tl_crash_shape *cs, int k, int p, const tl_crash_tally *clean,
                     tl_crash_tally *t, tl_crash_cell *c)
{
	const shape *s = ud;
	int64_t t0 = sf_mono_ns();
	run r;
	memset(&r, 0, sizeof(r));
	memset(t, 0, sizeof(*t));
	memset(c, 0, sizeof(*c));
	r.s = s;
	char prefix[32], ida[64], idb[64];
	snprintf(prefix, sizeof(prefix), "crash-%s", cs->tag);
	tl_namespace(&K, prefix, r.ns, sizeof(r.ns));
	r.quota.k = &K;
	r.quota.ns = r.ns;
	r.quota.aw = AW;
	tl_aw_watch_start(&r.w, &K, r.ns);
	sf_informer_handler h = {.on_add = on_aw_add, .on_update = on_aw_update};
	cr_assert_eq(sf_informer_add_handler(r.w.aws, &h, &r), 0);
	tl_audit_mark mark;
	tl_audit_mark_now(&mark);

	tl_ctl *a, *b = NULL;
	char crash_env[64];
	const char *aenv[] = {crash_env, NULL};
	if (k == 0) {
		snprintf(ida, sizeof(ida), "%s-clean", cs->tag);
		a = replica(&r, ida, 0, NULL);
	} else {
		snprintf(ida, sizeof(ida), "%s-k%02d%c-A", cs->tag, k, "abc"[p]);
		snprintf(idb, sizeof(idb), "%s-k%02d%c-B", cs->tag, k, "abc"[p]);
		snprintf(crash_env, sizeof(crash_env), "STEADFAST_FAULT_CRASH_AFTER_WRITE=%d", k);
		a = replica(&r, ida, 1, aenv);
	}
	cr_assert_geq(tl_ctl_wait_log(&K.loop, a, "\"msg\":\"reconciling\"", 0, 30000), 0,
	              "%s never led", ida);
	int aport = tl_ctl_port(&K.loop, a, "metrics"), bport = 0;
	if (k) {
		b = replica(&r, idb, 1, TL_CRASH_VIEW_ENV[p]);
		char needle[128];
		snprintf(needle, sizeof(needle), "\"msg\":\"leader observed\",\"leader\":\"%s\"",
		         ida);
		cr_assert_geq(tl_ctl_wait_log(&K.loop, b, needle, 0, 30000), 0,
		              "standby %s never saw %s lead", idb, ida);
		bport = tl_ctl_port(&K.loop, b, "metrics");
	}

	char body[2048];
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"metadata\":{"
	         "\"name\":\"" AW "\",\"annotations\":{%s}},\"spec\":{\"suspend\":false,"
	         "\"components\":[{\"template\":{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\","
	         "\"metadata\":{\"name\":\"" JOB "\"},\"spec\":{\"backoffLimit\":0,\"template\":{"
	         "\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\","
	         "\"image\":\"busybox\"}]}}}}}]}}",
	         s->annotations);
	tl_aw_create(&r.w, body);

	/* drive to the end; then the leader of the moment must be done: its
	 * queue empty (B: after taking over, and after the window in which
	 * its late events arrive), and the end must still hold */
	long cell_s = tl_crash_cell_seconds(CELL_S);
	int64_t deadline = t0 + (int64_t)cell_s * SF_NSEC_PER_SEC;
	const char *stuck = NULL;
	for (;;) {
		if (!drive(&r, deadline)) {
			stuck = "the lifecycle did not end";
			break;
		}
		tl_ctl *leader = a;
		int port = aport;
		if (!tl_ctl_alive(a)) {
			if (!b) {
				stuck = "the only replica died";
				break;
			}
			leader = b;
			port = bport;
			long left = (long)((deadline - sf_mono_ns()) / 1000000);
			if (left <= 0 ||
			    tl_ctl_wait_log(&K.loop, b, "\"msg\":\"reconciling\"", 0, left) < 0) {
				stuck = "B never took over";
				break;
			}
			tl_crash_run_for(&K, TL_CRASH_VIEW_WINDOW_MS[p]);
		}
		int q =
		    tl_crash_wait_quiet(&K, leader, port, tl_aw_cached(&r.w, AW) != NULL, deadline);
		if (q < 0) {
			stuck = "the leader never went quiet";
			break;
		}
		if (q == 0 || (leader == a && !tl_ctl_alive(a)) || !next_pred(&r) || r.a != ACT_END)
			continue;
		break;
	}
	if (stuck) {
		tl_crash_fail(c, "(i) %s within %ld s (phase %s)", stuck, cell_s, phase(&r));
		tl_aw_dump(&r.w, AW);
	}
	if (r.driver_err[0])
		tl_crash_fail(c, "driver: %s", r.driver_err);

	/* what A did: the fault point's line says which write killed it */
	if (k)
		tl_crash_check_replicas(&K, a, b, k, c);
	tl_ctl_stop_all(&K.loop);

	cr_assert_eq(tl_run_until_fn(&K.loop, tl_crash_quota_done, &r.quota, 30000), 0,
	             "live pod LISTs never answered");
	r.quota.closing = 1;
	tl_audit_sync(&K, &mark, r.ns, 30000);
	tl_audit_req *v = NULL;
	size_t n = tl_audit_read(&mark, r.ns, &v);
	tl_crash_tally_audit(v, n, LEASE, ida, k ? idb : NULL, t);
	free(v);
	outcome(&r, t->outcome, sizeof(t->outcome));
	c->a_writes = t->by_a;

	tl_crash_compare(t, clean, c);
	if (r.quota.bad[0])
		tl_crash_fail(c, "(iv) %s", r.quota.bad);
	c->pass = c->fails[0] == 0;
	c->done = 1;

	/* leave nothing behind: the finalizer of an AppWrapper no replica
	 * serves any more would hold the namespace */
	if (tl_aw_cached(&r.w, AW))
		tl_aw_req(&r.w, "PATCH", &SF_GVR_APPWRAPPERS, AW, NULL,
		          "{\"metadata\":{\"finalizers\":null}}");
	tl_aw_watch_stop(&r.w);
	tl_namespace_delete(&K, r.ns);
	c->secs = (double)(sf_mono_ns() - t0) / 1e9;
}

/* ---- the matrix of one lifecycle ---- */

static const char *const TAGS[] = {"s1", "s2", "s3", "s4"};

static const tl_crash_book BOOK = {
    "crash-matrix.md", "crash-matrix-parts",
    "# Crash at every write\n"
    "\n"
    "`test/integration/test_crash.c` (criterion suite `crash`). For each write k of a clean "
    "lifecycle (one replica; W = its acknowledged writes of appwrappers, appwrappers/status, "
    "jobs and pods in the audit log, Events not counted), replica A leads with "
    "`STEADFAST_FAULT_CRASH_AFTER_WRITE=k` and SIGKILLs itself right after the API server "
    "acknowledged its write k; standby B takes over (2 s Leases) with view **a** (its "
    "caches as they are), **b** (stale: `COMPONENT_WATCH_DELAY_MS` and `POD_WATCH_DELAY_MS` "
    "8000) or **c** (coalesced: `WATCH_COALESCE_MS` 3000) and runs the lifecycle to its end.\n"
    "\n"
    "Oracles: (i) the clean run's outcome; (ii) as many Job creates answered 201 as the "
    "clean run (no second incarnation); (iii) as many successful Job DELETEs, pod DELETEs "
    "only where the clean run had them; (iv) QuotaReserved never False while a live LIST "
    "finds a pod of the AppWrapper that is not Succeeded or Failed; (v) no write of A "
    "completed after B's first write, none of either replica received before its Lease "
    "acquisition (audit log).\n"
    "\n"
    "`pass`: every oracle held; `no crash`: the lifecycle ended before A's write k; `·`: not "
    "in this run (`make test` runs a slice: k = 1, the middle write, W and every Job create "
    "and delete with view a, one cell of b and one of c; `make crash-matrix` or "
    "`STEADFAST_CRASH_MATRIX=full` runs every "
    "cell).\n",
    TAGS, sizeof(TAGS) / sizeof(TAGS[0])};

static void matrix(const shape *s)
{
	tl_crash_matrix(&BOOK, &s->c, run_cell, (void *)s);
}

Test(crash, job_succeeds)
{
	matrix(&SHAPES[0]);
}

Test(crash, job_fails_resets_then_fails)
{
	matrix(&SHAPES[1]);
}

Test(crash, preempt_readmit)
{
	matrix(&SHAPES[2]);
}

Test(crash, delete_while_running)
{
	matrix(&SHAPES[3]);
}
