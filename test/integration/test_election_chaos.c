/*
 * test_election_chaos.c - leader election under handovers and partitions,
 * judged by the API server's own audit log.
 *
 * The candidates' lines say what each replica believed; the audit log says
 * what the API server actually accepted and when. From the log, a
 * replica's leadership interval runs from its acquire (the first successful
 * write of the Lease by it after another holder's) to the next holder's
 * acquire; every successful mutating request a candidate made on leases or
 * configmaps (its user agent is "election-candidate/<identity>") must fall
 * inside one of its own intervals.
 *
 * The partition test gives each replica its own TCP proxy (test/lib
 * tcpproxy) on this test's loop and a kubeconfig pointing at it (TLS stays
 * end to end: the serving certificate has SAN 127.0.0.1), then blackholes
 * the leader's proxy while the others still reach the API server.
 *
 * The suite name sorts after the other suites and before zz_election_outage
 * (the integration tests run with --jobs=1 on one shared cluster); it leaves
 * the API server untouched, and its fini kills every candidate it started
 * and closes the proxies, whatever happened.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "steadfast/client.h"
#include "steadfast/time.h"
#include "tcpproxy.h"
#include "elect_proc.h"
#include "tl.h"
#include "tl_audit.h"

#define LEASE_MS 3000
#define RENEW_MS 2000
#define RETRY_MS 500
#define NREP 3
#define UA_PREFIX "election-candidate/"

static tl_kube K;
static char NS[64];
static char TMPDIR[64];
static char KCFG[NREP][128];
static tp_proxy *PROXY[NREP];
static tl_audit_mark AUDIT_FROM; /* the audit log at setup: only later lines matter */

static void setup(void)
{
	srand((unsigned)sf_mono_ns());
	tl_audit_mark_now(&AUDIT_FROM);
	tl_kube_open(&K, NULL, NULL);
	tl_namespace(&K, "it-chaos", NS, sizeof(NS));
	snprintf(TMPDIR, sizeof(TMPDIR), "/tmp/steadfast-chaos-XXXXXX");
	cr_assert(mkdtemp(TMPDIR), "mkdtemp");
}

static void teardown(void)
{
	ep_cleanup(&K.loop);
	for (int i = 0; i < NREP; i++) {
		tp_close(PROXY[i]);
		PROXY[i] = NULL;
		if (KCFG[i][0])
			unlink(KCFG[i]);
		KCFG[i][0] = '\0';
	}
	if (TMPDIR[0])
		rmdir(TMPDIR);
	tl_namespace_delete(&K, NS);
	tl_kube_close(&K); /* runs the loop dry: the proxies' handles close */
}

TestSuite(x_election_chaos, .init = setup, .fini = teardown, .timeout = 240);

/* ---- proxies and kubeconfigs ---- */

/* A proxy to the API server and a kubeconfig (admin identity) through it. */
static const char *proxied_kubeconfig(int i)
{
	snprintf(KCFG[i], sizeof(KCFG[i]), "%s/kubeconfig-%d", TMPDIR, i);
	PROXY[i] = tl_api_proxy(&K.loop, KCFG[i]);
	return KCFG[i];
}

/* ---- the audit log ---- */

typedef struct aud {
	int64_t us; /* stageTimestamp, µs since the epoch */
	char who[64];
	char verb[16];
	char res[32];
	char name[128];
	int code;
} aud;

typedef struct acq {
	int64_t us;
	char who[64];
	size_t writes; /* successful mutations by the holder in this interval */
} acq;

static int is_mutating(const char *verb)
{
	return !strcmp(verb, "create") || !strcmp(verb, "update") || !strcmp(verb, "patch") ||
	       !strcmp(verb, "delete");
}

static int by_time(const void *a, const void *b)
{
	const aud *x = a, *y = b;
	return x->us < y->us ? -1 : x->us > y->us;
}

