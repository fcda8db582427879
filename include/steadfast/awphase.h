/*
 * awphase.h - the AppWrapper phase machine, as a pure function.
 *
 * sf_awp_step takes one AppWrapper, what the controller observed about its
 * components and pods (from its caches, its own memory of creates and
 * deletes, and live reads it was asked to make), the settings and the time,
 * and returns a plan: the new status, a metadata patch, events, actions and
 * when to look again. It does no I/O, so every rule - including the guards
 * that keep a stale cache from failing a workload - is tested from a
 * snapshot (test/unit/test_awphase.c). The controller (controller.h) runs
 * plans against the API.
 *
 * Timers are measured, as upstream does, from conditions' lastTransitionTime
 * (wall clock, kept in the AppWrapper's status), so a restart or a failover
 * neither resets nor shortens them.
 */
#ifndef STEADFAST_AWPHASE_H
#define STEADFAST_AWPHASE_H

#include <stddef.h>
#include <stdint.h>

#include "steadfast/awapi.h"
#include "steadfast/awconfig.h"
#include "steadfast/awstatus.h"
#include "steadfast/jdoc.h"
#include "steadfast/json.h"

#define SF_AW_QUEUE_LABEL "kueue.x-k8s.io/queue-name"

/* ---- what the controller observed ----
 *
 * Two kinds of input, kept apart by type so that each rule can be checked
 * where it is written:
 *  - sf_awp_cached: what this replica's informer caches show. A suspicion
 *    only: a cache may be behind (a stalled watch, a first list served from
 *    a lagging watch cache), and a cached copy may be an earlier incarnation
 *    of the same name (same controller, and a Job, Deployment or StatefulSet
 *    carries no finalizer, so a deleted one has no deletionTimestamp). It
 *    may delay a step or make it ask for a live read, never more.
 *  - evidence: what the API server answered this controller - a create's
 *    answer (sf_awp_create_outcome), a DELETE's (delete_gone), a live GET of
 *    the component (sf_awp_confirmed), a live LIST of the pods
 *    (sf_awp_live_pods) stamped with the evidence clock when it was asked.
 * Every step that is terminal, destructive, quota-releasing, create-skipping
 * or success-declaring takes evidence only, and plans the live read it
 * lacks (docs/failure-semantics.md, "Evidence by step"). */

typedef enum {
	/* not in the cache, and no create of ours is waiting to be seen */
	SF_AWP_COMP_ABSENT = 0,
	/* in the cache */
	SF_AWP_COMP_PRESENT,
	/* created by us, not yet delivered to the cache (an expectation) */
	SF_AWP_COMP_PENDING,
} sf_awp_comp_state;

typedef enum {
	SF_AWP_CREATE_NONE = 0,
	SF_AWP_CREATE_OK,        /* created, or already there and ours (adopted) */
	SF_AWP_CREATE_RETRYABLE, /* e.g. a transport error or a 5xx */
	SF_AWP_CREATE_FATAL,     /* invalid, unknown kind, owned by someone else */
} sf_awp_create_outcome;

typedef enum {
	SF_AWP_LIVE_NONE = 0,
	SF_AWP_LIVE_FOUND,   /* a live GET found it (not deleting, or deleting by us) */
	SF_AWP_LIVE_MISSING, /* a live GET: NotFound, or deletionTimestamp not ours */
} sf_awp_live;

/* A suspicion: the component as this replica's cache shows it. */
typedef struct sf_awp_cached {
	sf_awp_comp_state state;
	int deleting; /* PRESENT with a deletionTimestamp */
	int failed;   /* its own controller reports Failed=True */
	int complete; /* its kind's completion condition is True */
} sf_awp_cached;

/* Evidence: the answer of a live (uncached) GET of the component, asked for
 * by an SF_AWP_ACT_VERIFY and answered since the last step (news for one
 * step). failed and complete are the found object's. */
typedef struct sf_awp_confirmed {
	sf_awp_live found; /* NONE: no live read answered since the last step */
	int failed;
	int complete;
} sf_awp_confirmed;

