/*
 * review.c - TokenReview + SubjectAccessReview with a short verdict cache
 * (see review.h).
 *
 * A check in flight is a small struct that owns the token until its
 * TokenReview is sent, and the user's name, uid, groups and extra (as a
 * JSON tree) until the SubjectAccessReview is sent. Both requests go out
 * with the client's own timeout handling; a cancelled one (client closed)
 * answers 500, so cb always runs.
 */
#include "steadfast/review.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/jdoc.h"
#include "steadfast/log.h"

#define LOGGER "metrics-auth"
#define DEFAULT_TTL_MS 10000
#define DEFAULT_MAX_ENTRIES 1024
#define DEFAULT_MAX_IN_FLIGHT 8
#define DEFAULT_TIMEOUT_MS 10000
#define HASH_LEN 32

#define TOKENREVIEWS "/apis/authentication.k8s.io/v1/tokenreviews"
#define SUBJECTACCESSREVIEWS "/apis/authorization.k8s.io/v1/subjectaccessreviews"

typedef struct entry {
	unsigned char hash[HASH_LEN];
	uint64_t expires; /* uv_now; 0 = free slot */
	uint64_t added;
	int verdict;
} entry;

struct sf_review {
	uv_loop_t *loop;
	sf_kube_client *client;
	char *path, *verb;
	long allow_ttl_ms, deny_ttl_ms, timeout_ms;
	size_t max_entries;
	entry *cache;
	unsigned max_in_flight, in_flight;
	sf_review_stats st;
};

typedef struct check {
	sf_review *rv;
	unsigned char hash[HASH_LEN];
	sf_review_cb cb;
	void *ud;
	char user[256];
} check;

int sf_review_new(uv_loop_t *loop, sf_kube_client *client, const sf_review_opts *opts,
                  sf_review **out)
{
	sf_review_opts o = {0};
	if (opts)
		o = *opts;
	*out = NULL;
	sf_review *rv = calloc(1, sizeof(*rv));
	if (!rv)
		return -ENOMEM;
	rv->loop = loop;
	rv->client = client;
	rv->allow_ttl_ms = o.allow_ttl_ms ? o.allow_ttl_ms : DEFAULT_TTL_MS;
	rv->deny_ttl_ms = o.deny_ttl_ms ? o.deny_ttl_ms : DEFAULT_TTL_MS;
	rv->timeout_ms = o.timeout_ms ? o.timeout_ms : DEFAULT_TIMEOUT_MS;
	rv->max_entries = o.max_entries ? o.max_entries : DEFAULT_MAX_ENTRIES;
	rv->max_in_flight = o.max_in_flight ? o.max_in_flight : DEFAULT_MAX_IN_FLIGHT;
	rv->path = strdup(o.path ? o.path : "/metrics");
	rv->verb = strdup(o.verb ? o.verb : "get");
	rv->cache = calloc(rv->max_entries, sizeof(entry));
	if (!rv->path || !rv->verb || !rv->cache) {
		sf_review_free(rv);
		return -ENOMEM;
	}
	*out = rv;
	return 0;
}

void sf_review_free(sf_review *rv)
{
	if (!rv)
		return;
	free(rv->path);
	free(rv->verb);
	free(rv->cache);
	free(rv);
}

void sf_review_stats_get(const sf_review *rv, sf_review_stats *out)
{
	*out = rv->st;
}

/* --- cache ------------------------------------------------------------------ */

static entry *cache_find(sf_review *rv, const unsigned char *hash)
{
	uint64_t now = uv_now(rv->loop);
	for (size_t i = 0; i < rv->max_entries; i++) {
		entry *e = &rv->cache[i];
		if (e->expires && e->expires > now && memcmp(e->hash, hash, HASH_LEN) == 0)
			return e;
	}
	return NULL;
}

static void cache_put(sf_review *rv, const unsigned char *hash, int verdict)
{
	long ttl = verdict == 0 ? rv->allow_ttl_ms : rv->deny_ttl_ms;
	if (ttl < 0)
		return;
	uint64_t now = uv_now(rv->loop);
	entry *slot = &rv->cache[0];
	for (size_t i = 0; i < rv->max_entries; i++) {
		entry *e = &rv->cache[i];
		if (e->expires && memcmp(e->hash, hash, HASH_LEN) == 0) {
			slot = e; /* the same token: replace its verdict */
			break;
		}
		if (slot->expires > now && (e->expires <= now || e->added < slot->added))
			slot = e; /* a free or expired slot, else the oldest */
	}
	memcpy(slot->hash, hash, HASH_LEN);
	slot->added = now;
	slot->expires = now + (uint64_t)ttl;
	slot->verdict = verdict;
}

/* --- reviews ---------------------------------------------------------------- */

static void finish(check *ck, int verdict, int cache)
{
	sf_review *rv = ck->rv;
	rv->in_flight--;
	if (verdict == 500)
		rv->st.errors++;
	else
		rv->st.reviews++;
	if (cache && verdict != 500)
		cache_put(rv, ck->hash, verdict);
	sf_log_debug(LOGGER, "metrics request reviewed", "user", ck->user, "verdict",
	             verdict == 0     ? "allowed"
	             : verdict == 401 ? "unauthenticated"
	             : verdict == 403 ? "denied"
	                              : "error",
	             NULL);
	ck->cb(ck->ud, verdict);
	free(ck);
}

