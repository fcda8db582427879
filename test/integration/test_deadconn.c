/*
 * test_deadconn.c - connections that die quietly, against the real control
 * plane through the chaos proxy (test/lib/tcpproxy).
 *
 * tp_blackhole_existing models a half-open connection (a NAT entry
 * dropped, a load balancer replaced without a RST): the connections open
 * now forward nothing more and stay open; new ones work. Nothing then
 * fails by itself - no RST, no error, and the proxy's kernel still
 * acknowledges what is sent - so only the client's own bounds can notice.
 *
 *   - an informer on a client whose connection went half-open gets an
 *     object created meanwhile: the read-idle probe times out, the
 *     connection is shut down and the watch resumes on a new one;
 *   - a follower whose connections went half-open takes over when the
 *     leader is killed, within the lease duration plus the election's
 *     request timeout, and then reconciles;
 *   - a leader whose AppWrapper watch stream alone stalls (its connection,
 *     the election and every other request stay healthy) restarts that
 *     watch when its progress watchdog fires and catches up, still leader.
 *     A TCP-level proxy cannot stall one HTTP/2 stream of a connection, so
 *     this one is the test build's fault point WATCH_STALL_AFTER_MS.
 *
 * The leader whose whole connection is cut off (fence closed at the renew
 * deadline, another replica takes over) is test_election_chaos.c's
 * cut_off_leader_fences_before_another_acquires_and_rejoins.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/awapi.h"
#include "steadfast/awapi.h"
#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/config.h"
#include "steadfast/time.h"
#include "tcpproxy.h"
#include "tl.h"
#include "tl_aw.h"
#include "tl_ctl.h"

static tl_kube K;
static char NS[64];
static tl_aw_watch W;
static tp_proxy *PROXY;
static char KCFG[256];
/* the informer test's own client and informer, closed by teardown too */
static sf_kube_config *CFG2;
static sf_kube_client *C2;
static sf_informer *INF2;

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

static void own_client_close(void)
{
	int stopped = 0, closed = 0;
	if (INF2) {
		sf_informer_stop(INF2, set_flag, &stopped);
		tl_run_until(&K.loop, &stopped, 5000);
		sf_informer_free(INF2);
		INF2 = NULL;
	}
	if (C2) {
		sf_kube_client_close(C2, set_flag, &closed);
		tl_run_until(&K.loop, &closed, 5000);
		C2 = NULL;
	}
	sf_kube_config_free(CFG2);
	CFG2 = NULL;
}

static void setup(void)
{
	tl_aw_env_open(&K, &W, "dead", NS, sizeof(NS));
}

static void teardown(void)
{
	tl_ctl_stop_all(&K.loop); /* before the proxy its replicas use */
	own_client_close();
	if (PROXY)
		tp_close(PROXY); /* its handles go while the loop runs below */
	tl_aw_env_close(&K, &W, NS);
	if (KCFG[0])
		unlink(KCFG);
}

TestSuite(deadconn, .init = setup, .fini = teardown, .timeout = 180);

/* The chaos proxy and an admin kubeconfig through it. */
static void proxy_start(void)
{
	snprintf(KCFG, sizeof(KCFG), "/tmp/steadfast-deadconn-%d.kubeconfig", (int)getpid());
	PROXY = tl_api_proxy(&K.loop, KCFG);
}

typedef struct cm_wait {
	sf_informer *inf;
	const char *name;
} cm_wait;

static int cm_cached(void *ud)
{
	cm_wait *w = ud;
	return sf_store_get_ns(sf_informer_store(w->inf), NS, w->name) != NULL;
}

static void create_cm(const char *name)
{
	char body[256];
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"}}",
	         name);
	cr_assert_eq(tl_aw_req(&W, "POST", &SF_GVR_CONFIGMAPS, NULL, NULL, body), 201);
}

Test(deadconn, an_informer_on_a_half_open_connection_resumes_on_a_new_one)
{
	proxy_start();
	char err[512];
	cr_assert_eq(sf_kube_config_load(KCFG, NULL, &CFG2, err, sizeof(err)), 0, "%s", err);
	/* short bounds for the test: idle 1 s, probe answered within 1 s */
	sf_kube_client_opts co = {.read_idle_ms = 1000, .ping_timeout_ms = 1000};
	cr_assert_eq(sf_kube_client_new(&K.loop, CFG2, &co, &C2), 0);
	sf_kube_client *c = C2;
	sf_informer_opts io = {.reflector = {.gvr = &SF_GVR_CONFIGMAPS, .ns = NS}};
	cr_assert_eq(sf_informer_new(&K.loop, c, &io, &INF2), 0);
	sf_informer *inf = INF2;
	cr_assert_eq(sf_informer_start(inf), 0);
	create_cm("before");
	cm_wait w = {inf, "before"};
	cr_assert_eq(tl_run_until_fn(&K.loop, cm_cached, &w, 10000), 0, "never synced");
	unsigned long accepted = tp_accepted(PROXY);

	tp_blackhole_existing(PROXY);
	create_cm("during");
	w.name = "during";
	int64_t t0 = sf_mono_ns();
	cr_assert_eq(tl_run_until_fn(&K.loop, cm_cached, &w, 15000), 0,
	             "the watch stayed on the dead connection");
	double s = (double)(sf_mono_ns() - t0) / 1e9;
	sf_kube_client_stats st;
	sf_kube_client_stats_get(c, &st);
	fprintf(stderr,
	        "half-open connection: object seen %.2f s after its creation; %lu probes, %lu "
	        "connections dropped, %lu new connections\n",
	        s, st.health_probes, st.connections_dropped, tp_accepted(PROXY) - accepted);
	cr_assert_geq(st.connections_dropped, 1);
	cr_assert_gt(tp_accepted(PROXY), accepted, "no new connection was opened");
	cr_assert_lt(s, 10.0);
}