typedef struct sf_awp_comp {
	sf_awp_cached cached;
	sf_awp_confirmed live;
	/* wall ms when this replica last saw it created or present; 0 = not
	 * in this replica's memory (then the component's ResourcesDeployed
	 * transition time in status counts). Only ever delays a step. */
	int64_t confirmed_ms;
	/* the answer to this attempt's create (or AlreadyExists and a live
	 * read of an object this AppWrapper controls, not being deleted) */
	sf_awp_create_outcome create;
	const char *create_msg; /* for RETRYABLE/FATAL */
	/* with create OK, for a template with metadata.generateName: the name
	 * the API server gave the object created or adopted (borrowed) */
	const char *created_name;
	/* the API server said nothing of ours is left under that name: a
	 * DELETE answered NotFound or a UID conflict, a live read found
	 * nothing or another's object, or the informer dropped the very
	 * object a DELETE of ours was acknowledged for */
	int delete_gone;
	/* The component's kind cannot be resolved now (not served, or
	 * discovery failed): nothing can be said about whether it exists, so
	 * no step may treat it as missing or deleted. unresolved_msg says
	 * why (borrowed). */
	int unresolved;
	const char *unresolved_msg;
	/* Its kind reports its own completion (a Job's Complete, a JobSet's
	 * Completed, a PyTorchJob's Succeeded): Succeeded then also needs
	 * a live read that finds it complete, pod counts alone are not
	 * enough. */
	int completion_known;
	/* The succeeded pods that are this component's own
	 * (sf_awp_pod_component): in the pod cache's tally (pods), and in
	 * the live list's (live_pods, when one was answered). Succeeded
	 * counts each component's own pods up to the number it expects, so
	 * that one component's surplus (a Job of completions 2 and
	 * parallelism 1 expects one pod and leaves two) never stands in for
	 * another's pods. */
	int32_t succeeded, live_succeeded;
} sf_awp_comp;

typedef struct sf_awp_pods {
	int32_t pending, running, succeeded, failed;
	int32_t total; /* labelled pods present (deleting ones included) */
	int terminal_failure;
	/* the first failed pod, for the Unhealthy message and the event */
	int have_fail;
	char fail_pod[254];
	char fail_container[64];
	char fail_reason[64];
	char fail_message[256]; /* start of the termination message */
	int fail_exit_code;
} sf_awp_pods;

/* Adds one pod (a cached object) to the summary: phase counts, terminal
 * exit codes per the settings, first failure details. */
void sf_awp_pods_add(sf_awp_pods *p, sf_jv pod, const sf_aw_settings *s);

/* Which component a pod of the AppWrapper is, by name: i when the pod is
 * component i itself (componentStatus[i] is a v1 Pod of that name), or
 * when its controller owner reference names component i (same API group,
 * kind and name: a Job's, StatefulSet's, PyTorchJob's or RayCluster's
 * pods); -1 when it names another object (a Deployment's ReplicaSet, a
 * JobSet's Jobs) or none. component_status is status.componentStatus. */
int sf_awp_pod_component(sf_jv pod, sf_jv component_status);

/* Evidence: a live (uncached) LIST of the AppWrapper's labelled pods, asked
 * for by an SF_AWP_ACT_LIST_PODS, news for the next step only. asked is the
 * controller's evidence clock when the LIST was sent, comparable with
 * sf_awp_input.deletes_acked. */
typedef struct sf_awp_live_pods {
	sf_awp_pods pods;
	int64_t answered_ms; /* wall */
	uint64_t asked;
} sf_awp_live_pods;

/* Node names, sorted and distinct; more counts the names that did not fit. */
#define SF_AWP_MAX_NODES 16
typedef struct sf_awp_nodes {
	char name[SF_AWP_MAX_NODES][254];
	size_t n;
	size_t more;
} sf_awp_nodes;
/* Adds node to ns (once). */
void sf_awp_nodes_add(sf_awp_nodes *ns, const char *node);
/* "[a b c]" (and " and N more" when some did not fit) into buf. */
void sf_awp_nodes_str(const sf_awp_nodes *ns, char *buf, size_t n);

