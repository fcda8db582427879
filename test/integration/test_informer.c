/*
 * test_informer.c - informers against a real kube-apiserver.
 *
 * The informer runs on one client and loop (I), the test's writes go
 * through a second client on its own loop (W). Running only W's loop while
 * writing keeps the informer from seeing those changes until I's loop runs
 * again, which is how a test makes the cache stale on purpose:
 *
 *   - creates, updates and deletes reach the handlers in order, with the
 *     resourceVersions the writes returned, and a freshness wait on the last
 *     write's resourceVersion is released;
 *   - after changes the informer did not see, an etcd compaction and a
 *     watch restarted from an old resourceVersion, the store converges to
 *     a fresh LIST (the watch cache may replay the missed events); after a
 *     kube-apiserver restart on top (its watch cache then begins at the
 *     current revision) the server answers 410 and the re-list leaves the
 *     store equal to a fresh LIST, with a delete for every object that
 *     vanished meanwhile;
 *   - the initial LIST of 1,200 objects (created with at most 32 requests
 *     in flight) comes whole from the watch cache; a quorum relist of
 *     them arrives in pages.
 *
 * The informers sync with WatchList (the default) except the paged one.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/cache.h"
#include "steadfast/log.h"
#include "steadfast/time.h"
#include "tl.h"

/* the labels of this file's ConfigMaps */
#define INF_LABELS "\"app\":\"informer-test\""

static tl_kube I;            /* the informer's client and loop */
static tl_kube W;            /* the writer's */
static sf_informer *RUNNING; /* stopped by teardown if a test failed early */

static void setup(void)
{
	if (getenv("SF_DEBUG"))
		sf_log_set_level(SF_LOG_DEBUG);
	srand((unsigned)sf_mono_ns());
	sf_kube_client_opts wo = {.qps = -1};
	tl_kube_open(&I, NULL, NULL);
	tl_kube_open(&W, NULL, &wo);
}

static void stop_informer(sf_informer *inf);

static void teardown(void)
{
	if (RUNNING)
		stop_informer(RUNNING);
	tl_kube_close(&W);
	tl_kube_close(&I);
}

TestSuite(informer, .init = setup, .fini = teardown, .timeout = 300);

/* ---- recording handlers ---- */

#define MAX_EV 4096

typedef struct evlog {
	char ev[MAX_EV][96]; /* "ADD name rv" / "UPDATE name old->new" / "DELETE name rv" */
	int n;
	int synced;
	int overflow;
	int bad; /* handler calls that broke an invariant; first one in why */
	char why[160];
} evlog;

/* No cr_assert inside handlers: they run inside curl callbacks, which an
 * assertion would leave by a long jump. Problems are recorded and checked
 * by check_log afterwards. */
static char *ev_slot(evlog *l)
{
	if (l->n >= MAX_EV) {
		l->overflow++;
		return NULL;
	}
	return l->ev[l->n++];
}

static void ev_bad(evlog *l, const char *fmt, const char *a, const char *b)
{
	if (!l->bad++)
		snprintf(l->why, sizeof(l->why), fmt, a, b);
}

static void ev_add(void *ud, sf_obj *o)
{
	evlog *l = ud;
	char *e = ev_slot(l);
	if (e)
		snprintf(e, sizeof(l->ev[0]), "ADD %s %s", o->name, o->rv);
}

static void ev_update(void *ud, sf_obj *old, sf_obj *o)
{
	evlog *l = ud;
	if (strcmp(old->uid, o->uid) != 0)
		ev_bad(l, "update changed uid %s -> %s", old->uid, o->uid);
	if (sf_rv_cmp(old->rv, o->rv) >= 0)
		ev_bad(l, "update did not move forward: %s -> %s", old->rv, o->rv);
	char *e = ev_slot(l);
	if (e)
		snprintf(e, sizeof(l->ev[0]), "UPDATE %s %s->%s", o->name, old->rv, o->rv);
}

static void ev_delete(void *ud, sf_obj *o)
{
	evlog *l = ud;
	char *e = ev_slot(l);
	if (e)
		snprintf(e, sizeof(l->ev[0]), "DELETE %s %s", o->name, o->rv);
}

