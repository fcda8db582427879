/*
 * manager.c - wires client, election and AppWrapper controller on one loop
 * (see manager.h).
 *
 * The order of a leadership term: the election takes the Lease and calls
 * the ready hook with the Lease write's resourceVersion; the controller's
 * barrier brings every cache to at least that version; the election opens
 * the fence and reports started leading; the controller starts
 * reconciling. When the term ends (renew deadline, conflict, release) the
 * fence is closed first and the controller stops at once, keeping its
 * informers warm for the next term.
 *
 * Beside the reconciler the manager runs its runnables (runnables.h): the
 * start-up look at the installed admission on every replica, and, while
 * reconciling, the upkeep of the admission parameters and of the slack
 * ClusterQueue's lendingLimits and the Event recorder the reconcile
 * borrows. They start once the controller has started reconciling and stop
 * once it has stopped, in that order; the recorder is closed once the
 * controller that borrows it has stopped.
 */
#include "steadfast/manager.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "steadfast/client.h"
#include "steadfast/review.h"
#include "steadfast/tlscred.h"
#include "steadfast/config.h"
#include "steadfast/admcheck.h"
#include "steadfast/admparams.h"
#include "steadfast/controller.h"
#include "steadfast/election.h"
#include "steadfast/events.h"
#include "steadfast/fault.h"
#include "steadfast/heap.h"
#include "steadfast/log.h"
#include "steadfast/prom.h"
#include "steadfast/runnables.h"
#include "steadfast/server.h"
#include "steadfast/slackcq.h"

#define LOGGER "manager"
/* the logger of the lines that were the AppWrapper controller's */
#define AW_LOGGER "appwrapper"

typedef struct mgr {
	uv_loop_t loop;
	sf_kube_config *cfg;
	sf_kube_client *client;
	sf_elect *e;
	sf_awctl *ctl;
	const sf_aw_config *acfg; /* borrowed (the options', or defaults) */
	sf_runnables *run;
	sf_events *events;       /* the recorder the controller borrows */
	sf_admcheck *admcheck;   /* the start-up look at installed admission */
	sf_admparams *admparams; /* the leader's upkeep of its parameters, or NULL */
	sf_slackcq *slackcq;     /* the leader's upkeep of the slack queue's limits, or NULL */
	uv_signal_t sigterm, sigint;
	uv_timer_t trim; /* gives free heap pages back (sf_heap_trim) */
	sf_srv *health, *metrics;
	/* secure metrics: the certificate, and the reviews' own client (not
	 * write-gated by the election: reviews write nothing) */
	sf_tlscred *tlscred;
	sf_kube_client *review_client;
	sf_review *review;
	int quitting;
	int parts;
} mgr;

/* ---- probes and metrics ---- */

/* /healthz (liveness): the process answers, so its loop turns, and the
 * leader watchdog is quiet. API reachability is not part of it: restarting
 * replicas during an API outage would only make it worse (it is in
 * /readyz). */
static int on_healthz(void *ud, const sf_srv_request *req, sf_srv_response *res)
{
	mgr *m = ud;
	char msg[512];
	(void)req;
	if (m->e && sf_elect_livez(m->e, msg, sizeof(msg)) != 0) {
		res->status = 500;
		return sf_buf_printf(&res->body, "unhealthy: %s\n", msg) < 0 ? -ENOMEM : 0;
	}
	return sf_buf_puts(&res->body, "ok\n") < 0 ? -ENOMEM : 0;
}

/* /readyz: caches synced and the API server reachable. */
static int on_readyz(void *ud, const sf_srv_request *req, sf_srv_response *res)
{
	mgr *m = ud;
	char msg[512];
	(void)req;
	if (!sf_awctl_synced(m->ctl)) {
		res->status = 503;
		return sf_buf_puts(&res->body, "not ready: caches not synced\n") < 0 ? -ENOMEM : 0;
	}
	if (m->e && sf_elect_healthz(m->e, msg, sizeof(msg)) != 0) {
		res->status = 503;
		return sf_buf_printf(&res->body, "not ready: %s\n", msg) < 0 ? -ENOMEM : 0;
	}
	return sf_buf_puts(&res->body, "ok\n") < 0 ? -ENOMEM : 0;
}

