/*
 * controller.h - the AppWrapper controller: informers, work queue, and the
 * executor that runs the phase machine's plans against the API.
 *
 * Every replica runs the informers (AppWrappers, labelled pods, and one per
 * component kind in use through cache/kinds, all selected by the
 * appwrapper label), so a standby holds a warm cache. Only a leader
 * reconciles: sf_awctl_lead first waits until the AppWrapper and pod
 * informers have each applied a quorum list asked after the Lease write
 * was acknowledged (sf_barrier), then opens the queue; sf_awctl_unlead
 * drops the queue and this term's memory at once.
 * Writes go through the client's write gate (the election fence).
 *
 * The controller keeps, per AppWrapper, what only it can know: the creates
 * it issued and has not yet seen in its cache (expectations), the results
 * of its live reads and deletes. Everything that must survive a failover
 * lives in the AppWrapper's status.
 */
#ifndef STEADFAST_CONTROLLER_H
#define STEADFAST_CONTROLLER_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "steadfast/awapi.h"
#include "steadfast/awconfig.h"
#include "steadfast/buf.h"
#include "steadfast/prom.h"
#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/events.h"

typedef struct sf_awctl sf_awctl;

typedef struct sf_awctl_opts {
	const sf_aw_config *cfg; /* borrowed, must outlive the controller */
	const char *ns;          /* watch one namespace; NULL/"" = all */
	unsigned workers;        /* AppWrappers reconciled at once; 0 = 16 */
	/* how long a create of ours may stay unseen by the cache before the
	 * component counts as absent (then still needs a live read); 0 = 60 s */
	long expectation_timeout_ms;
	/* The recorder the reconcile writes its Events through (borrowed,
	 * must outlive the controller); required. */
	sf_events *events;
	/* fault injection for tests: the component and pod informers apply
	 * watch events up to this many ms late (see sf_reflector_opts); 0 = off */
	long fault_watch_delay_ms;
	/* fault injection for tests: the pod informer applies every watch
	 * event exactly this many ms late (a pod cache that is behind while
	 * the component cache is not); 0 = off */
	long fault_pod_watch_delay_ms;
	/* fault injection for tests: the component informers apply every
	 * watch event exactly this many ms late (a standby whose component
	 * cache is behind: they are not part of the freshness barrier); 0 =
	 * off */
	long fault_component_watch_delay_ms;
	/* fault injection for tests: the component and pod informers hold
	 * every watch event this many ms and deliver only the newest state of
	 * each object (intermediate states unobserved); 0 = off */
	long fault_watch_coalesce_ms;
	/* fault injection for tests: the answers to this many successful
	 * component creates are dropped (taken as a retryable failure), as
	 * when a create lands but its answer is lost; 0 = off */
	long fault_lost_create_answers;
	/* fault injection for tests: the process kills itself (SIGKILL) right
	 * after the API server acknowledged its Nth write of an AppWrapper,
	 * a component or a pod (Events not counted), as a leader that dies at
	 * any point of a lifecycle; 0 = off */
	long fault_crash_after_write;
	/* fault injection for tests: the AppWrapper watch stalls this many ms
	 * after start (see sf_reflector_opts.fault_stall_after_ms), and the
	 * AppWrapper and pod watches' progress bound; 0 = off / 150 s */
	long fault_watch_stall_after_ms;
	long fault_watch_progress_timeout_ms;
	/* fault injection for tests: the live node reads of an evacuation
	 * check start this many ms after it is planned; 0 = at once */
	long fault_node_check_delay_ms;
} sf_awctl_opts;

/* What the controller's pod and component caches keep of each object
 * (sf_obj_project paths, NULL-terminated): only what it reads, as
 * controller-runtime users do with cache transforms. Exposed so a test can
 * show that nothing dropped is ever read. */
extern const char *const SF_AWCTL_POD_FIELDS[];
extern const char *const SF_AWCTL_COMPONENT_FIELDS[];
/* What the AppWrapper cache drops (sf_obj_omit); it keeps the rest. */
extern const char *const SF_AWCTL_AW_OMIT[];

/* client is borrowed (writes pass its write gate). */
int sf_awctl_new(uv_loop_t *loop, sf_kube_client *client, const sf_awctl_opts *opts,
                 sf_awctl **out);
/* Starts the informers (every replica). */
int sf_awctl_start(sf_awctl *c);
/* Becomes leader (the election's ready hook, called once the Lease write
 * rv was acknowledged; NULL = no election, just synced): once the caches
 * are fresh, calls ready(ud, 0); ready(ud, err) if they cannot be. Nothing
 * is reconciled before sf_awctl_activate. */
int sf_awctl_lead(sf_awctl *c, const char *rv, void (*ready)(void *ud, int err), void *ud);
/* Starts reconciling (the fence is open: on_started_leading). -EAGAIN if
 * the barrier of the current term has not passed. */
int sf_awctl_activate(sf_awctl *c);
/* Stops reconciling at once (queue dropped, per-object memory forgotten);
 * requests in flight finish but start nothing new. */
void sf_awctl_unlead(sf_awctl *c);
/* Stops everything; cb when all handles and requests are done. */
void sf_awctl_stop(sf_awctl *c, void (*cb)(void *ud), void *ud);
void sf_awctl_free(sf_awctl *c);

/* 1 when the AppWrapper and pod informers have synced (readiness). */
int sf_awctl_synced(const sf_awctl *c);
int sf_awctl_leading(const sf_awctl *c);
/* The Node informer (Autopilot's monitoring, cfg.autopilot), NULL when
 * nodes are not watched; for what else follows the nodes' health (the
 * slack ClusterQueue). */
sf_informer *sf_awctl_node_informer(const sf_awctl *c);
/* 1 when the node cache may raise evacuation suspicions: it holds a list
 * asked for since this term began. */
int sf_awctl_nodes_fresh(const sf_awctl *c);

typedef struct sf_awctl_stats {
	unsigned long reconciles, reconcile_errors, requeues;
	unsigned long creates, adopted, deletes, status_writes, conflicts;
	unsigned long missing_suppressed; /* suspicions a live read or grace disproved */
	unsigned long verifies;           /* live reads made for the missing check */
	unsigned long finds; /* live lists of a kind for a component with a generated name */
	unsigned long pods_suppressed; /* too few cached pods that a live list disproved */
	unsigned long pod_lists;       /* live pod lists made before InsufficientPodsReady */
	unsigned long stale_reads;     /* Running steps where the cache lacked a component */
	unsigned long node_checks;     /* live node reads made before an evacuation */
	unsigned long evacuations;     /* resets for Autopilot's NoExecute */
	unsigned long evac_suppressed; /* NoExecute suspicions the live reads disproved */
	unsigned long events_created, events_aggregated;
} sf_awctl_stats;
void sf_awctl_stats_get(const sf_awctl *c, sf_awctl_stats *out);
/* Adds to a /metrics exposition the controller's caches: the stores of
 * AppWrappers, pods and nodes, and the component kinds. */
int sf_awctl_cache_metrics_write(const sf_awctl *c, sf_prom *p);
/* Adds to a /metrics exposition: steadfast_watch_restarts_total,
 * appwrapper_phase_total, controller_runtime_reconcile_*, workqueue_*,
 * steadfast_appwrapper_*. */
int sf_awctl_metrics_write(const sf_awctl *c, sf_prom *p);

#endif
