/*
 * test_relist.c - what the informers ask the API server, on the real
 * control plane, read from its audit log (the query strings of their
 * LISTs and WATCHes):
 *
 *   - with WatchList (the default, on in kube-apiserver v1.37) an informer
 *     syncs from one watch with sendInitialEvents and no resourceVersion
 *     (a consistent read), makes no LIST, and sees later changes on the
 *     same stream;
 *   - a relist after a watch's 410 asks for the newest version seen with
 *     resourceVersionMatch=NotOlderThan (the watch cache may answer), as
 *     a LIST or as a WatchList;
 *   - the leader's freshness barrier lists without a resourceVersion (a
 *     quorum read, never the watch cache's past), asked after the moment
 *     it was armed for, in both modes;
 *   - against a kube-apiserver with the WatchList feature gate off
 *     (WATCH_LIST=false up.sh, a control plane of its own) the informer is
 *     refused (422), falls back to LIST + WATCH and syncs.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/barrier.h"
#include "steadfast/cache.h"
#include "steadfast/log.h"
#include "steadfast/time.h"
#include "tl.h"
#include "tl_audit.h"

static tl_kube I; /* the informer's client and loop */
static tl_kube W; /* the writer's */
static sf_informer *RUNNING;
static tl_kube *RUNNING_ON;

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

static void stop_informer(void)
{
	if (!RUNNING)
		return;
	int stopped = 0;
	sf_informer_stop(RUNNING, set_flag, &stopped);
	cr_assert_eq(tl_run_until(&RUNNING_ON->loop, &stopped, 10000), 0, "informer did not stop");
	sf_informer_free(RUNNING);
	RUNNING = NULL;
}

static void setup(void)
{
	if (getenv("SF_DEBUG"))
		sf_log_set_level(SF_LOG_DEBUG);
	sf_kube_client_opts wo = {.qps = -1};
	tl_kube_open(&I, NULL, NULL);
	tl_kube_open(&W, NULL, &wo);
}

static void teardown(void)
{
	stop_informer();
	tl_kube_close(&W);
	tl_kube_close(&I);
}

TestSuite(relist, .init = setup, .fini = teardown, .timeout = 240);

/* ---- the audit log ---- */

static int never(void *ud)
{
	(void)ud;
	return 0;
}

/* Waits (polling the file: no watch reports audit lines) until at least
 * `want` requests whose line holds needle (one per auditID, in order) are
 * first logged after mark m (a watch open at m ends with a line after it:
 * it is not counted); *out as tl_audit_select's. */
static size_t audit_wait(tl_kube *k, const tl_audit_mark *m, const char *needle, size_t want,
                         tl_audit_req **out)
{
	tl_audit_query q = {.text = needle, .first = 1};
	int64_t end = sf_mono_ns() + 20 * SF_NSEC_PER_SEC;
	size_t n;
	while ((n = tl_audit_select(m, &q, out)) < want && sf_mono_ns() < end) {
		free(*out);
		tl_run_until_fn(&k->loop, never, NULL, 100);
	}
	return n;
}

static void dump(const tl_audit_req *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "  %s %ld %s\n", r[i].verb, r[i].code, r[i].uri);
}

/* A list: a LIST, or a watch with sendInitialEvents (a WatchList). */
static int is_list(const tl_audit_req *r)
{
	return strcmp(r->verb, "list") == 0 ||
	       (strcmp(r->verb, "watch") == 0 && strstr(r->uri, "sendInitialEvents=true"));
}

/* ---- informers ---- */

static sf_informer *start_informer(tl_kube *k, const char *ns, int watch_list)
{
	sf_informer_opts o = {
	    .reflector = {.gvr = &SF_GVR_CONFIGMAPS,
	                  .ns = ns,
	                  .watch_list = watch_list,
	                  .backoff_initial_ms = 100},
	};
	sf_informer *inf = NULL;
	cr_assert_eq(sf_informer_new(&k->loop, k->client, &o, &inf), 0);
	cr_assert_eq(sf_informer_start(inf), 0);
	RUNNING = inf;
	RUNNING_ON = k;
	return inf;
}

static int informer_synced(void *ud)
{
	return sf_informer_synced(ud);
}

typedef struct until_obj {
	sf_informer *inf;
	const char *ns, *name, *rv; /* rv NULL: until it is gone */
} until_obj;