/* Requests by candidates on objects in NS (ResponseComplete), by time. */
static size_t audit_read(aud **out)
{
	tl_audit_query q = {.ns = NS, .stage = "ResponseComplete", .text = UA_PREFIX};
	tl_audit_req *v = NULL;
	size_t nv = tl_audit_select(&AUDIT_FROM, &q, &v);
	aud *a = calloc(nv ? nv : 1, sizeof(*a));
	cr_assert(a);
	size_t n = 0;
	for (size_t i = 0; i < nv; i++) {
		const tl_audit_req *e = &v[i];
		if (strncmp(e->ua, UA_PREFIX, strlen(UA_PREFIX)) != 0 || !e->verb[0] ||
		    !e->resource[0] || !e->done_us)
			continue;
		aud *x = &a[n++];
		x->us = e->done_us;
		const char *id = e->ua + strlen(UA_PREFIX);
		snprintf(x->who, sizeof(x->who), "%.*s", (int)strcspn(id, " "), id);
		snprintf(x->verb, sizeof(x->verb), "%.15s", e->verb);
		snprintf(x->res, sizeof(x->res), "%.31s", e->resource);
		snprintf(x->name, sizeof(x->name), "%.127s", e->name);
		x->code = (int)e->code;
	}
	free(v);
	qsort(a, n, sizeof(*a), by_time);
	*out = a;
	return n;
}

/* The leadership intervals as the API server saw them (acquires of lease,
 * in order, into acqs), and the check that every successful mutating
 * request by a candidate falls inside an interval of its own. */
static int audit_check(const aud *a, size_t n, const char *lease, acq *acqs, size_t maxacq,
                       size_t *nacq, char *msg, size_t len)
{
	size_t na = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(a[i].res, "leases") || strcmp(a[i].name, lease) ||
		    !is_mutating(a[i].verb) || a[i].code < 200 || a[i].code > 299)
			continue;
		if (na == 0 || strcmp(acqs[na - 1].who, a[i].who) != 0) {
			cr_assert(na < maxacq, "too many acquires");
			acqs[na] = (acq){.us = a[i].us};
			snprintf(acqs[na].who, sizeof(acqs[na].who), "%s", a[i].who);
			na++;
		}
	}
	*nacq = na;
	size_t checked = 0, failed = 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_mutating(a[i].verb))
			continue;
		if (a[i].code < 200 || a[i].code > 299) {
			failed++;
			continue;
		}
		checked++;
		size_t k = na;
		for (size_t j = 0; j < na; j++)
			if (acqs[j].us <= a[i].us)
				k = j;
		if (k == na || strcmp(acqs[k].who, a[i].who) != 0) {
			snprintf(
			    msg, len,
			    "%s %s %s/%s by %s at %lld us (code %d) is outside its leadership: "
			    "%s holds since %lld us",
			    a[i].verb, a[i].res, NS, a[i].name, a[i].who, (long long)a[i].us,
			    a[i].code, k == na ? "nobody" : acqs[k].who,
			    k == na ? 0LL : (long long)acqs[k].us);
			return -1;
		}
		acqs[k].writes++;
	}
	snprintf(msg, len,
	         "%zu successful mutating requests by candidates, all inside their holder's "
	         "interval (%zu leadership intervals; %zu failed mutations not counted)",
	         checked, na, failed);
	return 0;
}

static void audit_dump(const aud *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (is_mutating(a[i].verb))
			fprintf(stderr, "  audit %lld %-8s %-6s %-10s %-18s %d\n",
			        (long long)a[i].us, a[i].who, a[i].verb, a[i].res, a[i].name,
			        a[i].code);
}

/* ---- helpers ---- */

/* CLOCK_REALTIME - CLOCK_MONOTONIC, ms (to compare lines with the log). */
static double real_minus_mono_ms(void)
{
	struct timespec r, m;
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	return ((double)r.tv_sec * 1e3 + r.tv_nsec / 1e6) -
	       ((double)m.tv_sec * 1e3 + m.tv_nsec / 1e6);
}

/* Waits until p printed count "WRITE ok" lines after after_ms. */
static void wait_writes(ep_proc **ps, size_t np, ep_proc *p, double after_ms, int count)
{
	double after = after_ms;
	int ok = 0;
	while (ok < count) {
		const ep_line *w = ep_wait(&K.loop, p, "WRITE", after, 5000);
		if (!w)
			ep_dump(ps, np);
		cr_assert(w, "%s: no leader work", ep_id(p));
		ok += strncmp(w->text, "ok", 2) == 0;
		after = w->ms;
	}
}

