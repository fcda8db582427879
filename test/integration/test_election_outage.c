/*
 * test_election_outage.c - leader election while the API server is down.
 *
 * The leader cannot renew: its fence must close by the renew deadline
 * (measured from the send time of its last successful renew), leader work
 * must stop, health must fail on every replica, and no process may exit.
 * When the API server is back exactly one replica leads and acts.
 *
 * This stops the shared test API server, so its suite is named to sort
 * after every other suite (criterion runs suites in name order, and the
 * integration tests run with --jobs=1), and its fini starts the server
 * again whatever happened.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "steadfast/client.h"
#include "steadfast/time.h"
#include "elect_proc.h"
#include "tl.h"

#define LEASE_MS 3000
#define RENEW_MS 2000
#define RETRY_MS 500

static tl_kube K;
static char NS[64];
static int api_stopped;

static void apiserver(const char *action)
{
	char script[4096];
	const char *repo = getenv("STEADFAST_REPO");
	if (repo && *repo)
		snprintf(script, sizeof(script), "%s/test/cluster/restart-apiserver.sh", repo);
	else if (access("test/cluster/restart-apiserver.sh", X_OK) == 0)
		snprintf(script, sizeof(script), "test/cluster/restart-apiserver.sh");
	else
		cr_assert_fail(
		    "cannot find test/cluster/restart-apiserver.sh (set STEADFAST_REPO)");
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "'%s' '%s' %s >&2", script, tl_env("STEADFAST_CLUSTER_DIR"),
	         action);
	int rc = system(cmd);
	cr_assert(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s failed (%d)", cmd, rc);
}

static void setup(void)
{
	srand((unsigned)sf_mono_ns());
	tl_kube_open(&K, NULL, NULL);
	tl_namespace(&K, "it-outage", NS, sizeof(NS));
}

static void teardown(void)
{
	ep_cleanup(&K.loop);
	if (api_stopped) {
		apiserver("start");
		api_stopped = 0;
	}
	tl_namespace_delete(&K, NS);
	tl_kube_close(&K);
}

TestSuite(zz_election_outage, .init = setup, .fini = teardown, .timeout = 240);

Test(zz_election_outage, fence_closes_by_the_renew_deadline_and_one_leader_acts_after)
{
	ep_proc *ps[2];
	for (int i = 0; i < 2; i++) {
		char id[32];
		snprintf(id, sizeof(id), "outage-%d", i);
		ep_opts o = {.kind = EP_C,
		             .ns = NS,
		             .lease = "outage",
		             .id = id,
		             .lease_ms = LEASE_MS,
		             .renew_ms = RENEW_MS,
		             .retry_ms = RETRY_MS,
		             .work_cm = "outage-work",
		             .work_ms = 100,
		             .api_unreachable_ms = 2000,
		             .print_renews = 1};
		ps[i] = ep_start(&K.loop, &o);
	}
	size_t who;
	const ep_line *l = ep_wait_any(&K.loop, ps, 2, "LEADING", 0, 15000, &who);
	cr_assert(l, "no leader");
	ep_proc *lead = ps[who];
	cr_assert(ep_wait(&K.loop, lead, "WRITE", l->ms, 5000), "the leader does not write");

	double t_stop = ep_now_ms();
	api_stopped = 1;
	apiserver("stop");
	fprintf(stderr, "election: kube-apiserver stopped in %.0f ms\n", ep_now_ms() - t_stop);

	const ep_line *s = ep_wait(&K.loop, lead, "STOPPED", t_stop, 10000);
	if (!s)
		ep_dump(ps, 2);
	cr_assert(s, "the leader did not step down while the API server was down");
	cr_assert(strstr(s->text, "renew deadline"), "reason: %s", s->text);
	/* the last renew that succeeded, as the process saw it */
	const ep_line *last = NULL;
	for (size_t i = 0; i < ep_nlines(lead); i++) {
		const ep_line *x = ep_line_at(lead, i);
		if (x->ms < s->ms && strcmp(x->ev, "RENEWED") == 0)
			last = x;
	}
	cr_assert(last);
	double closed_after = s->ms - ep_field(last, "at=");
	fprintf(stderr,
	        "election: fence closed %.1f ms after the last successful renew (renew "
	        "deadline %d ms)\n",
	        closed_after, RENEW_MS);
	cr_assert_geq(closed_after, RENEW_MS - 1.0, "closed early?");
	cr_assert_leq(closed_after, RENEW_MS + 50.0, "the fence closed late");
	/* nothing written after the fence closed */
	for (size_t i = 0; i < ep_nlines(lead); i++) {
		const ep_line *x = ep_line_at(lead, i);
		if (x->ms > s->ms && strcmp(x->ev, "WRITE") == 0)
			cr_assert(!strstr(x->text, "ok"),
			          "a write succeeded after the fence closed");
	}
	/* every replica reports the API as unreachable, none exits */
	for (int i = 0; i < 2; i++) {
		const ep_line *h;
		double after = t_stop;
		do {
			h = ep_wait(&K.loop, ps[i], "HEALTH", after, 8000);
			after = h ? h->ms : after;
		} while (h && !strstr(h->text, "fail"));
		if (!h)
			ep_dump(ps, 2);
		cr_assert(h, "%s: healthz did not fail", ep_id(ps[i]));
	}
	ep_run_for(&K.loop, 1000);
	for (int i = 0; i < 2; i++) {
		cr_assert(ep_alive(ps[i]), "%s exited", ep_id(ps[i]));
		cr_assert(!ep_leading(ps[i]), "%s leads without an API server", ep_id(ps[i]));
	}

	double t_start = ep_now_ms();
	apiserver("start");
	api_stopped = 0;
	fprintf(stderr, "election: kube-apiserver ready again after %.0f ms\n",
	        ep_now_ms() - t_start);
	l = ep_wait_any(&K.loop, ps, 2, "LEADING", t_start, 20000, &who);
	if (!l)
		ep_dump(ps, 2);
	cr_assert(l, "nobody leads after the API server came back");
	fprintf(stderr, "election: %s leads %.0f ms after the API server start began\n",
	        ep_id(ps[who]), l->ms - t_start);
	ep_run_for(&K.loop, 3000);
	int leading = 0;
	for (int i = 0; i < 2; i++) {
		leading += ep_leading(ps[i]);
		cr_assert(ep_alive(ps[i]));
	}
	cr_assert_eq(leading, 1, "%d leaders after the outage", leading);
	/* only the one leading wrote since */
	for (int i = 0; i < 2; i++) {
		if (ps[i] == ps[who])
			continue;
		for (size_t j = 0; j < ep_nlines(ps[i]); j++) {
			const ep_line *x = ep_line_at(ps[i], j);
			if (x->ms > t_start && strcmp(x->ev, "WRITE") == 0)
				cr_assert(!strstr(x->text, "ok"), "%s wrote while not leading",
				          ep_id(ps[i]));
		}
	}
	cr_assert(ep_wait(&K.loop, ps[who], "WRITE", l->ms, 5000));
	char msg[512];
	int rc = ep_check_exclusive(ps, 2, RENEW_MS, msg, sizeof(msg));
	if (rc)
		ep_dump(ps, 2);
	cr_assert_eq(rc, 0, "%s", msg);
	for (int i = 0; i < 2; i++) {
		const ep_line *h = ep_find_last(ps[i], "HEALTH");
		cr_assert(h && strstr(h->text, "ok"), "%s: health %s", ep_id(ps[i]),
		          h ? h->text : "?");
	}
}
