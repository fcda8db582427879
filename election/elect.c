/*
 * elect.c - the elector: watches, polls and writes the Lease on the loop,
 * and drives the fence and the owner's callbacks (see election.h).
 *
 * State is what was last observed (record, object, resourceVersion, and
 * the monotonic time the record last changed) plus whether this replica
 * leads (term, send time of the last successful renew, fence deadline).
 * Every observation - LIST, WATCH event, GET, the response to our own
 * write - goes through observe(), which drops anything older than what is
 * known (by resourceVersion), and then evaluate() decides: a leader that
 * sees another holder or no Lease steps down at once; a candidate writes
 * when the Lease is absent, empty, its own, or expired, and otherwise arms
 * a timer for the expiry instant. At most one Lease write is in flight.
 *
 * Writes are conditional (UPDATE with the resourceVersion read, or
 * CREATE), so a stale view can only cost a 409 and a re-read, never a
 * second leader. The fence deadline is measured from when the successful
 * write was handed to the client (never later than it was sent), which
 * can only make the fence close earlier than followers could take over.
 */
#include "steadfast/election.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/log.h"
#include "steadfast/rv.h"
#include "steadfast/time.h"

#define MAX_GATED 8
#define RV_LEN 64
#define NTIMERS 6

enum write_kind { W_NONE, W_CREATE, W_TAKE, W_RENEW, W_RELEASE };

/* error classes, so each kind of trouble is logged once when it starts */
enum { P_NONE, P_TRANSPORT, P_UNAUTHORIZED, P_FORBIDDEN, P_SERVER, P_INVALID, P_OTHER };

/* upper bounds in seconds of the renew latency histogram: 1 ms, then
 * Prometheus' default buckets */
static const double latency_buckets[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25,  0.5,   1,    2.5,   5,    10};

struct sf_elect {
	uv_loop_t *loop;
	sf_kube_client *kc;
	char *ns, *name, *identity, *key, *field_selector;
	int64_t lease_ns, renew_ns, retry_ns, api_bound_ns, watchdog_ns;
	int64_t lease_s;
	long req_timeout_ms;
	sf_elect_callbacks cb;
	uint64_t rng;

	/* what was last observed */
	int have_obs, obs_absent;
	sf_elect_record obs;
	int64_t obs_time; /* monotonic: when the record last changed */
	sf_obj *obs_obj;  /* the Lease as last seen (NULL when absent) */
	char obs_rv[RV_LEN];
	char *leader_reported;
	unsigned bad_logged;
	int absent_logged;

	/* leadership */
	int leading, active, ready_pending;
	uint64_t term;
	int64_t last_renew, fence_deadline;
	char written_rv[RV_LEN];
	int64_t last_write_done;

	/* requests */
	sf_kube_call *write_call, *get_call, *list_call, *watch_call;
	enum write_kind write_kind;
	int64_t write_sent, get_sent, watch_started;
	int reeval_after_write, renew_after_get, get_again;
	sf_obj *list_item;
	int watch_problem;

	/* timers */
	uv_timer_t tick, expiry, fence, watch_retry, ready_retry, defer;
	int timers_closed;

	/* health */
	int64_t last_api_ok;
	char last_err[384];
	int err_class;

	sf_elect_stats st;
	sf_kube_client *gated[MAX_GATED];
	size_t ngated;

	int started, stopped, releasing, closing, teardown;
	void (*release_cb)(void *ud, int err);
	void *release_ud;
	int release_due, release_err, cancel_reads_due;
	void (*close_cb)(void *ud);
	void *close_ud;
};

#define ELOG(e, lvl, msg, ...)                                                                     \
	sf_log(lvl, "election", msg, "lease", (e)->key, "identity", (e)->identity, __VA_ARGS__)

static void evaluate(sf_elect *e);
static void poll_get(sf_elect *e);
static void watch_start(sf_elect *e);
static void write_lease(sf_elect *e, enum write_kind kind);
static void release_continue(sf_elect *e);
static void release_finish(sf_elect *e, int err);
static void on_ready_retry(uv_timer_t *t);

/* ---- small helpers ---- */

static uint64_t next_rand(sf_elect *e)
{
	uint64_t x = e->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	e->rng = x;
	return x;
}

static void timer_in(sf_elect *e, uv_timer_t *t, uv_timer_cb cb, int64_t delay_ns)
{
	if (e->closing && t != &e->defer)
		return;
	if (delay_ns < 0)
		delay_ns = 0;
	uv_update_time(e->loop);
	uv_timer_start(t, cb, (uint64_t)((delay_ns + SF_NSEC_PER_MSEC - 1) / SF_NSEC_PER_MSEC), 0);
}

static const char *ms_str(char buf[24], int64_t ns)
{
	return sf_log_int(buf, ns / SF_NSEC_PER_MSEC);
}

/* Any answer but 401, 403, 429 and 5xx shows the election can use the API. */
static void api_contact(sf_elect *e, const sf_kube_result *res)
{
	if (res->err || res->http_status >= 500 || res->http_status == 401 ||
	    res->http_status == 403 || res->http_status == 429)
		return;
	e->last_api_ok = sf_mono_ns();
}

