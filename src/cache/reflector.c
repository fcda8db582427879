/*
 * reflector.c - keeps an sf_store in step with one resource type (cache.h).
 *
 * A small state machine on the loop, after client-go's Reflector:
 *
 *   LIST    a LIST (limit, continue tokens) or a WatchList stream, into a
 *           store replace pass; its resourceVersion becomes the watch's
 *           starting point. A 410 while paging (expired continue token)
 *           restarts the list from its first page.
 *   WATCH   from the newest resourceVersion with allowWatchBookmarks and a
 *           timeoutSeconds drawn from [min, max); events go to the store.
 *           When the server ends the stream we watch again from the last
 *           resourceVersion seen (events or bookmarks).
 *   WAIT    a backoff timer before retrying a failed list or watch.
 *
 * Which version a list asks for (client-go's relistResourceVersion): a
 * list that a freshness wait is waiting for, or one after a list was told
 * its version is gone (410) or ahead of the server (504 "too large
 * resource version"), is a quorum read (no resourceVersion): only that
 * one reflects every write acknowledged before it was asked. Every other
 * list may be answered from the API server's watch cache, sparing etcd:
 * resourceVersion=0 for the first, resourceVersion=<newest seen> with
 * resourceVersionMatch=NotOlderThan for a relist, unpaged (a watch cache
 * serves whole lists; limit would send a legacy list to etcd) unless a
 * first list came back in pages (no watch cache there). Continue pages
 * carry only their token.
 *
 * WatchList (watch=true&sendInitialEvents=true&resourceVersionMatch=
 * NotOlderThan): the server streams the current objects as ADDED events,
 * then a BOOKMARK annotated k8s.io/initial-events-end, then carries on as
 * a watch. The initial events go into the replace pass and the list is
 * applied (deletes, synced, on_synced) at that bookmark; their versions
 * are not in order, so none is reported before it. Asked without a
 * resourceVersion the stream is a consistent read (the server takes the
 * current etcd revision), else not older than the version given. A
 * server that refuses it (400/422: the WatchList gate is off) or
 * ends the stream before the bookmark gets LIST + WATCH from then on.
 *
 * 410 Gone / Expired on a watch (HTTP status or an ERROR event with code
 * 410) means the resourceVersion is compacted away: the store is re-listed
 * with a replace pass, which emits deletes for objects that vanished
 * meanwhile.
 * Other failures back off exponentially (800 ms doubling to 30 s, plus up to
 * 100% jitter; the delay restarts at 800 ms after two calm minutes) and then
 * retry what failed. A malformed or truncated stream is logged as an error
 * and re-watched from the last good resourceVersion. Events older than the
 * stored version of the same object (a replay from an old resourceVersion
 * out of the server's watch cache) are skipped. A watch that ends
 * within a second without any event counts as a failure too, so a server
 * that closes watches at once cannot make us spin.
 *
 * The reflector never frees itself: handlers may stop it from inside an
 * event, in which case the stream is aborted by returning non-zero from the
 * event callback rather than by cancelling the call underneath itself.
 */
#include "steadfast/cache.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/log.h"
#include "steadfast/time.h"

#define LOGGER "cache.reflector"

typedef enum {
	ST_IDLE = 0, /* not started */
	ST_LISTING,
	ST_WATCHING,
	ST_WAITING, /* backoff timer armed */
	ST_STOPPING,
	ST_STOPPED,
} refl_state;

/* What to do when the in-flight call ends or the timer fires. */
typedef enum {
	NEXT_NONE = 0,
	NEXT_LIST,  /* (re)list from the first page */
	NEXT_WATCH, /* watch again now */
	NEXT_WATCH_BACKOFF,
} refl_next;

struct sf_reflector {
	uv_loop_t *loop;
	sf_kube_client *client;
	sf_store *store;
	const sf_gvr *gvr;
	char *ns, *label_selector, *field_selector, *name;
	long page_size;
	int watch_list; /* WL_* */
	long watch_min_s, watch_max_s;
	long backoff_initial_ms, backoff_max_ms, backoff_reset_ms;
	double jitter;
	int strip_managed_fields;
	sf_obj *(*transform)(void *ud, sf_obj *obj);
	void *transform_ud;
	void (*on_rv)(void *ud, const char *rv);
	void (*on_synced)(void *ud);
	void *ud;

	refl_state state;
	refl_next next;     /* requested while a call is in flight */
	refl_next wait_for; /* what the armed timer does */
	sf_kube_call *call;
	int in_stream_cb;  /* inside an item/event callback of call */
	uv_timer_t *timer; /* NULL until started; freed in its close callback */
	int closing;       /* handles/calls still to finish during stop */
	void (*stop_cb)(void *ud);
	void *stop_ud;

	char *cont;              /* continue token of the list in progress */
	int64_t list_begin_ns;   /* mono, first page of the list in progress asked */
	int64_t applied_list_ns; /* mono, the same of the last applied consistent list */
	int64_t fresh_want_ns;   /* a consistent list asked at or after this is wanted */
	int list_open;           /* a store replace pass is open */
	int list_consistent;     /* the list in progress asked no resourceVersion */
	int rv_unavailable;      /* a list's version was gone or too large: quorum next */
	int paged_result;        /* a resourceVersion=0 list came in pages */
	int streaming;           /* a WatchList before its end bookmark */
	int unavailable_event;   /* it ended with an ERROR event saying so */
	int synced;
	char *list_rv;    /* what the list in progress asked for ("" = quorum) */
	char *last_rv;    /* newest seen */
	char *watch_rv;   /* next watch starts here */
	char *rewatch_rv; /* test hook override for the next watch */
	int64_t watch_start_ns;
	int64_t progress_ns; /* mono, the watch's start or its last event/bookmark */
	long progress_timeout_ms;
	int64_t stall_at_ns; /* fault injection: mono, when the watch stalls; 0 = never */
	int stalled;         /* fault injection: the watch is stalled now */
	uv_timer_t *wdog;    /* the progress watchdog; freed in its close callback */
	int next_fresh;      /* the next watch goes on a new connection */
	unsigned long watch_events;
	unsigned gone_streak; /* 410s without a successful watch in between */