static int obj_at(void *ud)
{
	until_obj *u = ud;
	sf_obj *o = sf_store_get_ns(sf_informer_store(u->inf), u->ns, u->name);
	return u->rv ? o && strcmp(o->rv, u->rv) == 0 : o == NULL;
}

static void wait_obj(tl_kube *k, sf_informer *inf, const char *ns, const char *name, const char *rv)
{
	until_obj u = {inf, ns, name, rv};
	cr_assert_eq(tl_run_until_fn(&k->loop, obj_at, &u, 30000), 0, "%s/%s never %s%s", ns, name,
	             rv ? "at " : "gone", rv ? rv : "");
}

static sf_reflector_stats stats_of(sf_informer *inf)
{
	sf_reflector_stats st;
	sf_reflector_stats_get(sf_informer_reflector(inf), &st);
	return st;
}

/* ---- tests ---- */

Test(relist, watch_list_syncs_from_one_consistent_stream_and_sees_changes)
{
	char ns[64], needle[128];
	tl_namespace(&W, "it-wl", ns, sizeof(ns));
	snprintf(needle, sizeof(needle), "/namespaces/%s/configmaps?", ns);
	for (int i = 0; i < 3; i++) {
		char name[16];
		snprintf(name, sizeof(name), "cm-%d", i);
		tl_cm_write(&W, "POST", ns, name, NULL, "1", NULL, 0);
	}
	tl_audit_mark mark;
	tl_audit_mark_now(&mark);
	sf_informer *inf = start_informer(&I, ns, 0);
	cr_assert_eq(tl_run_until_fn(&I.loop, informer_synced, inf, 30000), 0, "not synced");
	cr_assert_eq(sf_store_len(sf_informer_store(inf)), 3);
	sf_reflector_stats st = stats_of(inf);
	cr_assert_eq(st.watch_lists, 1);
	cr_assert_eq(st.quorum_lists, 1);
	cr_assert_eq(st.list_pages, 0);
	cr_assert_eq(st.watch_list_fallbacks, 0);

	char rv[3][32];
	tl_cm_write(&W, "POST", ns, "cm-3", NULL, "1", rv[0], sizeof(rv[0]));
	tl_cm_write(&W, "PUT", ns, "cm-0", NULL, "2", rv[1], sizeof(rv[1]));
	tl_cm_write(&W, "DELETE", ns, "cm-1", NULL, NULL, NULL, 0);
	wait_obj(&I, inf, ns, "cm-3", rv[0]);
	wait_obj(&I, inf, ns, "cm-0", rv[1]);
	wait_obj(&I, inf, ns, "cm-1", NULL);
	st = stats_of(inf);
	cr_assert_eq(st.watches, 1, "the stream did not go on as the watch");
	cr_assert_eq(st.events, 3);

	tl_audit_req *r = NULL;
	size_t n = audit_wait(&I, &mark, needle, 1, &r);
	dump(r, n);
	cr_assert_eq(n, 1, "%zu requests for %s", n, needle);
	cr_assert_str_eq(r[0].verb, "watch");
	cr_assert(strstr(r[0].uri, "sendInitialEvents=true"), "%s", r[0].uri);
	cr_assert(strstr(r[0].uri, "resourceVersionMatch=NotOlderThan"), "%s", r[0].uri);
	cr_assert(strstr(r[0].uri, "allowWatchBookmarks=true"), "%s", r[0].uri);
	cr_assert_null(strstr(r[0].uri, "resourceVersion="), "not consistent: %s", r[0].uri);
	free(r);
	stop_informer();
	tl_namespace_delete(&W, ns);
}

/* After a kube-apiserver restart its watch cache begins at the current
 * revision: a watch from a version before it is answered 410 (the
 * informer's own re-watch may be, and one from an old version is, by
 * the test hook). Each relist asks for at least the newest version seen,
 * with resourceVersionMatch=NotOlderThan: not a quorum read. */