static void problem(sf_elect *e, const sf_kube_result *res, const char *what)
{
	char rs[300];
	sf_kube_result_str(res, rs, sizeof(rs));
	snprintf(e->last_err, sizeof(e->last_err), "%s: %s", what, rs);
	int cls = res->err                       ? P_TRANSPORT
	          : sf_kube_is_unauthorized(res) ? P_UNAUTHORIZED
	          : sf_kube_is_forbidden(res)    ? P_FORBIDDEN
	          : res->http_status >= 500      ? P_SERVER
	          : sf_kube_is_invalid(res)      ? P_INVALID
	                                         : P_OTHER;
	if (cls == e->err_class) {
		ELOG(e, SF_LOG_DEBUG, what, "error", rs, NULL);
		return;
	}
	e->err_class = cls;
	switch (cls) {
	case P_FORBIDDEN:
		ELOG(e, SF_LOG_ERROR,
		     "forbidden to use the Lease: RBAC must allow get, list, watch, create and "
		     "update "
		     "on leases.coordination.k8s.io in its namespace; retrying",
		     "request", what, "error", rs, NULL);
		break;
	case P_UNAUTHORIZED:
		ELOG(e, SF_LOG_ERROR, "the API server does not accept our credentials; retrying",
		     "request", what, "error", rs, NULL);
		break;
	case P_INVALID:
		ELOG(e, SF_LOG_ERROR, "the API server rejected our Lease write as invalid",
		     "request", what, "error", rs, NULL);
		break;
	default:
		ELOG(e, SF_LOG_WARN, "the Lease API is not answering; retrying every retry period",
		     "request", what, "error", rs, NULL);
	}
}

static void problem_clear(sf_elect *e)
{
	if (!e->err_class)
		return;
	e->err_class = P_NONE;
	ELOG(e, SF_LOG_INFO, "the Lease API answers again", "previous", e->last_err, NULL);
}

static void report_leader(sf_elect *e, const char *holder)
{
	if (e->leader_reported && strcmp(e->leader_reported, holder) == 0)
		return;
	char *h = strdup(holder);
	if (!h)
		return;
	free(e->leader_reported);
	e->leader_reported = h;
	e->st.leader_changes++;
	ELOG(e, SF_LOG_INFO, "new leader observed", "leader", holder[0] ? holder : "(none)", NULL);
	if (e->cb.on_new_leader)
		e->cb.on_new_leader(e->cb.ud, holder);
}

static void describe_bad(unsigned bad, char *buf, size_t n)
{
	static const char *const names[] = {"spec",        "holderIdentity", "leaseDurationSeconds",
	                                    "acquireTime", "renewTime",      "leaseTransitions"};
	buf[0] = '\0';
	size_t l = 0;
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(bad & (1u << i)))
			continue;
		int w = snprintf(buf + l, n - l, "%s%s", l ? "," : "", names[i]);
		if (w < 0 || (size_t)w >= n - l)
			break;
		l += (size_t)w;
	}
}

/* ---- observation ---- */

/* Records what the API showed: obj (NULL = the Lease does not exist) at
 * resourceVersion rv ("" or NULL = unknown). Older observations are
 * dropped. */
static void observe(sf_elect *e, sf_obj *obj, const char *rv)
{
	int ord;
	/* (an order only where the versions allow one: sf_rv_order) */
	if (rv && *rv && e->obs_rv[0] && sf_rv_order(rv, e->obs_rv, &ord) == 0 && ord < 0)
		return;
	int64_t now = sf_mono_ns();
	if (!obj) {
		if (!e->have_obs || !e->obs_absent)
			e->obs_time = now;
		e->have_obs = 1;
		e->obs_absent = 1;
		sf_elect_record_clear(&e->obs);
		sf_obj_unref(e->obs_obj);
		e->obs_obj = NULL;
		if (rv && *rv)
			snprintf(e->obs_rv, sizeof(e->obs_rv), "%s", rv);
		if (!e->absent_logged) {
			ELOG(e, SF_LOG_INFO, "the Lease does not exist; it will be created", NULL);
			e->absent_logged = 1;
		}
		report_leader(e, "");
		return;
	}
	sf_elect_record rec;
	if (sf_elect_record_decode(sf_obj_root(obj), &rec) != 0) {
		ELOG(e, SF_LOG_ERROR, "could not decode the Lease", "rv", obj->rv, NULL);
		return;
	}
	int changed = !e->have_obs || e->obs_absent || !sf_elect_record_equal(&rec, &e->obs);
	if (changed)
		e->obs_time = now;
	if (rec.bad && (changed || rec.bad != e->bad_logged)) {
		char what[160];
		describe_bad(rec.bad, what, sizeof(what));
		ELOG(e, SF_LOG_WARN,
		     "the Lease has missing or invalid fields; an expiry needing them is judged "
		     "with our own lease duration",
		     "fields", what, "holder", rec.holder, "rv", obj->rv, NULL);
	}
	e->bad_logged = rec.bad;
	e->absent_logged = 0;
	sf_elect_record_clear(&e->obs);
	e->obs = rec;
	e->have_obs = 1;
	e->obs_absent = 0;
	sf_obj_ref(obj);
	sf_obj_unref(e->obs_obj);
	e->obs_obj = obj;
	snprintf(e->obs_rv, sizeof(e->obs_rv), "%s", obj->rv);
	e->st.lease_transitions = rec.transitions;
	report_leader(e, rec.holder);
}

/* ---- leadership ---- */

static int holds_self(const sf_elect *e)
{
	return e->have_obs && !e->obs_absent && e->obs.holder &&
	       strcmp(e->obs.holder, e->identity) == 0;
}

static void schedule_tick(sf_elect *e);

/* Ends the term: the fence closes, writes in flight on the owner's
 * clients are cancelled, leader work is told to stop. */