static ep_proc *start(const char *id, const char *lease, const char *kubeconfig)
{
	ep_opts o = {.kind = EP_C,
	             .ns = NS,
	             .lease = lease,
	             .id = id,
	             .lease_ms = LEASE_MS,
	             .renew_ms = RENEW_MS,
	             .retry_ms = RETRY_MS,
	             .kubeconfig = kubeconfig,
	             .work_cm = "chaos-work",
	             .work_ms = 100,
	             .api_unreachable_ms = 2000,
	             .print_renews = 1};
	return ep_start(&K.loop, &o);
}

/* ---- tests ---- */

/* Exclusivity seen both ways: the candidates' own lines, and every write
 * in the API server's audit log inside its writer's leadership interval.
 * Returns the audit records read (*out, the caller frees) and fills acqs
 * with the intervals found on lease. */
static size_t check_exclusive(ep_proc **ps, const char *lease, aud **out, acq *acqs, size_t maxacq,
                              size_t *na)
{
	char msg[512];
	int rc = ep_check_exclusive(ps, NREP, RENEW_MS, msg, sizeof(msg));
	if (rc)
		ep_dump(ps, NREP);
	cr_assert_eq(rc, 0, "candidates' own lines: %s", msg);
	tl_audit_sync(&K, &AUDIT_FROM, NS, 10000);
	size_t n = audit_read(out);
	rc = audit_check(*out, n, lease, acqs, maxacq, na, msg, sizeof(msg));
	if (rc) {
		ep_dump(ps, NREP);
		audit_dump(*out, n);
	}
	cr_assert_eq(rc, 0, "audit log: %s", msg);
	fprintf(stderr, "chaos: audit log: %s\n", msg);
	return n;
}

Test(x_election_chaos, one_writer_at_a_time_through_handovers_per_the_audit_log)
{
	ep_proc *ps[NREP];
	for (int i = 0; i < NREP; i++) {
		char id[32];
		snprintf(id, sizeof(id), "chaos-%d", i);
		ps[i] = start(id, "chaos", NULL);
	}
	size_t who;
	const ep_line *l = ep_wait_any(&K.loop, ps, NREP, "LEADING", 0, 15000, &who);
	if (!l)
		ep_dump(ps, NREP);
	cr_assert(l, "no leader");
	ep_proc *lead[3] = {ps[who]};
	wait_writes(ps, NREP, lead[0], l->ms, 5);

	/* handover 1: SIGTERM (release) */
	double t_term = ep_now_ms();
	ep_kill(lead[0], SIGTERM);
	ep_proc *rest[NREP];
	size_t nrest = 0;
	for (int i = 0; i < NREP; i++)
		if (ps[i] != lead[0])
			rest[nrest++] = ps[i];
	l = ep_wait_any(&K.loop, rest, nrest, "LEADING", t_term, 5000, &who);
	if (!l)
		ep_dump(ps, NREP);
	cr_assert(l, "nobody took over after SIGTERM");
	lead[1] = rest[who];
	fprintf(stderr, "chaos: SIGTERM handover %s -> %s in %.1f ms\n", ep_id(lead[0]),
	        ep_id(lead[1]), l->ms - t_term);
	cr_assert_eq(ep_wait_exit(&K.loop, lead[0], 5000), 0, "%s did not exit", ep_id(lead[0]));
	wait_writes(ps, NREP, lead[1], l->ms, 5);

	/* handover 2: SIGKILL (expiry) */
	const ep_line *renew = ep_find_last(lead[1], "RENEWED");
	double t_kill = ep_now_ms();
	ep_kill(lead[1], SIGKILL);
	nrest = 0;
	for (int i = 0; i < NREP; i++)
		if (ps[i] != lead[0] && ps[i] != lead[1])
			rest[nrest++] = ps[i];
	l = ep_wait_any(&K.loop, rest, nrest, "LEADING", t_kill, LEASE_MS + 5000, &who);
	if (!l)
		ep_dump(ps, NREP);
	cr_assert(l, "nobody took over after SIGKILL");
	lead[2] = rest[who];
	fprintf(stderr,
	        "chaos: SIGKILL handover %s -> %s %.1f ms after the kill, %.1f ms after its last "
	        "renew (lease %d ms)\n",
	        ep_id(lead[1]), ep_id(lead[2]), l->ms - t_kill,
	        renew ? l->ms - ep_field(renew, "at=") : -1.0, LEASE_MS);
	wait_writes(ps, NREP, lead[2], l->ms, 5);

	/* the last one releases: every write has ended when it exits */
	ep_kill(lead[2], SIGTERM);
	cr_assert_eq(ep_wait_exit(&K.loop, lead[2], 5000), 0, "%s did not exit", ep_id(lead[2]));
	cr_assert_eq(ep_wait_exit(&K.loop, lead[1], 5000), 0);

	aud *a;
	acq acqs[32];
	size_t na;
	check_exclusive(ps, "chaos", &a, acqs, 32, &na);
	cr_assert_eq(na, 3, "%zu leadership intervals in the audit log, expected 3", na);
	for (size_t k = 0; k < na; k++) {
		cr_assert_str_eq(acqs[k].who, ep_id(lead[k]), "holder %zu", k);
		/* the acquire, renews, and the ConfigMap patches */
		cr_assert_geq(acqs[k].writes, 5, "%s: %zu writes", acqs[k].who, acqs[k].writes);
		fprintf(stderr, "chaos:   %s acquired at %lld us, %zu writes\n", acqs[k].who,
		        (long long)acqs[k].us, acqs[k].writes);
	}
	free(a);
}

