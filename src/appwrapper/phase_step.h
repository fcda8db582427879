/*
 * phase_step.h - what the files of the phase machine share (phase.c and
 * the files it is split into by phase group): one step in progress, the
 * small verbs its rules are written in (set a condition, plan an action or
 * an event, look again later, move to a phase), and the steps and helpers
 * one file calls in another. Nothing here is part of the library's
 * interface (steadfast/awphase.h is).
 */
#ifndef STEADFAST_APPWRAPPER_PHASE_STEP_H
#define STEADFAST_APPWRAPPER_PHASE_STEP_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "steadfast/awphase.h"

/* condition types */
#define C_QUOTA SF_AW_COND_QUOTA
#define C_DEPLOYED SF_AW_COND_DEPLOYED
#define C_PODSREADY SF_AW_COND_PODSREADY
#define C_UNHEALTHY SF_AW_COND_UNHEALTHY
#define C_DELETING SF_AW_COND_DELETING
#define R_UNRESOLVED "ComponentStatusUnknown"

#define REQUEUE_DELETE_MS 5000
#define REQUEUE_RETRY_CREATE_MS 1000
#define REQUEUE_NOT_READY_MS 5000
#define REQUEUE_READY_MS 60000
#define REQUEUE_LIVE_PODS_MS 2000
#define REQUEUE_UNRESOLVED_MS 5000
/* A time read back from a condition (whole seconds) may be up to this much
 * earlier than the event it records. */
#define SECOND_ROUND_UP 999

/* MUTANT(m) is 1 only in the model checker's build with mutation m switched
 * on (awphase.h): each marks an evidence check that the checker must be
 * seen to defend. The shipped code compiles it to 0. Every file that uses
 * it is compiled a second time for the model checker (Makefile,
 * MODEL_PHASE). */
#ifdef SF_AWP_MUTANTS
#define MUTANT(m) (sf_awp_mutation == (m))
#else
#define MUTANT(m) 0
#endif

/* ---- one step ---- */

typedef struct step {
	const sf_awp_input *in;
	sf_awp_plan *plan;
	sf_aw_status status; /* the working copy, typed */
	int64_t now;
	int suspend;
	int rc; /* first -ENOMEM of the plan's own parts (the status keeps its own) */
	size_t act_cap;
} step;

static inline void note_rc(step *st, int rc)
{
	if (rc < 0 && st->rc == 0)
		st->rc = rc;
}

static inline void cond(step *st, const char *type, const char *status, const char *reason,
                        const char *message)
{
	sf_aw_status_set_cond(&st->status, type, status, reason, message);
}

/* upstream's clearCondition: only a True condition is set to False */
static inline void clear_cond(step *st, const char *type, const char *reason, const char *message)
{
	sf_aw_status_clear_cond(&st->status, type, reason, message);
}

static inline sf_aw_cond get_cond(const step *st, const char *type)
{
	return sf_aw_status_cond(&st->status, type);
}

static inline int cond_true(const step *st, const char *type)
{
	return sf_aw_status_cond_true(&st->status, type);
}

static inline void act(step *st, sf_awp_act_kind kind, size_t idx)
{
	sf_awp_plan *p = st->plan;
	if (p->nacts == st->act_cap) {
		size_t cap = st->act_cap ? st->act_cap * 2 : 8;
		sf_awp_act *a = realloc(p->acts, cap * sizeof(*a));
		if (!a) {
			note_rc(st, -ENOMEM);
			return;
		}
		p->acts = a;
		st->act_cap = cap;
	}
	p->acts[p->nacts++] = (sf_awp_act){kind, idx};
}

__attribute__((format(printf, 4, 5))) static inline void
event(step *st, int warning, const char *reason, const char *fmt, ...)
{
	sf_awp_plan *p = st->plan;
	if (p->nevents == SF_AWP_MAX_EVENTS)
		return;
	sf_awp_event *e = &p->events[p->nevents++];
	e->warning = warning;
	snprintf(e->reason, sizeof(e->reason), "%s", reason);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
}

static inline void requeue(step *st, int64_t ms)
{
	if (ms < 0)
		ms = 0;
	if (st->plan->requeue_ms < 0 || ms < st->plan->requeue_ms)
		st->plan->requeue_ms = ms;
}

static inline void to_phase(step *st, sf_aw_phase p)
{
	st->plan->to = p;
	sf_aw_status_set_phase(&st->status, p);
	/* the next phase acts at once */
	requeue(st, 0);
}

/* componentStatus[i] as the working status has it */
static inline sf_aw_comp_status comp_status(const step *st, size_t i)
{
	return sf_aw_status_comp(&st->status, i);
}

static inline size_t ncomps(const step *st)
{
	return sf_aw_status_ncomps(&st->status);
}

static inline const sf_awp_comp *obs(step *st, size_t i)
{
	static const sf_awp_comp none;
	return i < st->in->ncomp ? &st->in->comp[i] : &none;
}

static inline void comp_cond(step *st, size_t i, const char *status, const char *reason)
{
	sf_aw_status_set_comp_deployed(&st->status, i, status, reason);
}

/* ---- shared by the phase groups ---- */

/* Resetting while resets are left (resettingCount grows by incr), else
 * Failed; a terminal failure fails at once. */
void sf_awp_reset_or_fail(step *st, int terminal, int incr);
/* Component i's kind cannot be resolved: condition type (Unhealthy while
 * running, DeletingResources while deleting) says so (phase.c). */
void sf_awp_unresolved_report(step *st, size_t i, const char *type);
/* 1 when aw carries this controller's finalizer */
int sf_awp_has_finalizer(sf_jv aw);
/* A metadata patch: {"metadata":{"finalizers":[...]}} without drop and with
 * add (either NULL); NULL (and -ENOMEM noted) on failure. */
sf_jd *sf_awp_finalizers_patch(step *st, const char *drop, const char *add);

/* the steps of the phases before Running (phase_start.c) */
void sf_awp_step_empty(step *st);
void sf_awp_step_suspended(step *st);
void sf_awp_step_resuming(step *st);
/* Running (phase_run.c) */
void sf_awp_step_running(step *st);

#endif
