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
 * is played for pod status. Oracle (iv)'s LIST is answered before the
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
#include "tl_ctl.h"

#define AW "crash"
#define JOB AW "-job"
#define LEASE "steadfast-crash"
#define MAX_W 40    /* writes of a clean lifecycle */
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

static long env_long(const char *k, long dflt)
{
	const char *v = getenv(k);
	return v && *v ? atol(v) : dflt;
}

/* ---- the standby's view ---- */

enum { P_NONE, P_STALE, P_COALESCED, NPERT };
static const char *const PERT_NAME[NPERT] = {"a: none", "b: stale", "c: coalesced"};
static const char *const PERT_ENV[NPERT][3] = {
    {NULL},
    {"STEADFAST_FAULT_COMPONENT_WATCH_DELAY_MS=8000", "STEADFAST_FAULT_POD_WATCH_DELAY_MS=8000",
     NULL},
    {"STEADFAST_FAULT_WATCH_COALESCE_MS=3000", NULL},
};
/* After the lifecycle ended under a leader with this view: how long its
 * late events may still arrive (and a wrong step act on them). */
static const long PERT_WINDOW_MS[NPERT] = {0, 9000, 4000};

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
	const char *tag;         /* "s1", in names */
	const char *id;          /* "job-succeeds" */
	const char *annotations; /* members of metadata.annotations */
	const char *outcome;     /* the clean run's: a phase, or "gone" */
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
	/* oracle (iv) */
	int lists_pending, closing;
	char quota_bad[512];
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

static const shape SHAPES[] = {
    {"s1", "job-succeeds", "", "Succeeded", s1_next},
    {"s2", "job-fails-resets-then-fails",
     "\"" SF_AW_ANNOT_PREFIX "retryLimit\":\"1\","
     "\"" SF_AW_ANNOT_PREFIX "failureGracePeriodDuration\":\"0s\","
     "\"" SF_AW_ANNOT_PREFIX "retryPausePeriodDuration\":\"1s\"",
     "Failed", s2_next},
    {"s3", "preempt-readmit", "", "Running", s3_next},
    {"s4", "delete-while-running", "", "gone", s4_next},
};

