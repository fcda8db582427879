/*
 * test_election.c - leader election against a real kube-apiserver.
 *
 * Three electors on one loop elect exactly one leader whose fence alone
 * lets writes through; candidate processes hand over on SIGTERM within
 * milliseconds and fail over on SIGKILL one lease duration after the last
 * renew; a deleted Lease, Leases with missing or odd fields, and missing
 * RBAC are logged and recovered from; a client-go candidate and ours
 * exclude each other and hand over both ways. Durations are short (lease
 * 3 s, renew deadline 2 s, retry 0.5 s) to keep the run fast. Handover
 * figures are printed as "election: ..." lines on stderr.
 *
 * The tests that stop the API server are in test_election_outage.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/election.h"
#include "steadfast/time.h"
#include "elect_proc.h"
#include "tl.h"

#define LEASE_MS 3000
#define RENEW_MS 2000
#define RETRY_MS 500

static tl_kube K;
static char NS[64];

static void setup(void)
{
	srand((unsigned)sf_mono_ns());
	tl_kube_open(&K, NULL, NULL);
	tl_namespace(&K, "it-elect", NS, sizeof(NS));
}

static void teardown(void)
{
	ep_cleanup(&K.loop);
	tl_namespace_delete(&K, NS);
	tl_kube_close(&K);
}

TestSuite(election, .init = setup, .fini = teardown, .timeout = 180);

static ep_opts copts(const char *lease, const char *id)
{
	return (ep_opts){.kind = EP_C,
	                 .ns = NS,
	                 .lease = lease,
	                 .id = id,
	                 .lease_ms = LEASE_MS,
	                 .renew_ms = RENEW_MS,
	                 .retry_ms = RETRY_MS};
}

static void get_lease(const char *name, tl_res *r)
{
	memset(r, 0, sizeof(*r));
	cr_assert_eq(sf_kube_get(K.client, &SF_GVR_LEASES, NS, name, tl_res_cb, r, NULL), 0);
	tl_wait(&K.loop, r, 30000);
}

static void put_lease(const char *name, const char *spec)
{
	char body[1024];
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{"
	         "\"name\":\"%s\"},\"spec\":%s}",
	         name, spec);
	tl_res r = {0};
	cr_assert_eq(sf_kube_create(K.client, &SF_GVR_LEASES, NS, body, tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 201, "create lease %s: %ld %s", name, r.http_status, r.message);
	tl_res_clear(&r);
}

static int file_contains(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[4096];
	int found = 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

static int leaders(ep_proc **ps, size_t n, size_t *who)
{
	int c = 0;
	for (size_t i = 0; i < n; i++)
		if (ep_leading(ps[i])) {
			c++;
			if (who)
				*who = i;
		}
	return c;
}

static void assert_exclusive(ep_proc **ps, size_t n)
{
	char msg[512];
	if (ep_check_exclusive(ps, n, RENEW_MS, msg, sizeof(msg)) != 0) {
		ep_dump(ps, n);
		cr_assert_fail("two leaders: %s", msg);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* ---- three electors in one process ---- */

typedef struct member {
	sf_elect *e;
	sf_kube_client *ctl;
	int active, starts, stops;
	uint64_t term;
	char ready_rv[64];
	int released, release_err;
} member;

static void m_ready(void *ud, sf_elect *e, uint64_t term, const char *rv)
{
	member *m = ud;
	snprintf(m->ready_rv, sizeof(m->ready_rv), "%s", rv);
	sf_elect_ready_done(e, term, 0);
}

static void m_started(void *ud, uint64_t term)
{
	member *m = ud;
	m->active = 1;
	m->starts++;
	m->term = term;
}

static void m_stopped(void *ud, uint64_t term, const char *reason)
{
	member *m = ud;
	(void)term;
	(void)reason;
	m->active = 0;
	m->stops++;
}

static void m_released(void *ud, int err)
{
	member *m = ud;
	m->released = 1;
	m->release_err = err;
}

typedef struct trio {
	member m[3];
	int max_active, max_fence_open;
	int64_t until;
	int exclude; /* member not counted (released), -1 none */
} trio;

