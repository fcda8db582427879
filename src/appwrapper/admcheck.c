/*
 * admcheck.c - the start-up comparison of the installed admission
 * bindings with webhooksEnabled and userRBACAdmissionCheck (admcheck.h).
 *
 * Each binding is read with a GET by name: 200 is installed, a NotFound
 * naming it is absent; anything else (403 without the RBAC rule, a
 * version not served, a transport error) cannot decide and says so. The
 * verdict per binding is logged as its answer arrives; one summary line
 * ("admission agrees with the config", or disagrees, or could not be
 * checked) once the last one has.
 */
#include "steadfast/admcheck.h"

#include <errno.h>
#include <stdlib.h>

#include "steadfast/log.h"

#define LOGGER "admission"

static const sf_gvr VAPBS = {"admissionregistration.k8s.io", "v1",
                             "validatingadmissionpolicybindings", 0};
static const sf_gvr MAPBS = {"admissionregistration.k8s.io", "v1",
                             "mutatingadmissionpolicybindings", 0};

enum { B_VALIDATE, B_MUTATE, B_RBAC, NBINDINGS };

static const struct {
	const sf_gvr *gvr;
	const char *kind, *name;
	/* what users meet when it is missing, and when it is there */
	const char *absent, *present;
} BINDINGS[NBINDINGS] = {
    {&VAPBS, "ValidatingAdmissionPolicyBinding", SF_ADM_BINDING,
     "AppWrappers are created unchecked: more than 8 pod sets, components in other namespaces, "
     "nested AppWrappers, and updates of immutable fields are accepted; install "
     "manifests/admission (docs/admission.md)",
     "AppWrappers are still validated by the API server; remove manifests/admission to turn "
     "admission off (docs/admission.md)"},
    {&MAPBS, "MutatingAdmissionPolicyBinding", SF_ADM_BINDING,
     "new AppWrappers get no user labels, and their queue label, finalizer and spec.suspend "
     "only at the controller's first reconcile; install manifests/admission (docs/admission.md)",
     "new AppWrappers are still defaulted by the API server; remove manifests/admission to turn "
     "admission off (docs/admission.md)"},
    {&VAPBS, "ValidatingAdmissionPolicyBinding", SF_ADM_RBAC_BINDING,
     "any user who may create AppWrappers in a namespace can have the controller create "
     "components there that the user may not create directly; install "
     "manifests/admission/user_rbac_policy.yaml (docs/admission.md)",
     "users are still refused AppWrappers wrapping components they may not create; delete this "
     "binding to turn the check off (docs/admission.md)"},
};

typedef struct call {
	struct sf_admcheck *a;
	int idx;
	sf_kube_call *call;
} call;

struct sf_admcheck {
	const sf_aw_config *cfg;
	call calls[NBINDINGS];
	int want[NBINDINGS]; /* 1 installed, 0 absent, -1 not asked */
	int pending;
	int disagree, undecided;
	int closing;
	void (*close_cb)(void *ud);
	void *close_ud;
};

/* The key that decides whether binding i should be installed. */
static const char *key_of(const sf_admcheck *a, int i)
{
	if (i == B_RBAC && a->cfg->webhooks_enabled)
		return a->cfg->user_rbac_admission_check
		           ? "appwrapper.userRBACAdmissionCheck=true"
		           : "appwrapper.userRBACAdmissionCheck=false";
	return a->cfg->webhooks_enabled ? "webhooksEnabled=true" : "webhooksEnabled=false";
}

/* Frees a, then calls its close callback. */
static void closed(sf_admcheck *a)
{
	void (*cb)(void *) = a->close_cb;
	void *ud = a->close_ud;
	free(a);
	if (cb)
		cb(ud);
}

static void finished(sf_admcheck *a)
{
	if (a->closing) {
		closed(a);
		return;
	}
	char nd[24], nu[24];
	sf_log(a->disagree || a->undecided ? SF_LOG_WARN : SF_LOG_INFO, LOGGER,
	       a->disagree    ? "admission disagrees with the config"
	       : a->undecided ? "admission could not be checked"
	                      : "admission agrees with the config",
	       "webhooksEnabled", a->cfg->webhooks_enabled ? "true" : "false",
	       "userRBACAdmissionCheck", a->cfg->user_rbac_admission_check ? "true" : "false",
	       "disagreements", sf_log_int(nd, a->disagree), "undecided",
	       sf_log_int(nu, a->undecided), NULL);
}

static void got(void *ud, const sf_kube_result *res)
{
	call *c = ud;
	sf_admcheck *a = c->a;
	int i = c->idx;
	c->call = NULL;
	a->pending--;
	if (res->err == -ECANCELED || a->closing) {
		if (a->pending == 0)
			finished(a);
		return;
	}
	int present = sf_kube_ok(res) ? 1 : sf_kube_is_absent(res, BINDINGS[i].name) ? 0 : -1;
	if (present < 0) {
		char buf[512];
		a->undecided++;
		sf_log_warn(LOGGER,
		            "cannot check the installed admission (the controller needs get on "
		            "it: manifests/rbac)",
		            "kind", BINDINGS[i].kind, "name", BINDINGS[i].name, "error",
		            sf_kube_result_str(res, buf, sizeof(buf)), NULL);
	} else if (present != a->want[i]) {
		a->disagree++;
		sf_log_error(LOGGER,
		             present ? "admission installed that the config turns off"
		                     : "admission missing that the config asks for",
		             "config", key_of(a, i), "kind", BINDINGS[i].kind, "name",
		             BINDINGS[i].name, "state", present ? "installed" : "absent", "effect",
		             present ? BINDINGS[i].present : BINDINGS[i].absent, NULL);
	}
	if (a->pending == 0)
		finished(a);
}

int sf_admcheck_start(sf_kube_client *client, const sf_aw_config *cfg, sf_admcheck **out)
{
	sf_admcheck *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->cfg = cfg;
	a->want[B_VALIDATE] = a->want[B_MUTATE] = cfg->webhooks_enabled;
	a->want[B_RBAC] = cfg->webhooks_enabled && cfg->user_rbac_admission_check;
	if (cfg->cert_management)
		sf_log_info(LOGGER,
		            "certManagement: nothing to manage, admission runs in the API server "
		            "without a webhook or certificate (docs/admission.md)",
		            NULL);
	for (int i = 0; i < NBINDINGS; i++) {
		a->calls[i] = (call){a, i, NULL};
		int rc = sf_kube_get(client, BINDINGS[i].gvr, NULL, BINDINGS[i].name, got,
		                     &a->calls[i], &a->calls[i].call);
		if (rc < 0) {
			if (a->pending == 0) {
				free(a);
				return rc;
			}
			/* the ones started finish; this one is undecided */
			a->undecided++;
			continue;
		}
		a->pending++;
	}
	*out = a;
	return 0;
}

void sf_admcheck_close(sf_admcheck *a, void (*cb)(void *ud), void *ud)
{
	if (!a) {
		if (cb)
			cb(ud);
		return;
	}
	a->closing = 1;
	a->close_cb = cb;
	a->close_ud = ud;
	if (a->pending == 0) {
		closed(a);
		return;
	}
	for (int i = 0; i < NBINDINGS; i++)
		if (a->calls[i].call)
			sf_kube_call_cancel(a->calls[i].call);
}