static int next_pred(void *ud)
{
	run *r = ud;
	/* a live pod LIST for oracle (iv) is answered before the driver acts
	 * again: a pod the next step brings about (a readmission's) must not
	 * be in it */
	if (r->lists_pending > 0)
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

typedef struct qlist {
	run *r;
	char at[128]; /* the AppWrapper's resourceVersion, the condition's reason, when */
	sf_buf bad;
} qlist;

static int qlist_item(void *ud, sf_obj *item)
{
	qlist *q = ud;
	char ph[32] = "";
	sf_jv_str(sf_jv_path(sf_obj_root(item), "status.phase"), ph, sizeof(ph));
	if (!is(ph, "Succeeded") && !is(ph, "Failed")) {
		char one[400], owner[64] = "", made[32] = "", del[32] = "";
		sf_jv root = sf_obj_root(item);
		sf_jv_str(sf_jv_path(root, "metadata.ownerReferences[0].uid"), owner,
		          sizeof(owner));
		sf_jv_str(sf_jv_path(root, "metadata.creationTimestamp"), made, sizeof(made));
		sf_jv_str(sf_jv_path(root, "metadata.deletionTimestamp"), del, sizeof(del));
		snprintf(one, sizeof(one), "%s%s (%s, Job %.8s, created %s%s%s)",
		         q->bad.len ? ", " : "", item->name, ph[0] ? ph : "no phase", owner, made,
		         del[0] ? ", deleted " : "", del);
		sf_buf_append(&q->bad, one, strlen(one));
	}
	sf_obj_unref(item);
	return 0;
}

static void qlist_done(void *ud, const sf_kube_result *res)
{
	qlist *q = ud;
	run *r = q->r;
	r->lists_pending--;
	if (!r->quota_bad[0]) {
		if (!sf_kube_ok(res))
			snprintf(r->quota_bad, sizeof(r->quota_bad),
			         "the live pod LIST at QuotaReserved False (%s) answered %ld",
			         q->at, res->http_status);
		else if (q->bad.len)
			snprintf(
			    r->quota_bad, sizeof(r->quota_bad),
			    "QuotaReserved False (%s) while pods remained: %.*s (first Job %.8s, "
			    "admitted %d times)",
			    q->at, (int)q->bad.len, q->bad.data, r->first_job, r->admits);
	}
	sf_buf_free(&q->bad);
	free(q);
}

static void quota_seen(run *r, sf_obj *old, sf_obj *now)
{
	char was[16] = "", is_now[16] = "", reason[32] = "";
	if (r->closing || !now)
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
	qlist *q = calloc(1, sizeof(*q));
	cr_assert(q);
	q->r = r;
	char ts[40];
	sf_time_rfc3339(sf_wall_ns(), ts, sizeof(ts));
	snprintf(q->at, sizeof(q->at), "rv %s, %s, seen %s", now->rv, reason, ts);
	sf_buf_init(&q->bad, 0);
	sf_kube_list_opts lo = {.label_selector = SF_AW_LABEL "=" AW};
	if (sf_kube_list(K.client, &SF_GVR_PODS, r->ns, &lo, qlist_item, qlist_done, q, NULL) == 0)
		r->lists_pending++;
	else {
		sf_buf_free(&q->bad);
		free(q);
		snprintf(r->quota_bad, sizeof(r->quota_bad), "could not send a live pod LIST");
	}
}

static void on_aw_add(void *ud, sf_obj *o)
{
	quota_seen(ud, NULL, o);
}

static void on_aw_update(void *ud, sf_obj *old, sf_obj *now)
{
	quota_seen(ud, old, now);
}

static int lists_done(void *ud)
{
	return ((run *)ud)->lists_pending == 0;
}

/* ---- replicas ---- */

static tl_ctl *replica(run *r, const char *id, int faults, const char *const *env)
{
	tl_ctl_opts o = {.ns = r->ns,
	                 .lease = LEASE,
	                 .id = id,
	                 .lease_ms = 2000,
	                 .renew_ms = 1400,
	                 .retry_ms = 200,
	                 .env = env,
	                 .faults = faults};
	return tl_ctl_start(&K.loop, &o);
}

/* The sum of the samples of series `name` (every label set) in a /metrics
 * body, or -1 when there is none. */
static double metric_sum(const char *body, const char *name)
{
	double sum = -1;
	size_t nl = strlen(name);
	for (const char *l = body; l && *l;) {
		if (strncmp(l, name, nl) == 0 && (l[nl] == '{' || l[nl] == ' ')) {
			const char *sp = strchr(l, ' ');
			const char *eol = strchr(l, '\n');
			if (sp && (!eol || sp < eol))
				sum = (sum < 0 ? 0 : sum) + strtod(sp + 1, NULL);
		}
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return sum;
}

static int never(void *ud)
{
	(void)ud;
	return 0;
}

static void run_for(long ms)
{
	if (ms > 0)
		tl_run_until_fn(&K.loop, never, NULL, ms);
}

/* Polls the leader's /metrics (nothing reports it; 200 ms pacing) until
 * its queue is empty and nothing is being reconciled, twice in a row, and
 * (need_reconcile) it has reconciled at least once: 1; 0 when it died
 * meanwhile; -1 at the deadline. */
static int wait_quiet(tl_ctl *c, int port, int need_reconcile, int64_t deadline)
{
	int quiet = 0;
	while (sf_mono_ns() < deadline) {
		if (!tl_ctl_alive(c))
			return 0;
		sf_buf b;
		sf_buf_init(&b, 0);
		long st = tl_ctl_http_try(port, "/metrics", &b);
		int q = 0;
		if (st == 200 && b.data)
			q = metric_sum(b.data, "workqueue_depth") == 0 &&
			    metric_sum(b.data, "controller_runtime_active_workers") == 0 &&
			    (!need_reconcile ||
			     metric_sum(b.data, "controller_runtime_reconcile_total") > 0);
		sf_buf_free(&b);
		quiet = q ? quiet + 1 : 0;
		if (quiet >= 2)
			return 1;
		run_for(200);
	}
	return -1;
}

/* ---- what a run leaves: the audit log and the outcome ---- */

typedef struct tally {
	int writes; /* counted as the fault point counts them */
	char seq[MAX_W][48];
	int job_creates, job_deletes, pod_deletes;
	int by_a, by_b; /* counted writes of each replica */
	long long b_acquired, b_first,
	    a_last; /* B's Lease acquisition, first write; A's last write */
	char lead_bad[512];
	char outcome[32];
} tally;

static int counted(const tl_audit_req *e)
{
	return e->who[0] && tl_audit_is_write(e) &&
	       (is(e->resource, "appwrappers") || is(e->resource, "jobs") ||
	        is(e->resource, "pods"));
}

static int lease_write(const tl_audit_req *e)
{
	return tl_audit_is_write(e) && is(e->resource, "leases") && is(e->name, LEASE);
}

static void fmt_us(long long us, char *buf, size_t n)
{
	time_t s = (time_t)(us / 1000000);
	struct tm tm;
	gmtime_r(&s, &tm);
	snprintf(buf, n, "%02d:%02d:%02d.%06lld", tm.tm_hour, tm.tm_min, tm.tm_sec, us % 1000000);
}

/* Oracle (v) for replica `id`: none of its writes was received before its
 * first acknowledged Lease write. */
static void check_acquired(const tl_audit_req *v, size_t n, const char *id, tally *t)
{
	const tl_audit_req *acq = NULL;
	for (size_t i = 0; i < n && !acq; i++)
		if (is(v[i].who, id) && lease_write(&v[i]))
			acq = &v[i];
	for (size_t i = 0; i < n && !t->lead_bad[0]; i++) {
		if (!is(v[i].who, id) || !tl_audit_is_write(&v[i]) || is(v[i].resource, "leases"))
			continue;
		char a[32], b[32] = "never";
		fmt_us(v[i].recv_us, a, sizeof(a));
		if (acq)
			fmt_us(acq->done_us, b, sizeof(b));
		if (!acq || v[i].recv_us < acq->done_us)
			snprintf(
			    t->lead_bad, sizeof(t->lead_bad),
			    "%s's %s %s%s%s %s received at %s, before it acquired the Lease (%s)",
			    id, v[i].verb, v[i].resource, v[i].sub[0] ? "/" : "", v[i].sub,
			    v[i].name, a, b);
	}
}

static void tally_audit(const tl_audit_req *v, size_t n, const char *a, const char *b, tally *t)
{
	long long first_b = 0;
	for (size_t i = 0; i < n; i++) {
		const tl_audit_req *e = &v[i];
		if (b && is(e->who, b) && tl_audit_is_write(e) && !is(e->resource, "leases") &&
		    (!first_b || e->recv_us < first_b))
			first_b = e->recv_us;
		if (!counted(e))
			continue;
		if (t->writes < MAX_W)
			snprintf(t->seq[t->writes], sizeof(t->seq[0]), "%s %s%s%s", e->verb,
			         e->resource, e->sub[0] ? "/" : "", e->sub);
		t->writes++;
		t->by_a += is(e->who, a);
		t->by_b += b && is(e->who, b);
		if (is(e->resource, "jobs") && is(e->verb, "create"))
			t->job_creates++;
		if (is(e->resource, "jobs") && is(e->verb, "delete"))
			t->job_deletes++;
		if (is(e->resource, "pods") && is(e->verb, "delete"))
			t->pod_deletes++;
	}
	t->b_first = first_b;
	for (size_t i = 0; i < n; i++) {
		if (b && is(v[i].who, b) && lease_write(&v[i]) && !t->b_acquired)
			t->b_acquired = v[i].done_us;
		if (is(v[i].who, a) && tl_audit_is_write(&v[i]) && !is(v[i].resource, "leases") &&
		    v[i].done_us > t->a_last)
			t->a_last = v[i].done_us;
	}
	check_acquired(v, n, a, t);
	if (b)
		check_acquired(v, n, b, t);
	for (size_t i = 0; first_b && i < n && !t->lead_bad[0]; i++) {
		const tl_audit_req *e = &v[i];
		if (!is(e->who, a) || !tl_audit_is_write(e) || e->done_us <= first_b)
			continue;
		char x[32], y[32];
		fmt_us(e->done_us, x, sizeof(x));
		fmt_us(first_b, y, sizeof(y));
		snprintf(t->lead_bad, sizeof(t->lead_bad),
		         "%s's %s %s%s%s %s completed at %s, after %s's first write (%s)", a,
		         e->verb, e->resource, e->sub[0] ? "/" : "", e->sub, e->name, x, b, y);
	}
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

typedef struct cell {
	int done;
	int pass;
	int crashed;      /* A killed itself at its write k */
	char what[24];    /* which write that was, from A's log */
	int a_writes;     /* A's counted writes (when it never crashed) */
	char fails[1024]; /* "(ii) ...; (v) ..." */
	double secs;
} cell;

static void fail_add(cell *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_add(cell *c, const char *fmt, ...)
{
	size_t l = strlen(c->fails);
	if (l && l + 2 < sizeof(c->fails)) {
		memcpy(c->fails + l, "; ", 3);
		l += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->fails + l, sizeof(c->fails) - l, fmt, ap);
	va_end(ap);
}

/* One lifecycle of shape s: clean (k == 0: one replica, the shipped
 * binary) or with A crashing at its write k and B, with view p, taking
 * over. The audit figures land in *t, the verdict in *c (a clean run's
 * problems fail the test at once: there is nothing to compare with). */
static void run_cell(const shape *s, int k, int p, const tally *clean, tally *t, cell *c)
{
	int64_t t0 = sf_mono_ns();
	run r;
	memset(&r, 0, sizeof(r));
	memset(t, 0, sizeof(*t));
	memset(c, 0, sizeof(*c));
	r.s = s;
	char prefix[32], ida[64], idb[64];
	snprintf(prefix, sizeof(prefix), "crash-%s", s->tag);
	tl_namespace(&K, prefix, r.ns, sizeof(r.ns));
	tl_aw_watch_start(&r.w, &K, r.ns);
	sf_informer_handler h = {.on_add = on_aw_add, .on_update = on_aw_update};
	cr_assert_eq(sf_informer_add_handler(r.w.aws, &h, &r), 0);
	tl_audit_mark mark;
	tl_audit_mark_now(&mark);

	tl_ctl *a, *b = NULL;
	char crash_env[64];
	const char *aenv[] = {crash_env, NULL};
	if (k == 0) {
		snprintf(ida, sizeof(ida), "%s-clean", s->tag);
		a = replica(&r, ida, 0, NULL);
	} else {
		snprintf(ida, sizeof(ida), "%s-k%02d%c-A", s->tag, k, "abc"[p]);
		snprintf(idb, sizeof(idb), "%s-k%02d%c-B", s->tag, k, "abc"[p]);
		snprintf(crash_env, sizeof(crash_env), "STEADFAST_FAULT_CRASH_AFTER_WRITE=%d", k);
		a = replica(&r, ida, 1, aenv);
	}
	cr_assert_geq(tl_ctl_wait_log(&K.loop, a, "\"msg\":\"reconciling\"", 0, 30000), 0,
	              "%s never led", ida);
	int aport = tl_ctl_port(&K.loop, a, "metrics"), bport = 0;
	if (k) {
		b = replica(&r, idb, 1, PERT_ENV[p]);
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
	long cell_s = env_long("STEADFAST_CRASH_CELL_SECONDS", CELL_S);
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
			run_for(PERT_WINDOW_MS[p]);
		}
		int q = wait_quiet(leader, port, tl_aw_cached(&r.w, AW) != NULL, deadline);
		if (q < 0) {
			stuck = "the leader never went quiet";
			break;
		}
		if (q == 0 || (leader == a && !tl_ctl_alive(a)) || !next_pred(&r) || r.a != ACT_END)
			continue;
		break;
	}
	if (stuck) {
		fail_add(c, "(i) %s within %ld s (phase %s)", stuck, cell_s, phase(&r));
		tl_aw_dump(&r.w, AW);
	}
	if (r.driver_err[0])
		fail_add(c, "driver: %s", r.driver_err);

	/* what A did: the fault point's line says which write killed it */
	if (k) {
		long at = tl_ctl_wait_log(&K.loop, a, "fault injection: killing the process", 0, 0);
		c->crashed = at >= 0;
		if (c->crashed) {
			const char *line = tl_ctl_line(a, (size_t)at);
			const char *w = strstr(line, "\"what\":\"");
			char want[32];
			snprintf(want, sizeof(want), "\"write\":\"%d\"", k);
			if (w)
				sscanf(w + 8, "%23[^\"]", c->what);
			if (!strstr(line, want))
				fail_add(c, "A was killed at another write than %d: %s", k, line);
		} else if (!tl_ctl_alive(a)) {
			fail_add(c, "A died without the fault point");
			tl_ctl_dump(a, 20);
		}
		if (!tl_ctl_alive(b)) {
			fail_add(c, "B died");
			tl_ctl_dump(b, 20);
		}
	}
	tl_ctl_stop_all(&K.loop);

	cr_assert_eq(tl_run_until_fn(&K.loop, lists_done, &r, 30000), 0,
	             "live pod LISTs never answered");
	r.closing = 1;
	tl_audit_sync(&K, &mark, r.ns, 30000);
	tl_audit_req *v = NULL;
	size_t n = tl_audit_read(&mark, r.ns, &v);
	tally_audit(v, n, ida, k ? idb : NULL, t);
	free(v);
	outcome(&r, t->outcome, sizeof(t->outcome));
	c->a_writes = t->by_a;

	if (clean) {
		if (!is(t->outcome, clean->outcome))
			fail_add(c, "(i) outcome %s, clean run %s", t->outcome, clean->outcome);
		if (t->job_creates != clean->job_creates)
			fail_add(c, "(ii) %d Job creates, clean run %d", t->job_creates,
			         clean->job_creates);
		if (t->job_deletes != clean->job_deletes)
			fail_add(c, "(iii) %d Job deletes, clean run %d", t->job_deletes,
			         clean->job_deletes);
		if (t->pod_deletes > clean->pod_deletes)
			fail_add(c, "(iii) %d pod deletes, clean run %d", t->pod_deletes,
			         clean->pod_deletes);
	}
	if (r.quota_bad[0])
		fail_add(c, "(iv) %s", r.quota_bad);
	if (t->lead_bad[0])
		fail_add(c, "(v) %s", t->lead_bad);
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

static int full_matrix(void)
{
	const char *m = getenv("STEADFAST_CRASH_MATRIX");
	return m && is(m, "full");
}

/* STEADFAST_CRASH_CELLS="s2:18b,s3:10c": only these cells (lifecycle tag,
 * write k, view), to reproduce one; -1 when it is not set, else whether
 * cell (s, k, p) is among them (k = 0: any cell of s). */
static int selected(const shape *s, int k, int p)
{
	const char *v = getenv("STEADFAST_CRASH_CELLS");
	if (!v || !*v)
		return -1;
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", v);
	char *save = NULL;
	for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		char tag[8] = "", view = 0;
		int kk = 0;
		if (sscanf(t, "%7[^:]:%d%c", tag, &kk, &view) == 3 && is(tag, s->tag) &&
		    (k == 0 || (kk == k && view == "abc"[p])))
			return 1;
	}
	return 0;
}

/* $RESULTS, else test-results next to $STEADFAST_BIN (the build
 * directory), created if needed. */
static const char *results_dir(char *buf, size_t n)
{
	const char *res = getenv("RESULTS");
	if (res && *res) {
		snprintf(buf, n, "%s", res);
	} else {
		const char *bin = getenv("STEADFAST_BIN");
		cr_assert(bin && *bin, "STEADFAST_BIN is not set");
		snprintf(buf, n, "%s", bin);
		char *slash = strrchr(buf, '/');
		snprintf(slash ? slash + 1 : buf, n - (size_t)(slash ? slash + 1 - buf : 0),
		         "test-results");
	}
	mkdir(buf, 0755);
	return buf;
}

/* The 1-based index of the clean run's first write `w` (0: none). */
static int first_write(const tally *t, const char *w)
{
	for (int i = 0; i < t->writes && i < MAX_W; i++)
		if (is(t->seq[i], w))
			return i + 1;
	return 0;
}

/* The oracles a failed cell names, "(ii, v)", from its fails text. */
static void tags(const cell *c, char *buf, size_t n)
{
	static const char *const t[] = {"(i) ", "(ii) ",  "(iii) ", "(iv) ",
	                                "(v) ", "driver", "A ",     "B "};
	static const char *const name[] = {"i", "ii", "iii", "iv", "v", "driver", "A", "B"};
	size_t l = 0;
	buf[0] = 0;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const char *f = c->fails;
		int hit = 0;
		while ((f = strstr(f, t[i])) && !hit) {
			hit = f == c->fails || (f >= c->fails + 2 && f[-2] == ';');
			f++;
		}
		if (hit && l + 12 < n)
			l += (size_t)snprintf(buf + l, n - l, "%s%s", l ? ", " : "", name[i]);
	}
}

static const char *MATRIX_HEAD =
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
    "cell).\n";

/* Writes shape s's section and assembles crash-matrix.md from the
 * sections there; prints the section to stderr. */
static void report(const shape *s, const tally *clean, cell (*cells)[NPERT], double secs)
{
	char dir[512], sec[640], path[700], tmp[720];
	results_dir(dir, sizeof(dir));
	snprintf(sec, sizeof(sec), "%s/crash-matrix-parts", dir);
	mkdir(sec, 0755);
	sf_buf b;
	sf_buf_init(&b, 0);
	char line[2048], when[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
	int ran = 0, failed = 0;
	for (int k = 1; k <= clean->writes; k++)
		for (int p = 0; p < NPERT; p++) {
			ran += cells[k][p].done;
			failed += cells[k][p].done && !cells[k][p].pass;
		}
	snprintf(line, sizeof(line),
	         "\n## %s %s\n\n%s, %s: %d cells, %d failed, %.0f s. Clean run: W = %d, outcome "
	         "%s, %d Job create(s), %d Job delete(s), %d pod delete(s).\n\n"
	         "| k | the clean run's write k | %s | %s | %s |\n|---:|---|---|---|---|\n",
	         s->tag, s->id,
	         selected(s, 0, 0) == 1 ? "selected cells"
	         : full_matrix()        ? "full matrix"
	                                : "slice",
	         when, ran, failed, secs, clean->writes, clean->outcome, clean->job_creates,
	         clean->job_deletes, clean->pod_deletes, PERT_NAME[0], PERT_NAME[1], PERT_NAME[2]);
	sf_buf_append(&b, line, strlen(line));
	for (int k = 1; k <= clean->writes; k++) {
		size_t l = (size_t)snprintf(line, sizeof(line), "| %d | %s |", k,
		                            k <= MAX_W ? clean->seq[k - 1] : "?");
		for (int p = 0; p < NPERT; p++) {
			const cell *c = &cells[k][p];
			char t[64];
			if (!c->done)
				l += (size_t)snprintf(line + l, sizeof(line) - l, " · |");
			else if (!c->pass) {
				tags(c, t, sizeof(t));
				l += (size_t)snprintf(line + l, sizeof(line) - l,
				                      " **FAIL** (%s) |", t);
			} else if (!c->crashed)
				l += (size_t)snprintf(line + l, sizeof(line) - l,
				                      " pass, no crash (A: %d writes) |",
				                      c->a_writes);
			else
				l += (size_t)snprintf(line + l, sizeof(line) - l, " pass |");
		}
		snprintf(line + l, sizeof(line) - l, "\n");
		sf_buf_append(&b, line, strlen(line));
	}
	if (failed) {
		snprintf(line, sizeof(line), "\nFailed cells:\n\n");
		sf_buf_append(&b, line, strlen(line));
		for (int k = 1; k <= clean->writes; k++)
			for (int p = 0; p < NPERT; p++) {
				const cell *c = &cells[k][p];
				if (!c->done || c->pass)
					continue;
				if (c->crashed)
					snprintf(line, sizeof(line),
					         "- k = %d, %s (A killed right after its write %d, "
					         "a %s): %s\n",
					         k, PERT_NAME[p], k, c->what, c->fails);
				else
					snprintf(line, sizeof(line),
					         "- k = %d, %s (A never reached write %d): %s\n", k,
					         PERT_NAME[p], k, c->fails);
				sf_buf_append(&b, line, strlen(line));
			}
	}
	snprintf(path, sizeof(path), "%s/%s.md", sec, s->tag);
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	FILE *f = fopen(tmp, "w");
	cr_assert(f, "open %s", tmp);
	fwrite(b.data, 1, b.len, f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(rename(tmp, path), 0, "rename %s", tmp);
	fprintf(stderr, "%.*s\n", (int)b.len, b.data);
	sf_buf_free(&b);

	/* (tests of this suite may run in parallel: each writes a whole file
	 * and renames it into place) */
	snprintf(path, sizeof(path), "%s/crash-matrix.md", dir);
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	cr_assert(f, "open %s", tmp);
	fputs(MATRIX_HEAD, f);
	for (size_t i = 0; i < sizeof(SHAPES) / sizeof(SHAPES[0]); i++) {
		char one[700];
		snprintf(one, sizeof(one), "%s/%s.md", sec, SHAPES[i].tag);
		FILE *in = fopen(one, "r");
		if (!in)
			continue;
		char buf[4096];
		size_t got;
		while ((got = fread(buf, 1, sizeof(buf), in)) > 0)
			fwrite(buf, 1, got, f);
		fclose(in);
	}
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(rename(tmp, path), 0, "rename %s", tmp);
}

static cell CELLS[MAX_W + 1][NPERT];

static void matrix(const shape *s)
{
	int64_t t0 = sf_mono_ns();
	if (selected(s, 0, 0) == 0)
		return; /* STEADFAST_CRASH_CELLS names none of this lifecycle's */
	tally clean, t;
	cell cc;
	run_cell(s, 0, P_NONE, NULL, &clean, &cc);
	cr_assert(cc.pass, "%s: the clean run failed: %s", s->id, cc.fails);
	cr_assert_str_eq(clean.outcome, s->outcome, "%s: the clean run ended %s", s->id,
	                 clean.outcome);
	int w = clean.writes;
	cr_assert(w > 0 && w <= MAX_W, "%s: %d writes in the clean run", s->id, w);
	fprintf(stderr, "crash %s: clean run: %d writes (", s->id, w);
	for (int i = 0; i < w; i++)
		fprintf(stderr, "%s%s", i ? ", " : "", clean.seq[i]);
	fprintf(stderr, "), outcome %s, %.1f s\n", clean.outcome, cc.secs);

	int plan[MAX_W + 1][NPERT];
	memset(plan, 0, sizeof(plan));
	memset(CELLS, 0, sizeof(CELLS));
	for (int k = 1; k <= w; k++)
		for (int p = 0; p < NPERT; p++)
			plan[k][p] = full_matrix();
	plan[1][P_NONE] = plan[(w + 1) / 2][P_NONE] = plan[w][P_NONE] = 1;
	for (int k = 1; k <= w; k++) /* and every write of a component */
		if (is(clean.seq[k - 1], "create jobs") || is(clean.seq[k - 1], "delete jobs"))
			plan[k][P_NONE] = 1;
	if (is(s->tag, "s1")) { /* A dies right after creating the Job */
		int k = first_write(&clean, "create jobs");
		plan[k ? k : (w + 1) / 2][P_STALE] = 1;
	}
	if (is(s->tag, "s3")) { /* A dies right after deleting it (preemption) */
		int k = first_write(&clean, "delete jobs");
		plan[k ? k : (w + 1) / 2][P_COALESCED] = 1;
	}
	if (selected(s, 0, 0) == 1)
		for (int k = 1; k <= w; k++)
			for (int p = 0; p < NPERT; p++)
				plan[k][p] = selected(s, k, p) == 1;
	sf_buf fails;
	sf_buf_init(&fails, 0);
	int nfail = 0;
	for (int k = 1; k <= w; k++)
		for (int p = 0; p < NPERT; p++) {
			if (!plan[k][p])
				continue;
			cell *c = &CELLS[k][p];
			run_cell(s, k, p, &clean, &t, c);
			fprintf(
			    stderr,
			    "crash %s: k = %d (%s), %s: %s%s%s (%.1f s; writes A %d, B %d; Job "
			    "creates %d, deletes %d; B's first write %.0f ms after it acquired, "
			    "%.0f ms after A's last)\n",
			    s->id, k, clean.seq[k - 1], PERT_NAME[p],
			    c->pass ? "pass" : "FAIL: ", c->pass ? "" : c->fails,
			    c->crashed ? "" : ", no crash", c->secs, t.by_a, t.by_b, t.job_creates,
			    t.job_deletes,
			    t.b_first && t.b_acquired ? (double)(t.b_first - t.b_acquired) / 1e3
			                              : -1.0,
			    t.b_first && t.a_last ? (double)(t.b_first - t.a_last) / 1e3 : -1.0);
			if (!c->pass) {
				char one[1200];
				snprintf(one, sizeof(one), "%s%s k=%d %s: %s", nfail ? "\n" : "",
				         s->id, k, PERT_NAME[p], c->fails);
				sf_buf_append(&fails, one, strlen(one));
				nfail++;
			}
		}
	report(s, &clean, CELLS, (double)(sf_mono_ns() - t0) / 1e9);
	if (nfail)
		cr_assert_fail("%d crash cell(s) failed:\n%.*s", nfail, (int)fails.len, fails.data);
	sf_buf_free(&fails);
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