	long backoff_cur_ms;
	int64_t last_failure_ns;
	uint64_t rng;

	/* fault injection: watch events waiting to be applied */
	long delay_max_ms, delay_min_ms;
	int coalesce;
	long stall_after_ms; /* fault injection (see sf_reflector_opts) */
	struct delayed *dq_head, *dq_tail;
	int64_t dq_last_due_ms;
	uv_timer_t *dtimer;

	sf_reflector_stats stats;
};

/* watch_list */
enum { WL_OFF = 0, WL_TRY };

static void list_start(sf_reflector *r);
static void watch_start(sf_reflector *r);
static void interrupt(sf_reflector *r, refl_next next);

typedef struct delayed {
	struct delayed *next;
	sf_watch_type type;
	sf_obj *obj;
	int64_t due_ms;
} delayed;

static void dq_drop(sf_reflector *r)
{
	while (r->dq_head) {
		delayed *d = r->dq_head;
		r->dq_head = d->next;
		sf_obj_unref(d->obj);
		free(d);
	}
	r->dq_tail = NULL;
	if (r->dtimer)
		uv_timer_stop(r->dtimer);
}

/* ---- helpers ---- */

static int set_str(char **dst, const char *src)
{
	char *c = strdup(src ? src : "");
	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

static uint64_t rng_next(sf_reflector *r)
{
	/* xorshift64* */
	uint64_t x = r->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static double rng_unit(sf_reflector *r)
{
	return (double)(rng_next(r) >> 11) / (double)(1ULL << 53);
}

static void advance_rv(sf_reflector *r, const char *rv)
{
	int ord;
	if (!rv || !*rv)
		return;
	/* not comparable (opaque form): the newest seen is the latest */
	if (r->last_rv && r->last_rv[0] && sf_rv_order(rv, r->last_rv, &ord) == 0 && ord <= 0)
		return;
	if (r->last_rv && strcmp(rv, r->last_rv) == 0)
		return;
	if (set_str(&r->last_rv, rv))
		return;
	if (r->on_rv)
		r->on_rv(r->ud, r->last_rv);
}

static const char *num(char buf[24], long long v)
{
	return sf_log_int(buf, v);
}

static int stopping(const sf_reflector *r)
{
	return r->state == ST_STOPPING || r->state == ST_STOPPED;
}

/* ---- stop ---- */

static void maybe_stopped(sf_reflector *r)
{
	if (r->state != ST_STOPPING || r->closing)
		return;
	r->state = ST_STOPPED;
	sf_log_debug(LOGGER, "stopped", "resource", r->name, NULL);
	if (r->stop_cb)
		r->stop_cb(r->stop_ud);
}

static void on_timer_closed(uv_handle_t *h)
{
	sf_reflector *r = h->data;
	free(h);
	r->closing--;
	maybe_stopped(r);
}

void sf_reflector_stop(sf_reflector *r, void (*cb)(void *ud), void *ud)
{
	if (stopping(r)) {
		/* Already stopping on its own (the client was closed): take
		 * over the callback, or run it if everything is closed. */
		if (cb && !r->stop_cb) {
			if (r->state == ST_STOPPED) {
				cb(ud);
				return;
			}
			r->stop_cb = cb;
			r->stop_ud = ud;
		}
		return;
	}
	refl_state was = r->state;
	r->state = ST_STOPPING;
	r->stop_cb = cb;
	r->stop_ud = ud;
	if (r->list_open) {
		sf_store_replace_abort(r->store);
		r->list_open = 0;
	}
	if (r->timer) {
		uv_timer_stop(r->timer);
		r->closing++;
		uv_close((uv_handle_t *)r->timer, on_timer_closed);
		r->timer = NULL;
	}
	dq_drop(r);
	if (r->dtimer) {
		r->closing++;
		uv_close((uv_handle_t *)r->dtimer, on_timer_closed);
		r->dtimer = NULL;
	}
	if (r->wdog) {
		r->closing++;
		uv_close((uv_handle_t *)r->wdog, on_timer_closed);
		r->wdog = NULL;
	}
	if (r->call) {
		/* Its callback ends the call; from inside a stream callback the
		 * non-zero return aborts it instead. */
		r->closing++;
		if (!r->in_stream_cb)
			sf_kube_call_cancel(r->call);
	}
	if (was == ST_IDLE && !r->closing) {
		/* never started: nothing to wait for, but cb still runs once */
		r->state = ST_STOPPED;
		if (cb)
			cb(ud);
		return;
	}
	maybe_stopped(r);
}

/* The client was closed under a running reflector: retrying cannot help,
 * so stop (a later sf_reflector_stop still gets its callback). */
static void client_gone(sf_reflector *r)
{
	r->call = NULL;
	r->stats.errors++;
	sf_log_error(LOGGER, "client closed; reflector stops", "resource", r->name, NULL);
	sf_reflector_stop(r, NULL, NULL);
}

/* ---- backoff ---- */

static void on_timer(uv_timer_t *t)
{
	sf_reflector *r = t->data;
	if (r->state != ST_WAITING)
		return;
	refl_next what = r->wait_for;
	r->wait_for = NEXT_NONE;
	if (what == NEXT_LIST)
		list_start(r);
	else
		watch_start(r);
}

static void arm(sf_reflector *r, refl_next what, uint64_t delay_ms)
{
	r->state = ST_WAITING;
	r->wait_for = what;
	uv_timer_start(r->timer, on_timer, delay_ms, 0);
}

/* Schedules `what` after the next backoff delay. */
static void backoff(sf_reflector *r, refl_next what)
{
	int64_t now = sf_mono_ns();
	if (!r->backoff_cur_ms ||
	    (r->last_failure_ns &&
	     now - r->last_failure_ns > r->backoff_reset_ms * SF_NSEC_PER_MSEC))
		r->backoff_cur_ms = r->backoff_initial_ms;
	r->last_failure_ns = now;
	double d = (double)r->backoff_cur_ms;
	if (r->jitter > 0)
		d += rng_unit(r) * r->jitter * d;
	r->backoff_cur_ms =
	    r->backoff_cur_ms * 2 > r->backoff_max_ms ? r->backoff_max_ms : r->backoff_cur_ms * 2;
	r->stats.backoffs++;
	char b1[24];
	sf_log_debug(LOGGER, "retrying after backoff", "resource", r->name, "action",
	             what == NEXT_LIST ? "list" : "watch", "delayMs", num(b1, (long long)d), NULL);
	arm(r, what, (uint64_t)d);
}

static void result_error(sf_reflector *r, const char *what, const sf_kube_result *res)
{
	char line[512];
	r->stats.errors++;
	sf_log_error(LOGGER, what, "resource", r->name, "error",
	             sf_kube_result_str(res, line, sizeof(line)), NULL);
}

/* ---- list ---- */

static int on_list_item(void *ud, sf_obj *item)
{
	sf_reflector *r = ud;
	if (stopping(r) || !r->list_open) {
		sf_obj_unref(item);
		return 1;
	}
	if (r->strip_managed_fields)
		item = sf_obj_strip_managed_fields(item);
	if (r->transform)
		item = r->transform(r->transform_ud, item);
	r->in_stream_cb = 1;
	int rc = sf_store_replace_item(r->store, item);
	r->in_stream_cb = 0;
	if (rc) {
		char b[24];
		sf_log_error(LOGGER, "cannot store listed object", "resource", r->name, "namespace",
		             item->ns, "name", item->name, "errno", num(b, rc), NULL);
	}
	sf_obj_unref(item);
	return stopping(r) || r->next != NEXT_NONE;
}

/* A Status (an HTTP error body or an ERROR event) saying that the
 * resourceVersion asked for is not there: 410 Gone/Expired, or ahead of
 * what the server has (client-go's isTooLargeResourceVersionError: a 504
 * with cause ResourceVersionTooLarge, or older servers' message). */
static int status_rv_unavailable(sf_jv st)
{
	int64_t code = 0;
	sf_jv_int64(sf_jv_get(st, "code"), &code);
	if (code == 410 || sf_jv_streq(sf_jv_get(st, "reason"), "Expired") ||
	    sf_jv_streq(sf_jv_get(st, "reason"), "Gone"))
		return 1;
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(st, "details.causes"));
	sf_jv k, c;
	while (sf_jv_next(&it, &k, &c))
		if (sf_jv_streq(sf_jv_get(c, "reason"), "ResourceVersionTooLarge"))
			return 1;
	char msg[256] = "";
	sf_jv_str(sf_jv_get(st, "message"), msg, sizeof(msg));
	return code == 504 && strstr(msg, "Too large resource version") != NULL;
}

static int result_rv_unavailable(const sf_kube_result *res)
{
	if (res->err)
		return 0;
	if (sf_kube_is_expired(res))
		return 1;
	if (res->http_status != 504 || !res->body_len)
		return 0;
	/* the body is whatever answered (a proxy's text, too): validated first */
	char err[64];
	sf_obj *st = sf_obj_parse(res->body, res->body_len, err, sizeof(err));
	int yes = st && status_rv_unavailable(sf_obj_root(st));
	sf_obj_unref(st);
	return yes;
}

/* The resourceVersion the next list asks for ("" = a quorum read). */
static const char *choose_list_rv(const sf_reflector *r)
{
	if (r->rv_unavailable || r->fresh_want_ns > r->applied_list_ns)
		return "";
	if (!r->last_rv[0])
		/* a WatchList has no "any version": client-go streams from "" */
		return r->watch_list == WL_TRY ? "" : "0";
	return r->last_rv;
}

static void list_finish(sf_reflector *r, const char *rv)
{
	size_t deleted = sf_store_replace_end(r->store);
	int stream = r->streaming;
	r->list_open = 0;
	r->streaming = 0;
	r->rv_unavailable = 0;
	r->stats.lists++;
	r->stats.deleted_on_relist += deleted;
	if (stream)
		r->stats.watch_lists++;
	if (r->list_consistent) {
		r->stats.quorum_lists++;
		r->applied_list_ns = r->list_begin_ns;
	}
	set_str(&r->watch_rv, rv);
	r->synced = 1;
	if (stream)
		r->state = ST_WATCHING; /* the stream goes on as the watch */
	char b1[24], b2[24];
	sf_log_info(LOGGER, "list applied", "resource", r->name, "resourceVersion", rv, "objects",
	            num(b1, (long long)sf_store_len(r->store)), "deleted",
	            num(b2, (long long)deleted), "via", stream ? "watch-list" : "list",
	            "consistent", r->list_consistent ? "true" : "false", NULL);
	advance_rv(r, rv);
	if (stopping(r))
		return;
	if (r->on_synced)
		r->on_synced(r->ud);
	if (stopping(r))
		return;
	int again = r->next == NEXT_LIST || r->fresh_want_ns > r->applied_list_ns;
	if (stream) {
		/* inside the stream's event callback: the stream ends first,
		 * and on_watch_done lists (and counts the relist) */
		if (again)
			r->next = NEXT_LIST;
		return;
	}
	if (again) {
		/* a relist asked for during on_synced, or a list newer than
		 * this one (sf_reflector_want_fresh: counted here, as the
		 * forced relists are where they are asked for) */
		if (r->next != NEXT_LIST)
			r->stats.relists++;
		r->next = NEXT_NONE;
		list_start(r);
		return;
	}
	r->next = NEXT_NONE;
	watch_start(r);
}

/* Ends a list pass that will not be applied. */
static void list_abandon(sf_reflector *r)
{
	free(r->cont);
	r->cont = NULL;
	r->streaming = 0;
	if (r->list_open) {
		sf_store_replace_abort(r->store);
		r->list_open = 0;
	}
}

/* A list's version was not there (410, too large): a quorum list at
 * once, with backoff if that keeps happening. */
static void list_unavailable(sf_reflector *r, const char *what, const char *msg)
{
	r->stats.gone++;
	r->rv_unavailable = 1;
	sf_log_info(LOGGER, what, "resource", r->name, "resourceVersion", r->list_rv, "message",
	            msg ? msg : "", NULL);
	if (r->list_rv[0])
		list_start(r); /* the quorum fallback: once per failed version */
	else if (++r->gone_streak > 1)
		backoff(r, NEXT_LIST);
	else
		list_start(r);
}

static void on_list_done(void *ud, const sf_kube_result *res)
{
	sf_reflector *r = ud;
	r->call = NULL;
	if (stopping(r)) {
		r->closing--;
		maybe_stopped(r);
		return;
	}
	if (r->next == NEXT_LIST) {
		/* a relist was asked for while listing: start over */
		r->next = NEXT_NONE;
		free(r->cont);
		r->cont = NULL;
		list_start(r);
		return;
	}
	if (sf_kube_ok(res) && !res->err) {
		r->stats.list_pages++;
		if (res->list_continue && *res->list_continue) {
			if (strcmp(r->list_rv, "0") == 0)
				r->paged_result = 1; /* served by etcd: keep paging */
			if (set_str(&r->cont, res->list_continue))
				goto fail_local;
			list_start(r);
			return;
		}
		free(r->cont);
		r->cont = NULL;
		list_finish(r, res->list_rv ? res->list_rv : "");
		return;
	}
	list_abandon(r);
	if (result_rv_unavailable(res)) {
		/* the version asked for, or the continue token's snapshot, is
		 * gone (or not there yet): a quorum list from the first page */
		list_unavailable(r, "list resourceVersion unavailable, listing from etcd",
		                 res->errmsg);
		return;
	}
	if (res->err == -EBADMSG || res->err == -E2BIG)
		r->stats.decode_errors++;
	result_error(r, "list failed", res);
	backoff(r, NEXT_LIST);
	return;
fail_local:
	list_abandon(r);
	r->stats.errors++;
	backoff(r, NEXT_LIST);
}

static void stream_start(sf_reflector *r);

static void list_start(sf_reflector *r)
{
	if (!r->cont) {
		/* first page: a new replace pass (late events of the old watch
		 * would only take the store backwards) */
		r->list_begin_ns = sf_mono_ns();
		dq_drop(r);
		sf_store_replace_begin(r->store);
		r->list_open = 1;
		if (set_str(&r->list_rv, choose_list_rv(r))) {
			list_abandon(r);
			r->stats.errors++;
			backoff(r, NEXT_LIST);
			return;
		}
		r->list_consistent = !r->list_rv[0];
		if (r->watch_list == WL_TRY) {
			stream_start(r);
			return;
		}
	}
	/* Continue pages carry only their token. A list from a watch cache
	 * is unpaged (resourceVersion=0 ignores limit there; with a version
	 * and a limit a legacy server goes to etcd), unless a first list came
	 * in pages: then there is no watch cache to spare. */
	int from_cache = r->list_rv[0] && strcmp(r->list_rv, "0") != 0;
	int paged = r->page_size > 0 && (r->cont || !from_cache || r->paged_result);
	sf_kube_list_opts o = {
	    .label_selector = r->label_selector,
	    .field_selector = r->field_selector,
	    .limit = paged ? r->page_size : 0,
	    .continue_token = r->cont,
	    .resource_version = r->cont ? "" : r->list_rv,
	    .resource_version_match = !r->cont && from_cache ? "NotOlderThan" : NULL,
	};
	r->state = ST_LISTING;
	int rc =
	    sf_kube_list(r->client, r->gvr, r->ns, &o, on_list_item, on_list_done, r, &r->call);
	if (rc == -ESHUTDOWN) {
		client_gone(r);
		return;
	}
	if (rc) {
		char b[24];
		r->call = NULL;
		r->stats.errors++;
		sf_log_error(LOGGER, "cannot start list", "resource", r->name, "errno", num(b, rc),
		             NULL);
		list_abandon(r);
		backoff(r, NEXT_LIST);
	}
}

/* ---- watch ---- */

static void watch_error_event(sf_reflector *r, sf_obj *st)
{
	sf_jv root = sf_obj_root(st);
	int64_t code = 0;
	sf_jv_int64(sf_jv_get(root, "code"), &code);
	char reason[64] = "", msg[256] = "";
	sf_jv_str(sf_jv_get(root, "reason"), reason, sizeof(reason));
	sf_jv_str(sf_jv_get(root, "message"), msg, sizeof(msg));
	char b[24];
	if (r->streaming && status_rv_unavailable(root)) {
		/* a WatchList's version is gone or too large: a consistent
		 * stream next (on_watch_done) */
		r->unavailable_event = 1;
		r->next = NEXT_LIST;
		return;
	}
	if (code == 410 || strcmp(reason, "Expired") == 0 || strcmp(reason, "Gone") == 0) {
		/* client-go lists from the last version seen then: a list
		 * not older than it needs no history */
		r->stats.gone++;
		r->gone_streak++;
		sf_log_info(LOGGER, "watch expired, listing again", "resource", r->name,
		            "resourceVersion", r->watch_rv, "message", msg, NULL);
		r->next = NEXT_LIST;
		return;
	}
	r->stats.errors++;
	sf_log_error(LOGGER, "watch error event", "resource", r->name, "code", num(b, code),
	             "reason", reason, "message", msg, NULL);
	r->next = NEXT_WATCH_BACKOFF;
}

/* A watch restarted from an old resourceVersion may be answered from the
 * API server's watch cache with a replay of history. An event carrying an
 * older version of an object the store already holds newer would move the
 * cache backwards; it is skipped (the replay catches up with the store). */
static int is_stale(const sf_reflector *r, const sf_obj *obj)
{
	const sf_obj *cur = sf_store_get_ns(r->store, obj->ns, obj->name);
	int ord;
	/* versions that cannot be ordered are never taken for stale */
	return cur && cur->uid[0] && strcmp(cur->uid, obj->uid) == 0 &&
	       sf_rv_order(obj->rv, cur->rv, &ord) == 0 && ord < 0;
}

static void apply_delete(sf_reflector *r, sf_obj *obj)
{
	sf_obj *cur = sf_store_get_ns(r->store, obj->ns, obj->name);
	if (!cur)
		return; /* unknown: nothing to do */
	if (cur->uid[0] && obj->uid[0] && strcmp(cur->uid, obj->uid) != 0)
		return; /* a newer object of the same name */
	sf_store_delete(r->store, obj);
}

/* A successful watch event: the watch works and its RV is the new start. */
static void note_rv(sf_reflector *r, const char *rv)
{
	r->gone_streak = 0;
	if (!rv || !*rv)
		return;
	set_str(&r->watch_rv, rv);
	advance_rv(r, rv);
}

/* Applies one ADDED/MODIFIED/DELETED/BOOKMARK event to the store. */
static void apply_event(sf_reflector *r, sf_watch_type type, sf_obj *obj)
{
	int rc;
	char b[24];
	switch (type) {
	case SF_WATCH_ADDED:
	case SF_WATCH_MODIFIED:
		if (is_stale(r, obj)) {
			r->stats.stale_events++;
			note_rv(r, obj->rv);
			break;
		}
		r->stats.events++;
		rc = sf_store_upsert(r->store, obj);
		if (rc)
			sf_log_error(LOGGER, "cannot store object", "resource", r->name,
			             "namespace", obj->ns, "name", obj->name, "errno", num(b, rc),
			             NULL);
		note_rv(r, obj->rv);
		break;
	case SF_WATCH_DELETED:
		r->stats.events++;
		apply_delete(r, obj);
		note_rv(r, obj->rv);
		break;
	case SF_WATCH_BOOKMARK:
		r->stats.bookmarks++;
		note_rv(r, obj->rv);
		break;
	case SF_WATCH_ERROR: break;
	}
}

static void on_dtimer(uv_timer_t *t)
{
	sf_reflector *r = t->data;
	int64_t now = sf_mono_ns() / SF_NSEC_PER_MSEC;
	while (r->dq_head && r->dq_head->due_ms <= now && !stopping(r)) {
		delayed *d = r->dq_head;
		r->dq_head = d->next;
		if (!r->dq_head)
			r->dq_tail = NULL;
		apply_event(r, d->type, d->obj);
		sf_obj_unref(d->obj);
		free(d);
	}
	if (r->dq_head && r->dtimer)
		uv_timer_start(r->dtimer, on_dtimer, (uint64_t)(r->dq_head->due_ms - now), 0);
}

/* Fault injection: queue the event to be applied later. 0, or -ENOMEM
 * (then it is applied now). */
static int delay_event(sf_reflector *r, sf_watch_type type, sf_obj *obj)
{
	if (r->coalesce && type != SF_WATCH_BOOKMARK) {
		/* a newer state of an object still queued replaces it: the
		 * states in between are never seen */
		for (delayed *q = r->dq_head; q; q = q->next) {
			if (q->type == SF_WATCH_BOOKMARK || strcmp(q->obj->ns, obj->ns) != 0 ||
			    strcmp(q->obj->name, obj->name) != 0)
				continue;
			sf_obj_unref(q->obj);
			q->obj = sf_obj_ref(obj);
			q->type = type;
			r->stats.coalesced++;
			return 0;
		}
	}
	delayed *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	int64_t now = sf_mono_ns() / SF_NSEC_PER_MSEC;
	int64_t due = now + r->delay_min_ms +
	              (int64_t)(rng_unit(r) * (double)(r->delay_max_ms - r->delay_min_ms));
	if (due < r->dq_last_due_ms)
		due = r->dq_last_due_ms; /* keep the order */
	r->dq_last_due_ms = due;
	d->type = type;
	d->obj = sf_obj_ref(obj);
	d->due_ms = due;
	if (r->dq_tail)
		r->dq_tail->next = d;
	else
		r->dq_head = d;
	r->dq_tail = d;
	if (r->dq_head == d)
		uv_timer_start(r->dtimer, on_dtimer, (uint64_t)(due - now), 0);
	return 0;
}

/* The BOOKMARK that ends a WatchList's initial events. */
static int initial_events_end(const sf_obj *obj)
{
	sf_jv a = sf_jv_path(sf_obj_root(obj), "metadata.annotations");
	return sf_jv_streq(sf_jv_get(a, "k8s.io/initial-events-end"), "true");
}

/* An event of a WatchList before its end bookmark: part of the list. */
static void stream_event(sf_reflector *r, sf_watch_type type, sf_obj *obj)
{
	int rc;
	char b[24];
	switch (type) {
	case SF_WATCH_ADDED:
	case SF_WATCH_MODIFIED:
		rc = sf_store_replace_item(r->store, obj);
		if (rc)
			sf_log_error(LOGGER, "cannot store listed object", "resource", r->name,
			             "namespace", obj->ns, "name", obj->name, "errno", num(b, rc),
			             NULL);
		break;
	case SF_WATCH_DELETED: apply_delete(r, obj); break;
	case SF_WATCH_BOOKMARK:
		/* other bookmarks say nothing yet: the versions of the
		 * initial events are not in order */
		if (initial_events_end(obj)) {
			r->gone_streak = 0;
			list_finish(r, obj->rv);
		}
		break;
	case SF_WATCH_ERROR: break;
	}
}

static int on_watch_event(void *ud, sf_watch_type type, sf_obj *obj)
{
	sf_reflector *r = ud;
	if (stopping(r) || r->next != NEXT_NONE) {
		sf_obj_unref(obj);
		return 1;
	}
	if (r->stall_at_ns && type != SF_WATCH_ERROR && sf_mono_ns() >= r->stall_at_ns) {
		if (!r->stalled)
			sf_log_warn(LOGGER, "fault injection: the watch stream stalls", "resource",
			            r->name, NULL);
		r->stalled = 1;
		sf_obj_unref(obj);
		return 0;
	}
	r->progress_ns = sf_mono_ns();
	if (type != SF_WATCH_BOOKMARK && type != SF_WATCH_ERROR) {
		if (r->strip_managed_fields)
			obj = sf_obj_strip_managed_fields(obj);
		if (r->transform)
			obj = r->transform(r->transform_ud, obj);
	}
	r->in_stream_cb = 1;
	if (type == SF_WATCH_ERROR) {
		watch_error_event(r, obj);
	} else if (r->streaming) {
		r->watch_events++;
		stream_event(r, type, obj);
	} else {
		r->watch_events++;
		if (!r->dtimer || delay_event(r, type, obj) != 0)
			apply_event(r, type, obj);
	}
	r->in_stream_cb = 0;
	sf_obj_unref(obj);
	return stopping(r) || r->next != NEXT_NONE;
}

/* LIST + WATCH from now on. */
static void watch_list_off(sf_reflector *r, const char *why, const sf_kube_result *res)
{
	char line[512];
	r->watch_list = WL_OFF;
	r->stats.watch_list_fallbacks++;
	sf_log_info(LOGGER, "WatchList not available; using LIST and WATCH", "resource", r->name,
	            "reason", why, "error", res ? sf_kube_result_str(res, line, sizeof(line)) : "",
	            NULL);
}

/* A WatchList ended before its end bookmark. */
static void stream_done(sf_reflector *r, const sf_kube_result *res, refl_next next)
{
	int unavailable = r->unavailable_event;
	r->unavailable_event = 0;
	list_abandon(r);
	if (unavailable || result_rv_unavailable(res)) {
		list_unavailable(r, "watch-list resourceVersion unavailable, streaming from etcd",
		                 res->errmsg);
		return;
	}
	if (next == NEXT_LIST || next == NEXT_WATCH) {
		/* a relist asked for, or the watchdog (on a fresh connection) */
		list_start(r);
		return;
	}
	if (next == NEXT_WATCH_BACKOFF) { /* an ERROR event */
		backoff(r, NEXT_LIST);
		return;
	}
	if (!res->err && sf_kube_ok(res)) {
		watch_list_off(r, "the stream ended before its initial-events-end bookmark", NULL);
		list_start(r);
		return;
	}
	if (!res->err && (res->http_status == 400 || res->http_status == 422)) {
		/* the parameters refused: the WatchList feature gate is off
		 * (422 Invalid, "sendInitialEvents is forbidden"), or an older
		 * server; anything else (403, 404 of a CRD not served yet, 5xx)
		 * a LIST would meet as well: retried */
		watch_list_off(r, "refused by the server", res);
		list_start(r);
		return;
	}
	if (res->err == -EBADMSG || res->err == -E2BIG)
		r->stats.decode_errors++;
	result_error(r, "watch-list failed", res);
	backoff(r, NEXT_LIST);
}

static void on_watch_done(void *ud, const sf_kube_result *res)
{
	sf_reflector *r = ud;
	r->call = NULL;
	if (stopping(r)) {
		r->closing--;
		maybe_stopped(r);
		return;
	}
	refl_next next = r->next;
	r->next = NEXT_NONE;
	if (r->streaming) {
		stream_done(r, res, next);
		return;
	}
	int64_t lasted_ns = sf_mono_ns() - r->watch_start_ns;
	char b1[24], b2[24];
	if (next == NEXT_LIST) {
		r->stats.relists++;
		/* 410 twice in a row without a working watch: back off */
		if (r->gone_streak > 1)
			backoff(r, NEXT_LIST);
		else
			list_start(r);
		return;
	}
	if (next == NEXT_WATCH) {
		watch_start(r);
		return;
	}
	if (next == NEXT_WATCH_BACKOFF) {
		backoff(r, NEXT_WATCH);
		return;
	}
	if (!res->err && sf_kube_ok(res)) {
		if (lasted_ns < SF_NSEC_PER_SEC && r->watch_events == 0) {
			r->stats.errors++;
			sf_log_warn(LOGGER, "very short watch", "resource", r->name,
			            "resourceVersion", r->watch_rv, "ms",
			            num(b1, lasted_ns / SF_NSEC_PER_MSEC), NULL);
			backoff(r, NEXT_WATCH);
			return;
		}
		r->gone_streak = 0;
		sf_log_debug(LOGGER, "watch ended", "resource", r->name, "events",
		             num(b1, (long long)r->watch_events), "resourceVersion", r->watch_rv,
		             NULL);
		watch_start(r);
		return;
	}
	if (!res->err && sf_kube_is_expired(res)) {
		r->stats.gone++;
		r->stats.relists++;
		sf_log_info(LOGGER, "watch resourceVersion gone, listing again", "resource",
		            r->name, "resourceVersion", r->watch_rv, "message", res->errmsg, NULL);
		if (++r->gone_streak > 1)
			backoff(r, NEXT_LIST);
		else
			list_start(r);
		return;
	}
	if (res->err == -EBADMSG || res->err == -E2BIG) {
		r->stats.errors++;
		r->stats.decode_errors++;
		sf_log_error(LOGGER, "malformed watch stream", "resource", r->name, "error",
		             res->errmsg ? res->errmsg : "", "events",
		             num(b1, (long long)r->watch_events), "resourceVersion", r->watch_rv,
		             "errno", num(b2, res->err), NULL);
		backoff(r, NEXT_WATCH);
		return;
	}
	result_error(r, "watch failed", res);
	backoff(r, NEXT_WATCH);
}

/* Sends a watch with o (a plain one or a WatchList) and the options
 * every watch has. 0, or a negative errno (logged; -ESHUTDOWN: the client
 * closed and the reflector stopped). */
static int watch_send(sf_reflector *r, sf_kube_list_opts *o)
{
	long to = r->watch_min_s;
	if (r->watch_max_s > r->watch_min_s)
		to += (long)(rng_next(r) % (uint64_t)(r->watch_max_s - r->watch_min_s));
	o->label_selector = r->label_selector;
	o->field_selector = r->field_selector;
	o->timeout_seconds = to;
	o->allow_bookmarks = 1;
	o->fresh_connection = r->next_fresh;
	r->next_fresh = 0;
	r->watch_events = 0;
	r->watch_start_ns = sf_mono_ns();
	r->progress_ns = r->watch_start_ns;
	r->stats.watches++;
	int rc =
	    sf_kube_watch(r->client, r->gvr, r->ns, o, on_watch_event, on_watch_done, r, &r->call);
	char b1[24];
	if (rc == -ESHUTDOWN) {
		client_gone(r);
	} else if (rc) {
		r->call = NULL;
		r->stats.errors++;
		sf_log_error(LOGGER, "cannot start watch", "resource", r->name, "errno",
		             num(b1, rc), NULL);
	} else {
		sf_log_debug(LOGGER, "watching", "resource", r->name, "resourceVersion",
		             o->resource_version, "sendInitialEvents",
		             o->send_initial_events ? "true" : "false", "timeoutSeconds",
		             num(b1, to), NULL);
	}
	return rc;
}

static void watch_start(sf_reflector *r)
{
	if (r->rewatch_rv) {
		free(r->watch_rv);
		r->watch_rv = r->rewatch_rv;
		r->rewatch_rv = NULL;
	}
	sf_kube_list_opts o = {.resource_version = r->watch_rv};
	r->state = ST_WATCHING;
	int rc = watch_send(r, &o);
	if (rc && rc != -ESHUTDOWN)
		backoff(r, NEXT_WATCH);
}

/* The first page of a list, as a WatchList stream. */
static void stream_start(sf_reflector *r)
{
	sf_kube_list_opts o = {
	    .resource_version = r->list_rv,
	    .resource_version_match = "NotOlderThan",
	    .send_initial_events = 1,
	};
	r->state = ST_LISTING;
	r->streaming = 1;
	r->unavailable_event = 0;
	int rc = watch_send(r, &o);
	if (rc && rc != -ESHUTDOWN) {
		list_abandon(r);
		backoff(r, NEXT_LIST);
	}
}

/* ---- public ---- */

int sf_reflector_new(uv_loop_t *loop, sf_kube_client *client, sf_store *store,
                     const sf_reflector_opts *opts, sf_reflector **out)
{
	if (!loop || !client || !store || !opts || !opts->gvr || !opts->gvr->resource)
		return -EINVAL;
	int rc = -ENOMEM;
	sf_reflector *r = calloc(1, sizeof(*r));
	if (!r)
		return rc;
	r->loop = loop;
	r->client = client;
	r->store = store;
	r->gvr = opts->gvr;
	r->page_size = opts->page_size == 0 ? 500 : opts->page_size;
	r->watch_list = opts->watch_list < 0 ? WL_OFF : WL_TRY;
	r->strip_managed_fields = opts->strip_managed_fields;
	r->transform = opts->transform;
	r->transform_ud = opts->transform_ud;
	r->progress_timeout_ms =
	    opts->progress_timeout_ms == 0 ? 150000 : opts->progress_timeout_ms;
	r->delay_max_ms = opts->fault_event_delay_max_ms;
	r->delay_min_ms = opts->fault_event_delay_min_ms;
	r->coalesce = opts->fault_coalesce_events;
	if (r->delay_min_ms < 0 || r->delay_min_ms > r->delay_max_ms)
		r->delay_min_ms = r->delay_max_ms;
	r->stall_after_ms = opts->fault_stall_after_ms;
	r->watch_min_s = opts->watch_min_s > 0 ? opts->watch_min_s : 300;
	r->watch_max_s = opts->watch_max_s > 0 ? opts->watch_max_s : 600;
	if (r->watch_max_s < r->watch_min_s)
		r->watch_max_s = r->watch_min_s;
	r->backoff_initial_ms = opts->backoff_initial_ms > 0 ? opts->backoff_initial_ms : 800;
	r->backoff_max_ms = opts->backoff_max_ms > 0 ? opts->backoff_max_ms : 30000;
	if (r->backoff_max_ms < r->backoff_initial_ms)
		r->backoff_max_ms = r->backoff_initial_ms;
	r->backoff_reset_ms = opts->backoff_reset_ms > 0 ? opts->backoff_reset_ms : 120000;
	r->jitter = opts->backoff_jitter == 0 ? 1.0 : opts->backoff_jitter;
	r->on_rv = opts->on_rv;
	r->on_synced = opts->on_synced;
	r->ud = opts->ud;
	r->rng = (uint64_t)sf_mono_ns() ^ ((uint64_t)(uintptr_t)r << 16) ^ 0x9e3779b97f4a7c15ULL;
	if (!r->rng)
		r->rng = 1;
	if (opts->ns && *opts->ns && !(r->ns = strdup(opts->ns)))
		goto fail;
	if (opts->label_selector && *opts->label_selector &&
	    !(r->label_selector = strdup(opts->label_selector)))
		goto fail;
	if (opts->field_selector && *opts->field_selector &&
	    !(r->field_selector = strdup(opts->field_selector)))
		goto fail;
	if (set_str(&r->name, opts->name ? opts->name : opts->gvr->resource) ||
	    set_str(&r->last_rv, "") || set_str(&r->watch_rv, "") || set_str(&r->list_rv, ""))
		goto fail;
	*out = r;
	return 0;
fail:
	r->state = ST_STOPPED;
	sf_reflector_free(r);
	return rc;
}

/* A watch that shows nothing for progress_timeout_ms (not even a
 * bookmark) may sit on a dead connection or a stuck stream: end it and
 * watch again, on a connection of its own. */
static void on_wdog(uv_timer_t *t)
{
	sf_reflector *r = t->data;
	if ((r->state != ST_WATCHING && !r->streaming) || !r->call || r->next != NEXT_NONE)
		return;
	int64_t quiet = sf_mono_ns() - r->progress_ns;
	if (quiet < (int64_t)r->progress_timeout_ms * SF_NSEC_PER_MSEC)
		return;
	char b[24];
	r->stats.watchdog_restarts++;
	sf_log_warn(LOGGER, "watch made no progress; watching again on a fresh connection",
	            "resource", r->name, "quietMs", num(b, quiet / SF_NSEC_PER_MSEC), NULL);
	r->next_fresh = 1;
	if (r->stalled)
		r->stall_at_ns = 0; /* the fault lasts until the watchdog acts */
	r->stalled = 0;
	interrupt(r, NEXT_WATCH);
}

int sf_reflector_start(sf_reflector *r)
{
	if (stopping(r))
		return -ESHUTDOWN;
	if (r->state != ST_IDLE)
		return -EALREADY;
	uv_timer_t *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	int rc = uv_timer_init(r->loop, t);
	if (rc) {
		free(t);
		return rc;
	}
	t->data = r;
	r->timer = t;
	if (r->delay_max_ms > 0) {
		t = calloc(1, sizeof(*t));
		if (!t || uv_timer_init(r->loop, t) != 0) {
			free(t);
		} else {
			t->data = r;
			r->dtimer = t;
			char b[24], b2[24];
			sf_log_warn(LOGGER, "fault injection: watch events are applied late",
			            "resource", r->name, "maxDelayMs", num(b, r->delay_max_ms),
			            "minDelayMs", num(b2, r->delay_min_ms), NULL);
		}
	}
	if (r->progress_timeout_ms > 0) {
		t = calloc(1, sizeof(*t));
		if (!t || uv_timer_init(r->loop, t) != 0) {
			free(t);
		} else {
			t->data = r;
			r->wdog = t;
			uint64_t tick =
			    (uint64_t)(r->progress_timeout_ms / 4 > 0 ? r->progress_timeout_ms / 4
			                                              : 1);
			uv_timer_start(t, on_wdog, tick, tick);
		}
	}
	if (r->stall_after_ms > 0)
		r->stall_at_ns = sf_mono_ns() + (int64_t)r->stall_after_ms * SF_NSEC_PER_MSEC;
	sf_log_debug(LOGGER, "starting", "resource", r->name, NULL);
	list_start(r);
	return 0;
}

void sf_reflector_free(sf_reflector *r)
{
	if (!r)
		return;
	if (r->state != ST_IDLE && r->state != ST_STOPPED) {
		/* Freeing a running reflector would leave callbacks pointing at
		 * freed memory; leak it instead and say so. */
		sf_log_error(LOGGER, "reflector freed while running; leaking it", "resource",
		             r->name, NULL);
		return;
	}
	free(r->ns);
	free(r->label_selector);
	free(r->field_selector);
	free(r->name);
	free(r->cont);
	free(r->last_rv);
	free(r->list_rv);
	free(r->watch_rv);
	free(r->rewatch_rv);
	free(r);
}

int sf_reflector_synced(const sf_reflector *r)
{
	return r->synced;
}

const char *sf_reflector_last_rv(const sf_reflector *r)
{
	return r->last_rv;
}

void sf_reflector_stats_get(const sf_reflector *r, sf_reflector_stats *out)
{
	*out = r->stats;
}

/* Ends the in-flight call so that its callback runs r->next. */
static void interrupt(sf_reflector *r, refl_next next)
{
	r->next = next;
	/* From inside a stream callback, its non-zero return aborts the call. */
	if (r->call && !r->in_stream_cb)
		sf_kube_call_cancel(r->call);
}

int sf_reflector_relist(sf_reflector *r)
{
	if (stopping(r))
		return -ESHUTDOWN;
	if (r->state != ST_IDLE) {
		/* a quorum read: as a freshness wait from now would have it */
		int64_t now = sf_mono_ns();
		if (now > r->fresh_want_ns)
			r->fresh_want_ns = now;
	}
	switch (r->state) {
	case ST_IDLE: return -EAGAIN;
	case ST_WAITING:
		r->stats.relists++;
		uv_timer_stop(r->timer);
		r->wait_for = NEXT_NONE;
		free(r->cont);
		r->cont = NULL;
		list_start(r);
		return 0;
	case ST_LISTING:
		/* the list in flight restarts from its first page */
		interrupt(r, NEXT_LIST);
		return 0;
	case ST_WATCHING:
		interrupt(r, NEXT_LIST); /* counted when the watch has ended */
		return 0;
	default: return -ESHUTDOWN;
	}
}

int sf_reflector_want_fresh(sf_reflector *r, int64_t since_ns)
{
	if (stopping(r))
		return -ESHUTDOWN;
	if (r->synced && r->applied_list_ns >= since_ns)
		return 1;
	if (since_ns > r->fresh_want_ns)
		r->fresh_want_ns = since_ns;
	switch (r->state) {
	case ST_IDLE: return 0; /* its first list comes later */
	case ST_LISTING:
		/* a list asked before since_ns is finished first, then
		 * list_finish lists again: nothing is thrown away */
		return 0;
	case ST_WATCHING:
		interrupt(r, NEXT_LIST); /* counted when the watch has ended */
		return 0;
	case ST_WAITING:
		/* behind the backoff: whatever was due becomes a list, when
		 * it is due */
		r->wait_for = NEXT_LIST;
		free(r->cont);
		r->cont = NULL;
		return 0;
	default: return -ESHUTDOWN;
	}
}

int64_t sf_reflector_list_asked_ns(const sf_reflector *r)
{
	return r->synced ? r->applied_list_ns : 0;
}

int sf_reflector_rewatch_from(sf_reflector *r, const char *rv)
{
	if (stopping(r))
		return -ESHUTDOWN;
	if (set_str(&r->rewatch_rv, rv))
		return -ENOMEM;
	if (r->state == ST_WATCHING)
		interrupt(r, NEXT_WATCH);
	else if (r->state == ST_WAITING && r->wait_for == NEXT_WATCH) {
		uv_timer_stop(r->timer);
		r->wait_for = NEXT_NONE;
		watch_start(r);
	}
	return 0;
}