typedef struct sf_awp_input {
	sf_jv aw; /* the AppWrapper as cached */
	const sf_aw_config *cfg;
	const sf_aw_settings *s;
	int64_t now_ms;          /* wall clock */
	const sf_awp_comp *comp; /* per spec.components index */
	size_t ncomp;
	const sf_awp_pods *pods; /* a suspicion: the pod cache's */
	int64_t expected_pods;
	/* Evidence: a live LIST of the pods answered since the last step
	 * (NULL if none). Only a live list answered after the pods' grace
	 * expired may turn too few pods into Unhealthy; only one asked after
	 * every DELETE this term had acknowledged (deletes_acked) may end a
	 * deletion. */
	const sf_awp_live_pods *live_pods;
	/* The evidence clock when, in this term, a DELETE of this
	 * AppWrapper's components or pods was last acknowledged or a
	 * component was last learned gone (a 404 says someone deleted it at an
	 * unknown moment); 0 = none: a new term asks every live read after the
	 * last term's writes. */
	uint64_t deletes_acked;
	/* Autopilot: the nodes where the node cache shows a NoExecute label
	 * value for a resource that a Running pod of this AppWrapper there
	 * uses (NULL or empty: none). A suspicion only: evacuation needs
	 * noexec_live, the nodes a live read of each suspected node (asked
	 * for by an SF_AWP_ACT_VERIFY_NODES, answered since the last step)
	 * confirmed; NULL when no live read was answered since the last
	 * step. */
	const sf_awp_nodes *noexec;
	const sf_awp_nodes *noexec_live;
} sf_awp_input;

/* ---- reading the API server's answers ----
 *
 * What an answer about one component proves, as pure functions, so that the
 * controller and the model checker (test/model) read answers the same way. */

typedef enum {
	SF_AWP_ANS_ERROR = 0,   /* no answer, or one that says nothing (5xx, 403...) */
	SF_AWP_ANS_ABSENT,      /* the API server's NotFound naming this object */
	SF_AWP_ANS_FOREIGN_404, /* a 404 that is not that (a proxy's, a version not served) */
	SF_AWP_ANS_CONFLICT,    /* 409: the UID precondition failed (a DELETE) */
	SF_AWP_ANS_EXISTS,      /* 409 AlreadyExists (a create) */
	SF_AWP_ANS_INVALID,     /* 422 Invalid */
	SF_AWP_ANS_OK,          /* 2xx; for a GET, the object below */
} sf_awp_ans_kind;

typedef struct sf_awp_answer {
	sf_awp_ans_kind kind;
	/* the object a GET returned (ANS_OK) */
	int owned;     /* controlled by this AppWrapper's UID */
	int deleting;  /* has a deletionTimestamp */
	int ours_gone; /* its UID is one a DELETE of ours was acknowledged for */
	int failed;    /* its kind's Failed condition is True */
	int complete;  /* its kind's completion condition is True */
} sf_awp_answer;

/* A create's answer: 1 when it was AlreadyExists (a live read then decides,
 * sf_awp_read_adopt), else 0 with *out: OK for 2xx; FATAL for Invalid
 * (422), as upstream (a kind that is not served is refused before any
 * create is sent); RETRYABLE for anything else - a 400 (what a webhook that
 * refuses without a code answers, often for a passing reason), a 5xx, a
 * transport error, a NotFound - retried within the admission grace. */
int sf_awp_read_create(const sf_awp_answer *a, sf_awp_create_outcome *out);
/* A live GET's answer (SF_AWP_ACT_VERIFY) as evidence. Returns 0 with *out
 * set, or -EAGAIN when the answer proves nothing (then nothing is
 * concluded and the step is retried). */
int sf_awp_read_verify(const sf_awp_answer *a, sf_awp_confirmed *out);
/* A GET after a create's AlreadyExists: OK (adopt: ours, not being
 * deleted), RETRYABLE (an earlier incarnation still going, or gone
 * meanwhile), FATAL (someone else's); -EAGAIN when it proves nothing. */
int sf_awp_read_adopt(const sf_awp_answer *a, sf_awp_create_outcome *out);
/* A DELETE's answer, or the GET before one: 1 when nothing of ours is left
 * under the name (*gone: NotFound for that name, or another's object), 0
 * when a DELETE is (still) needed or was acknowledged - a 409 (the UID
 * precondition failed) included: the name may hold a newer incarnation of
 * ours, so a live GET decides - and -EAGAIN when it proves nothing. */
int sf_awp_read_delete(const sf_awp_answer *a, int *gone);

#ifdef SF_AWP_MUTANTS
/* Test builds only (test/model compiles phase*.c with SF_AWP_MUTANTS):
 * known bugs of the evidence rules, each switched on alone, to prove that
 * the model checker finds every one of them. */
