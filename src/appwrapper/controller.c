/*
 * controller.c - the AppWrapper controller's lifecycle and metrics (see
 * controller.h).
 *
 * Making the controller (its queue and informers), starting the informers
 * on every replica, taking the lead (the queue opens once this term's
 * barrier has passed) and giving it up (the queue closes and this term's
 * memory is dropped at once), stopping (every part closed before the stop
 * callback runs), and the metrics. What else runs with leadership (the
 * admission parameters, the slack ClusterQueue, the Event recorder the
 * reconcile borrows) is the manager's to start and stop (runnables.h).
 *
 * The rest of the controller is split by concern, sharing ctl.h:
 * reconcile.c is the reconcile of one key, executor.c carries out its
 * plan, informers.c is what the controller watches, and memory.c what it
 * remembers per AppWrapper in a term.
 */
#include "ctl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/log.h"

#define FIELD_MANAGER "steadfast"

/* upper bounds in seconds of the reconcile time histogram */
static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60};

/* ---- metrics helpers ---- */

void sf_awctl_count_phase(sf_awctl *c, const char *ns, sf_aw_phase p)
{
	if (p < 0 || p >= SF_AW_NPHASES)
		return;
	unsigned long *v = sf_strmap_get(c->phase_counts, ns);
	if (!v) {
		v = calloc(SF_AW_NPHASES, sizeof(*v));
		if (!v || sf_strmap_put(c->phase_counts, ns, v, NULL) < 0) {
			free(v);
			return;
		}
	}
	v[p]++;
}

/* ---- lifecycle ---- */