Test(relist, a_relist_after_a_watch_410_is_not_older_than_the_last_version)
{
	for (int mode = 0; mode < 2; mode++) {
		int wl = mode ? 0 : -1;
		char ns[64], needle[128], rv[32], old_rv[32];
		tl_namespace(&W, "it-relist", ns, sizeof(ns));
		snprintf(needle, sizeof(needle), "/namespaces/%s/configmaps?", ns);
		tl_cm_write(&W, "POST", ns, "a", NULL, "1", old_rv, sizeof(old_rv));
		tl_cm_write(&W, "POST", ns, "b", NULL, "1", NULL, 0);
		tl_cm_write(&W, "POST", ns, "c", NULL, "1", NULL, 0);
		sf_informer *inf = start_informer(&I, ns, wl);
		cr_assert_eq(tl_run_until_fn(&I.loop, informer_synced, inf, 30000), 0);
		tl_cm_write(&W, "POST", ns, "d", NULL, "1", rv, sizeof(rv));
		wait_obj(&I, inf, ns, "d", rv);
		long long last = atoll(sf_informer_last_rv(inf));
		sf_reflector_stats before = stats_of(inf);
		tl_audit_mark mark;
		tl_audit_mark_now(&mark);
		cr_assert_eq(tl_sh(NULL,
		                   "test/cluster/restart-apiserver.sh '%s' restart >/dev/null",
		                   tl_env("STEADFAST_CLUSTER_DIR")),
		             0);
		cr_assert_eq(sf_reflector_rewatch_from(sf_informer_reflector(inf), old_rv), 0);
		/* the relist has been made once a later write is seen */
		tl_cm_write(&W, "POST", ns, "e", NULL, "1", rv, sizeof(rv));
		wait_obj(&I, inf, ns, "e", rv);
		sf_reflector_stats after = stats_of(inf);
		cr_assert_geq(after.gone, before.gone + 1, "no 410 from the restarted server");
		cr_assert_geq(after.lists, before.lists + 1);
		cr_assert_eq(after.quorum_lists, before.quorum_lists, "a relist was a quorum read");
		tl_audit_req *r = NULL;
		size_t n = audit_wait(&I, &mark, needle, 2, &r);
		dump(r, n);
		int lists = 0;
		for (size_t i = 0; i < n; i++) {
			if (!is_list(&r[i]))
				continue;
			lists++;
			cr_assert_str_eq(r[i].verb, mode ? "watch" : "list");
			const char *q = strstr(r[i].uri, "resourceVersion=");
			cr_assert_not_null(q, "%s", r[i].uri);
			long long v = atoll(q + 16);
			cr_assert_geq(v, last, "%s: older than %lld", r[i].uri, last);
			cr_assert(strstr(r[i].uri, "&resourceVersionMatch=NotOlderThan"), "%s",
			          r[i].uri);
			cr_assert_null(strstr(r[i].uri, "limit="), "%s", r[i].uri);
		}
		cr_assert_geq(lists, 1, "no relist in the audit log");
		free(r);
		stop_informer();
		tl_namespace_delete(&W, ns);
	}
}

static void on_barrier(void *ud, int err)
{
	int *v = ud;
	v[0] = 1;
	v[1] = err;
}

/* What the leader's barrier asks for: a list without resourceVersion (a
 * quorum read), asked after the moment the barrier is for, even though
 * the informer holds a version the watch cache could serve. */
Test(relist, the_freshness_barrier_is_a_quorum_read_asked_after_its_moment)
{
	for (int mode = 0; mode < 2; mode++) {
		int wl = mode ? 0 : -1;
		char ns[64], needle[128], rv[32];
		tl_namespace(&W, "it-barrier", ns, sizeof(ns));
		snprintf(needle, sizeof(needle), "/namespaces/%s/configmaps?", ns);
		sf_informer *inf = start_informer(&I, ns, wl);
		cr_assert_eq(tl_run_until_fn(&I.loop, informer_synced, inf, 30000), 0);
		tl_cm_write(&W, "POST", ns, "a", NULL, "1", rv, sizeof(rv));
		wait_obj(&I, inf, ns, "a", rv);
		tl_audit_mark mark;
		tl_audit_mark_now(&mark);
		int64_t since = sf_mono_ns();
		sf_barrier *b;
		int done[2] = {0, 99};
		cr_assert_eq(sf_barrier_new(since, on_barrier, done, &b), 0);
		cr_assert_eq(sf_barrier_add(b, inf), 0);
		sf_barrier_arm(b);
		cr_assert_eq(tl_run_until(&I.loop, &done[0], 30000), 0, "barrier not passed");
		cr_assert_eq(done[1], 0);
		cr_assert_geq(sf_reflector_list_asked_ns(sf_informer_reflector(inf)), since);
		tl_audit_req *r = NULL;
		/* the list and (a LIST's) watch */
		size_t n = audit_wait(&I, &mark, needle, mode ? 1 : 2, &r);
		dump(r, n);
		int lists = 0;
		for (size_t i = 0; i < n; i++) {
			if (!is_list(&r[i]))
				continue;
			lists++;
			cr_assert_str_eq(r[i].verb, mode ? "watch" : "list");
			cr_assert_null(strstr(r[i].uri, "resourceVersion="),
			               "the barrier's list may come from the watch cache: %s",
			               r[i].uri);
		}
		cr_assert_eq(lists, 1, "%d lists for the barrier", lists);
		free(r);
		stop_informer();
		tl_namespace_delete(&W, ns);
	}
}