/* /metrics: every module adds its families to one exposition. */
static int on_metrics(void *ud, const sf_srv_request *req, sf_srv_response *res)
{
	mgr *m = ud;
	(void)req;
	res->content_type = sf_srv_metrics_content_type();
	sf_prom *p = sf_prom_new();
	if (!p)
		return -ENOMEM;
	sf_prom_add_u(
	    sf_prom_family_get(p, "steadfast_build_info", SF_PROM_GAUGE, "Build information."),
	    (const char *[]){"version", SF_VERSION, NULL}, 1);
	if (m->e)
		sf_elect_metrics_write(m->e, p);
	sf_admparams_metrics_write(m->admparams, p);
	sf_awctl_cache_metrics_write(m->ctl, p);
	if (m->slackcq)
		sf_slackcq_metrics_write(m->slackcq, p);
	sf_awctl_metrics_write(m->ctl, p);
	if (m->events)
		sf_events_metrics_write(m->events, p);
	sf_kube_client_metrics_write(m->client, p);
	sf_heap_metrics_write(p);
	int rc = sf_prom_render(p, &res->body);
	sf_prom_free(p);
	return rc < 0 ? rc : 0;
}

/* The metrics route's guard: the request's token, reviewed. */
static void on_reviewed(void *ud, int verdict)
{
	sf_srv_verdict(ud, verdict);
}

static void guard_metrics(void *ud, const char *token, size_t len, sf_srv_pending *p)
{
	mgr *m = ud;
	sf_review_check(m->review, token, len, on_reviewed, p);
}

/* What secure metrics need: the certificate and a reviewer. */
static int secure_metrics_setup(mgr *m, const sf_mgr_opts *o)
{
	char err[512] = "";
	sf_tlscred_opts to = {.cert_dir = o->metrics_cert_path,
	                      .cert_name = o->metrics_cert_name,
	                      .key_name = o->metrics_cert_key,
	                      .err = err,
	                      .errlen = sizeof(err)};
	int rc = sf_tlscred_new(&to, &m->tlscred);
	if (rc < 0) {
		sf_log_error(LOGGER, "cannot load the metrics certificate", "error", err, NULL);
		return rc;
	}
	/* its own limit: a flood of unknown tokens is shed (429) by the
	 * reviewer's in-flight bound before it reaches the API server */
	sf_kube_client_opts co = {.qps = 20, .burst = 40, .max_retries_429 = -1};
	rc = sf_kube_client_new(&m->loop, m->cfg, &co, &m->review_client);
	if (rc == 0)
		rc = sf_review_new(&m->loop, m->review_client, NULL, &m->review);
	if (rc < 0)
		sf_log_error(LOGGER, "cannot set up metrics authorization", "error", strerror(-rc),
		             NULL);
	return rc;
}

static int serve(mgr *m, const char *bind, const char *name, sf_srv **out)
{
	char err[256] = "";
	int metrics = strcmp(name, "metrics") == 0;
	sf_srv_opts so = {.bind = bind,
	                  .name = name,
	                  .tls = metrics ? m->tlscred : NULL,
	                  .err = err,
	                  .errlen = sizeof(err)};
	int rc = sf_srv_new(&m->loop, &so, out);
	if (rc < 0) {
		sf_log_error(LOGGER, "cannot serve", "server", name, "address", bind, "error", err,
		             NULL);
		return rc;
	}
	if (!*out)
		return 0; /* disabled ("0") */
	if (strcmp(name, "health") == 0) {
		rc = sf_srv_route(*out, "/healthz", on_healthz, m);
		if (rc == 0)
			rc = sf_srv_route(*out, "/readyz", on_readyz, m);
	} else {
		rc = sf_srv_route_guarded(*out, "/metrics", on_metrics, m,
		                          m->review ? guard_metrics : NULL, m);
	}
	char port[24];
	sf_log_info(LOGGER, "serving", "server", name, "address", bind, "port",
	            sf_log_int(port, sf_srv_port(*out)), NULL);
	return rc;
}

/* ---- runnables ---- */

static void admcheck_start(void *self)
{
	mgr *m = self;
	/* every replica, once: its log shows a misinstalled admission too */
	int rc = sf_admcheck_start(m->client, m->acfg, &m->admcheck);
	if (rc < 0)
		sf_log_warn(AW_LOGGER, "cannot check the installed admission", "error",
		            strerror(-rc), NULL);
}