static void lose(sf_elect *e, const char *reason, int is_loss)
{
	if (!e->leading)
		return;
	uint64_t term = e->term;
	int was_active = e->active;
	e->leading = 0;
	e->active = 0;
	e->ready_pending = 0;
	uv_timer_stop(&e->fence);
	uv_timer_stop(&e->ready_retry);
	e->st.fence_closures++;
	if (is_loss)
		e->st.losses++;
	for (size_t i = 0; i < e->ngated; i++)
		sf_kube_client_cancel_writes(e->gated[i]);
	char ts[24], since[24];
	ELOG(e, is_loss ? SF_LOG_WARN : SF_LOG_INFO, "stopped leading: fence closed", "reason",
	     reason, "term", sf_log_int(ts, (long long)term), "msSinceRenew",
	     ms_str(since, sf_mono_ns() - e->last_renew), NULL);
	if (was_active && e->cb.on_stopped_leading)
		e->cb.on_stopped_leading(e->cb.ud, term, reason);
	if (!e->stopped)
		schedule_tick(e);
}

static void start_ready(sf_elect *e)
{
	e->ready_pending = 1;
	if (e->cb.ready)
		e->cb.ready(e->cb.ud, e, e->term, e->written_rv);
	else
		sf_elect_ready_done(e, e->term, 0);
}

static void become_leader(sf_elect *e)
{
	e->leading = 1;
	e->active = 0;
	e->term++;
	e->st.acquisitions++;
	uv_timer_stop(&e->expiry);
	char ts[24], tr[24];
	ELOG(e, SF_LOG_INFO, "acquired the lease", "term", sf_log_int(ts, (long long)e->term), "rv",
	     e->written_rv, "leaseTransitions", sf_log_int(tr, (long long)e->obs.transitions),
	     NULL);
	start_ready(e);
}

void sf_elect_ready_done(sf_elect *e, uint64_t term, int err)
{
	char ts[24];
	if (e->closing || e->stopped || !e->leading || term != e->term || e->active ||
	    !e->ready_pending) {
		ELOG(e, SF_LOG_DEBUG, "ready answer for a term that is over; ignored", "term",
		     sf_log_int(ts, (long long)term), NULL);
		return;
	}
	if (err) {
		char es[24];
		ELOG(e, SF_LOG_WARN, "not ready to lead yet; asking again after the retry period",
		     "term", sf_log_int(ts, (long long)term), "err", sf_log_int(es, err), NULL);
		timer_in(e, &e->ready_retry, on_ready_retry, e->retry_ns);
		return;
	}
	if (!sf_elect_fence_open(e))
		return; /* the fence timer ends the term */
	e->ready_pending = 0;
	e->active = 1;
	ELOG(e, SF_LOG_INFO, "leader work starting", "term", sf_log_int(ts, (long long)term), NULL);
	if (e->cb.on_started_leading)
		e->cb.on_started_leading(e->cb.ud, term);
}

static void on_ready_retry(uv_timer_t *t)
{
	sf_elect *e = t->data;
	if (e->closing || e->stopped || !e->leading || e->active)
		return;
	start_ready(e);
}

static void on_fence_timer(uv_timer_t *t)
{
	sf_elect *e = t->data;
	if (!e->leading || e->closing)
		return;
	int64_t now = sf_mono_ns();
	if (now < e->fence_deadline) {
		/* the loop's cached time made the timer early */
		timer_in(e, &e->fence, on_fence_timer, e->fence_deadline - now);
		return;
	}
	lose(e, "renew deadline passed without a successful renew", 1);
	if (!e->closing && !e->stopped)
		evaluate(e);
}

static int gate_fn(void *ud, const sf_kube_req *req)
{
	sf_elect *e = ud;
	(void)req;
	if (sf_elect_fence_open(e))
		return 0;
	e->st.writes_refused++;
	return 1;
}

static int gate_closed_for_good(void *ud, const sf_kube_req *req)
{
	(void)ud;
	(void)req;
	return 1;
}

int sf_elect_fence_open(const sf_elect *e)
{
	return !e->closing && !e->stopped &&
	       sf_elect_fence_check(e->leading, e->last_renew, e->renew_ns, sf_mono_ns());
}

/* ---- decisions ---- */

static void on_expiry(uv_timer_t *t)
{
	evaluate(t->data);
}

static void evaluate(sf_elect *e)
{
	if (e->closing || e->stopped || !e->started || !e->have_obs)
		return;
	if (e->leading) {
		if (holds_self(e))
			return;
		lose(e,
		     e->obs_absent ? "the Lease was deleted"
		                   : "the Lease is held by another identity",
		     1);
		if (e->closing || e->stopped)
			return;
	}
	uv_timer_stop(&e->expiry);
	if (e->write_call) {
		e->reeval_after_write = 1;
		return;
	}
	int64_t now = sf_mono_ns();
	if (e->obs_absent) {
		write_lease(e, W_CREATE);
	} else if (sf_elect_can_acquire(&e->obs, e->obs_time, now, e->identity, e->lease_ns)) {
		write_lease(e, holds_self(e) ? W_RENEW : W_TAKE);
	} else {
		int64_t at = sf_elect_expiry_ns(&e->obs, e->obs_time, e->lease_ns);
		timer_in(e, &e->expiry, on_expiry, at - now);
	}
}

/* ---- Lease writes ---- */

static const char *write_name(enum write_kind k)
{
	switch (k) {
	case W_CREATE: return "create";
	case W_TAKE: return "acquire";
	case W_RENEW: return "renew";
	case W_RELEASE: return "release";
	default: return "none";
	}
}