Test(deadconn, a_follower_on_a_half_open_connection_takes_over)
{
	proxy_start();
	tl_ctl_opts la = {.ns = NS, .lease = "steadfast-test", .id = "direct"};
	tl_ctl *a = tl_ctl_start(&K.loop, &la);
	cr_assert_geq(tl_ctl_wait_log(&K.loop, a, "\"msg\":\"reconciling\"", 0, 30000), 0);
	tl_ctl_opts lb = {.ns = NS, .lease = "steadfast-test", .id = "proxied", .kubeconfig = KCFG};
	tl_ctl *b = tl_ctl_start(&K.loop, &lb);
	cr_assert_geq(tl_ctl_wait_log(&K.loop, b, "new leader observed", 0, 30000), 0);
	/* both of its connections (election, controller) go half-open */
	tp_blackhole_existing(PROXY);
	size_t from = tl_ctl_nlines(b);
	tl_ctl_signal(a, SIGKILL);
	int64_t t0 = sf_mono_ns();
	if (tl_ctl_wait_log(&K.loop, b, "became leader", from, 30000) < 0) {
		tl_ctl_dump(b, 30);
		cr_assert_fail("the follower on a half-open connection did not take over in 30 s");
	}
	double s = (double)(sf_mono_ns() - t0) / 1e9;
	/* lease 3 s, renew deadline 2 s: the election's requests time out at
	 * 1 s, which shuts the dead connection down */
	cr_assert_lt(s, 3.0 + 5.0, "took over %.1f s after the kill", s);
	/* and it reconciles: its controller's client recovers on its own */
	create_cm("unused"); /* (the test's own client works) */
	tl_aw_create(&W, "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":"
	                 "\"AppWrapper\",\"metadata\":{\"name\":\"after\"},\"spec\":{\"suspend\":"
	                 "true,\"components\":[]}}");
	tl_aw_wait_phase(&W, "after", "Suspended", 90000);
	double r = (double)(sf_mono_ns() - t0) / 1e9;
	fprintf(stderr,
	        "half-open follower: took over %.2f s after the leader's kill, reconciled %.2f s "
	        "after it\n",
	        s, r);
	cr_assert(tl_ctl_alive(b));
}

static void create_aw(const char *name)
{
	char body[512];
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"" SF_AW_KIND
	         "\",\"metadata\":{\"name\":\"%s\"},\"spec\":{\"suspend\":true,"
	         "\"components\":[]}}",
	         name);
	tl_aw_create(&W, body);
}

Test(deadconn, a_stalled_watch_stream_is_restarted_by_its_watchdog)
{
	/* the AppWrapper watch stalls 2 s after start; the watchdog's bound is
	 * 3 s here (150 s by default: 2.5 bookmark intervals) */
	const long bound_ms = 3000;
	const char *env[] = {"STEADFAST_FAULT_WATCH_STALL_AFTER_MS=2000",
	                     "STEADFAST_FAULT_WATCH_PROGRESS_TIMEOUT_MS=3000", NULL};
	tl_ctl_opts o = {
	    .ns = NS, .lease = "steadfast-test", .id = "stall", .env = env, .faults = 1};
	tl_ctl *a = tl_ctl_start(&K.loop, &o);
	cr_assert_geq(tl_ctl_wait_log(&K.loop, a, "\"msg\":\"reconciling\"", 0, 30000), 0);
	/* AppWrappers until one of their events meets the stalled stream */
	int i = 0;
	while (tl_ctl_count(a, "the watch stream stalls", 0) == 0) {
		cr_assert_lt(i, 20, "the watch never stalled");
		char name[32];
		snprintf(name, sizeof(name), "probe-%d", i++);
		create_aw(name);
		tl_ctl_wait_log(&K.loop, a, "the watch stream stalls", 0, 1000);
	}
	size_t from = tl_ctl_nlines(a);
	int64_t t0 = sf_mono_ns();
	create_aw("during");
	tl_aw_wait_phase(&W, "during", "Suspended", 20000);
	double s = (double)(sf_mono_ns() - t0) / 1e9;
	cr_assert_geq(tl_ctl_wait_log(&K.loop, a,
	                              "watch made no progress; watching again on a fresh "
	                              "connection\",\"resource\":\"" SF_AW_RESOURCE "\"",
	                              from, 1000),
	              0, "reconciled without a watch restart: the stall was not exercised");
	/* within the bound, its tick (a quarter of it) and a relist */
	cr_assert_lt(s, (double)bound_ms / 1000 * 1.25 + 3.0, "caught up %.1f s after", s);
	for (int k = 0; k < i; k++) {
		char name[32];
		snprintf(name, sizeof(name), "probe-%d", k);
		tl_aw_wait_phase(&W, name, "Suspended", 10000);
	}
	cr_assert_eq(tl_ctl_count(a, "stopped leading", 0), 0, "the stall cost the leadership");
	sf_buf m = {0};
	cr_assert_eq(tl_ctl_http_get(tl_ctl_port(&K.loop, a, "metrics"), "/metrics", &m), 200);
	/* (the quiet pod watch restarts too with so short a bound) */
	const char *mr = m.data ? strstr(m.data, "\nsteadfast_watch_restarts_total ") : NULL;
	cr_assert(mr && atol(mr + strlen("\nsteadfast_watch_restarts_total ")) >= 1, "%s",
	          m.data ? m.data : "");
	sf_buf_free(&m);
	fprintf(stderr,
	        "stalled watch stream: an AppWrapper created during the stall reconciled %.2f s "
	        "later (watchdog bound %.1f s), still leader\n",
	        s, (double)bound_ms / 1000);
}
