/*
 * phase_start.c - the phase machine's first phases (see awphase.h): Empty
 * (the admission webhook's defaults, the componentStatus list), Suspended
 * (waiting for a queue to admit) and Resuming (creating the components,
 * on the evidence of each create's answer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awcomp.h"

#include "phase_step.h"

/* 1 when something says a queue has admitted aw: podSetInfos on a
 * component (Kueue writes them with suspend=false), a QuotaReserved
 * condition, or a phase past Empty. */
static int admission_evidence(sf_jv aw)
{
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(aw, "spec.components"));
	sf_jv c;
	while (sf_jv_next(&it, NULL, &c))
		if (sf_jv_len(sf_jv_get(c, "podSetInfos")) > 0)
			return 1;
	sf_jv_iter ci = sf_jv_iter_init(sf_jv_path(aw, "status.conditions"));
	sf_jv cd;
	while (sf_jv_next(&ci, NULL, &cd))
		if (sf_jv_streq(sf_jv_get(cd, "type"), C_QUOTA))
			return 1;
	return sf_aw_phase_parse(sf_jv_path(aw, "status.phase")) > SF_AW_EMPTY;
}

void sf_awp_step_empty(step *st)
{
	const sf_aw_config *cfg = st->in->cfg;
	sf_jv aw = st->in->aw;
	if (!sf_awp_has_finalizer(aw)) {
		/* No admission webhook: apply its defaults here (upstream's dev
		 * mode path): the queue label, suspend for Kueue, the finalizer. */
		sf_jd *patch = sf_awp_finalizers_patch(st, NULL, SF_AW_FINALIZER);
		if (!patch)
			return;
		if (cfg->enable_kueue_integrations) {
			sf_jv labels = sf_jv_path(aw, "metadata.labels");
			int has_queue = sf_jv_ok(sf_jv_get(labels, SF_AW_QUEUE_LABEL));
			if (!has_queue && cfg->default_queue_name[0]) {
				sf_jd *l = sf_jd_obj_member(sf_jd_get(patch, "metadata"), "labels");
				note_rc(st, l ? sf_jd_set_str(l, SF_AW_QUEUE_LABEL,
				                              cfg->default_queue_name)
				              : -ENOMEM);
				has_queue = 1;
			}
			/* Never undo a queue's decision: an AppWrapper admitted
			 * before its first reconcile (every replica down, a
			 * failover window) keeps suspend=false. */
			if ((has_queue || cfg->manage_jobs_without_queue_name) && !st->suspend &&
			    !admission_evidence(aw)) {
				sf_jd *sp = sf_jd_obj_member(patch, "spec");
				note_rc(st, sp ? sf_jd_set_bool(sp, "suspend", 1) : -ENOMEM);
			}
		}
		st->plan->meta_patch = patch;
		st->plan->why = "apply defaults";
		requeue(st, 0);
		return;
	}
	if (ncomps(st) != sf_jv_len(sf_jv_path(aw, "spec.components"))) {
		sf_jd *init = NULL;
		char err[512];
		int rc = sf_awp_component_status_init(aw, &init, err, sizeof(err));
		if (rc == -ENOMEM) {
			note_rc(st, rc);
			return;
		}
		if (rc < 0) {
			/* a template we cannot read never gets better: fail it
			 * with the reason, instead of retrying forever */
			char msg[1100];
			snprintf(msg, sizeof(msg), "error creating components: %s", err);
			cond(st, C_UNHEALTHY, "True", "CreateFailed", msg);
			event(st, 1, C_UNHEALTHY, "CreateFailed: %s", msg);
			st->plan->why = "invalid component";
			to_phase(st, SF_AW_FAILED);
			return;
		}
		sf_aw_status_set_comps(&st->status, init);
	}
	st->plan->why = "initialised";
	to_phase(st, SF_AW_SUSPENDED);
}

void sf_awp_step_suspended(step *st)
{
	if (st->suspend) {
		st->plan->why = "suspended";
		return;
	}
	if (!sf_awp_has_finalizer(st->in->aw)) {
		st->plan->meta_patch = sf_awp_finalizers_patch(st, NULL, SF_AW_FINALIZER);
		st->plan->why = "add finalizer";
		requeue(st, 0);
		return;
	}
	cond(st, C_QUOTA, "True", "Resuming", "Suspend is false");
	cond(st, C_DEPLOYED, "True", "Resuming", "Suspend is false");
	cond(st, C_PODSREADY, "False", "Resuming", "Suspend is false");
	cond(st, C_UNHEALTHY, "False", "Resuming", "Suspend is false");
	st->plan->why = "admitted";
	to_phase(st, SF_AW_RESUMING);
}