static void latency_observe(sf_elect *e, int64_t ns)
{
	sf_prom_hist_observe(&e->st.renew_latency, (double)ns / 1e9);
}

/* A successful take/renew/create sent at `sent`. */
static void renewed(sf_elect *e, int64_t sent, int64_t now)
{
	e->st.renews_ok++;
	int64_t deadline = sent + e->renew_ns;
	if (deadline <= now) {
		char ms[24];
		ELOG(e, SF_LOG_WARN,
		     "the Lease write succeeded only after the renew deadline; not acting on it",
		     "ms", ms_str(ms, now - sent), NULL);
		lose(e, "renew deadline passed without a successful renew", 1);
		return;
	}
	e->last_renew = sent;
	e->fence_deadline = deadline;
	e->st.last_renew_mono_ns = sent;
	timer_in(e, &e->fence, on_fence_timer, deadline - now);
	if (!e->leading)
		become_leader(e);
	if (!e->closing && !e->stopped)
		schedule_tick(e);
}

static void on_write(void *ud, const sf_kube_result *res)
{
	sf_elect *e = ud;
	enum write_kind kind = e->write_kind;
	int64_t sent = e->write_sent;
	e->write_call = NULL;
	e->write_kind = W_NONE;
	if (e->closing)
		return;
	int64_t now = sf_mono_ns();
	api_contact(e, res);
	int reeval = e->reeval_after_write;
	e->reeval_after_write = 0;
	const char *what = write_name(kind);

	if (sf_kube_ok(res) && res->obj) {
		e->last_write_done = now;
		problem_clear(e);
		if (kind != W_RELEASE)
			latency_observe(e, now - sent);
		snprintf(e->written_rv, sizeof(e->written_rv), "%s", res->obj->rv);
		observe(e, res->obj, res->obj->rv);
		if (e->closing)
			return;
		if (kind == W_RELEASE) {
			ELOG(e, SF_LOG_INFO, "released the lease", "rv", res->obj->rv, NULL);
			release_finish(e, 0);
			return;
		}
		if (e->releasing) {
			release_continue(e);
			return;
		}
		renewed(e, sent, now);
		if (reeval)
			evaluate(e);
		return;
	}
	if (kind == W_RELEASE) {
		char rs[300];
		int err = sf_kube_is_conflict(res) || sf_kube_is_not_found(res)
		              ? -ESTALE
		              : (res->err ? res->err : -EIO);
		ELOG(e, err == -ESTALE ? SF_LOG_INFO : SF_LOG_WARN,
		     err == -ESTALE ? "the Lease changed since our last write; not released"
		                    : "could not release the lease",
		     "error", sf_kube_result_str(res, rs, sizeof(rs)), NULL);
		release_finish(e, err);
		return;
	}
	if (e->leading)
		e->st.renews_failed++;
	if (e->releasing) {
		release_continue(e);
		return;
	}
	if (sf_kube_is_conflict(res) || sf_kube_is_already_exists(res)) {
		e->st.conflicts++;
		problem_clear(e);
		ELOG(e, SF_LOG_DEBUG, "the Lease changed under our write; reading it again",
		     "write", what, NULL);
		if (e->leading)
			e->renew_after_get = 1;
		poll_get(e);
	} else if (sf_kube_is_not_found(res)) {
		problem_clear(e);
		ELOG(e, SF_LOG_WARN, "the Lease was deleted by someone else", "write", what, NULL);
		observe(e, NULL, NULL);
		reeval = 1;
	} else {
		char w[48];
		snprintf(w, sizeof(w), "lease %s", what);
		problem(e, res, w);
	}
	if (reeval && !e->closing)
		evaluate(e);
}

static void write_lease(sf_elect *e, enum write_kind kind)
{
	if (e->write_call || e->closing)
		return;
	const sf_obj *cur = e->obs_absent ? NULL : e->obs_obj;
	if (kind == W_RELEASE && !cur) {
		release_finish(e, 0);
		return;
	}
	if (kind != W_CREATE && !cur)
		kind = W_CREATE;
	sf_elect_record rec;
	int64_t wall = sf_wall_ns();
	int rc = kind == W_RELEASE ? sf_elect_record_release(&e->obs, wall, &rec)
	                           : sf_elect_record_next(cur ? &e->obs : NULL, e->identity,
	                                                  e->lease_s, wall, &rec);
	sf_buf body;
	sf_buf_init(&body, 0);
	if (!rc)
		rc = sf_elect_lease_body(cur, e->ns, e->name, &rec, &body);
	sf_elect_record_clear(&rec);
	if (!rc) {
		sf_kube_req req = {.method = cur ? "PUT" : "POST",
		                   .gvr = &SF_GVR_LEASES,
		                   .ns = e->ns,
		                   .name = cur ? e->name : NULL,
		                   .body = body.data,
		                   .body_len = body.len,
		                   .timeout_ms = e->req_timeout_ms};
		/* before the request can possibly be sent: the fence deadline
		 * counts from here */
		e->write_sent = sf_mono_ns();
		e->write_kind = kind;
		rc = sf_kube_do(e->kc, &req, on_write, e, &e->write_call);
		if (rc) {
			e->write_call = NULL;
			e->write_kind = W_NONE;
		}
	}
	sf_buf_free(&body);
	if (rc) {
		char rs[24];
		ELOG(e, SF_LOG_ERROR, "could not start a Lease write", "write", write_name(kind),
		     "err", sf_log_int(rs, rc), NULL);
		if (kind == W_RELEASE)
			release_finish(e, rc);
	}
}