static void check_log(const evlog *l)
{
	cr_assert_eq(l->bad, 0, "%d bad handler calls, first: %s", l->bad, l->why);
	cr_assert_eq(l->overflow, 0, "event log overflow");
}

static void ev_synced(void *ud)
{
	((evlog *)ud)->synced++;
}

static const sf_informer_handler HANDLER = {ev_add, ev_update, ev_delete, ev_synced};

static int count_prefix(const evlog *l, int from, const char *prefix)
{
	int n = 0;
	for (int i = from; i < l->n; i++)
		n += strncmp(l->ev[i], prefix, strlen(prefix)) == 0;
	return n;
}

/* ---- helpers ---- */

/* page > 0 or < 0: LIST + WATCH (pages of that size, or unpaged); 0:
 * WatchList, the default. */
static sf_informer *start_informer(const char *ns, const char *selector, long page, evlog *l)
{
	sf_informer_opts o = {
	    .reflector = {.gvr = &SF_GVR_CONFIGMAPS,
	                  .ns = ns,
	                  .label_selector = selector,
	                  .page_size = page,
	                  .watch_list = page ? -1 : 0,
	                  .backoff_initial_ms = 100},
	    .namespace_index = 1,
	};
	sf_informer *inf = NULL;
	cr_assert_eq(sf_informer_new(&I.loop, I.client, &o, &inf), 0);
	cr_assert_eq(sf_informer_add_handler(inf, &HANDLER, l), 0);
	cr_assert_eq(sf_informer_start(inf), 0);
	RUNNING = inf;
	return inf;
}

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

static void stop_informer(sf_informer *inf)
{
	int stopped = 0;
	RUNNING = NULL;
	sf_informer_stop(inf, set_flag, &stopped);
	cr_assert_eq(tl_run_until(&I.loop, &stopped, 10000), 0, "informer did not stop");
	sf_informer_free(inf);
}

static int informer_synced(void *ud)
{
	return sf_informer_synced(ud);
}

static void wait_synced(sf_informer *inf)
{
	cr_assert_eq(tl_run_until_fn(&I.loop, informer_synced, inf, 60000), 0,
	             "informer did not sync");
}

typedef struct until_n {
	const evlog *l;
	int n;
} until_n;

static int have_events(void *ud)
{
	until_n *u = ud;
	return u->l->n >= u->n;
}

static void wait_events(const evlog *l, int n)
{
	until_n u = {l, n};
	cr_assert_eq(tl_run_until_fn(&I.loop, have_events, &u, 30000), 0, "saw %d of %d events",
	             l->n, n);
}

/* Writes through W; returns the object's new resourceVersion in rv. */

/* A fresh LIST through W, into a plain store. The client hands the same
 * pointer to the item and the done callback: tl_res comes first. */
typedef struct fresh_ctx {
	tl_res r;
	sf_store *s;
} fresh_ctx;

static int fresh_item(void *ud, sf_obj *o)
{
	fresh_ctx *c = ud;
	cr_assert_eq(sf_store_upsert(c->s, o), 0);
	sf_obj_unref(o);
	return 0;
}

static sf_store *fresh_list(const char *ns, const char *selector)
{
	fresh_ctx c;
	memset(&c, 0, sizeof(c));
	c.s = sf_store_new();
	cr_assert_not_null(c.s);
	sf_kube_list_opts lo = {.label_selector = selector};
	cr_assert_eq(
	    sf_kube_list(W.client, &SF_GVR_CONFIGMAPS, ns, &lo, fresh_item, tl_res_cb, &c, NULL),
	    0);
	tl_wait(&W.loop, &c.r, 60000);
	cr_assert_eq(c.r.http_status, 200, "list: %ld %s", c.r.http_status, c.r.errmsg);
	tl_res_clear(&c.r);
	return c.s;
}

typedef struct cmp_ctx {
	const sf_store *other;
	int mismatches;
	char first[256];
} cmp_ctx;

static int cmp_one(void *ud, sf_obj *o)
{
	cmp_ctx *c = ud;
	sf_obj *p = sf_store_get_ns(c->other, o->ns, o->name);
	if (!p || strcmp(p->uid, o->uid) != 0 || strcmp(p->rv, o->rv) != 0) {
		if (!c->mismatches++)
			snprintf(c->first, sizeof(c->first), "%s/%s@%s vs %s", o->ns, o->name,
			         o->rv, p ? p->rv : "(missing)");
	}
	return 0;
}