static int count_active(trio *t)
{
	int a = 0, f = 0;
	for (int i = 0; i < 3; i++) {
		if (i == t->exclude)
			continue;
		a += t->m[i].active;
		f += sf_elect_fence_open(t->m[i].e);
	}
	if (a > t->max_active)
		t->max_active = a;
	if (f > t->max_fence_open)
		t->max_fence_open = f;
	return a;
}

static int one_active(void *ud)
{
	return count_active(ud) == 1;
}

static int watch_until(void *ud)
{
	trio *t = ud;
	count_active(t);
	return sf_mono_ns() >= t->until;
}

static void on_flag(void *ud)
{
	*(int *)ud = 1;
}

static int is_microtime(const char *s)
{
	regex_t re;
	cr_assert_eq(regcomp(&re,
	                     "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z$",
	                     REG_EXTENDED | REG_NOSUB),
	             0);
	int ok = regexec(&re, s, 0, NULL, 0) == 0;
	regfree(&re);
	return ok;
}

Test(election, three_electors_on_one_loop_elect_exactly_one)
{
	trio t = {.exclude = -1};
	char err[256];
	for (int i = 0; i < 3; i++) {
		char id[32];
		snprintf(id, sizeof(id), "member-%d_x", i);
		member *m = &t.m[i];
		sf_elect_opts o = {.ns = NS,
		                   .name = "trio",
		                   .identity = id,
		                   .lease_duration_ms = LEASE_MS,
		                   .renew_deadline_ms = RENEW_MS,
		                   .retry_period_ms = RETRY_MS,
		                   .cb = {.ready = m_ready,
		                          .on_started_leading = m_started,
		                          .on_stopped_leading = m_stopped,
		                          .ud = m}};
		cr_assert_eq(sf_elect_new(&K.loop, K.cfg, &o, &m->e, err, sizeof(err)), 0, "%s",
		             err);
		cr_assert_eq(sf_kube_client_new(&K.loop, K.cfg, NULL, &m->ctl), 0);
		cr_assert_eq(sf_elect_fence_attach(m->e, m->ctl), 0);
	}
	for (int i = 0; i < 3; i++)
		cr_assert_eq(sf_elect_start(t.m[i].e), 0);
	cr_assert_eq(tl_run_until_fn(&K.loop, one_active, &t, 15000), 0, "no leader elected");
	t.until = sf_mono_ns() + 2 * SF_NSEC_PER_SEC;
	tl_run_until_fn(&K.loop, watch_until, &t, 5000);
	cr_assert_eq(t.max_active, 1, "more than one leader active at once");
	cr_assert_eq(t.max_fence_open, 1, "more than one fence open at once");
	int L = -1;
	for (int i = 0; i < 3; i++)
		if (t.m[i].active)
			L = i;
	cr_assert(L >= 0);
	member *lead = &t.m[L];
	cr_assert(sf_elect_is_leader(lead->e));
	cr_assert_eq(lead->term, 1);
	for (int i = 0; i < 3; i++)
		cr_assert_str_eq(sf_elect_leader(t.m[i].e), sf_elect_identity(lead->e));

	/* the Lease as client-go would read it */
	tl_res r;
	get_lease("trio", &r);
	cr_assert_eq(r.http_status, 200);
	sf_jv spec = sf_jv_get(sf_obj_root(r.obj), "spec");
	cr_assert(sf_jv_streq(sf_jv_get(spec, "holderIdentity"), sf_elect_identity(lead->e)));
	int64_t dur, tr;
	cr_assert_eq(sf_jv_int64(sf_jv_get(spec, "leaseDurationSeconds"), &dur), 0);
	cr_assert_eq(dur, 3);
	cr_assert_eq(sf_jv_int64(sf_jv_get(spec, "leaseTransitions"), &tr), 0);
	cr_assert_geq(tr, 0);
	char ts[64];
	cr_assert_geq(sf_jv_str(sf_jv_get(spec, "renewTime"), ts, sizeof(ts)), 0);
	cr_assert(is_microtime(ts), "renewTime %s", ts);
	cr_assert_geq(sf_jv_str(sf_jv_get(spec, "acquireTime"), ts, sizeof(ts)), 0);
	cr_assert(is_microtime(ts), "acquireTime %s", ts);
	/* the ready hook got the version of the acquiring write, or older */
	cr_assert(lead->ready_rv[0]);
	cr_assert_leq(sf_rv_cmp(lead->ready_rv, r.obj->rv), 0, "%s > %s", lead->ready_rv,
	              r.obj->rv);
	tl_res_clear(&r);

	/* only the leader's writes pass its fence */
	for (int i = 0; i < 3; i++) {
		char body[256];
		snprintf(body, sizeof(body),
		         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
		         "\"fenced-%d\"}}",
		         i);
		tl_res w = {0};
		cr_assert_eq(
		    sf_kube_create(t.m[i].ctl, &SF_GVR_CONFIGMAPS, NS, body, tl_res_cb, &w, NULL),
		    0);
		tl_wait(&K.loop, &w, 30000);
		if (i == L)
			cr_assert_eq(w.http_status, 201, "leader write: %ld %s", w.http_status,
			             w.errmsg);
		else
			cr_assert_eq(w.err, -EPERM, "follower write got %d/%ld", w.err,
			             w.http_status);
		tl_res_clear(&w);
	}

	/* the leader releases: another takes over at once */
	int64_t t0 = sf_mono_ns();
	cr_assert_eq(sf_elect_release(lead->e, m_released, lead), 0);
	cr_assert_eq(lead->active, 0, "leader work stops before the release is written");
	cr_assert(!sf_elect_fence_open(lead->e));
	t.exclude = L;
	t.max_active = 0;
	cr_assert_eq(tl_run_until_fn(&K.loop, one_active, &t, 5000), 0, "no new leader");
	double ms = (double)(sf_mono_ns() - t0) / 1e6;
	fprintf(stderr, "election: in-process release handover %.1f ms\n", ms);
	cr_assert_lt(ms, 1000.0);
	cr_assert_eq(tl_run_until(&K.loop, &lead->released, 5000), 0);
	cr_assert_eq(lead->release_err, 0);
	cr_assert_eq(lead->stops, 1);
	sf_elect_stats st;
	for (int i = 0; i < 3; i++) {
		if (t.m[i].active) {
			sf_elect_stats_get(t.m[i].e, &st);
			cr_assert_eq(st.is_leader, 1);
			cr_assert_eq(st.acquisitions, 1);
			cr_assert_geq(st.renews_ok, 1);
			cr_assert_geq(st.renew_latency.count, 1);
			cr_assert(st.seconds_since_renew >= 0 && st.seconds_since_renew < 1.0);
			char hmsg[256];
			cr_assert_eq(sf_elect_healthz(t.m[i].e, hmsg, sizeof(hmsg)), 0, "%s", hmsg);
		}
	}
	sf_elect_stats_get(lead->e, &st);
	cr_assert_eq(st.is_leader, 0);
	cr_assert_eq(st.fence_closures, 1);
	cr_assert_eq(st.losses, 0);

	int closed[6] = {0};
	for (int i = 0; i < 3; i++) {
		sf_elect_close(t.m[i].e, on_flag, &closed[i]);
		sf_kube_client_close(t.m[i].ctl, on_flag, &closed[3 + i]);
	}
	for (int i = 0; i < 6; i++)
		cr_assert_eq(tl_run_until(&K.loop, &closed[i], 10000), 0);
}