/* ---- reads ---- */

static void on_get(void *ud, const sf_kube_result *res)
{
	sf_elect *e = ud;
	e->get_call = NULL;
	if (e->closing)
		return;
	api_contact(e, res);
	int renew = e->renew_after_get;
	e->renew_after_get = 0;
	if (sf_kube_ok(res) && res->obj) {
		problem_clear(e);
		observe(e, res->obj, res->obj->rv);
	} else if (sf_kube_is_not_found(res)) {
		problem_clear(e);
		/* a 404 carries no resourceVersion: ignore it if it may predate
		 * our own last successful write */
		if (e->get_sent > e->last_write_done)
			observe(e, NULL, NULL);
	} else {
		problem(e, res, "lease get");
		renew = 0;
	}
	if (e->closing || e->stopped)
		return;
	if (e->get_again) {
		e->get_again = 0;
		poll_get(e);
	}
	if (renew && e->leading && holds_self(e) && !e->write_call)
		write_lease(e, W_RENEW);
	evaluate(e);
}

static void poll_get(sf_elect *e)
{
	if (e->closing || e->stopped)
		return;
	if (e->get_call) {
		e->get_again = 1;
		return;
	}
	sf_kube_req req = {.method = "GET",
	                   .gvr = &SF_GVR_LEASES,
	                   .ns = e->ns,
	                   .name = e->name,
	                   .timeout_ms = e->req_timeout_ms};
	e->get_sent = sf_mono_ns();
	int rc = sf_kube_do(e->kc, &req, on_get, e, &e->get_call);
	if (rc) {
		e->get_call = NULL;
		char rs[24];
		ELOG(e, SF_LOG_ERROR, "could not start a Lease read", "err", sf_log_int(rs, rc),
		     NULL);
	}
}

/* Leader: renew every retry period. Candidate: poll every retry period
 * with up to 20 % jitter, a fallback for a broken watch. */
static void on_tick(uv_timer_t *t)
{
	sf_elect *e = t->data;
	if (e->closing || e->stopped)
		return;
	schedule_tick(e);
	if (e->leading) {
		if (!e->write_call)
			write_lease(e, W_RENEW);
	} else {
		poll_get(e);
	}
}

static void schedule_tick(sf_elect *e)
{
	int64_t d = e->retry_ns;
	if (!e->leading)
		d += (int64_t)(next_rand(e) % (uint64_t)(e->retry_ns / 5 + 1));
	timer_in(e, &e->tick, on_tick, d);
}

/* ---- watch ---- */

static void on_watch_retry(uv_timer_t *t)
{
	watch_start(t->data);
}

static void watch_later(sf_elect *e)
{
	if (!e->closing && !e->stopped)
		timer_in(e, &e->watch_retry, on_watch_retry, e->retry_ns);
}

static int on_watch_event(void *ud, sf_watch_type type, sf_obj *obj)
{
	sf_elect *e = ud;
	if (e->closing || e->stopped) {
		sf_obj_unref(obj);
		return 1;
	}
	int stop = 0;
	switch (type) {
	case SF_WATCH_ADDED:
	case SF_WATCH_MODIFIED:
		e->last_api_ok = sf_mono_ns();
		if (strcmp(obj->name, e->name) == 0)
			observe(e, obj, obj->rv);
		break;
	case SF_WATCH_DELETED:
		e->last_api_ok = sf_mono_ns();
		if (strcmp(obj->name, e->name) == 0) {
			ELOG(e, SF_LOG_WARN, "the Lease was deleted by someone else", "rv", obj->rv,
			     NULL);
			observe(e, NULL, obj->rv);
		}
		break;
	case SF_WATCH_BOOKMARK: e->last_api_ok = sf_mono_ns(); break;
	default: {
		char msg[200] = "";
		sf_jv_str(sf_jv_get(sf_obj_root(obj), "message"), msg, sizeof(msg));
		ELOG(e, SF_LOG_DEBUG, "the Lease watch ended with an error; listing again", "error",
		     msg, NULL);
		stop = 1;
	}
	}
	sf_obj_unref(obj);
	if (!stop)
		evaluate(e);
	return stop;
}

static void on_watch_done(void *ud, const sf_kube_result *res)
{
	sf_elect *e = ud;
	e->watch_call = NULL;
	if (e->closing || e->stopped)
		return;
	int64_t lasted = sf_mono_ns() - e->watch_started;
	if (sf_kube_ok(res) && lasted > SF_NSEC_PER_SEC) {
		watch_start(e); /* the server ended it after its timeout */
		return;
	}
	char rs[300];
	ELOG(e, SF_LOG_DEBUG, "the Lease watch ended; starting again after the retry period",
	     "error", sf_kube_result_str(res, rs, sizeof(rs)), NULL);
	watch_later(e);
}

static int on_list_item(void *ud, sf_obj *item)
{
	sf_elect *e = ud;
	if (strcmp(item->name, e->name) == 0 && !e->list_item)
		e->list_item = item;
	else
		sf_obj_unref(item);
	return 0;
}

