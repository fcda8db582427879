/*
 * model.h - an explicit-state model checker of the AppWrapper phase machine
 * (README.md beside this file).
 *
 * world.c holds the model: the real cluster (one AppWrapper, its
 * components - a Job, and in some scenarios a bare Pod or a Deployment -
 * each with its incarnations, and their pods), the leader's caches as
 * indexes into each resource's history, the leader's memory of its term,
 * and every transition (environment and user edits, cache deliveries,
 * reconciles running the real sf_awp_step, requests and their answers,
 * leader crashes), with the invariants. explore.c enumerates every
 * interleaving breadth-first up to a depth and prints the shortest
 * violating trace.
 */
#ifndef STEADFAST_TEST_MODEL_H
#define STEADFAST_TEST_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* ---- the bound ---- */

/* Component kinds. The first component is always the Job; a scenario may
 * give the AppWrapper a second one. */
enum { M_NONE = 0, M_JOB, M_POD, M_DEPLOY };
#define M_NCOMP 2

/* One search: from a milestone (a state a scripted run of the model
 * reaches), every interleaving of at most depth transitions, with at most
 * this many more of each environment action and perturbation. */
typedef struct m_scen {
	const char *name;
	int seed; /* the milestone (world.c, milestones[]) */
	int depth;
	int admits;                   /* Kueue admissions (suspend true -> false) */
	int preempts;                 /* Kueue preemptions (false -> true) */
	int user_deletes;             /* the user deletes the AppWrapper */
	int pod_failures;             /* a Running pod fails (exit code 1) */
	int max_pods;                 /* pods the Job controller creates */
	int ticks;                    /* seconds the clock may advance */
	int crashes;                  /* leader crashes (failover to a stale standby) */
	int lost_answers;             /* a write applied whose answer is lost */
	int foreign_404s;             /* a proxy's 404 on a live GET or a DELETE */
	int lingers;                  /* a deleted Job stays, terminating (a foreign finalizer) */
	int foreign_deletes;          /* someone else deletes a component (kubectl delete) */
	int edits;                    /* the user edits the AppWrapper's annotations */
	int second;                   /* the second component's kind: M_NONE, M_POD, M_DEPLOY */
	int completions, parallelism; /* the Job's, when not the bound's (0) */
	/* An executor variant (not executor.c's): the informer dropping the
	 * copy a DELETE of ours was acknowledged for counts as gone when the
	 * step's input is built (observe_components), not when the next
	 * DELETE action finds it gone (start_delete). Under it, the evidence
	 * clock's rule for pod lists is load-bearing (README.md). */
	int gone_on_observe;
} m_scen;

#define M_MAXSCEN 16

typedef struct m_bounds {
	const char *name;
	/* the Job component, and the Deployment's replicas */
	int completions, parallelism, replicas;
	/* settings, whole seconds */
	int admission_grace, warmup_grace, failure_grace, retry_pause, retry_limit;
	int forceful_grace, success_ttl, missing_grace;
	int liveness; /* check liveness from every state (the unmutated run) */
	int nscen;
	m_scen scen[M_MAXSCEN];
} m_bounds;

typedef struct m_result {
	uint64_t states;      /* distinct states visited */
	uint64_t transitions; /* transitions generated */
	uint64_t steps;       /* sf_awp_step calls (not served from the step cache) */
	uint64_t live_checked;
	uint64_t mut_diffs, mut_diffs_ending; /* m_mutant_diffs */
	int depth;    /* deepest level completed (or reached, on a violation) */
	int scen;     /* the scenario of the violation */
	int distinct; /* the unmutated run: distinct violations reported */
	double seconds;
	int violated;
	char violation[512];
} m_result;

/* Explores b with the phase machine as compiled (and sf_awp_mutation as
 * set); prints a line of numbers and, on a violation, the shortest trace to
 * stderr. Returns 0, or -1 when the model itself went wrong (a bound too
 * small for an array: the message says which). */
int m_explore(const m_bounds *b, m_result *r);