int sf_awctl_new(uv_loop_t *loop, sf_kube_client *client, const sf_awctl_opts *opts, sf_awctl **out)
{
	if (!opts || !opts->events)
		return -EINVAL;
	sf_awctl *c = calloc(1, sizeof(*c));
	int rc = -ENOMEM;
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->client = client;
	c->events = opts->events;
	sf_prom_hist_init(&c->reconcile_time, buckets, sizeof(buckets) / sizeof(buckets[0]));
	if (opts && opts->cfg)
		c->cfg = *opts->cfg;
	else
		sf_awcfg_defaults(&c->cfg);
	c->expect_timeout_ms =
	    opts && opts->expectation_timeout_ms > 0 ? opts->expectation_timeout_ms : 60000;
	c->fault_delay_ms = opts ? opts->fault_watch_delay_ms : 0;
	c->fault_pod_delay_ms = opts ? opts->fault_pod_watch_delay_ms : 0;
	c->fault_comp_delay_ms = opts ? opts->fault_component_watch_delay_ms : 0;
	c->fault_coalesce_ms = opts ? opts->fault_watch_coalesce_ms : 0;
	if (c->fault_coalesce_ms > 0 && c->fault_comp_delay_ms <= 0)
		c->fault_comp_delay_ms = c->fault_coalesce_ms;
	if (c->fault_coalesce_ms > 0 && c->fault_pod_delay_ms <= 0)
		c->fault_pod_delay_ms = c->fault_coalesce_ms;
	c->fault_lost_creates = opts ? opts->fault_lost_create_answers : 0;
	c->fault_crash_after = opts ? opts->fault_crash_after_write : 0;
	c->fault_stall_ms = opts ? opts->fault_watch_stall_after_ms : 0;
	c->fault_progress_ms = opts ? opts->fault_watch_progress_timeout_ms : 0;
	c->fault_node_check_ms = opts ? opts->fault_node_check_delay_ms : 0;
	if (opts && opts->ns && opts->ns[0] && !(c->ns = strdup(opts->ns)))
		goto fail;
	sf_queue_opts q = {
	    .name = "appwrapper",
	    .max_in_flight = opts && opts->workers ? opts->workers : 16,
	    .process = sf_awctl_process,
	    .ud = c,
	};
	if ((rc = sf_awctl_mems_new(&c->mem)) < 0 ||
	    (rc = sf_strmap_new(0, 8, &c->phase_counts)) < 0 ||
	    (rc = sf_queue_new(loop, &q, &c->queue)) < 0)
		goto fail;
	sf_queue_shutdown(c->queue, NULL, NULL); /* opened by lead */
	if ((rc = sf_awctl_informers_new(c)) < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	sf_awctl_free(c);
	return rc;
}

int sf_awctl_start(sf_awctl *c)
{
	int rc;
	if (c->started)
		return -EALREADY;
	if ((rc = sf_kinds_start(c->kinds)) < 0 || (rc = sf_informer_start(c->aw_inf)) < 0 ||
	    (rc = sf_informer_start(c->pod_inf)) < 0 ||
	    (c->node_inf && (rc = sf_informer_start(c->node_inf)) < 0))
		return rc;
	c->started = 1;
	return 0;
}

static void barrier_done(void *ud, int err)
{
	sf_awctl *c = ud;
	c->barrier = NULL; /* freed after this returns */
	if (!c->leading || c->stopping)
		return;
	if (err == 0) {
		c->fresh_term = c->term;
		sf_log_info(LOGGER, "caches are at least as new as the lease", NULL);
	}
	void (*cb)(void *, int) = c->ready;
	c->ready = NULL;
	if (cb)
		cb(c->ready_ud, err);
}

int sf_awctl_lead(sf_awctl *c, const char *rv, void (*ready)(void *ud, int err), void *ud)
{
	int rc = 0;
	if (c->stopping)
		return -ESHUTDOWN;
	/* The Lease write was acknowledged before this call: a quorum list
	 * of each resource asked from now on is served after it. Per
	 * resource, because resourceVersions compare only within one
	 * resource (Leases may live on an etcd of their own). Component
	 * caches are not waited for: a stale one can only delay (absence
	 * needs a live read, Failed and Complete are terminal for the object
	 * they are on), and every replica keeps them warm. */
	int64_t since = rv ? sf_mono_ns() : 0;
	sf_barrier_cancel(c->barrier);
	c->barrier = NULL;
	c->term++;
	c->leading = 1;
	c->ready = ready;
	c->ready_ud = ud;
	sf_barrier *b = NULL;
	if ((rc = sf_barrier_new(since, barrier_done, c, &b)) < 0 ||
	    (rc = sf_barrier_add(b, c->aw_inf)) < 0 || (rc = sf_barrier_add(b, c->pod_inf)) < 0) {
		sf_barrier_cancel(b);
		c->leading = 0;
		c->ready = NULL;
		return rc;
	}
	c->barrier = b;
	/* Nodes are not in the barrier (a node cache that cannot list must
	 * not stop reconciling): the node cache only raises suspicions once
	 * it holds a list asked since now, and every evacuation waits for a
	 * live read anyway. */
	c->lead_ns = sf_mono_ns();
	if (c->node_inf)
		sf_reflector_want_fresh(sf_informer_reflector(c->node_inf), c->lead_ns);
	sf_barrier_arm(b); /* may call barrier_done at once */
	return 0;
}

int sf_awctl_activate(sf_awctl *c)
{
	if (!c->leading || c->stopping || c->fresh_term != c->term)
		return -EAGAIN;
	sf_queue_reopen(c->queue);
	sf_log_info(LOGGER, "reconciling", NULL);
	sf_awctl_enqueue_all(c);
	return 0;
}

void sf_awctl_unlead(sf_awctl *c)
{
	if (!c->leading)
		return;
	c->leading = 0;
	c->term++;
	c->ready = NULL;
	sf_barrier_cancel(c->barrier);
	c->barrier = NULL;
	sf_queue_shutdown(c->queue, NULL, NULL);
	sf_awctl_mems_clear(c->mem);
	sf_log_info(LOGGER, "stopped reconciling", NULL);
}

int sf_awctl_synced(const sf_awctl *c)
{
	return sf_informer_synced(c->aw_inf) && sf_informer_synced(c->pod_inf);
}

int sf_awctl_leading(const sf_awctl *c)
{
	return c->leading;
}

sf_informer *sf_awctl_node_informer(const sf_awctl *c)
{
	return c->node_inf;
}

static void part_closed(void *ud)
{
	sf_awctl *c = ud;
	if (--c->closing_parts > 0)
		return;
	void (*cb)(void *) = c->stop_cb;
	c->stop_cb = NULL;
	c->queue = NULL;
	if (cb)
		cb(c->stop_ud);
}

/* The last reconcile of a stopping controller is done (its sf_queue_done
 * came first): the queue may go. */
void sf_awctl_close_queue(sf_awctl *c)
{
	c->queue_close_pending = 0;
	sf_queue_close(c->queue, part_closed, c);
}

void sf_awctl_stop(sf_awctl *c, void (*cb)(void *ud), void *ud)
{
	sf_awctl_unlead(c);
	c->stopping = 1;
	c->stop_cb = cb;
	c->stop_ud = ud;
	c->closing_parts = 1;
	for (req *r = c->reqs; r; r = r->next)
		sf_kube_call_cancel(r->call);
	c->closing_parts++;
	sf_informer_stop(c->aw_inf, part_closed, c);
	c->closing_parts++;
	sf_informer_stop(c->pod_inf, part_closed, c);
	if (c->node_inf) {
		c->closing_parts++;
		sf_informer_stop(c->node_inf, part_closed, c);
	}
	c->closing_parts++;
	sf_kinds_stop(c->kinds, part_closed, c);
	c->closing_parts++;
	if (c->ops == 0)
		sf_queue_close(c->queue, part_closed, c);
	else
		c->queue_close_pending = 1; /* their sf_queue_done must come first */
	part_closed(c);
}

void sf_awctl_free(sf_awctl *c)
{
	if (!c)
		return;
	if (c->queue && !c->stopping)
		sf_queue_close(c->queue, NULL, NULL);
	sf_informer_free(c->aw_inf);
	sf_informer_free(c->pod_inf);
	sf_informer_free(c->node_inf);
	sf_barrier_cancel(c->barrier);
	sf_kinds_free(c->kinds);
	sf_awctl_mems_free(c->mem);
	sf_strmap_free(c->phase_counts, free);
	free(c->ns);
	free(c);
}

void sf_awctl_stats_get(const sf_awctl *c, sf_awctl_stats *out)
{
	*out = c->st;
	sf_events_stats es;
	sf_events_stats_get(c->events, &es);
	out->events_created = es.created;
	out->events_aggregated = es.aggregated;
}

static unsigned long watchdog_restarts(const sf_awctl *c)
{
	sf_reflector_stats a, p;
	sf_reflector_stats_get(sf_informer_reflector(c->aw_inf), &a);
	sf_reflector_stats_get(sf_informer_reflector(c->pod_inf), &p);
	unsigned long n = 0;
	if (c->node_inf) {
		sf_reflector_stats ns;
		sf_reflector_stats_get(sf_informer_reflector(c->node_inf), &ns);
		n = ns.watchdog_restarts;
	}
	return a.watchdog_restarts + p.watchdog_restarts + n + sf_kinds_watchdog_restarts(c->kinds);
}

/* One unlabelled counter. */
static void add_count(sf_prom *p, const char *name, const char *help, uint64_t v)
{
	sf_prom_add_u(sf_prom_family_get(p, name, SF_PROM_COUNTER, help), NULL, v);
}

/* AppWrappers moved to each phase, per namespace. */
static void write_phase_counts(const sf_awctl *c, sf_prom *p)
{
	sf_prom_family *f = sf_prom_family_get(p, "appwrapper_phase_total", SF_PROM_COUNTER,
	                                       "Total number of appwrappers per phase");
	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	const char *ns;
	void *v;
	while (sf_strmap_next(c->phase_counts, &it, &ns, &v)) {
		const unsigned long *cnt = v;
		for (int ph = 1; ph < SF_AW_NPHASES; ph++)
			if (cnt[ph])
				sf_prom_add_u(f,
				              (const char *[]){"namespace", ns, "phase",
				                               sf_aw_phase_name((sf_aw_phase)ph),
				                               NULL},
				              cnt[ph]);
	}
}

/* controller-runtime's reconcile counters and time. */
static void write_reconciles(const sf_awctl *c, sf_prom *p)
{
	const char *const CTL[] = {"controller", "appwrapper", NULL};
	const struct {
		const char *result;
		unsigned long v;
	} results[] = {{"success", c->res_success},
	               {"error", c->res_error},
	               {"requeue", c->res_requeue},
	               {"requeue_after", c->res_requeue_after}};
	sf_prom_family *f =
	    sf_prom_family_get(p, "controller_runtime_reconcile_total", SF_PROM_COUNTER,
	                       "Total number of reconciliations per controller");
	for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++)
		sf_prom_add_u(
		    f,
		    (const char *[]){"controller", "appwrapper", "result", results[i].result, NULL},
		    results[i].v);
	sf_prom_add_u(sf_prom_family_get(p, "controller_runtime_reconcile_errors_total",
	                                 SF_PROM_COUNTER,
	                                 "Total number of reconciliation errors per controller"),
	              CTL, c->st.reconcile_errors);
	sf_prom_add_hist(sf_prom_family_get(p, "controller_runtime_reconcile_time_seconds",
	                                    SF_PROM_HISTOGRAM,
	                                    "Length of time per reconciliation per controller"),
	                 CTL, &c->reconcile_time);
}