static void on_list(void *ud, const sf_kube_result *res)
{
	sf_elect *e = ud;
	e->list_call = NULL;
	sf_obj *item = e->list_item;
	e->list_item = NULL;
	if (e->closing || e->stopped) {
		sf_obj_unref(item);
		return;
	}
	api_contact(e, res);
	if (!sf_kube_ok(res)) {
		sf_obj_unref(item);
		char rs[300];
		sf_kube_result_str(res, rs, sizeof(rs));
		if (res->err || res->http_status >= 500) {
			/* the API is down: the poll reports it */
			ELOG(e, SF_LOG_DEBUG, "cannot list the Lease", "error", rs, NULL);
		} else if (!e->watch_problem) {
			ELOG(e, sf_kube_is_forbidden(res) ? SF_LOG_ERROR : SF_LOG_WARN,
			     "cannot list/watch the Lease; polling it every retry period meanwhile",
			     "error", rs, NULL);
			e->watch_problem = 1;
		}
		watch_later(e);
		return;
	}
	if (e->watch_problem) {
		ELOG(e, SF_LOG_INFO, "watching the Lease again", NULL);
		e->watch_problem = 0;
	}
	problem_clear(e);
	char rv[RV_LEN];
	snprintf(rv, sizeof(rv), "%s", res->list_rv ? res->list_rv : "");
	observe(e, item, item ? item->rv : rv);
	sf_obj_unref(item);
	if (e->closing || e->stopped)
		return;
	sf_kube_list_opts o = {.field_selector = e->field_selector,
	                       .resource_version = rv,
	                       .allow_bookmarks = 1,
	                       .timeout_seconds = 240 + (long)(next_rand(e) % 120)};
	e->watch_started = sf_mono_ns();
	int rc = sf_kube_watch(e->kc, &SF_GVR_LEASES, e->ns, &o, on_watch_event, on_watch_done, e,
	                       &e->watch_call);
	if (rc) {
		e->watch_call = NULL;
		watch_later(e);
	}
	evaluate(e);
}

static void watch_start(sf_elect *e)
{
	if (e->closing || e->stopped || e->list_call || e->watch_call)
		return;
	sf_kube_list_opts o = {.field_selector = e->field_selector};
	int rc =
	    sf_kube_list(e->kc, &SF_GVR_LEASES, e->ns, &o, on_list_item, on_list, e, &e->list_call);
	if (rc) {
		e->list_call = NULL;
		watch_later(e);
	}
}

/* ---- release and close ---- */

static void release_notify(sf_elect *e, int err)
{
	void (*cb)(void *, int) = e->release_cb;
	e->release_cb = NULL;
	if (cb)
		cb(e->release_ud, err);
}

static void on_kc_closed(void *ud);

static void on_defer(uv_timer_t *t)
{
	sf_elect *e = t->data;
	if (e->cancel_reads_due && !e->closing) {
		e->cancel_reads_due = 0;
		sf_kube_call_cancel(e->list_call);
		sf_kube_call_cancel(e->watch_call);
		sf_kube_call_cancel(e->get_call);
	}
	if (e->release_due) {
		e->release_due = 0;
		release_notify(e, e->release_err);
	}
	if (e->closing && !e->teardown) {
		e->teardown = 1;
		release_notify(e, -ECANCELED);
		sf_kube_client_close(e->kc, on_kc_closed, e);
	}
}

static void release_finish(sf_elect *e, int err)
{
	e->release_err = err;
	e->release_due = 1;
	timer_in(e, &e->defer, on_defer, 0);
}

static void release_continue(sf_elect *e)
{
	if (e->write_call)
		return; /* its answer decides what we hold */
	if (holds_self(e) && e->obs_obj && e->written_rv[0] &&
	    strcmp(e->obs_obj->rv, e->written_rv) == 0) {
		write_lease(e, W_RELEASE);
		return;
	}
	ELOG(e, SF_LOG_INFO,
	     "not holding the lease at the version we last wrote; nothing to release", NULL);
	release_finish(e, 0);
}

int sf_elect_release(sf_elect *e, void (*cb)(void *ud, int err), void *ud)
{
	if (e->closing || e->releasing)
		return -EALREADY;
	e->releasing = 1;
	e->stopped = 1;
	e->release_cb = cb;
	e->release_ud = ud;
	uv_timer_stop(&e->tick);
	uv_timer_stop(&e->expiry);
	uv_timer_stop(&e->watch_retry);
	uv_timer_stop(&e->ready_retry);
	/* reads are cancelled from the loop: this may run inside one of them */
	e->cancel_reads_due = 1;
	timer_in(e, &e->defer, on_defer, 0);
	lose(e, "releasing the lease", 0);
	if (!e->closing)
		release_continue(e);
	return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
	sf_elect *e = h->data;
	if (++e->timers_closed < NTIMERS)
		return;
	void (*cb)(void *) = e->close_cb;
	void *ud = e->close_ud;
	sf_elect_record_clear(&e->obs);
	sf_obj_unref(e->obs_obj);
	sf_obj_unref(e->list_item);
	free(e->leader_reported);
	free(e->ns);
	free(e->name);
	free(e->identity);
	free(e->key);
	free(e->field_selector);
	free(e);
	if (cb)
		cb(ud);
}

static void on_kc_closed(void *ud)
{
	sf_elect *e = ud;
	uv_timer_t *timers[NTIMERS] = {&e->tick,        &e->expiry,      &e->fence,
	                               &e->watch_retry, &e->ready_retry, &e->defer};
	for (int i = 0; i < NTIMERS; i++) {
		uv_timer_stop(timers[i]);
		uv_close((uv_handle_t *)timers[i], on_timer_closed);
	}
}

