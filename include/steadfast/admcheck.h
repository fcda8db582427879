/*
 * admcheck.h - the controller's one look, at start, at whether the
 * admission installed in the cluster agrees with the operator config.
 *
 * Admission runs inside kube-apiserver (manifests/admission,
 * docs/admission.md), installed with the manifests, not by the controller;
 * the config keys webhooksEnabled and appwrapper.userRBACAdmissionCheck
 * say what should be installed. At start each replica GETs the three
 * bindings by their manifest names and logs one line per disagreement, as
 * an error naming the object and what it means for users (e.g. the user
 * RBAC binding absent while userRBACAdmissionCheck is true: anyone who may
 * create AppWrappers gets components created they may not create
 * themselves), then one summary line ("admission agrees with the config" when all agree).
 * certManagement is reported as having nothing to manage. The check only
 * reads and logs: it never stops the controller, and a failed read (e.g.
 * no RBAC for it) is logged as such.
 */
#ifndef STEADFAST_ADMCHECK_H
#define STEADFAST_ADMCHECK_H

#include "steadfast/awconfig.h"
#include "steadfast/client.h"

/* The names of manifests/admission's bindings. */
#define SF_ADM_BINDING "appwrappers.workload.codeflare.dev"
#define SF_ADM_RBAC_BINDING "user-rbac.appwrappers.workload.codeflare.dev"

typedef struct sf_admcheck sf_admcheck;

/* Starts the reads (client and cfg borrowed, must outlive the check).
 * 0 and *out, or -ENOMEM / the client's error (nothing started). */
int sf_admcheck_start(sf_kube_client *client, const sf_aw_config *cfg, sf_admcheck **out);
/* Cancels reads still in flight and frees the check once none is left;
 * cb (may be NULL) then, possibly before this returns. NULL a just calls
 * cb. */
void sf_admcheck_close(sf_admcheck *a, void (*cb)(void *ud), void *ud);

#endif