/* The workers in use and client-go's workqueue metrics. */
static void write_queue(const sf_awctl *c, sf_prom *p)
{
	const char *const CTL[] = {"controller", "appwrapper", NULL};
	sf_queue_metrics qm = {0};
	if (c->queue)
		sf_queue_stats(c->queue, &qm);
	sf_prom_add_u(sf_prom_family_get(p, "controller_runtime_active_workers", SF_PROM_GAUGE,
	                                 "Number of currently used workers per controller"),
	              CTL, qm.in_flight);
	const char *const Q[] = {"name", "appwrapper", NULL};
	const struct {
		const char *name;
		sf_prom_type type;
		const char *help;
		double v;
	} wq[] = {
	    {"workqueue_depth", SF_PROM_GAUGE, "Current depth of workqueue", (double)qm.depth},
	    {"workqueue_adds_total", SF_PROM_COUNTER, "Total number of adds handled by workqueue",
	     (double)qm.adds},
	    {"workqueue_retries_total", SF_PROM_COUNTER,
	     "Total number of retries handled by workqueue", (double)qm.retries},
	    {"workqueue_longest_running_processor_seconds", SF_PROM_GAUGE,
	     "How many seconds has the longest running processor for workqueue been running.",
	     qm.longest_running_s},
	    {"workqueue_unfinished_work_seconds", SF_PROM_GAUGE,
	     "How many seconds of work has been done that is in progress.", qm.unfinished_work_s},
	};
	for (size_t i = 0; i < sizeof(wq) / sizeof(wq[0]); i++)
		sf_prom_add_f(sf_prom_family_get(p, wq[i].name, wq[i].type, wq[i].help), Q,
		              wq[i].v);
	if (c->queue) {
		sf_prom_add_hist(
		    sf_prom_family_get(p, "workqueue_queue_duration_seconds", SF_PROM_HISTOGRAM,
		                       "How long in seconds an item stays in workqueue before "
		                       "being requested"),
		    Q, &qm.queue_duration);
		sf_prom_add_hist(sf_prom_family_get(p, "workqueue_work_duration_seconds",
		                                    SF_PROM_HISTOGRAM,
		                                    "How long in seconds processing an item from "
		                                    "workqueue takes."),
		                 Q, &qm.work_duration);
	}
}