void sf_elect_close(sf_elect *e, void (*cb)(void *ud), void *ud)
{
	if (!e || e->closing)
		return;
	e->close_cb = cb;
	e->close_ud = ud;
	e->stopped = 1;
	lose(e, "the elector is closing", 0);
	e->closing = 1;
	for (size_t i = 0; i < e->ngated; i++)
		sf_kube_client_set_write_gate(e->gated[i], gate_closed_for_good, NULL);
	e->ngated = 0;
	uv_timer_stop(&e->tick);
	uv_timer_stop(&e->expiry);
	uv_timer_stop(&e->fence);
	uv_timer_stop(&e->watch_retry);
	uv_timer_stop(&e->ready_retry);
	/* tear down from the loop, never inside a callback of our own client */
	timer_in(e, &e->defer, on_defer, 0);
}

/* ---- setup and queries ---- */

int sf_elect_new(uv_loop_t *loop, sf_kube_config *cfg, const sf_elect_opts *o, sf_elect **out,
                 char *err, size_t errlen)
{
	char dummy[8];
	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	if (!o || !o->ns || !*o->ns || !o->name || !*o->name) {
		snprintf(err, errlen, "leader election needs the Lease's namespace and name");
		return -EINVAL;
	}
	if (!cfg) {
		snprintf(err, errlen, "leader election needs a client configuration");
		return -EINVAL;
	}
	long lease = o->lease_duration_ms ? o->lease_duration_ms : SF_ELECT_DEFAULT_LEASE_MS;
	long renew =
	    o->renew_deadline_ms ? o->renew_deadline_ms : SF_ELECT_DEFAULT_RENEW_DEADLINE_MS;
	long retry = o->retry_period_ms ? o->retry_period_ms : SF_ELECT_DEFAULT_RETRY_MS;
	int rc = sf_elect_check_timing(lease, renew, retry, err, errlen);
	if (rc)
		return rc;
	if (o->identity && !*o->identity) {
		snprintf(err, errlen, "leader election identity must not be empty");
		return -EINVAL;
	}
	sf_elect *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->loop = loop;
	sf_prom_hist_init(&e->st.renew_latency, latency_buckets,
	                  sizeof(latency_buckets) / sizeof(latency_buckets[0]));
	e->lease_ns = (int64_t)lease * SF_NSEC_PER_MSEC;
	e->renew_ns = (int64_t)renew * SF_NSEC_PER_MSEC;
	e->retry_ns = (int64_t)retry * SF_NSEC_PER_MSEC;
	e->lease_s = lease / 1000;
	e->api_bound_ns =
	    (int64_t)(o->api_unreachable_ms > 0 ? o->api_unreachable_ms : lease + 20000) *
	    SF_NSEC_PER_MSEC;
	e->watchdog_ns =
	    (int64_t)(o->watchdog_margin_ms > 0 ? o->watchdog_margin_ms
	                                        : SF_ELECT_DEFAULT_WATCHDOG_MARGIN_MS) *
	    SF_NSEC_PER_MSEC;
	e->req_timeout_ms = renew / 2 > 1000 ? renew / 2 : 1000;
	e->cb = o->cb;
	e->rng = (uint64_t)sf_mono_ns() ^ ((uint64_t)(uintptr_t)e << 16) ^ 0x9e3779b97f4a7c15ULL;
	char idbuf[512];
	if (!o->identity) {
		rc = sf_elect_default_identity(idbuf, sizeof(idbuf));
		if (rc) {
			snprintf(err, errlen, "could not make an identity: %s", strerror(-rc));
			free(e);
			return rc;
		}
	}
	e->ns = strdup(o->ns);
	e->name = strdup(o->name);
	e->identity = strdup(o->identity ? o->identity : idbuf);
	size_t kl = strlen(o->ns) + strlen(o->name) + 2;
	e->key = malloc(kl);
	size_t fl = strlen(o->name) + 16;
	e->field_selector = malloc(fl);
	if (!e->ns || !e->name || !e->identity || !e->key || !e->field_selector) {
		rc = -ENOMEM;
		goto fail;
	}
	snprintf(e->key, kl, "%s/%s", o->ns, o->name);
	snprintf(e->field_selector, fl, "metadata.name=%s", o->name);
	sf_kube_client_opts co = {.qps = -1,
	                          .timeout_ms = e->req_timeout_ms,
	                          .max_retries_429 = -1,
	                          .user_agent = o->user_agent};
	rc = sf_kube_client_new(loop, cfg, &co, &e->kc);
	if (rc) {
		snprintf(err, errlen, "could not create the election's API client: %s",
		         strerror(-rc));
		goto fail;
	}
	uv_timer_t *timers[NTIMERS] = {&e->tick,        &e->expiry,      &e->fence,
	                               &e->watch_retry, &e->ready_retry, &e->defer};
	for (int i = 0; i < NTIMERS; i++) {
		uv_timer_init(loop, timers[i]);
		timers[i]->data = e;
	}
	*out = e;
	return 0;
fail:
	free(e->ns);
	free(e->name);
	free(e->identity);
	free(e->key);
	free(e->field_selector);
	free(e);
	return rc;
}

int sf_elect_start(sf_elect *e)
{
	if (e->closing || e->stopped)
		return -ESHUTDOWN;
	if (e->started)
		return -EALREADY;
	e->started = 1;
	e->last_api_ok = sf_mono_ns();
	char l[24], r[24], t[24];
	ELOG(e, SF_LOG_INFO, "campaigning for the lease", "leaseDurationMs", ms_str(l, e->lease_ns),
	     "renewDeadlineMs", ms_str(r, e->renew_ns), "retryPeriodMs", ms_str(t, e->retry_ns),
	     NULL);
	watch_start(e);
	poll_get(e);
	schedule_tick(e);
	return 0;
}

