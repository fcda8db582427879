/*
 * client.h - Kubernetes REST client: verbs, paths, errors, rate limiting.
 *
 * Builds request paths for any group/version/resource (core and named
 * groups, namespaced or cluster-scoped, subresources), sends them over
 * sf_http with the configured credentials, and hands back one result per
 * request: a transport error, or an HTTP status with the decoded object or
 * metav1.Status. Requests pass a client-side token bucket (qps/burst) and, if
 * they mutate, a write gate (the leader-election fence). 429 responses with
 * Retry-After are retried after the time the server asked for.
 */
#ifndef STEADFAST_CLIENT_H
#define STEADFAST_CLIENT_H

#include <stddef.h>
#include <uv.h>

#include "steadfast/buf.h"
#include "steadfast/prom.h"
#include "steadfast/config.h"
#include "steadfast/json.h"
#include "steadfast/watch.h"

#define SF_VERSION "0.1.0"

typedef struct sf_kube_client sf_kube_client;
typedef struct sf_kube_call sf_kube_call;

/* A resource type. group "" is the core group (/api/v1). */
typedef struct sf_gvr {
	const char *group;
	const char *version;
	const char *resource; /* plural, lowercase */
	int namespaced;
} sf_gvr;

extern const sf_gvr SF_GVR_NAMESPACES, SF_GVR_CONFIGMAPS, SF_GVR_PODS, SF_GVR_EVENTS, SF_GVR_LEASES,
    SF_GVR_JOBS, SF_GVR_CRDS;
/* events.k8s.io/v1 Events (SF_GVR_EVENTS: the core/v1 view of the same
 * objects) */
extern const sf_gvr SF_GVR_EVENTS_K8S_IO;

typedef struct sf_kube_client_opts {
	double qps;             /* 0 = 20 (above client-go's 5, below its burst); < 0 = no limit */
	int burst;              /* 0 = 30 */
	long timeout_ms;        /* default per-request timeout, 0 = 60 s */
	const char *user_agent; /* NULL = "steadfast/<version> (linux)" */
	int max_retries_429;    /* 0 = 5; -1 = never retry (also bounds 5xx retries) */
	int http1_only;
	/* Connection health, as client-go's HTTP/2 health check: while
	 * requests are in flight and nothing has been received for
	 * read_idle_ms, a probe (GET /version) must be answered within
	 * ping_timeout_ms, else the connection is shut down and its requests
	 * fail (and are retried on a new one). 0 = 30 s / 15 s; read_idle_ms
	 * < 0 = no probe. */
	long read_idle_ms;
	long ping_timeout_ms;
	long tcp_user_timeout_ms; /* sf_http_opts: 0 = 30 s */
} sf_kube_client_opts;

/* metav1.Status of a failed request (all strings "" when absent). */
typedef struct sf_kube_status {
	int code;
	char *status; /* "Failure" */
	char *reason; /* "NotFound", "AlreadyExists", "Conflict", ... */
	char *message;
	char *details_name;
	char *details_kind;
	char *details_group;
	long retry_after_s; /* details.retryAfterSeconds or the header, -1 if none */
} sf_kube_status;

typedef struct sf_kube_result {
	int err;                      /* 0 = an HTTP response arrived; else transport errno */
	const char *errmsg;           /* transport error text, or the Status message, or "" */
	long http_status;             /* 0 without a response */
	sf_obj *obj;                  /* 2xx body decoded (borrowed; sf_obj_ref to keep), or NULL */
	const sf_kube_status *status; /* decoded Status for non-2xx (never NULL) */
	const char *body;             /* raw body when buffered ("" otherwise) */
	size_t body_len;
	/* LIST: the list's metadata (valid during the callback) */
	const char *list_rv;
	const char *list_continue;
	long long list_remaining;
	unsigned long items; /* LIST items / WATCH events delivered */
} sf_kube_result;

typedef void (*sf_kube_cb)(void *ud, const sf_kube_result *res);

/* Error classification (as apimachinery's errors.IsX). */
int sf_kube_ok(const sf_kube_result *r); /* 2xx */
int sf_kube_is_not_found(const sf_kube_result *r);
/* Evidence that the object `name` does not exist: a 404 whose body is a
 * Status with reason NotFound and details.name == name. Any other 404 (a
 * plain-text one from a proxy, the "could not find the requested
 * resource" of a version that is not served) only says that the request
 * found nothing to answer it: nothing about the object. */
