/*
 * test_kueue_crash.c - a crash at every write (test_crash.c's matrix,
 * tl_crash.h) for the lifecycles Kueue takes part in, with the real Kueue,
 * kube-scheduler and kwok nodes of the kueue suite (test_kueue.c): nothing
 * here plays Kueue or the kubelet. Kueue's webhook suspends the
 * AppWrapper at its create, Kueue admits it against the quota of a
 * ClusterQueue of 1 cpu, kube-controller-manager makes the Job's pod, the
 * scheduler binds it to a kwok node and kwok runs it.
 *
 *   k1 job-succeeds: admitted by Kueue, its pod (1 cpu, 3 s on a kwok
 *      node) Succeeded: the AppWrapper Succeeded, its Workload Finished;
 *   k2 preempt-readmit: admitted at WorkloadPriorityClass "low", its pod
 *      Running (1 h) and PodsReady; the test then creates a plain batch/v1
 *      Job of 1 cpu at priority "high" in the same LocalQueue (Kueue's
 *      batch/job integration makes its Workload). Kueue preempts the
 *      AppWrapper (its Workload Evicted, reason Preempted; Kueue sets
 *      spec.suspend), Steadfast deletes its Job and, once the pods are
 *      gone, sets QuotaReserved False; Kueue then releases the
 *      Workload's quota, admits the preemptor, which runs 2 s on kwok and
 *      finishes, and admits the AppWrapper again: Running with a pod of a
 *      new Job Running, its Workload Admitted, evicted once.
 *
 * The preemptor is a Job rather than an AppWrapper so that every counted
 * write of the replicas is one of the lifecycle's AppWrapper: the clean
 * run's write k is the same write in every cell.
 *
 * Oracles (test_crash.c's, per cell, against the clean run): (i) the
 * outcome: phase, the Workload's state and its evictions; (ii) as many
 * Job creates answered 201; (iii) as many Job deletes, pod deletes only
 * where the clean run had them; (iv) a live LIST of the AppWrapper's pods
 * at every moment its quota is seen released, from either side - its
 * QuotaReserved turning False, or Kueue releasing the Workload's quota
 * (status.admission removed, QuotaReserved no longer True, or Finished) -
 * finds none that is not Succeeded or Failed; (v) no write of A completed
 * after B's first write, none of either received before its Lease
 * acquisition.
 *
 * `make test` runs a slice (about 2 minutes): k1 with A dying at write 1
 * (view a) and right after its Job create (view b, stale); k2 with A
 * dying right after its Job delete (the preemption, view c, coalesced)
 * and right after the second Job create (the readmission, view a).
 * STEADFAST_CRASH_MATRIX=full (make crash-matrix-kueue) runs every k with
 * every view and writes crash-matrix-kueue.md; STEADFAST_CRASH_CELLS
 * ("k2:7c") and STEADFAST_CRASH_CELL_SECONDS as in test_crash.c.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awapi.h"
#include "steadfast/awphase.h"
#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/json.h"
#include "steadfast/time.h"
#include "kueue_suite.h"
#include "tl.h"
#include "tl_audit.h"
#include "tl_aw.h"
#include "tl_crash.h"
#include "tl_ctl.h"
#include "tl_kueue.h"

#define AW "kcrash"
#define BOSS "boss"
#define LEASE "steadfast-kcrash"
#define CELL_S 240L

static const sf_gvr GVR_WORKLOADS = {"kueue.x-k8s.io", "v1beta2", "workloads", 1};
static const sf_gvr GVR_CLUSTERQUEUES = {"kueue.x-k8s.io", "v1beta2", "clusterqueues", 0};

static int is(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

typedef enum { ACT_NONE, ACT_BOSS, ACT_END } act;

typedef struct run run;

typedef struct kshape {
	tl_crash_shape c;
	const char *priority; /* the AppWrapper's WorkloadPriorityClass suffix, or NULL */
	const char *run_for;  /* its pod's time on kwok */
	/* oracle (iv)'s checks a run that ends must have made: the quota seen
	 * released by the AppWrapper (QuotaReserved True turning False) and by
	 * Kueue (the Workload's) */
	int aw_drops, wl_releases;
	act (*next)(run *r);
} kshape;