static int post(check *ck, const char *path, sf_jd *body, sf_kube_cb cb)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	int rc = body ? sf_jd_write(body, &b) : -ENOMEM;
	sf_jd_free(body);
	if (rc == 0 && sf_buf_putc(&b, '\0') < 0)
		rc = -ENOMEM;
	if (rc == 0) {
		sf_kube_req req = {.method = "POST",
		                   .path = path,
		                   .body = b.data,
		                   .body_len = b.len - 1,
		                   .timeout_ms = ck->rv->timeout_ms};
		rc = sf_kube_do(ck->rv->client, &req, cb, ck, NULL);
	}
	sf_buf_free(&b);
	return rc;
}

/* A review object: {"apiVersion": ..., "kind": ..., "spec": spec}. */
static sf_jd *review(const char *api_version, const char *kind, sf_jd *spec)
{
	sf_jd *o = sf_jd_new_obj();
	if (!o || sf_jd_set_str(o, "apiVersion", api_version) < 0 ||
	    sf_jd_set_str(o, "kind", kind) < 0 || sf_jd_set(o, "spec", spec) < 0) {
		sf_jd_free(o);
		return NULL;
	}
	return o;
}

static int api_failed(check *ck, const char *what, const sf_kube_result *r)
{
	if (sf_kube_ok(r) && r->obj)
		return 0;
	char msg[512];
	sf_log_warn(LOGGER, "review failed", "review", what, "error",
	            sf_kube_result_str(r, msg, sizeof(msg)), NULL);
	finish(ck, 500, 0);
	return 1;
}

static void on_sar(void *ud, const sf_kube_result *r)
{
	check *ck = ud;
	if (api_failed(ck, "SubjectAccessReview", r))
		return;
	int allowed = 0;
	sf_jv_bool(sf_jv_path(sf_obj_root(r->obj), "status.allowed"), &allowed);
	finish(ck, allowed ? 0 : 403, 1);
}

/* Copies member key of user (a JSON value) into spec as to_key, if present. */
static int copy_member(sf_jd *spec, sf_jv user, const char *key, const char *to_key)
{
	sf_jv v = sf_jv_get(user, key);
	if (!sf_jv_ok(v))
		return 0;
	sf_jd *d = sf_jd_from_jv(v);
	return d ? sf_jd_set(spec, to_key, d) : -ENOMEM;
}

static void on_token_review(void *ud, const sf_kube_result *r)
{
	check *ck = ud;
	if (api_failed(ck, "TokenReview", r))
		return;
	sf_jv status = sf_jv_get(sf_obj_root(r->obj), "status");
	int authn = 0;
	sf_jv_bool(sf_jv_get(status, "authenticated"), &authn);
	if (!authn) {
		finish(ck, 401, 1);
		return;
	}
	sf_jv user = sf_jv_get(status, "user");
	sf_jv_str(sf_jv_get(user, "username"), ck->user, sizeof(ck->user));
	sf_jd *spec = sf_jd_new_obj(), *nra = sf_jd_new_obj();
	int rc = spec && nra ? 0 : -ENOMEM;
	if (rc == 0)
		rc = copy_member(spec, user, "username", "user");
	if (rc == 0)
		rc = copy_member(spec, user, "uid", "uid");
	if (rc == 0)
		rc = copy_member(spec, user, "groups", "groups");
	if (rc == 0)
		rc = copy_member(spec, user, "extra", "extra");
	if (rc == 0 && (sf_jd_set_str(nra, "path", ck->rv->path) < 0 ||
	                sf_jd_set_str(nra, "verb", ck->rv->verb) < 0))
		rc = -ENOMEM;
	if (rc == 0) {
		rc = sf_jd_set(spec, "nonResourceAttributes", nra);
		nra = NULL;
	}
	sf_jd_free(nra);
	if (rc < 0) {
		sf_jd_free(spec);
		finish(ck, 500, 0);
		return;
	}
	rc = post(ck, SUBJECTACCESSREVIEWS,
	          review("authorization.k8s.io/v1", "SubjectAccessReview", spec), on_sar);
	if (rc < 0)
		finish(ck, 500, 0);
}

void sf_review_check(sf_review *rv, const char *token, size_t len, sf_review_cb cb, void *ud)
{
	if (!token || !len) {
		cb(ud, 401);
		return;
	}
	check *ck = calloc(1, sizeof(*ck));
	if (!ck) {
		rv->st.errors++;
		cb(ud, 500);
		return;
	}
	ck->rv = rv;
	ck->cb = cb;
	ck->ud = ud;
	gnutls_hash_fast(GNUTLS_DIG_SHA256, token, len, ck->hash);
	entry *e = cache_find(rv, ck->hash);
	if (e) {
		rv->st.cache_hits++;
		int verdict = e->verdict;
		free(ck);
		cb(ud, verdict);
		return;
	}
	if (rv->in_flight >= rv->max_in_flight) {
		rv->st.shed++;
		free(ck);
		sf_log_debug(LOGGER, "metrics request shed: too many reviews in flight", NULL);
		cb(ud, 429);
		return;
	}
	rv->in_flight++; /* finish() takes it back */
	sf_jd *spec = sf_jd_new_obj();
	sf_jd *tok = sf_jd_new_strn(token, len);
	if (spec && tok) {
		if (sf_jd_set(spec, "token", tok) < 0) {
			sf_jd_free(spec);
			spec = NULL;
		}
	} else {
		sf_jd_free(spec);
		sf_jd_free(tok);
		spec = NULL;
	}
	int rc =
	    spec ? post(ck, TOKENREVIEWS, review("authentication.k8s.io/v1", "TokenReview", spec),
	                on_token_review)
	         : -ENOMEM;
	if (rc < 0)
		finish(ck, 500, 0);
}