typedef enum {
	SF_AWP_MUT_NONE = 0,
	SF_AWP_MUT_RESUME_TRUSTS_CACHE,    /* Resuming takes a cached copy as created */
	SF_AWP_MUT_DELETE_ON_POD_CACHE,    /* a deletion ends on the pod cache's word */
	SF_AWP_MUT_MISSING_WITHOUT_LIVE,   /* MissingComponent on the cache past grace */
	SF_AWP_MUT_FAILED_FROM_CACHE,      /* a reset for a cached Failed=True */
	SF_AWP_MUT_LIST_BEFORE_DELETE,     /* a pod list asked before the DELETE's ack ends it */
	SF_AWP_MUT_SUCCESS_FROM_CACHE,     /* Succeeded from the caches' pods and completion */
	SF_AWP_MUT_FAILED_PODS_FROM_CACHE, /* a reset for failed pods only the cache shows */
	SF_AWP_MUT_FOREIGN_404_ABSENT,     /* a foreign 404 read as absence */
	SF_AWP_MUT_ADOPT_DELETING,         /* AlreadyExists adopts an incarnation being deleted */
	SF_AWP_MUT_SUCCESS_ACROSS,         /* pods summed across components, as upstream */
	SF_AWP_MUT_N,
} sf_awp_mutant;
extern sf_awp_mutant sf_awp_mutation;
const char *sf_awp_mutant_name(sf_awp_mutant m);
#endif

/* ---- the plan ---- */

typedef enum {
	SF_AWP_ACT_CREATE = 1,   /* create component idx (after the status write) */
	SF_AWP_ACT_DELETE,       /* delete component idx, background propagation */
	SF_AWP_ACT_DELETE_FORCE, /* delete component idx with grace period 0 */
	SF_AWP_ACT_DELETE_PODS,  /* delete, grace period 0, every pod the input's live list found */
	SF_AWP_ACT_VERIFY,       /* live GET of component idx */
	SF_AWP_ACT_LIST_PODS,    /* live LIST of the labelled pods */
	SF_AWP_ACT_VERIFY_NODES, /* live GET of each node in input noexec (evacuation check) */
} sf_awp_act_kind;

typedef struct sf_awp_act {
	sf_awp_act_kind kind;
	size_t idx;
} sf_awp_act;

typedef struct sf_awp_event {
	int warning;
	char reason[64];
	char message[1024];
} sf_awp_event;

#define SF_AWP_MAX_EVENTS 4

typedef struct sf_awp_plan {
	/* New full status (owned), NULL if unchanged. Written with a merge
	 * patch that carries the resourceVersion the plan was made from. */
	sf_jd *status;
	/* Main-resource merge patch (finalizers, labels, suspend), NULL if
	 * none. When set, status is NULL and no actions are planned: the
	 * next pass works from the object the patch returns. */
	sf_jd *meta_patch;
	sf_aw_phase from, to;
	sf_awp_act *acts; /* owned */
	size_t nacts;
	sf_awp_event events[SF_AWP_MAX_EVENTS];
	size_t nevents;
	/* Look again after this many ms; -1 = only on the next change. 0 =
	 * as soon as the writes above are done. */
	int64_t requeue_ms;
	/* for logs and metrics */
	const char *why;           /* short reason for the step, static */
	int suppressed_missing;    /* a missing-component suspicion was not acted on */
	int suppressed_pods;       /* too few cached pods, but a live list found enough */
	int suppressed_stale;      /* a cached failure or completion a live read disproved */
	int suppressed_evacuation; /* NoExecute in the node cache, not in live reads */
	int evacuated;             /* reset for Autopilot's NoExecute */
	int skipped;               /* managed by another controller */
} sf_awp_plan;

/* Computes the plan. Returns 0, -ENOMEM, or -EINVAL with err set when the
 * AppWrapper cannot be read (then the plan records a CreateFailed-style
 * failure when one can be written; see the code). */
int sf_awp_step(const sf_awp_input *in, sf_awp_plan *plan, char *err, size_t errlen);
void sf_awp_plan_free(sf_awp_plan *plan);

/* The componentStatus list an AppWrapper starts with (name, kind,
 * apiVersion and pod sets of every component). */
int sf_awp_component_status_init(sf_jv aw, sf_jd **out, char *err, size_t errlen);

#endif