struct run {
	const kshape *s;
	tl_kube *k;
	char ns[64];
	tl_aw_watch w;
	sf_informer *wls;
	int boss_made;
	char first_job[64]; /* UID of the first Job of the AppWrapper seen */
	/* the Workload of the AppWrapper, change by change */
	int held;        /* holds quota now */
	int wl_releases; /* ... and no more, seen */
	int aw_drops;    /* the AppWrapper's QuotaReserved True turning False, seen */
	int evictions;   /* Evicted seen turning True */
	char evicted_by[64];
	tl_crash_quota quota;
	char driver_err[256];
	act a;
};

/* ---- what the watches show ---- */

static const char *phase(run *r)
{
	static char buf[32];
	buf[0] = 0;
	sf_obj *o = tl_aw_cached(&r->w, AW);
	if (o)
		sf_jv_str(sf_jv_path(sf_obj_root(o), "status.phase"), buf, sizeof(buf));
	return buf;
}

static int cond_is(run *r, const char *type, const char *status)
{
	return is(tl_aw_cond(&r->w, AW, type, NULL, NULL), status);
}

static int is_ours(sf_obj *wl)
{
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(sf_obj_root(wl), "metadata.ownerReferences"));
	sf_jv ref;
	while (sf_jv_next(&it, NULL, &ref))
		if (sf_jv_streq(sf_jv_get(ref, "kind"), "AppWrapper") &&
		    sf_jv_streq(sf_jv_get(ref, "name"), AW))
			return 1;
	return 0;
}

typedef struct wl_find {
	sf_obj *found;
} wl_find;

static int wl_visit(void *ud, sf_obj *o)
{
	if (!is_ours(o))
		return 0;
	((wl_find *)ud)->found = o;
	return 1;
}

/* The AppWrapper's Workload in the test's cache (borrowed), or NULL. */
static sf_obj *workload(run *r)
{
	wl_find f = {NULL};
	sf_store_each(sf_informer_store(r->wls), wl_visit, &f);
	return f.found;
}

static const char *wl_cond(sf_obj *wl, const char *type, char *buf, size_t n)
{
	buf[0] = 0;
	if (wl)
		tl_aw_condition(sf_jv_path(sf_obj_root(wl), "status.conditions"), type, buf, n);
	return buf;
}

/* Whether Workload wl holds quota: admitted (status.admission),
 * QuotaReserved True, not Finished. */
static int holds(sf_obj *wl)
{
	char q[16], f[16];
	return wl && sf_jv_ok(sf_jv_path(sf_obj_root(wl), "status.admission")) &&
	       is(wl_cond(wl, "QuotaReserved", q, sizeof(q)), "True") &&
	       !is(wl_cond(wl, "Finished", f, sizeof(f)), "True");
}

/* A change of the AppWrapper's Workload: oracle (iv) where Kueue releases
 * its quota; evictions counted. */
static void wl_seen(run *r, sf_obj *old, sf_obj *now)
{
	if (!now || !is_ours(now))
		return;
	char e_was[16] = "", e_now[16] = "";
	wl_cond(old, "Evicted", e_was, sizeof(e_was));
	wl_cond(now, "Evicted", e_now, sizeof(e_now));
	if (is(e_now, "True") && !is(e_was, "True")) {
		r->evictions++;
		sf_jv_iter it = sf_jv_iter_init(sf_jv_path(sf_obj_root(now), "status.conditions"));
		sf_jv c;
		while (sf_jv_next(&it, NULL, &c))
			if (sf_jv_streq(sf_jv_get(c, "type"), "Evicted"))
				sf_jv_str(sf_jv_get(c, "reason"), r->evicted_by,
				          sizeof(r->evicted_by));
	}
	int h = holds(now);
	if (r->held && !h) {
		r->wl_releases++;
		char at[160];
		snprintf(at, sizeof(at), "the Workload's quota released (rv %s)", now->rv);
		snprintf(r->quota.note, sizeof(r->quota.note), "(first Job %.8s, %d evictions)",
		         r->first_job, r->evictions);
		tl_crash_quota_list(&r->quota, at);
	}
	r->held = h;
}

static void on_wl_add(void *ud, sf_obj *o)
{
	wl_seen(ud, NULL, o);
}

static void on_wl_update(void *ud, sf_obj *old, sf_obj *o)
{
	wl_seen(ud, old, o);
}