/* The controller's own counters (steadfast_appwrapper_*_total). */
static void write_counts(const sf_awctl *c, sf_prom *p)
{
	const struct {
		const char *name, *help;
		unsigned long v;
	} counts[] = {
	    {"missing_suppressed",
	     "Components absent from the cache that a live read or the grace "
	     "window showed were not missing",
	     c->st.missing_suppressed},
	    {"missing_checks", "Live reads made before declaring a component missing",
	     c->st.verifies},
	    {"pods_suppressed",
	     "Steps where too few pods were cached but a live list found enough, or "
	     "all of them within the warmup grace (no InsufficientPodsReady)",
	     c->st.pods_suppressed},
	    {"pod_checks", "Live pod lists made before declaring too few pods ready",
	     c->st.pod_lists},
	    {"component_lookups",
	     "Live lists made to find a component whose name the API server chose "
	     "(generateName) before creating or deleting it",
	     c->st.finds},
	    {"node_checks", "Live node reads made before evacuating from a NoExecute node",
	     c->st.node_checks},
	    {"evacuations", "Resets of Running AppWrappers off Autopilot NoExecute nodes",
	     c->st.evacuations},
	    {"evacuations_suppressed",
	     "Steps where the node cache showed a NoExecute node that live reads did not "
	     "(no evacuation)",
	     c->st.evac_suppressed},
	    {"components_created", "Components created", c->st.creates},
	    {"components_adopted",
	     "Creates that found the component already there and owned by its AppWrapper",
	     c->st.adopted},
	    {"status_conflicts", "Status or metadata writes refused because the object had changed",
	     c->st.conflicts},
	};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		char name[96];
		snprintf(name, sizeof(name), "steadfast_appwrapper_%s_total", counts[i].name);
		add_count(p, name, counts[i].help, counts[i].v);
	}
}

int sf_awctl_cache_metrics_write(const sf_awctl *c, sf_prom *p)
{
	sf_store_metrics_add(sf_informer_store(c->aw_inf), p, SF_GVR_APPWRAPPERS.group,
	                     SF_GVR_APPWRAPPERS.resource);
	sf_store_metrics_add(sf_informer_store(c->pod_inf), p, "", "pods");
	if (c->node_inf)
		sf_store_metrics_add(sf_informer_store(c->node_inf), p, "", "nodes");
	return sf_kinds_metrics_write(c->kinds, p);
}

int sf_awctl_metrics_write(const sf_awctl *c, sf_prom *p)
{
	add_count(p, "steadfast_watch_restarts_total",
	          "Watches ended by the progress watchdog (no event or bookmark for 150 s) and "
	          "started again on a fresh connection",
	          watchdog_restarts(c));
	write_phase_counts(c, p);
	write_reconciles(c, p);
	write_queue(c, p);
	write_counts(c, p);
	return 0;
}
