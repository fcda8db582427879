/*
 * awstatus.h - a typed view of an AppWrapper's status, for the phase
 * machine (awphase.h).
 *
 * The status is JSON the controller writes back whole, so everything it
 * holds - members this controller does not know included - must come back
 * as it came, in the same order. The view therefore keeps the tree (a
 * working copy) and gives each field the machine reads or writes a typed
 * getter and a setter that writes through at once: the phase, the
 * conditions by type, resettingCount, and per component its identity
 * (apiVersion, kind, name) and its ResourcesDeployed condition. A step
 * reads like the rule it implements, and a setter changes exactly the
 * members the untyped edits it replaces changed.
 *
 * Setters keep the first error (-ENOMEM, or -EINVAL for an entry that is
 * not there) in rc, as a stream keeps its error flag, so a step can set
 * several fields and check once.
 */
#ifndef STEADFAST_AWSTATUS_H
#define STEADFAST_AWSTATUS_H

#include <stddef.h>
#include <stdint.h>

#include "steadfast/jdoc.h"
#include "steadfast/json.h"

typedef enum {
	SF_AW_EMPTY = 0,
	SF_AW_SUSPENDED,
	SF_AW_RESUMING,
	SF_AW_RUNNING,
	SF_AW_RESETTING,
	SF_AW_SUSPENDING,
	SF_AW_SUCCEEDED,
	SF_AW_FAILED,
	SF_AW_TERMINATING,
	SF_AW_NPHASES,
	SF_AW_PHASE_INVALID = -1,
} sf_aw_phase;

const char *sf_aw_phase_name(sf_aw_phase p); /* "" for Empty */
sf_aw_phase sf_aw_phase_parse(sf_jv s);      /* absent/"" = Empty */

/* condition types */
#define SF_AW_COND_QUOTA "QuotaReserved"
#define SF_AW_COND_DEPLOYED "ResourcesDeployed"
#define SF_AW_COND_PODSREADY "PodsReady"
#define SF_AW_COND_UNHEALTHY "Unhealthy"
#define SF_AW_COND_DELETING "DeletingResources"

/* ---- conditions (metav1.Condition list in an sf_jd array) ---- */

typedef struct sf_aw_cond {
	int present;
	const char *status; /* "True" "False" "Unknown" (borrowed) */
	const char *reason;
	const char *message;
	int64_t ltt_ms; /* lastTransitionTime, 0 if absent/unparseable */
} sf_aw_cond;

/* Finds type in conds (an array); out->present 0 if absent. */
void sf_aw_cond_get(const sf_jd *conds, const char *type, sf_aw_cond *out);
int sf_aw_cond_true(const sf_jd *conds, const char *type);
/* 1 when c is present with that status and (unless reason is NULL) that
 * reason. */
int sf_aw_cond_is(const sf_aw_cond *c, const char *status, const char *reason);
/* meta.SetStatusCondition: adds, or updates status/reason/message;
 * lastTransitionTime becomes now only when the status changes (or the
 * condition is new). Returns 1 if anything changed, 0 if not, -ENOMEM. */
int sf_aw_cond_set(sf_jd *conds, const char *type, const char *status, const char *reason,
                   const char *message, int64_t now_ms, int64_t generation);

/* ---- the view ---- */

typedef struct sf_aw_status {
	sf_jd *doc;     /* the working copy (owned, until taken) */
	sf_jd *conds;   /* doc.conditions */
	sf_jd *comps;   /* doc.componentStatus */
	int64_t now_ms; /* the transition time of what a setter changes */
	int rc;         /* the first error of a setter, 0 if none */
} sf_aw_status;

/* A working copy of status (the object's; absent or not an object: an
 * empty one), with conditions and componentStatus lists present (a member
 * of the wrong type starts over). 0 or -ENOMEM. */
int sf_aw_status_open(sf_aw_status *s, sf_jv status, int64_t now_ms);
void sf_aw_status_close(sf_aw_status *s);  /* frees what was not taken */
sf_jd *sf_aw_status_take(sf_aw_status *s); /* the caller's to free */
/* 1 when the working copy says what status (the object's, maybe absent)
 * says, once both are normalised as sf_aw_status_open does; 0 when not;
 * -ENOMEM. */
int sf_aw_status_unchanged(const sf_aw_status *s, sf_jv status);

void sf_aw_status_set_phase(sf_aw_status *s, sf_aw_phase p);
/* resettingCount; 0 when absent, not an integer, or negative */
int64_t sf_aw_status_resetting_count(const sf_aw_status *s);
void sf_aw_status_set_resetting_count(sf_aw_status *s, int64_t n);

sf_aw_cond sf_aw_status_cond(const sf_aw_status *s, const char *type);
int sf_aw_status_cond_true(const sf_aw_status *s, const char *type);
/* sf_aw_cond_set at now_ms: 1 changed, 0 not, negative on error (kept). */
int sf_aw_status_set_cond(sf_aw_status *s, const char *type, const char *status, const char *reason,
                          const char *message);
/* upstream's clearCondition: only a True condition is set to False */
void sf_aw_status_clear_cond(sf_aw_status *s, const char *type, const char *reason,
                             const char *message);

/* ---- componentStatus entries ---- */

typedef enum {
	SF_AW_ID_API_VERSION = 0,
	SF_AW_ID_KIND,
	SF_AW_ID_NAME,
	SF_AW_NIDS,
} sf_aw_comp_id;

/* the member's name in a componentStatus entry: "apiVersion" "kind" "name" */
const char *sf_aw_comp_id_key(sf_aw_comp_id f);

typedef struct sf_aw_comp_status {
	int present;                /* the entry exists */
	const char *id[SF_AW_NIDS]; /* "" when absent (borrowed) */
	sf_aw_cond deployed;        /* its ResourcesDeployed condition */
} sf_aw_comp_status;

size_t sf_aw_status_ncomps(const sf_aw_status *s);
sf_aw_comp_status sf_aw_status_comp(const sf_aw_status *s, size_t i);
void sf_aw_status_set_comp_id(sf_aw_status *s, size_t i, sf_aw_comp_id f, const char *value);
/* entry i's ResourcesDeployed condition (empty message) */
void sf_aw_status_set_comp_deployed(sf_aw_status *s, size_t i, const char *status,
                                    const char *reason);
/* Replaces componentStatus with list (taken, freed on error). */
void sf_aw_status_set_comps(sf_aw_status *s, sf_jd *list);

#endif