/* A change of the AppWrapper: oracle (iv) where its QuotaReserved turns
 * False. */
static void aw_seen(run *r, sf_obj *old, sf_obj *now)
{
	char was[16] = "", is_now[16] = "";
	if (!now || !is(now->name, AW))
		return;
	if (old)
		tl_aw_condition(sf_jv_path(sf_obj_root(old), "status.conditions"), "QuotaReserved",
		                was, sizeof(was));
	if (tl_aw_condition(sf_jv_path(sf_obj_root(now), "status.conditions"), "QuotaReserved",
	                    is_now, sizeof(is_now)) != 0 ||
	    !is(is_now, "False") || is(was, "False"))
		return;
	r->aw_drops += is(was, "True");
	char at[160];
	snprintf(at, sizeof(at), "QuotaReserved False (rv %s)", now->rv);
	snprintf(r->quota.note, sizeof(r->quota.note), "(first Job %.8s, %d evictions)",
	         r->first_job, r->evictions);
	tl_crash_quota_list(&r->quota, at);
}

static void on_aw_add(void *ud, sf_obj *o)
{
	aw_seen(ud, NULL, o);
}

static void on_aw_update(void *ud, sf_obj *old, sf_obj *o)
{
	aw_seen(ud, old, o);
}

static void note_job(run *r)
{
	char job[96];
	snprintf(job, sizeof(job), "%s-job", AW);
	sf_obj *j = sf_store_get_ns(sf_informer_store(r->w.jobs), r->ns, job);
	if (j && !r->first_job[0])
		snprintf(r->first_job, sizeof(r->first_job), "%s", j->uid);
}

typedef struct running_pod {
	const char *not_owner; /* a pod of another Job than this one ("" any) */
	int found;
} running_pod;

static int running_visit(void *ud, sf_obj *o)
{
	running_pod *p = ud;
	sf_jv root = sf_obj_root(o);
	char owner[64] = "";
	sf_jv_str(sf_jv_path(root, "metadata.ownerReferences[0].uid"), owner, sizeof(owner));
	if (!sf_jv_streq(sf_jv_get(sf_jv_path(root, "metadata.labels"), SF_AW_LABEL), AW) ||
	    sf_jv_ok(sf_jv_path(root, "metadata.deletionTimestamp")) ||
	    !sf_jv_streq(sf_jv_path(root, "status.phase"), "Running") ||
	    (p->not_owner[0] && is(owner, p->not_owner)))
		return 0;
	p->found = 1;
	return 1;
}

/* Whether a live pod of the AppWrapper is Running (of a Job other than
 * the first one when new_job). */
static int pod_running(run *r, int new_job)
{
	if (new_job && !r->first_job[0])
		return 0;
	running_pod p = {new_job ? r->first_job : "", 0};
	sf_store_each(sf_informer_store(r->w.pods), running_visit, &p);
	return p.found;
}

/* ---- the lifecycles ---- */

/* k1: Succeeded, and Kueue's Workload Finished. */
static act k1_next(run *r)
{
	char f[16];
	if (is(phase(r), "Succeeded") && is(wl_cond(workload(r), "Finished", f, sizeof(f)), "True"))
		return ACT_END;
	return ACT_NONE;
}

/* k2: once Running with PodsReady and its pod Running, the preemptor;
 * ends Running again, evicted, readmitted (the Workload holds quota), with
 * a pod of a new Job Running. */
static act k2_next(run *r)
{
	note_job(r);
	const char *ph = phase(r);
	if (r->boss_made && r->evictions > 0 && is(ph, "Running") &&
	    cond_is(r, "PodsReady", "True") && pod_running(r, 1) && holds(workload(r)))
		return ACT_END;
	if (!r->boss_made && is(ph, "Running") && cond_is(r, "PodsReady", "True") &&
	    pod_running(r, 0))
		return ACT_BOSS;
	return ACT_NONE;
}

/* The slice (picks_only): k1 at write 1 (a) and right after its Job
 * create (b); k2 right after its Job delete (c) and its second Job create
 * (a). */
