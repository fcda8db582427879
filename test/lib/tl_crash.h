/*
 * tl_crash.h - the machinery of a crash at every write (Sieve's
 * intermediate states, with its stale and unobserved states on the replica
 * that takes over), shared by the crash suite (test_crash.c: the test
 * plays Kueue and the kubelet) and the kueue suite's crash tests
 * (test_kueue_crash.c: the real Kueue, kube-scheduler and kwok).
 *
 * A test describes one lifecycle (a tl_crash_shape) and a function that
 * runs one cell of it: clean (k = 0, one replica, the shipped binary) or
 * with replica A (the test build, STEADFAST_FAULT_CRASH_AFTER_WRITE=k)
 * SIGKILLing itself right after the API server acknowledged its write k
 * and standby B taking over with view p (a: none; b: stale, its component
 * and pod watch events applied 8 s late; c: coalesced, component and pod
 * events held 3 s and only each object's newest state delivered).
 * tl_crash_matrix runs the clean run, then the cells of the plan, writes
 * the lifecycle's section of the matrix and fails naming every failed
 * cell. Here too: the replicas (2 s Leases), the leader's idleness from its
 * /metrics, the audit log's tally (writes, Job creates and deletes, pod
 * deletes, writes outside a leadership interval), the outcome comparison
 * and oracle (iv)'s live pod LISTs.
 */
#ifndef STEADFAST_TEST_TL_CRASH_H
#define STEADFAST_TEST_TL_CRASH_H

#include <stddef.h>
#include <stdint.h>

#include "tl.h"
#include "tl_audit.h"
#include "tl_ctl.h"

#define TL_CRASH_MAX_W 40 /* writes of a clean lifecycle */

/* ---- the standby's view ---- */

enum { TL_CRASH_NONE, TL_CRASH_STALE, TL_CRASH_COALESCED, TL_CRASH_NVIEWS };
extern const char *const TL_CRASH_VIEW_NAME[TL_CRASH_NVIEWS]; /* "a: none", ... */
extern const char *const TL_CRASH_VIEW_ENV[TL_CRASH_NVIEWS][3];
/* After the lifecycle ended under a leader with this view: how long its
 * late events may still arrive (and a wrong step act on them). */
extern const long TL_CRASH_VIEW_WINDOW_MS[TL_CRASH_NVIEWS];

/* ---- replicas ---- */

/* A replica on k's loop watching ns, in election for Lease ns/lease
 * (2 s Leases, renewed every 1.4 s, retried every 200 ms), with config
 * (NULL: the tests' config), the test build when faults. */
tl_ctl *tl_crash_replica(tl_kube *k, const char *ns, const char *lease, const char *id,
                         const char *config, int faults, const char *const *env);

/* Runs k's loop for ms (the windows in which late events still arrive). */
void tl_crash_run_for(tl_kube *k, long ms);

/* Polls the leader's /metrics (nothing reports it; 200 ms pacing) until
 * its queue is empty and nothing is being reconciled, twice in a row, and
 * (need_reconcile) it has reconciled at least once: 1; 0 when it died
 * meanwhile; -1 at the deadline (sf_mono_ns). */
int tl_crash_wait_quiet(tl_kube *k, tl_ctl *c, int port, int need_reconcile, int64_t deadline);

/* ---- what a run leaves: the audit log ---- */

typedef struct tl_crash_tally {
	int writes; /* counted as the fault point counts them */
	char seq[TL_CRASH_MAX_W][48];
	int job_creates, job_deletes, pod_deletes;
	int by_a, by_b; /* counted writes of each replica */
	long long b_acquired, b_first,
	    a_last; /* B's Lease acquisition, first write; A's last write */
	char lead_bad[512];
	char outcome[128];
} tl_crash_tally;

/* Tallies the requests v[0..n) of replicas a and b (NULL: a clean run)
 * into t: the counted writes (2xx creates, updates, patches and deletes of
 * appwrappers, appwrappers/status, jobs and pods; Events and Leases are
 * not counted, as the fault point does not count them) and oracle (v)
 * against Lease `lease`. t->outcome is left alone. */
