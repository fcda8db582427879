/*
 * ctl.h - the AppWrapper controller's own types, private to its files
 * (controller.c, and the files it is split into by concern).
 *
 * The controller is one object (struct sf_awctl) shared by its informer
 * handlers, its reconcile and the executor of a reconcile's plan; each of
 * those lives in a file of its own, and this header is what they share:
 * the controller itself, the memory it keeps per AppWrapper for one term,
 * a reconcile in progress (op) and its requests in flight (req), and the
 * clocks they read. Nothing here is part of the library's interface
 * (steadfast/controller.h is).
 */
#ifndef STEADFAST_APPWRAPPER_CTL_H
#define STEADFAST_APPWRAPPER_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "steadfast/awconfig.h"
#include "steadfast/awnodes.h"
#include "steadfast/awphase.h"
#include "steadfast/barrier.h"
#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/controller.h"
#include "steadfast/events.h"
#include "steadfast/kinds.h"
#include "steadfast/prom.h"
#include "steadfast/queue.h"
#include "steadfast/strmap.h"
#include "steadfast/time.h"

#define LOGGER "appwrapper"

/* ---- per AppWrapper memory (this term only; memory.c) ----
 *
 * Every AppWrapper the leader has seen keeps one of these, so it is kept
 * small: the uids a component record remembers are allocated only while
 * they matter (a create not yet seen, a delete not yet gone), and the
 * record's key and uid live in its own allocation. What is remembered is
 * an optimisation, never evidence: when a uid cannot be allocated it is
 * simply not remembered, and an absent component is still read live
 * before anything is concluded from its absence. */

/* An object's name and UID from a live LIST: a pod to delete, or an
 * incarnation of a component with a generated name. */
typedef struct pod_ref {
	char *name;
	char uid[64];
	int deleting; /* has a deletionTimestamp */
} pod_ref;

typedef struct live_pods {
	sf_awp_live_pods lp;
	sf_aw_settings s;
	pod_ref *refs;
	size_t n, cap;
	/* per component of the AppWrapper the LIST was sent for, the
	 * Succeeded pods of its own the list found (owned) */
	int32_t *succeeded;
	size_t ncomp;
} live_pods;

typedef struct comp_mem {
	sf_awp_create_outcome create;
	sf_awp_confirmed live; /* the last live GET's answer: news for one step */
	char *create_msg;      /* owned; NULL = none */
	/* the name the API server chose for the object a create of ours made
	 * or adopted (generateName), until the status records it (owned) */
	char *created_name;
	int64_t lost_create_ms; /* mono: a generated create's answer was lost */
	char *expect_uid;       /* a create of ours not yet seen in the cache
	                         * (owned; NULL = none) */
	int64_t expect_ms;      /* mono */
	int64_t confirmed_ms;   /* wall */
	char *deleted_uid;      /* the object we asked to delete (owned; NULL) */
	int delete_gone;
	/* deleted_uid was the cache's copy: once the cache holds nothing by
	 * that name, its informer saw the object go (a DELETED event or a
	 * relist without it), so no live read is needed to know it is gone */
	int deleted_cached;
} comp_mem;

typedef struct aw_mem {
	/* the resourceVersion our last write returned, as its etcd revision
	 * (0 = none, or one that does not order: sf_rv_number) */
	uint64_t written_rv;
	size_t n;
	comp_mem *comp;
	/* the last live LIST of the pods (SF_AWP_ACT_LIST_PODS), for the
	 * next step only (owned; NULL = none) */
	struct live_pods *live_pods;
	/* the evidence clock when a DELETE of a component or pod of this
	 * AppWrapper was last acknowledged in this term (0 = none) */
	uint64_t deletes_acked;
	/* the nodes the last live node reads (SF_AWP_ACT_VERIFY_NODES)
	 * confirmed NoExecute for a pod there, for the next step only; owned */
	sf_awp_nodes *noexec_live;
	char strs[]; /* key (the map's), then uid, NUL-terminated */
} aw_mem;

/* The table of records (sf_strmap keyed by the work queue's key; records
 * owned by it). */
int sf_awctl_mems_new(sf_strmap **out);
void sf_awctl_mems_clear(sf_strmap *mems);
void sf_awctl_mems_free(sf_strmap *mems);
/* The record of key for the object with this uid, with at least ncomp
 * component records (new ones zeroed): made on first use, and made anew
 * when the record held is another object's (a new object under an old
 * name). NULL on -ENOMEM. Owned by the table. */
