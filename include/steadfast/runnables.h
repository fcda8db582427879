/*
 * runnables.h - what the manager runs beside the AppWrapper reconciler,
 * started and stopped with the process and with leadership (as
 * controller-runtime's Runnable and LeaderElectionRunnable).
 *
 * A runnable is a few hooks on an object of its own: start, stop, close.
 * One that is not leader-only starts once, when the manager starts (the
 * start-up look at the installed admission, on every replica). A
 * leader-only one starts each time this replica begins reconciling (its
 * caches past the barrier and the fence open) and stops each time it ends
 * (the admission parameters and the slack ClusterQueue pause, the Event
 * recorder forgets its series). Starts and stops go in the order the
 * runnables were added. Closing closes each at once, in that order, and
 * calls back once all have: every close frees its object and then calls
 * back, as libuv's handles do.
 *
 *   sf_runnables_new(&g);
 *   sf_runnables_add(g, &(sf_runnable){.leader_only = 1, .self = p, ...});
 *   sf_runnables_start(g);    // the manager started
 *   sf_runnables_lead(g);     // reconciling began
 *   sf_runnables_unlead(g);   // reconciling ended
 *   sf_runnables_close(g, cb, ud);
 *
 * Loop thread only.
 */
#ifndef STEADFAST_RUNNABLES_H
#define STEADFAST_RUNNABLES_H

typedef struct sf_runnable {
	int leader_only; /* 1: runs while leading; 0: every replica, from start */
	void *self;
	void (*start)(void *self); /* NULL: nothing to start */
	void (*stop)(void *self);  /* leader-only: leading ended; NULL: nothing */
	/* Frees self, then cb(ud) (possibly before returning); NULL: the
	 * group does not close it (its owner does). */
	void (*close)(void *self, void (*cb)(void *ud), void *ud);
} sf_runnable;

typedef struct sf_runnables sf_runnables;

/* 0 and *out, or -ENOMEM. */
int sf_runnables_new(sf_runnables **out);
/* Adds r (copied) after those added before. 0, or -ENOMEM (r is not the
 * group's then). */
int sf_runnables_add(sf_runnables *g, const sf_runnable *r);
/* Starts the runnables that are not leader-only (once). */
void sf_runnables_start(sf_runnables *g);
/* Starts the leader-only runnables; nothing when already leading. */
void sf_runnables_lead(sf_runnables *g);
/* Stops the leader-only runnables; nothing when not leading. */
void sf_runnables_unlead(sf_runnables *g);
/* Closes every runnable and frees the group once all have called back;
 * cb (may be NULL) then, possibly before this returns. NULL g just calls
 * cb. */
void sf_runnables_close(sf_runnables *g, void (*cb)(void *ud), void *ud);

#endif