static const kshape SHAPES[] = {
    {{"k1",
      "kueue-job-succeeds",
      "Succeeded, Workload Finished, 0 evictions",
      {{NULL, 1, TL_CRASH_NONE}, {"create jobs", 1, TL_CRASH_STALE}},
      2,
      1},
     NULL,
     "3s",
     0,
     1, /* Finished */
     k1_next},
    {{"k2",
      "kueue-preempt-readmit",
      "Running, Workload Admitted, 1 evictions (Preempted)",
      {{"delete jobs", 1, TL_CRASH_COALESCED}, {"create jobs", 2, TL_CRASH_NONE}},
      2,
      1},
     "low",
     "1h",
     1, /* the preemption */
     1,
     k2_next},
};

static int next_pred(void *ud)
{
	run *r = ud;
	/* a live pod LIST for oracle (iv) is answered before the driver acts
	 * again */
	if (r->quota.pending > 0)
		return 0;
	r->a = r->s->next(r);
	return r->a != ACT_NONE;
}

static void perform(run *r)
{
	if (r->a != ACT_BOSS)
		return;
	char body[2048];
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"" BOSS
	         "\",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"lq\","
	         "\"kueue.x-k8s.io/priority-class\":\"%s-high\"}},\"spec\":{\"suspend\":true,"
	         "\"backoffLimit\":0,\"template\":{\"metadata\":{\"annotations\":{"
	         "\"steadfast.test/kwok-run-for\":\"2s\"}},\"spec\":{\"restartPolicy\":\"Never\","
	         "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"resources\":{"
	         "\"requests\":{\"cpu\":\"1\"}}}]}}}}",
	         kueue_suite_ns());
	long st = tl_aw_req(&r->w, "POST", &SF_GVR_JOBS, NULL, NULL, body);
	r->boss_made = 1;
	if (st != 201 && !r->driver_err[0])
		snprintf(r->driver_err, sizeof(r->driver_err),
		         "create of Job " BOSS " answered %ld", st);
}

/* Drives r until its end, or the deadline: 1 at the end, else 0. */
static int drive(run *r, int64_t deadline)
{
	for (;;) {
		long left = (long)((deadline - sf_mono_ns()) / 1000000);
		if (left <= 0 || tl_run_until_fn(&r->k->loop, next_pred, r, left) != 0)
			return 0;
		if (r->a == ACT_END)
			return 1;
		perform(r);
	}
}

/* ---- a cell ---- */

/* "<phase>, Workload <state>, <n> evictions (<reason>)": the AppWrapper as
 * the API server has it, its Workload as the watch last showed it. */
static void outcome(run *r, char *buf, size_t n)
{
	char ph[32] = "", wl[32], f[16];
	tl_res res;
	sf_kube_req q = {.method = "GET", .gvr = &SF_GVR_APPWRAPPERS, .ns = r->ns, .name = AW};
	tl_do(r->k, &q, &res);
	if (res.http_status == 404)
		snprintf(ph, sizeof(ph), "gone");
	else if (res.http_status == 200) {
		sf_jv_str(sf_jv_path(sf_obj_root(res.obj), "status.phase"), ph, sizeof(ph));
		if (!ph[0])
			snprintf(ph, sizeof(ph), "(no phase)");
	} else
		snprintf(ph, sizeof(ph), "(GET answered %ld)", res.http_status);
	tl_res_clear(&res);
	sf_obj *w = workload(r);
	snprintf(wl, sizeof(wl), "%s",
	         !w                                                 ? "none"
	         : is(wl_cond(w, "Finished", f, sizeof(f)), "True") ? "Finished"
	         : holds(w)                                         ? "Admitted"
	                                                            : "pending");
	if (r->evictions)
		snprintf(buf, n, "%s, Workload %s, %d evictions (%.32s)", ph, wl, r->evictions,
		         r->evicted_by);
	else
		snprintf(buf, n, "%s, Workload %s, 0 evictions", ph, wl);
}

static int wls_synced(void *ud)
{
	return sf_informer_synced(((run *)ud)->wls);
}

static void informer_stopped(void *ud)
{
	*(int *)ud = 1;
}

/* Polls ClusterQueue <suite ns>-cq until it counts no reserving or
 * admitted Workload (the cell before released its quota). */