int sf_kube_is_absent(const sf_kube_result *r, const char *name);
int sf_kube_is_already_exists(const sf_kube_result *r);
int sf_kube_is_conflict(const sf_kube_result *r);
int sf_kube_is_gone(const sf_kube_result *r);    /* 410 Gone */
int sf_kube_is_expired(const sf_kube_result *r); /* 410, reason Expired or Gone */
int sf_kube_is_forbidden(const sf_kube_result *r);
int sf_kube_is_unauthorized(const sf_kube_result *r);
int sf_kube_is_too_many_requests(const sf_kube_result *r);
int sf_kube_is_server_timeout(const sf_kube_result *r); /* 504, ServerTimeout, Timeout */
int sf_kube_is_invalid(const sf_kube_result *r);        /* 422 */
int sf_kube_is_transport(const sf_kube_result *r);      /* no HTTP response */
/* One line for logs: "GET ...: 404 NotFound: configmaps "x" not found". */
const char *sf_kube_result_str(const sf_kube_result *r, char *buf, size_t n);

typedef enum {
	SF_PATCH_MERGE = 1, /* application/merge-patch+json */
	SF_PATCH_JSON,      /* application/json-patch+json */
	SF_PATCH_STRATEGIC, /* application/strategic-merge-patch+json */
	SF_PATCH_APPLY,     /* application/apply-patch+yaml (server-side apply) */
} sf_patch_type;

/* A request. Unused fields zero. Either gvr (+ns, name, subresource) or a
 * raw path ("/version", "/apis/group/version"). */
typedef struct sf_kube_req {
	const char *method; /* GET POST PUT PATCH DELETE */
	const sf_gvr *gvr;
	const char *ns; /* for namespaced resources; NULL/"" = all namespaces */
	const char *name;
	const char *subresource; /* "status", ... */
	const char *path;
	const char *query; /* pre-encoded, without '?' (see sf_kube_query_add) */
	const char *body;
	size_t body_len;
	const char *content_type; /* default application/json */
	const char *accept;       /* Accept header value, default application/json */
	long timeout_ms;          /* 0 = client default, -1 = none */
	/* LIST streaming: each item is handed to list_item (callee owns it). */
	sf_list_item_fn list_item;
	/* WATCH streaming: each event to watch_event (callee owns obj). */
	sf_watch_event_fn watch_event;
	void *stream_ud;
	int fresh_connection; /* send it on a new connection */
} sf_kube_req;

int sf_kube_client_new(uv_loop_t *loop, sf_kube_config *cfg, const sf_kube_client_opts *opts,
                       sf_kube_client **out);
/* cfg is borrowed and must outlive the client. Close cancels every call
 * (callbacks run with -ECANCELED) and frees everything; cb when done. */
void sf_kube_client_close(sf_kube_client *c, void (*cb)(void *ud), void *ud);
sf_kube_config *sf_kube_client_config(sf_kube_client *c);

/* Sends a request; cb runs exactly once, from the loop (cb may be NULL:
 * fire and forget). Returns 0, or a negative errno (then cb is never
 * called). *out (optional) allows cancelling until cb runs. */
int sf_kube_do(sf_kube_client *c, const sf_kube_req *req, sf_kube_cb cb, void *ud,
               sf_kube_call **out);
/* Cancels a call: its callback runs with err -ECANCELED. */
void sf_kube_call_cancel(sf_kube_call *call);

/* Convenience verbs (body is JSON text). get, update, patch and delete
 * address one object: a NULL or "" name returns -EINVAL (nothing is sent,
 * cb never runs) rather than addressing the collection. */
int sf_kube_get(sf_kube_client *c, const sf_gvr *gvr, const char *ns, const char *name,
                sf_kube_cb cb, void *ud, sf_kube_call **out);
int sf_kube_create(sf_kube_client *c, const sf_gvr *gvr, const char *ns, const char *body,
                   sf_kube_cb cb, void *ud, sf_kube_call **out);
int sf_kube_update(sf_kube_client *c, const sf_gvr *gvr, const char *ns, const char *name,
                   const char *subresource, const char *body, sf_kube_cb cb, void *ud,
                   sf_kube_call **out);
/* field_manager and force apply to SF_PATCH_APPLY (force only there). */
int sf_kube_patch(sf_kube_client *c, const sf_gvr *gvr, const char *ns, const char *name,
                  const char *subresource, sf_patch_type type, const char *body,
                  const char *field_manager, int force, sf_kube_cb cb, void *ud,
                  sf_kube_call **out);

typedef struct sf_kube_delete_opts {
	const char *propagation; /* "Background", "Foreground", "Orphan", or NULL */
	const char *precond_uid; /* preconditions, or NULL */
	const char *precond_rv;
	long grace_seconds; /* -1 = server default */
} sf_kube_delete_opts;
int sf_kube_delete(sf_kube_client *c, const sf_gvr *gvr, const char *ns, const char *name,
                   const sf_kube_delete_opts *opts, sf_kube_cb cb, void *ud, sf_kube_call **out);