aw_mem *sf_awctl_mem_get(sf_strmap *mems, const char *key, const char *uid, size_t ncomp);
/* Drops key's record, if any. */
void sf_awctl_mem_forget(sf_strmap *mems, const char *key);
void sf_awctl_live_pods_free(live_pods *l);

void sf_awctl_uid_set(char **dst, const char *uid);
int sf_awctl_uid_is(const char *mine, const char *uid);
/* A create of ours made, or adopted, the component with this uid: it is
 * expected in the cache from now (and no deletion of it is pending). */
void sf_awctl_comp_made(comp_mem *cm, const char *uid);
/* The name the API server chose for it (NULL or "": none, once the status
 * records it); forgets that a create's answer was lost. */
void sf_awctl_created_name_set(comp_mem *cm, const char *name);
/* The cache shows the component with this uid: a create of ours with that
 * uid is no longer expected (one with another uid still is). */
void sf_awctl_expect_seen(comp_mem *cm, const char *uid);
/* 1 while a create of ours is expected and younger than timeout_ms at
 * now_mono (mono_ms), else 0 and the expectation is dropped. */
int sf_awctl_expect_pending(comp_mem *cm, int64_t now_mono, long timeout_ms);

/* ---- requests in flight ---- */

typedef struct op op;

typedef struct req {
	struct req *prev, *next;
	sf_awctl *c;
	op *o;
	sf_kube_call *call;
	void (*done)(struct req *r, const sf_kube_result *res);
	size_t idx;
	sf_kind *k;
	int force;
	int uid_cached; /* uid is the cache's copy's (else a live read's) */
	/* the component's name is generated: only a live LIST by owner and
	 * index says that none is left (one name's 404 does not) */
	int generated;
	char name[254];
	char uid[64];
	struct live_pods *pl;  /* a live pod LIST's tally (owned) */
	struct found_list *fl; /* a live LIST of a component's kind (owned) */
	char *body;            /* a create to send after a lookup (owned) */
} req;

struct op {
	sf_awctl *c;
	uint64_t term;
	char *key;
	sf_obj *aw;
	sf_awp_plan plan;
	int pending;
	int results; /* outcomes the next step must see */
	int failed;
	int wrote;
	int status_write; /* the write is a status write (else metadata) */
	int64_t t0;
	sf_awp_nodes *noexec;      /* the node cache's suspects (owned), or NULL */
	sf_awp_nodes *noexec_live; /* what the live reads confirm (owned) */
	live_pods *live_pods;      /* the live list the step read, for DELETE_PODS (owned) */
	int node_reads;            /* live node reads still out */
	int node_read_failed;
	uv_timer_t *node_delay; /* fault injection: the reads wait for it */
};

struct sf_awctl {
	uv_loop_t *loop;
	sf_kube_client *client;
	sf_aw_config cfg;
	char *ns;
	long expect_timeout_ms;
	long fault_delay_ms;
	long fault_pod_delay_ms;
	long fault_comp_delay_ms;
	long fault_coalesce_ms;
	long fault_lost_creates; /* create answers still to drop */
	long fault_crash_after;  /* kill the process after this many writes */
	long writes_acked;       /* (counted only for fault_crash_after) */
	long fault_stall_ms, fault_progress_ms;
	long fault_node_check_ms;
	sf_informer *aw_inf;
	sf_informer *pod_inf;
	/* Nodes, for Autopilot's monitoring (cfg.autopilot.monitor_nodes),
	 * else NULL. Every replica, like the other caches; the leader acts on
	 * it only after a list asked since it took the lead, and only on what
	 * a live read confirms. */
	sf_informer *node_inf;
	int64_t lead_ns; /* mono, when this term's lead began */
	sf_kinds *kinds; /* component kinds: every replica, from the AppWrapper informer */
	sf_queue *queue;
	sf_events *events; /* borrowed (sf_awctl_opts) */
	sf_strmap *mem;
	sf_strmap *phase_counts; /* ns -> unsigned long[SF_AW_NPHASES] */
	req *reqs;
	int started;
	int leading;
	uint64_t term;
	sf_barrier *barrier; /* this term's, while it waits */
	uint64_t fresh_term; /* the term whose barrier has passed */
	void (*ready)(void *ud, int err);
	void *ready_ud;
	int stopping;
	unsigned ops;            /* reconciles in progress */
	int queue_close_pending; /* close the queue once ops drain */
	int closing_parts;
	void (*stop_cb)(void *ud);
	void *stop_ud;
	sf_awctl_stats st;
	/* The evidence clock: advanced at every live read sent and every
	 * DELETE acknowledged, so that a step can tell whether a live answer
	 * was asked after a delete was done (awphase.h). */
	uint64_t evclock;
	unsigned long res_success, res_error, res_requeue, res_requeue_after;
	sf_prom_hist reconcile_time;
};