/* ---- a kube-apiserver with the WatchList feature gate off ---- */

static char NOWL_DIR[64];
static tl_kube K2;
static int k2_open;

static void nowl_fini(void)
{
	if (k2_open) {
		stop_informer();
		tl_kube_close(&K2);
	}
	if (NOWL_DIR[0])
		tl_sh(NULL, "test/cluster/down.sh '%s' >>'%s.log' 2>&1", NOWL_DIR, NOWL_DIR);
}

TestSuite(relist_nowl, .fini = nowl_fini, .timeout = 240);

Test(relist_nowl, a_refused_watch_list_falls_back_to_list_and_watch)
{
	snprintf(NOWL_DIR, sizeof(NOWL_DIR), "/tmp/steadfast-nowl.%d", (int)getpid());
	cr_assert_eq(tl_sh(NULL, "WATCH_LIST=false test/cluster/up.sh '%s' >'%s.log' 2>&1",
	                   NOWL_DIR, NOWL_DIR),
	             0, "WATCH_LIST=false up.sh failed: see %s.log", NOWL_DIR);
	char kc[128], audit[128], ns[64], needle[128], rv[32];
	snprintf(kc, sizeof(kc), "%s/admin.kubeconfig", NOWL_DIR);
	snprintf(audit, sizeof(audit), "%s/audit.log", NOWL_DIR);
	tl_kube_open(&K2, kc, NULL);
	k2_open = 1;
	tl_namespace(&K2, "it-nowl", ns, sizeof(ns));
	snprintf(needle, sizeof(needle), "/namespaces/%s/configmaps?", ns);
	tl_cm_write(&K2, "POST", ns, "a", NULL, "1", NULL, 0);
	tl_audit_mark mark;
	tl_audit_mark_end(&mark, audit);
	sf_informer *inf = start_informer(&K2, ns, 0);
	cr_assert_eq(tl_run_until_fn(&K2.loop, informer_synced, inf, 30000), 0, "not synced");
	cr_assert_eq(sf_store_len(sf_informer_store(inf)), 1);
	sf_reflector_stats st = stats_of(inf);
	cr_assert_eq(st.watch_list_fallbacks, 1);
	cr_assert_eq(st.watch_lists, 0);
	cr_assert_eq(st.backoffs, 0, "the fallback waited");
	/* and it watches */
	tl_cm_write(&K2, "POST", ns, "b", NULL, "1", rv, sizeof(rv));
	wait_obj(&K2, inf, ns, "b", rv);

	tl_audit_req *r = NULL;
	size_t n = audit_wait(&K2, &mark, needle, 3, &r);
	dump(r, n);
	cr_assert_geq(n, 3);
	cr_assert_str_eq(r[0].verb, "watch");
	cr_assert(strstr(r[0].uri, "sendInitialEvents=true"), "%s", r[0].uri);
	cr_assert_eq(r[0].code, 422, "the WatchList got %ld", r[0].code);
	cr_assert_str_eq(r[1].verb, "list");
	cr_assert(strstr(r[1].uri, "resourceVersion=0"), "%s", r[1].uri);
	cr_assert_str_eq(r[2].verb, "watch");
	cr_assert_null(strstr(r[2].uri, "sendInitialEvents"), "%s", r[2].uri);
	free(r);
}