/* The bounds make test uses, and the larger one (STEADFAST_MODEL_BOUND=large). */
void m_bounds_small(m_bounds *b);
void m_bounds_large(m_bounds *b);

/* ---- between world.c and explore.c ---- */

#define M_AWH 10    /* AppWrapper versions kept (the leader's view .. the latest) */
#define M_JH 16     /* versions of a component's name kept */
#define M_PH 28     /* pod-set versions kept (the leader's view .. the latest) */
#define M_PODS 5    /* pods in one pod-set version */
#define M_REQ 10    /* requests in flight */
#define M_LP 5      /* pods a live list remembers */
#define M_PACK 1024 /* bytes of a packed state, at most */

/* The user's annotation edits (m_aw.ann): the retryLimit annotation set
 * to 0 or to 2 (bits 0-1: none, ANN_RL0, ANN_RL2), and
 * forcefulDeletionGracePeriodDuration set to 0s (bit 2). */
enum { ANN_RL0 = 1, ANN_RL2 = 2, ANN_RL = 3, ANN_FG0 = 4 };

typedef struct m_aw {
	uint8_t exists, suspend, fin, deleting, psi; /* psi: Kueue's podSetInfos */
	uint8_t ann;                                 /* the user's edits (ANN_*) */
	uint16_t status;                             /* interned status text, 0 = none */
} m_aw;

/* One version of a component's name (the Job's, the Pod's or the
 * Deployment's; only a Job reports Failed or Complete). */
typedef struct m_job {
	uint8_t inc; /* the incarnation holding the name, 0 = none */
	uint8_t failed, complete, deleting;
} m_job;

enum { POD_PENDING = 1, POD_RUNNING, POD_SUCCEEDED, POD_FAILED };

/* A labelled pod: made by incarnation inc of component own (the Job's
 * controller, the Deployment's), or, for a Pod component, that very
 * incarnation. */
typedef struct m_pod {
	uint8_t uid, inc, phase, deleting, own; /* uid 0: an empty slot */
} m_pod;

typedef struct m_podset {
	m_pod p[M_PODS]; /* sorted by uid, empty slots last */
} m_podset;

enum {
	RQ_CREATE = 1,
	RQ_ADOPT_GET, /* the GET after a create's AlreadyExists */
	RQ_VERIFY,    /* a live GET of the component */
	RQ_DEL_GET,   /* the GET before a DELETE (no owned copy in the cache) */
	RQ_DELETE,    /* a = uid precondition, b = the uid was the cache's */
	RQ_LIST,      /* a = the evidence clock when asked */
	RQ_DELPOD,    /* a = the pod's uid (precondition) */
};

typedef struct m_req {
	uint8_t kind, i, a, b, c; /* i: the component */
} m_req;

/* The leader's memory of one component (ctl.h's comp_mem). */
typedef struct m_cmem {
	uint8_t create, create_msg;
	uint8_t expect;    /* expect uid: a create of ours the cache has not shown */
	uint8_t confirmed; /* tick + 1 when last seen created or present, 0 = never */
	uint8_t deleted_uid, deleted_cached, delete_gone;
	uint8_t live_found, live_failed, live_complete; /* last live GET, one step */
} m_cmem;

/* The leader's memory of this term (ctl.h's aw_mem). */
typedef struct m_leader {
	m_cmem c[M_NCOMP];
	uint8_t lp_have, lp_answered, lp_asked, lp_n; /* last live LIST, one step */
	m_pod lp[M_LP];
	uint8_t deletes_acked, clock;
	int8_t written; /* our last write's version, relative to the view; <= 0: none */
	uint8_t nreq;
	m_req req[M_REQ];
} m_leader;