static void admcheck_close(void *self, void (*cb)(void *ud), void *ud)
{
	mgr *m = self;
	sf_admcheck *a = m->admcheck;
	m->admcheck = NULL;
	sf_admcheck_close(a, cb, ud);
}

static void admparams_start(void *self)
{
	sf_admparams_run(self);
}

static void admparams_stop(void *self)
{
	sf_admparams_pause(self);
}

static void admparams_close(void *self, void (*cb)(void *ud), void *ud)
{
	sf_admparams_close(self, cb, ud);
}

static void slackcq_start(void *self)
{
	sf_slackcq_run(self);
}

static void slackcq_stop(void *self)
{
	sf_slackcq_pause(self);
}

static void slackcq_close(void *self, void (*cb)(void *ud), void *ud)
{
	sf_slackcq_close(self, cb, ud);
}

/* A new term starts with no series. */
static void events_stop(void *self)
{
	sf_events_reset(self);
}

static int slack_nodes_fresh(void *ud)
{
	return sf_awctl_nodes_fresh(ud);
}

/* Adds r to the group; when it cannot, closes what r runs (r's close).
 * 0 or -ENOMEM. */
static int add_runnable(mgr *m, const sf_runnable *r)
{
	int rc = sf_runnables_add(m->run, r);
	if (rc < 0 && r->close)
		r->close(r->self, NULL, NULL);
	return rc;
}

/* The runnables, in the order they start and stop: the admission check
 * (every replica), then, while reconciling, the admission parameters, the
 * slack ClusterQueue and the Event recorder. m->events is made already. */
static int runnables_new(mgr *m, const sf_mgr_opts *o, const char *params_ns,
                         const char *params_name)
{
	int rc;
	if ((rc = sf_runnables_new(&m->run)) < 0 ||
	    (rc = add_runnable(
	         m, &(sf_runnable){.self = m, .start = admcheck_start, .close = admcheck_close})) <
	        0)
		return rc;
	if (params_name && params_name[0]) {
		sf_admparams_opts ao = {.cfg = m->acfg,
		                        .ns = params_ns,
		                        .name = params_name,
		                        .interval_ms = o->admission_params_interval_ms};
		if ((rc = sf_admparams_new(&m->loop, m->client, &ao, &m->admparams)) < 0)
			return rc;
		if ((rc = add_runnable(m, &(sf_runnable){.leader_only = 1,
		                                         .self = m->admparams,
		                                         .start = admparams_start,
		                                         .stop = admparams_stop,
		                                         .close = admparams_close})) < 0) {
			m->admparams = NULL;
			return rc;
		}
	}
	sf_informer *nodes = sf_awctl_node_informer(m->ctl);
	if (m->acfg->slack_queue_name[0] && nodes) {
		sf_slackcq_opts so = {.name = m->acfg->slack_queue_name,
		                      .autopilot = &m->acfg->autopilot,
		                      .nodes = sf_informer_store(nodes),
		                      .nodes_synced = slack_nodes_fresh,
		                      .nodes_ud = m->ctl};
		if ((rc = sf_slackcq_new(&m->loop, m->client, &so, &m->slackcq)) < 0)
			return rc;
		if ((rc = add_runnable(m, &(sf_runnable){.leader_only = 1,
		                                         .self = m->slackcq,
		                                         .start = slackcq_start,
		                                         .stop = slackcq_stop,
		                                         .close = slackcq_close})) < 0) {
			m->slackcq = NULL;
			return rc;
		}
		if ((rc = sf_slackcq_watch(m->slackcq, nodes)) < 0)
			return rc;
	}
	/* closed by the manager once the controller that borrows it stopped */
	return sf_runnables_add(
	    m->run, &(sf_runnable){.leader_only = 1, .self = m->events, .stop = events_stop});
}

/* Reconciling starts (the barrier passed, the fence open), then the
 * leader's runnables. */
static void activate(mgr *m)
{
	if (sf_awctl_activate(m->ctl) == 0)
		sf_runnables_lead(m->run);
}

/* Reconciling stops, then the leader's runnables. */
static void unlead(mgr *m)
{
	sf_awctl_unlead(m->ctl);
	sf_runnables_unlead(m->run);
}