/* ---- informers (informers.c) ---- */

extern const sf_gvr SF_AWCTL_GVR_NODES;

/* Makes the informers of every replica: component kinds, AppWrappers,
 * their pods and (Autopilot) nodes. On error those made are left to
 * sf_awctl_free. */
int sf_awctl_informers_new(sf_awctl *c);
/* A leader's every AppWrapper into the queue (a new term's start). */
void sf_awctl_enqueue_all(sf_awctl *c);
/* Adds to *ns (allocated on first use) the node of pod when it is one
 * health h says a pod like it must leave; -ENOMEM. */
int sf_awctl_note_noexec(sf_awp_nodes **ns, sf_jv pod, const sf_awn_health *h, const char *node);

/* ---- the executor (executor.c) ---- */

/* A reconcile of key in this term, of aw (a reference is taken); counted
 * in c->ops until finished. NULL on -ENOMEM. */
op *sf_awctl_op_new(sf_awctl *c, const char *key, sf_obj *aw);
/* o's AppWrapper's memory, NULL when o is no longer live (another term, a
 * controller stopping) or on -ENOMEM. */
aw_mem *sf_awctl_op_mem(op *o);
/* Carries out o's plan, then finishes o. */
void sf_awctl_execute(op *o);
/* Records o's outcome (metrics, the queue: forget, requeue or rate
 * limit) and frees it. */
void sf_awctl_op_finish(op *o);

/* What the executor's files share (executor.c): requests, counted in
 * their op while out, and the op's state. */
req *sf_awctl_req_new(sf_awctl *c, op *o, void (*done)(req *, const sf_kube_result *));
void sf_awctl_req_free(req *r);
/* The client's callback of every request: unlinks r, runs r->done, frees
 * r. */
void sf_awctl_req_cb(void *ud, const sf_kube_result *res);
/* Counts a started request (rc >= 0) in o->pending, or frees it; rc. */
int sf_awctl_op_track(op *o, req *r, int rc);
/* One of o's requests is answered: the last finishes o. */
void sf_awctl_op_req_done(op *o);
/* 1 while o's term is the controller's and it is not stopping. */
int sf_awctl_op_live(const op *o);
void sf_awctl_log_result(const char *what, const op *o, const sf_kube_result *res);
/* Fault injection (fault_crash_after_write): a write was acknowledged. */
void sf_awctl_write_acked(sf_awctl *c, const char *what);

/* The actions on pods and nodes (executor_pods.c). */
void sf_awctl_start_list_pods(op *o);
void sf_awctl_delete_listed_pods(op *o);
void sf_awctl_start_verify_nodes(op *o);

/* ---- the reconcile (reconcile.c) ---- */

/* The work queue's callback: one step of key's AppWrapper. */
void sf_awctl_process(void *ud, const char *key);

/* What the controller knows of a kind's own status reports. */
int sf_awctl_kind_reports_failed(const sf_kind *k);
/* The condition by which kind k reports its own completion, or NULL. */
const char *sf_awctl_kind_complete_cond(const sf_kind *k);
int sf_awctl_kind_served(const sf_kind *k);
/* 1 if obj's status.conditions has `type` with status True. */
int sf_awctl_cond_true(sf_jv obj, const char *type);
/* The component a Succeeded pod is its own, or -1. */
int sf_awctl_succeeded_of(sf_jv pod, sf_jv comp_status);

/* ---- lifecycle and metrics (controller.c) ---- */

/* Counts an AppWrapper of namespace ns moved to phase p. */
void sf_awctl_count_phase(sf_awctl *c, const char *ns, sf_aw_phase p);
/* The last reconcile of a stopping controller is done: the queue may go. */
void sf_awctl_close_queue(sf_awctl *c);

/* ---- clocks ---- */

static inline int64_t mono_ms(void)
{
	return sf_mono_ns() / SF_NSEC_PER_MSEC;
}

static inline int64_t wall_ms(void)
{
	return sf_wall_ns() / SF_NSEC_PER_MSEC;
}

static inline uint64_t ev_tick(sf_awctl *c)
{
	return ++c->evclock;
}

#endif