typedef struct m_state {
	uint8_t naw, npod;
	uint8_t njob[M_NCOMP], jview[M_NCOMP];
	m_aw aw[M_AWH]; /* aw[0] is the leader's view, aw[naw-1] the real one */
	/* job[c][jview[c]] is the leader's view of component c's name,
	 * job[c][njob[c]-1] the real one */
	m_job job[M_NCOMP][M_JH];
	m_podset pods[M_PH]; /* pods[0] is the leader's view, pods[npod-1] the real one */
	uint8_t next_inc[M_NCOMP], next_pod, tick;
	/* budgets left */
	uint8_t b_admit, b_preempt, b_udelete, b_podfail, b_pods, b_tick;
	uint8_t b_crash, b_lost, b_f404, b_linger, b_fdel, b_edit;
	/* for the invariants */
	uint8_t kueue_admitted; /* Kueue's suspend=false stands */
	uint8_t list_few;       /* the last live LIST saw too few running pods */
	uint8_t failures;       /* pods that failed */
	/* per component */
	uint8_t reset_mark[M_NCOMP];   /* incarnations up to this one predate the last reset */
	uint8_t complete_inc[M_NCOMP]; /* the last incarnation that completed (a Job's
	                                * Complete=True, a Pod component Succeeded) */
	uint8_t failed_inc[M_NCOMP];   /* the last incarnation the Job controller marked Failed */
	uint8_t fdel_inc[M_NCOMP];     /* the last incarnation someone else deleted */
	uint8_t alive_ev[M_NCOMP];     /* the incarnation the last delivered CREATE 201 or
	                                * adoption GET showed alive (ours, not deleting) */
	uint8_t fdel_ok[M_NCOMP];      /* an incarnation someone else deleted after such
	                                * an answer had shown it alive */
	uint8_t podfail_inc[M_NCOMP];  /* the incarnation of the last pod of its that failed */
	uint8_t perturbed;             /* a perturbation that may fail the AppWrapper happened */
	m_leader L;
} m_state;

/* One transition's outcome, as world.c reports it to explore.c. */
typedef struct m_emit {
	void (*fn)(struct m_emit *e, const m_state *next, const char *label, const char *violation);
	int labels; /* build labels (replaying a trace) */
	int benign; /* only the transitions of a catch-up run (liveness) */
	int stop;   /* set by fn: no more transitions wanted */
	int broken; /* set by world.c: an array bound was too small */
	char why_broken[160];
} m_emit;

void m_world_init(const m_bounds *b);
void m_world_free(void);
/* Scenario sc's first state, reached by its milestone's script; with tr,
 * *tr gets the script's trace (numbered transitions with states, malloc'd)
 * and *steps its length. Returns 0, or -1 (a script step not enabled). */
int m_seed(const m_scen *sc, m_state *out, char **tr, int *steps);
/* The milestone's name. */
const char *m_seed_name(int seed);
/* Every transition of s, in a fixed order. */
void m_successors(const m_state *s, m_emit *e);
/* The state invariants (1-7 that are about states); "" when all hold. */
const char *m_check_state(const m_state *s);
/* Canonical bytes of s (equal behaviour, equal bytes); returns the length. */
size_t m_pack(const m_state *s, uint8_t *out);
void m_unpack(const uint8_t *in, size_t n, m_state *s);
/* One line describing s. */
void m_describe(const m_state *s, char *buf, size_t n);
/* The liveness verdict of a quiescent state reached by catch-up: "" when
 * its phase is the one the run should end in. */
const char *m_check_final(const m_state *s);
/* A second passes in a catch-up run (the run goes round in a circle);
 * 0 when the catch-up's clock is at its end. */
int m_pass_second(m_state *s);
/* How many times sf_awp_step ran (the step cache serves repeats). */
uint64_t m_steps_run(void);
/* How many distinct phase-machine inputs the seeded mutation decided
 * differently from the shipped machine (ending: its plan ends a deletion -
 * QuotaReserved=False, DeletionComplete or the finalizer's removal - where
 * the shipped one's does not); the answer readers' differences count in
 * diffs too. */
void m_mutant_diffs(uint64_t *diffs, uint64_t *ending);
/* MurmurHash3 x64 128 of key. */
void m_hash128(const void *key, size_t len, uint64_t out[2]);
/* The longest timer of the bound, in seconds (a catch-up run that ticks
 * this long without anything happening is over). */
int m_longest_timer(void);

#endif