/* 1 (with msg naming the field) when component i's template would create
 * an object other than the one componentStatus[i] tracks: identity
 * (apiVersion, kind, name) is fixed when componentStatus first records it,
 * whatever later edits of the template say. A field not recorded yet (""
 * - upstream v1.2.x initialises componentStatus with pod sets only and
 * records the rest when it creates the component) is recorded from the
 * template, and *recorded says so: the create waits for that write. */
static int identity_changed(step *st, size_t i, char *msg, size_t n, int *recorded)
{
	static const struct {
		const char *tpl;
		sf_aw_comp_id id;
	} f[] = {{"apiVersion", SF_AW_ID_API_VERSION},
	         {"kind", SF_AW_ID_KIND},
	         {"metadata.name", SF_AW_ID_NAME}};
	sf_jv tpl = sf_jv_get(sf_jv_at(sf_jv_path(st->in->aw, "spec.components"), i), "template");
	char prefix[254];
	int gen = sf_awc_template_name(tpl, prefix, sizeof(prefix)) > 0;
	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
		sf_aw_comp_status cs = comp_status(st, i);
		const char *key = sf_aw_comp_id_key(f[k].id);
		char want[254] = "", have[254] = "";
		sf_jv_str(sf_jv_path(tpl, f[k].tpl), have, sizeof(have));
		snprintf(want, sizeof(want), "%s", cs.id[f[k].id]);
		if (gen && f[k].id == SF_AW_ID_NAME) {
			/* the API server chooses the name: none recorded yet, or
			 * one it made from this prefix */
			if (!want[0] || strncmp(want, prefix, strlen(prefix)) == 0)
				continue;
			snprintf(
			    msg, n,
			    "spec.components[%zu].template.metadata.generateName is \"%s\", but "
			    "the component was recorded as \"%s\" (status.componentStatus[%zu]."
			    "name); a component's apiVersion, kind and name cannot change once "
			    "recorded",
			    i, prefix, want, i);
			return 1;
		}
		if (!want[0] && have[0] && cs.present) {
			sf_aw_status_set_comp_id(&st->status, i, f[k].id, have);
			*recorded = 1;
			continue;
		}
		if (strcmp(want, have) != 0) {
			snprintf(
			    msg, n,
			    "spec.components[%zu].template.%s is \"%s\", but the component "
			    "was recorded as \"%s\" (status.componentStatus[%zu].%s); a "
			    "component's apiVersion, kind and name cannot change once recorded",
			    i, f[k].tpl, have, want, i, key);
			return 1;
		}
	}
	return 0;
}

/* Why creating the components stops: a create's answer, or a template
 * whose identity changed (msg NULL: nothing stops it). */
typedef struct create_error {
	const char *msg;
	size_t idx;
	int fatal;
	char idmsg[700];
} create_error;

/* Component i in Resuming: 0 when it exists (or existed already), 1 while
 * it is being created (a create planned, or waiting to plan one), -1 when
 * creating it failed (*e says why). */
static int resume_component(step *st, size_t i, create_error *e)
{
	sf_aw_comp_status cs = comp_status(st, i);
	if (sf_aw_cond_is(&cs.deployed, "True", NULL))
		return 0;
	const sf_awp_comp *c = obs(st, i);
	/* Created only on this attempt's evidence: the create's answer, or
	 * AlreadyExists and a live read of an object this AppWrapper controls
	 * that is not going away. A cached copy may be the incarnation a reset
	 * deleted (the last leader's, which this term never knew): a create
	 * settles it either way. */
	if (c->create == SF_AWP_CREATE_OK ||
	    (MUTANT(SF_AWP_MUT_RESUME_TRUSTS_CACHE) && c->cached.state == SF_AWP_COMP_PRESENT &&
	     !c->cached.deleting)) {
		/* a name the API server chose is recorded in the same write
		 * that says the component exists */
		if (c->created_name && c->created_name[0])
			sf_aw_status_set_comp_id(&st->status, i, SF_AW_ID_NAME, c->created_name);
		comp_cond(st, i, "True", "ComponentCreatedSuccessfully");
		return 0;
	}
	if (c->create == SF_AWP_CREATE_FATAL || c->create == SF_AWP_CREATE_RETRYABLE) {
		e->fatal = c->create == SF_AWP_CREATE_FATAL;
		e->msg = c->create_msg ? c->create_msg : "unknown error";
		e->idx = i;
		return -1;
	}
	if (c->cached.state == SF_AWP_COMP_PRESENT && c->cached.deleting) {
		/* the previous incarnation is still going away */
		requeue(st, REQUEUE_RETRY_CREATE_MS);
		return 1;
	}
	int recorded = 0;
	if (identity_changed(st, i, e->idmsg, sizeof(e->idmsg), &recorded)) {
		/* what would be created is not what is tracked: never create it
		 * (the old one would be orphaned and the new one reported
		 * missing) */
		e->fatal = 1;
		e->msg = e->idmsg;
		e->idx = i;
		return -1;
	}
	comp_cond(st, i, "Unknown", "ComponentCreationInitiated");
	if (recorded)
		requeue(st, 0); /* create once the identity is written */
	else
		act(st, SF_AWP_ACT_CREATE, i);
	return 1;
}

