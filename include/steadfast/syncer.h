/*
 * syncer.h - the loop part of a leader-side periodic syncer: one pass at a
 * time against the API server, the first at once when leading starts, the
 * next when the owner says, none while paused; closed with a callback that
 * frees (as libuv's handles).
 *
 * The owner (admparams.c, slackcq.c) embeds a sf_syncer, says what a pass
 * is (the pass hook, called from the timer when running and idle) and how
 * it is freed (the release hook, called once closed and nothing is in
 * flight). Its pass keeps a step of its own in `step` (0 = idle), sends
 * one request at a time into `call`, starts every answer's callback with
 * sf_syncer_answer, and ends a pass by setting step back to 0 and
 * scheduling the next with sf_syncer_schedule. Pausing cancels the request
 * in flight; its cancelled answer puts the syncer back to idle (and runs a
 * pass at once if it was run again meanwhile). The owner counts its passes
 * by outcome in `st`, which sf_syncer_metrics_write writes as one counter
 * family with a result label.
 *
 * Fields other than step, call and st are the syncer's own.
 */
#ifndef STEADFAST_SYNCER_H
#define STEADFAST_SYNCER_H

#include <uv.h>

#include "steadfast/client.h"
#include "steadfast/prom.h"

typedef struct sf_syncer_stats {
	unsigned long long unchanged, updated, absent, errors; /* passes by outcome */
} sf_syncer_stats;

typedef struct sf_syncer {
	uv_timer_t timer;
	sf_kube_call *call; /* the pass's request in flight (the owner's) */
	int step;           /* the owner's; 0 = no pass under way */
	sf_syncer_stats st; /* the owner's */
	int running, closing, timer_closed;
	void (*pass)(void *ud);
	void (*release)(void *ud);
	void *ud;
	void (*close_cb)(void *ud);
	void *close_ud;
} sf_syncer;

/* Readies s (not running) on loop; pass and release as above, with ud. */
void sf_syncer_init(uv_loop_t *loop, sf_syncer *s, void (*pass)(void *ud),
                    void (*release)(void *ud), void *ud);
/* Starts passes: one at once if none is under way. 1 when it was not
 * running (so the owner may reset its per-run state), else 0 (also when
 * closing). */
int sf_syncer_run(sf_syncer *s);
/* Stops passes; the request in flight is cancelled. Nothing when not
 * running. */
void sf_syncer_pause(sf_syncer *s);
/* The next pass in ms (when running and not closing). */
void sf_syncer_schedule(sf_syncer *s, long ms);
/* The next pass within ms: sooner than scheduled, never later (when
 * running and not closing). */
void sf_syncer_within(sf_syncer *s, long ms);
/* The start of every answer's callback: forgets the call; 1 when the pass
 * goes on, 0 when it was cancelled, paused or closed (s is idle again, and
 * may be freed already). */
int sf_syncer_answer(sf_syncer *s, const sf_kube_result *res);
/* Pauses, then releases the owner once the timer is closed and nothing is
 * in flight; cb (may be NULL) then, possibly before this returns. */
void sf_syncer_close(sf_syncer *s, void (*cb)(void *ud), void *ud);

/* The family name (a counter) with one sample per outcome: result
 * "unchanged", "updated", "absent", "error". NULL st writes zeros. 0 or
 * -ENOMEM. */
int sf_syncer_metrics_write(const sf_syncer_stats *st, sf_prom *prom, const char *name,
                            const char *help);

#endif