int sf_elect_fence_attach(sf_elect *e, sf_kube_client *c)
{
	if (e->closing)
		return -ESHUTDOWN;
	for (size_t i = 0; i < e->ngated; i++)
		if (e->gated[i] == c)
			return -EEXIST;
	if (e->ngated == MAX_GATED)
		return -ENOSPC;
	e->gated[e->ngated++] = c;
	sf_kube_client_set_write_gate(c, gate_fn, e);
	return 0;
}

void sf_elect_fence_detach(sf_elect *e, sf_kube_client *c)
{
	for (size_t i = 0; i < e->ngated; i++) {
		if (e->gated[i] == c) {
			e->gated[i] = e->gated[--e->ngated];
			sf_kube_client_set_write_gate(c, NULL, NULL);
			return;
		}
	}
}

int sf_elect_is_leader(const sf_elect *e)
{
	return e->leading;
}

uint64_t sf_elect_term(const sf_elect *e)
{
	return e->term;
}

const char *sf_elect_identity(const sf_elect *e)
{
	return e->identity;
}

const char *sf_elect_leader(const sf_elect *e)
{
	return e->leader_reported ? e->leader_reported : "";
}

int sf_elect_healthz(const sf_elect *e, char *msg, size_t n)
{
	int64_t now = sf_mono_ns();
	if (e->started && !e->stopped && now - e->last_api_ok > e->api_bound_ns) {
		snprintf(msg, n, "leader election: the Lease API has not answered for %.1f s (%s)",
		         (double)(now - e->last_api_ok) / 1e9,
		         e->last_err[0] ? e->last_err : "no answer");
		return -EIO;
	}
	return sf_elect_livez(e, msg, n);
}

int sf_elect_livez(const sf_elect *e, char *msg, size_t n)
{
	int64_t now = sf_mono_ns();
	if (sf_elect_watchdog_tripped(e->leading, e->last_renew, e->lease_ns, e->watchdog_ns,
	                              now)) {
		snprintf(msg, n,
		         "leader election: leading but the lease was not renewed for %.1f s",
		         (double)(now - e->last_renew) / 1e9);
		return -EIO;
	}
	snprintf(msg, n, "ok");
	return 0;
}

void sf_elect_stats_get(const sf_elect *e, sf_elect_stats *out)
{
	*out = e->st;
	out->is_leader = e->leading;
	out->leader_active = e->active;
	out->term = e->term;
	out->seconds_since_renew =
	    e->last_renew ? (double)(sf_mono_ns() - e->last_renew) / 1e9 : -1.0;
	out->writes_cancelled = 0;
	for (size_t i = 0; i < e->ngated; i++) {
		sf_kube_client_stats cs;
		sf_kube_client_stats_get(e->gated[i], &cs);
		out->writes_cancelled += cs.writes_cancelled;
	}
}

int sf_elect_metrics_write(const sf_elect *e, sf_prom *p)
{
	sf_elect_stats s;
	sf_elect_stats_get(e, &s);
	const char *const L[] = {"name", e->name, NULL};
	sf_prom_add_u(sf_prom_family_get(p, "leader_election_master_status", SF_PROM_GAUGE,
	                                 "1 while this replica holds the lease, 0 on standbys."),
	              L, (uint64_t)s.is_leader);
	const struct {
		const char *name, *help;
		unsigned long v;
	} counters[] = {
	    {"acquisitions", "Times this replica took the lease.", s.acquisitions},
	    {"losses", "Terms that ended because the lease was lost.", s.losses},
	    {"leader_changes", "Changes of the lease holder seen by this replica.",
	     s.leader_changes},
	    {"renews", "Successful lease writes (create, acquire, renew).", s.renews_ok},
	    {"renew_failures", "Lease writes by the leader that failed.", s.renews_failed},
	    {"conflicts", "Lease writes answered 409 Conflict.", s.conflicts},
	    {"fence_closures", "Times the write fence closed.", s.fence_closures},
	    {"fence_refused_writes", "Writes refused by the fence.", s.writes_refused},
	    {"cancelled_writes", "Writes cancelled in flight on fenced clients.",
	     s.writes_cancelled},
	};
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		char name[96];
		snprintf(name, sizeof(name), "steadfast_leader_election_%s_total",
		         counters[i].name);
		sf_prom_add_u(sf_prom_family_get(p, name, SF_PROM_COUNTER, counters[i].help), L,
		              counters[i].v);
	}
	sf_prom_add_f(sf_prom_family_get(p, "steadfast_leader_election_lease_transitions",
	                                 SF_PROM_GAUGE,
	                                 "leaseTransitions of the Lease as last observed."),
	              L, (double)s.lease_transitions);
	sf_prom_add_u(sf_prom_family_get(p, "steadfast_leader_election_leader_active",
	                                 SF_PROM_GAUGE, "1 while leader work runs."),
	              L, (uint64_t)s.leader_active);
	sf_prom_add_f(sf_prom_family_get(p, "steadfast_leader_election_seconds_since_renew",
	                                 SF_PROM_GAUGE,
	                                 "Seconds since this replica last renewed the lease (-1: "
	                                 "never)."),
	              L, s.seconds_since_renew);
	return sf_prom_add_hist(
	    sf_prom_family_get(p, "steadfast_leader_election_renew_duration_seconds",
	                       SF_PROM_HISTOGRAM, "Latency of successful lease writes."),
	    L, &s.renew_latency);
}