/* Same keys, UIDs and resourceVersions. */
static int stores_equal(const sf_store *a, const sf_store *b, char *why, size_t n)
{
	if (sf_store_len(a) != sf_store_len(b)) {
		snprintf(why, n, "%zu vs %zu objects", sf_store_len(a), sf_store_len(b));
		return 0;
	}
	cmp_ctx c = {b, 0, ""};
	sf_store_each(a, cmp_one, &c);
	snprintf(why, n, "%d mismatches, first %s", c.mismatches, c.first);
	return c.mismatches == 0;
}

static void compact_etcd(void)
{
	const char *dir = tl_env("STEADFAST_CLUSTER_DIR");
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "test/cluster/compact.sh '%s' >/dev/null", dir);
	cr_assert_eq(system(cmd), 0, "%s failed", cmd);
}

static void restart_apiserver(void)
{
	const char *dir = tl_env("STEADFAST_CLUSTER_DIR");
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "test/cluster/restart-apiserver.sh '%s' restart >/dev/null",
	         dir);
	cr_assert_eq(system(cmd), 0, "%s failed", cmd);
}

/* ---- tests ---- */

static void on_fresh(void *ud, int err)
{
	int *v = ud;
	v[0]++;
	v[1] = err;
}

Test(informer, sees_creates_updates_deletes_in_order)
{
	char ns[64];
	tl_namespace(&W, "it-inf", ns, sizeof(ns));
	evlog *l = calloc(1, sizeof(*l));
	sf_informer *inf = start_informer(ns, "app=informer-test", 0, l);
	wait_synced(inf);
	cr_assert_eq(l->synced, 1);
	cr_assert_eq(l->n, 0, "namespace should start empty: %s", l->ev[0]);

	char rv[8][32];
	tl_cm_write(&W, "POST", ns, "one", INF_LABELS, "1", rv[0], sizeof(rv[0]));
	tl_cm_write(&W, "POST", ns, "two", INF_LABELS, "1", rv[1], sizeof(rv[1]));
	tl_cm_write(&W, "PUT", ns, "one", INF_LABELS, "2", rv[2], sizeof(rv[2]));
	tl_cm_write(&W, "DELETE", ns, "two", INF_LABELS, NULL, rv[3], sizeof(rv[3]));
	tl_cm_write(&W, "PUT", ns, "one", INF_LABELS, "3", rv[4], sizeof(rv[4]));
	tl_cm_write(&W, "DELETE", ns, "one", INF_LABELS, NULL, rv[5], sizeof(rv[5]));
	tl_cm_write(&W, "POST", ns, "two", INF_LABELS, "again", rv[6], sizeof(rv[6]));

	/* the freshness wait for the last write is released by its event */
	int fresh[2] = {0, 99};
	cr_assert_eq(sf_informer_wait_rv(inf, rv[6], NULL, NULL, NULL), -EINVAL);
	cr_assert_eq(sf_informer_wait_rv(inf, rv[6], on_fresh, fresh, NULL), 0);

	wait_events(l, 7);
	char want[7][96];
	snprintf(want[0], 96, "ADD one %s", rv[0]);
	snprintf(want[1], 96, "ADD two %s", rv[1]);
	snprintf(want[2], 96, "UPDATE one %s->%s", rv[0], rv[2]);
	/* a delete hands over the last state the cache had */
	snprintf(want[3], 96, "DELETE two %s", rv[1]);
	snprintf(want[4], 96, "UPDATE one %s->%s", rv[2], rv[4]);
	snprintf(want[5], 96, "DELETE one %s", rv[4]);
	snprintf(want[6], 96, "ADD two %s", rv[6]);
	for (int i = 0; i < 7; i++)
		cr_assert_str_eq(l->ev[i], want[i], "event %d", i);
	cr_assert_eq(l->n, 7);
	cr_assert_eq(fresh[0], 1, "freshness wait for %s not released", rv[6]);
	cr_assert_eq(fresh[1], 0);

	cr_assert_geq(sf_rv_cmp(sf_informer_last_rv(inf), rv[6]), 0);
	sf_store *s = sf_informer_store(inf);
	cr_assert_eq(sf_store_len(s), 1);
	cr_assert_str_eq(sf_store_get_ns(s, ns, "two")->rv, rv[6]);
	cr_assert_eq(sf_store_index_count(s, SF_INDEX_NAMESPACE, ns), 1);
	sf_reflector_stats st;
	sf_reflector_stats_get(sf_informer_reflector(inf), &st);
	cr_assert_eq(st.events, 7);
	cr_assert_eq(st.lists, 1);
	cr_assert_eq(st.errors, 0);

	check_log(l);
	stop_informer(inf);
	tl_namespace_delete(&W, ns);
	free(l);
}