static void wait_cq_idle(tl_kube *k, long ms)
{
	char cq[96];
	snprintf(cq, sizeof(cq), "%s-cq", kueue_suite_ns());
	for (;; ms -= 200) {
		sf_obj *o = tl_kueue_get(k, &GVR_CLUSTERQUEUES, NULL, cq);
		cr_assert_not_null(o, "ClusterQueue %s absent", cq);
		sf_jv s = sf_jv_path(sf_obj_root(o), "status");
		int64_t admitted = 0, reserving = 0;
		sf_jv_int64(sf_jv_get(s, "admittedWorkloads"), &admitted);
		sf_jv_int64(sf_jv_get(s, "reservingWorkloads"), &reserving);
		if (admitted == 0 && reserving == 0) {
			sf_obj_unref(o);
			return;
		}
		if (ms <= 0)
			cr_assert_fail("ClusterQueue %s still busy: %s", cq, o->json);
		sf_obj_unref(o);
		tl_kueue_pause(k, 200);
	}
}

static void run_cell(void *ud, const tl_crash_shape *cs, int k, int p, const tl_crash_tally *clean,
                     tl_crash_tally *t, tl_crash_cell *c)
{
	const kshape *s = ud;
	tl_kube *K = kueue_suite_kube();
	wait_cq_idle(K, 60000);
	int64_t t0 = sf_mono_ns();
	run r;
	memset(&r, 0, sizeof(r));
	memset(t, 0, sizeof(*t));
	memset(c, 0, sizeof(*c));
	r.s = s;
	r.k = K;
	char prefix[32], ida[64], idb[64], y[512];
	snprintf(prefix, sizeof(prefix), "kcrash-%s", cs->tag);
	tl_namespace(K, prefix, r.ns, sizeof(r.ns));
	r.quota.k = K;
	r.quota.ns = r.ns;
	r.quota.aw = AW;
	snprintf(y, sizeof(y),
	         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: lq\n"
	         "spec:\n  clusterQueue: %s-cq\n",
	         kueue_suite_ns());
	tl_aw_apply_yaml(K, r.ns, y, NULL, NULL);
	tl_aw_watch_start(&r.w, K, r.ns);
	sf_informer_handler h = {.on_add = on_aw_add, .on_update = on_aw_update};
	cr_assert_eq(sf_informer_add_handler(r.w.aws, &h, &r), 0);
	sf_informer_opts o = {.reflector = {.gvr = &GVR_WORKLOADS, .ns = r.ns}};
	cr_assert_eq(sf_informer_new(&K->loop, K->client, &o, &r.wls), 0);
	sf_informer_handler hw = {.on_add = on_wl_add, .on_update = on_wl_update};
	cr_assert_eq(sf_informer_add_handler(r.wls, &hw, &r), 0);
	cr_assert_eq(sf_informer_start(r.wls), 0);
	cr_assert_eq(tl_run_until_fn(&K->loop, wls_synced, &r, 10000), 0, "workloads not synced");
	tl_audit_mark mark;
	tl_audit_mark_now(&mark);

	tl_ctl *a, *b = NULL;
	char crash_env[64];
	const char *aenv[] = {crash_env, NULL};
	const char *cfg = kueue_suite_config();
	if (k == 0) {
		snprintf(ida, sizeof(ida), "%s-clean", cs->tag);
		a = tl_crash_replica(K, r.ns, LEASE, ida, cfg, 0, NULL);
	} else {
		snprintf(ida, sizeof(ida), "%s-k%02d%c-A", cs->tag, k, "abc"[p]);
		snprintf(idb, sizeof(idb), "%s-k%02d%c-B", cs->tag, k, "abc"[p]);
		snprintf(crash_env, sizeof(crash_env), "STEADFAST_FAULT_CRASH_AFTER_WRITE=%d", k);
		a = tl_crash_replica(K, r.ns, LEASE, ida, cfg, 1, aenv);
	}
	cr_assert_geq(tl_ctl_wait_log(&K->loop, a, "\"msg\":\"reconciling\"", 0, 30000), 0,
	              "%s never led", ida);
	int aport = tl_ctl_port(&K->loop, a, "metrics"), bport = 0;
	if (k) {
		b = tl_crash_replica(K, r.ns, LEASE, idb, cfg, 1, TL_CRASH_VIEW_ENV[p]);
		char needle[128];
		snprintf(needle, sizeof(needle), "\"msg\":\"leader observed\",\"leader\":\"%s\"",
		         ida);
		cr_assert_geq(tl_ctl_wait_log(&K->loop, b, needle, 0, 30000), 0,
		              "standby %s never saw %s lead", idb, ida);
		bport = tl_ctl_port(&K->loop, b, "metrics");
	}

	/* spec.suspend left out: Kueue's webhook sets it */
	char body[2048], prio[160] = "";
	if (s->priority)
		snprintf(prio, sizeof(prio), ",\"kueue.x-k8s.io/priority-class\":\"%s-%s\"",
		         kueue_suite_ns(), s->priority);
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"metadata\":{"
	         "\"name\":\"" AW "\",\"labels\":{\"" SF_AW_QUEUE_LABEL "\":\"lq\"%s}},"
	         "\"spec\":{\"components\":[{\"template\":{\"apiVersion\":\"batch/v1\","
	         "\"kind\":\"Job\",\"metadata\":{\"name\":\"" AW "-job\"},\"spec\":{"
	         "\"backoffLimit\":0,\"template\":{\"metadata\":{\"annotations\":{"
	         "\"steadfast.test/kwok-run-for\":\"%s\"}},\"spec\":{\"restartPolicy\":\"Never\","
	         "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"resources\":{"
	         "\"requests\":{\"cpu\":\"1\"}}}]}}}}}]}}",
	         prio, s->run_for);
	tl_aw_create(&r.w, body);

	/* drive to the end; then the leader of the moment must be done (B:
	 * after taking over and the window of its late events), and the end
	 * must still hold */
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
			    tl_ctl_wait_log(&K->loop, b, "\"msg\":\"reconciling\"", 0, left) < 0) {
				stuck = "B never took over";
				break;
			}
			tl_crash_run_for(K, TL_CRASH_VIEW_WINDOW_MS[p]);
		}
		int q = tl_crash_wait_quiet(K, leader, port, 1, deadline);
		if (q < 0) {
			stuck = "the leader never went quiet";
			break;
		}
		if (q == 0 || (leader == a && !tl_ctl_alive(a)) || !next_pred(&r) || r.a != ACT_END)
			continue;
		break;
	}
	if (stuck) {
		sf_obj *wl = workload(&r);
		tl_crash_fail(c, "(i) %s within %ld s (phase %s)", stuck, cell_s, phase(&r));
		tl_aw_dump(&r.w, AW);
		fprintf(stderr, "its Workload: %s\n", wl ? wl->json : "(none)");
	}
	if (r.driver_err[0])
		tl_crash_fail(c, "driver: %s", r.driver_err);
	if (k)
		tl_crash_check_replicas(K, a, b, k, c);
	tl_ctl_stop_all(&K->loop);

	cr_assert_eq(tl_run_until_fn(&K->loop, tl_crash_quota_done, &r.quota, 30000), 0,
	             "live pod LISTs never answered");
	r.quota.closing = 1;
	tl_audit_sync(K, &mark, r.ns, 30000);
	tl_audit_req *v = NULL;
	size_t n = tl_audit_read(&mark, r.ns, &v);
	tl_crash_tally_audit(v, n, LEASE, ida, k ? idb : NULL, t);
	free(v);
	outcome(&r, t->outcome, sizeof(t->outcome));
	c->a_writes = t->by_a;

	tl_crash_compare(t, clean, c);
	if (r.quota.bad[0])
		tl_crash_fail(c, "(iv) %s", r.quota.bad);
	else if (!stuck && (r.aw_drops < s->aw_drops || r.wl_releases < s->wl_releases))
		tl_crash_fail(c,
		              "(iv) the quota seen released %d times by the AppWrapper and %d by "
		              "Kueue, at least %d and %d expected",
		              r.aw_drops, r.wl_releases, s->aw_drops, s->wl_releases);
	c->pass = c->fails[0] == 0;
	c->done = 1;

	/* leave nothing behind: the finalizer of an AppWrapper no replica
	 * serves any more would hold the namespace (and its Workload the
	 * quota the next cell needs) */
	if (tl_aw_cached(&r.w, AW))
		tl_aw_req(&r.w, "PATCH", &SF_GVR_APPWRAPPERS, AW, NULL,
		          "{\"metadata\":{\"finalizers\":null}}");
	int stopped = 0;
	sf_informer_stop(r.wls, informer_stopped, &stopped);
	while (!stopped)
		uv_run(&K->loop, UV_RUN_ONCE);
	sf_informer_free(r.wls);
	tl_aw_watch_stop(&r.w);
	tl_namespace_delete(K, r.ns);
	c->secs = (double)(sf_mono_ns() - t0) / 1e9;
}