void tl_crash_tally_audit(const tl_audit_req *v, size_t n, const char *lease, const char *a,
                          const char *b, tl_crash_tally *t);

/* ---- a cell ---- */

typedef struct tl_crash_cell {
	int done;
	int pass;
	int crashed;      /* A killed itself at its write k */
	char what[24];    /* which write that was, from A's log */
	int a_writes;     /* A's counted writes (when it never crashed) */
	char fails[1024]; /* "(ii) ...; (v) ..." */
	double secs;
} tl_crash_cell;

void tl_crash_fail(tl_crash_cell *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What A and B did in cell kth (kth > 0): whether A was killed by the fault
 * point at its write kth (c->crashed, c->what), or died without it; whether
 * B died. Dumps a dead replica's log. */
void tl_crash_check_replicas(tl_kube *k, tl_ctl *a, tl_ctl *b, int kth, tl_crash_cell *c);

/* Oracles (i)-(iii) and (v): t against the clean run's tally (NULL for
 * the clean run itself: (v) only). */
void tl_crash_compare(const tl_crash_tally *t, const tl_crash_tally *clean, tl_crash_cell *c);

/* ---- oracle (iv): the quota released only with no pod left ---- */

/* A live LIST of the pods labelled with AppWrapper aw in ns, sent at each
 * moment the quota is seen released (QuotaReserved turning False, Kueue
 * removing the Workload's admission); every pod not Succeeded or Failed in
 * its answer fails the cell. A test's driver acts only once `pending` is
 * 0, so a pod its next step brings about is never in such a LIST. */
typedef struct tl_crash_quota {
	tl_kube *k;
	const char *ns, *aw;
	int pending, closing;
	char bad[512];
	char note[160]; /* appended to a failure: what the driver had done */
} tl_crash_quota;

/* Sends one LIST; at says when and why (into the failure). */
void tl_crash_quota_list(tl_crash_quota *q, const char *at);
/* Whether every LIST sent was answered (a tl_run_until_fn predicate). */
int tl_crash_quota_done(void *q);

/* ---- the matrix of one lifecycle ---- */

typedef struct tl_crash_book {
	const char *file;        /* the assembled matrix, "crash-matrix.md" */
	const char *parts;       /* the directory of the sections, "crash-matrix-parts" */
	const char *head;        /* the file's text before the sections */
	const char *const *tags; /* the lifecycles' tags, in the file's order */
	size_t ntags;
} tl_crash_book;

/* A cell of the slice named by the clean run's writes: view `view` at the
 * nth (1-based) write `write` ("create jobs"; the middle write when there
 * is none), or at write k = nth when write is NULL. */
typedef struct tl_crash_pick {
	const char *write;
	int nth, view;
} tl_crash_pick;

typedef struct tl_crash_shape {
	const char *tag;     /* "s1", in names */
	const char *id;      /* "job-succeeds" */
	const char *outcome; /* the clean run's */
	/* more cells of the slice, or (picks_only) the slice's only cells */
	tl_crash_pick picks[4];
	int npicks, picks_only;
} tl_crash_shape;

/* Runs one cell of s: k = 0 the clean run (clean NULL), else A dying at
 * its write k and B taking over with view p; the audit figures into *t
 * (t->outcome included), the verdict into *c. */
typedef void tl_crash_run_fn(void *ud, const tl_crash_shape *s, int k, int p,
                             const tl_crash_tally *clean, tl_crash_tally *t, tl_crash_cell *c);

/* STEADFAST_CRASH_MATRIX=full. */
int tl_crash_full_matrix(void);

/* The clean run, then every planned cell (`make test`'s slice: k = 1, the
 * middle write, W and every Job create and delete with view a, plus the
 * shape's picks, or its picks alone; STEADFAST_CRASH_MATRIX=full: every k with every
 * view; STEADFAST_CRASH_CELLS="s2:18b,...": only those), the section into
 * the book, and a failed test naming every failed cell. */
void tl_crash_matrix(const tl_crash_book *book, const tl_crash_shape *s, tl_crash_run_fn *run,
                     void *ud);

/* The environment variable that changes a cell's deadline. */
long tl_crash_cell_seconds(long dflt);

#endif
