/*
 * review.h - authenticates and authorizes a bearer token with the API
 * server, for the metrics endpoint.
 *
 * As controller-runtime's filters.WithAuthenticationAndAuthorization
 * (kube-rbac-proxy does the same): a TokenReview (authentication.k8s.io/v1)
 * of the token; if it authenticates, a SubjectAccessReview
 * (authorization.k8s.io/v1) for the user it names (username, uid, groups
 * and extra, copied from the TokenReview's status.user) with
 * nonResourceAttributes {path, verb}. The verdict: 0 allowed, 401 no token
 * or not authenticated, 403 authenticated but not allowed, 500 a review
 * that could not be made (API error or transport failure).
 *
 * Verdicts 0, 401 and 403 are cached by the token's SHA-256 (the token
 * itself is not kept) for allow_ttl_ms / deny_ttl_ms (default 10 s each,
 * as kube-rbac-proxy's and the API server's webhook caches); 500 is not
 * cached. The cache holds at most max_entries tokens (expired ones and then
 * the oldest go first).
 *
 * At most max_in_flight checks wait for the API server at once; a check
 * that misses the cache beyond that is answered 429 at once (not cached),
 * so a flood of unknown tokens costs the API server a bounded number of
 * reviews rather than one each.
 */
#ifndef STEADFAST_REVIEW_H
#define STEADFAST_REVIEW_H

#include <stddef.h>
#include <uv.h>

#include "steadfast/client.h"

typedef struct sf_review sf_review;

typedef struct sf_review_opts {
	const char *path;       /* nonResourceAttributes.path; NULL = "/metrics" */
	const char *verb;       /* NULL = "get" */
	long allow_ttl_ms;      /* 0 = 10000; < 0 = not cached */
	long deny_ttl_ms;       /* 0 = 10000; < 0 = not cached */
	size_t max_entries;     /* 0 = 1024 */
	long timeout_ms;        /* per review request; 0 = 10000 */
	unsigned max_in_flight; /* 0 = 8 */
} sf_review_opts;

typedef struct sf_review_stats {
	unsigned long reviews; /* checks answered from the API server */
	unsigned long cache_hits;
	unsigned long errors; /* verdicts 500 */
	unsigned long shed;   /* verdicts 429: max_in_flight reached */
} sf_review_stats;

/* client is borrowed (its requests should not pass a write gate: reviews
 * write nothing) and must outlive the reviewer. 0 or -ENOMEM. */
int sf_review_new(uv_loop_t *loop, sf_kube_client *client, const sf_review_opts *opts,
                  sf_review **out);
/* Frees the reviewer; callbacks of checks in flight must have run (closing
 * the client runs them). NULL: no-op. */
void sf_review_free(sf_review *rv);

/* cb(ud, verdict) runs exactly once, perhaps before the call returns
 * (cache hit, no token). token may be NULL; it is borrowed for the call. */
typedef void (*sf_review_cb)(void *ud, int verdict);
void sf_review_check(sf_review *rv, const char *token, size_t len, sf_review_cb cb, void *ud);
void sf_review_stats_get(const sf_review *rv, sf_review_stats *out);

#endif