/* ---- leadership ---- */

static void ctl_ready(void *ud, int err)
{
	mgr *m = ud;
	if (m->e)
		sf_elect_ready_done(m->e, sf_elect_term(m->e), err);
	else if (err == 0)
		activate(m);
}

static void on_ready(void *ud, sf_elect *e, uint64_t term, const char *rv)
{
	mgr *m = ud;
	char t[24];
	sf_log_info(LOGGER, "became leader; waiting for caches to catch up", "term",
	            sf_log_int(t, (long long)term), "leaseResourceVersion", rv, NULL);
	if (sf_awctl_lead(m->ctl, rv, ctl_ready, m) < 0)
		sf_elect_ready_done(e, term, -EAGAIN);
}

static void on_started(void *ud, uint64_t term)
{
	mgr *m = ud;
	(void)term;
	activate(m);
}

static void on_stopped(void *ud, uint64_t term, const char *reason)
{
	mgr *m = ud;
	char t[24];
	sf_log_info(LOGGER, "stopped leading; staying up as a candidate", "term",
	            sf_log_int(t, (long long)term), "reason", reason, NULL);
	unlead(m);
}

static void on_new_leader(void *ud, const char *id)
{
	(void)ud;
	sf_log_info(LOGGER, "leader observed", "leader", id, NULL);
}

static void part_done(void *ud)
{
	mgr *m = ud;
	m->parts--;
}

static void handle_closed(uv_handle_t *h)
{
	part_done(h->data);
}

/* The controller has stopped: the recorder it borrowed may go. */
static void ctl_stopped(void *ud)
{
	mgr *m = ud;
	sf_events *ev = m->events;
	m->events = NULL;
	sf_events_close(ev, part_done, m);
	part_done(m);
}

static void shutdown_all(mgr *m)
{
	if (m->health) {
		m->parts++;
		sf_srv_close(m->health, part_done, m);
		m->health = NULL;
	}
	if (m->metrics) {
		m->parts++;
		sf_srv_close(m->metrics, part_done, m);
		m->metrics = NULL;
	}
	m->parts += 5; /* the controller, its recorder, the client, two signals */
	sf_awctl_stop(m->ctl, ctl_stopped, m);
	m->parts++;
	sf_runnables_close(m->run, part_done, m);
	m->run = NULL;
	m->admparams = NULL;
	m->slackcq = NULL;
	if (m->e) {
		m->parts++;
		sf_elect_close(m->e, part_done, m);
	}
	sf_kube_client_close(m->client, part_done, m);
	if (m->review_client) {
		m->parts++;
		sf_kube_client_close(m->review_client, part_done, m);
		m->review_client = NULL;
	}
	uv_close((uv_handle_t *)&m->sigterm, handle_closed);
	uv_close((uv_handle_t *)&m->sigint, handle_closed);
	m->parts++;
	uv_close((uv_handle_t *)&m->trim, handle_closed);
}

static void on_released(void *ud, int err)
{
	mgr *m = ud;
	sf_log_info(LOGGER, err == 0 ? "lease released" : "lease left as it was", "error",
	            err ? strerror(-err) : NULL, NULL);
	shutdown_all(m);
}

/* Every TRIM_MS: when a burst (a relist, a wave of updates) has left at
 * least TRIM_MIN_FREE free inside the heap, its pages go back. */
#define TRIM_MS 5000
#define TRIM_MIN_FREE (1024 * 1024)

static void on_trim(uv_timer_t *t)
{
	(void)t;
	sf_heap_trim(TRIM_MIN_FREE);
}

static void on_signal(uv_signal_t *s, int signum)
{
	mgr *m = s->data;
	if (m->quitting)
		return;
	m->quitting = 1;
	sf_log_info(LOGGER, "shutting down", "signal", signum == SIGTERM ? "SIGTERM" : "SIGINT",
	            NULL);
	unlead(m);
	if (!m->e || sf_elect_release(m->e, on_released, m) != 0)
		shutdown_all(m);
}