Test(x_election_chaos, cut_off_leader_fences_before_another_acquires_and_rejoins)
{
	ep_proc *ps[NREP];
	for (int i = 0; i < NREP; i++) {
		char id[32];
		snprintf(id, sizeof(id), "cut-%d", i);
		ps[i] = start(id, "chaos-cut", proxied_kubeconfig(i));
	}
	size_t who;
	const ep_line *l = ep_wait_any(&K.loop, ps, NREP, "LEADING", 0, 15000, &who);
	if (!l)
		ep_dump(ps, NREP);
	cr_assert(l, "no leader");
	ep_proc *cut = ps[who];
	tp_proxy *cut_proxy = PROXY[who];
	wait_writes(ps, NREP, cut, l->ms, 5);
	ep_proc *rest[NREP];
	size_t nrest = 0;
	for (int i = 0; i < NREP; i++)
		if (ps[i] != cut)
			rest[nrest++] = ps[i];

	/* partition: the leader's proxy forwards nothing, closes nothing */
	double t_cut = ep_now_ms();
	tp_blackhole(cut_proxy, 1);
	fprintf(stderr, "chaos: %s cut off (%zu connections held)\n", ep_id(cut),
	        tp_nconns(cut_proxy));

	const ep_line *s = ep_wait(&K.loop, cut, "STOPPED", t_cut, RENEW_MS + 3000);
	if (!s)
		ep_dump(ps, NREP);
	cr_assert(s, "the cut-off leader did not step down");
	const ep_line *n =
	    ep_wait_any(&K.loop, rest, nrest, "LEADING", t_cut, 2 * LEASE_MS + 3000, &who);
	if (!n)
		ep_dump(ps, NREP);
	cr_assert(n, "nobody took over from the cut-off leader");
	ep_proc *next = rest[who];
	const ep_line *last = NULL; /* the cut leader's last successful renew */
	for (size_t i = 0; i < ep_nlines(cut); i++) {
		const ep_line *x = ep_line_at(cut, i);
		if (x->ms < s->ms && strcmp(x->ev, "RENEWED") == 0)
			last = x;
	}
	cr_assert(last);
	fprintf(stderr,
	        "chaos: %s fence closed %.1f ms after the cut, %.1f ms after its last renew "
	        "(reason: %s); %s acquired %.1f ms later (margin)\n",
	        ep_id(cut), s->ms - t_cut, s->ms - ep_field(last, "at="), s->text, ep_id(next),
	        n->ms - s->ms);
	cr_assert_lt(s->ms, n->ms, "%s acquired before %s's fence closed", ep_id(next), ep_id(cut));
	cr_assert_leq(s->ms - ep_field(last, "at="), RENEW_MS + 50.0, "the fence closed late");
	for (size_t i = 0; i < ep_nlines(cut); i++) {
		const ep_line *x = ep_line_at(cut, i);
		if (x->ms > s->ms && strcmp(x->ev, "WRITE") == 0)
			cr_assert(strncmp(x->text, "ok", 2) != 0,
			          "a write succeeded after the fence closed");
	}
	/* it notices that the API is unreachable, and does not exit */
	const ep_line *h;
	double after = t_cut;
	do {
		h = ep_wait(&K.loop, cut, "HEALTH", after, 8000);
		after = h ? h->ms : after;
	} while (h && strncmp(h->text, "fail", 4) != 0);
	if (!h)
		ep_dump(ps, NREP);
	cr_assert(h, "%s: health did not fail while cut off", ep_id(cut));
	cr_assert(ep_alive(cut), "%s exited while cut off", ep_id(cut));

	/* heal. The connections that were open through the partition are
	 * reset first, dropping what they held: the request the leader sent
	 * after the cut (before its fence closed) would otherwise reach the
	 * API server now, after the new leader's acquire, and be applied. No
	 * client-side fence can stop a write already on the wire that the
	 * network delays past lease duration - renew deadline (election.h:
	 * cancelling a write in flight is best effort); this test checks what
	 * the fence promises, with the partition losing what it held, as it
	 * does once TCP gives up or the client aborts the connection. */
	double t_heal = ep_now_ms();
	tp_reset(cut_proxy);
	tp_blackhole(cut_proxy, 0);
	after = t_heal;
	do {
		h = ep_wait(&K.loop, cut, "HEALTH", after, 10000);
		after = h ? h->ms : after;
	} while (h && strncmp(h->text, "ok", 2) != 0);
	if (!h)
		ep_dump(ps, NREP);
	cr_assert(h, "%s: health did not recover after the partition", ep_id(cut));
	fprintf(stderr, "chaos: %s healthy again %.1f ms after the heal\n", ep_id(cut),
	        h->ms - t_heal);
	/* it follows the new leader */
	char want[96];
	snprintf(want, sizeof(want), "leader=%s", ep_id(next));
	const ep_line *nl = NULL;
	after = s->ms;
	while (!nl) {
		const ep_line *x = ep_wait(&K.loop, cut, "NEW_LEADER", after, 10000);
		if (!x)
			break;
		if (strcmp(x->text, want) == 0)
			nl = x;
		after = x->ms;
	}
	if (!nl)
		ep_dump(ps, NREP);
	cr_assert(nl, "%s does not see %s as leader", ep_id(cut), ep_id(next));
	/* an observation period: the roles stay as they are */
	ep_run_for(&K.loop, LEASE_MS);
	int leading = 0;
	for (int i = 0; i < NREP; i++) {
		cr_assert(ep_alive(ps[i]), "%s exited", ep_id(ps[i]));
		leading += ep_leading(ps[i]);
	}
	cr_assert(!ep_leading(cut), "%s leads again", ep_id(cut));
	cr_assert(ep_leading(next), "%s no longer leads", ep_id(next));
	cr_assert_eq(leading, 1, "%d leaders", leading);

	/* the API server's view */
	double off = real_minus_mono_ms();
	aud *a;
	acq acqs[32];
	size_t na;
	size_t na_ = check_exclusive(ps, "chaos-cut", &a, acqs, 32, &na);
	cr_assert_eq(na, 2, "%zu leadership intervals in the audit log, expected 2", na);
	cr_assert_str_eq(acqs[0].who, ep_id(cut));
	cr_assert_str_eq(acqs[1].who, ep_id(next));
	int64_t last_write = -1;
	for (size_t i = 0; i < na_; i++)
		if (!strcmp(a[i].who, ep_id(cut)) && is_mutating(a[i].verb) && a[i].code >= 200 &&
		    a[i].code <= 299)
			last_write = a[i].us;
	cr_assert_lt(last_write, acqs[1].us, "%s wrote after %s acquired", ep_id(cut), ep_id(next));
	fprintf(stderr,
	        "chaos: audit: %s's last write %.1f ms before %s's acquire; its fence closed "
	        "%.1f ms before that acquire (clocks: realtime - monotonic)\n",
	        ep_id(cut), (double)(acqs[1].us - last_write) / 1e3, ep_id(next),
	        (double)acqs[1].us / 1e3 - (s->ms + off));
	free(a);
}