Test(informer, freshness_wait_released_by_a_later_write)
{
	char ns[64];
	tl_namespace(&W, "it-inf", ns, sizeof(ns));
	evlog *l = calloc(1, sizeof(*l));
	sf_informer *inf = start_informer(ns, "app=informer-test", 0, l);
	wait_synced(inf);

	char rv[32];
	tl_cm_write(&W, "POST", ns, "a", INF_LABELS, "1", rv, sizeof(rv));
	/* the informer has not run since the write: it cannot know rv yet */
	int res[2] = {0, 99};
	cr_assert_eq(sf_informer_wait_rv(inf, rv, on_fresh, res, NULL), 0);
	cr_assert_eq(tl_run_until(&I.loop, &res[0], 30000), 0, "wait for %s not released", rv);
	cr_assert_eq(res[1], 0);
	cr_assert_not_null(sf_store_get_ns(sf_informer_store(inf), ns, "a"),
	                   "released before the object reached the store");
	/* and a wait that cannot be met ends with the informer */
	int res2[2] = {0, 99};
	cr_assert_eq(sf_informer_wait_rv(inf, "99999999999", on_fresh, res2, NULL), 0);
	stop_informer(inf);
	cr_assert_eq(res2[0], 1);
	cr_assert_eq(res2[1], -ECANCELED);
	tl_namespace_delete(&W, ns);
	free(l);
}

static int store_matches(void *ud)
{
	void **v = ud;
	char why[256];
	return stores_equal(sf_informer_store(v[0]), v[1], why, sizeof(why));
}

static int relisted_since(void *ud)
{
	void **v = ud;
	sf_reflector_stats st;
	sf_reflector_stats_get(sf_informer_reflector(v[0]), &st);
	return st.lists > *(unsigned long *)v[1];
}