/* A create failed: retried within the admission grace unless it never can
 * succeed; then Unhealthy, an event, and a reset (or Failed). */
static void create_failed(step *st, const create_error *e)
{
	if (!e->fatal) {
		sf_aw_cond rd = get_cond(st, C_DEPLOYED);
		if (st->now < rd.ltt_ms + st->in->s->admission_grace_ms) {
			st->plan->why = "create failed, retrying";
			requeue(st, REQUEUE_RETRY_CREATE_MS);
			return;
		}
	} else {
		comp_cond(st, e->idx, "False", "ComponentCreationErrored");
	}
	char msg[1100];
	snprintf(msg, sizeof(msg), "error creating components: %s", e->msg);
	cond(st, C_UNHEALTHY, "True", "CreateFailed", msg);
	event(st, 1, C_UNHEALTHY, "CreateFailed: %s", msg);
	st->plan->why = "create failed";
	if (e->fatal)
		to_phase(st, SF_AW_FAILED);
	else
		sf_awp_reset_or_fail(st, 0, 1);
}

/* Resuming: every component created (in order, stopping at the first
 * failure), then Running. */
void sf_awp_step_resuming(step *st)
{
	if (st->suspend) {
		st->plan->why = "suspend while resuming";
		to_phase(st, SF_AW_SUSPENDING);
		return;
	}
	size_t n = ncomps(st);
	int creating = 0;
	create_error e = {0};
	for (size_t i = 0; i < n; i++) {
		int r = resume_component(st, i, &e);
		if (r < 0) {
			create_failed(st, &e);
			return;
		}
		creating |= r;
	}
	if (creating) {
		st->plan->why = "creating components";
		return;
	}
	st->plan->why = "components created";
	to_phase(st, SF_AW_RUNNING);
}

#define MAX_PODSETS 64

int sf_awp_component_status_init(sf_jv aw, sf_jd **out, char *err, size_t errlen)
{
	sf_jv comps = sf_jv_path(aw, "spec.components");
	sf_awc_podset *ps = calloc(MAX_PODSETS, sizeof(*ps));
	sf_jd *arr = sf_jd_new_arr();
	int rc = 0;
	*out = NULL;
	if (!ps || !arr) {
		rc = -ENOMEM;
		goto out;
	}
	if (sf_jv_type(comps) != SF_JSON_ARRAY) {
		snprintf(err, errlen, "spec.components is not a list");
		rc = -EINVAL;
		goto out;
	}
	size_t n = sf_jv_len(comps);
	for (size_t i = 0; i < n; i++) {
		sf_jv c = sf_jv_at(comps, i);
		sf_jv t = sf_jv_get(c, "template");
		char name[254], kind[128], api[256];
		int gen = sf_awc_template_name(t, name, sizeof(name));
		if (gen < 0 || sf_jv_str(sf_jv_get(t, "kind"), kind, sizeof(kind)) <= 0 ||
		    sf_jv_str(sf_jv_get(t, "apiVersion"), api, sizeof(api)) <= 0) {
			snprintf(err, errlen,
			         "component %zu: template needs apiVersion, kind and metadata.name "
			         "or metadata.generateName",
			         i);
			rc = -EINVAL;
			goto out;
		}
		size_t nps = 0;
		rc = sf_awc_podsets(c, ps, MAX_PODSETS, &nps, err, errlen);
		if (rc == -ENOSPC) {
			snprintf(err, errlen, "component %zu (%s %s): more than %d pod sets", i,
			         kind, name, MAX_PODSETS);
			rc = -EINVAL;
		}
		if (rc < 0)
			goto out;
		sf_jd *cs = sf_jd_new_obj();
		sf_jd *psa = cs ? sf_jd_new_arr() : NULL;
		if (!psa || sf_jd_append(arr, cs) < 0) {
			sf_jd_free(psa);
			if (!psa)
				sf_jd_free(cs);
			rc = -ENOMEM;
			goto out;
		}
		/* a generated name is recorded once the API server chose it */
		if (sf_jd_set_str(cs, "name", gen ? "" : name) < 0 ||
		    sf_jd_set_str(cs, "kind", kind) < 0 ||
		    sf_jd_set_str(cs, "apiVersion", api) < 0 || sf_jd_set(cs, "podSets", psa) < 0) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t k = 0; k < nps; k++) {
			sf_jd *one = sf_awc_podset_to_jd(&ps[k]);
			if (!one || sf_jd_append(psa, one) < 0) {
				rc = -ENOMEM;
				goto out;
			}
		}
	}
	*out = arr;
	arr = NULL;
out:
	sf_jd_free(arr);
	free(ps);
	return rc;
}