/* ---- the matrices ---- */

static const char *const TAGS[] = {"k1", "k2"};

static const tl_crash_book BOOK = {
    "crash-matrix-kueue.md", "crash-matrix-kueue-parts",
    "# Crash at every write, with the real Kueue\n"
    "\n"
    "`test/integration/test_kueue_crash.c` (criterion suite `kueue`, tests `crash_*`), on the "
    "kueue suite's control plane: Kueue admits and preempts, kube-scheduler binds the pods to "
    "kwok nodes, kwok runs them. The cells as in `test_crash.c` (A dies right after its "
    "acknowledged write k, B takes over with view a, b or c); the preemptor of k2 is a "
    "plain Job of a higher WorkloadPriorityClass in the same ClusterQueue (1 cpu of quota).\n"
    "\n"
    "Oracles: (i) the clean run's outcome (phase, the Workload's state, its evictions); "
    "(ii) as many Job creates answered 201; (iii) as many Job DELETEs, pod DELETEs only "
    "where the clean run had them; (iv) a live LIST finds no pod of the AppWrapper that is "
    "not Succeeded or Failed at any moment its quota is seen released: its QuotaReserved "
    "turning False, or Kueue releasing its Workload's (admission removed, QuotaReserved no "
    "longer True, or Finished); (v) no write outside a leadership interval (audit log).\n"
    "\n"
    "`·`: not in this run (`make test` runs a slice of four cells; `make crash-matrix-kueue` "
    "or `STEADFAST_CRASH_MATRIX=full` runs every cell).\n",
    TAGS, sizeof(TAGS) / sizeof(TAGS[0])};

