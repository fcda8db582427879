/*
 * tl_aw.h - AppWrapper helpers for the integration tests.
 *
 * Installs our AppWrapper CRD (manifests/crd) on the test control plane and
 * waits until it is Established, creates the objects of a YAML manifest
 * (file or inline text, converted with sf_yaml like kubectl does) and
 * records what was sent and what the server answered, and compares JSON
 * values structurally. For tests that run the controller, it watches a
 * namespace's AppWrappers, pods, Jobs and Events (events.k8s.io/v1, the
 * API the controller records them through) with our own informer, waits
 * for phases, conditions, pods and Events (with deadlines, never
 * fixed sleeps), and plays Kueue (admission) and the kubelet (pod status).
 * Failures of the helpers themselves (a file that cannot be read, a
 * request that never finishes, a state not reached in time) fail the
 * calling test.
 */
#ifndef STEADFAST_TEST_TL_AW_H
#define STEADFAST_TEST_TL_AW_H

#include <stddef.h>

#include "steadfast/awapi.h"
#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/json.h"
#include "tl.h"

#define TL_AW_CRD_FILE "manifests/crd/" SF_AW_CRD_NAME ".yaml"
#define TL_AW_SAMPLES_DIR "test/samples"
#define TL_AW_MAX_DOCS 32
#define TL_AW_REASON_LEN 64    /* the reason buffer of tl_aw_cond */
#define TL_AW_MESSAGE_LEN 1024 /* the message buffer of tl_aw_cond */

/* A file of the source tree, by its path from the repository root: rel
 * itself when it exists from the working directory (tests run from the
 * root), else $STEADFAST_SRC_DIR/rel. Fails the test when neither exists.
 * Returns buf. */
const char *tl_aw_src_path(const char *rel, char *buf, size_t n);

/* Creates the AppWrapper CRD from TL_AW_CRD_FILE, or updates it when it
 * exists, then waits (watch, bounded) until it is Established. Returns the
 * HTTP status of the write: 201 created, 200 updated. */
long tl_aw_install_crd(tl_kube *k);

/* Waits until the CRD `name` has condition Established=True: GET, then a
 * watch from that resourceVersion, until timeout_ms (then the test fails). */
void tl_aw_wait_established(tl_kube *k, const char *name, long timeout_ms);

/* One document of a manifest and the server's answer to it. */
typedef struct tl_aw_doc {
	char *sent; /* the document as minified JSON (owned) */
	char api_version[128];
	char kind[64];
	char name[254];
	char resource[64]; /* plural from discovery, "" if the kind is unknown */
	long http_status;  /* of the create (or the update after AlreadyExists) */
	char reason[64];
	char message[512];
	sf_obj *obj; /* the object returned on success (owned), else NULL */
} tl_aw_doc;

typedef struct tl_aw_applied {
	size_t n;
	tl_aw_doc docs[TL_AW_MAX_DOCS];
} tl_aw_applied;

typedef struct tl_aw_apply_opts {
	const char *query; /* added to every write, e.g. "dryRun=All" */
	int allow_fail;    /* 0: fail the test unless every document is stored */
} tl_aw_apply_opts;

/* Creates every document of a YAML stream, one request each, in order; a
 * document that exists already is updated (PUT with its resourceVersion).
 * path_or_yaml is YAML text when it contains a newline, else a file path
 * (resolved as tl_aw_src_path). Namespaced kinds go to ns when it is
 * non-NULL, else to the document's metadata.namespace, else "default".
 * opts may be NULL; out (may be NULL) receives each document and answer
 * (release with tl_aw_applied_clear). Returns the number of documents. */
size_t tl_aw_apply_yaml(tl_kube *k, const char *ns, const char *path_or_yaml,
                        const tl_aw_apply_opts *opts, tl_aw_applied *out);
void tl_aw_applied_clear(tl_aw_applied *a);

/* The first document of a YAML file or text (as tl_aw_apply_yaml) as
 * malloc'd minified JSON; fails the test when there is none. */
char *tl_aw_yaml_json(const char *path_or_yaml);

/* The sorted names of the *.yaml files in a source-tree directory
 * (tl_aw_src_path), as full paths; returns the count (fails the test on an
 * unreadable directory). Release with tl_aw_files_free. */
size_t tl_aw_list_yaml(const char *rel_dir, char ***paths);
void tl_aw_files_free(char **paths, size_t n);

/* Structural JSON equality: objects compare by key whatever the member
 * order, arrays element by element, strings after unescaping, numbers by
 * value. Returns 1 when equal; else 0 with the path of the first
 * difference and a short reason in where (may be NULL). */
int tl_aw_json_equal(sf_jv a, sf_jv b, char *where, size_t n);

/* The status ("True", "False", "Unknown") of the condition of the given
 * type in a conditions array, into buf: 0, or -ENOENT (no such condition). */
int tl_aw_condition(sf_jv conditions, const char *type, char *status, size_t n);

/* ---- a namespace of AppWrappers under watch ---- */

/* events.k8s.io/v1 Events (SF_GVR_EVENTS is the core/v1 view of the same
 * objects). The tests name it themselves rather than borrow the
 * controller's constant. */
extern const sf_gvr TL_GVR_EVENTS;

/* A namespace's AppWrappers, pods, Jobs and Events (TL_GVR_EVENTS), each
 * cached by an informer on k's loop; the helpers below read these caches.
 * A zeroed one
 * that was never started may be passed to tl_aw_watch_stop. */
typedef struct tl_aw_watch {
	tl_kube *k;
	char ns[64];
	sf_informer *aws, *pods, *jobs, *events;
} tl_aw_watch;