Test(informer, relist_after_410_matches_a_fresh_list)
{
	char ns[64];
	tl_namespace(&W, "it-inf", ns, sizeof(ns));
	for (int i = 0; i < 6; i++) {
		char name[16];
		snprintf(name, sizeof(name), "cm-%d", i);
		tl_cm_write(&W, "POST", ns, name, INF_LABELS, "v1", NULL, 0);
	}
	evlog *l = calloc(1, sizeof(*l));
	sf_informer *inf = start_informer(ns, "app=informer-test", 0, l);
	sf_reflector *refl = sf_informer_reflector(inf);
	wait_synced(inf);
	cr_assert_eq(sf_store_len(sf_informer_store(inf)), 6);
	char old_rv[32];
	snprintf(old_rv, sizeof(old_rv), "%s", sf_informer_last_rv(inf));

	/* Round 1: changes the informer does not see (its loop is idle). */
	int mark = l->n;
	tl_cm_write(&W, "DELETE", ns, "cm-0", INF_LABELS, NULL, NULL, 0);
	tl_cm_write(&W, "DELETE", ns, "cm-1", INF_LABELS, NULL, NULL, 0);
	tl_cm_write(&W, "PUT", ns, "cm-2", INF_LABELS, "v2", NULL, 0);
	tl_cm_write(&W, "POST", ns, "cm-6", INF_LABELS, "v1", NULL, 0);
	tl_cm_write(&W, "POST", ns, "cm-7", INF_LABELS, "v1", NULL, 0);
	compact_etcd();
	sf_reflector_stats before;
	sf_reflector_stats_get(refl, &before);
	/* Restart the watch from the list's resourceVersion, now compacted in
	 * etcd. With the apiserver's watch cache on, a version that recent
	 * may still be served from the cache (the missed events are replayed
	 * instead of a 410); either way the store must converge. */
	cr_assert_eq(sf_reflector_rewatch_from(refl, old_rv), 0);
	sf_store *want = fresh_list(ns, "app=informer-test");
	void *ctx[2] = {inf, want};
	cr_assert_eq(tl_run_until_fn(&I.loop, store_matches, ctx, 60000), 0,
	             "store did not converge after the compacted re-watch");
	cr_assert_eq(count_prefix(l, mark, "DELETE cm-0 "), 1);
	cr_assert_eq(count_prefix(l, mark, "DELETE cm-1 "), 1);
	cr_assert_eq(count_prefix(l, mark, "UPDATE cm-2 "), 1);
	cr_assert_eq(count_prefix(l, mark, "ADD cm-6 "), 1);
	cr_assert_eq(count_prefix(l, mark, "ADD cm-7 "), 1);
	sf_store_free(want);

	/* Round 2: more unseen changes, compaction, and a kube-apiserver
	 * restart (its watch cache then starts at the current revision), so
	 * that a watch from the version the informer last saw is answered
	 * with 410 by the watch cache and by etcd alike, and is repaired by a
	 * re-list. */
	snprintf(old_rv, sizeof(old_rv), "%s", sf_informer_last_rv(inf));
	mark = l->n;
	tl_cm_write(&W, "DELETE", ns, "cm-3", INF_LABELS, NULL, NULL, 0);
	tl_cm_write(&W, "PUT", ns, "cm-4", INF_LABELS, "v2", NULL, 0);
	tl_cm_write(&W, "POST", ns, "cm-8", INF_LABELS, "v1", NULL, 0);
	compact_etcd();
	restart_apiserver();
	sf_reflector_stats_get(refl, &before);
	cr_assert_eq(sf_reflector_rewatch_from(refl, old_rv), 0);
	unsigned long lists_before = before.lists;
	void *rctx[2] = {inf, &lists_before};
	cr_assert_eq(tl_run_until_fn(&I.loop, relisted_since, rctx, 60000), 0,
	             "no re-list after 410");
	want = fresh_list(ns, "app=informer-test");
	char why[256];
	ctx[1] = want;
	cr_assert_eq(tl_run_until_fn(&I.loop, store_matches, ctx, 30000), 0,
	             "store differs from a fresh LIST");
	cr_assert(stores_equal(sf_informer_store(inf), want, why, sizeof(why)), "%s", why);
	sf_reflector_stats after;
	sf_reflector_stats_get(refl, &after);
	cr_assert_geq(after.gone, before.gone + 1, "no 410 seen");
	cr_assert_geq(after.relists, before.relists + 1);
	cr_assert_eq(after.decode_errors, 0);
	cr_assert_eq(count_prefix(l, mark, "DELETE cm-3 "), 1,
	             "the vanished object was not deleted");
	cr_assert_eq(count_prefix(l, mark, "UPDATE cm-4 "), 1);
	cr_assert_eq(count_prefix(l, mark, "ADD cm-8 "), 1);
	cr_assert_eq(count_prefix(l, mark, "ADD cm-5 "), 0, "an unchanged object was re-added");
	cr_assert_eq(count_prefix(l, mark, "UPDATE cm-5 "), 0, "an unchanged object was updated");
	cr_assert_eq(l->synced, 1 + (int)(after.lists - 1));
	sf_store_free(want);

	/* the informer keeps working after the re-list */
	mark = l->n;
	char rv[32];
	tl_cm_write(&W, "PUT", ns, "cm-5", INF_LABELS, "v3", rv, sizeof(rv));
	wait_events(l, mark + 1);
	cr_assert_eq(count_prefix(l, mark, "UPDATE cm-5 "), 1);

	check_log(l);
	stop_informer(inf);
	tl_namespace_delete(&W, ns);
	free(l);
}

/* Creates n ConfigMaps with at most max_inflight requests at a time. */
typedef struct bulk {
	const char *ns;
	int total, next, inflight, done, failed, max_inflight;
	char last_err[256];
} bulk;