/* ---- the ready hook ---- */

typedef struct solo {
	sf_elect *e;
	int ready_calls, answer_now, fail_first;
	uint64_t term;
	int64_t ready_at[4];
	int started, stopped, released, release_err, closed;
} solo;

static void s_ready(void *ud, sf_elect *e, uint64_t term, const char *rv)
{
	solo *x = ud;
	(void)rv;
	if (x->ready_calls < 4)
		x->ready_at[x->ready_calls] = sf_mono_ns();
	x->ready_calls++;
	x->term = term;
	if (x->fail_first && x->ready_calls == 1)
		sf_elect_ready_done(e, term, -EAGAIN);
	else if (x->answer_now)
		sf_elect_ready_done(e, term, 0);
}

static void s_started(void *ud, uint64_t term)
{
	(void)term;
	((solo *)ud)->started++;
}

static void s_stopped(void *ud, uint64_t term, const char *reason)
{
	(void)term;
	(void)reason;
	((solo *)ud)->stopped++;
}

static void s_released(void *ud, int err)
{
	solo *x = ud;
	x->released = 1;
	x->release_err = err;
}

static void solo_new(solo *x, const char *lease)
{
	sf_elect_opts o = {.ns = NS,
	                   .name = lease,
	                   .lease_duration_ms = LEASE_MS,
	                   .renew_deadline_ms = RENEW_MS,
	                   .retry_period_ms = RETRY_MS,
	                   .cb = {.ready = s_ready,
	                          .on_started_leading = s_started,
	                          .on_stopped_leading = s_stopped,
	                          .ud = x}};
	char err[256];
	cr_assert_eq(sf_elect_new(&K.loop, K.cfg, &o, &x->e, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sf_elect_start(x->e), 0);
}

static int ready_called(void *ud)
{
	return ((solo *)ud)->ready_calls > 0;
}

Test(election, ready_hook_gates_leader_work)
{
	/* the hook answers late: the lease is held and renewed meanwhile,
	 * leader work starts only with the answer */
	solo a = {0};
	solo_new(&a, "ready-a");
	cr_assert_eq(tl_run_until_fn(&K.loop, ready_called, &a, 15000), 0);
	cr_assert(sf_elect_is_leader(a.e));
	ep_run_for(&K.loop, 3 * RETRY_MS);
	sf_elect_stats st;
	sf_elect_stats_get(a.e, &st);
	cr_assert_geq(st.renews_ok, 3, "renewed while waiting for the hook");
	cr_assert_eq(st.leader_active, 0);
	cr_assert_eq(a.started, 0);
	sf_elect_ready_done(a.e, a.term + 1, 0); /* a term that does not exist */
	cr_assert_eq(a.started, 0);
	sf_elect_ready_done(a.e, a.term, 0);
	cr_assert_eq(a.started, 1);
	sf_elect_ready_done(a.e, a.term, 0); /* twice: ignored */
	cr_assert_eq(a.started, 1);

	/* the term ends before the hook answers: the answer is ignored and
	 * leader work never starts (nor "stops") */
	solo b = {0};
	solo_new(&b, "ready-b");
	cr_assert_eq(tl_run_until_fn(&K.loop, ready_called, &b, 15000), 0);
	cr_assert_eq(sf_elect_release(b.e, s_released, &b), 0);
	cr_assert_eq(tl_run_until(&K.loop, &b.released, 5000), 0);
	cr_assert_eq(b.release_err, 0);
	sf_elect_ready_done(b.e, b.term, 0);
	cr_assert_eq(b.started, 0);
	cr_assert_eq(b.stopped, 0);
	tl_res r;
	get_lease("ready-b", &r);
	cr_assert(sf_jv_streq(sf_jv_path(sf_obj_root(r.obj), "spec.holderIdentity"), ""));
	int64_t d;
	cr_assert_eq(sf_jv_int64(sf_jv_path(sf_obj_root(r.obj), "spec.leaseDurationSeconds"), &d),
	             0);
	cr_assert_eq(d, 1, "released as client-go does: leaseDurationSeconds 1");
	tl_res_clear(&r);

	/* not ready: asked again after the retry period */
	solo c = {.fail_first = 1, .answer_now = 1};
	solo_new(&c, "ready-c");
	cr_assert_eq(tl_run_until(&K.loop, &c.started, 15000), 0);
	cr_assert_eq(c.ready_calls, 2);
	double gap = (double)(c.ready_at[1] - c.ready_at[0]) / 1e6;
	cr_assert(gap >= RETRY_MS - 1 && gap < RETRY_MS + 300, "asked again after %.1f ms", gap);

	sf_elect_close(a.e, on_flag, &a.closed);
	sf_elect_close(b.e, on_flag, &b.closed);
	sf_elect_close(c.e, on_flag, &c.closed);
	cr_assert_eq(a.stopped, 1, "closing a leader stops its work");
	cr_assert_eq(c.stopped, 1);
	cr_assert_eq(tl_run_until(&K.loop, &a.closed, 10000), 0);
	cr_assert_eq(tl_run_until(&K.loop, &b.closed, 10000), 0);
	cr_assert_eq(tl_run_until(&K.loop, &c.closed, 10000), 0);
}

/* ---- candidate processes ---- */

static ep_proc *wait_leader(ep_proc **ps, size_t n, double after, long timeout_ms, size_t *who)
{
	const ep_line *l = ep_wait_any(&K.loop, ps, n, "LEADING", after, timeout_ms, who);
	if (!l)
		ep_dump(ps, n);
	cr_assert(l, "no LEADING line within %ld ms", timeout_ms);
	return ps[*who];
}

Test(election, sigterm_hands_over_within_milliseconds)
{
	ep_proc *ps[8];
	size_t n = 0;
	char id[32];
	for (int i = 0; i < 3; i++) {
		snprintf(id, sizeof(id), "term-%zu", n);
		ep_opts o = copts("handover", id);
		ps[n++] = ep_start(&K.loop, &o);
	}
	size_t who;
	wait_leader(ps, n, 0, 15000, &who);
	double figures[3];
	for (int round = 0; round < 3; round++) {
		ep_proc *old = ps[who];
		/* let it settle as leader for a renew or two */
		ep_run_for(&K.loop, 700);
		cr_assert_eq(leaders(ps, n, NULL), 1);
		double t0 = ep_now_ms();
		ep_kill(old, SIGTERM);
		size_t nw;
		ep_proc *others[8];
		size_t no = 0;
		for (size_t i = 0; i < n; i++)
			if (ps[i] != old)
				others[no++] = ps[i];
		const ep_line *l = ep_wait_any(&K.loop, others, no, "LEADING", t0, 5000, &nw);
		if (!l)
			ep_dump(ps, n);
		cr_assert(l, "nobody took over after SIGTERM");
		figures[round] = l->ms - t0;
		const ep_line *rel = ep_wait(&K.loop, old, "RELEASED", 0, 5000);
		cr_assert(rel, "the old leader did not release");
		cr_assert_eq(ep_field(rel, "err="), 0);
		const ep_line *stop = ep_find(old, "STOPPED", 0);
		cr_assert(stop && stop->ms <= rel->ms, "leader work stopped before the release");
		cr_assert_lt(stop->ms, l->ms, "old leader still leading when the new one started");
		fprintf(
		    stderr,
		    "election: SIGTERM handover round %d: %.1f ms after the signal, %.1f ms after "
		    "the release was written\n",
		    round + 1, figures[round], l->ms - rel->ms);
		cr_assert_eq(ep_wait_exit(&K.loop, old, 5000), 0);
		for (size_t i = 0; i < n; i++)
			if (ps[i] == others[nw])
				who = i;
		/* keep three candidates */
		snprintf(id, sizeof(id), "term-%zu", n);
		ep_opts o = copts("handover", id);
		ps[n++] = ep_start(&K.loop, &o);
	}
	ep_run_for(&K.loop, 500);
	cr_assert_eq(leaders(ps, n, NULL), 1);
	assert_exclusive(ps, n);
	qsort(figures, 3, sizeof(double), cmp_double);
	fprintf(stderr, "election: SIGTERM handover min %.1f / median %.1f / max %.1f ms\n",
	        figures[0], figures[1], figures[2]);
	for (int i = 0; i < 3; i++)
		cr_assert_lt(figures[i], 1000.0, "handover took %.1f ms", figures[i]);
}

Test(election, sigkill_fails_over_one_lease_duration_after_the_last_renew)
{
	ep_proc *ps[3];
	for (int i = 0; i < 3; i++) {
		char id[32];
		snprintf(id, sizeof(id), "kill-%d", i);
		ep_opts o = copts("failover", id);
		o.print_renews = 1;
		ps[i] = ep_start(&K.loop, &o);
	}
	size_t who;
	ep_proc *old = wait_leader(ps, 3, 0, 15000, &who);
	/* kill right after a renew so the printed one is the last */
	const ep_line *rn = ep_wait(&K.loop, old, "RENEWED", ep_now_ms(), 5000);
	cr_assert(rn);
	double last_renew = ep_field(rn, "at=");
	ep_kill(old, SIGKILL);
	ep_proc *others[2];
	size_t no = 0;
	for (size_t i = 0; i < 3; i++)
		if (i != who)
			others[no++] = ps[i];
	size_t nw;
	const ep_line *l = ep_wait_any(&K.loop, others, 2, "LEADING", 0, 10000, &nw);
	if (!l)
		ep_dump(ps, 3);
	cr_assert(l, "nobody took over after SIGKILL");
	double failover = l->ms - last_renew;
	fprintf(stderr, "election: SIGKILL failover %.1f ms after the last renew (lease %d ms)\n",
	        failover, LEASE_MS);
	/* never before the lease could have expired, and within lease + 0.5 s
	 * (+ 0.3 s for a loaded machine) */
	cr_assert_geq(failover, (double)LEASE_MS, "took over before the lease expired");
	cr_assert_leq(failover, LEASE_MS + 500.0 + 300.0);
	ep_run_for(&K.loop, 500);
	assert_exclusive(ps, 3);
	cr_assert_eq(leaders(ps, 3, NULL), 1);
}

static const sf_gvr GVR_ROLES = {"rbac.authorization.k8s.io", "v1", "roles", 1};
static const sf_gvr GVR_ROLEBINDINGS = {"rbac.authorization.k8s.io", "v1", "rolebindings", 1};

Test(election, lease_deleted_by_someone_else_recovers)
{
	ep_proc *ps[2];
	for (int i = 0; i < 2; i++) {
		char id[32];
		snprintf(id, sizeof(id), "del-%d", i);
		ep_opts o = copts("deleted", id);
		ps[i] = ep_start(&K.loop, &o);
	}
	size_t who;
	ep_proc *old = wait_leader(ps, 2, 0, 15000, &who);
	ep_run_for(&K.loop, 600);
	double t0 = ep_now_ms();
	tl_res r = {0};
	cr_assert_eq(
	    sf_kube_delete(K.client, &SF_GVR_LEASES, NS, "deleted", NULL, tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 200);
	tl_res_clear(&r);
	const ep_line *s = ep_wait(&K.loop, old, "STOPPED", t0, 3000);
	if (!s)
		ep_dump(ps, 2);
	cr_assert(s, "the leader did not step down when its Lease was deleted");
	cr_assert(strstr(s->text, "deleted"), "reason: %s", s->text);
	size_t nw;
	const ep_line *l = ep_wait_any(&K.loop, ps, 2, "LEADING", t0, 5000, &nw);
	cr_assert(l, "nobody leads after the Lease was deleted");
	fprintf(stderr, "election: new leader %.1f ms after the Lease was deleted\n", l->ms - t0);
	ep_run_for(&K.loop, 700);
	cr_assert_eq(leaders(ps, 2, &who), 1);
	get_lease("deleted", &r);
	cr_assert_eq(r.http_status, 200);
	cr_assert(
	    sf_jv_streq(sf_jv_path(sf_obj_root(r.obj), "spec.holderIdentity"), ep_id(ps[who])));
	tl_res_clear(&r);
	cr_assert(file_contains(ep_log_path(old), "the Lease was deleted by someone else"));
	assert_exclusive(ps, 2);
}

Test(election, odd_lease_fields_expire_from_observation)
{
	/* holder without leaseDurationSeconds: our own lease duration;
	 * renewTime far in the future or past: ignored (1 s from when seen);
	 * an empty spec: free at once */
	struct {
		const char *lease, *spec;
		double min_ms, max_ms;
	} cases[] = {
	    {"odd-nodur", "{\"holderIdentity\":\"ghost\"}", LEASE_MS, LEASE_MS + 800},
	    {"odd-future",
	     "{\"holderIdentity\":\"ghost\",\"leaseDurationSeconds\":1,"
	     "\"renewTime\":\"2199-01-01T00:00:00.000000Z\"}",
	     1000, 1800},
	    {"odd-past",
	     "{\"holderIdentity\":\"ghost\",\"leaseDurationSeconds\":1,"
	     "\"renewTime\":\"1999-01-01T00:00:00.000000Z\",\"acquireTime\":"
	     "\"1999-01-01T00:00:00.000000Z\",\"leaseTransitions\":41}",
	     1000, 1800},
	    {"odd-empty", "{}", 0, 800},
	};
	ep_proc *ps[4];
	for (int i = 0; i < 4; i++) {
		put_lease(cases[i].lease, cases[i].spec);
		char id[32];
		snprintf(id, sizeof(id), "odd-%d", i);
		ep_opts o = copts(cases[i].lease, id);
		ps[i] = ep_start(&K.loop, &o);
	}
	for (int i = 0; i < 4; i++) {
		const ep_line *seen = ep_wait(&K.loop, ps[i], "NEW_LEADER", 0, 10000);
		cr_assert(seen, "%s: nothing observed", cases[i].lease);
		const ep_line *l = ep_wait(&K.loop, ps[i], "LEADING", 0, 10000);
		if (!l)
			ep_dump(&ps[i], 1);
		cr_assert(l, "%s: never taken", cases[i].lease);
		double d = l->ms - seen->ms;
		fprintf(stderr, "election: lease %s taken %.1f ms after it was first seen\n",
		        cases[i].lease, d);
		cr_assert(d >= cases[i].min_ms - 5 && d <= cases[i].max_ms,
		          "%s: taken after %.1f ms, want [%.0f, %.0f]", cases[i].lease, d,
		          cases[i].min_ms, cases[i].max_ms);
	}
	cr_assert(file_contains(ep_log_path(ps[0]), "missing or invalid fields"));
	tl_res r;
	get_lease("odd-past", &r);
	int64_t tr;
	cr_assert_eq(sf_jv_int64(sf_jv_path(sf_obj_root(r.obj), "spec.leaseTransitions"), &tr), 0);
	cr_assert_eq(tr, 42);
	tl_res_clear(&r);
	for (int i = 0; i < 4; i++)
		cr_assert(ep_alive(ps[i]));
}

Test(election, missing_rbac_is_logged_and_recovered_when_granted)
{
	ep_opts o = copts("rbac", "rbac-0");
	o.kubeconfig = tl_env("STEADFAST_LOWPRIV_KUBECONFIG");
	o.api_unreachable_ms = 1500;
	ep_proc *p = ep_start(&K.loop, &o);
	const ep_line *h = ep_wait(&K.loop, p, "HEALTH", 0, 5000);
	cr_assert(h);
	const ep_line *bad = ep_wait(&K.loop, p, "HEALTH", h->ms, 8000);
	if (!bad)
		ep_dump(&p, 1);
	cr_assert(bad && strstr(bad->text, "fail"), "healthz did not fail without RBAC");
	cr_assert(strstr(bad->text, "403") || strstr(bad->text, "orbidden"), "%s", bad->text);
	cr_assert(file_contains(ep_log_path(p), "forbidden to use the Lease"));
	cr_assert_null(ep_find(p, "LEADING", 0));
	cr_assert(ep_alive(p));

	/* grant what the election needs */
	tl_res r = {0};
	const char *role =
	    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\",\"metadata\":{"
	    "\"name\":\"elect\"},\"rules\":[{\"apiGroups\":[\"coordination.k8s.io\"],"
	    "\"resources\":[\"leases\"],\"verbs\":[\"get\",\"list\",\"watch\",\"create\","
	    "\"update\"]}]}";
	cr_assert_eq(sf_kube_create(K.client, &GVR_ROLES, NS, role, tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 201, "%s", r.message);
	tl_res_clear(&r);
	const char *rb =
	    "{\"apiVersion\":\"rbac.authorization.k8s.io/"
	    "v1\",\"kind\":\"RoleBinding\",\"metadata\":"
	    "{\"name\":\"elect\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":"
	    "\"Role\",\"name\":\"elect\"},\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s."
	    "io\","
	    "\"kind\":\"User\",\"name\":\"steadfast-lowpriv\"}]}";
	cr_assert_eq(sf_kube_create(K.client, &GVR_ROLEBINDINGS, NS, rb, tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 201, "%s", r.message);
	tl_res_clear(&r);
	double t0 = ep_now_ms();
	const ep_line *l = ep_wait(&K.loop, p, "LEADING", 0, 20000);
	if (!l)
		ep_dump(&p, 1);
	cr_assert(l, "did not lead after RBAC was granted");
	fprintf(stderr, "election: leading %.1f ms after RBAC was granted\n", l->ms - t0);
	const ep_line *ok = ep_wait(&K.loop, p, "HEALTH", bad->ms, 5000);
	cr_assert(ok && strstr(ok->text, "ok"));
	cr_assert(file_contains(ep_log_path(p), "the Lease API answers again"));
}

/* ---- interop with client-go ---- */

static ep_opts goopts(const char *lease, const char *id)
{
	ep_opts o = copts(lease, id);
	o.kind = EP_GO;
	return o;
}

Test(election, client_go_and_steadfast_exclude_each_other_and_hand_over)
{
	ep_proc *ps[4];
	size_t n = 0;
	/* client-go leads first */
	ep_opts go1 = goopts("interop", "clientgo-1");
	ps[n++] = ep_start(&K.loop, &go1);
	ep_proc *g1 = ps[0];
	cr_assert(ep_wait(&K.loop, g1, "LEADING", 0, 20000), "client-go never led");
	ep_opts so = copts("interop", "steadfast-1");
	ps[n++] = ep_start(&K.loop, &so);
	ep_proc *s1 = ps[1];
	const ep_line *seen = ep_wait(&K.loop, s1, "NEW_LEADER", 0, 10000);
	cr_assert(seen && strstr(seen->text, "clientgo-1"), "steadfast saw %s",
	          seen ? seen->text : "nothing");
	/* several lease durations: steadfast must not take a renewed lease */
	ep_run_for(&K.loop, 2 * LEASE_MS);
	cr_assert_null(ep_find(s1, "LEADING", 0), "steadfast led while client-go held the lease");
	cr_assert(ep_leading(g1));

	/* client-go releases (ReleaseOnCancel): steadfast takes over */
	double t0 = ep_now_ms();
	ep_kill(g1, SIGTERM);
	const ep_line *l = ep_wait(&K.loop, s1, "LEADING", t0, 5000);
	if (!l)
		ep_dump(ps, n);
	cr_assert(l, "steadfast did not take the lease client-go released");
	double go_to_sf = l->ms - t0;
	cr_assert_eq(ep_wait_exit(&K.loop, g1, 10000), 0);
	/* client-go calls OnStoppedLeading (its STOPPED line) after
	 * ReleaseOnCancel's release, so steadfast, which hears of the release
	 * in milliseconds, may lead before that line is printed; its leader
	 * context was cancelled by the SIGTERM, before the release */
	const ep_line *gstop = ep_find(g1, "STOPPED", t0);
	cr_assert(gstop, "client-go never stopped leading");
	cr_assert(strstr(gstop->text, "releasing the lease"), "%s", gstop->text);

	/* a new client-go candidate waits while steadfast holds it */
	ep_opts go2 = goopts("interop", "clientgo-2");
	ps[n++] = ep_start(&K.loop, &go2);
	ep_proc *g2 = ps[2];
	const ep_line *gseen = ep_wait(&K.loop, g2, "NEW_LEADER", 0, 10000);
	cr_assert(gseen && strstr(gseen->text, "steadfast-1"), "client-go saw %s",
	          gseen ? gseen->text : "nothing");
	ep_run_for(&K.loop, 2 * LEASE_MS);
	cr_assert_null(ep_find(g2, "LEADING", 0), "client-go led while steadfast held the lease");
	cr_assert(ep_leading(s1));

	/* steadfast releases: client-go takes over at its next retry */
	t0 = ep_now_ms();
	ep_kill(s1, SIGTERM);
	l = ep_wait(&K.loop, g2, "LEADING", t0, 5000);
	if (!l)
		ep_dump(ps, n);
	cr_assert(l, "client-go did not take the lease steadfast released");
	double sf_to_go = l->ms - t0;
	cr_assert_eq(ep_wait_exit(&K.loop, s1, 5000), 0);
	const ep_line *rel = ep_find(s1, "RELEASED", 0);
	cr_assert(rel && ep_field(rel, "err=") == 0);
	fprintf(stderr,
	        "election: interop handover client-go -> steadfast %.1f ms, steadfast -> client-go "
	        "%.1f ms (client-go polls every %d ms with up to 1.2x jitter)\n",
	        go_to_sf, sf_to_go, RETRY_MS);
	cr_assert_lt(go_to_sf, 1000.0);
	/* client-go notices a release only at its next retry: <= 2.2 x retry */
	cr_assert_lt(sf_to_go, 2.2 * RETRY_MS + 500);

	/* and once more steadfast waits for client-go's renewed lease */
	ep_opts so2 = copts("interop", "steadfast-2");
	ps[n++] = ep_start(&K.loop, &so2);
	ep_run_for(&K.loop, LEASE_MS + 1000);
	cr_assert_null(ep_find(ps[3], "LEADING", 0));
	cr_assert(ep_leading(g2));
	assert_exclusive(ps, n);
}