int sf_mgr_run(const sf_mgr_opts *o)
{
	mgr m = {0};
	char err[512];
	int rc;
	sf_aw_config defaults;
	if (!o->cfg)
		sf_awcfg_defaults(&defaults);
	signal(SIGPIPE, SIG_IGN);
	sf_heap_tune();
	if (sf_kube_config_load(o->kubeconfig, o->context, &m.cfg, err, sizeof(err)) != 0) {
		sf_log_error(LOGGER, "cannot load the kubeconfig", "error", err, NULL);
		return 1;
	}
	uv_loop_init(&m.loop);
	char idbuf[300];
	const char *identity = o->identity;
	if (!identity && sf_elect_default_identity(idbuf, sizeof(idbuf)) == 0)
		identity = idbuf;
	/* the identity in the user agent: an audit log then tells which
	 * replica sent each request (they share one ServiceAccount) */
	char ua[512];
	snprintf(ua, sizeof(ua), "steadfast/%s (linux) appwrapper-controller/%.400s", SF_VERSION,
	         identity ? identity : "");
	sf_kube_client_opts co = {.user_agent = ua,
	                          .qps = o->kube_api_qps ? o->kube_api_qps : 50,
	                          .burst = o->kube_api_burst ? o->kube_api_burst : 100};
	if ((rc = sf_kube_client_new(&m.loop, m.cfg, &co, &m.client)) < 0) {
		sf_log_error(LOGGER, "cannot create the API client", "error", strerror(-rc), NULL);
		goto fail;
	}
	/* the controller's namespace: the Lease's, and the admission
	 * parameters' unless named */
	const char *own_ns = o->lease_namespace;
	if (!own_ns || !own_ns[0])
		own_ns = getenv("POD_NAMESPACE");
	if (!own_ns || !own_ns[0])
		own_ns = m.cfg->namespace;
	char params_ns[254] = "";
	const char *params = o->admission_params ? o->admission_params : SF_ADMPARAMS_NAME;
	const char *slash = strchr(params, '/');
	if (slash)
		snprintf(params_ns, sizeof(params_ns), "%.*s", (int)(slash - params), params);
	else
		snprintf(params_ns, sizeof(params_ns), "%s", own_ns ? own_ns : "");
	const char *params_name = slash ? slash + 1 : params;
	m.acfg = o->cfg ? o->cfg : &defaults;
	sf_awctl_opts ao = {
	    .cfg = m.acfg, .ns = o->watch_namespace, .workers = o->concurrent_syncs};
	if (*params_name && !params_ns[0]) {
		sf_log_error(LOGGER, "no namespace for the admission parameters", "admissionParams",
		             params, NULL);
		rc = -EINVAL;
		goto fail;
	}
	/* the tests' fault points (0 in the shipped binary) */
	ao.fault_watch_delay_ms = sf_fault("WATCH_DELAY_MS");
	ao.fault_pod_watch_delay_ms = sf_fault("POD_WATCH_DELAY_MS");
	ao.fault_component_watch_delay_ms = sf_fault("COMPONENT_WATCH_DELAY_MS");
	ao.fault_watch_coalesce_ms = sf_fault("WATCH_COALESCE_MS");
	ao.fault_lost_create_answers = sf_fault("LOST_CREATE_ANSWERS");
	ao.fault_crash_after_write = sf_fault("CRASH_AFTER_WRITE");
	ao.fault_watch_stall_after_ms = sf_fault("WATCH_STALL_AFTER_MS");
	ao.fault_watch_progress_timeout_ms = sf_fault("WATCH_PROGRESS_TIMEOUT_MS");
	ao.fault_node_check_delay_ms = sf_fault("NODE_CHECK_DELAY_MS");
	sf_events_opts evo = {.controller = SF_AW_EVENT_CONTROLLER, .instance = identity};
	if ((rc = sf_events_new(&m.loop, m.client, &evo, &m.events)) == 0) {
		ao.events = m.events;
		rc = sf_awctl_new(&m.loop, m.client, &ao, &m.ctl);
	}
	if (rc == 0)
		rc = runnables_new(&m, o, params_ns, params_name);
	if (rc < 0) {
		sf_log_error(LOGGER, "cannot create the controller", "error", strerror(-rc), NULL);
		goto fail;
	}
	if (o->leader_elect) {
		sf_elect_opts eo = {
		    .ns = own_ns,
		    .name = o->lease_name ? o->lease_name : SF_MGR_DEFAULT_LEASE,
		    .identity = identity,
		    .user_agent = ua,
		    .lease_duration_ms = o->lease_ms,
		    .renew_deadline_ms = o->renew_ms,
		    .retry_period_ms = o->retry_ms,
		    .cb = {.ready = on_ready,
		           .on_started_leading = on_started,
		           .on_stopped_leading = on_stopped,
		           .on_new_leader = on_new_leader,
		           .ud = &m},
		};
		if (sf_elect_new(&m.loop, m.cfg, &eo, &m.e, err, sizeof(err)) != 0) {
			sf_log_error(LOGGER, "invalid leader election settings", "error", err,
			             NULL);
			rc = -EINVAL;
			goto fail;
		}
		sf_elect_fence_attach(m.e, m.client);
	}
	const sf_aw_config *acfg = o->cfg ? o->cfg : &defaults;
	if (o->metrics_secure && strcmp(acfg->metrics_bind, "0") != 0 && acfg->metrics_bind[0] &&
	    (rc = secure_metrics_setup(&m, o)) < 0)
		goto fail;
	if (serve(&m, acfg->health_bind, "health", &m.health) < 0 ||
	    serve(&m, acfg->metrics_bind, "metrics", &m.metrics) < 0) {
		rc = -EADDRINUSE;
		goto fail;
	}
	uv_signal_init(&m.loop, &m.sigterm);
	uv_signal_init(&m.loop, &m.sigint);
	m.sigterm.data = m.sigint.data = &m;
	uv_signal_start(&m.sigterm, on_signal, SIGTERM);
	uv_signal_start(&m.sigint, on_signal, SIGINT);
	uv_timer_init(&m.loop, &m.trim);
	m.trim.data = &m;
	uv_timer_start(&m.trim, on_trim, TRIM_MS, TRIM_MS);
	sf_log_info(LOGGER, "starting", "version", SF_VERSION, "identity", identity,
	            "leaderElection", o->leader_elect ? "true" : "false", "apiServer",
	            m.cfg->server, "kubeconfig", m.cfg->source, NULL);
	if (o->cfg && o->cfg->ignored[0])
		sf_log_warn(
		    LOGGER,
		    "operator config: keys accepted for upstream's sake, with nothing to do "
		    "here",
		    "keys", o->cfg->ignored, NULL);
	if ((rc = sf_awctl_start(m.ctl)) < 0) {
		sf_log_error(LOGGER, "cannot start the informers", "error", strerror(-rc), NULL);
		uv_close((uv_handle_t *)&m.sigterm, NULL);
		uv_close((uv_handle_t *)&m.sigint, NULL);
		uv_close((uv_handle_t *)&m.trim, NULL);
		goto fail;
	}
	sf_runnables_start(m.run);
	if (m.e)
		sf_elect_start(m.e);
	else
		sf_awctl_lead(m.ctl, NULL, ctl_ready, &m);
	uv_run(&m.loop, UV_RUN_DEFAULT);
	sf_awctl_free(m.ctl);
	sf_review_free(m.review);
	sf_tlscred_free(m.tlscred);
	sf_kube_config_free(m.cfg);
	rc = uv_loop_close(&m.loop);
	sf_log_info(LOGGER, "stopped", NULL);
	return rc == 0 && m.parts == 0 ? 0 : 1;
fail:
	if (m.health)
		sf_srv_close(m.health, NULL, NULL);
	if (m.metrics)
		sf_srv_close(m.metrics, NULL, NULL);
	if (m.e)
		sf_elect_close(m.e, NULL, NULL);
	if (m.ctl)
		sf_awctl_stop(m.ctl, NULL, NULL);
	sf_runnables_close(m.run, NULL, NULL);
	if (m.client)
		sf_kube_client_close(m.client, NULL, NULL);
	if (m.review_client)
		sf_kube_client_close(m.review_client, NULL, NULL);
	uv_run(&m.loop, UV_RUN_DEFAULT);
	sf_awctl_free(m.ctl);
	sf_events_close(m.events, NULL, NULL);
	sf_review_free(m.review);
	sf_tlscred_free(m.tlscred);
	uv_loop_close(&m.loop);
	sf_kube_config_free(m.cfg);
	return 1;
}