static void bulk_send(bulk *b);

static void bulk_cb(void *ud, const sf_kube_result *r)
{
	bulk *b = ud;
	b->inflight--;
	b->done++;
	if (r->http_status != 201) {
		char line[256];
		b->failed++;
		snprintf(b->last_err, sizeof(b->last_err), "%s",
		         sf_kube_result_str(r, line, sizeof(line)));
	}
	bulk_send(b);
}

static void bulk_send(bulk *b)
{
	while (b->inflight < b->max_inflight && b->next < b->total) {
		char body[256];
		snprintf(body, sizeof(body),
		         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
		         "\"bulk-%05d\",\"labels\":{\"app\":\"informer-bulk\"}},\"data\":{\"i\":\"%"
		         "d\"}}",
		         b->next, b->next);
		int rc =
		    sf_kube_create(W.client, &SF_GVR_CONFIGMAPS, b->ns, body, bulk_cb, b, NULL);
		cr_assert_eq(rc, 0);
		b->next++;
		b->inflight++;
	}
}

static int bulk_done(void *ud)
{
	bulk *b = ud;
	return b->done == b->total;
}

Test(informer, paged_initial_list_of_1200_objects)
{
	char ns[64];
	tl_namespace(&W, "it-inf", ns, sizeof(ns));
	bulk b = {.ns = ns, .total = 1200, .max_inflight = 32};
	bulk_send(&b);
	cr_assert_eq(tl_run_until_fn(&W.loop, bulk_done, &b, 180000), 0, "created %d of %d", b.done,
	             b.total);
	cr_assert_eq(b.failed, 0, "%d creates failed, last: %s", b.failed, b.last_err);

	evlog *l = calloc(1, sizeof(*l));
	sf_informer *inf = start_informer(ns, "app=informer-bulk", 500, l);
	wait_synced(inf);
	/* the first list is the watch cache's at whatever it holds
	 * (resourceVersion=0): the last creates may reach it a moment after
	 * their answers, and then come through the watch (a run listed 1195) */
	wait_events(l, 1200);
	sf_store *s = sf_informer_store(inf);
	cr_assert_eq(sf_store_len(s), 1200);
	cr_assert_eq(l->n, 1200);
	cr_assert_eq(count_prefix(l, 0, "ADD bulk-"), 1200);
	for (int i = 0; i < 1200; i += 97) {
		char name[32];
		snprintf(name, sizeof(name), "bulk-%05d", i);
		cr_assert_not_null(sf_store_get_ns(s, ns, name), "%s missing", name);
	}
	sf_reflector_stats st;
	sf_reflector_stats_get(sf_informer_reflector(inf), &st);
	/* the first list (resourceVersion=0) came whole from the watch
	 * cache, which ignores limit there; a quorum list comes in pages */
	cr_assert_eq(st.list_pages, 1, "the watch cache answered in %lu pages", st.list_pages);
	cr_assert_eq(st.lists, 1);
	unsigned long lists_before = st.lists;
	void *rctx[2] = {inf, &lists_before};
	cr_assert_eq(sf_reflector_relist(sf_informer_reflector(inf)), 0);
	cr_assert_eq(tl_run_until_fn(&I.loop, relisted_since, rctx, 60000), 0, "no relist");
	sf_reflector_stats_get(sf_informer_reflector(inf), &st);
	cr_assert_eq(st.list_pages, 1 + 3, "1200 objects in pages of 500: got %lu pages",
	             st.list_pages - 1);
	cr_assert_eq(st.quorum_lists, 1);
	cr_assert_eq(l->n, 1200, "the relist changed something");

	sf_store *want = fresh_list(ns, "app=informer-bulk");
	char why[256];
	cr_assert(stores_equal(s, want, why, sizeof(why)), "%s", why);
	sf_store_free(want);

	sf_store_stats ss;
	sf_store_stats_get(s, &ss);
	cr_assert_eq(ss.objects, 1200);
	cr_assert_gt(ss.object_bytes, 1200 * 100);
	cr_assert_lt(ss.overhead_bytes, ss.object_bytes, "index/map overhead above the JSON size");

	check_log(l);
	stop_informer(inf);
	tl_namespace_delete(&W, ns);
	free(l);
}