typedef struct sf_kube_list_opts {
	const char *label_selector;
	const char *field_selector;
	long limit; /* 0 = no paging */
	const char *continue_token;
	const char *resource_version;       /* "" / NULL = quorum read; not sent with continue */
	const char *resource_version_match; /* "NotOlderThan", "Exact" */
	int fresh_connection;               /* on a new connection (not multiplexed) */
	/* WATCH only */
	long timeout_seconds; /* server-side watch timeout, 0 = unset */
	int allow_bookmarks;
	int send_initial_events;
} sf_kube_list_opts;
/* One LIST page, streamed: item(ud, obj) per item, then cb. */
int sf_kube_list(sf_kube_client *c, const sf_gvr *gvr, const char *ns,
                 const sf_kube_list_opts *opts, sf_list_item_fn item, sf_kube_cb cb, void *ud,
                 sf_kube_call **out);
/* A WATCH: event(ud, type, obj) per event until the server ends the stream
 * (cb with err 0), an error, or cancel. */
int sf_kube_watch(sf_kube_client *c, const sf_gvr *gvr, const char *ns,
                  const sf_kube_list_opts *opts, sf_watch_event_fn event, sf_kube_cb cb, void *ud,
                  sf_kube_call **out);

/* Appends "key=value" URL-encoded to a query string being built. */
int sf_kube_query_add(sf_buf *q, const char *key, const char *value);
/* Builds the request path for gvr/ns/name/subresource into buf; a NULL or
 * "" name gives the collection's path (a subresource then is -EINVAL). */
int sf_kube_path(sf_buf *out, const sf_gvr *gvr, const char *ns, const char *name,
                 const char *subresource);
/* Encodes a label selector from key/value pairs: "a=b,c=d". */
int sf_kube_label_selector(sf_buf *out, const char *const *kv, size_t npairs);

/* Mutating requests (anything but GET) ask the gate each time they are
 * about to be sent (when dispatched, and again when an exec credential
 * plugin they waited for has run): non-zero refuses it (cb gets -EPERM,
 * "write refused by fence: not the leader"). cancel_writes ends every
 * mutating call in flight with -ECANCELED. */
typedef int (*sf_kube_write_gate_fn)(void *ud, const sf_kube_req *req);
void sf_kube_client_set_write_gate(sf_kube_client *c, sf_kube_write_gate_fn gate, void *ud);
void sf_kube_client_cancel_writes(sf_kube_client *c);

/* Discovery: maps apiVersion ("v1", "batch/v1") and kind to its resource.
 * Results are cached; a kind not found is re-checked on the next call (a
 * CRD may have been installed meanwhile). cb gets 0 and gvr (valid during
 * the callback), -ENOENT (kind unknown: message names it), or the request
 * error. */
typedef void (*sf_kube_resolve_cb)(void *ud, int err, const char *errmsg, const sf_gvr *gvr);
int sf_kube_resolve(sf_kube_client *c, const char *api_version, const char *kind,
                    sf_kube_resolve_cb cb, void *ud);
/* Drops the cached answers for api_version, so the next sf_kube_resolve of
 * it asks the API server (a version may stop being served). */
void sf_kube_forget_api_version(sf_kube_client *c, const char *api_version);

typedef struct sf_kube_client_stats {
	unsigned long requests;   /* sent */
	unsigned long by_code[6]; /* [0] transport errors, [n] nxx responses */
	unsigned long throttled;  /* waited for a rate-limit token */
	unsigned long retries_429;
	unsigned long retries_5xx;    /* 5xx with Retry-After, idempotent requests only */
	unsigned long writes_refused; /* by the write gate */
	unsigned long writes_cancelled;
	unsigned long http2_responses;     /* responses that came over HTTP/2 */
	unsigned long health_probes;       /* read-idle probes sent */
	unsigned long connections_dropped; /* shut down as dead (probe or request timeout) */
} sf_kube_client_stats;
void sf_kube_client_stats_get(const sf_kube_client *c, sf_kube_client_stats *out);

#define SF_KUBE_NMETHODS 6 /* GET POST PUT PATCH DELETE other */
/* Adds to a /metrics exposition, as client-go names them:
 * rest_client_requests_total{code,method} (code "<error>" when no response
 * arrived); and histograms by {verb,host} (host: the server URL's, verb
 * the HTTP method; client-go's buckets, 5 ms to 60 s):
 * rest_client_rate_limiter_duration_seconds, the wait for the client's
 * token bucket (from the call, or from the end of a Retry-After pause, to
 * its token; not observed without a limit), and
 * rest_client_request_duration_seconds, from handing the request to HTTP
 * to its answer, each attempt on its own (unlike client-go's, which also
 * counts the limiter's wait and retries); watches are not observed. */
int sf_kube_client_metrics_write(const sf_kube_client *c, sf_prom *p);

#endif