/* Starts the four informers on namespace ns and waits (10 s) until all of
 * them have synced. */
void tl_aw_watch_start(tl_aw_watch *w, tl_kube *k, const char *ns);

/* Stops and frees the informers (running k's loop until they stopped);
 * does nothing for a watch never started. */
void tl_aw_watch_stop(tl_aw_watch *w);

/* The set-up of a test of the controller: the log level (debug when
 * $SF_DEBUG is set, else warnings), a client (admin), the AppWrapper CRD,
 * a fresh namespace "<prefix>-<random>" into ns, and w watching it. */
void tl_aw_env_open(tl_kube *k, tl_aw_watch *w, const char *prefix, char *ns, size_t n);
/* Its tear-down: every controller of the test stopped, the watch stopped,
 * the namespace deleted, the client closed. */
void tl_aw_env_close(tl_kube *k, tl_aw_watch *w, const char *ns);

/* The cached AppWrapper `name` (borrowed), or NULL. */
sf_obj *tl_aw_cached(const tl_aw_watch *w, const char *name);

/* Prints the cached AppWrapper `name` to stderr (for a failing test). */
void tl_aw_dump(const tl_aw_watch *w, const char *name);

/* Waits until AppWrapper `name` has status.phase `phase`; after timeout_ms
 * dumps it and fails the test. */
void tl_aw_wait_phase(tl_aw_watch *w, const char *name, const char *phase, long timeout_ms);

/* The status ("True", "False", ...) of condition `type` of the cached
 * AppWrapper `name`, "" when it or the condition is absent; static
 * storage, valid until the next call. When non-NULL, reason
 * (TL_AW_REASON_LEN bytes) and message (TL_AW_MESSAGE_LEN bytes) receive
 * the condition's, and are left alone when it is absent. */
const char *tl_aw_cond(const tl_aw_watch *w, const char *name, const char *type, char *reason,
                       char *message);

/* Waits until condition `type` of AppWrapper `name` has `status`; after
 * timeout_ms dumps it and fails the test. */
void tl_aw_wait_cond(tl_aw_watch *w, const char *name, const char *type, const char *status,
                     long timeout_ms);

/* How many objects the informer inf (w->pods, w->jobs) caches with the
 * SF_AW_LABEL of AppWrapper aw, terminating ones included. */
int tl_aw_labelled(sf_informer *inf, const char *aw);

/* Waits for a live (not terminating) pod of AppWrapper aw and puts its
 * name into buf; after timeout_ms dumps aw and fails the test. */
void tl_aw_wait_pod(tl_aw_watch *w, const char *aw, char *buf, size_t n, long timeout_ms);

/* Plays the kubelet for the pods of a Running AppWrapper aw with one pod:
 * waits for it (its name into buf), makes it Running and waits until aw's
 * PodsReady is True; each wait fails the test after timeout_ms. */
void tl_aw_pod_ready(tl_aw_watch *w, const char *aw, char *buf, size_t n, long timeout_ms);

/* Waits until no pod and no Job of AppWrapper aw is cached any more; after
 * timeout_ms dumps aw and fails the test. */
void tl_aw_wait_all_gone(tl_aw_watch *w, const char *aw, long timeout_ms);

/* A request as the admin in w's namespace: method on gvr, name and
 * subresource sub (both may be NULL), with body (may be NULL; a PATCH is a
 * JSON merge patch). Returns the HTTP status. */
long tl_aw_req(tl_aw_watch *w, const char *method, const sf_gvr *gvr, const char *name,
               const char *sub, const char *body);

/* Creates an AppWrapper from its JSON; fails the test unless 201. */
void tl_aw_create(tl_aw_watch *w, const char *json);

/* Plays Kueue admitting AppWrapper `name`: merge-patches
 * {"spec":{"suspend":false}}, or patch (e.g. one with podSetInfos) when it
 * is non-NULL; fails the test unless 200. */
void tl_aw_admit(tl_aw_watch *w, const char *name, const char *patch);

/* Plays the kubelet for pod `pod` (container "main"): phase "Running"
 * makes it Ready with a running container; any other phase ("Succeeded",
 * "Failed") terminates the container with exit_code (reason Completed or
 * Error) and message (NULL: ""). Fails the test unless the status patch
 * answers 200. */
void tl_aw_kubelet(tl_aw_watch *w, const char *pod, const char *phase, int exit_code,
                   const char *message);
/* The same status patch, whatever the answer: its HTTP status (a pod
 * deleted meanwhile answers 404), for drivers that react to what they see
 * and must not fail on a race they expect. */
long tl_aw_kubelet_try(tl_aw_watch *w, const char *pod, const char *phase, int exit_code,
                       const char *message);

/* What tl_aw_events_scan found: the cached Events (events.k8s.io/v1) whose
 * regarding is AppWrapper aw and whose note contains needle. */
typedef struct tl_aw_events {
	const char *aw, *needle; /* set by the caller */
	int found;               /* how many */
	int warning;             /* the last one visited is of type Warning */
	/* the largest series.count among them (an Event without a series
	 * counts 1: it happened once) */
	long count;
} tl_aw_events;

/* Scans w's cached Events for e->aw and e->needle into e; returns e->found. */
int tl_aw_events_scan(const tl_aw_watch *w, tl_aw_events *e);

/* Waits for an Event about AppWrapper aw whose message contains needle;
 * fails the test after timeout_ms. Returns what tl_aw_events_scan found. */
tl_aw_events tl_aw_wait_event(tl_aw_watch *w, const char *aw, const char *needle, long timeout_ms);

#endif