/* The suite's ClusterQueue of 1 cpu (preemption within it of lower
 * priorities), its flavor, and the two WorkloadPriorityClasses; the
 * suite's tear-down deletes them (named after its namespace). */
static void queues(tl_kube *K)
{
	const char *ns = kueue_suite_ns();
	char y[2048], cq[96];
	snprintf(y, sizeof(y),
	         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n"
	         "  name: %s-low\nvalue: 10\n---\n"
	         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n"
	         "  name: %s-high\nvalue: 1000\n---\n"
	         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n"
	         "  name: %s-rf\nspec: {}\n---\n"
	         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n"
	         "  name: %s-cq\nspec:\n  namespaceSelector: {}\n"
	         "  preemption: {withinClusterQueue: LowerPriority}\n  resourceGroups:\n"
	         "  - coveredResources: [cpu, memory]\n    flavors:\n    - name: %s-rf\n"
	         "      resources:\n      - {name: cpu, nominalQuota: 1}\n"
	         "      - {name: memory, nominalQuota: 64Gi}\n",
	         ns, ns, ns, ns, ns);
	tl_aw_apply_yaml(K, ns, y, NULL, NULL);
	snprintf(cq, sizeof(cq), "%s-cq", ns);
	for (long ms = 30000;; ms -= 200) {
		sf_obj *o = tl_kueue_get(K, &GVR_CLUSTERQUEUES, NULL, cq);
		char st[16] = "";
		cr_assert_not_null(o, "ClusterQueue %s absent", cq);
		tl_aw_condition(sf_jv_path(sf_obj_root(o), "status.conditions"), "Active", st,
		                sizeof(st));
		if (is(st, "True")) {
			sf_obj_unref(o);
			return;
		}
		if (ms <= 0)
			cr_assert_fail("ClusterQueue %s not Active in 30 s: %s", cq, o->json);
		sf_obj_unref(o);
		tl_kueue_pause(K, 200);
	}
}

static void kmatrix(const kshape *s)
{
	tl_kube *K = kueue_suite_kube();
	tl_ctl_stop_all(&K->loop); /* the suite's replica: each cell runs its own */
	queues(K);
	tl_crash_matrix(&BOOK, &s->c, run_cell, (void *)s);
}

Test(kueue, crash_job_succeeds, .timeout = 3600)
{
	kmatrix(&SHAPES[0]);
}

Test(kueue, crash_preempt_readmit, .timeout = 3600)
{
	kmatrix(&SHAPES[1]);
}
