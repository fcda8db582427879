/*
 * awapi.h - the names of the AppWrapper API, spelled once.
 *
 * Group, version, kind and resource of workload.codeflare.dev/v1beta2
 * AppWrappers, their GVR, and the label, annotations and finalizer the
 * controller reads and writes. The code and the tests use these instead of
 * string literals, so that a name is never spelled two ways; they are
 * upstream's (api/v1beta2 of the Go AppWrapper controller) and the CRD's in
 * manifests/crd/.
 */
#ifndef STEADFAST_AWAPI_H
#define STEADFAST_AWAPI_H

#define SF_AW_GROUP "workload.codeflare.dev"
#define SF_AW_VERSION "v1beta2"
#define SF_AW_API_VERSION SF_AW_GROUP "/" SF_AW_VERSION
#define SF_AW_KIND "AppWrapper"
#define SF_AW_RESOURCE "appwrappers"
#define SF_AW_CRD_NAME SF_AW_RESOURCE "." SF_AW_GROUP

/* The AppWrapper resource (namespaced), an sf_gvr (client.h); defined in
 * api.c. */
struct sf_gvr;
extern const struct sf_gvr SF_GVR_APPWRAPPERS;

/* Label on every component and pod template, value = the AppWrapper's name. */
#define SF_AW_LABEL SF_AW_GROUP "/appwrapper"
/* Annotation on a component whose name the API server chooses (a template
 * with metadata.generateName): its index in spec.components. With the
 * AppWrapper's UID in the controller ownerReference it identifies the
 * component when a create's answer (and with it the name) was lost. */
#define SF_AW_COMPONENT_INDEX SF_AW_GROUP "/component-index"
#define SF_AW_FINALIZER SF_AW_GROUP "/finalizer"
/* spec.managedBy value that means this controller */
#define SF_AW_CONTROLLER_NAME SF_AW_GROUP "/appwrapper-controller"
/* reportingController of the Events about AppWrappers: the name upstream's
 * controller gives its event recorder (mgr.GetEventRecorderFor) */
#define SF_AW_EVENT_CONTROLLER "appwrappers"

/* Prefix of the per-AppWrapper settings annotations (retryLimit, ...). */
#define SF_AW_ANNOT_PREFIX SF_AW_GROUP ".appwrapper/"
/* Pod-set annotations upstream infers as topology-aware-scheduling hints. */
#define SF_AW_TAS_POD_INDEX_LABEL SF_AW_ANNOT_PREFIX "tas-pod-index-label"
#define SF_AW_TAS_SUB_GROUP_INDEX_LABEL SF_AW_ANNOT_PREFIX "tas-sub-group-index-label"
#define SF_AW_TAS_SUB_GROUP_COUNT SF_AW_ANNOT_PREFIX "tas-sub-group-count"

#endif
